/* http1 (common/http1.c): the one request-head parser of the api's front door and of
 * the trial channel's servers, as a table of heads: what each is read as, or the status
 * that refuses it and why; where a head ends, however it arrives; and the channel's own
 * rules on top (http1_parse_head). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/http1.h"

struct pcase {
    const char *head; /* a complete head */
    int status;       /* http1_parse's: 0, 400, 505 */
    enum http1_method method;
    const char *target;
    long long content_length;
    int chunked;
    const char *token;
    int expect; /* expect_continue */
    const char *msg_has;
};

static const struct pcase pcases[] = {
    {"GET /api/v1/nni/version HTTP/1.1\r\nHost: x\r\n\r\n", 0, HTTP1_GET, "/api/v1/nni/version", -1, 0, NULL, 0, NULL},
    {"PUT /env/t/A HTTP/1.1\r\nContent-Length: 36\r\nContent-Type: application/json\r\n\r\n", 0, HTTP1_PUT, "/env/t/A",
     36, 0, NULL, 0, NULL},
    {"POST /x HTTP/1.0\nContent-Length:  7 \n\n", 0, HTTP1_POST, "/x", 7, 0, NULL, 0, NULL},
    {"DELETE /t HTTP/1.1\r\nx-trialq-token:  s3cret \r\nX-Trialq-Token: other\r\n\r\n", 0, HTTP1_DELETE, "/t", -1, 0,
     "s3cret", 0, NULL},
    {"HEAD / HTTP/1.1\r\n\r\n", 0, HTTP1_HEAD, "/", -1, 0, NULL, 0, NULL},
    {"OPTIONS * HTTP/1.1\r\n\r\n", 0, HTTP1_OPTIONS, "*", -1, 0, NULL, 0, NULL},
    {"PATCH /p HTTP/1.1\r\n\r\n", 0, HTTP1_PATCH, "/p", -1, 0, NULL, 0, NULL},
    {"TRACE /p HTTP/1.1\r\n\r\n", 0, HTTP1_TRACE, "/p", -1, 0, NULL, 0, NULL},
    {"CONNECT h:1 HTTP/1.1\r\n\r\n", 0, HTTP1_CONNECT, "h:1", -1, 0, NULL, 0, NULL},
    {"BREW /pot HTTP/1.1\r\n\r\n", 0, HTTP1_OTHER, "/pot", -1, 0, NULL, 0, NULL},
    {"get / HTTP/1.1\r\n\r\n", 0, HTTP1_OTHER, "/", -1, 0, NULL, 0, NULL}, /* methods are case-sensitive */
    {"GET http://h/x?a=1 HTTP/1.1\r\n\r\n", 0, HTTP1_GET, "http://h/x?a=1", -1, 0, NULL, 0, NULL},
    {"PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 0, HTTP1_PUT, "/c", -1, 1, NULL, 0, NULL},
    {"PUT /c HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 0, HTTP1_PUT, "/c", 5, 0, NULL, 0, NULL},
    {"PUT /c HTTP/1.1\r\nExpect: 100-continue\r\n\r\n", 0, HTTP1_PUT, "/c", -1, 0, NULL, 1, NULL},
    {"PUT /c HTTP/1.1\r\nExpect: 200-ok\r\n\r\n", 0, HTTP1_PUT, "/c", -1, 0, NULL, -1, NULL},
    /* refused */
    {"PUT /c HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "two different"},
    {"PUT /c HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "Content-Length"},
    {"PUT /c HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "Content-Length"},
    {"PUT /c HTTP/1.1\r\nContent-Length:\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "Content-Length"},
    {"PUT /c HTTP/1.1\r\nContent-Length: 9999999999999999999\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "Content-Length"},
    {"GET / HTTP/1.1\r\n folded: yes\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "folded"},
    {"GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "header line"},
    {"GET / HTTP/1.1\r\n: empty name\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "header line"},
    {"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "bare CR"},
    {"GARBAGE\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "request line"},
    {"GET /\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "request line"},
    {"GET  / HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "target"},
    {"GET /a b HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "version"},
    {"GET /x HTTP/2.0\r\n\r\n", 505, 0, NULL, 0, 0, NULL, 0, "version"},
    {"GET /x HTTP/1.2\r\n\r\n", 505, 0, NULL, 0, 0, NULL, 0, "HTTP/1.0 and HTTP/1.1"},
    {"GET /x FTP/1.1\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "version"},
    {"\r\nGET / HTTP/1.1\r\n\r\n", 400, 0, NULL, 0, 0, NULL, 0, "request line"},
};

static void test_parse_table(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof pcases / sizeof pcases[0]; i++) {
        const struct pcase *k = &pcases[i];
        size_t len = strlen(k->head), scanned = 0;
        print_message("case %zu: %.40s\n", i, k->head);
        assert_int_equal(http1_head_end(k->head, len, &scanned), len);
        struct http1_head h;
        const char *msg = NULL;
        int rc = http1_parse(k->head, len, &h, &msg);
        assert_int_equal(rc, k->status);
        if (rc) {
            assert_non_null(msg);
            assert_non_null(strstr(msg, k->msg_has));
            continue;
        }
        assert_int_equal(h.method, k->method);
        assert_int_equal(h.target_len, strlen(k->target));
        assert_memory_equal(h.target, k->target, h.target_len);
        assert_int_equal(h.content_length, k->content_length);
        assert_int_equal(h.chunked, k->chunked);
        assert_int_equal(h.expect_continue, k->expect);
        assert_int_equal(h.head_len, len);
        if (k->token) {
            assert_non_null(h.token);
            assert_int_equal(h.token_len, strlen(k->token));
            assert_memory_equal(h.token, k->token, h.token_len);
        } else {
            assert_null(h.token);
        }
    }
}

/* NUL bytes are bytes: not in a target, not in a header value */
static void test_nul_bytes(void **st)
{
    (void)st;
    static const char a[] = "GET /a\0b HTTP/1.1\r\n\r\n", b[] = "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n";
    struct http1_head h;
    const char *msg;
    assert_int_equal(http1_parse(a, sizeof a - 1, &h, &msg), 400);
    assert_int_equal(http1_parse(b, sizeof b - 1, &h, &msg), 400);
}

/* Where the head ends: the first empty line, whether it comes at once, a byte at a time,
 * with bare LFs, and not before; what follows (a body, the next request) is not in it. */
static void test_head_end(void **st)
{
    (void)st;
    const char *two = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n\r\n";
    size_t first = strlen("GET /a HTTP/1.1\r\nHost: x\r\n\r\n"), scanned = 0;
    assert_int_equal(http1_head_end(two, strlen(two), &scanned), first);
    for (size_t n = 0; n <= strlen(two); n++) { /* trickled: found exactly when complete */
        size_t sc = 0, got = 0;
        for (size_t k = 0; k <= n && !got; k++)
            got = http1_head_end(two, k, &sc);
        assert_int_equal(got, n >= first ? first : 0);
    }
    scanned = 0;
    assert_int_equal(http1_head_end("GET / HTTP/1.1\n\nrest", 20, &scanned), 16);
    scanned = 0;
    assert_int_equal(http1_head_end("GET / HTTP/1.1\nX: y\r\n\r", 22, &scanned), 0);
    assert_int_equal(scanned, 22);
    /* the head of a pipelined pair parses alone: the next request is not its body */
    struct http1_head h;
    const char *msg;
    assert_int_equal(http1_parse(two, first, &h, &msg), 0);
    assert_int_equal(h.content_length, -1);
    /* a length that is not a head's end: refused, never read past */
    assert_int_equal(http1_parse(two, first - 2, &h, &msg), 400);
    assert_int_equal(http1_parse(two, first + 3, &h, &msg), 400);
    assert_int_equal(http1_parse(two, 5, &h, &msg), 400);
    assert_int_equal(http1_parse(two, 0, &h, &msg), 400);
}

static void test_bodied(void **st)
{
    (void)st;
    assert_true(http1_bodied(HTTP1_POST) && http1_bodied(HTTP1_PUT) && http1_bodied(HTTP1_PATCH));
    enum http1_method none[] = {HTTP1_GET, HTTP1_HEAD, HTTP1_DELETE, HTTP1_OPTIONS, HTTP1_TRACE, HTTP1_CONNECT, HTTP1_OTHER};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        assert_false(http1_bodied(none[i]));
}

/* the trial channel's rules over the parse */
static void test_channel_rules(void **st)
{
    (void)st;
    static const struct {
        const char *in;
        int rc;
        long long cl;
    } k[] = {
        {"PUT /env/t/A HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 1, 2},
        {"GET /env/t/A HTTP/1.1\r\n\r\n", 1, 0},
        {"GET /env/t/A HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 1, 0},
        {"GET /env/t/A HTTP/1.1\r\nContent-Length: 36\r\n\r\n", 400, 0},   /* a body on a GET */
        {"DELETE /env/t/A HTTP/1.1\r\nContent-Length: 1\r\n\r\n", 400, 0},
        {"GET /env/t/A HTTP/1.1", 0, 0},                                     /* not complete */
        {"GET http://x/env/t/A HTTP/1.1\r\n\r\n", 400, 0},
        {"PUT /e HTTP/1.1\r\nContent-Length: 4194305\r\n\r\n", 413, 0},
        {"PUT /e HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501, 0},
        {"PUT /e HTTP/1.1\r\nExpect: 200-ok\r\n\r\n", 417, 0},
        {"GET /e HTTP/3.0\r\n\r\n", 505, 0},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        struct http1_head h;
        const char *msg = NULL;
        size_t scanned = 0;
        print_message("channel case %zu\n", i);
        int rc = http1_parse_head(k[i].in, strlen(k[i].in), &scanned, 8192, 4 << 20, &h, &msg);
        assert_int_equal(rc, k[i].rc);
        if (rc == 1)
            assert_int_equal(h.content_length, k[i].cl);
        else if (rc)
            assert_non_null(msg);
    }
    /* a head over the limit: 431 as soon as more than max_head bytes are in without an end */
    char big[200];
    memset(big, 'a', sizeof big);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    struct http1_head h;
    const char *msg;
    size_t scanned = 0;
    assert_int_equal(http1_parse_head(big, 100, &scanned, 100, 10, &h, &msg), 0);
    scanned = 0;
    assert_int_equal(http1_parse_head(big, 101, &scanned, 100, 10, &h, &msg), 431);
    memcpy(big + 150, "\r\n\r\n", 4);
    scanned = 0;
    assert_int_equal(http1_parse_head(big, 154, &scanned, 100, 10, &h, &msg), 431);
    assert_string_equal(http1_reason(431), "Request Header Fields Too Large");
    assert_string_equal(http1_reason(411), "Length Required");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_table), cmocka_unit_test(test_nul_bytes), cmocka_unit_test(test_head_end),
        cmocka_unit_test(test_bodied),      cmocka_unit_test(test_channel_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
