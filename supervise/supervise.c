/* trialq-supervise: the per-trial supervisor of the local platform, a separate tiny
 * program so that the worker starts it with posix_spawn (no copy of the worker's
 * memory) and so that it outlives the worker.
 *
 *   trialq-supervise TRIAL_DIR ATTEMPT SHELL CODE_DIR COMMAND
 *
 * fd 3 is the trial's job lock (.nni/job.lock), flock'ed by the worker before the
 * spawn: holding it for our whole life tells any later worker that the job lives.
 * We fork the trial's group leader ("trialq-trial", supervise/lead.c) into a process
 * group of its own, with our environment (the worker prepared NNI's variables),
 * stdout/stderr to trial.stdout and trial.stderr, in CODE_DIR; it runs COMMAND with
 * SHELL -c and records the trial's end itself, so that the end is not lost when we are
 * killed. A stop (SIGTERM, SIGINT or SIGHUP to us) is passed to the trial's whole
 * group as SIGINT, as NNI 3 kills a trial (Python sees KeyboardInterrupt and may save
 * its work), and escalated to SIGKILL after 5 s (the leader escalates too). When the
 * leader died without recording an end (killed itself), we kill what is left of the
 * group and write .nni/state = "<exit code> <end ms> <signal> <attempt> <stopped>
 * <fault>" (atomically; stopped: 1 when a stop was forwarded to the trial before it
 * ended, so that a kill asked for after the trial ended by itself does not name its end;
 * 2 when that stop was the experiment's, sent by nnictl stop itself with a mark because
 * the database refused it: see lead.h, STOP_SIGVAL_EXPERIMENT).
 * The job lock holds "<attempt> <leader pid> <its start ticks> <our pid> <our start
 * ticks>" before the trial runs: a supervisor killed at any moment leaves either no
 * trial or one the next worker can find, watch and end.
 *
 * With TRIALQ_CHANNEL_PATH in our environment (trialCommandChannel: http), the leader,
 * not we, serves the trial's HTTP command channel (supervise/chanserve.c): it lives
 * exactly as long as the trial's group, so the channel outlives the api, the worker and
 * us, as the trial does. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "supervise/lead.h"

#define LOCK_FD 3

static volatile sig_atomic_t g_term, g_alarm;
static void on_term(int sig) { (void)sig; g_term = 1; }
static void on_alarm(int sig) { (void)sig; g_alarm = 1; }

/* The forked child: once released through go (its pid recorded), it becomes the trial's
 * group leader, with stdin from /dev/null and stdout/stderr to fds ofd and efd. */
static void run_leader(int go[2], int nullfd, int ofd, int efd, const char *dir, int attempt, const char *shell,
                       const char *code_dir, const char *command) __attribute__((noreturn));
static void run_leader(int go[2], int nullfd, int ofd, int efd, const char *dir, int attempt, const char *shell,
                       const char *code_dir, const char *command)
{
    setpgid(0, 0);
    /* the default dispositions, then no signal blocked, before the wait: a stop
     * forwarded early ends us */
    default_signals();
    close(go[1]);
    char c;
    ssize_t got;
    while ((got = read(go[0], &c, 1)) < 0 && errno == EINTR)
        ;
    if (got != 1)
        _exit(125);
    if (nullfd >= 0) dup2(nullfd, 0);
    if (ofd >= 0) dup2(ofd, 1);
    if (efd >= 0) dup2(efd, 2);
    close_fds_from(3); /* the job lock stays with the supervisor only */
    if (chdir(code_dir) < 0) {
        fprintf(stderr, "trialq: cannot enter trialCodeDirectory %s: %s\n", code_dir, strerror(errno));
        _exit(126);
    }
    trial_lead(dir, attempt, shell, command);
}

/* The job lock file says which process group is the trial's (its leader records the end
 * when we are gone), and who we are (our pid is also the session's id); the end record's
 * room is taken too (trial_state_reserve). 0 when recorded; -1 when a stop came while the
 * disk refused it (then the trial must not run), or on another failure (then it runs, as
 * before: a later worker finds its supervisor by the lock). */
static int record_job(const char *dir, int attempt, pid_t pid)
{
    char job[160];
    int n = snprintf(job, sizeof job, "%d %d %llu %d %llu\n", attempt, (int)pid,
                     (unsigned long long)proc_start_time(pid), (int)getpid(),
                     (unsigned long long)proc_start_time(getpid()));
    /* a full disk, an I/O error, a read-only filesystem: the trial waits (it has not
     * started) until the record can be written, as its end does (lead.c); a trial run
     * without it would be taken for vanished by a later worker and run again. Written
     * over the worker's shorter "<attempt>" before the file is cut to its size: the
     * page it has already is enough on a full tmpfs. */
    char what[4200];
    snprintf(what, sizeof what, "record the job in %s/.nni/job.lock", dir);
    struct record_retry r = {.what = what, .stopped = g_term};
    while (pwrite(LOCK_FD, job, (size_t)n, 0) != n || ftruncate(LOCK_FD, n) < 0 || trial_state_reserve(dir) < 0) {
        if (!record_retry(&r, errno))
            return r.stopped ? -1 : 0;
    }
    if (r.stopped)
        g_term = 1; /* taken by the wait: passed on to the trial at once */
    return 0;
}

/* Wait for the leader's end, passing a stop on to its group (SIGINT, then SIGKILL after
 * the grace). Returns whether a stop was passed on; *status is the leader's. */
static int wait_leader(pid_t pid, const sigset_t *waiting, int *status)
{
    int forwarded = 0;
    *status = 0;
    for (;;) {
        if (g_term && !forwarded) {
            stop_group(pid);
            alarm(KILL_GRACE_SECONDS);
            forwarded = 1;
        }
        if (g_alarm) {
            kill(-pid, SIGKILL);
            g_alarm = 0;
        }
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            break;
        sigsuspend(waiting); /* returns after any handled signal, SIGCHLD included */
    }
    return forwarded;
}

/* trial.stdout or trial.stderr. On a full disk (an I/O error, a read-only filesystem)
 * the trial waits until it can be opened, as for its job record (record_job): it has not
 * started, and without the file its output would go to the experiment's own log. */
static int open_output(const char *path)
{
    char what[4200];
    snprintf(what, sizeof what, "open %s", path);
    struct record_retry r = {.what = what, .stopped = g_term};
    int fd;
    while ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0 && record_retry(&r, errno))
        ;
    if (r.stopped)
        g_term = 1; /* taken by the wait */
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: trialq-supervise TRIAL_DIR ATTEMPT SHELL CODE_DIR COMMAND\n");
        return 2;
    }
    const char *dir = argv[1], *shell = argv[3], *code_dir = argv[4], *command = argv[5];
    int attempt = atoi(argv[2]);
    proc_title_init(argc, argv);
    /* the signals we act on are blocked except inside sigsuspend: one that comes between
     * a look at the flags and the wait cannot be missed */
    sigset_t waiting;
    catch_stop_signals(on_term, on_alarm, &waiting);

    char out[4096], err[4096];
    snprintf(out, sizeof out, "%s/trial.stdout", dir);
    snprintf(err, sizeof err, "%s/trial.stderr", dir);
    int ofd = open_output(out);
    int efd = open_output(err);
    if (g_term) { /* stopped while the disk refused even these: it ends without running */
        trial_state_write(dir, 128 + SIGTERM, now_ms(), 0, attempt, 1, 0);
        return 0;
    }
    int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    /* the child waits on go[0] until its pid is recorded: if we die first, it reads EOF
     * and ends without running anything */
    int go[2];
    if (pipe2(go, O_CLOEXEC) < 0) {
        trial_state_write(dir, 127, now_ms(), 0, attempt, 0, 0);
        return 1;
    }

    pid_t pid = fork();
    if (pid == 0)
        run_leader(go, nullfd, ofd, efd, dir, attempt, shell, code_dir, command);
    close(go[0]);
    if (pid < 0) {
        trial_state_write(dir, 127, now_ms(), 0, attempt, 0, 0);
        return 1;
    }
    setpgid(pid, pid); /* both sides set it: no race with an early kill */
    if (record_job(dir, attempt, pid) < 0) {
        /* stopped before it could be recorded: it ends without running (EOF on go) */
        close(go[1]);
        waitpid(pid, NULL, 0);
        trial_state_write(dir, 128 + SIGTERM, now_ms(), 0, attempt, 1, 0);
        return 0;
    }
    /* recorded (or not recordable for another reason: then the trial still runs, as
     * before): release it */
    while (write(go[1], "g", 1) < 0 && errno == EINTR)
        ;
    close(go[1]);

    int status;
    int forwarded = wait_leader(pid, &waiting, &status);
    if (trial_state_of(dir, attempt))
        return 0; /* the leader recorded the trial's end and ended the group */
    /* the leader itself was killed (by our escalation, or by someone else): the trial
     * ends with it */
    int64_t end = now_ms();
    int code, sig;
    exit_of(status, &code, &sig);
    kill(-pid, SIGKILL); /* nothing the trial started outlives it */
    char chan_file[4096]; /* the channel the leader served, if any, went with it */
    snprintf(chan_file, sizeof chan_file, "%s/.nni/channel", dir);
    unlink(chan_file);
    /* given up after a stop when the disk refuses it: the next stop or resume records it */
    trial_state_write(dir, code, end, sig, attempt, forwarded, 0);
    return 0;
}
