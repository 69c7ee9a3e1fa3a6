/* test_config_traits.c: the platform traits the api and schema/ read from the
 * trainingService schema (config/schema_ts.c) instead of naming platforms: trials on this
 * host for the local platform only (any other name, an unknown one, a differently cased
 * one, "hybrid" (a trial no worker took yet) and NULL say no); the machines of an entry
 * (local: this host; remote: each machineList entry, port 22 by default; each entry of a
 * hybrid list; none for a cluster); the platforms whose trials live on a storage of
 * their own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void collect(void *ctx, const char *platform, const char *host, int port, const char *user)
{
    struct strbuf *sb = ctx;
    sb_printf(sb, "%s|%s|%d|%s;", platform, host ? host : "-", port, user ? user : "-");
}

static char *machines(const char *config_json, int *n)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "");
    *n = config_ts_machines(config_json, collect, &sb);
    return sb_detach(&sb);
}

static void test_machines(void **state)
{
    int n;
    char *s = machines("{\"trainingService\": {\"platform\": \"local\"}}", &n);
    assert_int_equal(n, 1);
    assert_string_equal(s, "local|-|0|-;");
    free(s);
    s = machines("{\"trainingService\": [{\"platform\": \"local\"}, {\"platform\": \"remote\", \"machineList\":"
                 " [{\"host\": \"a\", \"user\": \"u\"}, {\"host\": \"b\", \"port\": 2222}, {\"port\": 1}]},"
                 " {\"platform\": \"kubeflow\"}]}", &n);
    assert_int_equal(n, 3); /* a machine without a host is none; kubeflow runs on no machine of ours */
    assert_string_equal(s, "local|-|0|-;remote|a|22|u;remote|b|2222|-;");
    free(s);
    s = machines("not json", &n);
    assert_int_equal(n, -1);
    free(s);
    s = machines("{}", &n);
    assert_int_equal(n, 0);
    free(s);
}

static void test_shared_storage(void **state)
{
    assert_true(config_shared_storage("kubeflow"));
    assert_true(config_shared_storage("frameworkcontroller"));
    assert_true(config_shared_storage("adl"));
    assert_true(config_shared_storage("openpai"));
    assert_false(config_shared_storage("local"));
    assert_false(config_shared_storage("remote"));
    assert_false(config_shared_storage(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trials_on_host),
        cmocka_unit_test(test_machines),
        cmocka_unit_test(test_shared_storage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
