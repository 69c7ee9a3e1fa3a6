/* metis.c: NNI's MetisTuner ("Metis", nni/algorithms/hpo/metis_tuner), rebuilt from
 * the history on every call so that a suggestion is a pure function of (seed, index,
 * history), as TPE and GP are.
 *
 * - Parameters: uniform, quniform, loguniform, qloguniform, randint and choice of
 *   numbers (NNI: "Metis Tuner only support numerical choice"); anything else, and
 *   nested choice, is refused at create with an error naming the key. Each is scaled
 *   to [0, 1] (log space for the log types, a choice by the value of its options) and
 *   snapped back to a value of the space (a choice to the nearest option).
 * - Results are minimised (negated when maximising, as NNI's receive_trial_result).
 *   Repeated parameter sets are one point with the median of their results (NNI's
 *   samples_y_aggregation). Running trials are ignored, as in NNI.
 * - While fewer than cold_start_num results exist the suggestion is the Random
 *   tuner's draw for (seed, index).
 * - Then, with a GP (Matern nu 1.5, targets normalised, length scale from gp.c's grid):
 *   1. lm: the point of lowest predicted mean (NNI's "lm" selection).
 *   2. Unless no_candidates: candidates are the point of largest predicted standard
 *      deviation (exploration); from METIS_EXPLOIT_MIN points on, the point of lowest
 *      mean - 1.96 sd (exploitation: NNI uses a GMM of the good and bad halves here);
 *      unless no_resampling, from METIS_RESAMPLE_MIN points on, the outliers
 *      (re-sampling): points whose result lies outside the 95% band of the leave-one-
 *      out prediction (closed form with the fitted length scale: NNI refits a GP per
 *      left-out point), at most METIS_MAX_RESAMPLE runs each.
 *   3. Each candidate is scored by the information gain NNI computes: the GP refitted
 *      with the candidate at its expected mean, the lowest mean of that model; the
 *      candidate that lowers the current lowest mean most is the next one.
 *   4. As NNI: the suggestion is lm, unless lm was already suggested or a uniform draw
 *      is <= exploration_probability; then the next candidate, or a random point when
 *      none improves.
 *   Every search (NNI: L-BFGS-B from selection_num_starting_points random points) is
 *   the best of min(selection_num_starting_points, METIS_MAX_STARTS) random points
 *   refined by a deterministic random local search from the best METIS_LOCAL_STARTS,
 *   all from rng(seed, index).
 * - The model uses at most METIS_MAX_OBS points: the best half, then the most recent. */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define METIS_NU 1.5
#define METIS_ALPHA 1e-6          /* NNI: 1e-10, too small for a Cholesky with near-duplicates */
#define METIS_Z 1.96
#define METIS_MAX_STARTS 1000
#define METIS_LOCAL_STARTS 5
#define METIS_LOCAL_STEPS 30
#define METIS_MAX_OBS 200
#define METIS_EXPLOIT_MIN 12      /* NNI's threshold_samplessize_exploitation */
#define METIS_RESAMPLE_MIN 50     /* NNI's threshold_samplessize_resampling */
#define METIS_MAX_RESAMPLE 3      /* NNI's max_resampling_per_x */
#define METIS_MAX_OUTLIERS 5
#define METIS_MAX_CAND (2 + METIS_MAX_OUTLIERS)

enum goal { GOAL_MEAN, GOAL_LCB, GOAL_SD };

struct metis_state {
    struct ss_space *space;
    uint64_t seed;
    int maximize, no_resampling, no_candidates, starts, cold_start;
    double explore_p;
    int d;
    struct unit_dim *dims;  /* check_space: choices of numbers only, so by value */
};

/* ---- classArgs and the space ---- */


static void metis_destroy(void *state)
{
    struct metis_state *t = state;
    if (!t)
        return;
    free(t->dims);
    ss_free(t->space);
    free(t);
}

static int check_space(const struct ss_space *space, struct errbuf *e)
{
    for (int i = 0; i < space->n; i++) {
        const struct ss_param *p = &space->params[i];
        if (p->sub)
            return errf(e, "%s: the Metis tuner does not support nested choice", p->path);
        if (p->type == SS_CHOICE) {
            for (int k = 0; k < p->n_choices; k++)
                if (!cJSON_IsNumber(p->choices[k]))
                    return errf(e, "%s: the Metis tuner supports only choices of numbers (option %d is not one)",
                                p->path, k);
        } else if (ss_type_is_normal(p->type)) {
            return errf(e, "%s: the Metis tuner does not support %s (only choice of numbers, randint, uniform, "
                           "quniform, loguniform and qloguniform)",
                        p->path, ss_type_name(p->type));
        }
    }
    return 0;
}

static int metis_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                        struct errbuf *e)
{
    int mode = 0, no_resampling = 1, no_candidates = 0, starts = 600, cold = 10;
    double explore_p = 0.9;
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode},
        {"no_resampling", CA_BOOL, .out = &no_resampling},
        {"no_candidates", CA_BOOL, .out = &no_candidates},
        {"selection_num_starting_points", CA_INT, 1, 1000000000, .out = &starts},
        {"cold_start_num", CA_INT, 0, 1000000000, .out = &cold},
        {"exploration_probability", CA_NUMBER, 0, 1, .out = &explore_p},
        {"seed", CA_SEED, .out = &seed, .pass = -1},
    };
    if (classargs_check(args, CA_TUNER, "Metis", rules, CA_COUNT(rules), e) < 0 || check_space(space, e) < 0)
        return -1;
    struct metis_state *t = xcalloc(1, sizeof *t);
    if (ss_parse(space->json, &t->space, NULL, 0, e) < 0) {
        free(t);
        return -1;
    }
    t->seed = seed;
    t->maximize = mode == 0;
    t->no_resampling = no_resampling;
    t->no_candidates = no_candidates;
    t->starts = starts < METIS_MAX_STARTS ? starts : METIS_MAX_STARTS;
    t->cold_start = cold;
    t->explore_p = explore_p;
    t->d = t->space->n;
    t->dims = xcalloc((size_t)(t->d ? t->d : 1), sizeof *t->dims);
    unit_dims_init(t->dims, t->space);
    *state = t;
    return 0;
}

/* ---- scaling ---- */

static cJSON *unscale(const struct metis_state *t, const double *u)
{
    cJSON *o = cJSON_CreateObject();
    for (int k = 0; k < t->d; k++)
        cJSON_AddItemToObject(o, t->dims[k].p->name, unit_dim_value(&t->dims[k], u[k]));
    return o;
}

/* u moved onto the value the trial would run */
static void snap(const struct metis_state *t, double *u)
{
    cJSON *o = unscale(t, u);
    unit_dims_scale(t->dims, t->d, o, u);
    cJSON_Delete(o);
}

/* ---- the model and its searches ---- */

/* Fits a GP to n points; y in the units of the (minimised) results. */
static int fit(struct gp_model *m, int d, const double *x, const double *y, int n)
{
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
        mean += y[i];
    mean /= n;
    for (int i = 0; i < n; i++)
        var += (y[i] - mean) * (y[i] - mean);
    double sd = sqrt(var / n);
    if (!(sd > 0))
        sd = 1;
    double *yn = xmalloc(sizeof *yn * (size_t)n);
    for (int i = 0; i < n; i++)
        yn[i] = (y[i] - mean) / sd;
    int rc = gp_model_fit(m, d, METIS_NU, METIS_ALPHA, x, yn, n);
    free(yn);
    m->ymean = mean;
    m->ystd = sd;
    return rc;
}

static double score(struct gp_model *m, enum goal g, const double *u)
{
    double mean, sd;
    gp_model_predict(m, u, &mean, &sd);
    double s = g == GOAL_MEAN ? mean : g == GOAL_LCB ? mean - METIS_Z * sd : -sd;
    return isfinite(s) ? s : INFINITY;
}

/* Minimises the goal over the starting points pts (np of them), then refines the best
 * METIS_LOCAL_STARTS by random steps that shrink on failure. best_u receives the point;
 * returns its score. */
static double search(struct gp_model *m, enum goal g, const double *pts, int np, struct rng *r, double *best_u)
{
    int d = m->d, ks = np < METIS_LOCAL_STARTS ? np : METIS_LOCAL_STARTS;
    int top[METIS_LOCAL_STARTS] = {0};
    double top_s[METIS_LOCAL_STARTS] = {0};
    int n_top = 0;
    for (int i = 0; i < np; i++) {
        double s = score(m, g, pts + (size_t)i * d);
        int pos = n_top < ks ? n_top++ : ks;
        if (pos == ks) {
            if (!(s < top_s[ks - 1]))
                continue;
            pos = ks - 1;
        }
        while (pos > 0 && s < top_s[pos - 1]) {
            top_s[pos] = top_s[pos - 1];
            top[pos] = top[pos - 1];
            pos--;
        }
        top_s[pos] = s;
        top[pos] = i;
    }
    double *p = xmalloc(sizeof *p * (size_t)d), *cand = xmalloc(sizeof *cand * (size_t)d);
    double best = top_s[0];
    memcpy(best_u, pts + (size_t)top[0] * d, sizeof *best_u * (size_t)d);
    for (int s = 0; s < n_top; s++) {
        memcpy(p, pts + (size_t)top[s] * d, sizeof *p * (size_t)d);
        double ps = top_s[s], step = 0.05;
        for (int it = 0; it < METIS_LOCAL_STEPS; it++) {
            for (int k = 0; k < d; k++) {
                double v = p[k] + step * rng_normal(r);
                cand[k] = v < 0 ? 0 : v > 1 ? 1 : v;
            }
            double cs = score(m, g, cand);
            if (cs < ps) {
                ps = cs;
                memcpy(p, cand, sizeof *p * (size_t)d);
            } else {
                step *= 0.8;
            }
        }
        if (ps < best) {
            best = ps;
            memcpy(best_u, p, sizeof *best_u * (size_t)d);
        }
    }
    free(p);
    free(cand);
    return best;
}

/* ---- the observations ---- */

struct metis_obs {
    int n, d;
    double *x;  /* n*d distinct scaled rows, in order of first appearance */
    double *y;  /* n: median of their (minimised) results */
    int *runs;  /* n: how many results each has */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct ranked_obs {
    double y;
    int i;
};

static int by_y(const void *a, const void *b)
{
    const struct ranked_obs *x = a, *y = b;
    if (x->y != y->y)
        return x->y < y->y ? -1 : 1;
    return x->i - y->i;
}

static int by_i(const void *a, const void *b) { return ((const struct ranked_obs *)a)->i - ((const struct ranked_obs *)b)->i; }

/* Returns the number of results (before merging repeated parameter sets). */
static int obs_collect(const struct metis_state *t, const struct tuner_history *hist, struct metis_obs *o)
{
    int n = hist ? hist->n : 0, d = t->d, results = 0;
    o->d = d;
    o->n = 0;
    o->x = xmalloc(sizeof *o->x * (size_t)(n ? n : 1) * (size_t)(d ? d : 1));
    o->y = xmalloc(sizeof *o->y * (size_t)(n ? n : 1));
    o->runs = xcalloc((size_t)(n ? n : 1), sizeof *o->runs);
    int *owner = xmalloc(sizeof *owner * (size_t)(n ? n : 1));
    double *vals = xmalloc(sizeof *vals * (size_t)(n ? n : 1));
    double *row = xmalloc(sizeof *row * (size_t)(d ? d : 1));
    for (int i = 0; i < n; i++) {
        const struct tuner_result *it = &hist->items[i];
        if (!it->has_value || !isfinite(it->value) || unit_dims_scale(t->dims, t->d, it->parameters, row) < 0)
            continue;
        int u = 0;
        while (u < o->n && memcmp(o->x + (size_t)u * d, row, sizeof *row * (size_t)d) != 0)
            u++;
        if (u == o->n)
            memcpy(o->x + (size_t)o->n++ * d, row, sizeof *row * (size_t)d);
        o->runs[u]++;
        owner[results] = u;
        vals[results++] = t->maximize ? -it->value : it->value;
    }
    double *tmp = xmalloc(sizeof *tmp * (size_t)(results ? results : 1));
    for (int u = 0; u < o->n; u++) {
        int k = 0;
        for (int j = 0; j < results; j++)
            if (owner[j] == u)
                tmp[k++] = vals[j];
        qsort(tmp, (size_t)k, sizeof *tmp, cmp_double);
        o->y[u] = k % 2 ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2;
    }
    free(tmp);
    free(owner);
    free(vals);
    free(row);
    /* the cap: the best half, then the most recent of the rest, in order */
    if (o->n > METIS_MAX_OBS) {
        struct ranked_obs *r = xmalloc(sizeof *r * (size_t)o->n);
        for (int i = 0; i < o->n; i++)
            r[i] = (struct ranked_obs){o->y[i], i};
        qsort(r, (size_t)o->n, sizeof *r, by_y);
        int keep_best = METIS_MAX_OBS / 2, rest = METIS_MAX_OBS - keep_best;
        qsort(r + keep_best, (size_t)(o->n - keep_best), sizeof *r, by_i);
        memmove(r + keep_best, r + o->n - rest, sizeof *r * (size_t)rest);
        qsort(r, METIS_MAX_OBS, sizeof *r, by_i);
        for (int i = 0; i < METIS_MAX_OBS; i++) {
            int s = r[i].i;
            memmove(o->x + (size_t)i * d, o->x + (size_t)s * d, sizeof *o->x * (size_t)d);
            o->y[i] = o->y[s];
            o->runs[i] = o->runs[s];
        }
        o->n = METIS_MAX_OBS;
        free(r);
    }
    return results;
}

static void obs_free(struct metis_obs *o)
{
    free(o->x);
    free(o->y);
    free(o->runs);
}

/* ---- candidates ---- */

/* Leave-one-out outliers of the model (fitted to o): adds up to METIS_MAX_OUTLIERS
 * points whose result is outside the 95% band of their leave-one-out prediction, the
 * farthest first, with that prediction as their expected value. */
static void add_outliers(struct gp_model *m, const struct metis_obs *o, double *rows, double *mu, int *nc)
{
    int n = o->n, d = o->d;
    double *kinv = xmalloc(sizeof *kinv * (size_t)n), *col = xmalloc(sizeof *col * (size_t)n);
    for (int i = 0; i < n; i++) {
        memset(col, 0, sizeof *col * (size_t)n);
        col[i] = 1;
        gp_cholesky_solve(m->l, n, col);
        kinv[i] = col[i];
    }
    struct ranked_obs out[METIS_MAX_OUTLIERS];
    double loo_mu[METIS_MAX_OUTLIERS];
    int n_out = 0;
    for (int i = 0; i < n; i++) {
        if (!(kinv[i] > 0) || o->runs[i] >= METIS_MAX_RESAMPLE)
            continue;
        double yn = (o->y[i] - m->ymean) / m->ystd;
        double mean = m->ymean + m->ystd * (yn - m->w[i] / kinv[i]);
        double sd = m->ystd * sqrt(1 / kinv[i]);
        double dev = fabs(o->y[i] - mean) - METIS_Z * sd;
        if (!(dev > 0))
            continue;
        /* keep the farthest METIS_MAX_OUTLIERS, by insertion */
        int pos = n_out < METIS_MAX_OUTLIERS ? n_out++ : METIS_MAX_OUTLIERS;
        if (pos == METIS_MAX_OUTLIERS) {
            if (!(-dev < out[pos - 1].y))
                continue;
            pos--;
        }
        while (pos > 0 && -dev < out[pos - 1].y) {
            out[pos] = out[pos - 1];
            loo_mu[pos] = loo_mu[pos - 1];
            pos--;
        }
        out[pos] = (struct ranked_obs){-dev, i};
        loo_mu[pos] = mean;
    }
    for (int k = 0; k < n_out; k++) {
        memcpy(rows + (size_t)*nc * d, o->x + (size_t)out[k].i * d, sizeof *rows * (size_t)d);
        mu[(*nc)++] = loo_mu[k];
    }
    free(kinv);
    free(col);
}

/* The candidate that lowers the model's lowest mean most when added at its expected
 * value (NNI's information gain), or -1 when none lowers it. */
static int best_candidate(const struct metis_obs *o, const double *rows, const double *mu, int nc, double lm,
                          const double *pts, int np, struct rng *r)
{
    int n = o->n, d = o->d, best = -1;
    double best_gain = 0;
    double *x = xmalloc(sizeof *x * (size_t)(n + 1) * (size_t)d), *y = xmalloc(sizeof *y * (size_t)(n + 1));
    double *u = xmalloc(sizeof *u * (size_t)d);
    memcpy(x, o->x, sizeof *x * (size_t)n * (size_t)d);
    memcpy(y, o->y, sizeof *y * (size_t)n);
    for (int c = 0; c < nc; c++) {
        memcpy(x + (size_t)n * d, rows + (size_t)c * d, sizeof *x * (size_t)d);
        y[n] = mu[c];
        struct gp_model m2 = {0};
        if (fit(&m2, d, x, y, n + 1) < 0)
            continue;
        double gain = search(&m2, GOAL_MEAN, pts, np, r, u) - lm;
        gp_model_free(&m2);
        if (gain < best_gain) {
            best_gain = gain;
            best = c;
        }
    }
    free(x);
    free(y);
    free(u);
    return best;
}

/* ---- suggest ---- */

static int metis_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                         struct errbuf *e)
{
    struct metis_state *t = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "Metis: negative tuner index %lld", (long long)index);
    int d = t->d;
    struct rng r;
    rng_init(&r, t->seed, (uint64_t)index);
    struct metis_obs o;
    int results = obs_collect(t, hist, &o);
    struct gp_model model = {0};
    if (results < t->cold_start || o.n == 0 || d == 0 || fit(&model, d, o.x, o.y, o.n) < 0) {
        obs_free(&o);
        *params = ss_sample(t->space, &r);
        return 1;
    }
    int np = t->starts;
    double *pts = xmalloc(sizeof *pts * (size_t)np * (size_t)d);
    for (size_t i = 0; i < (size_t)np * (size_t)d; i++)
        pts[i] = rng_uniform(&r);
    double *u_lm = xmalloc(sizeof *u_lm * (size_t)d), *u = xmalloc(sizeof *u * (size_t)d);
    double lm = search(&model, GOAL_MEAN, pts, np, &r, u_lm);

    double *rows = xmalloc(sizeof *rows * METIS_MAX_CAND * (size_t)d), mu[METIS_MAX_CAND];
    int nc = 0;
    if (!t->no_candidates) {
        for (int g = 0; g < 2; g++) {
            if (g == 1 && o.n < METIS_EXPLOIT_MIN)
                break;
            search(&model, g == 0 ? GOAL_SD : GOAL_LCB, pts, np, &r, u);
            snap(t, u);
            cJSON *p = unscale(t, u);
            if (!history_has(hist, p)) {
                double sd;
                gp_model_predict(&model, u, &mu[nc], &sd);
                memcpy(rows + (size_t)nc++ * d, u, sizeof *u * (size_t)d);
            }
            cJSON_Delete(p);
        }
        if (!t->no_resampling && o.n >= METIS_RESAMPLE_MIN)
            add_outliers(&model, &o, rows, mu, &nc);
    }
    int next = best_candidate(&o, rows, mu, nc, lm, pts, np, &r);
    cJSON *out = unscale(t, u_lm);
    double ap = rng_uniform(&r);
    if (history_has(hist, out) || ap <= t->explore_p) {
        cJSON_Delete(out);
        out = next >= 0 ? unscale(t, rows + (size_t)next * d) : ss_sample(t->space, &r);
    }
    *params = out;
    gp_model_free(&model);
    obs_free(&o);
    free(pts);
    free(u_lm);
    free(u);
    free(rows);
    return 1;
}

static const char *const metis_aliases[] = {"MetisTuner", NULL};

const struct tuner_ops tuner_metis = {
    .name = "Metis",
    .aliases = metis_aliases,
    .create = metis_create,
    .suggest = metis_suggest,
    .destroy = metis_destroy,
    .needs_history = 1,
};
