/* nas_trial.c: a trial's files on a storage mounted here and in the cluster's jobs
 * (workers/nas_trial.h). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/chantoken.h"
#include "common/trialenv.h"
#include "schema/nnijson.h"
#include "workers/nas_trial.h"
#include "workers/nniignore.h"

int nas_exp_roots(struct worker *w, const char *local_mount, const char *cont_mount, char **local_root,
                  char **cont_root, struct errbuf *e)
{
    *local_root = xasprintf("%s/%s", local_mount, w->exp_id);
    *cont_root = xasprintf("%s/%s", cont_mount, w->exp_id);
    if (mkdir_p(*local_root, 0755) < 0)
        return errf(e, "cannot create %s: %s", *local_root, strerror(errno));
    return 0;
}

char *nas_trial_rel(const char *trial_id, int attempt)
{
    return attempt <= 1 ? xstrdup(trial_id) : xasprintf("%s.attempt%d", trial_id, attempt);
}

char *nas_trial_dir(const char *root, const struct trial *t)
{
    char *rel = nas_trial_rel(t->id, t->attempt);
    char *d = xasprintf("%s/%s", root, rel);
    free(rel);
    return d;
}

char *nas_job_name(const char *exp_id, const struct trial *t)
{
    return t->attempt <= 1 ? xasprintf("nni_exp_%s_trial_%s", exp_id, t->id)
                           : xasprintf("nni_exp_%s_trial_%s_attempt%d", exp_id, t->id, t->attempt);
}

static char *sdk_dir(void)
{
    return trialq_data_dir("python", "nni", TRIALQ_BUILD_TREE("/sdk/python"));
}

int nas_ship_code(struct worker *w, const char *local_root, struct errbuf *e)
{
    char *code_dst = xasprintf("%s/nni-code", local_root);
    int rc = 0;
    if (access(code_dst, F_OK) < 0) {
        const cJSON *src = worker_config_item(w, "trialCodeDirectory");
        rc = code_copy_tree(cJSON_IsString(src) && src->valuestring[0] ? src->valuestring : ".", code_dst,
                            w->exp.config_file, e);
        if (rc < 0)
            errprefix(e, "trialCodeDirectory");
        else
            log_info("copied the code directory to %s", code_dst);
    }
    free(code_dst);
    /* our stdlib SDK beside it, for images without the nni package */
    char *sdk_dst = xasprintf("%s/nni-sdk", local_root);
    if (rc == 0 && access(sdk_dst, F_OK) < 0) {
        char *src = sdk_dir();
        struct errbuf se;
        if (code_copy_tree(src, sdk_dst, NULL, &se) < 0)
            log_warn("cannot copy the trial SDK to the storage: %s (trials need the nni package in their image)",
                     se.msg);
        free(src);
    }
    free(sdk_dst);
    return rc;
}

/* The launch script in the trial dir (bash, inside the container): NNI's steps of spec
 * §5 — code copied into $NNI_SYS_DIR/code, our SDK (../nni-sdk beside the trial dirs)
 * when the image has no nni package, stdout/stderr to files on the storage, and
 * "<exit> <end ms> 0 <attempt>" into .nni/state when the command ends. It names no
 * absolute path: everything is relative to $NNI_SYS_DIR. */
static char *run_script(const struct trial *t, const char *label)
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
        t->id, t->attempt, label, t->attempt);
}

int nas_write_trial_files(const char *dir, const struct trial *t, const char *label, struct errbuf *e)
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
    char *run = run_script(t, label);
    if (wr == 0)
        wr = write_file_replace(runp, run, strlen(run), 0755);
    free(run);
    free(runp);
    if (wr < 0)
        return errf(e, "cannot write the trial files in %s: %s", dir, strerror(errno));
    return 0;
}

char *nas_job_command(struct worker *w, const char *cont_root, const struct trial *t, const char *nni_platform,
                      const char *cmd)
{
    char *c = nas_trial_dir(cont_root, t);
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
    free(c);
    free(out);
    free(code);
    free(run);
    return sb_detach(&sb);
}

int nas_channel_wanted(struct worker *w)
{
    const cJSON *chan = worker_config_item(w, "trialCommandChannel");
    return cJSON_IsString(chan) && strcmp(chan->valuestring, "http") == 0 && w->exp.token && w->exp.port > 0;
}

char *nas_channel_url(struct worker *w, const struct trial *t)
{
    if (!nas_channel_wanted(w))
        return NULL;
    char tok[CHAN_TOKEN_LEN + 1];
    chan_token(w->exp.token, t->id, tok);
    const cJSON *ip = worker_config_item(w, "nniManagerIp");
    const char *host = cJSON_IsString(ip) ? ip->valuestring : w->exp.bind_address;
    if (!host || !*host || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
        host = "127.0.0.1";
    return xasprintf(strchr(host, ':') ? "http://[%s]:%d/env/%s/%s" : "http://%s:%d/env/%s/%s", host, w->exp.port,
                     tok, t->id);
}

char *nas_channel_command(const char *url, const char *cmd)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "export NNI_TRIAL_COMMAND_CHANNEL=");
    sh_quote(&sb, url);
    sb_puts(&sb, "\nif command -v python3 > /dev/null 2>&1 &&\n"
                 "   python3 -c 'import sys; sys.exit(sys.version_info < (3, 5))' > /dev/null 2>&1; then\n"
                 "  set -- python3 \"$NNI_SYS_DIR/.nni/chanrelay.py\" --\n"
                 "else\n"
                 "  echo \"trialq: no python3 >= 3.5 in the image: this trial's HTTP channel is the api's\" >&2\n"
                 "  set --\n"
                 "fi\n"
                 "\"$@\" bash -c ");
    sh_quote(&sb, cmd);
    return sb_detach(&sb);
}

int nas_write_chanrelay(const char *dir, struct errbuf *e)
{
    char *nni = xasprintf("%s/.nni", dir), *p = xasprintf("%s/.nni/chanrelay.py", dir);
    int rc = mkdir_p(nni, 0755) < 0 ||
                     write_file_replace(p, trialq_chanrelay_py, strlen(trialq_chanrelay_py), 0644) < 0
                 ? errf(e, "cannot write %s: %s", p, strerror(errno))
                 : 0;
    free(nni);
    free(p);
    return rc;
}

int nas_read_state(const char *dir, long long v[4])
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

int nas_job_ended(const char *dir, int attempt, int ok, int svc_exit, int64_t svc_end_ms, struct job_state *js)
{
    long long sv[4];
    int has = nas_read_state(dir, sv) == 0 && sv[3] == attempt;
    js->finished = 1;
    js->has_exit = 1;
    js->end_time = has ? sv[1] : svc_end_ms ? svc_end_ms : now_ms();
    js->exit_code = ok ? 0 : has && sv[0] != 0 ? (int)sv[0] : svc_exit ? svc_exit : 1;
    return has;
}

static char *dir_of(const struct trial *t, const char *local_root)
{
    return t->trial_dir ? xstrdup(t->trial_dir) : nas_trial_dir(local_root, t);
}

int nas_collect(struct worker *w, struct trial *t, const char *local_root, int at_end, struct errbuf *e)
{
    char *dir = dir_of(t, local_root);
    int rc = collect_trial_dir(w->db, t, dir, NULL, at_end, e);
    free(dir);
    return rc;
}

int nas_pending(struct worker *w, struct trial *t, const char *local_root)
{
    (void)w;
    char *dir = dir_of(t, local_root);
    int r = trial_dir_grew(t, dir, NULL);
    free(dir);
    return r;
}

void nas_report_fatal(struct worker *w, const char *msg)
{
    struct errbuf e;
    log_error("%s", msg);
    if (exp_transition(w->db, w->exp_id, "INITIALIZED,RUNNING,NO_MORE_TRIAL,TUNER_NO_MORE_TRIAL", "ERROR", msg,
                       &e) == 1)
        exp_add_error(w->db, w->exp_id, msg, &e);
}

struct nas_job *nas_job_of(struct nas_jobs *js, const struct trial *t, int *fresh)
{
    struct nas_job *j = NULL;
    for (int i = 0; i < js->n && !j; i++)
        if (strcmp(js->v[i].trial_id, t->id) == 0)
            j = &js->v[i];
    int is_new = !j || j->attempt != t->attempt;
    if (!j) {
        if (js->n == js->cap) {
            js->cap = js->cap ? js->cap * 2 : 16;
            js->v = xrealloc(js->v, sizeof *js->v * (size_t)js->cap);
        }
        j = &js->v[js->n++];
        memset(j, 0, sizeof *j);
        j->trial_id = xstrdup(t->id);
    }
    if (is_new) { /* new, or a retry: start afresh */
        j->attempt = t->attempt;
        j->need_submit = 0;
        free(j->job_id);
        j->job_id = NULL;
    }
    if (fresh)
        *fresh = is_new;
    return j;
}

static char *marker_path(const char *local_root, const struct trial *t, const char *marker)
{
    char *dir = nas_trial_dir(local_root, t);
    char *m = xasprintf("%s/.nni/%s", dir, marker);
    free(dir);
    return m;
}

struct nas_job *nas_job_load(struct nas_jobs *js, const char *local_root, const struct trial *t, const char *marker)
{
    int fresh;
    struct nas_job *j = nas_job_of(js, t, &fresh);
    if (!fresh)
        return j;
    char *m = marker_path(local_root, t, marker);
    char *id = read_file(m, NULL);
    free(m);
    if (id)
        id[strcspn(id, "\n")] = '\0';
    if (id && id[0] && !strchr(id, '/'))
        j->job_id = id;
    else
        free(id);
    j->need_submit = !j->job_id;
    return j;
}

void nas_job_known(struct nas_job *j, const char *local_root, const struct trial *t, const char *marker,
                   const char *id)
{
    if (!j->job_id || strcmp(j->job_id, id) != 0) {
        free(j->job_id);
        j->job_id = xstrdup(id);
    }
    j->need_submit = 0;
    char *m = marker_path(local_root, t, marker);
    char *old = read_file(m, NULL);
    if ((!old || strcmp(old, id) != 0) && write_file_replace(m, id, strlen(id), 0644) < 0)
        log_warn("cannot write %s: %s", m, strerror(errno));
    free(old);
    free(m);
}

void nas_job_forget(struct nas_jobs *js, const char *trial_id)
{
    for (int i = 0; i < js->n; i++)
        if (strcmp(js->v[i].trial_id, trial_id) == 0) {
            free(js->v[i].trial_id);
            free(js->v[i].job_id);
            js->v[i] = js->v[--js->n];
            return;
        }
}

void nas_jobs_free(struct nas_jobs *js)
{
    for (int i = 0; i < js->n; i++) {
        free(js->v[i].trial_id);
        free(js->v[i].job_id);
    }
    free(js->v);
    memset(js, 0, sizeof *js);
}

int nas_poll_unconfirmed(struct worker *w, struct nas_jobs *js, struct nas_job *j, const struct trial *t,
                         nas_try_submit_fn try, nas_find_fn find, struct job_state *st, int *rc, struct errbuf *e)
{
    struct errbuf he;
    *rc = 0;
    if (t->kill_request) { /* killed before the service confirmed it: over, unless it exists after all */
        int f = find(w, j, t, &he);
        if (f < 0) {
            *rc = errf(e, "%s", he.msg);
        } else if (f == 0) {
            st->finished = 1;
            st->signal = SIGTERM;
            st->end_time = now_ms();
            nas_job_forget(js, t->id);
        }
        return f <= 0;
    }
    int s = try(w, j, t, &he);
    if (s < 0) { /* refused for good: the trial fails with its reason */
        st->finished = 1;
        st->exit_code = 1;
        st->end_time = now_ms();
        snprintf(st->why, sizeof st->why, "%.500s", he.msg);
        nas_job_forget(js, t->id);
    } else if (s == 0) {
        *rc = errf(e, "%s", he.msg);
    }
    return 1;
}

int nas_submit(struct worker *w, struct nas_jobs *js, struct nas_job *j, const char *local_root, const char *label,
               nas_try_submit_fn try, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    char *dir = nas_trial_dir(local_root, t);
    int s = 1;
    if (nas_write_trial_files(dir, t, label, e) < 0) {
        s = -1;
    } else if (!j->job_id) {
        j->need_submit = 1;
        s = try(w, j, t, e);
    }
    if (s < 0) {
        nas_job_forget(js, t->id);
        free(dir);
        return -1;
    }
    if (s == 0) /* the service does not answer now; the trial is ours and poll submits it later */
        log_warn("trial %s: %s; submitted by a later poll", t->id, e->msg);
    *job_id = nas_job_name(w->exp_id, t);
    *trial_dir = dir;
    return SUBMIT_NEW;
}
