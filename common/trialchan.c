/* trialchan.c: see trialchan.h. */
#include "common/trialchan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/common.h"
#include "common/http1.h"
#include "common/minijson.h"

#define READ_CHUNK 16384
#define SHRINK_AT (4 * READ_CHUNK) /* an input buffer above this shrinks when it empties */

/* ---------------- a connection: writing ---------------- */

void tc_conn_init(struct tc_conn *c, const struct tc_ops *ops, int fd)
{
    memset(c, 0, sizeof *c);
    c->ops = ops;
    c->fd = fd;
    c->last_ms = mono_ms();
}

/* The request read (or refused): its budget back, its clock stopped. */
static void request_over(struct tc_conn *c)
{
    if (c->reserved)
        c->ops->release(c, c->reserved);
    c->reserved = 0;
    c->want = 0;
    c->req_start_ms = 0;
}

void tc_conn_release(struct tc_conn *c)
{
    request_over(c);
    free(c->in);
    free(c->out);
    c->in = c->out = NULL;
    c->in_len = c->in_cap = c->out_len = c->out_off = 0;
}

int tc_out_empty(const struct tc_conn *c)
{
    return c->out_off == c->out_len;
}

void tc_gone(struct tc_conn *c)
{
    c->peer_gone = 1;
    c->out_off = c->out_len = 0;
    if (c->ops->gone)
        c->ops->gone(c);
}

static int send_failed(void)
{
    return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

/* Sends p[0..n) now, or what the socket does not take once it is writable. */
static void out_write(struct tc_conn *c, const char *p, size_t n)
{
    if (c->peer_gone)
        return;
    if (tc_out_empty(c)) {
        c->out_off = c->out_len = 0;
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w == (ssize_t)n)
            return;
        if (w < 0 && send_failed()) {
            tc_gone(c);
            return;
        }
        if (w > 0) {
            p += w;
            n -= (size_t)w;
        }
    }
    c->out = xrealloc(c->out, c->out_len + n);
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
    c->ops->want_write(c);
}

int tc_flush(struct tc_conn *c)
{
    while (!tc_out_empty(c)) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (!send_failed())
                return 0;
            tc_gone(c); /* the peer is gone: nothing more to say */
            return 1;
        }
        c->out_off += (size_t)w;
    }
    c->out_off = c->out_len = 0;
    return 1;
}

void tc_reply(struct tc_conn *c, int code, const char *body)
{
    size_t blen = body ? strlen(body) : 0;
    /* one send of head and body, from the stack unless the body is long (a command) */
    char small[1024];
    int n = snprintf(small, 256, "HTTP/1.1 %d %s\r\n%sContent-Length: %zu\r\n%s%s\r\n", code, http1_reason(code),
                     blen ? "Content-Type: application/json\r\n" : "", blen, code == 405 ? "Allow: GET, PUT\r\n" : "",
                     c->close_after ? "Connection: close\r\n" : "");
    char *msg = (size_t)n + blen <= sizeof small ? small : xmalloc((size_t)n + blen);
    if (msg != small)
        memcpy(msg, small, (size_t)n);
    if (blen)
        memcpy(msg + n, body, blen);
    out_write(c, msg, (size_t)n + blen);
    if (msg != small)
        free(msg);
    c->pending = 0;
    c->last_ms = mono_ms();
    if (c->ops->replied)
        c->ops->replied(c);
}

void tc_verror(struct tc_conn *c, int code, const char *fmt, va_list ap)
{
    char *body = json_error_body(fmt, ap);
    tc_reply(c, code, body);
    free(body);
}

void tc_error(struct tc_conn *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tc_verror(c, code, fmt, ap);
    va_end(ap);
}

int tc_alive(struct tc_conn *c)
{
    if (c->peer_gone)
        return 0;
    char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

/* ---------------- a connection: reading ---------------- */

/* The most bytes the input may hold: what the request being read needs and a head more. */
static size_t read_limit(const struct tc_conn *c)
{
    return c->want ? c->want : TC_MAX_HEAD + 1;
}

int tc_input_full(const struct tc_conn *c)
{
    return c->in_len >= read_limit(c);
}

int tc_read(struct tc_conn *c)
{
    for (;;) {
        size_t limit = read_limit(c);
        if (c->in_len >= limit)
            return 0; /* parsed (and refused, or waited for) before any more is read */
        if (c->in_cap - c->in_len < READ_CHUNK && c->in_cap < limit) {
            c->in_cap = c->in_len + READ_CHUNK * 2 < limit ? c->in_len + READ_CHUNK * 2 : limit;
            c->in = xrealloc(c->in, c->in_cap);
        }
        size_t room = (c->in_cap < limit ? c->in_cap : limit) - c->in_len;
        ssize_t n = recv(c->fd, c->in + c->in_len, room, MSG_DONTWAIT);
        if (n > 0) {
            c->in_len += (size_t)n;
            c->last_ms = mono_ms();
            if ((size_t)n < room)
                return 0; /* drained for now (an EOF shows on the next read) */
            continue;
        }
        if (n == 0)
            return -1;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -2;
    }
}

/* Answers the request being read with an error and closes the connection after it. */
static void refuse(struct tc_conn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void refuse(struct tc_conn *c, int code, const char *fmt, ...)
{
    request_over(c);
    c->close_after = 1;
    c->pending = 1;
    va_list ap;
    va_start(ap, fmt);
    tc_verror(c, code, fmt, ap);
    va_end(ap);
}

/* A complete head whose body is not all in: refused from its head, or its budget taken
 * and 100 Continue sent when asked for. */
static void body_wait(struct tc_conn *c, const struct http1_head *h, size_t total)
{
    char msg[512];
    int code = c->ops->head ? c->ops->head(c, h, msg, sizeof msg) : 0;
    if (code) { /* no body is read for it */
        refuse(c, code, "%s", msg);
        return;
    }
    if (!c->reserved) {
        if (c->ops->reserve(c, h->content_length, msg, sizeof msg) < 0) {
            refuse(c, 503, "%s", msg);
            return;
        }
        c->reserved = h->content_length;
        c->want = total + TC_MAX_HEAD;
    }
    if (h->expect_continue && !c->continued) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        out_write(c, cont, sizeof cont - 1);
        c->continued = 1;
    }
}

/* The request of total bytes was served: the input moves on to the next one. */
static void consume(struct tc_conn *c, size_t total)
{
    memmove(c->in, c->in + total, c->in_len - total);
    c->in_len -= total;
    if (c->in_cap > SHRINK_AT && c->in_len < c->in_cap / 4) {
        c->in_cap = c->in_len + READ_CHUNK * 2;
        c->in = xrealloc(c->in, c->in_cap);
    }
}

void tc_serve(struct tc_conn *c)
{
    while (!c->pending && !c->peer_gone && !c->close_after && tc_out_empty(c) && c->in_len) {
        if (!c->req_start_ms)
            c->req_start_ms = mono_ms();
        struct http1_head h;
        const char *msg = NULL;
        int rc = http1_parse_head(c->in, c->in_len, &c->scanned, TC_MAX_HEAD, TC_MAX_BODY, &h, &msg);
        if (rc == 0)
            break;
        if (rc != 1) {
            refuse(c, rc, "trial channel: %s", msg);
            break;
        }
        size_t total = h.head_len + (size_t)h.content_length;
        if (c->in_len < total) {
            body_wait(c, &h, total);
            break;
        }
        c->continued = 0;
        /* other methods (HEAD among them: a reply with a body would desync the client)
         * get their 405 and the connection ends */
        if (h.close || (h.http10 && !h.keep_alive) || (h.method != HTTP1_GET && h.method != HTTP1_PUT))
            c->close_after = 1;
        c->pending = 1;
        c->ops->request(c, &h, c->in + h.head_len);
        request_over(c);
        consume(c, total);
    }
}

/* ---------------- a connection: limits ---------------- */

int tc_waits_on_client(const struct tc_conn *c)
{
    return !c->pending && tc_out_empty(c) && !c->close_after && !c->peer_gone;
}

int tc_goes_before(const struct tc_conn *x, const struct tc_conn *y)
{
    if (!x->req_start_ms != !y->req_start_ms)
        return x->req_start_ms != 0;
    return x->req_start_ms ? x->req_start_ms < y->req_start_ms : x->last_ms < y->last_ms;
}

void tc_evict(struct tc_conn *c, const char *why)
{
    if (c->req_start_ms)
        refuse(c, 503, "%s", why);
    else
        c->close_after = 1;
}

int tc_overdue(struct tc_conn *c, int64_t now, int64_t timeout_ms)
{
    if (!c->req_start_ms || !tc_waits_on_client(c) || now - c->req_start_ms <= timeout_ms)
        return 0;
    refuse(c, 408, "trial channel: the request's head and body were not in within %lld s"
           " (TRIALQ_API_REQUEST_TIMEOUT)", (long long)(timeout_ms / 1000));
    return 1;
}

int tc_idle(const struct tc_conn *c, int64_t now)
{
    return tc_waits_on_client(c) && !c->req_start_ms && !c->in_len && now - c->last_ms > TC_IDLE_MS;
}

int tc_method_refused(struct tc_conn *c, const struct http1_head *h)
{
    if (h->method == HTTP1_GET || h->method == HTTP1_PUT)
        return 0;
    c->close_after = 1;
    tc_error(c, 405, "the trial command channel takes GET and PUT");
    return 1;
}

const char *tc_path(const struct http1_head *h, size_t *len)
{
    const char *q = memchr(h->target, '?', h->target_len);
    *len = q ? (size_t)(q - h->target) : h->target_len;
    return h->target;
}

/* ---------------- commands ---------------- */

static void cmd_refuse(struct tc_cmd *cmd, int code, const char *msg)
{
    cmd->kind = TC_CMD_REFUSED;
    cmd->code = code;
    snprintf(cmd->msg, sizeof cmd->msg, "%s", msg);
}

#define NO_METRIC "body: a metric command needs \"metric\": the metric record as a JSON string"

void tc_command(const char *body, size_t len, int json_body, const char *trial_id, const char *who,
                struct tc_cmd *cmd)
{
    memset(cmd, 0, sizeof *cmd);
    if (!json_body) {
        cmd->kind = TC_CMD_REFUSED;
        cmd->code = 415;
        snprintf(cmd->msg, sizeof cmd->msg, "PUT %.100s: Content-Type must be application/json", trial_id);
        return;
    }
    static const char *const keys[] = {"type", "metric"};
    const char *v[2];
    size_t vl[2], tl = 0;
    int rc = body ? mj_members(body, len, keys, 2, v, vl) : -1;
    char *type = rc > 0 && v[0] ? mj_string(v[0], vl[0], &tl) : NULL;
    if (rc < 0) {
        cmd_refuse(cmd, 400, "body: not a JSON object (a trial command)");
    } else if (!type) {
        cmd_refuse(cmd, 400, "body: the command has no string \"type\"");
    } else if (strcmp(type, "request_parameter") == 0) {
        cmd->kind = TC_CMD_PARAMETER;
    } else if (strcmp(type, "metric") == 0) {
        if (v[1] && (cmd->metric = mj_string(v[1], vl[1], &cmd->metric_len)))
            cmd->kind = TC_CMD_METRIC;
        else
            cmd_refuse(cmd, 400, NO_METRIC);
    } else {
        char key[96], shown[SNIPPET_SIZE];
        snprintf(key, sizeof key, "%strial channel %.60s", who, trial_id);
        log_input(LOG_WARN, key, "unexpected commands", "unexpected command type %s", snippet(shown, type, tl));
        cmd->kind = TC_CMD_OTHER;
    }
    free(type);
}

void tc_cmd_free(struct tc_cmd *cmd)
{
    free(cmd->metric);
    cmd->metric = NULL;
}

int tc_metric_check(const char *m, size_t ml, const char *trial_id, char *msg, size_t size)
{
    static const char *const keys[] = {"type", "value", "trial_job_id"};
    const char *f[3];
    size_t fl[3], len;
    int rc = mj_members(m, ml, keys, 3, f, fl), code = 400;
    char *type = rc > 0 && f[0] ? mj_string(f[0], fl[0], &len) : NULL;
    char *tj = NULL;
    if (rc < 0) {
        snprintf(msg, size, "metric is not a JSON object: %.80s", m);
    } else if (!type || (strcmp(type, "PERIODICAL") != 0 && strcmp(type, "FINAL") != 0)) {
        snprintf(msg, size, "metric has no type PERIODICAL or FINAL: %.80s", m);
    } else if (!f[1]) {
        snprintf(msg, size, "metric has no value: %.80s", m);
    } else {
        /* the record names its trial: only this channel's */
        int named = f[2] != NULL;
        if (named && !(tj = mj_string(f[2], fl[2], &len)) && fl[2] == 4 && memcmp(f[2], "null", 4) == 0)
            named = 0; /* null: as NNI's SDK sends without a trial id */
        code = 200;
        if (named && !(tj && strcmp(tj, trial_id) == 0)) {
            snprintf(msg, size, "metric of trial %.40s refused on the channel of trial %s", tj ? tj : "?", trial_id);
            code = 403;
        }
    }
    free(tj);
    free(type);
    return code;
}

char *tc_parameter_command(const char *record)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "{\"type\":\"parameter\",\"parameter\":");
    json_put_string(&sb, record);
    sb_puts(&sb, "}");
    return sb_detach(&sb);
}

/* ---------------- the long poll ---------------- */

/* Answers the waiting GET with the first queued command, if both exist. */
static void deliver(struct tc_queue *q)
{
    if (!q->waiting || q->n == 0)
        return;
    struct tc_conn *c = q->waiting;
    q->waiting = NULL;
    if (!tc_alive(c)) {
        /* the poller went away: the command waits for the next poll; the reply only
         * ends the request (or goes nowhere) */
        tc_reply(c, 408, "");
        return;
    }
    char *cmd = q->cmd[0];
    memmove(q->cmd, q->cmd + 1, (size_t)(q->n - 1) * sizeof q->cmd[0]);
    q->n--;
    tc_reply(c, 200, cmd);
    free(cmd);
}

int tc_queue_push(struct tc_queue *q, char *cmd)
{
    int dropped = q->n == TC_MAX_QUEUED;
    if (dropped) { /* a trial that asks and never reads: keep the newest */
        free(q->cmd[0]);
        memmove(q->cmd, q->cmd + 1, (size_t)(TC_MAX_QUEUED - 1) * sizeof q->cmd[0]);
        q->n--;
    }
    q->cmd[q->n++] = cmd;
    deliver(q);
    return dropped;
}

int tc_queue_poll(struct tc_queue *q, struct tc_conn *c, int closing)
{
    if (q->waiting) { /* one poll at a time: the older one ends as if it timed out */
        struct tc_conn *old = q->waiting;
        q->waiting = NULL;
        tc_reply(old, 408, "");
    }
    if (q->n == 0 && closing) {
        tc_reply(c, 410, "");
        return 0;
    }
    q->waiting = c;
    q->deadline_ms = mono_ms() + TC_POLL_MS;
    deliver(q);
    return q->waiting == c;
}

void tc_queue_expire(struct tc_queue *q, int64_t now, int closing)
{
    if (!q->waiting || now < q->deadline_ms)
        return;
    struct tc_conn *c = q->waiting;
    q->waiting = NULL;
    tc_reply(c, closing ? 410 : 408, "");
}

void tc_queue_forget(struct tc_queue *q, const struct tc_conn *c)
{
    if (q->waiting == c)
        q->waiting = NULL;
}

void tc_queue_close(struct tc_queue *q)
{
    if (q->waiting) {
        struct tc_conn *c = q->waiting;
        q->waiting = NULL;
        tc_reply(c, 410, "");
    }
    for (int i = 0; i < q->n; i++)
        free(q->cmd[i]);
    q->n = 0;
}
