/* test_tuners_gp.c: the GP tuner (tuners/gp.c): registry, classArgs errors, the
 * search spaces it rejects, determinism from (seed, index, history) including a fresh
 * state, the Random tuner's values during the cold start, values in range for every
 * type it supports, running trials ignored, the Cholesky solve, and a search-quality
 * smoke test on branin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/objectives.h"
#include "tuners/internal.h"
#include "tests/unit/tuner_fixtures.h"

/* ---- helpers ---- */

/* create must fail with a message containing `want` */
static void create_fails(const char *class_args, const char *space_text, const char *want)
{
    struct ss_space *s = parse_space(space_text);
    cJSON *args = class_args ? cJSON_Parse(class_args) : NULL;
    assert_true(!class_args || args);
    void *st = NULL;
    struct errbuf e = {{0}};
    int rc = tuner_gp.create(args, s, 1, &st, &e);
    if (rc == 0) {
        tuner_gp.destroy(st);
        fail_msg("create accepted %s", class_args ? class_args : space_text);
    }
    if (!strstr(e.msg, want))
        fail_msg("error \"%s\" does not contain \"%s\"", e.msg, want);
    cJSON_Delete(args);
    ss_free(s);
}

static void assert_same_json(const cJSON *a, const cJSON *b)
{
    char *ta = cJSON_PrintUnformatted(a), *tb = cJSON_PrintUnformatted(b);
    assert_string_equal(ta, tb);
    cJSON_free(ta);
    cJSON_free(tb);
}

static const char branin_space[] =
    "{\"x1\": {\"_type\": \"uniform\", \"_value\": [-5, 10]}, \"x2\": {\"_type\": \"uniform\", \"_value\": [0, 15]}}";
static const char minimize[] = "{\"optimize_mode\": \"minimize\"}";

/* n sequential trials on branin; returns the best value */
static double run_branin(const struct tuner_ops *ops, void *st, struct hist *h, int n)
{
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        cJSON *p = fx_suggest(ops, st, h->n, h);
        double v = branin_params(p);
        best = v < best ? v : best;
        hist_add(h, h->n, p, 1, v, "SUCCEEDED");
    }
    return best;
}

/* ---- tests ---- */

static void test_registry(void **state)
{
    (void)state;
    assert_ptr_equal(tuner_find("GP"), &tuner_gp);
    assert_ptr_equal(tuner_find("gp"), &tuner_gp);
    assert_ptr_equal(tuner_find("GPTuner"), &tuner_gp);
    assert_non_null(strstr(tuner_names(), "GP"));
    assert_int_equal(tuner_gp.needs_history, 1);
}

static void test_classargs(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    void *st = create(&tuner_gp,
                      "{\"optimize_mode\": \"maximize\", \"utility\": \"ucb\", \"kappa\": 2, \"xi\": 0.1, \"nu\": 1.5,"
                      " \"alpha\": 1e-4, \"cold_start_num\": 5, \"selection_num_warm_up\": 500,"
                      " \"selection_num_starting_points\": 3}",
                      s, 0);
    tuner_gp.destroy(st);
    st = create(&tuner_gp, NULL, s, 0);
    tuner_gp.destroy(st);
    st = create(&tuner_gp, "{\"nu\": 0.5, \"utility\": null}", s, 0);
    tuner_gp.destroy(st);
    ss_free(s);

    create_fails("{\"bogus\": 1}", branin_space, "tuner.classArgs.bogus: unknown argument");
    create_fails("{\"utility\": \"pi\"}", branin_space, "tuner.classArgs.utility: must be \"ei\", \"ucb\" or \"poi\"");
    create_fails("{\"utility\": 3}", branin_space, "tuner.classArgs.utility");
    create_fails("{\"optimize_mode\": \"max\"}", branin_space, "tuner.classArgs.optimize_mode");
    create_fails("{\"kappa\": -1}", branin_space, "tuner.classArgs.kappa");
    create_fails("{\"kappa\": \"5\"}", branin_space, "tuner.classArgs.kappa");
    create_fails("{\"xi\": -0.5}", branin_space, "tuner.classArgs.xi");
    create_fails("{\"nu\": 1}", branin_space, "tuner.classArgs.nu: must be 0.5, 1.5 or 2.5");
    create_fails("{\"alpha\": 0}", branin_space, "tuner.classArgs.alpha");
    create_fails("{\"cold_start_num\": 2.5}", branin_space, "tuner.classArgs.cold_start_num");
    create_fails("{\"cold_start_num\": -1}", branin_space, "tuner.classArgs.cold_start_num");
    create_fails("{\"selection_num_warm_up\": 0}", branin_space, "tuner.classArgs.selection_num_warm_up");
    create_fails("{\"selection_num_starting_points\": true}", branin_space,
                 "tuner.classArgs.selection_num_starting_points");
    create_fails("[1]", branin_space, "tuner.classArgs");
}

static void test_rejected_spaces(void **state)
{
    (void)state;
    create_fails(NULL,
                 "{\"a\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                 " \"layer\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"x\"},"
                 " {\"_name\": \"y\", \"k\": {\"_type\": \"randint\", \"_value\": [1, 3]}}]}}",
                 "layer: the GP tuner does not support nested choice");
    create_fails(NULL, "{\"n\": {\"_type\": \"normal\", \"_value\": [0, 1]}}", "n: the GP tuner does not support normal");
    create_fails(NULL, "{\"n\": {\"_type\": \"qlognormal\", \"_value\": [0, 1, 1]}}", "n: the GP tuner");
}

static void test_cholesky(void **state)
{
    (void)state;
    double a[9] = {4, 12, -16, 12, 37, -43, -16, -43, 98};
    const double l[9] = {2, 0, 0, 6, 1, 0, -8, 5, 3};
    assert_int_equal(gp_cholesky(a, 3), 0);
    for (int i = 0; i < 9; i++)
        assert_true(fabs(a[i] - l[i]) < 1e-12);
    /* A x = b with x = (1, -2, 3): b = A x */
    double b[3] = {4 * 1 + 12 * -2 + -16 * 3, 12 * 1 + 37 * -2 + -43 * 3, -16 * 1 + -43 * -2 + 98 * 3};
    gp_cholesky_solve(a, 3, b);
    assert_true(fabs(b[0] - 1) < 1e-9);
    assert_true(fabs(b[1] + 2) < 1e-9);
    assert_true(fabs(b[2] - 3) < 1e-9);
    double not_pd[4] = {1, 2, 2, 1};
    assert_int_equal(gp_cholesky(not_pd, 2), -1);
    double one[1] = {9};
    assert_int_equal(gp_cholesky(one, 1), 0);
    assert_true(one[0] == 3);
}

static void test_cold_start_is_random(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    void *gp = create(&tuner_gp, minimize, s, 7), *rnd = create(&tuner_random, NULL, s, 7);
    struct hist h = {0};
    for (int i = 0; i < 10; i++) {
        cJSON *g = fx_suggest(&tuner_gp, gp, i, &h), *r = fx_suggest(&tuner_random, rnd, i, NULL);
        assert_same_json(g, r);
        cJSON_Delete(r);
        hist_add(&h, h.n, g, 1, branin_params(g), "SUCCEEDED");
    }
    /* the 11th is the model's: not Random's */
    cJSON *g = fx_suggest(&tuner_gp, gp, 10, &h), *r = fx_suggest(&tuner_random, rnd, 10, NULL);
    char *tg = cJSON_PrintUnformatted(g), *tr = cJSON_PrintUnformatted(r);
    assert_string_not_equal(tg, tr);
    cJSON_free(tg);
    cJSON_free(tr);
    cJSON_Delete(g);
    cJSON_Delete(r);
    hist_free(&h);
    tuner_gp.destroy(gp);
    tuner_random.destroy(rnd);
    ss_free(s);
}

static void test_determinism(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    const char *args = "{\"optimize_mode\": \"minimize\", \"cold_start_num\": 4}";
    void *a = create(&tuner_gp, args, s, 3);
    struct hist h = {0};
    run_branin(&tuner_gp, a, &h, 12);
    /* the same call twice, and on a fresh state at index k */
    cJSON *p1 = fx_suggest(&tuner_gp, a, 12, &h), *p2 = fx_suggest(&tuner_gp, a, 12, &h);
    void *b = create(&tuner_gp, args, s, 3);
    cJSON *p3 = fx_suggest(&tuner_gp, b, 12, &h);
    assert_same_json(p1, p2);
    assert_same_json(p1, p3);
    /* another seed: deterministic too (it need not differ: with this history the
     * acquisition's maximum is the corner (10, 0), which every seed finds) */
    void *c = create(&tuner_gp, args, s, 4);
    cJSON *p4 = fx_suggest(&tuner_gp, c, 12, &h), *p5 = fx_suggest(&tuner_gp, c, 12, &h);
    assert_same_json(p4, p5);
    /* running (and failed) trials are ignored */
    hist_add(&h, h.n, cJSON_Parse("{\"x1\": 0, \"x2\": 0}"), 0, 0, "RUNNING");
    hist_add(&h, h.n, cJSON_Parse("{\"x1\": 1, \"x2\": 1}"), 0, 0, "FAILED");
    hist_add(&h, h.n, cJSON_Parse("{\"x1\": \"bad\"}"), 1, 5, "SUCCEEDED");
    cJSON *p6 = fx_suggest(&tuner_gp, b, 12, &h);
    assert_same_json(p1, p6);
    cJSON_Delete(p1);
    cJSON_Delete(p2);
    cJSON_Delete(p3);
    cJSON_Delete(p4);
    cJSON_Delete(p5);
    cJSON_Delete(p6);
    hist_free(&h);
    tuner_gp.destroy(a);
    tuner_gp.destroy(b);
    tuner_gp.destroy(c);
    ss_free(s);
}

static const char mixed_space[] =
    "{\"u\": {\"_type\": \"uniform\", \"_value\": [-2, 3]},"
    " \"lu\": {\"_type\": \"loguniform\", \"_value\": [1e-5, 1e-1]},"
    " \"qu\": {\"_type\": \"quniform\", \"_value\": [0, 10, 2.5]},"
    " \"qlu\": {\"_type\": \"qloguniform\", \"_value\": [1, 1000, 10]},"
    " \"ri\": {\"_type\": \"randint\", \"_value\": [3, 8]},"
    " \"cn\": {\"_type\": \"choice\", \"_value\": [1, 4, 16, 64]},"
    " \"cs\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", \"c\"]}}";

static double mixed_objective(const cJSON *p)
{
    const char *cs = cJSON_GetObjectItemCaseSensitive(p, "cs")->valuestring;
    return pow(num(p, "u") - 1, 2) + pow(log10(num(p, "lu")) + 3, 2) + fabs(num(p, "qu") - 5) +
           fabs(log10(num(p, "qlu")) - 2) + fabs(num(p, "ri") - 6) + fabs(log2(num(p, "cn")) - 4) + (cs[0] - 'a');
}

static void test_values_in_range(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(mixed_space);
    for (int mode = 0; mode < 3; mode++) {
        const char *args = mode == 0   ? "{\"optimize_mode\": \"minimize\", \"cold_start_num\": 3}"
                           : mode == 1 ? "{\"optimize_mode\": \"minimize\", \"cold_start_num\": 3, \"utility\": \"ucb\"}"
                                       : "{\"cold_start_num\": 2, \"utility\": \"poi\", \"nu\": 0.5}";
        void *st = create(&tuner_gp, args, s, (uint64_t)mode);
        struct hist h = {0};
        for (int i = 0; i < 20; i++) {
            cJSON *p = fx_suggest(&tuner_gp, st, i, &h);
            double u = num(p, "u"), lu = num(p, "lu"), qu = num(p, "qu"), qlu = num(p, "qlu"), ri = num(p, "ri");
            double cn = num(p, "cn");
            assert_true(u >= -2 && u <= 3);
            assert_true(lu >= 1e-5 && lu <= 1e-1);
            assert_true(qu >= 0 && qu <= 10 && fmod(qu, 2.5) == 0);
            assert_true(qlu >= 1 && qlu <= 1000);
            assert_true(ri >= 3 && ri < 8 && ri == floor(ri));
            assert_true(cn == 1 || cn == 4 || cn == 16 || cn == 64);
            const cJSON *cs = cJSON_GetObjectItemCaseSensitive(p, "cs");
            assert_true(cJSON_IsString(cs));
            assert_true(strlen(cs->valuestring) == 1 && cs->valuestring[0] >= 'a' && cs->valuestring[0] <= 'c');
            hist_add(&h, h.n, p, 1, mixed_objective(p), "SUCCEEDED");
        }
        hist_free(&h);
        tuner_gp.destroy(st);
    }
    ss_free(s);
}

/* all results equal: the model still suggests (a flat target) */
static void test_flat_results(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    void *st = create(&tuner_gp, "{\"cold_start_num\": 2}", s, 9);
    struct hist h = {0};
    for (int i = 0; i < 6; i++) {
        cJSON *p = fx_suggest(&tuner_gp, st, i, &h);
        assert_true(num(p, "x1") >= -5 && num(p, "x1") <= 10);
        hist_add(&h, h.n, p, 1, 1.0, "SUCCEEDED");
    }
    hist_free(&h);
    tuner_gp.destroy(st);
    ss_free(s);
}

/* GP beats Random's median on branin at budget 40 over 5 seeds */
static void test_quality_branin(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    double gp[5], rnd[5];
    for (int seed = 0; seed < 5; seed++) {
        void *a = create(&tuner_gp, minimize, s, (uint64_t)seed), *b = create(&tuner_random, NULL, s, (uint64_t)seed);
        struct hist ha = {0}, hb = {0};
        gp[seed] = run_branin(&tuner_gp, a, &ha, 40);
        rnd[seed] = run_branin(&tuner_random, b, &hb, 40);
        hist_free(&ha);
        hist_free(&hb);
        tuner_gp.destroy(a);
        tuner_random.destroy(b);
    }
    qsort(gp, 5, sizeof *gp, cmp_double);
    qsort(rnd, 5, sizeof *rnd, cmp_double);
    print_message("branin, budget 40, 5 seeds: GP median %.4g, Random median %.4g\n", gp[2], rnd[2]);
    assert_true(gp[2] < rnd[2]);
    assert_true(gp[2] < 0.6);  /* the minimum is 0.397887 */
    ss_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),       cmocka_unit_test(test_classargs),
        cmocka_unit_test(test_rejected_spaces), cmocka_unit_test(test_cholesky),
        cmocka_unit_test(test_cold_start_is_random), cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_values_in_range), cmocka_unit_test(test_flat_results),
        cmocka_unit_test(test_quality_branin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
