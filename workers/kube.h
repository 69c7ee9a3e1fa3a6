/* kube.h: what the Kubernetes-family platforms (kubeflow, frameworkcontroller, adl)
 * share: a kubeconfig read as kubectl reads it, a small REST client on libcurl, and the
 * shared-storage helpers (code copy honouring .nniignore). Internal to workers/. */
#ifndef TRIALQ_KUBE_H
#define TRIALQ_KUBE_H

#include <curl/curl.h>

#include "workers/worker.h"

/* One cluster connection, from the kubeconfig's current context. */
struct kube_conn {
    char *source;     /* the kubeconfig file(s), for messages */
    char *context, *cluster, *user;
    char *server;     /* https://host:port, without a trailing slash */
    char *ca_file;    /* certificate-authority (absolute) */
    char *ca_pem;     /* certificate-authority-data, decoded */
    size_t ca_len;
    char *cert_file, *key_file;
    char *cert_pem, *key_pem; /* client-certificate-data / client-key-data, decoded */
    size_t cert_len, key_len;
    char *token;      /* bearer token (token or tokenFile) */
    char *username, *password;
    int insecure;     /* insecure-skip-tls-verify */
    char *namespace;  /* the context's namespace, NULL if none */
    CURL *curl;
    long timeout_ms;
    /* back-off after transport errors / 5xx: no request before retry_at */
    int64_t retry_at_ms, backoff_ms;
};

/* Reads $KUBECONFIG (a ':' list, merged as kubectl does) or ~/.kube/config. */
int kube_config_load(struct kube_conn *k, struct errbuf *e);
void kube_conn_clear(struct kube_conn *k);

/* One request. Returns 0 when the server answered (*status holds the HTTP status and
 * *resp the parsed JSON body or NULL), -1 on a transport error (e says what). body may
 * be NULL. A transport error or 5xx sets the back-off; kube_backing_off() tells. */
int kube_request(struct kube_conn *k, const char *method, const char *path, const cJSON *body, long *status,
                 cJSON **resp, struct errbuf *e);
int kube_backing_off(const struct kube_conn *k);
/* The "message" of a Status object, or a short text for the status code. */
const char *kube_status_message(const cJSON *resp, long status);
/* Percent-encodes a query value. Caller frees. */
char *kube_escape(const char *s);

/* base64 (standard alphabet). Caller frees. */
char *b64_encode(const void *data, size_t len);
char *b64_decode(const char *s, size_t *len);

/* Copies src into dst (which must not exist yet) honouring .nniignore files, within NNI's
 * limits (2,000 files and directories, 300 MB), without the file leave_out (the
 * experiment's config; NULL for none): a copy to dst.tmp-<pid>, then rename; an
 * existing dst is kept. */
int kube_copy_code(const char *src, const char *dst, const char *leave_out, struct errbuf *e);

/* `nnictl create` checks kubeconfig, API server, credentials, CRD and storage before
 * anything is stored. 0 also for platforms that are not of the Kubernetes family. */
int kube_preflight(const char *platform, const cJSON *config, struct errbuf *e);

#endif
