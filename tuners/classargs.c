/* classargs.c: checks of tuner.classArgs shared by the built-in tuners. NNI
 * validates them with a schema per algorithm; trialq names the key and the rule. */
#include "tuners/internal.h"

#include <math.h>
#include <string.h>

int classargs_check_keys(const cJSON *args, const char *tuner, const char *const *allowed, struct errbuf *e)
{
    if (!args || cJSON_IsNull(args))
        return 0;
    if (!cJSON_IsObject(args))
        return errf(e, "tuner.classArgs: must be a mapping of argument names to values");
    const cJSON *item;
    cJSON_ArrayForEach(item, args) {
        int ok = 0;
        for (const char *const *a = allowed; a && *a && !ok; a++)
            ok = strcmp(*a, item->string) == 0;
        if (ok)
            continue;
        if (!allowed || !*allowed)
            return errf(e, "tuner.classArgs.%s: %s takes no classArgs; remove tuner.classArgs", item->string,
                        tuner);
        char list[256] = "";
        for (const char *const *a = allowed; *a; a++) {
            size_t len = strlen(list);
            snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "", *a);
        }
        return errf(e, "tuner.classArgs.%s: unknown argument for %s (accepted: %s)", item->string, tuner, list);
    }
    return 0;
}

int classargs_seed(const cJSON *args, uint64_t *seed, struct errbuf *e)
{
    const cJSON *s = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "seed") : NULL;
    if (!s || cJSON_IsNull(s))
        return 0;
    /* numpy's default_rng takes non-negative integers only; a double holds them
     * exactly up to 2^53. */
    if (!cJSON_IsNumber(s) || s->valuedouble != floor(s->valuedouble) || s->valuedouble < 0 ||
        s->valuedouble > 9007199254740992.0)
        return errf(e, "tuner.classArgs.seed: must be an integer between 0 and 2^53");
    *seed = (uint64_t)s->valuedouble;
    return 1;
}

int classargs_optimize_mode(const cJSON *args, struct errbuf *e)
{
    const cJSON *m = cJSON_IsObject(args) ? cJSON_GetObjectItemCaseSensitive(args, "optimize_mode") : NULL;
    if (!m || cJSON_IsNull(m))
        return 0;
    if (!cJSON_IsString(m) || (strcmp(m->valuestring, "maximize") != 0 && strcmp(m->valuestring, "minimize") != 0))
        return errf(e, "tuner.classArgs.optimize_mode: must be \"maximize\" or \"minimize\"");
    return 0;
}
