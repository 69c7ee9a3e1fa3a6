/* classargs.c: the checks of classArgs, for the built-in tuners and assessors alike.
 * NNI validates them with a schema per algorithm; trialq names the key and the rule.
 * `where` is the path of the mapping being checked (CA_TUNER, CA_ASSESSOR, or a
 * nested one such as CA_TUNER ".tpe_args"), so that an error names the key the user
 * wrote: "assessor.classArgs.start_step: ...". A JSON null counts as absent. */
#include "tuners/internal.h"

#include <math.h>
#include <string.h>

static const cJSON *arg_get(const cJSON *args, const char *key)
{
    const cJSON *v = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, key) : NULL;
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static int ca_require(const cJSON *args, const char *where, const char *algo, const char *key, const char *what,
                      struct errbuf *e)
{
    if (arg_get(args, key))
        return 0;
    return errf(e, "%s.%s: required by %s (%s)", where, key, algo, what);
}

static int ca_int(const cJSON *args, const char *where, const char *key, int min, int max, int *out,
                  struct errbuf *e)
{
    const cJSON *v = arg_get(args, key);
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
        return errf(e, "%s.%s: must be an integer between %d and %d", where, key, min, max);
    if (v->valuedouble < min || v->valuedouble > max)
        return errf(e, "%s.%s: must be an integer between %d and %d, got %.17g", where, key, min, max,
                    v->valuedouble);
    *out = (int)v->valuedouble;
    return 1;
}

static int ca_number(const cJSON *args, const char *where, const char *key, double min, double max, double *out,
                     struct errbuf *e)
{
    const cJSON *v = arg_get(args, key);
    if (!v)
        return 0;
    /* !(x >= min) also catches NaN, which JSON cannot carry but a YAML .nan can */
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= min) || !(v->valuedouble <= max)) {
        if (isinf(max))
            return errf(e, "%s.%s: must be a number >= %g", where, key, min);
        return errf(e, "%s.%s: must be a number between %g and %g", where, key, min, max);
    }
    *out = v->valuedouble;
    return 1;
}

static int ca_bool(const cJSON *args, const char *where, const char *key, int *out, struct errbuf *e)
{
    const cJSON *v = arg_get(args, key);
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return errf(e, "%s.%s: must be true or false", where, key);
    *out = cJSON_IsTrue(v);
    return 1;
}

static int ca_choice(const cJSON *args, const char *where, const char *key, const char *const *choices, int *out,
                     struct errbuf *e)
{
    const cJSON *v = arg_get(args, key);
    if (!v)
        return 0;
    int n = 0;
    for (; choices[n]; n++)
        if (cJSON_IsString(v) && strcmp(v->valuestring, choices[n]) == 0) {
            *out = n;
            return 1;
        }
    char list[256] = "";
    for (int i = 0; i < n; i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s\"%s\"", i == 0 ? "" : i == n - 1 ? " or " : ", ", choices[i]);
    }
    return errf(e, "%s.%s: must be %s", where, key, list);
}

const char *const classargs_modes[] = {"maximize", "minimize", NULL};

int classargs_seed(const cJSON *args, uint64_t *seed, struct errbuf *e)
{
    const cJSON *s = arg_get(args, "seed");
    if (!s)
        return 0;
    /* numpy's default_rng takes non-negative integers only; a double holds them
     * exactly up to 2^53. */
    if (!cJSON_IsNumber(s) || s->valuedouble != floor(s->valuedouble) || s->valuedouble < 0 ||
        s->valuedouble > 9007199254740992.0)
        return errf(e, CA_TUNER ".seed: must be an integer between 0 and 2^53");
    *seed = (uint64_t)s->valuedouble;
    return 1;
}

int classargs_keys(const cJSON *args, const char *where, const char *algo, const struct ca_rule *rules, int n,
                   struct errbuf *e)
{
    if (!args || cJSON_IsNull(args))
        return 0;
    if (!cJSON_IsObject(args))
        return errf(e, "%s: must be a mapping of argument names to values", where);
    const cJSON *item;
    cJSON_ArrayForEach(item, args) {
        int ok = 0;
        for (int i = 0; i < n && !ok; i++)
            ok = strcmp(rules[i].key, item->string) == 0;
        if (ok)
            continue;
        if (n == 0)
            return errf(e, "%s.%s: %s takes no classArgs; remove %s", where, item->string, algo, where);
        char list[256] = "";
        for (int i = 0; i < n; i++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", rules[i].key);
        }
        return errf(e, "%s.%s: unknown argument%s%s (accepted: %s)", where, item->string, algo ? " for " : "",
                    algo ? algo : "", list);
    }
    return 0;
}

static int check_rule(const cJSON *args, const char *where, const char *algo, const struct ca_rule *r,
                      struct errbuf *e)
{
    if (r->required_what && ca_require(args, where, algo, r->key, r->required_what, e) < 0)
        return -1;
    switch (r->kind) {
    case CA_INT:
        return ca_int(args, where, r->key, (int)r->min, (int)r->max, r->out, e);
    case CA_NUMBER:
        return ca_number(args, where, r->key, r->min, r->max, r->out, e);
    case CA_BOOL:
        return ca_bool(args, where, r->key, r->out, e);
    case CA_CHOICE:
        return ca_choice(args, where, r->key, r->choices, r->out, e);
    case CA_SEED:
        return classargs_seed(args, r->out, e);
    case CA_KEY:
        break;
    }
    return 0;
}

int classargs_rules(const cJSON *args, const char *where, const char *algo, const struct ca_rule *rules, int n,
                    struct errbuf *e)
{
    int lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        lo = rules[i].pass < lo ? rules[i].pass : lo;
        hi = rules[i].pass > hi ? rules[i].pass : hi;
    }
    for (int pass = lo; pass <= hi; pass++)
        for (int i = 0; i < n; i++)
            if (rules[i].pass == pass && check_rule(args, where, algo, &rules[i], e) < 0)
                return -1;
    return 0;
}

int classargs_check(const cJSON *args, const char *where, const char *algo, const struct ca_rule *rules, int n,
                    struct errbuf *e)
{
    if (classargs_keys(args, where, algo, rules, n, e) < 0)
        return -1;
    return classargs_rules(args, where, algo, rules, n, e);
}
