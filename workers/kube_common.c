/* kube_common.c: what the Kubernetes platforms share (workers/kubeflow.c,
 * frameworkcontroller.c and adl.c hold what is theirs, in a struct kube_flavour): one
 * custom resource per trial, named as NNI names it, labelled
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
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "schema/nnijson.h"
#include "common/trialenv.h"
#include "queue/worker_queue.h"
#include "schema/worker_rows.h"
#include "workers/kube.h"
#include "workers/nas_trial.h"
#include "workers/nniignore.h"

#define POD_MOUNT "/tmp/mount"
#define APP_LABEL "nni-kubernetes-trial"
/* on a job whose trial's end is recorded (kube_ended): listings leave it out */
#define ENDED_LABEL "trialq-ended"
#define LIST_LIMIT 500 /* jobs per page of a listing (kubectl's chunk size) */

/* ---------------- small helpers ---------------- */

static char *lower(const char *s)
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

static char *trial_local_dir(struct kube_state *ks, const char *id)
{
    return xasprintf("%s/%s", ks->local_root, id);
}

/* The trial's dir on the storage: the one recorded, else where submit puts it. */
static char *trial_dir_of(struct kube_state *ks, const struct trial *t)
{
    return t->trial_dir ? xstrdup(t->trial_dir) : trial_local_dir(ks, t->id);
}

/* A mount, umount, sudo or az call that does not answer (an NFS server gone) must not
 * hold the worker: it is ended after this long. */
#define TOOL_TIMEOUT_MS 60000

/* ---------------- API checks at start ---------------- */

static const char *user_desc(const struct kube_conn *k)
{
    if (k->token) return "its bearer token";
    if (k->cert_file || k->cert_pem) return "its client certificate";
    return "no credentials";
}

/* A first answer that is not what we need becomes a message naming what to fix. */
static int explain(struct kube_state *ks, const char *what, long status, const cJSON *resp, struct errbuf *e)
{
    struct kube_conn *k = &ks->conn;
    if (status == 401)
        return errf(e, "the Kubernetes API server %s answered 401 Unauthorized to %s: user \"%s\" of context \"%s\" "
                       "in %s (%s) is not accepted; renew the token or client certificate in the kubeconfig",
                    k->server, what, k->user ? k->user : "", k->context, k->source, user_desc(k));
    if (status == 403)
        return errf(e, "the Kubernetes API server %s answered 403 Forbidden to %s: user \"%s\" of context \"%s\" "
                       "lacks RBAC rights (%s); grant get, list, create, delete on %s.%s in namespace %s (see "
                       "docs/platforms/%s.md)",
                    k->server, what, k->user ? k->user : "", k->context, kube_status_message(resp, status),
                    ks->plural, ks->group, ks->ns, ks->platform);
    return errf(e, "the Kubernetes API server %s answered %ld to %s: %s", k->server, status, what,
                kube_status_message(resp, status));
}

/* The API group's answer serves ks->version: 0, or -1 with e. */
static int served_version(struct kube_state *ks, const cJSON *group, struct errbuf *e)
{
    const cJSON *v;
    int found = 0;
    struct strbuf served;
    sb_init(&served);
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(group, "versions")) {
        const char *ver = kube_jstr(v, "version", NULL);
        if (!ver)
            continue;
        if (served.len)
            sb_puts(&served, ", ");
        sb_puts(&served, ver);
        if (strcmp(ver, ks->version) == 0)
            found = 1;
    }
    if (!found)
        errf(e, "the API group %s on %s serves version(s) %s, not %s; set apiVersion to a served version (or "
                "upgrade the operator)",
             ks->group, ks->conn.server, served.len ? served.buf : "none", ks->version);
    sb_free(&served);
    return found ? 0 : -1;
}

/* The group's version has the resource ks->plural: 0, or -1 with e. */
static int has_resource(struct kube_state *ks, struct errbuf *e)
{
    long st;
    cJSON *r = NULL;
    struct errbuf ee;
    char *path = xasprintf("/apis/%s/%s", ks->group, ks->version);
    int rc = kube_request(&ks->conn, "GET", path, NULL, &st, &r, &ee);
    free(path);
    if (rc < 0)
        return errf(e, "Kubernetes API server %s: %s", ks->conn.server, ee.msg);
    int found = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(r, "resources"))
        if (strcmp(kube_jstr(v, "name", ""), ks->plural) == 0)
            found = 1;
    cJSON_Delete(r);
    if (st != 200 || !found)
        return errf(e, "%s/%s on %s has no resource %s: %s", ks->group, ks->version, ks->conn.server, ks->plural,
                    ks->fl->operator_hint(ks));
    return 0;
}

/* May we list (and so, with the same role, create and delete) in the namespace? */
static int may_list(struct kube_state *ks, struct errbuf *e)
{
    long st;
    cJSON *r = NULL;
    struct errbuf ee;
    char *path = xasprintf("/apis/%s/%s/namespaces/%s/%s?limit=1", ks->group, ks->version, ks->ns, ks->plural);
    int rc = kube_request(&ks->conn, "GET", path, NULL, &st, &r, &ee);
    free(path);
    if (rc < 0)
        return errf(e, "Kubernetes API server %s: %s", ks->conn.server, ee.msg);
    if (st != 200) {
        char *what = xasprintf("list %s in namespace %s", ks->plural, ks->ns);
        explain(ks, what, st, r, e);
        free(what);
        rc = -1;
    }
    cJSON_Delete(r);
    return rc;
}

/* The API server, the API group and version, the resource and the right to list it. */
static int check_api(struct kube_state *ks, struct errbuf *e)
{
    struct kube_conn *k = &ks->conn;
    long st;
    cJSON *r = NULL;
    struct errbuf ee;
    char *path = xasprintf("/apis/%s", ks->group);
    int rc = -1;
    if (kube_request(k, "GET", path, NULL, &st, &r, &ee) < 0)
        errf(e, "cannot reach the Kubernetes API server %s (cluster \"%s\" of context \"%s\" in %s): %s; check "
                "clusters[].cluster.server and that the cluster is up",
             k->server, k->cluster, k->context, k->source, ee.msg);
    else if (st == 404)
        errf(e, "the Kubernetes API server %s does not serve the API group %s (no %s custom resource definition): "
                "%s",
             k->server, ks->group, ks->kindname, ks->fl->operator_hint(ks));
    else if (st != 200)
        explain(ks, path, st, r, e);
    else
        rc = served_version(ks, r, e) < 0 || has_resource(ks, e) < 0 || may_list(ks, e) < 0 ? -1 : 0;
    cJSON_Delete(r);
    free(path);
    return rc;
}

/* ---------------- storage ---------------- */

static int is_mountpoint(const char *dir)
{
    struct stat a, b;
    char *parent = xasprintf("%s/..", dir);
    int r = stat(dir, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
    free(parent);
    return r;
}

/* Mounts the NFS export at <expdir>/trials-nfs-tmp as NNI does, or says why it cannot. */
static int mount_nfs(struct kube_state *ks, struct worker *w, const char *server, const char *path,
                     struct errbuf *e)
{
    if (!w->exp.exp_dir)
        return errf(e, "storage: no localMountPoint is set");
    char *m = xasprintf("%s/trials-nfs-tmp", w->exp.exp_dir);
    if (mkdir_p(m, 0755) < 0) {
        errf(e, "cannot create %s: %s", m, strerror(errno));
        free(m);
        return -1;
    }
    if (!is_mountpoint(m)) {
        if (access("/sbin/mount.nfs", X_OK) < 0 && access("/usr/sbin/mount.nfs", X_OK) < 0) {
            errf(e, "storage: this host has no NFS client (mount.nfs) to mount %s:%s; install nfs-common, or mount "
                    "the export yourself and set storage.localMountPoint to its mount point",
                 server, path);
            free(m);
            return -1;
        }
        char *src = xasprintf("%s:%s", server, path);
        char *argv_root[] = {"mount", "-t", "nfs", src, m, NULL};
        char *argv_sudo[] = {"sudo", "-n", "mount", "-t", "nfs", src, m, NULL};
        char *out = NULL, *err = NULL;
        int rc = run_capture(geteuid() == 0 ? argv_root : argv_sudo, TOOL_TIMEOUT_MS, &out, &err);
        if (rc != 0) {
            errf(e, "storage: cannot mount %s at %s (%s): %s; mount it yourself and set storage.localMountPoint",
                 src, m, geteuid() == 0 ? "mount" : "sudo -n mount: needs passwordless sudo",
                 rc == -2 ? "no answer in 60 s (is the NFS server reachable?)" : err && *err ? err : "failed");
            free(out); free(err); free(src); free(m);
            return -1;
        }
        free(out); free(err); free(src);
    }
    ks->we_mounted = 1; /* ours (this or an earlier worker's): unmounted at stop */
    ks->local_mount = m;
    return 0;
}

static int setup_storage(struct kube_state *ks, struct worker *w, const cJSON *ts, int check_only,
                         struct errbuf *e)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(ts, ks->fl->storage_key);
    if (!st)
        return errf(e, "%s", ks->fl->storage_missing);
    const char *type = ks->fl->nfs_only ? "nfs" : kube_jstr(st, "storageType", "nfs");
    const char *lm = kube_jstr(st, "localMountPoint", NULL);
    ks->pod_mount = xstrdup(ks->fl->nfs_only ? kube_jstr(st, "containerMountPath", POD_MOUNT) : POD_MOUNT);
    if (strcmp(type, "nfs") == 0) {
        ks->volume = cJSON_CreateObject();
        cJSON_AddStringToObject(ks->volume, "name", "nni-vol");
        cJSON *nfs = cJSON_AddObjectToObject(ks->volume, "nfs");
        cJSON_AddStringToObject(nfs, "server", kube_jstr(st, "server", ""));
        cJSON_AddStringToObject(nfs, "path", kube_jstr(st, "path", ""));
    }
    if (lm) {
        struct stat sb;
        if (stat(lm, &sb) < 0 || !S_ISDIR(sb.st_mode))
            return errf(e, "storage.localMountPoint %s: %s (the share must be mounted there)", lm,
                        errno ? strerror(errno) : "not a directory");
        if (access(lm, W_OK) < 0)
            return errf(e, "storage.localMountPoint %s: not writable: %s", lm, strerror(errno));
        ks->local_mount = xstrdup(lm);
    } else if (strcmp(type, "nfs") == 0) {
        if (check_only) {
            /* will the worker be able to mount it? */
            if (access("/sbin/mount.nfs", X_OK) < 0 && access("/usr/sbin/mount.nfs", X_OK) < 0)
                return errf(e, "storage: no localMountPoint is set and this host has no NFS client (mount.nfs) to "
                               "mount %s:%s; install nfs-common, or mount the export yourself and set "
                               "%s.localMountPoint to its mount point",
                            kube_jstr(st, "server", ""), kube_jstr(st, "path", ""), ks->fl->storage_key);
            if (geteuid() != 0) {
                char *argv[] = {"sudo", "-n", "true", NULL};
                char *o = NULL, *er = NULL;
                int src = run_capture(argv, TOOL_TIMEOUT_MS, &o, &er);
                free(o);
                free(er);
                if (src != 0)
                    return errf(e, "storage: no localMountPoint is set, and mounting %s:%s needs root or "
                                   "passwordless sudo; mount the export yourself and set localMountPoint",
                                kube_jstr(st, "server", ""), kube_jstr(st, "path", ""));
            }
            return 0;
        }
        if (mount_nfs(ks, w, kube_jstr(st, "server", ""), kube_jstr(st, "path", ""), e) < 0)
            return -1;
    } else {
        return errf(e, "storage (azureStorage): trialq does not upload through the Azure Files REST API; mount the "
                       "share on this host (e.g. mount -t cifs //%s.file.core.windows.net/%s DIR ...) and set "
                       "storage.localMountPoint to DIR",
                    kube_jstr(st, "azureAccount", "ACCOUNT"), kube_jstr(st, "azureShare", "SHARE"));
    }
    return 0;
}

/* The Azure file volume needs a Secret with the account key (from Key Vault, as NNI). */
static int azure_volume(struct kube_state *ks, struct worker *w, const cJSON *st, struct errbuf *e)
{
    char *argv[] = {"az", "keyvault", "secret", "show", "--name", (char *)kube_jstr(st, "keyVaultKey", ""),
                    "--vault-name", (char *)kube_jstr(st, "keyVaultName", ""), NULL};
    char *out = NULL, *err = NULL;
    int rc = run_capture(argv, TOOL_TIMEOUT_MS, &out, &err);
    cJSON *j = rc == 0 && (!err || !*err) ? cJSON_Parse(out) : NULL;
    const char *key = kube_jstr(j, "value", NULL);
    if (!key) {
        errf(e, "storage (azureStorage): `az keyvault secret show --name %s --vault-name %s` failed%s%s; log in "
                "with `az login` and check keyVaultName/keyVaultKey",
             kube_jstr(st, "keyVaultKey", ""), kube_jstr(st, "keyVaultName", ""), err && *err ? ": " : "", err ? err : "");
        cJSON_Delete(j); free(out); free(err);
        return -1;
    }
    char *name = xasprintf("nni-secret-%s", ks->exp_lower);
    cJSON *sec = cJSON_CreateObject();
    cJSON_AddStringToObject(sec, "apiVersion", "v1");
    cJSON_AddStringToObject(sec, "kind", "Secret");
    cJSON *md = cJSON_AddObjectToObject(sec, "metadata");
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", ks->ns);
    cJSON *lb = cJSON_AddObjectToObject(md, "labels");
    cJSON_AddStringToObject(lb, "app", APP_LABEL);
    cJSON_AddStringToObject(lb, "expId", w->exp_id);
    cJSON_AddStringToObject(sec, "type", "Opaque");
    cJSON *data = cJSON_AddObjectToObject(sec, "data");
    const char *acct = kube_jstr(st, "azureAccount", "");
    char *a64 = b64_encode(acct, strlen(acct)), *k64 = b64_encode(key, strlen(key));
    cJSON_AddStringToObject(data, "azurestorageaccountname", a64);
    cJSON_AddStringToObject(data, "azurestorageaccountkey", k64);
    free(a64); free(k64);
    cJSON_Delete(j); free(out); free(err);
    char *path = xasprintf("/api/v1/namespaces/%s/secrets", ks->ns);
    long code;
    cJSON *r = NULL;
    rc = kube_request(&ks->conn, "POST", path, sec, &code, &r, e);
    if (rc == 0 && code != 201 && code != 200 && code != 409)
        rc = explain(ks, "creating the storage Secret", code, r, e);
    cJSON_Delete(r);
    cJSON_Delete(sec);
    free(path);
    if (rc == 0) {
        ks->volume = cJSON_CreateObject();
        cJSON_AddStringToObject(ks->volume, "name", "nni-vol");
        cJSON *af = cJSON_AddObjectToObject(ks->volume, "azureFile");
        cJSON_AddStringToObject(af, "secretName", name);
        cJSON_AddStringToObject(af, "shareName", kube_jstr(st, "azureShare", ""));
        cJSON_AddBoolToObject(af, "readOnly", 0);
    }
    free(name);
    return rc;
}

/* privateRegistryAuthPath -> a dockerconfigjson Secret, one per role and experiment. */
static int pull_secret(struct kube_state *ks, struct worker *w, struct kube_role *r, const char *file,
                       struct errbuf *e)
{
    size_t len;
    char *content = read_file(file, &len);
    if (!content)
        return errf(e, "privateRegistryAuthPath %s: %s", file, strerror(errno));
    char *rl = lower(r->name);
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
        rc = explain(ks, "creating the image pull Secret", code, resp, e);
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
    if (check_api(ks, e) < 0)
        return -1;
    return setup_storage(ks, w, ts, check_only, e);
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
    ks->exp_lower = lower(w->exp_id);
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
    if (!ks->volume && azure_volume(ks, w, cJSON_GetObjectItemCaseSensitive(ts, ks->fl->storage_key), e) < 0)
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
        if (auth && pull_secret(ks, w, &ks->roles[i], auth, e) < 0)
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

/* ---------------- the custom resources ---------------- */

static char *job_name(struct kube_state *ks, const char *exp, const char *trial, int alt)
{
    char *n = xasprintf("%s%s%s%s", ks->fl->name_prefix, exp, ks->fl->name_infix, trial);
    char *l = lower(n);
    free(n);
    if (!alt)
        return l;
    /* NNI lower-cases names, so trials aBcde and abcde would collide: the second one
     * takes a suffix made of its upper-case positions */
    unsigned mask = 0;
    for (int i = 0; trial[i] && i < 31; i++)
        if (trial[i] >= 'A' && trial[i] <= 'Z')
            mask |= 1u << i;
    char *r = xasprintf("%s-u%x", l, mask);
    free(l);
    return r;
}

static cJSON *labels_json(struct worker *w, const char *trial)
{
    cJSON *l = cJSON_CreateObject();
    cJSON_AddStringToObject(l, "app", APP_LABEL);
    cJSON_AddStringToObject(l, "expId", w->exp_id);
    cJSON_AddStringToObject(l, "trialId", trial);
    return l;
}

cJSON *kube_metadata(struct kube_state *ks, struct worker *w, const char *name, const char *trial)
{
    cJSON *md = cJSON_CreateObject();
    cJSON_AddStringToObject(md, "name", name);
    cJSON_AddStringToObject(md, "namespace", ks->ns);
    cJSON_AddItemToObject(md, "labels", labels_json(w, trial));
    return md;
}

static cJSON *resources_json(long long mem_mb, int cpu, int gpu)
{
    cJSON *res = cJSON_CreateObject();
    for (int i = 0; i < 2; i++) {
        cJSON *o = cJSON_AddObjectToObject(res, i ? "limits" : "requests");
        char buf[64];
        snprintf(buf, sizeof buf, "%lldMi", mem_mb);
        cJSON_AddStringToObject(o, "memory", buf);
        snprintf(buf, sizeof buf, "%d", cpu);
        cJSON_AddStringToObject(o, "cpu", buf);
        if (gpu > 0) {
            snprintf(buf, sizeof buf, "%d", gpu);
            cJSON_AddStringToObject(o, "nvidia.com/gpu", buf);
        }
    }
    return res;
}

cJSON *kube_vol_mount(const char *name, const char *path, const char *sub)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "mountPath", path);
    if (sub)
        cJSON_AddStringToObject(m, "subPath", sub);
    return m;
}

void kube_add_pull_secret(cJSON *podspec, const struct kube_role *r)
{
    if (!r->pull_secret)
        return;
    cJSON *arr = cJSON_AddArrayToObject(podspec, "imagePullSecrets");
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "name", r->pull_secret);
    cJSON_AddItemToArray(arr, s);
}

/* The pod spec of one role whose script is on the shared storage: its container (the
 * script run as command_key, "command" or "args"), the storage volume and mount. */
cJSON *kube_role_podspec(struct kube_state *ks, const struct kube_role *r, const char *trial,
                         const char *command_key)
{
    cJSON *spec = cJSON_CreateObject();
    cJSON *containers = cJSON_AddArrayToObject(spec, "containers");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(containers, c);
    cJSON_AddStringToObject(c, "name", ks->container);
    cJSON_AddStringToObject(c, "image", kube_jstr(r->cfg, "dockerImage", "msranni/nni:latest"));
    char *script = xasprintf("%s/%s/run_%s.sh", ks->pod_root, trial, r->name);
    cJSON *cmd = cJSON_AddArrayToObject(c, command_key);
    cJSON_AddItemToArray(cmd, cJSON_CreateString("sh"));
    cJSON_AddItemToArray(cmd, cJSON_CreateString(script));
    free(script);
    cJSON *mounts = cJSON_AddArrayToObject(c, "volumeMounts");
    cJSON_AddItemToArray(mounts, kube_vol_mount("nni-vol", POD_MOUNT, NULL));
    cJSON_AddItemToObject(c, "resources", resources_json(kube_memory_mb(cJSON_GetObjectItemCaseSensitive(r->cfg,
                                                                                                     "memorySize"),
                                                                   8192),
                                                         kube_jint(r->cfg, "cpuNumber", 1), kube_jint(r->cfg, "gpuNumber", 0)));
    cJSON *vols = cJSON_AddArrayToObject(spec, "volumes");
    cJSON_AddItemToArray(vols, cJSON_Duplicate(ks->volume, 1));
    return spec;
}

static cJSON *build_job(struct kube_state *ks, struct worker *w, const struct trial *t, const char *name)
{
    cJSON *job = cJSON_CreateObject();
    char *api = xasprintf("%s/%s", ks->group, ks->version);
    cJSON_AddStringToObject(job, "apiVersion", api);
    free(api);
    cJSON_AddStringToObject(job, "kind", ks->kindname);
    cJSON_AddItemToObject(job, "metadata", kube_metadata(ks, w, name, t->id));
    cJSON *spec = cJSON_AddObjectToObject(job, "spec");
    ks->fl->job_spec(ks, w, t, name, spec);
    return job;
}

/* ---------------- per-trial files ---------------- */

static const char install_nni[] =
    "#!/bin/bash\n"
    "# makes the nni package importable (as NNI's install_nni.sh)\n"
    "if python3 -c 'import nni' > /dev/null 2>&1; then\n"
    "  exit 0\n"
    "fi\n"
    "python3 -m pip install --user --upgrade nni\n";

/* The launch script of one role (NNI's kubernetesScriptFormat, with the trial command
 * run directly instead of NNI's trial_keeper: its output goes to the shared storage,
 * where the worker reads the metrics). */
char *kube_role_script(struct kube_state *ks, struct worker *w, const struct trial *t, const struct kube_role *r)
{
    struct strbuf sb;
    sb_init(&sb);
    char *sys = xasprintf("%s/%s", ks->pod_root, t->id);
    char *out = kube_output_dir(ks, sys, r->name);
    char *code = xasprintf("%s/nni-code", ks->pod_root);
    struct trial_env te;
    trial_env_init(&te);
    worker_trial_env(w, t, sys, out, code, &te);
    int gpu = 0;
    struct strbuf full; /* the command and what runs before it in its shell */
    sb_init(&full);
    const char *cmd = ks->fl->role_command(ks, w, r, &gpu, &full);
    /* the role's GPUs, placed by the cluster; 0 requested GPUs must not mean all */
    trial_env_set(&te, "CUDA_VISIBLE_DEVICES", gpu == 0 ? "" : NULL);
    /* trialCommandChannel: http -> NNI v3's HTTP channel. Its URL is the api's at
     * nniManagerIp, with this trial's own token in the path; the relay below serves that
     * path on 127.0.0.1 in the pod and points the trial at it */
    char *url = nas_channel_url(w, t);
    int http = url != NULL;
    /* a script on the shared storage is a file of the trial directory, which trial-file
     * serves: the URL (its token) stays in .nni/api-channel (0600, kube_submit) */
    if (url && !ks->fl->scripts_on_share)
        trial_env_set(&te, "NNI_TRIAL_COMMAND_CHANNEL", url);
    free(url);
    sb_puts(&sb, "#!/bin/bash\n");
    trial_env_export_lines(&te, &sb);
    trial_env_free(&te);
    if (http && ks->fl->scripts_on_share)
        sb_puts(&sb, "export NNI_TRIAL_COMMAND_CHANNEL=\"$(cat \"$NNI_SYS_DIR/" KUBE_API_CHANNEL_FILE "\")\"\n");
    sb_puts(&sb, "mkdir -p \"$NNI_SYS_DIR/.nni\" \"$NNI_OUTPUT_DIR\"\n");
    if (!ks->fl->scripts_on_share)
        sb_puts(&sb, "echo $$ > \"$NNI_SYS_DIR/.nni/trial.pid\"\n"); /* for cleanup.sh */
    sb_puts(&sb, "mkdir -p \"$NNI_SYS_DIR/code\"\n"
                 "cp -r \"$NNI_CODE_DIR/.\" \"$NNI_SYS_DIR/code\"\n");
    if (ks->fl->scripts_on_share)
        sb_puts(&sb, "sh \"$NNI_SYS_DIR/install_nni.sh\"\n");
    sb_puts(&sb, "cd \"$NNI_SYS_DIR/code\" || exit 1\n");
    sb_puts(&full, cmd);
    if (http) {
        /* the relay (.nni/chanrelay.py, written by kube_submit) runs the command as its
         * child and serves its channel in the pod, so that an api restart costs the trial
         * nothing; without a python3 >= 3.5 in the image the trial talks to the api, as
         * it says in its stderr */
        sb_puts(&sb, "if command -v python3 > /dev/null 2>&1 &&\n"
                     "   python3 -c 'import sys; sys.exit(sys.version_info < (3, 5))' > /dev/null 2>&1; then\n"
                     "  set -- python3 \"$NNI_SYS_DIR/.nni/chanrelay.py\" --\n"
                     "else\n"
                     "  echo \"trialq: no python3 >= 3.5 in the image: this trial's HTTP channel is the api's\" \\\n"
                     "       \"at nniManagerIp, and a restart of the api fails the trial\" >> \"$NNI_OUTPUT_DIR/trial.stderr\"\n"
                     "  set --\n"
                     "fi\n"
                     "\"$@\" ");
    }
    sb_puts(&sb, "bash -c ");
    sh_quote(&sb, full.buf);
    sb_free(&full);
    sb_puts(&sb, " >>\"$NNI_OUTPUT_DIR/trial.stdout\" 2>>\"$NNI_OUTPUT_DIR/trial.stderr\"\n"
                 "rc=$?\n"
                 "echo \"$rc\" > \"$NNI_OUTPUT_DIR/exitcode\"\n"
                 "exit $rc\n");
    free(sys);
    free(out);
    free(code);
    return sb_detach(&sb);
}

static char *stdout_path(struct kube_state *ks, const char *dir)
{
    char *out = kube_output_dir(ks, dir, ks->roles[ks->chief].name);
    char *p = xasprintf("%s/trial.stdout", out);
    free(out);
    return p;
}

static int write_text(const char *dir, const char *name, const char *text, mode_t mode, struct errbuf *e)
{
    char *p = xasprintf("%s/%s", dir, name);
    int rc = write_file_replace(p, text, strlen(text), mode);
    if (rc < 0)
        errf(e, "cannot write %s: %s", p, strerror(errno));
    free(p);
    return rc;
}

static int marker_exists(const char *dir)
{
    char *p = xasprintf("%s/.nni/created", dir);
    int r = access(p, F_OK) == 0;
    free(p);
    return r;
}

static void marker_write(const char *dir, const char *name)
{
    char *p = xasprintf("%s/.nni/created", dir);
    if (write_file_replace(p, name, strlen(name), 0644) < 0)
        log_warn("cannot write %s: %s", p, strerror(errno));
    free(p);
}

/* ---------------- create, with adoption ---------------- */

static char *job_path(struct kube_state *ks, const char *name)
{
    return name ? xasprintf("/apis/%s/%s/namespaces/%s/%s/%s", ks->group, ks->version, ks->ns, ks->plural, name)
                : xasprintf("/apis/%s/%s/namespaces/%s/%s", ks->group, ks->version, ks->ns, ks->plural);
}

static int owned_by(const cJSON *job, const char *trial)
{
    const cJSON *lb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job, "metadata"), "labels");
    const char *tid = kube_jstr(lb, "trialId", NULL);
    return tid && strcmp(tid, trial) == 0;
}

/* Creates the job (or adopts the one of this trial). Returns 0 created/adopted with
 * *name_out set, 1 transient failure (retry later), -1 refused (e says why). */
static int create_job(struct kube_state *ks, struct worker *w, const struct trial *t, const char *dir,
                      char **name_out, struct errbuf *e)
{
    if (kube_backing_off(&ks->conn)) { /* failures, or a 429's Retry-After: not now */
        errf(e, "the Kubernetes API server asked to wait (or failed lately)");
        return 1;
    }
    for (int alt = 0; alt < 2; alt++) {
        char *name = job_name(ks, w->exp_id, t->id, alt);
        cJSON *job = build_job(ks, w, t, name);
        char *coll = job_path(ks, NULL);
        long st;
        cJSON *r = NULL;
        int rc = kube_request(&ks->conn, "POST", coll, job, &st, &r, e);
        free(coll);
        cJSON_Delete(job);
        if (rc == 0 && st == 409) {
            cJSON_Delete(r);
            r = NULL;
            char *p = job_path(ks, name);
            rc = kube_request(&ks->conn, "GET", p, NULL, &st, &r, e);
            free(p);
            if (rc == 0 && st == 200 && !owned_by(r, t->id)) {
                log_warn("trial %s: the name %s is taken by another trial's job; using an alternative", t->id, name);
                cJSON_Delete(r);
                free(name);
                continue;
            }
            if (rc == 0 && st == 200)
                log_info("trial %s: job %s exists already; adopted", t->id, name);
        }
        int result;
        if (rc < 0 || st >= 500 || st == 429 || st == 401 || st == 403 || st == 404) {
            if (rc == 0)
                errf(e, "creating %s %s: %ld %s", ks->kindname, name, st, kube_status_message(r, st));
            result = 1;
        } else if (st == 200 || st == 201 || st == 202) {
            int transient = 0;
            if (ks->fl->dependents && ks->fl->dependents(ks, w, t, name, r, &transient, e) < 0)
                result = transient ? 1 : -1;
            else {
                marker_write(dir, name);
                result = 0;
            }
        } else {
            errf(e, "the Kubernetes API server refused the %s %s: %ld %s", ks->kindname, name, st,
                 kube_status_message(r, st));
            result = -1;
        }
        cJSON_Delete(r);
        if (result == 0)
            *name_out = name;
        else
            free(name);
        return result;
    }
    return errf(e, "no free job name for trial %s", t->id);
}

/* The trial's files on the shared storage: .nni/ (0700), parameter.cfg, the attempt,
 * the channel's relay and URL, the launch scripts, and links to the chief role's
 * output. 0, or -1 with e. */
static int write_trial_files(struct kube_state *ks, struct worker *w, const struct trial *t, const char *dir,
                             const char *att, struct errbuf *e)
{
    /* 0700: .nni/ holds the channel's URL and token (the pods run as trialq's user, or
     * as root, as they must to write .nni/metrics) */
    char *nni = xasprintf("%s/.nni", dir);
    int made = mkdir_p(dir, 0755) == 0 && (mkdir(nni, 0700) == 0 || errno == EEXIST) && chmod(nni, 0700) == 0;
    if (!made)
        errf(e, "cannot create %s on the shared storage: %s", nni, strerror(errno));
    free(nni);
    if (!made)
        return -1;
    char *rec = nni_param_record(t);
    int wr = write_text(dir, "parameter.cfg", rec, 0644, e);
    free(rec);
    if (wr < 0 || write_text(dir, ".nni/attempt", att, 0644, e) < 0)
        return -1;
    if (nas_channel_wanted(w) && write_text(dir, ".nni/chanrelay.py", trialq_chanrelay_py, 0644, e) < 0)
        return -1;
    if (nas_channel_wanted(w) && ks->fl->scripts_on_share) {
        char *url = nas_channel_url(w, t), *line = xasprintf("%s\n", url);
        int wc = write_text(dir, KUBE_API_CHANNEL_FILE, line, 0600, e);
        free(url);
        free(line);
        if (wc < 0)
            return -1;
    }
    if (ks->fl->scripts_on_share) {
        if (write_text(dir, "install_nni.sh", install_nni, 0755, e) < 0)
            return -1;
        for (int i = 0; i < ks->nroles; i++) {
            char *s = kube_role_script(ks, w, t, &ks->roles[i]);
            char *fname = xasprintf("run_%s.sh", ks->roles[i].name);
            int r = write_text(dir, fname, s, 0755, e);
            free(s);
            free(fname);
            if (r < 0)
                return -1;
        }
    }
    /* the chief role's output where nnictl and the web UI look for a trial's logs */
    for (int i = 0; i < 2; i++) {
        const char *f = i ? "trial.stderr" : "trial.stdout";
        char *link = xasprintf("%s/%s", dir, f);
        char *out = kube_output_dir(ks, dir, ks->roles[ks->chief].name);
        char *target = xasprintf("%s/%s", out + strlen(dir) + 1, f); /* relative to dir */
        free(out);
        unlink(link);
        if (symlink(target, link) < 0)
            log_debug("cannot link %s: %s", link, strerror(errno));
        free(link);
        free(target);
    }
    return 0;
}

int kube_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    struct kube_state *ks = w->platform;
    char *dir = trial_local_dir(ks, t->id);
    char *attfile = xasprintf("%s/.nni/attempt", dir);
    int rc = -1;
    char att[16];
    snprintf(att, sizeof att, "%d", t->attempt);
    char *prev = read_file(attfile, NULL);
    if (prev && atoi(prev) != t->attempt) {
        /* an earlier attempt's files: kept beside, as the local platform does */
        char *aside = xasprintf("%s.attempt%d", dir, atoi(prev));
        rm_rf(aside);
        if (rename(dir, aside) < 0)
            log_warn("cannot move %s aside: %s", dir, strerror(errno));
        free(aside);
        free(prev);
        prev = NULL;
    }
    if (prev && marker_exists(dir)) {
        /* this attempt's job was created before: re-attach, never a second one */
        char *p = xasprintf("%s/.nni/created", dir);
        char *name = read_file(p, NULL);
        free(p);
        *job_id = name ? name : job_name(ks, w->exp_id, t->id, 0);
        *trial_dir = xstrdup(dir);
        log_info("trial %s: re-attached to job %s", t->id, *job_id);
        rc = 0;
        goto out;
    }
    if (write_trial_files(ks, w, t, dir, att, e) < 0)
        goto out;
    char *name = NULL;
    int cr = create_job(ks, w, t, dir, &name, e);
    if (cr < 0)
        goto out;
    if (cr == 1) {
        /* the API server is struggling: the trial waits, poll creates the job later */
        log_warn("trial %s: %s; will retry", t->id, e->msg);
        name = job_name(ks, w->exp_id, t->id, 0);
    } else {
        log_debug("trial %s: created %s %s", t->id, ks->kindname, name);
    }
    *job_id = name;
    *trial_dir = xstrdup(dir);
    rc = 0;
out:
    free(prev);
    free(dir);
    free(attfile);
    return rc;
}

/* ---------------- status ---------------- */

static int try_kill(struct kube_state *ks, struct worker *w, const char *trial, struct errbuf *e)
{
    char *sel_raw = xasprintf("app=%s,expId=%s,trialId=%s", APP_LABEL, w->exp_id, trial);
    char *sel = kube_escape(sel_raw);
    char *base = job_path(ks, NULL);
    char *path = xasprintf("%s?labelSelector=%s&propagationPolicy=Background", base, sel);
    long st;
    cJSON *r = NULL;
    int rc = kube_request(&ks->conn, "DELETE", path, NULL, &st, &r, e);
    if (rc == 0 && st != 200 && st != 202 && st != 404)
        rc = errf(e, "deleting the job of trial %s: %ld %s", trial, st, kube_status_message(r, st));
    cJSON_Delete(r);
    free(sel_raw); free(sel); free(base); free(path);
    return rc;
}

int kube_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    /* not deleted (no answer, 5xx): the loop calls again after a back-off */
    return try_kill(w->platform, w, t->id, e);
}

static int read_exit_code(struct kube_state *ks, const char *dir)
{
    char *out = kube_output_dir(ks, dir, ks->roles[ks->chief].name);
    char *p = xasprintf("%s/exitcode", out);
    free(out);
    char *s = read_file(p, NULL);
    free(p);
    int code = s ? atoi(s) : 1;
    free(s);
    return code ? code : 1;
}

/* The job of an ended attempt is gone (404): deleted on request (the trial ends as
 * asked), never created (the API server failed at submit time: created now), or
 * deleted by someone else (vanished: the trial is retried). */
static void job_absent(struct kube_state *ks, struct worker *w, struct trial *t, const char *dir,
                       const char *name, struct job_state *js)
{
    char *kill_request = NULL;
    struct errbuf ke;
    if (trial_kill_request(w->db, t->id, &kill_request, &ke) < 0)
        log_warn("trial %s: %s", t->id, ke.msg);
    if (kill_request) {
        js->finished = 1; /* deleted on request */
        js->end_time = now_ms();
    } else if (!marker_exists(dir)) {
        char *created = NULL;
        struct errbuf ce;
        int cr = create_job(ks, w, t, dir, &created, &ce);
        if (cr < 0) {
            js->finished = 1;
            js->has_exit = 1;
            js->exit_code = 1;
            js->end_time = now_ms();
            log_error("trial %s: %s", t->id, ce.msg);
        } else if (cr == 0) {
            log_info("trial %s: created %s %s after retrying", t->id, ks->kindname, created);
            if (!t->job_id || strcmp(t->job_id, created) != 0) {
                free(t->job_id);
                t->job_id = xstrdup(created);
            }
        }
        free(created);
    } else {
        js->vanished = 1; /* someone else deleted it: the trial is retried */
        log_warn("trial %s: job %s vanished from the cluster", t->id, name);
    }
    free(kill_request);
}

/* The job r exists and is ours: finished or running. */
static void job_present(struct kube_state *ks, struct worker *w, struct trial *t, const char *dir,
                        const char *name, const cJSON *r, struct job_state *js)
{
    int ok;
    const char *why;
    if (!marker_exists(dir)) {
        /* created by a worker that died before noting it: finish what it started */
        int transient = 0;
        struct errbuf de;
        if (!ks->fl->dependents || ks->fl->dependents(ks, w, t, name, r, &transient, &de) == 0)
            marker_write(dir, name);
    }
    if (!ks->fl->finished(r, &ok, &why))
        return;
    js->finished = 1;
    js->has_exit = 1;
    js->exit_code = ok ? 0 : read_exit_code(ks, dir);
    js->end_time = now_ms();
    if (!ok) {
        char shown[SNIPPET_SIZE]; /* a pod's message may be the trial's own text */
        log_info("trial %s: job %s failed%s%s", t->id, name, why ? ": " : "",
                 why ? snippet(shown, why, strlen(why)) : "");
    }
}

/* ---------------- the listing: every job of the experiment at once ---------------- */

/* Keeps what poll reads of each job of a page (its metadata, without managedFields and
 * annotations, and its status). */
static void listing_add(struct kube_state *ks, cJSON *page)
{
    cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "items");
    cJSON *it;
    cJSON_ArrayForEach(it, items) {
        cJSON *md = cJSON_DetachItemFromObjectCaseSensitive(it, "metadata");
        const char *name = kube_jstr(md, "name", NULL);
        if (!name) {
            cJSON_Delete(md);
            continue;
        }
        /* what poll never reads, and large on a real API server */
        cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
        cJSON_DeleteItemFromObjectCaseSensitive(md, "annotations");
        cJSON *job = cJSON_CreateObject();
        cJSON_AddItemToObject(job, "metadata", md);
        cJSON *st = cJSON_DetachItemFromObjectCaseSensitive(it, "status");
        if (st)
            cJSON_AddItemToObject(job, "status", st);
        job_listing_add(&ks->listed, name, job);
    }
}

/* One LIST of the experiment's jobs by its label, in pages of ks->list_limit (limit and
 * continue: a consistent snapshot of the collection). A continue token that expired
 * (410 Gone: the API server compacted that version) lists again from the start, once. */
int kube_poll_all(struct worker *w, struct errbuf *e)
{
    struct kube_state *ks = w->platform;
    job_listing_reset(&ks->listed);
    if (kube_backing_off(&ks->conn))
        return errf(e, "the Kubernetes API server failed lately; waiting before asking again");
    /* less the jobs kube_ended labelled: none of them is held any more */
    char *sel_raw = xasprintf("app=%s,expId=%s,!%s", APP_LABEL, w->exp_id, ENDED_LABEL);
    char *sel = kube_escape(sel_raw);
    char *base = job_path(ks, NULL);
    char *cont = NULL;
    int rc = 0, restarts = 0;
    for (;;) {
        char *ce = cont ? kube_escape(cont) : NULL;
        char *path = xasprintf("%s?labelSelector=%s&limit=%d%s%s", base, sel, ks->list_limit,
                               ce ? "&continue=" : "", ce ? ce : "");
        long st;
        cJSON *r = NULL;
        struct errbuf le;
        int q = kube_request(&ks->conn, "GET", path, NULL, &st, &r, &le);
        free(path);
        free(ce);
        if (q == 0 && st == 410 && cont && restarts++ == 0) {
            log_info("%s: the listing's continue token expired (%s); listing again", ks->platform,
                     kube_status_message(r, st));
            cJSON_Delete(r);
            free(cont);
            cont = NULL;
            job_listing_reset(&ks->listed);
            continue;
        }
        if (q < 0 || st != 200 || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "items"))) {
            rc = errf(e, "listing the %s of experiment %s: %s", ks->plural, w->exp_id,
                      q < 0 ? le.msg : st == 200 ? "the answer holds no items" : kube_status_message(r, st));
            if (q == 0 && (st == 401 || st == 403))
                explain(ks, "listing the experiment's jobs", st, r, e);
            /* no permission to list (RBAC grants get but not list), or no such call:
             * for good; a rejected token (401) or a struggling server is not */
            if (q == 0 && (st == 403 || st == 400 || st == 404 || st == 405))
                rc = POLL_ALL_REFUSED;
            cJSON_Delete(r);
            break;
        }
        listing_add(ks, r);
        const char *next = kube_jstr(cJSON_GetObjectItemCaseSensitive(r, "metadata"), "continue", "");
        free(cont);
        cont = next[0] ? xstrdup(next) : NULL;
        cJSON_Delete(r);
        if (!cont)
            break;
    }
    free(cont);
    free(sel_raw);
    free(sel);
    free(base);
    if (rc < 0) {
        job_listing_reset(&ks->listed);
        return rc;
    }
    job_listing_seal(&ks->listed);
    return 0;
}

/* Labels the job of a trial whose end is committed (a JSON merge patch of its
 * metadata.labels), so that kube_poll_all's LIST leaves it out: the listing's cost stays
 * with the running jobs. Not retried: a job left unlabelled (no answer, or killed before
 * the PATCH) is only listed on; kube_cleanup selects without the label and so deletes
 * it with the others at `nnictl stop`. */
void kube_ended(struct worker *w, const struct trial *t)
{
    struct kube_state *ks = w->platform;
    if (!t->job_id || kube_backing_off(&ks->conn))
        return;
    cJSON *patch = cJSON_CreateObject();
    cJSON *labels = cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "metadata"), "labels");
    cJSON_AddStringToObject(labels, ENDED_LABEL, "true");
    char *path = job_path(ks, t->job_id);
    long st;
    cJSON *r = NULL;
    struct errbuf pe;
    int rc = kube_request(&ks->conn, "PATCH", path, patch, &st, &r, &pe);
    if (rc < 0 || (st != 200 && st != 404))
        log_limited(LOG_WARN, "trial %s: cannot label its ended job %s (it stays in the listing): %s", t->id,
                    t->job_id, rc < 0 ? pe.msg : kube_status_message(r, st));
    cJSON_Delete(r);
    cJSON_Delete(patch);
    free(path);
}

/* From the listing when the job is in it; else (not listed yet, gone, or no listing)
 * by a GET of the job, which confirms an absence before it is taken as one. */
int kube_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    struct kube_state *ks = w->platform;
    memset(js, 0, sizeof *js);
    char *name = t->job_id ? xstrdup(t->job_id) : job_name(ks, w->exp_id, t->id, 0);
    const cJSON *listed = job_listing_find(&ks->listed, name);
    if (!listed && kube_backing_off(&ks->conn)) {
        free(name);
        return 0; /* the API server is struggling: nothing asked, nothing known */
    }
    char *dir = trial_dir_of(ks, t);
    long st = 200;
    cJSON *got = NULL;
    struct errbuf ge;
    int rc = 0;
    if (!listed) {
        char *path = job_path(ks, name);
        rc = kube_request(&ks->conn, "GET", path, NULL, &st, &got, &ge);
        free(path);
    }
    const cJSON *r = listed ? listed : got;
    if (rc < 0 || st >= 500 || st == 401 || st == 403 || st == 429) {
        /* transient: keep the trial; the loop polls again after a back-off */
        rc = errf(e, "cannot get job %s: %s", name, rc < 0 ? ge.msg : kube_status_message(r, st));
    } else if (st == 200 && !owned_by(r, t->id)) {
        /* the name is another trial's (ids that differ only in case): ours is the
         * alternative one (see job_name) */
        char *alt = job_name(ks, w->exp_id, t->id, 1);
        if (strcmp(alt, name) != 0) {
            log_warn("trial %s: job %s belongs to another trial; following %s", t->id, name, alt);
            free(t->job_id);
            t->job_id = alt;
            alt = NULL;
        }
        free(alt);
    } else if (st == 200) {
        job_present(ks, w, t, dir, name, r, js);
    } else if (st == 404) {
        job_absent(ks, w, t, dir, name, js);
    } else {
        log_warn("trial %s: getting job %s: %ld %s", t->id, name, st, kube_status_message(r, st));
    }
    cJSON_Delete(got);
    free(name);
    free(dir);
    return rc < 0 ? -1 : 0;
}

/* ---------------- metrics and logs from the shared storage ---------------- */

int kube_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    struct kube_state *ks = w->platform;
    char *dir = trial_dir_of(ks, t);
    char *opath = stdout_path(ks, dir);
    int rc = collect_trial_dir(w->db, t, dir, opath, at_end, e);
    free(opath);
    free(dir);
    return rc;
}

int kube_pending(struct worker *w, struct trial *t)
{
    struct kube_state *ks = w->platform;
    char *dir = trial_dir_of(ks, t);
    char *opath = stdout_path(ks, dir);
    int r = trial_dir_grew(t, dir, opath);
    free(opath);
    free(dir);
    return r;
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
    char *base = job_path(ks, NULL);
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
            rc = explain(ks, "deleting the experiment's jobs", st, r, e);
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

