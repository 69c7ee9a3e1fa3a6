/* test_tuners_more.c: the Anneal and Evolution tuners (tuners/anneal.c,
 * tuners/evolution.c) and the assessors (tuners/assessor.h: Medianstop,
 * Curvefitting): classArgs errors, determinism from (seed, index, history) including
 * a fresh state at any index, every search-space type and nested choice, the rules
 * that make each algorithm what it is, and a search-quality smoke test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench/objectives.h"
#include "tuners/assessor.h"
#include "tuners/internal.h"
#include "tests/unit/tuner_fixtures.h"

/* ---- helpers ---- */

static char *text(const cJSON *j)
{
    char *c = cJSON_PrintUnformatted(j);
    char *s = xstrdup(c);
    cJSON_free(c);
    return s;
}

static void assert_same_json(const cJSON *a, const cJSON *b)
{
    char *ta = text(a), *tb = text(b);
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
}

static cJSON *point(double x)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "x", x);
    return p;
}

typedef double (*objective_fn)(const cJSON *params);

/* n sequential trials, each seeing every earlier result; returns the best value */
static double run_sequential(const struct tuner_ops *ops, void *st, struct hist *h, int n, objective_fn f)
{
    double best = INFINITY;
    for (int i = 0; i < n; i++) {
        cJSON *p = fx_suggest(ops, st, h->n, h);
        double v = f(p);
        best = v < best ? v : best;
        hist_add(h, h->n, p, 1, v, "SUCCEEDED");
    }
    return best;
}

static const char branin_space[] =
    "{\"x1\": {\"_type\": \"uniform\", \"_value\": [-5, 10]}, \"x2\": {\"_type\": \"uniform\", \"_value\": [0, 15]}}";

static const char evo_min[] = "{\"optimize_mode\": \"minimize\"}";

/* ---- registries ---- */

static void test_registry(void **state)
{
    (void)state;
    assert_ptr_equal(tuner_find("Anneal"), &tuner_anneal);
    assert_ptr_equal(tuner_find("ANNEAL"), &tuner_anneal);
    assert_ptr_equal(tuner_find("Evolution"), &tuner_evolution);
    assert_ptr_equal(tuner_find("evolutiontuner"), &tuner_evolution);
    assert_null(tuner_find("HyperoptTuner"));
    assert_non_null(strstr(tuner_names(), "Anneal"));
    assert_non_null(strstr(tuner_names(), "Evolution"));
    assert_int_equal(tuner_anneal.needs_history, 1);
    assert_int_equal(tuner_evolution.needs_history, 1);

    assert_ptr_equal(assessor_find("Medianstop"), &assessor_medianstop);
    assert_ptr_equal(assessor_find("medianstop"), &assessor_medianstop);
    assert_ptr_equal(assessor_find("MedianstopAssessor"), &assessor_medianstop);
    assert_ptr_equal(assessor_find("CURVEFITTING"), &assessor_curvefitting);
    assert_ptr_equal(assessor_find("CurvefittingAssessor"), &assessor_curvefitting);
    assert_null(assessor_find("Median"));
    assert_null(assessor_find(""));
    assert_null(assessor_find(NULL));
    const struct assessor_ops *all[] = {&assessor_medianstop, &assessor_curvefitting};
    for (size_t i = 0; i < 2; i++) {
        assert_non_null(strstr(assessor_names(), all[i]->name));
        assert_ptr_equal(assessor_find(all[i]->name), all[i]);
    }
}

/* ---- classArgs ---- */

struct bad_args {
    const char *args;     /* JSON text, or NULL for no classArgs */
    const char *message;  /* expected prefix of the error */
};

static const struct bad_args anneal_bad[] = {
    {"{\"algorithm_name\": \"anneal\"}", "tuner.classArgs.algorithm_name: unknown argument for Anneal (accepted: "
                                         "optimize_mode, parallel_optimize, constant_liar_type, seed)"},
    {"{\"seed\": -1}", "tuner.classArgs.seed: must be an integer between 0 and 2^53"},
    {"{\"optimize_mode\": \"max\"}", "tuner.classArgs.optimize_mode: must be \"maximize\" or \"minimize\""},
    {"{\"optimize_mode\": 1}", "tuner.classArgs.optimize_mode: must be"},
    {"{\"parallel_optimize\": \"true\"}", "tuner.classArgs.parallel_optimize: must be true or false"},
    {"{\"parallel_optimize\": 1}", "tuner.classArgs.parallel_optimize: must be true or false"},
    {"{\"constant_liar_type\": \"best\"}",
     "tuner.classArgs.constant_liar_type: must be \"min\", \"max\" or \"mean\""},
    {"{\"constant_liar_type\": \"MIN\"}", "tuner.classArgs.constant_liar_type: must be"},
    {"[1]", "tuner.classArgs: must be a mapping"},
};

static const struct bad_args evolution_bad[] = {
    {NULL, "tuner.classArgs.optimize_mode: required by Evolution (\"maximize\" or \"minimize\")"},
    {"{}", "tuner.classArgs.optimize_mode: required by Evolution"},
    {"{\"population_size\": 10}", "tuner.classArgs.optimize_mode: required by Evolution"},
    {"{\"optimize_mode\": null}", "tuner.classArgs.optimize_mode: required by Evolution"},
    {"{\"optimize_mode\": \"maximise\"}", "tuner.classArgs.optimize_mode: must be \"maximize\" or \"minimize\""},
    {"{\"optimize_mode\": \"maximize\", \"population_size\": 0}",
     "tuner.classArgs.population_size: must be an integer between 1 and 99999"},
    {"{\"optimize_mode\": \"maximize\", \"population_size\": 100000}", "tuner.classArgs.population_size: must be"},
    {"{\"optimize_mode\": \"maximize\", \"population_size\": 2.5}", "tuner.classArgs.population_size: must be"},
    {"{\"optimize_mode\": \"maximize\", \"population_size\": \"32\"}", "tuner.classArgs.population_size: must be"},
    {"{\"optimize_mode\": \"maximize\", \"seed\": 2.5}", "tuner.classArgs.seed: must be an integer between 0 and 2^53"},
    {"\"maximize\"", "tuner.classArgs: must be a mapping"},
};

static void check_bad_tuner_args(const struct tuner_ops *ops, const struct bad_args *bad, size_t n)
{
    struct ss_space *s = parse_space(branin_space);
    for (size_t i = 0; i < n; i++) {
        cJSON *args = bad[i].args ? cJSON_Parse(bad[i].args) : NULL;
        assert_true(!bad[i].args || args);
        void *st = (void *)1;
        struct errbuf e = {{0}};
        int rc = ops->create(args, s, 0, &st, &e);
        if (rc != -1 || strncmp(e.msg, bad[i].message, strlen(bad[i].message)) != 0)
            fail_msg("%s %s: rc %d, message \"%s\", expected \"%s...\"", ops->name, bad[i].args, rc, e.msg,
                     bad[i].message);
        assert_ptr_equal(st, (void *)1);  /* nothing created */
        cJSON_Delete(args);
    }
    ss_free(s);
}

static void check_good_tuner_args(const struct tuner_ops *ops, const char *const *good, size_t n)
{
    struct ss_space *s = parse_space(branin_space);
    for (size_t i = 0; i < n; i++) {
        void *st = create(ops, good[i], s, 0);
        struct hist h = {0};
        run_sequential(ops, st, &h, 40, branin_params);
        hist_free(&h);
        ops->destroy(st);
    }
    ops->destroy(NULL);
    ss_free(s);
}

static void test_tuner_class_args(void **state)
{
    (void)state;
    check_bad_tuner_args(&tuner_anneal, anneal_bad, sizeof anneal_bad / sizeof anneal_bad[0]);
    check_bad_tuner_args(&tuner_evolution, evolution_bad, sizeof evolution_bad / sizeof evolution_bad[0]);
    static const char *const anneal_good[] = {
        NULL,
        "null",
        "{}",
        "{\"optimize_mode\": \"maximize\", \"parallel_optimize\": true, \"constant_liar_type\": \"mean\"}",
        "{\"parallel_optimize\": false, \"constant_liar_type\": \"max\"}",
        "{\"optimize_mode\": null, \"parallel_optimize\": null, \"constant_liar_type\": null}",
    };
    check_good_tuner_args(&tuner_anneal, anneal_good, sizeof anneal_good / sizeof anneal_good[0]);
    static const char *const evolution_good[] = {
        evo_min,
        "{\"optimize_mode\": \"maximize\", \"population_size\": 1}",
        "{\"optimize_mode\": \"minimize\", \"population_size\": 99999}",
        "{\"optimize_mode\": \"minimize\", \"population_size\": null}",
    };
    check_good_tuner_args(&tuner_evolution, evolution_good, sizeof evolution_good / sizeof evolution_good[0]);
}

static const struct assessor_case {
    const struct assessor_ops *ops;
    const char *args;
    const char *message;
} assessor_bad[] = {
    {&assessor_medianstop, "{\"optimize_mode\": \"min\"}",
     "assessor.classArgs.optimize_mode: must be \"maximize\" or \"minimize\""},
    {&assessor_medianstop, "{\"start_step\": -1}",
     "assessor.classArgs.start_step: must be an integer between 0 and 9999"},
    {&assessor_medianstop, "{\"start_step\": 1.5}", "assessor.classArgs.start_step: must be an integer"},
    {&assessor_medianstop, "{\"start_step\": \"5\"}", "assessor.classArgs.start_step: must be an integer"},
    {&assessor_medianstop, "{\"start_step\": 10000}", "assessor.classArgs.start_step: must be an integer"},
    {&assessor_medianstop, "{\"epoch_num\": 20}",
     "assessor.classArgs.epoch_num: unknown argument for Medianstop (accepted: optimize_mode, start_step)"},
    {&assessor_medianstop, "[]", "assessor.classArgs: must be a mapping"},
    {&assessor_curvefitting, NULL, "assessor.classArgs.epoch_num: required by Curvefitting"},
    {&assessor_curvefitting, "{\"start_step\": 3}", "assessor.classArgs.epoch_num: required by Curvefitting"},
    {&assessor_curvefitting, "{\"epoch_num\": -1}",
     "assessor.classArgs.epoch_num: must be an integer between 0 and 9999"},
    {&assessor_curvefitting, "{\"epoch_num\": 20.5}", "assessor.classArgs.epoch_num: must be an integer"},
    {&assessor_curvefitting, "{\"epoch_num\": 20, \"gap\": 0}",
     "assessor.classArgs.gap: must be an integer between 1 and 9999"},
    {&assessor_curvefitting, "{\"epoch_num\": 20, \"start_step\": -2}",
     "assessor.classArgs.start_step: must be an integer"},
    {&assessor_curvefitting, "{\"epoch_num\": 20, \"threshold\": -0.1}",
     "assessor.classArgs.threshold: must be a number between 0 and 9999"},
    {&assessor_curvefitting, "{\"epoch_num\": 20, \"threshold\": \"0.9\"}",
     "assessor.classArgs.threshold: must be a number"},
    {&assessor_curvefitting, "{\"epoch_num\": 20, \"optimize_mode\": \"maximize\"}",
     "assessor.classArgs.optimize_mode: unknown argument for Curvefitting"},
};

static void *assessor_new(const struct assessor_ops *ops, const char *args_text)
{
    cJSON *args = args_text ? cJSON_Parse(args_text) : NULL;
    assert_true(!args_text || args);
    void *st = NULL;
    struct errbuf e = {{0}};
    if (ops->create(args, &st, &e) != 0)
        fail_msg("unexpected %s create error: %s", ops->name, e.msg);
    cJSON_Delete(args);
    return st;
}

static void test_assessor_class_args(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof assessor_bad / sizeof assessor_bad[0]; i++) {
        const struct assessor_case *c = &assessor_bad[i];
        cJSON *args = c->args ? cJSON_Parse(c->args) : NULL;
        assert_true(!c->args || args);
        void *st = (void *)1;
        struct errbuf e = {{0}};
        int rc = c->ops->create(args, &st, &e);
        if (rc != -1 || strncmp(e.msg, c->message, strlen(c->message)) != 0)
            fail_msg("%s %s: rc %d, message \"%s\", expected \"%s...\"", c->ops->name, c->args, rc, e.msg,
                     c->message);
        assert_ptr_equal(st, (void *)1);
        cJSON_Delete(args);
    }
    static const struct assessor_case good[] = {
        {&assessor_medianstop, NULL, NULL},
        {&assessor_medianstop, "{}", NULL},
        {&assessor_medianstop, "{\"optimize_mode\": \"minimize\", \"start_step\": 9999}", NULL},
        {&assessor_medianstop, "{\"optimize_mode\": null, \"start_step\": null}", NULL},
        {&assessor_curvefitting, "{\"epoch_num\": 20}", NULL},
        {&assessor_curvefitting, "{\"epoch_num\": 0, \"start_step\": 0, \"threshold\": 1, \"gap\": 9999}", NULL},
        {&assessor_curvefitting, "{\"epoch_num\": 100, \"threshold\": 0.9, \"gap\": null}", NULL},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        good[i].ops->destroy(assessor_new(good[i].ops, good[i].args));
    assessor_medianstop.destroy(NULL);
    assessor_curvefitting.destroy(NULL);
}

/* ---- determinism and restarts ---- */

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

/* A fresh state, and one that has answered other indexes, both give the suggestion
 * an uninterrupted run gave, for the same seed and history (an api restart). */
static void check_determinism(const struct tuner_ops *ops, const char *args)
{
    struct ss_space *s = parse_space(mixed_space);
    enum { N = 60 };
    void *a = create(ops, args, s, 7);
    struct hist h = {0};
    run_sequential(ops, a, &h, N, mixed_objective);

    void *b = create(ops, args, s, 7);
    for (int k = N - 1; k >= 0; k -= 3) {
        struct hist prefix = h;
        prefix.n = k;
        void *fresh = create(ops, args, s, 7);
        cJSON *p1 = fx_suggest(ops, fresh, k, &prefix), *p2 = fx_suggest(ops, b, k, &prefix);
        assert_same_json(h.params[k], p1);
        assert_same_json(h.params[k], p2);
        cJSON_Delete(p1);
        cJSON_Delete(p2);
        ops->destroy(fresh);
    }
    cJSON *p1 = fx_suggest(ops, a, N, &h), *p2 = fx_suggest(ops, a, N, &h);
    assert_same_json(p1, p2);
    cJSON_Delete(p1);
    cJSON_Delete(p2);

    /* another seed, another sequence (past the start, where both are random) */
    void *c = create(ops, args, s, 8);
    struct hist prefix = h;
    prefix.n = 40;
    p1 = fx_suggest(ops, c, 40, &prefix);
    assert_false(cJSON_Compare(p1, h.params[40], 1));
    cJSON_Delete(p1);

    /* a history with pending, failed and customized trials answers the same too */
    struct hist odd = {0};
    for (int i = 0; i < N; i++) {
        static const char *const st[] = {"SUCCEEDED", "RUNNING", "FAILED", "SUCCEEDED", "WAITING", "EARLY_STOPPED"};
        const char *status = st[i % 6];
        int has = strcmp(status, "SUCCEEDED") == 0;
        hist_add(&odd, i % 7 == 3 ? -1 : i, cJSON_Duplicate(h.params[i], 1), has, h.items[i].value, status);
    }
    for (int k = 20; k < N; k += 7) {
        struct hist pre = odd;
        pre.n = k;
        void *fresh = create(ops, args, s, 7);
        p1 = fx_suggest(ops, fresh, k, &pre);
        p2 = fx_suggest(ops, b, k, &pre);
        assert_same_json(p1, p2);
        cJSON_Delete(p1);
        cJSON_Delete(p2);
        ops->destroy(fresh);
    }
    hist_free(&odd);

    /* a negative index is an error */
    cJSON *p = (cJSON *)1;
    struct errbuf e = {{0}};
    struct tuner_history th = {.n = h.n, .items = h.items};
    assert_int_equal(ops->suggest(a, -1, &th, &p, &e), -1);
    assert_null(p);
    assert_non_null(strstr(e.msg, "negative"));

    ops->destroy(a);
    ops->destroy(b);
    ops->destroy(c);
    hist_free(&h);
    ss_free(s);
}

static void test_anneal_determinism(void **state)
{
    (void)state;
    check_determinism(&tuner_anneal, NULL);
    check_determinism(&tuner_anneal, "{\"parallel_optimize\": true}");
}

static void test_evolution_determinism(void **state)
{
    (void)state;
    check_determinism(&tuner_evolution, evo_min);
    check_determinism(&tuner_evolution, "{\"optimize_mode\": \"maximize\", \"population_size\": 5}");
}

/* ---- every search-space type, nested choice ---- */

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
    static const char *const keys[] = {"c", "ri", "u", "qu", "lu", "qlu", "no", "qno", "ln", "qln", "nest"};
    assert_int_equal(cJSON_GetArraySize(p), 11);
    const cJSON *item = p->child;
    for (int i = 0; i < 11; i++, item = item->next)
        assert_string_equal(item->string, keys[i]);  /* search-space order */
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

/* rewards one corner of every parameter, so that there is something to find */
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

/* Every suggestion fits the space, and the algorithm learns: the last 60 results
 * are better on average than the first 20. With check_corners, it also finds the
 * rewarded options: at random "deep"/"a" is 1 in 4, as is c = true (15 of 60).
 * Evolution is not held to that: its population soon descends from a few winners,
 * and a choice then keeps whatever option that lineage had. */
static void check_all_types_run(const struct tuner_ops *ops, const char *args, int check_corners)
{
    struct ss_space *s = parse_space(all_types_space);
    void *t = create(ops, args, s, 11);
    struct hist h = {0};
    int deep_a_late = 0, true_late = 0;
    double early = 0, late = 0;
    for (int i = 0; i < 120; i++) {
        cJSON *p = fx_suggest(ops, t, i, &h);
        check_all_types(p);
        double v = all_types_objective(p);
        if (i < 20)
            early += v / 20;
        if (i >= 60) {
            const cJSON *nest = cJSON_GetObjectItemCaseSensitive(p, "nest");
            const cJSON *inner = cJSON_GetObjectItemCaseSensitive(nest, "inner");
            deep_a_late += inner && cJSON_GetObjectItemCaseSensitive(inner, "z") != NULL;
            true_late += cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "c"));
            late += v / 60;
        }
        hist_add(&h, i, p, 1, v, "SUCCEEDED");
    }
    print_message("%s: mean of the first 20 %.3f, of the last 60 %.3f; of the last 60, deep/a %d, c = true %d\n",
                  ops->name, early, late, deep_a_late, true_late);
    assert_true(late < early);
    if (check_corners) {
        assert_true(deep_a_late >= 30);
        assert_true(true_late >= 30);
    }
    hist_free(&h);
    ops->destroy(t);
    ss_free(s);
}

static void test_all_types(void **state)
{
    (void)state;
    check_all_types_run(&tuner_anneal, NULL, 1);
    check_all_types_run(&tuner_evolution, "{\"optimize_mode\": \"minimize\", \"population_size\": 20}", 0);
}

/* ---- Anneal's rules ---- */

/* Without observations every label draws from the prior exactly as Random does. */
static void test_anneal_prior_is_random(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(mixed_space);
    void *a = create(&tuner_anneal, NULL, s, 5), *r = create(&tuner_random, NULL, s, 5);
    struct hist pending = {0};
    hist_add(&pending, 0, point(1), 0, 0, "RUNNING");
    hist_add(&pending, 1, point(2), 0, 0, "FAILED");
    for (int k = 0; k < 10; k++) {
        cJSON *pa = fx_suggest(&tuner_anneal, a, k, k % 2 ? &pending : NULL), *pr = fx_suggest(&tuner_random, r, k, NULL);
        assert_same_json(pa, pr);
        cJSON_Delete(pa);
        cJSON_Delete(pr);
    }
    hist_free(&pending);
    tuner_anneal.destroy(a);
    tuner_random.destroy(r);
    ss_free(s);
}

/* 30 results of |x - 7| on [0, 10]: the window is 10 / (1 + 30 * 0.1) = 2.5 wide
 * around one of the best trials, so suggestions stay near 7. maximize flips it. */
static void test_anneal_neighbourhood(void **state)
{
    (void)state;
    struct ss_space *s = parse_space("{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 10]}}");
    struct hist h = {0};
    for (int i = 0; i < 30; i++) {
        double x = fmod(i * 3.7 + 0.35, 10);
        hist_add(&h, i, point(x), 1, fabs(x - 7), "SUCCEEDED");
    }
    void *mn = create(&tuner_anneal, NULL, s, 2);
    void *mx = create(&tuner_anneal, "{\"optimize_mode\": \"maximize\"}", s, 2);
    int near = 0, far = 0;
    for (int k = 30; k < 80; k++) {
        cJSON *a = fx_suggest(&tuner_anneal, mn, k, &h), *b = fx_suggest(&tuner_anneal, mx, k, &h);
        double xa = num(a, "x"), xb = num(b, "x");
        assert_true(xa >= 0 && xa <= 10 && xb >= 0 && xb <= 10);
        near += fabs(xa - 7) < 2;
        far += fabs(xb - 7) > 4;  /* the worst results are at 0 */
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    assert_true(near >= 45);
    assert_true(far >= 45);
    tuner_anneal.destroy(mn);
    tuner_anneal.destroy(mx);
    hist_free(&h);
    ss_free(s);
}

/* Liar history: 30 results of f(x) = x for x in [0, 5), then 4 trials still
 * pending at 8.6 .. 8.9, where nothing has been tried. */
static int near_pending(const char *args, int n_results)
{
    struct ss_space *s = parse_space("{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 10]}}");
    struct hist h = {0};
    for (int i = 0; i < n_results; i++) {
        double x = fmod(i * 1.7 + 0.2, 5);
        hist_add(&h, i, point(x), 1, x, "SUCCEEDED");
    }
    for (int i = 0; i < 4; i++)
        hist_add(&h, n_results + i, point(8.6 + 0.1 * i), 0, 0, "RUNNING");
    void *t = create(&tuner_anneal, args, s, 1);
    int count = 0;
    for (int k = 0; k < 40; k++) {
        cJSON *p = fx_suggest(&tuner_anneal, t, h.n + k, &h);
        count += num(p, "x") > 7.5;
        cJSON_Delete(p);
    }
    tuner_anneal.destroy(t);
    hist_free(&h);
    ss_free(s);
    return count;
}

static void test_anneal_constant_liar(void **state)
{
    (void)state;
    int off = near_pending(NULL, 30);
    int min = near_pending("{\"parallel_optimize\": true}", 30);  /* "min" is the default */
    int max = near_pending("{\"parallel_optimize\": true, \"constant_liar_type\": \"max\"}", 30);
    int mean = near_pending("{\"parallel_optimize\": true, \"constant_liar_type\": \"mean\"}", 30);
    /* NNI lies only once more than 20 parameters were generated */
    int early = near_pending("{\"parallel_optimize\": true}", 15);
    /* maximizing, "min" is the worst result */
    int min_max = near_pending("{\"parallel_optimize\": true, \"optimize_mode\": \"maximize\"}", 30);
    print_message("near pending of 40: off %d, min %d, max %d, mean %d, early %d, min/maximize %d\n", off, min, max,
                  mean, early, min_max);
    assert_true(min >= 10);
    assert_true(off <= 3 && max <= 3 && mean <= 3 && early <= 3);
    assert_true(min_max <= 3);
}

/* A suggestion equal to an earlier trial is replaced by a random draw: around a
 * parent at 50000 of randint [0, 100000) Anneal would keep it three times in four. */
static void test_anneal_no_repeat(void **state)
{
    (void)state;
    struct ss_space *s = parse_space("{\"n\": {\"_type\": \"randint\", \"_value\": [0, 100000]}}");
    struct hist h = {0};
    for (int i = 0; i < 30; i++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "n", i == 0 ? 50000 : 90000 + i);
        hist_add(&h, i, p, 1, i == 0 ? 0 : 10, "SUCCEEDED");
    }
    void *t = create(&tuner_anneal, NULL, s, 3);
    int repeats = 0;
    for (int k = 30; k < 60; k++) {
        cJSON *p = fx_suggest(&tuner_anneal, t, k, &h);
        double n = num(p, "n");
        repeats += n == 50000 || (n > 90000 && n < 90030);
        cJSON_Delete(p);
    }
    assert_int_equal(repeats, 0);
    tuner_anneal.destroy(t);
    hist_free(&h);
    ss_free(s);
}

/* A label is annealed from the trials that chose its branch only. */
static void test_anneal_nested_branches(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(
        "{\"m\": {\"_type\": \"choice\", \"_value\": ["
        "  {\"_name\": \"a\", \"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]}},"
        "  {\"_name\": \"b\", \"x\": {\"_type\": \"uniform\", \"_value\": [10, 11]}}]}}");
    struct hist h = {0};
    for (int i = 0; i < 40; i++) {
        int b = i % 2;
        double x = b ? 10 + (i * 0.37 - floor(i * 0.37)) : (i * 0.61 - floor(i * 0.61));
        cJSON *p = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(p, "m");
        cJSON_AddStringToObject(m, "_name", b ? "b" : "a");
        cJSON_AddNumberToObject(m, "x", x);
        hist_add(&h, i, p, 1, b ? fabs(x - 10.2) : 5 + x, "SUCCEEDED");
    }
    void *t = create(&tuner_anneal, NULL, s, 5);
    int in_b = 0, near = 0;
    for (int k = 40; k < 80; k++) {
        cJSON *p = fx_suggest(&tuner_anneal, t, k, &h);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(p, "m");
        const char *name = cJSON_GetObjectItemCaseSensitive(m, "_name")->valuestring;
        double x = num(m, "x");
        if (strcmp(name, "b") == 0) {
            assert_true(x >= 10 && x <= 11);
            in_b++;
            near += fabs(x - 10.2) < 0.3;
        } else {
            assert_true(x >= 0 && x <= 1);
        }
        cJSON_Delete(p);
    }
    assert_true(in_b >= 30);
    assert_true(near >= in_b * 3 / 4);
    tuner_anneal.destroy(t);
    hist_free(&h);
    ss_free(s);
}

/* ---- Evolution's rules ---- */

static const char xyz_space[] =
    "{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]}, \"y\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
    " \"z\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}";

/* keys of the flat space on which a and b differ */
static int n_differ(const cJSON *a, const cJSON *b)
{
    int d = 0;
    for (const cJSON *it = a->child; it; it = it->next)
        d += !cJSON_Compare(it, cJSON_GetObjectItemCaseSensitive(b, it->string), 1);
    return d;
}

static int same_but_one(const cJSON *child, const cJSON *parent)
{
    return n_differ(child, parent) <= 1;
}

/* The first population_size suggestions are the Random tuner's draws; every later
 * one is a trial with a result with (at most) one parameter redrawn. */
static void test_evolution_population_then_mutation(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(xyz_space);
    void *t = create(&tuner_evolution, "{\"optimize_mode\": \"minimize\", \"population_size\": 6}", s, 4);
    void *r = create(&tuner_random, NULL, s, 4);
    struct hist h = {0};
    for (int i = 0; i < 40; i++) {
        cJSON *p = fx_suggest(&tuner_evolution, t, i, &h);
        if (i < 6) {
            cJSON *pr = fx_suggest(&tuner_random, r, i, NULL);
            assert_same_json(p, pr);
            cJSON_Delete(pr);
        } else {
            int found = 0;
            for (int j = 0; j < h.n && !found; j++)
                found = n_differ(p, h.params[j]) == 1;
            assert_true(found);
        }
        hist_add(&h, i, p, 1, num(p, "x") + num(p, "y") + num(p, "z"), "SUCCEEDED");
    }
    hist_free(&h);
    tuner_evolution.destroy(t);
    tuner_random.destroy(r);
    ss_free(s);
}

/* The tournament keeps the better of two and removes the worse from the population:
 * with population_size 2 (trials 0 and 1), trial 1 wins at index 2 and trial 0
 * leaves; trial 2 is worse than 1, so 1 wins again at 3 and 2 leaves; trial 3 is the
 * best, so index 4 is a child of 3. */
static void test_evolution_tournament(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(xyz_space);
    for (int mode = 0; mode < 2; mode++)
        for (uint64_t seed = 0; seed < 10; seed++) {
            const char *args = mode ? "{\"optimize_mode\": \"maximize\", \"population_size\": 2}"
                                    : "{\"optimize_mode\": \"minimize\", \"population_size\": 2}";
            double sign = mode ? 1 : -1;  /* rewards are values when maximizing */
            void *t = create(&tuner_evolution, args, s, seed);
            struct hist h = {0};
            static const double reward[] = {1, 5, 0, 10};
            int parent_of[] = {-1, -1, 1, 1, 3};
            for (int i = 0; i < 5; i++) {
                cJSON *p = fx_suggest(&tuner_evolution, t, i, &h);
                if (parent_of[i] >= 0)
                    assert_true(same_but_one(p, h.params[parent_of[i]]));
                hist_add(&h, i, p, 1, i < 4 ? sign * reward[i] : 0, "SUCCEEDED");
            }
            hist_free(&h);
            tuner_evolution.destroy(t);
        }
    ss_free(s);
}

/* A failed trial gives a new random individual (NNI's trial_end); with nothing in
 * the population yet, a random draw too (NNI would wait). */
static void test_evolution_failures_and_empty_population(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(xyz_space);
    const char *args = "{\"optimize_mode\": \"maximize\", \"population_size\": 2}";
    void *t = create(&tuner_evolution, args, s, 9), *r = create(&tuner_random, NULL, s, 9);
    struct hist h = {0};
    for (int i = 0; i < 2; i++)
        hist_add(&h, i, fx_suggest(&tuner_evolution, t, i, &h), 0, 0, "RUNNING");
    cJSON *p = fx_suggest(&tuner_evolution, t, 2, &h), *pr = fx_suggest(&tuner_random, r, 2, NULL);
    assert_same_json(p, pr);  /* nobody has a result yet */
    cJSON_Delete(pr);
    hist_add(&h, 2, p, 0, 0, "RUNNING");
    /* now 0 and 1 succeed and the tournament child 2 fails */
    h.items[0] = (struct tuner_result){.parameter_id = 0, .parameters = h.params[0], .has_value = 1, .value = 3,
                                         .status = "SUCCEEDED"};
    h.items[1] = (struct tuner_result){.parameter_id = 1, .parameters = h.params[1], .has_value = 1, .value = 4,
                                         .status = "SUCCEEDED"};
    h.items[2].status = "FAILED";
    p = fx_suggest(&tuner_evolution, t, 3, &h);
    pr = fx_suggest(&tuner_random, r, 3, NULL);
    assert_same_json(p, pr);  /* the failure is replaced by a random individual */
    cJSON_Delete(pr);
    hist_add(&h, 3, p, 1, 1, "SUCCEEDED");
    /* then tournaments again; USER_CANCELED and EARLY_STOPPED count as failures, a
     * SUCCEEDED trial without result does not */
    p = fx_suggest(&tuner_evolution, t, 4, &h);
    pr = fx_suggest(&tuner_random, r, 4, NULL);
    assert_false(cJSON_Compare(p, pr, 1));
    cJSON_Delete(pr);
    hist_add(&h, 4, p, 0, 0, "SUCCEEDED");
    p = fx_suggest(&tuner_evolution, t, 5, &h);
    pr = fx_suggest(&tuner_random, r, 5, NULL);
    assert_false(cJSON_Compare(p, pr, 1));
    cJSON_Delete(pr);
    hist_add(&h, 5, p, 0, 0, "EARLY_STOPPED");
    p = fx_suggest(&tuner_evolution, t, 6, &h);
    pr = fx_suggest(&tuner_random, r, 6, NULL);
    assert_same_json(p, pr);
    cJSON_Delete(p);
    cJSON_Delete(pr);
    hist_free(&h);
    tuner_evolution.destroy(t);
    tuner_random.destroy(r);
    ss_free(s);
}

/* Mutating a parameter inside a chosen option redraws it and keeps the option
 * (NNI's copy would give back the parent); mutating the choice redraws the option
 * with fresh sub-parameters. */
static void test_evolution_nested_mutation(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(
        "{\"m\": {\"_type\": \"choice\", \"_value\": ["
        "  {\"_name\": \"a\", \"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]}},"
        "  {\"_name\": \"b\", \"y\": {\"_type\": \"uniform\", \"_value\": [10, 11]},"
        "                \"n\": {\"_type\": \"randint\", \"_value\": [0, 3]}}]},"
        " \"k\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}");
    int sub_only = 0, option = 0, top = 0;
    for (uint64_t seed = 0; seed < 60; seed++) {
        void *t = create(&tuner_evolution, "{\"optimize_mode\": \"maximize\", \"population_size\": 1}", s, seed);
        struct hist h = {0};
        hist_add(&h, 0, fx_suggest(&tuner_evolution, t, 0, &h), 1, 1, "SUCCEEDED");
        cJSON *p = fx_suggest(&tuner_evolution, t, 1, &h);
        const cJSON *parent = h.params[0];
        const cJSON *pm = cJSON_GetObjectItemCaseSensitive(parent, "m");
        const cJSON *cm = cJSON_GetObjectItemCaseSensitive(p, "m");
        const char *pname = cJSON_GetObjectItemCaseSensitive(pm, "_name")->valuestring;
        const char *cname = cJSON_GetObjectItemCaseSensitive(cm, "_name")->valuestring;
        assert_int_equal(cJSON_GetArraySize(cm), strcmp(cname, "a") == 0 ? 2 : 3);
        int same_k = num(p, "k") == num(parent, "k");
        if (!same_k) {
            top++;
            assert_true(cJSON_Compare(pm, cm, 1));
        } else if (strcmp(pname, cname) == 0 && n_differ(cm, pm) == 1) {
            sub_only++;  /* mostly a sub-parameter redrawn (or the option drawn again) */
        } else {
            option++;  /* the choice redrawn, or a randint redrawn to its old value */
        }
        cJSON_Delete(p);
        hist_free(&h);
        tuner_evolution.destroy(t);
    }
    print_message("nested mutations of 60: k %d, inside the option %d, the option %d\n", top, sub_only, option);
    assert_true(top > 5 && sub_only > 5 && option > 5);
    ss_free(s);
}

/* ---- quality ---- */

/* Anneal and Evolution each beat Random's median on branin at budget 60 over seeds
 * 0..4 (bench/tuner_quality.c has the figures over more seeds and functions). */
static void test_quality_smoke(void **state)
{
    (void)state;
    struct ss_space *s = parse_space(branin_space);
    const struct tuner_ops *ops[3] = {&tuner_random, &tuner_anneal, &tuner_evolution};
    const char *args[3] = {NULL, NULL, evo_min};
    double median[3];
    for (int k = 0; k < 3; k++) {
        double best[5];
        for (int seed = 0; seed < 5; seed++) {
            void *t = create(ops[k], args[k], s, (uint64_t)seed);
            struct hist h = {0};
            best[seed] = run_sequential(ops[k], t, &h, 60, branin_params);
            hist_free(&h);
            ops[k]->destroy(t);
        }
        qsort(best, 5, sizeof best[0], cmp_double);
        median[k] = best[2];
    }
    print_message("branin @60, median of 5: Random %.4f, Anneal %.4f, Evolution %.4f\n", median[0], median[1],
                  median[2]);
    assert_true(median[1] < median[0]);
    assert_true(median[2] < median[0]);
    ss_free(s);
}

/* ---- Medianstop ---- */

struct series_set {
    struct assessor_series s[8];
    int n;
};

static void add_series(struct series_set *set, const double *v, int n, int succeeded)
{
    set->s[set->n++] = (struct assessor_series){.values = v, .n = n, .succeeded = succeeded};
}

static enum assess_result judge(const struct assessor_ops *ops, void *st, const double *v, int n,
                                const struct series_set *others)
{
    struct assessor_input in = {.values = v, .n = n, .others = others ? others->s : NULL,
                                .n_others = others ? others->n : 0};
    return ops->assess(st, &in);
}

static void test_medianstop(void **state)
{
    (void)state;
    /* dyadic values, so that averages and ties are exact */
    static const double A[] = {0.5, 0.75, 0.875}, B[] = {0.25, 0.25, 0.5}, C[] = {0.75, 1, 1};
    static const double D[] = {1, 1, 1}, F[] = {1, 1};
    struct series_set others = {0};
    add_series(&others, A, 3, 1);
    add_series(&others, B, 3, 1);
    add_series(&others, C, 3, 1);
    add_series(&others, D, 3, 0);  /* failed or still running: never compared */
    const struct assessor_ops *ms = &assessor_medianstop;

    /* maximize (the default): running averages at step 2 are 0.25, 0.625, 0.875, the
     * median sorted[(3 - 1) / 2] = 0.625; Bad only when the best so far is below */
    void *mx = assessor_new(ms, NULL);
    assert_int_equal(judge(ms, mx, (const double[]){0.25, 0.5}, 2, &others), ASSESS_BAD);
    assert_int_equal(judge(ms, mx, (const double[]){0.75, 0.125}, 2, &others), ASSESS_GOOD);  /* best so far */
    assert_int_equal(judge(ms, mx, (const double[]){0.625, 0.25}, 2, &others), ASSESS_GOOD);  /* not strictly */
    /* step 1: averages 0.25, 0.5, 0.75 */
    assert_int_equal(judge(ms, mx, (const double[]){0.375}, 1, &others), ASSESS_BAD);
    /* completed trials count at the steps they reached: F's two results make the
     * step-2 median 0.875 (of 0.25, 0.625, 0.875, 1, 1), and F is out at step 3
     * (0.333, 0.708, 0.917 -> 0.708) */
    struct series_set more = others;
    add_series(&more, F, 2, 1);
    add_series(&more, F, 2, 1);
    assert_int_equal(judge(ms, mx, (const double[]){0.75, 0.8125}, 2, &more), ASSESS_BAD);
    assert_int_equal(judge(ms, mx, (const double[]){0.75, 0.8125, 0.125}, 3, &more), ASSESS_GOOD);
    /* no comparable trial: Good; nothing reported yet: Good */
    assert_int_equal(judge(ms, mx, (const double[]){0.125, 0.125, 0.125, 0.125}, 4, &others), ASSESS_GOOD);
    assert_int_equal(judge(ms, mx, (const double[]){0.125}, 1, NULL), ASSESS_GOOD);
    assert_int_equal(judge(ms, mx, NULL, 0, &others), ASSESS_GOOD);

    /* an even count: maximize takes the lower middle, minimize the upper */
    struct series_set two = {0};
    add_series(&two, A, 3, 1);
    add_series(&two, B, 3, 1);  /* averages at step 2: 0.25, 0.625 */
    assert_int_equal(judge(ms, mx, (const double[]){0.375, 0.25}, 2, &two), ASSESS_GOOD);
    assert_int_equal(judge(ms, mx, (const double[]){0.125, 0.1875}, 2, &two), ASSESS_BAD);
    void *mn = assessor_new(ms, "{\"optimize_mode\": \"minimize\"}");
    assert_int_equal(judge(ms, mn, (const double[]){0.75, 0.5}, 2, &two), ASSESS_GOOD);
    assert_int_equal(judge(ms, mn, (const double[]){0.75, 0.6875}, 2, &two), ASSESS_BAD);
    /* minimize with three: median sorted[3 / 2] = 0.625 */
    assert_int_equal(judge(ms, mn, (const double[]){0.6875, 0.75}, 2, &others), ASSESS_BAD);
    assert_int_equal(judge(ms, mn, (const double[]){0.625, 0.75}, 2, &others), ASSESS_GOOD);
    assert_int_equal(judge(ms, mn, (const double[]){0.875, 0.375}, 2, &others), ASSESS_GOOD);

    /* running averages, not last or best values: one trial 0.875 then 0.125 */
    static const double G[] = {0.875, 0.125};
    struct series_set avg = {0};
    add_series(&avg, G, 2, 1);
    assert_int_equal(judge(ms, mx, (const double[]){0.375, 0.4375}, 2, &avg), ASSESS_BAD);
    assert_int_equal(judge(ms, mx, (const double[]){0.25, 0.625}, 2, &avg), ASSESS_GOOD);

    /* start_step: Good while fewer results than start_step */
    void *late = assessor_new(ms, "{\"start_step\": 3}");
    assert_int_equal(judge(ms, late, (const double[]){0.125, 0.125}, 2, &others), ASSESS_GOOD);
    assert_int_equal(judge(ms, late, (const double[]){0.125, 0.125, 0.125}, 3, &others), ASSESS_BAD);
    ms->destroy(mx);
    ms->destroy(mn);
    ms->destroy(late);
}

/* ---- Curvefitting ---- */

/* a saturating curve with a little deterministic noise */
static void curve(double *y, int n, double top, double amp, double rate, double noise)
{
    for (int i = 0; i < n; i++)
        y[i] = top - amp * exp(-rate * (i + 1)) + noise * (((i * 7919) % 11) - 5) / 5.0;
}

static void test_curve_predict(void **state)
{
    (void)state;
    double y[200], pred;
    int n_eff;
    /* a power-law curve the families can follow: the value at epoch 20 */
    for (int i = 0; i < 14; i++)
        y[i] = 0.95 - 0.5 * pow(i + 1, -0.8) + 0.003 * (((i * 7919) % 11) - 5) / 5.0;
    assert_int_equal(curve_predict(y, 14, 20, &pred, &n_eff), 1);
    print_message("power-law curve, 14 epochs: %d families, %.4f at epoch 20 (true %.4f)\n", n_eff, pred,
                  0.95 - 0.5 * pow(20, -0.8));
    assert_true(n_eff >= 4);
    assert_true(fabs(pred - (0.95 - 0.5 * pow(20, -0.8))) < 0.02);
    /* a converged exponential curve */
    curve(y, 10, 0.5, 0.4, 0.7, 0.004);
    assert_int_equal(curve_predict(y, 10, 20, &pred, &n_eff), 1);
    assert_true(fabs(pred - 0.5) < 0.02);
    /* a flat curve: every family fits it exactly, and the spread NNI's filter looks
     * at is rounding noise, so whether a prediction comes out is arbitrary (in NNI
     * too); when one does, it is the plateau */
    for (int i = 0; i < 10; i++)
        y[i] = 0.7;
    if (curve_predict(y, 10, 20, &pred, &n_eff))
        assert_true(fabs(pred - 0.7) < 1e-9);
    /* too little to go on, non-finite values */
    assert_int_equal(curve_predict(y, 0, 20, &pred, NULL), 0);
    y[3] = NAN;
    assert_int_equal(curve_predict(y, 10, 20, &pred, NULL), 0);
    /* a long series stays cheap enough to run at every result */
    for (int i = 0; i < 200; i++)
        y[i] = 0.9 - 0.6 * pow(i + 1, -0.5) + 0.002 * (((i * 7919) % 11) - 5) / 5.0;
    int64_t t0 = mono_us();
    curve_predict(y, 200, 300, &pred, NULL);
    print_message("200 epochs: %.1f ms\n", (mono_us() - t0) / 1000.0);
}

static void test_curvefitting(void **state)
{
    (void)state;
    const struct assessor_ops *cf = &assessor_curvefitting;
    void *st = assessor_new(cf, "{\"epoch_num\": 20}");
    double bad[20], good[20];
    curve(bad, 20, 0.5, 0.4, 0.7, 0.004);  /* converges at 0.5 */
    for (int i = 0; i < 20; i++)
        good[i] = 0.95 - 0.5 * pow(i + 1, -0.8) + 0.003 * (((i * 7919) % 11) - 5) / 5.0;  /* 0.905 at 20 */
    static const double best_run[] = {0.3, 0.6, 0.8, 0.9};
    static const double failed_run[] = {0.5, 0.99};
    struct series_set others = {0};
    add_series(&others, best_run, 4, 1);
    add_series(&others, failed_run, 2, 0);

    /* before any trial has succeeded everything is Good */
    struct series_set none = {0};
    add_series(&none, failed_run, 2, 0);
    assert_int_equal(judge(cf, st, bad, 10, &none), ASSESS_GOOD);
    assert_int_equal(judge(cf, st, bad, 10, NULL), ASSESS_GOOD);
    /* best 0.9 (the succeeded trial's last value): 0.5 <= 0.9 * 0.95 is Bad */
    assert_int_equal(judge(cf, st, bad, 10, &others), ASSESS_BAD);
    assert_int_equal(judge(cf, st, bad, 5, &others), ASSESS_GOOD);  /* before start_step 6 */
    /* the power-law curve heads for 0.905 > 0.855 */
    assert_int_equal(judge(cf, st, good, 14, &others), ASSESS_GOOD);
    /* with a low enough threshold the converged curve is good enough */
    void *lenient = assessor_new(cf, "{\"epoch_num\": 20, \"threshold\": 0.5}");
    assert_int_equal(judge(cf, lenient, bad, 10, &others), ASSESS_GOOD);
    /* a failed trial's results never set the bar: best 0.4 here */
    static const double low_run[] = {0.2, 0.4};
    struct series_set low = {0};
    add_series(&low, low_run, 2, 1);
    add_series(&low, failed_run, 2, 0);
    assert_int_equal(judge(cf, st, bad, 10, &low), ASSESS_GOOD);
    /* judged at start_step, then every gap results */
    void *gapped = assessor_new(cf, "{\"epoch_num\": 20, \"start_step\": 9, \"gap\": 3}");
    for (int n = 7; n <= 18; n++) {
        int judged = n >= 9 && (n - 9) % 3 == 0;
        assert_int_equal(judge(cf, gapped, bad, n, &others), judged ? ASSESS_BAD : ASSESS_GOOD);
    }
    cf->destroy(st);
    cf->destroy(lenient);
    cf->destroy(gapped);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_tuner_class_args),
        cmocka_unit_test(test_assessor_class_args),
        cmocka_unit_test(test_anneal_determinism),
        cmocka_unit_test(test_evolution_determinism),
        cmocka_unit_test(test_all_types),
        cmocka_unit_test(test_anneal_prior_is_random),
        cmocka_unit_test(test_anneal_neighbourhood),
        cmocka_unit_test(test_anneal_constant_liar),
        cmocka_unit_test(test_anneal_no_repeat),
        cmocka_unit_test(test_anneal_nested_branches),
        cmocka_unit_test(test_evolution_population_then_mutation),
        cmocka_unit_test(test_evolution_tournament),
        cmocka_unit_test(test_evolution_failures_and_empty_population),
        cmocka_unit_test(test_evolution_nested_mutation),
        cmocka_unit_test(test_quality_smoke),
        cmocka_unit_test(test_medianstop),
        cmocka_unit_test(test_curve_predict),
        cmocka_unit_test(test_curvefitting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
