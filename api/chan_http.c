/* chan_http.c: the trial command channel's own HTTP/1.1 connections.
 *
 * A trial's SDK keeps one keep-alive connection to /env/<token>/<trial> and sends one
 * request at a time: PUT a command, GET (long-poll) the next one. Through evhttp each
 * request cost a list of allocated headers, four changes of the socket's epoll
 * interest and a reply written only on the next pass of the loop: at thousands of
 * metrics a second that was most of the api's time (bench/metric_ingest). So the first
 * channel request on a connection takes the connection over from evhttp, as the
 * tuner's WebSocket does (api/dispatcher.c): from then on its socket is read here,
 * requests are parsed here (the part of HTTP/1.1 the channel needs: Content-Length
 * bodies, keep-alive, Expect: 100-continue) and each reply goes out at once in one
 * send(). The evhttp connection stays allocated, its first request unanswered as far as
 * evhttp knows, until the connection ends: evhttp_connection_free then closes the
 * socket.
 *
 * A taken-over connection carries channel requests only: another path gets 400 and
 * the connection closes (the client opens a new one for the REST API). Malformed
 * requests get 400 (431 for headers over 8 kB, 413 for a body over the channel's 4 MB,
 * 400 for a body on a GET, 501 for a chunked body, 505 for an HTTP version other than
 * 1.0/1.1) and the connection closes.
 *
 * Outside of evhttp, the front door's limits (api/guard.c) hold all the same: a body
 * being read takes its declared length from the api's body budget (503 beyond it), a
 * request's head and body must be in within the request deadline from its first byte
 * (408; not reset by each byte, and not counted while the api holds the request before
 * it), and no more than a head is read ahead of what the request needs. A trial has at
 * most PER_TRIAL connections: the one a request with its token adds beyond that closes
 * its oldest connection that waits on the client (the oldest partial request first, 503),
 * so the trial's own fresh request always has one. An idle connection closes after
 * IDLE_MS. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>

#include "api/chan_http.h"
#include "api/guard.h"
#include "api/routes.h"
#include "common/http1.h"

#define MAX_HEAD (8 << 10) /* request line + headers of a channel request */
#define READ_CHUNK 16384
#define IDLE_MS 120000     /* a keep-alive connection with nothing pending, nothing read */
#define SWEEP_MS 250       /* deadlines and idle connections are looked at this often */
#define PER_TRIAL 4        /* connections per trial (a poll, a command, one spare) */
#define SHRINK_AT (4 * READ_CHUNK) /* an input buffer above this shrinks when it empties */

struct cconn {
    struct cconn *prev, *next;
    struct api *a;
    struct evhttp_connection *evcon; /* owns the socket */
    evutil_socket_t fd;
    struct event *rev, *wev, *kick;
    char *in;
    size_t in_len, in_cap;
    size_t scanned;       /* bytes of in already searched for the end of the head */
    char *out;
    size_t out_len, out_off;
    int pending;          /* a request waits for its reply */
    int close_after;      /* close once the reply is out */
    int peer_gone;        /* EOF or an error: nothing more is read or written */
    int continued;        /* 100 Continue sent for the request being read */
    int in_cb;
    int trusted;          /* a request on it carried a trial's right token */
    char *trial;          /* the trial of that token; NULL before */
    int64_t reserved;     /* the guard's budget held by the body being read */
    size_t want;          /* the most bytes read ahead: the head and body of the request being
                           * read and a head more; 0: a head (MAX_HEAD + 1) */
    int64_t req_start_ms; /* the first byte of the request being read; 0: none */
    int64_t last_ms;
};

/* The api's connections (a->cconns). */
struct cconns {
    struct cconn *list;
    struct event *sweep_ev;
};

/* ---------------- writing ---------------- */

static void conn_free(struct cconn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        c->a->cconns->list = c->next;
    if (c->next)
        c->next->prev = c->prev;
    event_free(c->rev);
    event_free(c->wev);
    event_free(c->kick);
    guard_release(c->a->guard, c->reserved);
    free(c->trial);
    free(c->in);
    free(c->out);
    evhttp_connection_free(c->evcon); /* closes the socket */
    free(c);
}

static int out_empty(const struct cconn *c)
{
    return c->out_off == c->out_len;
}

/* Frees the connection when nothing more can happen on it. Only from the top of a
 * callback of this file (never under a caller that still holds c). */
static void settle(struct cconn *c)
{
    if (c->pending)
        return;
    if (c->peer_gone || (c->close_after && out_empty(c)))
        conn_free(c);
}

static void gone(struct cconn *c)
{
    c->peer_gone = 1;
    event_del(c->rev);
    event_del(c->wev);
    c->out_off = c->out_len = 0;
}

static void out_write(struct cconn *c, const char *p, size_t n)
{
    if (c->peer_gone)
        return;
    if (out_empty(c)) {
        c->out_off = c->out_len = 0;
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
        if (w == (ssize_t)n)
            return;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            gone(c);
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
    event_add(c->wev, NULL);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct cconn *c = arg;
    while (!out_empty(c)) {
        ssize_t w = send(fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            gone(c);
            break;
        }
        c->out_off += (size_t)w;
    }
    event_del(c->wev);
    c->out_off = c->out_len = 0;
    if (!c->pending && c->in_len && !c->close_after && !c->peer_gone)
        event_active(c->kick, EV_TIMEOUT, 0); /* a request waited behind this reply */
    settle(c);
}

void cconn_reply(struct cconn *c, int code, const char *body)
{
    size_t blen = body ? strlen(body) : 0;
    char head[256];
    int n = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\n%sContent-Length: %zu\r\n%s%s\r\n", code, http1_reason(code),
                     blen ? "Content-Type: application/json\r\n" : "", blen,
                     code == 405 ? "Allow: GET, PUT\r\n" : "", c->close_after ? "Connection: close\r\n" : "");
    if (blen) {
        char *msg = xmalloc((size_t)n + blen);
        memcpy(msg, head, (size_t)n);
        memcpy(msg + n, body, blen);
        out_write(c, msg, (size_t)n + blen);
        free(msg);
    } else {
        out_write(c, head, (size_t)n);
    }
    c->pending = 0;
    c->last_ms = mono_ms();
    /* what comes next (the next request already read, closing) happens at the top of
     * the loop, not under the caller */
    if (!c->in_cb && (c->in_len || c->peer_gone || c->close_after))
        event_active(c->kick, EV_TIMEOUT, 0);
}

/* Which of two connections to close first: a partial request before an idle
 * connection, the older of two. */
static int goes_before(const struct cconn *x, const struct cconn *y)
{
    if (!x->req_start_ms != !y->req_start_ms)
        return x->req_start_ms != 0;
    return x->req_start_ms ? x->req_start_ms < y->req_start_ms : x->last_ms < y->last_ms;
}

/* Closes, for a newcomer of the same trial, the oldest of its connections that waits on
 * the client: a partial request (503, answered) before an idle one. */
static void evict_for(struct cconn *newcomer)
{
    struct cconn *best = NULL;
    int n = 0;
    for (struct cconn *c = newcomer->a->cconns->list; c; c = c->next) {
        if (c == newcomer || !c->trial || strcmp(c->trial, newcomer->trial) != 0 || c->close_after || c->peer_gone)
            continue;
        n++;
        if (c->pending || !out_empty(c))
            continue;
        if (!best || goes_before(c, best))
            best = c;
    }
    if (n < PER_TRIAL || !best)
        return;
    if (best->req_start_ms) {
        best->pending = 1;
        best->close_after = 1;
        cconn_error(best, 503, "trial %.40s has %d channel connections, its limit: the oldest one waiting for its"
                    " request to come in is closed", best->trial, n + 1);
    } else {
        best->close_after = 1;
        event_active(best->kick, EV_TIMEOUT, 0);
    }
}

void cconn_trust(struct cconn *c, const char *trial_id)
{
    c->trusted = 1;
    if (!c->trial) {
        c->trial = xstrdup(trial_id);
        evict_for(c);
    }
}

void cconn_error(struct cconn *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *body = error_body(fmt, ap);
    va_end(ap);
    /* a connection that never showed a trial's token is not kept after an error:
     * adoption comes before the token check, and it must not stay ours for nothing */
    if (!c->trusted)
        c->close_after = 1;
    cconn_reply(c, code, body);
    free(body);
}

int cconn_alive(struct cconn *c)
{
    if (c->peer_gone)
        return 0;
    char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

/* ---------------- reading ---------------- */

/* The request of a complete head and body: the channel's, or a 4xx. */
static void handle(struct cconn *c, const struct http1_head *h, const char *body)
{
    struct api *a = c->a;
    char *raw = xstrndup(h->target, h->target_len);
    char *q = strchr(raw, '?');
    if (q)
        *q = '\0';
    struct segments segs = {.n = 0};
    int sp = split_path(raw, &segs);
    c->pending = 1;
    if (sp == 0 && strip_prefix(a, &segs) == 0 && segs.n == 3 && strcmp(segs.seg[0], "env") == 0) {
        struct chan_req r = {.method = h->method == HTTP1_GET ? CHAN_GET : h->method == HTTP1_PUT ? CHAN_PUT : CHAN_OTHER,
                             .token = segs.seg[1], .trial_id = segs.seg[2],
                             .body = body, .body_len = (size_t)h->content_length, .json_body = h->json_body};
        channel_request(a, c, &r);
    } else {
        c->close_after = 1;
        cconn_error(c, 400, "%.200s: this connection carries a trial command channel (/env/...); open another"
                    " connection for other routes", raw);
    }
    segments_free(&segs);
    free(raw);
}

/* The most bytes the input may hold: what the request being read needs and a head more. */
static size_t read_limit(const struct cconn *c)
{
    return c->want ? c->want : MAX_HEAD + 1;
}

/* Reads what the socket has, up to read_limit; 0, or -1 when the peer is gone. */
static int read_some(struct cconn *c)
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
        ssize_t n = recv(c->fd, c->in + c->in_len, room, 0);
        if (n > 0) {
            c->in_len += (size_t)n;
            c->last_ms = mono_ms();
            if ((size_t)n < room)
                return 0; /* drained for now */
            continue;
        }
        if (n == 0)
            return -1;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    }
}

/* The request read (or refused): its budget back, the clock stopped. */
static void request_over(struct cconn *c)
{
    guard_release(c->a->guard, c->reserved);
    c->reserved = 0;
    c->want = 0;
    c->req_start_ms = 0;
}

/* Serves the requests waiting in the buffer, one at a time. */
static void serve(struct cconn *c)
{
    c->in_cb = 1;
    while (!c->pending && !c->peer_gone && !c->close_after && out_empty(c) && c->in_len) {
        if (!c->req_start_ms)
            c->req_start_ms = mono_ms();
        struct http1_head h;
        const char *msg = NULL;
        int rc = http1_parse_head(c->in, c->in_len, &c->scanned, MAX_HEAD, BODY_CHANNEL, &h, &msg);
        if (rc == 0)
            break;
        if (rc != 1) {
            request_over(c);
            c->close_after = 1;
            c->pending = 1;
            cconn_error(c, rc, "trial channel: %s", msg);
            break;
        }
        size_t total = h.head_len + (size_t)h.content_length;
        if (c->in_len < total) {
            if (!c->reserved && guard_reserve(c->a->guard, h.content_length) < 0) {
                request_over(c);
                c->close_after = 1;
                c->pending = 1;
                cconn_error(c, 503, "trial channel: the api is receiving its budget of request bodies already"
                            " (TRIALQ_API_BODY_BUDGET); retry");
                break;
            }
            c->reserved = h.content_length;
            c->want = total + MAX_HEAD;
            if (h.expect_continue && !c->continued) {
                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                out_write(c, cont, sizeof cont - 1);
                c->continued = 1;
            }
            break;
        }
        c->continued = 0;
        /* other methods (HEAD among them: a reply with a body would desync the client)
         * get their 405 and the connection ends */
        if (h.close || (h.http10 && !h.keep_alive) || (h.method != HTTP1_GET && h.method != HTTP1_PUT))
            c->close_after = 1;
        handle(c, &h, c->in + h.head_len);
        request_over(c);
        memmove(c->in, c->in + total, c->in_len - total);
        c->in_len -= total;
        if (c->in_cap > SHRINK_AT && c->in_len < c->in_cap / 4) {
            c->in_cap = c->in_len + READ_CHUNK * 2;
            c->in = xrealloc(c->in, c->in_cap);
        }
    }
    c->in_cb = 0;
    /* a client may send its next request while this one waits, but no more than a head */
    if (!c->peer_gone) {
        if (c->in_len >= read_limit(c))
            event_del(c->rev);
        else
            event_add(c->rev, NULL);
    }
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    struct cconn *c = arg;
    if (read_some(c) < 0)
        gone(c);
    serve(c);
    settle(c);
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    struct cconn *c = arg;
    serve(c); /* reading again if a long wait had stopped it */
    settle(c);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    struct cconns *set = arg;
    int64_t now = mono_ms();
    for (struct cconn *c = set->list, *next; c; c = next) {
        next = c->next;
        if (c->pending || !out_empty(c) || c->close_after || c->peer_gone)
            continue;
        if (c->req_start_ms && now - c->req_start_ms > guard_request_timeout_ms(c->a->guard)) {
            request_over(c);
            c->pending = 1;
            c->close_after = 1;
            cconn_error(c, 408, "trial channel: the request's head and body were not in within %lld s"
                        " (TRIALQ_API_REQUEST_TIMEOUT)", (long long)(guard_request_timeout_ms(c->a->guard) / 1000));
        } else if (!c->req_start_ms && !c->in_len && now - c->last_ms > IDLE_MS) {
            conn_free(c);
        }
    }
}

struct cconn *cconn_adopt(struct api *a, struct evhttp_request *r)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(r);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0 || evbuffer_get_length(bufferevent_get_output(bev)))
        return NULL;
    /* from here evhttp sees no more of this connection: its callbacks are gone and its
     * request stays unanswered until evhttp_connection_free (conn_free) */
    bufferevent_disable(bev, EV_READ | EV_WRITE);
    bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
    bufferevent_set_timeouts(bev, NULL, NULL);
    struct cconn *c = xcalloc(1, sizeof *c);
    c->a = a;
    c->evcon = evcon;
    c->fd = fd;
    c->last_ms = mono_ms();
    struct evbuffer *left = bufferevent_get_input(bev); /* bytes after the first request */
    guard_take_held(a->guard, bev, left); /* and those the guard had not handed to evhttp yet */
    size_t n = evbuffer_get_length(left);
    c->in_cap = n + READ_CHUNK * 2;
    c->in = xmalloc(c->in_cap);
    if (n)
        evbuffer_remove(left, c->in, n);
    c->in_len = n;
    const char *conn_hdr = evhttp_find_header(evhttp_request_get_input_headers(r), "Connection");
    int keep = conn_hdr && http1_token_in(conn_hdr, conn_hdr + strlen(conn_hdr), "keep-alive");
    int close = conn_hdr && http1_token_in(conn_hdr, conn_hdr + strlen(conn_hdr), "close");
    enum evhttp_cmd_type m = evhttp_request_get_command(r);
    c->close_after = close || (r->major == 1 && r->minor == 0 && !keep) ||
                     (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_PUT);
    c->rev = event_new(a->base, fd, EV_READ | EV_PERSIST, on_read, c);
    c->wev = event_new(a->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    c->kick = event_new(a->base, -1, 0, on_kick, c);
    event_add(c->rev, NULL);
    if (!a->cconns) {
        a->cconns = xcalloc(1, sizeof *a->cconns);
        a->cconns->sweep_ev = event_new(a->base, -1, EV_PERSIST, on_sweep, a->cconns);
        struct timeval tv = {SWEEP_MS / 1000, (SWEEP_MS % 1000) * 1000};
        event_add(a->cconns->sweep_ev, &tv);
    }
    struct cconns *set = a->cconns;
    c->next = set->list;
    if (set->list)
        set->list->prev = c;
    set->list = c;
    c->pending = 1; /* the request it was adopted with */
    return c;
}

void cconn_close_all(struct api *a)
{
    struct cconns *set = a->cconns;
    if (!set)
        return;
    while (set->list) {
        struct cconn *c = set->list;
        if (!out_empty(c) && !c->peer_gone) /* the loop has ended: one last try */
            if (send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
            }
        conn_free(c);
    }
    event_free(set->sweep_ev);
    free(set);
    a->cconns = NULL;
}
