/* tuner_rows.h: what the api's tuner and assessor read of the trials: the rows changed
 * since a time (the tuner view, api/tuner_view.c), imported results, a trial's latest
 * intermediate result, the next tuner index, and the intermediate results to assess. */
#ifndef TRIALQ_TUNER_ROWS_H
#define TRIALQ_TUNER_ROWS_H

#include "schema/schema.h"

/* One trial row as the tuner sees it. Strings point into the row being read: valid
 * during the callback only. */
struct trial_change {
    const char *id, *parameters, *status, *label; /* label: parameter_label or NULL */
    int64_t parameter_id;                          /* -1 when NULL */
    int has_final;
    double final;
    int64_t updated_at, sequence;
    int attempt;
};
/* Calls fn for each trial of the experiment with updated_at >= since_ms, in sequence
 * order; fn returns 0 to go on, -1 to stop with an error (its own e). */
int trial_changes(struct db *db, const char *exp_id, int64_t since_ms,
                  int (*fn)(void *ctx, const struct trial_change *c, struct errbuf *e), void *ctx, struct errbuf *e);

/* Imported results (experiment/import-data): the import events, oldest first. Calls fn
 * with each event's id and its JSON array text (valid during the call). */
int import_events(struct db *db, const char *exp_id, int (*fn)(void *ctx, int64_t event_id, const char *records),
                  void *ctx, struct errbuf *e);
/* The id of the newest import event (0: none). */
int import_event_newest(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e);

/* The default value of the trial's PERIODICAL metric with the highest sequence of that
 * attempt: 1 found (*out), 0 none, -1 error. */
int metric_latest_periodical(struct db *db, const char *trial_id, int attempt, double *out, struct errbuf *e);

/* max(parameter_id) + 1 of the experiment's algorithm trials (0 when none). */
int trials_next_tuner_index(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e);

/* The assessor's input: the RUNNING trials without a kill request that have an
 * intermediate result (a cheap check before reading them all). */
int64_t trials_assessable(struct db *db, const char *exp_id, struct errbuf *e);
/* One intermediate result of a trial that runs or ended (not WAITING). */
struct periodical_row {
    const char *trial_id, *status; /* valid during the callback only */
    int no_kill_request;           /* 1: no kill request recorded */
    int64_t sequence;
    int has_value;
    double value;
};
/* Every PERIODICAL metric of the current attempt of each such trial, by trial id then
 * sequence. fn returns 0 to go on. */
int periodical_rows(struct db *db, const char *exp_id, int (*fn)(void *ctx, const struct periodical_row *r),
                    void *ctx, struct errbuf *e);

#endif
