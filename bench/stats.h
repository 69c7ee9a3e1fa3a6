/* stats.h: the order statistics the quality benchmarks print (header-only). */
#ifndef TRIALQ_BENCH_STATS_H
#define TRIALQ_BENCH_STATS_H

#include <math.h>

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy.percentile with linear interpolation, on sorted values */
static inline double percentile(const double *sorted, int n, double q)
{
    double pos = (n - 1) * q / 100.0;
    int lo = (int)floor(pos);
    if (lo >= n - 1)
        return sorted[n - 1];
    return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * (pos - lo);
}

#endif
