/* chart_blocks.c: the charts' block summary, kept from the change sequence (chart_blocks.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "schema/chart_blocks.h"
#include "schema/webui_rows.h"

static void pt_set(struct chart_pt *p, int64_t seq, double v, const char *id)
{
    p->seq = seq;
    p->v = v;
    size_t n = id ? strlen(id) : 0;
    if (n >= sizeof p->id)
        n = sizeof p->id - 1;
    memcpy(p->id, id ? id : "", n);
    p->id[n] = '\0';
}

/* trials come in sequence order: on a tie the earlier one stays */
void chart_bucket_add(struct chart_bucket *b, int64_t seq, double v, const char *id)
{
    if (b->n == 0 || v < b->lo.v)
        pt_set(&b->lo, seq, v, id);
    if (b->n == 0 || v > b->hi.v)
        pt_set(&b->hi, seq, v, id);
    b->n++;
}

void chart_bucket_merge(struct chart_bucket *d, const struct chart_bucket *s)
{
    if (!s->n)
        return;
    if (d->n == 0 || s->lo.v < d->lo.v)
        d->lo = s->lo;
    if (d->n == 0 || s->hi.v > d->hi.v)
        d->hi = s->hi;
    d->n += s->n;
}

void chart_blocks_free(struct chart_blocks *cb)
{
    free(cb->b);
    memset(cb, 0, sizeof *cb);
}

struct fill {
    struct chart_blocks *cb;
    int64_t rows;
};

static void fill_row(void *ctx, const struct chart_row *r)
{
    struct fill *f = ctx;
    struct chart_blocks *cb = f->cb;
    f->rows++;
    int64_t k = (r->sequence - cb->base) >> cb->shift;
    if (k < 0 || k >= cb->nblocks)
        return;
    if (r->has_metric && isfinite(r->metric))
        chart_bucket_add(&cb->b[k].fin, r->sequence, r->metric, r->id);
    if (r->has_times)
        chart_bucket_add(&cb->b[k].dur, r->sequence, (double)(r->end_time - r->start_time) / 1000.0, r->id);
}

/* blocks from..to (inclusive) read again from their trials */
static int read_blocks(struct db *db, const char *exp_id, struct chart_blocks *cb, int64_t from, int64_t to,
                       struct errbuf *e)
{
    memset(&cb->b[from], 0, (size_t)(to - from + 1) * sizeof *cb->b);
    struct fill f = {.cb = cb};
    int rc = chart_rows(db, exp_id, cb->base + (from << cb->shift), cb->base + ((to + 1) << cb->shift) - 1, fill_row,
                        &f, e);
    cb->rows_read += f.rows;
    return rc;
}

static int64_t *touched_blocks(struct db *db, const char *exp_id, struct chart_blocks *cb, int64_t max, int64_t *n,
                               struct errbuf *e)
{
    /* the trials changed since the last refresh: a walk of trial_changes, at most max+1 */
    sqlite3_stmt *st = db_query(db, e, "SELECT sequence FROM trial WHERE experiment_id = ? AND change_seq > ?"
                                       " ORDER BY change_seq LIMIT ?", "sii", exp_id, cb->seen, max + 1);
    if (!st)
        return NULL;
    int64_t *k = xcalloc((size_t)max + 2, sizeof *k);
    int rc;
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        k[(*n)++] = (col_i64(st, 0) - cb->base) >> cb->shift;
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        free(k);
        errf(e, "charts: %s", sqlite3_errmsg(db->h));
        return NULL;
    }
    return k;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int refresh(struct db *db, const char *exp_id, int64_t change, struct chart_blocks *cb, struct errbuf *e)
{
    int64_t lo, hi;
    int found = trials_sequence_range(db, exp_id, &lo, &hi, e);
    if (found < 0)
        return -1;
    if (!found) {
        chart_blocks_free(cb);
        cb->seen = change;
        return 0;
    }
    int shift = 0;
    while (((hi - (lo & ~((INT64_C(1) << shift) - 1))) >> shift) + 1 > CHART_MAX_BLOCKS)
        shift++;
    if (cb->have && (shift != cb->shift || lo < cb->base))
        chart_blocks_free(cb); /* blocks of another size, or trials before the first block */
    int64_t base = cb->have ? cb->base : lo & ~((INT64_C(1) << shift) - 1);
    int64_t nblocks = ((hi - base) >> shift) + 1;
    if (cb->have && nblocks > cb->nblocks) { /* trials added: new blocks, read below as changed */
        cb->b = xrealloc(cb->b, (size_t)nblocks * sizeof *cb->b);
        memset(&cb->b[cb->nblocks], 0, (size_t)(nblocks - cb->nblocks) * sizeof *cb->b);
        cb->nblocks = nblocks;
    }
    cb->lo = lo;
    cb->hi = hi;
    if (cb->have) {
        /* a changed trial costs a block (1 << shift rows): past a quarter of the blocks,
         * reading all is cheaper */
        int64_t max = cb->nblocks / 4 + 16, n = 0;
        int64_t *k = touched_blocks(db, exp_id, cb, max, &n, e);
        if (!k)
            return -1;
        if (n <= max) {
            qsort(k, (size_t)n, sizeof *k, cmp_i64);
            int rc = 0;
            for (int64_t i = 0; rc == 0 && i < n; i++) {
                if ((i > 0 && k[i] == k[i - 1]) || k[i] < 0 || k[i] >= cb->nblocks)
                    continue;
                int64_t j = i; /* a run of consecutive blocks is one read */
                while (j + 1 < n && (k[j + 1] == k[j] || k[j + 1] == k[j] + 1))
                    j++;
                rc = read_blocks(db, exp_id, cb, k[i], k[j] < cb->nblocks ? k[j] : cb->nblocks - 1, e);
                i = j;
            }
            free(k);
            if (rc == 0)
                cb->seen = change;
            return rc;
        }
        free(k);
    }
    /* everything: read by chart_blocks_refresh, a slice at a time */
    free(cb->b);
    cb->shift = shift;
    cb->base = base;
    cb->nblocks = nblocks;
    cb->b = xcalloc((size_t)nblocks, sizeof *cb->b);
    cb->have = 1;
    cb->full = 1;
    cb->building = 1;
    cb->next = 0;
    cb->seen = change; /* what changes while it is read is read again after */
    return 0;
}

int chart_blocks_refresh(struct db *db, const char *exp_id, int64_t change, struct chart_blocks *cb, int64_t budget,
                         struct errbuf *e)
{
    cb->rows_read = 0;
    cb->full = 0;
    if (!cb->building) {
        if (cb->have && cb->seen == change)
            return 1;
        if (refresh(db, exp_id, change, cb, e) < 0)
            goto fail;
        if (!cb->building)
            return 1;
    }
    cb->full = 1;
    while (cb->next < cb->nblocks) {
        int64_t n = budget > 0 ? (budget >> cb->shift) + 1 : cb->nblocks;
        int64_t to = cb->next + n - 1 < cb->nblocks - 1 ? cb->next + n - 1 : cb->nblocks - 1;
        if (read_blocks(db, exp_id, cb, cb->next, to, e) < 0)
            goto fail;
        cb->next = to + 1;
        if (budget > 0 && cb->rows_read >= budget && cb->next < cb->nblocks)
            return 0;
    }
    cb->building = 0;
    if (cb->seen != change) { /* the trials changed while they were read */
        int64_t read = cb->rows_read;
        if (refresh(db, exp_id, change, cb, e) < 0)
            goto fail;
        cb->rows_read += read;
        cb->full = 1;
        if (cb->building)
            return 0;
    }
    return 1;
fail:
    chart_blocks_free(cb);
    return -1;
}
