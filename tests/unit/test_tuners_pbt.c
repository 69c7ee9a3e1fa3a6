/* test_tuners_pbt.c: PBT (tuners/pbt.c): classArgs errors name the key; generation 0 is
 * random with NNI's checkpoint layout <dir>/<member>/0; a generation waits for the whole
 * previous one; the bottom fraction copies a top member's hyperparameters (perturbed)
 * and loads its checkpoint, the others go on from their own; failed trials rank last;
 * suggestions are a pure function of seed and history. */
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

static const char space_text[] = "{\"lr\": {\"_type\": \"loguniform\", \"_value\": [0.0001, 0.1]},"
                                 " \"units\": {\"_type\": \"choice\", \"_value\": [8, 16, 32, 64, 128]},"
                                 " \"layers\": {\"_type\": \"randint\", \"_value\": [1, 6]},"
                                 " \"drop\": {\"_type\": \"uniform\", \"_value\": [0, 0.5]},"
                                 " \"bs\": {\"_type\": \"quniform\", \"_value\": [16, 256, 16]}}";

static int suggest_rc(void *st, int64_t index, const struct hist *h, const char *exp_dir, cJSON **p)
{
    struct tuner_history th = {.n = h->n, .items = h->items, .experiment_dir = exp_dir};
    struct errbuf e = {{0}};
    *p = NULL;
    int rc = tuner_pbt.suggest(st, index, &th, p, &e);
    if (rc < 0)
        fail_msg("suggest(%lld): %s", (long long)index, e.msg);
    return rc;
}

static cJSON *suggest1(void *st, int64_t index, const struct hist *h)
{
    cJSON *p;
    int rc = suggest_rc(st, index, h, "/exp", &p);
    if (rc != 1)
        fail_msg("suggest(%lld) returned %d", (long long)index, rc);
    return p;
}

static const char *str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(v))
        fail_msg("%s is not a string", key);
    return v->valuestring;
}

static void create_error(const char *args, const char *want)
{
    create_must_fail(&tuner_pbt, space_text, args, want);
}

static void test_class_args(void **unused)
{
    (void)unused;
    assert_ptr_equal(tuner_find("pbttuner"), &tuner_pbt);
    assert_ptr_equal(tuner_find("PBT"), &tuner_pbt);
    assert_non_null(strstr(tuner_names(), "PBT"));
    create_error("{}", "tuner.classArgs.optimize_mode: required by PBT");
    create_error("{\"optimize_mode\": \"max\"}", "tuner.classArgs.optimize_mode: must be");
    create_error("{\"optimize_mode\": \"maximize\", \"populaton_size\": 3}",
                 "tuner.classArgs.populaton_size: unknown argument for PBT");
    create_error("{\"optimize_mode\": \"maximize\", \"population_size\": 0}", "tuner.classArgs.population_size");
    create_error("{\"optimize_mode\": \"maximize\", \"population_size\": 2.5}", "tuner.classArgs.population_size");
    create_error("{\"optimize_mode\": \"maximize\", \"fraction\": 0.6}", "tuner.classArgs.fraction: must be a number");
    create_error("{\"optimize_mode\": \"maximize\", \"factor\": \"big\"}", "tuner.classArgs.factor: must be a number");
    create_error("{\"optimize_mode\": \"maximize\", \"resample_probability\": 1.5}",
                 "tuner.classArgs.resample_probability");
    create_error("{\"optimize_mode\": \"maximize\", \"factor\": 0.1, \"factors\": 0.2}", "not both");
    create_error("{\"optimize_mode\": \"maximize\", \"all_checkpoint_dir\": \"ckpt\"}",
                 "tuner.classArgs.all_checkpoint_dir: must be an absolute path");
    create_error("{\"optimize_mode\": \"maximize\", \"all_checkpoint_dir\": 3}", "all_checkpoint_dir");
    create_error("{\"optimize_mode\": \"maximize\", \"seed\": -1}", "tuner.classArgs.seed");
    /* NNI's own example, and its validator's spelling "factors" */
    struct ss_space *s = parse_space(space_text);
    void *st = create(&tuner_pbt,
                      "{\"optimize_mode\": \"maximize\", \"all_checkpoint_dir\": \"/ck/\", \"population_size\": 4,"
                      " \"factors\": 0.3, \"fraction\": 0.5, \"resample_probability\": 0}",
                      s, 1);
    struct hist h = {0};
    cJSON *p = suggest1(st, 3, &h);
    assert_string_equal(str(p, "save_checkpoint_dir"), "/ck/3/0");
    cJSON_Delete(p);
    tuner_pbt.destroy(st);
    ss_free(s);
}

/* generation 0: a random member each, load = save = <experiment>/checkpoint/<k>/0; no
 * experiment directory and no all_checkpoint_dir is an error, not a crash */
static void test_generation_zero(void **unused)
{
    (void)unused;
    struct ss_space *s = parse_space(space_text);
    void *st = create(&tuner_pbt, "{\"optimize_mode\": \"maximize\", \"population_size\": 4}", s, 9);
    struct hist h = {0};
    for (int k = 0; k < 4; k++) {
        cJSON *p = suggest1(st, k, &h);
        char want[64];
        snprintf(want, sizeof want, "/exp/checkpoint/%d/0", k);
        assert_string_equal(str(p, "load_checkpoint_dir"), want);
        assert_string_equal(str(p, "save_checkpoint_dir"), want);
        double lr = num(p, "lr"), layers = num(p, "layers"), bs = num(p, "bs");
        assert_true(lr >= 0.0001 && lr <= 0.1);
        assert_true(layers >= 1 && layers <= 5 && layers == floor(layers));
        assert_true(bs >= 16 && bs <= 256 && fmod(bs, 16) == 0);
        assert_int_equal(cJSON_GetArraySize(p), 7);
        cJSON_Delete(p);
    }
    struct tuner_history th = {0};
    cJSON *p = NULL;
    struct errbuf e = {{0}};
    assert_int_equal(tuner_pbt.suggest(st, 0, &th, &p, &e), -1);
    assert_null(p);
    assert_non_null(strstr(e.msg, "all_checkpoint_dir"));
    tuner_pbt.destroy(st);
    ss_free(s);
}

/* runs generation g (indexes g*P .. g*P+P-1), adding each trial with score[k] */
static void run_generation(void *st, int P, int g, struct hist *h, const double *score, const char *const *status)
{
    for (int k = 0; k < P; k++) {
        cJSON *p = suggest1(st, (int64_t)g * P + k, h);
        const char *stt = status ? status[k] : "SUCCEEDED";
        int ok = strcmp(stt, "SUCCEEDED") == 0;
        hist_add(h, (int64_t)g * P + k, p, ok, ok ? score[k] : 0, stt);
    }
}

/* generation 1 waits until every trial of generation 0 has ended */
static void test_waits_for_generation(void **unused)
{
    (void)unused;
    struct ss_space *s = parse_space(space_text);
    void *st = create(&tuner_pbt, "{\"optimize_mode\": \"maximize\", \"population_size\": 3}", s, 2);
    struct hist h = {0};
    cJSON *p;
    for (int k = 0; k < 3; k++)
        hist_add(&h, k, suggest1(st, k, &h), 0, 0, k == 2 ? "RUNNING" : "SUCCEEDED");
    assert_int_equal(suggest_rc(st, 3, &h, "/exp", &p), 2);
    assert_null(p);
    h.items[2].status = "WAITING";
    assert_int_equal(suggest_rc(st, 4, &h, "/exp", &p), 2);
    h.items[2].status = "FAILED";
    assert_int_equal(suggest_rc(st, 3, &h, "/exp", &p), 1);
    cJSON_Delete(p);
    /* a missing member (withdrawn) also holds the generation back */
    h.n = 2;
    assert_int_equal(suggest_rc(st, 5, &h, "/exp", &p), 2);
    h.n = 3;
    hist_free(&h);
    tuner_pbt.destroy(st);
    ss_free(s);
}

static int same_hyper(const cJSON *a, const cJSON *b, const struct ss_space *s)
{
    for (int i = 0; i < s->n; i++)
        if (!cJSON_Compare(cJSON_GetObjectItemCaseSensitive(a, s->params[i].name),
                           cJSON_GetObjectItemCaseSensitive(b, s->params[i].name), 1))
            return 0;
    return 1;
}

/* P = 5, fraction 0.4: the two worst copy one of the two best (perturbed) and load its
 * checkpoint; the other three keep theirs. Failed trials rank last; minimize ranks the
 * other way round. */
static void exploit_case(const char *mode, const double *score, const char *const *status, const int *expect_bottom,
                         const int *expect_top)
{
    struct ss_space *s = parse_space(space_text);
    char args[160];
    snprintf(args, sizeof args,
             "{\"optimize_mode\": \"%s\", \"population_size\": 5, \"fraction\": 0.4,"
             " \"resample_probability\": 0, \"all_checkpoint_dir\": \"/ck\"}", mode);
    void *st = create(&tuner_pbt, args, s, 5);
    struct hist h = {0};
    run_generation(st, 5, 0, &h, score, status);
    for (int k = 0; k < 5; k++) {
        cJSON *p = suggest1(st, 5 + k, &h);
        char save[32];
        snprintf(save, sizeof save, "/ck/%d/1", k);
        assert_string_equal(str(p, "save_checkpoint_dir"), save);
        const char *load = str(p, "load_checkpoint_dir");
        int bottom = expect_bottom[0] == k || expect_bottom[1] == k;
        if (!bottom) {
            char own[32];
            snprintf(own, sizeof own, "/ck/%d/0", k);
            assert_string_equal(load, own);
            assert_true(same_hyper(p, h.params[k], s));
        } else {
            /* a top member's checkpoint, and that member's hyperparameters moved one step */
            int src = load[4] - '0';
            assert_true(src == expect_top[0] || src == expect_top[1]);
            assert_string_equal(load + 5, "/0");
            const cJSON *top = h.params[src];
            double lr = num(p, "lr"), tlr = num(top, "lr");
            double step = (log(0.1) - log(0.0001)) * 0.2;
            assert_true(fabs(fabs(log(lr) - log(tlr)) - step) < 1e-9 || lr == 0.0001 || lr == 0.1);
            assert_true(fabs(num(p, "layers") - num(top, "layers")) <= 1);
            assert_true(fabs(num(p, "drop") - num(top, "drop")) <= 0.1 + 1e-12);
            assert_true(fabs(num(p, "bs") - num(top, "bs")) <= 16);
            assert_true(fmod(num(p, "bs"), 16) == 0);
            static const double units[] = {8, 16, 32, 64, 128};
            int ui = -1, ti = -1;
            for (int i = 0; i < 5; i++) {
                ui = units[i] == num(p, "units") ? i : ui;
                ti = units[i] == num(top, "units") ? i : ti;
            }
            assert_true(ui >= 0 && abs(ui - ti) <= 1);
            assert_false(same_hyper(p, top, s)); /* something moved (lr always can) */
        }
        cJSON_Delete(p);
    }
    hist_free(&h);
    tuner_pbt.destroy(st);
    ss_free(s);
}

static void test_exploit_explore(void **unused)
{
    (void)unused;
    const double score[] = {0.5, 0.9, 0.1, 0.7, 0.3};
    exploit_case("maximize", score, NULL, (const int[]){2, 4}, (const int[]){1, 3});
    exploit_case("minimize", score, NULL, (const int[]){1, 3}, (const int[]){2, 4});
    /* a failed trial is worst whatever the mode */
    const char *const status[] = {"SUCCEEDED", "FAILED", "SUCCEEDED", "SUCCEEDED", "USER_CANCELED"};
    exploit_case("maximize", score, status, (const int[]){1, 4}, (const int[]){3, 0});
    exploit_case("minimize", score, status, (const int[]){1, 4}, (const int[]){2, 0});
}

/* every bottom member draws its top at random: over many seeds both tops are chosen */
static void test_top_drawn_at_random(void **unused)
{
    (void)unused;
    struct ss_space *s = parse_space(space_text);
    const double score[] = {0.5, 0.9, 0.1, 0.7, 0.3};
    int seen[5] = {0};
    for (uint64_t seed = 0; seed < 40; seed++) {
        void *st = create(&tuner_pbt,
                          "{\"optimize_mode\": \"maximize\", \"population_size\": 5, \"fraction\": 0.4,"
                          " \"all_checkpoint_dir\": \"/ck\"}", s, seed);
        struct hist h = {0};
        run_generation(st, 5, 0, &h, score, NULL);
        cJSON *p = suggest1(st, 7, &h);
        seen[str(p, "load_checkpoint_dir")[4] - '0']++;
        cJSON_Delete(p);
        hist_free(&h);
        tuner_pbt.destroy(st);
    }
    assert_true(seen[1] > 5 && seen[3] > 5);
    assert_int_equal(seen[1] + seen[3], 40);
    ss_free(s);
}

/* A whole run of 6 generations of 4: every checkpoint loaded after generation 0 is one
 * the previous generation saved; a second tuner with the same seed over the same
 * history answers the same (a restarted api); another seed does not. The population
 * improves on a smooth objective. */
static double objective(const cJSON *p)
{
    double lr = log10(num(p, "lr")) + 2.5, d = num(p, "drop") - 0.2;
    return -(lr * lr) - 4 * d * d;
}

static void test_run_and_determinism(void **unused)
{
    (void)unused;
    struct ss_space *s = parse_space(space_text);
    const char *args = "{\"optimize_mode\": \"maximize\", \"population_size\": 4, \"fraction\": 0.25}";
    void *a = create(&tuner_pbt, args, s, 11);
    struct hist h = {0};
    double first_best = -INFINITY, last_best = -INFINITY;
    for (int g = 0; g < 6; g++) {
        for (int k = 0; k < 4; k++) {
            int64_t i = g * 4 + k;
            cJSON *p = suggest1(a, i, &h);
            /* a fresh tuner (restart) with the same history and seed: the same answer */
            void *b = create(&tuner_pbt, args, s, 11);
            cJSON *q = suggest1(b, i, &h);
            assert_true(cJSON_Compare(p, q, 1));
            cJSON_Delete(q);
            tuner_pbt.destroy(b);
            if (g > 0) {
                int found = 0;
                for (int j = (g - 1) * 4; j < g * 4; j++)
                    found |= strcmp(str(h.params[j], "save_checkpoint_dir"), str(p, "load_checkpoint_dir")) == 0;
                assert_true(found);
            }
            double v = objective(p);
            if (g == 0 && v > first_best)
                first_best = v;
            if (g == 5 && v > last_best)
                last_best = v;
            hist_add(&h, i, p, 1, v, "SUCCEEDED");
        }
    }
    assert_true(last_best >= first_best);
    /* another seed gives another population */
    void *c = create(&tuner_pbt, args, s, 12);
    struct hist empty = {0};
    cJSON *p0 = suggest1(c, 0, &empty);
    assert_false(cJSON_Compare(p0, h.params[0], 1));
    cJSON_Delete(p0);
    tuner_pbt.destroy(c);
    tuner_pbt.destroy(a);
    hist_free(&h);
    ss_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_class_args),
        cmocka_unit_test(test_generation_zero),
        cmocka_unit_test(test_waits_for_generation),
        cmocka_unit_test(test_exploit_explore),
        cmocka_unit_test(test_top_drawn_at_random),
        cmocka_unit_test(test_run_and_determinism),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
