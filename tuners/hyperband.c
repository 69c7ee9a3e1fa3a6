/* hyperband.c: NNI's Hyperband advisor ("Hyperband", hyperband_advisor.py).
 *
 * classArgs (NNI's defaults): optimize_mode ("maximize"), R (60), eta (3), exec_mode
 * ("parallelism" or "serial"), and trialq's seed (default: the experiment seed).
 * Brackets, rounds, budgets, promotions and the wire ids "<hb>-<s>_<round>_<counter>"
 * are bracket.c's. A new configuration is the Random tuner's draw from the stream
 * rng(seed, counter) plus TRIAL_BUDGET; a promotion is the same parameters with the
 * larger TRIAL_BUDGET. "serial" answers "nothing now" (2) while the bracket being run
 * has a round still to generate; "parallelism" starts the next bracket whenever
 * nothing waits, so Hyperband never ends by itself (maxTrialNumber or
 * maxExperimentDuration ends the experiment), as in NNI. */
#include <stdlib.h>
#include <string.h>

#include "tuners/bracket.h"
#include "tuners/internal.h"

struct hyperband {
    struct hb_plan plan;
    struct ss_space *space;
    uint64_t seed;
    int64_t last_index;  /* the index and wire id of the last suggestion, for label() */
    char last_label[64];
};

static int hyperband_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                            struct errbuf *e)
{
    static const char *const exec_modes[] = {"parallelism", "serial", NULL};
    int mode = 0, exec_mode = 0, R = 60, eta = 3;
    uint64_t own_seed = seed;
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode},
        {"R", CA_INT, 1, 1000000000, .out = &R},
        {"eta", CA_INT, 2, 1000000000, .out = &eta},
        {"exec_mode", CA_CHOICE, .choices = exec_modes, .out = &exec_mode},
        {"seed", CA_SEED, .out = &own_seed},
    };
    if (classargs_check(args, CA_TUNER, "Hyperband", rules, CA_COUNT(rules), e) < 0)
        return -1;
    for (int i = 0; i < space->n; i++)
        if (strcmp(space->params[i].name, HB_BUDGET_KEY) == 0)
            return errf(e, "searchSpace.%s: the key is reserved: Hyperband gives each trial its budget there",
                        HB_BUDGET_KEY);
    struct hyperband *st = xcalloc(1, sizeof *st);
    if (hb_plan_init(&st->plan, R, 1, eta, mode == 0, exec_mode == 0 ? HB_PARALLEL : HB_SERIAL, 1, e) < 0) {
        free(st);
        return errprefix(e, "tuner.classArgs.R");
    }
    if (ss_parse(space->json, &st->space, NULL, 0, e) < 0) {
        free(st);
        return -1;
    }
    st->seed = own_seed;
    st->last_index = -1;
    *state = st;
    return 0;
}

static void hyperband_destroy(void *state)
{
    struct hyperband *st = state;
    if (!st)
        return;
    ss_free(st->space);
    free(st);
}

static int hyperband_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                             struct errbuf *e)
{
    struct hyperband *st = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "Hyperband: negative tuner index %lld", (long long)index);
    struct tuner_history none = {0};
    struct hb_next next;
    if (hb_decide(&st->plan, hist ? hist : &none, &next) == 2)
        return 2;
    if (next.params) {
        *params = hb_with_budget(next.params, next.budget);
    } else {
        struct rng r;
        rng_init(&r, st->seed, (uint64_t)next.counter);
        cJSON *drawn = ss_sample(st->space, &r);
        *params = hb_with_budget(drawn, next.budget);
        cJSON_Delete(drawn);
    }
    st->last_index = index;
    memcpy(st->last_label, next.label, sizeof st->last_label);
    return 1;
}

static char *hyperband_label(void *state, int64_t index)
{
    struct hyperband *st = state;
    return index == st->last_index ? xstrdup(st->last_label) : NULL;
}

const struct tuner_ops tuner_hyperband = {
    .name = "Hyperband",
    .create = hyperband_create,
    .suggest = hyperband_suggest,
    .destroy = hyperband_destroy,
    .needs_history = 1,
    .label = hyperband_label,
    .needs_latest = 1,
    .advisor = 1,
    .index_spans_spaces = 1,
};
