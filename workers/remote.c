/* remote.c: the remote platform (NNI's `remote` training service) over SSH with
 * libssh2. One connection per machine, reused for every exec and SFTP transfer, reopened
 * with back-off when it drops. The worker connects out; the remote hosts never reach
 * the manager.
 *
 * On each machine, under E = $HOME/nni-experiments/<experiment>:
 *   runner.sh          the POSIX sh runner (remote_runner.c), shipped at every start
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
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/trialenv.h"
#include "queue/gpu.h"
#include "queue/worker_queue.h"
#include "schema/worker_rows.h"
#include "schema/nnijson.h"
#include "workers/nniignore.h"
#include "workers/remote.h"
#include "workers/ssh.h"
#include "workers/worker.h"

#define CONNECT_TIMEOUT_MS 10000
#define OP_TIMEOUT_MS 30000
#define DOWN_AFTER_MS 8000       /* failing this long: the machine is marked unhealthy */
#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 30000
#define REMOTE_POLL_MS 50
#define STATUS_CAP (1 << 20)     /* bytes per file per poll */

/* A trial start not yet sent: submits go out in the machine's next batch. */
struct launch {
    char id[16];
    int attempt;
    char *rdir, *script;
};

struct rmachine {
    char *host, *user, *password, *key_file, *passphrase, *python_path;
    int port;
    char *label;      /* user@host:port: the job id names the machine by it */
    char *display;    /* host or host:port: trial.machine */
    int64_t row_id;   /* machine table */
    struct ssh_conn *conn;
    struct ssh_shell *shell; /* `sh -s` with the runner sourced: one per connection */
    char *root;       /* E, absolute */
    char *home_id;    /* who sees E (tq_ident): machines with one home id share a home */
    char *host_ident; /* "<machine id> <boot id>" of the host at the last connect */
    int home_noted;   /* its shared home was logged by this worker */
    int has_nni;      /* the host's python imports a real nni */
    int healthy;      /* as recorded in the machine table */
    int64_t down_since, next_try;
    int backoff_ms;
    int64_t snap_ms, seen_written_ms;
    char *last_error;
    struct launch *pending; /* trials to start with the next exec on this machine */
    int npending;
    struct gpu_need need;   /* this machine's GPU options (count: trialGpuNumber) */
    int64_t gpu_ms;         /* mono ms of the last nvidia-smi run */
};

struct rtrial {
    char id[16];
    int attempt;
    char state;       /* R F S V, 0: unknown */
    int rc;
    int64_t end;
    int complete;     /* the mirrors hold every byte the trial wrote */
    char why[160];    /* state E: why the runner could not start it */
    int killed;       /* a kill was asked for: never start it */
    int stopped;      /* F: a stop reached it before it ended (1), not (0), unknown (-1) */
};

struct remote_state {
    struct rmachine *m;
    int n;
    char *known_hosts;
    int accept_new;
    char *code_tgz, *sdk_tgz;
    int connections;  /* opened by this worker (the benchmark reads the log line) */
    int rr;
    struct rtrial *ts;
    int nts, capts;
    int gpus;             /* trialGpuNumber > 0: GPU slots are claimed per machine */
    char claimed_id[16];  /* the last trial claimed on ... */
    struct rmachine *claimed_on; /* ... this machine (its GPUs are there) */
};

/* ---------------- helpers ---------------- */

static char *local_dir_of(struct worker *w, const char *trial_id)
{
    return trial_dir_default(w->exp.exp_dir, trial_id);
}

static const char *jstr(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : 0;
}

static struct rmachine *machine_of_job(struct remote_state *rs, const char *job_id, int *attempt)
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

static struct rtrial *rtrial_get(struct remote_state *rs, const char *id, int create)
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
    struct rtrial *r = rtrial_get(rs, id, 0);
    if (r)
        *r = rs->ts[--rs->nts];
}

/* The machine's row (shared by every experiment of the database, like GPU rows). */
static int machine_row(struct db *db, struct rmachine *m, struct errbuf *e)
{
    return machine_ensure(db, "remote", m->host, m->port, m->user, &m->row_id, e);
}

static void machine_record(struct worker *w, struct rmachine *m, int healthy, const char *error)
{
    struct errbuf e;
    if (!m->row_id && machine_row(w->db, m, &e) < 0) {
        log_warn("machine %s: cannot record it: %s", m->label, e.msg);
        return;
    }
    if (machine_set_health(w->db, m->row_id, healthy, error, &e) < 0)
        log_warn("machine %s: cannot record its health: %s", m->label, e.msg);
    m->healthy = healthy;
}

static void machine_from_json(struct rmachine *m, const cJSON *it)
{
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(it, "port");
    m->host = xstrdup(jstr(it, "host") ? jstr(it, "host") : "");
    m->user = xstrdup(jstr(it, "user") ? jstr(it, "user") : "");
    m->port = cJSON_IsNumber(port) ? port->valueint : 22;
    m->password = jstr(it, "password") ? xstrdup(jstr(it, "password")) : NULL;
    if (!m->password) {
        const char *kf = jstr(it, "sshKeyFile");
        m->key_file = kf ? path_abs(NULL, kf) : NULL;
        if (!m->key_file) {
            char *home = home_dir();
            m->key_file = xasprintf("%s/.ssh/id_rsa", home);
            free(home);
        }
    }
    m->passphrase = jstr(it, "sshPassphrase") ? xstrdup(jstr(it, "sshPassphrase")) : NULL;
    m->python_path = jstr(it, "pythonPath") ? xstrdup(jstr(it, "pythonPath")) : NULL;
    m->label = xasprintf("%s@%s:%d", m->user, m->host, m->port);
    m->display = m->port == 22 ? xstrdup(m->host) : xasprintf("%s:%d", m->host, m->port);
    m->healthy = 1;
}

static void machine_free(struct rmachine *m)
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
static void hostkey_options(const cJSON *ts, char **known_hosts, int *accept_new)
{
    const char *kh = jstr(ts, "knownHostsFile");
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
static int run_cmd(struct rmachine *m, const char *cmd, const char *in, size_t inlen, struct strbuf *out,
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

static void conn_lost(struct worker *w, struct rmachine *m, const char *why)
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

/* ---------------- shipping ---------------- */

static int run_tar(char *const argv[], struct errbuf *e)
{
    pid_t pid = fork();
    if (pid < 0)
        return errf(e, "fork: %s", strerror(errno));
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return errf(e, "tar failed (status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

/* Packs the code directory (honouring .nniignore) and our SDK into two tar.gz files. */
static int pack(struct worker *w, struct remote_state *rs, struct errbuf *e)
{
    const cJSON *code = worker_config_item(w, "trialCodeDirectory");
    const char *root = cJSON_IsString(code) ? code->valuestring : ".";
    struct code_list cl;
    if (code_list_build(root, w->exp.config_file, &cl, e) < 0)
        return -1;
    char *dir = xasprintf("%s/.remote", w->exp.exp_dir);
    mkdir_p(dir, 0700);
    char *listf = xasprintf("%s/code.list", dir);
    rs->code_tgz = xasprintf("%s/nni-code.tar.gz", dir);
    rs->sdk_tgz = xasprintf("%s/sdk.tar.gz", dir);
    int rc = write_file_replace(listf, cl.paths, cl.len, 0600);
    log_info("code directory %s: %d files and directories, %lld bytes to ship", root, cl.entries,
             (long long)cl.bytes);
    code_list_free(&cl);
    if (rc < 0) {
        rc = errf(e, "cannot write %s: %s", listf, strerror(errno));
    } else {
        char *const targv[] = {"tar", "-czf", rs->code_tgz, "-C", (char *)root, "--no-recursion", "--null",
                               "-T", listf, NULL};
        rc = run_tar(targv, e);
        if (rc < 0)
            errprefix(e, "packing %s", root);
    }
    if (rc == 0) {
        char *exe = self_exe_path();
        char *sdk = xasprintf("%s/../share/trialq/python", exe);
        char *probe = xasprintf("%s/nni", sdk);
        if (access(probe, R_OK) != 0) {
            free(sdk);
            sdk = xstrdup(TRIALQ_SOURCE_DIR "/sdk/python");
        }
        char *const sargv[] = {"tar", "-czf", rs->sdk_tgz, "--exclude=__pycache__", "-C", sdk, "nni", NULL};
        rc = run_tar(sargv, e);
        if (rc < 0)
            errprefix(e, "packing the nni SDK of %s", sdk);
        free(probe);
        free(sdk);
        free(exe);
    }
    free(listf);
    free(dir);
    return rc;
}

/* What every command on the machine starts with (pythonPath first on PATH). */
static void cmd_prefix(struct strbuf *sb, const struct rmachine *m)
{
    if (m->python_path) {
        sb_puts(sb, "PATH=");
        sh_quote(sb, m->python_path);
        sb_puts(sb, ":\"$PATH\"; export PATH; ");
    }
}

/* Work dir, runner, code: everything a machine needs before its first trial. */
static int prepare_machine(struct worker *w, struct remote_state *rs, struct rmachine *m, struct errbuf *e)
{
    struct strbuf cmd, out;
    sb_init(&cmd);
    sb_init(&out);
    cmd_prefix(&cmd, m);
    /* the experiment's dir is the owner's alone (0700, as $NNI_HOME is here): parameters,
     * code and outputs stay private on a shared host whatever the files' own modes */
    sb_puts(&cmd, "E=\"$HOME/nni-experiments/\"");
    sh_quote(&cmd, w->exp_id); /* checked where it comes from (create, load), quoted all the same */
    sb_puts(&cmd, "; mkdir -p \"$E/trials\" && chmod 700 \"$E\" && "
                  "[ -w \"$E/trials\" ] || "
                  "{ echo \"cannot write to its work dir $E\" >&2; exit 3; }; "
                  "cat > \"$E/runner.sh.tmp\" && mv -f \"$E/runner.sh.tmp\" \"$E/runner.sh\" || exit 3; "
                  "echo \"$E\"; [ -f \"$E/nni-code/.trialq-shipped\" ] && echo shipped || echo new; "
                  "python3 -c 'import nni, nni.runtime' >/dev/null 2>&1 && echo nni || echo no-nni");
    int st;
    int rc = run_cmd(m, cmd.buf, remote_runner_sh, strlen(remote_runner_sh), &out, &st, e);
    sb_free(&cmd);
    if (rc < 0 || st != 0) {
        if (rc == 0)
            errprefix(e, "cannot prepare its work dir");
        sb_free(&out);
        return -1;
    }
    char root[4096] = "", shipped[32] = "", nni[32] = "";
    if (sscanf(out.buf ? out.buf : "", "%4095[^\n]\n%31s\n%31s", root, shipped, nni) != 3 || root[0] != '/') {
        sb_free(&out);
        return errf(e, "unexpected answer of the shell (a login banner on stdout?)");
    }
    sb_free(&out);
    free(m->root);
    m->root = xstrdup(root);
    m->has_nni = strcmp(nni, "nni") == 0;
    if (strcmp(shipped, "shipped") == 0)
        return 0;
    /* once per machine per experiment: upload, unpack, then mark it shipped */
    char *rc_tgz = xasprintf("%s/nni-code.tar.gz", root), *rs_tgz = xasprintf("%s/sdk.tar.gz", root);
    rc = ssh_put_file(m->conn, rs->code_tgz, rc_tgz, 0600, e);
    if (rc == 0)
        rc = ssh_put_file(m->conn, rs->sdk_tgz, rs_tgz, 0600, e);
    free(rc_tgz);
    free(rs_tgz);
    if (rc < 0)
        return errprefix(e, "cannot upload the code");
    sb_init(&cmd);
    sb_puts(&cmd, "cd ");
    sh_quote(&cmd, root);
    sb_puts(&cmd, " && rm -rf nni-code .trialq-sdk && mkdir -p nni-code .trialq-sdk"
                  " && tar -xzf nni-code.tar.gz -C nni-code && tar -xzf sdk.tar.gz -C .trialq-sdk"
                  " && rm -f nni-code.tar.gz sdk.tar.gz && : > nni-code/.trialq-shipped");
    rc = run_cmd(m, cmd.buf, NULL, 0, NULL, &st, e);
    sb_free(&cmd);
    if (rc < 0 || st != 0)
        return errprefix(e, "cannot unpack the code in %s", root);
    log_info("machine %s: code shipped to %s/nni-code", m->label, root);
    return 0;
}

/* The machine's GPUs from nvidia-smi over SSH (NNI's collector runs it every 5 s),
 * into the gpu table; a failure is stored as the machine's GPU error. */
static void gpu_refresh_machine(struct worker *w, struct rmachine *m, int force)
{
    struct remote_state *rs = w->platform;
    int64_t now = mono_ms();
    if (!rs->gpus || !m->conn || (!force && now - m->gpu_ms < GPU_REFRESH_MS))
        return;
    m->gpu_ms = now;
    struct strbuf cmd, out;
    sb_init(&cmd);
    sb_init(&out);
    cmd_prefix(&cmd, m);
    sb_puts(&cmd, GPU_NVSMI_COMMAND);
    int st = 0;
    struct errbuf e, e2;
    struct gpu_info *g = NULL;
    int n = 0;
    if (run_cmd(m, cmd.buf, NULL, 0, &out, &st, &e) < 0) {
        conn_lost(w, m, e.msg);
    } else if (st != 0 || gpu_parse_nvsmi(out.buf ? out.buf : "", out.len, &g, &n, &e) < 0) {
        char msg[1400];
        snprintf(msg, sizeof msg, "nvidia-smi on %s: %s", m->display, e.msg);
        if (gpu_store(w->db, m->row_id, NULL, 0, msg, &e2) < 0)
            log_warn("machine %s: %s", m->label, e2.msg);
    } else if (gpu_store(w->db, m->row_id, g, n, NULL, &e2) < 0) {
        log_warn("machine %s: cannot store its GPUs: %s", m->label, e2.msg);
    }
    free(g);
    sb_free(&cmd);
    sb_free(&out);
}

/* The long-lived shell of a connection: the runner sourced once, stderr dropped. */
static int open_shell(struct rmachine *m, struct errbuf *e)
{
    struct strbuf cmd, init;
    sb_init(&cmd);
    sb_init(&init);
    cmd_prefix(&cmd, m);
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

static void make_job_id(char *buf, size_t len, const struct rmachine *m, int attempt);
static void unique_tag(const char *text, char tag[32]);

/* Sends a script to the machine's shell and reads its answer (up to an end marker). */
static int shell_run(struct rmachine *m, const char *script, struct strbuf *out, struct errbuf *e)
{
    char tag[32], marker[48];
    unique_tag(NULL, tag);
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
    make_job_id(mine, sizeof mine, m, attempt);
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
        struct rmachine *there = machine_of_job(w->platform, job, NULL);
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
                 "files are in one place; each machine re-attaches to, polls and kills only the trials it placed",
                 names.buf, m->label, dirlen, m->root,
                 same_host ? "; one host too: the same machine id and boot id" : "");
    }
    sb_free(&names);
}

/* Connects (if due) and prepares a machine. 0 when usable. */
static int connect_machine(struct worker *w, struct remote_state *rs, struct rmachine *m, struct errbuf *e)
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
        rc = prepare_machine(w, rs, m, e);
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
        conn_lost(w, m, e->msg);
        return -1;
    }
    if (!m->row_id)
        machine_row(w->db, m, e);
    note_shared_home(w, rs, m);
    gpu_refresh_machine(w, m, 1);
    if (!m->conn)
        return -1; /* lost while asking for its GPUs */
    if (m->down_since)
        log_info("machine %s: reconnected", m->label);
    m->down_since = 0;
    m->backoff_ms = 0;
    free(m->last_error);
    m->last_error = NULL;
    if (!m->healthy)
        machine_record(w, m, 1, NULL);
    return 0;
}

/* Reconnects a lost machine when its back-off allows; marks it down after a while. */
static int machine_usable(struct worker *w, struct rmachine *m)
{
    struct remote_state *rs = w->platform;
    if (m->conn)
        return 1;
    int64_t now = mono_ms();
    if (now >= m->next_try) {
        struct errbuf e;
        if (connect_machine(w, rs, m, &e) == 0)
            return 1;
    }
    if (m->healthy && m->down_since && now - m->down_since >= DOWN_AFTER_MS) {
        log_error("machine %s is down: %s", m->label, m->last_error ? m->last_error : "unreachable");
        machine_record(w, m, 0, m->last_error);
    }
    return 0;
}

/* ---------------- platform ops ---------------- */

static void remote_destroy(struct worker *w)
{
    struct remote_state *rs = w->platform;
    if (!rs)
        return;
    for (int i = 0; i < rs->n; i++)
        machine_free(&rs->m[i]);
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
    hostkey_options(ts, &rs->known_hosts, &rs->accept_new);
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ts, "reuseMode")))
        log_warn("trainingService.reuseMode is ignored: trialq runs each remote trial directly "
                 "(no trial runner environment)");
    rs->n = cJSON_GetArraySize(list);
    rs->m = xcalloc((size_t)rs->n, sizeof *rs->m);
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, list)
        machine_from_json(&rs->m[i++], it);
    /* GPUs: trialGpuNumber of the experiment, the other options per machine */
    struct gpu_need base;
    rs->gpus = gpu_need_from_config(w->exp.config, "remote", &base) > 0;
    i = 0;
    cJSON_ArrayForEach(it, list) {
        struct rmachine *m = &rs->m[i++];
        gpu_need_from_json(it, ts, &m->need);
        m->need.count = base.count;
    }
    if (pack(w, rs, e) < 0) {
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
        if (machine_row(w->db, m, &me) < 0)
            log_warn("machine %s: %s", m->label, me.msg);
        if (connect_machine(w, rs, m, &me) == 0) {
            machine_record(w, m, 1, NULL);
            ok++;
            continue;
        }
        log_error("%s", me.msg);
        machine_record(w, m, 0, me.msg);
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

static int held_on(struct worker *w, struct rmachine *m)
{
    struct remote_state *rs = w->platform;
    int n = 0;
    for (int i = 0; i < w->ntrials; i++)
        if (machine_of_job(rs, w->trials[i].t.job_id, NULL) == m)
            n++;
    return n;
}

static int remote_can_claim(struct worker *w)
{
    struct remote_state *rs = w->platform;
    /* (no trial is claimed once a stop is asked for: the queue's claim checks that for
     * every platform) */
    struct errbuf e;
    int any = 0;
    for (int i = 0; i < rs->n; i++)
        if (machine_usable(w, &rs->m[i]))
            any = 1;
    if (!any) {
        struct strbuf why;
        sb_init(&why);
        sb_puts(&why, "no machine is reachable");
        for (int i = 0; i < rs->n; i++)
            sb_printf(&why, "%s%s: %.200s", i ? "; " : " (", rs->m[i].display,
                      rs->m[i].last_error ? rs->m[i].last_error : "not connected");
        sb_puts(&why, ")");
        queue_set_waiting_reason(w->db, w->exp_id, w->ops->name, why.buf, &e);
        sb_free(&why);
    }
    return any;
}

static void remote_refresh(struct worker *w)
{
    struct remote_state *rs = w->platform;
    for (int i = 0; i < rs->n; i++)
        gpu_refresh_machine(w, &rs->m[i], 0);
}

static int held_on(struct worker *w, struct rmachine *m);

/* With GPUs: one claim per machine (least loaded first) that has the slots, in the same
 * transaction as the trial; the trial then starts there. Without: a plain claim. */
static int remote_claim(struct worker *w, struct trial *out, struct errbuf *e)
{
    struct remote_state *rs = w->platform;
    if (!rs->gpus)
        return queue_claim(w->db, w->exp_id, w->ops->name, w->owner, w->lease_ms, out, e);
    struct strbuf why;
    sb_init(&why);
    int *order = xcalloc((size_t)rs->n + 1, sizeof *order), n = 0;
    for (int i = 0; i < rs->n; i++)
        if (rs->m[i].conn && rs->m[i].row_id)
            order[n++] = i;
    for (int a = 1; a < n; a++) /* least loaded first */
        for (int b = a; b > 0 && held_on(w, &rs->m[order[b]]) < held_on(w, &rs->m[order[b - 1]]); b--) {
            int x = order[b];
            order[b] = order[b - 1];
            order[b - 1] = x;
        }
    for (int k = 0; k < n; k++) {
        struct rmachine *m = &rs->m[order[k]];
        char reason[256] = "";
        int rc = queue_claim_on(w->db, w->exp_id, w->ops->name, w->owner, w->lease_ms, m->row_id, &m->need, out,
                                reason, sizeof reason, e);
        if (rc < 0) {
            sb_free(&why);
            free(order);
            return -1;
        }
        if (rc == 1) {
            snprintf(rs->claimed_id, sizeof rs->claimed_id, "%s", out->id);
            rs->claimed_on = m;
            sb_free(&why);
            free(order);
            return 1;
        }
        if (reason[0]) {
            /* "needs 2 GPUs; host a has 1 free, 0 idle": one clause per machine */
            const char *semi = strstr(reason, "; ");
            if (!why.len || !semi)
                sb_puts(&why, why.len ? "; " : "");
            sb_puts(&why, why.len && semi ? semi : reason);
        }
    }
    if (why.len) {
        struct errbuf e2;
        queue_set_waiting_reason(w->db, w->exp_id, w->ops->name, why.buf, &e2);
    }
    sb_free(&why);
    free(order);
    return 0;
}

static struct rmachine *place(struct worker *w)
{
    struct remote_state *rs = w->platform;
    struct rmachine *best = NULL;
    int best_n = 0;
    for (int k = 0; k < rs->n; k++) {
        struct rmachine *m = &rs->m[(rs->rr + k) % rs->n];
        if (!m->conn)
            continue;
        int n = held_on(w, m);
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

static void make_job_id(char *buf, size_t len, const struct rmachine *m, int attempt)
{
    snprintf(buf, len, "remote:%s:%d", m->label, attempt);
}

/* Keeps the mirror of an earlier attempt beside, like the local platform. */
static int local_mirror(struct worker *w, struct trial *t, char **dir_out, struct errbuf *e)
{
    char *dir = local_dir_of(w, t->id);
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

static void pending_drop(struct rmachine *m, const char *id)
{
    for (int i = 0; i < m->npending; i++)
        if (strcmp(m->pending[i].id, id) == 0) {
            free(m->pending[i].rdir);
            free(m->pending[i].script);
            m->pending[i] = m->pending[--m->npending];
            return;
        }
}

static void pending_add(struct worker *w, struct rmachine *m, struct trial *t)
{
    pending_drop(m, t->id);
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
static int remote_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    struct remote_state *rs = w->platform;
    int att = 0;
    struct rmachine *m = machine_of_job(rs, t->job_id, &att);
    if (m && att != t->attempt)
        m = NULL;
    int again = m != NULL; /* a job of this attempt may exist: the runner re-attaches */
    if (m && !m->root && !machine_usable(w, m))
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
        m = place(w);
    if (!m)
        return errf(e, "no machine is reachable");
    char *ldir = NULL;
    if (local_mirror(w, t, &ldir, e) < 0)
        return -1;
    char jid[512];
    make_job_id(jid, sizeof jid, m, t->attempt);
    /* the placement is recorded before the job starts: a worker that dies in between
     * is followed by one that re-attaches on the same machine, never a second job */
    if (!again && trial_set_job(w->db, t->id, w->owner, jid, ldir, e) < 0) {
        free(ldir);
        return -1;
    }
    pending_add(w, m, t);
    *job_id = xstrdup(jid);
    *trial_dir = ldir;
    free(t->job_id);
    t->job_id = xstrdup(jid);
    struct rtrial *r = rtrial_get(rs, t->id, 1);
    r->attempt = t->attempt;
    r->state = 0;
    r->killed = 0;
    return 0;
}

static int append_file(const char *path, const char *buf, size_t n)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < n) {
        ssize_t r = write(fd, buf + off, n - off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        off += (size_t)r;
    }
    return close(fd);
}

static const char *const mirror_files[3] = {".nni/metrics", "trial.stdout", "trial.stderr"};

/* A here-document delimiter / end marker that does not occur in the text. */
static void unique_tag(const char *text, char tag[32])
{
    do {
        unsigned char r[8];
        random_bytes(r, sizeof r);
        snprintf(tag, 32, "TQ_EOF_%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    } while (text && strstr(text, tag));
}

/* One batch for a machine: its queued starts, then the status of every trial this
 * worker holds there (with the mirrors' sizes as offsets). */
struct batch {
    struct rmachine *m;
    struct strbuf script;
    char marker[48];
    int *idx, n, nsub;
};

static int batch_build(struct worker *w, struct rmachine *m, struct batch *b)
{
    struct remote_state *rs = w->platform;
    memset(b, 0, sizeof *b);
    b->m = m;
    sb_init(&b->script);
    b->nsub = m->npending;
    char *code = xasprintf("%s/nni-code", m->root);
    for (int i = 0; i < b->nsub; i++) {
        struct launch *l = &m->pending[i];
        char tag[32];
        unique_tag(l->script, tag);
        sb_puts(&b->script, "tq_submit ");
        sh_quote(&b->script, l->rdir);
        sb_printf(&b->script, " %d ", l->attempt);
        sh_quote(&b->script, code);
        sb_printf(&b->script, " <<'%s'\n%s%s\n", tag, l->script, tag);
    }
    free(code);
    sb_printf(&b->script, "tq_status %d", STATUS_CAP);
    b->idx = xcalloc((size_t)w->ntrials + 1, sizeof *b->idx);
    for (int i = 0; i < w->ntrials; i++) {
        struct trial *t = &w->trials[i].t;
        int att = 0;
        if (strcmp(t->status, "RUNNING") != 0 || machine_of_job(rs, t->job_id, &att) != m || att != t->attempt)
            continue;
        char *rdir = trial_dir_default(m->root, t->id);
        char *ldir = local_dir_of(w, t->id);
        sb_puts(&b->script, " ");
        sh_quote(&b->script, rdir);
        sb_printf(&b->script, " %d", t->attempt);
        for (int f = 0; f < 3; f++) {
            char *p = xasprintf("%s/%s", ldir, mirror_files[f]);
            sb_printf(&b->script, " %lld", (long long)file_size(p));
            free(p);
        }
        free(rdir);
        free(ldir);
        b->idx[b->n++] = i;
    }
    char tag[32];
    unique_tag(NULL, tag);
    snprintf(b->marker, sizeof b->marker, "%s\n", tag);
    sb_printf(&b->script, "\necho %s\n", tag);
    return b->n + b->nsub;
}

static void batch_free(struct batch *b)
{
    sb_free(&b->script);
    free(b->idx);
}

const char *remote_status_parse(const char *p, const char *end, int n, struct remote_status *h)
{
    if ((size_t)(end - p) < 7 || strncmp(p, "status\n", 7) != 0)
        return NULL;
    p += 7;
    /* headers "<state> <rc> <end> <stopped> <n1> <n2> <n3>", then "data" and the bytes in order */
    for (int i = 0; i < n; i++) {
        int used = 0;
        if (sscanf(p, "%c %d %lld %d %lld %lld %lld\n%n", &h[i].state, &h[i].rc, &h[i].end, &h[i].stopped,
                   &h[i].len[0], &h[i].len[1], &h[i].len[2], &used) < 7 || !used)
            return NULL;
        p += used;
    }
    if ((size_t)(end - p) < 5 || strncmp(p, "data\n", 5) != 0)
        return NULL;
    return p + 5;
}

/* Applies a machine's answer: submit results, states, new bytes into the mirrors. */
/* The runner's answers to the batch's starts ("submit ok" / "submit error <why>"), one
 * line each: the answered starts leave the queue (the rest go again next time). Returns
 * where the answers end, or NULL when not every start was answered. */
static const char *apply_submits(struct remote_state *rs, struct batch *b, const char *p, const char *end)
{
    struct rmachine *m = b->m;
    int answered = 0;
    for (int i = 0; i < b->nsub; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl || strncmp(p, "submit ", 7) != 0)
            break;
        struct launch *l = &m->pending[i];
        if (strncmp(p + 7, "error ", 6) == 0) {
            struct rtrial *r = rtrial_get(rs, l->id, 1);
            r->attempt = l->attempt;
            r->state = 'E';
            snprintf(r->why, sizeof r->why, "machine %s cannot start it: %.*s", m->display,
                     (int)(nl - (p + 13) > 100 ? 100 : nl - (p + 13)), p + 13);
        }
        answered++;
        p = nl + 1;
    }
    for (int i = 0; i < answered; i++) {
        free(m->pending[i].rdir);
        free(m->pending[i].script);
    }
    if (answered) {
        memmove(m->pending, m->pending + answered, sizeof *m->pending * (size_t)(m->npending - answered));
        m->npending -= answered;
    }
    return answered < b->nsub ? NULL : p;
}

/* Appends the bytes each mirrored file gained (h->len[f] of them at *p) to the trial's
 * local mirror; r->complete when no file hit STATUS_CAP. -1: fewer bytes than announced. */
static int apply_bytes(struct worker *w, const struct trial *t, struct rtrial *r, const struct remote_status *h,
                       const char **p, const char *end)
{
    char *ldir = local_dir_of(w, t->id);
    int rc = 0;
    r->complete = 1;
    for (int f = 0; f < 3 && rc == 0; f++) {
        long long len = h->len[f];
        if (len < 0 || len > end - *p) {
            rc = -1;
            break;
        }
        if (len > 0) {
            char *path = xasprintf("%s/%s", ldir, mirror_files[f]);
            if (append_file(path, *p, (size_t)len) < 0)
                log_warn("trial %s: cannot write %s: %s", t->id, path, strerror(errno));
            free(path);
        }
        if (len == STATUS_CAP)
            r->complete = 0;
        *p += len;
    }
    free(ldir);
    return rc;
}

/* The state the runner reports for trial t on machine m. */
static void apply_state(struct worker *w, struct rmachine *m, struct trial *t, struct rtrial *r,
                        const struct remote_status *h)
{
    if (r->state == 'E')
        return; /* keeps the reason until poll reports it */
    r->state = h->state;
    r->rc = h->rc;
    r->end = h->end;
    r->stopped = h->stopped;
    if (h->state != 'N')
        return;
    if (r->killed) {
        /* asked to end before it ever started: it ends without running */
        r->state = 'F';
        r->rc = 143;
        r->end = now_ms();
        r->stopped = 1;
        return;
    }
    /* never started there (a worker died before its batch went out): start it now */
    int queued = 0;
    for (int i = 0; i < m->npending && !queued; i++)
        queued = strcmp(m->pending[i].id, t->id) == 0;
    if (!queued) {
        log_info("trial %s: not started on %s yet; starting it", t->id, m->label);
        pending_add(w, m, t);
    }
}

static void batch_apply(struct worker *w, struct batch *b, const char *p, const char *end)
{
    struct remote_state *rs = w->platform;
    struct rmachine *m = b->m;
    p = apply_submits(rs, b, p, end);
    if (!p) {
        log_warn("machine %s: malformed answer of the runner", m->label);
        return;
    }
    struct remote_status *h = xcalloc((size_t)b->n + 1, sizeof *h);
    p = remote_status_parse(p, end, b->n, h);
    if (!p) {
        log_warn("machine %s: malformed status answer", m->label);
        free(h);
        return;
    }
    for (int k = 0; k < b->n; k++) {
        struct trial *t = &w->trials[b->idx[k]].t;
        struct rtrial *r = rtrial_get(rs, t->id, 1);
        r->attempt = t->attempt;
        if (apply_bytes(w, t, r, &h[k], &p, end) < 0) {
            log_warn("machine %s: status answer shorter than announced", m->label);
            break;
        }
        apply_state(w, m, t, r, &h[k]);
    }
    free(h);
    int64_t now = mono_ms();
    if (now - m->seen_written_ms > 5000) {
        struct errbuf e2;
        if (machine_set_seen(w->db, m->row_id, &e2) < 0)
            log_limited(LOG_WARN, "machine %s: cannot record it seen: %s", m->label, e2.msg);
        m->seen_written_ms = now;
    }
}

/* One round trip per machine, all machines at once: every batch is sent before any
 * answer is read, so the machines work in parallel. */
static void refresh_all(struct worker *w)
{
    struct remote_state *rs = w->platform;
    struct batch *b = xcalloc((size_t)rs->n, sizeof *b);
    int64_t now = mono_ms();
    for (int i = 0; i < rs->n; i++) {
        struct rmachine *m = &rs->m[i];
        b[i].m = NULL;
        if (!m->shell)
            continue;
        m->snap_ms = now;
        if (batch_build(w, m, &b[i]) == 0) {
            batch_free(&b[i]);
            b[i].m = NULL;
            continue;
        }
        struct errbuf e;
        if (ssh_shell_send(m->shell, b[i].script.buf, b[i].script.len, &e) < 0) {
            conn_lost(w, m, e.msg); /* the queued starts stay queued: resent after reconnecting */
            batch_free(&b[i]);
            b[i].m = NULL;
        }
    }
    for (int i = 0; i < rs->n; i++) {
        if (!b[i].m)
            continue;
        struct rmachine *m = b[i].m;
        struct strbuf out;
        sb_init(&out);
        struct errbuf e;
        if (m->shell && ssh_shell_recv(m->shell, b[i].marker, &out, &e) == 0)
            batch_apply(w, &b[i], out.buf ? out.buf : "", (out.buf ? out.buf : "") + out.len);
        else if (m->shell)
            conn_lost(w, m, e.msg);
        sb_free(&out);
        batch_free(&b[i]);
    }
    free(b);
}

static int remote_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    (void)e;
    struct remote_state *rs = w->platform;
    memset(js, 0, sizeof *js);
    int att = 0;
    struct rmachine *m = machine_of_job(rs, t->job_id, &att);
    if (!m || att != t->attempt) {
        js->vanished = 1;
        snprintf(js->why, sizeof js->why, "its job %s names no machine of machineList", t->job_id ? t->job_id : "");
        return 0;
    }
    if (!machine_usable(w, m)) {
        if (!m->healthy) {
            js->vanished = 1;
            snprintf(js->why, sizeof js->why, "machine %s is down (%.120s)", m->display,
                     m->last_error ? m->last_error : "unreachable");
            rtrial_drop(rs, t->id);
            pending_drop(m, t->id);
        }
        return 0;
    }
    struct rtrial *r = rtrial_get(rs, t->id, 0);
    if (m->npending || !r || r->attempt != t->attempt || !r->state || mono_ms() - m->snap_ms >= REMOTE_POLL_MS / 2)
        refresh_all(w);
    r = rtrial_get(rs, t->id, 0);
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
    struct rmachine *m = machine_of_job(rs, t->job_id, &att);
    if (!m)
        return errf(e, "job %s names no machine", t->job_id ? t->job_id : "(none)");
    struct rtrial *kr = rtrial_get(rs, t->id, 1);
    if (kr->attempt != t->attempt) {
        kr->attempt = t->attempt;
        kr->state = 0;
    }
    kr->killed = 1;
    for (int i = 0; i < m->npending; i++)
        if (strcmp(m->pending[i].id, t->id) == 0) {
            /* not started yet: nothing runs, so it ends here */
            pending_drop(m, t->id);
            struct rtrial *r = rtrial_get(rs, t->id, 1);
            r->attempt = t->attempt;
            r->state = 'F';
            r->rc = 143;
            r->end = now_ms();
            r->stopped = 1;
            r->complete = 1;
            return 0;
        }
    if (!machine_usable(w, m))
        return errf(e, "machine %s is unreachable: %s", m->label, m->last_error ? m->last_error : "");
    struct strbuf script, out;
    sb_init(&script);
    sb_init(&out);
    char *rdir = trial_dir_default(m->root, t->id);
    char tag[32], marker[48];
    unique_tag(NULL, tag);
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
        conn_lost(w, m, e->msg);
        return -1;
    }
    m->snap_ms = 0; /* look again soon */
    return 0;
}

/* Metrics and output are read from the local mirror of the trial dir (the poll copies
 * the new bytes over the machine's session): no network I/O inside the transaction. */
static int remote_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    char *dir = local_dir_of(w, t->id);
    int rc = collect_trial_dir(w->db, t, dir, NULL, at_end, e);
    free(dir);
    return rc;
}

static int remote_pending(struct worker *w, struct trial *t)
{
    char *dir = local_dir_of(w, t->id);
    int r = trial_dir_grew(t, dir, NULL);
    free(dir);
    return r;
}

static const char *remote_machine_of(struct worker *w, const struct trial *t)
{
    struct rmachine *m = machine_of_job(w->platform, t->job_id, NULL);
    return m ? m->display : NULL;
}

static int remote_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e);

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
    hostkey_options(ts, &known_hosts, &accept_new);
    struct strbuf failed;
    sb_init(&failed);
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        struct rmachine m;
        memset(&m, 0, sizeof m);
        machine_from_json(&m, it);
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
            cmd_prefix(&cmd, &m);
            sb_puts(&cmd, "mkdir -p \"$HOME/nni-experiments\" && [ -w \"$HOME/nni-experiments\" ] || "
                          "{ echo \"cannot write to its work dir $HOME/nni-experiments\" >&2; exit 3; }");
            int st;
            rc = run_cmd(&m, cmd.buf, NULL, 0, NULL, &st, &me);
            if (rc == 0 && st != 0)
                rc = -1;
            sb_free(&cmd);
        }
        if (rc < 0)
            sb_printf(&failed, "%smachine %s: %s", failed.len ? "; " : "", m.label, me.msg);
        machine_free(&m);
    }
    free(known_hosts);
    int rc = 0;
    if (failed.len)
        rc = errf(e, "%s", failed.buf);
    sb_free(&failed);
    return rc;
}
