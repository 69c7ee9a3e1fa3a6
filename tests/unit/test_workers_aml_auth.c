/* test_workers_aml_auth.c: the pure parts of the aml platform's tokens
 * (workers/rest/aml_auth.c): base64url, when a token is refreshed, the message of each
 * refusal of the identity platform (what to fix; never the secret), the Azure CLI's
 * output (expires_on, or expiresOn as local time), and which credential the environment
 * selects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "workers/rest/aml_auth.h"

static void test_b64url(void **state)
{
    (void)state;
    char *s = aml_b64url("\xfb\xff\xfe", 3);
    assert_string_equal(s, "-__-");
    free(s);
    s = aml_b64url("ab", 2);
    assert_string_equal(s, "YWI"); /* no padding */
    free(s);
    s = aml_b64url("", 0);
    assert_string_equal(s, "");
    free(s);
}

static void test_refresh_at(void **state)
{
    (void)state;
    /* an hour: 5 minutes early */
    assert_true(aml_refresh_at(1000, 3600) == 1000 + 3300 * 1000LL);
    /* 3 s: at two thirds */
    assert_true(aml_refresh_at(0, 3) == 2000);
    /* 24 h: still 5 minutes early */
    assert_true(aml_refresh_at(0, 86400) == (86400 - 300) * 1000LL);
    /* no lifetime: now */
    assert_true(aml_refresh_at(77, 0) == 77);
}

static void refusal(const char *body, const char *want)
{
    struct aml_auth a;
    memset(&a, 0, sizeof a);
    a.authority = "https://login.example";
    a.tenant = "t1";
    a.client_id = "c1";
    a.secret = "TOPSECRET";
    struct errbuf e;
    assert_int_equal(aml_token_refusal(&a, 401, body, &e), -1);
    if (!strstr(e.msg, want))
        fail_msg("'%s' lacks '%s'", e.msg, want);
    assert_null(strstr(e.msg, "TOPSECRET"));
}

static void test_refusals(void **state)
{
    (void)state;
    refusal("{\"error\":\"invalid_request\",\"error_description\":\"AADSTS90002: Tenant 't1' not found.\","
            "\"error_codes\":[90002]}",
            "check AZURE_TENANT_ID");
    refusal("{\"error\":\"unauthorized_client\",\"error_description\":\"AADSTS700016: no app\",\"error_codes\":[700016]}",
            "check AZURE_CLIENT_ID");
    refusal("{\"error\":\"invalid_client\",\"error_description\":\"AADSTS7000215: bad\",\"error_codes\":[7000215]}",
            "AZURE_CLIENT_SECRET must be the secret's value");
    refusal("{\"error\":\"invalid_client\",\"error_codes\":[700027]}", "upload it to the app registration");
    /* a description echoing the secret is masked */
    refusal("{\"error\":\"invalid_client\",\"error_description\":\"secret TOPSECRET wrong\",\"error_codes\":[1]}",
            "secret ********* wrong");
    /* not JSON: the body, and a generic hint */
    refusal("<html>proxy error</html>", "HTTP 401 <html>proxy error</html>");
}

static void test_cli_output(void **state)
{
    (void)state;
    char *tok = NULL;
    long long exp = 0;
    struct errbuf e;
    assert_int_equal(aml_parse_cli_token("{\"accessToken\":\"abc\",\"expiresOn\":\"2026-11-27 10:00:00.000000\","
                                         "\"expires_on\":1795000000,\"tokenType\":\"Bearer\"}",
                                         &tok, &exp, &e),
                     0);
    assert_string_equal(tok, "abc");
    assert_true(exp == 1795000000LL);
    free(tok);
    /* an older az: expiresOn only, local time */
    assert_int_equal(aml_parse_cli_token("{\"accessToken\":\"x\",\"expiresOn\":\"2026-11-27 10:00:00.000000\"}", &tok,
                                         &exp, &e),
                     0);
    struct tm tm = {.tm_year = 126, .tm_mon = 10, .tm_mday = 27, .tm_hour = 10, .tm_isdst = -1};
    assert_true(exp == (long long)mktime(&tm));
    free(tok);
    assert_int_equal(aml_parse_cli_token("{\"accessToken\":\"x\"}", &tok, &exp, &e), -1);
    assert_int_equal(aml_parse_cli_token("ERROR: Please run 'az login'", &tok, &exp, &e), -1);
    assert_non_null(strstr(e.msg, "printed no accessToken"));
}

static void test_credential_choice(void **state)
{
    (void)state;
    struct aml_auth a;
    struct errbuf e;
    unsetenv("AZURE_CLIENT_SECRET");
    unsetenv("AZURE_CLIENT_CERTIFICATE_PATH");
    assert_int_equal(aml_auth_init(&a, "https://login.example/", "https://management.example", 1000, NULL, &e), 0);
    assert_int_equal(a.kind, AML_AUTH_CLI);
    assert_string_equal(a.authority, "https://login.example");
    assert_string_equal(a.resource, "https://management.example/");
    aml_auth_free(&a);
    setenv("AZURE_CLIENT_SECRET", "s", 1);
    unsetenv("AZURE_TENANT_ID");
    setenv("AZURE_CLIENT_ID", "c", 1);
    assert_int_equal(aml_auth_init(&a, "https://l", "https://m", 1000, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "AZURE_TENANT_ID and AZURE_CLIENT_ID are not both set"));
    assert_null(strstr(e.msg, "=s"));
    aml_auth_free(&a);
    setenv("AZURE_TENANT_ID", "t", 1);
    assert_int_equal(aml_auth_init(&a, "https://l", "https://m", 1000, NULL, &e), 0);
    assert_int_equal(a.kind, AML_AUTH_SECRET);
    aml_auth_free(&a);
    /* the secret wins over a certificate (as EnvironmentCredential) */
    setenv("AZURE_CLIENT_CERTIFICATE_PATH", "/nonexistent.pem", 1);
    assert_int_equal(aml_auth_init(&a, "https://l", "https://m", 1000, NULL, &e), 0);
    assert_int_equal(a.kind, AML_AUTH_SECRET);
    aml_auth_free(&a);
    unsetenv("AZURE_CLIENT_SECRET");
    assert_int_equal(aml_auth_init(&a, "https://l", "https://m", 1000, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "cannot read /nonexistent.pem"));
    aml_auth_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b64url),
        cmocka_unit_test(test_refresh_at),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_cli_output),
        cmocka_unit_test(test_credential_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
