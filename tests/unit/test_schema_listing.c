/* test_schema_listing.c: the reads behind the REST listings: NNI's payload text (JSON
 * escaping, invalid UTF-8, double-encoded metrics), keyset pages that concatenate to
 * the whole list, incremental reads by change number that miss nothing and repeat
 * nothing, an offset that is a seek and reads that cost what their rows cost (counted in
 * SQLite VM instructions, not timed), metric ids never reused, and customized trials
 * within maxTrialNumber. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "schema/listing.h"
#include "schema/trial_new.h"
#include "schema/trial_sets.h"
#include "schema/webui_rows.h"
#include "tests/unit/db_fixture.h"

static char *tmpdir;

/* n SUCCEEDED trials, each with PERIODICAL metrics 0..2 and a FINAL */
static void add_trials(struct db *db, const char *exp, int from, int n)
{
    struct errbuf e;
    for (int i = from; i < from + n; i++) {
        char id[16], params[32], final[16];
        snprintf(id, sizeof id, "%c%04d", 'A' + (exp[3] - '0'), i);
        snprintf(params, sizeof params, "{\"x\":%d}", i);
        snprintf(final, sizeof final, "%d.5", i);
        assert_int_equal(db_run(db, &e,
            "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters, status, platform,"
            " submit_time, start_time, end_time, updated_at, final_metric_json) VALUES (?,?,?,?,?,'SUCCEEDED',"
            "'local',1,2,3,3,?)", "ssiiss", id, exp, (int64_t)i, (int64_t)i, params, final), 1);
        for (int k = 0; k < 3; k++)
            assert_int_equal(db_run(db, &e, "INSERT INTO metric(trial_id, parameter_id, type, sequence, value, time)"
                                            " VALUES (?, ?, 'PERIODICAL', ?, ?, 5)",
                                    "ssds", id, params + 5, k, "0.25"), 1);
        assert_int_equal(db_run(db, &e, "INSERT INTO metric(trial_id, type, sequence, value, time)"
                                        " VALUES (?, 'FINAL', 0, ?, 6)", "ss", id, final), 1);
    }
}

static cJSON *read_all(struct db *db, struct page *p, int metrics)
{
    struct experiment x;
    struct errbuf e;
    assert_int_equal(exp_load(db, p->exp_id, &x, &e), 1);
    struct strbuf sb;
    sb_init(&sb);
    sb_add(&sb, "[", 1);
    while (!p->done) { /* the smallest pieces: every page boundary is exercised */
        size_t want = sb.len + 1;
        assert_int_equal(metrics ? metric_page_next(db, p, want, &sb, &e) : trial_page_next(db, &x, p, want, &sb, &e), 0);
    }
    sb_add(&sb, "]", 1);
    cJSON *j = cJSON_Parse(sb.buf);
    assert_non_null(j);
    sb_free(&sb);
    exp_clear(&x);
    return j;
}

static void test_json_text(void **s)
{
    (void)s;
    struct strbuf sb;
    sb_init(&sb);
    nj_str(&sb, "a\"b\\c\n\t\x01 \xc3\xa9 \xff\xfe \xe2\x82");
    assert_string_equal(sb.buf, "\"a\\\"b\\\\c\\n\\t\\u0001 \xc3\xa9 \xEF\xBF\xBD\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD\"");
    sb_free(&sb);
    nj_int(&sb, INT64_MIN);
    assert_string_equal(sb.buf, "-9223372036854775808");
    sb_free(&sb);
    struct nni_metric m = {.trial_id = "Ab12c", .parameter_id = "", .type = "FINAL", .value = "{\"default\": 0.5}",
                           .sequence = 0, .time = 7};
    nni_metric_text(&sb, &m);
    cJSON *j = cJSON_Parse(sb.buf);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "parameterId")));
    /* double encoded: decode twice to get the reported value */
    cJSON *once = cJSON_Parse(cJSON_GetObjectItem(j, "data")->valuestring);
    assert_true(cJSON_IsString(once));
    assert_string_equal(once->valuestring, "{\"default\": 0.5}");
    cJSON_Delete(once);
    cJSON_Delete(j);
    sb_free(&sb);
}

static void test_pages_concatenate(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 0);
    fx_add_experiment(db, "exp2", tmpdir, NULL, 2, 0);
    add_trials(db, "exp1", 0, 40);
    add_trials(db, "exp2", 0, 5); /* another experiment's rows never show */
    struct page p;
    page_init(&p, "exp1");
    cJSON *all = read_all(db, &p, 0);
    assert_int_equal(cJSON_GetArraySize(all), 40);
    cJSON *t0 = cJSON_GetArrayItem(all, 0);
    assert_string_equal(cJSON_GetObjectItem(t0, "trialJobId")->valuestring, "B0000");
    cJSON *fm = cJSON_GetArrayItem(cJSON_GetObjectItem(t0, "finalMetricData"), 0);
    assert_string_equal(cJSON_GetObjectItem(fm, "data")->valuestring, "\"0.5\"");
    for (int size = 1; size <= 41; size += 7) {
        cJSON *joined = cJSON_CreateArray();
        for (int off = 0;; off += size) {
            page_init(&p, "exp1");
            p.limit = size;
            p.offset = off;
            cJSON *page = read_all(db, &p, 0);
            int n = cJSON_GetArraySize(page);
            while (cJSON_GetArraySize(page))
                cJSON_AddItemToArray(joined, cJSON_DetachItemFromArray(page, 0));
            cJSON_Delete(page);
            if (n < size)
                break;
        }
        assert_true(cJSON_Compare(joined, all, 1));
        cJSON_Delete(joined);
    }
    cJSON_Delete(all);
    /* metrics: 4 per trial, by trial then arrival; a range of trial sequences */
    page_init(&p, "exp1");
    cJSON *ms = read_all(db, &p, 1);
    assert_int_equal(cJSON_GetArraySize(ms), 160);
    cJSON_Delete(ms);
    page_init(&p, "exp1");
    p.seq_min = 10;
    p.seq_max = 12;
    ms = read_all(db, &p, 1);
    assert_int_equal(cJSON_GetArraySize(ms), 12);
    cJSON_Delete(ms);
    db_close(db);
}

static void test_since(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 0);
    add_trials(db, "exp1", 0, 10);
    struct page p;
    page_init(&p, "exp1");
    int64_t c0;
    assert_int_equal(trial_page_cursor(db, &p, &c0, &e), 0);
    /* nothing changed: nothing */
    page_init(&p, "exp1");
    p.incremental = 1;
    p.since = c0;
    assert_int_equal(trial_page_cursor(db, &p, &p.upto, &e), 0);
    assert_int_equal(p.upto, c0);
    cJSON *got = read_all(db, &p, 0);
    assert_int_equal(cJSON_GetArraySize(got), 0);
    cJSON_Delete(got);
    /* a lease renewal is not a change; a status change and a new trial are */
    assert_int_equal(db_run(db, &e, "UPDATE trial SET lease_expires = 5 WHERE id = 'B0001'", ""), 1);
    assert_int_equal(db_run(db, &e, "UPDATE trial SET message = 'm' WHERE id = 'B0003'", ""), 1);
    add_trials(db, "exp1", 10, 1);
    assert_int_equal(db_run(db, &e, "UPDATE trial SET message = 'n' WHERE id = 'B0002'", ""), 1);
    page_init(&p, "exp1");
    p.incremental = 1;
    p.since = c0;
    assert_int_equal(trial_page_cursor(db, &p, &p.upto, &e), 0);
    got = read_all(db, &p, 0);
    assert_int_equal(cJSON_GetArraySize(got), 3);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(got, 0), "trialJobId")->valuestring, "B0003");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(got, 2), "trialJobId")->valuestring, "B0002");
    cJSON_Delete(got);
    /* an offset into the changes, and one past them */
    page_init(&p, "exp1");
    p.incremental = 1;
    p.since = c0;
    p.offset = 1;
    p.limit = 1;
    assert_int_equal(trial_page_cursor(db, &p, &p.upto, &e), 0);
    got = read_all(db, &p, 0);
    assert_int_equal(cJSON_GetArraySize(got), 1);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(got, 0), "trialJobId")->valuestring, "B0010");
    cJSON_Delete(got);
    page_init(&p, "exp1");
    p.incremental = 1;
    p.since = c0;
    p.offset = 3;
    assert_int_equal(trial_page_cursor(db, &p, &p.upto, &e), 0);
    got = read_all(db, &p, 0);
    assert_int_equal(cJSON_GetArraySize(got), 0);
    cJSON_Delete(got);
    /* with a limit the cursor is the last row of the page: walk the 3 changes by 2 */
    int64_t since = c0;
    int total = 0;
    for (;;) {
        page_init(&p, "exp1");
        p.incremental = 1;
        p.since = since;
        p.limit = 2;
        assert_int_equal(trial_page_cursor(db, &p, &p.upto, &e), 0);
        got = read_all(db, &p, 0);
        int n = cJSON_GetArraySize(got);
        cJSON_Delete(got);
        total += n;
        if (!n)
            break;
        assert_true(p.upto > since);
        since = p.upto;
    }
    assert_int_equal(total, 3);
    db_close(db);
}

/* n SUCCEEDED trials of exp with sequences from.., ids Z0000..: each with a FINAL and two
 * PERIODICAL metrics; in three statements, so that thousands take no time */
static void add_many(struct db *db, const char *exp, int from, int n)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e,
        "WITH RECURSIVE k(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM k WHERE i < ?1 + ?2 - 1)"
        " INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters, status, platform, submit_time,"
        " start_time, end_time, updated_at, final_metric_json)"
        " SELECT printf('Z%04d', i), ?3, i, i, printf('{\"x\":%d}', i), 'SUCCEEDED', 'local', 1, 2, 3, 3,"
        " printf('%d.5', i) FROM k", "dds", from, n, exp), n);
    assert_int_equal(db_run(db, &e, "INSERT INTO metric(trial_id, type, sequence, value, time)"
                                    " SELECT id, 'FINAL', 0, final_metric_json, 6 FROM trial"
                                    " WHERE experiment_id = ? AND sequence >= ?", "sd", exp, from), n);
    assert_int_equal(db_run(db, &e, "INSERT INTO metric(trial_id, type, sequence, value, time)"
                                    " SELECT id, 'PERIODICAL', k.j, '0.25', 5 FROM trial, (SELECT 0 AS j UNION SELECT 1) k"
                                    " WHERE experiment_id = ? AND sequence >= ?", "sd", exp, from), 2 * n);
}

static int count_step(void *arg)
{
    (*(long *)arg)++;
    return 0;
}

/* The page as JSON; *cost: the SQLite VM instructions its reading took. A read that
 * walks rows it does not return (an OFFSET, a scan) costs in proportion to them, so
 * this measures what a timing would, without the timing. */
static cJSON *read_cost(struct db *db, struct page *p, int metrics, long *cost)
{
    *cost = 0;
    sqlite3_progress_handler(db->h, 1, count_step, cost);
    cJSON *j = read_all(db, p, metrics);
    sqlite3_progress_handler(db->h, 0, NULL, NULL);
    return j;
}

/* GET /trial-jobs?limit=10&offset=off, with or without the sequence span. */
static cJSON *trial_page_at(struct db *db, struct seq_span *span, int64_t off, long *cost)
{
    struct page p;
    page_init(&p, "exp1");
    p.limit = 10;
    p.offset = off;
    p.span = span;
    return read_cost(db, &p, 0, cost);
}

static int64_t first_seq(cJSON *page)
{
    return (int64_t)cJSON_GetObjectItem(cJSON_GetArrayItem(page, 0), "sequenceId")->valuedouble;
}

/* An offset into the whole list is a seek on the sequence: a deep page costs what the
 * first one costs, and has the rows that walking the offset gives; trials added later
 * extend the span, and a gap (only a database edited by hand has one) falls back to
 * the walk. */
static void test_offset_seek(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 0);
    add_many(db, "exp1", 0, 3000);
    struct seq_span span = {0};
    long c0, cseek, cwalk, c;
    cJSON *first = trial_page_at(db, &span, 0, &c0);
    cJSON_Delete(first);
    static const int64_t offs[] = {1, 99, 1500, 2990, 2999, 3000, 5000};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        cJSON *seek = trial_page_at(db, &span, offs[i], &c);
        cJSON *walk = trial_page_at(db, NULL, offs[i], &c);
        assert_true(cJSON_Compare(seek, walk, 1));
        assert_int_equal(cJSON_GetArraySize(seek), offs[i] >= 3000 ? 0 : offs[i] > 2990 ? 3000 - offs[i] : 10);
        if (cJSON_GetArraySize(seek))
            assert_int_equal(first_seq(seek), offs[i]);
        cJSON_Delete(seek);
        cJSON_Delete(walk);
    }
    assert_int_equal(span.state, 1);
    assert_int_equal(span.lo, 0);
    assert_int_equal(span.hi, 2999);
    cJSON_Delete(trial_page_at(db, &span, 2900, &cseek));
    cJSON_Delete(trial_page_at(db, NULL, 2900, &cwalk));
    print_message("VM instructions: first page %ld, page at offset 2900 %ld (walked: %ld)\n", c0, cseek, cwalk);
    assert_true(cseek < 2 * c0);
    assert_true(cwalk > 3 * cseek); /* the measure sees a walk */
    /* trials added later: counted once, then seeked */
    add_many(db, "exp1", 3000, 100);
    cJSON *p = trial_page_at(db, &span, 3050, &c);
    assert_int_equal(cJSON_GetArraySize(p), 10);
    assert_int_equal(first_seq(p), 3050);
    cJSON_Delete(p);
    assert_int_equal(span.hi, 3099);
    /* a gap: the walk's rows */
    assert_int_equal(db_run(db, &e, "DELETE FROM metric WHERE trial_id = 'Z1000'", ""), 3);
    assert_int_equal(db_run(db, &e, "DELETE FROM trial WHERE id = 'Z1000'", ""), 1);
    struct seq_span fresh = {0};
    p = trial_page_at(db, &fresh, 1500, &c);
    assert_int_equal(fresh.state, -1);
    assert_int_equal(first_seq(p), 1501);
    cJSON_Delete(p);
    db_close(db);
}

/* n trials of exp1 (add_many) with final_metric = the SQL `metric` of sequence, every
 * one whose sequence % fail_mod is fail_rem FAILED, and every one whose sequence %
 * null_mod is null_rem without a final metric */
static struct db *mixed_history(int n, const char *metric, int fail_mod, int fail_rem, int null_mod, int null_rem)
{
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 0);
    add_many(db, "exp1", 0, n);
    char *sql = xasprintf("UPDATE trial SET final_metric = %s", metric);
    assert_int_equal(db_run(db, &e, sql, ""), n);
    free(sql);
    assert_int_equal(db_run(db, &e, "UPDATE trial SET status = 'FAILED' WHERE sequence % ? = ?", "ii", fail_mod,
                            fail_rem), (n - 1 - fail_rem) / fail_mod + 1);
    assert_int_equal(db_run(db, &e, "UPDATE trial SET final_metric = NULL WHERE sequence % ? = ?", "ii", null_mod,
                            null_rem), (n - 1 - null_rem) / null_mod + 1);
    return db;
}

struct sample {
    int64_t seq[64];
    int n;
};

static void sample_row(void *ctx, const struct param_row *r)
{
    struct sample *sm = ctx;
    if (sm->n < 64)
        sm->seq[sm->n++] = r->sequence;
}

/* VM instructions of one SQL statement run to its end */
static long sql_cost(struct db *db, const char *sql)
{
    long cost = 0;
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db->h, sql, -1, &st, NULL), SQLITE_OK);
    sqlite3_progress_handler(db->h, 1, count_step, &cost);
    while (sqlite3_step(st) == SQLITE_ROW)
        ;
    sqlite3_progress_handler(db->h, 0, NULL, NULL);
    sqlite3_finalize(st);
    return cost;
}

/* The counts per status kept by migration 017's triggers match the trials through
 * inserts, status changes and deletes; GET /job-statistics, the web UI's counts, its
 * table sorted by the final metric and an offset within one status cost a few rows per
 * 1024 trials or a page's rows, not a walk of every trial (VM instructions, compared
 * with one count of the trials in the index). */
static void test_counts_not_scans(void **s)
{
    (void)s;
    struct db *db = mixed_history(20000, "sequence + 0.5", 7, 3, 11, 5); /* 2857 FAILED */
    struct errbuf e;
    assert_int_equal(db_run(db, &e, "DELETE FROM metric WHERE trial_id = 'Z5000'", ""), 3);
    assert_int_equal(db_run(db, &e, "DELETE FROM trial WHERE id = 'Z5000'", ""), 1);
    assert_int_equal(db_run(db, &e, "UPDATE trial SET sequence = 20500 WHERE id = 'Z0004'", ""), 1);
    int64_t bad = -1;
    assert_int_equal(db_int(db, &e, &bad, "SELECT count(*) FROM (SELECT status, count(*) AS n FROM trial GROUP BY status"
                                          " EXCEPT SELECT status, sum(n) FROM trial_status_count GROUP BY status"
                                          " HAVING sum(n) > 0)", ""), 1);
    assert_int_equal(bad, 0);
    long full = sql_cost(db, "SELECT count(*) FROM trial WHERE experiment_id = 'exp1'");
    /* /job-statistics */
    struct status_count *c;
    int n;
    long cost = 0;
    sqlite3_progress_handler(db->h, 1, count_step, &cost);
    assert_int_equal(trials_per_status(db, "exp1", &c, &n, &e), 0);
    sqlite3_progress_handler(db->h, 0, NULL, NULL);
    assert_int_equal(n, 2);
    assert_string_equal(c[0].status, "FAILED");
    assert_int_equal(c[0].n, 2857);
    assert_string_equal(c[1].status, "SUCCEEDED");
    assert_int_equal(c[1].n, 20000 - 2857 - 1);
    status_counts_free(c, n);
    print_message("VM instructions: job statistics %ld, a count of the trials %ld\n", cost, full);
    assert_true(cost * 10 < full);
    /* nnictl's progress line: trials done and succeeded */
    cost = 0;
    sqlite3_progress_handler(db->h, 1, count_step, &cost);
    assert_int_equal(trials_count(db, "exp1", COUNT_DONE, NULL, &e), 19999);
    assert_int_equal(trials_count(db, "exp1", COUNT_SUCCEEDED, NULL, &e), 20000 - 2857 - 1);
    sqlite3_progress_handler(db->h, 0, NULL, NULL);
    assert_true(cost * 5 < full);
    /* the web UI's counts and its table sorted by the final metric */
    int64_t shown = 0, nometric = 0, want_nometric = 0;
    assert_int_equal(db_int(db, &e, &want_nometric, "SELECT count(*) FROM trial WHERE status = 'SUCCEEDED'"
                                                    " AND final_metric IS NULL", ""), 1);
    cost = 0;
    sqlite3_progress_handler(db->h, 1, count_step, &cost);
    assert_int_equal(trials_with_shown_metric(db, "exp1", &shown, &e), 0);
    assert_int_equal(trials_succeeded_without_metric(db, "exp1", &nometric, &e), 0);
    sqlite3_progress_handler(db->h, 0, NULL, NULL);
    assert_int_equal(nometric, want_nometric);
    assert_int_equal(shown, 20000 - 2857 - 1 - want_nometric);
    assert_true(cost * 2 < full);
    static struct trial rows[50];
    int64_t total;
    for (int desc = 0; desc < 2; desc++) {
        struct trial_query q = {.exp_id = "exp1", .sort = "metric", .desc = desc, .limit = 50};
        cost = 0;
        sqlite3_progress_handler(db->h, 1, count_step, &cost);
        assert_int_equal(webui_trial_page(db, &q, rows, &n, &total, &e), 0);
        sqlite3_progress_handler(db->h, 0, NULL, NULL);
        print_message("VM instructions: trials sorted by metric (%s) %ld\n", desc ? "desc" : "asc", cost);
        assert_true(cost < full);
        assert_int_equal(n, 50);
        assert_int_equal(total, 19999);
        assert_int_equal(rows[0].sequence, desc ? 19999 : 0);
        for (int i = 0; i < n; i++) {
            assert_string_equal(rows[i].status, "SUCCEEDED");
            if (i)
                assert_true(desc ? rows[i].final_metric < rows[i - 1].final_metric
                                 : rows[i].final_metric > rows[i - 1].final_metric);
        }
        for (int i = 0; i < n; i++)
            trial_clear(&rows[i]);
    }
    /* the valued part ends where the SQL says, then come the trials without a metric */
    struct trial_query q = {.exp_id = "exp1", .sort = "metric", .status = "SUCCEEDED", .offset = shown - 1, .limit = 2};
    assert_int_equal(webui_trial_page(db, &q, rows, &n, &total, &e), 0);
    assert_int_equal(n, 2);
    assert_true(rows[0].has_final_metric);
    assert_false(rows[1].has_final_metric);
    assert_int_equal(total, 20000 - 2857 - 1);
    trial_clear(&rows[0]);
    trial_clear(&rows[1]);
    /* GET /trial-jobs?status=SUCCEEDED&offset=..: the walk's rows, at a block's cost */
    static const int64_t offs[] = {1, 1000, 5000, 16000, 17141, 17142, 30000};
    long cdeep = 0;
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        struct page p;
        page_init(&p, "exp1");
        p.status = "SUCCEEDED";
        p.limit = 3;
        p.offset = offs[i];
        cJSON *got = read_cost(db, &p, 0, &cost);
        char *sql = xasprintf("SELECT sequence FROM trial WHERE experiment_id = 'exp1' AND status = 'SUCCEEDED'"
                              " ORDER BY sequence LIMIT 3 OFFSET %lld", (long long)offs[i]);
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db->h, sql, -1, &st, NULL), SQLITE_OK);
        int k = 0;
        while (sqlite3_step(st) == SQLITE_ROW)
            assert_int_equal((int64_t)cJSON_GetObjectItem(cJSON_GetArrayItem(got, k++), "sequenceId")->valuedouble,
                             sqlite3_column_int64(st, 0));
        assert_int_equal(cJSON_GetArraySize(got), k);
        sqlite3_finalize(st);
        if (offs[i] == 16000) {
            cdeep = cost;
            long cwalk = sql_cost(db, sql);
            print_message("VM instructions: status page at offset 16000 %ld (walked: %ld)\n", cdeep, cwalk);
            assert_true(cwalk > 4 * cdeep);
        }
        free(sql);
        cJSON_Delete(got);
    }
    /* the web UI's table by sequence at an offset, of all or of one status, both orders:
     * the rows LIMIT/OFFSET gives, at a block's cost */
    static const char *const statuses[] = {NULL, "SUCCEEDED", "FAILED"};
    static const int64_t woffs[] = {1, 1023, 1024, 2856, 5000, 16000, 17141, 19998, 19999, 25000};
    for (int si = 0; si < 3; si++)
        for (int desc = 0; desc < 2; desc++)
            for (size_t i = 0; i < sizeof woffs / sizeof woffs[0]; i++) {
                struct trial_query wq = {.exp_id = "exp1", .status = statuses[si], .desc = desc, .limit = 3,
                                         .offset = woffs[i]};
                cost = 0;
                sqlite3_progress_handler(db->h, 1, count_step, &cost);
                assert_int_equal(webui_trial_page(db, &wq, rows, &n, &total, &e), 0);
                sqlite3_progress_handler(db->h, 0, NULL, NULL);
                char *sql = xasprintf("SELECT sequence FROM trial WHERE experiment_id = 'exp1'%s%s%s ORDER BY sequence"
                                      " %s LIMIT 3 OFFSET %lld", statuses[si] ? " AND status = '" : "",
                                      statuses[si] ? statuses[si] : "", statuses[si] ? "'" : "", desc ? "DESC" : "ASC",
                                      (long long)woffs[i]);
                sqlite3_stmt *st;
                assert_int_equal(sqlite3_prepare_v2(db->h, sql, -1, &st, NULL), SQLITE_OK);
                int k = 0;
                while (sqlite3_step(st) == SQLITE_ROW) {
                    assert_true(k < n);
                    assert_int_equal(rows[k++].sequence, sqlite3_column_int64(st, 0));
                }
                assert_int_equal(k, n);
                sqlite3_finalize(st);
                for (k = 0; k < n; k++)
                    trial_clear(&rows[k]);
                if (woffs[i] == 16000 && si == 0) {
                    long cwalk = sql_cost(db, sql);
                    print_message("VM instructions: web UI page by sequence at offset 16000 (%s) %ld (walked: %ld)\n",
                                  desc ? "desc" : "asc", cost, cwalk);
                    assert_true(cwalk > 4 * cost);
                }
                free(sql);
            }
    /* the parameter chart's sample: the first shown trial at or after each of 50
     * points, a seek each */
    struct sample sm = {0};
    cost = 0;
    sqlite3_progress_handler(db->h, 1, count_step, &cost);
    assert_int_equal(param_sample(db, "exp1", shown, 50, sample_row, &sm, &e), 0);
    sqlite3_progress_handler(db->h, 0, NULL, NULL);
    print_message("VM instructions: parameter sample of %d %ld\n", sm.n, cost);
    assert_true(cost * 4 < full);
    assert_int_equal(sm.n, 50);
    for (int i = 0; i < sm.n; i++) {
        int64_t from = (int64_t)(20501.0 * i / 50), want = -1; /* sequences 0..20500 */
        assert_int_equal(db_int(db, &e, &want, "SELECT min(sequence) FROM trial WHERE status = 'SUCCEEDED'"
                                               " AND final_metric IS NOT NULL AND sequence >= ?", "i", from), 1);
        assert_int_equal(sm.seq[i], want);
    }
    db_close(db);
}

/* nnictl trial ls reads page after page (trials_page): the pages concatenate to the
 * order one query gives (ties by sequence), and --head's page costs its rows, not a
 * sort of every trial. */
static void test_trials_page(void **s)
{
    (void)s;
    struct db *db = mixed_history(3000, "sequence % 100", 9, 1, 13, 2); /* ties in the metric */
    struct errbuf e;
    static const char *const want_sql[] = {
        "SELECT sequence FROM trial WHERE status = 'SUCCEEDED' AND final_metric IS NOT NULL"
        " ORDER BY final_metric ASC, sequence",
        "SELECT sequence FROM trial ORDER BY sequence",
        "SELECT sequence FROM trial WHERE status = 'SUCCEEDED' AND final_metric IS NOT NULL"
        " ORDER BY final_metric DESC, sequence",
    };
    for (int order = -1; order <= 1; order++) {
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_prepare_v2(db->h, want_sql[order + 1], -1, &st, NULL), SQLITE_OK);
        struct trial last;
        int have = 0, total = 0;
        for (;;) {
            struct trial *ts;
            int n;
            assert_int_equal(trials_page(db, "exp1", order, have ? &last : NULL, 97, &ts, &n, &e), 0);
            for (int i = 0; i < n; i++) {
                assert_int_equal(sqlite3_step(st), SQLITE_ROW);
                assert_int_equal(ts[i].sequence, sqlite3_column_int64(st, 0));
                last.sequence = ts[i].sequence;
                last.final_metric = ts[i].final_metric;
                trial_clear(&ts[i]);
            }
            free(ts);
            have = 1;
            total += n;
            if (n < 97)
                break;
        }
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
        assert_true(total > 2000);
    }
    long full = sql_cost(db, "SELECT count(*) FROM trial WHERE experiment_id = 'exp1'"), cost = 0;
    struct trial *ts;
    int n;
    sqlite3_progress_handler(db->h, 1, count_step, &cost);
    assert_int_equal(trials_page(db, "exp1", 1, NULL, 10, &ts, &n, &e), 0);
    sqlite3_progress_handler(db->h, 0, NULL, NULL);
    print_message("VM instructions: trial ls --head 10 %ld, a count of the trials %ld\n", cost, full);
    assert_true(cost < full);
    for (int i = 0; i < n; i++)
        trial_clear(&ts[i]);
    free(ts);
    db_close(db);
}

/* An incremental read of exp1 after since, its upper end read (trials or metrics). */
static void page_since(struct db *db, struct page *p, int64_t since, int metrics)
{
    struct errbuf e;
    page_init(p, "exp1");
    p->incremental = 1;
    p->since = since;
    assert_int_equal(metrics ? metric_page_cursor(db, p, &p->upto, &e) : trial_page_cursor(db, p, &p->upto, &e), 0);
}

/* Incremental reads cost what their rows cost, not what the history holds. */
static void test_since_bounded(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 0);
    add_many(db, "exp1", 0, 3000);
    long c0, cinc, cm0, cminc;
    cJSON_Delete(trial_page_at(db, NULL, 0, &c0));
    struct page p;
    page_init(&p, "exp1");
    int64_t tc, mc;
    assert_int_equal(trial_page_cursor(db, &p, &tc, &e), 0);
    assert_int_equal(metric_page_cursor(db, &p, &mc, &e), 0);
    assert_int_equal(db_run(db, &e, "UPDATE trial SET message = 'm' WHERE sequence % 300 = 7", ""), 10);
    add_many(db, "exp1", 3000, 4); /* 12 new metrics */
    page_since(db, &p, tc, 0);
    cJSON *j = read_cost(db, &p, 0, &cinc);
    assert_int_equal(cJSON_GetArraySize(j), 14);
    cJSON_Delete(j);
    page_init(&p, "exp1");
    p.limit = 12;
    cJSON_Delete(read_cost(db, &p, 1, &cm0));
    page_since(db, &p, mc, 1);
    j = read_cost(db, &p, 1, &cminc);
    assert_int_equal(cJSON_GetArraySize(j), 12);
    cJSON_Delete(j);
    print_message("VM instructions: trials page of 10 %ld, since read of 14 %ld; metrics page of 12 %ld,"
                  " since read of 12 %ld\n", c0, cinc, cm0, cminc);
    assert_true(cinc < 3 * c0);
    assert_true(cminc < 3 * cm0);
    db_close(db);
}

static void test_metric_ids_never_reused(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 0);
    fx_add_experiment(db, "exp2", tmpdir, NULL, 2, 0);
    add_trials(db, "exp1", 0, 2);
    add_trials(db, "exp2", 0, 2); /* the newest metric ids */
    struct page p;
    page_init(&p, "exp1");
    int64_t cursor;
    assert_int_equal(metric_page_cursor(db, &p, &cursor, &e), 0);
    assert_int_equal(cursor, 16);
    /* deleting the experiment that holds the newest ids must not let exp1's next
     * metric take one of them: a reader holding `cursor` would never see it */
    assert_int_equal(db_run(db, &e, "DELETE FROM experiment WHERE id = 'exp2'", ""), 1);
    add_trials(db, "exp1", 2, 1);
    page_init(&p, "exp1");
    p.incremental = 1;
    p.since = cursor;
    assert_int_equal(metric_page_cursor(db, &p, &p.upto, &e), 0);
    cJSON *got = read_all(db, &p, 1);
    assert_int_equal(cJSON_GetArraySize(got), 4);
    cJSON_Delete(got);
    db_close(db);
}

static void test_enqueue_budget(void **s)
{
    (void)s;
    struct db *db = fx_open_fresh(tmpdir);
    struct errbuf e;
    fx_add_experiment(db, "exp1", tmpdir, NULL, 2, 3);
    add_trials(db, "exp1", 0, 2);
    assert_int_equal(db_run(db, &e, "UPDATE experiment SET next_sequence = 2", ""), 1);
    struct trial_new n = {.exp_id = "exp1", .platform = "local", .parameters = "{\"x\":9}", .source = "customized",
                          .parameter_id = -1, .max_attempts = 2, .reason = "test"};
    char id[6];
    int64_t seq = -1;
    int replaced = -1;
    assert_int_equal(trial_enqueue(db, &n, id, &seq, &replaced, &e), 1);
    assert_int_equal(seq, 2);
    struct trial t;
    assert_int_equal(trial_load(db, id, &t, &e), 1);
    assert_string_equal(t.status, "WAITING");
    assert_int_equal(t.parameter_id, -1);
    char *rec = nni_param_record(&t);
    assert_string_equal(rec, "{\"parameter_id\":null,\"parameter_source\":\"customized\",\"parameters\":{\"x\":9},"
                             "\"parameter_index\":0}");
    free(rec);
    trial_clear(&t);
    assert_int_equal(replaced, 0);
    /* 3 trials now: the budget is used */
    assert_int_equal(trial_enqueue(db, &n, id, &seq, &replaced, &e), 0);
    int64_t count = 0;
    assert_int_equal(db_int(db, &e, &count, "SELECT count(*) FROM trial", ""), 1);
    assert_int_equal(count, 3);
    /* a budget held by trials the scheduler queued ahead (never taken by a worker): the
     * newest one, with the tuner's latest index, becomes the customized trial */
    assert_int_equal(db_run(db, &e, "UPDATE experiment SET max_trial_number = 5, next_sequence = 5", ""), 1);
    for (int i = 3; i < 5; i++) {
        char qid[8];
        snprintf(qid, sizeof qid, "Q000%d", i);
        assert_int_equal(db_run(db, &e, "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameter_source,"
                                        " parameters, status, platform, submit_time, updated_at)"
                                        " VALUES (?, 'exp1', ?, ?, 'algorithm', '{\"x\":1}', 'WAITING', 'local', 1, 1)",
                                "sii", qid, (int64_t)i, (int64_t)i), 1);
    }
    assert_int_equal(db_run(db, &e, "UPDATE trial SET lease_owner = 'w:1:1' WHERE id = 'Q0003'", ""), 1);
    assert_int_equal(trial_enqueue(db, &n, id, &seq, &replaced, &e), 1);
    assert_int_equal(replaced, 1);
    assert_string_equal(id, "Q0004");
    assert_int_equal(seq, 4);
    assert_int_equal(trial_load(db, id, &t, &e), 1);
    assert_string_equal(t.parameter_source, "customized");
    assert_int_equal(t.parameter_id, -1);
    assert_string_equal(t.parameters, "{\"x\":9}");
    trial_clear(&t);
    assert_int_equal(db_int(db, &e, &count, "SELECT count(*) FROM trial", ""), 1);
    assert_int_equal(count, 5);
    /* nothing more to take the place of: Q0003 is a worker's, and not the latest index */
    assert_int_equal(trial_enqueue(db, &n, id, &seq, &replaced, &e), 0);
    db_close(db);
}

int main(void)
{
    char tmpl[] = "/tmp/trialq-test-history-XXXXXX";
    tmpdir = mkdtemp(tmpl);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_text),
        cmocka_unit_test(test_pages_concatenate),
        cmocka_unit_test(test_since),
        cmocka_unit_test(test_offset_seek),
        cmocka_unit_test(test_counts_not_scans),
        cmocka_unit_test(test_trials_page),
        cmocka_unit_test(test_since_bounded),
        cmocka_unit_test(test_metric_ids_never_reused),
        cmocka_unit_test(test_enqueue_budget),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_rf(tmpdir);
    return rc;
}
