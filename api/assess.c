/* assess.c: the assessor (Medianstop, Curvefitting) decides on intermediate results:
 * each time a running trial has reported new PERIODICAL results, in sequence order and
 * without a gap, it is assessed once per new result (as NNI's dispatcher does); a Bad
 * verdict ends the trial EARLY_STOPPED through a kill request. Assessors are pure, so
 * nothing is stored: after a restart the running trials are simply assessed again. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/assess.h"
#include "api/children.h"
#include "api/dispatcher.h"
#include "schema/tuner_rows.h"

struct series {
    char *trial_id;
    double *values;
    int n, cap;
    int contiguous;      /* sequences 0..n-1 with no gap */
    int succeeded;
    int running;         /* RUNNING with no kill request: may be assessed */
};

struct assess_state {
    const struct assessor_ops *ops;
    void *state;
    /* trial id -> number of its results already assessed (running trials only) */
    char **ids;
    int *done;
    int n;
};

int assess_init(struct api *a, struct errbuf *e)
{
    if (!a->cfg->assessor.set)
        return 0;
    if (!a->cfg->assessor.name)
        return dispatcher_init(a, e); /* customized: the dispatcher process assesses (api/dispatcher.c) */
    const struct assessor_ops *ops = assessor_find(a->cfg->assessor.name);
    if (!ops)
        return errf(e, "assessor.name: unknown assessor '%s' (known: %s)", a->cfg->assessor.name, assessor_names());
    struct assess_state *s = xcalloc(1, sizeof *s);
    s->ops = ops;
    if (ops->create(a->cfg->assessor.class_args, &s->state, e) < 0) {
        free(s);
        return -1;
    }
    a->assess = s;
    return 0;
}

void assess_free(struct api *a)
{
    struct assess_state *s = a->assess;
    if (!s)
        return;
    s->ops->destroy(s->state);
    for (int i = 0; i < s->n; i++)
        free(s->ids[i]);
    free(s->ids);
    free(s->done);
    free(s);
    a->assess = NULL;
}

static int *done_slot(struct assess_state *s, const char *id)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->ids[i], id) == 0)
            return &s->done[i];
    s->ids = xrealloc(s->ids, sizeof *s->ids * (size_t)(s->n + 1));
    s->done = xrealloc(s->done, sizeof *s->done * (size_t)(s->n + 1));
    s->ids[s->n] = xstrdup(id);
    s->done[s->n] = 0;
    return &s->done[s->n++];
}

struct series_set {
    struct series *all;
    int n, cap;
};

/* One intermediate result into the set; rows come by trial id, then sequence. */
static int add_row(void *ctx, const struct periodical_row *r)
{
    struct series_set *ss = ctx;
    if (ss->n == 0 || strcmp(ss->all[ss->n - 1].trial_id, r->trial_id) != 0) {
        if (ss->n == ss->cap) {
            ss->cap = ss->cap ? ss->cap * 2 : 64;
            ss->all = xrealloc(ss->all, sizeof *ss->all * (size_t)ss->cap);
        }
        struct series *x = &ss->all[ss->n++];
        memset(x, 0, sizeof *x);
        x->trial_id = xstrdup(r->trial_id);
        x->succeeded = strcmp(r->status, "SUCCEEDED") == 0;
        x->running = strcmp(r->status, "RUNNING") == 0 && r->no_kill_request;
        x->contiguous = 1;
    }
    struct series *x = &ss->all[ss->n - 1];
    if (r->sequence != x->n)
        x->contiguous = 0; /* a result is missing so far: wait for it, as NNI */
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 16;
        x->values = xrealloc(x->values, sizeof *x->values * (size_t)x->cap);
    }
    x->values[x->n++] = r->has_value ? r->value : NAN;
    return 0;
}

void assess_tick(struct api *a)
{
    dispatcher_tick(a);
    struct assess_state *s = a->assess;
    if (!s)
        return;
    struct errbuf e;
    /* anything new to assess? (cheap: running trials' result counts) */
    if (trials_assessable(a->db, a->exp_id, &e) <= 0)
        return;
    struct series_set set = {0};
    if (periodical_rows(a->db, a->exp_id, add_row, &set, &e) < 0)
        log_error("assessor: %s", e.msg); /* judged on what was read */
    struct series *all = set.all;
    int n = set.n;
    struct assessor_series *others = xcalloc((size_t)n + 1, sizeof *others);
    for (int i = 0; i < n; i++) {
        others[i].values = all[i].values;
        others[i].n = all[i].n;
        others[i].succeeded = all[i].succeeded;
    }
    for (int i = 0; i < n; i++) {
        struct series *x = &all[i];
        if (!x->running || !x->contiguous)
            continue;
        int *done = done_slot(s, x->trial_id);
        enum assess_result verdict = ASSESS_GOOD;
        /* once per new result, so that "every gap results" rules see each step */
        for (int k = *done + 1; k <= x->n && verdict == ASSESS_GOOD; k++) {
            /* the others, without this trial */
            struct assessor_series self = others[i];
            others[i] = others[n - 1];
            struct assessor_input in = {.values = x->values, .n = k, .others = others, .n_others = n - 1};
            verdict = s->ops->assess(s->state, &in);
            others[n - 1] = others[i];
            others[i] = self;
        }
        *done = x->n;
        if (verdict == ASSESS_BAD) {
            char *why = xasprintf("%s: early stop after %d intermediate results", s->ops->name, x->n);
            if (trial_request_kill(a->db, x->trial_id, "EARLY_STOPPED", why, &e) > 0)
                log_info("trial %s: %s", x->trial_id, why);
            free(why);
            children_wake(a);
        }
    }
    for (int i = 0; i < n; i++) {
        free(all[i].trial_id);
        free(all[i].values);
    }
    free(all);
    free(others);
}
