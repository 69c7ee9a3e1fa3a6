/* routes.c: the NNI REST API under /api/v1/nni (and /logs/), as a table of routes,
 * and what every handler shares: replies, query and body parsing. Payload shapes are
 * NNI's (including its double-encoded metric values) so NNI's clients work; the
 * handlers are in api/routes_*.c. No request may crash the process: every input is
 * checked here or in its handler, and answered with a JSON error naming what is wrong. */
#include <arpa/inet.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>

#include "api/channel.h"
#include "api/dispatcher.h"
#include "api/routes.h"
#include "api/routes_webui.h"
#include "common/chantoken.h"
#include "common/json.h"

#define MAX_HEADERS (32 << 10) /* guard.c's HEAD_MAX: it refuses longer heads first */

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

char *error_body(const char *fmt, va_list ap)
{
    return json_error_body(fmt, ap);
}

void reply_error(struct evhttp_request *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *body = error_body(fmt, ap);
    va_end(ap);
    reply_json(r, code, body);
    free(body);
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
    /* strict first: cJSON alone takes trailing garbage, "03", raw control characters,
     * and keeps the first of repeated keys where NNI's JSON.parse keeps the last */
    struct json_issue is;
    if (!p || json_check(p, n, &is) < 0) {
        reply_error(q->r, 400, "body: not valid JSON: %s (byte %zu of %zu, line %d, column %d)",
                    p ? is.msg : "unreadable", p ? is.offset : 0, n, p ? is.line : 0, p ? is.col : 0);
        return NULL;
    }
    cJSON *j = cJSON_ParseWithLength(p, n);
    if (!j)
        reply_error(q->r, 400, "body: not valid JSON");
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

/* ROUTE_TOKEN: refused without the experiment's token when the api listens beyond
 * loopback (token_check).
 * ROUTE_MUTATES: that, and refused in view mode. */
#define ROUTE_TOKEN 1
#define ROUTE_MUTATES 3

struct route {
    enum evhttp_cmd_type method;
    const char *pattern; /* segments; ":name" matches one non-empty segment */
    int flags;
    void (*fn)(struct req *q);
    int64_t max_body; /* the most its body may be (guard.c refuses more from the head); 0: BODY_DEFAULT */
};

#define API API_PREFIX
static const struct route routes[] = {
    {EVHTTP_REQ_GET, API "/version", 0, h_version, 0},
    {EVHTTP_REQ_GET, API "/check-status", 0, h_check_status, 0},
    {EVHTTP_REQ_GET, API "/experiment", 0, h_experiment_get, 0},
    {EVHTTP_REQ_POST, API "/experiment", 0, h_experiment_post, BODY_PROFILE},
    {EVHTTP_REQ_PUT, API "/experiment", ROUTE_MUTATES, h_experiment_put, BODY_PROFILE},
    {EVHTTP_REQ_DELETE, API "/experiment", ROUTE_TOKEN, h_experiment_delete, 0},
    {EVHTTP_REQ_PUT, API "/experiment/cluster-metadata", ROUTE_MUTATES, h_cluster_metadata, BODY_METADATA},
    {EVHTTP_REQ_POST, API "/experiment/import-data", ROUTE_MUTATES, h_import_data, BODY_IMPORT},
    {EVHTTP_REQ_GET, API "/experiment/imported-data", 0, h_imported_data, 0},
    {EVHTTP_REQ_GET, API "/experiment-metadata", 0, h_experiment_metadata, 0},
    {EVHTTP_REQ_GET, API "/experiments-info", 0, h_experiments_info, 0},
    {EVHTTP_REQ_GET, API "/job-statistics", 0, h_job_statistics, 0},
    {EVHTTP_REQ_GET, API "/machines", 0, h_machines, 0},
    {EVHTTP_REQ_GET, API "/trial-jobs", 0, h_trial_jobs, 0},
    {EVHTTP_REQ_POST, API "/trial-jobs", ROUTE_MUTATES, h_trial_job_post, BODY_TRIAL},
    {EVHTTP_REQ_GET, API "/trial-jobs/:id", 0, h_trial_job_get, 0},
    {EVHTTP_REQ_DELETE, API "/trial-jobs/:id", ROUTE_MUTATES, h_trial_job_delete, 0},
    {EVHTTP_REQ_POST, API "/trial-jobs/:id/rerun", ROUTE_MUTATES, h_trial_job_rerun, 0},
    {EVHTTP_REQ_GET, API "/metric-data", 0, h_metric_data, 0},
    {EVHTTP_REQ_GET, API "/metric-data/:job_id", 0, h_metric_data_trial, 0},
    {EVHTTP_REQ_GET, API "/metric-data-range/:min_seq_id/:max_seq_id", 0, h_metric_data_range, 0},
    {EVHTTP_REQ_GET, API "/metric-data-latest", 0, h_metric_data_latest, 0},
    {EVHTTP_REQ_GET, API "/trial-file/:id/:filename", 0, h_trial_file, 0},
    {EVHTTP_REQ_GET, API "/export-data", 0, h_export_data, 0},
    {EVHTTP_REQ_GET, "/logs/:file", 0, h_log_file, 0},
    /* TensorBoard (api/tensorboard.c): processes, not stored state, so view mode may too */
    {EVHTTP_REQ_POST, API "/tensorboard", ROUTE_TOKEN, h_tensorboard_start, 0},
    {EVHTTP_REQ_GET, API "/tensorboard/:id", 0, h_tensorboard_task, 0},
    {EVHTTP_REQ_PUT, API "/tensorboard/:id", ROUTE_TOKEN, h_tensorboard_task, 0},
    {EVHTTP_REQ_DELETE, API "/tensorboard/:id", ROUTE_TOKEN, h_tensorboard_task, 0},
    {EVHTTP_REQ_GET, API "/tensorboard-tasks", 0, h_tensorboard_tasks, 0},
    {EVHTTP_REQ_DELETE, API "/tensorboard-tasks", ROUTE_TOKEN, h_tensorboard_tasks, 0},
    WEBUI_ROUTES, /* the web UI and its reads (api/routes_webui.c) */
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

void segments_free(struct segments *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->seg[i]);
    s->n = 0;
}

/* Splits the raw path on '/' and decodes each segment on its own, so that an encoded
 * slash (%2F) stays inside its segment. A trailing slash is ignored, as Express does.
 * Returns 0, 1 when there are too many segments (no route), -1 for a NUL byte. */
int split_path(const char *raw, struct segments *out)
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

int listens_beyond_loopback(const struct api *a)
{
    const char *b = a->exp.bind_address;
    return !(b && (str_starts(b, "127.") || strcmp(b, "::1") == 0 || strcmp(b, "localhost") == 0));
}

/* Mutating routes need the experiment's token when the api listens beyond loopback
 * (design: loopback unless configured otherwise; then changes need the secret). The
 * rule is the listening address, not the peer's: a proxy or another local user on a
 * shared host would otherwise pass as "loopback". 0 ok, else the status to answer. */
int routes_token_status(const struct api *a, const char *sent)
{
    if (!listens_beyond_loopback(a))
        return 0;
    const char *want = a->exp.token;
    if (!sent)
        return 401;
    return secret_equal(sent, strlen(sent), want) ? 0 : 403; /* constant time */
}

static int token_check(struct req *q)
{
    return routes_token_status(q->a, evhttp_find_header(evhttp_request_get_input_headers(q->r), "X-Trialq-Token"));
}

/* A Host header (or an Origin's authority) that names this machine's loopback:
 * 127.x.x.x, localhost (and *.localhost, which browsers resolve there), [::1]. */
static int loopback_host(const char *h)
{
    char name[256];
    size_t n;
    if (*h == '[') { /* [v6]:port */
        const char *end = strchr(h, ']');
        n = end ? (size_t)(end - h - 1) : 0;
        h++;
    } else {
        n = strcspn(h, ":");
    }
    if (n == 0 || n >= sizeof name)
        return 0;
    memcpy(name, h, n);
    name[n] = 0;
    if (strcasecmp(name, "localhost") == 0 || strcmp(name, "::1") == 0)
        return 1;
    size_t l = strlen(name);
    if (l > 10 && strcasecmp(name + l - 10, ".localhost") == 0)
        return 1;
    struct in_addr v4;
    return inet_pton(AF_INET, name, &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

/* What a browser may not do here. A web page of another site must not change an
 * experiment through its user's browser (mutating routes): a form POST or a no-cors
 * fetch needs no CORS preflight, and the api on loopback has no token to stop it.
 * Browsers send Origin with every POST, PUT and DELETE: it must be this api's own (the
 * UI's pages), i.e. name the Host the request was sent to. And a page whose DNS name
 * turns to 127.0.0.1 (DNS rebinding) is same-origin with the api under that name: on a
 * loopback-only api a browser's request (it says so: Origin, Sec-Fetch-*, a Mozilla/
 * User-Agent) must name a loopback Host, for reads too (parameters, metrics and trial
 * logs are the user's). nnictl, curl and NNI's Python client send none of these. Returns
 * NULL, or why it is refused. */
static const char *browser_refusal(const struct api *a, struct evhttp_request *r, int mutating)
{
    struct evkeyvalq *h = evhttp_request_get_input_headers(r);
    const char *origin = evhttp_find_header(h, "Origin");
    const char *site = evhttp_find_header(h, "Sec-Fetch-Site");
    const char *host = evhttp_find_header(h, "Host");
    /* Sec-Fetch-* is sent to trustworthy origins only (https, localhost): to a rebound
     * http://evil.example a browser says what it is by its User-Agent, which a page's
     * script cannot change */
    const char *ua = evhttp_find_header(h, "User-Agent");
    int browser = origin || site || evhttp_find_header(h, "Sec-Fetch-Mode") || (ua && str_starts(ua, "Mozilla/"));
    if (browser && host && !listens_beyond_loopback(a) && !loopback_host(host))
        return "a browser reached this loopback-only api under another name than localhost or 127.0.0.1";
    if (!mutating)
        return NULL;
    if (!origin)
        return site && (strcmp(site, "cross-site") == 0 || strcmp(site, "same-site") == 0)
                   ? "the browser says it comes from another site (Sec-Fetch-Site)"
                   : NULL;
    const char *auth = str_starts(origin, "http://") ? origin + 7 : str_starts(origin, "https://") ? origin + 8 : NULL;
    if (!auth || !host || strcasecmp(auth, host) != 0)
        return "it comes from a page of another origin";
    return NULL;
}

/* Removes the experiment's URL prefix (nnictl create --url_prefix) from the front of
 * the segments. Returns 0, or -1 when the path is outside the prefix. */
int strip_prefix(const struct api *a, struct segments *s)
{
    const char *p = a->exp.url_prefix;
    int k = 0;
    while (p && *p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (k >= s->n || strlen(s->seg[k]) != len || strncmp(s->seg[k], p, len) != 0)
            return -1;
        k++;
        p += len;
    }
    for (int i = 0; i < k; i++)
        free(s->seg[i]);
    memmove(s->seg, s->seg + k, (size_t)(s->n - k) * sizeof s->seg[0]);
    s->n -= k;
    return 0;
}

/* A reply larger than one write (libevent writes 16 kB at a time) ends in a small
 * segment that Nagle's algorithm holds until the client ACKs, and a keep-alive client
 * delays its ACK up to 40 ms: every listing page would take 40 ms. So: no Nagle (set
 * on the listening socket, server.c, and inherited by every accepted one), and bigger
 * writes. */
static void tune_connection(struct evhttp_request *r)
{
    struct evhttp_connection *c = evhttp_request_get_connection(r);
    struct bufferevent *bev = c ? evhttp_connection_get_bufferevent(c) : NULL;
    if (bev)
        bufferevent_set_max_single_write(bev, 256 << 10);
}

/* The route a request's method and target name, as dispatch finds it: NULL for none
 * (then its body may be BODY_DEFAULT, enough for any error to be answered). Sets
 * *channel for the trial channel (/env/:token/:trial). */
static const struct route *route_of(const struct api *a, enum evhttp_cmd_type m, const char *raw, int *channel)
{
    struct segments segs = {.n = 0};
    const struct route *found = NULL;
    *channel = 0;
    if (split_path(raw, &segs) == 0 && strip_prefix(a, &segs) == 0) {
        *channel = segs.n == 3 && strcmp(segs.seg[0], "env") == 0;
        for (size_t i = 0; !*channel && i < sizeof routes / sizeof routes[0]; i++) {
            char *args[MAX_ARGS] = {NULL};
            if (routes[i].method == m && match(routes[i].pattern, &segs, args)) {
                found = &routes[i];
                break;
            }
        }
    }
    segments_free(&segs);
    return found;
}

void routes_head_policy(const struct api *a, enum evhttp_cmd_type m, const char *target, struct head_policy *out)
{
    out->max_body = BODY_DEFAULT;
    out->needs_token = 0;
    struct evhttp_uri *u = evhttp_uri_parse_with_flags(target, EVHTTP_URI_NONCONFORMANT); /* as evhttp parses it */
    const char *raw = u ? evhttp_uri_get_path(u) : NULL;
    if (u) {
        int channel = 0;
        const struct route *r = route_of(a, m, raw && *raw ? raw : "/", &channel);
        if (channel)
            out->max_body = BODY_CHANNEL;
        else if (r) {
            if (r->max_body)
                out->max_body = r->max_body;
            out->needs_token = (r->flags & ROUTE_TOKEN) != 0;
        }
        evhttp_uri_free(u);
    }
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
    /* everything, the channel and the web UI too, lives under the prefix (NNI's rule) */
    if (sp == 0 && strip_prefix(a, &segs) < 0) {
        reply_error(r, 404, "Outside prefix \"%s\"", a->exp.url_prefix);
        segments_free(&segs);
        return;
    }
    /* started by NNI's launcher, before its config came (api/launch.c) */
    if (a->awaiting_config) {
        /* the config is a command line to run: a web page must not be able to send one */
        const char *cross = browser_refusal(a, r, m != EVHTTP_REQ_GET);
        if (cross)
            reply_error(r, 403, "%s %.200s refused: %s", method_name(m), raw, cross);
        else
            launch_request(a, r, sp == 0 ? segs.n : 0, segs.seg);
        segments_free(&segs);
        return;
    }
    /* the trial command channel lives outside the REST API (api/channel.c) */
    if (sp == 0 && segs.n == 3 && strcmp(segs.seg[0], "env") == 0) {
        channel_handle(a, r, segs.seg[1], segs.seg[2]);
        segments_free(&segs);
        return;
    }
    /* the tuner's WebSocket channel (api/dispatcher.c); /tuner/:channel is unused, as in NNI */
    if (sp == 0 && segs.n == 1 && strcmp(segs.seg[0], "tuner") == 0) {
        dispatcher_ws_request(a, r);
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
    int denied = found && (found->flags & ROUTE_TOKEN) ? token_check(&q) : 0;
    const char *cross = found ? browser_refusal(a, r, found->flags & ROUTE_TOKEN) : NULL;
    if (found) {
        if (cross) {
            struct evkeyvalq *ih = evhttp_request_get_input_headers(r);
            const char *origin = evhttp_find_header(ih, "Origin"), *host = evhttp_find_header(ih, "Host");
            reply_error(r, 403, "%s %.200s refused: %s (Origin %.100s, Host %.100s); browsers are served under"
                        " http://127.0.0.1:<port> or localhost (behind a proxy: pass it Host 127.0.0.1:<port>, or"
                        " --bind the api beyond loopback, where the token guards changes), and changes are taken"
                        " from this api's own web UI and from clients that send no Origin (nnictl, scripts)",
                        method_name(m), raw, cross, origin ? origin : "none", host ? host : "none");
        } else if ((found->flags & ROUTE_MUTATES) == ROUTE_MUTATES && a->readonly)
            reply_error(r, 400, "experiment %s is in readonly mode!", a->exp_id);
        else if (denied)
            reply_error(r, denied, "%s %.200s: the api listens on %s, so changes need the experiment's token in"
                        " the X-Trialq-Token header (%s)", method_name(m), raw, a->exp.bind_address,
                        denied == 401 ? "none was sent" : "the one sent is wrong");
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
        int under_api = segs.n >= 3 && strcmp(segs.seg[0], "api") == 0 && strcmp(segs.seg[1], "v1") == 0 &&
                        strcmp(segs.seg[2], "nni") == 0;
        reply_error(r, 404, "no route %s %.200s%s%s%s", method_name(m), raw, under_api ? "" : " (the API is under ",
                    under_api ? "" : a->exp.url_prefix ? a->exp.url_prefix : "", under_api ? "" : API_PREFIX ")");
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
