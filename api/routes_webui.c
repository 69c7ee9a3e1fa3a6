/* routes_webui.c: the web UI. Its static files (webui/ of the source tree, or
 * <prefix>/share/trialq/webui when installed) at / and /<file>, and four reads made for
 * it (trialq's, under /api/v1/nni/webui/) that stay small and quick at 100,000 trials:
 * the overview (counts per status, best trial), one page of trials sorted and filtered
 * on the server, chart series downsampled into buckets, and a sample of parameters for
 * the parallel-coordinates chart. docs/rest-api.md and docs/webui.md describe them. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "api/importance.h"
#include "api/routes_webui.h"
#include "schema/chart_blocks.h"
#include "schema/webui_rows.h"

/* ---------------- static files ---------------- */

/* TRIALQ_WEBUI_DIR, else the installed copy beside the binary, else the source tree's
 * (a build tree's binary). Decided once. */
static const char *webui_dir(void)
{
    static char *dir;
    if (dir)
        return dir;
    const char *env = getenv("TRIALQ_WEBUI_DIR");
    if (env && *env) {
        dir = xstrdup(env);
        return dir;
    }
    dir = trialq_data_dir("webui", "index.html", TRIALQ_BUILD_TREE("/webui"));
    return dir;
}

static const struct {
    const char *ext, *type;
} content_types[] = {
    {".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},   {".svg", "image/svg+xml"},
    {".png", "image/png"},                 {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"},
};

/* A plain file name of the UI ([A-Za-z0-9._-], not starting with a dot) with a known
 * type; NULL otherwise. Nothing else can be asked for: no '/', no "..". */
static const char *file_type(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 100 || name[0] == '.')
        return NULL;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return NULL;
    }
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof content_types / sizeof content_types[0]; i++)
        if (strcmp(dot, content_types[i].ext) == 0)
            return content_types[i].type;
    return NULL;
}

static void no_route(struct req *q)
{
    reply_error(q->r, 404, "no route GET %.200s (the API is under " API_PREFIX "; the web UI is at /)", q->path);
}

/* GET / and GET /<file>: the UI's pages (/, /oview, /detail, /experiment are all its
 * one page) and files. Revalidated on every use (no-cache + ETag: a 304 costs a few
 * bytes), so an upgraded UI is never mixed with a cached old file. */
void h_webui_file(struct req *q)
{
    size_t plen = strlen(q->path);
    if (!q->args[0] && plen > 0 && q->path[plen - 1] != '/') {
        /* the root under a URL prefix asked without its slash (/my/prefix): the page's
         * relative URLs (app.js, api/v1/nni/...) must resolve inside the prefix */
        /* with single slashes: "//host/" would send the browser to another site */
        struct strbuf to;
        sb_init(&to);
        for (const char *p = q->path; *p && to.len < 1000; p++)
            if (*p != '/' || to.len == 0 || to.buf[to.len - 1] != '/')
                sb_add(&to, p, 1);
        if (to.len == 0 || to.buf[to.len - 1] != '/')
            sb_add(&to, "/", 1);
        evhttp_add_header(evhttp_request_get_output_headers(q->r), "Location", to.buf);
        reply_error(q->r, 302, "the web UI is at %s", to.buf);
        sb_free(&to);
        return;
    }
    const char *name = q->args[0] ? q->args[0] : "index.html";
    if (strcmp(name, "oview") == 0 || strcmp(name, "detail") == 0 || strcmp(name, "experiment") == 0)
        name = "index.html";
    const char *type = file_type(name);
    if (!type) {
        no_route(q);
        return;
    }
    char *path = xasprintf("%s/%s", webui_dir(), name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
    int err = errno;
    free(path);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
        err = ENOENT;
    }
    if (fd < 0) {
        if (strcmp(name, "index.html") == 0)
            reply_error(q->r, 404, "the web UI's files are missing (%s/index.html: %s)", webui_dir(), strerror(err));
        else
            no_route(q);
        return;
    }
    char etag[64];
    snprintf(etag, sizeof etag, "\"%llx-%llx\"", (unsigned long long)st.st_size,
             (unsigned long long)st.st_mtim.tv_sec * 1000000000ull + (unsigned long long)st.st_mtim.tv_nsec);
    struct evkeyvalq *h = evhttp_request_get_output_headers(q->r);
    evhttp_add_header(h, "Content-Type", type);
    evhttp_add_header(h, "Cache-Control", "no-cache");
    evhttp_add_header(h, "ETag", etag);
    evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(h, "Referrer-Policy", "no-referrer");
    if (strcmp(type, content_types[0].type) == 0) {
        /* scripts only from the UI's own files; no framing by other sites */
        evhttp_add_header(h, "Content-Security-Policy",
                          "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline';"
                          " img-src 'self' data:; frame-ancestors 'none'; base-uri 'self'; form-action 'none'");
        evhttp_add_header(h, "X-Frame-Options", "DENY");
    }
    const char *inm = evhttp_find_header(evhttp_request_get_input_headers(q->r), "If-None-Match");
    if (inm && strcmp(inm, etag) == 0) {
        close(fd);
        evhttp_send_reply(q->r, 304, "Not Modified", NULL);
        return;
    }
    struct evbuffer *b = evbuffer_new();
    if (st.st_size > 0) {
        if (evbuffer_add_file(b, fd, 0, st.st_size) < 0) { /* closes fd either way */
            evbuffer_free(b);
            reply_error(q->r, 500, "cannot read %s", name);
            return;
        }
    } else {
        close(fd);
    }
    evhttp_send_reply(q->r, 200, "OK", b);
    evbuffer_free(b);
}

/* ---------------- shared ---------------- */

/* The experiment's optimize mode (1: maximize); -1 with the error answered. */
static int req_maximize(struct req *q, int *maximize)
{
    struct experiment x;
    if (req_experiment(q, &x) < 0)
        return -1;
    *maximize = exp_maximize(&x);
    exp_clear(&x);
    return 0;
}

static void nj_num(struct strbuf *sb, double v)
{
    if (isfinite(v))
        sb_printf(sb, "%.10g", v);
    else
        sb_puts(sb, "null");
}

static int64_t change_cursor(struct req *q, struct errbuf *e)
{
    int64_t seq = 0;
    return change_counter_now(q->a->db, &seq, e) < 0 ? -1 : seq;
}

/* The last reply of a read whose answer depends only on the trials: the same request
 * while no trial changed (same change counter) is answered from here. A page opened
 * by several people, or reloaded, costs one computation. */
struct reply_cache {
    int64_t seq, arg;
    char *body;
};

static const char *cache_get(const struct reply_cache *c, int64_t seq, int64_t arg)
{
    return c->body && c->seq == seq && c->arg == arg ? c->body : NULL;
}

static void cache_put(struct reply_cache *c, int64_t seq, int64_t arg, const char *body)
{
    free(c->body);
    c->body = xstrdup(body);
    c->seq = seq;
    c->arg = arg;
}

static void send_sb(struct req *q, struct strbuf *sb)
{
    reply_json(q->r, 200, sb->buf ? sb->buf : "{}");
    sb_free(sb);
}

/* The change counter into *seq, and the reply for (*seq, arg) when c holds it: 1 when
 * the request is answered (from c, or a 500 when the counter cannot be read), 0 when
 * the reply is to be computed. */
static int reply_cached(struct req *q, const struct reply_cache *c, int64_t arg, int64_t *seq)
{
    struct errbuf e;
    *seq = change_cursor(q, &e);
    if (*seq < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        return 1;
    }
    const char *hit = cache_get(c, *seq, arg);
    if (hit)
        reply_json(q->r, 200, hit);
    return hit != NULL;
}

/* ---------------- GET /webui/overview ---------------- */

/* {"seq", "status", "total", "counts": {status: n, ... every status}, "ended",
 *  "succeededWithoutMetric", "optimizeMode", "best": {trialJobId, sequenceId, value,
 *  finalMetric} | null, "readonly"} */
void h_webui_overview(struct req *q)
{
    struct api *a = q->a;
    struct errbuf e;
    int64_t seq = change_cursor(q, &e);
    if (seq < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    struct experiment x;
    if (req_experiment(q, &x) < 0)
        return;
    int maximize = exp_maximize(&x);
    int64_t counts[TRIAL_NSTATUS] = {0}, total = 0, ended = 0, nometric = 0;
    struct status_count *per;
    int nper = 0;
    if (trials_succeeded_without_metric(a->db, a->exp_id, &nometric, &e) < 0 ||
        trials_per_status(a->db, a->exp_id, &per, &nper, &e) < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        exp_clear(&x);
        return;
    }
    for (int k = 0; k < nper; k++) {
        const char *s = per[k].status;
        total += per[k].n;
        for (int i = 0; s && i < TRIAL_NSTATUS; i++)
            if (strcmp(s, trial_statuses[i]) == 0)
                counts[i] = per[k].n;
        if (trial_status_final(s))
            ended += per[k].n;
    }
    status_counts_free(per, nper);
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "{\"seq\":%lld,\"status\":", (long long)seq);
    nj_str(&sb, x.status);
    sb_printf(&sb, ",\"total\":%lld,\"counts\":{", (long long)total);
    for (int i = 0; i < TRIAL_NSTATUS; i++)
        sb_printf(&sb, "%s\"%s\":%lld", i ? "," : "", trial_statuses[i], (long long)counts[i]);
    sb_printf(&sb, "},\"ended\":%lld,\"succeededWithoutMetric\":%lld,\"optimizeMode\":\"%s\",\"readonly\":%s",
              (long long)ended, (long long)nometric, maximize ? "maximize" : "minimize", a->readonly ? "true" : "false");
    struct best_trial best;
    int rc = trial_best_final(a->db, a->exp_id, maximize, &best, &e);
    exp_clear(&x);
    if (rc < 0) {
        sb_free(&sb);
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    if (rc == 1) {
        sb_puts(&sb, ",\"best\":{\"trialJobId\":");
        nj_str(&sb, best.trial_id);
        sb_printf(&sb, ",\"sequenceId\":%lld,\"value\":", (long long)best.sequence);
        nj_num(&sb, best.final_metric);
        sb_puts(&sb, ",\"finalMetric\":");
        nj_str(&sb, best.final_metric_json);
        sb_puts(&sb, "}}");
    } else {
        sb_puts(&sb, ",\"best\":null}");
    }
    best_trial_clear(&best);
    send_sb(q, &sb);
}

/* ---------------- GET /webui/trials ---------------- */

#define PAGE_MAX 500

/* ?sort=sequence|id|status|metric|duration|start|end|param:<name>|metric:<key> &order=asc|desc
 * &status=S[,S...] &q=<text> &limit=1..500 (50) &offset=N
 * -> {"seq", "total", "offset", "rows": [TrialJobInfo...]}. Trials without a value for
 * the sort column come last in both orders; ties go by sequence. A nullable column is
 * read in two parts (with a value, sorted; then without, by sequence), so that an
 * index on the column serves the first part. */
void h_webui_trials(struct req *q)
{
    struct api *a = q->a;
    const char *sort = query_str(q, "sort");
    const char *order = query_str(q, "order");
    const char *status = query_str(q, "status");
    const char *text = query_str(q, "q");
    int64_t limit = 50, offset = 0;
    if (query_int(q, "limit", 1, PAGE_MAX, &limit) < 0 || query_int(q, "offset", 0, 1000000000, &offset) < 0)
        return;
    if (!webui_sort_known(sort)) {
        reply_error(q->r, 400, "query parameter sort: unknown column '%.64s' (sequence, id, status, metric, duration,"
                               " start, end, param:<name>, metric:<key>)", sort);
        return;
    }
    int desc = 0;
    if (order && strcmp(order, "desc") == 0)
        desc = 1;
    else if (order && strcmp(order, "asc") != 0) {
        reply_error(q->r, 400, "query parameter order: must be asc or desc (got '%.64s')", order);
        return;
    }
    if (status && *status) {
        /* a comma list of known statuses */
        const char *p = status;
        for (;;) {
            size_t len = strcspn(p, ",");
            if (len == 0) {
                reply_error(q->r, 400, "query parameter status: an empty entry in '%.64s' (statuses separated by"
                                       " single commas)", status);
                return;
            }
            if (trial_status_find(p, len) < 0) {
                reply_error(q->r, 400, "query parameter status: unknown trial status '%.*s' (" TRIAL_STATUS_WORDS
                                       "; comma-separated)", (int)(len > 64 ? 64 : len), p);
                return;
            }
            p += len;
            if (!*p)
                break;
            p++; /* the ',': another entry follows, maybe empty */
        }
    }
    if (text && strlen(text) > 200) {
        reply_error(q->r, 400, "query parameter q: at most 200 characters");
        return;
    }
    struct errbuf e;
    struct trial_query tq = {.exp_id = a->exp_id, .sort = sort, .desc = desc, .status = status, .text = text,
                             .limit = limit, .offset = offset};
    int64_t seq = change_cursor(q, &e), total = 0;
    struct trial *rows = xcalloc((size_t)limit, sizeof *rows);
    int n = 0;
    int rc = seq < 0 ? -1 : webui_trial_page(a->db, &tq, rows, &n, &total, &e);
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "{\"seq\":%lld,\"total\":%lld,\"offset\":%lld,\"rows\":[", (long long)seq, (long long)total,
              (long long)offset);
    for (int i = 0; i < n; i++) {
        if (rc == 0) {
            if (i)
                sb_add(&sb, ",", 1);
            rc = nni_trial_job_write(a->db, &a->exp, &rows[i], &sb, &e);
        }
        trial_clear(&rows[i]);
    }
    free(rows);
    if (rc < 0) {
        sb_free(&sb);
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    sb_puts(&sb, "]}");
    send_sb(q, &sb);
}

/* ---------------- GET /webui/charts ---------------- */

static void pt_write(struct strbuf *sb, int *first, const struct chart_pt *p)
{
    sb_printf(sb, "%s[%lld,", *first ? "" : ",", (long long)p->seq);
    *first = 0;
    nj_num(sb, p->v);
    sb_add(sb, ",", 1);
    nj_str(sb, p->id);
    sb_add(sb, "]", 1);
}

/* The lowest and highest point of each bucket, in sequence order. */
static void buckets_write(struct strbuf *sb, const struct chart_bucket *b, int64_t nb)
{
    int first = 1;
    sb_add(sb, "[", 1);
    for (int64_t i = 0; i < nb; i++) {
        if (!b[i].n)
            continue;
        const struct chart_pt *x = &b[i].lo, *y = &b[i].hi;
        if (y->seq < x->seq) {
            const struct chart_pt *t = x;
            x = y;
            y = t;
        }
        pt_write(sb, &first, x);
        if (y->seq != x->seq)
            pt_write(sb, &first, y);
    }
    sb_add(sb, "]", 1);
}

/* The api's chart blocks (one experiment per api) and its last answers. */
static struct chart_blocks blocks;
static struct reply_cache chart_cache;
/* Trial rows a first read of every trial takes per turn of the event loop (~5 ms);
 * TRIALQ_CHART_SLICE_ROWS: tests shorten it. */
static int64_t chart_slice_rows(void)
{
    const char *env = getenv("TRIALQ_CHART_SLICE_ROWS");
    long long v = env ? atoll(env) : 0;
    return v > 0 ? v : 16384;
}

/* The reply from up-to-date blocks: nb buckets of width sequences from the first
 * block's start, width a whole number of blocks (with blocks of 1: nb buckets over
 * lo..hi exactly). */
static void chart_json(struct strbuf *sb, int64_t seq, int maximize, int64_t nb)
{
    int64_t bs = blocks.have ? INT64_C(1) << blocks.shift : 1, start = blocks.have ? blocks.base : 0;
    int64_t width = blocks.have ? (blocks.hi - start) / nb + 1 : 1;
    width = (width + bs - 1) / bs * bs;
    struct chart_bucket *fb = xcalloc((size_t)nb, sizeof *fb), *db = xcalloc((size_t)nb, sizeof *db);
    int64_t nfinal = 0, ndur = 0;
    for (int64_t i = 0; i < blocks.nblocks; i++) {
        int64_t k = (i * bs) / width;
        if (k >= nb)
            break;
        chart_bucket_merge(&fb[k], &blocks.b[i].fin);
        chart_bucket_merge(&db[k], &blocks.b[i].dur);
        nfinal += blocks.b[i].fin.n;
        ndur += blocks.b[i].dur.n;
    }
    sb_printf(sb, "{\"seq\":%lld,\"optimizeMode\":\"%s\",\"width\":%lld,\"final\":{\"count\":%lld,\"points\":",
              (long long)seq, maximize ? "maximize" : "minimize", (long long)width, (long long)nfinal);
    buckets_write(sb, fb, nb);
    sb_puts(sb, "},\"best\":[");
    int first = 1, have_best = 0;
    double bestv = 0;
    for (int64_t i = 0; i < nb; i++) {
        if (!fb[i].n)
            continue;
        const struct chart_pt *p = maximize ? &fb[i].hi : &fb[i].lo;
        if (!have_best || (maximize ? p->v > bestv : p->v < bestv)) {
            have_best = 1;
            bestv = p->v;
            pt_write(sb, &first, p);
        }
    }
    sb_printf(sb, "],\"duration\":{\"count\":%lld,\"points\":", (long long)ndur);
    buckets_write(sb, db, nb);
    sb_puts(sb, "}}");
    cache_put(&chart_cache, seq, nb, sb->buf);
    free(fb);
    free(db);
}

/* A chart whose blocks are first read whole: a slice per piece of a chunked reply,
 * a space (JSON's whitespace) for each until the last, which has the answer. */
static int chart_fill(struct stream *s, struct strbuf *sb, struct errbuf *e)
{
    int64_t seq = 0;
    if (change_counter_now(s->a->db, &seq, e) < 0)
        return -1;
    int rc = chart_blocks_refresh(s->a->db, s->a->exp_id, seq, &blocks, chart_slice_rows(), e);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        sb_add(sb, " ", 1);
        return 1;
    }
    chart_json(sb, seq, exp_maximize(&s->x), *(int64_t *)s->state);
    return 0;
}

static void chart_done(struct stream *s)
{
    free(s->state);
}

/* ?buckets=10..4000 (600) -> {"seq", "optimizeMode", "width", "final": {"count",
 * "points": [[sequence, value, id], ...]}, "best": [[sequence, best so far, id], ...],
 * "duration": {"count", "points": [[sequence, seconds, id], ...]}}.
 * The trials' sequence range is cut into buckets; each bucket gives its lowest and
 * highest final metric (and duration of an ended trial), so outliers stay visible
 * while the reply stays at most 2 x buckets points whatever the history. "best" has
 * the last improvement of the best-so-far final metric within each bucket: the
 * bucket's best, where it beats every bucket before. The buckets are merged from the
 * blocks the api keeps up to date from the change sequence (schema/chart_blocks.h): a
 * width of whole blocks (1 trial up to 16,384 trials, 64 at 1M), so a change costs the
 * rows of its block, not a read of every trial. When every trial must be read (the
 * first chart, blocks that double), the reply is chunked and the reading sliced, so
 * that other requests are answered in between. */
void h_webui_charts(struct req *q)
{
    struct api *a = q->a;
    int64_t nb = 600;
    if (query_int(q, "buckets", 10, 4000, &nb) < 0)
        return;
    int64_t seq;
    if (reply_cached(q, &chart_cache, nb, &seq))
        return;
    struct errbuf e;
    int rc = chart_blocks_refresh(a->db, a->exp_id, seq, &blocks, chart_slice_rows(), &e);
    if (rc < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    if (rc == 0) {
        struct stream *s = stream_new(q);
        if (!s)
            return;
        s->raw = 1;
        s->paced = 1;
        s->state = xmalloc(sizeof nb);
        *(int64_t *)s->state = nb;
        s->fill = chart_fill;
        s->done = chart_done;
        stream_start(s, -1);
        return;
    }
    int maximize;
    if (req_maximize(q, &maximize) < 0)
        return;
    struct strbuf sb;
    sb_init(&sb);
    chart_json(&sb, seq, maximize, nb);
    send_sb(q, &sb);
}

/* ---------------- GET /webui/params ---------------- */

struct params_out {
    struct strbuf *sb;
    int first, top;
};

static void params_row(void *ctx, const struct param_row *r)
{
    struct params_out *o = ctx;
    struct strbuf *sb = o->sb;
    sb_puts(sb, o->first ? "{\"id\":" : ",{\"id\":");
    o->first = 0;
    nj_str(sb, r->id);
    sb_printf(sb, ",\"seq\":%lld,\"metric\":", (long long)r->sequence);
    nj_num(sb, r->metric);
    /* parameters is the JSON object the api stored; checked anyway, so that one
     * damaged row cannot break the whole reply */
    cJSON *j = r->parameters ? cJSON_Parse(r->parameters) : NULL;
    sb_puts(sb, ",\"params\":");
    sb_puts(sb, cJSON_IsObject(j) ? r->parameters : "{}");
    cJSON_Delete(j);
    sb_printf(sb, ",\"top\":%s}", o->top ? "true" : "false");
}

/* ?n=10..5000 (1000) -> {"seq", "count", "optimizeMode", "trials": [{"id", "seq",
 * "metric", "params": {...}, "top"}, ...]}: of the trials with a final metric, the
 * best n/2 (top: true) and about n/2 others spread evenly over the sequence (a trial
 * can be in both): param_sample, a seek per point, so the cost does not grow with the
 * history. */
void h_webui_params(struct req *q)
{
    struct api *a = q->a;
    int64_t n = 1000;
    if (query_int(q, "n", 10, 5000, &n) < 0)
        return;
    static struct reply_cache cache;
    int64_t seq, count = 0;
    int maximize;
    if (reply_cached(q, &cache, n, &seq) || req_maximize(q, &maximize) < 0)
        return;
    struct errbuf e;
    if (trials_with_shown_metric(a->db, a->exp_id, &count, &e) < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "{\"seq\":%lld,\"count\":%lld,\"optimizeMode\":\"%s\",\"trials\":[", (long long)seq,
              (long long)count, maximize ? "maximize" : "minimize");
    int64_t half = n / 2;
    struct params_out o = {.sb = &sb, .first = 1, .top = 1};
    int bad = param_rows(a->db, a->exp_id, maximize, half, params_row, &o, &e) < 0;
    if (!bad) {
        o.top = 0;
        bad = param_sample(a->db, a->exp_id, count, n - half, params_row, &o, &e) < 0;
    }
    if (bad) {
        sb_free(&sb);
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    sb_puts(&sb, "]}");
    cache_put(&cache, seq, n, sb.buf);
    send_sb(q, &sb);
}

/* ---------------- GET /webui/importance ---------------- */

/* the importance of x (which it clears) for key at seq, answered and kept in the cache */
static void importance_reply(struct req *q, struct experiment *x, const char *key, int64_t seq,
                             struct reply_cache *cache, char **cache_key)
{
    struct errbuf e;
    struct strbuf sb;
    sb_init(&sb);
    int rc = exp_importance_json(q->a->db, x, key, seq, &sb, &e);
    exp_clear(x);
    if (rc < 0) {
        sb_free(&sb);
        reply_error(q->r, rc == -2 ? 400 : 500, "%s%s", rc == -2 && str_starts(e.msg, "metric:") ? "query parameter " : "",
                    e.msg);
        return;
    }
    cache_put(cache, seq, 0, sb.buf);
    free(*cache_key);
    *cache_key = key ? xstrdup(key) : NULL;
    send_sb(q, &sb);
}

/* ?metric=KEY (absent: the default metric) -> exp_importance_json's object (api/importance.h,
 * docs/rest-api.md): PED-ANOVA over the most recent IMP_SAMPLE SUCCEEDED trials with a
 * final metric. The last answer is kept while no trial changes. */
void h_webui_importance(struct req *q)
{
    const char *key = query_str(q, "metric");
    static struct reply_cache cache;
    static char *cache_key;
    struct errbuf e;
    int64_t seq = change_cursor(q, &e);
    int same_key = cache_key ? key && strcmp(cache_key, key) == 0 : !key;
    const char *hit = seq >= 0 && same_key ? cache_get(&cache, seq, 0) : NULL;
    struct experiment x;
    if (hit)
        reply_json(q->r, 200, hit);
    else if (seq < 0)
        reply_error(q->r, 500, "%s", e.msg);
    else if (req_experiment(q, &x) == 0)
        importance_reply(q, &x, key, seq, &cache, &cache_key);
}
