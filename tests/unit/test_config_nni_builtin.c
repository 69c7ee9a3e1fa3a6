/* test_config_nni_builtin.c: the classArgs checks of NNI's Python-only built-ins
 * (config/nni_builtin.c, NNI's ClassArgsValidator of each class): NNI's documented
 * examples pass; unknown keys, wrong types, out-of-range integers, bad choices and
 * missing required keys fail naming the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "config/config.h"

static int check(const char *name, const char *args_text, char *msg, size_t n)
{
    const struct nni_builtin *b = nni_builtin_find(name);
    assert_non_null(b);
    cJSON *args = args_text ? cJSON_Parse(args_text) : NULL;
    assert_true(!args_text || args);
    struct errbuf e = {{0}};
    int rc = nni_builtin_check_args(b, args, &e);
    snprintf(msg, n, "%s", e.msg);
    cJSON_Delete(args);
    return rc;
}

static void ok(const char *name, const char *args)
{
    char msg[1024];
    if (check(name, args, msg, sizeof msg) != 0)
        fail_msg("%s %s refused: %s", name, args ? args : "(none)", msg);
}

static void bad(const char *name, const char *args, const char *want)
{
    char msg[1024];
    if (check(name, args, msg, sizeof msg) == 0)
        fail_msg("%s %s accepted", name, args);
    if (!strstr(msg, want))
        fail_msg("%s %s: got '%s', want '%s'", name, args, msg, want);
}

static void test_accepted(void **unused)
{
    (void)unused;
    ok("SMAC", "{\"optimize_mode\": \"maximize\", \"config_dedup\": false}");
    ok("smac", "{\"optimize_mode\": \"minimize\"}");
    ok("PPOTuner", "{\"optimize_mode\": \"maximize\", \"trials_per_update\": 20, \"epochs_per_update\": 4,"
                   " \"minibatch_size\": 4, \"ent_coef\": 0.0, \"lr\": 3e-4, \"vf_coef\": 0.5, \"max_grad_norm\": 0.5,"
                   " \"gamma\": 0.99, \"lam\": 0.95, \"cliprange\": 0.2}");
    ok("DNGO", NULL);
    ok("DNGOTuner", "{\"optimize_mode\": \"maximize\", \"sample_size\": 1000, \"trials_per_update\": 20,"
                    " \"num_epochs_per_training\": 500}");
    ok("NetworkMorphism", "{}");
    ok("NetworkMorphism", "{\"optimize_mode\": \"maximize\", \"task\": \"cv\", \"input_width\": 32,"
                          " \"input_channel\": 3, \"n_output_node\": 10}");
    assert_null(nni_builtin_find("PBT")); /* in C now */
}

static void test_refused(void **unused)
{
    (void)unused;
    bad("SMAC", NULL, "tuner.classArgs.optimize_mode: required by SMAC");
    bad("SMAC", "{\"config_dedup\": true}", "tuner.classArgs.optimize_mode: required by SMAC");
    bad("SMAC", "{\"optimize_mode\": \"maximize\", \"seed\": 1}",
        "tuner.classArgs.seed: unknown argument for SMAC (accepted: optimize_mode, config_dedup)");
    bad("SMAC", "{\"optimize_mode\": \"maximize\", \"config_dedup\": 1}", "tuner.classArgs.config_dedup: must be true");
    bad("SMAC", "{\"optimize_mode\": null}", "tuner.classArgs.optimize_mode: must be \"maximize\" or \"minimize\"");
    bad("SMAC", "[1]", "tuner.classArgs: must be a mapping");
    bad("PPO", "{\"optimize_mode\": \"maximize\", \"minibatch_size\": -1}",
        "tuner.classArgs.minibatch_size: must be an integer between 0 and 99999");
    bad("PPO", "{\"optimize_mode\": \"maximize\", \"epochs_per_update\": 2.5}",
        "tuner.classArgs.epochs_per_update: must be an integer");
    bad("PPO", "{\"optimize_mode\": \"maximize\", \"gamma\": \"0.9\"}", "tuner.classArgs.gamma: must be a number");
    bad("PPO", "{\"optimize_mode\": \"maximise\"}", "tuner.classArgs.optimize_mode: must be");
    bad("DNGO", "{\"epochs\": 3}", "tuner.classArgs.epochs: unknown argument for DNGO");
    bad("DNGO", "{\"sample_size\": 0}", "tuner.classArgs.sample_size: must be an integer between 1");
    bad("NetworkMorphism", "{\"task\": \"speech\"}",
        "tuner.classArgs.task: must be \"cv\", \"nlp\" or \"common\" (NetworkMorphism)");
    bad("NetworkMorphism", "{\"n_output_node\": 0}", "tuner.classArgs.n_output_node: must be an integer of at least 1");
    bad("NetworkMorphism", "{\"input_channel\": true}", "tuner.classArgs.input_channel: must be an integer");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
