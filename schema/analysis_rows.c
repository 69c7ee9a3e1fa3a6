/* analysis_rows.c: the early-stopping view's reads (analysis_rows.h). */
#include "schema/analysis_rows.h"

#include <stdlib.h>
#include <string.h>

int curve_trials(struct db *db, const char *exp_id, const char *status, int64_t limit, struct curve_trial **out,
                 int *n, int *cap, struct errbuf *e)
{
    int k = trial_status_find(status, strlen(status));
    if (k < 0)
        return errf(e, "curves: unknown trial status '%.64s'", status);
    sqlite3_stmt *st = db_query(db, e, "SELECT id, sequence, attempt FROM trial WHERE experiment_id = ? AND status = ?"
                                       " ORDER BY sequence DESC LIMIT ?", "ssi", exp_id, status, limit);
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 64;
            *out = xrealloc(*out, sizeof **out * (size_t)*cap);
        }
        (*out)[(*n)++] = (struct curve_trial){col_str(st, 0), col_i64(st, 1), (int)col_i64(st, 2), trial_statuses[k]};
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : errf(e, "curves: %s", sqlite3_errmsg(db->h));
}

void curve_trials_free(struct curve_trial *t, int n)
{
    for (int i = 0; i < n; i++)
        free(t[i].id);
    free(t);
}

int curve_points(struct db *db, const char *trial_id, int attempt, int64_t limit,
                 void (*fn)(void *ctx, int64_t step, double value), void *ctx, int *more, struct errbuf *e)
{
    /* the trial's rows of metric's unique index (trial_id, attempt, ...) */
    sqlite3_stmt *st = db_query(db, e, "SELECT sequence, default_value FROM metric WHERE trial_id = ? AND attempt = ?"
                                       " AND type = 'PERIODICAL' AND default_value IS NOT NULL ORDER BY sequence"
                                       " LIMIT ?", "sii", trial_id, (int64_t)attempt, limit + 1);
    if (!st)
        return -1;
    int rc;
    int64_t got = 0;
    *more = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (got++ == limit) {
            *more = 1;
            continue;
        }
        fn(ctx, col_i64(st, 0), sqlite3_column_double(st, 1));
    }
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : errf(e, "curves: %s", sqlite3_errmsg(db->h));
}
