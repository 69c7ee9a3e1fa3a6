/* kube/client.c: the Kubernetes API over the one REST client (workers/rest_client.h):
 * JSON in, JSON out, one keep-alive handle per connection, TLS with the kubeconfig's CA
 * and client certificate or bearer token, and rest_client's back-off (transport errors,
 * 5xx and 429, for the time its Retry-After asks) so that a struggling API server is not
 * hammered. */
#include <stdlib.h>
#include <string.h>

#include "workers/kube/kube.h"
#include "workers/rest_client.h"

#define MAX_BODY (64 << 20)

int kube_backing_off(const struct kube_conn *k)
{
    return rest_backing_off(&k->rest);
}

/* The connection's TLS and basic auth, set once on the handle (rest_client's setup). */
static void tls_setup(CURL *c, void *ud)
{
    const struct kube_conn *k = ud;
    if (k->insecure) {
        /* rest_call turned verification off (rest.insecure_tls) */
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

static void setup(struct kube_conn *k)
{
    struct rest_client *r = &k->rest;
    r->curl = curl_easy_init();
    if (!r->curl)
        abort();
    if (r->timeout_ms <= 0) {
        const char *env = getenv("TRIALQ_KUBE_TIMEOUT_MS");
        r->timeout_ms = env && atol(env) > 0 ? atol(env) : 15000;
    }
    r->insecure_tls = k->insecure;
    r->reuse_always = 1; /* one keep-alive connection; a create sent twice answers 409 (adopted) */
    r->max_body = MAX_BODY;
    r->setup = tls_setup;
    r->setup_ud = k;
}

int kube_request(struct kube_conn *k, const char *method, const char *path, const cJSON *body, long *status,
                 cJSON **resp, struct errbuf *e)
{
    *status = 0;
    if (resp)
        *resp = NULL;
    if (!k->rest.curl)
        setup(k);
    char *url = xasprintf("%s%s", k->server, path);
    char *payload = body ? cJSON_PrintUnformatted(body) : NULL;
    char *auth = k->token ? xasprintf("Authorization: Bearer %s", k->token) : NULL;
    const char *headers[5];
    int nh = 0;
    headers[nh++] = "Accept: application/json";
    if (payload) /* a PATCH is a JSON merge patch (RFC 7386), the only kind sent */
        headers[nh++] = strcmp(method, "PATCH") == 0 ? "Content-Type: application/merge-patch+json"
                                                      : "Content-Type: application/json";
    if (auth)
        headers[nh++] = auth;
    headers[nh++] = "User-Agent: trialq";
    headers[nh] = NULL;
    char *answer = NULL;
    int rc = rest_call(&k->rest, method, url, url, headers, payload, status, &answer, e);
    if (rc == 0 && resp && answer && answer[0])
        *resp = cJSON_Parse(answer);
    free(answer);
    free(auth);
    free(payload);
    free(url);
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
