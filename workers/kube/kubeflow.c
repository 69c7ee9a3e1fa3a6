/* kubeflow.c: the kubeflow platform, a TFJob (tf-operator: roles worker and ps) or a
 * PyTorchJob (pytorch-operator: master and worker) per trial. Everything it shares with
 * the other Kubernetes platforms is in the family's skeleton (workers/kube/skeleton.h);
 * here are its custom resource, its job spec and its roles' commands. */
#include <string.h>

#include "workers/kube/kube.h"

static int kubeflow_configure(struct kube_state *ks, const cJSON *ts, struct errbuf *e)
{
    const char *op = kube_jstr(ts, "operator", "tf-operator");
    int tf = strcmp(op, "tf-operator") == 0;
    ks->group = xstrdup("kubeflow.org");
    ks->version = xstrdup(kube_jstr(ts, "apiVersion", "v1"));
    ks->plural = xstrdup(tf ? "tfjobs" : "pytorchjobs");
    ks->kindname = xstrdup(tf ? "TFJob" : "PyTorchJob");
    ks->container = xstrdup(tf ? "tensorflow" : "pytorch");
    const cJSON *worker = cJSON_GetObjectItemCaseSensitive(ts, "worker");
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(ts, "ps");
    const cJSON *master = cJSON_GetObjectItemCaseSensitive(ts, "master");
    if (tf) {
        if (!worker)
            return errf(e, "kubeflow with operator tf-operator needs a worker role (and optionally ps)");
        if (master)
            return errf(e, "kubeflow: master is a pytorch-operator role; tf-operator takes worker and ps");
        kube_add_role(ks, "worker", "Worker", worker);
        if (ps)
            kube_add_role(ks, "ps", "Ps", ps);
    } else {
        if (!master)
            return errf(e, "kubeflow with operator pytorch-operator needs a master role (and optionally "
                           "worker)");
        if (ps)
            return errf(e, "kubeflow: ps is a tf-operator role; pytorch-operator takes master and worker");
        kube_add_role(ks, "master", "Master", master);
        if (worker)
            kube_add_role(ks, "worker", "Worker", worker);
    }
    return 0;
}

static const char *kubeflow_operator_hint(const struct kube_state *ks)
{
    return strcmp(ks->kindname, "TFJob") == 0 ? "install Kubeflow's tf-operator (training-operator)"
                                              : "install Kubeflow's pytorch-operator (training-operator)";
}

static void kubeflow_job_spec(struct kube_state *ks, struct worker *w, const struct trial *t, const char *name,
                              cJSON *spec)
{
    (void)w;
    (void)name;
    cJSON *rs = cJSON_AddObjectToObject(spec, strcmp(ks->kindname, "TFJob") == 0 ? "tfReplicaSpecs"
                                                                                  : "pytorchReplicaSpecs");
    for (int i = 0; i < ks->nroles; i++) {
        cJSON *r = cJSON_AddObjectToObject(rs, ks->roles[i].spec_name);
        cJSON_AddNumberToObject(r, "replicas", kube_jint(ks->roles[i].cfg, "replicas", 1));
        cJSON *tmpl = cJSON_AddObjectToObject(r, "template");
        cJSON_AddNullToObject(cJSON_AddObjectToObject(tmpl, "metadata"), "creationTimestamp");
        cJSON *podspec = kube_role_podspec(ks, &ks->roles[i], t->id, "args");
        cJSON_AddStringToObject(podspec, "restartPolicy", "ExitCode");
        kube_add_pull_secret(podspec, &ks->roles[i]);
        cJSON_AddItemToObject(tmpl, "spec", podspec);
    }
}

/* The last condition tells: Succeeded or Failed. */
static int kubeflow_finished(const cJSON *job, int *ok, const char **why)
{
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(job, "status");
    const cJSON *conds = cJSON_GetObjectItemCaseSensitive(status, "conditions");
    int n = cJSON_GetArraySize(conds);
    if (n == 0)
        return 0;
    const cJSON *last = cJSON_GetArrayItem(conds, n - 1);
    const char *type = kube_jstr(last, "type", "");
    *why = kube_jstr(last, "message", NULL);
    if (strcmp(type, "Succeeded") == 0) { *ok = 1; return 1; }
    if (strcmp(type, "Failed") == 0) { *ok = 0; return 1; }
    return 0;
}

static const char *kubeflow_role_command(const struct kube_state *ks, struct worker *w, const struct kube_role *r,
                                         int *gpus, struct strbuf *before)
{
    (void)ks;
    (void)w;
    (void)before;
    *gpus = kube_jint(r->cfg, "gpuNumber", 0);
    return kube_jstr(r->cfg, "command", "false");
}

static const struct kube_flavour kubeflow = {
    .configure = kubeflow_configure,
    .operator_hint = kubeflow_operator_hint,
    .name_prefix = "nni-exp-",
    .name_infix = "-trial-",
    .job_spec = kubeflow_job_spec,
    .finished = kubeflow_finished,
    .role_command = kubeflow_role_command,
    .storage_key = "storage",
    .storage_missing = "storage is missing",
    .scripts_on_share = 1,
};

static int kubeflow_init(struct worker *w, struct errbuf *e)
{
    return kube_init(w, &kubeflow, e);
}

static int kubeflow_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config,
                              struct errbuf *e)
{
    (void)ts; /* kube_preflight finds the entry of ops->name in config itself */
    return kube_preflight(&kubeflow, ops, config, e);
}

const struct platform_ops platform_kubeflow = KUBE_PLATFORM_OPS("kubeflow", kubeflow_init, kubeflow_preflight);
