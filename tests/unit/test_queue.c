/* test_queue.c: migrations, claim/lease/renew/adopt, guarded transitions, idempotent
 * metrics, and concurrent claims from several processes on one database file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "queue/queue.h"
#include "tests/unit/db_fixture.h"

static char *tmpdir;

static void test_migrate_from_older(void **s)
{
    (void)s;
    char *p = fx_db_path(tmpdir);
    struct db *db;
    struct errbuf e;
    /* a database made by the first migration set only */
    assert_int_equal(db_open_version(p, 1, &db, &e), 0);
    assert_int_equal(db_schema_version(db), 1);
    fx_add_experiment(db, "old", tmpdir, NULL, 4, 0);
    fx_add_trials(db, "old", 3, 1);
    int64_t v;
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM sqlite_master WHERE name = 'trials_v'", ""), 1);
    assert_int_equal(v, 0);
    db_close(db);
    /* reopening upgrades it; the old rows show through the new views */
    assert_int_equal(db_open(p, &db, &e), 0);
    assert_int_equal(db_schema_version(db), db_latest_version());
    assert_true(db_latest_version() >= 2);
    assert_int_equal(db_int(db, &e, &v, "SELECT count(*) FROM trials_v WHERE experiment_id = 'old'", ""), 1);
    assert_int_equal(v, 3);
    db_close(db);
    free(p);
}

static void test_claim_lease_finish(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "ex1", tmpdir, NULL, 4, 0);
    fx_add_trials(db, "ex1", 2, 1);
    struct trial t;
    assert_int_equal(queue_claim(db, "ex1", "local", "h:1:1", 10000, &t, &e), 1);
    assert_string_equal(t.id, "ex10000");
    assert_string_equal(t.lease_owner, "h:1:1");
    /* the claimed trial is not handed out twice */
    struct trial t2;
    assert_int_equal(queue_claim(db, "ex1", "local", "h:2:2", 10000, &t2, &e), 1);
    assert_string_equal(t2.id, "ex10001");
    struct trial t3;
    assert_int_equal(queue_claim(db, "ex1", "local", "h:2:2", 10000, &t3, &e), 0);
    /* only the owner moves it to RUNNING */
    assert_int_equal(trial_mark_running(db, t.id, "h:9:9", "job", "h", NULL, now_ms(), &e), 0);
    assert_int_equal(trial_mark_running(db, t.id, "h:1:1", "job", "h", NULL, now_ms(), &e), 1);
    assert_int_equal(trial_finish(db, t.id, "h:1:1", "SUCCEEDED", 1, 0, now_ms(), NULL, &e), 1);
    /* final states never change */
    assert_int_equal(trial_finish(db, t.id, "h:1:1", "FAILED", 1, 1, now_ms(), NULL, &e), 0);
    struct trial r;
    assert_int_equal(trial_load(db, t.id, &r, &e), 1);
    assert_string_equal(r.status, "SUCCEEDED");
    assert_null(r.lease_owner);
    int64_t events;
    db_int(db, &e, &events, "SELECT count(*) FROM event WHERE trial_id = ? AND entity = 'trial'", "s", t.id);
    assert_int_equal(events, 2); /* RUNNING, SUCCEEDED (a claim changes no status) */
    trial_clear(&r);
    trial_clear(&t);
    trial_clear(&t2);
    db_close(db);
}

/* Once a stop is asked for (nnictl stop writes desired_status first) or under way, no
 * worker of any platform starts a trial: one started after the api's kill pass would
 * outlive the stop. A resume clears it and the queued trials run. */
static void test_no_claim_while_stopping(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "ex6", tmpdir, NULL, 4, 0);
    fx_add_trials(db, "ex6", 2, 1);
    struct trial t;
    assert_int_equal(db_run(db, &e, "UPDATE experiment SET desired_status = 'STOPPED' WHERE id = 'ex6'", ""), 1);
    assert_int_equal(queue_claim(db, "ex6", "local", "w:1:1", 10000, &t, &e), 0);
    assert_int_equal(db_run(db, &e, "UPDATE experiment SET desired_status = NULL, status = 'STOPPING'"
                                    " WHERE id = 'ex6'", ""), 1);
    assert_int_equal(queue_claim(db, "ex6", "local", "w:1:1", 10000, &t, &e), 0);
    assert_int_equal(db_run(db, &e, "UPDATE experiment SET status = 'RUNNING' WHERE id = 'ex6'", ""), 1);
    assert_int_equal(queue_claim(db, "ex6", "local", "w:1:1", 10000, &t, &e), 1);
    trial_clear(&t);
    db_close(db);
}

static void test_adopt_expired_and_dead(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "ex2", tmpdir, NULL, 4, 0);
    fx_add_trials(db, "ex2", 3, 2);
    struct trial a, b, c;
    /* a: lease already expired; b: owner is a dead process on this host; c: alive */
    assert_int_equal(queue_claim(db, "ex2", "local", "far:1:1", -1, &a, &e), 1);
    char *dead = xasprintf("%s:%d:%d", host_name(), 999999, 1);
    assert_int_equal(queue_claim(db, "ex2", "local", dead, 60000, &b, &e), 1);
    char *me = queue_owner_id();
    assert_int_equal(queue_claim(db, "ex2", "local", me, 60000, &c, &e), 1);
    assert_true(queue_owner_dead(dead));
    assert_false(queue_owner_dead(me));
    struct trial *list;
    int n;
    assert_int_equal(queue_adopt(db, "ex2", "local", "new:1:1", 60000, &list, &n, &e), 0);
    assert_int_equal(n, 2);
    for (int i = 0; i < n; i++) {
        assert_string_equal(list[i].lease_owner, "new:1:1");
        assert_string_not_equal(list[i].id, c.id);
        trial_clear(&list[i]);
    }
    free(list);
    /* a vanished job is retried with the same parameters, then fails when out of attempts;
     * the FINAL attempt 1 sent before it vanished is not the retry's result, nor is one of
     * attempt 1 that arrives late */
    assert_int_equal(trial_mark_running(db, a.id, "new:1:1", "j", "h", NULL, now_ms(), &e), 1);
    const char *const finals[] = {
        "{\"parameter_id\":0,\"trial_job_id\":\"x\",\"type\":\"FINAL\",\"sequence\":0,\"value\":\"0.25\"}",
        "{\"parameter_id\":0,\"trial_job_id\":\"x\",\"type\":\"FINAL\",\"sequence\":1,\"value\":\"0.5\"}",
        "{\"parameter_id\":0,\"trial_job_id\":\"x\",\"type\":\"FINAL\",\"sequence\":0,\"value\":\"0.75\"}",
    };
    struct metric_in fm;
    void *fo;
    assert_int_equal(metric_parse(finals[0], strlen(finals[0]), &fm, &fo, &e), 0);
    assert_int_equal(metric_insert(db, a.id, 1, &fm, &e), 1);
    metric_owned_free(fo);
    struct trial r;
    trial_load(db, a.id, &r, &e);
    assert_true(r.has_final_metric && r.final_metric == 0.25);
    trial_clear(&r);
    assert_int_equal(trial_requeue(db, a.id, "new:1:1", "gone", &e), 1);
    trial_load(db, a.id, &r, &e);
    assert_string_equal(r.status, "WAITING");
    assert_int_equal(r.attempt, 2);
    assert_false(r.has_final_metric);
    assert_null(r.final_metric_json);
    trial_clear(&r);
    assert_int_equal(metric_parse(finals[1], strlen(finals[1]), &fm, &fo, &e), 0);
    assert_int_equal(metric_insert(db, a.id, 1, &fm, &e), 1); /* late, of attempt 1 */
    metric_owned_free(fo);
    trial_load(db, a.id, &r, &e);
    assert_false(r.has_final_metric);
    trial_clear(&r);
    assert_int_equal(metric_parse(finals[2], strlen(finals[2]), &fm, &fo, &e), 0);
    assert_int_equal(metric_insert(db, a.id, 2, &fm, &e), 1);
    metric_owned_free(fo);
    trial_load(db, a.id, &r, &e);
    assert_true(r.has_final_metric && r.final_metric == 0.75);
    trial_clear(&r);
    struct trial again;
    assert_int_equal(queue_claim(db, "ex2", "local", "new:1:1", 60000, &again, &e), 1);
    assert_string_equal(again.id, a.id);
    assert_int_equal(trial_requeue(db, a.id, "new:1:1", "gone again", &e), 1);
    trial_load(db, a.id, &r, &e);
    assert_string_equal(r.status, "FAILED");
    trial_clear(&r);
    trial_clear(&again);
    free(dead);
    free(me);
    trial_clear(&a);
    trial_clear(&b);
    trial_clear(&c);
    db_close(db);
}

static void test_kill_request(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "ex3", tmpdir, NULL, 4, 0);
    fx_add_trials(db, "ex3", 2, 1);
    /* unclaimed: ends at once */
    assert_int_equal(trial_request_kill(db, "ex30001", "USER_CANCELED", "test", &e), 1);
    struct trial r;
    trial_load(db, "ex30001", &r, &e);
    assert_string_equal(r.status, "USER_CANCELED");
    trial_clear(&r);
    /* claimed: flagged for its worker */
    struct trial t;
    assert_int_equal(queue_claim(db, "ex3", "local", "w:1:1", 60000, &t, &e), 1);
    assert_int_equal(trial_request_kill(db, t.id, "EARLY_STOPPED", "test", &e), 1);
    trial_load(db, t.id, &r, &e);
    assert_string_equal(r.status, "WAITING");
    assert_string_equal(r.kill_request, "EARLY_STOPPED");
    trial_clear(&r);
    trial_clear(&t);
    db_close(db);
}

static void test_metrics_idempotent(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "ex4", tmpdir, NULL, 4, 0);
    fx_add_trials(db, "ex4", 1, 1);
    const char *recs[] = {
        "{\"parameter_id\":0,\"trial_job_id\":\"x\",\"type\":\"PERIODICAL\",\"sequence\":0,\"value\":\"0.5\"}",
        "{\"parameter_id\":0,\"trial_job_id\":\"x\",\"type\":\"PERIODICAL\",\"sequence\":1,\"value\":\"{\\\"default\\\": 0.6, \\\"loss\\\": 1}\"}",
        "{\"parameter_id\":0,\"trial_job_id\":\"x\",\"type\":\"FINAL\",\"sequence\":0,\"value\":\"0.9\"}",
        "{\"parameter_id\":null,\"trial_job_id\":\"x\",\"type\":\"PERIODICAL\",\"sequence\":0,\"value\":\"NaN\"}",
    };
    for (int round = 0; round < 3; round++)
        for (size_t i = 0; i < 4; i++) {
            struct metric_in m;
            void *owned;
            assert_int_equal(metric_parse(recs[i], strlen(recs[i]), &m, &owned, &e), 0);
            assert_int_equal(metric_insert(db, "ex40000", 1, &m, &e), round == 0 ? 1 : 0);
            metric_owned_free(owned);
        }
    int64_t n;
    db_int(db, &e, &n, "SELECT count(*) FROM metric WHERE trial_id = 'ex40000'", "");
    assert_int_equal(n, 4);
    struct trial r;
    trial_load(db, "ex40000", &r, &e);
    assert_true(r.has_final_metric);
    assert_true(r.final_metric > 0.89 && r.final_metric < 0.91);
    trial_clear(&r);
    double d = 0;
    sqlite3_stmt *st = db_query(db, &e, "SELECT default_value FROM metric WHERE sequence = 1", "");
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    d = sqlite3_column_double(st, 0);
    sqlite3_reset(st);
    assert_true(d > 0.59 && d < 0.61);
    /* bad records are refused with a reason */
    struct metric_in m;
    void *owned;
    assert_int_equal(metric_parse("{\"type\":\"X\",\"value\":\"1\"}", 25, &m, &owned, &e), -1);
    assert_non_null(strstr(e.msg, "type"));
    assert_int_equal(metric_parse("not json", 8, &m, &owned, &e), -1);
    /* the reason shows the record escaped (it goes to the log) and only its framed bytes */
    const char *forged = "{\"type\":\"X\n[2026-01-01] ERROR forged\x1b[31m\"}\nME000010NEXT";
    assert_int_equal(metric_parse(forged, strlen(forged) - 12, &m, &owned, &e), -1);
    assert_null(strchr(e.msg, '\n'));
    assert_null(strchr(e.msg, '\x1b'));
    assert_non_null(strstr(e.msg, "X\\n[2026-01-01] ERROR forged\\x1b[31m\"}\\n"));
    assert_null(strstr(e.msg, "NEXT"));
    /* a sequence that is no integer in range is refused, never cast */
    const char *huge = "{\"type\":\"PERIODICAL\",\"sequence\":1e300,\"value\":\"1\"}";
    assert_int_equal(metric_parse(huge, strlen(huge), &m, &owned, &e), -1);
    assert_non_null(strstr(e.msg, "sequence"));
    const char *frac = "{\"type\":\"PERIODICAL\",\"sequence\":1.5,\"value\":\"1\",\"parameter_id\":1e300}";
    assert_int_equal(metric_parse(frac, strlen(frac), &m, &owned, &e), -1);
    db_close(db);
}

/* Several processes claim from one file at once: every trial exactly once. */
static void test_concurrent_claims(void **s)
{
    (void)s;
    char *p = fx_db_path(tmpdir);
    struct db *db;
    struct errbuf e;
    assert_int_equal(db_open(p, &db, &e), 0);
    fx_add_experiment(db, "ex5", tmpdir, NULL, 4, 0);
    const int N = 400, P = 4;
    fx_add_trials(db, "ex5", N, 1);
    db_close(db);
    pid_t pids[4];
    for (int k = 0; k < P; k++) {
        pids[k] = fork();
        if (pids[k] == 0) {
            struct db *d;
            struct errbuf ee;
            if (db_open(p, &d, &ee) < 0)
                _exit(2);
            char owner[32];
            snprintf(owner, sizeof owner, "w:%d:1", k);
            struct trial t;
            int rc;
            while ((rc = queue_claim(d, "ex5", "local", owner, 60000, &t, &ee)) == 1) {
                if (trial_mark_running(d, t.id, owner, "j", "h", NULL, now_ms(), &ee) != 1)
                    _exit(3);
                if (trial_finish(d, t.id, owner, "SUCCEEDED", 1, 0, now_ms(), NULL, &ee) != 1)
                    _exit(4);
                trial_clear(&t);
            }
            db_close(d);
            _exit(rc < 0 ? 5 : 0);
        }
    }
    for (int k = 0; k < P; k++) {
        int st;
        assert_int_equal(waitpid(pids[k], &st, 0), pids[k]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    assert_int_equal(db_open(p, &db, &e), 0);
    int64_t n;
    db_int(db, &e, &n, "SELECT count(*) FROM trial WHERE status = 'SUCCEEDED'", "");
    assert_int_equal(n, N);
    /* every trial was started exactly once, by one of the processes */
    db_int(db, &e, &n, "SELECT count(*) FROM (SELECT trial_id FROM event WHERE to_state = 'RUNNING'"
                       " GROUP BY trial_id HAVING count(*) != 1)", "");
    assert_int_equal(n, 0);
    db_int(db, &e, &n, "SELECT count(*) FROM event WHERE to_state = 'RUNNING'", "");
    assert_int_equal(n, N);
    db_close(db);
    free(p);
}

int main(void)
{
    char tmpl[] = "/tmp/trialq-test-queue-XXXXXX";
    tmpdir = mkdtemp(tmpl);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrate_from_older),
        cmocka_unit_test(test_claim_lease_finish),
        cmocka_unit_test(test_no_claim_while_stopping),
        cmocka_unit_test(test_adopt_expired_and_dead),
        cmocka_unit_test(test_kill_request),
        cmocka_unit_test(test_metrics_idempotent),
        cmocka_unit_test(test_concurrent_claims),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_rf(tmpdir);
    return rc;
}
