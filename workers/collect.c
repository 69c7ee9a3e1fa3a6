/* collect.c: NNI's two metric framings, parsed incrementally and stored idempotently.
 *   .nni/metrics: "ME" + 6-digit decimal length + payload (payload ends with '\n')
 *   stdout:       lines NNISDK_MEb'<metric json>' */
#include <stdlib.h>
#include <string.h>

#include "workers/worker.h"

#define MAX_RECORD 1000000

static int store_one(struct db *db, const char *trial_id, int attempt, const char *json, size_t len,
                     struct errbuf *e)
{
    struct metric_in m;
    void *owned;
    struct errbuf pe;
    if (metric_parse(json, len, &m, &owned, &pe) < 0) {
        /* a malformed record is the trial's bug: say so, keep the rest flowing */
        log_warn("trial %s: ignoring bad metric record: %s", trial_id, pe.msg);
        return 0;
    }
    int rc = metric_insert(db, trial_id, attempt, &m, e);
    metric_owned_free(owned);
    return rc < 0 ? -1 : 0;
}

int collect_metrics_buf(struct db *db, const char *trial_id, int attempt, const char *buf, size_t len,
                        size_t *used, struct errbuf *e)
{
    size_t off = 0;
    while (len - off >= 8) {
        const char *p = buf + off;
        if (p[0] != 'M' || p[1] != 'E') {
            /* resynchronise on the next "ME" so one torn write does not lose the rest */
            const char *next = memmem(p + 1, len - off - 1, "ME", 2);
            log_warn("trial %s: metrics file out of frame at byte %zu", trial_id, off);
            if (!next) {
                off = len;
                break;
            }
            off = (size_t)(next - buf);
            continue;
        }
        char digits[7];
        memcpy(digits, p + 2, 6);
        digits[6] = '\0';
        char *end;
        long n = strtol(digits, &end, 10);
        if (*end != '\0' || n < 0 || n > MAX_RECORD) {
            off += 2;
            continue;
        }
        if (len - off - 8 < (size_t)n)
            break; /* partial record: the trial is still writing it */
        if (store_one(db, trial_id, attempt, p + 8, (size_t)n, e) < 0)
            return -1;
        off += 8 + (size_t)n;
    }
    *used = off;
    return 0;
}

int collect_stdout_buf(struct db *db, const char *trial_id, int attempt, const char *buf, size_t len,
                       size_t *used, struct errbuf *e)
{
    static const char tag[] = "NNISDK_MEb'";
    size_t off = 0;
    for (;;) {
        const char *nl = memchr(buf + off, '\n', len - off);
        if (!nl)
            break;
        size_t linelen = (size_t)(nl - (buf + off));
        const char *line = buf + off;
        if (linelen && line[linelen - 1] == '\r')
            linelen--;
        const char *t = memmem(line, linelen, tag, sizeof tag - 1);
        if (t && linelen > 0 && line[linelen - 1] == '\'') {
            const char *json = t + sizeof tag - 1;
            size_t jlen = (size_t)(line + linelen - 1 - json);
            if (store_one(db, trial_id, attempt, json, jlen, e) < 0)
                return -1;
        }
        off = (size_t)(nl - buf) + 1;
    }
    *used = off;
    return 0;
}
