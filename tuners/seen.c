/* seen.c: an open-addressing index from 64-bit hashes of canonical parameter texts
 * to the ids of the points that produced them. Equality is left to the owner (a
 * callback), so hash collisions never merge two different parameter sets. */
#include "tuners/internal.h"

#include <stdlib.h>

void seen_init(struct seen *s)
{
    s->hash = NULL;
    s->id = NULL;
    s->cap = s->n = 0;
}

void seen_free(struct seen *s)
{
    free(s->hash);
    free(s->id);
    seen_init(s);
}

int64_t seen_find(const struct seen *s, uint64_t h, int (*same)(void *ctx, int64_t id), void *ctx)
{
    if (!s->cap)
        return -1;
    for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (s->id[i] < 0)
            return -1;
        if (s->hash[i] == h && same(ctx, s->id[i]))
            return s->id[i];
    }
}

static void insert(struct seen *s, uint64_t h, int64_t id)
{
    size_t i = h & (s->cap - 1);
    while (s->id[i] >= 0)
        i = (i + 1) & (s->cap - 1);
    s->hash[i] = h;
    s->id[i] = id;
    s->n++;
}

void seen_add(struct seen *s, uint64_t h, int64_t id)
{
    if (2 * (s->n + 1) > s->cap) {  /* keep the load under one half */
        struct seen old = *s;
        s->cap = old.cap ? old.cap * 2 : 64;
        s->n = 0;
        s->hash = xmalloc(sizeof *s->hash * s->cap);
        s->id = xmalloc(sizeof *s->id * s->cap);
        for (size_t i = 0; i < s->cap; i++)
            s->id[i] = -1;
        for (size_t i = 0; i < old.cap; i++)
            if (old.id[i] >= 0)
                insert(s, old.hash[i], old.id[i]);
        free(old.hash);
        free(old.id);
    }
    insert(s, h, id);
}
