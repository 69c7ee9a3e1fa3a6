/* kube/status.c: a Kubernetes trial's state (workers/kube/skeleton.h): one paged listing
 * of the experiment's jobs a poll interval, each trial's poll answered from it (or its
 * own GET), kill, and its metrics and logs from the shared storage. */
#include <stdlib.h>
#include <string.h>

#include "queue/worker_queue.h"
#include "workers/kube/skeleton.h"

/* ---------------- status ---------------- */

static int try_kill(struct kube_state *ks, struct worker *w, const char *trial, struct errbuf *e)
{
    char *sel_raw = xasprintf("app=%s,expId=%s,trialId=%s", APP_LABEL, w->exp_id, trial);
    char *sel = kube_escape(sel_raw);
    char *base = kube_job_path(ks, NULL);
    char *path = xasprintf("%s?labelSelector=%s&propagationPolicy=Background", base, sel);
    long st;
    cJSON *r = NULL;
    int rc = kube_request(&ks->conn, "DELETE", path, NULL, &st, &r, e);
    if (rc == 0 && st != 200 && st != 202 && st != 404)
        rc = errf(e, "deleting the job of trial %s: %ld %s", trial, st, kube_status_message(r, st));
    cJSON_Delete(r);
    free(sel_raw); free(sel); free(base); free(path);
    return rc;
}

int kube_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    /* not deleted (no answer, 5xx): the loop calls again after a back-off */
    return try_kill(w->platform, w, t->id, e);
}

static int read_exit_code(struct kube_state *ks, const char *dir)
{
    char *out = kube_output_dir(ks, dir, ks->roles[ks->chief].name);
    char *p = xasprintf("%s/exitcode", out);
    free(out);
    char *s = read_file(p, NULL);
    free(p);
    int code = s ? atoi(s) : 1;
    free(s);
    return code ? code : 1;
}

/* The job of an ended attempt is gone (404): deleted on request (the trial ends as
 * asked), never created (the API server failed at submit time: created now), or
 * deleted by someone else (vanished: the trial is retried). */
static void job_absent(struct kube_state *ks, struct worker *w, struct trial *t, const char *dir,
                       const char *name, struct job_state *js)
{
    char *kill_request = NULL;
    struct errbuf ke;
    if (trial_kill_request(w->db, t->id, &kill_request, &ke) < 0)
        log_warn("trial %s: %s", t->id, ke.msg);
    if (kill_request) {
        js->finished = 1; /* deleted on request */
        js->end_time = now_ms();
    } else if (!kube_marker_exists(dir)) {
        char *created = NULL;
        struct errbuf ce;
        int cr = kube_create_job(ks, w, t, dir, &created, &ce);
        if (cr < 0) {
            js->finished = 1;
            js->has_exit = 1;
            js->exit_code = 1;
            js->end_time = now_ms();
            log_error("trial %s: %s", t->id, ce.msg);
        } else if (cr == 0) {
            log_info("trial %s: created %s %s after retrying", t->id, ks->kindname, created);
            if (!t->job_id || strcmp(t->job_id, created) != 0) {
                free(t->job_id);
                t->job_id = xstrdup(created);
            }
        }
        free(created);
    } else {
        js->vanished = 1; /* someone else deleted it: the trial is retried */
        log_warn("trial %s: job %s vanished from the cluster", t->id, name);
    }
    free(kill_request);
}

/* The job r exists and is ours: finished or running. */
static void job_present(struct kube_state *ks, struct worker *w, struct trial *t, const char *dir,
                        const char *name, const cJSON *r, struct job_state *js)
{
    int ok;
    const char *why;
    if (!kube_marker_exists(dir)) {
        /* created by a worker that died before noting it: finish what it started */
        int transient = 0;
        struct errbuf de;
        if (!ks->fl->dependents || ks->fl->dependents(ks, w, t, name, r, &transient, &de) == 0)
            kube_marker_write(dir, name);
    }
    if (!ks->fl->finished(r, &ok, &why))
        return;
    js->finished = 1;
    js->has_exit = 1;
    js->exit_code = ok ? 0 : read_exit_code(ks, dir);
    js->end_time = now_ms();
    if (!ok) {
        char shown[SNIPPET_SIZE]; /* a pod's message may be the trial's own text */
        log_info("trial %s: job %s failed%s%s", t->id, name, why ? ": " : "",
                 why ? snippet(shown, why, strlen(why)) : "");
    }
}

/* ---------------- the listing: every job of the experiment at once ---------------- */

/* Keeps what poll reads of each job of a page (its metadata, without managedFields and
 * annotations, and its status). */
static void listing_add(struct kube_state *ks, cJSON *page)
{
    cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "items");
    cJSON *it;
    cJSON_ArrayForEach(it, items) {
        cJSON *md = cJSON_DetachItemFromObjectCaseSensitive(it, "metadata");
        const char *name = kube_jstr(md, "name", NULL);
        if (!name) {
            cJSON_Delete(md);
            continue;
        }
        /* what poll never reads, and large on a real API server */
        cJSON_DeleteItemFromObjectCaseSensitive(md, "managedFields");
        cJSON_DeleteItemFromObjectCaseSensitive(md, "annotations");
        cJSON *job = cJSON_CreateObject();
        cJSON_AddItemToObject(job, "metadata", md);
        cJSON *st = cJSON_DetachItemFromObjectCaseSensitive(it, "status");
        if (st)
            cJSON_AddItemToObject(job, "status", st);
        job_listing_add(&ks->listed, name, job);
    }
}

/* One LIST of the experiment's jobs by its label, in pages of ks->list_limit (limit and
 * continue: a consistent snapshot of the collection). A continue token that expired
 * (410 Gone: the API server compacted that version) lists again from the start, once. */
int kube_poll_all(struct worker *w, struct errbuf *e)
{
    struct kube_state *ks = w->platform;
    job_listing_reset(&ks->listed);
    if (kube_backing_off(&ks->conn))
        return errf(e, "the Kubernetes API server failed lately; waiting before asking again");
    /* less the jobs kube_ended labelled: none of them is held any more */
    char *sel_raw = xasprintf("app=%s,expId=%s,!%s", APP_LABEL, w->exp_id, ENDED_LABEL);
    char *sel = kube_escape(sel_raw);
    char *base = kube_job_path(ks, NULL);
    char *cont = NULL;
    int rc = 0, restarts = 0;
    for (;;) {
        char *ce = cont ? kube_escape(cont) : NULL;
        char *path = xasprintf("%s?labelSelector=%s&limit=%d%s%s", base, sel, ks->list_limit,
                               ce ? "&continue=" : "", ce ? ce : "");
        long st;
        cJSON *r = NULL;
        struct errbuf le;
        int q = kube_request(&ks->conn, "GET", path, NULL, &st, &r, &le);
        free(path);
        free(ce);
        if (q == 0 && st == 410 && cont && restarts++ == 0) {
            log_info("%s: the listing's continue token expired (%s); listing again", ks->platform,
                     kube_status_message(r, st));
            cJSON_Delete(r);
            free(cont);
            cont = NULL;
            job_listing_reset(&ks->listed);
            continue;
        }
        if (q < 0 || st != 200 || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r, "items"))) {
            rc = errf(e, "listing the %s of experiment %s: %s", ks->plural, w->exp_id,
                      q < 0 ? le.msg : st == 200 ? "the answer holds no items" : kube_status_message(r, st));
            if (q == 0 && (st == 401 || st == 403))
                kube_explain(ks, "listing the experiment's jobs", st, r, e);
            /* no permission to list (RBAC grants get but not list), or no such call:
             * for good; a rejected token (401) or a struggling server is not */
            if (q == 0 && (st == 403 || st == 400 || st == 404 || st == 405))
                rc = POLL_ALL_REFUSED;
            cJSON_Delete(r);
            break;
        }
        listing_add(ks, r);
        const char *next = kube_jstr(cJSON_GetObjectItemCaseSensitive(r, "metadata"), "continue", "");
        free(cont);
        cont = next[0] ? xstrdup(next) : NULL;
        cJSON_Delete(r);
        if (!cont)
            break;
    }
    free(cont);
    free(sel_raw);
    free(sel);
    free(base);
    if (rc < 0) {
        job_listing_reset(&ks->listed);
        return rc;
    }
    job_listing_seal(&ks->listed);
    return 0;
}

/* Labels the job of a trial whose end is committed (a JSON merge patch of its
 * metadata.labels), so that kube_poll_all's LIST leaves it out: the listing's cost stays
 * with the running jobs. Not retried: a job left unlabelled (no answer, or killed before
 * the PATCH) is only listed on; kube_cleanup selects without the label and so deletes
 * it with the others at `nnictl stop`. */
void kube_ended(struct worker *w, const struct trial *t)
{
    struct kube_state *ks = w->platform;
    if (!t->job_id || kube_backing_off(&ks->conn))
        return;
    cJSON *patch = cJSON_CreateObject();
    cJSON *labels = cJSON_AddObjectToObject(cJSON_AddObjectToObject(patch, "metadata"), "labels");
    cJSON_AddStringToObject(labels, ENDED_LABEL, "true");
    char *path = kube_job_path(ks, t->job_id);
    long st;
    cJSON *r = NULL;
    struct errbuf pe;
    int rc = kube_request(&ks->conn, "PATCH", path, patch, &st, &r, &pe);
    if (rc < 0 || (st != 200 && st != 404))
        log_limited(LOG_WARN, "trial %s: cannot label its ended job %s (it stays in the listing): %s", t->id,
                    t->job_id, rc < 0 ? pe.msg : kube_status_message(r, st));
    cJSON_Delete(r);
    cJSON_Delete(patch);
    free(path);
}

/* From the listing when the job is in it; else (not listed yet, gone, or no listing)
 * by a GET of the job, which confirms an absence before it is taken as one. */
int kube_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    struct kube_state *ks = w->platform;
    memset(js, 0, sizeof *js);
    char *name = t->job_id ? xstrdup(t->job_id) : kube_job_name(ks, w->exp_id, t->id, 0);
    const cJSON *listed = job_listing_find(&ks->listed, name);
    if (!listed && kube_backing_off(&ks->conn)) {
        free(name);
        return 0; /* the API server is struggling: nothing asked, nothing known */
    }
    char *dir = kube_trial_dir_of(ks, t);
    long st = 200;
    cJSON *got = NULL;
    struct errbuf ge;
    int rc = 0;
    if (!listed) {
        char *path = kube_job_path(ks, name);
        rc = kube_request(&ks->conn, "GET", path, NULL, &st, &got, &ge);
        free(path);
    }
    const cJSON *r = listed ? listed : got;
    if (rc < 0 || st >= 500 || st == 401 || st == 403 || st == 429) {
        /* transient: keep the trial; the loop polls again after a back-off */
        rc = errf(e, "cannot get job %s: %s", name, rc < 0 ? ge.msg : kube_status_message(r, st));
    } else if (st == 200 && !kube_owned_by(r, t->id)) {
        /* the name is another trial's (ids that differ only in case): ours is the
         * alternative one (see kube_job_name) */
        char *alt = kube_job_name(ks, w->exp_id, t->id, 1);
        if (strcmp(alt, name) != 0) {
            log_warn("trial %s: job %s belongs to another trial; following %s", t->id, name, alt);
            free(t->job_id);
            t->job_id = alt;
            alt = NULL;
        }
        free(alt);
    } else if (st == 200) {
        job_present(ks, w, t, dir, name, r, js);
    } else if (st == 404) {
        job_absent(ks, w, t, dir, name, js);
    } else {
        log_warn("trial %s: getting job %s: %ld %s", t->id, name, st, kube_status_message(r, st));
    }
    cJSON_Delete(got);
    free(name);
    free(dir);
    return rc < 0 ? -1 : 0;
}

/* ---------------- metrics and logs from the shared storage ---------------- */

int kube_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    struct kube_state *ks = w->platform;
    char *dir = kube_trial_dir_of(ks, t);
    char *opath = kube_stdout_path(ks, dir);
    int rc = collect_trial_dir(w->db, t, dir, opath, at_end, e);
    free(opath);
    free(dir);
    return rc;
}

int kube_pending(struct worker *w, struct trial *t)
{
    struct kube_state *ks = w->platform;
    char *dir = kube_trial_dir_of(ks, t);
    char *opath = kube_stdout_path(ks, dir);
    int r = trial_dir_grew(t, dir, opath);
    free(opath);
    free(dir);
    return r;
}
