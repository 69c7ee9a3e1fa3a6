/* base64 (common/base64.c): RFC 4648's vectors, round trips of binary data, and what
 * b64_decode refuses or skips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"

static void test_vectors(void **st)
{
    (void)st;
    const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *want[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (int i = 0; i < 7; i++) {
        char out[B64_ENCODED_SIZE(6)];
        assert_int_equal(b64_encode_to(in[i], strlen(in[i]), out), strlen(want[i]));
        assert_string_equal(out, want[i]);
        char *enc = b64_encode(in[i], strlen(in[i]));
        assert_string_equal(enc, want[i]);
        size_t n = 99;
        char *dec = b64_decode(enc, &n);
        assert_non_null(dec);
        assert_int_equal(n, strlen(in[i]));
        assert_memory_equal(dec, in[i], n);
        assert_int_equal(dec[n], '\0');
        free(enc);
        free(dec);
    }
}

/* every byte value, every length mod 3, with and without NULs */
static void test_binary_round_trip(void **st)
{
    (void)st;
    unsigned char data[256];
    for (int i = 0; i < 256; i++)
        data[i] = (unsigned char)(255 - i); /* NUL last */
    for (size_t len = 0; len <= 256; len++) {
        char *enc = b64_encode(data, len);
        assert_int_equal(strlen(enc), B64_ENCODED_SIZE(len) - 1);
        assert_int_equal(strspn(enc, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="),
                         strlen(enc));
        size_t n;
        char *dec = b64_decode(enc, &n);
        assert_non_null(dec);
        assert_int_equal(n, len);
        assert_memory_equal(dec, data, len);
        free(enc);
        free(dec);
    }
}

static void test_decode_awkward(void **st)
{
    (void)st;
    size_t n;
    char *d = b64_decode("Zm9v\nYmFy\r\n", &n); /* line breaks and spaces, as in PEM or kubeconfig */
    assert_non_null(d);
    assert_int_equal(n, 6);
    assert_string_equal(d, "foobar");
    free(d);
    d = b64_decode(" Zm 9v YmE= ", &n);
    assert_non_null(d);
    assert_string_equal(d, "fooba");
    free(d);
    d = b64_decode("", &n);
    assert_non_null(d);
    assert_int_equal(n, 0);
    free(d);
    assert_null(b64_decode("YW*j", &n));       /* not the alphabet */
    assert_null(b64_decode("Zg==Zg==", &n));   /* data after the padding */
    assert_null(b64_decode("Zm9v-_", &n));     /* the URL alphabet is not this one */
    assert_null(b64_decode("\"Zm9v\"", &n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_binary_round_trip),
        cmocka_unit_test(test_decode_awkward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
