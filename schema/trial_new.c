/* trial_new.c: WAITING trials added through the API (customized, rerun). */
#include <string.h>

#include "schema/trial_new.h"

int trial_enqueue(struct db *db, const struct trial_new *n, char id_out[6], int64_t *seq_out, struct errbuf *e)
{
    if (db_begin(db, e) < 0)
        return -1;
    int64_t max = 0, count = 0, seq = 0;
    int found = db_int(db, e, &seq, "SELECT next_sequence FROM experiment WHERE id = ?", "s", n->exp_id);
    if (found == 0)
        errf(e, "experiment %s does not exist", n->exp_id);
    if (found <= 0 ||
        db_int(db, e, &max, "SELECT coalesce(max_trial_number, 0) FROM experiment WHERE id = ?", "s", n->exp_id) < 0 ||
        db_int(db, e, &count, "SELECT count(*) FROM trial WHERE experiment_id = ?", "s", n->exp_id) < 0)
        goto fail;
    if (max > 0 && count >= max) {
        db_rollback(db);
        return 0;
    }
    int64_t now = now_ms();
    for (int tries = 0;; tries++) {
        char tid[6];
        gen_trial_id(tid);
        int ins = db_run(db, e,
            "INSERT OR IGNORE INTO trial(id, experiment_id, sequence, parameter_id, parameter_source,"
            " parameters, status, platform, max_attempts, submit_time, updated_at, waiting_reason)"
            " VALUES (?,?,?,NULLIF(?,-1),?,?,'WAITING',?,?,?,?,'waiting for a worker to take it')",
            "ssiisssdii", tid, n->exp_id, seq, n->parameter_id < 0 ? (int64_t)-1 : n->parameter_id,
            n->source, n->parameters, n->platform, n->max_attempts, now, now);
        if (ins < 0)
            goto fail;
        if (ins == 1) {
            memcpy(id_out, tid, 6);
            break;
        }
        if (tries > 20) { /* 768M ids: only a broken random source gets here */
            errf(e, "cannot find a free trial id");
            goto fail;
        }
    }
    if (db_event(db, e, n->exp_id, id_out, "trial", NULL, "WAITING", n->reason) < 0 ||
        db_run(db, e, "UPDATE experiment SET next_sequence = ? + 1, updated_at = ? WHERE id = ?", "iis", seq, now,
               n->exp_id) < 0 ||
        db_commit(db, e) < 0)
        goto fail;
    *seq_out = seq;
    return 1;
fail:
    db_rollback(db);
    return -1;
}
