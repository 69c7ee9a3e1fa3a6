/* nnijson.c: NNI's REST payload shapes built from our rows. */
#include <stdlib.h>
#include <string.h>

#include "schema/nnijson.h"

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

cJSON *nni_metric_record(sqlite3_stmt *st, int col)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "timestamp", (double)col_i64(st, col + 5));
    cJSON_AddStringToObject(m, "trialJobId", (const char *)sqlite3_column_text(st, col));
    const char *pid = (const char *)sqlite3_column_text(st, col + 1);
    if (pid && *pid)
        cJSON_AddStringToObject(m, "parameterId", pid);
    else
        cJSON_AddNullToObject(m, "parameterId");
    cJSON_AddStringToObject(m, "type", (const char *)sqlite3_column_text(st, col + 2));
    cJSON_AddNumberToObject(m, "sequence", (double)col_i64(st, col + 3));
    /* NNI's double encoding: data is a JSON string literal of the value's JSON text */
    cJSON *s = cJSON_CreateString((const char *)sqlite3_column_text(st, col + 4));
    char *data = cJSON_PrintUnformatted(s);
    cJSON_Delete(s);
    cJSON_AddStringToObject(m, "data", data);
    free(data);
    return m;
}

char *nni_param_record(const struct trial *t)
{
    cJSON *rec = cJSON_CreateObject();
    if (t->parameter_id >= 0)
        cJSON_AddNumberToObject(rec, "parameter_id", (double)t->parameter_id);
    else
        cJSON_AddNullToObject(rec, "parameter_id");
    cJSON_AddStringToObject(rec, "parameter_source", t->parameter_source ? t->parameter_source : "algorithm");
    cJSON *p = cJSON_Parse(t->parameters);
    cJSON_AddItemToObject(rec, "parameters", p ? p : cJSON_CreateObject());
    cJSON_AddNumberToObject(rec, "parameter_index", 0);
    char *s = cJSON_PrintUnformatted(rec);
    cJSON_Delete(rec);
    return s;
}

cJSON *nni_trial_job_json(struct db *db, const struct experiment *x, const struct trial *t)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "trialJobId", t->id);
    cJSON_AddNumberToObject(j, "sequenceId", (double)t->sequence);
    cJSON_AddStringToObject(j, "status", t->status);
    cJSON_AddNumberToObject(j, "startTime", (double)(t->start_time ? t->start_time : t->submit_time));
    if (t->end_time)
        cJSON_AddNumberToObject(j, "endTime", (double)t->end_time);
    cJSON *hp = cJSON_AddArrayToObject(j, "hyperParameters");
    char *rec = nni_param_record(t);
    cJSON_AddItemToArray(hp, cJSON_CreateString(rec));
    free(rec);
    char *dir = t->trial_dir ? xstrdup(t->trial_dir) : xasprintf("%s/trials/%s", x->exp_dir, t->id);
    cJSON_AddStringToObject(j, "logPath", dir);
    if (strcmp(t->status, "FAILED") == 0) {
        char *err = xasprintf("%s/trial.stderr", dir);
        cJSON_AddStringToObject(j, "stderrPath", err);
        free(err);
    }
    free(dir);
    if (t->message)
        cJSON_AddStringToObject(j, "message", t->message);
    if (strcmp(t->status, "WAITING") == 0 && t->waiting_reason)
        cJSON_AddStringToObject(j, "waitingReason", t->waiting_reason);
    cJSON_AddNumberToObject(j, "attempt", t->attempt);
    if (strcmp(t->status, "SUCCEEDED") == 0 && t->final_metric_json) {
        struct errbuf e;
        sqlite3_stmt *st = db_query(db, &e,
            "SELECT trial_id, parameter_id, type, sequence, value, time FROM metric"
            " WHERE trial_id = ? AND type = 'FINAL' AND attempt = ? ORDER BY id LIMIT 1", "sd", t->id, t->attempt);
        if (st) {
            cJSON *arr = cJSON_AddArrayToObject(j, "finalMetricData");
            if (sqlite3_step(st) == SQLITE_ROW)
                cJSON_AddItemToArray(arr, nni_metric_record(st, 0));
            sqlite3_reset(st);
        }
    }
    return j;
}
