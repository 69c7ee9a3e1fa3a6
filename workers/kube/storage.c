/* kube/storage.c: the Kubernetes platforms' shared storage (workers/kube/skeleton.h):
 * an NFS export mounted here (by us when it is not), or an Azure file share, and the
 * volume pods see it by; and shipping the trial code directory to it, once per
 * experiment: the entries that workers/nniignore.c's walk keeps (every .nniignore on
 * the way, NNI's 2,000-entry and 300 MB limits) are copied into place. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workers/kube/skeleton.h"
#include "workers/nniignore.h"

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

int kube_setup_storage(struct kube_state *ks, struct worker *w, const cJSON *ts, int check_only,
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
int kube_azure_volume(struct kube_state *ks, struct worker *w, const cJSON *st, struct errbuf *e)
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
        rc = kube_explain(ks, "creating the storage Secret", code, r, e);
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

int kube_copy_code(const char *src, const char *dst, const char *leave_out, struct errbuf *e)
{
    struct stat sb;
    if (stat(dst, &sb) == 0)
        return 0; /* copied before (by this experiment's earlier worker) */
    return code_copy_tree(src, dst, leave_out, e);
}
