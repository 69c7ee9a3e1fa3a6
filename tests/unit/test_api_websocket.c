/* The tuner command channel's wire formats: SHA-1 and base64 against published test
 * vectors (FIPS 180-4 examples, RFC 4648 §10), the handshake key of RFC 6455 §1.3,
 * frames from RFC 6455 §5.7, and NNI's legacy pipe framing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/websocket.h"

static void hex(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void sha1_is(const void *data, size_t n, const char *want)
{
    unsigned char d[20];
    char h[41];
    ws_sha1(data, n, d);
    hex(d, 20, h);
    assert_string_equal(h, want);
}

static void test_sha1_vectors(void **st)
{
    (void)st;
    sha1_is("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    sha1_is("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: 2 tail blocks */
    sha1_is(two, strlen(two), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    char *million = malloc(1000000);
    memset(million, 'a', 1000000);
    sha1_is(million, 1000000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    free(million);
    /* 55 and 64 bytes: the padding edges */
    char buf[64];
    memset(buf, 'a', sizeof buf);
    sha1_is(buf, 55, "c1c8bbdc22796e28c0e15163d20899b65621d65a");
    sha1_is(buf, 64, "0098ba824b5c16427bd7a1122a5a442a25ec644d");
}

static void test_base64(void **st)
{
    (void)st;
    const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    const char *want[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    char out[16];
    for (int i = 0; i < 7; i++) {
        size_t n = b64_encode_to(in[i], strlen(in[i]), out);
        assert_string_equal(out, want[i]);
        assert_int_equal(n, strlen(want[i]));
    }
}

static void test_accept_key(void **st)
{
    (void)st;
    char out[29];
    ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out); /* RFC 6455 §1.3 */
    assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void test_frames_rfc_examples(void **st)
{
    (void)st;
    struct errbuf e;
    struct ws_frame f;
    unsigned char out[8];
    const unsigned char plain[] = {0x81, 0x05, 'H', 'e', 'l', 'l', 'o'};
    assert_int_equal(ws_frame_parse(plain, sizeof plain, 1 << 20, 0, &f, &e), 1);
    assert_int_equal(f.opcode, WS_TEXT);
    assert_int_equal(f.fin, 1);
    assert_int_equal(f.len, 5);
    ws_frame_payload(plain, &f, out);
    assert_memory_equal(out, "Hello", 5);
    /* a server refuses an unmasked client frame */
    assert_int_equal(ws_frame_parse(plain, sizeof plain, 1 << 20, 1, &f, &e), -1);

    const unsigned char masked[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58};
    assert_int_equal(ws_frame_parse(masked, sizeof masked, 1 << 20, 1, &f, &e), 1);
    assert_int_equal(f.header_len, 6);
    ws_frame_payload(masked, &f, out);
    assert_memory_equal(out, "Hello", 5);
    /* every shorter prefix asks for more */
    for (size_t n = 0; n < sizeof masked; n++)
        assert_int_equal(ws_frame_parse(masked, n, 1 << 20, 1, &f, &e), 0);

    /* the encoder gives the RFC's bytes back */
    struct strbuf sb;
    sb_init(&sb);
    const unsigned char key[4] = {0x37, 0xfa, 0x21, 0x3d};
    ws_frame_encode(&sb, WS_TEXT, "Hello", 5, key);
    assert_int_equal(sb.len, sizeof masked);
    assert_memory_equal(sb.buf, masked, sizeof masked);
    sb.len = 0;
    ws_frame_encode(&sb, WS_TEXT, "Hello", 5, NULL);
    assert_memory_equal(sb.buf, plain, sizeof plain);
    sb_free(&sb);

    /* fragments: first not final, continuation final */
    const unsigned char frag1[] = {0x01, 0x03, 'H', 'e', 'l'};
    const unsigned char frag2[] = {0x80, 0x02, 'l', 'o'};
    assert_int_equal(ws_frame_parse(frag1, sizeof frag1, 100, 0, &f, &e), 1);
    assert_int_equal(f.fin, 0);
    assert_int_equal(f.opcode, WS_TEXT);
    assert_int_equal(ws_frame_parse(frag2, sizeof frag2, 100, 0, &f, &e), 1);
    assert_int_equal(f.fin, 1);
    assert_int_equal(f.opcode, WS_CONT);
}

static void test_frame_lengths(void **st)
{
    (void)st;
    struct errbuf e;
    struct ws_frame f;
    size_t sizes[] = {0, 125, 126, 65535, 65536, 300000};
    const unsigned char key[4] = {1, 2, 3, 4};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        char *payload = malloc(n + 1);
        for (size_t k = 0; k < n; k++)
            payload[k] = (char)('a' + k % 26);
        struct strbuf sb;
        sb_init(&sb);
        ws_frame_encode(&sb, WS_BINARY, payload, n, key);
        size_t want_hl = (n < 126 ? 2 : n <= 65535 ? 4 : 10) + 4;
        assert_int_equal(sb.len, want_hl + n);
        assert_int_equal(ws_frame_parse((unsigned char *)sb.buf, sb.len, 1 << 20, 1, &f, &e), 1);
        assert_int_equal(f.header_len, want_hl);
        assert_int_equal(f.len, n);
        unsigned char *out = malloc(n + 1);
        ws_frame_payload((unsigned char *)sb.buf, &f, out);
        assert_memory_equal(out, payload, n);
        if (n)
            assert_int_equal(ws_frame_parse((unsigned char *)sb.buf, sb.len - 1, 1 << 20, 1, &f, &e), 0);
        /* every prefix asks for more and says so in header_len + len, a cut inside an
         * extended length included (the dispatcher once took one for an empty frame) */
        for (size_t cut = 2; cut < sb.len; cut++) {
            memset(&f, 0, sizeof f);
            assert_int_equal(ws_frame_parse((unsigned char *)sb.buf, cut, 1 << 20, 1, &f, &e), 0);
            assert_true(f.header_len > cut || cut - f.header_len < f.len);
        }
        /* over the limit: refused from the header alone */
        if (n > 10)
            assert_int_equal(ws_frame_parse((unsigned char *)sb.buf, want_hl, 10, 1, &f, &e), -1);
        free(out);
        free(payload);
        sb_free(&sb);
    }
}

static void test_frame_errors(void **st)
{
    (void)st;
    struct errbuf e;
    struct ws_frame f;
    const unsigned char rsv[] = {0xC1, 0x00};
    assert_int_equal(ws_frame_parse(rsv, 2, 100, 0, &f, &e), -1);
    assert_non_null(strstr(e.msg, "reserved"));
    const unsigned char op[] = {0x83, 0x00};
    assert_int_equal(ws_frame_parse(op, 2, 100, 0, &f, &e), -1);
    const unsigned char fragping[] = {0x09, 0x00};
    assert_int_equal(ws_frame_parse(fragping, 2, 100, 0, &f, &e), -1);
    const unsigned char longping[] = {0x89, 0x7E, 0x00, 0x80};
    assert_int_equal(ws_frame_parse(longping, 4, 1000, 0, &f, &e), -1);
    const unsigned char top[] = {0x82, 0x7F, 0x80, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(ws_frame_parse(top, sizeof top, UINT64_MAX, 0, &f, &e), -1);
}

static void test_pipe_framing(void **st)
{
    (void)st;
    struct errbuf e;
    struct strbuf sb;
    sb_init(&sb);
    pipe_frame_encode(&sb, "IN", "{\"x\":1}", 7);
    assert_string_equal(sb.buf, "IN00000000000007{\"x\":1}");
    pipe_frame_encode(&sb, "TE", "", 0);
    char type[3];
    size_t off, len;
    assert_int_equal(pipe_frame_parse(sb.buf, sb.len, 100, type, &off, &len, &e), 1);
    assert_string_equal(type, "IN");
    assert_int_equal(off, 16);
    assert_int_equal(len, 7);
    assert_int_equal(pipe_frame_parse(sb.buf + 23, sb.len - 23, 100, type, &off, &len, &e), 1);
    assert_string_equal(type, "TE");
    assert_int_equal(len, 0);
    for (size_t n = 0; n < 23; n++)
        assert_int_equal(pipe_frame_parse(sb.buf, n, 100, type, &off, &len, &e), 0);
    assert_int_equal(pipe_frame_parse("I100000000000007xxxxxxx", 23, 100, type, &off, &len, &e), -1);
    assert_int_equal(pipe_frame_parse("IN0000000000000x", 16, 100, type, &off, &len, &e), -1);
    assert_int_equal(pipe_frame_parse("IN99999999999999", 16, 100, type, &off, &len, &e), -1);
    assert_non_null(strstr(e.msg, "limit"));
    sb_free(&sb);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha1_vectors),   cmocka_unit_test(test_base64),
        cmocka_unit_test(test_accept_key),     cmocka_unit_test(test_frames_rfc_examples),
        cmocka_unit_test(test_frame_lengths),  cmocka_unit_test(test_frame_errors),
        cmocka_unit_test(test_pipe_framing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
