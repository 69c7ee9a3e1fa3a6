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
#include <unistd.h>

#include "workers/rest/openpai.h"
#include "workers/rest/rest.h"

/* NNI polls PAI every 3 s; the skeleton, every second (REST_PLATFORM_OPS) */

struct pai {
    struct rest_base b; /* redirects followed, as NNI; the token is not sent to other hosts */
    char *host, *user, *token, *auth_header;
    char *image, *vc, *storage;
    long long cpu, gpu, mem_mb;
    cJSON *protocol; /* openpaiConfig: the user's job protocol, or NULL */
};

/* ---------------- HTTP ---------------- */

/* One request. Returns 0 when the server answered (*status set, *resp the body, caller
 * frees), -1 when no answer came (refused, timeout, TLS; e says which). */
static int http(struct pai *p, const char *method, const char *url, const char *ctype, const char *body,
                long *status, char **resp, struct errbuf *e)
{
    char *ct = xasprintf("Content-Type: %s", ctype ? ctype : "application/json");
    const char *headers[] = {p->auth_header, ct, NULL};
    int rc = rest_call(&p->b.rest, method, url, url, headers, body, status, resp, e);
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
    char *u = curl_easy_escape(p->b.rest.curl, p->user, 0);
    char *n = curl_easy_escape(p->b.rest.curl, name, 0);
    char *url = xasprintf("%s/rest-server/api/v2/jobs/%s~%s%s", p->host, u, n, suffix);
    curl_free(u);
    curl_free(n);
    return url;
}

/* ---------------- configuration ---------------- */

static long long cfg_int(const cJSON *ts, const cJSON *config, const char *key, long long def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ts, key);
    if (!v || cJSON_IsNull(v))
        v = cJSON_GetObjectItemCaseSensitive(config, key);
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

static void pai_close(struct rest_base *b)
{
    struct pai *p = (struct pai *)b;
    free(p->host);
    free(p->user);
    free(p->token);
    free(p->auth_header);
    free(p->image);
    free(p->vc);
    free(p->storage);
    cJSON_Delete(p->protocol);
    free(p);
}

/* Checks the token with a call every user may make (the user's job list): 0 ok; 1 no
 * answer or a passing refusal (e); -1 with e (*fatal set on 401/403). */
static int probe_once(struct rest_base *b, int *fatal, struct errbuf *e)
{
    struct pai *p = (struct pai *)b;
    char *u = curl_easy_escape(p->b.rest.curl, p->user, 0);
    char *url = xasprintf("%s/rest-server/api/v2/jobs?username=%s", p->host, u);
    curl_free(u);
    long status = 0;
    char *body = NULL, msg[320];
    int rc = 1;
    if (http(p, "GET", url, NULL, NULL, &status, &body, e) < 0) {
        errprefix(e, "OpenPAI at %s does not answer", p->host);
        goto out;
    }
    error_text(body, msg, sizeof msg);
    if (status == 401 || status == 403) {
        *fatal = 1;
        rc = errf(e, "openpai: %s rejected the token of user '%s' (HTTP %ld: %s); put a valid token (OpenPAI "
                  "portal: Profile > Tokens) into trainingService.token", p->host, p->user, status, msg);
    } else if (rest_transient(status)) {
        errf(e, "OpenPAI at %s answered HTTP %ld: %s", p->host, status, msg);
    } else if (status >= 300) {
        rc = errf(e, "openpai: GET %s answered HTTP %ld (%s); is trainingService.host the address of the "
                  "OpenPAI portal?", url, status, msg);
    } else {
        rc = 0;
    }
out:
    free(body);
    free(url);
    return rc;
}

static const char *unreachable(const struct rest_base *b, char *buf, size_t len)
{
    snprintf(buf, len, "openpai: cannot reach the REST server at %s", ((const struct pai *)b)->host);
    return buf;
}

static char *host_url(const char *host)
{
    char *h = strstr(host, "://") ? xstrdup(host) : xasprintf("https://%s", host);
    for (size_t n = strlen(h); n && h[n - 1] == '/'; n--)
        h[n - 1] = '\0';
    return h;
}

/* What only the worker needs: the job's resources and the user's job protocol. */
static int open_jobs(struct pai *p, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    const char *storage = rest_str(ts, config, "storageConfigName");
    if (!storage || !rest_str(ts, config, "localStorageMountPoint") ||
        !rest_str(ts, config, "containerStorageMountPoint"))
        return errf(e, "trainingService (openpai): host, username, token, storageConfigName, "
                       "localStorageMountPoint and containerStorageMountPoint are required");
    p->storage = xstrdup(storage);
    const char *image = rest_str(ts, config, "dockerImage"), *vc = rest_str(ts, config, "virtualCluster");
    p->image = xstrdup(image ? image : "msranni/nni:latest");
    p->vc = vc ? xstrdup(vc) : NULL;
    p->cpu = cfg_int(ts, config, "trialCpuNumber", 1);
    p->gpu = cfg_int(ts, config, "trialGpuNumber", 0);
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(ts, "trialMemorySize");
    p->mem_mb = pai_size_mb(mem && !cJSON_IsNull(mem) ? mem : cJSON_GetObjectItemCaseSensitive(config, "trialMemorySize"));
    if (p->mem_mb <= 0)
        return errf(e, "trainingService.trialMemorySize: not a size (e.g. \"8gb\")");
    const cJSON *proto = cJSON_GetObjectItemCaseSensitive(ts, "openpaiConfig");
    if (cJSON_IsObject(proto)) {
        if (check_protocol(proto, e) < 0)
            return -1;
        p->protocol = cJSON_Duplicate(proto, 1);
    }
    return 0;
}

/* The connection of a trainingService entry; w: also what the worker needs. */
static struct rest_base *pai_open(struct worker *w, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    const char *host = rest_str(ts, config, "host"), *user = rest_str(ts, config, "username");
    const char *token = rest_str(ts, config, "token");
    if (!host || !user || !token) {
        errf(e, w ? "trainingService (openpai): host, username, token, storageConfigName, localStorageMountPoint "
                    "and containerStorageMountPoint are required"
                  : "openpai: host, username and token are required");
        return NULL;
    }
    struct pai *p = xcalloc(1, sizeof *p);
    p->host = host_url(host);
    p->user = xstrdup(user);
    p->token = xstrdup(token);
    p->auth_header = xasprintf("Authorization: Bearer %s", token);
    const char *tmo = getenv("TRIALQ_OPENPAI_TIMEOUT"); /* seconds; tests shorten it */
    p->b.rest.timeout_ms = tmo && atof(tmo) > 0 ? (long)(atof(tmo) * 1000) : 15000;
    p->b.rest.curl = curl_easy_init();
    p->b.rest.follow_redirects = 1;
    if (!p->b.rest.curl || (w && open_jobs(p, ts, config, e) < 0)) {
        if (!p->b.rest.curl)
            errf(e, "cannot initialise libcurl");
        rest_base_clear(&p->b);
        pai_close(&p->b);
        return NULL;
    }
    return &p->b;
}

static void describe(const struct rest_base *b)
{
    const struct pai *p = (const struct pai *)b;
    log_info("OpenPAI %s as %s; storage %s -> %s", p->host, p->user, p->b.local_root, p->b.cont_root);
}

/* ---------------- jobs ---------------- */

static char *marker_path(struct pai *p, const struct trial *t)
{
    char *d = nas_trial_dir(p->b.local_root, t);
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
            char *line = nas_job_command(w, p->b.cont_root, t, "pai", jc);
            cJSON *cmds = cJSON_CreateArray();
            cJSON_AddItemToArray(cmds, cJSON_CreateString(line));
            cJSON_ReplaceItemInObjectCaseSensitive(r, "commands", cmds);
            free(jc);
            free(line);
        }
    } else {
        const cJSON *tc = worker_config_item(w, "trialCommand");
        char *line = nas_job_command(w, p->b.cont_root, t, "pai", cJSON_IsString(tc) ? tc->valuestring : "false");
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
        if (rest_transient(status)) {
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
    if (rest_transient(status)) {
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
static void job_unknown(struct worker *w, struct nas_job *j, struct trial *t, const char *name,
                        struct job_state *js)
{
    struct pai *p = w->platform;
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

/* While PAI has not confirmed the job: it is submitted (again); a trial killed meanwhile
 * goes on to the GET of its job (job_unknown ends it when PAI does not know it). */
static int unconfirmed(struct worker *w, struct nas_job *j, const struct trial *t, struct job_state *js, int *rc,
                       struct errbuf *e)
{
    struct pai *p = w->platform;
    *rc = 0;
    return !t->kill_request && nas_poll_unconfirmed(w, &p->b.jobs, j, t, try_submit, NULL, js, rc, e);
}

/* The job's own GET (the user's job list lacks it): confirms that it is gone. */
static int get_job(struct rest_base *b, const char *name, cJSON **job, struct errbuf *e)
{
    struct pai *p = (struct pai *)b;
    char *url = job_url(p, name, "");
    char *body = NULL, msg[320];
    long st = 0;
    int rc = 1;
    if (http(p, "GET", url, NULL, NULL, &st, &body, e) < 0) {
        rc = -1;
    } else if (st == 404) {
        rc = 0;
    } else if (st != 200) {
        error_text(body, msg, sizeof msg);
        rc = errf(e, "HTTP %ld: %s", st, msg);
    } else {
        *job = cJSON_Parse(body);
    }
    free(body);
    free(url);
    return rc;
}

/* PUT STOP: 0 once PAI took it (or no longer knows the job), -1 to be tried again. */
static int stop(struct rest_base *b, const char *name, struct errbuf *e)
{
    struct pai *p = (struct pai *)b;
    char *surl = job_url(p, name, "/executionType");
    char *body = NULL;
    long st = 0;
    struct errbuf he;
    int rc = 0;
    if (http(p, "PUT", surl, "application/json", "{\"value\":\"STOP\"}", &st, &body, &he) < 0)
        rc = errf(e, "stop: %s", he.msg);
    else if (st >= 300 && st != 404) /* 404: gone already; the poll tells */
        rc = errf(e, "stop: OpenPAI answered HTTP %ld", st);
    free(body);
    free(surl);
    return rc;
}

/* The user's job list (GET .../jobs?username=U: every job of the user, each with its
 * name and state), as a new JSON array, or NULL (e says why). */
static cJSON *list_jobs(struct pai *p, int *refused, struct errbuf *e)
{
    *refused = 0;
    char *u = curl_easy_escape(p->b.rest.curl, p->user, 0);
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
        *refused = status != 401 && !rest_transient(status); /* no such call, not allowed */
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

/* The user's jobs of this experiment (name prefix nni_exp_<exp>_) from one list call,
 * by name (a list PAI does not serve, or not to this user: never listed). */
static int list(struct rest_base *b, const char *exp_id, int wide, struct job_listing *l, struct errbuf *e)
{
    (void)wide; /* the list has every job of the user */
    struct pai *p = (struct pai *)b;
    job_listing_reset(l);
    int refused;
    cJSON *jobs = list_jobs(p, &refused, e); /* not tried while rest_call backs off */
    if (!jobs)
        return refused ? POLL_ALL_REFUSED : -1;
    char *prefix = xasprintf("nni_exp_%s_", exp_id);
    cJSON *it;
    cJSON_ArrayForEach(it, jobs) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "name");
        if (cJSON_IsString(n) && str_starts(n->valuestring, prefix))
            job_listing_add(l, n->valuestring, cJSON_Duplicate(it, 1));
    }
    free(prefix);
    cJSON_Delete(jobs);
    return 0;
}

static int live(const cJSON *job)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(job, "state");
    return cJSON_IsString(st) && (strcmp(st->valuestring, "WAITING") == 0 || strcmp(st->valuestring, "RUNNING") == 0);
}

static const struct rest_flavour openpai = {
    .name = "openpai", .label = "OpenPAI", .service = "OpenPAI", .marker = NULL,
    .mount_noun = "directory", .mount_what = "the OpenPAI storage (storageConfigName)", .cont_mount = 1,
    .stop_verb = "stop", .stopped = "stopped",
    .open = pai_open, .close = pai_close, .probe_once = probe_once, .unreachable = unreachable,
    .describe = describe, .try_submit = try_submit, .unconfirmed = unconfirmed, .get = get_job,
    .unknown = job_unknown,
    .reported = job_reported, .list = list, .live = live, .stop = stop,
};

const struct platform_ops platform_openpai = REST_PLATFORM_OPS("openpai", openpai);
