/* api.h: `trialq api` — one process per running experiment: REST API, scheduler
 * (free slots -> tuner -> WAITING trial rows), experiment status machine, and the
 * keeper of its worker processes. */
#ifndef TRIALQ_API_H
#define TRIALQ_API_H

#include <event2/event.h>
#include <event2/http.h>

#include "config/config.h"
#include "queue/queue.h"
#include "tuners/assessor.h"
#include "tuners/tuner.h"

enum api_action { ACTION_CREATE, ACTION_RESUME, ACTION_VIEW };

#include "api/tuner_view.h"
#include "schema/listing.h"

struct dispatcher;
struct tensorboard;
struct chan_state;
struct cconns;
struct children;

struct api {
    struct event_base *base;
    struct evhttp *http;
    struct guard *guard;       /* the connections' front door (guard.c) */
    struct db *db;
    char *home;
    char *exp_id;
    struct experiment exp;     /* refreshed each tick */
    struct exp_config *cfg;
    struct ss_space *space;
    const struct tuner_ops *tuner;
    void *tuner_state;
    struct tuner_view *tuner_view; /* the tuner's view of the trials (tuner_view.c) */
    int64_t next_index;        /* the tuner index of the next suggestion (-1: not read yet) */
    struct assess_state *assess; /* the assessor, when the config has one (assess.c) */
    struct dispatcher *disp;   /* NNI's dispatcher process, when the config needs it (dispatcher.c) */
    struct tensorboard *tensorboard; /* TensorBoard tasks (tensorboard.c), NULL before the first */
    struct chan_state *chan;   /* the HTTP trial channel (channel.c), NULL before its first request */
    struct cconns *cconns;     /* its connections (chan_http.c), NULL before the first */
    struct seq_span trial_span; /* the trials' sequences, for GET /trial-jobs?offset= (listing.h) */
    enum api_action action;
    int readonly;
    int spawn_workers;
    int stopping;              /* graceful stop in progress */
    int detach;                /* exiting without stopping the experiment */
    int64_t stop_deadline_ms;
    int64_t last_tick_ms;
    int64_t last_heartbeat_ms;
    int64_t pending_exec_ms;   /* running time not yet added to exec_duration_ms */
    int64_t proc_row;
    struct children *children; /* its workers and the reaper registry (children.c) */
    char *log_level;
    int exit_code;
    /* sched_tick, set by the scheduler (sched_load_tuner): what the layers below it (the
     * dispatcher's new parameters) call to have the scheduler take them now */
    void (*wake_scheduler)(struct api *a);
    /* started by NNI's launcher (its manager's command line, api/launch.c) */
    int nni_launched;          /* SIGTERM stops the experiment, as it stops NNI's manager */
    char *exp_root;            /* --experiments-directory */
    int awaiting_config;       /* create: no row yet, only POST /experiment makes it */
    cJSON *posted;             /* the config as POSTed (redacted), for nni.sqlite */
};

int api_main(int argc, char **argv);
struct role; /* common/usage.h */
/* `trialq api`'s usage, summary and options (api/server.c), for trialq(1) too */
extern const struct role api_role;

/* NNI's launcher starts `trialq api --action create` for an id without a row and POSTs
 * the config to /experiment (api/launch.c): the hook checks it as nnictl create checks a
 * file and inserts the row (cli/create.c; the api links no cli/). */
struct api_create_req {
    const char *home;       /* trialq's home (the database) */
    const char *id;         /* the launcher's experiment id */
    const char *json;       /* the body */
    const char *exp_root;   /* --experiments-directory: the experiment's directory's parent */
    const char *bind;       /* where the api listens */
    const char *url_prefix; /* as given, or NULL */
    int port;
};
/* 0: the row is stored (one transaction); else 1 with what is wrong (naming the key) in
 * msg, and nothing stored. */
typedef int (*api_create_fn)(struct db *db, const struct api_create_req *r, char *msg, size_t n);
void api_set_create_hook(api_create_fn fn);
/* Frees what the api holds of its experiment: the tuner and its state, the search space,
 * the tuner's view, the assessor, the config and the experiment row (not the database,
 * the event loop or the HTTP server). api_main's end; the unit tests' too. */
void api_free_state(struct api *a);

#endif
