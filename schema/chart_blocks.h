/* chart_blocks.h: the web UI charts' summary of an experiment's trials, kept up to date
 * from the change sequence (GET /webui/charts, docs/webui.md).
 *
 * The trials' sequence range is cut into blocks of 2^shift consecutive sequences; each
 * block keeps its lowest and highest shown final metric and duration (the earliest
 * trial on a tie) and how many trials have one. A refresh reads only the trials changed
 * since the last one (trial_changes index) and recomputes their blocks (2^shift rows
 * each); everything is read again only at the first refresh, when the blocks double in
 * size (at most CHART_MAX_BLOCKS blocks: 16,384 trials in blocks of 1, 1M in blocks of
 * 64), or when so many trials changed that reading them all is cheaper. A chart bucket
 * of whole blocks is the merge of its blocks, the same answer as reading its trials. */
#ifndef TRIALQ_CHART_BLOCKS_H
#define TRIALQ_CHART_BLOCKS_H

#include "schema/db.h"

#define CHART_MAX_BLOCKS 16384

struct chart_pt {
    int64_t seq;
    double v;
    char id[16];
};
/* the lowest and highest point of some trials (the earliest on a tie) and their number */
struct chart_bucket {
    struct chart_pt lo, hi;
    int64_t n;
};
struct chart_block {
    struct chart_bucket fin, dur; /* shown final metrics; durations in seconds (ended trials) */
};
struct chart_blocks {
    int have;           /* 0: nothing read yet (or no trial) */
    int shift;          /* a block is 1 << shift sequences */
    int64_t base;       /* first sequence of block 0, a multiple of 1 << shift */
    int64_t lo, hi;     /* the trials' sequence range */
    int64_t nblocks;
    struct chart_block *b;
    int64_t seen;       /* change counter at the last refresh */
    int building;       /* every block is being read, a slice per refresh: next is the next */
    int64_t next;
    int64_t rows_read;  /* trial rows read by the last refresh (for tests and benchmarks) */
    int full;           /* the last refresh read (part of) every trial */
};

void chart_bucket_add(struct chart_bucket *b, int64_t seq, double v, const char *id);
/* adds s, whose trials all come after those of d */
void chart_bucket_merge(struct chart_bucket *d, const struct chart_bucket *s);

/* Brings cb up to date with the experiment's trials (change: the change counter read
 * before). When every trial must be read, a call reads about budget rows (0: all) and
 * returns 0: call again (the api answers the request in between, so that it never
 * blocks long); 1 up to date; -1 with e set (cb is then emptied: the next refresh
 * reads all). */
int chart_blocks_refresh(struct db *db, const char *exp_id, int64_t change, struct chart_blocks *cb, int64_t budget,
                         struct errbuf *e);
void chart_blocks_free(struct chart_blocks *cb);

#endif
