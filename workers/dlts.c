/* dlts.c: the DLTS platform (Microsoft's DLWorkspace, as NNI v2.3 drove it): one DLTS job
 * per trial, through the REST API of the cluster's dashboard ({dashboard}api/...), every
 * request authenticated by ?email=&password= in its query string.
 *
 * Files go through a filesystem that the jobs and this host share, as on OpenPAI
 * (workers/nas_trial.h): L = <localStorageMountPoint>/<exp>/<trial> here is
 * C = <containerStorageMountPoint>/<exp>/<trial> in the job; the trial writes its
 * metrics and its exit status (.nni/state) there, so the cluster never reaches us.
 *
 * Crash safety: the job name is the trial's (nni_exp_<exp>_trial_<trial>, plus
 * _attempt<N> for a retry) and is the trial row's job_id. DLTS gives each job a jobId of
 * its own and has no lookup by name, so submission first looks for the name in the
 * team's job list (every active job of the user and the newest others), and POSTs only
 * when it is not there; the jobId is then written to L/.nni/jobid. A job whose jobId is
 * known and that DLTS no longer knows (200 {}) has vanished (the trial is retried). No
 * call is retried in a blocking loop: a failed one (no answer, 5xx, 429) returns -1 and
 * the worker loop tries again after its back-off; while the dashboard does not answer
 * no call is made before down_until, so the loop keeps renewing its leases.
 *
 * Status: one team job list a poll interval (dlts_poll_all: every active job of the user
 * and the POLL_LIMIT newest others, one GET), the experiment's jobs of it kept by jobId;
 * each trial's poll answers from it, and GETs its job only when the list lacks it (it
 * ended and newer jobs pushed it out, or DLTS forgot it).
 *
 * The password is in no URL, error or log line of ours: the query string is added in
 * http() only, and messages name the path without it. */
#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workers/job_listing.h"
#include "workers/nas_trial.h"
#include "workers/rest_client.h"
#include "workers/worker.h"

#define POLL_MS 1000 /* NNI polls DLTS every 3 s */
#define BACKOFF_MIN_MS 500
#define FAULT_KEY "dlts dashboard"
#define FAULT_AFTER 3 /* calls failed in a row before the experiment shows it */
#define LIST_LIMIT 1000 /* ended jobs the team's list shows beside the active ones */
#define POLL_LIMIT 100  /* ... in the list of each poll interval (a job ended since: a GET) */

struct dlts {
    char *dashboard; /* ends with / */
    char *cluster, *team, *email, *auth_query;
    char *gpu_type, *image, *ca_bundle;
    char *local_root, *cont_root; /* <mount>/<exp> on this host / in the jobs */
    long long gpu;
    struct rest_client rest; /* no redirects: the password is in the URL */
    int failing;             /* calls failed in a row */
    struct nas_jobs jobs;
    struct job_listing listed; /* the experiment's jobs by jobId (dlts_poll_all) */
};

/* ---------------- HTTP ---------------- */

/* A short one-line form of an answer's body (Koa's refusals are text). */
static void body_text(const char *body, char *out, size_t outlen)
{
    const char *text = body && body[0] ? body : "(empty)";
    size_t n = strnlen(text, 300);
    if (n >= outlen)
        n = outlen ? outlen - 1 : 0;
    if (outlen) {
        memcpy(out, text, n);
        out[n] = 0;
    }
    for (char *q = out; *q; q++)
        if (*q == '\n' || *q == '\r')
            *q = ' ';
}

static int transient(long status)
{
    return status >= 500 || status == 429 || status == 408;
}

/* One request to {dashboard}api/<path> (path without the credentials, which are added
 * here only). Returns 0 when the dashboard answered (*status, *resp: the body, caller
 * frees), -1 when no answer came (e says which, naming "api/<path>"). */
static int http(struct dlts *d, const char *method, const char *path, const char *body, long *status, char **resp,
                struct errbuf *e)
{
    char *url = xasprintf("%sapi/%s%c%s", d->dashboard, path, strchr(path, '?') ? '&' : '?', d->auth_query);
    char *shown = xasprintf("api/%s", path);
    const char *headers[] = {"Content-Type: application/json", NULL};
    int rc = rest_call(&d->rest, method, url, shown, headers, body, status, resp, e);
    /* a dashboard that keeps failing (no answer, 5xx, 429, refused credentials) is the
     * experiment's error (check-status, nnictl experiment status) until a call succeeds */
    if (rc < 0 || transient(*status) || *status == 401 || *status == 403) {
        if (++d->failing >= FAULT_AFTER) {
            char why[400], b[300];
            if (rc < 0) {
                snprintf(why, sizeof why, "%.399s", e->msg);
            } else {
                body_text(*resp, b, sizeof b);
                snprintf(why, sizeof why, "%s %s: HTTP %ld: %s", method, shown, *status, b);
            }
            fault_set(FAULT_KEY, "DLTS dashboard %s: %s (%d calls in a row failed); trials wait and trialq "
                      "retries by itself", d->dashboard, why, d->failing);
        }
    } else {
        d->failing = 0;
        if (fault_has(FAULT_KEY))
            fault_clear(FAULT_KEY);
    }
    free(url);
    free(shown);
    return rc;
}

/* path segment, escaped (caller frees) */
static char *seg(struct dlts *d, const char *s)
{
    char *x = curl_easy_escape(d->rest.curl, s, 0);
    char *r = xstrdup(x ? x : "");
    curl_free(x);
    return r;
}

/* Why an answer that is not 2xx is an error of the config (credentials, cluster, team) */
static int refused(struct dlts *d, const char *what, long status, const char *body, struct errbuf *e)
{
    char msg[320];
    body_text(body, msg, sizeof msg);
    if (status == 403)
        return errf(e, "dlts: %s refused the credentials of %s (HTTP 403: %s); check trainingService.email and "
                    "password (the dashboard's API password of the user)", d->dashboard, d->email, msg);
    if (status == 404 && strstr(msg, "Cluster"))
        return errf(e, "dlts: %s has no cluster '%s' (HTTP 404: %s); check trainingService.cluster", d->dashboard,
                    d->cluster, msg);
    if (status == 404 && strstr(msg, "Team"))
        return errf(e, "dlts: user %s is in no team '%s' of cluster '%s' (HTTP 404: %s); check "
                    "trainingService.team", d->email, d->team, d->cluster, msg);
    return errf(e, "dlts: %s answered HTTP %ld (%s); is trainingService.dashboard the dashboard's URL?", what,
                status, msg);
}

/* ---------------- configuration ---------------- */

static const char *key_str(const cJSON *ts, const cJSON *config, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ts, key);
    if (!v && config)
        v = cJSON_GetObjectItemCaseSensitive(config, key);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static void dlts_free(struct dlts *d)
{
    if (!d)
        return;
    free(d->dashboard);
    free(d->cluster);
    free(d->team);
    free(d->email);
    free(d->auth_query);
    free(d->gpu_type);
    free(d->image);
    free(d->ca_bundle);
    free(d->local_root);
    free(d->cont_root);
    if (d->rest.curl)
        curl_easy_cleanup(d->rest.curl);
    nas_jobs_free(&d->jobs);
    job_listing_reset(&d->listed);
    free(d);
}

/* The connection settings of a trainingService entry ts (config: the top level's
 * fallbacks). NULL with e when a key is missing. */
static struct dlts *dlts_new(const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    const char *dash = key_str(ts, NULL, "dashboard"), *email = key_str(ts, NULL, "email");
    const char *pw = key_str(ts, NULL, "password"), *team = key_str(ts, NULL, "team");
    if (!dash || !email || !pw || !team) {
        errf(e, "trainingService (dlts): dashboard, email, password and team are required");
        return NULL;
    }
    struct dlts *d = xcalloc(1, sizeof *d);
    d->rest.curl = curl_easy_init();
    if (!d->rest.curl) {
        errf(e, "cannot initialise libcurl");
        dlts_free(d);
        return NULL;
    }
    size_t n = strlen(dash);
    d->dashboard = n && dash[n - 1] == '/' ? xstrdup(dash) : xasprintf("%s/", dash);
    d->cluster = xstrdup(key_str(ts, NULL, "cluster") ? key_str(ts, NULL, "cluster") : ".default");
    d->team = xstrdup(team);
    d->email = xstrdup(email);
    char *qe = curl_easy_escape(d->rest.curl, email, 0), *qp = curl_easy_escape(d->rest.curl, pw, 0);
    d->auth_query = xasprintf("email=%s&password=%s", qe ? qe : "", qp ? qp : "");
    curl_free(qe);
    curl_free(qp);
    d->gpu_type = key_str(ts, NULL, "gpuType") ? xstrdup(key_str(ts, NULL, "gpuType")) : NULL;
    d->image = xstrdup(key_str(ts, NULL, "image") ? key_str(ts, NULL, "image") : "msranni/nni:latest");
    d->ca_bundle = key_str(ts, NULL, "caBundle") ? xstrdup(key_str(ts, NULL, "caBundle")) : NULL;
    d->rest.ca_bundle = d->ca_bundle;
    d->rest.insecure_tls = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ts, "insecure"));
    d->rest.tls_hint = "the certificate is not trusted: name its CA with caBundle (a PEM file)";
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(ts, "trialGpuNumber");
    if (!g)
        g = cJSON_GetObjectItemCaseSensitive(config, "trialGpuNumber");
    d->gpu = cJSON_IsNumber(g) ? (long long)g->valuedouble : 0;
    const char *tmo = getenv("TRIALQ_DLTS_TIMEOUT"); /* seconds; tests shorten it */
    d->rest.timeout_ms = tmo && atof(tmo) > 0 ? (long)(atof(tmo) * 1000) : 15000;
    return d;
}

/* The team's view of the cluster: checks the credentials, the cluster and the team, and
 * learns the GPU type (its metadata's first key; a gpuType set must be one of them).
 * Tries a few times when the dashboard does not answer. *fatal: the config is wrong. */
static int probe_cluster(struct dlts *d, int *fatal, struct errbuf *e)
{
    char *c = seg(d, d->cluster), *t = seg(d, d->team);
    char *path = xasprintf("teams/%s/clusters/%s", t, c);
    free(c);
    free(t);
    *fatal = 0;
    int rc = -1;
    int64_t wait = BACKOFF_MIN_MS;
    for (int tries = 0; tries < 4; tries++) {
        long status = 0;
        char *body = NULL;
        if (tries)
            usleep((useconds_t)wait * 1000), wait *= 2;
        d->rest.down_until = 0; /* this loop paces itself */
        if (http(d, "GET", path, NULL, &status, &body, e) < 0) {
            log_warn("DLTS at %s does not answer: %s", d->dashboard, e->msg);
            continue;
        }
        if (transient(status)) {
            char msg[320];
            body_text(body, msg, sizeof msg);
            free(body);
            errf(e, "DLTS at %s answered HTTP %ld: %s", d->dashboard, status, msg);
            log_warn("%s", e->msg);
            continue;
        }
        if (status != 200) {
            *fatal = 1;
            refused(d, "GET api/teams/.../clusters/...", status, body, e);
            free(body);
            goto out;
        }
        cJSON *j = cJSON_Parse(body);
        free(body);
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
        cJSON *meta = cJSON_IsString(md) ? cJSON_Parse(md->valuestring) : cJSON_Duplicate(md, 1);
        cJSON_Delete(j);
        if ((!cJSON_IsObject(meta) || !meta->child) && !d->gpu_type) {
            cJSON_Delete(meta);
            *fatal = 1;
            errf(e, "dlts: cluster '%s' lists no GPU type in its metadata; set trainingService.gpuType",
                 d->cluster);
            goto out;
        }
        if (!cJSON_IsObject(meta) || !meta->child) {
            /* gpuType set: the cluster does not say, it is taken as it is */
        } else if (!d->gpu_type) {
            d->gpu_type = xstrdup(meta->child->string);
        } else if (!cJSON_GetObjectItemCaseSensitive(meta, d->gpu_type)) {
            *fatal = 1;
            errf(e, "dlts: cluster '%s' has no GPU type '%s' (it has %s); check trainingService.gpuType",
                 d->cluster, d->gpu_type, meta->child->string);
            cJSON_Delete(meta);
            goto out;
        }
        cJSON_Delete(meta);
        rc = 0;
        goto out;
    }
    errprefix(e, "dlts: cannot reach the dashboard at %s", d->dashboard);
out:
    free(path);
    return rc;
}

static int check_mount(const char *lm, struct errbuf *e)
{
    struct stat st;
    if (!lm || stat(lm, &st) < 0 || !S_ISDIR(st.st_mode))
        return errf(e, "trainingService.localStorageMountPoint: %s is not a directory (the shared filesystem "
                    "that DLTS mounts into the jobs must be mounted there on this host)", lm ? lm : "(unset)");
    return 0;
}

/* nnictl create: the mount, then the team's view of the cluster (credentials, cluster,
 * team, gpuType); nothing is submitted. */
static int dlts_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    (void)ops;
    if (check_mount(key_str(ts, NULL, "localStorageMountPoint"), e) < 0)
        return -1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct dlts *d = dlts_new(ts, config, e);
    int fatal = 0;
    int rc = d ? probe_cluster(d, &fatal, e) : -1;
    dlts_free(d);
    curl_global_cleanup();
    return rc;
}

static int dlts_init(struct worker *w, struct errbuf *e)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const cJSON *ts = worker_ts_config(w);
    struct dlts *d = dlts_new(ts, w->config, e);
    if (!d) {
        curl_global_cleanup();
        return -1;
    }
    w->platform = d;
    const char *lm = key_str(ts, NULL, "localStorageMountPoint"), *cm = key_str(ts, NULL, "containerStorageMountPoint");
    if (!cm) {
        errf(e, "trainingService (dlts): containerStorageMountPoint is required");
        goto fail;
    }
    if (check_mount(lm, e) < 0) {
        nas_report_fatal(w, e->msg);
        goto fail;
    }
    if (nas_exp_roots(w, lm, cm, &d->local_root, &d->cont_root, e) < 0)
        goto fail;
    int fatal = 0;
    if (probe_cluster(d, &fatal, e) < 0) {
        if (fatal) /* it will not get better by itself: the experiment says why */
            nas_report_fatal(w, e->msg);
        goto fail;
    }
    if (nas_ship_code(w, d->local_root, e) < 0) {
        nas_report_fatal(w, e->msg);
        goto fail;
    }
    log_info("DLTS %s cluster %s team %s as %s (GPU type %s); storage %s -> %s", d->dashboard, d->cluster, d->team,
             d->email, d->gpu_type, d->local_root, d->cont_root);
    return 0;
fail:
    dlts_free(d);
    w->platform = NULL;
    curl_global_cleanup();
    return -1;
}

static void dlts_destroy(struct worker *w)
{
    dlts_free(w->platform);
    w->platform = NULL;
    curl_global_cleanup();
}

/* ---------------- jobs ---------------- */

static char *local_dir(struct dlts *d, const struct trial *t)
{
    return nas_trial_dir(d->local_root, t);
}

/* The job of t; for a new entry (or a retry) the jobId the storage keeps for this attempt */
static struct nas_job *job_of(struct dlts *d, const struct trial *t)
{
    return nas_job_load(&d->jobs, d->local_root, t, "jobid");
}

/* NNI's job body (v2.3's DLTSTrainingService), with our command */
static char *job_body(struct worker *w, struct dlts *d, const struct trial *t, const char *name)
{
    cJSON *j = cJSON_CreateObject();
    const cJSON *tc = worker_config_item(w, "trialCommand");
    char *cmd = nas_job_command(w, d->cont_root, t, NULL, cJSON_IsString(tc) ? tc->valuestring : "false");
    cJSON_AddStringToObject(j, "jobName", name);
    cJSON_AddNumberToObject(j, "resourcegpu", (double)d->gpu);
    cJSON_AddStringToObject(j, "image", d->image);
    cJSON_AddStringToObject(j, "cmd", cmd);
    cJSON_AddStringToObject(j, "team", d->team);
    cJSON_AddStringToObject(j, "vcName", d->team);
    cJSON_AddStringToObject(j, "userName", d->email);
    cJSON_AddStringToObject(j, "gpuType", d->gpu_type ? d->gpu_type : "");
    cJSON_AddStringToObject(j, "jobType", "training");
    cJSON_AddStringToObject(j, "jobtrainingtype", "RegularJob");
    cJSON_AddStringToObject(j, "preemptionAllowed", "False");
    cJSON_AddArrayToObject(j, "interactivePorts");
    cJSON_AddArrayToObject(j, "env");
    cJSON_AddArrayToObject(j, "mountpoints");
    cJSON_AddStringToObject(j, "workPath", "");
    cJSON_AddStringToObject(j, "dataPath", "");
    cJSON_AddStringToObject(j, "jobPath", "");
    cJSON_AddBoolToObject(j, "enableworkpath", 1);
    cJSON_AddBoolToObject(j, "enabledatapath", 1);
    cJSON_AddBoolToObject(j, "enablejobpath", 1);
    cJSON_AddBoolToObject(j, "hostNetwork", 0);
    cJSON_AddBoolToObject(j, "isPrivileged", 0);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    free(cmd);
    return s;
}

/* The team's job list (every active job of the user, the limit newest others). 0 with
 * *list (a JSON array; caller deletes), -1 with e; *fatal when the dashboard refused it. */
static int list_jobs_limit(struct dlts *d, int limit, cJSON **list, int *fatal, struct errbuf *e)
{
    char *c = seg(d, d->cluster), *t = seg(d, d->team);
    char *path = xasprintf("v2/clusters/%s/teams/%s/jobs?user=me&limit=%d", c, t, limit);
    free(c);
    free(t);
    long status = 0;
    char *body = NULL;
    int rc = -1;
    *fatal = 0;
    *list = NULL;
    if (http(d, "GET", path, NULL, &status, &body, e) == 0) {
        if (status == 200) {
            *list = cJSON_Parse(body);
            if (cJSON_IsArray(*list))
                rc = 0;
            else
                errf(e, "GET api/v2/.../jobs: not a list of jobs");
        } else {
            *fatal = !transient(status);
            if (*fatal)
                refused(d, "GET api/v2/.../jobs", status, body, e);
            else
                errf(e, "GET api/v2/.../jobs: HTTP %ld", status);
        }
    }
    if (rc < 0) {
        cJSON_Delete(*list);
        *list = NULL;
    }
    free(body);
    free(path);
    return rc;
}

/* list_jobs_limit with the widest view (finding a job by name) */
static int list_jobs(struct dlts *d, cJSON **list, int *fatal, struct errbuf *e)
{
    return list_jobs_limit(d, LIST_LIMIT, list, fatal, e);
}

static int put_killing(struct dlts *d, const char *job_id, struct errbuf *e);
static int active(const char *s);

static const char *item_str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The jobId of the user's job called name: 1 found (*job_id, new string), 0 not there,
 * -1 could not tell (e; *fatal when refused). DLTS allows several jobs of one name (made
 * by hand, or by another manager): the oldest is the trial's (the list is newest
 * first), the others still active are killed. */
static int find_job(struct dlts *d, const char *name, char **job_id, int *fatal, struct errbuf *e)
{
    cJSON *list;
    if (list_jobs(d, &list, fatal, e) < 0)
        return -1;
    const cJSON *it, *chosen = NULL;
    cJSON_ArrayForEach(it, list) {
        const char *n = item_str(it, "jobName");
        if (n && item_str(it, "jobId") && strcmp(n, name) == 0)
            chosen = it;
    }
    cJSON_ArrayForEach(it, list) {
        const char *n = item_str(it, "jobName"), *st = item_str(it, "jobStatus");
        if (!chosen || it == chosen || !n || strcmp(n, name) != 0 || !st || !active(st) ||
            !item_str(it, "jobId"))
            continue;
        struct errbuf ke;
        log_warn("DLTS has another job named %s: %s, killed (the trial's is the oldest, %s)", name,
                 item_str(it, "jobId"), item_str(chosen, "jobId"));
        if (put_killing(d, item_str(it, "jobId"), &ke) < 0)
            log_warn("%s", ke.msg);
    }
    if (chosen)
        *job_id = xstrdup(item_str(chosen, "jobId"));
    cJSON_Delete(list);
    return chosen != NULL;
}

/* job_id (taken, freed) is the job of j */
static void job_known(struct dlts *d, struct nas_job *j, const struct trial *t, char *job_id)
{
    nas_job_known(j, d->local_root, t, "jobid", job_id);
    free(job_id);
}

/* Looks for the job by name, POSTs it when absent. 1: the job exists (created or found);
 * 0: no answer or a 5xx (e: try again later); -1: DLTS refused it (e). */
static int try_submit(struct worker *w, struct nas_job *j, const struct trial *t, struct errbuf *e)
{
    struct dlts *d = w->platform;
    char *name = nas_job_name(w->exp_id, t);
    char *id = NULL, *body = NULL, *resp = NULL;
    int fatal = 0, rc;
    struct errbuf he;
    int f = find_job(d, name, &id, &fatal, &he);
    if (f < 0) {
        rc = fatal ? errf(e, "%s", he.msg) : (errf(e, "submit (job list): %s", he.msg), 0);
        goto out;
    }
    if (f == 1) {
        log_info("trial %s: re-attached to DLTS job %s (%s)", t->id, id, name);
        job_known(d, j, t, id);
        id = NULL; /* job_known took it */
        rc = 1;
        goto out;
    }
    char *c = seg(d, d->cluster);
    char *path = xasprintf("clusters/%s/jobs", c);
    free(c);
    body = job_body(w, d, t, name);
    long status = 0;
    int hr = http(d, "POST", path, body, &status, &resp, &he);
    free(path);
    if (hr < 0) { /* the job may exist now: the next try looks for it first */
        errf(e, "submit (POST job): %s", he.msg);
        rc = 0;
        goto out;
    }
    if (status != 200) {
        if (transient(status)) {
            char msg[320];
            body_text(resp, msg, sizeof msg);
            errf(e, "submit (POST job): HTTP %ld: %s", status, msg);
            rc = 0;
        } else {
            rc = refused(d, "POST api/clusters/.../jobs", status, resp, e);
        }
        goto out;
    }
    cJSON *a = cJSON_Parse(resp);
    const cJSON *jid = cJSON_GetObjectItemCaseSensitive(a, "jobId");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(a, "error");
    if (cJSON_IsString(jid) && jid->valuestring[0]) {
        log_info("trial %s: submitted DLTS job %s (%s)", t->id, jid->valuestring, name);
        job_known(d, j, t, xstrdup(jid->valuestring));
        rc = 1;
    } else {
        char msg[320];
        body_text(cJSON_IsString(err) ? err->valuestring : resp, msg, sizeof msg);
        rc = errf(e, "DLTS refused job %s: %s", name, msg);
    }
    cJSON_Delete(a);
out:
    free(id);
    free(body);
    free(resp);
    free(name);
    return rc;
}

/* nas_find_fn: the trial's job in the team's job list */
static int find_trial_job(struct worker *w, struct nas_job *j, const struct trial *t, struct errbuf *e)
{
    struct dlts *d = w->platform;
    char *name = nas_job_name(w->exp_id, t), *id = NULL;
    int fatal = 0;
    int f = find_job(d, name, &id, &fatal, e);
    free(name);
    if (f == 1)
        job_known(d, j, t, id);
    return f;
}

static int dlts_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    struct dlts *d = w->platform;
    return nas_submit(w, &d->jobs, job_of(d, t), d->local_root, "DLTS", try_submit, t, job_id, trial_dir, e);
}

/* The job as DLTS reports it (a v2 job view) */
static void job_reported(struct worker *w, struct trial *t, const char *dir, const cJSON *job, struct job_state *js)
{
    struct errbuf e;
    const cJSON *stv = cJSON_GetObjectItemCaseSensitive(job, "jobStatus");
    const char *state = cJSON_IsString(stv) ? stv->valuestring : "";
    if (strcmp(state, "finished") == 0 || strcmp(state, "failed") == 0) {
        nas_job_ended(dir, t->attempt, strcmp(state, "finished") == 0, 0, 0, js);
    } else if (strcmp(state, "killing") == 0 || strcmp(state, "killed") == 0 || strcmp(state, "pausing") == 0 ||
               strcmp(state, "paused") == 0) {
        /* not by us: NNI's SYS_CANCELED (a paused job is killed, as NNI does) */
        if (!t->kill_request &&
            trial_request_kill(w->db, t->id, "SYS_CANCELED", strncmp(state, "paus", 4) == 0 ? "job paused on DLTS"
                                                                                          : "job killed on DLTS",
                               &e) < 0)
            log_warn("trial %s: %s", t->id, e.msg);
        if (strcmp(state, "killed") == 0) {
            long long sv[4];
            js->finished = 1;
            js->signal = SIGTERM;
            js->end_time = nas_read_state(dir, sv) == 0 && sv[3] == t->attempt ? sv[1] : now_ms();
        }
    }
}

/* The loop paces the calls: a failed one (no answer, 5xx) returns -1 and is tried again
 * after its back-off. */
static int dlts_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    struct dlts *d = w->platform;
    memset(js, 0, sizeof *js);
    struct nas_job *j = job_of(d, t);
    int rc = 0;
    if (j->need_submit && nas_poll_unconfirmed(w, &d->jobs, j, t, try_submit, find_trial_job, js, &rc, e))
        return rc;
    char *dir = local_dir(d, t);
    const cJSON *listed = job_listing_find(&d->listed, j->job_id);
    if (listed) { /* this interval's list has it: no call of its own */
        job_reported(w, t, dir, listed, js);
        if (js->finished)
            nas_job_forget(&d->jobs, t->id);
        free(dir);
        return 0;
    }
    char *c = seg(d, d->cluster), *id = seg(d, j->job_id);
    char *path = xasprintf("v2/clusters/%s/jobs/%s", c, id);
    free(c);
    free(id);
    char *body = NULL;
    long status = 0;
    struct errbuf he;
    if (http(d, "GET", path, NULL, &status, &body, &he) < 0) {
        rc = errf(e, "status: %s", he.msg);
    } else if (status != 200) {
        char msg[320];
        body_text(body, msg, sizeof msg);
        rc = errf(e, "status: HTTP %ld: %s", status, msg);
    } else {
        cJSON *job = cJSON_Parse(body);
        if (cJSON_IsObject(job) && !job->child) { /* 200 {}: DLTS no longer knows it */
            log_warn("trial %s: DLTS no longer knows job %s", t->id, j->job_id);
            js->vanished = 1;
            snprintf(js->why, sizeof js->why, "DLTS no longer knows job %.200s", j->job_id);
        } else if (!cJSON_IsObject(job)) {
            rc = errf(e, "status: not a job: %.100s", body);
        } else {
            job_reported(w, t, dir, job, js);
        }
        cJSON_Delete(job);
    }
    if (js->finished || js->vanished)
        nas_job_forget(&d->jobs, t->id);
    free(body);
    free(path);
    free(dir);
    return rc;
}

/* The batched poll: the team's job list once a poll interval; the experiment's jobs of
 * it (name prefix nni_exp_<exp>_) kept by jobId for dlts_poll. A failure, a refusal
 * included (the dashboard's refusals are the credentials', not the list's), is a failed
 * listing: the loop backs off. */
static int dlts_poll_all(struct worker *w, struct errbuf *e)
{
    struct dlts *d = w->platform;
    job_listing_reset(&d->listed);
    cJSON *list;
    int fatal;
    if (list_jobs_limit(d, POLL_LIMIT, &list, &fatal, e) < 0)
        return -1;
    char *prefix = xasprintf("nni_exp_%s_", w->exp_id);
    cJSON *it;
    cJSON_ArrayForEach(it, list) {
        const char *n = item_str(it, "jobName"), *id = item_str(it, "jobId");
        if (n && id && str_starts(n, prefix))
            job_listing_add(&d->listed, id, cJSON_Duplicate(it, 1));
    }
    job_listing_seal(&d->listed);
    free(prefix);
    cJSON_Delete(list);
    return 0;
}

static int put_killing(struct dlts *d, const char *job_id, struct errbuf *e)
{
    char *c = seg(d, d->cluster), *id = seg(d, job_id);
    char *path = xasprintf("clusters/%s/jobs/%s/status", c, id);
    free(c);
    free(id);
    char *body = NULL;
    long status = 0;
    struct errbuf he;
    int rc = 0;
    if (http(d, "PUT", path, "{\"status\":\"killing\"}", &status, &body, &he) < 0)
        rc = errf(e, "kill: %s", he.msg);
    else if (status != 200) /* "Cannot Kill the job" (it ended) is 200 too: the poll tells */
        rc = errf(e, "kill: DLTS answered HTTP %ld", status);
    free(body);
    free(path);
    return rc;
}

/* PUT killing: 0 once DLTS took it, -1 to be tried again. */
static int dlts_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    struct dlts *d = w->platform;
    struct nas_job *j = job_of(d, t);
    if (j->need_submit) /* not known to be on DLTS: a poll finds it (then it is killed) or not (it ends) */
        return errf(e, "kill: job not confirmed by DLTS yet");
    return put_killing(d, j->job_id, e);
}

static int dlts_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    struct dlts *d = w->platform;
    return nas_collect(w, t, d->local_root, at_end, e);
}

static int dlts_pending(struct worker *w, struct trial *t)
{
    struct dlts *d = w->platform;
    return nas_pending(w, t, d->local_root);
}

static int active(const char *s)
{
    static const char *const live[] = {"unapproved", "queued", "scheduling", "running", "pausing", "paused", NULL};
    for (int i = 0; live[i]; i++)
        if (strcmp(s, live[i]) == 0)
            return 1;
    return 0;
}

/* nnictl stop: kills every active job of the experiment the user has on the cluster,
 * also jobs the database lost track of (found by the name prefix nni_exp_<exp>_). */
static int dlts_cleanup(struct worker *w, struct errbuf *e)
{
    struct dlts *d = w->platform;
    cJSON *list;
    int fatal;
    if (list_jobs(d, &list, &fatal, e) < 0)
        return -1;
    char *prefix = xasprintf("nni_exp_%s_", w->exp_id);
    const cJSON *it;
    int failed = 0;
    cJSON_ArrayForEach(it, list) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "jobName");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "jobId");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "jobStatus");
        if (!cJSON_IsString(n) || !cJSON_IsString(id) || !str_starts(n->valuestring, prefix) ||
            !cJSON_IsString(st) || !active(st->valuestring))
            continue;
        struct errbuf ke;
        if (put_killing(d, id->valuestring, &ke) < 0) {
            failed++;
            log_warn("cannot kill DLTS job %s (%s): %s", id->valuestring, n->valuestring, ke.msg);
        } else {
            log_info("killed DLTS job %s (%s)", id->valuestring, n->valuestring);
        }
    }
    free(prefix);
    cJSON_Delete(list);
    return failed ? errf(e, "%d DLTS job(s) of the experiment could not be killed", failed) : 0;
}

const struct platform_ops platform_dlts = {
    .name = "dlts",
    .init = dlts_init,
    .preflight = dlts_preflight,
    .submit = dlts_submit,
    .reaped = NULL,
    .poll = dlts_poll,
    .poll_all = dlts_poll_all,
    .kill = dlts_kill,
    .collect = dlts_collect,
    .pending = dlts_pending,
    .destroy = dlts_destroy,
    .poll_ms = POLL_MS,
    .submit_rate = 20, /* new jobs per second (TRIALQ_SUBMIT_RATE) */
    .cleanup = dlts_cleanup,
    .gpu_mode = PLATFORM_GPU_OWN,
};
