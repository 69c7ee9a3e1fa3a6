/* gpu.c: GPU inventory rows and GPU slots claimed with the trial (gpu.h); nvidia-smi's
 * XML is read by common/nvsmi.c. */
#include "queue/gpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- what a trial asks for ---------------- */

static const cJSON *item_or(const cJSON *item, const cJSON *fallback, const char *key)
{
    const cJSON *v = item ? cJSON_GetObjectItemCaseSensitive(item, key) : NULL;
    if ((!v || cJSON_IsNull(v)) && fallback)
        v = cJSON_GetObjectItemCaseSensitive(fallback, key);
    return v && !cJSON_IsNull(v) ? v : NULL;
}

static void allow_set(struct gpu_need *need, double d)
{
    if (d >= 0 && d <= GPU_INDEX_MAX) {
        int idx = (int)d;
        need->allow[idx / 8] |= (unsigned char)(1u << (idx % 8));
    }
}

static int allowed(const struct gpu_need *need, int idx)
{
    if (!need->has_filter)
        return 1;
    return idx >= 0 && idx <= GPU_INDEX_MAX && (need->allow[idx / 8] >> (idx % 8) & 1);
}

int gpu_need_from_json(const cJSON *item, const cJSON *fallback, struct gpu_need *need)
{
    memset(need, 0, sizeof *need);
    need->max_per_gpu = 1;
    const cJSON *v = item_or(item, fallback, "trialGpuNumber");
    if (cJSON_IsNumber(v) && v->valuedouble > 0)
        need->count = v->valuedouble > 1e6 ? 1000000 : (int)v->valuedouble;
    v = item_or(item, fallback, "maxTrialNumberPerGpu");
    if (cJSON_IsNumber(v) && v->valuedouble >= 1)
        need->max_per_gpu = v->valuedouble > 1e6 ? 1000000 : (int)v->valuedouble;
    v = item_or(item, fallback, "useActiveGpu");
    need->use_active = cJSON_IsTrue(v);
    v = item_or(item, fallback, "gpuIndices");
    /* the canonical form is a list of ints; "0,1" and a bare int are accepted too */
    if (cJSON_IsArray(v)) {
        need->has_filter = 1;
        const cJSON *it;
        cJSON_ArrayForEach(it, v)
            if (cJSON_IsNumber(it))
                allow_set(need, it->valuedouble);
    } else if (cJSON_IsNumber(v)) {
        need->has_filter = 1;
        allow_set(need, v->valuedouble);
    } else if (cJSON_IsString(v)) {
        need->has_filter = 1;
        for (const char *s = v->valuestring; *s;) {
            char *end;
            long i = strtol(s, &end, 10);
            if (end == s) {
                s++;
                continue;
            }
            allow_set(need, (double)i);
            s = end;
        }
    }
    return need->count;
}

int gpu_need_from_config(const char *config_json, const char *platform, struct gpu_need *need)
{
    memset(need, 0, sizeof *need);
    need->max_per_gpu = 1;
    cJSON *cfg = config_json ? cJSON_Parse(config_json) : NULL;
    if (!cfg)
        return 0;
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(cfg, "trainingService");
    const cJSON *mine = NULL;
    if (cJSON_IsArray(ts)) {
        const cJSON *it;
        cJSON_ArrayForEach(it, ts) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(it, "platform");
            if (cJSON_IsString(p) && strcmp(p->valuestring, platform) == 0)
                mine = it;
        }
    } else if (cJSON_IsObject(ts)) {
        mine = ts;
    }
    int rc = gpu_need_from_json(mine, cfg, need);
    cJSON_Delete(cfg);
    return rc;
}

void gpu_need_describe_filter(const struct gpu_need *need, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i <= GPU_INDEX_MAX && k + 12 < size; i++)
        if (need->has_filter && allowed(need, i))
            k += (size_t)snprintf(buf + k, size - k, "%s%d", k ? "," : "", i);
}

int gpu_check_host(const cJSON *entry, int at, const cJSON *canonical, char *key, size_t key_size, char *msg,
                   size_t msg_size)
{
    key[0] = msg[0] = '\0';
    const cJSON *local = entry;
    int hybrid = at >= 0;
    struct gpu_need need;
    if (!local || gpu_need_from_json(local, canonical, &need) <= 0)
        return 0;
    char prefix[64];
    if (hybrid)
        snprintf(prefix, sizeof prefix, "trainingService[%d]", at);
    else
        snprintf(prefix, sizeof prefix, "trainingService");
    struct gpu_info *g = NULL;
    int n = 0;
    struct errbuf e;
    const char *s = need.count == 1 ? "" : "s";
    snprintf(key, key_size, "%s.trialGpuNumber", prefix);
    if (gpu_collect_local(20000, &g, &n, &e) < 0) {
        snprintf(msg, msg_size, "%s: %d GPU%s per trial, but this host has no usable GPU (%s)%s", key,
                 need.count, s, e.msg, hybrid ? "; only the other platforms will run trials" : "");
        return hybrid ? 1 : -1;
    }
    int usable = 0, missing = -1;
    for (int k = 0; k < n; k++)
        if (allowed(&need, g[k].index))
            usable++;
    if (need.has_filter)
        for (int idx = 0; idx <= GPU_INDEX_MAX && missing < 0; idx++)
            if ((need.allow[idx / 8] >> (idx % 8) & 1) && idx >= n)
                missing = idx;
    free(g);
    if (missing >= 0) {
        snprintf(key, key_size, "%s.gpuIndices", prefix);
        if (n > 0)
            snprintf(msg, msg_size, "%s: GPU %d does not exist on this host (nvidia-smi lists GPUs 0..%d)", key,
                     missing, n - 1);
        else
            snprintf(msg, msg_size, "%s: GPU %d does not exist on this host (nvidia-smi lists none)", key, missing);
        return -1;
    }
    if (need.count > usable) {
        snprintf(msg, msg_size, "%s: %d GPU%s per trial, but this host has %s%d%s: no trial could ever start",
                 key, need.count, s, need.has_filter ? "only " : "", usable,
                 need.has_filter ? " of the GPUs in gpuIndices" : (usable == 1 ? " GPU" : " GPUs"));
        return hybrid ? 1 : -1;
    }
    return 0;
}

/* ---------------- machines and inventory ---------------- */

int machine_ensure(struct db *db, const char *platform, const char *host, int port, const char *user,
                   int64_t *machine_id, struct errbuf *e)
{
    static const char find[] =
        "SELECT id FROM machine WHERE experiment_id IS NULL AND platform = ? AND host = ?"
        " AND coalesce(port, 0) = ? AND coalesce(user, '') = coalesce(?, '')";
    int rc = db_int(db, e, machine_id, find, "ssds", platform, host, port, user);
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    /* the unique index on the identity makes a concurrent insert a no-op */
    if (db_run(db, e, "INSERT OR IGNORE INTO machine(experiment_id, platform, host, port, user, last_seen)"
                      " VALUES (NULL, ?, ?, nullif(?, 0), ?, ?)",
               "ssdsi", platform, host, port, user, now_ms()) < 0)
        return -1;
    rc = db_int(db, e, machine_id, find, "ssds", platform, host, port, user);
    if (rc == 0)
        return errf(e, "machine %s (%s): cannot register it", host, platform);
    return rc < 0 ? -1 : 0;
}

int machine_set_home(struct db *db, int64_t machine_id, const char *home_id, struct errbuf *e)
{
    return db_run(db, e, "UPDATE machine SET home_id = ? WHERE id = ? AND home_id IS NOT ?", "sis", home_id,
                  machine_id, home_id) < 0 ? -1 : 0;
}

int gpu_store(struct db *db, int64_t machine_id, const struct gpu_info *g, int n,
              const char *collect_error, struct errbuf *e)
{
    int own = !db->in_tx;
    if (own && db_begin(db, e) < 0)
        return -1;
    int64_t now = now_ms();
    if (collect_error) {
        if (db_run(db, e, "UPDATE machine SET gpu_checked = ?, gpu_error = ? WHERE id = ?", "isi", now,
                   collect_error, machine_id) < 0)
            goto fail;
    } else {
        for (int i = 0; i < n; i++) {
            if (db_run(db, e,
                       "INSERT INTO gpu(machine_id, idx, uuid, name, memory_total, memory_used, utilization,"
                       " memory_util, active_procs, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?)"
                       " ON CONFLICT(machine_id, idx) DO UPDATE SET uuid = excluded.uuid, name = excluded.name,"
                       " memory_total = excluded.memory_total, memory_used = excluded.memory_used,"
                       " utilization = excluded.utilization, memory_util = excluded.memory_util,"
                       " active_procs = excluded.active_procs, updated_at = excluded.updated_at",
                       "idssiiFFdi", machine_id, g[i].index, g[i].uuid[0] ? g[i].uuid : NULL,
                       g[i].name[0] ? g[i].name : NULL, g[i].mem_total, g[i].mem_used,
                       g[i].util < 0 ? NAN : g[i].util, g[i].mem_util < 0 ? NAN : g[i].mem_util,
                       g[i].active_procs, now) < 0)
                goto fail;
        }
        /* GPUs that are gone take their claims with them (ON DELETE CASCADE) */
        if (db_run(db, e, "DELETE FROM gpu WHERE machine_id = ? AND idx >= ?", "id", machine_id, n) < 0 ||
            db_run(db, e, "UPDATE machine SET gpu_checked = ?, gpu_error = NULL, last_seen = ? WHERE id = ?",
                   "iii", now, now, machine_id) < 0)
            goto fail;
    }
    if (own && db_commit(db, e) < 0)
        return -1;
    return 0;
fail:
    if (own)
        db_rollback(db);
    return -1;
}

int gpu_refresh_local(struct db *db, const char *kind, int64_t max_age_ms, int64_t *machine_id, char *collect_error,
                      size_t error_size, struct errbuf *e)
{
    if (error_size)
        collect_error[0] = '\0';
    if (machine_ensure(db, kind, host_name(), 0, NULL, machine_id, e) < 0)
        return -1;
    int64_t checked = 0;
    int rc = db_int(db, e, &checked, "SELECT coalesce(gpu_checked, 0) FROM machine WHERE id = ?", "i",
                    *machine_id);
    if (rc < 0)
        return -1;
    if (checked && now_ms() - checked < max_age_ms)
        return 0;
    struct gpu_info *g = NULL;
    int n = 0;
    struct errbuf ce;
    int ok = gpu_collect_local(10000, &g, &n, &ce) == 0;
    if (!ok && error_size)
        snprintf(collect_error, error_size, "%s", ce.msg);
    rc = gpu_store(db, *machine_id, g, n, ok ? NULL : ce.msg, e);
    free(g);
    return rc < 0 ? -1 : 1;
}

/* ---------------- slots ---------------- */

/* A claim holds its GPU only while its trial is claimed or running. */
#define LIVE_CLAIM                                                                           \
    "(SELECT 1 FROM trial t WHERE t.id = c.trial_id"                                           \
    " AND (t.status = 'RUNNING' OR (t.status = 'WAITING' AND t.lease_owner IS NOT NULL)))"

int gpu_release_stale(struct db *db, int64_t machine_id, struct errbuf *e)
{
    return db_run(db, e, "DELETE FROM gpu_claim AS c WHERE c.machine_id = ? AND NOT EXISTS " LIVE_CLAIM,
                  "i", machine_id);
}

int gpu_release_trial(struct db *db, const char *trial_id, struct errbuf *e)
{
    if (db_run(db, e, "DELETE FROM gpu_claim WHERE trial_id = ?", "s", trial_id) < 0)
        return -1;
    return db_run(db, e, "UPDATE trial SET gpu_indices = NULL WHERE id = ? AND gpu_indices IS NOT NULL", "s",
                  trial_id) < 0 ? -1 : 0;
}

struct cand {
    int idx;
    double held;      /* shares held by live claims */
    int claims;       /* live claims */
    int active;       /* processes nvidia-smi saw */
    double util, mem_util;
};

static int cand_cmp(const void *a, const void *b)
{
    const struct cand *x = a, *y = b;
    /* spread first (fewest shares held), then GPUs without processes, then the least
     * busy; the index last, so that equal GPUs are taken in order */
    if (x->held != y->held)
        return x->held < y->held ? -1 : 1;
    if ((x->active > 0) != (y->active > 0))
        return x->active > 0 ? 1 : -1;
    if (x->mem_util != y->mem_util)
        return x->mem_util < y->mem_util ? -1 : 1;
    if (x->util != y->util)
        return x->util < y->util ? -1 : 1;
    return x->idx - y->idx;
}

static int int_cmp(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* What the messages of gpu_pick say about a machine. */
struct gpu_host {
    char *host, *gpu_error;
    int64_t checked;
};

static void gpu_host_free(struct gpu_host *h)
{
    free(h->host);
    free(h->gpu_error);
}

static int gpu_host_load(struct db *db, int64_t machine_id, struct gpu_host *h, struct errbuf *e)
{
    memset(h, 0, sizeof *h);
    sqlite3_stmt *st = db_query(db, e, "SELECT host, gpu_error, coalesce(gpu_checked, 0) FROM machine WHERE id = ?",
                                "i", machine_id);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        h->host = col_str(st, 0);
        h->gpu_error = col_str(st, 1);
        h->checked = col_i64(st, 2);
    }
    sqlite3_reset(st);
    if (rc == SQLITE_ROW)
        return 0;
    return rc == SQLITE_DONE ? errf(e, "machine %lld: no such row", (long long)machine_id)
                             : errf(e, "machine: %s", sqlite3_errmsg(db->h));
}

/* A machine's GPUs that the need may take (c[0..n)), and the counts its messages give. */
struct gpu_cands {
    struct cand *c;
    int n, cap, total, usable, idle, busy_foreign;
};

static int gpu_cands_load(struct db *db, int64_t machine_id, const struct gpu_need *need, struct gpu_cands *k,
                          struct errbuf *e)
{
    memset(k, 0, sizeof *k);
    sqlite3_stmt *st = db_query(db, e,
                                "SELECT g.idx, g.active_procs, coalesce(g.utilization, 0), coalesce(g.memory_util, 0),"
                                " (SELECT coalesce(sum(c.share), 0) FROM gpu_claim c WHERE c.machine_id = g.machine_id"
                                "  AND c.gpu_idx = g.idx AND EXISTS " LIVE_CLAIM "),"
                                " (SELECT count(*) FROM gpu_claim c WHERE c.machine_id = g.machine_id"
                                "  AND c.gpu_idx = g.idx AND EXISTS " LIVE_CLAIM ")"
                                " FROM gpu g WHERE g.machine_id = ? ORDER BY g.idx",
                                "i", machine_id);
    if (!st)
        return -1;
    double share = 1.0 / need->max_per_gpu;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        k->total++;
        struct cand g = {
            .idx = (int)col_i64(st, 0),
            .active = (int)col_i64(st, 1),
            .util = sqlite3_column_double(st, 2),
            .mem_util = sqlite3_column_double(st, 3),
            .held = sqlite3_column_double(st, 4),
            .claims = (int)col_i64(st, 5),
        };
        if (!allowed(need, g.idx))
            continue;
        k->usable++;
        if (g.claims == 0 && g.active == 0)
            k->idle++;
        /* processes on a GPU our trials hold are taken to be theirs (NNI's rule) */
        if (!need->use_active && g.active > 0 && g.claims == 0) {
            k->busy_foreign++;
            continue;
        }
        if (g.held + share > 1.0 + 1e-9)
            continue;
        if (k->n == k->cap) {
            k->cap = k->cap ? k->cap * 2 : 16;
            k->c = xrealloc(k->c, sizeof *k->c * (size_t)k->cap);
        }
        k->c[k->n++] = g;
    }
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return 0;
    free(k->c);
    k->c = NULL;
    return errf(e, "gpu rows: %s", sqlite3_errmsg(db->h));
}

/* The best `want` candidates as "0,2" (indices ascending) in idx_text: 0, or -1 when the
 * list does not fit. */
static int gpu_pick_text(struct gpu_cands *k, int want, char *idx_text, size_t idx_size, struct errbuf *e)
{
    qsort(k->c, (size_t)k->n, sizeof *k->c, cand_cmp);
    int *pick = xmalloc(sizeof *pick * (size_t)want);
    for (int i = 0; i < want; i++)
        pick[i] = k->c[i].idx;
    qsort(pick, (size_t)want, sizeof *pick, int_cmp);
    size_t len = 0;
    for (int i = 0; i < want && len < idx_size; i++)
        len += (size_t)snprintf(idx_text + len, idx_size - len, "%s%d", i ? "," : "", pick[i]);
    free(pick);
    if (len < idx_size)
        return 0;
    return errf(e, "GPU index list longer than %zu bytes", idx_size);
}

/* Why the machine cannot give the need its GPUs now. */
static void gpu_pick_reason(const struct gpu_need *need, const struct gpu_host *h, const struct gpu_cands *k,
                            char *reason, size_t reason_size)
{
    int want = need->count;
    const char *s = want == 1 ? "" : "s";
    char filter[256];
    gpu_need_describe_filter(need, filter, sizeof filter);
    if (k->total == 0 && !h->checked)
        snprintf(reason, reason_size, "needs %d GPU%s; host %s: no GPU information yet", want, s, h->host);
    else if (k->total == 0)
        snprintf(reason, reason_size, "needs %d GPU%s; host %s has no GPU (%s)", want, s, h->host,
                 h->gpu_error ? h->gpu_error : "nvidia-smi lists none");
    else if (k->usable < want && need->has_filter)
        snprintf(reason, reason_size, "needs %d GPU%s; host %s has only %d of gpuIndices %s", want, s, h->host,
                 k->usable, filter);
    else if (k->usable < want)
        snprintf(reason, reason_size, "needs %d GPU%s; host %s has only %d", want, s, h->host, k->usable);
    else
        snprintf(reason, reason_size, "needs %d GPU%s; host %s has %d free, %d idle%s", want, s, h->host, k->n,
                 k->idle, k->busy_foreign ? " (others busy with processes not ours; useActiveGpu is false)" : "");
}

int gpu_pick(struct db *db, int64_t machine_id, const struct gpu_need *need, char *idx_text, size_t idx_size,
             char *reason, size_t reason_size, struct errbuf *e)
{
    idx_text[0] = '\0';
    if (reason_size)
        reason[0] = '\0';
    struct gpu_host h;
    if (gpu_host_load(db, machine_id, &h, e) < 0) {
        gpu_host_free(&h);
        return -1;
    }
    struct gpu_cands k;
    if (gpu_cands_load(db, machine_id, need, &k, e) < 0) {
        gpu_host_free(&h);
        return -1;
    }
    int rc;
    if (k.n >= need->count) {
        rc = gpu_pick_text(&k, need->count, idx_text, idx_size, e) < 0 ? -1 : 1;
    } else {
        rc = 0;
        if (reason_size)
            gpu_pick_reason(need, &h, &k, reason, reason_size);
    }
    free(k.c);
    gpu_host_free(&h);
    return rc;
}

int gpu_claim_write(struct db *db, int64_t machine_id, const struct gpu_need *need, const char *idx_text,
                    const char *trial_id, struct errbuf *e)
{
    double share = 1.0 / need->max_per_gpu;
    for (const char *s = idx_text; *s;) {
        char *end;
        long idx = strtol(s, &end, 10);
        if (end == s)
            return errf(e, "bad GPU index list '%s'", idx_text);
        if (db_run(db, e, "INSERT OR REPLACE INTO gpu_claim(machine_id, gpu_idx, trial_id, share) VALUES (?,?,?,?)",
                   "idsf", machine_id, (int)idx, trial_id, share) < 0)
            return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return 0;
}
