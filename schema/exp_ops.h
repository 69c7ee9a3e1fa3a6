/* exp_ops.h: the changes and small reads of experiment rows that the api and nnictl
 * make beside exp_load/exp_transition (schema.h): settings updated through the REST API,
 * the api's heartbeat, a stop request, the experiments there are, the best trial. */
#ifndef TRIALQ_EXP_OPS_H
#define TRIALQ_EXP_OPS_H

#include "schema/trial_sets.h"

/* The ids of the experiments, oldest first; with_api_only: those with an api recorded. */
int exp_ids(struct db *db, int with_api_only, struct id_list *out, struct errbuf *e);
/* 1 when an experiment has this id, 0 when none, -1 on error. */
int exp_exists(struct db *db, const char *id, struct errbuf *e);
/* Every experiment's id and stored config (either may be NULL), in *rows (free each
 * with exp_config_rows_free). 0, or -1 with e set. */
struct exp_config_row {
    char *id, *config;
};
int exp_config_rows(struct db *db, struct exp_config_row **rows, int *n, struct errbuf *e);
void exp_config_rows_free(struct exp_config_row *rows, int n);
/* The stored config of id replaced by text, when it is still old. -1 with e set. */
int exp_config_replace(struct db *db, const char *id, const char *old, const char *text, struct errbuf *e);

enum exp_setting {
    EXP_CONCURRENCY,      /* trialConcurrency */
    EXP_MAX_TRIAL_NUMBER, /* maxTrialNumber */
    EXP_MAX_EXEC_SECONDS, /* maxExperimentDuration */
};
/* Sets one number of the experiment. Returns rows changed or -1. */
int exp_set(struct db *db, const char *id, enum exp_setting which, int64_t v, struct errbuf *e);
/* The search space and the tuner index it begins at, in one statement (a restart reads
 * both); the tuner may suggest again (tuner_exhausted = 0). */
int exp_set_search_space(struct db *db, const char *id, const char *space_json, int64_t index_base,
                         struct errbuf *e);
int exp_set_tuner_exhausted(struct db *db, const char *id, struct errbuf *e);
int exp_set_bind_address(struct db *db, const char *id, const char *address, struct errbuf *e);
/* The next sequence number, from the row: 1 found, 0 no such experiment, -1 error. */
int exp_next_sequence(struct db *db, const char *id, int64_t *out, struct errbuf *e);
/* The api is alive (heartbeat now) and ran exec_add_ms more in an active status. */
int exp_heartbeat(struct db *db, const char *id, int64_t now, int64_t exec_add_ms, struct errbuf *e);
/* nnictl stop: desired_status = STOPPED, so that an api started meanwhile stops too. */
int exp_request_stop(struct db *db, const char *id, struct errbuf *e);
/* No api runs the experiment any more. */
int exp_forget_api(struct db *db, const char *id, struct errbuf *e);
/* Deletes the experiment with its rows (ON DELETE CASCADE) and logs it, in one
 * transaction; status: the status it had. */
int exp_delete(struct db *db, const char *id, const char *status, const char *reason, struct errbuf *e);

/* The best trial: SUCCEEDED with a final metric, the highest or lowest. 1 found (fields
 * set, strings new), 0 none, -1 error. */
struct best_trial {
    char *trial_id, *parameters;
    char *final_metric_json;  /* trial_best_final only */
    int64_t sequence;
    double final_metric;
};
/* By the tuner's classArgs.optimize_mode (best_trials_v, rank 1). */
int exp_best_trial(struct db *db, const char *id, struct best_trial *out, struct errbuf *e);
/* By maximize (ties: the earlier trial), as the web UI shows it. */
int trial_best_final(struct db *db, const char *exp_id, int maximize, struct best_trial *out, struct errbuf *e);
void best_trial_clear(struct best_trial *b);

/* The experiment's processes (api, workers, dispatcher) not recorded as ended. */
struct proc_row {
    int64_t row;     /* process.id, for proc_ended */
    int pid;
    uint64_t start;  /* pid_start */
    char *host;
};
int procs_unended(struct db *db, const char *exp_id, struct proc_row **out, int *n, struct errbuf *e);
void proc_rows_free(struct proc_row *r, int n);

#endif
