/* kube/skeleton.h: the Kubernetes platforms' shared skeleton (workers/kube/kube.h's ops),
 * internal to its files: kube/lifecycle.c (setup, init, preflight, destroy, cleanup),
 * kube/api.c (the API's checks), kube/storage.c (the shared storage), kube/resource.c
 * (a trial's custom resource), kube/submit.c (its start) and kube/status.c (its state).
 * The flavours (kubeflow.c, frameworkcontroller.c, adl.c) include kube.h only. */
#ifndef TRIALQ_KUBE_SKELETON_H
#define TRIALQ_KUBE_SKELETON_H

#include "workers/kube/kube.h"

#define POD_MOUNT "/tmp/mount"
#define APP_LABEL "nni-kubernetes-trial"
/* on a job whose trial's end is recorded (kube_ended): listings leave it out */
#define ENDED_LABEL "trialq-ended"
#define LIST_LIMIT 500 /* jobs per page of a listing (kubectl's chunk size) */

/* A mount, umount, sudo or az call that does not answer (an NFS server gone) must not
 * hold the worker: it is ended after this long. */
#define TOOL_TIMEOUT_MS 60000

char *kube_lower(const char *s);

char *kube_trial_local_dir(struct kube_state *ks, const char *id);

/* The trial's dir on the storage: the one recorded, else where submit puts it. */
char *kube_trial_dir_of(struct kube_state *ks, const struct trial *t);

/* A first answer that is not what we need becomes a message naming what to fix. */
int kube_explain(struct kube_state *ks, const char *what, long status, const cJSON *resp, struct errbuf *e);

/* The API server, the API group and version, the resource and the right to list it. */
int kube_check_api(struct kube_state *ks, struct errbuf *e);

int kube_setup_storage(struct kube_state *ks, struct worker *w, const cJSON *ts, int check_only,
                       struct errbuf *e);

/* The Azure file volume needs a Secret with the account key (from Key Vault, as NNI). */
int kube_azure_volume(struct kube_state *ks, struct worker *w, const cJSON *st, struct errbuf *e);

/* privateRegistryAuthPath -> a dockerconfigjson Secret, one per role and experiment. */
int kube_pull_secret(struct kube_state *ks, struct worker *w, struct kube_role *r, const char *file,
                     struct errbuf *e);

/* ---------------- the custom resources ---------------- */
char *kube_job_name(struct kube_state *ks, const char *exp, const char *trial, int alt);

cJSON *kube_build_job(struct kube_state *ks, struct worker *w, const struct trial *t, const char *name);

char *kube_stdout_path(struct kube_state *ks, const char *dir);

int kube_marker_exists(const char *dir);

void kube_marker_write(const char *dir, const char *name);

/* ---------------- create, with adoption ---------------- */
char *kube_job_path(struct kube_state *ks, const char *name);

int kube_owned_by(const cJSON *job, const char *trial);

/* Creates the job (or adopts the one of this trial). Returns 0 created/adopted with
 * *name_out set, 1 transient failure (retry later), -1 refused (e says why). */
int kube_create_job(struct kube_state *ks, struct worker *w, const struct trial *t, const char *dir,
                    char **name_out, struct errbuf *e);

#endif
