/* lead.c: the trial's group leader, "trialq-trial DIR ATTEMPT" in ps. The supervisor
 * forks it into a process group of its own; it starts the trial's command as its child,
 * in that group, and writes the trial's end (.nni/state) itself when the command ends,
 * then ends what is left of the group, itself included.
 *
 * Why a process inside the trial's group records the end, and not only the supervisor
 * outside it: a supervisor killed with SIGKILL (the OOM killer, a careless kill) takes
 * no trial process with it, and the worker may be dead at that moment too. The leader
 * lives exactly as long as the trial's group does, so the end of a trial whose
 * supervisor died is still recorded, by a process of the trial, and a later worker can
 * tell the cases apart from the files and the process table alone: an end record (the
 * trial ended), a live leader (it runs: re-adopt it), or an empty group without a record
 * (nothing of it is left: the job vanished). A worker as child subreaper would lose the
 * exit status when the worker dies too; a new supervisor taking over a group cannot
 * wait() for processes that are not its children.
 *
 * A stop reaches the group as SIGINT (from the supervisor, or from a worker when the
 * supervisor is gone): the command gets it, we note that a stop reached the trial and
 * escalate to SIGKILL after KILL_GRACE_SECONDS, so a stop ends the trial even with no
 * supervisor left. The experiment's stop that the database refused (nnictl stop on a
 * full disk) comes with a mark (lead.h, STOP_SIGVAL_EXPERIMENT), which the end record
 * keeps: a resume records the trial USER_CANCELED, not "killed by signal 2".
 *
 * With TRIALQ_CHANNEL_PATH in the environment (trialCommandChannel: http) we also serve
 * the trial's HTTP command channel (supervise/chanserve.c) on a loopback port, and the
 * command inherits NNI_TRIAL_COMMAND_CHANNEL pointing there: the channel must live as
 * long as the trial does, and we are the one process that does exactly that (the
 * supervisor may be killed while the trial runs on; issue 23 and 24 together). A stop
 * closes the channel's polls (410) while metrics are still stored; what the command
 * sent before it ended is answered before its end is recorded. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <fcntl.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "supervise/chanserve.h"
#include "supervise/lead.h"

static volatile sig_atomic_t g_stop, g_alarm;
static void on_stop(int sig) { (void)sig; g_stop = 1; }
static void on_alarm(int sig) { (void)sig; g_alarm = 1; }
static void on_chld(int sig) { (void)sig; } /* only to wake sigsuspend */

/* A stop signal taken carried the experiment's mark (lead.h, STOP_SIGVAL_EXPERIMENT) */
static volatile sig_atomic_t g_experiment_stop;
static void (*g_stop_handler)(int);

static void note_stop(const siginfo_t *si)
{
    if (si->si_code == SI_QUEUE && si->si_value.sival_int == STOP_SIGVAL_EXPERIMENT)
        g_experiment_stop = 1;
}

static void on_stop_info(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    note_stop(si);
    g_stop_handler(sig);
}

void catch_stop_signals(void (*stop)(int), void (*alarm_)(int), sigset_t *waiting)
{
    static const int handled[] = {SIGTERM, SIGINT, SIGHUP, SIGALRM, SIGCHLD};
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++)
        sigaddset(&set, handled[i]);
    sigprocmask(SIG_BLOCK, &set, waiting);
    g_stop_handler = stop;
    struct sigaction sa;
    for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++) {
        memset(&sa, 0, sizeof sa);
        sigdelset(waiting, handled[i]);
        if (handled[i] == SIGCHLD || handled[i] == SIGALRM) {
            sa.sa_handler = handled[i] == SIGCHLD ? on_chld : alarm_;
        } else {
            sa.sa_sigaction = on_stop_info;
            sa.sa_flags = SA_SIGINFO;
        }
        sigaction(handled[i], &sa, NULL);
    }
}

void stop_group(pid_t lead)
{
    if (g_experiment_stop) /* first: the group's SIGINT, pending at the leader, then adds nothing */
        sigqueue(lead, SIGINT, (union sigval){.sival_int = STOP_SIGVAL_EXPERIMENT});
    kill(-lead, SIGINT);
}

void default_signals(void)
{
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGALRM, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

void exit_of(int status, int *code, int *sig)
{
    *code = 127;
    *sig = 0;
    if (WIFEXITED(status))
        *code = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) {
        *sig = WTERMSIG(status);
        *code = 128 + *sig;
    }
}

int trial_write_fault(int err)
{
    return err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS;
}

int record_retry(struct record_retry *r, int err)
{
    if (!trial_write_fault(err)) {
        fprintf(stderr, "trialq: cannot %s: %s\n", r->what, strerror(err));
        return 0;
    }
    if (!r->fault)
        r->fault = err;
    if (!r->said++)
        fprintf(stderr, "trialq: cannot %s: %s; retrying until it can%s\n", r->what, strerror(err),
                r->stopped ? " (for a while: a stop came)" : "");
    if (r->stopped && !r->give_up_at)
        r->give_up_at = mono_ms() + STOP_RECORD_GIVE_UP_SECONDS * 1000;
    if (r->stopped && mono_ms() >= r->give_up_at) {
        fprintf(stderr, "trialq: cannot %s: %s; given up %d s after a stop: the next nnictl stop or resume on a "
                "healthy disk records it\n", r->what, strerror(err), STOP_RECORD_GIVE_UP_SECONDS);
        return 0;
    }
    /* a stop is taken here too: the signals are blocked outside the waits (lead.h) */
    sigset_t stops;
    sigemptyset(&stops);
    sigaddset(&stops, SIGTERM);
    sigaddset(&stops, SIGINT);
    sigaddset(&stops, SIGHUP);
    struct timespec ts = {1, 0};
    siginfo_t si;
    if (sigtimedwait(&stops, &si, &ts) > 0) {
        note_stop(&si);
        if (!r->stopped) {
            r->stopped = 1;
            r->give_up_at = mono_ms() + STOP_RECORD_GIVE_UP_SECONDS * 1000;
        }
    }
    return 1;
}

int trial_state_reserve(const char *dir)
{
    char blanks[STATE_RESERVE_LEN], path[4096];
    memset(blanks, ' ', sizeof blanks);
    blanks[sizeof blanks - 1] = '\n';
    snprintf(path, sizeof path, "%s/.nni/state.next", dir);
    return write_file_replace(path, blanks, sizeof blanks, 0644);
}

/* The record written over the reserved room (same size: nothing to allocate on tmpfs,
 * ext4 or xfs; a copy-on-write filesystem may still refuse it), then renamed: a reader
 * finds .nni/state whole or not at all. */
static int write_reserved(const char *dir, const char *path, const char *state, int n)
{
    char next[4096], rec[STATE_RESERVE_LEN];
    snprintf(next, sizeof next, "%s/.nni/state.next", dir);
    if (n >= STATE_RESERVE_LEN)
        return -1;
    memset(rec, ' ', sizeof rec);
    memcpy(rec, state, (size_t)n - 1); /* without its newline: the room's last byte is one */
    rec[sizeof rec - 1] = '\n';
    int fd = open(next, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    int ok = fstat(fd, &st) == 0 && st.st_size == STATE_RESERVE_LEN &&
             pwrite(fd, rec, sizeof rec, 0) == (ssize_t)sizeof rec;
    int err = errno;
    close(fd);
    if (!ok) {
        errno = err;
        return -1;
    }
    return rename(next, path);
}

int trial_state_write(const char *dir, int code, int64_t end, int sig, int attempt, int stopped, int fault)
{
    char state[128], path[4096], next[4096];
    snprintf(path, sizeof path, "%s/.nni/state", dir);
    snprintf(next, sizeof next, "%s/.nni/state.next", dir);
    /* atomic (rename), not fsync'ed: it survives any process crash, and like the
     * database (synchronous=NORMAL) a power loss may lose it; the trial is then seen
     * as vanished and retried. An fsync here would delay every next trial by a disk
     * flush. */
    /* A full disk, an I/O error or a read-only filesystem cannot lose the end: we wait
     * (the trial's group alive, so no worker takes it for vanished and runs it again)
     * until it can be written, then go on; after a stop, for STOP_RECORD_GIVE_UP_SECONDS
     * only. Any other failure (the dir removed) is final. */
    char what[4200];
    snprintf(what, sizeof what, "record the trial's end in %s", path);
    struct record_retry r = {.what = what, .stopped = stopped};
    for (;;) {
        /* looked at each time: the experiment's stop may be taken by the retry's wait */
        int as = !stopped ? STOPPED_NOT : g_experiment_stop ? STOPPED_EXPERIMENT : STOPPED_KILL;
        int n = snprintf(state, sizeof state, "%d %lld %d %d %d %d\n", code, (long long)end, sig, attempt, as,
                         fault ? fault : r.fault);
        if (write_file_replace(path, state, (size_t)n, 0644) == 0) {
            unlink(next); /* the room is not needed */
            return 0;
        }
        int err = errno;
        if (trial_write_fault(err) && !fault && !r.fault) {
            r.fault = err; /* the end's own write met it: it goes with the end */
            continue;
        }
        if (trial_write_fault(err) && write_reserved(dir, path, state, n) == 0)
            return 0;
        if (!record_retry(&r, err))
            return -1;
    }
}

int trial_state_of(const char *dir, int attempt)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.nni/state", dir);
    char *s = read_file(path, NULL);
    long long v[4];
    int ok = s && sscanf(s, "%lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3]) == 4 && v[3] == attempt;
    free(s);
    return ok;
}

static struct chanserve *g_chan; /* the trial's HTTP channel, when it has one */
static int g_fault;              /* the trial dir's filesystem was seen full, read-only or failing */
static int64_t g_fault_next;     /* mono ms of the next look */

/* Looks (at most once a second, and at the end) whether the filesystem of the trial's
 * directory is full (no block or inode left to an unprivileged writer), read-only or
 * failing: the first such fault goes with the trial's end, which then names it. */
static void look_at_disk(const char *dir, int now)
{
    if (g_fault || (!now && mono_ms() < g_fault_next))
        return;
    g_fault_next = mono_ms() + 1000;
    struct statvfs sv;
    if (statvfs(dir, &sv) < 0)
        g_fault = errno == EIO ? EIO : 0;
    else if (sv.f_flag & ST_RDONLY)
        g_fault = EROFS;
    else if (sv.f_bavail == 0 || (sv.f_files > 0 && sv.f_favail == 0))
        g_fault = ENOSPC;
}

/* Serves what the channel waits for until a handled signal comes or the wait runs out:
 * the leader's sigsuspend. */
static void wait_serving(const sigset_t *waiting)
{
    struct pollfd fds[CHANSERVE_MAX_FDS];
    int nfds = 0, timeout_ms = -1;
    if (g_chan)
        nfds = chanserve_pollfds(g_chan, fds, &timeout_ms);
    if (timeout_ms < 0 || timeout_ms > 1000)
        timeout_ms = 1000; /* look_at_disk's pace */
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    if (ppoll(fds, (nfds_t)nfds, timeout_ms < 0 ? NULL : &ts, waiting) < 0)
        for (int i = 0; i < nfds; i++)
            fds[i].revents = 0;
    if (g_chan)
        chanserve_run(g_chan, fds, nfds);
}

/* The end is written before the group is killed (we are in it): a reader that finds
 * the group empty finds the record too. What the trial sent on its channel before it
 * ended is answered (and stored) first. */
static __attribute__((noreturn)) void end_group(const char *dir, int code, int sig, int attempt, int stopped)
{
    if (g_chan) {
        struct pollfd fds[CHANSERVE_MAX_FDS];
        int timeout_ms, nfds = chanserve_pollfds(g_chan, fds, &timeout_ms);
        if (poll(fds, (nfds_t)nfds, 0) < 0)
            nfds = 0;
        chanserve_run(g_chan, fds, nfds);
        chanserve_close(g_chan);
        g_chan = NULL;
    }
    look_at_disk(dir, 1);
    /* not written (a stop came and the disk still refuses it): the next healthy stop or
     * resume records the end */
    trial_state_write(dir, code, now_ms(), sig, attempt, stopped, g_fault);
    kill(0, SIGKILL); /* nothing the trial started outlives it; ends us too */
    _exit(code);
}

void trial_lead(const char *dir, int attempt, const char *shell, const char *command)
{
    /* in ps: not the supervisor (pgrep -f trialq-supervise finds only those); the title
     * overwrites our arguments, which the strings may point into */
    dir = xstrdup(dir);
    shell = xstrdup(shell);
    command = xstrdup(command);
    proc_title_set("trialq-trial %s %d", dir, attempt);
    prctl(PR_SET_NAME, "trialq-trial");
    sigset_t waiting;
    catch_stop_signals(on_stop, on_alarm, &waiting);
    const char *chan_path = getenv("TRIALQ_CHANNEL_PATH");
    if (chan_path) {
        char why[256];
        g_chan = chanserve_open(dir, getenv("NNI_TRIAL_JOB_ID"), chan_path, why, sizeof why);
        if (!g_chan) {
            fprintf(stderr, "trialq: %s\n", why);
            end_group(dir, 127, 0, attempt, 0);
        }
        setenv("NNI_TRIAL_COMMAND_CHANNEL", chanserve_url(g_chan), 1); /* the command inherits it */
        unsetenv("TRIALQ_CHANNEL_PATH");
    }

    pid_t pid = fork();
    if (pid == 0) {
        /* a stop sent to the group from now on is pending here (blocked) and acts, with
         * the default disposition, once unblocked */
        default_signals();
        execl(shell, shell, "-c", command, (char *)NULL);
        fprintf(stderr, "trialq: cannot run %s: %s\n", shell, strerror(errno));
        _exit(127);
    }
    if (pid < 0) {
        fprintf(stderr, "trialq: cannot start the trial: %s\n", strerror(errno));
        end_group(dir, 127, 0, attempt, 0);
    }
    int stopped = 0, status = 0;
    for (;;) {
        if (g_stop && !stopped) {
            stopped = 1; /* the command got the same signal: the group's */
            alarm(KILL_GRACE_SECONDS);
            if (g_chan)
                chanserve_closing(g_chan);
        }
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR)
            end_group(dir, 127, 0, attempt, stopped);
        if (g_alarm) /* the command did not end on the stop */
            end_group(dir, 128 + SIGKILL, SIGKILL, attempt, 1);
        look_at_disk(dir, 0);
        wait_serving(&waiting); /* returns after any handled signal, SIGCHLD included */
    }
    int code, sig;
    exit_of(status, &code, &sig);
    end_group(dir, code, sig, attempt, stopped);
}
