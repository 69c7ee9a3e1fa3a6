/* analysis.c: the analysis views as JSON (analysis.h); the numbers are
 * tuners/analysis.c's. */
#include "api/analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schema/analysis_rows.h"
#include "schema/nnijson.h"
#include "tuners/analysis.h"

/* the sample and its columns, for the views over it */
struct view {
    struct ss_space *space;
    struct exp_sample s;
    struct an_column *c;
    int nc, maximize;
};

/* reads the sample and starts the answer: "{" and exp_sample_head's members */
static int view_open(struct db *db, const struct experiment *x, const char *key, int64_t seq, struct strbuf *out,
                     struct view *v, struct errbuf *e)
{
    memset(v, 0, sizeof *v);
    int rc = exp_sample_open(db, x, key, &v->space, &v->s, e);
    if (rc < 0)
        return rc;
    v->nc = an_columns(v->space, v->s.t, v->s.n, &v->c);
    v->maximize = exp_maximize(x);
    sb_puts(out, "{");
    exp_sample_head(out, key, seq, v->maximize, &v->s);
    return 0;
}

static void view_close(struct view *v)
{
    an_columns_free(v->c, v->nc);
    exp_sample_close(&v->space, &v->s);
}

static void nums(struct strbuf *out, const double *x, int n)
{
    sb_add(out, "[", 1);
    for (int i = 0; i < n; i++) {
        if (i)
            sb_add(out, ",", 1);
        exp_num(out, x[i]);
    }
    sb_add(out, "]", 1);
}

static const char *scale_of(const struct ss_param *p)
{
    return p->type == SS_CHOICE ? "category" : ss_type_is_log(p->type) ? "log" : "linear";
}

/* a choice's options as labels: a string as is, a nested branch by its _name, any
 * other value as its JSON */
static void categories(struct strbuf *out, const struct ss_param *p)
{
    sb_puts(out, ",\"categories\":[");
    for (int k = 0; k < p->n_choices; k++) {
        const cJSON *o = p->choices[k];
        if (k)
            sb_add(out, ",", 1);
        if (p->sub)
            o = cJSON_GetObjectItemCaseSensitive(o, "_name");
        if (cJSON_IsString(o)) {
            nj_str(out, o->valuestring);
        } else {
            char *j = cJSON_PrintUnformatted(o);
            nj_str(out, j);
            free(j);
        }
    }
    sb_add(out, "]", 1);
}

/* a view over the sample: view_open, body(out, v), the closing brace */
static int view_json(struct db *db, const struct experiment *x, const char *key, int64_t seq, struct strbuf *out,
                     struct errbuf *e, void (*body)(struct strbuf *out, const struct view *v))
{
    struct view v;
    int rc = view_open(db, x, key, seq, out, &v, e);
    if (rc < 0)
        return rc;
    body(out, &v);
    sb_puts(out, "}");
    view_close(&v);
    return 0;
}

static void slice_body(struct strbuf *out, const struct view *v)
{
    sb_puts(out, ",\"params\":[");
    double *y = xmalloc(sizeof *y * (size_t)(v->s.n ? v->s.n : 1));
    for (int j = 0; j < v->nc; j++) {
        const struct an_column *c = &v->c[j];
        sb_puts(out, j ? ",{\"name\":" : "{\"name\":");
        nj_str(out, c->p->path);
        sb_printf(out, ",\"type\":\"%s\",\"scale\":\"%s\"", ss_type_name(c->p->type), scale_of(c->p));
        if (c->p->type == SS_CHOICE)
            categories(out, c->p);
        sb_printf(out, ",\"trials\":%d,\"x\":", c->n);
        nums(out, c->x, c->n);
        for (int i = 0; i < c->n; i++)
            y[i] = v->s.t[c->trial[i]].value;
        sb_puts(out, ",\"y\":");
        nums(out, y, c->n);
        sb_add(out, "}", 1);
    }
    free(y);
    sb_puts(out, "]");
}

int exp_slice_json(struct db *db, const struct experiment *x, const char *key, int64_t seq, struct strbuf *out,
                   struct errbuf *e)
{
    return view_json(db, x, key, seq, out, e, slice_body);
}

static void ecdf_body(struct strbuf *out, const struct view *v)
{
    int n = v->s.n;
    double *val = xmalloc(sizeof *val * (size_t)(n ? 3 * n : 3)), *xs = val + n, *fs = val + 2 * n;
    for (int i = 0; i < n; i++)
        val[i] = v->s.t[i].value;
    int k = an_ecdf(val, n, xs, fs);
    int med = 0;
    while (med < k && fs[med] < 0.5)
        med++;
    sb_printf(out, ",\"n\":%d,\"min\":", n);
    exp_num(out, k ? xs[0] : NAN);
    sb_puts(out, ",\"median\":");
    exp_num(out, k ? xs[med] : NAN);
    sb_puts(out, ",\"max\":");
    exp_num(out, k ? xs[k - 1] : NAN);
    sb_puts(out, ",\"x\":");
    nums(out, xs, k);
    sb_puts(out, ",\"f\":");
    nums(out, fs, k);
    free(val);
}

int exp_ecdf_json(struct db *db, const struct experiment *x, const char *key, int64_t seq, struct strbuf *out,
                  struct errbuf *e)
{
    return view_json(db, x, key, seq, out, e, ecdf_body);
}

/* ---------------- contour ---------------- */

/* a contour axis: the parameter's column and its range in the kernel's space (log for
 * the log types) */
struct axis {
    const struct an_column *c;
    int log;
    double lo, hi;
};

static double axis_t(const struct axis *a, double v)
{
    return a->log ? log(v) : v;
}

/* The search space's range where it has one; the sample's for the normal types. */
static void axis_init(struct axis *a, const struct an_column *c)
{
    const struct ss_param *p = c->p;
    a->c = c;
    a->log = ss_type_is_log(p->type);
    if (p->type == SS_RANDINT) {
        a->lo = p->a;
        a->hi = p->b - 1;
    } else if (!ss_type_is_normal(p->type)) {
        a->lo = axis_t(a, p->a);
        a->hi = axis_t(a, p->b);
    } else {
        a->lo = INFINITY;
        a->hi = -INFINITY;
        for (int i = 0; i < c->n; i++) {
            double t = axis_t(a, c->x[i]);
            a->lo = t < a->lo ? t : a->lo;
            a->hi = t > a->hi ? t : a->hi;
        }
        if (!c->n)
            a->lo = a->hi = 0;
    }
    if (!(a->hi > a->lo)) {
        a->lo -= 0.5;
        a->hi += 0.5;
    }
}

static void axis_json(struct strbuf *out, const struct axis *a, int grid, double h)
{
    sb_puts(out, "{\"name\":");
    nj_str(out, a->c->p->path);
    sb_printf(out, ",\"type\":\"%s\",\"scale\":\"%s\",\"lo\":", ss_type_name(a->c->p->type), scale_of(a->c->p));
    exp_num(out, a->log ? exp(a->lo) : a->lo);
    sb_puts(out, ",\"hi\":");
    exp_num(out, a->log ? exp(a->hi) : a->hi);
    sb_puts(out, ",\"bandwidth\":");
    exp_num(out, h);
    sb_puts(out, ",\"centres\":[");
    for (int i = 0; i < grid; i++) {
        double t = a->lo + (a->hi - a->lo) * (i + 0.5) / grid;
        if (i)
            sb_add(out, ",", 1);
        exp_num(out, a->log ? exp(t) : t);
    }
    sb_puts(out, "]}");
}

/* The column named by a query parameter (name: "x" or "y"), or the first numeric one
 * other than `not`; NULL with e set when the name is not a numeric parameter. */
static const struct an_column *pick_axis(const struct view *v, const char *name, const char *path,
                                         const struct an_column *not, struct errbuf *e)
{
    if (!path) {
        for (int j = 0; j < v->nc; j++)
            if (v->c[j].p->type != SS_CHOICE && &v->c[j] != not)
                return &v->c[j];
        return NULL;
    }
    const struct an_column *c = an_column_find(v->c, v->nc, path);
    if (c && c->p->type != SS_CHOICE && c != not)
        return c;
    struct strbuf list;
    sb_init(&list);
    for (int j = 0; j < v->nc; j++)
        if (v->c[j].p->type != SS_CHOICE)
            sb_printf(&list, "%s%.100s", list.len ? ", " : "", v->c[j].p->path);
    if (c && c == not)
        errf(e, "%s: '%.100s' is the other axis too: choose two parameters", name, path);
    else
        errf(e, "%s: '%.100s' is not a numeric parameter of the search space (%s%s)", name, path,
             list.len ? "numeric: " : "it has none", list.len ? list.buf : "");
    sb_free(&list);
    return NULL;
}

/* the grid of the two axes over the trials that have both, as "fit", "x", "y", "z",
 * "filled", "points" */
static void contour_body(struct strbuf *out, const struct view *v, const struct axis *ax, const struct axis *ay,
                         int grid)
{
    int cap = ax->c->n < ay->c->n ? ax->c->n : ay->c->n;
    double *u = xmalloc(sizeof *u * (size_t)(cap ? 5 * cap : 5)), *w = u + cap, *z = u + 2 * cap;
    double *px = u + 3 * cap, *py = u + 4 * cap;
    int m = 0;
    /* both columns list their trials in increasing index: a merge */
    for (int i = 0, j = 0; i < ax->c->n && j < ay->c->n;) {
        int ti = ax->c->trial[i], tj = ay->c->trial[j];
        if (ti != tj) {
            i += ti < tj;
            j += tj < ti;
            continue;
        }
        px[m] = ax->c->x[i];
        py[m] = ay->c->x[j];
        u[m] = (axis_t(ax, px[m]) - ax->lo) / (ax->hi - ax->lo);
        w[m] = (axis_t(ay, py[m]) - ay->lo) / (ay->hi - ay->lo);
        z[m++] = v->s.t[ti].value;
        i++;
        j++;
    }
    double hu = an_bandwidth(u, m, grid), hv = an_bandwidth(w, m, grid);
    double *cells = xmalloc(sizeof *cells * (size_t)grid * (size_t)grid);
    int filled = an_contour(u, w, z, m, grid, hu, hv, cells);
    sb_printf(out, ",\"fit\":{\"method\":\"Nadaraya-Watson\",\"kernel\":\"Gaussian\",\"grid\":%d,\"reach\":", grid);
    exp_num(out, AN_REACH);
    sb_puts(out, "},\"x\":");
    axis_json(out, ax, grid, hu);
    sb_puts(out, ",\"y\":");
    axis_json(out, ay, grid, hv);
    sb_printf(out, ",\"filled\":%d,\"z\":[", filled);
    for (int j = 0; j < grid; j++) {
        if (j)
            sb_add(out, ",", 1);
        nums(out, cells + (size_t)j * grid, grid);
    }
    sb_printf(out, "],\"trials\":%d,\"points\":[", m);
    for (int k = 0; k < m; k++) {
        sb_puts(out, k ? ",[" : "[");
        exp_num(out, px[k]);
        sb_add(out, ",", 1);
        exp_num(out, py[k]);
        sb_add(out, ",", 1);
        exp_num(out, z[k]);
        sb_add(out, "]", 1);
    }
    sb_puts(out, "]");
    free(cells);
    free(u);
}

int exp_contour_json(struct db *db, const struct experiment *x, const struct contour_query *q, int64_t seq,
                     struct strbuf *out, struct errbuf *e)
{
    struct view v;
    struct strbuf head;
    sb_init(&head);
    int rc = view_open(db, x, q->key, seq, &head, &v, e);
    if (rc < 0)
        return rc;
    e->msg[0] = '\0';
    /* x absent: the first numeric parameter that is not y */
    const struct an_column *fy = q->x ? NULL : an_column_find(v.c, v.nc, q->y);
    const struct an_column *cx = pick_axis(&v, "x", q->x, fy, e);
    const struct an_column *cy = cx || !q->x ? pick_axis(&v, "y", q->y, cx, e) : NULL;
    if (e->msg[0]) {
        sb_free(&head);
        view_close(&v);
        return -2;
    }
    sb_puts(out, head.buf);
    sb_free(&head);
    sb_puts(out, ",\"numeric\":[");
    int first = 1;
    for (int j = 0; j < v.nc; j++)
        if (v.c[j].p->type != SS_CHOICE) {
            sb_puts(out, first ? "" : ",");
            nj_str(out, v.c[j].p->path);
            first = 0;
        }
    sb_puts(out, "]");
    if (cx && cy) {
        struct axis ax, ay;
        axis_init(&ax, cx);
        axis_init(&ay, cy);
        contour_body(out, &v, &ax, &ay, q->grid);
    } else {
        sb_puts(out, ",\"x\":null,\"y\":null,\"filled\":0,\"z\":[],\"trials\":0,\"points\":[]");
    }
    sb_puts(out, "}");
    view_close(&v);
    return 0;
}

/* ---------------- early stopping ---------------- */

struct pts {
    int n;
    int64_t step[AN_CURVE_READ];
    double v[AN_CURVE_READ];
};

static void pt_add(void *ctx, int64_t step, double value)
{
    struct pts *p = ctx;
    if (p->n < AN_CURVE_READ) {
        p->step[p->n] = step;
        p->v[p->n++] = value;
    }
}

/* One curve: its points evenly thinned to at most AN_CURVE_POINTS, the first and last
 * kept. */
static int curve_json(struct db *db, struct strbuf *out, const struct curve_trial *t, struct pts *p, struct errbuf *e)
{
    int more = 0;
    p->n = 0;
    if (curve_points(db, t->id, t->attempt, AN_CURVE_READ, pt_add, p, &more, e) < 0)
        return -1;
    sb_puts(out, "{\"id\":");
    nj_str(out, t->id);
    sb_printf(out, ",\"seq\":%lld,\"status\":\"%s\",\"stopped\":%s,\"results\":%d,\"more\":%s,\"points\":[",
              (long long)t->sequence, t->status, strcmp(t->status, "EARLY_STOPPED") == 0 ? "true" : "false", p->n,
              more ? "true" : "false");
    int keep = p->n < AN_CURVE_POINTS ? p->n : AN_CURVE_POINTS;
    for (int i = 0; i < keep; i++) {
        int k = keep < p->n ? (int)llround((double)i * (p->n - 1) / (keep - 1)) : i;
        sb_printf(out, "%s[%lld,", i ? "," : "", (long long)p->step[k]);
        exp_num(out, p->v[k]);
        sb_add(out, "]", 1);
    }
    sb_puts(out, "]}");
    return 0;
}

static int by_sequence_desc(const void *a, const void *b)
{
    int64_t x = ((const struct curve_trial *)a)->sequence, y = ((const struct curve_trial *)b)->sequence;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* the assessor's (or advisor's) name in x's config, or NULL (a new string) */
static char *assessor_of(const struct experiment *x)
{
    cJSON *c = x->config ? cJSON_Parse(x->config) : NULL;
    const char *who[] = {"assessor", "advisor"};
    char *name = NULL;
    for (int i = 0; c && i < 2 && !name; i++) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, who[i]), "name");
        if (!cJSON_IsString(n))
            n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c, who[i]), "className");
        if (cJSON_IsString(n))
            name = xstrdup(n->valuestring);
    }
    cJSON_Delete(c);
    return name;
}

/* the other ended statuses than EARLY_STOPPED */
static const char *const others[] = {"SUCCEEDED", "FAILED", "USER_CANCELED", "SYS_CANCELED"};

/* "counts": every EARLY_STOPPED trial and every other ended one */
static int curve_counts(struct db *db, const struct experiment *x, struct strbuf *out, struct errbuf *e)
{
    struct status_count *per;
    int nper = 0;
    if (trials_per_status(db, x->id, &per, &nper, e) < 0)
        return -1;
    int64_t stopped = 0, rest = 0;
    for (int k = 0; k < nper; k++) {
        for (size_t i = 0; per[k].status && i < sizeof others / sizeof others[0]; i++)
            rest += strcmp(per[k].status, others[i]) == 0 ? per[k].n : 0;
        stopped += per[k].status && strcmp(per[k].status, "EARLY_STOPPED") == 0 ? per[k].n : 0;
    }
    status_counts_free(per, nper);
    sb_printf(out, ",\"counts\":{\"EARLY_STOPPED\":%lld,\"others\":%lld}", (long long)stopped, (long long)rest);
    return 0;
}

int exp_curves_json(struct db *db, const struct experiment *x, int per_group, int64_t seq, struct strbuf *out,
                    struct errbuf *e)
{
    struct curve_trial *st = NULL, *ot = NULL;
    int ns = 0, caps = 0, no = 0, capo = 0;
    int rc = curve_trials(db, x->id, "EARLY_STOPPED", per_group, &st, &ns, &caps, e);
    for (size_t i = 0; rc == 0 && i < sizeof others / sizeof others[0]; i++)
        rc = curve_trials(db, x->id, others[i], per_group, &ot, &no, &capo, e);
    if (rc == 0) {
        /* the most recent per_group of the four walks */
        if (no)
            qsort(ot, (size_t)no, sizeof *ot, by_sequence_desc);
        for (int i = per_group; i < no; i++)
            free(ot[i].id);
        no = no < per_group ? no : per_group;
        char *assessor = assessor_of(x);
        sb_puts(out, "{");
        if (seq >= 0)
            sb_printf(out, "\"seq\":%lld,", (long long)seq);
        sb_puts(out, "\"metric\":null,\"assessor\":");
        nj_str(out, assessor);
        free(assessor);
        sb_printf(out, ",\"sample\":{\"limit\":%d,\"stopped\":%d,\"others\":%d,\"results\":%d,\"points\":%d,\"of\":\"the"
                       " most recent EARLY_STOPPED trials and the most recent other ended trials (SUCCEEDED, FAILED,"
                       " USER_CANCELED, SYS_CANCELED), by sequence, each with its first intermediate results\"}",
                  per_group, ns, no, AN_CURVE_READ, AN_CURVE_POINTS);
        rc = curve_counts(db, x, out, e);
        sb_puts(out, ",\"curves\":[");
        struct pts *p = xmalloc(sizeof *p);
        for (int i = 0; rc == 0 && i < ns + no; i++) {
            if (i)
                sb_add(out, ",", 1);
            rc = curve_json(db, out, i < ns ? &st[i] : &ot[i - ns], p, e);
        }
        free(p);
        sb_puts(out, "]}");
    }
    curve_trials_free(st, ns);
    curve_trials_free(ot, no);
    return rc;
}
