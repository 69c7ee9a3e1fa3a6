/* The platform traits the api reads from the trainingService schema (config/schema_ts.c):
 * trials on this host for the local platform only; any other name, an unknown one, a
 * differently cased one, "hybrid" (a trial no worker took yet) and NULL say no. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/config.h"

static void test_trials_on_host(void **st)
{
    (void)st;
    assert_int_equal(config_platform_trials_on_host("local"), 1);
    const char *no[] = {"remote", "openpai", "kubeflow", "frameworkcontroller", "aml", "dlc", "adl",
                        "hybrid", "Local", "loca", "localx", "", NULL};
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        assert_int_equal(config_platform_trials_on_host(no[i]), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trials_on_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
