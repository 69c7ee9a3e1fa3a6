/* worker.h: the generic worker loop (claim, lease, adopt, poll, collect, kill) and the
 * interface one platform implements. Workers meet the api only in the database. */
#ifndef TRIALQ_WORKER_H
#define TRIALQ_WORKER_H

#include <cjson/cJSON.h>

#include "queue/queue.h"

struct worker;

/* What poll learned of a job. */
struct job_state {
    int finished;          /* the job ended; the fields below are valid */
    int vanished;          /* no trace of the job: it must be retried */
    int has_exit;
    int exit_code;
    int signal;            /* killed by this signal (0 = exited) */
    int stop_known;        /* the platform knows whether a stop reached the job: */
    int stopped;           /* ... it did (a kill request then names the end) */
    int64_t end_time;
    char why[200];         /* optional: why the job vanished (the trial's message) */
};

/* What submit found or did (its return value when it succeeds; -1 is an error). Only a
 * SUBMIT_NEW job under a new job id is a child the loop may expect by SIGCHLD. */
enum submit_result {
    SUBMIT_NEW = 0,   /* a job was started now */
    SUBMIT_ATTACHED,  /* a job of this attempt runs already: it is watched */
    SUBMIT_FINISHED,  /* this attempt ran to its end while no worker watched (or ends unstarted) */
    SUBMIT_VANISHED,  /* this attempt started, and nothing is left of it: poll reports it */
    SUBMIT_FAULT = -2, /* not started for a fault of the machine (a full disk: e->msg says which
                        * path); the trial waits, still ours, and submit is tried again */
};

/* How a platform's trials use GPUs: not at all, on this host's GPUs (claimed with the
 * trial from the machine row of this host, queue_claim_host), or as the platform
 * itself places them (per machine through its own claim, or by its cluster). */
enum platform_gpu_mode { PLATFORM_GPU_NONE = 0, PLATFORM_GPU_HOST, PLATFORM_GPU_OWN };

/* One platform. workers/platforms.c lists every platform: the only place that names
 * them all (docs/architecture.md, "Adding a platform"). */
struct platform_ops {
    const char *name;
    /* Once per worker: check the platform is usable (auth, paths). */
    int (*init)(struct worker *w, struct errbuf *e);
    /* Optional: `nnictl create`'s check of the platform's trainingService entry ts (the
     * list entry in hybrid mode) in the canonical config: auth, machines, cluster; e
     * names each failure and nothing is created. Runs without a worker or database. */
    int (*preflight)(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e);
    /* Starts the trial's job, or re-attaches when a job for this attempt exists already
     * (submission is idempotent). Sets *job_id and *trial_dir (new strings). Returns an
     * enum submit_result, or -1 on an error. */
    int (*submit)(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e);
    /* A child of ours exited (local): lets the platform map pid -> trial. NULL if unused. */
    const char *(*reaped)(struct worker *w, pid_t pid, int wstatus);
    int (*poll)(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e);
    int (*kill)(struct worker *w, struct trial *t, struct errbuf *e);
    /* Reads metrics reported since the stored offsets and stores them (inside the
     * caller's transaction), advancing t->metrics_offset / t->stdout_offset. at_end: the
     * job has ended, so a last stdout line without its newline is complete. */
    int (*collect)(struct worker *w, struct trial *t, int at_end, struct errbuf *e);
    /* Cheap check without the database: may collect find something new? */
    int (*pending)(struct worker *w, struct trial *t);
    void (*destroy)(struct worker *w);
    /* Optional (NULL/0 = the local defaults): how often to poll a job (ms); the host a
     * started job runs on (trial.machine); whether a trial can be placed now (a claim
     * is made only then, so no trial is taken while every machine is down or full). */
    int poll_ms;
    const char *(*machine_of)(struct worker *w, const struct trial *t);
    int (*can_claim)(struct worker *w);
    /* Optional: at experiment stop, removes what the platform holds for the experiment,
     * also jobs the database lost track of (Kubernetes: every job labelled with it).
     * Run by `trialq worker --cleanup` (nnictl stop). */
    int (*cleanup)(struct worker *w, struct errbuf *e);
    /* Optional: upkeep before each claim pass, e.g. the GPU inventory (rate-limited by
     * the platform itself; local runs nvidia-smi at most every GPU_REFRESH_MS). */
    void (*refresh)(struct worker *w);
    /* Optional: takes the next trial instead of queue_claim (remote: per machine, with
     * its GPU slots in the same transaction). 1 claimed, 0 none, -1 error. */
    int (*claim)(struct worker *w, struct trial *out, struct errbuf *e);
    /* How its trials get GPUs (PLATFORM_GPU_HOST: the loop claims with queue_claim_host
     * and `nnictl create` checks the request against this host's GPUs). */
    enum platform_gpu_mode gpu_mode;
};

struct worker_trial {
    struct trial t;
    int is_child;          /* our own child process: its exit comes by SIGCHLD */
    int kill_sent;
    int submit_pending;    /* submit met a fault (SUBMIT_FAULT): tried again at next_poll_ms */
    int64_t next_poll_ms;
};

struct worker {
    struct db *db;
    const struct platform_ops *ops;
    void *platform;          /* the platform's own state */
    char *owner;
    char *exp_id;
    char *home;
    struct experiment exp;
    cJSON *config;           /* canonical config of the experiment */
    int64_t lease_ms;
    struct worker_trial *trials; /* jobs this worker holds */
    int ntrials, cap;
    pid_t api_pid;           /* to wake with SIGUSR1 (0: none alive) */
    int wake;                /* a wake-up arrived: look for work now */
    int stop;
};

/* The registry (workers/platforms.c): every platform, NULL-terminated; the first one is
 * the default of `trialq worker`. */
extern const struct platform_ops *const platform_all[];
const struct platform_ops *platform_find(const char *name);
/* The platforms' names joined with sep ("local, kubeflow, ..."), in buf; returns buf. */
const char *platform_names(char *buf, size_t size, const char *sep);
/* This platform's trainingService entry (the list entry in hybrid mode), and a key of
 * it with the top-level value as fallback (trialCommand, trialCodeDirectory, ...). */
const cJSON *worker_ts_config(const struct worker *w);
const cJSON *worker_config_item(const struct worker *w, const char *key);
/* sdk/chanrelay/trialq_chanrelay.py, embedded at build time (CMakeLists.txt): NNI's HTTP
 * trial channel served inside a cluster trial's pod (docs/architecture.md, "The HTTP
 * trial channel") */
extern const char trialq_chanrelay_py[];

/* The platforms of an experiment whose platform column is exp_platform: that one, or
 * each entry of a hybrid trainingService list in config_json (new strings, at most
 * max). Returns how many. */
int platform_list_of(const char *exp_platform, const char *config_json, char **out, int max);

/* Hybrid mode (workers/hybrid.c): may this worker claim another trial now? Always 1 for
 * a single platform; in a hybrid experiment each live platform gets an equal share of
 * trialConcurrency first, more only for trials the others leave waiting. */
int hybrid_may_claim(struct worker *w);

/* `trialq worker --platform P --experiment ID` */
int worker_main(int argc, char **argv);

/* Reads ME-framed records from buf[0..len) and stores them; *used = bytes consumed
 * (a partial record at the end is left for the next read). */
int collect_metrics_buf(struct db *db, const char *trial_id, int attempt, const char *buf, size_t len,
                        size_t *used, struct errbuf *e);
/* Scans complete stdout lines for NNISDK_MEb'<json>' and stores those metrics; at_end:
 * the output is whole, so a last line without a newline is one too (NNI's readline
 * returns it at EOF). */
int collect_stdout_buf(struct db *db, const char *trial_id, int attempt, const char *buf, size_t len, int at_end,
                       size_t *used, struct errbuf *e);
/* Stores what a trial dir on this host holds beyond t's stored offsets: the records of
 * <dir>/.nni/metrics and the NNISDK_MEb lines of stdout_path (NULL: <dir>/trial.stdout),
 * advancing t->metrics_offset / t->stdout_offset. Inside the caller's transaction. */
int collect_trial_dir(struct db *db, struct trial *t, const char *dir, const char *stdout_path, int at_end,
                      struct errbuf *e);
/* Cheap, without the database: has either file grown past its stored offset? */
int trial_dir_grew(const struct trial *t, const char *dir, const char *stdout_path);

#endif
