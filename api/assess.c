/* assess.c: the assessor (Medianstop, Curvefitting) decides on intermediate results:
 * each time a running trial has reported new PERIODICAL results, in sequence order and
 * without a gap, it is assessed once per new result (as NNI's dispatcher does); a Bad
 * verdict ends the trial EARLY_STOPPED through a kill request. Assessors are pure, so
 * nothing is stored: after a restart the running trials are simply assessed again. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/dispatcher.h"

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

void assess_tick(struct api *a)
{
    dispatcher_tick(a);
    struct assess_state *s = a->assess;
    if (!s)
        return;
    struct errbuf e;
    /* anything new to assess? (cheap: running trials' result counts) */
    int64_t pending = 0;
    db_int(a->db, &e, &pending,
           "SELECT count(*) FROM trial t WHERE t.experiment_id = ? AND t.status = 'RUNNING'"
           " AND t.kill_request IS NULL AND EXISTS (SELECT 1 FROM metric m WHERE m.trial_id = t.id"
           " AND m.attempt = t.attempt AND m.type = 'PERIODICAL')", "s", a->exp_id);
    if (pending == 0)
        return;
    sqlite3_stmt *st = db_query(a->db, &e,
        "SELECT t.id, t.status, t.kill_request IS NULL, m.sequence, m.default_value FROM trial t"
        " JOIN metric m ON m.trial_id = t.id AND m.attempt = t.attempt AND m.type = 'PERIODICAL'"
        " WHERE t.experiment_id = ? AND t.status IN ('RUNNING','SUCCEEDED','FAILED','USER_CANCELED',"
        " 'EARLY_STOPPED','SYS_CANCELED') ORDER BY t.id, m.sequence", "s", a->exp_id);
    if (!st)
        return;
    struct series *all = NULL;
    int n = 0, cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if (n == 0 || strcmp(all[n - 1].trial_id, id) != 0) {
            if (n == cap) {
                cap = cap ? cap * 2 : 64;
                all = xrealloc(all, sizeof *all * (size_t)cap);
            }
            struct series *x = &all[n++];
            memset(x, 0, sizeof *x);
            x->trial_id = xstrdup(id);
            const char *status = (const char *)sqlite3_column_text(st, 1);
            x->succeeded = strcmp(status, "SUCCEEDED") == 0;
            x->running = strcmp(status, "RUNNING") == 0 && sqlite3_column_int(st, 2);
            x->contiguous = 1;
        }
        struct series *x = &all[n - 1];
        if (col_i64(st, 3) != x->n)
            x->contiguous = 0; /* a result is missing so far: wait for it, as NNI */
        if (x->n == x->cap) {
            x->cap = x->cap ? x->cap * 2 : 16;
            x->values = xrealloc(x->values, sizeof *x->values * (size_t)x->cap);
        }
        x->values[x->n++] = sqlite3_column_type(st, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(st, 4);
    }
    sqlite3_reset(st);
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
