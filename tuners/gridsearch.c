/* gridsearch.c: NNI's GridSearchTuner ("GridSearch"): every combination of choice
 * and randint values, numeric parameters at ever finer fractions (see grid.c). The
 * enumeration is cached, so suggest(index) is a pure function of index. */
#include "tuners/internal.h"

#include <stdlib.h>

struct gridsearch_state {
    struct ss_space *space;  /* own copy: the grid points into it */
    struct grid *grid;
};

static int gridsearch_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                             struct errbuf *e)
{
    /* NNI's builtin table says acceptClassArgs: false, but its v3 GridSearchTuner takes
     * (and ignores) optimize_mode, which configs copied from other tuners often carry. */
    int mode;  /* ignored */
    const struct ca_rule rules[] = {{"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode}};
    if (classargs_check(args, CA_TUNER, "GridSearch", rules, CA_COUNT(rules), e) < 0)
        return -1;
    if (space->n == 0)
        return errf(e, "searchSpace: GridSearch needs at least one parameter (the search space is empty)");
    struct gridsearch_state *st = xcalloc(1, sizeof *st);
    if (ss_parse(space->json, &st->space, NULL, 0, e) < 0) {
        free(st);
        return -1;
    }
    st->grid = grid_new(st->space);
    *state = st;
    return 0;
}

static int gridsearch_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                              struct errbuf *e)
{
    struct gridsearch_state *st = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "GridSearch: negative tuner index %lld", (long long)index);
    return grid_point(st->grid, index, params);
}

static void gridsearch_destroy(void *state)
{
    struct gridsearch_state *st = state;
    if (!st)
        return;
    grid_free(st->grid);
    ss_free(st->space);
    free(st);
}

static const char *const gridsearch_aliases[] = {"GridSearchTuner", NULL};

const struct tuner_ops tuner_gridsearch = {
    .name = "GridSearch",
    .aliases = gridsearch_aliases,
    .create = gridsearch_create,
    .suggest = gridsearch_suggest,
    .destroy = gridsearch_destroy,
};
