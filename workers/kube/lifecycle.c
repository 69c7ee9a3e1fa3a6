/* kube/lifecycle.c: the Kubernetes platforms' setup: the state of a platform from its
 * flavour and trainingService entry, init, preflight, destroy and cleanup (nnictl stop);
 * the rest of what they share is in the files workers/kube/skeleton.h names
 * (workers/kube/kubeflow.c, frameworkcontroller.c and adl.c hold what is theirs, in a struct
 * kube_flavour): one custom resource per trial, named as NNI names it, labelled
 * app=nni-kubernetes-trial, expId, trialId.
 *
 * The trial files live on the shared storage (an NFS export or Azure file share that is
 * mounted on this host at <L>; pods see it at /tmp/mount, adl at nfs.containerMountPath):
 *   <L>/nni/<exp>/nni-code/                 the code directory, copied once
 *   <L>/nni/<exp>/<trial>/parameter.cfg     written before the job is created
 *   <L>/nni/<exp>/<trial>/run_<role>.sh     the launch script of each role
 *   <L>/nni/<exp>/<trial>/output/<role>_output/trial.stdout   NNISDK_MEb lines: metrics
 *   <L>/nni/<exp>/<trial>/.nni/created      the custom resource exists (or existed)
 * Metrics are pulled from there, so pods never need to reach the manager.
 *
 * Submission is idempotent by name: a 409 with our trialId label is adoption. A
 * transient failure (no answer, 5xx) does not fail the trial: poll creates the job
 * later, with back-off; ".nni/created" tells "never created" from "vanished". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schema/worker_rows.h"
#include "workers/kube/skeleton.h"
#include "workers/nniignore.h"

/* ---------------- small helpers ---------------- */

char *kube_lower(const char *s)
{
    char *r = xstrdup(s);
    for (char *p = r; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return r;
}

/* NNI's memorySize: a number of MB or "512mb", "8gb", ... (units of 1024) -> MB. */
long long kube_memory_mb(const cJSON *v, long long def)
{
    if (cJSON_IsNumber(v))
        return (long long)v->valuedouble;
    if (!cJSON_IsString(v))
        return def;
    char *end;
    double x = strtod(v->valuestring, &end);
    while (*end == ' ')
        end++;
    double mult = 1.0 / (1024 * 1024);
    if (!strncasecmp(end, "k", 1)) mult = 1.0 / 1024;
    else if (!strncasecmp(end, "m", 1)) mult = 1;
    else if (!strncasecmp(end, "g", 1)) mult = 1024;
    else if (!strncasecmp(end, "t", 1)) mult = 1024 * 1024;
    long long mb = (long long)(x * mult + 0.5);
    return mb > 0 ? mb : 1;
}

char *kube_output_dir(const struct kube_state *ks, const char *base, const char *role)
{
    return ks->fl->scripts_on_share ? xasprintf("%s/output/%s_output", base, role) : xasprintf("%s/output", base);
}

char *kube_trial_local_dir(struct kube_state *ks, const char *id)
{
    return xasprintf("%s/%s", ks->local_root, id);
}

/* The trial's dir on the storage: the one recorded, else where submit puts it. */
char *kube_trial_dir_of(struct kube_state *ks, const struct trial *t)
{
    return t->trial_dir ? xstrdup(t->trial_dir) : kube_trial_local_dir(ks, t->id);
}

/* privateRegistryAuthPath -> a dockerconfigjson Secret, one per role and experiment. */
int kube_pull_secret(struct kube_state *ks, struct worker *w, struct kube_role *r, const char *file,
                     struct errbuf *e)
{
    size_t len;
    char *content = read_file(file, &len);
    if (!content)
        return errf(e, "privateRegistryAuthPath %s: %s", file, strerror(errno));
    char *rl = kube_lower(r->name);
    r->pull_secret = xasprintf("nni-secret-%s-%s", ks->exp_lower, rl);
    for (char *p = r->pull_secret; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
            *p = '-';
    free(rl);
    cJSON *sec = cJSON_CreateObject();
    cJSON_AddStringToObject(sec, "apiVersion", "v1");
    cJSON_AddStringToObject(sec, "kind", "Secret");
    cJSON *md = cJSON_AddObjectToObject(sec, "metadata");
    cJSON_AddStringToObject(md, "name", r->pull_secret);
    cJSON_AddStringToObject(md, "namespace", ks->ns);
    cJSON *lb = cJSON_AddObjectToObject(md, "labels");
    cJSON_AddStringToObject(lb, "app", APP_LABEL);
    cJSON_AddStringToObject(lb, "expId", w->exp_id);
    cJSON_AddStringToObject(sec, "type", "kubernetes.io/dockerconfigjson");
    char *b = b64_encode(content, len);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(sec, "data"), ".dockerconfigjson", b);
    free(b);
    free(content);
    char *path = xasprintf("/api/v1/namespaces/%s/secrets", ks->ns);
    long code;
    cJSON *resp = NULL;
    int rc = kube_request(&ks->conn, "POST", path, sec, &code, &resp, e);
    if (rc == 0 && code != 201 && code != 200 && code != 409)
        rc = kube_explain(ks, "creating the image pull Secret", code, resp, e);
    cJSON_Delete(resp);
    cJSON_Delete(sec);
    free(path);
    return rc;
}

/* ---------------- setup ---------------- */

static void state_free(struct kube_state *ks)
{
    if (!ks)
        return;
    kube_conn_clear(&ks->conn);
    free(ks->group); free(ks->version); free(ks->plural); free(ks->kindname); free(ks->container);
    free(ks->ns); free(ks->local_mount); free(ks->pod_mount); free(ks->local_root); free(ks->pod_root);
    free(ks->exp_lower);
    job_listing_reset(&ks->listed);
    cJSON_Delete(ks->volume);
    for (int i = 0; i < ks->nroles; i++) {
        free(ks->roles[i].name);
        free(ks->roles[i].spec_name);
        free(ks->roles[i].pull_secret);
    }
    free(ks->roles);
    free(ks);
}

void kube_add_role(struct kube_state *ks, const char *name, const char *spec_name, const cJSON *cfg)
{
    ks->roles = xrealloc(ks->roles, sizeof *ks->roles * (size_t)(ks->nroles + 1));
    struct kube_role *r = &ks->roles[ks->nroles++];
    memset(r, 0, sizeof *r);
    r->name = xstrdup(name);
    r->spec_name = spec_name ? xstrdup(spec_name) : NULL;
    r->cfg = cfg;
}

/* Everything that does not need the experiment's rows: kubeconfig, API, storage. */
static int setup(struct kube_state *ks, struct worker *w, const cJSON *ts, int check_only, struct errbuf *e)
{
    if (!ts)
        return errf(e, "no trainingService entry for platform %s", ks->platform);
    if (ks->fl->configure(ks, ts, e) < 0)
        return -1;
    if (kube_config_load(&ks->conn, e) < 0)
        return -1;
    /* an explicit namespace in the config wins; else the context's; else default */
    const char *ns = kube_jstr(ts, "namespace", NULL);
    if ((!ns || strcmp(ns, "default") == 0) && ks->conn.namespace)
        ns = ks->conn.namespace;
    ks->ns = xstrdup(ns ? ns : "default");
    if (kube_check_api(ks, e) < 0)
        return -1;
    return kube_setup_storage(ks, w, ts, check_only, e);
}

int kube_preflight(const struct kube_flavour *fl, const struct platform_ops *ops, const cJSON *config,
                   struct errbuf *e)
{
    struct worker w;
    memset(&w, 0, sizeof w);
    w.config = (cJSON *)config;
    w.ops = ops;
    struct kube_state *ks = xcalloc(1, sizeof *ks);
    ks->fl = fl;
    ks->platform = w.ops->name;
    int rc = setup(ks, &w, worker_ts_config(&w), 1, e);
    if (rc == 0) {
        /* the code directory is shipped: NNI's limits are checked now, not at the first trial */
        const cJSON *code = worker_config_item(&w, "trialCodeDirectory");
        struct code_list list;
        rc = code_list_build(cJSON_IsString(code) ? code->valuestring : ".", NULL, &list, e);
        if (rc == 0)
            code_list_free(&list);
    }
    if (rc < 0)
        errprefix(e, "%s", ops->name);
    state_free(ks);
    return rc;
}

int kube_init(struct worker *w, const struct kube_flavour *fl, struct errbuf *e)
{
    struct kube_state *ks = xcalloc(1, sizeof *ks);
    ks->fl = fl;
    ks->platform = w->ops->name;
    ks->exp_lower = kube_lower(w->exp_id);
    const char *pe = getenv("TRIALQ_KUBE_POLL_MS"); /* the loop polls each job this often */
    if (pe && atoi(pe) > 0)
        w->poll_ms = atoi(pe);
    const char *le = getenv("TRIALQ_KUBE_LIST_LIMIT"); /* jobs per page of a listing */
    ks->list_limit = le && atoi(le) > 0 ? atoi(le) : LIST_LIMIT;
    const cJSON *ts = worker_ts_config(w);
    if (setup(ks, w, ts, 0, e) < 0)
        goto fail;
    ks->local_root = xasprintf("%s/nni/%s", ks->local_mount, w->exp_id);
    ks->pod_root = xasprintf("%s/nni/%s", ks->pod_mount, w->exp_id);
    if (mkdir_p(ks->local_root, 0755) < 0) {
        errf(e, "cannot create %s on the shared storage: %s", ks->local_root, strerror(errno));
        goto fail;
    }
    if (!ks->volume && kube_azure_volume(ks, w, cJSON_GetObjectItemCaseSensitive(ts, ks->fl->storage_key), e) < 0)
        goto fail;
    {
        /* adl too (NNI ships no code there): trialCodeDirectory is a directory of this
         * host on every platform, and the share is there anyway */
        const cJSON *code = worker_config_item(w, "trialCodeDirectory");
        char *dst = xasprintf("%s/nni-code", ks->local_root);
        int rc = kube_copy_code(cJSON_IsString(code) ? code->valuestring : ".", dst, w->exp.config_file, e);
        free(dst);
        if (rc < 0)
            goto fail;
    }
    for (int i = 0; i < ks->nroles; i++) {
        const char *auth = kube_jstr(ks->roles[i].cfg, "privateRegistryAuthPath", NULL);
        if (auth && kube_pull_secret(ks, w, &ks->roles[i], auth, e) < 0)
            goto fail;
    }
    w->platform = ks;
    log_info("%s: API server %s (context %s), namespace %s, %s/%s %s; storage %s (pods: %s)", ks->platform,
             ks->conn.server, ks->conn.context, ks->ns, ks->group, ks->version, ks->plural, ks->local_mount,
             ks->pod_mount);
    return 0;
fail:
    /* the reason is also kept with the experiment, where nnictl and the UI show it */
    if (w->db) {
        char *msg = xasprintf("%s: %s", ks->platform, e->msg);
        struct errbuf xe;
        if (exp_add_error_once(w->db, w->exp_id, msg, &xe) < 0)
            log_warn("cannot keep the error with the experiment: %s", xe.msg);
        free(msg);
    }
    if (ks->we_mounted) {
        char *argv[] = {"umount", ks->local_mount, NULL};
        char *o = NULL, *er = NULL;
        run_capture(argv, TOOL_TIMEOUT_MS, &o, &er);
        free(o); free(er);
    }
    state_free(ks);
    return -1;
}

void kube_destroy(struct worker *w)
{
    state_free(w->platform);
    w->platform = NULL;
}

/* ---------------- experiment stop ---------------- */

/* Deletes every object labelled with the experiment, also jobs the database lost track
 * of; unmounts a share we mounted. */
int kube_cleanup(struct worker *w, struct errbuf *e)
{
    struct kube_state *ks = w->platform;
    char *sel_raw = xasprintf("app=%s,expId=%s", APP_LABEL, w->exp_id);
    char *sel = kube_escape(sel_raw);
    int n = 0, cap = 2;
    for (int i = 0; ks->fl->cleanup_collections && ks->fl->cleanup_collections[i]; i++)
        cap++;
    char **paths = xcalloc((size_t)cap, sizeof *paths);
    char *base = kube_job_path(ks, NULL);
    paths[n++] = xasprintf("%s?labelSelector=%s&propagationPolicy=Background", base, sel);
    free(base);
    paths[n++] = xasprintf("/api/v1/namespaces/%s/secrets?labelSelector=%s", ks->ns, sel);
    for (int i = 0; ks->fl->cleanup_collections && ks->fl->cleanup_collections[i]; i++)
        paths[n++] = xasprintf("/api/v1/namespaces/%s/%s?labelSelector=%s", ks->ns, ks->fl->cleanup_collections[i], sel);
    int rc = 0;
    int64_t deadline = mono_ms() + 20000; /* stop must not hang on a dead cluster */
    for (int i = 0; i < n; i++) {
        long st = 0;
        cJSON *r = NULL;
        int tries = 0;
        /* a few tries with back-off: stop should not leave jobs behind for a hiccup */
        for (;;) {
            struct errbuf re;
            int q = mono_ms() < deadline ? kube_request(&ks->conn, "DELETE", paths[i], NULL, &st, &r, &re)
                                         : errf(&re, "gave up after 20 s");
            if (q == 0 && st < 500)
                break;
            cJSON_Delete(r);
            r = NULL;
            if (++tries >= 4 || mono_ms() >= deadline) {
                rc = errf(e, "deleting the experiment's objects (%s%s): %s; delete them with kubectl delete -l "
                             "expId=%s", ks->conn.server, paths[i], q < 0 ? re.msg : "server error", w->exp_id);
                break;
            }
            usleep((useconds_t)(300000 * tries));
            ks->conn.rest.down_until = 0; /* this loop paces itself */
        }
        if (st == 401 || st == 403)
            rc = kube_explain(ks, "deleting the experiment's jobs", st, r, e);
        cJSON_Delete(r);
        free(paths[i]);
    }
    free(paths);
    free(sel_raw);
    free(sel);
    if (ks->we_mounted) {
        char *argv[] = {"umount", ks->local_mount, NULL};
        char *argv_sudo[] = {"sudo", "-n", "umount", ks->local_mount, NULL};
        char *o = NULL, *er = NULL;
        run_capture(geteuid() == 0 ? argv : argv_sudo, TOOL_TIMEOUT_MS, &o, &er);
        free(o); free(er);
    }
    return rc;
}
