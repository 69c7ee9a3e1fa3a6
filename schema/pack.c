/* pack.c: an experiment's rows and files in one SQLite file (schema/pack.h).
 *
 * The pack is ATTACHed to the main connection as "pack", so rows move with
 * INSERT ... SELECT in both directions. Loading copies the columns both schemas have
 * (a pack of an older schema loads into a newer one; new columns take their
 * defaults). Statements that name the pack are prepared here and finalized at once,
 * never kept in the connection's statement cache, since the pack is detached after. */
#include "schema/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pack {
    struct db *db;
    int attached;
    int writing; /* a write transaction is open (pack_create .. pack_finish) */
};

/* Prepares, binds, steps to the end, finalizes. Returns changed rows or -1. */
static int run(struct db *db, struct errbuf *e, const char *sql, const char *types, ...)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK)
        return errf(e, "%s (in: %.100s)", sqlite3_errmsg(db->h), sql);
    va_list ap;
    va_start(ap, types);
    int brc = db_bindv(st, types, ap);
    va_end(ap);
    int rc = brc < 0 ? SQLITE_ERROR : SQLITE_ROW;
    while (rc == SQLITE_ROW)
        rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return errf(e, "%s (in: %.100s)", sqlite3_errmsg(db->h), sql);
    return sqlite3_changes(db->h);
}

static int attach(struct db *db, const char *path, struct errbuf *e)
{
    return run(db, e, "ATTACH DATABASE ? AS pack", "s", path) < 0 ? -1 : 0;
}

void pack_close(struct pack *p)
{
    if (!p)
        return;
    if (p->writing)
        sqlite3_exec(p->db->h, "ROLLBACK", NULL, NULL, NULL);
    if (p->attached)
        sqlite3_exec(p->db->h, "DETACH DATABASE pack", NULL, NULL, NULL);
    free(p);
}

/* ---------------- save ---------------- */

int pack_create(struct db *db, const char *exp_id, const char *path, struct pack **out, struct errbuf *e)
{
    *out = NULL;
    /* the pack holds the experiment's token and config: only its owner may read it */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return errf(e, "cannot create %s: %s", path, strerror(errno));
    close(fd);
    struct pack *p = xcalloc(1, sizeof *p);
    p->db = db;
    if (attach(db, path, e) < 0) {
        free(p);
        return -1;
    }
    p->attached = 1;
    /* one transaction: the rows come from one snapshot of the main database, and the
     * pack's content appears whole or not at all. Deferred: it writes only the pack,
     * and a WAL reader never blocks the writers of the main database, however long
     * the files take */
    if (run(db, e, "BEGIN", "") < 0)
        goto fail;
    p->writing = 1;
    char v[16], sv[16], t[32];
    snprintf(v, sizeof v, "%d", PACK_VERSION);
    snprintf(sv, sizeof sv, "%d", db_schema_version(db));
    snprintf(t, sizeof t, "%lld", (long long)now_ms());
    if (run(db, e, "CREATE TABLE pack.meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)", "") < 0 ||
        run(db, e, "INSERT INTO pack.meta VALUES ('format', ?), ('version', ?), ('schema_version', ?),"
                   " ('experiment_id', ?), ('saved_at', ?)", "sssss", PACK_FORMAT, v, sv, exp_id, t) < 0 ||
        run(db, e, "CREATE TABLE pack.experiment AS SELECT * FROM main.experiment WHERE id = ?", "s", exp_id) < 0 ||
        run(db, e, "CREATE TABLE pack.trial AS SELECT * FROM main.trial WHERE experiment_id = ? ORDER BY rowid",
            "s", exp_id) < 0 ||
        run(db, e, "CREATE TABLE pack.metric AS SELECT m.* FROM main.metric m JOIN main.trial t ON t.id = m.trial_id"
                   " WHERE t.experiment_id = ? ORDER BY m.id", "s", exp_id) < 0 ||
        run(db, e, "CREATE TABLE pack.event AS SELECT * FROM main.event WHERE experiment_id = ? ORDER BY id", "s",
            exp_id) < 0 ||
        run(db, e, "CREATE TABLE pack.file (area TEXT NOT NULL, path TEXT NOT NULL, mode INTEGER NOT NULL,"
                   " data BLOB NOT NULL, PRIMARY KEY (area, path))", "") < 0)
        goto fail;
    *out = p;
    return 0;
fail:
    pack_close(p);
    unlink(path);
    return -1;
}

int pack_add_file(struct pack *p, const char *area, const char *rel, int mode, const void *data, size_t len,
                  struct errbuf *e)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db->h, "INSERT INTO pack.file VALUES (?, ?, ?, ?)", -1, &st, NULL) != SQLITE_OK)
        return errf(e, "pack: %s", sqlite3_errmsg(p->db->h));
    sqlite3_bind_text(st, 1, area, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, rel, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, mode);
    sqlite3_bind_blob64(st, 4, len ? data : "", (sqlite3_uint64)len, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return errf(e, "pack: storing %s/%s: %s", area, rel, sqlite3_errmsg(p->db->h));
    return 0;
}

int pack_finish(struct pack *p, struct errbuf *e)
{
    int rc = run(p->db, e, "COMMIT", "");
    if (rc >= 0)
        p->writing = 0;
    pack_close(p);
    return rc < 0 ? -1 : 0;
}

/* ---------------- load ---------------- */

static int meta(struct pack *p, const char *key, char **out, struct errbuf *e)
{
    *out = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db->h, "SELECT value FROM pack.meta WHERE key = ?", -1, &st, NULL) != SQLITE_OK)
        return errf(e, "not a trialq experiment pack (%s)", sqlite3_errmsg(p->db->h));
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        *out = col_str(st, 0);
    sqlite3_finalize(st);
    return *out ? 0 : errf(e, "not a trialq experiment pack (no %s)", key);
}

int pack_open(struct db *db, const char *path, struct pack **out, char **exp_id, struct errbuf *e)
{
    *out = NULL;
    *exp_id = NULL;
    if (access(path, R_OK) != 0)
        return errf(e, "%s: %s", path, strerror(errno));
    struct pack *p = xcalloc(1, sizeof *p);
    p->db = db;
    if (attach(db, path, e) < 0) {
        free(p);
        return -1;
    }
    p->attached = 1;
    char *fmt = NULL, *ver = NULL;
    if (meta(p, "format", &fmt, e) < 0)
        goto fail;
    if (strcmp(fmt, PACK_FORMAT) != 0) {
        errf(e, "%s is not a trialq experiment pack (format %.40s)", path, fmt);
        goto fail;
    }
    if (meta(p, "version", &ver, e) < 0)
        goto fail;
    if (atoi(ver) > PACK_VERSION) {
        errf(e, "%s was written by a newer trialq (pack version %s, this one reads %d)", path, ver, PACK_VERSION);
        goto fail;
    }
    if (meta(p, "experiment_id", exp_id, e) < 0)
        goto fail;
    free(fmt);
    free(ver);
    *out = p;
    return 0;
fail:
    free(fmt);
    free(ver);
    pack_close(p);
    return -1;
}

int pack_each_file(struct pack *p, const char *area,
                   int (*fn)(void *arg, const char *rel, int mode, const void *data, size_t len), void *arg,
                   struct errbuf *e)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db->h, "SELECT path, mode, data FROM pack.file WHERE area = ? ORDER BY path", -1, &st,
                           NULL) != SQLITE_OK)
        return errf(e, "pack: %s", sqlite3_errmsg(p->db->h));
    sqlite3_bind_text(st, 1, area, -1, SQLITE_STATIC);
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW)
        stop = fn(arg, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int(st, 1),
                  sqlite3_column_blob(st, 2), (size_t)sqlite3_column_bytes(st, 2));
    if (!stop && rc != SQLITE_DONE)
        errf(e, "pack: %s", sqlite3_errmsg(p->db->h));
    sqlite3_finalize(st);
    return stop ? stop : rc == SQLITE_DONE ? 0 : -1;
}

int pack_experiment_info(struct pack *p, char **exp_dir, char **config, struct errbuf *e)
{
    *exp_dir = *config = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db->h, "SELECT exp_dir, config FROM pack.experiment", -1, &st, NULL) != SQLITE_OK)
        return errf(e, "pack: %s", sqlite3_errmsg(p->db->h));
    if (sqlite3_step(st) == SQLITE_ROW) {
        *exp_dir = col_str(st, 0);
        *config = col_str(st, 1);
    }
    sqlite3_finalize(st);
    return *exp_dir && *config ? 0 : errf(e, "pack holds no experiment row");
}

/* The columns of table in both main and pack, comma-separated, without those in
 * skip (a NULL-terminated list). */
static char *common_columns(struct pack *p, const char *table, const char *const *skip, struct errbuf *e)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT m.name FROM pragma_table_info('%s', 'main') m JOIN pragma_table_info('%s', 'pack') k"
             " ON k.name = m.name ORDER BY m.cid", table, table);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db->h, sql, -1, &st, NULL) != SQLITE_OK) {
        errf(e, "pack: %s", sqlite3_errmsg(p->db->h));
        return NULL;
    }
    struct strbuf sb;
    sb_init(&sb);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *c = (const char *)sqlite3_column_text(st, 0);
        int skipped = 0;
        for (int i = 0; skip && skip[i]; i++)
            skipped |= strcmp(skip[i], c) == 0;
        if (!skipped)
            sb_printf(&sb, "%s\"%s\"", sb.len ? ", " : "", c);
    }
    sqlite3_finalize(st);
    if (!sb.len) {
        sb_free(&sb);
        errf(e, "pack: table %s has no columns in common with this database", table);
        return NULL;
    }
    return sb_detach(&sb);
}

/* INSERT INTO main.table (cols) SELECT cols FROM pack.table AS p [WHERE where] ORDER BY rowid. */
static int copy_table(struct pack *p, const char *table, const char *const *skip, const char *where,
                      struct errbuf *e)
{
    char *cols = common_columns(p, table, skip, e);
    if (!cols)
        return -1;
    char *sql = xasprintf("INSERT INTO main.%s (%s) SELECT %s FROM pack.%s AS p%s%s ORDER BY rowid", table, cols,
                          cols, table, where ? " WHERE " : "", where ? where : "");
    int rc = run(p->db, e, sql, "");
    free(sql);
    free(cols);
    return rc < 0 ? -1 : 0;
}

int pack_load_rows(struct pack *p, const char *exp_dir, const char *config, struct errbuf *e)
{
    struct db *db = p->db;
    char *old_dir = NULL, *old_config = NULL, *id = NULL;
    if (pack_experiment_info(p, &old_dir, &old_config, e) < 0 || meta(p, "experiment_id", &id, e) < 0)
        goto fail;
    if (run(db, e, "BEGIN IMMEDIATE", "") < 0)
        goto fail;
    int64_t n = 0;
    if (db_int(db, e, &n, "SELECT count(*) FROM main.experiment WHERE id = ?", "s", id) < 0)
        goto rollback;
    if (n) {
        errf(e, "experiment %s already exists in this database; delete it first (nnictl experiment delete %s)", id, id);
        goto rollback;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM main.trial WHERE id IN (SELECT id FROM pack.trial)", -1, &st,
                           NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW) {
        errf(e, "pack: %s", sqlite3_errmsg(db->h));
        sqlite3_finalize(st);
        goto rollback;
    }
    n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (n) {
        errf(e, "%lld trial id(s) of experiment %s belong to another experiment of this database", (long long)n, id);
        goto rollback;
    }
    /* process fields name processes of the saving host: cleared; change cursors and
     * metric / event ids are this database's (new ones, same order) */
    static const char *const skip_exp[] = {"api_pid", "api_start", "api_heartbeat", "desired_status", NULL};
    static const char *const skip_trial[] = {"change_seq", NULL};
    static const char *const skip_id[] = {"id", NULL};
    /* events are an audit log that outlives its experiment (experiment delete keeps
     * them): those this database still has are not added twice */
    static const char *const event_new =
        "NOT EXISTS (SELECT 1 FROM main.event m WHERE m.experiment_id = p.experiment_id AND m.time = p.time"
        " AND m.entity = p.entity AND m.trial_id IS p.trial_id AND m.to_state IS p.to_state"
        " AND m.reason IS p.reason)";
    if (copy_table(p, "experiment", skip_exp, NULL, e) < 0 || copy_table(p, "trial", skip_trial, NULL, e) < 0 ||
        copy_table(p, "metric", skip_id, NULL, e) < 0 || copy_table(p, "event", skip_id, event_new, e) < 0)
        goto rollback;
    size_t ol = strlen(old_dir);
    if (run(db, e, "UPDATE main.experiment SET exp_dir = ?, config = ? WHERE id = ?", "sss", exp_dir, config, id) < 0 ||
        run(db, e, "UPDATE main.trial SET trial_dir = ? || substr(trial_dir, ?) WHERE experiment_id = ?"
                   " AND substr(trial_dir, 1, ?) = ?", "sisis", exp_dir, (int)ol + 1, id, (int)ol, old_dir) < 0 ||
        db_event(db, e, id, NULL, "experiment", NULL, NULL, "loaded by nnictl experiment load") < 0)
        goto rollback;
    if (run(db, e, "COMMIT", "") < 0)
        goto rollback;
    free(old_dir);
    free(old_config);
    free(id);
    return 0;
rollback:
    sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
fail:
    free(old_dir);
    free(old_config);
    free(id);
    return -1;
}
