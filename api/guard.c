/* guard.c: the api's front door (api/guard.h).
 *
 * evhttp (libevent 2.1) reads a request's body whole before any of our code sees the
 * request, has no cap on connections, and lets an idle timer that one byte resets
 * stand for a deadline. So every accepted connection gets a bufferevent filter
 * (evhttp_set_bevcb) between its socket and evhttp: the filter holds a request's head
 * back until it is complete, reads it with common/http1.c (method, target,
 * Content-Length, Transfer-Encoding, X-Trialq-Token), and only then hands head and body
 * on to evhttp — or answers itself and closes: 413 for a body over the route's limit
 * (routes.c's table), 503 when the bodies in flight would pass the budget, 401/403 for
 * a change without the token beyond loopback, 411 for a chunked body, 400 for a body on
 * a method other than POST, PUT and PATCH (libevent reads one after some of them and
 * not after others: it would escape the budget, or be read as a request), 431 for a head over
 * HEAD_MAX, 400 for a head it cannot read, 408 when head and body are not in within
 * the request deadline (counted while evhttp waits for the client, not while a
 * handler holds the request). The bytes it passes are not changed.
 *
 * Connections are capped: the cap reached, a new connection closes the one that has
 * waited longest for its next request (idle, or trickling one); when none can go, the
 * newcomer gets 503. The fd limit reached anyway (other descriptors), accept() fails:
 * the listener's error callback frees a reserve descriptor, accepts and closes the
 * waiting connection, takes the reserve back and closes the oldest idle connection,
 * so the loop never spins on a listening socket it cannot accept from. All of this is
 * counted and logged once per LOG_INTERVAL_MS, never once per event. */
#include "api/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "api/http_util.h"
#include "common/http1.h"

#define HEAD_MAX (32 << 10)     /* request line + headers; evhttp is given the same bound */
#define SWEEP_MS 100
#define BODY_BATCH (256 << 10)
#define LINGER_MS 2000          /* a refused connection: its answer out, the rest read and dropped */
#define LOG_INTERVAL_MS 10000
#define FD_MARGIN 64            /* descriptors kept for the database, children, TensorBoard */

#define DEFAULT_MAX_CONNECTIONS 4096
#define DEFAULT_BODY_BUDGET (32LL << 20)
#define DEFAULT_REQUEST_TIMEOUT_S 30

enum cstate {
    C_HEAD,    /* reading a request's head (or waiting for one) */
    C_BODY,    /* passing body_left more bytes of an accepted request */
    C_PASS,    /* not HTTP any more, or read by another (a WebSocket, the trial channel) */
    C_REFUSE,  /* answered and closing: what comes is dropped */
};

struct gconn {
    struct gconn *prev, *next;
    struct guard *g;
    struct bufferevent *bev;   /* the filter, evhttp's */
    struct bufferevent *under; /* the socket's */
    enum cstate state;
    size_t scanned;            /* head bytes searched without finding its end (at a line start) */
    int64_t body_left;
    int64_t reserved;          /* budget held by the body being read */
    int64_t waiting_since_ms;  /* opened, or its last request handed on */
    int64_t req_start_ms;      /* first byte of the request being read; 0: none */
    int64_t refused_ms;
    int pending_code;          /* refuse at the next sweep (the socket is not set yet) */
    int shut;                  /* write side shut after the answer */
    int closing;               /* EOF sent to evhttp; it frees the connection */
    struct event *writable;    /* the socket can take more of a reply (on_can_send) */
    struct event *kick;        /* evhttp wrote a reply: send it (on_out_added, on_can_send) */
    int flushing;              /* in on_can_send: filter_out may write */
};

struct guard {
    struct api *a;
    guard_policy_fn policy; /* the route table's limits (routes.c) */
    struct evconnlistener *lev;
    struct event *sweep;
    struct gconn *head, *tail; /* oldest first */
    int nconns;
    int max_conns;
    int64_t budget, in_flight;
    int64_t timeout_ms;
    int reserve_fd;
    long fd_limit;
    int64_t last_log_ms;
    /* since the last log line */
    long shed, evicted, refused_full, timed_out, too_large, over_budget, unauthorized, bad_head;
};

/* ---------------- limits ---------------- */

static int env_num(const char *name, int64_t min, int64_t max, int64_t *out, char *err, size_t errlen)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10) {
            snprintf(err, errlen, "%s=%.40s: not a whole number", name, s);
            return -1;
        }
        v = v * 10 + (*p - '0');
    }
    if (v < min || v > max) {
        snprintf(err, errlen, "%s=%.40s: must be from %lld to %lld", name, s, (long long)min, (long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

int guard_limits_from_env(struct guard_limits *out, char *err, size_t errlen)
{
    int64_t conns = DEFAULT_MAX_CONNECTIONS, budget = DEFAULT_BODY_BUDGET, tmo = DEFAULT_REQUEST_TIMEOUT_S;
    if (env_num("TRIALQ_API_MAX_CONNECTIONS", 16, 1000000, &conns, err, errlen) < 0 ||
        env_num("TRIALQ_API_BODY_BUDGET", MAX_BODY, INT64_C(1) << 40, &budget, err, errlen) < 0 ||
        env_num("TRIALQ_API_REQUEST_TIMEOUT", 1, 3600, &tmo, err, errlen) < 0)
        return -1;
    out->max_connections = (int)conns;
    out->body_budget = budget;
    out->request_timeout_ms = tmo * 1000;
    return 0;
}

/* ---------------- the log ---------------- */

static void log_counts(struct guard *g, int64_t now)
{
    long total = g->shed + g->evicted + g->refused_full + g->timed_out + g->too_large + g->over_budget +
                 g->unauthorized + g->bad_head;
    if (!total)
        return;
    char line[512];
    size_t n = 0;
#define PART(count, what)                                                                      \
    if (count && n < sizeof line)                                                              \
        n += (size_t)snprintf(line + n, sizeof line - n, "%s%ld %s", n ? ", " : "", count, what);
    PART(g->shed, "connections closed unserved: out of file descriptors (accept failed)");
    PART(g->evicted, "idle connections closed to make room");
    PART(g->refused_full, "connections refused (503): the cap reached, none idle");
    PART(g->timed_out, "requests over the deadline (408)");
    PART(g->too_large, "bodies over their route's limit (413)");
    PART(g->over_budget, "bodies over the budget in flight (503)");
    PART(g->unauthorized, "changes without the token (401/403)");
    PART(g->bad_head, "unreadable or oversized heads (400/411/431)");
#undef PART
    log_warn("connections: %s; %d open (cap %d, fd limit %ld), %lld body bytes in flight", line, g->nconns,
             g->max_conns, g->fd_limit, (long long)g->in_flight);
    g->shed = g->evicted = g->refused_full = g->timed_out = g->too_large = g->over_budget = g->unauthorized =
        g->bad_head = 0;
    g->last_log_ms = now;
}

/* One line at the first event of a quiet spell, then one per interval (the sweep). */
static void counted(struct guard *g)
{
    int64_t now = mono_ms();
    if (now - g->last_log_ms >= LOG_INTERVAL_MS)
        log_counts(g, now);
}

/* ---------------- connections ---------------- */

static void release(struct gconn *c)
{
    c->g->in_flight -= c->reserved;
    c->reserved = 0;
}

/* evhttp frees the connection: the filter's context goes with it (the filter's
 * finalization may come late, after guard_free: then c->g is NULL) */
static void conn_gone(void *arg)
{
    struct gconn *c = arg;
    struct guard *g = c->g;
    if (g) {
        release(c);
        if (c->prev)
            c->prev->next = c->next;
        else
            g->head = c->next;
        if (c->next)
            c->next->prev = c->prev;
        else
            g->tail = c->prev;
        g->nconns--;
    }
    if (c->writable)
        event_free(c->writable);
    event_free(c->kick);
    free(c);
}

/* Whether evhttp still holds the connection. bufferevent_free clears the callbacks at
 * once but the filter is finalized (conn_gone) only later in the loop: touching it in
 * between (a flush, an event) would bring it back to life and free it twice. A
 * connection the trial channel took over has no callbacks either: not ours to touch. */
static int conn_live(const struct gconn *c)
{
    bufferevent_event_cb eventcb = NULL;
    bufferevent_getcb(c->bev, NULL, NULL, &eventcb, NULL);
    return eventcb != NULL;
}

/* Ends the connection as a client's EOF would: evhttp frees it (and calls a waiting
 * handler's close callback), on the next pass of the loop. */
static void conn_close(struct gconn *c)
{
    if (c->closing || !conn_live(c))
        return;
    c->closing = 1;
    bufferevent_trigger_event(c->bev, BEV_EVENT_EOF | BEV_EVENT_READING, BEV_TRIG_DEFER_CALLBACKS);
}

/* Answers on the socket itself (evhttp never saw the request) and closes after it. */
static void refuse(struct gconn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void refuse(struct gconn *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *body = error_body(fmt, ap);
    va_end(ap);
    release(c);
    c->state = C_REFUSE;
    c->refused_ms = mono_ms();
    struct evbuffer *out = bufferevent_get_output(c->under);
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                             "Connection: close\r\n%s\r\n%s",
                        code, http1_reason(code), strlen(body), code == 503 ? "Retry-After: 1\r\n" : "", body);
    free(body);
    /* out now, and no more from us: the client reads the answer and its end at once
     * (the rest it sends is read and dropped until it closes, or LINGER_MS) */
    evutil_socket_t fd = bufferevent_getfd(c->under);
    while (fd >= 0 && evbuffer_get_length(out) && evbuffer_write(out, fd) > 0) {
    }
    if (fd >= 0 && evbuffer_get_length(out) == 0) {
        shutdown(fd, SHUT_WR);
        c->shut = 1;
    }
}

static int evictable(const struct gconn *c)
{
    return c->state == C_HEAD && !c->closing && !c->pending_code && conn_live(c) &&
           (bufferevent_get_enabled(c->bev) & EV_READ);
}

/* Closes the connection that has waited longest for its next request. 0 if none can go. */
static int evict_oldest(struct guard *g, const struct gconn *spare)
{
    struct gconn *best = NULL;
    for (struct gconn *c = g->head; c; c = c->next)
        if (c != spare && evictable(c) && (!best || c->waiting_since_ms < best->waiting_since_ms))
            best = c;
    if (!best)
        return 0;
    conn_close(best);
    g->evicted++;
    return 1;
}

static struct gconn *conn_of(struct guard *g, struct bufferevent *bev)
{
    for (struct gconn *c = g->tail; c; c = c->prev) /* the newest first: whoever asks just read a request */
        if (c->bev == bev)
            return c;
    return NULL;
}

int guard_reserve(struct guard *g, int64_t n)
{
    if (!g || n <= 0)
        return 0;
    if (g->in_flight + n > g->budget) {
        g->over_budget++;
        counted(g);
        return -1;
    }
    g->in_flight += n;
    return 0;
}

void guard_release(struct guard *g, int64_t n)
{
    if (g)
        g->in_flight -= n;
}

int64_t guard_request_timeout_ms(const struct guard *g)
{
    return g ? g->timeout_ms : DEFAULT_REQUEST_TIMEOUT_S * 1000;
}

void guard_passthrough(struct guard *g, struct bufferevent *bev)
{
    struct gconn *c = g ? conn_of(g, bev) : NULL;
    if (c) {
        release(c);
        c->state = C_PASS;
        c->req_start_ms = 0;
    }
}

void guard_take_held(struct guard *g, struct bufferevent *bev, struct evbuffer *to)
{
    struct gconn *c = g ? conn_of(g, bev) : NULL;
    if (!c)
        return;
    guard_passthrough(g, bev);
    evbuffer_add_buffer(to, bufferevent_get_input(c->under));
}

/* ---------------- reading heads ---------------- */

enum evhttp_cmd_type guard_evhttp_method(enum http1_method m)
{
    switch (m) {
    case HTTP1_GET: return EVHTTP_REQ_GET;
    case HTTP1_PUT: return EVHTTP_REQ_PUT;
    case HTTP1_POST: return EVHTTP_REQ_POST;
    case HTTP1_HEAD: return EVHTTP_REQ_HEAD;
    case HTTP1_DELETE: return EVHTTP_REQ_DELETE;
    case HTTP1_OPTIONS: return EVHTTP_REQ_OPTIONS;
    case HTTP1_PATCH: return EVHTTP_REQ_PATCH;
    case HTTP1_TRACE: return EVHTTP_REQ_TRACE;
    case HTTP1_CONNECT: return EVHTTP_REQ_CONNECT;
    default: return (enum evhttp_cmd_type)0;
    }
}

/* The length of the complete head at the front of src; 0: not complete yet; -1: over
 * HEAD_MAX. The head is made contiguous at the front of src (at most HEAD_MAX + 1
 * bytes of it) and searched once, however it trickles in (common/http1.c). */
static ssize_t head_length(struct gconn *c, struct evbuffer *src, const char **text)
{
    size_t avail = evbuffer_get_length(src), n = avail > HEAD_MAX + 1 ? HEAD_MAX + 1 : avail;
    *text = (const char *)evbuffer_pullup(src, (ev_ssize_t)n);
    size_t len = *text ? http1_head_end(*text, n, &c->scanned) : 0;
    if (len > HEAD_MAX || (!len && n > HEAD_MAX))
        return -1;
    return (ssize_t)len;
}

static void request_done(struct gconn *c)
{
    release(c);
    c->state = C_HEAD;
    c->scanned = 0;
    c->req_start_ms = 0;
    c->waiting_since_ms = mono_ms();
}

/* A complete head of head_len bytes is at the front of src (text): hands it on, or
 * refuses. Returns 1 when it was handed on. */
static int take_head(struct gconn *c, struct evbuffer *src, const char *text, size_t head_len, struct evbuffer *dst)
{
    struct guard *g = c->g;
    struct http1_head h;
    const char *bad = NULL;
    int rc = http1_parse(text, head_len, &h, &bad);
    if (rc) {
        g->bad_head++;
        refuse(c, rc, "request head: %s", bad);
        counted(g);
        return 0;
    }
    char *target = xstrndup(h.target, h.target_len);
    int64_t body = h.content_length > 0 ? h.content_length : 0;
    int ok = 0;
    if (h.chunked) {
        g->bad_head++;
        refuse(c, 411, "%.200s: send the body with Content-Length (Transfer-Encoding is not accepted)", target);
    } else if (body && !http1_bodied(h.method)) {
        /* libevent reads a body after some of these (GET, DELETE, OPTIONS) and not after
         * others (HEAD): refused, so that a body is never taken for the next request */
        g->bad_head++;
        refuse(c, 400, "%.200s: a body (Content-Length: %lld) on a %.*s request; only POST, PUT and PATCH take one",
               target, (long long)body, (int)(h.target - 1 - text), text);
    } else {
        struct head_policy pol;
        g->policy(g->a, guard_evhttp_method(h.method), target, &pol);
        char *token = h.token ? xstrndup(h.token, h.token_len) : NULL;
        int denied = pol.needs_token ? token_status(g->a, token) : 0;
        free(token);
        if (body > pol.max_body) {
            g->too_large++;
            refuse(c, 413, "%.200s: a body of %lld bytes is over this route's limit of %lld bytes", target,
                   (long long)body, (long long)pol.max_body);
        } else if (denied) {
            g->unauthorized++;
            refuse(c, denied, "%.200s: the api listens beyond loopback, so changes need the experiment's token in"
                              " the X-Trialq-Token header (%s)", target,
                   denied == 401 ? "none was sent" : "the one sent is wrong");
        } else if (body > 0 && g->in_flight + body > g->budget) {
            g->over_budget++;
            refuse(c, 503, "%.200s: the api is receiving %lld bytes of request bodies already (budget %lld,"
                           " TRIALQ_API_BODY_BUDGET); retry", target, (long long)g->in_flight, (long long)g->budget);
        } else {
            g->in_flight += body;
            c->reserved = body;
            c->body_left = body;
            evbuffer_remove_buffer(src, dst, head_len);
            if (body)
                c->state = C_BODY;
            else
                request_done(c);
            ok = 1;
        }
    }
    free(target);
    if (!ok)
        counted(g);
    return ok;
}

static enum bufferevent_filter_result filter_in(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
                                                enum bufferevent_flush_mode mode, void *arg)
{
    (void)limit;
    (void)mode;
    struct gconn *c = arg;
    int moved = 0;
    for (;;) {
        size_t avail = evbuffer_get_length(src);
        if (c->state == C_REFUSE || c->closing) {
            evbuffer_drain(src, avail);
            break;
        }
        if (avail == 0)
            break;
        if (c->state == C_PASS) {
            evbuffer_add_buffer(dst, src);
            moved = 1;
            break;
        }
        if (c->state == C_BODY) {
            /* handed on in pieces of BODY_BATCH: each piece moves whole buffer chains;
             * a piece per socket read would leave each chain half empty (2x memory) */
            if ((int64_t)avail < c->body_left && avail < BODY_BATCH)
                break;
            size_t n = (int64_t)avail < c->body_left ? avail : (size_t)c->body_left;
            evbuffer_remove_buffer(src, dst, n);
            moved = 1;
            c->body_left -= (int64_t)n;
            if (c->body_left == 0)
                request_done(c);
            continue;
        }
        if (!c->req_start_ms)
            c->req_start_ms = mono_ms();
        const char *text = NULL;
        ssize_t len = head_length(c, src, &text);
        if (len == 0)
            break;
        if (len < 0) {
            c->g->bad_head++;
            refuse(c, 431, "request head over %d bytes", HEAD_MAX);
            counted(c->g);
            continue;
        }
        if (take_head(c, src, text, (size_t)len, dst))
            moved = 1;
    }
    return moved ? BEV_OK : BEV_NEED_MORE;
}

/* The time to send what evhttp put in the filter's output: right after it did
 * (kick, on_out_added), or when a full socket can take more (writable). */
static void on_can_send(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gconn *c = arg;
    if (!conn_live(c))
        return;
    c->flushing = 1;
    bufferevent_flush(c->bev, EV_WRITE, BEV_NORMAL); /* filter_out */
    c->flushing = 0;
}

/* Replies go from the filter straight to the socket, not through the socket
 * bufferevent's buffer: evhttp takes an empty filter output for "the reply is out",
 * and then may free the connection and shut the socket down (Connection: close), which
 * would lose what still sat in a buffer below. So the filter's output empties only as
 * the kernel takes it; when the socket is full, a one-shot write event comes back.
 * And never while evhttp adds a reply (the filter calls us then, before evhttp has set
 * the callback that the reply's end must reach): only from on_can_send. */
static enum bufferevent_filter_result filter_out(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
                                                 enum bufferevent_flush_mode mode, void *arg)
{
    (void)limit;
    (void)mode;
    struct gconn *c = arg;
    if (!c->flushing)
        return BEV_NEED_MORE; /* on_out_added has asked for on_can_send */
    evutil_socket_t fd = bufferevent_getfd(c->under);
    if (fd < 0 || evbuffer_get_length(dst)) { /* no socket yet, or an answer of ours before: in order */
        evbuffer_add_buffer(dst, src);
        return BEV_OK;
    }
    int wrote = 0;
    while (evbuffer_get_length(src)) {
        int n = evbuffer_write(src, fd);
        if (n > 0) {
            wrote = 1;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (errno == EINTR)
                continue;
            if (!c->writable)
                c->writable = event_new(bufferevent_get_base(c->bev), fd, EV_WRITE, on_can_send, c);
            event_add(c->writable, NULL);
            break;
        }
        /* the peer is gone: the socket bufferevent meets the same error and says so */
        evbuffer_add_buffer(dst, src);
        return BEV_OK;
    }
    return wrote ? BEV_OK : BEV_NEED_MORE;
}

/* A filter processes its output when data is added only if writing is enabled, and
 * evhttp enables writing after it has added a reply: without this kick, a reply would
 * wait for the next write of the socket below, which may never come. */
static void on_out_added(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    (void)buf;
    struct gconn *c = arg;
    if (info->n_added)
        event_active(c->kick, EV_TIMEOUT, 0);
}

/* evhttp's new connection: its socket is set on the filter right after this returns */
static struct bufferevent *on_new_conn(struct event_base *base, void *arg)
{
    struct guard *g = arg;
    struct bufferevent *under = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    struct gconn *c = xcalloc(1, sizeof *c);
    struct bufferevent *bev = under ? bufferevent_filter_new(under, filter_in, filter_out, BEV_OPT_CLOSE_ON_FREE,
                                                            conn_gone, c) : NULL;
    if (!bev) {
        if (under)
            bufferevent_free(under);
        free(c);
        return NULL; /* evhttp makes its own */
    }
    c->g = g;
    c->bev = bev;
    c->under = under;
    c->kick = event_new(base, -1, 0, on_can_send, c);
    evbuffer_add_cb(bufferevent_get_output(bev), on_out_added, c);
    c->waiting_since_ms = mono_ms();
    c->prev = g->tail;
    if (g->tail)
        g->tail->next = c;
    else
        g->head = c;
    g->tail = c;
    g->nconns++;
    if (g->nconns > g->max_conns && !evict_oldest(g, c)) {
        c->pending_code = 503;
        g->refused_full++;
    }
    if (g->evicted || g->refused_full)
        counted(g);
    return bev;
}

/* ---------------- the listener ---------------- */

static struct guard *the_guard;

static void on_accept_error(struct evconnlistener *lev, void *arg)
{
    (void)arg; /* evhttp's */
    struct guard *g = the_guard;
    if (!g)
        return;
    int err = errno;
    if (err == EMFILE || err == ENFILE) {
        if (g->reserve_fd >= 0)
            close(g->reserve_fd);
        g->reserve_fd = -1;
        int fd = accept4(evconnlistener_get_fd(lev), NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                       "Connection: close\r\nRetry-After: 1\r\n\r\n";
            if (send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
                /* it is closed either way */
            }
            close(fd);
        }
        g->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        evict_oldest(g, NULL);
        if (fd < 0) /* not even the reserve helped (ENFILE: the whole system): wait a little */
            evconnlistener_disable(lev);
    } else {
        evconnlistener_disable(lev); /* ENOBUFS, ENOMEM: a pause, not a spin */
    }
    g->shed++;
    counted(g);
}

static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct guard *g = arg;
    int64_t now = mono_ms();
    evconnlistener_enable(g->lev); /* after a pause for an accept error */
    if (g->reserve_fd < 0)
        g->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (struct gconn *c = g->head; c; c = c->next) {
        if (c->closing || !conn_live(c))
            continue;
        if (c->pending_code) {
            int code = c->pending_code;
            c->pending_code = 0;
            refuse(c, code, "the api has %d connections open, its cap (TRIALQ_API_MAX_CONNECTIONS), and none is"
                            " idle; retry", g->nconns);
            continue;
        }
        if (c->state == C_REFUSE) {
            /* the answer out: no more from us, then the peer's EOF or the linger's end */
            if (!c->shut && evbuffer_get_length(bufferevent_get_output(c->under)) == 0) {
                shutdown(bufferevent_getfd(c->under), SHUT_WR);
                c->shut = 1;
            }
            if (now - c->refused_ms > LINGER_MS)
                conn_close(c);
            continue;
        }
        if (!c->req_start_ms || c->state == C_PASS)
            continue;
        if (!(bufferevent_get_enabled(c->bev) & EV_READ)) {
            c->req_start_ms = now; /* a handler holds the request before it: not the client's time */
            continue;
        }
        if (now - c->req_start_ms > g->timeout_ms) {
            g->timed_out++;
            refuse(c, 408, "the request's head and body were not in within %lld s (TRIALQ_API_REQUEST_TIMEOUT)",
                   (long long)(g->timeout_ms / 1000));
        }
    }
    if (now - g->last_log_ms >= LOG_INTERVAL_MS)
        log_counts(g, now);
}

struct guard *guard_new(struct api *a, struct evconnlistener *lev, const struct guard_limits *lim, long fd_limit,
                        guard_policy_fn policy)
{
    struct guard *g = xcalloc(1, sizeof *g);
    g->a = a;
    g->policy = policy;
    g->lev = lev;
    g->fd_limit = fd_limit;
    g->max_conns = lim->max_connections;
    if (fd_limit - FD_MARGIN < g->max_conns)
        g->max_conns = fd_limit - FD_MARGIN > 16 ? (int)(fd_limit - FD_MARGIN) : 16;
    g->budget = lim->body_budget;
    g->timeout_ms = lim->request_timeout_ms;
    g->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    g->last_log_ms = mono_ms() - LOG_INTERVAL_MS;
    evhttp_set_bevcb(a->http, on_new_conn, g);
    /* the listener's callbacks share one argument, which evhttp set to itself: the error
     * callback finds the guard here (one api, one guard, per process) */
    the_guard = g;
    evconnlistener_set_error_cb(lev, on_accept_error);
    g->sweep = event_new(a->base, -1, EV_PERSIST, on_sweep, g);
    struct timeval tv = {0, SWEEP_MS * 1000};
    event_add(g->sweep, &tv);
    log_info("connections: at most %d at once (fd limit %ld), request bodies at most %lld bytes in flight, %lld s"
             " for a request's head and body", g->max_conns, fd_limit, (long long)g->budget,
             (long long)(g->timeout_ms / 1000));
    return g;
}

void guard_free(struct guard *g)
{
    if (!g)
        return;
    /* evhttp_free has let go of every connection; their filters may be finalized later */
    for (struct gconn *c = g->head; c; c = c->next)
        c->g = NULL;
    event_free(g->sweep);
    if (the_guard == g)
        the_guard = NULL;
    if (g->reserve_fd >= 0)
        close(g->reserve_fd);
    free(g);
}
