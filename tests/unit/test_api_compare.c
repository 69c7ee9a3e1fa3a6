/* test_api_compare.c: GET /webui/compare's computations (api/compare.c): the
 * best-so-far records on a worked example (by trial number and by time, either mode,
 * ties), the configs flattened side by side with the differences marked, and on a
 * database: an experiment small enough to be read whole is exact, one past the sample
 * has the true records from where it says it is exact, the distribution is of the
 * evenly spread trials on bins shared by both, mixed modes are flagged, and an unknown
 * id is named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/compare.h"
#include "tests/unit/db_fixture.h"
#include "tests/unit/unit_tmpdir.h"

static char tmpdir[] = "/tmp/trialq-test-compare-XXXXXX";

/* seq, value, ms from the start (-1: no end time) */
static const struct cmp_pt example[] = {
    {0, 5, 100}, {1, 7, 50}, {2, 3, 400}, {3, 3, 300}, {4, 4, -1}, {5, 1, 200}, {6, 2, 150},
};
#define NEX ((int)(sizeof example / sizeof example[0]))

static void assert_records(int maximize, int by_time, const int64_t *seqs, int n)
{
    struct cmp_pt pts[NEX], out[NEX];
    /* given in another order: the function orders them */
    for (int i = 0; i < NEX; i++)
        pts[i] = example[NEX - 1 - i];
    int k = cmp_best_so_far(pts, NEX, maximize, by_time, out);
    assert_int_equal(k, n);
    for (int i = 0; i < n; i++)
        assert_int_equal(out[i].seq, seqs[i]);
}

static void test_best_so_far_worked_example(void **s)
{
    (void)s;
    /* minimize by trial number: 5, 3 (trial 3's 3 ties: not an improvement), 1 */
    assert_records(0, 0, (const int64_t[]){0, 2, 5}, 3);
    assert_records(1, 0, (const int64_t[]){0, 1}, 2);
    /* by time: 7 (50 ms), 5 (100), 2 (150), 1 (200); trial 4 has no end time */
    assert_records(0, 1, (const int64_t[]){1, 0, 6, 5}, 4);
    assert_records(1, 1, (const int64_t[]){1}, 1);
    struct cmp_pt out[1];
    assert_int_equal(cmp_best_so_far(NULL, 0, 0, 0, out), 0);
}

static void test_config_diff(void **s)
{
    (void)s;
    cJSON *a = cJSON_Parse("{\"a\":1,\"tuner\":{\"name\":\"TPE\",\"classArgs\":{\"optimize_mode\":\"maximize\"}},"
                           "\"list\":[1,2],\"empty\":{}}");
    cJSON *b = cJSON_Parse("{\"a\":1,\"tuner\":{\"name\":\"Random\"},\"list\":[1,2],\"b\":\"x\",\"empty\":{}}");
    const cJSON *cfgs[] = {a, b, NULL};
    cJSON *d = cmp_config_diff(cfgs, 3);
    char *text = cJSON_PrintUnformatted(d);
    assert_string_equal(text,
        "{\"rows\":["
        "{\"key\":\"a\",\"values\":[\"1\",\"1\",null],\"differs\":true},"
        "{\"key\":\"tuner.name\",\"values\":[\"\\\"TPE\\\"\",\"\\\"Random\\\"\",null],\"differs\":true},"
        "{\"key\":\"tuner.classArgs.optimize_mode\",\"values\":[\"\\\"maximize\\\"\",null,null],\"differs\":true},"
        "{\"key\":\"list\",\"values\":[\"[1,2]\",\"[1,2]\",null],\"differs\":true},"
        "{\"key\":\"empty\",\"values\":[\"{}\",\"{}\",null],\"differs\":true},"
        "{\"key\":\"b\",\"values\":[null,\"\\\"x\\\"\",null],\"differs\":true}],\"differing\":6}");
    free(text);
    cJSON_Delete(d);
    d = cmp_config_diff(cfgs, 2); /* the two alone: what they share is not marked */
    text = cJSON_PrintUnformatted(d);
    assert_non_null(strstr(text, "{\"key\":\"a\",\"values\":[\"1\",\"1\"],\"differs\":false}"));
    assert_non_null(strstr(text, "{\"key\":\"list\",\"values\":[\"[1,2]\",\"[1,2]\"],\"differs\":false}"));
    assert_non_null(strstr(text, "\"differing\":3}"));
    free(text);
    cJSON_Delete(d);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

/* a value for trial k that improves now and then and wanders in between */
static double value_of(int k)
{
    return (double)((k * 7919) % 1000) / 10.0 + k * 0.01;
}

static void add_trials(struct db *db, const char *exp, char tag, int n, int64_t start)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e, "UPDATE experiment SET start_time = ? WHERE id = ?", "is", start, exp), 1);
    for (int k = 0; k < n; k++) {
        char id[16];
        snprintf(id, sizeof id, "%c%04d", tag, k);
        assert_int_equal(db_run(db, &e,
            "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters, status, platform, submit_time,"
            " end_time, updated_at, final_metric, final_metric_json) VALUES (?,?,?,?,'{}','SUCCEEDED','local',1,?,1,?,'1')",
            "ssiiiF", id, exp, (int64_t)k, (int64_t)k, start + 1000 * (int64_t)k, value_of(k)), 1);
    }
}

/* equal to the 10 significant digits the answer has */
static int near(double got, double want)
{
    return fabs(got - want) <= 1e-9 * fmax(1, fabs(want));
}

static const cJSON *exp_item(const cJSON *r, int i)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItem(r, "experiments"), i);
}

/* the records of trials 0..n-1 by trial number */
static cJSON *true_records(int n, int maximize)
{
    cJSON *out = cJSON_CreateArray();
    double best = 0;
    for (int k = 0; k < n; k++) {
        double v = value_of(k);
        if (k == 0 || (maximize ? v > best : v < best)) {
            best = v;
            cJSON_AddItemToArray(out, cJSON_CreateNumber(k));
        }
    }
    return out;
}

static void test_compare_on_a_database(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "big", tmpdir, "{\"tuner\":{\"name\":\"TPE\",\"classArgs\":{\"optimize_mode\":\"maximize\"}}}",
                      1, 0);
    fx_add_experiment(db, "small", tmpdir, "{\"tuner\":{\"name\":\"Random\"}}", 1, 0);
    int nbig = CMP_SPREAD * 3 / 2;
    add_trials(db, "big", 'B', nbig, 1000000);
    add_trials(db, "small", 'S', 40, 2000000);
    char *ids[] = {"big", "small"};
    struct strbuf sb;
    sb_init(&sb);
    assert_int_equal(exp_compare_json(db, ids, 2, 7, &sb, &e), 0);
    cJSON *r = cJSON_Parse(sb.buf);
    assert_non_null(r);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r, "mixedModes")));
    const cJSON *big = exp_item(r, 0), *small = exp_item(r, 1);
    assert_string_equal(cJSON_GetObjectItem(big, "optimizeMode")->valuestring, "maximize");
    assert_string_equal(cJSON_GetObjectItem(small, "tuner")->valuestring, "Random");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(big, "exact")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(small, "exact")));
    /* small: read whole, its records are the true ones, by trial number and (1 s apart) by time */
    cJSON *want = true_records(40, 0);
    const cJSON *got = cJSON_GetObjectItem(small, "bestBySeq"), *bytime = cJSON_GetObjectItem(small, "bestByTime");
    assert_int_equal(cJSON_GetArraySize(got), cJSON_GetArraySize(want));
    for (int i = 0; i < cJSON_GetArraySize(want); i++) {
        int64_t k = (int64_t)cJSON_GetArrayItem(want, i)->valuedouble;
        assert_int_equal((int64_t)cJSON_GetArrayItem(cJSON_GetArrayItem(got, i), 0)->valuedouble, k);
        assert_true(near(cJSON_GetArrayItem(cJSON_GetArrayItem(got, i), 1)->valuedouble, value_of((int)k)));
        assert_true(cJSON_GetArrayItem(cJSON_GetArrayItem(bytime, i), 0)->valuedouble == (double)k);
    }
    cJSON_Delete(want);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(small, "distribution"), "n")->valueint, 40);
    /* big: past the sample; from exactFromSeq on, its records are the true ones */
    want = true_records(nbig, 1);
    got = cJSON_GetObjectItem(big, "bestBySeq");
    const cJSON *from = cJSON_GetObjectItem(big, "exactFromSeq");
    assert_true(cJSON_IsNumber(from));
    int i = 0, j = 0, n = cJSON_GetArraySize(got);
    while (i < n && cJSON_GetArrayItem(cJSON_GetArrayItem(got, i), 0)->valuedouble < from->valuedouble)
        i++;
    while (j < cJSON_GetArraySize(want) && cJSON_GetArrayItem(want, j)->valuedouble < from->valuedouble)
        j++;
    assert_true(i < n);
    assert_int_equal(n - i, cJSON_GetArraySize(want) - j);
    for (; i < n; i++, j++)
        assert_true(cJSON_GetArrayItem(cJSON_GetArrayItem(got, i), 0)->valuedouble ==
                    cJSON_GetArrayItem(want, j)->valuedouble);
    cJSON_Delete(want);
    /* the best is exact; the distribution is of the spread only, on the shared bins */
    double best = -INFINITY;
    for (int k = 0; k < nbig; k++)
        best = fmax(best, value_of(k));
    assert_true(near(cJSON_GetObjectItem(cJSON_GetObjectItem(big, "best"), "value")->valuedouble, best));
    const cJSON *dist = cJSON_GetObjectItem(big, "distribution");
    int spread = cJSON_GetObjectItem(dist, "n")->valueint, sum = 0;
    assert_true(spread > CMP_SPREAD * 9 / 10 && spread <= CMP_SPREAD);
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(dist, "counts")) sum += c->valueint;
    assert_int_equal(sum, spread);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(dist, "counts")), CMP_BINS);
    const cJSON *rows = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "config"), "rows");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 0), "key")->valuestring, "tuner.name");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 0), "differs")));
    cJSON_Delete(r);
    sb_free(&sb);
    /* an unknown id: named, nothing written */
    char *bad[] = {"big", "nosuch"};
    sb_init(&sb);
    assert_int_equal(exp_compare_json(db, bad, 2, -1, &sb, &e), -2);
    assert_non_null(strstr(e.msg, "'nosuch'"));
    assert_int_equal(sb.len, 0);
    sb_free(&sb);
    db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_so_far_worked_example),
        cmocka_unit_test(test_config_diff),
        cmocka_unit_test(test_compare_on_a_database),
    };
    return run_in_tmpdir(tmpdir, tests);
}
