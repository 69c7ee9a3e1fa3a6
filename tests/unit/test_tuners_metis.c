/* test_tuners_metis.c: the Metis tuner (tuners/metis.c): registry under NNI's names,
 * classArgs errors, the search spaces it refuses (located), the Random tuner's values
 * during the cold start, determinism from (seed, index, history) including a fresh
 * state and a history read back from JSON, values inside the space for every type it
 * supports (with re-sampling on), and search quality against Random on branin and
 * hartmann6. */
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

/* create must fail with a message containing `want` */
static void create_fails(const char *class_args, const char *space_text, const char *want)
{
    struct ss_space *s = parse_space(space_text);
    cJSON *args = class_args ? cJSON_Parse(class_args) : NULL;
    assert_true(!class_args || args);
    void *st = NULL;
    struct errbuf e = {{0}};
    if (tuner_metis.create(args, s, 1, &st, &e) == 0) {
        tuner_metis.destroy(st);
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

static double eval_obj(const struct objective *obj, const cJSON *p)
{
    double x[6];
    for (int i = 0; i < obj->dim; i++) {
        char key[16];
        snprintf(key, sizeof key, "x%d", i + 1);
        x[i] = num(p, key);
    }
    return obj->f(x);
}

/* n sequential trials; returns the best value */
static double run(const struct tuner_ops *ops, void *st, const struct objective *obj, struct hist *h, int n)
{
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        cJSON *p = fx_suggest(ops, st, h->n, h);
        double v = eval_obj(obj, p);
        best = v < best ? v : best;
        hist_add(h, h->n, p, 1, v, "SUCCEEDED");
    }
    return best;
}

static void test_registry(void **state)
{
    (void)state;
    assert_ptr_equal(tuner_find("Metis"), &tuner_metis);
    assert_ptr_equal(tuner_find("metis"), &tuner_metis);
    assert_ptr_equal(tuner_find("MetisTuner"), &tuner_metis);
    assert_non_null(strstr(tuner_names(), "Metis"));
    assert_int_equal(tuner_metis.needs_history, 1);
    assert_int_equal(tuner_metis.advisor, 0);
}

static void test_classargs(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    void *st = create(&tuner_metis,
                      "{\"optimize_mode\": \"maximize\", \"no_resampling\": true, \"no_candidates\": false,"
                      " \"selection_num_starting_points\": 600, \"cold_start_num\": 10,"
                      " \"exploration_probability\": 0.9, \"seed\": 4}",
                      s, 0);
    tuner_metis.destroy(st);
    st = create(&tuner_metis, NULL, s, 0);
    tuner_metis.destroy(st);
    st = create(&tuner_metis, "{\"optimize_mode\": \"minimize\", \"cold_start_num\": 0, \"exploration_probability\": 0}",
                s, 0);
    tuner_metis.destroy(st);
    ss_free(s);

    create_fails("{\"bogus\": 1}", branin_space, "tuner.classArgs.bogus: unknown argument");
    create_fails("{\"optimize_mode\": \"max\"}", branin_space, "tuner.classArgs.optimize_mode");
    create_fails("{\"no_resampling\": 1}", branin_space, "tuner.classArgs.no_resampling");
    create_fails("{\"no_candidates\": \"false\"}", branin_space, "tuner.classArgs.no_candidates");
    create_fails("{\"selection_num_starting_points\": 0}", branin_space,
                 "tuner.classArgs.selection_num_starting_points");
    create_fails("{\"cold_start_num\": 2.5}", branin_space, "tuner.classArgs.cold_start_num");
    create_fails("{\"cold_start_num\": -1}", branin_space, "tuner.classArgs.cold_start_num");
    create_fails("{\"exploration_probability\": 1.5}", branin_space, "tuner.classArgs.exploration_probability");
    create_fails("{\"exploration_probability\": -0.1}", branin_space, "tuner.classArgs.exploration_probability");
    create_fails("{\"seed\": -3}", branin_space, "seed");
    create_fails("[1]", branin_space, "tuner.classArgs");
}

static void test_refused_spaces(void **state)
{
    (void)state;
    create_fails(NULL,
                 "{\"a\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                 " \"layer\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"x\"},"
                 " {\"_name\": \"y\", \"k\": {\"_type\": \"randint\", \"_value\": [1, 3]}}]}}",
                 "layer: the Metis tuner does not support nested choice");
    create_fails(NULL, "{\"n\": {\"_type\": \"normal\", \"_value\": [0, 1]}}",
                 "n: the Metis tuner does not support normal");
    create_fails(NULL, "{\"a\": {\"_type\": \"uniform\", \"_value\": [0, 1]}, \"n\": {\"_type\": \"qlognormal\", \"_value\": [0, 1, 1]}}",
                 "n: the Metis tuner does not support qlognormal");
    create_fails(NULL, "{\"act\": {\"_type\": \"choice\", \"_value\": [1, \"relu\"]}}",
                 "act: the Metis tuner supports only choices of numbers (option 1 is not one)");
}

static void test_cold_start_is_random(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    void *m = create(&tuner_metis, minimize, s, 7), *rnd = create(&tuner_random, NULL, s, 7);
    struct hist h = {0};
    for (int i = 0; i < 10; i++) {
        cJSON *g = fx_suggest(&tuner_metis, m, i, &h), *r = fx_suggest(&tuner_random, rnd, i, NULL);
        assert_same_json(g, r);
        cJSON_Delete(r);
        hist_add(&h, h.n, g, 1, branin_params(g), "SUCCEEDED");
    }
    cJSON *g = fx_suggest(&tuner_metis, m, 10, &h), *r = fx_suggest(&tuner_random, rnd, 10, NULL);
    char *tg = cJSON_PrintUnformatted(g), *tr = cJSON_PrintUnformatted(r);
    assert_string_not_equal(tg, tr);
    cJSON_free(tg);
    cJSON_free(tr);
    cJSON_Delete(g);
    cJSON_Delete(r);
    hist_free(&h);
    tuner_metis.destroy(m);
    tuner_random.destroy(rnd);
    ss_free(s);
}

/* the api rebuilds the history from the database: parameters read back from JSON text */
static void copy_history(const struct hist *from, struct hist *to)
{
    for (int i = 0; i < from->n; i++) {
        char *text = cJSON_PrintUnformatted(from->items[i].parameters);
        const struct tuner_result *it = &from->items[i];
        hist_add(to, it->parameter_id, cJSON_Parse(text), it->has_value, it->value, it->status);
        cJSON_free(text);
    }
}

static void test_determinism(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    const char *args = "{\"optimize_mode\": \"minimize\", \"cold_start_num\": 4, \"no_resampling\": false}";
    void *a = create(&tuner_metis, args, s, 3);
    struct hist h = {0};
    run(&tuner_metis, a, &objectives[0], &h, 16);
    /* the same call twice, on a fresh state, and with the history read back */
    void *b = create(&tuner_metis, args, s, 3);
    struct hist h2 = {0};
    copy_history(&h, &h2);
    cJSON *p1 = fx_suggest(&tuner_metis, a, 16, &h), *p2 = fx_suggest(&tuner_metis, a, 16, &h);
    cJSON *p3 = fx_suggest(&tuner_metis, b, 16, &h2);
    assert_same_json(p1, p2);
    assert_same_json(p1, p3);
    /* a fresh run with the same seed makes the same 16 suggestions (a resumed experiment) */
    void *c = create(&tuner_metis, args, s, 3);
    struct hist h3 = {0};
    run(&tuner_metis, c, &objectives[0], &h3, 16);
    for (int i = 0; i < 16; i++)
        assert_same_json(h.items[i].parameters, h3.items[i].parameters);
    /* failed trials and parameters outside the space do not reach the model */
    hist_add(&h2, h2.n, cJSON_Parse("{\"x1\": 1, \"x2\": 1}"), 0, 0, "FAILED");
    hist_add(&h2, h2.n, cJSON_Parse("{\"x1\": \"bad\"}"), 1, 5, "SUCCEEDED");
    cJSON *p4 = fx_suggest(&tuner_metis, b, 16, &h2);
    assert_same_json(p1, p4);
    cJSON_Delete(p1);
    cJSON_Delete(p2);
    cJSON_Delete(p3);
    cJSON_Delete(p4);
    hist_free(&h);
    hist_free(&h2);
    hist_free(&h3);
    tuner_metis.destroy(a);
    tuner_metis.destroy(b);
    tuner_metis.destroy(c);
    ss_free(s);
}

static const char mixed_space[] =
    "{\"u\": {\"_type\": \"uniform\", \"_value\": [-2, 3]},"
    " \"lu\": {\"_type\": \"loguniform\", \"_value\": [1e-5, 1e-1]},"
    " \"qu\": {\"_type\": \"quniform\", \"_value\": [0, 10, 2.5]},"
    " \"qlu\": {\"_type\": \"qloguniform\", \"_value\": [1, 1000, 10]},"
    " \"ri\": {\"_type\": \"randint\", \"_value\": [3, 8]},"
    " \"cn\": {\"_type\": \"choice\", \"_value\": [1, 4, 16, 64]}}";

static double mixed_objective(const cJSON *p, int i)
{
    /* noisy every 7th trial, so that re-sampling has outliers to find */
    return pow(num(p, "u") - 1, 2) + pow(log10(num(p, "lu")) + 3, 2) + fabs(num(p, "qu") - 5) +
           fabs(log10(num(p, "qlu")) - 2) + fabs(num(p, "ri") - 6) + fabs(log2(num(p, "cn")) - 4) +
           (i % 7 == 3 ? 40 : 0);
}

/* no suggestion outside the space, in every mode, with re-sampling on past its threshold */
static void test_values_in_range(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(mixed_space);
    for (int mode = 0; mode < 3; mode++) {
        const char *args = mode == 0   ? "{\"optimize_mode\": \"minimize\", \"cold_start_num\": 3, \"no_resampling\": false,"
                                         " \"selection_num_starting_points\": 100}"
                           : mode == 1 ? "{\"optimize_mode\": \"minimize\", \"cold_start_num\": 3, \"no_candidates\": true}"
                                       : "{\"cold_start_num\": 2, \"exploration_probability\": 0.2}";
        void *st = create(&tuner_metis, args, s, (uint64_t)mode);
        struct hist h = {0};
        int n = mode == 0 ? 60 : 20;
        for (int i = 0; i < n; i++) {
            cJSON *p = fx_suggest(&tuner_metis, st, i, &h);
            assert_int_equal(cJSON_GetArraySize(p), 6);
            double u = num(p, "u"), lu = num(p, "lu"), qu = num(p, "qu"), qlu = num(p, "qlu"), ri = num(p, "ri");
            double cn = num(p, "cn");
            assert_true(u >= -2 && u <= 3);
            assert_true(lu >= 1e-5 && lu <= 1e-1);
            assert_true(qu >= 0 && qu <= 10 && fmod(qu, 2.5) == 0);
            assert_true(qlu >= 1 && qlu <= 1000);
            assert_true(ri >= 3 && ri < 8 && ri == floor(ri));
            assert_true(cn == 1 || cn == 4 || cn == 16 || cn == 64);
            hist_add(&h, h.n, p, 1, mixed_objective(p, i), "SUCCEEDED");
        }
        hist_free(&h);
        tuner_metis.destroy(st);
    }
    ss_free(s);
}

/* all results equal, and running trials only: the tuner still suggests */
static void test_flat_and_running(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    void *st = create(&tuner_metis, "{\"cold_start_num\": 2}", s, 9);
    struct hist h = {0};
    for (int i = 0; i < 6; i++) {
        cJSON *p = fx_suggest(&tuner_metis, st, i, &h);
        assert_true(num(p, "x1") >= -5 && num(p, "x1") <= 10);
        assert_true(num(p, "x2") >= 0 && num(p, "x2") <= 15);
        hist_add(&h, h.n, p, i % 2 == 0, 1.0, i % 2 == 0 ? "SUCCEEDED" : "RUNNING");
    }
    hist_free(&h);
    tuner_metis.destroy(st);
    ss_free(s);
}

/* Metis beats Random's median clearly at a small budget: it closes at least half of
 * Random's gap to the optimum, over 5 seeds */
static void quality(const char *name, const char *space_text, double optimum, int budget)
{
    const struct objective *obj = objective_find(name);
    assert_non_null(obj);
    struct ss_space *s = parse_space(space_text);
    double m[5], rnd[5];
    for (int seed = 0; seed < 5; seed++) {
        void *a = create(&tuner_metis, minimize, s, (uint64_t)seed), *b = create(&tuner_random, NULL, s, (uint64_t)seed);
        struct hist ha = {0}, hb = {0};
        m[seed] = run(&tuner_metis, a, obj, &ha, budget);
        rnd[seed] = run(&tuner_random, b, obj, &hb, budget);
        hist_free(&ha);
        hist_free(&hb);
        tuner_metis.destroy(a);
        tuner_random.destroy(b);
    }
    qsort(m, 5, sizeof *m, cmp_double);
    qsort(rnd, 5, sizeof *rnd, cmp_double);
    print_message("%s, budget %d, 5 seeds: Metis median %.4g, Random median %.4g (optimum %.4g)\n", name, budget, m[2],
                  rnd[2], optimum);
    assert_true(m[2] - optimum < 0.5 * (rnd[2] - optimum));
    ss_free(s);
}

static void test_quality(void **state)
{
    (void)state;
    quality("branin", branin_space, 0.397887, 40);
    quality("hartmann6",
            "{\"x1\": {\"_type\": \"uniform\", \"_value\": [0, 1]}, \"x2\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
            " \"x3\": {\"_type\": \"uniform\", \"_value\": [0, 1]}, \"x4\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
            " \"x5\": {\"_type\": \"uniform\", \"_value\": [0, 1]}, \"x6\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}",
            -3.32237, 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),        cmocka_unit_test(test_classargs),
        cmocka_unit_test(test_refused_spaces),  cmocka_unit_test(test_cold_start_is_random),
        cmocka_unit_test(test_determinism),     cmocka_unit_test(test_values_in_range),
        cmocka_unit_test(test_flat_and_running), cmocka_unit_test(test_quality),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
