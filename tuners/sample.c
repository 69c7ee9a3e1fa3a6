/* sample.c: NNI's random sampling of a search space (random_tuner.suggest followed
 * by formatting.deformat_parameters): draw in the internal space (uniform in
 * [low, high) or in log space, normal(mu, sigma)), then exp / q-round / clip. */
#include "tuners/searchspace.h"

#include <float.h>
#include <math.h>

/* Python's round(): ties go to the even neighbour. nearbyint() does exactly that in
 * the default rounding mode (FE_TONEAREST), which trialq never changes. Python
 * returns an int, so a zero never keeps its sign. */
static double round_half_even(double x)
{
    double r = nearbyint(x);
    return r == 0.0 ? 0.0 : r;
}

double ss_deformat(const struct ss_param *p, double v)
{
    if (ss_type_is_log(p->type))
        v = exp(v);
    if (p->q > 0)
        v = round_half_even(v / p->q) * p->q;
    if (p->type == SS_QUNIFORM || p->type == SS_QLOGUNIFORM) {
        /* max then min, as NNI applies the clip */
        if (v < p->a)
            v = p->a;
        if (v > p->b)
            v = p->b;
    }
    /* the checks of searchspace.c keep draws within 16 sigma finite; a draw beyond
     * (about one in 10^57) is not let out as inf, which JSON cannot carry */
    if (isinf(v))
        v = copysign(DBL_MAX, v);
    return v;
}

static void sample_into(cJSON *obj, const struct ss_space *s, struct rng *r);

cJSON *ss_sample_param(const struct ss_param *p, struct rng *r)
{
    switch (p->type) {
    case SS_CHOICE: {
        int k = (int)rng_below(r, (uint64_t)p->n_choices);
        if (!p->sub)
            return cJSON_Duplicate(p->choices[k], 1);
        cJSON *obj = cJSON_CreateObject();
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p->choices[k], "_name");
        cJSON_AddItemToObject(obj, "_name", cJSON_Duplicate(name, 1));
        sample_into(obj, p->sub[k], r);
        return obj;
    }
    case SS_RANDINT:
        /* integral double: cJSON prints it as a JSON integer */
        return cJSON_CreateNumber(p->a + (double)rng_below(r, (uint64_t)p->n_choices));
    default:
        break;
    }
    double v;
    if (ss_type_is_normal(p->type)) {
        v = p->a + p->b * rng_normal(r);
    } else {
        double lo = p->a, hi = p->b;
        if (ss_type_is_log(p->type)) {
            lo = log(lo);
            hi = log(hi);
        }
        v = lo + (hi - lo) * rng_uniform(r);  /* numpy's uniform(low, high) */
    }
    return cJSON_CreateNumber(ss_deformat(p, v));
}

static void sample_into(cJSON *obj, const struct ss_space *s, struct rng *r)
{
    for (int i = 0; i < s->n; i++)
        cJSON_AddItemToObject(obj, s->params[i].name, ss_sample_param(&s->params[i], r));
}

cJSON *ss_sample(const struct ss_space *s, struct rng *r)
{
    cJSON *obj = cJSON_CreateObject();
    sample_into(obj, s, r);
    return obj;
}
