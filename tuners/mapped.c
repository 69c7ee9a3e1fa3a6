/* mapped.c: an NNI built-in name that trialq runs with one of its own tuners, with the
 * classArgs of NNI's class translated (docs/config.md says what differs): TPE_legacy
 * (NNI's HyperoptTuner with algorithm_name tpe, hyperopt's TPE) runs TPE. */
#include "tuners/internal.h"

#include <string.h>


/* ---- TPE_legacy: optimize_mode (minimize), parallel_optimize (false),
 * constant_liar_type (min, max, mean) ---- */

static const char *const hyperopt_liars[] = {"min", "max", "mean", NULL};
static const char *const tpe_liars[] = {"best", "worst", "mean"}; /* hyperopt's liar over losses */

static int legacy_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                         struct errbuf *e)
{
    int mode = 1, parallel = 0, liar = 0;
    uint64_t own_seed = seed;
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode},
        {"parallel_optimize", CA_BOOL, .out = &parallel},
        {"constant_liar_type", CA_CHOICE, .choices = hyperopt_liars, .out = &liar},
        {"algorithm_name", CA_KEY, .out = NULL},
        {"seed", CA_KEY, .out = NULL},  /* checked below: the TPE it maps to is given it only when set */
    };
    if (classargs_check(args, CA_TUNER, "TPE_legacy", rules, CA_COUNT(rules), e) < 0)
        return -1;
    int has_seed = classargs_seed(args, &own_seed, e);
    if (has_seed < 0)
        return -1;
    const cJSON *algo = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "algorithm_name") : NULL;
    if (algo && !cJSON_IsNull(algo) && !(cJSON_IsString(algo) && strcmp(algo->valuestring, "tpe") == 0))
        return errf(e, "tuner.classArgs.algorithm_name: TPE_legacy is hyperopt's \"tpe\" (use Random or "
                       "Anneal for the others)");
    /* HyperoptTuner lies about running trials only with parallel_optimize */
    cJSON *tpe = cJSON_CreateObject();
    cJSON_AddStringToObject(tpe, "optimize_mode", classargs_modes[mode]);
    if (has_seed)
        cJSON_AddNumberToObject(tpe, "seed", (double)own_seed);
    cJSON *ta = cJSON_AddObjectToObject(tpe, "tpe_args");
    if (parallel)
        cJSON_AddStringToObject(ta, "constant_liar_type", tpe_liars[liar]);
    else
        cJSON_AddNullToObject(ta, "constant_liar_type");
    int rc = tuner_tpe.create(tpe, space, own_seed, state, e);
    cJSON_Delete(tpe);
    return rc;
}

static int legacy_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                          struct errbuf *e)
{
    return tuner_tpe.suggest(state, index, hist, params, e);
}

static void legacy_destroy(void *state)
{
    tuner_tpe.destroy(state);
}

const struct tuner_ops tuner_tpe_legacy = {
    .name = "TPE_legacy",
    .create = legacy_create,
    .suggest = legacy_suggest,
    .destroy = legacy_destroy,
    .needs_history = 1,
};
