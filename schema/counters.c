/* counters.c: the kept counts GET /metrics and the metric-data seek read (migrations 018
 * to 021; schema/counters.h): their readers, the api's fold of new metrics and refresh
 * of the trial gauges, and the workers' reports. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "schema/counters.h"

const char *const wstat_op_names[WSTAT_OPS] = {"submit", "poll", "list", "kill"};

/* The trial gauges as the rows say now, one (name, n) per name: the statuses' and the
 * final statuses' sums of trial_status_count, the WAITING trials by the class of their
 * reason (migration 018's rule), and 0 for a class the experiment had and has no more. */
#define GAUGES_NOW                                                                                                  \
    "SELECT name, sum(n) AS n FROM ("                                                                              \
    " SELECT 'trials:' || status AS name, sum(n) AS n FROM trial_status_count WHERE experiment_id = ?1"            \
    "  GROUP BY status"                                                                                            \
    " UNION ALL SELECT 'ended:' || status, sum(n) FROM trial_status_count WHERE experiment_id = ?1"                \
    "  AND status NOT IN ('WAITING', 'RUNNING', 'UNKNOWN') GROUP BY status"                                       \
    " UNION ALL SELECT 'waiting:' || class, count(*) FROM (SELECT coalesce((SELECT class FROM waiting_class_rule"   \
    "  WHERE t.waiting_reason LIKE pattern ORDER BY prio LIMIT 1), iif(t.lease_owner IS NULL, 'queued', 'claimed'))" \
    "  AS class FROM trial t WHERE t.experiment_id = ?1 AND t.status = 'WAITING') GROUP BY class"                   \
    " UNION ALL SELECT name, 0 FROM exp_counter WHERE experiment_id = ?1 AND name LIKE 'waiting:%')"               \
    " GROUP BY name"

/* The metrics stored since the last fold (a few: half a second's), by type. */
#define METRIC_BACKLOG                                                                                             \
    " UNION ALL SELECT 'metrics:' || m.type, count(*) FROM metric m CROSS JOIN trial t ON t.id = m.trial_id"      \
    "  WHERE m.id > (SELECT upto FROM metric_fold) AND t.experiment_id = ?1 GROUP BY m.type"
/* The names counters_refresh sets (the rest of exp_counter is kept by the fold and the
 * 'started' trigger). */
#define TRIAL_GAUGE "(name LIKE 'trials:%' OR name LIKE 'ended:%' OR name LIKE 'waiting:%')"

int counters_each(struct db *db, const char *exp_id, int live, void (*fn)(const char *name, int64_t n, void *arg),
                  void *arg, struct errbuf *e)
{
    sqlite3_stmt *st = live
        ? db_query(db, e,
                   "SELECT name, sum(n) FROM ("
                   " SELECT name, n FROM exp_counter WHERE experiment_id = ?1 AND NOT " TRIAL_GAUGE
                   " UNION ALL SELECT name, n FROM (" GAUGES_NOW ")" METRIC_BACKLOG ")"
                   " GROUP BY name ORDER BY name", "s", exp_id)
        : db_query(db, e,
                   "SELECT name, sum(n) FROM (SELECT name, n FROM exp_counter WHERE experiment_id = ?1" METRIC_BACKLOG ")"
                   " GROUP BY name ORDER BY name", "s", exp_id);
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn((const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1), arg);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : errf(e, "exp_counter: %s", sqlite3_errmsg(db->h));
}

int counters_refresh(struct db *db, const char *exp_id, int *changed, struct errbuf *e)
{
    int64_t differ = 0;
    *changed = 0;
    /* a read first: no write lock taken when nothing moved */
    if (db_int(db, e, &differ,
               "SELECT count(*) FROM (" GAUGES_NOW ") w LEFT JOIN exp_counter x"
               " ON x.experiment_id = ?1 AND x.name = w.name WHERE x.n IS NOT w.n", "s", exp_id) < 0)
        return -1;
    if (!differ)
        return 0;
    if (db_begin(db, e) < 0)
        return -1;
    if (db_run(db, e,
               "INSERT INTO exp_counter (experiment_id, name, n) SELECT ?1, name, n FROM (" GAUGES_NOW ") WHERE true"
               " ON CONFLICT DO UPDATE SET n = excluded.n WHERE n IS NOT excluded.n", "s", exp_id) < 0 ||
        db_commit(db, e) < 0) {
        db_rollback(db);
        return -1;
    }
    *changed = 1;
    return 0;
}

/* The fold's writes, inside the caller's transaction: the metrics with ids in (lo, hi].
 * Each pass groups the metrics by trial first and looks up each trial once (a lookup per
 * metric cost 4 times as much: 2.7 against 0.7 us a metric). */
static int fold_range(struct db *db, int64_t lo, int64_t hi, struct errbuf *e)
{
    if (db_run(db, e,
               "INSERT INTO exp_counter (experiment_id, name, n)"
               " SELECT t.experiment_id, 'metrics:' || g.type, sum(g.n)"
               " FROM (SELECT trial_id, type, count(*) AS n FROM metric WHERE id > ?1 AND id <= ?2 GROUP BY 1, 2) g"
               " JOIN trial t ON t.id = g.trial_id GROUP BY 1, 2"
               " ON CONFLICT DO UPDATE SET n = n + excluded.n", "ii", lo, hi) < 0)
        return -1;
    /* only the metrics of each trial's current attempt: those the listings show */
    if (db_run(db, e,
               "INSERT INTO metric_count (experiment_id, block, periodical, final)"
               " SELECT t.experiment_id, t.sequence >> 6, sum(g.n * (g.type = 'PERIODICAL')),"
               " sum(g.n * (g.type = 'FINAL'))"
               " FROM (SELECT trial_id, attempt, type, count(*) AS n FROM metric WHERE id > ?1 AND id <= ?2"
               "       GROUP BY 1, 2, 3) g"
               " JOIN trial t ON t.id = g.trial_id AND t.attempt = g.attempt GROUP BY 1, 2"
               " ON CONFLICT DO UPDATE SET periodical = periodical + excluded.periodical,"
               " final = final + excluded.final", "ii", lo, hi) < 0)
        return -1;
    return db_run(db, e, "UPDATE metric_fold SET upto = ?1", "i", hi) < 0 ? -1 : 0;
}

int metric_fold(struct db *db, int64_t max_rows, int64_t *folded, struct errbuf *e)
{
    int64_t upto = 0, hi = 0;
    *folded = 0;
    /* read first, outside a transaction: no write lock taken when there is nothing new */
    if (db_int(db, e, &upto, "SELECT upto FROM metric_fold", "") < 0 ||
        db_int(db, e, &hi, "SELECT coalesce(max(id), 0) FROM metric", "") < 0)
        return -1;
    if (hi <= upto)
        return 0;
    if (db_begin(db, e) < 0)
        return -1;
    /* again under the write lock: another api may have folded meanwhile */
    int rc = db_int(db, e, &upto, "SELECT upto FROM metric_fold", "") < 0 ||
             db_int(db, e, &hi, "SELECT coalesce(max(id), 0) FROM metric", "") < 0 ? -1 : 0;
    if (rc == 0 && hi > upto) {
        if (max_rows > 0 && hi - upto > max_rows)
            hi = upto + max_rows;
        rc = fold_range(db, upto, hi, e);
    }
    if (rc == 0 && db_commit(db, e) == 0) {
        *folded = hi > upto ? hi - upto : 0;
        return 0;
    }
    db_rollback(db);
    return -1;
}

int worker_stats_each(struct db *db, const char *exp_id,
                      void (*fn)(const char *platform, const char *name, int64_t value, void *arg), void *arg,
                      struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT platform, name, value FROM worker_stat WHERE experiment_id = ?"
                                       " ORDER BY platform, name", "s", exp_id);
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn((const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
           sqlite3_column_int64(st, 2), arg);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : errf(e, "worker_stat: %s", sqlite3_errmsg(db->h));
}

static int stat_put(struct db *db, const char *exp_id, const char *platform, const char *name, int64_t value,
                    int add, struct errbuf *e)
{
    return db_run(db, e, add ? "INSERT INTO worker_stat (experiment_id, platform, name, value) VALUES (?, ?, ?, ?)"
                               " ON CONFLICT DO UPDATE SET value = value + excluded.value"
                             : "INSERT INTO worker_stat (experiment_id, platform, name, value) VALUES (?, ?, ?, ?)"
                               " ON CONFLICT DO UPDATE SET value = excluded.value",
                  "sssi", exp_id, platform, name, value);
}

int worker_stats_report(struct db *db, const char *exp_id, const char *platform, const struct worker_report *r,
                        struct errbuf *e)
{
    if (db_begin(db, e) < 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < WSTAT_OPS && rc >= 0; i++) {
        char name[32];
        snprintf(name, sizeof name, "requests:%s", wstat_op_names[i]);
        rc = stat_put(db, exp_id, platform, name, r->requests[i], 1, e);
        snprintf(name, sizeof name, "errors:%s", wstat_op_names[i]);
        if (rc >= 0)
            rc = stat_put(db, exp_id, platform, name, r->errors[i], 1, e);
    }
    if (rc >= 0)
        rc = stat_put(db, exp_id, platform, "loop_lag_ms", r->loop_lag_ms, 0, e);
    if (rc >= 0)
        rc = stat_put(db, exp_id, platform, "report_ms", now_ms(), 0, e);
    if (rc < 0) {
        db_rollback(db);
        return -1;
    }
    return db_commit(db, e);
}

int oldest_waiting_submit(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e)
{
    return db_int(db, e, out, "SELECT submit_time FROM trial WHERE experiment_id = ? AND status = 'WAITING'"
                              " ORDER BY sequence LIMIT 1", "s", exp_id);
}

int db_size_bytes(struct db *db, int64_t *db_bytes, int64_t *wal_bytes, struct errbuf *e)
{
    int64_t pages = 0, page_size = 0;
    *db_bytes = *wal_bytes = 0;
    if (db_int(db, e, &pages, "PRAGMA page_count", "") < 0 || db_int(db, e, &page_size, "PRAGMA page_size", "") < 0)
        return -1;
    *db_bytes = pages * page_size;
    char *wal = xasprintf("%s-wal", db->path);
    struct stat st;
    if (stat(wal, &st) == 0)
        *wal_bytes = st.st_size;
    free(wal);
    return 0;
}
