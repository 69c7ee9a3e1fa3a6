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
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "workers/rest/rest.h"

/* NNI polls DLTS every 3 s; the skeleton, every second (REST_PLATFORM_OPS) */
#define FAULT_KEY "dlts dashboard"
#define LIST_LIMIT 1000 /* ended jobs the team's list shows beside the active ones */
#define POLL_LIMIT 100  /* ... in the list of each poll interval (a job ended since: a GET) */

struct dlts {
    struct rest_base b; /* no redirects: the password is in the URL; jobs listed by jobId */
    char *dashboard;    /* ends with / */
    char *cluster, *team, *email, *auth_query;
    char *gpu_type, *image, *ca_bundle;
    long long gpu;
};

/* ---------------- HTTP ---------------- */

/* One request to {dashboard}api/<path> (path without the credentials, which are added
 * here only). Returns 0 when the dashboard answered (*status, *resp: the body, caller
 * frees), -1 when no answer came (e says which, naming "api/<path>"). */
static int http(struct dlts *d, const char *method, const char *path, const char *body, long *status, char **resp,
                struct errbuf *e)
{
    char *url = xasprintf("%sapi/%s%c%s", d->dashboard, path, strchr(path, '?') ? '&' : '?', d->auth_query);
    char *shown = xasprintf("api/%s", path);
    const char *headers[] = {"Content-Type: application/json", NULL};
    int rc = rest_call(&d->b.rest, method, url, shown, headers, body, status, resp, e);
    /* a dashboard that keeps failing (no answer, 5xx, 429, refused credentials) is the
     * experiment's error (check-status, nnictl experiment status) until a call succeeds */
    int ok = rc == 0 && !rest_transient(*status) && *status != 401 && *status != 403;
    char why[400] = "", b[300], where[300];
    if (rc < 0) {
        snprintf(why, sizeof why, "%.399s", e->msg);
    } else if (!ok) {
        rest_body_text(*resp, b, sizeof b);
        snprintf(why, sizeof why, "%s %s: HTTP %ld: %s", method, shown, *status, b);
    }
    snprintf(where, sizeof where, "DLTS dashboard %.270s", d->dashboard);
    rest_note_call(&d->b, FAULT_KEY, ok, where, why);
    free(url);
    free(shown);
    return rc;
}

/* path segment, escaped (caller frees) */
static char *seg(struct dlts *d, const char *s)
{
    char *x = curl_easy_escape(d->b.rest.curl, s, 0);
    char *r = xstrdup(x ? x : "");
    curl_free(x);
    return r;
}

/* Why an answer that is not 2xx is an error of the config (credentials, cluster, team) */
static int refused(struct dlts *d, const char *what, long status, const char *body, struct errbuf *e)
{
    char msg[320];
    rest_body_text(body, msg, sizeof msg);
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

static void dlts_close(struct rest_base *b)
{
    struct dlts *d = (struct dlts *)b;
    free(d->dashboard);
    free(d->cluster);
    free(d->team);
    free(d->email);
    free(d->auth_query);
    free(d->gpu_type);
    free(d->image);
    free(d->ca_bundle);
    free(d);
}

/* The connection settings of a trainingService entry ts (config: the top level's
 * fallbacks). NULL with e when a key is missing. */
static struct rest_base *dlts_open(struct worker *w, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    (void)w;
    const char *dash = rest_str(ts, NULL, "dashboard"), *email = rest_str(ts, NULL, "email");
    const char *pw = rest_str(ts, NULL, "password"), *team = rest_str(ts, NULL, "team");
    if (!dash || !email || !pw || !team) {
        errf(e, "trainingService (dlts): dashboard, email, password and team are required");
        return NULL;
    }
    struct dlts *d = xcalloc(1, sizeof *d);
    d->b.rest.curl = curl_easy_init();
    if (!d->b.rest.curl) {
        errf(e, "cannot initialise libcurl");
        rest_base_clear(&d->b);
        dlts_close(&d->b);
        return NULL;
    }
    size_t n = strlen(dash);
    d->dashboard = n && dash[n - 1] == '/' ? xstrdup(dash) : xasprintf("%s/", dash);
    d->cluster = xstrdup(rest_str(ts, NULL, "cluster") ? rest_str(ts, NULL, "cluster") : ".default");
    d->team = xstrdup(team);
    d->email = xstrdup(email);
    char *qe = curl_easy_escape(d->b.rest.curl, email, 0), *qp = curl_easy_escape(d->b.rest.curl, pw, 0);
    d->auth_query = xasprintf("email=%s&password=%s", qe ? qe : "", qp ? qp : "");
    curl_free(qe);
    curl_free(qp);
    d->gpu_type = rest_str(ts, NULL, "gpuType") ? xstrdup(rest_str(ts, NULL, "gpuType")) : NULL;
    d->image = xstrdup(rest_str(ts, NULL, "image") ? rest_str(ts, NULL, "image") : "msranni/nni:latest");
    d->ca_bundle = rest_str(ts, NULL, "caBundle") ? xstrdup(rest_str(ts, NULL, "caBundle")) : NULL;
    d->b.rest.ca_bundle = d->ca_bundle;
    d->b.rest.insecure_tls = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ts, "insecure"));
    d->b.rest.tls_hint = "the certificate is not trusted: name its CA with caBundle (a PEM file)";
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(ts, "trialGpuNumber");
    if (!g)
        g = cJSON_GetObjectItemCaseSensitive(config, "trialGpuNumber");
    d->gpu = cJSON_IsNumber(g) ? (long long)g->valuedouble : 0;
    const char *tmo = getenv("TRIALQ_DLTS_TIMEOUT"); /* seconds; tests shorten it */
    d->b.rest.timeout_ms = tmo && atof(tmo) > 0 ? (long)(atof(tmo) * 1000) : 15000;
    return &d->b;
}

/* The GPU types of the cluster's metadata against gpuType (learnt from it when unset):
 * 0, or -1 with e (the config is wrong). */
static int gpu_type_of(struct dlts *d, cJSON *meta, struct errbuf *e)
{
    if ((!cJSON_IsObject(meta) || !meta->child) && !d->gpu_type)
        return errf(e, "dlts: cluster '%s' lists no GPU type in its metadata; set trainingService.gpuType",
                    d->cluster);
    if (!cJSON_IsObject(meta) || !meta->child) {
        /* gpuType set: the cluster does not say, it is taken as it is */
    } else if (!d->gpu_type) {
        d->gpu_type = xstrdup(meta->child->string);
    } else if (!cJSON_GetObjectItemCaseSensitive(meta, d->gpu_type)) {
        return errf(e, "dlts: cluster '%s' has no GPU type '%s' (it has %s); check trainingService.gpuType",
                    d->cluster, d->gpu_type, meta->child->string);
    }
    return 0;
}

/* The team's view of the cluster: checks the credentials, the cluster and the team, and
 * learns the GPU type (its metadata's first key; a gpuType set must be one of them).
 * 1 when the dashboard does not answer; *fatal: the config is wrong. */
static int probe_once(struct rest_base *b, int *fatal, struct errbuf *e)
{
    struct dlts *d = (struct dlts *)b;
    char *c = seg(d, d->cluster), *t = seg(d, d->team);
    char *path = xasprintf("teams/%s/clusters/%s", t, c);
    free(c);
    free(t);
    long status = 0;
    char *body = NULL;
    int rc = 1;
    if (http(d, "GET", path, NULL, &status, &body, e) < 0) {
        errprefix(e, "DLTS at %s does not answer", d->dashboard);
    } else if (rest_transient(status)) {
        char msg[320];
        rest_body_text(body, msg, sizeof msg);
        errf(e, "DLTS at %s answered HTTP %ld: %s", d->dashboard, status, msg);
    } else if (status != 200) {
        *fatal = 1;
        rc = refused(d, "GET api/teams/.../clusters/...", status, body, e);
    } else {
        cJSON *j = cJSON_Parse(body);
        const cJSON *md = cJSON_GetObjectItemCaseSensitive(j, "metadata");
        cJSON *meta = cJSON_IsString(md) ? cJSON_Parse(md->valuestring) : cJSON_Duplicate(md, 1);
        cJSON_Delete(j);
        rc = gpu_type_of(d, meta, e);
        *fatal = rc < 0;
        cJSON_Delete(meta);
    }
    free(body);
    free(path);
    return rc;
}

static const char *unreachable(const struct rest_base *b, char *buf, size_t len)
{
    snprintf(buf, len, "dlts: cannot reach the dashboard at %s", ((const struct dlts *)b)->dashboard);
    return buf;
}

static void describe(const struct rest_base *b)
{
    const struct dlts *d = (const struct dlts *)b;
    log_info("DLTS %s cluster %s team %s as %s (GPU type %s); storage %s -> %s", d->dashboard, d->cluster, d->team,
             d->email, d->gpu_type, d->b.local_root, d->b.cont_root);
}

/* ---------------- jobs ---------------- */

/* NNI's job body (v2.3's DLTSTrainingService), with our command */
static char *job_body(struct worker *w, struct dlts *d, const struct trial *t, const char *name)
{
    cJSON *j = cJSON_CreateObject();
    const cJSON *tc = worker_config_item(w, "trialCommand");
    char *cmd = nas_job_command(w, d->b.cont_root, t, NULL, cJSON_IsString(tc) ? tc->valuestring : "false");
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
            *fatal = !rest_transient(status);
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
    nas_job_known(j, d->b.local_root, t, "jobid", job_id);
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
        if (rest_transient(status)) {
            char msg[320];
            rest_body_text(resp, msg, sizeof msg);
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
        rest_body_text(cJSON_IsString(err) ? err->valuestring : resp, msg, sizeof msg);
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

/* api/<fmt with the cluster and id escaped> (caller frees) */
static char *job_path(struct dlts *d, const char *fmt, const char *id)
{
    char *c = seg(d, d->cluster), *i = seg(d, id);
    char *path = xasprintf(fmt, c, i);
    free(c);
    free(i);
    return path;
}

/* The job's own GET (this interval's list lacks it: it ended and newer jobs pushed it
 * out, or DLTS forgot it: 200 {}). */
static int get_job(struct rest_base *b, const char *key, cJSON **job, struct errbuf *e)
{
    struct dlts *d = (struct dlts *)b;
    char *path = job_path(d, "v2/clusters/%s/jobs/%s", key);
    char *body = NULL;
    long status = 0;
    int rc = -1;
    if (http(d, "GET", path, NULL, &status, &body, e) == 0) {
        char msg[320];
        rest_body_text(body, msg, sizeof msg);
        *job = status == 200 ? cJSON_Parse(body) : NULL;
        if (status != 200)
            errf(e, "HTTP %ld: %s", status, msg);
        else if (!cJSON_IsObject(*job))
            errf(e, "not a job: %.100s", msg);
        else
            rc = (*job)->child != NULL;
    }
    if (rc < 1) {
        cJSON_Delete(*job);
        *job = NULL;
    }
    free(body);
    free(path);
    return rc;
}

/* The team's job list (wide: LIST_LIMIT ended jobs, else POLL_LIMIT), the experiment's
 * jobs of it (name prefix nni_exp_<exp>_) by jobId. A failure, a refusal included (the
 * dashboard's refusals are the credentials', not the list's), is a failed listing: the
 * loop backs off. */
static int list(struct rest_base *b, const char *exp_id, int wide, struct job_listing *l, struct errbuf *e)
{
    struct dlts *d = (struct dlts *)b;
    job_listing_reset(l);
    cJSON *jobs;
    int fatal;
    if (list_jobs_limit(d, wide ? LIST_LIMIT : POLL_LIMIT, &jobs, &fatal, e) < 0)
        return -1;
    char *prefix = xasprintf("nni_exp_%s_", exp_id);
    cJSON *it;
    cJSON_ArrayForEach(it, jobs) {
        const char *n = item_str(it, "jobName"), *id = item_str(it, "jobId");
        if (n && id && str_starts(n, prefix))
            job_listing_add(l, id, cJSON_Duplicate(it, 1));
    }
    free(prefix);
    cJSON_Delete(jobs);
    return 0;
}

static int put_killing(struct dlts *d, const char *job_id, struct errbuf *e)
{
    char *path = job_path(d, "clusters/%s/jobs/%s/status", job_id);
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

static int active(const char *s)
{
    static const char *const live[] = {"unapproved", "queued", "scheduling", "running", "pausing", "paused", NULL};
    for (int i = 0; live[i]; i++)
        if (strcmp(s, live[i]) == 0)
            return 1;
    return 0;
}

static int live(const cJSON *job)
{
    const char *st = item_str(job, "jobStatus");
    return st && active(st);
}

/* PUT killing: 0 once DLTS took it, -1 to be tried again. */
static int stop(struct rest_base *b, const char *job_id, struct errbuf *e)
{
    return put_killing((struct dlts *)b, job_id, e);
}

static const struct rest_flavour dlts = {
    .name = "dlts", .label = "DLTS", .service = "DLTS", .marker = "jobid",
    .mount_noun = "directory", .mount_what = "the shared filesystem that DLTS mounts into the jobs",
    .cont_mount = 1, .stop_verb = "kill", .stopped = "killed",
    .open = dlts_open, .close = dlts_close, .probe_once = probe_once, .unreachable = unreachable,
    .describe = describe, .try_submit = try_submit, .find = find_trial_job, .get = get_job,
    .reported = job_reported, .list = list, .live = live, .stop = stop,
};

const struct platform_ops platform_dlts = REST_PLATFORM_OPS("dlts", dlts);
