/* classargs_typed.c: typed classArgs checks for the algorithms that came after the
 * first four tuners, usable for both sections ("tuner" and "assessor"), so that an
 * error names the key the user wrote: "assessor.classArgs.start_step: ...".
 * A JSON null counts as absent, as in classargs.c. */
#include "tuners/internal.h"

#include <math.h>
#include <string.h>

static const cJSON *arg_get(const cJSON *args, const char *key)
{
    const cJSON *v = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, key) : NULL;
    return v && !cJSON_IsNull(v) ? v : NULL;
}

int classargs_keys(const cJSON *args, const char *section, const char *algo, const char *const *allowed,
                   struct errbuf *e)
{
    if (!args || cJSON_IsNull(args))
        return 0;
    if (!cJSON_IsObject(args))
        return errf(e, "%s.classArgs: must be a mapping of argument names to values", section);
    const cJSON *item;
    cJSON_ArrayForEach(item, args) {
        int ok = 0;
        for (const char *const *a = allowed; a && *a && !ok; a++)
            ok = strcmp(*a, item->string) == 0;
        if (ok)
            continue;
        char list[256] = "";
        for (const char *const *a = allowed; a && *a; a++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", *a);
        }
        return errf(e, "%s.classArgs.%s: unknown argument for %s (accepted: %s)", section, item->string, algo,
                    list);
    }
    return 0;
}

int classargs_require(const cJSON *args, const char *section, const char *algo, const char *key, const char *what,
                      struct errbuf *e)
{
    if (arg_get(args, key))
        return 0;
    return errf(e, "%s.classArgs.%s: required by %s (%s)", section, key, algo, what);
}

int classargs_int(const cJSON *args, const char *section, const char *key, int min, int max, int *out,
                  struct errbuf *e)
{
    const cJSON *v = arg_get(args, key);
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < min ||
        v->valuedouble > max)
        return errf(e, "%s.classArgs.%s: must be an integer between %d and %d", section, key, min, max);
    *out = (int)v->valuedouble;
    return 1;
}

int classargs_number(const cJSON *args, const char *section, const char *key, double min, double max, double *out,
                     struct errbuf *e)
{
    const cJSON *v = arg_get(args, key);
    if (!v)
        return 0;
    /* !(x >= min) also catches NaN, which JSON cannot carry but a YAML .nan can */
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= min) || !(v->valuedouble <= max))
        return errf(e, "%s.classArgs.%s: must be a number between %g and %g", section, key, min, max);
    *out = v->valuedouble;
    return 1;
}

int classargs_bool(const cJSON *args, const char *section, const char *key, int *out, struct errbuf *e)
{
    const cJSON *v = arg_get(args, key);
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return errf(e, "%s.classArgs.%s: must be true or false", section, key);
    *out = cJSON_IsTrue(v);
    return 1;
}

int classargs_choice(const cJSON *args, const char *section, const char *key, const char *const *choices, int *out,
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
    return errf(e, "%s.classArgs.%s: must be %s", section, key, list);
}
