/* adl.c: the adl platform, an AdaptDLJob per trial. Its launch script and preStop hook
 * travel in a ConfigMap, its checkpoints in a PersistentVolumeClaim, both owned by the
 * job; the trial's files are on the NFS share of trainingService.nfs, seen by the pod at
 * its containerMountPath. Everything it shares with the other Kubernetes platforms is in
 * the family's skeleton (workers/kube/skeleton.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/kube/kube.h"

static int adl_configure(struct kube_state *ks, const cJSON *ts, struct errbuf *e)
{
    (void)e;
    ks->group = xstrdup("adaptdl.petuum.com");
    ks->version = xstrdup("v1");
    ks->plural = xstrdup("adaptdljobs");
    ks->kindname = xstrdup("AdaptDLJob");
    ks->container = xstrdup("main");
    kube_add_role(ks, "main", NULL, ts);
    return 0;
}

static const char *adl_operator_hint(const struct kube_state *ks)
{
    (void)ks;
    return "install AdaptDL's scheduler (its AdaptDLJob CRD, e.g. with the adaptdl-sched Helm chart)";
}

static void adl_job_spec(struct kube_state *ks, struct worker *w, const struct trial *t, const char *name,
                         cJSON *spec)
{
    (void)t;
    const cJSON *ts = worker_ts_config(w);
    const cJSON *ad = cJSON_GetObjectItemCaseSensitive(ts, "adaptive");
    cJSON_AddBoolToObject(spec, "preemptible", cJSON_IsTrue(ad));
    cJSON *ps = cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "template"), "spec");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(ps, "containers"), c);
    cJSON_AddStringToObject(c, "name", "main");
    cJSON_AddStringToObject(c, "image", kube_jstr(ts, "image", ""));
    cJSON_AddStringToObject(c, "imagePullPolicy", "Always");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "command"), cJSON_CreateString("/run.sh"));
    cJSON *pre = cJSON_AddObjectToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(c, "lifecycle"),
                                                                 "preStop"), "exec");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(pre, "command"), cJSON_CreateString("/cleanup.sh"));
    cJSON *env = cJSON_AddArrayToObject(c, "env");
    static const char *const envs[][2] = {{"ADAPTDL_CHECKPOINT_PATH", "/adaptdl/checkpoint"},
                                          {"ADAPTDL_TENSORBOARD_LOGDIR", "/adaptdl/tensorboard"},
                                          {"ADAPTDL_SHARE_PATH", "/adaptdl/share"}};
    for (int i = 0; i < 3; i++) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddStringToObject(ev, "name", envs[i][0]);
        cJSON_AddStringToObject(ev, "value", envs[i][1]);
        cJSON_AddItemToArray(env, ev);
    }
    cJSON *res = cJSON_AddObjectToObject(c, "resources");
    cJSON *req = cJSON_AddObjectToObject(res, "requests");
    cJSON_AddStringToObject(req, "memory", kube_jstr(ts, "memorySize", "1Gi"));
    char buf[32];
    snprintf(buf, sizeof buf, "%d", kube_jint(ts, "cpuNumber", 1));
    cJSON_AddStringToObject(req, "cpu", buf);
    snprintf(buf, sizeof buf, "%d", kube_jint(ts, "trialGpuNumber", 0));
    cJSON_AddStringToObject(cJSON_AddObjectToObject(res, "limits"), "nvidia.com/gpu", buf);
    cJSON *mounts = cJSON_AddArrayToObject(c, "volumeMounts");
    cJSON_AddItemToArray(mounts, kube_vol_mount("adaptdl-pvc", "/adaptdl/checkpoint", "adaptdl/checkpoint"));
    cJSON_AddItemToArray(mounts, kube_vol_mount("adaptdl-pvc", "/adaptdl/share", "adaptdl/share"));
    cJSON_AddItemToArray(mounts, kube_vol_mount("adaptdl-nni-configmap", "/run.sh", "run.sh"));
    cJSON_AddItemToArray(mounts, kube_vol_mount("adaptdl-nni-configmap", "/cleanup.sh", "cleanup.sh"));
    cJSON_AddItemToArray(mounts, kube_vol_mount("nni-vol", ks->pod_mount, NULL));
    cJSON *vols = cJSON_AddArrayToObject(ps, "volumes");
    cJSON *pv = cJSON_CreateObject();
    cJSON_AddStringToObject(pv, "name", "adaptdl-pvc");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(pv, "persistentVolumeClaim"), "claimName", name);
    cJSON_AddItemToArray(vols, pv);
    cJSON *cm = cJSON_CreateObject();
    cJSON_AddStringToObject(cm, "name", "adaptdl-nni-configmap");
    cJSON *cmv = cJSON_AddObjectToObject(cm, "configMap");
    cJSON_AddStringToObject(cmv, "name", name);
    cJSON_AddNumberToObject(cmv, "defaultMode", 511);
    cJSON_AddItemToArray(vols, cm);
    cJSON_AddItemToArray(vols, cJSON_Duplicate(ks->volume, 1));
    const cJSON *ips = cJSON_GetObjectItemCaseSensitive(ts, "imagePullSecrets");
    if (cJSON_GetArraySize(ips) > 0)
        cJSON_AddItemToObject(ps, "imagePullSecrets", cJSON_Duplicate(ips, 1));
}

/* phase Succeeded or Failed */
static int adl_finished(const cJSON *job, int *ok, const char **why)
{
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(job, "status");
    const char *phase = kube_jstr(status, "phase", "");
    *why = kube_jstr(status, "message", NULL);
    if (strcmp(phase, "Succeeded") == 0) { *ok = 1; return 1; }
    if (strcmp(phase, "Failed") == 0) { *ok = 0; return 1; }
    return 0;
}

/* NNI's adl runs trialCommand with the experiment's trialGpuNumber. */
static const char *adl_role_command(const struct kube_state *ks, struct worker *w, const struct kube_role *r,
                                    int *gpus, struct strbuf *before)
{
    (void)ks;
    (void)r;
    (void)before;
    const cJSON *tg = worker_config_item(w, "trialGpuNumber");
    *gpus = cJSON_IsNumber(tg) ? tg->valueint : 0;
    const cJSON *tc = worker_config_item(w, "trialCommand");
    return cJSON_IsString(tc) ? tc->valuestring : "false";
}

/* The job's PVC and ConfigMap (owned by the job, so deleting it deletes them). */
static int adl_dependents(struct kube_state *ks, struct worker *w, const struct trial *t, const char *name,
                          const cJSON *job, int *transient, struct errbuf *e)
{
    const char *uid = kube_jstr(cJSON_GetObjectItemCaseSensitive(job, "metadata"), "uid", NULL);
    const cJSON *ts = worker_ts_config(w);
    cJSON *objs[2];
    for (int i = 0; i < 2; i++) {
        cJSON *o = objs[i] = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "apiVersion", "v1");
        cJSON_AddStringToObject(o, "kind", i == 0 ? "PersistentVolumeClaim" : "ConfigMap");
        cJSON *md = kube_metadata(ks, w, name, t->id);
        cJSON_AddItemToObject(o, "metadata", md);
        if (uid) {
            cJSON *own = cJSON_CreateObject();
            char *api = xasprintf("%s/%s", ks->group, ks->version);
            cJSON_AddStringToObject(own, "apiVersion", api);
            free(api);
            cJSON_AddStringToObject(own, "kind", ks->kindname);
            cJSON_AddStringToObject(own, "name", name);
            cJSON_AddStringToObject(own, "uid", uid);
            cJSON_AddItemToArray(cJSON_AddArrayToObject(md, "ownerReferences"), own);
        }
    }
    const cJSON *ck = cJSON_GetObjectItemCaseSensitive(ts, "checkpoint");
    cJSON *pspec = cJSON_AddObjectToObject(objs[0], "spec");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(pspec, "accessModes"), cJSON_CreateString("ReadWriteMany"));
    cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(pspec, "resources"), "requests"),
                            "storage", kube_jstr(ck, "storageSize", "1Gi"));
    if (kube_jstr(ck, "storageClass", NULL))
        cJSON_AddStringToObject(pspec, "storageClassName", kube_jstr(ck, "storageClass", NULL));
    cJSON *data = cJSON_AddObjectToObject(objs[1], "data");
    char *run = kube_role_script(ks, w, t, &ks->roles[0]);
    cJSON_AddStringToObject(data, "run.sh", run);
    free(run);
    struct strbuf cl;
    sb_init(&cl);
    sb_printf(&cl, "#!/bin/bash\n# preStop: SIGINT to the trial, then wait for it to end\npid=$(cat '%s/%s/.nni/trial.pid' "
                   "2>/dev/null)\n[ -n \"$pid\" ] || exit 0\nkill -2 \"$pid\" 2>/dev/null\n"
                   "while kill -0 \"$pid\" 2>/dev/null; do sleep 1; done\n",
              ks->pod_root, t->id);
    cJSON_AddStringToObject(data, "cleanup.sh", cl.buf);
    sb_free(&cl);
    static const char *const plurals[] = {"persistentvolumeclaims", "configmaps"};
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++) {
        char *path = xasprintf("/api/v1/namespaces/%s/%s", ks->ns, plurals[i]);
        long st;
        cJSON *r = NULL;
        if (kube_request(&ks->conn, "POST", path, objs[i], &st, &r, e) < 0) {
            *transient = 1;
            rc = -1;
        } else if (st >= 500 || st == 429) {
            *transient = 1;
            rc = errf(e, "creating %s %s: %ld %s", plurals[i], name, st, kube_status_message(r, st));
        } else if (st != 200 && st != 201 && st != 202 && st != 409) {
            rc = errf(e, "creating %s %s: %ld %s", plurals[i], name, st, kube_status_message(r, st));
            *transient = st == 401 || st == 403;
        }
        cJSON_Delete(r);
        free(path);
    }
    cJSON_Delete(objs[0]);
    cJSON_Delete(objs[1]);
    return rc;
}

static const char *const adl_cleanup[] = {"configmaps", "persistentvolumeclaims", NULL};

static const struct kube_flavour adl = {
    .configure = adl_configure,
    .operator_hint = adl_operator_hint,
    .name_prefix = "nni-exp-",
    .name_infix = "-trial-",
    .job_spec = adl_job_spec,
    .finished = adl_finished,
    .role_command = adl_role_command,
    .dependents = adl_dependents,
    .cleanup_collections = adl_cleanup,
    .storage_key = "nfs",
    .storage_missing = "adl: set nfs (server, path, containerMountPath, localMountPoint): trialq reads the trials' "
                       "metrics and logs from that share",
    .nfs_only = 1,
};

static int adl_init(struct worker *w, struct errbuf *e)
{
    return kube_init(w, &adl, e);
}

static int adl_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    (void)ts; /* kube_preflight finds the entry of ops->name in config itself */
    return kube_preflight(&adl, ops, config, e);
}

const struct platform_ops platform_adl = KUBE_PLATFORM_OPS("adl", adl_init, adl_preflight);
