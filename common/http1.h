/* http1.h: the one HTTP/1.1 request-head parser of trialq that libevent does not own
 * (common/http1.c). The api's front door (api/guard.c) reads every request's head with
 * it before evhttp does; the trial command channel (common/trialchan.c, served by the
 * api's api/chan_http.c and a trial leader's supervise/chanserve.c) reads its requests
 * with it: request line, Content-Length, Transfer-Encoding, Content-Type, Connection,
 * Expect, X-Trialq-Token. No allocation, libc only; the input is untrusted bytes
 * (tests/unit/test_common_http1.c, tests/fuzz/fuzz_http1.c). */
#ifndef TRIALQ_HTTP1_H
#define TRIALQ_HTTP1_H

#include <stddef.h>

enum http1_method {
    HTTP1_GET, HTTP1_PUT, HTTP1_POST, HTTP1_HEAD, HTTP1_DELETE, HTTP1_OPTIONS, HTTP1_PATCH,
    HTTP1_TRACE, HTTP1_CONNECT,
    HTTP1_OTHER, /* a token that names no method above */
};

struct http1_head {
    enum http1_method method;
    const char *target;       /* in the parsed buffer, not NUL-terminated */
    size_t target_len;
    int http10;
    size_t head_len;          /* request line + headers + the empty line */
    long long content_length; /* -1 without the header (http1_parse_head: 0) */
    int chunked;              /* a Transfer-Encoding header, whatever its value */
    const char *token;        /* the first X-Trialq-Token's value; NULL: none */
    size_t token_len;
    int json_body;
    int expect_continue;      /* 1: Expect: 100-continue; -1: another Expect */
    int keep_alive, close;    /* the Connection header's tokens */
};

/* The length of the complete head at the start of in[0..len), through its empty line
 * (CRLF CRLF, or bare LFs as evhttp accepts); 0 when it is not complete yet. *scanned (0
 * at first) keeps how much was already searched, between calls on a growing buffer, so
 * that a head trickling in is searched once. */
size_t http1_head_end(const char *in, size_t len, size_t *scanned);

/* Parses the complete head in[0..head_len) (head_len from http1_head_end). 0: h filled;
 * else the status to answer, 400 (malformed) or 505 (an HTTP version other than 1.0 and
 * 1.1), with *msg saying what is wrong. Any method token, any target without spaces or
 * control bytes (a path, an absolute URI, "*"). */
int http1_parse(const char *in, size_t head_len, struct http1_head *h, const char **msg);

/* Whether a request of method m may carry a body: POST, PUT, PATCH. libevent 2.1.12
 * also reads one after GET, DELETE, OPTIONS and CONNECT (and not after HEAD); trialq's
 * servers refuse a body on every other method, so that no reader takes another's
 * body for the next request. */
int http1_bodied(enum http1_method m);

/* A trial command channel's request: http1_head_end and http1_parse, then the channel's
 * rules. 0: the head is not complete; 1: h filled (content_length 0 without the
 * header); else the HTTP error code to answer with *msg saying why: 400 (malformed, a
 * target that is not a path, a body on a method other than PUT), 413 a Content-Length
 * over max_body, 417 another Expect, 431 a head over max_head, 501 Transfer-Encoding,
 * 505 another HTTP version. */
int http1_parse_head(const char *in, size_t len, size_t *scanned, size_t max_head, long long max_body,
                     struct http1_head *h, const char **msg);
/* True when the comma-separated header value v[0..end) lists tok (any case). */
int http1_token_in(const char *v, const char *end, const char *tok);
/* "OK", "Not Found", ... for a status code. */
const char *http1_reason(int code);

#endif
