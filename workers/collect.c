/* collect.c: NNI's two metric framings, parsed incrementally and stored idempotently.
 *   .nni/metrics: "ME" + 6-digit decimal length + payload (payload ends with '\n')
 *   stdout:       lines NNISDK_MEb'<metric json>' */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workers/worker.h"

#define MAX_RECORD 1000000

/* A malformed record is the trial's bug: said once per source and minute, then counted
 * (log_input: a file of garbage cannot flood the log), and the rest keeps flowing. */
#define MALFORMED "malformed records"

static void malformed(const char *trial_id, const char *source, const char *what, const char *detail)
{
    char key[128];
    snprintf(key, sizeof key, "trial %s: %s", trial_id, source);
    log_input(LOG_WARN, key, MALFORMED, "%s%s", what, detail);
}

static int store_one(struct db *db, const char *trial_id, int attempt, const char *source, const char *json,
                     size_t len, struct errbuf *e)
{
    struct metric_in m;
    void *owned;
    struct errbuf pe;
    if (metric_parse(json, len, &m, &owned, &pe) < 0) {
        /* pe.msg shows the record escaped and cut at its frame: it cannot forge log lines */
        malformed(trial_id, source, "ignoring bad metric record: ", pe.msg);
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
            char at[32];
            snprintf(at, sizeof at, "%zu", off);
            malformed(trial_id, "metrics file", "out of frame at byte ", at);
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
        if (store_one(db, trial_id, attempt, "metrics file", p + 8, (size_t)n, e) < 0)
            return -1;
        off += 8 + (size_t)n;
    }
    *used = off;
    return 0;
}

int collect_stdout_buf(struct db *db, const char *trial_id, int attempt, const char *buf, size_t len, int at_end,
                       size_t *used, struct errbuf *e)
{
    static const char tag[] = "NNISDK_MEb'";
    size_t off = 0;
    while (off < len) {
        const char *nl = memchr(buf + off, '\n', len - off);
        if (!nl && !at_end)
            break;
        if (!nl)
            nl = buf + len; /* the last line, ended by the end of the output */
        size_t linelen = (size_t)(nl - (buf + off));
        const char *line = buf + off;
        if (linelen && line[linelen - 1] == '\r')
            linelen--;
        const char *t = memmem(line, linelen, tag, sizeof tag - 1);
        /* the closing quote after the tag's own: a bare "NNISDK_MEb'" is no record */
        if (t && (size_t)(t - line) + (sizeof tag - 1) < linelen && line[linelen - 1] == '\'') {
            const char *json = t + sizeof tag - 1;
            size_t jlen = (size_t)(line + linelen - 1 - json);
            if (store_one(db, trial_id, attempt, "stdout", json, jlen, e) < 0)
                return -1;
        }
        off = nl < buf + len ? (size_t)(nl - buf) + 1 : len;
    }
    *used = off;
    return 0;
}

/* Bytes [off, off + 64 MiB) of a file (NUL-terminated); NULL when nothing is new. The
 * bound keeps one pass small; the rest comes on the next. */
static char *read_from(const char *path, int64_t off, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && st.st_size > off) {
        size_t n = (size_t)(st.st_size - off);
        if (n > 64 << 20)
            n = 64 << 20;
        buf = xmalloc(n + 1);
        ssize_t r = pread(fd, buf, n, off);
        if (r <= 0) {
            free(buf);
            buf = NULL;
        } else {
            *len = (size_t)r;
            buf[r] = '\0';
        }
    }
    close(fd);
    return buf;
}

static char *default_stdout(const char *dir, const char *stdout_path)
{
    return stdout_path ? xstrdup(stdout_path) : xasprintf("%s/trial.stdout", dir);
}

int collect_trial_dir(struct db *db, struct trial *t, const char *dir, const char *stdout_path, int at_end,
                      struct errbuf *e)
{
    char *mpath = xasprintf("%s/.nni/metrics", dir);
    char *opath = default_stdout(dir, stdout_path);
    int rc = 0;
    size_t len = 0, used = 0;
    char *buf = read_from(mpath, t->metrics_offset, &len);
    if (buf) {
        rc = collect_metrics_buf(db, t->id, t->attempt, buf, len, &used, e);
        if (rc == 0)
            t->metrics_offset += (int64_t)used;
        free(buf);
    }
    if (rc == 0 && (buf = read_from(opath, t->stdout_offset, &len))) {
        rc = collect_stdout_buf(db, t->id, t->attempt, buf, len, at_end, &used, e);
        if (rc == 0) {
            /* a line longer than 1 MiB without a newline cannot be a metric: skip it */
            if (used == 0 && len > (1 << 20))
                used = len;
            t->stdout_offset += (int64_t)used;
        }
        free(buf);
    }
    free(mpath);
    free(opath);
    return rc;
}

static int grew(const char *path, int64_t off)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > off;
}

int trial_dir_grew(const struct trial *t, const char *dir, const char *stdout_path)
{
    char *mpath = xasprintf("%s/.nni/metrics", dir);
    char *opath = default_stdout(dir, stdout_path);
    int r = grew(mpath, t->metrics_offset) || grew(opath, t->stdout_offset);
    free(mpath);
    free(opath);
    return r;
}
