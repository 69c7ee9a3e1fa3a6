/* test_tuners_analysis.c: the analysis views' computations (tuners/analysis.c): the
 * contour grid's kernel average on worked examples computed by hand and against the
 * formula evaluated directly, the bandwidth rule, the ECDF with ties, and the columns
 * of a search space with a nested choice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/tuner_fixtures.h"
#include "tuners/analysis.h"

#define CLOSE(got, want) assert_true(fabs((got) - (want)) < 1e-9)

/* Two points, A (0.25, 0.25) with z = 1 and B (0.75, 0.75) with z = 3, bandwidths 0.5,
 * a 2 x 2 grid: its cell centres are the points and the two other corners. At A's cell
 * A weighs exp(0) = 1 and B exp(-(1 + 1) / 2) = e^-1, so the average is
 * (1 + 3/e) / (1 + 1/e) = 1.537882842739...; at B's cell (3 + 1/e) / (1 + 1/e) =
 * 2.462117157260...; at the two others both are one bandwidth away along one axis
 * and one along the other: equal weights, the mean 2. Every cell is within 2
 * bandwidths of a point: none is blank. */
static void test_contour_by_hand(void **st)
{
    (void)st;
    double u[] = {0.25, 0.75}, v[] = {0.25, 0.75}, z[] = {1, 3}, out[4];
    assert_int_equal(an_contour(u, v, z, 2, 2, 0.5, 0.5, out), 4);
    double e1 = exp(-1);
    CLOSE(out[0], (1 + 3 * e1) / (1 + e1));
    CLOSE(out[0], 1.537882842739);
    CLOSE(out[1], 2);
    CLOSE(out[2], 2);
    CLOSE(out[3], 2.462117157261);
}

/* One point at (0.125, 0.125), z = 5, bandwidths 0.25 on a 4 x 4 grid (centres 0.125,
 * 0.375, 0.625, 0.875): cell (i, j) is d^2 = i^2 + j^2 bandwidths^2 away. The cells
 * with d < 2 (i^2 + j^2 < 4: (0,0), (1,0), (0,1), (1,1)) hold 5; the other 12 are
 * blank (NAN), (2,0) and (0,2) at exactly 2 bandwidths included. */
static void test_contour_blank_far_cells(void **st)
{
    (void)st;
    double u[] = {0.125}, v[] = {0.125}, z[] = {5}, out[16];
    assert_int_equal(an_contour(u, v, z, 1, 4, 0.25, 0.25, out), 4);
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) {
            if (i * i + j * j < 4)
                CLOSE(out[j * 4 + i], 5);
            else
                assert_true(isnan(out[j * 4 + i]));
        }
    /* no points: every cell blank */
    assert_int_equal(an_contour(u, v, z, 0, 4, 0.25, 0.25, out), 0);
    for (int c = 0; c < 16; c++)
        assert_true(isnan(out[c]));
}

/* Random points on a 30 x 30 grid: each cell equals sum K z / sum K with
 * K = exp(-d^2 / 2) evaluated directly, or is blank exactly when no point is nearer
 * than 2 bandwidths. */
static void test_contour_equals_formula(void **st)
{
    (void)st;
    enum { M = 300, G = 30 };
    double u[M], v[M], z[M], out[G * G];
    unsigned seed = 7;
    for (int k = 0; k < M; k++) {
        /* points in the lower-left quarter only: the rest of the grid must be blank */
        u[k] = 0.45 * (rand_r(&seed) / (double)RAND_MAX);
        v[k] = 0.45 * (rand_r(&seed) / (double)RAND_MAX);
        z[k] = sin(6 * u[k]) + v[k] * v[k];
    }
    double hu = an_bandwidth(u, M, G), hv = an_bandwidth(v, M, G);
    int filled = an_contour(u, v, z, M, G, hu, hv, out), count = 0, blank = 0;
    for (int j = 0; j < G; j++)
        for (int i = 0; i < G; i++) {
            double cu = (i + 0.5) / G, cv = (j + 0.5) / G, num = 0, den = 0, nearest = INFINITY;
            for (int k = 0; k < M; k++) {
                double d2 = pow((cu - u[k]) / hu, 2) + pow((cv - v[k]) / hv, 2);
                num += exp(-d2 / 2) * z[k];
                den += exp(-d2 / 2);
                nearest = d2 < nearest ? d2 : nearest;
            }
            if (nearest < AN_REACH * AN_REACH) {
                assert_true(fabs(out[j * G + i] - num / den) < 1e-9 * (1 + fabs(num / den)));
                count++;
            } else {
                assert_true(isnan(out[j * G + i]));
                blank += i >= G / 2 + 4 && j >= G / 2 + 4;
            }
        }
    assert_int_equal(filled, count);
    assert_true(count > 100);
    assert_int_equal(blank, (G / 2 - 4) * (G / 2 - 4)); /* the far corner is blank */
}

/* Scott's rule for two dimensions: sd(u) * m^(-1/6), floored at one cell. */
static void test_bandwidth(void **st)
{
    (void)st;
    double u[] = {0, 0.5, 1};
    /* mean 0.5, sample variance (0.25 + 0 + 0.25) / 2 = 0.25 */
    CLOSE(an_bandwidth(u, 3, 30), 0.5 * pow(3, -1.0 / 6));
    double same[] = {0.3, 0.3, 0.3, 0.3};
    CLOSE(an_bandwidth(same, 4, 30), 1.0 / 30);
    CLOSE(an_bandwidth(u, 1, 10), 0.1);
    CLOSE(an_bandwidth(u, 0, 10), 0.1);
}

/* The ECDF of 3, 1, 2, 2, 5: F(1) = 1/5, F(2) = 3/5 (both 2s), F(3) = 4/5, F(5) = 1. */
static void test_ecdf_ties(void **st)
{
    (void)st;
    double v[] = {3, 1, 2, 2, 5}, x[5], f[5];
    assert_int_equal(an_ecdf(v, 5, x, f), 4);
    double wx[] = {1, 2, 3, 5}, wf[] = {0.2, 0.6, 0.8, 1.0};
    for (int i = 0; i < 4; i++) {
        CLOSE(x[i], wx[i]);
        CLOSE(f[i], wf[i]);
    }
    double one[] = {-7};
    assert_int_equal(an_ecdf(one, 1, x, f), 1);
    CLOSE(x[0], -7);
    CLOSE(f[0], 1);
    assert_int_equal(an_ecdf(v, 0, x, f), 0);
}

/* Columns: a choice by option index, a randint by its integer, a log type without its
 * non-positive values, a nested choice's branch parameters over the trials of that
 * branch only; values that do not fit leave their trial out. */
static void test_columns_nested(void **st)
{
    (void)st;
    struct ss_space *s = parse_space(
        "{\"lr\": {\"_type\": \"loguniform\", \"_value\": [0.001, 1]},"
        " \"k\": {\"_type\": \"randint\", \"_value\": [2, 6]},"
        " \"m\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"a\", \"p\": {\"_type\": \"uniform\", \"_value\": [0, 1]}},"
        "                                           {\"_name\": \"b\", \"q\": {\"_type\": \"choice\", \"_value\": [1, \"two\"]}}]}}");
    const char *rows[] = {
        "{\"lr\": 0.01, \"k\": 3, \"m\": {\"_name\": \"a\", \"p\": 0.5}}",
        "{\"lr\": 0.1, \"k\": 5, \"m\": {\"_name\": \"b\", \"q\": \"two\"}}",
        "{\"lr\": 0, \"k\": 9, \"m\": {\"_name\": \"a\", \"p\": 0.25}}",  /* lr not > 0, k out of range */
        "{\"lr\": 0.5, \"k\": 2, \"m\": {\"_name\": \"b\", \"q\": 1}}",
        "{\"lr\": 0.2, \"k\": 4, \"m\": {\"_name\": \"c\"}}",             /* no such branch */
    };
    struct imp_trial t[5];
    for (int i = 0; i < 5; i++) {
        t[i].params = cJSON_Parse(rows[i]);
        t[i].value = i;
    }
    struct an_column *c;
    int n = an_columns(s, t, 5, &c);
    assert_int_equal(n, 5);
    const char *paths[] = {"lr", "k", "m", "m[0].p", "m[1].q"};
    for (int j = 0; j < n; j++)
        assert_string_equal(c[j].p->path, paths[j]);
    const struct an_column *lr = an_column_find(c, n, "lr"), *k = an_column_find(c, n, "k");
    const struct an_column *m = an_column_find(c, n, "m"), *p = an_column_find(c, n, "m[0].p");
    const struct an_column *q = an_column_find(c, n, "m[1].q");
    assert_null(an_column_find(c, n, "m[0]"));
    assert_int_equal(lr->n, 4);
    int lr_trials[] = {0, 1, 3, 4};
    double lr_x[] = {0.01, 0.1, 0.5, 0.2};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(lr->trial[i], lr_trials[i]);
        CLOSE(lr->x[i], lr_x[i]);
    }
    assert_int_equal(k->n, 4);
    double k_x[] = {3, 5, 2, 4};
    for (int i = 0; i < 4; i++)
        CLOSE(k->x[i], k_x[i]);
    assert_int_equal(k->trial[2], 3);
    assert_int_equal(m->n, 4); /* trial 4's branch "c" is none of the options */
    double m_x[] = {0, 1, 0, 1};
    for (int i = 0; i < 4; i++)
        CLOSE(m->x[i], m_x[i]);
    assert_int_equal(p->n, 2);
    assert_int_equal(p->trial[0], 0);
    assert_int_equal(p->trial[1], 2);
    CLOSE(p->x[0], 0.5);
    CLOSE(p->x[1], 0.25);
    assert_int_equal(q->n, 2);
    assert_int_equal(q->trial[0], 1);
    assert_int_equal(q->trial[1], 3);
    CLOSE(q->x[0], 1); /* "two" is option 1 */
    CLOSE(q->x[1], 0);
    an_columns_free(c, n);
    for (int i = 0; i < 5; i++)
        cJSON_Delete((cJSON *)t[i].params);
    ss_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contour_by_hand),
        cmocka_unit_test(test_contour_blank_far_cells),
        cmocka_unit_test(test_contour_equals_formula),
        cmocka_unit_test(test_bandwidth),
        cmocka_unit_test(test_ecdf_ties),
        cmocka_unit_test(test_columns_nested),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
