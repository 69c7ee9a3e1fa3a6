/* dlc.c: the PAI-DLC platform (Alibaba Cloud Deep Learning Containers): one DLC job per
 * trial, through DLC's ROA API (version 2020-12-03) directly, every request signed with
 * Alibaba's signature V3 (common/acs_sign.c) on libcurl: CreateJob (POST /api/v1/jobs),
 * GetJob (GET /api/v1/jobs/{JobId}), ListJobs (GET /api/v1/jobs?DisplayName=...),
 * StopJob (POST /api/v1/jobs/{JobId}/stop). docs/platforms/dlc.md says how to set it up.
 * Status comes from one paged ListJobs of the experiment's jobs per poll interval
 * (dlc_poll_all); GetJob only confirms a job that the listing lacks.
 *
 * Files go through a NAS data source that DLC mounts into every job at
 * containerStorageMountPoint and that is mounted on this host at localStorageMountPoint,
 * as on OpenPAI: the code once per experiment (<mount>/<exp>/nni-code), and per trial
 * L = <localMount>/<exp>/<trial> holding parameter.cfg and run.sh, seen by the job as
 * C = <containerMount>/<exp>/<trial>; the trial writes its metrics and exit status
 * there and this worker reads them from L.
 *
 * Crash safety: DLC gives a job an id of its own and accepts a second job with the same
 * DisplayName, so idempotency is ours. The trial's job_id is its DisplayName
 * (nni_exp_<exp>_trial_<trial>, plus _attempt<N> for a retry); before creating, submit
 * lists the jobs with that DisplayName (ListJobs matches a part of the name: the exact
 * name is checked here) and re-attaches to one it finds. Once DLC answered CreateJob
 * (or the list found the job) its JobId is written to L/.nni/submitted, so a restarted
 * worker knows it; a create whose answer was lost (or a crash before the file was
 * written) is found by the list. A job that DLC no longer knows but that was accepted
 * has vanished (the trial is retried). No call is retried in a blocking loop: a failed
 * one (no answer, 5xx, throttling) returns -1 and the loop tries again after a back-off.
 *
 * The access key secret is used for the HMAC only (acs_sign); no message here names it. */
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/acs_sign.h"
#include "schema/worker_rows.h"
#include "workers/rest/rest.h"

#define API_VERSION "2020-12-03"
#define LIST_PAGE 100 /* jobs per ListJobs page of the batched poll (TRIALQ_DLC_LIST_PAGE) */

struct dlc {
    /* no redirects: they would not carry a valid signature; jobs: job_id is DLC's JobId,
     * once known (need_submit: ListJobs by name, then CreateJob); listed by JobId */
    struct rest_base b;
    char *endpoint;    /* scheme://host[:port], no trailing slash */
    char *host;        /* the Host header as libcurl sends it */
    char *key_id, *key_secret;
    char *region, *workspace, *image, *job_type, *role_type, *ecs_spec, *nas, *oss, *ca_bundle;
    char *console;     /* the console's address (consoleUrl): the trials' tracking URLs */
    long long pod_count;
    char *cont_mount;
    int fail_streak;         /* calls in a row that got no answer or a passing refusal */
};

/* ---------------- configuration ---------------- */

static const char *ts_str(const cJSON *ts, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ts, key);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static void dlc_close(struct rest_base *b)
{
    struct dlc *d = (struct dlc *)b;
    char **s[] = {&d->endpoint, &d->host,   &d->key_id,   &d->key_secret, &d->region,     &d->workspace,
                  &d->image,    &d->job_type, &d->role_type, &d->ecs_spec, &d->nas,        &d->oss,
                  &d->ca_bundle, &d->cont_mount, &d->console};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        if (*s[i] == d->key_secret && d->key_secret)
            memset(d->key_secret, 0, strlen(d->key_secret));
        free(*s[i]);
    }
    free(d);
}

/* The endpoint and credentials of a trainingService entry ts: 0, or -1 with e. Plain
 * http:// only to 127.0.0.1 (a test server, a local proxy) or with insecure: true. */
static int dlc_configure(struct dlc *d, const cJSON *ts, struct errbuf *e)
{
    const char *region = ts_str(ts, "region");
    if (!region)
        return errf(e, "trainingService (dlc): region is required");
    d->region = xstrdup(region);
    const char *ep = ts_str(ts, "endpoint");
    if (ep)
        d->endpoint = strstr(ep, "://") ? xstrdup(ep) : xasprintf("https://%s", ep);
    else if (strcmp(region, "share") == 0)
        d->endpoint = xstrdup("https://pai-dlc-share.aliyuncs.com");
    else
        d->endpoint = xasprintf("https://pai-dlc.%s.aliyuncs.com", region);
    for (size_t n = strlen(d->endpoint); n && d->endpoint[n - 1] == '/'; n--)
        d->endpoint[n - 1] = '\0';
    const char *rest;
    if (str_starts(d->endpoint, "https://")) {
        rest = d->endpoint + 8;
    } else if (str_starts(d->endpoint, "http://")) {
        rest = d->endpoint + 7;
        const cJSON *insecure = cJSON_GetObjectItemCaseSensitive(ts, "insecure");
        if (!str_starts(rest, "127.0.0.1:") && strcmp(rest, "127.0.0.1") != 0 && !cJSON_IsTrue(insecure))
            return errf(e, "trainingService.endpoint: %s is plain http: the signed requests would travel "
                           "unencrypted; use https://, or set insecure: true", d->endpoint);
    } else {
        return errf(e, "trainingService.endpoint: %s is neither https:// nor http://", d->endpoint);
    }
    if (!rest[0] || strchr(rest, '/') || strchr(rest, '?'))
        return errf(e, "trainingService.endpoint: %s must be scheme://host[:port], without a path", d->endpoint);
    d->host = xstrdup(rest);
    /* libcurl leaves a default port out of the Host header: sign it the same way */
    size_t hl = strlen(d->host);
    int https = str_starts(d->endpoint, "https://");
    const char *dflt = https ? ":443" : ":80";
    if (hl > strlen(dflt) && strcmp(d->host + hl - strlen(dflt), dflt) == 0)
        d->host[hl - strlen(dflt)] = '\0';
    const char *id = ts_str(ts, "accessKeyId"), *secret = ts_str(ts, "accessKeySecret");
    if (!id)
        id = getenv("ALIBABA_CLOUD_ACCESS_KEY_ID");
    if (!secret)
        secret = getenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET");
    if (!id || !id[0] || !secret || !secret[0])
        return errf(e, "trainingService (dlc): no access key: set accessKeyId and accessKeySecret, or "
                       "ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET");
    d->key_id = xstrdup(id);
    d->key_secret = xstrdup(secret);
    const char *ecs = ts_str(ts, "ecsSpec");
    if (ecs && !str_starts(ecs, "ecs."))
        return errf(e, "trainingService.ecsSpec: '%.100s' is not an ECS instance type (ecs.*); a dedicated resource "
                       "group ({'resource_id': ...}) is not supported yet", ecs);
    const char *ws = ts_str(ts, "workspaceId");
    d->workspace = ws && strcmp(ws, "None") != 0 ? xstrdup(ws) : NULL;
    const char *console = ts_str(ts, "consoleUrl");
    d->console = xstrdup(console ? console : "https://pai-dlc.console.aliyun.com");
    for (size_t n = strlen(d->console); n && d->console[n - 1] == '/'; n--)
        d->console[n - 1] = '\0';
    const char *ca = ts_str(ts, "caBundle");
    d->ca_bundle = ca ? xstrdup(ca) : NULL;
    const char *tmo = getenv("TRIALQ_DLC_TIMEOUT"); /* seconds; tests shorten it */
    d->b.rest.timeout_ms = tmo && atof(tmo) > 0 ? (long)(atof(tmo) * 1000) : 15000;
    d->b.rest.ca_bundle = d->ca_bundle;
    d->b.rest.insecure_tls = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ts, "insecure"));
    d->b.rest.tls_hint = "the certificate is not trusted: name its CA with caBundle (a PEM file)";
    d->b.rest.curl = curl_easy_init();
    if (!d->b.rest.curl)
        return errf(e, "cannot initialise libcurl");
    return 0;
}

/* ---------------- HTTP ---------------- */

/* A refusal that may pass: 5xx, 429, 408, throttling, ServiceUnavailable, and a nonce
 * seen before (libcurl resent a GET on a reused connection that closed unanswered: the
 * next try is signed again). */
static int transient(long status, const char *body)
{
    if (rest_transient(status))
        return 1;
    cJSON *j = cJSON_Parse(body);
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "Code");
    int t = cJSON_IsString(code) && (str_starts(code->valuestring, "Throttling") ||
                                     strcmp(code->valuestring, "ServiceUnavailable") == 0 ||
                                     strcmp(code->valuestring, "InternalError") == 0 ||
                                     strcmp(code->valuestring, "SignatureNonceUsed") == 0);
    cJSON_Delete(j);
    return t;
}

/* DLC keeps failing (FAIL_STREAK calls in a row got no answer or a passing refusal): the
 * experiment's errors say so (nnictl, check-status, the web UI), once per kind of fault. */
#define FAIL_STREAK 5
static void note_call(struct dlc *d, const char *fault)
{
    if (!fault) {
        d->fail_streak = 0;
        return;
    }
    if (++d->fail_streak != FAIL_STREAK || !d->b.w)
        return;
    char *msg = xasprintf("dlc: DLC at %s keeps failing (%s); the calls are retried with back-off", d->endpoint,
                          fault);
    struct errbuf xe;
    log_warn("%s", msg);
    if (exp_add_error_once(d->b.w->db, d->b.w->exp_id, msg, &xe) < 0)
        log_warn("cannot keep the error with the experiment: %s", xe.msg);
    free(msg);
}

/* One signed request (a new signature and nonce every time). Returns 0 when DLC
 * answered (*status, *resp: the body, caller frees), -1 when no answer came (e). */
static int call(struct dlc *d, const char *method, const char *path, const struct acs_kv *q, size_t nq,
                const char *action, const char *body, long *status, char **resp, struct errbuf *e)
{
    struct acs_request req = {.method = method, .host = d->host, .path = path, .query = q, .nquery = nq,
                              .action = action, .version = API_VERSION, .body = body,
                              .body_len = body ? strlen(body) : 0,
                              .content_type = body ? "application/json" : NULL};
    struct acs_signed s;
    struct errbuf se;
    if (acs_sign(&req, d->key_id, d->key_secret, &s, &se) < 0)
        return errf(e, "%s: cannot sign the request: %s", action, se.msg);
    const char **headers = xcalloc(s.nheaders + 3, sizeof *headers);
    size_t nh = 0;
    for (size_t i = 0; i < s.nheaders; i++)
        if (strcmp(s.headers[i].name, "host") != 0) /* libcurl sends it, as signed */
            headers[nh++] = xasprintf("%s: %s", s.headers[i].name, s.headers[i].value);
    headers[nh++] = xstrdup("Accept: application/json");
    if (!body)
        headers[nh++] = xstrdup("Content-Type:");
    char *url = xasprintf("%s%s", d->endpoint, s.target);
    char *shown = xasprintf("%s (DLC at %s)", action, d->endpoint);
    int rc = rest_call(&d->b.rest, method, url, shown, headers, body, status, resp, e);
    for (size_t i = 0; i < nh; i++)
        free((char *)headers[i]);
    free(headers);
    free(shown);
    free(url);
    acs_signed_free(&s);
    if (rc < 0) {
        if (!d->b.rest.held) /* a call held back by the back-off does not count */
            note_call(d, "no answer");
        return -1;
    }
    if (transient(*status, *resp)) {
        char fault[64];
        cJSON *j = cJSON_Parse(*resp);
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "Code");
        snprintf(fault, sizeof fault, "HTTP %ld %.40s", *status, cJSON_IsString(code) ? code->valuestring : "");
        cJSON_Delete(j);
        note_call(d, fault);
    } else {
        note_call(d, NULL);
    }
    return 0;
}

/* "Code: Message" of a DLC error body, else the body (one line). */
static void error_text(const char *body, char *out, size_t outlen)
{
    cJSON *j = cJSON_Parse(body);
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "Code");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "Message");
    if (cJSON_IsString(code))
        snprintf(out, outlen, "%.80s: %.300s", code->valuestring, cJSON_IsString(m) ? m->valuestring : "");
    else
        snprintf(out, outlen, "%.300s", body ? body : "");
    for (char *q = out; *q; q++)
        if (*q == '\n' || *q == '\r')
            *q = ' ';
    cJSON_Delete(j);
}

/* ListJobs with DisplayName filter name (a part-of-the-name match): page number page
 * (from 1) of page_size jobs, in the order order ("asc": oldest first, so that jobs
 * created meanwhile come on later pages; NULL: DLC's default, newest first). Returns
 * the parsed answer (caller deletes) or NULL with e; *refused set when DLC refused for
 * good (not transient). */
static cJSON *list_jobs_page(struct dlc *d, const char *name, int page, int page_size, const char *order,
                             int *refused, struct errbuf *e)
{
    char ps[16], pn[16];
    snprintf(ps, sizeof ps, "%d", page_size);
    snprintf(pn, sizeof pn, "%d", page);
    struct acs_kv q[6] = {{"DisplayName", name}, {"PageSize", ps}, {"PageNumber", pn}};
    size_t nq = 3;
    if (order) {
        q[nq++] = (struct acs_kv){"Order", order};
        q[nq++] = (struct acs_kv){"SortBy", "GmtCreateTime"};
    }
    if (d->workspace)
        q[nq++] = (struct acs_kv){"WorkspaceId", d->workspace};
    long status = 0;
    char *body = NULL, msg[400];
    *refused = 0;
    if (call(d, "GET", "/api/v1/jobs", q, nq, "ListJobs", NULL, &status, &body, e) < 0)
        return NULL;
    cJSON *j = NULL;
    if (status != 200) {
        error_text(body, msg, sizeof msg);
        *refused = !transient(status, body);
        errf(e, "ListJobs: HTTP %ld: %s", status, msg);
    } else if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j = cJSON_Parse(body), "Jobs"))) {
        cJSON_Delete(j);
        j = NULL;
        errf(e, "ListJobs: the answer has no Jobs list");
    }
    free(body);
    return j;
}

/* The first page_size jobs whose name holds name, newest first. */
static cJSON *list_jobs(struct dlc *d, const char *name, int page_size, int *refused, struct errbuf *e)
{
    return list_jobs_page(d, name, 1, page_size, NULL, refused, e);
}

/* Checks the key, the endpoint and the workspace with one ListJobs: 0 ok; 1 no answer
 * or a passing refusal (e); -1 DLC refused for good (*fatal, e). */
static int probe_once(struct rest_base *b, int *fatal, struct errbuf *e)
{
    struct dlc *d = (struct dlc *)b;
    cJSON *j = list_jobs(d, "nni_exp_", 1, fatal, e);
    cJSON_Delete(j);
    if (j)
        return 0;
    if (*fatal)
        return errprefix(e, "dlc: %s refused ListJobs with access key %s (check accessKeyId, accessKeySecret, "
                            "region or endpoint, and workspaceId)", d->endpoint, d->key_id);
    errprefix(e, "DLC at %s", d->endpoint);
    return 1;
}

static const char *unreachable(const struct rest_base *b, char *buf, size_t len)
{
    snprintf(buf, len, "dlc: cannot reach DLC at %s", ((const struct dlc *)b)->endpoint);
    return buf;
}

/* The connection (dlc_configure); w: also what the worker's jobs need. */
static struct rest_base *dlc_open(struct worker *w, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    (void)config;
    struct dlc *d = xcalloc(1, sizeof *d);
    const char *cm = ts_str(ts, "containerStorageMountPoint");
    const char *image = ts_str(ts, "image"), *ecs = ts_str(ts, "ecsSpec");
    if (dlc_configure(d, ts, e) < 0 ||
        (w && (!cm || !image || !ecs || !ts_str(ts, "localStorageMountPoint")) &&
         errf(e, "trainingService (dlc): image, ecsSpec, localStorageMountPoint and containerStorageMountPoint "
                 "are required") < 0)) {
        rest_base_clear(&d->b);
        dlc_close(&d->b);
        return NULL;
    }
    if (!w)
        return &d->b;
    d->image = xstrdup(image);
    d->ecs_spec = xstrdup(ecs);
    d->job_type = xstrdup(ts_str(ts, "jobType") ? ts_str(ts, "jobType") : "TFJob");
    d->role_type = xstrdup(ts_str(ts, "type") ? ts_str(ts, "type") : "Worker");
    const cJSON *pc = cJSON_GetObjectItemCaseSensitive(ts, "podCount");
    d->pod_count = cJSON_IsNumber(pc) && pc->valuedouble >= 1 ? (long long)pc->valuedouble : 1;
    d->nas = ts_str(ts, "nasDataSourceId") ? xstrdup(ts_str(ts, "nasDataSourceId")) : NULL;
    d->oss = ts_str(ts, "ossDataSourceId") ? xstrdup(ts_str(ts, "ossDataSourceId")) : NULL;
    d->cont_mount = xstrdup(cm);
    return &d->b;
}

static void describe(const struct rest_base *b)
{
    const struct dlc *d = (const struct dlc *)b;
    log_info("DLC %s (region %s) as %s; NAS %s -> %s", d->endpoint, d->region, d->key_id, d->b.local_root,
             d->b.cont_root);
}

/* ---------------- jobs ---------------- */

/* the JobId that DLC gave this attempt's job, kept on the NAS */
#define JOBID_MARKER "submitted"

/* The trial's tracking URL: the console's page of its job, as NNI's DLC helper gives it
 * (tracking_url), with the workspace where the config names one. Recorded in the trial
 * row once the JobId is known (t->url keeps it). */
static void record_url(struct dlc *d, struct trial *t, const char *dlc_id)
{
    char *id = curl_easy_escape(d->b.rest.curl, dlc_id, 0), *rg = curl_easy_escape(d->b.rest.curl, d->region, 0);
    char *ws = d->workspace ? curl_easy_escape(d->b.rest.curl, d->workspace, 0) : NULL;
    char *url = xasprintf("%s/#/jobs/detail?jobId=%s&regionId=%s%s%s", d->console, id ? id : "", rg ? rg : "",
                          ws ? "&workspaceId=" : "", ws ? ws : "");
    curl_free(id);
    curl_free(rg);
    curl_free(ws);
    struct errbuf e;
    if (trial_set_url(d->b.w->db, t->id, url, &e) < 0) {
        log_warn("trial %s: cannot record its tracking URL: %s", t->id, e.msg);
        free(url);
        return;
    }
    free(t->url);
    t->url = url;
}

static char *create_body(struct worker *w, struct dlc *d, const struct trial *t, const char *name)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "DisplayName", name);
    cJSON_AddStringToObject(j, "JobType", d->job_type);
    cJSON *spec = cJSON_CreateObject();
    cJSON_AddStringToObject(spec, "Type", d->role_type);
    cJSON_AddStringToObject(spec, "Image", d->image);
    cJSON_AddNumberToObject(spec, "PodCount", (double)d->pod_count);
    cJSON_AddStringToObject(spec, "EcsSpec", d->ecs_spec);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "JobSpecs"), spec);
    const cJSON *tc = worker_config_item(w, "trialCommand");
    char *cmd = nas_job_command(w, d->b.cont_root, t, "dlc", cJSON_IsString(tc) ? tc->valuestring : "false");
    cJSON_AddStringToObject(j, "UserCommand", cmd);
    free(cmd);
    cJSON *ds = cJSON_AddArrayToObject(j, "DataSources");
    if (d->nas) {
        cJSON *n = cJSON_CreateObject();
        cJSON_AddStringToObject(n, "DataSourceId", d->nas);
        cJSON_AddStringToObject(n, "MountPath", d->cont_mount);
        cJSON_AddItemToArray(ds, n);
    }
    if (d->oss) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "DataSourceId", d->oss);
        cJSON_AddItemToArray(ds, o);
    }
    if (d->workspace)
        cJSON_AddStringToObject(j, "WorkspaceId", d->workspace);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* Records DLC's JobId of the trial's job (memory and L/.nni/submitted). */
static void job_known(struct dlc *d, struct nas_job *j, const struct trial *t, const char *dlc_id)
{
    nas_job_known(j, d->b.local_root, t, JOBID_MARKER, dlc_id);
}

/* The JobId of the oldest job named exactly name in a ListJobs answer, or NULL. */
static const char *find_exact(const cJSON *list, const char *name)
{
    const char *found = NULL;
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "Jobs")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "DisplayName");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "JobId");
        if (cJSON_IsString(n) && cJSON_IsString(id) && strcmp(n->valuestring, name) == 0)
            found = id->valuestring; /* newest first: the last one is the oldest */
    }
    return found;
}

/* ListJobs by name, CreateJob when absent. 1: the job exists (created or re-attached);
 * 0: no answer or a passing refusal (e: try again later); -1: DLC refused it (e). */
static int try_submit(struct worker *w, struct nas_job *j, const struct trial *t, struct errbuf *e)
{
    struct dlc *d = w->platform;
    char *name = nas_job_name(w->exp_id, t);
    char *body = NULL, msg[400];
    long status = 0;
    int rc = 0, refused = 0;
    struct errbuf he;
    cJSON *list = list_jobs(d, name, 100, &refused, &he);
    if (!list) {
        rc = refused ? errf(e, "submit: %s", he.msg) : (errf(e, "submit: %s", he.msg), 0);
        goto out;
    }
    const char *found = find_exact(list, name);
    if (found) {
        log_info("trial %s: re-attached to DLC job %s (%s)", t->id, found, name);
        job_known(d, j, t, found);
        cJSON_Delete(list);
        rc = 1;
        goto out;
    }
    cJSON_Delete(list);
    char *req = create_body(w, d, t, name);
    int hr = call(d, "POST", "/api/v1/jobs", NULL, 0, "CreateJob", req, &status, &body, &he);
    free(req);
    if (hr < 0) { /* the job may exist now: the next try lists it first */
        errf(e, "submit: %s", he.msg);
        goto out;
    }
    cJSON *ans = status == 200 ? cJSON_Parse(body) : NULL;
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(ans, "JobId");
    if (cJSON_IsString(id) && id->valuestring[0] && !strchr(id->valuestring, '/')) {
        log_info("trial %s: submitted DLC job %s (%s)", t->id, id->valuestring, name);
        job_known(d, j, t, id->valuestring);
        rc = 1;
    } else if (status == 200) {
        errf(e, "submit: CreateJob answered without a JobId");
    } else {
        error_text(body, msg, sizeof msg);
        if (transient(status, body))
            errf(e, "submit: CreateJob: HTTP %ld: %s", status, msg);
        else
            rc = errf(e, "DLC refused job %s (HTTP %ld: %s)", name, status, msg);
    }
    cJSON_Delete(ans);
out:
    free(body);
    free(name);
    return rc;
}

/* The job's state as GetJob reports it. */
static void job_reported(struct worker *w, struct trial *t, const char *dir, const cJSON *job, struct job_state *js)
{
    struct errbuf e;
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(job, "JobId");
    if (!t->url && cJSON_IsString(jid))
        record_url(w->platform, t, jid->valuestring);
    const cJSON *stv = cJSON_GetObjectItemCaseSensitive(job, "Status");
    const char *state = cJSON_IsString(stv) ? stv->valuestring : "";
    if (strcmp(state, "Succeeded") == 0 || strcmp(state, "Failed") == 0) {
        int has_state = nas_job_ended(dir, t->attempt, strcmp(state, "Succeeded") == 0, 0, 0, js);
        if (strcmp(state, "Failed") == 0) {
            const cJSON *why = cJSON_GetObjectItemCaseSensitive(job, "ReasonMessage");
            if (!has_state && cJSON_IsString(why) && why->valuestring[0])
                snprintf(js->why, sizeof js->why, "DLC: %.480s", why->valuestring);
        }
    } else if (strcmp(state, "Stopped") == 0) {
        /* stopped on DLC, not by us: NNI's SYS_CANCELED */
        if (!t->kill_request && trial_request_kill(w->db, t->id, "SYS_CANCELED", "job stopped on DLC", &e) < 0)
            log_warn("trial %s: %s", t->id, e.msg);
        js->finished = 1;
        js->signal = SIGTERM;
        js->end_time = now_ms();
    }
}

/* The experiment's jobs: ListJobs (DisplayName holds the prefix nni_exp_<exp>_trial_; in
 * the workspace when one is set), oldest first, LIST_PAGE a page (TRIALQ_DLC_LIST_PAGE,
 * at most 1000), until TotalCount is reached or a page comes short; by JobId. */
static int list(struct rest_base *b, const char *exp_id, int wide, struct job_listing *l, struct errbuf *e)
{
    (void)wide; /* every page, always */
    struct dlc *d = (struct dlc *)b;
    job_listing_reset(l);
    char *prefix = xasprintf("nni_exp_%s_trial_", exp_id);
    const char *env = getenv("TRIALQ_DLC_LIST_PAGE");
    int size = env && atoi(env) > 0 && atoi(env) <= 1000 ? atoi(env) : LIST_PAGE;
    int rc = 0;
    for (int page = 1;; page++) {
        int refused = 0;
        cJSON *list = list_jobs_page(d, prefix, page, size, "asc", &refused, e);
        if (!list) {
            rc = refused ? POLL_ALL_REFUSED : -1; /* refused for good: GetJob per job */
            break;
        }
        const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(list, "Jobs");
        const cJSON *total = cJSON_GetObjectItemCaseSensitive(list, "TotalCount");
        int n = cJSON_GetArraySize(jobs);
        cJSON *it;
        cJSON_ArrayForEach(it, jobs) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "DisplayName");
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "JobId");
            if (cJSON_IsString(name) && cJSON_IsString(id) && str_starts(name->valuestring, prefix))
                job_listing_add(l, id->valuestring, cJSON_Duplicate(it, 1));
        }
        int more = n == size && (!cJSON_IsNumber(total) || (double)page * size < total->valuedouble);
        cJSON_Delete(list);
        if (!more)
            break;
    }
    free(prefix);
    return rc;
}

/* While the JobId is not known (a restart, a create whose answer was lost): the job is
 * looked for by name, and created when it was never made; never created for a trial
 * that is to end. */
static int unconfirmed(struct worker *w, struct nas_job *j, const struct trial *t, struct job_state *js, int *rc,
                       struct errbuf *e)
{
    struct dlc *d = w->platform;
    struct errbuf se;
    *rc = 0;
    if (!t->kill_request) {
        nas_poll_unconfirmed(w, &d->b.jobs, j, t, try_submit, NULL, js, rc, e);
        js->has_exit = js->finished; /* DLC refused it for good: the trial fails with DLC's reason */
        return 1;
    }
    int refused = 0;
    char *name = nas_job_name(w->exp_id, t);
    cJSON *jobs = list_jobs(d, name, 100, &refused, &se);
    const char *found = jobs ? find_exact(jobs, name) : NULL;
    if (found)
        job_known(d, j, t, found);
    free(name);
    cJSON_Delete(jobs);
    if (!jobs && !refused) {
        *rc = errf(e, "%s", se.msg);
    } else if (!found) { /* cancelled before it was ever submitted (or DLC refuses to tell) */
        js->finished = 1;
        js->signal = SIGTERM;
        js->end_time = now_ms();
        nas_job_forget(&d->b.jobs, t->id);
    }
    return 1;
}

/* GetJob by the recorded JobId: confirms that a job missing from the listing is gone. */
static int get_job(struct rest_base *b, const char *key, cJSON **job, struct errbuf *e)
{
    struct dlc *d = (struct dlc *)b;
    char *path = xasprintf("/api/v1/jobs/%s", key);
    char *body = NULL, msg[400];
    long status = 0;
    int rc = call(d, "GET", path, NULL, 0, "GetJob", NULL, &status, &body, e);
    if (rc < 0) {
        errprefix(e, "GetJob");
    } else if (status == 404 && strstr(body, "JobNotFound")) {
        rc = 0;
    } else if (status != 200) {
        error_text(body, msg, sizeof msg);
        rc = errf(e, "GetJob %s: HTTP %ld: %s", key, status, msg);
    } else {
        *job = cJSON_Parse(body);
        rc = 1;
    }
    free(body);
    free(path);
    return rc;
}

static int stop_job(struct dlc *d, const char *dlc_id, struct errbuf *e)
{
    char *path = xasprintf("/api/v1/jobs/%s/stop", dlc_id);
    char *body = NULL, msg[400];
    long status = 0;
    struct errbuf he;
    int rc = 0;
    if (call(d, "POST", path, NULL, 0, "StopJob", NULL, &status, &body, &he) < 0) {
        rc = errf(e, "StopJob: %s", he.msg);
    } else if (status != 200 && status != 404) { /* 404: gone already; the poll tells */
        error_text(body, msg, sizeof msg);
        rc = errf(e, "StopJob %s: HTTP %ld: %s", dlc_id, status, msg);
    }
    free(body);
    free(path);
    return rc;
}

/* The pods' own logs (GetPodLogs: what the containers printed, the image's start and
 * failures before the trial's command included) into <trial dir>/dlc-pods.log, kept on
 * the NAS beside trial.stdout: GET /trial-file/<id>/dlc-pods.log, the web UI's "pods"
 * tab, `nnictl log trial` (the path). Written when the trial ended; a failure costs
 * only the file (logged). */
#define POD_LOG_LINES "2000"
static void save_pod_logs(struct rest_base *b, struct trial *t)
{
    struct dlc *d = (struct dlc *)b;
    struct nas_job *j = nas_job_load(&d->b.jobs, d->b.local_root, t, JOBID_MARKER);
    char *dlc_id = j->job_id ? xstrdup(j->job_id) : NULL;
    nas_job_forget(&d->b.jobs, t->id); /* the trial ended: no entry kept for it */
    if (!dlc_id)
        return;
    char *path = xasprintf("/api/v1/jobs/%s", dlc_id), *body = NULL;
    struct strbuf out;
    sb_init(&out);
    long status = 0;
    struct errbuf he;
    if (call(d, "GET", path, NULL, 0, "GetJob", NULL, &status, &body, &he) < 0 || status != 200) {
        if (status)
            snprintf(he.msg, sizeof he.msg, "HTTP %ld", status);
        log_warn("trial %s: no pod logs: GetJob %s: %s", t->id, dlc_id, he.msg);
        goto out;
    }
    cJSON *job = cJSON_Parse(body);
    const cJSON *pod;
    cJSON_ArrayForEach(pod, cJSON_GetObjectItemCaseSensitive(job, "Pods")) {
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(pod, "PodId");
        if (!cJSON_IsString(pid) || strchr(pid->valuestring, '/'))
            continue;
        char *lp = xasprintf("/api/v1/jobs/%s/pods/%s/logs", dlc_id, pid->valuestring), *lb = NULL;
        const struct acs_kv q[] = {{"MaxLines", POD_LOG_LINES}};
        long ls = 0;
        sb_printf(&out, "==== pod %s ====\n", pid->valuestring);
        if (call(d, "GET", lp, q, 1, "GetPodLogs", NULL, &ls, &lb, &he) < 0 || ls != 200) {
            if (ls)
                snprintf(he.msg, sizeof he.msg, "HTTP %ld", ls);
            sb_printf(&out, "(GetPodLogs: %s)\n", he.msg);
        } else {
            cJSON *ans = cJSON_Parse(lb);
            const cJSON *line;
            cJSON_ArrayForEach(line, cJSON_GetObjectItemCaseSensitive(ans, "Logs"))
                if (cJSON_IsString(line))
                    sb_printf(&out, "%s\n", line->valuestring);
            cJSON_Delete(ans);
        }
        free(lb);
        free(lp);
    }
    cJSON_Delete(job);
    char *dir = t->trial_dir ? xstrdup(t->trial_dir) : nas_trial_dir(d->b.local_root, t);
    char *file = xasprintf("%s/dlc-pods.log", dir);
    if (out.len && write_file_replace(file, out.buf, out.len, 0644) < 0)
        log_warn("trial %s: cannot write %s: %s", t->id, file, strerror(errno));
    free(file);
    free(dir);
out:
    sb_free(&out);
    free(body);
    free(path);
    free(dlc_id);
}

static int live(const cJSON *job)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(job, "Status");
    return cJSON_IsString(st) && strcmp(st->valuestring, "Succeeded") != 0 && strcmp(st->valuestring, "Failed") != 0 &&
           strcmp(st->valuestring, "Stopped") != 0 && strcmp(st->valuestring, "Stopping") != 0;
}

static int stop(struct rest_base *b, const char *dlc_id, struct errbuf *e)
{
    return stop_job((struct dlc *)b, dlc_id, e);
}

static const struct rest_flavour dlc = {
    .name = "dlc", .label = "PAI-DLC", .service = "DLC", .marker = JOBID_MARKER,
    .mount_noun = "directory", .mount_what = "the NAS data source", .cont_mount = 1,
    .stop_verb = "stop", .stopped = "stopped",
    .open = dlc_open, .close = dlc_close, .probe_once = probe_once, .unreachable = unreachable,
    .describe = describe, .try_submit = try_submit, .unconfirmed = unconfirmed, .get = get_job,
    .reported = job_reported, .list = list, .live = live, .stop = stop, .ended = save_pod_logs,
};

const struct platform_ops platform_dlc = REST_PLATFORM_OPS("dlc", dlc);
