/* local.c: the local platform. Each trial runs under trialq-supervise (a tiny program
 * started with posix_spawn, in its own session) that starts the trial in its own
 * process group under a group leader (trialq-trial) and forwards kill requests with
 * escalation; the leader writes the exit status into the trial dir. The supervisor
 * outlives a killed worker, and the leader a killed supervisor, so no exit status is
 * lost; a flock the supervisor holds tells any later worker that it lives, and the
 * leader's pid tells whether the trial lives without it.
 *
 * Trial dir files (besides NNI's parameter.cfg, .nni/metrics, trial.stdout/stderr):
 *   .nni/job.lock   flock held by the supervisor; "<attempt> [<leader pid> <start ticks>
 *                   [<supervisor pid> <start ticks>]]" (the leader's pid is the trial's
 *                   process group, the supervisor's its session)
 *   .nni/state      "<exit code> <end ms> <signal> <attempt> <stopped> <fault>" (written
 *                   by the leader, or by the supervisor when the leader was killed; an
 *                   older one has no <stopped> or <fault>. stopped: supervise/lead.h's
 *                   STOPPED_*, 2 when nnictl stop itself ended it: USER_CANCELED.
 *                   fault: the errno of a full, read-only or failing filesystem seen
 *                   under the trial dir while it ran, else 0)
 *   .nni/state.next the end record's room (blanks), taken before the trial runs: on a
 *                   full disk the end is written over it and renamed to .nni/state
 *   .nni/channel    the URL of the trial's HTTP command channel while its leader serves
 *                   it (trialCommandChannel: http, supervise/chanserve.c); its token
 *                   makes it a credential: mode 0600 in the 0700 .nni/, and trial-file
 *                   serves nothing under a hidden directory */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "queue/worker_queue.h"
#include "schema/nnijson.h"
#include "workers/worker.h"
#include "common/chantoken.h"
#include "common/trialenv.h"
#include "supervise/lead.h"

extern char **environ;

struct local_state {
    char *supervisor;  /* trialq-supervise beside our executable */
    char *shell;       /* /bin/bash as NNI, else /bin/sh */
    char *sdk_path;    /* our stdlib `nni` package, appended to PYTHONPATH when nni is absent */
    int real_nni;      /* python3 imports a real nni package: never shadow it */
    int gpu_count;     /* trialGpuNumber of our trials: > 0 keeps the GPU inventory fresh */
    int64_t gpu_next;  /* mono ms of the next inventory check */
    int gpu_looked;    /* this worker ran (or saw) a collection already */
    int gpu_failing;   /* the last nvidia-smi run failed (logged once) */
};

/* True when `python3 -c "import nni"` works without our SDK on the path. */
static int real_nni_installed(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_RDWR);
        dup2(fd, 1);
        dup2(fd, 2);
        unsetenv("PYTHONPATH");
        execlp("python3", "python3", "-c", "import nni, nni.runtime", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return 0;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int local_init(struct worker *w, struct errbuf *e)
{
    struct local_state *ls = xcalloc(1, sizeof *ls);
    ls->shell = xstrdup(access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh");
    /* installed: <prefix>/bin/trialq -> <prefix>/share/trialq/python; in a build tree:
     * the source tree's sdk/python */
    char *exe = self_exe_path();
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    ls->supervisor = xasprintf("%s/trialq-supervise", exe);
    if (access(ls->supervisor, X_OK) < 0) {
        errf(e, "cannot run %s: %s (it is installed beside trialq)", ls->supervisor, strerror(errno));
        free(ls->supervisor);
        free(ls);
        free(exe);
        return -1;
    }
    ls->sdk_path = trialq_data_dir("python", "nni", TRIALQ_BUILD_TREE("/sdk/python"));
    free(exe);
    ls->real_nni = real_nni_installed();
    struct gpu_need need;
    ls->gpu_count = gpu_need_from_json(worker_ts_config(w), w->config, &need);
    w->platform = ls;
    return 0;
}

/* The GPU inventory of this host (gpu rows), read by the claim of trials that need
 * GPUs. nvidia-smi runs at most every GPU_REFRESH_MS, whichever worker of the database
 * runs it (the rows are shared by every experiment on this host). */
static void local_refresh(struct worker *w)
{
    struct local_state *ls = w->platform;
    if (!ls || ls->gpu_count <= 0 || mono_ms() < ls->gpu_next)
        return;
    ls->gpu_next = mono_ms() + 1000;
    int64_t machine_id;
    struct errbuf e;
    /* nothing to place, nothing to look at (an idle or finished experiment) */
    if (queue_has_unclaimed(w->db, w->exp_id, &e) != 1)
        return;
    /* a worker's first look is fresh: the host may have changed since the last run */
    int64_t max_age = ls->gpu_looked ? GPU_REFRESH_MS : 0;
    ls->gpu_looked = 1;
    char why[300];
    int rc = gpu_refresh_local(w->db, w->ops->name, max_age, &machine_id, why, sizeof why, &e);
    if (rc < 0)
        log_warn("GPU inventory: %s", e.msg);
    /* say it once when the tool starts failing, and once when it works again */
    if (rc == 1 && (why[0] != 0) != ls->gpu_failing) {
        ls->gpu_failing = why[0] != 0;
        if (ls->gpu_failing)
            log_warn("GPU inventory: %s; trials needing GPUs wait", why);
        else
            log_info("GPU inventory: nvidia-smi answers again");
    }
}

static void local_destroy(struct worker *w)
{
    struct local_state *ls = w->platform;
    if (!ls)
        return;
    free(ls->supervisor);
    free(ls->shell);
    free(ls->sdk_path);
    free(ls);
    w->platform = NULL;
}

/* Where submit puts a trial's dir (trial_dir_path: the recorded one, else this). */
static char *trial_dir_of(struct worker *w, const char *trial_id)
{
    return trial_dir_default(w->exp.exp_dir, trial_id);
}

/* ---------------- worker side ---------------- */

static int read_ints(const char *path, long long *v, int n)
{
    char *s = read_file(path, NULL);
    if (!s)
        return -1;
    char *p = s;
    int i;
    for (i = 0; i < n; i++) {
        char *end;
        v[i] = strtoll(p, &end, 10);
        if (end == p)
            break;
        p = end;
    }
    free(s);
    return i == n ? 0 : -1;
}

/* The job lock's record: which attempt, and once started its leader (= the trial's
 * process group) and supervisor (= its session); n fields were there. */
struct local_job {
    int n;
    long long attempt, lead, lead_start, sup, sup_start;
};

static void read_job(const char *dir, struct local_job *j)
{
    char *path = xasprintf("%s/.nni/job.lock", dir);
    long long v[5];
    memset(j, 0, sizeof *j);
    for (j->n = 5; j->n > 0 && read_ints(path, v, j->n) < 0; j->n--)
        ;
    free(path);
    j->attempt = j->n > 0 ? v[0] : 0;
    j->lead = j->n >= 3 ? v[1] : 0;
    j->lead_start = j->n >= 3 ? v[2] : 0;
    j->sup = j->n >= 5 ? v[3] : 0;
    j->sup_start = j->n >= 5 ? v[4] : 0;
}

/* A process of the job is left in its group: by more than the number, which the kernel
 * may give to a later group once this one is empty (the session and start times too). */
static int job_group_alive(const struct local_job *j)
{
    return j->lead > 0 && proc_group_alive((pid_t)j->lead, (pid_t)j->sup, (uint64_t)j->lead_start);
}

/* Ends what is left of an attempt's group and waits (up to wait_ms) until it is empty:
 * 0 when nothing of it is left. */
static int end_job_group(const struct local_job *j, int wait_ms)
{
    int64_t deadline = mono_ms() + wait_ms;
    while (job_group_alive(j)) {
        kill(-(pid_t)j->lead, SIGKILL);
        if (mono_ms() >= deadline)
            return -1;
        usleep(20000);
    }
    return 0;
}

/* 1 when the job lock is held (a supervisor lives), 0 when free, -1 when absent. Read
 * only (flock needs no write access: a read-only filesystem still tells), and a lock
 * file that is there but cannot be opened now (EIO, EMFILE) counts as held: looked at
 * again later, never taken for a vanished job, which would run the trial again beside
 * its live attempt. */
static int lock_held(const char *dir)
{
    char *path = xasprintf("%s/.nni/job.lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? -1 : 1;
    int held = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd); /* closing drops our lock if we took it */
    return held;
}

/* A directory left by an earlier attempt is kept beside (<dir>.attempt<N>), not reused;
 * never two copies of a trial: what is left of the earlier attempt (its supervisor
 * gone, its group not) is ended and waited for first. *err: the errno of a failure. */
static int move_earlier_attempt(const struct trial *t, const char *dir, const char *lockpath, int *err,
                                struct errbuf *e)
{
    if (access(lockpath, F_OK) != 0)
        return 0;
    char *s = read_file(lockpath, NULL);
    int old_attempt = s ? atoi(s) : 0;
    free(s);
    if (!old_attempt || old_attempt == t->attempt)
        return 0;
    struct local_job old;
    read_job(dir, &old);
    if (lock_held(dir) == 1 || (old.attempt == old_attempt && end_job_group(&old, 5000) < 0))
        return errf(e, "trial %s: a job of attempt %d still runs", t->id, old_attempt);
    char *aside = xasprintf("%s.attempt%d", dir, old_attempt);
    rm_rf(aside);
    int rc = 0;
    if (rename(dir, aside) < 0) {
        *err = errno;
        rc = errf(e, "cannot move %s aside: %s", dir, strerror(errno));
    }
    free(aside);
    return rc;
}

/* What is there of this attempt already, the job lock taken by us or not (held: a
 * supervisor lives): SUBMIT_ATTACHED or SUBMIT_FINISHED (*job_id set), -1 on an error,
 * or SUBMIT_NEW when the job is to be started now. */
static int existing_job(const struct trial *t, const char *dir, int held, char **job_id, int *err,
                        struct errbuf *e)
{
    char *statepath = xasprintf("%s/.nni/state", dir);
    long long prev[4];
    struct local_job job;
    int rc = SUBMIT_NEW;
    if (held) {
        /* a supervisor of this attempt already runs: re-attach instead of a second job */
        log_info("trial %s: re-attached to its running job", t->id);
        *job_id = xstrdup(t->job_id ? t->job_id : "local:attached");
        rc = SUBMIT_ATTACHED;
    } else if (read_ints(statepath, prev, 4) == 0 && prev[3] == t->attempt) {
        /* this attempt already ran to its end while no worker watched */
        *job_id = xstrdup(t->job_id ? t->job_id : "local:finished");
        rc = SUBMIT_FINISHED;
    } else if (read_job(dir, &job), job.n >= 3 && job.attempt == t->attempt) {
        /* this attempt's trial was started (its leader is recorded before it runs) and its
         * supervisor is gone without an end: starting this attempt again would run it
         * twice, in one directory. Its leader may live and record the end: local_poll
         * watches it; a job of which nothing is left vanished. */
        log_warn("trial %s: attempt %d started under a supervisor that is gone; %s", t->id, t->attempt,
                 proc_alive((pid_t)job.lead, (uint64_t)job.lead_start) ? "re-attached to the trial, which runs on"
                                                                       : "watching what is left of it");
        *job_id = xstrdup("local:attached");
        rc = SUBMIT_ATTACHED;
    } else if (t->kill_request) {
        /* asked to end before it ever started (a stop, a kill): it ends without running */
        char state[96];
        int sn = snprintf(state, sizeof state, "143 %lld 0 %d 1\n", (long long)now_ms(), t->attempt);
        if (write_file_replace(statepath, state, (size_t)sn, 0644) < 0) {
            *err = errno;
            rc = errf(e, "cannot write %s: %s", statepath, strerror(errno));
        } else {
            *job_id = xstrdup("local:finished");
            rc = SUBMIT_FINISHED;
        }
    }
    free(statepath);
    return rc;
}

/* Before a new job: the attempt in the job lock (held by us), no end record of an earlier
 * run, parameter.cfg. */
static int write_start_files(const struct trial *t, const char *dir, int lockfd, int *err, struct errbuf *e)
{
    char att[16];
    int an = snprintf(att, sizeof att, "%d\n", t->attempt);
    if (ftruncate(lockfd, 0) < 0 || pwrite(lockfd, att, (size_t)an, 0) != an) {
        *err = errno;
        return errf(e, "cannot write %s/.nni/job.lock: %s", dir, strerror(errno));
    }
    char *statepath = xasprintf("%s/.nni/state", dir);
    unlink(statepath);
    free(statepath);
    char *cfg = xasprintf("%s/parameter.cfg", dir);
    char *rec = nni_param_record(t);
    int wr = write_file_replace(cfg, rec, strlen(rec), 0644);
    int wr_errno = errno;
    free(rec);
    free(cfg);
    if (wr < 0) {
        *err = wr_errno;
        return errf(e, "cannot write parameter.cfg in %s: %s", dir, strerror(wr_errno));
    }
    return 0;
}

/* The trial's environment: ours without NNI's variables of any other trial, plus NNI's
 * for this one, and our SDK at the end of PYTHONPATH unless a real nni is installed.
 * With trialCommandChannel: http, TRIALQ_CHANNEL_PATH tells the trial's group leader
 * (trialq-trial: supervise/lead.c, supervise/chanserve.c), which outlives the api, this
 * worker and the supervisor as the trial does, to serve NNI v3's HTTP channel at the
 * path the api would (this trial's own token in it, common/chantoken.h) on a loopback
 * port and to set NNI_TRIAL_COMMAND_CHANNEL for the trial; metrics come through
 * .nni/metrics as with the file channel. The platforms' credentials (AZURE_CLIENT_SECRET,
 * ...: common/trialenv.h) are left out unless passCredentials: true. */
static char **local_envp(struct worker *w, const struct trial *t, const char *dir, const char *code)
{
    struct local_state *ls = w->platform;
    struct trial_env te;
    trial_env_init(&te);
    worker_trial_env(w, t, dir, dir, code, &te);
    const cJSON *chan = worker_config_item(w, "trialCommandChannel");
    if (cJSON_IsString(chan) && strcmp(chan->valuestring, "http") == 0 && w->exp.token) {
        char tok[CHAN_TOKEN_LEN + 1];
        chan_token(w->exp.token, t->id, tok);
        char *path = xasprintf("%s/env/%s/%s", w->exp.url_prefix ? w->exp.url_prefix : "", tok, t->id);
        trial_env_set(&te, "TRIALQ_CHANNEL_PATH", path);
        free(path);
    }
    const char *pythonpath = getenv("PYTHONPATH");
    if (!ls->real_nni) {
        char *pp = pythonpath && *pythonpath ? xasprintf("%s:%s", pythonpath, ls->sdk_path) : xstrdup(ls->sdk_path);
        trial_env_set(&te, "PYTHONPATH", pp);
        free(pp);
    } else if (pythonpath) {
        trial_env_set(&te, "PYTHONPATH", pythonpath); /* last, as our own */
    }
    /* the credentials of nnictl create's environment stay with the worker */
    char **base = env_less_credentials(environ, cJSON_IsTrue(worker_config_item(w, "passCredentials")));
    char **envp = trial_env_envp(&te, base);
    free(base);
    trial_env_free(&te);
    return envp;
}

/* Starts trialq-supervise in its own session, holding the job lock (lockfd as fd 3). */
static int spawn_supervisor(struct worker *w, const struct trial *t, const char *dir, int lockfd, pid_t *pid,
                            struct errbuf *e)
{
    struct local_state *ls = w->platform;
    const cJSON *cmd = worker_config_item(w, "trialCommand");
    const cJSON *code = worker_config_item(w, "trialCodeDirectory");
    const char *code_dir = cJSON_IsString(code) ? code->valuestring : ".";
    char attempt[16];
    snprintf(attempt, sizeof attempt, "%d", t->attempt);
    char **envp = local_envp(w, t, dir, code_dir);
    char *const args[] = {"trialq-supervise", (char *)dir, attempt, ls->shell, (char *)code_dir,
                          (char *)(cJSON_IsString(cmd) ? cmd->valuestring : "false"), NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, lockfd, 3); /* the lock passes to the supervisor */
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    /* own session: signals to the worker's group or terminal do not reach it */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
    int serr = posix_spawn(pid, ls->supervisor, &fa, &at, args, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    trial_env_envp_free(envp);
    if (serr)
        return errf(e, "cannot start %s: %s", ls->supervisor, strerror(serr));
    return 0;
}

/* The trial's dir and job lock, taken (*lockfd) or found held (*held). */
static int open_job_lock(const char *dir, int *lockfd, int *held, int *err, struct errbuf *e)
{
    char *nni = xasprintf("%s/.nni", dir);
    char *lockpath = xasprintf("%s/.nni/job.lock", dir);
    int rc = 0;
    *held = 0;
    /* 0700: .nni/channel holds the trial's channel token (trialq's user only) */
    if (mkdir_p(dir, 0755) < 0 || (mkdir(nni, 0700) < 0 && errno != EEXIST) || chmod(nni, 0700) < 0) {
        *err = errno;
        rc = errf(e, "cannot create trial dir %s: %s", nni, strerror(errno));
    } else if ((*lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0) {
        *err = errno;
        rc = errf(e, "cannot create %s: %s", lockpath, strerror(errno));
    } else if (flock(*lockfd, LOCK_EX | LOCK_NB) < 0) {
        if (errno == EWOULDBLOCK)
            *held = 1;
        else
            rc = errf(e, "flock %s: %s", lockpath, strerror(errno));
    }
    free(nni);
    free(lockpath);
    return rc;
}

static int local_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir_out,
                        struct errbuf *e)
{
    char *dir = trial_dir_of(w, t->id);
    char *lockpath = xasprintf("%s/.nni/job.lock", dir);
    int rc = -1, lockfd = -1, err = 0, held = 0;
    pid_t pid;
    if (move_earlier_attempt(t, dir, lockpath, &err, e) < 0 || open_job_lock(dir, &lockfd, &held, &err, e) < 0)
        goto out;
    rc = existing_job(t, dir, held, job_id, &err, e);
    if (rc == SUBMIT_ATTACHED || rc == SUBMIT_FINISHED) {
        *trial_dir_out = xstrdup(dir);
        goto out;
    }
    if (rc < 0 || (rc = write_start_files(t, dir, lockfd, &err, e)) < 0 ||
        (rc = spawn_supervisor(w, t, dir, lockfd, &pid, e)) < 0)
        goto out;
    /* the child holds the lock now (shared open file description); drop our fd */
    *job_id = xasprintf("local:%d:%llu", (int)pid, (unsigned long long)proc_start_time(pid));
    *trial_dir_out = xstrdup(dir);
    rc = SUBMIT_NEW;
out:
    /* a full disk (or an I/O error, a read-only filesystem) is not the trial's fault:
     * it waits for the disk instead of failing */
    if (rc == -1 && fault_is_resource(err))
        rc = SUBMIT_FAULT;
    if (lockfd >= 0)
        close(lockfd);
    free(dir);
    free(lockpath);
    return rc;
}

static int parse_job_id(const char *job_id, pid_t *pid, uint64_t *start)
{
    int p;
    unsigned long long s;
    if (!job_id || sscanf(job_id, "local:%d:%llu", &p, &s) != 2)
        return -1;
    *pid = p;
    *start = s;
    return 0;
}

static const char *local_reaped(struct worker *w, pid_t pid, int wstatus)
{
    for (int i = 0; i < w->ntrials; i++) {
        pid_t p;
        uint64_t s;
        if (parse_job_id(w->trials[i].t.job_id, &p, &s) == 0 && p == pid) {
            if (WIFSIGNALED(wstatus))
                log_warn("trial %s: its supervisor (pid %d) was killed by signal %d; the trial's group leader "
                         "records its end", w->trials[i].t.id, (int)pid, WTERMSIG(wstatus));
            return w->trials[i].t.id;
        }
    }
    return NULL;
}

/* The end of this attempt as its leader or supervisor recorded it: 1 when there. A trial
 * that exited non-zero while its directory's filesystem was full (read-only, failing)
 * says so in its message. */
static int read_end(const char *statepath, int attempt, struct job_state *js)
{
    long long v[6];
    int fields = 6;
    while (fields >= 4 && read_ints(statepath, v, fields) < 0)
        fields--;
    if (fields < 4 || v[3] != attempt)
        return 0;
    js->finished = 1;
    js->has_exit = v[2] == 0;
    js->exit_code = (int)v[0];
    js->signal = (int)v[2];
    js->end_time = v[1];
    js->stop_known = fields >= 5;
    js->stopped = fields < 5 || v[4] == STOPPED_NOT ? 0 : v[4] == STOPPED_EXPERIMENT ? JOB_STOPPED_EXPERIMENT : 1;
    if (fields >= 6 && v[5] != 0)
        job_why_disk_fault(js, (int)v[5]);
    return 1;
}

static int local_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    (void)e;
    memset(js, 0, sizeof *js);
    char *dir = trial_dir_path(t, w->exp.exp_dir);
    char *statepath = xasprintf("%s/.nni/state", dir);
    if (!read_end(statepath, t->attempt, js) && lock_held(dir) != 1) {
        /* no supervisor and no end record (the supervisor was killed, or the machine
         * rebooted): the trial's leader, if it lives, records the end; without it no end
         * will come, and what is left of the group is ended. Only when nothing of it is
         * left (and still no end was recorded: the leader writes it before it ends the
         * group) did the job vanish, and may the trial run again. */
        struct local_job j;
        read_job(dir, &j);
        int started = j.n >= 3 && j.attempt == t->attempt;
        if (started && proc_alive((pid_t)j.lead, (uint64_t)j.lead_start))
            ; /* it runs on */
        else if (started && job_group_alive(&j))
            kill(-(pid_t)j.lead, SIGKILL); /* looked at again at the next poll */
        else if (!read_end(statepath, t->attempt, js))
            js->vanished = 1;
    }
    free(statepath);
    free(dir);
    return 0;
}

/* The supervisor of t's job, as its job id or (attached to a job we did not start) the
 * job lock names it, when it lives: 1 with *pid set. */
static int live_supervisor(const struct trial *t, const struct local_job *j, pid_t *pid)
{
    uint64_t start;
    if (parse_job_id(t->job_id, pid, &start) == 0 && proc_alive(*pid, start))
        return 1;
    *pid = (pid_t)j->sup;
    return j->n >= 5 && proc_alive((pid_t)j->sup, (uint64_t)j->sup_start);
}

/* A stop signal to pid: with the experiment's mark (lead.h) when it is the experiment's
 * stop that the database could not take (host_job). */
static void send_stop(pid_t pid, int sig, int experiment)
{
    if (experiment)
        sigqueue(pid, sig, (union sigval){.sival_int = STOP_SIGVAL_EXPERIMENT});
    else
        kill(pid, sig);
}

/* Asks t's job to end (JOB_STOP: its supervisor forwards it and escalates to SIGKILL,
 * else the trial's group directly: its leader notes the stop and escalates; experiment:
 * as the experiment's stop, the end then recorded USER_CANCELED without a kill request),
 * or kills what is left of it (JOB_KILL), or only looks (JOB_LOOK): 1 while something of
 * it runs. From the files and the process table: nothing is written. */
static int signal_job(const struct trial *t, const char *dir, int how, int experiment)
{
    struct local_job j;
    read_job(dir, &j);
    pid_t sup;
    int has_sup = live_supervisor(t, &j, &sup);
    int ours = j.n >= 3 && j.attempt == t->attempt;
    int lead = ours && proc_alive((pid_t)j.lead, (uint64_t)j.lead_start);
    int group = ours && job_group_alive(&j);
    if (how == JOB_STOP && has_sup) {
        send_stop(sup, SIGTERM, experiment);
    } else if (how == JOB_STOP && lead) {
        send_stop((pid_t)j.lead, SIGINT, experiment); /* the leader first, as stop_group */
        kill(-(pid_t)j.lead, SIGINT);
    }
    else if (how == JOB_KILL && has_sup)
        kill(sup, SIGKILL);
    if ((how == JOB_STOP && !has_sup && !lead && group) || (how == JOB_KILL && group))
        kill(-(pid_t)j.lead, SIGKILL);
    return has_sup || group;
}

static int local_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    (void)e;
    char *dir = trial_dir_path(t, w->exp.exp_dir);
    signal_job(t, dir, JOB_STOP, 0);
    free(dir);
    return 0;
}

static int local_host_job(const struct trial *t, const char *exp_dir, int how)
{
    char *dir = trial_dir_path(t, exp_dir);
    int alive = signal_job(t, dir, how, 1); /* only nnictl stop calls it */
    free(dir);
    return alive;
}

static int local_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    char *dir = trial_dir_path(t, w->exp.exp_dir);
    int rc = collect_trial_dir(w->db, t, dir, NULL, at_end, e);
    free(dir);
    return rc;
}

static int local_pending(struct worker *w, struct trial *t)
{
    char *dir = trial_dir_path(t, w->exp.exp_dir);
    int r = trial_dir_grew(t, dir, NULL);
    free(dir);
    return r;
}

const struct platform_ops platform_local = {
    .pending = local_pending,
    .name = "local",
    .init = local_init,
    .submit = local_submit,
    .reaped = local_reaped,
    .poll = local_poll,
    .kill = local_kill,
    .host_job = local_host_job,
    .collect = local_collect,
    .destroy = local_destroy,
    .refresh = local_refresh,
    .gpu_mode = PLATFORM_GPU_HOST,
};
