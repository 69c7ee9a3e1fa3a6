/* test_tuners_mapped.c: the NNI names trialq runs with its own tuners (tuners/mapped.c):
 * TPE_legacy suggests exactly what TPE does with the translated classArgs; its
 * classArgs errors name the key;
 * the registry finds them; ss_raw keeps any JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "tuners/internal.h"
#include "tests/unit/tuner_fixtures.h"

static const char space_text[] = "{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                 " \"y\": {\"_type\": \"choice\", \"_value\": [1, 2, 3]}}";

static cJSON *suggest1(const struct tuner_ops *ops, void *st, int64_t index, const struct hist *h)
{
    struct tuner_history th = {.n = h->n, .items = h->items};
    cJSON *p = NULL;
    struct errbuf e = {{0}};
    int rc = ops->suggest(st, index, &th, &p, &e);
    if (rc != 1)
        fail_msg("%s: suggest(%lld) returned %d: %s", ops->name, (long long)index, rc, e.msg);
    return p;
}

/* mapped and base, created with their own classArgs, suggest the same 40 trials while
 * the history grows with results (some still running) */
static void same_search(const struct tuner_ops *mapped, const char *margs, const struct tuner_ops *base,
                        const char *bargs)
{
    struct ss_space *s = parse_space(space_text);
    void *a = create(mapped, margs, s, 7), *b = create(base, bargs, s, 7);
    struct hist h = {0};
    for (int i = 0; i < 40; i++) {
        cJSON *pa = suggest1(mapped, a, i, &h), *pb = suggest1(base, b, i, &h);
        char *ta = cJSON_PrintUnformatted(pa), *tb = cJSON_PrintUnformatted(pb);
        assert_string_equal(ta, tb);
        free(ta);
        free(tb);
        cJSON_Delete(pb);
        double x = cJSON_GetObjectItemCaseSensitive(pa, "x")->valuedouble;
        int done = i % 5 != 4;
        hist_add(&h, i, pa, done, (x - 0.3) * (x - 0.3), done ? "SUCCEEDED" : "RUNNING");
    }
    hist_free(&h);
    mapped->destroy(a);
    base->destroy(b);
    ss_free(s);
}

static void test_tpe_legacy_is_tpe(void **unused)
{
    (void)unused;
    assert_ptr_equal(tuner_find("tpe_legacy"), &tuner_tpe_legacy);
    /* hyperopt's defaults: minimize, no liar without parallel_optimize */
    same_search(&tuner_tpe_legacy, NULL, &tuner_tpe, "{\"tpe_args\": {\"constant_liar_type\": null}}");
    same_search(&tuner_tpe_legacy, "{\"optimize_mode\": \"maximize\", \"parallel_optimize\": true,"
                " \"constant_liar_type\": \"max\", \"algorithm_name\": \"tpe\"}",
                &tuner_tpe, "{\"optimize_mode\": \"maximize\", \"tpe_args\": {\"constant_liar_type\": \"worst\"}}");
    same_search(&tuner_tpe_legacy, "{\"parallel_optimize\": true, \"seed\": 3}", &tuner_tpe,
                "{\"seed\": 3, \"tpe_args\": {\"constant_liar_type\": \"best\"}}");
}

static void create_fails(const struct tuner_ops *ops, const char *args_text, const char *want)
{
    struct ss_space *s = parse_space(space_text);
    cJSON *args = cJSON_Parse(args_text);
    void *st = NULL;
    struct errbuf e = {{0}};
    if (ops->create(args, s, 1, &st, &e) == 0) {
        ops->destroy(st);
        fail_msg("%s accepted %s", ops->name, args_text);
    }
    if (!strstr(e.msg, want))
        fail_msg("error \"%s\" does not contain \"%s\"", e.msg, want);
    cJSON_Delete(args);
    ss_free(s);
}

static void test_class_args_errors(void **unused)
{
    (void)unused;
    create_fails(&tuner_tpe_legacy, "{\"constant_liar_type\": \"best\"}", "tuner.classArgs.constant_liar_type");
    create_fails(&tuner_tpe_legacy, "{\"algorithm_name\": \"anneal\"}", "tuner.classArgs.algorithm_name");
    create_fails(&tuner_tpe_legacy, "{\"tpe_args\": {}}", "tuner.classArgs.tpe_args: unknown argument for TPE_legacy");
}

static void test_ss_raw(void **unused)
{
    (void)unused;
    cJSON *j = cJSON_Parse("{\"x\": [1, 100]}");
    struct ss_space *s = ss_raw(j);
    assert_int_equal(s->n, 0);
    char *t = cJSON_PrintUnformatted(s->json);
    assert_string_equal(t, "{\"x\":[1,100]}");
    free(t);
    ss_free(s);
    cJSON_Delete(j);
    s = ss_raw(NULL);
    assert_true(cJSON_IsObject(s->json));
    ss_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tpe_legacy_is_tpe),
        cmocka_unit_test(test_class_args_errors),
        cmocka_unit_test(test_ss_raw),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
