/* batch.c: NNI's BatchTuner ("Batch"): the search space is one choice whose options
 * are whole parameter sets, suggested in order, then no more. */
#include "tuners/internal.h"

#include <stdlib.h>

struct batch_state {
    struct ss_space *space;  /* own copy: the options live in it */
};

static int batch_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                        struct errbuf *e)
{
    if (classargs_keys(args, CA_TUNER, "Batch", NULL, 0, e) < 0)
        return -1;
    if (space->n != 1 || space->params[0].type != SS_CHOICE)
        return errf(e, "searchSpace: Batch needs exactly one parameter of _type choice whose options are "
                       "the parameter sets to run (got %d parameter%s%s%s)",
                    space->n, space->n == 1 ? "" : "s", space->n == 1 ? " of _type " : "",
                    space->n == 1 ? ss_type_name(space->params[0].type) : "");
    const struct ss_param *p = &space->params[0];
    for (int i = 0; i < p->n_choices; i++)
        if (!cJSON_IsObject(p->choices[i]))
            return errf(e, "searchSpace.%s: option %d must be an object (Batch runs each option as a whole "
                           "parameter set)", p->path, i);
    struct batch_state *st = xcalloc(1, sizeof *st);
    if (ss_parse(space->json, &st->space, NULL, 0, e) < 0) {
        free(st);
        return -1;
    }
    *state = st;
    return 0;
}

static int batch_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                         struct errbuf *e)
{
    struct batch_state *st = state;
    const struct ss_param *p = &st->space->params[0];
    *params = NULL;
    if (index < 0)
        return errf(e, "Batch: negative tuner index %lld", (long long)index);
    if (index >= p->n_choices)
        return 0;
    *params = cJSON_Duplicate(p->choices[index], 1);
    return 1;
}

static void batch_destroy(void *state)
{
    struct batch_state *st = state;
    if (!st)
        return;
    ss_free(st->space);
    free(st);
}

static const char *const batch_aliases[] = {"BatchTuner", NULL};

const struct tuner_ops tuner_batch = {
    .name = "Batch",
    .aliases = batch_aliases,
    .create = batch_create,
    .suggest = batch_suggest,
    .destroy = batch_destroy,
};
