/* dispatcher.c: customized Python tuners, assessors and advisors through NNI's
 * dispatcher process (spec §6): its set-up, the tuner interface the scheduler sees,
 * and its shutdown. The process (disp_proc.c), the channel (disp_chan.c, disp_ws.c)
 * and NNI's commands (disp_proto.c) are each in their own file (api/disp.h); the
 * state is one struct dispatcher that the api holds (a->disp).
 * The process is not restarted: a failed dispatcher fails the experiment cleanly, and
 * `nnictl resume` starts a fresh one, replaying the finished trials (FD) and the trials
 * still running (AD), as NNI does. Every expected answer has a deadline. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "api/disp.h"
#include "api/dispatcher.h"
#include "schema/exp_api.h"
#include "schema/trial_sets.h"

#define ANSWER_TIMEOUT_MS 600000   /* default for ID/TR answers; TRIALQ_DISPATCHER_TIMEOUT */
#define SHUTDOWN_GRACE_MS 5000

/* A tuner state is a handle on the api's dispatcher: a search-space update creates a
 * second state before it drops the first, both handles on the one process. */
struct handle {
    struct dispatcher *d;
};

static int64_t env_timeout_ms(void)
{
    const char *s = getenv("TRIALQ_DISPATCHER_TIMEOUT");
    int64_t secs;
    if (s && *s && parse_duration(s, &secs) == 0 && secs > 0)
        return secs * 1000;
    return ANSWER_TIMEOUT_MS;
}

int dispatcher_needed(const struct exp_config *cfg)
{
    return cfg->tuner.class_name || (cfg->assessor.set && cfg->assessor.class_name);
}

int dispatcher_init(struct api *a, struct errbuf *e)
{
    (void)e;
    if (a->disp)
        return 0;
    struct dispatcher *d = xcalloc(1, sizeof *d);
    d->a = a;
    d->custom_tuner = a->cfg->tuner.class_name != NULL;
    d->custom_assessor = a->cfg->assessor.set && a->cfg->assessor.class_name;
    const cJSON *ch = cJSON_GetObjectItemCaseSensitive(a->cfg->canonical, "tunerCommandChannel");
    d->use_ws = !(cJSON_IsString(ch) && strcmp(ch->valuestring, "pipe") == 0);
    d->answer_timeout_ms = env_timeout_ms();
    sb_init(&d->tail);
    sb_init(&d->line);
    ws_reader_init(&d->ws_in, DISP_MAX_MESSAGE);
    a->disp = d;
    return 0;
}

void dispatcher_tick(struct api *a)
{
    if (a->disp)
        disp_start(a->disp);
}

void dispatcher_reaped(struct api *a, pid_t pid, int status)
{
    struct dispatcher *d = a->disp;
    if (!d || pid != d->pid || d->reaped)
        return;
    d->reaped = 1;
    d->wait_status = status;
    if (!d->gone_since_ms)
        d->gone_since_ms = mono_ms();
}

static void disp_free(struct dispatcher *d)
{
    if (d->a->disp == d)
        d->a->disp = NULL;
    for (int i = 0; i < d->nqueue; i++) {
        cJSON_Delete(d->queue[i].params);
        free(d->queue[i].disp_id);
        free(d->queue[i].payload);
    }
    free(d->queue);
    for (int i = 0; i < d->nmap; i++) {
        free(d->map[i].disp_id);
        free(d->map[i].payload);
    }
    free(d->map);
    for (int i = 0; i < d->nended; i++)
        free(d->ended[i]);
    free(d->ended);
    free(d->sent_space);
    sb_free(&d->tail);
    sb_free(&d->line);
    ws_reader_free(&d->ws_in);
    free(d);
}

void dispatcher_shutdown(struct api *a)
{
    struct dispatcher *d = a->disp;
    if (!d)
        return;
    int told = d->state == D_INIT || d->state == D_READY;
    if (told) {
        disp_send(d, OUT_TERMINATE, "");
        if (d->ws) {
            unsigned char code[2] = {4000 >> 8, 4000 & 0xFF}; /* NNI's normal close */
            disp_ws_send(d, WS_CLOSE, code, 2);
        }
        disp_channel_flush(d, mono_ms() + 2000);
    }
    d->state = D_CLOSED;
    /* TE ends the process; a stuck one is killed after the grace */
    if (d->pid > 0 && told) {
        int64_t until = mono_ms() + SHUTDOWN_GRACE_MS;
        while (!disp_process_gone(d) && mono_ms() < until)
            usleep(20000);
    }
    disp_terminate(d, 1000);
    if (d->err) {
        disp_drain_output(d); /* the last words, into the log */
        bufferevent_free(d->err);
        d->err = NULL;
    }
    disp_channel_close(d);
    if (d->timer)
        event_free(d->timer);
    d->timer = NULL;
    if (d->refs == 0)
        disp_free(d); /* no tuner state refers to it (assessor only) */
}

/* ---------------- the tuner interface ---------------- */

int dispatcher_tuner_create(struct api *a, const struct ss_space *space, void **state, struct errbuf *e)
{
    if (a->tuner != &dispatcher_tuner_ops)
        return a->tuner->create(a->cfg->tuner.class_args, space, (uint64_t)a->exp.seed, state, e);
    if (!a->disp)
        return errf(e, "tuner.className: the dispatcher is not set up (dispatcher_init)");
    struct handle *h = xcalloc(1, sizeof *h);
    h->d = a->disp;
    a->disp->refs++;
    *state = h;
    return 0;
}

/* Only dispatcher_tuner_create makes a state: a handle needs the api's dispatcher,
 * which the generic create() has no way to reach. */
static int disp_create(const cJSON *class_args, const struct ss_space *space, uint64_t seed, void **state,
                       struct errbuf *e)
{
    (void)class_args; (void)space; (void)seed; (void)state;
    return errf(e, "tuner.className: a customized tuner runs only in `trialq api` (no dispatcher here)");
}

static void disp_destroy(void *state)
{
    struct handle *h = state;
    if (!h)
        return;
    struct dispatcher *d = h->d;
    free(h);
    if (--d->refs == 0 && d->state == D_CLOSED)
        disp_free(d);
}

/* GE's count: the scheduler's free slots, at least 1. */
static int64_t free_slots(struct dispatcher *d)
{
    struct api *a = d->a;
    struct errbuf e;
    int64_t active = trials_count(a->db, a->exp_id, COUNT_ACTIVE, NULL, &e);
    if (active < 0) {
        log_warn("dispatcher: %s", e.msg);
        active = 0;
    }
    int64_t n = a->exp.concurrency - active;
    if (a->exp.max_trial_number > 0 && a->exp.max_trial_number - a->exp.next_sequence < n)
        n = a->exp.max_trial_number - a->exp.next_sequence;
    return n < 1 ? 1 : n;
}

static int disp_suggest(void *state, int64_t index, const struct tuner_history *hist, cJSON **params,
                        struct errbuf *e)
{
    (void)hist; (void)e;
    struct dispatcher *d = ((struct handle *)state)->d;
    disp_start(d);
    if (d->state != D_READY)
        return 2; /* not connected yet, or failed: the experiment's status says which */
    /* index was handed a suggestion already, and is asked again: the trial's insert
     * failed (a database fault) and the scheduler retries. The same suggestion again,
     * not the next: taken off the queue, it would be lost (an advisor waiting for a
     * whole bracket would wait forever). */
    const struct disp_pmap *given = disp_map_find(d, index);
    if (given && given->payload) {
        char *id = NULL;
        struct errbuf pe;
        if (disp_parse_tr(given->payload, params, &id, &pe) == 0) {
            free(id);
            return 1;
        }
    }
    if (d->nqueue) {
        struct disp_tr t = d->queue[0];
        memmove(d->queue, d->queue + 1, sizeof *d->queue * (size_t)(d->nqueue - 1));
        d->nqueue--;
        disp_map_add(d, index, t.disp_id, t.payload);
        *params = t.params;
        free(t.disp_id);
        free(t.payload);
        return 1;
    }
    if (d->no_more)
        return 0;
    if (d->requested == 0) {
        int64_t n = free_slots(d);
        char count[24];
        snprintf(count, sizeof count, "%lld", (long long)n);
        d->requested = (int)n;
        disp_send(d, OUT_REQUEST_TRIAL_JOBS, count);
        disp_expect(d, DISP_WAIT_TR, d->answer_timeout_ms);
    }
    return 2;
}

/* The dispatcher's own parameter_id of the suggestion given for index, when it is not
 * the index itself (an advisor's "0-4_0_12", or a count of its own): it goes to the
 * trial (trial.parameter_label, its parameter.cfg), so its metrics come back with it. */
static char *disp_label(void *state, int64_t index)
{
    const struct disp_pmap *m = disp_map_find(((struct handle *)state)->d, index);
    return m ? disp_label_of(m->disp_id, index) : NULL;
}

const struct tuner_ops dispatcher_tuner_ops = {
    .name = "customized",
    .aliases = NULL,
    .create = disp_create,
    .suggest = disp_suggest,
    .destroy = disp_destroy,
    .label = disp_label,
    .needs_history = 1, /* asked only when a slot is free, as NNI asks with GE */
    .index_spans_spaces = 1, /* the dispatcher numbers its own suggestions */
};
