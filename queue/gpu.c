/* gpu.c: nvidia-smi's XML -> gpu rows, and GPU slots claimed with the trial (gpu.h). */
#include "queue/gpu.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------- nvidia-smi -q -x ---------------- */

/* The elements we read, as paths below <nvidia_smi_log>. Nested <mig_device> elements
 * have their own fb_memory_usage: only the direct children of <gpu> count. */
enum { XDEPTH = 24, XNAME = 40 };

struct xparse {
    char stack[XDEPTH][XNAME]; /* names, cut to XNAME - 1 (driver 580 has names of 47) */
    size_t len[XDEPTH];        /* their whole lengths */
    int depth;
    struct strbuf text;     /* text of the innermost element so far */
    struct gpu_info *gpus;
    int n, cap;
};

static int path_is(const struct xparse *x, const char *const *names, int k)
{
    if (x->depth != k)
        return 0;
    for (int i = 0; i < k; i++)
        if (x->len[i] != strlen(names[i]) || strcmp(x->stack[i], names[i]) != 0)
            return 0;
    return 1;
}

/* "16160 MiB" -> 16160; "N/A" or a negative number (no amount of memory) -> -1 */
static int64_t num_i64(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return end == s || errno || v < 0 ? -1 : (int64_t)v;
}

/* "12 %" -> 12; "N/A" or a negative number -> -1 */
static double num_pct(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    return end == s || !isfinite(v) || v < 0 ? -1 : v;
}

static void copy_text(char *dst, size_t size, const char *s)
{
    snprintf(dst, size, "%s", s);
}

/* Decodes the five predefined entities in place and trims white space. */
static char *clean_text(char *s)
{
    static const struct { const char *ent; char c; } ents[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''},
    };
    char *w = s;
    for (char *r = s; *r;) {
        int done = 0;
        if (*r == '&')
            for (size_t i = 0; i < sizeof ents / sizeof ents[0] && !done; i++) {
                size_t l = strlen(ents[i].ent);
                if (strncmp(r, ents[i].ent, l) == 0) {
                    *w++ = ents[i].c;
                    r += l;
                    done = 1;
                }
            }
        if (!done)
            *w++ = *r++;
    }
    *w = '\0';
    while (w > s && isspace((unsigned char)w[-1]))
        *--w = '\0';
    while (isspace((unsigned char)*s))
        s++;
    return s;
}

static void on_start(struct xparse *x)
{
    static const char *const gpu[] = {"nvidia_smi_log", "gpu"};
    static const char *const proc[] = {"nvidia_smi_log", "gpu", "processes", "process_info"};
    if (path_is(x, gpu, 2)) {
        if (x->n == x->cap) {
            x->cap = x->cap ? x->cap * 2 : 8;
            x->gpus = xrealloc(x->gpus, sizeof *x->gpus * (size_t)x->cap);
        }
        struct gpu_info *g = &x->gpus[x->n];
        memset(g, 0, sizeof *g);
        g->index = x->n++;
        g->mem_total = g->mem_used = -1;
        g->util = g->mem_util = -1;
    } else if (path_is(x, proc, 4) && x->n > 0) {
        x->gpus[x->n - 1].active_procs++;
    }
}

static void on_end(struct xparse *x, char *raw)
{
    static const char *const uuid[] = {"nvidia_smi_log", "gpu", "uuid"};
    static const char *const name[] = {"nvidia_smi_log", "gpu", "product_name"};
    static const char *const total[] = {"nvidia_smi_log", "gpu", "fb_memory_usage", "total"};
    static const char *const used[] = {"nvidia_smi_log", "gpu", "fb_memory_usage", "used"};
    static const char *const util[] = {"nvidia_smi_log", "gpu", "utilization", "gpu_util"};
    static const char *const mutil[] = {"nvidia_smi_log", "gpu", "utilization", "memory_util"};
    if (x->n == 0 || x->depth < 3)
        return;
    struct gpu_info *g = &x->gpus[x->n - 1];
    char *t = clean_text(raw);
    if (path_is(x, uuid, 3))
        copy_text(g->uuid, sizeof g->uuid, t);
    else if (path_is(x, name, 3))
        copy_text(g->name, sizeof g->name, t);
    else if (path_is(x, total, 4))
        g->mem_total = num_i64(t);
    else if (path_is(x, used, 4))
        g->mem_used = num_i64(t);
    else if (path_is(x, util, 4))
        g->util = num_pct(t);
    else if (path_is(x, mutil, 4))
        g->mem_util = num_pct(t);
}

/* The first line of a text, for messages. */
static void first_line(const char *buf, size_t len, char *out, size_t size)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i]))
        i++;
    size_t j = i;
    while (j < len && buf[j] != '\n' && buf[j] != '\r' && j - i < size - 1)
        j++;
    memcpy(out, buf + i, j - i);
    out[j - i] = '\0';
}

/* Where a parse stands: the input, whether the root element was seen, the first error. */
struct xstate {
    const char *buf, *end;
    int saw_root;
    const char *err;
    size_t err_at;
};

static int x_fail(struct xstate *s, const char *err, const char *at)
{
    s->err = err;
    s->err_at = (size_t)(at - s->buf);
    return -1;
}

/* Text from p to the next '<': kept inside an element; outside it, only white space may
 * follow the root, and anything before the root ends the parse (e.g. the tool's "failed
 * because..." message). Returns where the parse goes on. */
static const char *x_text(struct xparse *x, struct xstate *s, const char *p)
{
    const char *lt = memchr(p, '<', (size_t)(s->end - p));
    if (!lt)
        lt = s->end;
    if (x->depth > 0) {
        sb_add(&x->text, p, (size_t)(lt - p));
        return lt;
    }
    for (const char *q = p; q < lt; q++)
        if (!isspace((unsigned char)*q)) {
            if (!s->saw_root)
                return s->end;
            x_fail(s, "text after the root element", q);
            break;
        }
    return lt;
}

/* The first `mark` (3 characters) at or after from, or NULL. */
static const char *x_find3(const char *from, const char *end, const char *mark)
{
    for (const char *q = from; q + 3 <= end; q++)
        if (memcmp(q, mark, 3) == 0)
            return q;
    return NULL;
}

/* A comment or a CDATA section at p (its text kept): where the parse goes on; p itself when
 * p starts neither; NULL on an error. */
static const char *x_special(struct xparse *x, struct xstate *s, const char *p)
{
    size_t rest = (size_t)(s->end - p);
    if (rest >= 4 && memcmp(p, "<!--", 4) == 0) {
        const char *c = x_find3(p + 4, s->end, "-->");
        if (!c)
            x_fail(s, "unterminated comment", p);
        return c ? c + 3 : NULL;
    }
    if (rest >= 9 && memcmp(p, "<![CDATA[", 9) == 0) {
        const char *c = x_find3(p + 9, s->end, "]]>");
        if (!c) {
            x_fail(s, "unterminated CDATA", p);
            return NULL;
        }
        sb_add(&x->text, p + 9, (size_t)(c - p - 9));
        return c + 3;
    }
    return p;
}

/* The end tag at p, named ns (nl bytes). */
static int x_close(struct xparse *x, struct xstate *s, const char *p, const char *ns, size_t nl)
{
    if (x->depth == 0 || x->len[x->depth - 1] != nl ||
        strncmp(x->stack[x->depth - 1], ns, nl < XNAME ? nl : XNAME - 1) != 0)
        return x_fail(s, "end tag does not match its start tag", p);
    char *t = sb_detach(&x->text);
    on_end(x, t);
    free(t);
    x->depth--;
    return 0;
}

/* The start tag at p, named ns (nl bytes); the root must be <nvidia_smi_log>. */
static int x_open(struct xparse *x, struct xstate *s, const char *p, const char *ns, size_t nl, int self_closing)
{
    if (x->depth == 0) {
        if (s->saw_root)
            return x_fail(s, "a second root element", p);
        s->saw_root = 1;
        if (nl != 14 || strncmp(ns, "nvidia_smi_log", 14) != 0)
            return x_fail(s, "the root element is not <nvidia_smi_log>", p);
    }
    if (x->depth == XDEPTH)
        return x_fail(s, "elements nested too deeply", p);
    snprintf(x->stack[x->depth], XNAME, "%.*s", (int)(nl < XNAME ? nl : XNAME - 1), ns);
    x->len[x->depth] = nl;
    x->depth++;
    sb_free(&x->text);
    sb_init(&x->text);
    on_start(x);
    if (self_closing) {
        on_end(x, (char[]){""});
        x->depth--;
    }
    return 0;
}

/* The tag at p (*p == '<'): where the parse goes on, or NULL on an error. */
static const char *x_tag(struct xparse *x, struct xstate *s, const char *p)
{
    const char *gt = memchr(p, '>', (size_t)(s->end - p));
    if (!gt) {
        x_fail(s, "unterminated tag", p);
        return NULL;
    }
    if (p[1] == '?' || p[1] == '!') /* <?xml ...?>, <!DOCTYPE ...> */
        return gt + 1;
    int closing = p[1] == '/';
    const char *ns = p + 1 + closing, *ne = ns;
    while (ne < gt && !isspace((unsigned char)*ne) && *ne != '/')
        ne++;
    size_t nl = (size_t)(ne - ns);
    if (nl == 0) {
        x_fail(s, "empty tag name", p);
        return NULL;
    }
    int rc = closing ? x_close(x, s, p, ns, nl) : x_open(x, s, p, ns, nl, gt[-1] == '/');
    return rc < 0 ? NULL : gt + 1;
}

int gpu_parse_nvsmi(const char *buf, size_t len, struct gpu_info **out, int *n, struct errbuf *e)
{
    *out = NULL;
    *n = 0;
    struct xparse x;
    memset(&x, 0, sizeof x);
    sb_init(&x.text);
    struct xstate s = {.buf = buf, .end = buf + len};
    const char *p = buf;
    while (p && p < s.end && !s.err) {
        if (*p != '<') {
            p = x_text(&x, &s, p);
            continue;
        }
        const char *after = x_special(&x, &s, p);
        p = after != p ? after : x_tag(&x, &s, p);
    }
    sb_free(&x.text);
    if (!s.err && !s.saw_root) {
        char line[120];
        first_line(buf, len, line, sizeof line);
        free(x.gpus);
        return errf(e, "not nvidia-smi XML output%s%s", *line ? ": " : " (empty)", line);
    }
    if (!s.err && x.depth != 0) {
        s.err = "the output ends inside an element";
        s.err_at = len;
    }
    if (s.err) {
        free(x.gpus);
        return errf(e, "nvidia-smi XML: %s (at byte %zu)", s.err, s.err_at);
    }
    *out = x.gpus;
    *n = x.n;
    return 0;
}

/* ---------------- running it here ---------------- */

/* The first executable `name` on PATH, or NULL. Caller frees. */
static char *find_on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = xstrdup(path), *save = NULL;
    char *found = NULL;
    for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *f = xasprintf("%s/%s", *d ? d : ".", name);
        struct stat st;
        if (stat(f, &st) == 0 && S_ISREG(st.st_mode) && access(f, X_OK) == 0)
            found = f;
        else
            free(f);
    }
    free(copy);
    return found;
}

int gpu_collect_local(int timeout_ms, struct gpu_info **out, int *n, struct errbuf *e)
{
    *out = NULL;
    *n = 0;
    char *exe = find_on_path("nvidia-smi");
    if (!exe)
        return errf(e, "nvidia-smi: not found on PATH");
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        free(exe);
        return errf(e, "nvidia-smi: pipe: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        free(exe);
        close(fds[0]);
        close(fds[1]);
        return errf(e, "nvidia-smi: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int devnull = open("/dev/null", O_RDWR);
        dup2(devnull, 0);
        dup2(fds[1], 1);
        dup2(fds[1], 2); /* the tool prints its errors on stdout; keep both */
        close_fds_from(3);
        execl(exe, "nvidia-smi", "-q", "-x", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    struct strbuf sb;
    sb_init(&sb);
    int64_t deadline = mono_ms() + timeout_ms;
    int timed_out = 0;
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int pr = poll(&pfd, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            timed_out = pr == 0;
            break;
        }
        char chunk[8192];
        ssize_t r = read(fds[0], chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        if (sb.len < (16u << 20)) /* a sane bound: 16 GPUs print ~100 KiB */
            sb_add(&sb, chunk, (size_t)r);
    }
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    int rc;
    if (timed_out) {
        rc = errf(e, "nvidia-smi: no answer within %d ms (killed)", timeout_ms);
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char line[200];
        first_line(sb.buf ? sb.buf : "", sb.len, line, sizeof line);
        if (WIFEXITED(st))
            rc = errf(e, "nvidia-smi: exit code %d%s%s", WEXITSTATUS(st), *line ? ": " : "", line);
        else
            rc = errf(e, "nvidia-smi: killed by signal %d", WTERMSIG(st));
    } else {
        rc = gpu_parse_nvsmi(sb.buf ? sb.buf : "", sb.len, out, n, e);
    }
    sb_free(&sb);
    free(exe);
    return rc;
}

/* ---------------- what a trial asks for ---------------- */

static const cJSON *item_or(const cJSON *item, const cJSON *fallback, const char *key)
{
    const cJSON *v = item ? cJSON_GetObjectItemCaseSensitive(item, key) : NULL;
    if ((!v || cJSON_IsNull(v)) && fallback)
        v = cJSON_GetObjectItemCaseSensitive(fallback, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static void allow_set(struct gpu_need *need, double d)
{
    if (d >= 0 && d <= GPU_INDEX_MAX) {
        int idx = (int)d;
        need->allow[idx / 8] |= (unsigned char)(1u << (idx % 8));
    }
}

static int allowed(const struct gpu_need *need, int idx)
{
    if (!need->has_filter)
        return 1;
    return idx >= 0 && idx <= GPU_INDEX_MAX && (need->allow[idx / 8] >> (idx % 8) & 1);
}

int gpu_need_from_json(const cJSON *item, const cJSON *fallback, struct gpu_need *need)
{
    memset(need, 0, sizeof *need);
    need->max_per_gpu = 1;
    const cJSON *v = item_or(item, fallback, "trialGpuNumber");
    if (cJSON_IsNumber(v) && v->valuedouble > 0)
        need->count = v->valuedouble > 1e6 ? 1000000 : (int)v->valuedouble;
    v = item_or(item, fallback, "maxTrialNumberPerGpu");
    if (cJSON_IsNumber(v) && v->valuedouble >= 1)
        need->max_per_gpu = v->valuedouble > 1e6 ? 1000000 : (int)v->valuedouble;
    v = item_or(item, fallback, "useActiveGpu");
    need->use_active = cJSON_IsTrue(v);
    v = item_or(item, fallback, "gpuIndices");
    /* the canonical form is a list of ints; "0,1" and a bare int are accepted too */
    if (cJSON_IsArray(v)) {
        need->has_filter = 1;
        const cJSON *it;
        cJSON_ArrayForEach(it, v)
            if (cJSON_IsNumber(it))
                allow_set(need, it->valuedouble);
    } else if (cJSON_IsNumber(v)) {
        need->has_filter = 1;
        allow_set(need, v->valuedouble);
    } else if (cJSON_IsString(v)) {
        need->has_filter = 1;
        for (const char *s = v->valuestring; *s;) {
            char *end;
            long i = strtol(s, &end, 10);
            if (end == s) {
                s++;
                continue;
            }
            allow_set(need, (double)i);
            s = end;
        }
    }
    return need->count;
}

int gpu_need_from_config(const char *config_json, const char *platform, struct gpu_need *need)
{
    memset(need, 0, sizeof *need);
    need->max_per_gpu = 1;
    cJSON *cfg = config_json ? cJSON_Parse(config_json) : NULL;
    if (!cfg)
        return 0;
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(cfg, "trainingService");
    const cJSON *mine = NULL;
    if (cJSON_IsArray(ts)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, ts) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, "platform");
            if (cJSON_IsString(p) && strcmp(p->valuestring, platform) == 0)
                mine = it;
        }
    } else if (cJSON_IsObject(ts)) {
        mine = ts;
    }
    int rc = gpu_need_from_json(mine, cfg, need);
    cJSON_Delete(cfg);
    return rc;
}

void gpu_need_describe_filter(const struct gpu_need *need, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i <= GPU_INDEX_MAX && k + 12 < size; i++)
        if (need->has_filter && allowed(need, i))
            k += (size_t)snprintf(buf + k, size - k, "%s%d", k ? "," : "", i);
}

int gpu_check_host(const cJSON *entry, int at, const cJSON *canonical, char *key, size_t key_size, char *msg,
                   size_t msg_size)
{
    key[0] = msg[0] = '\0';
    const cJSON *local = entry;
    int hybrid = at >= 0;
    struct gpu_need need;
    if (!local || gpu_need_from_json(local, canonical, &need) <= 0)
        return 0;
    char prefix[64];
    if (hybrid)
        snprintf(prefix, sizeof prefix, "trainingService[%d]", at);
    else
        snprintf(prefix, sizeof prefix, "trainingService");
    struct gpu_info *g = NULL;
    int n = 0;
    struct errbuf e;
    const char *s = need.count == 1 ? "" : "s";
    snprintf(key, key_size, "%s.trialGpuNumber", prefix);
    if (gpu_collect_local(20000, &g, &n, &e) < 0) {
        snprintf(msg, msg_size, "%s: %d GPU%s per trial, but this host has no usable GPU (%s)%s", key,
                 need.count, s, e.msg, hybrid ? "; only the other platforms will run trials" : "");
        return hybrid ? 1 : -1;
    }
    int usable = 0, missing = -1;
    for (int k = 0; k < n; k++)
        if (allowed(&need, g[k].index))
            usable++;
    if (need.has_filter)
        for (int idx = 0; idx <= GPU_INDEX_MAX && missing < 0; idx++)
            if ((need.allow[idx / 8] >> (idx % 8) & 1) && idx >= n)
                missing = idx;
    free(g);
    if (missing >= 0) {
        snprintf(key, key_size, "%s.gpuIndices", prefix);
        if (n > 0)
            snprintf(msg, msg_size, "%s: GPU %d does not exist on this host (nvidia-smi lists GPUs 0..%d)", key,
                     missing, n - 1);
        else
            snprintf(msg, msg_size, "%s: GPU %d does not exist on this host (nvidia-smi lists none)", key, missing);
        return -1;
    }
    if (need.count > usable) {
        snprintf(msg, msg_size, "%s: %d GPU%s per trial, but this host has %s%d%s: no trial could ever start",
                 key, need.count, s, need.has_filter ? "only " : "", usable,
                 need.has_filter ? " of the GPUs in gpuIndices" : (usable == 1 ? " GPU" : " GPUs"));
        return hybrid ? 1 : -1;
    }
    return 0;
}

/* ---------------- machines and inventory ---------------- */

int machine_ensure(struct db *db, const char *platform, const char *host, int port, const char *user,
                   int64_t *machine_id, struct errbuf *e)
{
    static const char find[] =
        "SELECT id FROM machine WHERE experiment_id IS NULL AND platform = ? AND host = ?"
        " AND coalesce(port, 0) = ? AND coalesce(user, '') = coalesce(?, '')";
    int rc = db_int(db, e, machine_id, find, "ssds", platform, host, port, user);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    /* the unique index on the identity makes a concurrent insert a no-op */
    if (db_run(db, e, "INSERT OR IGNORE INTO machine(experiment_id, platform, host, port, user, last_seen)"
                      " VALUES (NULL, ?, ?, nullif(?, 0), ?, ?)",
               "ssdsi", platform, host, port, user, now_ms()) < 0)
        return -1;
    rc = db_int(db, e, machine_id, find, "ssds", platform, host, port, user);
    if (rc == 0)
        return errf(e, "machine %s (%s): cannot register it", host, platform);
    return rc < 0 ? -1 : 0;
}

int machine_set_home(struct db *db, int64_t machine_id, const char *home_id, struct errbuf *e)
{
    return db_run(db, e, "UPDATE machine SET home_id = ? WHERE id = ? AND home_id IS NOT ?", "sis", home_id,
                  machine_id, home_id) < 0 ? -1 : 0;
}

int gpu_store(struct db *db, int64_t machine_id, const struct gpu_info *g, int n,
              const char *collect_error, struct errbuf *e)
{
    int own = !db->in_tx;
    if (own && db_begin(db, e) < 0)
        return -1;
    int64_t now = now_ms();
    if (collect_error) {
        if (db_run(db, e, "UPDATE machine SET gpu_checked = ?, gpu_error = ? WHERE id = ?", "isi", now,
                   collect_error, machine_id) < 0)
            goto fail;
    } else {
        for (int i = 0; i < n; i++) {
            if (db_run(db, e,
                       "INSERT INTO gpu(machine_id, idx, uuid, name, memory_total, memory_used, utilization,"
                       " memory_util, active_procs, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
                       " ON CONFLICT(machine_id, idx) DO UPDATE SET uuid = excluded.uuid, name = excluded.name,"
                       " memory_total = excluded.memory_total, memory_used = excluded.memory_used,"
                       " utilization = excluded.utilization, memory_util = excluded.memory_util,"
                       " active_procs = excluded.active_procs, updated_at = excluded.updated_at",
                       "idssiiFFdi", machine_id, g[i].index, g[i].uuid[0] ? g[i].uuid : NULL,
                       g[i].name[0] ? g[i].name : NULL, g[i].mem_total, g[i].mem_used,
                       g[i].util < 0 ? NAN : g[i].util, g[i].mem_util < 0 ? NAN : g[i].mem_util,
                       g[i].active_procs, now) < 0)
                goto fail;
        }
        /* GPUs that are gone take their claims with them (ON DELETE CASCADE) */
        if (db_run(db, e, "DELETE FROM gpu WHERE machine_id = ? AND idx >= ?", "id", machine_id, n) < 0 ||
            db_run(db, e, "UPDATE machine SET gpu_checked = ?, gpu_error = NULL, last_seen = ? WHERE id = ?",
                   "iii", now, now, machine_id) < 0)
            goto fail;
    }
    if (own && db_commit(db, e) < 0)
        return -1;
    return 0;
fail:
    if (own)
        db_rollback(db);
    return -1;
}

int gpu_refresh_local(struct db *db, const char *kind, int64_t max_age_ms, int64_t *machine_id, char *collect_error,
                      size_t error_size, struct errbuf *e)
{
    if (error_size)
        collect_error[0] = '\0';
    if (machine_ensure(db, kind, host_name(), 0, NULL, machine_id, e) < 0)
        return -1;
    int64_t checked = 0;
    int rc = db_int(db, e, &checked, "SELECT coalesce(gpu_checked, 0) FROM machine WHERE id = ?", "i",
                    *machine_id);
    if (rc < 0)
        return -1;
    if (checked && now_ms() - checked < max_age_ms)
        return 0;
    struct gpu_info *g = NULL;
    int n = 0;
    struct errbuf ce;
    int ok = gpu_collect_local(10000, &g, &n, &ce) == 0;
    if (!ok && error_size)
        snprintf(collect_error, error_size, "%s", ce.msg);
    rc = gpu_store(db, *machine_id, g, n, ok ? NULL : ce.msg, e);
    free(g);
    return rc < 0 ? -1 : 1;
}

/* ---------------- slots ---------------- */

/* A claim holds its GPU only while its trial is claimed or running. */
#define LIVE_CLAIM                                                                           \
    "(SELECT 1 FROM trial t WHERE t.id = c.trial_id"                                           \
    " AND (t.status = 'RUNNING' OR (t.status = 'WAITING' AND t.lease_owner IS NOT NULL)))"

int gpu_release_stale(struct db *db, int64_t machine_id, struct errbuf *e)
{
    return db_run(db, e, "DELETE FROM gpu_claim AS c WHERE c.machine_id = ? AND NOT EXISTS " LIVE_CLAIM,
                  "i", machine_id);
}

int gpu_release_trial(struct db *db, const char *trial_id, struct errbuf *e)
{
    if (db_run(db, e, "DELETE FROM gpu_claim WHERE trial_id = ?", "s", trial_id) < 0)
        return -1;
    return db_run(db, e, "UPDATE trial SET gpu_indices = NULL WHERE id = ? AND gpu_indices IS NOT NULL", "s",
                  trial_id) < 0 ? -1 : 0;
}

struct cand {
    int idx;
    double held;      /* shares held by live claims */
    int claims;       /* live claims */
    int active;       /* processes nvidia-smi saw */
    double util, mem_util;
};

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    /* spread first (fewest shares held), then GPUs without processes, then the least
     * busy; the index last, so that equal GPUs are taken in order */
    if (x->held != y->held)
        return x->held < y->held ? -1 : 1;
    if ((x->active > 0) != (y->active > 0))
        return x->active > 0 ? 1 : -1;
    if (x->mem_util != y->mem_util)
        return x->mem_util < y->mem_util ? -1 : 1;
    if (x->util != y->util)
        return x->util < y->util ? -1 : 1;
    return x->idx - y->idx;
}

static int int_cmp(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* What the messages of gpu_pick say about a machine. */
struct gpu_host {
    char *host, *gpu_error;
    int64_t checked;
};

static void gpu_host_free(struct gpu_host *h)
{
    free(h->host);
    free(h->gpu_error);
}

static int gpu_host_load(struct db *db, int64_t machine_id, struct gpu_host *h, struct errbuf *e)
{
    memset(h, 0, sizeof *h);
    sqlite3_stmt *st = db_query(db, e, "SELECT host, gpu_error, coalesce(gpu_checked, 0) FROM machine WHERE id = ?",
                                "i", machine_id);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        h->host = col_str(st, 0);
        h->gpu_error = col_str(st, 1);
        h->checked = col_i64(st, 2);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? errf(e, "machine %lld: no such row", (long long)machine_id)
                             : errf(e, "machine: %s", sqlite3_errmsg(db->h));
}

/* A machine's GPUs that the need may take (c[0..n)), and the counts its messages give. */
struct gpu_cands {
    struct cand *c;
    int n, cap, total, usable, idle, busy_foreign;
};

static int gpu_cands_load(struct db *db, int64_t machine_id, const struct gpu_need *need, struct gpu_cands *k,
                          struct errbuf *e)
{
    memset(k, 0, sizeof *k);
    sqlite3_stmt *st = db_query(db, e,
                                "SELECT g.idx, g.active_procs, coalesce(g.utilization, 0), coalesce(g.memory_util, 0),"
                                " (SELECT coalesce(sum(c.share), 0) FROM gpu_claim c WHERE c.machine_id = g.machine_id"
                                "  AND c.gpu_idx = g.idx AND EXISTS " LIVE_CLAIM "),"
                                " (SELECT count(*) FROM gpu_claim c WHERE c.machine_id = g.machine_id"
                                "  AND c.gpu_idx = g.idx AND EXISTS " LIVE_CLAIM ")"
                                " FROM gpu g WHERE g.machine_id = ? ORDER BY g.idx",
                                "i", machine_id);
    if (!st)
        return -1;
    double share = 1.0 / need->max_per_gpu;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        k->total++;
        struct cand g = {
            .idx = (int)col_i64(st, 0),
            .active = (int)col_i64(st, 1),
            .util = sqlite3_column_double(st, 2),
            .mem_util = sqlite3_column_double(st, 3),
            .held = sqlite3_column_double(st, 4),
            .claims = (int)col_i64(st, 5),
        };
        if (!allowed(need, g.idx))
            continue;
        k->usable++;
        if (g.claims == 0 && g.active == 0)
            k->idle++;
        /* processes on a GPU our trials hold are taken to be theirs (NNI's rule) */
        if (!need->use_active && g.active > 0 && g.claims == 0) {
            k->busy_foreign++;
            continue;
        }
        if (g.held + share > 1.0 + 1e-9)
            continue;
        if (k->n == k->cap) {
            k->cap = k->cap ? k->cap * 2 : 16;
            k->c = xrealloc(k->c, sizeof *k->c * (size_t)k->cap);
        }
        k->c[k->n++] = g;
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return 0;
    free(k->c);
    k->c = NULL;
    return errf(e, "gpu rows: %s", sqlite3_errmsg(db->h));
}

/* The best `want` candidates as "0,2" (indices ascending) in idx_text: 0, or -1 when the
 * list does not fit. */
static int gpu_pick_text(struct gpu_cands *k, int want, char *idx_text, size_t idx_size, struct errbuf *e)
{
    qsort(k->c, (size_t)k->n, sizeof *k->c, cand_cmp);
    int *pick = xmalloc(sizeof *pick * (size_t)want);
    for (int i = 0; i < want; i++)
        pick[i] = k->c[i].idx;
    qsort(pick, (size_t)want, sizeof *pick, int_cmp);
    size_t len = 0;
    for (int i = 0; i < want && len < idx_size; i++)
        len += (size_t)snprintf(idx_text + len, idx_size - len, "%s%d", i ? "," : "", pick[i]);
    free(pick);
    if (len < idx_size)
        return 0;
    return errf(e, "GPU index list longer than %zu bytes", idx_size);
}

/* Why the machine cannot give the need its GPUs now. */
static void gpu_pick_reason(const struct gpu_need *need, const struct gpu_host *h, const struct gpu_cands *k,
                            char *reason, size_t reason_size)
{
    int want = need->count;
    const char *s = want == 1 ? "" : "s";
    char filter[256];
    gpu_need_describe_filter(need, filter, sizeof filter);
    if (k->total == 0 && !h->checked)
        snprintf(reason, reason_size, "needs %d GPU%s; host %s: no GPU information yet", want, s, h->host);
    else if (k->total == 0)
        snprintf(reason, reason_size, "needs %d GPU%s; host %s has no GPU (%s)", want, s, h->host,
                 h->gpu_error ? h->gpu_error : "nvidia-smi lists none");
    else if (k->usable < want && need->has_filter)
        snprintf(reason, reason_size, "needs %d GPU%s; host %s has only %d of gpuIndices %s", want, s, h->host,
                 k->usable, filter);
    else if (k->usable < want)
        snprintf(reason, reason_size, "needs %d GPU%s; host %s has only %d", want, s, h->host, k->usable);
    else
        snprintf(reason, reason_size, "needs %d GPU%s; host %s has %d free, %d idle%s", want, s, h->host, k->n,
                 k->idle, k->busy_foreign ? " (others busy with processes not ours; useActiveGpu is false)" : "");
}

int gpu_pick(struct db *db, int64_t machine_id, const struct gpu_need *need, char *idx_text, size_t idx_size,
             char *reason, size_t reason_size, struct errbuf *e)
{
    idx_text[0] = '\0';
    if (reason_size)
        reason[0] = '\0';
    struct gpu_host h;
    if (gpu_host_load(db, machine_id, &h, e) < 0) {
        gpu_host_free(&h);
        return -1;
    }
    struct gpu_cands k;
    if (gpu_cands_load(db, machine_id, need, &k, e) < 0) {
        gpu_host_free(&h);
        return -1;
    }
    int rc;
    if (k.n >= need->count) {
        rc = gpu_pick_text(&k, need->count, idx_text, idx_size, e) < 0 ? -1 : 1;
    } else {
        rc = 0;
        if (reason_size)
            gpu_pick_reason(need, &h, &k, reason, reason_size);
    }
    free(k.c);
    gpu_host_free(&h);
    return rc;
}

int gpu_claim_write(struct db *db, int64_t machine_id, const struct gpu_need *need, const char *idx_text,
                    const char *trial_id, struct errbuf *e)
{
    double share = 1.0 / need->max_per_gpu;
    for (const char *s = idx_text; *s;) {
        char *end;
        long idx = strtol(s, &end, 10);
        if (end == s)
            return errf(e, "bad GPU index list '%s'", idx_text);
        if (db_run(db, e, "INSERT OR REPLACE INTO gpu_claim(machine_id, gpu_idx, trial_id, share) VALUES (?,?,?,?)",
                   "idsf", machine_id, (int)idx, trial_id, share) < 0)
            return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return 0;
}
