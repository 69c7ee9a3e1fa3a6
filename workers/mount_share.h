/* mount_share.h: the trial files of platforms whose jobs see a shared filesystem that is
 * also mounted on this host (OpenPAI, DLTS): the code and the SDK copied once per
 * experiment, the launch script, the exit status the script leaves there. */
#ifndef TRIALQ_MOUNT_SHARE_H
#define TRIALQ_MOUNT_SHARE_H

#include "workers/worker.h"

/* Copies trialCodeDirectory to <local_root>/nni-code and trialq's SDK to
 * <local_root>/nni-sdk, each only when absent (a resumed experiment keeps the first
 * copy). -1 when the code cannot be copied (e: "trialCodeDirectory: ..."); a missing
 * SDK is only a warning (images with the nni package do not need it). */
int share_prepare(struct worker *w, const char *local_root, struct errbuf *e);

/* The launch script of trial dir $NNI_SYS_DIR (bash, inside the job; $1 is the trial
 * command): the code copied into code/, the SDK of ../nni-sdk when the image has no nni
 * package, stdout/stderr to trial.stdout/trial.stderr, and "<exit> <end ms> 0
 * <attempt>" into .nni/state when the command ends. platform names it in a comment. */
char *share_run_script(const struct trial *t, const char *platform);

/* The job of trial t: nni_exp_<exp>_trial_<trial>, plus _attempt<N> for a retry (a
 * retry gets a job of its own). */
char *share_job_name(const char *exp_id, const struct trial *t);
/* The trial's dir under <mount>/<exp>: <trial>, or <trial>.attempt<N> for a retry. */
char *share_trial_rel(const struct trial *t);
/* Writes parameter.cfg and the launch script (share_run_script) into dir (and makes
 * dir/.nni): the same content on every call, so a re-attach changes nothing. */
int share_write_trial(const struct trial *t, const char *dir, const char *platform, struct errbuf *e);
/* The job's command: NNI's environment of t (NNI_SYS_DIR = <cont_root>/<trial rel>, the
 * code in <cont_root>/nni-code; NNI_PLATFORM nni_platform unless NULL; no
 * CUDA_VISIBLE_DEVICES: the cluster places the GPUs) as export lines, then the launch
 * script with cmd. New string. */
char *share_job_command(struct worker *w, const struct trial *t, const char *cont_root, const char *nni_platform,
                        const char *cmd);
/* The trial's dir on this host: t->trial_dir, else <local_root>/<trial rel>. New string. */
char *share_trial_dir(const struct trial *t, const char *local_root);
/* platform_ops.collect and .pending of such a platform: the metrics of the trial dir */
int share_collect(struct worker *w, struct trial *t, const char *local_root, int at_end, struct errbuf *e);
int share_pending(const struct trial *t, const char *local_root);
/* What the worker knows of each held trial's job (by trial id). */
struct share_job {
    char *trial_id;
    int attempt;
    int need_submit; /* creation not confirmed: look for it, then create it */
    char *job_id;    /* the service's id of the job, when it has one of its own (DLTS) */
};
struct share_jobs {
    struct share_job *v;
    int n, cap;
};
/* The entry of t; *fresh = 1 when it is new or was of another attempt (then reset:
 * need_submit 0, no job_id). */
struct share_job *share_job_of(struct share_jobs *js, const struct trial *t, int *fresh);
void share_job_forget(struct share_jobs *js, const char *trial_id);
void share_jobs_free(struct share_jobs *js);

/* The experiment fails with msg (a config error that will not get better by itself). */
void share_fatal(struct worker *w, const char *msg);

/* <dir>/.nni/state as the script wrote it: 0 and v = {exit, end ms, 0, attempt}, else -1. */
int share_read_state(const char *dir, long long v[4]);

#endif
