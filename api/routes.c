/* routes.c: the NNI REST API under /api/v1/nni (and /logs/), as a table of routes,
 * and the dispatch of each request to its handler (api/routes_*.c) with the access
 * rules (the token, view mode, browsers of other sites). What the handlers share
 * (replies, query and body parsing) is below, in api/http_util.c: nothing there calls
 * back here. Payload shapes are NNI's (including its double-encoded metric values) so
 * NNI's clients work. No request may crash the process: every input is checked here
 * or in its handler, and answered with a JSON error naming what is wrong. */
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
#include "api/launch.h"
#include "api/prom.h"
#include "api/routes.h"
#include "api/routes_analysis.h"
#include "api/routes_webui.h"
#include "common/chantoken.h"
#include "common/json.h"

#define MAX_HEADERS (32 << 10) /* guard.c's HEAD_MAX: it refuses longer heads first */

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
    {EVHTTP_REQ_GET, "/metrics", 0, h_metrics, 0}, /* Prometheus (api/routes_prom.c): a read like the others */
    /* TensorBoard (api/routes_tensorboard.c): processes, not stored state, so view mode may too */
    {EVHTTP_REQ_POST, API "/tensorboard", ROUTE_TOKEN, h_tensorboard_start, 0},
    {EVHTTP_REQ_GET, API "/tensorboard/:id", 0, h_tensorboard_task, 0},
    {EVHTTP_REQ_PUT, API "/tensorboard/:id", ROUTE_TOKEN, h_tensorboard_task, 0},
    {EVHTTP_REQ_DELETE, API "/tensorboard/:id", ROUTE_TOKEN, h_tensorboard_task, 0},
    {EVHTTP_REQ_GET, API "/tensorboard-tasks", 0, h_tensorboard_tasks, 0},
    {EVHTTP_REQ_DELETE, API "/tensorboard-tasks", ROUTE_TOKEN, h_tensorboard_tasks, 0},
    ANALYSIS_ROUTES, /* the web UI's analysis views (api/routes_analysis.c) */
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

/* Matches a pattern against the segments; fills args. */
static int match(const char *pattern, const struct segments *s, char **args)
{
    int i = 0, nargs = 0;
    const char *p = pattern;
    for (size_t len; (len = next_segment(&p)) > 0; p += len, i++) {
        if (i >= s->n)
            return 0;
        if (*p == ':') {
            if (!*s->seg[i] || nargs >= MAX_ARGS)
                return 0;
            args[nargs++] = s->seg[i];
        } else if (!segment_is(s->seg[i], p, len)) {
            return 0;
        }
    }
    return i == s->n;
}

static int token_check(struct req *q)
{
    return token_status(q->a, evhttp_find_header(evhttp_request_get_input_headers(q->r), "X-Trialq-Token"));
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

/* What is not a REST route: a path that cannot be split or is outside the prefix, the
 * launcher's requests before its config came (api/launch.c), the trial channel
 * (api/channel.c), the tuner's WebSocket (api/dispatcher.c). 1 when answered here. */
static int outside_routes(struct api *a, struct evhttp_request *r, const char *raw, int sp, struct segments *segs)
{
    enum evhttp_cmd_type m = evhttp_request_get_command(r);
    if (sp < 0) {
        reply_error(r, 400, "path %.200s: a segment holds a NUL byte", raw);
        return 1;
    }
    /* everything, the channel and the web UI too, lives under the prefix (NNI's rule) */
    if (sp == 0 && strip_prefix(a, segs) < 0) {
        reply_error(r, 404, "Outside prefix \"%s\"", a->exp.url_prefix);
        return 1;
    }
    /* started by NNI's launcher, before its config came (api/launch.c) */
    if (a->awaiting_config) {
        /* the config is a command line to run: a web page must not be able to send one */
        const char *cross = browser_refusal(a, r, m != EVHTTP_REQ_GET);
        if (cross)
            reply_error(r, 403, "%s %.200s refused: %s", method_name(m), raw, cross);
        else
            launch_request(a, r, sp == 0 ? segs->n : 0, segs->seg);
        return 1;
    }
    /* the trial command channel lives outside the REST API (api/channel.c) */
    if (sp == 0 && segs->n == 3 && strcmp(segs->seg[0], "env") == 0) {
        channel_handle(a, r, segs->seg[1], segs->seg[2]);
        return 1;
    }
    /* the tuner's WebSocket channel (api/dispatcher.c); /tuner/:channel is unused, as in NNI */
    if (sp == 0 && segs->n == 1 && strcmp(segs->seg[0], "tuner") == 0) {
        dispatcher_ws_request(a, r);
        return 1;
    }
    return 0;
}

/* A route found for the request: refused (another site's page, view mode, no token),
 * or handled. */
static void run_route(const struct route *found, struct req *q, enum evhttp_cmd_type m)
{
    struct api *a = q->a;
    struct evhttp_request *r = q->r;
    int denied = found->flags & ROUTE_TOKEN ? token_check(q) : 0;
    const char *cross = browser_refusal(a, r, found->flags & ROUTE_TOKEN);
    if (cross) {
        struct evkeyvalq *ih = evhttp_request_get_input_headers(r);
        const char *origin = evhttp_find_header(ih, "Origin"), *host = evhttp_find_header(ih, "Host");
        reply_error(r, 403, "%s %.200s refused: %s (Origin %.100s, Host %.100s); browsers are served under"
                    " http://127.0.0.1:<port> or localhost (behind a proxy: pass it Host 127.0.0.1:<port>, or"
                    " --bind the api beyond loopback, where the token guards changes), and changes are taken"
                    " from this api's own web UI and from clients that send no Origin (nnictl, scripts)",
                    method_name(m), q->path, cross, origin ? origin : "none", host ? host : "none");
    } else if ((found->flags & ROUTE_MUTATES) == ROUTE_MUTATES && a->readonly)
        reply_error(r, 400, "experiment %s is in readonly mode!", a->exp_id);
    else if (denied)
        reply_error(r, denied, "%s %.200s: the api listens on %s, so changes need the experiment's token in"
                    " the X-Trialq-Token header (%s)", method_name(m), q->path, a->exp.bind_address,
                    denied == 401 ? "none was sent" : "the one sent is wrong");
    else
        found->fn(q);
}

/* No route for the method: the CORS preflight, 405 naming the methods that have one,
 * or 404. */
static void no_route(struct api *a, struct evhttp_request *r, enum evhttp_cmd_type m, const char *raw,
                     const struct segments *segs, const char *allowed)
{
    if (allowed[0] && m == EVHTTP_REQ_OPTIONS) {
        /* CORS preflight, as Express answers it */
        evhttp_add_header(evhttp_request_get_output_headers(r), "Allow", allowed);
        reply_json(r, 200, "");
    } else if (allowed[0]) {
        evhttp_add_header(evhttp_request_get_output_headers(r), "Allow", allowed);
        reply_error(r, 405, "method %s not allowed on %.200s (allowed: %s)", method_name(m), raw, allowed);
    } else {
        int under_api = segs->n >= 3 && strcmp(segs->seg[0], "api") == 0 && strcmp(segs->seg[1], "v1") == 0 &&
                        strcmp(segs->seg[2], "nni") == 0;
        reply_error(r, 404, "no route %s %.200s%s%s%s", method_name(m), raw, under_api ? "" : " (the API is under ",
                    under_api ? "" : a->exp.url_prefix ? a->exp.url_prefix : "", under_api ? "" : API_PREFIX ")");
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
    if (outside_routes(a, r, raw, sp, &segs)) {
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
        prom_request_begin(r); /* its latency, for GET /metrics */
        run_route(found, &q, m);
    }
    else
        no_route(a, r, m, raw, &segs, allowed);
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
