/* test_tuners_tpe.c: the TPE tuner (tuners/tpe.c, tuners/parzen.c): classArgs,
 * determinism from (seed, index, history) including a fresh state at any index, every
 * search-space type, nested choice, the constant liar, imported results, finite-space
 * deduplication, a search-quality smoke test, and the benchmark functions of
 * bench/objectives.h against functions.json's check points. */
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

/* A growing history, owned here, as the api hands it to a tuner. */
static struct tuner_history view(const struct hist *h)
{
    return (struct tuner_history){.n = h->n, .items = h->items};
}

/* Suggestion `index` with history h; fails the test unless the tuner returns 1. */
static cJSON *suggest(const struct tuner_ops *ops, void *st, int64_t index, const struct hist *h)
{
    struct tuner_history th = {0};
    if (h)
        th = view(h);
    cJSON *p = NULL;
    struct errbuf e = {{0}};
    int rc = ops->suggest(st, index, h ? &th : NULL, &p, &e);
    if (rc != 1)
        fail_msg("suggest(%lld) returned %d: %s", (long long)index, rc, rc < 0 ? e.msg : "no more");
    assert_non_null(p);
    return p;
}

static char *text(const cJSON *j)
{
    char *c = cJSON_PrintUnformatted(j);
    char *s = xstrdup(c);
    cJSON_free(c);
    return s;
}

typedef double (*objective_fn)(const cJSON *params);

/* Runs `n` sequential trials (each sees all earlier results); the history is left
 * in h. Returns the best value. */
static double run_sequential(const struct tuner_ops *ops, void *st, struct hist *h, int n, objective_fn f)
{
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        cJSON *p = suggest(ops, st, h->n, h);
        double v = f(p);
        best = v < best ? v : best;
        hist_add(h, h->n, p, 1, v, "SUCCEEDED");
    }
    return best;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static const char branin_space[] =
    "{\"x1\": {\"_type\": \"uniform\", \"_value\": [-5, 10]}, \"x2\": {\"_type\": \"uniform\", \"_value\": [0, 15]}}";

/* ---- registry and classArgs ---- */

static void test_registry(void **state)
{
    (void)state;
    assert_ptr_equal(tuner_find("TPE"), &tuner_tpe);
    assert_ptr_equal(tuner_find("tpe"), &tuner_tpe);
    assert_ptr_equal(tuner_find("TpeTuner"), &tuner_tpe);
    assert_ptr_equal(tuner_find("TPE_legacy"), &tuner_tpe_legacy); /* mapped.c: runs TPE */
    assert_non_null(strstr(tuner_names(), "TPE"));
    assert_int_equal(tuner_tpe.needs_history, 1);
    assert_int_equal(tuner_random.needs_history, 0);
}

static const struct bad_args {
    const char *args;
    const char *message;  /* expected prefix of the error */
} bad_args[] = {
    {"{\"algorithm_name\": \"tpe\"}", "tuner.classArgs.algorithm_name: unknown argument for TPE"},
    {"{\"optimize_mode\": \"max\"}", "tuner.classArgs.optimize_mode: must be"},
    {"{\"optimize_mode\": 1}", "tuner.classArgs.optimize_mode: must be"},
    {"{\"seed\": -1}", "tuner.classArgs.seed: must be an integer"},
    {"{\"seed\": 1.5}", "tuner.classArgs.seed: must be an integer"},
    {"{\"tpe_args\": 3}", "tuner.classArgs.tpe_args: must be a mapping"},
    {"{\"tpe_args\": [1]}", "tuner.classArgs.tpe_args: must be a mapping"},
    {"{\"tpe_args\": {\"n_startup\": 5}}", "tuner.classArgs.tpe_args.n_startup: unknown argument"},
    {"{\"tpe_args\": {\"gamma\": 0}}", "tuner.classArgs.tpe_args.gamma: must be in (0, 1)"},
    {"{\"tpe_args\": {\"gamma\": 1}}", "tuner.classArgs.tpe_args.gamma: must be in (0, 1)"},
    {"{\"tpe_args\": {\"gamma\": -0.5}}", "tuner.classArgs.tpe_args.gamma: must be in (0, 1)"},
    {"{\"tpe_args\": {\"gamma\": \"0.25\"}}", "tuner.classArgs.tpe_args.gamma: must be in (0, 1)"},
    {"{\"tpe_args\": {\"n_startup_jobs\": -1}}", "tuner.classArgs.tpe_args.n_startup_jobs: must be an integer between 0"},
    {"{\"tpe_args\": {\"n_startup_jobs\": 2.5}}", "tuner.classArgs.tpe_args.n_startup_jobs: must be an integer"},
    {"{\"tpe_args\": {\"n_startup_jobs\": \"20\"}}", "tuner.classArgs.tpe_args.n_startup_jobs: must be an integer"},
    {"{\"tpe_args\": {\"n_ei_candidates\": 0}}", "tuner.classArgs.tpe_args.n_ei_candidates: must be an integer between 1"},
    {"{\"tpe_args\": {\"n_ei_candidates\": true}}", "tuner.classArgs.tpe_args.n_ei_candidates: must be an integer"},
    {"{\"tpe_args\": {\"linear_forgetting\": 0}}", "tuner.classArgs.tpe_args.linear_forgetting: must be an integer"},
    {"{\"tpe_args\": {\"prior_weight\": -1}}", "tuner.classArgs.tpe_args.prior_weight: must be a number >= 0"},
    {"{\"tpe_args\": {\"prior_weight\": \"1\"}}", "tuner.classArgs.tpe_args.prior_weight: must be a number >= 0"},
    {"{\"tpe_args\": {\"constant_liar_type\": \"min\"}}", "tuner.classArgs.tpe_args.constant_liar_type: must be"},
    {"{\"tpe_args\": {\"constant_liar_type\": 1}}", "tuner.classArgs.tpe_args.constant_liar_type: must be"},
    {"[1, 2]", "tuner.classArgs: must be a mapping"},
};

static void test_class_args(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    for (size_t i = 0; i < sizeof bad_args / sizeof bad_args[0]; i++) {
        cJSON *args = cJSON_Parse(bad_args[i].args);
        assert_non_null(args);
        void *st = (void *)1;
        struct errbuf e = {{0}};
        int rc = tuner_tpe.create(args, s, 0, &st, &e);
        if (rc != -1 || strncmp(e.msg, bad_args[i].message, strlen(bad_args[i].message)) != 0)
            fail_msg("%s: rc %d, message \"%s\", expected \"%s...\"", bad_args[i].args, rc, e.msg,
                     bad_args[i].message);
        assert_ptr_equal(st, (void *)1);  /* nothing created */
        cJSON_Delete(args);
    }
    /* every accepted form, including NNI's explicit nulls and case-insensitive liars */
    static const char *const good[] = {
        NULL,
        "null",
        "{}",
        "{\"optimize_mode\": \"maximize\", \"seed\": 12345, \"tpe_args\": {\"constant_liar_type\": \"mean\", "
        "\"n_startup_jobs\": 10, \"n_ei_candidates\": 20, \"linear_forgetting\": 100, \"prior_weight\": 0, "
        "\"gamma\": 0.5}}",
        "{\"tpe_args\": {\"constant_liar_type\": null}}",
        "{\"tpe_args\": {\"constant_liar_type\": \"Worst\", \"n_startup_jobs\": 0}}",
        "{\"tpe_args\": null, \"seed\": null, \"optimize_mode\": null}",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        void *st = create(&tuner_tpe, good[i], s, 0);
        struct hist h = {0};
        run_sequential(&tuner_tpe, st, &h, 25, branin_params);
        hist_free(&h);
        tuner_tpe.destroy(st);
    }
    tuner_tpe.destroy(NULL);
    ss_free(s);
}

/* ---- determinism ---- */

static const char mixed_space[] =
    "{\"x1\": {\"_type\": \"uniform\", \"_value\": [-5, 5]},"
    " \"lr\": {\"_type\": \"loguniform\", \"_value\": [1e-5, 1e-1]},"
    " \"n\": {\"_type\": \"randint\", \"_value\": [1, 17]},"
    " \"cat\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", 3, null]},"
    " \"layer\": {\"_type\": \"choice\", \"_value\": ["
    "    {\"_name\": \"conv\", \"k\": {\"_type\": \"quniform\", \"_value\": [1, 7, 2]}},"
    "    {\"_name\": \"pool\"},"
    "    {\"_name\": \"dense\", \"w\": {\"_type\": \"normal\", \"_value\": [0, 2]}}]}}";

static double mixed_objective(const cJSON *p)
{
    const cJSON *layer = cJSON_GetObjectItemCaseSensitive(p, "layer");
    const char *name = cJSON_GetObjectItemCaseSensitive(layer, "_name")->valuestring;
    double v = pow(num(p, "x1") - 1, 2) + pow(log10(num(p, "lr")) + 3, 2) + fabs(num(p, "n") - 9) / 4;
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(p, "cat");
    v += cJSON_IsString(cat) && strcmp(cat->valuestring, "b") == 0 ? 0 : 1;
    if (strcmp(name, "conv") == 0)
        v += fabs(num(layer, "k") - 3) / 2;
    else if (strcmp(name, "dense") == 0)
        v += pow(num(layer, "w") - 1, 2);
    else
        v += 2;
    return v;
}

static void test_determinism(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(mixed_space);
    enum { N = 45 };
    void *a = create(&tuner_tpe, NULL, s, 7);
    struct hist h = {0};
    run_sequential(&tuner_tpe, a, &h, N, mixed_objective);

    /* the same seed and history replay the same sequence, in a fresh state and in
     * any order of indexes (an api restart) */
    void *b = create(&tuner_tpe, NULL, s, 7);
    for (int k = N - 1; k >= 0; k -= 3) {
        struct hist prefix = h;
        prefix.n = k;
        void *fresh = create(&tuner_tpe, NULL, s, 7);
        cJSON *p1 = suggest(&tuner_tpe, fresh, k, &prefix);
        cJSON *p2 = suggest(&tuner_tpe, b, k, &prefix);
        char *t0 = text(h.params[k]), *t1 = text(p1), *t2 = text(p2);
        assert_string_equal(t0, t1);
        assert_string_equal(t0, t2);
        free(t0);
        free(t1);
        free(t2);
        cJSON_Delete(p1);
        cJSON_Delete(p2);
        tuner_tpe.destroy(fresh);
    }
    /* the same index twice in one state */
    cJSON *p1 = suggest(&tuner_tpe, a, N, &h), *p2 = suggest(&tuner_tpe, a, N, &h);
    assert_true(cJSON_Compare(p1, p2, 1));
    cJSON_Delete(p1);
    cJSON_Delete(p2);

    /* another seed gives another sequence; seed in classArgs overrides the experiment's */
    void *c = create(&tuner_tpe, NULL, s, 8), *d = create(&tuner_tpe, "{\"seed\": 7}", s, 8);
    struct hist prefix = h;
    prefix.n = 30;
    p1 = suggest(&tuner_tpe, c, 30, &prefix);
    p2 = suggest(&tuner_tpe, d, 30, &prefix);
    assert_false(cJSON_Compare(p1, h.params[30], 1));
    assert_true(cJSON_Compare(p2, h.params[30], 1));
    cJSON_Delete(p1);
    cJSON_Delete(p2);

    tuner_tpe.destroy(a);
    tuner_tpe.destroy(b);
    tuner_tpe.destroy(c);
    tuner_tpe.destroy(d);
    hist_free(&h);
    ss_free(s);
}

/* The model starts after 10 results (NNI: 20). Before it, the start-up design: the
 * same point for an index whatever the history (a function of seed and index), not
 * Random's draws; with an explicit gamma (NNI's model), Random's draws value for value. */
static void test_startup_design(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(mixed_space);
    void *t = create(&tuner_tpe, NULL, s, 3), *r = create(&tuner_random, NULL, s, 3);
    void *nni = create(&tuner_tpe, "{\"tpe_args\": {\"gamma\": 0.25}}", s, 3);
    struct hist h = {0}, hn = {0};
    for (int i = 0; i < 25; i++) {
        cJSON *pt = suggest(&tuner_tpe, t, i, &h), *p0 = suggest(&tuner_tpe, t, i, NULL);
        cJSON *pn = suggest(&tuner_tpe, nni, i, &hn), *pr = suggest(&tuner_random, r, i, NULL);
        assert_int_equal(cJSON_Compare(pt, p0, 1), i < 10);
        assert_false(cJSON_Compare(p0, pr, 1));
        assert_int_equal(cJSON_Compare(pn, pr, 1), i < 10);
        cJSON_Delete(p0);
        cJSON_Delete(pr);
        hist_add(&h, i, pt, 1, mixed_objective(pt), "SUCCEEDED");
        hist_add(&hn, i, pn, 1, mixed_objective(pn), "SUCCEEDED");
    }
    hist_free(&h);
    hist_free(&hn);
    tuner_tpe.destroy(t);
    tuner_tpe.destroy(nni);
    tuner_random.destroy(r);
    ss_free(s);
}

/* The smallest distance between two of 16 points of the unit square. */
static double min_gap(const double (*xy)[2], int n)
{
    double m = INFINITY;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            m = fmin(m, hypot(xy[i][0] - xy[j][0], xy[i][1] - xy[j][1]));
    return m;
}

/* The start-up design spreads its points: 16 start-up trials in the unit square (over
 * 20 seeds, the median of each set's smallest gap between two points) are twice as
 * far apart as Random's 16 draws, and every set covers each quarter of each axis. */
static void test_startup_design_spreads(void **state)
{
    (void)state;
    struct ss_space *s = parse_space("{\"a\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                     " \"b\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}");
    double gd[20], gr[20];
    for (uint64_t seed = 0; seed < 20; seed++) {
        void *t = create(&tuner_tpe, "{\"tpe_args\": {\"n_startup_jobs\": 16}}", s, seed);
        void *r = create(&tuner_random, NULL, s, seed);
        double d[16][2], q[16][2];
        int bins[2][4] = {{0}};
        for (int i = 0; i < 16; i++) {
            cJSON *p = suggest(&tuner_tpe, t, i, NULL), *pr = suggest(&tuner_random, r, i, NULL);
            d[i][0] = num(p, "a");
            d[i][1] = num(p, "b");
            q[i][0] = num(pr, "a");
            q[i][1] = num(pr, "b");
            for (int k = 0; k < 2; k++)
                bins[k][(int)(d[i][k] * 4)]++;
            cJSON_Delete(p);
            cJSON_Delete(pr);
        }
        for (int k = 0; k < 2; k++)
            for (int b = 0; b < 4; b++)
                assert_true(bins[k][b] >= 2);
        gd[seed] = min_gap((const double (*)[2])d, 16);
        gr[seed] = min_gap((const double (*)[2])q, 16);
        tuner_tpe.destroy(t);
        tuner_random.destroy(r);
    }
    double md = median(gd, 20), mr = median(gr, 20);
    print_message("16 start-up points: median smallest gap %.4f (Random's %.4f)\n", md, mr);
    assert_true(md > 2 * mr);
    ss_free(s);
}

/* ---- search-space types ---- */

static const char all_types_space[] =
    "{\"c\": {\"_type\": \"choice\", \"_value\": [\"relu\", 0.5, true, {\"x\": 1}]},"
    " \"ri\": {\"_type\": \"randint\", \"_value\": [-3, 4]},"
    " \"u\": {\"_type\": \"uniform\", \"_value\": [-1, 2]},"
    " \"qu\": {\"_type\": \"quniform\", \"_value\": [0, 10, 3]},"
    " \"lu\": {\"_type\": \"loguniform\", \"_value\": [1e-4, 1]},"
    " \"qlu\": {\"_type\": \"qloguniform\", \"_value\": [1, 1000, 10]},"
    " \"no\": {\"_type\": \"normal\", \"_value\": [5, 2]},"
    " \"qno\": {\"_type\": \"qnormal\", \"_value\": [0, 10, 4]},"
    " \"ln\": {\"_type\": \"lognormal\", \"_value\": [0, 1]},"
    " \"qln\": {\"_type\": \"qlognormal\", \"_value\": [2, 1, 5]},"
    " \"nest\": {\"_type\": \"choice\", \"_value\": ["
    "    {\"_name\": \"empty\"},"
    "    {\"_name\": \"deep\", \"inner\": {\"_type\": \"choice\", \"_value\": ["
    "        {\"_name\": \"a\", \"z\": {\"_type\": \"uniform\", \"_value\": [100, 200]}},"
    "        {\"_name\": \"b\", \"y\": {\"_type\": \"randint\", \"_value\": [0, 2]}}]},"
    "     \"r\": {\"_type\": \"qloguniform\", \"_value\": [0.01, 1, 0.01]}}]}}";

static int is_multiple(double v, double q)
{
    double k = v / q;
    return fabs(k - nearbyint(k)) < 1e-9;
}

static void check_all_types(const cJSON *p)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "c");
    assert_true((cJSON_IsString(c) && strcmp(c->valuestring, "relu") == 0) ||
                (cJSON_IsNumber(c) && c->valuedouble == 0.5) || cJSON_IsTrue(c) ||
                (cJSON_IsObject(c) && num(c, "x") == 1));
    double ri = num(p, "ri");
    assert_true(ri == floor(ri) && ri >= -3 && ri < 4);
    double u = num(p, "u");
    assert_true(u >= -1 && u <= 2);
    double qu = num(p, "qu");
    assert_true(qu >= 0 && qu <= 10 && (is_multiple(qu, 3) || qu == 10));
    double lu = num(p, "lu");
    assert_true(lu >= 1e-4 * (1 - 1e-12) && lu <= 1 * (1 + 1e-12));
    double qlu = num(p, "qlu");
    assert_true(qlu >= 1 && qlu <= 1000 && (is_multiple(qlu, 10) || qlu == 1));
    assert_true(isfinite(num(p, "no")));
    assert_true(is_multiple(num(p, "qno"), 4));
    assert_true(num(p, "ln") > 0);
    double qln = num(p, "qln");
    assert_true(qln >= 0 && is_multiple(qln, 5));
    const cJSON *nest = cJSON_GetObjectItemCaseSensitive(p, "nest");
    const char *name = cJSON_GetObjectItemCaseSensitive(nest, "_name")->valuestring;
    if (strcmp(name, "empty") == 0) {
        assert_int_equal(cJSON_GetArraySize(nest), 1);
        return;
    }
    assert_string_equal(name, "deep");
    assert_int_equal(cJSON_GetArraySize(nest), 3);
    double r = num(nest, "r");
    assert_true(r >= 0.01 && r <= 1);
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(nest, "inner");
    const char *iname = cJSON_GetObjectItemCaseSensitive(inner, "_name")->valuestring;
    assert_int_equal(cJSON_GetArraySize(inner), 2);
    if (strcmp(iname, "a") == 0) {
        double z = num(inner, "z");
        assert_true(z >= 100 && z <= 200);
    } else {
        assert_string_equal(iname, "b");
        double y = num(inner, "y");
        assert_true(y == 0 || y == 1);
    }
}

/* Rewards one corner of every parameter, so that the model has something to find:
 * the test checks the ranges of what it suggests, and that it learns. */
static double all_types_objective(const cJSON *p)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "c");
    double v = cJSON_IsTrue(c) ? 0 : 1;
    v += fabs(num(p, "ri") - 2) + fabs(num(p, "u") - 1.5) + fabs(num(p, "qu") - 6) / 3;
    v += fabs(log10(num(p, "lu")) + 2) + fabs(num(p, "no") - 6) / 2 + fabs(num(p, "ln") - 1);
    const cJSON *nest = cJSON_GetObjectItemCaseSensitive(p, "nest");
    if (strcmp(cJSON_GetObjectItemCaseSensitive(nest, "_name")->valuestring, "deep") == 0) {
        const cJSON *inner = cJSON_GetObjectItemCaseSensitive(nest, "inner");
        if (cJSON_GetObjectItemCaseSensitive(inner, "z"))
            v += fabs(num(inner, "z") - 180) / 50 - 2;
        else
            v += 3;
    }
    return v;
}

static void test_all_types(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(all_types_space);
    void *t = create(&tuner_tpe, NULL, s, 11);
    struct hist h = {0};
    int deep_a_late = 0, true_late = 0;
    for (int i = 0; i < 120; i++) {
        cJSON *p = suggest(&tuner_tpe, t, i, &h);
        check_all_types(p);
        if (i >= 60) {
            const cJSON *nest = cJSON_GetObjectItemCaseSensitive(p, "nest");
            const cJSON *inner = cJSON_GetObjectItemCaseSensitive(nest, "inner");
            deep_a_late += inner && cJSON_GetObjectItemCaseSensitive(inner, "z") != NULL;
            true_late += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "c"));
        }
        hist_add(&h, i, p, 1, all_types_objective(p), "SUCCEEDED");
    }
    /* at random "deep"/"a" is 1 in 4 and true 1 in 4 (15 of 60); the model prefers both */
    assert_true(deep_a_late > 25);
    assert_true(true_late > 25);
    hist_free(&h);
    tuner_tpe.destroy(t);
    ss_free(s);
}

/* A branch is modelled from the trials that chose it: values another branch's
 * parameter happened to share a name with never leak in. */
static void test_nested_branches(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(
        "{\"m\": {\"_type\": \"choice\", \"_value\": ["
        "  {\"_name\": \"a\", \"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]}},"
        "  {\"_name\": \"b\", \"x\": {\"_type\": \"uniform\", \"_value\": [10, 11]}}]}}");
    void *t = create(&tuner_tpe, "{\"tpe_args\": {\"n_startup_jobs\": 5}}", s, 5);
    struct hist h = {0};
    /* history: branch b always better, and within b, x near 10.2 best */
    for (int i = 0; i < 40; i++) {
        int b = i % 2;
        double x = b ? 10 + (i * 0.37 - floor(i * 0.37)) : (i * 0.61 - floor(i * 0.61));
        cJSON *p = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(p, "m");
        cJSON_AddStringToObject(m, "_name", b ? "b" : "a");
        cJSON_AddNumberToObject(m, "x", x);
        hist_add(&h, i, p, 1, b ? fabs(x - 10.2) : 5 + x, "SUCCEEDED");
    }
    int in_b = 0, near = 0;
    for (int k = 40; k < 80; k++) {
        cJSON *p = suggest(&tuner_tpe, t, k, &h);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(p, "m");
        const char *name = cJSON_GetObjectItemCaseSensitive(m, "_name")->valuestring;
        double x = num(m, "x");
        if (strcmp(name, "b") == 0) {
            in_b++;
            assert_true(x >= 10 && x <= 11);
            near += fabs(x - 10.2) < 0.15;
        } else {
            assert_true(x >= 0 && x <= 1);
        }
        cJSON_Delete(p);
    }
    assert_true(in_b >= 30);
    assert_true(near >= in_b / 2);
    hist_free(&h);
    tuner_tpe.destroy(t);
    ss_free(s);
}

/* ---- the constant liar, imported and odd history items ---- */

static cJSON *point(double x)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "x", x);
    return p;
}

/* 30 results of f(x) = x in [0, 5) of [0, 10], then trials still pending at 8.6 to
 * 8.9, where nothing has been tried. */
static void liar_history(struct hist *h, const char *pending_status)
{
    for (int i = 0; i < 30; i++) {
        double x = fmod(i * 1.7 + 0.2, 5);
        hist_add(h, i, point(x), 1, x, "SUCCEEDED");
    }
    for (int i = 0; i < 4; i++)
        hist_add(h, 30 + i, point(8.6 + 0.1 * i), 0, 0, pending_status);
}

/* How many of 30 suggestions land near the pending trials. */
static int near_pending(const char *class_args, const struct hist *h)
{
    struct ss_space *s = parse_space("{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 10]}}");
    void *t = create(&tuner_tpe, class_args, s, 1);
    int count = 0;
    for (int k = 0; k < 30; k++) {
        cJSON *p = suggest(&tuner_tpe, t, 34 + k, h);
        count += num(p, "x") > 7.5;
        cJSON_Delete(p);
    }
    tuner_tpe.destroy(t);
    ss_free(s);
    return count;
}

static void test_constant_liar(void **state)
{
    (void)state;
    struct hist h = {0};
    liar_history(&h, "RUNNING");
    static const char best_args[] = "{\"tpe_args\": {\"constant_liar_type\": \"best\"}}";
    int best = near_pending(best_args, &h);
    int worst = near_pending("{\"tpe_args\": {\"constant_liar_type\": \"worst\"}}", &h);
    /* the default is "worst" (NNI's is "best"): the running trials are in the bad group */
    int dflt = near_pending(NULL, &h);
    int mean = near_pending("{\"tpe_args\": {\"constant_liar_type\": \"mean\"}}", &h);
    int none = near_pending("{\"tpe_args\": {\"constant_liar_type\": null}}", &h);
    /* "best" pretends the running trials are as good as the best: TPE searches near
     * them; "worst" and "mean" count them among the bad, so it stays off them; null
     * ignores them, and nothing tried there, g(x) leaves that region to l(x)'s prior
     * (13 of 30) */
    print_message("near the running trials: best %d, worst %d, default %d, mean %d, none %d\n", best, worst, dflt,
                  mean, none);
    assert_true(best >= 8);
    assert_true(worst <= 2 && mean <= 2);
    assert_true(none > 2 * worst);
    assert_int_equal(dflt, worst);
    /* WAITING and UNKNOWN are pending as well; finished trials without a result
     * (FAILED, a SUCCEEDED one without FINAL metric) are not */
    static const char *const pending[] = {"WAITING", "UNKNOWN"};
    for (size_t i = 0; i < 2; i++) {
        struct hist w = {0};
        liar_history(&w, pending[i]);
        assert_int_equal(near_pending(best_args, &w), best);
        hist_free(&w);
    }
    static const char *const finished[] = {"FAILED", "SUCCEEDED", "USER_CANCELED", "SYS_CANCELED", "EARLY_STOPPED"};
    for (size_t i = 0; i < 5; i++) {
        struct hist f = {0};
        liar_history(&f, finished[i]);
        assert_int_equal(near_pending(NULL, &f), none);
        hist_free(&f);
    }
    hist_free(&h);
}

/* NNI counts the liar's trials toward n_startup_jobs: with n_startup_jobs 20, 15
 * results and 5 running trials are enough for the model, unless the liar is off. */
static void test_liar_counts_for_startup(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    void *r = create(&tuner_random, NULL, s, 4);
    struct hist h = {0};
    for (int i = 0; i < 20; i++) {
        cJSON *p = suggest(&tuner_random, r, i, NULL);
        int done = i < 15;
        hist_add(&h, i, p, done, done ? branin_params(p) : 0, done ? "SUCCEEDED" : "RUNNING");
    }
    void *liar = create(&tuner_tpe, "{\"tpe_args\": {\"n_startup_jobs\": 20}}", s, 4);
    void *no_liar = create(&tuner_tpe, "{\"tpe_args\": {\"constant_liar_type\": null, \"n_startup_jobs\": 20}}", s, 4);
    cJSON *rnd = suggest(&tuner_tpe, no_liar, 20, NULL); /* the start-up design's point 20 */
    cJSON *p1 = suggest(&tuner_tpe, liar, 20, &h), *p2 = suggest(&tuner_tpe, no_liar, 20, &h);
    assert_false(cJSON_Compare(p1, rnd, 1));
    assert_true(cJSON_Compare(p2, rnd, 1));
    cJSON_Delete(p1);
    cJSON_Delete(p2);
    cJSON_Delete(rnd);
    tuner_tpe.destroy(liar);
    tuner_tpe.destroy(no_liar);
    tuner_random.destroy(r);
    hist_free(&h);
    ss_free(s);
}

/* Imported and customized trials (parameter_id -1) are history like any other;
 * values that do not fit the space are skipped, never an error. */
static void test_imported_and_odd_items(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(
        "{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 10]}, \"c\": {\"_type\": \"choice\", \"_value\": [\"p\", \"q\"]}}");
    struct hist h = {0};
    for (int i = 0; i < 25; i++) {
        cJSON *p = point(0.2 + 0.39 * i);
        cJSON_AddStringToObject(p, "c", i % 2 ? "q" : "p");
        hist_add(&h, -1, p, 1, fabs(0.2 + 0.39 * i - 7), "SUCCEEDED");
    }
    void *t = create(&tuner_tpe, NULL, s, 9), *r = create(&tuner_random, NULL, s, 9);
    cJSON *pt = suggest(&tuner_tpe, t, 0, &h), *pr = suggest(&tuner_random, r, 0, NULL);
    assert_false(cJSON_Compare(pt, pr, 1));  /* the model, not the start-up draw */
    assert_true(fabs(num(pt, "x") - 7) < 2);
    cJSON_Delete(pt);
    cJSON_Delete(pr);

    /* odd items: a value outside the options, a string for a number, no parameters,
     * NaN and infinite results, a parameter object that is not an object */
    cJSON *odd = point(3);
    cJSON_AddStringToObject(odd, "c", "zzz");
    hist_add(&h, 25, odd, 1, 0.1, "SUCCEEDED");
    cJSON *odd2 = cJSON_CreateObject();
    cJSON_AddStringToObject(odd2, "x", "3");
    cJSON_AddStringToObject(odd2, "c", "p");
    hist_add(&h, 26, odd2, 1, 0.1, "SUCCEEDED");
    hist_add(&h, 27, NULL, 1, 0.1, "SUCCEEDED");
    hist_add(&h, 28, point(4), 1, NAN, "SUCCEEDED");
    hist_add(&h, 29, point(5), 1, INFINITY, "SUCCEEDED");
    hist_add(&h, 30, cJSON_CreateString("x"), 1, 1, "SUCCEEDED");
    hist_add(&h, 31, point(6), 0, 0, NULL);
    for (int k = 1; k < 10; k++) {
        cJSON *p = suggest(&tuner_tpe, t, k, &h);
        double x = num(p, "x");
        assert_true(x >= 0 && x <= 10);
        cJSON_Delete(p);
    }
    /* negative index */
    cJSON *p = (cJSON *)1;
    struct errbuf e = {{0}};
    struct tuner_history th = view(&h);
    assert_int_equal(tuner_tpe.suggest(t, -1, &th, &p, &e), -1);
    assert_null(p);
    assert_non_null(strstr(e.msg, "negative"));
    /* no history at all (NULL): the start-up design, as with an empty history */
    p = suggest(&tuner_tpe, t, 3, NULL);
    struct hist none = {0};
    pr = suggest(&tuner_tpe, t, 3, &none);
    assert_true(cJSON_Compare(p, pr, 1));
    assert_true(num(p, "x") >= 0 && num(p, "x") <= 10);
    cJSON_Delete(p);
    cJSON_Delete(pr);
    tuner_tpe.destroy(t);
    tuner_random.destroy(r);
    hist_free(&h);
    ss_free(s);
}

/* qlognormal rounds small values to 0, which has no logarithm: such trials still
 * count (at the rounding boundary), so the model starts after n_startup_jobs. */
static void test_qlognormal_zero(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(
        "{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 10]}, \"q\": {\"_type\": \"qlognormal\", \"_value\": [0, 1, 5]}}");
    struct hist h = {0};
    for (int i = 0; i < 20; i++) {
        cJSON *p = point(fmod(i * 3.7 + 0.35, 10));
        cJSON_AddNumberToObject(p, "q", 0);
        hist_add(&h, i, p, 1, fmod(i * 3.7 + 0.35, 10), "SUCCEEDED");
    }
    void *t = create(&tuner_tpe, NULL, s, 6), *r = create(&tuner_random, NULL, s, 6);
    cJSON *pt = suggest(&tuner_tpe, t, 20, &h), *pr = suggest(&tuner_random, r, 20, NULL);
    assert_false(cJSON_Compare(pt, pr, 1));
    cJSON_Delete(pt);
    cJSON_Delete(pr);
    tuner_tpe.destroy(t);
    tuner_random.destroy(r);
    hist_free(&h);
    ss_free(s);
}

/* maximize flips the sign of every result */
static void test_optimize_mode(void **state)
{
    (void)state;
    struct ss_space *s = parse_space("{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 10]}}");
    struct hist h = {0};
    for (int i = 0; i < 30; i++) {
        double x = fmod(i * 3.7 + 0.35, 10);
        hist_add(&h, i, point(x), 1, x, "SUCCEEDED");
    }
    void *mn = create(&tuner_tpe, NULL, s, 2), *mx = create(&tuner_tpe, "{\"optimize_mode\": \"maximize\"}", s, 2);
    double sum_min = 0, sum_max = 0;
    for (int k = 30; k < 50; k++) {
        cJSON *a = suggest(&tuner_tpe, mn, k, &h), *b = suggest(&tuner_tpe, mx, k, &h);
        sum_min += num(a, "x");
        sum_max += num(b, "x");
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    assert_true(sum_min / 20 < 2.5);
    assert_true(sum_max / 20 > 7.5);
    tuner_tpe.destroy(mn);
    tuner_tpe.destroy(mx);
    hist_free(&h);
    ss_free(s);
}

/* A finite space: repeats are replaced by unused grid points, then no more. */
static void test_finite_space_dedup(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(
        "{\"c\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\"]}, \"n\": {\"_type\": \"randint\", \"_value\": [0, 3]},"
        " \"q\": {\"_type\": \"quniform\", \"_value\": [0, 1, 0.5]}}");
    void *t = create(&tuner_tpe, "{\"tpe_args\": {\"n_startup_jobs\": 4}}", s, 1);
    struct hist h = {0}, hashed = {0}; /* the second with params_hash set, as the api's view sets it */
    for (int i = 0; i < 18; i++) {
        cJSON *p = suggest(&tuner_tpe, t, i, &h), *ph = suggest(&tuner_tpe, t, i, &hashed);
        for (int j = 0; j < h.n; j++)
            assert_false(cJSON_Compare(p, h.params[j], 1));
        assert_true(cJSON_Compare(p, ph, 1)); /* the hashes change nothing but the cost */
        hist_add(&h, i, p, 1, num(p, "n") + num(p, "q"), i % 3 ? "SUCCEEDED" : "FAILED");
        hist_add(&hashed, i, ph, 1, num(p, "n") + num(p, "q"), i % 3 ? "SUCCEEDED" : "FAILED");
        hashed.items[i].has_hash = 1;
        hashed.items[i].params_hash = tuner_params_hash(ph);
    }
    hist_free(&hashed);
    cJSON *p = (cJSON *)1;
    struct errbuf e = {{0}};
    struct tuner_history th = view(&h);
    assert_int_equal(tuner_tpe.suggest(t, 18, &th, &p, &e), 0);
    assert_null(p);
    tuner_tpe.destroy(t);
    hist_free(&h);
    ss_free(s);

    /* the empty space has one point, {} */
    s = parse_space("{}");
    t = create(&tuner_tpe, NULL, s, 1);
    struct hist h2 = {0};
    p = suggest(&tuner_tpe, t, 0, &h2);
    assert_int_equal(cJSON_GetArraySize(p), 0);
    hist_add(&h2, 0, p, 1, 0, "SUCCEEDED");
    th = view(&h2);
    assert_int_equal(tuner_tpe.suggest(t, 1, &th, &p, &e), 0);
    tuner_tpe.destroy(t);
    hist_free(&h2);
    ss_free(s);
}

/* ---- the estimator ---- */

/* pz_sample draws from the density pz_logpdf describes: a histogram against the
 * integral of the density, for a mixed numeric/categorical estimator, shaped as NNI
 * does and with trialq's sharper categorical kernels. */
static void test_parzen_consistent(void **state)
{
    (void)state;
    struct pz_dim dims[2] = {{.lo = -5, .hi = 10, .prior_mu = 2.5, .prior_sigma = 15}, {.n_cat = 3}};
    double x[] = {1.0, 0, 7.5, 2, 9.9, 2}, w[] = {1, 0.5, 1};
    const struct pz_shape shapes[] = {{3, 5, 1.0, 1.0, 0, 0}, {3, 5, 1.0, 0.4, 0, 0}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
        struct pz_mixture m;
        pz_build(&m, dims, 2, x, w, 3, &shapes[sh]);
        enum { BINS = 15, N = 300000 };
        static int hist[BINS][3];
        memset(hist, 0, sizeof hist);
        struct rng r;
        rng_init(&r, 1, 2);
        for (int i = 0; i < N; i++) {
            double v[2];
            pz_sample(&m, &r, v);
            assert_true(v[0] >= -5 && v[0] <= 10);
            int b = (int)floor(v[0] + 5);
            hist[b < BINS ? b : BINS - 1][(int)v[1]]++;
        }
        double total = 0;
        for (int b = 0; b < BINS; b++)
            for (int c = 0; c < 3; c++) {
                double mass = 0;
                for (int k = 0; k < 200; k++) {
                    double v[2] = {b - 5 + (k + 0.5) / 200.0, c};
                    mass += exp(pz_logpdf(&m, v)) / 200.0;
                }
                total += mass;
                assert_true(fabs(mass - (double)hist[b][c] / N) < 0.004);
            }
        assert_true(fabs(total - 1) < 1e-3);
        pz_free(&m);
    }
}

/* ---- benchmark functions and a quality smoke test ---- */

static void test_objectives_check_points(void **state)
{
    (void)state;
    const char *path = TRIALQ_SOURCE_DIR "/bench/functions.json";
    size_t len;
    char *file = read_file(path, &len);
    assert_non_null(file);
    cJSON *root = cJSON_Parse(file);
    assert_non_null(root);
    int checked = 0;
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(root, "benchmarks")) {
        const char *name = cJSON_GetObjectItemCaseSensitive(b, "name")->valuestring;
        const struct objective *obj = objective_find(name);
        if (!obj)
            fail_msg("no C formula for %s", name);
        assert_int_equal(obj->dim, cJSON_GetObjectItemCaseSensitive(b, "dim")->valueint);
        const cJSON *cp;
        cJSON_ArrayForEach(cp, cJSON_GetObjectItemCaseSensitive(b, "check_points")) {
            const cJSON *xj = cJSON_GetObjectItemCaseSensitive(cp, "x");
            double x[16];
            for (int i = 0; i < obj->dim; i++) {
                char key[16];
                snprintf(key, sizeof key, "x%d", i + 1);
                x[i] = num(xj, key);
            }
            double want = cJSON_GetObjectItemCaseSensitive(cp, "f")->valuedouble, got = obj->f(x);
            /* the file gives 10 decimals, or 6 significant digits for tiny values */
            if (!(fabs(got - want) <= 1e-9 * fmax(1, fabs(want)) + 1e-9))
                fail_msg("%s: f = %.12g, functions.json says %.12g", name, got, want);
            checked++;
        }
        /* the optimum the file states */
        const cJSON *arg = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(b, "argmin"), 0);
        double x[16];
        for (int i = 0; i < obj->dim; i++) {
            char key[16];
            snprintf(key, sizeof key, "x%d", i + 1);
            x[i] = num(arg, key);
        }
        assert_true(fabs(obj->f(x) - cJSON_GetObjectItemCaseSensitive(b, "optimum")->valuedouble) < 1e-5);
    }
    assert_int_equal(checked, 16);
    cJSON_Delete(root);
    free(file);
}

/* TPE beats Random's median on branin at budget 60 over 5 seeds. */
static void test_quality_smoke(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    double best[2][5];
    const struct tuner_ops *ops[2] = {&tuner_random, &tuner_tpe};
    for (int k = 0; k < 2; k++)
        for (int seed = 0; seed < 5; seed++) {
            void *t = create(ops[k], NULL, s, (uint64_t)seed);
            struct hist h = {0};
            best[k][seed] = run_sequential(ops[k], t, &h, 60, branin_params);
            hist_free(&h);
            ops[k]->destroy(t);
        }
    qsort(best[0], 5, sizeof best[0][0], cmp_double);
    qsort(best[1], 5, sizeof best[1][0], cmp_double);
    print_message("branin @60, median of 5: Random %.4f, TPE %.4f\n", best[0][2], best[1][2]);
    assert_true(best[1][2] < best[0][2]);
    assert_true(best[1][2] < 0.5);
    ss_free(s);
}

/* Issue 33's 4-parameter experiment at its last epoch, as a loss (bench/functions.json's
 * drift4): lr and momentum matter, hidden a little, noise not at all. */
static double drift4(const cJSON *p)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(p, "hidden");
    double m = 0.9 - 0.15 * fabs(log10(num(p, "lr")) + 2.5) - 0.1 * fabs(num(p, "momentum") - 0.9) +
               0.02 * log2(h->valuedouble / 64);
    return 1 - (1 - exp(-10.0 / 3)) * m;
}

/* n trials, conc at a time (each suggestion sees the earlier ones of its batch as
 * RUNNING, then the batch reports in trial order); values[i] is trial i's. */
static void run_parallel(void *t, struct hist *h, int n, int conc, objective_fn f, double *values)
{
    while (h->n < n) {
        int start = h->n;
        while (h->n < n && h->n - start < conc)
            hist_add(h, h->n, suggest(&tuner_tpe, t, h->n, h), 0, 0, "RUNNING");
        for (int i = start; i < h->n; i++) {
            values[i] = f(h->items[i].parameters);
            h->items[i].has_value = 1;
            h->items[i].value = values[i];
            h->items[i].status = "SUCCEEDED";
        }
    }
}

/* The search does not drift away from what it found (issue 33): with the default
 * classArgs, 300 trials of drift4 one at a time and 8 at a time, the median value of
 * the last 100 trials stays close to the optimum (0.0742; Random's last 100: 0.21) in
 * each of 3 seeds, and over the seeds (their mean) it is no worse than that of the 100 before. NNI's split (3 to 5
 * good trials) and its "best" liar failed this: last 100 at 0.19 vs 0.11 before. */
static void test_no_drift(void **state)
{
    (void)state;
    struct ss_space *s = parse_space("{\"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]},"
                                     " \"momentum\": {\"_type\": \"uniform\", \"_value\": [0.5, 0.99]},"
                                     " \"hidden\": {\"_type\": \"choice\", \"_value\": [64, 128, 256, 512]},"
                                     " \"noise\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}");
    static const int concs[] = {1, 8};
    for (int c = 0; c < 2; c++) {
        double last[5], prev[5], sum_last = 0, sum_prev = 0;
        for (uint64_t seed = 0; seed < 5; seed++) {
            void *t = create(&tuner_tpe, NULL, s, seed);
            struct hist h = {0};
            double v[300];
            run_parallel(t, &h, 300, concs[c], drift4, v);
            prev[seed] = median(v + 100, 100);
            last[seed] = median(v + 200, 100);
            print_message("drift4, concurrency %d, seed %d: median of trials 100-199 %.5f, 200-299 %.5f\n",
                          concs[c], (int)seed, prev[seed], last[seed]);
            sum_last += last[seed];
            sum_prev += prev[seed];
            hist_free(&h);
            tuner_tpe.destroy(t);
        }
        /* over the seeds: their median near the optimum (0.0743; a seed may settle on
         * a worse option of hidden, 0.087, as 2 or 3 of 40 do), and their mean no worse
         * at the end (the seeds' medians differ in the fifth digit, and one seed of 3
         * may spread a little at the end) */
        assert_true(median(last, 5) < 0.085);
        assert_true(sum_last <= sum_prev);
    }
    ss_free(s);
}

/* A long search keeps narrowing (TPE_CLIP_PER_TRIAL): with 1,000 results around x = 50
 * on [0, 100], l(x)'s draws (one candidate: no selection) come closer to it than
 * NNI's floor (a hundredth of the range, sigma 1) lets them; issue 33: rosenbrock4's
 * last 100 of 1,000 trials were worse than the 100 before with that floor. */
static void test_long_search_narrows(void **state)
{
    (void)state;
    struct ss_space *s = parse_space("{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 100]}}");
    struct hist h = {0};
    for (int i = 0; i < 1000; i++) {
        double x = i < 500 ? fmod(i * 7.31 + 0.5, 100) : 50 + 0.05 * fmod(i * 1.37, 2) - 0.05;
        hist_add(&h, i, point(x), 1, fabs(x - 50), "SUCCEEDED");
    }
    /* an explicit gamma keeps NNI's model, its floor included */
    static const char *const args[] = {"{\"tpe_args\": {\"n_ei_candidates\": 1}}",
                                       "{\"tpe_args\": {\"n_ei_candidates\": 1, \"gamma\": 0.25}}"};
    double m[2];
    for (int a = 0; a < 2; a++) {
        void *t = create(&tuner_tpe, args[a], s, 3);
        double d[41];
        for (int k = 0; k < 41; k++) {
            cJSON *p = suggest(&tuner_tpe, t, 1000 + k, &h);
            d[k] = fabs(num(p, "x") - 50);
            cJSON_Delete(p);
        }
        m[a] = median(d, 41);
        print_message("%s: median distance of 41 draws to the optimum: %.3f\n", args[a], m[a]);
        tuner_tpe.destroy(t);
    }
    assert_true(m[0] < 0.4);
    assert_true(m[1] > 0.5);  /* sigma >= 1 */
    hist_free(&h);
    ss_free(s);
}

/* n results in the unit cube of six dimensions: the best n / 10 in a tight cluster
 * at 0.5 (within 0.002 in every dimension), the others spread and worse. */
static void cluster_history(struct hist *h, int n)
{
    for (int i = 0; i < n; i++) {
        cJSON *p = cJSON_CreateObject();
        int good = i % 10 == 0;
        double loss = 0;
        for (int j = 0; j < 6; j++) {
            char key[4];
            snprintf(key, sizeof key, "x%d", j + 1);
            double x = good ? 0.5 + 0.0002 * (i % 11) : fmod(0.13 + i * 0.618034 + j * 0.3819, 1);
            cJSON_AddNumberToObject(p, key, x);
            loss += fabs(x - 0.5);
        }
        hist_add(h, i, p, 1, good ? loss : 1 + loss, "SUCCEEDED");
    }
}

/* The median distance to the cluster of 41 draws from l(x) (one candidate: no
 * selection; prior weight 0.01: nearly all draws from the good trials' kernels). */
static double cluster_spread_running(const char *tpe_args, int n, int n_running)
{
    struct ss_space *s = parse_space("{\"x1\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                     " \"x2\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                     " \"x3\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                     " \"x4\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                     " \"x5\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                     " \"x6\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}");
    struct hist h = {0};
    cluster_history(&h, n);
    for (int i = 0; i < n_running; i++) {  /* running trials, spread like the bad ones */
        cJSON *p = cJSON_CreateObject();
        for (int j = 0; j < 6; j++) {
            char key[4];
            snprintf(key, sizeof key, "x%d", j + 1);
            cJSON_AddNumberToObject(p, key, fmod(0.71 + i * 0.618034 + j * 0.2719, 1));
        }
        hist_add(&h, n + i, p, 0, 0, "RUNNING");
    }
    char args[160];
    snprintf(args, sizeof args, "{\"tpe_args\": {\"n_ei_candidates\": 1, \"prior_weight\": 0.01%s}}", tpe_args);
    void *t = create(&tuner_tpe, args, s, 5);
    double d[41];
    for (int k = 0; k < 41; k++) {
        cJSON *p = suggest(&tuner_tpe, t, n + n_running + k, &h);
        d[k] = fabs(num(p, "x1") - 0.5);
        cJSON_Delete(p);
    }
    tuner_tpe.destroy(t);
    hist_free(&h);
    ss_free(s);
    double m = median(d, 41);
    print_message("%d results, %d running%s: median distance of 41 draws to the cluster: %.4f\n", n, n_running,
                  tpe_args, m);
    return m;
}

static double cluster_spread(const char *tpe_args, int n)
{
    return cluster_spread_running(tpe_args, n, 0);
}

/* A small budget keeps the kernels wide (TPE_SCOTT): with 30 results the good
 * trials' kernels are at least 0.07 * 3^(-1/10) of the range wide (sigma 0.063, a
 * median draw 0.042 away), where the neighbour-gap rule alone gives the magic clip's
 * 1/32 (median 0.021); from 100 results on the floor is gone (150 results: 1/100,
 * median 0.007), and an explicit gamma keeps NNI's model. Issue 33: hartmann6 at 100
 * trials searched too locally. */
static void test_small_budget_wide_kernels(void **state)
{
    (void)state;
    assert_true(cluster_spread("", 30) > 0.033);
    assert_true(cluster_spread(", \"gamma\": 0.25", 30) < 0.028);
    assert_true(cluster_spread("", 150) < 0.015);
}

/* While trials run, l(x)'s floor is wider (TPE_SCOTT_RUNNING): the same 32 results
 * with 31 trials running (a batch of 32 being suggested) give draws about three
 * times as far from the good cluster as with none running (0.166 against 0.049),
 * so that a wide batch searches more than one place; before, running trials left
 * l(x) as it was (issue 33: hartmann6's best of 100 trials at 32 at once, -2.70
 * against Optuna's multivariate -2.88). */
static void test_running_trials_widen_l(void **state)
{
    (void)state;
    double alone = cluster_spread_running("", 32, 0), batch = cluster_spread_running("", 32, 31);
    assert_true(batch > 2 * alone);
    /* NNI's model (an explicit gamma) has no such floor */
    double nni_alone = cluster_spread_running(", \"gamma\": 0.25", 32, 0);
    double nni_batch = cluster_spread_running(", \"gamma\": 0.25", 32, 31);
    assert_true(nni_batch < 1.5 * nni_alone);
}

/* 40 results in {c: choice of a, b, c, d; x: uniform [0, 1]} whose four good ones
 * have either the good option a or the good x (near 0.8), never both: (a, 0.1),
 * (b, 0.8), (c, 0.8), (d, 0.81); the 36 others have b, c or d and x anywhere. */
static void split_good_history(struct hist *h)
{
    static const char *const opt[] = {"a", "b", "c", "d"};
    static const double good_x[] = {0.1, 0.8, 0.8, 0.81};
    for (int i = 0; i < 40; i++) {
        cJSON *p = cJSON_CreateObject();
        int good = i % 10 == 0, k = i / 10;
        cJSON_AddStringToObject(p, "c", good ? opt[k] : opt[1 + i % 3]);
        cJSON_AddNumberToObject(p, "x", good ? good_x[k] : fmod(0.05 + i * 0.618034, 1));
        hist_add(h, i, p, 1, good ? 0.1 * k : 1 + 0.01 * i, "SUCCEEDED");
    }
}

/* The portfolio (portfolio()): in a space with a categorical parameter the odd
 * suggestions model each parameter on its own, and the even ones whose index is 2
 * modulo 4 each categorical parameter on its own (hybrid), so both recombine the
 * good option of one trial with the good value of others: (a, x near 0.8), which no
 * good trial has. The joint suggestions (indexes 0 modulo 4) keep a good trial's
 * values together, as before; a numeric-only space stays joint throughout (the
 * spread of test_small_budget_wide_kernels), and NNI's model (an explicit gamma) too.
 * Counts 20 suggestions, at indexes 40 + 4k + mod4. */
static int recombined(const char *class_args, int mod4)
{
    struct ss_space *s = parse_space("{\"c\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", \"c\", \"d\"]},"
                                     " \"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}");
    struct hist h = {0};
    split_good_history(&h);
    void *t = create(&tuner_tpe, class_args, s, 7);
    int count = 0;
    for (int k = 0; k < 20; k++) {
        cJSON *p = suggest(&tuner_tpe, t, 40 + 4 * k + mod4, &h);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "c");
        count += strcmp(c->valuestring, "a") == 0 && fabs(num(p, "x") - 0.8) < 0.1;
        cJSON_Delete(p);
    }
    tuner_tpe.destroy(t);
    hist_free(&h);
    ss_free(s);
    print_message("%s, indexes %d modulo 4: %d of 20 suggestions are (a, x near 0.8)\n",
                  class_args ? class_args : "defaults", mod4, count);
    return count;
}

static void test_independent_recombines(void **state)
{
    (void)state;
    assert_true(recombined(NULL, 1) >= 15);
    assert_true(recombined(NULL, 3) >= 15);
    assert_true(recombined(NULL, 2) >= 15);
    assert_true(recombined(NULL, 0) <= 5);
    assert_true(recombined("{\"tpe_args\": {\"gamma\": 0.25}}", 1) <= 5);
    assert_true(recombined("{\"tpe_args\": {\"gamma\": 0.25}}", 2) <= 5);
}

/* The hybrid suggestions (indexes 2 modulo 4) pick the numeric parameters together
 * and the categorical one on its own: 40 results in {c: a, b, c or d; x, y: uniform
 * [0, 1]} whose 4 best have b, c or d with (x, y) near (0.2, 0.2) or (0.8, 0.8), the
 * fifth a with (0.5, 0.5), where 8 bad trials lie too; the other bad ones have b, c
 * or d anywhere. A hybrid suggestion takes option a with (x, y) on one of the two
 * good points; an independent one also takes a, but its x and y come from different
 * candidates and so mix the two points; a joint one keeps a good trial's values
 * together and rarely takes a. Returns how many of 20 suggestions at indexes
 * 40 + 4k + mod4 are a with |x - y| < 0.15 and x, y near 0.2 or 0.8; *with_a, how
 * many take a. */
static int hybrid_keeps_pairs(int mod4, int *with_a)
{
    struct ss_space *s = parse_space("{\"c\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", \"c\", \"d\"]},"
                                     " \"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                     " \"y\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}");
    static const char *const opt[] = {"b", "c", "d"};
    static const double good[] = {0.2, 0.8, 0.21, 0.79, 0.5};
    struct hist h = {0};
    for (int i = 0; i < 40; i++) {
        cJSON *p = cJSON_CreateObject();
        int k = i / 8, is_good = i % 8 == 0, is_a = is_good && k == 4;
        double x = good[k], y = good[k];
        if (!is_good && i % 8 == 1) {  /* bad trials crowd (0.5, 0.5) */
            x = 0.5 + 0.02 * (k - 2);
            y = 0.5 - 0.02 * (k - 2);
        } else if (!is_good) {
            x = fmod(0.05 + i * 0.618034, 1);
            y = fmod(0.35 + i * 0.414214, 1);
        }
        cJSON_AddStringToObject(p, "c", is_a ? "a" : opt[i % 3]);
        cJSON_AddNumberToObject(p, "x", x);
        cJSON_AddNumberToObject(p, "y", y);
        hist_add(&h, i, p, 1, is_good ? 0.1 * k : 1 + 0.01 * i, "SUCCEEDED");
    }
    void *t = create(&tuner_tpe, NULL, s, 5);
    int count = 0;
    *with_a = 0;
    for (int k = 0; k < 20; k++) {
        cJSON *p = suggest(&tuner_tpe, t, 40 + 4 * k + mod4, &h);
        int a = strcmp(cJSON_GetObjectItemCaseSensitive(p, "c")->valuestring, "a") == 0;
        double x = num(p, "x"), y = num(p, "y");
        *with_a += a;
        count += a && fabs(x - y) < 0.15 && fmin(fabs(x - 0.2), fabs(x - 0.8)) < 0.15;
        cJSON_Delete(p);
    }
    tuner_tpe.destroy(t);
    hist_free(&h);
    ss_free(s);
    print_message("indexes %d modulo 4: %d of 20 suggestions take a, %d of them with (x, y) on a good point\n",
                  mod4, *with_a, count);
    return count;
}

static void test_hybrid_keeps_numeric_pairs(void **state)
{
    (void)state;
    int a_hybrid, a_indep, a_joint;
    int hybrid = hybrid_keeps_pairs(2, &a_hybrid);
    int indep = hybrid_keeps_pairs(1, &a_indep);
    hybrid_keeps_pairs(0, &a_joint);
    assert_true(a_hybrid >= 15 && a_indep >= 15);
    assert_true(hybrid >= 15);
    assert_true(indep <= 12);
    assert_true(a_joint <= 5);
}

/* A randint is ordinal (pz_dim_init): with 30 results at k = 6 (good) and k = 2 (bad)
 * of randint [0, 9), draws of l(x) alone (one candidate: no selection) put 5 and 7,
 * the good value's neighbours, ahead of 0 and 1, which are as far from the bad one;
 * NNI's model (an explicit gamma), categorical, gives the options nobody tried the
 * same share. (z keeps the space infinite: in a finite one a repeat of 6 would be
 * replaced by the first new grid point, 0.) Returns the draws at 5 or 7 minus those
 * at 0 or 1, of 60. */
static int ordinal_neighbours(const char *class_args)
{
    struct ss_space *s = parse_space("{\"k\": {\"_type\": \"randint\", \"_value\": [0, 9]},"
                                     " \"z\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}");
    struct hist h = {0};
    for (int i = 0; i < 30; i++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "k", i % 3 == 0 ? 6 : 2);
        cJSON_AddNumberToObject(p, "z", fmod(0.05 + i * 0.618034, 1));
        hist_add(&h, i, p, 1, i % 3 == 0 ? 0.01 * i : 1 + 0.01 * i, "SUCCEEDED");
    }
    void *t = create(&tuner_tpe, class_args, s, 3);
    int near = 0, far = 0;
    for (int k = 0; k < 60; k++) {
        cJSON *p = suggest(&tuner_tpe, t, 30 + k, &h);
        int v = (int)num(p, "k");
        assert_true(v >= 0 && v <= 8 && num(p, "k") == v);
        near += v == 5 || v == 7;
        far += v == 0 || v == 1;
        cJSON_Delete(p);
    }
    tuner_tpe.destroy(t);
    hist_free(&h);
    ss_free(s);
    print_message("%s: %d of 60 draws at 5 or 7, %d at 0 or 1\n", class_args, near, far);
    return near - far;
}

static void test_randint_ordinal(void **state)
{
    (void)state;
    assert_true(ordinal_neighbours("{\"tpe_args\": {\"n_ei_candidates\": 1}}") >= 8);
    assert_true(ordinal_neighbours("{\"tpe_args\": {\"n_ei_candidates\": 1, \"gamma\": 0.25}}") <= 5);
}

/* How many of 200 suggestions (indexes 200 to 399) choose branch b of a nested choice,
 * after 100 results in branch a (losses 0 to 1.98) and 100 in b (losses 2 and more). */
static int branch_b_picks(const char *class_args)
{
    struct ss_space *s = parse_space(
        "{\"m\": {\"_type\": \"choice\", \"_value\": ["
        "   {\"_name\": \"a\", \"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]}},"
        "   {\"_name\": \"b\", \"y\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}]}}");
    struct hist h = {0};
    for (int i = 0; i < 200; i++) {
        int b = i % 2 == 1;
        cJSON *p = cJSON_CreateObject(), *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "_name", b ? "b" : "a");
        cJSON_AddNumberToObject(m, b ? "y" : "x", fmod(0.1 + i * 0.618034, 1));
        cJSON_AddItemToObject(p, "m", m);
        hist_add(&h, i, p, 1, b ? 2 + i : 0.01 * i, "SUCCEEDED");
    }
    void *t = create(&tuner_tpe, class_args, s, 11);
    int count = 0;
    for (int k = 0; k < 200; k++) {
        cJSON *p = suggest(&tuner_tpe, t, 200 + k, &h);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(p, "m");
        count += strcmp(cJSON_GetObjectItemCaseSensitive(m, "_name")->valuestring, "b") == 0;
        cJSON_Delete(p);
    }
    tuner_tpe.destroy(t);
    hist_free(&h);
    ss_free(s);
    print_message("%s: %d of 200 suggestions in branch b\n", class_args ? class_args : "defaults", count);
    return count;
}

/* Branch exploration (TPE_BRANCH_EXPLORE): with branch a far better so far, the model
 * alone (NNI's, an explicit gamma) never tries b again, and neither did the default
 * model before; now, from 200 results on, a nested choice is drawn uniformly in 10 %
 * of the suggestions, so b keeps getting about one in 20 (issue 33: nested6 settled
 * in its worse branch in half of the runs). */
static void test_branches_explored(void **state)
{
    (void)state;
    int dflt = branch_b_picks(NULL), nni = branch_b_picks("{\"tpe_args\": {\"gamma\": 0.25}}");
    assert_true(dflt >= 4 && dflt <= 20);
    assert_true(dflt > nni);
}

/* A batch of parallel suggestions: 40 results of |x - 3| spread over [0, 10], then 16
 * suggestions in a row, each seeing the ones before it as RUNNING (as 16 free slots
 * ask). Returns the median distance to the optimum, and in *gap the median distance
 * from each suggestion to the nearest earlier one of its batch. */
static double batch_spread(uint64_t seed, double *gap)
{
    struct ss_space *s = parse_space("{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 10]}}");
    struct hist h = {0};
    for (int i = 0; i < 40; i++) {
        double x = fmod(i * 2.71 + 0.3, 10);
        hist_add(&h, i, point(x), 1, fabs(x - 3), "SUCCEEDED");
    }
    void *t = create(&tuner_tpe, NULL, s, seed);
    double xs[16], d[16], g[15];
    for (int k = 0; k < 16; k++) {
        cJSON *p = suggest(&tuner_tpe, t, 40 + k, &h);
        xs[k] = num(p, "x");
        d[k] = fabs(xs[k] - 3);
        if (k > 0) {
            g[k - 1] = INFINITY;
            for (int j = 0; j < k; j++)
                g[k - 1] = fmin(g[k - 1], fabs(xs[k] - xs[j]));
        }
        hist_add(&h, 40 + k, p, 0, 0, "RUNNING");
    }
    tuner_tpe.destroy(t);
    hist_free(&h);
    ss_free(s);
    *gap = median(g, 15);
    return median(d, 16);
}

/* The running trials' weight in g(x) (TPE_PENDING_WEIGHT, 0.003 of a result's): a
 * batch stays at the optimum and spreads a little. Over 9 seeds (medians) its
 * suggestions are 0.067 from the optimum and 0.012 from their nearest neighbour in
 * the batch. Before (a weight of 0.03) they were 0.097 from it and 0.030 apart:
 * enough to push a batch of 32 off the good region (issue 33: hartmann6 and
 * rosenbrock4 at 100 trials, 32 at once). */
static void test_batch_spreads_near_optimum(void **state)
{
    (void)state;
    double dist[9], gaps[9];
    for (uint64_t seed = 0; seed < 9; seed++)
        dist[seed] = batch_spread(seed, &gaps[seed]);
    double d = median(dist, 9), g = median(gaps, 9);
    print_message("a batch of 16: median distance to the optimum %.4f, to the nearest earlier suggestion %.4f\n",
                  d, g);
    assert_true(g > 0.004);
    assert_true(d < 0.08);
}

/* ---- a bounded model (issue 33: a suggestion's work does not grow with the history) ---- */

struct vi {
    double v;
    int i;
};

static int vi_cmp(const void *a, const void *b)
{
    const struct vi *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* ranked_select leaves the k least (values, then indexes) in front, as a full sort
 * would, ties and already-sorted input included. */
static void test_ranked_select(void **state)
{
    (void)state;
    struct rng r;
    rng_init(&r, 7, 0);
    for (int round = 0; round < 60; round++) {
        int n = 1 + (int)rng_below(&r, 3000), k = (int)rng_below(&r, (uint64_t)n + 1);
        struct ranked *a = xmalloc(sizeof *a * (size_t)n), *b = xmalloc(sizeof *b * (size_t)n);
        for (int i = 0; i < n; i++) {
            double v = round % 3 == 0 ? (double)rng_below(&r, 5) : round % 3 == 1 ? i : rng_uniform(&r);
            a[i] = b[i] = (struct ranked){v, i};
        }
        ranked_select(a, n, k);
        ranked_sort(b, n);
        char *in = xcalloc((size_t)n, 1);
        for (int i = 0; i < k; i++)
            in[b[i].i] = 1;
        for (int i = 0; i < k; i++)
            assert_true(in[a[i].i]);
        free(in);
        free(a);
        free(b);
    }
}

/* Past 2,000 results TPE models the 400 best (least loss, then earliest) and the most
 * recent others up to 2,000, in sequence order: its suggestion equals the one for a
 * history of just those trials, so a suggestion's work stays bounded. */
static void test_bounded_model(void **state)
{
    (void)state;
    struct ss_space *s = parse_space("{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                     " \"y\": {\"_type\": \"loguniform\", \"_value\": [0.001, 1]},"
                                     " \"c\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", \"c\"]}}");
    enum { N = 6000, MAX_RESULTS = 2000, KEEP_BEST = 400 };
    struct hist all = {0}, kept = {0};
    struct vi *order = xmalloc(sizeof *order * N);
    struct rng r;
    rng_init(&r, 11, 0);
    int n_results = 0;
    for (int i = 0; i < N; i++) {
        double x = rng_uniform(&r), y = exp(log(0.001) * rng_uniform(&r));
        int c = (int)rng_below(&r, 3);
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "x", x);
        cJSON_AddNumberToObject(p, "y", y);
        cJSON_AddStringToObject(p, "c", c == 0 ? "a" : c == 1 ? "b" : "c");
        /* rounded, so that many losses tie; every 7th trial failed */
        double v = round(100 * ((x - 0.3) * (x - 0.3) + fabs(log10(y) + 2) / 4 + 0.1 * c)) / 100;
        int ok = i % 7 != 3;
        hist_add(&all, i, p, ok, ok ? v : 0, ok ? "SUCCEEDED" : "FAILED");
        if (ok)
            order[n_results++] = (struct vi){v, i};
    }
    assert_true(n_results > MAX_RESULTS);
    qsort(order, (size_t)n_results, sizeof *order, vi_cmp);
    char *keep = xcalloc(N, 1);
    for (int k = 0; k < KEEP_BEST; k++)
        keep[order[k].i] = 1;
    for (int i = N - 1, n = KEEP_BEST; i >= 0 && n < MAX_RESULTS; i--)
        if (all.items[i].has_value && !keep[i]) {
            keep[i] = 1;
            n++;
        }
    for (int i = 0; i < N; i++)
        if (keep[i])
            hist_add(&kept, i, cJSON_Duplicate(all.params[i], 1), 1, all.items[i].value, "SUCCEEDED");
    assert_int_equal(kept.n, MAX_RESULTS);

    void *st = create(&tuner_tpe, NULL, s, 5);
    for (int64_t index = N; index < N + 4; index++) {
        cJSON *a = suggest(&tuner_tpe, st, index, &all), *b = suggest(&tuner_tpe, st, index, &kept);
        char *ta = text(a), *tb = text(b);
        assert_string_equal(ta, tb);
        free(ta);
        free(tb);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    tuner_tpe.destroy(st);
    free(keep);
    free(order);
    hist_free(&all);
    hist_free(&kept);
    ss_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_class_args),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_startup_design),
        cmocka_unit_test(test_startup_design_spreads),
        cmocka_unit_test(test_all_types),
        cmocka_unit_test(test_nested_branches),
        cmocka_unit_test(test_constant_liar),
        cmocka_unit_test(test_liar_counts_for_startup),
        cmocka_unit_test(test_imported_and_odd_items),
        cmocka_unit_test(test_qlognormal_zero),
        cmocka_unit_test(test_optimize_mode),
        cmocka_unit_test(test_finite_space_dedup),
        cmocka_unit_test(test_parzen_consistent),
        cmocka_unit_test(test_objectives_check_points),
        cmocka_unit_test(test_quality_smoke),
        cmocka_unit_test(test_no_drift),
        cmocka_unit_test(test_long_search_narrows),
        cmocka_unit_test(test_small_budget_wide_kernels),
        cmocka_unit_test(test_running_trials_widen_l),
        cmocka_unit_test(test_independent_recombines),
        cmocka_unit_test(test_hybrid_keeps_numeric_pairs),
        cmocka_unit_test(test_randint_ordinal),
        cmocka_unit_test(test_branches_explored),
        cmocka_unit_test(test_batch_spreads_near_optimum),
        cmocka_unit_test(test_ranked_select),
        cmocka_unit_test(test_bounded_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
