/* fuzz_remote_state.c: the remote runner's state as the worker reads it
 * (workers/remote/remote.c): the answer of `tq_status` for 1 to 4 trials ("status", one
 * "<state> <rc> <end> <stopped> <n1> <n2> <n3>" line per trial, "data", then the new
 * bytes of each trial's files), on any bytes. The first byte picks how many trials the
 * worker asked about; the data part is walked as batch_apply walks it. */
#include "tests/fuzz/fuzz.h"

#include "workers/remote/remote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (size < 1)
        return 0;
    int n = 1 + data[0] % 4;
    char *text = fuzz_cstr(data + 1, size - 1); /* the worker's answer buffer is NUL-terminated */
    const char *end = text + size - 1;
    struct remote_status h[4];
    memset(h, 0, sizeof h);
    const char *p = remote_status_parse(text, end, n, h);
    if (p) {
        if (p < text || p > end)
            abort();
        for (int k = 0; k < n; k++) {
            int bad = 0;
            for (int f = 0; f < 3 && !bad; f++) {
                long long len = h[k].len[f];
                if (len < 0 || len > end - p)
                    bad = 1;
                else
                    p += len;
            }
            if (bad)
                break;
        }
    }
    free(text);
    return 0;
}
