/* aml.c: the Azure Machine Learning platform: one command job per trial in the
 * workspace, made through the Azure ML v2 REST API on Azure Resource Manager
 * ({managementEndpoint}/subscriptions/{s}/resourceGroups/{rg}/providers/
 * Microsoft.MachineLearningServices/workspaces/{ws}/...), every request with a bearer
 * token of workers/rest/aml_auth.h (a service principal's, or the Azure CLI's).
 *
 * Files go through a datastore (trainingService.datastore, default workspaceblobstore)
 * that this host has mounted at localStorageMountPoint (e.g. with blobfuse2), as on the
 * other shared-storage platforms (workers/nas_trial.h): L = <mount>/<exp>/<trial> here is
 * the job's output folder azureml://datastores/<datastore>/paths/<exp> (mounted
 * read-write, named ${{outputs.nni}} in the command) plus /<trial>; the trial writes its
 * metrics and its end (.nni/state) there, so the compute never reaches us. With
 * trialCommandChannel: http the job runs the trial under .nni/chanrelay.py, which serves
 * NNI's HTTP channel inside the job and writes the metrics there too.
 *
 * Crash safety: the job's name is the trial's (nni_exp_<exp>_trial_<trial>, plus
 * _attempt<N> for a retry) and the trial row's job_id. A PUT of a job by name is
 * idempotent on Azure ML (the same job again: 200), so a submission whose answer was
 * lost, or that a crash interrupted, is simply PUT again; a job of that name whose body
 * differs (400 "already exists") is looked up with a GET and re-attached. Once the job
 * is known to exist, L/.nni/amljob says so. No call is retried in a blocking loop: a
 * failed one (no answer, 5xx, 429) returns -1 and the worker loop tries again after its
 * back-off; while the service does not answer no call is made before down_until.
 *
 * Status: one listing of the workspace's jobs per poll interval (aml_poll_all): the jobs
 * list filtered by the tag key nni_exp_<exp> that every job of the experiment carries,
 * paged by nextLink, and kept to the names nni_exp_<exp>_...; each trial's poll answers
 * from it, and GETs its job only when the listing lacks it (a job of an older trialq,
 * without the tag, or one the list missed) before calling it vanished. */
#include <curl/curl.h>
#include <openssl/sha.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "workers/rest/aml_auth.h"
#include "workers/rest/rest.h"

#define API_VERSION "2023-04-01"
#define FAULT_KEY "aml"
#define MARKER "amljob"
#define ENV_NAME "trialq-nni"
#define OUTPUT "nni" /* the job's output: the experiment's folder on the datastore */
#define MAX_PAGES 1000 /* of the jobs list: a loop of nextLinks ends */

struct aml {
    struct rest_base b; /* cont_root: ${{outputs.nni}} in the job; jobs listed by name */
    char *mgmt;  /* the management endpoint, no final '/' */
    char *ws_id; /* the workspace's ARM id */
    char *sub, *rg, *ws, *compute, *datastore, *image, *ca_bundle;
    char *env_id; /* the environment version of image */
    struct aml_auth auth;
};

/* ---------------- configuration ---------------- */

static const char *key_str(const cJSON *ts, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ts, key);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static char *trimmed(const char *s)
{
    size_t n = strlen(s);
    while (n && s[n - 1] == '/')
        n--;
    return xasprintf("%.*s", (int)n, s);
}

static void aml_close(struct rest_base *b)
{
    struct aml *d = (struct aml *)b;
    free(d->mgmt);
    free(d->ws_id);
    free(d->sub);
    free(d->rg);
    free(d->ws);
    free(d->compute);
    free(d->datastore);
    free(d->image);
    free(d->ca_bundle);
    free(d->env_id);
    aml_auth_free(&d->auth);
    free(d);
}

/* An endpoint: https://, or http:// to 127.0.0.1 (a test server, a local proxy) or with
 * insecure: true. */
static int check_endpoint(const char *key, const char *url, const cJSON *ts, struct errbuf *e)
{
    if (str_starts(url, "https://"))
        return 0;
    if (!str_starts(url, "http://"))
        return errf(e, "trainingService.%s: %s is neither https:// nor http://", key, url);
    const char *rest = url + strlen("http://");
    if (str_starts(rest, "127.0.0.1:") || str_starts(rest, "127.0.0.1/") || strcmp(rest, "127.0.0.1") == 0 ||
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ts, "insecure")))
        return 0;
    return errf(e, "trainingService.%s: %s is unencrypted (the bearer token would travel in clear); use "
                "https://, or set insecure: true", key, url);
}

static char *env_version(const char *image)
{
    unsigned char h[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)image, strlen(image), h);
    char hex[17];
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", h[i]);
    return xstrdup(hex);
}

/* The settings of a trainingService entry ts. NULL with e. */
static struct rest_base *aml_open(struct worker *wk, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    (void)wk;
    (void)config;
    const char *sub = key_str(ts, "subscriptionId"), *rg = key_str(ts, "resourceGroup");
    const char *ws = key_str(ts, "workspaceName"), *compute = key_str(ts, "computeTarget");
    if (!sub || !rg || !ws || !compute) {
        errf(e, "trainingService (aml): subscriptionId, resourceGroup, workspaceName and computeTarget are "
                "required");
        return NULL;
    }
    const char *mgmt = key_str(ts, "managementEndpoint"), *auth = key_str(ts, "authorityHost");
    mgmt = mgmt ? mgmt : "https://management.azure.com";
    auth = auth ? auth : "https://login.microsoftonline.com";
    if (check_endpoint("managementEndpoint", mgmt, ts, e) < 0 || check_endpoint("authorityHost", auth, ts, e) < 0)
        return NULL;
    struct aml *d = xcalloc(1, sizeof *d);
    d->b.rest.curl = curl_easy_init();
    if (!d->b.rest.curl) {
        errf(e, "cannot initialise libcurl");
        rest_base_clear(&d->b);
        aml_close(&d->b);
        return NULL;
    }
    d->mgmt = trimmed(mgmt);
    d->sub = xstrdup(sub);
    d->rg = xstrdup(rg);
    d->ws = xstrdup(ws);
    d->compute = xstrdup(compute);
    char *s = curl_easy_escape(d->b.rest.curl, sub, 0), *r = curl_easy_escape(d->b.rest.curl, rg, 0);
    char *w = curl_easy_escape(d->b.rest.curl, ws, 0);
    d->ws_id = xasprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.MachineLearningServices/"
                         "workspaces/%s", s ? s : "", r ? r : "", w ? w : "");
    curl_free(s);
    curl_free(r);
    curl_free(w);
    d->datastore = xstrdup(key_str(ts, "datastore") ? key_str(ts, "datastore") : "workspaceblobstore");
    d->image = xstrdup(key_str(ts, "dockerImage") ? key_str(ts, "dockerImage") : "msranni/nni:latest");
    char *ver = env_version(d->image);
    d->env_id = xasprintf("%s/environments/%s/versions/%s", d->ws_id, ENV_NAME, ver);
    free(ver);
    d->ca_bundle = key_str(ts, "caBundle") ? xstrdup(key_str(ts, "caBundle")) : NULL;
    d->b.rest.ca_bundle = d->ca_bundle;
    d->b.rest.insecure_tls = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ts, "insecure"));
    d->b.rest.tls_hint = "the certificate is not trusted: name its CA with caBundle (a PEM file)";
    const char *tmo = getenv("TRIALQ_AML_TIMEOUT"); /* seconds; tests shorten it */
    d->b.rest.timeout_ms = tmo && atof(tmo) > 0 ? (long)(atof(tmo) * 1000) : 30000;
    d->b.cont_root = xstrdup("${{outputs." OUTPUT "}}");
    /* the token's audience: a cloud's own management host (https://management.azure.com,
     * https://management.chinacloudapi.cn, ...) is its Resource Manager; any other
     * endpoint (a proxy, a private link, a test server) fronts the public cloud's */
    const char *host = strstr(d->mgmt, "://") + 3;
    const char *audience = str_starts(d->mgmt, "https://") && str_starts(host, "management.")
                               ? d->mgmt
                               : "https://management.azure.com";
    if (aml_auth_init(&d->auth, auth, audience, d->b.rest.timeout_ms, d->ca_bundle, e) < 0) {
        rest_base_clear(&d->b);
        aml_close(&d->b);
        return NULL;
    }
    d->auth.rest.insecure_tls = d->b.rest.insecure_tls;
    d->auth.rest.tls_hint = d->b.rest.tls_hint;
    return &d->b;
}

/* ---------------- HTTP ---------------- */

/* ARM's error of an answer: "Code: message" (one line) */
static void arm_error(const char *body, char *out, size_t outlen, char *code, size_t codelen)
{
    cJSON *j = cJSON_Parse(body ? body : "");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(err, "code");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(err, "message");
    if (code)
        snprintf(code, codelen, "%s", cJSON_IsString(c) ? c->valuestring : "");
    if (cJSON_IsString(c) || cJSON_IsString(m))
        snprintf(out, outlen, "%s%s%.300s", cJSON_IsString(c) ? c->valuestring : "", cJSON_IsString(m) ? ": " : "",
                 cJSON_IsString(m) ? m->valuestring : "");
    else
        snprintf(out, outlen, "%.300s", body && body[0] ? body : "(empty)");
    for (char *q = out; *q; q++)
        if (*q == '\n' || *q == '\r')
            *q = ' ';
    cJSON_Delete(j);
}

static void note_failure(struct aml *d, int ok, const char *why)
{
    char where[300];
    snprintf(where, sizeof where, "Azure ML at %.280s", d->mgmt);
    rest_note_call(&d->b, FAULT_KEY, ok, where, why);
}

/* One request to url ({mgmt}/..., api-version added here), with the bearer token; a 401
 * for an expired or invalid token fetches a new one and tries once more. Returns 0 when
 * the service answered (*status, *resp: caller frees), -1 when no answer or no token came
 * (e; *fatal when the credentials were refused). shown names the request in messages. */
static int http_url(struct aml *d, const char *method, const char *url, const char *shown, const char *body,
                    long *status, char **resp, int *fatal, struct errbuf *e)
{
    int dummy;
    fatal = fatal ? fatal : &dummy;
    *fatal = 0;
    char *full = strstr(url, "api-version=") ? xstrdup(url)
                                               : xasprintf("%s%capi-version=" API_VERSION, url,
                                                           strchr(url, '?') ? '&' : '?');
    int rc = -1;
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *tok = aml_auth_token(&d->auth, attempt > 0, fatal, e);
        if (!tok) {
            rc = -1;
            break;
        }
        char *bearer = xasprintf("Authorization: Bearer %s", tok);
        const char *headers[] = {bearer, "Content-Type: application/json", "Accept: application/json", NULL};
        *resp = NULL;
        rc = rest_call(&d->b.rest, method, full, shown, headers, body, status, resp, e);
        free(bearer);
        if (rc < 0 || *status != 401)
            break;
        char msg[400], code[80];
        arm_error(*resp, msg, sizeof msg, code, sizeof code);
        if (attempt == 0 && (strcmp(code, "ExpiredAuthenticationToken") == 0 ||
                             strcmp(code, "InvalidAuthenticationToken") == 0)) {
            log_warn("aml: %s %s: %s; fetching a new token", method, shown, msg);
            free(*resp);
            *resp = NULL;
            continue;
        }
        break;
    }
    free(full);
    char why[500];
    if (rc < 0) {
        snprintf(why, sizeof why, "%.499s", e->msg);
    } else {
        char msg[400];
        arm_error(*resp, msg, sizeof msg, NULL, 0);
        snprintf(why, sizeof why, "%s %s: HTTP %ld: %s", method, shown, *status, msg);
    }
    note_failure(d, rc == 0 && !rest_transient(*status) && *status != 401 && *status != 403, why);
    return rc;
}

/* http_url of {mgmt}{ws_id}/<path> */
static int http(struct aml *d, const char *method, const char *path, const char *body, long *status, char **resp,
                int *fatal, struct errbuf *e)
{
    char *url = xasprintf("%s%s/%s", d->mgmt, d->ws_id, path);
    char *shown = xasprintf("workspaces/%s/%s", d->ws, path);
    int rc = http_url(d, method, url, shown, body, status, resp, fatal, e);
    free(url);
    free(shown);
    return rc;
}

/* Why an answer of the workspace's resources that is not 2xx is an error of the config */
static int refused(struct aml *d, const char *what, long status, const char *body, struct errbuf *e)
{
    char msg[400], code[80];
    arm_error(body, msg, sizeof msg, code, sizeof code);
    if (strcmp(code, "SubscriptionNotFound") == 0)
        return errf(e, "aml: subscription '%s' not found (%s); check trainingService.subscriptionId and that the "
                    "principal has a role in it", d->sub, msg);
    if (strcmp(code, "ResourceGroupNotFound") == 0)
        return errf(e, "aml: resource group '%s' not found in subscription %s (%s); check "
                    "trainingService.resourceGroup", d->rg, d->sub, msg);
    if (strcmp(code, "ResourceNotFound") == 0)
        return errf(e, "aml: workspace '%s' not found in resource group %s (%s); check "
                    "trainingService.workspaceName", d->ws, d->rg, msg);
    if (status == 403 || strcmp(code, "AuthorizationFailed") == 0)
        return errf(e, "aml: the principal may not %s (HTTP %ld: %s); give it the role AzureML Data Scientist "
                    "on workspace %s", what, status, msg, d->ws);
    if (status == 401)
        return errf(e, "aml: the management endpoint %s refused the token (%s); check managementEndpoint and the "
                    "credentials' tenant", d->mgmt, msg);
    return errf(e, "aml: %s: HTTP %ld: %s", what, status, msg);
}

/* ---------------- the workspace ---------------- */

/* GET {what}s/{name}: 0 it exists, -1 with e (*fatal: not there, or refused) */
static int probe_one(struct aml *d, const char *kind, const char *name, const char *key, int *fatal,
                     struct errbuf *e)
{
    char *n = curl_easy_escape(d->b.rest.curl, name, 0);
    char *path = xasprintf("%ss/%s", kind, n ? n : "");
    curl_free(n);
    long status = 0;
    char *body = NULL;
    int rc = http(d, "GET", path, NULL, &status, &body, fatal, e);
    free(path);
    if (rc == 0 && status != 200) {
        rc = -1;
        if (rest_transient(status)) {
            char msg[400];
            arm_error(body, msg, sizeof msg, NULL, 0);
            errf(e, "aml: GET %s %s: HTTP %ld: %s", kind, name, status, msg);
        } else {
            *fatal = 1;
            char msg[400], code[80];
            arm_error(body, msg, sizeof msg, code, sizeof code);
            if (status == 404 && strcmp(code, "UserError") == 0)
                errf(e, "aml: workspace %s has no %s '%s' (%s); check trainingService.%s", d->ws, kind, name, msg,
                     key);
            else
                refused(d, "read the workspace", status, body, e);
        }
    }
    free(body);
    return rc;
}

/* PUT the environment version of dockerImage (the jobs name it by its ARM id) */
static int put_environment(struct aml *d, int *fatal, struct errbuf *e)
{
    cJSON *b = cJSON_CreateObject(), *p = cJSON_AddObjectToObject(b, "properties");
    cJSON_AddStringToObject(p, "image", d->image);
    cJSON_AddStringToObject(p, "description", "trialq: the docker image of NNI experiments' trials");
    cJSON_AddBoolToObject(p, "isAnonymous", 1);
    char *body = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    char *url = xasprintf("%s%s", d->mgmt, d->env_id);
    long status = 0;
    char *resp = NULL;
    int rc = http_url(d, "PUT", url, "environments/" ENV_NAME, body, &status, &resp, fatal, e);
    free(url);
    free(body);
    if (rc == 0 && status != 200 && status != 201) {
        rc = -1;
        *fatal = !rest_transient(status);
        if (*fatal)
            refused(d, "register the environment of dockerImage", status, resp, e);
        else
            errf(e, "aml: PUT environment: HTTP %ld", status);
    }
    free(resp);
    return rc;
}

/* The credentials, the subscription, resource group and workspace (by the compute's
 * GET), the compute target, the datastore, and the environment: 0; 1 the service does
 * not answer (e); -1 with e, *fatal: the config or the credentials are wrong. */
static int probe_once(struct rest_base *b, int *fatal, struct errbuf *e)
{
    struct aml *d = (struct aml *)b;
    d->auth.rest.down_until = 0; /* the skeleton paces the tries */
    if (probe_one(d, "compute", d->compute, "computeTarget", fatal, e) == 0 &&
        probe_one(d, "datastore", d->datastore, "datastore", fatal, e) == 0 && put_environment(d, fatal, e) == 0)
        return 0;
    if (*fatal)
        return -1;
    if (d->auth.rest.tls_refused) /* the same certificate again */
        d->b.rest.tls_refused = 1;
    return 1;
}

static const char *unreachable(const struct rest_base *b, char *buf, size_t len)
{
    snprintf(buf, len, "aml: cannot reach Azure ML at %s", ((const struct aml *)b)->mgmt);
    return buf;
}

static void describe(const struct rest_base *b)
{
    const struct aml *d = (const struct aml *)b;
    char what[200];
    log_info("Azure ML workspace %s (resource group %s) compute %s as %s; datastore %s at %s", d->ws, d->rg,
             d->compute, aml_auth_what(&d->auth, what, sizeof what), d->datastore, d->b.local_root);
}

/* ---------------- jobs ---------------- */

/* The command job of trial t */
static char *job_body(struct worker *w, struct aml *d, const struct trial *t, const char *name)
{
    const cJSON *tc = worker_config_item(w, "trialCommand");
    const char *trial_cmd = cJSON_IsString(tc) ? tc->valuestring : "false";
    char *url = nas_channel_url(w, t);
    char *chan_cmd = url ? nas_channel_command(url, trial_cmd) : NULL;
    char *cmd = nas_job_command(w, d->b.cont_root, t, "aml", chan_cmd ? chan_cmd : trial_cmd);
    free(url);
    free(chan_cmd);
    cJSON *b = cJSON_CreateObject(), *p = cJSON_AddObjectToObject(b, "properties");
    char *exp_name = xasprintf("nni_exp_%s", w->exp_id);
    char *compute = xasprintf("%s/computes/%s", d->ws_id, d->compute);
    char *uri = xasprintf("azureml://datastores/%s/paths/%s", d->datastore, w->exp_id);
    char attempt[24];
    snprintf(attempt, sizeof attempt, "%d", t->attempt);
    cJSON_AddStringToObject(p, "jobType", "Command");
    cJSON_AddStringToObject(p, "displayName", name);
    cJSON_AddStringToObject(p, "experimentName", exp_name);
    cJSON_AddStringToObject(p, "description", "NNI trial (trialq)");
    cJSON_AddStringToObject(p, "command", cmd);
    cJSON_AddStringToObject(p, "environmentId", d->env_id);
    cJSON_AddStringToObject(p, "computeId", compute);
    cJSON *out = cJSON_AddObjectToObject(cJSON_AddObjectToObject(p, "outputs"), OUTPUT);
    cJSON_AddStringToObject(out, "jobOutputType", "uri_folder");
    cJSON_AddStringToObject(out, "mode", "ReadWriteMount");
    cJSON_AddStringToObject(out, "uri", uri);
    cJSON *tags = cJSON_AddObjectToObject(p, "tags");
    cJSON_AddStringToObject(tags, "nni_experiment", w->exp_id);
    cJSON_AddStringToObject(tags, "nni_trial", t->id);
    cJSON_AddStringToObject(tags, "nni_attempt", attempt);
    cJSON_AddStringToObject(tags, exp_name, w->exp_id); /* the key the listing filters by */
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(p, "resources"), "instanceCount", 1);
    char *s = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    free(cmd);
    free(exp_name);
    free(compute);
    free(uri);
    return s;
}

static char *job_path(struct aml *d, const char *name, const char *suffix)
{
    char *n = curl_easy_escape(d->b.rest.curl, name, 0);
    char *p = xasprintf("jobs/%s%s", n ? n : "", suffix);
    curl_free(n);
    return p;
}

/* GET the job: 1 it exists (*job: caller deletes, may be NULL), 0 Azure ML does not know
 * it, -1 no answer or a passing refusal (e). */
static int get_job(struct aml *d, const char *name, cJSON **job, struct errbuf *e)
{
    char *path = job_path(d, name, "");
    long status = 0;
    char *body = NULL;
    int rc = -1;
    if (job)
        *job = NULL;
    if (http(d, "GET", path, NULL, &status, &body, NULL, e) == 0) {
        char msg[400], code[80];
        arm_error(body, msg, sizeof msg, code, sizeof code);
        if (status == 200) {
            cJSON *j = cJSON_Parse(body);
            if (cJSON_IsObject(j)) {
                rc = 1;
                if (job)
                    *job = j;
                else
                    cJSON_Delete(j);
            } else {
                cJSON_Delete(j);
                errf(e, "GET job %s: not a job", name);
            }
        } else if (status == 404 && strcmp(code, "UserError") == 0) {
            rc = 0;
        } else {
            errf(e, "GET job %s: HTTP %ld: %s", name, status, msg);
        }
    }
    free(body);
    free(path);
    return rc;
}

/* nas_find_fn: a GET of the job by its name */
static int find_job(struct worker *w, struct nas_job *j, const struct trial *t, struct errbuf *e)
{
    struct aml *d = w->platform;
    char *name = nas_job_name(w->exp_id, t);
    int g = get_job(d, name, NULL, e);
    if (g == 1)
        nas_job_known(j, d->b.local_root, t, MARKER, name);
    free(name);
    return g;
}

/* PUTs the job (idempotent by name). 1: the job exists (created or found); 0: no answer
 * or a passing refusal (e: try again later); -1: Azure ML refused it (e). */
static int try_submit(struct worker *w, struct nas_job *j, const struct trial *t, struct errbuf *e)
{
    struct aml *d = w->platform;
    char *name = nas_job_name(w->exp_id, t);
    char *body = job_body(w, d, t, name);
    char *path = job_path(d, name, "");
    long status = 0;
    char *resp = NULL;
    int rc;
    struct errbuf he;
    /* no answer (the job may exist now, and a PUT again finds it) or no token (refused
     * credentials are the experiment's error, and the trial waits for them to be fixed) */
    if (http(d, "PUT", path, body, &status, &resp, NULL, &he) < 0) {
        errf(e, "submit (PUT job): %s", he.msg);
        rc = 0;
    } else if (status == 200 || status == 201) {
        log_info("trial %s: %s Azure ML job %s", t->id, status == 201 ? "submitted" : "re-attached to", name);
        nas_job_known(j, d->b.local_root, t, MARKER, name);
        rc = 1;
    } else {
        char msg[400], code[80];
        arm_error(resp, msg, sizeof msg, code, sizeof code);
        if (rest_transient(status)) {
            errf(e, "submit (PUT job): HTTP %ld: %s", status, msg);
            rc = 0;
        } else if (status == 400 && strstr(msg, "already exists")) {
            /* a job of this name made by an earlier manager, its body not ours now */
            int g = get_job(d, name, NULL, &he);
            if (g == 1) {
                log_info("trial %s: re-attached to Azure ML job %s", t->id, name);
                nas_job_known(j, d->b.local_root, t, MARKER, name);
            }
            rc = g == 1 ? 1 : (errf(e, "submit: %s", g < 0 ? he.msg : msg), 0);
        } else {
            rc = refused(d, "create the job", status, resp, e);
        }
    }
    free(resp);
    free(path);
    free(body);
    free(name);
    return rc;
}

/* the relay that serves the HTTP channel in the job */
static int write_relay(struct worker *w, struct rest_base *b, const struct trial *t, struct errbuf *e)
{
    char *url = nas_channel_url(w, t);
    if (!url)
        return 0;
    char *dir = nas_trial_dir(b->local_root, t);
    int rc = nas_write_chanrelay(dir, e);
    free(dir);
    free(url);
    return rc;
}

static const char *job_status(const cJSON *job)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(job, "properties");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "status");
    return cJSON_IsString(s) ? s->valuestring : "";
}

/* The job's Studio page, or "" */
static const char *studio_url(const cJSON *job)
{
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(job, "properties");
    const cJSON *svc = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "services"), "Studio");
    const cJSON *ep = cJSON_GetObjectItemCaseSensitive(svc, "endpoint");
    return cJSON_IsString(ep) ? ep->valuestring : "";
}

/* The job as Azure ML reports it. Its statuses (JobStatus of the 2023-04-01 API):
 * NotStarted, Starting, Provisioning, Preparing, Queued (waiting for the compute),
 * Running, Finalizing, CancelRequested, NotResponding, Paused, Unknown (it has not
 * ended), Completed, Failed, Canceled (it has). */
static void job_reported(struct worker *w, struct trial *t, const char *dir, const cJSON *job, struct job_state *js)
{
    struct errbuf e;
    const char *state = job_status(job);
    if (strcmp(state, "Completed") == 0) {
        nas_job_ended(dir, t->attempt, 1, 0, 0, js);
    } else if (strcmp(state, "Failed") == 0) {
        int has = nas_job_ended(dir, t->attempt, 0, 0, 0, js);
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(job, "properties");
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "error"), "message");
        if (cJSON_IsString(err))
            snprintf(js->why, sizeof js->why, "Azure ML job Failed: %.400s", err->valuestring);
        else if (has)
            snprintf(js->why, sizeof js->why, "Azure ML job Failed: the trial command exited with code %d",
                     js->exit_code);
        else
            snprintf(js->why, sizeof js->why, "Azure ML job Failed before the trial command ended (see the "
                     "job's logs: %.300s)", studio_url(job)[0] ? studio_url(job) : "Azure ML studio");
    } else if (strcmp(state, "Canceled") == 0) {
        if (!t->kill_request && trial_request_kill(w->db, t->id, "SYS_CANCELED", "job canceled on Azure ML", &e) < 0)
            log_warn("trial %s: %s", t->id, e.msg);
        long long sv[4];
        js->finished = 1;
        js->signal = SIGTERM;
        js->end_time = nas_read_state(dir, sv) == 0 && sv[3] == t->attempt ? sv[1] : now_ms();
    } else if (strcmp(state, "NotResponding") == 0 || strcmp(state, "Unknown") == 0) {
        log_warn("trial %s: Azure ML reports its job %s", t->id, state);
    }
}

/* The job as reported (job_reported), and its Studio page as the trial's tracking URL. */
static void reported(struct worker *w, struct trial *t, const char *dir, const cJSON *job, struct job_state *js)
{
    const char *studio = studio_url(job);
    struct errbuf ue;
    if (!t->url && studio[0]) {
        if (trial_set_url(w->db, t->id, studio, &ue) < 0)
            log_warn("trial %s: cannot record its tracking URL: %s", t->id, ue.msg);
        else
            t->url = xstrdup(studio);
    }
    job_reported(w, t, dir, job, js);
}

/* rest_flavour.get: the job's own GET (the listing lacks it) confirms it */
static int get_one(struct rest_base *b, const char *name, cJSON **job, struct errbuf *e)
{
    return get_job((struct aml *)b, name, job, e);
}

/* POST .../cancel: 0 once Azure ML took it (202) or the job is gone, -1 to try again */
static int cancel_job(struct rest_base *b, const char *name, struct errbuf *e)
{
    struct aml *d = (struct aml *)b;
    char *path = job_path(d, name, "/cancel");
    long status = 0;
    char *body = NULL;
    struct errbuf he;
    int rc = 0;
    if (http(d, "POST", path, NULL, &status, &body, NULL, &he) < 0) {
        rc = errf(e, "cancel: %s", he.msg);
    } else if (status != 202 && status != 200 && status != 204 && status != 404) {
        char msg[400];
        arm_error(body, msg, sizeof msg, NULL, 0);
        rc = errf(e, "cancel %s: HTTP %ld: %s", name, status, msg);
    }
    free(body);
    free(path);
    return rc;
}

/* The experiment's jobs into l (reset first), by name: the workspace's jobs list
 * filtered by the experiment's tag key, every page (nextLink), kept to its name prefix.
 * 0; -1 no answer or a passing refusal (e); POLL_ALL_REFUSED the workspace refuses to
 * list jobs for good (no permission: 403; a list it does not serve). */
static int list_jobs(struct rest_base *b, const char *exp_id, int wide, struct job_listing *l, struct errbuf *e)
{
    (void)wide; /* every page, always */
    struct aml *d = (struct aml *)b;
    job_listing_reset(l);
    char *prefix = xasprintf("nni_exp_%s_", exp_id);
    char *url = xasprintf("%s%s/jobs?api-version=" API_VERSION "&tag=nni_exp_%s", d->mgmt, d->ws_id, exp_id);
    int rc = 0, page = 0;
    for (; url && page < MAX_PAGES && rc == 0; page++) {
        long status = 0;
        char *body = NULL;
        struct errbuf he;
        if (http_url(d, "GET", url, "jobs (list)", NULL, &status, &body, NULL, &he) < 0) {
            rc = errf(e, "list the workspace's jobs: %s", he.msg);
        } else if (status != 200) {
            char msg[400];
            arm_error(body, msg, sizeof msg, NULL, 0);
            errf(e, "list the workspace's jobs: HTTP %ld: %s", status, msg);
            rc = rest_transient(status) || status == 401 ? -1 : POLL_ALL_REFUSED;
        }
        free(url);
        url = NULL;
        cJSON *list = rc == 0 ? cJSON_Parse(body) : NULL;
        free(body);
        if (rc == 0 && !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(list, "value")))
            rc = errf(e, "list the workspace's jobs: the answer holds no job list");
        cJSON *it, *value = rc == 0 ? cJSON_GetObjectItemCaseSensitive(list, "value") : NULL;
        cJSON_ArrayForEach(it, value) {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
            if (cJSON_IsString(n) && str_starts(n->valuestring, prefix))
                job_listing_add(l, n->valuestring, cJSON_Duplicate(it, 1));
        }
        const cJSON *next = cJSON_GetObjectItemCaseSensitive(list, "nextLink");
        if (rc == 0 && cJSON_IsString(next) && next->valuestring[0]) {
            if (str_starts(next->valuestring, d->mgmt)) /* the token goes nowhere else */
                url = xstrdup(next->valuestring);
            else
                rc = errf(e, "list the workspace's jobs: a nextLink off the management endpoint");
        }
        cJSON_Delete(list);
    }
    if (rc == 0 && url)
        rc = errf(e, "list the workspace's jobs: more than %d pages", MAX_PAGES);
    free(url);
    free(prefix);
    return rc;
}

static int ended(const char *s)
{
    return strcmp(s, "Completed") == 0 || strcmp(s, "Failed") == 0 || strcmp(s, "Canceled") == 0 ||
           strcmp(s, "CancelRequested") == 0;
}

static int live(const cJSON *job)
{
    return !ended(job_status(job));
}

static const struct rest_flavour aml = {
    .name = "aml", .label = "Azure ML", .service = "Azure ML", .marker = MARKER,
    .mount_noun = "writable directory", .mount_what = "the datastore's container, which the jobs mount,",
    .cont_mount = 0, .stop_verb = "cancel", .stopped = "cancelled",
    .open = aml_open, .close = aml_close, .probe_once = probe_once, .unreachable = unreachable,
    .describe = describe, .submit_extra = write_relay, .try_submit = try_submit, .find = find_job,
    .get = get_one, .reported = reported, .list = list_jobs, .live = live, .stop = cancel_job,
};

const struct platform_ops platform_aml = REST_PLATFORM_OPS("aml", aml);
