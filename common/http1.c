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
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 410: return "Gone";
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

int http1_parse_head(const char *in, size_t len, size_t *scanned, size_t max_head, long long max_body,
                     struct http1_head *h, const char **msg)
{
    /* the end of the head: an empty line (CRLF CRLF, or bare LFs as evhttp accepts) */
    const char *eoh = NULL;
    size_t from = *scanned > 3 ? *scanned - 3 : 0;
    for (size_t i = from; i < len; i++)
        if (in[i] == '\n' && ((i >= 1 && in[i - 1] == '\n') || (i >= 2 && in[i - 1] == '\r' && in[i - 2] == '\n'))) {
            eoh = in + i + 1;
            break;
        }
    if (!eoh) {
        *scanned = len;
        if (len > max_head)
            return *msg = "request head too large", 431;
        return 0;
    }
    *scanned = 0;
    memset(h, 0, sizeof *h);
    h->head_len = (size_t)(eoh - in);
    if (h->head_len > max_head)
        return *msg = "request head too large", 431;
    h->content_length = -1;

    /* request line: METHOD SP target SP HTTP/1.x */
    const char *p = in, *eol = memchr(p, '\n', (size_t)(eoh - p));
    const char *sp = p;
    while (sp < eol && tchar((unsigned char)*sp))
        sp++;
    if (sp == p || sp >= eol || *sp != ' ')
        return *msg = "malformed request line", 400;
    size_t ml = (size_t)(sp - p);
    h->method = ml == 3 && memcmp(p, "GET", 3) == 0 ? HTTP1_GET : ml == 3 && memcmp(p, "PUT", 3) == 0 ? HTTP1_PUT
                                                                                                       : HTTP1_OTHER;
    const char *t = sp + 1, *te = t;
    while (te < eol && *te != ' ')
        te++;
    if (te == t || te >= eol || *t != '/')
        return *msg = "malformed request line: the target must be a path", 400;
    h->target = t;
    h->target_len = (size_t)(te - t);
    const char *v = te + 1, *ve = eol;
    trim(&v, &ve);
    if ((size_t)(ve - v) != 8 || memcmp(v, "HTTP/1.", 7) != 0)
        return *msg = "malformed request line: no HTTP version", (ve - v) >= 5 && memcmp(v, "HTTP/", 5) == 0 ? 505 : 400;
    if (v[7] != '0' && v[7] != '1')
        return *msg = "only HTTP/1.0 and HTTP/1.1", 505;
    h->http10 = v[7] == '0';

    /* headers */
    for (p = eol + 1; p < eoh; p = eol + 1) {
        eol = memchr(p, '\n', (size_t)(eoh - p));
        const char *le = eol;
        if (le > p && le[-1] == '\r')
            le--;
        if (le == p)
            break; /* the empty line */
        if (*p == ' ' || *p == '\t')
            return *msg = "folded header lines are not accepted", 400;
        const char *colon = p;
        while (colon < le && tchar((unsigned char)*colon))
            colon++;
        if (colon == p || colon >= le || *colon != ':')
            return *msg = "malformed header line", 400;
        size_t nl = (size_t)(colon - p);
        const char *hv = colon + 1, *he = le;
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
            if (n > max_body)
                return *msg = "body over the limit", 413;
            h->content_length = n;
        } else if (nl == 17 && strncasecmp(p, "Transfer-Encoding", nl) == 0) {
            return *msg = "Transfer-Encoding is not supported on the trial channel: send Content-Length", 501;
        } else if (nl == 12 && strncasecmp(p, "Content-Type", nl) == 0) {
            size_t jl = strlen("application/json");
            h->json_body = (size_t)(he - hv) >= jl && strncasecmp(hv, "application/json", jl) == 0 &&
                           (hv + jl == he || hv[jl] == ';' || hv[jl] == ' ');
        } else if (nl == 10 && strncasecmp(p, "Connection", nl) == 0) {
            h->close |= http1_token_in(hv, he, "close");
            h->keep_alive |= http1_token_in(hv, he, "keep-alive");
        } else if (nl == 6 && strncasecmp(p, "Expect", nl) == 0) {
            if ((size_t)(he - hv) != 12 || strncasecmp(hv, "100-continue", 12) != 0)
                return *msg = "unsupported Expect", 417;
            h->expect_continue = 1;
        }
    }
    if (h->content_length < 0)
        h->content_length = 0;
    return 1;
}
