/* worker.h: the generic worker loop (claim, lease, adopt, poll, collect, kill) and the
 * interface one platform implements. Workers meet the api only in the database. */
#ifndef TRIALQ_WORKER_H
#define TRIALQ_WORKER_H

#include <cjson/cJSON.h>

#include "queue/queue.h"
#include "schema/counters.h"

struct worker;

/* What poll learned of a job. */
struct job_state {
    int finished;          /* the job ended; the fields below are valid */
    int waiting;           /* it waits in the platform's queue (ops->queued_start): why
                            * says why, shown as the WAITING trial's waitingReason */
    int vanished;          /* no trace of the job: it must be retried */
    int has_exit;
    int exit_code;
    int signal;            /* killed by this signal (0 = exited) */
    int stop_known;        /* the platform knows whether a stop reached the job: */
    int stopped;           /* ... it did (a kill request then names the end); or
                            * JOB_STOPPED_EXPERIMENT: the experiment's stop did, which the
                            * database may not hold (USER_CANCELED without a kill request) */
    int64_t end_time;
    char why[512];         /* optional: the trial's message: why the job vanished, or why
                            * a finished job failed (else "exit code N") */
};

/* job_state.stopped: the experiment's stop ended the job (nnictl stop itself, from the
 * platform's files, host_job: the database refused the stop). */
#define JOB_STOPPED_EXPERIMENT 2

/* What submit found or did (its return value when it succeeds; -1 is an error). Only a
 * SUBMIT_NEW job under a new job id is a child the loop may expect by SIGCHLD. */
enum submit_result {
    SUBMIT_NEW = 0,   /* a job was started now */
    SUBMIT_ATTACHED,  /* a job of this attempt runs already: it is watched */
    SUBMIT_FINISHED,  /* this attempt ran to its end while no worker watched (or ends unstarted) */
    SUBMIT_VANISHED,  /* this attempt started, and nothing is left of it: poll reports it */
    SUBMIT_FAULT = -2, /* not started for a fault of the machine (a full disk: e->msg says which
                        * path); the trial waits, still ours, and submit is tried again */
    SUBMIT_RETRY = -3, /* not started for a passing cause of the platform (its controller did not
                        * answer: e->msg says what): the trial waits, still ours, e->msg its
                        * waiting_reason, and submit is tried again after worker_backoff_ms */
};

/* How a platform's trials use GPUs: not at all, on this host's GPUs (claimed with the
 * trial from the machine row of this host, queue_claim_host), or as the platform
 * itself places them (per machine through its own claim, or by its cluster). */
enum platform_gpu_mode { PLATFORM_GPU_NONE = 0, PLATFORM_GPU_HOST, PLATFORM_GPU_OWN };

/* host_job's how (see platform_ops). */
enum host_job_how { JOB_LOOK = 0, JOB_STOP, JOB_KILL };

/* poll_all's answer when the service will never list the jobs (see platform_ops). */
#define POLL_ALL_REFUSED (-2)

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
    /* Looks at the job once: 0 with *js filled (neither finished nor vanished: it runs),
     * or -1 when the platform could not tell now (its service did not answer; e says
     * why): the loop polls again after a back-off (worker_backoff_ms, per trial, reset
     * by a poll that succeeds). The loop paces it: every w->poll_ms per trial. */
    int (*poll)(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e);
    /* Optional: the batched poll, for a service that can list the state of all of the
     * experiment's jobs at once (Kubernetes: one LIST by the experiment's label, paged),
     * so the cost per poll interval does not grow with the number of running jobs. It
     * fetches that listing and keeps it in the platform's state; poll then answers from
     * it. The loop calls it at most once per w->poll_ms, when a held trial's poll is
     * due, and only then polls: every held trial right after each listing, none between
     * two (so a job submitted after a listing is first polled after the next one, which
     * began after its creation). 0: the listing is complete; a job absent from it is
     * not vanished before poll has confirmed it on its own (a single GET: a job may be
     * missing from a list for a race of the service). -1 (e says why): no trial is
     * polled; the next listing waits worker_backoff_ms(w->poll_ms, n) after the n-th
     * failure in a row, at most 5 s (or poll_ms when longer): one back-off for all
     * trials, never a storm of single polls. POLL_ALL_REFUSED (e says why): the service
     * refuses listings for good (no permission to list, no such call): the loop stops
     * calling poll_all and polls each job on its own, as without it. */
    int (*poll_all)(struct worker *w, struct errbuf *e);
    /* Optional: the end of t's job (finished, not vanished) is committed and t is about
     * to be let go: the platform may mark the job so that later listings of poll_all
     * leave it out (Kubernetes: a label), and their cost stays with the running jobs,
     * not with the experiment's history. Best effort: a job not marked (a failure, a
     * crash before it) stays listed, which costs a little and changes nothing else. */
    void (*ended)(struct worker *w, const struct trial *t);
    /* Asks the job to end (t->kill_request names why): 0 when the request reached the
     * job or nothing of it runs (the loop then polls soon for its end), -1 when it did
     * not (e says why): the loop calls kill again after a back-off until it returns 0
     * or a poll sees the job ended. */
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
    /* Optional: nnictl stop's last resort for what the database could not be made to end
     * (a full, read-only or failing disk refused the kill requests and the ends): t's job
     * is found from what the platform keeps on this host alone (files, the process table)
     * and nothing is written. how: JOB_LOOK only looks, JOB_STOP asks it to end as the
     * experiment's stop (its end then poll's JOB_STOPPED_EXPERIMENT, where the platform
     * can record that), JOB_KILL kills what is left at once. 1 while something of it
     * runs, else 0. */
    int (*host_job)(const struct trial *t, const char *exp_dir, int how);
    /* Optional: upkeep before each claim pass, e.g. the GPU inventory (rate-limited by
     * the platform itself; local runs nvidia-smi at most every GPU_REFRESH_MS). */
    void (*refresh)(struct worker *w);
    /* Optional: takes the next trial instead of queue_claim (remote: per machine, with
     * its GPU slots in the same transaction). 1 claimed, 0 none, -1 error. */
    int (*claim)(struct worker *w, struct trial *out, struct errbuf *e);
    /* How its trials get GPUs (PLATFORM_GPU_HOST: the loop claims with queue_claim_host
     * and `nnictl create` checks the request against this host's GPUs). */
    enum platform_gpu_mode gpu_mode;
    /* Optional: a submitted job may wait in the platform's own queue (Slurm): the trial
     * stays WAITING, its job recorded, until a poll says it no longer waits; meanwhile
     * js->why of a waiting poll is its waiting_reason. 0: RUNNING once submitted. */
    int queued_start;
    /* Optional: at most this many new jobs per second per worker (0: no limit), the
     * default of a service shared with others; TRIALQ_SUBMIT_RATE overrides it. */
    int submit_rate;
    /* A family's table for the ops it shares (workers/rest/rest.h: struct
     * rest_flavour), or NULL. */
    const void *flavour;
};

struct worker_trial {
    struct trial t;
    int is_child;          /* our own child process: its exit comes by SIGCHLD */
    int submit_pending;    /* submit met a fault (SUBMIT_FAULT, SUBMIT_RETRY): tried again at next_poll_ms */
    int64_t next_poll_ms;  /* mono ms of its next poll (or submit retry) */
    int poll_failures;     /* polls failed in a row: the next waits worker_backoff_ms */
    int kill_wanted;       /* a kill request of it was seen */
    int kill_sent;         /* ... and the platform confirmed the kill */
    int kill_failures;     /* kills failed in a row */
    int64_t next_kill_ms;  /* mono ms of the next try while kill_wanted && !kill_sent */
};

/* The loop's timers (mono ms of each periodic task's next run). */
struct worker_timers {
    int64_t collect, kill, renew, adopt, status, claim;
    int64_t list;            /* the next listing may run (ops->poll_all) */
    int64_t report;          /* the next report of its counts (worker_stat, GET /metrics) */
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
    int poll_ms;             /* how often a job is polled: ops->poll_ms (250 when 0); the
                              * platform's init may change it (TRIALQ_KUBE_POLL_MS) */
    struct worker_trial *trials; /* jobs this worker holds */
    int ntrials, cap;
    pid_t api_pid;           /* to wake with SIGUSR1 (0: none alive) */
    int wake;                /* a wake-up arrived: look for work now */
    int stop;
    int drain;               /* end every started trial of the platform, then stop */
    int64_t drain_deadline;
    int exit_code;           /* of worker_main: 1 when a drain left trials running */
    struct worker_timers next;
    int list_failures;       /* ops->poll_all failed this many times in a row */
    int list_refused;        /* ... refused for good: each job is polled on its own */
    double submit_rate;      /* new jobs per second at most (TRIALQ_SUBMIT_RATE; 0: no limit) */
    double submit_tokens;    /* ... a token bucket of one second's burst */
    int64_t submit_refill;   /* mono ms it was last refilled */
    struct worker_report counted; /* calls to the platform and loop lag since the last report */
};

/* The registry (workers/platforms.c): every platform, NULL-terminated; the first one is
 * the default of `trialq worker`. */
extern const struct platform_ops *const platform_all[];
const struct platform_ops *platform_find(const char *name);
/* The platforms' names joined with sep ("local, kubeflow, ..."), as a new string of any
 * length. Caller frees. */
char *platform_names_dup(const char *sep);
/* This platform's trainingService entry (the list entry in hybrid mode), and a key of
 * it with the top-level value as fallback (trialCommand, trialCodeDirectory, ...). */
const cJSON *worker_ts_config(const struct worker *w);
const cJSON *worker_config_item(const struct worker *w, const char *key);
/* sdk/chanrelay/trialq_chanrelay.py, embedded at build time (CMakeLists.txt): NNI's HTTP
 * trial channel served inside a cluster trial's pod (docs/architecture.md, "The HTTP
 * trial channel") */
extern const char trialq_chanrelay_py[];

/* The platforms of an experiment whose platform column is exp_platform: that one, or
 * each entry of a hybrid trainingService list in config_json, as many as listed (*n of
 * them). A new NULL-terminated array of new strings: the caller frees each and it. */
char **platform_list_of(const char *exp_platform, const char *config_json, int *n);

/* NNI's variables of trial t (workers/trial_env.c) into te: NNI_PLATFORM (the
 * platform's name), NNI_EXP_ID, NNI_TRIAL_JOB_ID, NNI_TRIAL_SEQ_ID, NNI_SYS_DIR,
 * NNI_OUTPUT_DIR, NNI_CODE_DIR (the dirs as the trial sees them), MULTI_PHASE, and
 * CUDA_VISIBLE_DEVICES: the GPUs claimed with the trial, "" (none) with trialGpuNumber
 * 0, unset without it. The platform changes or adds what is its own. */
struct trial_env;
void worker_trial_env(const struct worker *w, const struct trial *t, const char *sys_dir, const char *out_dir,
                      const char *code_dir, struct trial_env *te);

/* Hybrid mode (workers/hybrid/hybrid.c): may this worker claim another trial now? Always 1 for
 * a single platform; in a hybrid experiment each live platform gets an equal share of
 * trialConcurrency first, more only for trials the others leave waiting. */
int hybrid_may_claim(struct worker *w);

/* js->why of a job that exited non-zero (js->exit_code) while the filesystem of its
 * trial directory was seen faulty (fault, an errno: ENOSPC or EDQUOT full, EROFS
 * read-only, EIO failing): "exit code 1; the disk of its trial directory was full while
 * it ran". The local and the remote platform say it alike. */
void job_why_disk_fault(struct job_state *js, int fault);

/* `trialq worker --platform P --experiment ID` */
int worker_main(int argc, char **argv);
struct role; /* common/usage.h */
/* `trialq worker`'s usage, summary and options (worker_main.c), for trialq(1) too */
extern const struct role worker_role;

/* ---- the loop, step by step (worker_main runs it; tests drive it with a fake
 * platform_ops) ---- */
/* Opens the database under home, loads the experiment and its config; the platform is
 * not initialised (ops->init is the caller's). Returns 0, or -1 with e saying why (w is
 * then closed already). */
int worker_open(struct worker *w, const struct platform_ops *ops, const char *home, const char *exp_id,
                struct errbuf *e);
/* Frees what worker_open and the loop hold; destroys the platform when w->platform is
 * set. Held trials stay with their jobs (and their leases with the rows). */
void worker_close(struct worker *w);
/* The first pass: wakes nobody, adopts the trials of dead owners, claims (unless
 * draining; drain: asks every started trial of the platform to end), arms the timers. */
void worker_start(struct worker *w, int64_t now);
/* One pass of the loop at mono time now: kill requests, claims, each held trial's due
 * kill retry and poll (or submit retry), metrics, leases, adoption, the experiment's
 * status, a drain's end. Sets w->stop when the worker should exit. */
void worker_step(struct worker *w, int64_t now);
/* When the next pass is due (mono ms): the earliest timer or held trial's poll or kill. */
int64_t worker_next_due(const struct worker *w);
/* A child of ours exited: the platform maps it to its trial, which is polled now. */
void worker_reaped(struct worker *w, pid_t pid, int wstatus);
/* How long a poll or kill waits after its n-th failure in a row (n >= 1): 500 ms
 * doubling up to 10 s, never less than base (the platform's poll interval). */
int64_t worker_backoff_ms(int64_t base, int failures);

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
