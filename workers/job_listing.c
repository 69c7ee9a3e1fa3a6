/* job_listing.c: see job_listing.h. */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"
#include "workers/job_listing.h"

void job_listing_reset(struct job_listing *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->v[i].name);
        cJSON_Delete(l->v[i].entry);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

void job_listing_add(struct job_listing *l, const char *name, cJSON *entry)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = xrealloc(l->v, sizeof *l->v * (size_t)l->cap);
    }
    l->v[l->n].name = xstrdup(name);
    l->v[l->n].entry = entry;
    l->n++;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct job_listed *)a)->name, ((const struct job_listed *)b)->name);
}

void job_listing_seal(struct job_listing *l)
{
    if (l->n > 1)
        qsort(l->v, (size_t)l->n, sizeof *l->v, by_name);
    l->complete = 1;
}

const cJSON *job_listing_find(const struct job_listing *l, const char *name)
{
    if (!l->complete || l->n == 0)
        return NULL;
    struct job_listed key = {.name = (char *)name};
    const struct job_listed *hit = bsearch(&key, l->v, (size_t)l->n, sizeof *l->v, by_name);
    return hit ? hit->entry : NULL;
}
