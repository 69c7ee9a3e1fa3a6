/* dispatcher.c: customized Python tuners, assessors and advisors through NNI's
 * dispatcher process (spec §6). The api starts `<python> -m nni --exp_params <base64>`
 * with NNI's environment, then speaks NNI's commands with it:
 *   - over the WebSocket channel of NNI >= 3.0: the process connects to the api's own
 *     port at /tuner (NNI_TUNER_COMMAND_CHANNEL); libevent 2.1 has no WebSocket server,
 *     so the handshake is answered here and the connection's bufferevent is taken over
 *     from evhttp (api/websocket.c has the wire formats);
 *   - or over the legacy pipes (tunerCommandChannel: pipe): the process reads fd 3 and
 *     writes fd 4, commands framed as 2 letters + 14 digits + payload.
 * What NNI's manager feeds the dispatcher is read from the database with cursors of our
 * own: FINAL and PERIODICAL metrics (metric.id), trial ends (trial.change_seq), imported
 * data (event.id), search-space updates. Its answers: TR -> the scheduler's next
 * suggestion (the tuner_ops below), NO -> no more trials, KI -> EARLY_STOPPED, ER or a
 * crash -> the experiment's error (with the traceback) and status ERROR.
 * The process is not restarted: a failed dispatcher fails the experiment cleanly, and
 * `nnictl resume` starts a fresh one, replaying the finished trials (FD) and the trials
 * still running (AD), as NNI does. Every expected answer has a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "api/dispatcher.h"
#include "api/guard.h"
#include "api/websocket.h"
#include "common/json.h"

extern char **environ;

#define CONNECT_TIMEOUT_MS 10000   /* NNI: "Tuner did not connect in 10 seconds" */
#define ANSWER_TIMEOUT_MS 600000   /* default for ID/TR answers; TRIALQ_DISPATCHER_TIMEOUT */
#define POLL_MS 200
#define PING_MS 5000               /* NNI's server pings every 5 s */
#define DEATH_GRACE_MS 400         /* output still in flight when the process ended */
#define MAX_MESSAGE (64u << 20)
#define TAIL_MAX 16384             /* the last output kept for an error report */
#define MESSAGE_MAX 8192           /* an error message's length in experiment.errors */
#define SHUTDOWN_GRACE_MS 5000
#define WAIT_TR "trial parameters (TR) after GE"

enum dstate { D_NEW, D_CONNECTING, D_INIT, D_READY, D_FAILED, D_CLOSED };

struct tr {                 /* a TR not yet taken by the scheduler */
    cJSON *params;
    char *disp_id;          /* the dispatcher's parameter_id, JSON text */
    char *payload;          /* the TR content, as NNI hands it back in EN */
};

struct pmap {               /* our trial parameter_id -> the dispatcher's */
    int64_t ours;
    char *disp_id;
    char *payload;
};

struct dispatcher {
    struct api *a;
    int refs;               /* tuner states pointing here (a search-space swap makes two) */
    enum dstate state;
    int use_ws;
    int custom_tuner, custom_assessor;
    pid_t pid;
    uint64_t pid_start;
    int64_t proc_row;
    struct event *timer;
    int64_t deadline_ms;    /* 0 = nothing expected */
    const char *waiting_for;
    int waiting_trials;     /* the deadline is for TR after GE */
    int64_t answer_timeout_ms;
    int64_t gone_since_ms;  /* channel closed or process gone: fail after a grace */
    int reaped, wait_status; /* children_reap collected its exit status */
    int64_t last_ping_ms;
    /* pipe channel */
    struct bufferevent *to, *from;
    /* WebSocket channel */
    struct evhttp_connection *ws_conn;
    struct bufferevent *ws;
    struct strbuf ws_msg;
    int ws_in_message;
    /* stdout + stderr of the process */
    struct bufferevent *err;
    struct strbuf tail;
    /* protocol state */
    int requested;          /* trials asked for with GE, not answered yet */
    int no_more;            /* NO received */
    struct tr *queue;
    int nqueue, capqueue;
    struct pmap *map;
    int nmap, capmap;
    char **ended;           /* trials whose EN was sent */
    int nended, capended;
    int64_t metric_cursor, change_cursor, import_cursor;
    char *sent_space;
    int kick_pending;
};

/* One dispatcher per api process (one experiment). The tuner_ops interface creates
 * tuner states without the api (and a search-space update creates a second state before
 * it drops the first), so the states are handles to this one object, set up once by
 * dispatcher_init during the api's setup. */
static struct dispatcher *g_disp;

struct handle {
    struct dispatcher *d;
};

static int64_t env_timeout_ms(void)
{
    const char *s = getenv("TRIALQ_DISPATCHER_TIMEOUT");
    int64_t secs;
    if (s && *s && parse_duration(s, &secs) == 0 && secs > 0)
        return secs * 1000;
    return ANSWER_TIMEOUT_MS;
}

int dispatcher_needed(const struct exp_config *cfg)
{
    return cfg->tuner.class_name || (cfg->assessor.set && cfg->assessor.class_name);
}

/* ---------------- failure ---------------- */

static void close_channel(struct dispatcher *d);

/* 1 when the process has ended (reaped here, or by children_reap). */
static int process_gone(struct dispatcher *d)
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

/* SIGTERM to its process group, SIGKILL after grace_ms. Only this pid is waited for:
 * the workers' exits belong to children_reap. */
static void terminate_process(struct dispatcher *d, int grace_ms)
{
    if (d->pid <= 0)
        return;
    /* the group is signalled only while its leader lives (a reaped pid's group id could
     * be someone else's later) */
    if (!process_gone(d)) {
        kill(-d->pid, SIGTERM);
        int64_t until = mono_ms() + grace_ms;
        while (!process_gone(d) && mono_ms() < until)
            usleep(10000);
        if (!process_gone(d)) {
            kill(-d->pid, SIGKILL);
            until = mono_ms() + 2000;
            while (!process_gone(d) && mono_ms() < until)
                usleep(10000);
        }
    }
    struct errbuf e;
    if (d->proc_row)
        proc_ended(d->a->db, d->proc_row, "stopped", &e);
    d->proc_row = 0;
    d->pid = 0;
}

/* The last lines the process printed (its traceback), for an error message. */
static const char *tail_text(struct dispatcher *d)
{
    const char *t = d->tail.buf ? d->tail.buf : "";
    while (*t == '\n')
        t++;
    return t;
}

static void fail(struct dispatcher *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct dispatcher *d, const char *fmt, ...)
{
    if (d->state == D_FAILED || d->state == D_CLOSED)
        return;
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *full = xmalloc((size_t)(n > 0 ? n : 0) + 1);
    vsnprintf(full, (size_t)(n > 0 ? n : 0) + 1, fmt, ap2);
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
    close_channel(d);
    terminate_process(d, 2000);
}

/* ---------------- sending ---------------- */

static void send_cmd(struct dispatcher *d, const char *type, const char *content)
{
    if (d->state == D_FAILED || d->state == D_CLOSED)
        return;
    size_t n = content ? strlen(content) : 0;
    struct strbuf sb;
    sb_init(&sb);
    if (d->use_ws) {
        if (!d->ws)
            goto out;
        struct strbuf msg;
        sb_init(&msg);
        sb_puts(&msg, "{\"type\":");
        json_put_string(&msg, type);
        sb_puts(&msg, ",\"content\":");
        json_put_string(&msg, content ? content : "");
        sb_puts(&msg, "}");
        ws_frame_encode(&sb, WS_TEXT, msg.buf, msg.len, NULL);
        sb_free(&msg);
        bufferevent_write(d->ws, sb.buf, sb.len);
    } else {
        if (!d->to)
            goto out;
        pipe_frame_encode(&sb, type, content ? content : "", n);
        bufferevent_write(d->to, sb.buf, sb.len);
    }
    log_debug("dispatcher <- %s (%zu bytes)", type, n);
out:
    sb_free(&sb);
}

static void expect(struct dispatcher *d, const char *what, int64_t timeout_ms)
{
    d->waiting_for = what;
    d->waiting_trials = strcmp(what, WAIT_TR) == 0;
    d->deadline_ms = mono_ms() + timeout_ms;
}

/* ---------------- replay (start and resume) ---------------- */

/* A decimal integer, as NNI's JSON has parameter ids that are numbers. */
static int is_int_text(const char *s)
{
    if (!s || !*s)
        return 0;
    if (*s == '-')
        s++;
    if (!*s || strlen(s) > 15)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static void map_add(struct dispatcher *d, int64_t ours, const char *disp_id, const char *payload)
{
    if (d->nmap == d->capmap) {
        d->capmap = d->capmap ? 2 * d->capmap : 64;
        d->map = xrealloc(d->map, sizeof *d->map * (size_t)d->capmap);
    }
    d->map[d->nmap].ours = ours;
    d->map[d->nmap].disp_id = xstrdup(disp_id);
    d->map[d->nmap].payload = xstrdup(payload);
    d->nmap++;
}

static const struct pmap *map_find(struct dispatcher *d, int64_t ours)
{
    for (int i = d->nmap - 1; i >= 0; i--)
        if (d->map[i].ours == ours)
            return &d->map[i];
    return NULL;
}

/* The cursors start at what exists now: earlier history goes in FD and AD. */
static void init_cursors(struct dispatcher *d)
{
    struct api *a = d->a;
    struct errbuf e;
    db_int(a->db, &e, &d->metric_cursor,
           "SELECT coalesce(max(m.id), 0) FROM metric m JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id = ?",
           "s", a->exp_id);
    db_int(a->db, &e, &d->change_cursor, "SELECT coalesce(max(change_seq), 0) FROM trial WHERE experiment_id = ?",
           "s", a->exp_id);
    db_int(a->db, &e, &d->import_cursor,
           "SELECT coalesce(max(id), 0) FROM event WHERE experiment_id = ? AND entity = 'import'", "s", a->exp_id);
}

/* FD: every finished trial's result (as `experiment export` gives it) plus every earlier
 * import; AD: the trials still waiting or running, as parameter records of source
 * "resumed" (the dispatcher continues its parameter ids after them). */
static void replay(struct dispatcher *d)
{
    struct api *a = d->a;
    struct errbuf e;
    struct strbuf fd;
    sb_init(&fd);
    sb_puts(&fd, "[");
    int nfd = 0;
    sqlite3_stmt *st = db_query(a->db, &e, "SELECT reason FROM event WHERE experiment_id = ? AND entity = 'import'"
                                           " AND id <= ? ORDER BY id", "si", a->exp_id, d->import_cursor);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        cJSON *arr = cJSON_Parse((const char *)sqlite3_column_text(st, 0));
        const cJSON *it;
        cJSON_ArrayForEach(it, arr) {
            char *s = cJSON_PrintUnformatted(it);
            sb_printf(&fd, "%s%s", nfd++ ? "," : "", s);
            free(s);
        }
        cJSON_Delete(arr);
    }
    if (st)
        sqlite3_reset(st);
    st = db_query(a->db, &e, "SELECT id, parameters, final_metric_json FROM trial WHERE experiment_id = ?"
                             " AND status = 'SUCCEEDED' AND final_metric_json IS NOT NULL ORDER BY sequence",
                  "s", a->exp_id);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        sb_printf(&fd, "%s{\"parameter\":%s,\"value\":", nfd++ ? "," : "", (const char *)sqlite3_column_text(st, 1));
        json_put_string(&fd, (const char *)sqlite3_column_text(st, 2));
        sb_puts(&fd, ",\"trialJobId\":");
        json_put_string(&fd, (const char *)sqlite3_column_text(st, 0));
        sb_puts(&fd, "}");
    }
    if (st)
        sqlite3_reset(st);
    sb_puts(&fd, "]");
    if (nfd && d->custom_tuner) {
        log_info("dispatcher: replaying %d finished result(s) (FD)", nfd);
        send_cmd(d, "FD", fd.buf);
    }
    sb_free(&fd);

    struct strbuf ad;
    sb_init(&ad);
    sb_puts(&ad, "[");
    int nad = 0;
    st = db_query(a->db, &e, "SELECT parameter_id, parameters, parameter_label FROM trial WHERE experiment_id = ?"
                             " AND status IN ('WAITING','RUNNING') AND parameter_id IS NOT NULL ORDER BY sequence",
                  "s", a->exp_id);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        int64_t pid = col_i64(st, 0);
        /* the wire id: the label the dispatcher gave it, else the index */
        struct strbuf idj;
        sb_init(&idj);
        const char *label = (const char *)sqlite3_column_text(st, 2);
        if (is_int_text(label))
            sb_puts(&idj, label);
        else if (label)
            json_put_string(&idj, label);
        else
            sb_printf(&idj, "%lld", (long long)pid);
        char *rec = xasprintf("{\"parameter_id\":%s,\"parameter_source\":\"resumed\",\"parameters\":%s,"
                              "\"parameter_index\":0}", idj.buf, (const char *)sqlite3_column_text(st, 1));
        map_add(d, pid, idj.buf, rec);
        sb_free(&idj);
        sb_printf(&ad, "%s%s", nad++ ? "," : "", rec);
        free(rec);
    }
    if (st)
        sqlite3_reset(st);
    sb_puts(&ad, "]");
    if (nad && d->custom_tuner) {
        log_info("dispatcher: %d trial(s) still waiting or running (AD)", nad);
        send_cmd(d, "AD", ad.buf);
    }
    sb_free(&ad);
}

/* ---------------- feeding: metrics, trial ends, imports, search space ---------------- */

static int was_ended(struct dispatcher *d, const char *id)
{
    for (int i = 0; i < d->nended; i++)
        if (strcmp(d->ended[i], id) == 0)
            return 1;
    return 0;
}

struct ended_trial {
    char *id, *status, *payload; /* payload NULL: not one of the dispatcher's trials (no EN) */
};

/* ME with a trial's metric JSON (NNI's shape; the value a JSON string). The
 * parameter_id the trial reported: its parameter.cfg carried the dispatcher's own id
 * (trial.parameter_label) or the index, so it is the dispatcher's id already; a number
 * when it is one, as NNI's JSON has it. */
static void send_metric(struct dispatcher *d, const char *trial_id, const char *pid, int final, int64_t sequence,
                        const char *value)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "{\"parameter_id\":");
    if (is_int_text(pid))
        sb_puts(&sb, pid);
    else if (pid && *pid)
        json_put_string(&sb, pid);
    else
        sb_puts(&sb, "null");
    sb_puts(&sb, ",\"trial_job_id\":");
    json_put_string(&sb, trial_id);
    sb_printf(&sb, ",\"type\":\"%s\",\"sequence\":%lld,\"value\":", final ? "FINAL" : "PERIODICAL",
              (long long)sequence);
    json_put_string(&sb, value);
    sb_puts(&sb, "}");
    send_cmd(d, "ME", sb.buf);
    sb_free(&sb);
}

static void feed(struct dispatcher *d)
{
    struct api *a = d->a;
    struct errbuf e;
    /* search space changed (PUT /experiment?update_type=SEARCH_SPACE): SS */
    if (d->custom_tuner && a->exp.search_space && d->sent_space && strcmp(a->exp.search_space, d->sent_space) != 0) {
        free(d->sent_space);
        d->sent_space = xstrdup(a->exp.search_space);
        d->no_more = 0;
        send_cmd(d, "SS", d->sent_space);
    }
    /* imported data: FD */
    sqlite3_stmt *st = db_query(a->db, &e, "SELECT id, reason FROM event WHERE experiment_id = ? AND entity = 'import'"
                                           " AND id > ? ORDER BY id", "si", a->exp_id, d->import_cursor);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        d->import_cursor = col_i64(st, 0);
        if (d->custom_tuner)
            send_cmd(d, "FD", (const char *)sqlite3_column_text(st, 1));
    }
    if (st)
        sqlite3_reset(st);
    /* trials that ended, read before the metrics: a worker stores a trial's last
     * metrics with its end in one transaction, so every metric of an ended trial seen
     * here is in the metric query below, and goes to the dispatcher before its EN. A
     * trial's FINAL goes with its end (ME, then EN, as NNI sends them), not when it
     * arrives: an attempt whose job vanished and is retried may have sent one, and the
     * tuner must learn the result of the attempt that ended (NNI's tuners keep one
     * result per parameter id: TPE raises on a second). */
    struct ended_trial *ends = NULL;
    int nends = 0, capends = 0;
    st = db_query(a->db, &e, "SELECT id, status, parameter_id, parameters, change_seq FROM trial"
                             " WHERE experiment_id = ? AND change_seq > ? ORDER BY change_seq LIMIT 1000",
                  "si", a->exp_id, d->change_cursor);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        d->change_cursor = col_i64(st, 4);
        const char *status = (const char *)sqlite3_column_text(st, 1);
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if (!trial_status_final(status) || sqlite3_column_type(st, 2) == SQLITE_NULL || was_ended(d, id))
            continue;
        /* not one of the dispatcher's trials (a customized trial from the API): its FINAL
         * still goes (NNI's dispatcher hands it to tuners that opted in), no EN */
        const struct pmap *m = map_find(d, col_i64(st, 2));
        if (nends == capends) {
            capends = capends ? 2 * capends : 16;
            ends = xrealloc(ends, sizeof *ends * (size_t)capends);
        }
        ends[nends].id = xstrdup(id);
        ends[nends].status = xstrdup(status);
        ends[nends].payload = m ? xstrdup(m->payload) : NULL;
        nends++;
    }
    if (st)
        sqlite3_reset(st);
    /* intermediate metrics, as they come (the assessor's) */
    st = db_query(a->db, &e, "SELECT m.id, m.trial_id, m.parameter_id, m.type, m.sequence, m.value FROM metric m"
                             " JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id = ? AND m.id > ?"
                             " AND m.attempt = t.attempt ORDER BY m.id LIMIT 2000",
                  "si", a->exp_id, d->metric_cursor);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        d->metric_cursor = col_i64(st, 0);
        if (strcmp((const char *)sqlite3_column_text(st, 3), "FINAL") == 0 || !(d->custom_assessor || d->custom_tuner))
            continue;
        send_metric(d, (const char *)sqlite3_column_text(st, 1), (const char *)sqlite3_column_text(st, 2), 0,
                    col_i64(st, 4), (const char *)sqlite3_column_text(st, 5));
    }
    if (st)
        sqlite3_reset(st);
    for (int i = 0; i < nends; i++) {
        /* its final result (the first FINAL of the attempt that ended), then its end */
        st = d->custom_tuner ? db_query(a->db, &e, "SELECT m.parameter_id, m.sequence, m.value FROM metric m"
                                                   " JOIN trial t ON t.id = m.trial_id WHERE m.trial_id = ?"
                                                   " AND m.attempt = t.attempt AND m.type = 'FINAL' ORDER BY m.id LIMIT 1",
                                        "s", ends[i].id)
                             : NULL;
        if (st && sqlite3_step(st) == SQLITE_ROW)
            send_metric(d, ends[i].id, (const char *)sqlite3_column_text(st, 0), 1, col_i64(st, 1),
                        (const char *)sqlite3_column_text(st, 2));
        if (st)
            sqlite3_reset(st);
        if (ends[i].payload) {
            struct strbuf sb;
            sb_init(&sb);
            sb_puts(&sb, "{\"trial_job_id\":");
            json_put_string(&sb, ends[i].id);
            sb_puts(&sb, ",\"event\":");
            json_put_string(&sb, ends[i].status);
            sb_puts(&sb, ",\"hyper_params\":");
            json_put_string(&sb, ends[i].payload);
            sb_puts(&sb, "}");
            send_cmd(d, "EN", sb.buf);
            sb_free(&sb);
        }
        if (d->nended == d->capended) {
            d->capended = d->capended ? 2 * d->capended : 64;
            d->ended = xrealloc(d->ended, sizeof *d->ended * (size_t)d->capended);
        }
        d->ended[d->nended++] = ends[i].id;
        free(ends[i].status);
        free(ends[i].payload);
    }
    free(ends);
}

/* ---------------- commands from the dispatcher ---------------- */

static void on_kick(evutil_socket_t fd, short ev, void *arg)
{
    (void)fd; (void)ev;
    struct dispatcher *d = arg;
    d->kick_pending = 0;
    sched_tick(d->a);
}

/* New parameters: the scheduler takes them now rather than on its next tick. */
static void kick_scheduler(struct dispatcher *d)
{
    if (d->kick_pending)
        return;
    struct timeval zero = {0, 0};
    if (event_base_once(d->a->base, -1, EV_TIMEOUT, on_kick, d, &zero) == 0)
        d->kick_pending = 1;
}

static void on_ready(struct dispatcher *d)
{
    d->state = D_READY;
    d->deadline_ms = 0;
    log_info("dispatcher initialized (pid %d, %s channel)", (int)d->pid, d->use_ws ? "WebSocket" : "pipe");
    replay(d);
    feed(d);
    kick_scheduler(d);
}

static void on_tr(struct dispatcher *d, const char *content)
{
    cJSON *rec = cJSON_Parse(content);
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(rec, "parameters");
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(rec, "parameter_id");
    if (!cJSON_IsObject(params) || !pid) {
        fail(d, "tuner sent a trial (TR) that is not a parameter record with parameter_id and a parameters"
                " object: %.300s", content);
        cJSON_Delete(rec);
        return;
    }
    if (d->nqueue == d->capqueue) {
        d->capqueue = d->capqueue ? 2 * d->capqueue : 16;
        d->queue = xrealloc(d->queue, sizeof *d->queue * (size_t)d->capqueue);
    }
    struct tr *t = &d->queue[d->nqueue++];
    t->params = cJSON_Duplicate(params, 1);
    t->disp_id = cJSON_PrintUnformatted(pid);
    t->payload = xstrdup(content);
    cJSON_Delete(rec);
    if (d->requested > 0)
        d->requested--;
    if (d->requested == 0)
        d->deadline_ms = 0;
    kick_scheduler(d);
}

static void on_ki(struct dispatcher *d, const char *content)
{
    /* the trial id as a JSON string literal: "AbCd1", quotes included */
    cJSON *j = cJSON_Parse(content);
    char shown[SNIPPET_SIZE];
    if (!cJSON_IsString(j)) {
        log_warn("dispatcher: KI without a trial id string: %s", snippet(shown, content, strlen(content)));
        cJSON_Delete(j);
        return;
    }
    struct errbuf e;
    struct api *a = d->a;
    char *id = NULL;
    /* only a trial of this experiment */
    if (db_text(a->db, &e, &id, "SELECT id FROM trial WHERE id = ? AND experiment_id = ?", "ss", j->valuestring,
                a->exp_id) > 0 && id) {
        const char *who = a->cfg->assessor.class_name ? a->cfg->assessor.class_name
                          : a->cfg->tuner.class_name  ? a->cfg->tuner.class_name : "dispatcher";
        char *why = xasprintf("%s: early stop (assessor's KillTrialJob)", who);
        int rc = trial_request_kill(a->db, id, "EARLY_STOPPED", why, &e);
        if (rc > 0) {
            log_info("trial %s: %s", id, why);
            children_wake(a);
        } else if (rc < 0) {
            log_error("cannot stop trial %s: %s", id, e.msg);
        }
        free(why);
    } else {
        log_warn("dispatcher: KI for unknown trial %s", snippet(shown, j->valuestring, strlen(j->valuestring)));
    }
    free(id);
    cJSON_Delete(j);
}

static void on_command(struct dispatcher *d, const char *type, const char *content)
{
    char type_shown[SNIPPET_SIZE];
    log_debug("dispatcher -> %s (%zu bytes)", snippet(type_shown, type, strnlen(type, 8)), strlen(content));
    if (d->state == D_FAILED || d->state == D_CLOSED)
        return;
    if (strcmp(type, "ID") == 0) {
        if (d->state == D_INIT)
            on_ready(d);
    } else if (strcmp(type, "TR") == 0) {
        on_tr(d, content);
    } else if (strcmp(type, "NO") == 0) {
        d->no_more = 1;
        d->requested = 0;
        d->deadline_ms = 0;
        kick_scheduler(d);
    } else if (strcmp(type, "KI") == 0) {
        on_ki(d, content);
    } else if (strcmp(type, "ER") == 0) {
        fail(d, "tuner error (dispatcher process): %s", *content ? content : tail_text(d));
    } else if (strcmp(type, "SP") == 0) {
        log_warn("dispatcher: SendTrialJobParameter (SP) is not supported (multi-phase), ignored");
    } else if (strcmp(type, "_bye_") == 0) {
        char shown[SNIPPET_SIZE];
        log_info("dispatcher said goodbye: %s", snippet(shown, content, strlen(content)));
    } else if (strcmp(type, "_nop_") != 0) {
        log_warn("dispatcher: unknown command %s ignored", type_shown);
    }
}

/* ---------------- the pipe channel ---------------- */

static void on_pipe_read(struct bufferevent *bev, void *arg)
{
    struct dispatcher *d = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        if (!d->from || d->state == D_FAILED)
            return; /* a command failed the dispatcher and closed the channel */
        size_t n = evbuffer_get_length(in);
        if (n < 16)
            return;
        char *p = (char *)evbuffer_pullup(in, 16);
        char type[3];
        size_t off, len;
        struct errbuf e;
        int rc = pipe_frame_parse(p, n, MAX_MESSAGE, type, &off, &len, &e);
        if (rc < 0) {
            fail(d, "tuner command channel (fd 4): %s", e.msg);
            return;
        }
        if (n < off + len)
            return;
        p = (char *)evbuffer_pullup(in, (ev_ssize_t)(off + len));
        char *content = xstrndup(p + off, len);
        evbuffer_drain(in, off + len);
        on_command(d, type, content);
        free(content);
    }
}

static void on_channel_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct dispatcher *d = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        if (!d->gone_since_ms)
            d->gone_since_ms = mono_ms();
    }
}

/* ---------------- the WebSocket channel ---------------- */

static void ws_send_frame(struct dispatcher *d, int op, const void *p, size_t n)
{
    struct strbuf sb;
    sb_init(&sb);
    ws_frame_encode(&sb, op, p, n, NULL);
    bufferevent_write(d->ws, sb.buf, sb.len);
    sb_free(&sb);
}

static void ws_message(struct dispatcher *d, const char *text, size_t n)
{
    cJSON *j = cJSON_ParseWithLength(text, n);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(j, "content");
    if (!cJSON_IsString(type)) {
        fail(d, "tuner WebSocket message is not {\"type\",\"content\"} JSON: %.200s", text);
    } else {
        const char *c = cJSON_IsString(content) ? content->valuestring : "";
        if (strcmp(type->valuestring, "_bye_") == 0) {
            const cJSON *reason = cJSON_GetObjectItemCaseSensitive(j, "reason");
            c = cJSON_IsString(reason) ? reason->valuestring : c;
        }
        on_command(d, type->valuestring, c);
    }
    cJSON_Delete(j);
}

static void on_ws_read(struct bufferevent *bev, void *arg)
{
    struct dispatcher *d = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    while (d->ws && d->state != D_FAILED) {
        size_t n = evbuffer_get_length(in);
        if (n < 2)
            return;
        /* the header first (at most 14 bytes), then the whole frame */
        unsigned char *p = evbuffer_pullup(in, (ev_ssize_t)(n < 14 ? n : 14));
        struct ws_frame f;
        struct errbuf e;
        int rc = ws_frame_parse(p, n < 14 ? n : 14, MAX_MESSAGE, 1, &f, &e);
        if (rc < 0) {
            fail(d, "tuner WebSocket: %s", e.msg);
            return;
        }
        if (f.header_len > n || n - f.header_len < f.len)
            return; /* incomplete */
        p = evbuffer_pullup(in, (ev_ssize_t)(f.header_len + f.len));
        unsigned char *payload = xmalloc((size_t)f.len + 1);
        ws_frame_payload(p, &f, payload);
        payload[f.len] = 0;
        evbuffer_drain(in, f.header_len + f.len);
        switch (f.opcode) {
        case WS_TEXT:
        case WS_BINARY:
        case WS_CONT:
            if ((f.opcode == WS_CONT) != d->ws_in_message) {
                free(payload);
                fail(d, "tuner WebSocket: unexpected %s frame", f.opcode == WS_CONT ? "continuation" : "data");
                return;
            }
            if (d->ws_msg.len + f.len > MAX_MESSAGE) {
                free(payload);
                fail(d, "tuner WebSocket: message over %u bytes", MAX_MESSAGE);
                return;
            }
            sb_add(&d->ws_msg, (const char *)payload, (size_t)f.len);
            d->ws_in_message = !f.fin;
            if (f.fin) {
                size_t len = d->ws_msg.len;
                char *msg = sb_detach(&d->ws_msg);
                ws_message(d, msg ? msg : "", msg ? len : 0);
                free(msg);
            }
            break;
        case WS_PING:
            ws_send_frame(d, WS_PONG, payload, (size_t)f.len);
            break;
        case WS_CLOSE:
            /* echo the close; the process is expected to go away */
            ws_send_frame(d, WS_CLOSE, payload, f.len >= 2 ? 2 : 0);
            if (!d->gone_since_ms)
                d->gone_since_ms = mono_ms();
            bufferevent_disable(bev, EV_READ);
            break;
        default:
            break; /* pong */
        }
        free(payload);
    }
}

static int header_has_token(const char *value, const char *token)
{
    if (!value)
        return 0;
    size_t n = strlen(token);
    for (const char *p = value; *p;) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        const char *end = p;
        while (*end && *end != ',')
            end++;
        size_t len = (size_t)(end - p);
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == n && strncasecmp(p, token, n) == 0)
            return 1;
        p = end;
    }
    return 0;
}

static void ws_reply_error(struct evhttp_request *r, int code, const char *msg)
{
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "{\"error\":\"%s\"}", msg);
    evhttp_add_header(evhttp_request_get_output_headers(r), "Content-Type", "application/json");
    evhttp_send_reply(r, code, NULL, b);
    evbuffer_free(b);
}

void dispatcher_ws_request(struct api *a, struct evhttp_request *r)
{
    (void)a;
    struct dispatcher *d = g_disp;
    struct evkeyvalq *h = evhttp_request_get_input_headers(r);
    const char *key = evhttp_find_header(h, "Sec-WebSocket-Key");
    const char *version = evhttp_find_header(h, "Sec-WebSocket-Version");
    if (evhttp_request_get_command(r) != EVHTTP_REQ_GET || !header_has_token(evhttp_find_header(h, "Upgrade"), "websocket") ||
        !header_has_token(evhttp_find_header(h, "Connection"), "upgrade") || !key || strlen(key) != 24) {
        ws_reply_error(r, 400, "/tuner is the tuner's WebSocket channel: a GET with Upgrade: websocket,"
                               " Connection: Upgrade and a Sec-WebSocket-Key");
        return;
    }
    if (!version || strcmp(version, "13") != 0) {
        evhttp_add_header(evhttp_request_get_output_headers(r), "Sec-WebSocket-Version", "13");
        ws_reply_error(r, 426, "Sec-WebSocket-Version must be 13");
        return;
    }
    struct evhttp_connection *conn = evhttp_request_get_connection(r);
    char *peer = NULL;
    ev_uint16_t port = 0;
    if (conn)
        evhttp_connection_get_peer(conn, &peer, &port);
    int loopback = peer && (str_starts(peer, "127.") || strcmp(peer, "::1") == 0 || str_starts(peer, "::ffff:127."));
    if (!loopback) {
        ws_reply_error(r, 403, "the tuner channel accepts connections from this host only");
        return;
    }
    /* WebSockets are not under CORS: a page in a local browser could otherwise take the
     * tuner's place. Browsers always send Origin here, the dispatcher does not. */
    if (evhttp_find_header(h, "Origin")) {
        ws_reply_error(r, 403, "the tuner channel is not for browsers (the request carries an Origin)");
        return;
    }
    if (!d || !d->use_ws || d->state != D_CONNECTING || d->ws) {
        ws_reply_error(r, 409, "no tuner connection is expected now");
        return;
    }
    struct bufferevent *bev = evhttp_connection_get_bufferevent(conn);
    if (!bev) {
        ws_reply_error(r, 500, "connection has no buffer");
        return;
    }
    /* From here the connection is ours: evhttp never sees another byte of it (its
     * callbacks are replaced) and the request stays unanswered until the connection is
     * freed with evhttp_connection_free (dispatcher_shutdown, close_channel). */
    char accept[29];
    ws_accept_key(key, accept);
    guard_passthrough(d->a->guard, bev); /* WebSocket frames from here, not HTTP */
    bufferevent_setcb(bev, on_ws_read, NULL, on_channel_event, d);
    bufferevent_set_timeouts(bev, NULL, NULL);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    struct evbuffer *out = bufferevent_get_output(bev);
    evbuffer_add_printf(out, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
    d->ws_conn = conn;
    d->ws = bev;
    d->last_ping_ms = mono_ms();
    log_info("dispatcher connected over WebSocket from %s:%u", peer, (unsigned)port);
    d->state = D_INIT;
    d->sent_space = xstrdup(d->a->exp.search_space ? d->a->exp.search_space : "{}");
    send_cmd(d, "IN", d->sent_space);
    expect(d, "ID (Initialized)", d->answer_timeout_ms);
    if (evbuffer_get_length(bufferevent_get_input(bev)))
        on_ws_read(bev, d);
}

/* ---------------- the process ---------------- */

static void on_err_read(struct bufferevent *bev, void *arg)
{
    struct dispatcher *d = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char buf[4096];
    int n;
    while ((n = evbuffer_remove(in, buf, sizeof buf - 1)) > 0) {
        buf[n] = 0;
        fputs(buf, stderr); /* the api's log, as NNI's dispatcher output lands in the manager's */
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

/* Moves fd to a number >= 10, so that dup2 to 2/3/4 cannot clobber another pipe end. */
static int high_fd(int fd)
{
    int h = fcntl(fd, F_DUPFD, 10);
    return h < 0 ? fd : h;
}

static int launch(struct dispatcher *d)
{
    struct api *a = d->a;
    struct errbuf e;
    char *logdir = xasprintf("%s/log", a->exp.exp_dir);
    char *ckpt = xasprintf("%s/checkpoint", a->exp.exp_dir);
    mkdir_p(logdir, 0700);
    mkdir_p(ckpt, 0700);
    /* --exp_params: base64 of the config's algorithm sections, all that NNI's
     * `python -m nni` reads (tuner, assessor, advisor, deprecated). NNI sends the whole
     * config less searchSpace; the rest stays out because a command line is readable
     * by every local user (ps), and trainingService holds passwords and tokens. A
     * built-in section stays in trialq's C code, so the process is not given it. */
    cJSON *params = cJSON_CreateObject();
    static const char *const algo_keys[] = {"tuner", "assessor", "advisor", "deprecated"};
    for (size_t k = 0; k < sizeof algo_keys / sizeof *algo_keys; k++) {
        const cJSON *sec = cJSON_GetObjectItemCaseSensitive(a->cfg->canonical, algo_keys[k]);
        if (sec)
            cJSON_AddItemToObject(params, algo_keys[k], cJSON_Duplicate(sec, 1));
    }
    if (!d->custom_tuner)
        log_info("dispatcher: built-in tuner %s runs in trialq; the process only assesses", a->cfg->tuner.name);
    if (a->cfg->assessor.set && !a->cfg->assessor.class_name)
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

    /* the environment: ours plus NNI's (spec §6.1) */
    const char *gpus = "";
    char *gpu_list = NULL;
    const cJSON *tg = cJSON_GetObjectItemCaseSensitive(a->cfg->canonical, "tunerGpuIndices");
    if (cJSON_IsArray(tg)) {
        struct strbuf sb;
        sb_init(&sb);
        const cJSON *g;
        cJSON_ArrayForEach(g, tg) sb_printf(&sb, "%s%d", sb.len ? "," : "", g->valueint);
        gpu_list = sb_detach(&sb);
        gpus = gpu_list ? gpu_list : "";
    } else if (cJSON_IsString(tg)) {
        gpus = tg->valuestring;
    }
    char *ours[9];
    int no = 0;
    ours[no++] = xstrdup("SDK_PROCESS=dispatcher");
    ours[no++] = xasprintf("NNI_MODE=%s", a->action == ACTION_RESUME ? "resume" : "start");
    ours[no++] = xasprintf("NNI_CHECKPOINT_DIRECTORY=%s", ckpt);
    ours[no++] = xasprintf("NNI_LOG_DIRECTORY=%s", logdir);
    ours[no++] = xasprintf("NNI_LOG_LEVEL=%s", a->cfg->log_level ? a->cfg->log_level : "info");
    ours[no++] = xstrdup("NNI_INCLUDE_INTERMEDIATE_RESULTS=false");
    ours[no++] = xasprintf("CUDA_VISIBLE_DEVICES=%s", gpus);
    if (d->use_ws) {
        /* [/<prefix>]: the url prefix as stored ("" or "/a/b") */
        const char *prefix = a->exp.url_prefix ? a->exp.url_prefix : "";
        while (*prefix == '/')
            prefix++;
        size_t pl = strlen(prefix);
        while (pl && prefix[pl - 1] == '/')
            pl--;
        ours[no++] = xasprintf("NNI_TUNER_COMMAND_CHANNEL=ws://localhost:%d%s%.*s/tuner", a->exp.port, pl ? "/" : "",
                               (int)pl, prefix);
    }
    free(gpu_list);
    static const char *const replaced[] = {"SDK_PROCESS=", "NNI_MODE=", "NNI_CHECKPOINT_DIRECTORY=",
                                           "NNI_LOG_DIRECTORY=", "NNI_LOG_LEVEL=", "NNI_INCLUDE_INTERMEDIATE_RESULTS=",
                                           "CUDA_VISIBLE_DEVICES=", "NNI_TUNER_COMMAND_CHANNEL=", NULL};
    int nenv = 0;
    while (environ[nenv])
        nenv++;
    char **envp = xcalloc((size_t)(nenv + no + 1), sizeof *envp);
    int k = 0;
    for (int i = 0; i < nenv; i++) {
        int skip = 0;
        for (int r = 0; replaced[r]; r++)
            if (str_starts(environ[i], replaced[r]))
                skip = 1;
        if (!skip)
            envp[k++] = environ[i];
    }
    for (int i = 0; i < no; i++)
        envp[k++] = ours[i];
    envp[k] = NULL;

    int to[2] = {-1, -1}, from[2] = {-1, -1}, err[2] = {-1, -1};
    int ok = pipe2(err, O_CLOEXEC) == 0 && (d->use_ws || (pipe2(to, O_CLOEXEC) == 0 && pipe2(from, O_CLOEXEC) == 0));
    pid_t parent = getpid();
    pid_t pid = ok ? fork() : -1;
    if (pid == 0) {
        if (child_of(parent) < 0) /* an api killed with SIGKILL takes it along */
            _exit(127);
        int errw = high_fd(err[1]), cin = -1, cout = -1;
        if (!d->use_ws) {
            cin = high_fd(to[0]);
            cout = high_fd(from[1]);
        }
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        dup2(errw, 1);
        dup2(errw, 2);
        if (!d->use_ws) {
            dup2(cin, 3);
            dup2(cout, 4);
        }
        close_fds_from(d->use_ws ? 3 : 5);
        if (chdir(logdir) < 0)
            _exit(126);
        execle("/bin/sh", "sh", "-c", cmd, (char *)NULL, envp);
        _exit(127);
    }
    int rc = 0;
    if (pid < 0) {
        fail(d, "cannot start the tuner process: %s", strerror(errno));
        rc = -1;
    } else {
        setpgid(pid, pid);
        d->pid = pid;
        d->pid_start = proc_start_time(pid);
        proc_register(a->db, a->exp_id, "dispatcher", pid, d->pid_start, &d->proc_row, &e);
        log_info("dispatcher started: pid %d, %s channel: sh -c \"%.200s...\"", (int)pid,
                 d->use_ws ? "WebSocket" : "pipe", cmd);
        evutil_make_socket_nonblocking(err[0]);
        d->err = bufferevent_socket_new(a->base, err[0], BEV_OPT_CLOSE_ON_FREE);
        err[0] = -1;
        bufferevent_setcb(d->err, on_err_read, NULL, on_err_event, d);
        bufferevent_enable(d->err, EV_READ);
        if (d->use_ws) {
            d->state = D_CONNECTING;
            expect(d, "WebSocket connection", CONNECT_TIMEOUT_MS);
        } else {
            evutil_make_socket_nonblocking(to[1]);
            evutil_make_socket_nonblocking(from[0]);
            d->to = bufferevent_socket_new(a->base, to[1], BEV_OPT_CLOSE_ON_FREE);
            d->from = bufferevent_socket_new(a->base, from[0], BEV_OPT_CLOSE_ON_FREE);
            to[1] = from[0] = -1;
            bufferevent_setcb(d->to, NULL, NULL, on_channel_event, d);
            bufferevent_setcb(d->from, on_pipe_read, NULL, on_channel_event, d);
            bufferevent_enable(d->to, EV_WRITE);
            bufferevent_enable(d->from, EV_READ);
            d->state = D_INIT;
            d->sent_space = xstrdup(a->exp.search_space ? a->exp.search_space : "{}");
            send_cmd(d, "IN", d->sent_space);
            expect(d, "ID (Initialized)", d->answer_timeout_ms);
        }
    }
    int fds[] = {to[0], to[1], from[0], from[1], err[0], err[1]};
    for (int i = 0; i < 6; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    for (int i = 0; i < no; i++)
        free(ours[i]);
    free(envp);
    free(cmd);
    free(logdir);
    free(ckpt);
    return rc;
}

/* ---------------- the timer: deadlines, liveness, feeding ---------------- */

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
        /* the process ended (or closed the channel) without being told to: a crash */
        char status[64] = "";
        int st = d->wait_status;
        if (d->reaped || (d->pid > 0 && waitpid(d->pid, &st, WNOHANG) == d->pid)) {
            if (WIFSIGNALED(st))
                snprintf(status, sizeof status, " (killed by signal %d)", WTERMSIG(st));
            else
                snprintf(status, sizeof status, " (exit code %d)", WEXITSTATUS(st));
        }
        fail(d, "tuner process (dispatcher) ended unexpectedly%s; its last output:\n%s", status, tail_text(d));
        return;
    }
    if (d->deadline_ms && now >= d->deadline_ms && d->state == D_CONNECTING) {
        fail(d, "Tuner did not connect in %d seconds: the dispatcher process never opened the WebSocket channel;"
                " its output:\n%s", CONNECT_TIMEOUT_MS / 1000, tail_text(d));
        return;
    }
    if (d->deadline_ms && now >= d->deadline_ms && d->waiting_trials && d->requested > 0) {
        /* an advisor may hold its answer to GE until running trials report (Hyperband
         * waits for a round): only a silence with nothing running is a hang */
        int64_t active = 0;
        struct errbuf e;
        db_int(d->a->db, &e, &active, "SELECT count(*) FROM trial WHERE experiment_id = ?"
                                      " AND status IN ('WAITING','RUNNING')", "s", d->a->exp_id);
        /* nor is one once the scheduler wants no more trials (budget used, DONE) */
        if (active > 0 || !d->a->exp.status || strcmp(d->a->exp.status, "RUNNING") != 0)
            d->deadline_ms = now + d->answer_timeout_ms;
    }
    if (d->deadline_ms && now >= d->deadline_ms) {
        fail(d, "tuner process (dispatcher) did not answer in time: no %s within %lld s", d->waiting_for,
             (long long)(d->answer_timeout_ms / 1000));
        return;
    }
    if (d->use_ws && d->ws && now - d->last_ping_ms >= PING_MS) {
        ws_send_frame(d, WS_PING, "", 0);
        d->last_ping_ms = now;
    }
    if (d->state == D_READY && !d->a->stopping)
        feed(d);
}

static void ensure_started(struct dispatcher *d)
{
    if (d->state != D_NEW || !d->a->base)
        return;
    init_cursors(d);
    d->timer = event_new(d->a->base, -1, EV_PERSIST, on_timer, d);
    struct timeval tv = {0, POLL_MS * 1000};
    event_add(d->timer, &tv);
    launch(d);
}

void dispatcher_reaped(struct api *a, pid_t pid, int status)
{
    (void)a;
    struct dispatcher *d = g_disp;
    if (!d || pid != d->pid || d->reaped)
        return;
    d->reaped = 1;
    d->wait_status = status;
    if (!d->gone_since_ms)
        d->gone_since_ms = mono_ms();
}

void dispatcher_tick(struct api *a)
{
    (void)a;
    if (g_disp)
        ensure_started(g_disp);
}

int dispatcher_init(struct api *a, struct errbuf *e)
{
    (void)e;
    if (g_disp)
        return 0;
    struct dispatcher *d = xcalloc(1, sizeof *d);
    d->a = a;
    d->custom_tuner = a->cfg->tuner.class_name != NULL;
    d->custom_assessor = a->cfg->assessor.set && a->cfg->assessor.class_name;
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(a->cfg->canonical, "tunerCommandChannel");
    d->use_ws = !(cJSON_IsString(ch) && strcmp(ch->valuestring, "pipe") == 0);
    d->answer_timeout_ms = env_timeout_ms();
    sb_init(&d->tail);
    sb_init(&d->ws_msg);
    g_disp = d;
    return 0;
}

/* ---------------- shutdown ---------------- */

/* Writes what is buffered for fd now (the event loop is not running any more). */
static void flush_sync(struct bufferevent *bev, int64_t deadline)
{
    if (!bev)
        return;
    struct evbuffer *out = bufferevent_get_output(bev);
    evutil_socket_t fd = bufferevent_getfd(bev);
    /* a socket bufferevent freezes the front of its output (only it may write it);
     * it will not write any more: we do */
    evbuffer_unfreeze(out, 1);
    while (fd >= 0 && evbuffer_get_length(out) && mono_ms() < deadline) {
        int n = evbuffer_write(out, fd);
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            break;
        if (n <= 0)
            usleep(10000);
    }
}

static void close_channel(struct dispatcher *d)
{
    if (d->to) {
        bufferevent_free(d->to);
        d->to = NULL;
    }
    if (d->from) {
        bufferevent_free(d->from);
        d->from = NULL;
    }
    if (d->ws_conn) {
        /* frees the bufferevent too; the unanswered upgrade request goes with it */
        bufferevent_disable(d->ws, EV_READ | EV_WRITE);
        evhttp_connection_free(d->ws_conn);
        d->ws_conn = NULL;
        d->ws = NULL;
    }
}

static void disp_free(struct dispatcher *d);

void dispatcher_shutdown(struct api *a)
{
    (void)a;
    struct dispatcher *d = g_disp;
    if (!d)
        return;
    int told = d->state == D_INIT || d->state == D_READY;
    if (told) {
        int64_t deadline = mono_ms() + 2000;
        send_cmd(d, "TE", "");
        if (d->ws) {
            unsigned char code[2] = {4000 >> 8, 4000 & 0xFF}; /* NNI's normal close */
            ws_send_frame(d, WS_CLOSE, code, 2);
        }
        flush_sync(d->use_ws ? d->ws : d->to, deadline);
    }
    d->state = D_CLOSED;
    /* TE ends the process; a stuck one is killed after the grace */
    if (d->pid > 0 && told) {
        int64_t until = mono_ms() + SHUTDOWN_GRACE_MS;
        while (!process_gone(d) && mono_ms() < until)
            usleep(20000);
    }
    terminate_process(d, 1000);
    if (d->err) {
        on_err_read(d->err, d); /* the last words, into the log */
        bufferevent_free(d->err);
        d->err = NULL;
    }
    close_channel(d);
    if (d->timer)
        event_free(d->timer);
    d->timer = NULL;
    if (d->refs == 0)
        disp_free(d); /* no tuner state refers to it (assessor only) */
}

static void disp_free(struct dispatcher *d)
{
    if (g_disp == d)
        g_disp = NULL;
    for (int i = 0; i < d->nqueue; i++) {
        cJSON_Delete(d->queue[i].params);
        free(d->queue[i].disp_id);
        free(d->queue[i].payload);
    }
    free(d->queue);
    for (int i = 0; i < d->nmap; i++) {
        free(d->map[i].disp_id);
        free(d->map[i].payload);
    }
    free(d->map);
    for (int i = 0; i < d->nended; i++)
        free(d->ended[i]);
    free(d->ended);
    free(d->sent_space);
    sb_free(&d->tail);
    sb_free(&d->ws_msg);
    free(d);
}

/* ---------------- the tuner interface ---------------- */

static int disp_create(const cJSON *class_args, const struct ss_space *space, uint64_t seed, void **state,
                       struct errbuf *e)
{
    (void)class_args; (void)space; (void)seed;
    if (!g_disp)
        return errf(e, "tuner.className: a customized tuner runs only in `trialq api` (no dispatcher here)");
    struct handle *h = xcalloc(1, sizeof *h);
    h->d = g_disp;
    g_disp->refs++;
    *state = h;
    return 0;
}

static void disp_destroy(void *state)
{
    struct handle *h = state;
    if (!h)
        return;
    struct dispatcher *d = h->d;
    free(h);
    if (--d->refs == 0 && d->state == D_CLOSED)
        disp_free(d);
}

static int64_t free_slots(struct dispatcher *d)
{
    struct api *a = d->a;
    int64_t active = 0;
    struct errbuf e;
    db_int(a->db, &e, &active, "SELECT count(*) FROM trial WHERE experiment_id = ? AND status IN ('WAITING','RUNNING')",
           "s", a->exp_id);
    int64_t n = a->exp.concurrency - active;
    if (a->exp.max_trial_number > 0 && a->exp.max_trial_number - a->exp.next_sequence < n)
        n = a->exp.max_trial_number - a->exp.next_sequence;
    return n < 1 ? 1 : n;
}

static int disp_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                        struct errbuf *e)
{
    (void)hist; (void)e;
    struct dispatcher *d = ((struct handle *)state)->d;
    ensure_started(d);
    if (d->state != D_READY)
        return 2; /* not connected yet, or failed: the experiment's status says which */
    if (d->nqueue) {
        struct tr t = d->queue[0];
        memmove(d->queue, d->queue + 1, sizeof *d->queue * (size_t)(d->nqueue - 1));
        d->nqueue--;
        map_add(d, index, t.disp_id, t.payload);
        *params = t.params;
        free(t.disp_id);
        free(t.payload);
        return 1;
    }
    if (d->no_more)
        return 0;
    if (d->requested == 0) {
        int64_t n = free_slots(d);
        char count[24];
        snprintf(count, sizeof count, "%lld", (long long)n);
        d->requested = (int)n;
        send_cmd(d, "GE", count);
        expect(d, WAIT_TR, d->answer_timeout_ms);
    }
    return 2;
}

/* The dispatcher's own parameter_id of the suggestion given for index, when it is not
 * the index itself (an advisor's "0-4_0_12", or a count of its own): it goes to the
 * trial (trial.parameter_label, its parameter.cfg), so its metrics come back with it. */
static char *disp_label(void *state, int64_t index)
{
    struct dispatcher *d = ((struct handle *)state)->d;
    const struct pmap *m = map_find(d, index);
    if (!m)
        return NULL;
    cJSON *j = cJSON_Parse(m->disp_id);
    char *out = NULL;
    if (cJSON_IsString(j))
        out = xstrdup(j->valuestring);
    else if (cJSON_IsNumber(j) && j->valuedouble == (double)index)
        out = NULL;
    else if (j && !cJSON_IsNull(j))
        out = xstrdup(m->disp_id);
    cJSON_Delete(j);
    return out;
}

const struct tuner_ops dispatcher_tuner_ops = {
    .name = "customized",
    .aliases = NULL,
    .create = disp_create,
    .suggest = disp_suggest,
    .destroy = disp_destroy,
    .label = disp_label,
    .needs_history = 1, /* asked only when a slot is free, as NNI asks with GE */
    .index_spans_spaces = 1, /* the dispatcher numbers its own suggestions */
};
