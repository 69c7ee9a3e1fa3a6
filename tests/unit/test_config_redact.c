/* test_config_redact.c: the one rule that hides a config's secrets (config/config.c,
 * docs/config.md "Secrets and redaction"), case by case: what config_redacted shows
 * (nnictl create --dry-run, config show, experiment show, GET /experiment) and what
 * config_secrets_split takes out of what is stored (the database, packs) must agree,
 * value for value. The cases after "issue 29" were shown, and stored, before. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "common/secrets.h"
#include "config/config.h"
#include "unit_tmpdir.h"

static const char *tmpdir;

struct redact_case {
    const char *in;   /* a config's classArgs (any object) */
    const char *want; /* as config_redacted shows it */
};

#define H "\"********\""

static const struct redact_case cases[] = {
    /* names that said secret already */
    {"{\"password\":\"p\"}", "{\"password\":" H "}"},
    {"{\"apiKey\":\"k\",\"keyFile\":\"/k\"}", "{\"apiKey\":" H ",\"keyFile\":\"/k\"}"},
    {"{\"max_tokens\":100,\"token\":\"t\"}", "{\"max_tokens\":100,\"token\":" H "}"},
    {"{\"pass\":1,\"pwd\":\"x\"}", "{\"pass\":" H ",\"pwd\":" H "}"},
    /* issue 29: names ending in pass, pwd, tok, pat; cookies */
    {"{\"db_pass\":\"s1\"}", "{\"db_pass\":" H "}"},
    {"{\"mysqlPass\":\"s2\"}", "{\"mysqlPass\":" H "}"},
    {"{\"smtp_pwd\":\"s3\"}", "{\"smtp_pwd\":" H "}"},
    {"{\"remotePass\":12345}", "{\"remotePass\":" H "}"},
    {"{\"hf_tok\":\"s5\",\"HF-TOK\":\"s6\"}", "{\"hf_tok\":" H ",\"HF-TOK\":" H "}"},
    {"{\"pat\":\"s7\",\"githubPAT\":\"s8\"}", "{\"pat\":" H ",\"githubPAT\":" H "}"},
    {"{\"cookie\":\"s9\",\"sessionCookies\":{\"a\":\"b\"}}", "{\"cookie\":" H ",\"sessionCookies\":" H "}"},
    /* ... and what only looks alike stays */
    {"{\"bypass\":true,\"num_passes\":3,\"pass_rate\":0.5,\"pattern\":\"*.py\",\"path\":\"/p\"}",
     "{\"bypass\":true,\"num_passes\":3,\"pass_rate\":0.5,\"pattern\":\"*.py\",\"path\":\"/p\"}"},
    {"{\"hf_tok_file\":\"/t\",\"cookie_path\":\"/c\",\"stock\":\"AAPL\"}",
     "{\"hf_tok_file\":\"/t\",\"cookie_path\":\"/c\",\"stock\":\"AAPL\"}"},
    {"{\"tok\":100}", "{\"tok\":100}"}, /* text names: a number is a setting */
    /* issue 29: a URL's password in any text, under any name, in lists too */
    {"{\"dsn\":\"postgres://user:secret@host:5432/db\"}", "{\"dsn\":\"postgres://user:***@host:5432/db\"}"},
    {"{\"urls\":[\"https://a:b@c.example/x\",\"https://c.example/u@v\"]}",
     "{\"urls\":[\"https://a:***@c.example/x\",\"https://c.example/u@v\"]}"},
    {"{\"cmd\":\"curl https://u:p@w@h/ && git clone ssh://git@h/r\"}",
     "{\"cmd\":\"curl https://u:***@h/ && git clone ssh://git@h/r\"}"},
    {"{\"mirror\":\"https://user@host/x\",\"note\":\"a:b@c\"}",
     "{\"mirror\":\"https://user@host/x\",\"note\":\"a:b@c\"}"},
    /* issue 29: HTTP credentials anywhere in a text */
    {"{\"headers\":[\"Authorization: Bearer abc.DEF-123\",\"Accept: */*\"]}",
     "{\"headers\":[\"Authorization: Bearer ***\",\"Accept: */*\"]}"},
    {"{\"h\":\"authorization: bearer xyz\"}", "{\"h\":\"authorization: bearer ***\"}"},
    {"{\"h\":\"Authorization: Basic dXNlcjpwYXNz\"}", "{\"h\":\"Authorization: Basic ***\"}"},
    {"{\"model\":\"Basic training\",\"who\":\"the bearer\",\"sub\":\"Bearers abc\"}",
     "{\"model\":\"Basic training\",\"who\":\"the bearer\",\"sub\":\"Bearers abc\"}"},
};

static cJSON *config_of(const char *class_args)
{
    char *text = xasprintf("{\"searchSpace\":{\"db_pass\":{\"_type\":\"choice\",\"_value\":[\"http://a:b@c\"]}},"
                           "\"tuner\":{\"className\":\"t.T\",\"classArgs\":%s}}",
                           class_args);
    cJSON *c = cJSON_Parse(text);
    assert_non_null(c);
    free(text);
    return c;
}

static void test_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const struct redact_case *c = &cases[i];
        cJSON *cfg = config_of(c->in);
        cJSON *red = config_redacted(cfg);
        char *got = cJSON_PrintUnformatted(cJSON_GetObjectItem(cJSON_GetObjectItem(red, "tuner"), "classArgs"));
        if (strcmp(got, c->want) != 0)
            fail_msg("case %zu: %s\n  shows %s\n  wanted %s", i, c->in, got, c->want);
        free(got);
        /* the search space is never judged */
        assert_true(cJSON_Compare(cJSON_GetObjectItem(red, "searchSpace"), cJSON_GetObjectItem(cfg, "searchSpace"), 1));

        /* stored: every value the redaction changed is taken out whole (the placeholder, or
         * the masked text, in its place), no other */
        cJSON *stored = cJSON_Duplicate(cfg, 1);
        cJSON *list = config_secrets_split(stored);
        const cJSON *args = cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "tuner"), "classArgs");
        const cJSON *shown = cJSON_GetObjectItem(cJSON_GetObjectItem(red, "tuner"), "classArgs");
        const cJSON *kept = cJSON_GetObjectItem(cJSON_GetObjectItem(stored, "tuner"), "classArgs");
        int changed = 0;
        for (const cJSON *a = args->child, *sh = shown->child, *k = kept->child; a;
             a = a->next, sh = sh->next, k = k->next) {
            int list_of = cJSON_IsArray(a) && !cJSON_Compare(a, sh, 1) && cJSON_IsArray(sh);
            const cJSON *ai = list_of ? a->child : a, *si = list_of ? sh->child : sh, *ki = list_of ? k->child : k;
            for (; ai; ai = list_of ? ai->next : NULL, si = list_of ? si->next : NULL, ki = list_of ? ki->next : NULL) {
                int hid = !cJSON_Compare(ai, si, 1);
                int placed = cJSON_IsString(ki) && (strcmp(ki->valuestring, SECRET_PLACEHOLDER) == 0 ||
                                                     (cJSON_IsString(si) && strcmp(ki->valuestring, si->valuestring) == 0 &&
                                                      strcmp(si->valuestring, "********") != 0));
                changed += hid;
                if (hid != (hid ? placed : cJSON_Compare(ai, ki, 1) == 0))
                    fail_msg("case %zu: key %s: shown %s, stored otherwise", i, a->string, hid ? "hidden" : "as is");
            }
        }
        assert_int_equal(cJSON_GetArraySize(list), changed);
        /* what was taken out is the whole value, at its place */
        const cJSON *e;
        cJSON_ArrayForEach(e, list) {
            const cJSON *path = cJSON_GetObjectItem(e, "path");
            const cJSON *at = cfg;
            const cJSON *step;
            cJSON_ArrayForEach(step, path) {
                at = cJSON_IsString(step) ? cJSON_GetObjectItem(at, step->valuestring)
                                          : cJSON_GetArrayItem(at, (int)step->valuedouble);
            }
            assert_true(cJSON_Compare(at, cJSON_GetObjectItem(e, "value"), 1));
        }
        /* and the secrets file gives the worker and the api the config as written */
        struct errbuf err;
        if (cJSON_GetArraySize(list) > 0) {
            assert_int_equal(secrets_store(tmpdir, "abcd1234", list, &err), 0);
            cJSON *merged = cJSON_Duplicate(stored, 1);
            int unset = -1;
            assert_int_equal(secrets_merge_file(tmpdir, "abcd1234", merged, &unset, &err), cJSON_GetArraySize(list));
            assert_int_equal(unset, 0);
            if (!cJSON_Compare(merged, cfg, 1))
                fail_msg("case %zu: merged back, the config differs", i);
            cJSON_Delete(merged);
        }
        /* a stored config (placeholders, masked texts) shows no placeholder text, the same mask */
        cJSON *red2 = config_redacted(stored);
        if (!cJSON_Compare(red2, red, 1))
            fail_msg("case %zu: the stored config is shown otherwise", i);
        cJSON_Delete(red2);
        cJSON_Delete(list);
        cJSON_Delete(stored);
        cJSON_Delete(red);
        cJSON_Delete(cfg);
    }
}

int main(void)
{
    char tmpl[] = "/tmp/trialq-redact-XXXXXX";
    tmpdir = tmpl;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
    };
    return run_in_tmpdir(tmpl, tests);
}
