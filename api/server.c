/* server.c: `trialq api --experiment ID`: the event loop. Signals are handled inside
 * the loop (libevent), never in signal context. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/http.h>

#include "api/api.h"
#include "api/assess.h"
#include "api/channel.h"
#include "api/children.h"
#include "api/dispatcher.h"
#include "api/guard.h"
#include "api/launch.h"
#include "api/prom.h"
#include "api/routes.h"
#include "api/scheduler.h"
#include "api/tensorboard.h"
#include "common/secrets.h"
#include "common/usage.h"
#include "schema/counters.h"
#include "schema/exp_api.h"
#include "schema/trial_sets.h"

#define TICK_MS 500

/* exit codes nnictl understands */
#define EXIT_PORT_BUSY 3
#define EXIT_CONFIG 4

/* A write at start that met a fault of the database (a full disk, an I/O error: common/
 * fault.c, already logged) is tried again every 100 ms for up to a minute, instead of
 * the api exiting (the experiment would not start) or going on without it (an
 * experiment left INITIALIZED, which never schedules a trial). */
static int retry_at_start(int rc, int64_t *until)
{
    if (rc >= 0 || !fault_has("database"))
        return 0;
    if (*until == 0)
        *until = mono_ms() + 60000;
    if (mono_ms() >= *until)
        return 0;
    usleep(100000);
    return 1;
}

static void on_signal(evutil_socket_t sig, short ev, void *arg)
{
    (void)ev;
    struct api *a = arg;
    switch (sig) {
    case SIGCHLD:
        children_reap(a);
        break;
    case SIGUSR1:
        sched_tick(a);
        break;
    case SIGTERM:
    case SIGINT: {
        /* `nnictl stop` records desired_status STOPPED before it signals: then this is
         * a stop of the experiment. A bare SIGTERM (systemctl restart, a reboot) ends
         * only this process; the trials run on and the next api re-attaches them. */
        char *want = NULL;
        struct errbuf e;
        exp_desired_status(a->db, a->exp_id, &want, &e);
        /* Started by NNI's launcher, SIGTERM is what it is to NNI's manager (NNI's
         * nnictl stop sends it, then waits for the pid): a stop of the experiment. */
        int stop = a->nni_launched || (want && strcmp(want, "STOPPED") == 0);
        if (a->readonly || !stop) {
            log_info("%s: exiting; the experiment's trials keep running", sig == SIGTERM ? "SIGTERM" : "SIGINT");
            a->detach = 1;
            event_base_loopbreak(a->base);
        } else {
            sched_begin_stop(a, want && strcmp(want, "STOPPED") == 0 ? "stop requested" : "SIGTERM");
        }
        free(want);
        break;
    }
    default:
        break;
    }
}

/* The kept counts GET /metrics reads, brought up to date: the metrics stored since the
 * last fold (migration 020), by whichever api comes first, at most FOLD_MAX a tick so
 * that a backlog (the api was down while workers stored metrics) does not stall the
 * loop; and this experiment's trial gauges (migration 021). A failure (a full disk) is
 * tried again next tick: the metric readers count the backlog meanwhile. */
#define FOLD_MAX 100000
static void update_counts(struct api *a)
{
    struct errbuf e;
    int64_t folded;
    int changed;
    if (a->readonly)
        return;
    if (metric_fold(a->db, FOLD_MAX, &folded, &e) < 0)
        log_limited(LOG_WARN, "counting the new metrics: %s", e.msg);
    if (counters_refresh(a->db, a->exp_id, &changed, &e) < 0)
        log_limited(LOG_WARN, "counting the trials: %s", e.msg);
}

static void on_tick(evutil_socket_t fd, short ev, void *arg)
{
    (void)fd; (void)ev;
    struct api *a = arg;
    prom_note_tick(mono_ms(), TICK_MS); /* how late it runs: GET /metrics */
    children_restart_due(a);
    tensorboard_tick(a);
    sched_tick(a);
    update_counts(a);
    log_input_flush(0); /* the counts of repeated malformed input, once a minute */
}

static const struct option api_options[] = {
    {"experiment", required_argument, NULL, 'e'},
    {"action", required_argument, NULL, 'a'},
    {"home", required_argument, NULL, 'H'},
    {"port", required_argument, NULL, 'p'},
    {"no-workers", no_argument, NULL, 'W'},
    {"log-level", required_argument, NULL, 'l'},
    /* NNI's manager's (ts/nni_manager/common/globals/arguments.ts) */
    {"experiment-id", required_argument, NULL, 'i'},
    {"experiments-directory", required_argument, NULL, 'D'},
    {"mode", required_argument, NULL, 'M'},
    {"foreground", required_argument, NULL, 'F'},
    {"url-prefix", required_argument, NULL, 'U'},
    {"tuner-command-channel", required_argument, NULL, 'T'},
    {"python-interpreter", required_argument, NULL, 'P'},
    {"debug", optional_argument, NULL, 'd'},
    {NULL, 0, NULL, 0},
};

const struct role api_role = {
    .usage = "trialq api --experiment ID [--action create|resume|view] [--home DIR] [--port N] [--no-workers] "
             "[--log-level L]\n"
             "trialq api --port N --experiment-id ID --action create|resume|view --mode PLATFORM "
             "--experiments-directory DIR --log-level L --foreground true|false [--url-prefix U] "
             "[--tuner-command-channel URL] --python-interpreter PY [--debug[=true|false]]",
    .summary = "The experiment's manager: the REST API and web UI on its port, the tuner, the scheduler and "
               "(without --no-workers) the workers it starts. nnictl create, resume and view start it, and so "
               "do the systemd units. The second form is NNI's manager command line, which NNI's launcher "
               "uses through trialq's nni_node.",
    .shortopts = "e:a:H:p:Wl:",
    .opts = api_options,
};

struct api_opts {
    const char *home;
    const char *action;     /* create | resume | view */
    int port;               /* 0: the experiment's */
    const char *url_prefix; /* NNI's launcher: --url-prefix */
};

/* NNI's experiment ids: ^[A-Za-z0-9_-]{1,32}$ (its id is a directory name here) */
static int nni_id_ok(const char *id)
{
    size_t n = strlen(id);
    return n >= 1 && n <= 32 && strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

struct api_args {
    struct api *a;
    struct api_opts *o;
};

/* One option of the command line into a and o (role_getopt's set). */
static int set_arg(void *ctx, int c, char *arg)
{
    struct api *a = ((struct api_args *)ctx)->a;
    struct api_opts *o = ((struct api_args *)ctx)->o;
    switch (c) {
    case 'e': a->exp_id = arg; break;
    case 'i': a->exp_id = arg, a->nni_launched = 1; break;
    case 'D': free(a->exp_root), a->exp_root = path_abs(".", arg); break;
    case 'U': o->url_prefix = arg; break;
    /* the config's trainingService is the platform; trialq has its own foreground
     * and tuner channel; the interpreter is the one with NNI for its Python tuners */
    case 'M': case 'F': case 'T': break;
    case 'P': setenv("TRIALQ_PYTHON", arg, 0); break;
    case 'd': if (!arg || strcmp(arg, "false") != 0) a->log_level = "debug"; break;
    case 'a': o->action = arg; break;
    case 'H': o->home = arg; break;
    case 'p': o->port = atoi(arg); break;
    case 'W': a->spawn_workers = 0; break;
    case 'l': a->log_level = arg; break;
    default: return -1;
    }
    return 0;
}

/* The command line into a and o: 0, or the exit code (2, usage shown). */
static int parse_args(struct api *a, int argc, char **argv, struct api_opts *o)
{
    a->spawn_workers = 1;
    a->next_index = -1;
    a->log_level = "info";
    o->home = NULL;
    o->action = "create";
    o->port = 0;
    o->url_prefix = NULL;
    struct api_args args = {a, o};
    if (role_getopt(&api_role, argc, argv, set_arg, &args) != 0)
        return 2;
    if (!a->exp_id || optind < argc)
        return role_usage(&api_role);
    if (a->nni_launched && !nni_id_ok(a->exp_id)) {
        log_error("--experiment-id %.64s: an id is 1 to 32 letters, digits, _ or -", a->exp_id);
        return 2;
    }
    if (strcmp(o->action, "create") == 0)
        a->action = ACTION_CREATE;
    else if (strcmp(o->action, "resume") == 0)
        a->action = ACTION_RESUME;
    else if (strcmp(o->action, "view") == 0)
        a->action = ACTION_VIEW, a->readonly = 1, a->spawn_workers = 0;
    else
        return role_usage(&api_role);
    return 0;
}

/* The database, the experiment, its config, its tuner and assessor: 0, or the exit
 * code. *port: the one to listen on. */
static int open_db(struct api *a, const struct api_opts *o)
{
    struct errbuf e;
    a->home = trialq_home(o->home);
    char *dbpath = trialq_db_path(a->home);
    int rc = db_open(dbpath, &a->db, &e);
    free(dbpath);
    if (rc < 0) {
        log_error("%s", e.msg);
        return 1;
    }
    return 0;
}

static int load_experiment(struct api *a, const struct api_opts *o, int *port)
{
    struct errbuf e;
    int found = exp_load(a->db, a->exp_id, &a->exp, &e);
    if (found <= 0 && a->nni_launched && a->action == ACTION_CREATE && found == 0) {
        /* NNI's launcher: the config comes with POST /experiment (launch.c); until then
         * the api listens where NNI's manager would, on loopback */
        a->awaiting_config = 1;
        a->exp.bind_address = xstrdup("127.0.0.1");
        a->exp.url_prefix = o->url_prefix ? xasprintf("/%s", o->url_prefix + strspn(o->url_prefix, "/"))
                                          : xstrdup("");
        size_t n = strlen(a->exp.url_prefix);
        while (n > 1 && a->exp.url_prefix[n - 1] == '/')
            a->exp.url_prefix[--n] = '\0';
        if (n == 1)
            a->exp.url_prefix[0] = '\0';
        a->exp.port = *port = o->port ? o->port : 8080;
        if (!a->exp_root)
            a->exp_root = xstrdup(a->home);
        return 0;
    }
    if (found <= 0) {
        log_error("experiment %s not found", a->exp_id);
        return 1;
    }
    if (a->nni_launched && a->action == ACTION_CREATE && strcmp(a->exp.status, "INITIALIZED") != 0) {
        log_error("experiment %s exists already (%s): NNI's launcher resumes it with --action resume", a->exp_id,
                  a->exp.status);
        return 1;
    }
    *port = o->port ? o->port : a->exp.port;
    if (o->port && exp_set_port(a->db, a->exp_id, o->port, &e) < 0)
        log_warn("cannot record port %d: %s", o->port, e.msg);
    /* with its secrets (custom algorithms' classArgs may hold some): common/secrets.h */
    char *merged = secrets_merged_json(a->home, a->exp_id, a->exp.config, &e);
    int rc = merged ? config_from_json(merged, &a->cfg, &e) : -1;
    if (merged)
        memset(merged, 0, strlen(merged));
    free(merged);
    if (rc < 0) {
        log_error("stored config of %s: %s", a->exp_id, e.msg);
        return EXIT_CONFIG;
    }
    if (!a->readonly && (sched_load_tuner(a, &e) < 0 || assess_init(a, &e) < 0)) {
        log_error("%s", e.msg);
        return EXIT_CONFIG;
    }
    return 0;
}

/* The event loop, the HTTP server on port and its front door: 0, or the exit code. */
static int listen_http(struct api *a, int port)
{
    struct guard_limits limits;
    char lerr[200];
    if (guard_limits_from_env(&limits, lerr, sizeof lerr) < 0) {
        log_error("%s", lerr);
        return EXIT_CONFIG;
    }
    long fd_limit = fd_limit_raise();
    a->base = event_base_new();
    a->http = evhttp_new(a->base);
    evhttp_set_timeout(a->http, 30);
    routes_register(a);
    struct evhttp_bound_socket *listener = evhttp_bind_socket_with_handle(a->http, a->exp.bind_address, (ev_uint16_t)port);
    if (!listener) {
        log_error("Port %d is not idle: cannot listen on %s:%d (%s). Use --port to choose another.",
                  port, a->exp.bind_address, port, strerror(errno));
        return EXIT_PORT_BUSY;
    }
    /* no Nagle on any connection (routes.c, tune_connection): accepted sockets inherit
     * it from the listener, one setsockopt instead of one per request */
    int one = 1;
    setsockopt(evhttp_bound_socket_get_fd(listener), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    /* libevent listens with a backlog of 128: a burst of connections (clients coming
     * back after the api closed theirs) would drop SYNs, a 1 s retry each; again, as
     * deep as the kernel allows (somaxconn) */
    listen(evhttp_bound_socket_get_fd(listener), 4096);
    a->guard = guard_new(a, evhttp_bound_socket_get_listener(listener), &limits, fd_limit, routes_head_policy);
    return 0;
}

/* NNI's resume clears endTime only if the budget is not used up: a DONE experiment
 * whose trials or time are used up, with nothing left to run, stays DONE as it ended. */
static int resume_keeps_done(struct api *a)
{
    if (a->action != ACTION_RESUME || strcmp(a->exp.status, "DONE") != 0)
        return 0;
    struct errbuf e;
    int64_t submitted = a->exp.next_sequence;
    trials_submitted(a->db, a->exp_id, a->exp.next_sequence, &submitted, &e);
    int64_t active = trials_count(a->db, a->exp_id, COUNT_ACTIVE, NULL, &e); /* -1: not done */
    return active == 0 && ((a->exp.max_trial_number > 0 && submitted >= a->exp.max_trial_number) ||
                           (a->exp.max_exec_seconds > 0 && a->exp.exec_duration_ms >= a->exp.max_exec_seconds * 1000));
}

/* This process now owns the experiment: recorded in its row and the process table, its
 * faults published, the experiment RUNNING (unless view, or DONE for good). 0 or 1. */
static int take_experiment(struct api *a, const char *action)
{
    struct errbuf e;
    int keep_done = resume_keeps_done(a);
    /* a database fault at start (a full disk) is waited out for a while (retry_at_start) */
    int64_t until = 0;
    int rc;
    do
        rc = exp_api_take(a->db, a->exp_id, (int)getpid(), proc_start_time(getpid()), now_ms(),
                          a->readonly || keep_done, &e);
    while (retry_at_start(rc, &until));
    if (rc >= 0)
        do
            rc = proc_register(a->db, a->exp_id, "api", getpid(), proc_start_time(getpid()), &a->proc_row, &e);
        while (retry_at_start(rc, &until));
    if (rc < 0) {
        log_error("%s", e.msg);
        return 1;
    }
    /* our faults (the database we cannot write) are served from memory; nnictl reads
     * them from this file, kept writable on a full disk (common/fault.c) */
    if (!a->readonly && a->exp.exp_dir) {
        char *fault_dir = xasprintf("%s/faults", a->exp.exp_dir);
        if (fault_publish_to(fault_dir, "api") < 0)
            log_warn("cannot create %s/api.%d: %s; faults are served by the api only", fault_dir, (int)getpid(),
                     strerror(errno));
        free(fault_dir);
    }
    /* view changes nothing stored: the api answers VIEWED, the row keeps its status.
     * A resume comes from any state; "DONE" re-checks its budgets on the first tick. */
    if (a->action == ACTION_RESUME)
        do
            rc = exp_tuner_revive(a->db, a->exp_id, &e);
        while (retry_at_start(rc, &until));
    if (!a->readonly && !keep_done)
        do
            rc = exp_transition(a->db, a->exp_id, NULL, "RUNNING", action, &e);
        while (retry_at_start(rc, &until));
    exp_clear(&a->exp);
    exp_load(a->db, a->exp_id, &a->exp, &e);
    return 0;
}

static void let_go(struct api *a);

/* Signals, the tick, the workers; then the loop until a stop or a signal ends it, and
 * what it ran stopped. */
static void run(struct api *a)
{
    int sigs[] = {SIGCHLD, SIGUSR1, SIGTERM, SIGINT};
    struct event *sev[4];
    for (int i = 0; i < 4; i++) {
        sev[i] = evsignal_new(a->base, sigs[i], on_signal, a);
        event_add(sev[i], NULL);
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    children_start(a);
    struct event *tick = event_new(a->base, -1, EV_PERSIST, on_tick, a);
    struct timeval tv = {0, TICK_MS * 1000};
    event_add(tick, &tv);
    dispatcher_tick(a); /* a customized tuner's process starts now that the port is bound */
    sched_tick(a);

    event_base_dispatch(a->base);
    channel_shutdown(a); /* pending metrics stored, pending polls answered 410 */
    dispatcher_shutdown(a); /* TE to a customized tuner's process, before the HTTP server goes */
    tensorboard_shutdown(a);
    let_go(a);
    for (int i = 0; i < 4; i++)
        event_free(sev[i]);
    event_free(tick);
}

/* Workers stopped, the experiment let go (STOPPED after a stop). */
static void let_go(struct api *a)
{
    struct errbuf e;
    /* stopping: workers first (their trials have ended or are left to supervisors) */
    children_stop(a);
    if (!a->readonly && a->stopping)
        exp_transition(a->db, a->exp_id, "STOPPING", "STOPPED", "stopped", &e);
    launch_nnidb_sync(a); /* its end time for NNI's client */
    update_counts(a);
    exp_api_release(a->db, a->exp_id, (int)getpid(), &e);
    proc_ended(a->db, a->proc_row, "exited", &e);
    log_info("experiment %s: api exiting", a->exp_id);
}

void api_free_state(struct api *a)
{
    if (a->tuner_state)
        a->tuner->destroy(a->tuner_state);
    a->tuner_state = NULL;
    ss_free(a->space);
    a->space = NULL;
    cJSON_Delete(a->posted);
    a->posted = NULL;
    tuner_view_free(a->tuner_view);
    a->tuner_view = NULL;
    assess_free(a);
    children_free(a);
    config_free(a->cfg);
    a->cfg = NULL;
    exp_clear(&a->exp);
}

static void api_free(struct api *a)
{
    if (a->http)
        evhttp_free(a->http);
    if (a->guard)
        guard_free(a->guard); /* after evhttp_free: its connections' filters call back into it */
    if (a->base)
        event_base_free(a->base);
    api_free_state(a);
    db_close(a->db);
    free(a->home);
    free(a->exp_root);
}

int api_main(int argc, char **argv)
{
    struct api A;
    struct api *a = &A;
    memset(a, 0, sizeof *a);
    struct api_opts o;
    int rc = parse_args(a, argc, argv, &o);
    if (rc)
        return rc;
    /* a worker's wake-up may come before the event loop handles it: not fatal */
    signal(SIGUSR1, SIG_IGN);
    enum log_level lvl;
    if (log_level_parse(a->log_level, &lvl) == 0)
        log_set_level(lvl);
    log_set_module("api");
    db_set_actor("api");
    int port = 0;
    if ((rc = open_db(a, &o)) || (rc = load_experiment(a, &o, &port)) || (rc = listen_http(a, port)))
        goto out;
    if (a->awaiting_config) {
        /* NNI's launcher: the row comes with POST /experiment, then on as for nnictl's */
        if (launch_await_config(a, port) != 0)
            goto out; /* a signal before the config: nothing was made */
        exp_clear(&a->exp);
        int ignored;
        if ((rc = load_experiment(a, &o, &ignored)))
            goto out;
    }
    if ((rc = take_experiment(a, o.action)))
        goto out;
    launch_nnidb_sync(a); /* NNI's client reads the config back from there */
    log_info("experiment %s %s; listening on http://%s:%d", a->exp_id, o.action, a->exp.bind_address, port);
    run(a);
    rc = a->exit_code;
out:
    api_free(a);
    return rc;
}
