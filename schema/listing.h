/* listing.h: the reads behind the REST listings (trial-jobs, metric-data,
 * metric-data-range, metric-data-latest, export-data), in pages.
 *
 * A listing is read in short queries of a few hundred rows each, continuing after the
 * key of the last row produced (keyset paging): the api streams a listing of any size
 * in chunks without holding a statement or a read transaction open between them, and
 * its memory does not grow with the history.
 *
 * Incremental reads: every visible change of a trial row takes the next number of one
 * counter (trial.change_seq, migration 003) and metric ids are never reused, so "rows
 * changed after N" is a range query. A reader fixes the upper end (`upto`) before it
 * starts; the next read starts from there: nothing is missed, nothing repeats. */
#ifndef TRIALQ_LISTING_H
#define TRIALQ_LISTING_H

#include "schema/nnijson.h"

/* Trial sequences [lo, hi] of one experiment seen to have no gap, so that NNI's offset
 * into the list by sequence is a seek (lo + offset), not a walk over `offset` index
 * entries (which costs ~40 ms at a million trials). Sequences are only ever added
 * above the highest (experiment.next_sequence) and never removed, so a span once seen
 * whole stays whole; a reader keeps one per experiment across reads (the api does)
 * and extends it by counting only the trials added since. state: 0 not read yet, 1
 * read, -1 a gap was found (a database edited by hand): offsets walk the index. */
struct seq_span {
    int64_t lo, hi;
    int state;
};

struct page {
    /* what to read */
    const char *exp_id;
    const char *trial_id;     /* metrics of one trial; NULL = every trial */
    const char *status;       /* trials in one status; NULL = all */
    const char *type;         /* metrics of one type (PERIODICAL | FINAL); NULL = both */
    int64_t seq_min, seq_max; /* metrics of trials whose sequence is in [min, max] */
    int incremental;          /* rows with since < change (trial.change_seq, metric.id) <= upto */
    int64_t since, upto;
    int64_t offset;           /* rows skipped before the first one */
    struct seq_span *span;    /* the experiment's sequences, to seek an offset; NULL: walk */
    int64_t limit;            /* rows at most; -1 = all */
    /* where the reading is (set by page_init, advanced by the readers) */
    int64_t key1, key2;       /* key of the last row produced */
    int64_t produced;
    int phase;                /* metric-data-latest: 0 finals, 1 latest intermediates */
    int done;
};

/* Everything, in NNI's order, no filter. */
void page_init(struct page *p, const char *exp_id);

/* The upper end of an incremental read, or the cursor to hand out for a later one: the
 * change counter now, or with a limit the limit-th change after `since`. */
/* The sequence of the trial with nth (0-based) trials before it in sequence order
 * (desc: from the last), of one status or of all (NULL): whole blocks of 1024
 * sequences are skipped by their counts (trial_status_count, migration 017), then at
 * most about one block of an index is walked. 1 found, 0 past the end, -1 error. */
int trial_seq_at(struct db *db, const char *exp_id, const char *status, int desc, int64_t nth, int64_t *seq,
                 struct errbuf *e);

int trial_page_cursor(struct db *db, struct page *p, int64_t *out, struct errbuf *e);
int metric_page_cursor(struct db *db, struct page *p, int64_t *out, struct errbuf *e);

/* Each appends JSON objects (comma-separated, continuing the list) to sb until it holds
 * at least max_bytes or the listing ends (p->done). Return 0, or -1 on a database error. */
int trial_page_next(struct db *db, const struct experiment *x, struct page *p, size_t max_bytes,
                    struct strbuf *sb, struct errbuf *e);
int metric_page_next(struct db *db, struct page *p, size_t max_bytes, struct strbuf *sb, struct errbuf *e);
/* metric-data-latest: every FINAL metric, then the newest PERIODICAL metric of each trial. */
int metric_latest_next(struct db *db, struct page *p, size_t max_bytes, struct strbuf *sb, struct errbuf *e);
/* export-data records of SUCCEEDED trials; with intermediate, each also gets
 * "intermediate": the values of its PERIODICAL metrics (nnictl experiment export -i). */
int export_page_next(struct db *db, struct page *p, int intermediate, size_t max_bytes, struct strbuf *sb,
                     struct errbuf *e);

#endif
