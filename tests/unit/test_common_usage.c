/* common/usage.c: a command line from one table. The argument names come from the
 * usage text, its forms are its lines, the help is printed in one format for nnictl's
 * commands and trialq's roles, and role_getopt hands each option over in order and
 * answers 2 (after the usage) for one that is not the role's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/usage.h"

static const struct option opts[] = {
    {"experiment", required_argument, NULL, 'e'},
    {"home", required_argument, NULL, 'H'},
    {"quiet", no_argument, NULL, 'q'},
    {"debug", optional_argument, NULL, 'd'},
    {"level", optional_argument, NULL, 'L'},
    {"mode", required_argument, NULL, 'm'},
    {"other", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};

static const char usage[] = "demo --experiment ID [--home DIR] [--quiet] --mode a|b\n"
                            "demo --other X [--debug[=true|false]]";

static void test_opt_arg(void **st)
{
    (void)st;
    char buf[64];
    assert_string_equal(usage_opt_arg(usage, &opts[0], buf, sizeof buf), "ID");
    assert_string_equal(usage_opt_arg(usage, &opts[1], buf, sizeof buf), "DIR");
    assert_null(usage_opt_arg(usage, &opts[2], buf, sizeof buf));
    assert_string_equal(usage_opt_arg(usage, &opts[3], buf, sizeof buf), "[=true|false]");
    assert_string_equal(usage_opt_arg(usage, &opts[4], buf, sizeof buf), "[=ARG]");
    /* a name ends at the end of its form's line; one from the second form */
    assert_string_equal(usage_opt_arg(usage, &opts[5], buf, sizeof buf), "a|b");
    assert_string_equal(usage_opt_arg(usage, &opts[6], buf, sizeof buf), "X");
    assert_string_equal(usage_opt_arg("demo --other Y", &opts[6], buf, sizeof buf), "Y");
    assert_string_equal(usage_opt_arg("demo", &opts[6], buf, sizeof buf), "ARG");
    /* --home is DIR even where the usage leaves it out */
    assert_string_equal(usage_opt_arg("demo", &opts[1], buf, sizeof buf), "DIR");
    assert_string_equal(usage_opt_text(usage, &opts[3], buf, sizeof buf), "--debug[=true|false]");
    assert_string_equal(usage_opt_text(usage, &opts[0], buf, sizeof buf), "--experiment ID");
    assert_string_equal(usage_opt_text(usage, &opts[2], buf, sizeof buf), "--quiet");
}

static void test_forms(void **st)
{
    (void)st;
    int len = -1;
    const char *f = usage_form(usage, 0, &len);
    assert_ptr_equal(f, usage);
    assert_int_equal(len, (int)strcspn(usage, "\n"));
    f = usage_form(usage, 1, &len);
    assert_non_null(f);
    assert_int_equal(len, (int)strlen("demo --other X [--debug[=true|false]]"));
    assert_memory_equal(f, "demo --other", strlen("demo --other"));
    assert_null(usage_form(usage, 2, &len));
    assert_null(usage_form("one\n", 1, &len)); /* a trailing newline is no form */
    f = usage_form("", 0, &len);
    assert_non_null(f);
    assert_int_equal(len, 0);
}

static char *printed(const char *use, const char *summary, const struct option *o)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    assert_non_null(f);
    usage_print(f, use, summary, o);
    fclose(f);
    return text;
}

static void test_print(void **st)
{
    (void)st;
    char *text = printed(usage, "Does a demo.", opts);
    assert_string_equal(text, "usage: demo --experiment ID [--home DIR] [--quiet] --mode a|b\n"
                              "   or: demo --other X [--debug[=true|false]]\n"
                              "\nDoes a demo.\n\noptions:\n"
                              "  --experiment ID\n  --home DIR\n  --quiet\n  --debug[=true|false]\n"
                              "  --level[=ARG]\n  --mode a|b\n  --other X\n");
    free(text);
    text = printed("nnictl x", "X.", NULL);
    assert_string_equal(text, "usage: nnictl x\n\nX.\n\noptions:\n");
    free(text);
}

struct seen {
    char got[16];
    int n;
    const char *exp;
};

static int set(void *ctx, int val, char *arg)
{
    struct seen *s = ctx;
    if (val == 'o')
        return -1; /* the role refuses it */
    s->got[s->n++] = (char)val;
    if (val == 'e')
        s->exp = arg;
    return 0;
}

static const struct role demo = {.usage = usage, .summary = "Does a demo.", .shortopts = "e:q", .opts = opts};

static void test_getopt(void **st)
{
    (void)st;
    char a0[] = "demo", a1[] = "--quiet", a2[] = "-e", a3[] = "x1", a4[] = "--debug", a5[] = "--home=/h";
    char *argv[] = {a0, a1, a2, a3, a4, a5, NULL};
    struct seen s = {0};
    assert_int_equal(role_getopt(&demo, 6, argv, set, &s), 0);
    assert_string_equal(s.got, "qedH");
    assert_string_equal(s.exp, "x1");

    /* not the role's, or refused by set: the usage, and 2 */
    char b1[] = "--nope";
    char *bad[] = {a0, b1, NULL};
    struct seen s2 = {0};
    assert_int_equal(role_getopt(&demo, 2, bad, set, &s2), 2);
    char c1[] = "--other", c2[] = "v";
    char *refused[] = {a0, a1, c1, c2, NULL};
    struct seen s3 = {0};
    assert_int_equal(role_getopt(&demo, 4, refused, set, &s3), 2);
    assert_string_equal(s3.got, "q"); /* what came before it was handed over */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_opt_arg),
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_print),
        cmocka_unit_test(test_getopt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
