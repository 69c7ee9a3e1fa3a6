/* trial-file's name check (api/routes_files.c, trial_file_name_status): relative paths of
 * the trial directory are served; malformed ones get 400; anything under a hidden
 * component (.nni/, which holds the trial channel's credentials, or any name starting
 * with '.') gets 403 however it was encoded: the route argument arrives decoded once,
 * so "%2Enni%2Fchannel" is the argument of a client that encoded it twice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/routes.h"

static void test_served(void **state)
{
    (void)state;
    const char *ok[] = {"trial.stdout", "trial.stderr", "parameter.cfg", "out/m.txt", "a.b/c.d", "x..y", "x.",
                        "out/model.onnx", "100%", "a%zz", "weird name", "dir/x.nni"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        print_message("%s\n", ok[i]);
        assert_int_equal(trial_file_name_status(ok[i]), 0);
    }
}

static void test_malformed(void **state)
{
    (void)state;
    const char *bad[] = {"", "/etc/passwd", "..", ".", "../x", "a/../../b", "a//b", "a/", "./a", "a/./b", "a/.."};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        print_message("%s\n", bad[i]);
        assert_int_equal(trial_file_name_status(bad[i]), 400);
    }
    char longname[1100];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(trial_file_name_status(longname), 400);
}

static void test_hidden(void **state)
{
    (void)state;
    const char *hidden[] = {
        ".nni/channel",                 /* %2Enni%2Fchannel or .nni%2Fchannel, decoded once */
        ".nni/api-channel",             /* the api's channel URL of a cluster trial */
        ".nni",                         /* the directory itself */
        ".hidden",                      /* any hidden file */
        "out/.git/config",              /* a hidden directory below */
        "out/.x",                       /* a hidden file below */
        "%2Enni%2Fchannel",             /* encoded twice */
        "%2enni%2fchannel",             /* lower case */
        "%252Enni%252Fchannel",         /* encoded three times */
        "out%2F%2Enni%2Fchannel",       /* encoded twice, below a directory */
        "%2E%2E%2F%2Enni",              /* ".." encoded twice */
        "a%2F%2F%2Enni",                /* an empty component, encoded twice */
        "%2Fetc%2Fpasswd",              /* absolute, encoded twice */
        "x%00y",                        /* a NUL once decoded again */
        "%25252525252525252Enni",       /* deep */
    };
    for (size_t i = 0; i < sizeof hidden / sizeof *hidden; i++) {
        print_message("%s\n", hidden[i]);
        assert_int_equal(trial_file_name_status(hidden[i]), 403);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_served),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_hidden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
