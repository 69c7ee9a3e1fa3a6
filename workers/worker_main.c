/* worker_main.c: `trialq worker`: its options, its signals, and the wait between the
 * passes of the loop (workers/worker.c). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/usage.h"
#include "workers/worker.h"

struct worker_opts {
    const char *platform, *exp_id, *home;
    int parent_death, drain, cleanup;
};

static const struct option worker_options[] = {
    {"platform", required_argument, NULL, 'p'},
    {"experiment", required_argument, NULL, 'e'},
    {"home", required_argument, NULL, 'H'},
    {"log-level", required_argument, NULL, 'l'},
    {"parent-death", no_argument, NULL, 'D'},
    {"drain", no_argument, NULL, 'X'},
    {"cleanup", no_argument, NULL, 'C'},
    {NULL, 0, NULL, 0},
};

static void list_platforms(FILE *f)
{
    char *names = platform_names_dup(", ");
    fprintf(f, "\nPLATFORM: %s\n", names);
    free(names);
}

const struct role worker_role = {
    .usage = "trialq worker --platform PLATFORM --experiment ID [--home DIR] [--log-level L]",
    .summary = "Runs the experiment's trials on one training platform; the api starts it (or "
               "trialq-worker@.service), with --parent-death: it ends with the api. nnictl stop starts one "
               "with --drain (it ends every started trial of the platform, then exits) or --cleanup (the "
               "platform removes what it holds for the experiment).",
    .shortopts = "p:e:H:l:DXC",
    .opts = worker_options,
    .more = list_platforms,
};

/* One option into o (role_getopt's set). */
static int set_opt(void *ctx, int c, char *arg)
{
    struct worker_opts *o = ctx;
    enum log_level lvl;
    switch (c) {
    case 'p': o->platform = arg; break;
    case 'e': o->exp_id = arg; break;
    case 'H': o->home = arg; break;
    case 'l': if (log_level_parse(arg, &lvl) == 0) log_set_level(lvl); break;
    case 'D': o->parent_death = 1; break;
    case 'X': o->drain = 1; break;
    case 'C': o->cleanup = 1; break;
    default: return -1;
    }
    return 0;
}

/* 0, or 2 after the usage text. */
static int parse_opts(int argc, char **argv, struct worker_opts *o)
{
    memset(o, 0, sizeof *o);
    o->platform = platform_all[0]->name;
    if (role_getopt(&worker_role, argc, argv, set_opt, o) != 0)
        return 2;
    if (!o->exp_id)
        return role_usage(&worker_role);
    return 0;
}

/* SIGCHLD, SIGUSR1 and the ends (SIGTERM, SIGINT, SIGHUP) come through a signalfd. */
static int block_signals(void)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGUSR1);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* Our faults reach the user even when the database cannot be written; the process row
 * tells nnictl stop and hybrid fairness that we run. */
static void announce(struct worker *w, int64_t *proc_row)
{
    struct errbuf e;
    char *fault_dir = xasprintf("%s/faults", w->exp.exp_dir);
    char *fault_role = xasprintf("worker-%s", w->ops->name);
    if (fault_publish_to(fault_dir, fault_role) < 0)
        log_warn("cannot create %s/%s.%d: %s; faults are only logged", fault_dir, fault_role, (int)getpid(),
                 strerror(errno));
    free(fault_dir);
    free(fault_role);
    char *role = xasprintf("worker:%s", w->ops->name);
    if (proc_register(w->db, w->exp_id, role, getpid(), proc_start_time(getpid()), proc_row, &e) < 0)
        log_warn("cannot register process: %s", e.msg);
    free(role);
    log_info("worker %s for experiment %s started", w->owner, w->exp_id);
}

/* Waits until the next pass is due or a signal comes; reaps children. -1: poll failed. */
static int wait_for_work(struct worker *w, int sfd)
{
    int64_t now = mono_ms(), next = worker_next_due(w);
    if (w->drain && now + 100 < next)
        next = now + 100;
    int timeout = next > now ? (int)(next - now) : 0;
    if (w->wake && !w->drain)
        timeout = 0; /* a trial ended during the last pass: claim the next one now */
    struct pollfd pfd = {.fd = sfd, .events = POLLIN};
    if (poll(&pfd, 1, timeout) < 0 && errno != EINTR)
        return -1;
    int got_chld = 0;
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == sizeof si) {
        switch (si.ssi_signo) {
        case SIGCHLD: got_chld = 1; break;
        case SIGUSR1: w->wake = 1; break;
        default: w->stop = 1; break;
        }
    }
    if (got_chld && !w->stop) {
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
            worker_reaped(w, pid, status);
    }
    return 0;
}

static int run_loop(struct worker *w)
{
    int sfd = block_signals();
    int64_t proc_row = 0;
    struct errbuf e;
    announce(w, &proc_row);
    worker_start(w, mono_ms());
    while (!w->stop) {
        if (wait_for_work(w, sfd) < 0 || w->stop)
            break;
        worker_step(w, mono_ms());
        log_input_flush(0); /* the counts of repeated malformed input, once a minute */
    }
    log_input_flush(1);
    log_info("worker exiting; %d trial(s) stay with their supervisors", w->ntrials);
    proc_ended(w->db, proc_row, "exited", &e);
    close(sfd);
    return w->exit_code;
}

int worker_main(int argc, char **argv)
{
    struct worker_opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc)
        return rc;
    /* started by an api: end with it (its trials live on under their supervisors) */
    if (o.parent_death) {
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1)
            return 0;
    }
    log_set_module("worker");
    db_set_actor("worker");
    const struct platform_ops *ops = platform_find(o.platform);
    if (!ops) {
        fprintf(stderr, "trialq worker: unknown platform '%s'\n", o.platform);
        return 2;
    }
    struct worker w;
    struct errbuf e;
    if (worker_open(&w, ops, o.home, o.exp_id, &e) < 0) {
        log_error("%s", e.msg);
        return 1;
    }
    w.drain = o.drain;
    if (ops->init(&w, &e) < 0) {
        log_error("platform %s: %s", ops->name, e.msg);
        w.platform = NULL; /* nothing to destroy */
        rc = 1;
    } else if (o.cleanup) {
        /* nnictl stop: the platform removes what it holds for the experiment */
        if (ops->cleanup && ops->cleanup(&w, &e) < 0) {
            log_error("platform %s: cleanup: %s", ops->name, e.msg);
            rc = 1;
        }
    } else {
        rc = run_loop(&w);
    }
    worker_close(&w);
    return rc;
}
