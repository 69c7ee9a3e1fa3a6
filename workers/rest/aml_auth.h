/* aml_auth.h: Azure access tokens for the aml platform (workers/rest/aml.c), as Azure's
 * EnvironmentCredential and AzureCliCredential get them:
 *   - a service principal with a secret: AZURE_TENANT_ID, AZURE_CLIENT_ID,
 *     AZURE_CLIENT_SECRET; the OAuth2 client-credentials flow against
 *     {authorityHost}/{tenant}/oauth2/v2.0/token, scope {resource}/.default;
 *   - a service principal with a certificate: AZURE_CLIENT_CERTIFICATE_PATH (a PEM with
 *     the private key and the certificate) instead of the secret; the same flow with a
 *     client assertion (a JWT signed RS256, x5t the certificate's SHA-1 thumbprint);
 *   - else the Azure CLI's login: `az account get-access-token --resource {resource}`.
 * A token is fetched again before it expires. The secret and the key stay in memory:
 * no message of this module holds them. */
#ifndef TRIALQ_AML_AUTH_H
#define TRIALQ_AML_AUTH_H

#include <stdint.h>

#include "common/common.h"
#include "workers/rest_client.h"

enum aml_auth_kind { AML_AUTH_SECRET, AML_AUTH_CERT, AML_AUTH_CLI };

struct aml_auth {
    enum aml_auth_kind kind;
    char *authority; /* without the final '/' */
    char *resource;  /* the management endpoint, with the final '/' */
    char *tenant, *client_id, *secret, *cert_path;
    void *key;       /* EVP_PKEY of the certificate's private key */
    char *x5t;       /* base64url SHA-1 thumbprint of the certificate (DER) */
    char *token;     /* the current access token, or NULL */
    int64_t expires_ms, refresh_ms; /* wall clock: when it expires, when to fetch a new one */
    int64_t refused_until;          /* mono ms: a refusal is not asked again before this */
    char refused_why[1024];
    struct rest_client rest;        /* the token endpoint */
};

/* Picks the credential from the environment (above) and loads a certificate. 0, or -1
 * with e (a certificate that cannot be read, a partial service principal). */
int aml_auth_init(struct aml_auth *a, const char *authority, const char *management, long timeout_ms,
                  const char *ca_bundle, struct errbuf *e);
/* Which credential is in use, for logs ("service principal <id> (secret)", ...). */
const char *aml_auth_what(const struct aml_auth *a, char *buf, size_t len);
/* A valid access token (owned by a): the current one unless it is due for refresh or
 * force. NULL with e; *fatal = 1 when it was refused (bad credentials: e says which and
 * how to fix it; asked again only after 10 s, the same error meanwhile), 0 when no
 * answer came (try again later). */
const char *aml_auth_token(struct aml_auth *a, int force, int *fatal, struct errbuf *e);
void aml_auth_free(struct aml_auth *a);

/* Pure parts, for unit tests. */
/* base64url without padding (new string) */
char *aml_b64url(const void *data, size_t len);
/* When to refresh a token of lifetime_s obtained at now_ms: 5 minutes before it
 * expires, or at two thirds of a shorter lifetime. */
int64_t aml_refresh_at(int64_t now_ms, long long lifetime_s);
/* The message of a refusal of the token endpoint (status, body: the identity platform's
 * JSON with error, error_description, error_codes), naming what to fix; into e. */
int aml_token_refusal(const struct aml_auth *a, long status, const char *body, struct errbuf *e);
/* The access token and its expiry (epoch seconds) of `az account get-access-token`'s
 * JSON output (expires_on, else expiresOn as local time). 0, or -1 with e. */
int aml_parse_cli_token(const char *json, char **token, long long *expires_on, struct errbuf *e);

#endif
