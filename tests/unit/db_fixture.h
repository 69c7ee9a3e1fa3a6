/* db_fixture.h: what the database tests start from, in one place: a fresh database file
 * in the test's temporary directory, an experiment row, WAITING trial rows. Each helper
 * fails the running cmocka test when the database refuses. Linked into every
 * tests/unit/test_*.c that includes it (tests/CMakeLists.txt). */
#ifndef TRIALQ_TESTS_DB_FIXTURE_H
#define TRIALQ_TESTS_DB_FIXTURE_H

#include <stdint.h>

#include "schema/schema.h"

/* fx_db_path DIR: a database path in DIR not used before by this process (malloc'd) */
char *fx_db_path(const char *dir);

/* fx_open_fresh DIR: a new, migrated database at fx_db_path(DIR) */
struct db *fx_open_fresh(const char *dir);

/* fx_add_experiment: experiment ID on the local platform, its directory DIR, started
 * now, seed 1, token "t", search space "{}", CONFIG ("{}" when NULL), CONCURRENCY, and
 * MAX_TRIALS (0: no limit) */
void fx_add_experiment(struct db *db, const char *id, const char *dir, const char *config, int concurrency,
                       int64_t max_trials);

/* fx_add_trials: N WAITING trials of EXP on the local platform, ids EXP0000, EXP0001, ...
 * with sequence and parameter id 0, 1, ..., parameters "{}", MAX_ATTEMPTS attempts each */
void fx_add_trials(struct db *db, const char *exp, int n, int max_attempts);

#endif
