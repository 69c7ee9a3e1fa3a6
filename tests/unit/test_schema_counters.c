/* test_schema_counters.c: the kept counts of GET /metrics (migrations 018, 020, 021;
 * schema/counters.c) on a real SQLite file: after a refresh and a fold (what the api does
 * every half second) exp_counter equals a count of the rows through claims, waiting
 * reasons, starts, retries, ends, deletes and metrics (a metric stored twice counts
 * once), and a refresh with nothing changed writes nothing; 'started' is kept by its
 * trigger at once; the migrations fill the counts from an older database's rows; the
 * workers' reports add up; the oldest WAITING trial is found. */
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

#include "schema/counters.h"

static char tmpdir[] = "/tmp/trialq-test-counters-XXXXXX";

/* The gauges recounted from the rows, as exp_counter names them. */
#define RECOUNT                                                                                                    \
    "SELECT experiment_id, 'trials:' || status, count(*) FROM trial GROUP BY 1, 2"                                 \
    " UNION ALL SELECT experiment_id, 'waiting:' || CASE"                                                          \
    "   WHEN waiting_reason LIKE 'needs % GPU%' THEN 'gpu' WHEN waiting_reason LIKE 'not submitted yet%'"          \
    "   THEN 'submit_retry' WHEN waiting_reason IS NOT NULL AND waiting_reason <> 'waiting for a worker to take it'" \
    "   THEN 'platform' WHEN lease_owner IS NULL THEN 'queued' ELSE 'claimed' END, count(*)"                       \
    " FROM trial WHERE status = 'WAITING' GROUP BY 1, 2"                                                           \
    " UNION ALL SELECT t.experiment_id, 'metrics:' || m.type, count(*) FROM metric m JOIN trial t ON t.id ="       \
    " m.trial_id GROUP BY 1, 2"

/* Folds the metrics stored since the last fold (migration 020); the number of ids folded. */
static int64_t fold(struct db *db)
{
    struct errbuf e;
    int64_t n = -1;
    if (metric_fold(db, 0, &n, &e) < 0)
        fail_msg("metric_fold: %s", e.msg);
    return n;
}

/* Refreshes an experiment's trial gauges (migration 021); whether it wrote. */
static int refresh(struct db *db, const char *exp)
{
    struct errbuf e;
    int changed = -1;
    if (counters_refresh(db, exp, &changed, &e) < 0)
        fail_msg("counters_refresh: %s", e.msg);
    return changed;
}

/* exp_counter's gauges (and metric totals: nothing is deleted where this is used) equal
 * a count of the rows, both ways (a kept 0 is no row counted), once the trial gauges are
 * refreshed and the metrics folded; a second refresh finds nothing to write */
static void assert_recount(struct db *db)
{
    struct errbuf e;
    int64_t diff = -1;
    fold(db);
    refresh(db, "e1");
    refresh(db, "e2");
    assert_int_equal(refresh(db, "e1"), 0);
    int rc = db_int(db, &e, &diff,
                    "SELECT (SELECT count(*) FROM (" RECOUNT " EXCEPT SELECT * FROM exp_counter))"
                    " + (SELECT count(*) FROM (SELECT * FROM exp_counter WHERE n <> 0 AND (name LIKE 'trials:%'"
                    " OR name LIKE 'waiting:%' OR name LIKE 'metrics:%') EXCEPT SELECT * FROM (" RECOUNT ")))", "");
    if (rc != 1)
        fail_msg("%s", e.msg);
    assert_int_equal(diff, 0);
}

static int64_t kept(struct db *db, const char *exp, const char *name)
{
    struct errbuf e;
    int64_t n = 0;
    assert_true(db_int(db, &e, &n, "SELECT n FROM exp_counter WHERE experiment_id = ? AND name = ?", "ss", exp,
                       name) >= 0);
    return n;
}

/* "name=n name=n ...": each of exp's kept counts */
static void assert_kept(struct db *db, const char *exp, const char *want)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", want);
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(w, '=');
        assert_non_null(eq);
        *eq = '\0';
        if (kept(db, exp, w) != atoll(eq + 1))
            fail_msg("%s: %s is %lld, wanted %s", exp, w, (long long)kept(db, exp, w), eq + 1);
    }
}

struct each {
    const char *name;
    int64_t n;
};
static void each_fn(const char *name, int64_t n, void *arg)
{
    struct each *w = arg;
    if (strcmp(name, w->name) == 0)
        w->n = n;
}

/* "name=n ...": what counters_each (GET /metrics' reader) says, folded or not; live: with
 * the trial gauges worked out (view mode) */
static void assert_read(struct db *db, const char *exp, int live, const char *want)
{
    char buf[512];
    struct errbuf e;
    snprintf(buf, sizeof buf, "%s", want);
    for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(w, '=');
        assert_non_null(eq);
        *eq = '\0';
        struct each got = {w, 0};
        assert_int_equal(counters_each(db, exp, live, each_fn, &got, &e), 0);
        if (got.n != atoll(eq + 1))
            fail_msg("%s: counters_each's %s%s is %lld, wanted %s", exp, live ? "live " : "", w, (long long)got.n,
                     eq + 1);
    }
}

static void run(struct db *db, const char *sql)
{
    struct errbuf e;
    assert_true(db_run(db, &e, sql, "") >= 0);
}

static void add_metric(struct db *db, const char *trial, const char *type, int seq)
{
    struct errbuf e;
    assert_true(db_run(db, &e, "INSERT OR IGNORE INTO metric (trial_id, type, sequence, value, time)"
                               " VALUES (?, ?, ?, '1', 1)", "ssd", trial, type, seq) >= 0);
}

static void test_triggers(void **state)
{
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "e1", tmpdir, NULL, 4, 0);
    fx_add_experiment(db, "e2", tmpdir, NULL, 4, 0);
    fx_add_trials(db, "e1", 6, 2);
    fx_add_trials(db, "e2", 2, 1);
    assert_recount(db);
    assert_int_equal(kept(db, "e1", "trials:WAITING"), 6);
    /* claims, a GPU wait, a platform's reason, a submit retry */
    run(db, "UPDATE trial SET lease_owner = 'h:1:1' WHERE id IN ('e10000', 'e10001', 'e10002')");
    run(db, "UPDATE trial SET waiting_reason = 'needs 1 GPU; host h has 0 free, 0 idle' WHERE id = 'e10003'");
    run(db, "UPDATE trial SET waiting_reason = 'PENDING (Resources)' WHERE id = 'e10004'");
    run(db, "UPDATE trial SET waiting_reason = 'not submitted yet, retried: 503' WHERE id = 'e10005'");
    assert_recount(db);
    assert_kept(db, "e1", "waiting:claimed=3 waiting:gpu=1 waiting:platform=1 waiting:submit_retry=1");
    /* starts, a retry (back to WAITING, started again), ends, a cancel before a start */
    run(db, "UPDATE trial SET status = 'RUNNING', start_time = 5, waiting_reason = NULL"
            " WHERE id IN ('e10000', 'e10001', 'e10002')");
    run(db, "UPDATE trial SET status = 'WAITING', attempt = 2, lease_owner = NULL, start_time = NULL"
            " WHERE id = 'e10002'");
    assert_recount(db);
    run(db, "UPDATE trial SET status = 'RUNNING', lease_owner = 'h:2:2' WHERE id = 'e10002'");
    run(db, "UPDATE trial SET status = 'SUCCEEDED' WHERE id IN ('e10000', 'e10002')");
    run(db, "UPDATE trial SET status = 'FAILED' WHERE id = 'e10001'");
    run(db, "UPDATE trial SET status = 'USER_CANCELED' WHERE id = 'e10003'");
    run(db, "UPDATE trial SET updated_at = 9, status = 'SUCCEEDED' WHERE id = 'e10000'"); /* no change */
    assert_recount(db);
    assert_kept(db, "e1", "started=4 ended:SUCCEEDED=2 ended:FAILED=1 ended:USER_CANCELED=1");
    assert_kept(db, "e2", "started=0");
    /* metrics: once each, a repeat ignored */
    add_metric(db, "e10000", "PERIODICAL", 0);
    add_metric(db, "e10000", "PERIODICAL", 1);
    add_metric(db, "e10000", "PERIODICAL", 1);
    add_metric(db, "e10000", "FINAL", 0);
    add_metric(db, "e20000", "FINAL", 0);
    /* not folded yet: none kept, and the reader counts them all the same */
    assert_kept(db, "e1", "metrics:PERIODICAL=0 metrics:FINAL=0");
    assert_read(db, "e1", 0, "metrics:PERIODICAL=2 metrics:FINAL=1 trials:WAITING=2");
    assert_read(db, "e2", 0, "metrics:FINAL=1");
    assert_int_equal(fold(db), 5); /* ids: the ignored repeat took none */
    assert_int_equal(fold(db), 0);
    assert_recount(db);
    assert_kept(db, "e1", "metrics:PERIODICAL=2 metrics:FINAL=1");
    assert_read(db, "e1", 0, "metrics:PERIODICAL=2 metrics:FINAL=1");
    /* one more, half folded: kept plus backlog */
    add_metric(db, "e10000", "PERIODICAL", 2);
    assert_read(db, "e1", 0, "metrics:PERIODICAL=3 metrics:FINAL=1");
    assert_recount(db);
    assert_kept(db, "e1", "metrics:PERIODICAL=3");
    /* the gauges move only when refreshed ('started' at once, by its trigger); a live
     * read (view mode) works them out */
    run(db, "UPDATE trial SET status = 'RUNNING', start_time = 7, lease_owner = 'h:3:3' WHERE id = 'e10005'");
    assert_kept(db, "e1", "started=5 trials:RUNNING=0 waiting:submit_retry=1");
    assert_read(db, "e1", 1, "started=5 trials:RUNNING=1 waiting:submit_retry=0 ended:SUCCEEDED=2 metrics:PERIODICAL=3");
    assert_int_equal(refresh(db, "e1"), 1);
    assert_kept(db, "e1", "started=5 trials:RUNNING=1 waiting:submit_retry=0");
    /* trials deleted (only an experiment's deletion does it; here by hand): the gauges
     * follow them, 'started' does not go down */
    run(db, "DELETE FROM trial WHERE id IN ('e10004', 'e10000')");
    assert_int_equal(refresh(db, "e1"), 1);
    assert_kept(db, "e1", "trials:WAITING=0 waiting:platform=0 ended:SUCCEEDED=1 started=5");
    /* an experiment's rows go with it */
    run(db, "DELETE FROM experiment WHERE id = 'e2'");
    int64_t left = -1;
    struct errbuf e;
    assert_int_equal(db_int(db, &e, &left, "SELECT count(*) FROM exp_counter WHERE experiment_id = 'e2'", ""), 1);
    assert_int_equal(left, 0);
    db_close(db);
}

/* A database of version 17 with trials and metrics: the migration counts them. */
static void test_migration(void **state)
{
    char *path = fx_db_path(tmpdir);
    struct db *db;
    struct errbuf e;
    assert_int_equal(db_open_version(path, 17, &db, &e), 0);
    fx_add_experiment(db, "e1", tmpdir, NULL, 4, 0);
    fx_add_trials(db, "e1", 5, 1);
    run(db, "UPDATE trial SET status = 'RUNNING', start_time = 1, lease_owner = 'h:1:1' WHERE sequence < 3");
    run(db, "UPDATE trial SET status = 'SUCCEEDED' WHERE sequence = 0");
    run(db, "UPDATE trial SET waiting_reason = 'needs 2 GPUs; host h has only 1' WHERE sequence = 4");
    add_metric(db, "e10000", "PERIODICAL", 0);
    add_metric(db, "e10000", "FINAL", 0);
    db_close(db);
    assert_int_equal(db_open(path, &db, &e), 0);
    assert_recount(db);
    assert_kept(db, "e1", "started=3 ended:SUCCEEDED=1 waiting:gpu=1 waiting:queued=1 metrics:FINAL=1");
    db_close(db);
    free(path);
}

struct seen {
    char rows[16][64];
    int n;
};

static void see(const char *platform, const char *name, int64_t v, void *arg)
{
    struct seen *s = arg;
    if (s->n < 16 && strcmp(name, "report_ms") != 0)
        snprintf(s->rows[s->n++], sizeof s->rows[0], "%s %s %lld", platform, name, (long long)v);
}

static void test_worker_stats(void **state)
{
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "e1", tmpdir, NULL, 4, 0);
    struct worker_report r = {{3, 5, 0, 1}, {0, 1, 0, 1}, 40};
    struct errbuf e;
    assert_int_equal(worker_stats_report(db, "e1", "local", &r, &e), 0);
    r.loop_lag_ms = 7;
    assert_int_equal(worker_stats_report(db, "e1", "local", &r, &e), 0);
    struct seen s = {.n = 0};
    assert_int_equal(worker_stats_each(db, "e1", see, &s, &e), 0);
    assert_int_equal(s.n, 9);
    const char *want[] = {"local errors:kill 2", "local errors:list 0", "local errors:poll 2",
                          "local errors:submit 0", "local loop_lag_ms 7", "local requests:kill 2",
                          "local requests:list 0", "local requests:poll 10", "local requests:submit 6"};
    for (int i = 0; i < 9; i++)
        assert_string_equal(s.rows[i], want[i]);
    int64_t when = 0;
    assert_int_equal(db_int(db, &e, &when, "SELECT value FROM worker_stat WHERE name = 'report_ms'", ""), 1);
    assert_true(when > now_ms() - 60000 && when <= now_ms());
    /* the oldest WAITING trial: the lowest sequence that waits */
    int64_t submit = 0;
    assert_int_equal(oldest_waiting_submit(db, "e1", &submit, &e), 0);
    fx_add_trials(db, "e1", 3, 1);
    run(db, "UPDATE trial SET submit_time = 100 + sequence");
    run(db, "UPDATE trial SET status = 'RUNNING' WHERE sequence = 0");
    assert_int_equal(oldest_waiting_submit(db, "e1", &submit, &e), 1);
    assert_int_equal(submit, 101);
    db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_triggers), cmocka_unit_test(test_migration),
                                       cmocka_unit_test(test_worker_stats)};
    return run_in_tmpdir(tmpdir, tests);
}
