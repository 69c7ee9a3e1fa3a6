/* routes_trials.c: trial-jobs (list with pagination and incremental reads, get,
 * customized trials, kill, rerun) and job-statistics. */
#include <stdlib.h>
#include <string.h>

#include "api/children.h"
#include "api/routes.h"
#include "api/scheduler.h"
#include "schema/trial_new.h"

static int fill_trials(struct stream *s, struct strbuf *sb, struct errbuf *e)
{
    if (trial_page_next(s->a->db, &s->x, &s->page, STREAM_PIECE, sb, e) < 0)
        return -1;
    return s->page.done ? 0 : 1;
}

/* GET /trial-jobs[?status=S][&limit=N][&offset=N][&since=SEQ]: without parameters NNI's
 * whole list by sequence, streamed in chunks; X-Trialq-Seq tells what to pass as since=
 * next time. An offset into the whole list is a seek on the sequence (listing.h). */
void h_trial_jobs(struct req *q)
{
    const char *status = query_str(q, "status");
    if (status) {
        if (trial_status_find(status, strlen(status)) < 0) {
            reply_error(q->r, 400, "query parameter status: unknown trial status '%.64s' (" TRIAL_STATUS_WORDS ")",
                        status);
            return;
        }
    }
    struct stream *s = stream_paged(q);
    if (!s)
        return;
    s->page.status = stream_keep(s, status);
    s->page.span = &q->a->trial_span; /* an offset is a seek on the sequence */
    stream_page_start(q, s, trial_page_cursor, fill_trials);
}

/* The trial when it belongs to this experiment; else a 404 is sent. 1 found, 0 not. */
static int load_own_trial(struct req *q, struct trial *t)
{
    struct errbuf e;
    int f = trial_load(q->a->db, q->args[0], t, &e);
    if (f < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        return 0;
    }
    if (f == 0 || strcmp(t->experiment_id, q->a->exp_id) != 0) {
        if (f)
            trial_clear(t);
        reply_error(q->r, 404, "trial %.64s not found in experiment %s", q->args[0], q->a->exp_id);
        return 0;
    }
    return 1;
}

void h_trial_job_get(struct req *q)
{
    struct trial t;
    if (!load_own_trial(q, &t))
        return;
    struct strbuf sb;
    sb_init(&sb);
    struct errbuf e;
    if (nni_trial_job_write(q->a->db, &q->a->exp, &t, &sb, &e) < 0)
        reply_error(q->r, 500, "%s", e.msg);
    else
        reply_json(q->r, 200, sb.buf);
    sb_free(&sb);
    trial_clear(&t);
}

/* Adds a WAITING trial; replies {"sequenceId": N, "trialJobId": id} or NNI's
 * "reach maxTrialNum". */
static void enqueue(struct req *q, const char *parameters, const char *source, int64_t parameter_id,
                    const char *reason)
{
    struct api *a = q->a;
    /* as the scheduler: 1 + maxTrialRetries attempts (default one retry) */
    const cJSON *retries = cJSON_GetObjectItemCaseSensitive(a->cfg->canonical, "maxTrialRetries");
    int64_t r = 1;
    if (retries)
        json_int_in(retries, 0, 1000, &r);
    struct trial_new n = {
        .exp_id = a->exp_id,
        .platform = a->exp.platform, /* hybrid: any listed platform's worker may claim it */
        .parameters = parameters,
        .source = source,
        .parameter_id = parameter_id,
        .max_attempts = (int)(1 + r),
        .reason = reason,
    };
    char tid[6];
    int64_t seq = 0;
    struct errbuf e;
    int replaced = 0;
    int rc = trial_enqueue(a->db, &n, tid, &seq, &replaced, &e);
    if (rc < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    if (rc == 0) {
        reply_error(q->r, 500, "reach maxTrialNum");
        return;
    }
    if (replaced)
        sched_index_withdrawn(a); /* the tuner suggests that index again later */
    /* a finished experiment runs again until this trial ends; the scheduler then
     * decides its status from the budgets as always */
    exp_transition(a->db, a->exp_id, "DONE", "RUNNING", reason, &e);
    children_wake(a);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "sequenceId", (double)seq);
    cJSON_AddStringToObject(j, "trialJobId", tid);
    reply_cjson(q->r, j);
    sched_tick(a);
}

/* NNI's customized trial: the body is the parameters object. */
void h_trial_job_post(struct req *q)
{
    cJSON *j = body_json(q);
    if (!j)
        return;
    if (!cJSON_IsObject(j)) {
        reply_error(q->r, 400, "body: must be a JSON object of parameter values, e.g. {\"x\": 1}");
    } else {
        char *params = cJSON_PrintUnformatted(j);
        enqueue(q, params, "customized", -1, "customized trial (POST /trial-jobs)");
        free(params);
    }
    cJSON_Delete(j);
}

/* trialq: the same parameters again, as a new trial (`nnictl trial rerun`). */
void h_trial_job_rerun(struct req *q)
{
    struct trial t;
    if (!load_own_trial(q, &t))
        return;
    char *reason = xasprintf("rerun of %s", t.id);
    enqueue(q, t.parameters, "rerun", t.parameter_id, reason);
    free(reason);
    trial_clear(&t);
}

void h_trial_job_delete(struct req *q)
{
    struct api *a = q->a;
    struct trial t;
    if (!load_own_trial(q, &t))
        return;
    struct errbuf e;
    if (trial_request_kill(a->db, t.id, "USER_CANCELED", "DELETE /trial-jobs", &e) < 0) {
        reply_error(q->r, 500, "%s", e.msg);
    } else {
        children_wake(a);
        reply_json(q->r, 200, "");
    }
    trial_clear(&t);
}

void h_job_statistics(struct req *q)
{
    struct errbuf e;
    struct status_count *c;
    int n;
    if (trials_per_status(q->a->db, q->a->exp_id, &c, &n, &e) < 0) {
        reply_error(q->r, 500, "job statistics: %s", e.msg);
        return;
    }
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "trialJobStatus", c[i].status);
        cJSON_AddNumberToObject(o, "trialJobNumber", (double)c[i].n);
        cJSON_AddItemToArray(arr, o);
    }
    status_counts_free(c, n);
    reply_cjson(q->r, arr);
}

/* trialq: the machines the experiment runs on (local host, remote machineList), with
 * health (a remote machine that stopped answering is healthy: false, lastError says
 * why) and GPUs (trialShare: the share of it trials hold now). */
void h_machines(struct req *q)
{
    reply_cjson(q->r, machines_json(q->a->db, &q->a->exp, config_ts_machines));
}
