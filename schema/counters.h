/* counters.h: the kept counts GET /metrics serves (migration 018): per experiment,
 * counts that triggers keep with every trial and metric change (exp_counter), and what
 * each worker reports of its loop (worker_stat). Each read is a few rows whatever the
 * number of trials. */
#ifndef TRIALQ_COUNTERS_H
#define TRIALQ_COUNTERS_H

#include "schema/db.h"

/* Calls fn for each exp_counter row of the experiment ("trials:RUNNING", "started", ...;
 * migration 018 lists them), in name order; "metrics:TYPE" includes the metrics not
 * folded in yet (metric_fold below). live: the trial gauges worked out now, as
 * counters_refresh would set them, instead of read (for an api that cannot refresh
 * them: view mode, a read-only database; costs a sum of trial_status_count, about a
 * row per 1,024 trials). 0, or -1 on error. */
int counters_each(struct db *db, const char *exp_id, int live, void (*fn)(const char *name, int64_t n, void *arg),
                  void *arg, struct errbuf *e);

/* Sets the experiment's trial gauges in exp_counter ("trials:STATUS", "waiting:CLASS",
 * and "ended:STATUS", migration 021) to what the kept rows say now: trial_status_count's
 * sums and the classes of the WAITING trials. Reads first and writes (one transaction)
 * only when a count differs. *changed 1 when it wrote. 0, or -1 on error. */
int counters_refresh(struct db *db, const char *exp_id, int *changed, struct errbuf *e);

/* Folds the metrics stored since the last fold (ids above metric_fold.upto, at most
 * max_rows of them) into exp_counter ("metrics:TYPE") and metric_count (migration 020),
 * and moves upto past them, in one transaction; nothing is written when there is nothing
 * new (max_rows 0: no limit). How far upto moved (ids) into *folded: 0, or -1 on error
 * (nothing changed). */
int metric_fold(struct db *db, int64_t max_rows, int64_t *folded, struct errbuf *e);

/* Calls fn for each worker_stat row of the experiment, by platform and name. */
int worker_stats_each(struct db *db, const char *exp_id,
                      void (*fn)(const char *platform, const char *name, int64_t value, void *arg), void *arg,
                      struct errbuf *e);

/* What one worker adds to its platform's rows in one report. */
enum { WSTAT_SUBMIT, WSTAT_POLL, WSTAT_LIST, WSTAT_KILL, WSTAT_OPS };
extern const char *const wstat_op_names[WSTAT_OPS]; /* submit, poll, list, kill */
struct worker_report {
    int64_t requests[WSTAT_OPS], errors[WSTAT_OPS]; /* counted since the last report */
    int64_t loop_lag_ms;                           /* the most its loop ran late meanwhile */
};
/* One transaction: the counts added to the platform's totals, the lag and the time of the
 * report set. 0, or -1 (nothing written: the caller keeps its counts for the next). */
int worker_stats_report(struct db *db, const char *exp_id, const char *platform, const struct worker_report *r,
                        struct errbuf *e);

/* The submit time (epoch ms) of the experiment's WAITING trial with the lowest sequence
 * (the oldest submitted): 1 with *out, 0 when none waits, -1 on error. One index seek. */
int oldest_waiting_submit(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e);

/* The size of the database file in bytes (its pages x the page size) into *db_bytes, and
 * of its write-ahead log file into *wal_bytes (0 when there is none): 0, or -1 on error. */
int db_size_bytes(struct db *db, int64_t *db_bytes, int64_t *wal_bytes, struct errbuf *e);

#endif
