/* remote/conn.c: the remote platform's connections (workers/remote/remote.h): a machine's
 * settings and row, one SSH connection and one runner shell per machine, reopened with
 * back-off when it drops; who the host is (its home, shared or not), and the runs of
 * other attempts or workers found there at connect time. */
#include <stdlib.h>
#include <string.h>

#include "schema/worker_rows.h"
#include "workers/remote/remote.h"

/* The machine's row (shared by every experiment of the database, like GPU rows). */
int remote_machine_row(struct db *db, struct rmachine *m, struct errbuf *e)
{
    return machine_ensure(db, "remote", m->host, m->port, m->user, &m->row_id, e);
}

void remote_machine_record(struct worker *w, struct rmachine *m, int healthy, const char *error)
{
    struct errbuf e;
    if (!m->row_id && remote_machine_row(w->db, m, &e) < 0) {
        log_warn("machine %s: cannot record it: %s", m->label, e.msg);
        return;
    }
    if (machine_set_health(w->db, m->row_id, healthy, error, &e) < 0)
        log_warn("machine %s: cannot record its health: %s", m->label, e.msg);
    m->healthy = healthy;
}

void remote_machine_from_json(struct rmachine *m, const cJSON *it)
{
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(it, "port");
    m->host = xstrdup(remote_jstr(it, "host") ? remote_jstr(it, "host") : "");
    m->user = xstrdup(remote_jstr(it, "user") ? remote_jstr(it, "user") : "");
    m->port = cJSON_IsNumber(port) ? port->valueint : 22;
    m->password = remote_jstr(it, "password") ? xstrdup(remote_jstr(it, "password")) : NULL;
    if (!m->password) {
        const char *kf = remote_jstr(it, "sshKeyFile");
        m->key_file = kf ? path_abs(NULL, kf) : NULL;
        if (!m->key_file) {
            char *home = home_dir();
            m->key_file = xasprintf("%s/.ssh/id_rsa", home);
            free(home);
        }
    }
    m->passphrase = remote_jstr(it, "sshPassphrase") ? xstrdup(remote_jstr(it, "sshPassphrase")) : NULL;
    m->python_path = remote_jstr(it, "pythonPath") ? xstrdup(remote_jstr(it, "pythonPath")) : NULL;
    m->label = xasprintf("%s@%s:%d", m->user, m->host, m->port);
    m->display = m->port == 22 ? xstrdup(m->host) : xasprintf("%s:%d", m->host, m->port);
    m->healthy = 1;
}

void remote_machine_free(struct rmachine *m)
{
    ssh_shell_close(m->shell);
    ssh_close(m->conn);
    free(m->host); free(m->user); free(m->key_file); free(m->python_path);
    if (m->password) { memset(m->password, 0, strlen(m->password)); free(m->password); }
    if (m->passphrase) { memset(m->passphrase, 0, strlen(m->passphrase)); free(m->passphrase); }
    free(m->label); free(m->display); free(m->root); free(m->last_error);
    free(m->home_id); free(m->host_ident);
    for (int i = 0; i < m->npending; i++) {
        free(m->pending[i].rdir);
        free(m->pending[i].script);
    }
    free(m->pending);
    memset(m, 0, sizeof *m);
}

/* trainingService.knownHostsFile (default ~/.ssh/known_hosts), acceptNewHostKeys. */
void remote_hostkey_options(const cJSON *ts, char **known_hosts, int *accept_new)
{
    const char *kh = remote_jstr(ts, "knownHostsFile");
    if (kh) {
        *known_hosts = path_abs(NULL, kh);
    } else {
        char *home = home_dir();
        *known_hosts = xasprintf("%s/.ssh/known_hosts", home);
        free(home);
    }
    *accept_new = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ts, "acceptNewHostKeys"));
}

/* Runs a shell command in the machine's session; -1 when the connection is lost. */
int remote_run_cmd(struct rmachine *m, const char *cmd, const char *in, size_t inlen, struct strbuf *out,
                   int *status, struct errbuf *e)
{
    struct strbuf err;
    sb_init(&err);
    int rc = ssh_exec(m->conn, cmd, in, inlen, out, &err, status, e);
    if (rc == 0 && *status != 0 && err.len) {
        /* the first line of stderr says why */
        size_t n = err.len;
        const char *nl = memchr(err.buf, '\n', n);
        if (nl)
            n = (size_t)(nl - err.buf);
        errf(e, "%.*s", (int)(n > 300 ? 300 : n), err.buf);
    } else if (rc == 0 && *status != 0) {
        errf(e, "exit status %d", *status);
    }
    sb_free(&err);
    return rc;
}

void remote_conn_lost(struct worker *w, struct rmachine *m, const char *why)
{
    (void)w;
    ssh_shell_close(m->shell);
    m->shell = NULL;
    if (m->conn) {
        ssh_close(m->conn);
        m->conn = NULL;
    }
    int64_t now = mono_ms();
    if (!m->down_since) {
        m->down_since = now;
        m->backoff_ms = BACKOFF_MIN_MS;
        log_warn("machine %s: connection lost: %s; reconnecting", m->label, why);
    } else {
        m->backoff_ms = m->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : m->backoff_ms * 2;
    }
    m->next_try = now + m->backoff_ms;
    free(m->last_error);
    m->last_error = xstrdup(why);
}

/* The long-lived shell of a connection: the runner sourced once, stderr dropped. */
static int open_shell(struct rmachine *m, struct errbuf *e)
{
    struct strbuf cmd, init;
    sb_init(&cmd);
    sb_init(&init);
    remote_cmd_prefix(&cmd, m);
    sb_puts(&cmd, "exec sh -s");
    int rc = ssh_shell_open(m->conn, cmd.buf, &m->shell, e);
    if (rc == 0) {
        sb_puts(&init, "exec 2>/dev/null; TQ_RUNNER=");
        char *runner = xasprintf("%s/runner.sh", m->root);
        sh_quote(&init, runner);
        free(runner);
        /* the name its claims carry: what this machine placed (a home may be shared) */
        sb_puts(&init, " TQ_MACHINE=");
        sh_quote(&init, m->label);
        sb_puts(&init, "; . \"$TQ_RUNNER\"\n");
        rc = ssh_shell_send(m->shell, init.buf, init.len, e);
    }
    sb_free(&cmd);
    sb_free(&init);
    return rc;
}

/* Sends a script to the machine's shell and reads its answer (up to an end marker). */
static int shell_run(struct rmachine *m, const char *script, struct strbuf *out, struct errbuf *e)
{
    char tag[32], marker[48];
    remote_unique_tag(NULL, tag);
    snprintf(marker, sizeof marker, "%s\n", tag);
    struct strbuf s;
    sb_init(&s);
    sb_printf(&s, "%s\necho %s\n", script, tag);
    int rc = ssh_shell_send(m->shell, s.buf, s.len, e);
    if (rc == 0)
        rc = ssh_shell_recv(m->shell, marker, out, e);
    sb_free(&s);
    return rc;
}

/* Why the run (trial_id, attempt) found on machine m is not that trial's current attempt
 * held there, from its row: NULL when it is (then it is re-attached, never killed), and
 * when the row places that attempt on another machine (then it is that machine's). */
static char *run_not_current(struct worker *w, struct rmachine *m, const char *trial_id, int attempt,
                             struct errbuf *e)
{
    struct trial row;
    int found = trial_load(w->db, trial_id, &row, e);
    if (found < 0)
        return NULL;
    if (found && strcmp(row.experiment_id, w->exp_id) != 0) {
        trial_clear(&row);
        found = 0;
    }
    if (!found)
        return xstrdup("the trial is not in the database");
    char *why = NULL;
    const char *job = row.job_id;
    char mine[512];
    remote_make_job_id(mine, sizeof mine, m, attempt);
    if (trial_status_final(row.status))
        why = xasprintf("the trial has ended (%s)", row.status);
    else if (row.attempt > attempt)
        why = xasprintf("the trial was retried as attempt %d%s%s", row.attempt, job ? ", job " : " (not started yet)",
                        job ? job : "");
    else if (row.attempt < attempt)
        why = xasprintf("the database knows only attempt %d of the trial", row.attempt);
    else if (!job || strcmp(job, mine) != 0) {
        /* the database places it on another machine: what is seen of it here is that
         * machine's run, through a home both see (claims of an older runner name no
         * placement, so the runner's tq_runs cannot leave it out): it is looked for there */
        struct rmachine *there = remote_machine_of_job(w->platform, job, NULL);
        if (there && there != m)
            log_info("trial %s: attempt %d seen from %s is placed on %s (a shared home): left alone",
                     trial_id, attempt, m->label, there->label);
        else
            why = xasprintf("attempt %d is placed elsewhere (job %s)", row.attempt, job ? job : "none");
    }
    trial_clear(&row);
    return why;
}

/* At every (re)connect, before anything new is started on the machine: the runs of this
 * experiment still going on there that are no trial's current attempt held there are
 * killed (only runs this machine placed: tq_runs lists no other machine's, seen through
 * a home they share). A machine that was unreachable (a network partition, not a dead
 * host) had its trials retried elsewhere or later while their runs, detached from SSH,
 * went on: left alone, a trial would run twice. Decided from the rows alone, so a worker that has just
 * started (nothing adopted yet) keeps the current runs for re-attaching. Each kill is
 * logged and recorded as an event (entity 'process', RUNNING -> KILLED) before it is sent:
 * a worker killed in between leaves the run to the next connect, which sees it again and
 * kills it (a second event row, never a kill without one). */
static int end_orphan_runs(struct worker *w, struct rmachine *m, struct errbuf *e)
{
    struct strbuf script, out;
    sb_init(&script);
    sb_init(&out);
    sb_puts(&script, "tq_runs ");
    char *trials = xasprintf("%s/trials", m->root);
    sh_quote(&script, trials);
    free(trials);
    int rc = shell_run(m, script.buf, &out, e);
    sb_free(&script);
    struct orphan { char id[16]; int attempt; char *why; } *o = NULL;
    int n = 0;
    for (const char *p = out.buf; rc == 0 && p && *p;) {
        const char *nl = strchr(p, '\n');
        char id[16];
        int attempt, used = 0;
        if (sscanf(p, "run %15s %d%n", id, &attempt, &used) == 2 && used && (p[used] == '\n' || !p[used])) {
            struct errbuf qe;
            qe.msg[0] = '\0';
            char *why = run_not_current(w, m, id, attempt, &qe);
            if (qe.msg[0]) {
                rc = errf(e, "cannot check the runs left on it: %s", qe.msg);
            } else if (why) {
                o = xrealloc(o, sizeof *o * (size_t)(n + 1));
                snprintf(o[n].id, sizeof o[n].id, "%s", id);
                o[n].attempt = attempt;
                o[n].why = why;
                n++;
            }
        }
        p = nl ? nl + 1 : NULL;
    }
    if (rc == 0 && n) {
        rc = db_begin(w->db, e);
        for (int i = 0; rc == 0 && i < n; i++) {
            char *reason = xasprintf("attempt %d on %s: killing it: %s", o[i].attempt, m->label, o[i].why);
            rc = db_event(w->db, e, w->exp_id, o[i].id, "process", "RUNNING", "KILLED", reason);
            free(reason);
        }
        if (rc == 0)
            rc = db_commit(w->db, e);
        else
            db_rollback(w->db);
        if (rc < 0)
            errprefix(e, "cannot record the kill of runs left on it");
    }
    if (rc == 0 && n) {
        for (int i = 0; i < n; i++) {
            log_warn("trial %s: attempt %d on %s: killing it: %s", o[i].id, o[i].attempt, m->label, o[i].why);
            char *rdir = trial_dir_default(m->root, o[i].id);
            sb_puts(&script, "tq_kill ");
            sh_quote(&script, rdir);
            sb_printf(&script, " %d\n", o[i].attempt); /* only what tq_runs saw as this machine's */
            free(rdir);
        }
        sb_free(&out);
        rc = shell_run(m, script.buf, &out, e);
    }
    for (int i = 0; i < n; i++)
        free(o[i].why);
    free(o);
    sb_free(&script);
    sb_free(&out);
    return rc;
}

/* Who sees the machine's work dir (tq_ident): the id of its home and its host. An answer
 * it cannot read leaves them unknown (nothing depends on them but information). */
static int read_ident(struct rmachine *m, struct errbuf *e)
{
    struct strbuf out;
    sb_init(&out);
    int rc = shell_run(m, "tq_ident", &out, e);
    char home[80], mid[80], boot[80];
    if (rc == 0 && sscanf(out.buf ? out.buf : "", "ident %79s %79s %79s", home, mid, boot) == 3) {
        free(m->home_id);
        m->home_id = strcmp(home, "-") != 0 ? xstrdup(home) : NULL;
        free(m->host_ident);
        m->host_ident = xasprintf("%s %s", mid, boot);
    } else if (rc == 0) {
        log_warn("machine %s: cannot tell which home it sees (answer: %.80s)", m->label, out.buf ? out.buf : "");
    }
    sb_free(&out);
    return rc;
}

/* Machines that see one home (an NFS home; one host reached at two addresses) share the
 * experiment's work dir and every trial's files in it. That works: each acts only on the
 * trials it placed (the runner's claims name the placing machine and the host). So it is
 * information: stored for `nnictl experiment machines`, logged once per worker. */
static void note_shared_home(struct worker *w, struct remote_state *rs, struct rmachine *m)
{
    struct errbuf e;
    if (m->row_id && machine_set_home(w->db, m->row_id, m->home_id, &e) < 0)
        log_warn("machine %s: cannot record its home: %s", m->label, e.msg);
    if (!m->home_id || m->home_noted)
        return;
    struct strbuf names;
    sb_init(&names);
    int same_host = m->host_ident != NULL;
    for (int i = 0; i < rs->n; i++) {
        struct rmachine *o = &rs->m[i];
        if (o == m || !o->home_id || strcmp(o->home_id, m->home_id) != 0)
            continue;
        sb_printf(&names, "%s, ", o->label);
        same_host = same_host && o->host_ident && strcmp(o->host_ident, m->host_ident) == 0;
        o->home_noted = 1;
    }
    if (names.len) {
        m->home_noted = 1;
        const char *slash = strrchr(m->root, '/');
        int dirlen = slash ? (int)(slash - m->root) : (int)strlen(m->root);
        log_info("machines %s%s share one home directory (one %.*s/.trialq-home seen from each%s): the trials' "
                 "files are in one remote_place; each machine re-attaches to, polls and kills only the trials it placed",
                 names.buf, m->label, dirlen, m->root,
                 same_host ? "; one host too: the same machine id and boot id" : "");
    }
    sb_free(&names);
}

/* Connects (if due) and prepares a machine. 0 when usable. */
int remote_connect_machine(struct worker *w, struct remote_state *rs, struct rmachine *m, struct errbuf *e)
{
    if (m->conn)
        return 0;
    struct ssh_target t = {
        .host = m->host, .port = m->port, .user = m->user, .password = m->password,
        .key_file = m->key_file, .passphrase = m->passphrase, .known_hosts = rs->known_hosts,
        .accept_new_host_key = rs->accept_new, .connect_timeout_ms = CONNECT_TIMEOUT_MS,
        .op_timeout_ms = OP_TIMEOUT_MS,
    };
    enum ssh_failure why;
    int rc = ssh_connect(&t, &m->conn, &why, e);
    if (rc == 0) {
        rs->connections++;
        log_info("machine %s: SSH connection opened (%d opened by this worker)", m->label, rs->connections);
        rc = remote_prepare_machine(w, rs, m, e);
        if (rc == 0)
            rc = open_shell(m, e);
        if (rc == 0)
            rc = read_ident(m, e);
        /* before the machine takes anything new (and before its queued starts go out) */
        if (rc == 0)
            rc = end_orphan_runs(w, m, e);
    }
    if (rc < 0) {
        errprefix(e, "machine %s", m->label);
        remote_conn_lost(w, m, e->msg);
        return -1;
    }
    if (!m->row_id)
        remote_machine_row(w->db, m, e);
    note_shared_home(w, rs, m);
    remote_gpu_refresh_machine(w, m, 1);
    if (!m->conn)
        return -1; /* lost while asking for its GPUs */
    if (m->down_since)
        log_info("machine %s: reconnected", m->label);
    m->down_since = 0;
    m->backoff_ms = 0;
    free(m->last_error);
    m->last_error = NULL;
    if (!m->healthy)
        remote_machine_record(w, m, 1, NULL);
    return 0;
}

/* Reconnects a lost machine when its back-off allows; marks it down after a while. */
int remote_machine_usable(struct worker *w, struct rmachine *m)
{
    struct remote_state *rs = w->platform;
    if (m->conn)
        return 1;
    int64_t now = mono_ms();
    if (now >= m->next_try) {
        struct errbuf e;
        if (remote_connect_machine(w, rs, m, &e) == 0)
            return 1;
    }
    if (m->healthy && m->down_since && now - m->down_since >= DOWN_AFTER_MS) {
        log_error("machine %s is down: %s", m->label, m->last_error ? m->last_error : "unreachable");
        remote_machine_record(w, m, 0, m->last_error);
    }
    return 0;
}
