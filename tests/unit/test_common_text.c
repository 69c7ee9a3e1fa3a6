/* utf8_len reads only what it is given; sb_add_snippet/snippet turn untrusted text (a
 * trial's malformed metric, a tuner's output) into one safe line of a log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"

static void test_utf8_len(void **st)
{
    (void)st;
    const unsigned char *euro = (const unsigned char *)"\xe2\x82\xac";
    assert_int_equal(utf8_len((const unsigned char *)"a", 1), 1);
    assert_int_equal(utf8_len((const unsigned char *)"\xc3\xa9", 2), 2);
    assert_int_equal(utf8_len(euro, 3), 3);
    assert_int_equal(utf8_len(euro, 2), 0); /* cut short: not read beyond avail */
    assert_int_equal(utf8_len(euro, 0), 0);
    assert_int_equal(utf8_len((const unsigned char *)"\xf0\x9f\x98\x80", SIZE_MAX), 4);
    assert_int_equal(utf8_len((const unsigned char *)"\xf0\x9f\x98", SIZE_MAX), 0); /* the NUL ends it */
    assert_int_equal(utf8_len((const unsigned char *)"\xc0\x80", 2), 0);            /* overlong */
    assert_int_equal(utf8_len((const unsigned char *)"\xe0\x80\x80", 3), 0);        /* overlong */
    assert_int_equal(utf8_len((const unsigned char *)"\xed\xa0\x80", 3), 0);        /* surrogate */
    assert_int_equal(utf8_len((const unsigned char *)"\xf4\x90\x80\x80", 4), 0);    /* > U+10FFFF */
    assert_int_equal(utf8_len((const unsigned char *)"\x80", 1), 0);
    assert_int_equal(utf8_len((const unsigned char *)"\xff", 1), 0);
}

static void expect_snippet(const char *in, size_t n, size_t max, const char *want)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_add_snippet(&sb, in, n, max);
    assert_non_null(sb.buf);
    if (strcmp(sb.buf, want) != 0)
        fail_msg("snippet of %zu bytes (max %zu): got <%s>, want <%s>", n, max, sb.buf, want);
    sb_free(&sb);
}

static void test_snippet_escapes(void **st)
{
    (void)st;
    expect_snippet("plain text {\"a\": 1}", 19, 200, "plain text {\"a\": 1}");
    /* a record that would forge a log line and colour the terminal */
    const char *evil = "{\"x\":1}\n[2026-01-01 00:00:00] ERROR (api 1) forged\x1b[31mred\x1b[0m\r\t\\";
    expect_snippet(evil, strlen(evil), 200,
                   "{\"x\":1}\\n[2026-01-01 00:00:00] ERROR (api 1) forged\\x1b[31mred\\x1b[0m\\r\\t\\\\");
    expect_snippet("a\0b\x7f\x01", 5, 200, "a\\x00b\\x7f\\x01"); /* a NUL inside the frame is shown */
    expect_snippet("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, 200, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    expect_snippet("a\xff\xc3(b\xed\xa0\x80", 8, 200, "a\\xff\\xc3(b\\xed\\xa0\\x80"); /* not UTF-8 */
    /* C1 controls (U+009B is a CSI to some terminals) and line separators */
    expect_snippet("\xc2\x9b" "31m\xc2\x85|\xe2\x80\xa8|\xe2\x80\xa9", 15, 200, "\\u009b31m\\u0085|\\u2028|\\u2029");
    expect_snippet("", 0, 200, "");
    expect_snippet(NULL, 5, 200, "");
}

static void test_snippet_bounds(void **st)
{
    (void)st;
    /* the framed length ends it: bytes beyond the record are never read */
    expect_snippet("{\"a\":1}NEXT RECORD", 7, 200, "{\"a\":1}");
    char big[300];
    memset(big, 'a', sizeof big);
    char want[300];
    memset(want, 'a', 200);
    strcpy(want + 200, "...");
    expect_snippet(big, sizeof big, 200, want);
    memset(want, 'a', 200);
    want[200] = 0;
    expect_snippet(big, 200, 200, want); /* exactly max: nothing left out, no "..." */
    /* a character the cut would split goes with the rest */
    memcpy(big + 199, "\xc3\xa9", 2);
    memset(want, 'a', 199);
    strcpy(want + 199, "...");
    expect_snippet(big, 201, 200, want);
    /* snippet(): the worst case, every byte escaped, fits SNIPPET_SIZE */
    char ctl[SNIPPET_MAX + 50];
    memset(ctl, 0x1b, sizeof ctl);
    char out[SNIPPET_SIZE];
    assert_ptr_equal(snippet(out, ctl, sizeof ctl), out);
    assert_int_equal(strlen(out), 4 * SNIPPET_MAX + 3);
    assert_string_equal(out + 4 * SNIPPET_MAX, "...");
    assert_null(strchr(out, '\x1b'));
    assert_string_equal(snippet(out, "x\ny", 3), "x\\ny");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_len),
        cmocka_unit_test(test_snippet_escapes),
        cmocka_unit_test(test_snippet_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
