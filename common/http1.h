/* http1.h: the part of HTTP/1.1 a trial command channel server needs: a request head
 * (Content-Length bodies, keep-alive, Expect: 100-continue), and the reason phrases.
 * Used by the api's channel connections (api/chan_http.c) and by a trial leader's
 * channel (supervise/chanserve.c); no allocation, libc only. */
#ifndef TRIALQ_HTTP1_H
#define TRIALQ_HTTP1_H

#include <stddef.h>

enum http1_method { HTTP1_GET, HTTP1_PUT, HTTP1_OTHER };

struct http1_head {
    enum http1_method method;
    const char *target;  /* in the parsed buffer, not NUL-terminated */
    size_t target_len;
    int http10;
    size_t head_len;     /* request line + headers + the empty line */
    long long content_length; /* 0 without the header */
    int json_body, expect_continue, keep_alive, close;
};

/* Parses the request head at the start of in[0..len). *scanned (0 at first) keeps how
 * much was already searched for the end of the head, between calls on a growing buffer.
 * 0: the head is not complete; 1: h filled; else the HTTP error code to answer (400
 * malformed, 413 a Content-Length over max_body, 417 another Expect, 431 a head over
 * max_head, 501 Transfer-Encoding, 505 another HTTP version) with *msg saying why. */
int http1_parse_head(const char *in, size_t len, size_t *scanned, size_t max_head, long long max_body,
                     struct http1_head *h, const char **msg);
/* True when the comma-separated header value v[0..end) lists tok (any case). */
int http1_token_in(const char *v, const char *end, const char *tok);
/* "OK", "Not Found", ... for a status code. */
const char *http1_reason(int code);

#endif
