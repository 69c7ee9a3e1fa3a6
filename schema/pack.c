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

/* Prepares, binds, steps to the end, finalizes. Returns changed rows or -1. */
static int run(struct db *db, struct errbuf *e, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    sqlite3_stmt *st = queryv(db, e, sql, types, ap);
    va_end(ap);
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
    /* a crafted pack's views or triggers must not run functions with side effects */
    sqlite3_db_config(db->h, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
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
    if (!is_experiment_id(*exp_id)) { /* it names directories: checked before anything else */
        char shown[PACK_SHOWN];
        errf(e, "pack: experiment_id '%s': not an experiment id (8 characters [a-z0-9])", pack_shown(*exp_id, shown));
        free(*exp_id);
        *exp_id = NULL;
        goto fail;
    }
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

int pack_search_space(struct pack *p, char **out, struct errbuf *e)
{
    *out = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db->h, "SELECT search_space FROM pack.experiment", -1, &st, NULL) != SQLITE_OK)
        return errf(e, "pack: %s", sqlite3_errmsg(p->db->h));
    if (sqlite3_step(st) == SQLITE_ROW)
        *out = col_str(st, 0);
    sqlite3_finalize(st);
    return *out ? 0 : errf(e, "the pack has no search space");
}

/* The columns of table in both main and pack, comma-separated, without those in
 * skip (a NULL-terminated list). */
static char *common_columns(struct pack *p, const char *table, const char *const *skip, struct errbuf *e)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(p->db->h, "SELECT m.name FROM pragma_table_info(?1, 'main') m"
                                     " JOIN pragma_table_info(?1, 'pack') k ON k.name = m.name ORDER BY m.cid",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_bind_text(st, 1, table, -1, SQLITE_TRANSIENT) != SQLITE_OK) {
        errf(e, "pack: %s", sqlite3_errmsg(p->db->h));
        sqlite3_finalize(st);
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

/* Where a loaded trial's directory goes: below the new experiment directory (rel), or
 * nowhere (rel NULL: the platform's default). */
struct dir_move {
    char *trial_id, *rel;
};

struct dir_moves {
    struct dir_move *moves;
    int nmoves;
};

static void dir_moves_free(struct dir_moves *c)
{
    for (int i = 0; i < c->nmoves; i++) {
        free(c->moves[i].trial_id);
        free(c->moves[i].rel);
    }
    free(c->moves);
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

/* One experiment row, the one the meta table names. */
static int check_experiment(struct db *db, const char *id, struct errbuf *e)
{
    sqlite3_stmt *st = query(db, e, "SELECT id, typeof(id) = 'text' FROM pack.experiment", "");
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
 * each directory inside the saved experiment directory (moved with it). */
static int check_trials(struct db *db, const char *id, const char *old_dir, int (*shared_storage)(const char *),
                        struct dir_moves *c, struct errbuf *e)
{
    sqlite3_stmt *st = query(db, e,
                             "SELECT id, typeof(id) = 'text', experiment_id, experiment_id IS ?, trial_dir, platform,"
                             " (SELECT experiment_id FROM main.trial m WHERE m.id = p.id),"
                             " (SELECT count(*) FROM pack.trial d WHERE d.id = p.id) FROM pack.trial p ORDER BY rowid",
                             "s", id);
    if (!st)
        return -1;
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
        else if (dir && !rel && !shared_storage((const char *)sqlite3_column_text(st, 5)))
            rc = errf(e, "pack: trial %s: trial_dir '%s' is not inside the saved experiment directory %s", tid,
                      pack_shown(dir, sh), pack_shown(old_dir, sh2));
        else if (dir) {
            c->moves = xrealloc(c->moves, sizeof *c->moves * (size_t)(c->nmoves + 1));
            c->moves[c->nmoves].trial_id = xstrdup(tid);
            c->moves[c->nmoves++].rel = rel ? xstrdup(rel) : NULL;
        }
    }
    return stepped(db, st, rc, step, e);
}

/* Metrics and events: only of the pack's trials and experiment (an event may name a
 * trial this database does not know, as a run found on a remote machine; never a trial
 * of another experiment). */
static int check_metrics_events(struct db *db, const char *id, struct errbuf *e)
{
    char sh[PACK_SHOWN];
    sqlite3_stmt *st = query(db, e,
                             "SELECT rowid, trial_id FROM pack.metric WHERE trial_id IS NULL"
                             " OR trial_id NOT IN (SELECT id FROM pack.trial) ORDER BY rowid LIMIT 1", "");
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
               "SELECT rowid, experiment_id IS ?, experiment_id, trial_id FROM pack.event"
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
    sqlite3_stmt *st = query(db, e, "SELECT area, path, typeof(path) = 'text' FROM pack.file ORDER BY rowid", "");
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
    st = query(db, e,
               "SELECT a.path, b.path FROM pack.file a JOIN pack.file b ON b.area = a.area AND b.rowid <> a.rowid"
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
static int check_pack(struct pack *p, const char *id, const char *old_dir, int (*shared_storage)(const char *),
                      struct dir_moves *c, struct errbuf *e)
{
    struct db *db = p->db;
    int64_t n = 0;
    if (db_int(db, e, &n, "SELECT count(*) FROM main.experiment WHERE id = ?", "s", id) < 0)
        return -1;
    if (n)
        return errf(e, "experiment %s already exists in this database; delete it first (nnictl experiment delete %s)",
                    id, id);
    if (check_experiment(db, id, e) < 0 || check_trials(db, id, old_dir, shared_storage, c, e) < 0 ||
        check_metrics_events(db, id, e) < 0 || check_files(db, e) < 0)
        return -1;
    return 0;
}

int pack_load_rows(struct pack *p, const char *exp_dir, const char *config, int dry_run,
                   int (*shared_storage)(const char *platform), struct errbuf *e)
{
    struct db *db = p->db;
    char *old_dir = NULL, *old_config = NULL, *id = NULL;
    struct dir_moves c = {0};
    if (pack_experiment_info(p, &old_dir, &old_config, e) < 0 || meta(p, "experiment_id", &id, e) < 0)
        goto fail;
    if (run(db, e, "BEGIN IMMEDIATE", "") < 0)
        goto fail;
    if (check_pack(p, id, old_dir, shared_storage, &c, e) < 0)
        goto rollback;
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
    if (run(db, e, "UPDATE main.experiment SET exp_dir = ?, config = ? WHERE id = ?", "sss", exp_dir, config, id) < 0)
        goto rollback;
    for (int i = 0; i < c.nmoves; i++) {
        char *dir = c.moves[i].rel ? path_join(exp_dir, c.moves[i].rel) : NULL;
        int rc = run(db, e, "UPDATE main.trial SET trial_dir = ? WHERE id = ? AND experiment_id = ?", "sss", dir,
                     c.moves[i].trial_id, id);
        free(dir);
        if (rc < 0)
            goto rollback;
    }
    if (db_event(db, e, id, NULL, "experiment", NULL, NULL, "loaded by nnictl experiment load") < 0)
        goto rollback;
    if (dry_run) {
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    } else if (run(db, e, "COMMIT", "") < 0) {
        goto rollback;
    }
    dir_moves_free(&c);
    free(old_dir);
    free(old_config);
    free(id);
    return 0;
rollback:
    sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
fail:
    dir_moves_free(&c);
    free(old_dir);
    free(old_config);
    free(id);
    return -1;
}
