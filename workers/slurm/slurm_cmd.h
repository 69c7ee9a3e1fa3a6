/* slurm_cmd.h: the parts of the Slurm platform that run nothing (workers/slurm*.c):
 * the sbatch command line and batch script of a trial, `squeue -t all --json` (Slurm
 * 22.05's shape) read into job records, and Slurm's job states mapped to trial outcomes.
 * No process, file or database here: tests/unit/test_workers_slurm_cmd.c checks them
 * against squeue output recorded from a real cluster (tests/fixtures/slurm/).
 * docs/platforms/slurm.md describes the platform. */
#ifndef TRIALQ_SLURM_CMD_H
#define TRIALQ_SLURM_CMD_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common/common.h"

/* ---- submission ---- */

/* One attempt of a trial, as the batch job needs it. */
struct slurm_trial {
    const char *exp_id;
    const char *trial_id;
    int attempt;              /* 1, 2, ... */
    int64_t sequence;         /* NNI_TRIAL_SEQ_ID */
    const char *trial_dir;    /* on the shared filesystem: NNI_SYS_DIR and NNI_OUTPUT_DIR */
    const char *code_dir;     /* the trial code as the nodes see it (the command runs there) */
    int64_t max_trial_seconds; /* maxTrialDuration, 0 when unlimited */
    int pass_credentials;     /* passCredentials: the clouds' credentials of sbatch's environment
                               * reach the trial (else the script unsets them) */
};

/* "nni-<exp>-<trial>": the job's name, how the platform finds its jobs again (caller frees) */
char *slurm_job_name(const char *exp_id, const char *trial_id);
/* "trialq:<exp>:<trial>:<attempt>": the job's comment (caller frees) */
char *slurm_job_comment(const char *exp_id, const char *trial_id, int attempt);

/* Slurm's --time for a number of seconds: whole minutes, rounded up, as "M",
 * "H:MM:00" or "D-HH:MM:00" ("0:02:00" for 90 s). buf: at least 32 bytes. */
const char *slurm_time_format(int64_t seconds, char *buf, size_t size);
/* NNI's sizes ("8gb", "512mb", "1.5g", "100kb", or a number of megabytes) in megabytes,
 * rounded up; -1 when it is none. */
long long slurm_size_mb(const cJSON *v);

/* The seconds of timeLimit ("1h", "90m", 3600) when set, else maxTrialDuration rounded
 * up to whole minutes plus one minute (trialq's own stop comes first; Slurm's limit is
 * the backstop while no worker runs), 0 when neither is set. -1 for a bad timeLimit. */
int64_t slurm_time_limit(const cJSON *ts, int64_t max_trial_seconds);

/* The GPUs a trial asks for: gpusPerTrial, else trialGpuNumber; -1 when neither is set
 * (the job's environment is left as Slurm makes it). */
int slurm_gpus(const cJSON *ts);

/* sbatch's argv (NULL-terminated; free with slurm_argv_free) for the attempt, from the
 * trainingService keys of `platform: slurm` (ts: the canonical section): --parsable, the
 * name and comment, --output/--error in the trial dir (slurm.stdout, slurm.stderr),
 * --chdir the trial dir, --no-requeue (trialq retries a trial whose node failed, per
 * maxTrialRetries, as a new attempt), partition, account, qos, --time, nodes,
 * --cpus-per-task, --mem, --gres=gpu:N, constraint, then every sbatchArgs item as it
 * is, and last script_path. -1 with e set when a key has a value sbatch cannot take. */
int slurm_sbatch_argv(const cJSON *ts, const struct slurm_trial *t, const char *script_path, char ***argv,
                      struct errbuf *e);
void slurm_argv_free(char **argv);

/* The batch script (bash): NNI's trial variables (NNI_PLATFORM=slurm, NNI_EXP_ID,
 * NNI_TRIAL_JOB_ID, NNI_TRIAL_SEQ_ID, NNI_SYS_DIR, NNI_OUTPUT_DIR, NNI_CODE_DIR,
 * MULTI_PHASE; CUDA_VISIBLE_DEVICES empty when 0 GPUs are asked for), then setupScript
 * in the script's own shell (module load, conda activate), then trialCommand with
 * `bash -c` in the code dir, its output appended to trial.stdout / trial.stderr in the
 * trial dir. A SIGINT or SIGTERM (a stop: `scancel --full --signal=INT`, a time limit)
 * reaches the command; the script waits for it and writes its end to
 * <trial dir>/.nni/slurm_exit (write-tmp + rename) as "<exit status> <stopped 0|1>
 * <attempt>". A failed setupScript ends the job with its status before the command runs.
 * Caller frees. */
char *slurm_batch_script(const cJSON *ts, const char *trial_command, const struct slurm_trial *t);

/* 1 when a failed sbatch's message (its stderr) says the controller did not answer now
 * ("Socket timed out on send/recv operation", "Unable to contact slurm controller",
 * "temporarily unable to accept job", ...): tried again later, after looking for the job
 * in squeue (a timed-out sbatch may have been taken). 0 for a refusal (an invalid
 * partition, account or qos, a node configuration that is not available, ...): the
 * trial fails with Slurm's message. */
int slurm_sbatch_transient(const char *message);

/* The line of a job's Slurm stderr (slurm.stderr: what slurmstepd writes there) that says
 * the job was killed for its memory, or NULL: "StepId=N.batch exceeded memory limit (A >
 * B), being killed" (jobacct_gather/linux with OverMemoryKill, which leaves the job
 * FAILED, reason JobLaunchFailure, not OUT_OF_MEMORY: seen on the test cluster, e2e/97),
 * "Detected N oom-kill event(s)" (task/cgroup). *len: the line's length. */
const char *slurm_oom_line(const char *text, size_t *len);

/* Reads a .nni/slurm_exit record. 0 with the fields set, -1 when it is not one. */
int slurm_exit_parse(const char *text, int *status, int *stopped, int *attempt);

/* ---- status ---- */

/* One job of `squeue -t all --json`. Strings are owned by the array (slurm_jobs_free). */
struct slurm_job {
    long long job_id;
    char *name;
    char *trial_id;     /* from the name nni-<exp>-<trial> */
    int attempt;        /* from the comment trialq:<exp>:<trial>:<attempt>; 0 when absent */
    char *state;        /* job_state: PENDING, RUNNING, COMPLETED, ... */
    char *reason;       /* state_reason: None, Resources, Priority, BeginTime, ... */
    int exit_status;    /* exit_code: the raw wait status (exit 3 is 768) */
    int64_t submit_time, start_time, end_time; /* epoch seconds; end_time is meaningful
                                                * only for a job that ended */
    int restart_cnt;    /* times Slurm requeued it */
    char *nodes;        /* "n1", "" while pending */
};

/* The jobs of experiment exp_id in an squeue --json answer: name "nni-<exp>-<trial>"
 * and, when the job has a comment, a comment "trialq:<exp>:<trial>:..." that agrees
 * (22.05 ignores squeue's -j/-n/-u with --json: every job of the cluster is listed).
 * Other jobs are skipped. 0 with *jobs (NULL when none) and *n, or -1 with e set when
 * the text is not squeue's JSON (Slurm's own "errors" are reported too). */
int slurm_squeue_parse(const char *json, size_t len, const char *exp_id, struct slurm_job **jobs, int *n,
                       struct errbuf *e);
void slurm_jobs_free(struct slurm_job *jobs, int n);
/* The newest job (highest id) of a trial's attempt (attempt 0: of any attempt), or NULL. */
const struct slurm_job *slurm_job_find(const struct slurm_job *jobs, int n, const char *trial_id, int attempt);

enum slurm_outcome {
    SLURM_WAITING,   /* queued: message is Slurm's reason */
    SLURM_RUNNING,
    SLURM_SUCCEEDED, /* COMPLETED */
    SLURM_FAILED,    /* FAILED (exit status), TIMEOUT, OUT_OF_MEMORY, DEADLINE, ... */
    SLURM_CANCELED,  /* CANCELLED: by trialq's kill or someone's scancel */
    SLURM_RETRY,     /* NODE_FAIL, PREEMPTED, BOOT_FAIL: not the trial's fault: retried */
    SLURM_UNKNOWN,   /* a state this version does not know: keep watching, say so */
};

struct slurm_verdict {
    enum slurm_outcome outcome;
    int exit_code;   /* ended: the command's exit code, 128 + N for signal N, -1 unknown */
    char message[256]; /* the waiting reason, or why it ended, for the trial's message */
};

/* What a job's state means for its trial. */
void slurm_job_verdict(const struct slurm_job *j, struct slurm_verdict *v);
/* The same from a job state and reason name, with the raw wait status. */
void slurm_state_verdict(const char *state, const char *reason, int exit_status, int restart_cnt,
                         struct slurm_verdict *v);

#endif
