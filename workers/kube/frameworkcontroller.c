/* frameworkcontroller.c: the frameworkcontroller platform, a Framework per trial with
 * the trainingService's task roles, each behind FrameworkController's barrier. Everything
 * it shares with the other Kubernetes platforms is in the family's skeleton
 * (workers/kube/skeleton.h); here are its custom resource, its job spec and its roles'
 * commands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "workers/kube/kube.h"

/* The port of role i, in the pod spec and in the barrier's FB_<ROLE>_PORT. */
#define ROLE_PORT(i) (4000 + (i))

static int fc_configure(struct kube_state *ks, const cJSON *ts, struct errbuf *e)
{
    ks->group = xstrdup("frameworkcontroller.microsoft.com");
    ks->version = xstrdup("v1");
    ks->plural = xstrdup("frameworks");
    ks->kindname = xstrdup("Framework");
    ks->container = xstrdup("framework");
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(ts, "taskRoles"))
        kube_add_role(ks, kube_jstr(r, "name", "worker"), NULL, r);
    if (ks->nroles == 0)
        return errf(e, "frameworkcontroller: taskRoles is empty");
    return 0;
}

static const char *fc_operator_hint(const struct kube_state *ks)
{
    (void)ks;
    return "install FrameworkController (its Framework CRD)";
}

/* A role's pod: the shared one, plus the barrier (an init container and its volume)
 * and the role's port. */
static cJSON *fc_podspec(struct kube_state *ks, const struct kube_role *r, const char *trial, int port)
{
    cJSON *spec = kube_role_podspec(ks, r, trial, "command");
    cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(spec, "containers"), 0);
    cJSON *mounts = cJSON_GetObjectItemCaseSensitive(c, "volumeMounts");
    cJSON *vols = cJSON_GetObjectItemCaseSensitive(spec, "volumes");
    cJSON_AddItemToArray(mounts, kube_vol_mount("frameworkbarrier-volume", "/mnt/frameworkbarrier", NULL));
    cJSON *ports = cJSON_AddArrayToObject(c, "ports");
    cJSON *p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "containerPort", port);
    cJSON_AddItemToArray(ports, p);
    cJSON *inits = cJSON_AddArrayToObject(spec, "initContainers");
    cJSON *ic = cJSON_CreateObject();
    cJSON_AddStringToObject(ic, "name", "frameworkbarrier");
    cJSON_AddStringToObject(ic, "image", "frameworkcontroller/frameworkbarrier");
    cJSON *im = cJSON_AddArrayToObject(ic, "volumeMounts");
    cJSON_AddItemToArray(im, kube_vol_mount("frameworkbarrier-volume", "/mnt/frameworkbarrier", NULL));
    cJSON_AddItemToArray(inits, ic);
    cJSON *bv = cJSON_CreateObject();
    cJSON_AddStringToObject(bv, "name", "frameworkbarrier-volume");
    cJSON_AddObjectToObject(bv, "emptyDir");
    cJSON_AddItemToArray(vols, bv);
    cJSON_AddStringToObject(spec, "restartPolicy", "OnFailure");
    cJSON_AddBoolToObject(spec, "hostNetwork", 0);
    kube_add_pull_secret(spec, r);
    return spec;
}

static void fc_job_spec(struct kube_state *ks, struct worker *w, const struct trial *t, const char *name,
                        cJSON *spec)
{
    (void)name;
    cJSON_AddStringToObject(spec, "executionType", "Start");
    cJSON *roles = cJSON_AddArrayToObject(spec, "taskRoles");
    const cJSON *ts = worker_ts_config(w);
    const char *sa = kube_jstr(ts, "serviceAccountName", NULL);
    for (int i = 0; i < ks->nroles; i++) {
        const cJSON *rc = ks->roles[i].cfg;
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToArray(roles, r);
        cJSON_AddStringToObject(r, "name", ks->roles[i].name);
        cJSON_AddNumberToObject(r, "taskNumber", kube_jint(rc, "taskNumber", 1));
        const cJSON *pol = cJSON_GetObjectItemCaseSensitive(rc, "frameworkAttemptCompletionPolicy");
        cJSON *p = cJSON_AddObjectToObject(r, "frameworkAttemptCompletionPolicy");
        cJSON_AddNumberToObject(p, "minFailedTaskCount", kube_jint(pol, "minFailedTaskCount", 1));
        cJSON_AddNumberToObject(p, "minSucceededTaskCount", kube_jint(pol, "minSucceedTaskCount", -1));
        cJSON *podspec = fc_podspec(ks, &ks->roles[i], t->id, ROLE_PORT(i));
        if (sa)
            cJSON_AddStringToObject(podspec, "serviceAccountName", sa);
        cJSON_AddItemToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(r, "task"), "pod"), "spec", podspec);
    }
}

/* Completed, with the attempt's completion status naming success or not. */
static int fc_finished(const cJSON *job, int *ok, const char **why)
{
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(job, "status");
    if (strcmp(kube_jstr(status, "state", ""), "Completed") != 0)
        return 0;
    const cJSON *cs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(status, "attemptStatus"),
                                                       "completionStatus");
    const char *name = kube_jstr(cJSON_GetObjectItemCaseSensitive(cs, "type"), "name", "");
    *why = kube_jstr(cs, "diagnostics", NULL);
    *ok = strcmp(name, "Succeeded") == 0;
    return 1;
}

/* The role's command, after FrameworkController's barrier: the ports of every role,
 * then its injector. */
static const char *fc_role_command(const struct kube_state *ks, struct worker *w, const struct kube_role *r,
                                   int *gpus, struct strbuf *before)
{
    (void)w;
    *gpus = kube_jint(r->cfg, "gpuNumber", 0);
    sb_puts(before, "export");
    for (int i = 0; i < ks->nroles; i++) {
        char *up = xstrdup(ks->roles[i].name);
        for (char *p = up; *p; p++) {
            if (*p >= 'a' && *p <= 'z')
                *p = (char)(*p - 'a' + 'A');
            else if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
                *p = '_';
        }
        sb_printf(before, " FB_%s_PORT=%d", up, ROLE_PORT(i));
        free(up);
    }
    sb_puts(before, " && . /mnt/frameworkbarrier/injector.sh && ");
    return kube_jstr(r->cfg, "command", "false");
}

static const struct kube_flavour frameworkcontroller = {
    .configure = fc_configure,
    .operator_hint = fc_operator_hint,
    .name_prefix = "nniexp",
    .name_infix = "trial",
    .job_spec = fc_job_spec,
    .finished = fc_finished,
    .role_command = fc_role_command,
    .storage_key = "storage",
    .storage_missing = "storage is missing",
    .scripts_on_share = 1,
};

static int fc_init(struct worker *w, struct errbuf *e)
{
    return kube_init(w, &frameworkcontroller, e);
}

static int fc_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    (void)ts; /* kube_preflight finds the entry of ops->name in config itself */
    return kube_preflight(&frameworkcontroller, ops, config, e);
}

const struct platform_ops platform_frameworkcontroller =
    KUBE_PLATFORM_OPS("frameworkcontroller", fc_init, fc_preflight);
