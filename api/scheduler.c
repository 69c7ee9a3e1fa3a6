/* scheduler.c: free slots -> tuner -> WAITING trial rows; the experiment status
 * machine (NNI's statuses) and the budgets maxTrialNumber, maxExperimentDuration,
 * maxTrialDuration. Everything it decides is written to the database first. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/assess.h"
#include "api/children.h"
#include "api/dispatcher.h"
#include "api/scheduler.h"
#include "api/tuner_view.h"
#include "common/json.h"
#include "schema/exp_ops.h"
#include "schema/trial_new.h"
#include "schema/tuner_rows.h"

#define STOP_GRACE_MS 20000
#define QUEUE_AHEAD 2   /* trials queued beyond trialConcurrency for history-free tuners */

int sched_load_tuner(struct api *a, struct errbuf *e)
{
    a->wake_scheduler = sched_tick; /* the dispatcher's new parameters (disp_proto.c) */
    cJSON *ss = cJSON_Parse(a->exp.search_space);
    char path[256];
    int rc = 0;
    /* a customized tuner gets the space as written (NNI validates it for built-ins only) */
    if (a->cfg->tuner.class_name)
        a->space = ss_raw(ss);
    else
        rc = ss_parse(ss, &a->space, path, sizeof path, e);
    cJSON_Delete(ss);
    if (rc < 0)
        return errprefix(e, "searchSpace");
    /* a customized tuner, advisor or assessor: NNI's dispatcher process (api/dispatcher.c) */
    if (dispatcher_needed(a->cfg) && dispatcher_init(a, e) < 0)
        return -1;
    if (a->cfg->tuner.class_name) {
        a->tuner = &dispatcher_tuner_ops;
        return dispatcher_tuner_create(a, a->space, &a->tuner_state, e);
    }
    const char *name = a->cfg->tuner.name ? a->cfg->tuner.name : "Random";
    a->tuner = tuner_find(name);
    if (!a->tuner)
        return errf(e, "tuner.name: unknown tuner '%s' (known: %s)", name, tuner_names());
    cJSON *args = a->cfg->tuner.class_args ? a->cfg->tuner.class_args : NULL;
    if (a->tuner->create(args, a->space, (uint64_t)a->exp.seed, &a->tuner_state, e) < 0)
        return -1;
    return 0;
}

int sched_next_index(struct api *a, int64_t *out, struct errbuf *e)
{
    /* read from the rows once per process, then counted here (only this api inserts
     * algorithm trials); a scan per suggestion would make every suggestion O(trials) */
    if (a->next_index < 0 && trials_next_tuner_index(a->db, a->exp_id, &a->next_index, e) < 0)
        return -1;
    *out = a->next_index;
    return 0;
}

void sched_index_withdrawn(struct api *a)
{
    a->next_index = -1; /* read again: max(parameter_id) + 1 of the algorithm trials left */
}

void sched_space_changed(struct api *a, int64_t index_base)
{
    a->exp.space_index_base = index_base;
    tuner_view_reload(a->tuner_view); /* every item's tuner index changed: reload all */
}

/* Inserts one WAITING trial in one transaction. Returns 1 inserted, 0 the tuner is
 * exhausted, 2 the tuner has nothing now (ask again next tick), -1 on error. */
static int submit_one(struct api *a, struct errbuf *e)
{
    int64_t index;
    if (sched_next_index(a, &index, e) < 0)
        return -1;
    /* the tuner's own index: from 0 in the current search space (tuner.h) */
    int64_t tindex = a->tuner->index_spans_spaces ? index : index - a->exp.space_index_base;
    struct tuner_history th = {.experiment_dir = a->exp.exp_dir};
    if (a->tuner->needs_history) {
        struct tuner_view_opts o = {.needs_latest = a->tuner->needs_latest,
                                    .index_spans_spaces = a->tuner->index_spans_spaces,
                                    .space_index_base = a->exp.space_index_base};
        if (tuner_view_refresh(&a->tuner_view, a->db, a->exp_id, &o, e) < 0)
            return -1;
        th = tuner_view_history(a->tuner_view);
        th.experiment_dir = a->exp.exp_dir;
    }
    cJSON *params = NULL;
    int rc = a->tuner->suggest(a->tuner_state, tindex, &th, &params, e);
    if (rc <= 0 || rc == 2)
        return rc;
    char *pjson = json_print_exact(params); /* what the tuner chose, to the last bit */
    cJSON_Delete(params);
    /* the wire parameter id, when the tuner names its suggestions (Hyperband) */
    char *label = a->tuner->label ? a->tuner->label(a->tuner_state, tindex) : NULL;
    const cJSON *retries = cJSON_GetObjectItemCaseSensitive(a->cfg->canonical, "maxTrialRetries");
    struct trial_new n = {
        .exp_id = a->exp_id,
        .platform = a->exp.platform, /* hybrid: any listed platform's worker may claim it */
        .parameters = pjson,
        .source = "algorithm",
        .parameter_id = index,
        .label = label,
        .max_attempts = 1 + (cJSON_IsNumber(retries) ? retries->valueint : 1),
        .reason = "submitted",
    };
    char tid[6];
    int64_t seq;
    rc = trial_add(a->db, &n, tid, &seq, e);
    free(pjson);
    free(label);
    if (rc < 0)
        return -1;
    a->next_index = index + 1;
    return 1;
}

static void set_error(struct api *a, const char *msg)
{
    /* a write that met a fault of the database (a full disk, an I/O error) is no error
     * of the experiment: the fault is shown (common/fault.c) and the next tick tries
     * again; the tuner's suggestion of that index is asked for again */
    if (fault_has("database"))
        return;
    struct errbuf e;
    log_error("experiment error: %s", msg);
    exp_add_error(a->db, a->exp_id, msg, &e);
    exp_transition(a->db, a->exp_id, NULL, "ERROR", msg, &e);
}

static void enforce_trial_duration(struct api *a)
{
    if (a->exp.max_trial_seconds <= 0)
        return;
    struct errbuf e;
    struct id_list over;
    if (trials_overdue(a->db, a->exp_id, now_ms() - a->exp.max_trial_seconds * 1000, &over, &e) < 0) {
        log_error("maxTrialDuration: %s", e.msg);
        return;
    }
    for (int i = 0; i < over.n; i++)
        if (trial_request_kill(a->db, over.ids[i], "EARLY_STOPPED", "maxTrialDuration exceeded", &e) > 0)
            children_wake(a);
    id_list_free(&over);
}

int sched_cancel_queued(struct api *a, const char *why, int64_t max_n)
{
    struct errbuf e;
    struct id_list queued;
    if (trials_queued(a->db, a->exp_id, max_n, &queued, &e) < 0) {
        log_error("cannot cancel queued trials: %s", e.msg);
        return 0;
    }
    for (int i = 0; i < queued.n; i++)
        trial_request_kill(a->db, queued.ids[i], "SYS_CANCELED", why, &e);
    int n = queued.n;
    id_list_free(&queued);
    return n;
}
void sched_begin_stop(struct api *a, const char *why)
{
    if (a->stopping)
        return;
    a->stopping = 1;
    a->stop_deadline_ms = mono_ms() + STOP_GRACE_MS;
    struct errbuf e;
    log_info("stopping experiment %s: %s", a->exp_id, why);
    /* guarded in the database, not by our copy of the status (it may be a tick old):
     * a finished experiment keeps its DONE or ERROR, only the process goes away */
    if (!a->readonly)
        exp_transition(a->db, a->exp_id, "INITIALIZED,RUNNING,NO_MORE_TRIAL,TUNER_NO_MORE_TRIAL", "STOPPING", why,
                       &e);
    struct id_list started;
    if (trials_started(a->db, a->exp_id, &started, &e) < 0) {
        log_error("cannot cancel the trials: %s", e.msg);
        return;
    }
    for (int i = 0; i < started.n; i++)
        if (trial_request_kill(a->db, started.ids[i], "USER_CANCELED", "experiment stopped", &e) < 0)
            log_error("cannot cancel trial %s: %s", started.ids[i], e.msg);
    id_list_free(&started);
    /* trials queued but never started stay WAITING: a resume runs them */
    trials_queued_set_reason(a->db, a->exp_id, "experiment stopped; runs on resume", &e);
    children_wake(a);
}

/* Asks the tuner for trials until target are active, the budget is used or the tuner
 * has nothing (now or ever). -1 when the experiment failed (set_error done). */
static int fill_slots(struct api *a, int64_t target, int64_t *active, int64_t *submitted)
{
    struct errbuf e;
    int added = 0;
    while (*active < target && !(a->exp.max_trial_number > 0 && *submitted >= a->exp.max_trial_number)) {
        int rc = submit_one(a, &e);
        if (rc < 0) {
            set_error(a, e.msg);
            return -1;
        }
        if (rc == 2)
            break; /* nothing now: asked again on the next tick */
        if (rc == 0) {
            exp_set_tuner_exhausted(a->db, a->exp_id, &e);
            a->exp.tuner_exhausted = 1;
            break;
        }
        (*active)++;
        (*submitted)++;
        added++;
    }
    if (added)
        children_wake(a);
    return 0;
}

void sched_tick(struct api *a)
{
    struct errbuf e;
    exp_clear(&a->exp);
    if (exp_load(a->db, a->exp_id, &a->exp, &e) <= 0) {
        log_error("experiment %s vanished from the database; exiting", a->exp_id);
        a->stopping = 1;
        a->stop_deadline_ms = 1;
        return;
    }
    int64_t now = mono_ms();
    int64_t dt = a->last_tick_ms ? now - a->last_tick_ms : 0;
    a->last_tick_ms = now;
    if (a->readonly) {
        if (a->stopping)
            event_base_loopbreak(a->base); /* view: nothing to wait for */
        return;
    }
    /* execDuration counts only time in running states, as NNI's does */
    int active_status = exp_status_active(a->exp.status);
    /* execDuration and the heartbeat are written at most every 500 ms, not on every
     * wake-up: a write per trial end would compete with the workers for the lock */
    a->pending_exec_ms += active_status ? dt : 0;
    if (now - a->last_heartbeat_ms >= 500) {
        exp_heartbeat(a->db, a->exp_id, now_ms(), a->pending_exec_ms, &e);
        a->exp.exec_duration_ms += a->pending_exec_ms;
        a->pending_exec_ms = 0;
        a->last_heartbeat_ms = now;
    }
    if (a->exp.desired_status && strcmp(a->exp.desired_status, "STOPPED") == 0 && !a->stopping)
        sched_begin_stop(a, "stop requested");
    if (a->stopping) {
        int64_t left = trials_count(a->db, a->exp_id, COUNT_STARTED, NULL, &e);
        if (left < 0)
            log_limited(LOG_ERROR, "stop: cannot count the trials left: %s", e.msg); /* waits for the deadline */
        if (left == 0 || now >= a->stop_deadline_ms) {
            if (left > 0)
                log_warn("%lld trial(s) did not end within the stop grace period", (long long)left);
            event_base_loopbreak(a->base);
        }
        return;
    }
    if (!active_status)
        return;
    enforce_trial_duration(a);
    /* an advisor (Hyperband, BOHB) decides which configurations go on: NNI ignores the
     * assessor beside it. A customized one still ticks: its process lives in there. */
    if (!a->tuner->advisor || a->cfg->assessor.class_name)
        assess_tick(a);

    int64_t active = trials_count(a->db, a->exp_id, COUNT_ACTIVE, NULL, &e);
    if (active < 0) {
        log_limited(LOG_ERROR, "scheduler: cannot count the active trials: %s", e.msg); /* next tick again */
        return;
    }
    int64_t submitted = a->exp.next_sequence; /* every trial takes the next sequence number */
    if (trials_submitted(a->db, a->exp_id, a->exp.next_sequence, &submitted, &e) < 0) {
        set_error(a, e.msg);
        return;
    }
    int budget = (a->exp.max_trial_number > 0 && submitted >= a->exp.max_trial_number) ||
                 (a->exp.max_exec_seconds > 0 && a->exp.exec_duration_ms >= a->exp.max_exec_seconds * 1000);
    /* A tuner that ignores the results (Random, GridSearch, Batch) gets a few trials
     * queued ahead of the free slots: a worker then starts the next trial the moment
     * one ends, without waiting for us. The claim enforces trialConcurrency. A tuner
     * that learns from results is asked only when a slot is free, as in NNI. */
    if (a->exp.max_exec_seconds > 0 && a->exp.exec_duration_ms >= a->exp.max_exec_seconds * 1000)
        sched_cancel_queued(a, "maxExperimentDuration reached before it started", INT64_MAX);
    int64_t target = a->exp.concurrency + (a->tuner->needs_history ? 0 : QUEUE_AHEAD);
    if (!budget && !a->exp.tuner_exhausted && active < target) {
        if (fill_slots(a, target, &active, &submitted) < 0)
            return;
        budget = a->exp.max_trial_number > 0 && submitted >= a->exp.max_trial_number;
    }
    const char *want = "RUNNING";
    if (budget || a->exp.tuner_exhausted)
        want = active ? (budget ? "NO_MORE_TRIAL" : "TUNER_NO_MORE_TRIAL") : "DONE";
    if (strcmp(a->exp.status, want) != 0)
        exp_transition(a->db, a->exp_id, "RUNNING,NO_MORE_TRIAL,TUNER_NO_MORE_TRIAL", want,
                       strcmp(want, "DONE") == 0 ? "budget used and every trial ended" : NULL, &e);
}
