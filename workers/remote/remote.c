/* remote.c: the remote platform (NNI's `remote` training service) over SSH with
 * libssh2: its ops (init, poll, kill, collect, preflight) and shared helpers; the rest
 * in the files workers/remote/remote.h names. One connection per machine, reused for every exec and SFTP transfer, reopened
 * with back-off when it drops. The worker connects out; the remote hosts never reach
 * the manager.
 *
 * On each machine, under E = $HOME/nni-experiments/<experiment>:
 *   runner.sh          the POSIX sh runner (remote/runner.c), shipped at every start
 *   nni-code/          the trial code directory, shipped once (tar.gz over SFTP,
 *                      .nniignore honoured, NNI's 2000 entries / 300 MB limits)
 *   .trialq-sdk/       our stdlib `nni` package, used when the host has no nni
 *   trials/<id>/       NNI_SYS_DIR of a trial: parameter.cfg, code/, .nni/metrics,
 *                      trial.stdout, trial.stderr, .nni/{attempt,runner,lead,trialpid,code}
 *   trials/<id>.<N>.job  the claim of attempt N (its runner's pid, start time, boot id,
 *                      machine id, and the machine that placed it: a home, and so this
 *                      dir, may be shared by several machines; each acts on its own claims)
 *   trials/<id>.attempt<N>/  attempt N's dir, moved aside by a later attempt on this host
 * The runner starts each trial detached (setsid) in its own process group and writes
 * its exit code durably, so a trial outlives a dropped connection or a restarted
 * worker, and the next worker re-attaches through the job files (never a second job).
 *
 * Locally, <exp dir>/trials/<id>/ mirrors .nni/metrics, trial.stdout and trial.stderr:
 * every poll of a machine is one exec that reports the state of all its trials with the
 * bytes each file gained beyond the mirror's size. Metrics are then parsed from the
 * mirrors from the offsets stored in the database (no network I/O inside a transaction),
 * and the logs are where the API and nnictl look for a local trial's logs. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "workers/nniignore.h"
#include "workers/remote/remote.h"

static int remote_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e);

/* ---------------- helpers ---------------- */

char *remote_local_dir_of(struct worker *w, const char *trial_id)
{
    return trial_dir_default(w->exp.exp_dir, trial_id);
}

const char *remote_jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int64_t remote_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

struct rmachine *remote_machine_of_job(struct remote_state *rs, const char *job_id, int *attempt)
{
    if (!job_id || strncmp(job_id, "remote:", 7) != 0)
        return NULL;
    const char *label = job_id + 7;
    const char *colon = strrchr(label, ':');
    if (!colon)
        return NULL;
    if (attempt)
        *attempt = atoi(colon + 1);
    for (int i = 0; i < rs->n; i++)
        if (strlen(rs->m[i].label) == (size_t)(colon - label) &&
            strncmp(rs->m[i].label, label, (size_t)(colon - label)) == 0)
            return &rs->m[i];
    return NULL;
}

struct rtrial *remote_rtrial_get(struct remote_state *rs, const char *id, int create)
{
    for (int i = 0; i < rs->nts; i++)
        if (strcmp(rs->ts[i].id, id) == 0)
            return &rs->ts[i];
    if (!create)
        return NULL;
    if (rs->nts == rs->capts) {
        rs->capts = rs->capts ? rs->capts * 2 : 16;
        rs->ts = xrealloc(rs->ts, sizeof *rs->ts * (size_t)rs->capts);
    }
    struct rtrial *r = &rs->ts[rs->nts++];
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", id);
    return r;
}

static void rtrial_drop(struct remote_state *rs, const char *id)
{
    struct rtrial *r = remote_rtrial_get(rs, id, 0);
    if (r)
        *r = rs->ts[--rs->nts];
}

/* ---------------- platform ops ---------------- */

static void remote_destroy(struct worker *w)
{
    struct remote_state *rs = w->platform;
    if (!rs)
        return;
    for (int i = 0; i < rs->n; i++)
        remote_machine_free(&rs->m[i]);
    free(rs->m);
    free(rs->known_hosts);
    free(rs->code_tgz);
    free(rs->sdk_tgz);
    free(rs->ts);
    free(rs);
    w->platform = NULL;
}

static int remote_init(struct worker *w, struct errbuf *e)
{
    const cJSON *ts = worker_ts_config(w);
    const cJSON *list = ts ? cJSON_GetObjectItemCaseSensitive(ts, "machineList") : NULL;
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
        return errf(e, "trainingService.machineList is empty");
    struct remote_state *rs = xcalloc(1, sizeof *rs);
    w->platform = rs;
    remote_hostkey_options(ts, &rs->known_hosts, &rs->accept_new);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ts, "reuseMode")))
        log_warn("trainingService.reuseMode is ignored: trialq runs each remote trial directly "
                 "(no trial runner environment)");
    rs->n = cJSON_GetArraySize(list);
    rs->m = xcalloc((size_t)rs->n, sizeof *rs->m);
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, list)
        remote_machine_from_json(&rs->m[i++], it);
    /* GPUs: trialGpuNumber of the experiment, the other options per machine */
    struct gpu_need base;
    rs->gpus = gpu_need_from_config(w->exp.config, "remote", &base) > 0;
    i = 0;
    cJSON_ArrayForEach(it, list) {
        struct rmachine *m = &rs->m[i++];
        gpu_need_from_json(it, ts, &m->need);
        m->need.count = base.count;
    }
    if (remote_pack(w, rs, e) < 0) {
        struct errbuf e2;
        exp_add_error(w->db, w->exp_id, e->msg, &e2);
        remote_destroy(w);
        return -1;
    }
    /* every machine is checked now: connect, host key, auth, a command, its work dir */
    struct strbuf failed;
    sb_init(&failed);
    int ok = 0;
    for (i = 0; i < rs->n; i++) {
        struct rmachine *m = &rs->m[i];
        struct errbuf me;
        if (remote_machine_row(w->db, m, &me) < 0)
            log_warn("machine %s: %s", m->label, me.msg);
        if (remote_connect_machine(w, rs, m, &me) == 0) {
            remote_machine_record(w, m, 1, NULL);
            ok++;
            continue;
        }
        log_error("%s", me.msg);
        remote_machine_record(w, m, 0, me.msg);
        struct errbuf e2;
        exp_add_error(w->db, w->exp_id, me.msg, &e2);
        sb_printf(&failed, "%s%s", failed.len ? "; " : "", me.msg);
    }
    /* with no machine usable the worker still runs: it reconnects with back-off,
     * claims nothing meanwhile (the trials say why), and ends what a stop asks */
    if (!ok)
        log_error("no machine is usable now: %s", failed.buf ? failed.buf : "");
    sb_free(&failed);
    return 0;
}

static int remote_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    (void)e;
    struct remote_state *rs = w->platform;
    memset(js, 0, sizeof *js);
    int att = 0;
    struct rmachine *m = remote_machine_of_job(rs, t->job_id, &att);
    if (!m || att != t->attempt) {
        js->vanished = 1;
        snprintf(js->why, sizeof js->why, "its job %s names no machine of machineList", t->job_id ? t->job_id : "");
        return 0;
    }
    if (!remote_machine_usable(w, m)) {
        if (!m->healthy) {
            js->vanished = 1;
            snprintf(js->why, sizeof js->why, "machine %s is down (%.120s)", m->display,
                     m->last_error ? m->last_error : "unreachable");
            rtrial_drop(rs, t->id);
            remote_pending_drop(m, t->id);
        }
        return 0;
    }
    struct rtrial *r = remote_rtrial_get(rs, t->id, 0);
    if (m->npending || !r || r->attempt != t->attempt || !r->state || mono_ms() - m->snap_ms >= REMOTE_POLL_MS / 2)
        remote_refresh_all(w);
    r = remote_rtrial_get(rs, t->id, 0);
    if (!r || r->attempt != t->attempt)
        return 0;
    switch (r->state) {
    case 'F':
        if (!r->complete)
            return 0; /* more output to pull first: the next poll continues */
        js->finished = 1;
        js->has_exit = 1;
        js->exit_code = r->rc;
        js->end_time = r->end;
        js->stop_known = r->stopped >= 0;
        js->stopped = r->stopped > 0;
        if (r->fault)
            job_why_disk_fault(js, r->fault);
        rtrial_drop(rs, t->id);
        break;
    case 'V':
        js->vanished = 1;
        snprintf(js->why, sizeof js->why, "its job on %s vanished (no runner and no exit code)", m->display);
        rtrial_drop(rs, t->id);
        break;
    case 'E':
        js->vanished = 1;
        snprintf(js->why, sizeof js->why, "%s", r->why);
        rtrial_drop(rs, t->id);
        break;
    default:
        break;
    }
    return 0;
}

static int remote_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    struct remote_state *rs = w->platform;
    int att = 0;
    struct rmachine *m = remote_machine_of_job(rs, t->job_id, &att);
    if (!m)
        return errf(e, "job %s names no machine", t->job_id ? t->job_id : "(none)");
    struct rtrial *kr = remote_rtrial_get(rs, t->id, 1);
    if (kr->attempt != t->attempt) {
        kr->attempt = t->attempt;
        kr->state = 0;
    }
    kr->killed = 1;
    for (int i = 0; i < m->npending; i++)
        if (strcmp(m->pending[i].id, t->id) == 0) {
            /* not started yet: nothing runs, so it ends here */
            remote_pending_drop(m, t->id);
            struct rtrial *r = remote_rtrial_get(rs, t->id, 1);
            r->attempt = t->attempt;
            r->state = 'F';
            r->rc = 143;
            r->end = now_ms();
            r->stopped = 1;
            r->complete = 1;
            return 0;
        }
    if (!remote_machine_usable(w, m))
        return errf(e, "machine %s is unreachable: %s", m->label, m->last_error ? m->last_error : "");
    struct strbuf script, out;
    sb_init(&script);
    sb_init(&out);
    char *rdir = trial_dir_default(m->root, t->id);
    char tag[32], marker[48];
    remote_unique_tag(NULL, tag);
    snprintf(marker, sizeof marker, "%s\n", tag);
    sb_puts(&script, "tq_kill ");
    sh_quote(&script, rdir);
    sb_printf(&script, " %d\necho %s\n", att, tag);
    free(rdir);
    int rc = ssh_shell_send(m->shell, script.buf, script.len, e);
    if (rc == 0)
        rc = ssh_shell_recv(m->shell, marker, &out, e);
    sb_free(&script);
    sb_free(&out);
    if (rc < 0) {
        remote_conn_lost(w, m, e->msg);
        return -1;
    }
    m->snap_ms = 0; /* look again soon */
    return 0;
}

/* Metrics and output are read from the local mirror of the trial dir (the poll copies
 * the new bytes over the machine's session): no network I/O inside the transaction. */
static int remote_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    char *dir = remote_local_dir_of(w, t->id);
    int rc = collect_trial_dir(w->db, t, dir, NULL, at_end, e);
    free(dir);
    return rc;
}

static int remote_pending(struct worker *w, struct trial *t)
{
    char *dir = remote_local_dir_of(w, t->id);
    int r = trial_dir_grew(t, dir, NULL);
    free(dir);
    return r;
}

static const char *remote_machine_of(struct worker *w, const struct trial *t)
{
    struct rmachine *m = remote_machine_of_job(w->platform, t->job_id, NULL);
    return m ? m->display : NULL;
}

const struct platform_ops platform_remote = {
    .name = "remote",
    .init = remote_init,
    .preflight = remote_preflight,
    .submit = remote_submit,
    .poll = remote_poll,
    .kill = remote_kill,
    .collect = remote_collect,
    .pending = remote_pending,
    .destroy = remote_destroy,
    .poll_ms = REMOTE_POLL_MS,
    .machine_of = remote_machine_of,
    .can_claim = remote_can_claim,
    .refresh = remote_refresh,
    .claim = remote_claim,
    .gpu_mode = PLATFORM_GPU_OWN,
};

/* nnictl create's check of a remote trainingService: the code directory's limits, and
 * each machine (connect, host key, auth, a command, its work dir); e names each failure. */
static int remote_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    (void)ops;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(ts, "machineList");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(ts, "trialCodeDirectory");
    if (!cJSON_IsString(code))
        code = cJSON_GetObjectItemCaseSensitive(config, "trialCodeDirectory");
    struct code_list cl;
    if (code_list_build(cJSON_IsString(code) ? code->valuestring : ".", NULL, &cl, e) < 0)
        return -1;
    code_list_free(&cl);
    char *known_hosts = NULL;
    int accept_new = 0;
    remote_hostkey_options(ts, &known_hosts, &accept_new);
    struct strbuf failed;
    sb_init(&failed);
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        struct rmachine m;
        memset(&m, 0, sizeof m);
        remote_machine_from_json(&m, it);
        struct ssh_target t = {
            .host = m.host, .port = m.port, .user = m.user, .password = m.password, .key_file = m.key_file,
            .passphrase = m.passphrase, .known_hosts = known_hosts, .accept_new_host_key = accept_new,
            .connect_timeout_ms = CONNECT_TIMEOUT_MS, .op_timeout_ms = OP_TIMEOUT_MS,
        };
        enum ssh_failure why;
        struct errbuf me;
        int rc = ssh_connect(&t, &m.conn, &why, &me);
        if (rc == 0) {
            /* a trivial command and write access to the work dir */
            struct strbuf cmd;
            sb_init(&cmd);
            remote_cmd_prefix(&cmd, &m);
            sb_puts(&cmd, "mkdir -p \"$HOME/nni-experiments\" && [ -w \"$HOME/nni-experiments\" ] || "
                          "{ echo \"cannot write to its work dir $HOME/nni-experiments\" >&2; exit 3; }");
            int st;
            rc = remote_run_cmd(&m, cmd.buf, NULL, 0, NULL, &st, &me);
            if (rc == 0 && st != 0)
                rc = -1;
            sb_free(&cmd);
        }
        if (rc < 0)
            sb_printf(&failed, "%smachine %s: %s", failed.len ? "; " : "", m.label, me.msg);
        remote_machine_free(&m);
    }
    free(known_hosts);
    int rc = 0;
    if (failed.len)
        rc = errf(e, "%s", failed.buf);
    sb_free(&failed);
    return rc;
}
