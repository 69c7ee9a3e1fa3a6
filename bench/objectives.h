/* objectives.h: the test functions of bench/functions.json, written out
 * in C from their formulas (checked against the file's check points by
 * tests/unit/test_tuners_tpe.c and at the start of bench/tuner_quality.c). Header-only
 * so that the unit test, which links the tuners library alone, can use them. */
#ifndef TRIALQ_BENCH_OBJECTIVES_H
#define TRIALQ_BENCH_OBJECTIVES_H

#include <math.h>
#include <string.h>

/* a*(x2 - b*x1^2 + c*x1 - r)^2 + s*(1 - t)*cos(x1) + s */
static inline double obj_branin(const double *x)
{
    const double a = 1, b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, r = 6, s = 10, t = 1 / (8 * M_PI);
    double u = x[1] - b * x[0] * x[0] + c * x[0] - r;
    return a * u * u + s * (1 - t) * cos(x[0]) + s;
}

/* -sum_i alpha_i exp(-sum_j A_ij (x_j - P_ij)^2), P = 1e-4 * P_int */
static inline double obj_hartmann6(const double *x)
{
    static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
    static const double A[4][6] = {
        {10, 3, 17, 3.5, 1.7, 8},
        {0.05, 10, 17, 0.1, 8, 14},
        {3, 3.5, 1.7, 10, 17, 8},
        {17, 8, 0.05, 10, 0.1, 14},
    };
    static const double P[4][6] = {
        {1312, 1696, 5569, 124, 8283, 5886},
        {2329, 4135, 8307, 3736, 1004, 9991},
        {2348, 1451, 3522, 2883, 3047, 6650},
        {4047, 8828, 8732, 5743, 1091, 381},
    };
    double sum = 0;
    for (int i = 0; i < 4; i++) {
        double inner = 0;
        for (int j = 0; j < 6; j++) {
            double dx = x[j] - 1e-4 * P[i][j];
            inner += A[i][j] * dx * dx;
        }
        sum += alpha[i] * exp(-inner);
    }
    return -sum;
}

/* sum_{i=1..3} 100 (x_{i+1} - x_i^2)^2 + (x_i - 1)^2 */
static inline double obj_rosenbrock4(const double *x)
{
    double sum = 0;
    for (int i = 0; i < 3; i++) {
        double u = x[i + 1] - x[i] * x[i], v = x[i] - 1;
        sum += 100 * u * u + v * v;
    }
    return sum;
}

struct objective {
    const char *name;  /* as in functions.json */
    int dim;           /* arguments x1 .. x<dim> */
    double (*f)(const double *x);
};

static const struct objective objectives[] = {
    {"branin", 2, obj_branin},
    {"hartmann6", 6, obj_hartmann6},
    {"rosenbrock4", 4, obj_rosenbrock4},
};

static inline const struct objective *objective_find(const char *name)
{
    for (size_t i = 0; i < sizeof objectives / sizeof objectives[0]; i++)
        if (strcmp(objectives[i].name, name) == 0)
            return &objectives[i];
    return NULL;
}

#endif
