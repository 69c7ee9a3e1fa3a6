/* worker_queue.h: what the worker loop and the platforms read of the trials they hold,
 * besides claiming and the guarded transitions of queue.h: kill requests, the trials a
 * stop must end, counts per platform. Every function joins the caller's transaction if
 * one is open. */
#ifndef TRIALQ_WORKER_QUEUE_H
#define TRIALQ_WORKER_QUEUE_H

#include "schema/schema.h"

/* A kill request of a trial a worker holds: the trial and the status it asks for. */
struct kill_request {
    char *trial_id;
    char *kind; /* USER_CANCELED, EARLY_STOPPED, ... */
};

/* The kill requests of every trial owner holds: *out a new array of *n (free with
 * kill_requests_free). Returns 0, or -1 on error. */
int queue_kill_requests(struct db *db, const char *owner, struct kill_request **out, int *n, struct errbuf *e);
void kill_requests_free(struct kill_request *list, int n);
/* The kill request of one trial: 1 with *kind a new string, 0 when none (or no such
 * trial), -1 on error. */
int trial_kill_request(struct db *db, const char *trial_id, char **kind, struct errbuf *e);

/* The trials of an experiment on one platform that a worker has taken (claimed or
 * running: SQL_TRIAL_STARTED): what a stop must end. *ids a new array of *n new strings.
 * Returns 0, or -1 on error. */
int queue_started_ids(struct db *db, const char *exp_id, const char *platform, char ***ids, int *n,
                      struct errbuf *e);
/* How many such trials there are (-1 on error). */
int64_t queue_started_count(struct db *db, const char *exp_id, const char *platform, struct errbuf *e);
/* How many trials of the experiment on this platform are leased (WAITING or RUNNING with a
 * lease owner); -1 on error. */
int64_t queue_leased_count(struct db *db, const char *exp_id, const char *platform, struct errbuf *e);
/* The latest end_time of the experiment's trials on this platform (0: none ended). */
int64_t queue_last_end(struct db *db, const char *exp_id, const char *platform, struct errbuf *e);
/* 1 when the experiment has a WAITING trial no worker took, 0 when not, -1 on error. */
int queue_has_unclaimed(struct db *db, const char *exp_id, struct errbuf *e);
/* The machine row a trial's GPU claims are on: 1 with *machine_id set, 0 when it holds
 * none, -1 on error. */
int gpu_claim_machine(struct db *db, const char *trial_id, int64_t *machine_id, struct errbuf *e);

#endif
