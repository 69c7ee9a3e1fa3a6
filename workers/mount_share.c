/* mount_share.c: trial files on a shared filesystem mounted here and in the jobs
 * (workers/mount_share.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/trialenv.h"
#include "schema/nnijson.h"
#include "workers/mount_share.h"
#include "workers/nniignore.h"

static char *sdk_dir(void)
{
    char *exe = self_exe_path();
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    char *installed = xasprintf("%s/../share/trialq/python", exe);
    char *probe = xasprintf("%s/nni", installed);
    free(exe);
    if (access(probe, R_OK) == 0) {
        free(probe);
        return installed;
    }
    free(probe);
    free(installed);
    return xstrdup(TRIALQ_SOURCE_DIR "/sdk/python");
}

int share_prepare(struct worker *w, const char *local_root, struct errbuf *e)
{
    /* the code once per experiment (a resumed experiment keeps the first copy: running
     * trials copied it already, and a retried trial sees the same code) */
    char *code_dst = xasprintf("%s/nni-code", local_root);
    if (access(code_dst, F_OK) < 0) {
        const cJSON *src = worker_config_item(w, "trialCodeDirectory");
        int rc = code_copy_tree(cJSON_IsString(src) ? src->valuestring : ".", code_dst, w->exp.config_file, e);
        if (rc < 0) {
            errprefix(e, "trialCodeDirectory");
            free(code_dst);
            return -1;
        }
        log_info("copied the code directory to %s", code_dst);
    }
    free(code_dst);
    /* our stdlib SDK beside it, for images without the nni package */
    char *sdk_dst = xasprintf("%s/nni-sdk", local_root);
    if (access(sdk_dst, F_OK) < 0) {
        char *src = sdk_dir();
        struct errbuf se;
        if (code_copy_tree(src, sdk_dst, NULL, &se) < 0)
            log_warn("cannot copy the trial SDK to the storage: %s (trials need the nni package in their image)",
                     se.msg);
        free(src);
    }
    free(sdk_dst);
    return 0;
}

char *share_run_script(const struct trial *t, const char *platform)
{
    return xasprintf(
        "#!/bin/bash\n"
        "# trialq: trial %s attempt %d on %s; $1 is the trial command\n"
        "cd \"$NNI_SYS_DIR\" || exit 1\n"
        "mkdir -p .nni code \"$NNI_OUTPUT_DIR\"\n"
        "exec 1>>\"$NNI_SYS_DIR/trial.stdout\" 2>>\"$NNI_SYS_DIR/trial.stderr\"\n"
        "cp -r \"$NNI_CODE_DIR/.\" code || { echo \"trialq: cannot copy $NNI_CODE_DIR\" >&2; exit 1; }\n"
        "sdk=$(cd \"$NNI_SYS_DIR/../nni-sdk\" 2>/dev/null && pwd)\n"
        "if [ -n \"$sdk\" ] && ! python3 -c 'import nni' >/dev/null 2>&1; then\n"
        "    export PYTHONPATH=\"${PYTHONPATH:+$PYTHONPATH:}$sdk\"\n"
        "fi\n"
        "cd code\n"
        "eval \"$1\"\n"
        "rc=$?\n"
        "echo \"$rc $(date +%%s%%3N) 0 %d\" > \"$NNI_SYS_DIR/.nni/state.tmp\" &&"
        " mv -f \"$NNI_SYS_DIR/.nni/state.tmp\" \"$NNI_SYS_DIR/.nni/state\"\n"
        "exit $rc\n",
        t->id, t->attempt, platform, t->attempt);
}

int share_read_state(const char *dir, long long v[4])
{
    char *path = xasprintf("%s/.nni/state", dir);
    char *s = read_file(path, NULL);
    free(path);
    if (!s)
        return -1;
    int n = sscanf(s, "%lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3]);
    free(s);
    return n == 4 ? 0 : -1;
}

char *share_job_name(const char *exp_id, const struct trial *t)
{
    return t->attempt <= 1 ? xasprintf("nni_exp_%s_trial_%s", exp_id, t->id)
                           : xasprintf("nni_exp_%s_trial_%s_attempt%d", exp_id, t->id, t->attempt);
}

char *share_trial_rel(const struct trial *t)
{
    return t->attempt <= 1 ? xstrdup(t->id) : xasprintf("%s.attempt%d", t->id, t->attempt);
}

int share_write_trial(const struct trial *t, const char *dir, const char *platform, struct errbuf *e)
{
    char *nni = xasprintf("%s/.nni", dir);
    int rc = mkdir_p(nni, 0755);
    if (rc < 0)
        errf(e, "cannot create %s: %s", nni, strerror(errno));
    free(nni);
    if (rc < 0)
        return -1;
    /* parameter.cfg before the job exists (the SDK reads it at start) */
    char *cfg = xasprintf("%s/parameter.cfg", dir);
    char *rec = nni_param_record(t);
    int wr = write_file_replace(cfg, rec, strlen(rec), 0644);
    free(rec);
    free(cfg);
    char *runp = xasprintf("%s/run.sh", dir);
    char *run = share_run_script(t, platform);
    if (wr == 0)
        wr = write_file_replace(runp, run, strlen(run), 0755);
    free(run);
    free(runp);
    if (wr < 0)
        return errf(e, "cannot write the trial files in %s: %s", dir, strerror(errno));
    return 0;
}

char *share_job_command(struct worker *w, const struct trial *t, const char *cont_root, const char *nni_platform,
                        const char *cmd)
{
    char *rel = share_trial_rel(t);
    char *c = xasprintf("%s/%s", cont_root, rel);
    char *out = xasprintf("%s/nnioutput", c);
    char *code = xasprintf("%s/nni-code", cont_root);
    char *run = xasprintf("%s/run.sh", c);
    struct trial_env te;
    trial_env_init(&te);
    worker_trial_env(w, t, c, out, code, &te);
    if (nni_platform)
        trial_env_set_word(&te, "NNI_PLATFORM", nni_platform);
    trial_env_set(&te, "CUDA_VISIBLE_DEVICES", NULL); /* the cluster places the GPUs */
    struct strbuf sb;
    sb_init(&sb);
    trial_env_export_line(&te, &sb);
    sb_puts(&sb, " && bash ");
    sh_quote(&sb, run);
    sb_puts(&sb, " ");
    sh_quote(&sb, cmd);
    trial_env_free(&te);
    free(rel);
    free(c);
    free(out);
    free(code);
    free(run);
    return sb_detach(&sb);
}

void share_fatal(struct worker *w, const char *msg)
{
    struct errbuf e;
    log_error("%s", msg);
    if (exp_transition(w->db, w->exp_id, "INITIALIZED,RUNNING,NO_MORE_TRIAL,TUNER_NO_MORE_TRIAL", "ERROR", msg,
                       &e) == 1)
        exp_add_error(w->db, w->exp_id, msg, &e);
}

char *share_trial_dir(const struct trial *t, const char *local_root)
{
    if (t->trial_dir)
        return xstrdup(t->trial_dir);
    char *rel = share_trial_rel(t);
    char *d = xasprintf("%s/%s", local_root, rel);
    free(rel);
    return d;
}

int share_collect(struct worker *w, struct trial *t, const char *local_root, int at_end, struct errbuf *e)
{
    char *dir = share_trial_dir(t, local_root);
    int rc = collect_trial_dir(w->db, t, dir, NULL, at_end, e);
    free(dir);
    return rc;
}

int share_pending(const struct trial *t, const char *local_root)
{
    char *dir = share_trial_dir(t, local_root);
    int r = trial_dir_grew(t, dir, NULL);
    free(dir);
    return r;
}

struct share_job *share_job_of(struct share_jobs *js, const struct trial *t, int *fresh)
{
    struct share_job *j = NULL;
    for (int i = 0; i < js->n && !j; i++)
        if (strcmp(js->v[i].trial_id, t->id) == 0)
            j = &js->v[i];
    *fresh = !j || j->attempt != t->attempt;
    if (!j) {
        if (js->n == js->cap) {
            js->cap = js->cap ? js->cap * 2 : 16;
            js->v = xrealloc(js->v, sizeof *js->v * (size_t)js->cap);
        }
        j = &js->v[js->n++];
        memset(j, 0, sizeof *j);
        j->trial_id = xstrdup(t->id);
    }
    if (*fresh) { /* new, or a retry: start afresh */
        j->attempt = t->attempt;
        j->need_submit = 0;
        free(j->job_id);
        j->job_id = NULL;
    }
    return j;
}

void share_job_forget(struct share_jobs *js, const char *trial_id)
{
    for (int i = 0; i < js->n; i++)
        if (strcmp(js->v[i].trial_id, trial_id) == 0) {
            free(js->v[i].trial_id);
            free(js->v[i].job_id);
            js->v[i] = js->v[--js->n];
            return;
        }
}

void share_jobs_free(struct share_jobs *js)
{
    for (int i = 0; i < js->n; i++) {
        free(js->v[i].trial_id);
        free(js->v[i].job_id);
    }
    free(js->v);
    memset(js, 0, sizeof *js);
}
