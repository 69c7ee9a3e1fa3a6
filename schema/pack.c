/* pack.c: an experiment's rows and files in one SQLite file (schema/pack.h).
 *
 * The pack is ATTACHed to the main connection as "pack", so rows move with
 * INSERT ... SELECT in both directions. Statements that name the pack are prepared here
 * and finalized at once, never kept in the connection's statement cache, since the pack
 * is detached after.
 *
 * Loading reads the pack as hostile data. pack_open refuses every object a pack saved
 * by trialq does not hold (a view, a trigger, an index of its own, another table: any
 * of them could show the checks one set of rows and the copy another, e.g. a view
 * calling changes() or random()), then, in one read transaction, copies the rows once
 * into TEMP tables (pk_experiment, pk_trial, pk_metric, pk_event; pk_file without the
 * contents) typed as this database's tables, so that a value is checked as it will be
 * stored. Every check and the copy into the database read those copies only, and the
 * copy repeats the rules: the experiment id forced, only the trials the checks passed,
 * trial directories rebuilt under the new experiment directory. The columns both
 * schemas have are copied (a pack of an older schema loads into a newer one; new
 * columns take their defaults). */
#include "schema/pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

struct pack {
    struct db *db;
    int attached;
    int writing;  /* a write transaction is open (pack_create .. pack_finish) */
    int snapshot; /* the TEMP copies exist (pack_open .. pack_close) */
    char *exp_id; /* meta's experiment_id, read once */
};

/* Prepares and binds a statement that the caller steps and finalizes; NULL on error. */
static sqlite3_stmt *queryv(struct db *db, struct errbuf *e, const char *sql, const char *types, va_list ap)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
        errf(e, "%s (in: %.100s)", sqlite3_errmsg(db->h), sql);
        return NULL;
    }
    if (db_bindv(st, types, ap) < 0) {
        errf(e, "%s (in: %.100s)", sqlite3_errmsg(db->h), sql);
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

static sqlite3_stmt *query(struct db *db, struct errbuf *e, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    sqlite3_stmt *st = queryv(db, e, sql, types, ap);
    va_end(ap);
    return st;
}

/* Steps st to its end and finalizes it. Returns changed rows or -1. */
static int run_stmt(struct db *db, struct errbuf *e, sqlite3_stmt *st, const char *sql)
{
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        ;
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return errf(e, "%s (in: %.100s)", sqlite3_errmsg(db->h), sql);
    return sqlite3_changes(db->h);
}

/* Prepares, binds, steps to the end, finalizes. Returns changed rows or -1. */
static int run(struct db *db, struct errbuf *e, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    sqlite3_stmt *st = queryv(db, e, sql, types, ap);
    va_end(ap);
    return run_stmt(db, e, st, sql);
}

static int attach(struct db *db, const char *path, struct errbuf *e)
{
    return run(db, e, "ATTACH DATABASE ? AS pack", "s", path) < 0 ? -1 : 0;
}

/* The TEMP copies of a pack's rows (pack_open), and the trials the checks passed with
 * their new directories (pack_load_rows). */
static const char *const snapshot_tables[] = {"pk_experiment", "pk_trial", "pk_metric", "pk_event", "pk_file",
                                              "pk_ok", NULL};

static void drop_snapshot(struct db *db)
{
    for (int i = 0; snapshot_tables[i]; i++) {
        char *sql = xasprintf("DROP TABLE IF EXISTS temp.%s", snapshot_tables[i]);
        sqlite3_exec(db->h, sql, NULL, NULL, NULL);
        free(sql);
    }
}

void pack_close(struct pack *p)
{
    if (!p)
        return;
    if (p->writing)
        sqlite3_exec(p->db->h, "ROLLBACK", NULL, NULL, NULL);
    if (p->snapshot)
        drop_snapshot(p->db);
    if (p->attached)
        sqlite3_exec(p->db->h, "DETACH DATABASE pack", NULL, NULL, NULL);
    free(p->exp_id);
    free(p);
}

/* ---------------- save ---------------- */

int pack_create(struct db *db, const char *exp_id, const char *path, struct pack **out, struct errbuf *e)
{
    *out = NULL;
    /* the pack holds the experiment's config and rows: only its owner may read it. Not
     * its token (the key of every trial's channel token and of X-Trialq-Token): a pack
     * handed to someone else must not let them write into a running copy of the
     * experiment; a load makes a new one */
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
        run(db, e, "UPDATE pack.experiment SET token = ''", "") < 0 ||
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

/* ---------------- checks: a pack is untrusted input ---------------- */

int pack_rel_path_ok(const char *rel)
{
    if (!rel || !*rel || rel[0] == '/')
        return 0;
    for (const char *p = rel; *p;) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        p += len;
        if (*p)
            p++;
    }
    return 1;
}

const char *pack_shown(const char *s, char out[PACK_SHOWN])
{
    size_t n = 0;
    for (; s && s[n] && n < PACK_SHOWN - 4; n++)
        out[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
    if (s && s[n]) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
    return out;
}

/* The part of path below dir (dir '/' rel, rel inside by pack_rel_path_ok), or NULL. */
static const char *below(const char *dir, const char *path)
{
    size_t n = strlen(dir);
    while (n > 0 && dir[n - 1] == '/')
        n--;
    if (strncmp(path, dir, n) != 0 || path[n] != '/')
        return NULL;
    return pack_rel_path_ok(path + n + 1) ? path + n + 1 : NULL;
}

/* Ends a check loop: 0 when the statement ran to its end, else the error. */
static int stepped(struct db *db, sqlite3_stmt *st, int rc, int step, struct errbuf *e)
{
    if (rc == 0 && step != SQLITE_DONE)
        rc = errf(e, "pack: %s", sqlite3_errmsg(db->h));
    sqlite3_finalize(st);
    return rc;
}

static const char *text(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? s : "";
}

/* ---------------- load: what a pack may hold ---------------- */

/* The tables pack_create makes, and the columns the checks and the copy need of each. */
static const struct pack_table {
    const char *name;
    const char *need[7];
} pack_tables[] = {
    {"meta", {"key", "value", NULL}},
    {"experiment", {"id", "exp_dir", "config", NULL}},
    {"trial", {"id", "experiment_id", "trial_dir", "platform", NULL}},
    {"metric", {"trial_id", NULL}},
    {"event", {"experiment_id", "trial_id", "time", "entity", "to_state", "reason", NULL}},
    {"file", {"area", "path", "mode", "data", NULL}},
};
#define NTABLES (sizeof pack_tables / sizeof pack_tables[0])
#define PACK_TABLES "meta, experiment, trial, metric, event and file"

static int pack_table_index(const char *name)
{
    for (size_t i = 0; i < NTABLES; i++)
        if (strcmp(pack_tables[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* A table of the pack: the columns the load needs (by name, as SQLite finds them), no
 * generated column (a value computed when read is not a saved value). */
static int check_columns(struct db *db, const struct pack_table *t, struct errbuf *e)
{
    sqlite3_stmt *st = query(db, e, "SELECT name FROM pragma_table_xinfo(?, 'pack') WHERE hidden <> 0", "s", t->name);
    if (!st)
        return -1;
    char sh[PACK_SHOWN];
    int rc = 0, step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        rc = errf(e, "pack: table %s: generated column '%s' (a pack's tables hold stored values only)", t->name,
                  pack_shown(text(st, 0), sh));
        step = SQLITE_DONE;
    }
    if ((rc = stepped(db, st, rc, step, e)) < 0)
        return rc;
    for (int i = 0; t->need[i]; i++) {
        int64_t n = 0;
        if (db_int(db, e, &n, "SELECT count(*) FROM pragma_table_info(?, 'pack') WHERE name = ? COLLATE NOCASE",
                      "ss", t->name, t->need[i]) < 0)
            return -1;
        if (n == 0)
            return errf(e, "pack: table %s has no column %s (not a pack trialq wrote)", t->name, t->need[i]);
    }
    return 0;
}

/* The pack's objects are what pack_create makes: the six tables (plain ones) and the
 * indexes SQLite makes itself for their keys (no SQL text); nothing else. A view, a
 * trigger or an index on an expression is refused by name, before any row is read;
 * one that takes a pack table's name (or is on one) is named before any other. */
static int check_objects(struct db *db, struct errbuf *e)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db->h, "SELECT type, name, tbl_name, sql FROM pack.sqlite_master ORDER BY rowid", -1, &st,
                           NULL) != SQLITE_OK)
        return errf(e, "not a trialq experiment pack (%s)", sqlite3_errmsg(db->h));
    char sh[PACK_SHOWN], sh2[PACK_SHOWN];
    char *unexpected[2] = {NULL, NULL}; /* the first on a pack table's name, the first other */
    int seen[NTABLES] = {0}, has_meta = 0, step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *type = text(st, 0), *name = text(st, 1), *sql = (const char *)sqlite3_column_text(st, 3);
        int is_table = strcmp(type, "table") == 0, is_index = strcmp(type, "index") == 0;
        int t = pack_table_index(name), on = pack_table_index(text(st, 2));
        has_meta |= strcmp(name, "meta") == 0;
        if (is_table && t >= 0 && sql && strncmp(sql, "CREATE TABLE ", 13) == 0) {
            seen[t] = 1;
        } else if (!(is_index && on >= 0 && !sql)) { /* an index of a key has no SQL text */
            int slot = t >= 0 || on >= 0 ? 0 : 1;
            if (!unexpected[slot])
                unexpected[slot] = xasprintf("%s%s '%s'",
                                             is_table && sql && strncasecmp(sql, "CREATE VIRTUAL", 14) == 0 ? "virtual "
                                                                                                              : "",
                                             pack_shown(type, sh2), pack_shown(name, sh));
        }
    }
    int rc = stepped(db, st, 0, step, e);
    if (rc == 0 && !has_meta) /* some other SQLite file: say that first */
        rc = errf(e, "not a trialq experiment pack (no table 'meta')");
    else if (rc == 0 && (unexpected[0] || unexpected[1]))
        rc = errf(e, "pack: unexpected %s (a pack holds only the tables " PACK_TABLES ")",
                  unexpected[0] ? unexpected[0] : unexpected[1]);
    free(unexpected[0]);
    free(unexpected[1]);
    for (size_t i = 0; rc == 0 && i < NTABLES; i++)
        if (!seen[i])
            rc = errf(e, "pack: no table '%s' (not a trialq experiment pack)", pack_tables[i].name);
    for (size_t i = 0; rc == 0 && i < NTABLES; i++)
        rc = check_columns(db, &pack_tables[i], e);
    return rc;
}

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

/* Copies the pack's table once into temp.pk_<table>: the columns this database's table
 * has too, declared with its types (a value is converted here, as the copy into the
 * database will store it, and checked so), in rowid order. */
static int snapshot_rows(struct db *db, const char *table, struct errbuf *e)
{
    sqlite3_stmt *st = query(db, e,
                             "SELECT m.name, m.type FROM pragma_table_info(?1, 'main') m WHERE EXISTS"
                             " (SELECT 1 FROM pragma_table_info(?1, 'pack') k WHERE k.name = m.name COLLATE NOCASE)"
                             " ORDER BY m.cid", "s", table);
    if (!st)
        return -1;
    struct strbuf cols, defs;
    sb_init(&cols);
    sb_init(&defs);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        sb_printf(&cols, "%s\"%s\"", cols.len ? ", " : "", text(st, 0));
        sb_printf(&defs, "%s\"%s\" %s", defs.len ? ", " : "", text(st, 0), text(st, 1));
    }
    int rc = stepped(db, st, 0, step, e);
    if (rc == 0) {
        char *create = xasprintf("CREATE TEMP TABLE pk_%s (%s)", table, defs.buf);
        char *copy = xasprintf("INSERT INTO temp.pk_%s (%s) SELECT %s FROM pack.%s ORDER BY rowid", table, cols.buf,
                               cols.buf, table);
        rc = run(db, e, create, "") < 0 || run(db, e, copy, "") < 0 ? -1 : 0;
        free(create);
        free(copy);
    }
    sb_free(&cols);
    sb_free(&defs);
    return rc;
}

/* Everything pack_open reads of the pack, inside one read transaction: the objects,
 * meta, and the rows into the TEMP copies (the files' paths and modes; their contents
 * are read by pack_each_file, by row, and never checked). */
static int read_pack(struct pack *p, const char *path, struct errbuf *e)
{
    struct db *db = p->db;
    char *fmt = NULL, *ver = NULL;
    char sh[PACK_SHOWN];
    int rc = check_objects(db, e);
    if (rc == 0)
        rc = meta(p, "format", &fmt, e);
    if (rc == 0 && strcmp(fmt, PACK_FORMAT) != 0)
        rc = errf(e, "%s is not a trialq experiment pack (format %s)", path, pack_shown(fmt, sh));
    if (rc == 0)
        rc = meta(p, "version", &ver, e);
    if (rc == 0 && atoi(ver) > PACK_VERSION)
        rc = errf(e, "%s was written by a newer trialq (pack version %s, this one reads %d)", path, pack_shown(ver, sh),
                  PACK_VERSION);
    if (rc == 0)
        rc = meta(p, "experiment_id", &p->exp_id, e);
    if (rc == 0 && !is_experiment_id(p->exp_id)) /* it names directories: checked before anything else */
        rc = errf(e, "pack: experiment_id '%s': not an experiment id (8 characters [a-z0-9])",
                  pack_shown(p->exp_id, sh));
    static const char *const rows[] = {"experiment", "trial", "metric", "event", NULL};
    for (int i = 0; rc == 0 && rows[i]; i++)
        rc = snapshot_rows(db, rows[i], e);
    if (rc == 0 &&
        (run(db, e, "CREATE TEMP TABLE pk_file (prow INTEGER, area TEXT, path TEXT, mode INTEGER)", "") < 0 ||
         run(db, e, "INSERT INTO temp.pk_file SELECT rowid, area, path, mode FROM pack.file ORDER BY rowid", "") < 0 ||
         run(db, e, "CREATE INDEX temp.pk_file_path ON pk_file (area, path)", "") < 0 ||
         run(db, e, "CREATE TEMP TABLE pk_ok (id TEXT PRIMARY KEY, dir TEXT)", "") < 0))
        rc = -1;
    free(fmt);
    free(ver);
    return rc;
}

int pack_open(struct db *db, const char *path, struct pack **out, char **exp_id, struct errbuf *e)
{
    *out = NULL;
    *exp_id = NULL;
    if (access(path, R_OK) != 0)
        return errf(e, "%s: %s", path, strerror(errno));
    struct pack *p = xcalloc(1, sizeof *p);
    p->db = db;
    /* refused below; and should one slip through, it runs no function with side effects */
    sqlite3_db_config(db->h, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
    if (attach(db, path, e) < 0) {
        free(p);
        return -1;
    }
    p->attached = 1;
    drop_snapshot(db); /* an earlier pack's, should its pack_close not have run */
    p->snapshot = 1;
    if (run(db, e, "BEGIN", "") < 0)
        goto fail;
    if (read_pack(p, path, e) < 0 || run(db, e, "COMMIT", "") < 0) {
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
        goto fail;
    }
    *exp_id = xstrdup(p->exp_id);
    *out = p;
    return 0;
fail:
    pack_close(p);
    return -1;
}

int pack_each_file(struct pack *p, const char *area,
                   int (*fn)(void *arg, const char *rel, int mode, const void *data, size_t len), void *arg,
                   struct errbuf *e)
{
    /* paths and modes as checked; the contents from the pack, by row */
    sqlite3_stmt *st = query(p->db, e,
                             "SELECT s.path, s.mode, f.data, f.rowid IS NULL FROM temp.pk_file s"
                             " LEFT JOIN pack.file f ON f.rowid = s.prow WHERE s.area = ? ORDER BY s.path, s.rowid",
                             "s", area);
    if (!st)
        return -1;
    char sh[PACK_SHOWN];
    int rc, stop = 0;
    while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_int(st, 3)) {
            stop = errf(e, "pack: file '%s' is no longer in the pack (it changed while loading)",
                        pack_shown(text(st, 0), sh));
            break;
        }
        stop = fn(arg, text(st, 0), sqlite3_column_int(st, 1), sqlite3_column_blob(st, 2),
                  (size_t)sqlite3_column_bytes(st, 2));
    }
    if (!stop && rc != SQLITE_DONE)
        errf(e, "pack: %s", sqlite3_errmsg(p->db->h));
    sqlite3_finalize(st);
    return stop ? stop : rc == SQLITE_DONE ? 0 : -1;
}

int pack_experiment_info(struct pack *p, char **exp_dir, char **config, struct errbuf *e)
{
    *exp_dir = *config = NULL;
    sqlite3_stmt *st = query(p->db, e, "SELECT exp_dir, config FROM temp.pk_experiment ORDER BY rowid LIMIT 1", "");
    if (!st)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW) {
        *exp_dir = col_str(st, 0);
        *config = col_str(st, 1);
    }
    sqlite3_finalize(st);
    if (*exp_dir && *config)
        return 0;
    free(*exp_dir);
    free(*config);
    *exp_dir = *config = NULL;
    return errf(e, "pack holds no experiment row");
}

int pack_search_space(struct pack *p, char **out, struct errbuf *e)
{
    *out = NULL;
    sqlite3_stmt *st = query(p->db, e, "SELECT search_space FROM temp.pk_experiment ORDER BY rowid LIMIT 1", "");
    if (!st)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        *out = col_str(st, 0);
    sqlite3_finalize(st);
    return *out ? 0 : errf(e, "the pack has no search space");
}

/* ---------------- load: the checks, on the TEMP copies ---------------- */

/* One experiment row, the one the meta table names. */
static int check_experiment(struct db *db, const char *id, struct errbuf *e)
{
    sqlite3_stmt *st = query(db, e, "SELECT id, typeof(id) = 'text' FROM temp.pk_experiment ORDER BY rowid", "");
    if (!st)
        return -1;
    char sh[PACK_SHOWN];
    int n = 0, rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *x = text(st, 0);
        if (++n > 1)
            rc = errf(e, "pack: more than one experiment row; a pack holds one experiment");
        else if (!sqlite3_column_int(st, 1) || !is_experiment_id(x))
            rc = errf(e, "pack: experiment.id '%s': not an experiment id (8 characters [a-z0-9])", pack_shown(x, sh));
        else if (strcmp(x, id) != 0)
            rc = errf(e, "pack: experiment.id '%s' is not the pack's experiment_id %s", x, id);
    }
    rc = stepped(db, st, rc, step, e);
    return rc == 0 && n == 0 ? errf(e, "pack holds no experiment row") : rc;
}

/* Trials: trialq's ids, all of the pack's experiment, none already in this database,
 * each directory inside the saved experiment directory. Each one passed goes into
 * temp.pk_ok with its directory under exp_dir (NULL: none, or a shared storage's,
 * cleared): the copy takes those trials only, and their directories from there. */
static int check_trials(struct db *db, const char *id, const char *old_dir, const char *exp_dir,
                        int (*shared_storage)(const char *), struct errbuf *e)
{
    sqlite3_stmt *ok = query(db, e, "INSERT INTO temp.pk_ok (id, dir) VALUES (?, ?)", "");
    if (!ok)
        return -1;
    sqlite3_stmt *st = query(db, e,
                             "SELECT id, typeof(id) = 'text', experiment_id, experiment_id IS ?, trial_dir, platform,"
                             " (SELECT experiment_id FROM main.trial m WHERE m.id = p.id),"
                             " (SELECT count(*) FROM temp.pk_trial d WHERE d.id = p.id) FROM temp.pk_trial p"
                             " ORDER BY rowid", "s", id);
    if (!st) {
        sqlite3_finalize(ok);
        return -1;
    }
    char sh[PACK_SHOWN], sh2[PACK_SHOWN];
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *tid = text(st, 0), *dir = (const char *)sqlite3_column_text(st, 4);
        const char *rel = dir ? below(old_dir, dir) : NULL;
        if (!sqlite3_column_int(st, 1) || !is_trial_id(tid))
            rc = errf(e, "pack: trial.id '%s': not a trial id (5 characters [a-zA-Z0-9], a letter first)",
                      pack_shown(tid, sh));
        else if (!sqlite3_column_int(st, 3))
            rc = errf(e, "pack: trial %s: experiment_id '%s' is not the pack's experiment %s (a pack loads only"
                         " its own experiment's rows)", tid, pack_shown(text(st, 2), sh), id);
        else if (sqlite3_column_int(st, 7) > 1)
            rc = errf(e, "pack: trial %s: more than one row with this id", tid);
        else if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            rc = errf(e, "pack: trial %s already exists in this database (experiment %s); not loaded", tid,
                      pack_shown(text(st, 6), sh));
        else if (dir && !rel && !shared_storage(text(st, 5)))
            rc = errf(e, "pack: trial %s: trial_dir '%s' is not inside the saved experiment directory %s", tid,
                      pack_shown(dir, sh), pack_shown(old_dir, sh2));
        else {
            char *to = rel ? path_join(exp_dir, rel) : NULL;
            sqlite3_bind_text(ok, 1, tid, -1, SQLITE_TRANSIENT);
            sqlite3_bind_text(ok, 2, to, -1, SQLITE_TRANSIENT);
            if (sqlite3_step(ok) != SQLITE_DONE)
                rc = errf(e, "pack: trial %s: %s", tid, sqlite3_errmsg(db->h));
            sqlite3_reset(ok);
            free(to);
        }
    }
    sqlite3_finalize(ok);
    return stepped(db, st, rc, step, e);
}

/* Metrics and events: only of the pack's trials and experiment (an event may name a
 * trial this database does not know, as a run found on a remote machine; never a trial
 * of another experiment). */
static int check_metrics_events(struct db *db, const char *id, struct errbuf *e)
{
    char sh[PACK_SHOWN];
    sqlite3_stmt *st = query(db, e,
                             "SELECT rowid, trial_id FROM temp.pk_metric WHERE trial_id IS NULL"
                             " OR trial_id NOT IN (SELECT id FROM temp.pk_trial) ORDER BY rowid LIMIT 1", "");
    if (!st)
        return -1;
    int rc = 0, step = sqlite3_step(st);
    if (step == SQLITE_ROW) {
        rc = errf(e, "pack: metric row %lld: trial_id '%s' is not a trial of the pack's experiment %s",
                  (long long)sqlite3_column_int64(st, 0), pack_shown(text(st, 1), sh), id);
        step = SQLITE_DONE;
    }
    if ((rc = stepped(db, st, rc, step, e)) < 0)
        return rc;
    st = query(db, e,
               "SELECT rowid, experiment_id IS ?, experiment_id, trial_id FROM temp.pk_event"
               " WHERE experiment_id IS NOT ? OR trial_id IN (SELECT id FROM main.trial WHERE experiment_id IS NOT ?)"
               " ORDER BY rowid LIMIT 1", "sss", id, id, id);
    if (!st)
        return -1;
    if ((step = sqlite3_step(st)) == SQLITE_ROW) {
        long long row = (long long)sqlite3_column_int64(st, 0);
        if (!sqlite3_column_int(st, 1))
            rc = errf(e, "pack: event row %lld: experiment_id '%s' is not the pack's experiment %s", row,
                      pack_shown(text(st, 2), sh), id);
        else
            rc = errf(e, "pack: event row %lld: trial_id '%s' is a trial of another experiment", row,
                      pack_shown(text(st, 3), sh));
        step = SQLITE_DONE;
    }
    return stepped(db, st, rc, step, e);
}

/* Files: two areas, paths inside, none both a file and a directory of another. */
static int check_files(struct db *db, struct errbuf *e)
{
    sqlite3_stmt *st =
        query(db, e, "SELECT area, path, typeof(path) = 'text' FROM temp.pk_file ORDER BY rowid", "");
    if (!st)
        return -1;
    char sh[PACK_SHOWN], sh2[PACK_SHOWN];
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *area = text(st, 0), *path = text(st, 1);
        if (strcmp(area, "experiment") != 0 && strcmp(area, "code") != 0)
            rc = errf(e, "pack: file '%s': area '%s' is neither experiment nor code", pack_shown(path, sh),
                      pack_shown(area, sh2));
        else if (!sqlite3_column_int(st, 2) || !pack_rel_path_ok(path))
            rc = errf(e, "pack: file.path '%s': a path outside its directory (absolute, or with '..', '.' or an"
                         " empty part); not loaded", pack_shown(path, sh));
    }
    if ((rc = stepped(db, st, rc, step, e)) < 0)
        return rc;
    /* b is a, or below a: b.path starts with a.path, so it lies in [a.path, a.path || '0')
     * ('0' follows '/'), a range of the index: one search per file, not all pairs */
    st = query(db, e,
               "SELECT a.path, b.path FROM temp.pk_file a JOIN temp.pk_file b ON b.area = a.area"
               " AND b.path >= a.path AND b.path < a.path || '0' AND b.rowid <> a.rowid"
               " AND (b.path = a.path OR substr(b.path, 1, length(a.path) + 1) = a.path || '/') LIMIT 1", "");
    if (!st)
        return -1;
    if ((step = sqlite3_step(st)) == SQLITE_ROW) {
        rc = errf(e, "pack: file '%s' is stored twice, or as a file and as the directory of '%s'",
                  pack_shown(text(st, 0), sh), pack_shown(text(st, 1), sh2));
        step = SQLITE_DONE;
    }
    return stepped(db, st, rc, step, e);
}

/* Every check of a pack's content against its experiment and this database. */
static int check_pack(struct pack *p, const char *old_dir, const char *exp_dir, int (*shared_storage)(const char *),
                      struct errbuf *e)
{
    struct db *db = p->db;
    const char *id = p->exp_id;
    int64_t n = 0;
    if (db_int(db, e, &n, "SELECT count(*) FROM main.experiment WHERE id = ?", "s", id) < 0)
        return -1;
    if (n)
        return errf(e, "experiment %s already exists in this database; delete it first (nnictl experiment delete %s)",
                    id, id);
    if (check_experiment(db, id, e) < 0 || check_trials(db, id, old_dir, exp_dir, shared_storage, e) < 0 ||
        check_metrics_events(db, id, e) < 0 || check_files(db, e) < 0)
        return -1;
    return 0;
}

/* ---------------- load: the copy, with the rules again ---------------- */

/* A column the copy sets itself, whatever the pack says. */
struct forced {
    const char *col, *expr;
};

/* INSERT INTO main.<table> (cols) SELECT exprs FROM temp.pk_<table> AS p [join] [WHERE
 * where] ORDER BY p.rowid: the copy's columns but those in skip, each p's own unless
 * forced gives its expression; the parameters as types and the arguments say. */
static int copy_table(struct db *db, struct errbuf *e, const char *table, const char *const *skip,
                      const struct forced *forced, const char *join, const char *where, const char *types, ...)
{
    char *snap = xasprintf("pk_%s", table);
    sqlite3_stmt *st = query(db, e, "SELECT name FROM pragma_table_info(?, 'temp') ORDER BY cid", "s", snap);
    free(snap);
    if (!st)
        return -1;
    struct strbuf cols, exprs;
    sb_init(&cols);
    sb_init(&exprs);
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *c = text(st, 0), *expr = NULL;
        int skipped = 0;
        for (int i = 0; skip && skip[i]; i++)
            skipped |= strcmp(skip[i], c) == 0;
        for (int i = 0; forced && forced[i].col; i++)
            if (strcmp(forced[i].col, c) == 0)
                expr = forced[i].expr;
        if (skipped)
            continue;
        sb_printf(&cols, "%s\"%s\"", cols.len ? ", " : "", c);
        if (expr)
            sb_printf(&exprs, "%s%s", exprs.len ? ", " : "", expr);
        else
            sb_printf(&exprs, "%sp.\"%s\"", exprs.len ? ", " : "", c);
    }
    int rc = stepped(db, st, 0, step, e);
    if (rc == 0) {
        char *sql = xasprintf("INSERT INTO main.%s (%s) SELECT %s FROM temp.pk_%s AS p%s%s%s%s ORDER BY p.rowid",
                              table, cols.buf, exprs.buf, table, join ? " " : "", join ? join : "",
                              where ? " WHERE " : "", where ? where : "");
        va_list ap;
        va_start(ap, types);
        rc = run_stmt(db, e, queryv(db, e, sql, types, ap), sql) < 0 ? -1 : 0;
        va_end(ap);
        free(sql);
    }
    sb_free(&cols);
    sb_free(&exprs);
    return rc;
}

int pack_load_rows(struct pack *p, const char *exp_dir, const char *config, int dry_run,
                   int (*shared_storage)(const char *platform), struct errbuf *e)
{
    struct db *db = p->db;
    const char *id = p->exp_id;
    char *old_dir = NULL, *old_config = NULL;
    if (pack_experiment_info(p, &old_dir, &old_config, e) < 0)
        goto fail;
    if (run(db, e, "BEGIN IMMEDIATE", "") < 0)
        goto fail;
    if (run(db, e, "DELETE FROM temp.pk_ok", "") < 0 || check_pack(p, old_dir, exp_dir, shared_storage, e) < 0)
        goto rollback;
    /* process fields name processes of the saving host: cleared; change cursors and
     * metric / event ids are this database's (new ones, same order) */
    static const char *const skip_exp[] = {"api_pid", "api_start", "api_heartbeat", "desired_status", NULL};
    static const char *const skip_trial[] = {"change_seq", NULL};
    static const char *const skip_id[] = {"id", NULL};
    /* the rules again, in the copy itself: the pack's experiment id (?1), its new
     * directory and config; only the trials the checks passed, their directories as
     * rebuilt under the new one; metrics of those trials only; events of this
     * experiment, none of a trial of another */
    static const struct forced exp_forced[] = {{"id", "?1"}, {"exp_dir", "?2"}, {"config", "?3"}, {"token", "?4"},
                                               {NULL, NULL}};
    static const struct forced trial_forced[] = {{"experiment_id", "?1"}, {"trial_dir", "o.dir"}, {NULL, NULL}};
    static const struct forced event_forced[] = {{"experiment_id", "?1"}, {NULL, NULL}};
    /* events are an audit log that outlives its experiment (experiment delete keeps
     * them): those this database still has are not added twice */
    static const char *const event_rule =
        "(p.trial_id IS NULL OR p.trial_id NOT IN (SELECT id FROM main.trial WHERE experiment_id IS NOT ?1))"
        " AND NOT EXISTS (SELECT 1 FROM main.event m WHERE m.experiment_id = ?1 AND m.time = p.time"
        " AND m.entity = p.entity AND m.trial_id IS p.trial_id AND m.to_state IS p.to_state AND m.reason IS p.reason)";
    char token[33]; /* a new one: the pack holds none (pack_create), an older pack the saver's */
    gen_token(token, 32);
    if (copy_table(db, e, "experiment", skip_exp, exp_forced, NULL, "p.id IS ?1", "ssss", id, exp_dir, config,
                   token) < 0 ||
        copy_table(db, e, "trial", skip_trial, trial_forced, "JOIN temp.pk_ok o ON o.id = p.id", NULL, "s", id) < 0 ||
        copy_table(db, e, "metric", skip_id, NULL, NULL, "p.trial_id IN (SELECT id FROM temp.pk_ok)", "") < 0 ||
        copy_table(db, e, "event", skip_id, event_forced, NULL, event_rule, "s", id) < 0)
        goto rollback;
    if (db_event(db, e, id, NULL, "experiment", NULL, NULL, "loaded by nnictl experiment load") < 0)
        goto rollback;
    if (dry_run) {
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    } else if (run(db, e, "COMMIT", "") < 0) {
        goto rollback;
    }
    free(old_dir);
    free(old_config);
    return 0;
rollback:
    sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
fail:
    free(old_dir);
    free(old_config);
    return -1;
}
