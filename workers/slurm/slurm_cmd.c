/* slurm_cmd.c: the Slurm platform's parts that run nothing (slurm_cmd.h): sbatch's
 * command line and the batch script of a trial, squeue --json read into job records, job
 * states mapped to trial outcomes. */
#include "workers/slurm/slurm_cmd.h"
#include "common/trialenv.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------- names ---------------- */

char *slurm_job_name(const char *exp_id, const char *trial_id)
{
    return xasprintf("nni-%s-%s", exp_id, trial_id);
}

char *slurm_job_comment(const char *exp_id, const char *trial_id, int attempt)
{
    return xasprintf("trialq:%s:%s:%d", exp_id, trial_id, attempt);
}

/* ---------------- resources ---------------- */

const char *slurm_time_format(int64_t seconds, char *buf, size_t size)
{
    int64_t min = seconds <= 0 ? 1 : (seconds + 59) / 60; /* Slurm counts whole minutes */
    int64_t d = min / 1440, h = min / 60 % 24, m = min % 60;
    if (d > 0)
        snprintf(buf, size, "%lld-%02lld:%02lld:00", (long long)d, (long long)h, (long long)m);
    else
        snprintf(buf, size, "%lld:%02lld:00", (long long)h, (long long)m);
    return buf;
}

long long slurm_size_mb(const cJSON *v)
{
    double n;
    const char *u;
    if (cJSON_IsNumber(v)) {
        n = v->valuedouble;
        u = "";
    } else if (cJSON_IsString(v)) {
        char *end;
        n = strtod(v->valuestring, &end);
        if (end == v->valuestring || !isdigit((unsigned char)v->valuestring[0]))
            return -1;
        u = end;
        while (*u == ' ')
            u++;
    } else {
        return -1;
    }
    /* NNI's units are binary multiples, with or without the "b" ("8gb", "8g"); bare
     * numbers are megabytes */
    double scale;
    char unit = (char)tolower((unsigned char)u[0]);
    const char *rest = u[0] ? u + 1 : u;
    switch (unit) {
    case '\0': scale = 1; break;
    case 'b': scale = 1.0 / (1024.0 * 1024.0); rest = u + 1; break;
    case 'k': scale = 1.0 / 1024.0; break;
    case 'm': scale = 1; break;
    case 'g': scale = 1024; break;
    case 't': scale = 1024.0 * 1024.0; break;
    default: return -1;
    }
    if (unit != 'b' && unit != '\0' && (rest[0] == 'b' || rest[0] == 'B'))
        rest++;
    if (rest[0] || !(n > 0) || !isfinite(n))
        return -1;
    double mb = ceil(n * scale);
    return mb > 9e15 ? -1 : (long long)mb;
}

int64_t slurm_time_limit(const cJSON *ts, int64_t max_trial_seconds)
{
    const cJSON *tl = cJSON_GetObjectItemCaseSensitive(ts, "timeLimit");
    if (cJSON_IsNumber(tl))
        return tl->valuedouble >= 1 ? (int64_t)ceil(tl->valuedouble) : -1;
    if (cJSON_IsString(tl)) {
        int64_t s;
        return parse_duration(tl->valuestring, &s) < 0 ? -1 : s;
    }
    if (tl && !cJSON_IsNull(tl))
        return -1;
    if (max_trial_seconds <= 0)
        return 0;
    return (max_trial_seconds + 59) / 60 * 60 + 60;
}

static int int_item(const cJSON *ts, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ts, key);
    return cJSON_IsNumber(v) ? v->valueint : -1;
}

int slurm_gpus(const cJSON *ts)
{
    int g = int_item(ts, "gpusPerTrial");
    return g >= 0 ? g : int_item(ts, "trialGpuNumber");
}

/* ---------------- sbatch ---------------- */

struct argv_b {
    char **v;
    int n, cap;
};

static void arg_add(struct argv_b *a, char *s) /* takes s */
{
    if (a->n + 2 > a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->v = xrealloc(a->v, (size_t)a->cap * sizeof *a->v);
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

/* --opt=<the string member key>, when it is set and not empty */
static int arg_str(struct argv_b *a, const cJSON *ts, const char *key, const char *opt, struct errbuf *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ts, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v) || !v->valuestring[0] || strchr(v->valuestring, '\n'))
        return errf(e, "trainingService.%s: must be a non-empty string on one line", key);
    arg_add(a, xasprintf("--%s=%s", opt, v->valuestring));
    return 0;
}

/* --opt=N for a positive integer member key */
static int arg_count(struct argv_b *a, const cJSON *ts, const char *key, const char *opt, struct errbuf *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ts, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1e6 || v->valuedouble != (double)v->valueint)
        return errf(e, "trainingService.%s: must be a whole number from 1 to 1000000", key);
    arg_add(a, xasprintf("--%s=%d", opt, v->valueint));
    return 0;
}

void slurm_argv_free(char **argv)
{
    for (int i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

int slurm_sbatch_argv(const cJSON *ts, const struct slurm_trial *t, const char *script_path, char ***argv,
                      struct errbuf *e)
{
    struct argv_b a = {0};
    char tb[32];
    *argv = NULL;
    arg_add(&a, xstrdup("sbatch"));
    arg_add(&a, xstrdup("--parsable"));
    arg_add(&a, xasprintf("--job-name=nni-%s-%s", t->exp_id, t->trial_id));
    arg_add(&a, xasprintf("--comment=trialq:%s:%s:%d", t->exp_id, t->trial_id, t->attempt));
    arg_add(&a, xasprintf("--output=%s/slurm.stdout", t->trial_dir));
    arg_add(&a, xasprintf("--error=%s/slurm.stderr", t->trial_dir));
    arg_add(&a, xstrdup("--open-mode=append"));
    arg_add(&a, xasprintf("--chdir=%s", t->trial_dir));
    arg_add(&a, xstrdup("--no-requeue"));
    if (arg_str(&a, ts, "partition", "partition", e) < 0 || arg_str(&a, ts, "account", "account", e) < 0 ||
        arg_str(&a, ts, "qos", "qos", e) < 0)
        goto fail;
    int64_t limit = slurm_time_limit(ts, t->max_trial_seconds);
    if (limit < 0) {
        errf(e, "trainingService.timeLimit: not a duration (e.g. \"2h\", \"90m\" or seconds)");
        goto fail;
    }
    if (limit > 0)
        arg_add(&a, xasprintf("--time=%s", slurm_time_format(limit, tb, sizeof tb)));
    if (arg_count(&a, ts, "nodes", "nodes", e) < 0 || arg_count(&a, ts, "cpusPerTrial", "cpus-per-task", e) < 0)
        goto fail;
    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(ts, "memoryPerTrial");
    if (mem && !cJSON_IsNull(mem)) {
        long long mb = slurm_size_mb(mem);
        if (mb < 1) {
            errf(e, "trainingService.memoryPerTrial: not a size (e.g. \"8gb\", \"512mb\" or megabytes)");
            goto fail;
        }
        arg_add(&a, xasprintf("--mem=%lldM", mb));
    }
    int gpus = slurm_gpus(ts);
    if (gpus > 0)
        arg_add(&a, xasprintf("--gres=gpu:%d", gpus));
    if (arg_str(&a, ts, "constraint", "constraint", e) < 0)
        goto fail;
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(ts, "sbatchArgs"), *it;
    cJSON_ArrayForEach(it, extra) {
        if (!cJSON_IsString(it) || it->valuestring[0] != '-') {
            errf(e, "trainingService.sbatchArgs: each item must be one sbatch option starting with '-'");
            goto fail;
        }
        arg_add(&a, xstrdup(it->valuestring));
    }
    arg_add(&a, xstrdup(script_path));
    *argv = a.v;
    return 0;
fail:
    slurm_argv_free(a.v);
    return -1;
}

/* ---------------- the batch script ---------------- */

char *slurm_batch_script(const cJSON *ts, const char *trial_command, const struct slurm_trial *t)
{
    struct strbuf sb;
    sb_init(&sb);
    char seq[32], att[16];
    snprintf(seq, sizeof seq, "%lld", (long long)t->sequence);
    snprintf(att, sizeof att, "%d", t->attempt);
    sb_puts(&sb, "#!/bin/bash\n# trialq: trial ");
    sb_puts(&sb, t->trial_id);
    sb_printf(&sb, ", attempt %d, of experiment ", t->attempt);
    sb_puts(&sb, t->exp_id);
    sb_puts(&sb, " (written by the slurm platform; sbatch's options are on its command line)\n");
    struct trial_env te; /* the variables NNI's trials read, as every platform writes them */
    trial_env_init(&te);
    trial_env_set_word(&te, "NNI_PLATFORM", "slurm");
    trial_env_set(&te, "NNI_EXP_ID", t->exp_id);
    trial_env_set(&te, "NNI_TRIAL_JOB_ID", t->trial_id);
    trial_env_set_word(&te, "NNI_TRIAL_SEQ_ID", seq);
    trial_env_set(&te, "NNI_SYS_DIR", t->trial_dir);
    trial_env_set(&te, "NNI_OUTPUT_DIR", t->trial_dir);
    trial_env_set(&te, "NNI_CODE_DIR", t->code_dir);
    trial_env_set_word(&te, "MULTI_PHASE", "false");
    trial_env_export_lines(&te, &sb);
    trial_env_free(&te);
    if (!t->pass_credentials) /* sbatch passed the worker's environment on (docs/security.md) */
        trial_env_unset_credentials_lines(&sb);
    if (slurm_gpus(ts) == 0)
        sb_puts(&sb, "export CUDA_VISIBLE_DEVICES=\n"); /* 0 GPUs asked for must not mean all */
    /* the end record: written once, atomically, by whichever path ends the script */
    sb_puts(&sb, "stopped=0\n"
                 "trap 'stopped=1' INT TERM\n"
                 "tq_end() {\n"
                 "  mkdir -p \"$NNI_SYS_DIR/.nni\"\n");
    sb_printf(&sb, "  echo \"$1 $stopped %s\" > \"$NNI_SYS_DIR/.nni/slurm_exit.tmp\" &&\n", att);
    sb_puts(&sb, "    mv -f \"$NNI_SYS_DIR/.nni/slurm_exit.tmp\" \"$NNI_SYS_DIR/.nni/slurm_exit\"\n"
                 "  exit \"$1\"\n"
                 "}\n"
                 "mkdir -p \"$NNI_SYS_DIR/.nni\" || exit 1\n");
    const cJSON *setup = cJSON_GetObjectItemCaseSensitive(ts, "setupScript");
    if (cJSON_IsString(setup) && setup->valuestring[0]) {
        /* in this shell, so that module load / conda activate reach the command; its
         * status is that of its last command */
        sb_puts(&sb, "{\n");
        sb_puts(&sb, setup->valuestring);
        sb_puts(&sb, "\n} >> \"$NNI_OUTPUT_DIR/trial.stdout\" 2>> \"$NNI_OUTPUT_DIR/trial.stderr\"\n"
                     "rc=$?\n"
                     "if [ \"$rc\" != 0 ]; then\n"
                     "  echo \"trialq: setupScript failed with status $rc; the trial command did not run\" \\\n"
                     "    >> \"$NNI_OUTPUT_DIR/trial.stderr\"\n"
                     "  tq_end \"$rc\"\n"
                     "fi\n");
    }
    sb_puts(&sb, "cd \"$NNI_CODE_DIR\" || tq_end 1\n"
                 "bash -c ");
    sh_quote(&sb, trial_command);
    /* in the foreground: Slurm signals every process of the job (a stop reaches the
     * command itself), and bash runs the trap only after the command ended */
    sb_puts(&sb, " >> \"$NNI_OUTPUT_DIR/trial.stdout\" 2>> \"$NNI_OUTPUT_DIR/trial.stderr\"\n"
                 "tq_end \"$?\"\n");
    return sb_detach(&sb);
}

int slurm_sbatch_transient(const char *message)
{
    /* slurm_strerror()'s words (Slurm 22.05) for a controller that did not answer */
    static const char *const passing[] = {
        "Socket timed out on send/recv operation",
        "Unable to contact slurm controller",
        "temporarily unable to accept job",
        "Zero Bytes were transmitted or received",
        "Communication connection failure",
        "Slurm backup controller in standby mode",
    };
    for (size_t i = 0; message && i < sizeof passing / sizeof passing[0]; i++)
        if (strcasestr(message, passing[i]))
            return 1;
    return 0;
}

const char *slurm_oom_line(const char *text, size_t *len)
{
    static const char *const marks[] = {"exceeded memory limit", "oom-kill event", "Exceeded job memory limit"};
    for (size_t i = 0; text && i < sizeof marks / sizeof marks[0]; i++) {
        const char *p = strcasestr(text, marks[i]);
        if (!p)
            continue;
        while (p > text && p[-1] != '\n')
            p--;
        *len = strcspn(p, "\n");
        return p;
    }
    return NULL;
}

int slurm_exit_parse(const char *text, int *status, int *stopped, int *attempt)
{
    int s, st, at, used = 0;
    if (!text || sscanf(text, "%d %d %d%n", &s, &st, &at, &used) != 3)
        return -1;
    for (const char *p = text + used; *p; p++)
        if (!isspace((unsigned char)*p))
            return -1;
    if (s < 0 || s > 255 || (st != 0 && st != 1) || at < 1)
        return -1;
    *status = s;
    *stopped = st;
    *attempt = at;
    return 0;
}

/* ---------------- squeue --json ---------------- */

static char *str_of(const cJSON *job, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(job, key);
    return xstrdup(cJSON_IsString(v) ? v->valuestring : "");
}

static int64_t num_of(const cJSON *job, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(job, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 9e15 ? (int64_t)v->valuedouble : 0;
}

void slurm_jobs_free(struct slurm_job *jobs, int n)
{
    for (int i = 0; i < n; i++) {
        free(jobs[i].name);
        free(jobs[i].trial_id);
        free(jobs[i].state);
        free(jobs[i].reason);
        free(jobs[i].nodes);
    }
    free(jobs);
}

/* the attempt of comment "trialq:<exp>:<trial>:<attempt>" for this job: 0 when there is
 * no comment, -1 when there is one of someone else (or another trial) */
static int comment_attempt(const char *comment, const char *exp_id, const char *trial_id)
{
    if (!comment || !comment[0])
        return 0;
    size_t le = strlen(exp_id), lt = strlen(trial_id);
    if (!str_starts(comment, "trialq:") || strncmp(comment + 7, exp_id, le) != 0 || comment[7 + le] != ':' ||
        strncmp(comment + 8 + le, trial_id, lt) != 0 || comment[8 + le + lt] != ':')
        return -1;
    const char *p = comment + 9 + le + lt;
    char *end;
    long at = strtol(p, &end, 10);
    return isdigit((unsigned char)*p) && !*end && at >= 1 && at < 1000000 ? (int)at : -1;
}

int slurm_squeue_parse(const char *json, size_t len, const char *exp_id, struct slurm_job **jobs, int *n,
                       struct errbuf *e)
{
    *jobs = NULL;
    *n = 0;
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return errf(e, "squeue --json: not a JSON object");
    }
    const cJSON *errs = cJSON_GetObjectItemCaseSensitive(root, "errors");
    if (cJSON_IsArray(errs) && cJSON_GetArraySize(errs) > 0) {
        const cJSON *first = cJSON_GetArrayItem(errs, 0);
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(first, "error");
        char sn[SNIPPET_SIZE];
        const char *m = cJSON_IsString(msg) ? msg->valuestring : "(no message)";
        errf(e, "squeue --json reports an error: %s", snippet(sn, m, strlen(m)));
        cJSON_Delete(root);
        return -1;
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "jobs"), *j;
    if (!cJSON_IsArray(list)) {
        cJSON_Delete(root);
        return errf(e, "squeue --json: no \"jobs\" list");
    }
    char *prefix = xasprintf("nni-%s-", exp_id);
    size_t plen = strlen(prefix);
    int cap = 0;
    cJSON_ArrayForEach(j, list) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "job_id");
        if (!cJSON_IsString(name) || !str_starts(name->valuestring, prefix) || !name->valuestring[plen] ||
            !cJSON_IsNumber(id))
            continue;
        const char *tid = name->valuestring + plen;
        const cJSON *comment = cJSON_GetObjectItemCaseSensitive(j, "comment");
        int attempt = comment_attempt(cJSON_IsString(comment) ? comment->valuestring : NULL, exp_id, tid);
        if (attempt < 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            *jobs = xrealloc(*jobs, (size_t)cap * sizeof **jobs);
        }
        struct slurm_job *r = &(*jobs)[(*n)++];
        r->job_id = (long long)id->valuedouble;
        r->name = xstrdup(name->valuestring);
        r->trial_id = xstrdup(tid);
        r->attempt = attempt;
        r->state = str_of(j, "job_state");
        r->reason = str_of(j, "state_reason");
        r->exit_status = (int)num_of(j, "exit_code");
        r->submit_time = num_of(j, "submit_time");
        r->start_time = num_of(j, "start_time");
        r->end_time = num_of(j, "end_time");
        r->restart_cnt = (int)num_of(j, "restart_cnt");
        r->nodes = str_of(j, "nodes");
    }
    free(prefix);
    cJSON_Delete(root);
    return 0;
}

const struct slurm_job *slurm_job_find(const struct slurm_job *jobs, int n, const char *trial_id, int attempt)
{
    const struct slurm_job *best = NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(jobs[i].trial_id, trial_id) == 0 && (attempt == 0 || jobs[i].attempt == attempt) &&
            (!best || jobs[i].job_id > best->job_id))
            best = &jobs[i];
    return best;
}

/* ---------------- states ---------------- */

/* Slurm's pending reasons users meet most, in words */
static const char *reason_words(const char *reason)
{
    static const struct { const char *r, *w; } words[] = {
        {"Resources", "waiting for free resources"},
        {"Priority", "jobs of higher priority are queued ahead"},
        {"BeginTime", "not eligible yet (requeued, or a begin time)"},
        {"Dependency", "waiting for a dependency"},
        {"QOSMaxJobsPerUserLimit", "the QOS's limit of jobs per user is reached"},
        {"AssocMaxJobsLimit", "the account's limit of jobs is reached"},
        {"ReqNodeNotAvail", "the requested nodes are not available"},
        {"PartitionTimeLimit", "the time limit exceeds the partition's: it will never start"},
        {"JobHeldUser", "held by the user (scontrol release)"},
        {"JobHeldAdmin", "held by an administrator"},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(reason, words[i].r) == 0)
            return words[i].w;
    return NULL;
}

void slurm_state_verdict(const char *state, const char *reason, int exit_status, int restart_cnt,
                         struct slurm_verdict *v)
{
    char sn[SNIPPET_SIZE], rn[SNIPPET_SIZE];
    const char *st = snippet(sn, state ? state : "", state ? strlen(state) : 0);
    const char *rs = snippet(rn, reason ? reason : "", reason ? strlen(reason) : 0);
    int has_reason = reason && reason[0] && strcmp(reason, "None") != 0;
    /* the raw wait status: exit code in the high byte, a signal in the low bits */
    int sig = exit_status & 0x7f, code = (exit_status >> 8) & 0xff;
    v->exit_code = sig ? 128 + sig : code;
    v->message[0] = '\0';
    static const char *const running[] = {"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED",
                                          "RESIZING", "SIGNALING", "STAGE_OUT", "POWER_UP_NODE", NULL};
    static const char *const waiting[] = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
                                          NULL};
    static const char *const retried[] = {"NODE_FAIL", "PREEMPTED", "BOOT_FAIL", NULL};
    for (int i = 0; waiting[i]; i++)
        if (strcmp(st, waiting[i]) == 0) {
            const char *w = has_reason ? reason_words(reason) : NULL;
            v->outcome = SLURM_WAITING;
            v->exit_code = -1;
            snprintf(v->message, sizeof v->message, "Slurm: %s%s%s%s%s", has_reason ? rs : st, w ? " (" : "",
                     w ? w : "", w ? ")" : "", restart_cnt > 0 ? "; requeued by Slurm" : "");
            return;
        }
    for (int i = 0; running[i]; i++)
        if (strcmp(st, running[i]) == 0) {
            v->outcome = SLURM_RUNNING;
            v->exit_code = -1;
            if (strcmp(st, "SUSPENDED") == 0 || strcmp(st, "STOPPED") == 0)
                snprintf(v->message, sizeof v->message, "Slurm: %s", st);
            return;
        }
    for (int i = 0; retried[i]; i++)
        if (strcmp(st, retried[i]) == 0) {
            v->outcome = SLURM_RETRY;
            snprintf(v->message, sizeof v->message, "%s: %s (not the trial's fault: retried)", st,
                     strcmp(st, "NODE_FAIL") == 0   ? "a node of the job failed"
                     : strcmp(st, "PREEMPTED") == 0 ? "preempted by Slurm"
                                                    : "a node of the job failed to boot");
            return;
        }
    if (strcmp(st, "COMPLETED") == 0) {
        v->outcome = SLURM_SUCCEEDED;
        v->exit_code = 0;
        return;
    }
    if (strcmp(st, "CANCELLED") == 0) {
        v->outcome = SLURM_CANCELED;
        snprintf(v->message, sizeof v->message, "cancelled in Slurm (scancel)");
        return;
    }
    v->outcome = SLURM_FAILED;
    if (strcmp(st, "FAILED") == 0) {
        if (sig)
            snprintf(v->message, sizeof v->message, "killed by signal %d", sig);
        else
            snprintf(v->message, sizeof v->message, "exit code %d%s%s", code, has_reason ? ", " : "",
                     has_reason ? rs : "");
    } else if (strcmp(st, "TIMEOUT") == 0) {
        snprintf(v->message, sizeof v->message, "TIMEOUT: the job reached its Slurm time limit (timeLimit)");
    } else if (strcmp(st, "OUT_OF_MEMORY") == 0) {
        snprintf(v->message, sizeof v->message, "OUT_OF_MEMORY: the job used more memory than it had "
                 "(memoryPerTrial)");
    } else if (strcmp(st, "DEADLINE") == 0) {
        snprintf(v->message, sizeof v->message, "DEADLINE: the job's deadline passed");
    } else if (strcmp(st, "SPECIAL_EXIT") == 0 || strcmp(st, "REVOKED") == 0 || strcmp(st, "LAUNCH_FAILED") == 0) {
        snprintf(v->message, sizeof v->message, "Slurm ended the job: %s%s%s", st, has_reason ? ", " : "",
                 has_reason ? rs : "");
    } else {
        v->outcome = SLURM_UNKNOWN;
        v->exit_code = -1;
        snprintf(v->message, sizeof v->message, "unknown Slurm job state \"%s\"", st);
    }
}

void slurm_job_verdict(const struct slurm_job *j, struct slurm_verdict *v)
{
    slurm_state_verdict(j->state, j->reason, j->exit_status, j->restart_cnt, v);
}
