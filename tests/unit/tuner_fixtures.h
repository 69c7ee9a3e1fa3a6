/* tuner_fixtures.h: helpers the tuner unit tests share (include after cmocka.h). */
#ifndef TRIALQ_TUNER_FIXTURES_H
#define TRIALQ_TUNER_FIXTURES_H

#include <cjson/cJSON.h>

#include "bench/objectives.h"
#include "tuners/internal.h"

/* A history being built trial by trial, as the api hands it to a tuner. */
struct hist {
    struct tuner_result *items;
    cJSON **params;
    int n, cap;
};

static inline struct ss_space *parse_space(const char *text)
{
    cJSON *j = cJSON_Parse(text);
    assert_non_null(j);
    struct ss_space *s = NULL;
    struct errbuf e = {{0}};
    if (ss_parse(j, &s, NULL, 0, &e) != 0)
        fail_msg("unexpected search-space error: %s", e.msg);
    cJSON_Delete(j);
    return s;
}

/* Creates a tuner; class_args is JSON text or NULL. */
static inline void *create(const struct tuner_ops *ops, const char *class_args, const struct ss_space *s, uint64_t seed)
{
    cJSON *args = class_args ? cJSON_Parse(class_args) : NULL;
    assert_true(!class_args || args);
    void *st = NULL;
    struct errbuf e = {{0}};
    if (ops->create(args, s, seed, &st, &e) != 0)
        fail_msg("unexpected create error: %s", e.msg);
    cJSON_Delete(args);
    return st;
}

/* ops->create with class_args (JSON text) over the space (JSON text) must fail with an
 * error containing want, and leave no state. */
static inline void create_must_fail(const struct tuner_ops *ops, const char *space_json, const char *class_args,
                                    const char *want)
{
    struct ss_space *s = parse_space(space_json);
    cJSON *a = cJSON_Parse(class_args);
    assert_non_null(a);
    void *st = NULL;
    struct errbuf e = {{0}};
    assert_int_equal(ops->create(a, s, 1, &st, &e), -1);
    assert_null(st);
    if (!strstr(e.msg, want))
        fail_msg("%s '%s': got '%s', want '%s'", ops->name, class_args, e.msg, want);
    cJSON_Delete(a);
    ss_free(s);
}

static inline void hist_add(struct hist *h, int64_t parameter_id, cJSON *params, int has_value, double value,
                     const char *status)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 32;
        h->items = xrealloc(h->items, sizeof *h->items * (size_t)h->cap);
        h->params = xrealloc(h->params, sizeof *h->params * (size_t)h->cap);
    }
    h->params[h->n] = params;
    h->items[h->n] = (struct tuner_result){.parameter_id = parameter_id, .parameters = params,
                                           .has_value = has_value, .value = value, .status = status};
    h->n++;
}

static inline void hist_free(struct hist *h)
{
    for (int i = 0; i < h->n; i++)
        cJSON_Delete(h->params[i]);
    free(h->params);
    free(h->items);
    memset(h, 0, sizeof *h);
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double num(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v))
        fail_msg("%s is not a number", key);
    return v->valuedouble;
}

static inline double branin_params(const cJSON *p)
{
    double x[2] = {num(p, "x1"), num(p, "x2")};
    return obj_branin(x);
}

/* the suggestion of ops for index with history h (NULL: none), which must be one */
static inline cJSON *fx_suggest(const struct tuner_ops *ops, void *st, int64_t index, const struct hist *h)
{
    struct tuner_history th = {0};
    if (h)
        th = (struct tuner_history){.n = h->n, .items = h->items};
    cJSON *p = NULL;
    struct errbuf e = {{0}};
    int rc = ops->suggest(st, index, h ? &th : NULL, &p, &e);
    if (rc != 1)
        fail_msg("%s: suggest(%lld) returned %d: %s", ops->name, (long long)index, rc, rc < 0 ? e.msg : "no more");
    assert_non_null(p);
    return p;
}

#endif
