/* unit_tmpdir.h: a unit test program's scratch directory: created before its tests
 * (mkdtemp on the template), removed after them, its failure to go a failure. */
#ifndef TRIALQ_UNIT_TMPDIR_H
#define TRIALQ_UNIT_TMPDIR_H

#include <stdlib.h>

#include "common/common.h"

/* Runs the group (cmocka_run_group_tests' name and count) in a fresh dir tmpl names. */
#define run_in_tmpdir(tmpl, tests) run_in_tmpdir_n(tmpl, #tests, tests, sizeof tests / sizeof tests[0])

static inline int run_in_tmpdir_n(char *tmpl, const char *name, const struct CMUnitTest *tests, size_t n)
{
    if (!mkdtemp(tmpl))
        return 1;
    int rc = _cmocka_run_group_tests(name, tests, n, NULL, NULL);
    char *rm = xasprintf("rm -rf '%s'", tmpl);
    if (system(rm) != 0)
        rc = 1;
    free(rm);
    return rc;
}

#endif
