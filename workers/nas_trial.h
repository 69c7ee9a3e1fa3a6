/* nas_trial.h: a trial's files on a storage that is mounted on this host and, at
 * another path, in the cluster's jobs (OpenPAI's storage, PAI-DLC's NAS, DLTS's shared
 * filesystem): the code once per experiment (<root>/nni-code, our SDK in
 * <root>/nni-sdk), and per trial <root>/<trial>[.attemptN] holding parameter.cfg,
 * run.sh, the trial's output, metrics and .nni/state; the job's name and what the worker
 * knows of each held trial's job. workers/nas_trial.c; used by workers/rest/openpai.c, dlc.c,
 * dlts.c and aml.c. */
#ifndef TRIALQ_NAS_TRIAL_H
#define TRIALQ_NAS_TRIAL_H

#include "workers/worker.h"

/* The experiment's root on the storage: *local_root = <local_mount>/<exp> (created) on
 * this host, *cont_root = <cont_mount>/<exp> in the jobs. 0, or -1 with e. */
int nas_exp_roots(struct worker *w, const char *local_mount, const char *cont_mount, char **local_root,
                  char **cont_root, struct errbuf *e);
/* The trial's dir relative to the experiment's root: a retry gets a dir of its own. */
char *nas_trial_rel(const char *trial_id, int attempt);
/* <root>/<nas_trial_rel> */
char *nas_trial_dir(const char *root, const struct trial *t);
/* The job of trial t: nni_exp_<exp>_trial_<trial>, plus _attempt<N> for a retry (a
 * retry gets a job of its own). New string. */
char *nas_job_name(const char *exp_id, const struct trial *t);
/* Copies trialCodeDirectory to <local_root>/nni-code unless it is there (a resumed
 * experiment keeps the first copy), and our SDK beside it. 0, or -1 with e. */
int nas_ship_code(struct worker *w, const char *local_root, struct errbuf *e);
/* Writes <dir>/.nni, parameter.cfg and run.sh (the same content on every call, so a
 * re-attach rewrites nothing that matters). label names the platform in run.sh. */
int nas_write_trial_files(const char *dir, const struct trial *t, const char *label, struct errbuf *e);
/* One job's command: NNI's environment for the trial (as the job sees its dirs under
 * cont_root, NNI_PLATFORM = nni_platform unless NULL, no CUDA_VISIBLE_DEVICES: the
 * cluster places the GPUs), then run.sh with cmd. */
char *nas_job_command(struct worker *w, const char *cont_root, const struct trial *t, const char *nni_platform,
                      const char *cmd);
/* trialCommandChannel: http, and the api has a channel to name (its token and port).
 * Also the Kubernetes platforms' (workers/kube/submit.c). */
int nas_channel_wanted(struct worker *w);
/* When nas_channel_wanted: NNI v3's HTTP channel URL of trial t, the api's at
 * nniManagerIp with the trial's own token in its path; else NULL. New string. */
char *nas_channel_url(struct worker *w, const struct trial *t);
/* cmd run with NNI_TRIAL_COMMAND_CHANNEL=url under <trial dir>/.nni/chanrelay.py (which
 * serves the channel in the job, writing metrics to the trial's dir, so that the api's
 * restarts cost the trial nothing) when the image has python3 >= 3.5, else talking to
 * the api itself. A command for run.sh's eval; new string. */
char *nas_channel_command(const char *url, const char *cmd);
/* <dir>/.nni/chanrelay.py (sdk/chanrelay/trialq_chanrelay.py). 0, or -1 with e. */
int nas_write_chanrelay(const char *dir, struct errbuf *e);
/* <dir>/.nni/state, "<exit> <end ms> 0 <attempt>": 0 with v filled, -1 when absent. */
int nas_read_state(const char *dir, long long v[4]);
/* A job its service reports ended (ok: succeeded). The trial's own end record of this
 * attempt (<dir>/.nni/state) gives the end time and a failure's exit code where it
 * exists; else the service's word: svc_end_ms (0: now) and svc_exit (0: 1). Fills js;
 * returns whether the end record was there. */
int nas_job_ended(const char *dir, int attempt, int ok, int svc_exit, int64_t svc_end_ms, struct job_state *js);

/* collect and pending of such a platform: the trial's dir (trial.trial_dir, else the
 * attempt's dir under local_root) */
int nas_collect(struct worker *w, struct trial *t, const char *local_root, int at_end, struct errbuf *e);
int nas_pending(struct worker *w, struct trial *t, const char *local_root);
/* A fault that will not pass by itself (bad credentials, no mount, no code): logged, and
 * the experiment goes to ERROR with msg as its error. */
void nas_report_fatal(struct worker *w, const char *msg);

/* What the worker knows of each held trial's job (by trial id). */
struct nas_job {
    char *trial_id;
    int attempt;
    int need_submit; /* creation not confirmed: look for it by name, then create it */
    char *job_id;    /* the service's id of the job, when it has one of its own (DLC, DLTS) */
};
struct nas_jobs {
    struct nas_job *v;
    int n, cap;
};
/* The entry of t; *fresh = 1 when it is new or was of another attempt (then reset:
 * need_submit 0, no job_id). fresh may be NULL. */
struct nas_job *nas_job_of(struct nas_jobs *js, const struct trial *t, int *fresh);
/* nas_job_of, and for a new entry (or a retry) the service's id of the job this attempt
 * created before a restart, as <trial dir under local_root>/.nni/<marker> holds it:
 * job_id, or need_submit when there is none. */
struct nas_job *nas_job_load(struct nas_jobs *js, const char *local_root, const struct trial *t, const char *marker);
/* The job of j is id (copied): j->job_id, kept in .nni/<marker> of the trial's dir (written
 * only when it says otherwise), need_submit 0. */
void nas_job_known(struct nas_job *j, const char *local_root, const struct trial *t, const char *marker,
                   const char *id);
void nas_job_forget(struct nas_jobs *js, const char *trial_id);

/* Creates the job of j (need_submit: look for it by name first): 1 it exists (created or
 * found), 0 no answer or a passing refusal (e: a later poll tries again), -1 refused for
 * good (e). */
typedef int (*nas_try_submit_fn)(struct worker *w, struct nas_job *j, const struct trial *t, struct errbuf *e);
/* platform_ops.submit of such a platform: the trial files in the attempt's dir under
 * local_root (label names the platform in run.sh), then, unless j has its job's id, try
 * (a refusal forgets j and fails the submit; no answer leaves the trial to a later poll).
 * *job_id is the job's name, *trial_dir the dir. SUBMIT_NEW, or -1 with e. */
int nas_submit(struct worker *w, struct nas_jobs *js, struct nas_job *j, const char *local_root, const char *label,
               nas_try_submit_fn try, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e);
/* Looks for the job of j by its name: 1 it exists (j is then known: nas_job_known), 0
 * the service does not know it, -1 could not tell (e). */
typedef int (*nas_find_fn)(struct worker *w, struct nas_job *j, const struct trial *t, struct errbuf *e);
/* platform_ops.poll of such a platform while j's creation is not confirmed
 * (j->need_submit): a trial killed meanwhile ends here unless find finds its job; else
 * try creates it again (a refusal for good fails the trial with its reason). 1 when
 * that answered the poll (*rc: poll's result, js filled), 0 when the job is known now
 * and poll goes on to read its status. */
int nas_poll_unconfirmed(struct worker *w, struct nas_jobs *js, struct nas_job *j, const struct trial *t,
                         nas_try_submit_fn try, nas_find_fn find, struct job_state *st, int *rc, struct errbuf *e);
void nas_jobs_free(struct nas_jobs *js);

#endif
