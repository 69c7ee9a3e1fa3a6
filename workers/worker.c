/* worker.c: the generic worker loop, written once for every platform:
 * claim WAITING trials -> submit -> RUNNING; poll jobs; collect metrics; honour kill
 * requests; renew leases; adopt trials of dead owners. All state is in the database;
 * this process can be killed at any instant and a new one continues.
 *
 * The loop paces every platform alike: each held trial has its own next poll (every
 * w->poll_ms, later after failed polls: worker_backoff_ms), and a kill request is sent
 * to the platform until the platform confirms it (again after a back-off) or the job is
 * seen ended. worker_main (workers/worker_main.c) runs worker_step whenever a signal or
 * worker_next_due wakes it. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/secrets.h"
#include "queue/worker_queue.h"
#include "workers/worker.h"

#define LEASE_MS 30000
#define COLLECT_EVERY_MS 200
#define POLL_EVERY_MS 250
#define KILLCHECK_EVERY_MS 300
#define ADOPT_EVERY_MS 2000
#define STATUS_EVERY_MS 1000
#define CLAIM_EVERY_MS 500
#define FAULT_RETRY_MS 1000 /* a submit that met a full disk, tried again */
#define REPORT_EVERY_MS 5000 /* the counts for GET /metrics: one small transaction */
#define KILL_POLL_MS 100     /* after a confirmed kill: look for the end soon */
#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 10000
#define LIST_BACKOFF_MAX_MS 5000 /* a failed listing (ops->poll_all) waits at most this */

const cJSON *worker_ts_config(const struct worker *w)
{
    /* trainingService is one object, or a list (hybrid): ours is the entry of our platform */
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(w->config, "trainingService");
    if (cJSON_IsArray(ts)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, ts) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, "platform");
            if (cJSON_IsString(p) && strcmp(p->valuestring, w->ops->name) == 0)
                return it;
        }
        return NULL;
    }
    return ts;
}

const cJSON *worker_config_item(const struct worker *w, const char *key)
{
    const cJSON *ts = worker_ts_config(w);
    const cJSON *v = ts ? cJSON_GetObjectItemCaseSensitive(ts, key) : NULL;
    return v && !cJSON_IsNull(v) ? v : cJSON_GetObjectItemCaseSensitive(w->config, key);
}

static struct worker_trial *held_find(struct worker *w, const char *id)
{
    for (int i = 0; i < w->ntrials; i++)
        if (strcmp(w->trials[i].t.id, id) == 0)
            return &w->trials[i];
    return NULL;
}

static struct worker_trial *held_add(struct worker *w, struct trial *t)
{
    if (w->ntrials == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 16;
        w->trials = xrealloc(w->trials, sizeof *w->trials * (size_t)w->cap);
    }
    struct worker_trial *wt = &w->trials[w->ntrials++];
    memset(wt, 0, sizeof *wt);
    wt->t = *t; /* takes ownership */
    return wt;
}

static void held_remove(struct worker *w, struct worker_trial *wt)
{
    trial_clear(&wt->t);
    *wt = w->trials[--w->ntrials];
}

/* Tells the api that a trial ended (so that it schedules the next one now). The api's
 * pid is read again every status tick, not per trial. */
static void notify_api(struct worker *w)
{
    if (w->api_pid > 0)
        kill(w->api_pid, SIGUSR1);
}

/* A call to the platform made (op: WSTAT_SUBMIT...), failed or not: for GET /metrics. */
static void count_call(struct worker *w, int op, int failed)
{
    w->counted.requests[op]++;
    w->counted.errors[op] += failed != 0;
}

/* The counts since the last report added to the platform's worker_stat rows; kept for
 * the next try when the database cannot take them now (a full disk). */
static void report_counts(struct worker *w)
{
    struct errbuf e;
    if (worker_stats_report(w->db, w->exp_id, w->ops->name, &w->counted, &e) < 0) {
        log_limited(LOG_WARN, "cannot report the worker's counts: %s", e.msg);
        return;
    }
    memset(&w->counted, 0, sizeof w->counted);
}

/* The experiment row as it is now: the api to wake (its pid, if it lives). 0 when the
 * experiment is gone, -1 when it cannot be read. */
static int refresh_experiment(struct worker *w)
{
    struct experiment x;
    struct errbuf e;
    int found = exp_load(w->db, w->exp_id, &x, &e);
    if (found < 0)
        log_limited(LOG_ERROR, "experiment %s: %s", w->exp_id, e.msg);
    if (found == 1)
        w->api_pid = x.api_pid > 0 && proc_alive((pid_t)x.api_pid, (uint64_t)x.api_start) ? (pid_t)x.api_pid : 0;
    exp_clear(&x);
    return found;
}

int64_t worker_backoff_ms(int64_t base, int failures)
{
    int64_t d = BACKOFF_MIN_MS;
    for (int i = 1; i < failures && d < BACKOFF_MAX_MS; i++)
        d *= 2;
    if (d > BACKOFF_MAX_MS)
        d = BACKOFF_MAX_MS;
    return d < base ? base : d;
}

/* How often this trial's job is polled: our own children report by SIGCHLD and are
 * polled rarely, as a safety net. */
static int poll_every(const struct worker *w, const struct worker_trial *wt)
{
    return wt->is_child ? POLL_EVERY_MS * 8 : w->poll_ms;
}

/* The n-th failure in a row of what (poll, kill) for a trial: said at the first and
 * every 10th, with the wait before the next try. */
static void note_failure(const struct worker_trial *wt, const char *what, int failures, int64_t wait_ms,
                         const char *why)
{
    if (failures == 1 || failures % 10 == 0) {
        char shown[SNIPPET_SIZE]; /* a service's answer may quote the trial's own output */
        log_warn("trial %s: %s failed (%s); retrying in %lld ms (failure %d)", wt->t.id, what,
                 snippet(shown, why, strlen(why)), (long long)wait_ms, failures);
    }
}

void job_why_disk_fault(struct job_state *js, int fault)
{
    const char *words = fault == ENOSPC || fault == EDQUOT ? "was full"
                        : fault == EROFS                   ? "was read-only"
                        : fault == EIO                     ? "failed (I/O error)"
                                                           : "failed";
    snprintf(js->why, sizeof js->why, "exit code %d; the disk of its trial directory %s while it ran", js->exit_code,
             words);
}

static const char *final_status(const struct job_state *js, const char *kill_request, char *msg, size_t msglen)
{
    msg[0] = '\0';
    /* a kill request names the end of a job it reached; one that ended by itself first
     * (exit 0 while no worker watched, and only then maxTrialDuration or a stop asked
     * to end it) keeps its own end. A platform that cannot tell: the request. */
    if (kill_request && (!js->stop_known || js->stopped))
        return kill_request;
    /* ended by the experiment's stop that the database could not take (nnictl stop on a
     * full disk; recorded by the next stop's drain or a resume): as that stop would have */
    if (js->stopped == JOB_STOPPED_EXPERIMENT)
        return "USER_CANCELED";
    if (js->signal) {
        snprintf(msg, msglen, "killed by signal %d%s", js->signal,
                 js->signal == SIGKILL ? " (out of memory?)" : "");
        return "FAILED";
    }
    if (js->exit_code == 0)
        return "SUCCEEDED";
    if (js->why[0])
        snprintf(msg, msglen, "%s", js->why); /* the platform's reason */
    else
        snprintf(msg, msglen, "exit code %d", js->exit_code);
    return "FAILED";
}

/* Records the end of a job that finished or vanished, inside the caller's transaction. */
static int record_end(struct worker *w, struct trial *t, const struct job_state *js, struct errbuf *e)
{
    char *kill_request = NULL;
    if (trial_kill_request(w->db, t->id, &kill_request, e) < 0)
        return -1;
    int rc;
    if (js->vanished) {
        const char *why = js->why[0] ? js->why : "its job vanished";
        rc = trial_requeue(w->db, t->id, w->owner, why, e);
        log_warn("trial %s: %s; requeued or failed per maxTrialRetries", t->id, why);
    } else {
        char msg[sizeof js->why];
        const char *to = final_status(js, kill_request, msg, sizeof msg);
        rc = trial_finish(w->db, t->id, w->owner, to, js->has_exit, js->exit_code, js->end_time,
                          msg[0] ? msg : NULL, e);
        log_debug("trial %s -> %s", t->id, to);
    }
    free(kill_request);
    return rc < 0 ? -1 : 0;
}

/* Collects the last metrics and records the end, in one transaction: the final metric
 * is stored before (never after) the trial is seen as ended. 1 when the trial is no
 * longer held (its slot holds another one now). */
static int finalize(struct worker *w, struct worker_trial *wt, const struct job_state *js)
{
    struct errbuf e;
    struct trial *t = &wt->t;
    /* what is not committed is read again next time (a full disk: the commit fails) */
    int64_t mo = t->metrics_offset, so = t->stdout_offset;
    if (db_begin(w->db, &e) < 0)
        goto fail;
    /* a job that ended has written all it will: its last stdout line is whole */
    if (w->ops->collect(w, t, js->finished, &e) < 0 ||
        trial_set_offsets(w->db, t->id, t->metrics_offset, t->stdout_offset, &e) < 0 ||
        record_end(w, t, js, &e) < 0 || db_commit(w->db, &e) < 0) {
        db_rollback(w->db);
        t->metrics_offset = mo;
        t->stdout_offset = so;
        goto fail;
    }
    if (js->finished && w->ops->ended)
        w->ops->ended(w, t); /* only after the commit: a trial still held is never left out */
    held_remove(w, wt);
    notify_api(w);
    w->wake = 1; /* a slot is free: claim a queued trial now, not on the next timer */
    return 1;
fail:
    /* keep holding it: the next pass retries (the state file stays) */
    log_limited(LOG_ERROR, "trial %s: cannot record its end: %s", t->id, e.msg);
    wt->next_poll_ms = mono_ms() + 500;
    return 0;
}

/* WAITING -> RUNNING: its job started (or, for a queued_start platform, left the queue). */
static void mark_running(struct worker *w, struct trial *t)
{
    struct errbuf e;
    if (strcmp(t->status, "WAITING") == 0) {
        const char *machine = w->ops->machine_of ? w->ops->machine_of(w, t) : NULL;
        int rc = trial_mark_running(w->db, t->id, w->owner, t->job_id, machine ? machine : host_name(),
                                    t->trial_dir, now_ms(), &e);
        if (rc < 0)
            log_error("trial %s: cannot record RUNNING: %s", t->id, e.msg);
    }
    free(t->status);
    t->status = xstrdup("RUNNING");
}

/* A queued_start platform's poll of a WAITING trial: still queued (its waiting_reason
 * follows the platform's), or started. */
static void queued_state(struct worker *w, struct trial *t, const struct job_state *js)
{
    struct errbuf e;
    if (!js->waiting) {
        mark_running(w, t);
        return;
    }
    if (!js->why[0] || (t->waiting_reason && strcmp(t->waiting_reason, js->why) == 0))
        return;
    if (trial_set_waiting_reason(w->db, t->id, w->owner, js->why, &e) < 0) {
        log_limited(LOG_ERROR, "trial %s: cannot record its waiting reason: %s", t->id, e.msg);
        return;
    }
    free(t->waiting_reason);
    t->waiting_reason = xstrdup(js->why);
}

/* Polls one job; 1 when the trial ended and is no longer held. */
static int poll_one(struct worker *w, struct worker_trial *wt, int64_t now)
{
    struct job_state js;
    struct errbuf e;
    memset(&js, 0, sizeof js);
    int polled = w->ops->poll(w, &wt->t, &js, &e);
    count_call(w, WSTAT_POLL, polled < 0);
    if (polled < 0) {
        int64_t wait = worker_backoff_ms(poll_every(w, wt), ++wt->poll_failures);
        wt->next_poll_ms = now + wait;
        note_failure(wt, "poll", wt->poll_failures, wait, e.msg);
        return 0;
    }
    wt->poll_failures = 0;
    if (w->ops->queued_start && strcmp(wt->t.status, "WAITING") == 0 && !js.vanished)
        queued_state(w, &wt->t, &js); /* a job that ended has run: RUNNING first */
    if (js.finished || js.vanished)
        return finalize(w, wt, &js);
    return 0;
}

/* The trial cannot run (submit refused it): FAILED with the platform's reason. */
static void fail_unstarted(struct worker *w, struct worker_trial *wt, const char *why)
{
    struct errbuf e;
    log_error("trial %s: cannot start: %s", wt->t.id, why);
    if (trial_finish(w->db, wt->t.id, w->owner, "FAILED", 0, 0, now_ms(), why, &e) < 0)
        log_error("trial %s: cannot record FAILED: %s; it is adopted again when its lease expires", wt->t.id,
                  e.msg);
    held_remove(w, wt);
    notify_api(w);
}

/* Starts (or re-attaches to) a held trial's job; 1 when the trial is no longer held. */
static int start_trial(struct worker *w, struct worker_trial *wt)
{
    struct errbuf e;
    char *job_id = NULL, *dir = NULL;
    struct trial *t = &wt->t;
    int how = w->ops->submit(w, t, &job_id, &dir, &e);
    count_call(w, WSTAT_SUBMIT, how < 0);
    /* the trial's files cannot be written (a full disk): it is not the trial's fault, and
     * it is not started now; it stays ours, WAITING, and is tried again */
    if (how == SUBMIT_FAULT) {
        fault_set("trial dirs", "trial directory: %s: free space on its filesystem (or remount it read-write, "
                                "check the disk); trials wait and trialq resumes by itself", e.msg);
        wt->submit_pending = 1;
        wt->next_poll_ms = mono_ms() + FAULT_RETRY_MS;
        return 0;
    }
    /* the platform's service did not answer: tried again after a back-off, meanwhile
     * WAITING with the reason (no other trial starts before it: may_start) */
    if (how == SUBMIT_RETRY) {
        wt->poll_failures++;
        log_limited(LOG_WARN, "trial %s: not submitted (try %d): %s", t->id, wt->poll_failures, e.msg);
        struct job_state js = {.waiting = 1};
        snprintf(js.why, sizeof js.why, "not submitted yet, retried: %.450s", e.msg);
        queued_state(w, t, &js);
        wt->submit_pending = 1;
        wt->next_poll_ms = mono_ms() + worker_backoff_ms(0, wt->poll_failures);
        return 0;
    }
    wt->submit_pending = 0;
    wt->poll_failures = 0;
    if (how >= 0 && fault_has("trial dirs"))
        fault_clear("trial dirs");
    if (how < 0) {
        fail_unstarted(w, wt, e.msg);
        return 1;
    }
    int is_new = how == SUBMIT_NEW && (!t->job_id || strcmp(job_id, t->job_id) != 0);
    wt->is_child = is_new && w->ops->reaped; /* only a platform with reaped() has children */
    free(t->job_id);
    t->job_id = job_id;
    free(t->trial_dir);
    t->trial_dir = dir;
    if (strcmp(t->status, "WAITING") == 0 && w->ops->queued_start) {
        /* it may wait in the platform's queue: RUNNING when a poll says it runs */
        if (trial_set_job(w->db, t->id, w->owner, job_id, dir, &e) < 0)
            log_error("trial %s: cannot record its job: %s", t->id, e.msg);
    } else {
        mark_running(w, t);
    }
    wt->next_poll_ms = mono_ms() + (is_new && wt->is_child ? POLL_EVERY_MS * 4 : 0);
    return 0;
}

/* True when a trial may start: no fault stands in the way of writing its state (the
 * database, its files). A trial that could not start for a fault is tried again first;
 * its success resolves the fault. */
static int may_start(struct worker *w)
{
    if (fault_has("database"))
        return 0;
    for (int i = 0; i < w->ntrials; i++)
        if (w->trials[i].submit_pending)
            return 0;
    return 1;
}

static int claim_one(struct worker *w, struct trial *t, struct errbuf *e)
{
    if (w->ops->claim)
        return w->ops->claim(w, t, e);
    if (w->ops->gpu_mode == PLATFORM_GPU_HOST)
        return queue_claim_host(w->db, w->exp_id, w->ops->name, w->owner, w->lease_ms, t, e);
    return queue_claim(w->db, w->exp_id, w->ops->name, w->owner, w->lease_ms, t, e);
}

/* The submission rate limit: may another trial be claimed (and its job submitted) at
 * now? A token bucket of w->submit_rate per second, one second's worth of burst. */
static int submit_allowed(struct worker *w, int64_t now)
{
    if (w->submit_rate <= 0)
        return 1;
    if (now > w->submit_refill) {
        w->submit_tokens += (double)(now - w->submit_refill) * w->submit_rate / 1000.0;
        double burst = w->submit_rate > 1 ? w->submit_rate : 1;
        if (w->submit_tokens > burst)
            w->submit_tokens = burst;
        w->submit_refill = now;
    }
    return w->submit_tokens >= 1.0;
}

static void claim_all(struct worker *w, int64_t now)
{
    if (!may_start(w))
        return;
    if (w->ops->refresh)
        w->ops->refresh(w);
    for (;;) {
        struct trial t;
        struct errbuf e;
        if (!submit_allowed(w, now))
            return; /* the next claim pass goes on */
        if (w->ops->can_claim && !w->ops->can_claim(w))
            return;
        if (!hybrid_may_claim(w)) /* hybrid: each platform's fair share first */
            return;
        int rc = claim_one(w, &t, &e);
        if (rc < 0) {
            log_limited(LOG_ERROR, "claim: %s", e.msg);
            return;
        }
        if (rc == 0)
            return;
        w->submit_tokens -= 1.0;
        start_trial(w, held_add(w, &t));
    }
}

static void adopt(struct worker *w)
{
    struct trial *list;
    int n;
    struct errbuf e;
    if (queue_adopt(w->db, w->exp_id, w->ops->name, w->owner, w->lease_ms, &list, &n, &e) < 0) {
        log_error("adopt: %s", e.msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        log_info("trial %s: adopted (%s)", list[i].id, list[i].status);
        struct worker_trial *wt = held_add(w, &list[i]);
        /* submit is idempotent: it re-attaches to a live job, or sees a finished one,
         * or starts the job a dead worker had claimed but not yet started */
        if (strcmp(wt->t.status, "WAITING") == 0)
            start_trial(w, wt);
        else
            wt->next_poll_ms = 0;
        /* a kill request it carries is sent by the next check_kills */
    }
    free(list);
}

/* Notes the kill requests of our trials: each is sent by the trial's next pass. */
static void check_kills(struct worker *w)
{
    struct errbuf e;
    struct kill_request *list;
    int n;
    if (queue_kill_requests(w->db, w->owner, &list, &n, &e) < 0) {
        log_limited(LOG_ERROR, "kill requests: %s", e.msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        struct worker_trial *wt = held_find(w, list[i].trial_id);
        if (!wt || wt->kill_wanted)
            continue;
        log_info("trial %s: killing on request", wt->t.id);
        wt->kill_wanted = 1;
        wt->next_kill_ms = 0;
        if (!wt->t.kill_request || strcmp(wt->t.kill_request, list[i].kind) != 0) {
            free(wt->t.kill_request);
            wt->t.kill_request = xstrdup(list[i].kind);
        }
    }
    kill_requests_free(list, n);
}

/* Sends a wanted kill: confirmed, the job's end is looked for soon; else tried again. */
static void send_kill(struct worker *w, struct worker_trial *wt, int64_t now)
{
    struct errbuf e;
    int killed = w->ops->kill(w, &wt->t, &e);
    count_call(w, WSTAT_KILL, killed != 0);
    if (killed == 0) {
        wt->kill_sent = 1;
        wt->kill_failures = 0;
        if (wt->next_poll_ms > now + KILL_POLL_MS)
            wt->next_poll_ms = now + KILL_POLL_MS;
        return;
    }
    int64_t wait = worker_backoff_ms(poll_every(w, wt), ++wt->kill_failures);
    wt->next_kill_ms = now + wait;
    note_failure(wt, "kill", wt->kill_failures, wait, e.msg);
}

/* The batched poll (ops->poll_all), before the trials' steps of a pass: when a held
 * trial's poll is due, the listing runs if its interval has passed, and then every held
 * trial is polled in this pass (from the listing); else the due polls wait for the next
 * listing. A listing that fails polls nothing: all trials wait for the next try, one
 * back-off for all. One refused for good ends the listings: each job is polled alone. */
static void list_jobs(struct worker *w, int64_t now)
{
    int due = 0;
    for (int i = 0; i < w->ntrials && !due; i++)
        due = !w->trials[i].submit_pending && w->trials[i].next_poll_ms <= now;
    if (!due)
        return;
    int64_t next = w->next.list;
    int all = 0;
    if (now >= next) {
        struct errbuf e;
        int rc = w->ops->poll_all(w, &e);
        count_call(w, WSTAT_LIST, rc < 0);
        if (rc == POLL_ALL_REFUSED) {
            char shown[SNIPPET_SIZE];
            log_warn("the service refuses to list the experiment's jobs (%s); each job is polled on its own "
                     "from now on", snippet(shown, e.msg, strlen(e.msg)));
            w->list_refused = 1;
            return; /* the due polls run in this pass, one by one */
        }
        if (rc == 0) {
            if (w->list_failures)
                log_info("the job listing answers again after %d failure(s)", w->list_failures);
            w->list_failures = 0;
            w->next.list = now + w->poll_ms;
            next = now;
            all = 1; /* every held trial now */
        } else {
            int64_t wait = worker_backoff_ms(w->poll_ms, ++w->list_failures);
            if (wait > LIST_BACKOFF_MAX_MS && w->poll_ms < LIST_BACKOFF_MAX_MS)
                wait = LIST_BACKOFF_MAX_MS; /* one request per 5 s is gentle, and all trials wait on it */
            if (w->list_failures == 1 || w->list_failures % 10 == 0) {
                char shown[SNIPPET_SIZE];
                log_warn("listing the experiment's jobs failed (%s); no job is polled; retrying in %lld ms "
                         "(failure %d)", snippet(shown, e.msg, strlen(e.msg)), (long long)wait, w->list_failures);
            }
            next = w->next.list = now + wait;
        }
    }
    for (int i = 0; i < w->ntrials; i++)
        if (!w->trials[i].submit_pending && (all || w->trials[i].next_poll_ms < next))
            w->trials[i].next_poll_ms = next;
}

/* A held trial's due work; 1 when it is no longer held. */
static int step_trial(struct worker *w, struct worker_trial *wt, int64_t now)
{
    if (wt->kill_wanted && !wt->kill_sent && wt->next_kill_ms <= now && !wt->submit_pending)
        send_kill(w, wt, now);
    if (wt->next_poll_ms > now)
        return 0;
    wt->next_poll_ms = now + poll_every(w, wt);
    return wt->submit_pending ? start_trial(w, wt) : poll_one(w, wt, now);
}

static void collect_running(struct worker *w)
{
    int any = 0;
    for (int i = 0; i < w->ntrials && !any; i++)
        any = w->ops->pending(w, &w->trials[i].t);
    if (!any)
        return;
    struct errbuf e;
    if (db_begin(w->db, &e) < 0)
        return;
    /* the offsets as committed: a transaction that fails (a full disk) leaves them, and
     * what it would have stored is read again next time */
    int64_t *off = xcalloc((size_t)w->ntrials * 2, sizeof *off);
    for (int i = 0; i < w->ntrials; i++) {
        off[2 * i] = w->trials[i].t.metrics_offset;
        off[2 * i + 1] = w->trials[i].t.stdout_offset;
    }
    int failed = 0;
    for (int i = 0; i < w->ntrials && !failed; i++) {
        struct trial *t = &w->trials[i].t;
        if (!w->ops->pending(w, t))
            continue;
        if (w->ops->collect(w, t, 0, &e) < 0 ||
            trial_set_offsets(w->db, t->id, t->metrics_offset, t->stdout_offset, &e) < 0) {
            log_limited(LOG_ERROR, "trial %s: collect: %s", t->id, e.msg);
            db_rollback(w->db);
            failed = 1;
        }
    }
    if (!failed && db_commit(w->db, &e) < 0) {
        log_limited(LOG_ERROR, "collect commit: %s", e.msg);
        failed = 1;
    }
    if (failed)
        for (int i = 0; i < w->ntrials; i++) {
            w->trials[i].t.metrics_offset = off[2 * i];
            w->trials[i].t.stdout_offset = off[2 * i + 1];
        }
    else
        notify_api(w); /* new intermediate results for the assessor */
    free(off);
}

void worker_reaped(struct worker *w, pid_t pid, int wstatus)
{
    const char *id = w->ops->reaped ? w->ops->reaped(w, pid, wstatus) : NULL;
    struct worker_trial *wt = id ? held_find(w, id) : NULL;
    if (wt) {
        wt->is_child = 0; /* a job that outlives it (local: the trial's leader) is polled */
        poll_one(w, wt, mono_ms());
    }
}

/* nnictl stop found trials without a live api: every started trial of this platform
 * is asked to end (hybrid: only this platform's; nnictl stop drains each platform). */
static void drain_begin(struct worker *w, int64_t now)
{
    struct errbuf e;
    char **ids;
    int n;
    w->drain_deadline = now + 25000;
    if (queue_started_ids(w->db, w->exp_id, w->ops->name, &ids, &n, &e) < 0)
        log_error("drain: %s", e.msg);
    int refused = 0;
    for (int i = 0; i < n; i++) {
        if (trial_request_kill(w->db, ids[i], "USER_CANCELED", "experiment stopped", &e) < 0) {
            log_error("trial %s: cannot ask it to end: %s", ids[i], e.msg);
            refused++;
        }
        free(ids[i]);
    }
    free(ids);
    /* no request could be written (a full disk): no end could be either; nnictl stop
     * ends the jobs from the platform's files at once (host_job) instead of waiting */
    if (n > 0 && refused == n)
        w->drain_deadline = now;
}

/* A drain ends when no started trial is left, or at its deadline (exit code 1). */
static void drain_check(struct worker *w, int64_t now)
{
    struct errbuf e;
    int64_t left = queue_started_count(w->db, w->exp_id, w->ops->name, &e);
    if (left == 0) {
        w->stop = 1;
    } else if (now >= w->drain_deadline) {
        log_error("drain: %lld trial(s) did not end", (long long)left);
        w->exit_code = 1;
        w->stop = 1;
    }
}

void worker_start(struct worker *w, int64_t now)
{
    if (w->drain)
        drain_begin(w, now);
    refresh_experiment(w);
    adopt(w);
    if (!w->drain)
        claim_all(w, now);
    w->next = (struct worker_timers){.collect = now + COLLECT_EVERY_MS, .kill = now,
                                     .renew = now + w->lease_ms / 3, .adopt = now + ADOPT_EVERY_MS,
                                     .status = now + STATUS_EVERY_MS, .claim = now + CLAIM_EVERY_MS,
                                     .report = now + REPORT_EVERY_MS};
}

int64_t worker_next_due(const struct worker *w)
{
    const struct worker_timers *n = &w->next;
    int64_t next = n->collect;
    int64_t all[] = {n->kill, n->renew, n->adopt, n->status, n->claim, n->report};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i] < next)
            next = all[i];
    for (int i = 0; i < w->ntrials; i++) {
        const struct worker_trial *wt = &w->trials[i];
        if (!wt->is_child && wt->next_poll_ms < next)
            next = wt->next_poll_ms;
        if (wt->kill_wanted && !wt->kill_sent && wt->next_kill_ms < next)
            next = wt->next_kill_ms;
    }
    return next;
}

/* The experiment row is read every STATUS_EVERY_MS: a deleted experiment ends us. */
static void check_experiment(struct worker *w)
{
    if (refresh_experiment(w) == 0) {
        log_info("experiment %s is gone; exiting", w->exp_id);
        w->stop = 1;
    }
}

void worker_step(struct worker *w, int64_t now)
{
    struct worker_timers *n = &w->next;
    /* how late this pass runs: its earliest task was due then (a wake-up comes early) */
    int64_t late = now - worker_next_due(w);
    if (late > w->counted.loop_lag_ms)
        w->counted.loop_lag_ms = late;
    if (w->wake || now >= n->kill) {
        check_kills(w);
        n->kill = now + KILLCHECK_EVERY_MS;
    }
    if (!w->drain && (w->wake || now >= n->claim)) {
        claim_all(w, now);
        n->claim = now + CLAIM_EVERY_MS;
        w->wake = 0;
    }
    if (w->ops->poll_all && !w->list_refused)
        list_jobs(w, now);
    for (int i = 0; i < w->ntrials; i++)
        if (step_trial(w, &w->trials[i], now))
            i--; /* the slot now holds another trial */
    if (now >= n->collect) {
        collect_running(w);
        n->collect = now + COLLECT_EVERY_MS;
    }
    if (now >= n->renew) {
        struct errbuf e;
        if (queue_renew(w->db, w->owner, w->lease_ms, &e) < 0)
            log_limited(LOG_ERROR, "renew: %s", e.msg);
        n->renew = now + w->lease_ms / 3;
    }
    if (now >= n->adopt) {
        adopt(w);
        n->adopt = now + ADOPT_EVERY_MS;
    }
    if (now >= n->status) {
        check_experiment(w);
        n->status = now + STATUS_EVERY_MS;
    }
    if (now >= n->report) {
        report_counts(w);
        n->report = now + REPORT_EVERY_MS;
    }
    if (w->drain)
        drain_check(w, now);
}

int worker_open(struct worker *w, const struct platform_ops *ops, const char *home, const char *exp_id,
                struct errbuf *e)
{
    memset(w, 0, sizeof *w);
    w->ops = ops;
    w->home = trialq_home(home);
    w->exp_id = xstrdup(exp_id);
    w->lease_ms = LEASE_MS;
    w->poll_ms = ops->poll_ms > 0 ? ops->poll_ms : POLL_EVERY_MS;
    w->owner = queue_owner_id();
    w->submit_rate = ops->submit_rate;
    const char *rate = getenv("TRIALQ_SUBMIT_RATE");
    if (rate && *rate) {
        char *end;
        double r = strtod(rate, &end);
        if (*end || !(r >= 0))
            log_warn("TRIALQ_SUBMIT_RATE=%s is not a number of submissions per second >= 0 (0: no limit); "
                     "using %d", rate, ops->submit_rate);
        else
            w->submit_rate = r;
    }
    w->submit_tokens = w->submit_rate > 1 ? w->submit_rate : 1;
    w->submit_refill = mono_ms();
    char *dbpath = trialq_db_path(w->home);
    int rc = db_open(dbpath, &w->db, e);
    free(dbpath);
    if (rc == 0) {
        int found = exp_load(w->db, exp_id, &w->exp, e);
        if (found == 0)
            errf(e, "experiment %s: not found", exp_id);
        else if (found < 0)
            errprefix(e, "experiment %s", exp_id);
        rc = found == 1 ? 0 : -1;
    }
    if (rc < 0) {
        worker_close(w);
        return -1;
    }
    /* the secrets back in place of their placeholders (common/secrets.h) */
    char *merged = secrets_merged_json(w->home, exp_id, w->exp.config, e);
    if (!merged) {
        worker_close(w);
        return -1;
    }
    w->config = cJSON_Parse(merged);
    memset(merged, 0, strlen(merged));
    free(merged);
    return 0;
}

void worker_close(struct worker *w)
{
    struct worker_report none = {{0}, {0}, 0};
    if (w->db && w->ops && memcmp(&w->counted, &none, sizeof none) != 0)
        report_counts(w); /* what it counted since its last report */
    if (w->platform)
        w->ops->destroy(w);
    for (int i = 0; i < w->ntrials; i++)
        trial_clear(&w->trials[i].t);
    free(w->trials);
    cJSON_Delete(w->config);
    exp_clear(&w->exp);
    db_close(w->db);
    free(w->owner);
    free(w->exp_id);
    free(w->home);
    memset(w, 0, sizeof *w);
}
