/* curvefit.c: the learning-curve model behind the Curvefitting assessor, after NNI's
 * CurveModel (curvefitting_assessor/model_factory.py, from Domhan et al., 2015).
 *
 * NNI fits 12 curve families separately by least squares (scipy's curve_fit from
 * all-ones starting points), keeps those that fit and agree, and combines them with
 * weights sampled by MCMC. What trialq keeps, exactly:
 * - the selection: a family is kept if its squared residuals sum to less than
 *   mean(y)^2 * n, and then only if its prediction at the target epoch lies strictly
 *   within n/10 standard deviations of the median of the kept families' predictions
 *   at the last observed epoch (NNI's filter_curve, which in effect asks for a curve
 *   that has converged); fewer than 4 families left means "no prediction yet";
 * - the combination: the mean of the families' predictions at the target epoch. NNI's
 *   MCMC starts from equal weights and takes 20 steps of standard deviation 0.0005,
 *   so its weights stay within about 0.2% of equal; trialq uses equal weights.
 * What differs:
 * - the fit is deterministic: the parameters a family is linear in are solved
 *   exactly (least squares by QR) for each value of its one or two other parameters,
 *   which are found by a grid search refined around the best point. scipy's
 *   Levenberg-Marquardt from all-ones often stops in a poor local minimum or fails
 *   (and NNI then reuses the parameters of whatever curve it fitted before, for any
 *   trial, from a module-level table); a failed fit here just leaves the family out;
 * - nine families, not twelve: weibull is janoschek with k = kappa^delta (the same
 *   curves, which NNI counts twice), exp4 is janoschek with a - beta > 0, and ilog2
 *   (c - a / log x) is infinite at epoch 1, so NNI's filter always drops it;
 * - vap, exp(a + b/x + c log x), is fitted to log y (a linear problem), where NNI
 *   fits y; it is left out when a value is not positive. */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BASIS 3
#define LEAST_FITTED 4     /* NNI's LEAST_FITTED_FUNCTION */
#define GRID_1D 64
#define GRID_2D 24
#define REFINE_ROUNDS 7
#define REFINE_HALF 3      /* a round looks at best +- 3 steps, then divides the step by 3 */

/* The families, in NNI's order (curve_combination_models) without weibull, exp4 and
 * ilog2 */
enum family_id { F_VAP, F_POW3, F_LINEAR, F_LOGX, F_HILL, F_LOGPOW, F_POW4, F_MMF, F_JANOSCHEK };

/* A family: y = sum_k c_k g_k(x; theta), linear in c, with 0-2 other parameters
 * theta searched in [lo, hi] (on a log scale where log_scale); basis() has its g. */
struct family {
    const char *name;
    enum family_id id;
    int n_theta;
    double lo[2], hi[2];
    int log_scale[2];
    int n_basis;
    int fit_log;  /* fit log y (vap) */
};

static int finite_all(const double *g, int n)
{
    for (int i = 0; i < n; i++)
        if (!isfinite(g[i]))
            return 0;
    return 1;
}

/* g[0 .. n_basis) of family f at x and theta (lx = log x, so that powers cost one
 * exp); 0 when one that depends on theta is not finite. */
static int basis(const struct family *f, const double *th, double x, double lx, double *g)
{
    switch (f->id) {
    case F_VAP: /* exp(a + b/x + c log x) */
        g[0] = 1, g[1] = 1 / x, g[2] = lx;
        return 1; /* finite where x is */
    case F_POW3: /* c - a x^-alpha; theta = alpha */
        g[0] = 1, g[1] = exp(-th[0] * lx);
        break;
    case F_LINEAR: /* a x + b */
        g[0] = x, g[1] = 1;
        return 1; /* finite where x is */
    case F_LOGX: /* logx_linear: a log x + b */
        g[0] = lx, g[1] = 1;
        return 1; /* finite where x is */
    case F_HILL:
        /* dr_hill_zero_background: theta x^eta / (kappa^eta + x^eta); th = (eta, kappa),
         * written 1 / (1 + (kappa/x)^eta) so that large powers do not overflow */
        g[0] = 1 / (1 + exp(th[0] * (log(th[1]) - lx)));
        break;
    case F_LOGPOW: /* log_power: a / (1 + (x / e^b)^c); th = (e^b, c) */
        g[0] = 1 / (1 + exp(th[1] * (lx - log(th[0]))));
        break;
    case F_POW4:
        /* c - (a x + b)^-alpha = c - a^-alpha (x + s)^-alpha with s = b/a > -1, so
         * th = (alpha, s + 1) */
        g[0] = 1, g[1] = pow(x + th[1] - 1, -th[0]);
        break;
    case F_MMF: /* alpha - (alpha - beta) / (1 + (kappa x)^delta); th = (kappa, delta) */
        g[0] = 1, g[1] = 1 / (1 + exp(th[1] * (log(th[0]) + lx)));
        break;
    case F_JANOSCHEK: /* a - (a - beta) exp(-k x^delta); th = (k, delta) */
        g[0] = 1, g[1] = exp(-th[0] * exp(th[1] * lx));
        break;
    }
    return finite_all(g, f->n_basis);
}

static const struct family families[] = {
    {"vap", F_VAP, 0, {0}, {0}, {0}, 3, 1},
    {"pow3", F_POW3, 1, {1e-3}, {20}, {1}, 2, 0},
    {"linear", F_LINEAR, 0, {0}, {0}, {0}, 2, 0},
    {"logx_linear", F_LOGX, 0, {0}, {0}, {0}, 2, 0},
    {"dr_hill_zero_background", F_HILL, 2, {1e-2, 1e-2}, {20, 1e4}, {1, 1}, 1, 0},
    {"log_power", F_LOGPOW, 2, {1e-3, -20}, {1e4, 20}, {1, 0}, 1, 0},
    {"pow4", F_POW4, 2, {1e-3, 1e-3}, {20, 1e4}, {1, 1}, 2, 0},
    {"mmf", F_MMF, 2, {1e-4, 1e-2}, {1e2, 20}, {1, 1}, 2, 0},
    {"janoschek", F_JANOSCHEK, 2, {1e-4, 1e-2}, {1e2, 10}, {1, 1}, 2, 0},
};
#define N_FAMILIES ((int)(sizeof families / sizeof families[0]))

struct work {
    int n;
    const double *y;
    double *lx;    /* log x of epochs 1 .. n */
    double *t;     /* the fitted target: y, or log y */
    double *col;   /* MAX_BASIS columns of n */
    double *q;     /* their orthonormalised copies */
    double *rhs;   /* scratch copy of t */
};

/* Least squares of w->t on the first m columns by modified Gram-Schmidt. Returns 0
 * when the columns are numerically dependent (the parameters are not determined). */
static int lsq(struct work *w, int m, double *c)
{
    int n = w->n;
    double R[MAX_BASIS][MAX_BASIS] = {{0}}, b[MAX_BASIS];
    memcpy(w->q, w->col, sizeof *w->q * (size_t)m * (size_t)n);
    for (int k = 0; k < m; k++) {
        double *v = w->q + (size_t)k * n, norm0 = 0, norm = 0;
        for (int i = 0; i < n; i++)
            norm0 += v[i] * v[i];
        for (int j = 0; j < k; j++) {
            const double *qj = w->q + (size_t)j * n;
            double d = 0;
            for (int i = 0; i < n; i++)
                d += qj[i] * v[i];
            R[j][k] = d;
            for (int i = 0; i < n; i++)
                v[i] -= d * qj[i];
        }
        for (int i = 0; i < n; i++)
            norm += v[i] * v[i];
        if (!(norm0 > 0) || !(norm > 1e-20 * norm0))
            return 0;
        R[k][k] = sqrt(norm);
        for (int i = 0; i < n; i++)
            v[i] /= R[k][k];
    }
    memcpy(w->rhs, w->t, sizeof *w->rhs * (size_t)n);
    for (int k = 0; k < m; k++) {
        const double *qk = w->q + (size_t)k * n;
        double d = 0;
        for (int i = 0; i < n; i++)
            d += qk[i] * w->rhs[i];
        b[k] = d;
        for (int i = 0; i < n; i++)
            w->rhs[i] -= d * qk[i];
    }
    for (int k = m - 1; k >= 0; k--) {
        double s = b[k];
        for (int j = k + 1; j < m; j++)
            s -= R[k][j] * c[j];
        c[k] = s / R[k][k];
    }
    return finite_all(c, m);
}

static double model_at(const struct family *f, const double *th, const double *c, double x)
{
    double g[MAX_BASIS], s = 0;
    if (!basis(f, th, x, log(x), g))
        return NAN;
    for (int k = 0; k < f->n_basis; k++)
        s += c[k] * g[k];
    return f->fit_log ? exp(s) : s;
}

/* The sum of squared residuals (in y) of family f at theta, with its linear
 * parameters solved into c; INFINITY when it cannot be fitted there. */
static double sse_at(const struct family *f, const double *th, struct work *w, double *c)
{
    int n = w->n;
    double g[MAX_BASIS];
    for (int i = 0; i < n; i++) {
        if (!basis(f, th, i + 1.0, w->lx[i], g))
            return INFINITY;
        for (int k = 0; k < f->n_basis; k++)
            w->col[(size_t)k * n + i] = g[k];
    }
    if (!lsq(w, f->n_basis, c))
        return INFINITY;
    double sse = 0;
    for (int i = 0; i < n; i++) {
        double v = 0;
        for (int k = 0; k < f->n_basis; k++)
            v += c[k] * w->col[(size_t)k * n + i];
        double r = (f->fit_log ? exp(v) : v) - w->y[i];
        sse += r * r;
    }
    return isfinite(sse) ? sse : INFINITY;
}

static double coord(const struct family *f, int d, double u)
{
    return f->log_scale[d] ? exp(u) : u;
}

/* The fit at the search point u (theta = coord(u), into th and c): u into best_u and
 * its sum of squares into *best when lower than *best. */
static void try_point(const struct family *f, const double u[2], struct work *w, double *th, double *c,
                      double *best, double best_u[2])
{
    for (int d = 0; d < f->n_theta; d++)
        th[d] = coord(f, d, u[d]);
    double s = sse_at(f, th, w, c);
    if (s < *best) {
        *best = s;
        memcpy(best_u, u, 2 * sizeof *u);
    }
}

/* Fits family f; returns 1 with its predictions at the last epoch and at target. */
static int fit_family(const struct family *f, struct work *w, int target, double *sse, double *at_last,
                      double *at_target)
{
    int n = w->n;
    if (n < f->n_basis + f->n_theta)  /* scipy's curve_fit needs as many points as parameters */
        return 0;
    for (int i = 0; i < n; i++) {
        if (f->fit_log && !(w->y[i] > 0))
            return 0;
        w->t[i] = f->fit_log ? log(w->y[i]) : w->y[i];
    }
    double lo[2] = {0}, hi[2] = {0}, th[2] = {0}, best_u[2] = {0}, c[MAX_BASIS];
    for (int d = 0; d < f->n_theta; d++) {
        lo[d] = f->log_scale[d] ? log(f->lo[d]) : f->lo[d];
        hi[d] = f->log_scale[d] ? log(f->hi[d]) : f->hi[d];
    }
    double best = INFINITY;
    if (f->n_theta > 0) {
        /* a grid over theta, then rounds that zoom in on the best point */
        int grid = f->n_theta == 1 ? GRID_1D : GRID_2D;
        double step[2];
        for (int d = 0; d < f->n_theta; d++)
            step[d] = (hi[d] - lo[d]) / (grid - 1);
        int g1 = f->n_theta == 2 ? grid : 1;
        for (int i = 0; i < grid; i++)
            for (int j = 0; j < g1; j++) {
                double u[2] = {lo[0] + i * step[0], lo[1] + j * step[1]};
                try_point(f, u, w, th, c, &best, best_u);
            }
        if (!isfinite(best))
            return 0;
        int span = 2 * REFINE_HALF + 1;
        for (int round = 0; round < REFINE_ROUNDS; round++) {
            double centre[2] = {best_u[0], best_u[1]};
            for (int d = 0; d < f->n_theta; d++)
                step[d] /= REFINE_HALF;
            for (int i = 0; i < span; i++)
                for (int j = 0; j < (f->n_theta == 2 ? span : 1); j++) {
                    double u[2] = {centre[0] + (i - REFINE_HALF) * step[0], centre[1] + (j - REFINE_HALF) * step[1]};
                    int inside = 1;
                    for (int d = 0; d < f->n_theta; d++)
                        inside &= u[d] >= lo[d] && u[d] <= hi[d];
                    if (inside)
                        try_point(f, u, w, th, c, &best, best_u);
                }
        }
        for (int d = 0; d < f->n_theta; d++)
            th[d] = coord(f, d, best_u[d]);
    }
    *sse = sse_at(f, th, w, c);
    if (!isfinite(*sse))
        return 0;
    *at_last = model_at(f, th, c, n);
    *at_target = model_at(f, th, c, target);
    return isfinite(*at_last) && isfinite(*at_target);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int curve_predict(const double *y, int n, int target, double *pred, int *n_effective)
{
    if (n_effective)
        *n_effective = 0;
    if (n <= 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (!isfinite(y[i]))
            return 0;
    struct work w = {.n = n, .y = y};
    w.lx = xmalloc(sizeof *w.lx * (size_t)n);
    for (int i = 0; i < n; i++)
        w.lx[i] = log(i + 1.0);
    w.t = xmalloc(sizeof *w.t * (size_t)n);
    w.col = xmalloc(sizeof *w.col * (size_t)n * MAX_BASIS);
    w.q = xmalloc(sizeof *w.q * (size_t)n * MAX_BASIS);
    w.rhs = xmalloc(sizeof *w.rhs * (size_t)n);
    double sse[N_FAMILIES], last[N_FAMILIES], at_target[N_FAMILIES], kept_last[N_FAMILIES];
    int kept[N_FAMILIES], n_kept = 0;

    double avg = 0;
    for (int i = 0; i < n; i++)
        avg += y[i];
    avg /= n;
    double standard = avg * avg * n;  /* NNI's filter: mean squared residual < mean(y)^2 */
    for (int f = 0; f < N_FAMILIES; f++)
        if (fit_family(&families[f], &w, target, &sse[f], &last[f], &at_target[f]) && sse[f] < standard) {
            kept_last[n_kept] = last[f];
            kept[n_kept++] = f;
        }
    free(w.lx);
    free(w.t);
    free(w.col);
    free(w.q);
    free(w.rhs);
    if (n_kept == 0)
        return 0;

    /* numpy's median (the mean of the middle two for an even count) and population
     * standard deviation of the kept families' values at the last epoch */
    double mean = 0, var = 0;
    for (int k = 0; k < n_kept; k++)
        mean += kept_last[k];
    mean /= n_kept;
    for (int k = 0; k < n_kept; k++)
        var += (kept_last[k] - mean) * (kept_last[k] - mean);
    double std = sqrt(var / n_kept);
    qsort(kept_last, (size_t)n_kept, sizeof *kept_last, cmp_double);
    double median = n_kept % 2 ? kept_last[n_kept / 2] : 0.5 * (kept_last[n_kept / 2 - 1] + kept_last[n_kept / 2]);
    double eps = n / 10.0 * std, sum = 0;
    int n_eff = 0;
    for (int k = 0; k < n_kept; k++) {
        double v = at_target[kept[k]];
        if (v < median + eps && v > median - eps) {
            sum += v;
            n_eff++;
        }
    }
    if (n_effective)
        *n_effective = n_eff;
    if (n_eff < LEAST_FITTED)
        return 0;
    *pred = sum / n_eff;
    return 1;
}
