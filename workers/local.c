/* local.c: the local platform. Each trial runs under a small supervisor process (a
 * fork of the worker, in its own session) that starts the trial in its own process
 * group, forwards kill requests with escalation, and writes the exit status into the
 * trial dir. The supervisor outlives a killed worker, so no exit status is ever lost;
 * a flock held by the supervisor tells any later worker whether the job still lives.
 *
 * Trial dir files (besides NNI's parameter.cfg, .nni/metrics, trial.stdout/stderr):
 *   .nni/job.lock   flock held by the supervisor; content = attempt number
 *   .nni/job        "<trial pid> <trial start ticks> <attempt>" (written by the supervisor)
 *   .nni/state      "<exit code> <end ms> <signal> <attempt>" (written by the supervisor) */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "schema/nnijson.h"
#include "workers/worker.h"

#define KILL_GRACE_SECONDS 5

struct local_state {
    char *shell;       /* /bin/bash as NNI, else /bin/sh */
    char *sdk_path;    /* our stdlib `nni` package, appended to PYTHONPATH when nni is absent */
    int real_nni;      /* python3 imports a real nni package: never shadow it */
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
    char *installed = xasprintf("%s/../share/trialq/python/nni", exe);
    if (access(installed, R_OK) == 0)
        ls->sdk_path = xasprintf("%s/../share/trialq/python", exe);
    else
        ls->sdk_path = xstrdup(TRIALQ_SOURCE_DIR "/sdk/python");
    free(installed);
    free(exe);
    ls->real_nni = real_nni_installed();
    w->platform = ls;
    (void)e;
    return 0;
}

static void local_destroy(struct worker *w)
{
    struct local_state *ls = w->platform;
    if (!ls)
        return;
    free(ls->shell);
    free(ls->sdk_path);
    free(ls);
    w->platform = NULL;
}

static char *trial_dir_of(struct worker *w, const char *trial_id)
{
    return xasprintf("%s/trials/%s", w->exp.exp_dir, trial_id);
}

/* ---------------- supervisor (runs in the forked child) ---------------- */

static volatile sig_atomic_t g_term, g_alarm;
static void on_term(int sig) { (void)sig; g_term = 1; }
static void on_alarm(int sig) { (void)sig; g_alarm = 1; }

struct launch {
    const char *shell, *command, *code_dir, *trial_dir, *sdk_path;
    const char *exp_id, *trial_id, *platform;
    int64_t sequence;
    int attempt;
    const char *gpu_indices; /* NULL: do not set CUDA_VISIBLE_DEVICES */
    int set_pythonpath;
};

static void exec_trial(const struct launch *L)
{
    char seq[32];
    snprintf(seq, sizeof seq, "%lld", (long long)L->sequence);
    setenv("NNI_PLATFORM", L->platform, 1);
    setenv("NNI_EXP_ID", L->exp_id, 1);
    setenv("NNI_TRIAL_JOB_ID", L->trial_id, 1);
    setenv("NNI_TRIAL_SEQ_ID", seq, 1);
    setenv("NNI_SYS_DIR", L->trial_dir, 1);
    setenv("NNI_OUTPUT_DIR", L->trial_dir, 1);
    setenv("NNI_CODE_DIR", L->code_dir, 1);
    setenv("MULTI_PHASE", "false", 1);
    unsetenv("NNI_TRIAL_COMMAND_CHANNEL"); /* the file channel, which survives an api restart */
    unsetenv("REUSE_MODE");
    if (L->gpu_indices)
        setenv("CUDA_VISIBLE_DEVICES", L->gpu_indices, 1);
    if (L->set_pythonpath) {
        const char *old = getenv("PYTHONPATH");
        char *pp = old && *old ? xasprintf("%s:%s", old, L->sdk_path) : xstrdup(L->sdk_path);
        setenv("PYTHONPATH", pp, 1);
        free(pp);
    }
    if (chdir(L->code_dir) < 0) {
        fprintf(stderr, "trialq: cannot enter trialCodeDirectory %s: %s\n", L->code_dir, strerror(errno));
        _exit(126);
    }
    execl(L->shell, L->shell, "-c", L->command, (char *)NULL);
    fprintf(stderr, "trialq: cannot run %s: %s\n", L->shell, strerror(errno));
    _exit(127);
}

/* The supervisor: never returns. lockfd is the flock'ed job.lock (fd 3 after setup). */
static void supervise(const struct launch *L, int lockfd)
{
    setsid(); /* own session: a signal to the worker's group does not reach us */
    proc_title_set("trialq supervise %s (experiment %s)", L->trial_id, L->exp_id);
    sigset_t none;
    sigemptyset(&none);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &sa, NULL);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    sigprocmask(SIG_SETMASK, &none, NULL);

    if (dup2(lockfd, 3) < 0)
        _exit(120);
    close_fds_from(4);

    char *out = xasprintf("%s/trial.stdout", L->trial_dir);
    char *err = xasprintf("%s/trial.stderr", L->trial_dir);
    int ofd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int efd = open(err, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        if (nullfd >= 0) dup2(nullfd, 0);
        if (ofd >= 0) dup2(ofd, 1);
        if (efd >= 0) dup2(efd, 2);
        close_fds_from(3);
        exec_trial(L);
    }
    int64_t end = 0;
    int code = 127, sig = 0;
    if (pid > 0) {
        setpgid(pid, pid); /* both sides set it: no race with an early kill */
        char job[128];
        int n = snprintf(job, sizeof job, "%d %llu %d\n", (int)pid,
                         (unsigned long long)proc_start_time(pid), L->attempt);
        char *jobpath = xasprintf("%s/.nni/job", L->trial_dir);
        write_file_replace(jobpath, job, (size_t)n, 0644);
        free(jobpath);
        int forwarded = 0, status = 0;
        for (;;) {
            if (g_term && !forwarded) {
                kill(-pid, SIGTERM);
                alarm(KILL_GRACE_SECONDS);
                forwarded = 1;
            }
            if (g_alarm) {
                kill(-pid, SIGKILL);
                g_alarm = 0;
            }
            pid_t r = waitpid(pid, &status, 0);
            if (r == pid)
                break;
            if (r < 0 && errno != EINTR)
                break;
        }
        end = now_ms();
        if (WIFEXITED(status))
            code = WEXITSTATUS(status);
        else if (WIFSIGNALED(status)) {
            sig = WTERMSIG(status);
            code = 128 + sig;
        }
        kill(-pid, SIGKILL); /* nothing the trial started outlives it */
    } else {
        end = now_ms();
    }
    char state[128];
    int n = snprintf(state, sizeof state, "%d %lld %d %d\n", code, (long long)end, sig, L->attempt);
    char *statepath = xasprintf("%s/.nni/state", L->trial_dir);
    /* durable: this is the one record of how the trial ended */
    write_file_atomic(statepath, state, (size_t)n, 0644);
    _exit(0);
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

/* 1 when the job lock is held (a supervisor lives), 0 when free, -1 when absent. */
static int lock_held(const char *dir)
{
    char *path = xasprintf("%s/.nni/job.lock", dir);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return -1;
    int held = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd); /* closing drops our lock if we took it */
    return held;
}

static const char *platform_name(struct worker *w)
{
    return w->ops->name;
}

static int local_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir_out,
                        struct errbuf *e)
{
    struct local_state *ls = w->platform;
    char *dir = trial_dir_of(w, t->id);
    char *nni = xasprintf("%s/.nni", dir);
    char *lockpath = xasprintf("%s/.nni/job.lock", dir);
    char *statepath = xasprintf("%s/.nni/state", dir);
    int rc = -1, lockfd = -1;

    /* a directory left by an earlier attempt is kept beside, not reused */
    long long prev[4];
    if (access(lockpath, F_OK) == 0) {
        char *s = read_file(lockpath, NULL);
        int old_attempt = s ? atoi(s) : 0;
        free(s);
        if (old_attempt && old_attempt != t->attempt) {
            if (lock_held(dir) == 1) {
                errf(e, "trial %s: a job of attempt %d still runs", t->id, old_attempt);
                goto out;
            }
            char *aside = xasprintf("%s.attempt%d", dir, old_attempt);
            rm_rf(aside);
            if (rename(dir, aside) < 0) {
                errf(e, "cannot move %s aside: %s", dir, strerror(errno));
                free(aside);
                goto out;
            }
            free(aside);
        }
    }
    if (mkdir_p(nni, 0755) < 0) {
        errf(e, "cannot create trial dir %s: %s", nni, strerror(errno));
        goto out;
    }
    lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lockfd < 0) {
        errf(e, "cannot create %s: %s", lockpath, strerror(errno));
        goto out;
    }
    if (flock(lockfd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK) {
            errf(e, "flock %s: %s", lockpath, strerror(errno));
            goto out;
        }
        /* a supervisor of this attempt already runs: re-attach instead of a second job */
        *job_id = xstrdup(t->job_id ? t->job_id : "local:attached");
        *trial_dir_out = xstrdup(dir);
        log_info("trial %s: re-attached to its running job", t->id);
        rc = 0;
        goto out;
    }
    if (read_ints(statepath, prev, 4) == 0 && prev[3] == t->attempt) {
        /* this attempt already ran to its end while no worker watched */
        *job_id = xstrdup(t->job_id ? t->job_id : "local:finished");
        *trial_dir_out = xstrdup(dir);
        rc = 0;
        goto out;
    }
    char att[16];
    int an = snprintf(att, sizeof att, "%d\n", t->attempt);
    if (ftruncate(lockfd, 0) < 0 || pwrite(lockfd, att, (size_t)an, 0) != an) {
        errf(e, "cannot write %s: %s", lockpath, strerror(errno));
        goto out;
    }
    unlink(statepath);
    char *jobpath = xasprintf("%s/.nni/job", dir);
    unlink(jobpath);
    free(jobpath);

    char *cfg = xasprintf("%s/parameter.cfg", dir);
    char *rec = nni_param_record(t);
    int wr = write_file_replace(cfg, rec, strlen(rec), 0644);
    free(rec);
    free(cfg);
    if (wr < 0) {
        errf(e, "cannot write parameter.cfg in %s: %s", dir, strerror(errno));
        goto out;
    }

    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(w->config, "trialCommand");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(w->config, "trialCodeDirectory");
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(w->config, "trialGpuNumber");
    struct launch L = {
        .shell = ls->shell,
        .command = cJSON_IsString(cmd) ? cmd->valuestring : "false",
        .code_dir = cJSON_IsString(code) ? code->valuestring : ".",
        .trial_dir = dir,
        .sdk_path = ls->sdk_path,
        .exp_id = t->experiment_id,
        .trial_id = t->id,
        .platform = platform_name(w),
        .sequence = t->sequence,
        .attempt = t->attempt,
        .gpu_indices = t->gpu_indices ? t->gpu_indices
                       : (cJSON_IsNumber(gpus) && gpus->valueint == 0 ? "" : NULL),
        .set_pythonpath = !ls->real_nni,
    };
    pid_t pid = fork();
    if (pid < 0) {
        errf(e, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0)
        supervise(&L, lockfd);
    /* the child holds the lock now (shared open file description); drop our fd */
    *job_id = xasprintf("local:%d:%llu", (int)pid, (unsigned long long)proc_start_time(pid));
    *trial_dir_out = xstrdup(dir);
    rc = 0;
out:
    if (lockfd >= 0)
        close(lockfd);
    free(dir);
    free(nni);
    free(lockpath);
    free(statepath);
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
    (void)wstatus;
    for (int i = 0; i < w->ntrials; i++) {
        pid_t p;
        uint64_t s;
        if (parse_job_id(w->trials[i].t.job_id, &p, &s) == 0 && p == pid)
            return w->trials[i].t.id;
    }
    return NULL;
}

static int local_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    (void)e;
    memset(js, 0, sizeof *js);
    char *dir = t->trial_dir ? xstrdup(t->trial_dir) : trial_dir_of(w, t->id);
    char *statepath = xasprintf("%s/.nni/state", dir);
    long long v[4];
    if (read_ints(statepath, v, 4) == 0 && v[3] == t->attempt) {
        js->finished = 1;
        js->has_exit = v[2] == 0;
        js->exit_code = (int)v[0];
        js->signal = (int)v[2];
        js->end_time = v[1];
    } else if (lock_held(dir) != 1) {
        /* no supervisor and no exit record: the job is gone (supervisor killed, or the
         * machine rebooted). End any orphaned trial processes before retrying. */
        char *jobpath = xasprintf("%s/.nni/job", dir);
        long long j[3];
        if (read_ints(jobpath, j, 3) == 0 && j[2] == t->attempt && proc_alive((pid_t)j[0], (uint64_t)j[1]))
            proc_terminate(-(pid_t)j[0], 0, 2000);
        free(jobpath);
        js->vanished = 1;
    }
    free(statepath);
    free(dir);
    return 0;
}

static int local_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    (void)e;
    pid_t pid;
    uint64_t start;
    if (parse_job_id(t->job_id, &pid, &start) == 0 && proc_alive(pid, start)) {
        kill(pid, SIGTERM); /* the supervisor forwards it and escalates to SIGKILL */
        return 0;
    }
    /* attached to a job we did not start: signal the trial group directly */
    char *dir = t->trial_dir ? xstrdup(t->trial_dir) : trial_dir_of(w, t->id);
    char *jobpath = xasprintf("%s/.nni/job", dir);
    long long j[3];
    if (read_ints(jobpath, j, 3) == 0 && proc_alive((pid_t)j[0], (uint64_t)j[1])) {
        /* find the supervisor: the parent of the trial process */
        char *statp = xasprintf("/proc/%d/stat", (int)j[0]);
        char *s = read_file(statp, NULL);
        free(statp);
        pid_t parent = 0;
        if (s) {
            char *p = strrchr(s, ')');
            if (p)
                sscanf(p + 2, "%*c %d", &parent);
            free(s);
        }
        if (parent > 1)
            kill(parent, SIGTERM);
        else
            kill(-(pid_t)j[0], SIGTERM);
    }
    free(jobpath);
    free(dir);
    return 0;
}

/* Reads bytes [off, size) of a file; NULL when nothing new. */
static char *read_from(const char *path, int64_t off, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size > off) {
        size_t n = (size_t)(st.st_size - off);
        if (n > 64 << 20)
            n = 64 << 20; /* bounded per pass; the rest comes next time */
        buf = xmalloc(n + 1);
        ssize_t r = pread(fd, buf, n, off);
        if (r <= 0) {
            free(buf);
            buf = NULL;
        } else {
            *len = (size_t)r;
            buf[r] = '\0';
        }
    }
    close(fd);
    return buf;
}

static int local_collect(struct worker *w, struct trial *t, struct errbuf *e)
{
    char *dir = t->trial_dir ? xstrdup(t->trial_dir) : trial_dir_of(w, t->id);
    char *mpath = xasprintf("%s/.nni/metrics", dir);
    char *opath = xasprintf("%s/trial.stdout", dir);
    int rc = 0;
    size_t len = 0, used = 0;
    char *buf = read_from(mpath, t->metrics_offset, &len);
    if (buf) {
        rc = collect_metrics_buf(w->db, t->id, t->attempt, buf, len, &used, e);
        if (rc == 0)
            t->metrics_offset += (int64_t)used;
        free(buf);
    }
    if (rc == 0 && (buf = read_from(opath, t->stdout_offset, &len))) {
        rc = collect_stdout_buf(w->db, t->id, t->attempt, buf, len, &used, e);
        if (rc == 0) {
            /* a line longer than 1 MiB without a newline cannot be a metric: skip it */
            if (used == 0 && len > (1 << 20))
                used = len;
            t->stdout_offset += (int64_t)used;
        }
        free(buf);
    }
    free(mpath);
    free(opath);
    free(dir);
    return rc;
}

static int grew(const char *path, int64_t off)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > off;
}

static int local_pending(struct worker *w, struct trial *t)
{
    char *dir = t->trial_dir ? xstrdup(t->trial_dir) : trial_dir_of(w, t->id);
    char *mpath = xasprintf("%s/.nni/metrics", dir);
    char *opath = xasprintf("%s/trial.stdout", dir);
    int r = grew(mpath, t->metrics_offset) || grew(opath, t->stdout_offset);
    free(mpath);
    free(opath);
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
    .collect = local_collect,
    .destroy = local_destroy,
};
