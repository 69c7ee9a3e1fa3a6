/* searchspace.c: parses and validates an NNI search space (spec §7.3). NNI's
 * validation.py only logs most of these errors and then fails or misbehaves later in
 * a tuner; trialq rejects them up front, naming the key and the rule. */
#include "tuners/searchspace.h"

#include "common/json.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Integers above 2^53 are not exact in a double, which is all JSON gives us. */
#define MAX_EXACT_INT 9007199254740992.0

static const struct type_info {
    const char *name;
    enum ss_type type;
    int nvalues;        /* exact length of _value; 0 for choice (any non-empty list) */
    const char *shape;  /* how _value reads, for messages */
} types[] = {
    {"choice", SS_CHOICE, 0, "[option, ...]"},
    {"randint", SS_RANDINT, 2, "[lower, upper]"},
    {"uniform", SS_UNIFORM, 2, "[low, high]"},
    {"quniform", SS_QUNIFORM, 3, "[low, high, q]"},
    {"loguniform", SS_LOGUNIFORM, 2, "[low, high]"},
    {"qloguniform", SS_QLOGUNIFORM, 3, "[low, high, q]"},
    {"normal", SS_NORMAL, 2, "[mu, sigma]"},
    {"qnormal", SS_QNORMAL, 3, "[mu, sigma, q]"},
    {"lognormal", SS_LOGNORMAL, 2, "[mu, sigma]"},
    {"qlognormal", SS_QLOGNORMAL, 3, "[mu, sigma, q]"},
};
#define NTYPES (sizeof types / sizeof types[0])

const char *ss_type_name(enum ss_type t)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (types[i].type == t)
            return types[i].name;
    return "?";
}

int ss_type_is_normal(enum ss_type t)
{
    return t == SS_NORMAL || t == SS_QNORMAL || t == SS_LOGNORMAL || t == SS_QLOGNORMAL;
}

int ss_type_is_log(enum ss_type t)
{
    return t == SS_LOGUNIFORM || t == SS_QLOGUNIFORM || t == SS_LOGNORMAL || t == SS_QLOGNORMAL;
}

struct parse_ctx {
    char *errpath;
    size_t errpath_len;
    struct errbuf *e;
};

/* Reports "<path>: <what>" and records the path. Returns -1. */
static int fail(struct parse_ctx *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct parse_ctx *c, const char *path, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (c->errpath && c->errpath_len)
        snprintf(c->errpath, c->errpath_len, "%s", path);
    return errf(c->e, "%s: %s", *path ? path : "search space", what);
}

static const char *json_kind(const cJSON *j)
{
    if (!j || cJSON_IsInvalid(j))
        return "nothing";
    if (cJSON_IsNull(j))
        return "null";
    if (cJSON_IsBool(j))
        return "a boolean";
    if (cJSON_IsNumber(j))
        return "a number";
    if (cJSON_IsString(j))
        return "a string";
    if (cJSON_IsArray(j))
        return "a list";
    return "an object";
}

static int is_nested_option(const cJSON *opt)
{
    return cJSON_IsObject(opt) && cJSON_GetObjectItemCaseSensitive(opt, "_name") != NULL;
}

static int parse_space(struct parse_ctx *c, const cJSON *obj, const char *prefix, struct ss_space *out);

static int parse_choice(struct parse_ctx *c, const cJSON *values, struct ss_param *p)
{
    int n = cJSON_GetArraySize(values);
    if (n == 0)
        return fail(c, p->path, "choice needs at least one option in _value");
    p->n_choices = n;
    p->choices = xcalloc((size_t)n, sizeof *p->choices);
    int nested = 0, plain = -1, first_nested = -1, i = 0;
    const cJSON *opt;
    cJSON_ArrayForEach(opt, values) {
        p->choices[i] = (cJSON *)opt;
        if (is_nested_option(opt)) {
            nested++;
            if (first_nested < 0)
                first_nested = i;
        } else if (plain < 0) {
            plain = i;
        }
        i++;
    }
    if (nested == 0)
        return 0;
    if (nested != n)
        return fail(c, p->path,
                    "option %d is an object with \"_name\" (a nested space) but option %d is not; "
                    "in a nested choice every option must be an object with \"_name\"",
                    first_nested, plain);
    p->sub = xcalloc((size_t)n, sizeof *p->sub);
    for (i = 0; i < n; i++) {
        char *opath = xasprintf("%s[%d]", p->path, i);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(p->choices[i], "_name");
        int rc = 0;
        if (!cJSON_IsString(name))
            rc = fail(c, opath, "\"_name\" must be a string, got %s", json_kind(name));
        if (rc == 0) {
            p->sub[i] = xcalloc(1, sizeof *p->sub[i]);
            rc = parse_space(c, p->choices[i], opath, p->sub[i]);
        }
        free(opath);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Checks that _value[i] is a finite number and returns it in *v. */
static int value_number(struct parse_ctx *c, const struct ss_param *p, const cJSON *values, int i, double *v)
{
    const cJSON *x = cJSON_GetArrayItem(values, i);
    if (!cJSON_IsNumber(x))
        return fail(c, p->path, "_value[%d] of %s must be a number, got %s", i, ss_type_name(p->type),
                    json_kind(x));
    if (!isfinite(x->valuedouble))
        return fail(c, p->path, "_value[%d] of %s must be a finite number", i, ss_type_name(p->type));
    *v = x->valuedouble;
    return 0;
}

static int parse_numeric(struct parse_ctx *c, const struct type_info *t, const cJSON *values, struct ss_param *p)
{
    int n = cJSON_GetArraySize(values);
    if (n != t->nvalues)
        return fail(c, p->path, "%s takes exactly %d values %s in _value, got %d", t->name, t->nvalues,
                    t->shape, n);
    double v[3] = {0, 0, 0};
    for (int i = 0; i < n; i++)
        if (value_number(c, p, values, i, &v[i]) < 0)
            return -1;
    p->a = v[0];
    p->b = v[1];
    p->q = n == 3 ? v[2] : 0;
    /* the values as the user wrote them (shortest form) for the messages */
    char s0[32], s1[32], s2[32];
    json_format_double(v[0], s0, sizeof s0);
    json_format_double(v[1], s1, sizeof s1);
    json_format_double(v[2], s2, sizeof s2);

    if (p->type == SS_RANDINT) {
        for (int i = 0; i < 2; i++)
            if (v[i] != floor(v[i]) || fabs(v[i]) > MAX_EXACT_INT)
                return fail(c, p->path, "randint bounds must be integers, got _value[%d] = %s", i, i ? s1 : s0);
        if (v[0] >= v[1])
            return fail(c, p->path,
                        "randint needs lower < upper (the upper bound is exclusive), got [%s, %s]",
                        s0, s1);
        if (v[1] - v[0] > INT_MAX)
            return fail(c, p->path, "randint range [%s, %s) has more than %d values", s0, s1, INT_MAX);
        p->n_choices = (int)(v[1] - v[0]);
        return 0;
    }
    if (ss_type_is_normal(p->type)) {
        if (!(v[1] > 0))
            return fail(c, p->path, "%s needs sigma > 0, got sigma = %s", t->name, s1);
        /* samples and the tuners' arithmetic reach mu +- a few sigma: keep them finite */
        if (!isfinite(fabs(v[0]) + 16 * v[1]))
            return fail(c, p->path, "%s: mu = %s and sigma = %s are too large (mu +- 16 sigma is not a finite "
                        "number)", t->name, s0, s1);
        if (ss_type_is_log(p->type) && !isfinite(exp(v[0] + 16 * v[1])))
            return fail(c, p->path, "%s: mu = %s and sigma = %s are too large (exp(mu + 16 sigma) is beyond a "
                        "double; mu + 16 sigma must be at most 709)", t->name, s0, s1);
    } else {
        if (!(v[0] < v[1]))
            return fail(c, p->path, "%s needs low < high, got [%s, %s]", t->name, s0, s1);
        /* every tuner computes high - low (and a little more: TPE's prior, GP's scaling) */
        if (!ss_type_is_log(p->type) && !isfinite(4 * (v[1] - v[0])))
            return fail(c, p->path, "%s range [%s, %s] is too wide: 4 * (high - low) is not a finite number",
                        t->name, s0, s1);
        if (ss_type_is_log(p->type) && !(v[0] > 0))
            return fail(c, p->path, "%s needs low > 0 (it is sampled in log space), got low = %s", t->name,
                        s0);
    }
    if (n == 3 && !(v[2] > 0))
        return fail(c, p->path, "%s needs q > 0, got q = %s", t->name, s2);
    return 0;
}

static int parse_param(struct parse_ctx *c, const cJSON *spec, struct ss_param *p)
{
    if (!cJSON_IsObject(spec))
        return fail(c, p->path, "must be an object {\"_type\": ..., \"_value\": [...]}, got %s", json_kind(spec));
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(spec, "_type");
    if (!type)
        return fail(c, p->path, "missing \"_type\"");
    if (!cJSON_IsString(type))
        return fail(c, p->path, "\"_type\" must be a string, got %s", json_kind(type));
    const struct type_info *t = NULL;
    for (size_t i = 0; i < NTYPES && !t; i++)
        if (strcmp(types[i].name, type->valuestring) == 0)
            t = &types[i];
    if (!t) {
        /* NNI compares _type exactly; a near miss deserves a hint. */
        for (size_t i = 0; i < NTYPES; i++)
            if (strcasecmp(types[i].name, type->valuestring) == 0)
                return fail(c, p->path, "unknown _type \"%s\" (did you mean \"%s\"? types are lower case)",
                            type->valuestring, types[i].name);
        return fail(c, p->path,
                    "unknown _type \"%s\" (expected choice, randint, uniform, quniform, loguniform, "
                    "qloguniform, normal, qnormal, lognormal or qlognormal)",
                    type->valuestring);
    }
    p->type = t->type;
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(spec, "_value");
    if (!values)
        return fail(c, p->path, "missing \"_value\"");
    if (!cJSON_IsArray(values))
        return fail(c, p->path, "\"_value\" must be a list %s, got %s", t->shape, json_kind(values));
    if (t->type == SS_CHOICE)
        return parse_choice(c, values, p);
    return parse_numeric(c, t, values, p);
}

/* Parses the parameters of `obj` (the top level, or a nested option, whose "_name"
 * is not a parameter) into `out`. */
static int by_name_then_place(const void *a, const void *b)
{
    const struct ss_param *x = *(const struct ss_param *const *)a, *y = *(const struct ss_param *const *)b;
    int r = strcmp(x->name, y->name);
    return r ? r : (x > y) - (x < y);
}

static int parse_space(struct parse_ctx *c, const cJSON *obj, const char *prefix, struct ss_space *out)
{
    const cJSON *item;
    int n = 0;
    cJSON_ArrayForEach(item, obj)
        if (!prefix || strcmp(item->string, "_name") != 0)
            n++;
    out->params = xcalloc((size_t)n, sizeof *out->params);
    cJSON_ArrayForEach(item, obj) {
        if (prefix && strcmp(item->string, "_name") == 0)
            continue;
        struct ss_param *p = &out->params[out->n++];
        p->name = xstrdup(item->string);
        p->path = prefix ? xasprintf("%s.%s", prefix, item->string) : xstrdup(item->string);
        if (parse_param(c, item, p) < 0)
            return -1;
    }
    /* cJSON keeps duplicate keys; Python would silently keep the last one. Sorted, a
     * repeat is next to its first (a scan per parameter was O(n^2): 40,000 took 8 s) */
    if (out->n > 1) {
        const struct ss_param **sorted = xcalloc((size_t)out->n, sizeof *sorted);
        for (int i = 0; i < out->n; i++)
            sorted[i] = &out->params[i];
        qsort(sorted, (size_t)out->n, sizeof *sorted, by_name_then_place);
        const struct ss_param *dup = NULL;
        for (int i = 1; i < out->n; i++)
            if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0 && (!dup || sorted[i] < dup))
                dup = sorted[i]; /* the first repeat in the file */
        free(sorted);
        if (dup)
            return fail(c, dup->path, "duplicate key");
    }
    return 0;
}

int ss_parse(const cJSON *json, struct ss_space **out, char *errpath, size_t errpath_len, struct errbuf *e)
{
    struct parse_ctx c = {errpath, errpath_len, e};
    *out = NULL;
    if (errpath && errpath_len)
        errpath[0] = '\0';
    if (!json || cJSON_IsInvalid(json))
        return fail(&c, "", "missing or not valid JSON");
    if (!cJSON_IsObject(json))
        return fail(&c, "", "must be a JSON object of {\"<name>\": {\"_type\": ..., \"_value\": [...]}}, got %s",
                    json_kind(json));
    struct ss_space *s = xcalloc(1, sizeof *s);
    /* Parse the copy so that ss_param.choices can point into memory the space owns. */
    s->json = cJSON_Duplicate(json, 1);
    if (!s->json) {
        free(s);
        return fail(&c, "", "out of memory copying the search space");
    }
    if (parse_space(&c, s->json, NULL, s) < 0) {
        ss_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

struct ss_space *ss_raw(const cJSON *json)
{
    struct ss_space *s = xcalloc(1, sizeof *s);
    s->json = json ? cJSON_Duplicate(json, 1) : cJSON_CreateObject();
    return s;
}

static void free_space(struct ss_space *s)
{
    for (int i = 0; i < s->n; i++) {
        struct ss_param *p = &s->params[i];
        if (p->sub) {
            for (int k = 0; k < p->n_choices; k++)
                if (p->sub[k]) {
                    free_space(p->sub[k]);
                    free(p->sub[k]);
                }
            free(p->sub);
        }
        free(p->choices);
        free(p->name);
        free(p->path);
    }
    free(s->params);
}

void ss_free(struct ss_space *s)
{
    if (!s)
        return;
    free_space(s);
    cJSON_Delete(s->json);
    free(s);
}
