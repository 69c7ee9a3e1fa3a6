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

#include "api/routes_webui.h"

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
    char *exe = self_exe_path();
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    char *installed = xasprintf("%s/../share/trialq/webui", exe);
    char *index = xasprintf("%s/index.html", installed);
    if (access(index, R_OK) == 0) {
        dir = installed;
    } else {
        free(installed);
        dir = xstrdup(TRIALQ_SOURCE_DIR "/webui");
    }
    free(index);
    free(exe);
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

/* The experiment as it is now (VIEWED under nnictl view); -1 with a 500 sent. */
static int load_exp(struct req *q, struct experiment *x)
{
    struct errbuf e;
    if (exp_load(q->a->db, q->a->exp_id, x, &e) <= 0) {
        reply_error(q->r, 500, "experiment %s: cannot load it", q->a->exp_id);
        return -1;
    }
    if (q->a->readonly) {
        free(x->status);
        x->status = xstrdup("VIEWED");
    }
    return 0;
}

/* tuner (or advisor) classArgs.optimize_mode; minimize when absent, as best_trials_v. */
static int maximize_of(const struct experiment *x)
{
    cJSON *c = cJSON_Parse(x->config);
    int max = 0;
    const char *who[] = {"tuner", "advisor"};
    for (int i = 0; c && i < 2; i++) {
        const cJSON *ca = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, who[i]), "classArgs");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(ca, "optimize_mode");
        if (cJSON_IsString(m)) {
            max = strcasecmp(m->valuestring, "maximize") == 0;
            break;
        }
    }
    cJSON_Delete(c);
    return max;
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
    return db_int(q->a->db, e, &seq, "SELECT value FROM change_counter WHERE id = 1", "") < 0 ? -1 : seq;
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

static const char *const statuses[] = {"WAITING",       "RUNNING",      "SUCCEEDED",     "FAILED",
                                       "USER_CANCELED", "SYS_CANCELED", "EARLY_STOPPED", "UNKNOWN"};
#define NSTATUS (int)(sizeof statuses / sizeof statuses[0])

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
    if (load_exp(q, &x) < 0)
        return;
    int maximize = maximize_of(&x);
    int64_t counts[NSTATUS] = {0}, total = 0, ended = 0, nometric = 0;
    /* both answered from indexes: trial_queue, trial_final_metric (migration 012) */
    if (db_int(a->db, &e, &nometric, "SELECT count(*) FROM trial WHERE experiment_id = ? AND final_metric IS NULL"
                                     " AND status = 'SUCCEEDED'", "s", a->exp_id) < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        exp_clear(&x);
        return;
    }
    sqlite3_stmt *st = db_query(a->db, &e, "SELECT status, count(*) FROM trial WHERE experiment_id = ? GROUP BY status",
                                "s", a->exp_id);
    int rc = SQLITE_ERROR;
    if (st) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *s = (const char *)sqlite3_column_text(st, 0);
            int64_t n = col_i64(st, 1);
            total += n;
            for (int i = 0; s && i < NSTATUS; i++)
                if (strcmp(s, statuses[i]) == 0)
                    counts[i] = n;
            if (s && trial_status_final(s))
                ended += n;
        }
        sqlite3_reset(st);
    }
    if (rc != SQLITE_DONE) {
        reply_error(q->r, 500, "counting trials: %s", st ? sqlite3_errmsg(a->db->h) : e.msg);
        exp_clear(&x);
        return;
    }
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "{\"seq\":%lld,\"status\":", (long long)seq);
    nj_str(&sb, x.status);
    sb_printf(&sb, ",\"total\":%lld,\"counts\":{", (long long)total);
    for (int i = 0; i < NSTATUS; i++)
        sb_printf(&sb, "%s\"%s\":%lld", i ? "," : "", statuses[i], (long long)counts[i]);
    sb_printf(&sb, "},\"ended\":%lld,\"succeededWithoutMetric\":%lld,\"optimizeMode\":\"%s\",\"readonly\":%s",
              (long long)ended, (long long)nometric, maximize ? "maximize" : "minimize", a->readonly ? "true" : "false");
    st = db_query(a->db, &e,
                  maximize ? "SELECT id, sequence, final_metric, final_metric_json FROM trial WHERE experiment_id = ?"
                             " AND status = 'SUCCEEDED' AND final_metric IS NOT NULL"
                             " ORDER BY final_metric DESC, sequence LIMIT 1"
                           : "SELECT id, sequence, final_metric, final_metric_json FROM trial WHERE experiment_id = ?"
                             " AND status = 'SUCCEEDED' AND final_metric IS NOT NULL"
                             " ORDER BY final_metric ASC, sequence LIMIT 1",
                  "s", a->exp_id);
    rc = st ? sqlite3_step(st) : SQLITE_ERROR;
    if (rc == SQLITE_ROW) {
        sb_puts(&sb, ",\"best\":{\"trialJobId\":");
        nj_str(&sb, (const char *)sqlite3_column_text(st, 0));
        sb_printf(&sb, ",\"sequenceId\":%lld,\"value\":", (long long)col_i64(st, 1));
        nj_num(&sb, sqlite3_column_double(st, 2));
        sb_puts(&sb, ",\"finalMetric\":");
        nj_str(&sb, (const char *)sqlite3_column_text(st, 3));
        sb_puts(&sb, "}}");
    } else if (rc == SQLITE_DONE) {
        sb_puts(&sb, ",\"best\":null}");
    }
    if (st)
        sqlite3_reset(st);
    exp_clear(&x);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        sb_free(&sb);
        reply_error(q->r, 500, "best trial: %s", st ? sqlite3_errmsg(a->db->h) : e.msg);
        return;
    }
    send_sb(q, &sb);
}

/* ---------------- GET /webui/trials ---------------- */

#define PAGE_MAX 500

/* A trial's final metric is shown (finalMetricData) only when it SUCCEEDED, as in NNI:
 * a failed trial's FINAL report has no place in a metric order. */
#define METRIC_SHOWN " AND status = 'SUCCEEDED'"

/* sort=<column> to an SQL expression (*nullable: some trials have no value for it; *shown:
 * more SQL that a trial with a value must also meet, else "") ; param:<name> sorts by that
 * parameter, metric:<key> by that key of a dict final metric. NULL for an unknown column. */
static const char *sort_expr(const char *sort, char *path, size_t pathsz, int *nullable, const char **shown)
{
    static const struct {
        const char *name, *expr;
        int nullable;
    } cols[] = {
        {"sequence", "sequence", 0},
        {"id", "id", 0},
        {"status", "status", 0},
        {"metric", "final_metric", 1},
        {"duration", "(coalesce(end_time, :now) - start_time)", 1},
        {"start", "start_time", 1},
        {"end", "end_time", 1},
    };
    *shown = "";
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        if (strcmp(sort, cols[i].name) == 0) {
            *nullable = cols[i].nullable;
            if (strcmp(sort, "metric") == 0)
                *shown = METRIC_SHOWN;
            return cols[i].expr;
        }
    if (str_starts(sort, "param:")) {
        const char *n = sort + 6;
        if (!*n || strlen(n) > 100 || strpbrk(n, "\"\\"))
            return NULL;
        snprintf(path, pathsz, "$.\"%s\"", n);
        *nullable = 1;
        return "json_extract(parameters, :path)";
    }
    if (str_starts(sort, "metric:")) {
        /* a key of a dict final metric ({"default": .., "loss": ..}); a number has none */
        const char *n = sort + 7;
        if (!*n || strlen(n) > 100 || strpbrk(n, "\"\\"))
            return NULL;
        snprintf(path, pathsz, "$.\"%s\"", n);
        *nullable = 1;
        *shown = METRIC_SHOWN;
        return "(CASE WHEN json_valid(final_metric_json) THEN json_extract(final_metric_json, :path) END)";
    }
    return NULL;
}

/* the values a trial-page query may name */
struct binds {
    const char *exp, *status, *like, *text, *path;
    int64_t now, limit, offset;
};

static sqlite3_stmt *prep_bound(struct db *db, const char *sql, const struct binds *b, struct errbuf *e)
{
    sqlite3_stmt *st = db_prep(db, sql, e);
    if (!st)
        return NULL;
    const struct {
        const char *name, *v;
    } texts[] = {{":exp", b->exp}, {":status", b->status}, {":like", b->like}, {":text", b->text}, {":path", b->path}};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int k = sqlite3_bind_parameter_index(st, texts[i].name);
        if (k > 0)
            sqlite3_bind_text(st, k, texts[i].v, -1, SQLITE_TRANSIENT);
    }
    const struct {
        const char *name;
        int64_t v;
    } ints[] = {{":now", b->now}, {":limit", b->limit}, {":offset", b->offset}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int k = sqlite3_bind_parameter_index(st, ints[i].name);
        if (k > 0)
            sqlite3_bind_int64(st, k, ints[i].v);
    }
    return st;
}

static int run_count(struct db *db, const char *sql, const struct binds *b, int64_t *out, struct errbuf *e)
{
    sqlite3_stmt *st = prep_bound(db, sql, b, e);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? col_i64(st, 0) : 0;
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : errf(e, "counting trials: %s", sqlite3_errmsg(db->h));
}

/* Appends up to b->limit rows to rows[*n]. The rows are read before anything is
 * rendered: rendering runs queries of its own, which must not evict this statement
 * from the cache while it is stepped. */
static int run_page(struct db *db, const char *sql, const struct binds *b, struct trial *rows, int *n, struct errbuf *e)
{
    sqlite3_stmt *st = prep_bound(db, sql, b, e);
    if (!st)
        return -1;
    int rc = SQLITE_DONE, got = 0;
    while (got < b->limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        trial_from_row(st, &rows[*n]);
        (*n)++;
        got++;
    }
    if (got == b->limit)
        rc = SQLITE_DONE;
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : errf(e, "trial page: %s", sqlite3_errmsg(db->h));
}

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
    char path[128] = "";
    int nullable = 0;
    const char *shown = "";
    const char *expr = sort_expr(sort ? sort : "sequence", path, sizeof path, &nullable, &shown);
    if (!expr) {
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
    const char *dir = desc ? "DESC" : "ASC";
    int nstatus = 0;
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
            int known = 0;
            for (int i = 0; i < NSTATUS; i++)
                known |= strlen(statuses[i]) == len && strncmp(p, statuses[i], len) == 0;
            if (!known) {
                reply_error(q->r, 400, "query parameter status: unknown trial status '%.*s' (WAITING, RUNNING,"
                                       " SUCCEEDED, FAILED, USER_CANCELED, SYS_CANCELED, EARLY_STOPPED; comma-separated)",
                            (int)(len > 64 ? 64 : len), p);
                return;
            }
            nstatus++;
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
    char *like = NULL;
    if (text && *text) {
        /* LIKE with its wildcards escaped: the text is matched literally */
        struct strbuf lb;
        sb_init(&lb);
        sb_puts(&lb, "%");
        for (const char *p = text; *p; p++) {
            if (*p == '%' || *p == '_' || *p == '\\')
                sb_add(&lb, "\\", 1);
            sb_add(&lb, p, 1);
        }
        sb_puts(&lb, "%");
        like = sb_detach(&lb);
    }
    struct strbuf where;
    sb_init(&where);
    sb_puts(&where, " FROM trial WHERE experiment_id = :exp");
    if (nstatus == 1)
        sb_puts(&where, " AND status = :status");
    else if (nstatus > 1)
        sb_puts(&where, " AND instr(',' || :status || ',', ',' || status || ',') > 0");
    if (like)
        sb_puts(&where, " AND (id LIKE :like ESCAPE '\\' OR CAST(sequence AS TEXT) = :text"
                        " OR parameters LIKE :like ESCAPE '\\' OR coalesce(message, '') LIKE :like ESCAPE '\\'"
                        " OR coalesce(waiting_reason, '') LIKE :like ESCAPE '\\')");
    char *count_sql = xasprintf("SELECT count(*)%s", where.buf);
    char *valued_count_sql = xasprintf("SELECT count(*)%s AND %s IS NOT NULL%s", where.buf, expr, shown);
    char *page_sql = !nullable && strcmp(expr, "sequence") == 0
                         ? xasprintf("SELECT " TRIAL_COLUMNS "%s ORDER BY sequence %s LIMIT :limit OFFSET :offset",
                                     where.buf, dir)
                     : !nullable ? xasprintf("SELECT " TRIAL_COLUMNS "%s ORDER BY %s %s, sequence %s"
                                             " LIMIT :limit OFFSET :offset", where.buf, expr, dir, dir)
                                 : xasprintf("SELECT " TRIAL_COLUMNS "%s AND %s IS NOT NULL%s ORDER BY %s %s,"
                                             " sequence %s LIMIT :limit OFFSET :offset", where.buf, expr, shown, expr,
                                             dir, dir);
    char *unvalued_sql = xasprintf("SELECT " TRIAL_COLUMNS "%s AND NOT (%s IS NOT NULL%s) ORDER BY sequence %s"
                                   " LIMIT :limit OFFSET :offset", where.buf, expr, shown, dir);
    sb_free(&where);
    struct errbuf e;
    struct binds b = {.exp = a->exp_id, .status = status, .like = like, .text = text, .path = path,
                      .now = now_ms(), .limit = limit, .offset = offset};
    int64_t seq = change_cursor(q, &e), total = 0, valued = 0;
    struct trial *rows = xcalloc((size_t)limit, sizeof *rows);
    int n = 0;
    int rc = seq < 0 || run_count(a->db, count_sql, &b, &total, &e) < 0 ? -1 : 0;
    if (rc == 0 && !nullable) {
        rc = run_page(a->db, page_sql, &b, rows, &n, &e);
    } else if (rc == 0) {
        rc = run_count(a->db, valued_count_sql, &b, &valued, &e);
        if (rc == 0 && offset < valued)
            rc = run_page(a->db, page_sql, &b, rows, &n, &e);
        if (rc == 0 && n < limit) {
            b.limit = limit - n;
            b.offset = offset > valued ? offset - valued : 0;
            rc = run_page(a->db, unvalued_sql, &b, rows, &n, &e);
        }
    }
    free(count_sql);
    free(valued_count_sql);
    free(page_sql);
    free(unvalued_sql);
    free(like);
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

struct pt {
    int64_t seq;
    double v;
    char id[16];
};
struct bucket {
    struct pt lo, hi;
    int n;
};

static void pt_set(struct pt *p, int64_t seq, double v, const char *id)
{
    p->seq = seq;
    p->v = v;
    size_t n = id ? strlen(id) : 0;
    if (n >= sizeof p->id)
        n = sizeof p->id - 1;
    memcpy(p->id, id ? id : "", n);
    p->id[n] = '\0';
}

/* rows come in sequence order: on a tie the earlier trial stays */
static void bucket_add(struct bucket *b, int64_t seq, double v, const char *id)
{
    if (b->n == 0 || v < b->lo.v)
        pt_set(&b->lo, seq, v, id);
    if (b->n == 0 || v > b->hi.v)
        pt_set(&b->hi, seq, v, id);
    b->n++;
}

static void pt_write(struct strbuf *sb, int *first, const struct pt *p)
{
    sb_printf(sb, "%s[%lld,", *first ? "" : ",", (long long)p->seq);
    *first = 0;
    nj_num(sb, p->v);
    sb_add(sb, ",", 1);
    nj_str(sb, p->id);
    sb_add(sb, "]", 1);
}

/* The lowest and highest point of each bucket, in sequence order. */
static void buckets_write(struct strbuf *sb, const struct bucket *b, int nb)
{
    int first = 1;
    sb_add(sb, "[", 1);
    for (int i = 0; i < nb; i++) {
        if (!b[i].n)
            continue;
        const struct pt *x = &b[i].lo, *y = &b[i].hi;
        if (y->seq < x->seq) {
            const struct pt *t = x;
            x = y;
            y = t;
        }
        pt_write(sb, &first, x);
        if (y->seq != x->seq)
            pt_write(sb, &first, y);
    }
    sb_add(sb, "]", 1);
}

/* ?buckets=10..4000 (600) -> {"seq", "optimizeMode", "width", "final": {"count",
 * "points": [[sequence, value, id], ...]}, "best": [[sequence, best so far, id], ...],
 * "duration": {"count", "points": [[sequence, seconds, id], ...]}}.
 * The trials' sequence range is cut into buckets; each bucket gives its lowest and
 * highest final metric (and duration of an ended trial), so outliers stay visible
 * while the reply stays at most 2 x buckets points whatever the history. "best" has
 * the last improvement of the best-so-far final metric within each bucket. */
void h_webui_charts(struct req *q)
{
    struct api *a = q->a;
    int64_t nb = 600;
    if (query_int(q, "buckets", 10, 4000, &nb) < 0)
        return;
    static struct reply_cache cache;
    struct errbuf e;
    int64_t seq = change_cursor(q, &e);
    const char *hit = seq >= 0 ? cache_get(&cache, seq, nb) : NULL;
    if (hit) {
        reply_json(q->r, 200, hit);
        return;
    }
    int64_t lo = 0, hi = -1;
    sqlite3_stmt *st = seq < 0 ? NULL
                               : db_query(a->db, &e, "SELECT min(sequence), max(sequence) FROM trial"
                                                     " WHERE experiment_id = ?", "s", a->exp_id);
    int rc = st ? sqlite3_step(st) : SQLITE_ERROR;
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        lo = col_i64(st, 0);
        hi = col_i64(st, 1);
    }
    if (st)
        sqlite3_reset(st);
    if (rc != SQLITE_ROW) {
        reply_error(q->r, 500, "charts: %s", st ? sqlite3_errmsg(a->db->h) : e.msg);
        return;
    }
    struct experiment x;
    if (load_exp(q, &x) < 0)
        return;
    int maximize = maximize_of(&x);
    exp_clear(&x);
    int64_t width = hi >= lo ? (hi - lo) / nb + 1 : 1;
    struct bucket *fb = xcalloc((size_t)nb, sizeof *fb), *db = xcalloc((size_t)nb, sizeof *db);
    struct pt *best = xcalloc((size_t)nb, sizeof *best);
    int *best_set = xcalloc((size_t)nb, sizeof *best_set);
    int64_t nfinal = 0, ndur = 0;
    int have_best = 0;
    double bestv = 0;
    st = db_query(a->db, &e, "SELECT sequence, id, CASE WHEN status = 'SUCCEEDED' THEN final_metric END,"
                             " start_time, end_time FROM trial WHERE experiment_id = ? ORDER BY sequence",
                  "s", a->exp_id); /* the final metrics trials show (METRIC_SHOWN) */
    rc = SQLITE_ERROR;
    if (st) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            int64_t s = col_i64(st, 0);
            int64_t k = (s - lo) / width;
            if (k < 0 || k >= nb)
                continue;
            const char *id = (const char *)sqlite3_column_text(st, 1);
            if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
                double v = sqlite3_column_double(st, 2);
                if (isfinite(v)) {
                    bucket_add(&fb[k], s, v, id);
                    nfinal++;
                    if (!have_best || (maximize ? v > bestv : v < bestv)) {
                        have_best = 1;
                        bestv = v;
                        pt_set(&best[k], s, v, id);
                        best_set[k] = 1;
                    }
                }
            }
            if (sqlite3_column_type(st, 3) != SQLITE_NULL && sqlite3_column_type(st, 4) != SQLITE_NULL) {
                bucket_add(&db[k], s, (double)(col_i64(st, 4) - col_i64(st, 3)) / 1000.0, id);
                ndur++;
            }
        }
        sqlite3_reset(st);
    }
    if (rc != SQLITE_DONE) {
        reply_error(q->r, 500, "charts: %s", st ? sqlite3_errmsg(a->db->h) : e.msg);
    } else {
        struct strbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "{\"seq\":%lld,\"optimizeMode\":\"%s\",\"width\":%lld,\"final\":{\"count\":%lld,\"points\":",
                  (long long)seq, maximize ? "maximize" : "minimize", (long long)width, (long long)nfinal);
        buckets_write(&sb, fb, (int)nb);
        sb_puts(&sb, "},\"best\":[");
        int first = 1;
        for (int i = 0; i < nb; i++)
            if (best_set[i])
                pt_write(&sb, &first, &best[i]);
        sb_printf(&sb, "],\"duration\":{\"count\":%lld,\"points\":", (long long)ndur);
        buckets_write(&sb, db, (int)nb);
        sb_puts(&sb, "}}");
        cache_put(&cache, seq, nb, sb.buf);
        send_sb(q, &sb);
    }
    free(fb);
    free(db);
    free(best);
    free(best_set);
}

/* ---------------- GET /webui/params ---------------- */

static int params_rows(struct req *q, sqlite3_stmt *st, struct strbuf *sb, int *first, int top, struct errbuf *e)
{
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        sb_puts(sb, *first ? "{\"id\":" : ",{\"id\":");
        *first = 0;
        nj_str(sb, (const char *)sqlite3_column_text(st, 0));
        sb_printf(sb, ",\"seq\":%lld,\"metric\":", (long long)col_i64(st, 1));
        nj_num(sb, sqlite3_column_double(st, 2));
        /* parameters is the JSON object the api stored; checked anyway, so that one
         * damaged row cannot break the whole reply */
        const char *p = (const char *)sqlite3_column_text(st, 3);
        cJSON *j = p ? cJSON_Parse(p) : NULL;
        sb_puts(sb, ",\"params\":");
        sb_puts(sb, cJSON_IsObject(j) ? p : "{}");
        cJSON_Delete(j);
        sb_printf(sb, ",\"top\":%s}", top ? "true" : "false");
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return errf(e, "parameter sample: %s", sqlite3_errmsg(q->a->db->h));
    return 0;
}

/* ?n=10..5000 (1000) -> {"seq", "count", "optimizeMode", "trials": [{"id", "seq",
 * "metric", "params": {...}, "top"}, ...]}: of the trials with a final metric, the
 * best n/2 (top: true) and about n/2 others spread evenly over the sequence (a trial
 * can be in both). */
void h_webui_params(struct req *q)
{
    struct api *a = q->a;
    int64_t n = 1000;
    if (query_int(q, "n", 10, 5000, &n) < 0)
        return;
    static struct reply_cache cache;
    struct errbuf e;
    int64_t seq = change_cursor(q, &e), count = 0;
    const char *hit = seq >= 0 ? cache_get(&cache, seq, n) : NULL;
    if (hit) {
        reply_json(q->r, 200, hit);
        return;
    }
    if (seq < 0 || db_int(a->db, &e, &count, "SELECT count(*) FROM trial WHERE experiment_id = ?"
                                             " AND final_metric IS NOT NULL" METRIC_SHOWN, "s", a->exp_id) < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    struct experiment x;
    if (load_exp(q, &x) < 0)
        return;
    int maximize = maximize_of(&x);
    exp_clear(&x);
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "{\"seq\":%lld,\"count\":%lld,\"optimizeMode\":\"%s\",\"trials\":[", (long long)seq,
              (long long)count, maximize ? "maximize" : "minimize");
    int first = 1;
    int64_t half = n / 2;
    sqlite3_stmt *st = db_query(a->db, &e,
                                maximize ? "SELECT id, sequence, final_metric, parameters FROM trial"
                                           " WHERE experiment_id = ? AND final_metric IS NOT NULL" METRIC_SHOWN
                                           " ORDER BY final_metric DESC, sequence LIMIT ?"
                                         : "SELECT id, sequence, final_metric, parameters FROM trial"
                                           " WHERE experiment_id = ? AND final_metric IS NOT NULL" METRIC_SHOWN
                                           " ORDER BY final_metric ASC, sequence LIMIT ?",
                                "si", a->exp_id, half);
    int bad = !st || params_rows(q, st, &sb, &first, 1, &e) < 0;
    if (!bad) {
        int64_t stride = count > half && half > 0 ? (count + half - 1) / half : 1;
        st = db_query(a->db, &e, "SELECT id, sequence, final_metric, parameters FROM trial"
                                 " WHERE experiment_id = ? AND final_metric IS NOT NULL" METRIC_SHOWN
                                 " AND sequence % ? = 0"
                                 " ORDER BY sequence LIMIT ?", "sii", a->exp_id, stride, n - half);
        bad = !st || params_rows(q, st, &sb, &first, 0, &e) < 0;
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
