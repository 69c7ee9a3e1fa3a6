/* sh_quote / sh_quoted (common/shell.c): the exact words the launch scripts and the
 * dispatcher's command line contain, and a round trip through a real /bin/sh for the
 * awkward inputs (quotes, newlines, $, backslashes, empty). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"

static void test_exact_words(void **st)
{
    (void)st;
    static const char *const cases[][2] = {
        {"", "''"},
        {"python3", "'python3'"},
        {"a b", "'a b'"},
        {"it's", "'it'\\''s'"},
        {"'", "''\\'''"},
        {"python3 -c 'print(\"$HOME\")'", "'python3 -c '\\''print(\"$HOME\")'\\'''"},
        {"a\nb", "'a\nb'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *q = sh_quoted(cases[i][0]);
        assert_string_equal(q, cases[i][1]);
        free(q);
    }
    struct strbuf sb; /* sh_quote appends */
    sb_init(&sb);
    sb_puts(&sb, "export X=");
    sh_quote(&sb, "a'b");
    assert_string_equal(sb.buf, "export X='a'\\''b'");
    sb_free(&sb);
}

/* sh -c "printf %s <word>" prints the word's value exactly */
static void test_shell_round_trip(void **st)
{
    (void)st;
    static const char *const cases[] = {
        "", "plain", "two words", "it's", "''", "'\\''", "\"double\"", "$HOME $(id) `id` ${X:-y}",
        "back\\slash\\", "new\nline\n", "\ttab", "*?[a]~ #;&|<>", "\xc3\xa9t\xc3\xa9", "a'\n'b",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct strbuf cmd;
        sb_init(&cmd);
        sb_puts(&cmd, "printf %s ");
        sh_quote(&cmd, cases[i]);
        char *argv[] = {"/bin/sh", "-c", cmd.buf, NULL};
        char *out = NULL, *err = NULL;
        assert_int_equal(run_capture(argv, 10000, &out, &err), 0);
        assert_string_equal(out ? out : "", cases[i]);
        free(out);
        free(err);
        sb_free(&cmd);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_words),
        cmocka_unit_test(test_shell_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
