/* channel.c: NNI v3's HTTP trial command channel, /env/<envId>/<trialId> (spec §5.4),
 * for trials started with trialCommandChannel: http.
 *
 * envId is the trial's channel token (common/chantoken.h): a request whose token is not
 * that of the trial in its URL gets 403, so a trial can only report for itself.
 * PUT request_parameter queues the trial's own parameter record (parameters are bound
 * to trial ids here, unlike NNI's single FIFO); GET long-polls for it (408 after 1 s).
 * PUT metric is answered only once the metric is committed, in one transaction with
 * the other metrics of its round (see "group commit of metrics" below). After the api
 * began to stop, every request gets 410. The protocol (requests, commands, the long poll)
 * is common/trialchan.c's, shared with a local trial's leader (supervise/chanserve.c);
 * connections run in the api's loop through api/chan_http.c. This file is what the
 * api does with the commands: the database. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "api/chan_http.h"
#include "api/channel.h"
#include "api/routes.h"
#include "common/chantoken.h"
#include "schema/nnijson.h"

#define GROUP_WINDOW_US 2000 /* the longest a metric waits for others to join its commit */
#define GROUP_MAX 512       /* metrics per transaction at most */
#define ACTIVE_MS 20        /* a connection that sent a metric this recently may send more */
#define MAX_ACTIVE 256
#define CHAN_BUCKETS 1024   /* trials with a command queued or a poll pending, by id */

/* A trial with a command queued or a poll pending; freed when it has neither, so
 * memory does not grow with the trials that ever polled. */
struct chan {
    struct chan *next;      /* in its bucket */
    struct chan_state *s;   /* the api's channel state it is in */
    char *trial_id;
    struct tc_queue q;      /* its commands, its pending GET */
    struct event *timer;    /* the pending GET's 408 */
};

struct pending_metric {
    struct tc_conn *r;
    char *trial_id;
    struct metric_in m;
    void *owned;
};

/* A connection that reported a metric recently: it is likely to send the next one
 * soon, so a commit waits for it (up to the window) instead of going with fewer. */
struct active_conn {
    const void *conn;
    int64_t last_us;
};

/* Metrics committed together, and the outcome. */
struct batch {
    struct pending_metric *m;
    int n, cap;
    char *found; /* per metric: 1 stored (or a duplicate absorbed), 0 trial not in this experiment */
    int ok;
    char err[1024];
};

struct chan_state {
    struct api *a;
    struct chan *chans[CHAN_BUCKETS];
    struct batch open;         /* metrics waiting for their commit to start */
    struct event *flush;       /* made active when the open batch is complete */
    struct event *window;      /* the window timer of the oldest pending metric */
    struct active_conn active[MAX_ACTIVE];
    int nactive;
    int64_t stored, batches;
};

/* The api's channel state, made at its first use. */
static struct chan_state *state_of(struct api *a)
{
    if (!a->chan) {
        a->chan = xcalloc(1, sizeof *a->chan);
        a->chan->a = a;
    }
    return a->chan;
}

static int closed(struct api *a)
{
    return a->stopping || a->detach;
}

static struct chan **chan_slot(struct chan_state *s, const char *trial_id)
{
    uint32_t h = 2166136261u;
    for (const char *p = trial_id; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    struct chan **pp = &s->chans[h % CHAN_BUCKETS];
    while (*pp && strcmp((*pp)->trial_id, trial_id) != 0)
        pp = &(*pp)->next;
    return pp;
}

static struct chan *chan_get(struct chan_state *s, const char *trial_id)
{
    struct chan **pp = chan_slot(s, trial_id);
    if (!*pp) {
        *pp = xcalloc(1, sizeof **pp);
        (*pp)->s = s;
        (*pp)->trial_id = xstrdup(trial_id);
    }
    return *pp;
}

static void chan_free(struct chan *c)
{
    if (c->timer)
        event_free(c->timer);
    tc_queue_close(&c->q);
    free(c->trial_id);
    free(c);
}

/* After a change of c's queue: its timer stopped when no GET waits; c freed when
 * nothing waits on it. */
static void chan_settle(struct chan *c)
{
    if (!c->q.waiting && c->timer)
        event_del(c->timer);
    if (c->q.waiting || c->q.n)
        return;
    struct chan **pp = chan_slot(c->s, c->trial_id);
    if (*pp == c) {
        *pp = c->next;
        chan_free(c);
    }
}

static void on_poll_timeout(evutil_socket_t fd, short ev, void *arg)
{
    (void)fd; (void)ev;
    struct chan *c = arg;
    tc_queue_expire(&c->q, INT64_MAX, closed(c->s->a));
    chan_settle(c);
}

static void chan_push(struct chan *c, char *cmd)
{
    if (tc_queue_push(&c->q, cmd))
        log_limited(LOG_WARN, "trial channel: trial %s has %d commands unread; the oldest is dropped", c->trial_id,
                    TC_MAX_QUEUED);
    chan_settle(c);
}

/* ---------------- group commit of metrics ----------------
 *
 * A PUT metric is answered only after its row is committed (durable as every state
 * write here: WAL with synchronous=NORMAL, so it survives the api or any process being
 * killed; a power loss may lose the last moments, docs/rest-api.md). A commit costs
 * much more than a row, so metrics share commits: the open batch is committed when it
 * is complete, i.e. every connection that reported within the last ACTIVE_MS is
 * waiting in it (nobody else is about to send: no reason to wait), GROUP_WINDOW_US
 * after its first metric, or at GROUP_MAX metrics. A lone trial is answered at once,
 * and N busy trials share one transaction per round. The commit runs in the event loop
 * on the api's connection. (A writer thread with its own connection, committing while
 * the loop read the next requests, was measured against this on the 2-core machine:
 * it made smaller transactions, spent 15-30% more CPU per metric and stored fewer
 * metrics per second, bench/metric_ingest.sh.) */

/* Records that conn just sent a metric; returns how many connections are active. */
static int active_touch(struct chan_state *s, const void *conn)
{
    int64_t now = mono_us();
    int found = 0, n = 0;
    for (int i = 0; i < s->nactive; i++) {
        struct active_conn *c = &s->active[i];
        if (c->conn == conn) {
            c->last_us = now;
            found = 1;
        }
        if (now - c->last_us <= ACTIVE_MS * 1000)
            s->active[n++] = *c;
    }
    s->nactive = n;
    if (!found && s->nactive < MAX_ACTIVE)
        s->active[s->nactive++] = (struct active_conn){conn, now};
    return s->nactive;
}

/* Commits a batch on db; fills found, ok and err. */
static void batch_commit(struct db *db, const char *exp_id, struct batch *b)
{
    struct errbuf e;
    b->found = xcalloc((size_t)b->n, 1);
    b->ok = db_begin(db, &e) == 0;
    for (int i = 0; b->ok && i < b->n; i++) {
        struct pending_metric *p = &b->m[i];
        /* the attempt is read inside the transaction, by the INSERT: a retried trial's
         * metrics go to its new attempt */
        int found = 0;
        if (metric_insert_current(db, exp_id, p->trial_id, &p->m, &found, &e) < 0)
            b->ok = 0;
        b->found[i] = (char)found;
    }
    if (b->ok && db_commit(db, &e) < 0)
        b->ok = 0;
    if (!b->ok) {
        db_rollback(db);
        memcpy(b->err, e.msg, sizeof b->err);
        b->err[sizeof b->err - 1] = '\0';
    }
}

/* Answers every request of a committed batch and empties it. */
static void batch_reply(struct chan_state *s, struct batch *b)
{
    if (!b->ok) {
        log_error("trial channel: storing %d metrics: %s", b->n, b->err);
    } else {
        s->stored += b->n;
        s->batches++;
    }
    for (int i = 0; i < b->n; i++) {
        struct pending_metric *p = &b->m[i];
        if (!b->ok)
            /* trialq's SDK retries 503; NNI's does not read a PUT's answer (docs/rest-api.md) */
            cconn_error(p->r, 503, "metric not stored: %s", b->err);
        else if (!b->found[i])
            cconn_error(p->r, 404, "trial %.40s: not in this experiment", p->trial_id);
        else
            tc_reply(p->r, 200, "");
        free(p->trial_id);
        metric_owned_free(p->owned);
    }
    free(b->m);
    free(b->found);
    memset(b, 0, sizeof *b);
}

/* The open batch goes to its commit. */
static void dispatch_open(struct chan_state *s)
{
    if (s->window)
        event_del(s->window);
    if (s->open.n == 0)
        return;
    struct batch b = s->open;
    memset(&s->open, 0, sizeof s->open);
    batch_commit(s->a->db, s->a->exp_id, &b);
    batch_reply(s, &b);
}

static void batch_ready(evutil_socket_t fd, short ev, void *arg)
{
    (void)fd; (void)ev;
    dispatch_open(arg);
}

static void batch_add(struct chan_state *s, struct tc_conn *r, const char *trial_id,
                      const struct metric_in *m, void *owned)
{
    struct batch *b = &s->open;
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 16;
        b->m = xrealloc(b->m, (size_t)b->cap * sizeof *b->m);
    }
    struct pending_metric *p = &b->m[b->n++];
    p->r = r;
    p->trial_id = xstrdup(trial_id);
    p->m = *m;
    p->owned = owned;
    if (!s->flush) {
        s->flush = event_new(s->a->base, -1, 0, batch_ready, s);
        s->window = evtimer_new(s->a->base, batch_ready, s);
    }
    int active = active_touch(s, r);
    if (b->n >= active || b->n >= GROUP_MAX) {
        /* complete: committed after the callbacks already active in this pass of the
         * loop, so that requests read in the same pass still join */
        if (!event_pending(s->flush, EV_TIMEOUT, NULL))
            event_active(s->flush, EV_TIMEOUT, 0);
    } else if (b->n == 1) {
        struct timeval tv = {0, GROUP_WINDOW_US};
        evtimer_add(s->window, &tv);
    }
}

/* ---------------- requests ---------------- */

static void on_parameter(struct chan_state *s, struct tc_conn *r, const char *trial_id)
{
    struct trial t;
    struct errbuf e;
    int rc = trial_load(s->a->db, trial_id, &t, &e);
    if (rc <= 0) {
        cconn_error(r, rc < 0 ? 500 : 404, "trial %s: %s", trial_id, rc < 0 ? e.msg : "not found");
        return;
    }
    char *rec = nni_param_record(&t);
    chan_push(chan_get(s, trial_id), tc_parameter_command(rec));
    free(rec);
    tc_reply(r, 200, "");
    trial_clear(&t);
}

static void on_metric(struct chan_state *s, struct tc_conn *r, const char *trial_id, const struct tc_cmd *cmd)
{
    struct metric_in m;
    void *owned = NULL;
    struct errbuf e;
    const char *tj = NULL;
    if (metric_parse(cmd->metric, cmd->metric_len, &m, &owned, &e) < 0) {
        cconn_error(r, 400, "%s", e.msg);
    } else if (metric_trial_job_id(owned, &tj) && !(tj && strcmp(tj, trial_id) == 0)) {
        /* the record names its trial: only this URL's own */
        cconn_error(r, 403, "metric of trial %.40s refused on the channel of trial %s", tj ? tj : "?", trial_id);
        metric_owned_free(owned);
    } else {
        batch_add(s, r, trial_id, &m, owned);
    }
}

static void on_put(struct chan_state *s, struct tc_conn *r, const char *trial_id, const struct chan_req *q)
{
    struct tc_cmd cmd;
    tc_command(q->body, q->body_len, q->json_body, trial_id, "", &cmd);
    if (cmd.kind == TC_CMD_REFUSED)
        cconn_error(r, cmd.code, "%s", cmd.msg);
    else if (cmd.kind == TC_CMD_PARAMETER)
        on_parameter(s, r, trial_id);
    else if (cmd.kind == TC_CMD_METRIC)
        on_metric(s, r, trial_id, &cmd);
    else
        tc_reply(r, 200, "");
    tc_cmd_free(&cmd);
}

static void on_get(struct chan_state *s, struct tc_conn *r, const char *trial_id)
{
    struct chan *c = chan_get(s, trial_id);
    if (tc_queue_poll(&c->q, r, 0)) {
        if (!c->timer)
            c->timer = evtimer_new(s->a->base, on_poll_timeout, c);
        struct timeval tv = {TC_POLL_MS / 1000, (TC_POLL_MS % 1000) * 1000};
        evtimer_add(c->timer, &tv);
    }
    chan_settle(c);
}

void channel_request(struct api *a, struct tc_conn *r, const struct chan_req *q)
{
    struct chan_state *s = state_of(a);
    if (q->method == CHAN_OTHER) {
        cconn_error(r, 405, "the trial command channel takes GET and PUT");
        return;
    }
    if (!chan_token_ok(a->exp.token, q->trial_id, q->token)) {
        cconn_error(r, 403, "not the channel of trial %.40s", q->trial_id);
        return;
    }
    cconn_trust(r, q->trial_id);
    if (closed(a) || a->readonly) {
        tc_reply(r, 410, "");
        return;
    }
    if (q->method == CHAN_PUT) {
        on_put(s, r, q->trial_id, q); /* a metric's trial is looked up in its commit */
        return;
    }
    int attempt = 0;
    struct errbuf e;
    int rc = trial_attempt_of(a->db, a->exp_id, q->trial_id, &attempt, &e);
    if (rc <= 0) {
        cconn_error(r, rc < 0 ? 500 : 404, "trial %.40s: %s", q->trial_id, rc < 0 ? e.msg : "not in this experiment");
        return;
    }
    on_get(s, r, q->trial_id);
}

void channel_handle(struct api *a, struct evhttp_request *r, const char *token, const char *trial_id)
{
    enum evhttp_cmd_type m = evhttp_request_get_command(r);
    struct evbuffer *b = evhttp_request_get_input_buffer(r);
    size_t n = evbuffer_get_length(b);
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(r), "Content-Type");
    size_t jl = strlen("application/json");
    struct chan_req q = {
        .method = m == EVHTTP_REQ_GET ? CHAN_GET : m == EVHTTP_REQ_PUT ? CHAN_PUT : CHAN_OTHER,
        .token = token, .trial_id = trial_id,
        .body = n ? (const char *)evbuffer_pullup(b, -1) : NULL, .body_len = n,
        .json_body = ct && strncasecmp(ct, "application/json", jl) == 0 && (ct[jl] == '\0' || ct[jl] == ';' || ct[jl] == ' '),
    };
    /* the connection is the channel's from now on (api/chan_http.c) */
    struct tc_conn *c = cconn_adopt(a, r);
    if (!c) {
        reply_error(r, 500, "trial channel: the connection could not be taken over");
        return;
    }
    channel_request(a, c, &q);
}

void channel_shutdown(struct api *a)
{
    struct chan_state *s = state_of(a);
    /* every pending metric is stored and answered before the api exits */
    dispatch_open(s);
    for (int b = 0; b < CHAN_BUCKETS; b++) {
        for (struct chan *c = s->chans[b], *next; c; c = next) {
            next = c->next;
            chan_free(c); /* a pending GET's 410 is sent at once: the loop has ended */
        }
        s->chans[b] = NULL;
    }
    if (s->flush) {
        event_free(s->flush);
        event_free(s->window);
    }
    s->flush = s->window = NULL;
    cconn_close_all(a);
    if (s->stored)
        log_info("trial channel: %lld metrics stored in %lld transactions", (long long)s->stored,
                 (long long)s->batches);
    free(s);
    a->chan = NULL;
}
