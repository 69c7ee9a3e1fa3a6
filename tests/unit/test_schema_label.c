/* test_schema_label.c: wire parameter ids other than the tuner index (migration 007,
 * trial.parameter_label): the trial row carries it, parameter.cfg's record and the
 * REST hyperParameters show it (a string id as a JSON string, a decimal one as a
 * number), a metric sent with it keeps it as its parameterId, and the trial listing
 * still finds each trial's FINAL metric after the added column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "schema/listing.h"
#include "tests/unit/db_fixture.h"

static char *tmpdir;

static void add_trial(struct db *db, const char *id, int64_t seq, const char *label)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e,
        "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters, status, platform,"
        " submit_time, updated_at, parameter_label) VALUES (?, 'exp1', ?, ?, '{\"x\":1,\"TRIAL_BUDGET\":3}',"
        " 'SUCCEEDED', 'local', 1, 1, ?)", "siis", id, seq, seq, label), 1);
}

static void test_label(void **state)
{
    (void)state;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "exp1", tmpdir, NULL, 1, 0);
    add_trial(db, "AAAAA", 0, "0-3_0_12");
    add_trial(db, "BBBBB", 1, "17");
    add_trial(db, "CCCCC", 2, NULL);

    struct trial t;
    assert_int_equal(trial_load(db, "AAAAA", &t, &e), 1);
    assert_string_equal(t.parameter_label, "0-3_0_12");
    assert_int_equal(t.parameter_id, 0);
    char *rec = nni_param_record(&t);
    assert_string_equal(rec, "{\"parameter_id\":\"0-3_0_12\",\"parameter_source\":\"algorithm\","
                             "\"parameters\":{\"x\":1,\"TRIAL_BUDGET\":3},\"parameter_index\":0}");
    free(rec);
    trial_clear(&t);
    assert_int_equal(trial_load(db, "BBBBB", &t, &e), 1);
    rec = nni_param_record(&t);
    assert_non_null(strstr(rec, "{\"parameter_id\":17,"));
    free(rec);
    trial_clear(&t);
    assert_int_equal(trial_load(db, "CCCCC", &t, &e), 1);
    assert_null(t.parameter_label);
    rec = nni_param_record(&t);
    assert_non_null(strstr(rec, "{\"parameter_id\":2,"));
    free(rec);
    trial_clear(&t);

    /* the trial reports with the id it was given */
    const char *line = "{\"parameter_id\": \"0-3_0_12\", \"trial_job_id\": \"AAAAA\", \"type\": \"FINAL\","
                       " \"sequence\": 0, \"value\": \"0.75\"}";
    struct metric_in m;
    void *owned;
    assert_int_equal(metric_parse(line, strlen(line), &m, &owned, &e), 0);
    assert_int_equal(metric_insert(db, "AAAAA", 1, &m, &e), 1);
    metric_owned_free(owned);

    /* GET /trial-jobs: hyperParameters with the string id, and the FINAL metric found */
    struct experiment xl;
    assert_int_equal(exp_load(db, "exp1", &xl, &e), 1);
    struct page p;
    page_init(&p, "exp1");
    struct strbuf sb;
    sb_init(&sb);
    sb_add(&sb, "[", 1);
    while (!p.done)
        assert_int_equal(trial_page_next(db, &xl, &p, 1 << 20, &sb, &e), 0);
    sb_add(&sb, "]", 1);
    cJSON *all = cJSON_Parse(sb.buf);
    assert_non_null(all);
    assert_int_equal(cJSON_GetArraySize(all), 3);
    cJSON *t0 = cJSON_GetArrayItem(all, 0);
    cJSON *hp = cJSON_Parse(cJSON_GetArrayItem(cJSON_GetObjectItem(t0, "hyperParameters"), 0)->valuestring);
    assert_string_equal(cJSON_GetObjectItem(hp, "parameter_id")->valuestring, "0-3_0_12");
    cJSON_Delete(hp);
    cJSON *fm = cJSON_GetArrayItem(cJSON_GetObjectItem(t0, "finalMetricData"), 0);
    assert_non_null(fm);
    assert_string_equal(cJSON_GetObjectItem(fm, "parameterId")->valuestring, "0-3_0_12");
    assert_string_equal(cJSON_GetObjectItem(fm, "data")->valuestring, "\"0.75\"");
    cJSON_Delete(all);
    sb_free(&sb);

    /* GET /metric-data */
    page_init(&p, "exp1");
    sb_init(&sb);
    sb_add(&sb, "[", 1);
    while (!p.done)
        assert_int_equal(metric_page_next(db, &p, 1 << 20, &sb, &e), 0);
    sb_add(&sb, "]", 1);
    all = cJSON_Parse(sb.buf);
    assert_int_equal(cJSON_GetArraySize(all), 1);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(all, 0), "parameterId")->valuestring, "0-3_0_12");
    cJSON_Delete(all);
    sb_free(&sb);
    exp_clear(&xl);
    db_close(db);
}

int main(void)
{
    char tmpl[] = "/tmp/trialq-test-label-XXXXXX";
    tmpdir = mkdtemp(tmpl);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_label),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_rf(tmpdir);
    return rc;
}
