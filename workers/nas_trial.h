/* nas_trial.h: a trial's files on a storage that is mounted on this host and, at
 * another path, in the cluster's jobs (OpenPAI's storage, PAI-DLC's NAS): the code
 * once per experiment (<root>/nni-code, our SDK in <root>/nni-sdk), and per trial
 * <root>/<trial>[.attemptN] holding parameter.cfg, run.sh, the trial's output,
 * metrics and .nni/state. workers/nas_trial.c; used by workers/openpai.c and dlc.c. */
#ifndef TRIALQ_NAS_TRIAL_H
#define TRIALQ_NAS_TRIAL_H

#include "workers/worker.h"

/* The trial's dir relative to the experiment's root: a retry gets a dir of its own. */
char *nas_trial_rel(const char *trial_id, int attempt);
/* <root>/<nas_trial_rel> */
char *nas_trial_dir(const char *root, const struct trial *t);
/* Copies trialCodeDirectory to <local_root>/nni-code unless it is there (a resumed
 * experiment keeps the first copy), and our SDK beside it. 0, or -1 with e. */
int nas_ship_code(struct worker *w, const char *local_root, struct errbuf *e);
/* Writes <dir>/.nni, parameter.cfg and run.sh (the same content on every call, so a
 * re-attach rewrites nothing that matters). label names the platform in run.sh. */
int nas_write_trial_files(const char *dir, const struct trial *t, const char *label, struct errbuf *e);
/* One job's command: NNI's environment for the trial (as the job sees its dirs under
 * cont_root, NNI_PLATFORM = nni_platform, no CUDA_VISIBLE_DEVICES: the cluster places
 * the GPUs), then run.sh with cmd. */
char *nas_job_command(struct worker *w, const char *cont_root, const struct trial *t, const char *nni_platform,
                      const char *cmd);
/* <dir>/.nni/state, "<exit> <end ms> 0 <attempt>": 0 with v filled, -1 when absent. */
int nas_read_state(const char *dir, long long v[4]);

/* collect and pending of such a platform: the trial's dir (trial.trial_dir, else the
 * attempt's dir under local_root) */
int nas_collect(struct worker *w, struct trial *t, const char *local_root, int at_end, struct errbuf *e);
int nas_pending(struct worker *w, struct trial *t, const char *local_root);
/* A fault that will not pass by itself (bad credentials, no mount, no code): logged, and
 * the experiment goes to ERROR with msg as its error. */
void nas_report_fatal(struct worker *w, const char *msg);
/* libcurl's write callback into a struct strbuf (ud), refusing answers over 8 MiB. */
size_t nas_curl_body(char *ptr, size_t size, size_t n, void *ud);

#endif
