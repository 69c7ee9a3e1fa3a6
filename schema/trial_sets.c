/* trial_sets.c: sets and counts of an experiment's trials (trial_sets.h). */
#include <stdlib.h>
#include <string.h>

#include "schema/trial_sets.h"

void id_list_free(struct id_list *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->ids[i]);
        if (l->dirs)
            free(l->dirs[i]);
    }
    free(l->ids);
    free(l->dirs);
    memset(l, 0, sizeof *l);
}

static void id_list_add(struct id_list *l, char *id, char *dir, int with_dirs)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->ids = xrealloc(l->ids, sizeof *l->ids * (size_t)l->cap);
        if (with_dirs)
            l->dirs = xrealloc(l->dirs, sizeof *l->dirs * (size_t)l->cap);
    }
    l->ids[l->n] = id;
    if (with_dirs)
        l->dirs[l->n] = dir;
    l->n++;
}

/* Steps st to its end into out: column 0 the id, column 1 the dir when with_dirs. */
static int read_ids(struct db *db, sqlite3_stmt *st, int with_dirs, struct id_list *out, struct errbuf *e)
{
    memset(out, 0, sizeof *out);
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        id_list_add(out, col_str(st, 0), with_dirs ? col_str(st, 1) : NULL, with_dirs);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        id_list_free(out);
        return errf(e, "trials: %s", sqlite3_errmsg(db->h));
    }
    return 0;
}

int trials_started(struct db *db, const char *exp_id, struct id_list *out, struct errbuf *e)
{
    return read_ids(db, db_query(db, e, "SELECT id FROM trial WHERE experiment_id = ? AND " SQL_TRIAL_STARTED,
                                 "s", exp_id), 0, out, e);
}

int trials_overdue(struct db *db, const char *exp_id, int64_t started_before_ms, struct id_list *out,
                   struct errbuf *e)
{
    return read_ids(db, db_query(db, e, "SELECT id FROM trial WHERE experiment_id = ? AND status = 'RUNNING'"
                                        " AND kill_request IS NULL AND start_time < ?",
                                 "si", exp_id, started_before_ms), 0, out, e);
}

int trials_queued(struct db *db, const char *exp_id, int64_t max_n, struct id_list *out, struct errbuf *e)
{
    return read_ids(db, db_query(db, e, "SELECT id FROM trial WHERE experiment_id = ? AND status = 'WAITING'"
                                        " AND lease_owner IS NULL ORDER BY sequence DESC LIMIT ?",
                                 "si", exp_id, max_n < 0 ? (int64_t)0 : max_n), 0, out, e);
}

int trials_with_status(struct db *db, const char *exp_id, const char *status, struct id_list *out, struct errbuf *e)
{
    return read_ids(db, db_query(db, e, "SELECT id FROM trial WHERE experiment_id = ? AND status = ?"
                                        " ORDER BY sequence", "ss", exp_id, status), 0, out, e);
}

int trials_dirs(struct db *db, const char *exp_id, const char *trial_id, struct id_list *out, struct errbuf *e)
{
    return read_ids(db, db_query(db, e, "SELECT id, trial_dir FROM trial WHERE experiment_id = ?"
                                        " AND (?2 IS NULL OR id = ?2) ORDER BY sequence", "ss", exp_id, trial_id),
                    1, out, e);
}

int rows_read(struct db *db, sqlite3_stmt *st, void **out, int *n, size_t size, void (*fill)(sqlite3_stmt *, void *),
              void (*clear)(void *), const char *what, struct errbuf *e)
{
    *out = NULL;
    *n = 0;
    if (!st)
        return -1;
    char *items = NULL;
    int rc, cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            items = xrealloc(items, size * (size_t)cap);
        }
        fill(st, items + size * (size_t)(*n)++);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        for (int i = 0; clear && i < *n; i++)
            clear(items + size * (size_t)i);
        free(items);
        *n = 0;
        return errf(e, "%s: %s", what, sqlite3_errmsg(db->h));
    }
    *out = items;
    return 0;
}

static void fill_trial(sqlite3_stmt *st, void *item)
{
    trial_from_row(st, item);
}

static void clear_trial(void *item)
{
    trial_clear(item);
}

int trials_all(struct db *db, const char *exp_id, struct trial **out, int *n, struct errbuf *e)
{
    return rows_read(db, db_query(db, e, "SELECT " TRIAL_COLUMNS " FROM trial WHERE experiment_id = ? ORDER BY sequence",
                                  "s", exp_id), (void **)out, n, sizeof **out, fill_trial, clear_trial, "trials", e);
}

int trials_page(struct db *db, const char *exp_id, int order, const struct trial *after, int limit, struct trial **out,
                int *n, struct errbuf *e)
{
    /* keyset pages: each starts after the last row of the one before, in the index
     * (by sequence: the UNIQUE one; by metric: trial_status_metric, migration 017) */
#define SHOWN " FROM trial WHERE experiment_id = ?1 AND status = 'SUCCEEDED' AND final_metric IS NOT NULL"
#define AFTER(cmp) " AND (?2 IS NULL OR (final_metric " cmp " ?2 AND NOT (final_metric = ?2 AND sequence <= ?3)))"
    static const char *const sql[] = {
        "SELECT " TRIAL_COLUMNS SHOWN AFTER("<=") " ORDER BY final_metric DESC, sequence LIMIT ?4",
        "SELECT " TRIAL_COLUMNS " FROM trial WHERE experiment_id = ?1 AND sequence > ?3 ORDER BY sequence LIMIT ?4",
        "SELECT " TRIAL_COLUMNS SHOWN AFTER(">=") " ORDER BY final_metric ASC, sequence LIMIT ?4",
    };
#undef SHOWN
#undef AFTER
    sqlite3_stmt *st = db_prep(db, sql[order < 0 ? 2 : order > 0 ? 0 : 1], e);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, exp_id, -1, SQLITE_TRANSIENT);
    if (after && order)
        sqlite3_bind_double(st, 2, after->final_metric);
    else
        sqlite3_bind_null(st, 2);
    sqlite3_bind_int64(st, 3, after ? after->sequence : INT64_MIN);
    sqlite3_bind_int(st, 4, limit);
    return rows_read(db, st, (void **)out, n, sizeof **out, fill_trial, clear_trial, "trials", e);
}

int trials_queued_set_reason(struct db *db, const char *exp_id, const char *reason, struct errbuf *e)
{
    return db_run(db, e, "UPDATE trial SET waiting_reason = ?, updated_at = ?"
                         " WHERE experiment_id = ? AND status = 'WAITING' AND lease_owner IS NULL",
                  "sis", reason, now_ms(), exp_id);
}

int64_t trials_count(struct db *db, const char *exp_id, enum trial_count which, const char *platform,
                     struct errbuf *e)
{
    /* each answered from the trial_queue index (experiment_id, status, ...), those over
     * the history (done, succeeded) from the counts kept per status (migration 017) */
    static const char *const sql[] = {
        [COUNT_ACTIVE] = "SELECT count(*) FROM trial WHERE experiment_id = ? AND status IN " SQL_TRIAL_ACTIVE,
        [COUNT_STARTED] = "SELECT count(*) FROM trial WHERE experiment_id = ?1 AND " SQL_TRIAL_STARTED
                          " AND (?2 IS NULL OR platform = ?2)",
        [COUNT_DONE] = "SELECT coalesce(sum(n), 0) FROM trial_status_count WHERE experiment_id = ?"
                       " AND status NOT IN " SQL_TRIAL_ACTIVE,
        [COUNT_RUNNING] = "SELECT count(*) FROM trial WHERE experiment_id = ? AND status = 'RUNNING'",
        [COUNT_SUCCEEDED] = ("SELECT coalesce(sum(n), 0) FROM trial_status_count WHERE experiment_id = ?"
                             " AND status = 'SUCCEEDED'"),
    };
    int64_t n = 0;
    int rc = which == COUNT_STARTED ? db_int(db, e, &n, sql[which], "ss", exp_id, platform)
                                    : db_int(db, e, &n, sql[which], "s", exp_id);
    return rc < 0 ? -1 : n;
}

void status_counts_free(struct status_count *c, int n)
{
    for (int i = 0; i < n; i++)
        free(c[i].status);
    free(c);
}

static void fill_status_count(sqlite3_stmt *st, void *item)
{
    struct status_count *c = item;
    c->status = col_str(st, 0);
    c->n = col_i64(st, 1);
}

static void clear_status_count(void *item)
{
    free(((struct status_count *)item)->status);
}

int trials_per_status(struct db *db, const char *exp_id, struct status_count **out, int *n, struct errbuf *e)
{
    /* the counts kept per block of 1024 sequences (migration 017): a few rows per 1024
     * trials read, not every trial */
    return rows_read(db, db_query(db, e, "SELECT status, sum(n) FROM trial_status_count WHERE experiment_id = ?"
                                         " GROUP BY status HAVING sum(n) > 0", "s", exp_id), (void **)out, n, sizeof **out, fill_status_count, clear_status_count,
                     "counting trials", e);
}

int trial_attempt_of(struct db *db, const char *exp_id, const char *trial_id, int *attempt, struct errbuf *e)
{
    int64_t a = 0;
    int rc = db_int(db, e, &a, "SELECT attempt FROM trial WHERE id = ? AND experiment_id = ?", "ss", trial_id, exp_id);
    *attempt = (int)a;
    return rc;
}

int trial_experiment_of(struct db *db, const char *trial_id, char **exp_id, struct errbuf *e)
{
    *exp_id = NULL;
    return db_text(db, e, exp_id, "SELECT experiment_id FROM trial WHERE id = ?", "s", trial_id);
}
