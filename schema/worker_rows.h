/* worker_rows.h: the rows a worker reads and writes besides its trials: its experiment
 * (the api to wake, the status, errors), the processes of the experiment, the machine
 * rows of the remote platform. */
#ifndef TRIALQ_WORKER_ROWS_H
#define TRIALQ_WORKER_ROWS_H

#include "schema/schema.h"

/* The experiment's trialConcurrency as it is now (an update may change it): 1 with *out
 * set, 0 when the experiment is gone, -1 on error. */
int exp_concurrency(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e);
/* Appends msg to experiment.errors unless it is there already. */
int exp_add_error_once(struct db *db, const char *exp_id, const char *msg, struct errbuf *e);

/* The latest process row of a role in an experiment. */
struct proc_row {
    int64_t pid, pid_start, started_at;
    int ended;      /* ended_at is set */
    char host[256];
};
/* 1 with *out filled, 0 when the role has no row, -1 on error. */
int proc_latest(struct db *db, const char *exp_id, const char *role, struct proc_row *out, struct errbuf *e);

/* A machine's health as a worker saw it now; a healthy one is also seen now. */
int machine_set_health(struct db *db, int64_t machine_id, int healthy, const char *error, struct errbuf *e);
/* The machine answered now (last_seen). */
int machine_set_seen(struct db *db, int64_t machine_id, struct errbuf *e);

#endif
