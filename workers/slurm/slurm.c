/* slurm.c: the Slurm platform (docs/platforms/slurm.md). One batch job per trial attempt,
 * named nni-<exp>-<trial> with the comment trialq:<exp>:<trial>:<attempt>
 * (workers/slurm/slurm_cmd.c builds the command line and the batch script and reads squeue's
 * answer).
 *
 * Two modes, one seam (sl_exec: run this argv here or on the login node; sl_put: write
 * this file here or there): the local mode runs sbatch, squeue and scancel on this host;
 * the SSH mode (loginNode) runs them on the login node over one libssh2 session
 * (workers/ssh.c, as the remote platform; known_hosts checked; reopened when it drops)
 * and writes the trial files there, as the login user. Both read the trial dirs (exit
 * record, metrics, output) on this host's view of sharedDirectory: the same path (the
 * cluster's filesystem mounted here, e.g. NFS or sshfs).
 *
 * Status: ONE `squeue -t all --json` per poll interval for all of the experiment's jobs
 * (Slurm 22.05 ignores -j/-n with --json): the batched poll (slurm_poll_all), paced and
 * backed off by the worker loop; each trial's poll is answered from its answer. The
 * batch script writes <trial dir>/.nni/slurm_exit at its end, so an end is known after
 * squeue forgot the job, and also while squeue does not answer.
 *
 * Crash safety: before sbatch, submit looks for a job of this trial and attempt in a
 * squeue answer taken after this worker started (a dead worker's jobs are all in it) and
 * re-attaches to it; after sbatch, .nni/slurm_job.<attempt> records the job id. A job
 * that squeue no longer lists, without an exit record, has vanished (retried per
 * maxTrialRetries).
 *
 * Stop: `scancel --full --signal=INT` (SIGINT reaches the trial command, as a local
 * trial's stop), then a plain scancel once KILL_GRACE_MS passed; a job still pending is
 * cancelled at once. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema/nnijson.h"
#include "workers/slurm/slurm_cmd.h"
#include "workers/ssh.h"
#include "workers/worker.h"

#define POLL_MS 1000        /* one squeue per second for the whole experiment */
#define CMD_TIMEOUT_MS 30000
#define KILL_GRACE_MS 10000 /* after the SIGINT, scancel (SIGTERM, then SIGKILL) */
#define CONNECT_TIMEOUT_MS 10000

/* A job this worker submitted or asked to end. */
struct sl_job {
    char *trial_id;
    int attempt;
    long long job_id;
    int64_t submitted_ms; /* wall ms of our sbatch (0: not ours) */
    int64_t kill_ms;      /* wall ms of the SIGINT (0: none sent) */
    int cancelled;        /* the plain scancel was sent */
};

struct slurm {
    char *root;                 /* <sharedDirectory>/<exp>, or the experiment's dir */
    struct slurm_job *jobs;     /* the last squeue answer: the experiment's jobs */
    int njobs;
    int64_t fetched_ms;         /* wall ms when that answer was asked for (0: none) */
    int64_t failed_ms;          /* wall ms when squeue last failed (0: it answered since) */
    char failed[512];           /* ... and why */
    int list_failed;            /* the last listing (slurm_poll_all) failed: polls answer from
                                 * exit records only */
    int64_t started_ms;         /* wall ms of init */
    int poll_ms;
    struct sl_job *mine;
    int nmine, capmine;
    /* the SSH mode (login.host NULL: the local mode) */
    struct {
        char *host, *user, *password, *key_file, *known_hosts, *label;
        int port, accept_new;
    } login;
    struct ssh_conn *conn; /* the login node's session, opened when first needed */
    int connections;       /* sessions opened (logged: a reconnect shows) */
    int recheck;           /* an sbatch may have been taken without our knowing its job id
                            * (a timeout, a dropped session): the next submit asks squeue */
};

static void jobs_drop(struct slurm *s)
{
    slurm_jobs_free(s->jobs, s->njobs);
    s->jobs = NULL;
    s->njobs = 0;
}

static const char *login_str(const cJSON *ln, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ln, k);
    return cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : NULL;
}

/* The SSH mode's settings from trainingService.loginNode (none: the local mode). */
static void login_setup(struct slurm *s, const cJSON *ts)
{
    const cJSON *ln = cJSON_GetObjectItemCaseSensitive(ts, "loginNode");
    if (!cJSON_IsObject(ln))
        return;
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(ln, "port");
    s->login.host = xstrdup(login_str(ln, "host") ? login_str(ln, "host") : "");
    s->login.user = xstrdup(login_str(ln, "user") ? login_str(ln, "user") : "");
    s->login.port = cJSON_IsNumber(port) ? port->valueint : 22;
    s->login.password = login_str(ln, "password") ? xstrdup(login_str(ln, "password")) : NULL;
    char *home = home_dir();
    const char *kf = login_str(ln, "sshKeyFile");
    s->login.key_file = kf ? path_abs(NULL, kf) : xasprintf("%s/.ssh/id_rsa", home);
    const cJSON *kh = cJSON_GetObjectItemCaseSensitive(ts, "knownHostsFile");
    s->login.known_hosts = cJSON_IsString(kh) ? path_abs(NULL, kh->valuestring)
                                              : xasprintf("%s/.ssh/known_hosts", home);
    free(home);
    s->login.accept_new = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ts, "acceptNewHostKeys"));
    s->login.label = xasprintf("%s@%s:%d", s->login.user, s->login.host, s->login.port);
}

static void login_drop(struct slurm *s)
{
    ssh_close(s->conn);
    s->conn = NULL;
}

static void login_free(struct slurm *s)
{
    login_drop(s);
    if (s->login.password)
        memset(s->login.password, 0, strlen(s->login.password));
    free(s->login.host);
    free(s->login.user);
    free(s->login.password);
    free(s->login.key_file);
    free(s->login.known_hosts);
    free(s->login.label);
    memset(&s->login, 0, sizeof s->login);
}

static int login_connect(struct slurm *s, struct errbuf *e)
{
    if (s->conn)
        return 0;
    struct ssh_target t = {
        .host = s->login.host, .port = s->login.port, .user = s->login.user, .password = s->login.password,
        .key_file = s->login.key_file, .known_hosts = s->login.known_hosts,
        .accept_new_host_key = s->login.accept_new, .connect_timeout_ms = CONNECT_TIMEOUT_MS,
        .op_timeout_ms = CMD_TIMEOUT_MS,
    };
    enum ssh_failure why;
    struct errbuf ce;
    if (ssh_connect(&t, &s->conn, &why, &ce) < 0)
        return errf(e, "login node %s: %s", s->login.label, ce.msg);
    s->connections++;
    if (s->started_ms) /* the worker's; nnictl create's check stays quiet */
        log_info("login node %s: SSH session opened (%d opened by this process)", s->login.label, s->connections);
    return 0;
}

/* The command's failure as run_capture's status says it (-1: not run, -2: timed out). */
static int cmd_failed(const char *cmd, const char *where, int st, const char *out, const char *err,
                      struct errbuf *e)
{
    char shown[SNIPPET_SIZE];
    const char *why = err && err[0] ? err : out ? out : "";
    if (st == -2)
        return errf(e, "%s%s: no answer in %d s", cmd, where, CMD_TIMEOUT_MS / 1000);
    if (st == -1 || st == 127)
        return errf(e, "%s%s: cannot run it (is the Slurm client installed and on PATH%s?)", cmd, where,
                    where[0] ? " there" : "");
    size_t len = strlen(why);
    while (len && (why[len - 1] == '\n' || why[len - 1] == ' ')) /* Slurm's last newline */
        len--;
    return errf(e, "%s%s failed (status %d): %s", cmd, where, st, snippet(shown, why, len));
}

/* The seam of the two modes: runs argv on this host or, in the SSH mode, on the login
 * node, feeding `in` (SSH mode only; may be NULL) on its stdin. 0 with *out (out may be
 * NULL; caller frees), or < 0 with e naming the command: SL_RETRY when the cause should
 * pass (no answer in time, the login node unreachable, the controller not answering:
 * slurm_sbatch_transient), -1 otherwise. A session found dropped is reopened and the
 * command run again when `again` allows (a command that may run twice); otherwise
 * SL_LOST: it is not known whether it ran. */
#define SL_LOST (-3)
#define SL_RETRY (-4)
static int sl_exec(struct slurm *s, char *const argv[], const char *in, size_t inlen, int again, char **out,
                   struct errbuf *e)
{
    if (!s->login.host) {
        char *o = NULL, *er = NULL;
        int st = run_capture(argv, CMD_TIMEOUT_MS, &o, &er);
        int rc = st != 0 ? cmd_failed(argv[0], "", st, o, er, e) : 0;
        free(er);
        if (rc == 0 && out)
            *out = o ? o : xstrdup("");
        else
            free(o);
        return rc < 0 && (st == -2 || slurm_sbatch_transient(e->msg)) ? SL_RETRY : rc;
    }
    struct strbuf cmd, ob, eb;
    sb_init(&cmd);
    for (int i = 0; argv[i]; i++) {
        if (i)
            sb_add(&cmd, " ", 1);
        sh_quote(&cmd, argv[i]);
    }
    char *where = xasprintf(" on %s", s->login.label);
    int rc = -1;
    for (int tries = 0; tries < 2; tries++) {
        sb_init(&ob);
        sb_init(&eb);
        int st = -1, sent = 0;
        struct errbuf ce;
        if (login_connect(s, e) == 0) {
            sent = 1;
            if (ssh_exec(s->conn, cmd.buf, in, inlen, &ob, &eb, &st, &ce) == 0) {
                rc = st != 0 ? cmd_failed(argv[0], where, st, ob.buf, eb.buf, e) : 0;
                if (rc < 0 && slurm_sbatch_transient(e->msg))
                    rc = SL_RETRY;
                if (rc == 0 && out)
                    *out = ob.buf ? xstrdup(ob.buf) : xstrdup("");
                sb_free(&ob);
                sb_free(&eb);
                break;
            }
            /* the session dropped: reopened next time */
            log_warn("login node %s: SSH session lost (%s)", s->login.label, ce.msg);
            login_drop(s);
            errf(e, "%s%s: the SSH session was lost: %s", argv[0], where, ce.msg);
            rc = again ? SL_RETRY : SL_LOST; /* lost twice, or once when it may not run again */
        }
        sb_free(&ob);
        sb_free(&eb);
        if (!sent) {
            rc = SL_RETRY; /* cannot connect now: the caller tries again later */
            break;
        }
        if (!again)
            break;
    }
    free(where);
    sb_free(&cmd);
    return rc;
}

/* Runs a Slurm command that may run twice (squeue, scancel, mkdir): 0 with *out. */
static int run_cmd(struct slurm *s, char *const argv[], char **out, struct errbuf *e)
{
    return sl_exec(s, argv, NULL, 0, 1, out, e);
}

/* Writes a file of the trial dir, replacing it: here, or on the login node as its user
 * (write-tmp + rename there too). -1 with errno set here; there sl_exec's answer, errno
 * EIO. */
static int sl_put(struct slurm *s, const char *path, const char *data, size_t len, int mode, struct errbuf *e)
{
    if (!s->login.host) {
        if (write_file_replace(path, data, len, (mode_t)mode) == 0)
            return 0;
        int err = errno;
        errf(e, "cannot write %s: %s", path, strerror(err));
        errno = err;
        return -1;
    }
    char modebuf[16];
    snprintf(modebuf, sizeof modebuf, "%o", mode);
    char *const argv[] = {"sh", "-c",
                          "umask 022; mkdir -p \"${1%/*}\" && cat > \"$1.tq$$\" && chmod \"$2\" \"$1.tq$$\" && "
                          "mv -f \"$1.tq$$\" \"$1\"",
                          "sh", (char *)path, modebuf, NULL};
    int rc = sl_exec(s, argv, data, len, 1, NULL, e);
    if (rc < 0)
        errno = EIO;
    return rc;
}

/* The experiment's jobs now (one squeue call), kept in s. */
static int fetch(struct worker *w, struct slurm *s, struct errbuf *e)
{
    char *const argv[] = {"squeue", "-t", "all", "--json", NULL};
    int64_t asked = now_ms();
    char *out = NULL;
    if (run_cmd(s, argv, &out, e) < 0)
        return -1;
    struct slurm_job *jobs;
    int n;
    int rc = slurm_squeue_parse(out, strlen(out), w->exp_id, &jobs, &n, e);
    free(out);
    if (rc < 0)
        return -1;
    jobs_drop(s);
    s->jobs = jobs;
    s->njobs = n;
    s->fetched_ms = asked;
    s->list_failed = 0;
    s->failed_ms = 0;
    return 0;
}

/* For a kill between two listings: the last answer when it is younger than the poll
 * interval, else a new one. A failing squeue is asked again once per interval too, not
 * once per kill (it may take seconds to fail). */
static int fresh(struct worker *w, struct slurm *s, struct errbuf *e)
{
    int64_t now = now_ms();
    if (s->fetched_ms && now - s->fetched_ms < s->poll_ms)
        return 0;
    if (s->failed_ms && now - s->failed_ms < s->poll_ms)
        return errf(e, "%s", s->failed);
    if (fetch(w, s, e) < 0) {
        s->failed_ms = now_ms();
        snprintf(s->failed, sizeof s->failed, "%.500s", e->msg);
        return -1;
    }
    return 0;
}

static struct sl_job *mine_find(struct slurm *s, const char *trial_id, int attempt)
{
    for (int i = 0; i < s->nmine; i++)
        if (s->mine[i].attempt == attempt && strcmp(s->mine[i].trial_id, trial_id) == 0)
            return &s->mine[i];
    return NULL;
}

static struct sl_job *mine_add(struct slurm *s, const char *trial_id, int attempt, long long job_id)
{
    struct sl_job *m = mine_find(s, trial_id, attempt);
    if (!m) {
        if (s->nmine == s->capmine) {
            s->capmine = s->capmine ? s->capmine * 2 : 16;
            s->mine = xrealloc(s->mine, sizeof *s->mine * (size_t)s->capmine);
        }
        m = &s->mine[s->nmine++];
        memset(m, 0, sizeof *m);
        m->trial_id = xstrdup(trial_id);
        m->attempt = attempt;
    }
    if (job_id > 0)
        m->job_id = job_id;
    return m;
}

static void mine_forget(struct slurm *s, const char *trial_id)
{
    for (int i = 0; i < s->nmine;)
        if (strcmp(s->mine[i].trial_id, trial_id) == 0) {
            free(s->mine[i].trial_id);
            s->mine[i] = s->mine[--s->nmine];
        } else {
            i++;
        }
}

static char *trial_dir_of(struct slurm *s, const struct trial *t)
{
    return t->trial_dir ? xstrdup(t->trial_dir) : xasprintf("%s/trials/%s", s->root, t->id);
}

/* Is `name` a line of the command's output? 1 yes, 0 no, -1 when the command failed
 * (sacctmgr without an accounting database: nothing known). */
static int listed(struct slurm *s, char *const argv[], const char *name)
{
    char *out = NULL;
    struct errbuf ce;
    if (run_cmd(s, argv, &out, &ce) < 0) {
        log_debug("platform slurm: %s (not checked)", ce.msg);
        return -1;
    }
    int found = 0;
    for (char *line = strtok(out, "\n"); line && !found; line = strtok(NULL, "\n"))
        found = strcmp(line, name) == 0;
    free(out);
    return found;
}

/* The partition, account and qos that trainingService names exist where cheap to ask:
 * sinfo lists the partitions; sacctmgr (only with an accounting database) the accounts
 * and qos. Names them in e when not. */
static int names_exist(struct slurm *s, const cJSON *ts, struct errbuf *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ts, "partition");
    if (cJSON_IsString(v)) {
        char *const argv[] = {"sinfo", "-h", "-o", "%R", NULL};
        if (listed(s, argv, v->valuestring) == 0)
            return errf(e, "trainingService.partition: the cluster has no partition \"%s\" (sinfo -o %%R)",
                        v->valuestring);
    }
    static const char *const keys[][2] = {{"account", "account"}, {"qos", "qos"}};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        v = cJSON_GetObjectItemCaseSensitive(ts, keys[i][0]);
        if (!cJSON_IsString(v))
            continue;
        char *what = xasprintf("format=%s", i == 0 ? "account" : "name");
        char *const argv[] = {"sacctmgr", "-nP", "show", (char *)keys[i][1], v->valuestring, what, NULL};
        int found = listed(s, argv, v->valuestring);
        free(what);
        if (found == 0)
            return errf(e, "trainingService.%s: the cluster has no %s \"%s\" (sacctmgr show %s)", keys[i][0],
                        keys[i][1], v->valuestring, keys[i][1]);
    }
    return 0;
}

/* nnictl create: squeue answers where the commands run (here, or on the login node),
 * and the partition, account and qos exist. */
static int slurm_preflight(const struct platform_ops *ops, const cJSON *ts, const cJSON *config, struct errbuf *e)
{
    (void)ops;
    (void)config;
    char *const argv[] = {"squeue", "-t", "all", "--json", NULL};
    char *out = NULL;
    struct errbuf ce;
    struct slurm s = {0};
    login_setup(&s, ts);
    int rc = run_cmd(&s, argv, &out, &ce);
    if (rc == 0) {
        struct slurm_job *jobs;
        int n;
        rc = slurm_squeue_parse(out, strlen(out), "", &jobs, &n, &ce);
        if (rc < 0) {
            char m[sizeof ce.msg];
            snprintf(m, sizeof m, "%s", ce.msg);
            errf(&ce, "squeue --json: %.900s", m);
        } else {
            slurm_jobs_free(jobs, n);
        }
    }
    free(out);
    if (rc == 0)
        rc = names_exist(&s, ts, &ce);
    login_free(&s);
    return rc < 0 ? errf(e, "platform slurm: %s", ce.msg) : 0;
}

static void slurm_destroy(struct worker *w)
{
    struct slurm *s = w->platform;
    if (!s)
        return;
    jobs_drop(s);
    for (int i = 0; i < s->nmine; i++)
        free(s->mine[i].trial_id);
    free(s->mine);
    free(s->root);
    login_free(s);
    free(s);
    w->platform = NULL;
}

static int slurm_init(struct worker *w, struct errbuf *e)
{
    const cJSON *ts = worker_ts_config(w);
    struct slurm *s = xcalloc(1, sizeof *s);
    login_setup(s, ts);
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(ts, "sharedDirectory");
    s->root = cJSON_IsString(sd) && sd->valuestring[0] ? xasprintf("%s/%s", sd->valuestring, w->exp_id)
                                                       : xstrdup(w->exp.exp_dir);
    const char *pm = getenv("TRIALQ_SLURM_POLL_MS");
    s->poll_ms = pm && atoi(pm) > 0 ? atoi(pm) : POLL_MS;
    w->poll_ms = s->poll_ms;
    s->started_ms = now_ms();
    w->platform = s;
    char *trials = xasprintf("%s/trials", s->root);
    int rc = 0;
    if (s->login.host) {
        char *const argv[] = {"mkdir", "-p", trials, NULL};
        struct errbuf ce;
        if (run_cmd(s, argv, NULL, &ce) < 0)
            rc = errf(e, "slurm: cannot create %s: %s", trials, ce.msg);
    } else if (mkdir_p(trials, 0755) < 0) {
        rc = errf(e, "slurm: cannot create %s: %s", trials, strerror(errno));
    }
    free(trials);
    if (rc == 0 && fetch(w, s, e) < 0) {
        char m[sizeof e->msg];
        snprintf(m, sizeof m, "%s", e->msg);
        rc = errf(e, "slurm: %s", m);
    }
    if (rc < 0)
        slurm_destroy(w); /* the caller destroys nothing after a failed init (the api
                           * starts the worker again later: the login node may be back) */
    return rc;
}


/* The job id recorded after our sbatch (.nni/slurm_job.<attempt>), 0 when none. */
static long long recorded_job(const char *dir, int attempt)
{
    char *p = xasprintf("%s/.nni/slurm_job.%d", dir, attempt);
    char *txt = read_file(p, NULL);
    free(p);
    long long id = txt ? atoll(txt) : 0;
    free(txt);
    return id;
}

/* The exit record of this attempt: 1 with its fields, 0 when there is none. */
static int exit_record(const char *dir, int attempt, int *status, int *stopped)
{
    char *p = xasprintf("%s/.nni/slurm_exit", dir);
    char *txt = read_file(p, NULL);
    free(p);
    int a = 0;
    int ok = txt && slurm_exit_parse(txt, status, stopped, &a) == 0 && a == attempt;
    free(txt);
    return ok;
}

/* parameter.cfg and the batch script (sl_put creates the dirs on the login node). */
static int write_trial_files(struct worker *w, struct trial *t, const char *dir, const char *script_path,
                             struct slurm_trial *st, struct errbuf *e)
{
    struct slurm *s = w->platform;
    if (!s->login.host) {
        char *nni = xasprintf("%s/.nni", dir);
        int rc = mkdir_p(nni, 0755);
        free(nni);
        if (rc < 0)
            return errf(e, "cannot create %s/.nni: %s", dir, strerror(errno));
    }
    char *cfg = xasprintf("%s/parameter.cfg", dir);
    char *rec = nni_param_record(t);
    int rc = sl_put(s, cfg, rec, strlen(rec), 0644, e);
    free(rec);
    free(cfg);
    const cJSON *cmd = worker_config_item(w, "trialCommand");
    char *script = slurm_batch_script(worker_ts_config(w), cJSON_IsString(cmd) ? cmd->valuestring : "true", st);
    if (rc == 0)
        rc = sl_put(s, script_path, script, strlen(script), 0755, e);
    free(script);
    return rc;
}

/* sbatch; the job id, or < 0 with e set: SL_RETRY when the controller (or the login
 * node) did not answer, -1 when sbatch refused the job. After a timeout or a dropped
 * session the job may have been taken: the next submit asks squeue first (recheck). */
static long long sbatch(struct worker *w, const struct slurm_trial *st, const char *script_path, struct errbuf *e)
{
    struct slurm *s = w->platform;
    char **argv = NULL;
    if (slurm_sbatch_argv(worker_ts_config(w), st, script_path, &argv, e) < 0)
        return -1;
    char *out = NULL;
    int rc = sl_exec(s, argv, NULL, 0, 0, &out, e);
    slurm_argv_free(argv);
    if (rc == SL_LOST || rc == SL_RETRY) {
        s->recheck = 1;
        return SL_RETRY;
    }
    if (rc < 0) {
        fault_set("slurm sbatch", "sbatch refused a trial's job, which FAILED: %s (check trainingService: "
                  "partition, account, qos, sbatchArgs)", e->msg);
        return -1;
    }
    if (fault_has("slurm sbatch"))
        fault_clear("slurm sbatch");
    long long id = atoll(out); /* --parsable: "<id>" or "<id>;<cluster>" */
    free(out);
    if (id <= 0)
        return errf(e, "sbatch gave no job id");
    return id;
}

static int slurm_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    struct slurm *s = w->platform;
    char *dir = xasprintf("%s/trials/%s", s->root, t->id);
    char *script_path = xasprintf("%s/.nni/job.%d.sh", dir, t->attempt);
    const cJSON *code = worker_config_item(w, "trialCodeDirectory");
    struct slurm_trial st = {
        .exp_id = w->exp_id,
        .trial_id = t->id,
        .attempt = t->attempt,
        .sequence = t->sequence,
        .trial_dir = dir,
        .code_dir = cJSON_IsString(code) ? code->valuestring : ".",
        .max_trial_seconds = w->exp.max_trial_seconds,
        .pass_credentials = cJSON_IsTrue(worker_config_item(w, "passCredentials")),
    };
    int rc = -1, st_exit, st_stopped;
    long long id = 0;
    /* a job of this attempt may exist (a worker died after its sbatch, or an sbatch
     * timed out): every job submitted before this worker started, or before that
     * sbatch ended, is in an answer taken since. squeue not answering is not the
     * trial's fault: tried again later */
    if (s->fetched_ms < s->started_ms || s->recheck) {
        if (fetch(w, s, e) < 0) {
            rc = SUBMIT_RETRY;
            goto out;
        }
        s->recheck = 0;
    }
    const struct slurm_job *j = slurm_job_find(s->jobs, s->njobs, t->id, t->attempt);
    if (j) {
        id = j->job_id;
        rc = SUBMIT_ATTACHED;
        log_info("trial %s: re-attached to Slurm job %lld (%s)", t->id, id, j->state);
    } else if (exit_record(dir, t->attempt, &st_exit, &st_stopped)) {
        id = recorded_job(dir, t->attempt);
        rc = SUBMIT_FINISHED;
    } else if ((id = recorded_job(dir, t->attempt)) > 0) {
        rc = SUBMIT_VANISHED; /* it ran, and squeue and its dir know no end of it */
    } else {
        int wr = write_trial_files(w, t, dir, script_path, &st, e);
        if (wr < 0) {
            rc = wr == SL_RETRY ? SUBMIT_RETRY : errno == ENOSPC || errno == EDQUOT || errno == EROFS ? SUBMIT_FAULT : -1;
            goto out;
        }
        id = sbatch(w, &st, script_path, e);
        if (id < 0) {
            rc = id == SL_RETRY ? SUBMIT_RETRY : -1;
            goto out;
        }
        char *p = xasprintf("%s/.nni/slurm_job.%d", dir, t->attempt);
        char txt[32];
        int len = snprintf(txt, sizeof txt, "%lld\n", id);
        struct errbuf pe;
        if (sl_put(s, p, txt, (size_t)len, 0644, &pe) < 0)
            log_warn("trial %s: cannot record job %lld: %s", t->id, id, pe.msg);
        free(p);
        mine_add(s, t->id, t->attempt, id)->submitted_ms = now_ms();
        rc = SUBMIT_NEW;
        log_info("trial %s: Slurm job %lld submitted", t->id, id);
    }
    if (id > 0)
        mine_add(s, t->id, t->attempt, id);
    *job_id = id > 0 ? xasprintf("%lld", id) : xasprintf("nni-%s-%s", w->exp_id, t->id);
    *trial_dir = xstrdup(dir);
out:
    if (rc == SUBMIT_RETRY)
        fault_set("slurm sbatch", "trials cannot be submitted now: %s; they wait, and their submission is "
                  "retried with a back-off", e->msg);
    free(script_path);
    free(dir);
    return rc;
}

/* The end of a job from its exit record (the command's own status, and whether a stop
 * reached it). */
static void ended_by_record(struct job_state *js, int status, int stopped)
{
    js->finished = 1;
    js->has_exit = 1;
    js->exit_code = status;
    js->stop_known = 1;
    js->stopped = stopped;
    js->end_time = now_ms();
}

/* A job killed for its memory is named so, whatever its state says (FAILED, reason
 * JobLaunchFailure, under jobacct_gather's OverMemoryKill): slurmstepd said it in the
 * job's slurm.stderr. */
static void oom_named(const char *dir, struct job_state *js)
{
    char *p = xasprintf("%s/slurm.stderr", dir);
    char *txt = read_file(p, NULL);
    free(p);
    size_t len = 0;
    const char *line = slurm_oom_line(txt, &len);
    if (line && !strstr(js->why, "OUT_OF_MEMORY"))
        snprintf(js->why, sizeof js->why, "OUT_OF_MEMORY: the job used more memory than it had (memoryPerTrial); "
                 "Slurm: %.*s", (int)(len > 300 ? 300 : len), line);
    free(txt);
}

/* The batched poll: one squeue for all of the experiment's jobs (the loop calls it once
 * per poll interval while trials are held, and backs off when it fails). When squeue
 * does not answer, the trials whose node wrote their exit record are over all the same:
 * the listing then counts as done (so the loop polls them, from their records) when one
 * of the held trials has its record; else it fails and every trial waits for the next. */
static int slurm_poll_all(struct worker *w, struct errbuf *e)
{
    struct slurm *s = w->platform;
    if (fetch(w, s, e) == 0)
        return 0;
    s->list_failed = 1;
    s->failed_ms = now_ms();
    snprintf(s->failed, sizeof s->failed, "%.500s", e->msg);
    for (int i = 0; i < w->ntrials; i++) {
        const struct trial *t = &w->trials[i].t;
        char *dir = trial_dir_of(s, t);
        int status, stopped;
        int ended = exit_record(dir, t->attempt, &status, &stopped);
        free(dir);
        if (ended)
            return 0;
    }
    return -1;
}

/* The attempt's job is not in squeue's answer: it ended (its exit record tells), or
 * was submitted after the answer was asked for, or was cancelled, or vanished. */
static void unlisted(struct slurm *s, const struct trial *t, const struct sl_job *m, const char *dir,
                     struct job_state *js)
{
    int status, stopped;
    if (exit_record(dir, t->attempt, &status, &stopped)) {
        ended_by_record(js, status, stopped);
    } else if (m && m->submitted_ms >= s->fetched_ms) {
        /* submitted after this answer was asked for: the next one lists it; until
         * then it is taken as queued (no reason known yet) */
        js->waiting = 1;
    } else if (t->kill_request && m && m->kill_ms) {
        js->finished = 1; /* cancelled and forgotten */
        js->signal = SIGTERM;
        js->end_time = now_ms();
    } else {
        js->vanished = 1;
        snprintf(js->why, sizeof js->why, "Slurm no longer knows job %s of this attempt, and it left no "
                 "exit record", t->job_id ? t->job_id : "?");
    }
}

/* The job as squeue/sacct report it (slurm_job_verdict) into js. */
static void reported(const struct trial *t, const struct slurm_job *j, const struct sl_job *m, const char *dir,
                     struct job_state *js)
{
    int status, stopped;
    struct slurm_verdict v;
    slurm_job_verdict(j, &v);
    switch (v.outcome) {
    case SLURM_WAITING:
        js->waiting = 1; /* the trial stays WAITING with Slurm's reason (queued_start) */
        snprintf(js->why, sizeof js->why, "%s", v.message);
        break;
    case SLURM_RUNNING:
    case SLURM_UNKNOWN:
        break;
    case SLURM_RETRY:
        js->vanished = 1;
        snprintf(js->why, sizeof js->why, "Slurm job %lld: %s", j->job_id, v.message);
        break;
    case SLURM_SUCCEEDED:
    case SLURM_FAILED:
    case SLURM_CANCELED:
        if (exit_record(dir, t->attempt, &status, &stopped) && v.outcome != SLURM_FAILED) {
            ended_by_record(js, status, stopped);
            if (v.outcome == SLURM_CANCELED && !t->kill_request) /* someone else's scancel */
                snprintf(js->why, sizeof js->why, "%s", v.message);
        } else {
            js->finished = 1;
            js->has_exit = 1;
            js->exit_code = v.outcome == SLURM_SUCCEEDED ? 0 : v.exit_code > 0 ? v.exit_code : 1;
            js->end_time = j->end_time > 0 ? j->end_time * 1000 : now_ms();
            if (v.outcome != SLURM_SUCCEEDED)
                snprintf(js->why, sizeof js->why, "%s", v.message);
            if (v.outcome == SLURM_FAILED)
                oom_named(dir, js);
            if (v.outcome == SLURM_CANCELED) {
                js->stop_known = 1;
                js->stopped = m && m->kill_ms; /* ours, else cancelled from outside */
            }
        }
        if (js->finished && js->end_time <= 0)
            js->end_time = now_ms();
        break;
    }
}

static int slurm_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    struct slurm *s = w->platform;
    memset(js, 0, sizeof *js);
    char *dir = trial_dir_of(s, t);
    int status, stopped;
    if (s->list_failed || !s->fetched_ms) {
        if (!s->fetched_ms && !s->list_failed)
            errf(e, "no squeue answer yet");
        else
            errf(e, "%s", s->failed);
        /* the controller does not answer: an attempt that wrote its end is over all the
         * same (its node finished it), and its slot is free for the next trial */
        int ended = exit_record(dir, t->attempt, &status, &stopped);
        free(dir);
        if (!ended)
            return -1;
        ended_by_record(js, status, stopped);
        mine_forget(s, t->id);
        return 0;
    }
    const struct slurm_job *j = slurm_job_find(s->jobs, s->njobs, t->id, t->attempt);
    struct sl_job *m = mine_find(s, t->id, t->attempt);
    if (!j) {
        unlisted(s, t, m, dir, js);
        goto out;
    }
    reported(t, j, m, dir, js);
    /* a stop that the trial does not heed: scancel after the grace */
    if (m && m->kill_ms && !m->cancelled && !js->finished && now_ms() - m->kill_ms > KILL_GRACE_MS) {
        char idbuf[32];
        snprintf(idbuf, sizeof idbuf, "%lld", j->job_id);
        char *const argv[] = {"scancel", idbuf, NULL};
        struct errbuf ce;
        if (run_cmd(s, argv, NULL, &ce) == 0)
            m->cancelled = 1;
        else
            log_warn("trial %s: %s", t->id, ce.msg);
    }
out:
    if (js->finished || js->vanished)
        mine_forget(s, t->id);
    free(dir);
    return 0;
}

/* scancel --full --signal=INT (a pending job: scancel): 0 once Slurm took it. */
static int slurm_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    struct slurm *s = w->platform;
    if (fresh(w, s, e) < 0)
        return -1;
    const struct slurm_job *j = slurm_job_find(s->jobs, s->njobs, t->id, t->attempt);
    struct sl_job *m = mine_find(s, t->id, t->attempt);
    long long id = j ? j->job_id : m ? m->job_id : 0;
    if (!id)
        return 0; /* nothing of it runs: the poll records the end */
    struct slurm_verdict v = {0};
    if (j)
        slurm_job_verdict(j, &v);
    if (j && v.outcome != SLURM_WAITING && v.outcome != SLURM_RUNNING && v.outcome != SLURM_UNKNOWN)
        return 0; /* ended already */
    char idbuf[32];
    snprintf(idbuf, sizeof idbuf, "%lld", id);
    char *const stop[] = {"scancel", "--full", "--signal=INT", idbuf, NULL};
    char *const cancel[] = {"scancel", idbuf, NULL};
    int pending = !j || v.outcome == SLURM_WAITING;
    if (run_cmd(s, pending ? cancel : stop, NULL, e) < 0)
        return -1;
    m = mine_add(s, t->id, t->attempt, id);
    m->kill_ms = now_ms();
    m->cancelled = pending;
    return 0;
}

static int slurm_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    char *dir = trial_dir_of(w->platform, t);
    int rc = collect_trial_dir(w->db, t, dir, NULL, at_end, e);
    free(dir);
    return rc;
}

static int slurm_pending(struct worker *w, struct trial *t)
{
    char *dir = trial_dir_of(w->platform, t);
    int r = trial_dir_grew(t, dir, NULL);
    free(dir);
    return r;
}

/* nnictl stop: cancels every live job of the experiment, also those the database never
 * recorded (found by name in squeue). */
static int slurm_cleanup(struct worker *w, struct errbuf *e)
{
    struct slurm *s = w->platform;
    if (fetch(w, s, e) < 0)
        return -1;
    char **argv = xcalloc((size_t)s->njobs + 2, sizeof *argv);
    int n = 0;
    argv[n++] = xstrdup("scancel");
    for (int i = 0; i < s->njobs; i++) {
        struct slurm_verdict v;
        slurm_job_verdict(&s->jobs[i], &v);
        if (v.outcome == SLURM_WAITING || v.outcome == SLURM_RUNNING || v.outcome == SLURM_UNKNOWN)
            argv[n++] = xasprintf("%lld", s->jobs[i].job_id);
    }
    int rc = 0;
    if (n > 1) {
        rc = run_cmd(s, argv, NULL, e);
        if (rc == 0)
            log_info("cancelled %d Slurm job(s) of the experiment", n - 1);
    }
    for (int i = 0; i < n; i++)
        free(argv[i]);
    free(argv);
    return rc;
}

const struct platform_ops platform_slurm = {
    .name = "slurm",
    .init = slurm_init,
    .preflight = slurm_preflight,
    .submit = slurm_submit,
    .poll = slurm_poll,
    .poll_all = slurm_poll_all,
    .kill = slurm_kill,
    .collect = slurm_collect,
    .pending = slurm_pending,
    .destroy = slurm_destroy,
    .poll_ms = POLL_MS,
    .cleanup = slurm_cleanup,
    .gpu_mode = PLATFORM_GPU_OWN,
    .queued_start = 1,
};
