/* chantoken.h: the secret in the URL of a trial's HTTP command channel
 * (/env/<token>/<trialId>). It is a keyed hash (SipHash-2-4, two 64-bit halves) of the
 * trial id under a key taken from the experiment's token, so the api can check it
 * without storing anything, and a trial that knows only its own URL cannot forge the
 * URL of another trial. */
#ifndef TRIALQ_CHANTOKEN_H
#define TRIALQ_CHANTOKEN_H

#include <stddef.h>
#include <stdint.h>

#define CHAN_TOKEN_LEN 32 /* hex characters */

/* SipHash-2-4 of data under the 16-byte key k. */
uint64_t siphash24(const unsigned char k[16], const void *data, size_t len);

/* out: CHAN_TOKEN_LEN hex characters and a NUL. */
void chan_token(const char *exp_token, const char *trial_id, char out[CHAN_TOKEN_LEN + 1]);

/* 1 when the sent_len bytes at sent are the secret want (a NUL-terminated token, or a
 * path holding one), else 0. The time taken depends on the lengths only, never on where
 * the bytes differ: every comparison of a token (the experiment's X-Trialq-Token, a
 * trial channel's path or token) goes through here. sent may be NULL (0). */
int secret_equal(const char *sent, size_t sent_len, const char *want);

/* 1 when token is the channel token of trial_id (secret_equal). */
int chan_token_ok(const char *exp_token, const char *trial_id, const char *token);

#endif
