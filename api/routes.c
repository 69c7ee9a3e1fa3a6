/* routes.c: the NNI REST API under /api/v1/nni (and /logs/), as a table of routes,
 * and what every handler shares: replies, query and body parsing. Payload shapes are
 * NNI's (including its double-encoded metric values) so NNI's clients work; the
 * handlers are in api/routes_*.c. No request may crash the process: every input is
 * checked here or in its handler, and answered with a JSON error naming what is wrong. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>

#include "api/channel.h"
#include "api/routes.h"

#define MAX_HEADERS (64 << 10)
#define MAX_SEGMENTS 16

/* ---------------- replies ---------------- */

void add_api_headers(struct evhttp_request *r, const char *content_type)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(r);
    evhttp_remove_header(h, "Content-Type");
    evhttp_add_header(h, "Content-Type", content_type);
    evhttp_add_header(h, "Access-Control-Allow-Headers", "Origin, X-Requested-With, Content-Type, Accept");
    evhttp_add_header(h, "Access-Control-Allow-Methods", "PUT,POST,GET,DELETE,OPTIONS");
}

void reply_json(struct evhttp_request *r, int code, const char *body)
{
    add_api_headers(r, "application/json");
    struct evbuffer *b = evbuffer_new();
    if (body)
        evbuffer_add(b, body, strlen(body));
    /* NULL reason: libevent's phrase for the code */
    evhttp_send_reply(r, code, NULL, b);
    evbuffer_free(b);
}

void reply_cjson(struct evhttp_request *r, cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    reply_json(r, 200, s);
    free(s);
    cJSON_Delete(j);
}

void reply_error(struct evhttp_request *r, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "{\"error\":");
    nj_str(&sb, msg);
    sb_puts(&sb, "}");
    reply_json(r, code, sb.buf);
    sb_free(&sb);
}

/* ---------------- request parsing ---------------- */

const char *query_str(struct req *q, const char *name)
{
    return evhttp_find_header(q->query, name);
}

int query_int(struct req *q, const char *name, int64_t min, int64_t max, int64_t *out)
{
    const char *s = query_str(q, name);
    if (!s)
        return 0;
    /* digits only: "1e3", " 5", "5x" and overflow are all refused */
    int neg = *s == '-';
    const char *p = s + neg;
    int64_t v = 0;
    int ok = *p != '\0';
    for (; ok && *p; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX - 9) / 10)
            ok = 0;
        else
            v = v * 10 + (*p - '0');
    }
    if (neg)
        v = -v;
    if (!ok || v < min || v > max) {
        reply_error(q->r, 400, "query parameter %s: must be an integer from %lld to %lld (got '%.64s')", name,
                    (long long)min, (long long)max, s);
        return -1;
    }
    *out = v;
    return 0;
}

cJSON *body_json(struct req *q)
{
    struct evbuffer *b = evhttp_request_get_input_buffer(q->r);
    size_t n = evbuffer_get_length(b);
    if (n == 0) {
        reply_error(q->r, 400, "body: empty; expected JSON");
        return NULL;
    }
    const char *p = (const char *)evbuffer_pullup(b, -1);
    cJSON *j = p ? cJSON_ParseWithLength(p, n) : NULL;
    if (!j) {
        const char *at = cJSON_GetErrorPtr();
        long off = p && at && at >= p && at <= p + n ? (long)(at - p) : -1;
        reply_error(q->r, 400, "body: not valid JSON (error near byte %ld of %zu)", off, n);
    }
    return j;
}

int json_int_in(const cJSON *v, int64_t min, int64_t max, int64_t *out)
{
    if (!cJSON_IsNumber(v))
        return -1;
    double d = v->valuedouble;
    /* checked before the conversion: a double out of range is undefined behaviour */
    if (!isfinite(d) || d != floor(d) || d < (double)min || d > (double)max)
        return -1;
    *out = (int64_t)d;
    return 0;
}

/* ---------------- routing ---------------- */

/* ROUTE_TOKEN: refused from another host without the experiment's token.
 * ROUTE_MUTATES: that, and refused in view mode. */
#define ROUTE_TOKEN 1
#define ROUTE_MUTATES 3

struct route {
    enum evhttp_cmd_type method;
    const char *pattern; /* segments; ":name" matches one non-empty segment */
    int flags;
    void (*fn)(struct req *q);
};

#define API API_PREFIX
static const struct route routes[] = {
    {EVHTTP_REQ_GET, API "/version", 0, h_version},
    {EVHTTP_REQ_GET, API "/check-status", 0, h_check_status},
    {EVHTTP_REQ_GET, API "/experiment", 0, h_experiment_get},
    {EVHTTP_REQ_POST, API "/experiment", 0, h_experiment_post},
    {EVHTTP_REQ_PUT, API "/experiment", ROUTE_MUTATES, h_experiment_put},
    {EVHTTP_REQ_DELETE, API "/experiment", ROUTE_TOKEN, h_experiment_delete},
    {EVHTTP_REQ_PUT, API "/experiment/cluster-metadata", ROUTE_MUTATES, h_cluster_metadata},
    {EVHTTP_REQ_POST, API "/experiment/import-data", ROUTE_MUTATES, h_import_data},
    {EVHTTP_REQ_GET, API "/experiment/imported-data", 0, h_imported_data},
    {EVHTTP_REQ_GET, API "/experiment-metadata", 0, h_experiment_metadata},
    {EVHTTP_REQ_GET, API "/experiments-info", 0, h_experiments_info},
    {EVHTTP_REQ_GET, API "/job-statistics", 0, h_job_statistics},
    {EVHTTP_REQ_GET, API "/trial-jobs", 0, h_trial_jobs},
    {EVHTTP_REQ_POST, API "/trial-jobs", ROUTE_MUTATES, h_trial_job_post},
    {EVHTTP_REQ_GET, API "/trial-jobs/:id", 0, h_trial_job_get},
    {EVHTTP_REQ_DELETE, API "/trial-jobs/:id", ROUTE_MUTATES, h_trial_job_delete},
    {EVHTTP_REQ_POST, API "/trial-jobs/:id/rerun", ROUTE_MUTATES, h_trial_job_rerun},
    {EVHTTP_REQ_GET, API "/metric-data", 0, h_metric_data},
    {EVHTTP_REQ_GET, API "/metric-data/:job_id", 0, h_metric_data_trial},
    {EVHTTP_REQ_GET, API "/metric-data-range/:min_seq_id/:max_seq_id", 0, h_metric_data_range},
    {EVHTTP_REQ_GET, API "/metric-data-latest", 0, h_metric_data_latest},
    {EVHTTP_REQ_GET, API "/trial-file/:id/:filename", 0, h_trial_file},
    {EVHTTP_REQ_GET, API "/export-data", 0, h_export_data},
    {EVHTTP_REQ_GET, "/logs/:file", 0, h_log_file},
};

static const char *method_name(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    case EVHTTP_REQ_OPTIONS: return "OPTIONS";
    default: return "?";
    }
}

struct segments {
    char *seg[MAX_SEGMENTS]; /* decoded */
    int n;
};

static void segments_free(struct segments *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->seg[i]);
    s->n = 0;
}

/* Splits the raw path on '/' and decodes each segment on its own, so that an encoded
 * slash (%2F) stays inside its segment. A trailing slash is ignored, as Express does.
 * Returns 0, 1 when there are too many segments (no route), -1 for a NUL byte. */
static int split_path(const char *raw, struct segments *out)
{
    out->n = 0;
    const char *p = raw;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (out->n == MAX_SEGMENTS)
            return 1;
        char *enc = xstrndup(p, len);
        size_t dlen = 0;
        char *dec = evhttp_uridecode(enc, 0, &dlen);
        free(enc);
        if (!dec || strlen(dec) != dlen) {
            free(dec);
            return -1;
        }
        out->seg[out->n++] = dec;
        p += len;
    }
    return 0;
}

/* Matches a pattern against the segments; fills args. */
static int match(const char *pattern, const struct segments *s, char **args)
{
    int i = 0, nargs = 0;
    const char *p = pattern;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (i >= s->n)
            return 0;
        if (*p == ':') {
            if (!*s->seg[i] || nargs >= MAX_ARGS)
                return 0;
            args[nargs++] = s->seg[i];
        } else if (strlen(s->seg[i]) != len || strncmp(s->seg[i], p, len) != 0) {
            return 0;
        }
        i++;
        p += len;
    }
    return i == s->n;
}

static int peer_is_loopback(struct evhttp_request *r)
{
    struct evhttp_connection *c = evhttp_request_get_connection(r);
    char *addr = NULL;
    ev_uint16_t port = 0;
    if (!c)
        return 0;
    evhttp_connection_get_peer(c, &addr, &port);
    return addr && (str_starts(addr, "127.") || strcmp(addr, "::1") == 0 || str_starts(addr, "::ffff:127."));
}

/* Mutating routes from another host need the experiment's token (design: the api binds
 * loopback unless configured otherwise; then changes need the secret). */
static int token_ok(struct req *q)
{
    if (peer_is_loopback(q->r))
        return 1;
    const char *t = evhttp_find_header(evhttp_request_get_input_headers(q->r), "X-Trialq-Token");
    const char *want = q->a->exp.token;
    if (!t || !want || strlen(t) != strlen(want))
        return 0;
    unsigned char diff = 0; /* constant time: the token is a secret */
    for (size_t i = 0; want[i]; i++)
        diff |= (unsigned char)(t[i] ^ want[i]);
    return diff == 0;
}

/* A reply larger than one write (libevent writes 16 kB at a time) ends in a small
 * segment that Nagle's algorithm holds until the client ACKs, and a keep-alive client
 * delays its ACK up to 40 ms: every listing page would take 40 ms. So: no Nagle, and
 * bigger writes. */
static void tune_connection(struct evhttp_request *r)
{
    struct evhttp_connection *c = evhttp_request_get_connection(r);
    struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
    if (!bev)
        return;
    int one = 1;
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    bufferevent_set_max_single_write(bev, 256 << 10);
}

static void dispatch(struct evhttp_request *r, void *arg)
{
    struct api *a = arg;
    tune_connection(r);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r);
    const char *raw = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!raw || !*raw)
        raw = "/";
    enum evhttp_cmd_type m = evhttp_request_get_command(r);
    struct segments segs = {.n = 0};
    int sp = split_path(raw, &segs);
    if (sp < 0) {
        reply_error(r, 400, "path %.200s: a segment holds a NUL byte", raw);
        segments_free(&segs);
        return;
    }
    /* the trial command channel lives outside the REST API (api/channel.c) */
    if (sp == 0 && segs.n == 3 && strcmp(segs.seg[0], "env") == 0) {
        channel_handle(a, r, segs.seg[1], segs.seg[2]);
        segments_free(&segs);
        return;
    }
    struct evkeyvalq qs;
    TAILQ_INIT(&qs);
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (query && evhttp_parse_query_str(query, &qs) < 0) {
        reply_error(r, 400, "query string of %.200s is malformed", raw);
        evhttp_clear_headers(&qs);
        segments_free(&segs);
        return;
    }
    const struct route *found = NULL;
    char allowed[64] = "";
    struct req q = {.a = a, .r = r, .path = raw, .query = &qs};
    for (size_t i = 0; sp == 0 && i < sizeof routes / sizeof routes[0]; i++) {
        char *args[MAX_ARGS] = {NULL};
        if (!match(routes[i].pattern, &segs, args))
            continue;
        if (routes[i].method == m) {
            found = &routes[i];
            memcpy(q.args, args, sizeof args);
            break;
        }
        size_t l = strlen(allowed);
        snprintf(allowed + l, sizeof allowed - l, "%s%s", l ? ", " : "", method_name(routes[i].method));
    }
    if (found) {
        if ((found->flags & ROUTE_MUTATES) == ROUTE_MUTATES && a->readonly)
            reply_error(r, 400, "experiment %s is in readonly mode!", a->exp_id);
        else if ((found->flags & ROUTE_TOKEN) && !token_ok(&q))
            reply_error(r, 403, "%s %.200s from another host needs the experiment's token in X-Trialq-Token",
                        method_name(m), raw);
        else
            found->fn(&q);
    } else if (allowed[0] && m == EVHTTP_REQ_OPTIONS) {
        /* CORS preflight, as Express answers it */
        evhttp_add_header(evhttp_request_get_output_headers(r), "Allow", allowed);
        reply_json(r, 200, "");
    } else if (allowed[0]) {
        evhttp_add_header(evhttp_request_get_output_headers(r), "Allow", allowed);
        reply_error(r, 405, "method %s not allowed on %.200s (allowed: %s)", method_name(m), raw, allowed);
    } else {
        reply_error(r, 404, "no route %s %.200s%s", method_name(m), raw,
                    str_starts(raw, API_PREFIX) ? "" : " (the API is under " API_PREFIX ")");
    }
    evhttp_clear_headers(&qs);
    segments_free(&segs);
}

void routes_register(struct api *a)
{
    evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS);
    /* bodies over NNI's 50 MB limit get 413 from libevent before a handler runs;
     * headers are bounded too (unbounded by default) */
    evhttp_set_max_body_size(a->http, MAX_BODY);
    evhttp_set_max_headers_size(a->http, MAX_HEADERS);
    evhttp_set_gencb(a->http, dispatch, a);
}
