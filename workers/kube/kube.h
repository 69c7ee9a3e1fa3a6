/* kube.h: what the Kubernetes-family platforms (kubeflow, frameworkcontroller, adl)
 * share: a kubeconfig read as kubectl reads it, a small REST client on libcurl, and the
 * shared-storage helpers (code copy honouring .nniignore). Internal to workers/. */
#ifndef TRIALQ_KUBE_H
#define TRIALQ_KUBE_H

#include <curl/curl.h>

#include "workers/job_listing.h"
#include "workers/rest_client.h"
#include "workers/worker.h"

/* With trialCommandChannel: http and the launch scripts on the shared storage: the
 * api's channel URL for the trial (its token in it), in the trial directory, mode 0600
 * in a 0700 .nni/, read by the launch script (the scripts themselves, which trial-file
 * serves, hold no token) */
#define KUBE_API_CHANNEL_FILE ".nni/api-channel"

/* One cluster connection, from the kubeconfig's current context. */
struct kube_conn {
    char *source;     /* the kubeconfig file(s), for messages */
    char *context, *cluster, *user;
    char *server;     /* https://host:port, without a trailing slash */
    char *ca_file;    /* certificate-authority (absolute) */
    char *ca_pem;     /* certificate-authority-data, decoded */
    size_t ca_len;
    char *cert_file, *key_file;
    char *cert_pem, *key_pem; /* client-certificate-data / client-key-data, decoded */
    size_t cert_len, key_len;
    char *token;      /* bearer token (token or tokenFile) */
    char *username, *password;
    int insecure;     /* insecure-skip-tls-verify */
    char *namespace;  /* the context's namespace, NULL if none */
    struct rest_client rest; /* made by the first request; its back-off after transport errors, 5xx, 429 */
};

/* Reads $KUBECONFIG (a ':' list, merged as kubectl does) or ~/.kube/config. */
int kube_config_load(struct kube_conn *k, struct errbuf *e);
void kube_conn_clear(struct kube_conn *k);

/* One request. Returns 0 when the server answered (*status holds the HTTP status and
 * *resp the parsed JSON body or NULL), -1 on a transport error or while backing off (e
 * says what). body may be NULL. A transport error, 5xx or 429 sets rest_client's back-off
 * (a 429's Retry-After: that long, up to a minute); kube_backing_off() tells. */
int kube_request(struct kube_conn *k, const char *method, const char *path, const cJSON *body, long *status,
                 cJSON **resp, struct errbuf *e);
int kube_backing_off(const struct kube_conn *k);
/* The "message" of a Status object, or a short text for the status code. */
const char *kube_status_message(const cJSON *resp, long status);
/* Percent-encodes a query value. Caller frees. */
char *kube_escape(const char *s);

/* Copies src into dst (which must not exist yet) honouring .nniignore files, within NNI's
 * limits (2,000 files and directories, 300 MB), without the file leave_out (the
 * experiment's config; NULL for none): a copy to dst.tmp-<pid>, then rename; an
 * existing dst is kept. */
int kube_copy_code(const char *src, const char *dst, const char *leave_out, struct errbuf *e);

/* ---------------- the platforms: the skeleton plus one flavour each ----------------
 * The skeleton (workers/kube/skeleton.h names its files) holds what kubeflow,
 * frameworkcontroller and adl share (storage, API checks, create with adoption, poll,
 * kill, collect, cleanup, the launch script);
 * workers/kube/kubeflow.c, frameworkcontroller.c and adl.c each define their platform_ops with
 * KUBE_PLATFORM_OPS and a struct kube_flavour: their custom resource, job spec and the
 * specifics of their launch script. */

struct kube_role {
    char *name;         /* worker, ps, master, or the task role's name */
    char *spec_name;    /* Worker, Ps, Master (kubeflow) */
    const cJSON *cfg;
    char *pull_secret;  /* Secret for privateRegistryAuthPath, or NULL */
};

struct kube_flavour;

struct kube_state {
    const struct kube_flavour *fl;
    const char *platform;
    struct kube_conn conn;
    char *group, *version, *plural, *kindname, *container;
    char *ns;
    char *local_mount, *pod_mount;  /* the storage here and in pods */
    char *local_root, *pod_root;    /* .../nni/<exp> */
    int we_mounted;
    cJSON *volume;                  /* the storage volume of the pods, named nni-vol */
    struct kube_role *roles;        /* kube_add_role */
    int nroles;
    int chief;                      /* the role whose stdout carries the metrics */
    char *exp_lower;
    /* the last listing of the experiment's jobs (kube_poll_all): {metadata, status} of
     * each by name */
    struct job_listing listed;
    int list_limit;                 /* items per page (TRIALQ_KUBE_LIST_LIMIT, 500) */
};

/* What one Kubernetes platform adds to the skeleton. */
struct kube_flavour {
    /* From the trainingService entry: group, version, plural, kindname and container
     * (xstrdup'ed), and the roles (kube_add_role); or a message naming what is wrong. */
    int (*configure)(struct kube_state *ks, const cJSON *ts, struct errbuf *e);
    /* what to install when the cluster lacks the API group or resource */
    const char *(*operator_hint)(const struct kube_state *ks);
    /* the job's name: <name_prefix><experiment><name_infix><trial>, lower-cased */
    const char *name_prefix, *name_infix;
    /* fills the custom resource's "spec" */
    void (*job_spec)(struct kube_state *ks, struct worker *w, const struct trial *t, const char *name,
                     cJSON *spec);
    /* 1 when the job has ended (*ok: it succeeded; *why: the platform's reason or NULL),
     * 0 while it runs */
    int (*finished)(const cJSON *job, int *ok, const char **why);
    /* role r's command; sets *gpus, and may put in before what runs ahead of the command
     * in its shell (FrameworkController's barrier, ending in "&& ") */
    const char *(*role_command)(const struct kube_state *ks, struct worker *w, const struct kube_role *r,
                                int *gpus, struct strbuf *before);
    /* objects the job needs beside it, created once the job exists (adl: its PVC and
     * ConfigMap), or NULL: 0 done, -1 failed (*transient set when a retry may do) */
    int (*dependents)(struct kube_state *ks, struct worker *w, const struct trial *t, const char *name,
                      const cJSON *job, int *transient, struct errbuf *e);
    /* core/v1 collections beside the jobs and Secrets that stop deletes by the
     * experiment's label, NULL-terminated (or NULL) */
    const char *const *cleanup_collections;
    /* the storage's trainingService key ("storage" or "nfs"), and the message when absent */
    const char *storage_key, *storage_missing;
    /* 1: the storage is an NFS export only, seen by pods at its containerMountPath */
    int nfs_only;
    /* 1: each role runs run_<role>.sh (with install_nni.sh) from the trial's dir on the
     * storage and writes output/<role>_output/; 0: one role writes output/, its launch
     * script travels in the dependents, and it records its pid for a preStop hook */
    int scripts_on_share;
};

static inline const char *kube_jstr(const cJSON *o, const char *k, const char *def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : def;
}

static inline int kube_jint(const cJSON *o, const char *k, int def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valueint : def;
}

/* NNI's memorySize: a number of MB or "512mb", "8gb", ... (units of 1024) -> MB. */
long long kube_memory_mb(const cJSON *v, long long def);
void kube_add_role(struct kube_state *ks, const char *name, const char *spec_name, const cJSON *cfg);
/* base/output/<role>_output, or base/output for a single-output flavour. Caller frees. */
char *kube_output_dir(const struct kube_state *ks, const char *base, const char *role);
/* The job's metadata: name, namespace and the labels app, expId, trialId. */
cJSON *kube_metadata(struct kube_state *ks, struct worker *w, const char *name, const char *trial);
cJSON *kube_vol_mount(const char *name, const char *path, const char *sub);
void kube_add_pull_secret(cJSON *podspec, const struct kube_role *r);
cJSON *kube_role_podspec(struct kube_state *ks, const struct kube_role *r, const char *trial,
                         const char *command_key);
/* The launch script of role r of trial t. Caller frees. */
char *kube_role_script(struct kube_state *ks, struct worker *w, const struct trial *t, const struct kube_role *r);

/* `nnictl create` checks kubeconfig, API server, credentials, CRD and storage before
 * anything is stored. */
int kube_preflight(const struct kube_flavour *fl, const struct platform_ops *ops, const cJSON *config,
                   struct errbuf *e);
int kube_init(struct worker *w, const struct kube_flavour *fl, struct errbuf *e);
int kube_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e);
int kube_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e);
int kube_poll_all(struct worker *w, struct errbuf *e);
void kube_ended(struct worker *w, const struct trial *t);
int kube_kill(struct worker *w, struct trial *t, struct errbuf *e);
int kube_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e);
int kube_pending(struct worker *w, struct trial *t);
void kube_destroy(struct worker *w);
int kube_cleanup(struct worker *w, struct errbuf *e);

/* A platform file's ops: its init and preflight bind its flavour, the rest is shared.
 * The loop lists the experiment's jobs every second (one paged LIST by its label, less
 * those labelled ended by kube_ended), and polls each from that listing
 * (TRIALQ_KUBE_POLL_MS: kube_init sets w->poll_ms). */
#define KUBE_PLATFORM_OPS(NAME, INIT, PREFLIGHT)                                                            \
    {                                                                                                       \
        .name = NAME, .init = INIT, .submit = kube_submit, .poll = kube_poll, .kill = kube_kill,            \
        .poll_all = kube_poll_all, .ended = kube_ended,                                                     \
        .collect = kube_collect, .pending = kube_pending, .destroy = kube_destroy, .cleanup = kube_cleanup, \
        .poll_ms = 1000, .preflight = PREFLIGHT, .gpu_mode = PLATFORM_GPU_OWN, .submit_rate = 20,            \
    }

#endif
