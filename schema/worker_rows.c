/* worker_rows.c: the experiment, process and machine rows a worker uses
 * (schema/worker_rows.h). */
#include <stdlib.h>
#include <string.h>

#include "schema/worker_rows.h"

int exp_concurrency(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e)
{
    return db_int(db, e, out, "SELECT concurrency FROM experiment WHERE id = ?", "s", exp_id);
}

int exp_add_error_once(struct db *db, const char *exp_id, const char *msg, struct errbuf *e)
{
    int64_t dup = 0;
    if (db_int(db, e, &dup, "SELECT count(*) FROM experiment, json_each(experiment.errors) j"
                            " WHERE experiment.id = ? AND j.value = ?", "ss", exp_id, msg) < 0)
        return -1;
    return dup ? 0 : exp_add_error(db, exp_id, msg, e);
}

int proc_latest(struct db *db, const char *exp_id, const char *role, struct proc_row *out, struct errbuf *e)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = db_query(db, e, "SELECT pid, pid_start, host, ended_at, started_at FROM process"
                                       " WHERE experiment_id = ? AND role = ? ORDER BY id DESC LIMIT 1",
                                "ss", exp_id, role);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        out->pid = col_i64(st, 0);
        out->pid_start = col_i64(st, 1);
        const char *host = (const char *)sqlite3_column_text(st, 2);
        snprintf(out->host, sizeof out->host, "%s", host ? host : "");
        out->ended = sqlite3_column_type(st, 3) != SQLITE_NULL;
        out->started_at = col_i64(st, 4);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_ROW)
        return 1;
    return rc == SQLITE_DONE ? 0 : errf(e, "process %s: %s", role, sqlite3_errmsg(db->h));
}

int machine_set_health(struct db *db, int64_t machine_id, int healthy, const char *error, struct errbuf *e)
{
    return db_run(db, e, "UPDATE machine SET healthy = ?, last_error = ?,"
                         " last_seen = CASE WHEN ? THEN ? ELSE last_seen END WHERE id = ?",
                  "dsdii", healthy, error, healthy, now_ms(), machine_id);
}

int machine_set_seen(struct db *db, int64_t machine_id, struct errbuf *e)
{
    return db_run(db, e, "UPDATE machine SET last_seen = ? WHERE id = ?", "ii", now_ms(), machine_id);
}
