/* disp_proto.c: NNI's tuner commands between the api and its dispatcher process
 * (spec §6). What NNI's manager feeds the dispatcher is read from the database with
 * cursors of our own (schema/dispatch.c): FINAL and PERIODICAL metrics (metric.id),
 * trial ends (trial.change_seq), imported data (event.id), search-space updates. Its
 * answers: TR -> the scheduler's next suggestion (dispatcher.c), NO -> no more trials,
 * KI -> EARLY_STOPPED, ER -> the experiment's error (with the traceback) and ERROR.
 * The formats are pure functions at the end of this file. */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "api/children.h"
#include "api/disp.h"
#include "schema/dispatch.h"

/* the tuner's commands trialq cannot use: said once a minute, then counted (log_input) */
#define UNEXPECTED "unexpected commands"

#define CHANGES_PER_FEED 1000
#define METRICS_PER_FEED 2000

void disp_expect(struct dispatcher *d, const char *what, int64_t timeout_ms)
{
    d->waiting_for = what;
    d->waiting_trials = strcmp(what, DISP_WAIT_TR) == 0;
    d->deadline_ms = mono_ms() + timeout_ms;
}

void disp_hello(struct dispatcher *d)
{
    d->state = D_INIT;
    d->sent_space = xstrdup(d->a->exp.search_space ? d->a->exp.search_space : "{}");
    disp_send(d, OUT_INITIALIZE, d->sent_space);
    disp_expect(d, "ID (Initialized)", d->answer_timeout_ms);
}

void disp_map_add(struct dispatcher *d, int64_t ours, const char *disp_id, const char *payload)
{
    if (d->nmap == d->capmap) {
        d->capmap = d->capmap ? 2 * d->capmap : 64;
        d->map = xrealloc(d->map, sizeof *d->map * (size_t)d->capmap);
    }
    d->map[d->nmap].ours = ours;
    d->map[d->nmap].disp_id = xstrdup(disp_id);
    d->map[d->nmap].payload = xstrdup(payload);
    d->nmap++;
}

const struct disp_pmap *disp_map_find(const struct dispatcher *d, int64_t ours)
{
    for (int i = d->nmap - 1; i >= 0; i--)
        if (d->map[i].ours == ours)
            return &d->map[i];
    return NULL;
}

/* ---------------- replay (start and resume) ---------------- */

struct list {               /* a JSON array being written, and its length */
    struct strbuf sb;
    int n;
    struct dispatcher *d;
};

static void list_add(struct list *l, const char *json)
{
    sb_printf(&l->sb, "%s%s", l->n++ ? "," : "", json);
}

static void replay_import(void *arg, int64_t id, const char *data)
{
    (void)id;
    struct list *l = arg;
    cJSON *arr = cJSON_Parse(data);
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        char *s = cJSON_PrintUnformatted(it);
        list_add(l, s);
        free(s);
    }
    cJSON_Delete(arr);
}

static void replay_result(void *arg, const char *trial_id, const char *parameters, const char *final_json)
{
    struct list *l = arg;
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "{\"parameter\":%s,\"value\":", parameters);
    json_put_string(&sb, final_json);
    sb_puts(&sb, ",\"trialJobId\":");
    json_put_string(&sb, trial_id);
    sb_puts(&sb, "}");
    list_add(l, sb.buf);
    sb_free(&sb);
}

static void replay_active(void *arg, int64_t index, const char *parameters, const char *label)
{
    struct list *l = arg;
    char *wire_id = NULL;
    char *rec = disp_resumed_record(index, label, parameters, &wire_id);
    disp_map_add(l->d, index, wire_id, rec);
    list_add(l, rec);
    free(wire_id);
    free(rec);
}

/* FD: every finished trial's result (as `experiment export` gives it) plus every earlier
 * import; AD: the trials still waiting or running, as parameter records of source
 * "resumed" (the dispatcher continues its parameter ids after them). */
static void replay(struct dispatcher *d)
{
    struct api *a = d->a;
    struct errbuf e;
    struct list fd = {.d = d}, ad = {.d = d};
    sb_init(&fd.sb);
    sb_init(&ad.sb);
    sb_puts(&fd.sb, "[");
    if (disp_imports(a->db, a->exp_id, 0, d->import_cursor, replay_import, &fd, &e) < 0 ||
        disp_succeeded(a->db, a->exp_id, replay_result, &fd, &e) < 0)
        log_warn("dispatcher: finished trials to replay (FD): %s", e.msg);
    sb_puts(&fd.sb, "]");
    if (fd.n && d->custom_tuner) {
        log_info("dispatcher: replaying %d finished result(s) (FD)", fd.n);
        disp_send(d, OUT_IMPORT_DATA, fd.sb.buf);
    }
    sb_puts(&ad.sb, "[");
    if (disp_active(a->db, a->exp_id, replay_active, &ad, &e) < 0)
        log_warn("dispatcher: running trials to replay (AD): %s", e.msg);
    sb_puts(&ad.sb, "]");
    if (ad.n && d->custom_tuner) {
        log_info("dispatcher: %d trial(s) still waiting or running (AD)", ad.n);
        disp_send(d, OUT_ADD_CUSTOMIZED_TRIAL_JOB, ad.sb.buf);
    }
    sb_free(&fd.sb);
    sb_free(&ad.sb);
}

/* ---------------- feeding: metrics, trial ends, imports, search space ---------------- */

static int was_ended(const struct dispatcher *d, const char *id)
{
    for (int i = 0; i < d->nended; i++)
        if (strcmp(d->ended[i], id) == 0)
            return 1;
    return 0;
}

struct ended_trial {
    char *id, *status, *payload; /* payload NULL: not one of the dispatcher's trials (no EN) */
};

struct ends {
    struct dispatcher *d;
    struct ended_trial *v;
    int n, cap;
};

static void feed_import(void *arg, int64_t id, const char *data)
{
    struct dispatcher *d = arg;
    d->import_cursor = id;
    if (d->custom_tuner)
        disp_send(d, OUT_IMPORT_DATA, data);
}

static void feed_change(void *arg, const struct disp_change *c)
{
    struct ends *l = arg;
    struct dispatcher *d = l->d;
    d->change_cursor = c->change_seq;
    if (!trial_status_final(c->status) || !c->has_index || was_ended(d, c->trial_id))
        return;
    /* not one of the dispatcher's trials (a customized trial from the API): its FINAL
     * still goes (NNI's dispatcher hands it to tuners that opted in), no EN */
    const struct disp_pmap *m = disp_map_find(d, c->parameter_id);
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = xrealloc(l->v, sizeof *l->v * (size_t)l->cap);
    }
    l->v[l->n].id = xstrdup(c->trial_id);
    l->v[l->n].status = xstrdup(c->status);
    l->v[l->n].payload = m ? xstrdup(m->payload) : NULL;
    l->n++;
}

static void send_metric(struct dispatcher *d, const struct disp_metric *m, int final)
{
    struct strbuf sb;
    sb_init(&sb);
    disp_metric_json(&sb, m->trial_id, m->parameter_id, final, m->sequence, m->value);
    disp_send(d, OUT_REPORT_METRIC_DATA, sb.buf);
    sb_free(&sb);
}

static void feed_metric(void *arg, const struct disp_metric *m)
{
    struct dispatcher *d = arg;
    d->metric_cursor = m->id;
    if (strcmp(m->type, "FINAL") == 0 || !(d->custom_assessor || d->custom_tuner))
        return;
    send_metric(d, m, 0);
}

static void feed_final(void *arg, const struct disp_metric *m)
{
    send_metric(arg, m, 1);
}

/* A trial's end: its final result (the first FINAL of the attempt that ended), then
 * EN when it is one of the dispatcher's trials. */
static void send_end(struct dispatcher *d, struct ended_trial *t)
{
    struct errbuf e;
    if (d->custom_tuner && disp_final(d->a->db, t->id, feed_final, d, &e) < 0)
        log_warn("dispatcher: final result of trial %s: %s", t->id, e.msg);
    if (t->payload) {
        struct strbuf sb;
        sb_init(&sb);
        disp_end_json(&sb, t->id, t->status, t->payload);
        disp_send(d, OUT_TRIAL_END, sb.buf);
        sb_free(&sb);
    }
    if (d->nended == d->capended) {
        d->capended = d->capended ? 2 * d->capended : 64;
        d->ended = xrealloc(d->ended, sizeof *d->ended * (size_t)d->capended);
    }
    d->ended[d->nended++] = t->id;
    free(t->status);
    free(t->payload);
}

void disp_feed(struct dispatcher *d)
{
    struct api *a = d->a;
    struct errbuf e;
    /* search space changed (PUT /experiment?update_type=SEARCH_SPACE): SS */
    if (d->custom_tuner && a->exp.search_space && d->sent_space && strcmp(a->exp.search_space, d->sent_space) != 0) {
        free(d->sent_space);
        d->sent_space = xstrdup(a->exp.search_space);
        d->no_more = 0;
        disp_send(d, OUT_UPDATE_SEARCH_SPACE, d->sent_space);
    }
    /* imported data: FD */
    if (disp_imports(a->db, a->exp_id, d->import_cursor, INT64_MAX, feed_import, d, &e) < 0)
        log_warn("dispatcher: imported data: %s", e.msg);
    /* trials that ended, read before the metrics: a worker stores a trial's last
     * metrics with its end in one transaction, so every metric of an ended trial seen
     * here is in the metric query below, and goes to the dispatcher before its EN. A
     * trial's FINAL goes with its end (ME, then EN, as NNI sends them), not when it
     * arrives: an attempt whose job vanished and is retried may have sent one, and the
     * tuner must learn the result of the attempt that ended (NNI's tuners keep one
     * result per parameter id: TPE raises on a second). */
    struct ends ends = {.d = d};
    if (disp_changes(a->db, a->exp_id, d->change_cursor, CHANGES_PER_FEED, feed_change, &ends, &e) < 0)
        log_warn("dispatcher: trial ends: %s", e.msg);
    /* intermediate metrics, as they come (the assessor's) */
    if (disp_metrics(a->db, a->exp_id, d->metric_cursor, METRICS_PER_FEED, feed_metric, d, &e) < 0)
        log_warn("dispatcher: metrics: %s", e.msg);
    for (int i = 0; i < ends.n; i++)
        send_end(d, &ends.v[i]);
    free(ends.v);
}

/* ---------------- commands from the dispatcher ---------------- */

static void on_kick(evutil_socket_t fd, short ev, void *arg)
{
    (void)fd; (void)ev;
    struct dispatcher *d = arg;
    d->kick_pending = 0;
    if (d->a->wake_scheduler)
        d->a->wake_scheduler(d->a);
}

/* New parameters: the scheduler takes them now rather than on its next tick. */
static void kick_scheduler(struct dispatcher *d)
{
    if (d->kick_pending)
        return;
    struct timeval zero = {0, 0};
    if (event_base_once(d->a->base, -1, EV_TIMEOUT, on_kick, d, &zero) == 0)
        d->kick_pending = 1;
}

static void on_ready(struct dispatcher *d)
{
    d->state = D_READY;
    d->deadline_ms = 0;
    log_info("dispatcher initialized (pid %d, %s channel)", (int)d->pid, d->use_ws ? "WebSocket" : "pipe");
    replay(d);
    disp_feed(d);
    kick_scheduler(d);
}

static void on_tr(struct dispatcher *d, const char *content)
{
    cJSON *params = NULL;
    char *disp_id = NULL;
    struct errbuf e;
    if (disp_parse_tr(content, &params, &disp_id, &e) < 0) {
        disp_fail(d, "%s", e.msg);
        return;
    }
    if (d->nqueue == d->capqueue) {
        d->capqueue = d->capqueue ? 2 * d->capqueue : 16;
        d->queue = xrealloc(d->queue, sizeof *d->queue * (size_t)d->capqueue);
    }
    struct disp_tr *t = &d->queue[d->nqueue++];
    t->params = params;
    t->disp_id = disp_id;
    t->payload = xstrdup(content);
    if (d->requested > 0)
        d->requested--;
    if (d->requested == 0)
        d->deadline_ms = 0;
    kick_scheduler(d);
}

static void on_ki(struct dispatcher *d, const char *content)
{
    /* the trial id as a JSON string literal: "AbCd1", quotes included */
    cJSON *j = cJSON_Parse(content);
    char shown[SNIPPET_SIZE];
    if (!cJSON_IsString(j)) {
        log_input(LOG_WARN, "dispatcher", UNEXPECTED, "KI without a trial id string: %s",
                  snippet(shown, content, strlen(content)));
        cJSON_Delete(j);
        return;
    }
    struct errbuf e;
    struct api *a = d->a;
    struct trial t;
    int found = trial_load(a->db, j->valuestring, &t, &e);
    /* only a trial of this experiment */
    if (found > 0 && strcmp(t.experiment_id, a->exp_id) == 0) {
        const char *who = a->cfg->assessor.class_name ? a->cfg->assessor.class_name
                          : a->cfg->tuner.class_name  ? a->cfg->tuner.class_name : "dispatcher";
        char *why = xasprintf("%s: early stop (assessor's KillTrialJob)", who);
        int rc = trial_request_kill(a->db, t.id, "EARLY_STOPPED", why, &e);
        if (rc > 0) {
            log_info("trial %s: %s", t.id, why);
            children_wake(a);
        } else if (rc < 0) {
            log_error("cannot stop trial %s: %s", t.id, e.msg);
        }
        free(why);
    } else if (found < 0) {
        log_error("dispatcher: KI: %s", e.msg);
    } else {
        log_input(LOG_WARN, "dispatcher", UNEXPECTED, "KI for unknown trial %s",
                  snippet(shown, j->valuestring, strlen(j->valuestring)));
    }
    if (found > 0)
        trial_clear(&t);
    cJSON_Delete(j);
}

void disp_command(struct dispatcher *d, const char *type, const char *content)
{
    char type_shown[SNIPPET_SIZE], shown[SNIPPET_SIZE];
    log_debug("dispatcher -> %s (%zu bytes)", snippet(type_shown, type, strnlen(type, 8)), strlen(content));
    if (d->state == D_FAILED || d->state == D_CLOSED)
        return;
    switch (disp_cmd_of(type)) {
    case CMD_INITIALIZED:
        if (d->state == D_INIT)
            on_ready(d);
        break;
    case CMD_TRIAL:
        on_tr(d, content);
        break;
    case CMD_NO_MORE:
        d->no_more = 1;
        d->requested = 0;
        d->deadline_ms = 0;
        kick_scheduler(d);
        break;
    case CMD_KILL:
        on_ki(d, content);
        break;
    case CMD_ERROR:
        disp_fail(d, "tuner error (dispatcher process): %s", *content ? content : disp_tail(d));
        break;
    case CMD_SEND_PARAMETER:
        log_input(LOG_WARN, "dispatcher", UNEXPECTED, "SendTrialJobParameter (SP) is not supported (multi-phase), ignored");
        break;
    case CMD_BYE:
        log_info("dispatcher said goodbye: %s", snippet(shown, content, strlen(content)));
        break;
    case CMD_NOP:
        break;
    case CMD_UNKNOWN:
        log_input(LOG_WARN, "dispatcher", UNEXPECTED, "unknown command %s ignored", type_shown);
        break;
    }
}

/* ---------------- the formats ---------------- */

enum disp_cmd disp_cmd_of(const char *type)
{
    static const struct {
        const char *type;
        enum disp_cmd cmd;
    } cmds[] = {
        {"ID", CMD_INITIALIZED}, {"TR", CMD_TRIAL}, {"NO", CMD_NO_MORE}, {"KI", CMD_KILL}, {"ER", CMD_ERROR},
        {"SP", CMD_SEND_PARAMETER}, {"_bye_", CMD_BYE}, {"_nop_", CMD_NOP},
    };
    for (size_t i = 0; type && i < sizeof cmds / sizeof *cmds; i++)
        if (strcmp(type, cmds[i].type) == 0)
            return cmds[i].cmd;
    return CMD_UNKNOWN;
}

int disp_is_int_text(const char *s)
{
    if (!s || !*s)
        return 0;
    if (*s == '-')
        s++;
    if (!*s || strlen(s) > 15 || (s[0] == '0' && s[1])) /* JSON has no leading zeros */
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

void disp_put_id(struct strbuf *sb, const char *id)
{
    if (disp_is_int_text(id))
        sb_puts(sb, id);
    else if (id && *id)
        json_put_string(sb, id);
    else
        sb_puts(sb, "null");
}

void disp_encode(struct strbuf *sb, int use_ws, const char *type, const char *content)
{
    if (!content)
        content = "";
    if (!use_ws) {
        pipe_frame_encode(sb, type, content, strlen(content));
        return;
    }
    struct strbuf msg;
    sb_init(&msg);
    sb_puts(&msg, "{\"type\":");
    json_put_string(&msg, type);
    sb_puts(&msg, ",\"content\":");
    json_put_string(&msg, content);
    sb_puts(&msg, "}");
    ws_frame_encode(sb, WS_TEXT, msg.buf, msg.len, NULL);
    sb_free(&msg);
}

int disp_ws_decode(const char *text, size_t n, char **type, char **content, struct errbuf *e)
{
    cJSON *j = cJSON_ParseWithLength(text, n);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "content");
    if (!cJSON_IsString(t)) {
        cJSON_Delete(j);
        return errf(e, "tuner WebSocket message is not {\"type\",\"content\"} JSON: %.200s", text);
    }
    if (strcmp(t->valuestring, "_bye_") == 0) {
        const cJSON *reason = cJSON_GetObjectItemCaseSensitive(j, "reason");
        if (cJSON_IsString(reason))
            c = reason;
    }
    *type = xstrdup(t->valuestring);
    *content = xstrdup(cJSON_IsString(c) ? c->valuestring : "");
    cJSON_Delete(j);
    return 0;
}

/* NNI's shape, the value a JSON string. The parameter_id the trial reported: its
 * parameter.cfg carried the dispatcher's own id (trial.parameter_label) or the index,
 * so it is the dispatcher's id already; a number when it is one, as NNI's JSON has it. */
void disp_metric_json(struct strbuf *sb, const char *trial_id, const char *parameter_id, int final, int64_t sequence,
                      const char *value)
{
    sb_puts(sb, "{\"parameter_id\":");
    disp_put_id(sb, parameter_id);
    sb_puts(sb, ",\"trial_job_id\":");
    json_put_string(sb, trial_id);
    sb_printf(sb, ",\"type\":\"%s\",\"sequence\":%lld,\"value\":", final ? "FINAL" : "PERIODICAL",
              (long long)sequence);
    json_put_string(sb, value);
    sb_puts(sb, "}");
}

void disp_end_json(struct strbuf *sb, const char *trial_id, const char *status, const char *payload)
{
    sb_puts(sb, "{\"trial_job_id\":");
    json_put_string(sb, trial_id);
    sb_puts(sb, ",\"event\":");
    json_put_string(sb, status);
    sb_puts(sb, ",\"hyper_params\":");
    json_put_string(sb, payload);
    sb_puts(sb, "}");
}

char *disp_resumed_record(int64_t index, const char *label, const char *parameters, char **wire_id)
{
    struct strbuf idj;
    sb_init(&idj);
    if (disp_is_int_text(label))
        sb_puts(&idj, label);
    else if (label)
        json_put_string(&idj, label);
    else
        sb_printf(&idj, "%lld", (long long)index);
    char *rec = xasprintf("{\"parameter_id\":%s,\"parameter_source\":\"resumed\",\"parameters\":%s,"
                          "\"parameter_index\":0}", idj.buf, parameters);
    *wire_id = sb_detach(&idj);
    return rec;
}

int disp_parse_tr(const char *content, cJSON **params, char **disp_id, struct errbuf *e)
{
    cJSON *rec = cJSON_Parse(content);
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(rec, "parameters");
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(rec, "parameter_id");
    if (!cJSON_IsObject(p) || !id) {
        cJSON_Delete(rec);
        return errf(e, "tuner sent a trial (TR) that is not a parameter record with parameter_id and a parameters"
                       " object: %.300s", content);
    }
    *params = cJSON_Duplicate(p, 1);
    *disp_id = cJSON_PrintUnformatted(id);
    cJSON_Delete(rec);
    return 0;
}

char *disp_label_of(const char *disp_id, int64_t index)
{
    cJSON *j = cJSON_Parse(disp_id);
    char *out = NULL;
    if (cJSON_IsString(j))
        out = xstrdup(j->valuestring);
    else if (cJSON_IsNumber(j) && j->valuedouble == (double)index)
        out = NULL;
    else if (j && !cJSON_IsNull(j))
        out = xstrdup(disp_id);
    cJSON_Delete(j);
    return out;
}
