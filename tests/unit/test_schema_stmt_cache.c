/* db_prep's statement cache (schema/db.c): a statement is found again by the address of
 * the text it was asked with, but only when the text there is still the same: a buffer
 * reused for another query gets that query's statement, and the cache stays right
 * across evictions (more texts than it holds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "schema/db.h"
#include "tests/unit/db_fixture.h"

/* The one integer the statement for sql answers. */
static long long answer(struct db *db, const char *sql)
{
    struct errbuf e;
    sqlite3_stmt *st = db_prep(db, sql, &e);
    if (!st)
        fail_msg("%s", e.msg);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_reset(st);
    return v;
}

static void test_same_address_other_text(void **state)
{
    (void)state;
    char dir[] = "/tmp/trialq-test-stmt-cache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct db *db = fx_open_fresh(dir);
    char buf[64];
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 100; k++) { /* more texts than the cache holds (64) */
            snprintf(buf, sizeof buf, "SELECT %d", k);
            assert_int_equal(answer(db, buf), k);
            assert_int_equal(answer(db, buf), k); /* again, at the same address */
            assert_int_equal(answer(db, "SELECT 7"), 7);
        }
    }
    /* two buffers swapping texts */
    char a[32] = "SELECT 1", b[32] = "SELECT 2";
    assert_int_equal(answer(db, a), 1);
    assert_int_equal(answer(db, b), 2);
    strcpy(a, "SELECT 2");
    strcpy(b, "SELECT 1");
    assert_int_equal(answer(db, a), 2);
    assert_int_equal(answer(db, b), 1);
    db_close(db);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_address_other_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
