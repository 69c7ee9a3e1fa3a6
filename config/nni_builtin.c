/* nni_builtin.c: NNI 3.0's built-in algorithms that trialq does not have in C, as
 * NNI's builtin_algorithms.yml names them (builtinName, alias, className, meta
 * classArgs). A config naming one runs NNI's own Python class in the dispatcher
 * process, imported from the module path NNI's dispatcher imports it from; the
 * package to install is named when the configured python cannot import it.
 *
 * Their classArgs are checked here, at `nnictl create`, with the rules of each class's
 * ClassArgsValidator in NNI (a schema: unknown keys, types, ranges, choices), so that a
 * mistake is an error at file:line:col instead of a dispatcher that fails later. */
#include "config/config.h"

#include <math.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

enum arg_kind { ARG_CHOICE, ARG_BOOL, ARG_INT, ARG_FLOAT };

struct arg_rule {
    const char *key;
    enum arg_kind kind;
    int required;
    const char *const *choices;  /* ARG_CHOICE: NULL-terminated */
    double min, max;             /* ARG_INT: the range (min > max: any integer) */
};

static const char *const modes[] = {"maximize", "minimize", NULL};
static const char *const tasks[] = {"cv", "nlp", "common", NULL};

/* SMACClassArgsValidator */
static const struct arg_rule smac_args[] = {
    {"optimize_mode", ARG_CHOICE, 1, modes, 0, 0},
    {"config_dedup", ARG_BOOL, 0, NULL, 0, 0},
    {NULL, 0, 0, NULL, 0, 0},
};
/* PPOClassArgsValidator */
static const struct arg_rule ppo_args[] = {
    {"optimize_mode", ARG_CHOICE, 1, modes, 0, 0},
    {"trials_per_update", ARG_INT, 0, NULL, 0, 99999},
    {"epochs_per_update", ARG_INT, 0, NULL, 0, 99999},
    {"minibatch_size", ARG_INT, 0, NULL, 0, 99999},
    {"ent_coef", ARG_FLOAT, 0, NULL, 0, 0},
    {"lr", ARG_FLOAT, 0, NULL, 0, 0},
    {"vf_coef", ARG_FLOAT, 0, NULL, 0, 0},
    {"max_grad_norm", ARG_FLOAT, 0, NULL, 0, 0},
    {"gamma", ARG_FLOAT, 0, NULL, 0, 0},
    {"lam", ARG_FLOAT, 0, NULL, 0, 0},
    {"cliprange", ARG_FLOAT, 0, NULL, 0, 0},
    {NULL, 0, 0, NULL, 0, 0},
};
/* DNGOClassArgsValidator checks nothing; DNGOTuner's constructor takes these and
 * raises on any other (TypeError) and on a bad optimize_mode (ValueError) */
static const struct arg_rule dngo_args[] = {
    {"optimize_mode", ARG_CHOICE, 0, modes, 0, 0},
    {"sample_size", ARG_INT, 0, NULL, 1, 1e9},
    {"trials_per_update", ARG_INT, 0, NULL, 1, 1e9},
    {"num_epochs_per_training", ARG_INT, 0, NULL, 1, 1e9},
    {NULL, 0, 0, NULL, 0, 0},
};
/* NetworkMorphismClassArgsValidator */
static const struct arg_rule morphism_args[] = {
    {"optimize_mode", ARG_CHOICE, 0, modes, 0, 0},
    {"task", ARG_CHOICE, 0, tasks, 0, 0},
    {"input_width", ARG_INT, 0, NULL, 1, 0},
    {"input_channel", ARG_INT, 0, NULL, 1, 0},
    {"n_output_node", ARG_INT, 0, NULL, 1, 0},
    {NULL, 0, 0, NULL, 0, 0},
};

static const struct nni_builtin table[] = {
    {"SMAC", NULL, "tuners", "nni.algorithms.hpo.smac_tuner.SMACTuner", "'nni[SMAC]'", smac_args},
    {"PPO", "PPOTuner", "tuners", "nni.algorithms.hpo.ppo_tuner.PPOTuner", "'nni[PPOTuner]'", ppo_args},
    {"DNGO", "DNGOTuner", "tuners", "nni.algorithms.hpo.dngo_tuner.DNGOTuner", "'nni[DNGO]'", dngo_args},
    {"NetworkMorphism", NULL, "tuners", "nni.algorithms.hpo.networkmorphism_tuner.NetworkMorphismTuner",
     "nni torch", morphism_args},
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

/* "a", "b" or "c" */
static void list_choices(char *out, size_t n, const char *const *c, const char *quote, const char *last)
{
    out[0] = '\0';
    for (int i = 0; c[i]; i++) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s%s%s", i == 0 ? "" : c[i + 1] ? ", " : last, quote, c[i], quote);
    }
}

static int check_one(const struct nni_builtin *b, const struct arg_rule *r, const cJSON *v, struct errbuf *e)
{
    char list[256];
    switch (r->kind) {
    case ARG_CHOICE:
        for (int i = 0; r->choices[i]; i++)
            if (cJSON_IsString(v) && strcmp(v->valuestring, r->choices[i]) == 0)
                return 0;
        list_choices(list, sizeof list, r->choices, "\"", " or ");
        return errf(e, "tuner.classArgs.%s: must be %s (%s)", r->key, list, b->name);
    case ARG_BOOL:
        return cJSON_IsBool(v) ? 0 : errf(e, "tuner.classArgs.%s: must be true or false (%s)", r->key, b->name);
    case ARG_INT:
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || !isfinite(v->valuedouble))
            return errf(e, "tuner.classArgs.%s: must be an integer (%s)", r->key, b->name);
        if (r->min <= r->max && (v->valuedouble < r->min || v->valuedouble > r->max))
            return errf(e, "tuner.classArgs.%s: must be an integer between %.0f and %.0f (%s)", r->key, r->min,
                        r->max, b->name);
        if (r->min > r->max && v->valuedouble < r->min)
            return errf(e, "tuner.classArgs.%s: must be an integer of at least %.0f (%s)", r->key, r->min, b->name);
        return 0;
    case ARG_FLOAT:
        return cJSON_IsNumber(v) && isfinite(v->valuedouble)
                   ? 0
                   : errf(e, "tuner.classArgs.%s: must be a number (%s)", r->key, b->name);
    }
    return 0;
}

int nni_builtin_check_args(const struct nni_builtin *b, const cJSON *args, struct errbuf *e)
{
    if (!b->args)
        return 0;
    if (args && !cJSON_IsNull(args) && !cJSON_IsObject(args))
        return errf(e, "tuner.classArgs: must be a mapping of argument names to values");
    const cJSON *item, *obj = cJSON_IsObject(args) ? args : NULL;
    cJSON_ArrayForEach(item, obj) {
        const struct arg_rule *r = b->args;
        while (r->key && strcmp(r->key, item->string) != 0)
            r++;
        if (!r->key) {
            const char *keys[16];
            int n = 0;
            for (r = b->args; r->key && n < 15; r++)
                keys[n++] = r->key;
            keys[n] = NULL;
            char list[512];
            list_choices(list, sizeof list, keys, "", ", ");
            return errf(e, "tuner.classArgs.%s: unknown argument for %s (accepted: %s)", item->string, b->name, list);
        }
        if (check_one(b, r, item, e) < 0)
            return -1;
    }
    for (const struct arg_rule *r = b->args; r->key; r++) {
        const cJSON *v = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, r->key) : NULL;
        if (r->required && !v) {
            char list[128];
            list_choices(list, sizeof list, r->choices, "\"", " or ");
            return errf(e, "tuner.classArgs.%s: required by %s (%s)", r->key, b->name, list);
        }
    }
    return 0;
}
