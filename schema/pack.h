/* pack.h: one experiment saved in a file of its own and loaded back (nnictl
 * experiment save | load, schema/pack.c). The file is an SQLite database holding the
 * experiment's rows (experiment, trial, metric, event, as in the main schema) and the
 * files of its directory (table file: path relative to it, mode, content). */
#ifndef TRIALQ_PACK_H
#define TRIALQ_PACK_H

#include <stddef.h>

#include "schema/db.h"

#define PACK_FORMAT "trialq-experiment-pack"
#define PACK_VERSION 1

struct pack;

/* Creates the pack file at path (0600; it must not exist) and copies the experiment's
 * rows into it from one consistent snapshot. */
int pack_create(struct db *db, const char *exp_id, const char *path, struct pack **out, struct errbuf *e);
/* Adds one file; area is "experiment" (its directory) or "code" (trialCodeDirectory). */
int pack_add_file(struct pack *p, const char *area, const char *rel, int mode, const void *data, size_t len,
                  struct errbuf *e);
/* Writes everything out (one commit) and detaches; p is freed either way. */
int pack_finish(struct pack *p, struct errbuf *e);

/* Loading: a pack is untrusted input (it may come from someone else), so nothing it
 * holds is used before it is checked, and what is checked is what is used. */

/* Opens a pack for loading; *exp_id (caller frees) is the experiment it holds, refused
 * unless it is an experiment id (is_experiment_id). Refused, naming it, when the file
 * holds any object but the six tables pack_create makes and their keys' indexes (a
 * view, a trigger, an index of its own, another table, a virtual table), when a table
 * lacks a column the load needs or has a generated one. Then, in one read transaction,
 * the rows are copied once into TEMP tables of this connection (typed as this
 * database's tables; the files' paths and modes, not their contents): every function
 * below reads those copies, never the pack's tables again (pack_each_file reads a
 * file's content from the pack by row). pack_close drops them. */
int pack_open(struct db *db, const char *path, struct pack **out, char **exp_id, struct errbuf *e);
/* Calls fn for every file of the area, in path order; stops at fn's first nonzero. */
int pack_each_file(struct pack *p, const char *area,
                   int (*fn)(void *arg, const char *rel, int mode, const void *data, size_t len), void *arg,
                   struct errbuf *e);
/* The stored experiment row's exp_dir and config (caller frees). */
int pack_experiment_info(struct pack *p, char **exp_dir, char **config, struct errbuf *e);
/* The stored experiment's search space (caller frees); -1 when it has none. */
int pack_search_space(struct pack *p, char **out, struct errbuf *e);
/* Checks the rows, then inserts them in one transaction (with dry_run: checks and
 * inserts, then rolls back, so that a caller can check everything before it writes
 * files). Refused, changing nothing, naming the row and field: a second experiment
 * row, an id that is not trialq's, a trial, metric or event row of another experiment,
 * a trial_dir outside the saved experiment directory (those of platforms with a shared
 * storage outside it, shared_storage(platform) != 0, are cleared: the files are not in
 * the pack; config_shared_storage of config/ knows them), a file path leading outside
 * its directory or stored twice, an experiment or trial id that exists in this
 * database. The copy repeats the rules: the experiment row gets the pack's id, exp_dir
 * and config; only the trials the checks passed go in, with the pack's experiment id
 * and their directories rebuilt under exp_dir (never the pack's own); metrics of those
 * trials only; events with the pack's experiment id, none of another experiment's
 * trial. Process fields are cleared; metric and event rows get new ids in their old
 * order. */
int pack_load_rows(struct pack *p, const char *exp_dir, const char *config, int dry_run,
                   int (*shared_storage)(const char *platform), struct errbuf *e);
/* A relative path that stays inside the directory it is joined to: no leading '/',
 * no empty, '.' or '..' part. */
int pack_rel_path_ok(const char *rel);
/* s for a message: at most 80 bytes, control characters as '?'. */
#define PACK_SHOWN 84
const char *pack_shown(const char *s, char out[PACK_SHOWN]);
/* Drops the TEMP copies, detaches and frees. */
void pack_close(struct pack *p);

#endif
