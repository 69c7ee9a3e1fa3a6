/* importance.c: an experiment's parameter importance as JSON (importance.h). */
#include "api/importance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "schema/nnijson.h"
#include "schema/webui_rows.h"
#include "tuners/importance.h"

int exp_maximize(const struct experiment *x)
{
    cJSON *c = x->config ? cJSON_Parse(x->config) : NULL;
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

/* metric_sample_rows' callback: the rows with a number, parsed */
static void sample_row(void *ctx, const struct sample_row *r)
{
    struct exp_sample *s = ctx;
    s->read++;
    if (!r->has_value || !isfinite(r->value) || !r->parameters)
        return;
    cJSON *p = cJSON_Parse(r->parameters);
    if (!cJSON_IsObject(p)) {
        cJSON_Delete(p);
        return;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->t = xrealloc(s->t, sizeof *s->t * (size_t)s->cap);
    }
    s->t[s->n++] = (struct imp_trial){p, r->value};
}

int exp_sample_open(struct db *db, const struct experiment *x, const char *key, struct ss_space **space,
                    struct exp_sample *s, struct errbuf *e)
{
    memset(s, 0, sizeof *s);
    *space = NULL;
    if (key && (!*key || strlen(key) > 100 || strpbrk(key, "\"\\"))) {
        errf(e, "metric: a key of the final metric's dict, 1 to 100 characters without '\"' or '\\' (got '%.100s')",
             key);
        return -2;
    }
    cJSON *json = x->search_space ? cJSON_Parse(x->search_space) : NULL;
    int rc = ss_parse(json, space, NULL, 0, e);
    cJSON_Delete(json);
    if (rc < 0) {
        errprefix(e, "the experiment's searchSpace");
        return -2;
    }
    rc = metric_sample_rows(db, x->id, key, IMP_SAMPLE, sample_row, s, e);
    if (rc < 0)
        exp_sample_close(space, s);
    return rc;
}

void exp_sample_close(struct ss_space **space, struct exp_sample *s)
{
    for (int i = 0; i < s->n; i++)
        cJSON_Delete((cJSON *)s->t[i].params);
    free(s->t);
    memset(s, 0, sizeof *s);
    ss_free(*space);
    *space = NULL;
}

void exp_num(struct strbuf *sb, double v)
{
    if (isfinite(v))
        sb_printf(sb, "%.10g", v);
    else
        sb_puts(sb, "null");
}

void exp_sample_head(struct strbuf *out, const char *key, int64_t seq, int maximize, const struct exp_sample *s)
{
    if (seq >= 0)
        sb_printf(out, "\"seq\":%lld,", (long long)seq);
    sb_puts(out, "\"metric\":");
    if (key)
        nj_str(out, key);
    else
        sb_puts(out, "null");
    sb_printf(out, ",\"optimizeMode\":\"%s\",\"sample\":{\"limit\":%d,\"read\":%d,\"trials\":%d,\"of\":\"the most"
                   " recent SUCCEEDED trials with a final metric, by sequence\"}", maximize ? "maximize" : "minimize",
              IMP_SAMPLE, s->read, s->n);
}

static void write_json(struct strbuf *out, const char *key, int64_t seq, int maximize, const struct exp_sample *s,
                       const struct imp_result *r)
{
    sb_puts(out, "{");
    exp_sample_head(out, key, seq, maximize, s);
    sb_puts(out, ",\"method\":\"PED-ANOVA\",\"gamma\":");
    exp_num(out, IMP_GAMMA);
    sb_puts(out, ",\"params\":[");
    for (int i = 0; i < r->n; i++) {
        const struct imp_param *p = &r->p[i];
        sb_puts(out, i ? ",{\"name\":" : "{\"name\":");
        nj_str(out, p->p->path);
        sb_printf(out, ",\"type\":\"%s\",\"importance\":", ss_type_name(p->p->type));
        exp_num(out, p->importance);
        sb_puts(out, ",\"divergence\":");
        exp_num(out, p->divergence);
        sb_printf(out, ",\"trials\":%d,\"top\":%d}", p->n, p->n_top);
    }
    sb_puts(out, "]}");
}

int exp_importance_json(struct db *db, const struct experiment *x, const char *key, int64_t seq,
                        struct strbuf *out, struct errbuf *e)
{
    struct ss_space *space;
    struct exp_sample s;
    int rc = exp_sample_open(db, x, key, &space, &s, e);
    if (rc < 0)
        return rc;
    struct imp_result r;
    int maximize = exp_maximize(x);
    imp_ped_anova(space, s.t, s.n, maximize, IMP_GAMMA, &r);
    write_json(out, key, seq, maximize, &s, &r);
    imp_result_free(&r);
    exp_sample_close(&space, &s);
    return 0;
}
