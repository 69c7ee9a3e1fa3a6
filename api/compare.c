/* compare.c: several experiments side by side (compare.h). */
#include "api/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/importance.h"
#include "config/config.h"
#include "schema/nnijson.h"
#include "schema/webui_rows.h"

/* ---------------- best so far ---------------- */

static int by_seq(const void *a, const void *b)
{
    const struct cmp_pt *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int by_t(const void *a, const void *b)
{
    const struct cmp_pt *x = a, *y = b;
    return x->t != y->t ? (x->t > y->t) - (x->t < y->t) : by_seq(a, b);
}

int cmp_best_so_far(struct cmp_pt *pts, int n, int maximize, int by_time, struct cmp_pt *out)
{
    if (n > 0)
        qsort(pts, (size_t)n, sizeof *pts, by_time ? by_t : by_seq);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if ((by_time && pts[i].t < 0) || !isfinite(pts[i].v))
            continue;
        if (k == 0 || (maximize ? pts[i].v > out[k - 1].v : pts[i].v < out[k - 1].v))
            out[k++] = pts[i];
    }
    return k;
}

/* ---------------- configs ---------------- */

struct flat {
    int n, cap;
    char **key;
    char ***val; /* val[row][experiment]: JSON text or NULL */
};

static int flat_row(struct flat *f, const char *key, int nexp)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->key[i], key) == 0)
            return i;
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 32;
        f->key = xrealloc(f->key, sizeof *f->key * (size_t)f->cap);
        f->val = xrealloc(f->val, sizeof *f->val * (size_t)f->cap);
    }
    f->key[f->n] = xstrdup(key);
    f->val[f->n] = xcalloc((size_t)nexp, sizeof **f->val);
    return f->n++;
}

/* every leaf of j (an object's members, recursively; a list or a scalar is one value) */
static void flatten(struct flat *f, const cJSON *j, const char *prefix, int which, int nexp)
{
    if (cJSON_IsObject(j) && j->child) {
        for (const cJSON *c = j->child; c; c = c->next) {
            char *key = *prefix ? xasprintf("%s.%s", prefix, c->string) : xstrdup(c->string);
            flatten(f, c, key, which, nexp);
            free(key);
        }
        return;
    }
    int row = flat_row(f, *prefix ? prefix : "(config)", nexp);
    free(f->val[row][which]);
    f->val[row][which] = cJSON_PrintUnformatted(j);
}

cJSON *cmp_config_diff(const cJSON *const *cfgs, int n)
{
    struct flat f = {0};
    for (int i = 0; i < n; i++)
        if (cfgs[i])
            flatten(&f, cfgs[i], "", i, n);
    cJSON *out = cJSON_CreateObject(), *rows = cJSON_AddArrayToObject(out, "rows");
    int differing = 0;
    for (int r = 0; r < f.n; r++) {
        cJSON *row = cJSON_CreateObject(), *vals = cJSON_CreateArray();
        int differs = 0;
        for (int i = 0; i < n; i++) {
            const char *v = f.val[r][i], *v0 = f.val[r][0];
            if (i && (!v != !v0 || (v && strcmp(v, v0) != 0)))
                differs = 1;
            cJSON_AddItemToArray(vals, v ? cJSON_CreateString(v) : cJSON_CreateNull());
        }
        for (int i = 0; i < n; i++)
            free(f.val[r][i]);
        cJSON_AddStringToObject(row, "key", f.key[r]);
        cJSON_AddItemToObject(row, "values", vals);
        cJSON_AddBoolToObject(row, "differs", differs);
        cJSON_AddItemToArray(rows, row);
        differing += differs;
        free(f.key[r]);
        free(f.val[r]);
    }
    cJSON_AddNumberToObject(out, "differing", differing);
    free(f.key);
    free(f.val);
    return out;
}

/* ---------------- one experiment's sample ---------------- */

struct cmp_exp {
    struct experiment x;
    cJSON *cfg; /* redacted, with the search space */
    int maximize;
    int64_t count;       /* trials with a shown final metric */
    struct cmp_pt *pts;  /* the sample: top then spread, then deduplicated by sequence */
    int n, cap, ntop, nspread;
    double *spread;      /* the spread trials' values, sorted */
    double threshold;    /* the worst of the top: better than it, the curve is exact */
};

struct collect {
    struct cmp_exp *c;
    int spread;
};

static void collect_row(void *ctx, const struct param_row *r)
{
    struct collect *k = ctx;
    struct cmp_exp *c = k->c;
    if (!isfinite(r->metric))
        return;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 256;
        c->pts = xrealloc(c->pts, sizeof *c->pts * (size_t)c->cap);
    }
    int64_t t = r->end_time > 0 && c->x.start_time > 0 ? r->end_time - c->x.start_time : -1;
    c->pts[c->n++] = (struct cmp_pt){r->sequence, r->metric, t < 0 ? -1 : t};
    if (k->spread) {
        c->spread = xrealloc(c->spread, sizeof *c->spread * (size_t)(c->nspread + 1));
        c->spread[c->nspread++] = r->metric;
    } else {
        c->ntop++;
        c->threshold = r->metric;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int exp_sample(struct db *db, struct cmp_exp *c, struct errbuf *e)
{
    cJSON *cfg = c->x.config ? cJSON_Parse(c->x.config) : NULL;
    c->cfg = cJSON_IsObject(cfg) ? config_redacted(cfg) : cJSON_CreateObject();
    cJSON_Delete(cfg);
    if (!cJSON_GetObjectItemCaseSensitive(c->cfg, "searchSpace") && c->x.search_space) {
        cJSON *ss = cJSON_Parse(c->x.search_space);
        if (ss)
            cJSON_AddItemToObject(c->cfg, "searchSpace", ss);
    }
    c->maximize = exp_maximize(&c->x);
    if (trials_with_shown_metric(db, c->x.id, &c->count, e) < 0)
        return -1;
    struct collect k = {c, 0};
    if (param_rows(db, c->x.id, c->maximize, CMP_TOP, collect_row, &k, e) < 0)
        return -1;
    k.spread = 1;
    if (param_sample(db, c->x.id, c->count, CMP_SPREAD, collect_row, &k, e) < 0)
        return -1;
    if (c->nspread)
        qsort(c->spread, (size_t)c->nspread, sizeof *c->spread, cmp_double);
    /* one point per trial: a top trial may be in the spread too */
    if (c->n)
        qsort(c->pts, (size_t)c->n, sizeof *c->pts, by_seq);
    int m = 0;
    for (int i = 0; i < c->n; i++)
        if (m == 0 || c->pts[i].seq != c->pts[m - 1].seq)
            c->pts[m++] = c->pts[i];
    c->n = m;
    return 0;
}

/* ---------------- the answer ---------------- */

static void num(struct strbuf *sb, double v)
{
    if (isfinite(v))
        sb_printf(sb, "%.10g", v);
    else
        sb_puts(sb, "null");
}

static double quantile(const double *v, int n, double p)
{
    double at = p * (n - 1);
    int i = (int)at;
    return i + 1 < n ? v[i] + (v[i + 1] - v[i]) * (at - i) : v[n - 1];
}

/* the records of c's sample by sequence or time, and where they become exact */
static void curve_write(struct strbuf *sb, struct cmp_exp *c, int by_time, int exact)
{
    struct cmp_pt *rec = xmalloc(sizeof *rec * (size_t)(c->n ? c->n : 1));
    int k = cmp_best_so_far(c->pts, c->n, c->maximize, by_time, rec);
    sb_puts(sb, by_time ? ",\"bestByTime\":[" : ",\"bestBySeq\":[");
    int from = -1;
    for (int i = 0; i < k; i++) {
        if (from < 0 && (exact || (c->maximize ? rec[i].v > c->threshold : rec[i].v < c->threshold)))
            from = i;
        sb_printf(sb, "%s[", i ? "," : "");
        if (by_time)
            sb_printf(sb, "%.3f,", (double)rec[i].t / 1000.0);
        else
            sb_printf(sb, "%lld,", (long long)rec[i].seq);
        num(sb, rec[i].v);
        sb_printf(sb, ",%lld]", (long long)rec[i].seq);
    }
    sb_puts(sb, by_time ? "],\"exactFromTime\":" : "],\"exactFromSeq\":");
    if (from < 0)
        sb_puts(sb, "null");
    else if (by_time)
        sb_printf(sb, "%.3f", (double)rec[from].t / 1000.0);
    else
        sb_printf(sb, "%lld", (long long)rec[from].seq);
    free(rec);
}

static void dist_write(struct strbuf *sb, const struct cmp_exp *c, double lo, double width)
{
    int n = c->nspread;
    sb_printf(sb, ",\"distribution\":{\"n\":%d", n);
    if (n) {
        const char *names[] = {"min", "q1", "median", "q3", "max"};
        const double at[] = {0, 0.25, 0.5, 0.75, 1};
        double sum = 0;
        for (int i = 0; i < n; i++)
            sum += c->spread[i];
        for (int i = 0; i < 5; i++) {
            sb_printf(sb, ",\"%s\":", names[i]);
            num(sb, quantile(c->spread, n, at[i]));
        }
        sb_puts(sb, ",\"mean\":");
        num(sb, sum / n);
    }
    int counts[CMP_BINS] = {0};
    for (int i = 0; i < n; i++) {
        int b = (int)((c->spread[i] - lo) / width);
        counts[b < 0 ? 0 : b >= CMP_BINS ? CMP_BINS - 1 : b]++;
    }
    sb_puts(sb, ",\"counts\":[");
    for (int i = 0; i < CMP_BINS; i++)
        sb_printf(sb, "%s%d", i ? "," : "", counts[i]);
    sb_puts(sb, "]}");
}

static const char *tuner_name(const cJSON *cfg)
{
    const char *who[] = {"tuner", "advisor"};
    for (int i = 0; i < 2; i++) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cfg, who[i]), "name");
        if (cJSON_IsString(nm))
            return nm->valuestring;
    }
    return NULL;
}

static void exp_write(struct strbuf *sb, struct cmp_exp *c, double lo, double width)
{
    int exact = c->count <= CMP_SPREAD;
    sb_puts(sb, "{\"id\":");
    nj_str(sb, c->x.id);
    sb_puts(sb, ",\"name\":");
    nj_str(sb, c->x.name ? c->x.name : "");
    sb_puts(sb, ",\"status\":");
    nj_str(sb, c->x.status ? c->x.status : "");
    const char *tuner = tuner_name(c->cfg);
    sb_puts(sb, ",\"tuner\":");
    if (tuner)
        nj_str(sb, tuner);
    else
        sb_puts(sb, "null");
    sb_printf(sb, ",\"optimizeMode\":\"%s\",\"startTime\":%lld,\"trials\":%lld,\"read\":%d,\"exact\":%s,\"best\":",
              c->maximize ? "maximize" : "minimize", (long long)c->x.start_time, (long long)c->count, c->n,
              exact ? "true" : "false");
    /* the first of the top: the best, exactly */
    if (c->ntop) {
        struct cmp_pt *b = NULL;
        for (int i = 0; i < c->n; i++)
            if (!b || (c->maximize ? c->pts[i].v > b->v : c->pts[i].v < b->v))
                b = &c->pts[i];
        sb_printf(sb, "{\"seq\":%lld,\"value\":", (long long)b->seq);
        num(sb, b->v);
        sb_puts(sb, "}");
    } else {
        sb_puts(sb, "null");
    }
    int64_t last_seq = -1, last_t = -1;
    for (int i = 0; i < c->n; i++) {
        last_seq = c->pts[i].seq > last_seq ? c->pts[i].seq : last_seq;
        last_t = c->pts[i].t > last_t ? c->pts[i].t : last_t;
    }
    sb_printf(sb, ",\"last\":{\"seq\":%lld,\"time\":", (long long)last_seq);
    if (last_t >= 0)
        sb_printf(sb, "%.3f}", (double)last_t / 1000.0);
    else
        sb_puts(sb, "null}");
    curve_write(sb, c, 0, exact);
    curve_write(sb, c, 1, exact);
    dist_write(sb, c, lo, width);
    sb_puts(sb, "}");
}

static void answer_write(struct strbuf *out, struct cmp_exp *c, int n, int64_t seq)
{
    double lo = INFINITY, hi = -INFINITY;
    int modes = 0;
    for (int i = 0; i < n; i++) {
        modes |= 1 << c[i].maximize;
        if (c[i].nspread) {
            lo = fmin(lo, c[i].spread[0]);
            hi = fmax(hi, c[i].spread[c[i].nspread - 1]);
        }
    }
    if (!(lo <= hi)) {
        lo = 0;
        hi = 1;
    }
    double width = hi > lo ? (hi - lo) / CMP_BINS : 1.0 / CMP_BINS;
    sb_puts(out, "{");
    if (seq >= 0)
        sb_printf(out, "\"seq\":%lld,", (long long)seq);
    sb_printf(out, "\"sample\":{\"top\":%d,\"spread\":%d,\"of\":\"of each experiment's SUCCEEDED trials with a final"
                   " metric: the best ones and others spread evenly over the trial numbers\"},\"mixedModes\":%s,"
                   "\"bins\":{\"n\":%d,\"lo\":", CMP_TOP, CMP_SPREAD, modes == 3 ? "true" : "false", CMP_BINS);
    num(out, lo);
    sb_puts(out, ",\"width\":");
    num(out, width);
    sb_puts(out, "},\"experiments\":[");
    const cJSON **cfgs = xcalloc((size_t)n, sizeof *cfgs);
    for (int i = 0; i < n; i++) {
        if (i)
            sb_puts(out, ",");
        exp_write(out, &c[i], lo, width);
        cfgs[i] = c[i].cfg;
    }
    cJSON *diff = cmp_config_diff(cfgs, n);
    char *text = cJSON_PrintUnformatted(diff);
    sb_printf(out, "],\"config\":%s}", text);
    free(text);
    cJSON_Delete(diff);
    free(cfgs);
}

int exp_compare_json(struct db *db, char *const *ids, int n, int64_t seq, struct strbuf *out, struct errbuf *e)
{
    struct cmp_exp *c = xcalloc((size_t)n, sizeof *c);
    int rc = 0, loaded = 0;
    for (; loaded < n && rc == 0; loaded++) {
        int found = exp_load(db, ids[loaded], &c[loaded].x, e);
        if (found <= 0) {
            rc = found < 0 ? -1 : -2;
            if (found == 0)
                errf(e, "ids: no experiment '%.64s' in the database", ids[loaded]);
            break;
        }
        rc = exp_sample(db, &c[loaded], e);
    }
    if (rc == 0)
        answer_write(out, c, n, seq);
    for (int i = 0; i < loaded && i < n; i++) {
        exp_clear(&c[i].x);
        cJSON_Delete(c[i].cfg);
        free(c[i].pts);
        free(c[i].spread);
    }
    free(c);
    return rc;
}
