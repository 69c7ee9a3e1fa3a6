/* tuner_view.c: the tuner's view of the trials, a cache of the rows (tuner_view.h). */
#include <stdlib.h>
#include <string.h>

#include "api/tuner_view.h"
#include "schema/tuner_rows.h"

#define VIEW_MARGIN_MS 5000    /* rows committed late with an older updated_at */
#define VIEW_FULL_EVERY_MS 60000

struct tuner_view {
    struct tuner_result *items;
    cJSON **params;
    char **ids;
    char **labels;                /* trial.parameter_label of each item (NULL: none) */
    int n, cap;
    int *slots;                   /* open-addressing index: trial id -> item + 1 (0 = free) */
    int nslots;                   /* a power of two, at least 2 * cap */
    int64_t seen_until_ms;        /* updated_at of the newest row read */
    int64_t max_sequence;         /* of the items: a new row below it forces a full reload */
    int64_t import_event;         /* newest import event loaded (imports come first) */
    int64_t next_full_ms;         /* monotonic time of the next full reload */
    /* during a refresh */
    struct db *db;
    const struct tuner_view_opts *opts;
    int64_t newest;
    int out_of_order;
};

void tuner_view_free(struct tuner_view *v)
{
    if (!v)
        return;
    for (int i = 0; i < v->n; i++) {
        cJSON_Delete(v->params[i]);
        free(v->ids[i]);
        free(v->labels[i]);
    }
    free(v->items);
    free(v->params);
    free(v->ids);
    free(v->labels);
    free(v->slots);
    free(v);
}

void tuner_view_reload(struct tuner_view *v)
{
    if (v)
        v->next_full_ms = 0;
}

struct tuner_history tuner_view_history(const struct tuner_view *v)
{
    return (struct tuner_history){.n = v ? v->n : 0, .items = v ? v->items : NULL};
}

static unsigned id_hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Index of a trial id, or -1. */
static int view_find(const struct tuner_view *v, const char *id)
{
    if (!v->nslots)
        return -1;
    for (unsigned k = id_hash(id) & (unsigned)(v->nslots - 1);; k = (k + 1) & (unsigned)(v->nslots - 1)) {
        int s = v->slots[k];
        if (s == 0)
            return -1;
        if (strcmp(v->ids[s - 1], id) == 0)
            return s - 1;
    }
}

static void view_index(struct tuner_view *v, int i)
{
    if (v->nslots < 2 * (i + 1)) {
        int ns = v->nslots ? v->nslots : 128;
        while (ns < 2 * (i + 1))
            ns *= 2;
        free(v->slots);
        v->slots = xcalloc((size_t)ns, sizeof *v->slots);
        v->nslots = ns;
        for (int j = 0; j < i; j++)
            view_index(v, j);
    }
    unsigned k = id_hash(v->ids[i]) & (unsigned)(v->nslots - 1);
    while (v->slots[k])
        k = (k + 1) & (unsigned)(v->nslots - 1);
    v->slots[k] = i + 1;
}

static int view_append(struct tuner_view *v, const char *id, cJSON *params)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 64;
        v->items = xrealloc(v->items, sizeof *v->items * (size_t)v->cap);
        v->params = xrealloc(v->params, sizeof *v->params * (size_t)v->cap);
        v->ids = xrealloc(v->ids, sizeof *v->ids * (size_t)v->cap);
        v->labels = xrealloc(v->labels, sizeof *v->labels * (size_t)v->cap);
    }
    int i = v->n++;
    v->ids[i] = xstrdup(id);
    v->labels[i] = NULL;
    v->params[i] = params;
    memset(&v->items[i], 0, sizeof v->items[i]);
    v->items[i].parameters = params;
    if (params) { /* once per trial: the repeat checks of finite spaces compare these */
        v->items[i].params_hash = tuner_params_hash(params);
        v->items[i].has_hash = 1;
    }
    view_index(v, i);
    return i;
}

/* NNI's import value: a number, {"default": number, ...}, or a JSON string of either. */
static int import_value(const cJSON *j, double *out)
{
    if (cJSON_IsNumber(j)) {
        *out = j->valuedouble;
        return 1;
    }
    if (cJSON_IsObject(j)) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(j, "default");
        return cJSON_IsNumber(d) ? (*out = d->valuedouble, 1) : 0;
    }
    if (cJSON_IsString(j)) {
        cJSON *in = cJSON_Parse(j->valuestring);
        int ok = in && !cJSON_IsString(in) && import_value(in, out);
        cJSON_Delete(in);
        return ok;
    }
    return 0;
}

/* Imported results (experiment/import-data) are history too, as NNI's FD command
 * feeds them to the tuner; they come first, in import order. */
static int add_imports(void *ctx, int64_t event_id, const char *records)
{
    struct tuner_view *v = ctx;
    cJSON *arr = cJSON_Parse(records);
    const cJSON *rec;
    int k = 0;
    cJSON_ArrayForEach(rec, arr) {
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(rec, "parameter");
        double value;
        if (!cJSON_IsObject(p) || !import_value(cJSON_GetObjectItemCaseSensitive(rec, "value"), &value))
            continue;
        char *id = xasprintf("import:%lld:%d", (long long)event_id, k++);
        int i = view_append(v, id, cJSON_Duplicate(p, 1));
        free(id);
        struct tuner_result *r = &v->items[i];
        r->parameter_id = -1;
        r->status = "SUCCEEDED";
        r->has_value = 1;
        r->value = value;
        r->has_latest = 1;
        r->latest = value;
    }
    cJSON_Delete(arr);
    v->import_event = event_id;
    return 0;
}

/* One changed row into its item. For a tuner with needs_latest (Hyperband, BOHB rank a
 * round by it), the item's latest result is the trial's FINAL default value when it has
 * one, whatever its status, else the default value of its PERIODICAL metric with the
 * highest sequence, of the current attempt: NNI's advisors get both kinds of metric and
 * keep the one of the highest sequence, a FINAL counting as the highest. */
static int take_change(void *ctx, const struct trial_change *c, struct errbuf *e)
{
    struct tuner_view *v = ctx;
    int i = view_find(v, c->id);
    if (i < 0) {
        /* the items must be in sequence order, as a full reload gives them: a row
         * committed late below the newest one means: reload all */
        if (c->sequence < v->max_sequence)
            v->out_of_order = 1;
        else
            v->max_sequence = c->sequence;
        i = view_append(v, c->id, cJSON_Parse(c->parameters ? c->parameters : ""));
    }
    struct tuner_result *r = &v->items[i];
    r->parameter_id = c->parameter_id;
    if (!v->opts->index_spans_spaces) /* the tuner's own index (tuner.h); -1 before its space */
        r->parameter_id = r->parameter_id >= v->opts->space_index_base ? r->parameter_id - v->opts->space_index_base
                                                                        : -1;
    r->parameters = v->params[i];
    r->status = trial_status_intern(c->status);
    r->has_value = c->has_final && strcmp(r->status, "SUCCEEDED") == 0;
    r->value = c->final;
    if (!v->labels[i] && c->label) /* set at insert, never changed */
        v->labels[i] = xstrdup(c->label);
    r->label = v->labels[i];
    if (v->opts->needs_latest) {
        r->has_latest = c->has_final;
        r->latest = c->final;
        int got = c->has_final ? 1 : metric_latest_periodical(v->db, c->id, c->attempt, &r->latest, e);
        if (got < 0)
            return -1;
        r->has_latest = got;
    }
    if (c->updated_at > v->newest)
        v->newest = c->updated_at;
    return 0;
}

int tuner_view_refresh(struct tuner_view **vp, struct db *db, const char *exp_id, const struct tuner_view_opts *o,
                       struct errbuf *e)
{
    for (int round = 0; round < 3; round++) {
        struct tuner_view *v = *vp;
        if (!v || mono_ms() >= v->next_full_ms) {
            tuner_view_free(v);
            v = *vp = xcalloc(1, sizeof *v);
            v->next_full_ms = mono_ms() + VIEW_FULL_EVERY_MS;
            v->seen_until_ms = INT64_MIN / 2;
            v->max_sequence = -1;
            if (import_events(db, exp_id, add_imports, v, e) < 0)
                return -1;
        } else {
            int64_t newest_import = 0;
            if (import_event_newest(db, exp_id, &newest_import, e) < 0)
                return -1;
            if (newest_import > v->import_event) {
                v->next_full_ms = 0; /* imports go first: rebuild in order */
                continue;
            }
        }
        v->db = db;
        v->opts = o;
        v->newest = v->seen_until_ms;
        v->out_of_order = 0;
        int rc = trial_changes(db, exp_id, v->seen_until_ms - VIEW_MARGIN_MS, take_change, v, e);
        v->db = NULL;
        v->opts = NULL; /* the caller's: used during the refresh only */
        if (rc < 0)
            return -1;
        v->seen_until_ms = v->newest;
        if (!v->out_of_order)
            return 0;
        v->next_full_ms = 0;
    }
    return 0; /* rows keep arriving out of order: the next refresh reloads again */
}
