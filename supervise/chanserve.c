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
 * The protocol (requests, their limits and errors, the commands, the long poll) is the
 * api's, common/trialchan.c; this file is its adapter to poll() and the trial's files.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/chantoken.h"
#include "common/common.h"
#include "common/http1.h"
#include "common/minijson.h"
#include "common/trialchan.h"

#define MAX_CONNS (CHANSERVE_MAX_FDS - 1)
#define PARAM_RETRY_MS 100
#define BUDGET (32 << 20)     /* bodies being read, all connections (the api's default) */
#define REQUEST_MS 30000      /* a request's head and body, by default (the api's) */

struct conn {
    struct tc_conn t; /* first: the protocol's callbacks get &t */
    struct chanserve *cs;
    int eof;          /* the peer closed its side */
    int dead;         /* to be freed */
};

struct chanserve {
    int lfd, mfd;
    char *trial_id, *path, *url, *chan_file, *metrics_path, *param_path;
    struct conn *conns[MAX_CONNS];
    int nconns;
    struct tc_queue q;
    int64_t in_flight;  /* bytes of BUDGET held */
    int64_t timeout_ms; /* the request deadline */
    int param_wanted;   /* a request_parameter waits for parameter.cfg */
    int64_t param_next; /* mono ms of the next look */
    int closing;
};

static struct conn *conn_of(struct tc_conn *t)
{
    return (struct conn *)t;
}

/* ---------------- parameters and metrics ---------------- */

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
    cs->param_wanted = 0;
    tc_queue_push(&cs->q, tc_parameter_command(rec));
    free(rec);
}

/* Appends one record to .nni/metrics: an HTTP status. */
static int append_metric(struct chanserve *cs, const char *m, size_t n)
{
    if (n + 1 >= TC_MAX_RECORD)
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

static void on_metric(struct chanserve *cs, struct tc_conn *c, const char *m, size_t ml)
{
    char msg[256];
    int code = tc_metric_check(m, ml, cs->trial_id, msg, sizeof msg);
    if (code == 200)
        code = append_metric(cs, m, ml);
    if (code == 200)
        tc_reply(c, 200, "");
    else if (code == 413)
        tc_error(c, 413, "metric record of %zu bytes: NNI's limit is %d", ml, TC_MAX_RECORD - 1);
    else if (code == 503)
        tc_error(c, 503, "metric not stored: %s: %s", cs->metrics_path, strerror(errno));
    else
        tc_error(c, code, "%s", msg);
}

/* ---------------- requests ---------------- */

static void on_put(struct chanserve *cs, struct tc_conn *c, const char *body, size_t blen, int json_body)
{
    struct tc_cmd cmd;
    tc_command(body, blen, json_body, cs->trial_id, "trialq-supervise: ", &cmd);
    if (cmd.kind == TC_CMD_REFUSED) {
        tc_error(c, cmd.code, "%s", cmd.msg);
    } else if (cmd.kind == TC_CMD_PARAMETER) {
        cs->param_wanted = 1;
        try_parameter(cs);
        tc_reply(c, 200, "");
    } else if (cmd.kind == TC_CMD_METRIC) {
        on_metric(cs, c, cmd.metric, cmd.metric_len);
    } else {
        tc_reply(c, 200, "");
    }
    tc_cmd_free(&cmd);
}

/* A request whose path is not our channel's: its 404 (from its head, before any body). */
static int not_ours(struct tc_conn *c, const struct http1_head *h, char *msg, size_t size)
{
    struct chanserve *cs = conn_of(c)->cs;
    size_t tl;
    const char *p = tc_path(h, &tl);
    if (secret_equal(p, tl, cs->path)) /* the path holds the token */
        return 0;
    snprintf(msg, size, "%.*s: this port serves the command channel of trial %s only", (int)(tl > 200 ? 200 : tl),
             p, cs->trial_id);
    return 404;
}

static void on_request(struct tc_conn *c, const struct http1_head *h, const char *body)
{
    struct chanserve *cs = conn_of(c)->cs;
    char msg[512];
    if (tc_method_refused(c, h))
        return;
    if (not_ours(c, h, msg, sizeof msg))
        tc_error(c, 404, "%s", msg);
    else if (h->method == HTTP1_PUT)
        on_put(cs, c, body, (size_t)h->content_length, h->json_body);
    else
        tc_queue_poll(&cs->q, c, cs->closing);
}

static int reserve(struct tc_conn *c, int64_t n, char *msg, size_t size)
{
    struct chanserve *cs = conn_of(c)->cs;
    if (cs->in_flight + n > BUDGET) {
        snprintf(msg, size, "trial channel: %lld bytes of request bodies are being read already; retry",
                 (long long)cs->in_flight);
        return -1;
    }
    cs->in_flight += n;
    return 0;
}

static void release(struct tc_conn *c, int64_t n)
{
    conn_of(c)->cs->in_flight -= n;
}

static void want_write(struct tc_conn *c)
{
    (void)c; /* chanserve_pollfds asks for POLLOUT while output is left */
}

static const struct tc_ops ops = {
    .reserve = reserve, .release = release, .head = not_ours, .request = on_request, .want_write = want_write,
};

/* ---------------- connections ---------------- */

static void conn_free(struct chanserve *cs, struct conn *c)
{
    tc_queue_forget(&cs->q, &c->t);
    tc_conn_release(&c->t);
    close(c->t.fd);
    free(c);
}

/* All slots taken: closes the connection that has waited longest on its client (not a
 * poll, not one with a reply going out), and returns its slot; -1 when none can go. */
static int evict_oldest(struct chanserve *cs)
{
    int best = -1;
    for (int i = 0; i < cs->nconns; i++) {
        struct conn *c = cs->conns[i];
        if (!tc_waits_on_client(&c->t) || c->dead)
            continue;
        if (best < 0 || tc_goes_before(&c->t, &cs->conns[best]->t))
            best = i;
    }
    if (best < 0)
        return -1;
    struct conn *c = cs->conns[best];
    char why[160];
    snprintf(why, sizeof why, "the trial channel has %d connections, its limit: the oldest one waiting for its"
             " request to come in is closed", MAX_CONNS);
    tc_evict(&c->t, why);
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
        tc_conn_init(&c->t, &ops, fd);
        c->cs = cs;
        cs->conns[slot] = c;
    }
}

/* What poll found on c's socket. */
static void conn_io(struct conn *c, short revents)
{
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        int rc = tc_read(&c->t);
        if (rc < 0) {
            c->eof = 1;
            if (c->t.pending || rc == -2) /* a poll nobody waits for, or a broken connection */
                c->dead = 1;
        }
    }
    if (revents & POLLOUT)
        tc_flush(&c->t);
}

/* Serves c's requests and its limits at now. */
static void conn_run(struct chanserve *cs, struct conn *c, int64_t now)
{
    struct tc_conn *t = &c->t;
    tc_serve(t);
    if (tc_overdue(t, now, cs->timeout_ms) && tc_out_empty(t))
        c->dead = 1; /* else once the answer is out */
    int quiet = !t->pending && tc_out_empty(t);
    if (t->peer_gone || (quiet && (c->eof || t->close_after)) || tc_idle(t, now))
        c->dead = 1;
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
        struct tc_conn *c = &cs->conns[i]->t;
        short ev = tc_input_full(c) || cs->conns[i]->eof ? 0 : POLLIN;
        if (!tc_out_empty(c))
            ev |= POLLOUT;
        fds[n++] = (struct pollfd){.fd = c->fd, .events = ev};
        int64_t d = cs->q.waiting == c                        ? cs->q.deadline_ms
                    : c->req_start_ms && tc_out_empty(c)      ? c->req_start_ms + cs->timeout_ms + 1
                    : tc_out_empty(c) && c->in_len == 0       ? c->last_ms + TC_IDLE_MS
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
    for (int k = 1; k < n; k++)
        for (int i = 0; fds[k].revents && i < cs->nconns; i++)
            if (cs->conns[i]->t.fd == fds[k].fd)
                conn_io(cs->conns[i], fds[k].revents);
    if (n > 0 && (fds[0].revents & POLLIN))
        accept_all(cs);
    int64_t now = mono_ms();
    if (cs->param_wanted && now >= cs->param_next)
        try_parameter(cs);
    tc_queue_expire(&cs->q, now, cs->closing);
    for (int i = 0; i < cs->nconns; i++)
        conn_run(cs, cs->conns[i], now);
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
    tc_queue_close(&cs->q); /* the waiting poll: 410 */
    for (int i = 0; i < cs->nconns; i++)
        conn_free(cs, cs->conns[i]);
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
