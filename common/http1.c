/* http1.c: see http1.h. */
#include "common/http1.h"

#include <string.h>
#include <strings.h>

const char *http1_reason(int code)
{
    switch (code) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return code < 300 ? "OK" : code < 500 ? "Bad Request" : "Server Error";
    }
}

static int tchar(int ch)
{
    return ch > 32 && ch < 127 && !strchr("()<>@,;:\\\"/[]?={}", ch);
}

/* The value of a header line's "name: value", trimmed. */
static void trim(const char **v, const char **end)
{
    while (*v < *end && (**v == ' ' || **v == '\t'))
        (*v)++;
    while (*end > *v && ((*end)[-1] == ' ' || (*end)[-1] == '\t' || (*end)[-1] == '\r'))
        (*end)--;
}

int http1_token_in(const char *v, const char *end, const char *tok)
{
    size_t tl = strlen(tok);
    while (v < end) {
        while (v < end && (*v == ' ' || *v == '\t' || *v == ','))
            v++;
        const char *s = v;
        while (v < end && *v != ',')
            v++;
        const char *e = v;
        trim(&s, &e);
        if ((size_t)(e - s) == tl && strncasecmp(s, tok, tl) == 0)
            return 1;
    }
    return 0;
}

size_t http1_head_end(const char *in, size_t len, size_t *scanned)
{
    /* an empty line: LF LF or LF CR LF, after the request line */
    size_t from = *scanned > 2 ? *scanned - 2 : 0;
    for (size_t i = from; i < len; i++)
        if (in[i] == '\n' && ((i >= 1 && in[i - 1] == '\n') || (i >= 2 && in[i - 1] == '\r' && in[i - 2] == '\n'))) {
            *scanned = 0;
            return i + 1;
        }
    *scanned = len;
    return 0;
}

static const struct {
    const char *name;
    size_t len;
    enum http1_method m;
} methods[] = {
    {"GET", 3, HTTP1_GET},         {"PUT", 3, HTTP1_PUT},         {"POST", 4, HTTP1_POST},
    {"HEAD", 4, HTTP1_HEAD},       {"DELETE", 6, HTTP1_DELETE},   {"OPTIONS", 7, HTTP1_OPTIONS},
    {"PATCH", 5, HTTP1_PATCH},     {"TRACE", 5, HTTP1_TRACE},     {"CONNECT", 7, HTTP1_CONNECT},
};

int http1_bodied(enum http1_method m)
{
    return m == HTTP1_POST || m == HTTP1_PUT || m == HTTP1_PATCH;
}

/* One header line p[0..le) (its CR and LF cut off) into h: 0, or an error status. */
static int header(const char *p, const char *le, struct http1_head *h, const char **msg)
{
    if (*p == ' ' || *p == '\t')
        return *msg = "folded header lines are not accepted", 400;
    const char *colon = p;
    while (colon < le && tchar((unsigned char)*colon))
        colon++;
    if (colon == p || colon >= le || *colon != ':')
        return *msg = "malformed header line", 400;
    size_t nl = (size_t)(colon - p);
    const char *hv = colon + 1, *he = le;
    if (memchr(hv, '\0', (size_t)(he - hv)) || memchr(hv, '\r', (size_t)(he - hv)))
        return *msg = "a NUL or a bare CR in a header value", 400;
    trim(&hv, &he);
    if (nl == 14 && strncasecmp(p, "Content-Length", nl) == 0) {
        long long n = 0;
        if (hv == he || he - hv > 18)
            return *msg = "bad Content-Length", 400;
        for (const char *d = hv; d < he; d++) {
            if (*d < '0' || *d > '9')
                return *msg = "bad Content-Length", 400;
            n = n * 10 + (*d - '0');
        }
        if (h->content_length >= 0 && h->content_length != n)
            return *msg = "two different Content-Length headers", 400;
        h->content_length = n;
    } else if (nl == 17 && strncasecmp(p, "Transfer-Encoding", nl) == 0) {
        h->chunked = 1;
    } else if (nl == 14 && strncasecmp(p, "X-Trialq-Token", nl) == 0) {
        if (!h->token) {
            h->token = hv;
            h->token_len = (size_t)(he - hv);
        }
    } else if (nl == 12 && strncasecmp(p, "Content-Type", nl) == 0) {
        size_t jl = strlen("application/json");
        h->json_body = (size_t)(he - hv) >= jl && strncasecmp(hv, "application/json", jl) == 0 &&
                       (hv + jl == he || hv[jl] == ';' || hv[jl] == ' ');
    } else if (nl == 10 && strncasecmp(p, "Connection", nl) == 0) {
        h->close |= http1_token_in(hv, he, "close");
        h->keep_alive |= http1_token_in(hv, he, "keep-alive");
    } else if (nl == 6 && strncasecmp(p, "Expect", nl) == 0) {
        h->expect_continue = (size_t)(he - hv) == 12 && strncasecmp(hv, "100-continue", 12) == 0 ? 1 : -1;
    }
    return 0;
}

int http1_parse(const char *in, size_t head_len, struct http1_head *h, const char **msg)
{
    memset(h, 0, sizeof *h);
    h->head_len = head_len;
    h->content_length = -1;
    const char *end = in + head_len;

    /* request line: METHOD SP target SP HTTP/1.x */
    const char *p = in, *eol = memchr(p, '\n', head_len);
    if (!eol)
        return *msg = "no end of the request line", 400;
    const char *sp = p;
    while (sp < eol && tchar((unsigned char)*sp))
        sp++;
    if (sp == p || sp >= eol || *sp != ' ')
        return *msg = "malformed request line: not METHOD TARGET HTTP/VERSION", 400;
    size_t ml = (size_t)(sp - p);
    h->method = HTTP1_OTHER;
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (ml == methods[i].len && memcmp(p, methods[i].name, ml) == 0)
            h->method = methods[i].m;
    const char *t = sp + 1, *te = t;
    while (te < eol && (unsigned char)*te > 32 && *te != 127)
        te++;
    if (te == t || te >= eol || *te != ' ')
        return *msg = "malformed request line: no target, or a control byte in it", 400;
    h->target = t;
    h->target_len = (size_t)(te - t);
    const char *v = te + 1, *ve = eol;
    trim(&v, &ve);
    if ((size_t)(ve - v) != 8 || memcmp(v, "HTTP/1.", 7) != 0)
        return *msg = "malformed request line: no HTTP version", (ve - v) >= 5 && memcmp(v, "HTTP/", 5) == 0 ? 505 : 400;
    if (v[7] != '0' && v[7] != '1')
        return *msg = "only HTTP/1.0 and HTTP/1.1", 505;
    h->http10 = v[7] == '0';

    /* headers, up to the empty line that ends the head */
    for (p = eol + 1; p < end; p = eol + 1) {
        eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            break;
        const char *le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
        if (le == p)
            return eol + 1 == end ? 0 : (*msg = "bytes after the empty line that ends the head", 400);
        int rc = header(p, le, h, msg);
        if (rc)
            return rc;
    }
    return *msg = "no empty line at the end of the head", 400;
}

int http1_parse_head(const char *in, size_t len, size_t *scanned, size_t max_head, long long max_body,
                     struct http1_head *h, const char **msg)
{
    size_t head_len = http1_head_end(in, len > max_head + 1 ? max_head + 1 : len, scanned);
    if (!head_len)
        return len > max_head ? (*msg = "request head too large", 431) : 0;
    if (head_len > max_head)
        return *msg = "request head too large", 431;
    int rc = http1_parse(in, head_len, h, msg);
    if (rc)
        return rc;
    if (h->target[0] != '/')
        return *msg = "malformed request line: the target must be a path", 400;
    if (h->chunked)
        return *msg = "Transfer-Encoding is not supported on the trial channel: send Content-Length", 501;
    if (h->expect_continue < 0)
        return *msg = "unsupported Expect", 417;
    if (h->content_length > max_body)
        return *msg = "body over the limit", 413;
    if (h->content_length > 0 && !http1_bodied(h->method))
        return *msg = "a body on a method that has none", 400;
    if (h->content_length < 0)
        h->content_length = 0;
    return 1;
}
