/* fuzz.h: what the libFuzzer targets of tests/fuzz share. Each target is one
 * LLVMFuzzerTestOneInput over one parser; a target that needs files works in one
 * temporary directory of its own, made on the first input and removed at exit, and
 * leaves no state from one input to the next. Logs below ERROR are off (the parsers
 * warn about bad input by design: that is not a finding, and it slows the runs). */
#ifndef TRIALQ_FUZZ_H
#define TRIALQ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *fuzz_dir_path;

static inline void fuzz_dir_remove(void)
{
    if (fuzz_dir_path)
        rm_rf(fuzz_dir_path);
}

/* The target's temporary directory (under $TMPDIR), made once per process. */
static inline const char *fuzz_dir(void)
{
    if (!fuzz_dir_path) {
        const char *t = getenv("TMPDIR");
        char *tmpl = xasprintf("%s/trialq-fuzz.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmpl))
            abort();
        fuzz_dir_path = tmpl;
        atexit(fuzz_dir_remove);
    }
    return fuzz_dir_path;
}

static inline void fuzz_quiet(void)
{
    static int done;
    if (!done) {
        log_set_level(LOG_ERROR);
        done = 1;
    }
}

/* The input as a NUL-terminated copy (for parsers of C strings). Caller frees. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = xmalloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

#endif
