/* spawn.h: the one place that starts `trialq worker` (common/spawn.c), for the api
 * (its workers, api/children.c) and the CLI (a drain or a clean-up, cli/lifecycle.c). */
#ifndef TRIALQ_SPAWN_H
#define TRIALQ_SPAWN_H

#include <sys/types.h>

#define SPAWN_QUIET 1      /* the worker's stdout to /dev/null */
#define SPAWN_BLOCK_USR1 2 /* SIGUSR1 (the api's wake-up) blocked across exec, until the
                            * worker has its signalfd: its default action would kill a
                            * worker still starting up */

/* Forks and execs this executable as `trialq worker --platform PLATFORM --experiment
 * EXP_ID --home HOME` followed by extra (NULL-ended; NULL: none), descriptors above 2
 * closed and the descriptor limit as it was before the api raised it. Returns the
 * child's pid, or -1 with errno when fork fails. */
pid_t worker_spawn(const char *platform, const char *exp_id, const char *home, int flags, const char *const *extra);

#endif
