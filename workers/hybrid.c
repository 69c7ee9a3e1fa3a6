/* hybrid.c: NNI's hybrid mode (trainingService given as a list). The api queues the
 * experiment's trials with platform 'hybrid'; every listed platform runs its own worker,
 * and the first worker that claims a trial runs it (queue_claim records its platform).
 *
 * Fairness: left alone, the fastest worker (local) would take every slot of
 * trialConcurrency. NNI spreads its environments over the platforms at random; we give
 * each listed platform that can take trials an equal share of trialConcurrency, and a
 * platform takes more only when every other platform below its share has let
 * HYBRID_GRACE_MS pass since its worker started or its last trial ended without taking
 * the free slot (it has no room: machines busy, GPUs taken, its server down).
 * A listed platform whose worker has not registered yet counts for HYBRID_START_MS after
 * the api started (workers start one by one); one whose worker exited or died, or never
 * came up, does not, until it runs again. */
#include <stdlib.h>
#include <string.h>

#include "workers/worker.h"

#define HYBRID_GRACE_MS 3000
#define HYBRID_START_MS 10000
#define MAX_PLATFORMS 16

struct other {
    const char *name;
    int64_t since; /* worker start (epoch ms), 0 when not registered yet */
};

static int64_t held_by(struct worker *w, const char *platform)
{
    int64_t n = 0;
    struct errbuf e;
    db_int(w->db, &e, &n, "SELECT count(*) FROM trial WHERE experiment_id = ? AND platform = ?"
                          " AND status IN ('WAITING','RUNNING') AND lease_owner IS NOT NULL",
           "ss", w->exp_id, platform);
    return n;
}

int hybrid_may_claim(struct worker *w)
{
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(w->config, "trainingService");
    if (!cJSON_IsArray(ts) || cJSON_GetArraySize(ts) < 2)
        return 1;
    struct errbuf e;
    /* a worker that never registered (its init fails: bad token, unreachable cluster)
     * is waited for only this long after the api started it */
    int64_t api_started = 0, now = now_ms();
    db_int(w->db, &e, &api_started, "SELECT started_at FROM process WHERE experiment_id = ? AND role = 'api'"
                                    " ORDER BY id DESC LIMIT 1", "s", w->exp_id);
    struct other others[MAX_PLATFORMS];
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, ts) {
        const cJSON *pn = cJSON_GetObjectItemCaseSensitive(it, "platform");
        if (!cJSON_IsString(pn) || strcmp(pn->valuestring, w->ops->name) == 0 || n == MAX_PLATFORMS)
            continue;
        int dup = 0; /* listed twice: one worker */
        for (int k = 0; k < n && !dup; k++)
            dup = strcmp(others[k].name, pn->valuestring) == 0;
        if (dup)
            continue;
        char *role = xasprintf("worker:%s", pn->valuestring);
        sqlite3_stmt *st = db_query(w->db, &e, "SELECT pid, pid_start, host, ended_at, started_at FROM process"
                                               " WHERE experiment_id = ? AND role = ? ORDER BY id DESC LIMIT 1",
                                    "ss", w->exp_id, role);
        free(role);
        int up = now - api_started < HYBRID_START_MS;
        int64_t since = 0;
        /* (a row from before this api's start is an earlier run's: not registered yet) */
        if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 4) >= api_started) {
            const char *host = (const char *)sqlite3_column_text(st, 2);
            since = sqlite3_column_int64(st, 4);
            up = 1;
            if (sqlite3_column_type(st, 3) != SQLITE_NULL)
                up = 0;
            else if (host && strcmp(host, host_name()) == 0)
                up = proc_alive((pid_t)sqlite3_column_int64(st, 0), (uint64_t)sqlite3_column_int64(st, 1));
        }
        if (st)
            sqlite3_reset(st);
        if (up)
            others[n++] = (struct other){pn->valuestring, since};
    }
    if (n == 0)
        return 1;
    int64_t conc = 1;
    if (db_int(w->db, &e, &conc, "SELECT concurrency FROM experiment WHERE id = ?", "s", w->exp_id) < 0)
        return 1; /* no worse than without fairness */
    int64_t share = (conc + n) / (n + 1); /* ceil(conc / platforms) */
    if (held_by(w, w->ops->name) < share)
        return 1;
    /* beyond our share: only slots another platform had time to take and did not */
    for (int i = 0; i < n; i++) {
        if (held_by(w, others[i].name) >= share)
            continue;
        int64_t last = 0;
        db_int(w->db, &e, &last, "SELECT coalesce(max(end_time), 0) FROM trial WHERE experiment_id = ?"
                                 " AND platform = ?", "ss", w->exp_id, others[i].name);
        if (others[i].since > last)
            last = others[i].since;
        if (last == 0 || now - last < HYBRID_GRACE_MS)
            return 0; /* not started yet, or a slot of its share freed just now */
    }
    return 1;
}

int platform_list_of(const char *exp_platform, const char *config_json, char **out, int max)
{
    int n = 0;
    cJSON *cfg = cJSON_Parse(config_json);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(cfg, "trainingService"), *one;
    if (cJSON_IsArray(ts)) {
        /* hybrid: the platform of each entry of the list */
        cJSON_ArrayForEach(one, ts) {
            const cJSON *pn = cJSON_GetObjectItemCaseSensitive(one, "platform");
            if (cJSON_IsString(pn) && n < max)
                out[n++] = xstrdup(pn->valuestring);
        }
    } else if (max > 0) {
        out[n++] = xstrdup(exp_platform);
    }
    cJSON_Delete(cfg);
    return n;
}
