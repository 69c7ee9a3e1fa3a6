/* Alibaba Cloud's request signature V3 (common/acs_sign.c).
 *
 * test_documented_example is Alibaba's own worked example ("Request syntax and signature
 * method V3": RunInstances, AccessKey secret "YourAccessKeySecret"): the canonical
 * request, its hash and the signature printed there.
 *
 * The ROA requests of PAI-DLC have no published example; their expected hashes and
 * signatures were computed once by a separate Python script written from the same
 * page (hashlib.sha256, hmac.new(secret, "ACS3-HMAC-SHA256\n" + hash, sha256); each
 * path segment and query name/value percent-encoded byte-wise keeping only
 * A-Z a-z 0-9 - _ . ~; queries sorted by name; headers lower-cased, trimmed and sorted),
 * a script that reproduces the documented example above, and pasted here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/acs_sign.h"

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static char *enc(const char *s)
{
    struct strbuf sb;
    sb_init(&sb);
    acs_percent_encode(&sb, s, strlen(s));
    return sb_detach(&sb);
}

static void test_documented_example(void **st)
{
    (void)st;
    const struct acs_kv q[] = {{"RegionId", "cn-shanghai"},
                               {"ImageId", "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd"}};
    struct acs_request req = {.method = "POST", .host = "ecs.cn-shanghai.aliyuncs.com", .path = "/",
                              .query = q, .nquery = 2, .action = "RunInstances", .version = "2014-05-26",
                              .date = "2023-10-26T10:22:32Z", .nonce = "3156853299f313e23d1673dc12e1703d"};
    struct acs_signed s;
    struct errbuf e;
    assert_int_equal(acs_sign(&req, "YourAccessKeyId", "YourAccessKeySecret", &s, &e), 0);
    assert_string_equal(s.canonical_request,
                        "POST\n"
                        "/\n"
                        "ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai\n"
                        "host:ecs.cn-shanghai.aliyuncs.com\n"
                        "x-acs-action:RunInstances\n"
                        "x-acs-content-sha256:" EMPTY_SHA256 "\n"
                        "x-acs-date:2023-10-26T10:22:32Z\n"
                        "x-acs-signature-nonce:3156853299f313e23d1673dc12e1703d\n"
                        "x-acs-version:2014-05-26\n"
                        "\n"
                        "host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version\n"
                        EMPTY_SHA256);
    assert_string_equal(s.string_to_sign_hash, "7ea06492da5221eba5297e897ce16e55f964061054b7695beedaac1145b1e259");
    assert_string_equal(acs_signed_header(&s, "authorization"),
                        "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders=host;x-acs-action;"
                        "x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,"
                        "Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0");
    assert_string_equal(s.target, "/?ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai");
    /* every header sent, Authorization last; the values as signed */
    assert_int_equal(s.nheaders, 7);
    assert_string_equal(s.headers[6].name, "authorization");
    assert_string_equal(acs_signed_header(&s, "host"), "ecs.cn-shanghai.aliyuncs.com");
    assert_string_equal(acs_signed_header(&s, "x-acs-content-sha256"), EMPTY_SHA256);
    assert_null(acs_signed_header(&s, "content-type"));
    acs_signed_free(&s);
}

/* PAI-DLC CreateJob: a JSON body, signed with its content type */
static void test_create_job(void **st)
{
    (void)st;
    const char *body = "{\"DisplayName\":\"nni_exp_abc_trial_Xy1\",\"JobType\":\"PyTorchJob\",\"JobSpecs\":"
                       "[{\"Type\":\"Worker\",\"Image\":\"img:1\",\"PodCount\":1,\"EcsSpec\":\"ecs.c6.large\"}],"
                       "\"UserCommand\":\"echo hi\"}";
    struct acs_request req = {.method = "POST", .host = "pai-dlc.cn-hangzhou.aliyuncs.com", .path = "/api/v1/jobs",
                              .action = "CreateJob", .version = "2020-12-03", .body = body,
                              .body_len = strlen(body), .content_type = "application/json",
                              .date = "2026-11-27T06:00:00Z", .nonce = "0123456789abcdef0123456789abcdef"};
    struct acs_signed s;
    struct errbuf e;
    assert_int_equal(acs_sign(&req, "testid", "testsecret", &s, &e), 0);
    const char *h = "5464406ac7f52c1f617719d5d1e159a670831bc68ba969404806f9dbc90e3317";
    char want[2048];
    snprintf(want, sizeof want,
             "POST\n/api/v1/jobs\n\ncontent-type:application/json\nhost:pai-dlc.cn-hangzhou.aliyuncs.com\n"
             "x-acs-action:CreateJob\nx-acs-content-sha256:%s\nx-acs-date:2026-11-27T06:00:00Z\n"
             "x-acs-signature-nonce:0123456789abcdef0123456789abcdef\nx-acs-version:2020-12-03\n\n"
             "content-type;host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version\n%s",
             h, h);
    assert_string_equal(s.canonical_request, want);
    assert_string_equal(s.string_to_sign_hash, "7698d1b600853815fdccfb199087757707ec996e7dbaff003c2560ffeaf56437");
    assert_string_equal(acs_signed_header(&s, "authorization"),
                        "ACS3-HMAC-SHA256 Credential=testid,SignedHeaders=content-type;host;x-acs-action;"
                        "x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,"
                        "Signature=b42d7f38b9a8abeff81d61c120851f7a0ad6b2c4b36c75fa84fe5a85802690bd");
    assert_string_equal(acs_signed_header(&s, "x-acs-content-sha256"), h);
    assert_string_equal(acs_signed_header(&s, "content-type"), "application/json");
    assert_string_equal(s.target, "/api/v1/jobs");
    /* the secret is nowhere in what is returned */
    assert_null(strstr(s.canonical_request, "testsecret"));
    for (size_t i = 0; i < s.nheaders; i++)
        assert_null(strstr(s.headers[i].value, "testsecret"));
    acs_signed_free(&s);
}

/* a GET signed at the fixed date with the test key: its target, hash and signature */
static void check_get(const char *path, const struct acs_kv *q, size_t nq, const char *action, const char *nonce,
                      const char *target, const char *hash, const char *sig)
{
    struct acs_request req = {.method = "GET", .host = "127.0.0.1:8080", .path = path, .query = q, .nquery = nq,
                              .action = action, .version = "2020-12-03", .date = "2026-11-27T06:00:00Z",
                              .nonce = nonce};
    struct acs_signed s;
    struct errbuf e;
    assert_int_equal(acs_sign(&req, "testid", "testsecret", &s, &e), 0);
    assert_string_equal(s.target, target);
    assert_string_equal(s.string_to_sign_hash, hash);
    char want[128];
    snprintf(want, sizeof want, ",Signature=%s", sig);
    assert_true(str_ends(acs_signed_header(&s, "authorization"), want));
    acs_signed_free(&s);
}

/* ListJobs: query values needing every encoding rule, unsorted, one empty; GetPodLogs:
 * path segments are encoded one by one, the slashes kept */
static void test_get_requests(void **st)
{
    (void)st;
    const struct acs_kv list[] = {{"PageSize", "50"}, {"DisplayName", "nni exp*1~\xc3\xa9"}, {"PageNumber", "1"},
                                  {"WorkspaceId", "ws-1"}, {"Empty", NULL}};
    check_get("/api/v1/jobs", list, 5, "ListJobs", "n1",
              "/api/v1/jobs?DisplayName=nni%20exp%2A1~%C3%A9&Empty=&PageNumber=1&PageSize=50&WorkspaceId=ws-1",
              "028f99e684b08106239592106728092c51038d0955e5f40de44be9f8159d819f",
              "d4b215157b5d34444464b308e8b1e605b42e6d4faaf03845090da74a9e78dca7");
    const struct acs_kv logs[] = {{"MaxLines", "10"}};
    check_get("/api/v1/jobs/dlc 1/pods/a*b+c/logs", logs, 1, "GetPodLogs", "n2",
              "/api/v1/jobs/dlc%201/pods/a%2Ab%2Bc/logs?MaxLines=10",
              "328e321055ff90879dfb4fe0f079a7f22065f34b140f800c1f826861ab11b6b6",
              "34e252ed3665e74f13c433d6dd34ec0d174c37c7695ac15aa577fadefb52a392");
}

static void test_encoding(void **st)
{
    (void)st;
    struct {
        const char *in, *out;
    } v[] = {{"", ""},
             {"AZaz09-_.~", "AZaz09-_.~"},
             {"a b", "a%20b"},
             {"*", "%2A"},
             {"+", "%2B"},
             {"/", "%2F"},
             {"\"", "%22"},
             {"%7E", "%257E"},
             {"\xe4\xb8\xad", "%E4%B8%AD"},
             {"=&?#", "%3D%26%3F%23"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char *o = enc(v[i].in);
        assert_string_equal(o, v[i].out);
        free(o);
    }
    char *u = acs_canonical_uri("/api/v1/jobs//x y/");
    assert_string_equal(u, "/api/v1/jobs//x%20y/");
    free(u);
    char *q = acs_canonical_query(NULL, 0);
    assert_string_equal(q, "");
    free(q);
    /* sorted by name, then by value (a repeated name) */
    const struct acs_kv kv[] = {{"b", "2"}, {"a", "z"}, {"a", "y"}, {"B", "1"}};
    q = acs_canonical_query(kv, 4);
    assert_string_equal(q, "B=1&a=y&a=z&b=2");
    free(q);
    char d[ACS_DATE_SIZE];
    acs_date(1698315752, d);
    assert_string_equal(d, "2023-10-26T10:22:32Z");
    char h[ACS_HEX_SHA256];
    acs_sha256_hex("", 0, h);
    assert_string_equal(h, EMPTY_SHA256);
    /* RFC 4231 test case 2 */
    assert_int_equal(acs_hmac_sha256_hex("Jefe", "what do ya want for nothing?", 28, h), 0);
    assert_string_equal(h, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

/* a date and a nonce of our own when none is given: the format, and a new nonce each time */
static void test_fresh_date_and_nonce(void **st)
{
    (void)st;
    struct acs_request req = {.method = "GET", .host = "h", .path = "/api/v1/jobs/x", .action = "GetJob",
                              .version = "2020-12-03"};
    struct acs_signed a, b;
    struct errbuf e;
    assert_int_equal(acs_sign(&req, "id", "secret", &a, &e), 0);
    assert_int_equal(acs_sign(&req, "id", "secret", &b, &e), 0);
    const char *da = acs_signed_header(&a, "x-acs-date");
    assert_int_equal(strlen(da), 20);
    assert_int_equal(da[10], 'T');
    assert_int_equal(da[19], 'Z');
    const char *na = acs_signed_header(&a, "x-acs-signature-nonce"), *nb = acs_signed_header(&b, "x-acs-signature-nonce");
    assert_int_equal(strlen(na), 32);
    assert_int_equal(strspn(na, "0123456789abcdef"), 32);
    assert_string_not_equal(na, nb);
    assert_string_not_equal(acs_signed_header(&a, "authorization"), acs_signed_header(&b, "authorization"));
    acs_signed_free(&a);
    acs_signed_free(&b);
}

/* header values are trimmed as signed (and sent so) */
static void test_trimmed(void **st)
{
    (void)st;
    struct acs_request req = {.method = "GET", .host = "  127.0.0.1:8080 ", .path = "/api/v1/jobs",
                              .action = " ListJobs", .version = "2020-12-03\t", .date = "2026-11-27T06:00:00Z",
                              .nonce = "n1"};
    struct acs_signed s;
    struct errbuf e;
    assert_int_equal(acs_sign(&req, "testid", "testsecret", &s, &e), 0);
    assert_string_equal(acs_signed_header(&s, "host"), "127.0.0.1:8080");
    assert_non_null(strstr(s.canonical_request, "\nx-acs-action:ListJobs\n"));
    assert_non_null(strstr(s.canonical_request, "\nx-acs-version:2020-12-03\n"));
    acs_signed_free(&s);
}

/* what cannot be signed is refused with a message that names it, and no secret */
static void test_refusals(void **st)
{
    (void)st;
    struct acs_request good = {.method = "GET", .host = "h", .path = "/x", .action = "GetJob", .version = "2020-12-03"};
    struct {
        struct acs_request r;
        const char *id, *secret, *msg;
    } bad[] = {
        {good, "", "s3cr3t", "AccessKey ID"},
        {good, NULL, "s3cr3t", "AccessKey ID"},
        {good, "id,x", "s3cr3t", "AccessKey ID"},
        {good, "id x", "s3cr3t", "AccessKey ID"},
        {good, "id", "", "secret is empty"},
        {good, "id", NULL, "secret is empty"},
    };
    size_t n = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < n; i++) {
        struct acs_signed s;
        struct errbuf e = {{0}};
        assert_int_equal(acs_sign(&bad[i].r, bad[i].id, bad[i].secret, &s, &e), -1);
        assert_non_null(strstr(e.msg, bad[i].msg));
        assert_null(strstr(e.msg, "s3cr3t"));
    }
    /* one field of a good request set to a bad value (the offset of a const char *) */
#define F(field) offsetof(struct acs_request, field)
    struct {
        size_t field;
        const char *value, *msg;
    } fields[] = {{F(method), "get", "method"},   {F(method), "", "method"},         {F(path), "x", "path"},
                  {F(path), NULL, "path"},         {F(host), "", "host"},             {F(host), "h\r\nX: y", "host"},
                  {F(host), "  ", "host"},         {F(action), NULL, "x-acs-action"}, {F(version), "1\n", "x-acs-version"},
                  {F(date), "2026-11-27 06:00:00", "x-acs-date"}, {F(date), "2026-11-27T06:00:00", "x-acs-date"},
                  {F(nonce), "a\nb", "nonce"},     {F(content_type), "", "content type"},
                  {F(security_token), "t\n", "security token"}};
#undef F
    const struct acs_kv noname[] = {{"", "v"}};
    size_t nf = sizeof fields / sizeof fields[0];
    for (size_t i = 0; i <= nf; i++) {
        struct acs_request r = good;
        if (i < nf)
            memcpy((char *)&r + fields[i].field, &fields[i].value, sizeof(const char *));
        else
            r.query = noname, r.nquery = 1;
        const char *want = i < nf ? fields[i].msg : "no name";
        struct acs_signed s;
        struct errbuf e = {{0}};
        assert_int_equal(acs_sign(&r, "id", "s3cr3t", &s, &e), -1);
        if (!strstr(e.msg, want))
            fail_msg("case %zu: \"%s\" is not in \"%s\"", i, want, e.msg);
        assert_null(strstr(e.msg, "s3cr3t"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_documented_example), cmocka_unit_test(test_create_job),
        cmocka_unit_test(test_get_requests),       cmocka_unit_test(test_encoding),
        cmocka_unit_test(test_fresh_date_and_nonce), cmocka_unit_test(test_trimmed),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
