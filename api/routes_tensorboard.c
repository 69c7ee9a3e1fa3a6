/* routes_tensorboard.c: NNI's TensorBoard routes (POST /tensorboard, /tensorboard/:id,
 * /tensorboard-tasks): the request checked (its trials are this experiment's, with
 * output directories on this host), then the task started, stopped or listed through
 * api/tensorboard.c, which supervises the processes. */
#include <stdlib.h>
#include <string.h>

#include "api/routes.h"
#include "api/tensorboard.h"
#include "config/config.h"
#include "schema/schema.h"

/* The trials of a POST body {"trials": "id1,id2"} into t (trials, dirs): each a trial of
 * this experiment whose output directory is on this machine. 0, or -1 with a 4xx sent
 * (what t holds then is for tb_task_free). */
static int parse_trials(struct req *q, const cJSON *body, struct tb_task *t)
{
    struct api *a = q->a;
    const cJSON *tr = cJSON_IsObject(body) ? cJSON_GetObjectItemCaseSensitive(body, "trials") : NULL;
    if (!cJSON_IsString(tr) || !*tr->valuestring) {
        reply_error(q->r, 400, "body: expected {\"trials\": \"<trial id>,<trial id>,...\"}%s",
                    !cJSON_IsObject(body) ? " (not an object)" : !tr ? " (no \"trials\")" : "");
        return -1;
    }
    char *copy = xstrdup(tr->valuestring), *save = NULL;
    int rc = 0;
    for (char *id = strtok_r(copy, ",", &save); id && rc == 0; id = strtok_r(NULL, ",", &save)) {
        while (*id == ' ')
            id++;
        size_t l = strlen(id);
        while (l && id[l - 1] == ' ')
            id[--l] = '\0';
        int dup = 0;
        for (int i = 0; i < t->ntrials && !dup; i++)
            dup = strcmp(t->trials[i], id) == 0;
        if (dup || !*id)
            continue;
        if (t->ntrials == MAX_TRIALS) {
            reply_error(q->r, 400, "trials: more than %d trials in one TensorBoard", MAX_TRIALS);
            rc = -1;
            break;
        }
        struct trial tl;
        struct errbuf e;
        int f = trial_load(a->db, id, &tl, &e);
        if (f < 0) {
            reply_error(q->r, 500, "%s", e.msg);
            rc = -1;
            break;
        }
        char *dir = NULL;
        if (f == 0 || strcmp(tl.experiment_id, a->exp_id) != 0) {
            reply_error(q->r, 400, "trials: trial %.64s not found in experiment %s", id, a->exp_id);
            rc = -1;
        } else if (tl.platform && !config_platform_trials_on_host(tl.platform)) {
            reply_error(q->r, 400, "trials: trial %s ran on platform %s: TensorBoard reads trials' output "
                                   "directories on this machine (local platform)", tl.id, tl.platform);
            rc = -1;
        } else {
            dir = trial_dir_path(&tl, a->exp.exp_dir);
            if (strchr(dir, ',')) { /* --logdir_spec separates its entries with commas */
                reply_error(q->r, 400, "trials: the output directory of trial %s has a ',' in its path (%s), "
                                       "which TensorBoard's --logdir_spec cannot take", id, dir);
                free(dir);
                dir = NULL;
                rc = -1;
            }
        }
        if (dir) {
            t->trials = xrealloc(t->trials, (size_t)(t->ntrials + 1) * sizeof *t->trials);
            t->dirs = xrealloc(t->dirs, (size_t)(t->ntrials + 1) * sizeof *t->dirs);
            t->trials[t->ntrials] = xstrdup(id);
            t->dirs[t->ntrials++] = dir;
        }
        if (f)
            trial_clear(&tl);
    }
    free(copy);
    if (rc == 0 && t->ntrials == 0) {
        reply_error(q->r, 400, "trials: no trial id in \"%.100s\"", tr->valuestring);
        rc = -1;
    }
    return rc;
}

/* a and b hold the same trials (each list has no repeats) */
static int same_trials(const struct tb_task *a, const struct tb_task *b)
{
    if (a->ntrials != b->ntrials)
        return 0;
    for (int i = 0; i < b->ntrials; i++) {
        int found = 0;
        for (int k = 0; k < a->ntrials && !found; k++)
            found = strcmp(a->trials[k], b->trials[i]) == 0;
        if (!found)
            return 0;
    }
    return 1;
}

/* POST /tensorboard {"trials": "id1,id2"}: a running task over the same trials is
 * answered as it is (NNI: one TensorBoard per set of trials); else a new one. */
void h_tensorboard_start(struct req *q)
{
    struct api *a = q->a;
    cJSON *body = body_json(q);
    if (!body)
        return;
    struct tb_task *t = xcalloc(1, sizeof *t);
    int rc = parse_trials(q, body, t);
    cJSON_Delete(body);
    struct tb_task **tasks = tb_tasks(a), *running = NULL;
    for (int i = 0; rc == 0 && i < MAX_TASKS && !running; i++)
        if (tasks[i] && tasks[i]->status == TB_RUNNING && same_trials(tasks[i], t))
            running = tasks[i];
    if (rc < 0 || running) {
        if (running)
            reply_cjson(q->r, tb_task_json(a, running));
        tb_task_free(t);
        return;
    }
    int slot = -1;
    for (int i = 0; i < MAX_TASKS && slot < 0; i++)
        if (!tasks[i])
            slot = i;
    /* a full list makes room by forgetting a task that no longer runs */
    for (int i = 0; i < MAX_TASKS && slot < 0; i++)
        if (tasks[i]->status == TB_STOPPED || tasks[i]->status == TB_ERROR) {
            tb_task_free(tasks[i]);
            tasks[i] = NULL;
            slot = i;
        }
    do
        gen_trial_id(t->id);
    while (tb_task_find(a, t->id));
    struct errbuf e;
    if (slot < 0) {
        reply_error(q->r, 400, "%d TensorBoard tasks run already: stop one first (DELETE %s/tensorboard/<id>)",
                    MAX_TASKS, API_PREFIX);
        tb_task_free(t);
    } else if (tb_task_spawn(a, t, &e) < 0) {
        reply_error(q->r, 400, "%s", e.msg);
        tb_task_free(t);
    } else {
        tasks[slot] = t;
        reply_cjson(q->r, tb_task_json(a, t));
    }
}

/* GET: the task; PUT: starts it again when it is not running (NNI's update); DELETE:
 * stops it (STOPPING, then STOPPED). */
void h_tensorboard_task(struct req *q)
{
    struct api *a = q->a;
    struct tb_task *t = tb_task_find(a, q->args[0]);
    if (!t) {
        reply_error(q->r, 404, "no TensorBoard task %.40s (tasks end with the api that started them)", q->args[0]);
        return;
    }
    enum evhttp_cmd_type m = evhttp_request_get_command(q->r);
    if (m == EVHTTP_REQ_PUT && t->status != TB_RUNNING && t->status != TB_STOPPING) {
        struct errbuf e;
        if (tb_task_spawn(a, t, &e) < 0) {
            reply_error(q->r, 400, "%s", e.msg);
            return;
        }
    } else if (m == EVHTTP_REQ_DELETE) {
        tb_task_stop(t);
    }
    reply_cjson(q->r, tb_task_json(a, t));
}

/* GET: every task; DELETE: stops them all. */
void h_tensorboard_tasks(struct req *q)
{
    struct api *a = q->a;
    int del = evhttp_request_get_command(q->r) == EVHTTP_REQ_DELETE;
    struct tb_task **tasks = tb_tasks(a);
    cJSON *list = cJSON_CreateArray();
    for (int i = 0; i < MAX_TASKS; i++) {
        if (!tasks[i])
            continue;
        if (del)
            tb_task_stop(tasks[i]);
        else
            cJSON_AddItemToArray(list, tb_task_json(a, tasks[i]));
    }
    if (del) {
        cJSON_Delete(list);
        reply_json(q->r, 200, "");
    } else {
        reply_cjson(q->r, list);
    }
}
