/* queue.h: the trial row is the job. Claim with a lease, renew it, adopt the trials of
 * dead owners, and move trials through their lifecycle with guarded transitions that
 * each log an event. Every function joins the caller's transaction if one is open. */
#ifndef TRIALQ_QUEUE_H
#define TRIALQ_QUEUE_H

#include "queue/gpu.h"
#include "schema/schema.h"

/* This process as a lease owner: "<host>:<pid>:<proc start time>". Caller frees. */
char *queue_owner_id(void);
/* 1 when owner names a process on this host that no longer runs. */
int queue_owner_dead(const char *owner);

/* Takes the next WAITING, unleased trial of the experiment for this platform.
 * Returns 1 with *out filled, 0 when there is none, -1 on error. */
int queue_claim(struct db *db, const char *exp_id, const char *platform, const char *owner,
                int64_t lease_ms, struct trial *out, struct errbuf *e);
/* queue_claim for a platform that places trials on this host's GPUs (platform_ops
 * gpu_mode PLATFORM_GPU_HOST): a trial that needs GPUs (trialGpuNumber > 0 in the
 * platform's trainingService entry) is claimed as queue_claim_on this host's machine
 * row (kind: the platform's name); one that cannot get its GPUs stays WAITING with
 * waiting_reason saying why. */
int queue_claim_host(struct db *db, const char *exp_id, const char *platform, const char *owner,
                     int64_t lease_ms, struct trial *out, struct errbuf *e);

/* Takes the next WAITING trial for one machine: with need->count > 0 only when the
 * machine has the GPUs, which are claimed in the same transaction (gpu_claim rows,
 * out->gpu_indices "0,2"); with need NULL or count 0 like queue_claim without GPUs.
 * Returns 1 claimed, 0 none (reason, when given, says why a waiting trial cannot get
 * GPUs - "needs 2 GPUs; host h has 1 free, 0 idle" - and is "" when there is no trial
 * or trialConcurrency is reached), -1 error. Writes no waiting_reason itself. */
int queue_claim_on(struct db *db, const char *exp_id, const char *platform, const char *owner,
                   int64_t lease_ms, int64_t machine_id, const struct gpu_need *need, struct trial *out,
                   char *reason, size_t reason_size, struct errbuf *e);
/* Sets waiting_reason of the experiment's unclaimed WAITING trials of this platform
 * (or 'hybrid') where it differs. Returns how many changed. */
int queue_set_waiting_reason(struct db *db, const char *exp_id, const char *platform, const char *reason,
                             struct errbuf *e);
/* Extends the lease of every trial this owner holds. Returns how many. */
int queue_renew(struct db *db, const char *owner, int64_t lease_ms, struct errbuf *e);
/* Takes over non-final trials of the experiment/platform whose lease expired or whose
 * owner died on this host. *out is a new array of *n trials (caller clears each). */
int queue_adopt(struct db *db, const char *exp_id, const char *platform, const char *owner,
                int64_t lease_ms, struct trial **out, int *n, struct errbuf *e);
/* Gives a claimed trial back (lease cleared, GPU claims released) without changing its
 * status. */
int queue_release(struct db *db, const char *trial_id, const char *owner, struct errbuf *e);

/* WAITING -> RUNNING, by the lease owner, recording the platform job handle. */
int trial_mark_running(struct db *db, const char *trial_id, const char *owner, const char *job_id,
                       const char *machine, const char *trial_dir, int64_t start_time,
                       struct errbuf *e);
/* Records the job handle and trial dir while still WAITING (before the job starts). */
int trial_set_job(struct db *db, const char *trial_id, const char *owner, const char *job_id,
                  const char *trial_dir, struct errbuf *e);
/* The waiting_reason of a WAITING trial this owner holds (its job waits in the
 * platform's queue: Slurm's reason). Returns rows changed or -1. */
int trial_set_waiting_reason(struct db *db, const char *trial_id, const char *owner, const char *reason,
                             struct errbuf *e);
/* RUNNING or WAITING -> final status. has_exit: exit_code valid. Clears the lease.
 * Returns 1 changed, 0 when the guard did not match (already final, or not ours). */
int trial_finish(struct db *db, const char *trial_id, const char *owner, const char *to,
                 int has_exit, int exit_code, int64_t end_time, const char *message,
                 struct errbuf *e);
/* The job vanished: back to WAITING with attempt+1 while attempts remain, else FAILED. */
int trial_requeue(struct db *db, const char *trial_id, const char *owner, const char *reason,
                  struct errbuf *e);
/* Asks for a trial to end with status `kind` (USER_CANCELED, EARLY_STOPPED). An unclaimed
 * WAITING trial ends at once; a running one gets kill_request set for its worker.
 * Returns 1 when something changed, 0 when the trial is already final, -1 on error. */
int trial_request_kill(struct db *db, const char *trial_id, const char *kind, const char *reason,
                       struct errbuf *e);
/* Stores metric/stdout read offsets (after the metrics they cover were inserted). */
int trial_set_offsets(struct db *db, const char *trial_id, int64_t metrics_off, int64_t stdout_off,
                      struct errbuf *e);

#endif
