/* metric.c: parsing what a trial reports, and storing it exactly once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "schema/schema.h"

/* The default value of a metric: the number itself, or dict["default"] (NNI's
 * extract_scalar_reward). Returns 0 when there is none. */
static int default_of(const cJSON *v, double *out)
{
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return 1;
    }
    if (cJSON_IsObject(v)) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(v, "default");
        if (cJSON_IsNumber(d)) {
            *out = d->valuedouble;
            return 1;
        }
    }
    return 0;
}

/* json_tricks may write NaN / Infinity, which cJSON rejects: map them before parsing. */
static double special_number(const char *s, int *ok)
{
    *ok = 1;
    while (*s == ' ' || *s == '"')
        s++;
    if (strncmp(s, "NaN", 3) == 0)
        return NAN;
    if (strncmp(s, "Infinity", 8) == 0)
        return INFINITY;
    if (strncmp(s, "-Infinity", 9) == 0)
        return -INFINITY;
    *ok = 0;
    return 0;
}

struct metric_owned {
    cJSON *root;
    char *value;
    char *parameter_id;
};

int metric_parse(const char *json, size_t len, struct metric_in *m, void **owned, struct errbuf *e)
{
    memset(m, 0, sizeof *m);
    *owned = NULL;
    /* the record is the trial's text, framed by len (not NUL-terminated): a message
     * shows it escaped and cut, it must not forge log lines */
    char shown[SNIPPET_SIZE];
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return errf(e, "metric is not a JSON object: %s", snippet(shown, json, len));
    }
    struct metric_owned *o = xcalloc(1, sizeof *o);
    o->root = root;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "type");
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(root, "sequence");
    const cJSON *value = cJSON_GetObjectItemCaseSensitive(root, "value");
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(root, "parameter_id");
    if (!cJSON_IsString(type) ||
        (strcmp(type->valuestring, "PERIODICAL") != 0 && strcmp(type->valuestring, "FINAL") != 0)) {
        errf(e, "metric has no type PERIODICAL or FINAL: %s", snippet(shown, json, len));
        goto fail;
    }
    if (!value) {
        errf(e, "metric has no value: %s", snippet(shown, json, len));
        goto fail;
    }
    m->type = type->valuestring;
    /* a trial may send anything: only an integer in range is a sequence number */
    if (cJSON_IsNumber(seq) && !(seq->valuedouble >= 0 && seq->valuedouble < 9.0e15 &&
                                 seq->valuedouble == (double)(int64_t)seq->valuedouble)) {
        errf(e, "metric sequence is not an integer >= 0: %s", snippet(shown, json, len));
        goto fail;
    }
    m->sequence = cJSON_IsNumber(seq) ? (int64_t)seq->valuedouble : 0;
    if (cJSON_IsString(pid))
        m->parameter_id = pid->valuestring;
    else if (cJSON_IsNumber(pid) && fabs(pid->valuedouble) < 9.0e15) {
        o->parameter_id = xasprintf("%lld", (long long)pid->valuedouble);
        m->parameter_id = o->parameter_id;
    }
    /* value is normally a JSON string holding the JSON of the reported value */
    if (cJSON_IsString(value)) {
        m->value = value->valuestring;
        cJSON *inner = cJSON_Parse(value->valuestring);
        if (inner) {
            m->has_default = default_of(inner, &m->default_value);
            cJSON_Delete(inner);
        } else {
            int ok;
            double d = special_number(value->valuestring, &ok);
            if (ok) {
                m->default_value = d;
                m->has_default = 1;
            }
        }
    } else {
        o->value = cJSON_PrintUnformatted(value);
        m->value = o->value;
        m->has_default = default_of(value, &m->default_value);
    }
    if (m->has_default && !isfinite(m->default_value))
        m->has_default = 0; /* SQLite stores NaN as NULL anyway; keep the text */
    *owned = o;
    return 0;
fail:
    cJSON_Delete(root);
    free(o);
    return -1;
}

int metric_trial_job_id(const void *owned, const char **out)
{
    const struct metric_owned *o = owned;
    const cJSON *tj = o ? cJSON_GetObjectItemCaseSensitive(o->root, "trial_job_id") : NULL;
    *out = cJSON_IsString(tj) ? tj->valuestring : NULL;
    return tj != NULL;
}

void metric_owned_free(void *p)
{
    struct metric_owned *o = p;
    if (!o)
        return;
    cJSON_Delete(o->root);
    free(o->value);
    free(o->parameter_id);
    free(o);
}

/* First FINAL wins, as in NNI, of the trial's current attempt (attempt -1: the metric
 * is of the current one): a late FINAL of an attempt that was retried must not stand
 * for the retry, whose row trial_requeue cleared. */
static int final_update(struct db *db, const char *trial_id, int attempt, const struct metric_in *m,
                        struct errbuf *e)
{
    return db_run(db, e, "UPDATE trial SET final_metric = ?, final_metric_json = ?, updated_at = ?"
                         " WHERE id = ? AND final_metric_json IS NULL AND (?5 < 0 OR attempt = ?5)",
                  "Fsisd", m->has_default ? m->default_value : NAN, m->value, now_ms(), trial_id, attempt) < 0
               ? -1
               : 0;
}

int metric_insert(struct db *db, const char *trial_id, int attempt, const struct metric_in *m,
                  struct errbuf *e)
{
    int rc = db_run(db, e,
        "INSERT OR IGNORE INTO metric(trial_id, attempt, parameter_id, type, sequence, value,"
        " default_value, time) VALUES (?,?,?,?,?,?,?,?)",
        "sdssisFi", trial_id, attempt, m->parameter_id ? m->parameter_id : "", m->type, m->sequence,
        m->value, m->has_default ? m->default_value : NAN, now_ms());
    if (rc == 1 && strcmp(m->type, "FINAL") == 0 && final_update(db, trial_id, attempt, m, e) < 0)
        return -1;
    return rc;
}

int metric_insert_current(struct db *db, const char *exp_id, const char *trial_id, const struct metric_in *m,
                          int *found, struct errbuf *e)
{
    *found = 0;
    int rc = db_run(db, e,
        "INSERT OR IGNORE INTO metric(trial_id, attempt, parameter_id, type, sequence, value,"
        " default_value, time) SELECT id, attempt, ?, ?, ?, ?, ?, ? FROM trial WHERE id = ? AND experiment_id = ?",
        "ssisFiss", m->parameter_id ? m->parameter_id : "", m->type, m->sequence, m->value,
        m->has_default ? m->default_value : NAN, now_ms(), trial_id, exp_id);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        *found = 1;
        return strcmp(m->type, "FINAL") == 0 && final_update(db, trial_id, -1, m, e) < 0 ? -1 : 1;
    }
    /* a duplicate, or no such trial */
    int64_t one = 0;
    int q = db_int(db, e, &one, "SELECT 1 FROM trial WHERE id = ? AND experiment_id = ?", "ss", trial_id, exp_id);
    if (q < 0)
        return -1;
    *found = q == 1;
    return 0;
}
