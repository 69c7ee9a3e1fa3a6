/* test_schema_charts.c: the web UI charts' blocks (schema/chart_blocks.h): each block
 * holds what reading its trials gives, after every kind of change (a final metric, a
 * status, new trials, blocks that double), and a refresh after a few changes reads the
 * rows of their blocks, not every trial. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schema/chart_blocks.h"
#include "schema/webui_rows.h"
#include "tests/unit/db_fixture.h"
#include "tests/unit/unit_tmpdir.h"

static char *tmpdir;

/* n trials from sequence `from`: every 5th FAILED, every 7th without times, metrics that
 * repeat (ties) and one infinity */
static void add_trials(struct db *db, int64_t from, int64_t n)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e,
        "WITH RECURSIVE k(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 + ?2 - 1)"
        " INSERT INTO trial(id, experiment_id, sequence, parameters, status, platform, submit_time, start_time,"
        " end_time, updated_at, final_metric)"
        " SELECT printf('C%06d', i), 'exp1', i, '{}', CASE WHEN i % 5 = 0 THEN 'FAILED' ELSE 'SUCCEEDED' END,"
        " 'local', 1, CASE WHEN i % 7 = 0 THEN NULL ELSE 1000 END, 1000 + (i * 37) % 1000, 3,"
        " CASE WHEN i = 77 THEN 1e999 ELSE (i * 7919) % 101 END FROM k", "ii", from, n), n);
}

/* a block as reading its trials gives it */
struct want {
    const struct chart_blocks *cb;
    struct chart_block *b;
};

static void want_row(void *ctx, const struct chart_row *r)
{
    struct want *w = ctx;
    int64_t k = (r->sequence - w->cb->base) >> w->cb->shift;
    assert_true(k >= 0 && k < w->cb->nblocks);
    if (r->has_metric && isfinite(r->metric))
        chart_bucket_add(&w->b[k].fin, r->sequence, r->metric, r->id);
    if (r->has_times)
        chart_bucket_add(&w->b[k].dur, r->sequence, (double)(r->end_time - r->start_time) / 1000.0, r->id);
}

static void same_bucket(const struct chart_bucket *a, const struct chart_bucket *b)
{
    assert_int_equal(a->n, b->n);
    if (!a->n)
        return;
    assert_int_equal(a->lo.seq, b->lo.seq);
    assert_int_equal(a->hi.seq, b->hi.seq);
    assert_true(a->lo.v == b->lo.v && a->hi.v == b->hi.v);
    assert_string_equal(a->lo.id, b->lo.id);
    assert_string_equal(a->hi.id, b->hi.id);
}

static void check_blocks(struct db *db, const struct chart_blocks *cb)
{
    struct errbuf e;
    struct want w = {.cb = cb, .b = xcalloc((size_t)cb->nblocks, sizeof *w.b)};
    assert_int_equal(chart_rows(db, "exp1", INT64_MIN, INT64_MAX, want_row, &w, &e), 0);
    for (int64_t i = 0; i < cb->nblocks; i++) {
        same_bucket(&cb->b[i].fin, &w.b[i].fin);
        same_bucket(&cb->b[i].dur, &w.b[i].dur);
    }
    free(w.b);
}

static int64_t change(struct db *db)
{
    int64_t c;
    struct errbuf e;
    assert_int_equal(change_counter_now(db, &c, &e), 0);
    return c;
}

static void refresh(struct db *db, struct chart_blocks *cb)
{
    struct errbuf e;
    assert_int_equal(chart_blocks_refresh(db, "exp1", change(db), cb, 0, &e), 1);
    check_blocks(db, cb);
}

static void test_blocks_follow_changes(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 0);
    struct chart_blocks cb = {0};
    assert_int_equal(chart_blocks_refresh(db, "exp1", change(db), &cb, 0, &e), 1);
    assert_false(cb.have); /* no trial */
    add_trials(db, 3, 20000);
    refresh(db, &cb);
    assert_true(cb.full);
    assert_int_equal(cb.shift, 1); /* 20,000 trials: blocks of 2 */
    assert_int_equal(cb.base, 2);
    assert_int_equal(cb.rows_read, 20000);
    /* nothing changed: nothing read */
    refresh(db, &cb);
    assert_int_equal(cb.rows_read, 0);
    /* a few changes: their blocks' rows */
    assert_int_equal(db_run(db, &e, "UPDATE trial SET final_metric = -5 WHERE sequence IN (100, 9001)", ""), 2);
    assert_int_equal(db_run(db, &e, "UPDATE trial SET status = 'FAILED' WHERE sequence = 12345", ""), 1);
    assert_int_equal(db_run(db, &e, "UPDATE trial SET end_time = 99999 WHERE sequence = 4", ""), 1);
    refresh(db, &cb);
    assert_false(cb.full);
    assert_true(cb.rows_read <= 8);
    /* new trials: new blocks */
    add_trials(db, 20003, 500);
    refresh(db, &cb);
    assert_false(cb.full);
    assert_true(cb.rows_read <= 502);
    assert_int_equal(cb.hi, 20502);
    /* blocks that double: read again whole */
    add_trials(db, 20503, 13000);
    refresh(db, &cb);
    assert_true(cb.full);
    assert_int_equal(cb.shift, 2);
    /* many changes: reading all is cheaper than their blocks */
    assert_true(db_run(db, &e, "UPDATE trial SET final_metric = final_metric + 1 WHERE sequence % 3 = 0", "") > 5000);
    refresh(db, &cb);
    assert_true(cb.full);
    chart_blocks_free(&cb);
    /* the first read of every trial, a slice per call, with trials changed and added
     * between the calls: what they changed is read again at the end */
    int calls = 0, rc;
    while ((rc = chart_blocks_refresh(db, "exp1", change(db), &cb, 4000, &e)) == 0) {
        assert_true(cb.rows_read <= 4000 + 8);
        if (++calls == 3) {
            assert_int_equal(db_run(db, &e, "UPDATE trial SET final_metric = 1e6 WHERE sequence = 10", ""), 1);
            add_trials(db, 33503, 100);
        }
    }
    assert_int_equal(rc, 1);
    assert_true(calls >= 8);
    check_blocks(db, &cb);
    assert_int_equal(cb.hi, 33602);
    chart_blocks_free(&cb);
    db_close(db);
}

int main(void)
{
    char tmpl[] = "/tmp/trialq-test-charts-XXXXXX";
    tmpdir = tmpl;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_follow_changes),
    };
    return run_in_tmpdir(tmpl, tests);
}
