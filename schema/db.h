/* db.h: the one SQLite database: opening, migrations, transactions, statements.
 * Every connection is WAL, busy_timeout, foreign keys on. */
#ifndef TRIALQ_DB_H
#define TRIALQ_DB_H

#include <sqlite3.h>
#include <stdint.h>

#include "common/common.h"

struct db {
    sqlite3 *h;
    char *path;
    int in_tx;
    struct db_stmt_cache *cache;
    sqlite3_stmt *begin, *commit; /* prepared once: a transaction costs no parse */
};

/* Opens (creating 0600 if absent) and migrates to the newest schema. */
int db_open(const char *path, struct db **out, struct errbuf *e);
/* Opens and migrates only up to version max_version (tests of upgrades). */
int db_open_version(const char *path, int max_version, struct db **out, struct errbuf *e);
void db_close(struct db *db);
/* SQLite's secure_delete: freed text overwritten with zeros while on (a rewrite of
 * rows that held secrets). */
void db_secure_delete(struct db *db, int on);
int db_schema_version(struct db *db);
int db_latest_version(void);

/* BEGIN IMMEDIATE (waits on busy_timeout); commit; rollback. */
int db_begin(struct db *db, struct errbuf *e);
int db_commit(struct db *db, struct errbuf *e);
void db_rollback(struct db *db);

/* Cached prepared statement for a SQL text (the pointer and text are the key). The
 * statement is reset and its bindings cleared. Never finalize it. */
sqlite3_stmt *db_prep(struct db *db, const char *sql, struct errbuf *e);

/* Binds by a type string: 'i' int64_t, 'd' int, 'f' double, 'F' double
 * or NULL when NaN, 's' const char * (NULL binds
 * NULL), 'n' nothing (NULL). */
int db_bindv(sqlite3_stmt *st, const char *types, va_list ap);

/* Runs a statement to completion; returns the number of changed rows or -1. */
int db_run(struct db *db, struct errbuf *e, const char *sql, const char *types, ...);
/* Runs a query expecting at most one row; its first column as int64 into *out.
 * Returns 1 when a row was found, 0 when none, -1 on error. */
int db_int(struct db *db, struct errbuf *e, int64_t *out, const char *sql, const char *types, ...);
/* Same, first column as a new string (NULL for SQL NULL). */
int db_text(struct db *db, struct errbuf *e, char **out, const char *sql, const char *types, ...);
/* Starts a query: returns a prepared, bound statement to step; NULL on error. */
sqlite3_stmt *db_query(struct db *db, struct errbuf *e, const char *sql, const char *types, ...);

/* Column helpers: a new string or NULL. */
char *col_str(sqlite3_stmt *st, int i);
int64_t col_i64(sqlite3_stmt *st, int i);

/* Appends an event row (inside the caller's transaction). */
int db_event(struct db *db, struct errbuf *e, const char *exp_id, const char *trial_id,
             const char *entity, const char *from, const char *to, const char *reason);
/* Role and pid written into event.actor: set once by main(). */
void db_set_actor(const char *role);
const char *db_actor(void);

#endif
