/* test_config.c: config/ — YAML/JSON experiment configs to the canonical JSON NNI
 * stores, v1 conversion, validation messages with file:line:col, marks, redaction.
 * Data: $TRIALQ_TEST_DATA/configs/good and configs/bad. Every file in bad/ starts with
 * one or more "# expect: <substring>" lines that its error message must contain. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "config/config_int.h"
#include "common/json.h"
#include "common/secrets.h"

static char *g_data; /* .../tests */
static char *g_good; /* realpath of .../tests/configs/good */
static char *g_tmp;  /* scratch dir, also $HOME so "~" is predictable */

static char *data_path(const char *rel)
{
    return xasprintf("%s/%s", g_data, rel);
}

static int setup_all(void **state)
{
    const char *d = getenv("TRIALQ_TEST_DATA");
    g_data = xstrdup(d && *d ? d : TRIALQ_SOURCE_DIR "/tests");
    char *good = data_path("configs/good");
    g_good = realpath(good, NULL);
    free(good);
    if (!g_good)
        return -1;
    char tmpl[] = "/tmp/tq-config-test-XXXXXX";
    if (!mkdtemp(tmpl))
        return -1;
    g_tmp = realpath(tmpl, NULL);
    setenv("HOME", g_tmp, 1);
    return 0;
}

static int teardown_all(void **state)
{
    rm_rf(g_tmp);
    free(g_tmp);
    free(g_good);
    free(g_data);
    return 0;
}

/* Writes text to <tmp>/<name> and returns the path (caller frees). */
static char *write_tmp(const char *name, const char *text)
{
    char *p = xasprintf("%s/%s", g_tmp, name);
    assert_int_equal(write_file_atomic(p, text, strlen(text), 0644), 0);
    return p;
}

static struct exp_config *load_ok(const char *path)
{
    struct exp_config *cfg = NULL;
    struct errbuf e = {{0}};
    int rc = config_load(path, &cfg, &e);
    if (rc != 0)
        fail_msg("config_load(%s) failed: %s", path, e.msg);
    assert_non_null(cfg);
    return cfg;
}

static struct exp_config *load_good(const char *name)
{
    char *p = data_path(name);
    struct exp_config *cfg = load_ok(p);
    free(p);
    return cfg;
}

/* "key.sub[1].x" lookup in a cJSON tree */
static const cJSON *jget(const cJSON *root, const char *path)
{
    char *copy = xstrdup(path);
    const cJSON *cur = root;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save)) {
        char *br = strchr(tok, '[');
        if (br)
            *br = '\0';
        if (*tok) /* "[0].x" indexes the root itself */
            cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
        while (br && cur) {
            int idx = atoi(br + 1);
            cur = cJSON_GetArrayItem(cur, idx);
            br = strchr(br + 1, '[');
        }
    }
    free(copy);
    return cur;
}

static const char *jstr(const cJSON *root, const char *path)
{
    const cJSON *v = jget(root, path);
    if (!cJSON_IsString(v))
        fail_msg("%s is not a string", path);
    return v->valuestring;
}

static double jnum(const cJSON *root, const char *path)
{
    const cJSON *v = jget(root, path);
    if (!cJSON_IsNumber(v))
        fail_msg("%s is not a number", path);
    return v->valuedouble;
}

static char *replace_all(const char *s, const char *from, const char *to)
{
    struct strbuf sb;
    sb_init(&sb);
    size_t fl = strlen(from);
    for (const char *p = s; *p;) {
        if (strncmp(p, from, fl) == 0) {
            sb_puts(&sb, to);
            p += fl;
        } else {
            sb_add(&sb, p, 1);
            p++;
        }
    }
    return sb_detach(&sb);
}

/* ---- a complete v2 config: the whole canonical JSON, in NNI's key order ---- */

static void test_full_v2_canonical(void **state)
{
    struct exp_config *cfg = load_good("configs/good/full_v2.yml");
    static const char expected_tmpl[] =
        "{\"experimentName\":\"mnist-tpe\",\"experimentType\":\"hpo\",\"searchSpace\":{"
        "\"batch_size\":{\"_type\":\"choice\",\"_value\":[16,32,64,128]},"
        "\"hidden_size\":{\"_type\":\"choice\",\"_value\":[128,256,512,1024]},"
        "\"lr\":{\"_type\":\"loguniform\",\"_value\":[0.0001,0.1]},"
        "\"momentum\":{\"_type\":\"uniform\",\"_value\":[0,1]}},"
        "\"trialCommand\":\"python3 mnist.py\",\"trialCodeDirectory\":\"@GOOD@\","
        "\"trialConcurrency\":2,\"trialGpuNumber\":0,\"maxExperimentDuration\":\"1h\","
        "\"maxTrialNumber\":10,\"maxTrialDuration\":600,\"maxTrialRetries\":3,"
        "\"nniManagerIp\":\"127.0.0.1\",\"useAnnotation\":false,\"debug\":false,"
        "\"logLevel\":\"info\",\"experimentWorkingDirectory\":\"@HOME@/nni-experiments\","
        "\"tunerGpuIndices\":[0,1],"
        "\"tuner\":{\"name\":\"TPE\",\"classArgs\":{\"optimize_mode\":\"maximize\",\"seed\":42}},"
        "\"assessor\":{\"name\":\"Medianstop\",\"classArgs\":{\"optimize_mode\":\"maximize\","
        "\"start_step\":5}},"
        "\"trainingService\":{\"platform\":\"local\",\"trialCommand\":\"python3 mnist.py\","
        "\"trialCodeDirectory\":\"@GOOD@\",\"trialGpuNumber\":0,\"debug\":false,"
        "\"useActiveGpu\":false,\"maxTrialNumberPerGpu\":1,\"reuseMode\":false}}";
    char *a = replace_all(expected_tmpl, "@GOOD@", g_good);
    char *expected = replace_all(a, "@HOME@", g_tmp);
    char *got = cJSON_PrintUnformatted(cfg->canonical);
    assert_string_equal(got, expected);
    free(got);
    free(expected);
    free(a);

    /* the struct */
    assert_string_equal(cfg->experiment_name, "mnist-tpe");
    assert_string_equal(cfg->trial_command, "python3 mnist.py");
    assert_string_equal(cfg->trial_code_directory, g_good);
    assert_int_equal(cfg->trial_concurrency, 2);
    assert_int_equal(cfg->trial_gpu_number, 0);
    assert_int_equal(cfg->max_experiment_seconds, 3600);
    assert_int_equal(cfg->max_trial_number, 10);
    assert_int_equal(cfg->max_trial_seconds, 600);
    assert_int_equal(cfg->max_trial_retries, 3);
    assert_string_equal(cfg->log_level, "info");
    assert_string_equal(cfg->platform, "local");
    assert_string_equal(cfg->nni_manager_ip, "127.0.0.1");
    assert_true(cfg->search_space == cJSON_GetObjectItemCaseSensitive(cfg->canonical,
                                                                       "searchSpace"));
    assert_int_equal(cfg->tuner.set, 1);
    assert_string_equal(cfg->tuner.name, "TPE");
    assert_null(cfg->tuner.class_name);
    assert_int_equal(jnum(cfg->tuner.class_args, "seed"), 42);
    assert_int_equal(cfg->assessor.set, 1);
    assert_string_equal(cfg->assessor.name, "Medianstop");
    assert_int_equal(cfg->is_v1, 0);
    assert_int_equal(cfg->nwarnings, 0);
    char *src = data_path("configs/good/full_v2.yml");
    char *src_real = realpath(src, NULL);
    assert_string_equal(cfg->source_path, src_real);
    free(src);
    free(src_real);
    config_free(cfg);
}

/* ---- defaults of a minimal config (NNI §4.5) ---- */

static void test_minimal_defaults(void **state)
{
    char *p = write_tmp("minimal.yml", "searchSpace: {}\ntrialCommand: ./run.sh\n"
                                        "trialConcurrency: 1\ntuner: {name: Random}\n"
                                        "trainingService: {platform: local}\ndebug: true\n");
    struct exp_config *cfg = load_ok(p);
    const cJSON *c = cfg->canonical;
    assert_string_equal(jstr(c, "experimentType"), "hpo");
    assert_string_equal(jstr(c, "trialCodeDirectory"), g_tmp);
    assert_string_equal(jstr(c, "logLevel"), "debug"); /* debug: true changes the default */
    assert_true(cJSON_IsTrue(jget(c, "trainingService.debug")));
    assert_int_equal(jnum(c, "maxTrialRetries"), 1);
    assert_null(jget(c, "experimentName"));
    assert_null(jget(c, "trialGpuNumber"));
    assert_null(jget(c, "trainingService.useActiveGpu"));
    assert_null(jget(c, "tuner.classArgs"));
    assert_true(cJSON_IsObject(cfg->tuner.class_args)); /* never NULL in the struct */
    assert_int_equal(cfg->trial_gpu_number, -1);
    assert_int_equal(cfg->max_experiment_seconds, 0);
    assert_int_equal(cfg->max_trial_number, 0);
    assert_int_equal(cfg->assessor.set, 0);
    assert_null(cfg->experiment_name);
    assert_null(cfg->nni_manager_ip);
    char *wd = xasprintf("%s/nni-experiments", g_tmp);
    assert_string_equal(cfg->experiment_working_directory, wd);
    free(wd);
    config_free(cfg);
    free(p);
}

/* ---- durations ---- */

static void test_durations(void **state)
{
    static const struct {
        const char *yaml;
        int64_t seconds;
        int is_string;
    } cases[] = {
        {"1h", 3600, 1},   {"30m", 1800, 1}, {"10s", 10, 1},    {"2d", 172800, 1},
        {"0.5h", 1800, 1}, {"1.5H", 5400, 1}, {"0.001s", 1, 1}, {"90", 90, 0},
        {"\"45m\"", 2700, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *text = xasprintf("searchSpace: {}\ntrialCommand: x\ntrialConcurrency: 1\n"
                               "maxExperimentDuration: %s\nmaxTrialDuration: %s\n"
                               "tuner: {name: TPE}\ntrainingService: {platform: local}\n",
                               cases[i].yaml, cases[i].yaml);
        char *p = write_tmp("duration.yml", text);
        struct exp_config *cfg = load_ok(p);
        assert_int_equal(cfg->max_experiment_seconds, cases[i].seconds);
        assert_int_equal(cfg->max_trial_seconds, cases[i].seconds);
        const cJSON *v = jget(cfg->canonical, "maxExperimentDuration");
        /* kept as written, like NNI: the manager parses it */
        if (cases[i].is_string) {
            assert_true(cJSON_IsString(v));
            const char *want = cases[i].yaml[0] == '"' ? "45m" : cases[i].yaml;
            assert_string_equal(v->valuestring, want);
        } else {
            assert_true(cJSON_IsNumber(v));
            assert_int_equal(v->valuedouble, cases[i].seconds);
        }
        config_free(cfg);
        free(p);
        free(text);
    }
    static const char *const bad[] = {"8x", "-1h", "0", "0s", "h", "1hh", "1e3h", "[1h]", "true",
                                      "1.5", "0x10s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = xasprintf("searchSpace: {}\ntrialCommand: x\ntrialConcurrency: 1\n"
                               "maxExperimentDuration: %s\ntuner: {name: TPE}\n"
                               "trainingService: {platform: local}\n", bad[i]);
        char *p = write_tmp("duration.yml", text);
        struct exp_config *cfg = NULL;
        struct errbuf e;
        assert_int_equal(config_load(p, &cfg, &e), -1);
        assert_null(cfg);
        char *want = xasprintf("%s:4:24: maxExperimentDuration: ", p);
        if (!strstr(e.msg, want))
            fail_msg("duration %s: unexpected message: %s", bad[i], e.msg);
        free(want);
        free(p);
        free(text);
    }
}

/* ---- key folding, relative paths, YAML search space file ---- */

static void test_key_folding_and_relative_paths(void **state)
{
    struct exp_config *cfg = load_good("configs/good/sub/folded_keys.yml");
    const cJSON *c = cfg->canonical;
    char *ss = xasprintf("%s/search_space.yml", g_good);
    assert_string_equal(jstr(c, "searchSpaceFile"), ss); /* "../search_space.yml" */
    free(ss);
    assert_string_equal(jstr(c, "trialCodeDirectory"), g_good); /* ".." from sub/ */
    assert_string_equal(jstr(c, "trialCommand"), "python3 train.py");
    assert_int_equal(jnum(c, "trialConcurrency"), 4);
    assert_int_equal(jnum(c, "maxTrialNumber"), 20);
    assert_string_equal(jstr(c, "maxExperimentDuration"), "0.5h");
    assert_int_equal(cfg->max_experiment_seconds, 1800);
    assert_string_equal(jstr(c, "tuner.name"), "Random");
    assert_int_equal(jnum(c, "tuner.classArgs.seed"), 7);
    assert_string_equal(jstr(c, "trainingService.platform"), "local");
    assert_int_equal(jnum(c, "trainingService.maxTrialNumberPerGpu"), 1);
    /* no key survives in the spelling the user wrote */
    assert_null(jget(c, "trial_command"));
    assert_null(jget(c, "Tuner"));
    /* the YAML (not JSON) search space file went through the YAML fallback */
    assert_string_equal(jstr(c, "searchSpace.optimizer._value[1]"), "adam");
    assert_int_equal(jnum(c, "searchSpace.dropout_rate._value[0]") * 10, 5);
    config_free(cfg);
}

static void test_search_space_file_json(void **state)
{
    struct exp_config *cfg = load_good("configs/good/ss_file.yml");
    const cJSON *c = cfg->canonical;
    char *ss = xasprintf("%s/search_space.json", g_good);
    assert_string_equal(jstr(c, "searchSpaceFile"), ss);
    size_t len;
    char *text = read_file(ss, &len);
    cJSON *want = cJSON_Parse(text);
    assert_true(cJSON_Compare(want, cfg->search_space, 1));
    cJSON_Delete(want);
    free(text);
    free(ss);
    /* both keys kept, in NNI's order */
    assert_string_equal(c->child->next->string, "searchSpaceFile");
    assert_string_equal(c->child->next->next->string, "searchSpace");
    /* search space errors are reported at the searchSpaceFile key */
    int line = 0, col = 0;
    assert_int_equal(config_mark_of(cfg, "searchSpace.conv_size._value", &line, &col), 0);
    assert_int_equal(line, 1);
    assert_int_equal(col, 18);
    config_free(cfg);
}

/* A config that is a symbolic link reads relative paths from where the link is (NNI's
 * Path(config).parent); a JSON search space with a UTF-8 BOM loads (NNI reads it through
 * its YAML fallback); a search space "file" that is a device is refused, not read. */
static void test_paths_bom_devices(void **state)
{
    (void)state;
    char dir[] = "/tmp/tq-cfgpaths-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *a = xasprintf("%s/a", dir), *b = xasprintf("%s/b", dir);
    assert_int_equal(mkdir(a, 0700), 0);
    assert_int_equal(mkdir(b, 0700), 0);
    char *real = xasprintf("%s/exp.yml", b), *link = xasprintf("%s/exp.yml", a), *ss = xasprintf("%s/ss.json", a);
    const char *yml = "searchSpaceFile: ss.json\ntrialCommand: python3 t.py\ntrialConcurrency: 1\n"
                      "tuner: {name: Random}\ntrainingService: {platform: local}\n";
    assert_int_equal(write_file_replace(real, yml, strlen(yml), 0600), 0);
    assert_int_equal(symlink("../b/exp.yml", link), 0);
    const char *json = "\xEF\xBB\xBF{\"lr\": {\"_type\": \"uniform\", \"_value\": [0, 1]}}\n";
    assert_int_equal(write_file_replace(ss, json, strlen(json), 0600), 0);
    struct exp_config *cfg = NULL;
    struct errbuf e;
    if (config_load(link, &cfg, &e) < 0)
        fail_msg("%s", e.msg);
    assert_non_null(cJSON_GetObjectItemCaseSensitive(cfg->search_space, "lr"));
    config_free(cfg);
    /* read from b/, where the link points, there is no ss.json */
    assert_int_equal(config_load(real, &cfg, &e), -1);
    assert_non_null(strstr(e.msg, "ss.json"));
    const char *dev = "searchSpaceFile: /dev/zero\ntrialCommand: python3 t.py\ntrialConcurrency: 1\n"
                      "tuner: {name: Random}\ntrainingService: {platform: local}\n";
    assert_int_equal(write_file_replace(real, dev, strlen(dev), 0600), 0);
    assert_int_equal(config_load(real, &cfg, &e), -1);
    assert_non_null(strstr(e.msg, "/dev/zero is not a regular file"));
    assert_non_null(strstr(e.msg, "exp.yml:1:18"));
    rm_rf(dir);
    free(a);
    free(b);
    free(real);
    free(link);
    free(ss);
}

/* ---- v1 ---- */

static void test_v1_local_conversion(void **state)
{
    struct exp_config *cfg = load_good("configs/good/v1_local.yml");
    const cJSON *c = cfg->canonical;
    assert_int_equal(cfg->is_v1, 1);
    assert_string_equal(jstr(c, "experimentName"), "example_mnist");
    assert_int_equal(jnum(c, "trialConcurrency"), 1);
    assert_string_equal(jstr(c, "maxExperimentDuration"), "1h");
    assert_int_equal(jnum(c, "maxTrialNumber"), 10);
    char *ss = xasprintf("%s/search_space.json", g_good);
    assert_string_equal(jstr(c, "searchSpaceFile"), ss);
    free(ss);
    assert_true(cJSON_IsObject(jget(c, "searchSpace.conv_size")));
    assert_string_equal(jstr(c, "trialCommand"), "python3 mnist.py");
    assert_string_equal(jstr(c, "trialCodeDirectory"), g_good);
    assert_int_equal(jnum(c, "trialGpuNumber"), 1);
    char *logdir = xasprintf("%s/nni-logs", g_tmp);
    assert_string_equal(jstr(c, "experimentWorkingDirectory"), logdir);
    free(logdir);
    assert_string_equal(jstr(c, "tuner.name"), "TPE");
    assert_string_equal(jstr(c, "tuner.classArgs.optimize_mode"), "maximize");
    assert_int_equal(jnum(c, "tunerGpuIndices[0]"), 0);
    assert_string_equal(jstr(c, "assessor.className"), "my_assessor.MyAssessor");
    assert_string_equal(jstr(c, "assessor.codeDirectory"), g_good);
    assert_int_equal(jnum(c, "assessor.classArgs.epochs"), 5);
    assert_string_equal(jstr(c, "trainingService.platform"), "local");
    assert_true(cJSON_IsTrue(jget(c, "trainingService.useActiveGpu")));
    assert_int_equal(jnum(c, "trainingService.maxTrialNumberPerGpu"), 2);
    assert_int_equal(jnum(c, "trainingService.gpuIndices[1]"), 1);
    assert_int_equal(jnum(c, "trainingService.trialGpuNumber"), 1);
    /* nothing v1 is left */
    static const char *const gone[] = {"authorName", "trainingServicePlatform", "maxExecDuration",
                                       "maxTrialNum", "searchSpacePath", "trial", "logDir",
                                       "localConfig", "multiThread", "tuner.builtinTunerName",
                                       "tuner.gpuIndices", "assessor.classFileName"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        if (jget(c, gone[i]))
            fail_msg("v1 key %s left in the canonical config", gone[i]);
    assert_string_equal(cfg->assessor.class_name, "my_assessor.MyAssessor");
    assert_int_equal(cfg->nwarnings, 1);
    assert_non_null(strstr(cfg->warnings[0], "v1 config converted to v2; keys dropped: "
                                             "authorName, multiThread"));
    /* positions still point into the v1 file: maxTrialNumber was maxTrialNum on line 5 */
    int line, col;
    assert_int_equal(config_mark_of(cfg, "maxTrialNumber", &line, &col), 0);
    assert_int_equal(line, 5);
    assert_int_equal(config_mark_of(cfg, "trainingService.maxTrialNumberPerGpu", &line, &col), 0);
    assert_int_equal(line, 29);
    config_free(cfg);
}

static void test_v1_remote_conversion(void **state)
{
    struct exp_config *cfg = load_good("configs/good/v1_remote.yml");
    const cJSON *c = cfg->canonical;
    assert_string_equal(cfg->platform, "remote");
    assert_string_equal(jstr(c, "tuner.name"), "Evolution");
    assert_int_equal(jnum(c, "tuner.classArgs.population_size"), 20);
    assert_true(cJSON_IsFalse(jget(c, "trainingService.reuseMode")));
    assert_string_equal(jstr(c, "trainingService.machineList[0].host"), "10.1.1.1");
    assert_string_equal(jstr(c, "trainingService.machineList[0].user"), "bob");
    assert_string_equal(jstr(c, "trainingService.machineList[0].password"), "bob123");
    assert_int_equal(jnum(c, "trainingService.machineList[0].port"), 22);
    assert_null(jget(c, "trainingService.machineList[0].sshKeyFile"));
    assert_string_equal(jstr(c, "trainingService.machineList[1].host"), "10.1.1.2");
    assert_int_equal(jnum(c, "trainingService.machineList[1].port"), 2222);
    assert_string_equal(jstr(c, "trainingService.machineList[1].user"), "alice");
    char *key = xasprintf("%s/test_ssh_key", g_good);
    assert_string_equal(jstr(c, "trainingService.machineList[1].sshKeyFile"), key);
    free(key);
    assert_string_equal(jstr(c, "trainingService.machineList[1].sshPassphrase"), "qwert");
    assert_null(jget(c, "machineList"));
    assert_null(jget(c, "remoteConfig"));
    assert_int_equal(cfg->nwarnings, 1);
    assert_non_null(strstr(cfg->warnings[0], "keys dropped: authorName"));
    config_free(cfg);
}

/* ---- remote and hybrid ---- */

static void test_remote_machine_list(void **state)
{
    struct exp_config *cfg = load_good("configs/good/remote.yml");
    const cJSON *c = cfg->canonical;
    assert_string_equal(cfg->platform, "remote");
    assert_int_equal(cfg->trial_gpu_number, 1);
    assert_string_equal(cfg->nni_manager_ip, "10.0.0.5");
    const cJSON *ts = jget(c, "trainingService");
    assert_string_equal(jstr(ts, "nniManagerIp"), "10.0.0.5"); /* kept for remote */
    assert_int_equal(jnum(ts, "trialGpuNumber"), 1);
    assert_int_equal(cJSON_GetArraySize(jget(ts, "machineList")), 2);
    const cJSON *m0 = jget(ts, "machineList[0]");
    assert_string_equal(jstr(m0, "host"), "192.168.0.10");
    assert_int_equal(jnum(m0, "port"), 22);
    assert_string_equal(jstr(m0, "user"), "alice");
    char *key = xasprintf("%s/test_ssh_key", g_good);
    assert_string_equal(jstr(m0, "sshKeyFile"), key);
    free(key);
    assert_string_equal(jstr(m0, "sshPassphrase"), "open sesame");
    assert_true(cJSON_IsTrue(jget(m0, "useActiveGpu")));
    assert_int_equal(jnum(m0, "maxTrialNumberPerGpu"), 2);
    assert_int_equal(jnum(m0, "gpuIndices[1]"), 1);
    const cJSON *m1 = jget(ts, "machineList[1]");
    assert_int_equal(jnum(m1, "port"), 2222);
    assert_string_equal(jstr(m1, "password"), "hunter2");
    assert_null(jget(m1, "sshKeyFile")); /* a password clears the key file, as NNI */
    assert_true(cJSON_IsFalse(jget(m1, "useActiveGpu")));
    assert_int_equal(cJSON_GetArraySize(jget(m1, "gpuIndices")), 1);
    assert_int_equal(jnum(m1, "gpuIndices[0]"), 3);
    assert_string_equal(jstr(m1, "pythonPath"), "/opt/venv/bin");
    int line, col;
    assert_int_equal(config_mark_of(cfg, "trainingService.machineList[1].port", &line, &col), 0);
    assert_int_equal(line, 22);
    assert_int_equal(col, 7);
    config_free(cfg);
}

static void test_hybrid_list(void **state)
{
    struct exp_config *cfg = load_good("configs/good/hybrid.yml");
    const cJSON *c = cfg->canonical;
    assert_string_equal(cfg->platform, "hybrid");
    const cJSON *ts = jget(c, "trainingService");
    assert_true(cJSON_IsArray(ts));
    assert_int_equal(cJSON_GetArraySize(ts), 2);
    assert_string_equal(jstr(ts, "[0].platform"), "local");
    assert_string_equal(jstr(c, "trainingService[1].platform"), "remote");
    /* shortcuts copied into each */
    assert_string_equal(jstr(c, "trainingService[0].trialCommand"), "python3 mnist.py");
    assert_string_equal(jstr(c, "trainingService[1].trialCommand"), "python3 mnist.py");
    assert_string_equal(jstr(c, "trainingService[1].trialCodeDirectory"), g_good);
    assert_string_equal(jstr(c, "trainingService[1].machineList[0].password"), "s3cret");
    assert_string_equal(cfg->trial_command, "python3 mnist.py");
    config_free(cfg);
}

/* ---- the other platforms, v2 and v1: documented keys accepted, defaults filled ---- */

struct platform_case {
    const char *name;
    const char *yaml;
    const char *checks[14]; /* "path=<unformatted JSON>", or "!path" for "absent" */
};

#define SS_TOP "searchSpace: {}\ntrialConcurrency: 1\ntuner: {name: TPE}\n"
#define V1_TOP "authorName: a\nexperimentName: e\ntrialConcurrency: 1\nsearchSpacePath: ss.json\n" \
               "tuner: {builtinTunerName: TPE}\n"

static const struct platform_case platform_cases[] = {
    {"openpai",
     SS_TOP "trialCommand: python3 mnist.py\ntrialGpuNumber: 1\ntrainingService:\n"
            "  platform: openpai\n  host: pai.example.com\n  username: alice\n  token: jwt\n"
            "  trialCpuNumber: 2\n  trialMemorySize: 8gb\n  storageConfigName: confignfs-data\n"
            "  localStorageMountPoint: .\n  containerStorageMountPoint: /mnt/data\n"
            "  openpaiConfig: {taskRoles: {main: {commands: [python3 mnist.py]}}}\n",
     {"trainingService.host=\"https://pai.example.com\"",
      "trainingService.dockerImage=\"msranni/nni:latest\"", "trainingService.reuseMode=true",
      "trainingService.trialGpuNumber=1", "trainingService.trialMemorySize=\"8gb\"",
      "trainingService.localStorageMountPoint=\"@TMP@\"",
      "trainingService.openpaiConfig={\"taskRoles\":{\"main\":{\"commands\":[\"python3 mnist.py\"]}}}"}},
    {"kubeflow",
     SS_TOP "trainingService:\n  platform: kubeflow\n  operator: tf-operator\n  apiVersion: v1\n"
            "  storage: {storageType: nfs, server: 10.0.0.9, path: /exports}\n"
            "  worker: {replicas: 2, command: python3 dist.py, gpuNumber: 1, cpuNumber: 2, "
            "memorySize: 8192}\n"
            "  ps: {replicas: 1, command: python3 ps.py, cpuNumber: 1, memorySize: 2gb}\n",
     {"trainingService.trialCommand=\"\"",
      "trainingService.storage={\"storageType\":\"nfs\",\"server\":\"10.0.0.9\",\"path\":"
      "\"/exports\"}",
      "trainingService.worker.memorySize=8192", "trainingService.worker.codeDirectory=\"@TMP@\"",
      "trainingService.worker.dockerImage=\"msranni/nni:latest\"",
      "trainingService.ps.gpuNumber=0", "trainingService.namespace=\"default\"",
      "trainingService.reuseMode=true", "!trainingService.master", "!trialCommand"}},
    {"frameworkcontroller",
     SS_TOP "trainingService:\n  platform: frameworkcontroller\n"
            "  storage: {storageType: azureStorage, azureAccount: acct, azureShare: share,\n"
            "            keyVaultName: vault, keyVaultKey: key}\n"
            "  serviceAccountName: frameworkbarrier\n  taskRoles:\n"
            "    - name: worker\n      taskNumber: 2\n      command: python3 mnist.py\n"
            "      gpuNumber: 0\n      cpuNumber: 1\n      memorySize: 8gb\n"
            "      frameworkAttemptCompletionPolicy: {minFailedTaskCount: 1, "
            "minSucceedTaskCount: -1}\n",
     {"trainingService.storage.keyVaultKey=\"key\"",
      "trainingService.taskRoles[0].taskNumber=2",
      "trainingService.taskRoles[0].frameworkAttemptCompletionPolicy.minSucceedTaskCount=-1",
      "trainingService.taskRoles[0].dockerImage=\"msranni/nni:latest\"",
      "trainingService.serviceAccountName=\"frameworkbarrier\""}},
    {"aml",
     SS_TOP "trialCommand: python3 mnist.py\ntrainingService:\n  platform: aml\n"
            "  subscriptionId: sub\n  resourceGroup: rg\n  workspaceName: ws\n"
            "  computeTarget: gpu-cluster\n",
     {"trainingService.dockerImage=\"msranni/nni:latest\"",
      "trainingService.maxTrialNumberPerGpu=1", "trainingService.computeTarget=\"gpu-cluster\""}},
    {"dlc",
     SS_TOP "trialCommand: python3 mnist.py\ntrainingService:\n  platform: dlc\n"
            "  image: registry/pai-dlc/tf:1.15\n  podCount: 1\n  ecsSpec: ecs.c6.large\n"
            "  region: cn-hangzhou\n  accessKeyId: id\n  accessKeySecret: secret\n"
            "  localStorageMountPoint: /mnt/nas\n  containerStorageMountPoint: /mnt/nas\n",
     {"trainingService.type=\"Worker\"", "trainingService.jobType=\"TFJob\"",
      "trainingService.accessKeySecret=\"secret\"", "!trainingService.workspaceId"}},
    {"adl",
     SS_TOP "trialCommand: python3 mnist.py\nnniManagerIp: 10.0.0.1\ntrainingService:\n"
            "  platform: adl\n  image: petuum/adaptdl:latest\n  imagePullSecrets: [{name: s}]\n"
            "  checkpoint: {storageClass: nfs, storageSize: 1Gi}\n  cpuNumber: 2\n"
            "  memorySize: 1Gi\n",
     {"trainingService.nniManagerIp=\"10.0.0.1\"", "trainingService.adaptive=false",
      "trainingService.imagePullSecrets[0].name=\"s\"", "trainingService.namespace=\"default\""}},
    {"slurm",
     SS_TOP "trialCommand: python3 mnist.py\ntrialGpuNumber: 1\nmaxTrialDuration: 2h\ntrainingService:\n"
            "  platform: slurm\n  partition: gpu\n  account: proj-42\n  timeLimit: 3h\n  cpusPerTrial: 4\n"
            "  memoryPerTrial: 16gb\n  sbatchArgs: [--exclusive, \"--mail-type=END\", -N1]\n"
            "  setupScript: |\n    module load cuda\n    conda activate nni\n"
            "  sharedDirectory: /scratch/nni\n"
            "  loginNode: {host: login1.example.org, user: alice, password: pw}\n",
     {"trainingService.trialGpuNumber=1", "trainingService.partition=\"gpu\"",
      "trainingService.timeLimit=\"3h\"", "trainingService.memoryPerTrial=\"16gb\"",
      "trainingService.sbatchArgs=[\"--exclusive\",\"--mail-type=END\",\"-N1\"]",
      "trainingService.setupScript=\"module load cuda\\nconda activate nni\\n\"",
      "trainingService.sharedDirectory=\"/scratch/nni\"", "trainingService.loginNode.port=22",
      "!trainingService.loginNode.sshKeyFile", "trainingService.acceptNewHostKeys=false",
      "!trainingService.gpusPerTrial", "!trainingService.qos"}},
    {"sharedStorage",
     SS_TOP "trialCommand: x\ntrainingService: {platform: remote, reuseMode: true, machineList: "
            "[{host: h, user: u, password: p}]}\n"
            "sharedStorage:\n  storageType: AzureBlob\n  localMountPoint: ~/mnt\n"
            "  remoteMountPoint: mnt\n  localMounted: nnimount\n  storageAccountName: acct\n"
            "  storageAccountKey: key\n  containerName: c\n",
     {"sharedStorage.localMountPoint=\"@TMP@/mnt\"", "sharedStorage.storageAccountKey=\"key\"",
      "trainingService.reuseMode=true"}},
    {"v1 pai",
     V1_TOP "trainingServicePlatform: pai\nnniManagerIp: 10.0.0.2\ntrial:\n"
            "  command: python3 mnist.py\n  codeDir: .\n  gpuNum: 1\n  cpuNum: 2\n"
            "  memoryMB: 8196\n  image: msranni/nni:latest\n  virtualCluster: default\n"
            "  nniManagerNFSMountPath: .\n  containerNFSMountPath: /mnt/data/user\n"
            "  paiStorageConfigName: confignfs-data\n"
            "paiConfig:\n  userName: alice\n  token: jwt\n  host: 10.1.1.1\n  reuse: false\n",
     {"trainingService.platform=\"openpai\"", "trainingService.username=\"alice\"",
      "trainingService.host=\"https://10.1.1.1\"", "trainingService.trialCpuNumber=2",
      "trainingService.trialMemorySize=8196", "trainingService.reuseMode=false",
      "trainingService.storageConfigName=\"confignfs-data\"",
      "trainingService.containerStorageMountPoint=\"/mnt/data/user\"",
      "trainingService.trialGpuNumber=1", "!paiConfig"}},
    {"v1 kubeflow",
     V1_TOP "trainingServicePlatform: kubeflow\ntrial:\n  codeDir: .\n"
            "  worker: {replicas: 1, command: python3 w.py, gpuNum: 0, cpuNum: 1, memoryMB: 8192, "
            "image: msranni/nni:latest}\n"
            "kubeflowConfig:\n  operator: tf-operator\n  apiVersion: v1\n  storage: azureStorage\n"
            "  keyVault: {vaultName: v, name: k}\n  azureStorage: {accountName: a, azureShare: s}\n"
            "  uploadRetryCount: 3\n",
     {"trainingService.storage={\"storageType\":\"azureStorage\",\"azureAccount\":\"a\","
      "\"azureShare\":\"s\",\"keyVaultName\":\"v\",\"keyVaultKey\":\"k\"}",
      "trainingService.worker.memorySize=8192", "trainingService.worker.gpuNumber=0",
      "trainingService.worker.command=\"python3 w.py\"", "trainingService.trialCommand=\"\"",
      "!kubeflowConfig"}},
    {"v1 frameworkcontroller",
     V1_TOP "trainingServicePlatform: frameworkcontroller\ntrial:\n  codeDir: .\n  taskRoles:\n"
            "    - name: worker\n      taskNum: 1\n      command: python3 mnist.py\n"
            "      gpuNum: 0\n      cpuNum: 1\n      memoryMB: 8192\n      image: msranni/nni\n"
            "      frameworkAttemptCompletionPolicy: {minFailedTaskCount: 1, "
            "minSucceededTaskCount: 1}\n"
            "frameworkcontrollerConfig:\n  storage: nfs\n  serviceAccountName: fb\n"
            "  nfs: {server: 10.0.0.3, path: /nfs}\n",
     {"trainingService.taskRoles[0].taskNumber=1",
      "trainingService.taskRoles[0].frameworkAttemptCompletionPolicy={\"minFailedTaskCount\":1,"
      "\"minSucceedTaskCount\":1}",
      "trainingService.storage.server=\"10.0.0.3\"", "trainingService.serviceAccountName=\"fb\""}},
    {"v1 aml",
     V1_TOP "trainingServicePlatform: aml\ntrial:\n  command: python3 mnist.py\n  codeDir: .\n"
            "  image: msranni/nni\n  gpuNum: 1\n"
            "amlConfig:\n  subscriptionId: s\n  resourceGroup: r\n  workspaceName: w\n"
            "  computeTarget: c\n  maxTrialNumPerGpu: 2\n",
     {"trainingService.dockerImage=\"msranni/nni\"", "trainingService.maxTrialNumberPerGpu=2",
      "trainingService.subscriptionId=\"s\""}},
    {"v1 hybrid",
     V1_TOP "trainingServicePlatform: hybrid\ntrial:\n  command: python3 mnist.py\n  codeDir: .\n"
            "  gpuNum: 0\nhybridConfig:\n  trainingServicePlatforms: [local, remote]\n"
            "remoteConfig: {reuse: true}\nmachineList: [{ip: 10.1.1.1, username: u, passwd: p}]\n",
     {"trainingService[0].platform=\"local\"", "trainingService[1].platform=\"remote\"",
      "trainingService[1].reuseMode=true", "trainingService[1].machineList[0].user=\"u\""}},
};

static void test_other_platforms(void **state)
{
    free(write_tmp("ss.json", "{}"));
    for (size_t i = 0; i < sizeof platform_cases / sizeof platform_cases[0]; i++) {
        const struct platform_case *pc = &platform_cases[i];
        char *p = write_tmp("platform.yml", pc->yaml);
        struct exp_config *cfg = NULL;
        struct errbuf e;
        if (config_load(p, &cfg, &e) != 0)
            fail_msg("%s: %s", pc->name, e.msg);
        for (int k = 0; k < 14 && pc->checks[k]; k++) {
            const char *chk = pc->checks[k];
            if (chk[0] == '!') {
                if (jget(cfg->canonical, chk + 1))
                    fail_msg("%s: %s should be absent", pc->name, chk + 1);
                continue;
            }
            const char *eq = strchr(chk, '=');
            char *path = xstrndup(chk, (size_t)(eq - chk));
            char *want = replace_all(eq + 1, "@TMP@", g_tmp);
            const cJSON *v = jget(cfg->canonical, path);
            char *got = v ? cJSON_PrintUnformatted(v) : xstrdup("(absent)");
            if (strcmp(got, want) != 0)
                fail_msg("%s: %s is %s, expected %s", pc->name, path, got, want);
            free(got);
            free(want);
            free(path);
        }
        config_free(cfg);
        free(p);
    }
}

/* slurm: a timeLimit below maxTrialDuration is warned about at its key; the login node's
 * password is a secret; without a password its sshKeyFile must exist */
static void test_slurm_keys(void **state)
{
    (void)state;
    char *p = write_tmp("slurm.yml", SS_TOP "trialCommand: x\nmaxTrialDuration: 2h\ntrainingService:\n"
                                            "  platform: slurm\n  timeLimit: 90m\n"
                                            "  loginNode: {host: login1, user: alice, password: s3cret}\n");
    struct exp_config *cfg = load_ok(p);
    assert_int_equal(cfg->nwarnings, 1);
    assert_non_null(strstr(cfg->warnings[0], ":8:3: trainingService.timeLimit: is shorter than maxTrialDuration"));
    cJSON *red = config_redacted(cfg->canonical);
    assert_string_equal(jstr(red, "trainingService.loginNode.password"), "********");
    assert_string_equal(jstr(red, "trainingService.loginNode.host"), "login1");
    cJSON_Delete(red);
    config_free(cfg);
    free(p);
    p = write_tmp("slurm.yml", SS_TOP "trialCommand: x\ntrainingService:\n  platform: slurm\n"
                               "  loginNode: {host: login1, user: alice, sshKeyFile: /nonexistent/key}\n");
    struct errbuf e;
    assert_int_equal(config_load(p, &cfg, &e), -1);
    assert_non_null(strstr(e.msg, "trainingService.loginNode.sshKeyFile: /nonexistent/key: No such file"));
    free(p);
}

/* dlc and dlts name the plain-http opt-in alike: `insecure` (dlts refuses a plain
 * http:// dashboard beyond 127.0.0.1 without it); the old dlts name is an unknown key */
static void test_insecure_key_of_dlc_and_dlts(void **state)
{
    (void)state;
#define DLTS_TS SS_TOP "trialCommand: x\ntrainingService:\n  platform: dlts\n  dashboard: http://10.0.0.1/\n"   \
                       "  team: nni\n  email: a@example.com\n  password: pw\n"                                 \
                       "  localStorageMountPoint: /tmp\n  containerStorageMountPoint: /mnt/share\n"
    struct errbuf e;
    struct exp_config *cfg;
    char *p = write_tmp("dlts.yml", DLTS_TS);
    assert_int_equal(config_load(p, &cfg, &e), -1);
    assert_non_null(strstr(e.msg, "trainingService.dashboard: plain http://"));
    assert_non_null(strstr(e.msg, "set insecure: true"));
    free(p);
    p = write_tmp("dlts.yml", DLTS_TS "  insecure: true\n");
    cfg = load_ok(p);
    assert_true(cJSON_IsTrue(jget(cfg->canonical, "trainingService.insecure")));
    assert_int_equal(cfg->nwarnings, 0); /* plain http: no certificate to skip */
    config_free(cfg);
    free(p);
    /* https with insecure: true: its certificate is not verified, which is said */
    char *https = xstrdup(DLTS_TS "  insecure: true\n");
    char *at = strstr(https, "http://");
    char *fixed = xasprintf("%.*shttps://%s", (int)(at - https), https, at + 7);
    free(https);
    https = fixed;
    p = write_tmp("dlts.yml", https);
    cfg = load_ok(p);
    assert_int_equal(cfg->nwarnings, 1);
    assert_non_null(strstr(cfg->warnings[0], "trainingService.insecure: true: the TLS certificate of https:/"));
    assert_non_null(strstr(cfg->warnings[0], "name its CA with caBundle instead"));
    config_free(cfg);
    free(p);
    free(https);
    p = write_tmp("dlts.yml", DLTS_TS "  allowInsecureHttp: true\n");
    assert_int_equal(config_load(p, &cfg, &e), -1);
    assert_non_null(strstr(e.msg, "allowInsecureHttp"));
    free(p);
#undef DLTS_TS
    p = write_tmp("dlc.yml", SS_TOP "trialCommand: x\ntrainingService:\n  platform: dlc\n  type: Worker\n"
                             "  image: img\n  jobType: PyTorchJob\n  podCount: 1\n  ecsSpec: ecs.c6.large\n"
                             "  region: cn-test\n  localStorageMountPoint: /tmp\n"
                             "  containerStorageMountPoint: /mnt/nas\n  endpoint: http://10.0.0.1\n  insecure: true\n");
    cfg = load_ok(p);
    assert_true(cJSON_IsTrue(jget(cfg->canonical, "trainingService.insecure")));
    assert_int_equal(cfg->nwarnings, 0);
    config_free(cfg);
    free(p);
    /* no endpoint: the region's, https */
    p = write_tmp("dlc.yml", SS_TOP "trialCommand: x\ntrainingService:\n  platform: dlc\n  type: Worker\n"
                             "  image: img\n  jobType: PyTorchJob\n  podCount: 1\n  ecsSpec: ecs.c6.large\n"
                             "  region: cn-test\n  localStorageMountPoint: /tmp\n"
                             "  containerStorageMountPoint: /mnt/nas\n  insecure: true\n");
    cfg = load_ok(p);
    assert_int_equal(cfg->nwarnings, 1);
    assert_non_null(strstr(cfg->warnings[0], "the TLS certificate of the endpoint is not verified"));
    config_free(cfg);
    free(p);
}

/* ---- advisor, anchors, JSON input ---- */

static void test_advisor_becomes_tuner(void **state)
{
    char *p = write_tmp("advisor.yml",
                        "searchSpace: {x: {_type: choice, _value: [1, 2]}}\ntrialCommand: x\n"
                        "trialConcurrency: 1\nadvisor:\n  name: Hyperband\n  classArgs:\n"
                        "    R: 60\ntrainingService: {platform: local}\n");
    struct exp_config *cfg = load_ok(p);
    assert_string_equal(jstr(cfg->canonical, "tuner.name"), "Hyperband");
    assert_null(jget(cfg->canonical, "advisor"));
    assert_string_equal(cfg->tuner.name, "Hyperband");
    int line, col;
    assert_int_equal(config_mark_of(cfg, "tuner.classArgs.R", &line, &col), 0);
    assert_int_equal(line, 7);
    assert_int_equal(col, 5);
    config_free(cfg);
    free(p);
}

static void test_anchors_and_merge_keys(void **state)
{
    char *p = write_tmp("anchors.yml",
                        "defaults: &defaults\n  platform: remote\n  reuseMode: false\n");
    /* "defaults" is not a config key: first check the error, then a valid use */
    struct exp_config *cfg = NULL;
    struct errbuf e;
    assert_int_equal(config_load(p, &cfg, &e), -1);
    assert_non_null(strstr(e.msg, ":1:1: defaults: unknown key"));
    free(p);
    p = write_tmp("anchors.yml",
                  "searchSpace: &space {x: {_type: choice, _value: [1, 2]}}\n"
                  "trialCommand: &cmd python3 a.py\ntrialConcurrency: 1\n"
                  "tuner: {name: TPE, classArgs: {space_copy: *space}}\n"
                  "trainingService:\n  platform: remote\n  trialCommand: *cmd\n"
                  "  machineList:\n    - &m {host: h1, user: u, password: p, port: 2200}\n"
                  "    - <<: *m\n      host: h2\n");
    cfg = load_ok(p);
    const cJSON *c = cfg->canonical;
    assert_int_equal(jnum(c, "tuner.classArgs.space_copy.x._value[1]"), 2);
    assert_string_equal(jstr(c, "trainingService.trialCommand"), "python3 a.py");
    assert_string_equal(jstr(c, "trainingService.machineList[1].host"), "h2");
    assert_int_equal(jnum(c, "trainingService.machineList[1].port"), 2200);
    assert_string_equal(jstr(c, "trainingService.machineList[1].user"), "u");
    config_free(cfg);
    free(p);
}

/* YAML documents as NNI reads them: PyYAML's safe_load (through /usr/bin/python3 and
 * python3-yaml) is the oracle for what trialq's loader makes of them, key order
 * included: merge keys (<<) in every arrangement, and YAML 1.1's plain scalars. */
static void test_yaml_as_pyyaml(void **state)
{
    (void)state;
    if (access("/usr/bin/python3", X_OK) != 0 || system("/usr/bin/python3 -c 'import yaml' 2>/dev/null") != 0)
        skip();
    static const char *const docs[] = {
        "a: &a {x: 1, y: 2}\nb:\n  <<: *a\n  z: 3\n",
        "a: &a {x: 1, y: 2}\nb:\n  z: 3\n  <<: *a\n  x: 9\n",
        "p: &p {lr: 1, bs: 2}\nq: &q {bs: 3, dropout: 4}\nr:\n  <<: [*p, *q]\n  mom: 5\n",
        "p: &p {lr: 1, bs: 2}\nq: &q {bs: 3, dropout: 4}\nr:\n  mom: 5\n  <<: [*q, *p]\n  lr: 6\n",
        "p: &p {a: 1}\nq: &q {a: 2, b: 3}\nr:\n  <<: *p\n  c: 0\n  <<: *q\n",
        "s:\n  <<: {lr: {_type: uniform, _value: [0, 1]}, bs: {_type: choice, _value: [1, 2]}}\n"
        "  dropout: {_type: uniform, _value: [0, 0.5]}\n",
        "deep: &d {k: {m: 1}}\nx: {<<: *d, j: 2}\ny: {<<: [*d, {k: 5, n: 6}]}\n",
        "ints: [010, 0o10, 0b11, 0x1f, 1:30, -1:30, 1_000, +5, 0, -0, 00, 08, 0b, 1.5e+3, .5, 1., "
        "6.8e-5, 1:30.5, 190:20:30, 0x_1F, 1__0]\n",
        "other: [yes, No, on, OFF, y, n, ~, null, Null, true, FALSE, '010', \"0b11\"]\n",
    };
    enum { N = sizeof docs / sizeof *docs };
    char dir[] = "/tmp/tq-yaml-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[300], out[300], cmd[1000];
    snprintf(out, sizeof out, "%s/out", dir);
    for (int i = 0; i < N; i++) {
        snprintf(path, sizeof path, "%s/%d.yml", dir, i);
        assert_int_equal(write_file_replace(path, docs[i], strlen(docs[i]), 0600), 0);
    }
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import json, math, sys, yaml\n"
             "def norm(v):\n"
             "    if isinstance(v, float) and math.isinf(v): return \"inf\" if v > 0 else \"-inf\"\n"
             "    if isinstance(v, dict): return {k: norm(x) for k, x in v.items()}\n"
             "    if isinstance(v, list): return [norm(x) for x in v]\n"
             "    return v\n"
             "for i in range(%d):\n"
             "    print(json.dumps(norm(yaml.safe_load(open(\"%s/%%d.yml\" %% i))), separators=(\",\", \":\")))' > %s",
             N, dir, out);
    assert_int_equal(system(cmd), 0);
    char *theirs = read_file(out, NULL);
    assert_non_null(theirs);
    char *line = theirs;
    for (int i = 0; i < N; i++) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        *nl = 0;
        struct errbuf e;
        struct ynode *root = NULL;
        if (yaml_parse("doc.yml", docs[i], strlen(docs[i]), &root, &e) < 0)
            fail_msg("doc %d: %s", i, e.msg);
        struct vctx c;
        vctx_init(&c, "doc.yml", dir, &e);
        cJSON *j = NULL;
        /* infinities: cJSON has no text for them; compare their signs */
        if (ynode_to_json(&c, root, &j) < 0)
            fail_msg("doc %d: %s", i, e.msg);
        vctx_release(&c);
        ynode_free(root);
        char *mine = json_print_exact(j);
        /* json_print_exact prints integral doubles as integers, as Python's int */
        cJSON *want = cJSON_Parse(line);
        cJSON *got = cJSON_Parse(mine);
        char *w = json_print_exact(want), *g = json_print_exact(got);
        if (strcmp(w, g) != 0)
            fail_msg("doc %d: %s\n--- PyYAML\n%s\n--- trialq\n%s", i, docs[i], w, g);
        free(w);
        free(g);
        cJSON_Delete(want);
        cJSON_Delete(got);
        free(mine);
        cJSON_Delete(j);
        line = nl + 1;
    }
    free(theirs);
    rm_rf(dir);
    /* trialq's one difference, documented: exponents without a '.' or a sign, which
     * PyYAML leaves as strings although they are meant as numbers (lr: 1e-4) */
    const char *exp_doc = "v: [1e3, 1.5e3, 1e-4]\n";
    struct errbuf e;
    struct ynode *root = NULL;
    assert_int_equal(yaml_parse("e.yml", exp_doc, strlen(exp_doc), &root, &e), 0);
    const struct ynode *v = root->entries[0].value;
    assert_int_equal(v->nitems, 3);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(v->items[i]->kind, Y_FLOAT);
    assert_true(v->items[0]->d == 1000 && v->items[1]->d == 1500 && v->items[2]->d == 1e-4);
    ynode_free(root);
}

static void test_json_config(void **state)
{
    char *p = write_tmp("exp.json",
                        "{\n\t\"experimentName\": \"json\",\n\t\"searchSpace\": {\n"
                        "\t\t\"lr\": {\"_type\": \"loguniform\", \"_value\": [1e-4, 0.1]}\n\t},\n"
                        "\t\"trialCommand\": \"python3 t.py\",\n\t\"trialConcurrency\": 3,\n"
                        "\t\"tuner\": {\"name\": \"TPE\"},\n"
                        "\t\"trainingService\": {\"platform\": \"local\"}\n}\n");
    struct exp_config *cfg = load_ok(p);
    assert_string_equal(cfg->experiment_name, "json");
    assert_true(jnum(cfg->canonical, "searchSpace.lr._value[0]") == 1e-4);
    int line, col;
    assert_int_equal(config_mark_of(cfg, "searchSpace.lr._value", &line, &col), 0);
    assert_int_equal(line, 4);
    assert_int_equal(col, 33);
    config_free(cfg);
    free(p);
}

/* ---- positions ---- */

static void test_mark_of_inline_search_space(void **state)
{
    struct exp_config *cfg = load_good("configs/good/full_v2.yml");
    int line = 0, col = 0;
    /* block style: "    _value: [0.0001, 0.1]" on line 8 */
    assert_int_equal(config_mark_of(cfg, "searchSpace.lr._value", &line, &col), 0);
    assert_int_equal(line, 8);
    assert_int_equal(col, 5);
    /* flow style: "  batch_size: {_type: choice, _value: [16, 32, 64, 128]}" */
    assert_int_equal(config_mark_of(cfg, "searchSpace.batch_size._value", &line, &col), 0);
    assert_int_equal(line, 4);
    assert_int_equal(col, 31);
    assert_int_equal(config_mark_of(cfg, "searchSpace.batch_size._value[2]", &line, &col), 0);
    assert_int_equal(line, 4);
    assert_int_equal(col, 48);
    /* an unknown leaf falls back to its nearest known parent */
    assert_int_equal(config_mark_of(cfg, "searchSpace.lr._value[9]", &line, &col), 0);
    assert_int_equal(line, 8);
    assert_int_equal(config_mark_of(cfg, "searchSpace.lr", &line, &col), 0);
    assert_int_equal(line, 6);
    assert_int_equal(col, 3);
    assert_int_equal(config_mark_of(cfg, "tuner.classArgs.seed", &line, &col), 0);
    assert_int_equal(line, 27);
    assert_int_equal(config_mark_of(cfg, "trainingService.platform", &line, &col), 0);
    assert_int_equal(line, 34);
    assert_int_equal(col, 3);
    assert_int_equal(config_mark_of(cfg, "noSuchKey", &line, &col), -1);
    config_free(cfg);

    /* a nested choice, named the way tuners/searchspace.c names it */
    char *p = write_tmp("nested.yml",
                        "searchSpace:\n  layer:\n    _type: choice\n    _value:\n"
                        "      - {_name: conv, kernel: {_type: choice, _value: [3, 5]}}\n"
                        "      - _name: pool\n        size: {_type: choice, _value: [2]}\n"
                        "trialCommand: x\ntrialConcurrency: 1\ntuner: {name: TPE}\n"
                        "trainingService: {platform: local}\n");
    cfg = load_ok(p);
    assert_int_equal(config_mark_of(cfg, "searchSpace.layer[1].size", &line, &col), 0);
    assert_int_equal(line, 7);
    assert_int_equal(col, 9);
    assert_int_equal(config_mark_of(cfg, "searchSpace.layer[0].kernel._value[1]", &line, &col),
                     0);
    assert_int_equal(line, 5);
    assert_int_equal(col, 59);
    assert_int_equal(config_mark_of(cfg, "searchSpace.layer._value[1]", &line, &col), 0);
    assert_int_equal(line, 6);
    assert_int_equal(col, 9);
    config_free(cfg);
    free(p);
}

/* ---- redaction ---- */

/* secrets under any name with token, secret, password, passphrase, key, credential,
 * auth, bearer or connection in it, in any algorithm's classArgs and platform block, at
 * any depth of lists and objects; and what only looks alike */
#define MANY_SECRETS \
   "{\"searchSpace\":{\"monkey\":{\"_type\":\"choice\",\"_value\":[1]}," \
   "\"keys\":{\"_type\":\"choice\",\"_value\":[\"a\"]},\"api_key\":{\"_type\":\"choice\",\"_value\":[2]}}," \
   "\"tuner\":{\"classArgs\":{\"connection_string\":\"S1\",\"bearer\":\"S2\",\"apiKey\":\"S3\"," \
   "\"authToken\":\"S4\",\"my_secret\":\"S5\",\"PASSWORD\":\"S6\",\"sshKey\":\"S7\",\"basic_auth\":{\"u\":\"S8\"}," \
   "\"OAuthHeader\":\"S9\",\"keys\":[\"T1\"],\"db\":{\"connection\":\"T2\",\"nested\":[{\"Key\":\"T3\"}]}," \
   "\"monkey\":\"banana\",\"keyboard\":\"qwerty\",\"max_connections\":8,\"sort_key_count\":3," \
   "\"keyFile\":\"/k\",\"sshKeyFile\":\"/s\",\"secretName\":\"sn\",\"token_path\":\"/t\"," \
   "\"password_file\":\"/p\",\"credentialsDir\":\"/c\",\"accessKeyId\":\"AKID\",\"publicKey\":\"pub\"}}," \
   "\"assessor\":{\"classArgs\":{\"Bearer-Token\":\"T4\",\"passphrase2\":\"T5\"}}," \
   "\"advisor\":{\"classArgs\":{\"servers\":[{\"host\":\"h\",\"auth\":[\"T6\",1]}]}}," \
   "\"trainingService\":[{\"platform\":\"remote\",\"machineList\":[{\"host\":\"m\",\"sshKeyPath\":\"/id\"," \
   "\"privateKeyData\":\"T7\"}]},{\"platform\":\"kubeflow\",\"storage\":{\"azureAccount\":\"acc\"," \
   "\"keyVault\":{\"vaultName\":\"v\",\"name\":\"n\"},\"connectionString\":\"T8\"},\"imagePullSecrets\":[\"regcred\"]}]}"
static const char *const many_hidden[] = {"S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S9",
                                         "T1", "T2", "T3", "T4", "T5", "T6", "T7", "T8"};


static void test_redaction(void **state)
{
    struct exp_config *cfg = load_good("configs/good/remote.yml");
    cJSON *r = config_redacted(cfg->canonical);
    assert_string_equal(jstr(r, "trainingService.machineList[0].sshPassphrase"), "********");
    assert_string_equal(jstr(r, "trainingService.machineList[1].password"), "********");
    assert_string_equal(jstr(r, "trainingService.machineList[1].host"), "gpu2.example.com");
    /* the original keeps its secrets (the database needs them) */
    assert_string_equal(jstr(cfg->canonical, "trainingService.machineList[1].password"),
                        "hunter2");
    cJSON_Delete(r);
    char *s = config_to_string(cfg);
    assert_non_null(s);
    assert_null(strstr(s, "hunter2"));
    assert_null(strstr(s, "open sesame"));
    assert_non_null(strstr(s, "\"password\":\t\"********\""));
    free(s);
    config_free(cfg);

    cJSON *j = cJSON_Parse(
        "{\"searchSpace\":{\"token_dim\":{\"_type\":\"choice\",\"_value\":[1]}},"
        "\"tuner\":{\"classArgs\":{\"apiToken\":\"t0k\",\"max_tokens\":512,\"db_password\":\"pw\"}},"
        "\"trainingService\":[{\"platform\":\"openpai\",\"token\":\"jwt\"},"
        "{\"platform\":\"dlc\",\"accessKeySecret\":\"ak\",\"accessKeyId\":\"id\"}],"
        "\"sharedStorage\":{\"storageAccountKey\":\"sak\",\"storageAccountName\":\"n\"}}");
    r = config_redacted(j);
    assert_non_null(jget(r, "searchSpace.token_dim")); /* parameter names are not secrets */
    assert_string_equal(jstr(r, "tuner.classArgs.apiToken"), "********");
    assert_string_equal(jstr(r, "tuner.classArgs.db_password"), "********");
    assert_int_equal(jnum(r, "tuner.classArgs.max_tokens"), 512);
    assert_string_equal(jstr(r, "trainingService[0].token"), "********");
    assert_string_equal(jstr(r, "trainingService[1].accessKeySecret"), "********");
    assert_string_equal(jstr(r, "trainingService[1].accessKeyId"), "id");
    assert_string_equal(jstr(r, "sharedStorage.storageAccountKey"), "********");
    assert_string_equal(jstr(r, "sharedStorage.storageAccountName"), "n");
    cJSON_Delete(r);
    cJSON_Delete(j);

    /* the usual names of keys and credentials in classArgs, whatever their spelling and
     * type: numbers, lists and objects under them go whole; "token" names hide text only */
    j = cJSON_Parse(
        "{\"tuner\":{\"classArgs\":{\"api_key\":\"K1\",\"apiKey\":\"K2\",\"ACCESS-KEY\":\"K3\","
        "\"private_key\":\"K4\",\"credentials\":{\"user\":\"u\",\"key\":\"K5\"},\"auth\":{\"pass\":\"K6\"},"
        "\"db_password\":987654321,\"passwords\":[\"K7\"],\"api_tokens\":[\"K8\",[\"K9\"],3],"
        "\"tokenizer\":{\"name\":\"bert\"},\"max_tokens\":100,\"use_auth\":true,\"password_file\":null,"
        "\"author\":\"ann\",\"sshKeyPath\":\"/k\",\"keyword\":\"kw\",\"secretName\":\"s1\","
        "\"token_path\":\"/t\",\"imagePullSecrets\":[{\"name\":\"regcred\"}]}}}");
    r = config_redacted(j);
    char *text = cJSON_PrintUnformatted(r);
    for (int i = 1; i <= 9; i++) {
        char secret[8];
        snprintf(secret, sizeof secret, "K%d", i);
        if (strstr(text, secret))
            fail_msg("%s shown in %s", secret, text);
    }
    assert_null(strstr(text, "987654321"));
    assert_string_equal(jstr(r, "tuner.classArgs.api_key"), "********");
    assert_string_equal(jstr(r, "tuner.classArgs.credentials"), "********");
    assert_string_equal(jstr(r, "tuner.classArgs.db_password"), "********");
    assert_string_equal(jstr(r, "tuner.classArgs.api_tokens[0]"), "********");
    assert_int_equal(jnum(r, "tuner.classArgs.api_tokens[2]"), 3);
    /* settings and names that only look alike stay */
    assert_string_equal(jstr(r, "tuner.classArgs.tokenizer.name"), "bert");
    assert_int_equal(jnum(r, "tuner.classArgs.max_tokens"), 100);
    assert_true(cJSON_IsTrue(jget(r, "tuner.classArgs.use_auth")));
    assert_true(cJSON_IsNull(jget(r, "tuner.classArgs.password_file")));
    assert_string_equal(jstr(r, "tuner.classArgs.author"), "ann");
    assert_string_equal(jstr(r, "tuner.classArgs.sshKeyPath"), "/k");
    assert_string_equal(jstr(r, "tuner.classArgs.keyword"), "kw");
    /* names and places of secrets are not secrets */
    assert_string_equal(jstr(r, "tuner.classArgs.secretName"), "s1");
    assert_string_equal(jstr(r, "tuner.classArgs.token_path"), "/t");
    assert_string_equal(jstr(r, "tuner.classArgs.imagePullSecrets[0].name"), "regcred");
    free(text);
    cJSON_Delete(r);
    cJSON_Delete(j);

    /* secrets under any name with token, secret, password, passphrase, key, credential,
     * auth, bearer or connection in it, in any algorithm's classArgs and platform block,
     * at any depth of lists and objects */
    j = cJSON_Parse(MANY_SECRETS);
    r = config_redacted(j);
    text = cJSON_PrintUnformatted(r);
    for (size_t i = 0; i < sizeof many_hidden / sizeof *many_hidden; i++)
        if (strstr(text, many_hidden[i]))
            fail_msg("%s shown in %s", many_hidden[i], text);
    static const char *const redacted[] = {
        "tuner.classArgs.connection_string",
        "tuner.classArgs.bearer",
        "tuner.classArgs.apiKey",
        "tuner.classArgs.authToken",
        "tuner.classArgs.my_secret",
        "tuner.classArgs.PASSWORD",
        "tuner.classArgs.basic_auth",
        "tuner.classArgs.db.nested[0].Key",
        "advisor.classArgs.servers[0].auth",
    };
    for (size_t i = 0; i < sizeof redacted / sizeof *redacted; i++)
        assert_string_equal(jstr(r, redacted[i]), "********");
    /* not secrets: other words, settings (numbers under key, connection), and names and
     * places of secrets */
    static const char *const kept[][2] = {
        {"advisor.classArgs.servers[0].host", "h"},
        {"tuner.classArgs.monkey", "banana"},
        {"tuner.classArgs.keyboard", "qwerty"},
        {"tuner.classArgs.keyFile", "/k"},
        {"tuner.classArgs.sshKeyFile", "/s"},
        {"tuner.classArgs.secretName", "sn"},
        {"tuner.classArgs.token_path", "/t"},
        {"tuner.classArgs.password_file", "/p"},
        {"tuner.classArgs.credentialsDir", "/c"},
        {"tuner.classArgs.accessKeyId", "AKID"},
        {"tuner.classArgs.publicKey", "pub"},
        {"trainingService[0].machineList[0].sshKeyPath", "/id"},
        {"trainingService[1].storage.keyVault.vaultName", "v"},
        {"trainingService[1].storage.keyVault.name", "n"},
        {"trainingService[1].imagePullSecrets[0]", "regcred"},
    };
    for (size_t i = 0; i < sizeof kept / sizeof *kept; i++)
        assert_string_equal(jstr(r, kept[i][0]), kept[i][1]);
    assert_int_equal(jnum(r, "tuner.classArgs.max_connections"), 8);
    assert_int_equal(jnum(r, "tuner.classArgs.sort_key_count"), 3);
    /* the search space's parameter names are never redacted: monkey, keys, api_key */
    assert_non_null(jget(r, "searchSpace.monkey._value"));
    assert_string_equal(jstr(r, "searchSpace.keys._value[0]"), "a");
    assert_int_equal(jnum(r, "searchSpace.api_key._value[0]"), 2);
    free(text);
    cJSON_Delete(r);
    cJSON_Delete(j);
}

/* ---- secrets out of the stored config (common/secrets.h) ---- */

static int never_known(void *ctx, const char *id)
{
    (void)ctx;
    return strcmp(id, "kn0wn000") == 0;
}

static void test_secrets_split_merge(void **state)
{
    (void)state;
    cJSON *orig = cJSON_Parse(MANY_SECRETS);
    cJSON *j = cJSON_Duplicate(orig, 1);
    cJSON *list = config_secrets_split(j);
    /* every value that redaction hides went to the list, a placeholder in its place */
    char *text = cJSON_PrintUnformatted(j);
    for (size_t i = 0; i < sizeof many_hidden / sizeof *many_hidden; i++)
        if (strstr(text, many_hidden[i]))
            fail_msg("%s left in %s", many_hidden[i], text);
    free(text);
    assert_int_equal(cJSON_GetArraySize(list), 17); /* T6's list whole (auth), T1 an item of keys */
    assert_string_equal(jstr(j, "tuner.classArgs.apiKey"), SECRET_PLACEHOLDER);
    assert_string_equal(jstr(j, "tuner.classArgs.keys[0]"), SECRET_PLACEHOLDER);
    assert_string_equal(jstr(j, "trainingService[0].machineList[0].privateKeyData"), SECRET_PLACEHOLDER);
    assert_string_equal(jstr(j, "trainingService[0].machineList[0].sshKeyPath"), "/id");
    assert_string_equal(jstr(j, "searchSpace.keys._value[0]"), "a");
    /* split again: nothing more (placeholders are not secrets) */
    cJSON *again = config_secrets_split(j);
    assert_int_equal(cJSON_GetArraySize(again), 0);
    cJSON_Delete(again);
    /* a path of keys and indices */
    char *first = cJSON_PrintUnformatted(cJSON_GetArrayItem(list, 0));
    assert_string_equal(first, "{\"path\":[\"tuner\",\"classArgs\",\"connection_string\"],\"value\":\"S1\"}");
    free(first);

    char home[] = "/tmp/tq-secrets-XXXXXX";
    assert_non_null(mkdtemp(home));
    struct errbuf e;
    assert_int_equal(secrets_store(home, "abcd1234", list, &e), 0);
    char *path = secrets_path(home, "abcd1234");
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* merged back: the config as it was */
    cJSON *m = cJSON_Duplicate(j, 1);
    int unset = -1;
    assert_int_equal(secrets_merge_file(home, "abcd1234", m, &unset, &e), 17);
    assert_int_equal(unset, 0);
    assert_true(cJSON_Compare(m, orig, 1));
    cJSON_Delete(m);
    /* another experiment's file is not this one's */
    char *other = secrets_path(home, "zzzz9999");
    assert_int_equal(secrets_store(home, "zzzz9999", list, &e), 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink(other, path), 0);
    m = cJSON_Duplicate(j, 1);
    assert_int_equal(secrets_merge_file(home, "abcd1234", m, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "is not the secrets file of experiment abcd1234"));
    cJSON_Delete(m);
    /* no file (a loaded pack): the placeholders go, the keys are unset */
    assert_int_equal(unlink(path), 0);
    m = cJSON_Duplicate(j, 1);
    assert_int_equal(secrets_merge_file(home, "abcd1234", m, &unset, &e), 0);
    assert_int_equal(unset, 17);
    assert_null(jget(m, "tuner.classArgs.apiKey"));
    assert_int_equal(cJSON_GetArraySize(jget(m, "tuner.classArgs.keys")), 0);
    assert_string_equal(jstr(m, "tuner.classArgs.keyFile"), "/k");
    cJSON_Delete(m);
    /* the sweep: files of unknown experiments go, a known one's stays */
    char *known = secrets_path(home, "kn0wn000");
    assert_int_equal(secrets_store(home, "kn0wn000", list, &e), 0);
    assert_int_equal(secrets_sweep(home, 0, never_known, NULL), 1); /* zzzz9999 */
    assert_int_equal(access(other, F_OK), -1);
    assert_int_equal(access(known, F_OK), 0);
    assert_int_equal(secrets_remove(home, "kn0wn000"), 0);
    assert_int_equal(access(known, F_OK), -1);
    assert_int_equal(secrets_remove(home, "../../x"), -1); /* ids only */
    char *dir = xasprintf("%s/secrets", home);
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(rmdir(home), 0);
    free(dir);
    free(known);
    free(other);
    free(path);
    cJSON_Delete(list);
    cJSON_Delete(j);
    cJSON_Delete(orig);
}

/* ---- stored JSON -> struct ---- */

static void test_from_json(void **state)
{
    struct exp_config *a = load_good("configs/good/remote.yml");
    char *json = cJSON_PrintUnformatted(a->canonical);
    struct exp_config *b = NULL;
    struct errbuf e;
    assert_int_equal(config_from_json(json, &b, &e), 0);
    assert_true(cJSON_Compare(a->canonical, b->canonical, 1));
    assert_string_equal(b->platform, "remote");
    assert_int_equal(b->trial_concurrency, a->trial_concurrency);
    assert_int_equal(b->trial_gpu_number, 1);
    assert_string_equal(b->trial_command, a->trial_command);
    assert_string_equal(b->tuner.name, "Anneal");
    assert_string_equal(jstr(b->tuner.class_args, "optimize_mode"), "minimize");
    assert_null(b->source_path);
    int line, col;
    assert_int_equal(config_mark_of(b, "trialConcurrency", &line, &col), -1);
    config_free(b);
    free(json);
    config_free(a);

    static const char *const bad[] = {
        "not json", "[1,2]", "{}",
        "{\"trialConcurrency\":2,\"tuner\":{\"name\":\"TPE\"}}",
        "{\"trialConcurrency\":\"2\",\"tuner\":{\"name\":\"TPE\"},"
        "\"trainingService\":{\"platform\":\"local\"}}",
        "{\"trialConcurrency\":2,\"trainingService\":{\"platform\":\"local\"}}",
        "{\"trialConcurrency\":2,\"maxExperimentDuration\":\"8x\",\"tuner\":{\"name\":\"TPE\"},"
        "\"trainingService\":{\"platform\":\"local\"}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        b = (struct exp_config *)1;
        assert_int_equal(config_from_json(bad[i], &b, &e), -1);
        assert_null(b);
    }
}

/* ---- every broken config in tests/configs/bad ---- */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_bad_configs(void **state)
{
    char *dir = data_path("configs/bad");
    DIR *d = opendir(dir);
    assert_non_null(d);
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!str_ends(de->d_name, ".yml"))
            continue;
        names = xrealloc(names, (n + 1) * sizeof *names);
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    assert_true(n >= 25);
    for (size_t i = 0; i < n; i++) {
        char *path = xasprintf("%s/%s", dir, names[i]);
        char *text = read_file(path, NULL);
        assert_non_null(text);
        /* the leading "# expect: ..." lines */
        char *expects[8];
        int nexp = 0;
        for (char *line = text; strncmp(line, "# expect: ", 10) == 0 && nexp < 8;) {
            char *end = strchr(line, '\n');
            expects[nexp++] = xstrndup(line + 10, end ? (size_t)(end - line - 10) : strlen(line));
            if (!end)
                break;
            line = end + 1;
        }
        if (nexp == 0)
            fail_msg("%s has no '# expect:' line", names[i]);
        struct exp_config *cfg = (struct exp_config *)1;
        struct errbuf e = {{0}};
        int rc = config_load(path, &cfg, &e);
        if (rc != -1)
            fail_msg("%s: loaded, but should fail", names[i]);
        assert_null(cfg);
        /* "<file>:<line>:<col>: " */
        size_t plen = strlen(path);
        int line = 0, col = 0, used = 0;
        if (strncmp(e.msg, path, plen) != 0 ||
            sscanf(e.msg + plen, ":%d:%d: %n", &line, &col, &used) != 2 || used == 0 ||
            line < 1 || col < 1)
            fail_msg("%s: message lacks file:line:col: %s", names[i], e.msg);
        for (int k = 0; k < nexp; k++) {
            if (!strstr(e.msg, expects[k]))
                fail_msg("%s: message\n  %s\ndoes not contain\n  %s", names[i], e.msg,
                         expects[k]);
            free(expects[k]);
        }
        free(text);
        free(path);
        free(names[i]);
    }
    free(names);
    free(dir);
}

/* ---- files that are no config at all ---- */

static void test_file_errors(void **state)
{
    struct exp_config *cfg = (struct exp_config *)1;
    struct errbuf e;
    char *missing = xasprintf("%s/does-not-exist.yml", g_tmp);
    assert_int_equal(config_load(missing, &cfg, &e), -1);
    assert_null(cfg);
    assert_non_null(strstr(e.msg, "No such file or directory"));
    assert_non_null(strstr(e.msg, missing));
    free(missing);
    assert_int_equal(config_load(g_tmp, &cfg, &e), -1);
    assert_non_null(strstr(e.msg, "is a directory"));
    char *p = write_tmp("empty.yml", "");
    assert_int_equal(config_load(p, &cfg, &e), -1);
    assert_non_null(strstr(e.msg, ":1:1: the file is empty"));
    free(p);
    p = write_tmp("nul.yml", "trialConcurrency: 1\n");
    FILE *f = fopen(p, "ab");
    fwrite("x: \"a\0b\"\n", 1, 9, f);
    fclose(f);
    assert_int_equal(config_load(p, &cfg, &e), -1);
    assert_non_null(strstr(e.msg, ":2:"));
    free(p);
}

/* Every prefix and many byte flips of a real config: never a crash or a leak, always a
 * config or one message with file:line:col. (ASan/UBSan make this meaningful.) */
static void mutate_and_load(const char *name)
{
    char *src = xasprintf("%s/%s", g_good, name);
    size_t len;
    char *orig = read_file(src, &len);
    assert_non_null(orig);
    char *p = xasprintf("%s/%s", g_tmp, name);
    static const char flips[] = "\0\t\n :-[]{}&*!|>'\"#%@`,?\xff\xc3";
    unsigned seed = 12345;
    size_t runs = len + 600;
    for (size_t i = 0; i < runs; i++) {
        char *buf = xmalloc(len + 1);
        memcpy(buf, orig, len);
        size_t n = len;
        if (i < len) {
            n = i; /* a truncated file */
        } else {
            for (int k = 0; k < 3; k++) {
                seed = seed * 1103515245u + 12345u;
                size_t pos = (seed >> 8) % len;
                seed = seed * 1103515245u + 12345u;
                buf[pos] = flips[(seed >> 8) % (sizeof flips - 1)];
            }
        }
        assert_int_equal(write_file_atomic(p, buf, n, 0644), 0);
        struct exp_config *cfg = NULL;
        struct errbuf e = {{0}};
        if (config_load(p, &cfg, &e) == 0) {
            char *s = config_to_string(cfg);
            assert_non_null(s);
            free(s);
            config_free(cfg);
        } else {
            int line = 0, col = 0;
            size_t plen = strlen(p);
            if (strncmp(e.msg, p, plen) != 0 ||
                sscanf(e.msg + plen, ":%d:%d: ", &line, &col) != 2 || line < 1 || col < 1)
                fail_msg("%s run %zu: message lacks file:line:col: %s", name, i, e.msg);
        }
        free(buf);
    }
    free(p);
    free(orig);
    free(src);
}

static void test_mutations_never_crash(void **state)
{
    /* the files the configs point to, next to the mutated copies */
    static const char *const deps[] = {"search_space.json", "test_ssh_key"};
    for (size_t i = 0; i < sizeof deps / sizeof deps[0]; i++) {
        char *src = xasprintf("%s/%s", g_good, deps[i]);
        char *text = read_file(src, NULL);
        free(write_tmp(deps[i], text));
        free(text);
        free(src);
    }
    mutate_and_load("remote.yml");
    mutate_and_load("v1_local.yml");
    mutate_and_load("full_v2.yml");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_v2_canonical),
        cmocka_unit_test(test_minimal_defaults),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_key_folding_and_relative_paths),
        cmocka_unit_test(test_paths_bom_devices),
        cmocka_unit_test(test_search_space_file_json),
        cmocka_unit_test(test_v1_local_conversion),
        cmocka_unit_test(test_v1_remote_conversion),
        cmocka_unit_test(test_remote_machine_list),
        cmocka_unit_test(test_hybrid_list),
        cmocka_unit_test(test_other_platforms),
        cmocka_unit_test(test_slurm_keys),
        cmocka_unit_test(test_insecure_key_of_dlc_and_dlts),
        cmocka_unit_test(test_advisor_becomes_tuner),
        cmocka_unit_test(test_yaml_as_pyyaml),
        cmocka_unit_test(test_anchors_and_merge_keys),
        cmocka_unit_test(test_json_config),
        cmocka_unit_test(test_mark_of_inline_search_space),
        cmocka_unit_test(test_redaction),
        cmocka_unit_test(test_secrets_split_merge),
        cmocka_unit_test(test_from_json),
        cmocka_unit_test(test_bad_configs),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_mutations_never_crash),
    };
    return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
