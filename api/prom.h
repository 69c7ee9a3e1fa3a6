/* prom.h: Prometheus' text exposition format 0.0.4 (api/prom.c) and what the api
 * observes of itself for GET /metrics (api/routes_prom.c): its request latencies and
 * how late its scheduler's tick runs. docs/operations.md lists the metrics. */
#ifndef TRIALQ_PROM_H
#define TRIALQ_PROM_H

#include <stdint.h>

#include <event2/http.h>

#include "common/common.h"

#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct prom_label {
    const char *name, *value;
};

/* "# HELP name help" (help escaped: \\ and \n) and "# TYPE name type". */
void prom_family(struct strbuf *sb, const char *name, const char *type, const char *help);
/* One sample: name{l1="v1",...} value. Label values are escaped (\\, \", \n); a value
 * is written as an integer when it is one, else as a float (+Inf, -Inf, NaN). */
void prom_sample(struct strbuf *sb, const char *name, const struct prom_label *labels, int nlabels, double value);
/* A family of one sample without labels. */
void prom_single(struct strbuf *sb, const char *name, const char *type, const char *help, double value);

/* A histogram with fixed upper bounds (ascending, at most PROM_MAX_BUCKETS). */
#define PROM_MAX_BUCKETS 16
struct prom_histogram {
    const double *bounds;
    int nbounds;
    int64_t counts[PROM_MAX_BUCKETS + 1]; /* per bucket, not cumulative; the last: above every bound */
    double sum;
    int64_t count;
};
void prom_observe(struct prom_histogram *h, double v);
/* name_bucket{le="..."} cumulative, le="+Inf" (= count), name_sum, name_count. */
void prom_histogram_write(struct strbuf *sb, const char *name, const char *help, const struct prom_histogram *h);

/* ---- this api's own observations (one api per process) ---- */
/* A request reached the route table: its latency, until its reply is sent, goes into
 * the histogram (api/routes.c). */
void prom_request_begin(struct evhttp_request *r);
const struct prom_histogram *prom_request_histogram(void);
/* The scheduler's periodic tick ran now (mono ms); it is due every interval_ms. */
void prom_note_tick(int64_t now_ms, int64_t interval_ms);
/* The most the tick ran late in the last minute or so (ms). */
int64_t prom_tick_lag_ms(int64_t now_ms);

#endif
