/* gpu.h: GPU inventory and GPU slots. nvidia-smi's output is parsed from a text buffer
 * (common/nvsmi.h: the local worker runs the tool itself; the remote one over SSH), stored per machine
 * in the gpu table, and claimed in the same transaction as the trial (queue_claim_on),
 * so two trials - of one experiment or of two sharing the database - never hold more
 * of a GPU than maxTrialNumberPerGpu allows.
 *
 * Semantics (NNI's local/remote GPU schedulers, spec nni-platforms.md §1.12):
 *   trialGpuNumber N > 0: a trial gets N distinct GPUs, CUDA_VISIBLE_DEVICES "i,j".
 *   maxTrialNumberPerGpu M: each trial holds 1/M of each of its GPUs; a GPU takes a
 *     trial while the shares held add up to at most 1 (M trials of one experiment).
 *   useActiveGpu false: a GPU with processes on it is skipped, unless our own trials
 *     hold it (their processes are those processes).
 *   gpuIndices: only these GPUs.
 *   A trial may take every GPU of a machine (NNI's `>=` off-by-one is not copied). */
#ifndef TRIALQ_GPU_H
#define TRIALQ_GPU_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/nvsmi.h"
#include "schema/db.h"

struct trial;

#define GPU_INDEX_MAX 4096 /* the config validator's bound of a gpuIndices entry */
/* How often a worker runs nvidia-smi (NNI's collector: every 5 s). */
#define GPU_REFRESH_MS 5000

/* The create-time check of a trainingService entry whose platform places trials on this
 * host's GPUs (the single one, at -1, or entry `at` of a hybrid list) with trialGpuNumber
 * > 0 against this host: runs nvidia-smi. Returns 0 when
 * the request fits (or there is nothing to check), 1 for a warning, -1 for an error;
 * key gets the config key to name ("trainingService.trialGpuNumber"), msg the text. A
 * host without GPUs is an error for a local experiment and a warning in hybrid mode
 * (the other platforms may have GPUs). */
int gpu_check_host(const cJSON *entry, int at, const cJSON *canonical, char *key, size_t key_size, char *msg,
                   size_t msg_size);

/* What a trial asks of one machine. */
struct gpu_need {
    int count;             /* trialGpuNumber; 0 = no GPU scheduling */
    int max_per_gpu;       /* maxTrialNumberPerGpu, >= 1 */
    int use_active;        /* useActiveGpu */
    int has_filter;        /* gpuIndices given: only GPUs whose bit is set in allow */
    unsigned char allow[GPU_INDEX_MAX / 8 + 1];
};

/* Reads trialGpuNumber, maxTrialNumberPerGpu, useActiveGpu and gpuIndices from `item`
 * (a trainingService entry or a machineList entry), each falling back to `fallback`
 * (the trainingService of a machine, or the top level; may be NULL). count 0 when
 * trialGpuNumber is missing, null or 0. Returns need->count. */
int gpu_need_from_json(const cJSON *item, const cJSON *fallback, struct gpu_need *need);
/* The need of an experiment's trials on `platform`, from its canonical config text
 * (trainingService as one object or a hybrid list; top-level shortcuts). */
int gpu_need_from_config(const char *config_json, const char *platform, struct gpu_need *need);
/* "0,2" of a gpuIndices filter into sb-like text; for messages. */
void gpu_need_describe_filter(const struct gpu_need *need, char *buf, size_t size);

/* The machine row of (platform, host, port, user), shared by every experiment of this
 * database (experiment_id NULL); created when absent. port 0 / user NULL: none. */
int machine_ensure(struct db *db, const char *platform, const char *host, int port, const char *user,
                   int64_t *machine_id, struct errbuf *e);

/* Records the id of the home directory the machine's account sees (remote: the id in
 * $HOME/nni-experiments/.trialq-home): machines with one home_id share a home (NFS). */
int machine_set_home(struct db *db, int64_t machine_id, const char *home_id, struct errbuf *e);

/* Stores a collection: the machine's gpu rows become g[0..n) (rows of GPUs that vanished
 * are deleted with their claims). With collect_error != NULL the collection failed: the
 * rows are kept as they are and the error is recorded (machine.gpu_error). */
int gpu_store(struct db *db, int64_t machine_id, const struct gpu_info *g, int n,
              const char *collect_error, struct errbuf *e);

/* This host's machine row (of kind `kind`, the platform's name), refreshed from nvidia-smi when its
 * last collection is older than max_age_ms (any process's: two experiments' workers
 * share it). nvidia-smi runs outside any transaction. Returns 1 when it ran, 0 when
 * the rows were fresh enough, -1 on a database error; a failed run is stored (and
 * its message copied to collect_error, "" otherwise). */
int gpu_refresh_local(struct db *db, const char *kind, int64_t max_age_ms, int64_t *machine_id, char *collect_error,
                      size_t error_size, struct errbuf *e);

/* Deletes GPU claims that no longer hold anything: of trials that ended, or that went
 * back to the queue unclaimed (a crash between two writes can leave neither, but
 * this makes it harmless). Returns how many. */
int gpu_release_stale(struct db *db, int64_t machine_id, struct errbuf *e);
/* Releases a trial's GPU claims and clears trial.gpu_indices. */
int gpu_release_trial(struct db *db, const char *trial_id, struct errbuf *e);

/* Inside the caller's transaction: picks need->count GPUs of the machine for one more
 * trial. Returns 1 with indices (ascending, "0,2") written to idx_text, 0 when the
 * machine has not enough (reason says why: "needs 2 GPUs; host h has 1 free, 0 idle"),
 * -1 on error. */
int gpu_pick(struct db *db, int64_t machine_id, const struct gpu_need *need, char *idx_text, size_t idx_size,
             char *reason, size_t reason_size, struct errbuf *e);
/* Writes the claim rows of a pick for trial_id (share 1/max_per_gpu each). */
int gpu_claim_write(struct db *db, int64_t machine_id, const struct gpu_need *need, const char *idx_text,
                    const char *trial_id, struct errbuf *e);

#endif
