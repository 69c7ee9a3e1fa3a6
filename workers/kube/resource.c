/* kube/resource.c: the custom resource of a trial (workers/kube/skeleton.h): its name
 * as NNI names it, its metadata and labels, its roles' pod specs and resources. */
#include <stdlib.h>

#include "workers/kube/skeleton.h"

/* ---------------- the custom resources ---------------- */

char *kube_job_name(struct kube_state *ks, const char *exp, const char *trial, int alt)
{
    char *n = xasprintf("%s%s%s%s", ks->fl->name_prefix, exp, ks->fl->name_infix, trial);
    char *l = kube_lower(n);
    free(n);
    if (!alt)
        return l;
    /* NNI kube_lower-cases names, so trials aBcde and abcde would collide: the second one
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

cJSON *kube_build_job(struct kube_state *ks, struct worker *w, const struct trial *t, const char *name)
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
