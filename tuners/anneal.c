/* anneal.c: NNI's "Anneal" tuner, which is hyperopt's annealing algorithm
 * (hyperopt/anneal.py, AnnealingAlgo) behind NNI's HyperoptTuner, rebuilt from the
 * history on every call so that a suggestion is a pure function of
 * (seed, index, history).
 *
 * Every parameter of the space, and every parameter of every nested-choice option,
 * is a "label" (hyperopt's name for one hyperparameter node). A label's
 * observations are the trials with a result in which it was active. For each
 * label, in search-space order (depth first through the chosen options):
 * - without observations the value is drawn from the prior, as the Random tuner
 *   draws it;
 * - otherwise a parent trial is chosen: the first of the parents already chosen
 *   for this suggestion that has the label (so that parameters tend to come from
 *   the same trial), else the trial of rank g among the label's observations sorted
 *   by loss, g ~ geometric(1 / avg_best_idx) - 1 clipped to the last rank
 *   (avg_best_idx 2: the best with probability 1/2, the second 1/4, ...);
 * - the value is drawn around the parent's with the neighbourhood shrunk by
 *   s = 1 / (1 + T * shrink_coef) (T the label's observations, shrink_coef 0.1):
 *   uniform types: uniform in a window of s times the range (in log space for log
 *   types) centred on the parent's value and shifted to stay inside the range;
 *   normal types: normal(parent, s * sigma) (in log space for log types);
 *   choice and randint: the parent's option with probability 1 - s + s / K, any
 *   other with s / K each (hyperopt's p = (1 - s) onehot + s / K);
 *   then NNI's q-rounding and clipping (ss_deformat).
 *
 * As in NNI, a suggestion equal to an earlier one is replaced by one random draw
 * (hyperopt's rand.suggest), which may itself repeat; Anneal never runs out. */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AVG_BEST_IDX 2.0   /* hyperopt's defaults, which NNI does not expose */
#define SHRINK_COEF 0.1
#define LIAR_AFTER 20      /* NNI lies only once more than 20 parameters were generated */

enum liar { LIAR_MIN, LIAR_MAX, LIAR_MEAN };

struct anneal_state {
    struct ss_space *space;  /* own copy: the groups point into it */
    uint64_t seed;
    int maximize, parallel;
    enum liar liar;
    struct space_groups sg;
    int may_repeat;
};

/* One label's observations for one suggestion: the value each observed trial gave
 * it (the option index for choice and randint, else the number it ran with). */
struct label_obs {
    int n, cap;
    int *trial;
    double *val;
};

struct an_ctx {
    const struct anneal_state *st;
    struct label_obs *obs;  /* n_labels */
    double *loss;           /* per observed trial */
    int n_obs;              /* observed trials */
    int *best;              /* hyperopt's best_tids: the parents chosen so far */
    int n_best;
    struct rng *r;
};

/* ---- classArgs (NNI's HyperoptClassArgsValidator) ---- */

static const char *const liar_names[] = {"min", "max", "mean", NULL};

static void anneal_destroy(void *state)
{
    struct anneal_state *t = state;
    if (!t)
        return;
    space_groups_free(&t->sg);
    ss_free(t->space);
    free(t);
}

static int anneal_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                         struct errbuf *e)
{
    /* NNI's defaults: HyperoptTuner(optimize_mode='minimize', parallel_optimize=False,
     * constant_liar_type='min') */
    int mode = 1, parallel = 0, liar = LIAR_MIN;
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode},
        {"parallel_optimize", CA_BOOL, .out = &parallel},
        {"constant_liar_type", CA_CHOICE, .choices = liar_names, .out = &liar},
        {"seed", CA_SEED, .out = &seed},
    };
    if (classargs_check(args, CA_TUNER, "Anneal", rules, CA_COUNT(rules), e) < 0)
        return -1;
    struct anneal_state *t = xcalloc(1, sizeof *t);
    if (ss_parse(space->json, &t->space, NULL, 0, e) < 0) {
        free(t);
        return -1;
    }
    t->seed = seed;
    t->maximize = mode == 0;
    t->parallel = parallel;
    t->liar = (enum liar)liar;
    space_groups_init(&t->sg, t->space);
    t->may_repeat = space_may_repeat(t->space);
    *state = t;
    return 0;
}

/* ---- history -> observations ---- */

/* The value a trial gave parameter p, as the label stores it; -1 when it does not
 * fit (such a trial is not an observation of this label). */
static int label_value(const struct ss_param *p, const cJSON *v, double *out)
{
    if (observed_value(p, v, out) < 0)
        return -1;
    if (p->type == SS_CHOICE || p->type == SS_RANDINT)
        return 0;
    double x = *out;
    /* the log of the parent's value is taken when sampling: hyperopt adds 1e-16
     * for qlognormal only, whose rounding makes 0 a legal value */
    if ((p->type == SS_QLOGNORMAL && x < 0) || (ss_type_is_log(p->type) && p->type != SS_QLOGNORMAL && x <= 0))
        return -1;
    return 0;
}

static void label_add(struct label_obs *o, int trial, double val)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 16;
        o->trial = xrealloc(o->trial, sizeof *o->trial * (size_t)o->cap);
        o->val = xrealloc(o->val, sizeof *o->val * (size_t)o->cap);
    }
    o->trial[o->n] = trial;
    o->val[o->n] = val;
    o->n++;
}

/* Records trial t's values for group g's labels and, through its nested choices,
 * for the labels of the options it chose. */
static void observe(struct an_ctx *c, int g, const cJSON *obj, int t)
{
    if (!cJSON_IsObject(obj))
        return;
    const struct sg_group *G = &c->st->sg.g[g];
    for (int j = 0; j < G->d; j++) {
        const struct sg_dim *dim = &G->dims[j];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, dim->p->name);
        double x;
        if (label_value(dim->p, v, &x) < 0)
            continue;
        label_add(&c->obs[dim->label], t, x);
        if (dim->child)
            observe(c, dim->child[(int)x], v, t);
    }
}

/* history_visit: the next observed trial */
static void observe_trial(void *ctx, const cJSON *parameters, double loss)
{
    struct an_ctx *c = ctx;
    c->loss[c->n_obs] = loss;
    observe(c, 0, parameters, c->n_obs++);
}

/* ---- sampling ---- */

/* hyperopt's choose_ltv for one label (which has observations): the parent trial's
 * value. */
static double parent_value(struct an_ctx *c, int label)
{
    const struct label_obs *o = &c->obs[label];
    for (int b = 0; b < c->n_best; b++)
        for (int i = 0; i < o->n; i++)
            if (o->trial[i] == c->best[b])
                return o->val[i];
    /* numpy's geometric(p) - 1 counts the failures before the first success; it is
     * clipped to the last rank, so counting stops there */
    int g = 0;
    while (g < o->n - 1 && rng_uniform(c->r) >= 1.0 / AVG_BEST_IDX)
        g++;
    struct ranked *rank = xmalloc(sizeof *rank * (size_t)o->n);
    for (int i = 0; i < o->n; i++)
        rank[i] = (struct ranked){c->loss[o->trial[i]], i};
    ranked_sort(rank, o->n);  /* equal losses in trial order */
    int pick = rank[g].i;
    free(rank);
    c->best[c->n_best++] = o->trial[pick];
    return o->val[pick];
}

static void gen_group(struct an_ctx *c, int g, cJSON *obj);

static cJSON *option_value(struct an_ctx *c, const struct sg_dim *dim, int k)
{
    const struct ss_param *p = dim->p;
    if (p->type == SS_RANDINT)
        return cJSON_CreateNumber(p->a + k);
    if (!p->sub)
        return cJSON_Duplicate(p->choices[k], 1);
    cJSON *v = cJSON_CreateObject();
    cJSON_AddItemToObject(v, "_name", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p->choices[k], "_name"), 1));
    gen_group(c, dim->child[k], v);
    return v;
}

static cJSON *gen_value(struct an_ctx *c, const struct sg_dim *dim)
{
    const struct ss_param *p = dim->p;
    const struct label_obs *o = &c->obs[dim->label];
    struct rng *r = c->r;
    if (o->n == 0) {
        /* the prior: the Random tuner's draw, except that a nested option's
         * parameters are annealed in their turn */
        if (!p->sub)
            return ss_sample_param(p, r);
        return option_value(c, dim, (int)rng_below(r, (uint64_t)p->n_choices));
    }
    double s = 1.0 / (1.0 + o->n * SHRINK_COEF);
    double val = parent_value(c, dim->label);
    if (p->type == SS_CHOICE || p->type == SS_RANDINT) {
        int k = (int)val;
        if (!(rng_uniform(r) < 1 - s))
            k = (int)rng_below(r, (uint64_t)p->n_choices);
        return option_value(c, dim, k);
    }
    double x;
    if (ss_type_is_normal(p->type)) {
        double mu = val;
        if (p->type == SS_LOGNORMAL)
            mu = log(val);
        else if (p->type == SS_QLOGNORMAL)
            mu = log(1e-16 + val);
        x = mu + p->b * s * rng_normal(r);
    } else {
        int lg = ss_type_is_log(p->type);
        double lo = lg ? log(p->a) : p->a, hi = lg ? log(p->b) : p->b;
        double mid = lg ? log(val) : val, half = 0.5 * (hi - lo) * s;
        if (mid < lo + half)
            mid = lo + half;
        if (mid > hi - half)
            mid = hi - half;
        x = mid - half + 2 * half * rng_uniform(r);
    }
    return cJSON_CreateNumber(ss_deformat(p, x));
}

static void gen_group(struct an_ctx *c, int g, cJSON *obj)
{
    const struct sg_group *G = &c->st->sg.g[g];
    for (int j = 0; j < G->d; j++)
        cJSON_AddItemToObject(obj, G->dims[j].p->name, gen_value(c, &G->dims[j]));
}

/* Differences from NNI 3.0, each for a reason:
 * - The random stream is rng(seed, index), not one stream for the whole run.
 * - Results enter in sequence order (NNI: in arrival order, which a restart cannot
 *   know); equal losses rank in that order (numpy's argsort is not stable).
 * - Values are read back from the parameters the trials ran; NNI also rounds q-types
 *   through float32, trialq does not.
 * - With parallel_optimize, the pending trials are those without a result that have
 *   not ended; NNI never forgets a trial that failed and keeps lying about it.
 * - Customized and imported trials count like any other.
 * - Results that are not finite numbers are left out, as failed trials are. */
static int anneal_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                          struct errbuf *e)
{
    struct anneal_state *t = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "Anneal: negative tuner index %lld", (long long)index);
    int n = hist ? hist->n : 0;

    /* NNI's constant liar, on the raw values: "min" is the best result when
     * minimizing and the worst when maximizing */
    struct result_stats rs;
    result_stats(hist, 1, &rs);
    int lie = t->parallel && n > LIAR_AFTER && rs.n_pending > 0 && rs.n_results > 0;
    double lie_value = t->liar == LIAR_MIN   ? rs.min
                       : t->liar == LIAR_MAX ? rs.max
                                             : rs.sum / (rs.n_results ? rs.n_results : 1);

    struct an_ctx c = {.st = t};
    c.obs = xcalloc((size_t)t->sg.n_labels, sizeof *c.obs);
    c.loss = xmalloc(sizeof *c.loss * (size_t)(n ? n : 1));
    c.best = xmalloc(sizeof *c.best * (size_t)(t->sg.n_labels ? t->sg.n_labels : 1));
    history_each_result(hist, t->maximize ? -1 : 1, observe_trial, &c);
    /* the lies join after the real results, as NNI inserts them into a copy */
    if (lie)
        history_each_pending(hist, t->maximize ? -lie_value : lie_value, observe_trial, &c);

    struct rng r;
    rng_init(&r, t->seed, (uint64_t)index);
    c.r = &r;
    *params = cJSON_CreateObject();
    gen_group(&c, 0, *params);
    if (t->may_repeat && history_has(hist, *params)) {  /* NNI compares with all it generated or imported */
        cJSON_Delete(*params);
        *params = ss_sample(t->space, &r);
    }

    for (int l = 0; l < t->sg.n_labels; l++) {
        free(c.obs[l].trial);
        free(c.obs[l].val);
    }
    free(c.obs);
    free(c.loss);
    free(c.best);
    return 1;
}

const struct tuner_ops tuner_anneal = {
    .name = "Anneal",
    .aliases = NULL,  /* NNI's class, HyperoptTuner, also stands for TPE_legacy */
    .create = anneal_create,
    .suggest = anneal_suggest,
    .destroy = anneal_destroy,
    .needs_history = 1,
};
