/* trialq-supervise: the per-trial supervisor of the local platform, a separate tiny
 * program so that the worker starts it with posix_spawn (no copy of the worker's
 * memory) and so that it outlives the worker.
 *
 *   trialq-supervise TRIAL_DIR ATTEMPT SHELL CODE_DIR COMMAND
 *
 * fd 3 is the trial's job lock (.nni/job.lock), flock'ed by the worker before the
 * spawn: holding it for our whole life tells any later worker that the job lives.
 * We start COMMAND with SHELL -c in CODE_DIR, in its own process group, with our
 * environment (the worker prepared NNI's variables), stdout/stderr to trial.stdout and
 * trial.stderr. A stop (SIGTERM, SIGINT or SIGHUP to us) is passed to the trial's whole
 * group as SIGINT, as NNI 3 kills a trial (Python sees KeyboardInterrupt and may save
 * its work), and escalated to SIGKILL after 5 s; when the trial ends, kill what is left of its group and write
 * .nni/state = "<exit code> <end ms> <signal> <attempt> <stopped>" (atomically;
 * stopped: 1 when a stop was forwarded to the trial before it ended, so that a kill
 * asked for after the trial ended by itself does not name its end). The trial's pid is
 * in the job lock before the trial runs: a supervisor killed at any moment leaves
 * either no trial or one the next worker can find and end.
 *
 * With TRIALQ_CHANNEL_PATH in our environment (trialCommandChannel: http), we also serve
 * the trial's HTTP command channel (supervise/chanserve.c) on a loopback port for as
 * long as the trial runs, and the trial's NNI_TRIAL_COMMAND_CHANNEL points there: the
 * channel outlives the api and the worker as the trial does. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "supervise/chanserve.h"

#define LOCK_FD 3
#define KILL_GRACE_SECONDS 5

static volatile sig_atomic_t g_term, g_alarm;
static void on_term(int sig) { (void)sig; g_term = 1; }
static void on_alarm(int sig) { (void)sig; g_alarm = 1; }
static void on_chld(int sig) { (void)sig; } /* only to wake sigsuspend */

static void write_state(const char *dir, int code, int64_t end, int sig, int attempt, int stopped)
{
    char state[128], path[4096];
    int n = snprintf(state, sizeof state, "%d %lld %d %d %d\n", code, (long long)end, sig, attempt, stopped);
    snprintf(path, sizeof path, "%s/.nni/state", dir);
    /* atomic (rename), not fsync'ed: it survives any process crash, and like the
     * database (synchronous=NORMAL) a power loss may lose it; the trial is then seen
     * as vanished and retried. An fsync here would delay every next trial by a disk
     * flush. */
    write_file_replace(path, state, (size_t)n, 0644);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: trialq-supervise TRIAL_DIR ATTEMPT SHELL CODE_DIR COMMAND\n");
        return 2;
    }
    const char *dir = argv[1], *shell = argv[3], *code_dir = argv[4], *command = argv[5];
    int attempt = atoi(argv[2]);
    /* the signals we act on are blocked except inside sigsuspend: one that comes between
     * a look at the flags and the wait cannot be missed */
    sigset_t handled, waiting;
    sigemptyset(&handled);
    sigaddset(&handled, SIGTERM);
    sigaddset(&handled, SIGINT);
    sigaddset(&handled, SIGHUP);
    sigaddset(&handled, SIGALRM);
    sigaddset(&handled, SIGCHLD);
    sigprocmask(SIG_BLOCK, &handled, &waiting);
    sigdelset(&waiting, SIGTERM);
    sigdelset(&waiting, SIGINT);
    sigdelset(&waiting, SIGHUP);
    sigdelset(&waiting, SIGALRM);
    sigdelset(&waiting, SIGCHLD);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sigaction(SIGCHLD, &sa, NULL);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);

    char out[4096], err[4096];
    snprintf(out, sizeof out, "%s/trial.stdout", dir);
    snprintf(err, sizeof err, "%s/trial.stderr", dir);
    int ofd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int efd = open(err, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct chanserve *chan = NULL;
    const char *chan_path = getenv("TRIALQ_CHANNEL_PATH");
    if (chan_path) {
        char why[256];
        chan = chanserve_open(dir, getenv("NNI_TRIAL_JOB_ID"), chan_path, why, sizeof why);
        if (!chan) {
            if (efd >= 0)
                dprintf(efd, "trialq: %s\n", why);
            write_state(dir, 127, now_ms(), 0, attempt, 0);
            return 1;
        }
        setenv("NNI_TRIAL_COMMAND_CHANNEL", chanserve_url(chan), 1); /* the trial inherits it */
        unsetenv("TRIALQ_CHANNEL_PATH");
    }
    /* the child waits on go[0] until its pid is recorded: if we die first, it reads EOF
     * and ends without running anything */
    int go[2];
    if (pipe2(go, O_CLOEXEC) < 0) {
        write_state(dir, 127, now_ms(), 0, attempt, 0);
        return 1;
    }

    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        /* the default dispositions, then no signal blocked, before the wait: a stop
         * forwarded early ends us */
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGALRM, SIG_DFL);
        signal(SIGCHLD, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
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
        execl(shell, shell, "-c", command, (char *)NULL);
        fprintf(stderr, "trialq: cannot run %s: %s\n", shell, strerror(errno));
        _exit(127);
    }
    close(go[0]);
    if (pid < 0) {
        write_state(dir, 127, now_ms(), 0, attempt, 0);
        return 1;
    }
    setpgid(pid, pid); /* both sides set it: no race with an early kill */
    /* the job lock file says which process group to end if we are gone */
    char job[128];
    int n = snprintf(job, sizeof job, "%d %d %llu\n", attempt, (int)pid, (unsigned long long)proc_start_time(pid));
    if (ftruncate(LOCK_FD, 0) == 0 && pwrite(LOCK_FD, job, (size_t)n, 0) != n)
        fprintf(stderr, "trialq-supervise: cannot record the job in %s\n", dir);
    /* recorded (or not recordable: then the trial still runs, as before): release it */
    while (write(go[1], "g", 1) < 0 && errno == EINTR)
        ;
    close(go[1]);

    int forwarded = 0, status = 0;
    for (;;) {
        if (g_term && !forwarded) {
            kill(-pid, SIGINT);
            alarm(KILL_GRACE_SECONDS);
            forwarded = 1;
        }
        if (g_alarm) {
            kill(-pid, SIGKILL);
            g_alarm = 0;
        }
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            break;
        /* returns after any handled signal, SIGCHLD included, or what the channel waits for */
        struct pollfd fds[CHANSERVE_MAX_FDS];
        int nfds = 0, timeout_ms = -1;
        if (chan) {
            if (forwarded)
                chanserve_closing(chan);
            nfds = chanserve_pollfds(chan, fds, &timeout_ms);
        }
        struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
        if (ppoll(fds, (nfds_t)nfds, timeout_ms < 0 ? NULL : &ts, &waiting) < 0)
            for (int i = 0; i < nfds; i++)
                fds[i].revents = 0;
        if (chan)
            chanserve_run(chan, fds, nfds);
    }
    if (chan) { /* what the trial sent before it ended is answered (and stored) first */
        struct pollfd fds[CHANSERVE_MAX_FDS];
        int timeout_ms, nfds = chanserve_pollfds(chan, fds, &timeout_ms);
        if (poll(fds, (nfds_t)nfds, 0) < 0)
            nfds = 0;
        chanserve_run(chan, fds, nfds);
        chanserve_close(chan);
    }
    int64_t end = now_ms();
    int code = 127, sig = 0;
    if (WIFEXITED(status))
        code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) {
        sig = WTERMSIG(status);
        code = 128 + sig;
    }
    kill(-pid, SIGKILL); /* nothing the trial started outlives it */
    write_state(dir, code, end, sig, attempt, forwarded);
    return 0;
}
