/* kube/submit.c: a trial's start on the Kubernetes platforms (workers/kube/skeleton.h):
 * its files on the shared storage (parameter.cfg, the roles' launch scripts, the
 * channel's relay), then its custom resource, created or adopted (a 409 with our
 * trialId label); a transient failure leaves the creation to a later poll. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema/nnijson.h"
#include "common/trialenv.h"
#include "workers/kube/skeleton.h"
#include "workers/nas_trial.h"

int kube_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e);

/* ---------------- per-trial files ---------------- */

static const char install_nni[] =
    "#!/bin/bash\n"
    "# makes the nni package importable (as NNI's install_nni.sh)\n"
    "if python3 -c 'import nni' > /dev/null 2>&1; then\n"
    "  exit 0\n"
    "fi\n"
    "python3 -m pip install --user --upgrade nni\n";

/* The launch script of one role (NNI's kubernetesScriptFormat, with the trial command
 * run directly instead of NNI's trial_keeper: its output goes to the shared storage,
 * where the worker reads the metrics). */
char *kube_role_script(struct kube_state *ks, struct worker *w, const struct trial *t, const struct kube_role *r)
{
    struct strbuf sb;
    sb_init(&sb);
    char *sys = xasprintf("%s/%s", ks->pod_root, t->id);
    char *out = kube_output_dir(ks, sys, r->name);
    char *code = xasprintf("%s/nni-code", ks->pod_root);
    struct trial_env te;
    trial_env_init(&te);
    worker_trial_env(w, t, sys, out, code, &te);
    int gpu = 0;
    struct strbuf full; /* the command and what runs before it in its shell */
    sb_init(&full);
    const char *cmd = ks->fl->role_command(ks, w, r, &gpu, &full);
    /* the role's GPUs, placed by the cluster; 0 requested GPUs must not mean all */
    trial_env_set(&te, "CUDA_VISIBLE_DEVICES", gpu == 0 ? "" : NULL);
    /* trialCommandChannel: http -> NNI v3's HTTP channel. Its URL is the api's at
     * nniManagerIp, with this trial's own token in the path; the relay below serves that
     * path on 127.0.0.1 in the pod and points the trial at it */
    char *url = nas_channel_url(w, t);
    int http = url != NULL;
    /* a script on the shared storage is a file of the trial directory, which trial-file
     * serves: the URL (its token) stays in .nni/api-channel (0600, kube_submit) */
    if (url && !ks->fl->scripts_on_share)
        trial_env_set(&te, "NNI_TRIAL_COMMAND_CHANNEL", url);
    free(url);
    sb_puts(&sb, "#!/bin/bash\n");
    trial_env_export_lines(&te, &sb);
    trial_env_free(&te);
    if (http && ks->fl->scripts_on_share)
        sb_puts(&sb, "export NNI_TRIAL_COMMAND_CHANNEL=\"$(cat \"$NNI_SYS_DIR/" KUBE_API_CHANNEL_FILE "\")\"\n");
    sb_puts(&sb, "mkdir -p \"$NNI_SYS_DIR/.nni\" \"$NNI_OUTPUT_DIR\"\n");
    if (!ks->fl->scripts_on_share)
        sb_puts(&sb, "echo $$ > \"$NNI_SYS_DIR/.nni/trial.pid\"\n"); /* for cleanup.sh */
    sb_puts(&sb, "mkdir -p \"$NNI_SYS_DIR/code\"\n"
                 "cp -r \"$NNI_CODE_DIR/.\" \"$NNI_SYS_DIR/code\"\n");
    if (ks->fl->scripts_on_share)
        sb_puts(&sb, "sh \"$NNI_SYS_DIR/install_nni.sh\"\n");
    sb_puts(&sb, "cd \"$NNI_SYS_DIR/code\" || exit 1\n");
    sb_puts(&full, cmd);
    if (http) {
        /* the relay (.nni/chanrelay.py, written by kube_submit) runs the command as its
         * child and serves its channel in the pod, so that an api restart costs the trial
         * nothing; without a python3 >= 3.5 in the image the trial talks to the api, as
         * it says in its stderr */
        sb_puts(&sb, "if command -v python3 > /dev/null 2>&1 &&\n"
                     "   python3 -c 'import sys; sys.exit(sys.version_info < (3, 5))' > /dev/null 2>&1; then\n"
                     "  set -- python3 \"$NNI_SYS_DIR/.nni/chanrelay.py\" --\n"
                     "else\n"
                     "  echo \"trialq: no python3 >= 3.5 in the image: this trial's HTTP channel is the api's\" \\\n"
                     "       \"at nniManagerIp, and a restart of the api fails the trial\" >> \"$NNI_OUTPUT_DIR/trial.stderr\"\n"
                     "  set --\n"
                     "fi\n"
                     "\"$@\" ");
    }
    sb_puts(&sb, "bash -c ");
    sh_quote(&sb, full.buf);
    sb_free(&full);
    sb_puts(&sb, " >>\"$NNI_OUTPUT_DIR/trial.stdout\" 2>>\"$NNI_OUTPUT_DIR/trial.stderr\"\n"
                 "rc=$?\n"
                 "echo \"$rc\" > \"$NNI_OUTPUT_DIR/exitcode\"\n"
                 "exit $rc\n");
    free(sys);
    free(out);
    free(code);
    return sb_detach(&sb);
}

char *kube_stdout_path(struct kube_state *ks, const char *dir)
{
    char *out = kube_output_dir(ks, dir, ks->roles[ks->chief].name);
    char *p = xasprintf("%s/trial.stdout", out);
    free(out);
    return p;
}

static int write_text(const char *dir, const char *name, const char *text, mode_t mode, struct errbuf *e)
{
    char *p = xasprintf("%s/%s", dir, name);
    int rc = write_file_replace(p, text, strlen(text), mode);
    if (rc < 0)
        errf(e, "cannot write %s: %s", p, strerror(errno));
    free(p);
    return rc;
}

int kube_marker_exists(const char *dir)
{
    char *p = xasprintf("%s/.nni/created", dir);
    int r = access(p, F_OK) == 0;
    free(p);
    return r;
}

void kube_marker_write(const char *dir, const char *name)
{
    char *p = xasprintf("%s/.nni/created", dir);
    if (write_file_replace(p, name, strlen(name), 0644) < 0)
        log_warn("cannot write %s: %s", p, strerror(errno));
    free(p);
}

/* ---------------- create, with adoption ---------------- */

char *kube_job_path(struct kube_state *ks, const char *name)
{
    return name ? xasprintf("/apis/%s/%s/namespaces/%s/%s/%s", ks->group, ks->version, ks->ns, ks->plural, name)
                : xasprintf("/apis/%s/%s/namespaces/%s/%s", ks->group, ks->version, ks->ns, ks->plural);
}

int kube_owned_by(const cJSON *job, const char *trial)
{
    const cJSON *lb = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(job, "metadata"), "labels");
    const char *tid = kube_jstr(lb, "trialId", NULL);
    return tid && strcmp(tid, trial) == 0;
}

/* Creates the job (or adopts the one of this trial). Returns 0 created/adopted with
 * *name_out set, 1 transient failure (retry later), -1 refused (e says why). */
int kube_create_job(struct kube_state *ks, struct worker *w, const struct trial *t, const char *dir,
                    char **name_out, struct errbuf *e)
{
    if (kube_backing_off(&ks->conn)) { /* failures, or a 429's Retry-After: not now */
        errf(e, "the Kubernetes API server asked to wait (or failed lately)");
        return 1;
    }
    for (int alt = 0; alt < 2; alt++) {
        char *name = kube_job_name(ks, w->exp_id, t->id, alt);
        cJSON *job = kube_build_job(ks, w, t, name);
        char *coll = kube_job_path(ks, NULL);
        long st;
        cJSON *r = NULL;
        int rc = kube_request(&ks->conn, "POST", coll, job, &st, &r, e);
        free(coll);
        cJSON_Delete(job);
        if (rc == 0 && st == 409) {
            cJSON_Delete(r);
            r = NULL;
            char *p = kube_job_path(ks, name);
            rc = kube_request(&ks->conn, "GET", p, NULL, &st, &r, e);
            free(p);
            if (rc == 0 && st == 200 && !kube_owned_by(r, t->id)) {
                log_warn("trial %s: the name %s is taken by another trial's job; using an alternative", t->id, name);
                cJSON_Delete(r);
                free(name);
                continue;
            }
            if (rc == 0 && st == 200)
                log_info("trial %s: job %s exists already; adopted", t->id, name);
        }
        int result;
        if (rc < 0 || st >= 500 || st == 429 || st == 401 || st == 403 || st == 404) {
            if (rc == 0)
                errf(e, "creating %s %s: %ld %s", ks->kindname, name, st, kube_status_message(r, st));
            result = 1;
        } else if (st == 200 || st == 201 || st == 202) {
            int transient = 0;
            if (ks->fl->dependents && ks->fl->dependents(ks, w, t, name, r, &transient, e) < 0)
                result = transient ? 1 : -1;
            else {
                kube_marker_write(dir, name);
                result = 0;
            }
        } else {
            errf(e, "the Kubernetes API server refused the %s %s: %ld %s", ks->kindname, name, st,
                 kube_status_message(r, st));
            result = -1;
        }
        cJSON_Delete(r);
        if (result == 0)
            *name_out = name;
        else
            free(name);
        return result;
    }
    return errf(e, "no free job name for trial %s", t->id);
}

/* The trial's files on the shared storage: .nni/ (0700), parameter.cfg, the attempt,
 * the channel's relay and URL, the launch scripts, and links to the chief role's
 * output. 0, or -1 with e. */
static int write_trial_files(struct kube_state *ks, struct worker *w, const struct trial *t, const char *dir,
                             const char *att, struct errbuf *e)
{
    /* 0700: .nni/ holds the channel's URL and token (the pods run as trialq's user, or
     * as root, as they must to write .nni/metrics) */
    char *nni = xasprintf("%s/.nni", dir);
    int made = mkdir_p(dir, 0755) == 0 && (mkdir(nni, 0700) == 0 || errno == EEXIST) && chmod(nni, 0700) == 0;
    if (!made)
        errf(e, "cannot create %s on the shared storage: %s", nni, strerror(errno));
    free(nni);
    if (!made)
        return -1;
    char *rec = nni_param_record(t);
    int wr = write_text(dir, "parameter.cfg", rec, 0644, e);
    free(rec);
    if (wr < 0 || write_text(dir, ".nni/attempt", att, 0644, e) < 0)
        return -1;
    if (nas_channel_wanted(w) && write_text(dir, ".nni/chanrelay.py", trialq_chanrelay_py, 0644, e) < 0)
        return -1;
    if (nas_channel_wanted(w) && ks->fl->scripts_on_share) {
        char *url = nas_channel_url(w, t), *line = xasprintf("%s\n", url);
        int wc = write_text(dir, KUBE_API_CHANNEL_FILE, line, 0600, e);
        free(url);
        free(line);
        if (wc < 0)
            return -1;
    }
    if (ks->fl->scripts_on_share) {
        if (write_text(dir, "install_nni.sh", install_nni, 0755, e) < 0)
            return -1;
        for (int i = 0; i < ks->nroles; i++) {
            char *s = kube_role_script(ks, w, t, &ks->roles[i]);
            char *fname = xasprintf("run_%s.sh", ks->roles[i].name);
            int r = write_text(dir, fname, s, 0755, e);
            free(s);
            free(fname);
            if (r < 0)
                return -1;
        }
    }
    /* the chief role's output where nnictl and the web UI look for a trial's logs */
    for (int i = 0; i < 2; i++) {
        const char *f = i ? "trial.stderr" : "trial.stdout";
        char *link = xasprintf("%s/%s", dir, f);
        char *out = kube_output_dir(ks, dir, ks->roles[ks->chief].name);
        char *target = xasprintf("%s/%s", out + strlen(dir) + 1, f); /* relative to dir */
        free(out);
        unlink(link);
        if (symlink(target, link) < 0)
            log_debug("cannot link %s: %s", link, strerror(errno));
        free(link);
        free(target);
    }
    return 0;
}

int kube_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    struct kube_state *ks = w->platform;
    char *dir = kube_trial_local_dir(ks, t->id);
    char *attfile = xasprintf("%s/.nni/attempt", dir);
    int rc = -1;
    char att[16];
    snprintf(att, sizeof att, "%d", t->attempt);
    char *prev = read_file(attfile, NULL);
    if (prev && atoi(prev) != t->attempt) {
        /* an earlier attempt's files: kept beside, as the local platform does */
        char *aside = xasprintf("%s.attempt%d", dir, atoi(prev));
        rm_rf(aside);
        if (rename(dir, aside) < 0)
            log_warn("cannot move %s aside: %s", dir, strerror(errno));
        free(aside);
        free(prev);
        prev = NULL;
    }
    if (prev && kube_marker_exists(dir)) {
        /* this attempt's job was created before: re-attach, never a second one */
        char *p = xasprintf("%s/.nni/created", dir);
        char *name = read_file(p, NULL);
        free(p);
        *job_id = name ? name : kube_job_name(ks, w->exp_id, t->id, 0);
        *trial_dir = xstrdup(dir);
        log_info("trial %s: re-attached to job %s", t->id, *job_id);
        rc = 0;
        goto out;
    }
    if (write_trial_files(ks, w, t, dir, att, e) < 0)
        goto out;
    char *name = NULL;
    int cr = kube_create_job(ks, w, t, dir, &name, e);
    if (cr < 0)
        goto out;
    if (cr == 1) {
        /* the API server is struggling: the trial waits, poll creates the job later */
        log_warn("trial %s: %s; will retry", t->id, e->msg);
        name = kube_job_name(ks, w->exp_id, t->id, 0);
    } else {
        log_debug("trial %s: created %s %s", t->id, ks->kindname, name);
    }
    *job_id = name;
    *trial_dir = xstrdup(dir);
    rc = 0;
out:
    free(prev);
    free(dir);
    free(attfile);
    return rc;
}
