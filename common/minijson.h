/* minijson.h: the little JSON the trial channel needs (common/trialchan.c): find a member
 * of an object, decode a string, write a string. The channel is also served by
 * trialq-supervise, a static binary linked with libc only (it is exec'ed once per
 * trial), so this does not use cJSON; everything the channel accepts is parsed again
 * with cJSON where it is stored. */
#ifndef TRIALQ_MINIJSON_H
#define TRIALQ_MINIJSON_H

#include <stdarg.h>
#include <stddef.h>

struct strbuf;

/* Looks for the member `key` of the JSON object that is the whole text s[0..n) (white
 * space around it allowed). 1: found, *v and *vlen are its raw value text; 0: the object
 * has no such member; -1: the text is not one JSON object (NaN, Infinity and -Infinity
 * are accepted as numbers, as NNI's SDK may write them). */
int mj_member(const char *s, size_t n, const char *key, const char **v, size_t *vlen);
/* The same for nkeys keys in one pass over s: v[i], vlen[i] the raw value of keys[i]'s
 * first member (NULL, 0 when there is none). Returns how many keys were found, or -1
 * when the text is not one JSON object. */
int mj_members(const char *s, size_t n, const char *const *keys, int nkeys, const char **v, size_t *vlen);

/* The string that the JSON string literal v[0..n) holds (with its quotes), as UTF-8,
 * NUL-terminated, *len its length; NULL when v is not a string literal or holds \u0000.
 * Caller frees. */
char *mj_string(const char *v, size_t n, size_t *len);

/* A JSON string literal of s: the escapes JSON needs, valid UTF-8 kept as it is, a byte
 * that is not UTF-8 replaced by U+FFFD (the text stays valid JSON). */
void json_put_string(struct strbuf *sb, const char *s);
/* {"error": the message}: what trialq's servers answer a refused request. Caller frees. */
char *json_error_body(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
