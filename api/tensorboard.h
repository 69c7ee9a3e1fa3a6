/* tensorboard.h: TensorBoard tasks as processes (api/tensorboard.c), for their routes
 * (api/routes_tensorboard.c) and the api's loop (the tick, the shutdown). */
#ifndef TRIALQ_TENSORBOARD_H
#define TRIALQ_TENSORBOARD_H

#include <stdint.h>
#include <sys/types.h>

#include "api/api.h"
#include "common/common.h"

#define MAX_TASKS 16
#define MAX_TRIALS 100

enum tb_status { TB_RUNNING, TB_STOPPING, TB_STOPPED, TB_ERROR };

struct tb_task {
    char id[6];
    int ntrials;
    char **trials, **dirs;  /* trial ids and their output directories */
    enum tb_status status;
    pid_t pid;
    int port;
    int64_t stop_deadline_ms; /* STOPPING: SIGKILL after this */
    char *message;            /* why it is STOPPED or in ERROR */
};

struct tensorboard {
    struct tb_task *tasks[MAX_TASKS]; /* NULL: a free slot */
};

/* The api's task list (MAX_TASKS slots, NULL: free), made on first use. */
struct tb_task **tb_tasks(struct api *a);
struct tb_task *tb_task_find(struct api *a, const char *id);
void tb_task_free(struct tb_task *t);
/* NNI's TensorboardTaskInfo, plus message (why it stopped or failed) and logFile. */
cJSON *tb_task_json(const struct api *a, const struct tb_task *t);
/* Starts the task's process (RUNNING), reaped by children.c; 0, or -1 with why in e. */
int tb_task_spawn(struct api *a, struct tb_task *t, struct errbuf *e);
/* SIGTERM to a running task's group; the tick sends SIGKILL after the grace and the
 * reap marks it STOPPED. */
void tb_task_stop(struct tb_task *t);

/* SIGKILL to the tasks that outlived their stop's grace. */
void tensorboard_tick(struct api *a);
/* Every task ended and forgotten (the api's end). */
void tensorboard_shutdown(struct api *a);

#endif
