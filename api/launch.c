/* launch.c: the api as NNI's launcher starts its manager (nni/experiment/launcher.py:
 * `node main.js --port P --experiment-id ID --action create ...`, then GET /check-status
 * until it answers, then POST /experiment with the config). For create the experiment
 * has no row yet: the api listens, answers /check-status, and the POSTed config is
 * checked as nnictl create checks a file (the hook, cli/create.c) and stored in one
 * transaction before the 200. Also NNI's own database file, which NNI's client reads the
 * config back from to resume or view (schema/nnidb.c). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/http_util.h"
#include "api/launch.h"
#include "schema/nnidb.h"

static api_create_fn g_create;

void api_set_create_hook(api_create_fn fn)
{
    g_create = fn;
}

static void on_stop_signal(evutil_socket_t sig, short ev, void *arg)
{
    (void)ev;
    struct api *a = arg;
    log_info("%s before the config came: exiting", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    event_base_loopbreak(a->base);
}

int launch_await_config(struct api *a, int port)
{
    log_info("experiment %s: listening on http://%s:%d for its config (POST %s/experiment)", a->exp_id,
             a->exp.bind_address, port, API_PREFIX);
    struct event *sev[2] = {evsignal_new(a->base, SIGTERM, on_stop_signal, a),
                            evsignal_new(a->base, SIGINT, on_stop_signal, a)};
    for (int i = 0; i < 2; i++)
        event_add(sev[i], NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    event_base_dispatch(a->base);
    for (int i = 0; i < 2; i++)
        event_free(sev[i]);
    return a->awaiting_config ? 1 : 0;
}

/* POST /experiment: the row from the body, or 400 naming what is wrong */
static void create_from_post(struct api *a, struct evhttp_request *r)
{
    struct req q = {.a = a, .r = r, .path = API_PREFIX "/experiment"};
    cJSON *j = body_json(&q);
    if (!j)
        return;
    char *text = cJSON_PrintUnformatted(j);
    const char *prefix = a->exp.url_prefix && a->exp.url_prefix[0] ? a->exp.url_prefix : NULL;
    struct api_create_req req = {.home = a->home, .id = a->exp_id, .json = text, .exp_root = a->exp_root,
                                 .bind = a->exp.bind_address, .url_prefix = prefix, .port = a->exp.port};
    char msg[2048] = "";
    int rc = g_create ? g_create(a->db, &req, msg, sizeof msg) : (snprintf(msg, sizeof msg, "no create hook"), 1);
    free(text);
    if (rc != 0) {
        log_error("POST /experiment refused: %s", msg);
        reply_error(r, 400, "%s", msg);
        cJSON_Delete(j);
        return;
    }
    a->posted = config_redacted(j); /* for nni.sqlite: NNI's client reads its own config back */
    cJSON_Delete(j);
    a->awaiting_config = 0;
    cJSON *ok = cJSON_CreateObject();
    cJSON_AddStringToObject(ok, "experiment_id", a->exp_id);
    reply_cjson(r, ok);
    event_base_loopbreak(a->base); /* api_main goes on as for a row nnictl create made */
}

void launch_request(struct api *a, struct evhttp_request *r, int nseg, char **seg)
{
    enum evhttp_cmd_type m = evhttp_request_get_command(r);
    int api = nseg == 4 && strcmp(seg[0], "api") == 0 && strcmp(seg[1], "v1") == 0 && strcmp(seg[2], "nni") == 0;
    if (api && m == EVHTTP_REQ_GET && strcmp(seg[3], "check-status") == 0)
        reply_json(r, 200, "{\"status\":\"INITIALIZED\",\"errors\":[]}");
    else if (api && m == EVHTTP_REQ_POST && strcmp(seg[3], "experiment") == 0)
        create_from_post(a, r);
    else
        reply_error(r, 503, "experiment %s is not created yet: its config comes with POST %s/experiment", a->exp_id,
                    API_PREFIX);
}

void launch_nnidb_sync(struct api *a)
{
    struct experiment x;
    struct errbuf e;
    if (a->readonly || exp_load(a->db, a->exp_id, &x, &e) <= 0)
        return;
    char *path = x.exp_dir ? nnidb_path(x.exp_dir) : NULL;
    cJSON *params = a->posted;
    a->posted = NULL;
    if (path && !params && nnidb_last_params(path, &params, &e) < 0)
        log_warn("%s", e.msg);
    if (path && !params) {
        /* an experiment nnictl create made: its stored config, without trialq's own key
         * (NNI's ExperimentConfig refuses a key it does not know) */
        cJSON *cfg = cJSON_Parse(x.config);
        params = cfg ? config_redacted(cfg) : NULL;
        cJSON_Delete(cfg);
        cJSON_DeleteItemFromObjectCaseSensitive(params, "maxTrialRetries");
    }
    if (params && nnidb_store(path, &x, params, &e) < 0)
        log_warn("NNI's profile of %s not stored: %s", a->exp_id, e.msg);
    free(path);
    exp_clear(&x);
}
