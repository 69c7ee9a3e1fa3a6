/* queue.c: claim, lease, renew, adopt, and the trial lifecycle transitions. */
#include "queue/queue.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/trial_status.h"

char *queue_owner_id(void)
{
    return xasprintf("%s:%d:%llu", host_name(), (int)getpid(),
                     (unsigned long long)proc_start_time(getpid()));
}

int queue_owner_dead(const char *owner)
{
    const char *c1 = strrchr(owner, ':');
    if (!c1)
        return 0;
    const char *c0 = c1 - 1;
    while (c0 > owner && *c0 != ':')
        c0--;
    if (c0 <= owner || *c0 != ':')
        return 0;
    size_t hlen = (size_t)(c0 - owner);
    if (hlen != strlen(host_name()) || strncmp(owner, host_name(), hlen) != 0)
        return 0; /* another host: only the lease expiry tells */
    pid_t pid = (pid_t)atoi(c0 + 1);
    uint64_t start = strtoull(c1 + 1, NULL, 10);
    return !proc_alive(pid, start);
}

/* Runs fn inside a transaction: the caller's if open, else its own. */
#define TX_BEGIN(db, e)                                    \
    int own_tx_ = !(db)->in_tx;                            \
    if (own_tx_ && db_begin((db), (e)) < 0)                \
        return -1;
#define TX_END_OK(db, e, rv)                               \
    do {                                                   \
        if (own_tx_ && db_commit((db), (e)) < 0)           \
            return -1;                                     \
        return (rv);                                       \
    } while (0)
/* TX_END_OK of a claim: a commit that fails (a full disk) claimed nothing, and the
 * trial read into OUT is freed */
#define TX_END_CLAIM(db, e, rv, out)                       \
    do {                                                   \
        if (own_tx_ && db_commit((db), (e)) < 0) {         \
            if ((rv) > 0)                                  \
                trial_clear(out);                          \
            return -1;                                     \
        }                                                  \
        return (rv);                                       \
    } while (0)
#define TX_FAIL(db)                                        \
    do {                                                   \
        if (own_tx_)                                       \
            db_rollback(db);                               \
        return -1;                                         \
    } while (0)

/* The next trial a worker of this platform may take, when trialConcurrency allows one
 * more: 1 with *id, 0 none, -1 error. */
static int next_claimable(struct db *db, const char *exp_id, const char *platform, char **id, struct errbuf *e)
{
    *id = NULL;
    return db_text(db, e, id,
        "SELECT id FROM trial WHERE experiment_id = ?1 AND status = 'WAITING'"
        /* a hybrid experiment's trials say 'hybrid' until a platform's worker takes one */
        " AND lease_owner IS NULL AND platform IN (?2, 'hybrid') AND kill_request IS NULL"
        /* trialConcurrency holds across every worker of the experiment: the api may
         * queue trials ahead, the claim is what starts them */
        " AND (SELECT count(*) FROM trial WHERE experiment_id = ?1 AND status IN " SQL_TRIAL_ACTIVE
        "      AND lease_owner IS NOT NULL) < (SELECT concurrency FROM experiment WHERE id = ?1)"
        /* no trial starts once a stop is asked for or under way: it would only be killed
         * again (and, started after the api's kill pass, outlive its grace period) */
        " AND (SELECT desired_status IS NULL AND status NOT IN ('STOPPING','STOPPED')"
        "      FROM experiment WHERE id = ?1)"
        " ORDER BY sequence LIMIT 1",
        "ss", exp_id, platform);
}

int queue_claim_on(struct db *db, const char *exp_id, const char *platform, const char *owner,
                   int64_t lease_ms, int64_t machine_id, const struct gpu_need *need, struct trial *out,
                   char *reason, size_t reason_size, struct errbuf *e)
{
    if (reason && reason_size)
        reason[0] = '\0';
    if (need && need->count <= 0)
        need = NULL;
    TX_BEGIN(db, e);
    char *id = NULL;
    char gpus[256] = "";
    int rc = next_claimable(db, exp_id, platform, &id, e);
    if (rc < 0)
        TX_FAIL(db);
    if (rc == 0)
        TX_END_OK(db, e, 0);
    if (need) {
        /* claims of trials that ended or went back to the queue hold nothing */
        if (gpu_release_stale(db, machine_id, e) < 0 ||
            (rc = gpu_pick(db, machine_id, need, gpus, sizeof gpus, reason, reason ? reason_size : 0, e)) < 0) {
            free(id);
            TX_FAIL(db);
        }
        if (rc == 0) {
            free(id);
            TX_END_OK(db, e, 0);
        }
    }
    int64_t now = now_ms();
    sqlite3_stmt *st = db_query(db, e,
        "UPDATE trial SET lease_owner = ?, lease_expires = ?, updated_at = ?, platform = ?, gpu_indices = ?"
        " WHERE id = ? AND status = 'WAITING' AND lease_owner IS NULL"
        " RETURNING " TRIAL_COLUMNS,
        "siisss", owner, now + lease_ms, now, platform, need ? gpus : NULL, id);
    if (!st) {
        free(id);
        TX_FAIL(db);
    }
    int got = 0;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        trial_from_row(st, out);
        got = 1;
        rc = sqlite3_step(st);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE || (got && need && gpu_claim_write(db, machine_id, need, gpus, id, e) < 0)) {
        if (rc != SQLITE_DONE)
            errf(e, "claim: %s", sqlite3_errmsg(db->h));
        if (got)
            trial_clear(out);
        free(id);
        TX_FAIL(db);
    }
    free(id);
    /* no event: a claim changes no status; the RUNNING event names the worker */
    TX_END_CLAIM(db, e, got, out);
}

int queue_set_waiting_reason(struct db *db, const char *exp_id, const char *platform, const char *reason,
                             struct errbuf *e)
{
    return db_run(db, e,
                  "UPDATE trial SET waiting_reason = ?1, updated_at = ?2 WHERE experiment_id = ?3"
                  " AND status = 'WAITING' AND lease_owner IS NULL AND platform IN (?4, 'hybrid')"
                  " AND waiting_reason IS NOT ?1",
                  "siss", reason, now_ms(), exp_id, platform);
}

/* host_gpus: the platform places trials on this host's GPUs, so the trials that need
 * them (trialGpuNumber > 0 in its trainingService entry) are claimed with them from this
 * host's machine row; the other platforms claim per machine (queue_claim_on) or hand
 * the GPU count to their cluster. */
static int claim(struct db *db, const char *exp_id, const char *platform, const char *owner, int64_t lease_ms,
                 int host_gpus, struct trial *out, struct errbuf *e)
{
    TX_BEGIN(db, e);
    struct gpu_need need;
    memset(&need, 0, sizeof need);
    int64_t machine_id = 0;
    if (host_gpus) {
        char *config = NULL, *id = NULL;
        int any = next_claimable(db, exp_id, platform, &id, e);
        free(id);
        if (any < 0)
            TX_FAIL(db);
        if (any == 0)
            TX_END_OK(db, e, 0); /* the common idle case: no config to read */
        /* only the keys GPU scheduling reads, not the whole config (search space) */
        if (db_text(db, e, &config,
                    "SELECT json_object('trainingService', json(json_extract(config, '$.trainingService')),"
                    " 'trialGpuNumber', json_extract(config, '$.trialGpuNumber'))"
                    " FROM experiment WHERE id = ?", "s", exp_id) < 0)
            TX_FAIL(db);
        gpu_need_from_config(config, platform, &need);
        free(config);
        if (need.count > 0 && machine_ensure(db, platform, host_name(), 0, NULL, &machine_id, e) < 0)
            TX_FAIL(db);
    }
    char reason[512];
    int rc = queue_claim_on(db, exp_id, platform, owner, lease_ms, machine_id, &need, out, reason,
                            sizeof reason, e);
    if (rc < 0 || (rc == 0 && reason[0] && queue_set_waiting_reason(db, exp_id, platform, reason, e) < 0))
        TX_FAIL(db);
    TX_END_CLAIM(db, e, rc, out);
}

int queue_claim(struct db *db, const char *exp_id, const char *platform, const char *owner,
                int64_t lease_ms, struct trial *out, struct errbuf *e)
{
    return claim(db, exp_id, platform, owner, lease_ms, 0, out, e);
}

int queue_claim_host(struct db *db, const char *exp_id, const char *platform, const char *owner,
                     int64_t lease_ms, struct trial *out, struct errbuf *e)
{
    return claim(db, exp_id, platform, owner, lease_ms, 1, out, e);
}

int queue_renew(struct db *db, const char *owner, int64_t lease_ms, struct errbuf *e)
{
    return db_run(db, e, "UPDATE trial SET lease_expires = ? WHERE lease_owner = ?", "is",
                  now_ms() + lease_ms, owner);
}

int queue_adopt(struct db *db, const char *exp_id, const char *platform, const char *owner,
                int64_t lease_ms, struct trial **out, int *n, struct errbuf *e)
{
    *out = NULL;
    *n = 0;
    TX_BEGIN(db, e);
    int64_t now = now_ms();
    sqlite3_stmt *st = db_query(db, e,
        "SELECT " TRIAL_COLUMNS " FROM trial WHERE experiment_id = ? AND platform = ?"
        " AND lease_owner IS NOT NULL AND lease_owner != ?"
        " AND status IN " SQL_TRIAL_ACTIVE,
        "sss", exp_id, platform, owner);
    if (!st)
        TX_FAIL(db);
    int cap = 0;
    struct trial *list = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct trial t;
        trial_from_row(st, &t);
        if (t.lease_expires >= now && !queue_owner_dead(t.lease_owner)) {
            trial_clear(&t);
            continue;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            list = xrealloc(list, sizeof *list * (size_t)cap);
        }
        list[(*n)++] = t;
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        errf(e, "adopt: %s", sqlite3_errmsg(db->h));
        goto fail;
    }
    for (int i = 0; i < *n; i++) {
        char *reason = xasprintf("adopted from %s", list[i].lease_owner);
        int ok = db_run(db, e, "UPDATE trial SET lease_owner = ?, lease_expires = ?, updated_at = ?"
                               " WHERE id = ? AND lease_owner = ?",
                        "siiss", owner, now + lease_ms, now, list[i].id, list[i].lease_owner) >= 0 &&
                 db_event(db, e, exp_id, list[i].id, "trial", list[i].status, list[i].status, reason) >= 0;
        free(reason);
        if (!ok)
            goto fail;
        free(list[i].lease_owner);
        list[i].lease_owner = xstrdup(owner);
    }
    *out = list;
    TX_END_OK(db, e, 0);
fail:
    for (int i = 0; i < *n; i++)
        trial_clear(&list[i]);
    free(list);
    *n = 0;
    TX_FAIL(db);
}

int queue_release(struct db *db, const char *trial_id, const char *owner, struct errbuf *e)
{
    TX_BEGIN(db, e);
    int rc = db_run(db, e, "UPDATE trial SET lease_owner = NULL, lease_expires = NULL, updated_at = ?"
                           " WHERE id = ? AND lease_owner = ?",
                    "iss", now_ms(), trial_id, owner);
    /* a trial back in the queue holds no GPU: the next claim picks its GPUs again */
    if (rc < 0 || (rc == 1 && gpu_release_trial(db, trial_id, e) < 0))
        TX_FAIL(db);
    TX_END_OK(db, e, 0);
}

/* Looks up the current status and experiment of a trial (inside the transaction). */
static int current(struct db *db, const char *trial_id, char **status, char **exp_id, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT status, experiment_id FROM trial WHERE id = ?", "s", trial_id);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *status = col_str(st, 0);
        *exp_id = col_str(st, 1);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    return errf(e, "trial %s: %s", trial_id, sqlite3_errmsg(db->h));
}

int trial_mark_running(struct db *db, const char *trial_id, const char *owner, const char *job_id,
                       const char *machine, const char *trial_dir, int64_t start_time,
                       struct errbuf *e)
{
    TX_BEGIN(db, e);
    char *exp = NULL, *status = NULL;
    int rc = db_run(db, e,
        "UPDATE trial SET status = 'RUNNING', job_id = ?, machine = ?, trial_dir = coalesce(?, trial_dir),"
        " start_time = ?, waiting_reason = NULL, updated_at = ?"
        " WHERE id = ? AND status = 'WAITING' AND lease_owner = ?",
        "sssiiss", job_id, machine, trial_dir, start_time, now_ms(), trial_id, owner);
    if (rc < 0)
        TX_FAIL(db);
    if (rc == 1) {
        if (current(db, trial_id, &status, &exp, e) < 0 ||
            db_event(db, e, exp, trial_id, "trial", "WAITING", "RUNNING", job_id) < 0) {
            free(exp); free(status);
            TX_FAIL(db);
        }
    }
    free(exp); free(status);
    TX_END_OK(db, e, rc);
}

int trial_set_job(struct db *db, const char *trial_id, const char *owner, const char *job_id,
                  const char *trial_dir, struct errbuf *e)
{
    return db_run(db, e, "UPDATE trial SET job_id = ?, trial_dir = ?, updated_at = ?"
                         " WHERE id = ? AND lease_owner = ? AND status = 'WAITING'",
                  "ssiss", job_id, trial_dir, now_ms(), trial_id, owner);
}

int trial_set_waiting_reason(struct db *db, const char *trial_id, const char *owner, const char *reason,
                             struct errbuf *e)
{
    return db_run(db, e, "UPDATE trial SET waiting_reason = ?, updated_at = ?"
                         " WHERE id = ? AND lease_owner = ? AND status = 'WAITING' AND waiting_reason IS NOT ?",
                  "sisss", reason, now_ms(), trial_id, owner, reason);
}

int trial_finish(struct db *db, const char *trial_id, const char *owner, const char *to,
                 int has_exit, int exit_code, int64_t end_time, const char *message,
                 struct errbuf *e)
{
    TX_BEGIN(db, e);
    char *exp = NULL, *from = NULL;
    int found = current(db, trial_id, &from, &exp, e);
    if (found < 0)
        TX_FAIL(db);
    int changed = 0;
    if (found && !trial_status_final(from)) {
        int rc = db_run(db, e,
            "UPDATE trial SET status = ?, exit_code = CASE WHEN ? THEN ? END, end_time = ?,"
            " message = coalesce(?, message), lease_owner = NULL, lease_expires = NULL, updated_at = ?"
            " WHERE id = ? AND status IN " SQL_TRIAL_ACTIVE " AND (? IS NULL OR lease_owner = ?)",
            "sddisisss", to, has_exit, exit_code, end_time, message, now_ms(), trial_id, owner, owner);
        if (rc < 0 || (rc == 1 && db_event(db, e, exp, trial_id, "trial", from, to, message) < 0)) {
            free(exp); free(from);
            TX_FAIL(db);
        }
        /* a finished trial holds no GPU */
        if (rc == 1 && db_run(db, e, "DELETE FROM gpu_claim WHERE trial_id = ?", "s", trial_id) < 0) {
            free(exp); free(from);
            TX_FAIL(db);
        }
        changed = rc;
    }
    free(exp); free(from);
    TX_END_OK(db, e, changed);
}

/* what trial_requeue and trial_request_kill pass to their step */
struct live_args {
    const char *who, *reason; /* who: the lease owner (requeue), the status asked (kill) */
};

/* In one transaction (or the caller's): loads the trial and, when it exists and has not
 * ended, runs step on it. Returns step's answer (1: changed, 0: not; -1: error, rolled
 * back), 0 when the trial is missing or has ended. */
static int on_live_trial(struct db *db, const char *trial_id,
                         int (*step)(struct db *, const struct trial *, const struct live_args *, struct errbuf *),
                         const struct live_args *args, struct errbuf *e)
{
    TX_BEGIN(db, e);
    struct trial t;
    int found = trial_load(db, trial_id, &t, e);
    if (found < 0)
        TX_FAIL(db);
    int changed = found && !trial_status_final(t.status) ? step(db, &t, args, e) : 0;
    trial_clear(&t);
    if (changed < 0)
        TX_FAIL(db);
    TX_END_OK(db, e, changed);
}

static int requeue_step(struct db *db, const struct trial *t, const struct live_args *a, struct errbuf *e)
{
    const char *owner = a->who;
    if (!t->lease_owner || strcmp(t->lease_owner, owner) != 0)
        return 0;
    if (t->attempt >= t->max_attempts || t->kill_request)
        return trial_finish(db, t->id, owner, t->kill_request ? t->kill_request : "FAILED", 0, 0, now_ms(),
                            a->reason, e);
    char *why = xasprintf("%s; retry as attempt %d", a->reason, t->attempt + 1);
    int changed = db_run(db, e,
        "UPDATE trial SET status = 'WAITING', attempt = attempt + 1, job_id = NULL,"
        /* hybrid: the retry may run on any listed platform again */
        " platform = CASE WHEN (SELECT platform FROM experiment WHERE id = trial.experiment_id)"
        "            = 'hybrid' THEN 'hybrid' ELSE platform END,"
        " lease_owner = NULL, lease_expires = NULL, start_time = NULL,"
        " metrics_offset = 0, stdout_offset = 0, message = ?, updated_at = ?,"
        /* the retry's own FINAL is its result, not one the vanished attempt sent */
        " final_metric = NULL, final_metric_json = NULL"
        " WHERE id = ? AND lease_owner = ?",
        "siss", why, now_ms(), t->id, owner);
    if (changed < 0 || db_event(db, e, t->experiment_id, t->id, "trial", t->status, "WAITING", why) < 0)
        changed = -1;
    free(why);
    /* the next attempt gets its GPUs when it is claimed again */
    if (changed >= 0 && gpu_release_trial(db, t->id, e) < 0)
        changed = -1;
    return changed;
}

int trial_requeue(struct db *db, const char *trial_id, const char *owner, const char *reason,
                  struct errbuf *e)
{
    const struct live_args a = {owner, reason};
    return on_live_trial(db, trial_id, requeue_step, &a, e);
}

static int kill_step(struct db *db, const struct trial *t, const struct live_args *a, struct errbuf *e)
{
    if (strcmp(t->status, "WAITING") == 0 && !t->lease_owner)
        return trial_finish(db, t->id, NULL, a->who, 0, 0, now_ms(), a->reason, e);
    if (t->kill_request)
        return 0;
    int changed = db_run(db, e, "UPDATE trial SET kill_request = ?, updated_at = ? WHERE id = ?", "sis", a->who,
                         now_ms(), t->id);
    if (changed == 1)
        changed = db_event(db, e, t->experiment_id, t->id, "trial", t->status, t->status,
                           a->reason ? a->reason : "kill requested") < 0 ? -1 : 1;
    return changed;
}

int trial_request_kill(struct db *db, const char *trial_id, const char *kind, const char *reason,
                       struct errbuf *e)
{
    const struct live_args a = {kind, reason};
    return on_live_trial(db, trial_id, kill_step, &a, e);
}

int trial_set_offsets(struct db *db, const char *trial_id, int64_t metrics_off, int64_t stdout_off,
                      struct errbuf *e)
{
    return db_run(db, e, "UPDATE trial SET metrics_offset = ?, stdout_offset = ? WHERE id = ?",
                  "iis", metrics_off, stdout_off, trial_id) < 0 ? -1 : 0;
}
