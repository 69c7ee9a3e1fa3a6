/* test_workers_loop.c: the worker loop's transitions (workers/worker.c) with a fake
 * platform_ops on a real database file: what each submit result does to the trial row,
 * polls that report an end or a vanished job, a failing poll's back-off, a kill retried
 * until the platform confirms it, the platform's poll interval per trial, adoption of
 * the trials of a dead owner, the batched poll (ops->poll_all: one listing per
 * interval, one back-off for all trials when it fails) and the submission rate limit.
 * The loop is driven with worker_step at chosen times; no process is started. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/trialenv.h"
#include "queue/queue.h"
#include "tests/unit/db_fixture.h"
#include "workers/worker.h"

/* ---------------- the fake platform ---------------- */

/* What the fake does for one trial (by the trial id's last digit), and what it saw. */
struct fake_job {
    int submit;        /* an enum submit_result, or -1 */
    int poll_fail;     /* polls that fail before one succeeds */
    int finished, vanished, exit_code, stop_known, stopped;
    const char *waiting; /* queued on the platform with this reason (queued_start) */
    int kill_fail;     /* kills that fail before one is confirmed */
    int submits, polls, kills;
    int64_t last_poll; /* mono ms the loop passed (the fake reads the clock the test set) */
    int64_t submitted; /* ... at its last submit */
};

static struct fake_job jobs[10];
static int64_t clock_ms; /* the time the test passes to worker_step */
/* The batched poll (fake_list_ops): listings made, listings to fail, the time of the
 * last one that answered */
static int lists, list_fail, list_refuse;
static int64_t last_list = -1;

static struct fake_job *job_of(const struct trial *t)
{
    size_t n = strlen(t->id);
    return &jobs[(t->id[n - 1] - '0') % 10];
}

static int fake_init(struct worker *w, struct errbuf *e)
{
    (void)e;
    w->platform = jobs;
    return 0;
}

static int fake_submit(struct worker *w, struct trial *t, char **job_id, char **trial_dir, struct errbuf *e)
{
    (void)w;
    struct fake_job *j = job_of(t);
    j->submits++;
    j->submitted = clock_ms;
    if (j->submit == -1)
        return errf(e, "the fake refuses trial %s", t->id);
    if (j->submit == SUBMIT_FAULT) {
        errf(e, "fake disk full");
        return SUBMIT_FAULT;
    }
    *job_id = xasprintf("fake:%s:%d", t->id, t->attempt);
    *trial_dir = xasprintf("/nonexistent/%s", t->id);
    return j->submit;
}

static int fake_poll(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    (void)w;
    struct fake_job *j = job_of(t);
    j->polls++;
    j->last_poll = clock_ms;
    memset(js, 0, sizeof *js);
    if (j->poll_fail > 0) {
        j->poll_fail--;
        return errf(e, "the fake service does not answer");
    }
    js->finished = j->finished;
    js->vanished = j->vanished;
    js->has_exit = j->finished;
    js->exit_code = j->exit_code;
    js->stop_known = j->stop_known;
    js->stopped = j->stopped;
    js->end_time = now_ms();
    if (j->waiting) {
        js->waiting = 1;
        snprintf(js->why, sizeof js->why, "%s", j->waiting);
    }
    return 0;
}

static int fake_kill(struct worker *w, struct trial *t, struct errbuf *e)
{
    (void)w;
    struct fake_job *j = job_of(t);
    j->kills++;
    assert_non_null(t->kill_request); /* the loop says why */
    if (j->kill_fail > 0) {
        j->kill_fail--;
        return errf(e, "the fake service refused the kill");
    }
    return 0;
}

static int fake_collect(struct worker *w, struct trial *t, int at_end, struct errbuf *e)
{
    (void)w, (void)t, (void)at_end, (void)e;
    return 0;
}

static int fake_pending(struct worker *w, struct trial *t)
{
    (void)w, (void)t;
    return 0;
}

static void fake_destroy(struct worker *w)
{
    w->platform = NULL;
}

static struct platform_ops fake_ops = {
    .name = "local", /* the platform of the fixture's rows */
    .init = fake_init,
    .submit = fake_submit,
    .poll = fake_poll,
    .kill = fake_kill,
    .collect = fake_collect,
    .pending = fake_pending,
    .destroy = fake_destroy,
    .poll_ms = 1000,
};

/* The batched poll: it answers from the jobs' table as poll does; a poll must follow a
 * listing of the same pass, begun after the job's submit. */
static int fake_poll_all(struct worker *w, struct errbuf *e)
{
    (void)w;
    lists++;
    if (list_refuse) {
        errf(e, "the fake service may not list");
        return POLL_ALL_REFUSED;
    }
    if (list_fail > 0) {
        list_fail--;
        return errf(e, "the fake service does not list");
    }
    last_list = clock_ms;
    return 0;
}

static int fake_poll_listed(struct worker *w, struct trial *t, struct job_state *js, struct errbuf *e)
{
    assert_int_equal(last_list, clock_ms);        /* a listing of this pass */
    assert_true(last_list >= job_of(t)->submitted); /* ... that began after the job's submit */
    return fake_poll(w, t, js, e);
}

/* fake_ops with the batched poll */
static struct platform_ops fake_list_ops(void)
{
    struct platform_ops ops = fake_ops;
    ops.poll = fake_poll_listed;
    ops.poll_all = fake_poll_all;
    return ops;
}

/* ---------------- fixtures ---------------- */

static char *tmpdir;
static int nexp;

/* A fresh database under a home of its own with one experiment of n WAITING trials
 * "<exp>0000" .. on the fake platform (named "local": the fixture's platform); the worker
 * opened on it. */
static void setup_worker_ops(struct worker *w, const struct platform_ops *ops, int n, int concurrency,
                             int max_attempts)
{
    char *home = xasprintf("%s/h%d", tmpdir, nexp);
    char *id = xasprintf("exp%d", nexp++);
    assert_int_equal(mkdir_p(home, 0755), 0);
    char *dbpath = trialq_db_path(home);
    struct db *db;
    struct errbuf e;
    assert_int_equal(db_open(dbpath, &db, &e), 0);
    fx_add_experiment(db, id, home, "{\"trainingService\": {\"platform\": \"local\"}}", concurrency, 0);
    fx_add_trials(db, id, n, max_attempts);
    db_close(db);
    free(dbpath);
    memset(jobs, 0, sizeof jobs);
    lists = list_fail = list_refuse = 0;
    last_list = -1;
    assert_int_equal(worker_open(w, ops, home, id, &e), 0);
    assert_int_equal(ops->init(w, &e), 0);
    free(home);
    free(id);
}

static void setup_worker(struct worker *w, int n, int concurrency, int max_attempts)
{
    setup_worker_ops(w, &fake_ops, n, concurrency, max_attempts);
}

/* One SQL query of trial i's row (sql: "SELECT ... FROM trial WHERE id = ?"). */
static char *trial_text(struct worker *w, int i, const char *sql)
{
    char tid[32], *st = NULL;
    struct errbuf e;
    snprintf(tid, sizeof tid, "%s%04d", w->exp_id, i);
    assert_int_equal(db_text(w->db, &e, &st, sql, "s", tid), 1);
    return st;
}

static char *status_of(struct worker *w, int i)
{
    return trial_text(w, i, "SELECT status || ' ' || attempt || ' ' || coalesce(message, '')"
                            " FROM trial WHERE id = ?");
}

static void assert_status(struct worker *w, int i, const char *want)
{
    char *st = status_of(w, i);
    if (strncmp(st, want, strlen(want)) != 0)
        fail_msg("trial %d: '%s', want '%s...'", i, st, want);
    free(st);
}

static struct worker_trial *held(struct worker *w, int i)
{
    char tid[32];
    snprintf(tid, sizeof tid, "%s%04d", w->exp_id, i);
    for (int k = 0; k < w->ntrials; k++)
        if (strcmp(w->trials[k].t.id, tid) == 0)
            return &w->trials[k];
    return NULL;
}

/* The first pass; returns the time after it, from which the tests step. */
static int64_t start(struct worker *w)
{
    clock_ms = mono_ms();
    worker_start(w, clock_ms);
    return mono_ms();
}

static void step_at(struct worker *w, int64_t t)
{
    clock_ms = t;
    worker_step(w, t);
}

/* ---------------- tests ---------------- */

static void test_backoff(void **s)
{
    (void)s;
    assert_int_equal(worker_backoff_ms(250, 1), 500);
    assert_int_equal(worker_backoff_ms(250, 2), 1000);
    assert_int_equal(worker_backoff_ms(250, 3), 2000);
    assert_int_equal(worker_backoff_ms(250, 5), 8000);
    assert_int_equal(worker_backoff_ms(250, 6), 10000);   /* the cap */
    assert_int_equal(worker_backoff_ms(250, 1000), 10000);
    assert_int_equal(worker_backoff_ms(1000, 1), 1000);   /* never below the poll interval */
    assert_int_equal(worker_backoff_ms(1000, 3), 2000);
}

/* Each submit result: NEW, ATTACHED and FINISHED and VANISHED are RUNNING (watched), a
 * refused one FAILED with the platform's reason, a FAULT stays WAITING, ours, and blocks
 * further claims until its retry succeeds. */
static void test_submit_results(void **s)
{
    (void)s;
    struct worker w;
    setup_worker(&w, 6, 6, 1);
    jobs[0].submit = SUBMIT_NEW;
    jobs[1].submit = SUBMIT_ATTACHED;
    jobs[2].submit = SUBMIT_FINISHED;
    jobs[2].finished = 1;
    jobs[3].submit = SUBMIT_VANISHED;
    jobs[3].vanished = 1;
    jobs[4].submit = -1;
    jobs[5].submit = SUBMIT_FAULT;
    int64_t t0 = start(&w);
    for (int i = 0; i < 6; i++)
        assert_int_equal(jobs[i].submits, 1);
    assert_status(&w, 0, "RUNNING 1");
    assert_status(&w, 1, "RUNNING 1");
    assert_status(&w, 4, "FAILED 1 the fake refuses trial");
    assert_status(&w, 5, "WAITING 1");
    assert_null(held(&w, 4));
    assert_non_null(held(&w, 5));
    assert_true(held(&w, 5)->submit_pending);
    assert_int_equal(w.ntrials, 5);

    /* the first polls record the finished one and retry (here: fail) the vanished one */
    step_at(&w, t0 + 10);
    assert_status(&w, 2, "SUCCEEDED 1");
    assert_status(&w, 3, "FAILED 1 its job vanished");
    assert_status(&w, 0, "RUNNING 1");
    assert_int_equal(jobs[0].polls, 1);
    assert_int_equal(jobs[5].submits, 1); /* not before FAULT_RETRY_MS */

    /* the full disk is gone: the retry starts the trial */
    jobs[5].submit = SUBMIT_NEW;
    step_at(&w, t0 + 1100);
    assert_int_equal(jobs[5].submits, 2);
    assert_status(&w, 5, "RUNNING 1");
    assert_false(held(&w, 5)->submit_pending);

    /* ends: exit 0 and exit 3 */
    jobs[0].finished = 1;
    jobs[1].finished = 1;
    jobs[1].exit_code = 3;
    step_at(&w, t0 + 5000);
    assert_status(&w, 0, "SUCCEEDED 1");
    assert_status(&w, 1, "FAILED 1 exit code 3");
    assert_int_equal(w.ntrials, 1);
    worker_close(&w);
}

/* A vanished job with attempts left goes back to WAITING as the next attempt, and is
 * claimed and submitted again. */
static void test_vanished_retried(void **s)
{
    (void)s;
    struct worker w;
    setup_worker(&w, 1, 1, 3);
    jobs[0].submit = SUBMIT_NEW;
    int64_t t0 = start(&w);
    jobs[0].vanished = 1;
    step_at(&w, t0 + 10);
    assert_status(&w, 0, "WAITING 2 its job vanished; retry as attempt 2");
    assert_int_equal(w.ntrials, 0);
    assert_true(w.wake); /* a slot is free: the next pass claims at once */
    jobs[0].vanished = 0;
    step_at(&w, t0 + 20);
    assert_int_equal(jobs[0].submits, 2);
    assert_status(&w, 0, "RUNNING 2");
    worker_close(&w);
}

static char *waiting_reason_of(struct worker *w, int i)
{
    return trial_text(w, i, "SELECT coalesce(waiting_reason, '') || '|' || coalesce(job_id, '')"
                            " FROM trial WHERE id = ?");
}

/* queued_start: a submitted job that waits in the platform's queue keeps its trial
 * WAITING (job recorded, the platform's reason as waiting_reason, held and counted
 * against trialConcurrency) until a poll says it runs. */
static void test_queued_start(void **s)
{
    (void)s;
    struct worker w;
    fake_ops.queued_start = 1;
    setup_worker(&w, 2, 1, 1);
    jobs[0].submit = SUBMIT_NEW;
    jobs[0].waiting = "Slurm: Resources";
    int64_t t0 = start(&w);
    assert_status(&w, 0, "WAITING 1");
    char *r = waiting_reason_of(&w, 0);
    assert_non_null(strstr(r, "|fake:")); /* its job is recorded while it waits */
    free(r);
    step_at(&w, t0 + 10);
    assert_status(&w, 0, "WAITING 1");
    r = waiting_reason_of(&w, 0);
    assert_non_null(strstr(r, "Slurm: Resources|fake:"));
    free(r);
    assert_int_equal(w.ntrials, 1); /* concurrency 1: the second is not taken */
    assert_status(&w, 1, "WAITING 1");
    jobs[0].waiting = NULL; /* it starts */
    step_at(&w, t0 + 1100);
    assert_status(&w, 0, "RUNNING 1");
    jobs[0].finished = 1;
    step_at(&w, t0 + 2200);
    assert_status(&w, 0, "SUCCEEDED 1");
    fake_ops.queued_start = 0;
    worker_close(&w);
}

/* A poll that fails waits 500 ms, 1 s, 2 s (never less than the 1 s interval) ...; a
 * success resets it; the interval is the platform's poll_ms. */
static void test_poll_backoff(void **s)
{
    (void)s;
    struct worker w;
    setup_worker(&w, 1, 1, 1);
    jobs[0].submit = SUBMIT_NEW;
    int64_t t0 = start(&w);
    assert_int_equal(w.poll_ms, 1000);
    jobs[0].poll_fail = 3;
    step_at(&w, t0); /* failure 1: next in 1 s (the interval) */
    assert_int_equal(jobs[0].polls, 1);
    assert_int_equal(held(&w, 0)->poll_failures, 1);
    assert_int_equal(held(&w, 0)->next_poll_ms, t0 + 1000);
    step_at(&w, t0 + 999);
    assert_int_equal(jobs[0].polls, 1);
    step_at(&w, t0 + 1000); /* failure 2: 1 s */
    assert_int_equal(jobs[0].polls, 2);
    assert_int_equal(held(&w, 0)->next_poll_ms, t0 + 2000);
    step_at(&w, t0 + 2000); /* failure 3: 2 s */
    assert_int_equal(jobs[0].polls, 3);
    assert_int_equal(held(&w, 0)->next_poll_ms, t0 + 4000);
    step_at(&w, t0 + 3999);
    assert_int_equal(jobs[0].polls, 3);
    step_at(&w, t0 + 4000); /* answers: back to the interval */
    assert_int_equal(jobs[0].polls, 4);
    assert_int_equal(held(&w, 0)->poll_failures, 0);
    assert_int_equal(held(&w, 0)->next_poll_ms, t0 + 5000);
    assert_true(worker_next_due(&w) <= t0 + 5000);
    /* a poll that keeps failing is capped at 10 s */
    jobs[0].poll_fail = 100;
    int64_t t = t0 + 5000;
    for (int i = 0; i < 8; i++) {
        step_at(&w, t);
        t = held(&w, 0)->next_poll_ms;
    }
    assert_int_equal(held(&w, 0)->poll_failures, 8);
    step_at(&w, t);
    assert_int_equal(held(&w, 0)->next_poll_ms, t + 10000);
    assert_status(&w, 0, "RUNNING 1"); /* a service that does not answer fails nothing */
    worker_close(&w);
}

/* Each held trial is polled on its own schedule. */
static void test_poll_interval_per_trial(void **s)
{
    (void)s;
    struct worker w;
    setup_worker(&w, 2, 2, 1);
    jobs[0].submit = jobs[1].submit = SUBMIT_NEW;
    int64_t t0 = start(&w);
    jobs[1].poll_fail = 3;
    step_at(&w, t0);
    assert_int_equal(jobs[0].polls, 1);
    assert_int_equal(jobs[1].polls, 1);
    int polls0 = 0;
    for (int64_t t = t0 + 100; t <= t0 + 3000; t += 100) {
        step_at(&w, t);
        polls0 = jobs[0].polls;
    }
    assert_int_equal(polls0, 4); /* t0, +1 s, +2 s, +3 s */
    /* failed at t0, +1 s, +2 s: its next poll waits 2 s */
    assert_int_equal(jobs[1].polls, 3);
    assert_int_equal(jobs[1].last_poll, t0 + 2000);
    worker_close(&w);
}

/* The batched poll: one listing per interval however many trials run, every trial
 * polled right after it (from it) and never between two; a job that ends is seen at
 * the next listing. */
static void test_poll_all_once_per_interval(void **s)
{
    (void)s;
    struct worker w;
    struct platform_ops ops = fake_list_ops();
    setup_worker_ops(&w, &ops, 5, 5, 1);
    for (int i = 0; i < 5; i++)
        jobs[i].submit = SUBMIT_NEW;
    int64_t t0 = start(&w);
    for (int64_t t = t0; t <= t0 + 3000; t += 100) {
        if (t == t0 + 1500)
            jobs[3].finished = 1;
        step_at(&w, t);
    }
    assert_int_equal(lists, 4); /* t0, +1 s, +2 s, +3 s */
    for (int i = 0; i < 5; i++) {
        assert_int_equal(jobs[i].polls, i == 3 ? 3 : 4);
        assert_int_equal(jobs[i].last_poll, i == 3 ? t0 + 2000 : t0 + 3000);
    }
    assert_status(&w, 3, "SUCCEEDED 1");
    assert_status(&w, 0, "RUNNING 1");
    assert_int_equal(w.ntrials, 4);
    assert_true(worker_next_due(&w) <= t0 + 4000);
    worker_close(&w);
}

/* A listing that fails polls no trial (no storm of single polls): the next listing
 * waits the back-off (1 s, 1 s, 2 s, ... never below the interval), the same for every
 * trial; one that answers resets it and polls them all. */
static void test_poll_all_failure_backoff(void **s)
{
    (void)s;
    struct worker w;
    struct platform_ops ops = fake_list_ops();
    setup_worker_ops(&w, &ops, 3, 3, 1);
    for (int i = 0; i < 3; i++)
        jobs[i].submit = SUBMIT_NEW;
    int64_t t0 = start(&w);
    list_fail = 3;
    for (int64_t t = t0; t < t0 + 4000; t += 100)
        step_at(&w, t);
    assert_int_equal(lists, 3); /* t0 (failure 1), +1 s (2), +2 s (3): the next at +4 s */
    assert_int_equal(w.list_failures, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(jobs[i].polls, 0);
        assert_int_equal(held(&w, i)->next_poll_ms, t0 + 4000);
        assert_int_equal(held(&w, i)->poll_failures, 0); /* not a failure of the trial */
    }
    step_at(&w, t0 + 4000);
    assert_int_equal(lists, 4);
    assert_int_equal(w.list_failures, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(jobs[i].polls, 1);
    /* a listing that keeps failing waits 4 s, then at most 5 s */
    list_fail = 100;
    int64_t t = t0 + 5000;
    for (int i = 0; i < 6; i++) {
        step_at(&w, t);
        t = w.next.list;
    }
    assert_int_equal(w.list_failures, 6);
    assert_int_equal(held(&w, 0)->next_poll_ms, t);
    step_at(&w, t);
    assert_int_equal(w.next.list, t + 5000);
    assert_int_equal(jobs[0].polls, 1);
    list_fail = 0;
    assert_status(&w, 0, "RUNNING 1"); /* a service that does not list fails nothing */
    worker_close(&w);
}

/* A service that refuses listings for good: the loop stops listing and polls each job
 * on its own, every interval, as without poll_all. */
static void test_poll_all_refused(void **s)
{
    (void)s;
    struct worker w;
    struct platform_ops ops = fake_list_ops();
    ops.poll = fake_poll; /* polls come without a listing now */
    setup_worker_ops(&w, &ops, 2, 2, 1);
    jobs[0].submit = jobs[1].submit = SUBMIT_NEW;
    int64_t t0 = start(&w);
    list_refuse = 1;
    for (int64_t t = t0; t <= t0 + 2000; t += 100)
        step_at(&w, t);
    assert_int_equal(lists, 1);
    assert_int_equal(w.list_refused, 1);
    assert_int_equal(jobs[0].polls, 3); /* t0, +1 s, +2 s */
    assert_int_equal(jobs[1].polls, 3);
    worker_close(&w);
}

/* A trial started between two listings is polled first after the next one (which
 * began after its job was created), not from the listing before it. */
static void test_poll_all_new_job_waits(void **s)
{
    (void)s;
    struct worker w;
    struct platform_ops ops = fake_list_ops();
    setup_worker_ops(&w, &ops, 2, 1, 1);
    jobs[0].submit = jobs[1].submit = SUBMIT_NEW;
    jobs[0].finished = 1;
    int64_t t0 = start(&w);
    step_at(&w, t0); /* listing 1: trial 0 ended */
    assert_int_equal(lists, 1);
    assert_status(&w, 0, "SUCCEEDED 1");
    step_at(&w, t0 + 500); /* the claim pass starts trial 1 */
    assert_int_equal(jobs[1].submits, 1);
    assert_int_equal(jobs[1].polls, 0);
    assert_int_equal(held(&w, 1)->next_poll_ms, t0 + 1000);
    step_at(&w, t0 + 999);
    assert_int_equal(jobs[1].polls, 0);
    step_at(&w, t0 + 1000);
    assert_int_equal(lists, 2);
    assert_int_equal(jobs[1].polls, 1);
    worker_close(&w);
}

/* Submissions are rate-limited: one second's worth at once, then submit_rate per
 * second over the claim passes; 0 is no limit. */
static void test_submit_rate(void **s)
{
    (void)s;
    struct worker w;
    setup_worker(&w, 1, 1, 1);
    assert_true(w.submit_rate == 0); /* the fake's default: no limit */
    worker_close(&w);
    setenv("TRIALQ_SUBMIT_RATE", "4", 1);
    setup_worker(&w, 30, 30, 1);
    unsetenv("TRIALQ_SUBMIT_RATE");
    assert_true(w.submit_rate == 4);
    for (int i = 0; i < 10; i++)
        jobs[i].submit = SUBMIT_NEW;
    int64_t t0 = start(&w);
    assert_int_equal(w.ntrials, 4);
    step_at(&w, t0 + 500);
    assert_int_equal(w.ntrials, 6);
    step_at(&w, t0 + 1000);
    assert_int_equal(w.ntrials, 8);
    for (int64_t t = t0 + 1500; t <= t0 + 5000; t += 500)
        step_at(&w, t);
    assert_int_equal(w.ntrials, 24); /* 4 + 4 per second over 5 s */
    w.submit_rate = 0;
    step_at(&w, t0 + 5500);
    assert_int_equal(w.ntrials, 30);
    worker_close(&w);
}

/* One running trial (trial 0) with a kill request of kind; its kills fail kill_fail
 * times. Returns the time after the first pass. */
static int64_t start_one_to_kill(struct worker *w, const char *kind, int kill_fail)
{
    setup_worker(w, 1, 1, 1);
    jobs[0].submit = SUBMIT_NEW;
    int64_t t0 = start(w);
    struct errbuf e;
    char tid[32];
    snprintf(tid, sizeof tid, "%s0000", w->exp_id);
    assert_int_equal(trial_request_kill(w->db, tid, kind, "test", &e), 1);
    jobs[0].kill_fail = kill_fail;
    return t0;
}

/* A kill the platform did not confirm is sent again after a back-off, until confirmed;
 * then never again, and the job's end carries the request's status. */
static void test_kill_retried_until_confirmed(void **s)
{
    (void)s;
    struct worker w;
    int64_t t0 = start_one_to_kill(&w, "USER_CANCELED", 2);
    step_at(&w, t0 + 1); /* the request is seen and sent: fails */
    assert_int_equal(jobs[0].kills, 1);
    assert_true(held(&w, 0)->kill_wanted);
    assert_false(held(&w, 0)->kill_sent);
    assert_string_equal(held(&w, 0)->t.kill_request, "USER_CANCELED");
    assert_int_equal(held(&w, 0)->next_kill_ms, t0 + 1 + 1000);
    assert_true(worker_next_due(&w) <= t0 + 1001);
    step_at(&w, t0 + 500);
    assert_int_equal(jobs[0].kills, 1); /* not before its back-off */
    step_at(&w, t0 + 1001); /* fails again: 1 s */
    assert_int_equal(jobs[0].kills, 2);
    assert_int_equal(held(&w, 0)->kill_failures, 2);
    step_at(&w, t0 + 2001); /* confirmed */
    assert_int_equal(jobs[0].kills, 3);
    assert_true(held(&w, 0)->kill_sent);
    for (int64_t t = t0 + 2100; t < t0 + 20000; t += 700)
        step_at(&w, t);
    assert_int_equal(jobs[0].kills, 3); /* never again */
    assert_status(&w, 0, "RUNNING 1");
    jobs[0].finished = 1;
    jobs[0].exit_code = 143;
    step_at(&w, t0 + 30000);
    assert_status(&w, 0, "USER_CANCELED 1");
    worker_close(&w);
}

/* A kill that never gets through ends when the job is seen ended. */
static void test_kill_failing_job_ends(void **s)
{
    (void)s;
    struct worker w;
    int64_t t0 = start_one_to_kill(&w, "EARLY_STOPPED", 1000);
    int64_t t = t0 + 1;
    for (int i = 0; i < 5; i++, t += 10000)
        step_at(&w, t);
    assert_int_equal(jobs[0].kills, 5);
    /* it ended by itself, stop known not to have reached it: its own end */
    jobs[0].finished = 1;
    jobs[0].stop_known = 1;
    step_at(&w, t);
    assert_status(&w, 0, "SUCCEEDED 1");
    assert_int_equal(w.ntrials, 0);
    step_at(&w, t + 20000);
    assert_int_equal(jobs[0].kills, 6); /* the pass that saw the end sent its due kill first */
    worker_close(&w);
}

/* An end without a kill request in the database: the experiment's stop that nnictl stop
 * sent itself (the database refused it, a full disk) is USER_CANCELED, as that stop would
 * have recorded it (a resume: issue 32); a plain stop that reached it (someone else's
 * signal) keeps the job's own end. */
static void test_experiment_stop_without_request(void **s)
{
    (void)s;
    struct worker w;
    setup_worker(&w, 2, 2, 1);
    jobs[0].submit = jobs[1].submit = SUBMIT_NEW;
    int64_t t0 = start(&w);
    for (int i = 0; i < 2; i++) {
        jobs[i].finished = jobs[i].stop_known = 1;
        jobs[i].exit_code = 130;
    }
    jobs[0].stopped = JOB_STOPPED_EXPERIMENT;
    jobs[1].stopped = 1;
    step_at(&w, t0 + 10);
    assert_status(&w, 0, "USER_CANCELED 1");
    assert_status(&w, 1, "FAILED 1 exit code 130");
    worker_close(&w);
}

/* The trials of a dead owner are adopted: a running one is polled (not submitted), a
 * claimed one not yet started is submitted (idempotent: re-attached); leases renew. */
static void test_adopt_dead_owner(void **s)
{
    (void)s;
    struct worker w;
    setup_worker(&w, 3, 3, 1);
    struct errbuf e;
    /* this host, a pid that is not that process: dead; and another host's lease expired */
    char *dead = xasprintf("%s:%d:1", host_name(), (int)getpid());
    char t0id[32], t1id[32];
    snprintf(t0id, sizeof t0id, "%s0000", w.exp_id);
    snprintf(t1id, sizeof t1id, "%s0001", w.exp_id);
    assert_int_equal(db_run(w.db, &e, "UPDATE trial SET status = 'RUNNING', lease_owner = ?, lease_expires = ?,"
                                      " job_id = 'fake:old' WHERE id = ?", "sis", dead, now_ms() + 60000, t0id), 1);
    assert_int_equal(db_run(w.db, &e, "UPDATE trial SET lease_owner = 'elsewhere:1:1', lease_expires = ?"
                                      " WHERE id = ?", "is", now_ms() - 1, t1id), 1);
    free(dead);
    jobs[0].submit = jobs[1].submit = jobs[2].submit = SUBMIT_ATTACHED;
    int64_t t0 = start(&w);
    assert_int_equal(w.ntrials, 3);
    assert_int_equal(jobs[0].submits, 0); /* running: only polled */
    assert_int_equal(jobs[1].submits, 1); /* claimed, not started: submitted again */
    assert_int_equal(jobs[2].submits, 1); /* the free one: claimed */
    step_at(&w, t0 + 1);
    assert_int_equal(jobs[0].polls, 1);
    int64_t owned = 0;
    assert_int_equal(db_int(w.db, &e, &owned, "SELECT count(*) FROM trial WHERE lease_owner = ?", "s", w.owner), 1);
    assert_int_equal(owned, 3);
    /* the lease is renewed every lease_ms / 3 */
    assert_int_equal(db_run(w.db, &e, "UPDATE trial SET lease_expires = 1 WHERE id = ?", "s", t0id), 1);
    step_at(&w, t0 + w.lease_ms / 3 + 1);
    int64_t exp = 0;
    assert_int_equal(db_int(w.db, &e, &exp, "SELECT lease_expires FROM trial WHERE id = ?", "s", t0id), 1);
    assert_true(exp > now_ms());
    worker_close(&w);
}

/* A deleted experiment stops the worker at its next status check. */
static void test_experiment_gone(void **s)
{
    (void)s;
    struct worker w;
    setup_worker(&w, 0, 1, 1);
    int64_t t0 = start(&w);
    step_at(&w, t0 + 100);
    assert_false(w.stop);
    struct errbuf e;
    assert_int_equal(db_run(w.db, &e, "DELETE FROM experiment WHERE id = ?", "s", w.exp_id), 1);
    step_at(&w, t0 + 5000);
    assert_true(w.stop);
    worker_close(&w);
}

/* NNI's variables of a trial, and its GPUs: claimed ones, none with trialGpuNumber 0,
 * inherited without trialGpuNumber. */
static void test_trial_env(void **s)
{
    (void)s;
    struct worker w;
    setup_worker(&w, 0, 1, 1);
    struct trial t = {0};
    t.id = "Ab3dE";
    t.experiment_id = w.exp_id;
    t.sequence = 7;
    struct trial_env te;
    trial_env_init(&te);
    worker_trial_env(&w, &t, "/sys", "/out", "/code", &te);
    struct strbuf sb;
    sb_init(&sb);
    trial_env_export_lines(&te, &sb);
    char *want = xasprintf("export NNI_PLATFORM=local\nexport NNI_EXP_ID='%s'\nexport NNI_TRIAL_JOB_ID='Ab3dE'\n"
                           "export NNI_TRIAL_SEQ_ID=7\nexport NNI_SYS_DIR='/sys'\nexport NNI_OUTPUT_DIR='/out'\n"
                           "export NNI_CODE_DIR='/code'\nexport MULTI_PHASE=false\n", w.exp_id);
    assert_string_equal(sb.buf, want);
    free(want);
    sb_free(&sb);
    assert_null(trial_env_get(&te, "CUDA_VISIBLE_DEVICES"));
    t.gpu_indices = "0,2";
    worker_trial_env(&w, &t, "/sys", "/out", "/code", &te);
    assert_string_equal(trial_env_get(&te, "CUDA_VISIBLE_DEVICES"), "0,2");
    t.gpu_indices = NULL;
    cJSON_AddNumberToObject(cJSON_GetObjectItemCaseSensitive(w.config, "trainingService"), "trialGpuNumber", 0);
    worker_trial_env(&w, &t, "/sys", "/out", "/code", &te);
    assert_string_equal(trial_env_get(&te, "CUDA_VISIBLE_DEVICES"), "");
    trial_env_free(&te);
    worker_close(&w);
}

/* The platforms of an experiment: its one platform, or every entry of a hybrid list (no
 * cap: 40 entries give 40 names; entries without a platform are skipped). */
static void test_platform_list(void **st)
{
    (void)st;
    int n = -1;
    char **p = platform_list_of("remote", "{\"trainingService\": {\"platform\": \"remote\"}}", &n);
    assert_int_equal(n, 1);
    assert_string_equal(p[0], "remote");
    assert_null(p[1]);
    free(p[0]);
    free(p);
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "{\"trainingService\": [{\"x\": 1}");
    for (int i = 0; i < 40; i++)
        sb_printf(&sb, ", {\"platform\": \"p%d\"}", i);
    sb_puts(&sb, "]}");
    p = platform_list_of("hybrid", sb.buf, &n);
    assert_int_equal(n, 40);
    assert_string_equal(p[0], "p0");
    assert_string_equal(p[39], "p39");
    assert_null(p[40]);
    for (int i = 0; i < n; i++)
        free(p[i]);
    free(p);
    sb_free(&sb);
}

int main(void)
{
    char tmpl[] = "/tmp/trialq-loop-XXXXXX";
    tmpdir = mkdtemp(tmpl);
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_submit_results),
        cmocka_unit_test(test_vanished_retried),
        cmocka_unit_test(test_poll_backoff),
        cmocka_unit_test(test_queued_start),
        cmocka_unit_test(test_poll_interval_per_trial),
        cmocka_unit_test(test_poll_all_once_per_interval),
        cmocka_unit_test(test_poll_all_failure_backoff),
        cmocka_unit_test(test_poll_all_new_job_waits),
        cmocka_unit_test(test_poll_all_refused),
        cmocka_unit_test(test_submit_rate),
        cmocka_unit_test(test_kill_retried_until_confirmed),
        cmocka_unit_test(test_kill_failing_job_ends),
        cmocka_unit_test(test_experiment_stop_without_request),
        cmocka_unit_test(test_adopt_dead_owner),
        cmocka_unit_test(test_experiment_gone),
        cmocka_unit_test(test_trial_env),
        cmocka_unit_test(test_platform_list),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_rf(tmpdir);
    return rc;
}
