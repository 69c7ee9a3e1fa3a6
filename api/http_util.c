/* http_util.c: what the api's HTTP handlers share, below the route table (routes.c):
 * replies, query and body parsing, paths split into decoded segments, the URL prefix,
 * the token rule, and the experiment as a request sees it. It calls nothing else of
 * the api, so every handler and the front door (guard.c) may use it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "api/http_util.h"
#include "common/chantoken.h"
#include "common/json.h"

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

/* ---------------- paths ---------------- */

size_t next_segment(const char **p)
{
    while (**p == '/')
        (*p)++;
    const char *end = strchr(*p, '/');
    return end ? (size_t)(end - *p) : strlen(*p);
}

int segment_is(const char *seg, const char *p, size_t len)
{
    return strlen(seg) == len && strncmp(seg, p, len) == 0;
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
    for (size_t len; (len = next_segment(&p)) > 0; p += len) {
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
    }
    return 0;
}

/* Removes the experiment's URL prefix (nnictl create --url_prefix) from the front of
 * the segments. Returns 0, or -1 when the path is outside the prefix. */
int strip_prefix(const struct api *a, struct segments *s)
{
    const char *p = a->exp.url_prefix;
    int k = 0;
    for (size_t len; p && (len = next_segment(&p)) > 0; p += len, k++)
        if (k >= s->n || !segment_is(s->seg[k], p, len))
            return -1;
    for (int i = 0; i < k; i++)
        free(s->seg[i]);
    memmove(s->seg, s->seg + k, (size_t)(s->n - k) * sizeof s->seg[0]);
    s->n -= k;
    return 0;
}

/* ---------------- who may change things ---------------- */

int listens_beyond_loopback(const struct api *a)
{
    const char *b = a->exp.bind_address;
    return !(b && (str_starts(b, "127.") || strcmp(b, "::1") == 0 || strcmp(b, "localhost") == 0));
}

/* Mutating routes need the experiment's token when the api listens beyond loopback
 * (design: loopback unless configured otherwise; then changes need the secret). The
 * rule is the listening address, not the peer's: a proxy or another local user on a
 * shared host would otherwise pass as "loopback". 0 ok, else the status to answer. */
int token_status(const struct api *a, const char *sent)
{
    if (!listens_beyond_loopback(a))
        return 0;
    const char *want = a->exp.token;
    if (!sent)
        return 401;
    return secret_equal(sent, strlen(sent), want) ? 0 : 403; /* constant time */
}

/* ---------------- the experiment ---------------- */

int req_experiment(struct req *q, struct experiment *x)
{
    struct errbuf e;
    if (exp_load(q->a->db, q->a->exp_id, x, &e) <= 0) {
        reply_error(q->r, 500, "experiment %s: cannot load it", q->a->exp_id);
        return -1;
    }
    if (q->a->readonly) {
        free(x->status);
        x->status = xstrdup("VIEWED");
    }
    return 0;
}
