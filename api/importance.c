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

/* the sample as metric_sample_rows hands it: the rows with a number, parsed */
struct sample {
    int n, cap, read;
    struct imp_trial *t;
};

static void sample_row(void *ctx, const struct sample_row *r)
{
    struct sample *s = ctx;
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

static void num(struct strbuf *sb, double v)
{
    if (isfinite(v))
        sb_printf(sb, "%.10g", v);
    else
        sb_puts(sb, "null");
}

static void write_json(struct strbuf *out, const char *key, int64_t seq, int maximize, const struct sample *s,
                       const struct imp_result *r)
{
    sb_puts(out, "{");
    if (seq >= 0)
        sb_printf(out, "\"seq\":%lld,", (long long)seq);
    sb_puts(out, "\"method\":\"PED-ANOVA\",\"metric\":");
    if (key)
        nj_str(out, key);
    else
        sb_puts(out, "null");
    sb_printf(out, ",\"optimizeMode\":\"%s\",\"gamma\":", maximize ? "maximize" : "minimize");
    num(out, IMP_GAMMA);
    sb_printf(out, ",\"sample\":{\"limit\":%d,\"read\":%d,\"trials\":%d,\"of\":\"the most recent SUCCEEDED"
                   " trials with a final metric, by sequence\"},\"params\":[", IMP_SAMPLE, s->read, s->n);
    for (int i = 0; i < r->n; i++) {
        const struct imp_param *p = &r->p[i];
        sb_puts(out, i ? ",{\"name\":" : "{\"name\":");
        nj_str(out, p->p->path);
        sb_printf(out, ",\"type\":\"%s\",\"importance\":", ss_type_name(p->p->type));
        num(out, p->importance);
        sb_puts(out, ",\"divergence\":");
        num(out, p->divergence);
        sb_printf(out, ",\"trials\":%d,\"top\":%d}", p->n, p->n_top);
    }
    sb_puts(out, "]}");
}

int exp_importance_json(struct db *db, const struct experiment *x, const char *key, int64_t seq,
                        struct strbuf *out, struct errbuf *e)
{
    if (key && (!*key || strlen(key) > 100 || strpbrk(key, "\"\\"))) {
        errf(e, "metric: a key of the final metric's dict, 1 to 100 characters without '\"' or '\\' (got '%.100s')",
             key);
        return -2;
    }
    cJSON *json = x->search_space ? cJSON_Parse(x->search_space) : NULL;
    struct ss_space *space = NULL;
    int rc = ss_parse(json, &space, NULL, 0, e);
    cJSON_Delete(json);
    if (rc < 0) {
        errprefix(e, "the experiment's searchSpace");
        return -2;
    }
    struct sample s = {0};
    rc = metric_sample_rows(db, x->id, key, IMP_SAMPLE, sample_row, &s, e);
    if (rc == 0) {
        struct imp_result r;
        int maximize = exp_maximize(x);
        imp_ped_anova(space, s.t, s.n, maximize, IMP_GAMMA, &r);
        write_json(out, key, seq, maximize, &s, &r);
        imp_result_free(&r);
    }
    for (int i = 0; i < s.n; i++)
        cJSON_Delete((cJSON *)s.t[i].params);
    free(s.t);
    ss_free(space);
    return rc;
}
