/* rest/rest.h: what the REST cluster platforms (openpai, dlc, dlts, aml) share: one
 * job per trial on a service reached over HTTP(S) (workers/rest_client.h), the trial's
 * files on a storage mounted on this host and in the jobs (workers/nas_trial.h). The
 * skeleton (workers/rest/skeleton.c) does init, preflight, submit, poll, the batched
 * poll, kill, collect, pending and cleanup; each platform file holds only its own: a
 * struct rest_flavour with its HTTP calls and its status mapping, and its platform_ops
 * made with REST_PLATFORM_OPS. Internal to workers/. */
#ifndef TRIALQ_REST_PLATFORM_H
#define TRIALQ_REST_PLATFORM_H

#include "workers/job_listing.h"
#include "workers/nas_trial.h"
#include "workers/rest_client.h"
#include "workers/worker.h"

struct rest_flavour;

/* The state every REST platform has: the first member of the platform's own struct. */
struct rest_base {
    const struct rest_flavour *fl;
    struct worker *w;             /* NULL at nnictl create (preflight) */
    struct rest_client rest;
    char *local_root, *cont_root; /* <mount>/<exp> on this host / in the jobs */
    struct nas_jobs jobs;
    struct job_listing listed;    /* the experiment's jobs of this pass, by job key */
    int failing;                  /* calls failed in a row (rest_note_call) */
};

/* What one REST platform adds to the skeleton. The key of a job is the service's id
 * of it (kept in .nni/<marker> of the trial's dir) when marker is set, else its name. */
struct rest_flavour {
    const char *name;      /* the platform's name (trainingService.platform) */
    const char *label;     /* ... in run.sh (PAI-DLC for dlc) */
    const char *service;   /* ... in messages (DLC) */
    const char *marker;    /* the file keeping the job's key, or NULL (the name is the key) */
    /* localStorageMountPoint: the noun of a mount that is not one ("directory") and what
     * must be mounted there (for messages) */
    const char *mount_noun, *mount_what;
    /* 1: containerStorageMountPoint is required; 0: open() sets cont_root itself */
    int cont_mount;
    /* stopping a job: the verb and its past ("stop", "stopped") */
    const char *stop_verb, *stopped;
    /* The connection of a trainingService entry (config: the top level, for fallbacks;
     * w NULL at preflight, else also what only the worker needs): the platform's state,
     * rest.curl made; NULL with e. */
    struct rest_base *(*open)(struct worker *w, const cJSON *ts, const cJSON *config, struct errbuf *e);
    void (*close)(struct rest_base *b); /* frees the platform's own fields and b (after rest_base_clear) */
    /* One check of the service (credentials, the names of the config); called again
     * after a pause while it returns 1 (no answer, a passing refusal; e says why), at most
     * four times. 0 ok; -1 with e (*fatal: the config is wrong, not the service). */
    int (*probe_once)(struct rest_base *b, int *fatal, struct errbuf *e);
    /* what prefixes e when the service never answered the probe ("cannot reach X at U") */
    const char *(*unreachable)(const struct rest_base *b, char *buf, size_t len);
    void (*describe)(const struct rest_base *b); /* init's log line */
    int (*submit_extra)(struct worker *w, struct rest_base *b, const struct trial *t, struct errbuf *e); /* or NULL */
    nas_try_submit_fn try_submit;
    nas_find_fn find; /* looks for a job by name (a killed trial's job not confirmed yet) */
    /* poll while the job's creation is not confirmed (as nas_poll_unconfirmed); NULL:
     * nas_poll_unconfirmed with try_submit and find */
    int (*unconfirmed)(struct worker *w, struct nas_job *j, const struct trial *t, struct job_state *js, int *rc,
                       struct errbuf *e);
    /* The job's own status call (the listing lacks it): 1 with *job (caller deletes), 0
     * the service does not know it, -1 no answer or a refusal (e). */
    int (*get)(struct rest_base *b, const char *key, cJSON **job, struct errbuf *e);
    /* the service does not know the job: js filled; NULL: rest_vanished */
    void (*unknown)(struct worker *w, struct nas_job *j, struct trial *t, const char *key, struct job_state *js);
    /* the service's view of the job (a listing's entry or a status answer) into js */
    void (*reported)(struct worker *w, struct trial *t, const char *dir, const cJSON *job, struct job_state *js);
    /* The experiment's jobs into l by key (l reset first, not sealed); wide: every job
     * (cleanup), else the view of one poll. 0; -1 (e); POLL_ALL_REFUSED: never listed. */
    int (*list)(struct rest_base *b, const char *exp_id, int wide, struct job_listing *l, struct errbuf *e);
    int (*live)(const cJSON *entry); /* a listed job that has not ended (cleanup stops it) */
    int (*stop)(struct rest_base *b, const char *key, struct errbuf *e); /* 0 taken (or gone), -1 */
    void (*ended)(struct rest_base *b, struct trial *t); /* collect at the trial's end, or NULL */
};

/* The skeleton's platform_ops members. */
int rest_init(struct worker *w, struct errbuf *e);
int rest_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e);
void rest_destroy(struct worker *w);
int rest_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e);
int rest_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e);
int rest_poll_all(struct worker *w, struct errbuf *e);
int rest_kill(struct worker *w, struct trial *t, struct errbuf *e);
int rest_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e);
int rest_pending(struct worker *w, struct trial *t);
int rest_cleanup(struct worker *w, struct errbuf *e);

/* A platform file's ops: all the skeleton's, with its flavour (w->ops->flavour). */
#define REST_PLATFORM_OPS(NAME, FLAVOUR)                                                                      \
    {                                                                                                         \
        .name = NAME, .flavour = &(FLAVOUR), .init = rest_init, .preflight = rest_preflight,                  \
        .submit = rest_submit, .poll = rest_poll,                                                             \
        .poll_all = rest_poll_all, .kill = rest_kill, .collect = rest_collect, .pending = rest_pending,       \
        .destroy = rest_destroy, .cleanup = rest_cleanup, .poll_ms = 1000, .submit_rate = 20,                 \
        .gpu_mode = PLATFORM_GPU_OWN,                                                                         \
    }

/* helpers of the platform files */

/* Frees what the skeleton's part of b holds (an open() that fails calls it, then its
 * own close). */
void rest_base_clear(struct rest_base *b);

/* the string of key in ts, else in config (may be NULL); NULL when absent or empty */
const char *rest_str(const cJSON *ts, const cJSON *config, const char *key);
/* the trial's job entry: nas_job_load with the flavour's marker, else nas_job_of */
struct nas_job *rest_job_of(struct rest_base *b, const struct trial *t);
/* The service no longer knows the job key of trial t: js says it vanished. */
void rest_vanished(const struct rest_base *b, const struct trial *t, const char *key, struct job_state *js);
/* One call's outcome for the experiment's fault key: FAULT_AFTER calls failed in a row
 * set "<where>: <why> (...)" until a call succeeds. A call the back-off held back does
 * not count. */
void rest_note_call(struct rest_base *b, const char *fault_key, int ok, const char *where, const char *why);
/* body's text, one line of at most 300 characters ("(empty)" for none) */
void rest_body_text(const char *body, char *out, size_t outlen);

#endif
