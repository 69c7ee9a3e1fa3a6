/* secrets.h: the secret values of an experiment's config (passwords, tokens, access key
 * secrets: what config_secrets_split finds) live outside the database, in one file per
 * experiment beside it: <home>/secrets/<experiment id>.json, mode 0600 in a 0700
 * directory. The stored config_json holds SECRET_PLACEHOLDER in their places; a process
 * that needs the values (the worker, the api) merges them back with secrets_merge_file.
 * docs/security.md, "Secrets outside the database". */
#ifndef TRIALQ_SECRETS_H
#define TRIALQ_SECRETS_H

#include <cjson/cJSON.h>

#include "common/common.h"

#define SECRET_PLACEHOLDER "(secret: kept outside the database, in secrets/<experiment id>.json of the trialq home)"

/* Whether the stored value at holds the place of a secrets list entry ({"path", "value"}
 * and, for a text with a secret inside (a URL's password, a Bearer header), "masked":
 * the text as stored, its secret masked): the placeholder, or that masked text. */
int secrets_place_holds(const cJSON *at, const cJSON *entry);

/* <home>/secrets/<exp_id>.json. Caller frees. */
char *secrets_path(const char *home, const char *exp_id);

/* Writes the list ([{"path": [...], "value": ...}], as config_secrets_split returns it)
 * as the experiment's secrets file: tmp + fsync + rename + fsync of the directory, 0600.
 * An empty list removes the file instead. 0, or -1 with e set. */
int secrets_store(const char *home, const char *exp_id, const cJSON *list, struct errbuf *e);

/* Puts the values of the experiment's secrets file back into config in place of their
 * placeholders (or masked texts: secrets_place_holds). Placeholders left without a value (no file: a pack loaded here, a file
 * removed) are taken out of config, so that a platform reads the value from where it
 * would when the key is unset (its environment variables); *unset says how many (may be
 * NULL). Returns the number of values merged, or -1 with e set when the file exists but
 * cannot be read or is not a secrets file. */
int secrets_merge_file(const char *home, const char *exp_id, cJSON *config, int *unset, struct errbuf *e);

/* secrets_merge_file on a config as stored (JSON text): the merged JSON text, or NULL
 * with e set. Warnings about unset values go to the log. Caller frees. */
char *secrets_merged_json(const char *home, const char *exp_id, const char *config_json, struct errbuf *e);

/* 1 when config holds a placeholder anywhere. */
int secrets_has_placeholder(const cJSON *config);

/* Removes the experiment's secrets file (none is fine). 0, or -1 with errno. */
int secrets_remove(const char *home, const char *exp_id);

/* Removes the secrets files (and left-over temporary files) older than min_age_s whose
 * experiment is_known(ctx, id) does not know: what a `nnictl create` killed between
 * the file and the database row left. Returns how many were removed. */
int secrets_sweep(const char *home, int min_age_s, int (*is_known)(void *ctx, const char *id), void *ctx);

#endif
