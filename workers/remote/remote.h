/* remote.h: internals of the remote (SSH) platform shared by its files: remote.c (the
 * platform's ops: init, poll, kill, collect, preflight), remote/conn.c (connections),
 * remote/ship.c (code and runner shipped), remote/gpu.c (GPUs and claims),
 * remote/start.c (starts), remote/poll.c (one exec per machine and poll) and
 * remote/runner.c (the runner itself). */
#ifndef TRIALQ_REMOTE_H
#define TRIALQ_REMOTE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "queue/gpu.h"
#include "workers/ssh.h"
#include "workers/worker.h"

/* The POSIX sh runner shipped to every machine (remote/runner.c). */
extern const char remote_runner_sh[];

/* One trial's header line of the runner's tq_status answer: "<state> <rc> <end>
 * <stopped> <n1> <n2> <n3>" (the runner's state of the attempt: R running, F finished,
 * V vanished, N never submitted; n: new bytes of .nni/metrics, trial.stdout,
 * trial.stderr that follow in the data part). */
struct remote_status {
    char state;
    int rc, stopped;
    long long end, len[3];
    int fault; /* F: the trial dir's filesystem was seen full (ENOSPC), read-only (EROFS),
                * failing (EIO) while it ran; 0: not, or a runner that does not say */
};
/* Parses a tq_status answer for n trials, p..end NUL-terminated at end: "status\n", n
 * header lines into h[0..n) ("<state> <rc> <end> <stopped> <n1> <n2> <n3>", then the
 * fault, "-", full, readonly or ioerror, when the runner says it), "data\n". Returns where the data begins, NULL when the
 * answer is malformed. The lengths are the runner's word: checked against the data by
 * the caller. */
const char *remote_status_parse(const char *p, const char *end, int n, struct remote_status *h);

/* ---------------- shared by the platform's files ---------------- */

#define CONNECT_TIMEOUT_MS 10000
#define OP_TIMEOUT_MS 30000
#define DOWN_AFTER_MS 8000       /* failing this long: the machine is marked unhealthy */
#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 30000
#define REMOTE_POLL_MS 50
#define STATUS_CAP (1 << 20)     /* bytes per file per poll */

/* A trial start not yet sent: submits go out in the machine's next batch. */
struct launch {
    char id[16];
    int attempt;
    char *rdir, *script;
};

struct rmachine {
    char *host, *user, *password, *key_file, *passphrase, *python_path;
    int port;
    char *label;      /* user@host:port: the job id names the machine by it */
    char *display;    /* host or host:port: trial.machine */
    int64_t row_id;   /* machine table */
    struct ssh_conn *conn;
    struct ssh_shell *shell; /* `sh -s` with the runner sourced: one per connection */
    char *root;       /* E, absolute */
    char *home_id;    /* who sees E (tq_ident): machines with one home id share a home */
    char *host_ident; /* "<machine id> <boot id>" of the host at the last connect */
    int home_noted;   /* its shared home was logged by this worker */
    int has_nni;      /* the host's python imports a real nni */
    int healthy;      /* as recorded in the machine table */
    int64_t down_since, next_try;
    int backoff_ms;
    int64_t snap_ms, seen_written_ms;
    char *last_error;
    struct launch *pending; /* trials to start with the next exec on this machine */
    int npending;
    struct gpu_need need;   /* this machine's GPU options (count: trialGpuNumber) */
    int64_t gpu_ms;         /* mono ms of the last nvidia-smi run */
};

struct rtrial {
    char id[16];
    int attempt;
    char state;       /* R F S V, 0: unknown */
    int rc;
    int64_t end;
    int complete;     /* the mirrors hold every byte the trial wrote */
    char why[160];    /* state E: why the runner could not start it */
    int killed;       /* a kill was asked for: never start it */
    int stopped;      /* F: a stop reached it before it ended (1), not (0), unknown (-1) */
    int fault;        /* F: remote_status's fault */
};

struct remote_state {
    struct rmachine *m;
    int n;
    char *known_hosts;
    int accept_new;
    char *code_tgz, *sdk_tgz;
    int connections;  /* opened by this worker (the benchmark reads the log line) */
    int rr;
    struct rtrial *ts;
    int nts, capts;
    int gpus;             /* trialGpuNumber > 0: GPU slots are claimed per machine */
    char claimed_id[16];  /* the last trial claimed on ... */
    struct rmachine *claimed_on; /* ... this machine (its GPUs are there) */
};

/* ---------------- helpers ---------------- */
char *remote_local_dir_of(struct worker *w, const char *trial_id);

const char *remote_jstr(const cJSON *o, const char *k);

int64_t remote_file_size(const char *path);

struct rmachine *remote_machine_of_job(struct remote_state *rs, const char *job_id, int *attempt);

struct rtrial *remote_rtrial_get(struct remote_state *rs, const char *id, int create);

/* The machine's row (shared by every experiment of the database, like GPU rows). */
int remote_machine_row(struct db *db, struct rmachine *m, struct errbuf *e);

void remote_machine_record(struct worker *w, struct rmachine *m, int healthy, const char *error);

void remote_machine_from_json(struct rmachine *m, const cJSON *it);

void remote_machine_free(struct rmachine *m);

/* trainingService.knownHostsFile (default ~/.ssh/known_hosts), acceptNewHostKeys. */
void remote_hostkey_options(const cJSON *ts, char **known_hosts, int *accept_new);

/* Runs a shell command in the machine's session; -1 when the connection is lost. */
int remote_run_cmd(struct rmachine *m, const char *cmd, const char *in, size_t inlen, struct strbuf *out,
                   int *status, struct errbuf *e);

void remote_conn_lost(struct worker *w, struct rmachine *m, const char *why);

/* Packs the code directory (honouring .nniignore) and our SDK into two tar.gz files. */
int remote_pack(struct worker *w, struct remote_state *rs, struct errbuf *e);

/* What every command on the machine starts with (pythonPath first on PATH). */
void remote_cmd_prefix(struct strbuf *sb, const struct rmachine *m);

/* Work dir, runner, code: everything a machine needs before its first trial. */
int remote_prepare_machine(struct worker *w, struct remote_state *rs, struct rmachine *m, struct errbuf *e);

/* The machine's GPUs from nvidia-smi over SSH (NNI's collector runs it every 5 s),
 * into the gpu table; a failure is stored as the machine's GPU error. */
void remote_gpu_refresh_machine(struct worker *w, struct rmachine *m, int force);

void remote_make_job_id(char *buf, size_t len, const struct rmachine *m, int attempt);

/* A here-document delimiter / end marker that does not occur in the text. */
void remote_unique_tag(const char *text, char tag[32]);

/* Connects (if due) and prepares a machine. 0 when usable. */
int remote_connect_machine(struct worker *w, struct remote_state *rs, struct rmachine *m, struct errbuf *e);

/* Reconnects a lost machine when its back-off allows; marks it down after a while. */
int remote_machine_usable(struct worker *w, struct rmachine *m);

int remote_held_on(struct worker *w, struct rmachine *m);

int remote_can_claim(struct worker *w);

void remote_refresh(struct worker *w);

/* With GPUs: one claim per machine (least loaded first) that has the slots, in the same
 * transaction as the trial; the trial then starts there. Without: a plain claim. */
int remote_claim(struct worker *w, struct trial *out, struct errbuf *e);

struct rmachine *remote_place(struct worker *w);

void remote_pending_drop(struct rmachine *m, const char *id);

void remote_pending_add(struct worker *w, struct rmachine *m, struct trial *t);

/* Places the trial and queues its start for the machine's next batch: the start itself
 * (idempotent per attempt on the host) goes out with the next poll of that machine. */
int remote_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e);

/* One round trip per machine, all machines at once: every batch is sent before any
 * answer is read, so the machines work in parallel. */
void remote_refresh_all(struct worker *w);

#endif
