/* trial_new.c: WAITING trials added through the API (customized, rerun). */
#include <stdlib.h>
#include <string.h>

#include "schema/exp_ops.h"
#include "schema/trial_new.h"

/* The queued-ahead trial the new one may take the place of (trial_new.h): 1 found, 0 none. */
static int replace_queued(struct db *db, const struct trial_new *n, char id_out[6], int64_t *seq_out,
                          struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e,
        "SELECT id, sequence FROM trial WHERE experiment_id = ?1 AND status = 'WAITING' AND lease_owner IS NULL"
        " AND attempt = 1 AND start_time IS NULL AND parameter_source = 'algorithm' AND parameter_id ="
        " (SELECT max(parameter_id) FROM trial WHERE experiment_id = ?1 AND parameter_source = 'algorithm')"
        " ORDER BY sequence DESC LIMIT 1", "s", n->exp_id);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    char *id = rc == SQLITE_ROW ? col_str(st, 0) : NULL;
    int64_t seq = rc == SQLITE_ROW ? col_i64(st, 1) : 0;
    sqlite3_reset(st);
    if (rc != SQLITE_ROW)
        return rc == SQLITE_DONE ? 0 : errf(e, "queued trials: %s", sqlite3_errmsg(db->h));
    int64_t now = now_ms();
    char *why = xasprintf("%s; takes the place of a trial queued ahead that never started", n->reason);
    int up = db_run(db, e,
        "UPDATE trial SET parameters = ?, parameter_source = ?, parameter_id = NULLIF(?, -1), parameter_label = NULL,"
        " max_attempts = ?, submit_time = ?, updated_at = ?, waiting_reason = 'waiting for a worker to take it'"
        " WHERE id = ? AND status = 'WAITING' AND lease_owner IS NULL",
        "ssidiis", n->parameters, n->source, n->parameter_id < 0 ? (int64_t)-1 : n->parameter_id, n->max_attempts, now,
        now, id);
    int ok = up == 1 && db_event(db, e, n->exp_id, id, "trial", "WAITING", "WAITING", why) == 0;
    free(why);
    if (ok) {
        memcpy(id_out, id, 6);
        *seq_out = seq;
    }
    free(id);
    return up < 0 || (up == 1 && !ok) ? -1 : ok;
}

/* Inserts the trial with sequence seq under a free random id, its event, and takes the
 * sequence number: inside the caller's transaction. */
static int insert_trial(struct db *db, const struct trial_new *n, int64_t seq, char id_out[6], struct errbuf *e)
{
    int64_t now = now_ms();
    for (int tries = 0;; tries++) {
        char tid[6];
        gen_trial_id(tid);
        int ins = db_run(db, e,
            "INSERT OR IGNORE INTO trial(id, experiment_id, sequence, parameter_id, parameter_source,"
            " parameters, status, platform, max_attempts, submit_time, updated_at, waiting_reason, parameter_label)"
            " VALUES (?,?,?,NULLIF(?,-1),?,?,'WAITING',?,?,?,?,'waiting for a worker to take it',?)",
            "ssiisssdiis", tid, n->exp_id, seq, n->parameter_id < 0 ? (int64_t)-1 : n->parameter_id,
            n->source, n->parameters, n->platform, n->max_attempts, now, now, n->label);
        if (ins < 0)
            return -1;
        if (ins == 1) {
            memcpy(id_out, tid, 6);
            break;
        }
        if (tries > 20) /* 768M ids: only a broken random source gets here */
            return errf(e, "cannot find a free trial id");
    }
    if (db_event(db, e, n->exp_id, id_out, "trial", NULL, "WAITING", n->reason) < 0 ||
        db_run(db, e, "UPDATE experiment SET next_sequence = ? + 1, updated_at = ? WHERE id = ?", "iis", seq, now,
               n->exp_id) < 0)
        return -1;
    return 0;
}

/* BEGIN and the experiment's next sequence number; -1 (rolled back) when none. */
static int begin_with_sequence(struct db *db, const char *exp_id, int64_t *seq, struct errbuf *e)
{
    if (db_begin(db, e) < 0)
        return -1;
    int found = exp_next_sequence(db, exp_id, seq, e);
    if (found == 0)
        errf(e, "experiment %s does not exist", exp_id);
    if (found <= 0) {
        db_rollback(db);
        return -1;
    }
    return 0;
}

int trial_add(struct db *db, const struct trial_new *n, char id_out[6], int64_t *seq_out, struct errbuf *e)
{
    int64_t seq = 0;
    if (begin_with_sequence(db, n->exp_id, &seq, e) < 0)
        return -1;
    if (insert_trial(db, n, seq, id_out, e) < 0 || db_commit(db, e) < 0) {
        db_rollback(db);
        return -1;
    }
    *seq_out = seq;
    return 0;
}

int trial_enqueue(struct db *db, const struct trial_new *n, char id_out[6], int64_t *seq_out, int *replaced,
                  struct errbuf *e)
{
    *replaced = 0;
    int64_t max = 0, count = 0, seq = 0;
    if (begin_with_sequence(db, n->exp_id, &seq, e) < 0)
        return -1;
    if (db_int(db, e, &max, "SELECT coalesce(max_trial_number, 0) FROM experiment WHERE id = ?", "s", n->exp_id) < 0 ||
        trials_submitted(db, n->exp_id, seq, &count, e) < 0)
        goto fail;
    if (max > 0 && count >= max) {
        int r = replace_queued(db, n, id_out, seq_out, e);
        if (r == 1 && db_commit(db, e) == 0) {
            *replaced = 1;
            return 1;
        }
        db_rollback(db);
        return r == 0 ? 0 : -1;
    }
    if (insert_trial(db, n, seq, id_out, e) < 0 || db_commit(db, e) < 0)
        goto fail;
    *seq_out = seq;
    return 1;
fail:
    db_rollback(db);
    return -1;
}
