/* common/chantoken.c: secret_equal, the one comparison of every token (the experiment's
 * X-Trialq-Token, a trial channel's path and token), and chan_token_ok built on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/chantoken.h"

static void test_secret_equal(void **state)
{
    (void)state;
    const char *want = "0123456789abcdef0123456789abcdef";
    assert_int_equal(secret_equal(want, strlen(want), want), 1);
    assert_int_equal(secret_equal("0123456789abcdef0123456789abcdee", 32, want), 0); /* last byte */
    assert_int_equal(secret_equal("1123456789abcdef0123456789abcdef", 32, want), 0); /* first byte */
    assert_int_equal(secret_equal(want, 31, want), 0);                                /* a prefix */
    assert_int_equal(secret_equal("0123456789abcdef0123456789abcdef0", 33, want), 0); /* longer */
    assert_int_equal(secret_equal("", 0, want), 0);
    assert_int_equal(secret_equal(NULL, 0, want), 0);
    assert_int_equal(secret_equal("x", 1, NULL), 0);
    /* a path that is not NUL-terminated where it ends: only sent_len bytes count */
    const char *target = "/env/abc/T1?x=1";
    assert_int_equal(secret_equal(target, 9, "/env/abc/T1"), 0);
    assert_int_equal(secret_equal(target, 11, "/env/abc/T1"), 1);
}

static void test_chan_token_ok(void **state)
{
    (void)state;
    const char *exp = "00112233445566778899aabbccddeeff";
    char tok[CHAN_TOKEN_LEN + 1], other[CHAN_TOKEN_LEN + 1];
    chan_token(exp, "Trial1", tok);
    chan_token(exp, "Trial2", other);
    assert_int_equal(strlen(tok), CHAN_TOKEN_LEN);
    assert_int_equal(chan_token_ok(exp, "Trial1", tok), 1);
    assert_int_equal(chan_token_ok(exp, "Trial1", other), 0);
    assert_int_equal(chan_token_ok(exp, "Trial1", NULL), 0);
    tok[CHAN_TOKEN_LEN - 1] ^= 1;
    assert_int_equal(chan_token_ok(exp, "Trial1", tok), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_equal),
        cmocka_unit_test(test_chan_token_ok),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
