/* test_cli_platforms.c (linked as nnictl is, with workers/ and config/): the worker registry (workers/platforms.c) and the config's
 * platform table (config/schema_ts.c) are both the one list, common/platform_list.h: each
 * X(id, ...) is found by its name in both, in the list's order, with the list's traits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/platform_list.h"
#include "config/config.h"
#include "workers/worker.h"

static const struct {
    const char *name;
    int on_host, shared_storage;
} list[] = {
#define ROW_(id, on_host, shared_storage, machines) {#id, on_host, shared_storage},
    TRIALQ_PLATFORMS(ROW_)
#undef ROW_
};
#define NLIST (sizeof list / sizeof list[0])

static void test_registry_is_the_list(void **state)
{
    (void)state;
    size_t n = 0;
    while (platform_all[n])
        n++;
    assert_int_equal(n, NLIST);
    for (size_t i = 0; i < NLIST; i++) {
        /* the workers/ file's platform_<id> carries the name <id> */
        assert_string_equal(platform_all[i]->name, list[i].name);
        assert_ptr_equal(platform_find(list[i].name), platform_all[i]);
    }
    assert_null(platform_find("hybrid"));
    assert_null(platform_find("Local"));
    char *names = platform_names_dup(", ");
    assert_string_equal(names, PLATFORM_NAMES);
    free(names);
}

static void test_config_traits_are_the_list(void **state)
{
    (void)state;
    for (size_t i = 0; i < NLIST; i++) {
        assert_int_equal(config_platform_trials_on_host(list[i].name), list[i].on_host);
        assert_int_equal(config_shared_storage(list[i].name), list[i].shared_storage);
    }
    assert_int_equal(config_platform_trials_on_host("nosuch"), 0);
}

static void test_names_string(void **state)
{
    (void)state;
    /* "local, remote, ...": no leading separator, every name once */
    assert_int_equal(strncmp(PLATFORM_NAMES, "local, ", 7), 0);
    for (size_t i = 0; i < NLIST; i++)
        assert_non_null(strstr(PLATFORM_NAMES, list[i].name));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry_is_the_list),
        cmocka_unit_test(test_config_traits_are_the_list),
        cmocka_unit_test(test_names_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
