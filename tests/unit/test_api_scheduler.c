/* test_api_scheduler.c: the scheduler's status machine (api/scheduler.c) on a real
 * SQLite file, with the real tuners: free slots and trialConcurrency, the budgets
 * (maxTrialNumber, maxTrialDuration), the experiment status it sets, a stop; and the
 * tuner view (api/tuner_view.c): what the tuner sees equals the rows, also when it is
 * built again from the database alone (an api restarted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/unit_tmpdir.h"

#include "api/api.h"
#include "api/scheduler.h"
#include "common/json.h"
#include "schema/trial_sets.h"

static char tmpdir[] = "/tmp/trialq-test-sched-XXXXXX";
static int ndb;

/* An experiment in a fresh database, RUNNING, with an api struct around it as
 * api_main builds one (no HTTP server, no workers). */
static struct api *start(const char *tuner, int concurrency, int64_t max_trials, int64_t max_trial_seconds)
{
    char *yml = xasprintf("%s/exp%d.yml", tmpdir, ndb);
    FILE *f = fopen(yml, "w");
    assert_non_null(f);
    fprintf(f, "searchSpace:\n  x: {_type: uniform, _value: [0, 10]}\n  k: {_type: choice, _value: [1, 2, 3]}\n"
               "trialCommand: 'true'\ntrialCodeDirectory: %s\ntrialConcurrency: %d\n"
               "tuner: {name: %s, classArgs: {optimize_mode: maximize}}\n"
               "trainingService: {platform: local}\n", tmpdir, concurrency, tuner);
    fclose(f);
    struct api *a = xcalloc(1, sizeof *a);
    struct errbuf e;
    assert_int_equal(config_load(yml, &a->cfg, &e), 0);
    free(yml);
    char *path = xasprintf("%s/s%d.db", tmpdir, ndb++);
    assert_int_equal(db_open(path, &a->db, &e), 0);
    free(path);
    char *config = cJSON_PrintUnformatted(a->cfg->canonical);
    char *space = cJSON_PrintUnformatted(a->cfg->search_space);
    struct experiment x = {.id = "exp1", .config = config, .search_space = space, .platform = "local",
                           .exp_dir = tmpdir, .start_time = now_ms(), .concurrency = concurrency, .seed = 7,
                           .token = "t", .max_trial_number = max_trials, .max_trial_seconds = max_trial_seconds};
    assert_int_equal(exp_insert(a->db, &x, &e), 0);
    free(config);
    free(space);
    assert_int_equal(exp_transition(a->db, "exp1", NULL, "RUNNING", "test", &e), 1);
    a->exp_id = xstrdup("exp1");
    a->next_index = -1;
    a->base = event_base_new();
    assert_int_equal(exp_load(a->db, a->exp_id, &a->exp, &e), 1);
    assert_int_equal(sched_load_tuner(a, &e), 0);
    return a;
}

/* The api's end, as api_main's: the database stays. */
static void stop_api(struct api *a, int close_db)
{
    api_free_state(a);
    if (close_db)
        db_close(a->db);
    event_base_free(a->base);
    free(a->exp_id);
    free(a);
}

static int64_t count(struct db *db, const char *sql)
{
    int64_t n = -1;
    struct errbuf e;
    assert_true(db_int(db, &e, &n, sql, "") >= 0);
    return n;
}

static char *status_of(struct api *a)
{
    char *s = NULL;
    struct errbuf e;
    assert_int_equal(db_text(a->db, &e, &s, "SELECT status FROM experiment WHERE id = 'exp1'", ""), 1);
    return s;
}

static void assert_status(struct api *a, const char *want)
{
    char *s = status_of(a);
    assert_string_equal(s, want);
    free(s);
}

/* Every WAITING trial ends as a worker would end it: SUCCEEDED with a final metric. */
static void finish_waiting(struct api *a)
{
    struct errbuf e;
    assert_true(db_run(a->db, &e,
                       "UPDATE trial SET status = 'SUCCEEDED', final_metric = sequence * 1.5, start_time = ?1,"
                       " end_time = ?1, updated_at = ?1 WHERE status = 'WAITING'", "i", now_ms()) >= 0);
}

/* maxTrialNumber: a tuner that ignores results gets trials queued ahead of the free
 * slots, never more than the budget; NO_MORE_TRIAL while they run, DONE when they end. */
static void test_trial_budget(void **state)
{
    struct api *a = start("Random", 2, 3, 0);
    sched_tick(a);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE status = 'WAITING'"), 3);
    assert_int_equal(count(a->db, "SELECT count(DISTINCT sequence) FROM trial"), 3);
    assert_int_equal(count(a->db, "SELECT max(parameter_id) FROM trial WHERE parameter_source = 'algorithm'"), 2);
    assert_int_equal(count(a->db, "SELECT count(*) FROM event WHERE entity = 'trial' AND reason = 'submitted'"), 3);
    assert_status(a, "NO_MORE_TRIAL");
    sched_tick(a);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial"), 3); /* the budget holds */
    finish_waiting(a);
    sched_tick(a);
    assert_status(a, "DONE");
    stop_api(a, 1);
}

/* maxExperimentDuration: when the running time is used up, queued trials no worker took
 * are withdrawn (SYS_CANCELED, not counted), no new one comes, and the experiment is DONE
 * once nothing runs. */
static void test_duration_budget(void **state)
{
    struct api *a = start("Random", 1, 0, 0);
    sched_tick(a);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE status = 'WAITING'"), 3);
    struct errbuf e;
    assert_int_equal(db_run(a->db, &e, "UPDATE trial SET status = 'RUNNING', lease_owner = 'h:1:1', start_time = ?"
                                       " WHERE sequence = 0", "i", now_ms()), 1);
    assert_int_equal(db_run(a->db, &e, "UPDATE experiment SET max_exec_seconds = 1, exec_duration_ms = 2000", ""), 1);
    sched_tick(a);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE status = 'SYS_CANCELED' AND start_time IS NULL"),
                     2);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial"), 3);
    assert_status(a, "NO_MORE_TRIAL");
    assert_int_equal(db_run(a->db, &e, "UPDATE trial SET status = 'SUCCEEDED', updated_at = 1 WHERE sequence = 0",
                            ""), 1);
    sched_tick(a);
    assert_status(a, "DONE");
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial"), 3);
    stop_api(a, 1);
}

/* A tuner that learns (TPE) is asked only for free slots: trialConcurrency trials are
 * active, and one more comes when one ends. */
static void test_concurrency(void **state)
{
    struct api *a = start("TPE", 2, 0, 0);
    sched_tick(a);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE status = 'WAITING'"), 2);
    sched_tick(a);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial"), 2);
    struct errbuf e;
    assert_int_equal(db_run(a->db, &e, "UPDATE trial SET status = 'SUCCEEDED', final_metric = 1, updated_at = ?"
                                       " WHERE sequence = 0", "i", now_ms()), 1);
    sched_tick(a);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial"), 3);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE status = 'WAITING'"), 2);
    assert_status(a, "RUNNING");
    stop_api(a, 1);
}

/* maxTrialDuration: every RUNNING trial over its time gets a kill request, however many
 * there are (no cap at 64), and only those. */
static void test_trial_duration(void **state)
{
    struct api *a = start("Random", 100, 0, 1);
    struct errbuf e;
    for (int i = 0; i < 80; i++) {
        char id[8];
        snprintf(id, sizeof id, "r%04d", i);
        /* 70 started 5 s ago, 10 just now */
        assert_int_equal(db_run(a->db, &e,
                                "INSERT INTO trial(id, experiment_id, sequence, parameters, status, platform,"
                                " submit_time, start_time, updated_at, lease_owner) VALUES (?, 'exp1', ?, '{}',"
                                " 'RUNNING', 'local', 1, ?, 1, 'h:1:1')",
                                "sii", id, (int64_t)i, now_ms() - (i < 70 ? 5000 : 0)), 1);
    }
    assert_int_equal(db_run(a->db, &e, "UPDATE experiment SET next_sequence = 80", ""), 1);
    sched_tick(a);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE kill_request IS NOT NULL"), 70);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE kill_request IS NOT NULL"
                                  " AND start_time > strftime('%s','now') * 1000 - 2000"), 0);
    stop_api(a, 1);
}

/* A stop: trials a worker took get a kill request, queued ones stay WAITING for a
 * resume; the loop ends once nothing started is left. */
static void test_stop(void **state)
{
    struct api *a = start("Random", 1, 0, 0);
    sched_tick(a); /* 1 + 2 queued ahead */
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE status = 'WAITING'"), 3);
    struct errbuf e;
    assert_int_equal(db_run(a->db, &e, "UPDATE trial SET status = 'RUNNING', lease_owner = 'h:1:1', start_time = 1"
                                       " WHERE sequence = 0", ""), 1);
    sched_begin_stop(a, "test");
    assert_status(a, "STOPPING");
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE sequence = 0"
                                  " AND kill_request = 'USER_CANCELED'"), 1);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE status = 'WAITING'"
                                  " AND waiting_reason = 'experiment stopped; runs on resume'"), 2);
    sched_tick(a);
    assert_false(event_base_got_break(a->base)); /* the running trial has not ended yet */
    assert_int_equal(db_run(a->db, &e, "UPDATE trial SET status = 'USER_CANCELED' WHERE sequence = 0", ""), 1);
    sched_tick(a);
    assert_true(event_base_got_break(a->base));
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE status = 'WAITING'"), 2);
    stop_api(a, 1);
}

/* Queued trials are withdrawn newest first, as many as asked, beyond 64 too. */
static void test_cancel_queued(void **state)
{
    struct api *a = start("Random", 1, 0, 0);
    struct errbuf e;
    for (int i = 0; i < 100; i++) {
        char id[8];
        snprintf(id, sizeof id, "q%04d", i);
        assert_int_equal(db_run(a->db, &e, "INSERT INTO trial(id, experiment_id, sequence, parameters, status,"
                                           " platform, submit_time, updated_at) VALUES (?, 'exp1', ?, '{}',"
                                           " 'WAITING', 'local', 1, 1)", "si", id, (int64_t)i), 1);
    }
    assert_int_equal(sched_cancel_queued(a, "test", 90), 90);
    assert_int_equal(count(a->db, "SELECT count(*) FROM trial WHERE status = 'SYS_CANCELED'"), 90);
    assert_int_equal(count(a->db, "SELECT max(sequence) FROM trial WHERE status = 'WAITING'"), 9);
    assert_int_equal(sched_cancel_queued(a, "test", INT64_MAX), 10);
    stop_api(a, 1);
}

/* The tuner view equals the rows: imports first, then trials by sequence, statuses and
 * values as stored; after changes (an incremental refresh) and when built again from
 * the database alone, as after a restart. */
static void view_matches_rows(struct db *db, const struct tuner_history *h, int nimports)
{
    sqlite3_stmt *st;
    struct errbuf e;
    st = db_query(db, &e, "SELECT id, status, final_metric, parameter_id, parameters FROM trial"
                          " WHERE experiment_id = 'exp1' ORDER BY sequence", "");
    assert_non_null(st);
    int i = nimports;
    while (sqlite3_step(st) == SQLITE_ROW) {
        assert_true(i < h->n);
        const struct tuner_result *r = &h->items[i++];
        assert_string_equal(r->status, (const char *)sqlite3_column_text(st, 1));
        int has = sqlite3_column_type(st, 2) != SQLITE_NULL && strcmp(r->status, "SUCCEEDED") == 0;
        assert_int_equal(r->has_value, has);
        if (has)
            assert_true(r->value == sqlite3_column_double(st, 2));
        assert_int_equal(r->parameter_id, sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3));
        cJSON *p = cJSON_Parse((const char *)sqlite3_column_text(st, 4));
        assert_true(cJSON_Compare(p, r->parameters, 1));
        cJSON_Delete(p);
    }
    sqlite3_reset(st);
    assert_int_equal(i, h->n);
}

static void test_tuner_view(void **state)
{
    struct api *a = start("TPE", 3, 0, 0);
    struct errbuf e;
    /* an imported result comes first */
    assert_int_equal(db_event(a->db, &e, "exp1", NULL, "import", NULL, NULL,
                              "[{\"parameter\": {\"x\": 1.5, \"k\": 2}, \"value\": 0.25},"
                              " {\"parameter\": {\"x\": 2}, \"value\": \"bad\"}]"), 0);
    for (int round = 0; round < 4; round++) {
        sched_tick(a);
        finish_waiting(a);
    }
    struct tuner_view_opts o = {.needs_latest = 1, .space_index_base = 0};
    assert_int_equal(tuner_view_refresh(&a->tuner_view, a->db, "exp1", &o, &e), 0);
    struct tuner_history h = tuner_view_history(a->tuner_view);
    assert_true(h.n >= 5);
    assert_int_equal(h.items[0].parameter_id, -1); /* the import */
    assert_true(h.items[0].value == 0.25);
    view_matches_rows(a->db, &h, 1);
    /* an incremental refresh sees a change and a new row */
    assert_int_equal(db_run(a->db, &e, "UPDATE trial SET status = 'FAILED', updated_at = ? WHERE sequence = 1", "i",
                            now_ms() + 1), 1);
    sched_tick(a);
    assert_int_equal(tuner_view_refresh(&a->tuner_view, a->db, "exp1", &o, &e), 0);
    h = tuner_view_history(a->tuner_view);
    view_matches_rows(a->db, &h, 1);
    /* a trial's latest intermediate result (Hyperband, BOHB): the newest PERIODICAL */
    assert_int_equal(db_run(a->db, &e, "INSERT INTO metric(trial_id, parameter_id, type, sequence, value,"
                                       " default_value, time) SELECT id, '0', 'PERIODICAL', 3, '0.75', 0.75, 1"
                                       " FROM trial WHERE status = 'WAITING' ORDER BY sequence LIMIT 1", ""), 1);
    assert_int_equal(db_run(a->db, &e, "UPDATE trial SET updated_at = ? WHERE status = 'WAITING'", "i",
                            now_ms() + 2) > 0, 1);
    assert_int_equal(tuner_view_refresh(&a->tuner_view, a->db, "exp1", &o, &e), 0);
    h = tuner_view_history(a->tuner_view);
    int latest = 0;
    for (int i = 0; i < h.n; i++)
        latest += h.items[i].has_latest && h.items[i].latest == 0.75;
    assert_int_equal(latest, 1);
    /* restarted: a new api builds its view from the database alone, equal to the old */
    struct db *db = a->db;
    struct tuner_history before = h;
    int n_before = before.n;
    double *values = xcalloc((size_t)n_before, sizeof *values);
    for (int i = 0; i < n_before; i++)
        values[i] = before.items[i].has_value ? before.items[i].value : -1;
    stop_api(a, 0);
    struct tuner_view *v = NULL;
    assert_int_equal(tuner_view_refresh(&v, db, "exp1", &o, &e), 0);
    struct tuner_history after = tuner_view_history(v);
    assert_int_equal(after.n, n_before);
    for (int i = 0; i < n_before; i++)
        assert_true((after.items[i].has_value ? after.items[i].value : -1) == values[i]);
    view_matches_rows(db, &after, 1);
    free(values);
    tuner_view_free(v);
    db_close(db);
}

/* A row committed late below the newest one: the view reloads and stays in order. */
static void test_tuner_view_order(void **state)
{
    struct api *a = start("TPE", 3, 0, 0);
    struct errbuf e;
    struct tuner_view_opts o = {0};
    assert_int_equal(db_run(a->db, &e, "INSERT INTO trial(id, experiment_id, sequence, parameters, status, platform,"
                                       " submit_time, updated_at) VALUES ('b0005', 'exp1', 5, '{\"x\":5}', 'WAITING',"
                                       " 'local', 1, ?)", "i", now_ms()), 1);
    assert_int_equal(tuner_view_refresh(&a->tuner_view, a->db, "exp1", &o, &e), 0);
    assert_int_equal(db_run(a->db, &e, "INSERT INTO trial(id, experiment_id, sequence, parameters, status, platform,"
                                       " submit_time, updated_at) VALUES ('a0002', 'exp1', 2, '{\"x\":2}', 'WAITING',"
                                       " 'local', 1, ?)", "i", now_ms()), 1);
    assert_int_equal(tuner_view_refresh(&a->tuner_view, a->db, "exp1", &o, &e), 0);
    struct tuner_history h = tuner_view_history(a->tuner_view);
    assert_int_equal(h.n, 2);
    view_matches_rows(a->db, &h, 0);
    stop_api(a, 1);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trial_budget),  cmocka_unit_test(test_duration_budget), cmocka_unit_test(test_concurrency),
        cmocka_unit_test(test_trial_duration), cmocka_unit_test(test_stop),
        cmocka_unit_test(test_cancel_queued), cmocka_unit_test(test_tuner_view),
        cmocka_unit_test(test_tuner_view_order),
    };
    return run_in_tmpdir(tmpdir, tests);
}
