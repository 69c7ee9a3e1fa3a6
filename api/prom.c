/* prom.c: Prometheus' text exposition format 0.0.4 (api/prom.h): families, samples with
 * escaped labels, histograms; and the api's own observations (request latencies, the
 * scheduler tick's lag), kept in memory: they are this process's, as Prometheus' client
 * libraries keep theirs. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "api/prom.h"

static void escape(struct strbuf *sb, const char *s, int quotes)
{
    for (; *s; s++) {
        if (*s == '\\')
            sb_puts(sb, "\\\\");
        else if (*s == '\n')
            sb_puts(sb, "\\n");
        else if (*s == '"' && quotes)
            sb_puts(sb, "\\\"");
        else
            sb_add(sb, s, 1);
    }
}

void prom_family(struct strbuf *sb, const char *name, const char *type, const char *help)
{
    sb_printf(sb, "# HELP %s ", name);
    escape(sb, help, 0);
    sb_printf(sb, "\n# TYPE %s %s\n", name, type);
}

static void value(struct strbuf *sb, double v)
{
    if (isnan(v))
        sb_puts(sb, "NaN");
    else if (isinf(v))
        sb_puts(sb, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9007199254740992.0) /* 2^53: exact as an integer */
        sb_printf(sb, "%lld", (long long)v);
    else
        sb_printf(sb, "%.15g", v); /* 15 digits: what a double holds for sure, without 0.1 as 0.10000000000000001 */
}

void prom_sample(struct strbuf *sb, const char *name, const struct prom_label *labels, int nlabels, double v)
{
    sb_puts(sb, name);
    for (int i = 0; i < nlabels; i++) {
        sb_printf(sb, "%s%s=\"", i ? "," : "{", labels[i].name);
        escape(sb, labels[i].value ? labels[i].value : "", 1);
        sb_puts(sb, "\"");
    }
    sb_puts(sb, nlabels ? "} " : " ");
    value(sb, v);
    sb_puts(sb, "\n");
}

void prom_single(struct strbuf *sb, const char *name, const char *type, const char *help, double v)
{
    prom_family(sb, name, type, help);
    prom_sample(sb, name, NULL, 0, v);
}

void prom_observe(struct prom_histogram *h, double v)
{
    int i = 0;
    while (i < h->nbounds && v > h->bounds[i])
        i++;
    h->counts[i]++;
    h->sum += v;
    h->count++;
}

void prom_histogram_write(struct strbuf *sb, const char *name, const char *help, const struct prom_histogram *h)
{
    char series[128], le[32];
    prom_family(sb, name, "histogram", help);
    snprintf(series, sizeof series, "%s_bucket", name);
    int64_t cum = 0;
    for (int i = 0; i < h->nbounds; i++) {
        cum += h->counts[i];
        snprintf(le, sizeof le, "%.15g", h->bounds[i]);
        prom_sample(sb, series, &(struct prom_label){"le", le}, 1, (double)cum);
    }
    prom_sample(sb, series, &(struct prom_label){"le", "+Inf"}, 1, (double)h->count);
    snprintf(series, sizeof series, "%s_sum", name);
    prom_sample(sb, series, NULL, 0, h->sum);
    snprintf(series, sizeof series, "%s_count", name);
    prom_sample(sb, series, NULL, 0, (double)h->count);
}

/* ---------------- the api's own observations ---------------- */

static const double latency_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
static struct prom_histogram g_latency = {latency_bounds, sizeof latency_bounds / sizeof latency_bounds[0], {0}, 0, 0};

/* The start time rides in the callback's argument (microseconds of the monotonic
 * clock): nothing is allocated, so a request whose connection dies before its reply
 * (the callback never runs) leaves nothing behind. */
static void request_done(struct evhttp_request *r, void *arg)
{
    (void)r;
    int64_t start = (int64_t)(intptr_t)arg;
    prom_observe(&g_latency, (double)(mono_us() - start) / 1e6);
}

void prom_request_begin(struct evhttp_request *r)
{
    evhttp_request_set_on_complete_cb(r, request_done, (void *)(intptr_t)mono_us());
}

const struct prom_histogram *prom_request_histogram(void)
{
    return &g_latency;
}

#define LAG_WINDOW_MS 60000
static int64_t g_last_tick, g_lag_max[2], g_lag_window; /* [0]: this window, [1]: the one before */

void prom_note_tick(int64_t now, int64_t interval_ms)
{
    int64_t w = now / LAG_WINDOW_MS;
    if (w != g_lag_window) {
        g_lag_max[1] = w == g_lag_window + 1 ? g_lag_max[0] : 0;
        g_lag_max[0] = 0;
        g_lag_window = w;
    }
    int64_t lag = g_last_tick ? now - g_last_tick - interval_ms : 0;
    if (lag > g_lag_max[0])
        g_lag_max[0] = lag;
    g_last_tick = now;
}

int64_t prom_tick_lag_ms(int64_t now)
{
    int64_t w = now / LAG_WINDOW_MS;
    if (w == g_lag_window)
        return g_lag_max[0] > g_lag_max[1] ? g_lag_max[0] : g_lag_max[1];
    return w == g_lag_window + 1 ? g_lag_max[0] : 0;
}
