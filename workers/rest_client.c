/* rest_client.c: a request with back-off (workers/rest_client.h). */
#include <stdio.h>
#include <string.h>

#include "workers/rest_client.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 10000
#define MAX_BODY (8 << 20)

struct body {
    struct strbuf sb;
    size_t max;
};

static size_t on_body(char *ptr, size_t size, size_t n, void *ud)
{
    struct body *b = ud;
    if (b->sb.len + size * n > b->max)
        return 0;
    sb_add(&b->sb, ptr, size * n);
    return size * n;
}

int rest_backing_off(const struct rest_client *r)
{
    return r->down_until && mono_ms() < r->down_until;
}

/* One more failure in a row: no call for 500 ms, doubled each time, at most 10 s. */
static void back_off(struct rest_client *r)
{
    int64_t d = BACKOFF_MIN_MS;
    for (int i = 0; i < r->down_failures && d < BACKOFF_MAX_MS; i++)
        d *= 2;
    r->down_failures++;
    r->down_until = mono_ms() + (d < BACKOFF_MAX_MS ? d : BACKOFF_MAX_MS);
}

/* The answer's part in the back-off: a 429's Retry-After holds the calls that long, a
 * 5xx or a 429 without one backs off, anything else ends it. */
static void answered(struct rest_client *r, long status)
{
    int64_t hold = http_retry_after_ms(r->curl, status);
    if (hold > 0) {
        snprintf(r->down_why, sizeof r->down_why, "429 Too Many Requests, Retry-After %lld s",
                 (long long)(hold / 1000));
        r->down_until = mono_ms() + hold;
    } else if (status >= 500 || status == 429) {
        snprintf(r->down_why, sizeof r->down_why, "it answered HTTP %ld", status);
        back_off(r);
    } else {
        r->down_failures = 0;
        r->down_until = 0;
    }
}

/* The options that stay the same from call to call, on a handle that has not got them
 * (or had others): set once, not on every call (CURLOPT_CAINFO_BLOB copies the CA). */
static void handle_options(struct rest_client *r)
{
    CURL *c = r->curl;
    if (r->applied.set && r->applied.timeout_ms == r->timeout_ms && r->applied.ca_bundle == r->ca_bundle &&
        r->applied.insecure_tls == r->insecure_tls && r->applied.follow_redirects == r->follow_redirects &&
        r->applied.setup == r->setup && r->applied.setup_ud == r->setup_ud)
        return;
    if (r->applied.set)
        curl_easy_reset(c); /* keeps its connections, sessions and DNS cache */
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, r->follow_redirects ? 1L : 0L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, r->timeout_ms < 5000 ? r->timeout_ms : 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (r->ca_bundle)
        curl_easy_setopt(c, CURLOPT_CAINFO, r->ca_bundle);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, r->insecure_tls ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, r->insecure_tls ? 0L : 2L);
    if (r->setup)
        r->setup(c, r->setup_ud);
    r->applied.set = 1;
    r->applied.timeout_ms = r->timeout_ms;
    r->applied.ca_bundle = r->ca_bundle;
    r->applied.insecure_tls = r->insecure_tls;
    r->applied.follow_redirects = r->follow_redirects;
    r->applied.setup = r->setup;
    r->applied.setup_ud = r->setup_ud;
}

int rest_call(struct rest_client *r, const char *method, const char *url, const char *shown,
              const char *const *headers, const char *body, long *status, char **resp, struct errbuf *e)
{
    r->held = rest_backing_off(r);
    if (r->held)
        return errf(e, "%s %s: held back after a failure (%s); next try in %lld ms", method, shown, r->down_why,
                    (long long)(r->down_until - mono_ms()));
    CURL *c = r->curl;
    handle_options(r);
    struct body b = {.max = r->max_body > 0 ? (size_t)r->max_body : MAX_BODY};
    sb_init(&b.sb);
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *h = NULL;
    for (int i = 0; headers && headers[i]; i++)
        h = curl_slist_append(h, headers[i]);
    h = curl_slist_append(h, "Expect:");
    /* the request's own options, every one of them on every call: nothing of the last
     * call's is left */
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    /* what changes something (a POST creates a job) never goes on a reused connection:
     * libcurl sends a request again, unchanged, when a reused connection closes before
     * any answer, and the server may have handled the first one (a second job, a signed
     * nonce refused as replayed). A lost answer is the caller's to handle. */
    long fresh = strcmp(method, "GET") != 0 && !r->reuse_always;
    curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, fresh);
    curl_easy_setopt(c, CURLOPT_FORBID_REUSE, fresh);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L); /* no body: not the last call's POST */
    }
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    CURLcode rc = curl_easy_perform(c);
    /* nothing on the handle points at this call's memory once it returns */
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, NULL);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
    curl_slist_free_all(h);
    r->tls_refused = rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE;
    if (rc != CURLE_OK) {
        sb_free(&b.sb);
        snprintf(r->down_why, sizeof r->down_why, "%s%s%s", errbuf[0] ? errbuf : curl_easy_strerror(rc),
                 rc == CURLE_PEER_FAILED_VERIFICATION && r->tls_hint ? ": " : "",
                 rc == CURLE_PEER_FAILED_VERIFICATION && r->tls_hint ? r->tls_hint : "");
        back_off(r);
        return errf(e, "%s %s: %s", method, shown, r->down_why);
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    answered(r, *status);
    *resp = sb_detach(&b.sb);
    return 0;
}

int64_t http_retry_after_ms(CURL *c, long status)
{
    curl_off_t secs = 0;
    if (status != 429 || curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, &secs) != CURLE_OK || secs <= 0)
        return 0;
    return secs > 60 ? 60000 : (int64_t)secs * 1000;
}

int rest_transient(long status)
{
    return status >= 500 || status == 429 || status == 408;
}
