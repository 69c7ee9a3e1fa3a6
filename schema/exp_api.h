/* exp_api.h: the experiment row as the api process that runs it holds it (api/server.c):
 * taking it over and letting it go, the stop it is asked for, and the trials it counts
 * as active (api/server.c, api/disp_*.c). */
#ifndef TRIALQ_SCHEMA_EXP_API_H
#define TRIALQ_SCHEMA_EXP_API_H

#include "schema/schema.h"

/* experiment.desired_status (STOPPED: `nnictl stop` asked for a stop) as a new string,
 * NULL when unset. 1, 0 when there is no such experiment, -1 on error. */
int exp_desired_status(struct db *db, const char *id, char **out, struct errbuf *e);
/* The port the api serves the experiment on (`trialq api --port`). */
int exp_set_port(struct db *db, const char *id, int port, struct errbuf *e);
/* This process (pid, its start time) now owns the experiment: api_pid, api_start, the
 * heartbeat set, a stop asked of an earlier api forgotten, end_time cleared unless
 * keep_end_time (view, or a DONE experiment that stays DONE). */
int exp_api_take(struct db *db, const char *id, int pid, uint64_t pid_start, int64_t now, int keep_end_time,
                 struct errbuf *e);
/* The api pid leaves the experiment (only when it is still the one recorded). */
int exp_api_release(struct db *db, const char *id, int pid, struct errbuf *e);
/* A resume asks the tuner again: tuner_exhausted cleared. */
int exp_tuner_revive(struct db *db, const char *id, struct errbuf *e);

#endif
