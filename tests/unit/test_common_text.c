/* utf8_len reads only what it is given. */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8_len),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
