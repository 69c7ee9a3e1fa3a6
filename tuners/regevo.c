/* regevo.c: NNI's RegularizedEvolutionTuner (regularized_evolution_tuner.py, after
 * Real et al., "Regularized Evolution for Image Classifier Architecture Search"):
 * aging evolution, made a pure function of (seed, index, history).
 *
 * NNI's algorithm: population_size random individuals are handed out first (a failed
 * one is replaced by a new random individual); every result joins the population, a
 * queue of at most population_size in the order the results arrived, the oldest
 * leaving when it is full (aging: an individual dies of age, not of being bad). Then
 * each request draws sample_size members at random (with replacement), takes the best
 * (the first drawn among equals) and copies it with one parameter, chosen uniformly,
 * redrawn from the prior.
 *
 * trialq replays this over the history in sequence order, as if every trial had ended
 * before the next was suggested (as evolution.c does):
 *   owed = population_size; population = []
 *   for each history item:
 *     if it was suggested by the tuner and owed > 0: owed -= 1, it was a random one
 *     if it has a finite result: it joins the population (the oldest leaves past
 *       population_size)
 *     elif it was a random one and ended other than SUCCEEDED: owed += 1
 *   then, with rng(seed, index): owed > 0: a random draw (the Random tuner's values);
 *   else the tournament's winner with one parameter redrawn; an empty population
 *   answers "nothing now" while trials still run (NNI: NoMoreTrialError), a random
 *   draw when none does (NNI would wait forever).
 *
 * Differences from NNI 3.0 (docs/config.md): every search-space type is taken (NNI's
 * takes only the NAS types layer_choice and input_choice, which NNI 3 no longer has);
 * a nested choice is mutated whole; customized and imported results join the
 * population (NNI raises on them); results that are not finite numbers are left out. */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int regevo_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                         struct errbuf *e)
{
    int mode = 0, population_size = 100, sample_size = 25;
    /* NNI's validator: population_size in [0, 99999], sample_size in [0, 9999]; 0 never
     * yields a trial (or a parent), so trialq asks for at least 1 */
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode},
        {"population_size", CA_INT, 1, 99999, .out = &population_size},
        {"sample_size", CA_INT, 1, 9999, .out = &sample_size},
        {"seed", CA_SEED, .out = &seed},
    };
    if (classargs_check(args, CA_TUNER, "RegularizedEvolutionTuner", rules, CA_COUNT(rules), e) < 0)
        return -1;
    struct evo_state *t = evo_state_new(space, seed, mode == 0, population_size, e);
    if (!t)
        return -1;
    t->sample_size = sample_size;
    *state = t;
    return 0;
}

/* The parent's parameters with one top-level parameter redrawn (and any the parent
 * lacks drawn afresh), in search-space order. */
static cJSON *mutate(const struct ss_space *s, const cJSON *parent, struct rng *r)
{
    int target = s->n ? (int)rng_below(r, (uint64_t)s->n) : -1;
    cJSON *child = cJSON_CreateObject();
    for (int i = 0; i < s->n; i++) {
        const struct ss_param *p = &s->params[i];
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(parent, p->name);
        cJSON_AddItemToObject(child, p->name, i == target || !v ? ss_sample_param(p, r) : cJSON_Duplicate(v, 1));
    }
    return child;
}

static int regevo_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                          struct errbuf *e)
{
    struct evo_state *t = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "RegularizedEvolutionTuner: negative tuner index %lld", (long long)index);
    int n = hist ? hist->n : 0, cap = t->population_size;
    int *queue = xmalloc(sizeof *queue * (size_t)cap); /* a ring: item indexes, oldest at head */
    int head = 0, size = 0, pending = 0;
    int64_t owed = t->population_size;
    for (int i = 0; i < n; i++) {
        const struct tuner_result *it = &hist->items[i];
        int ours = it->parameter_id >= 0, random_one = ours && owed > 0;
        if (random_one)
            owed--;
        if (it->has_value && isfinite(it->value) && cJSON_IsObject(it->parameters)) {
            if (size == cap) {
                head = (head + 1) % cap;
                size--;
            }
            queue[(head + size++) % cap] = i;
        } else if (trial_status_final(it->status)) {
            if (random_one && strcmp(it->status, "SUCCEEDED") != 0)
                owed++;
        } else if (ours) {
            pending++;
        }
    }
    struct rng r;
    rng_init(&r, t->seed, (uint64_t)index);
    int rc = 1;
    if (owed > 0 || (size == 0 && pending == 0)) {
        *params = ss_sample(t->space, &r);
    } else if (size == 0) {
        rc = 2;
    } else {
        int best = -1;
        double best_reward = 0;
        for (int k = 0; k < t->sample_size; k++) {
            const struct tuner_result *it = &hist->items[queue[(head + (int)rng_below(&r, (uint64_t)size)) % cap]];
            double reward = t->maximize ? it->value : -it->value;
            if (best < 0 || reward > best_reward) {
                best = (int)(it - hist->items);
                best_reward = reward;
            }
        }
        *params = mutate(t->space, hist->items[best].parameters, &r);
    }
    free(queue);
    return rc;
}

const struct tuner_ops tuner_regularized_evolution = {
    .name = "RegularizedEvolutionTuner",
    .create = regevo_create,
    .suggest = regevo_suggest,
    .destroy = evo_state_free,
    .needs_history = 1,
};
