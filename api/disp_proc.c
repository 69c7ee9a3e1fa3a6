/* disp_proc.c: the dispatcher process: `<python> -m nni --exp_params <base64>` with
 * NNI's environment (spec §6.1), in its own process group with PR_SET_PDEATHSIG,
 * recorded in `process` as role `dispatcher`. Its output goes to the api's log, the
 * last of it kept for an error report. A timer watches it: every expected answer has
 * a deadline, and a process that ends or closes its channel unasked fails the
 * experiment. It is not restarted: a failed dispatcher fails the experiment cleanly,
 * and `nnictl resume` starts a fresh one. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "api/children.h"
#include "api/disp.h"
#include "api/dispatcher.h"
#include "common/trialenv.h"
#include "schema/dispatch.h"
#include "schema/exp_api.h"
#include "schema/trial_sets.h"

extern char **environ;

#define CONNECT_TIMEOUT_MS 10000   /* NNI: "Tuner did not connect in 10 seconds" */
#define POLL_MS 200
#define PING_MS 5000               /* NNI's server pings every 5 s */
#define DEATH_GRACE_MS 400         /* output still in flight when the process ended */
#define TAIL_MAX 16384             /* the last output kept for an error report */
#define MESSAGE_MAX 8192           /* an error message's length in experiment.errors */

/* ---------------- failure and termination ---------------- */

int disp_process_gone(struct dispatcher *d)
{
    int st;
    if (d->reaped)
        return 1;
    if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
        d->reaped = 1;
        d->wait_status = st;
        return 1;
    }
    return !proc_alive(d->pid, d->pid_start);
}

/* Only this pid is waited for: the workers' exits belong to children_reap. */
void disp_terminate(struct dispatcher *d, int grace_ms)
{
    if (d->pid <= 0)
        return;
    /* the group is signalled only while its leader lives (a reaped pid's group id could
     * be someone else's later) */
    if (!disp_process_gone(d)) {
        kill(-d->pid, SIGTERM);
        int64_t until = mono_ms() + grace_ms;
        while (!disp_process_gone(d) && mono_ms() < until)
            usleep(10000);
        if (!disp_process_gone(d)) {
            kill(-d->pid, SIGKILL);
            until = mono_ms() + 2000;
            while (!disp_process_gone(d) && mono_ms() < until)
                usleep(10000);
        }
    }
    struct errbuf e;
    if (d->proc_row)
        proc_ended(d->a->db, d->proc_row, "stopped", &e);
    d->proc_row = 0;
    d->pid = 0;
}

const char *disp_tail(const struct dispatcher *d)
{
    const char *t = d->tail.buf ? d->tail.buf : "";
    while (*t == '\n')
        t++;
    return t;
}

void disp_fail(struct dispatcher *d, const char *fmt, ...)
{
    if (d->state == D_FAILED || d->state == D_CLOSED)
        return;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    size_t n = len > 0 ? (size_t)len : 0;
    char *full = xmalloc(n + 1);
    vsnprintf(full, n + 1, fmt, ap2);
    va_end(ap2);
    /* a long traceback keeps its head and its end (the exception itself) */
    char *msg = n > MESSAGE_MAX ? xasprintf("%.*s\n[...]\n%s", MESSAGE_MAX / 8, full, full + n - MESSAGE_MAX * 7 / 8)
                                : xstrdup(full);
    free(full);
    d->state = D_FAILED;
    d->deadline_ms = 0;
    struct api *a = d->a;
    /* the tuner's own text (a traceback): one escaped line in the log, as it is in
     * experiment.errors (the web UI shows it there) */
    struct strbuf line;
    sb_init(&line);
    sb_add_snippet(&line, msg, strlen(msg), MESSAGE_MAX);
    if (a->stopping || a->detach) {
        log_info("dispatcher ended while stopping: %s", line.buf);
    } else {
        /* as the scheduler's set_error: the message first, then the status */
        struct errbuf e;
        log_error("experiment error: %s", line.buf);
        exp_add_error(a->db, a->exp_id, msg, &e);
        exp_transition(a->db, a->exp_id, NULL, "ERROR", "tuner process failed", &e);
    }
    sb_free(&line);
    free(msg);
    disp_channel_close(d);
    disp_terminate(d, 2000);
}

/* ---------------- its output ---------------- */

/* A line the process printed (user code: a customized tuner), into the api's log as NNI's
 * dispatcher output lands in the manager's: one log line, escaped (common/text.c), cut
 * at OUTPUT_LINE_MAX bytes. */
#define OUTPUT_LINE_MAX 2000

static void output_line(const char *s, size_t n)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_add_snippet(&sb, s, n, OUTPUT_LINE_MAX);
    log_info("dispatcher output: %s", sb.buf);
    sb_free(&sb);
}

/* The ended lines of d->line to the log; with all, the rest too. */
static void output_lines(struct dispatcher *d, int all)
{
    size_t off = 0;
    const char *nl;
    while (off < d->line.len && (nl = memchr(d->line.buf + off, '\n', d->line.len - off))) {
        output_line(d->line.buf + off, (size_t)(nl - (d->line.buf + off)));
        off = (size_t)(nl - d->line.buf) + 1;
    }
    if (d->line.len - off > OUTPUT_LINE_MAX || (all && d->line.len > off)) {
        output_line(d->line.buf + off, d->line.len - off); /* too long to wait for its end */
        off = d->line.len;
    }
    memmove(d->line.buf, d->line.buf + off, d->line.len - off + 1);
    d->line.len -= off;
}

static void on_err_read(struct bufferevent *bev, void *arg)
{
    struct dispatcher *d = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char buf[4096];
    int n;
    while ((n = evbuffer_remove(in, buf, sizeof buf - 1)) > 0) {
        buf[n] = 0;
        sb_add(&d->line, buf, (size_t)n);
        output_lines(d, 0);
        sb_add(&d->tail, buf, (size_t)n);
        if (d->tail.len > TAIL_MAX) {
            size_t cut = d->tail.len - TAIL_MAX / 2;
            memmove(d->tail.buf, d->tail.buf + cut, d->tail.len - cut + 1);
            d->tail.len -= cut;
        }
    }
}

static void on_err_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev; (void)what; (void)arg; /* the process's end is seen by the timer */
}

void disp_drain_output(struct dispatcher *d)
{
    if (d->err)
        on_err_read(d->err, d);
    if (d->line.len)
        output_lines(d, 1);
}

/* ---------------- the command and the environment ---------------- */

/* `exec <python> -m nni --exp_params <base64>`: base64 of the config's algorithm
 * sections, all that NNI's `python -m nni` reads (tuner, assessor, advisor,
 * deprecated). NNI sends the whole config less searchSpace; the rest stays out because
 * a command line is readable by every local user (ps), and trainingService holds
 * passwords and tokens. A built-in section stays in trialq's C code, so the process is
 * not given it. */
static char *launch_command(struct dispatcher *d)
{
    const struct exp_config *cfg = d->a->cfg;
    cJSON *params = cJSON_CreateObject();
    static const char *const algo_keys[] = {"tuner", "assessor", "advisor", "deprecated"};
    for (size_t k = 0; k < sizeof algo_keys / sizeof *algo_keys; k++) {
        const cJSON *sec = cJSON_GetObjectItemCaseSensitive(cfg->canonical, algo_keys[k]);
        if (sec)
            cJSON_AddItemToObject(params, algo_keys[k], cJSON_Duplicate(sec, 1));
    }
    if (!d->custom_tuner)
        log_info("dispatcher: built-in tuner %s runs in trialq; the process only assesses", cfg->tuner.name);
    if (cfg->assessor.set && !cfg->assessor.class_name)
        cJSON_DeleteItemFromObjectCaseSensitive(params, "assessor");
    char *json = cJSON_PrintUnformatted(params);
    cJSON_Delete(params);
    char *b64 = b64_encode(json, strlen(json));
    free(json);
    const char *py = getenv("TRIALQ_PYTHON");
    char *qpy = sh_quoted(py && *py ? py : "python3");
    char *cmd = xasprintf("exec %s -m nni --exp_params %s", qpy, b64);
    free(qpy);
    free(b64);
    return cmd;
}

/* tunerGpuIndices as CUDA_VISIBLE_DEVICES ("" when unset). */
static char *tuner_gpus(const struct exp_config *cfg)
{
    const cJSON *tg = cJSON_GetObjectItemCaseSensitive(cfg->canonical, "tunerGpuIndices");
    if (cJSON_IsString(tg))
        return xstrdup(tg->valuestring);
    struct strbuf sb;
    sb_init(&sb);
    const cJSON *g;
    if (cJSON_IsArray(tg))
        cJSON_ArrayForEach(g, tg) sb_printf(&sb, "%s%d", sb.len ? "," : "", g->valueint);
    return sb_detach(&sb);
}

/* NNI_TUNER_COMMAND_CHANNEL: ws://localhost:<port>[/<prefix>]/tuner, the url prefix as
 * stored ("" or "/a/b"). */
static char *ws_channel_url(const struct api *a)
{
    const char *prefix = a->exp.url_prefix ? a->exp.url_prefix : "";
    while (*prefix == '/')
        prefix++;
    size_t pl = strlen(prefix);
    while (pl && prefix[pl - 1] == '/')
        pl--;
    return xasprintf("NNI_TUNER_COMMAND_CHANNEL=ws://localhost:%d%s%.*s/tuner", a->exp.port, pl ? "/" : "", (int)pl,
                     prefix);
}

struct launch_env {
    char *ours[9];          /* NAME=value, each new */
    int no;
    char **envp;            /* the api's environment less what ours replace, then ours */
};

/* The environment: ours plus NNI's (spec §6.1). */
static void env_build(struct dispatcher *d, const char *logdir, const char *ckpt, struct launch_env *le)
{
    struct api *a = d->a;
    char *gpus = tuner_gpus(a->cfg);
    le->no = 0;
    le->ours[le->no++] = xstrdup("SDK_PROCESS=dispatcher");
    le->ours[le->no++] = xasprintf("NNI_MODE=%s", a->action == ACTION_RESUME ? "resume" : "start");
    le->ours[le->no++] = xasprintf("NNI_CHECKPOINT_DIRECTORY=%s", ckpt);
    le->ours[le->no++] = xasprintf("NNI_LOG_DIRECTORY=%s", logdir);
    le->ours[le->no++] = xasprintf("NNI_LOG_LEVEL=%s", a->cfg->log_level ? a->cfg->log_level : "info");
    le->ours[le->no++] = xstrdup("NNI_INCLUDE_INTERMEDIATE_RESULTS=false");
    le->ours[le->no++] = xasprintf("CUDA_VISIBLE_DEVICES=%s", gpus);
    if (d->use_ws)
        le->ours[le->no++] = ws_channel_url(a);
    free(gpus);
    static const char *const replaced[] = {"SDK_PROCESS=", "NNI_MODE=", "NNI_CHECKPOINT_DIRECTORY=",
                                           "NNI_LOG_DIRECTORY=", "NNI_LOG_LEVEL=", "NNI_INCLUDE_INTERMEDIATE_RESULTS=",
                                           "CUDA_VISIBLE_DEVICES=", "NNI_TUNER_COMMAND_CHANNEL=", NULL};
    int nenv = 0;
    while (environ[nenv])
        nenv++;
    le->envp = xcalloc((size_t)(nenv + le->no + 1), sizeof *le->envp);
    int k = 0;
    /* a customized tuner is user code: the platforms' credentials stay with the api */
    int pass = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a->cfg->canonical, "passCredentials"));
    for (int i = 0; i < nenv; i++) {
        int skip = !pass && trial_env_is_credential(environ[i]);
        for (int r = 0; replaced[r]; r++)
            if (str_starts(environ[i], replaced[r]))
                skip = 1;
        if (!skip)
            le->envp[k++] = environ[i];
    }
    for (int i = 0; i < le->no; i++)
        le->envp[k++] = le->ours[i];
    le->envp[k] = NULL;
}

static void env_free(struct launch_env *le)
{
    for (int i = 0; i < le->no; i++)
        free(le->ours[i]);
    free(le->envp);
}

/* ---------------- fork and exec ---------------- */

/* Moves fd to a number >= 10, so that dup2 to 2/3/4 cannot clobber another pipe end. */
static int high_fd(int fd)
{
    int h = fcntl(fd, F_DUPFD, 10);
    return h < 0 ? fd : h;
}

struct launch_fds {
    int to[2], from[2], err[2]; /* the pipes: channel in (fd 3), channel out (fd 4), output */
};

/* In the child: stdin /dev/null, stdout and stderr the output pipe, fds 3 and 4 the
 * pipe channel; never returns. */
static void exec_child(pid_t parent, int use_ws, const struct launch_fds *f, const char *logdir, const char *cmd,
                       char **envp)
{
    if (child_of(parent) < 0) /* an api killed with SIGKILL takes it along */
        _exit(127);
    int errw = high_fd(f->err[1]), cin = -1, cout = -1;
    if (!use_ws) {
        cin = high_fd(f->to[0]);
        cout = high_fd(f->from[1]);
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, 0);
    dup2(errw, 1);
    dup2(errw, 2);
    if (!use_ws) {
        dup2(cin, 3);
        dup2(cout, 4);
    }
    close_fds_from(use_ws ? 3 : 5);
    if (chdir(logdir) < 0)
        _exit(126);
    execle("/bin/sh", "sh", "-c", cmd, (char *)NULL, envp);
    _exit(127);
}

/* In the api, the child started: recorded, its output read, its channel opened (the
 * pipes at once; the WebSocket when it connects). The fds taken are set to -1. */
static void attach(struct dispatcher *d, pid_t pid, struct launch_fds *f, const char *cmd)
{
    struct api *a = d->a;
    struct errbuf e;
    setpgid(pid, pid);
    d->pid = pid;
    d->pid_start = proc_start_time(pid);
    reaper_add(a, pid, dispatcher_reaped);
    proc_register(a->db, a->exp_id, "dispatcher", pid, d->pid_start, &d->proc_row, &e);
    log_info("dispatcher started: pid %d, %s channel: sh -c \"%.200s...\"", (int)pid, d->use_ws ? "WebSocket" : "pipe",
             cmd);
    evutil_make_socket_nonblocking(f->err[0]);
    d->err = bufferevent_socket_new(a->base, f->err[0], BEV_OPT_CLOSE_ON_FREE);
    f->err[0] = -1;
    bufferevent_setcb(d->err, on_err_read, NULL, on_err_event, d);
    bufferevent_enable(d->err, EV_READ);
    if (d->use_ws) {
        d->state = D_CONNECTING;
        disp_expect(d, "WebSocket connection", CONNECT_TIMEOUT_MS);
    } else {
        disp_pipes_open(d, f->to[1], f->from[0]);
        f->to[1] = f->from[0] = -1;
        disp_hello(d);
    }
}

static void launch(struct dispatcher *d)
{
    struct api *a = d->a;
    char *logdir = xasprintf("%s/log", a->exp.exp_dir);
    char *ckpt = xasprintf("%s/checkpoint", a->exp.exp_dir);
    mkdir_p(logdir, 0700);
    mkdir_p(ckpt, 0700);
    char *cmd = launch_command(d);
    struct launch_env le;
    env_build(d, logdir, ckpt, &le);
    struct launch_fds f = {{-1, -1}, {-1, -1}, {-1, -1}};
    int ok = pipe2(f.err, O_CLOEXEC) == 0 &&
             (d->use_ws || (pipe2(f.to, O_CLOEXEC) == 0 && pipe2(f.from, O_CLOEXEC) == 0));
    pid_t parent = getpid();
    pid_t pid = ok ? fork() : -1;
    if (pid == 0)
        exec_child(parent, d->use_ws, &f, logdir, cmd, le.envp);
    if (pid < 0)
        disp_fail(d, "cannot start the tuner process: %s", strerror(errno));
    else
        attach(d, pid, &f, cmd);
    int fds[] = {f.to[0], f.to[1], f.from[0], f.from[1], f.err[0], f.err[1]};
    for (int i = 0; i < 6; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    env_free(&le);
    free(cmd);
    free(logdir);
    free(ckpt);
}

/* ---------------- supervision: deadlines, liveness, feeding ---------------- */

/* The process ended (or closed the channel) without being told to: a crash. */
static void fail_gone(struct dispatcher *d)
{
    char status[64] = "";
    int st = d->wait_status;
    if (d->reaped || (d->pid > 0 && waitpid(d->pid, &st, WNOHANG) == d->pid)) {
        if (WIFSIGNALED(st))
            snprintf(status, sizeof status, " (killed by signal %d)", WTERMSIG(st));
        else
            snprintf(status, sizeof status, " (exit code %d)", WEXITSTATUS(st));
    }
    disp_fail(d, "tuner process (dispatcher) ended unexpectedly%s; its last output:\n%s", status, disp_tail(d));
}

/* An advisor may hold its answer to GE until running trials report (Hyperband waits for
 * a round): only a silence with nothing running is a hang; nor is one once the
 * scheduler wants no more trials (budget used, DONE). Then the deadline moves on. */
static void extend_trials_deadline(struct dispatcher *d, int64_t now)
{
    struct errbuf e;
    int64_t active = trials_count(d->a->db, d->a->exp_id, COUNT_ACTIVE, NULL, &e);
    if (active < 0) {
        log_warn("dispatcher: %s", e.msg);
        active = 0;
    }
    if (active > 0 || !d->a->exp.status || strcmp(d->a->exp.status, "RUNNING") != 0)
        d->deadline_ms = now + d->answer_timeout_ms;
}

static void on_timer(evutil_socket_t fd, short ev, void *arg)
{
    (void)fd; (void)ev;
    struct dispatcher *d = arg;
    if (d->state == D_FAILED || d->state == D_CLOSED)
        return;
    int64_t now = mono_ms();
    if (d->pid > 0 && !d->gone_since_ms && (d->reaped || !proc_alive(d->pid, d->pid_start)))
        d->gone_since_ms = now;
    if (d->gone_since_ms && now - d->gone_since_ms >= DEATH_GRACE_MS) {
        fail_gone(d);
        return;
    }
    if (d->deadline_ms && now >= d->deadline_ms && d->state == D_CONNECTING) {
        disp_fail(d, "Tuner did not connect in %d seconds: the dispatcher process never opened the WebSocket"
                     " channel; its output:\n%s", CONNECT_TIMEOUT_MS / 1000, disp_tail(d));
        return;
    }
    if (d->deadline_ms && now >= d->deadline_ms && d->waiting_trials && d->requested > 0)
        extend_trials_deadline(d, now);
    if (d->deadline_ms && now >= d->deadline_ms) {
        disp_fail(d, "tuner process (dispatcher) did not answer in time: no %s within %lld s", d->waiting_for,
                  (long long)(d->answer_timeout_ms / 1000));
        return;
    }
    if (d->use_ws && d->ws && now - d->last_ping_ms >= PING_MS) {
        disp_ws_send(d, WS_PING, "", 0);
        d->last_ping_ms = now;
    }
    if (d->state == D_READY && !d->a->stopping)
        disp_feed(d);
}

void disp_start(struct dispatcher *d)
{
    if (d->state != D_NEW || !d->a->base)
        return;
    struct errbuf e;
    struct disp_cursors c;
    /* the cursors start at what exists now: earlier history goes in FD and AD */
    if (disp_cursors_now(d->a->db, d->a->exp_id, &c, &e) < 0)
        log_warn("dispatcher: %s", e.msg);
    d->metric_cursor = c.metric;
    d->change_cursor = c.change;
    d->import_cursor = c.import;
    d->timer = event_new(d->a->base, -1, EV_PERSIST, on_timer, d);
    struct timeval tv = {0, POLL_MS * 1000};
    event_add(d->timer, &tv);
    launch(d);
}
