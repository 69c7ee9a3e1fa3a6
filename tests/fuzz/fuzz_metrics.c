/* fuzz_metrics.c: NNI's two metric framings as a worker reads them (workers/collect.c):
 * the input is both a trial's .nni/metrics file ("ME" + 6 digits + payload records) and
 * its stdout (NNISDK_MEb'<json>' lines), parsed and stored into a real database (one
 * temporary SQLite file per process, with one experiment and one trial). Each input
 * runs in a transaction that is rolled back, so no input sees another's rows. */
#include "tests/fuzz/fuzz.h"

#include "workers/worker.h"

static struct db *db;

static void setup(void)
{
    struct errbuf e;
    char *p = xasprintf("%s/fuzz.db", fuzz_dir());
    if (db_open(p, &db, &e) < 0)
        abort();
    free(p);
    struct experiment x = {0};
    x.id = "fuzzexp";
    x.config = "{}";
    x.search_space = "{}";
    x.platform = "local";
    x.exp_dir = (char *)fuzz_dir();
    x.start_time = now_ms();
    x.concurrency = 1;
    x.seed = 1;
    x.token = "t";
    if (exp_insert(db, &x, &e) < 0 ||
        db_run(db, &e, "INSERT INTO trial(id, experiment_id, sequence, parameter_id, parameters, platform,"
                       " max_attempts, submit_time, updated_at, status) VALUES ('fuzztrial', 'fuzzexp', 0, 0,"
                       " '{}', 'local', 1, ?, ?, 'RUNNING')", "ii", now_ms(), now_ms()) != 1)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    if (!db)
        setup();
    struct errbuf e;
    if (db_begin(db, &e) < 0)
        abort();
    size_t used = 0;
    if (collect_metrics_buf(db, "fuzztrial", 1, (const char *)data, size, &used, &e) < 0 || used > size)
        abort(); /* a bad record is skipped, never a failure to store */
    used = 0;
    if (collect_stdout_buf(db, "fuzztrial", 1, (const char *)data, size, 0, &used, &e) < 0 || used > size)
        abort();
    if (collect_stdout_buf(db, "fuzztrial", 1, (const char *)data, size, 1, &used, &e) < 0 || used != size)
        abort(); /* at the end, every line is read */
    db_rollback(db);
    return 0;
}
