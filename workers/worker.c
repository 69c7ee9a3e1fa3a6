/* worker.c: the generic worker loop, written once for every platform:
 * claim WAITING trials -> submit -> RUNNING; poll jobs; collect metrics; honour kill
 * requests; renew leases; adopt trials of dead owners. All state is in the database;
 * this process can be killed at any instant and a new one continues. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "workers/worker.h"

#define LEASE_MS 30000
#define COLLECT_EVERY_MS 200
#define POLL_EVERY_MS 250
#define KILLCHECK_EVERY_MS 300
#define ADOPT_EVERY_MS 2000
#define STATUS_EVERY_MS 1000
#define CLAIM_EVERY_MS 500
#define FAULT_RETRY_MS 1000 /* a submit that met a full disk, tried again */

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

static void refresh_api_pid(struct worker *w)
{
    int64_t pid = 0, start = 0;
    w->api_pid = 0;
    if (db_int(w->db, NULL, &pid, "SELECT api_pid FROM experiment WHERE id = ?", "s", w->exp_id) == 1 &&
        db_int(w->db, NULL, &start, "SELECT api_start FROM experiment WHERE id = ?", "s", w->exp_id) == 1 &&
        pid > 0 && proc_alive((pid_t)pid, (uint64_t)start))
        w->api_pid = (pid_t)pid;
}

static const char *final_status(const struct job_state *js, const char *kill_request, char *msg, size_t msglen)
{
    msg[0] = '\0';
    /* a kill request names the end of a job it reached; one that ended by itself first
     * (exit 0 while no worker watched, and only then maxTrialDuration or a stop asked
     * to end it) keeps its own end. A platform that cannot tell: the request. */
    if (kill_request && (!js->stop_known || js->stopped))
        return kill_request;
    if (js->signal) {
        snprintf(msg, msglen, "killed by signal %d%s", js->signal,
                 js->signal == SIGKILL ? " (out of memory?)" : "");
        return "FAILED";
    }
    if (js->exit_code == 0)
        return "SUCCEEDED";
    snprintf(msg, msglen, "exit code %d", js->exit_code);
    return "FAILED";
}

/* Collects the last metrics and records the end, in one transaction: the final metric
 * is stored before (never after) the trial is seen as ended. */
static void finalize(struct worker *w, struct worker_trial *wt, const struct job_state *js)
{
    struct errbuf e;
    struct trial *t = &wt->t;
    /* what is not committed is read again next time (a full disk: the commit fails) */
    int64_t mo = t->metrics_offset, so = t->stdout_offset;
    if (db_begin(w->db, &e) < 0)
        goto fail;
    /* a job that ended has written all it will: its last stdout line is whole */
    if (w->ops->collect(w, t, js->finished, &e) < 0 ||
        trial_set_offsets(w->db, t->id, t->metrics_offset, t->stdout_offset, &e) < 0)
        goto fail_tx;
    char *kill_request = NULL;
    if (db_text(w->db, &e, &kill_request, "SELECT kill_request FROM trial WHERE id = ?", "s", t->id) < 0)
        goto fail_tx;
    int rc;
    if (js->vanished) {
        const char *why = js->why[0] ? js->why : "its job vanished";
        rc = trial_requeue(w->db, t->id, w->owner, why, &e);
        log_warn("trial %s: %s; requeued or failed per maxTrialRetries", t->id, why);
    } else {
        char msg[128];
        const char *to = final_status(js, kill_request, msg, sizeof msg);
        rc = trial_finish(w->db, t->id, w->owner, to, js->has_exit, js->exit_code, js->end_time,
                          msg[0] ? msg : NULL, &e);
        log_debug("trial %s -> %s", t->id, to);
    }
    free(kill_request);
    if (rc < 0 || db_commit(w->db, &e) < 0)
        goto fail_tx;
    held_remove(w, wt);
    notify_api(w);
    w->wake = 1; /* a slot is free: claim a queued trial now, not on the next timer */
    return;
fail_tx:
    db_rollback(w->db);
    t->metrics_offset = mo;
    t->stdout_offset = so;
fail:
    /* keep holding it: the next pass retries (the state file stays) */
    log_limited(LOG_ERROR, "trial %s: cannot record its end: %s", t->id, e.msg);
    wt->next_poll_ms = mono_ms() + 500;
}

static void poll_one(struct worker *w, struct worker_trial *wt)
{
    struct job_state js;
    struct errbuf e;
    if (w->ops->poll(w, &wt->t, &js, &e) < 0) {
        log_warn("trial %s: poll failed: %s", wt->t.id, e.msg);
        return;
    }
    if (js.finished || js.vanished)
        finalize(w, wt, &js);
}

static void start_trial(struct worker *w, struct worker_trial *wt)
{
    struct errbuf e;
    char *job_id = NULL, *dir = NULL;
    struct trial *t = &wt->t;
    int how = w->ops->submit(w, t, &job_id, &dir, &e);
    /* the trial's files cannot be written (a full disk): it is not the trial's fault, and
     * it is not started now; it stays ours, WAITING, and is tried again */
    if (how == SUBMIT_FAULT) {
        fault_set("trial dirs", "trial directory: %s: free space on its filesystem (or remount it read-write, "
                                "check the disk); trials wait and trialq resumes by itself", e.msg);
        wt->submit_pending = 1;
        wt->next_poll_ms = mono_ms() + FAULT_RETRY_MS;
        return;
    }
    wt->submit_pending = 0;
    if (how >= 0 && fault_has("trial dirs"))
        fault_clear("trial dirs");
    if (how < 0) {
        log_error("trial %s: cannot start: %s", t->id, e.msg);
        trial_finish(w->db, t->id, w->owner, "FAILED", 0, 0, now_ms(), e.msg, NULL);
        held_remove(w, wt);
        notify_api(w);
        return;
    }
    int is_new = how == SUBMIT_NEW && (!t->job_id || strcmp(job_id, t->job_id) != 0);
    wt->is_child = is_new && w->ops->reaped; /* only a platform with reaped() has children */
    if (strcmp(t->status, "WAITING") == 0) {
        const char *machine = w->ops->machine_of ? w->ops->machine_of(w, t) : NULL;
        int rc = trial_mark_running(w->db, t->id, w->owner, job_id, machine ? machine : host_name(), dir,
                                    now_ms(), &e);
        if (rc < 0)
            log_error("trial %s: cannot record RUNNING: %s", t->id, e.msg);
    }
    free(t->job_id);
    t->job_id = job_id;
    free(t->trial_dir);
    t->trial_dir = dir;
    free(t->status);
    t->status = xstrdup("RUNNING");
    wt->next_poll_ms = mono_ms() + (is_new && wt->is_child ? POLL_EVERY_MS * 4 : 0);
}

static int poll_every(const struct worker *w, const struct worker_trial *wt)
{
    if (wt->is_child)
        return POLL_EVERY_MS * 8;
    return w->ops->poll_ms > 0 ? w->ops->poll_ms : POLL_EVERY_MS;
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

static void claim_all(struct worker *w)
{
    if (!may_start(w))
        return;
    if (w->ops->refresh)
        w->ops->refresh(w);
    for (;;) {
        struct trial t;
        struct errbuf e;
        if (w->ops->can_claim && !w->ops->can_claim(w))
            return;
        if (!hybrid_may_claim(w)) /* hybrid: each platform's fair share first */
            return;
        int rc = w->ops->claim                          ? w->ops->claim(w, &t, &e)
                 : w->ops->gpu_mode == PLATFORM_GPU_HOST ? queue_claim_host(w->db, w->exp_id, w->ops->name, w->owner,
                                                                            w->lease_ms, &t, &e)
                                                         : queue_claim(w->db, w->exp_id, w->ops->name, w->owner,
                                                                       w->lease_ms, &t, &e);
        if (rc < 0) {
            log_limited(LOG_ERROR, "claim: %s", e.msg);
            return;
        }
        if (rc == 0)
            return;
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
    }
    free(list);
}

static void check_kills(struct worker *w)
{
    struct errbuf e;
    sqlite3_stmt *st = db_query(w->db, &e, "SELECT id FROM trial WHERE lease_owner = ? AND kill_request IS NOT NULL",
                                "s", w->owner);
    if (!st)
        return;
    char *ids[256];
    int n = 0;
    while (n < 256 && sqlite3_step(st) == SQLITE_ROW)
        ids[n++] = col_str(st, 0);
    sqlite3_reset(st);
    for (int i = 0; i < n; i++) {
        struct worker_trial *wt = held_find(w, ids[i]);
        if (wt && !wt->kill_sent) {
            log_info("trial %s: killing on request", ids[i]);
            if (w->ops->kill(w, &wt->t, &e) < 0)
                log_warn("trial %s: kill failed: %s", ids[i], e.msg);
            wt->kill_sent = 1;
            wt->next_poll_ms = mono_ms() + 100;
        }
        free(ids[i]);
    }
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

static void reap(struct worker *w)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        const char *id = w->ops->reaped ? w->ops->reaped(w, pid, status) : NULL;
        struct worker_trial *wt = id ? held_find(w, id) : NULL;
        if (wt) {
            wt->is_child = 0; /* a job that outlives it (local: the trial's leader) is polled */
            poll_one(w, wt);
        }
    }
}

static void usage(void)
{
    char names[256];
    fprintf(stderr, "usage: trialq worker --platform %s --experiment ID [--home DIR] [--log-level L]\n",
            platform_names(names, sizeof names, "|"));
}

int worker_main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"platform", required_argument, NULL, 'p'},
        {"experiment", required_argument, NULL, 'e'},
        {"home", required_argument, NULL, 'H'},
        {"log-level", required_argument, NULL, 'l'},
        {"parent-death", no_argument, NULL, 'D'},
        {"drain", no_argument, NULL, 'X'},
        {"cleanup", no_argument, NULL, 'C'},
        {NULL, 0, NULL, 0},
    };
    const char *platform = platform_all[0]->name, *exp_id = NULL, *home_opt = NULL;
    int parent_death = 0, drain = 0, cleanup = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:e:H:l:DXC", opts, NULL)) != -1) {
        switch (c) {
        case 'p': platform = optarg; break;
        case 'e': exp_id = optarg; break;
        case 'H': home_opt = optarg; break;
        case 'l': {
            enum log_level lvl;
            if (log_level_parse(optarg, &lvl) == 0)
                log_set_level(lvl);
            break;
        }
        case 'D': parent_death = 1; break;
        case 'X': drain = 1; break;
        case 'C': cleanup = 1; break;
        default: usage(); return 2;
        }
    }
    if (!exp_id) {
        usage();
        return 2;
    }
    /* started by an api: end with it (its trials live on under their supervisors) */
    if (parent_death) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1)
            return 0;
    }
    log_set_module("worker");
    db_set_actor("worker");
    struct worker w;
    memset(&w, 0, sizeof w);
    struct errbuf e;
    w.ops = platform_find(platform);
    if (!w.ops) {
        fprintf(stderr, "trialq worker: unknown platform '%s'\n", platform);
        return 2;
    }
    w.home = trialq_home(home_opt);
    char *dbpath = trialq_db_path(w.home);
    if (db_open(dbpath, &w.db, &e) < 0) {
        log_error("%s", e.msg);
        free(dbpath);
        return 1;
    }
    free(dbpath);
    w.exp_id = xstrdup(exp_id);
    int found = exp_load(w.db, exp_id, &w.exp, &e);
    if (found <= 0) {
        log_error("experiment %s: %s", exp_id, found < 0 ? e.msg : "not found");
        return 1;
    }
    w.config = cJSON_Parse(w.exp.config);
    w.lease_ms = LEASE_MS;
    w.owner = queue_owner_id();
    int init_rc = w.ops->init(&w, &e);
    if (init_rc < 0)
        log_error("platform %s: %s", platform, e.msg);
    if (init_rc < 0 || cleanup) {
        /* nnictl stop: the platform removes what it holds for the experiment */
        int crc = init_rc < 0 ? -1 : w.ops->cleanup ? w.ops->cleanup(&w, &e) : 0;
        if (crc < 0 && init_rc == 0)
            log_error("platform %s: cleanup: %s", platform, e.msg);
        if (init_rc == 0)
            w.ops->destroy(&w);
        cJSON_Delete(w.config);
        exp_clear(&w.exp);
        db_close(w.db);
        free(w.owner);
        free(w.exp_id);
        free(w.home);
        return crc < 0 ? 1 : 0;
    }

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGUSR1);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

    /* our faults reach the user even when the database cannot be written */
    char *fault_dir = xasprintf("%s/faults", w.exp.exp_dir);
    char *fault_role = xasprintf("worker-%s", platform);
    if (fault_publish_to(fault_dir, fault_role) < 0)
        log_warn("cannot create %s/%s.%d: %s; faults are only logged", fault_dir, fault_role, (int)getpid(),
                 strerror(errno));
    free(fault_dir);
    free(fault_role);
    char *role = xasprintf("worker:%s", platform);
    int64_t proc_row = 0;
    if (proc_register(w.db, exp_id, role, getpid(), proc_start_time(getpid()), &proc_row, &e) < 0)
        log_warn("cannot register process: %s", e.msg);
    free(role);
    log_info("worker %s for experiment %s started", w.owner, exp_id);

    int64_t drain_deadline = 0;
    if (drain) {
        /* nnictl stop found trials without a live api: end them all, then exit */
        drain_deadline = mono_ms() + 25000;
        /* (hybrid: only this platform's; nnictl stop drains each platform) */
        sqlite3_stmt *st = db_query(w.db, &e, "SELECT id FROM trial WHERE experiment_id = ? AND platform = ?"
                                              " AND " SQL_TRIAL_STARTED, "ss", exp_id, w.ops->name);
        char **ids = NULL;
        int n = 0;
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            ids = xrealloc(ids, sizeof *ids * (size_t)(n + 1));
            ids[n++] = col_str(st, 0);
        }
        if (st)
            sqlite3_reset(st);
        for (int i = 0; i < n; i++) {
            trial_request_kill(w.db, ids[i], "USER_CANCELED", "experiment stopped", &e);
            free(ids[i]);
        }
        free(ids);
    }
    refresh_api_pid(&w);
    adopt(&w);
    if (!drain)
        claim_all(&w);
    int64_t now = mono_ms();
    int64_t next_collect = now + COLLECT_EVERY_MS, next_kill = now, next_renew = now + w.lease_ms / 3;
    int64_t next_adopt = now + ADOPT_EVERY_MS, next_status = now + STATUS_EVERY_MS, next_claim = now + CLAIM_EVERY_MS;
    int exit_code = 0;
    while (!w.stop) {
        now = mono_ms();
        int64_t next = next_collect;
        if (next_kill < next) next = next_kill;
        if (next_renew < next) next = next_renew;
        if (next_adopt < next) next = next_adopt;
        if (next_status < next) next = next_status;
        if (next_claim < next) next = next_claim;
        if (drain && now + 100 < next) next = now + 100;
        for (int i = 0; i < w.ntrials; i++)
            if (!w.trials[i].is_child && w.trials[i].next_poll_ms < next)
                next = w.trials[i].next_poll_ms;
        int timeout = next > now ? (int)(next - now) : 0;
        if (w.wake && !drain)
            timeout = 0; /* a trial ended during the last pass: claim the next one now */
        struct pollfd pfd = {.fd = sfd, .events = POLLIN};
        int pr = poll(&pfd, 1, timeout);
        if (pr < 0 && errno != EINTR)
            break;
        int got_chld = 0;
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) == sizeof si) {
            switch (si.ssi_signo) {
            case SIGCHLD: got_chld = 1; break;
            case SIGUSR1: w.wake = 1; break;
            default: w.stop = 1; break;
            }
        }
        if (w.stop)
            break;
        if (got_chld)
            reap(&w);
        now = mono_ms();
        if (w.wake || now >= next_kill) {
            check_kills(&w);
            next_kill = now + KILLCHECK_EVERY_MS;
        }
        if (!drain && (w.wake || now >= next_claim)) {
            claim_all(&w);
            next_claim = now + CLAIM_EVERY_MS;
            w.wake = 0;
        }
        for (int i = 0; i < w.ntrials; i++) {
            struct worker_trial *wt = &w.trials[i];
            /* our own children report by SIGCHLD; poll them rarely as a safety net */
            if (wt->next_poll_ms <= now) {
                wt->next_poll_ms = now + poll_every(&w, wt);
                int before = w.ntrials;
                if (wt->submit_pending)
                    start_trial(&w, wt);
                else
                    poll_one(&w, wt);
                if (w.ntrials < before)
                    i--; /* the slot now holds another trial */
            }
        }
        if (now >= next_collect) {
            collect_running(&w);
            next_collect = now + COLLECT_EVERY_MS;
        }
        if (now >= next_renew) {
            if (queue_renew(w.db, w.owner, w.lease_ms, &e) < 0)
                log_limited(LOG_ERROR, "renew: %s", e.msg);
            next_renew = now + w.lease_ms / 3;
        }
        if (now >= next_adopt) {
            adopt(&w);
            next_adopt = now + ADOPT_EVERY_MS;
        }
        if (now >= next_status) {
            char *st = NULL;
            int f = db_text(w.db, &e, &st, "SELECT status FROM experiment WHERE id = ?", "s", exp_id);
            if (f == 0) {
                log_info("experiment %s is gone; exiting", exp_id);
                w.stop = 1;
            }
            free(st);
            refresh_api_pid(&w);
            next_status = now + STATUS_EVERY_MS;
        }
        if (drain) {
            int64_t left = 0;
            db_int(w.db, &e, &left, "SELECT count(*) FROM trial WHERE experiment_id = ? AND platform = ?"
                                    " AND " SQL_TRIAL_STARTED, "ss", exp_id, w.ops->name);
            if (left == 0)
                break;
            if (now >= drain_deadline) {
                log_error("drain: %lld trial(s) did not end", (long long)left);
                exit_code = 1;
                break;
            }
        }
    }
    log_info("worker exiting; %d trial(s) stay with their supervisors", w.ntrials);
    proc_ended(w.db, proc_row, "exited", &e);
    w.ops->destroy(&w);
    for (int i = 0; i < w.ntrials; i++)
        trial_clear(&w.trials[i].t);
    free(w.trials);
    cJSON_Delete(w.config);
    exp_clear(&w.exp);
    db_close(w.db);
    free(w.owner);
    free(w.exp_id);
    free(w.home);
    close(sfd);
    return exit_code;
}
