/* common/sys.c: is_experiment_id / is_trial_id accept exactly what gen_experiment_id /
 * gen_trial_id make, and nothing that could lead out of a directory or a shell word
 * (experiment load checks a pack's ids with them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "common/common.h"

static void generated_ids_pass(void **state)
{
    (void)state;
    for (int i = 0; i < 2000; i++) {
        char x[9], t[6];
        gen_experiment_id(x);
        gen_trial_id(t);
        assert_true(is_experiment_id(x));
        assert_true(is_trial_id(t));
    }
}

static void experiment_ids(void **state)
{
    (void)state;
    assert_true(is_experiment_id("a1b2c3d4"));
    assert_true(is_experiment_id("aaaaaaaa")); /* repetition: older or hand-made ids */
    static const char *const bad[] = {
        "", "a1b2c3d", "a1b2c3d4e", "A1B2C3D4", "a1b2c3d/", "../../..", "/../../../../tmp/x/escaped",
        "a1b2 3d4", "a1b2c3d\n", "a1b2'3d4", "a1b2$(x)", "a1b2c3d.", "a1b2_3d4", "\xc3\xa9" "a1b2c3d",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(is_experiment_id(bad[i]));
}

static void trial_ids(void **state)
{
    (void)state;
    assert_true(is_trial_id("aB3dE"));
    assert_true(is_trial_id("Zzzzz"));
    static const char *const bad[] = {
        "", "aB3d", "aB3dEf", "1abcd", "ab/cd", "..abc", "ab cd", "ab'cd", "abcd\n", "ab-cd", "ab_cd", "ab.cd",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_false(is_trial_id(bad[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(generated_ids_pass),
        cmocka_unit_test(experiment_ids),
        cmocka_unit_test(trial_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
