/* db_fixture.c: see db_fixture.h */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "tests/unit/db_fixture.h"

char *fx_db_path(const char *dir)
{
    static int n;
    return xasprintf("%s/fx%d.db", dir, n++);
}

struct db *fx_open_fresh(const char *dir)
{
    char *p = fx_db_path(dir);
    struct db *db = NULL;
    struct errbuf e;
    assert_int_equal(db_open(p, &db, &e), 0);
    free(p);
    return db;
}

void fx_add_experiment(struct db *db, const char *id, const char *dir, const char *config, int concurrency,
                       int64_t max_trials)
{
    struct experiment x = {0};
    x.id = (char *)id;
    x.config = (char *)(config ? config : "{}");
    x.search_space = "{}";
    x.platform = "local";
    x.exp_dir = (char *)dir;
    x.start_time = now_ms();
    x.concurrency = concurrency;
    x.seed = 1;
    x.token = "t";
    x.max_trial_number = max_trials;
    struct errbuf e;
    assert_int_equal(exp_insert(db, &x, &e), 0);
}

void fx_add_trials(struct db *db, const char *exp, int n, int max_attempts)
{
    struct errbuf e;
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "%s%04d", exp, i);
        assert_int_equal(db_run(db, &e,
            "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters, platform,"
            " max_attempts, submit_time, updated_at) VALUES (?,?,?,?,'{}','local',?,?,?)",
            "ssiidii", id, exp, (int64_t)i, (int64_t)i, max_attempts, now_ms(), now_ms()), 1);
    }
}
