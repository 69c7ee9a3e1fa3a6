/* bohb.c: NNI's BOHB advisor ("BOHB", bohb_advisor/), Hyperband's brackets with a
 * kernel-density model choosing the new configurations (Falkner et al. 2018).
 *
 * classArgs (NNI's defaults): optimize_mode ("maximize"), min_budget (1), max_budget
 * (3), eta (3), min_points_in_model (null: dimensions + 1, the least allowed),
 * top_n_percent (15), num_samples (64), random_fraction (1/3), bandwidth_factor (3),
 * min_bandwidth (1e-3), and trialq's seed. config_space (a ConfigSpace file) is
 * refused: the search space is NNI's JSON format.
 *
 * Brackets as bracket.c, in BOHB's order: one at a time, the next one once every
 * trial of the last round has ended (HB_STRICT); wire ids "<s>_<round>_<counter>".
 *
 * The model (NNI's CG_BOHB), rebuilt from the history: the results it learns from are
 * those of the brackets before the one whose configurations are drawn (all of them had
 * ended when it started, so its configurations never change once it started), plus
 * imported results and customized trials, in history order. A result counts at its
 * trial's TRIAL_BUDGET (imports without one: max_budget); NNI passes the FINAL
 * metric's sequence number instead, which the trial SDK always sends as 0, so NNI puts
 * every result into one budget. As CG_BOHB.new_result: a result at a budget below the
 * largest budget that already has a model is dropped; a budget has a model from
 * min_points_in_model results on, when both the good part (the best
 * max(min_points_in_model, top_n_percent % of them)) and the bad part (the next
 * max(min_points_in_model, (100 - top_n_percent) %)) have more rows than dimensions.
 * Two kernel densities (statsmodels' KDEMultivariate, normal_reference bandwidth
 * 1.06 std n^(-1/(4+d)), floored at min_bandwidth) over the configurations in [0, 1]
 * per dimension: a Gaussian kernel for numbers, Aitchison-Aitken for choices (with the
 * number of options as levels; statsmodels counts the levels seen in the data).
 *
 * A new configuration with counter c draws from rng(seed, c): with no model, or with
 * probability random_fraction, the Random tuner's draw; else the best of num_samples
 * candidates by g(x)/l(x), each a good configuration perturbed (numbers: a normal of
 * bandwidth_factor x its bandwidth truncated to [0, 1]; choices: kept with probability
 * 1 - bandwidth, else uniform).
 *
 * The [0, 1] encoding: uniform and quniform over [low, high], the log types in log
 * space, randint over its integers (ConfigSpace's), the normal types through their
 * CDF (NNI's converter cannot handle them); back through NNI's rounding and clipping.
 * Nested choice is refused (ConfigSpace's categories must be plain values). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuners/bracket.h"
#include "tuners/internal.h"

struct kde {
    int n, d;
    double *x;   /* n * d */
    double *bw;  /* d */
};

struct bohb {
    struct hb_plan plan;
    struct ss_space *space;
    uint64_t seed;
    int maximize, min_points, top_n_percent, num_samples;
    double random_fraction, bandwidth_factor, min_bandwidth, max_budget;
    int d;
    /* the model of one bracket, cached: rebuilt when its inputs change */
    int64_t model_bracket;
    uint64_t model_inputs;
    int has_model;
    double model_budget;
    struct kde good, bad;
    int64_t last_index;
    char last_label[64];
};

/* ---- the [0, 1] encoding of a configuration ---- */

static double phi(double z)
{
    return 0.5 * erfc(-z / M_SQRT2);
}

static double phi_inv(double u)
{
    return M_SQRT2 * ss_erfinv(2 * u - 1);
}

static int encode(const struct ss_param *p, const cJSON *v, double *out)
{
    if (p->type == SS_CHOICE) {
        int k = choice_index(p, v);
        *out = k;
        return k >= 0;
    }
    if (!cJSON_IsNumber(v))
        return 0;
    double x = v->valuedouble, u;
    switch (p->type) {
    case SS_RANDINT:
        u = (x - p->a + 0.5) / p->n_choices;
        break;
    case SS_UNIFORM:
    case SS_QUNIFORM:
        u = (x - p->a) / (p->b - p->a);
        break;
    case SS_LOGUNIFORM:
    case SS_QLOGUNIFORM:
        if (!(x > 0))
            return 0;
        u = (log(x) - log(p->a)) / (log(p->b) - log(p->a));
        break;
    default: /* the normal types */
        if (ss_type_is_log(p->type)) {
            if (!(x > 0))
                return 0;
            x = log(x);
        }
        u = phi((x - p->a) / p->b);
        break;
    }
    if (!isfinite(u))
        return 0;
    *out = u < 0 ? 0 : u > 1 ? 1 : u;
    return 1;
}

static cJSON *decode(const struct ss_param *p, double u)
{
    if (p->type == SS_CHOICE) {
        int k = (int)nearbyint(u);
        k = k < 0 ? 0 : k >= p->n_choices ? p->n_choices - 1 : k;
        return cJSON_Duplicate(p->choices[k], 1);
    }
    if (p->type == SS_RANDINT) {
        int k = (int)floor(u * p->n_choices);
        k = k < 0 ? 0 : k >= p->n_choices ? p->n_choices - 1 : k;
        return cJSON_CreateNumber(p->a + k);
    }
    double internal;
    if (p->type == SS_UNIFORM || p->type == SS_QUNIFORM) {
        internal = p->a + u * (p->b - p->a);
    } else if (p->type == SS_LOGUNIFORM || p->type == SS_QLOGUNIFORM) {
        internal = log(p->a) + u * (log(p->b) - log(p->a));
    } else {
        double c = u < 1e-12 ? 1e-12 : u > 1 - 1e-12 ? 1 - 1e-12 : u;
        internal = p->a + p->b * phi_inv(c);
    }
    return cJSON_CreateNumber(ss_deformat(p, internal));
}

static int encode_config(const struct bohb *st, const cJSON *params, double *x)
{
    for (int j = 0; j < st->d; j++) {
        const struct ss_param *p = &st->space->params[j];
        if (!encode(p, cJSON_GetObjectItemCaseSensitive(params, p->name), &x[j]))
            return 0;
    }
    return 1;
}

/* ---- the kernel densities ---- */

static void kde_free(struct kde *k)
{
    free(k->x);
    free(k->bw);
    memset(k, 0, sizeof *k);
}

static void kde_fit(struct kde *k, const double *rows, int n, int d, double min_bw)
{
    kde_free(k);
    k->n = n;
    k->d = d;
    k->x = xmalloc(sizeof *k->x * (size_t)(n * d));
    memcpy(k->x, rows, sizeof *k->x * (size_t)(n * d));
    k->bw = xmalloc(sizeof *k->bw * (size_t)d);
    double f = 1.06 * pow(n, -1.0 / (4 + d));
    for (int j = 0; j < d; j++) {
        double mean = 0, var = 0;
        for (int i = 0; i < n; i++)
            mean += rows[i * d + j];
        mean /= n;
        for (int i = 0; i < n; i++)
            var += (rows[i * d + j] - mean) * (rows[i * d + j] - mean);
        double bw = f * sqrt(var / n);
        k->bw[j] = bw < min_bw ? min_bw : bw;
    }
}

static double kde_pdf(const struct bohb *st, const struct kde *k, const double *x)
{
    double sum = 0, norm = 1;
    for (int j = 0; j < k->d; j++)
        if (st->space->params[j].type != SS_CHOICE)
            norm *= k->bw[j];
    for (int i = 0; i < k->n; i++) {
        double prod = 1;
        for (int j = 0; j < k->d && prod > 0; j++) {
            const struct ss_param *p = &st->space->params[j];
            double xi = k->x[i * k->d + j], h = k->bw[j];
            if (p->type == SS_CHOICE) {
                if (p->n_choices > 1)
                    prod *= xi == x[j] ? 1 - h : h / (p->n_choices - 1);
            } else {
                double z = (xi - x[j]) / h;
                prod *= exp(-0.5 * z * z) / sqrt(2 * M_PI);
            }
        }
        sum += prod;
    }
    return sum / k->n / norm;
}

/* ---- the model of a bracket ---- */

struct obs {
    double budget, loss;
    int k; /* history index */
};

static int obs_by_loss(const void *x, const void *y)
{
    const struct obs *a = x, *b = y;
    if (a->loss != b->loss)
        return a->loss < b->loss ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

static double item_budget(const struct bohb *st, const cJSON *params)
{
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(params, HB_BUDGET_KEY);
    return cJSON_IsNumber(b) ? b->valuedouble : st->max_budget;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        h = (h ^ ((v >> (8 * i)) & 0xff)) * 1099511628211ULL;
    return h;
}

struct budget_count {
    double budget;
    int n;
};

/* CG_BOHB's sizes of the good and bad parts of n results */
static void split_sizes(const struct bohb *st, int n, int *n_good, int *n_bad)
{
    int mp = st->min_points;
    *n_good = mp > st->top_n_percent * n / 100 ? mp : st->top_n_percent * n / 100;
    *n_bad = mp > (100 - st->top_n_percent) * n / 100 ? mp : (100 - st->top_n_percent) * n / 100;
}

/* Fits the good and bad KDEs to the nk kept results ob (rows x, in history order)
 * at budget `budget`, best first. */
static void fit_at_budget(struct bohb *st, const struct obs *ob, int nk, const double *x, double budget)
{
    int d = st->d;
    struct obs *sel = xmalloc(sizeof *sel * (size_t)(nk ? nk : 1));
    double *rows = xmalloc(sizeof *rows * (size_t)(nk ? nk : 1) * (size_t)(d ? d : 1));
    int n = 0;
    for (int i = 0; i < nk; i++)
        if (ob[i].budget == budget) {
            sel[n] = ob[i];
            sel[n].k = i; /* now: its row in x, in history order */
            n++;
        }
    qsort(sel, (size_t)n, sizeof *sel, obs_by_loss);
    for (int i = 0; i < n; i++)
        memcpy(&rows[i * d], &x[sel[i].k * d], sizeof *rows * (size_t)d);
    int n_good, n_bad;
    split_sizes(st, n, &n_good, &n_bad);
    if (n_good + n_bad > n)
        n_bad = n - n_good;
    kde_fit(&st->good, rows, n_good, d, st->min_bandwidth);
    kde_fit(&st->bad, rows + n_good * d, n_bad, d, st->min_bandwidth);
    st->has_model = 1;
    st->model_budget = budget;
    free(sel);
    free(rows);
}

/* Rebuilds (when its inputs changed) the model new configurations of bracket b are
 * drawn from. */
static void model_for(struct bohb *st, const struct tuner_history *h, int64_t bracket)
{
    /* the results it may learn from, in history order */
    struct obs *ob = xmalloc(sizeof *ob * (size_t)(h->n ? h->n : 1));
    int no = 0;
    uint64_t inputs = mix(14695981039346656037ULL, (uint64_t)bracket);
    for (int k = 0; k < h->n; k++) {
        const struct tuner_result *r = &h->items[k];
        if (!r->has_value || !isfinite(r->value))
            continue;
        int64_t b, c;
        int round;
        if (r->label ? !hb_parse(&st->plan, r->label, &b, &round, &c) || b >= bracket : r->parameter_id >= 0)
            continue;
        ob[no] = (struct obs){item_budget(st, r->parameters), st->maximize ? -r->value : r->value, k};
        uint64_t lb, bb;
        memcpy(&lb, &ob[no].loss, sizeof lb);
        memcpy(&bb, &ob[no].budget, sizeof bb);
        inputs = mix(mix(mix(inputs, (uint64_t)k), lb), bb);
        no++;
    }
    if (st->model_bracket == bracket && st->model_inputs == inputs) {
        free(ob);
        return;
    }
    st->model_bracket = bracket;
    st->model_inputs = inputs;
    st->has_model = 0;

    /* CG_BOHB.new_result, result by result: which results each budget keeps, and
     * which budgets have a model */
    int d = st->d, mp = st->min_points;
    double *x = xmalloc(sizeof *x * (size_t)(no ? no : 1) * (size_t)(d ? d : 1));
    struct budget_count *bc = xmalloc(sizeof *bc * (size_t)(no ? no : 1));
    int nb = 0, nk = 0;
    double best_model = -INFINITY;
    for (int i = 0; i < no; i++) {
        if (!encode_config(st, h->items[ob[i].k].parameters, &x[nk * d]))
            continue;
        if (best_model > ob[i].budget)
            continue;
        int j = 0;
        while (j < nb && bc[j].budget != ob[i].budget)
            j++;
        if (j == nb)
            bc[nb++] = (struct budget_count){ob[i].budget, 0};
        int n = ++bc[j].n;
        ob[nk] = ob[i];
        nk++;
        if (n <= mp - 1)
            continue;
        int n_good, n_bad;
        split_sizes(st, n, &n_good, &n_bad);
        int good_rows = n_good < n ? n_good : n;
        int bad_rows = n - n_good < n_bad ? n - n_good : n_bad;
        if (good_rows <= d || bad_rows <= d)
            continue;
        if (ob[i].budget > best_model)
            best_model = ob[i].budget;
    }
    if (best_model > -INFINITY)
        fit_at_budget(st, ob, nk, x, best_model);
    free(bc);
    free(x);
    free(ob);
}

/* A normal of mean m and deviation bw, truncated to [0, 1], by its inverse CDF. */
static double truncnorm01(struct rng *r, double m, double bw)
{
    double pa = phi(-m / bw), pb = phi((1 - m) / bw);
    double u = pa + (pb - pa) * rng_uniform(r);
    double v = m + bw * phi_inv(u);
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

/* CG_BOHB.get_config for counter c (the model must be current). */
static cJSON *draw_config(struct bohb *st, int64_t counter)
{
    struct rng r;
    rng_init(&r, st->seed, (uint64_t)counter);
    if (!st->has_model || rng_uniform(&r) < st->random_fraction)
        return ss_sample(st->space, &r);
    int d = st->d;
    double *v = xmalloc(sizeof *v * (size_t)d), *best_v = xmalloc(sizeof *best_v * (size_t)d);
    double best = INFINITY;
    int found = 0;
    for (int s = 0; s < st->num_samples; s++) {
        const double *datum = &st->good.x[rng_below(&r, (uint64_t)st->good.n) * (uint64_t)d];
        for (int j = 0; j < d; j++) {
            const struct ss_param *p = &st->space->params[j];
            double bw = st->good.bw[j] > st->min_bandwidth ? st->good.bw[j] : st->min_bandwidth;
            if (p->type != SS_CHOICE)
                v[j] = truncnorm01(&r, datum[j], st->bandwidth_factor * bw);
            else if (rng_uniform(&r) < 1 - bw)
                v[j] = datum[j];
            else
                v[j] = (double)rng_below(&r, (uint64_t)p->n_choices);
        }
        double l = kde_pdf(st, &st->good, v), g = kde_pdf(st, &st->bad, v);
        double val = (g > 1e-32 ? g : 1e-32) / (l > 1e-32 ? l : 1e-32);
        if (!isfinite(val)) {
            if (isfinite(l)) {
                memcpy(best_v, v, sizeof *v * (size_t)d);
                found = 1;
                break;
            }
            continue;
        }
        if (val < best) {
            best = val;
            memcpy(best_v, v, sizeof *v * (size_t)d);
            found = 1;
        }
    }
    cJSON *out;
    if (!found) {
        out = ss_sample(st->space, &r);
    } else {
        out = cJSON_CreateObject();
        for (int j = 0; j < d; j++)
            cJSON_AddItemToObject(out, st->space->params[j].name, decode(&st->space->params[j], best_v[j]));
    }
    free(v);
    free(best_v);
    return out;
}

/* ---- tuner_ops ---- */

static int bohb_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                       struct errbuf *e)
{
    int mode = 0, min_budget = 1, max_budget = 3, eta = 3, min_points = -1, top = 15, samples = 64;
    double frac = 1.0 / 3, bw_factor = 3, min_bw = 1e-3;
    uint64_t own_seed = seed;
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode},
        {"min_budget", CA_INT, 1, 1000000000, .out = &min_budget},
        {"max_budget", CA_INT, 1, 1000000000, .out = &max_budget},
        {"eta", CA_INT, 2, 9999, .out = &eta},
        {"min_points_in_model", CA_INT, 0, 9999, .out = &min_points},
        {"top_n_percent", CA_INT, 1, 99, .out = &top},
        {"num_samples", CA_INT, 1, 9999, .out = &samples},
        {"random_fraction", CA_NUMBER, 0, 1, .out = &frac},
        {"bandwidth_factor", CA_NUMBER, 0, 9999, .out = &bw_factor},
        {"min_bandwidth", CA_NUMBER, 0, 9999, .out = &min_bw},
        {"config_space", CA_KEY, .out = NULL},
        {"seed", CA_SEED, .out = &own_seed},
    };
    if (classargs_check(args, CA_TUNER, "BOHB", rules, CA_COUNT(rules), e) < 0)
        return -1;
    const cJSON *cs = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "config_space") : NULL;
    if (cs && !cJSON_IsNull(cs))
        return errf(e, "tuner.classArgs.config_space: ConfigSpace files are not supported; write the search space "
                       "in NNI's format (searchSpace or searchSpaceFile)");
    if (!(bw_factor > 0))
        return errf(e, "tuner.classArgs.bandwidth_factor: must be greater than 0");
    if (!(min_bw > 0))
        return errf(e, "tuner.classArgs.min_bandwidth: must be greater than 0");
    if (max_budget < min_budget)
        return errf(e, "tuner.classArgs.max_budget: must be at least min_budget (%d)", min_budget);
    if (space->n == 0)
        return errf(e, "searchSpace: BOHB needs at least one parameter");
    for (int i = 0; i < space->n; i++) {
        const struct ss_param *p = &space->params[i];
        if (strcmp(p->name, HB_BUDGET_KEY) == 0)
            return errf(e, "searchSpace.%s: the key is reserved: BOHB gives each trial its budget there",
                        HB_BUDGET_KEY);
        if (p->sub)
            return errf(e, "searchSpace.%s: BOHB does not support nested choice (its model needs plain values)",
                        p->path);
    }
    struct bohb *st = xcalloc(1, sizeof *st);
    if (hb_plan_init(&st->plan, max_budget, min_budget, eta, mode == 0, HB_STRICT, 0, e) < 0) {
        free(st);
        return errprefix(e, "tuner.classArgs.max_budget");
    }
    if (ss_parse(space->json, &st->space, NULL, 0, e) < 0) {
        free(st);
        return -1;
    }
    st->seed = own_seed;
    st->maximize = mode == 0;
    st->d = st->space->n;
    /* NNI: None means dimensions + 1, and less is raised to it (with a warning) */
    st->min_points = min_points < st->d + 1 ? st->d + 1 : min_points;
    st->top_n_percent = top;
    st->num_samples = samples;
    st->random_fraction = frac;
    st->bandwidth_factor = bw_factor;
    st->min_bandwidth = min_bw;
    st->max_budget = max_budget;
    st->model_bracket = -1;
    st->last_index = -1;
    *state = st;
    return 0;
}

static void bohb_destroy(void *state)
{
    struct bohb *st = state;
    if (!st)
        return;
    kde_free(&st->good);
    kde_free(&st->bad);
    ss_free(st->space);
    free(st);
}

static int bohb_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                        struct errbuf *e)
{
    struct bohb *st = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "BOHB: negative tuner index %lld", (long long)index);
    struct tuner_history none = {0};
    if (!hist)
        hist = &none;
    struct hb_next next;
    if (hb_decide(&st->plan, hist, &next) == 2)
        return 2;
    if (next.params) {
        *params = hb_with_budget(next.params, next.budget);
    } else {
        model_for(st, hist, next.bracket);
        cJSON *drawn = draw_config(st, next.counter);
        *params = hb_with_budget(drawn, next.budget);
        cJSON_Delete(drawn);
    }
    st->last_index = index;
    memcpy(st->last_label, next.label, sizeof st->last_label);
    return 1;
}

static char *bohb_label(void *state, int64_t index)
{
    struct bohb *st = state;
    return index == st->last_index ? xstrdup(st->last_label) : NULL;
}

const struct tuner_ops tuner_bohb = {
    .name = "BOHB",
    .create = bohb_create,
    .suggest = bohb_suggest,
    .destroy = bohb_destroy,
    .needs_history = 1,
    .label = bohb_label,
    .needs_latest = 1,
    .advisor = 1,
    .index_spans_spaces = 1,
};

int bohb_model_state(void *state, const struct tuner_history *h, int64_t bracket, double *budget)
{
    struct bohb *st = state;
    model_for(st, h, bracket);
    if (budget)
        *budget = st->model_budget;
    return st->has_model;
}
