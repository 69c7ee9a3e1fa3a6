/* lifecycle.c: an experiment's processes, as nnictl starts and stops them: the api
 * (started detached or in the foreground, waited for until it answers), and the stop
 * (recorded first, the api signalled, trials left behind drained through a worker of
 * their platform, the platforms' jobs cleaned up, every recorded process ended). The
 * workers are started by common/spawn.c, as the api starts its own. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/spawn.h"
#include "queue/worker_queue.h"
#include "supervise/lead.h"
#include "workers/worker.h"

static void log_header(int fd, const char *id)
{
    char line[81];
    memset(line, '-', 80);
    line[80] = '\0';
    char ts[32];
    format_time_ms(now_ms(), "%Y-%m-%d %H:%M:%S", ts, sizeof ts);
    dprintf(fd, "%s\nExperiment %s start: %s\n%s\n", line, id, ts, line);
}

static void print_log_tail(const char *path)
{
    size_t len;
    char *s = read_file(path, &len);
    if (!s)
        return;
    const char *from = len > 2000 ? s + len - 2000 : s;
    fprintf(stderr, "--- last lines of %s ---\n%s\n", path, from);
    free(s);
}

pid_t cli_start_api(const char *home, const struct experiment *x, const char *action, int port, int detach,
                    const char *log_level)
{
    char *logdir = path_join(x->exp_dir, "log");
    mkdir_p(logdir, 0700);
    char *outp = path_join(logdir, "nnictl_stdout.log");
    char *errp = path_join(logdir, "nnictl_stderr.log");
    char *exe = self_exe_path();
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    pid_t pid = fork();
    if (pid == 0) {
        if (detach)
            setsid();
        else
            setpgid(0, 0); /* Ctrl-C reaches nnictl, which stops the experiment in order */
        {
            /* output to the experiment's log files, also in the foreground */
            int ofd = open(outp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            int efd = open(errp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            int nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (ofd >= 0) {
                log_header(ofd, x->id);
                dup2(ofd, 1);
            }
            if (efd >= 0) {
                log_header(efd, x->id);
                dup2(efd, 2);
            }
            if (nfd >= 0)
                dup2(nfd, 0);
        }
        close_fds_from(3);
        execl(exe, "trialq", "api", "--experiment", x->id, "--action", action, "--home", home, "--port", portstr,
              "--log-level", log_level ? log_level : "info", (char *)NULL);
        _exit(127);
    }
    free(exe);
    if (pid < 0) {
        cli_error("cannot start the api process: %s", strerror(errno));
        goto fail;
    }
    /* wait until it answers, or tell why it did not */
    int64_t deadline = mono_ms() + 15000;
    while (mono_ms() < deadline) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
                cli_error("Port %d is not idle: another process listens there. Choose another port with --port.",
                          port);
            else
                cli_error("the api process of experiment %s exited at start (%s %d)", x->id,
                          WIFEXITED(st) ? "exit code" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            if (detach)
                print_log_tail(errp);
            goto fail;
        }
        struct experiment at = *x; /* the port it was started on, maybe not stored yet */
        at.port = port;
        if (cli_http(&at, "GET", "/check-status", NULL, NULL) == 200) {
            free(logdir); free(outp); free(errp);
            return pid;
        }
        usleep(20000);
    }
    cli_error("the api process of experiment %s did not answer on port %d within 15 s", x->id, port);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
fail:
    free(logdir); free(outp); free(errp);
    return -1;
}

int cli_drain(const char *home, const char *exp_id, const char *platform)
{
    const char *extra[] = {"--drain", NULL};
    pid_t pid = worker_spawn(platform, exp_id, home, SPAWN_QUIET, extra);
    if (pid < 0)
        return -1;
    int st;
    int64_t deadline = mono_ms() + 30000;
    while (mono_ms() < deadline) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
        usleep(20000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

/* `trialq worker --cleanup`: the platform removes what it holds for the experiment. */
static int cli_platform_cleanup(const char *home, const char *exp_id, const char *platform)
{
    const char *extra[] = {"--cleanup", "--log-level", "error", NULL};
    pid_t pid = worker_spawn(platform, exp_id, home, SPAWN_QUIET, extra);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int cli_stop_selects(const struct stop_sel *s, const struct experiment *x, int alive)
{
    if (s->all) /* also the ones a crash left half-stopped */
        return alive || (strcmp(x->status, "STOPPED") != 0 && strcmp(x->status, "DONE") != 0 &&
                         strcmp(x->status, "ERROR") != 0);
    if (s->port)
        return alive && x->port == s->port;
    if (s->prefix)
        return alive && strncmp(x->id, s->prefix, s->prefix_len) == 0;
    return alive;
}

/* What a stop could not record in the database (a full, read-only or failing disk):
 * the first reason, said once at the end with what to do. */
struct unrecorded {
    int n;
    struct errbuf why;
};

static void note_unrecorded(struct unrecorded *u, int rc, const struct errbuf *e)
{
    if (rc >= 0)
        return;
    if (!u->n++)
        u->why = *e;
}

/* Ends every process recorded for the experiment on this host (api, workers). */
static void end_processes(struct db *db, const char *id, struct unrecorded *u)
{
    struct errbuf e;
    struct proc_row *procs;
    int n;
    if (procs_unended(db, id, &procs, &n, &e) < 0) {
        fprintf(stderr, "WARNING: %s\n", e.msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (!procs[i].host || strcmp(procs[i].host, host_name()) != 0)
            continue;
        proc_terminate((pid_t)procs[i].pid, procs[i].start, 3000);
        note_unrecorded(u, proc_ended(db, procs[i].row, "stopped by nnictl", &e), &e);
    }
    proc_rows_free(procs, n);
}

/* The last resort of a stop, for trials of plat still started in the database after the
 * drain (their kill requests or ends could not be written: a full disk): their jobs on
 * this host, found from the platform's files and the process table alone (host_job), are
 * asked to end, killed once the trial's grace and the supervisor's give-up on its end
 * record are over, and waited for. Nothing is written: their ends stay for the next
 * healthy stop or resume. Returns how many still ran (-1: some could not be ended). */
static int end_host_jobs(struct db *db, const struct experiment *x, const char *plat)
{
    const struct platform_ops *ops = platform_find(plat);
    struct errbuf e;
    char **ids = NULL;
    int n = 0;
    if (!ops || !ops->host_job)
        return 0;
    if (queue_started_ids(db, x->id, plat, &ids, &n, &e) < 0) {
        fprintf(stderr, "WARNING: %s\n", e.msg);
        return 0;
    }
    struct trial *ts = xcalloc((size_t)n + 1, sizeof *ts);
    int running = 0, left = 0;
    for (int i = 0; i < n; i++) {
        if (trial_load(db, ids[i], &ts[i], &e) == 1 && ops->host_job(&ts[i], x->exp_dir, JOB_STOP))
            running++;
        free(ids[i]);
    }
    free(ids);
    int64_t start = mono_ms(), kill_at = start + (KILL_GRACE_SECONDS + STOP_RECORD_GIVE_UP_SECONDS + 1) * 1000;
    for (left = running; left > 0 && mono_ms() < kill_at + 2000; usleep(50000)) {
        int how = mono_ms() >= kill_at ? JOB_KILL : JOB_LOOK;
        left = 0;
        for (int i = 0; i < n; i++)
            if (ts[i].id && ops->host_job(&ts[i], x->exp_dir, how))
                left++;
    }
    for (int i = 0; i < n; i++)
        trial_clear(&ts[i]);
    free(ts);
    if (left)
        fprintf(stderr, "WARNING: %d %s trial job(s) of %s still run\n", left, plat, x->id);
    return left ? -1 : running;
}

/* The api: asked to end (SIGTERM), killed after 40 s. */
static void end_api(const struct experiment *x)
{
    if (!cli_api_alive(x))
        return;
    kill(x->api_pid, SIGTERM);
    int64_t deadline = mono_ms() + 40000;
    while (mono_ms() < deadline && proc_alive(x->api_pid, (uint64_t)x->api_start)) {
        waitpid(x->api_pid, NULL, WNOHANG); /* it may be our own child (--foreground) */
        usleep(20000);
    }
    if (proc_alive(x->api_pid, (uint64_t)x->api_start)) {
        fprintf(stderr, "WARNING: api pid %d did not exit in 40 s; killing it\n", x->api_pid);
        proc_terminate(x->api_pid, (uint64_t)x->api_start, 0);
    }
}

int cli_stop_experiment(struct db *db, const char *home, const char *id, int quiet)
{
    struct errbuf e;
    struct experiment x;
    struct unrecorded u = {0};
    if (exp_load(db, id, &x, &e) <= 0)
        return cli_error("experiment %s not found", id);
    if (!quiet)
        printf("Stopping experiment %s\n", id);
    /* recorded first, so that an api restarted meanwhile stops too */
    note_unrecorded(&u, exp_request_stop(db, id, &e), &e);
    end_api(&x);
    /* the experiment's platforms: one, or each of a hybrid list */
    int nplat, unended = 0, host_ended = 0;
    char **plats = platform_list_of(x.platform, x.config, &nplat);
    for (int i = 0; i < nplat; i++) {
        /* trials left behind by a dead api: end them through a worker of their platform */
        int left = trials_count(db, id, COUNT_STARTED, plats[i], &e) > 0;
        if (left && cli_drain(home, id, plats[i]) < 0)
            fprintf(stderr, "WARNING: could not end every %s trial of %s through its platform\n", plats[i], id);
        /* what the drain could not end (the database refused the requests) is ended from
         * the platform's files on this host */
        int host = left ? end_host_jobs(db, &x, plats[i]) : 0;
        if (host < 0)
            unended = 1;
        else
            host_ended += host;
        /* a platform with a cleanup op (the cluster platforms) stops/deletes every job of
         * the experiment, also ones the database lost track of */
        const struct platform_ops *ops = platform_find(plats[i]);
        if (ops && ops->cleanup)
            if (cli_platform_cleanup(home, id, plats[i]) < 0)
                fprintf(stderr, "WARNING: could not delete every %s job of %s (see the message above)\n", plats[i],
                        id);
        free(plats[i]);
    }
    free(plats);
    /* every process recorded for the experiment is gone when we return */
    end_processes(db, id, &u);
    int64_t left = trials_count(db, id, COUNT_STARTED, NULL, &e);
    note_unrecorded(&u, exp_forget_api(db, id, &e), &e);
    note_unrecorded(&u, exp_transition(db, id, "INITIALIZED,RUNNING,NO_MORE_TRIAL,TUNER_NO_MORE_TRIAL,STOPPING,VIEWED",
                                       "STOPPED", "nnictl stop", &e),
                    &e);
    exp_clear(&x);
    if (u.n || (left > 0 && host_ended))
        fprintf(stderr,
                "WARNING: the stop of %s could not be recorded%s%s; %s: run `nnictl stop %s` again (or `nnictl "
                "resume %s`) once the disk has room, and it records the trials' ends\n",
                id, u.n ? ": " : "", u.n ? u.why.msg : "",
                unended ? "some of its processes still run" : "every process of it has ended", id, id);
    if (left) {
        fprintf(stderr, "WARNING: %lld trial(s) of %s are not recorded as ended\n", (long long)left, id);
        return 1;
    }
    if (u.n)
        return 1;
    if (!quiet)
        printf("Stop experiment success.\n");
    return 0;
}
