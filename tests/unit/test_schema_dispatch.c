/* The rows the dispatcher process is fed from (schema/dispatch.c) and the api's hold on
 * its experiment row (schema/exp_api.c), on a real SQLite file: cursors start at what
 * exists, each reader gives exactly the rows after its cursor, in order, of this
 * experiment only, metrics of a trial's current attempt only, the first FINAL of it;
 * the replays (FD, AD) and the api's take / release of the row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "schema/dispatch.h"
#include "schema/exp_api.h"
#include "schema/trial_sets.h"

static char *tmpdir;

static struct db *db_with(const char *name, const char *const *exps)
{
    char *p = xasprintf("%s/%s.db", tmpdir, name);
    struct db *db;
    struct errbuf e;
    assert_int_equal(db_open(p, &db, &e), 0);
    free(p);
    for (int i = 0; exps[i]; i++) {
        struct experiment x = {.id = (char *)exps[i], .config = "{}", .search_space = "{}", .platform = "local",
                               .exp_dir = tmpdir, .start_time = now_ms(), .concurrency = 1, .seed = 1, .token = "t"};
        assert_int_equal(exp_insert(db, &x, &e), 0);
    }
    return db;
}

static void trial(struct db *db, const char *exp, const char *id, int64_t seq, const char *status, int64_t pid,
                  const char *label)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e, "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameter_label,"
                                    " parameters, status, platform, submit_time, updated_at)"
                                    " VALUES (?,?,?,?,?,?,?,'local',1,1)",
                            "ssiFsss", id, exp, seq, pid < 0 ? NAN : (double)pid, label, "{\"x\":1}", status), 1);
}

static void metric(struct db *db, const char *trial_id, int attempt, const char *type, int64_t seq, const char *value)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e, "INSERT INTO metric(trial_id, attempt, parameter_id, type, sequence, value, time)"
                                    " VALUES (?, ?, '3', ?, ?, ?, 1)", "sdsis", trial_id, attempt, type, seq, value), 1);
}

static void set_status(struct db *db, const char *id, const char *status)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e, "UPDATE trial SET status = ? WHERE id = ?", "ss", status, id), 1);
}

/* Each reader's rows as text, "a|b|...;" per row. */
static void on_change(void *arg, const struct disp_change *c)
{
    sb_printf(arg, "%s|%s|%lld;", c->trial_id, c->status, c->has_index ? (long long)c->parameter_id : -9LL);
}

static void on_metric(void *arg, const struct disp_metric *m)
{
    sb_printf(arg, "%s|%s|%s|%lld|%s;", m->trial_id, m->parameter_id, m->type, (long long)m->sequence, m->value);
}

static void on_import(void *arg, int64_t id, const char *data)
{
    (void)id;
    sb_printf(arg, "%s;", data);
}

static void on_result(void *arg, const char *trial_id, const char *parameters, const char *final_json)
{
    sb_printf(arg, "%s|%s|%s;", trial_id, parameters, final_json);
}

static void on_active(void *arg, int64_t index, const char *parameters, const char *label)
{
    sb_printf(arg, "%lld|%s|%s;", (long long)index, parameters, label ? label : "-");
}

static void test_cursors_and_feeds(void **st)
{
    (void)st;
    const char *exps[] = {"exp1", "exp2", NULL};
    struct db *db = db_with("feeds", exps);
    struct errbuf e;
    trial(db, "exp1", "A0001", 0, "SUCCEEDED", 0, NULL);
    trial(db, "exp2", "B0001", 0, "RUNNING", 0, NULL); /* another experiment: never seen */
    metric(db, "A0001", 1, "FINAL", 0, "0.5");
    metric(db, "B0001", 1, "PERIODICAL", 0, "9");
    assert_int_equal(db_event(db, &e, "exp1", NULL, "import", NULL, NULL, "[{\"parameter\":{},\"value\":1}]"), 0);
    struct disp_cursors c;
    assert_int_equal(disp_cursors_now(db, "exp1", &c, &e), 0);
    assert_true(c.metric > 0 && c.change > 0 && c.import > 0);

    /* after the cursors: nothing yet */
    struct strbuf sb;
    sb_init(&sb);
    assert_int_equal(disp_changes(db, "exp1", c.change, 1000, on_change, &sb, &e), 0);
    assert_int_equal(disp_metrics(db, "exp1", c.metric, 1000, on_metric, &sb, &e), 0);
    assert_int_equal(disp_imports(db, "exp1", c.import, INT64_MAX, on_import, &sb, &e), 0);
    assert_null(sb.buf);

    /* a new trial, one customized (no index), an end, a retried attempt's metrics */
    trial(db, "exp1", "A0002", 1, "RUNNING", 1, "0-1_0_2");
    trial(db, "exp1", "A0003", 2, "WAITING", -1, NULL);
    metric(db, "A0002", 1, "PERIODICAL", 0, "0.1");
    assert_int_equal(db_run(db, &e, "UPDATE trial SET attempt = 2 WHERE id = 'A0002'", ""), 1);
    metric(db, "A0002", 2, "PERIODICAL", 0, "0.2");
    metric(db, "A0002", 2, "FINAL", 0, "0.3");
    metric(db, "A0002", 2, "FINAL", 1, "0.4");
    set_status(db, "A0002", "SUCCEEDED");
    trial(db, "exp2", "B0002", 1, "RUNNING", 1, NULL);
    metric(db, "B0002", 1, "PERIODICAL", 0, "9");
    assert_int_equal(db_event(db, &e, "exp1", NULL, "import", NULL, NULL, "[2]"), 0);
    assert_int_equal(db_event(db, &e, "exp1", NULL, "experiment", "RUNNING", "DONE", "[3]"), 0);

    assert_int_equal(disp_changes(db, "exp1", c.change, 1000, on_change, &sb, &e), 0);
    /* each trial once, at its latest change, in change order */
    assert_string_equal(sb.buf, "A0003|WAITING|-9;A0002|SUCCEEDED|1;");
    sb_free(&sb);
    assert_int_equal(disp_changes(db, "exp1", c.change, 1, on_change, &sb, &e), 0); /* the limit */
    assert_string_equal(sb.buf, "A0003|WAITING|-9;");
    sb_free(&sb);
    assert_int_equal(disp_metrics(db, "exp1", c.metric, 1000, on_metric, &sb, &e), 0);
    /* the first attempt's metric is not the current attempt's */
    assert_string_equal(sb.buf, "A0002|3|PERIODICAL|0|0.2;A0002|3|FINAL|0|0.3;A0002|3|FINAL|1|0.4;");
    sb_free(&sb);
    assert_int_equal(disp_final(db, "A0002", on_metric, &sb, &e), 1);
    assert_string_equal(sb.buf, "A0002|3|FINAL|0|0.3;");
    sb_free(&sb);
    assert_int_equal(disp_final(db, "A0003", on_metric, &sb, &e), 0);
    assert_null(sb.buf);
    assert_int_equal(disp_imports(db, "exp1", c.import, INT64_MAX, on_import, &sb, &e), 0);
    assert_string_equal(sb.buf, "[2];");
    sb_free(&sb);
    /* the replay's range: up to the cursor */
    assert_int_equal(disp_imports(db, "exp1", 0, c.import, on_import, &sb, &e), 0);
    assert_string_equal(sb.buf, "[{\"parameter\":{},\"value\":1}];");
    sb_free(&sb);
    db_close(db);
}

static void test_replays(void **st)
{
    (void)st;
    const char *exps[] = {"exp1", "exp2", NULL};
    struct db *db = db_with("replays", exps);
    struct errbuf e;
    trial(db, "exp1", "A0002", 1, "SUCCEEDED", 1, NULL);
    trial(db, "exp1", "A0001", 0, "SUCCEEDED", 0, NULL);
    trial(db, "exp1", "A0003", 2, "FAILED", 2, NULL);
    trial(db, "exp1", "A0004", 3, "RUNNING", 3, "0-3_0_12");
    trial(db, "exp1", "A0005", 4, "WAITING", 4, NULL);
    trial(db, "exp1", "A0006", 5, "WAITING", -1, NULL); /* customized: no index, not the dispatcher's */
    trial(db, "exp2", "B0001", 0, "RUNNING", 0, NULL);
    assert_int_equal(db_run(db, &e, "UPDATE trial SET final_metric_json = '0.5' WHERE id IN ('A0001', 'A0003')", ""),
                     2);
    struct strbuf sb;
    sb_init(&sb);
    /* SUCCEEDED with a result only, in sequence order */
    assert_int_equal(disp_succeeded(db, "exp1", on_result, &sb, &e), 0);
    assert_string_equal(sb.buf, "A0001|{\"x\":1}|0.5;");
    sb_free(&sb);
    assert_int_equal(disp_active(db, "exp1", on_active, &sb, &e), 0);
    assert_string_equal(sb.buf, "3|{\"x\":1}|0-3_0_12;4|{\"x\":1}|-;");
    sb_free(&sb);
    /* the dispatcher counts its active trials with trials_count (test_schema_sets) */
    assert_int_equal(trials_count(db, "exp1", COUNT_ACTIVE, NULL, &e), 3);
    db_close(db);
}

static void test_api_hold(void **st)
{
    (void)st;
    const char *exps[] = {"exp1", NULL};
    struct db *db = db_with("hold", exps);
    struct errbuf e;
    char *want = NULL;
    assert_int_equal(exp_desired_status(db, "exp1", &want, &e), 1);
    assert_null(want);
    assert_int_equal(exp_desired_status(db, "nosuch", &want, &e), 0);
    assert_int_equal(db_run(db, &e, "UPDATE experiment SET desired_status = 'STOPPED', end_time = 77,"
                                    " tuner_exhausted = 1 WHERE id = 'exp1'", ""), 1);
    assert_int_equal(exp_desired_status(db, "exp1", &want, &e), 1);
    assert_string_equal(want, "STOPPED");
    free(want);
    assert_int_equal(exp_set_port(db, "exp1", 8123, &e), 0);
    /* taken keeping end_time (view), then clearing it */
    assert_int_equal(exp_api_take(db, "exp1", 4242, 99, 1000, 1, &e), 0);
    struct experiment x;
    assert_int_equal(exp_load(db, "exp1", &x, &e), 1);
    assert_int_equal(x.port, 8123);
    assert_int_equal(x.api_pid, 4242);
    assert_int_equal(x.api_start, 99);
    assert_int_equal(x.api_heartbeat, 1000);
    assert_null(x.desired_status); /* a stop asked of an earlier api is forgotten */
    assert_int_equal(x.end_time, 77);
    exp_clear(&x);
    assert_int_equal(exp_api_take(db, "exp1", 4242, 99, 1000, 0, &e), 0);
    assert_int_equal(exp_tuner_revive(db, "exp1", &e), 0);
    assert_int_equal(exp_load(db, "exp1", &x, &e), 1);
    assert_int_equal(x.end_time, 0);
    assert_int_equal(x.tuner_exhausted, 0);
    exp_clear(&x);
    /* only the api recorded lets go */
    assert_int_equal(exp_api_release(db, "exp1", 1111, &e), 0);
    assert_int_equal(exp_load(db, "exp1", &x, &e), 1);
    assert_int_equal(x.api_pid, 4242);
    exp_clear(&x);
    assert_int_equal(exp_api_release(db, "exp1", 4242, &e), 0);
    assert_int_equal(exp_load(db, "exp1", &x, &e), 1);
    assert_int_equal(x.api_pid, 0);
    exp_clear(&x);
    db_close(db);
}

int main(void)
{
    char tmpl[] = "/tmp/trialq-test-dispatch-XXXXXX";
    tmpdir = mkdtemp(tmpl);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursors_and_feeds),
        cmocka_unit_test(test_replays),
        cmocka_unit_test(test_api_hold),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_rf(tmpdir);
    return rc;
}
