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
#include <sys/stat.h>
#include <unistd.h>

#include "common/acs_sign.h"
#include "schema/worker_rows.h"
#include "workers/job_listing.h"
#include "workers/nas_trial.h"
#include "workers/rest_client.h"
#include "workers/worker.h"

#define POLL_MS 1000
#define BACKOFF_MIN_MS 500
#define API_VERSION "2020-12-03"
#define LIST_PAGE 100 /* jobs per ListJobs page of the batched poll (TRIALQ_DLC_LIST_PAGE) */

struct dlc {
    char *endpoint;    /* scheme://host[:port], no trailing slash */
    char *host;        /* the Host header as libcurl sends it */
    char *key_id, *key_secret;
    char *region, *workspace, *image, *job_type, *role_type, *ecs_spec, *nas, *oss, *ca_bundle;
    char *console;     /* the console's address (consoleUrl): the trials' tracking URLs */
    long long pod_count;
    char *local_root, *cont_root, *cont_mount;
    struct rest_client rest; /* no redirects: they would not carry a valid signature */
    struct worker *w;        /* NULL at nnictl create (preflight) */
    int fail_streak;         /* calls in a row that got no answer or a passing refusal */
    struct nas_jobs jobs;    /* job_id: DLC's JobId, once known; need_submit: ListJobs by name, then CreateJob */
    struct job_listing listed; /* the experiment's jobs by JobId (dlc_poll_all) */
};

/* ---------------- configuration ---------------- */

static const char *ts_str(const cJSON *ts, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ts, key);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static void dlc_free(struct dlc *d)
{
    if (!d)
        return;
    char **s[] = {&d->endpoint, &d->host,   &d->key_id,   &d->key_secret, &d->region,     &d->workspace,
                  &d->image,    &d->job_type, &d->role_type, &d->ecs_spec, &d->nas,        &d->oss,
                  &d->ca_bundle, &d->local_root, &d->cont_root, &d->cont_mount, &d->console};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        if (*s[i] == d->key_secret && d->key_secret)
            memset(d->key_secret, 0, strlen(d->key_secret));
        free(*s[i]);
    }
    if (d->rest.curl)
        curl_easy_cleanup(d->rest.curl);
    nas_jobs_free(&d->jobs);
    job_listing_reset(&d->listed);
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
    d->rest.timeout_ms = tmo && atof(tmo) > 0 ? (long)(atof(tmo) * 1000) : 15000;
    d->rest.ca_bundle = d->ca_bundle;
    d->rest.insecure_tls = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ts, "insecure"));
    d->rest.tls_hint = "the certificate is not trusted: name its CA with caBundle (a PEM file)";
    d->rest.curl = curl_easy_init();
    if (!d->rest.curl)
        return errf(e, "cannot initialise libcurl");
    return 0;
}

/* ---------------- HTTP ---------------- */

/* A refusal that may pass: 5xx, 429, 408, throttling, ServiceUnavailable, and a nonce
 * seen before (libcurl resent a GET on a reused connection that closed unanswered: the
 * next try is signed again). */
static int transient(long status, const char *body)
{
    if (status >= 500 || status == 429 || status == 408)
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
    if (++d->fail_streak != FAIL_STREAK || !d->w)
        return;
    char *msg = xasprintf("dlc: DLC at %s keeps failing (%s); the calls are retried with back-off", d->endpoint,
                          fault);
    struct errbuf xe;
    log_warn("%s", msg);
    if (exp_add_error_once(d->w->db, d->w->exp_id, msg, &xe) < 0)
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
    int rc = rest_call(&d->rest, method, url, shown, headers, body, status, resp, e);
    for (size_t i = 0; i < nh; i++)
        free((char *)headers[i]);
    free(headers);
    free(shown);
    free(url);
    acs_signed_free(&s);
    if (rc < 0) {
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

/* Checks the key, the endpoint and the workspace with one ListJobs, trying a few times
 * when DLC does not answer. 0 ok; -1 with e; *rejected: DLC refused for good. */
static int probe(struct dlc *d, int *rejected, struct errbuf *e)
{
    int64_t wait = BACKOFF_MIN_MS;
    *rejected = 0;
    for (int tries = 0; tries < 4; tries++) {
        if (tries)
            usleep((useconds_t)wait * 1000), wait *= 2;
        d->rest.down_until = 0; /* this loop paces itself */
        cJSON *j = list_jobs(d, "nni_exp_", 1, rejected, e);
        if (j) {
            cJSON_Delete(j);
            return 0;
        }
        if (*rejected) {
            errprefix(e, "dlc: %s refused ListJobs with access key %s (check accessKeyId, accessKeySecret, region or "
                         "endpoint, and workspaceId)", d->endpoint, d->key_id);
            return -1;
        }
        if (d->rest.tls_refused)
            break; /* the same certificate again */
        log_warn("DLC at %s: %s", d->endpoint, e->msg);
    }
    return errprefix(e, "dlc: cannot reach DLC at %s", d->endpoint);
}

static int check_mount(const char *lm, struct errbuf *e)
{
    struct stat st;
    if (!lm)
        return errf(e, "trainingService (dlc): localStorageMountPoint is required");
    if (stat(lm, &st) < 0 || !S_ISDIR(st.st_mode))
        return errf(e, "trainingService.localStorageMountPoint: %s is not a directory (the NAS data source "
                       "must be mounted there on this host)", lm);
    return 0;
}

/* nnictl create: the mount, the endpoint and the key (one ListJobs); nothing is created. */
static int dlc_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    (void)ops;
    (void)config;
    if (check_mount(ts_str(ts, "localStorageMountPoint"), e) < 0)
        return -1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct dlc *d = xcalloc(1, sizeof *d);
    int rejected = 0;
    int rc = dlc_configure(d, ts, e) < 0 ? -1 : probe(d, &rejected, e);
    dlc_free(d);
    curl_global_cleanup();
    return rc;
}

static int dlc_init(struct worker *w, struct errbuf *e)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct dlc *d = xcalloc(1, sizeof *d);
    w->platform = d;
    d->w = w;
    const cJSON *ts = worker_ts_config(w);
    const char *lm = ts_str(ts, "localStorageMountPoint"), *cm = ts_str(ts, "containerStorageMountPoint");
    const char *image = ts_str(ts, "image"), *ecs = ts_str(ts, "ecsSpec");
    int rejected = 0;
    if (dlc_configure(d, ts, e) < 0 ||
        ((!cm || !image || !ecs) && errf(e, "trainingService (dlc): image, ecsSpec, localStorageMountPoint and "
                                            "containerStorageMountPoint are required") < 0) ||
        check_mount(lm, e) < 0) {
        nas_report_fatal(w, e->msg);
        goto fail;
    }
    d->image = xstrdup(image);
    d->ecs_spec = xstrdup(ecs);
    d->job_type = xstrdup(ts_str(ts, "jobType") ? ts_str(ts, "jobType") : "TFJob");
    d->role_type = xstrdup(ts_str(ts, "type") ? ts_str(ts, "type") : "Worker");
    const cJSON *pc = cJSON_GetObjectItemCaseSensitive(ts, "podCount");
    d->pod_count = cJSON_IsNumber(pc) && pc->valuedouble >= 1 ? (long long)pc->valuedouble : 1;
    d->nas = ts_str(ts, "nasDataSourceId") ? xstrdup(ts_str(ts, "nasDataSourceId")) : NULL;
    d->oss = ts_str(ts, "ossDataSourceId") ? xstrdup(ts_str(ts, "ossDataSourceId")) : NULL;
    d->cont_mount = xstrdup(cm);
    if (nas_exp_roots(w, lm, cm, &d->local_root, &d->cont_root, e) < 0)
        goto fail;
    if (probe(d, &rejected, e) < 0) {
        if (rejected) /* it will not get better by itself: the experiment says why */
            nas_report_fatal(w, e->msg);
        goto fail;
    }
    if (nas_ship_code(w, d->local_root, e) < 0) {
        nas_report_fatal(w, e->msg);
        goto fail;
    }
    log_info("DLC %s (region %s) as %s; NAS %s -> %s", d->endpoint, d->region, d->key_id, d->local_root,
             d->cont_root);
    return 0;
fail:
    dlc_free(d);
    w->platform = NULL;
    return -1;
}

static void dlc_destroy(struct worker *w)
{
    dlc_free(w->platform);
    w->platform = NULL;
    curl_global_cleanup();
}

/* ---------------- jobs ---------------- */

static char *local_dir(struct dlc *d, const struct trial *t)
{
    return nas_trial_dir(d->local_root, t);
}

/* the JobId that DLC gave this attempt's job, kept on the NAS */
#define JOBID_MARKER "submitted"

/* The trial's tracking URL: the console's page of its job, as NNI's DLC helper gives it
 * (tracking_url), with the workspace where the config names one. Recorded in the trial
 * row once the JobId is known (t->url keeps it). */
static void record_url(struct dlc *d, struct trial *t, const char *dlc_id)
{
    char *id = curl_easy_escape(d->rest.curl, dlc_id, 0), *rg = curl_easy_escape(d->rest.curl, d->region, 0);
    char *ws = d->workspace ? curl_easy_escape(d->rest.curl, d->workspace, 0) : NULL;
    char *url = xasprintf("%s/#/jobs/detail?jobId=%s&regionId=%s%s%s", d->console, id ? id : "", rg ? rg : "",
                          ws ? "&workspaceId=" : "", ws ? ws : "");
    curl_free(id);
    curl_free(rg);
    curl_free(ws);
    struct errbuf e;
    if (trial_set_url(d->w->db, t->id, url, &e) < 0) {
        log_warn("trial %s: cannot record its tracking URL: %s", t->id, e.msg);
        free(url);
        return;
    }
    free(t->url);
    t->url = url;
}

static struct nas_job *job_of(struct dlc *d, struct trial *t)
{
    struct nas_job *j = nas_job_load(&d->jobs, d->local_root, t, JOBID_MARKER);
    if (j->job_id && !t->url && d->w)
        record_url(d, t, j->job_id);
    return j;
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
    char *cmd = nas_job_command(w, d->cont_root, t, "dlc", cJSON_IsString(tc) ? tc->valuestring : "false");
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
    nas_job_known(j, d->local_root, t, JOBID_MARKER, dlc_id);
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

static int dlc_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    struct dlc *d = w->platform;
    return nas_submit(w, &d->jobs, job_of(d, t), d->local_root, "PAI-DLC", try_submit, t, job_id, trial_dir, e);
}

/* The job's state as GetJob reports it. */
static void job_reported(struct worker *w, struct trial *t, const char *dir, const cJSON *job, struct job_state *js)
{
    struct errbuf e;
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

/* The batched poll: ListJobs of the experiment's jobs (DisplayName holds the prefix
 * nni_exp_<exp>_trial_; in the workspace when one is set), oldest first, LIST_PAGE a
 * page (TRIALQ_DLC_LIST_PAGE, at most 1000), until TotalCount is reached or a page comes short; kept by JobId for dlc_poll. */
static int dlc_poll_all(struct worker *w, struct errbuf *e)
{
    struct dlc *d = w->platform;
    job_listing_reset(&d->listed);
    char *prefix = xasprintf("nni_exp_%s_trial_", w->exp_id);
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
                job_listing_add(&d->listed, id->valuestring, cJSON_Duplicate(it, 1));
        }
        int more = n == size && (!cJSON_IsNumber(total) || (double)page * size < total->valuedouble);
        cJSON_Delete(list);
        if (!more)
            break;
    }
    free(prefix);
    if (rc < 0) {
        job_listing_reset(&d->listed);
        return rc;
    }
    job_listing_seal(&d->listed);
    return 0;
}

/* poll: from the listing of this pass when it has the job; else GetJob by the recorded
 * JobId (which confirms that a job missing from the listing is gone); without one, the
 * job is looked for by name
 * (a restart, a create whose answer was lost), and created when it was never made. */
static int dlc_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    struct dlc *d = w->platform;
    memset(js, 0, sizeof *js);
    struct nas_job *j = job_of(d, t);
    if (!j->job_id) {
        struct errbuf se;
        int s;
        if (t->kill_request) {
            /* only look: never create a job for a trial that is to end */
            int refused = 0;
            char *name = nas_job_name(w->exp_id, t);
            cJSON *list = list_jobs(d, name, 100, &refused, &se);
            const char *found = list ? find_exact(list, name) : NULL;
            if (found)
                job_known(d, j, t, found);
            free(name);
            s = list ? 1 : refused ? -1 : 0;
            if (list && !found) {
                js->finished = 1; /* cancelled before it was ever submitted */
                js->signal = SIGTERM;
                js->end_time = now_ms();
                nas_job_forget(&d->jobs, t->id);
            }
            cJSON_Delete(list);
            if (s == 0)
                return errf(e, "%s", se.msg);
            if (s < 0) {
                js->finished = 1;
                js->signal = SIGTERM;
                js->end_time = now_ms();
                nas_job_forget(&d->jobs, t->id);
            }
            return 0;
        }
        s = try_submit(w, j, t, &se);
        if (s < 0) { /* DLC refused it for good: the trial fails with DLC's reason */
            js->finished = 1;
            js->exit_code = 1;
            js->has_exit = 1;
            js->end_time = now_ms();
            snprintf(js->why, sizeof js->why, "%.500s", se.msg);
            nas_job_forget(&d->jobs, t->id);
        }
        return s == 0 ? errf(e, "%s", se.msg) : 0;
    }
    char *dir = local_dir(d, t);
    const cJSON *listed = job_listing_find(&d->listed, j->job_id);
    if (listed) {
        job_reported(w, t, dir, listed, js);
        if (js->finished || js->vanished)
            nas_job_forget(&d->jobs, t->id);
        free(dir);
        return 0;
    }
    char *path = xasprintf("/api/v1/jobs/%s", j->job_id);
    char *body = NULL, msg[400];
    long status = 0;
    struct errbuf he;
    int rc = 0;
    if (call(d, "GET", path, NULL, 0, "GetJob", NULL, &status, &body, &he) < 0) {
        rc = errf(e, "GetJob: %s", he.msg);
    } else if (status == 404 && strstr(body, "JobNotFound")) {
        log_warn("trial %s: DLC no longer knows job %s", t->id, j->job_id);
        js->vanished = 1;
        snprintf(js->why, sizeof js->why, "DLC no longer knows job %.200s", j->job_id);
    } else if (status != 200) {
        error_text(body, msg, sizeof msg);
        rc = errf(e, "GetJob %s: HTTP %ld: %s", j->job_id, status, msg);
    } else {
        cJSON *job = cJSON_Parse(body);
        job_reported(w, t, dir, job, js);
        cJSON_Delete(job);
    }
    if (js->finished || js->vanished)
        nas_job_forget(&d->jobs, t->id);
    free(body);
    free(path);
    free(dir);
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

static int dlc_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    struct dlc *d = w->platform;
    struct nas_job *j = job_of(d, t);
    if (!j->job_id) /* not known to be on DLC: a poll finds it (then it is stopped) or not (it ends) */
        return errf(e, "StopJob: the job is not confirmed by DLC yet");
    return stop_job(d, j->job_id, e);
}

/* The pods' own logs (GetPodLogs: what the containers printed, the image's start and
 * failures before the trial's command included) into <trial dir>/dlc-pods.log, kept on
 * the NAS beside trial.stdout: GET /trial-file/<id>/dlc-pods.log, the web UI's "pods"
 * tab, `nnictl log trial` (the path). Written when the trial ended; a failure costs
 * only the file (logged). */
#define POD_LOG_LINES "2000"
static void save_pod_logs(struct dlc *d, struct trial *t)
{
    struct nas_job *j = nas_job_load(&d->jobs, d->local_root, t, JOBID_MARKER);
    char *dlc_id = j->job_id ? xstrdup(j->job_id) : NULL;
    nas_job_forget(&d->jobs, t->id); /* the trial ended: no entry kept for it */
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
    char *dir = t->trial_dir ? xstrdup(t->trial_dir) : local_dir(d, t);
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

static int dlc_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    if (at_end)
        save_pod_logs(w->platform, t);
    return nas_collect(w, t, ((struct dlc *)w->platform)->local_root, at_end, e);
}

static int dlc_pending(struct worker *w, struct trial *t)
{
    return nas_pending(w, t, ((struct dlc *)w->platform)->local_root);
}

/* nnictl stop: StopJob for every live job of the experiment on DLC, also jobs the
 * database lost track of (found by the name prefix nni_exp_<exp>_trial_). */
static int dlc_cleanup(struct worker *w, struct errbuf *e)
{
    struct dlc *d = w->platform;
    char *prefix = xasprintf("nni_exp_%s_trial_", w->exp_id);
    int refused = 0, failed = 0;
    cJSON *list = list_jobs(d, prefix, 1000, &refused, e);
    if (!list) {
        free(prefix);
        return -1;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "Jobs")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "DisplayName");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "JobId");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "Status");
        if (!cJSON_IsString(n) || !str_starts(n->valuestring, prefix) || !cJSON_IsString(id) ||
            !cJSON_IsString(st) || strcmp(st->valuestring, "Succeeded") == 0 ||
            strcmp(st->valuestring, "Failed") == 0 || strcmp(st->valuestring, "Stopped") == 0 ||
            strcmp(st->valuestring, "Stopping") == 0)
            continue;
        struct errbuf se;
        if (stop_job(d, id->valuestring, &se) < 0) {
            failed++;
            log_warn("cannot stop DLC job %s: %s", id->valuestring, se.msg);
        } else {
            log_info("stopped DLC job %s (%s)", id->valuestring, n->valuestring);
        }
    }
    cJSON_Delete(list);
    free(prefix);
    return failed ? errf(e, "%d DLC job(s) of the experiment could not be stopped", failed) : 0;
}

const struct platform_ops platform_dlc = {
    .name = "dlc",
    .init = dlc_init,
    .preflight = dlc_preflight,
    .submit = dlc_submit,
    .reaped = NULL,
    .poll = dlc_poll,
    .poll_all = dlc_poll_all,
    .kill = dlc_kill,
    .collect = dlc_collect,
    .pending = dlc_pending,
    .destroy = dlc_destroy,
    .poll_ms = POLL_MS,
    .submit_rate = 20, /* new jobs per second (TRIALQ_SUBMIT_RATE) */
    .cleanup = dlc_cleanup,
    .gpu_mode = PLATFORM_GPU_OWN,
};
