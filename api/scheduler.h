/* scheduler.h: the scheduler (api/scheduler.c): free slots -> the tuner -> WAITING trial rows,
 * the budgets, the experiment's stop. */
#ifndef TRIALQ_SCHEDULER_H
#define TRIALQ_SCHEDULER_H

#include "api/api.h"

int sched_load_tuner(struct api *a, struct errbuf *e);
void sched_tick(struct api *a);
void sched_begin_stop(struct api *a, const char *why);
/* The tuner index (trial parameter_id) the next algorithm trial gets. 0 or -1. */
int sched_next_index(struct api *a, int64_t *out, struct errbuf *e);
/* Ends (SYS_CANCELED) up to max_n trials queued that no worker took yet, the newest
 * first: a budget used up or lowered lets no more start (NNI would not have submitted
 * them). Returns how many. */
int sched_cancel_queued(struct api *a, const char *why, int64_t max_n);
/* The algorithm trial with the latest tuner index was withdrawn (trial_enqueue put a
 * customized trial in its place): that index is suggested again. */
void sched_index_withdrawn(struct api *a);
/* A new search space is stored, beginning at tuner index index_base: the tuner view is
 * rebuilt with the indexes the new tuner sees (tuner.h, index_spans_spaces). */
void sched_space_changed(struct api *a, int64_t index_base);

#endif
