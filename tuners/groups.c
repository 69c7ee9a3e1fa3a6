/* groups.c: a search space cut into groups, as TPE and Anneal model it: the
 * top-level parameters, and for every option of a nested choice the parameters of
 * its sub-space. A trial is an observation of a group when the group's branch was
 * chosen. */
#include "tuners/internal.h"

#include <stdlib.h>

static int add_group(struct space_groups *sg, const struct ss_space *s)
{
    int g = sg->n++;
    sg->g = xrealloc(sg->g, sizeof *sg->g * (size_t)sg->n);
    sg->g[g].d = s->n;
    sg->g[g].dims = xcalloc((size_t)(s->n ? s->n : 1), sizeof *sg->g[g].dims);
    /* sg->g[g], not a pointer kept across the loop: the recursion moves sg->g */
    for (int i = 0; i < s->n; i++) {
        const struct ss_param *p = &s->params[i];
        sg->g[g].dims[i].p = p;
        sg->g[g].dims[i].label = sg->n_labels++;
        if (p->sub) {
            int *child = xmalloc(sizeof *child * (size_t)p->n_choices);
            for (int k = 0; k < p->n_choices; k++)
                child[k] = add_group(sg, p->sub[k]);
            sg->g[g].dims[i].child = child;
        }
    }
    return g;
}

void space_groups_init(struct space_groups *sg, const struct ss_space *s)
{
    sg->n = sg->n_labels = 0;
    sg->g = NULL;
    add_group(sg, s);
}

void space_groups_free(struct space_groups *sg)
{
    for (int g = 0; g < sg->n; g++) {
        for (int i = 0; i < sg->g[g].d; i++)
            free(sg->g[g].dims[i].child);
        free(sg->g[g].dims);
    }
    free(sg->g);
    sg->g = NULL;
    sg->n = sg->n_labels = 0;
}
