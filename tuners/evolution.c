/* evolution.c: NNI's "Evolution" tuner (evolution_tuner.py, after Real et al.,
 * "Large-Scale Evolution of Image Classifiers"), made a pure function of
 * (seed, index, history).
 *
 * NNI's algorithm keeps a population: population_size random individuals to start
 * with; a trial's result joins it as an individual; a failed trial adds a new random
 * individual. A request takes the first individual that has no result yet (sending
 * it as is), or else runs a tournament: two distinct members drawn at random, the
 * worse of the two (the second drawn on a tie) leaves the population, and the better
 * is copied with one parameter redrawn from the prior (one of its active
 * parameters, nested ones included, chosen uniformly). The child joins the
 * population only when its result arrives.
 *
 * NNI mutates that population as events arrive, in an order a restarted api cannot
 * know. trialq replays the algorithm over the history instead, in sequence order,
 * as if every trial had ended before the next was suggested. The exact rule, for
 * the suggestion at `index`:
 *   owed = population_size; population = []
 *   for each history item, in sequence order:
 *     if it was suggested by the tuner (parameter_id >= 0):
 *       if owed > 0: owed -= 1                    (it was a random individual)
 *       elif |population| >= 2: replay the tournament of suggestion parameter_id
 *         (the same two draws from rng(seed, parameter_id)) and remove its loser
 *     if it has a finite result: it joins the population
 *     elif it was suggested and ended other than SUCCEEDED: owed += 1
 *   then, with rng(seed, index):
 *     owed > 0 or an empty population: a random draw (the Random tuner's values);
 *     one member: it is the parent; else the tournament's winner is;
 *     the child is the parent with one active parameter redrawn.
 * With one trial at a time this is NNI's algorithm exactly (up to the random
 * streams); with several, a kill is replayed against the population the canonical
 * order gives, which may differ from the one the live suggestion saw. A restart
 * reads the same history and so gives the same answers. */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


static int count_params(const struct ss_space *s)
{
    int n = s->n;
    for (int i = 0; i < s->n; i++)
        for (int k = 0; s->params[i].sub && k < s->params[i].n_choices; k++)
            n += count_params(s->params[i].sub[k]);
    return n;
}

static int evo_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                      struct errbuf *e)
{
    int mode = 0, population_size = 32;
    /* NNI's EvolutionClassArgsValidator requires optimize_mode (the constructor's
     * default, maximize, is unreachable from a config file). population_size is an
     * int in [0, 99999] there; 0 passes NNI's check and then never yields a trial,
     * so trialq asks for at least 1. */
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .required_what = "\"maximize\" or \"minimize\"",
         .out = &mode},
        {"population_size", CA_INT, 1, 99999, .out = &population_size},
        {"seed", CA_SEED, .out = &seed},
    };
    if (classargs_check(args, CA_TUNER, "Evolution", rules, CA_COUNT(rules), e) < 0)
        return -1;
    struct evo_state *t = evo_state_new(space, seed, mode == 0, population_size, e);
    if (!t)
        return -1;
    t->n_params = count_params(t->space);
    *state = t;
    return 0;
}

struct evo_state *evo_state_new(const struct ss_space *space, uint64_t seed, int maximize, int population_size,
                                struct errbuf *e)
{
    struct evo_state *t = xcalloc(1, sizeof *t);
    if (ss_parse(space->json, &t->space, NULL, 0, e) < 0) {
        free(t);
        return NULL;
    }
    t->seed = seed;
    t->maximize = maximize;
    t->population_size = population_size;
    return t;
}

void evo_state_free(void *state)
{
    struct evo_state *t = state;
    if (!t)
        return;
    ss_free(t->space);
    free(t);
}

/* Two distinct members at random; returns the winner's position and sets *loser.
 * NNI shuffles the population and keeps [1] only if it is strictly better than [0]. */
static int tournament(const int *pop, int n, const double *reward, struct rng *r, int *loser)
{
    int a = (int)rng_below(r, (uint64_t)n), b = (int)rng_below(r, (uint64_t)n - 1);
    if (b >= a)
        b++;
    if (reward[pop[a]] < reward[pop[b]]) {
        *loser = a;
        return b;
    }
    *loser = b;
    return a;
}

/* NNI's json2space(space, parent): the parameters active in the parent, a nested
 * choice's chosen sub-space before the choice itself. */
static void active_params(const struct ss_space *s, const cJSON *obj, const struct ss_param **out, int *n)
{
    for (int i = 0; i < s->n; i++) {
        const struct ss_param *p = &s->params[i];
        if (p->sub) {
            const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, p->name) : NULL;
            int k = choice_index(p, v);
            if (k >= 0)
                active_params(p->sub[k], v, out, n);
        }
        out[(*n)++] = p;
    }
}

/* Fills obj with the parameters of s copied from old, except `target` (and any the
 * parent lacks or that no longer fit a nested choice), which are drawn afresh. The
 * keys follow the search-space order.
 *
 * NNI copies a nested choice whole unless the choice itself is the one mutated, so
 * mutating a parameter inside a chosen option gives back the parent unchanged;
 * trialq redraws that parameter, as the algorithm intends. */
static void build_child(cJSON *obj, const struct ss_space *s, const cJSON *old, const struct ss_param *target,
                        struct rng *r)
{
    for (int i = 0; i < s->n; i++) {
        const struct ss_param *p = &s->params[i];
        const cJSON *v = cJSON_IsObject(old) ? cJSON_GetObjectItemCaseSensitive(old, p->name) : NULL;
        int k = p->sub ? choice_index(p, v) : 0;
        if (p == target || !v || k < 0) {
            cJSON_AddItemToObject(obj, p->name, ss_sample_param(p, r));
        } else if (p->sub) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToObject(o, "_name",
                                  cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p->choices[k], "_name"), 1));
            build_child(o, p->sub[k], v, target, r);
            cJSON_AddItemToObject(obj, p->name, o);
        } else {
            cJSON_AddItemToObject(obj, p->name, cJSON_Duplicate(v, 1));
        }
    }
}

/* Other differences from NNI 3.0:
 * - When the population is empty (every individual handed out, no result back),
 *   NNI answers "no more trials for now" and sends one later; the interface has no
 *   "later", so trialq draws a random individual.
 * - NNI holds back suggestions while population_size trials are running; trialq
 *   suggests whenever asked (population_size should exceed trialConcurrency anyway).
 * - Customized and imported trials with a result join the population; NNI raises
 *   an error on results it did not ask for.
 * - Results that are not finite numbers are left out, as failed trials are. */
static int evo_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                       struct errbuf *e)
{
    struct evo_state *t = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "Evolution: negative tuner index %lld", (long long)index);
    int n = hist ? hist->n : 0;
    int *pop = xmalloc(sizeof *pop * (size_t)(n ? n : 1));
    double *reward = xmalloc(sizeof *reward * (size_t)(n ? n : 1));
    int n_pop = 0;
    int64_t owed = t->population_size;
    struct rng r;
    for (int i = 0; i < n; i++) {
        const struct tuner_result *it = &hist->items[i];
        if (it->parameter_id >= 0) {
            if (owed > 0) {
                owed--;
            } else if (n_pop >= 2) {
                int loser;
                rng_init(&r, t->seed, (uint64_t)it->parameter_id);
                tournament(pop, n_pop, reward, &r, &loser);
                pop[loser] = pop[--n_pop];
            }
        }
        if (it->has_value && isfinite(it->value) && cJSON_IsObject(it->parameters)) {
            reward[i] = t->maximize ? it->value : -it->value;
            pop[n_pop++] = i;
        } else if (it->parameter_id >= 0 && trial_status_final(it->status) && strcmp(it->status, "SUCCEEDED") != 0) {
            owed++;
        }
    }

    rng_init(&r, t->seed, (uint64_t)index);
    if (owed > 0 || n_pop == 0) {
        *params = ss_sample(t->space, &r);
    } else {
        int loser, parent = n_pop == 1 ? 0 : tournament(pop, n_pop, reward, &r, &loser);
        const cJSON *old = hist->items[pop[parent]].parameters;
        const struct ss_param **cand = xmalloc(sizeof *cand * (size_t)(t->n_params ? t->n_params : 1));
        int n_cand = 0;
        active_params(t->space, old, cand, &n_cand);
        const struct ss_param *target = n_cand ? cand[rng_below(&r, (uint64_t)n_cand)] : NULL;
        *params = cJSON_CreateObject();
        build_child(*params, t->space, old, target, &r);
        free(cand);
    }
    free(pop);
    free(reward);
    return 1;
}

static const char *const evo_aliases[] = {"EvolutionTuner", NULL};

const struct tuner_ops tuner_evolution = {
    .name = "Evolution",
    .aliases = evo_aliases,
    .create = evo_create,
    .suggest = evo_suggest,
    .destroy = evo_state_free,
    .needs_history = 1,
};
