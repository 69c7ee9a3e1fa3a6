/* routes_metrics.c: metric-data (all, one trial, pagination, incremental reads),
 * metric-data-range and metric-data-latest. */
#include <stdlib.h>
#include <string.h>

#include "api/routes.h"

static int fill_metrics(struct stream *s, struct strbuf *sb, struct errbuf *e)
{
    if (metric_page_next(s->a->db, &s->page, STREAM_PIECE, sb, e) < 0)
        return -1;
    return s->page.done ? 0 : 1;
}

static int fill_latest(struct stream *s, struct strbuf *sb, struct errbuf *e)
{
    if (metric_latest_next(s->a->db, &s->page, STREAM_PIECE, sb, e) < 0)
        return -1;
    return s->page.done ? 0 : 1;
}

/* ?type=FINAL|PERIODICAL&limit=&offset=&since= shared by the metric listings. With
 * since=, metrics with an id above it (X-Trialq-Seq of the previous reply), in id order. */
static void metric_listing(struct req *q, const char *trial_id, int64_t seq_min, int64_t seq_max)
{
    const char *type = query_str(q, "type");
    if (type && strcmp(type, "FINAL") != 0 && strcmp(type, "PERIODICAL") != 0) {
        reply_error(q->r, 400, "query parameter type: must be FINAL or PERIODICAL (got '%.64s')", type);
        return;
    }
    struct stream *s = stream_paged(q);
    if (!s)
        return;
    struct page *p = &s->page;
    p->type = stream_keep(s, type);
    p->trial_id = stream_keep(s, trial_id);
    p->seq_min = seq_min;
    p->seq_max = seq_max;
    stream_page_start(q, s, metric_page_cursor, fill_metrics);
}

void h_metric_data(struct req *q)
{
    metric_listing(q, NULL, INT64_MIN, INT64_MAX);
}

void h_metric_data_trial(struct req *q)
{
    metric_listing(q, q->args[0], INT64_MIN, INT64_MAX);
}

static int seq_arg(struct req *q, int i, const char *name, int64_t *out)
{
    const char *s = q->args[i];
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || v < 0 || v > INT64_MAX / 4) {
        reply_error(q->r, 400, "%s: must be a trial sequence number (got '%.64s')", name, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* Every metric of the trials whose sequenceId is in [min, max]. */
void h_metric_data_range(struct req *q)
{
    int64_t lo, hi;
    if (seq_arg(q, 0, "min_seq_id", &lo) < 0 || seq_arg(q, 1, "max_seq_id", &hi) < 0)
        return;
    metric_listing(q, NULL, lo, hi);
}

/* NNI: every non-PERIODICAL metric, then the newest PERIODICAL one of each trial. */
void h_metric_data_latest(struct req *q)
{
    struct stream *s = stream_new(q);
    if (!s)
        return;
    s->fill = fill_latest;
    stream_start(s, -1);
}
