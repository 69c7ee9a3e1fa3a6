/* nni_builtin.c: NNI 3.0's built-in algorithms that trialq does not have in C, as
 * NNI's builtin_algorithms.yml names them (builtinName, alias, className, meta
 * classArgs). A config naming one runs NNI's own Python class in the dispatcher
 * process, imported from the module path NNI's dispatcher imports it from; the
 * package to install is named when the configured python cannot import it. */
#include "config/config.h"

#include <stddef.h>
#include <strings.h>

static const struct nni_builtin table[] = {
    {"SMAC", NULL, "tuners", "nni.algorithms.hpo.smac_tuner.SMACTuner", "'nni[SMAC]'"},
    {"PPO", "PPOTuner", "tuners", "nni.algorithms.hpo.ppo_tuner.PPOTuner", "'nni[PPOTuner]'"},
    {"DNGO", "DNGOTuner", "tuners", "nni.algorithms.hpo.dngo_tuner.DNGOTuner", "'nni[DNGO]'"},
    {"NetworkMorphism", NULL, "tuners", "nni.algorithms.hpo.networkmorphism_tuner.NetworkMorphismTuner",
     "nni torch"},
};

const struct nni_builtin *nni_builtin_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof table / sizeof *table; i++)
        if (strcasecmp(table[i].name, name) == 0 || (table[i].alias && strcasecmp(table[i].alias, name) == 0))
            return &table[i];
    return NULL;
}

const struct nni_builtin *nni_builtin_at(int i)
{
    return i >= 0 && (size_t)i < sizeof table / sizeof *table ? &table[i] : NULL;
}
