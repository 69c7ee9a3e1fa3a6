/* test_queue_gpu.c: nvidia-smi parsing, GPU slots claimed with the trial (per-GPU
 * limits, useActiveGpu, gpuIndices, a trial taking every GPU of a machine, two
 * experiments sharing one machine), release on finish/requeue/crash, and several
 * processes claiming at once never overcommitting a GPU.
 * Data: $TRIALQ_TEST_DATA/fixtures/nvidia-smi, the fake tool in e2e/fake. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "queue/queue.h"
#include "tests/unit/db_fixture.h"

static char *tmpdir;
static const char *data_dir;

static char *data_file(const char *name)
{
    char *p = xasprintf("%s/fixtures/nvidia-smi/%s", data_dir, name);
    char *s = read_file(p, NULL);
    assert_non_null(s);
    free(p);
    return s;
}

/* A machine with GPUs: procs[i] processes on GPU i. */
static int64_t add_machine(struct db *db, const char *host, int ngpu, const int *procs)
{
    struct errbuf e;
    int64_t id;
    assert_int_equal(machine_ensure(db, "remote", host, 22, "u", &id, &e), 0);
    struct gpu_info g[16];
    memset(g, 0, sizeof g);
    for (int i = 0; i < ngpu; i++) {
        g[i].index = i;
        g[i].mem_total = 16000;
        g[i].mem_used = procs && procs[i] ? 5000 : 0;
        g[i].util = procs && procs[i] ? 50 : 0;
        g[i].mem_util = 0;
        g[i].active_procs = procs ? procs[i] : 0;
    }
    assert_int_equal(gpu_store(db, id, g, ngpu, NULL, &e), 0);
    return id;
}

static struct gpu_need need_of(int count, int max_per_gpu, int use_active)
{
    struct gpu_need n;
    memset(&n, 0, sizeof n);
    n.count = count;
    n.max_per_gpu = max_per_gpu;
    n.use_active = use_active;
    return n;
}

/* Claims one trial; returns its GPU list (new string) or NULL, reason into r. */
static char *claim(struct db *db, const char *exp, const char *owner, int64_t m, const struct gpu_need *n,
                   char *r, size_t rs, char **trial_id)
{
    struct trial t;
    struct errbuf e;
    char reason[512];
    int rc = queue_claim_on(db, exp, "local", owner, 60000, m, n, &t, reason, sizeof reason, &e);
    assert_true(rc >= 0);
    if (r)
        snprintf(r, rs, "%s", reason);
    if (rc == 0)
        return NULL;
    assert_non_null(t.gpu_indices);
    char *g = xstrdup(t.gpu_indices);
    if (trial_id)
        *trial_id = xstrdup(t.id);
    trial_clear(&t);
    return g;
}

static int64_t claims_on(struct db *db, int64_t m, int idx)
{
    int64_t n = 0;
    struct errbuf e;
    assert_int_equal(db_int(db, &e, &n, "SELECT count(*) FROM gpu_claim WHERE machine_id = ? AND gpu_idx = ?",
                            "id", m, idx), 1);
    return n;
}

/* ---------------- parser ---------------- */

static void test_parse_a100(void **s)
{
    (void)s;
    char *x = data_file("a100x2-535.xml");
    struct gpu_info *g;
    int n;
    struct errbuf e;
    assert_int_equal(gpu_parse_nvsmi(x, strlen(x), &g, &n, &e), 0);
    assert_int_equal(n, 2);
    assert_int_equal(g[0].index, 0);
    assert_string_equal(g[0].name, "NVIDIA A100-SXM4-40GB");
    assert_string_equal(g[0].uuid, "GPU-6f2f1c7e-3b0a-4f5e-9d2c-0a1b2c3d4e5f");
    assert_int_equal(g[0].mem_total, 40960); /* fb_memory_usage, not bar1 (65536) */
    assert_int_equal(g[0].mem_used, 4);
    assert_true(g[0].util == 0 && g[0].mem_util == 0);
    assert_int_equal(g[0].active_procs, 0);
    assert_int_equal(g[1].index, 1);
    assert_int_equal(g[1].mem_used, 17210);
    assert_true(g[1].util == 87 && g[1].mem_util == 41);
    assert_int_equal(g[1].active_procs, 2);
    free(g);
    free(x);
}

static void test_parse_mig_and_old_driver(void **s)
{
    (void)s;
    struct gpu_info *g;
    int n;
    struct errbuf e;
    char *x = data_file("mig-535.xml");
    assert_int_equal(gpu_parse_nvsmi(x, strlen(x), &g, &n, &e), 0);
    assert_int_equal(n, 2);
    /* the MIG device's own memory (40192) does not replace the GPU's */
    assert_int_equal(g[0].mem_total, 81920);
    assert_int_equal(g[0].mem_used, 88);
    assert_true(g[0].util < 0 && g[0].mem_util < 0); /* N/A */
    assert_int_equal(g[0].active_procs, 0);
    assert_int_equal(g[1].active_procs, 1);
    assert_true(g[1].util == 3);
    free(g);
    free(x);

    x = data_file("t4x1-470.xml");
    assert_int_equal(gpu_parse_nvsmi(x, strlen(x), &g, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_string_equal(g[0].name, "Tesla T4");
    assert_int_equal(g[0].mem_total, 15109);
    free(g);
    free(x);
}

/* Real output, not written by hand: scripts/gpu-check.sh on an H200 with driver 580
 * (DTD v13), idle and while a CUDA program held 2 GiB and kept the GPU busy. */
static void test_parse_real_h200(void **s)
{
    (void)s;
    struct gpu_info *g;
    int n;
    struct errbuf e;
    char *x = data_file("h200-580-idle.xml");
    assert_int_equal(gpu_parse_nvsmi(x, strlen(x), &g, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_int_equal(g[0].index, 0);
    assert_string_equal(g[0].name, "NVIDIA H200");
    assert_string_equal(g[0].uuid, "GPU-1de1b78b-5c80-3900-48f1-79097cba20b4");
    assert_int_equal(g[0].mem_total, 143771); /* fb_memory_usage; bar1 says 262144 */
    assert_int_equal(g[0].mem_used, 0);
    assert_true(g[0].util == 0 && g[0].mem_util == 0);
    assert_int_equal(g[0].active_procs, 0);
    free(g);
    free(x);

    x = data_file("h200-580-busy.xml");
    assert_int_equal(gpu_parse_nvsmi(x, strlen(x), &g, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_int_equal(g[0].mem_total, 143771);
    assert_int_equal(g[0].mem_used, 2575); /* not bar1's 2576 nor the process's 2566 */
    assert_int_equal(g[0].util, 100);
    assert_int_equal(g[0].active_procs, 1);
    free(g);
    free(x);
}

static void test_parse_bad(void **s)
{
    (void)s;
    struct gpu_info *g;
    int n;
    struct errbuf e;
    char *x = data_file("no-driver.txt");
    assert_int_equal(gpu_parse_nvsmi(x, strlen(x), &g, &n, &e), -1);
    assert_non_null(strstr(e.msg, "not nvidia-smi XML output"));
    assert_non_null(strstr(e.msg, "couldn't communicate with the NVIDIA driver"));
    free(x);
    /* cut short, mismatched, empty, another root: errors, never a crash */
    x = data_file("a100x2-535.xml");
    assert_int_equal(gpu_parse_nvsmi(x, strlen(x) / 2, &g, &n, &e), -1);
    assert_non_null(strstr(e.msg, "nvidia-smi XML"));
    /* cut at every byte (a tool killed mid-output): an error each time, no crash, and
     * no buffer read past the given length (ASan) */
    size_t len = strlen(x);
    for (size_t cut = 0; cut + 12 < len; cut++) {
        char *part = xstrndup(x, cut);
        int rc = gpu_parse_nvsmi(part, cut, &g, &n, &e);
        if (rc == 0)
            free(g);
        assert_int_equal(rc, -1);
        free(part);
    }
    free(x);
    const char *bad[] = {"", "   ", "<nvidia_smi_log><gpu></uuid></nvidia_smi_log>", "<html><body/></html>",
                         "<nvidia_smi_log><gpu>", "<nvidia_smi_log/><nvidia_smi_log/>", "<<<>>>",
                         "<nvidia_smi_log><!-- unterminated", "<nvidia_smi_log", NULL};
    for (int i = 0; bad[i]; i++)
        assert_int_equal(gpu_parse_nvsmi(bad[i], strlen(bad[i]), &g, &n, &e), -1);
    /* no GPUs at all is a valid answer */
    const char *none = "<?xml version=\"1.0\" ?><nvidia_smi_log><attached_gpus>0</attached_gpus></nvidia_smi_log>";
    assert_int_equal(gpu_parse_nvsmi(none, strlen(none), &g, &n, &e), 0);
    assert_int_equal(n, 0);
    free(g);
    /* entities and self-closing elements */
    const char *ent = "<nvidia_smi_log><gpu><product_name>A &amp; B</product_name><processes/>"
                      "<utilization><gpu_util>12 %</gpu_util></utilization></gpu></nvidia_smi_log>";
    assert_int_equal(gpu_parse_nvsmi(ent, strlen(ent), &g, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_string_equal(g[0].name, "A & B");
    assert_true(g[0].util == 12);
    assert_int_equal(g[0].mem_total, -1);
    free(g);
    /* a negative amount is unknown, not a number to schedule by (found by fuzz/short:
     * tests/fuzz/corpus/nvsmi/regress-negative-mib) */
    const char *neg = "<nvidia_smi_log><gpu><fb_memory_usage><total>-3 MiB</total><used>-4 MiB</used>"
                      "</fb_memory_usage><utilization><gpu_util>-5 %</gpu_util></utilization></gpu></nvidia_smi_log>";
    assert_int_equal(gpu_parse_nvsmi(neg, strlen(neg), &g, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_int_equal(g[0].mem_total, -1);
    assert_int_equal(g[0].mem_used, -1);
    assert_true(g[0].util == -1);
    free(g);
}

/* The fake tool the e2e tests use prints what the parser reads; a missing tool and a
 * failing one are errors that say so. */
static void test_collect_local(void **s)
{
    (void)s;
    char *old_path = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char *fake_dir = xasprintf("%s/e2e/fake", data_dir);
    char *path = xasprintf("%s:%s", fake_dir, old_path);
    char *gpus = xasprintf("%s/gpus.txt", tmpdir);
    const char *lines = "16000 0 0 0\n16000 8000 90 3\n";
    assert_int_equal(write_file_atomic(gpus, lines, strlen(lines), 0644), 0);
    setenv("PATH", path, 1);
    setenv("TRIALQ_FAKE_GPUS", gpus, 1);
    struct gpu_info *g;
    int n;
    struct errbuf e;
    if (access("/usr/bin/python3", X_OK) == 0) {
        assert_int_equal(gpu_collect_local(20000, &g, &n, &e), 0);
        assert_int_equal(n, 2);
        assert_int_equal(g[1].mem_used, 8000);
        assert_int_equal(g[1].active_procs, 3);
        assert_true(g[1].util == 90);
        free(g);
        unsetenv("TRIALQ_FAKE_GPUS"); /* the fake then acts like a host without a driver */
        assert_int_equal(gpu_collect_local(20000, &g, &n, &e), -1);
        assert_non_null(strstr(e.msg, "exit code 9"));
        assert_non_null(strstr(e.msg, "NVIDIA driver"));
    }
    setenv("PATH", "/nonexistent-dir", 1);
    assert_int_equal(gpu_collect_local(20000, &g, &n, &e), -1);
    assert_string_equal(e.msg, "nvidia-smi: not found on PATH");
    setenv("PATH", old_path, 1);
    unsetenv("TRIALQ_FAKE_GPUS");
    free(old_path);
    free(fake_dir);
    free(path);
    free(gpus);
}

/* The local worker's refresh: nvidia-smi runs only when the rows are older than asked,
 * whoever ran it last; a failure is stored as the machine's gpu_error, rows kept. */
static void test_refresh_local(void **s)
{
    (void)s;
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    char *old_path = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char *path = xasprintf("%s/e2e/fake:%s", data_dir, old_path);
    char *gpus = xasprintf("%s/refresh-gpus.txt", tmpdir);
    char *calls = xasprintf("%s.calls", gpus);
    const char *lines = "16000 0 0 0\n16000 0 0 0\n16000 0 0 1\n";
    assert_int_equal(write_file_atomic(gpus, lines, strlen(lines), 0644), 0);
    setenv("PATH", path, 1);
    setenv("TRIALQ_FAKE_GPUS", gpus, 1);
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    char why[256];
    int64_t m, m2, v;
    assert_int_equal(gpu_refresh_local(db, "local", 5000, &m, why, sizeof why, &e), 1);
    assert_string_equal(why, "");
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM gpu WHERE machine_id = ?", "i", m), 1);
    assert_int_equal(v, 3);
    assert_int_equal(db_int(db, &e, &v, "SELECT active_procs FROM gpu WHERE machine_id = ? AND idx = 2", "i", m), 1);
    assert_int_equal(v, 1);
    /* fresh enough: not run again (one call so far) */
    assert_int_equal(gpu_refresh_local(db, "local", 5000, &m2, why, sizeof why, &e), 0);
    assert_int_equal(m, m2);
    char *c = read_file(calls, NULL);
    assert_non_null(c);
    assert_non_null(strchr(c, '\n'));
    assert_null(strchr(strchr(c, '\n') + 1, '\n'));
    free(c);
    /* the driver goes away: the failure is stored, the rows stay */
    unlink(gpus);
    assert_int_equal(gpu_refresh_local(db, "local", 0, &m, why, sizeof why, &e), 1);
    assert_non_null(strstr(why, "exit code 9"));
    char *err = NULL;
    assert_int_equal(db_text(db, &e, &err, "SELECT gpu_error FROM machine WHERE id = ?", "i", m), 1);
    assert_string_equal(err, why);
    free(err);
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM gpu WHERE machine_id = ?", "i", m), 1);
    assert_int_equal(v, 3);
    db_close(db);
    setenv("PATH", old_path, 1);
    unsetenv("TRIALQ_FAKE_GPUS");
    free(old_path);
    free(path);
    free(gpus);
    free(calls);
}

static void test_need_from_config(void **s)
{
    (void)s;
    struct gpu_need n;
    assert_int_equal(gpu_need_from_config("{\"trialGpuNumber\":2,\"trainingService\":{\"platform\":\"local\","
                                          "\"useActiveGpu\":true,\"maxTrialNumberPerGpu\":3,\"gpuIndices\":[0,2]}}",
                                          "local", &n), 2);
    assert_int_equal(n.max_per_gpu, 3);
    assert_true(n.use_active);
    assert_true(n.has_filter);
    char f[64];
    gpu_need_describe_filter(&n, f, sizeof f);
    assert_string_equal(f, "0,2");
    /* hybrid: our entry of the list; its own value wins over the top level */
    assert_int_equal(gpu_need_from_config("{\"trialGpuNumber\":1,\"trainingService\":[{\"platform\":\"remote\","
                                          "\"trialGpuNumber\":4},{\"platform\":\"local\",\"trialGpuNumber\":3,"
                                          "\"gpuIndices\":\"1,3\"}]}", "local", &n), 3);
    gpu_need_describe_filter(&n, f, sizeof f);
    assert_string_equal(f, "1,3");
    assert_false(n.use_active);
    /* null / 0 / absent: no GPU scheduling */
    assert_int_equal(gpu_need_from_config("{\"trialGpuNumber\":null,\"trainingService\":{\"platform\":\"local\"}}",
                                          "local", &n), 0);
    assert_int_equal(gpu_need_from_config("{\"trainingService\":{\"platform\":\"local\",\"trialGpuNumber\":0}}",
                                          "local", &n), 0);
    assert_int_equal(gpu_need_from_config("not json", "local", &n), 0);
    assert_int_equal(n.max_per_gpu, 1);
}

/* ---------------- slots ---------------- */

static void test_per_gpu_limit(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "lim", tmpdir, NULL, 50, 0);
    fx_add_trials(db, "lim", 10, 2);
    int64_t m = add_machine(db, "gpu1", 2, NULL);
    struct gpu_need n = need_of(1, 2, 0);
    char r[512];
    /* spread: 0, 1, then the second share of each */
    const char *want[] = {"0", "1", "0", "1"};
    for (int i = 0; i < 4; i++) {
        char *g = claim(db, "lim", "h:1:1", m, &n, r, sizeof r, NULL);
        assert_non_null(g);
        assert_string_equal(g, want[i]);
        free(g);
    }
    assert_null(claim(db, "lim", "h:1:1", m, &n, r, sizeof r, NULL));
    assert_string_equal(r, "needs 1 GPU; host gpu1 has 0 free, 0 idle");
    assert_int_equal(claims_on(db, m, 0), 2);
    assert_int_equal(claims_on(db, m, 1), 2);
    /* two GPUs per trial at 2 trials per GPU: 2 trials on 2 GPUs */
    struct db *db2 = fx_open_fresh(tmpdir);
    fx_add_experiment(db2, "two", tmpdir, NULL, 50, 0);
    fx_add_trials(db2, "two", 5, 2);
    int64_t m2 = add_machine(db2, "gpu2", 2, NULL);
    struct gpu_need n2 = need_of(2, 2, 0);
    for (int i = 0; i < 2; i++) {
        char *g = claim(db2, "two", "h:1:1", m2, &n2, r, sizeof r, NULL);
        assert_non_null(g);
        assert_string_equal(g, "0,1");
        free(g);
    }
    assert_null(claim(db2, "two", "h:1:1", m2, &n2, r, sizeof r, NULL));
    assert_string_equal(r, "needs 2 GPUs; host gpu2 has 0 free, 0 idle");
    db_close(db2);
    db_close(db);
}

static void test_use_active_gpu(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "act", tmpdir, NULL, 50, 0);
    fx_add_trials(db, "act", 5, 2);
    int procs[3] = {1, 0, 2};
    int64_t m = add_machine(db, "busy", 3, procs);
    struct gpu_need n = need_of(1, 1, 0);
    char r[512];
    char *g = claim(db, "act", "h:1:1", m, &n, r, sizeof r, NULL);
    assert_string_equal(g, "1");
    free(g);
    assert_null(claim(db, "act", "h:1:1", m, &n, r, sizeof r, NULL));
    assert_non_null(strstr(r, "needs 1 GPU; host busy has 0 free, 0 idle"));
    assert_non_null(strstr(r, "useActiveGpu is false"));
    /* useActiveGpu: true takes the busy ones too */
    n.use_active = 1;
    g = claim(db, "act", "h:1:1", m, &n, r, sizeof r, NULL);
    assert_non_null(g);
    assert_true(strcmp(g, "0") == 0 || strcmp(g, "2") == 0);
    free(g);
    /* a GPU our trials hold is not "busy with others" when its processes are theirs */
    struct db *db2 = fx_open_fresh(tmpdir);
    fx_add_experiment(db2, "own", tmpdir, NULL, 50, 0);
    fx_add_trials(db2, "own", 5, 2);
    int64_t m2 = add_machine(db2, "own", 1, NULL);
    struct gpu_need n2 = need_of(1, 2, 0);
    g = claim(db2, "own", "h:1:1", m2, &n2, r, sizeof r, NULL);
    assert_string_equal(g, "0");
    free(g);
    struct gpu_info gi = {.index = 0, .mem_total = 16000, .mem_used = 3000, .util = 80, .active_procs = 1};
    struct errbuf e;
    assert_int_equal(gpu_store(db2, m2, &gi, 1, NULL, &e), 0); /* nvidia-smi now sees our trial */
    g = claim(db2, "own", "h:1:1", m2, &n2, r, sizeof r, NULL);
    assert_non_null(g);
    assert_string_equal(g, "0");
    free(g);
    db_close(db2);
    db_close(db);
}

static void test_gpu_indices(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "idx", tmpdir, NULL, 50, 0);
    fx_add_trials(db, "idx", 6, 2);
    int64_t m = add_machine(db, "four", 4, NULL);
    struct gpu_need n = need_of(1, 1, 0);
    n.has_filter = 1;
    n.allow[0] = (1 << 1) | (1 << 3);
    char r[512];
    char *g1 = claim(db, "idx", "h:1:1", m, &n, r, sizeof r, NULL);
    char *g2 = claim(db, "idx", "h:1:1", m, &n, r, sizeof r, NULL);
    assert_string_equal(g1, "1");
    assert_string_equal(g2, "3");
    free(g1);
    free(g2);
    assert_null(claim(db, "idx", "h:1:1", m, &n, r, sizeof r, NULL));
    assert_string_equal(r, "needs 1 GPU; host four has 0 free, 0 idle");
    /* asking for more than the listed GPUs says so */
    struct gpu_need big = need_of(3, 1, 0);
    big.has_filter = 1;
    big.allow[0] = (1 << 0) | (1 << 2);
    assert_null(claim(db, "idx", "h:1:1", m, &big, r, sizeof r, NULL));
    assert_string_equal(r, "needs 3 GPUs; host four has only 2 of gpuIndices 0,2");
    db_close(db);
}

/* NNI rejects gpuNumber >= gpuCount; a trial here may take every GPU of the machine. */
static void test_all_gpus_of_a_machine(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "all", tmpdir, NULL, 50, 0);
    fx_add_trials(db, "all", 3, 2);
    int64_t one = add_machine(db, "one", 1, NULL);
    int64_t two = add_machine(db, "two", 2, NULL);
    struct gpu_need n1 = need_of(1, 1, 0), n2 = need_of(2, 1, 0), n3 = need_of(3, 1, 0);
    char r[512];
    char *g = claim(db, "all", "h:1:1", one, &n1, r, sizeof r, NULL);
    assert_string_equal(g, "0");
    free(g);
    g = claim(db, "all", "h:1:1", two, &n2, r, sizeof r, NULL);
    assert_string_equal(g, "0,1");
    free(g);
    assert_null(claim(db, "all", "h:1:1", two, &n3, r, sizeof r, NULL));
    assert_string_equal(r, "needs 3 GPUs; host two has only 2");
    /* no GPU at all, and why */
    struct errbuf e;
    int64_t none;
    assert_int_equal(machine_ensure(db, "remote", "cpu", 22, "u", &none, &e), 0);
    assert_null(claim(db, "all", "h:1:1", none, &n1, r, sizeof r, NULL));
    assert_string_equal(r, "needs 1 GPU; host cpu: no GPU information yet");
    assert_int_equal(gpu_store(db, none, NULL, 0, "nvidia-smi: not found on PATH", &e), 0);
    assert_null(claim(db, "all", "h:1:1", none, &n1, r, sizeof r, NULL));
    assert_string_equal(r, "needs 1 GPU; host cpu has no GPU (nvidia-smi: not found on PATH)");
    db_close(db);
}

static void test_two_experiments_share_a_machine(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "expa", tmpdir, NULL, 50, 0);
    fx_add_experiment(db, "expb", tmpdir, NULL, 50, 0);
    fx_add_trials(db, "expa", 5, 2);
    fx_add_trials(db, "expb", 5, 2);
    /* both register the same host: one row, one set of slots */
    struct errbuf e;
    int64_t m = add_machine(db, "shared", 2, NULL), again;
    assert_int_equal(machine_ensure(db, "remote", "shared", 22, "u", &again, &e), 0);
    assert_int_equal(m, again);
    struct gpu_need a = need_of(1, 1, 0), b = need_of(1, 2, 0);
    char r[512];
    char *g = claim(db, "expa", "h:1:1", m, &a, r, sizeof r, NULL);
    assert_string_equal(g, "0");
    free(g);
    /* B shares GPU 1 between two of its trials; A's GPU 0 is whole */
    g = claim(db, "expb", "h:2:2", m, &b, r, sizeof r, NULL);
    assert_string_equal(g, "1");
    free(g);
    g = claim(db, "expb", "h:2:2", m, &b, r, sizeof r, NULL);
    assert_string_equal(g, "1");
    free(g);
    assert_null(claim(db, "expb", "h:2:2", m, &b, r, sizeof r, NULL));
    assert_string_equal(r, "needs 1 GPU; host shared has 0 free, 0 idle");
    assert_null(claim(db, "expa", "h:1:1", m, &a, r, sizeof r, NULL));
    int64_t shares_ok;
    assert_int_equal(db_int(db, &e, &shares_ok, "SELECT max(s) <= 1.000001 FROM (SELECT sum(share) s FROM gpu_claim"
                                                " GROUP BY machine_id, gpu_idx)", ""), 1);
    assert_int_equal(shares_ok, 1);
    db_close(db);
}

static void test_release(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "rel", tmpdir, NULL, 50, 0);
    fx_add_trials(db, "rel", 8, 2);
    int64_t m = add_machine(db, "rel", 1, NULL);
    struct gpu_need n = need_of(1, 1, 0);
    struct errbuf e;
    char r[512];
    char *id = NULL;
    /* finish releases */
    char *g = claim(db, "rel", "h:1:1", m, &n, r, sizeof r, &id);
    assert_non_null(g);
    free(g);
    assert_null(claim(db, "rel", "h:1:1", m, &n, r, sizeof r, NULL));
    assert_int_equal(trial_mark_running(db, id, "h:1:1", "job", "rel", NULL, now_ms(), &e), 1);
    assert_int_equal(trial_finish(db, id, "h:1:1", "SUCCEEDED", 1, 0, now_ms(), NULL, &e), 1);
    free(id);
    /* requeue releases and forgets the indices */
    g = claim(db, "rel", "h:1:1", m, &n, r, sizeof r, &id);
    assert_non_null(g);
    free(g);
    assert_int_equal(trial_requeue(db, id, "h:1:1", "its job vanished", &e), 1);
    struct trial t;
    assert_int_equal(trial_load(db, id, &t, &e), 1);
    assert_string_equal(t.status, "WAITING");
    assert_null(t.gpu_indices);
    trial_clear(&t);
    assert_int_equal(claims_on(db, m, 0), 0);
    free(id);
    /* queue_release releases */
    g = claim(db, "rel", "h:1:1", m, &n, r, sizeof r, &id);
    assert_non_null(g);
    free(g);
    assert_int_equal(queue_release(db, id, "h:1:1", &e), 0);
    assert_int_equal(claims_on(db, m, 0), 0);
    free(id);
    /* a kill of a claimed trial ends it through trial_finish: released */
    g = claim(db, "rel", "h:1:1", m, &n, r, sizeof r, &id);
    assert_non_null(g);
    free(g);
    assert_int_equal(trial_request_kill(db, id, "USER_CANCELED", "test", &e), 1);
    assert_int_equal(trial_finish(db, id, "h:1:1", "USER_CANCELED", 0, 0, now_ms(), NULL, &e), 1);
    assert_int_equal(claims_on(db, m, 0), 0);
    free(id);
    db_close(db);
}

/* A crash leaves claims behind: of a dead worker's trials (still running: they keep
 * their GPUs and the adopter inherits them), or of a trial that some other path made
 * final (nothing holds the GPU any more: it must not block). */
static void test_release_after_crash(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "cra", tmpdir, NULL, 50, 0);
    fx_add_trials(db, "cra", 6, 2);
    int64_t m = add_machine(db, "cra", 1, NULL);
    struct gpu_need n = need_of(1, 1, 0);
    struct errbuf e;
    char r[512];
    char *id = NULL;
    const char *dead = "nosuchhost:999999:1"; /* another host: only its lease expiry tells */
    char *g = claim(db, "cra", dead, m, &n, r, sizeof r, &id);
    assert_non_null(g);
    free(g);
    assert_int_equal(trial_mark_running(db, id, dead, "job", "cra", NULL, now_ms(), &e), 1);
    /* its lease runs out: the trial is adopted with its GPU, which stays taken */
    assert_int_equal(db_run(db, &e, "UPDATE trial SET lease_expires = 1 WHERE id = ?", "s", id), 1);
    struct trial *list;
    int nl;
    assert_int_equal(queue_adopt(db, "cra", "local", "h:5:5", 60000, &list, &nl, &e), 0);
    assert_int_equal(nl, 1);
    assert_string_equal(list[0].gpu_indices, "0");
    trial_clear(&list[0]);
    free(list);
    assert_null(claim(db, "cra", "h:5:5", m, &n, r, sizeof r, NULL));
    assert_int_equal(claims_on(db, m, 0), 1);
    /* the adopter finds the job gone and retries it: the GPU is free again */
    assert_int_equal(trial_requeue(db, id, "h:5:5", "its job vanished", &e), 1);
    free(id);
    g = claim(db, "cra", "h:5:5", m, &n, r, sizeof r, &id);
    assert_non_null(g);
    free(g);
    /* a final state written past the queue (as an older binary or a manual fix would)
     * leaves its claim row: it holds nothing and is cleaned up by the next claim */
    assert_int_equal(db_run(db, &e, "UPDATE trial SET status = 'FAILED', lease_owner = NULL WHERE id = ?", "s", id), 1);
    assert_int_equal(claims_on(db, m, 0), 1);
    g = claim(db, "cra", "h:5:5", m, &n, r, sizeof r, NULL);
    assert_non_null(g);
    assert_string_equal(g, "0");
    free(g);
    assert_int_equal(claims_on(db, m, 0), 1);
    free(id);
    db_close(db);
}

/* queue_claim_host schedules local trials that need GPUs (the local worker's path),
 * and writes the waiting reason on the trials it cannot start. */
static void test_queue_claim_local(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "loc", tmpdir, "{\"trialGpuNumber\":1,\"trainingService\":{\"platform\":\"local\","
                                         "\"trialGpuNumber\":1,\"useActiveGpu\":false}}", 10, 0);
    fx_add_experiment(db, "nog", tmpdir, "{\"trainingService\":{\"platform\":\"local\"}}", 10, 0);
    fx_add_trials(db, "loc", 3, 2);
    fx_add_trials(db, "nog", 3, 2);
    struct errbuf e;
    int64_t m;
    assert_int_equal(machine_ensure(db, "local", host_name(), 0, NULL, &m, &e), 0);
    struct gpu_info g[2] = {{.index = 0, .mem_total = 1000, .mem_used = 0}, {.index = 1, .mem_total = 1000}};
    assert_int_equal(gpu_store(db, m, g, 2, NULL, &e), 0);
    struct trial t;
    assert_int_equal(queue_claim_host(db, "loc", "local", "h:1:1", 60000, &t, &e), 1);
    assert_string_equal(t.gpu_indices, "0");
    trial_clear(&t);
    assert_int_equal(queue_claim_host(db, "loc", "local", "h:1:1", 60000, &t, &e), 1);
    assert_string_equal(t.gpu_indices, "1");
    trial_clear(&t);
    assert_int_equal(queue_claim_host(db, "loc", "local", "h:1:1", 60000, &t, &e), 0);
    char *reason = NULL;
    assert_int_equal(db_text(db, &e, &reason, "SELECT waiting_reason FROM trial WHERE id = 'loc0002'", ""), 1);
    char *want = xasprintf("needs 1 GPU; host %s has 0 free, 0 idle", host_name());
    assert_string_equal(reason, want);
    free(want);
    free(reason);
    /* an experiment without trialGpuNumber is not limited by GPUs */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(queue_claim_host(db, "nog", "local", "h:1:1", 60000, &t, &e), 1);
        assert_null(t.gpu_indices);
        trial_clear(&t);
    }
    db_close(db);
}

static void test_store_inventory(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "inv", tmpdir, NULL, 50, 0);
    fx_add_trials(db, "inv", 3, 2);
    int64_t m = add_machine(db, "inv", 2, NULL);
    struct gpu_need n = need_of(1, 1, 0);
    struct errbuf e;
    char r[512];
    char *g1 = claim(db, "inv", "h:1:1", m, &n, r, sizeof r, NULL);
    char *g2 = claim(db, "inv", "h:1:1", m, &n, r, sizeof r, NULL);
    assert_string_equal(g2, "1");
    free(g1);
    free(g2);
    /* a failed collection keeps the rows and their claims */
    assert_int_equal(gpu_store(db, m, NULL, 0, "nvidia-smi: exit code 9", &e), 0);
    int64_t v;
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM gpu WHERE machine_id = ?", "i", m), 1);
    assert_int_equal(v, 2);
    char *err = NULL;
    assert_int_equal(db_text(db, &e, &err, "SELECT gpu_error FROM machine WHERE id = ?", "i", m), 1);
    assert_string_equal(err, "nvidia-smi: exit code 9");
    free(err);
    /* GPU 1 disappears: its row and claim go */
    struct gpu_info one = {.index = 0, .mem_total = 100};
    assert_int_equal(gpu_store(db, m, &one, 1, NULL, &e), 0);
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM gpu_claim WHERE machine_id = ?", "i", m), 1);
    assert_int_equal(v, 1);
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM gpus_v WHERE host = 'inv'", ""), 1);
    assert_int_equal(v, 1);
    db_close(db);
}

/* Several processes claim and finish at once: no GPU ever holds more than its
 * maxTrialNumberPerGpu, checked by every child after each of its claims and at the end. */
static void test_concurrent_claims_never_overcommit(void **s)
{
    (void)s;
    char *path = xasprintf("%s/conc.db", tmpdir);
    struct db *db;
    struct errbuf e;
    assert_int_equal(db_open(path, &db, &e), 0);
    fx_add_experiment(db, "con", tmpdir, NULL, 1000, 0);
    fx_add_experiment(db, "cox", tmpdir, NULL, 1000, 0);
    fx_add_trials(db, "con", 150, 2);
    fx_add_trials(db, "cox", 150, 2);
    int64_t m = add_machine(db, "conc", 3, NULL);
    db_close(db);
    enum { KIDS = 4 };
    pid_t kids[KIDS];
    for (int k = 0; k < KIDS; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            struct db *d;
            if (db_open(path, &d, &e) < 0)
                _exit(2);
            char owner[32];
            snprintf(owner, sizeof owner, "h:%d:1", k + 100);
            const char *exp = k % 2 ? "cox" : "con";
            struct gpu_need n = need_of(1 + k % 2, 2, 0); /* 1 GPU at 1/2, or 2 GPUs at 1/2 */
            char *held[64];
            int nh = 0;
            unsigned seed = (unsigned)k * 7919u + 1;
            for (int it = 0; it < 120; it++) {
                struct trial t;
                char reason[256];
                int rc = queue_claim_on(d, exp, "local", owner, 60000, m, &n, &t, reason, sizeof reason, &e);
                if (rc < 0)
                    _exit(3);
                if (rc == 1) {
                    if (nh < 64)
                        held[nh++] = xstrdup(t.id);
                    trial_clear(&t);
                    int64_t over = 0;
                    if (db_int(d, &e, &over, "SELECT count(*) FROM (SELECT sum(share) s FROM gpu_claim"
                                             " GROUP BY machine_id, gpu_idx) WHERE s > 1.000001", "") < 0)
                        _exit(4);
                    if (over)
                        _exit(5);
                }
                seed = seed * 1103515245u + 12345u;
                if (nh > 0 && (seed >> 16) % 2 == 0) {
                    int i = (int)((seed >> 8) % (unsigned)nh);
                    if (trial_finish(d, held[i], owner, "SUCCEEDED", 1, 0, now_ms(), NULL, &e) != 1)
                        _exit(6);
                    free(held[i]);
                    held[i] = held[--nh];
                }
            }
            for (int i = 0; i < nh; i++)
                free(held[i]);
            db_close(d);
            _exit(0);
        }
    }
    for (int k = 0; k < KIDS; k++) {
        int st;
        assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    assert_int_equal(db_open(path, &db, &e), 0);
    int64_t v;
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM (SELECT sum(share) s FROM gpu_claim"
                                        " GROUP BY machine_id, gpu_idx) WHERE s > 1.000001", ""), 1);
    assert_int_equal(v, 0);
    /* every live claim belongs to a claimed trial, and every claimed trial has its claims */
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM gpu_claim c JOIN trial t ON t.id = c.trial_id"
                                        " WHERE t.status != 'WAITING' OR t.lease_owner IS NULL", ""), 1);
    assert_int_equal(v, 0);
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM trial t WHERE t.lease_owner IS NOT NULL AND"
                                        " (SELECT count(*) FROM gpu_claim c WHERE c.trial_id = t.id) !="
                                        " (CASE t.experiment_id WHEN 'con' THEN 1 ELSE 2 END)", ""), 1);
    assert_int_equal(v, 0);
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM trial WHERE status = 'SUCCEEDED'", ""), 1);
    assert_true(v > 0);
    db_close(db);
    free(path);
}

int main(void)
{
    char tmpl[] = "/tmp/trialq-test-gpu-XXXXXX";
    tmpdir = mkdtemp(tmpl);
    data_dir = getenv("TRIALQ_TEST_DATA");
    if (!data_dir)
        data_dir = TRIALQ_SOURCE_DIR "/tests";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_a100),
        cmocka_unit_test(test_parse_mig_and_old_driver),
        cmocka_unit_test(test_parse_real_h200),
        cmocka_unit_test(test_parse_bad),
        cmocka_unit_test(test_collect_local),
        cmocka_unit_test(test_refresh_local),
        cmocka_unit_test(test_need_from_config),
        cmocka_unit_test(test_per_gpu_limit),
        cmocka_unit_test(test_use_active_gpu),
        cmocka_unit_test(test_gpu_indices),
        cmocka_unit_test(test_all_gpus_of_a_machine),
        cmocka_unit_test(test_two_experiments_share_a_machine),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_release_after_crash),
        cmocka_unit_test(test_queue_claim_local),
        cmocka_unit_test(test_store_inventory),
        cmocka_unit_test(test_concurrent_claims_never_overcommit),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_rf(tmpdir);
    return rc;
}
