/* parzen.c: the Parzen estimators behind TPE (Bergstra et al., 2011, section 4):
 * a weighted mixture with one component per observation plus one for the prior
 * (the search space itself). A component is a product over the dimensions of a
 * normal kernel, truncated to the parameter's range when it has one, or for a
 * categorical dimension of a distribution that favours the observed option.
 *
 * Numeric dimensions live in TPE's internal space (log space for log types) and
 * their prior is NNI's: normal(mu, sigma) for the normal family, and for bounded
 * types normal((low + high) / 2, high - low) truncated to [low, high].
 *
 * The density of a categorical dimension is chosen so that the marginal of the
 * mixture is exactly NNI's categorical estimate (count + prior_weight) / total:
 * with m observations of total weight W and prior weight a, an observation's kernel
 * gives its own option 1 + beta and every option beta (normalised), with
 * beta = a (K - 1) / (K (W + a)). A smaller a in beta alone (pz_shape's
 * cat_prior_weight) makes each kernel favour its own option more than NNI's does. */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LOG_SQRT_2PI 0.91893853320467274178

static int ranked_less(const struct ranked *x, const struct ranked *y)
{
    return x->v < y->v || (x->v == y->v && x->i < y->i);
}

/* A typed bottom-up merge sort: qsort's callback per comparison was a third of a
 * suggestion's time with thousands of trials. */
void ranked_sort(struct ranked *a, int n)
{
    if (n < 2)
        return;
    struct ranked *tmp = xmalloc(sizeof *tmp * (size_t)n), *src = a, *dst = tmp;
    for (int width = 1; width < n; width *= 2) {
        for (int lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = ranked_less(&src[j], &src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        struct ranked *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, sizeof *a * (size_t)n);
    free(tmp);
}

static void ranked_swap(struct ranked *a, int i, int j)
{
    struct ranked t = a[i];
    a[i] = a[j];
    a[j] = t;
}

/* Quickselect (Hoare's partition, median-of-three pivot); a range that takes more
 * than 2 log2(n) + 8 rounds is sorted instead, so the work stays O(n log n) at
 * worst. The set of the k least is the same whatever the order: ranked_less is a
 * strict total order (values, then indexes). */
void ranked_select(struct ranked *a, int n, int k)
{
    int lo = 0, hi = n - 1, budget = 8;
    for (int m = n; m > 1; m /= 2)
        budget += 2;
    while (lo < hi && k > lo && k <= hi) {
        if (budget-- == 0) {
            ranked_sort(a + lo, hi - lo + 1);
            return;
        }
        int mid = lo + (hi - lo) / 2;
        if (ranked_less(&a[mid], &a[lo]))
            ranked_swap(a, mid, lo);
        if (ranked_less(&a[hi], &a[lo]))
            ranked_swap(a, hi, lo);
        if (ranked_less(&a[hi], &a[mid]))
            ranked_swap(a, hi, mid);
        struct ranked pivot = a[mid];
        int i = lo, j = hi;
        while (i <= j) {
            while (ranked_less(&a[i], &pivot))
                i++;
            while (ranked_less(&pivot, &a[j]))
                j--;
            if (i <= j)
                ranked_swap(a, i++, j--);
        }
        /* now a[lo .. j] <= pivot <= a[i .. hi], and j < i */
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return;
    }
}

/* Normal CDF via erfc, which keeps its relative precision in the lower tail. */
static double norm_cdf(double z)
{
    return 0.5 * erfc(-z * M_SQRT1_2);
}

static double clamp(double v, double lo, double hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* NNI's adaptive bandwidths for one numeric dimension (tpe_tuner.py,
 * adaptive_parzen_normal): sort the values together with the prior mean; a value's
 * sigma is the larger of the gaps to its neighbours; all are clipped to
 * [prior_sigma / clip_div, prior_sigma], hyperopt's "magic clip" (NNI's clip_div:
 * min(100, n + 2)). sigma[i] is set for the n values x[i * stride]. */
static void adaptive_sigmas(const struct pz_dim *dim, const double *x, int stride, int n, double clip_div,
                            double *sigma, struct ranked *tmp)
{
    double ps = dim->prior_sigma;
    double lo = ps / clip_div;
    if (n == 1) {
        sigma[0] = clamp(0.5 * ps, lo, ps);  /* NNI's special case of one observation */
        return;
    }
    for (int i = 0; i < n; i++)
        tmp[i] = (struct ranked){x[(size_t)i * stride], i};
    tmp[n] = (struct ranked){dim->prior_mu, n};  /* the prior sorts after equal observations */
    ranked_sort(tmp, n + 1);
    for (int k = 0; k <= n; k++) {
        if (tmp[k].i == n)
            continue;
        double left = k > 0 ? tmp[k].v - tmp[k - 1].v : -1;
        double right = k < n ? tmp[k + 1].v - tmp[k].v : -1;
        sigma[tmp[k].i] = clamp(left > right ? left : right, lo, ps);
    }
}

void pz_build(struct pz_mixture *m, const struct pz_dim *dims, int d, const double *x, const double *w, int n_obs,
              const struct pz_shape *sh)
{
    memset(m, 0, sizeof *m);
    int n = n_obs + 1;
    size_t cells = (size_t)n * (size_t)(d ? d : 1);
    m->d = d;
    m->n = n;
    m->dims = dims;
    m->cum = xmalloc(sizeof *m->cum * (size_t)n);
    m->logw = xmalloc(sizeof *m->logw * (size_t)n);
    m->mu = xmalloc(sizeof *m->mu * cells);
    m->inv_sigma = xmalloc(sizeof *m->inv_sigma * cells);
    m->logc = xmalloc(sizeof *m->logc * cells);
    m->logc_other = xmalloc(sizeof *m->logc_other * cells);

    /* Weights: the observations' own, the prior's; a mixture with no weight at all
     * (prior_weight 0 and no observations) falls back to the prior alone. */
    double total = 0;
    for (int i = 0; i < n_obs; i++)
        total += w[i];
    double pw = sh->prior_weight, cpw = sh->cat_prior_weight;
    if (total + pw <= 0)
        pw = cpw = 1;
    double acc = 0;
    for (int i = 0; i < n; i++) {
        double wi = i < n_obs ? w[i] : pw;
        acc += wi;
        m->logw[i] = wi > 0 ? log(wi / (total + pw)) : -INFINITY;
        m->cum[i] = acc / (total + pw);
    }
    m->cum[n - 1] = 1.0;

    int n_spread = sh->n_spread < n_obs ? n_obs : sh->n_spread;
    double *sigma = xmalloc(sizeof *sigma * (size_t)(n_spread + 1));
    struct ranked *tmp = xmalloc(sizeof *tmp * (size_t)(n_spread + 1));
    for (int j = 0; j < d; j++) {
        const struct pz_dim *dim = &dims[j];
        if (dim->n_cat > 0) {
            int K = dim->n_cat;
            double beta = cpw * (K - 1) / ((double)K * (total + cpw));
            double hit = log((1 + beta) / (1 + K * beta)), other = log(beta / (1 + K * beta));
            for (int i = 0; i < n_obs; i++) {
                size_t at = (size_t)i * d + j;
                m->mu[at] = x[at];
                m->logc[at] = hit;
                m->logc_other[at] = other;
            }
            size_t at = (size_t)n_obs * d + j;
            m->mu[at] = -1;  /* the prior: uniform over the options */
            m->logc[at] = m->logc_other[at] = -log((double)K);
            continue;
        }
        double ps = dim->prior_sigma;
        if (n_obs > 0)
            adaptive_sigmas(dim, x + j, d, n_spread, sh->clip_div, sigma, tmp);
        double floor = dim->ordinal ? sh->ordinal_sigma : 0;  /* and Scott's, if wider */
        if (sh->scott > 0 && n_obs > 0)
            floor = fmax(floor, sh->scott * pow((double)n_obs, -1.0 / (d + 4)) * ps);
        for (int i = 0; i < n_obs; i++)
            if (sigma[i] < floor)
                sigma[i] = floor < ps ? floor : ps;
        sigma[n_obs] = ps;  /* the prior keeps its own width */
        for (int i = 0; i < n; i++) {
            size_t at = (size_t)i * d + j;
            double mu = i < n_obs ? x[at] : dim->prior_mu;
            double s = sigma[i];
            double logz = 0;  /* log of the kernel's mass inside [lo, hi] */
            if (isfinite(dim->lo) || isfinite(dim->hi)) {
                double mass = norm_cdf((dim->hi - mu) / s) - norm_cdf((dim->lo - mu) / s);
                logz = log(mass > 1e-300 ? mass : 1e-300);
            }
            m->mu[at] = mu;
            m->inv_sigma[at] = 1 / s;
            m->logc[at] = -LOG_SQRT_2PI - log(s) - logz;
            m->logc_other[at] = 0;
        }
    }
    free(sigma);
    free(tmp);
}

void pz_free(struct pz_mixture *m)
{
    free(m->cum);
    free(m->logw);
    free(m->mu);
    free(m->inv_sigma);
    free(m->logc);
    free(m->logc_other);
    memset(m, 0, sizeof *m);
}

/* Truncated normal by inverting the CDF: one uniform per draw, always inside the
 * range. The centre is inside the range, so the CDF interval contains 1/2 and the
 * inversion never works in a far tail. */
static double sample_truncnorm(double mu, double s, double lo, double hi, struct rng *r)
{
    double a = isfinite(lo) ? norm_cdf((lo - mu) / s) : 0;
    double b = isfinite(hi) ? norm_cdf((hi - mu) / s) : 1;
    for (;;) {
        double u = a + (b - a) * rng_uniform(r);
        double v = mu + s * M_SQRT2 * ss_erfinv(2 * u - 1);
        if (isfinite(v))  /* u == 0 exactly gives -inf for an unbounded side */
            return clamp(v, lo, hi);
    }
}

void pz_sample(const struct pz_mixture *m, struct rng *r, double *x)
{
    /* the component: first whose cumulative weight exceeds u */
    double u = rng_uniform(r);
    int lo = 0, hi = m->n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (m->cum[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    int c = lo;
    for (int j = 0; j < m->d; j++) {
        const struct pz_dim *dim = &m->dims[j];
        size_t at = (size_t)c * m->d + j;
        if (dim->n_cat > 0) {
            /* p(option) = base + extra * [option == centre]: the centre with
             * probability extra, otherwise any option uniformly. */
            double base = exp(m->logc_other[at]);
            double extra = m->mu[at] >= 0 ? exp(m->logc[at]) - base : 0;
            if (extra > 0 && rng_uniform(r) < extra)
                x[j] = m->mu[at];
            else
                x[j] = (double)rng_below(r, (uint64_t)dim->n_cat);
            continue;
        }
        x[j] = sample_truncnorm(m->mu[at], 1 / m->inv_sigma[at], dim->lo, dim->hi, r);
    }
}

/* One term of a log-sum-exp taken in one pass with a running maximum: terms smaller
 * than the maximum by more than 50 change the sum by less than e^-50 each, and
 * skipping their exp() is most of the speed with the many narrow kernels of g(x). */
static inline void lse_add(double v, double *best, double *sum)
{
    if (v > *best) {
        *sum = *sum * exp(*best - v) + 1;
        *best = v;
    } else if (v > *best - 50) {
        *sum += exp(v - *best);
    }
}

/* The log of kernel `at` (component at / d, dimension j) at x: its constant plus, for a
 * numeric dimension, the Gaussian's exponent; for a categorical one, the centre's or
 * the other options' share. */
static inline double kernel_log(const struct pz_mixture *m, int j, size_t at, double x)
{
    if (m->dims[j].n_cat > 0)
        return m->mu[at] == x ? m->logc[at] : m->logc_other[at];
    double z = (x - m->mu[at]) * m->inv_sigma[at];
    return m->logc[at] - 0.5 * z * z;
}

/* log of the marginal density of dimension j at x[j] (the other values of x are not
 * read): the same mixture with every kernel restricted to that dimension. */
double pz_logpdf_dim(const struct pz_mixture *m, const double *x, int j)
{
    double best = -INFINITY, sum = 0;
    for (int c = 0; c < m->n; c++)
        lse_add(m->logw[c] + kernel_log(m, j, (size_t)c * m->d + j, x[j]), &best, &sum);
    return best == -INFINITY ? -INFINITY : best + log(sum);
}

/* log-sum-exp over the components (lse_add) of the kernels' product over the
 * dimensions in mask (all of them with mask NULL) */
static double logpdf_over(const struct pz_mixture *m, const double *x, const unsigned char *mask)
{
    double best = -INFINITY, sum = 0;
    for (int c = 0; c < m->n; c++) {
        double v = m->logw[c];
        for (int j = 0; j < m->d; j++)
            if (!mask || mask[j])
                v += kernel_log(m, j, (size_t)c * m->d + j, x[j]);
        lse_add(v, &best, &sum);
    }
    return best == -INFINITY ? -INFINITY : best + log(sum);
}

double pz_logpdf(const struct pz_mixture *m, const double *x)
{
    return logpdf_over(m, x, NULL);
}

double pz_logpdf_mask(const struct pz_mixture *m, const double *x, const unsigned char *mask)
{
    return logpdf_over(m, x, mask);
}
