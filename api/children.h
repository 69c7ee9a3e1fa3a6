/* children.h: the api's child processes (api/children.c). The api keeps its workers
 * alive (one per platform of the experiment, restarted with back-off), and reaps every
 * child: whoever starts one (the dispatcher, a TensorBoard task) registers its pid and
 * a callback, called with the exit status when it is reaped. children.c knows nothing
 * of them: it sits below them in api/'s layers. */
#ifndef TRIALQ_CHILDREN_H
#define TRIALQ_CHILDREN_H

#include <sys/types.h>

struct api;

/* Called once for a registered pid, with waitpid's status, when SIGCHLD reaps it. */
typedef void (*reaped_fn)(struct api *a, pid_t pid, int status);
/* Registers a child started outside children.c. A pid already registered with fn is
 * not added twice. */
void reaper_add(struct api *a, pid_t pid, reaped_fn fn);

/* The workers: started (unless --no-workers), reaped with every other child, restarted
 * when due, woken (SIGUSR1), stopped at the end. */
void children_start(struct api *a);
void children_reap(struct api *a);
void children_restart_due(struct api *a);
void children_wake(struct api *a);
void children_stop(struct api *a);
/* Frees what children.c holds (the registry too); api_free_state. */
void children_free(struct api *a);

#endif
