/* routes_prom.c: GET /metrics, the experiment in Prometheus' text format (api/prom.h).
 * Every figure is a kept count or a few rows (schema/counters.h, migration 018), the
 * api's memory, or its workers' fault files: the cost of a scrape does not grow with
 * the number of trials or metrics. docs/operations.md lists the metrics. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "api/prom.h"
#include "api/routes.h"
#include "common/trial_status.h"
#include "schema/counters.h"

#define MAX_COUNTERS 64

struct counts {
    struct {
        char name[48];
        int64_t n;
    } c[MAX_COUNTERS];
    int n;
};

static void keep_count(const char *name, int64_t n, void *arg)
{
    struct counts *k = arg;
    if (k->n < MAX_COUNTERS && name) {
        snprintf(k->c[k->n].name, sizeof k->c[k->n].name, "%s", name);
        k->c[k->n++].n = n;
    }
}

static int64_t count_of(const struct counts *k, const char *prefix, const char *what)
{
    char name[48];
    snprintf(name, sizeof name, "%s%s", prefix, what);
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->c[i].name, name) == 0)
            return k->c[i].n;
    return 0;
}

/* Each of the labels' values with its kept count (0 when it has none yet). */
static void counted(struct strbuf *sb, const char *name, const char *type, const char *help, const char *label,
                    const char *const *values, int n, const struct counts *k, const char *prefix)
{
    prom_family(sb, name, type, help);
    for (int i = 0; i < n; i++)
        prom_sample(sb, name, &(struct prom_label){label, values[i]}, 1, (double)count_of(k, prefix, values[i]));
}

static const char *const exp_statuses[] = {"INITIALIZED", "RUNNING", "NO_MORE_TRIAL", "TUNER_NO_MORE_TRIAL", "DONE",
                                           "STOPPING", "STOPPED", "ERROR", "VIEWED"};
static const char *const final_statuses[] = {TRIAL_FINAL_STATUSES(TRIAL_STATUS_STR_, TRIAL_STATUS_COMMA_)};
static const char *const waiting_reasons[] = {"queued", "claimed", "gpu", "submit_retry", "platform"};
static const char *const metric_types[] = {"PERIODICAL", "FINAL"};

static void experiment_part(struct strbuf *sb, const struct experiment *x)
{
    prom_family(sb, "trialq_experiment_info", "gauge", "The experiment this api serves (always 1).");
    struct prom_label info[] = {{"experiment", x->id}, {"name", x->name}, {"platform", x->platform}};
    prom_sample(sb, "trialq_experiment_info", info, 3, 1);
    prom_family(sb, "trialq_experiment_status", "gauge", "1 for the experiment's status now, 0 for the others.");
    for (size_t i = 0; i < sizeof exp_statuses / sizeof exp_statuses[0]; i++)
        prom_sample(sb, "trialq_experiment_status", &(struct prom_label){"status", exp_statuses[i]}, 1,
                    x->status && strcmp(x->status, exp_statuses[i]) == 0);
}

static void trials_part(struct strbuf *sb, struct db *db, const char *exp_id, const struct counts *k)
{
    counted(sb, "trialq_trials", "gauge", "Trials of the experiment by status now.", "status", trial_statuses,
            TRIAL_NSTATUS, k, "trials:");
    counted(sb, "trialq_waiting_trials", "gauge", "WAITING trials by the class of their waiting reason.", "reason",
            waiting_reasons, sizeof waiting_reasons / sizeof waiting_reasons[0], k, "waiting:");
    int64_t submit = 0;
    struct errbuf e;
    double age = oldest_waiting_submit(db, exp_id, &submit, &e) == 1 ? (now_ms() - submit) / 1000.0 : 0;
    prom_single(sb, "trialq_oldest_waiting_trial_age_seconds", "gauge",
                "Seconds since the submission of the oldest WAITING trial (0 when none waits).", age < 0 ? 0 : age);
    prom_single(sb, "trialq_trials_started_total", "counter", "Trial attempts that started running.",
                (double)count_of(k, "started", ""));
    counted(sb, "trialq_trials_ended_total", "counter", "Trials that reached a final status, by that status.",
            "status", final_statuses, sizeof final_statuses / sizeof final_statuses[0], k, "ended:");
    counted(sb, "trialq_metrics_ingested_total", "counter", "Metrics stored (a metric read twice counts once).",
            "type", metric_types, 2, k, "metrics:");
}

/* ---- the workers' reports (worker_stat rows) ---- */

struct wstat_out {
    struct strbuf *sb;
    const char *want; /* the row name this pass writes: "requests:", "errors:", "loop_lag_ms", "report_ms" */
    const char *series;
    double scale;
};

static void wstat_row(const char *platform, const char *name, int64_t v, void *arg)
{
    struct wstat_out *o = arg;
    size_t l = strlen(o->want);
    if (!platform || !name || strncmp(name, o->want, l) != 0)
        return;
    if (o->want[l - 1] == ':') {
        struct prom_label lb[] = {{"platform", platform}, {"op", name + l}};
        prom_sample(o->sb, o->series, lb, 2, (double)v);
    } else if (!name[l]) {
        prom_sample(o->sb, o->series, &(struct prom_label){"platform", platform}, 1, (double)v * o->scale);
    }
}

static void workers_part(struct strbuf *sb, struct db *db, const char *exp_id)
{
    static const struct {
        const char *want, *series, *type, *help;
        double scale;
    } parts[] = {
        {"requests:", "trialq_platform_requests_total", "counter",
         "Calls of the workers to their platform (op: submit, poll, list, kill).", 1},
        {"errors:", "trialq_platform_request_errors_total", "counter",
         "Calls of the workers to their platform that failed.", 1},
        {"loop_lag_ms", "trialq_worker_loop_lag_seconds", "gauge",
         "The most a worker's loop ran late in its last report period (5 s).", 1e-3},
        {"report_ms", "trialq_worker_last_report_timestamp_seconds", "gauge",
         "When a worker of the platform last reported (every 5 s while it runs).", 1e-3},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        struct wstat_out o = {sb, parts[i].want, parts[i].series, parts[i].scale};
        struct errbuf e;
        prom_family(sb, parts[i].series, parts[i].type, parts[i].help);
        if (worker_stats_each(db, exp_id, wstat_row, &o, &e) < 0)
            log_limited(LOG_WARN, "GET /metrics: %s", e.msg);
    }
}

/* ---- the resource faults now, as check-status lists them ---- */

static const char *const fault_kinds[] = {"disk_full", "io_error", "read_only", "locked", "other"};
#define NKINDS (sizeof fault_kinds / sizeof fault_kinds[0])

/* The kind of a fault from its message (common/fault.c's and schema/db.c's wording, and
 * strerror's); "other": a platform's service failing, a refused submission. */
static int fault_kind(const char *msg)
{
    static const char *const words[][3] = {{"disk full", "No space left", "quota exceeded"},
                                           {"I/O error", "Input/output error", NULL},
                                           {"read-only", NULL, NULL},
                                           {"locked", NULL, NULL}};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 3 && words[k][i]; i++)
            if (strcasestr(msg, words[k][i]))
                return k;
    return 4;
}

struct faults {
    cJSON *seen; /* each message once, as check-status counts it */
    int n[NKINDS];
};

static void count_fault(const char *msg, void *arg)
{
    struct faults *f = arg;
    int before = cJSON_GetArraySize(f->seen);
    fault_json_add(msg, f->seen);
    if (cJSON_GetArraySize(f->seen) > before)
        f->n[fault_kind(msg)]++;
}

static void faults_part(struct strbuf *sb, const struct experiment *x)
{
    struct faults f = {cJSON_CreateArray(), {0}};
    fault_each(count_fault, &f);
    if (x->exp_dir) {
        char *dir = xasprintf("%s/faults", x->exp_dir);
        fault_each_published(dir, getpid(), count_fault, &f);
        free(dir);
    }
    cJSON_Delete(f.seen);
    prom_family(sb, "trialq_resource_faults", "gauge",
                "Current faults of the api and its workers by kind (check-status lists them).");
    for (size_t i = 0; i < NKINDS; i++)
        prom_sample(sb, "trialq_resource_faults", &(struct prom_label){"kind", fault_kinds[i]}, 1, f.n[i]);
}

/* ---- the process, the database ---- */

/* Worked out once (the wall clock less the time since boot, plus the process's start
 * after boot) and kept: worked out again on every scrape, the two clocks' whole seconds
 * made it move by a second now and then (e2e/30b saw 1796547561 then ...562). */
static double process_start_seconds(void)
{
    static double start;
    if (start == 0) {
        struct timespec real, boot;
        clock_gettime(CLOCK_REALTIME, &real);
        clock_gettime(CLOCK_BOOTTIME, &boot);
        double ticks = (double)proc_start_time(getpid()) / (double)sysconf(_SC_CLK_TCK);
        start = ((double)real.tv_sec + real.tv_nsec / 1e9) - ((double)boot.tv_sec + boot.tv_nsec / 1e9) + ticks;
    }
    return start;
}

static void process_part(struct strbuf *sb, struct api *a)
{
    prom_family(sb, "trialq_build_info", "gauge", "The version of trialq that serves this (always 1).");
    prom_sample(sb, "trialq_build_info", &(struct prom_label){"version", TRIALQ_VERSION}, 1, 1);
    prom_single(sb, "process_start_time_seconds", "gauge", "Start time of the api process since the epoch.",
                (double)(int64_t)process_start_seconds());
    prom_single(sb, "trialq_scheduler_loop_lag_seconds", "gauge",
                "The most the api's 500 ms scheduler tick ran late in the last minute.",
                prom_tick_lag_ms(mono_ms()) / 1000.0);
    int64_t db_bytes = 0, wal_bytes = 0;
    struct errbuf e;
    if (db_size_bytes(a->db, &db_bytes, &wal_bytes, &e) < 0)
        log_limited(LOG_WARN, "GET /metrics: %s", e.msg);
    prom_single(sb, "trialq_database_size_bytes", "gauge", "Size of the database (all experiments of its home).",
                (double)db_bytes);
    prom_single(sb, "trialq_database_wal_size_bytes", "gauge", "Size of the database's write-ahead log.",
                (double)wal_bytes);
    prom_histogram_write(sb, "trialq_api_request_duration_seconds",
                         "Time from a request's arrival at the route table to its reply sent.",
                         prom_request_histogram());
}

void h_metrics(struct req *q)
{
    struct experiment x;
    if (req_experiment(q, &x) < 0)
        return;
    /* An api that refreshes the trial gauges reads them. A view-mode one cannot: it works
     * them out, once (nothing of a viewed experiment changes: nnictl view refuses a
     * running one), so that a scrape still reads no more than a few rows. */
    static struct counts viewed;
    static int viewed_ok;
    struct counts k = {.n = 0};
    struct errbuf e;
    if (q->a->readonly && viewed_ok) {
        k = viewed;
    } else if (counters_each(q->a->db, q->a->exp_id, q->a->readonly, keep_count, &k, &e) < 0) {
        reply_error(q->r, 500, "GET /metrics: %s", e.msg);
        exp_clear(&x);
        return;
    } else if (q->a->readonly) {
        viewed = k;
        viewed_ok = 1;
    }
    struct strbuf sb;
    sb_init(&sb);
    process_part(&sb, q->a);
    experiment_part(&sb, &x);
    trials_part(&sb, q->a->db, q->a->exp_id, &k);
    workers_part(&sb, q->a->db, q->a->exp_id);
    faults_part(&sb, &x);
    exp_clear(&x);
    add_api_headers(q->r, PROM_CONTENT_TYPE);
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, sb.buf, sb.len);
    evhttp_send_reply(q->r, 200, NULL, b);
    evbuffer_free(b);
    sb_free(&sb);
}
