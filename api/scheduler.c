/* scheduler.c: free slots -> tuner -> WAITING trial rows; the experiment status
 * machine (NNI's statuses) and the budgets maxTrialNumber, maxExperimentDuration,
 * maxTrialDuration. Everything it decides is written to the database first. */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/dispatcher.h"
#include "common/json.h"

#define STOP_GRACE_MS 20000
#define QUEUE_AHEAD 2   /* trials queued beyond trialConcurrency for history-free tuners */

int sched_load_tuner(struct api *a, struct errbuf *e)
{
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
        return a->tuner->create(a->cfg->tuner.class_args, a->space, (uint64_t)a->exp.seed, &a->tuner_state, e);
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

/* The tuner's history: every trial of the experiment in sequence order, kept in memory
 * and refreshed from the rows changed since the last look (trial.updated_at, indexed),
 * so that a suggestion costs O(changes), not O(trials). It is a cache: a full reload
 * every minute (and at start) makes it equal to the database whatever happened. */
#define HISTORY_MARGIN_MS 5000    /* rows committed late with an older updated_at */
#define HISTORY_FULL_EVERY_MS 60000

struct history {
    struct tuner_result *items;
    cJSON **params;
    char **ids;
    char **labels;                /* trial.parameter_label of each item (NULL: none) */
    int n, cap;
    int *slots;                   /* open-addressing index: trial id -> item + 1 (0 = free) */
    int nslots;                   /* a power of two, at least 2 * cap */
    int64_t seen_until_ms;        /* updated_at of the newest row read */
    int64_t max_sequence;         /* of the items: a new row below it forces a full reload */
    int64_t import_event;         /* newest import event loaded (imports come first) */
    int64_t next_full_ms;         /* monotonic time of the next full reload */
};

static const char *const statuses[] = {"WAITING", "RUNNING", "SUCCEEDED", "FAILED", "USER_CANCELED",
                                       "SYS_CANCELED", "EARLY_STOPPED", "UNKNOWN"};

static const char *intern_status(const char *s)
{
    for (size_t k = 0; k < sizeof statuses / sizeof statuses[0]; k++)
        if (strcmp(s, statuses[k]) == 0)
            return statuses[k];
    return "UNKNOWN";
}

void history_free(struct history *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->n; i++) {
        cJSON_Delete(h->params[i]);
        free(h->ids[i]);
        free(h->labels[i]);
    }
    free(h->items);
    free(h->params);
    free(h->ids);
    free(h->labels);
    free(h->slots);
    free(h);
}

static unsigned id_hash(const char *s)
{
    unsigned h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Index of a trial id, or -1. */
static int history_find(const struct history *h, const char *id)
{
    if (!h->nslots)
        return -1;
    for (unsigned k = id_hash(id) & (unsigned)(h->nslots - 1);; k = (k + 1) & (unsigned)(h->nslots - 1)) {
        int v = h->slots[k];
        if (v == 0)
            return -1;
        if (strcmp(h->ids[v - 1], id) == 0)
            return v - 1;
    }
}

static void history_index(struct history *h, int i)
{
    if (h->nslots < 2 * (i + 1)) {
        int ns = h->nslots ? h->nslots : 128;
        while (ns < 2 * (i + 1))
            ns *= 2;
        free(h->slots);
        h->slots = xcalloc((size_t)ns, sizeof *h->slots);
        h->nslots = ns;
        for (int j = 0; j < i; j++)
            history_index(h, j);
    }
    unsigned k = id_hash(h->ids[i]) & (unsigned)(h->nslots - 1);
    while (h->slots[k])
        k = (k + 1) & (unsigned)(h->nslots - 1);
    h->slots[k] = i + 1;
}

static int history_append(struct history *h, const char *id, cJSON *params)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->items = xrealloc(h->items, sizeof *h->items * (size_t)h->cap);
        h->params = xrealloc(h->params, sizeof *h->params * (size_t)h->cap);
        h->ids = xrealloc(h->ids, sizeof *h->ids * (size_t)h->cap);
        h->labels = xrealloc(h->labels, sizeof *h->labels * (size_t)h->cap);
    }
    int i = h->n++;
    h->ids[i] = xstrdup(id);
    h->labels[i] = NULL;
    h->params[i] = params;
    memset(&h->items[i], 0, sizeof h->items[i]);
    h->items[i].parameters = params;
    history_index(h, i);
    return i;
}

/* NNI's import value: a number, {"default": number, ...}, or a JSON string of either. */
static int import_value(const cJSON *v, double *out)
{
    if (cJSON_IsNumber(v)) {
        *out = v->valuedouble;
        return 1;
    }
    if (cJSON_IsObject(v)) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(v, "default");
        return cJSON_IsNumber(d) ? (*out = d->valuedouble, 1) : 0;
    }
    if (cJSON_IsString(v)) {
        cJSON *in = cJSON_Parse(v->valuestring);
        int ok = in && !cJSON_IsString(in) && import_value(in, out);
        cJSON_Delete(in);
        return ok;
    }
    return 0;
}

/* Imported results (experiment/import-data) are history too, as NNI's FD command
 * feeds them to the tuner; they come first, in import order. */
static int history_load_imports(struct api *a, struct history *h, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(a->db, e, "SELECT id, reason FROM event WHERE experiment_id = ? AND entity = 'import'"
                                          " ORDER BY id", "s", a->exp_id);
    if (!st)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t eid = col_i64(st, 0);
        cJSON *arr = cJSON_Parse((const char *)sqlite3_column_text(st, 1));
        const cJSON *rec;
        int k = 0;
        cJSON_ArrayForEach(rec, arr) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(rec, "parameter");
            double v;
            if (!cJSON_IsObject(p) || !import_value(cJSON_GetObjectItemCaseSensitive(rec, "value"), &v))
                continue;
            char id[64];
            snprintf(id, sizeof id, "import:%lld:%d", (long long)eid, k++);
            int i = history_append(h, id, cJSON_Duplicate(p, 1));
            h->items[i].parameter_id = -1;
            h->items[i].status = "SUCCEEDED";
            h->items[i].has_value = 1;
            h->items[i].value = v;
            h->items[i].has_latest = 1;
            h->items[i].latest = v;
        }
        cJSON_Delete(arr);
        h->import_event = eid;
    }
    sqlite3_reset(st);
    return 0;
}

/* For a tuner with needs_latest (Hyperband, BOHB rank a round by it): the trial's
 * FINAL default value when it has one, whatever its status, else the default value of
 * its PERIODICAL metric with the highest sequence, of the current attempt. NNI's
 * advisors get both kinds of metric and keep the one of the highest sequence, a FINAL
 * counting as the highest. */
static int history_latest(struct api *a, struct tuner_result *r, const char *trial_id, int attempt, int has_final,
                          double final, struct errbuf *e)
{
    r->has_latest = 0;
    if (has_final) {
        r->has_latest = 1;
        r->latest = final;
        return 0;
    }
    sqlite3_stmt *st = db_query(a->db, e, "SELECT default_value FROM metric WHERE trial_id = ? AND attempt = ?"
                                          " AND type = 'PERIODICAL' AND default_value IS NOT NULL"
                                          " ORDER BY sequence DESC, id DESC LIMIT 1", "sd", trial_id, attempt);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        r->has_latest = 1;
        r->latest = sqlite3_column_double(st, 0);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return errf(e, "history: %s", sqlite3_errmsg(a->db->h));
    return 0;
}

static int history_refresh(struct api *a, struct errbuf *e)
{
    struct history *h = a->history;
    if (!h || mono_ms() >= h->next_full_ms) {
        history_free(h);
        h = a->history = xcalloc(1, sizeof *h);
        h->next_full_ms = mono_ms() + HISTORY_FULL_EVERY_MS;
        h->seen_until_ms = INT64_MIN / 2;
        h->max_sequence = -1;
        if (history_load_imports(a, h, e) < 0)
            return -1;
    } else {
        int64_t newest_import = 0;
        db_int(a->db, e, &newest_import, "SELECT coalesce(max(id), 0) FROM event WHERE experiment_id = ?"
                                         " AND entity = 'import'", "s", a->exp_id);
        if (newest_import > h->import_event) {
            h->next_full_ms = 0; /* imports go first: rebuild in order */
            return history_refresh(a, e);
        }
    }
    sqlite3_stmt *st = db_query(a->db, e,
        "SELECT id, parameter_id, parameters, final_metric, status, updated_at, sequence, parameter_label, attempt"
        " FROM trial WHERE experiment_id = ? AND updated_at >= ? ORDER BY sequence",
        "si", a->exp_id, h->seen_until_ms - HISTORY_MARGIN_MS);
    if (!st)
        return -1;
    int64_t newest = h->seen_until_ms;
    int rc, out_of_order = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        int i = history_find(h, id);
        if (i < 0) {
            /* the history must be in sequence order, as a full reload gives it: a row
             * committed late below the newest one means: reload all */
            if (col_i64(st, 6) < h->max_sequence)
                out_of_order = 1;
            else
                h->max_sequence = col_i64(st, 6);
            i = history_append(h, id, cJSON_Parse((const char *)sqlite3_column_text(st, 2)));
        }
        struct tuner_result *r = &h->items[i];
        r->parameter_id = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : col_i64(st, 1);
        if (!a->tuner->index_spans_spaces) /* the tuner's own index (tuner.h); -1 before its space */
            r->parameter_id = r->parameter_id >= a->exp.space_index_base ? r->parameter_id - a->exp.space_index_base : -1;
        r->parameters = h->params[i];
        r->status = intern_status((const char *)sqlite3_column_text(st, 4));
        r->has_value = sqlite3_column_type(st, 3) != SQLITE_NULL && strcmp(r->status, "SUCCEEDED") == 0;
        r->value = sqlite3_column_double(st, 3);
        if (!h->labels[i] && sqlite3_column_type(st, 7) != SQLITE_NULL) /* set at insert, never changed */
            h->labels[i] = col_str(st, 7);
        r->label = h->labels[i];
        if (a->tuner->needs_latest &&
            history_latest(a, r, id, (int)col_i64(st, 8), sqlite3_column_type(st, 3) != SQLITE_NULL,
                           sqlite3_column_double(st, 3), e) < 0) {
            sqlite3_reset(st);
            return -1;
        }
        if (col_i64(st, 5) > newest)
            newest = col_i64(st, 5);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return errf(e, "history: %s", sqlite3_errmsg(a->db->h));
    h->seen_until_ms = newest;
    if (out_of_order) {
        h->next_full_ms = 0;
        return history_refresh(a, e);
    }
    return 0;
}

int sched_next_index(struct api *a, int64_t *out, struct errbuf *e)
{
    /* read from the rows once per process, then counted here (only this api inserts
     * algorithm trials); a scan per suggestion would make every suggestion O(trials) */
    if (a->next_index < 0 &&
        db_int(a->db, e, &a->next_index, "SELECT coalesce(max(parameter_id) + 1, 0) FROM trial"
                                         " WHERE experiment_id = ? AND parameter_source = 'algorithm'",
               "s", a->exp_id) < 0)
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
    if (a->history)
        a->history->next_full_ms = 0; /* every item's tuner index changed: reload all */
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
    struct tuner_history th = {0};
    if (a->tuner->needs_history) {
        if (history_refresh(a, e) < 0)
            return -1;
        th.n = a->history->n;
        th.items = a->history->items;
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
    int max_attempts = 1 + (cJSON_IsNumber(retries) ? retries->valueint : 1);
    if (db_begin(a->db, e) < 0) {
        free(pjson);
        free(label);
        return -1;
    }
    int64_t seq = 0;
    if (db_int(a->db, e, &seq, "SELECT next_sequence FROM experiment WHERE id = ?", "s", a->exp_id) < 0)
        goto fail;
    for (int tries = 0;; tries++) {
        char tid[6];
        gen_trial_id(tid);
        int ins = db_run(a->db, e,
            "INSERT OR IGNORE INTO trial(id, experiment_id, sequence, parameter_id, parameter_source,"
            " parameters, status, platform, max_attempts, submit_time, updated_at, waiting_reason, parameter_label)"
            " VALUES (?,?,?,?,'algorithm',?,'WAITING',?,?,?,?,'waiting for a worker to take it',?)",
            "ssiissdiis", tid, a->exp_id, seq, index, pjson,
            a->exp.platform /* hybrid: any listed platform's worker may claim it */, max_attempts, now_ms(),
            now_ms(), label);
        if (ins < 0)
            goto fail;
        if (ins == 1) {
            if (db_event(a->db, e, a->exp_id, tid, "trial", NULL, "WAITING", "submitted") < 0)
                goto fail;
            break;
        }
        if (tries > 20) { /* 768M ids: only a broken random source gets here */
            errf(e, "cannot find a free trial id");
            goto fail;
        }
    }
    if (db_run(a->db, e, "UPDATE experiment SET next_sequence = ? + 1, updated_at = ? WHERE id = ?", "iis",
               seq, now_ms(), a->exp_id) < 0 ||
        db_commit(a->db, e) < 0)
        goto fail;
    free(pjson);
    free(label);
    a->next_index = index + 1;
    return 1;
fail:
    db_rollback(a->db);
    free(pjson);
    free(label);
    return -1;
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
    int64_t limit = now_ms() - a->exp.max_trial_seconds * 1000;
    sqlite3_stmt *st = db_query(a->db, &e, "SELECT id FROM trial WHERE experiment_id = ? AND status = 'RUNNING'"
                                           " AND kill_request IS NULL AND start_time < ?",
                                "si", a->exp_id, limit);
    if (!st)
        return;
    char *ids[64];
    int n = 0;
    while (n < 64 && sqlite3_step(st) == SQLITE_ROW)
        ids[n++] = col_str(st, 0);
    sqlite3_reset(st);
    for (int i = 0; i < n; i++) {
        if (trial_request_kill(a->db, ids[i], "EARLY_STOPPED", "maxTrialDuration exceeded", &e) > 0)
            children_wake(a);
        free(ids[i]);
    }
}

int sched_cancel_queued(struct api *a, const char *why, int64_t max_n)
{
    struct errbuf e;
    sqlite3_stmt *st = db_query(a->db, &e, "SELECT id FROM trial WHERE experiment_id = ? AND status = 'WAITING'"
                                           " AND lease_owner IS NULL ORDER BY sequence DESC", "s", a->exp_id);
    char *ids[64];
    int n = 0;
    while (st && n < 64 && n < max_n && sqlite3_step(st) == SQLITE_ROW)
        ids[n++] = col_str(st, 0);
    if (st)
        sqlite3_reset(st);
    for (int i = 0; i < n; i++) {
        trial_request_kill(a->db, ids[i], "SYS_CANCELED", why, &e);
        free(ids[i]);
    }
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
    sqlite3_stmt *st = db_query(a->db, &e, "SELECT id FROM trial WHERE experiment_id = ?"
                                           " AND " SQL_TRIAL_STARTED, "s", a->exp_id);
    if (!st)
        return;
    int n = 0, cap = 0;
    char **ids = NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            ids = xrealloc(ids, sizeof *ids * (size_t)cap);
        }
        ids[n++] = col_str(st, 0);
    }
    sqlite3_reset(st);
    for (int i = 0; i < n; i++) {
        if (trial_request_kill(a->db, ids[i], "USER_CANCELED", "experiment stopped", &e) < 0)
            log_error("cannot cancel trial %s: %s", ids[i], e.msg);
        free(ids[i]);
    }
    free(ids);
    /* trials queued but never started stay WAITING: a resume runs them */
    db_run(a->db, &e, "UPDATE trial SET waiting_reason = 'experiment stopped; runs on resume', updated_at = ?"
                      " WHERE experiment_id = ? AND status = 'WAITING' AND lease_owner IS NULL",
           "is", now_ms(), a->exp_id);
    children_wake(a);
}

static int64_t count_trials(struct api *a, const char *where)
{
    int64_t n = 0;
    char *sql = xasprintf("SELECT count(*) FROM trial WHERE experiment_id = ? %s", where);
    db_int(a->db, NULL, &n, sql, "s", a->exp_id);
    free(sql);
    return n;
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
        db_run(a->db, &e, "UPDATE experiment SET api_heartbeat = ?, exec_duration_ms = exec_duration_ms + ?"
                          " WHERE id = ?", "iis", now_ms(), a->pending_exec_ms, a->exp_id);
        a->exp.exec_duration_ms += a->pending_exec_ms;
        a->pending_exec_ms = 0;
        a->last_heartbeat_ms = now;
    }
    if (a->exp.desired_status && strcmp(a->exp.desired_status, "STOPPED") == 0 && !a->stopping)
        sched_begin_stop(a, "stop requested");
    if (a->stopping) {
        int64_t left = count_trials(a, "AND " SQL_TRIAL_STARTED);
        if (left == 0 || now >= a->stop_deadline_ms) {
            if (left)
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

    int64_t active = count_trials(a, "AND status IN ('WAITING','RUNNING')");
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
        int added = 0;
        while (active < target && !(a->exp.max_trial_number > 0 && submitted >= a->exp.max_trial_number)) {
            int rc = submit_one(a, &e);
            if (rc < 0) {
                set_error(a, e.msg);
                return;
            }
            if (rc == 2)
                break; /* nothing now: asked again on the next tick */
            if (rc == 0) {
                db_run(a->db, &e, "UPDATE experiment SET tuner_exhausted = 1 WHERE id = ?", "s", a->exp_id);
                a->exp.tuner_exhausted = 1;
                break;
            }
            active++;
            submitted++;
            added++;
        }
        if (added)
            children_wake(a);
        budget = a->exp.max_trial_number > 0 && submitted >= a->exp.max_trial_number;
    }
    const char *want = "RUNNING";
    if (budget || a->exp.tuner_exhausted)
        want = active ? (budget ? "NO_MORE_TRIAL" : "TUNER_NO_MORE_TRIAL") : "DONE";
    if (strcmp(a->exp.status, want) != 0)
        exp_transition(a->db, a->exp_id, "RUNNING,NO_MORE_TRIAL,TUNER_NO_MORE_TRIAL", want,
                       strcmp(want, "DONE") == 0 ? "budget used and every trial ended" : NULL, &e);
}
