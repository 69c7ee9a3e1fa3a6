/* bracket.c: the bracket bookkeeping of Hyperband and BOHB (bracket.h), as NNI's
 * advisors keep it in memory, recomputed from the history instead:
 *
 * - A round's configurations are known once it is generated: round 0 when its bracket
 *   starts, round i + 1 when every trial of round i has ended (any final status, as
 *   NNI's trial-end count). Round i + 1 then takes the top floor(n / eta^(i+1)) of
 *   round i by their latest result (tuner_result.latest: the FINAL value, else the
 *   PERIODICAL one of the highest sequence; NNI's set_config_perf), best first, ties
 *   in the order the trials were issued. Configurations without any result are not
 *   promoted (NNI fails there with an IndexError); a round with none to promote ends
 *   its bracket.
 * - A promotion issued already is kept as issued, whatever the ranking says now.
 * - What to issue next: NNI serves one queue in the order the configurations were
 *   generated. Here: the round already being issued first (the head of that queue),
 *   then the other generated rounds, oldest bracket and lowest round first (NNI: the
 *   round that completed first; this differs only when several rounds complete while
 *   another one is still being issued, where NNI's order depends on timing). When
 *   nothing waits, the next bracket starts if the mode allows it.
 * - Trials without a label of this plan's form (imported results, customized trials,
 *   reruns) take no part. */
#include "tuners/bracket.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuners/internal.h"

#define HB_EPS 1e-6
#define HB_MAX_BRACKET 1000000000LL /* configurations of one bracket */

static double ipow(int base, int exp)
{
    double r = 1;
    for (int i = 0; i < exp; i++)
        r *= base;
    return r;
}

int hb_plan_init(struct hb_plan *p, double r_max, double r_min, int eta, int maximize, enum hb_mode mode,
                 int with_hb, struct errbuf *e)
{
    memset(p, 0, sizeof *p);
    if (!(eta >= 2))
        return errf(e, "eta must be at least 2");
    if (!(r_min > 0) || !(r_max >= r_min))
        return errf(e, "the budgets must be positive and the largest at least the smallest");
    p->s_max = (int)floor(log(r_max / r_min) / log(eta) + HB_EPS);
    if (p->s_max < 0)
        p->s_max = 0;
    p->eta = eta;
    p->r_max = r_max;
    p->maximize = maximize;
    p->mode = mode;
    p->with_hb = with_hb;
    double biggest = ceil((p->s_max + 1) * ipow(eta, p->s_max) / (p->s_max + 1) - HB_EPS);
    if (biggest > (double)HB_MAX_BRACKET)
        return errf(e, "the first bracket would have %.0f configurations (at most %lld): choose a smaller budget "
                       "ratio or a larger eta", biggest, HB_MAX_BRACKET);
    for (int s = 0; s <= p->s_max; s++)
        p->per_cycle += hb_bracket_n(p, s);
    return 0;
}

int hb_bracket_s(const struct hb_plan *p, int64_t b)
{
    return p->s_max - (int)(b % (p->s_max + 1));
}

int64_t hb_bracket_n(const struct hb_plan *p, int s)
{
    return (int64_t)ceil((p->s_max + 1) * ipow(p->eta, s) / (s + 1) - HB_EPS);
}

int64_t hb_round_n(const struct hb_plan *p, int s, int i)
{
    return (int64_t)floor((double)hb_bracket_n(p, s) / ipow(p->eta, i) + HB_EPS);
}

int64_t hb_round_budget(const struct hb_plan *p, int s, int i)
{
    return (int64_t)floor(p->r_max / ipow(p->eta, s) * ipow(p->eta, i) + HB_EPS);
}

int64_t hb_counter_base(const struct hb_plan *p, int64_t b)
{
    int64_t per = p->s_max + 1;
    int64_t base = b / per * p->per_cycle;
    for (int64_t j = 0; j < b % per; j++)
        base += hb_bracket_n(p, p->s_max - (int)j);
    return base;
}

int64_t hb_counter_bracket(const struct hb_plan *p, int64_t counter)
{
    int64_t per = p->s_max + 1;
    int64_t b = counter / p->per_cycle * per, rem = counter % p->per_cycle;
    for (int j = 0; j < per; j++) {
        int64_t n = hb_bracket_n(p, p->s_max - j);
        if (rem < n)
            return b + j;
        rem -= n;
    }
    return b + per - 1; /* not reached */
}

void hb_label(const struct hb_plan *p, int64_t b, int round, int64_t counter, char *buf, size_t len)
{
    int s = hb_bracket_s(p, b);
    if (p->with_hb)
        snprintf(buf, len, "%lld-%d_%d_%lld", (long long)(b / (p->s_max + 1)), s, round, (long long)counter);
    else
        snprintf(buf, len, "%d_%d_%lld", s, round, (long long)counter);
}

/* A run of decimal digits (no sign, no leading zero but "0"): the value, or -1. */
static int64_t parse_uint(const char **s)
{
    const char *p = *s;
    int64_t v = 0;
    int n = 0;
    while (*p >= '0' && *p <= '9') {
        if (n == 18)
            return -1;
        v = v * 10 + (*p++ - '0');
        n++;
    }
    if (n == 0 || (n > 1 && **s == '0'))
        return -1;
    *s = p;
    return v;
}

int hb_parse(const struct hb_plan *p, const char *label, int64_t *b, int *round, int64_t *counter)
{
    if (!label)
        return 0;
    const char *s = label;
    int64_t hb = -1;
    if (p->with_hb) {
        if ((hb = parse_uint(&s)) < 0 || *s++ != '-')
            return 0;
    }
    int64_t bs, r, c;
    if ((bs = parse_uint(&s)) < 0 || *s++ != '_' || (r = parse_uint(&s)) < 0 || *s++ != '_' ||
        (c = parse_uint(&s)) < 0 || *s)
        return 0;
    int64_t br = hb_counter_bracket(p, c);
    if (bs != hb_bracket_s(p, br) || r > bs || (p->with_hb && hb != br / (p->s_max + 1)))
        return 0;
    *b = br;
    *round = (int)r;
    *counter = c;
    return 1;
}

cJSON *hb_with_budget(const cJSON *params, int64_t budget)
{
    cJSON *out = cJSON_IsObject(params) ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();
    cJSON *v = cJSON_CreateNumber((double)budget);
    if (cJSON_GetObjectItemCaseSensitive(out, HB_BUDGET_KEY))
        cJSON_ReplaceItemInObjectCaseSensitive(out, HB_BUDGET_KEY, v);
    else
        cJSON_AddItemToObject(out, HB_BUDGET_KEY, v);
    return out;
}

/* ---- the decision ---- */

struct entry {
    int64_t b, c;
    int round;
    int k; /* history index */
};

static int entry_cmp(const void *x, const void *y)
{
    const struct entry *a = x, *b = y;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    if (a->round != b->round)
        return a->round < b->round ? -1 : 1;
    if (a->c != b->c)
        return a->c < b->c ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

struct ranked_member {
    double v;
    int k;        /* history index of its trial in the round */
    int64_t c;
};

static int rank_max(const void *x, const void *y)
{
    const struct ranked_member *a = x, *b = y;
    if (a->v != b->v)
        return a->v > b->v ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

static int rank_min(const void *x, const void *y)
{
    const struct ranked_member *a = x, *b = y;
    if (a->v != b->v)
        return a->v < b->v ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

struct candidate {
    int found;
    int64_t b, c;
    int round;
    const cJSON *params;
};

static int ended(const struct tuner_result *r)
{
    return trial_status_final(r->status);
}

/* One bracket: offers its first waiting configuration (if any) to *started or
 * *unstarted, and says whether all its rounds are generated and whether it is done. */
static void bracket_scan(const struct hb_plan *p, const struct tuner_history *h, int64_t b, const struct entry *E,
                         int ne, struct candidate *started, struct candidate *unstarted, int *all_generated,
                         int *finished)
{
    int s = hb_bracket_s(p, b);
    int64_t n0 = hb_bracket_n(p, s), base = hb_counter_base(p, b);
    *all_generated = s == 0;
    *finished = 0;

    /* round 0: entries E[0 .. n_r0) have round 0, sorted by counter, deduplicated */
    int lo = 0, hi = 0;
    while (hi < ne && E[hi].round == 0)
        hi++;
    int64_t issued = hi - lo;
    if (issued < n0) {
        int64_t first = base; /* the first counter not issued */
        for (int j = lo; j < hi && E[j].c == first; j++)
            first++;
        struct candidate *slot = issued > 0 ? started : unstarted;
        if (!slot->found)
            *slot = (struct candidate){1, b, first, 0, NULL};
        return;
    }
    /* members of the current round: E[lo .. hi) (all issued) */
    struct ranked_member *rank = NULL;
    int64_t *taken = NULL;
    for (int i = 0;; i++) {
        int complete = 1;
        for (int j = lo; j < hi && complete; j++)
            complete = ended(&h->items[E[j].k]);
        if (!complete)
            break;
        if (i == s) {
            *finished = 1;
            break;
        }
        int nm = hi - lo, nr = 0;
        rank = xrealloc(rank, sizeof *rank * (size_t)(nm ? nm : 1));
        for (int j = lo; j < hi; j++) {
            const struct tuner_result *r = &h->items[E[j].k];
            if (r->has_latest && isfinite(r->latest))
                rank[nr++] = (struct ranked_member){r->latest, E[j].k, E[j].c};
        }
        qsort(rank, (size_t)nr, sizeof *rank, p->maximize ? rank_max : rank_min);
        /* the next round's entries */
        int nlo = hi, nhi = hi;
        while (nhi < ne && E[nhi].round == i + 1)
            nhi++;
        int64_t want = hb_round_n(p, s, i + 1) - (nhi - nlo);
        taken = xrealloc(taken, sizeof *taken * (size_t)(nr ? nr : 1));
        int nt = 0;
        for (int j = 0; j < nr && nt < want; j++) {
            int dup = 0;
            for (int q = nlo; q < nhi && !dup; q++)
                dup = E[q].c == rank[j].c;
            if (!dup)
                taken[nt++] = j;
        }
        if (nt == 0 && nhi == nlo) { /* nothing to promote: the bracket ends here */
            *all_generated = 1;
            *finished = 1;
            break;
        }
        if (i + 1 == s)
            *all_generated = 1;
        if (nt > 0) {
            struct candidate *slot = nhi > nlo ? started : unstarted;
            if (!slot->found)
                *slot = (struct candidate){1, b, rank[taken[0]].c, i + 1, h->items[rank[taken[0]].k].parameters};
            break;
        }
        lo = nlo;
        hi = nhi;
    }
    free(rank);
    free(taken);
}

int hb_decide(const struct hb_plan *p, const struct tuner_history *h, struct hb_next *next)
{
    memset(next, 0, sizeof *next);
    struct entry *E = xmalloc(sizeof *E * (size_t)(h->n ? h->n : 1));
    int ne = 0;
    for (int k = 0; k < h->n; k++) {
        struct entry en = {.k = k};
        if (hb_parse(p, h->items[k].label, &en.b, &en.round, &en.c))
            E[ne++] = en;
    }
    qsort(E, (size_t)ne, sizeof *E, entry_cmp);
    int nd = 0; /* the same id twice (not made by the api): the first trial counts */
    for (int j = 0; j < ne; j++)
        if (!nd || E[nd - 1].b != E[j].b || E[nd - 1].round != E[j].round || E[nd - 1].c != E[j].c)
            E[nd++] = E[j];
    ne = nd;

    struct candidate started = {0}, unstarted = {0};
    int64_t last = ne ? E[ne - 1].b : -1;
    int all_generated = 1, finished = 1;
    for (int64_t j = 0, prev = -1; j < ne;) {
        int64_t b = E[j].b, j0 = j;
        /* a bracket with no trial at all before this one (not made by the api): all of
         * it waits; only the first such one can be picked, so the others are skipped */
        if (b > prev + 1 && !unstarted.found)
            unstarted = (struct candidate){1, prev + 1, hb_counter_base(p, prev + 1), 0, NULL};
        while (j < ne && E[j].b == b)
            j++;
        bracket_scan(p, h, b, E + j0, (int)(j - j0), &started, &unstarted, &all_generated, &finished);
        prev = b;
    }
    free(E);

    struct candidate *pick = started.found ? &started : unstarted.found ? &unstarted : NULL;
    struct candidate fresh = {0};
    if (!pick) {
        int may_start = last < 0 || p->mode == HB_PARALLEL || (p->mode == HB_SERIAL && all_generated) ||
                        (p->mode == HB_STRICT && finished);
        if (!may_start)
            return 2;
        fresh = (struct candidate){1, last + 1, hb_counter_base(p, last + 1), 0, NULL};
        pick = &fresh;
    }
    next->bracket = pick->b;
    next->counter = pick->c;
    next->round = pick->round;
    next->params = pick->params;
    next->budget = hb_round_budget(p, hb_bracket_s(p, pick->b), pick->round);
    hb_label(p, pick->b, pick->round, pick->c, next->label, sizeof next->label);
    return 1;
}
