/* importance.c: PED-ANOVA over a search space (importance.h). The densities are TPE's
 * Parzen estimators (parzen.c) in one dimension; only the grid they are integrated on
 * and the ranking are this file's. */
#include "tuners/importance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuners/internal.h"

/* The estimators' view of p for importance: TPE's (pz_dim_init), except that a randint
 * is numeric over its offsets 0 .. n - 1, so that near integers share their evidence
 * as near reals do. Not TPE's ordered view, over [-0.5, n - 0.5]: that one gives each
 * rounded draw an equal share of the prior; this one is the reference's
 * (test_numeric_against_reference). */
static void imp_dim(struct pz_dim *z, const struct ss_param *p)
{
    memset(z, 0, sizeof *z);
    if (p->type != SS_RANDINT) {
        pz_dim_init(z, p, 0);
        return;
    }
    z->lo = 0;
    z->hi = p->n_choices - 1;
    z->prior_mu = 0.5 * z->hi;
    z->prior_sigma = z->hi > 0 ? z->hi : 1;
}

/* m points evenly spaced over [lo, hi] (one when they are equal) */
static int spaced(double lo, double hi, int m, double *g)
{
    if (!(hi > lo)) {
        g[0] = lo;
        return 1;
    }
    for (int i = 0; i < m; i++)
        g[i] = lo + (hi - lo) * i / (m - 1);
    return m;
}

/* The multiples of q in [a, b] with both ends (NNI clips a q-rounded value to the
 * range, so the ends are values too), as internal values (log when lg); 0 when there
 * are more than IMP_GRID. */
static int q_values(const struct ss_param *p, int lg, double *g)
{
    double q = p->q, a = p->a, b = p->b;
    double k0 = ceil(a / q), k1 = floor(b / q);
    if (!(q > 0) || k1 - k0 + 3 > IMP_GRID)
        return 0;
    int m = 0;
    double prev = -INFINITY;
    for (double k = k0 - 1; k <= k1 + 1; k++) {
        double v = k * q;
        v = v < a ? a : v > b ? b : v;
        if (v > prev && (!lg || v > 0))
            g[m++] = lg ? log(v) : v;
        prev = v > prev ? v : prev;
    }
    return m;
}

/* The points parameter p is integrated on (importance.h), in the estimators' space;
 * g has room for IMP_GRID (a choice: its options, however many: the caller sizes g). */
static int grid_of(const struct ss_param *p, const struct pz_dim *z, double *g)
{
    int m = 0;
    switch (p->type) {
    case SS_CHOICE:
        for (int k = 0; k < p->n_choices; k++)
            g[k] = k;
        return p->n_choices;
    case SS_RANDINT:
        if (p->n_choices <= IMP_GRID) {
            for (int k = 0; k < p->n_choices; k++)
                g[k] = k;
            return p->n_choices;
        }
        for (int i = 0; i < IMP_GRID; i++)
            g[i] = round((double)(p->n_choices - 1) * i / (IMP_GRID - 1));
        return IMP_GRID;
    case SS_QUNIFORM:
    case SS_QLOGUNIFORM:
        m = q_values(p, p->type == SS_QLOGUNIFORM, g);
        return m ? m : spaced(z->lo, z->hi, IMP_GRID, g);
    case SS_UNIFORM:
    case SS_LOGUNIFORM:
        return spaced(z->lo, z->hi, IMP_GRID, g);
    default: /* the normal types: unbounded */
        return spaced(z->prior_mu - 3 * z->prior_sigma, z->prior_mu + 3 * z->prior_sigma, IMP_GRID, g);
    }
}

/* exp(lp[i]) normalised to sum 1 over the m points */
static void normalise(double *lp, int m)
{
    double best = -INFINITY, sum = 0;
    for (int i = 0; i < m; i++)
        best = lp[i] > best ? lp[i] : best;
    for (int i = 0; i < m; i++)
        sum += (lp[i] = exp(lp[i] - best));
    for (int i = 0; i < m; i++)
        lp[i] /= sum;
}

/* The estimator of the n values x (weights 1, prior weight 1) on the grid, normalised. */
static void density_on(const struct pz_dim *z, const double *x, int n, const double *g, int m, double *out)
{
    double *w = xmalloc(sizeof *w * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        w[i] = 1;
    struct pz_mixture mix;
    /* NNI's shape: clip at min(100, n + 2), prior weight 1 for every kind */
    const struct pz_shape sh = {.n_spread = n, .clip_div = n + 2 < 100 ? n + 2 : 100, .prior_weight = 1,
                                .cat_prior_weight = 1};
    pz_build(&mix, z, 1, x, w, n, &sh);
    for (int i = 0; i < m; i++)
        out[i] = pz_logpdf(&mix, &g[i]);
    pz_free(&mix);
    free(w);
    normalise(out, m);
}

double imp_divergence(const struct ss_param *p, const double *x, const double *loss, int n, double gamma,
                      int *n_top)
{
    *n_top = 0;
    if (n < 2)
        return 0;
    int k = (int)ceil(gamma * n - 1e-9);
    k = k < 2 ? 2 : k > n ? n : k;
    *n_top = k;
    struct ranked *r = xmalloc(sizeof *r * (size_t)n);
    for (int i = 0; i < n; i++)
        r[i] = (struct ranked){loss[i], i};
    ranked_select(r, n, k);
    double *top = xmalloc(sizeof *top * (size_t)k);
    for (int i = 0; i < k; i++)
        top[i] = x[r[i].i];
    free(r);
    struct pz_dim z;
    imp_dim(&z, p);
    int cap = p->type == SS_CHOICE && p->n_choices > IMP_GRID ? p->n_choices : IMP_GRID;
    double *g = xmalloc(sizeof *g * (size_t)cap * 3), *pt = g + cap, *pa = g + 2 * cap;
    int m = grid_of(p, &z, g);
    density_on(&z, top, k, g, m, pt);
    density_on(&z, x, n, g, m, pa);
    double d = 0;
    for (int i = 0; i < m; i++) {
        double ratio = pt[i] / pa[i] - 1;
        d += pa[i] * ratio * ratio;
    }
    free(g);
    free(top);
    return d;
}

/* the trials one (sub-)space is scored over: their parameter objects there and losses */
struct imp_set {
    int n;
    const cJSON **obj;
    double *loss;
};

struct imp_acc {
    double gamma;
    int n, cap;
    struct imp_param *p;
};

static void imp_space(const struct ss_space *s, const struct imp_set *set, struct imp_acc *acc)
{
    int n = set->n;
    double *x = xmalloc(sizeof *x * (size_t)(n ? n : 1)), *loss = xmalloc(sizeof *loss * (size_t)(n ? n : 1));
    const cJSON **val = xmalloc(sizeof *val * (size_t)(n ? n : 1));
    for (int j = 0; j < s->n; j++) {
        const struct ss_param *p = &s->params[j];
        struct pz_dim z;
        imp_dim(&z, p);
        int m = 0;
        for (int i = 0; i < n; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(set->obj[i], p->name);
            if (cJSON_IsObject(set->obj[i]) && pz_internal_value(p, &z, v, &x[m]) == 0) {
                val[m] = v;
                loss[m++] = set->loss[i];
            }
        }
        if (acc->n == acc->cap) {
            acc->cap = acc->cap ? 2 * acc->cap : 16;
            acc->p = xrealloc(acc->p, sizeof *acc->p * (size_t)acc->cap);
        }
        struct imp_param *out = &acc->p[acc->n++];
        *out = (struct imp_param){.p = p, .n = m};
        out->divergence = imp_divergence(p, x, loss, m, acc->gamma, &out->n_top);
        for (int k = 0; p->sub && k < p->n_choices; k++) {
            /* a branch's parameters over the trials that chose it */
            struct imp_set sub = {0, xmalloc(sizeof *sub.obj * (size_t)(m ? m : 1)),
                                  xmalloc(sizeof *sub.loss * (size_t)(m ? m : 1))};
            for (int i = 0; i < m; i++)
                if ((int)x[i] == k) {
                    sub.obj[sub.n] = val[i];
                    sub.loss[sub.n++] = loss[i];
                }
            imp_space(p->sub[k], &sub, acc);
            free(sub.obj);
            free(sub.loss);
        }
    }
    free(x);
    free(loss);
    free(val);
}

void imp_ped_anova(const struct ss_space *s, const struct imp_trial *t, int n, int maximize, double gamma,
                   struct imp_result *out)
{
    struct imp_set all = {n, xmalloc(sizeof *all.obj * (size_t)(n ? n : 1)),
                          xmalloc(sizeof *all.loss * (size_t)(n ? n : 1))};
    for (int i = 0; i < n; i++) {
        all.obj[i] = t[i].params;
        all.loss[i] = maximize ? -t[i].value : t[i].value;
    }
    struct imp_acc acc = {.gamma = gamma};
    imp_space(s, &all, &acc);
    free(all.obj);
    free(all.loss);
    double sum = 0;
    for (int i = 0; i < acc.n; i++)
        sum += acc.p[i].divergence;
    for (int i = 0; i < acc.n; i++)
        acc.p[i].importance = sum > 0 ? acc.p[i].divergence / sum : 0;
    /* greatest first, by a stable insertion: equal ones keep the walk's order (the
     * search space's, depth first); there are a few dozen parameters at most */
    for (int i = 1; i < acc.n; i++)
        for (int j = i; j > 0 && acc.p[j].importance > acc.p[j - 1].importance; j--) {
            struct imp_param tmp = acc.p[j];
            acc.p[j] = acc.p[j - 1];
            acc.p[j - 1] = tmp;
        }
    out->n = acc.n;
    out->p = acc.p;
}

void imp_result_free(struct imp_result *r)
{
    free(r->p);
    memset(r, 0, sizeof *r);
}
