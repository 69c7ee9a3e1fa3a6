/* pycheck.c: asks the configured python whether it can load an algorithm's class, as
 * NNI's dispatcher will (nnictl create, nnictl algo register). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"

#define IMPORT_TIMEOUT_MS 60000

const char *py_interpreter(void)
{
    const char *py = getenv("TRIALQ_PYTHON");
    return py && *py ? py : "python3";
}

int py_class_check(const char *cls, const char *code_dir, int import, char *why, size_t len)
{
    /* a module that hangs at import (I/O on a dead mount) must not hang nnictl */
    const char *tv = getenv("TRIALQ_IMPORT_TIMEOUT"); /* seconds; for tests */
    int timeout_ms = tv && atoi(tv) > 0 ? atoi(tv) * 1000 : IMPORT_TIMEOUT_MS;
    /* sys.path as the dispatcher has it: not nnictl's working directory (python -c puts
     * it first), codeDirectory appended as NNI appends it */
    char *argv[] = {(char *)py_interpreter(), "-c",
                    "import importlib, importlib.util, sys\n"
                    "if sys.path and sys.path[0] == '':\n"
                    "    del sys.path[0]\n"
                    "cls, d, full = sys.argv[1:4]\n"
                    "if d:\n"
                    "    sys.path.append(d)\n"
                    "m, c = cls.rsplit('.', 1)\n"
                    "if full == '1':\n"
                    "    getattr(importlib.import_module(m), c)\n"
                    "elif importlib.util.find_spec(m) is None:\n"
                    "    sys.exit('ModuleNotFoundError: No module named %r' % m)\n",
                    (char *)cls, (char *)(code_dir ? code_dir : ""), import ? "1" : "0", NULL};
    char *err = NULL;
    int st = run_capture(argv, timeout_ms, NULL, &err);
    if (st == -2)
        snprintf(why, len, "no answer in %d s", timeout_ms / 1000);
    else if (st != 0) {
        /* the last line of the traceback says why */
        size_t n = err ? strlen(err) : 0;
        while (n && (err[n - 1] == '\n' || err[n - 1] == ' '))
            err[--n] = '\0';
        const char *last = n ? strrchr(err, '\n') : NULL;
        snprintf(why, len, "%s", last ? last + 1 : n ? err : "failed");
    }
    free(err);
    return st == 0 ? 0 : -1;
}
