/* rest_client.h: one HTTP(S) request to a cluster's REST service (OpenPAI, PAI-DLC, DLTS), with
 * the back-off the worker loop needs: while the service does not answer, no call is made
 * before down_until (one timeout per back-off period, not one per job, so the loop keeps
 * renewing its leases); a 429 answer with Retry-After sets down_until to then (at most
 * 60 s, http_retry_after_ms), and the caller sees the 429. Azure ML uses it too. */
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
    int64_t down_until;    /* no answer came: no call before this (mono ms) */
    int down_failures;
    char down_why[256];
};

/* method url with the headers (NULL-terminated, Content-Type among them) and body (or
 * NULL); anything but GET on a fresh connection that is not kept. Returns 0 when the service answered (*status, *resp: the body, caller frees),
 * -1 when no answer came (refused, timeout, TLS) or it is not tried before down_until: e
 * says why, naming the request by shown (never the url, which may hold a secret). */
int rest_call(struct rest_client *r, const char *method, const char *url, const char *shown,
              const char *const *headers, const char *body, long *status, char **resp, struct errbuf *e);

/* A 429 answer's Retry-After in ms, at most a minute; 0 for another status or without
 * one. Shared with the Kubernetes client (kube_client.c). */
int64_t http_retry_after_ms(CURL *c, long status);

#endif
