/* schema.h: typed access to the experiment, trial, metric and process tables.
 * With queue/, the only place that writes SQL. */
#ifndef TRIALQ_SCHEMA_H
#define TRIALQ_SCHEMA_H

#include <stdint.h>

#include "common/trial_status.h"
#include "schema/db.h"

struct experiment {
    char *id, *name, *config, *search_space, *platform, *status, *desired_status;
    char *exp_dir, *bind_address, *errors, *token;
    char *url_prefix; /* "" or "/a/b": every route is under it (migration 011) */
    char *config_file; /* the YAML it was created from, absolute, or NULL (migration 013) */
    int port;
    int64_t start_time, end_time, exec_duration_ms;
    int64_t max_trial_number, max_exec_seconds, max_trial_seconds; /* 0 = unlimited */
    int concurrency;
    int64_t seed, next_sequence;
    int64_t space_index_base; /* tuner index where the current search space began (migration 014) */
    int tuner_exhausted;
    int api_pid;
    int64_t api_start, api_heartbeat;
};

struct trial {
    char *id, *experiment_id, *parameters, *parameter_source, *status, *platform;
    char *machine, *job_id, *lease_owner, *kill_request, *waiting_reason, *trial_dir;
    char *message, *final_metric_json, *gpu_indices;
    char *parameter_label;          /* the wire parameter_id when it is not parameter_id
                                     * (Hyperband's "0-3_0_12"), else NULL */
    char *url;                      /* its tracking URL on the platform (DLC's console), or NULL */
    int64_t sequence, parameter_id; /* parameter_id -1 when NULL */
    int attempt, max_attempts;
    int64_t lease_expires, submit_time, start_time, end_time; /* 0 when NULL */
    int exit_code, has_exit_code;
    double final_metric;
    int has_final_metric;
    int64_t metrics_offset, stdout_offset;
};

/* A trial a worker has taken (claimed or running): what a stop must end. A WAITING trial
 * no worker took is only queued, and stays queued across a stop. */
#define SQL_TRIAL_STARTED "(status = 'RUNNING' OR (status = 'WAITING' AND lease_owner IS NOT NULL))"

/* Statuses: common/trial_status.h (trial_status_final, SQL_TRIAL_FINAL). */
/* The trials that count against maxTrialNumber: every trial (next_sequence of the
 * experiment) but those ended before they started by a budget (SYS_CANCELED, never
 * started: NNI would not have submitted them). */
int trials_submitted(struct db *db, const char *exp_id, int64_t next_sequence, int64_t *out, struct errbuf *e);
int exp_status_active(const char *status); /* RUNNING, NO_MORE_TRIAL, TUNER_NO_MORE_TRIAL */

/* ---- experiment ---- */
int exp_insert(struct db *db, const struct experiment *x, struct errbuf *e);
/* 1 found, 0 not found, -1 error */
int exp_load(struct db *db, const char *id, struct experiment *out, struct errbuf *e);
void exp_clear(struct experiment *x);
/* Guarded transition: only from one of `from` (comma list; NULL = any), logs an event.
 * Returns 1 if changed, 0 if the current status did not match, -1 on error. Runs in
 * the caller's transaction if one is open, else in its own. */
int exp_transition(struct db *db, const char *id, const char *from, const char *to,
                   const char *reason, struct errbuf *e);
/* Appends a message to experiment.errors. */
int exp_add_error(struct db *db, const char *id, const char *msg, struct errbuf *e);
/* Resolves an id or unique prefix ('' or NULL = the only running one). Returns a new
 * id or NULL with e->msg saying why (NNI's messages). */
char *exp_resolve(struct db *db, const char *id_or_prefix, int running_only, struct errbuf *e);

/* ---- trial ---- */
int trial_load(struct db *db, const char *id, struct trial *out, struct errbuf *e);
/* The trial's tracking URL, where its platform has one (a new string in *url, or NULL). */
int trial_url(struct db *db, const char *id, char **url, struct errbuf *e);
void trial_clear(struct trial *t);
/* The trial's directory on this host: the one recorded, else <exp_dir>/trials/<id>. */
char *trial_dir_path(const struct trial *t, const char *exp_dir);
/* <exp_dir>/trials/<id>: where a trial's directory is when none is recorded (on this host, or
 * below a remote machine's experiment dir). Caller frees. */
char *trial_dir_default(const char *exp_dir, const char *trial_id);
/* Records the trial's tracking URL (migration 016). 0, or -1 with e. */
int trial_set_url(struct db *db, const char *trial_id, const char *url, struct errbuf *e);
/* Fills t from a row whose columns are TRIAL_COLUMNS, in order. */
void trial_from_row(sqlite3_stmt *st, struct trial *t);
#define TRIAL_COLUMNS                                                                     \
    "id, experiment_id, parameters, parameter_source, status, platform, machine, job_id,"   \
    " lease_owner, kill_request, waiting_reason, trial_dir, message, final_metric_json,"     \
    " gpu_indices, sequence, parameter_id, attempt, max_attempts, lease_expires,"           \
    " submit_time, start_time, end_time, exit_code, final_metric, metrics_offset,"          \
    " stdout_offset, parameter_label, url"
/* The number of columns of TRIAL_COLUMNS (for columns selected after them). */
#define TRIAL_NCOLUMNS 29

/* ---- metrics ---- */
struct metric_in {
    const char *parameter_id; /* NULL -> '' */
    const char *type;         /* PERIODICAL | FINAL */
    int64_t sequence;
    const char *value;        /* JSON text of the value */
    double default_value;
    int has_default;
};
/* Parses one metric record as a trial sends it ({"parameter_id","trial_job_id","type",
 * "sequence","value": "<json string>"}). Strings in *m point into *owned (free it). */
int metric_parse(const char *json, size_t len, struct metric_in *m, void **owned, struct errbuf *e);
void metric_owned_free(void *owned);
/* The parsed record's "trial_job_id": 1 when the key is there (*out its string, or NULL
 * when it is not a string), 0 when absent. */
int metric_trial_job_id(const void *owned, const char **out);
/* INSERT OR IGNORE: a re-delivered metric is absorbed. Returns 1 inserted, 0 dup. */
int metric_insert(struct db *db, const char *trial_id, int attempt, const struct metric_in *m,
                  struct errbuf *e);
/* The same for the trial's current attempt, read by the INSERT itself (one statement
 * for the usual case). *found: whether the trial is in experiment exp_id (nothing is
 * stored when it is not). Returns 1 inserted, 0 dup or not found, -1 error. */
int metric_insert_current(struct db *db, const char *exp_id, const char *trial_id, const struct metric_in *m,
                          int *found, struct errbuf *e);

/* ---- processes ---- */
int proc_register(struct db *db, const char *exp_id, const char *role, int pid, uint64_t pid_start,
                  int64_t *row_id, struct errbuf *e);
int proc_ended(struct db *db, int64_t row_id, const char *exit_status, struct errbuf *e);
/* The same for a process known by its pid on this host (a child we reaped). */
int proc_ended_pid(struct db *db, int pid, const char *exit_status, struct errbuf *e);

#endif
