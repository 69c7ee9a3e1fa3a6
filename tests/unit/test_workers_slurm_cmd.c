/* test_workers_slurm_cmd.c: the Slurm platform's parts that run nothing
 * (workers/slurm/slurm_cmd.c): sbatch's command line from the trainingService keys, the batch
 * script (run here with bash, as a node would: NNI's variables, setupScript, the trial's
 * output and exit record, a stop), squeue --json as recorded from a real Slurm 22.05 by
 * tests/e2e/90-slurm-cluster.sh (tests/fixtures/slurm/), and job states -> trial outcomes. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "workers/slurm/slurm_cmd.h"

static cJSON *ts_of(const char *json)
{
    cJSON *j = cJSON_Parse(json);
    assert_non_null(j);
    return j;
}

static void test_names(void **state)
{
    (void)state;
    char *n = slurm_job_name("ab12cd34", "Xy9zQ");
    char *c = slurm_job_comment("ab12cd34", "Xy9zQ", 2);
    assert_string_equal(n, "nni-ab12cd34-Xy9zQ");
    assert_string_equal(c, "trialq:ab12cd34:Xy9zQ:2");
    free(n);
    free(c);
}

static void test_time(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(slurm_time_format(60, b, sizeof b), "0:01:00");
    assert_string_equal(slurm_time_format(90, b, sizeof b), "0:02:00"); /* whole minutes, up */
    assert_string_equal(slurm_time_format(1, b, sizeof b), "0:01:00");
    assert_string_equal(slurm_time_format(0, b, sizeof b), "0:01:00");
    assert_string_equal(slurm_time_format(3600, b, sizeof b), "1:00:00");
    assert_string_equal(slurm_time_format(23 * 3600 + 59 * 60, b, sizeof b), "23:59:00");
    assert_string_equal(slurm_time_format(86400, b, sizeof b), "1-00:00:00");
    assert_string_equal(slurm_time_format(2 * 86400 + 3 * 3600 + 61, b, sizeof b), "2-03:02:00");

    cJSON *ts = ts_of("{\"timeLimit\": \"2h\"}");
    assert_int_equal(slurm_time_limit(ts, 60), 7200); /* timeLimit wins */
    cJSON_Delete(ts);
    ts = ts_of("{\"timeLimit\": 90}");
    assert_int_equal(slurm_time_limit(ts, 0), 90);
    cJSON_Delete(ts);
    ts = ts_of("{\"timeLimit\": \"soon\"}");
    assert_int_equal(slurm_time_limit(ts, 0), -1);
    cJSON_Delete(ts);
    ts = ts_of("{\"timeLimit\": null}");
    assert_int_equal(slurm_time_limit(ts, 0), 0); /* neither: the partition's default */
    assert_int_equal(slurm_time_limit(ts, 3600), 3660); /* maxTrialDuration + a minute */
    assert_int_equal(slurm_time_limit(ts, 61), 180);   /* whole minutes, up, + a minute */
    cJSON_Delete(ts);
}

static long long mb(const char *json)
{
    cJSON *v = cJSON_Parse(json);
    long long r = slurm_size_mb(v);
    cJSON_Delete(v);
    return r;
}

static void test_sizes(void **state)
{
    (void)state;
    assert_int_equal(mb("\"8gb\""), 8192);
    assert_int_equal(mb("\"8G\""), 8192);
    assert_int_equal(mb("\"1.5gb\""), 1536);
    assert_int_equal(mb("\"512mb\""), 512);
    assert_int_equal(mb("\"512 MB\""), 512);
    assert_int_equal(mb("\"1tb\""), 1024 * 1024);
    assert_int_equal(mb("\"1000kb\""), 1);
    assert_int_equal(mb("\"10b\""), 1);
    assert_int_equal(mb("2048"), 2048);
    assert_int_equal(mb("\"2048\""), 2048);
    assert_int_equal(mb("\"lots\""), -1);
    assert_int_equal(mb("\"8gbx\""), -1);
    assert_int_equal(mb("\"8bb\""), -1);
    assert_int_equal(mb("\"-1gb\""), -1);
    assert_int_equal(mb("\"nan\""), -1);
    assert_int_equal(mb("0"), -1);
    assert_int_equal(mb("null"), -1);
}

static const struct slurm_trial trial1 = {
    .exp_id = "ab12cd34",
    .trial_id = "Xy9zQ",
    .attempt = 2,
    .sequence = 7,
    .trial_dir = "/shared/nni/ab12cd34/trials/Xy9zQ",
    .code_dir = "/shared/nni/ab12cd34/code",
    .max_trial_seconds = 0,
};

static void assert_argv(char **argv, const char *const *want)
{
    int i = 0;
    for (; want[i]; i++) {
        if (!argv[i])
            fail_msg("argv ends at %d, expected %s", i, want[i]);
        if (strcmp(argv[i], want[i]) != 0)
            fail_msg("argv[%d] is %s, expected %s", i, argv[i], want[i]);
    }
    if (argv[i])
        fail_msg("argv[%d] is %s, expected the end", i, argv[i]);
}

static void test_sbatch_argv(void **state)
{
    (void)state;
    struct errbuf e;
    char **argv;
    cJSON *ts = ts_of("{\"platform\": \"slurm\", \"trialCommand\": \"python3 train.py\", \"trialGpuNumber\": 1,"
                      "\"partition\": \"gpu\", \"account\": \"proj-42\", \"qos\": \"normal\", \"timeLimit\": \"90m\","
                      "\"nodes\": 1, \"cpusPerTrial\": 4, \"memoryPerTrial\": \"16gb\", \"gpusPerTrial\": 2,"
                      "\"constraint\": \"a100&ib\", \"sbatchArgs\": [\"--exclusive\", \"--mail-type=END\"]}");
    assert_int_equal(slurm_sbatch_argv(ts, &trial1, "/shared/nni/ab12cd34/trials/Xy9zQ/.nni/job.sh", &argv, &e), 0);
    static const char *const full[] = {
        "sbatch", "--parsable", "--job-name=nni-ab12cd34-Xy9zQ", "--comment=trialq:ab12cd34:Xy9zQ:2",
        "--output=/shared/nni/ab12cd34/trials/Xy9zQ/slurm.stdout",
        "--error=/shared/nni/ab12cd34/trials/Xy9zQ/slurm.stderr", "--open-mode=append",
        "--chdir=/shared/nni/ab12cd34/trials/Xy9zQ", "--no-requeue", "--partition=gpu", "--account=proj-42",
        "--qos=normal", "--time=1:30:00", "--nodes=1", "--cpus-per-task=4", "--mem=16384M", "--gres=gpu:2",
        "--constraint=a100&ib", "--exclusive", "--mail-type=END", "/shared/nni/ab12cd34/trials/Xy9zQ/.nni/job.sh",
        NULL};
    assert_argv(argv, full);
    slurm_argv_free(argv);
    cJSON_Delete(ts);

    /* the least: no option the config does not ask for; trialGpuNumber -> gres; the
     * time limit from maxTrialDuration */
    struct slurm_trial t = trial1;
    t.max_trial_seconds = 600;
    ts = ts_of("{\"trialGpuNumber\": 3, \"sbatchArgs\": []}");
    assert_int_equal(slurm_sbatch_argv(ts, &t, "job.sh", &argv, &e), 0);
    static const char *const least[] = {
        "sbatch", "--parsable", "--job-name=nni-ab12cd34-Xy9zQ", "--comment=trialq:ab12cd34:Xy9zQ:2",
        "--output=/shared/nni/ab12cd34/trials/Xy9zQ/slurm.stdout",
        "--error=/shared/nni/ab12cd34/trials/Xy9zQ/slurm.stderr", "--open-mode=append",
        "--chdir=/shared/nni/ab12cd34/trials/Xy9zQ", "--no-requeue", "--time=0:11:00", "--gres=gpu:3", "job.sh",
        NULL};
    assert_argv(argv, least);
    slurm_argv_free(argv);
    cJSON_Delete(ts);

    /* gpusPerTrial 0 overrides trialGpuNumber: no gres */
    ts = ts_of("{\"trialGpuNumber\": 3, \"gpusPerTrial\": 0}");
    assert_int_equal(slurm_sbatch_argv(ts, &trial1, "job.sh", &argv, &e), 0);
    for (int i = 0; argv[i]; i++)
        assert_null(strstr(argv[i], "gres"));
    slurm_argv_free(argv);
    cJSON_Delete(ts);

    /* what sbatch could not take is refused, naming the key */
    static const struct {
        const char *ts, *key;
    } bad[] = {
        {"{\"sbatchArgs\": [\"exclusive\"]}", "sbatchArgs"},
        {"{\"sbatchArgs\": [3]}", "sbatchArgs"},
        {"{\"memoryPerTrial\": \"lots\"}", "memoryPerTrial"},
        {"{\"cpusPerTrial\": 0}", "cpusPerTrial"},
        {"{\"nodes\": 1.5}", "nodes"},
        {"{\"partition\": \"\"}", "partition"},
        {"{\"account\": \"a\\nb\"}", "account"},
        {"{\"timeLimit\": \"whenever\"}", "timeLimit"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ts = ts_of(bad[i].ts);
        argv = (char **)1;
        if (slurm_sbatch_argv(ts, &trial1, "job.sh", &argv, &e) == 0)
            fail_msg("%s was accepted", bad[i].ts);
        assert_null(argv);
        if (!strstr(e.msg, bad[i].key))
            fail_msg("%s: message '%s' does not name %s", bad[i].ts, e.msg, bad[i].key);
        cJSON_Delete(ts);
    }
}

/* ---- the batch script, run by bash as a node runs it ---- */

static char g_dir[] = "/tmp/tq-slurm-cmd-XXXXXX";

static char *slurp(const char *dir, const char *name)
{
    char *path = xasprintf("%s/%s", dir, name);
    char *s = read_file(path, NULL);
    free(path);
    return s;
}

/* writes the script of (ts, command) for a trial in <g_dir>/<name> and starts it with
 * bash in its own process group; returns the pid */
static int g_pass_credentials; /* the scripts start_script writes: passCredentials */

static pid_t start_script(const char *ts_json, const char *command, const char *name, char *tdir, size_t size)
{
    snprintf(tdir, size, "%s/%s", g_dir, name);
    char code[512];
    snprintf(code, sizeof code, "%s/code", g_dir);
    assert_int_equal(mkdir_p(tdir, 0755), 0);
    assert_int_equal(mkdir_p(code, 0755), 0);
    struct slurm_trial t = trial1;
    t.trial_dir = tdir;
    t.code_dir = code;
    t.pass_credentials = g_pass_credentials;
    cJSON *ts = ts_of(ts_json);
    char *script = slurm_batch_script(ts, command, &t);
    cJSON_Delete(ts);
    char path[600];
    snprintf(path, sizeof path, "%s/job.sh", tdir);
    assert_int_equal(write_file_replace(path, script, strlen(script), 0755), 0);
    free(script);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        if (chdir(tdir) < 0)
            _exit(126);
        execl("/bin/bash", "bash", path, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    return pid;
}

static int run_script(const char *ts_json, const char *command, const char *name, char *tdir, size_t size)
{
    int st;
    pid_t pid = start_script(ts_json, command, name, tdir, size);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void assert_exit_record(const char *tdir, int status, int stopped)
{
    char *rec = slurp(tdir, ".nni/slurm_exit");
    assert_non_null(rec);
    int s, st, at;
    if (slurm_exit_parse(rec, &s, &st, &at) < 0)
        fail_msg("exit record '%s' does not parse", rec);
    assert_int_equal(s, status);
    assert_int_equal(st, stopped);
    assert_int_equal(at, 2);
    free(rec);
}

static void test_script_runs(void **state)
{
    (void)state;
    char tdir[512];
    /* NNI's variables, the code dir as the working dir, a command with quotes and $ */
    int rc = run_script("{\"trialGpuNumber\": 0}",
                        "env | grep -E '^(NNI_|MULTI_PHASE|CUDA_VISIBLE_DEVICES)' | sort > env.txt; "
                        "pwd > \"$NNI_OUTPUT_DIR/pwd.txt\"; echo 'it'\"'\"'s $HOME-free'; echo err >&2; exit 3",
                        "t1", tdir, sizeof tdir);
    assert_int_equal(rc, 3);
    char code[512], want[2048];
    snprintf(code, sizeof code, "%s/code", g_dir);
    char *env = slurp(code, "env.txt");
    assert_non_null(env);
    snprintf(want, sizeof want,
             "CUDA_VISIBLE_DEVICES=\nMULTI_PHASE=false\nNNI_CODE_DIR=%s\nNNI_EXP_ID=ab12cd34\nNNI_OUTPUT_DIR=%s\n"
             "NNI_PLATFORM=slurm\nNNI_SYS_DIR=%s\nNNI_TRIAL_JOB_ID=Xy9zQ\nNNI_TRIAL_SEQ_ID=7\n",
             code, tdir, tdir);
    assert_string_equal(env, want);
    free(env);
    char *pwd = slurp(tdir, "pwd.txt"), *out = slurp(tdir, "trial.stdout"), *err = slurp(tdir, "trial.stderr");
    snprintf(want, sizeof want, "%s\n", code);
    assert_string_equal(pwd, want);
    assert_string_equal(out, "it's $HOME-free\n");
    assert_string_equal(err, "err\n");
    free(pwd);
    free(out);
    free(err);
    assert_exit_record(tdir, 3, 0);

    /* without trialGpuNumber the environment keeps what Slurm set */
    setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);
    assert_int_equal(run_script("{}", "echo \"$CUDA_VISIBLE_DEVICES\"", "t2", tdir, sizeof tdir), 0);
    unsetenv("CUDA_VISIBLE_DEVICES");
    out = slurp(tdir, "trial.stdout");
    assert_string_equal(out, "0,1\n");
    free(out);
    assert_exit_record(tdir, 0, 0);
}

/* sbatch exports the worker's environment, which holds the clouds' credentials that
 * nnictl create was given: the script unsets them unless passCredentials */
static void test_script_credentials(void **state)
{
    (void)state;
    char tdir[512];
    setenv("AZURE_CLIENT_SECRET", "s1", 1);
    setenv("AZURE_OTHER_SECRET", "s2", 1);
    setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "s3", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "s4", 1);
    setenv("TQ_KEPT", "k", 1);
    const char *show = "echo \"$AZURE_CLIENT_SECRET,$AZURE_OTHER_SECRET,$ALIBABA_CLOUD_ACCESS_KEY_SECRET,"
                       "$AWS_SECRET_ACCESS_KEY,$TQ_KEPT\"";
    assert_int_equal(run_script("{}", show, "cred1", tdir, sizeof tdir), 0);
    char *out = slurp(tdir, "trial.stdout");
    assert_string_equal(out, ",,,,k\n");
    free(out);
    g_pass_credentials = 1;
    assert_int_equal(run_script("{}", show, "cred2", tdir, sizeof tdir), 0);
    g_pass_credentials = 0;
    out = slurp(tdir, "trial.stdout");
    assert_string_equal(out, "s1,s2,s3,s4,k\n");
    free(out);
    unsetenv("AZURE_CLIENT_SECRET");
    unsetenv("AZURE_OTHER_SECRET");
    unsetenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET");
    unsetenv("AWS_SECRET_ACCESS_KEY");
    unsetenv("TQ_KEPT");
}

static void test_script_setup(void **state)
{
    (void)state;
    char tdir[512];
    /* setupScript runs in the job's shell: what it exports reaches the command */
    int rc = run_script("{\"setupScript\": \"echo setting up\\nexport TQ_FROM_SETUP=yes\\nmy_fn() { echo fn; }\"}",
                        "echo \"setup says $TQ_FROM_SETUP\"", "s1", tdir, sizeof tdir);
    assert_int_equal(rc, 0);
    char *out = slurp(tdir, "trial.stdout");
    assert_string_equal(out, "setting up\nsetup says yes\n");
    free(out);
    assert_exit_record(tdir, 0, 0);

    /* a failed setupScript: the command does not run, the job ends with its status */
    rc = run_script("{\"setupScript\": \"module load nothing-here 2>/dev/null || (exit 4)\"}",
                    "touch ran", "s2", tdir, sizeof tdir);
    assert_int_equal(rc, 4);
    char code[600];
    snprintf(code, sizeof code, "%s/code/ran", g_dir);
    assert_int_equal(access(code, F_OK), -1);
    char *err = slurp(tdir, "trial.stderr");
    assert_non_null(strstr(err, "setupScript failed with status 4"));
    free(err);
    assert_exit_record(tdir, 4, 0);
}

/* a stop, as `scancel --full --signal=INT` sends it: SIGINT to every process of the job */
static void test_script_stop(void **state)
{
    (void)state;
    char tdir[512], started[600];
    pid_t pid = start_script("{}", "trap 'echo stopping; exit 42' INT; touch \"$NNI_OUTPUT_DIR/started\"; "
                             "sleep 30 & wait", "k1", tdir, sizeof tdir);
    snprintf(started, sizeof started, "%s/started", tdir);
    for (int i = 0; i < 1000 && access(started, F_OK) < 0; i++)
        usleep(10000);
    assert_int_equal(access(started, F_OK), 0);
    usleep(50000);
    assert_int_equal(kill(-pid, SIGINT), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 42); /* the script lives on until the command ended */
    char *out = slurp(tdir, "trial.stdout");
    assert_string_equal(out, "stopping\n");
    free(out);
    assert_exit_record(tdir, 42, 1);
    kill(-pid, SIGKILL); /* the trial's sleep */
}

/* sbatch's failures: the controller not answering is tried again, a refusal is not
 * (the first two as sbatch 22.05 wrote them on the test cluster, e2e/96: slurmctld
 * stopped, and partition: nope; the others slurm_strerror's words) */
static void test_sbatch_transient(void **state)
{
    (void)state;
    assert_true(slurm_sbatch_transient("sbatch failed (status 1): sbatch: error: Batch job submission failed: "
                                       "Unable to contact slurm controller (connect failure)"));
    assert_false(slurm_sbatch_transient("sbatch: error: invalid partition specified: nope\n"
                                        "sbatch: error: Batch job submission failed: Invalid partition name specified"));
    assert_true(slurm_sbatch_transient("sbatch: error: Batch job submission failed: Socket timed out on send/recv "
                                       "operation"));
    assert_true(slurm_sbatch_transient("sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying"));
    assert_false(slurm_sbatch_transient("sbatch: error: Batch job submission failed: Invalid account or "
                                        "account/partition combination specified"));
    assert_false(slurm_sbatch_transient("sbatch: error: Batch job submission failed: Invalid qos specification"));
    assert_false(slurm_sbatch_transient("sbatch: error: Batch job submission failed: Requested node configuration "
                                        "is not available"));
    assert_false(slurm_sbatch_transient(""));
    assert_false(slurm_sbatch_transient(NULL));
}

/* what slurmstepd wrote in a job's --error file when jobacct_gather/linux with
 * OverMemoryKill killed it (Slurm 22.05 on the test cluster, e2e/97) */
static void test_oom_line(void **state)
{
    (void)state;
    const char *txt = "setup ok\n"
                      "slurmstepd-n1: error: StepId=1.batch exceeded memory limit (330149888 > 52428800), being killed\n"
                      "slurmstepd-n1: error: *** JOB 1 ON n1 CANCELLED AT 2026-11-27T09:26:41 ***\n"
                      "slurmstepd-n1: error: Exceeded job memory limit\n";
    size_t len = 0;
    const char *l = slurm_oom_line(txt, &len);
    assert_non_null(l);
    assert_int_equal(len, strlen("slurmstepd-n1: error: StepId=1.batch exceeded memory limit (330149888 > 52428800), "
                                 "being killed"));
    assert_memory_equal(l, "slurmstepd-n1: error: StepId=1.batch exceeded", 45);
    assert_non_null(slurm_oom_line("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=7.batch.", &len));
    assert_null(slurm_oom_line("slurmstepd-n1: error: *** JOB 3 ON n1 CANCELLED AT 2026-11-27T09:26:41 ***\n", &len));
    assert_null(slurm_oom_line(NULL, &len));
}

static void test_exit_parse(void **state)
{
    (void)state;
    int s, st, at;
    assert_int_equal(slurm_exit_parse("130 1 3\n", &s, &st, &at), 0);
    assert_int_equal(s, 130);
    assert_int_equal(st, 1);
    assert_int_equal(at, 3);
    static const char *const bad[] = {"", "1 0", "1 2 1", "256 0 1", "-1 0 1", "1 0 0", "1 0 1 x", "a b c", NULL};
    for (int i = 0; bad[i]; i++)
        if (slurm_exit_parse(bad[i], &s, &st, &at) == 0)
            fail_msg("'%s' parsed", bad[i]);
    assert_int_equal(slurm_exit_parse(NULL, &s, &st, &at), -1);
}

/* ---- squeue --json, recorded ---- */

static char *fixture(const char *name, size_t *len)
{
    const char *data = getenv("TRIALQ_TEST_DATA");
    assert_non_null(data);
    char path[1024];
    snprintf(path, sizeof path, "%s/fixtures/slurm/%s", data, name);
    char *s = read_file(path, len);
    if (!s)
        fail_msg("cannot read %s", path);
    return s;
}

static const struct slurm_job *job(const struct slurm_job *jobs, int n, const char *trial)
{
    const struct slurm_job *j = slurm_job_find(jobs, n, trial, 0);
    if (!j)
        fail_msg("no job of trial %s", trial);
    return j;
}

static void expect(const struct slurm_job *jobs, int n, const char *trial, const char *state,
                   enum slurm_outcome outcome, int exit_code, const char *in_message)
{
    const struct slurm_job *j = job(jobs, n, trial);
    struct slurm_verdict v;
    slurm_job_verdict(j, &v);
    if (strcmp(j->state, state) != 0 || v.outcome != outcome || v.exit_code != exit_code ||
        !strstr(v.message, in_message))
        fail_msg("%s: %s -> %d, exit %d, '%s'; expected %s -> %d, exit %d, '%s'", trial, j->state, v.outcome,
                 v.exit_code, v.message, state, outcome, exit_code, in_message);
}

static void parse_fixture(const char *name, const char *exp_id, struct slurm_job **jobs, int *n)
{
    size_t len;
    struct errbuf e;
    char *s = fixture(name, &len);
    if (slurm_squeue_parse(s, len, exp_id, jobs, n, &e) < 0)
        fail_msg("%s: %s", name, e.msg);
    free(s);
}

static void test_squeue_queue(void **state)
{
    (void)state;
    struct slurm_job *jobs;
    int n;
    parse_fixture("queue.json", "e1", &jobs, &n);
    /* e1's jobs only: not nni-e2-t1 (another experiment), not nni-e1-t9 (someone else's
     * comment) */
    assert_int_equal(n, 7);
    assert_null(slurm_job_find(jobs, n, "t9", 0));
    const struct slurm_job *t1 = job(jobs, n, "t1");
    assert_string_equal(t1->name, "nni-e1-t1");
    assert_int_equal(t1->attempt, 1);
    assert_true(t1->start_time > 1600000000 && t1->end_time >= t1->start_time);
    assert_true(t1->submit_time > 1600000000 && t1->submit_time <= t1->start_time);
    assert_int_equal(t1->restart_cnt, 0);
    assert_true(t1->nodes[0] == 'n');
    assert_int_equal(job(jobs, n, "timeout")->attempt, 0); /* no comment */
    assert_int_equal(job(jobs, n, "r2")->attempt, 2);
    assert_null(slurm_job_find(jobs, n, "r2", 1));
    assert_non_null(slurm_job_find(jobs, n, "r2", 2));
    expect(jobs, n, "t1", "COMPLETED", SLURM_SUCCEEDED, 0, "");
    expect(jobs, n, "t2", "FAILED", SLURM_FAILED, 3, "exit code 3");
    expect(jobs, n, "r1", "RUNNING", SLURM_RUNNING, -1, "");
    expect(jobs, n, "timeout", "RUNNING", SLURM_RUNNING, -1, "");
    expect(jobs, n, "p1", "PENDING", SLURM_WAITING, -1, "Slurm: Resources (waiting for free resources)");
    expect(jobs, n, "p2", "PENDING", SLURM_WAITING, -1, "Slurm: Priority");
    assert_string_equal(job(jobs, n, "p2")->nodes, "");
    slurm_jobs_free(jobs, n);

    /* the other experiment sees its own job only */
    parse_fixture("queue.json", "e2", &jobs, &n);
    assert_int_equal(n, 1);
    assert_string_equal(jobs[0].trial_id, "t1");
    slurm_jobs_free(jobs, n);
    parse_fixture("queue.json", "nobody", &jobs, &n);
    assert_int_equal(n, 0);
    assert_null(jobs);
}

static void test_squeue_states(void **state)
{
    (void)state;
    struct slurm_job *jobs;
    int n;
    parse_fixture("requeued.json", "e1", &jobs, &n);
    expect(jobs, n, "q1", "PENDING", SLURM_WAITING, -1, "BeginTime");
    expect(jobs, n, "q1", "PENDING", SLURM_WAITING, -1, "requeued by Slurm");
    assert_int_equal(job(jobs, n, "q1")->restart_cnt, 1);
    expect(jobs, n, "p2", "NODE_FAIL", SLURM_RETRY, 143, "NODE_FAIL"); /* its wait status: 36608 */
    slurm_jobs_free(jobs, n);

    parse_fixture("states.json", "e1", &jobs, &n);
    expect(jobs, n, "t1", "COMPLETED", SLURM_SUCCEEDED, 0, "");
    expect(jobs, n, "r2", "FAILED", SLURM_FAILED, 130, "exit code 130"); /* its INT trap's exit */
    expect(jobs, n, "r1", "CANCELLED", SLURM_CANCELED, 143, "scancel"); /* was running: SIGTERM */
    expect(jobs, n, "c1", "CANCELLED", SLURM_CANCELED, 0, "scancel"); /* never ran */
    expect(jobs, n, "p2", "NODE_FAIL", SLURM_RETRY, 143, "retried");
    expect(jobs, n, "q1", "RUNNING", SLURM_RUNNING, -1, "");
    assert_int_equal(job(jobs, n, "q1")->restart_cnt, 1);
    expect(jobs, n, "timeout", "TIMEOUT", SLURM_FAILED, 143, "TIMEOUT");
    expect(jobs, n, "g1", "COMPLETED", SLURM_SUCCEEDED, 0, "");
    slurm_jobs_free(jobs, n);
}

static void test_squeue_bad(void **state)
{
    (void)state;
    struct slurm_job *jobs = (struct slurm_job *)1;
    int n = 5;
    struct errbuf e;
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"", "not a JSON object"},
        {"squeue: error: Invalid user", "not a JSON object"},
        {"[1, 2]", "not a JSON object"},
        {"{\"jobs\": {}}", "no \"jobs\" list"},
        {"{\"errors\": [{\"error\": \"Unable to contact slurm controller\", \"errno\": 1}], \"jobs\": []}",
         "Unable to contact slurm controller"},
        {"{\"errors\": [{\"error\": \"line\\nbreak\"}], \"jobs\": []}", "line\\nbreak"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (slurm_squeue_parse(bad[i].text, strlen(bad[i].text), "e1", &jobs, &n, &e) == 0)
            fail_msg("'%s' parsed", bad[i].text);
        if (!strstr(e.msg, bad[i].msg))
            fail_msg("'%s': message '%s'", bad[i].text, e.msg);
        assert_null(jobs);
        assert_int_equal(n, 0);
    }
    /* entries of the wrong shape are skipped, not trusted */
    const char *odd = "{\"errors\": [], \"jobs\": [{\"name\": \"nni-e1-a\"}, {\"job_id\": 5, \"name\": 7},"
                      "{\"job_id\": 6, \"name\": \"nni-e1-\"}, {\"job_id\": 7, \"name\": \"nni-e1-b\","
                      " \"comment\": \"trialq:e1:b:x\"}, {\"job_id\": 8, \"name\": \"nni-e1-c\", \"comment\": "
                      "\"trialq:e1:c:1\", \"job_state\": 3, \"exit_code\": -5}]}";
    assert_int_equal(slurm_squeue_parse(odd, strlen(odd), "e1", &jobs, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_int_equal(jobs[0].job_id, 8);
    assert_string_equal(jobs[0].state, "");
    assert_int_equal(jobs[0].exit_status, 0);
    struct slurm_verdict v;
    slurm_job_verdict(&jobs[0], &v);
    assert_int_equal(v.outcome, SLURM_UNKNOWN);
    slurm_jobs_free(jobs, n);
}

static void test_state_table(void **state)
{
    (void)state;
    static const struct {
        const char *state, *reason;
        int status, restarts;
        enum slurm_outcome outcome;
        int exit_code;
        const char *msg;
    } cases[] = {
        {"PENDING", "QOSMaxJobsPerUserLimit", 0, 0, SLURM_WAITING, -1, "QOS's limit of jobs per user"},
        {"PENDING", "SomeNewReason", 0, 0, SLURM_WAITING, -1, "Slurm: SomeNewReason"},
        {"PENDING", "None", 0, 0, SLURM_WAITING, -1, "Slurm: PENDING"},
        {"REQUEUED", "None", 0, 1, SLURM_WAITING, -1, "requeued by Slurm"},
        {"CONFIGURING", "None", 0, 0, SLURM_RUNNING, -1, ""},
        {"COMPLETING", "None", 0, 0, SLURM_RUNNING, -1, ""},
        {"SUSPENDED", "None", 0, 0, SLURM_RUNNING, -1, "SUSPENDED"},
        {"COMPLETED", "None", 0, 0, SLURM_SUCCEEDED, 0, ""},
        {"FAILED", "NonZeroExitCode", 256, 0, SLURM_FAILED, 1, "exit code 1, NonZeroExitCode"},
        {"FAILED", "None", 9, 0, SLURM_FAILED, 137, "killed by signal 9"},
        {"CANCELLED", "None", 15, 0, SLURM_CANCELED, 143, "scancel"},
        {"TIMEOUT", "TimeLimit", 0, 0, SLURM_FAILED, 0, "TIMEOUT"},
        {"OUT_OF_MEMORY", "OutOfMemory", 0x8900, 0, SLURM_FAILED, 137, "OUT_OF_MEMORY"},
        {"DEADLINE", "None", 0, 0, SLURM_FAILED, 0, "DEADLINE"},
        {"NODE_FAIL", "None", 0, 0, SLURM_RETRY, 0, "a node of the job failed"},
        {"PREEMPTED", "None", 0, 0, SLURM_RETRY, 0, "preempted"},
        {"BOOT_FAIL", "None", 0, 0, SLURM_RETRY, 0, "failed to boot"},
        {"SPECIAL_EXIT", "None", 0, 0, SLURM_FAILED, 0, "SPECIAL_EXIT"},
        {"WEIRD\n[x]", "None", 0, 0, SLURM_UNKNOWN, -1, "WEIRD\\n[x]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct slurm_verdict v;
        slurm_state_verdict(cases[i].state, cases[i].reason, cases[i].status, cases[i].restarts, &v);
        if (v.outcome != cases[i].outcome || v.exit_code != cases[i].exit_code || !strstr(v.message, cases[i].msg))
            fail_msg("%s/%s: %d exit %d '%s'", cases[i].state, cases[i].reason, v.outcome, v.exit_code, v.message);
    }
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rm_rf(g_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),         cmocka_unit_test(test_time),
        cmocka_unit_test(test_sizes),         cmocka_unit_test(test_sbatch_argv),
        cmocka_unit_test(test_script_runs),   cmocka_unit_test(test_script_credentials),
        cmocka_unit_test(test_script_setup),
        cmocka_unit_test(test_script_stop),   cmocka_unit_test(test_exit_parse),
        cmocka_unit_test(test_sbatch_transient), cmocka_unit_test(test_oom_line),
        cmocka_unit_test(test_squeue_queue),  cmocka_unit_test(test_squeue_states),
        cmocka_unit_test(test_squeue_bad),    cmocka_unit_test(test_state_table),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
