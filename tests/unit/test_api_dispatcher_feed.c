/* The dispatcher's protocol against a real SQLite file, without a process: its pipe
 * channel is a bufferevent without a socket whose output is read back as NNI's frames.
 * What the tuner is fed (IN, FD and AD on start, then ME, EN, FD, SS), in which order
 * (a trial's metrics before its end, its first FINAL of the attempt that ended), once
 * each; what its answers do (TR handed to the scheduler with its label and hyper_params
 * back in EN, GE for the free slots, NO, KI -> EARLY_STOPPED, ER -> ERROR with the
 * message). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "api/disp.h"
#include "api/dispatcher.h"
#include "schema/dispatch.h"

static char *tmpdir;

struct fixture {
    struct api a;
    struct exp_config cfg;
    struct dispatcher *d;
};

static void trial(struct db *db, const char *id, int64_t seq, const char *status, int64_t index)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e, "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters,"
                                    " status, platform, submit_time, updated_at) VALUES (?,'exp1',?,?,?,?,'local',1,1)",
                            "siFss", id, seq, index < 0 ? NAN : (double)index, "{\"x\":1}", status), 1);
}

static void metric(struct db *db, const char *trial_id, const char *type, int64_t seq, const char *value)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e, "INSERT INTO metric(trial_id, parameter_id, type, sequence, value, time)"
                                    " VALUES (?, '0', ?, ?, ?, 1)", "ssis", trial_id, type, seq, value), 1);
}

static void end_trial(struct db *db, const char *id, const char *status)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e, "UPDATE trial SET status = ?, end_time = 2 WHERE id = ?", "ss", status, id), 1);
}

static int fixture_up(void **state)
{
    static int n;
    struct fixture *f = xcalloc(1, sizeof *f);
    struct api *a = &f->a;
    struct errbuf e;
    char *p = xasprintf("%s/f%d.db", tmpdir, n++);
    assert_int_equal(db_open(p, &a->db, &e), 0);
    free(p);
    struct experiment x = {.id = "exp1", .config = "{}", .search_space = "{\"x\":{}}", .platform = "local",
                           .exp_dir = tmpdir, .start_time = now_ms(), .concurrency = 3, .seed = 1, .token = "t"};
    assert_int_equal(exp_insert(a->db, &x, &e), 0);
    assert_int_equal(exp_load(a->db, "exp1", &a->exp, &e), 1);
    a->exp_id = "exp1";
    f->cfg.tuner.set = 1;
    f->cfg.tuner.class_name = "algos.Recorder";
    a->cfg = &f->cfg;
    a->base = event_base_new();
    a->tuner = &dispatcher_tuner_ops;
    assert_int_equal(dispatcher_init(a, &e), 0);
    f->d = a->disp;
    f->d->use_ws = 0;
    f->d->to = bufferevent_socket_new(a->base, -1, 0); /* no socket: what is sent stays in its output */
    *state = f;
    return 0;
}

static int fixture_down(void **state)
{
    struct fixture *f = *state;
    struct api *a = &f->a;
    if (a->tuner_state)
        a->tuner->destroy(a->tuner_state);
    f->d->state = D_READY;
    dispatcher_shutdown(a); /* TE, then the channel closed and the state freed */
    event_base_free(a->base);
    exp_clear(&a->exp);
    db_close(a->db);
    free(f);
    return 0;
}

/* Everything sent since the last call, "XX content\n" per command. */
static char *sent(struct fixture *f)
{
    struct evbuffer *out = bufferevent_get_output(f->d->to);
    size_t n = evbuffer_get_length(out);
    char *buf = (char *)evbuffer_pullup(out, (ev_ssize_t)n);
    struct strbuf sb;
    sb_init(&sb);
    size_t at = 0;
    while (at < n) {
        char type[3];
        size_t off, len;
        struct errbuf e;
        assert_int_equal(pipe_frame_parse(buf + at, n - at, 1u << 20, type, &off, &len, &e), 1);
        sb_printf(&sb, "%s %.*s\n", type, (int)len, buf + at + off);
        at += off + len;
    }
    evbuffer_unfreeze(out, 1); /* only a socket's writer may drain it: we are that here */
    assert_int_equal(evbuffer_drain(out, n), 0);
    return sb_detach(&sb);
}

static void sent_is(struct fixture *f, const char *want)
{
    char *got = sent(f);
    assert_string_equal(got, want);
    free(got);
}

/* The channel opened: IN with the search space; ID: the replay, then the feed. */
static void start(struct fixture *f)
{
    struct errbuf e;
    struct disp_cursors c;
    assert_int_equal(disp_cursors_now(f->a.db, "exp1", &c, &e), 0);
    f->d->metric_cursor = c.metric;
    f->d->change_cursor = c.change;
    f->d->import_cursor = c.import;
    disp_hello(f->d);
    sent_is(f, "IN {\"x\":{}}\n");
    assert_int_equal(f->d->state, D_INIT);
    disp_command(f->d, "ID", "");
    assert_int_equal(f->d->state, D_READY);
}

static void test_replay_on_start(void **state)
{
    struct fixture *f = *state;
    struct errbuf e;
    trial(f->a.db, "A0001", 0, "SUCCEEDED", 0);
    assert_int_equal(db_run(f->a.db, &e, "UPDATE trial SET final_metric_json = '0.5' WHERE id = 'A0001'", ""), 1);
    trial(f->a.db, "A0002", 1, "RUNNING", 1);
    assert_int_equal(db_event(f->a.db, &e, "exp1", NULL, "import", NULL, NULL, "[{\"parameter\":{\"x\":2},\"value\":3}]"),
                     0);
    start(f);
    sent_is(f, "FD [{\"parameter\":{\"x\":2},\"value\":3},{\"parameter\":{\"x\":1},\"value\":\"0.5\",\"trialJobId\":"
               "\"A0001\"}]\n"
               "AD [{\"parameter_id\":1,\"parameter_source\":\"resumed\",\"parameters\":{\"x\":1},"
               "\"parameter_index\":0}]\n");
    /* the running trial ends: its result, then its end, with the record AD gave */
    metric(f->a.db, "A0002", "FINAL", 0, "0.7");
    end_trial(f->a.db, "A0002", "SUCCEEDED");
    disp_feed(f->d);
    sent_is(f, "ME {\"parameter_id\":0,\"trial_job_id\":\"A0002\",\"type\":\"FINAL\",\"sequence\":0,\"value\":\"0.7\"}\n"
               "EN {\"trial_job_id\":\"A0002\",\"event\":\"SUCCEEDED\",\"hyper_params\":\"{\\\"parameter_id\\\":1,"
               "\\\"parameter_source\\\":\\\"resumed\\\",\\\"parameters\\\":{\\\"x\\\":1},\\\"parameter_index\\\":0}\"}\n");
}

static void test_suggest_and_feed(void **state)
{
    struct fixture *f = *state;
    struct api *a = &f->a;
    struct errbuf e;
    start(f);
    sent_is(f, ""); /* nothing to replay */
    assert_int_equal(dispatcher_tuner_create(a, NULL, &a->tuner_state, &e), 0);
    cJSON *params = NULL;
    /* no parameters yet: GE for the free slots (concurrency 3, one trial active), once */
    trial(a->db, "A0009", 9, "RUNNING", -1);
    assert_int_equal(a->tuner->suggest(a->tuner_state, 0, NULL, &params, &e), 2);
    assert_int_equal(a->tuner->suggest(a->tuner_state, 0, NULL, &params, &e), 2);
    sent_is(f, "GE 2\n");
    const char *tr = "{\"parameter_id\":\"0-1_0_2\",\"parameter_source\":\"algorithm\",\"parameters\":{\"x\":5}}";
    disp_command(f->d, "TR", tr);
    assert_int_equal(a->tuner->suggest(a->tuner_state, 0, NULL, &params, &e), 1);
    assert_int_equal(cJSON_GetObjectItem(params, "x")->valueint, 5);
    cJSON_Delete(params);
    /* asked again for index 0 (its trial's insert failed, a database fault): the same
     * suggestion, and the next one (x 6) is still there for index 1 */
    disp_command(f->d, "TR", "{\"parameter_id\":\"0-1_0_3\",\"parameter_source\":\"algorithm\",\"parameters\":{\"x\":6}}");
    assert_int_equal(a->tuner->suggest(a->tuner_state, 0, NULL, &params, &e), 1);
    assert_int_equal(cJSON_GetObjectItem(params, "x")->valueint, 5);
    cJSON_Delete(params);
    char *label = a->tuner->label(a->tuner_state, 0);
    assert_string_equal(label, "0-1_0_2");
    free(label);
    /* the scheduler's trial of index 0: metrics as they come, its FINAL with its end */
    trial(a->db, "A0000", 0, "RUNNING", 0);
    metric(a->db, "A0000", "PERIODICAL", 0, "0.1");
    disp_feed(f->d);
    sent_is(f, "ME {\"parameter_id\":0,\"trial_job_id\":\"A0000\",\"type\":\"PERIODICAL\",\"sequence\":0,"
               "\"value\":\"0.1\"}\n");
    assert_int_equal(db_begin(a->db, &e), 0); /* as a worker stores the last metrics with the end */
    metric(a->db, "A0000", "PERIODICAL", 1, "0.2");
    metric(a->db, "A0000", "FINAL", 0, "0.9");
    metric(a->db, "A0000", "FINAL", 1, "0.8"); /* a second FINAL is not the result */
    end_trial(a->db, "A0000", "SUCCEEDED");
    assert_int_equal(db_commit(a->db, &e), 0);
    /* an imported result, and a search space update */
    assert_int_equal(db_event(a->db, &e, "exp1", NULL, "import", NULL, NULL, "[7]"), 0);
    free(a->exp.search_space);
    a->exp.search_space = xstrdup("{\"y\":{}}");
    disp_feed(f->d);
    char *want = xasprintf("SS {\"y\":{}}\nFD [7]\n"
                           "ME {\"parameter_id\":0,\"trial_job_id\":\"A0000\",\"type\":\"PERIODICAL\",\"sequence\":1,"
                           "\"value\":\"0.2\"}\n"
                           "ME {\"parameter_id\":0,\"trial_job_id\":\"A0000\",\"type\":\"FINAL\",\"sequence\":0,"
                           "\"value\":\"0.9\"}\n"
                           "EN {\"trial_job_id\":\"A0000\",\"event\":\"SUCCEEDED\",\"hyper_params\":\"%s\"}\n",
                           "{\\\"parameter_id\\\":\\\"0-1_0_2\\\",\\\"parameter_source\\\":\\\"algorithm\\\","
                           "\\\"parameters\\\":{\\\"x\\\":5}}");
    sent_is(f, want);
    free(want);
    /* once: nothing new, nothing sent again; a trial not the dispatcher's: FINAL, no EN */
    disp_feed(f->d);
    sent_is(f, "");
    trial(a->db, "A0005", 5, "RUNNING", 5);
    metric(a->db, "A0005", "FINAL", 0, "0.3");
    end_trial(a->db, "A0005", "FAILED");
    disp_feed(f->d);
    sent_is(f, "ME {\"parameter_id\":0,\"trial_job_id\":\"A0005\",\"type\":\"FINAL\",\"sequence\":0,\"value\":\"0.3\"}\n");
    assert_int_equal(a->tuner->suggest(a->tuner_state, 1, NULL, &params, &e), 1);
    assert_int_equal(cJSON_GetObjectItem(params, "x")->valueint, 6);
    cJSON_Delete(params);
    /* NO: no more suggestions */
    disp_command(f->d, "NO", "");
    assert_int_equal(a->tuner->suggest(a->tuner_state, 2, NULL, &params, &e), 0);
}

static void test_answers(void **state)
{
    struct fixture *f = *state;
    struct api *a = &f->a;
    struct errbuf e;
    start(f);
    trial(a->db, "A0001", 0, "RUNNING", 0);
    assert_int_equal(db_run(a->db, &e, "UPDATE trial SET lease_owner = 'w' WHERE id = 'A0001'", ""), 1);
    /* KI of a trial of this experiment: an early stop asked of its worker */
    disp_command(f->d, "KI", "\"A0001\"");
    struct trial t;
    assert_int_equal(trial_load(a->db, "A0001", &t, &e), 1);
    assert_non_null(t.kill_request);
    assert_string_equal(t.kill_request, "EARLY_STOPPED");
    trial_clear(&t);
    disp_command(f->d, "KI", "\"nosuch\""); /* unknown, and not a string: logged, nothing else */
    disp_command(f->d, "KI", "42");
    disp_command(f->d, "SP", "{}");
    disp_command(f->d, "XY", "");
    assert_int_equal(f->d->state, D_READY);
    /* a TR that is no parameter record fails the experiment */
    disp_command(f->d, "TR", "{\"parameters\": 1}");
    assert_int_equal(f->d->state, D_FAILED);
    struct experiment x;
    assert_int_equal(exp_load(a->db, "exp1", &x, &e), 1);
    assert_string_equal(x.status, "ERROR");
    assert_non_null(strstr(x.errors, "tuner sent a trial (TR) that is not a parameter record"));
    exp_clear(&x);
    /* failed: nothing more is sent or taken */
    disp_command(f->d, "ER", "late");
    assert_null(f->d->to); /* the channel is closed */
}

static void test_error_from_tuner(void **state)
{
    struct fixture *f = *state;
    struct errbuf e;
    start(f);
    disp_command(f->d, "ER", "Traceback (most recent call last):\nValueError: exploded");
    struct experiment x;
    assert_int_equal(exp_load(f->a.db, "exp1", &x, &e), 1);
    assert_string_equal(x.status, "ERROR");
    assert_non_null(strstr(x.errors, "tuner error (dispatcher process): Traceback"));
    assert_non_null(strstr(x.errors, "ValueError: exploded"));
    exp_clear(&x);
}

int main(void)
{
    char tmpl[] = "/tmp/trialq-test-dispfeed-XXXXXX";
    tmpdir = mkdtemp(tmpl);
    log_set_level(LOG_ERROR + 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replay_on_start, fixture_up, fixture_down),
        cmocka_unit_test_setup_teardown(test_suggest_and_feed, fixture_up, fixture_down),
        cmocka_unit_test_setup_teardown(test_answers, fixture_up, fixture_down),
        cmocka_unit_test_setup_teardown(test_error_from_tuner, fixture_up, fixture_down),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_rf(tmpdir);
    return rc;
}
