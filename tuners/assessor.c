/* assessor.c: the built-in assessors, looked up by NNI name or alias. Adding one is a
 * file defining its assessor_ops and a line here (and in the names below). */
#include "tuners/assessor.h"
#include "tuners/internal.h"

#include <strings.h>

static const struct assessor_ops *const builtin[] = {
    &assessor_medianstop,
    &assessor_curvefitting,
};

const struct assessor_ops *assessor_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
        const struct assessor_ops *a = builtin[i];
        if (strcasecmp(a->name, name) == 0)
            return a;
        for (const char *const *al = a->aliases; al && *al; al++)
            if (strcasecmp(*al, name) == 0)
                return a;
    }
    return NULL;
}

const struct assessor_ops *assessor_builtin(int i)
{
    return i >= 0 && (size_t)i < sizeof builtin / sizeof builtin[0] ? builtin[i] : NULL;
}

const char *assessor_names(void)
{
    /* a literal, as tuner_names(); the unit test checks that it lists every entry */
    return "Medianstop, Curvefitting";
}
