/* migrations.h: the embedded SQL migrations (generated from migrations/). */
#ifndef TRIALQ_MIGRATIONS_H
#define TRIALQ_MIGRATIONS_H

struct migration {
    int version;      /* NNN of NNN_name.sql, stored in PRAGMA user_version */
    const char *name;
    const char *sql;
};

extern const struct migration trialq_migrations[];
extern const int trialq_migration_count;

#endif
