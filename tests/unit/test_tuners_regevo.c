/* test_tuners_regevo.c: RegularizedEvolutionTuner (tuners/regevo.c), NNI's aging
 * evolution: population_size random individuals first (a failed one replaced), then
 * the best of sample_size drawn from the population_size most recent results, copied
 * with one parameter redrawn; the oldest result leaves, however good; "nothing now"
 * while the population is empty and trials run; classArgs errors name the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuners/internal.h"
#include "tests/unit/tuner_fixtures.h"

static const char space_text[] = "{\"a\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                 " \"b\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                 " \"c\": {\"_type\": \"loguniform\", \"_value\": [0.001, 1]}}";

static const struct tuner_ops *const ops = &tuner_regularized_evolution;

static int suggest_rc(void *st, int64_t index, const struct hist *h, cJSON **p)
{
    struct tuner_history th = {.n = h->n, .items = h->items};
    struct errbuf e = {{0}};
    int rc = ops->suggest(st, index, &th, p, &e);
    if (rc < 0)
        fail_msg("suggest(%lld): %s", (long long)index, e.msg);
    return rc;
}

static cJSON *suggest1(void *st, int64_t index, const struct hist *h)
{
    cJSON *p = NULL;
    int rc = suggest_rc(st, index, h, &p);
    if (rc != 1)
        fail_msg("suggest(%lld) returned %d", (long long)index, rc);
    return p;
}

/* how many of a, b, c differ between two parameter sets */
static int n_diff(const cJSON *x, const cJSON *y)
{
    int n = 0;
    for (const char *k = "abc"; *k; k++) {
        char key[2] = {*k, 0};
        n += num(x, key) != num(y, key);
    }
    return n;
}

static void create_error(const char *args, const char *want)
{
    create_must_fail(ops, space_text, args, want);
}

static void test_class_args(void **unused)
{
    (void)unused;
    assert_ptr_equal(tuner_find("regularizedevolutiontuner"), ops);
    create_error("{\"optimize_mode\": \"max\"}", "tuner.classArgs.optimize_mode: must be");
    create_error("{\"population_size\": 0}", "tuner.classArgs.population_size: must be an integer between 1");
    create_error("{\"sample_size\": 0}", "tuner.classArgs.sample_size");
    create_error("{\"sample_size\": 2.5}", "tuner.classArgs.sample_size");
    create_error("{\"sample\": 2}", "tuner.classArgs.sample: unknown argument for RegularizedEvolutionTuner");
    /* sampling is with replacement, as NNI's: a sample larger than the population is fine */
    struct ss_space *s = parse_space(space_text);
    void *st = create(ops, "{\"optimize_mode\": \"minimize\", \"population_size\": 2, \"sample_size\": 9}", s, 1);
    ops->destroy(st);
    ss_free(s);
}

/* the first population_size suggestions are random draws, the same for the same seed */
static void test_initial_population(void **unused)
{
    (void)unused;
    struct ss_space *s = parse_space(space_text);
    void *a = create(ops, "{\"population_size\": 4}", s, 3), *b = create(ops, "{\"population_size\": 4}", s, 3);
    struct hist h = {0};
    for (int i = 0; i < 4; i++) {
        cJSON *p = suggest1(a, i, &h), *q = suggest1(b, i, &h);
        assert_true(cJSON_Compare(p, q, 1));
        for (int j = 0; j < h.n; j++)
            assert_int_equal(n_diff(p, h.params[j]), 3);
        cJSON_Delete(q);
        hist_add(&h, i, p, 1, i, "SUCCEEDED");
    }
    /* then mutations: one parameter of a member changed */
    cJSON *p = suggest1(a, 4, &h);
    int close = 0;
    for (int j = 0; j < 4; j++)
        close += n_diff(p, h.params[j]) == 1;
    assert_int_equal(close, 1);
    cJSON_Delete(p);
    hist_free(&h);
    ops->destroy(a);
    ops->destroy(b);
    ss_free(s);
}

/* population_size 2: the best result (item 0) ages out after two more results, so
 * the parent is item 2, the better of the two left; with population_size 3 it is
 * still item 0. Minimize picks the other way round. */
static int parent_of(const char *args, const double *values, int n, int64_t index, uint64_t seed)
{
    struct ss_space *s = parse_space(space_text);
    void *st = create(ops, args, s, seed);
    struct hist h = {0};
    struct rng r;
    rng_init(&r, 99, 0);
    for (int i = 0; i < n; i++) /* distinct parameter sets, whoever suggested them */
        hist_add(&h, i, ss_sample(s, &r), 1, values[i], "SUCCEEDED");
    cJSON *p = suggest1(st, index, &h);
    int parent = -1;
    for (int j = 0; j < n; j++)
        if (n_diff(p, h.params[j]) <= 1) {
            assert_int_equal(parent, -1);
            parent = j;
        }
    cJSON_Delete(p);
    hist_free(&h);
    ops->destroy(st);
    ss_free(s);
    return parent;
}

static void test_aging(void **unused)
{
    (void)unused;
    const double v[] = {100, 1, 2};
    for (uint64_t seed = 0; seed < 5; seed++) {
        assert_int_equal(parent_of("{\"population_size\": 2, \"sample_size\": 40}", v, 3, 3, seed), 2);
        assert_int_equal(parent_of("{\"population_size\": 3, \"sample_size\": 40}", v, 3, 3, seed), 0);
        assert_int_equal(
            parent_of("{\"optimize_mode\": \"minimize\", \"population_size\": 2, \"sample_size\": 40}", v, 3, 3, seed),
            1);
    }
    /* sample_size 1: the parent is a member drawn at random, so over seeds both are */
    int seen[3] = {0};
    for (uint64_t seed = 0; seed < 30; seed++)
        seen[parent_of("{\"population_size\": 2, \"sample_size\": 1}", v, 3, 3, seed)]++;
    assert_int_equal(seen[0], 0);
    assert_true(seen[1] > 3 && seen[2] > 3);
}

/* a failed random individual is replaced by another random one; an empty population
 * waits while trials run, and draws at random when none does */
static void test_failures_and_waiting(void **unused)
{
    (void)unused;
    struct ss_space *s = parse_space(space_text);
    void *st = create(ops, "{\"population_size\": 2}", s, 8);
    struct hist h = {0};
    hist_add(&h, 0, suggest1(st, 0, &h), 0, 0, "FAILED");
    hist_add(&h, 1, suggest1(st, 1, &h), 0, 0, "RUNNING");
    cJSON *p = suggest1(st, 2, &h); /* owed again: random */
    assert_int_equal(n_diff(p, h.params[0]), 3);
    assert_int_equal(n_diff(p, h.params[1]), 3);
    hist_add(&h, 2, p, 0, 0, "RUNNING");
    assert_int_equal(suggest_rc(st, 3, &h, &p), 2);
    assert_null(p);
    h.items[1].status = "SUCCEEDED"; /* ended without a result; 2 still runs */
    assert_int_equal(suggest_rc(st, 3, &h, &p), 2);
    h.items[2].status = "FAILED"; /* the replacement failed too: another random one */
    p = suggest1(st, 3, &h);
    assert_int_equal(n_diff(p, h.params[1]), 3);
    cJSON_Delete(p);
    /* a result arrives: the next is its mutation */
    h.items[1].has_value = 1;
    h.items[1].value = 0.5;
    hist_add(&h, 3, suggest1(st, 3, &h), 0, 0, "SUCCEEDED");
    p = suggest1(st, 4, &h);
    assert_int_equal(n_diff(p, h.params[1]), 1);
    cJSON_Delete(p);
    hist_free(&h);
    ops->destroy(st);
    ss_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_class_args),
        cmocka_unit_test(test_initial_population),
        cmocka_unit_test(test_aging),
        cmocka_unit_test(test_failures_and_waiting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
