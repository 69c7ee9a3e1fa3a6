/* trial.c: trial rows. State changes live in queue/ (guarded transitions). */
#include <stdlib.h>
#include <string.h>

#include "schema/schema.h"

int trials_submitted(struct db *db, const char *exp_id, int64_t next_sequence, int64_t *out, struct errbuf *e)
{
    int64_t withdrawn = 0;
    /* the trial_queue index: a range of the (few) SYS_CANCELED rows */
    if (db_int(db, e, &withdrawn, "SELECT count(*) FROM trial WHERE experiment_id = ? AND status = 'SYS_CANCELED'"
                                  " AND start_time IS NULL", "s", exp_id) < 0)
        return -1;
    *out = next_sequence - withdrawn;
    return 0;
}

void trial_from_row(sqlite3_stmt *st, struct trial *t)
{
    memset(t, 0, sizeof *t);
    int i = 0;
    t->id = col_str(st, i++);
    t->experiment_id = col_str(st, i++);
    t->parameters = col_str(st, i++);
    t->parameter_source = col_str(st, i++);
    t->status = col_str(st, i++);
    t->platform = col_str(st, i++);
    t->machine = col_str(st, i++);
    t->job_id = col_str(st, i++);
    t->lease_owner = col_str(st, i++);
    t->kill_request = col_str(st, i++);
    t->waiting_reason = col_str(st, i++);
    t->trial_dir = col_str(st, i++);
    t->message = col_str(st, i++);
    t->final_metric_json = col_str(st, i++);
    t->gpu_indices = col_str(st, i++);
    t->sequence = col_i64(st, i++);
    t->parameter_id = sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : col_i64(st, i);
    i++;
    t->attempt = (int)col_i64(st, i++);
    t->max_attempts = (int)col_i64(st, i++);
    t->lease_expires = col_i64(st, i++);
    t->submit_time = col_i64(st, i++);
    t->start_time = col_i64(st, i++);
    t->end_time = col_i64(st, i++);
    t->has_exit_code = sqlite3_column_type(st, i) != SQLITE_NULL;
    t->exit_code = (int)col_i64(st, i++);
    t->has_final_metric = sqlite3_column_type(st, i) != SQLITE_NULL;
    t->final_metric = sqlite3_column_double(st, i++);
    t->metrics_offset = col_i64(st, i++);
    t->stdout_offset = col_i64(st, i++);
    t->parameter_label = col_str(st, i++);
    t->url = col_str(st, i++);
}

int trial_set_url(struct db *db, const char *trial_id, const char *url, struct errbuf *e)
{
    return db_run(db, e, "UPDATE trial SET url = ? WHERE id = ? AND url IS NOT ?", "sss", url, trial_id, url) < 0
               ? -1
               : 0;
}

int trial_url(struct db *db, const char *id, char **url, struct errbuf *e)
{
    return db_text(db, e, url, "SELECT url FROM trial WHERE id = ?", "s", id);
}

int trial_load(struct db *db, const char *id, struct trial *t, struct errbuf *e)
{
    memset(t, 0, sizeof *t);
    sqlite3_stmt *st = db_query(db, e, "SELECT " TRIAL_COLUMNS " FROM trial WHERE id = ?", "s", id);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        trial_from_row(st, t);
    else if (rc != SQLITE_DONE)
        errf(e, "load trial %s: %s", id, sqlite3_errmsg(db->h));
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

char *trial_dir_path(const struct trial *t, const char *exp_dir)
{
    return t->trial_dir ? xstrdup(t->trial_dir) : trial_dir_default(exp_dir, t->id);
}

char *trial_dir_default(const char *exp_dir, const char *trial_id)
{
    return xasprintf("%s/trials/%s", exp_dir, trial_id);
}

void trial_clear(struct trial *t)
{
    free(t->id); free(t->experiment_id); free(t->parameters); free(t->parameter_source);
    free(t->status); free(t->platform); free(t->machine); free(t->job_id); free(t->lease_owner);
    free(t->kill_request); free(t->waiting_reason); free(t->trial_dir); free(t->message);
    free(t->final_metric_json); free(t->gpu_indices); free(t->parameter_label);
    free(t->url);
    memset(t, 0, sizeof *t);
}
