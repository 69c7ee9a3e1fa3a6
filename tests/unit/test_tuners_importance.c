/* test_tuners_importance.c: PED-ANOVA parameter importance (tuners/importance.c):
 * worked examples against numbers computed independently, and an experiment whose
 * metric depends on two parameters and not on a third. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/tuner_fixtures.h"
#include "tuners/importance.h"

static const struct imp_param *find(const struct imp_result *r, const char *path)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->p[i].p->path, path) == 0)
            return &r->p[i];
    fail_msg("no parameter %s in the result", path);
    return NULL;
}

/* A choice of three options, 10 trials: "a" 4 times (the two best trials among them),
 * "b" and "c" 3 times each. The top is max(2, ceil(0.1 * 10)) = 2 trials, both "a".
 * TPE's categorical estimator with prior weight 1 is (count + 1) / (n + K) (parzen.c's
 * header), so by hand: p_top = (3, 1, 1) / 5, p_all = (5, 4, 4) / 13 and the divergence
 * sum p_all (p_top / p_all - 1)^2 = sum p_top^2 / p_all - 1
 * = 0.36 * 13/5 + 2 * 0.04 * 13/4 - 1 = 0.936 + 0.26 - 1 = 0.196. */
static void test_choice_by_hand(void **st)
{
    (void)st;
    struct ss_space *s = parse_space("{\"opt\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", \"c\"]}}");
    const char *opts[10] = {"a", "b", "a", "c", "b", "a", "c", "a", "b", "c"};
    double vals[10] = {0.5, 3, 0.1, 4, 5, 6, 7, 8, 9, 10}; /* the best two: trials 2 and 0, both "a" */
    struct imp_trial t[10];
    cJSON *objs[10];
    for (int i = 0; i < 10; i++) {
        objs[i] = cJSON_CreateObject();
        cJSON_AddStringToObject(objs[i], "opt", opts[i]);
        t[i] = (struct imp_trial){objs[i], vals[i]};
    }
    struct imp_result r;
    imp_ped_anova(s, t, 10, 0, IMP_GAMMA, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.p[0].n, 10);
    assert_int_equal(r.p[0].n_top, 2);
    assert_float_equal(r.p[0].divergence, 0.196, 1e-12);
    assert_float_equal(r.p[0].importance, 1.0, 1e-12);
    imp_result_free(&r);
    /* maximize: the same ranking when the values are negated */
    for (int i = 0; i < 10; i++)
        t[i].value = -vals[i];
    imp_ped_anova(s, t, 10, 1, IMP_GAMMA, &r);
    assert_float_equal(r.p[0].divergence, 0.196, 1e-12);
    imp_result_free(&r);
    for (int i = 0; i < 10; i++)
        cJSON_Delete(objs[i]);
    ss_free(s);
}

/* Numeric parameters against an independent Python implementation written for this
 * test (not a port of parzen.c): each set of values becomes NNI's adaptive Parzen
 * estimator (the values sorted with the prior mean; a value's sigma the larger gap to
 * its neighbours, clipped to [range / min(100, n + 2), range]; a normal kernel per
 * value truncated to the range and renormalised; the prior normal((lo+hi)/2, hi-lo)
 * truncated, weight 1; equal weights), evaluated on the grid, normalised to sum 1 on
 * it, and sum p_all (p_top / p_all - 1)^2 taken. The top of 5 (or 6) trials is the 2
 * with the least loss.
 *   uniform(0, 1), grid 50 points i/49: values 0.1 0.2 0.4 0.8 0.9, losses 1 2 3 5 4
 *     -> 0.17769366193002434
 *   loguniform(1, 100), grid 50 points evenly spaced over [ln 1, ln 100], values 1.5 3
 *     10 40 90 (their logs), the same losses -> 0.27174156753606726
 *   randint(0, 6): the estimator numeric over [0, 5], grid the integers 0..5, values
 *     0 1 1 3 5 4, losses 1 2 6 5 4 3 -> 0.27651510092241355 */
static void test_numeric_against_reference(void **st)
{
    (void)st;
    struct ss_space *s = parse_space("{\"u\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                  " \"l\": {\"_type\": \"loguniform\", \"_value\": [1, 100]},"
                                  " \"r\": {\"_type\": \"randint\", \"_value\": [0, 6]}}");
    double loss[6] = {1, 2, 3, 5, 4};
    double u[5] = {0.1, 0.2, 0.4, 0.8, 0.9}, l[5];
    double raw[5] = {1.5, 3, 10, 40, 90};
    for (int i = 0; i < 5; i++)
        l[i] = log(raw[i]);
    int top;
    assert_float_equal(imp_divergence(&s->params[0], u, loss, 5, IMP_GAMMA, &top), 0.17769366193002434, 1e-12);
    assert_int_equal(top, 2);
    assert_float_equal(imp_divergence(&s->params[1], l, loss, 5, IMP_GAMMA, &top), 0.27174156753606726, 1e-12);
    double r[6] = {0, 1, 1, 3, 5, 4}, rloss[6] = {1, 2, 6, 5, 4, 3};
    assert_float_equal(imp_divergence(&s->params[2], r, rloss, 6, IMP_GAMMA, &top), 0.27651510092241355, 1e-12);
    /* through the whole function: the trials' values as a trial reports them */
    struct imp_trial t[5];
    cJSON *objs[5];
    for (int i = 0; i < 5; i++) {
        objs[i] = cJSON_CreateObject();
        cJSON_AddNumberToObject(objs[i], "u", u[i]);
        cJSON_AddNumberToObject(objs[i], "l", raw[i]);
        cJSON_AddNumberToObject(objs[i], "r", r[i]);
        t[i] = (struct imp_trial){objs[i], loss[i]};
    }
    struct imp_result res;
    imp_ped_anova(s, t, 5, 0, IMP_GAMMA, &res);
    assert_int_equal(res.n, 3);
    assert_float_equal(find(&res, "u")->divergence, 0.17769366193002434, 1e-12);
    assert_float_equal(find(&res, "l")->divergence, 0.27174156753606726, 1e-12);
    double sum = 0;
    for (int i = 0; i < res.n; i++)
        sum += res.p[i].importance;
    assert_float_equal(sum, 1.0, 1e-12);
    assert_true(res.p[0].importance >= res.p[1].importance && res.p[1].importance >= res.p[2].importance);
    imp_result_free(&res);
    for (int i = 0; i < 5; i++)
        cJSON_Delete(objs[i]);
    ss_free(s);
}

/* 2,000 random trials of {x: uniform, lr: loguniform, z: uniform, act: choice}; the
 * metric depends on x and lr only. z and act must rank below x and lr with importance
 * under 0.05 each (observed at this seed: z 0.028, act 0.0001; the top is a sample of
 * 200 trials, and its estimator, with NNI's narrow adaptive bandwidths, keeps some of
 * that sample's noise); x and lr take more than 0.3 each. Then the same maximized. */
static void test_irrelevant_ranks_last(void **st)
{
    (void)st;
    struct ss_space *s = parse_space("{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                  " \"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 1]},"
                                  " \"z\": {\"_type\": \"uniform\", \"_value\": [-5, 5]},"
                                  " \"act\": {\"_type\": \"choice\", \"_value\": [\"relu\", \"tanh\", \"gelu\"]}}");
    enum { N = 2000 };
    struct imp_trial *t = calloc(N, sizeof *t);
    cJSON **objs = calloc(N, sizeof *objs);
    struct rng rng;
    rng_init(&rng, 42, 0);
    for (int i = 0; i < N; i++) {
        objs[i] = ss_sample(s, &rng);
        double x = cJSON_GetObjectItem(objs[i], "x")->valuedouble;
        double lr = cJSON_GetObjectItem(objs[i], "lr")->valuedouble;
        t[i] = (struct imp_trial){objs[i], (x - 0.3) * (x - 0.3) + 0.05 * pow(log10(lr) + 2, 2)};
    }
    for (int pass = 0; pass < 2; pass++) {
        struct imp_result r;
        imp_ped_anova(s, t, N, pass, IMP_GAMMA, &r);
        assert_int_equal(r.n, 4);
        print_message("pass %d:", pass);
        for (int i = 0; i < r.n; i++)
            print_message(" %s %.4f (%.4f)", r.p[i].p->path, r.p[i].importance, r.p[i].divergence);
        print_message("\n");
        assert_int_equal(find(&r, "x")->n_top, 200);
        assert_true(find(&r, "x")->importance > 0.3);
        assert_true(find(&r, "lr")->importance > 0.3);
        assert_true(find(&r, "z")->importance < 0.05);
        assert_true(find(&r, "act")->importance < 0.05);
        assert_true(strcmp(r.p[2].p->path, "z") == 0 || strcmp(r.p[2].p->path, "act") == 0);
        assert_true(strcmp(r.p[3].p->path, "z") == 0 || strcmp(r.p[3].p->path, "act") == 0);
        imp_result_free(&r);
        for (int i = 0; i < N; i++) /* maximize the negated metric: the same top */
            t[i].value = -t[i].value;
    }
    for (int i = 0; i < N; i++)
        cJSON_Delete(objs[i]);
    free(objs);
    free(t);
    ss_free(s);
}

/* A nested choice: the branch's parameters are scored over the trials that chose it
 * (their n), named by their path; a value that does not fit leaves its trial out; a
 * parameter active in fewer than 2 trials scores 0. */
static void test_nested_branches(void **st)
{
    (void)st;
    struct ss_space *s = parse_space("{\"m\": {\"_type\": \"choice\", \"_value\": ["
                                  "{\"_name\": \"a\", \"u\": {\"_type\": \"uniform\", \"_value\": [0, 1]}},"
                                  "{\"_name\": \"b\", \"v\": {\"_type\": \"quniform\", \"_value\": [0, 10, 2]}},"
                                  "{\"_name\": \"c\", \"w\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}]},"
                                  " \"k\": {\"_type\": \"randint\", \"_value\": [1, 4]}}");
    enum { N = 60 };
    struct imp_trial t[N];
    cJSON *objs[N];
    for (int i = 0; i < N; i++) {
        objs[i] = cJSON_CreateObject();
        cJSON *m = cJSON_AddObjectToObject(objs[i], "m");
        if (i == 0) {
            cJSON_AddStringToObject(m, "_name", "c");
            cJSON_AddNumberToObject(m, "w", 0.5);
        } else if (i % 3 == 0) {
            cJSON_AddStringToObject(m, "_name", "b");
            cJSON_AddNumberToObject(m, "v", (i / 3) % 6 * 2);
        } else {
            cJSON_AddStringToObject(m, "_name", "a");
            cJSON_AddNumberToObject(m, "u", i % 2 ? (i % 7) / 7.0 : 2.0); /* 2.0: out of range, kept (clipped) */
        }
        cJSON_AddNumberToObject(objs[i], "k", i == 5 ? 9 : 1 + i % 3); /* 9: not in randint(1, 4): left out */
        t[i] = (struct imp_trial){objs[i], (double)i};
    }
    struct imp_result r;
    imp_ped_anova(s, t, N, 0, IMP_GAMMA, &r);
    assert_int_equal(r.n, 5);
    assert_int_equal(find(&r, "m")->n, N);
    assert_int_equal(find(&r, "m[0].u")->n, 40);
    assert_int_equal(find(&r, "m[1].v")->n, 19);
    assert_int_equal(find(&r, "m[1].v")->n_top, 2);
    assert_int_equal(find(&r, "m[2].w")->n, 1);
    assert_int_equal(find(&r, "m[2].w")->n_top, 0);
    assert_true(find(&r, "m[2].w")->divergence == 0);
    assert_int_equal(find(&r, "k")->n, N - 1);
    assert_true(find(&r, "m[1].v")->divergence > 0);
    assert_true(strcmp(r.p[r.n - 1].p->path, "m[2].w") == 0);
    imp_result_free(&r);
    /* no trials at all: every parameter, importance 0 */
    imp_ped_anova(s, t, 0, 0, IMP_GAMMA, &r);
    assert_int_equal(r.n, 5);
    for (int i = 0; i < r.n; i++)
        assert_true(r.p[i].importance == 0 && r.p[i].n == 0);
    imp_result_free(&r);
    for (int i = 0; i < N; i++)
        cJSON_Delete(objs[i]);
    ss_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choice_by_hand),
        cmocka_unit_test(test_numeric_against_reference),
        cmocka_unit_test(test_irrelevant_ranks_last),
        cmocka_unit_test(test_nested_branches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
