/* test_schema_sets.c: the typed reads and writes the api and nnictl use instead of SQL
 * (schema/trial_sets.c, trial_new.c, exp_ops.c, webui_rows.c), on a real SQLite file:
 * one trial insert for the scheduler and by hand, counts bound to any platform name,
 * sets in their order, the web UI's sorted and filtered page, the statuses defined once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/unit/db_fixture.h"
#include "tests/unit/unit_tmpdir.h"

#include "schema/trial_new.h"
#include "schema/webui_rows.h"

static char tmpdir[] = "/tmp/trialq-test-sets-XXXXXX";

/* A fresh database with experiment exp1 (local, concurrency 2, no budget). */
static struct db *fresh(void)
{
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 0);
    return db;
}

/* A trial as a worker left it. */
static void put(struct db *db, const char *id, int64_t seq, const char *status, const char *platform,
                const char *owner, double metric, const char *params)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e, "INSERT INTO trial(id, experiment_id, sequence, parameters, status, platform,"
                                    " lease_owner, final_metric, submit_time, start_time, end_time, updated_at)"
                                    " VALUES (?, 'exp1', ?, ?, ?, ?, ?, ?, 1, 10, 20 + ?, 1)",
                            "sissssFi", id, seq, params ? params : "{}", status, platform, owner, metric, seq), 1);
}

static void test_statuses(void **state)
{
    assert_string_equal(SQL_TRIAL_FINAL, "('SUCCEEDED','FAILED','USER_CANCELED','SYS_CANCELED','EARLY_STOPPED')");
    assert_string_equal(SQL_TRIAL_ACTIVE, "('WAITING','RUNNING')");
    assert_string_equal(TRIAL_STATUS_WORDS,
                        "WAITING, RUNNING, SUCCEEDED, FAILED, USER_CANCELED, SYS_CANCELED, EARLY_STOPPED");
    int finals = 0;
    for (int i = 0; i < TRIAL_NSTATUS; i++) {
        finals += trial_status_final(trial_statuses[i]);
        assert_int_equal(trial_status_find(trial_statuses[i], strlen(trial_statuses[i])), i);
        assert_ptr_equal(trial_status_intern(trial_statuses[i]), trial_statuses[i]);
    }
    assert_int_equal(finals, 5);
    assert_false(trial_status_final(NULL));
    assert_false(trial_status_final("RUNNING"));
    assert_int_equal(trial_status_find("RUNNINGX", 7), 1); /* a prefix of the text, by length */
    assert_int_equal(trial_status_find("RUN", 3), -1);
    assert_string_equal(trial_status_intern("SOMETHING"), "UNKNOWN");
}

/* The scheduler's insert and the customized one are one INSERT: sequences follow the
 * experiment's counter, each with its event; the label is kept. */
static void test_trial_add(void **state)
{
    struct db *db = fresh();
    struct errbuf e;
    struct trial_new n = {.exp_id = "exp1", .platform = "local", .parameters = "{\"x\":1}", .source = "algorithm",
                          .parameter_id = 0, .label = "0-3_0_12", .max_attempts = 2, .reason = "submitted"};
    char id1[6], id2[6];
    int64_t s1 = -1, s2 = -1;
    assert_int_equal(trial_add(db, &n, id1, &s1, &e), 0);
    n.parameter_id = 1;
    n.label = NULL;
    assert_int_equal(trial_add(db, &n, id2, &s2, &e), 0);
    assert_int_equal(s1, 0);
    assert_int_equal(s2, 1);
    assert_memory_not_equal(id1, id2, 6);
    struct trial t;
    assert_int_equal(trial_load(db, id1, &t, &e), 1);
    assert_string_equal(t.status, "WAITING");
    assert_string_equal(t.parameter_source, "algorithm");
    assert_string_equal(t.parameter_label, "0-3_0_12");
    assert_int_equal(t.max_attempts, 2);
    trial_clear(&t);
    int64_t next = 0;
    assert_int_equal(exp_next_sequence(db, "exp1", &next, &e), 1);
    assert_int_equal(next, 2);
    int64_t events = 0;
    assert_int_equal(db_int(db, &e, &events, "SELECT count(*) FROM event WHERE reason = 'submitted'", ""), 1);
    assert_int_equal(events, 2);
    /* customized: through trial_enqueue, the same INSERT, parameter_id NULL */
    int replaced = 0;
    struct trial_new c = {.exp_id = "exp1", .platform = "local", .parameters = "{\"x\":9}", .source = "customized",
                          .parameter_id = -1, .max_attempts = 1, .reason = "customized"};
    char id3[6];
    int64_t s3;
    assert_int_equal(trial_enqueue(db, &c, id3, &s3, &replaced, &e), 1);
    assert_int_equal(s3, 2);
    char tid[7] = {0};
    memcpy(tid, id3, 6);
    assert_int_equal(trial_load(db, tid, &t, &e), 1);
    assert_int_equal(t.parameter_id, -1);
    assert_null(t.parameter_label);
    trial_clear(&t);
    /* no experiment: refused, nothing inserted */
    n.exp_id = "nope";
    assert_int_equal(trial_add(db, &n, id1, &s1, &e), -1);
    assert_non_null(strstr(e.msg, "does not exist"));
    db_close(db);
}

/* Counts bind the platform: a name with a quote is counted, not refused. */
static void test_counts(void **state)
{
    struct db *db = fresh();
    struct errbuf e;
    put(db, "a0001", 0, "RUNNING", "lo'cal", "h:1:1", 1, NULL);
    put(db, "a0002", 1, "WAITING", "lo'cal", "h:1:1", 2, NULL); /* claimed */
    put(db, "a0003", 2, "WAITING", "lo'cal", NULL, 3, NULL);    /* only queued */
    put(db, "a0004", 3, "SUCCEEDED", "local", NULL, 4, NULL);
    put(db, "a0005", 4, "RUNNING", "local", "h:1:1", 5, NULL);
    assert_int_equal(trials_count(db, "exp1", COUNT_STARTED, "lo'cal", &e), 2);
    assert_int_equal(trials_count(db, "exp1", COUNT_STARTED, "local", &e), 1);
    assert_int_equal(trials_count(db, "exp1", COUNT_STARTED, NULL, &e), 3);
    assert_int_equal(trials_count(db, "exp1", COUNT_ACTIVE, NULL, &e), 4);
    assert_int_equal(trials_count(db, "exp1", COUNT_DONE, NULL, &e), 1);
    assert_int_equal(trials_count(db, "exp1", COUNT_RUNNING, NULL, &e), 2);
    assert_int_equal(trials_count(db, "exp1", COUNT_SUCCEEDED, NULL, &e), 1);
    assert_int_equal(trials_count(db, "other", COUNT_ACTIVE, NULL, &e), 0);
    struct status_count *c;
    int n;
    assert_int_equal(trials_per_status(db, "exp1", &c, &n, &e), 0);
    assert_int_equal(n, 3); /* by status: RUNNING, SUCCEEDED, WAITING */
    assert_string_equal(c[0].status, "RUNNING");
    assert_int_equal(c[0].n, 2);
    assert_string_equal(c[2].status, "WAITING");
    status_counts_free(c, n);
    db_close(db);
}

/* Sets in their order, as many as there are (no cap). */
static void test_sets(void **state)
{
    struct db *db = fresh();
    struct errbuf e;
    for (int i = 0; i < 300; i++) {
        char id[8];
        snprintf(id, sizeof id, "q%04d", i);
        put(db, id, i, "WAITING", "local", i < 100 ? "h:1:1" : NULL, i, NULL);
    }
    struct id_list l;
    assert_int_equal(trials_queued(db, "exp1", 1000, &l, &e), 0);
    assert_int_equal(l.n, 200);
    assert_string_equal(l.ids[0], "q0299"); /* newest first */
    id_list_free(&l);
    assert_int_equal(trials_queued(db, "exp1", 5, &l, &e), 0);
    assert_int_equal(l.n, 5);
    id_list_free(&l);
    assert_int_equal(trials_started(db, "exp1", &l, &e), 0);
    assert_int_equal(l.n, 100);
    id_list_free(&l);
    assert_int_equal(trials_queued_set_reason(db, "exp1", "why", &e), 200);
    assert_int_equal(trials_dirs(db, "exp1", "q0007", &l, &e), 0);
    assert_int_equal(l.n, 1);
    assert_null(l.dirs[0]);
    id_list_free(&l);
    struct trial *ts;
    int n;
    assert_int_equal(trials_all(db, "exp1", &ts, &n, &e), 0);
    assert_int_equal(n, 300);
    assert_int_equal(ts[299].sequence, 299);
    for (int i = 0; i < n; i++)
        trial_clear(&ts[i]);
    free(ts);
    db_close(db);
}

/* The web UI's page: sorted with the trials without a value last in both orders,
 * filtered by statuses and by a text matched literally (LIKE's wildcards escaped). */
static void test_webui_page(void **state)
{
    struct db *db = fresh();
    struct errbuf e;
    put(db, "a0001", 0, "SUCCEEDED", "local", NULL, 3, "{\"lr\":0.1,\"n\":500}");
    put(db, "a0002", 1, "SUCCEEDED", "local", NULL, 9, "{\"lr\":0.5}");
    put(db, "a0003", 2, "FAILED", "local", NULL, 7, "{\"lr\":\"50%\"}"); /* its metric is not shown */
    put(db, "a0004", 3, "SUCCEEDED", "local", NULL, 5, "{\"lr\":0.2}");
    struct trial rows[10];
    int n;
    int64_t total;
    struct trial_query q = {.exp_id = "exp1", .sort = "metric", .desc = 1, .limit = 10};
    assert_int_equal(webui_trial_page(db, &q, rows, &n, &total, &e), 0);
    assert_int_equal(n, 4);
    assert_int_equal(total, 4);
    const char *want_desc[] = {"a0002", "a0004", "a0001", "a0003"};
    for (int i = 0; i < n; i++) {
        assert_string_equal(rows[i].id, want_desc[i]);
        trial_clear(&rows[i]);
    }
    q.desc = 0;
    assert_int_equal(webui_trial_page(db, &q, rows, &n, &total, &e), 0);
    const char *want_asc[] = {"a0001", "a0004", "a0002", "a0003"}; /* no value: still last */
    for (int i = 0; i < n; i++) {
        assert_string_equal(rows[i].id, want_asc[i]);
        trial_clear(&rows[i]);
    }
    q = (struct trial_query){.exp_id = "exp1", .status = "FAILED,SUCCEEDED", .text = "50%", .limit = 10};
    assert_int_equal(webui_trial_page(db, &q, rows, &n, &total, &e), 0);
    assert_int_equal(n, 1); /* "50%" literally, not "50" followed by anything */
    assert_string_equal(rows[0].id, "a0003");
    trial_clear(&rows[0]);
    q = (struct trial_query){.exp_id = "exp1", .sort = "param:lr", .offset = 1, .limit = 2};
    assert_int_equal(webui_trial_page(db, &q, rows, &n, &total, &e), 0);
    assert_int_equal(total, 4);
    assert_int_equal(n, 2);
    for (int i = 0; i < n; i++)
        trial_clear(&rows[i]);
    assert_true(webui_sort_known(NULL));
    assert_true(webui_sort_known("metric:loss"));
    assert_false(webui_sort_known("param:a\"b"));
    assert_false(webui_sort_known("nothing"));
    struct best_trial b;
    assert_int_equal(trial_best_final(db, "exp1", 1, &b, &e), 1);
    assert_string_equal(b.trial_id, "a0002");
    best_trial_clear(&b);
    assert_int_equal(trial_best_final(db, "exp1", 0, &b, &e), 1);
    assert_string_equal(b.trial_id, "a0001");
    best_trial_clear(&b);
    db_close(db);
}

/* Experiment rows: ids in start order, settings, a delete that takes its trials. */
static void test_experiments(void **state)
{
    struct db *db = fresh();
    struct errbuf e;
    put(db, "a0001", 0, "SUCCEEDED", "local", NULL, 1, NULL);
    assert_int_equal(exp_set(db, "exp1", EXP_MAX_TRIAL_NUMBER, 7, &e), 1);
    assert_int_equal(exp_set(db, "exp1", EXP_CONCURRENCY, 3, &e), 1);
    assert_int_equal(exp_set_search_space(db, "exp1", "{\"a\":1}", 4, &e), 1);
    struct experiment x;
    assert_int_equal(exp_load(db, "exp1", &x, &e), 1);
    assert_int_equal(x.max_trial_number, 7);
    assert_int_equal(x.concurrency, 3);
    assert_int_equal(x.space_index_base, 4);
    assert_string_equal(x.search_space, "{\"a\":1}");
    exp_clear(&x);
    assert_int_equal(exp_exists(db, "exp1", &e), 1);
    assert_int_equal(exp_exists(db, "exp2", &e), 0);
    struct id_list l;
    assert_int_equal(exp_ids(db, 0, &l, &e), 0);
    assert_int_equal(l.n, 1);
    id_list_free(&l);
    assert_int_equal(exp_ids(db, 1, &l, &e), 0);
    assert_int_equal(l.n, 0); /* no api recorded */
    id_list_free(&l);
    assert_int_equal(exp_delete(db, "exp1", "STOPPED", "test", &e), 0);
    assert_int_equal(exp_exists(db, "exp1", &e), 0);
    struct trial t;
    assert_int_equal(trial_load(db, "a0001", &t, &e), 0);
    db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_statuses), cmocka_unit_test(test_trial_add),   cmocka_unit_test(test_counts),
        cmocka_unit_test(test_sets),     cmocka_unit_test(test_webui_page), cmocka_unit_test(test_experiments),
    };
    return run_in_tmpdir(tmpdir, tests);
}
