/* rest/skeleton.c: the skeleton of the REST cluster platforms (workers/rest/rest.h).
 *
 * Crash safety (all of them): the job's name is the trial's (nas_job_name), so a submit
 * first looks for it and re-attaches; the service's id of a job, where it has one, is
 * kept in the trial's dir once known. No call is retried in a blocking loop: a failed
 * one returns -1 and the worker loop tries again after its back-off, so the worker keeps
 * renewing its leases while the service is down. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workers/rest/rest.h"

#define PROBE_TRIES 4
#define PROBE_WAIT_MS 500 /* before the second try, doubled each time */
#define FAULT_AFTER 3     /* calls failed in a row before the experiment shows it */

const char *rest_str(const cJSON *ts, const cJSON *config, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ts, key);
    if ((!v || cJSON_IsNull(v)) && config)
        v = cJSON_GetObjectItemCaseSensitive(config, key);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

void rest_body_text(const char *body, char *out, size_t outlen)
{
    const char *text = body && body[0] ? body : "(empty)";
    snprintf(out, outlen, "%.300s", text);
    for (char *q = out; *q; q++)
        if (*q == '\n' || *q == '\r')
            *q = ' ';
}

void rest_note_call(struct rest_base *b, const char *fault_key, int ok, const char *where, const char *why)
{
    if (b->rest.held) /* not a call made: it tells nothing new */
        return;
    if (ok) {
        b->failing = 0;
        if (fault_has(fault_key))
            fault_clear(fault_key);
    } else if (++b->failing >= FAULT_AFTER) {
        fault_set(fault_key, "%s: %s (%d calls in a row failed); trials wait and trialq retries by itself", where,
                  why, b->failing);
    }
}

struct nas_job *rest_job_of(struct rest_base *b, const struct trial *t)
{
    return b->fl->marker ? nas_job_load(&b->jobs, b->local_root, t, b->fl->marker) : nas_job_of(&b->jobs, t, NULL);
}

void rest_vanished(const struct rest_base *b, const struct trial *t, const char *key, struct job_state *js)
{
    log_warn("trial %s: %s no longer knows job %s", t->id, b->fl->service, key);
    js->vanished = 1;
    snprintf(js->why, sizeof js->why, "%s no longer knows job %.200s", b->fl->service, key);
}

/* ---------------- init, preflight, destroy ---------------- */

/* The storage must be a directory this host can write (the trials' files go there). */
static int check_mount(const struct rest_flavour *fl, const char *lm, struct errbuf *e)
{
    struct stat st;
    if (!lm)
        return errf(e, "trainingService.localStorageMountPoint is required for %s: the directory where %s is "
                       "mounted on this host", fl->name, fl->mount_what);
    int dir = stat(lm, &st) == 0 && S_ISDIR(st.st_mode);
    if (!dir || access(lm, W_OK) < 0)
        return errf(e, "trainingService.localStorageMountPoint: %s is not a %s (%s must be mounted there on this "
                       "host)", lm, dir ? "writable directory" : fl->mount_noun, fl->mount_what);
    return 0;
}

/* fl->probe_once, tried again after a pause while the service does not answer. */
static int probe(struct rest_base *b, int *fatal, struct errbuf *e)
{
    int64_t wait = PROBE_WAIT_MS;
    *fatal = 0;
    for (int tries = 0; tries < PROBE_TRIES; tries++) {
        if (tries)
            usleep((useconds_t)wait * 1000), wait *= 2;
        b->rest.down_until = 0; /* this loop paces itself */
        int r = b->fl->probe_once(b, fatal, e);
        if (r <= 0)
            return r;
        log_warn("%s", e->msg);
        if (b->rest.tls_refused)
            break; /* the same certificate again */
    }
    char what[300];
    return errprefix(e, "%s", b->fl->unreachable(b, what, sizeof what));
}

void rest_base_clear(struct rest_base *b)
{
    free(b->local_root);
    free(b->cont_root);
    b->local_root = b->cont_root = NULL;
    if (b->rest.curl)
        curl_easy_cleanup(b->rest.curl);
    b->rest.curl = NULL;
    nas_jobs_free(&b->jobs);
    job_listing_reset(&b->listed);
}

static void close_base(struct rest_base *b)
{
    if (!b)
        return;
    rest_base_clear(b);
    b->fl->close(b);
}

/* The trials' roots on the storage (after the mount is checked). */
static int roots(struct worker *w, struct rest_base *b, const cJSON *ts, struct errbuf *e)
{
    const char *lm = rest_str(ts, NULL, "localStorageMountPoint");
    const char *cm = rest_str(ts, NULL, "containerStorageMountPoint");
    if (b->fl->cont_mount && !cm)
        return errf(e, "trainingService (%s): containerStorageMountPoint is required", b->fl->name);
    if (check_mount(b->fl, lm, e) < 0)
        return -1;
    if (b->cont_root) { /* the job sees the storage at a place of the platform's own */
        b->local_root = xasprintf("%s/%s", lm, w->exp_id);
        return mkdir_p(b->local_root, 0755) < 0 ? errf(e, "cannot create %s: %s", b->local_root, strerror(errno))
                                                : 0;
    }
    return nas_exp_roots(w, lm, cm, &b->local_root, &b->cont_root, e);
}

int rest_init(struct worker *w, struct errbuf *e)
{
    const struct rest_flavour *fl = w->ops->flavour;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const cJSON *ts = worker_ts_config(w);
    struct rest_base *b = fl->open(w, ts, w->config, e);
    if (!b) { /* a config that will not get better by itself: the experiment says why */
        nas_report_fatal(w, e->msg);
        curl_global_cleanup();
        return -1;
    }
    b->fl = fl;
    b->w = w;
    w->platform = b;
    int fatal = 0;
    if (roots(w, b, ts, e) < 0) {
        nas_report_fatal(w, e->msg);
        goto fail;
    }
    if (probe(b, &fatal, e) < 0) {
        if (fatal)
            nas_report_fatal(w, e->msg);
        goto fail;
    }
    if (nas_ship_code(w, b->local_root, e) < 0) {
        nas_report_fatal(w, e->msg);
        goto fail;
    }
    fl->describe(b);
    return 0;
fail:
    close_base(b);
    w->platform = NULL;
    curl_global_cleanup();
    return -1;
}

/* nnictl create: the mount, then one check of the service; nothing is submitted. */
int rest_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    const struct rest_flavour *fl = ops->flavour;
    if (check_mount(fl, rest_str(ts, NULL, "localStorageMountPoint"), e) < 0)
        return -1;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct rest_base *b = fl->open(NULL, ts, config, e);
    int fatal = 0, rc = -1;
    if (b) {
        b->fl = fl;
        rc = probe(b, &fatal, e);
        close_base(b);
    }
    curl_global_cleanup();
    return rc;
}

void rest_destroy(struct worker *w)
{
    close_base(w->platform);
    w->platform = NULL;
    curl_global_cleanup();
}

/* ---------------- jobs ---------------- */

int rest_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    struct rest_base *b = w->platform;
    if (b->fl->submit_extra && b->fl->submit_extra(w, b, t, e) < 0)
        return -1;
    return nas_submit(w, &b->jobs, rest_job_of(b, t), b->local_root, b->fl->label, b->fl->try_submit, t, job_id,
                      trial_dir, e);
}

/* From the listing of this pass when it has the job; else the job's own status call
 * (which confirms that a job missing from the listing is gone). The loop paces the
 * calls: a failed one returns -1 and is tried again after its back-off. */
int rest_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    struct rest_base *b = w->platform;
    const struct rest_flavour *fl = b->fl;
    memset(js, 0, sizeof *js);
    struct nas_job *j = rest_job_of(b, t);
    int rc = 0;
    if (j->need_submit) {
        int answered = fl->unconfirmed ? fl->unconfirmed(w, j, t, js, &rc, e)
                                       : nas_poll_unconfirmed(w, &b->jobs, j, t, fl->try_submit, fl->find, js, &rc, e);
        if (answered)
            return rc;
    }
    char *name = nas_job_name(w->exp_id, t), *dir = nas_trial_dir(b->local_root, t);
    char *key = xstrdup(fl->marker && j->job_id ? j->job_id : name);
    const cJSON *listed = job_listing_find(&b->listed, key);
    cJSON *job = NULL;
    struct errbuf ge;
    int g = listed ? 1 : fl->get(b, key, &job, &ge); /* not listed: its own call confirms it */
    if (g < 0) {
        rc = errf(e, "status: %s", ge.msg);
    } else if (g == 0) {
        if (fl->unknown)
            fl->unknown(w, j, t, key, js);
        else
            rest_vanished(b, t, key, js);
    } else {
        j->need_submit = 0;
        fl->reported(w, t, dir, listed ? listed : job, js);
    }
    cJSON_Delete(job);
    if (js->finished || js->vanished)
        nas_job_forget(&b->jobs, t->id);
    free(key);
    free(name);
    free(dir);
    return rc;
}

/* The batched poll: the experiment's jobs with one listing per poll interval, kept for
 * rest_poll. */
int rest_poll_all(struct worker *w, struct errbuf *e)
{
    struct rest_base *b = w->platform;
    int rc = b->fl->list(b, w->exp_id, 0, &b->listed, e);
    if (rc == 0)
        job_listing_seal(&b->listed);
    else
        job_listing_reset(&b->listed);
    return rc;
}

/* 0 once the service took it, -1 to be tried again. */
int rest_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    struct rest_base *b = w->platform;
    struct nas_job *j = rest_job_of(b, t);
    if (j->need_submit) /* not known to exist: a poll finds it (then it is stopped) or not (it ends) */
        return errf(e, "%s: job not confirmed by %s yet", b->fl->stop_verb, b->fl->service);
    char *name = nas_job_name(w->exp_id, t);
    int rc = b->fl->stop(b, b->fl->marker && j->job_id ? j->job_id : name, e);
    free(name);
    return rc;
}

int rest_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    struct rest_base *b = w->platform;
    if (at_end && b->fl->ended)
        b->fl->ended(b, t);
    return nas_collect(w, t, b->local_root, at_end, e);
}

int rest_pending(struct worker *w, struct trial *t)
{
    struct rest_base *b = w->platform;
    return nas_pending(w, t, b->local_root);
}

/* nnictl stop: stops every live job of the experiment on the service, also jobs the
 * database lost track of (the experiment's whole listing). */
int rest_cleanup(struct worker *w, struct errbuf *e)
{
    struct rest_base *b = w->platform;
    const struct rest_flavour *fl = b->fl;
    struct job_listing l = {0};
    if (fl->list(b, w->exp_id, 1, &l, e) != 0) {
        job_listing_reset(&l);
        return -1;
    }
    int failed = 0;
    for (int i = 0; i < l.n; i++) {
        if (!fl->live(l.v[i].entry))
            continue;
        struct errbuf ke;
        if (fl->stop(b, l.v[i].name, &ke) < 0) {
            failed++;
            log_warn("cannot %s %s job %s: %s", fl->stop_verb, fl->service, l.v[i].name, ke.msg);
        } else {
            log_info("%s %s job %s", fl->stopped, fl->service, l.v[i].name);
        }
    }
    job_listing_reset(&l);
    return failed ? errf(e, "%d %s job(s) of the experiment could not be %s", failed, fl->service, fl->stopped) : 0;
}
