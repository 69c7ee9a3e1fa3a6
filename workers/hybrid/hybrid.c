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

#include "queue/worker_queue.h"
#include "schema/worker_rows.h"
#include "workers/worker.h"

#define HYBRID_GRACE_MS 3000
#define HYBRID_START_MS 10000

struct other {
    const char *name;
    int64_t since; /* worker start (epoch ms), 0 when not registered yet */
};

/* Is the worker of platform name up (or still expected: the api started moments ago)?
 * *since: when it started (epoch ms), 0 when it has not registered yet. */
static int worker_up(struct worker *w, const char *name, int64_t api_started, int64_t now, int64_t *since)
{
    struct errbuf e;
    struct proc_row pr;
    char *role = xasprintf("worker:%s", name);
    int found = proc_latest(w->db, w->exp_id, role, &pr, &e);
    free(role);
    *since = 0;
    /* (a row from before this api's start is an earlier run's: not registered yet) */
    if (found != 1 || pr.started_at < api_started)
        return now - api_started < HYBRID_START_MS;
    *since = pr.started_at;
    if (pr.ended)
        return 0;
    if (strcmp(pr.host, host_name()) == 0)
        return proc_alive((pid_t)pr.pid, (uint64_t)pr.pid_start);
    return 1;
}

/* The other listed platforms whose workers are up, into others (room for every entry of
 * the list ts). */
static int others_up(struct worker *w, const cJSON *ts, struct other *others)
{
    struct errbuf e;
    struct proc_row api;
    /* a worker that never registered (its init fails: bad token, unreachable cluster)
     * is waited for only this long after the api started it */
    int64_t api_started = proc_latest(w->db, w->exp_id, "api", &api, &e) == 1 ? api.started_at : 0;
    int64_t now = now_ms();
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, ts) {
        const cJSON *pn = cJSON_GetObjectItemCaseSensitive(it, "platform");
        if (!cJSON_IsString(pn) || strcmp(pn->valuestring, w->ops->name) == 0)
            continue;
        int dup = 0; /* listed twice: one worker */
        for (int k = 0; k < n && !dup; k++)
            dup = strcmp(others[k].name, pn->valuestring) == 0;
        if (dup)
            continue;
        int64_t since;
        if (!worker_up(w, pn->valuestring, api_started, now, &since))
            continue;
        others[n++] = (struct other){pn->valuestring, since};
    }
    return n;
}

/* With the other platforms' workers up: below our share of the concurrency, or beyond it
 * into slots another platform had time to take and did not. */
static int may_claim_beyond(struct worker *w, const struct other *others, int n)
{
    struct errbuf e;
    int64_t conc = w->exp.concurrency > 0 ? w->exp.concurrency : 1, now = now_ms();
    if (exp_concurrency(w->db, w->exp_id, &conc, &e) < 0)
        return 1; /* no worse than without fairness */
    int64_t share = (conc + n) / (n + 1); /* ceil(conc / platforms) */
    if (queue_leased_count(w->db, w->exp_id, w->ops->name, &e) < share)
        return 1;
    /* beyond our share: only slots another platform had time to take and did not */
    for (int i = 0; i < n; i++) {
        if (queue_leased_count(w->db, w->exp_id, others[i].name, &e) >= share)
            continue;
        int64_t last = queue_last_end(w->db, w->exp_id, others[i].name, &e);
        if (others[i].since > last)
            last = others[i].since;
        if (last == 0 || now - last < HYBRID_GRACE_MS)
            return 0; /* not started yet, or a slot of its share freed just now */
    }
    return 1;
}

int hybrid_may_claim(struct worker *w)
{
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(w->config, "trainingService");
    if (!cJSON_IsArray(ts) || cJSON_GetArraySize(ts) < 2)
        return 1;
    struct other *others = xcalloc((size_t)cJSON_GetArraySize(ts), sizeof *others);
    int n = others_up(w, ts, others);
    int may = n == 0 || may_claim_beyond(w, others, n);
    free(others);
    return may;
}

char **platform_list_of(const char *exp_platform, const char *config_json, int *n)
{
    *n = 0;
    cJSON *cfg = cJSON_Parse(config_json);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(cfg, "trainingService"), *one;
    char **out = xcalloc((size_t)(cJSON_IsArray(ts) ? cJSON_GetArraySize(ts) : 1) + 1, sizeof *out);
    if (cJSON_IsArray(ts)) {
        /* hybrid: the platform of each entry of the list */
        cJSON_ArrayForEach(one, ts) {
            const cJSON *pn = cJSON_GetObjectItemCaseSensitive(one, "platform");
            if (cJSON_IsString(pn))
                out[(*n)++] = xstrdup(pn->valuestring);
        }
    } else {
        out[(*n)++] = xstrdup(exp_platform);
    }
    cJSON_Delete(cfg);
    return out;
}
