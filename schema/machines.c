/* machines.c: the machines an experiment runs on, with their health and GPUs, for
 * GET /api/v1/nni/machines and `nnictl experiment machines` (both read this). Machine
 * rows are shared by every experiment of the database (one per host and platform); an
 * experiment's are those its trainingService names (machines_of: config_ts_machines of
 * config/, which knows the platforms): the local host, each machineList entry. Machines that see one home directory (machine.home_id: an NFS home) are named
 * in each other's "sharedHome". */
#include <stdlib.h>
#include <string.h>

#include "schema/nnijson.h"

static void add_gpus(struct db *db, int64_t machine_id, cJSON *m)
{
    struct errbuf e;
    cJSON *gpus = cJSON_AddArrayToObject(m, "gpus");
    sqlite3_stmt *st = db_query(db, &e,
        "SELECT g.idx, g.name, g.memory_total, g.memory_used, g.utilization, g.active_procs,"
        " (SELECT coalesce(sum(c.share), 0) FROM gpu_claim c JOIN trial t ON t.id = c.trial_id"
        "  WHERE c.machine_id = g.machine_id AND c.gpu_idx = g.idx AND t.status IN " SQL_TRIAL_ACTIVE ")"
        " FROM gpu g WHERE g.machine_id = ? ORDER BY g.idx", "i", machine_id);
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        cJSON *g = cJSON_CreateObject();
        cJSON_AddNumberToObject(g, "index", (double)col_i64(st, 0));
        if (sqlite3_column_type(st, 1) != SQLITE_NULL)
            cJSON_AddStringToObject(g, "name", (const char *)sqlite3_column_text(st, 1));
        cJSON_AddNumberToObject(g, "memoryTotalMiB", (double)col_i64(st, 2));
        cJSON_AddNumberToObject(g, "memoryUsedMiB", (double)col_i64(st, 3));
        cJSON_AddNumberToObject(g, "utilization", sqlite3_column_double(st, 4));
        cJSON_AddNumberToObject(g, "activeProcesses", (double)col_i64(st, 5));
        cJSON_AddNumberToObject(g, "trialShare", sqlite3_column_double(st, 6));
        cJSON_AddItemToArray(gpus, g);
    }
    if (st)
        sqlite3_reset(st);
}

static void add_rows(struct db *db, cJSON *out, const char *platform, const char *host, int port, const char *user)
{
    struct errbuf e;
    static const char sql[] =
        "SELECT id, platform, host, port, user, healthy, last_error, last_seen, gpu_checked, gpu_error, home_id"
        " FROM machine"
        " WHERE experiment_id IS NULL AND platform = ?1 AND (?2 IS NULL OR (host = ?2 AND coalesce(port, 0) = ?3"
        " AND coalesce(user, '') = coalesce(?4, ''))) ORDER BY host, port";
    sqlite3_stmt *st = host ? db_query(db, &e, sql, "ssds", platform, host, port, user)
                            : db_query(db, &e, sql, "snnn", platform);
    int64_t *ids = NULL;
    cJSON **rows = NULL;
    int n = 0, cap = 0;
    while (st && sqlite3_step(st) == SQLITE_ROW) {
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            ids = xrealloc(ids, sizeof *ids * (size_t)cap);
            rows = xrealloc(rows, sizeof *rows * (size_t)cap);
        }
        cJSON *m = cJSON_CreateObject();
        ids[n] = col_i64(st, 0);
        cJSON_AddStringToObject(m, "platform", (const char *)sqlite3_column_text(st, 1));
        cJSON_AddStringToObject(m, "host", (const char *)sqlite3_column_text(st, 2));
        if (sqlite3_column_type(st, 3) != SQLITE_NULL && col_i64(st, 3) > 0)
            cJSON_AddNumberToObject(m, "port", (double)col_i64(st, 3));
        if (sqlite3_column_type(st, 4) != SQLITE_NULL)
            cJSON_AddStringToObject(m, "user", (const char *)sqlite3_column_text(st, 4));
        cJSON_AddBoolToObject(m, "healthy", col_i64(st, 5) != 0);
        if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            cJSON_AddStringToObject(m, "lastError", (const char *)sqlite3_column_text(st, 6));
        if (sqlite3_column_type(st, 7) != SQLITE_NULL)
            cJSON_AddNumberToObject(m, "lastSeen", (double)col_i64(st, 7));
        if (sqlite3_column_type(st, 8) != SQLITE_NULL)
            cJSON_AddNumberToObject(m, "gpuChecked", (double)col_i64(st, 8));
        if (sqlite3_column_type(st, 9) != SQLITE_NULL)
            cJSON_AddStringToObject(m, "gpuError", (const char *)sqlite3_column_text(st, 9));
        if (sqlite3_column_type(st, 10) != SQLITE_NULL) /* for shared_homes, which takes it out */
            cJSON_AddStringToObject(m, "homeId", (const char *)sqlite3_column_text(st, 10));
        rows[n++] = m;
    }
    if (st)
        sqlite3_reset(st);
    for (int i = 0; i < n; i++) {
        add_gpus(db, ids[i], rows[i]);
        cJSON_AddItemToArray(out, rows[i]);
    }
    free(ids);
    free(rows);
}

struct machines_out {
    struct db *db;
    cJSON *list;
};

static void add_machine(void *ctx, const char *platform, const char *host, int port, const char *user)
{
    struct machines_out *o = ctx;
    add_rows(o->db, o->list, platform, host, port, user);
}

static void machine_name(const cJSON *m, char *buf, size_t size)
{
    const cJSON *user = cJSON_GetObjectItemCaseSensitive(m, "user");
    const cJSON *port = cJSON_GetObjectItemCaseSensitive(m, "port");
    int n = snprintf(buf, size, "%s%s%s", cJSON_IsString(user) ? user->valuestring : "", cJSON_IsString(user) ? "@" : "",
                     cJSON_GetObjectItemCaseSensitive(m, "host")->valuestring);
    if (cJSON_IsNumber(port) && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ":%d", port->valueint);
}

/* "sharedHome": the other machines of the list whose account sees the same home. */
static void shared_homes(cJSON *list)
{
    cJSON *m, *o;
    cJSON_ArrayForEach(m, list) {
        const cJSON *home = cJSON_GetObjectItemCaseSensitive(m, "homeId");
        cJSON *with = NULL;
        cJSON_ArrayForEach(o, list) {
            const cJSON *h2 = cJSON_GetObjectItemCaseSensitive(o, "homeId");
            if (o == m || !cJSON_IsString(home) || !cJSON_IsString(h2) || strcmp(home->valuestring, h2->valuestring))
                continue;
            char name[320];
            machine_name(o, name, sizeof name);
            if (!with)
                with = cJSON_AddArrayToObject(m, "sharedHome");
            cJSON_AddItemToArray(with, cJSON_CreateString(name));
        }
    }
    cJSON_ArrayForEach(m, list)
        cJSON_DeleteItemFromObjectCaseSensitive(m, "homeId");
}

cJSON *machines_json(struct db *db, const struct experiment *x,
                     int (*machines_of)(const char *config_json,
                                        void (*fn)(void *ctx, const char *platform, const char *host, int port,
                                                   const char *user),
                                        void *ctx))
{
    struct machines_out o = {.db = db, .list = cJSON_CreateArray()};
    machines_of(x->config, add_machine, &o);
    shared_homes(o.list);
    return o.list;
}
