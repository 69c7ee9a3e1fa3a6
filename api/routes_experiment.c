/* routes_experiment.c: the experiment routes: status, profile and its updates,
 * cluster metadata, imported data, the .experiment registry entries, export-data. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "api/dispatcher.h"
#include "api/launch.h"
#include "api/routes.h"
#include "api/scheduler.h"
#include "common/json.h"
#include "schema/tuner_rows.h"

void h_version(struct req *q)
{
    reply_json(q->r, 200, "\"" TRIALQ_VERSION "\"");
}

void h_check_status(struct req *q)
{
    struct experiment x;
    if (req_experiment(q, &x) < 0)
        return;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "status", x.status);
    cJSON *errs = cJSON_Parse(x.errors);
    if (!cJSON_IsArray(errs)) {
        cJSON_Delete(errs);
        errs = cJSON_CreateArray();
    }
    /* the resource faults of now (a full disk...): ours from memory, our workers' from
     * the files they keep; gone once resolved */
    fault_each(fault_json_add, errs);
    if (x.exp_dir) {
        char *fault_dir = xasprintf("%s/faults", x.exp_dir);
        fault_each_published(fault_dir, getpid(), fault_json_add, errs);
        free(fault_dir);
    }
    cJSON_AddItemToObject(j, "errors", errs);
    reply_cjson(q->r, j);
    exp_clear(&x);
}

void h_experiment_get(struct req *q)
{
    struct experiment x;
    if (req_experiment(q, &x) < 0)
        return;
    cJSON *cfg = cJSON_Parse(x.config);
    cJSON *red = cfg ? config_redacted(cfg) : cJSON_CreateObject();
    cJSON_Delete(cfg);
    reply_cjson(q->r, nni_profile_json(&x, red));
    exp_clear(&x);
}

/* NNI's launcher posts the config after starting the manager; ours is already stored
 * by nnictl, so the body is not needed (NNI ignores it on resume and view too). */
void h_experiment_post(struct req *q)
{
    if (q->a->action != ACTION_CREATE) {
        reply_json(q->r, 200, "");
        return;
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "experiment_id", q->a->exp_id);
    reply_cjson(q->r, j);
}

void h_experiment_delete(struct req *q)
{
    reply_json(q->r, 200, "");
    sched_begin_stop(q->a, "DELETE /experiment");
}

/* ---------------- PUT /experiment?update_type= ---------------- */

/* params.<key> (or NNI v1's name for it) as an integer in [min, max]; a duration
 * string ("30m") is accepted where seconds are meant. 0 ok, -1 bad (400 sent). */
static int update_value(struct req *q, const cJSON *params, const char *key, const char *v1_key, int duration,
                        int64_t min, int64_t max, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
    const char *name = key;
    if (!v && v1_key) {
        v = cJSON_GetObjectItemCaseSensitive(params, v1_key);
        name = v1_key;
    }
    if (!v) {
        reply_error(q->r, 400, "params.%s: missing", key);
        return -1;
    }
    if (json_int_in(v, min, max, out) == 0)
        return 0;
    int64_t secs;
    if (duration && cJSON_IsString(v) && parse_duration(v->valuestring, &secs) == 0 && secs >= min && secs <= max) {
        *out = secs;
        return 0;
    }
    char *got = cJSON_PrintUnformatted(v);
    reply_error(q->r, 400, "params.%s: must be %s from %lld to %lld (got %.64s)", name,
                duration ? "a number of seconds or a duration such as 30m" : "an integer", (long long)min,
                (long long)max, got ? got : "?");
    free(got);
    return -1;
}

/* The new search space, validated and installed in the tuner. 0 ok, -1 (reply sent). */
static int update_search_space(struct req *q, const cJSON *params)
{
    struct api *a = q->a;
    const cJSON *ss = cJSON_GetObjectItemCaseSensitive(params, "searchSpace");
    cJSON *parsed = NULL;
    struct json_issue is;
    if (cJSON_IsString(ss) && json_check(ss->valuestring, strlen(ss->valuestring), &is) < 0) {
        reply_error(q->r, 400, "params.searchSpace: a string that is not valid JSON: %s (byte %zu)", is.msg,
                    is.offset);
        return -1;
    }
    if (cJSON_IsString(ss)) /* older nnictl sends the file's JSON as a string */
        ss = parsed = cJSON_Parse(ss->valuestring);
    struct errbuf e;
    struct ss_space *space = NULL;
    char path[256] = "";
    int rc = -1;
    if (!cJSON_IsObject(ss)) {
        reply_error(q->r, 400, "params.searchSpace: %s", ss || parsed ? "must be a JSON object" : "missing or not JSON");
    } else if (a->cfg->tuner.class_name ? !(space = ss_raw(ss)) : ss_parse(ss, &space, path, sizeof path, &e) < 0) {
        /* a customized tuner takes any space (NNI validates it for built-ins only) */
        reply_error(q->r, 400, "params.searchSpace: %s", e.msg); /* the message names the parameter */
    } else if (!a->tuner) {
        reply_error(q->r, 400, "params.searchSpace: this api runs no tuner");
    } else {
        /* the tuner must accept the space (GridSearch refuses {}) before anything is
         * stored or swapped: a refused space changes nothing */
        void *state = NULL;
        int64_t base = 0;
        if (dispatcher_tuner_create(a, space, &state, &e) < 0) {
            reply_error(q->r, 400, "params.searchSpace: %s", e.msg);
        } else {
            char *s = cJSON_PrintUnformatted(ss);
            /* the space and the index it begins at, in one statement: a restart reads both */
            if (sched_next_index(a, &base, &e) < 0 ||
                exp_set_search_space(a->db, a->exp_id, s, base, &e) < 0) {
                reply_error(q->r, 500, "%s", e.msg);
                a->tuner->destroy(state);
            } else {
                sched_space_changed(a, base);
                if (a->tuner_state)
                    a->tuner->destroy(a->tuner_state);
                a->tuner_state = state;
                ss_free(a->space);
                a->space = space;
                space = NULL;
                rc = 0;
            }
            free(s);
        }
    }
    ss_free(space);
    cJSON_Delete(parsed);
    return rc;
}

void h_experiment_put(struct req *q)
{
    struct api *a = q->a;
    const char *type = query_str(q, "update_type");
    if (!type) {
        reply_error(q->r, 400, "PUT /experiment: missing query parameter update_type (TRIAL_CONCURRENCY,"
                               " MAX_TRIAL_NUM, MAX_EXEC_DURATION, SEARCH_SPACE)");
        return;
    }
    cJSON *j = body_json(q);
    if (!j)
        return;
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "params");
    struct errbuf e;
    int64_t v = 0;
    int rc = -2; /* -2: a reply was sent; -1: database error; >= 0 applied */
    int revive = 0; /* the update may let more trials run */
    if (!cJSON_IsObject(params)) {
        reply_error(q->r, 400, "body.params: must be an object (the ExperimentProfile as GET /experiment gives it)");
    } else if (strcmp(type, "TRIAL_CONCURRENCY") == 0) {
        if (update_value(q, params, "trialConcurrency", NULL, 0, 1, 1000000, &v) == 0)
            rc = exp_set(a->db, a->exp_id, EXP_CONCURRENCY, v, &e);
    } else if (strcmp(type, "MAX_TRIAL_NUM") == 0) {
        if (update_value(q, params, "maxTrialNumber", "maxTrialNum", 0, 1, 999999999, &v) == 0) {
            /* from the row, not the api's copy (a tick old: the trials queued since count) */
            int64_t next = a->exp.next_sequence, submitted;
            exp_next_sequence(a->db, a->exp_id, &next, &e);
            submitted = next;
            trials_submitted(a->db, a->exp_id, next, &submitted, &e);
            revive = !a->exp.tuner_exhausted && v > submitted; /* room for another trial */
            rc = exp_set(a->db, a->exp_id, EXP_MAX_TRIAL_NUMBER, v, &e);
            /* lowered below the trials there are: those queued that never started go */
            if (rc >= 0 && submitted > v) {
                char *why = xasprintf("maxTrialNumber lowered to %lld before it started", (long long)v);
                sched_cancel_queued(a, why, submitted - v);
                free(why);
            }
        }
    } else if (strcmp(type, "MAX_EXEC_DURATION") == 0) {
        if (update_value(q, params, "maxExperimentDuration", "maxExecDuration", 1, 1, (int64_t)1 << 40, &v) == 0) {
            revive = !a->exp.tuner_exhausted && v * 1000 > a->exp.exec_duration_ms; /* time left */
            rc = exp_set(a->db, a->exp_id, EXP_MAX_EXEC_SECONDS, v, &e);
        }
    } else if (strcmp(type, "SEARCH_SPACE") == 0) {
        rc = update_search_space(q, params) == 0 ? 0 : -2;
        revive = 1; /* the tuner may suggest again */
    } else {
        reply_error(q->r, 400, "update_type: unknown '%.64s' (TRIAL_CONCURRENCY, MAX_TRIAL_NUM, MAX_EXEC_DURATION,"
                               " SEARCH_SPACE)", type);
    }
    if (rc == -1) {
        reply_error(q->r, 500, "%s", e.msg);
    } else if (rc >= 0) {
        /* a raised limit or a new space revives a finished experiment, as in NNI; the
         * next tick decides again from the new values. Other updates (concurrency, a
         * lower limit) cannot add a trial: the status and endTime stay. */
        if (revive)
            exp_transition(a->db, a->exp_id, "DONE,NO_MORE_TRIAL,TUNER_NO_MORE_TRIAL", "RUNNING", type, &e);
        db_event(a->db, &e, a->exp_id, NULL, "experiment", NULL, NULL, type);
        launch_nnidb_sync(a); /* NNI's client reads the config back from there */
        reply_json(q->r, 200, "");
        sched_tick(a);
    }
    cJSON_Delete(j);
}

/* ---------------- cluster metadata, imported data ---------------- */

/* NNI passes these to legacy training services. The v2 platforms take the same
 * settings from the experiment config, so they are accepted and not used (NNI's v3
 * local and remote throw, which kills its manager: that is not copied). */
void h_cluster_metadata(struct req *q)
{
    cJSON *j = body_json(q);
    if (!j)
        return;
    if (!cJSON_IsObject(j)) {
        reply_error(q->r, 400, "body: must be a JSON object {key: value, ...}");
        cJSON_Delete(j);
        return;
    }
    struct strbuf keys;
    sb_init(&keys);
    cJSON *ignored = cJSON_CreateArray();
    const cJSON *it;
    cJSON_ArrayForEach(it, j)
    {
        cJSON_AddItemToArray(ignored, cJSON_CreateString(it->string));
        if (keys.len)
            sb_puts(&keys, ", ");
        sb_add_snippet(&keys, it->string, strlen(it->string), SNIPPET_MAX); /* a client's text */
    }
    /* the keys only: values may hold passwords */
    log_info("PUT cluster-metadata: keys [%s] not used: v2 training services take them from the config",
             keys.buf ? keys.buf : "");
    sb_free(&keys);
    cJSON *reply = cJSON_CreateObject();
    cJSON_AddItemToObject(reply, "ignored", ignored);
    cJSON_AddStringToObject(reply, "message", "cluster metadata is not used by v2 training services;"
                                              " set these in the experiment config");
    reply_cjson(q->r, reply);
    cJSON_Delete(j);
}

/* A value the tuners can use: a number, {"default": number, ...}, or a JSON string of one. */
static int import_value_ok(const cJSON *v, int depth)
{
    if (cJSON_IsNumber(v))
        return isfinite(v->valuedouble);
    if (cJSON_IsObject(v)) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(v, "default");
        return cJSON_IsNumber(d) && isfinite(d->valuedouble);
    }
    struct json_issue is;
    if (cJSON_IsString(v) && depth == 0 && json_check(v->valuestring, strlen(v->valuestring), &is) == 0) {
        cJSON *in = cJSON_Parse(v->valuestring);
        int ok = in && import_value_ok(in, 1);
        cJSON_Delete(in);
        return ok;
    }
    return 0;
}

void h_import_data(struct req *q)
{
    struct api *a = q->a;
    cJSON *j = body_json(q);
    if (!j)
        return;
    int i = 0, bad = 0;
    const cJSON *it;
    if (!cJSON_IsArray(j)) {
        reply_error(q->r, 400, "body: must be a JSON array of {\"parameter\": {...}, \"value\": ...}");
        bad = 1;
    }
    cJSON *items = bad ? NULL : j;
    cJSON_ArrayForEach(it, items)
    {
        if (!cJSON_IsObject(it)) {
            reply_error(q->r, 400, "body[%d]: must be an object {\"parameter\": {...}, \"value\": ...}", i);
            bad = 1;
        } else if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(it, "parameter"))) {
            reply_error(q->r, 400, "body[%d].parameter: must be an object of parameter values", i);
            bad = 1;
        } else if (!import_value_ok(cJSON_GetObjectItemCaseSensitive(it, "value"), 0)) {
            reply_error(q->r, 400, "body[%d].value: must be a number, an object with a numeric \"default\","
                                   " or a JSON string of one", i);
            bad = 1;
        }
        if (bad)
            break;
        i++;
    }
    if (!bad) {
        /* one event row holds the whole payload, as NNI's IMPORT_DATA event */
        char *payload = cJSON_PrintUnformatted(j);
        struct errbuf e;
        if (db_event(a->db, &e, a->exp_id, NULL, "import", NULL, NULL, payload) < 0) {
            reply_error(q->r, 500, "%s", e.msg);
        } else {
            log_info("imported %d record(s)", i);
            reply_json(q->r, 200, "");
        }
        free(payload);
    }
    cJSON_Delete(j);
}

/* each import event's records as one JSON string in the list */
static int add_import(void *ctx, int64_t event_id, const char *records)
{
    struct strbuf *sb = ctx;
    if (sb->len > 1)
        sb_add(sb, ",", 1);
    nj_str(sb, records);
    return 0;
}

void h_imported_data(struct req *q)
{
    struct errbuf e;
    struct strbuf sb;
    sb_init(&sb);
    sb_add(&sb, "[", 1);
    if (import_events(q->a->db, q->a->exp_id, add_import, &sb, &e) < 0) {
        reply_error(q->r, 500, "%s", e.msg);
    } else {
        sb_add(&sb, "]", 1);
        reply_json(q->r, 200, sb.buf);
    }
    sb_free(&sb);
}

/* ---------------- the .experiment registry, from the database ---------------- */

void h_experiment_metadata(struct req *q)
{
    struct experiment x;
    if (req_experiment(q, &x) < 0)
        return;
    reply_cjson(q->r, nni_experiment_entry(&x, 1));
    exp_clear(&x);
}

void h_experiments_info(struct req *q)
{
    struct api *a = q->a;
    struct errbuf e;
    struct id_list l;
    if (exp_ids(a->db, 0, &l, &e) < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < l.n; i++) {
        struct experiment x;
        if (exp_load(a->db, l.ids[i], &x, &e) == 1) {
            int self = strcmp(x.id, a->exp_id) == 0;
            int alive = self || (x.api_pid > 0 && proc_alive((pid_t)x.api_pid, (uint64_t)x.api_start));
            if (self && a->readonly) {
                free(x.status);
                x.status = xstrdup("VIEWED");
            }
            cJSON_AddItemToArray(arr, nni_experiment_entry(&x, alive));
            exp_clear(&x);
        }
    }
    id_list_free(&l);
    reply_cjson(q->r, arr);
}

/* ---------------- export-data ---------------- */

static int fill_export(struct stream *s, struct strbuf *sb, struct errbuf *e)
{
    if (export_page_next(s->a->db, &s->page, 0, STREAM_PIECE, sb, e) < 0)
        return -1;
    return s->page.done ? 0 : 1;
}

void h_export_data(struct req *q)
{
    struct stream *s = stream_new(q);
    if (!s)
        return;
    s->fill = fill_export;
    stream_start(s, -1);
}
