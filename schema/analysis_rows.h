/* analysis_rows.h: the reads of the web UI's early-stopping view (api/analysis.c,
 * docs/webui.md): the most recent ended trials of one status, and a trial's
 * intermediate results. Each is a walk of an index from one end, so neither grows with
 * the history. */
#ifndef TRIALQ_ANALYSIS_ROWS_H
#define TRIALQ_ANALYSIS_ROWS_H

#include "schema/exp_ops.h"

struct curve_trial {
    char *id;
    int64_t sequence;
    int attempt;
    const char *status; /* one of trial_statuses (static) */
};

/* Appends to *out (*n of *cap, grown) the at most `limit` trials of the experiment in
 * status (one of trial_statuses), the most recent first: a walk of trial_queue
 * (experiment, status, sequence) from its end. 0 or -1. */
int curve_trials(struct db *db, const char *exp_id, const char *status, int64_t limit, struct curve_trial **out,
                 int *n, int *cap, struct errbuf *e);
void curve_trials_free(struct curve_trial *t, int n);

/* The first `limit` PERIODICAL results of the trial's attempt with a number (the
 * number, or dict["default"]), by their sequence: fn(ctx, sequence, value) each. Also
 * *more = 1 when there are more than limit. 0 or -1. */
int curve_points(struct db *db, const char *trial_id, int attempt, int64_t limit,
                 void (*fn)(void *ctx, int64_t step, double value), void *ctx, int *more, struct errbuf *e);

#endif
