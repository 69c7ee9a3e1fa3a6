/* routes.c: the NNI REST API under /api/v1/nni, as a table of routes. Payload shapes
 * are NNI's (including its double-encoded metric values) so NNI's clients work. */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>

#include "api/api.h"
#include "schema/nnijson.h"

#define API_PREFIX "/api/v1/nni"
#define MAX_BODY (50 << 20)

struct req {
    struct api *a;
    struct evhttp_request *r;
    const char *path;     /* below API_PREFIX */
    const char *arg;      /* the :id part, when the route has one */
};

static void reply_json(struct evhttp_request *r, int code, const char *body)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(r);
    evhttp_add_header(h, "Content-Type", "application/json");
    evhttp_add_header(h, "Access-Control-Allow-Headers", "Origin, X-Requested-With, Content-Type, Accept");
    evhttp_add_header(h, "Access-Control-Allow-Methods", "PUT,POST,GET,DELETE,OPTIONS");
    struct evbuffer *b = evbuffer_new();
    if (body)
        evbuffer_add(b, body, strlen(body));
    evhttp_send_reply(r, code, code == 200 ? "OK" : code == 404 ? "Not Found" : code < 500 ? "Bad Request" : "Error", b);
    evbuffer_free(b);
}

static void reply_cjson(struct evhttp_request *r, cJSON *j)
{
    char *s = cJSON_PrintUnformatted(j);
    reply_json(r, 200, s);
    free(s);
    cJSON_Delete(j);
}

static void reply_error(struct evhttp_request *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reply_error(struct evhttp_request *r, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "error", msg);
    char *s = cJSON_PrintUnformatted(j);
    reply_json(r, code, s);
    free(s);
    cJSON_Delete(j);
}

static char *body_of(struct evhttp_request *r, size_t *len)
{
    struct evbuffer *b = evhttp_request_get_input_buffer(r);
    size_t n = evbuffer_get_length(b);
    char *s = xmalloc(n + 1);
    evbuffer_remove(b, s, n);
    s[n] = '\0';
    *len = n;
    return s;
}

/* ---------------- handlers ---------------- */

static void h_version(struct req *q)
{
    reply_json(q->r, 200, "\"" TRIALQ_VERSION "\"");
}

static void h_check_status(struct req *q)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "status", q->a->exp.status);
    cJSON *errs = cJSON_Parse(q->a->exp.errors);
    cJSON_AddItemToObject(j, "errors", errs ? errs : cJSON_CreateArray());
    reply_cjson(q->r, j);
}

static void h_experiment_get(struct req *q)
{
    cJSON *cfg = cJSON_Parse(q->a->exp.config);
    cJSON *red = cfg ? config_redacted(cfg) : cJSON_CreateObject();
    cJSON_Delete(cfg);
    reply_cjson(q->r, nni_profile_json(&q->a->exp, red));
}

static void h_experiment_delete(struct req *q)
{
    reply_json(q->r, 200, "");
    sched_begin_stop(q->a, "DELETE /experiment");
}

static int get_int_param(const cJSON *params, const char *key, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
    if (cJSON_IsNumber(v)) {
        *out = (int64_t)v->valuedouble;
        return 0;
    }
    if (cJSON_IsString(v)) {
        int64_t s;
        if (parse_duration(v->valuestring, &s) == 0) {
            *out = s;
            return 0;
        }
    }
    return -1;
}

static void h_experiment_put(struct req *q)
{
    struct api *a = q->a;
    if (a->readonly) {
        reply_error(q->r, 400, "experiment %s is in readonly mode!", a->exp_id);
        return;
    }
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(q->r);
    struct evkeyvalq qs;
    TAILQ_INIT(&qs);
    evhttp_parse_query_str(evhttp_uri_get_query(uri) ? evhttp_uri_get_query(uri) : "", &qs);
    const char *type = evhttp_find_header(&qs, "update_type");
    size_t len;
    char *body = body_of(q->r, &len);
    cJSON *j = cJSON_ParseWithLength(body, len);
    free(body);
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "params");
    struct errbuf e;
    int64_t v = 0;
    int rc = -2;
    if (!type) {
        reply_error(q->r, 400, "PUT /experiment: missing query parameter update_type");
    } else if (!cJSON_IsObject(params)) {
        reply_error(q->r, 400, "PUT /experiment: body must be an ExperimentProfile with a params object");
    } else if (strcmp(type, "TRIAL_CONCURRENCY") == 0) {
        if (get_int_param(params, "trialConcurrency", &v) < 0 || v < 1 || v > 1000000)
            reply_error(q->r, 400, "params.trialConcurrency: must be an integer >= 1");
        else
            rc = db_run(a->db, &e, "UPDATE experiment SET concurrency = ?, updated_at = ? WHERE id = ?", "iis", v,
                        now_ms(), a->exp_id);
    } else if (strcmp(type, "MAX_TRIAL_NUM") == 0) {
        if (get_int_param(params, "maxTrialNumber", &v) < 0 || v < 1)
            reply_error(q->r, 400, "params.maxTrialNumber: must be an integer >= 1");
        else
            rc = db_run(a->db, &e, "UPDATE experiment SET max_trial_number = ?, updated_at = ? WHERE id = ?", "iis",
                        v, now_ms(), a->exp_id);
    } else if (strcmp(type, "MAX_EXEC_DURATION") == 0) {
        if (get_int_param(params, "maxExperimentDuration", &v) < 0 || v < 1)
            reply_error(q->r, 400, "params.maxExperimentDuration: must be a duration such as 30m or seconds >= 1");
        else
            rc = db_run(a->db, &e, "UPDATE experiment SET max_exec_seconds = ?, updated_at = ? WHERE id = ?", "iis",
                        v, now_ms(), a->exp_id);
    } else if (strcmp(type, "SEARCH_SPACE") == 0) {
        const cJSON *ss = cJSON_GetObjectItemCaseSensitive(params, "searchSpace");
        struct ss_space *space = NULL;
        char path[256];
        if (!ss || ss_parse(ss, &space, path, sizeof path, &e) < 0) {
            reply_error(q->r, 400, "params.searchSpace: %s", ss ? e.msg : "missing");
        } else {
            char *s = cJSON_PrintUnformatted(ss);
            rc = db_run(a->db, &e, "UPDATE experiment SET search_space = ?, tuner_exhausted = 0, updated_at = ?"
                                   " WHERE id = ?", "sis", s, now_ms(), a->exp_id);
            free(s);
            if (rc >= 0) {
                if (a->tuner_state)
                    a->tuner->destroy(a->tuner_state);
                a->tuner_state = NULL;
                ss_free(a->space);
                a->space = space;
                space = NULL;
                if (a->tuner->create(a->cfg->tuner.class_args, a->space, (uint64_t)a->exp.seed,
                                     &a->tuner_state, &e) < 0) {
                    reply_error(q->r, 400, "params.searchSpace: %s", e.msg);
                    rc = -2;
                }
            }
        }
        ss_free(space);
    } else {
        reply_error(q->r, 400, "PUT /experiment: unknown update_type '%s' (TRIAL_CONCURRENCY, MAX_TRIAL_NUM,"
                               " MAX_EXEC_DURATION, SEARCH_SPACE)", type);
    }
    if (rc == -1)
        reply_error(q->r, 500, "%s", e.msg);
    else if (rc >= 0) {
        /* a raised limit revives a finished experiment, as in NNI */
        exp_transition(a->db, a->exp_id, "DONE,NO_MORE_TRIAL,TUNER_NO_MORE_TRIAL", "RUNNING", type, &e);
        db_event(a->db, &e, a->exp_id, NULL, "experiment", NULL, NULL, type);
        reply_json(q->r, 200, "");
        sched_tick(a);
    }
    evhttp_clear_headers(&qs);
    cJSON_Delete(j);
}

static void h_trial_jobs(struct req *q)
{
    struct api *a = q->a;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(q->r);
    struct evkeyvalq qs;
    TAILQ_INIT(&qs);
    evhttp_parse_query_str(evhttp_uri_get_query(uri) ? evhttp_uri_get_query(uri) : "", &qs);
    const char *status = evhttp_find_header(&qs, "status");
    struct errbuf e;
    sqlite3_stmt *st = db_query(a->db, &e,
        "SELECT " TRIAL_COLUMNS " FROM trial WHERE experiment_id = ? AND (? IS NULL OR status = ?)"
        " ORDER BY sequence", "sss", a->exp_id, status, status);
    if (!st) {
        reply_error(q->r, 500, "%s", e.msg);
        evhttp_clear_headers(&qs);
        return;
    }
    /* collect rows first: trial_job_json runs its own query */
    int n = 0, cap = 0;
    struct trial *ts = NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            ts = xrealloc(ts, sizeof *ts * (size_t)cap);
        }
        trial_from_row(st, &ts[n++]);
    }
    sqlite3_reset(st);
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(arr, nni_trial_job_json(a->db, &a->exp, &ts[i]));
        trial_clear(&ts[i]);
    }
    free(ts);
    evhttp_clear_headers(&qs);
    reply_cjson(q->r, arr);
}

static void h_trial_job_get(struct req *q)
{
    struct trial t;
    struct errbuf e;
    int f = trial_load(q->a->db, q->arg, &t, &e);
    if (f < 0)
        reply_error(q->r, 500, "%s", e.msg);
    else if (f == 0 || strcmp(t.experiment_id, q->a->exp_id) != 0)
        reply_error(q->r, 404, "trial %s not found", q->arg);
    else
        reply_cjson(q->r, nni_trial_job_json(q->a->db, &q->a->exp, &t));
    if (f > 0)
        trial_clear(&t);
}

static void h_trial_job_delete(struct req *q)
{
    struct api *a = q->a;
    if (a->readonly) {
        reply_error(q->r, 400, "experiment %s is in readonly mode!", a->exp_id);
        return;
    }
    struct trial t;
    struct errbuf e;
    int f = trial_load(a->db, q->arg, &t, &e);
    if (f <= 0 || strcmp(t.experiment_id, a->exp_id) != 0) {
        reply_error(q->r, f < 0 ? 500 : 404, "%s", f < 0 ? e.msg : "trial not found");
    } else if (trial_request_kill(a->db, q->arg, "USER_CANCELED", "DELETE /trial-jobs", &e) < 0) {
        reply_error(q->r, 500, "%s", e.msg);
    } else {
        children_wake(a);
        reply_json(q->r, 200, "");
    }
    if (f > 0)
        trial_clear(&t);
}

static void metrics_query(struct req *q, const char *trial_id)
{
    struct api *a = q->a;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(q->r);
    struct evkeyvalq qs;
    TAILQ_INIT(&qs);
    evhttp_parse_query_str(evhttp_uri_get_query(uri) ? evhttp_uri_get_query(uri) : "", &qs);
    const char *type = evhttp_find_header(&qs, "type");
    struct errbuf e;
    sqlite3_stmt *st = db_query(a->db, &e,
        "SELECT m.trial_id, m.parameter_id, m.type, m.sequence, m.value, m.time FROM metric m"
        " JOIN trial t ON t.id = m.trial_id WHERE t.experiment_id = ? AND m.attempt = t.attempt"
        " AND (? IS NULL OR m.trial_id = ?) AND (? IS NULL OR m.type = ?) ORDER BY t.sequence, m.id",
        "sssss", a->exp_id, trial_id, trial_id, type, type);
    if (!st) {
        reply_error(q->r, 500, "%s", e.msg);
    } else {
        cJSON *arr = cJSON_CreateArray();
        while (sqlite3_step(st) == SQLITE_ROW)
            cJSON_AddItemToArray(arr, nni_metric_record(st, 0));
        sqlite3_reset(st);
        reply_cjson(q->r, arr);
    }
    evhttp_clear_headers(&qs);
}

static void h_metric_data(struct req *q) { metrics_query(q, NULL); }
static void h_metric_data_trial(struct req *q) { metrics_query(q, q->arg); }

static void h_job_statistics(struct req *q)
{
    struct errbuf e;
    sqlite3_stmt *st = db_query(q->a->db, &e, "SELECT status, count(*) FROM trial WHERE experiment_id = ?"
                                              " GROUP BY status", "s", q->a->exp_id);
    if (!st) {
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    cJSON *arr = cJSON_CreateArray();
    while (sqlite3_step(st) == SQLITE_ROW) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "trialJobStatus", (const char *)sqlite3_column_text(st, 0));
        cJSON_AddNumberToObject(o, "trialJobNumber", (double)col_i64(st, 1));
        cJSON_AddItemToArray(arr, o);
    }
    sqlite3_reset(st);
    reply_cjson(q->r, arr);
}

/* ---------------- routing ---------------- */

struct route {
    enum evhttp_cmd_type method;
    const char *path;     /* exact, or a prefix ending in '/' followed by one :arg */
    int has_arg;
    void (*fn)(struct req *q);
};

static const struct route routes[] = {
    {EVHTTP_REQ_GET, "/version", 0, h_version},
    {EVHTTP_REQ_GET, "/check-status", 0, h_check_status},
    {EVHTTP_REQ_GET, "/experiment", 0, h_experiment_get},
    {EVHTTP_REQ_PUT, "/experiment", 0, h_experiment_put},
    {EVHTTP_REQ_DELETE, "/experiment", 0, h_experiment_delete},
    {EVHTTP_REQ_GET, "/trial-jobs", 0, h_trial_jobs},
    {EVHTTP_REQ_GET, "/trial-jobs/", 1, h_trial_job_get},
    {EVHTTP_REQ_DELETE, "/trial-jobs/", 1, h_trial_job_delete},
    {EVHTTP_REQ_GET, "/metric-data", 0, h_metric_data},
    {EVHTTP_REQ_GET, "/metric-data/", 1, h_metric_data_trial},
    {EVHTTP_REQ_GET, "/job-statistics", 0, h_job_statistics},
};

static int valid_arg(const char *s)
{
    if (!*s || strlen(s) > 64)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-' ||
              *s == '_'))
            return 0;
    return 1;
}

static void dispatch(struct evhttp_request *r, void *arg)
{
    struct api *a = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(r);
    const char *raw = evhttp_uri_get_path(uri);
    char *path = raw ? evhttp_uridecode(raw, 0, NULL) : xstrdup("/");
    enum evhttp_cmd_type m = evhttp_request_get_command(r);
    if (!str_starts(path, API_PREFIX "/") && strcmp(path, API_PREFIX) != 0) {
        reply_error(r, 404, "no route %s (the API is under " API_PREFIX ")", path);
        free(path);
        return;
    }
    if (evbuffer_get_length(evhttp_request_get_input_buffer(r)) > MAX_BODY) {
        reply_error(r, 413, "request body over %d bytes", MAX_BODY);
        free(path);
        return;
    }
    const char *sub = path + strlen(API_PREFIX);
    size_t sl = strlen(sub);
    char *trimmed = xstrndup(sub, sl && sub[sl - 1] == '/' && sl > 1 ? sl - 1 : sl);
    int path_known = 0;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        const struct route *rt = &routes[i];
        const char *argp = NULL;
        if (rt->has_arg) {
            if (!str_starts(trimmed, rt->path))
                continue;
            argp = trimmed + strlen(rt->path);
            if (!valid_arg(argp))
                continue;
        } else if (strcmp(trimmed, rt->path) != 0) {
            continue;
        }
        path_known = 1;
        if (rt->method != m)
            continue;
        struct req q = {.a = a, .r = r, .path = trimmed, .arg = argp};
        rt->fn(&q);
        free(trimmed);
        free(path);
        return;
    }
    if (path_known)
        reply_error(r, 405, "method not allowed on %s", path);
    else
        reply_error(r, 404, "no route %s", path);
    free(trimmed);
    free(path);
}

void routes_register(struct api *a)
{
    evhttp_set_allowed_methods(a->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS);
    evhttp_set_max_body_size(a->http, MAX_BODY);
    evhttp_set_gencb(a->http, dispatch, a);
}
