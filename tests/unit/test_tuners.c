/* test_tuners.c: search-space validation, NNI sampling semantics, the random
 * streams, and the built-in tuners (Random, GridSearch, Batch) with their registry.
 * Expected grids were computed by hand from NNI's gridsearch_tuner.py (v3) and
 * cross-checked against a line-by-line Python transcription of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuners/internal.h"

/* ---- helpers ---- */

static struct ss_space *parse_ok(const char *text)
{
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    struct ss_space *s = NULL;
    struct errbuf e = {{0}};
    char path[128];
    int rc = ss_parse(j, &s, path, sizeof path, &e);
    if (rc != 0)
        print_error("unexpected parse error: %s\n", e.msg);
    assert_int_equal(rc, 0);
    cJSON_Delete(j);
    return s;
}

static char *print(const cJSON *j)
{
    char *c = cJSON_PrintUnformatted(j);
    char *s = xstrdup(c);
    cJSON_free(c);
    return s;
}

static void *tuner_new(const char *name, const char *class_args, const struct ss_space *s, uint64_t seed)
{
    const struct tuner_ops *t = tuner_find(name);
    assert_non_null(t);
    cJSON *args = class_args ? cJSON_Parse(class_args) : NULL;
    void *st = NULL;
    struct errbuf e = {{0}};
    int rc = t->create(args, s, seed, &st, &e);
    if (rc != 0)
        print_error("unexpected create error: %s\n", e.msg);
    assert_int_equal(rc, 0);
    cJSON_Delete(args);
    return st;
}

/* Suggestion `index` as compact JSON text, or NULL when the tuner has no more. */
static char *suggest_text(const char *name, void *st, int64_t index)
{
    const struct tuner_ops *t = tuner_find(name);
    cJSON *p = NULL;
    struct errbuf e = {{0}};
    int rc = t->suggest(st, index, NULL, &p, &e);
    assert_true(rc == 0 || rc == 1);
    if (rc == 0) {
        assert_null(p);
        return NULL;
    }
    char *s = print(p);
    cJSON_Delete(p);
    return s;
}

static double num(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* ---- validation ---- */

struct bad_space {
    const char *json;
    const char *path;     /* expected errpath */
    const char *message;  /* expected substring of the message */
};

static const struct bad_space bad_spaces[] = {
    {"[1, 2]", "", "must be a JSON object"},
    {"\"lr\"", "", "must be a JSON object"},
    {"{\"lr\": 3}", "lr", "must be an object {\"_type\""},
    {"{\"lr\": [0, 1]}", "lr", "got a list"},
    {"{\"lr\": {\"_value\": [0, 1]}}", "lr", "missing \"_type\""},
    {"{\"lr\": {\"_type\": 1, \"_value\": [0, 1]}}", "lr", "\"_type\" must be a string"},
    {"{\"lr\": {\"_type\": \"unifrom\", \"_value\": [0, 1]}}", "lr", "unknown _type \"unifrom\""},
    {"{\"lr\": {\"_type\": \"Uniform\", \"_value\": [0, 1]}}", "lr", "did you mean \"uniform\""},
    {"{\"lr\": {\"_type\": \"layer_choice\", \"_value\": [0, 1]}}", "lr", "expected choice, randint"},
    {"{\"lr\": {\"_type\": \"uniform\"}}", "lr", "missing \"_value\""},
    {"{\"lr\": {\"_type\": \"uniform\", \"_value\": 1}}", "lr", "\"_value\" must be a list [low, high]"},
    {"{\"lr\": {\"_type\": \"uniform\", \"_value\": [0, 1, 2]}}", "lr", "uniform takes exactly 2 values"},
    {"{\"lr\": {\"_type\": \"quniform\", \"_value\": [0, 1]}}", "lr", "quniform takes exactly 3 values [low, high, q]"},
    {"{\"lr\": {\"_type\": \"qnormal\", \"_value\": [0, 1]}}", "lr", "qnormal takes exactly 3 values [mu, sigma, q]"},
    {"{\"lr\": {\"_type\": \"normal\", \"_value\": [0]}}", "lr", "normal takes exactly 2 values [mu, sigma] in _value, got 1"},
    {"{\"lr\": {\"_type\": \"uniform\", \"_value\": [0, \"1\"]}}", "lr", "_value[1] of uniform must be a number, got a string"},
    {"{\"lr\": {\"_type\": \"uniform\", \"_value\": [true, 1]}}", "lr", "_value[0] of uniform must be a number, got a boolean"},
    {"{\"lr\": {\"_type\": \"uniform\", \"_value\": [0, 1e999]}}", "lr", "must be a finite number"},
    {"{\"lr\": {\"_type\": \"uniform\", \"_value\": [1, 0]}}", "lr", "uniform needs low < high"},
    {"{\"lr\": {\"_type\": \"quniform\", \"_value\": [2, 2, 1]}}", "lr", "quniform needs low < high"},
    {"{\"lr\": {\"_type\": \"loguniform\", \"_value\": [0, 1]}}", "lr", "loguniform needs low > 0"},
    {"{\"lr\": {\"_type\": \"qloguniform\", \"_value\": [-1, 10, 1]}}", "lr", "qloguniform needs low > 0"},
    {"{\"lr\": {\"_type\": \"uniform\", \"_value\": [-1.7e308, 1.7e308]}}", "lr",
     "uniform range [-1.7e+308, 1.7e+308] is too wide: 4 * (high - low) is not a finite number"},
    {"{\"lr\": {\"_type\": \"quniform\", \"_value\": [0, 1e308, 1]}}", "lr", "quniform range [0, 1e+308] is too wide"},
    {"{\"lr\": {\"_type\": \"uniform\", \"_value\": [0.1, 0.1]}}", "lr", "uniform needs low < high, got [0.1, 0.1]"},
    {"{\"lr\": {\"_type\": \"normal\", \"_value\": [1e308, 1e307]}}", "lr",
     "normal: mu = 1e+308 and sigma = 1e+307 are too large"},
    {"{\"lr\": {\"_type\": \"qnormal\", \"_value\": [0, 1.2e307, 1]}}", "lr", "qnormal: mu = 0 and sigma = 1.2e+307"},
    {"{\"lr\": {\"_type\": \"lognormal\", \"_value\": [700, 10]}}", "lr",
     "lognormal: mu = 700 and sigma = 10 are too large (exp(mu + 16 sigma) is beyond a double"},
    {"{\"lr\": {\"_type\": \"qlognormal\", \"_value\": [0, 44.4, 1]}}", "lr", "qlognormal: mu = 0 and sigma = 44.4"},
    {"{\"lr\": {\"_type\": \"normal\", \"_value\": [0, 0]}}", "lr", "normal needs sigma > 0"},
    {"{\"lr\": {\"_type\": \"lognormal\", \"_value\": [0, -1]}}", "lr", "lognormal needs sigma > 0"},
    {"{\"lr\": {\"_type\": \"quniform\", \"_value\": [0, 10, 0]}}", "lr", "quniform needs q > 0"},
    {"{\"lr\": {\"_type\": \"qlognormal\", \"_value\": [0, 1, -2]}}", "lr", "qlognormal needs q > 0"},
    {"{\"n\": {\"_type\": \"randint\", \"_value\": [0, 2.5]}}", "n", "randint bounds must be integers"},
    {"{\"n\": {\"_type\": \"randint\", \"_value\": [3, 3]}}", "n", "randint needs lower < upper (the upper bound is exclusive)"},
    {"{\"n\": {\"_type\": \"randint\", \"_value\": [5, 1]}}", "n", "randint needs lower < upper"},
    {"{\"n\": {\"_type\": \"randint\", \"_value\": [0, 1, 2]}}", "n", "randint takes exactly 2 values"},
    {"{\"n\": {\"_type\": \"randint\", \"_value\": [0, 1e12]}}", "n", "has more than"},
    {"{\"c\": {\"_type\": \"choice\", \"_value\": []}}", "c", "choice needs at least one option"},
    {"{\"c\": {\"_type\": \"choice\", \"_value\": {\"a\": 1}}}", "c", "\"_value\" must be a list"},
    {"{\"layer\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"a\"}, 3]}}", "layer",
     "option 0 is an object with \"_name\" (a nested space) but option 1 is not"},
    {"{\"layer\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"a\"}, {\"_name\": 2}]}}", "layer[1]",
     "\"_name\" must be a string, got a number"},
    {"{\"layer\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"a\"}, {\"_name\": \"conv\", \"kernel\": "
     "{\"_type\": \"randint\", \"_value\": [3, 1]}}]}}",
     "layer[1].kernel", "randint needs lower < upper"},
    {"{\"layer\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"conv\", \"kernel\": 3}]}}", "layer[0].kernel",
     "must be an object"},
    {"{\"a\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"x\", \"b\": {\"_type\": \"choice\", \"_value\": "
     "[{\"_name\": \"y\"}, {\"_name\": \"z\", \"c\": {\"_type\": \"loguniform\", \"_value\": [-1, 1]}}]}}]}}",
     "a[0].b[1].c", "loguniform needs low > 0"},
    {"{\"lr\": {\"_type\": \"uniform\", \"_value\": [0, 1]}, \"lr\": {\"_type\": \"uniform\", \"_value\": [0, 2]}}",
     "lr", "duplicate key"},
    {"{\"ok\": {\"_type\": \"uniform\", \"_value\": [0, 1]}, \"bad\": {\"_type\": \"uniform\", \"_value\": []}}", "bad",
     "uniform takes exactly 2 values"},
};

static void test_validation_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_spaces / sizeof bad_spaces[0]; i++) {
        const struct bad_space *b = &bad_spaces[i];
        cJSON *j = cJSON_Parse(b->json);
        if (!j)
            fail_msg("case %zu: test JSON does not parse: %s", i, b->json);
        struct ss_space *s = (struct ss_space *)0x1;
        struct errbuf e = {{0}};
        char path[128] = "unset";
        int rc = ss_parse(j, &s, path, sizeof path, &e);
        cJSON_Delete(j);
        if (rc != -1 || s != NULL)
            fail_msg("case %zu: %s was accepted", i, b->json);
        if (strcmp(path, b->path) != 0)
            fail_msg("case %zu: errpath \"%s\", expected \"%s\" (%s)", i, path, b->path, e.msg);
        if (!strstr(e.msg, b->message))
            fail_msg("case %zu: message \"%s\" lacks \"%s\"", i, e.msg, b->message);
        /* the message starts with the key path */
        if (*b->path && !str_starts(e.msg, b->path))
            fail_msg("case %zu: message \"%s\" does not start with \"%s\"", i, e.msg, b->path);
    }
    struct ss_space *s = NULL;
    struct errbuf e = {{0}};
    assert_int_equal(ss_parse(NULL, &s, NULL, 0, &e), -1);
    assert_non_null(strstr(e.msg, "not valid JSON"));
}

static void test_parse_valid(void **state)
{
    (void)state;
    struct ss_space *s = parse_ok(
        "{\"lr\": {\"_type\": \"loguniform\", \"_value\": [1e-4, 0.1]},"
        " \"n\": {\"_type\": \"randint\", \"_value\": [-2, 3]},"
        " \"opt\": {\"_type\": \"choice\", \"_value\": [\"sgd\", 1, 2.5, true, null, [1, 2], {\"k\": 1}]},"
        " \"layer\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"pool\"},"
        "   {\"_name\": \"conv\", \"kernel\": {\"_type\": \"choice\", \"_value\": [3, 5]},"
        "    \"act\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"relu\"}, {\"_name\": \"leaky\","
        "      \"slope\": {\"_type\": \"uniform\", \"_value\": [0, 0.3]}}]}}]},"
        " \"q\": {\"_type\": \"qlognormal\", \"_value\": [1, 0.5, 2]}}");
    assert_int_equal(s->n, 5);
    assert_string_equal(s->params[0].name, "lr");
    assert_int_equal(s->params[0].type, SS_LOGUNIFORM);
    assert_true(s->params[0].a == 1e-4 && s->params[0].b == 0.1 && s->params[0].q == 0);
    assert_int_equal(s->params[1].type, SS_RANDINT);
    assert_int_equal(s->params[1].n_choices, 5);
    assert_int_equal(s->params[2].n_choices, 7);
    assert_null(s->params[2].sub);
    const struct ss_param *layer = &s->params[3];
    assert_non_null(layer->sub);
    assert_int_equal(layer->sub[0]->n, 0);
    assert_int_equal(layer->sub[1]->n, 2);
    assert_string_equal(layer->sub[1]->params[0].path, "layer[1].kernel");
    const struct ss_param *act = &layer->sub[1]->params[1];
    assert_string_equal(act->path, "layer[1].act");
    assert_string_equal(act->sub[1]->params[0].path, "layer[1].act[1].slope");
    assert_true(s->params[4].q == 2);
    assert_string_equal(ss_type_name(SS_QLOGNORMAL), "qlognormal");
    ss_free(s);

    /* the source may be freed: the space owns its copy */
    cJSON *j = cJSON_Parse("{\"c\": {\"_type\": \"choice\", \"_value\": [\"x\", \"y\"]}}");
    struct errbuf e;
    assert_int_equal(ss_parse(j, &s, NULL, 0, &e), 0);
    cJSON_Delete(j);
    assert_string_equal(s->params[0].choices[1]->valuestring, "y");
    ss_free(s);
}

static void test_functions_json_spaces(void **state)
{
    (void)state;
    const char *path = TRIALQ_SOURCE_DIR "/bench/functions.json";
    size_t len;
    char *text = read_file(path, &len);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    int count = 0;
    const cJSON *b;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(root, "benchmarks")) {
        const cJSON *space = cJSON_GetObjectItemCaseSensitive(b, "search_space");
        struct ss_space *s;
        struct errbuf e;
        char epath[128];
        if (ss_parse(space, &s, epath, sizeof epath, &e) != 0)
            fail_msg("%s: %s", cJSON_GetObjectItemCaseSensitive(b, "name")->valuestring, e.msg);
        assert_int_equal(s->n, cJSON_GetObjectItemCaseSensitive(b, "dim")->valueint);
        /* GridSearch starts at the middle of every range; Random stays inside them */
        void *g = tuner_new("GridSearch", NULL, s, 0);
        void *r = tuner_new("Random", NULL, s, 7);
        cJSON *first = NULL, *rnd = NULL;
        assert_int_equal(tuner_gridsearch.suggest(g, 0, NULL, &first, &e), 1);
        for (int i = 0; i < s->n; i++) {
            const struct ss_param *p = &s->params[i];
            assert_true(num(first, p->name) == p->a + (p->b - p->a) * 0.5);
        }
        for (int k = 0; k < 200; k++) {
            assert_int_equal(tuner_random.suggest(r, k, NULL, &rnd, &e), 1);
            for (int i = 0; i < s->n; i++) {
                const struct ss_param *p = &s->params[i];
                double v = num(rnd, p->name);
                assert_true(v >= p->a && v <= p->b);
            }
            cJSON_Delete(rnd);
        }
        cJSON_Delete(first);
        tuner_gridsearch.destroy(g);
        tuner_random.destroy(r);
        ss_free(s);
        count++;
    }
    assert_int_equal(count, 3);
    cJSON_Delete(root);
    free(text);
}

/* ---- random streams ---- */

static void test_rng(void **state)
{
    (void)state;
    struct rng a, b, c, d;
    rng_init(&a, 42, 7);
    rng_init(&b, 42, 7);
    rng_init(&c, 42, 8);
    rng_init(&d, 43, 7);
    uint64_t fa = rng_next(&a), fb = rng_next(&b), fc = rng_next(&c), fd = rng_next(&d);
    assert_true(fa == fb);
    assert_true(fa != fc && fa != fd && fc != fd);
    for (int i = 0; i < 1000; i++)
        assert_true(rng_next(&a) == rng_next(&b));
    /* (seed, stream) pairs that differ by swapping do not coincide */
    struct rng e1, e2;
    rng_init(&e1, 1, 0);
    rng_init(&e2, 0, 1);
    assert_true(rng_next(&e1) != rng_next(&e2));

    struct rng r;
    rng_init(&r, 1, 2);
    double sum = 0, sum2 = 0, nsum = 0, nsum2 = 0;
    int counts[7] = {0};
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double u = rng_uniform(&r);
        assert_true(u >= 0.0 && u < 1.0);
        sum += u;
        sum2 += u * u;
        double z = rng_normal(&r);
        assert_true(isfinite(z));
        nsum += z;
        nsum2 += z * z;
        uint64_t k = rng_below(&r, 7);
        assert_true(k < 7);
        counts[k]++;
    }
    assert_true(fabs(sum / n - 0.5) < 0.005);
    assert_true(fabs(sum2 / n - 1.0 / 3) < 0.005);
    assert_true(fabs(nsum / n) < 0.01);
    assert_true(fabs(nsum2 / n - 1.0) < 0.02);
    for (int k = 0; k < 7; k++)
        assert_true(abs(counts[k] - n / 7) < n / 7 / 20);
    assert_true(rng_below(&r, 0) == 0);
    assert_true(rng_below(&r, 1) == 0);
}

/* ---- sampling ---- */

static void test_deformat_rounding(void **state)
{
    (void)state;
    struct ss_space *s = parse_ok("{\"a\": {\"_type\": \"quniform\", \"_value\": [0, 10, 1]},"
                                  " \"b\": {\"_type\": \"qnormal\", \"_value\": [0, 1, 2]},"
                                  " \"c\": {\"_type\": \"qloguniform\", \"_value\": [1, 100, 30]}}");
    const struct ss_param *a = &s->params[0], *b = &s->params[1], *c = &s->params[2];
    /* Python's round(): half to even */
    assert_true(ss_deformat(a, 2.5) == 2);
    assert_true(ss_deformat(a, 3.5) == 4);
    assert_true(ss_deformat(a, 0.5) == 0);
    assert_true(ss_deformat(a, 2.51) == 3);
    /* clip to [low, high] for quniform/qloguniform, none for qnormal */
    assert_true(ss_deformat(a, 10.6) == 10);
    assert_true(ss_deformat(a, -3) == 0);
    assert_true(ss_deformat(b, 5) == 4);   /* round(2.5) = 2 */
    assert_true(ss_deformat(b, 7) == 8);   /* round(3.5) = 4 */
    assert_true(ss_deformat(b, -101) == -100);
    assert_false(signbit(ss_deformat(b, -0.9)));  /* Python's round gives int 0, never -0 */
    /* qloguniform: exp, then round(x/q)*q, then clip */
    assert_true(ss_deformat(c, log(1.2)) == 1);   /* round(0.04)*30 = 0, clipped up to 1 */
    assert_true(ss_deformat(c, log(99)) == 90);   /* round(3.3)*30 */
    assert_true(ss_deformat(c, log(110)) == 100); /* round(3.67)*30 = 120, clipped down to 100 */
    ss_free(s);
}

static void test_sampling_ranges(void **state)
{
    (void)state;
    struct ss_space *s = parse_ok(
        "{\"u\": {\"_type\": \"uniform\", \"_value\": [-2, 3]},"
        " \"qu\": {\"_type\": \"quniform\", \"_value\": [1, 11, 4]},"
        " \"lu\": {\"_type\": \"loguniform\", \"_value\": [0.001, 10]},"
        " \"qlu\": {\"_type\": \"qloguniform\", \"_value\": [1, 1000, 100]},"
        " \"n\": {\"_type\": \"normal\", \"_value\": [5, 2]},"
        " \"qn\": {\"_type\": \"qnormal\", \"_value\": [0, 10, 3]},"
        " \"ln\": {\"_type\": \"lognormal\", \"_value\": [0, 0.5]},"
        " \"qln\": {\"_type\": \"qlognormal\", \"_value\": [2, 1, 5]},"
        " \"ri\": {\"_type\": \"randint\", \"_value\": [-3, 2]},"
        " \"c\": {\"_type\": \"choice\", \"_value\": [\"a\", 7, [1], null]}}");
    const int n = 20000;
    double nsum = 0, nsum2 = 0, lusmall = 0;
    int ri_seen[5] = {0}, c_seen[4] = {0}, qu_low = 0, qu_high = 0, qlu_low = 0;
    for (int i = 0; i < n; i++) {
        struct rng r;
        rng_init(&r, 99, (uint64_t)i);
        cJSON *p = ss_sample(s, &r);
        /* keys in search-space order */
        const cJSON *it = p->child;
        for (int k = 0; k < s->n; k++, it = it->next)
            assert_string_equal(it->string, s->params[k].name);
        assert_null(it);

        double u = num(p, "u");
        assert_true(u >= -2 && u <= 3);
        double qu = num(p, "qu");  /* clip(round(x/4)*4, 1, 11): 1, 4, 8 or 11 */
        assert_true(qu == 1 || qu == 4 || qu == 8 || qu == 11);
        qu_low += qu == 1;
        qu_high += qu == 11;
        double lu = num(p, "lu");
        assert_true(lu >= 0.001 && lu <= 10);
        lusmall += lu < 0.01;  /* log-uniform: a quarter of the draws below 0.01 */
        double qlu = num(p, "qlu");
        assert_true(qlu == 1 || (fmod(qlu, 100) == 0 && qlu >= 100 && qlu <= 1000));
        qlu_low += qlu == 1;
        double nv = num(p, "n");
        nsum += nv;
        nsum2 += (nv - 5) * (nv - 5);
        double qn = num(p, "qn");
        assert_true(fmod(qn, 3) == 0);
        double ln = num(p, "ln");
        assert_true(ln > 0);
        double qln = num(p, "qln");
        assert_true(qln >= 0 && fmod(qln, 5) == 0);
        double ri = num(p, "ri");
        assert_true(ri == floor(ri) && ri >= -3 && ri < 2);
        ri_seen[(int)ri + 3]++;
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "c");
        if (cJSON_IsString(c))
            c_seen[0]++;
        else if (cJSON_IsNumber(c))
            c_seen[1]++;
        else if (cJSON_IsArray(c))
            c_seen[2]++;
        else if (cJSON_IsNull(c))
            c_seen[3]++;
        else
            fail_msg("choice gave something that is not an option");
        cJSON_Delete(p);
    }
    assert_true(fabs(nsum / n - 5) < 0.1);
    assert_true(fabs(sqrt(nsum2 / n) - 2) < 0.1);
    assert_true(fabs(lusmall / n - 0.25) < 0.02);
    assert_true(qu_low > 0 && qu_high > 0);  /* the clip reaches both ends */
    assert_true(qlu_low > 0);
    for (int k = 0; k < 5; k++)
        assert_true(ri_seen[k] > n / 5 / 2);  /* -3..1 all drawn; 2 never */
    for (int k = 0; k < 4; k++)
        assert_true(c_seen[k] > n / 4 / 2);
    ss_free(s);
}

static void test_randint_prints_integers(void **state)
{
    (void)state;
    struct ss_space *s = parse_ok("{\"n\": {\"_type\": \"randint\", \"_value\": [100, 103]}}");
    for (int i = 0; i < 50; i++) {
        struct rng r;
        rng_init(&r, 5, (uint64_t)i);
        cJSON *p = ss_sample(s, &r);
        char *t = print(p);
        assert_true(strcmp(t, "{\"n\":100}") == 0 || strcmp(t, "{\"n\":101}") == 0 ||
                    strcmp(t, "{\"n\":102}") == 0);
        free(t);
        cJSON_Delete(p);
    }
    ss_free(s);
}

static void test_nested_sample_shape(void **state)
{
    (void)state;
    struct ss_space *s = parse_ok(
        "{\"layer\": {\"_type\": \"choice\", \"_value\": ["
        "  {\"_name\": \"conv\", \"kernel\": {\"_type\": \"choice\", \"_value\": [3, 5]},"
        "   \"stride\": {\"_type\": \"randint\", \"_value\": [1, 3]}},"
        "  {\"_name\": \"pool\"},"
        "  {\"_name\": \"fc\", \"units\": {\"_type\": \"qloguniform\", \"_value\": [16, 1024, 16]}}]},"
        " \"lr\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}");
    int seen[3] = {0};
    for (int i = 0; i < 300; i++) {
        struct rng r;
        rng_init(&r, 11, (uint64_t)i);
        cJSON *p = ss_sample(s, &r);
        assert_string_equal(p->child->string, "layer");
        assert_string_equal(p->child->next->string, "lr");
        const cJSON *layer = p->child;
        assert_true(cJSON_IsObject(layer));
        const cJSON *name = layer->child;
        assert_string_equal(name->string, "_name");
        int keys = cJSON_GetArraySize(layer);
        if (strcmp(name->valuestring, "conv") == 0) {
            seen[0]++;
            assert_int_equal(keys, 3);
            assert_string_equal(name->next->string, "kernel");
            assert_string_equal(name->next->next->string, "stride");
            double st = num(layer, "stride");
            assert_true(st == 1 || st == 2);
        } else if (strcmp(name->valuestring, "pool") == 0) {
            seen[1]++;
            assert_int_equal(keys, 1);  /* unchosen sub-spaces are absent */
        } else {
            assert_string_equal(name->valuestring, "fc");
            seen[2]++;
            assert_int_equal(keys, 2);
            double u = num(layer, "units");
            assert_true(u >= 16 && u <= 1024 && fmod(u, 16) == 0);
        }
        cJSON_Delete(p);
    }
    assert_true(seen[0] > 50 && seen[1] > 50 && seen[2] > 50);
    ss_free(s);
}

/* ---- Random ---- */

static const char *const mixed_space =
    "{\"lr\": {\"_type\": \"loguniform\", \"_value\": [1e-5, 1e-1]},"
    " \"bs\": {\"_type\": \"choice\", \"_value\": [16, 32, 64]},"
    " \"drop\": {\"_type\": \"quniform\", \"_value\": [0, 0.5, 0.1]}}";

static void test_random_determinism(void **state)
{
    (void)state;
    struct ss_space *s = parse_ok(mixed_space);
    void *a = tuner_new("Random", NULL, s, 1234);
    void *b = tuner_new("Random", NULL, s, 1234);
    void *c = tuner_new("Random", NULL, s, 1235);
    void *d = tuner_new("Random", "{\"seed\": 77, \"optimize_mode\": \"maximize\"}", s, 1);
    void *e = tuner_new("Random", "{\"seed\": 77}", s, 2);
    /* b is asked in another order: a suggestion depends on (seed, index) only */
    char *bt[50];
    for (int i = 49; i >= 0; i--)
        bt[i] = suggest_text("Random", b, i);
    char *prev = NULL;
    for (int i = 0; i < 50; i++) {
        char *at = suggest_text("Random", a, i);
        char *ct = suggest_text("Random", c, i);
        char *dt = suggest_text("Random", d, i);
        char *et = suggest_text("Random", e, i);
        assert_string_equal(at, bt[i]);
        assert_string_not_equal(at, ct);  /* another experiment seed */
        assert_string_equal(dt, et);      /* classArgs seed overrides the experiment's */
        if (prev)
            assert_string_not_equal(at, prev);
        free(prev);
        prev = at;
        free(bt[i]);
        free(ct);
        free(dt);
        free(et);
    }
    free(prev);
    tuner_random.destroy(a);
    tuner_random.destroy(b);
    tuner_random.destroy(c);
    tuner_random.destroy(d);
    tuner_random.destroy(e);
    ss_free(s);
}

static void test_random_finite_space_dedups(void **state)
{
    (void)state;
    /* 2 x 3 x 3 = 18 distinct parameter sets: Random gives each once, then no more */
    struct ss_space *s = parse_ok("{\"a\": {\"_type\": \"choice\", \"_value\": [\"x\", \"y\"]},"
                                  " \"b\": {\"_type\": \"randint\", \"_value\": [0, 3]},"
                                  " \"c\": {\"_type\": \"quniform\", \"_value\": [0, 1, 0.5]}}");
    void *r = tuner_new("Random", NULL, s, 3);
    char *all[18];
    for (int i = 0; i < 18; i++) {
        all[i] = suggest_text("Random", r, i);
        assert_non_null(all[i]);
        for (int k = 0; k < i; k++)
            assert_string_not_equal(all[i], all[k]);
    }
    assert_null(suggest_text("Random", r, 18));
    assert_null(suggest_text("Random", r, 500));
    /* a fresh tuner asked for index 17 first agrees */
    void *r2 = tuner_new("Random", NULL, s, 3);
    char *t = suggest_text("Random", r2, 17);
    assert_string_equal(t, all[17]);
    free(t);
    for (int i = 0; i < 18; i++)
        free(all[i]);
    tuner_random.destroy(r);
    tuner_random.destroy(r2);
    ss_free(s);
}

static void test_random_class_args(void **state)
{
    (void)state;
    struct ss_space *s = parse_ok(mixed_space);
    static const struct {
        const char *args;
        const char *message;
    } bad[] = {
        {"{\"seed\": \"1\"}", "tuner.classArgs.seed: must be an integer"},
        {"{\"seed\": 1.5}", "tuner.classArgs.seed: must be an integer"},
        {"{\"seed\": -1}", "tuner.classArgs.seed: must be an integer between 0"},
        {"{\"seed\": true}", "tuner.classArgs.seed"},
        {"{\"optimize_mode\": \"max\"}", "tuner.classArgs.optimize_mode: must be \"maximize\" or \"minimize\""},
        {"{\"sed\": 1}", "tuner.classArgs.sed: unknown argument for Random (accepted: seed, optimize_mode)"},
        {"[1]", "tuner.classArgs: must be a mapping"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *args = cJSON_Parse(bad[i].args);
        void *st = NULL;
        struct errbuf e = {{0}};
        assert_int_equal(tuner_random.create(args, s, 0, &st, &e), -1);
        assert_null(st);
        if (!strstr(e.msg, bad[i].message))
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].args, e.msg, bad[i].message);
        cJSON_Delete(args);
    }
    void *ok = tuner_new("Random", "{}", s, 0);
    tuner_random.destroy(ok);
    ok = tuner_new("Random", "null", s, 0);
    tuner_random.destroy(ok);
    ss_free(s);
}

/* ---- GridSearch ---- */

static void expect_grid(const char *space, const char *const *expected, int n)
{
    struct ss_space *s = parse_ok(space);
    void *g = tuner_new("GridSearch", NULL, s, 0);
    for (int i = 0; i < n; i++) {
        char *t = suggest_text("GridSearch", g, i);
        if (!t)
            fail_msg("point %d: no more, expected %s", i, expected[i]);
        if (strcmp(t, expected[i]) != 0)
            fail_msg("point %d: got %s, expected %s", i, t, expected[i]);
        free(t);
    }
    tuner_gridsearch.destroy(g);
    ss_free(s);
}

static void test_grid_mixed_exact(void **state)
{
    (void)state;
    /* Epoch 1: q at x=1/2 -> round(1)*0.5 = 0.5. Epoch 2 adds x=1/4 (0.25/0.5 = 0.5
     * rounds to even 0 -> 0; kept because the left end 0 is not a grid point) and
     * x=3/4 (1.5 -> 2 -> 1). Then nothing divides: 2 x 2 x 3 = 12 points, c slowest. */
    static const char *const expected[] = {
        "{\"c\":\"a\",\"n\":0,\"q\":0.5}", "{\"c\":\"a\",\"n\":1,\"q\":0.5}", "{\"c\":\"b\",\"n\":0,\"q\":0.5}",
        "{\"c\":\"b\",\"n\":1,\"q\":0.5}", "{\"c\":\"a\",\"n\":0,\"q\":0}",   "{\"c\":\"a\",\"n\":0,\"q\":1}",
        "{\"c\":\"a\",\"n\":1,\"q\":0}",   "{\"c\":\"a\",\"n\":1,\"q\":1}",   "{\"c\":\"b\",\"n\":0,\"q\":0}",
        "{\"c\":\"b\",\"n\":0,\"q\":1}",   "{\"c\":\"b\",\"n\":1,\"q\":0}",   "{\"c\":\"b\",\"n\":1,\"q\":1}",
    };
    const char *space = "{\"c\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\"]},"
                        " \"n\": {\"_type\": \"randint\", \"_value\": [0, 2]},"
                        " \"q\": {\"_type\": \"quniform\", \"_value\": [0, 1, 0.5]}}";
    expect_grid(space, expected, 12);
    struct ss_space *s = parse_ok(space);
    void *g = tuner_new("GridSearch", NULL, s, 0);
    assert_null(suggest_text("GridSearch", g, 12));  /* exhausted, and stays so */
    assert_null(suggest_text("GridSearch", g, 13));
    assert_null(suggest_text("GridSearch", g, 1000));
    char *t = suggest_text("GridSearch", g, 11);
    assert_string_equal(t, expected[11]);
    free(t);
    tuner_gridsearch.destroy(g);
    ss_free(s);
}

static void test_grid_nni_docstring_example(void **state)
{
    (void)state;
    /* The example in gridsearch_tuner.py: x: choice(5, 7), y: normal(0, 1),
     * z: quniform(2, 3, 1). round(2.5) is 2, so z starts at 2 and reaches 3 at x=3/4. */
    static const char *const expected[] = {
        "{\"x\":5,\"y\":0,\"z\":2}",
        "{\"x\":7,\"y\":0,\"z\":2}",
        "{\"x\":5,\"y\":0,\"z\":3}",
        "{\"x\":5,\"y\":-0.67448975019608182,\"z\":2}",
        "{\"x\":5,\"y\":-0.67448975019608182,\"z\":3}",
        "{\"x\":5,\"y\":0.67448975019608182,\"z\":2}",
        "{\"x\":5,\"y\":0.67448975019608182,\"z\":3}",
        "{\"x\":7,\"y\":0,\"z\":3}",
    };
    expect_grid("{\"x\": {\"_type\": \"choice\", \"_value\": [5, 7]},"
                " \"y\": {\"_type\": \"normal\", \"_value\": [0, 1]},"
                " \"z\": {\"_type\": \"quniform\", \"_value\": [2, 3, 1]}}",
                expected, 8);
}

static void test_grid_continuous_epochs(void **state)
{
    (void)state;
    static const char *const one[] = {
        "{\"x\":0.5}", "{\"x\":0.25}", "{\"x\":0.75}", "{\"x\":0.125}", "{\"x\":0.375}",
        "{\"x\":0.625}", "{\"x\":0.875}", "{\"x\":0.0625}", "{\"x\":0.1875}",
    };
    expect_grid("{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}", one, 9);
    /* two parameters: epoch 2 is the 3 x 3 grid minus the centre, y fastest; epoch 3
     * starts with the old x values against the new y values */
    static const char *const two[] = {
        "{\"x\":0.5,\"y\":0.5}",    "{\"x\":0.5,\"y\":0.25}",   "{\"x\":0.5,\"y\":0.75}",
        "{\"x\":0.25,\"y\":0.5}",   "{\"x\":0.25,\"y\":0.25}",  "{\"x\":0.25,\"y\":0.75}",
        "{\"x\":0.75,\"y\":0.5}",   "{\"x\":0.75,\"y\":0.25}",  "{\"x\":0.75,\"y\":0.75}",
        "{\"x\":0.5,\"y\":0.125}",  "{\"x\":0.5,\"y\":0.375}",  "{\"x\":0.5,\"y\":0.625}",
        "{\"x\":0.5,\"y\":0.875}",
    };
    expect_grid("{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                " \"y\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}",
                two, 13);
    /* log types bisect in log space; normal types at quantiles */
    struct ss_space *s = parse_ok("{\"l\": {\"_type\": \"loguniform\", \"_value\": [1, 10000]},"
                                  " \"n\": {\"_type\": \"normal\", \"_value\": [10, 2]}}");
    void *g = tuner_new("GridSearch", NULL, s, 0);
    double expect_l[] = {100, 100, 100, 10, 10, 10, 1000, 1000, 1000};
    double expect_n[] = {10, 10 - 2 * 0.6744897501960817, 10 + 2 * 0.6744897501960817};
    for (int i = 0; i < 9; i++) {
        cJSON *p;
        struct errbuf e;
        assert_int_equal(tuner_gridsearch.suggest(g, i, NULL, &p, &e), 1);
        assert_true(fabs(num(p, "l") - expect_l[i]) < 1e-9 * expect_l[i]);
        assert_true(fabs(num(p, "n") - expect_n[i % 3]) < 1e-12);
        cJSON_Delete(p);
    }
    tuner_gridsearch.destroy(g);
    ss_free(s);
}

static void test_grid_nested(void **state)
{
    (void)state;
    static const char *const expected[] = {
        "{\"layer\":{\"_name\":\"conv\",\"k\":3},\"bs\":16}", "{\"layer\":{\"_name\":\"conv\",\"k\":3},\"bs\":32}",
        "{\"layer\":{\"_name\":\"conv\",\"k\":5},\"bs\":16}", "{\"layer\":{\"_name\":\"conv\",\"k\":5},\"bs\":32}",
        "{\"layer\":{\"_name\":\"pool\"},\"bs\":16}",         "{\"layer\":{\"_name\":\"pool\"},\"bs\":32}",
    };
    const char *space = "{\"layer\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"conv\", \"k\": {\"_type\":"
                        " \"choice\", \"_value\": [3, 5]}}, {\"_name\": \"pool\"}]},"
                        " \"bs\": {\"_type\": \"choice\", \"_value\": [16, 32]}}";
    expect_grid(space, expected, 6);
    struct ss_space *s = parse_ok(space);
    void *g = tuner_new("GridSearch", NULL, s, 0);
    assert_null(suggest_text("GridSearch", g, 6));
    tuner_gridsearch.destroy(g);
    ss_free(s);
}

static void test_grid_duplicate_options_skipped(void **state)
{
    (void)state;
    /* NNI's history check: equal option values give one point */
    static const char *const expected[] = {"{\"c\":1,\"d\":\"x\"}", "{\"c\":2,\"d\":\"x\"}"};
    const char *space = "{\"c\": {\"_type\": \"choice\", \"_value\": [1, 1, 2]},"
                        " \"d\": {\"_type\": \"choice\", \"_value\": [\"x\", \"x\"]}}";
    expect_grid(space, expected, 2);
    struct ss_space *s = parse_ok(space);
    void *g = tuner_new("GridSearch", NULL, s, 0);
    assert_null(suggest_text("GridSearch", g, 2));
    tuner_gridsearch.destroy(g);
    ss_free(s);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_grid_no_duplicates_and_random_access(void **state)
{
    (void)state;
    const char *space = "{\"a\": {\"_type\": \"choice\", \"_value\": [\"x\", \"y\", \"x\"]},"
                        " \"b\": {\"_type\": \"qnormal\", \"_value\": [0, 4, 1]},"
                        " \"c\": {\"_type\": \"loguniform\", \"_value\": [0.01, 1]},"
                        " \"d\": {\"_type\": \"randint\", \"_value\": [0, 3]}}";
    struct ss_space *s = parse_ok(space);
    void *seq = tuner_new("GridSearch", NULL, s, 0);
    void *jump = tuner_new("GridSearch", NULL, s, 0);
    /* index 1500 first, as an api restarted mid-experiment would ask */
    char *far = suggest_text("GridSearch", jump, 1500);
    assert_non_null(far);
    char *first = suggest_text("GridSearch", jump, 0);
    char **texts = xcalloc(1501, sizeof *texts);
    for (int i = 0; i <= 1500; i++) {
        texts[i] = suggest_text("GridSearch", seq, i);
        assert_non_null(texts[i]);
    }
    assert_string_equal(first, texts[0]);
    assert_string_equal(far, texts[1500]);
    /* no two points alike (compared exactly, via the canonical text) */
    char **canon = xcalloc(1501, sizeof *canon);
    for (int i = 0; i <= 1500; i++) {
        cJSON *j = cJSON_Parse(texts[i]);
        canon[i] = json_canonical(j);
        cJSON_Delete(j);
    }
    qsort(canon, 1501, sizeof *canon, cmp_str);
    for (int i = 1; i <= 1500; i++)
        assert_string_not_equal(canon[i - 1], canon[i]);
    for (int i = 0; i <= 1500; i++) {
        free(texts[i]);
        free(canon[i]);
    }
    free(texts);
    free(canon);
    free(far);
    free(first);
    tuner_gridsearch.destroy(seq);
    tuner_gridsearch.destroy(jump);
    ss_free(s);
}

static void test_grid_qnormal_tail_ends(void **state)
{
    (void)state;
    /* qnormal(0, 1, 1): -8..8 around the median (quantiles closer to 0 or 1 than
     * about 1e-16 round to ±inf), then no more, where NNI itself would crash on
     * round(inf). */
    struct ss_space *s = parse_ok("{\"a\": {\"_type\": \"qnormal\", \"_value\": [0, 1, 1]}}");
    void *g = tuner_new("GridSearch", NULL, s, 0);
    double expected[] = {0, -1, 1, -2, 2, -3, 3, -4, 4, -5, 5, -6, 6, -7, 7, -8, 8};
    for (int i = 0; i < 17; i++) {
        cJSON *p;
        struct errbuf e;
        assert_int_equal(tuner_gridsearch.suggest(g, i, NULL, &p, &e), 1);
        assert_true(num(p, "a") == expected[i]);
        cJSON_Delete(p);
    }
    assert_null(suggest_text("GridSearch", g, 17));
    tuner_gridsearch.destroy(g);
    ss_free(s);
}

static void test_grid_speed(void **state)
{
    (void)state;
    /* thousands of points of a 6-d continuous space stay cheap per call */
    struct ss_space *s = parse_ok(
        "{\"x1\": {\"_type\": \"uniform\", \"_value\": [0, 1]}, \"x2\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
        " \"x3\": {\"_type\": \"uniform\", \"_value\": [0, 1]}, \"x4\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
        " \"x5\": {\"_type\": \"uniform\", \"_value\": [0, 1]}, \"x6\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}");
    void *g = tuner_new("GridSearch", NULL, s, 0);
    int64_t t0 = mono_us();
    char *t = suggest_text("GridSearch", g, 5000);
    int64_t t1 = mono_us();
    for (int i = 0; i < 5000; i++)
        free(suggest_text("GridSearch", g, i));
    int64_t t2 = mono_us();
    assert_non_null(t);
    free(t);
    print_message("grid: index 5000 cold %.1f ms, 5000 cached calls %.1f ms\n", (t1 - t0) / 1e3, (t2 - t1) / 1e3);
    assert_true(t1 - t0 < 5000000);  /* generous: sanitizers, busy CI */
    tuner_gridsearch.destroy(g);
    ss_free(s);
}

static void test_grid_class_args_and_empty(void **state)
{
    (void)state;
    struct ss_space *s = parse_ok(mixed_space);
    struct errbuf e = {{0}};
    void *st = NULL;
    cJSON *args = cJSON_Parse("{\"seed\": 1}");
    assert_int_equal(tuner_gridsearch.create(args, s, 0, &st, &e), -1);
    assert_non_null(strstr(e.msg, "tuner.classArgs.seed: unknown argument for GridSearch"));
    cJSON_Delete(args);
    st = tuner_new("GridSearch", "{\"optimize_mode\": \"minimize\"}", s, 0);
    tuner_gridsearch.destroy(st);
    st = tuner_new("GridSearch", "{}", s, 0);
    tuner_gridsearch.destroy(st);
    ss_free(s);

    s = parse_ok("{}");
    st = NULL;
    assert_int_equal(tuner_gridsearch.create(NULL, s, 0, &st, &e), -1);
    assert_non_null(strstr(e.msg, "empty"));
    /* Random on an empty space: one empty parameter set, then no more (as NNI) */
    st = tuner_new("Random", NULL, s, 0);
    char *t = suggest_text("Random", st, 0);
    assert_string_equal(t, "{}");
    free(t);
    assert_null(suggest_text("Random", st, 1));
    tuner_random.destroy(st);
    ss_free(s);
}

/* ---- Batch ---- */

static void test_batch(void **state)
{
    (void)state;
    struct ss_space *s = parse_ok("{\"combine\": {\"_type\": \"choice\", \"_value\": ["
                                  "{\"optimizer\": \"Adam\", \"lr\": 0.001}, {\"optimizer\": \"SGD\", \"lr\": 0.01}]}}");
    void *b = tuner_new("BatchTuner", NULL, s, 0);
    char *t0 = suggest_text("Batch", b, 0), *t1 = suggest_text("Batch", b, 1);
    assert_string_equal(t0, "{\"optimizer\":\"Adam\",\"lr\":0.001}");
    assert_string_equal(t1, "{\"optimizer\":\"SGD\",\"lr\":0.01}");
    assert_null(suggest_text("Batch", b, 2));
    free(t0);
    free(t1);
    tuner_batch.destroy(b);

    struct errbuf e = {{0}};
    void *st = NULL;
    cJSON *args = cJSON_Parse("{\"x\": 1}");
    assert_int_equal(tuner_batch.create(args, s, 0, &st, &e), -1);
    assert_non_null(strstr(e.msg, "tuner.classArgs.x: Batch takes no classArgs"));
    cJSON_Delete(args);
    ss_free(s);

    s = parse_ok(mixed_space);
    assert_int_equal(tuner_batch.create(NULL, s, 0, &st, &e), -1);
    assert_non_null(strstr(e.msg, "exactly one parameter of _type choice"));
    ss_free(s);
    s = parse_ok("{\"c\": {\"_type\": \"choice\", \"_value\": [{\"a\": 1}, 2]}}");
    assert_int_equal(tuner_batch.create(NULL, s, 0, &st, &e), -1);
    assert_non_null(strstr(e.msg, "option 1 must be an object"));
    ss_free(s);
}

/* ---- registry, erfinv, canonical ---- */

static void test_registry(void **state)
{
    (void)state;
    assert_ptr_equal(tuner_find("Random"), &tuner_random);
    assert_ptr_equal(tuner_find("random"), &tuner_random);
    assert_ptr_equal(tuner_find("RANDOMTUNER"), &tuner_random);
    assert_ptr_equal(tuner_find("GridSearch"), &tuner_gridsearch);
    assert_ptr_equal(tuner_find("gridsearch"), &tuner_gridsearch);
    assert_ptr_equal(tuner_find("GridSearchTuner"), &tuner_gridsearch);
    assert_ptr_equal(tuner_find("batch"), &tuner_batch);
    assert_ptr_equal(tuner_find("BatchTuner"), &tuner_batch);
    assert_null(tuner_find("TPE_unknown"));
    assert_null(tuner_find("Grid"));
    assert_null(tuner_find(""));
    assert_null(tuner_find(NULL));
    const char *names = tuner_names();
    const struct tuner_ops *all[] = {&tuner_random, &tuner_gridsearch, &tuner_batch, &tuner_tpe};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        assert_non_null(strstr(names, all[i]->name));
        assert_ptr_equal(tuner_find(all[i]->name), all[i]);
    }
}

static void test_erfinv(void **state)
{
    (void)state;
    assert_true(fabs(ss_erfinv(0.5) - 0.47693627620446987) < 1e-16);
    assert_true(fabs(ss_erfinv(-0.5) + 0.47693627620446987) < 1e-16);
    assert_true(fabs(ss_erfinv(0.9) - 1.1630871536766741) < 4e-16);
    assert_true(fabs(ss_erfinv(0.999) - 2.3267537655135246) < 1e-15);
    assert_true(ss_erfinv(0.0) == 0.0);
    assert_true(isinf(ss_erfinv(1.0)) && ss_erfinv(1.0) > 0);
    assert_true(isinf(ss_erfinv(-1.0)) && ss_erfinv(-1.0) < 0);
    assert_true(isnan(ss_erfinv(1.5)));
    /* round trips across the range, relative to 1 - |y| near the ends */
    for (int k = 1; k <= 53; k++) {
        double t = ldexp(1.0, -k);  /* y = 1 - 2^-k, exact down to 2^-53 */
        double x = ss_erfinv(1.0 - t);
        assert_true(fabs(erfc(x) - t) <= 1e-13 * t);
        assert_true(ss_erfinv(-(1.0 - t)) == -x);
    }
    for (double y = -0.99; y < 0.99; y += 0.0137) {
        double x = ss_erfinv(y);
        assert_true(fabs(erf(x) - y) < 1e-15);
    }
}

static void test_canonical(void **state)
{
    (void)state;
    cJSON *a = cJSON_Parse("{\"b\": 1, \"a\": {\"y\": [1, \"s\"], \"x\": null}}");
    cJSON *b = cJSON_Parse("{\"a\": {\"x\": null, \"y\": [1, \"s\"]}, \"b\": 1.0}");
    cJSON *c = cJSON_Parse("{\"a\": {\"x\": null, \"y\": [1, \"s\"]}, \"b\": 1.0000000000000002}");
    char *ta = json_canonical(a), *tb = json_canonical(b), *tc = json_canonical(c);
    assert_string_equal(ta, tb);
    assert_string_not_equal(ta, tc);  /* one ulp apart: not the same trial */
    free(ta);
    free(tb);
    free(tc);
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(c);
}

/* json_same answers exactly as comparing canonical texts does, and equal values hash
 * alike: every pair of a set of values that differ by one member's order, a key, a
 * value's type, an ulp, the sign of zero, or a duplicate key. */
static void test_json_same(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{\"x\": 1, \"c\": \"a\", \"o\": {\"_name\": \"sgd\", \"lr\": 0.01}}",
        "{\"c\": \"a\", \"x\": 1.0, \"o\": {\"lr\": 0.01, \"_name\": \"sgd\"}}",
        "{\"x\": 1.0000000000000002, \"c\": \"a\", \"o\": {\"_name\": \"sgd\", \"lr\": 0.01}}",
        "{\"x\": 1, \"c\": \"a\", \"o\": {\"_name\": \"sgd\", \"lr\": 0.02}}",
        "{\"x\": 1, \"c\": \"b\", \"o\": {\"_name\": \"sgd\", \"lr\": 0.01}}",
        "{\"x\": 1, \"c\": \"a\"}",
        "{\"x\": \"1\", \"c\": \"a\", \"o\": {\"_name\": \"sgd\", \"lr\": 0.01}}",
        "{\"y\": 1, \"c\": \"a\", \"o\": {\"_name\": \"sgd\", \"lr\": 0.01}}",
        "{\"x\": 0, \"c\": [1, 2]}",
        "{\"x\": -0.0, \"c\": [1, 2]}",
        "{\"x\": 0, \"c\": [2, 1]}",
        "{\"c\": [1, 2], \"x\": 0}",
        "{\"x\": 1, \"x\": 2}",
        "{\"x\": 2, \"x\": 1}",
        "{\"x\": 1, \"x\": 2, \"a\": null}",
        "{\"a\": null, \"x\": 1, \"x\": 2}",
        "{\"a\": true, \"b\": false}",
        "{\"a\": false, \"b\": true}",
        "[1, {\"a\": 1, \"b\": 2}]",
        "[1, {\"b\": 2, \"a\": 1}]",
    };
    enum { N = sizeof texts / sizeof texts[0] };
    cJSON *v[N];
    char *canon[N];
    for (int i = 0; i < N; i++) {
        v[i] = cJSON_Parse(texts[i]);
        assert_non_null(v[i]);
        canon[i] = json_canonical(v[i]);
    }
    int equal_pairs = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            int same = strcmp(canon[i], canon[j]) == 0;
            assert_int_equal(json_same(v[i], v[j]), same);
            if (same)
                assert_true(json_hash64(v[i]) == json_hash64(v[j]));
            equal_pairs += same && i < j;
        }
    assert_int_equal(equal_pairs, 4);  /* texts 0-1, 8-11, 14-15 and 18-19 */
    for (int i = 0; i < N; i++) {
        cJSON_Delete(v[i]);
        free(canon[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validation_errors),
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_functions_json_spaces),
        cmocka_unit_test(test_rng),
        cmocka_unit_test(test_deformat_rounding),
        cmocka_unit_test(test_sampling_ranges),
        cmocka_unit_test(test_randint_prints_integers),
        cmocka_unit_test(test_nested_sample_shape),
        cmocka_unit_test(test_random_determinism),
        cmocka_unit_test(test_random_finite_space_dedups),
        cmocka_unit_test(test_random_class_args),
        cmocka_unit_test(test_grid_mixed_exact),
        cmocka_unit_test(test_grid_nni_docstring_example),
        cmocka_unit_test(test_grid_continuous_epochs),
        cmocka_unit_test(test_grid_nested),
        cmocka_unit_test(test_grid_duplicate_options_skipped),
        cmocka_unit_test(test_grid_no_duplicates_and_random_access),
        cmocka_unit_test(test_grid_qnormal_tail_ends),
        cmocka_unit_test(test_grid_speed),
        cmocka_unit_test(test_grid_class_args_and_empty),
        cmocka_unit_test(test_batch),
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_erfinv),
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_json_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
