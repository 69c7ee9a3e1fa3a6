/* kube_client.c: a small Kubernetes REST client on libcurl: JSON in, JSON out, one
 * keep-alive handle per connection, TLS with the kubeconfig's CA and client
 * certificate or bearer token, and a back-off after transport errors, 5xx and 429 (for
 * the time its Retry-After asks) so that a struggling API server is not hammered. */
#include <stdlib.h>
#include <string.h>

#include "workers/kube.h"
#include "workers/rest_client.h"

#define BACKOFF_MIN_MS 250
#define BACKOFF_MAX_MS 8000
#define MAX_BODY (64 << 20)

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
    struct strbuf *sb = ud;
    if (sb->len + sz * n > MAX_BODY)
        return 0;
    sb_add(sb, p, sz * n);
    return sz * n;
}

int kube_backing_off(const struct kube_conn *k)
{
    return k->retry_at_ms && mono_ms() < k->retry_at_ms;
}

static void backoff(struct kube_conn *k)
{
    k->backoff_ms = k->backoff_ms ? k->backoff_ms * 2 : BACKOFF_MIN_MS;
    if (k->backoff_ms > BACKOFF_MAX_MS)
        k->backoff_ms = BACKOFF_MAX_MS;
    k->retry_at_ms = mono_ms() + k->backoff_ms;
}

static void setup(struct kube_conn *k)
{
    CURL *c = k->curl = curl_easy_init();
    if (!c)
        abort();
    long t = k->timeout_ms;
    if (t <= 0) {
        const char *env = getenv("TRIALQ_KUBE_TIMEOUT_MS");
        t = env && atol(env) > 0 ? atol(env) : 15000;
        k->timeout_ms = t;
    }
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, t < 5000 ? t : 5000L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, t);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (k->insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (k->ca_pem) {
        struct curl_blob b = {.data = k->ca_pem, .len = k->ca_len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &b);
    } else if (k->ca_file) {
        curl_easy_setopt(c, CURLOPT_CAINFO, k->ca_file);
    }
    if (k->cert_pem) {
        struct curl_blob b = {.data = k->cert_pem, .len = k->cert_len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &b);
        curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (k->cert_file) {
        curl_easy_setopt(c, CURLOPT_SSLCERT, k->cert_file);
    }
    if (k->key_pem) {
        struct curl_blob b = {.data = k->key_pem, .len = k->key_len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &b);
        curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (k->key_file) {
        curl_easy_setopt(c, CURLOPT_SSLKEY, k->key_file);
    }
    if (!k->token && k->username && k->password) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, k->username);
        curl_easy_setopt(c, CURLOPT_PASSWORD, k->password);
    }
}

int kube_request(struct kube_conn *k, const char *method, const char *path, const cJSON *body, long *status,
                 cJSON **resp, struct errbuf *e)
{
    *status = 0;
    if (resp)
        *resp = NULL;
    if (!k->curl)
        setup(k);
    CURL *c = k->curl;
    char *url = xasprintf("%s%s", k->server, path);
    char *payload = body ? cJSON_PrintUnformatted(body) : NULL;
    struct curl_slist *h = NULL;
    h = curl_slist_append(h, "Accept: application/json");
    if (payload) /* a PATCH is a JSON merge patch (RFC 7386), the only kind sent */
        h = curl_slist_append(h, strcmp(method, "PATCH") == 0 ? "Content-Type: application/merge-patch+json"
                                                                : "Content-Type: application/json");
    char *auth = NULL;
    if (k->token) {
        auth = xasprintf("Authorization: Bearer %s", k->token);
        h = curl_slist_append(h, auth);
    }
    h = curl_slist_append(h, "User-Agent: trialq");
    struct strbuf sb;
    sb_init(&sb);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sb);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPGET, 0L);
    if (payload) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, payload);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
    } else {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
        if (strcmp(method, "GET") == 0)
            curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    CURLcode cc = curl_easy_perform(c);
    int rc = 0;
    if (cc != CURLE_OK) {
        errf(e, "%s %s: %s", method, url, curl_easy_strerror(cc));
        backoff(k);
        rc = -1;
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
        if (resp && sb.len)
            *resp = cJSON_ParseWithLength(sb.buf, sb.len);
        int64_t hold = http_retry_after_ms(c, *status);
        if (hold > 0) {
            /* Too Many Requests: no request before the server's Retry-After */
            k->backoff_ms = hold;
            k->retry_at_ms = mono_ms() + k->backoff_ms;
        } else if (*status >= 500 || *status == 429)
            backoff(k);
        else {
            k->backoff_ms = 0;
            k->retry_at_ms = 0;
        }
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(h);
    free(auth);
    free(payload);
    free(url);
    sb_free(&sb);
    return rc;
}

const char *kube_status_message(const cJSON *resp, long status)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(resp, "message");
    if (cJSON_IsString(m) && m->valuestring[0])
        return m->valuestring;
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 409: return "Conflict";
    case 422: return "Unprocessable Entity";
    default: return status >= 500 ? "server error" : "unexpected status";
    }
}

char *kube_escape(const char *s)
{
    struct strbuf sb;
    sb_init(&sb);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
            ch == '_' || ch == '.' || ch == '~')
            sb_add(&sb, s, 1);
        else
            sb_printf(&sb, "%%%02X", ch);
    }
    return sb_detach(&sb);
}
