/* minijson (common/minijson.c): string literals scanned eight bytes at a time must be
 * read exactly as byte by byte, whatever offset a quote, a backslash or a control byte
 * has; mj_members finds several members in one pass as mj_member finds each (the
 * first of a repeated key, keys written with escapes); mj_string decodes every escape
 * into one buffer. cJSON is the reference for what a string literal holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "common/minijson.h"

/* {"k": LIT} with the literal's bytes; mj_member's answer and, when found, the value. */
static int member_of(const char *lit, size_t n, const char **v, size_t *vl, char *doc, size_t size)
{
    int dn = snprintf(doc, size, "{\"k\": %.*s}", (int)n, lit);
    return mj_member(doc, (size_t)dn, "k", v, vl);
}

/* A special byte (quote, backslash, tab, a raw 0x01, UTF-8) at every offset of literals
 * of every length around the eight-byte steps: valid where cJSON says so, the same text. */
static void test_string_every_offset(void **state)
{
    (void)state;
    static const char *const specials[] = {"\\\"", "\\\\", "\t", "\x01", "\"", "\\u00e9", "\xc3\xa9", "\\n", "\\"};
    char lit[64], doc[128];
    for (size_t s = 0; s < sizeof specials / sizeof specials[0]; s++) {
        for (int len = 0; len <= 24; len++) {
            for (int at = 0; at <= len; at++) {
                int n = snprintf(lit, sizeof lit, "\"%.*s%s%.*s\"", at, "abcdefghijklmnopqrstuvwxyz", specials[s],
                                 len - at, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
                /* cJSON takes raw control bytes in a string, JSON does not */
                const char *rest = NULL;
                cJSON *ref = cJSON_ParseWithLengthOpts(lit, (size_t)n, &rest, 0);
                int ok = cJSON_IsString(ref) && rest == lit + n;
                for (int i = 0; i < n; i++)
                    ok &= (unsigned char)lit[i] >= 0x20;
                size_t dl = 0;
                char *got = mj_string(lit, (size_t)n, &dl);
                const char *v = NULL;
                size_t vl = 0;
                int rc = member_of(lit, (size_t)n, &v, &vl, doc, sizeof doc);
                if (ok) {
                    assert_non_null(got);
                    assert_string_equal(got, ref->valuestring);
                    assert_int_equal(dl, strlen(ref->valuestring));
                    assert_int_equal(rc, 1);
                    assert_int_equal(vl, (size_t)n);
                    assert_memory_equal(v, lit, (size_t)n);
                } else {
                    assert_null(got);
                    assert_int_equal(rc, -1);
                }
                free(got);
                cJSON_Delete(ref);
            }
        }
    }
}

/* A literal cut short anywhere (no closing quote) is refused, never read past its end. */
static void test_string_unterminated(void **state)
{
    (void)state;
    const char *full = "\"0123456789abcdef\\\"0123456789\\u00e9xyz\"";
    size_t n = strlen(full);
    for (size_t cut = 0; cut < n; cut++) {
        char *copy = malloc(cut ? cut : 1); /* exactly cut bytes: ASan sees a read past them */
        memcpy(copy, full, cut);
        size_t dl;
        assert_null(mj_string(copy, cut, &dl));
        free(copy);
    }
}

static void test_members_one_pass(void **state)
{
    (void)state;
    const char *doc = "{\"type\": \"metric\", \"t\\u0079pe\": \"other\", \"metric\": \"{\\\"a\\\": 1}\", \"n\": [1, {\"type\": 2}]}";
    static const char *const keys[] = {"type", "metric", "absent", "n"};
    const char *v[4];
    size_t vl[4];
    assert_int_equal(mj_members(doc, strlen(doc), keys, 4, v, vl), 3);
    assert_int_equal(vl[0], strlen("\"metric\""));
    assert_memory_equal(v[0], "\"metric\"", vl[0]); /* the first "type", not the escaped one after it */
    size_t ml;
    char *m = mj_string(v[1], vl[1], &ml);
    assert_string_equal(m, "{\"a\": 1}");
    free(m);
    assert_null(v[2]);
    assert_int_equal(vl[2], 0);
    assert_memory_equal(v[3], "[1, {\"type\": 2}]", vl[3]);
    /* each key alone: the same answers */
    for (int i = 0; i < 4; i++) {
        const char *one = NULL;
        size_t ol = 0;
        int rc = mj_member(doc, strlen(doc), keys[i], &one, &ol);
        assert_int_equal(rc, v[i] ? 1 : 0);
        if (v[i]) {
            assert_ptr_equal(one, v[i]);
            assert_int_equal(ol, vl[i]);
        }
    }
    /* a key written only with escapes is found */
    const char *esc = "{\"\\u006detric\": 5}";
    assert_int_equal(mj_members(esc, strlen(esc), keys, 4, v, vl), 1);
    assert_memory_equal(v[1], "5", 1);
    /* not one object: -1 */
    const char *bad[] = {"[1]", "{\"type\": \"metric\",}", "{\"type\": \"metric\"} x", "{\"ty\npe\": 1}", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(mj_members(bad[i], strlen(bad[i]), keys, 4, v, vl), -1);
}

/* Escapes decode to at most their own length: surrogate pairs, lone surrogates, \u0000. */
static void test_string_escapes(void **state)
{
    (void)state;
    struct {
        const char *lit, *want;
    } cases[] = {
        {"\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80"},
        {"\"\\ud83d\"", "\xef\xbf\xbd"},
        {"\"\\ude00x\"", "\xef\xbf\xbdx"},
        {"\"\\b\\f\\n\\r\\t\\/\\\\\\\"\"", "\b\f\n\r\t/\\\""},
        {"\"\"", ""},
        {"\"\\u0000\"", NULL},
        {"\"\\x\"", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = strlen(cases[i].lit), dl = 99;
        char *got = mj_string(cases[i].lit, n, &dl);
        if (!cases[i].want) {
            assert_null(got);
            assert_int_equal(dl, 99); /* untouched */
            continue;
        }
        assert_non_null(got);
        assert_string_equal(got, cases[i].want);
        assert_int_equal(dl, strlen(cases[i].want));
        free(got);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_string_every_offset),
        cmocka_unit_test(test_string_unterminated),
        cmocka_unit_test(test_members_one_pass),
        cmocka_unit_test(test_string_escapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
