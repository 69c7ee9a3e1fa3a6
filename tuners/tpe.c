/* tpe.c: NNI's TpeTuner ("TPE"), the Tree-structured Parzen Estimator of Bergstra
 * et al. (2011) after NNI 3.0's tpe_tuner.py, rebuilt from the history on every call
 * so that a suggestion is a pure function of (seed, index, history): a restarted api
 * continues the same search.
 *
 * The search space is cut into groups: the top-level parameters, and for every option
 * of a nested choice the parameters of its sub-space. A group is modelled from the
 * trials in which it was active (its branch was chosen). Within a group the trials
 * with a result (and, with a constant liar, the pending ones with the liar's value)
 * are split by loss into good and bad; each part becomes a Parzen estimator
 * (parzen.c), l(x) and g(x); of n_ei_candidates points drawn from l, the one with the
 * largest log l(x) - log g(x) is suggested (in a group with a categorical parameter,
 * three suggestions of four pick some values by their own marginals: model_choose()'s
 * portfolio; and now and then a nested choice's branch is drawn at random:
 * explore_branches()). A randint is ordered (pz_dim_init()). While a group has
 * fewer than n_startup_jobs trials its parameters are drawn as the Random tuner draws
 * them (the same values for the same seed and index). model_choose() says how the
 * estimators differ from NNI's and tpe_suggest() how the bookkeeping does. */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum liar { LIAR_NONE, LIAR_BEST, LIAR_WORST, LIAR_MEAN };

/* The most results a suggestion models, and how many of them are the best ones
 * (observe_results). */
#define TPE_MAX_RESULTS 2000
#define TPE_KEEP_BEST 400

struct tpe_args {
    int maximize;
    enum liar liar;
    int n_startup_jobs, n_ei_candidates, linear_forgetting;
    double prior_weight, gamma;  /* gamma 0: trialq's split (model_choose) */
};

struct tpe_state {
    struct ss_space *space;  /* own copy: the groups point into it */
    uint64_t seed;
    struct tpe_args args;
    struct space_groups sg;
    struct pz_dim **pz;      /* per group: the estimators' view of each dimension */
    int may_repeat;          /* the space is finite: suggestions can repeat */
    struct grid *grid;       /* for replacing a repeat, created at the first one */
    /* the start-up design (default classArgs): a Kronecker sequence over all D
     * dimensions of the groups, group g's dimension j being qoff[g] + j */
    int *qoff;
    double *qalpha, *qshift; /* per dimension: the step and the seeded shift */
};

/* The observations of one group for one suggestion: rows of d internal values. */
struct obs {
    int d, n, cap;
    double *x;
    double *loss;
};

/* ---- classArgs ---- */

#define TPE_ARGS CA_TUNER ".tpe_args"
#define ARG_PATH TPE_ARGS "."

static int parse_tpe_args(const cJSON *ta, struct tpe_args *a, struct errbuf *e)
{
    if (!ta || cJSON_IsNull(ta))
        return 0;
    /* The upper bounds keep the values in an int and one suggestion's work bounded. */
    const struct ca_rule rules[] = {
        {"constant_liar_type", CA_KEY, .out = NULL},
        {"n_startup_jobs", CA_INT, 0, 1000000000, .out = &a->n_startup_jobs},
        {"n_ei_candidates", CA_INT, 1, 100000, .out = &a->n_ei_candidates},
        {"linear_forgetting", CA_INT, 1, 1000000000, .out = &a->linear_forgetting},
        {"prior_weight", CA_NUMBER, 0, INFINITY, .out = &a->prior_weight},
        {"gamma", CA_KEY, .out = NULL},
    };
    if (classargs_keys(ta, TPE_ARGS, NULL, rules, CA_COUNT(rules), e) < 0)
        return -1;
    const cJSON *liar = cJSON_GetObjectItemCaseSensitive(ta, "constant_liar_type");
    if (liar && cJSON_IsNull(liar)) {
        a->liar = LIAR_NONE;
    } else if (liar) {
        /* NNI lower-cases the name before looking it up */
        if (!cJSON_IsString(liar))
            return errf(e, ARG_PATH "constant_liar_type: must be \"best\", \"worst\", \"mean\" or null");
        if (strcasecmp(liar->valuestring, "best") == 0)
            a->liar = LIAR_BEST;
        else if (strcasecmp(liar->valuestring, "worst") == 0)
            a->liar = LIAR_WORST;
        else if (strcasecmp(liar->valuestring, "mean") == 0)
            a->liar = LIAR_MEAN;
        else
            return errf(e, ARG_PATH "constant_liar_type: must be \"best\", \"worst\", \"mean\" or null, got \"%s\"",
                        liar->valuestring);
    }
    if (classargs_rules(ta, TPE_ARGS, NULL, rules, CA_COUNT(rules), e) < 0)
        return -1;
    const cJSON *gamma = cJSON_GetObjectItemCaseSensitive(ta, "gamma");
    if (gamma && !cJSON_IsNull(gamma)) {
        if (!cJSON_IsNumber(gamma))
            return errf(e, ARG_PATH "gamma: must be in (0, 1), got a non-number");
        if (!(gamma->valuedouble > 0 && gamma->valuedouble < 1))
            return errf(e, ARG_PATH "gamma: must be in (0, 1), got %.17g", gamma->valuedouble);
        a->gamma = gamma->valuedouble;
    }
    return 0;
}

/* ---- the groups of the search space ---- */

/* The estimators' view of one numeric or categorical parameter (internal.h). An
 * ordered randint's offsets 0 .. n-1 are a numeric dimension over [-0.5, n - 0.5]
 * (TPE rounds its draws: round_ordinal), so that near integers share their evidence
 * as near reals do. */
void pz_dim_init(struct pz_dim *z, const struct ss_param *p, int ordered_randint)
{
    memset(z, 0, sizeof *z);
    if (p->type == SS_RANDINT && ordered_randint) {
        z->ordinal = 1;
        z->lo = -0.5;
        z->hi = p->n_choices - 0.5;
        z->prior_mu = 0.5 * (z->lo + z->hi);
        z->prior_sigma = z->hi - z->lo;
    } else if (p->type == SS_CHOICE || p->type == SS_RANDINT) {
        z->n_cat = p->n_choices;  /* NNI's TPE treats randint as categorical too */
    } else if (ss_type_is_normal(p->type)) {
        z->lo = -INFINITY;
        z->hi = INFINITY;
        z->prior_mu = p->a;
        z->prior_sigma = p->b;
    } else {
        int lg = ss_type_is_log(p->type);
        z->lo = lg ? log(p->a) : p->a;
        z->hi = lg ? log(p->b) : p->b;
        z->prior_mu = 0.5 * (z->lo + z->hi);
        z->prior_sigma = z->hi - z->lo;
    }
}

/* trialq's view of a randint (gamma unset): ordered (pz_dim_init), not categorical as
 * in NNI's TPE (NNI's docs leave the order to the tuner), so that a good value's
 * neighbours share its evidence: 4 of 8 layers says something about 3 and 5. No kernel of a trial is narrower than TPE_ORDINAL_SIGMA
 * of a step at first (a neighbour keeps 0.41 of a value's density), narrowing
 * linearly to TPE_ORDINAL_SIGMA_END at TPE_ORDINAL_SIGMA_UNTIL results (0.004):
 * narrower kernels early, once the values repeat, made it categorical without a
 * categorical kernel's share for the other options, and a search stuck one step from
 * the optimum (bench's mixed5 at 300 trials: median best 0.53, 0.41 with the floor,
 * 20 seeds); a floor that stays wide keeps trying the neighbours, so that the last
 * 100 of 1,000 trials were a little worse than the 100 before (mixed5 at
 * concurrency 8: 0.4026 against 0.4019; now 0.3996 against 0.4015). Figures in
 * bench/README.md. */
#define TPE_ORDINAL_SIGMA 0.75
#define TPE_ORDINAL_SIGMA_END 0.3
#define TPE_ORDINAL_SIGMA_UNTIL 500

/* An ordinal dimension's draws to the nearest offset in its range */
static void round_ordinal(const struct pz_dim *z, int d, double *x)
{
    for (int j = 0; j < d; j++)
        if (z[j].ordinal)
            x[j] = fmin(fmax(floor(x[j] + 0.5), 0), z[j].hi - 0.5);
}

/* The start-up design (gamma unset): instead of Random's independent draws, the first
 * trials follow the R_D sequence (Roberts, "The unreasonable effectiveness of
 * quasirandom sequences", 2018), point n at frac(shift + n alpha) with alpha_k =
 * phi_D^-(k+1), phi_D the positive root of x^(D+1) = x + 1, shifted by a uniform draw
 * per dimension from the seed: a low-discrepancy set, so 10 or 32 start-up trials
 * cover the space evenly where random ones leave holes and clumps. Point n is a
 * function of (seed, n) alone, as every suggestion is. Issue 33: at concurrency 32,
 * where a third of a 100-trial budget is start-up, hartmann6's median best went from
 * -2.397 to -2.591 and rosenbrock4's from 320 to 298 (60 seeds; bench/README.md). */
#define TPE_DESIGN_STREAM UINT64_MAX /* the shifts' stream; suggestion n uses stream n */
static void startup_design_init(struct tpe_state *t)
{
    int d = 0;
    t->qoff = xcalloc((size_t)(t->sg.n ? t->sg.n : 1), sizeof *t->qoff);
    for (int g = 0; g < t->sg.n; g++) {
        t->qoff[g] = d;
        d += t->sg.g[g].d;
    }
    double phi = 2;
    for (int k = 0; k < 64; k++)
        phi = pow(1 + phi, 1.0 / (d + 1));
    t->qalpha = xcalloc((size_t)(d ? d : 1), sizeof *t->qalpha);
    t->qshift = xcalloc((size_t)(d ? d : 1), sizeof *t->qshift);
    struct rng r;
    rng_init(&r, t->seed, TPE_DESIGN_STREAM);
    for (int k = 0; k < d; k++) {
        t->qalpha[k] = pow(1 / phi, k + 1);
        t->qshift[k] = rng_uniform(&r);
    }
}

/* Start-up point `index` in dimension j of group g, as an internal value (an option
 * index for a categorical dimension); 0 for a dimension without bounds (the normal
 * types: Random's draw is kept), 1 with *out set. */
static int startup_design(const struct tpe_state *t, int64_t index, int g, int j, double *out)
{
    const struct pz_dim *z = &t->pz[g][j];
    int k = t->qoff[g] + j;
    double u = t->qshift[k] + (double)(index + 1) * t->qalpha[k];
    u -= floor(u);
    if (z->n_cat > 0) {
        int c = (int)(u * z->n_cat);
        *out = c < z->n_cat ? c : z->n_cat - 1;
        return 1;
    }
    if (!isfinite(z->lo) || !isfinite(z->hi))
        return 0;
    *out = z->lo + u * (z->hi - z->lo);
    round_ordinal(z, 1, out);  /* the offset a categorical randint's u would give */
    return 1;
}

static void tpe_destroy(void *state)
{
    struct tpe_state *t = state;
    if (!t)
        return;
    for (int g = 0; t->pz && g < t->sg.n; g++)
        free(t->pz[g]);
    free(t->pz);
    space_groups_free(&t->sg);
    grid_free(t->grid);
    ss_free(t->space);
    free(t->qoff);
    free(t->qalpha);
    free(t->qshift);
    free(t);
}

static int tpe_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                      struct errbuf *e)
{
    /* NNI's defaults (TpeArguments, TpeTuner.__init__) but three, for parallel trials
     * (issue 33, docs/config.md): the liar is "worst" (NNI: "best", which fills the
     * small good part with the running trials' unevaluated points); gamma is unset:
     * model_choose()'s split (NNI: 0.25, n_below = ceil(0.25 sqrt(n))); and the model
     * starts after 10 trials (NNI: 20; Optuna: 10), a tenth of a 100-trial budget. */
    struct tpe_args a = {
        .maximize = 0, .liar = LIAR_WORST, .n_startup_jobs = 10, .n_ei_candidates = 24,
        .linear_forgetting = 25, .prior_weight = 1.0, .gamma = 0,
    };
    uint64_t own_seed = seed;
    int mode = 1;
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode},
        {"seed", CA_SEED, .out = &own_seed, .pass = -1},
        {"tpe_args", CA_KEY, .out = NULL},
    };
    if (classargs_check(args, CA_TUNER, "TPE", rules, CA_COUNT(rules), e) < 0)
        return -1;
    a.maximize = mode == 0;
    if (parse_tpe_args(cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "tpe_args") : NULL, &a, e) < 0)
        return -1;
    struct tpe_state *t = xcalloc(1, sizeof *t);
    if (ss_parse(space->json, &t->space, NULL, 0, e) < 0) {
        free(t);
        return -1;
    }
    t->seed = own_seed;
    t->args = a;
    space_groups_init(&t->sg, t->space);
    t->pz = xcalloc((size_t)t->sg.n, sizeof *t->pz);
    for (int g = 0; g < t->sg.n; g++) {
        t->pz[g] = xcalloc((size_t)(t->sg.g[g].d ? t->sg.g[g].d : 1), sizeof *t->pz[g]);
        for (int j = 0; j < t->sg.g[g].d; j++)
            pz_dim_init(&t->pz[g][j], t->sg.g[g].dims[j].p, a.gamma == 0);
    }
    t->may_repeat = space_may_repeat(t->space);  /* NNI's Deduplicator (hpo_utils/dedup.py) */
    startup_design_init(t);
    *state = t;
    return 0;
}

/* ---- history -> observations ---- */

/* NNI's format_parameters for one value (internal.h): the option index of a choice or
 * randint, the log of a log type. Returns 0 and sets *out, or -1 when the value does not
 * fit the parameter (such a trial is left out of that parameter's group). */
int pz_internal_value(const struct ss_param *p, const struct pz_dim *z, const cJSON *v, double *out)
{
    if (observed_value(p, v, out) < 0)
        return -1;
    if (p->type == SS_CHOICE || p->type == SS_RANDINT)
        return 0;
    double x = *out;
    if (ss_type_is_log(p->type)) {
        /* qlognormal rounds every exp(x) below q / 2 to 0: the boundary stands for it */
        if (x == 0 && p->type == SS_QLOGNORMAL)
            x = p->q / 2;
        if (!(x > 0))
            return -1;
        x = log(x);
    }
    /* An imported value outside the range still says something about its end. */
    if (x < z->lo)
        x = z->lo;
    if (x > z->hi)
        x = z->hi;
    *out = x;
    return 0;
}

/* Adds the trial `obj` with `loss` to group g and, through the nested choices it
 * made, to the groups of the chosen branches. */
static void add_observation(const struct tpe_state *t, struct obs *sets, int g, const cJSON *obj, double loss)
{
    const struct sg_group *G = &t->sg.g[g];
    const struct pz_dim *pz = t->pz[g];
    struct obs *o = &sets[g];
    if (!cJSON_IsObject(obj))
        return;
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 64;
        o->x = xrealloc(o->x, sizeof *o->x * (size_t)o->cap * (size_t)(o->d ? o->d : 1));
        o->loss = xrealloc(o->loss, sizeof *o->loss * (size_t)o->cap);
    }
    double *row = o->x + (size_t)o->n * o->d;
    for (int j = 0; j < G->d; j++)
        if (pz_internal_value(G->dims[j].p, &pz[j], cJSON_GetObjectItemCaseSensitive(obj, G->dims[j].p->name),
                              &row[j]) < 0)
            return;
    o->loss[o->n++] = loss;
    for (int j = 0; j < G->d; j++)
        if (G->dims[j].child)
            add_observation(t, sets, G->dims[j].child[(int)row[j]],
                            cJSON_GetObjectItemCaseSensitive(obj, G->dims[j].p->name), loss);
}

struct obs_ctx {
    const struct tpe_state *t;
    struct obs *sets;
};

/* history_visit: one trial of the history into the groups it was active in */
static void observe_trial(void *ctx, const cJSON *parameters, double loss)
{
    struct obs_ctx *c = ctx;
    add_observation(c->t, c->sets, 0, parameters, loss);
}

/* The results the model sees. Up to TPE_MAX_RESULTS, all of them; beyond, the
 * TPE_KEEP_BEST best (least loss, then earliest) and the most recent others, up to
 * TPE_MAX_RESULTS in all, so that a suggestion's work stays bounded however long the
 * experiment runs (issue 33: <= 20 ms at 100,000 finished trials). Either way they
 * enter in sequence order, and the choice depends on the history alone. */
static void observe_results(const struct tpe_state *t, const struct tuner_history *hist, int n_results,
                            struct obs_ctx *oc)
{
    double sign = t->args.maximize ? -1 : 1;
    if (n_results <= TPE_MAX_RESULTS) {
        history_each_result(hist, sign, observe_trial, oc);
        return;
    }
    int n = hist->n, m = 0;
    struct ranked *r = xmalloc(sizeof *r * (size_t)n_results);
    for (int i = 0; i < n; i++) {
        const struct tuner_result *it = &hist->items[i];
        if (it->has_value && isfinite(it->value))
            r[m++] = (struct ranked){sign * it->value, i};
    }
    ranked_select(r, m, TPE_KEEP_BEST);
    unsigned char *keep = xcalloc((size_t)n, 1);
    for (int k = 0; k < TPE_KEEP_BEST; k++)
        keep[r[k].i] = 1;
    free(r);
    for (int i = n - 1, kept = TPE_KEEP_BEST; i >= 0 && kept < TPE_MAX_RESULTS; i--) {
        const struct tuner_result *it = &hist->items[i];
        if (!keep[i] && it->has_value && isfinite(it->value)) {
            keep[i] = 1;
            kept++;
        }
    }
    for (int i = 0; i < n; i++)
        if (keep[i])
            observe_trial(oc, hist->items[i].parameters, sign * hist->items[i].value);
    free(keep);
}

/* ---- the model ---- */

/* NNI's linear_forgetting_weights: of n values, the last `lf` get 1 and the others
 * a ramp from 1/n up to 1. */
static void forgetting_weights(int n, int lf, double *w)
{
    if (n < lf) {
        for (int i = 0; i < n; i++)
            w[i] = 1;
        return;
    }
    int ramp = n - lf;
    for (int i = 0; i < ramp; i++)
        w[i] = ramp == 1 ? 1.0 / n : 1.0 / n + (1.0 - 1.0 / n) * i / (ramp - 1);
    for (int i = ramp; i < n; i++)
        w[i] = 1;
}

/* trialq's split (gamma unset; issue 33, figures in bench/README.md): a running
 * trial's kernel in g(x) weighs this much of a result's (TPE_PENDING_WEIGHT_INDEP in
 * an independent suggestion), l(x)'s categorical kernels are shaped with this share
 * of prior_weight, and the numeric kernels may narrow to prior_sigma / max(100,
 * TPE_CLIP_PER_TRIAL n). */
#define TPE_PENDING_WEIGHT 0.003
#define TPE_PENDING_WEIGHT_INDEP 0.03
#define TPE_CAT_PRIOR_SHARE 0.4
#define TPE_CLIP_PER_TRIAL 0.4
/* and, while a group has fewer than TPE_SCOTT_UNTIL results, its numeric kernels are
 * at least Scott's-rule wide (pz_shape's scott: TPE_SCOTT, fading to 0 at
 * TPE_SCOTT_UNTIL results); while trials run, the floor grows by TPE_SCOTT_RUNNING_L
 * (l(x)) and TPE_SCOTT_RUNNING_G (g(x)) times the running trials per result (at most
 * 1), fading to 0 at TPE_SCOTT_RUNNING_UNTIL results */
#define TPE_SCOTT 0.1
#define TPE_SCOTT_UNTIL 100
#define TPE_SCOTT_RUNNING_L 0.3
#define TPE_SCOTT_RUNNING_G 0.1
#define TPE_SCOTT_RUNNING_UNTIL 200
/* How a suggestion picks among the candidates (pick_candidate): in a group with a
 * categorical parameter, by its index modulo 4 (model_choose's portfolio) */
enum pick { PICK_JOINT, PICK_INDEP, PICK_HYBRID };
static enum pick portfolio(int64_t index)
{
    return index % 2 == 1 ? PICK_INDEP : index % 4 == 0 ? PICK_JOINT : PICK_HYBRID;
}

/* 1 at no results, falling linearly to 0 at `until` results and after */
static double fading(int n_results, double until)
{
    return n_results >= until ? 0 : 1 - n_results / until;
}

static int has_categorical(const struct pz_dim *pz, int d)
{
    for (int j = 0; j < d; j++)
        if (pz[j].n_cat > 0)
            return 1;
    return 0;
}

/* Of n_cand draws of l(x) (one kernel for all the parameters), what is suggested.
 * Jointly, the candidate with the largest log l(x) - log g(x); independently, each
 * parameter takes the value, among the candidates', with the largest ratio of its own
 * marginals (Optuna's default, univariate TPE: a draw of l(x) in one dimension is a
 * draw of that marginal); hybrid, the numeric parameters take the values of the
 * candidate with the largest ratio of their joint marginals, and each categorical
 * one its own as independently. The first of equals wins, as numpy's argmax. */
static void pick_candidate(const struct pz_mixture *below, const struct pz_mixture *above, int d, enum pick how,
                           int n_cand, struct rng *r, double *out)
{
    double *cand = xmalloc(sizeof *cand * (size_t)d);
    double *best = xmalloc(sizeof *best * (size_t)(d + 1));  /* per dimension, then the joint numeric one */
    unsigned char *numeric = xmalloc((size_t)d);
    int any_numeric = 0;  /* a hybrid pick without numeric parameters is an independent one */
    for (int j = 0; j < d; j++)
        any_numeric |= numeric[j] = how == PICK_HYBRID && below->dims[j].n_cat == 0;
    for (int c = 0; c < n_cand; c++) {
        pz_sample(below, r, cand);
        round_ordinal(below->dims, d, cand);
        if (how == PICK_JOINT) {
            double score = pz_logpdf(below, cand) - pz_logpdf(above, cand);
            if (c == 0 || score > best[0]) {
                best[0] = score;
                memcpy(out, cand, sizeof *cand * (size_t)d);
            }
            continue;
        }
        if (any_numeric) {
            double score = pz_logpdf_mask(below, cand, numeric) - pz_logpdf_mask(above, cand, numeric);
            if (c == 0 || score > best[d]) {
                best[d] = score;
                for (int j = 0; j < d; j++)
                    if (numeric[j])
                        out[j] = cand[j];
            }
        }
        for (int j = 0; j < d; j++) {
            if (numeric[j])
                continue;
            double score = pz_logpdf_dim(below, cand, j) - pz_logpdf_dim(above, cand, j);
            if (c == 0 || score > best[j]) {
                best[j] = score;
                out[j] = cand[j];
            }
        }
    }
    free(cand);
    free(best);
    free(numeric);
}

/* Chooses the values of group g's parameters from its observations o (the first
 * n_results are results, the others the liar's): out[j] is the internal value of
 * dimension j.
 *
 * The n observations sorted by loss are split into the best n_below and the rest.
 * With gamma given (NNI's rule) n_below = min(ceil(gamma sqrt(n)), linear_forgetting)
 * and each part is weighted by linear_forgetting_weights in that (loss) order, as
 * NNI's code does. By default (gamma absent) n_below = ceil(n / 10) of the results
 * (Optuna's split, not capped: a cap of 25 drifts at 1,000 trials), and the good
 * kernels are weighted by rank, from 1 for the best down to 0.1: NNI's 3 to 5 good
 * trials of a few hundred leave most of the trials near the optimum in the bad
 * part, so g(x) is highest exactly there and the candidates that win are far away
 * (the search drifts off what it found); a tenth keeps the optimum's neighbourhood
 * in l(x), and the rank weights keep the pull towards the very best that the small
 * split had. Also by default, the running trials stay in the bad part but weigh
 * TPE_PENDING_WEIGHT there (enough to spread a batch of parallel suggestions, not so
 * much that they push it off the good region), l(x)'s categorical kernels are
 * sharper (TPE_CAT_PRIOR_SHARE: its draws keep the good trials' options; g(x)'s stay
 * NNI's, as sharper ones there made the search leave the best option late: drift4,
 * 4 of 20 seeds), and the numeric kernels' floor keeps narrowing past 250
 * trials (TPE_CLIP_PER_TRIAL; NNI's stops at a hundredth of the range, where a long
 * search stalls and its last trials get worse than the ones before). In the first
 * TPE_SCOTT_UNTIL results the numeric kernels of both parts are also at least a
 * fading share of Scott's-rule width (TPE_SCOTT: at 10 results 0.09 n^(-1/(d+4)) of
 * the range, 0 from 100 on): the neighbour-gap widths of a few good trials in
 * several dimensions are narrow and g(x)'s many narrow bad kernels leave holes, so
 * a small budget searched too locally (hartmann6 at 100 trials and concurrency 8:
 * -2.77 against Optuna's -3.0; bench/README.md), while a long search keeps the
 * narrow kernels that let it converge. While trials run, the floor grows with their
 * share of the observations (TPE_SCOTT_RUNNING_L, _G, fading over
 * TPE_SCOTT_RUNNING_UNTIL results): a batch of 32 suggestions made from 32 results
 * is searched more widely than one suggestion made from them, and g(x) smoother
 * (issue 33: hartmann6 at 100 trials, 32 at once, best -2.72 -> -2.88 over 200
 * seeds, Optuna's multivariate TPE -2.87; one at a time nothing changes). The prior
 * joins both estimators with prior_weight, and of n_ei_candidates drawn from l the
 * one with the largest log l(x) - log g(x) wins.
 *
 * A portfolio: in a group with a categorical parameter (a choice), the suggestions
 * take turns by index (portfolio()). Odd ones are independent: each parameter takes
 * the candidate value with the largest ratio of its own marginals l_j / g_j, as
 * Optuna's default (univariate) TPE does. Of the even ones, every second is joint and
 * the other hybrid: its numeric parameters (the ordinal randints among them) take
 * the values of the candidate with the largest ratio of their joint marginals, each
 * categorical one its own value as independently. Independent and hybrid ones go
 * without the Scott floors and with the running trials at TPE_PENDING_WEIGHT_INDEP.
 * The joint model keeps correlated parameters together but ties a good trial's
 * options to its other values; the independent one recombines the good values of
 * different trials, which is what an objective made of separate terms (an
 * activation's penalty plus a learning rate's) rewards, but loses the numeric
 * parameters' correlations; the hybrid one recombines the options and keeps those.
 * At 100 trials (bench's mixed5, 200 seeds) the median of all 100 values went from
 * 4.81 (joint alone) to 3.11 (joint and independent) to 2.90 one at a time and 12.64
 * to 10.82 to 8.43 at 32 at once (Optuna's default: 6.97, 12.28); the best, 0.70 ->
 * 0.78 -> 0.78 and 1.36 -> 1.55 -> 1.39 (the better of Optuna's: 1.06, 1.60). Half
 * of the suggestions stay independent: with a quarter, the last 100 of 300 trials
 * of bench's drift4 (one choice, three numeric parameters, one of them irrelevant)
 * were no better than the 100 before in 11 of 40 seeds (5 with a half; 4 before the
 * hybrid suggestions). On purely numeric spaces, where an independent model loses
 * the correlations (rosenbrock4's best at 100 trials: 6.3 -> 228), every suggestion
 * is joint.
 *
 * Unlike NNI, one estimator models the whole group jointly (a kernel per trial
 * over all its parameters, as in Optuna's multivariate TPE), so that correlated
 * parameters are sampled together; and the kernels are narrower: the magic clip
 * floor counts all n observations (NNI: those of the part), and the widths of the
 * good kernels come from NNI's neighbour-gap rule over the best
 * max(n_below, min(ceil(n / 10), linear_forgetting)) trials. */
static void model_choose(const struct tpe_state *t, int g, const struct obs *o, int n_results, int64_t index,
                         struct rng *r, double *out)
{
    const struct sg_group *G = &t->sg.g[g];
    const struct pz_dim *pz = t->pz[g];
    const struct tpe_args *a = &t->args;
    int n = o->n, d = G->d, nni = a->gamma > 0;
    if (d == 0)
        return;
    /* how this suggestion picks (the portfolio); an independent or hybrid one models
     * each categorical parameter on its own */
    enum pick how = !nni && has_categorical(pz, d) ? portfolio(index) : PICK_JOINT;
    int indep = how != PICK_JOINT;

    struct ranked *rank = xmalloc(sizeof *rank * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        rank[i] = (struct ranked){o->loss[i], i};
    ranked_sort(rank, n);  /* ties in trial order, as Python's stable sort */
    /* the good part is a tenth of the results, not of the results and the liar's
     * running trials: 31 running trials beside 32 results made it 7 of 32 instead of 4
     * (issue 33: at concurrency 32, budget 100, rosenbrock4's median best 320 -> 216) */
    int n_below = nni ? (int)ceil(a->gamma * sqrt((double)n)) : (int)ceil(0.1 * n_results);
    if (nni && n_below > a->linear_forgetting)
        n_below = a->linear_forgetting;
    if (n_below > n)
        n_below = n;
    int n_spread = (int)ceil(0.1 * n);
    if (n_spread > a->linear_forgetting)
        n_spread = a->linear_forgetting;
    if (n_spread < n_below)
        n_spread = n_below;

    double *xs = xmalloc(sizeof *xs * (size_t)(n ? n : 1) * (size_t)d);
    double *w = xmalloc(sizeof *w * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        memcpy(xs + (size_t)i * d, o->x + (size_t)rank[i].i * d, sizeof *xs * (size_t)d);
    forgetting_weights(n_below, a->linear_forgetting, w);
    forgetting_weights(n - n_below, a->linear_forgetting, w + n_below);
    if (!nni) {
        for (int i = 0; i < n_below; i++)  /* the good kernels weighted by rank */
            w[i] = 1.0 - 0.9 * i / n_below;
        for (int i = n_below; i < n; i++)
            if (rank[i].i >= n_results)
                w[i] *= indep ? TPE_PENDING_WEIGHT_INDEP : TPE_PENDING_WEIGHT;
    }
    free(rank);

    double clip_div = n + 2 < 100 ? n + 2 : 100;
    if (!nni && TPE_CLIP_PER_TRIAL * n > clip_div)
        clip_div = TPE_CLIP_PER_TRIAL * n;
    /* the Scott floors: fading with the results, wider while trials run (l(x) more
     * than g(x)), none in an independent suggestion */
    double fade = nni || indep ? 0 : fading(n_results, TPE_SCOTT_UNTIL);
    double running = n_results > 0 ? fmin(1, (double)(n - n_results) / n_results) : 0;
    running *= nni || indep ? 0 : fading(n_results, TPE_SCOTT_RUNNING_UNTIL);
    double scott_l = fade * TPE_SCOTT + running * TPE_SCOTT_RUNNING_L;
    double scott_g = fade * TPE_SCOTT + running * TPE_SCOTT_RUNNING_G;
    double ord_sigma = TPE_ORDINAL_SIGMA_END + (TPE_ORDINAL_SIGMA - TPE_ORDINAL_SIGMA_END) *
                                                   fading(n_results, TPE_ORDINAL_SIGMA_UNTIL);
    struct pz_shape good = {n_spread, clip_div, a->prior_weight,
                            nni ? a->prior_weight : TPE_CAT_PRIOR_SHARE * a->prior_weight, scott_l, ord_sigma};
    struct pz_shape bad = {n - n_below, clip_div, a->prior_weight, a->prior_weight, scott_g, ord_sigma};
    struct pz_mixture below, above;
    pz_build(&below, pz, d, xs, w, n_below, &good);
    pz_build(&above, pz, d, xs + (size_t)n_below * d, w + n_below, n - n_below, &bad);
    pick_candidate(&below, &above, d, how, a->n_ei_candidates, r, out);
    pz_free(&below);
    pz_free(&above);
    free(xs);
    free(w);
}

/* ---- suggestion ---- */

struct gen_ctx {
    const struct tpe_state *t;
    struct obs *sets;
    struct rng *r;
    const int *n_results;  /* per group: the observations that are results (not lies) */
    int64_t index;         /* the suggestion's: its point of the start-up design */
};

/* Branch exploration (gamma unset): the model's choice of each nested choice is
 * replaced, with probability TPE_BRANCH_EXPLORE min(1, results / TPE_BRANCH_RAMP)
 * (the group's results), by an option drawn uniformly; the parameters of the branch
 * drawn are still the model's (that branch's group). A branch whose sub-space was
 * searched too little to show its optimum keeps getting trials, so a long search
 * does not settle in the first branch that looked good: bench's nested6 (an sgd
 * branch with optimum 0, an adam branch with optimum 0.05) ended in adam in about
 * half of the runs (median best of 1,000 trials at concurrency 8: 0.050, Optuna's
 * default TPE 0.016); now 0.0013, its last 100 trials 0.0027 (bench/README.md). The
 * ramp leaves a small budget to the model (5 % at 100 results: nested6's last-100
 * of 100 trials one at a time 0.72, where a constant 10 % gave 0.78 and Optuna
 * 0.77). */
#define TPE_BRANCH_EXPLORE 0.1
#define TPE_BRANCH_RAMP 200
static void explore_branches(const struct sg_group *G, int n_results, struct rng *r, double *x)
{
    double p = TPE_BRANCH_EXPLORE * fmin(1, (double)n_results / TPE_BRANCH_RAMP);
    for (int j = 0; j < G->d; j++)
        if (G->dims[j].child && rng_uniform(r) < p)
            x[j] = (double)rng_below(r, (uint64_t)G->dims[j].p->n_choices);
}

/* Fills obj with group g's parameters (and those of the branches chosen). */
static void gen_group(struct gen_ctx *c, int g, cJSON *obj)
{
    const struct sg_group *G = &c->t->sg.g[g];
    double *x = xmalloc(sizeof *x * (size_t)(G->d ? G->d : 1));
    /* NNI counts the liar's trials toward n_startup_jobs; with no result at all there
     * is nothing to model (every observation would be the same lie) */
    int model = c->sets[g].n >= c->t->args.n_startup_jobs && c->n_results[g] > 0;
    int nni = c->t->args.gamma > 0;  /* NNI's model: an explicit gamma */
    if (model)
        model_choose(c->t, g, &c->sets[g], c->n_results[g], c->index, c->r, x);
    if (model && !nni)
        explore_branches(G, c->n_results[g], c->r, x);
    /* before the model: the start-up design by default, Random's draws with NNI's model */
    int design = !model && !nni;
    for (int j = 0; j < G->d; j++) {
        const struct ss_param *p = G->dims[j].p;
        if (design && startup_design(c->t, c->index, g, j, &x[j])) {
            /* x[j] is the value: made a parameter below, as the model's are */
        } else if (!model && !p->sub) {
            /* the Random tuner's draw, value for value */
            cJSON_AddItemToObject(obj, p->name, ss_sample_param(p, c->r));
            continue;
        } else if (!model) {
            x[j] = (double)rng_below(c->r, (uint64_t)p->n_choices);
        }
        cJSON *v;
        if (p->type == SS_CHOICE && p->sub) {
            int k = (int)x[j];
            v = cJSON_CreateObject();
            cJSON_AddItemToObject(v, "_name",
                                  cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p->choices[k], "_name"), 1));
            cJSON_AddItemToObject(obj, p->name, v);
            gen_group(c, G->dims[j].child[k], v);
            continue;
        }
        if (p->type == SS_CHOICE)
            v = cJSON_Duplicate(p->choices[(int)x[j]], 1);
        else if (p->type == SS_RANDINT)
            v = cJSON_CreateNumber(p->a + x[j]);
        else
            v = cJSON_CreateNumber(ss_deformat(p, x[j]));
        cJSON_AddItemToObject(obj, p->name, v);
    }
    free(x);
}

/* The parameter sets already in the history, indexed by json_hash64 (for NNI's
 * deduplication of finite spaces, once a suggestion turned out to be a repeat). */
struct history_index {
    const struct tuner_history *hist;
    struct seen seen;
};

struct param_probe {
    const struct history_index *h;
    const cJSON *params;
};

static int same_params(void *ctx, int64_t id)
{
    const struct param_probe *q = ctx;
    return json_same(q->h->hist->items[id].parameters, q->params);
}

static int index_has_hashed(const struct history_index *h, const cJSON *params, uint64_t hash)
{
    struct param_probe q = {h, params};
    return seen_find(&h->seen, hash, same_params, &q) >= 0;
}

static int index_has(const struct history_index *h, const cJSON *params)
{
    return index_has_hashed(h, params, json_hash64(params));
}

static void history_index_build(struct history_index *h, const struct tuner_history *hist)
{
    h->hist = hist;
    seen_init(&h->seen);
    for (int i = 0; hist && i < hist->n; i++) {
        const struct tuner_result *it = &hist->items[i];
        if (!it->parameters)
            continue;
        uint64_t hash = it->has_hash ? it->params_hash : json_hash64(it->parameters);
        if (!index_has_hashed(h, it->parameters, hash))
            seen_add(&h->seen, hash, i);
    }
}

/* Replaces a repeated suggestion as NNI's Deduplicator does: by the first grid-search
 * point that is not in the history. Returns 1 with *params replaced, 0 when every
 * point of the space has been tried. A suggestion that is new (the usual case) costs
 * one pass of json_same over the history, most of which stop at the first value. */
static int dedup(struct tpe_state *t, const struct tuner_history *hist, cJSON **params)
{
    if (!history_has(hist, *params))
        return 1;
    struct history_index h;
    history_index_build(&h, hist);
    cJSON_Delete(*params);
    *params = NULL;
    if (!t->grid)
        t->grid = grid_new(t->space);
    int rc = 0;
    cJSON *p;
    for (int64_t i = 0; grid_point(t->grid, i, &p); i++) {
        if (!index_has(&h, p)) {
            *params = p;
            rc = 1;
            break;
        }
        cJSON_Delete(p);
    }
    seen_free(&h.seen);
    return rc;
}

/* Bookkeeping differences from NNI 3.0, each for a reason:
 * - The random stream is rng(seed, index), not one stream for the whole run: the
 *   suggestion for an index does not depend on which calls came before it.
 * - Results enter the model in sequence order (NNI: in the order they arrived, which
 *   a restart cannot know); pending trials follow them, as in NNI.
 * - Values are read back from the parameters the trials ran (NNI keeps its own
 *   pre-rounding values): q-types are modelled at their rounded values, as NNI
 *   models imported data.
 * - Customized trials (parameter_id -1) and imported results count like any other
 *   (NNI's dispatcher hides customized trials from tuners that do not opt in).
 * - Repeats in a finite space are checked against every trial of the history, not
 *   only against this process's suggestions.
 * - Results that are not finite numbers are left out, as failed trials are. */
static int tpe_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                       struct errbuf *e)
{
    struct tpe_state *t = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "TPE: negative tuner index %lld", (long long)index);

    /* The constant liar's value: best, worst or mean loss of the results so far; 0
     * before any (NNI: "all of history is the same lie, so the value does not
     * matter"). Non-finite results are left out: they cannot be ranked. */
    struct result_stats rs;
    result_stats(hist, t->args.maximize ? -1 : 1, &rs);
    double lie = 0;
    if (rs.n_results && t->args.liar == LIAR_BEST)
        lie = rs.min;
    else if (rs.n_results && t->args.liar == LIAR_WORST)
        lie = rs.max;
    else if (rs.n_results && t->args.liar == LIAR_MEAN)
        lie = rs.sum / rs.n_results;

    struct obs *sets = xcalloc((size_t)t->sg.n, sizeof *sets);
    for (int g = 0; g < t->sg.n; g++)
        sets[g].d = t->sg.g[g].d;
    struct obs_ctx oc = {t, sets};
    observe_results(t, hist, rs.n_results, &oc);
    int *n_results = xcalloc((size_t)t->sg.n, sizeof *n_results);
    for (int g = 0; g < t->sg.n; g++)
        n_results[g] = sets[g].n;
    if (t->args.liar != LIAR_NONE)
        history_each_pending(hist, lie, observe_trial, &oc);

    struct rng r;
    rng_init(&r, t->seed, (uint64_t)index);
    struct gen_ctx c = {t, sets, &r, n_results, index};
    *params = cJSON_CreateObject();
    gen_group(&c, 0, *params);
    for (int g = 0; g < t->sg.n; g++) {
        free(sets[g].x);
        free(sets[g].loss);
    }
    free(sets);
    free(n_results);
    if (t->may_repeat)
        return dedup(t, hist, params);
    return 1;
}

static const char *const tpe_aliases[] = {"TpeTuner", NULL};

const struct tuner_ops tuner_tpe = {
    .name = "TPE",
    .aliases = tpe_aliases,
    .create = tpe_create,
    .suggest = tpe_suggest,
    .destroy = tpe_destroy,
    .needs_history = 1,
};

