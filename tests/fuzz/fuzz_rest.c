/* fuzz_rest.c: the REST request path up to the handler, on any bytes taken as one
 * HTTP request (head + body) sent to the api:
 *   - the front door's head parser (common/http1.c as api/guard.c uses it: request
 *     line, Content-Length, Transfer-Encoding, X-Trialq-Token; tests/fuzz/fuzz_http1.c
 *     fuzzes it alone) and the route's head policy (body limit,
 *     token) that it asks routes.c for, with the route table's matching
 *     (split_path, the --url_prefix, ":name" segments) and the token check, for an api
 *     on loopback without a prefix and for one beyond loopback under a prefix;
 *   - then what dispatch does before a handler runs: the target parsed as evhttp
 *     parses it, the path split and the prefix stripped, the query string parsed and
 *     the integer parameters the handlers read (query_int), the body through body_json
 *     (the strict JSON check, then cJSON) and json_int_in on its numbers.
 * Handlers themselves need a running experiment (the database, the tuner, the event
 * loop) and are driven by the end-to-end tests (tests/e2e/3x); the request here is an
 * evhttp_request without a connection, whose error replies libevent drops (and frees). */
#include "tests/fuzz/fuzz.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>

#include "api/guard.h"
#include "api/routes.h"

#define HEAD_MAX (32 << 10)

static struct api apis[2];

static void setup(void)
{
    apis[0].exp.bind_address = "127.0.0.1";
    apis[0].exp.token = "secret";
    apis[1].exp.bind_address = "0.0.0.0";
    apis[1].exp.url_prefix = "/pre/fix";
    apis[1].exp.token = "secret";
}

/* A request that nothing sends: error replies free it (no connection), so a fresh one
 * is made for each step that may reply. */
static struct req fresh_req(struct api *a, struct evkeyvalq *qs, const char *body, size_t n)
{
    struct req q = {.a = a, .r = evhttp_request_new(NULL, NULL), .path = "/", .query = qs};
    if (n)
        evbuffer_add(evhttp_request_get_input_buffer(q.r), body, n);
    return q;
}

static void numbers_in(const cJSON *j, int depth)
{
    int64_t v;
    for (const cJSON *c = j ? j->child : NULL; c && depth < 4; c = c->next) {
        json_int_in(c, INT64_MIN / 4, INT64_MAX / 4, &v);
        json_int_in(c, 0, 1000, &v);
        numbers_in(c, depth + 1);
    }
}

static void after_head(struct api *a, const struct http1_head *h, const char *target, const char *body, size_t n)
{
    struct evhttp_uri *u = evhttp_uri_parse_with_flags(target, EVHTTP_URI_NONCONFORMANT);
    if (!u)
        return;
    const char *raw = evhttp_uri_get_path(u);
    struct segments segs = {.n = 0};
    if (split_path(raw && *raw ? raw : "/", &segs) == 0)
        strip_prefix(a, &segs);
    segments_free(&segs);
    struct evkeyvalq qs;
    TAILQ_INIT(&qs);
    const char *query = evhttp_uri_get_query(u);
    if (!query || evhttp_parse_query_str(query, &qs) == 0) {
        static const char *const names[] = {"limit", "offset", "since", "n", "buckets"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            struct req q = fresh_req(a, &qs, NULL, 0);
            int64_t v;
            if (query_int(&q, names[i], 0, INT64_MAX / 4, &v) == 0)
                evhttp_request_free(q.r);
        }
    }
    evhttp_clear_headers(&qs);
    evhttp_uri_free(u);
    if (http1_bodied(h->method)) {
        struct req q = fresh_req(a, NULL, body, n);
        cJSON *j = body_json(&q);
        if (j) {
            evhttp_request_free(q.r);
            numbers_in(j, 0);
            cJSON_Delete(j);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (!apis[0].exp.bind_address)
        setup();
    size_t scanned = 0, hl = http1_head_end((const char *)data, size > HEAD_MAX ? HEAD_MAX : size, &scanned);
    if (!hl)
        return 0;
    struct http1_head h;
    const char *bad = NULL;
    if (http1_parse((const char *)data, hl, &h, &bad) != 0 || h.chunked)
        return 0;
    char *target = xstrndup(h.target, h.target_len), *token = h.token ? xstrndup(h.token, h.token_len) : NULL;
    for (int k = 0; k < 2; k++) {
        struct head_policy pol;
        routes_head_policy(&apis[k], guard_evhttp_method(h.method), target, &pol);
        if (pol.max_body <= 0 || pol.max_body > MAX_BODY)
            abort();
        int denied = token_status(&apis[k], token);
        if (denied != 0 && denied != 401 && denied != 403)
            abort();
        size_t body = h.content_length > 0 && (size_t)h.content_length < size - hl ? (size_t)h.content_length
                                                                                   : size - hl;
        after_head(&apis[k], &h, target, (const char *)data + hl, body);
    }
    free(target);
    free(token);
    return 0;
}
