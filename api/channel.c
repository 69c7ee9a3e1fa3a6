/* channel.c: NNI v3's HTTP trial command channel, /env/<envId>/<trialId> (spec §5.4),
 * for trials started with trialCommandChannel: http.
 *
 * envId is the trial's channel token (common/chantoken.h): a request whose token is not
 * that of the trial in its URL gets 403, so a trial can only report for itself.
 * PUT request_parameter queues the trial's own parameter record (parameters are bound
 * to trial ids here, unlike NNI's single FIFO); GET long-polls for it (408 after 1 s).
 * PUT metric is answered only once the metric is stored. Metrics that arrive in one
 * pass of the event loop are stored in one transaction (group commit), then all are
 * answered. After the api began to stop, every request gets 410. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>

#include "api/channel.h"
#include "api/routes.h"
#include "common/chantoken.h"
#include "schema/nnijson.h"

#define POLL_MS 1000
#define MAX_QUEUED 16
#ifndef GROUP_US
#define GROUP_US 0 /* group commit window in µs (see batch_add); 0 = one loop pass */
#endif /* commands waiting for a GET, per trial */

struct chan {
    struct chan *next;
    char *trial_id;
    char *queue[MAX_QUEUED];
    int nqueued;
    struct evhttp_request *waiting; /* a pending GET */
    struct event *timer;
};

struct pending_metric {
    struct evhttp_request *r;
    char *trial_id;
    int attempt;
    struct metric_in m;
    void *owned;
};

struct chan_state {
    struct api *a;
    struct chan *chans;
    struct pending_metric *batch;
    int nbatch, capbatch;
    struct event *flush;
    int64_t stored, batches;
};

static struct chan_state *state_of(struct api *a)
{
    static struct chan_state st;
    if (!st.a) {
        st.a = a;
        st.flush = NULL;
    }
    return &st;
}

static int closed(struct api *a)
{
    return a->stopping || a->detach;
}

static void reply_empty(struct evhttp_request *r, int code)
{
    reply_json(r, code, "");
}

static struct chan *chan_get(struct chan_state *s, const char *trial_id)
{
    for (struct chan *c = s->chans; c; c = c->next)
        if (strcmp(c->trial_id, trial_id) == 0)
            return c;
    struct chan *c = xcalloc(1, sizeof *c);
    c->trial_id = xstrdup(trial_id);
    c->next = s->chans;
    s->chans = c;
    return c;
}

/* Whether the client of a pending request is still connected: libevent notices a
 * closed connection only when it next reads, and a poll holds no reply yet. */
static int peer_alive(struct evhttp_request *r)
{
    struct evhttp_connection *conn = evhttp_request_get_connection(r);
    struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0)
        return 0;
    char b;
    ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
}

/* Answers the pending GET with the first queued command, if both exist. */
static void chan_deliver(struct chan *c)
{
    if (!c->waiting || c->nqueued == 0)
        return;
    if (!peer_alive(c->waiting)) {
        /* the poller went away: the command waits for the next poll; the reply only
         * frees the request (or goes nowhere) */
        struct evhttp_request *gone = c->waiting;
        c->waiting = NULL;
        if (c->timer)
            event_del(c->timer);
        reply_empty(gone, 408);
        return;
    }
    char *cmd = c->queue[0];
    memmove(c->queue, c->queue + 1, (size_t)(c->nqueued - 1) * sizeof c->queue[0]);
    c->nqueued--;
    struct evhttp_request *r = c->waiting;
    c->waiting = NULL;
    if (c->timer)
        event_del(c->timer);
    reply_json(r, 200, cmd);
    free(cmd);
}

static void on_poll_timeout(evutil_socket_t fd, short ev, void *arg)
{
    (void)fd; (void)ev;
    struct chan *c = arg;
    struct chan_state *s = state_of(NULL);
    if (!c->waiting)
        return;
    struct evhttp_request *r = c->waiting;
    c->waiting = NULL;
    reply_empty(r, closed(s->a) ? 410 : 408);
}

static void chan_push(struct chan *c, char *cmd)
{
    if (c->nqueued == MAX_QUEUED) { /* a trial that asks and never reads: keep the newest */
        free(c->queue[0]);
        memmove(c->queue, c->queue + 1, (size_t)(MAX_QUEUED - 1) * sizeof c->queue[0]);
        c->nqueued--;
    }
    c->queue[c->nqueued++] = cmd;
    chan_deliver(c);
}

/* ---------------- group commit of metrics ---------------- */

static void batch_flush(evutil_socket_t fd, short ev, void *arg)
{
    (void)fd; (void)ev;
    struct chan_state *s = arg;
    struct api *a = s->a;
    struct errbuf e;
    int n = s->nbatch;
    if (n == 0)
        return;
    int ok = db_begin(a->db, &e) == 0;
    for (int i = 0; ok && i < n; i++) {
        struct pending_metric *p = &s->batch[i];
        if (metric_insert(a->db, p->trial_id, p->attempt, &p->m, &e) < 0)
            ok = 0;
    }
    if (ok && db_commit(a->db, &e) < 0)
        ok = 0;
    if (!ok) {
        db_rollback(a->db);
        log_error("trial channel: storing %d metrics: %s", n, e.msg);
    } else {
        s->stored += n;
        s->batches++;
    }
    for (int i = 0; i < n; i++) {
        struct pending_metric *p = &s->batch[i];
        if (ok)
            reply_empty(p->r, 200);
        else
            reply_error(p->r, 503, "metric not stored: %s", e.msg); /* the SDK retries 503 */
        free(p->trial_id);
        metric_owned_free(p->owned);
    }
    s->nbatch = 0;
}

static void batch_add(struct chan_state *s, struct evhttp_request *r, const char *trial_id, int attempt,
                      const struct metric_in *m, void *owned)
{
    if (s->nbatch == s->capbatch) {
        s->capbatch = s->capbatch ? 2 * s->capbatch : 16;
        s->batch = xrealloc(s->batch, (size_t)s->capbatch * sizeof *s->batch);
    }
    struct pending_metric *p = &s->batch[s->nbatch++];
    p->r = r;
    p->trial_id = xstrdup(trial_id);
    p->attempt = attempt;
    p->m = *m;
    p->owned = owned;
    if (!s->flush)
        s->flush = evtimer_new(s->a->base, batch_flush, s);
    if (s->nbatch == 1) {
        /* GROUP_US 0: runs after the other callbacks already active in this pass of the
         * loop, so every PUT read in the same pass joins this transaction; > 0: also
         * those that arrive within that many microseconds */
        struct timeval tv = {0, GROUP_US};
        if (GROUP_US == 0)
            event_active(s->flush, EV_TIMEOUT, 0);
        else
            evtimer_add(s->flush, &tv);
    }
}

/* ---------------- requests ---------------- */

static int json_content_type(struct evhttp_request *r)
{
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(r), "Content-Type");
    if (!ct)
        return 0;
    size_t n = strlen("application/json");
    return strncasecmp(ct, "application/json", n) == 0 && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static void on_put(struct chan_state *s, struct evhttp_request *r, const char *trial_id, int attempt)
{
    struct api *a = s->a;
    if (!json_content_type(r)) {
        reply_error(r, 415, "PUT %s: Content-Type must be application/json", trial_id);
        return;
    }
    struct evbuffer *b = evhttp_request_get_input_buffer(r);
    size_t n = evbuffer_get_length(b);
    const char *p = n ? (const char *)evbuffer_pullup(b, -1) : NULL;
    cJSON *cmd = p ? cJSON_ParseWithLength(p, n) : NULL;
    if (!cJSON_IsObject(cmd)) {
        cJSON_Delete(cmd);
        reply_error(r, 400, "body: not a JSON object (a trial command)");
        return;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(cmd, "type");
    if (!cJSON_IsString(type)) {
        reply_error(r, 400, "body: the command has no string \"type\"");
    } else if (strcmp(type->valuestring, "request_parameter") == 0) {
        struct trial t;
        struct errbuf e;
        int rc = trial_load(a->db, trial_id, &t, &e);
        if (rc <= 0) {
            reply_error(r, rc < 0 ? 500 : 404, "trial %s: %s", trial_id, rc < 0 ? e.msg : "not found");
        } else {
            char *rec = nni_param_record(&t);
            struct strbuf sb;
            sb_init(&sb);
            sb_puts(&sb, "{\"type\":\"parameter\",\"parameter\":");
            nj_str(&sb, rec);
            sb_puts(&sb, "}");
            free(rec);
            chan_push(chan_get(s, trial_id), sb_detach(&sb));
            reply_empty(r, 200);
            trial_clear(&t);
        }
    } else if (strcmp(type->valuestring, "metric") == 0) {
        const cJSON *metric = cJSON_GetObjectItemCaseSensitive(cmd, "metric");
        struct metric_in m;
        void *owned = NULL;
        struct errbuf e;
        if (!cJSON_IsString(metric)) {
            reply_error(r, 400, "body: a metric command needs \"metric\": the metric record as a JSON string");
        } else if (metric_parse(metric->valuestring, strlen(metric->valuestring), &m, &owned, &e) < 0) {
            reply_error(r, 400, "%s", e.msg);
        } else {
            /* the record names its trial: only this URL's own */
            cJSON *rec = cJSON_Parse(metric->valuestring);
            const cJSON *tj = cJSON_GetObjectItemCaseSensitive(rec, "trial_job_id");
            if (tj && !(cJSON_IsString(tj) && strcmp(tj->valuestring, trial_id) == 0)) {
                reply_error(r, 403, "metric of trial %.40s refused on the channel of trial %s",
                            cJSON_IsString(tj) ? tj->valuestring : "?", trial_id);
                metric_owned_free(owned);
            } else {
                batch_add(s, r, trial_id, attempt, &m, owned);
            }
            cJSON_Delete(rec);
        }
    } else {
        log_warn("trial channel %s: unexpected command type %.40s", trial_id, type->valuestring);
        reply_empty(r, 200);
    }
    cJSON_Delete(cmd);
}

static void on_get(struct chan_state *s, struct evhttp_request *r, const char *trial_id)
{
    struct chan *c = chan_get(s, trial_id);
    if (c->waiting) { /* one poll at a time: the older one ends as if it timed out */
        struct evhttp_request *old = c->waiting;
        c->waiting = NULL;
        reply_empty(old, 408);
    }
    c->waiting = r;
    if (c->nqueued) {
        chan_deliver(c);
        return;
    }
    if (!c->timer)
        c->timer = evtimer_new(s->a->base, on_poll_timeout, c);
    struct timeval tv = {POLL_MS / 1000, (POLL_MS % 1000) * 1000};
    evtimer_add(c->timer, &tv);
}

void channel_handle(struct api *a, struct evhttp_request *r, const char *token, const char *trial_id)
{
    struct chan_state *s = state_of(a);
    enum evhttp_cmd_type m = evhttp_request_get_command(r);
    if (m != EVHTTP_REQ_GET && m != EVHTTP_REQ_PUT) {
        evhttp_add_header(evhttp_request_get_output_headers(r), "Allow", "GET, PUT");
        reply_error(r, 405, "the trial command channel takes GET and PUT");
        return;
    }
    if (!chan_token_ok(a->exp.token, trial_id, token)) {
        reply_error(r, 403, "not the channel of trial %.40s", trial_id);
        return;
    }
    if (closed(a) || a->readonly) {
        reply_empty(r, 410);
        return;
    }
    int64_t attempt = 0;
    struct errbuf e;
    int rc = db_int(a->db, &e, &attempt, "SELECT attempt FROM trial WHERE id = ? AND experiment_id = ?", "ss",
                    trial_id, a->exp_id);
    if (rc <= 0) {
        reply_error(r, rc < 0 ? 500 : 404, "trial %.40s: %s", trial_id, rc < 0 ? e.msg : "not in this experiment");
        return;
    }
    if (m == EVHTTP_REQ_PUT)
        on_put(s, r, trial_id, (int)attempt);
    else
        on_get(s, r, trial_id);
}

void channel_shutdown(struct api *a)
{
    struct chan_state *s = state_of(a);
    batch_flush(-1, 0, s);
    for (struct chan *c = s->chans, *next; c; c = next) {
        next = c->next;
        if (c->waiting) {
            /* the loop has ended: the reply is written here, or it would never leave */
            struct evhttp_connection *conn = evhttp_request_get_connection(c->waiting);
            reply_empty(c->waiting, 410);
            struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
            if (bev && bufferevent_getfd(bev) >= 0)
                evbuffer_write(bufferevent_get_output(bev), bufferevent_getfd(bev));
        }
        if (c->timer)
            event_free(c->timer);
        for (int i = 0; i < c->nqueued; i++)
            free(c->queue[i]);
        free(c->trial_id);
        free(c);
    }
    s->chans = NULL;
    if (s->flush)
        event_free(s->flush);
    s->flush = NULL;
    free(s->batch);
    s->batch = NULL;
    s->capbatch = 0;
    if (s->stored)
        log_info("trial channel: %lld metrics stored in %lld transactions", (long long)s->stored,
                 (long long)s->batches);
}
