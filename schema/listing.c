/* listing.c: paged reads of trials and metrics for the REST listings and exports. */
#include <stdlib.h>
#include <string.h>

#include "schema/listing.h"

/* Rows per query: small enough that a query is short, large enough that the per-query
 * cost is noise. */
#define PAGE_ROWS 256

void page_init(struct page *p, const char *exp_id)
{
    memset(p, 0, sizeof *p);
    p->exp_id = exp_id;
    p->seq_min = INT64_MIN;
    p->seq_max = INT64_MAX;
    p->limit = -1;
    p->key1 = INT64_MIN;
    p->key2 = INT64_MIN;
}

/* Rows the next query may return (0: the limit is reached). */
static int64_t rows_wanted(struct page *p)
{
    int64_t want = PAGE_ROWS;
    if (p->limit >= 0 && p->limit - p->produced < want)
        want = p->limit - p->produced;
    if (want <= 0)
        p->done = 1;
    return want > 0 ? want : 0;
}

/* The offset applies to the first query only: later ones continue after the key. */
static int64_t take_offset(struct page *p)
{
    int64_t off = p->offset;
    p->offset = 0;
    return off;
}

static void separator(struct page *p, struct strbuf *sb)
{
    if (p->produced++ > 0)
        sb_add(sb, ",", 1);
}

static int step_error(struct db *db, sqlite3_stmt *st, int rc, struct errbuf *e)
{
    sqlite3_reset(st);
    if (rc == SQLITE_DONE)
        return 0;
    return errf(e, "reading the history: %s", sqlite3_errmsg(db->h));
}

/* ---------------- cursors ---------------- */

static int change_counter(struct db *db, int64_t *out, struct errbuf *e)
{
    *out = 0;
    return db_int(db, e, out, "SELECT value FROM change_counter WHERE id = 1", "") < 0 ? -1 : 0;
}

int trial_page_cursor(struct db *db, struct page *p, int64_t *out, struct errbuf *e)
{
    if (p->incremental && p->limit >= 0) {
        int64_t nth = p->offset + p->limit - 1, v = 0;
        int found = nth < 0 ? 0
                  : p->status ? db_int(db, e, &v, "SELECT change_seq FROM trial WHERE experiment_id = ?"
                                                  " AND change_seq > ? AND status = ? ORDER BY change_seq"
                                                  " LIMIT 1 OFFSET ?", "sisi", p->exp_id, p->since, p->status, nth)
                              : db_int(db, e, &v, "SELECT change_seq FROM trial WHERE experiment_id = ?"
                                                  " AND change_seq > ? ORDER BY change_seq LIMIT 1 OFFSET ?",
                                       "sii", p->exp_id, p->since, nth);
        if (found < 0)
            return -1;
        if (nth < 0) { /* limit 0: nothing is read, the client stays where it was */
            *out = p->since;
            return 0;
        }
        if (found) {
            *out = v;
            return 0;
        }
    }
    if (change_counter(db, out, e) < 0)
        return -1;
    if (p->incremental && *out < p->since)
        *out = p->since;
    return 0;
}

int metric_page_cursor(struct db *db, struct page *p, int64_t *out, struct errbuf *e)
{
    if (p->incremental && p->limit >= 0) {
        int64_t nth = p->offset + p->limit - 1, v = 0;
        if (nth < 0) {
            *out = p->since;
            return 0;
        }
        int found = db_int(db, e, &v,
            "SELECT m.id FROM metric m CROSS JOIN trial t"
            " WHERE m.id > ?1 AND t.id = m.trial_id AND t.experiment_id = ?2 AND m.attempt = t.attempt"
            " AND (?3 IS NULL OR m.type = ?3) AND (?4 IS NULL OR m.trial_id = ?4)"
            " AND t.sequence BETWEEN ?5 AND ?6 ORDER BY m.id LIMIT 1 OFFSET ?7",
            "isssiii", p->since, p->exp_id, p->type, p->trial_id, p->seq_min, p->seq_max, nth);
        if (found < 0)
            return -1;
        if (found) {
            *out = v;
            return 0;
        }
    }
    *out = 0;
    if (db_int(db, e, out, "SELECT coalesce(max(id), 0) FROM metric", "") < 0)
        return -1;
    if (p->incremental && *out < p->since)
        *out = p->since;
    return 0;
}

/* ---------------- trials ---------------- */

/* A page of trials with the FINAL metric NNI shows for SUCCEEDED ones joined in (the
 * first FINAL of the current attempt, through the metric_final index): one query per
 * page, not one per trial. The inner query picks the page, the outer one adds it. */
#define TRIAL_PAGE(inner, order)                                                                     \
    "SELECT t.*, m.trial_id, m.parameter_id, m.type, m.sequence, m.value, m.time, m.id FROM ("      \
    inner ") t LEFT JOIN metric m ON t.status = 'SUCCEEDED' AND t.final_metric_json IS NOT NULL"       \
    " AND m.id = (SELECT f.id FROM metric f WHERE f.trial_id = t.id AND f.attempt = t.attempt"        \
    " AND f.type = 'FINAL' ORDER BY f.id LIMIT 1) ORDER BY " order
/* columns of the outer select: TRIAL_COLUMNS, change_seq, then NNI_METRIC_COLUMNS */
#define TRIAL_NCOLS TRIAL_NCOLUMNS
#define FINAL_COL (TRIAL_NCOLS + 1)

int trial_seq_at(struct db *db, const char *exp_id, const char *status, int desc, int64_t nth, int64_t *seq,
                 struct errbuf *e)
{
    static const char *const blocks[2][2] = {
        {"SELECT block, sum(n) FROM trial_status_count WHERE experiment_id = ?1 GROUP BY block ORDER BY block",
         "SELECT block, sum(n) FROM trial_status_count WHERE experiment_id = ?1 GROUP BY block ORDER BY block DESC"},
        {"SELECT block, n FROM trial_status_count WHERE experiment_id = ?1 AND status = ?2 ORDER BY block",
         "SELECT block, n FROM trial_status_count WHERE experiment_id = ?1 AND status = ?2 ORDER BY block DESC"},
    };
    static const char *const within[2][2] = {
        {"SELECT sequence FROM trial WHERE experiment_id = ?1 AND sequence >= ?2 ORDER BY sequence LIMIT 1 OFFSET ?3",
         "SELECT sequence FROM trial WHERE experiment_id = ?1 AND sequence <= ?2 ORDER BY sequence DESC"
         " LIMIT 1 OFFSET ?3"},
        {"SELECT sequence FROM trial WHERE experiment_id = ?1 AND status = ?2 AND sequence >= ?3 ORDER BY sequence"
         " LIMIT 1 OFFSET ?4",
         "SELECT sequence FROM trial WHERE experiment_id = ?1 AND status = ?2 AND sequence <= ?3"
         " ORDER BY sequence DESC LIMIT 1 OFFSET ?4"},
    };
    int by = status != NULL;
    desc = desc != 0;
    sqlite3_stmt *st = by ? db_query(db, e, blocks[by][desc], "ss", exp_id, status)
                          : db_query(db, e, blocks[by][desc], "s", exp_id);
    if (!st)
        return -1;
    int64_t block = INT64_MIN;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t n = col_i64(st, 1);
        if (n > nth) {
            block = col_i64(st, 0);
            break;
        }
        nth -= n;
    }
    if (step_error(db, st, rc == SQLITE_ROW ? SQLITE_DONE : rc, e) < 0)
        return -1;
    if (block == INT64_MIN)
        return 0; /* past the end */
    /* a trial changed status since the counts were read: the walk goes on past the block */
    int64_t from = desc ? block * 1024 + 1023 : block * 1024;
    return by ? db_int(db, e, seq, within[by][desc], "ssii", exp_id, status, from, nth)
              : db_int(db, e, seq, within[by][desc], "sii", exp_id, from, nth);
}

/* An offset within one status: the trial_seq_at the offset, or a walk after a key. */
static int skip_status_offset(struct db *db, struct page *p, int64_t off, int64_t *key, struct errbuf *e)
{
    if (p->key1 == INT64_MIN)
        return trial_seq_at(db, p->exp_id, p->status, 0, off - 1, key, e);
    return db_int(db, e, key, "SELECT sequence FROM trial WHERE experiment_id = ? AND status = ?"
                              " AND sequence > ? ORDER BY sequence LIMIT 1 OFFSET ?", "ssii", p->exp_id, p->status,
                  p->key1, off - 1);
}

/* An offset is skipped in the index alone (these queries are covered by it), and
 * the page then starts after the key found there: skipping 90,000 trials reads no
 * trial row. 1 skipped (p->key1 set), 0 nothing to skip there (past the end: the page
 * is empty), -1 error. */
static int skip_offset(struct db *db, struct page *p, int64_t off, struct errbuf *e)
{
    int64_t key = 0;
    int found;
    if (p->incremental)
        found = db_int(db, e, &key, "SELECT change_seq FROM trial WHERE experiment_id = ? AND change_seq > ?"
                                    " AND change_seq <= ? ORDER BY change_seq LIMIT 1 OFFSET ?",
                       "siii", p->exp_id, p->key1 == INT64_MIN ? p->since : p->key1, p->upto, off - 1);
    else if (p->status)
        found = skip_status_offset(db, p, off, &key, e);
    else
        found = db_int(db, e, &key, "SELECT sequence FROM trial WHERE experiment_id = ? AND sequence > ?"
                                    " ORDER BY sequence LIMIT 1 OFFSET ?", "sii", p->exp_id, p->key1, off - 1);
    if (found == 1)
        p->key1 = key;
    return found;
}

/* The whole list by sequence: the offset-th trial is the one with sequence lo + offset
 * while the span has no gap (listing.h). 1 found (p->key1 set), 0 past the end, 2 the
 * span has a gap (walk instead), -1 error. */
static int seek_offset(struct db *db, struct page *p, int64_t off, struct errbuf *e)
{
    struct seq_span *sp = p->span;
    if (!sp || sp->state < 0 || p->key1 != INT64_MIN)
        return 2;
    int64_t max = 0, n = 0;
    int found = db_int(db, e, &max, "SELECT sequence FROM trial WHERE experiment_id = ?"
                                    " ORDER BY sequence DESC LIMIT 1", "s", p->exp_id);
    if (found <= 0)
        return found; /* no trial: past the end */
    if (sp->state == 0) {
        if (db_int(db, e, &sp->lo, "SELECT sequence FROM trial WHERE experiment_id = ?"
                                   " ORDER BY sequence LIMIT 1", "s", p->exp_id) < 0)
            return -1;
        sp->hi = sp->lo - 1;
        sp->state = 1;
    }
    if (sp->hi < max) { /* trials added since: counted once, in the index */
        if (db_int(db, e, &n, "SELECT count(*) FROM trial WHERE experiment_id = ? AND sequence > ?"
                              " AND sequence <= ?", "sii", p->exp_id, sp->hi, max) < 0)
            return -1;
        if (n != max - sp->hi) {
            sp->state = -1;
            return 2;
        }
        sp->hi = max;
    }
    if (off - 1 > sp->hi - sp->lo)
        return 0;
    p->key1 = sp->lo + off - 1; /* the last trial skipped */
    return 1;
}

static sqlite3_stmt *trial_query(struct db *db, struct page *p, int64_t want, struct errbuf *e)
{
    int64_t off = take_offset(p);
    if (p->incremental) {
        int64_t after = p->key1 == INT64_MIN ? p->since : p->key1;
        if (p->status)
            return db_query(db, e, TRIAL_PAGE("SELECT " TRIAL_COLUMNS ", change_seq FROM trial WHERE experiment_id = ?"
                                              " AND change_seq > ? AND change_seq <= ? AND status = ?"
                                              " ORDER BY change_seq LIMIT ? OFFSET ?", "t.change_seq"),
                            "siisii", p->exp_id, after, p->upto, p->status, want, off);
        return db_query(db, e, TRIAL_PAGE("SELECT " TRIAL_COLUMNS ", change_seq FROM trial WHERE experiment_id = ?"
                                          " AND change_seq > ? AND change_seq <= ? ORDER BY change_seq LIMIT ? OFFSET ?",
                                          "t.change_seq"),
                        "siiii", p->exp_id, after, p->upto, want, off);
    }
    /* by status: the trial_queue index (experiment_id, status, sequence) */
    if (p->status)
        return db_query(db, e, TRIAL_PAGE("SELECT " TRIAL_COLUMNS ", change_seq FROM trial WHERE experiment_id = ?"
                                          " AND status = ? AND sequence > ? ORDER BY sequence LIMIT ? OFFSET ?",
                                          "t.sequence"),
                        "ssiii", p->exp_id, p->status, p->key1, want, off);
    return db_query(db, e, TRIAL_PAGE("SELECT " TRIAL_COLUMNS ", change_seq FROM trial WHERE experiment_id = ?"
                                      " AND sequence > ? ORDER BY sequence LIMIT ? OFFSET ?", "t.sequence"),
                    "siii", p->exp_id, p->key1, want, off);
}

int trial_page_next(struct db *db, const struct experiment *x, struct page *p, size_t max_bytes,
                    struct strbuf *sb, struct errbuf *e)
{
    while (!p->done && sb->len < max_bytes) {
        int64_t want = rows_wanted(p);
        if (!want)
            break;
        if (p->offset > 0 && !(p->incremental && p->status)) {
            int found = p->incremental || p->status ? 2 : seek_offset(db, p, p->offset, e);
            if (found == 2)
                found = skip_offset(db, p, p->offset, e);
            if (found < 0)
                return -1;
            p->offset = 0;
            if (!found) { /* past the end */
                p->done = 1;
                break;
            }
        }
        sqlite3_stmt *st = trial_query(db, p, want, e);
        if (!st)
            return -1;
        int n = 0, s;
        while ((s = sqlite3_step(st)) == SQLITE_ROW) {
            struct trial t;
            trial_from_row(st, &t);
            p->key1 = p->incremental ? col_i64(st, TRIAL_NCOLS) : t.sequence;
            struct nni_metric final;
            int has_final = sqlite3_column_type(st, FINAL_COL) != SQLITE_NULL;
            if (has_final)
                nni_metric_from_row(st, FINAL_COL, &final);
            separator(p, sb);
            nni_trial_job_text(sb, x, &t, has_final ? &final : NULL);
            trial_clear(&t);
            n++;
        }
        if (step_error(db, st, s, e) < 0)
            return -1;
        if (n < want)
            p->done = 1;
    }
    return 0;
}

/* ---------------- metrics ---------------- */

static sqlite3_stmt *metric_query(struct db *db, struct page *p, int64_t want, struct errbuf *e)
{
    int64_t off = take_offset(p);
    if (p->incremental) {
        /* metric first: the range of new ids is what is small */
        int64_t after = p->key2 == INT64_MIN ? p->since : p->key2;
        return db_query(db, e,
            "SELECT " NNI_METRIC_COLUMNS ", t.sequence FROM metric m CROSS JOIN trial t"
            " WHERE m.id > ?1 AND m.id <= ?2 AND t.id = m.trial_id AND t.experiment_id = ?3"
            " AND m.attempt = t.attempt AND (?4 IS NULL OR m.type = ?4) AND (?5 IS NULL OR m.trial_id = ?5)"
            " AND t.sequence BETWEEN ?6 AND ?7 ORDER BY m.id LIMIT ?8 OFFSET ?9",
            "iisssiiii", after, p->upto, p->exp_id, p->type, p->trial_id, p->seq_min, p->seq_max, want, off);
    }
    /* NNI's order as trialq has always given it: by trial, then as reported */
    int64_t lo = p->key1 > p->seq_min ? p->key1 : p->seq_min;
    if (p->trial_id)
        return db_query(db, e,
            "SELECT " NNI_METRIC_COLUMNS ", t.sequence FROM trial t JOIN metric m"
            " ON m.trial_id = t.id AND m.attempt = t.attempt"
            " WHERE t.id = ?1 AND t.experiment_id = ?2 AND (?3 IS NULL OR m.type = ?3) AND m.id > ?4"
            " ORDER BY m.id LIMIT ?5 OFFSET ?6",
            "sssiii", p->trial_id, p->exp_id, p->type, p->key2, want, off);
    return db_query(db, e,
        "SELECT " NNI_METRIC_COLUMNS ", t.sequence FROM trial t JOIN metric m"
        " ON m.trial_id = t.id AND m.attempt = t.attempt"
        " WHERE t.experiment_id = ?1 AND t.sequence >= ?2 AND t.sequence <= ?3"
        " AND (t.sequence > ?4 OR m.id > ?5) AND (?6 IS NULL OR m.type = ?6)"
        " ORDER BY t.sequence, m.id LIMIT ?7 OFFSET ?8",
        "siiiisii", p->exp_id, lo, p->seq_max, p->key1, p->key2, p->type, want, off);
}

/* Steps a metric query to its end, rendering each row. Returns rows or -1. */
static int render_metrics(struct db *db, sqlite3_stmt *st, struct page *p, struct strbuf *sb, struct errbuf *e)
{
    int n = 0, s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        struct nni_metric m;
        nni_metric_from_row(st, 0, &m);
        separator(p, sb);
        nni_metric_text(sb, &m);
        p->key1 = col_i64(st, 7);
        p->key2 = m.id;
        n++;
    }
    return step_error(db, st, s, e) < 0 ? -1 : n;
}

/* The key (trial sequence, metric id) of the nth (0-based) metric of the listing among
 * the trials with sequences lo..hi: counted in the database, at most one block of
 * metrics walked. 1 found, 0 there is none, -1 error. */
static int metric_key_at(struct db *db, const struct page *p, int64_t lo, int64_t hi, int64_t nth, int64_t *seq,
                         int64_t *id, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e,
        "SELECT t.sequence, m.id FROM trial t JOIN metric m ON m.trial_id = t.id AND m.attempt = t.attempt"
        " WHERE t.experiment_id = ?1 AND t.sequence >= ?2 AND t.sequence <= ?3 AND (?4 IS NULL OR m.type = ?4)"
        " ORDER BY t.sequence, m.id LIMIT 1 OFFSET ?5", "siisi", p->exp_id, lo, hi, p->type, nth);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *seq = col_i64(st, 0);
        *id = col_i64(st, 1);
    }
    if (step_error(db, st, rc == SQLITE_ROW ? SQLITE_DONE : rc, e) < 0)
        return -1;
    return rc == SQLITE_ROW;
}

/* The metrics of the listing among the trials with sequences lo..hi (a part of one block). */
static int metric_count_in(struct db *db, const struct page *p, int64_t lo, int64_t hi, int64_t *n,
                           struct errbuf *e)
{
    *n = 0;
    return db_int(db, e, n, "SELECT count(*) FROM trial t JOIN metric m ON m.trial_id = t.id AND m.attempt = t.attempt"
                            " WHERE t.experiment_id = ?1 AND t.sequence >= ?2 AND t.sequence <= ?3"
                            " AND (?4 IS NULL OR m.type = ?4)", "siis", p->exp_id, lo, hi, p->type) < 0 ? -1 : 0;
}

#define MC_SHIFT 6 /* metric_count's blocks: 64 trial sequences (migration 019) */

/* Where a seek stands while it visits the blocks in order. */
struct seek_walk {
    struct db *db;
    const struct page *p;
    int64_t nth;      /* metrics still to skip */
    int64_t from, to; /* the sequences of the block visited last, clipped to the range */
};

/* Visits a block whose kept count is n: 1 the nth metric is in it, 0 skipped, -1 error. A
 * block the range cuts is counted row by row instead. */
static int seek_visit(struct seek_walk *w, int64_t block, int64_t n, struct errbuf *e)
{
    int64_t first = block << MC_SHIFT, last = first + ((INT64_C(1) << MC_SHIFT) - 1);
    w->from = first < w->p->seq_min ? w->p->seq_min : first;
    w->to = last > w->p->seq_max ? w->p->seq_max : last;
    if ((w->from != first || w->to != last) && metric_count_in(w->db, w->p, w->from, w->to, &n, e) < 0)
        return -1;
    if (n > w->nth)
        return 1;
    w->nth -= n;
    return 0;
}

struct block_n {
    int64_t block, n;
};

/* The metrics stored since the last fold (migration 020: not in metric_count yet), per
 * block of the range, in block order: a few rows, what arrived in the last half second. */
static int seek_backlog(struct db *db, const struct page *p, struct block_n **out, size_t *nout, struct errbuf *e)
{
    *out = NULL;
    *nout = 0;
    sqlite3_stmt *st = db_query(db, e,
        "SELECT t.sequence >> 6, count(*)"
        " FROM metric m CROSS JOIN trial t ON t.id = m.trial_id AND t.attempt = m.attempt"
        " WHERE m.id > (SELECT upto FROM metric_fold) AND t.experiment_id = ?1 AND t.sequence >= ?2"
        " AND t.sequence <= ?3 AND (?4 IS NULL OR m.type = ?4) GROUP BY 1 ORDER BY 1",
        "siis", p->exp_id, p->seq_min, p->seq_max, p->type);
    if (!st)
        return -1;
    int rc;
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*nout == cap) {
            cap = cap ? 2 * cap : 16;
            *out = xrealloc(*out, cap * sizeof **out);
        }
        (*out)[(*nout)++] = (struct block_n){col_i64(st, 0), col_i64(st, 1)};
    }
    if (step_error(db, st, rc, e) < 0) {
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* An offset into the whole listing (or a range of trial sequences) as a seek: the
 * blocks' counts (metric_count, plus the metrics not folded in yet) are summed up to the
 * block that holds the offset-th metric, which is then found by a walk of that block
 * alone; a block the range cuts is counted row by row. The page then starts after the
 * last metric skipped (p->key1, key2). 1 skipped, 0 past the end (the page is empty), 2
 * the counts disagree with the rows (a database edited by hand): walk instead. -1 error. */
static int metric_seek(struct db *db, struct page *p, int64_t off, struct errbuf *e)
{
    int64_t lo = p->seq_min, hi = p->seq_max;
    struct seek_walk w = {db, p, off - 1, 0, 0};
    struct block_n *bl;
    size_t nbl, j = 0;
    if (seek_backlog(db, p, &bl, &nbl, e) < 0)
        return -1;
    sqlite3_stmt *st = db_query(db, e,
        "SELECT block, CASE ?4 WHEN 'FINAL' THEN final WHEN 'PERIODICAL' THEN periodical ELSE periodical + final END"
        " FROM metric_count WHERE experiment_id = ?1 AND block >= ?2 AND block <= ?3 ORDER BY block",
        "siis", p->exp_id, lo >> MC_SHIFT, hi >> MC_SHIFT, p->type);
    if (!st) {
        free(bl);
        return -1;
    }
    int rc = SQLITE_DONE, found = 0;
    /* the kept rows and the backlog's, merged in block order */
    while (!found && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t block = col_i64(st, 0), n = col_i64(st, 1);
        for (; !found && j < nbl && bl[j].block < block; j++)
            found = seek_visit(&w, bl[j].block, bl[j].n, e);
        if (found)
            break;
        if (j < nbl && bl[j].block == block)
            n += bl[j++].n;
        found = seek_visit(&w, block, n, e);
    }
    if (found < 0)
        sqlite3_reset(st);
    else if (step_error(db, st, found ? SQLITE_DONE : rc, e) < 0)
        found = -1;
    for (; !found && j < nbl; j++)
        found = seek_visit(&w, bl[j].block, bl[j].n, e);
    free(bl);
    if (found <= 0)
        return found;
    int64_t seq, id;
    int at = metric_key_at(db, p, w.from, w.to, w.nth, &seq, &id, e);
    if (at <= 0)
        return at < 0 ? -1 : 2;
    p->key1 = seq;
    p->key2 = id;
    return 1;
}

int metric_page_next(struct db *db, struct page *p, size_t max_bytes, struct strbuf *sb, struct errbuf *e)
{
    while (!p->done && sb->len < max_bytes) {
        int64_t want = rows_wanted(p);
        if (!want)
            break;
        if (p->offset > 0 && !p->incremental && !p->trial_id && p->key1 == INT64_MIN) {
            int found = metric_seek(db, p, p->offset, e);
            if (found < 0)
                return -1;
            if (found != 2)
                p->offset = 0; /* skipped; else the query below walks it */
            if (!found) {
                p->done = 1;
                break;
            }
        }
        sqlite3_stmt *st = metric_query(db, p, want, e);
        if (!st)
            return -1;
        int n = render_metrics(db, st, p, sb, e);
        if (n < 0)
            return -1;
        if (n < want)
            p->done = 1;
    }
    return 0;
}

int metric_latest_next(struct db *db, struct page *p, size_t max_bytes, struct strbuf *sb, struct errbuf *e)
{
    while (!p->done && sb->len < max_bytes) {
        sqlite3_stmt *st;
        if (p->phase == 0) {
            /* every FINAL (the metric_final index), in the order the trials came */
            int64_t lo = p->key1;
            st = db_query(db, e,
                "SELECT " NNI_METRIC_COLUMNS ", t.sequence FROM trial t JOIN metric m"
                " ON m.trial_id = t.id AND m.attempt = t.attempt AND m.type = 'FINAL'"
                " WHERE t.experiment_id = ?1 AND t.sequence >= ?2 AND (t.sequence > ?2 OR m.id > ?3)"
                " ORDER BY t.sequence, m.id LIMIT ?4",
                "siii", p->exp_id, lo, p->key2, (int64_t)PAGE_ROWS);
        } else {
            /* the newest PERIODICAL of each trial: the highest sequence. max() with a
             * bare column takes the id from the row holding the maximum, in one pass
             * over the trial's index entries without sorting them (sequences are
             * unique per parameter id, so only a multi-phase trial could tie) */
            st = db_query(db, e,
                "SELECT " NNI_METRIC_COLUMNS ", t.sequence FROM trial t JOIN metric m ON m.id ="
                " (SELECT x.id FROM (SELECT p.id AS id, max(p.sequence) FROM metric p WHERE p.trial_id = t.id"
                "  AND p.attempt = t.attempt AND p.type = 'PERIODICAL') x)"
                " WHERE t.experiment_id = ?1 AND t.sequence > ?2 ORDER BY t.sequence LIMIT ?3",
                "sii", p->exp_id, p->key1, (int64_t)PAGE_ROWS);
        }
        if (!st)
            return -1;
        int n = render_metrics(db, st, p, sb, e);
        if (n < 0)
            return -1;
        if (n < PAGE_ROWS) {
            if (p->phase == 0) {
                p->phase = 1;
                p->key1 = INT64_MIN;
                p->key2 = INT64_MIN;
            } else {
                p->done = 1;
            }
        }
    }
    return 0;
}

/* ---------------- export ---------------- */

struct export_row {
    char *id, *parameters, *final_json;
    int attempt;
};

static int add_intermediate(struct db *db, const struct export_row *r, struct strbuf *sb, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT value FROM metric WHERE trial_id = ? AND attempt = ?"
                                       " AND type = 'PERIODICAL' ORDER BY time, id", "sd", r->id, r->attempt);
    if (!st)
        return -1;
    sb_puts(sb, ",\"intermediate\":[");
    int n = 0, s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (n++)
            sb_add(sb, ",", 1);
        nj_str(sb, (const char *)sqlite3_column_text(st, 0));
    }
    sb_add(sb, "]", 1);
    return step_error(db, st, s, e);
}

int export_page_next(struct db *db, struct page *p, int intermediate, size_t max_bytes, struct strbuf *sb,
                     struct errbuf *e)
{
    struct export_row rows[PAGE_ROWS];
    int rc = 0;
    while (!p->done && sb->len < max_bytes && rc == 0) {
        /* NNI exports the trials that have parameters and a final metric: SUCCEEDED ones */
        sqlite3_stmt *st = db_query(db, e,
            "SELECT id, parameters, final_metric_json, attempt, sequence FROM trial WHERE experiment_id = ?"
            " AND status = 'SUCCEEDED' AND final_metric_json IS NOT NULL AND sequence > ?"
            " ORDER BY sequence LIMIT ?", "sii", p->exp_id, p->key1, (int64_t)PAGE_ROWS);
        if (!st)
            return -1;
        int n = 0, s = SQLITE_DONE;
        while (n < PAGE_ROWS && (s = sqlite3_step(st)) == SQLITE_ROW) {
            rows[n].id = col_str(st, 0);
            rows[n].parameters = col_str(st, 1);
            rows[n].final_json = col_str(st, 2);
            rows[n].attempt = (int)col_i64(st, 3);
            p->key1 = col_i64(st, 4);
            n++;
        }
        if (n < PAGE_ROWS) {
            if (step_error(db, st, s, e) < 0)
                rc = -1;
            p->done = 1;
        } else {
            sqlite3_reset(st);
        }
        for (int i = 0; i < n; i++) {
            if (rc == 0) {
                separator(p, sb);
                nni_export_open(sb, rows[i].id, rows[i].parameters, rows[i].final_json);
                if (intermediate && add_intermediate(db, &rows[i], sb, e) < 0)
                    rc = -1;
                sb_add(sb, "}", 1);
            }
            free(rows[i].id);
            free(rows[i].parameters);
            free(rows[i].final_json);
        }
    }
    return rc;
}
