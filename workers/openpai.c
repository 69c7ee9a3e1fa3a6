/* openpai.c: the OpenPAI platform (NNI v2.10's non-reuse model): one PAI job per trial,
 * submitted as a job protocol v2 YAML to {host}/rest-server/api/v2/jobs with the bearer
 * token; status from one list call per poll interval (GET .../jobs?username=U, the
 * jobs of this experiment by their name prefix; a job not listed is confirmed by a GET
 * .../jobs/{user}~{name}); kill by PUT .../executionType STOP.
 *
 * The code directory is copied once per experiment to the PAI storage that is mounted
 * on this host (localStorageMountPoint/<exp>/nni-code); each trial gets its own dir
 * L = <localMount>/<exp>/<trial> holding parameter.cfg and run.sh, which the container
 * sees as C = <containerMount>/<exp>/<trial>. The trial writes its metrics (.nni/metrics
 * or NNISDK_MEb lines in trial.stdout) and its exit status (.nni/state) there, and this
 * worker reads them from L: cluster nodes never need to reach the manager.
 *
 * Crash safety: the job name is the trial's (nni_exp_<exp>_trial_<trial>, plus
 * _attempt<N> for a retry), so submission is idempotent: submit first asks PAI for the
 * job by name and re-attaches when it exists; a POST that answers 409 re-attaches too.
 * L/.nni/submitted is written once PAI accepted the job: a job that PAI no longer knows
 * but that was accepted has vanished (the trial is retried); one that was never accepted
 * is submitted (again). No HTTP call is retried in a blocking loop: a failed call
 * (5xx, timeout, refused) is retried on a later poll with exponential back-off, so the
 * worker keeps renewing its leases while the server is down. */
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
#include "workers/openpai.h"
#include "workers/worker.h"

#define POLL_MS 1000          /* NNI polls PAI every 3 s */
#define BACKOFF_MIN_MS 500

struct pai {
    char *host, *user, *token, *auth_header;
    char *local_root, *cont_root; /* <mount>/<exp> on this host / in the container */
    char *image, *vc, *storage;
    long long cpu, gpu, mem_mb;
    cJSON *protocol; /* openpaiConfig: the user's job protocol, or NULL */
    struct rest_client rest; /* redirects followed, as NNI; the token is not sent to other hosts */
    struct nas_jobs jobs;
    struct job_listing listed; /* the user's jobs of this experiment (openpai_poll_all) */
};

/* ---------------- HTTP ---------------- */

/* One request. Returns 0 when the server answered (*status set, *resp the body, caller
 * frees), -1 when no answer came (refused, timeout, TLS; e says which). */
static int http(struct pai *p, const char *method, const char *url, const char *ctype, const char *body,
                long *status, char **resp, struct errbuf *e)
{
    char *ct = xasprintf("Content-Type: %s", ctype ? ctype : "application/json");
    const char *headers[] = {p->auth_header, ct, NULL};
    int rc = rest_call(&p->rest, method, url, url, headers, body, status, resp, e);
    free(ct);
    return rc;
}

/* The "message" of a PAI error body ({"code": ..., "message": ...}), else the body. */
static void error_text(const char *body, char *out, size_t outlen)
{
    cJSON *j = cJSON_Parse(body);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
    snprintf(out, outlen, "%.300s", cJSON_IsString(m) ? m->valuestring : body);
    for (char *q = out; *q; q++)
        if (*q == '\n' || *q == '\r')
            *q = ' ';
    cJSON_Delete(j);
}

static char *job_url(struct pai *p, const char *name, const char *suffix)
{
    char *u = curl_easy_escape(p->rest.curl, p->user, 0);
    char *n = curl_easy_escape(p->rest.curl, name, 0);
    char *url = xasprintf("%s/rest-server/api/v2/jobs/%s~%s%s", p->host, u, n, suffix);
    curl_free(u);
    curl_free(n);
    return url;
}

static int transient(long status)
{
    return status >= 500 || status == 429 || status == 408;
}

/* ---------------- configuration ---------------- */

static const char *cfg_str(struct worker *w, const char *key)
{
    const cJSON *v = worker_config_item(w, key);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

static long long cfg_int(struct worker *w, const char *key, long long def)
{
    const cJSON *v = worker_config_item(w, key);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : def;
}

/* The user's job protocol must name its task roles and their commands. */
static int check_protocol(const cJSON *proto, struct errbuf *e)
{
    const cJSON *roles = cJSON_GetObjectItemCaseSensitive(proto, "taskRoles");
    if (!cJSON_IsObject(roles) || !roles->child)
        return errf(e, "trainingService.openpaiConfig: taskRoles must be a mapping of one or more task roles");
    const cJSON *r;
    cJSON_ArrayForEach(r, roles) {
        const cJSON *cmds = cJSON_GetObjectItemCaseSensitive(r, "commands");
        int ok = cJSON_IsArray(cmds) && cmds->child;
        const cJSON *c;
        cJSON_ArrayForEach(c, cmds) ok = ok && cJSON_IsString(c);
        if (!ok)
            return errf(e, "trainingService.openpaiConfig.taskRoles.%s.commands must be a list of command strings",
                        r->string);
    }
    return 0;
}

static void pai_free(struct pai *p)
{
    if (!p)
        return;
    free(p->host);
    free(p->user);
    free(p->token);
    free(p->auth_header);
    free(p->local_root);
    free(p->cont_root);
    free(p->image);
    free(p->vc);
    free(p->storage);
    cJSON_Delete(p->protocol);
    if (p->rest.curl)
        curl_easy_cleanup(p->rest.curl);
    nas_jobs_free(&p->jobs);
    job_listing_reset(&p->listed);
    free(p);
}

/* Checks the token with a call every user may make (the user's job list), trying a few
 * times when the server does not answer. 0 ok; -1 with e; *rejected set on 401/403. */
static int probe_auth(struct pai *p, int *rejected, struct errbuf *e)
{
    char *u = curl_easy_escape(p->rest.curl, p->user, 0);
    char *url = xasprintf("%s/rest-server/api/v2/jobs?username=%s", p->host, u);
    curl_free(u);
    *rejected = 0;
    int rc = -1;
    int64_t wait = BACKOFF_MIN_MS;
    for (int tries = 0; tries < 4; tries++) {
        long status = 0;
        char *body = NULL;
        if (tries)
            usleep((useconds_t)wait * 1000), wait *= 2;
        p->rest.down_until = 0; /* this loop paces itself */
        if (http(p, "GET", url, NULL, NULL, &status, &body, e) < 0) {
            log_warn("OpenPAI at %s does not answer: %s", p->host, e->msg);
            continue;
        }
        char msg[320];
        error_text(body, msg, sizeof msg);
        free(body);
        if (status == 401 || status == 403) {
            *rejected = 1;
            errf(e, "openpai: %s rejected the token of user '%s' (HTTP %ld: %s); put a valid token (OpenPAI "
                 "portal: Profile > Tokens) into trainingService.token", p->host, p->user, status, msg);
            goto out;
        }
        if (transient(status)) {
            errf(e, "OpenPAI at %s answered HTTP %ld: %s", p->host, status, msg);
            log_warn("%s", e->msg);
            continue;
        }
        if (status >= 300) {
            errf(e, "openpai: GET %s answered HTTP %ld (%s); is trainingService.host the address of the "
                 "OpenPAI portal?", url, status, msg);
            goto out;
        }
        rc = 0;
        goto out;
    }
    errprefix(e, "openpai: cannot reach the REST server at %s", p->host);
out:
    free(url);
    return rc;
}

static char *host_url(const char *host)
{
    char *h = strstr(host, "://") ? xstrdup(host) : xasprintf("https://%s", host);
    for (size_t n = strlen(h); n && h[n - 1] == '/'; n--)
        h[n - 1] = '\0';
    return h;
}

static void set_timeout(struct pai *p)
{
    const char *tmo = getenv("TRIALQ_OPENPAI_TIMEOUT"); /* seconds; tests shorten it */
    p->rest.timeout_ms = tmo && atof(tmo) > 0 ? (long)(atof(tmo) * 1000) : 15000;
}

/* nnictl create: tries the OpenPAI token of a trainingService entry (one GET); fails with a
 * clear message when it is rejected or the REST server cannot be reached. */
static int openpai_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    (void)ops;
    (void)config;
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(ts, "host");
    const cJSON *user = cJSON_GetObjectItemCaseSensitive(ts, "username");
    const cJSON *token = cJSON_GetObjectItemCaseSensitive(ts, "token");
    if (!cJSON_IsString(host) || !cJSON_IsString(user) || !cJSON_IsString(token))
        return errf(e, "openpai: host, username and token are required");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct pai *p = xcalloc(1, sizeof *p);
    p->host = host_url(host->valuestring);
    p->user = xstrdup(user->valuestring);
    p->auth_header = xasprintf("Authorization: Bearer %s", token->valuestring);
    set_timeout(p);
    p->rest.curl = curl_easy_init();
    p->rest.follow_redirects = 1;
    int rejected = 0;
    int rc = p->rest.curl ? probe_auth(p, &rejected, e) : errf(e, "cannot initialise libcurl");
    pai_free(p);
    curl_global_cleanup();
    return rc;
}

static int openpai_init(struct worker *w, struct errbuf *e)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct pai *p = xcalloc(1, sizeof *p);
    w->platform = p;
    const char *host = cfg_str(w, "host"), *user = cfg_str(w, "username"), *token = cfg_str(w, "token");
    const char *lm = cfg_str(w, "localStorageMountPoint"), *cm = cfg_str(w, "containerStorageMountPoint");
    const char *storage = cfg_str(w, "storageConfigName");
    if (!host || !user || !token || !lm || !cm || !storage) {
        errf(e, "trainingService (openpai): host, username, token, storageConfigName, localStorageMountPoint "
                "and containerStorageMountPoint are required");
        goto fail;
    }
    p->host = host_url(host);
    p->user = xstrdup(user);
    p->token = xstrdup(token);
    p->auth_header = xasprintf("Authorization: Bearer %s", token);
    p->storage = xstrdup(storage);
    p->image = xstrdup(cfg_str(w, "dockerImage") ? cfg_str(w, "dockerImage") : "msranni/nni:latest");
    p->vc = cfg_str(w, "virtualCluster") ? xstrdup(cfg_str(w, "virtualCluster")) : NULL;
    p->cpu = cfg_int(w, "trialCpuNumber", 1);
    p->gpu = cfg_int(w, "trialGpuNumber", 0);
    p->mem_mb = pai_size_mb(worker_config_item(w, "trialMemorySize"));
    if (p->mem_mb <= 0) {
        errf(e, "trainingService.trialMemorySize: not a size (e.g. \"8gb\")");
        goto fail;
    }
    const cJSON *proto = worker_config_item(w, "openpaiConfig");
    if (cJSON_IsObject(proto)) {
        if (check_protocol(proto, e) < 0) {
            nas_report_fatal(w, e->msg);
            goto fail;
        }
        p->protocol = cJSON_Duplicate(proto, 1);
    }
    set_timeout(p);
    p->rest.curl = curl_easy_init();
    p->rest.follow_redirects = 1;
    if (!p->rest.curl) {
        errf(e, "cannot initialise libcurl");
        goto fail;
    }
    struct stat st;
    if (stat(lm, &st) < 0 || !S_ISDIR(st.st_mode)) {
        char *m = xasprintf("trainingService.localStorageMountPoint: %s is not a directory (the OpenPAI storage "
                            "'%s' must be mounted there on this host)", lm, storage);
        nas_report_fatal(w, m);
        errf(e, "%s", m);
        free(m);
        goto fail;
    }
    if (nas_exp_roots(w, lm, cm, &p->local_root, &p->cont_root, e) < 0)
        goto fail;
    int rejected = 0;
    if (probe_auth(p, &rejected, e) < 0) {
        if (rejected) /* it will not get better by itself: the experiment says why */
            nas_report_fatal(w, e->msg);
        goto fail;
    }
    if (nas_ship_code(w, p->local_root, e) < 0) {
        nas_report_fatal(w, e->msg);
        goto fail;
    }
    log_info("OpenPAI %s as %s; storage %s -> %s", p->host, p->user, p->local_root, p->cont_root);
    return 0;
fail:
    pai_free(p);
    w->platform = NULL;
    return -1;
}

static void openpai_destroy(struct worker *w)
{
    pai_free(w->platform);
    w->platform = NULL;
    curl_global_cleanup();
}

/* ---------------- jobs ---------------- */

static char *local_dir(struct pai *p, const struct trial *t)
{
    return nas_trial_dir(p->local_root, t);
}

static struct nas_job *job_of(struct pai *p, const struct trial *t)
{
    return nas_job_of(&p->jobs, t, NULL);
}

static char *marker_path(struct pai *p, const struct trial *t)
{
    char *d = local_dir(p, t);
    char *m = xasprintf("%s/.nni/submitted", d);
    free(d);
    return m;
}

static char *protocol_yaml(struct worker *w, struct pai *p, const struct trial *t, const char *name)
{
    cJSON *j;
    if (p->protocol) {
        /* the user's protocol, renamed; each role's commands become one NNI command */
        j = cJSON_Duplicate(p->protocol, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(j, "name");
        cJSON_AddStringToObject(j, "name", name);
        cJSON *roles = cJSON_GetObjectItemCaseSensitive(j, "taskRoles"), *r;
        cJSON_ArrayForEach(r, roles) {
            struct strbuf joined;
            sb_init(&joined);
            const cJSON *c;
            cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(r, "commands")) {
                if (joined.len)
                    sb_puts(&joined, " && ");
                sb_puts(&joined, c->valuestring);
            }
            char *jc = sb_detach(&joined);
            char *line = nas_job_command(w, p->cont_root, t, "pai", jc);
            cJSON *cmds = cJSON_CreateArray();
            cJSON_AddItemToArray(cmds, cJSON_CreateString(line));
            cJSON_ReplaceItemInObjectCaseSensitive(r, "commands", cmds);
            free(jc);
            free(line);
        }
    } else {
        const cJSON *tc = worker_config_item(w, "trialCommand");
        char *line = nas_job_command(w, p->cont_root, t, "pai", cJSON_IsString(tc) ? tc->valuestring : "false");
        j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "protocolVersion", 2);
        cJSON_AddStringToObject(j, "name", name);
        cJSON_AddStringToObject(j, "type", "job");
        cJSON_AddNumberToObject(j, "jobRetryCount", 0);
        cJSON *pre = cJSON_AddArrayToObject(j, "prerequisites");
        cJSON *img = cJSON_CreateObject();
        cJSON_AddStringToObject(img, "type", "dockerimage");
        cJSON_AddStringToObject(img, "uri", p->image);
        cJSON_AddStringToObject(img, "name", "docker_image_0");
        cJSON_AddItemToArray(pre, img);
        cJSON *role = cJSON_AddObjectToObject(cJSON_AddObjectToObject(j, "taskRoles"), "taskrole");
        cJSON_AddNumberToObject(role, "instances", 1);
        cJSON *comp = cJSON_AddObjectToObject(role, "completion");
        cJSON_AddNumberToObject(comp, "minFailedInstances", 1);
        cJSON_AddNumberToObject(comp, "minSucceededInstances", -1);
        cJSON_AddNumberToObject(role, "taskRetryCount", 0);
        cJSON_AddStringToObject(role, "dockerImage", "docker_image_0");
        cJSON *res = cJSON_AddObjectToObject(role, "resourcePerInstance");
        cJSON_AddNumberToObject(res, "gpu", (double)p->gpu);
        cJSON_AddNumberToObject(res, "cpu", (double)p->cpu);
        cJSON_AddNumberToObject(res, "memoryMB", (double)p->mem_mb);
        cJSON *cmds = cJSON_AddArrayToObject(role, "commands");
        cJSON_AddItemToArray(cmds, cJSON_CreateString(line));
        free(line);
        cJSON *extras = cJSON_AddObjectToObject(j, "extras");
        cJSON *st = cJSON_CreateObject();
        cJSON_AddStringToObject(st, "name", p->storage);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(extras, "storages"), st);
        cJSON_AddStringToObject(extras, "submitFrom", "submit-job-v2");
        if (p->vc)
            cJSON_AddStringToObject(cJSON_AddObjectToObject(j, "defaults"), "virtualCluster", p->vc);
    }
    struct strbuf sb;
    sb_init(&sb);
    pai_yaml_emit(&sb, j);
    cJSON_Delete(j);
    return sb_detach(&sb);
}

/* GET the job by name, POST it when absent. 1: the job exists (created or re-attached);
 * 0: no answer or a 5xx (e says which: try again later); -1: PAI refused it (e). */
static int try_submit(struct worker *w, struct nas_job *j, const struct trial *t, struct errbuf *e)
{
    struct pai *p = w->platform;
    char *name = nas_job_name(w->exp_id, t);
    char *url = job_url(p, name, "");
    char *body = NULL, msg[320];
    long status = 0;
    int rc = 0;
    struct errbuf he;
    if (http(p, "GET", url, NULL, NULL, &status, &body, &he) < 0) {
        errf(e, "submit (GET job): %s", he.msg);
        goto out;
    }
    if (status == 200) {
        log_info("trial %s: re-attached to OpenPAI job %s", t->id, name);
        rc = 1;
        goto accepted;
    }
    if (status != 404) {
        error_text(body, msg, sizeof msg);
        if (transient(status)) {
            errf(e, "submit (GET job): HTTP %ld: %s", status, msg);
            goto out;
        }
        rc = errf(e, "OpenPAI answered HTTP %ld to GET %s: %s", status, url, msg);
        goto out;
    }
    free(body);
    body = NULL;
    char *yaml = protocol_yaml(w, p, t, name);
    char *post = xasprintf("%s/rest-server/api/v2/jobs", p->host);
    int hr = http(p, "POST", post, "text/yaml", yaml, &status, &body, &he);
    free(yaml);
    free(post);
    if (hr < 0) {
        /* the job may exist now: the next try asks for it first */
        errf(e, "submit (POST job): %s", he.msg);
        goto out;
    }
    if (status < 300 || status == 409) {
        log_info("trial %s: %s OpenPAI job %s", t->id, status == 409 ? "re-attached to" : "submitted", name);
        rc = 1;
        goto accepted;
    }
    error_text(body, msg, sizeof msg);
    if (transient(status)) {
        errf(e, "submit (POST job): HTTP %ld: %s", status, msg);
        goto out;
    }
    if (status == 401 || status == 403)
        rc = errf(e, "OpenPAI %s rejected the token of user '%s' (HTTP %ld: %s)", p->host, p->user, status, msg);
    else
        rc = errf(e, "OpenPAI refused job %s (HTTP %ld: %s)", name, status, msg);
    goto out;
accepted: {
        char *m = marker_path(p, t);
        if (access(m, F_OK) < 0 && write_file_replace(m, name, strlen(name), 0644) < 0)
            log_warn("cannot write %s: %s", m, strerror(errno));
        free(m);
        j->need_submit = 0;
    }
out:
    free(body);
    free(url);
    free(name);
    return rc;
}

static int openpai_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    struct pai *p = w->platform;
    return nas_submit(w, &p->jobs, job_of(p, t), p->local_root, "OpenPAI", try_submit, t, job_id, trial_dir, e);
}

static int64_t json_ms(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
}

/* The job's state as PAI reports it: the body of a GET that answered 200 (its
 * jobStatus), or an entry of the user's job list (flat). */
static void job_reported(struct worker *w, struct trial *t, const char *dir, const cJSON *job,
                         struct job_state *js)
{
    struct errbuf e;
    const cJSON *jst = cJSON_GetObjectItemCaseSensitive(job, "jobStatus");
    if (!jst)
        jst = job;
    const cJSON *stv = cJSON_GetObjectItemCaseSensitive(jst, "state");
    const char *state = cJSON_IsString(stv) ? stv->valuestring : "UNKNOWN";
    int64_t done_ms = json_ms(jst, "completedTime");
    if (strcmp(state, "SUCCEEDED") == 0 || strcmp(state, "FAILED") == 0) {
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(jst, "appExitCode");
        nas_job_ended(dir, t->attempt, strcmp(state, "SUCCEEDED") == 0, cJSON_IsNumber(code) ? code->valueint : 0,
                      done_ms, js);
    } else if (strcmp(state, "STOPPED") == 0) {
        /* stopped on the cluster, not by us: NNI's SYS_CANCELED */
        if (!t->kill_request && trial_request_kill(w->db, t->id, "SYS_CANCELED", "job stopped on OpenPAI", &e) < 0)
            log_warn("trial %s: %s", t->id, e.msg);
        js->finished = 1;
        js->signal = SIGTERM;
        js->end_time = done_ms ? done_ms : now_ms();
    }
}

/* PAI does not know the job (404): it vanished once accepted; one never accepted ended
 * if a kill was asked for, else is submitted (again) by the next poll. */
static void job_unknown(struct pai *p, struct nas_job *j, struct trial *t, const char *name,
                        struct job_state *js)
{
    char *m = marker_path(p, t);
    int accepted = access(m, F_OK) == 0;
    free(m);
    if (accepted) {
        log_warn("trial %s: OpenPAI no longer knows job %s", t->id, name);
        js->vanished = 1;
        snprintf(js->why, sizeof js->why, "OpenPAI no longer knows job %s", name);
    } else if (t->kill_request) {
        js->finished = 1; /* cancelled before it was ever submitted */
        js->signal = SIGTERM;
        js->end_time = now_ms();
    } else {
        j->need_submit = 1; /* never accepted: submit it now */
    }
}

/* The loop paces the calls: a failed one (no answer, 5xx) returns -1 and is tried again
 * after its back-off. */
static int openpai_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    struct pai *p = w->platform;
    memset(js, 0, sizeof *js);
    struct nas_job *j = job_of(p, t);
    if (j->need_submit && !t->kill_request) {
        struct errbuf se;
        int s = try_submit(w, j, t, &se);
        if (s < 0) {
            /* PAI refused it for good: the trial fails with PAI's reason */
            js->finished = 1;
            js->exit_code = 1;
            js->end_time = now_ms();
            snprintf(js->why, sizeof js->why, "%.500s", se.msg);
            nas_job_forget(&p->jobs, t->id);
        }
        return s == 0 ? errf(e, "%s", se.msg) : 0;
    }
    char *name = nas_job_name(w->exp_id, t);
    char *dir = local_dir(p, t);
    const cJSON *listed = job_listing_find(&p->listed, name);
    if (listed) { /* the user's job list of this pass has it: no call of its own */
        j->need_submit = 0;
        job_reported(w, t, dir, listed, js);
        if (js->finished || js->vanished)
            nas_job_forget(&p->jobs, t->id);
        free(name);
        free(dir);
        return 0;
    }
    /* not listed (or no listing): a GET of the job confirms that it is gone */
    char *url = job_url(p, name, "");
    char *body = NULL, msg[320];
    long status = 0;
    struct errbuf he;
    int rc = 0;
    if (http(p, "GET", url, NULL, NULL, &status, &body, &he) < 0) {
        rc = errf(e, "status: %s", he.msg);
    } else if (status == 404) {
        job_unknown(p, j, t, name, js);
    } else if (status != 200) {
        error_text(body, msg, sizeof msg);
        rc = errf(e, "status: HTTP %ld: %s", status, msg);
    } else {
        j->need_submit = 0;
        cJSON *job = cJSON_Parse(body);
        job_reported(w, t, dir, job, js);
        cJSON_Delete(job);
    }
    if (js->finished || js->vanished)
        nas_job_forget(&p->jobs, t->id);
    free(body);
    free(url);
    free(name);
    free(dir);
    return rc;
}

/* PUT STOP: 0 once PAI took it (or no longer knows the job), -1 to be tried again. */
static int openpai_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    struct pai *p = w->platform;
    struct nas_job *j = job_of(p, t);
    if (j->need_submit)
        /* not known to be on PAI: a poll finds it (then it is stopped) or not (it ends) */
        return errf(e, "stop: job not confirmed by OpenPAI yet");
    char *name = nas_job_name(w->exp_id, t);
    char *surl = job_url(p, name, "/executionType");
    char *body = NULL;
    long status = 0;
    struct errbuf he;
    int rc = 0;
    if (http(p, "PUT", surl, "application/json", "{\"value\":\"STOP\"}", &status, &body, &he) < 0)
        rc = errf(e, "stop: %s", he.msg);
    else if (status >= 300 && status != 404) /* 404: gone already; the poll tells */
        rc = errf(e, "stop: OpenPAI answered HTTP %ld", status);
    free(body);
    free(surl);
    free(name);
    return rc;
}

static int openpai_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    struct pai *p = w->platform;
    return nas_collect(w, t, p->local_root, at_end, e);
}

static int openpai_pending(struct worker *w, struct trial *t)
{
    struct pai *p = w->platform;
    return nas_pending(w, t, p->local_root);
}

/* The user's job list (GET .../jobs?username=U: every job of the user, each with its
 * name and state), as a new JSON array, or NULL (e says why). */
static cJSON *list_jobs(struct pai *p, int *refused, struct errbuf *e)
{
    *refused = 0;
    char *u = curl_easy_escape(p->rest.curl, p->user, 0);
    char *url = xasprintf("%s/rest-server/api/v2/jobs?username=%s", p->host, u);
    curl_free(u);
    long status = 0;
    char *body = NULL;
    int rc = http(p, "GET", url, NULL, NULL, &status, &body, e);
    free(url);
    if (rc < 0)
        return NULL;
    if (status != 200) {
        char msg[320];
        error_text(body, msg, sizeof msg);
        free(body);
        errf(e, "listing the jobs of %s: HTTP %ld: %s", p->user, status, msg);
        *refused = status != 401 && !transient(status); /* no such call, not allowed */
        return NULL;
    }
    cJSON *list = cJSON_Parse(body);
    free(body);
    if (!cJSON_IsArray(list)) {
        cJSON_Delete(list);
        errf(e, "listing the jobs of %s: the answer is not a JSON list", p->user);
        return NULL;
    }
    return list;
}

/* The batched poll: one list call per poll interval for the user's jobs; those of this
 * experiment (name prefix nni_exp_<exp>_) are kept for openpai_poll. */
static int openpai_poll_all(struct worker *w, struct errbuf *e)
{
    struct pai *p = w->platform;
    job_listing_reset(&p->listed);
    int refused;
    cJSON *list = list_jobs(p, &refused, e); /* not tried while rest_call backs off */
    if (!list)
        return refused ? POLL_ALL_REFUSED : -1;
    char *prefix = xasprintf("nni_exp_%s_", w->exp_id);
    cJSON *it;
    cJSON_ArrayForEach(it, list) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
        if (cJSON_IsString(n) && str_starts(n->valuestring, prefix))
            job_listing_add(&p->listed, n->valuestring, cJSON_Duplicate(it, 1));
    }
    job_listing_seal(&p->listed);
    free(prefix);
    cJSON_Delete(list);
    return 0;
}

/* nnictl stop: STOP every live job of the experiment the user has on PAI, also jobs the
 * database lost track of (found by the name prefix nni_exp_<exp>_). */
static int openpai_cleanup(struct worker *w, struct errbuf *e)
{
    struct pai *p = w->platform;
    long status = 0;
    int refused;
    cJSON *list = list_jobs(p, &refused, e);
    if (!list)
        return -1;
    char *prefix = xasprintf("nni_exp_%s_", w->exp_id);
    const cJSON *it;
    int failed = 0;
    cJSON_ArrayForEach(it, list) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "state");
        if (!cJSON_IsString(n) || !str_starts(n->valuestring, prefix) || !cJSON_IsString(st) ||
            (strcmp(st->valuestring, "WAITING") != 0 && strcmp(st->valuestring, "RUNNING") != 0))
            continue;
        char *surl = job_url(p, n->valuestring, "/executionType");
        struct errbuf he;
        char *resp = NULL;
        if (http(p, "PUT", surl, "application/json", "{\"value\":\"STOP\"}", &status, &resp, &he) < 0 ||
            status >= 300) {
            failed++;
            char shown[SNIPPET_SIZE];
            const char *why = resp ? resp : he.msg;
            log_warn("cannot stop OpenPAI job %s: %s", n->valuestring, snippet(shown, why, strlen(why)));
        } else {
            log_info("stopped OpenPAI job %s", n->valuestring);
        }
        free(resp);
        free(surl);
    }
    free(prefix);
    cJSON_Delete(list);
    return failed ? errf(e, "%d OpenPAI job(s) of the experiment could not be stopped", failed) : 0;
}

const struct platform_ops platform_openpai = {
    .name = "openpai",
    .init = openpai_init,
    .preflight = openpai_preflight,
    .submit = openpai_submit,
    .reaped = NULL,
    .poll = openpai_poll,
    .poll_all = openpai_poll_all,
    .kill = openpai_kill,
    .collect = openpai_collect,
    .pending = openpai_pending,
    .destroy = openpai_destroy,
    .poll_ms = POLL_MS,
    .submit_rate = 20, /* new jobs per second (TRIALQ_SUBMIT_RATE) */
    .cleanup = openpai_cleanup,
    .gpu_mode = PLATFORM_GPU_OWN,
};
