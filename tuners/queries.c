/* queries.c: small questions about a tuner history and a search space that several
 * tuners ask (TPE, Anneal, Evolution, Metis, Random). */
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void result_stats(const struct tuner_history *hist, double sign, struct result_stats *out)
{
    *out = (struct result_stats){.min = INFINITY, .max = -INFINITY};
    for (int i = 0; hist && i < hist->n; i++) {
        const struct tuner_result *it = &hist->items[i];
        if (it->has_value && isfinite(it->value)) {
            double v = sign * it->value;
            out->min = v < out->min ? v : out->min;
            out->max = v > out->max ? v : out->max;
            out->sum += v;
            out->n_results++;
        } else if (!it->has_value && !trial_status_final(it->status)) {
            out->n_pending++;
        }
    }
}

/* NNI's _spec_never_dup, negated: one unquantized numeric parameter anywhere (even in
 * a nested choice) makes an exact repeat practically impossible. */
int space_may_repeat(const struct ss_space *s)
{
    for (int i = 0; i < s->n; i++) {
        const struct ss_param *p = &s->params[i];
        if (p->type != SS_CHOICE && p->type != SS_RANDINT && p->q == 0)
            return 0;
        for (int k = 0; p->sub && k < p->n_choices; k++)
            if (!space_may_repeat(p->sub[k]))
                return 0;
    }
    return 1;
}

void history_each_result(const struct tuner_history *hist, double sign, history_visit visit, void *ctx)
{
    for (int i = 0; hist && i < hist->n; i++) {
        const struct tuner_result *it = &hist->items[i];
        if (it->has_value && isfinite(it->value))
            visit(ctx, it->parameters, sign * it->value);
    }
}

void history_each_pending(const struct tuner_history *hist, double loss, history_visit visit, void *ctx)
{
    for (int i = 0; hist && i < hist->n; i++) {
        const struct tuner_result *it = &hist->items[i];
        if (!it->has_value && !trial_status_final(it->status))
            visit(ctx, it->parameters, loss);
    }
}

int observed_value(const struct ss_param *p, const cJSON *v, double *out)
{
    if (p->type == SS_CHOICE) {
        int k = choice_index(p, v);
        if (k < 0)
            return -1;
        *out = k;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return -1;
    double x = v->valuedouble;
    if (p->type == SS_RANDINT) {
        if (x != floor(x) || x < p->a || x >= p->b)
            return -1;
        x -= p->a;
    }
    *out = x;
    return 0;
}

int history_has(const struct tuner_history *hist, const cJSON *params)
{
    uint64_t h = 0;
    int hashed = 0;
    for (int i = 0; hist && i < hist->n; i++) {
        const struct tuner_result *it = &hist->items[i];
        if (!it->parameters)
            continue;
        if (it->has_hash) { /* a different hash: a different object (json_hash64) */
            if (!hashed) {
                h = json_hash64(params);
                hashed = 1;
            }
            if (it->params_hash != h)
                continue;
        }
        if (json_same(it->parameters, params))
            return 1;
    }
    return 0;
}

int choice_index(const struct ss_param *p, const cJSON *v)
{
    if (!v)
        return -1;
    if (p->sub) {
        const cJSON *name = cJSON_IsObject(v) ? cJSON_GetObjectItemCaseSensitive(v, "_name") : NULL;
        if (!cJSON_IsString(name))
            return -1;
        for (int k = 0; k < p->n_choices; k++) {
            const cJSON *opt = cJSON_GetObjectItemCaseSensitive(p->choices[k], "_name");
            if (strcmp(opt->valuestring, name->valuestring) == 0)
                return k;
        }
        return -1;
    }
    for (int k = 0; k < p->n_choices; k++)
        if (cJSON_Compare(p->choices[k], v, 1))
            return k;
    return -1;
}
