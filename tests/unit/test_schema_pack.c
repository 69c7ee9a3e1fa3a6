/* test_schema_pack.c: a pack is hostile data (schema/pack.c, issue 29). A pack saved
 * by pack_create is crafted with a second connection, then loaded as nnictl experiment
 * load does (pack_open, a dry run, the load) into a database holding another
 * experiment: tables turned into views whose rows change between the checks and the
 * copy (changes(), last_insert_rowid(), random()), a trigger, an index on an
 * expression, a table or view that is not a pack's, a column whose type turns the
 * checked experiment id into another experiment's, a missing or generated column. Each is refused,
 * naming the object or column, and stores nothing: no FINAL metric of 424242 on the
 * other experiment's trial, no trial_dir of /etc, no trial in the other experiment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/pack.h"
#include "tests/unit/db_fixture.h"
#include "tests/unit/unit_tmpdir.h"

static char tmpdir[] = "/tmp/trialq-test-pack-XXXXXX";

#define SRC "aaaaaaaa"   /* the saved experiment */
#define OTHER "bbbbbbbb" /* an experiment of the loading database */
#define OTHER_TRIAL "Other"

static int no_shared_storage(const char *platform)
{
    (void)platform;
    return 0;
}

static void sql(struct db *db, const char *s)
{
    char *err = NULL;
    if (sqlite3_exec(db->h, s, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", s, err);
}

static void add_trial(struct db *db, const char *exp, const char *id, int seq, const char *dir)
{
    struct errbuf e;
    assert_int_equal(db_run(db, &e,
        "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters, status, platform, submit_time,"
        " updated_at, trial_dir) VALUES (?, ?, ?, ?, '{\"x\":1}', 'SUCCEEDED', 'local', 1, 1, ?)",
        "ssiis", id, exp, (int64_t)seq, (int64_t)seq, dir), 1);
    assert_int_equal(db_run(db, &e,
        "INSERT INTO metric(trial_id, type, sequence, value, default_value, time) VALUES (?, 'FINAL', 0, '0.5', 0.5, 1)",
        "s", id), 1);
    assert_int_equal(db_event(db, &e, exp, id, "trial", "RUNNING", "SUCCEEDED", "done"), 0);
}

/* A pack of experiment exp (trials Tone1 and Ttwo2 with their dirs under its directory,
 * a FINAL metric each, one file), saved as pack_create does; its path (malloc'd). */
static char *make_pack(const char *exp)
{
    static int n;
    struct db *db = fx_open_fresh(tmpdir);
    char *dir = xasprintf("/old/home/%s", exp);
    fx_add_experiment(db, exp, dir, NULL, 1, 0);
    char *d1 = xasprintf("%s/trials/Tone1", dir), *d2 = xasprintf("%s/trials/Ttwo2", dir);
    add_trial(db, exp, "Tone1", 0, d1);
    add_trial(db, exp, "Ttwo2", 1, d2);
    char *path = xasprintf("%s/pack%d.sqlite", tmpdir, n++);
    struct pack *p = NULL;
    struct errbuf e;
    assert_int_equal(pack_create(db, exp, path, &p, &e), 0);
    assert_int_equal(pack_add_file(p, "experiment", "trials/Tone1/parameter.cfg", 0600, "{}", 2, &e), 0);
    assert_int_equal(pack_finish(p, &e), 0);
    db_close(db);
    free(d1);
    free(d2);
    free(dir);
    return path;
}

/* The loading database: experiment OTHER id with its trial OTHER_TRIAL (sequence 100),
 * and last an event of id 1000 (the connection's last insert). */
static struct db *target(const char *other)
{
    struct db *db = fx_open_fresh(tmpdir);
    fx_add_experiment(db, other, "/home/other", NULL, 1, 0);
    struct errbuf e;
    assert_int_equal(db_run(db, &e,
        "INSERT INTO trial(id, experiment_id, sequence, parameters, status, platform, submit_time, updated_at,"
        " trial_dir) VALUES (?, ?, 100, '{}', 'SUCCEEDED', 'local', 1, 1, '/home/other/trials/Other')",
        "ss", OTHER_TRIAL, other), 1);
    assert_int_equal(db_run(db, &e, "INSERT INTO event(id, time, experiment_id, entity, reason)"
                                    " VALUES (1000, 1, ?, 'experiment', 'created')", "s", other), 1);
    return db;
}

/* Runs statements on the pack file with a connection of its own. */
static void craft(const char *path, const char *stmts)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(h, stmts, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("crafting %s: %s", stmts, err);
    sqlite3_close(h);
}

/* The pack's table turned into a view of its rows (the table renamed table_data),
 * columns replaced by expressions: view_over(path, table, column, expr, ..., NULL). */
static void view_over(const char *path, const char *table, ...)
{
    sqlite3 *h = NULL;
    assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(h, "SELECT name FROM pragma_table_info(?) ORDER BY cid", -1, &st, NULL),
                     SQLITE_OK);
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    struct strbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "ALTER TABLE %s RENAME TO %s_data; CREATE VIEW %s AS SELECT ", table, table, table);
    int first = 1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 0), *expr = NULL;
        va_list ap;
        va_start(ap, table);
        for (const char *col; !expr && (col = va_arg(ap, const char *));) {
            const char *x = va_arg(ap, const char *);
            if (strcmp(col, c) == 0)
                expr = x;
        }
        va_end(ap);
        sb_printf(&sb, "%s%s%s%s%s", first ? "" : ", ", expr ? "(" : "", expr ? expr : c, expr ? ") AS " : "",
                  expr ? c : "");
        first = 0;
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    sb_printf(&sb, " FROM %s_data", table);
    craft(path, sb.buf);
    sb_free(&sb);
}

/* nnictl experiment load's sequence on the rows: open, a dry run, the load. */
static int load(struct db *db, const char *path, struct errbuf *e)
{
    struct pack *p = NULL;
    char *id = NULL, *dir = NULL, *config = NULL;
    int rc = pack_open(db, path, &p, &id, e);
    if (rc == 0)
        rc = pack_experiment_info(p, &dir, &config, e);
    if (rc == 0)
        rc = pack_load_rows(p, "/new/home/x", "{}", 1, no_shared_storage, e);
    if (rc == 0)
        rc = pack_load_rows(p, "/new/home/x", "{}", 0, no_shared_storage, e);
    pack_close(p);
    free(id);
    free(dir);
    free(config);
    return rc;
}

static int64_t count(struct db *db, const char *q, const char *arg)
{
    struct errbuf e;
    int64_t n = -1;
    assert_int_equal(db_int(db, &e, &n, q, "s", arg), 1);
    return n;
}

/* What a hostile pack must never leave: a metric on the other experiment's trial, a
 * trial dir outside the new experiment directory, a row added to the other experiment. */
static void nothing_foreign(struct db *db, const char *other)
{
    struct errbuf e;
    char *got = NULL;
    if (db_text(db, &e, &got, "SELECT 'metric ' || value || ' (' || type || ') on trial ' || trial_id FROM metric"
                             " WHERE trial_id = ?", "s", OTHER_TRIAL) > 0)
        fail_msg("stored on the other experiment's trial: %s", got);
    if (db_text(db, &e, &got, "SELECT 'trial ' || id || ' added to experiment ' || experiment_id FROM trial"
                             " WHERE experiment_id = ? AND id <> ?", "ss", other, OTHER_TRIAL) > 0)
        fail_msg("%s", got);
    if (db_text(db, &e, &got, "SELECT 'trial ' || id || ': trial_dir ' || trial_dir FROM trial WHERE experiment_id <> ?"
                             " AND trial_dir IS NOT NULL AND trial_dir NOT LIKE '/new/home/x/trials/%'", "s", other) > 0)
        fail_msg("stored outside the new experiment directory: %s", got);
    free(got);
}

/* Refused with msg in the error; nothing of the pack stored. */
static void refused(struct db *db, const char *path, const char *msg)
{
    struct errbuf e = {0};
    int rc = load(db, path, &e);
    nothing_foreign(db, OTHER);
    if (rc == 0)
        fail_msg("the pack was loaded; expected: %s", msg);
    if (!strstr(e.msg, msg))
        fail_msg("error '%s' does not say '%s'", e.msg, msg);
    assert_int_equal(count(db, "SELECT count(*) FROM experiment WHERE id = ?", SRC), 0);
}

/* refused, into a database of its own; path is freed */
static void refused_fresh(char *path, const char *msg)
{
    struct db *db = target(OTHER);
    refused(db, path, msg);
    db_close(db);
    free(path);
}

static void test_genuine_pack_loads(void **state)
{
    (void)state;
    char *path = make_pack(SRC);
    struct db *db = target(OTHER);
    struct errbuf e;
    if (load(db, path, &e) < 0)
        fail_msg("%s", e.msg);
    nothing_foreign(db, OTHER);
    assert_int_equal(count(db, "SELECT count(*) FROM trial WHERE experiment_id = ?", SRC), 2);
    assert_int_equal(count(db, "SELECT count(*) FROM trial WHERE experiment_id = ? AND trial_dir ="
                               " '/new/home/x/trials/' || id", SRC), 2);
    assert_int_equal(count(db, "SELECT count(*) FROM metric JOIN trial t ON t.id = trial_id"
                               " WHERE t.experiment_id = ? AND value = '0.5'", SRC), 2);
    assert_int_equal(count(db, "SELECT count(*) FROM experiment WHERE id = ? AND exp_dir = '/new/home/x'", SRC), 1);
    db_close(db);
    free(path);
}

/* changes() is the row count of the connection's last statement: 1 when the checks read
 * the view (the last write was one row), 2 right after the two trials were copied */
static void test_view_changes(void **state)
{
    (void)state;
    char *path = make_pack(SRC);
    view_over(path, "metric", "trial_id",
              "CASE WHEN trial_id = 'Tone1' AND changes() >= 2 THEN '" OTHER_TRIAL "' ELSE trial_id END", "value",
              "CASE WHEN trial_id = 'Tone1' THEN '424242' ELSE value END", NULL);
    refused_fresh(path, "unexpected view 'metric' (a pack holds only the tables");
}

/* last_insert_rowid() is the experiment row's rowid (small) when the trials are copied,
 * the event's (1000 and up) when they are checked: trial_dir NULL for the checks, /etc
 * for the copy */
static void test_view_last_insert_rowid(void **state)
{
    (void)state;
    char *path = make_pack(SRC);
    view_over(path, "trial", "trial_dir",
              "CASE WHEN id = 'Tone1' AND last_insert_rowid() < 100 THEN '/etc' WHEN id = 'Tone1' THEN NULL"
              " ELSE trial_dir END", NULL);
    refused_fresh(path, "unexpected view 'trial'");
}

/* random(): each read of the view chooses again; a load passes the checks and stores
 * the other trial's metric one time in eight. Tried until refused or 100 loads. */
static void test_view_random(void **state)
{
    (void)state;
    char *path = make_pack(SRC);
    view_over(path, "metric", "trial_id",
              "CASE WHEN trial_id = 'Tone1' AND random() % 2 = 0 THEN '" OTHER_TRIAL "' ELSE trial_id END", "value",
              "CASE WHEN trial_id = 'Tone1' THEN '424242' ELSE value END", NULL);
    struct db *db = target(OTHER);
    struct errbuf e = {0};
    for (int i = 0; i < 100; i++) {
        int rc = load(db, path, &e);
        nothing_foreign(db, OTHER);
        if (rc < 0 && strstr(e.msg, "unexpected view 'metric'"))
            break;
        if (rc == 0)
            sql(db, "DELETE FROM experiment WHERE id = '" SRC "'");
    }
    if (!strstr(e.msg, "unexpected view 'metric'"))
        fail_msg("the view was not refused (last error: %s)", e.msg);
    db_close(db);
    free(path);
}

/* Packs crafted by one statement each, and what their refusal says. */
struct crafted {
    const char *sql, *msg;
};

static void refused_each(const struct crafted *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *path = make_pack(SRC);
        craft(path, cases[i].sql);
        refused_fresh(path, cases[i].msg);
    }
}

/* Objects a pack saved by trialq never holds. */
static void test_unexpected_objects(void **state)
{
    (void)state;
    static const struct crafted cases[] = {
        {"CREATE TRIGGER t_add AFTER INSERT ON file BEGIN SELECT 1; END", "unexpected trigger 't_add'"},
        {"CREATE INDEX by_dir ON trial(lower(trial_dir))", "unexpected index 'by_dir'"},
        {"CREATE INDEX by_id ON trial(id)", "unexpected index 'by_id'"},
        {"CREATE TABLE extra(x)", "unexpected table 'extra'"},
        {"ANALYZE", "unexpected table 'sqlite_stat1'"},
        {"CREATE VIEW extra AS SELECT 1", "unexpected view 'extra'"},
        {"ALTER TABLE meta RENAME TO meta_data; CREATE VIEW meta AS SELECT * FROM meta_data",
         "unexpected view 'meta'"},
        {"ALTER TABLE file RENAME TO file_data; CREATE VIEW file AS SELECT * FROM file_data",
         "unexpected view 'file'"},
        {"ALTER TABLE event RENAME TO event_data", "unexpected table 'event_data'"},
        {"DROP TABLE event", "no table 'event'"},
    };
    refused_each(cases, sizeof cases / sizeof cases[0]);
}

/* A column the checks need is missing, a generated column: refused naming the column
 * (not with an SQL error half-way). */
static void test_columns(void **state)
{
    (void)state;
    static const struct crafted cases[] = {
        {"ALTER TABLE trial DROP COLUMN experiment_id", "table trial has no column experiment_id"},
        {"ALTER TABLE event DROP COLUMN reason", "table event has no column reason"},
        {"ALTER TABLE trial ADD COLUMN url_of AS ('/etc/' || id)", "table trial: generated column 'url_of'"},
    };
    refused_each(cases, sizeof cases / sizeof cases[0]);
}

/* Files: one stored as a file and as a directory is refused; names that only share a
 * beginning ('lib', 'lib-x/', 'lib.txt') are not; 20,000 files are checked in a moment
 * (each file's neighbours by an index, not all pairs: that took minutes). */
static void test_files(void **state)
{
    (void)state;
    static const struct crafted cases[] = {
        {"INSERT INTO file VALUES ('experiment', 'trials', 420, x'41')",
         "file 'trials' is stored twice, or as a file and as the directory of 'trials/Tone1/parameter.cfg'"},
        {"INSERT INTO file VALUES ('experiment', 'trials/Tone1', 420, x'41')",
         "file 'trials/Tone1' is stored twice, or as a file and as the directory of 'trials/Tone1/parameter.cfg'"},
    };
    refused_each(cases, sizeof cases / sizeof cases[0]);
    char *path = make_pack(SRC);
    craft(path, "INSERT INTO file VALUES ('code', 'lib', 420, x'41'), ('code', 'lib-x/a', 420, x'41'),"
                " ('code', 'lib.txt', 420, x'41'), ('code', 'lib0', 420, x'41');"
                "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20000)"
                " INSERT INTO file SELECT 'experiment', 'trials/T' || (i / 10) || '/f' || i, 420, x'41' FROM c");
    struct db *db = target(OTHER);
    struct errbuf e;
    int64_t t0 = now_ms();
    if (load(db, path, &e) < 0)
        fail_msg("%s", e.msg);
    int64_t took = now_ms() - t0;
    if (took > 20000)
        fail_msg("loading a pack of 20,000 files took %lld ms", (long long)took);
    db_close(db);
    free(path);
}

/* The pack's trial.experiment_id declared INTEGER: the pack's id 1e000007 and the
 * stored 10000000 compare equal there (numeric affinity), and 10000000 is another
 * experiment of this database. The checks must see what the copy stores. */
static void test_column_type(void **state)
{
    (void)state;
    char *path = make_pack("1e000007");
    craft(path, "CREATE TABLE trial_int AS SELECT * FROM trial WHERE 0;"
                "PRAGMA writable_schema = ON;"
                "UPDATE sqlite_master SET sql = replace(sql, 'experiment_id TEXT', 'experiment_id INT')"
                " WHERE name = 'trial_int';");
    craft(path, "INSERT INTO trial_int SELECT * FROM trial; DROP TABLE trial;"
                "ALTER TABLE trial_int RENAME TO trial;");
    struct db *db = target("10000000");
    struct errbuf e = {0};
    int rc = load(db, path, &e);
    nothing_foreign(db, "10000000");
    if (rc == 0)
        fail_msg("loaded: the pack's trials went to experiment 10000000");
    assert_non_null(strstr(e.msg, "trial Tone1: experiment_id '10000000' is not the pack's experiment 1e000007"));
    db_close(db);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_genuine_pack_loads), cmocka_unit_test(test_view_changes),
        cmocka_unit_test(test_view_last_insert_rowid), cmocka_unit_test(test_view_random),
        cmocka_unit_test(test_unexpected_objects), cmocka_unit_test(test_columns), cmocka_unit_test(test_files),
        cmocka_unit_test(test_column_type),
    };
    return run_in_tmpdir(tmpdir, tests);
}
