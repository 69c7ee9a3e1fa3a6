/* routes_analysis.c: GET /webui/slice, /webui/contour, /webui/ecdf and /webui/curves
 * (docs/rest-api.md): api/analysis.c's answers, each kept while no trial changes (the
 * change counter) and its arguments stay the same, as the other views of the web UI. */
#include <stdlib.h>
#include <string.h>

#include "api/analysis.h"
#include "api/routes_analysis.h"
#include "schema/webui_rows.h"

/* A route's last answer: for the arguments `args` at change counter `seq`. */
struct view_cache {
    int64_t seq;
    char *args, *body;
};

/* the arguments of a request as one string, each NULL told from every text */
static void args_add(struct strbuf *sb, const char *v)
{
    if (v)
        sb_printf(sb, "+%zu:%s", strlen(v), v);
    else
        sb_puts(sb, "-");
}

/* A view: the query parameters it takes (texts, and one integer in [lo, hi] with its
 * default) and what computes it, given the integer. */
struct view_spec {
    const char *texts[3], *num;
    int64_t lo, hi, dflt;
    int (*fn)(struct req *q, const struct experiment *x, int64_t num, int64_t seq, struct strbuf *out,
              struct errbuf *e);
};

/* the answer of a request, computed by fn, or from c while no trial changed and the
 * arguments are the same; computed answers are kept in c */
static void view_compute(struct req *q, struct view_cache *c, const struct view_spec *v, int64_t num, int64_t seq,
                         struct strbuf *args)
{
    struct errbuf e;
    struct experiment x;
    if (req_experiment(q, &x) < 0)
        return;
    struct strbuf sb;
    sb_init(&sb);
    int rc = v->fn(q, &x, num, seq, &sb, &e);
    exp_clear(&x);
    if (rc < 0) {
        int asked = str_starts(e.msg, "metric:") || str_starts(e.msg, "x:") || str_starts(e.msg, "y:");
        reply_error(q->r, rc == -2 ? 400 : 500, "%s%s", asked ? "query parameter " : "", e.msg);
    } else {
        free(c->args);
        free(c->body);
        c->args = xstrdup(args->buf);
        c->body = xstrdup(sb.buf);
        c->seq = seq;
        reply_json(q->r, 200, sb.buf);
    }
    sb_free(&sb);
}

static void view_serve(struct req *q, struct view_cache *c, const struct view_spec *v)
{
    int64_t num = v->dflt, seq = 0;
    if (v->num && query_int(q, v->num, v->lo, v->hi, &num) < 0)
        return;
    struct strbuf args;
    sb_init(&args);
    for (int i = 0; i < 3 && v->texts[i]; i++)
        args_add(&args, query_str(q, v->texts[i]));
    sb_printf(&args, "%lld", (long long)num);
    struct errbuf e;
    if (change_counter_now(q->a->db, &seq, &e) < 0)
        reply_error(q->r, 500, "%s", e.msg);
    else if (c->body && c->seq == seq && strcmp(c->args, args.buf) == 0)
        reply_json(q->r, 200, c->body);
    else
        view_compute(q, c, v, num, seq, &args);
    sb_free(&args);
}

static int slice_fn(struct req *q, const struct experiment *x, int64_t num, int64_t seq, struct strbuf *out,
                    struct errbuf *e)
{
    (void)num;
    return exp_slice_json(q->a->db, x, query_str(q, "metric"), seq, out, e);
}

static int ecdf_fn(struct req *q, const struct experiment *x, int64_t num, int64_t seq, struct strbuf *out,
                   struct errbuf *e)
{
    (void)num;
    return exp_ecdf_json(q->a->db, x, query_str(q, "metric"), seq, out, e);
}

static int contour_fn(struct req *q, const struct experiment *x, int64_t num, int64_t seq, struct strbuf *out,
                      struct errbuf *e)
{
    struct contour_query cq = {query_str(q, "metric"), query_str(q, "x"), query_str(q, "y"), (int)num};
    return exp_contour_json(q->a->db, x, &cq, seq, out, e);
}

static int curves_fn(struct req *q, const struct experiment *x, int64_t num, int64_t seq, struct strbuf *out,
                     struct errbuf *e)
{
    return exp_curves_json(q->a->db, x, (int)num, seq, out, e);
}

/* ?metric=KEY -> exp_slice_json's object */
void h_webui_slice(struct req *q)
{
    static struct view_cache cache;
    static const struct view_spec v = {{"metric"}, NULL, 0, 0, 0, slice_fn};
    view_serve(q, &cache, &v);
}

/* ?metric=KEY -> exp_ecdf_json's object */
void h_webui_ecdf(struct req *q)
{
    static struct view_cache cache;
    static const struct view_spec v = {{"metric"}, NULL, 0, 0, 0, ecdf_fn};
    view_serve(q, &cache, &v);
}

/* ?metric=KEY &x=PARAM &y=PARAM &grid=5..60 (30) -> exp_contour_json's object */
void h_webui_contour(struct req *q)
{
    static struct view_cache cache;
    static const struct view_spec v = {{"metric", "x", "y"}, "grid", 5, AN_GRID_MAX, AN_GRID, contour_fn};
    view_serve(q, &cache, &v);
}

/* ?n=1..200 (100) -> exp_curves_json's object */
void h_webui_curves(struct req *q)
{
    static struct view_cache cache;
    static const struct view_spec v = {{NULL}, "n", 1, AN_CURVES_MAX, AN_CURVES, curves_fn};
    view_serve(q, &cache, &v);
}
