/* chanserve.c: NNI v3's HTTP trial command channel (spec §5.4) for one trial, served by
 * that trial's group leader (trialq-trial, supervise/lead.c), so that it answers as long
 * as the trial runs: the api, the workers and the trial's supervisor may be killed and
 * restarted meanwhile (issues 23 and 24; docs/architecture.md, "The HTTP trial
 * channel").
 *
 * The trial's NNI_TRIAL_COMMAND_CHANNEL is http://127.0.0.1:<our port><path>, path being
 * what the api serves for it, /[prefix/]env/<token>/<trial> (common/chantoken.h); any
 * other path gets 404. NNI's SDK sends each request on a new connection
 * (requests.put/get), ours keeps one; both are served, one request at a time per
 * connection.
 *
 *   PUT {"type":"request_parameter"}  queues {"type":"parameter","parameter":<the
 *                                     record in parameter.cfg>} (the worker writes it
 *                                     before it starts us; read when asked)
 *   PUT {"type":"metric","metric":M}  appends M to .nni/metrics as NNI's file channel
 *                                     frames it ("ME" + 6-digit length + M + "\n"),
 *                                     written before the 200 (see append_metric): the
 *                                     worker ingests that file as for any trial, and
 *                                     the metric table absorbs a record read twice
 *   GET                               the next queued command; 408 after 1 s without
 *                                     one; 410 once a stop reached the trial
 *
 * As the api's channel: 415 without a JSON content type, 400 for a body that is not a
 * command or a metric that is not a metric record, 403 for a record of another trial,
 * 405 for other methods; heads over 8 kB get 431, bodies over 4 MB 413 (a metric record
 * is under 1 MB), chunked bodies 501, and the connection closes after each of these.
 *
 * The port is reachable by every local user, so nothing here waits on a client for
 * long (docs/security.md): a request for another path gets its 404 from its head,
 * before any body is read; a body being read takes its length from a budget of BUDGET
 * bytes for all connections (503 beyond it); a request's head and body must be in
 * within the request deadline from its first byte (408; TRIALQ_API_REQUEST_TIMEOUT,
 * as the api's); no more than a head is read ahead of the request being served; and
 * when all MAX_CONNS slots are taken, a new connection closes the oldest one that waits
 * on its client (a partial request first, 503; then the longest idle), so the trial's
 * own fresh request always has one. */
#include "supervise/chanserve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/chantoken.h"
#include "common/common.h"
#include "common/http1.h"
#include "supervise/minijson.h"

#define MAX_CONNS (CHANSERVE_MAX_FDS - 1)
#define MAX_HEAD (8 << 10)
#define MAX_BODY (4 << 20)
#define MAX_RECORD 1000000 /* NNI's 6-digit length field */
#define POLL_MS 1000
#define IDLE_MS 120000
#define MAX_QUEUED 16
#define PARAM_RETRY_MS 100
#define BUDGET (32 << 20)     /* bodies being read, all connections (the api's default) */
#define REQUEST_MS 30000      /* a request's head and body, by default (the api's) */

struct conn {
    int fd;
    char *in;
    size_t in_len, in_cap;
    char *out;
    size_t out_len, out_off;
    int waiting;      /* a GET waits for a command */
    int64_t deadline; /* mono ms of its 408 */
    int close_after;  /* close once the reply is out */
    int eof;          /* the peer closed its side */
    int dead;         /* to be freed */
    int continued;    /* 100 Continue sent for the request being read */
    size_t scanned;   /* bytes of in already searched for the end of the head */
    int64_t reserved; /* budget held by the body being read */
    size_t want;      /* the most bytes read ahead (head + body + a head); 0: a head */
    int64_t req_start_ms; /* the first byte of the request being read; 0: none */
    int64_t last_ms;
};

struct chanserve {
    int lfd, mfd;
    char *trial_id, *path, *url, *chan_file, *metrics_path, *param_path;
    struct conn *conns[MAX_CONNS];
    int nconns;
    char *queue[MAX_QUEUED];
    int nqueued;
    int64_t in_flight;  /* bytes of BUDGET held */
    int64_t timeout_ms; /* the request deadline */
    int param_wanted;   /* a request_parameter waits for parameter.cfg */
    int64_t param_next; /* mono ms of the next look */
    int closing;
};

/* ---------------- replies ---------------- */

static void flush(struct conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                c->dead = 1; /* the peer is gone: nothing more to say */
            return;
        }
        c->out_off += (size_t)w;
    }
    c->out_off = c->out_len = 0;
}

static void reply(struct conn *c, int code, const char *body)
{
    size_t blen = body ? strlen(body) : 0;
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "HTTP/1.1 %d %s\r\n%sContent-Length: %zu\r\n%s%s\r\n", code, http1_reason(code),
              blen ? "Content-Type: application/json\r\n" : "", blen, code == 405 ? "Allow: GET, PUT\r\n" : "",
              c->close_after ? "Connection: close\r\n" : "");
    if (blen)
        sb_add(&sb, body, blen);
    c->out = xrealloc(c->out, c->out_len + sb.len);
    memcpy(c->out + c->out_len, sb.buf, sb.len);
    c->out_len += sb.len;
    sb_free(&sb);
    c->last_ms = mono_ms();
    flush(c);
}

static void reply_error(struct conn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void reply_error(struct conn *c, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "{\"error\":");
    mj_put_string(&sb, msg);
    sb_puts(&sb, "}");
    reply(c, code, sb.buf);
    sb_free(&sb);
}

/* ---------------- the command queue ---------------- */

static struct conn *waiting_conn(struct chanserve *cs)
{
    for (int i = 0; i < cs->nconns; i++)
        if (cs->conns[i]->waiting && !cs->conns[i]->dead)
            return cs->conns[i];
    return NULL;
}

/* Answers the waiting GET with the first queued command, if both exist. */
static void deliver(struct chanserve *cs)
{
    struct conn *c = waiting_conn(cs);
    if (!c || cs->nqueued == 0)
        return;
    char *cmd = cs->queue[0];
    memmove(cs->queue, cs->queue + 1, (size_t)(cs->nqueued - 1) * sizeof cs->queue[0]);
    cs->nqueued--;
    c->waiting = 0;
    reply(c, 200, cmd);
    free(cmd);
}

static void push(struct chanserve *cs, char *cmd)
{
    if (cs->nqueued == MAX_QUEUED) { /* a trial that asks and never reads: keep the newest */
        free(cs->queue[0]);
        memmove(cs->queue, cs->queue + 1, (size_t)(MAX_QUEUED - 1) * sizeof cs->queue[0]);
        cs->nqueued--;
    }
    cs->queue[cs->nqueued++] = cmd;
    deliver(cs);
}

/* Queues the parameter command once parameter.cfg holds a record. */
static void try_parameter(struct chanserve *cs)
{
    if (!cs->param_wanted)
        return;
    size_t len = 0;
    char *rec = read_file(cs->param_path, &len);
    while (rec && len && (rec[len - 1] == '\n' || rec[len - 1] == '\r' || rec[len - 1] == ' '))
        rec[--len] = '\0';
    const char *v;
    size_t vl;
    if (!rec || !len || strlen(rec) != len || mj_member(rec, len, "parameters", &v, &vl) != 1) {
        /* not written yet (or being replaced): look again soon */
        free(rec);
        cs->param_next = mono_ms() + PARAM_RETRY_MS;
        return;
    }
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "{\"type\":\"parameter\",\"parameter\":");
    mj_put_string(&sb, rec);
    sb_puts(&sb, "}");
    free(rec);
    cs->param_wanted = 0;
    push(cs, sb_detach(&sb));
}

/* ---------------- metrics ---------------- */

/* Appends one record to .nni/metrics: an HTTP status. */
static int append_metric(struct chanserve *cs, const char *m, size_t n)
{
    if (n + 1 >= MAX_RECORD)
        return 413;
    if (cs->mfd < 0) {
        cs->mfd = open(cs->metrics_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (cs->mfd < 0)
            return 503;
    }
    char *rec = xmalloc(n + 9);
    snprintf(rec, 9, "ME%06zu", n + 1);
    memcpy(rec + 8, m, n);
    rec[8 + n] = '\n';
    /* one write on an O_APPEND descriptor: a reader sees whole records, also beside a
     * trial that writes the file itself */
    ssize_t w;
    while ((w = write(cs->mfd, rec, n + 9)) < 0 && errno == EINTR)
        ;
    free(rec);
    /* In the kernel now: the record survives any process being killed, ours included,
     * which is what "stored" means for every state write of trialq (the database runs
     * with synchronous=NORMAL). No fdatasync: it cost 48 us of CPU per metric and capped
     * the channel at ~14,500 metrics/s (bench/metric_ingest.sh), and what only it
     * survives, a power loss or a kernel crash, also ends the trial, which then runs
     * again as its next attempt, so its metrics of this attempt do not count anyway. */
    return w == (ssize_t)(n + 9) ? 200 : 503;
}

static void on_metric(struct chanserve *cs, struct conn *c, const char *v, size_t vl)
{
    size_t ml;
    char *m = mj_string(v, vl, &ml);
    if (!m) {
        reply_error(c, 400, "body: a metric command needs \"metric\": the metric record as a JSON string");
        return;
    }
    const char *f;
    size_t fl;
    int rc = mj_member(m, ml, "type", &f, &fl);
    char *type = rc == 1 ? mj_string(f, fl, &fl) : NULL;
    if (rc < 0) {
        reply_error(c, 400, "metric is not a JSON object: %.80s", m);
    } else if (!type || (strcmp(type, "PERIODICAL") != 0 && strcmp(type, "FINAL") != 0)) {
        reply_error(c, 400, "metric has no type PERIODICAL or FINAL: %.80s", m);
    } else if (mj_member(m, ml, "value", &f, &fl) != 1) {
        reply_error(c, 400, "metric has no value: %.80s", m);
    } else {
        /* the record names its trial: only ours */
        char *tj = NULL;
        int named = mj_member(m, ml, "trial_job_id", &f, &fl) == 1;
        if (named && !(tj = mj_string(f, fl, &fl)) && fl == 4 && memcmp(f, "null", 4) == 0)
            named = 0; /* null: as NNI's SDK sends without a trial id */
        if (named && !(tj && strcmp(tj, cs->trial_id) == 0)) {
            reply_error(c, 403, "metric of trial %.40s refused on the channel of trial %s", tj ? tj : "?",
                        cs->trial_id);
        } else {
            int code = append_metric(cs, m, ml);
            if (code == 200)
                reply(c, 200, "");
            else if (code == 413)
                reply_error(c, 413, "metric record of %zu bytes: NNI's limit is %d", ml, MAX_RECORD - 1);
            else
                reply_error(c, 503, "metric not stored: %s: %s", cs->metrics_path, strerror(errno));
        }
        free(tj);
    }
    free(type);
    free(m);
}

/* ---------------- requests ---------------- */

static void on_put(struct chanserve *cs, struct conn *c, const char *body, size_t blen, int json_body)
{
    if (!json_body) {
        reply_error(c, 415, "PUT %s: Content-Type must be application/json", cs->trial_id);
        return;
    }
    const char *v;
    size_t vl;
    int rc = mj_member(body, blen, "type", &v, &vl);
    char *type = rc == 1 ? mj_string(v, vl, &vl) : NULL;
    if (rc < 0)
        reply_error(c, 400, "body: not a JSON object (a trial command)");
    else if (!type)
        reply_error(c, 400, "body: the command has no string \"type\"");
    else if (strcmp(type, "request_parameter") == 0) {
        cs->param_wanted = 1;
        try_parameter(cs);
        reply(c, 200, "");
    } else if (strcmp(type, "metric") == 0) {
        if (mj_member(body, blen, "metric", &v, &vl) == 1)
            on_metric(cs, c, v, vl);
        else
            reply_error(c, 400, "body: a metric command needs \"metric\": the metric record as a JSON string");
    } else {
        char key[96], shown[SNIPPET_SIZE];
        snprintf(key, sizeof key, "trialq-supervise: trial channel %s", cs->trial_id);
        log_input(LOG_WARN, key, "unexpected commands", "unexpected command type %s",
                  snippet(shown, type, vl));
        reply(c, 200, "");
    }
    free(type);
}

static void on_get(struct chanserve *cs, struct conn *c)
{
    struct conn *old = waiting_conn(cs);
    if (old) { /* one poll at a time: the older one ends as if it timed out */
        old->waiting = 0;
        reply(old, 408, "");
    }
    if (cs->nqueued == 0 && cs->closing) {
        reply(c, 410, "");
        return;
    }
    c->waiting = 1;
    c->deadline = mono_ms() + POLL_MS;
    deliver(cs);
}

/* Whether the request's path (its query cut off, length in *tl) is our channel's. */
static int for_us(const struct chanserve *cs, const struct http1_head *h, size_t *tl)
{
    *tl = h->target_len;
    const char *q = memchr(h->target, '?', *tl);
    if (q)
        *tl = (size_t)(q - h->target);
    return secret_equal(h->target, *tl, cs->path); /* the path holds the token */
}

static void reply_not_ours(struct chanserve *cs, struct conn *c, const struct http1_head *h, size_t tl)
{
    reply_error(c, 404, "%.*s: this port serves the command channel of trial %s only", (int)(tl > 200 ? 200 : tl),
                h->target, cs->trial_id);
}

static void handle(struct chanserve *cs, struct conn *c, const struct http1_head *h, const char *body)
{
    size_t tl;
    if (h->method != HTTP1_GET && h->method != HTTP1_PUT) {
        c->close_after = 1;
        reply_error(c, 405, "the trial command channel takes GET and PUT");
    } else if (!for_us(cs, h, &tl)) {
        reply_not_ours(cs, c, h, tl);
    } else if (h->method == HTTP1_PUT) {
        on_put(cs, c, body, (size_t)h->content_length, h->json_body);
    } else {
        on_get(cs, c);
    }
}

/* The request read (or refused): its budget back, its clock stopped. */
static void request_over(struct chanserve *cs, struct conn *c)
{
    cs->in_flight -= c->reserved;
    c->reserved = 0;
    c->want = 0;
    c->req_start_ms = 0;
}

/* The most bytes c's input may hold: the request being read and a head more. */
static size_t read_limit(const struct conn *c)
{
    return c->want ? c->want : MAX_HEAD + 1;
}

/* Serves the requests waiting in c's buffer, one at a time. */
static void serve(struct chanserve *cs, struct conn *c)
{
    while (!c->waiting && !c->dead && !c->close_after && c->out_len == 0 && c->in_len) {
        if (!c->req_start_ms)
            c->req_start_ms = mono_ms();
        struct http1_head h;
        const char *msg = NULL;
        int rc = http1_parse_head(c->in, c->in_len, &c->scanned, MAX_HEAD, MAX_BODY, &h, &msg);
        if (rc == 0)
            break;
        if (rc != 1) {
            request_over(cs, c);
            c->close_after = 1;
            reply_error(c, rc, "trial channel: %s", msg);
            break;
        }
        size_t total = h.head_len + (size_t)h.content_length;
        if (c->in_len < total) {
            size_t tl;
            if (!for_us(cs, &h, &tl)) { /* from its head: no body is read for it */
                request_over(cs, c);
                c->close_after = 1;
                reply_not_ours(cs, c, &h, tl);
                break;
            }
            if (!c->reserved) {
                if (cs->in_flight + h.content_length > BUDGET) {
                    request_over(cs, c);
                    c->close_after = 1;
                    reply_error(c, 503, "trial channel: %lld bytes of request bodies are being read already;"
                                " retry", (long long)cs->in_flight);
                    break;
                }
                cs->in_flight += h.content_length;
                c->reserved = h.content_length;
                c->want = total + MAX_HEAD;
            }
            if (h.expect_continue && !c->continued) {
                static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
                if (send(c->fd, cont, sizeof cont - 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
                }
                c->continued = 1;
            }
            break;
        }
        c->continued = 0;
        if (h.close || (h.http10 && !h.keep_alive))
            c->close_after = 1;
        handle(cs, c, &h, c->in + h.head_len);
        request_over(cs, c);
        memmove(c->in, c->in + total, c->in_len - total);
        c->in_len -= total;
        if (c->in_cap > 65536 && c->in_len < c->in_cap / 4) {
            c->in_cap = c->in_len + 32768;
            c->in = xrealloc(c->in, c->in_cap);
        }
    }
    if (c->eof && !c->waiting && c->out_len == 0)
        c->dead = 1;
    if (c->close_after && !c->waiting && c->out_len == 0)
        c->dead = 1;
}

/* Reads what the socket has, up to read_limit. */
static void read_some(struct conn *c)
{
    for (;;) {
        size_t limit = read_limit(c);
        if (c->in_len >= limit)
            return; /* parsed (and refused, or waited for) before any more is read */
        if (c->in_cap - c->in_len < 16384 && c->in_cap < limit) {
            c->in_cap = c->in_len + 32768 < limit ? c->in_len + 32768 : limit;
            c->in = xrealloc(c->in, c->in_cap);
        }
        size_t room = (c->in_cap < limit ? c->in_cap : limit) - c->in_len;
        ssize_t n = recv(c->fd, c->in + c->in_len, room, MSG_DONTWAIT);
        if (n > 0) {
            c->in_len += (size_t)n;
            c->last_ms = mono_ms();
            if ((size_t)n < room)
                return; /* drained for now (an EOF shows on the next poll) */
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            c->eof = 1;
            if (c->waiting || n < 0) /* a poll nobody waits for, or a broken connection */
                c->dead = 1;
        }
        return;
    }
}

static void conn_free(struct chanserve *cs, struct conn *c)
{
    request_over(cs, c);
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c);
}

/* Which of two connections to close first for a newcomer: a partial request before an
 * idle connection, the older of two. */
static int goes_before(const struct conn *x, const struct conn *y)
{
    if (!x->req_start_ms != !y->req_start_ms)
        return x->req_start_ms != 0;
    return x->req_start_ms ? x->req_start_ms < y->req_start_ms : x->last_ms < y->last_ms;
}

/* All slots taken: closes the connection that has waited longest on its client (not a
 * poll, not one with a reply going out), and returns its slot; -1 when none can go. */
static int evict_oldest(struct chanserve *cs)
{
    int best = -1;
    for (int i = 0; i < cs->nconns; i++) {
        struct conn *c = cs->conns[i];
        if (c->waiting || c->out_len || c->dead)
            continue;
        if (best < 0 || goes_before(c, cs->conns[best]))
            best = i;
    }
    if (best < 0)
        return -1;
    struct conn *c = cs->conns[best];
    if (c->req_start_ms) {
        c->close_after = 1;
        reply_error(c, 503, "the trial channel has %d connections, its limit: the oldest one waiting for its"
                    " request to come in is closed", MAX_CONNS);
    }
    conn_free(cs, c);
    return best;
}

static void accept_all(struct chanserve *cs)
{
    for (;;) {
        int fd = accept4(cs->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        int slot = cs->nconns < MAX_CONNS ? cs->nconns++ : evict_oldest(cs);
        if (slot < 0) { /* every slot a poll or a reply going out: the newcomer waits not */
            close(fd);
            continue;
        }
        struct conn *c = xcalloc(1, sizeof *c);
        c->fd = fd;
        c->last_ms = mono_ms();
        cs->conns[slot] = c;
    }
}

/* ---------------- the interface ---------------- */

struct chanserve *chanserve_open(const char *dir, const char *trial_id, const char *path, char *err, size_t errlen)
{
    if (!trial_id || !*trial_id || !path || path[0] != '/') {
        snprintf(err, errlen, "trial channel: no trial id or channel path");
        return NULL;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 64) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        snprintf(err, errlen, "trial channel: cannot listen on 127.0.0.1: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    struct chanserve *cs = xcalloc(1, sizeof *cs);
    cs->lfd = fd;
    cs->mfd = -1;
    cs->trial_id = xstrdup(trial_id);
    cs->path = xstrdup(path);
    cs->url = xasprintf("http://127.0.0.1:%d%s", ntohs(sa.sin_port), path);
    cs->chan_file = xasprintf("%s/.nni/channel", dir);
    cs->metrics_path = xasprintf("%s/.nni/metrics", dir);
    cs->param_path = xasprintf("%s/parameter.cfg", dir);
    cs->timeout_ms = REQUEST_MS;
    const char *tmo = getenv("TRIALQ_API_REQUEST_TIMEOUT"); /* the api checked it: 1 to 3600 */
    if (tmo && atoi(tmo) >= 1 && atoi(tmo) <= 3600)
        cs->timeout_ms = atoi(tmo) * 1000LL;
    /* where the channel is, for people and tools (bench/metric_ingest.sh) */
    char *line = xasprintf("%s\n", cs->url);
    if (write_file_replace(cs->chan_file, line, strlen(line), 0600) < 0)
        fprintf(stderr, "trialq-supervise: cannot write %s: %s\n", cs->chan_file, strerror(errno));
    free(line);
    return cs;
}

const char *chanserve_url(const struct chanserve *cs)
{
    return cs->url;
}

int chanserve_pollfds(struct chanserve *cs, struct pollfd *fds, int *timeout_ms)
{
    int n = 0;
    int64_t now = mono_ms(), due = -1;
    fds[n++] = (struct pollfd){.fd = cs->lfd, .events = POLLIN};
    for (int i = 0; i < cs->nconns; i++) {
        struct conn *c = cs->conns[i];
        short ev = c->in_len >= read_limit(c) || c->eof ? 0 : POLLIN;
        if (c->out_len)
            ev |= POLLOUT;
        fds[n++] = (struct pollfd){.fd = c->fd, .events = ev};
        int64_t d = c->waiting                             ? c->deadline
                    : c->req_start_ms && c->out_len == 0   ? c->req_start_ms + cs->timeout_ms + 1
                    : c->out_len == 0 && c->in_len == 0    ? c->last_ms + IDLE_MS
                                                           : -1;
        if (d >= 0 && (due < 0 || d < due))
            due = d;
    }
    if (cs->param_wanted && (due < 0 || cs->param_next < due))
        due = cs->param_next;
    *timeout_ms = due < 0 ? -1 : due <= now ? 0 : (int)(due - now);
    return n;
}

void chanserve_run(struct chanserve *cs, const struct pollfd *fds, int n)
{
    for (int k = 1; k < n; k++) {
        if (!fds[k].revents)
            continue;
        for (int i = 0; i < cs->nconns; i++) {
            struct conn *c = cs->conns[i];
            if (c->fd != fds[k].fd)
                continue;
            if (fds[k].revents & (POLLIN | POLLHUP | POLLERR))
                read_some(c);
            if (fds[k].revents & POLLOUT)
                flush(c);
        }
    }
    if (n > 0 && (fds[0].revents & POLLIN))
        accept_all(cs);
    int64_t now = mono_ms();
    if (cs->param_wanted && now >= cs->param_next)
        try_parameter(cs);
    for (int i = 0; i < cs->nconns; i++) {
        struct conn *c = cs->conns[i];
        if (c->waiting && now >= c->deadline) {
            c->waiting = 0;
            reply(c, cs->closing ? 410 : 408, "");
        }
        serve(cs, c);
        if (c->req_start_ms && !c->waiting && c->out_len == 0 && !c->dead && now - c->req_start_ms > cs->timeout_ms) {
            request_over(cs, c);
            c->close_after = 1;
            reply_error(c, 408, "the request's head and body were not in within %lld s",
                        (long long)(cs->timeout_ms / 1000));
            c->dead = c->out_len == 0; /* else once the answer is out (serve) */
        }
        if (!c->waiting && c->out_len == 0 && c->in_len == 0 && now - c->last_ms > IDLE_MS)
            c->dead = 1;
    }
    int k = 0;
    for (int i = 0; i < cs->nconns; i++) {
        if (cs->conns[i]->dead)
            conn_free(cs, cs->conns[i]);
        else
            cs->conns[k++] = cs->conns[i];
    }
    cs->nconns = k;
    log_input_flush(0); /* the counts of repeated unexpected commands, once a minute */
}

void chanserve_closing(struct chanserve *cs)
{
    cs->closing = 1;
}

void chanserve_close(struct chanserve *cs)
{
    if (!cs)
        return;
    for (int i = 0; i < cs->nconns; i++) {
        struct conn *c = cs->conns[i];
        if (c->waiting && !c->dead)
            reply(c, 410, "");
        conn_free(cs, c);
    }
    for (int i = 0; i < cs->nqueued; i++)
        free(cs->queue[i]);
    close(cs->lfd);
    if (cs->mfd >= 0)
        close(cs->mfd);
    unlink(cs->chan_file);
    free(cs->trial_id);
    free(cs->path);
    free(cs->url);
    free(cs->chan_file);
    free(cs->metrics_path);
    free(cs->param_path);
    free(cs);
}
