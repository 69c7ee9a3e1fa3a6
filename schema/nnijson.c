/* nnijson.c: NNI's REST payload shapes built from our rows, as JSON text. */
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "schema/nnijson.h"

/* ---------------- JSON text ---------------- */

void nj_str(struct strbuf *sb, const char *str)
{
    if (str)
        json_put_string(sb, str);
    else
        sb_add(sb, "null", 4);
}

void nj_int(struct strbuf *sb, int64_t v)
{
    char buf[24];
    char *p = buf + sizeof buf;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    sb_add(sb, p, (size_t)(buf + sizeof buf - p));
}

void nj_key(struct strbuf *sb, int *first, const char *key)
{
    if (!*first)
        sb_add(sb, ",", 1);
    *first = 0;
    nj_str(sb, key);
    sb_add(sb, ":", 1);
}

/* A JSON value we stored ourselves (parameters): used as it is when it looks like an
 * object, else {} so that one damaged row cannot break the document around it. */
static void nj_object_text(struct strbuf *sb, const char *json)
{
    const char *p = json;
    while (p && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
        p++;
    size_t n = p ? strlen(p) : 0;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\n' || p[n - 1] == '\t' || p[n - 1] == '\r'))
        n--;
    if (n >= 2 && p[0] == '{' && p[n - 1] == '}')
        sb_add(sb, p, n);
    else
        sb_add(sb, "{}", 2);
}

static cJSON *parse_text(struct strbuf *sb)
{
    cJSON *j = cJSON_ParseWithLength(sb->buf ? sb->buf : "null", sb->buf ? sb->len : 4);
    sb_free(sb);
    return j;
}

/* ---------------- shapes ---------------- */

cJSON *nni_profile_json(const struct experiment *x, cJSON *red)
{
    cJSON *j = cJSON_CreateObject();
    /* the live values, which updates change */
    cJSON_DeleteItemFromObject(red, "trialConcurrency");
    cJSON_AddNumberToObject(red, "trialConcurrency", x->concurrency);
    cJSON_DeleteItemFromObject(red, "maxTrialNumber");
    if (x->max_trial_number > 0)
        cJSON_AddNumberToObject(red, "maxTrialNumber", (double)x->max_trial_number);
    cJSON_DeleteItemFromObject(red, "maxExperimentDuration");
    if (x->max_exec_seconds > 0) {
        char *d = xasprintf("%llds", (long long)x->max_exec_seconds);
        cJSON_AddStringToObject(red, "maxExperimentDuration", d);
        free(d);
    }
    cJSON *ss = cJSON_Parse(x->search_space);
    if (ss) {
        cJSON_DeleteItemFromObject(red, "searchSpace");
        cJSON_AddItemToObject(red, "searchSpace", ss);
    }
    cJSON_AddItemToObject(j, "params", red);
    cJSON_AddStringToObject(j, "id", x->id);
    cJSON_AddNumberToObject(j, "execDuration", (double)(x->exec_duration_ms / 1000));
    cJSON_AddStringToObject(j, "logDir", x->exp_dir);
    cJSON_AddNumberToObject(j, "startTime", (double)x->start_time);
    if (x->end_time)
        cJSON_AddNumberToObject(j, "endTime", (double)x->end_time);
    cJSON_AddNumberToObject(j, "nextSequenceId", (double)x->next_sequence);
    cJSON_AddNumberToObject(j, "revision", 1);
    return j;
}

void nni_metric_from_row(sqlite3_stmt *st, int col, struct nni_metric *m)
{
    m->trial_id = (const char *)sqlite3_column_text(st, col);
    m->parameter_id = (const char *)sqlite3_column_text(st, col + 1);
    m->type = (const char *)sqlite3_column_text(st, col + 2);
    m->sequence = sqlite3_column_int64(st, col + 3);
    m->value = (const char *)sqlite3_column_text(st, col + 4);
    m->time = sqlite3_column_int64(st, col + 5);
    m->id = sqlite3_column_int64(st, col + 6);
}

void nni_metric_text(struct strbuf *sb, const struct nni_metric *m)
{
    sb_puts(sb, "{\"timestamp\":");
    nj_int(sb, m->time);
    sb_puts(sb, ",\"trialJobId\":");
    nj_str(sb, m->trial_id ? m->trial_id : "");
    sb_puts(sb, ",\"parameterId\":");
    nj_str(sb, m->parameter_id && *m->parameter_id ? m->parameter_id : NULL);
    sb_puts(sb, ",\"type\":");
    nj_str(sb, m->type ? m->type : "");
    sb_puts(sb, ",\"sequence\":");
    nj_int(sb, m->sequence);
    /* NNI's double encoding: data is a JSON string literal of the value's JSON text */
    struct strbuf inner;
    sb_init(&inner);
    nj_str(&inner, m->value ? m->value : "");
    sb_puts(sb, ",\"data\":");
    nj_str(sb, inner.buf);
    sb_free(&inner);
    sb_add(sb, "}", 1);
}

cJSON *nni_metric_record(sqlite3_stmt *st, int col)
{
    struct nni_metric m;
    nni_metric_from_row(st, col, &m);
    struct strbuf sb;
    sb_init(&sb);
    nni_metric_text(&sb, &m);
    return parse_text(&sb);
}

/* A wire parameter id other than the tuner index (trial.parameter_label): Hyperband's
 * "0-3_0_12" is a JSON string, as NNI sends it; a plain decimal integer (an advisor
 * process's own numbering) stays a JSON number, so the trial sees the type it was sent. */
static void nj_parameter_label(struct strbuf *sb, const char *label)
{
    const char *p = label + (*label == '-');
    size_t n = strspn(p, "0123456789");
    if (n > 0 && n < 16 && p[n] == '\0' && (n == 1 || *p != '0'))
        sb_puts(sb, label);
    else
        nj_str(sb, label);
}

char *nni_param_record(const struct trial *t)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "{\"parameter_id\":");
    if (t->parameter_label)
        nj_parameter_label(&sb, t->parameter_label);
    else if (t->parameter_id >= 0)
        nj_int(&sb, t->parameter_id);
    else
        sb_puts(&sb, "null");
    sb_puts(&sb, ",\"parameter_source\":");
    nj_str(&sb, t->parameter_source ? t->parameter_source : "algorithm");
    sb_puts(&sb, ",\"parameters\":");
    nj_object_text(&sb, t->parameters);
    sb_puts(&sb, ",\"parameter_index\":0}");
    return sb_detach(&sb);
}

void nni_trial_job_text(struct strbuf *sb, const struct experiment *x, const struct trial *t,
                        const struct nni_metric *final)
{
    int first = 1;
    sb_add(sb, "{", 1);
    nj_key(sb, &first, "trialJobId");
    nj_str(sb, t->id);
    nj_key(sb, &first, "sequenceId");
    nj_int(sb, t->sequence);
    nj_key(sb, &first, "status");
    nj_str(sb, t->status);
    /* trialq: where it runs (hybrid experiments: 'hybrid' until a platform claims it) */
    if (t->platform) {
        nj_key(sb, &first, "platform");
        nj_str(sb, t->platform);
    }
    /* NNI: the RUNNING time, else the WAITING (submit) time */
    nj_key(sb, &first, "startTime");
    nj_int(sb, t->start_time ? t->start_time : t->submit_time);
    if (t->end_time) {
        nj_key(sb, &first, "endTime");
        nj_int(sb, t->end_time);
    }
    nj_key(sb, &first, "hyperParameters");
    char *rec = nni_param_record(t);
    sb_add(sb, "[", 1);
    nj_str(sb, rec);
    sb_add(sb, "]", 1);
    free(rec);
    nj_key(sb, &first, "logPath");
    char *dir = trial_dir_path(t, x->exp_dir);
    nj_str(sb, dir);
    if (strcmp(t->status, "FAILED") == 0) {
        /* NNI appends "/stderr"; ours is the file that exists */
        char *err = xasprintf("%s/trial.stderr", dir);
        nj_key(sb, &first, "stderrPath");
        nj_str(sb, err);
        free(err);
    }
    free(dir);
    if (t->url) { /* trialq: the job's page on its platform (NNI's trial url of a cluster) */
        nj_key(sb, &first, "url");
        nj_str(sb, t->url);
    }
    if (t->message) {
        nj_key(sb, &first, "message");
        nj_str(sb, t->message);
    }
    if (strcmp(t->status, "WAITING") == 0 && t->waiting_reason) {
        nj_key(sb, &first, "waitingReason");
        nj_str(sb, t->waiting_reason);
    }
    if (t->gpu_indices) { /* trialq: the GPUs scheduled for it (its CUDA_VISIBLE_DEVICES) */
        nj_key(sb, &first, "gpuIndices");
        nj_str(sb, t->gpu_indices);
    }
    nj_key(sb, &first, "attempt");
    nj_int(sb, t->attempt);
    if (final && strcmp(t->status, "SUCCEEDED") == 0) {
        nj_key(sb, &first, "finalMetricData");
        sb_add(sb, "[", 1);
        nni_metric_text(sb, final);
        sb_add(sb, "]", 1);
    }
    sb_add(sb, "}", 1);
}

int nni_trial_job_write(struct db *db, const struct experiment *x, const struct trial *t, struct strbuf *sb,
                        struct errbuf *e)
{
    if (strcmp(t->status, "SUCCEEDED") != 0 || !t->final_metric_json) {
        nni_trial_job_text(sb, x, t, NULL);
        return 0;
    }
    /* the first FINAL of the current attempt, as NNI keeps the first (metric_final index) */
    sqlite3_stmt *st = db_query(db, e, "SELECT " NNI_METRIC_COLUMNS " FROM metric m"
                                       " WHERE m.trial_id = ? AND m.attempt = ? AND m.type = 'FINAL'"
                                       " ORDER BY m.id LIMIT 1", "sd", t->id, t->attempt);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        struct nni_metric m;
        nni_metric_from_row(st, 0, &m);
        nni_trial_job_text(sb, x, t, &m);
    } else if (rc == SQLITE_DONE) {
        nni_trial_job_text(sb, x, t, NULL);
    } else {
        errf(e, "final metric of %s: %s", t->id, sqlite3_errmsg(db->h));
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

cJSON *nni_trial_job_json(struct db *db, const struct experiment *x, const struct trial *t)
{
    struct strbuf sb;
    sb_init(&sb);
    struct errbuf e;
    if (nni_trial_job_write(db, x, t, &sb, &e) < 0) {
        sb_free(&sb);
        nni_trial_job_text(&sb, x, t, NULL);
    }
    return parse_text(&sb);
}

cJSON *nni_experiment_entry(const struct experiment *x, int alive)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", x->id);
    /* NNI drops the port of an experiment whose manager is gone */
    if (alive)
        cJSON_AddNumberToObject(j, "port", x->port);
    cJSON_AddNumberToObject(j, "startTime", (double)x->start_time);
    if (x->end_time)
        cJSON_AddNumberToObject(j, "endTime", (double)x->end_time);
    else
        cJSON_AddStringToObject(j, "endTime", "N/A");
    const char *status = x->status;
    if (!alive && strcmp(status, "DONE") != 0 && strcmp(status, "ERROR") != 0)
        status = "STOPPED";
    cJSON_AddStringToObject(j, "status", status);
    cJSON_AddStringToObject(j, "platform", x->platform);
    if (x->name)
        cJSON_AddStringToObject(j, "experimentName", x->name);
    else
        cJSON_AddNullToObject(j, "experimentName");
    cJSON_AddItemToObject(j, "tag", cJSON_CreateArray());
    if (alive)
        cJSON_AddNumberToObject(j, "pid", x->api_pid);
    else
        cJSON_AddNullToObject(j, "pid");
    cJSON_AddItemToObject(j, "webuiUrl", cJSON_CreateArray());
    /* logDir is the working directory that holds <id>/ */
    char *dir = xstrdup(x->exp_dir);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = '\0';
    cJSON_AddStringToObject(j, "logDir", dir);
    free(dir);
    if (x->url_prefix && *x->url_prefix) /* NNI stores it without slashes */
        cJSON_AddStringToObject(j, "prefixUrl", x->url_prefix + 1);
    else
        cJSON_AddNullToObject(j, "prefixUrl");
    return j;
}

void nni_export_open(struct strbuf *sb, const char *trial_id, const char *parameters, const char *final_json)
{
    sb_puts(sb, "{\"parameter\":");
    nj_object_text(sb, parameters);
    sb_puts(sb, ",\"value\":");
    nj_str(sb, final_json ? final_json : "");
    sb_puts(sb, ",\"trialJobId\":");
    nj_str(sb, trial_id);
}
