/* worker_queue.c: the worker's reads of its trials (queue/worker_queue.h). */
#include <stdlib.h>
#include <string.h>

#include "common/trial_status.h"
#include "queue/worker_queue.h"

int queue_kill_requests(struct db *db, const char *owner, struct kill_request **out, int *n, struct errbuf *e)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = db_query(db, e, "SELECT id, kill_request FROM trial WHERE lease_owner = ?"
                                       " AND kill_request IS NOT NULL ORDER BY id", "s", owner);
    if (!st)
        return -1;
    int cap = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *out = xrealloc(*out, sizeof **out * (size_t)cap);
        }
        (*out)[*n].trial_id = col_str(st, 0);
        (*out)[(*n)++].kind = col_str(st, 1);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        kill_requests_free(*out, *n);
        *out = NULL;
        *n = 0;
        return errf(e, "reading kill requests: %s", sqlite3_errmsg(db->h));
    }
    return 0;
}

void kill_requests_free(struct kill_request *list, int n)
{
    for (int i = 0; i < n; i++) {
        free(list[i].trial_id);
        free(list[i].kind);
    }
    free(list);
}

int trial_kill_request(struct db *db, const char *trial_id, char **kind, struct errbuf *e)
{
    *kind = NULL;
    int rc = db_text(db, e, kind, "SELECT kill_request FROM trial WHERE id = ?", "s", trial_id);
    if (rc < 0)
        return -1;
    return *kind != NULL;
}

int queue_started_ids(struct db *db, const char *exp_id, const char *platform, char ***ids, int *n,
                      struct errbuf *e)
{
    *ids = NULL;
    *n = 0;
    sqlite3_stmt *st = db_query(db, e, "SELECT id FROM trial WHERE experiment_id = ? AND platform = ?"
                                       " AND " SQL_TRIAL_STARTED " ORDER BY id", "ss", exp_id, platform);
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *ids = xrealloc(*ids, sizeof **ids * (size_t)(*n + 1));
        (*ids)[(*n)++] = col_str(st, 0);
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return errf(e, "reading the started trials of %s: %s", exp_id, sqlite3_errmsg(db->h));
    return 0;
}

int64_t queue_started_count(struct db *db, const char *exp_id, const char *platform, struct errbuf *e)
{
    int64_t n = 0;
    if (db_int(db, e, &n, "SELECT count(*) FROM trial WHERE experiment_id = ? AND platform = ?"
                          " AND " SQL_TRIAL_STARTED, "ss", exp_id, platform) < 0)
        return -1;
    return n;
}

int64_t queue_leased_count(struct db *db, const char *exp_id, const char *platform, struct errbuf *e)
{
    int64_t n = 0;
    if (db_int(db, e, &n, "SELECT count(*) FROM trial WHERE experiment_id = ? AND platform = ?"
                          " AND status IN " SQL_TRIAL_ACTIVE " AND lease_owner IS NOT NULL",
               "ss", exp_id, platform) < 0)
        return -1;
    return n;
}

int64_t queue_last_end(struct db *db, const char *exp_id, const char *platform, struct errbuf *e)
{
    int64_t last = 0;
    if (db_int(db, e, &last, "SELECT coalesce(max(end_time), 0) FROM trial WHERE experiment_id = ?"
                             " AND platform = ?", "ss", exp_id, platform) < 0)
        return 0;
    return last;
}

int queue_has_unclaimed(struct db *db, const char *exp_id, struct errbuf *e)
{
    int64_t n = 0;
    if (db_int(db, e, &n, "SELECT count(*) FROM (SELECT 1 FROM trial WHERE experiment_id = ?"
                          " AND status = 'WAITING' AND lease_owner IS NULL LIMIT 1)", "s", exp_id) < 0)
        return -1;
    return n > 0;
}

int gpu_claim_machine(struct db *db, const char *trial_id, int64_t *machine_id, struct errbuf *e)
{
    return db_int(db, e, machine_id, "SELECT machine_id FROM gpu_claim WHERE trial_id = ? LIMIT 1", "s", trial_id);
}
