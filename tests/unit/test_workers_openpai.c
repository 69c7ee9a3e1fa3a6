/* test_workers_openpai.c: the pieces of the OpenPAI platform without HTTP: the job
 * protocol's YAML (read back by a YAML parser in the e2e tests), NNI's memory sizes,
 * shell quoting, and the code copy with .nniignore and its all-or-nothing rename. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "workers/nniignore.h"
#include "workers/rest/openpai.h"

static long long mb(const char *json)
{
    cJSON *v = cJSON_Parse(json);
    long long r = pai_size_mb(v);
    cJSON_Delete(v);
    return r;
}

static void test_sizes(void **state)
{
    (void)state;
    assert_int_equal(mb("\"8gb\""), 8192);
    assert_int_equal(mb("\"8GB\""), 8192);
    assert_int_equal(mb("\"1.5gb\""), 1536);
    assert_int_equal(mb("\"512mb\""), 512);
    assert_int_equal(mb("\"1tb\""), 1024 * 1024);
    assert_int_equal(mb("\"1000kb\""), 1); /* ceil, as NNI */
    assert_int_equal(mb("\"1b\""), 1);
    assert_int_equal(mb("2048"), 2048);
    assert_int_equal(mb("\"lots\""), -1);
    assert_int_equal(mb("\"8 parsecs\""), -1);
    assert_int_equal(mb("\"-1gb\""), -1);
    assert_int_equal(mb("0"), -1);
    assert_int_equal(mb("null"), -1);
}

static void test_quote(void **state)
{
    (void)state;
    char *q = sh_quoted("python3 -c 'print(\"$HOME\")'");
    assert_string_equal(q, "'python3 -c '\\''print(\"$HOME\")'\\'''");
    free(q);
    q = sh_quoted("");
    assert_string_equal(q, "''");
    free(q);
}

static void test_yaml(void **state)
{
    (void)state;
    cJSON *j = cJSON_Parse("{\"protocolVersion\":2,\"name\":\"nni_exp_a_trial_b\",\"big\":1e300,"
                           "\"frac\":0.5,\"huge\":1e+20,\"neg\":-1,\"ok\":true,\"none\":null,\"empty\":{},\"nolist\":[],"
                           "\"taskRoles\":{\"taskrole\":{\"commands\":[\"echo \\\"a\\\\b\\\"\\n\\tx\"]}},"
                           "\"prerequisites\":[{\"type\":\"dockerimage\",\"uri\":\"x:y\"},[1,2]]}");
    struct strbuf sb;
    sb_init(&sb);
    pai_yaml_emit(&sb, j);
    char *y = sb_detach(&sb);
    assert_string_equal(y,
                        "\"protocolVersion\": 2\n"
                        "\"name\": \"nni_exp_a_trial_b\"\n"
                        "\"big\": 1.0000000000000001e+300\n"
                        "\"frac\": 0.5\n"
                        "\"huge\": 1.0e+20\n"
                        "\"neg\": -1\n"
                        "\"ok\": true\n"
                        "\"none\": null\n"
                        "\"empty\": {}\n"
                        "\"nolist\": []\n"
                        "\"taskRoles\":\n"
                        "  \"taskrole\":\n"
                        "    \"commands\":\n"
                        "      - \"echo \\\"a\\\\b\\\"\\n\\tx\"\n"
                        "\"prerequisites\":\n"
                        "  -\n"
                        "    \"type\": \"dockerimage\"\n"
                        "    \"uri\": \"x:y\"\n"
                        "  -\n"
                        "    - 1\n"
                        "    - 2\n");
    free(y);
    cJSON_Delete(j);
}

static void put(const char *root, const char *rel, const char *text)
{
    char *p = xasprintf("%s/%s", root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    assert_int_equal(mkdir_p(p, 0755), 0);
    *slash = '/';
    assert_int_equal(write_file_replace(p, text, strlen(text), 0644), 0);
    free(p);
}

static int exists(const char *root, const char *rel)
{
    char *p = xasprintf("%s/%s", root, rel);
    int r = access(p, F_OK) == 0;
    free(p);
    return r;
}

static void test_copy(void **state)
{
    (void)state;
    char dir[] = "/tmp/trialq-openpai-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *src = xasprintf("%s/src", dir), *dst = xasprintf("%s/dst", dir);
    put(src, "main.py", "print(1)\n");
    put(src, "data/big.bin", "x");
    put(src, "pkg/mod.py", "x = 1\n");
    put(src, "pkg/cache.pyc", "junk");
    put(src, ".nniignore", "data/\n*.pyc\n");
    struct errbuf e;
    assert_int_equal(code_copy_tree(src, dst, NULL, &e), 0);
    assert_true(exists(dst, "main.py") && exists(dst, "pkg/mod.py") && exists(dst, ".nniignore"));
    assert_false(exists(dst, "data") || exists(dst, "pkg/cache.pyc"));
    char *tmp = xasprintf("%s.tmp%d", dst, (int)getpid());
    assert_int_equal(access(tmp, F_OK), -1); /* nothing left beside it */

    /* over NNI's limit: an error naming the directory, and no partial copy */
    char *dst2 = xasprintf("%s/dst2", dir);
    for (int i = 0; i < 2001; i++) {
        char name[32];
        snprintf(name, sizeof name, "many/f%d", i);
        put(src, name, "");
    }
    assert_int_equal(code_copy_tree(src, dst2, NULL, &e), -1);
    assert_non_null(strstr(e.msg, src));
    assert_non_null(strstr(e.msg, "2000"));
    assert_int_equal(access(dst2, F_OK), -1);
    rm_rf(dir);
    free(src);
    free(dst);
    free(dst2);
    free(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_quote),
        cmocka_unit_test(test_yaml),
        cmocka_unit_test(test_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
