/* nnidb.c: <exp_dir>/db/nni.sqlite in NNI's schema (nnidb.h). */
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "schema/nnidb.h"
#include "schema/nnijson.h"

/* NNI's three tables and their indexes, as its manager creates them on create */
static const char NNI_TABLES[] =
    "CREATE TABLE IF NOT EXISTS TrialJobEvent (timestamp integer, trialJobId text, event text, data text,"
    " logPath text, sequenceId integer, message text, environmentId text);"
    "CREATE INDEX IF NOT EXISTS TrialJobEvent_trialJobId ON TrialJobEvent (trialJobId);"
    "CREATE INDEX IF NOT EXISTS TrialJobEvent_event ON TrialJobEvent (event);"
    "CREATE TABLE IF NOT EXISTS MetricData (timestamp integer, trialJobId text, parameterId text, type text,"
    " sequence integer, data text);"
    "CREATE INDEX IF NOT EXISTS MetricData_trialJobId ON MetricData (trialJobId);"
    "CREATE INDEX IF NOT EXISTS MetricData_type ON MetricData (type);"
    "CREATE TABLE IF NOT EXISTS ExperimentProfile (params text, id text, execDuration integer,"
    " startTime integer, endTime integer, logDir text, nextSequenceId integer, revision integer);"
    "CREATE INDEX IF NOT EXISTS ExperimentProfile_id ON ExperimentProfile (id);";

char *nnidb_path(const char *exp_dir)
{
    return xasprintf("%s/db/nni.sqlite", exp_dir);
}

static int fail(sqlite3 *h, const char *path, const char *what, struct errbuf *e)
{
    errf(e, "%s: %s: %s", path, what, h ? sqlite3_errmsg(h) : "out of memory");
    sqlite3_close(h);
    return -1;
}

int nnidb_last_params(const char *path, cJSON **out, struct errbuf *e)
{
    *out = NULL;
    sqlite3 *h = NULL;
    if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(h);
        return 0; /* no file yet */
    }
    sqlite3_busy_timeout(h, 5000);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(h, "SELECT params FROM ExperimentProfile ORDER BY revision DESC LIMIT 1", -1, &st,
                           NULL) != SQLITE_OK) {
        sqlite3_close(h);
        return 0; /* no table yet */
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
        *out = cJSON_Parse((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return fail(h, path, "reading ExperimentProfile", e);
    sqlite3_close(h);
    return cJSON_IsObject(*out) ? 1 : (cJSON_Delete(*out), *out = NULL, 0);
}

int nnidb_store(const char *path, const struct experiment *x, cJSON *params, struct errbuf *e)
{
    cJSON *profile = nni_profile_json(x, params); /* the live values into params */
    char *text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(profile, "params"));
    cJSON_Delete(profile);
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    int made = slash ? mkdir_p(dir, 0700) : 0;
    free(dir);
    sqlite3 *h = NULL;
    int rc = -1;
    if (made < 0)
        errf(e, "%s: cannot create its directory", path);
    else if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
        fail(h, path, "open", e), h = NULL;
    else if (sqlite3_busy_timeout(h, 5000), sqlite3_exec(h, NNI_TABLES, NULL, NULL, NULL) != SQLITE_OK)
        fail(h, path, "creating NNI's tables", e), h = NULL;
    else {
        /* one statement: the revision and the row together */
        sqlite3_stmt *st = NULL;
        const char *sql = "INSERT INTO ExperimentProfile (params, id, execDuration, startTime, endTime, logDir,"
                          " nextSequenceId, revision) SELECT ?, ?, ?, ?, ?, ?, ?,"
                          " coalesce(max(revision), 0) + 1 FROM ExperimentProfile";
        if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK) {
            fail(h, path, "insert", e), h = NULL;
        } else {
            sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, x->id, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 3, x->exec_duration_ms / 1000);
            sqlite3_bind_int64(st, 4, x->start_time);
            if (x->end_time)
                sqlite3_bind_int64(st, 5, x->end_time);
            sqlite3_bind_text(st, 6, x->exp_dir, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 7, x->next_sequence);
            int s = sqlite3_step(st);
            sqlite3_finalize(st);
            if (s != SQLITE_DONE)
                fail(h, path, "insert", e), h = NULL;
            else
                rc = 0;
        }
    }
    if (h)
        sqlite3_close(h);
    free(text);
    return rc;
}
