/* acs_sign.h: Alibaba Cloud's request signature V3, "ACS3-HMAC-SHA256" (common/acs_sign.c),
 * for the OpenAPI gateways of Alibaba Cloud services, ROA style (PAI-DLC's 2020-12-03
 * API: POST /api/v1/jobs, GET /api/v1/jobs/{JobId}, ...) and RPC style alike.
 *
 * As Alibaba documents it ("Request syntax and signature method V3"):
 *   CanonicalRequest = METHOD \n CanonicalURI \n CanonicalQueryString \n
 *                      CanonicalHeaders \n SignedHeaders \n HexEncode(SHA256(body))
 *   StringToSign     = "ACS3-HMAC-SHA256" \n HexEncode(SHA256(CanonicalRequest))
 *   Signature        = HexEncode(HMAC-SHA256(AccessKeySecret, StringToSign))
 *   Authorization: ACS3-HMAC-SHA256 Credential=<AccessKeyId>,SignedHeaders=<...>,Signature=<...>
 * with every path segment and query name and value percent-encoded by RFC 3986 (only
 * A-Z a-z 0-9 - _ . ~ stay as they are; a space is %20, * is %2A), the query sorted by
 * name, and the signed headers (host, content-type and every x-acs-*) lower-cased,
 * trimmed and sorted. Hex digits are lower case.
 *
 * The secret is used for the HMAC only: it is in no result, no error and no log line. */
#ifndef TRIALQ_ACS_SIGN_H
#define TRIALQ_ACS_SIGN_H

#include <stddef.h>
#include <time.h>

#include "common/common.h"

#define ACS_ALGORITHM "ACS3-HMAC-SHA256"
#define ACS_HEX_SHA256 65 /* 64 hex digits and a NUL */
#define ACS_DATE_SIZE 21  /* "2023-10-26T10:22:32Z" and a NUL */
#define ACS_MAX_HEADERS 10

struct acs_kv {
    const char *name;
    const char *value;
};

struct acs_request {
    const char *method;  /* upper case: "GET", "POST", ... */
    const char *host;    /* the Host header exactly as it is sent: "pai-dlc.cn-hangzhou.aliyuncs.com",
                          * "127.0.0.1:8080" (libcurl leaves a default port out) */
    const char *path;    /* the resource path, not encoded: "/api/v1/jobs/dlc1x2y3/stop" */
    const struct acs_kv *query; /* decoded names and values (a NULL value: the empty string) */
    size_t nquery;
    const char *action;  /* x-acs-action: "CreateJob" */
    const char *version; /* x-acs-version: "2020-12-03" */
    const void *body;    /* NULL (or body_len 0): no body, hashed as the empty string */
    size_t body_len;
    const char *content_type;   /* signed and sent when not NULL: "application/json" */
    const char *security_token; /* an STS token (x-acs-security-token), or NULL */
    const char *date;    /* x-acs-date; NULL: now */
    const char *nonce;   /* x-acs-signature-nonce; NULL: 32 random hex digits */
};

struct acs_signed {
    /* what the request line must carry: the canonical URI, then "?" and the canonical
     * query string when there is one (the URL sent is the one signed) */
    char *target;
    /* the headers to send, Authorization last (names as signed, lower case) */
    struct acs_kv headers[ACS_MAX_HEADERS];
    size_t nheaders;
    char *canonical_request; /* holds no secret: for tests and for a debug message */
    char string_to_sign_hash[ACS_HEX_SHA256];
};

/* Signs req with the access key (id, secret). Returns 0, or -1 with e set when the
 * request or the key cannot be signed as documented (empty or missing parts, a
 * method that is not upper-case letters, a path without a leading '/', control
 * characters in a header value, a key id with ',', spaces or control characters).
 * out is filled only on success; free it with acs_signed_free. */
int acs_sign(const struct acs_request *req, const char *key_id, const char *key_secret,
             struct acs_signed *out, struct errbuf *e);
void acs_signed_free(struct acs_signed *s);

/* The value of header `name` in s, or NULL. */
const char *acs_signed_header(const struct acs_signed *s, const char *name);

/* The pieces, for tests and for servers that check a signature. */
void acs_percent_encode(struct strbuf *sb, const char *s, size_t n); /* RFC 3986, as above */
char *acs_canonical_uri(const char *path);                          /* each segment encoded */
char *acs_canonical_query(const struct acs_kv *q, size_t n);          /* sorted, encoded */
void acs_sha256_hex(const void *data, size_t n, char out[ACS_HEX_SHA256]);
/* -1 when libcrypto fails (it does not for SHA-256 in practice) */
int acs_hmac_sha256_hex(const char *key, const void *msg, size_t n, char out[ACS_HEX_SHA256]);
void acs_date(time_t t, char out[ACS_DATE_SIZE]); /* UTC, yyyy-MM-ddTHH:mm:ssZ */

#endif
