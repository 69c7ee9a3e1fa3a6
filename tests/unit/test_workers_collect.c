/* test_workers_collect.c: the NNISDK_MEb stdout lines and ME-framed records a worker
 * reads (workers/collect.c), into a real database: records stored once, bad ones
 * skipped, and the stdout line that is the tag alone (found by fuzzing, tests/fuzz:
 * its length came out as -1 and the parser read far beyond the buffer) no record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "workers/worker.h"

static char *tmpdir;
static struct db *db;

static int setup(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/trialq-collect-XXXXXX";
    tmpdir = xstrdup(mkdtemp(tmpl));
    char *p = xasprintf("%s/t.db", tmpdir);
    struct errbuf e;
    assert_int_equal(db_open(p, &db, &e), 0);
    free(p);
    struct experiment x = {0};
    x.id = "exp";
    x.config = "{}";
    x.search_space = "{}";
    x.platform = "local";
    x.exp_dir = tmpdir;
    x.start_time = now_ms();
    x.concurrency = 1;
    x.seed = 1;
    x.token = "t";
    assert_int_equal(exp_insert(db, &x, &e), 0);
    assert_int_equal(db_run(db, &e, "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters,"
                                    " platform, max_attempts, submit_time, updated_at, status) VALUES ('tr', 'exp',"
                                    " 0, 0, '{}', 'local', 1, ?, ?, 'RUNNING')", "ii", now_ms(), now_ms()), 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    db_close(db);
    rm_rf(tmpdir);
    free(tmpdir);
    return 0;
}

static int64_t metrics(void)
{
    int64_t n = -1;
    struct errbuf e;
    assert_int_equal(db_int(db, &e, &n, "SELECT count(*) FROM metric WHERE trial_id = 'tr'", ""), 1);
    return n;
}

#define REC "{\"parameter_id\": 0, \"trial_job_id\": \"tr\", \"type\": \"PERIODICAL\", \"sequence\": %d," \
            " \"value\": \"0.5\"}"

static void stdout_case(const char *text, int at_end, size_t want_used, int64_t want_new)
{
    int64_t before = metrics();
    size_t used = 12345;
    struct errbuf e;
    assert_int_equal(collect_stdout_buf(db, "tr", 1, text, strlen(text), at_end, &used, &e), 0);
    assert_int_equal(used, want_used);
    assert_int_equal(metrics() - before, want_new);
}

static void test_stdout_lines(void **state)
{
    (void)state;
    char *two = xasprintf("epoch 1\nNNISDK_MEb'" REC "'\nNNISDK_MEb'" REC "'\r\nlast", 1, 2);
    /* the last line waits for its newline, unless the output is whole */
    stdout_case(two, 0, strlen(two) - 4, 2);
    stdout_case(two, 1, strlen(two), 0); /* the same records again: stored once */
    free(two);
    /* the tag alone, its quote the only one: no record, nothing read beyond the line */
    stdout_case("NNISDK_MEb'", 1, 11, 0);
    stdout_case("vNNISDK_MEb'", 1, 12, 0);
    stdout_case("NNISDK_MEb'\n", 0, 12, 0);
    stdout_case("NNISDK_MEb''\n", 0, 13, 0); /* empty record: refused as JSON, skipped */
    char *three = xasprintf("NNISDK_MEb'" REC "'", 3);
    stdout_case(three, 1, strlen(three), 1);
    free(three);
}

static void test_metric_records(void **state)
{
    (void)state;
    char *rec = xasprintf(REC "\n", 10);
    char *buf = xasprintf("MEjunk ME%06zu%sME%06zu%.5s", strlen(rec), rec, strlen(rec), rec);
    int64_t before = metrics();
    size_t used = 0;
    struct errbuf e;
    assert_int_equal(collect_metrics_buf(db, "tr", 1, buf, strlen(buf), &used, &e), 0);
    /* resynchronised after the junk; the partial record at the end is left for later */
    assert_int_equal(used, strlen(buf) - 8 - 5);
    assert_int_equal(metrics() - before, 1);
    free(buf);
    free(rec);
}

/* The log lines written while fn runs (stderr into a file). */
static char *stderr_of(void (*fn)(void))
{
    char *path = xasprintf("%s/stderr.log", tmpdir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *text = read_file(path, NULL);
    assert_non_null(text);
    free(path);
    return text;
}

static int lines_of(const char *text)
{
    int n = 0;
    for (const char *c = text; *c; c++)
        n += *c == '\n';
    return n;
}

#define CHUNK "ME\x1b[31mjunk" /* a frame mark, bad digits, then out of frame until the next */
#define CHUNKS 300000          /* 3.3 MB: one resync each */

static void garbage(void)
{
    size_t clen = strlen(CHUNK);
    char *rec = xasprintf(REC "\n", 20);
    struct strbuf sb;
    sb_init(&sb);
    for (int i = 0; i < CHUNKS; i++) {
        sb_add(&sb, CHUNK, clen);
        if (i == CHUNKS / 2)
            sb_printf(&sb, "ME%06zu%s", strlen(rec), rec); /* a good record amid the garbage */
    }
    size_t used = 0;
    struct errbuf e;
    assert_int_equal(collect_metrics_buf(db, "tr", 1, sb.buf, sb.len, &used, &e), 0);
    assert_int_equal(used, sb.len);
    sb_free(&sb);
    /* stdout: 10,000 bad records, each with a terminal escape */
    sb_init(&sb);
    for (int i = 0; i < 10000; i++)
        sb_puts(&sb, "NNISDK_MEb'{\"x\": \"\x1b]0;owned\x07\"}'\n");
    assert_int_equal(collect_stdout_buf(db, "tr", 1, sb.buf, sb.len, 1, &used, &e), 0);
    sb_free(&sb);
    free(rec);
    log_input_flush(1); /* the counts, as at exit */
}

/* A file of garbage cannot flood the log (issue 29): per source, the first malformed
 * record is logged, the rest counted in one line; nothing of the trial's bytes reaches
 * the log unescaped; the good record amid the garbage is stored. */
static void test_garbage_bounded_log(void **state)
{
    (void)state;
    log_set_level(LOG_WARN);
    int64_t before = metrics();
    char *text = stderr_of(garbage);
    log_set_level(LOG_ERROR);
    assert_int_equal(metrics() - before, 1);
    assert_int_equal(lines_of(text), 4);
    char *want = xasprintf("trial tr: metrics file: %d more malformed records in the last minute", CHUNKS - 1);
    assert_non_null(strstr(text, want));
    free(want);
    assert_non_null(strstr(text, "trial tr: stdout: 9999 more malformed records in the last minute"));
    assert_non_null(strstr(text, "trial tr: stdout: ignoring bad metric record"));
    for (const char *c = text; *c; c++)
        assert_true(*c == '\n' || (unsigned char)*c >= 0x20);
    free(text);
}

int main(void)
{
    log_set_level(LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stdout_lines),
        cmocka_unit_test(test_metric_records),
        cmocka_unit_test(test_garbage_bounded_log),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
