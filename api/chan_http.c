/* chan_http.c: the trial command channel's own HTTP/1.1 connections.
 *
 * A trial's SDK keeps one keep-alive connection to /env/<token>/<trial> and sends one
 * request at a time: PUT a command, GET (long-poll) the next one. Through evhttp each
 * request cost a list of allocated headers, four changes of the socket's epoll
 * interest and a reply written only on the next pass of the loop: at thousands of
 * metrics a second that was most of the api's time (bench/metric_ingest). So the first
 * channel request on a connection takes the connection over from evhttp, as the
 * tuner's WebSocket does (api/dispatcher.c): from then on its socket is read here,
 * requests are read and answered by the channel's protocol (common/trialchan.c: the part
 * of HTTP/1.1 the channel needs, Content-Length bodies, keep-alive, Expect:
 * 100-continue, the limits below) and each reply goes out at once in one send(); this
 * file adapts it to libevent's loop and the api's guard. The evhttp connection stays allocated, its first request unanswered as far as
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

#define SWEEP_MS 250       /* deadlines and idle connections are looked at this often */
#define PER_TRIAL 4        /* connections per trial (a poll, a command, one spare) */

struct cconn {
    struct tc_conn t;      /* first: the protocol's callbacks get &t */
    struct cconn *prev, *next;
    struct api *a;
    struct evhttp_connection *evcon; /* owns the socket */
    struct event *rev, *wev, *kick;
    int in_cb;
    int trusted;          /* a request on it carried a trial's right token */
    char *trial;          /* the trial of that token; NULL before */
};

/* The api's connections (a->cconns). */
struct cconns {
    struct cconn *list;
    struct event *sweep_ev;
};

static struct cconn *cconn_of(struct tc_conn *t)
{
    return (struct cconn *)t;
}

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
    tc_conn_release(&c->t);
    free(c->trial);
    evhttp_connection_free(c->evcon); /* closes the socket */
    free(c);
}

/* Frees the connection when nothing more can happen on it. Only from the top of a
 * callback of this file (never under a caller that still holds c). */
static void settle(struct cconn *c)
{
    if (c->t.pending)
        return;
    if (c->t.peer_gone || (c->t.close_after && tc_out_empty(&c->t)))
        conn_free(c);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    struct cconn *c = arg;
    if (!tc_flush(&c->t))
        return;
    event_del(c->wev);
    if (!c->t.pending && c->t.in_len && !c->t.close_after && !c->t.peer_gone)
        event_active(c->kick, EV_TIMEOUT, 0); /* a request waited behind this reply */
    settle(c);
}

static void want_write(struct tc_conn *t)
{
    event_add(cconn_of(t)->wev, NULL);
}

static void replied(struct tc_conn *t)
{
    struct cconn *c = cconn_of(t);
    /* what comes next (the next request already read, closing) happens at the top of
     * the loop, not under the caller */
    if (!c->in_cb && (t->in_len || t->peer_gone || t->close_after))
        event_active(c->kick, EV_TIMEOUT, 0);
}

static void gone(struct tc_conn *t)
{
    event_del(cconn_of(t)->rev);
    event_del(cconn_of(t)->wev);
}

/* Closes, for a newcomer of the same trial, the oldest of its connections that waits on
 * the client: a partial request (503, answered) before an idle one. */
static void evict_for(struct cconn *newcomer)
{
    struct cconn *best = NULL;
    int n = 0;
    for (struct cconn *c = newcomer->a->cconns->list; c; c = c->next) {
        if (c == newcomer || !c->trial || strcmp(c->trial, newcomer->trial) != 0 || c->t.close_after ||
            c->t.peer_gone)
            continue;
        n++;
        if (tc_waits_on_client(&c->t) && (!best || tc_goes_before(&c->t, &best->t)))
            best = c;
    }
    if (n < PER_TRIAL || !best)
        return;
    char why[200];
    snprintf(why, sizeof why, "trial %.40s has %d channel connections, its limit: the oldest one waiting for its"
             " request to come in is closed", best->trial, n + 1);
    tc_evict(&best->t, why);
    event_active(best->kick, EV_TIMEOUT, 0);
}

void cconn_trust(struct tc_conn *t, const char *trial_id)
{
    struct cconn *c = cconn_of(t);
    c->trusted = 1;
    if (!c->trial) {
        c->trial = xstrdup(trial_id);
        evict_for(c);
    }
}

void cconn_error(struct tc_conn *t, int code, const char *fmt, ...)
{
    /* a connection that never showed a trial's token is not kept after an error:
     * adoption comes before the token check, and it must not stay ours for nothing */
    if (!cconn_of(t)->trusted)
        t->close_after = 1;
    va_list ap;
    va_start(ap, fmt);
    tc_verror(t, code, fmt, ap);
    va_end(ap);
}

/* ---------------- reading ---------------- */

/* The request of a complete head and body: the channel's, or a 4xx. */
static void handle(struct tc_conn *t, const struct http1_head *h, const char *body)
{
    struct cconn *c = cconn_of(t);
    struct api *a = c->a;
    char *raw = xstrndup(h->target, h->target_len);
    char *q = strchr(raw, '?');
    if (q)
        *q = '\0';
    struct segments segs = {.n = 0};
    int sp = split_path(raw, &segs);
    if (sp == 0 && strip_prefix(a, &segs) == 0 && segs.n == 3 && strcmp(segs.seg[0], "env") == 0) {
        struct chan_req r = {.method = h->method == HTTP1_GET ? CHAN_GET : h->method == HTTP1_PUT ? CHAN_PUT : CHAN_OTHER,
                             .token = segs.seg[1], .trial_id = segs.seg[2],
                             .body = body, .body_len = (size_t)h->content_length, .json_body = h->json_body};
        channel_request(a, t, &r);
    } else {
        t->close_after = 1;
        cconn_error(t, 400, "%.200s: this connection carries a trial command channel (/env/...); open another"
                    " connection for other routes", raw);
    }
    segments_free(&segs);
    free(raw);
}

static int reserve(struct tc_conn *t, int64_t n, char *msg, size_t size)
{
    if (guard_reserve(cconn_of(t)->a->guard, n) == 0)
        return 0;
    snprintf(msg, size, "trial channel: the api is receiving its budget of request bodies already"
             " (TRIALQ_API_BODY_BUDGET); retry");
    return -1;
}

static void release(struct tc_conn *t, int64_t n)
{
    guard_release(cconn_of(t)->a->guard, n);
}

static const struct tc_ops ops = {
    .reserve = reserve, .release = release, .request = handle, .want_write = want_write, .replied = replied,
    .gone = gone,
};

/* Serves the requests waiting in the buffer, one at a time. */
static void serve(struct cconn *c)
{
    c->in_cb = 1;
    tc_serve(&c->t);
    c->in_cb = 0;
    /* a client may send its next request while this one waits, but no more than a head */
    if (!c->t.peer_gone) {
        if (tc_input_full(&c->t))
            event_del(c->rev);
        else
            event_add(c->rev, NULL);
    }
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)fd; (void)what;
    struct cconn *c = arg;
    if (tc_read(&c->t) < 0)
        tc_gone(&c->t);
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
        if (tc_overdue(&c->t, now, guard_request_timeout_ms(c->a->guard)))
            continue;
        if (tc_idle(&c->t, now))
            conn_free(c);
    }
}

struct tc_conn *cconn_adopt(struct api *a, struct evhttp_request *r)
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
    tc_conn_init(&c->t, &ops, fd);
    c->a = a;
    c->evcon = evcon;
    struct evbuffer *left = bufferevent_get_input(bev); /* bytes after the first request */
    guard_take_held(a->guard, bev, left); /* and those the guard had not handed to evhttp yet */
    size_t n = evbuffer_get_length(left);
    c->t.in_cap = n + TC_MAX_HEAD;
    c->t.in = xmalloc(c->t.in_cap);
    if (n)
        evbuffer_remove(left, c->t.in, n);
    c->t.in_len = n;
    const char *conn_hdr = evhttp_find_header(evhttp_request_get_input_headers(r), "Connection");
    int keep = conn_hdr && http1_token_in(conn_hdr, conn_hdr + strlen(conn_hdr), "keep-alive");
    int close = conn_hdr && http1_token_in(conn_hdr, conn_hdr + strlen(conn_hdr), "close");
    enum evhttp_cmd_type m = evhttp_request_get_command(r);
    c->t.close_after = close || (r->major == 1 && r->minor == 0 && !keep) ||
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
    c->t.pending = 1; /* the request it was adopted with */
    return &c->t;
}

void cconn_close_all(struct api *a)
{
    struct cconns *set = a->cconns;
    if (!set)
        return;
    while (set->list) {
        struct cconn *c = set->list;
        tc_flush(&c->t); /* the loop has ended: one last try */
        conn_free(c);
    }
    event_free(set->sweep_ev);
    free(set);
    a->cconns = NULL;
}
