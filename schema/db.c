/* db.c: opening and migrating the database, statements and transactions. */
#include "schema/db.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema/migrations.h"

#define CACHE_SIZE 64

/* Keyed by a copy of the SQL text (callers may pass freed-and-reused buffers, so a
 * pointer is never a key) and its hash. */
struct db_stmt_cache {
    char *sql[CACHE_SIZE];
    const char *from[CACHE_SIZE]; /* the caller's text it was last asked by (a literal, mostly) */
    uint64_t hash[CACHE_SIZE];
    sqlite3_stmt *st[CACHE_SIZE];
    int n;
};

static char g_actor[64] = "trialq";

void db_set_actor(const char *role)
{
    snprintf(g_actor, sizeof g_actor, "%s:%d", role, (int)getpid());
}

const char *db_actor(void)
{
    return g_actor;
}

int db_latest_version(void)
{
    return trialq_migrations[trialq_migration_count - 1].version;
}

int db_schema_version(struct db *db)
{
    int64_t v = 0;
    db_int(db, NULL, &v, "PRAGMA user_version", "");
    return (int)v;
}

static int exec_sql(struct db *db, const char *sql, struct errbuf *e)
{
    char *msg = NULL;
    if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
        errf(e, "%s", msg ? msg : sqlite3_errmsg(db->h));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int migrate(struct db *db, int max_version, struct errbuf *e)
{
    for (int i = 0; i < trialq_migration_count; i++) {
        const struct migration *m = &trialq_migrations[i];
        if (m->version > max_version)
            break;
        /* re-read the version inside the write lock: another process may have
         * migrated between our check and our BEGIN */
        if (db_begin(db, e) < 0)
            return -1;
        if (db_schema_version(db) >= m->version) {
            db_rollback(db);
            continue;
        }
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", m->version);
        if (exec_sql(db, m->sql, e) < 0 || exec_sql(db, pragma, e) < 0) {
            db_rollback(db);
            return errprefix(e, "migration %s", m->name);
        }
        if (db_commit(db, e) < 0)
            return -1;
    }
    int v = db_schema_version(db);
    if (v > db_latest_version())
        return errf(e, "database %s has schema version %d, newer than this trialq (%d): upgrade trialq",
                    db->path, v, db_latest_version());
    return 0;
}

/* SQLite's own busy handler sleeps 1, 2, 5, 10 ... ms between tries, so a writer that
 * waits for another's short transaction loses milliseconds each time. Transactions here
 * last microseconds: poll finely first, then back off, up to 30 s in all. */
static int busy_wait(void *arg, int count)
{
    (void)arg;
    static const int steps_us[] = {20, 50, 100, 200, 500, 1000, 2000, 5000};
    int n = (int)(sizeof steps_us / sizeof steps_us[0]);
    int us = count < n * 4 ? steps_us[count / 4] : 10000;
    /* tries 0..31 take ~36 ms; after that 10 ms each: ~3000 more tries is 30 s */
    if (count > 32 + 3000)
        return 0;
    usleep((useconds_t)us);
    return 1;
}

int db_open_version(const char *path, int max_version, struct db **out, struct errbuf *e)
{
    struct db *db = xcalloc(1, sizeof *db);
    db->path = xstrdup(path);
    db->cache = xcalloc(1, sizeof *db->cache);
    /* create it 0600 ourselves: sqlite would honour the umask */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        errf(e, "cannot open database %s: %s", path, strerror(errno));
        goto fail;
    }
    close(fd);
    if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        errf(e, "cannot open database %s: %s", path, db->h ? sqlite3_errmsg(db->h) : "out of memory");
        goto fail;
    }
    sqlite3_busy_handler(db->h, busy_wait, NULL);
    sqlite3_extended_result_codes(db->h, 1);
    if (exec_sql(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", e) < 0) {
        errprefix(e, "database %s", path);
        goto fail;
    }
    if (migrate(db, max_version, e) < 0)
        goto fail;
    *out = db;
    return 0;
fail:
    db_close(db);
    return -1;
}

int db_open(const char *path, struct db **out, struct errbuf *e)
{
    return db_open_version(path, 1 << 30, out, e);
}

void db_secure_delete(struct db *db, int on)
{
    sqlite3_exec(db->h, on ? "PRAGMA secure_delete = ON" : "PRAGMA secure_delete = OFF", NULL, NULL, NULL);
}

void db_close(struct db *db)
{
    if (!db)
        return;
    if (db->cache)
        for (int i = 0; i < db->cache->n; i++) {
            sqlite3_finalize(db->cache->st[i]);
            free(db->cache->sql[i]);
        }
    sqlite3_finalize(db->begin);
    sqlite3_finalize(db->commit);
    if (db->h)
        sqlite3_close(db->h);
    free(db->cache);
    free(db->path);
    free(db);
}

/* Steps a transaction statement (prepared on first use) once; SQLite's result code. */
static int step_tx(struct db *db, sqlite3_stmt **st, const char *sql)
{
    if (!*st && sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
        return sqlite3_errcode(db->h);
    int rc = sqlite3_step(*st);
    sqlite3_reset(*st);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* A write that failed for the machine's sake (a full disk, an I/O error, a read-only
 * file, a lock held beyond the busy timeout) is a fault the user must see, with the
 * path and what to do (common/fault.c); the next write that succeeds resolves it. */
static void db_health(struct db *db, int rc)
{
    if (rc == SQLITE_OK || rc == SQLITE_DONE) {
        if (fault_has("database"))
            fault_clear("database");
        return;
    }
    const char *what, *todo;
    switch (rc & 0xff) {
    case SQLITE_FULL:
        what = "disk full (SQLITE_FULL)";
        todo = "free space on its filesystem; trialq resumes by itself";
        break;
    case SQLITE_IOERR:
        what = "I/O error (SQLITE_IOERR)";
        todo = "free space if its filesystem is full, else check the disk (dmesg); trialq retries by itself";
        break;
    case SQLITE_READONLY:
        what = "read-only (SQLITE_READONLY)";
        todo = "make it and its directory writable (remount read-write); trialq resumes by itself";
        break;
    case SQLITE_BUSY:
        what = "locked beyond the busy timeout (SQLITE_BUSY)";
        todo = "another process holds a write transaction (sqlite3 shell open? end it); trialq retries by itself";
        break;
    default: return;
    }
    fault_set("database", "database %s: %s: %s", db->path, what, todo);
}

int db_begin(struct db *db, struct errbuf *e)
{
    /* busy_timeout applies to BEGIN IMMEDIATE; retry a few times beyond it
     * so that a long checkpoint elsewhere does not fail a state change */
    for (int tries = 0;; tries++) {
        int rc = step_tx(db, &db->begin, "BEGIN IMMEDIATE");
        if (rc == SQLITE_OK) {
            db->in_tx = 1;
            return 0;
        }
        if ((rc & 0xff) != SQLITE_BUSY || tries >= 3) {
            db_health(db, rc);
            return errf(e, "begin transaction: %s", sqlite3_errmsg(db->h));
        }
    }
}

int db_commit(struct db *db, struct errbuf *e)
{
    int rc = step_tx(db, &db->commit, "COMMIT");
    db_health(db, rc);
    if (rc != SQLITE_OK) {
        errf(e, "commit: %s", sqlite3_errmsg(db->h));
        db_rollback(db);
        return -1;
    }
    db->in_tx = 0;
    return 0;
}

void db_rollback(struct db *db)
{
    if (sqlite3_get_autocommit(db->h) == 0)
        sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
    db->in_tx = 0;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The cached statement i, ready for new bindings; asked for by sql. */
static sqlite3_stmt *cached(struct db_stmt_cache *c, int i, const char *sql)
{
    sqlite3_reset(c->st[i]);
    sqlite3_clear_bindings(c->st[i]);
    c->from[i] = sql;
    return c->st[i];
}

sqlite3_stmt *db_prep(struct db *db, const char *sql, struct errbuf *e)
{
    struct db_stmt_cache *c = db->cache;
    /* the same text at the same address as last time (a literal): found without the
     * hash, whose byte-by-byte loop costs more than the comparison that confirms it */
    for (int i = 0; i < c->n; i++)
        if (c->from[i] == sql && strcmp(c->sql[i], sql) == 0)
            return cached(c, i, sql);
    uint64_t h = fnv1a(sql);
    for (int i = 0; i < c->n; i++)
        if (c->hash[i] == h && strcmp(c->sql[i], sql) == 0)
            return cached(c, i, sql);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) {
        errf(e, "prepare: %s (in: %.120s)", sqlite3_errmsg(db->h), sql);
        return NULL;
    }
    if (c->n == CACHE_SIZE) { /* evict the oldest */
        sqlite3_finalize(c->st[0]);
        free(c->sql[0]);
        memmove(c->sql, c->sql + 1, sizeof c->sql[0] * (CACHE_SIZE - 1));
        memmove(c->from, c->from + 1, sizeof c->from[0] * (CACHE_SIZE - 1));
        memmove(c->hash, c->hash + 1, sizeof c->hash[0] * (CACHE_SIZE - 1));
        memmove(c->st, c->st + 1, sizeof c->st[0] * (CACHE_SIZE - 1));
        c->n--;
    }
    c->sql[c->n] = xstrdup(sql);
    c->from[c->n] = sql;
    c->hash[c->n] = h;
    c->st[c->n] = st;
    c->n++;
    return st;
}

int db_bindv(sqlite3_stmt *st, const char *types, va_list ap)
{
    int idx = 1;
    for (const char *t = types; *t; t++, idx++) {
        int rc;
        switch (*t) {
        case 'i': rc = sqlite3_bind_int64(st, idx, va_arg(ap, int64_t)); break;
        case 'd': rc = sqlite3_bind_int(st, idx, va_arg(ap, int)); break;
        case 'f': rc = sqlite3_bind_double(st, idx, va_arg(ap, double)); break;
        case 'F': { /* a double that binds NULL when it is NaN */
            double v = va_arg(ap, double);
            rc = v != v ? sqlite3_bind_null(st, idx) : sqlite3_bind_double(st, idx, v);
            break;
        }
        case 's': {
            const char *s = va_arg(ap, const char *);
            rc = s ? sqlite3_bind_text(st, idx, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, idx);
            break;
        }
        case 'n': rc = sqlite3_bind_null(st, idx); break;
        default: return -1;
        }
        if (rc != SQLITE_OK)
            return -1;
    }
    return 0;
}

static sqlite3_stmt *prep_bind(struct db *db, struct errbuf *e, const char *sql, const char *types, va_list ap)
{
    sqlite3_stmt *st = db_prep(db, sql, e);
    if (!st)
        return NULL;
    if (db_bindv(st, types, ap) < 0) {
        errf(e, "bind: %s", sqlite3_errmsg(db->h));
        return NULL;
    }
    return st;
}

int db_run(struct db *db, struct errbuf *e, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    sqlite3_stmt *st = prep_bind(db, e, sql, types, ap);
    va_end(ap);
    if (!st)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        ;
    if (rc != SQLITE_DONE || (!db->in_tx && !sqlite3_stmt_readonly(st)))
        db_health(db, rc == SQLITE_DONE ? SQLITE_OK : sqlite3_extended_errcode(db->h));
    if (rc != SQLITE_DONE) {
        errf(e, "%s (in: %.120s)", sqlite3_errmsg(db->h), sql);
        sqlite3_reset(st);
        return -1;
    }
    sqlite3_reset(st);
    return sqlite3_changes(db->h);
}

/* Steps a bound statement once: 1 with a row (handed to take), 0 without, -1 on error. */
static int one_row(struct db *db, struct errbuf *e, const char *sql, sqlite3_stmt *st,
                   void (*take)(sqlite3_stmt *, void *), void *out)
{
    if (!st)
        return -1;
    int rc = sqlite3_step(st), found = 0;
    if (rc == SQLITE_ROW) {
        take(st, out);
        found = 1;
    } else if (rc != SQLITE_DONE) {
        errf(e, "%s (in: %.120s)", sqlite3_errmsg(db->h), sql);
        found = -1;
    }
    sqlite3_reset(st);
    return found;
}

static void take_int(sqlite3_stmt *st, void *out) { *(int64_t *)out = sqlite3_column_int64(st, 0); }
static void take_text(sqlite3_stmt *st, void *out) { *(char **)out = col_str(st, 0); }

int db_int(struct db *db, struct errbuf *e, int64_t *out, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    sqlite3_stmt *st = prep_bind(db, e, sql, types, ap);
    va_end(ap);
    return one_row(db, e, sql, st, take_int, out);
}

int db_text(struct db *db, struct errbuf *e, char **out, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    sqlite3_stmt *st = prep_bind(db, e, sql, types, ap);
    va_end(ap);
    return one_row(db, e, sql, st, take_text, out);
}

sqlite3_stmt *db_query(struct db *db, struct errbuf *e, const char *sql, const char *types, ...)
{
    va_list ap;
    va_start(ap, types);
    sqlite3_stmt *st = prep_bind(db, e, sql, types, ap);
    va_end(ap);
    return st;
}

char *col_str(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    return s ? xstrdup((const char *)s) : NULL;
}

int64_t col_i64(sqlite3_stmt *st, int i)
{
    return sqlite3_column_int64(st, i);
}

int db_event(struct db *db, struct errbuf *e, const char *exp_id, const char *trial_id,
             const char *entity, const char *from, const char *to, const char *reason)
{
    return db_run(db, e,
                  "INSERT INTO event(time, experiment_id, trial_id, entity, from_state, to_state, actor, reason)"
                  " VALUES (?,?,?,?,?,?,?,?)",
                  "isssssss", now_ms(), exp_id, trial_id, entity, from, to, g_actor, reason) < 0 ? -1 : 0;
}
