/* pbt.c: NNI's PBT tuner (pbt_tuner.py, after Jaderberg et al., "Population Based
 * Training of Neural Networks"), made a pure function of (seed, index, history).
 *
 * A population of population_size members trains in generations ("epochs" in NNI);
 * each trial runs one member for one step: it loads the checkpoint in its parameter
 * load_checkpoint_dir (when there is one), trains, and saves to save_checkpoint_dir.
 * Member k's checkpoints live in <all_checkpoint_dir>/<k>/<generation>, NNI's layout.
 *
 * Tuner index i is member k = i % P of generation g = i / P (P = population_size).
 *   generation 0: a random draw (the Random tuner's values, rng(seed, i)), with
 *     load_checkpoint_dir = save_checkpoint_dir = <dir>/<k>/0 (nothing to load yet);
 *   generation g > 0: asked only once the P trials of generation g - 1 (indexes
 *     (g-1)P .. gP-1) have all ended ("nothing now" until then, as NNI holds requests
 *     back). They are ranked by result, best first (a failed trial, or one without a
 *     final result, last; ties by member), and cutoff = ceil(fraction * P):
 *     - a member in the bottom cutoff exploits: it takes the hyperparameters of a top
 *       cutoff member drawn at random and loads that member's checkpoint
 *       (load_checkpoint_dir = its save_checkpoint_dir), then explores: each
 *       hyperparameter is redrawn from the prior with resample_probability, else moved
 *       one step up or down (equally likely), NNI's perturbation per type;
 *     - any other member goes on: its own hyperparameters, its own last checkpoint;
 *     save_checkpoint_dir = <dir>/<k>/<g> either way.
 * Everything a suggestion reads is the stored parameters and results of the previous
 * generation, so a restarted api answers the same.
 *
 * Differences from NNI 3.0 (docs/config.md, "PBT"):
 * - NNI hands generation g's members out in reverse rank order; trialq in member
 *   order, so index i is always member i % P.
 * - a trial that SUCCEEDED without a final result ranks last (NNI waits for it
 *   forever); customized and imported trials take no part.
 * - a nested choice is resampled with resample_probability, else kept (NNI does not
 *   support them in PBT).
 * - NNI's validator spells the perturbation key "factors" and refuses "factor" and
 *   "resample_probability", which its constructor takes; trialq takes all three. */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pbt_state {
    struct ss_space *space;  /* own copy */
    uint64_t seed;
    int maximize, population_size;
    double factor, resample_probability, fraction;
    char *checkpoint_dir;    /* all_checkpoint_dir, or NULL: <experiment dir>/checkpoint */
};

/* all_checkpoint_dir: absolute, or under ~; NULL when absent */
static int checkpoint_arg(const cJSON *args, char **out, struct errbuf *e)
{
    const cJSON *v = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "all_checkpoint_dir") : NULL;
    *out = NULL;
    if (!v || cJSON_IsNull(v))
        return 0;
    const char *s = cJSON_IsString(v) ? v->valuestring : NULL;
    if (!s || !(s[0] == '/' || (s[0] == '~' && (s[1] == '/' || s[1] == '\0'))))
        return errf(e, "tuner.classArgs.all_checkpoint_dir: must be an absolute path (a directory every trial "
                       "can read and write)");
    char *p = path_abs("/", s);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    *out = p;
    return 1;
}

static int pbt_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                      struct errbuf *e)
{
    int mode = 0, population_size = 10;
    double factor = 0.2, resample = 0.25, fraction = 0.2;
    /* NNI's PBTClassArgsValidator requires optimize_mode; population_size is an int in
     * [0, 99999] there, and 0 never yields a trial, so trialq asks for at least 1.
     * factors (NNI's spelling of factor) is checked before factor and the rows after it (pass 1). */
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .required_what = "\"maximize\" or \"minimize\"",
         .out = &mode},
        {"all_checkpoint_dir", CA_KEY, .out = NULL},
        {"population_size", CA_INT, 1, 99999, .out = &population_size},
        {"factor", CA_NUMBER, 0, 1, .out = &factor, .pass = 1},
        {"factors", CA_NUMBER, 0, 1, .out = &factor},
        {"resample_probability", CA_NUMBER, 0, 1, .out = &resample, .pass = 1},
        {"fraction", CA_NUMBER, 0, 0.5, .out = &fraction, .pass = 1},
        {"seed", CA_SEED, .out = &seed, .pass = 1},
    };
    if (classargs_check(args, CA_TUNER, "PBT", rules, CA_COUNT(rules), e) < 0)
        return -1;
    const cJSON *f1 = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "factor") : NULL;
    const cJSON *f2 = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "factors") : NULL;
    if (f1 && f2 && !cJSON_IsNull(f1) && !cJSON_IsNull(f2))
        return errf(e, "tuner.classArgs.factors: give factor or factors (NNI's spelling of the same), not both");
    char *dir;
    if (checkpoint_arg(args, &dir, e) < 0)
        return -1;
    struct pbt_state *t = xcalloc(1, sizeof *t);
    if (ss_parse(space->json, &t->space, NULL, 0, e) < 0) {
        free(dir);
        free(t);
        return -1;
    }
    t->seed = seed;
    t->maximize = mode == 0;
    t->population_size = population_size;
    t->factor = factor;
    t->resample_probability = resample;
    t->fraction = fraction;
    t->checkpoint_dir = dir;
    *state = t;
    return 0;
}

static void pbt_destroy(void *state)
{
    struct pbt_state *t = state;
    if (!t)
        return;
    ss_free(t->space);
    free(t->checkpoint_dir);
    free(t);
}

static double clampd(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* NNI's perturbation of one hyperparameter value v: a fresh draw with probability
 * resample_probability, else one step up or down (each with probability 1/2), kept
 * inside the parameter's range where it has one. */
static cJSON *perturb(const struct pbt_state *t, const struct ss_param *p, const cJSON *v, struct rng *r)
{
    if (rng_uniform(r) < t->resample_probability)
        return ss_sample_param(p, r);
    int up = rng_uniform(r) > 0.5;
    if (p->type == SS_CHOICE) {
        int k = choice_index(p, v);
        if (p->sub || k < 0)
            return k < 0 ? ss_sample_param(p, r) : cJSON_Duplicate(v, 1);
        k = up ? (k + 1 < p->n_choices ? k + 1 : k) : (k > 0 ? k - 1 : 0);
        return cJSON_Duplicate(p->choices[k], 1);
    }
    if (!cJSON_IsNumber(v) || (ss_type_is_log(p->type) && v->valuedouble <= 0))
        return ss_sample_param(p, r);
    double x = v->valuedouble, d;
    switch (p->type) {
    case SS_RANDINT:
        x = clampd(up ? x + 1 : x - 1, p->a, p->a + p->n_choices - 1);
        break;
    case SS_UNIFORM:
        d = (p->b - p->a) * t->factor;
        x = clampd(up ? x + d : x - d, p->a, p->b);
        break;
    case SS_QUNIFORM:
    case SS_QLOGUNIFORM:
        d = nearbyint(x / p->q);
        x = clampd((up ? d + 1 : d - 1) * p->q, p->a, p->b);
        break;
    case SS_LOGUNIFORM:
        d = (log(p->b) - log(p->a)) * t->factor;
        d = up ? log(x) + d : log(x) - d;
        x = d >= log(p->b) ? p->b : d <= log(p->a) ? p->a : exp(d); /* a bound exactly */
        break;
    case SS_NORMAL:
        x = up ? x + p->b * t->factor : x - p->b * t->factor;
        break;
    case SS_QNORMAL:
        x = up ? x + p->q : x - p->q;
        break;
    case SS_LOGNORMAL:
        x = exp(up ? log(x) + p->b * t->factor : log(x) - p->b * t->factor);
        break;
    case SS_QLOGNORMAL:
        x = up ? x + p->q : fmax(x - p->q, 1e-10);
        break;
    default:
        break;
    }
    return cJSON_CreateNumber(x);
}

/* "<base>/<member>/<generation>" */
static cJSON *member_dir(const char *base, int member, int64_t generation)
{
    char *s = xasprintf("%s/%d/%lld", base, member, (long long)generation);
    cJSON *j = cJSON_CreateString(s);
    free(s);
    return j;
}

/* The trials of generation g - 1 by member, NULL where one is missing; 1 when all P
 * have ended, 0 when one has not (or is missing). */
static int previous_generation(const struct pbt_state *t, int64_t g, const struct tuner_history *hist,
                               const struct tuner_result **prev)
{
    int64_t first = (g - 1) * t->population_size;
    for (int k = 0; k < t->population_size; k++)
        prev[k] = NULL;
    for (int i = 0; hist && i < hist->n; i++) {
        int64_t pid = hist->items[i].parameter_id;
        if (pid >= first && pid < first + t->population_size)
            prev[pid - first] = &hist->items[i];
    }
    for (int k = 0; k < t->population_size; k++)
        if (!prev[k] || !trial_status_final(prev[k]->status))
            return 0;
    return 1;
}

static int pbt_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                       struct errbuf *e)
{
    struct pbt_state *t = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "PBT: negative tuner index %lld", (long long)index);
    char *base = t->checkpoint_dir ? xstrdup(t->checkpoint_dir)
                 : hist && hist->experiment_dir ? xasprintf("%s/checkpoint", hist->experiment_dir)
                 : NULL;
    if (!base)
        return errf(e, "PBT: tuner.classArgs.all_checkpoint_dir is needed outside an experiment");
    int n_pop = t->population_size, member = (int)(index % n_pop);
    int64_t g = index / n_pop;
    struct rng r;
    rng_init(&r, t->seed, (uint64_t)index);
    if (g == 0) {
        *params = ss_sample(t->space, &r);
        cJSON_AddItemToObject(*params, "load_checkpoint_dir", member_dir(base, member, 0));
        cJSON_AddItemToObject(*params, "save_checkpoint_dir", member_dir(base, member, 0));
        free(base);
        return 1;
    }
    const struct tuner_result **prev = xmalloc(sizeof *prev * (size_t)n_pop);
    if (!previous_generation(t, g, hist, prev)) {
        free(prev);
        free(base);
        return 2;
    }
    /* rank: best first, no result last, ties by member */
    struct ranked *order = xmalloc(sizeof *order * (size_t)n_pop);
    for (int k = 0; k < n_pop; k++) {
        const struct tuner_result *it = prev[k];
        int ok = it->has_value && isfinite(it->value);
        order[k] = (struct ranked){.v = ok ? (t->maximize ? -it->value : it->value) : INFINITY, .i = k};
    }
    ranked_sort(order, n_pop);
    int cutoff = (int)ceil(t->fraction * n_pop), rank = 0;
    while (order[rank].i != member)
        rank++;
    int bottom = cutoff > 0 && rank >= n_pop - cutoff;
    int source = bottom ? order[rng_below(&r, (uint64_t)cutoff)].i : member;
    const cJSON *old = prev[source]->parameters;
    *params = cJSON_CreateObject();
    for (int i = 0; i < t->space->n; i++) {
        const struct ss_param *p = &t->space->params[i];
        const cJSON *v = cJSON_IsObject(old) ? cJSON_GetObjectItemCaseSensitive(old, p->name) : NULL;
        cJSON *nv = !v ? ss_sample_param(p, &r) : bottom ? perturb(t, p, v, &r) : cJSON_Duplicate(v, 1);
        cJSON_AddItemToObject(*params, p->name, nv);
    }
    const cJSON *saved = cJSON_IsObject(old) ? cJSON_GetObjectItemCaseSensitive(old, "save_checkpoint_dir") : NULL;
    cJSON_AddItemToObject(*params, "load_checkpoint_dir",
                          cJSON_IsString(saved) ? cJSON_Duplicate(saved, 1) : member_dir(base, source, g - 1));
    cJSON_AddItemToObject(*params, "save_checkpoint_dir", member_dir(base, member, g));
    free(order);
    free(prev);
    free(base);
    return 1;
}

static const char *const pbt_aliases[] = {"PBTTuner", NULL};

const struct tuner_ops tuner_pbt = {
    .name = "PBT",
    .aliases = pbt_aliases,
    .create = pbt_create,
    .suggest = pbt_suggest,
    .destroy = pbt_destroy,
    .needs_history = 1,
};
