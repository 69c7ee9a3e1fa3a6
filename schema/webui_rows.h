/* webui_rows.h: the reads behind the web UI's own routes (api/routes_webui.c,
 * docs/webui.md): counts, the best trial, one page of trials sorted and filtered on the
 * server, the rows of the charts and of the parameter sample. Counts come from
 * trial_status_count and the table sorted by metric from trial_status_metric (migration
 * 017): neither walks every trial at 1,000,000 trials. */
#ifndef TRIALQ_WEBUI_ROWS_H
#define TRIALQ_WEBUI_ROWS_H

#include "schema/exp_ops.h"

/* The change counter (trial.change_seq's source): a reply computed at one value holds
 * while it stays. */
int change_counter_now(struct db *db, int64_t *out, struct errbuf *e);

/* SUCCEEDED trials that reported no final metric. */
int trials_succeeded_without_metric(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e);
/* Trials whose final metric is shown (SUCCEEDED, with a final metric). */
int trials_with_shown_metric(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e);

/* The best shown final metric: trial_best_final (exp_ops.h). */

/* One page of trials for GET /webui/trials. */
struct trial_query {
    const char *exp_id;
    const char *sort;      /* sequence|id|status|metric|duration|start|end|param:<name>|metric:<key>; NULL: sequence */
    int desc;
    const char *status;    /* a comma list of statuses (the caller checked them); NULL or "": all */
    const char *text;      /* matched literally in id, sequence, parameters, message, waiting_reason; NULL: none */
    int64_t limit, offset; /* limit: rows has room for that many */
};
/* 1 when webui_trial_page can sort by sort (NULL: by sequence), else 0. */
int webui_sort_known(const char *sort);
/* Trials without a value for the sort column come last in both orders; ties go by
 * sequence. A nullable column is read in two parts (with a value, sorted; then without,
 * by sequence), so that an index on the column serves the first part. Fills rows[0..*n)
 * (trial_clear each) and *total (every trial the filter matches). */
int webui_trial_page(struct db *db, const struct trial_query *q, struct trial *rows, int *n, int64_t *total,
                     struct errbuf *e);

/* The sequence range of the experiment's trials: 1 (lo, hi set), 0 no trials, -1 error. */
int trials_sequence_range(struct db *db, const char *exp_id, int64_t *lo, int64_t *hi, struct errbuf *e);
/* The trials with sequences from..to by sequence, for the charts (chart_blocks.h): the
 * shown final metric and the times of each. */
struct chart_row {
    int64_t sequence;
    const char *id;           /* valid during the callback */
    int has_metric, has_times;
    double metric;
    int64_t start_time, end_time;
};
int chart_rows(struct db *db, const char *exp_id, int64_t from, int64_t to,
               void (*fn)(void *ctx, const struct chart_row *r), void *ctx, struct errbuf *e);
/* The trials with a shown final metric, for the parameter chart: param_rows gives the
 * best `limit` (a walk of trial_status_metric); param_sample about `limit` others spread
 * over the sequence: all of them by sequence when there are no more than `limit`
 * (count: how many there are), else the first at or after each of `limit` points evenly
 * spaced over the sequence range (a seek each, whatever the history). */
struct param_row {
    const char *id, *parameters; /* valid during the callback */
    int64_t sequence;
    double metric;
    int64_t end_time; /* ms, 0 when none */
};
int param_rows(struct db *db, const char *exp_id, int maximize, int64_t limit,
               void (*fn)(void *ctx, const struct param_row *r), void *ctx, struct errbuf *e);
int param_sample(struct db *db, const char *exp_id, int64_t count, int64_t limit,
                 void (*fn)(void *ctx, const struct param_row *r), void *ctx, struct errbuf *e);

/* The trials parameter importance is computed over (api/importance.c): the most recent
 * `limit` SUCCEEDED trials that reported a final metric, by sequence (a walk of
 * trial_queue from its end, whatever the history), each with its parameters and its
 * metric: the final metric's number (key NULL: the number, or dict["default"]), or the
 * number at `key` of a dict final metric. A trial whose metric there is not a number
 * is passed with has_value 0. key holds neither '"' nor '\\' (the caller checks). */
struct sample_row {
    const char *parameters; /* valid during the callback */
    int has_value;
    double value;
};
int metric_sample_rows(struct db *db, const char *exp_id, const char *key, int64_t limit,
                       void (*fn)(void *ctx, const struct sample_row *r), void *ctx, struct errbuf *e);

#endif
