/* random.c: NNI's RandomTuner ("Random"). Each index draws from its own stream
 * rng(seed, index), so a suggestion depends on (seed, index) only, never on which
 * indexes this process happened to compute before.
 *
 * Like NNI (hpo_utils/dedup.py), when the space can repeat itself (no numeric
 * parameter without q anywhere), a draw equal to an earlier suggestion is replaced
 * by the first grid-search point not suggested yet, and once the grid is used up
 * there are no more suggestions. Whether index i was a repeat depends on indexes
 * 0..i-1, so those suggestions are computed (cheaply) and cached in order. */
#include "tuners/internal.h"

#include <stdlib.h>
#include <string.h>

struct random_state {
    struct ss_space *space;  /* own copy: the tuner never depends on the caller's */
    uint64_t seed;
    int may_repeat;
    /* only when may_repeat: */
    cJSON **out;             /* the suggestions for indexes 0..n-1 */
    int64_t n, cap;
    struct seen seen;        /* canonical text of out[i] -> i */
    struct grid *grid;       /* created at the first repeat */
    int64_t grid_pos;        /* grid points before it were all suggested already */
    int exhausted;
};

static int random_create(const cJSON *args, const struct ss_space *space, uint64_t seed, void **state,
                         struct errbuf *e)
{
    uint64_t own_seed = seed;
    int mode;  /* ignored */
    const struct ca_rule rules[] = {
        {"seed", CA_SEED, .out = &own_seed},
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode},
    };
    if (classargs_check(args, CA_TUNER, "Random", rules, CA_COUNT(rules), e) < 0)
        return -1;
    struct random_state *st = xcalloc(1, sizeof *st);
    if (ss_parse(space->json, &st->space, NULL, 0, e) < 0) {
        free(st);
        return -1;
    }
    st->seed = own_seed;
    st->may_repeat = space_may_repeat(st->space);
    seen_init(&st->seen);
    *state = st;
    return 0;
}

static void random_destroy(void *state)
{
    struct random_state *st = state;
    if (!st)
        return;
    for (int64_t i = 0; i < st->n; i++)
        cJSON_Delete(st->out[i]);
    free(st->out);
    seen_free(&st->seen);
    grid_free(st->grid);
    ss_free(st->space);
    free(st);
}

static cJSON *draw(const struct random_state *st, int64_t index)
{
    struct rng r;
    rng_init(&r, st->seed, (uint64_t)index);
    return ss_sample(st->space, &r);
}

struct same_ctx {
    const struct random_state *st;
    const char *canon;
};

static int same_suggestion(void *ctx, int64_t id)
{
    struct same_ctx *c = ctx;
    char *s = json_canonical(c->st->out[id]);
    int same = strcmp(s, c->canon) == 0;
    free(s);
    return same;
}

/* Appends j as the next suggestion unless it repeats one; takes j either way.
 * Returns 1 when appended. */
static int try_append(struct random_state *st, cJSON *j)
{
    char *canon = json_canonical(j);
    uint64_t h = str_hash64(canon);
    struct same_ctx ctx = {st, canon};
    int repeat = seen_find(&st->seen, h, same_suggestion, &ctx) >= 0;
    free(canon);
    if (repeat) {
        cJSON_Delete(j);
        return 0;
    }
    if (st->n == st->cap) {
        st->cap = st->cap ? 2 * st->cap : 64;
        st->out = xrealloc(st->out, sizeof *st->out * (size_t)st->cap);
    }
    seen_add(&st->seen, h, st->n);
    st->out[st->n++] = j;
    return 1;
}

/* Computes the suggestion for index st->n. Returns 0 when the space is used up. */
static int extend(struct random_state *st)
{
    if (st->exhausted)
        return 0;
    if (try_append(st, draw(st, st->n)))
        return 1;
    if (!st->grid)
        st->grid = grid_new(st->space);
    for (;;) {
        cJSON *p;
        if (!grid_point(st->grid, st->grid_pos, &p)) {
            st->exhausted = 1;
            return 0;
        }
        st->grid_pos++;
        if (try_append(st, p))
            return 1;
    }
}

static int random_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                          struct errbuf *e)
{
    struct random_state *st = state;
    *params = NULL;
    if (index < 0)
        return errf(e, "Random: negative tuner index %lld", (long long)index);
    if (!st->may_repeat) {
        *params = draw(st, index);
        return 1;
    }
    while (st->n <= index)
        if (!extend(st))
            return 0;
    *params = cJSON_Duplicate(st->out[index], 1);
    return 1;
}

static const char *const random_aliases[] = {"RandomTuner", NULL};

const struct tuner_ops tuner_random = {
    .name = "Random",
    .aliases = random_aliases,
    .create = random_create,
    .suggest = random_suggest,
    .destroy = random_destroy,
};
