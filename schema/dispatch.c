/* dispatch.c: the rows NNI's dispatcher process is fed from (schema/dispatch.h). */
#include "schema/dispatch.h"
#include "common/trial_status.h"

#define TEXT(st, i) ((const char *)sqlite3_column_text((st), (i)))

/* Ends a loop over st's rows: 0 when it ran to its end, else -1 with e set. */
static int rows_done(struct db *db, sqlite3_stmt *st, int step, struct errbuf *e)
{
    int rc = 0;
    if (step != SQLITE_DONE)
        rc = errf(e, "database %s: %s", db->path, sqlite3_errmsg(db->h));
    sqlite3_reset(st);
    return rc;
}

int disp_cursors_now(struct db *db, const char *exp_id, struct disp_cursors *c, struct errbuf *e)
{
    c->metric = c->change = c->import = 0;
    if (db_int(db, e, &c->metric, "SELECT coalesce(max(m.id), 0) FROM metric m JOIN trial t ON t.id = m.trial_id"
                                  " WHERE t.experiment_id = ?", "s", exp_id) < 0 ||
        db_int(db, e, &c->change, "SELECT coalesce(max(change_seq), 0) FROM trial WHERE experiment_id = ?", "s",
               exp_id) < 0 ||
        db_int(db, e, &c->import, "SELECT coalesce(max(id), 0) FROM event WHERE experiment_id = ?"
                                  " AND entity = 'import'", "s", exp_id) < 0)
        return -1;
    return 0;
}

int disp_imports(struct db *db, const char *exp_id, int64_t after, int64_t upto, disp_import_fn *fn, void *arg,
                 struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT id, reason FROM event WHERE experiment_id = ? AND entity = 'import'"
                                       " AND id > ? AND id <= ? ORDER BY id", "sii", exp_id, after, upto);
    if (!st)
        return -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        fn(arg, sqlite3_column_int64(st, 0), TEXT(st, 1));
    return rows_done(db, st, step, e);
}

int disp_succeeded(struct db *db, const char *exp_id, disp_result_fn *fn, void *arg, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT id, parameters, final_metric_json FROM trial WHERE experiment_id = ?"
                                       " AND status = 'SUCCEEDED' AND final_metric_json IS NOT NULL ORDER BY sequence",
                                "s", exp_id);
    if (!st)
        return -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        fn(arg, TEXT(st, 0), TEXT(st, 1), TEXT(st, 2));
    return rows_done(db, st, step, e);
}

int disp_active(struct db *db, const char *exp_id, disp_active_fn *fn, void *arg, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT parameter_id, parameters, parameter_label FROM trial"
                                       " WHERE experiment_id = ? AND status IN " SQL_TRIAL_ACTIVE
                                       " AND parameter_id IS NOT NULL ORDER BY sequence", "s", exp_id);
    if (!st)
        return -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        fn(arg, sqlite3_column_int64(st, 0), TEXT(st, 1), TEXT(st, 2));
    return rows_done(db, st, step, e);
}

int disp_changes(struct db *db, const char *exp_id, int64_t after, int limit, disp_change_fn *fn, void *arg,
                 struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT change_seq, id, status, parameter_id FROM trial"
                                       " WHERE experiment_id = ? AND change_seq > ? ORDER BY change_seq LIMIT ?",
                                "sid", exp_id, after, limit);
    if (!st)
        return -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        struct disp_change c = {
            .change_seq = sqlite3_column_int64(st, 0),
            .trial_id = TEXT(st, 1),
            .status = TEXT(st, 2),
            .has_index = sqlite3_column_type(st, 3) != SQLITE_NULL,
            .parameter_id = sqlite3_column_type(st, 3) != SQLITE_NULL ? sqlite3_column_int64(st, 3) : -1,
        };
        fn(arg, &c);
    }
    return rows_done(db, st, step, e);
}

static void metric_row(sqlite3_stmt *st, disp_metric_fn *fn, void *arg)
{
    struct disp_metric m = {
        .id = sqlite3_column_int64(st, 0),
        .trial_id = TEXT(st, 1),
        .parameter_id = TEXT(st, 2),
        .type = TEXT(st, 3),
        .sequence = sqlite3_column_int64(st, 4),
        .value = TEXT(st, 5),
    };
    fn(arg, &m);
}

int disp_metrics(struct db *db, const char *exp_id, int64_t after, int limit, disp_metric_fn *fn, void *arg,
                 struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT m.id, m.trial_id, m.parameter_id, m.type, m.sequence, m.value"
                                       " FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id = ?"
                                       " AND m.id > ? AND m.attempt = t.attempt ORDER BY m.id LIMIT ?",
                                "sid", exp_id, after, limit);
    if (!st)
        return -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW)
        metric_row(st, fn, arg);
    return rows_done(db, st, step, e);
}

int disp_final(struct db *db, const char *trial_id, disp_metric_fn *fn, void *arg, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT m.id, m.trial_id, m.parameter_id, m.type, m.sequence, m.value"
                                       " FROM metric m JOIN trial t ON t.id = m.trial_id WHERE m.trial_id = ?"
                                       " AND m.attempt = t.attempt AND m.type = 'FINAL' ORDER BY m.id LIMIT 1",
                                "s", trial_id);
    if (!st)
        return -1;
    int step = sqlite3_step(st), found = step == SQLITE_ROW;
    if (found) {
        metric_row(st, fn, arg);
        step = sqlite3_step(st);
    }
    return rows_done(db, st, step, e) < 0 ? -1 : found;
}
