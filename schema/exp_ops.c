/* exp_ops.c: experiment row updates and small reads (exp_ops.h). */
#include <stdlib.h>
#include <string.h>

#include "schema/exp_ops.h"

int exp_ids(struct db *db, int with_api_only, struct id_list *out, struct errbuf *e)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = db_query(db, e, with_api_only ? "SELECT id FROM experiment WHERE api_pid IS NOT NULL"
                                                       " ORDER BY start_time, id"
                                                     : "SELECT id FROM experiment ORDER BY start_time, id", "");
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == out->cap) {
            out->cap = out->cap ? out->cap * 2 : 16;
            out->ids = xrealloc(out->ids, sizeof *out->ids * (size_t)out->cap);
        }
        out->ids[out->n++] = col_str(st, 0);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        id_list_free(out);
        return errf(e, "experiments: %s", sqlite3_errmsg(db->h));
    }
    return 0;
}

int exp_exists(struct db *db, const char *id, struct errbuf *e)
{
    int64_t one = 0;
    return db_int(db, e, &one, "SELECT 1 FROM experiment WHERE id = ?", "s", id);
}

int exp_config_rows(struct db *db, struct exp_config_row **rows, int *n, struct errbuf *e)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st = db_query(db, e, "SELECT id, config FROM experiment", "");
    if (!st)
        return -1;
    int cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (*n == cap)
            *rows = xrealloc(*rows, (size_t)(cap = cap ? 2 * cap : 16) * sizeof **rows);
        (*rows)[*n].id = col_str(st, 0);
        (*rows)[*n].config = col_str(st, 1);
        (*n)++;
    }
    sqlite3_reset(st);
    return 0;
}

void exp_config_rows_free(struct exp_config_row *rows, int n)
{
    for (int i = 0; i < n; i++) {
        free(rows[i].id);
        free(rows[i].config);
    }
    free(rows);
}

int exp_config_replace(struct db *db, const char *id, const char *old, const char *text, struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET config = ? WHERE id = ? AND config = ?", "sss", text, id, old) < 0
               ? -1
               : 0;
}

int exp_set(struct db *db, const char *id, enum exp_setting which, int64_t v, struct errbuf *e)
{
    static const char *const sql[] = {
        [EXP_CONCURRENCY] = "UPDATE experiment SET concurrency = ?, updated_at = ? WHERE id = ?",
        [EXP_MAX_TRIAL_NUMBER] = "UPDATE experiment SET max_trial_number = ?, updated_at = ? WHERE id = ?",
        [EXP_MAX_EXEC_SECONDS] = "UPDATE experiment SET max_exec_seconds = ?, updated_at = ? WHERE id = ?",
    };
    return db_run(db, e, sql[which], "iis", v, now_ms(), id);
}

int exp_set_search_space(struct db *db, const char *id, const char *space_json, int64_t index_base,
                         struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET search_space = ?, space_index_base = ?, tuner_exhausted = 0,"
                         " updated_at = ? WHERE id = ?", "siis", space_json, index_base, now_ms(), id);
}

int exp_set_tuner_exhausted(struct db *db, const char *id, struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET tuner_exhausted = 1 WHERE id = ?", "s", id);
}

int exp_set_bind_address(struct db *db, const char *id, const char *address, struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET bind_address = ? WHERE id = ?", "ss", address, id);
}

int exp_next_sequence(struct db *db, const char *id, int64_t *out, struct errbuf *e)
{
    return db_int(db, e, out, "SELECT next_sequence FROM experiment WHERE id = ?", "s", id);
}

int exp_heartbeat(struct db *db, const char *id, int64_t now, int64_t exec_add_ms, struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET api_heartbeat = ?, exec_duration_ms = exec_duration_ms + ?"
                         " WHERE id = ?", "iis", now, exec_add_ms, id);
}

int exp_request_stop(struct db *db, const char *id, struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET desired_status = 'STOPPED' WHERE id = ?", "s", id);
}

int exp_forget_api(struct db *db, const char *id, struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET api_pid = NULL, api_start = NULL WHERE id = ?", "s", id);
}

int exp_delete(struct db *db, const char *id, const char *status, const char *reason, struct errbuf *e)
{
    if (db_begin(db, e) < 0)
        return -1;
    if (db_run(db, e, "DELETE FROM experiment WHERE id = ?", "s", id) < 0 ||
        db_event(db, e, id, NULL, "experiment", status, "DELETED", reason) < 0 || db_commit(db, e) < 0) {
        db_rollback(db);
        return -1;
    }
    return 0;
}

/* Reads the one row of st (trial id, sequence, final_metric, parameters, final_metric_json). */
static int best_row(struct db *db, sqlite3_stmt *st, struct best_trial *out, struct errbuf *e)
{
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->trial_id = col_str(st, 0);
        out->sequence = col_i64(st, 1);
        out->final_metric = sqlite3_column_double(st, 2);
        out->parameters = col_str(st, 3);
        out->final_metric_json = col_str(st, 4);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return errf(e, "best trial: %s", sqlite3_errmsg(db->h));
    return rc == SQLITE_ROW;
}

int exp_best_trial(struct db *db, const char *id, struct best_trial *out, struct errbuf *e)
{
    memset(out, 0, sizeof *out);
    return best_row(db, db_query(db, e, "SELECT trial_id, sequence, final_metric, parameters, NULL FROM best_trials_v"
                                        " WHERE experiment_id = ? AND rank = 1", "s", id), out, e);
}

int trial_best_final(struct db *db, const char *exp_id, int maximize, struct best_trial *out, struct errbuf *e)
{
    memset(out, 0, sizeof *out);
    /* the trial_final_metric index (migration 012) */
    return best_row(db, db_query(db, e,
        maximize ? "SELECT id, sequence, final_metric, parameters, final_metric_json FROM trial"
                   " WHERE experiment_id = ? AND status = 'SUCCEEDED' AND final_metric IS NOT NULL"
                   " ORDER BY final_metric DESC, sequence LIMIT 1"
                 : "SELECT id, sequence, final_metric, parameters, final_metric_json FROM trial"
                   " WHERE experiment_id = ? AND status = 'SUCCEEDED' AND final_metric IS NOT NULL"
                   " ORDER BY final_metric ASC, sequence LIMIT 1", "s", exp_id), out, e);
}

void best_trial_clear(struct best_trial *b)
{
    free(b->trial_id);
    free(b->parameters);
    free(b->final_metric_json);
    memset(b, 0, sizeof *b);
}

static void fill_proc(sqlite3_stmt *st, void *item)
{
    struct proc_row *r = item;
    r->row = col_i64(st, 0);
    r->pid = (int)col_i64(st, 1);
    r->start = (uint64_t)col_i64(st, 2);
    r->host = col_str(st, 3);
}

static void clear_proc(void *item)
{
    free(((struct proc_row *)item)->host);
}

int procs_unended(struct db *db, const char *exp_id, struct proc_row **out, int *n, struct errbuf *e)
{
    return rows_read(db, db_query(db, e, "SELECT id, pid, pid_start, host FROM process"
                                         " WHERE experiment_id = ? AND ended_at IS NULL", "s", exp_id),
                     (void **)out, n, sizeof **out, fill_proc, clear_proc, "processes", e);
}

void proc_rows_free(struct proc_row *r, int n)
{
    for (int i = 0; i < n; i++)
        free(r[i].host);
    free(r);
}
