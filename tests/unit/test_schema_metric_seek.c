/* test_schema_metric_seek.c: GET /metric-data's offset as a seek (migration 019's
 * metric_count, folded in batches since migration 020; listing.c's metric_seek). Every
 * page at every offset, for every filter the listings take (type, a range of trial
 * sequences), equals the same slice of one full read, on a history with what makes
 * counting hard: trials without metrics, gaps in the sequences, a retried trial whose
 * first attempt's metrics stay in the table but are not shown, a late metric of an old
 * attempt, a block cut by the range, two experiments; and so with metrics not folded yet
 * (the seek adds them), among them those of a trial retried or deleted before the fold.
 * The counts equal a recount after each change and fold, and a deep page costs about
 * what a first page costs (SQLite VM instructions, not time), where a walk of the offset
 * grows with it, with a backlog too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "schema/counters.h"
#include "schema/listing.h"
#include "tests/unit/db_fixture.h"
#include "tests/unit/unit_tmpdir.h"

static char tmpdir[] = "/tmp/trialq-test-mseek-XXXXXX";

static void add_metric(struct db *db, const char *trial, int attempt, const char *type, int seq)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e, "INSERT INTO metric(trial_id, attempt, type, sequence, value, time)"
                                    " VALUES (?, ?, ?, ?, '0.5', 7)", "sdsd", trial, attempt, type, seq), 1);
}

/* trials of exp at sequences from, from + step, ...; trial k has k % 5 PERIODICAL metrics
 * and, when k % 3 != 0, a FINAL; metrics of neighbouring trials interleave in id order */
static void add_history(struct db *db, const char *exp, int n, int from, int step)
{
    struct errbuf e;
    char id[16];
    for (int k = 0; k < n; k++) {
        snprintf(id, sizeof id, "%c%04d", exp[3], k);
        assert_int_equal(db_run(db, &e,
            "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters, status, platform,"
            " submit_time, updated_at) VALUES (?,?,?,?,'{}','SUCCEEDED','local',1,1)",
            "ssii", id, exp, (int64_t)(from + k * step), (int64_t)k), 1);
    }
    for (int round = 0; round < 5; round++)
        for (int k = n - 1; k >= 0; k--) {
            snprintf(id, sizeof id, "%c%04d", exp[3], k);
            if (round < k % 5)
                add_metric(db, id, 1, "PERIODICAL", round);
            if (round == 4 && k % 3)
                add_metric(db, id, 1, "FINAL", 0);
        }
}

/* Folds what is not counted yet, as the api does every half second. */
static void fold(struct db *db)
{
    struct errbuf e;
    int64_t n;
    if (metric_fold(db, 0, &n, &e) < 0)
        fail_msg("metric_fold: %s", e.msg);
}

/* metric_count equals a count of the metrics the listings show, once folded */
static void assert_counts_exact(struct db *db)
{
    struct errbuf e;
    int64_t bad = -1;
    fold(db);
    assert_int_equal(db_int(db, &e, &bad,
        "SELECT count(*) FROM (SELECT experiment_id, block, periodical, final FROM metric_count"
        " WHERE periodical != 0 OR final != 0 EXCEPT"
        " SELECT t.experiment_id, t.sequence >> 6, sum(m.type = 'PERIODICAL'), sum(m.type = 'FINAL')"
        " FROM trial t JOIN metric m ON m.trial_id = t.id AND m.attempt = t.attempt GROUP BY 1, 2)", ""), 1);
    assert_int_equal(bad, 0);
    assert_int_equal(db_int(db, &e, &bad,
        "SELECT count(*) FROM (SELECT t.experiment_id, t.sequence >> 6, sum(m.type = 'PERIODICAL'),"
        " sum(m.type = 'FINAL') FROM trial t JOIN metric m ON m.trial_id = t.id AND m.attempt = t.attempt"
        " GROUP BY 1, 2 EXCEPT SELECT experiment_id, block, periodical, final FROM metric_count)", ""), 1);
    assert_int_equal(bad, 0);
}

static long steps;
static int count_step(void *ctx)
{
    (void)ctx;
    steps++;
    return 0;
}

struct filter {
    const char *type;
    int64_t lo, hi;
};

static cJSON *read_page(struct db *db, const struct filter *f, int64_t offset, int64_t limit, long *cost)
{
    struct errbuf e;
    struct page p;
    page_init(&p, "exp1");
    p.type = f->type;
    p.seq_min = f->lo;
    p.seq_max = f->hi;
    p.offset = offset;
    p.limit = limit;
    struct strbuf sb;
    sb_init(&sb);
    sb_add(&sb, "[", 1);
    steps = 0;
    sqlite3_progress_handler(db->h, 1, count_step, NULL);
    while (!p.done)
        assert_int_equal(metric_page_next(db, &p, sb.len + 1, &sb, &e), 0);
    sqlite3_progress_handler(db->h, 0, NULL, NULL);
    if (cost)
        *cost = steps;
    sb_add(&sb, "]", 1);
    cJSON *j = cJSON_Parse(sb.buf);
    assert_non_null(j);
    sb_free(&sb);
    return j;
}

/* every page of every size from 1 to 9 at every offset equals the slice of the full read */
static void assert_pages_are_slices(struct db *db, const struct filter *f)
{
    cJSON *all = read_page(db, f, 0, -1, NULL);
    int n = cJSON_GetArraySize(all);
    assert_true(n > 0);
    for (int limit = 1; limit <= 9; limit += 4)
        for (int off = 0; off <= n + 1; off++) {
            cJSON *page = read_page(db, f, off, limit, NULL);
            int want = off >= n ? 0 : n - off < limit ? n - off : limit;
            assert_int_equal(cJSON_GetArraySize(page), want);
            for (int i = 0; i < want; i++)
                if (!cJSON_Compare(cJSON_GetArrayItem(page, i), cJSON_GetArrayItem(all, off + i), 1))
                    fail_msg("type %s, trials %lld..%lld: offset %d limit %d: row %d differs from the full read",
                             f->type ? f->type : "any", (long long)f->lo, (long long)f->hi, off, limit, i);
            cJSON_Delete(page);
        }
    cJSON_Delete(all);
}

static void test_pages_equal_the_full_read(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 0);
    fx_add_experiment(db, "exp2", tmpdir, NULL, 2, 0);
    add_history(db, "exp2", 40, 0, 1); /* another experiment's metrics, in between */
    add_history(db, "exp1", 90, 3, 2); /* sequences 3, 5, ..., 181: three blocks and a gap at each even one */
    assert_counts_exact(db);
    /* a retry: attempt 1's metrics stay, unshown; attempt 2 reports its own; a late one of attempt 1 */
    assert_int_equal(db_run(db, &e, "UPDATE trial SET attempt = 2 WHERE id = '10004'", ""), 1);
    add_metric(db, "10004", 2, "PERIODICAL", 0);
    add_metric(db, "10004", 1, "PERIODICAL", 9);
    assert_counts_exact(db);
    const struct filter filters[] = {
        {NULL, INT64_MIN, INT64_MAX}, {"FINAL", INT64_MIN, INT64_MAX}, {"PERIODICAL", INT64_MIN, INT64_MAX},
        {NULL, 40, 150},              {"PERIODICAL", 64, 127},         {NULL, 71, 71},
    };
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++)
        assert_pages_are_slices(db, &filters[i]);
    /* not folded yet: metrics in several blocks, a new block's first, a late one of an old
     * attempt, those of a trial retried and of one deleted before the fold */
    add_metric(db, "10000", 1, "PERIODICAL", 7);
    add_metric(db, "10040", 1, "FINAL", 3);
    add_metric(db, "10007", 1, "PERIODICAL", 8);
    add_metric(db, "10004", 1, "PERIODICAL", 10);
    add_metric(db, "10011", 1, "PERIODICAL", 9);
    assert_int_equal(db_run(db, &e, "UPDATE trial SET attempt = 2 WHERE id = '10011'", ""), 1);
    add_metric(db, "10011", 2, "FINAL", 0);
    add_metric(db, "10013", 1, "PERIODICAL", 9);
    assert_int_equal(db_run(db, &e, "DELETE FROM trial WHERE id = '10013'", ""), 1);
    assert_int_equal(db_run(db, &e, "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters,"
                                    " status, platform, submit_time, updated_at)"
                                    " VALUES ('1late', 'exp1', 300, 900, '{}', 'RUNNING', 'local', 1, 1)", ""), 1);
    add_metric(db, "1late", 1, "PERIODICAL", 0);
    const struct filter wider[] = {{NULL, INT64_MIN, INT64_MAX}, {"FINAL", INT64_MIN, INT64_MAX},
                                   {"PERIODICAL", 0, 400}, {NULL, 40, 150}, {NULL, 250, 310}};
    for (size_t i = 0; i < sizeof wider / sizeof wider[0]; i++)
        assert_pages_are_slices(db, &wider[i]);
    assert_counts_exact(db); /* folds */
    for (size_t i = 0; i < sizeof wider / sizeof wider[0]; i++)
        assert_pages_are_slices(db, &wider[i]);
    assert_int_equal(db_run(db, &e, "DELETE FROM experiment WHERE id = 'exp2'", ""), 1);
    int64_t left = -1;
    assert_int_equal(db_int(db, &e, &left, "SELECT count(*) FROM metric_count WHERE experiment_id = 'exp2'", ""), 1);
    assert_int_equal(left, 0);
    assert_counts_exact(db);
    db_close(db);
}

/* a deep page costs about what the first one does; walking the offset would cost rows */
static void test_deep_page_is_a_seek(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 0);
    add_history(db, "exp1", 4000, 0, 1); /* 4000 trials, 10,666 metrics */
    fold(db);
    /* and a backlog: a metric of each of 50 trials stored since */
    for (int k = 0; k < 4000; k += 80) {
        char id[16];
        snprintf(id, sizeof id, "1%04d", k);
        add_metric(db, id, 1, "PERIODICAL", 20);
    }
    const struct filter any = {NULL, INT64_MIN, INT64_MAX};
    long first, deep, deeper;
    cJSON_Delete(read_page(db, &any, 0, 100, &first));
    cJSON *page = read_page(db, &any, 10000, 100, &deep);
    assert_int_equal(cJSON_GetArraySize(page), 100);
    cJSON_Delete(page);
    cJSON_Delete(read_page(db, &any, 5000, 100, &deeper));
    print_message("VM instructions: metric page at offset 0 %ld, at 5,000 %ld, at 10,000 %ld\n", first, deeper,
                  deep);
    assert_true(deep < 4 * first);
    assert_true(deeper < 4 * first);
    db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_equal_the_full_read),
        cmocka_unit_test(test_deep_page_is_a_seek),
    };
    return run_in_tmpdir(tmpdir, tests);
}
