/* remote/start.c: starting a trial on a machine (workers/remote/remote.h): the machine it goes
 * to, its launch script, its local mirror dir, and the start queued for the machine's
 * next batch. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/trialenv.h"
#include "queue/worker_queue.h"
#include "schema/nnijson.h"
#include "workers/remote/remote.h"

struct rmachine *remote_place(struct worker *w)
{
    struct remote_state *rs = w->platform;
    struct rmachine *best = NULL;
    int best_n = 0;
    for (int k = 0; k < rs->n; k++) {
        struct rmachine *m = &rs->m[(rs->rr + k) % rs->n];
        if (!m->conn)
            continue;
        int n = remote_held_on(w, m);
        if (!best || n < best_n) {
            best = m;
            best_n = n;
        }
    }
    rs->rr++;
    return best;
}

static char *launch_script(struct worker *w, struct rmachine *m, struct trial *t, const char *rdir)
{
    const cJSON *cmd = worker_config_item(w, "trialCommand");
    struct strbuf s;
    sb_init(&s);
    char *code = xasprintf("%s/nni-code", m->root);
    struct trial_env te;
    trial_env_init(&te);
    worker_trial_env(w, t, rdir, rdir, code, &te);
    sb_puts(&s, "# written by trialq for one trial attempt; run by runner.sh\n");
    trial_env_export_lines(&te, &s);
    trial_env_free(&te);
    if (m->python_path) {
        sb_puts(&s, "PATH=");
        sh_quote(&s, m->python_path);
        sb_puts(&s, ":\"$PATH\"; export PATH\n");
    }
    if (!m->has_nni) {
        char *sdk = xasprintf("%s/.trialq-sdk", m->root);
        sb_puts(&s, "PYTHONPATH=\"${PYTHONPATH:+$PYTHONPATH:}\"");
        sh_quote(&s, sdk);
        sb_puts(&s, "; export PYTHONPATH\n");
        free(sdk);
    }
    char *rec = nni_param_record(t);
    sb_puts(&s, "printf '%s' ");
    sh_quote(&s, rec);
    sb_puts(&s, " > \"$NNI_SYS_DIR/parameter.cfg\"\n");
    free(rec);
    sb_puts(&s, "cd \"$NNI_SYS_DIR/code\" || exit 126\nTRIALQ_CMD=");
    sh_quote(&s, cJSON_IsString(cmd) ? cmd->valuestring : "false");
    sb_puts(&s, "\nif command -v bash >/dev/null 2>&1; then exec bash -c \"$TRIALQ_CMD\"; fi\n"
                "exec sh -c \"$TRIALQ_CMD\"\n");
    free(code);
    return sb_detach(&s);
}

void remote_make_job_id(char *buf, size_t len, const struct rmachine *m, int attempt)
{
    snprintf(buf, len, "remote:%s:%d", m->label, attempt);
}

/* Keeps the mirror of an earlier attempt beside, like the local platform. */
static int local_mirror(struct worker *w, struct trial *t, char **dir_out, struct errbuf *e)
{
    char *dir = remote_local_dir_of(w, t->id);
    char *apath = xasprintf("%s/.nni/attempt", dir);
    char *s = read_file(apath, NULL);
    if (s && atoi(s) != t->attempt) {
        char *aside = xasprintf("%s.attempt%d", dir, atoi(s));
        rm_rf(aside);
        if (rename(dir, aside) < 0)
            log_warn("cannot move %s aside: %s", dir, strerror(errno));
        free(aside);
    }
    free(s);
    char *nni = xasprintf("%s/.nni", dir);
    int rc = mkdir_p(nni, 0755);
    free(nni);
    if (rc < 0) {
        rc = errf(e, "cannot create %s: %s", dir, strerror(errno));
    } else {
        char att[16];
        int n = snprintf(att, sizeof att, "%d\n", t->attempt);
        write_file_replace(apath, att, (size_t)n, 0644);
        char *cfg = xasprintf("%s/parameter.cfg", dir);
        char *rec = nni_param_record(t);
        write_file_replace(cfg, rec, strlen(rec), 0644);
        free(rec);
        free(cfg);
    }
    free(apath);
    if (rc < 0)
        free(dir);
    else
        *dir_out = dir;
    return rc;
}

void remote_pending_drop(struct rmachine *m, const char *id)
{
    for (int i = 0; i < m->npending; i++)
        if (strcmp(m->pending[i].id, id) == 0) {
            free(m->pending[i].rdir);
            free(m->pending[i].script);
            m->pending[i] = m->pending[--m->npending];
            return;
        }
}

void remote_pending_add(struct worker *w, struct rmachine *m, struct trial *t)
{
    remote_pending_drop(m, t->id);
    m->pending = xrealloc(m->pending, sizeof *m->pending * (size_t)(m->npending + 1));
    struct launch *l = &m->pending[m->npending++];
    memset(l, 0, sizeof *l);
    snprintf(l->id, sizeof l->id, "%s", t->id);
    l->attempt = t->attempt;
    l->rdir = trial_dir_default(m->root, t->id);
    l->script = launch_script(w, m, t, l->rdir);
}

/* Places the trial and queues its start for the machine's next batch: the start itself
 * (idempotent per attempt on the host) goes out with the next poll of that machine. */
int remote_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    struct remote_state *rs = w->platform;
    int att = 0;
    struct rmachine *m = remote_machine_of_job(rs, t->job_id, &att);
    if (m && att != t->attempt)
        m = NULL;
    int again = m != NULL; /* a job of this attempt may exist: the runner re-attaches */
    if (m && !m->root && !remote_machine_usable(w, m))
        return errf(e, "machine %s is unreachable: %s", m->label, m->last_error ? m->last_error : "");
    if (!m && rs->claimed_on && strcmp(rs->claimed_id, t->id) == 0)
        m = rs->claimed_on; /* its GPU slots are on that machine */
    if (!m && t->gpu_indices) {
        int64_t mid = 0;
        struct errbuf e2;
        if (gpu_claim_machine(w->db, t->id, &mid, &e2) == 1)
            for (int i = 0; i < rs->n && !m; i++)
                if (rs->m[i].row_id == mid)
                    m = &rs->m[i];
    }
    rs->claimed_on = NULL;
    if (!m)
        m = remote_place(w);
    if (!m)
        return errf(e, "no machine is reachable");
    char *ldir = NULL;
    if (local_mirror(w, t, &ldir, e) < 0)
        return -1;
    char jid[512];
    remote_make_job_id(jid, sizeof jid, m, t->attempt);
    /* the placement is recorded before the job starts: a worker that dies in between
     * is followed by one that re-attaches on the same machine, never a second job */
    if (!again && trial_set_job(w->db, t->id, w->owner, jid, ldir, e) < 0) {
        free(ldir);
        return -1;
    }
    remote_pending_add(w, m, t);
    *job_id = xstrdup(jid);
    *trial_dir = ldir;
    free(t->job_id);
    t->job_id = xstrdup(jid);
    struct rtrial *r = remote_rtrial_get(rs, t->id, 1);
    r->attempt = t->attempt;
    r->state = 0;
    r->killed = 0;
    return 0;
}
