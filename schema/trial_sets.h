/* trial_sets.h: the sets of an experiment's trials that the api and nnictl act on or
 * count (to stop, to cancel, over their duration, per status), as lists of ids and
 * numbers. The SQL behind them is here, with schema/ and queue/ (docs/architecture.md). */
#ifndef TRIALQ_TRIAL_SETS_H
#define TRIALQ_TRIAL_SETS_H

#include "schema/schema.h"

/* A list of trial ids (and, where asked, their trial_dir: NULL when none recorded). */
struct id_list {
    char **ids;
    char **dirs;
    int n, cap;
};
void id_list_free(struct id_list *l);

/* Trials a worker has taken (SQL_TRIAL_STARTED): what a stop must end. */
int trials_started(struct db *db, const char *exp_id, struct id_list *out, struct errbuf *e);
/* RUNNING trials started before started_before_ms with no kill request yet
 * (maxTrialDuration). */
int trials_overdue(struct db *db, const char *exp_id, int64_t started_before_ms, struct id_list *out,
                   struct errbuf *e);
/* Up to max_n WAITING trials no worker took, the newest first. */
int trials_queued(struct db *db, const char *exp_id, int64_t max_n, struct id_list *out, struct errbuf *e);
/* For schema/'s typed readers: steps st to its end into a new array *out of *n items of
 * size bytes, fill(st, item) making each; on an error every item made is given to
 * clear (when not NULL), nothing is returned and e says what was read (what). */
int rows_read(struct db *db, sqlite3_stmt *st, void **out, int *n, size_t size, void (*fill)(sqlite3_stmt *, void *),
              void (*clear)(void *), const char *what, struct errbuf *e);

/* Trials of one status, in sequence order (nnictl trial rerun --failed). */
int trials_with_status(struct db *db, const char *exp_id, const char *status, struct id_list *out, struct errbuf *e);
/* Every trial, or the one trial_id (NULL: all), in sequence order, with its dirs. */
int trials_dirs(struct db *db, const char *exp_id, const char *trial_id, struct id_list *out, struct errbuf *e);
/* Every trial of the experiment, whole rows, in sequence order (*out: a new array). */
int trials_all(struct db *db, const char *exp_id, struct trial **out, int *n, struct errbuf *e);
/* Up to limit trials after `after` (NULL: from the first) in an order: 0 every trial by
 * sequence; 1 the SUCCEEDED ones with a final metric, highest first; -1 the same,
 * lowest first (ties by sequence). Read page after page in constant memory. */
int trials_page(struct db *db, const char *exp_id, int order, const struct trial *after, int limit, struct trial **out,
                int *n, struct errbuf *e);

/* Sets the waiting_reason of the WAITING trials no worker took. Returns rows or -1. */
int trials_queued_set_reason(struct db *db, const char *exp_id, const char *reason, struct errbuf *e);

enum trial_count {
    COUNT_ACTIVE,    /* WAITING or RUNNING */
    COUNT_STARTED,   /* SQL_TRIAL_STARTED (platform: of that platform, when not NULL) */
    COUNT_DONE,      /* neither WAITING nor RUNNING */
    COUNT_RUNNING,
    COUNT_SUCCEEDED,
};
/* How many trials of the experiment are in the set; -1 on error (e says why). */
int64_t trials_count(struct db *db, const char *exp_id, enum trial_count which, const char *platform,
                     struct errbuf *e);

/* Trials per status, one entry per status that has trials, ordered by status (as
 * stored, whether this build knows it or not). */
struct status_count {
    char *status;
    int64_t n;
};
int trials_per_status(struct db *db, const char *exp_id, struct status_count **out, int *n, struct errbuf *e);
void status_counts_free(struct status_count *c, int n);
/* The current attempt of a trial of the experiment: 1 found, 0 not in it, -1 error. */
int trial_attempt_of(struct db *db, const char *exp_id, const char *trial_id, int *attempt, struct errbuf *e);
/* The experiment a trial belongs to (a new string): 1 found, 0 no such trial, -1 error. */
int trial_experiment_of(struct db *db, const char *trial_id, char **exp_id, struct errbuf *e);

#endif
