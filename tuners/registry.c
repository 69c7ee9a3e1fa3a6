/* registry.c: the built-in tuners, looked up by NNI name or alias. Adding a tuner is
 * one file defining its tuner_ops and one line here (and in names below). */
#include "tuners/internal.h"

#include <strings.h>

static const struct tuner_ops *const builtin[] = {
    &tuner_random,
    &tuner_gridsearch,
    &tuner_batch,
    &tuner_tpe,
    &tuner_anneal,
    &tuner_evolution,
    &tuner_gp,
    &tuner_metis,
    &tuner_hyperband,
    &tuner_bohb,
    &tuner_pbt,
    &tuner_tpe_legacy,
    &tuner_regularized_evolution,
};

const struct tuner_ops *tuner_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
        const struct tuner_ops *t = builtin[i];
        if (strcasecmp(t->name, name) == 0)
            return t;
        for (const char *const *a = t->aliases; a && *a; a++)
            if (strcasecmp(*a, name) == 0)
                return t;
    }
    return NULL;
}

const struct tuner_ops *tuner_builtin(int i)
{
    return i >= 0 && (size_t)i < sizeof builtin / sizeof builtin[0] ? builtin[i] : NULL;
}

const char *tuner_names(void)
{
    /* A literal rather than a string built from the table at run time (no global
     * mutable state); the unit test checks that it lists every entry. */
    return "Random, GridSearch, Batch, TPE, Anneal, Evolution, GP, Metis, Hyperband, BOHB, PBT, TPE_legacy, "
           "RegularizedEvolutionTuner";
}
