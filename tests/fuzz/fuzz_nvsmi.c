/* fuzz_nvsmi.c: the parser of `nvidia-smi -q -x` XML (common/nvsmi.c), which the workers
 * run on every host every 5 s, on any bytes. Every GPU it returns has its fields in
 * range: NUL-terminated strings, memory and utilisation either unknown (-1) or >= 0. */
#include "tests/fuzz/fuzz.h"

#include "common/nvsmi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    struct gpu_info *g = NULL;
    int n = 0;
    struct errbuf e;
    if (gpu_parse_nvsmi((const char *)data, size, &g, &n, &e) == 0) {
        if (n < 0 || (n > 0 && !g))
            abort();
        for (int i = 0; i < n; i++) {
            if (!memchr(g[i].uuid, 0, sizeof g[i].uuid) || !memchr(g[i].name, 0, sizeof g[i].name) ||
                g[i].mem_total < -1 || g[i].mem_used < -1 || g[i].active_procs < 0)
                abort();
        }
    } else if (!memchr(e.msg, 0, sizeof e.msg)) {
        abort();
    }
    free(g);
    return 0;
}
