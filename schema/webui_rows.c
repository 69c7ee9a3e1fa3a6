/* webui_rows.c: the web UI's reads (webui_rows.h). */
#include <stdlib.h>
#include <string.h>

#include "schema/listing.h"
#include "schema/webui_rows.h"

int change_counter_now(struct db *db, int64_t *out, struct errbuf *e)
{
    *out = 0;
    return db_int(db, e, out, "SELECT value FROM change_counter WHERE id = 1", "") < 0 ? -1 : 0;
}

/* A trial's final metric is shown (finalMetricData) only when it SUCCEEDED, as in NNI:
 * a failed trial's FINAL report has no place in a metric order. */
#define METRIC_SHOWN " AND status = 'SUCCEEDED'"

/* sort=<column> to an SQL expression (*nullable: some trials have no value for it; *shown:
 * more SQL that a trial with a value must also meet, else "") ; param:<name> sorts by that
 * parameter, metric:<key> by that key of a dict final metric. NULL for an unknown column. */
static const char *sort_expr(const char *sort, char *path, size_t pathsz, int *nullable, const char **shown)
{
    static const struct {
        const char *name, *expr;
        int nullable;
    } cols[] = {
        {"sequence", "sequence", 0},
        {"id", "id", 0},
        {"status", "status", 0},
        {"metric", "final_metric", 1},
        {"duration", "(coalesce(end_time, :now) - start_time)", 1},
        {"start", "start_time", 1},
        {"end", "end_time", 1},
    };
    *shown = "";
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++)
        if (strcmp(sort, cols[i].name) == 0) {
            *nullable = cols[i].nullable;
            if (strcmp(sort, "metric") == 0)
                *shown = METRIC_SHOWN;
            return cols[i].expr;
        }
    if (str_starts(sort, "param:")) {
        const char *n = sort + 6;
        if (!*n || strlen(n) > 100 || strpbrk(n, "\"\\"))
            return NULL;
        snprintf(path, pathsz, "$.\"%s\"", n);
        *nullable = 1;
        return "json_extract(parameters, :path)";
    }
    if (str_starts(sort, "metric:")) {
        /* a key of a dict final metric ({"default": .., "loss": ..}); a number has none */
        const char *n = sort + 7;
        if (!*n || strlen(n) > 100 || strpbrk(n, "\"\\"))
            return NULL;
        snprintf(path, pathsz, "$.\"%s\"", n);
        *nullable = 1;
        *shown = METRIC_SHOWN;
        return "(CASE WHEN json_valid(final_metric_json) THEN json_extract(final_metric_json, :path) END)";
    }
    return NULL;
}

/* the values a trial-page query may name */
struct binds {
    const char *exp, *status, *like, *text, *path;
    int64_t now, limit, offset, key;
};

static sqlite3_stmt *prep_bound(struct db *db, const char *sql, const struct binds *b, struct errbuf *e)
{
    sqlite3_stmt *st = db_prep(db, sql, e);
    if (!st)
        return NULL;
    const struct {
        const char *name, *v;
    } texts[] = {{":exp", b->exp}, {":status", b->status}, {":like", b->like}, {":text", b->text}, {":path", b->path}};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int k = sqlite3_bind_parameter_index(st, texts[i].name);
        if (k > 0)
            sqlite3_bind_text(st, k, texts[i].v, -1, SQLITE_TRANSIENT);
    }
    const struct {
        const char *name;
        int64_t v;
    } ints[] = {{":now", b->now}, {":limit", b->limit}, {":offset", b->offset}, {":key", b->key}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int k = sqlite3_bind_parameter_index(st, ints[i].name);
        if (k > 0)
            sqlite3_bind_int64(st, k, ints[i].v);
    }
    return st;
}

static int run_count(struct db *db, const char *sql, const struct binds *b, int64_t *out, struct errbuf *e)
{
    sqlite3_stmt *st = prep_bound(db, sql, b, e);
    if (!st)
        return -1;
    int rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? col_i64(st, 0) : 0;
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? 0 : errf(e, "counting trials: %s", sqlite3_errmsg(db->h));
}

/* Appends up to b->limit rows to rows[*n]. The rows are read before anything is
 * rendered: rendering runs queries of its own, which must not evict this statement
 * from the cache while it is stepped. */
static int run_page(struct db *db, const char *sql, const struct binds *b, struct trial *rows, int *n, struct errbuf *e)
{
    sqlite3_stmt *st = prep_bound(db, sql, b, e);
    if (!st)
        return -1;
    int rc = SQLITE_DONE, got = 0;
    while (got < b->limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        trial_from_row(st, &rows[*n]);
        (*n)++;
        got++;
    }
    if (got == b->limit)
        rc = SQLITE_DONE;
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : errf(e, "trial page: %s", sqlite3_errmsg(db->h));
}

int webui_sort_known(const char *sort)
{
    char path[128];
    int nullable;
    const char *shown;
    return sort_expr(sort ? sort : "sequence", path, sizeof path, &nullable, &shown) != NULL;
}

/* "%text%" for LIKE ... ESCAPE '\\', its wildcards escaped: the text is matched literally */
static char *like_pattern(const char *text)
{
    struct strbuf lb;
    sb_init(&lb);
    sb_puts(&lb, "%");
    for (const char *p = text; *p; p++) {
        if (*p == '%' || *p == '_' || *p == '\\')
            sb_add(&lb, "\\", 1);
        sb_add(&lb, p, 1);
    }
    sb_puts(&lb, "%");
    return sb_detach(&lb);
}

/* " FROM trial WHERE ...": the experiment, the status filter, the text filter */
static void where_clause(struct strbuf *where, const char *status_sql, int like)
{
    sb_init(where);
    sb_puts(where, " FROM trial WHERE experiment_id = :exp");
    sb_puts(where, status_sql);
    if (like)
        sb_puts(where, " AND (id LIKE :like ESCAPE '\\' OR CAST(sequence AS TEXT) = :text"
                       " OR parameters LIKE :like ESCAPE '\\' OR coalesce(message, '') LIKE :like ESCAPE '\\'"
                       " OR coalesce(waiting_reason, '') LIKE :like ESCAPE '\\')");
}

int webui_trial_page(struct db *db, const struct trial_query *q, struct trial *rows, int *n, int64_t *total,
                     struct errbuf *e)
{
    char path[128] = "";
    int nullable = 0;
    const char *shown = "";
    const char *expr = sort_expr(q->sort ? q->sort : "sequence", path, sizeof path, &nullable, &shown);
    if (!expr)
        return errf(e, "unknown sort column");
    const char *dir = q->desc ? "DESC" : "ASC";
    int nstatus = 0;
    for (const char *p = q->status; p && *p; p++)
        nstatus += p == q->status || *p == ',';
    char *like = q->text && *q->text ? like_pattern(q->text) : NULL;
    /* the statement from fixed pieces; every value is bound */
    const char *status_sql = nstatus == 1  ? " AND status = :status"
                             : nstatus > 1 ? " AND instr(',' || :status || ',', ',' || status || ',') > 0"
                                           : "";
    struct strbuf where;
    where_clause(&where, status_sql, like != NULL);
    /* Without a text filter the counts come from trial_status_count (migration 017), and
     * the count with a final metric is the SUCCEEDED count less those without one: a
     * few rows per 1024 trials read, not every trial. */
    int metric_sort = !like && strcmp(expr, "final_metric") == 0;
    char *count_sql = like ? xasprintf("SELECT count(*)%s", where.buf)
                           : xasprintf("SELECT coalesce(sum(n), 0) FROM trial_status_count WHERE experiment_id = :exp%s",
                                       status_sql);
    char *valued_count_sql =
        metric_sort ? xasprintf("SELECT coalesce(sum(n), 0) - CASE WHEN coalesce(sum(n), 0) > 0 THEN (SELECT count(*)"
                                " FROM trial WHERE experiment_id = :exp AND status = 'SUCCEEDED' AND final_metric IS NULL)"
                                " ELSE 0 END FROM trial_status_count WHERE experiment_id = :exp%s"
                                " AND status = 'SUCCEEDED'", status_sql)
                    : xasprintf("SELECT count(*)%s AND %s IS NOT NULL%s", where.buf, expr, shown);
    char *page_sql = !nullable && strcmp(expr, "sequence") == 0
                         ? xasprintf("SELECT " TRIAL_COLUMNS "%s ORDER BY sequence %s LIMIT :limit OFFSET :offset",
                                     where.buf, dir)
                     : !nullable ? xasprintf("SELECT " TRIAL_COLUMNS "%s ORDER BY %s %s, sequence %s"
                                             " LIMIT :limit OFFSET :offset", where.buf, expr, dir, dir)
                                 : xasprintf("SELECT " TRIAL_COLUMNS "%s AND %s IS NOT NULL%s ORDER BY %s %s,"
                                             " sequence %s LIMIT :limit OFFSET :offset", where.buf, expr, shown, expr,
                                             dir, dir);
    char *unvalued_sql = xasprintf("SELECT " TRIAL_COLUMNS "%s AND NOT (%s IS NOT NULL%s) ORDER BY sequence %s"
                                   " LIMIT :limit OFFSET :offset", where.buf, expr, shown, dir);
    struct binds b = {.exp = q->exp_id, .status = q->status, .like = like, .text = q->text, .path = path,
                      .now = now_ms(), .limit = q->limit, .offset = q->offset};
    int64_t valued = 0, limit = q->limit, offset = q->offset;
    *n = 0;
    *total = 0;
    int rc = run_count(db, count_sql, &b, total, e);
    if (rc == 0 && !nullable && !like && nstatus <= 1 && offset > 0 && strcmp(expr, "sequence") == 0) {
        /* by sequence: the first row is found by the counts per block, not a walk */
        int found = trial_seq_at(db, q->exp_id, nstatus ? q->status : NULL, q->desc, offset, &b.key, e);
        char *seek_sql = found == 1 ? xasprintf("SELECT " TRIAL_COLUMNS "%s AND sequence %s :key ORDER BY sequence %s"
                                                " LIMIT :limit", where.buf, q->desc ? "<=" : ">=", dir)
                                    : NULL;
        rc = found < 0 ? -1 : found == 0 ? 0 : run_page(db, seek_sql, &b, rows, n, e);
        free(seek_sql);
    } else if (rc == 0 && !nullable) {
        rc = run_page(db, page_sql, &b, rows, n, e);
    } else if (rc == 0) {
        rc = run_count(db, valued_count_sql, &b, &valued, e);
        if (rc == 0 && offset < valued)
            rc = run_page(db, page_sql, &b, rows, n, e);
        if (rc == 0 && *n < limit) {
            b.limit = limit - *n;
            b.offset = offset > valued ? offset - valued : 0;
            rc = run_page(db, unvalued_sql, &b, rows, n, e);
        }
    }
    sb_free(&where);
    free(count_sql);
    free(valued_count_sql);
    free(page_sql);
    free(unvalued_sql);
    free(like);
    return rc;
}

/* a seek to the NULLs of trial_status_metric (migration 017) */
#define SUCCEEDED_WITHOUT_METRIC "SELECT count(*) FROM trial WHERE experiment_id = ?1 AND status = 'SUCCEEDED'" \
                                 " AND final_metric IS NULL"

int trials_succeeded_without_metric(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e)
{
    *out = 0;
    return db_int(db, e, out, SUCCEEDED_WITHOUT_METRIC, "s", exp_id) < 0 ? -1 : 0;
}

int trials_with_shown_metric(struct db *db, const char *exp_id, int64_t *out, struct errbuf *e)
{
    /* the SUCCEEDED count kept in trial_status_count less those without a final metric */
    *out = 0;
    return db_int(db, e, out, "SELECT coalesce(sum(n), 0) - (" SUCCEEDED_WITHOUT_METRIC ") FROM trial_status_count"
                              " WHERE experiment_id = ?1 AND status = 'SUCCEEDED'", "s", exp_id) < 0 ? -1 : 0;
}

int trials_sequence_range(struct db *db, const char *exp_id, int64_t *lo, int64_t *hi, struct errbuf *e)
{
    /* two seeks in the (experiment_id, sequence) index: min() and max() in one select
     * would count through every trial */
    sqlite3_stmt *st = db_query(db, e, "SELECT (SELECT min(sequence) FROM trial WHERE experiment_id = ?1),"
                                       " (SELECT max(sequence) FROM trial WHERE experiment_id = ?1)", "s", exp_id);
    if (!st)
        return -1;
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *lo = col_i64(st, 0);
        *hi = col_i64(st, 1);
        found = 1;
    }
    sqlite3_reset(st);
    return rc == SQLITE_ROW ? found : errf(e, "charts: %s", sqlite3_errmsg(db->h));
}

int chart_rows(struct db *db, const char *exp_id, int64_t from, int64_t to,
               void (*fn)(void *ctx, const struct chart_row *r), void *ctx, struct errbuf *e)
{
    sqlite3_stmt *st = db_query(db, e, "SELECT sequence, id, CASE WHEN status = 'SUCCEEDED' THEN final_metric END,"
                                       " start_time, end_time FROM trial WHERE experiment_id = ?"
                                       " AND sequence >= ? AND sequence <= ? ORDER BY sequence",
                                "sii", exp_id, from, to); /* the final metrics trials show (METRIC_SHOWN) */
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct chart_row r = {
            .sequence = col_i64(st, 0),
            .id = (const char *)sqlite3_column_text(st, 1),
            .has_metric = sqlite3_column_type(st, 2) != SQLITE_NULL,
            .metric = sqlite3_column_double(st, 2),
            .has_times = sqlite3_column_type(st, 3) != SQLITE_NULL && sqlite3_column_type(st, 4) != SQLITE_NULL,
            .start_time = col_i64(st, 3),
            .end_time = col_i64(st, 4),
        };
        fn(ctx, &r);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : errf(e, "charts: %s", sqlite3_errmsg(db->h));
}

static int param_step(struct db *db, sqlite3_stmt *st, void (*fn)(void *ctx, const struct param_row *r), void *ctx,
                      struct errbuf *e)
{
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct param_row r = {
            .id = (const char *)sqlite3_column_text(st, 0),
            .sequence = col_i64(st, 1),
            .metric = sqlite3_column_double(st, 2),
            .parameters = (const char *)sqlite3_column_text(st, 3),
            .end_time = col_i64(st, 4),
        };
        fn(ctx, &r);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : errf(e, "parameter sample: %s", sqlite3_errmsg(db->h));
}

#define PARAM_ROW "SELECT id, sequence, final_metric, parameters, coalesce(end_time, 0) FROM trial WHERE experiment_id = ?" \
                  " AND final_metric IS NOT NULL" METRIC_SHOWN

int param_rows(struct db *db, const char *exp_id, int maximize, int64_t limit,
               void (*fn)(void *ctx, const struct param_row *r), void *ctx, struct errbuf *e)
{
    /* a walk of trial_status_metric from its end */
    sqlite3_stmt *st = db_query(db, e, maximize ? PARAM_ROW " ORDER BY final_metric DESC, sequence LIMIT ?"
                                                : PARAM_ROW " ORDER BY final_metric ASC, sequence LIMIT ?",
                                "si", exp_id, limit);
    return st ? param_step(db, st, fn, ctx, e) : -1;
}

int param_sample(struct db *db, const char *exp_id, int64_t count, int64_t limit,
                 void (*fn)(void *ctx, const struct param_row *r), void *ctx, struct errbuf *e)
{
    if (limit <= 0 || count <= 0)
        return 0;
    if (count <= limit) { /* every one: a walk of as many entries of trial_queue */
        sqlite3_stmt *st = db_query(db, e, PARAM_ROW " ORDER BY sequence LIMIT ?", "si", exp_id, limit);
        return st ? param_step(db, st, fn, ctx, e) : -1;
    }
    int64_t lo, hi;
    int found = trials_sequence_range(db, exp_id, &lo, &hi, e);
    if (found <= 0)
        return found;
    /* the first trial at or after each of `limit` points spread evenly over the
     * sequence range: a seek in trial_queue (experiment, SUCCEEDED, sequence) each */
    for (int64_t k = 0; k < limit; k++) {
        int64_t from = lo + (int64_t)((double)(hi - lo + 1) * (double)k / (double)limit);
        int64_t to = lo + (int64_t)((double)(hi - lo + 1) * (double)(k + 1) / (double)limit);
        if (to <= from)
            continue;
        sqlite3_stmt *st = db_query(db, e, PARAM_ROW " AND sequence >= ? AND sequence < ? ORDER BY sequence LIMIT 1",
                                    "sii", exp_id, from, to);
        if (!st || param_step(db, st, fn, ctx, e) < 0)
            return -1;
    }
    return 0;
}

int metric_sample_rows(struct db *db, const char *exp_id, const char *key, int64_t limit,
                       void (*fn)(void *ctx, const struct sample_row *r), void *ctx, struct errbuf *e)
{
    char *path = key ? xasprintf("$.\"%s\"", key) : NULL;
    sqlite3_stmt *st = db_query(db, e, "SELECT parameters, CASE WHEN ?2 IS NULL THEN final_metric"
                                       " WHEN json_valid(final_metric_json) THEN json_extract(final_metric_json, ?2) END"
                                       " FROM trial WHERE experiment_id = ?1" METRIC_SHOWN
                                       " AND final_metric_json IS NOT NULL ORDER BY sequence DESC LIMIT ?3",
                                "ssi", exp_id, path, limit);
    free(path);
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int type = sqlite3_column_type(st, 1);
        struct sample_row r = {
            .parameters = (const char *)sqlite3_column_text(st, 0),
            .has_value = type == SQLITE_INTEGER || type == SQLITE_FLOAT,
            .value = sqlite3_column_double(st, 1),
        };
        fn(ctx, &r);
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : errf(e, "importance sample: %s", sqlite3_errmsg(db->h));
}
