/* minijson.h: the little JSON the supervisor's trial channel needs (supervise/chanserve.c):
 * find a member of an object, decode a string, write a string. trialq-supervise is a
 * static binary linked with libc only (it is exec'ed once per trial), so it does not use
 * cJSON; everything it accepts is parsed again with cJSON by the worker that stores it. */
#ifndef TRIALQ_MINIJSON_H
#define TRIALQ_MINIJSON_H

#include <stddef.h>

struct strbuf;

/* Looks for the member `key` of the JSON object that is the whole text s[0..n) (white
 * space around it allowed). 1: found, *v and *vlen are its raw value text; 0: the object
 * has no such member; -1: the text is not one JSON object (NaN, Infinity and -Infinity
 * are accepted as numbers, as NNI's SDK may write them). */
int mj_member(const char *s, size_t n, const char *key, const char **v, size_t *vlen);

/* The string that the JSON string literal v[0..n) holds (with its quotes), as UTF-8,
 * NUL-terminated, *len its length; NULL when v is not a string literal or holds \u0000.
 * Caller frees. */
char *mj_string(const char *v, size_t n, size_t *len);

/* Appends s as a JSON string literal (quotes, and the escapes JSON needs). */
void mj_put_string(struct strbuf *sb, const char *s);

#endif
