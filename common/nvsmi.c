/* nvsmi.c: nvidia-smi's XML (`nvidia-smi -q -x`) -> struct gpu_info, and running the
 * tool on this host (common/nvsmi.h). */
#include "common/nvsmi.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int gpu_collect_local(int timeout_ms, struct gpu_info **out, int *n, struct errbuf *e)
{
    *out = NULL;
    *n = 0;
    char *exe = find_on_path("nvidia-smi");
    if (!exe)
        return errf(e, "nvidia-smi: not found on PATH");
    char *const argv[] = {exe, "-q", "-x", NULL};
    char *so = NULL, *se = NULL;
    int st = run_capture(argv, timeout_ms, &so, &se);
    free(exe);
    /* the tool prints its errors on stdout: its first line, else stderr's */
    const char *said = so && so[strspn(so, " \t\r\n")] ? so : se ? se : "";
    char line[200];
    first_line(said, strlen(said), line, sizeof line);
    int rc;
    if (st == -2)
        rc = errf(e, "nvidia-smi: no answer within %d ms (killed)", timeout_ms);
    else if (st == -1)
        rc = errf(e, "nvidia-smi: cannot run it");
    else if (st != 0) /* 128 + N: killed by signal N */
        rc = errf(e, "nvidia-smi: exit code %d%s%s", st, *line ? ": " : "", line);
    else
        rc = gpu_parse_nvsmi(so ? so : "", strlen(so ? so : ""), out, n, e);
    free(so);
    free(se);
    return rc;
}
