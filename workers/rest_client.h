/* rest_client.h: the one HTTP(S) client of the cluster platforms (OpenPAI, PAI-DLC, DLTS,
 * Azure ML and its token endpoint, the Kubernetes API: workers/kube/client.c), with the
 * back-off the worker loop needs, one rule for all: when the service does not answer,
 * or answers 5xx or 429, no call is made before down_until (one timeout per back-off
 * period, not one per job, so the loop keeps renewing its leases): 500 ms after the
 * first failure, doubled after each failure in a row, at most 10 s; a 429 with
 * Retry-After holds the calls that long instead (at most 60 s, http_retry_after_ms).
 * The caller sees the 5xx or 429 answer itself; any other answer ends the back-off. */
#ifndef TRIALQ_REST_CLIENT_H
#define TRIALQ_REST_CLIENT_H

#include <curl/curl.h>
#include <stdint.h>

#include "common/common.h"

struct rest_client {
    CURL *curl;
    long timeout_ms;
    const char *ca_bundle; /* CURLOPT_CAINFO, or NULL: the system's */
    int insecure_tls;      /* the certificate is not verified (the config's insecure: true) */
    const char *tls_hint;  /* added to a certificate that is not trusted: what to configure */
    int tls_refused;       /* the last call failed on the certificate (a retry cannot help) */
    int follow_redirects;  /* only where no secret is in the URL */
    int reuse_always;      /* changes go on a kept connection too (their resend is harmless) */
    long max_body;         /* the longest answer taken; 0: 8 MiB */
    /* the connection's own options (client certificates, CA data), set on the handle
     * with the others above (not per call: a CA blob is copied once) */
    void (*setup)(CURL *c, void *ud);
    void *setup_ud;
    /* what curl holds of the options above (set on the handle once, again only after
     * one of them changed): libcurl keeps options between calls, so only the request's
     * own are set per call */
    struct {
        int set;
        long timeout_ms;
        const char *ca_bundle;
        int insecure_tls, follow_redirects;
        void (*setup)(CURL *c, void *ud);
        void *setup_ud;
    } applied;
    int64_t down_until;    /* no call before this (mono ms): backing off */
    int held;              /* the last call was not made: held back by the back-off */
    int down_failures;
    char down_why[256];
};

/* method url with the headers (NULL-terminated, Content-Type among them) and body (or
 * NULL); anything but GET on a fresh connection that is not kept (unless reuse_always).
 * Returns 0 when the service answered (*status, *resp: the body, caller frees),
 * -1 when no answer came (refused, timeout, TLS) or it is not tried before down_until: e
 * says why, naming the request by shown (never the url, which may hold a secret). */
int rest_call(struct rest_client *r, const char *method, const char *url, const char *shown,
              const char *const *headers, const char *body, long *status, char **resp, struct errbuf *e);

/* Whether calls are held back now (rest_call would refuse one). */
int rest_backing_off(const struct rest_client *r);

/* An answer that may pass: 5xx, 429 Too Many Requests, 408 Request Timeout. */
int rest_transient(long status);

/* A 429 answer's Retry-After in ms, at most a minute; 0 for another status or without
 * one. */
int64_t http_retry_after_ms(CURL *c, long status);

#endif
