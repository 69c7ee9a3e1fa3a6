/* experiment.c: experiment rows and their guarded status transitions. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "schema/schema.h"

int exp_status_active(const char *s)
{
    return strcmp(s, "RUNNING") == 0 || strcmp(s, "NO_MORE_TRIAL") == 0 ||
           strcmp(s, "TUNER_NO_MORE_TRIAL") == 0;
}

int exp_insert(struct db *db, const struct experiment *x, struct errbuf *e)
{
    int own = !db->in_tx;
    if (own && db_begin(db, e) < 0)
        return -1;
    int rc = db_run(db, e,
        "INSERT INTO experiment(id, name, config, search_space, platform, status, exp_dir, port,"
        " bind_address, start_time, exec_duration_ms, max_trial_number, max_exec_seconds,"
        " max_trial_seconds, concurrency, seed, token, updated_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,0,NULLIF(?,0),NULLIF(?,0),NULLIF(?,0),?,?,?,?)",
        "sssssssdsiiiidisi",
        x->id, x->name, x->config, x->search_space, x->platform,
        x->status ? x->status : "INITIALIZED", x->exp_dir, x->port,
        x->bind_address ? x->bind_address : "127.0.0.1", x->start_time,
        x->max_trial_number, x->max_exec_seconds, x->max_trial_seconds,
        x->concurrency, x->seed, x->token, now_ms());
    /* a column of migration 011: set only when used (older schemas in tests lack it) */
    if (rc >= 0 && x->url_prefix && *x->url_prefix)
        rc = db_run(db, e, "UPDATE experiment SET url_prefix = ? WHERE id = ?", "ss", x->url_prefix, x->id);
    if (rc >= 0 && x->config_file)
        rc = db_run(db, e, "UPDATE experiment SET config_file = ? WHERE id = ?", "ss", x->config_file, x->id);
    if (rc < 0 || db_event(db, e, x->id, NULL, "experiment", NULL, x->status ? x->status : "INITIALIZED",
                           "created") < 0) {
        if (own)
            db_rollback(db);
        return -1;
    }
    return own ? db_commit(db, e) : 0;
}

#define EXP_COLUMNS                                                                       \
    "id, name, config, search_space, platform, status, desired_status, exp_dir,"           \
    " bind_address, errors, token, port, start_time, end_time, exec_duration_ms,"          \
    " max_trial_number, max_exec_seconds, max_trial_seconds, concurrency, seed,"           \
    " next_sequence, tuner_exhausted, api_pid, api_start, api_heartbeat, url_prefix, config_file, space_index_base"

int exp_load(struct db *db, const char *id, struct experiment *x, struct errbuf *e)
{
    memset(x, 0, sizeof *x);
    sqlite3_stmt *st = db_query(db, e, "SELECT " EXP_COLUMNS " FROM experiment WHERE id = ?", "s", id);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        sqlite3_reset(st);
        return 0;
    }
    if (rc != SQLITE_ROW) {
        errf(e, "load experiment %s: %s", id, sqlite3_errmsg(db->h));
        sqlite3_reset(st);
        return -1;
    }
    int i = 0;
    x->id = col_str(st, i++);
    x->name = col_str(st, i++);
    x->config = col_str(st, i++);
    x->search_space = col_str(st, i++);
    x->platform = col_str(st, i++);
    x->status = col_str(st, i++);
    x->desired_status = col_str(st, i++);
    x->exp_dir = col_str(st, i++);
    x->bind_address = col_str(st, i++);
    x->errors = col_str(st, i++);
    x->token = col_str(st, i++);
    x->port = (int)col_i64(st, i++);
    x->start_time = col_i64(st, i++);
    x->end_time = col_i64(st, i++);
    x->exec_duration_ms = col_i64(st, i++);
    x->max_trial_number = col_i64(st, i++);
    x->max_exec_seconds = col_i64(st, i++);
    x->max_trial_seconds = col_i64(st, i++);
    x->concurrency = (int)col_i64(st, i++);
    x->seed = col_i64(st, i++);
    x->next_sequence = col_i64(st, i++);
    x->tuner_exhausted = (int)col_i64(st, i++);
    x->api_pid = (int)col_i64(st, i++);
    x->api_start = col_i64(st, i++);
    x->api_heartbeat = col_i64(st, i++);
    x->url_prefix = col_str(st, i++);
    x->config_file = col_str(st, i++);
    x->space_index_base = col_i64(st, i++);
    sqlite3_reset(st);
    return 1;
}

void exp_clear(struct experiment *x)
{
    free(x->id); free(x->name); free(x->config); free(x->search_space); free(x->platform);
    free(x->status); free(x->desired_status); free(x->exp_dir); free(x->bind_address);
    free(x->errors); free(x->token); free(x->url_prefix);
    free(x->config_file);
    memset(x, 0, sizeof *x);
}

static int in_list(const char *s, const char *list)
{
    size_t n = strlen(s);
    for (const char *p = list; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && strncmp(p, s, n) == 0)
            return 1;
        if (!c)
            break;
        p = c + 1;
    }
    return 0;
}

int exp_transition(struct db *db, const char *id, const char *from, const char *to,
                   const char *reason, struct errbuf *e)
{
    int own = !db->in_tx;
    if (own && db_begin(db, e) < 0)
        return -1;
    char *cur = NULL;
    int found = db_text(db, e, &cur, "SELECT status FROM experiment WHERE id = ?", "s", id);
    int changed = 0;
    if (found < 0)
        goto fail;
    if (found == 0) {
        errf(e, "experiment %s does not exist", id);
        goto fail;
    }
    if ((!from || in_list(cur, from)) && strcmp(cur, to) != 0) {
        int final = strcmp(to, "DONE") == 0 || strcmp(to, "STOPPED") == 0 || strcmp(to, "ERROR") == 0;
        if (db_run(db, e,
                   "UPDATE experiment SET status = ?, updated_at = ?,"
                   " end_time = CASE WHEN ? THEN coalesce(end_time, ?) ELSE NULL END WHERE id = ?",
                   "sidis", to, now_ms(), final, now_ms(), id) < 0 ||
            db_event(db, e, id, NULL, "experiment", cur, to, reason) < 0)
            goto fail;
        changed = 1;
    }
    free(cur);
    if (own && db_commit(db, e) < 0)
        return -1;
    return changed;
fail:
    free(cur);
    if (own)
        db_rollback(db);
    return -1;
}

int exp_add_error(struct db *db, const char *id, const char *msg, struct errbuf *e)
{
    return db_run(db, e, "UPDATE experiment SET errors = json_insert(errors, '$[#]', ?), updated_at = ? WHERE id = ?",
                  "sis", msg, now_ms(), id) < 0 ? -1 : 0;
}

char *exp_resolve(struct db *db, const char *id, int running_only, struct errbuf *e)
{
    /* "running" = an api process is recorded and alive */
    sqlite3_stmt *st;
    char *found = NULL;
    int n = 0;
    if (!id || !*id) {
        st = db_query(db, e, "SELECT id, api_pid, api_start FROM experiment"
                             " WHERE api_pid IS NOT NULL ORDER BY start_time", "");
        if (!st)
            return NULL;
        struct strbuf list;
        sb_init(&list);
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (!proc_alive((pid_t)col_i64(st, 1), (uint64_t)col_i64(st, 2)))
                continue;
            n++;
            sb_printf(&list, "  %s\n", (const char *)sqlite3_column_text(st, 0));
            if (!found)
                found = col_str(st, 0);
        }
        sqlite3_reset(st);
        if (n == 1) {
            sb_free(&list);
            return found;
        }
        free(found);
        if (n == 0)
            errf(e, "There is no experiment running.");
        else
            errf(e, "Found %d running experiments, please set an experiment id:\n%s", n, list.buf);
        sb_free(&list);
        return NULL;
    }
    (void)running_only;
    /* a prefix, as typed: LIKE would take '_' and '%' for wildcards and ignore case */
    st = db_query(db, e, "SELECT id, (id = ?1) FROM experiment WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id",
                  "s", id);
    if (!st)
        return NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (sqlite3_column_int(st, 1)) { /* an exact match wins */
            free(found);
            found = col_str(st, 0);
            n = 1;
            break;
        }
        n++;
        if (!found)
            found = col_str(st, 0);
    }
    sqlite3_reset(st);
    if (n == 1)
        return found;
    free(found);
    if (n == 0)
        errf(e, "Id not correct: no experiment %s (nnictl experiment list --all shows them)", id);
    else
        errf(e, "Id %s is ambiguous: %d experiments start with it", id, n);
    return NULL;
}

int proc_register(struct db *db, const char *exp_id, const char *role, int pid, uint64_t pid_start,
                  int64_t *row_id, struct errbuf *e)
{
    if (db_run(db, e, "INSERT INTO process(experiment_id, role, host, pid, pid_start, started_at)"
                      " VALUES (?,?,?,?,?,?)",
               "sssdii", exp_id, role, host_name(), pid, (int64_t)pid_start, now_ms()) < 0)
        return -1;
    if (row_id)
        *row_id = sqlite3_last_insert_rowid(db->h);
    return 0;
}

int proc_ended(struct db *db, int64_t row_id, const char *exit_status, struct errbuf *e)
{
    return db_run(db, e, "UPDATE process SET ended_at = ?, exit_status = ? WHERE id = ? AND ended_at IS NULL",
                  "isi", now_ms(), exit_status, row_id) < 0 ? -1 : 0;
}

int proc_ended_pid(struct db *db, int pid, const char *exit_status, struct errbuf *e)
{
    return db_run(db, e, "UPDATE process SET ended_at = ?, exit_status = ? WHERE pid = ? AND host = ?"
                         " AND ended_at IS NULL",
                  "isds", now_ms(), exit_status, pid, host_name()) < 0 ? -1 : 0;
}
