/* gp.c: NNI's GPTuner ("GP"), Bayesian optimisation with a Gaussian process
 * (nni/algorithms/hpo/gp_tuner), rebuilt from the history on every call so that a
 * suggestion is a pure function of (seed, index, history).
 *
 * - Parameters: uniform, quniform, loguniform, qloguniform, randint and choice (as
 *   NNI's GP: its TargetSpace handles no normal types and no nested choice; both are
 *   rejected at create with an error naming the key). Each is scaled to [0, 1]: a
 *   numeric one over [low, high] (log space for the log types), randint over
 *   [low, high - 1], a choice of numbers by value over [min, max] of its options and
 *   snapped back to the nearest option (NNI's _match_val_type); a choice with a
 *   non-numeric option by its index (an extension: NNI would fail on it).
 * - While fewer than cold_start_num trials have a result, the suggestion is the
 *   Random tuner's draw for (seed, index), value for value.
 * - Then: GP regression of the results (negated when minimizing), targets normalised
 *   to mean 0 and standard deviation 1 (sklearn's normalize_y), an isotropic Matérn
 *   kernel (nu 0.5, 1.5 or 2.5: the closed forms; other nu are rejected) plus alpha on
 *   the diagonal. The length scale is the one of GP_LS_GRID with the largest log
 *   marginal likelihood (NNI: L-BFGS with 25 random restarts, not deterministic).
 * - The acquisition (ei, ucb or poi with kappa and xi, in the units of the results as
 *   NNI's UtilityFunction) is maximised over min(selection_num_warm_up, GP_MAX_WARM_UP)
 *   random points, then from the best min(selection_num_starting_points,
 *   GP_MAX_STARTS) of them by a deterministic random local search (NNI: L-BFGS-B from
 *   random starting points), all from rng(seed, index).
 * - Running trials are ignored (as NNI's GP, which has no constant liar); so are
 *   results that are not finite numbers and parameter sets that do not fit the space.
 * - The model uses at most GP_MAX_OBS results: the GP_MAX_OBS / 2 best, then the most
 *   recent of the others, because the cost is O(n^3) per length scale. */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GP_MAX_WARM_UP 2000
#define GP_MAX_STARTS 10
#define GP_LOCAL_STEPS 30
#define GP_MAX_OBS 300

static const double GP_LS_GRID[] = {0.03, 0.06, 0.1, 0.15, 0.25, 0.4, 0.6, 1.0, 1.6, 2.5};
#define GP_N_LS ((int)(sizeof GP_LS_GRID / sizeof GP_LS_GRID[0]))

enum utility { UT_EI, UT_UCB, UT_POI };

struct gp_state {
    struct ss_space *space;
    uint64_t seed;
    int maximize;
    enum utility utility;
    double kappa, xi, nu, alpha;
    int cold_start, warm_up, starts;
    int d;
    struct unit_dim *dims;
};

/* ---- dense linear algebra ---- */

int gp_cholesky(double *a, int n)
{
    for (int j = 0; j < n; j++) {
        double s = a[(size_t)j * n + j];
        for (int k = 0; k < j; k++)
            s -= a[(size_t)j * n + k] * a[(size_t)j * n + k];
        if (!(s > 0))
            return -1;
        double ljj = sqrt(s);
        a[(size_t)j * n + j] = ljj;
        for (int i = j + 1; i < n; i++) {
            double t = a[(size_t)i * n + j];
            for (int k = 0; k < j; k++)
                t -= a[(size_t)i * n + k] * a[(size_t)j * n + k];
            a[(size_t)i * n + j] = t / ljj;
        }
        for (int i = 0; i < j; i++)
            a[(size_t)i * n + j] = 0;
    }
    return 0;
}

/* Solves L y = b in place. */
static void forward_solve(const double *l, int n, double *b)
{
    for (int i = 0; i < n; i++) {
        double s = b[i];
        for (int k = 0; k < i; k++)
            s -= l[(size_t)i * n + k] * b[k];
        b[i] = s / l[(size_t)i * n + i];
    }
}

void gp_cholesky_solve(const double *l, int n, double *b)
{
    forward_solve(l, n, b);
    for (int i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (int k = i + 1; k < n; k++)
            s -= l[(size_t)k * n + i] * b[k];
        b[i] = s / l[(size_t)i * n + i];
    }
}

/* ---- the kernel ---- */

static double matern(double nu, double r)
{
    if (nu == 0.5)
        return exp(-r);
    if (nu == 1.5) {
        double t = sqrt(3.0) * r;
        return (1 + t) * exp(-t);
    }
    double t = sqrt(5.0) * r;
    return (1 + t + t * t / 3) * exp(-t);
}

static double dist(const double *a, const double *b, int d)
{
    double s = 0;
    for (int k = 0; k < d; k++)
        s += (a[k] - b[k]) * (a[k] - b[k]);
    return sqrt(s);
}

/* ---- classArgs ---- */

static const char *const utility_names[] = {"ei", "ucb", "poi", NULL};

static void gp_destroy(void *state)
{
    struct gp_state *t = state;
    if (!t)
        return;
    free(t->dims);
    ss_free(t->space);
    free(t);
}

static int gp_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state, struct errbuf *e)
{
    int mode = 0, utility = UT_EI, cold = 10, warm = 100000, starts = 250;
    double kappa = 5, xi = 0, nu = 2.5, alpha = 1e-6;
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode},
        {"utility", CA_CHOICE, .choices = utility_names, .out = &utility},
        {"kappa", CA_NUMBER, 0, 1e9, .out = &kappa},
        {"xi", CA_NUMBER, 0, 1e9, .out = &xi},
        {"nu", CA_NUMBER, 0, 1e9, .out = &nu},
        {"alpha", CA_NUMBER, 0, 1e9, .out = &alpha},
        {"cold_start_num", CA_INT, 0, 1000000000, .out = &cold},
        {"selection_num_warm_up", CA_INT, 1, 1000000000, .out = &warm},
        {"selection_num_starting_points", CA_INT, 1, 1000000000, .out = &starts},
        {"seed", CA_SEED, .out = &seed, .pass = -1},
    };
    if (classargs_check(args, CA_TUNER, "GP", rules, CA_COUNT(rules), e) < 0)
        return -1;
    if (nu != 0.5 && nu != 1.5 && nu != 2.5)
        return errf(e, "tuner.classArgs.nu: must be 0.5, 1.5 or 2.5 (the Matern kernels trialq implements)");
    if (!(alpha > 0))
        return errf(e, "tuner.classArgs.alpha: must be a number greater than 0");
    for (int i = 0; i < space->n; i++) {
        const struct ss_param *p = &space->params[i];
        if (p->sub)
            return errf(e, "%s: the GP tuner does not support nested choice", p->path);
        if (ss_type_is_normal(p->type))
            return errf(e, "%s: the GP tuner does not support %s (only choice, randint, uniform, quniform, "
                           "loguniform and qloguniform)",
                        p->path, ss_type_name(p->type));
    }
    struct gp_state *t = xcalloc(1, sizeof *t);
    if (ss_parse(space->json, &t->space, NULL, 0, e) < 0) {
        free(t);
        return -1;
    }
    t->seed = seed;
    t->maximize = mode == 0;
    t->utility = (enum utility)utility;
    t->kappa = kappa;
    t->xi = xi;
    t->nu = nu;
    t->alpha = alpha;
    t->cold_start = cold;
    t->warm_up = warm < GP_MAX_WARM_UP ? warm : GP_MAX_WARM_UP;
    t->starts = starts < GP_MAX_STARTS ? starts : GP_MAX_STARTS;
    t->d = t->space->n;
    t->dims = xcalloc((size_t)(t->d ? t->d : 1), sizeof *t->dims);
    unit_dims_init(t->dims, t->space);
    *state = t;
    return 0;
}

/* ---- scaling ---- */

void unit_dims_init(struct unit_dim *dims, const struct ss_space *space)
{
    for (int i = 0; i < space->n; i++) {
        struct unit_dim *g = &dims[i];
        const struct ss_param *p = &space->params[i];
        g->p = p;
        if (p->type == SS_CHOICE) {
            g->by_value = 1;
            for (int k = 0; k < p->n_choices; k++)
                g->by_value &= cJSON_IsNumber(p->choices[k]);
            g->lo = INFINITY;
            g->hi = -INFINITY;
            for (int k = 0; k < p->n_choices; k++) {
                double v = g->by_value ? p->choices[k]->valuedouble : k;
                g->lo = fmin(g->lo, v);
                g->hi = fmax(g->hi, v);
            }
        } else if (p->type == SS_RANDINT) {
            g->lo = p->a;
            g->hi = p->b - 1;
        } else {
            int lg = ss_type_is_log(p->type);
            g->lo = lg ? log(p->a) : p->a;
            g->hi = lg ? log(p->b) : p->b;
        }
    }
}

static double to_unit(const struct unit_dim *g, double v)
{
    if (!(g->hi > g->lo))
        return 0.5;
    double u = (v - g->lo) / (g->hi - g->lo);
    return u < 0 ? 0 : u > 1 ? 1 : u;
}

int unit_dims_scale(const struct unit_dim *dims, int d, const cJSON *obj, double *row)
{
    if (!cJSON_IsObject(obj))
        return -1;
    for (int i = 0; i < d; i++) {
        const struct unit_dim *g = &dims[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, g->p->name);
        double x;
        if (g->p->type == SS_CHOICE && !g->by_value) {
            int k = choice_index(g->p, v);
            if (k < 0)
                return -1;
            x = k;
        } else {
            if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
                return -1;
            x = v->valuedouble;
            if (ss_type_is_log(g->p->type)) {
                if (!(x > 0))
                    return -1;
                x = log(x);
            }
        }
        row[i] = to_unit(g, x);
    }
    return 0;
}

cJSON *unit_dim_value(const struct unit_dim *g, double u)
{
    const struct ss_param *p = g->p;
    double x = g->lo + u * (g->hi - g->lo);
    if (p->type == SS_RANDINT) {
        double k = nearbyint(x);
        k = k < g->lo ? g->lo : k > g->hi ? g->hi : k;
        return cJSON_CreateNumber(k == 0 ? 0.0 : k);
    }
    if (p->type == SS_CHOICE) {
        int best = 0;
        double bd = INFINITY;
        for (int k = 0; k < p->n_choices; k++) {
            double v = g->by_value ? p->choices[k]->valuedouble : k;
            if (fabs(v - x) < bd) {
                bd = fabs(v - x);
                best = k;
            }
        }
        return cJSON_Duplicate(p->choices[best], 1);
    }
    double v = ss_deformat(p, x);
    /* exp(log(high)) may land one ulp outside the range */
    if (v < p->a)
        v = p->a;
    if (v > p->b)
        v = p->b;
    return cJSON_CreateNumber(v);
}

/* ---- the model ---- */

static void kernel_matrix(const double *x, int n, int d, double nu, double ls, double alpha, double *k)
{
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= i; j++) {
            double v = matern(nu, dist(x + (size_t)i * d, x + (size_t)j * d, d) / ls);
            k[(size_t)i * n + j] = v;
            k[(size_t)j * n + i] = v;
        }
        k[(size_t)i * n + i] += alpha;
    }
}

/* Fits the model; ynorm holds the normalised targets. Returns -1 if no length scale
 * gives a positive definite matrix. */
int gp_model_fit(struct gp_model *m, int d, double nu, double alpha, const double *x, const double *ynorm, int n)
{
    size_t nn = (size_t)n * n;
    double *k = xmalloc(sizeof *k * nn), *w = xmalloc(sizeof *w * (size_t)n);
    double best_lml = -INFINITY;
    int best = -1;
    for (int g = 0; g < GP_N_LS; g++) {
        kernel_matrix(x, n, d, nu, GP_LS_GRID[g], alpha, k);
        if (gp_cholesky(k, n) < 0)
            continue;
        memcpy(w, ynorm, sizeof *w * (size_t)n);
        gp_cholesky_solve(k, n, w);
        double lml = 0;
        for (int i = 0; i < n; i++)
            lml += -0.5 * ynorm[i] * w[i] - log(k[(size_t)i * n + i]);
        if (lml > best_lml) {
            best_lml = lml;
            best = g;
        }
    }
    if (best < 0) {
        free(k);
        free(w);
        return -1;
    }
    m->n = n;
    m->d = d;
    m->nu = nu;
    m->ls = GP_LS_GRID[best];
    m->x = x;
    kernel_matrix(x, n, d, nu, m->ls, alpha, k);
    gp_cholesky(k, n);
    memcpy(w, ynorm, sizeof *w * (size_t)n);
    gp_cholesky_solve(k, n, w);
    m->l = k;
    m->w = w;
    m->kbuf = xmalloc(sizeof *m->kbuf * (size_t)n);
    return 0;
}

void gp_model_free(struct gp_model *m)
{
    free(m->l);
    free(m->w);
    free(m->kbuf);
}

/* Mean and standard deviation at u, in the units of the (signed) results. */
void gp_model_predict(struct gp_model *m, const double *u, double *mean, double *sd)
{
    double mu = 0;
    for (int i = 0; i < m->n; i++) {
        m->kbuf[i] = matern(m->nu, dist(u, m->x + (size_t)i * m->d, m->d) / m->ls);
        mu += m->kbuf[i] * m->w[i];
    }
    forward_solve(m->l, m->n, m->kbuf);
    double var = 1;
    for (int i = 0; i < m->n; i++)
        var -= m->kbuf[i] * m->kbuf[i];
    *mean = m->ymean + m->ystd * mu;
    *sd = m->ystd * sqrt(var > 1e-12 ? var : 1e-12);
}

static double norm_cdf(double z) { return 0.5 * erfc(-z / sqrt(2.0)); }
static double norm_pdf(double z) { return exp(-0.5 * z * z) / sqrt(2 * M_PI); }

/* NNI's UtilityFunction (from bayes_opt), maximised. */
static double acquisition(const struct gp_state *t, struct gp_model *m, const double *u, double y_max)
{
    double mean, sd;
    gp_model_predict(m, u, &mean, &sd);
    if (t->utility == UT_UCB)
        return mean + t->kappa * sd;
    double z = (mean - y_max - t->xi) / sd;
    if (t->utility == UT_POI)
        return norm_cdf(z);
    return (mean - y_max - t->xi) * norm_cdf(z) + sd * norm_pdf(z);
}

/* ---- suggest ---- */

struct gp_obs {
    double y;
    int seq;
};

static int obs_by_y_desc(const void *a, const void *b)
{
    const struct gp_obs *x = a, *y = b;
    if (x->y != y->y)
        return x->y > y->y ? -1 : 1;
    return x->seq - y->seq;
}

static int obs_by_seq(const void *a, const void *b)
{
    return ((const struct gp_obs *)a)->seq - ((const struct gp_obs *)b)->seq;
}

/* The model of hist's results (at most GP_MAX_OBS: the best half, then the most
 * recent of the rest). 0 with *model fitted (it borrows *xrows; the caller frees
 * *xrows and *yrows after the model) and *y_max set; -1 when there is nothing to model
 * yet (cold start, no dimension) or no length scale fits. */
static int fit_history(const struct gp_state *t, const struct tuner_history *hist, struct gp_model *model,
                       double **xrows, double **yrows, double *y_max)
{
    int n = hist ? hist->n : 0, d = t->d;
    *xrows = *yrows = NULL;
    /* the observations, as rows of scaled values */
    double *xall = xmalloc(sizeof *xall * (size_t)(n ? n : 1) * (size_t)(d ? d : 1));
    struct gp_obs *obs = xmalloc(sizeof *obs * (size_t)(n ? n : 1));
    int m = 0;
    for (int i = 0; i < n; i++) {
        const struct tuner_result *it = &hist->items[i];
        if (!it->has_value || !isfinite(it->value) || unit_dims_scale(t->dims, t->d, it->parameters, xall + (size_t)m * d) < 0)
            continue;
        obs[m] = (struct gp_obs){t->maximize ? it->value : -it->value, m};
        m++;
    }
    if (m < t->cold_start || m == 0 || d == 0) {
        free(xall);
        free(obs);
        return -1;
    }
    if (m > GP_MAX_OBS) {
        qsort(obs, (size_t)m, sizeof *obs, obs_by_y_desc);
        int keep_best = GP_MAX_OBS / 2;
        qsort(obs + keep_best, (size_t)(m - keep_best), sizeof *obs, obs_by_seq);
        memmove(obs + keep_best, obs + m - (GP_MAX_OBS - keep_best), sizeof *obs * (size_t)(GP_MAX_OBS - keep_best));
        m = GP_MAX_OBS;
        qsort(obs, (size_t)m, sizeof *obs, obs_by_seq);
    }
    double *x = xmalloc(sizeof *x * (size_t)m * (size_t)d), *y = xmalloc(sizeof *y * (size_t)m);
    double sum = 0;
    *y_max = -INFINITY;
    for (int i = 0; i < m; i++) {
        memcpy(x + (size_t)i * d, xall + (size_t)obs[i].seq * d, sizeof *x * (size_t)d);
        sum += obs[i].y;
        *y_max = fmax(*y_max, obs[i].y);
    }
    double mean = sum / m, var = 0;
    for (int i = 0; i < m; i++)
        var += (obs[i].y - mean) * (obs[i].y - mean);
    double sd = sqrt(var / m);
    if (!(sd > 0))
        sd = 1;  /* sklearn's _handle_zeros_in_scale */
    for (int i = 0; i < m; i++)
        y[i] = (obs[i].y - mean) / sd;
    free(xall);
    free(obs);
    *xrows = x;
    *yrows = y;
    if (gp_model_fit(model, t->d, t->nu, t->alpha, x, y, m) < 0)
        return -1;
    model->ymean = mean;
    model->ystd = sd;
    return 0;
}

/* The point u (scaled) with the best acquisition found: random warm-up points, the
 * best `starts` of them refined by random steps that shrink on failure. */
static void maximize_acquisition(const struct gp_state *t, struct gp_model *model, double y_max, struct rng *r,
                                 double *u)
{
    int d = t->d, ks = t->starts;
    double *top = xmalloc(sizeof *top * (size_t)ks * (size_t)d), *top_a = xmalloc(sizeof *top_a * (size_t)ks);
    int n_top = 0;
    double *cand = xmalloc(sizeof *cand * (size_t)d);
    for (int w = 0; w < t->warm_up; w++) {
        for (int k = 0; k < d; k++)
            u[k] = rng_uniform(r);
        double a = acquisition(t, model, u, y_max);
        if (!isfinite(a))
            a = -INFINITY;
        int pos = n_top < ks ? n_top++ : ks;
        if (pos == ks) {
            if (!(a > top_a[ks - 1]))
                continue;
            pos = ks - 1;
        }
        while (pos > 0 && a > top_a[pos - 1]) {
            top_a[pos] = top_a[pos - 1];
            memcpy(top + (size_t)pos * d, top + (size_t)(pos - 1) * d, sizeof *top * (size_t)d);
            pos--;
        }
        top_a[pos] = a;
        memcpy(top + (size_t)pos * d, u, sizeof *u * (size_t)d);
    }
    double best_a = top_a[0];
    memcpy(u, top, sizeof *u * (size_t)d);
    for (int s = 0; s < n_top; s++) {
        double *p = top + (size_t)s * d, pa = top_a[s], step = 0.05;
        for (int it = 0; it < GP_LOCAL_STEPS; it++) {
            for (int k = 0; k < d; k++) {
                double v = p[k] + step * rng_normal(r);
                cand[k] = v < 0 ? 0 : v > 1 ? 1 : v;
            }
            double a = acquisition(t, model, cand, y_max);
            if (a > pa) {
                pa = a;
                memcpy(p, cand, sizeof *p * (size_t)d);
            } else {
                step *= 0.8;
            }
        }
        if (pa > best_a) {
            best_a = pa;
            memcpy(u, p, sizeof *u * (size_t)d);
        }
    }
    free(top);
    free(top_a);
    free(cand);
}

static int gp_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params, struct errbuf *e)
{
    struct gp_state *t = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "GP: negative tuner index %lld", (long long)index);
    struct rng r;
    rng_init(&r, t->seed, (uint64_t)index);
    struct gp_model model = {0};
    double *x, *y, y_max;
    if (fit_history(t, hist, &model, &x, &y, &y_max) < 0) {
        free(x);
        free(y);
        *params = ss_sample(t->space, &r);
        return 1;
    }
    double *u = xmalloc(sizeof *u * (size_t)t->d);
    maximize_acquisition(t, &model, y_max, &r, u);
    *params = cJSON_CreateObject();
    for (int k = 0; k < t->d; k++)
        cJSON_AddItemToObject(*params, t->dims[k].p->name, unit_dim_value(&t->dims[k], u[k]));
    free(u);
    gp_model_free(&model);
    free(x);
    free(y);
    return 1;
}

static const char *const gp_aliases[] = {"GPTuner", NULL};

const struct tuner_ops tuner_gp = {
    .name = "GP",
    .aliases = gp_aliases,
    .create = gp_create,
    .suggest = gp_suggest,
    .destroy = gp_destroy,
    .needs_history = 1,
};
