/* test_workers_kubeconfig.c: the kubeconfig is read as kubectl reads it (merged
 * KUBECONFIG lists, relative paths, *-data fields), and each bad one is named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "workers/kube/kube.h"

static char dir[256];

static void put(const char *name, const char *text)
{
    char *p = xasprintf("%s/%s", dir, name);
    assert_int_equal(write_file_replace(p, text, strlen(text), 0600), 0);
    free(p);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/trialq-kubeconfig-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    rm_rf(dir);
    unsetenv("KUBECONFIG");
    return 0;
}

static void set_kubeconfig(const char *names)
{
    struct strbuf sb;
    sb_init(&sb);
    char *list = xstrdup(names), *save = NULL;
    for (char *n = strtok_r(list, ":", &save); n; n = strtok_r(NULL, ":", &save))
        sb_printf(&sb, "%s%s/%s", sb.len ? ":" : "", dir, n);
    free(list);
    setenv("KUBECONFIG", sb.buf, 1);
    sb_free(&sb);
}

static void test_base64(void **state)
{
    (void)state;
    const char *cases[] = {"", "a", "ab", "abc", "abcd", "-----BEGIN CERTIFICATE-----\n\x01\xff"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *enc = b64_encode(cases[i], strlen(cases[i]));
        size_t n;
        char *dec = b64_decode(enc, &n);
        assert_non_null(dec);
        assert_int_equal(n, strlen(cases[i]));
        assert_memory_equal(dec, cases[i], n);
        free(enc);
        free(dec);
    }
    char *enc = b64_encode("abc", 3);
    assert_string_equal(enc, "YWJj");
    free(enc);
    size_t n;
    assert_null(b64_decode("YW*j", &n));
}

static void test_merged_files(void **state)
{
    (void)state;
    /* the first file chooses the context; cluster and user come from the second;
     * a missing file in the list is skipped, as kubectl does */
    put("a.yaml", "apiVersion: v1\nkind: Config\ncurrent-context: dev\ncontexts:\n"
                  "- name: dev\n  context: {cluster: c1, user: u1, namespace: team}\n");
    put("b.yaml", "apiVersion: v1\nkind: Config\ncurrent-context: other\n"
                  "clusters:\n- name: c1\n  cluster:\n    server: https://10.1.2.3:6443/\n"
                  "    certificate-authority: certs/ca.crt\n"
                  "users:\n- name: u1\n  user:\n    token: s3cret\n");
    char *certs = xasprintf("%s/certs", dir);
    mkdir_p(certs, 0755);
    free(certs);
    put("certs/ca.crt", "x");
    set_kubeconfig("a.yaml:missing.yaml:b.yaml");
    struct kube_conn k;
    struct errbuf e;
    assert_int_equal(kube_config_load(&k, &e), 0);
    assert_string_equal(k.server, "https://10.1.2.3:6443");
    assert_string_equal(k.token, "s3cret");
    assert_string_equal(k.namespace, "team");
    assert_string_equal(k.context, "dev");
    char *ca = xasprintf("%s/certs/ca.crt", dir);
    assert_string_equal(k.ca_file, ca);
    free(ca);
    kube_conn_clear(&k);
}

static void test_data_fields(void **state)
{
    (void)state;
    char *ca = b64_encode("CA PEM", 6), *cert = b64_encode("CERT PEM", 8), *key = b64_encode("KEY PEM", 7);
    char *text = xasprintf("current-context: t\ncontexts: [{name: t, context: {cluster: c, user: u}}]\n"
                           "clusters: [{name: c, cluster: {server: 'https://h:1', certificate-authority-data: %s,"
                           " insecure-skip-tls-verify: true}}]\n"
                           "users: [{name: u, user: {client-certificate-data: %s, client-key-data: %s}}]\n",
                           ca, cert, key);
    put("d.yaml", text);
    set_kubeconfig("d.yaml");
    struct kube_conn k;
    struct errbuf e;
    assert_int_equal(kube_config_load(&k, &e), 0);
    assert_int_equal(k.ca_len, 6);
    assert_memory_equal(k.ca_pem, "CA PEM", 6);
    assert_memory_equal(k.cert_pem, "CERT PEM", 8);
    assert_memory_equal(k.key_pem, "KEY PEM", 7);
    assert_int_equal(k.insecure, 1);
    assert_null(k.token);
    assert_null(k.namespace);
    kube_conn_clear(&k);
    free(ca); free(cert); free(key); free(text);
}

/* load must fail with a message containing want */
static void expect_error(const char *file, const char *text, const char *want)
{
    if (text)
        put(file, text);
    set_kubeconfig(file);
    struct kube_conn k;
    struct errbuf e;
    e.msg[0] = '\0';
    assert_int_equal(kube_config_load(&k, &e), -1);
    if (!strstr(e.msg, want))
        fail_msg("message \"%s\" does not contain \"%s\"", e.msg, want);
}

static void test_errors(void **state)
{
    (void)state;
    expect_error("none.yaml", NULL, "no file of KUBECONFIG=");
    expect_error("bad.yaml", "clusters: [\n  - {name: x\n", "bad.yaml:2:3");
    expect_error("noctx.yaml", "clusters: []\n", "no current-context");
    expect_error("unknown.yaml", "current-context: x\ncontexts: [{name: y, context: {cluster: c}}]\n",
                 "current-context \"x\" is not among its contexts");
    expect_error("nocluster.yaml", "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n",
                 "names cluster \"c\", which is not defined");
    expect_error("noserver.yaml", "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                                  "clusters: [{name: c, cluster: {server: 'ftp://h'}}]\n",
                 "set clusters[].cluster.server");
    expect_error("exec.yaml", "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                              "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                              "users: [{name: u, user: {exec: {command: aws}}}]\n",
                 "exec/auth-provider plugin");
    expect_error("half.yaml", "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                              "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                              "users: [{name: u, user: {client-certificate-data: eA==}}]\n",
                 "without its key");
    expect_error("b64.yaml", "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                             "clusters: [{name: c, cluster: {server: 'https://h', certificate-authority-data: '%%'}}]\n",
                 "certificate-authority-data is not valid base64");
    expect_error("cafile.yaml", "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                                "clusters: [{name: c, cluster: {server: 'https://h', certificate-authority: nope.crt}}]\n",
                 "nope.crt");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_base64),
        cmocka_unit_test_setup_teardown(test_merged_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_data_fields, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
