/* tuner_rows.c: the reads of the api's tuner view and assessor (tuner_rows.h). */
#include <stdlib.h>
#include <string.h>

#include "schema/tuner_rows.h"

int trial_changes(struct db *db, const char *exp_id, int64_t since_ms,
                  int (*fn)(void *ctx, const struct trial_change *c, struct errbuf *e), void *ctx, struct errbuf *e)
{
    /* the trial_updated index (experiment_id, updated_at) */
    sqlite3_stmt *st = db_query(db, e,
        "SELECT id, parameter_id, parameters, final_metric, status, updated_at, sequence, parameter_label, attempt"
        " FROM trial WHERE experiment_id = ? AND updated_at >= ? ORDER BY sequence", "si", exp_id, since_ms);
    if (!st)
        return -1;
    int rc, bad = 0;
    while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct trial_change c = {
            .id = (const char *)sqlite3_column_text(st, 0),
            .parameter_id = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : col_i64(st, 1),
            .parameters = (const char *)sqlite3_column_text(st, 2),
            .has_final = sqlite3_column_type(st, 3) != SQLITE_NULL,
            .final = sqlite3_column_double(st, 3),
            .status = (const char *)sqlite3_column_text(st, 4),
            .updated_at = col_i64(st, 5),
            .sequence = col_i64(st, 6),
            .label = (const char *)sqlite3_column_text(st, 7),
            .attempt = (int)col_i64(st, 8),
        };
        bad = fn(ctx, &c, e) < 0;
    }
    sqlite3_reset(st);
    if (bad)
        return -1;
    return rc == SQLITE_DONE ? 0 : errf(e, "trials: %s", sqlite3_errmsg(db->h));
}

int import_events(struct db *db, const char *exp_id, int (*fn)(void *ctx, int64_t event_id, const char *records),
                  void *ctx, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT id, reason FROM event WHERE experiment_id = ? AND entity = 'import'"
                                       " ORDER BY id", "s", exp_id);
    if (!st)
        return -1;
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
        stop = fn(ctx, col_i64(st, 0), (const char *)sqlite3_column_text(st, 1)) < 0;
    sqlite3_reset(st);
    if (stop)
        return errf(e, "imported data: stopped");
    return rc == SQLITE_DONE ? 0 : errf(e, "imported data: %s", sqlite3_errmsg(db->h));
}

int import_event_newest(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e)
{
    *out = 0;
    return db_int(db, e, out, "SELECT coalesce(max(id), 0) FROM event WHERE experiment_id = ? AND entity = 'import'",
                  "s", exp_id) < 0 ? -1 : 0;
}

int metric_latest_periodical(struct db *db, const char *trial_id, int attempt, double *out, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT default_value FROM metric WHERE trial_id = ? AND attempt = ?"
                                       " AND type = 'PERIODICAL' AND default_value IS NOT NULL"
                                       " ORDER BY sequence DESC, id DESC LIMIT 1", "sd", trial_id, attempt);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_double(st, 0);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return errf(e, "latest metric of %s: %s", trial_id, sqlite3_errmsg(db->h));
    return rc == SQLITE_ROW;
}

int trials_next_tuner_index(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e)
{
    return db_int(db, e, out, "SELECT coalesce(max(parameter_id) + 1, 0) FROM trial"
                              " WHERE experiment_id = ? AND parameter_source = 'algorithm'", "s", exp_id) < 0 ? -1 : 0;
}

int64_t trials_assessable(struct db *db, const char *exp_id, struct errbuf *e)
{
    int64_t n = 0;
    return db_int(db, e, &n, "SELECT count(*) FROM trial t WHERE t.experiment_id = ? AND t.status = 'RUNNING'"
                             " AND t.kill_request IS NULL AND EXISTS (SELECT 1 FROM metric m WHERE m.trial_id = t.id"
                             " AND m.attempt = t.attempt AND m.type = 'PERIODICAL')", "s", exp_id) < 0 ? -1 : n;
}

int periodical_rows(struct db *db, const char *exp_id, int (*fn)(void *ctx, const struct periodical_row *r),
                    void *ctx, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e,
        "SELECT t.id, t.status, t.kill_request IS NULL, m.sequence, m.default_value FROM trial t"
        " JOIN metric m ON m.trial_id = t.id AND m.attempt = t.attempt AND m.type = 'PERIODICAL'"
        " WHERE t.experiment_id = ? AND t.status IN ('RUNNING'," SQL_TRIAL_FINAL_LIST ")"
        " ORDER BY t.id, m.sequence", "s", exp_id);
    if (!st)
        return -1;
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct periodical_row r = {
            .trial_id = (const char *)sqlite3_column_text(st, 0),
            .status = (const char *)sqlite3_column_text(st, 1),
            .no_kill_request = sqlite3_column_int(st, 2),
            .sequence = col_i64(st, 3),
            .has_value = sqlite3_column_type(st, 4) != SQLITE_NULL,
            .value = sqlite3_column_double(st, 4),
        };
        stop = fn(ctx, &r) < 0;
    }
    sqlite3_reset(st);
    if (stop)
        return 0;
    return rc == SQLITE_DONE ? 0 : errf(e, "intermediate results: %s", sqlite3_errmsg(db->h));
}
