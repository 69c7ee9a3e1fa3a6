/* grid.c: the enumeration of NNI's GridSearchTuner (gridsearch_tuner.py, v3),
 * reproduced step by step so that trialq's grid visits the same points in the same
 * order, and made addressable by index: points are computed lazily and their
 * vectors cached, so point 57 after a restart costs computing points 0..57 once.
 *
 * The space is flattened depth-first into dimensions (a nested choice, then the
 * parameters of its option 0, option 1, ...). choice and randint dimensions hold
 * their option indexes; numeric ones hold fractions x in (0, 1) mapped through the
 * inverse CDF (low + (high-low)*x, in log space for log types; mu +
 * sigma*sqrt(2)*erfinv(2x-1) for normal types), then exp / q-round / clip.
 *
 * Epoch 1 has x = 1/2 only; each later epoch bisects the remaining intervals of
 * every numeric dimension, keeping an interval only while its ends still differ
 * after exp/q/clip. Within an epoch the vectors run like an odometer over the
 * dimensions active under the current nested choices, the last dimension fastest;
 * vectors whose indexes all predate the epoch were emitted before and are skipped,
 * and so is any point whose parameters equal an earlier point's (NNI's history). */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct division {
    double l, r;
};

struct gdim {
    const struct ss_param *p;
    int parent;      /* dimension of the nested choice this one lives under; -1: top level */
    int option;      /* the parent's option that activates this dimension */
    int categorical; /* choice or randint */
    int size;        /* grid length: options, randint values, or fractions so far */
    double *xs;      /* numeric: the fractions, in the order NNI appends them */
    int xcap;
    struct division *divs;  /* numeric: intervals that may still be bisected */
    int ndivs;
    int bar;         /* NNI's epoch_bar: the grid length before this epoch */
};

struct grid {
    int nd, dcap;
    struct gdim *dims;
    int *vec;            /* NNI's vector: one grid index per dimension */
    int in_epoch, done;
    unsigned char *act;  /* scratch: which dimensions a vector activates */
    cJSON **objs;        /* scratch: the object each nested choice dimension opened */
    int *points;         /* the vectors of the points found so far, nd ints each */
    int64_t npoints, pcap;
    struct seen seen;    /* canonical text hash -> point, for NNI's history check */
    int may_repeat;      /* some choice has two equal options: the check is needed */
};

/* ---- numeric dimensions: fraction -> value ---- */

static double cdf_inverse(const struct ss_param *p, double x)
{
    if (ss_type_is_normal(p->type))
        return p->a + p->b * sqrt(2.0) * ss_erfinv(2 * x - 1);
    double lo = p->a, hi = p->b;
    if (ss_type_is_log(p->type)) {
        lo = log(lo);
        hi = log(hi);
    }
    return lo + (hi - lo) * x;
}

/* NNI's _deformat_single_parameter: infinities (normal types at x = 0 or 1, or where
 * 2x-1 rounds to ±1) pass through untouched, without exp or q. */
static double real_value(const struct ss_param *p, double x)
{
    double v = cdf_inverse(p, x);
    return isinf(v) ? v : ss_deformat(p, v);
}

static int less(const struct ss_param *p, double x, double y)
{
    return real_value(p, x) < real_value(p, y);
}

static void push_x(struct gdim *d, double x)
{
    if (d->size == d->xcap) {
        d->xcap = d->xcap ? 2 * d->xcap : 8;
        d->xs = xrealloc(d->xs, sizeof *d->xs * (size_t)d->xcap);
    }
    d->xs[d->size++] = x;
}

/* ---- building ---- */

static void add_dims(struct grid *g, const struct ss_space *s, int parent, int option)
{
    for (int i = 0; i < s->n; i++) {
        const struct ss_param *p = &s->params[i];
        if (g->nd == g->dcap) {
            g->dcap = g->dcap ? 2 * g->dcap : 8;
            g->dims = xrealloc(g->dims, sizeof *g->dims * (size_t)g->dcap);
        }
        int k = g->nd++;
        struct gdim *d = &g->dims[k];
        memset(d, 0, sizeof *d);
        d->p = p;
        d->parent = parent;
        d->option = option;
        d->categorical = p->type == SS_CHOICE || p->type == SS_RANDINT;
        if (d->categorical) {
            d->size = p->n_choices;
        } else {
            push_x(d, 0.5);
            d->divs = xmalloc(2 * sizeof *d->divs);
            if (less(p, 0, 0.5))
                d->divs[d->ndivs++] = (struct division){0, 0.5};
            if (less(p, 0.5, 1))
                d->divs[d->ndivs++] = (struct division){0.5, 1};
        }
        if (p->sub)
            for (int j = 0; j < p->n_choices; j++)
                add_dims(g, p->sub[j], k, j);
    }
}

/* Distinct vectors give distinct parameter sets (a dimension's grid values all differ
 * after exp/q/clip, and inactive dimensions stay 0) unless a choice offers the same
 * option twice, or two nested options share a _name. Only then does NNI's history
 * check (a canonical print per point, most of the cost) find anything. */
static int has_equal_options(const struct ss_param *p)
{
    if (p->type != SS_CHOICE)
        return 0;
    int found = 0;
    char **text = xcalloc((size_t)p->n_choices, sizeof *text);
    for (int i = 0; i < p->n_choices && !found; i++) {
        const cJSON *o = p->sub ? cJSON_GetObjectItemCaseSensitive(p->choices[i], "_name") : p->choices[i];
        text[i] = json_canonical(o);
        for (int k = 0; k < i && !found; k++)
            found = strcmp(text[k], text[i]) == 0;
    }
    for (int i = 0; i < p->n_choices; i++)
        free(text[i]);
    free(text);
    return found;
}

struct grid *grid_new(const struct ss_space *space)
{
    struct grid *g = xcalloc(1, sizeof *g);
    add_dims(g, space, -1, 0);
    for (int i = 0; i < g->nd && !g->may_repeat; i++)
        g->may_repeat = has_equal_options(g->dims[i].p);
    g->vec = xcalloc((size_t)g->nd, sizeof *g->vec);
    g->act = xcalloc((size_t)g->nd, sizeof *g->act);
    g->objs = xcalloc((size_t)g->nd, sizeof *g->objs);
    seen_init(&g->seen);
    return g;
}

void grid_free(struct grid *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->nd; i++) {
        free(g->dims[i].xs);
        free(g->dims[i].divs);
    }
    free(g->dims);
    free(g->vec);
    free(g->act);
    free(g->objs);
    free(g->points);
    seen_free(&g->seen);
    free(g);
}

/* ---- one vector ---- */

/* A dimension is active when it is at the top level, or its nested choice is active
 * and has its option selected. Parents come before their children. */
static void compute_active(struct grid *g, const int *vec)
{
    for (int i = 0; i < g->nd; i++) {
        const struct gdim *d = &g->dims[i];
        g->act[i] = d->parent < 0 || (g->act[d->parent] && vec[d->parent] == d->option);
    }
}

/* NNI's deformat_parameters of the vector: the parameter object, keys in
 * search-space order, nested choices as {"_name": ..., <their keys>}. */
static cJSON *build_params(struct grid *g, const int *vec)
{
    cJSON *root = cJSON_CreateObject();
    compute_active(g, vec);
    for (int i = 0; i < g->nd; i++) {
        if (!g->act[i])
            continue;
        const struct gdim *d = &g->dims[i];
        const struct ss_param *p = d->p;
        cJSON *into = d->parent < 0 ? root : g->objs[d->parent];
        cJSON *v;
        if (p->type == SS_CHOICE && p->sub) {
            v = cJSON_CreateObject();
            cJSON_AddItemToObject(
                v, "_name", cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(p->choices[vec[i]], "_name"), 1));
            g->objs[i] = v;
        } else if (p->type == SS_CHOICE) {
            v = cJSON_Duplicate(p->choices[vec[i]], 1);
        } else if (p->type == SS_RANDINT) {
            v = cJSON_CreateNumber(p->a + vec[i]);
        } else {
            v = cJSON_CreateNumber(ss_deformat(p, cdf_inverse(p, d->xs[vec[i]])));
        }
        cJSON_AddItemToObject(into, p->name, v);
    }
    return root;
}

/* NNI's _next_vector: the next vector of this epoch; 0 at the end of the epoch.
 * Inactive dimensions are left alone (they are always 0: a parent only moves after
 * every later dimension wrapped to 0). */
static int next_vector(struct grid *g)
{
    if (!g->in_epoch) {
        memset(g->vec, 0, sizeof *g->vec * (size_t)g->nd);
        g->in_epoch = 1;
        return 1;
    }
    compute_active(g, g->vec);
    for (int i = g->nd - 1; i >= 0; i--) {
        if (!g->act[i])
            continue;
        if (g->vec[i] + 1 < g->dims[i].size) {
            g->vec[i]++;
            return 1;
        }
        g->vec[i] = 0;
    }
    g->in_epoch = 0;
    return 0;
}

/* Every index predates this epoch: the point was visited in an earlier one. */
static int is_old(const struct grid *g)
{
    for (int i = 0; i < g->nd; i++)
        if (g->vec[i] >= g->dims[i].bar)
            return 0;
    return 1;
}

/* ---- epochs ---- */

/* Bisects the intervals of a numeric dimension (NNI's _next_grid, v3: the ends 0 and
 * 1 are not grid points, so a midpoint next to them counts even when it only equals
 * the end's value). Sets *updated as NNI does; returns whether points were added. */
static int subdivide(struct gdim *d, int *updated)
{
    int added = 0, n = 0;
    struct division *next = xmalloc(sizeof *next * (size_t)(2 * d->ndivs + 1));
    for (int k = 0; k < d->ndivs; k++) {
        double l = d->divs[k].l, r = d->divs[k].r, mid = (l + r) / 2;
        int diff_l = less(d->p, l, mid), diff_r = less(d->p, mid, r);
        /* Deviation: NNI would also add a midpoint whose value is infinite (a normal
         * type once 2*mid-1 rounds to ±1, after ~53 bisections of a tail, or an exp
         * overflow) and then crash on round(inf). Such a point is never a grid point
         * here; its interval is kept or dropped by the usual rule, so the tail ends. */
        if ((diff_l || l == 0.0) && (diff_r || r == 1.0) && isfinite(real_value(d->p, mid))) {
            push_x(d, mid);
            added = *updated = 1;
        }
        if (diff_l) {
            next[n++] = (struct division){l, mid};
            if (l == 0.0)
                *updated = 1;
        }
        if (diff_r) {
            next[n++] = (struct division){mid, r};
            if (r == 1.0)
                *updated = 1;
        }
    }
    free(d->divs);
    d->divs = next;
    d->ndivs = n;
    return added;
}

static void next_grid(struct grid *g)
{
    for (;;) {
        int updated = 0, added = 0;
        for (int i = 0; i < g->nd; i++) {
            struct gdim *d = &g->dims[i];
            d->bar = d->size;
            if (!d->categorical && subdivide(d, &updated))
                added = 1;
        }
        if (!updated) {
            g->done = 1;
            return;
        }
        /* NNI would walk the whole next epoch only to find every vector old; that can
         * repeat for dozens of epochs while a q-rounded normal's tail narrows. */
        if (added)
            return;
    }
}

/* ---- the point list ---- */

struct same_ctx {
    struct grid *g;
    const char *canon;
};

static int same_point(void *ctx, int64_t id)
{
    struct same_ctx *c = ctx;
    cJSON *j = build_params(c->g, c->g->points + id * c->g->nd);
    char *s = json_canonical(j);
    int same = strcmp(s, c->canon) == 0;
    free(s);
    cJSON_Delete(j);
    return same;
}

/* Whether the current vector's parameters equal an earlier point's; sets *h to the
 * hash of its canonical text. */
static int is_repeat(struct grid *g, uint64_t *h)
{
    cJSON *j = build_params(g, g->vec);
    char *canon = json_canonical(j);
    cJSON_Delete(j);
    *h = str_hash64(canon);
    struct same_ctx ctx = {g, canon};
    int dup = seen_find(&g->seen, *h, same_point, &ctx) >= 0;
    free(canon);
    return dup;
}

/* Finds the next new point (NNI's generate_parameters loop). Returns 0 when done. */
static int extend(struct grid *g)
{
    for (;;) {
        if (g->done)
            return 0;
        if (!next_vector(g)) {
            next_grid(g);
            continue;
        }
        if (is_old(g))
            continue;
        uint64_t h = 0;
        if (g->may_repeat && is_repeat(g, &h))
            continue;
        if (g->npoints == g->pcap) {
            g->pcap = g->pcap ? 2 * g->pcap : 64;
            g->points = xrealloc(g->points, sizeof *g->points * (size_t)(g->pcap * (g->nd ? g->nd : 1)));
        }
        memcpy(g->points + g->npoints * g->nd, g->vec, sizeof *g->vec * (size_t)g->nd);
        if (g->may_repeat)
            seen_add(&g->seen, h, g->npoints);
        g->npoints++;
        return 1;
    }
}

int grid_point(struct grid *g, int64_t index, cJSON **out)
{
    *out = NULL;
    if (index < 0)
        return 0;
    while (g->npoints <= index)
        if (!extend(g))
            return 0;
    *out = build_params(g, g->points + index * g->nd);
    return 1;
}
