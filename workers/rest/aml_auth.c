/* aml_auth.c: Azure access tokens (workers/rest/aml_auth.h). */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/json.h"
#include "workers/rest/aml_auth.h"

#define REFRESH_EARLY_S 300 /* Azure's SDKs refresh 5 minutes before expiry */
#define CLI_TIMEOUT_MS 30000
#define REFUSED_RETRY_MS 10000 /* refused credentials are asked again after this long */

char *aml_b64url(const void *data, size_t len)
{
    char *s = b64_encode(data, len);
    size_t n = 0;
    for (char *p = s; *p && *p != '='; p++, n++)
        *p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
    s[n] = '\0';
    return s;
}

int64_t aml_refresh_at(int64_t now_ms, long long lifetime_s)
{
    if (lifetime_s <= 0)
        return now_ms;
    int64_t life = (int64_t)lifetime_s * 1000;
    int64_t early = life / 3 < REFRESH_EARLY_S * 1000 ? life / 3 : REFRESH_EARLY_S * 1000;
    return now_ms + life - early;
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

static char *trim_slash(const char *s)
{
    size_t n = strlen(s);
    while (n && s[n - 1] == '/')
        n--;
    return xasprintf("%.*s", (int)n, s);
}

/* The private key and certificate of a PEM: a->key, a->x5t. */
static int load_cert(struct aml_auth *a, struct errbuf *e)
{
    FILE *f = fopen(a->cert_path, "r");
    if (!f)
        return errf(e, "AZURE_CLIENT_CERTIFICATE_PATH: cannot read %s", a->cert_path);
    EVP_PKEY *key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    rewind(f);
    X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    if (!key || !x) {
        EVP_PKEY_free(key);
        X509_free(x);
        return errf(e, "AZURE_CLIENT_CERTIFICATE_PATH: %s must hold the unencrypted private key and the "
                    "certificate (PEM)%s", a->cert_path, key ? "; no certificate found" : "; no private key found");
    }
    if (X509_check_private_key(x, key) != 1) {
        EVP_PKEY_free(key);
        X509_free(x);
        return errf(e, "AZURE_CLIENT_CERTIFICATE_PATH: the private key in %s is not the certificate's", a->cert_path);
    }
    if (EVP_PKEY_base_id(key) != EVP_PKEY_RSA) {
        EVP_PKEY_free(key);
        X509_free(x);
        return errf(e, "AZURE_CLIENT_CERTIFICATE_PATH: the key in %s is not an RSA key (RS256 needs one)",
                    a->cert_path);
    }
    unsigned char *der = NULL;
    int n = i2d_X509(x, &der);
    X509_free(x);
    if (n <= 0) {
        EVP_PKEY_free(key);
        return errf(e, "AZURE_CLIENT_CERTIFICATE_PATH: cannot encode the certificate of %s", a->cert_path);
    }
    unsigned char sha[SHA_DIGEST_LENGTH];
    SHA1(der, (size_t)n, sha);
    OPENSSL_free(der);
    a->x5t = aml_b64url(sha, sizeof sha);
    a->key = key;
    return 0;
}

int aml_auth_init(struct aml_auth *a, const char *authority, const char *management, long timeout_ms,
                  const char *ca_bundle, struct errbuf *e)
{
    memset(a, 0, sizeof *a);
    a->authority = trim_slash(authority);
    char *m = trim_slash(management);
    a->resource = xasprintf("%s/", m);
    free(m);
    a->rest.timeout_ms = timeout_ms;
    a->rest.ca_bundle = ca_bundle;
    const char *tenant = env_nonempty("AZURE_TENANT_ID"), *client = env_nonempty("AZURE_CLIENT_ID");
    const char *secret = env_nonempty("AZURE_CLIENT_SECRET"), *cert = env_nonempty("AZURE_CLIENT_CERTIFICATE_PATH");
    if (!secret && !cert) {
        a->kind = AML_AUTH_CLI;
        return 0;
    }
    if (!tenant || !client)
        return errf(e, "AZURE_%s is set but AZURE_TENANT_ID and AZURE_CLIENT_ID are not both set: a service "
                    "principal needs all three (or unset it to use the Azure CLI's login)",
                    secret ? "CLIENT_SECRET" : "CLIENT_CERTIFICATE_PATH");
    a->tenant = xstrdup(tenant);
    a->client_id = xstrdup(client);
    a->rest.curl = curl_easy_init();
    if (!a->rest.curl)
        return errf(e, "cannot initialise libcurl");
    if (secret) {
        a->kind = AML_AUTH_SECRET;
        a->secret = xstrdup(secret);
        return 0;
    }
    a->kind = AML_AUTH_CERT;
    a->cert_path = xstrdup(cert);
    return load_cert(a, e);
}

const char *aml_auth_what(const struct aml_auth *a, char *buf, size_t len)
{
    if (a->kind == AML_AUTH_CLI)
        snprintf(buf, len, "the Azure CLI's login");
    else
        snprintf(buf, len, "service principal %s of tenant %s (%s)", a->client_id, a->tenant,
                 a->kind == AML_AUTH_SECRET ? "client secret" : "certificate");
    return buf;
}

void aml_auth_free(struct aml_auth *a)
{
    free(a->authority);
    free(a->resource);
    free(a->tenant);
    free(a->client_id);
    if (a->secret) {
        OPENSSL_cleanse(a->secret, strlen(a->secret));
        free(a->secret);
    }
    free(a->cert_path);
    EVP_PKEY_free(a->key);
    free(a->x5t);
    free(a->token);
    if (a->rest.curl)
        curl_easy_cleanup(a->rest.curl);
    memset(a, 0, sizeof *a);
}

/* ---------------- the client-credentials flow ---------------- */

static char *token_url(const struct aml_auth *a)
{
    return xasprintf("%s/%s/oauth2/v2.0/token", a->authority, a->tenant);
}

/* The client assertion: a JWT signed RS256 with the certificate's key. NULL with e. */
static char *client_assertion(const struct aml_auth *a, struct errbuf *e)
{
    cJSON *h = cJSON_CreateObject(), *c = cJSON_CreateObject();
    cJSON_AddStringToObject(h, "alg", "RS256");
    cJSON_AddStringToObject(h, "typ", "JWT");
    cJSON_AddStringToObject(h, "x5t", a->x5t);
    unsigned char rnd[16];
    if (RAND_bytes(rnd, sizeof rnd) != 1) {
        cJSON_Delete(h);
        cJSON_Delete(c);
        errf(e, "no random bytes for the client assertion's jti");
        return NULL;
    }
    char *jti = aml_b64url(rnd, sizeof rnd), *aud = token_url(a);
    long long now = (long long)(now_ms() / 1000);
    cJSON_AddStringToObject(c, "aud", aud);
    cJSON_AddStringToObject(c, "iss", a->client_id);
    cJSON_AddStringToObject(c, "sub", a->client_id);
    cJSON_AddStringToObject(c, "jti", jti);
    cJSON_AddNumberToObject(c, "nbf", (double)now);
    cJSON_AddNumberToObject(c, "iat", (double)now);
    cJSON_AddNumberToObject(c, "exp", (double)(now + 600));
    free(jti);
    free(aud);
    char *hs = cJSON_PrintUnformatted(h), *cs = cJSON_PrintUnformatted(c);
    cJSON_Delete(h);
    cJSON_Delete(c);
    char *h64 = aml_b64url(hs, strlen(hs)), *c64 = aml_b64url(cs, strlen(cs));
    free(hs);
    free(cs);
    char *input = xasprintf("%s.%s", h64, c64);
    free(h64);
    free(c64);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    size_t siglen = 0;
    unsigned char *sig = NULL;
    int ok = md && EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, a->key) == 1 &&
             EVP_DigestSign(md, NULL, &siglen, (const unsigned char *)input, strlen(input)) == 1;
    if (ok) {
        sig = xmalloc(siglen);
        ok = EVP_DigestSign(md, sig, &siglen, (const unsigned char *)input, strlen(input)) == 1;
    }
    EVP_MD_CTX_free(md);
    char *jwt = NULL;
    if (ok) {
        char *s64 = aml_b64url(sig, siglen);
        jwt = xasprintf("%s.%s", input, s64);
        free(s64);
    } else {
        errf(e, "cannot sign the client assertion with the key of %s", a->cert_path);
    }
    free(sig);
    free(input);
    return jwt;
}

static void form_add(struct strbuf *sb, CURL *c, const char *key, const char *value)
{
    char *v = curl_easy_escape(c, value, 0);
    sb_printf(sb, "%s%s=%s", sb->len ? "&" : "", key, v ? v : "");
    curl_free(v);
}

/* code names: the identity platform's AADSTS codes a user can act on */
int aml_token_refusal(const struct aml_auth *a, long status, const char *body, struct errbuf *e)
{
    cJSON *j = cJSON_Parse(body ? body : "");
    const cJSON *codes = cJSON_GetObjectItemCaseSensitive(j, "error_codes");
    const cJSON *desc = cJSON_GetObjectItemCaseSensitive(j, "error_description");
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
    long code = cJSON_IsArray(codes) && cJSON_IsNumber(codes->child) ? (long)codes->child->valuedouble : 0;
    char d[400];
    snprintf(d, sizeof d, "%.399s", cJSON_IsString(desc) ? desc->valuestring : body && body[0] ? body : "(empty)");
    d[strcspn(d, "\r\n")] = '\0';
    /* the secret is never sent back, but a message must not carry it whatever the service says */
    if (a->secret && a->secret[0])
        for (char *p = strstr(d, a->secret); p; p = strstr(p, a->secret))
            memset(p, '*', strlen(a->secret));
    const char *hint;
    switch (code) {
    case 90002:
        hint = "no such tenant: check AZURE_TENANT_ID (the directory's id) and authorityHost";
        break;
    case 700016:
        hint = "no such application in the tenant: check AZURE_CLIENT_ID (the app registration's client id) "
               "and AZURE_TENANT_ID";
        break;
    case 7000215:
        hint = "wrong client secret: AZURE_CLIENT_SECRET must be the secret's value (not its id), and not expired";
        break;
    case 7000222:
        hint = "the client secret has expired: create a new one and set AZURE_CLIENT_SECRET";
        break;
    case 700027:
        hint = "the certificate of AZURE_CLIENT_CERTIFICATE_PATH is not accepted: upload it to the app "
               "registration (Certificates & secrets) or check AZURE_CLIENT_ID";
        break;
    case 700024:
        hint = "the client assertion is outside its valid time: check this host's clock";
        break;
    case 1002012:
    case 500011:
        hint = "the token's resource is refused: check managementEndpoint";
        break;
    default:
        hint = "check AZURE_TENANT_ID, AZURE_CLIENT_ID and the credential";
    }
    int rc = errf(e, "aml: %s refused a token for %s of tenant %s: HTTP %ld %s%s%s (%s)", a->authority,
                  a->client_id, a->tenant, status, cJSON_IsString(err) ? err->valuestring : "",
                  cJSON_IsString(err) ? ": " : "", d, hint);
    cJSON_Delete(j);
    return rc;
}

static int fetch_sp(struct aml_auth *a, int *fatal, struct errbuf *e)
{
    struct strbuf form;
    sb_init(&form);
    form_add(&form, a->rest.curl, "grant_type", "client_credentials");
    form_add(&form, a->rest.curl, "client_id", a->client_id);
    char *scope = xasprintf("%s.default", a->resource);
    form_add(&form, a->rest.curl, "scope", scope);
    free(scope);
    if (a->kind == AML_AUTH_SECRET) {
        form_add(&form, a->rest.curl, "client_secret", a->secret);
    } else {
        char *jwt = client_assertion(a, e);
        if (!jwt) {
            sb_free(&form);
            *fatal = 1;
            return -1;
        }
        form_add(&form, a->rest.curl, "client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
        form_add(&form, a->rest.curl, "client_assertion", jwt);
        free(jwt);
    }
    char *body = sb_detach(&form);
    char *url = token_url(a);
    const char *headers[] = {"Content-Type: application/x-www-form-urlencoded", "Accept: application/json", NULL};
    long status = 0;
    char *resp = NULL;
    int64_t t0 = now_ms();
    int rc = rest_call(&a->rest, "POST", url, url, headers, body, &status, &resp, e);
    OPENSSL_cleanse(body, strlen(body));
    free(body);
    free(url);
    if (rc < 0) {
        errprefix(e, "aml: token endpoint");
        return -1;
    }
    rc = -1;
    if (status == 200) {
        cJSON *j = cJSON_Parse(resp);
        const cJSON *tok = cJSON_GetObjectItemCaseSensitive(j, "access_token");
        const cJSON *exp = cJSON_GetObjectItemCaseSensitive(j, "expires_in");
        long long life = cJSON_IsNumber(exp)                                  ? (long long)exp->valuedouble
                         : cJSON_IsString(exp) && atoll(exp->valuestring) > 0 ? atoll(exp->valuestring)
                                                                               : 0;
        if (cJSON_IsString(tok) && tok->valuestring[0] && life > 0) {
            free(a->token);
            a->token = xstrdup(tok->valuestring);
            a->expires_ms = t0 + life * 1000;
            a->refresh_ms = aml_refresh_at(t0, life);
            rc = 0;
        } else {
            errf(e, "aml: the token endpoint's answer has no access_token and expires_in");
        }
        cJSON_Delete(j);
    } else if (status >= 500 || status == 429 || status == 408) {
        errf(e, "aml: token endpoint %s: HTTP %ld (the service is busy or down)", a->authority, status);
    } else {
        *fatal = 1;
        aml_token_refusal(a, status, resp, e);
    }
    free(resp);
    return rc;
}

/* ---------------- the Azure CLI ---------------- */

int aml_parse_cli_token(const char *json, char **token, long long *expires_on, struct errbuf *e)
{
    cJSON *j = cJSON_Parse(json ? json : "");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(j, "accessToken");
    const cJSON *on = cJSON_GetObjectItemCaseSensitive(j, "expires_on");
    const cJSON *on_local = cJSON_GetObjectItemCaseSensitive(j, "expiresOn");
    long long exp = 0;
    if (cJSON_IsNumber(on)) {
        exp = (long long)on->valuedouble;
    } else if (cJSON_IsString(on) && atoll(on->valuestring) > 0) {
        exp = atoll(on->valuestring);
    } else if (cJSON_IsString(on_local)) { /* "2026-11-27 10:30:00.000000", local time */
        struct tm tm;
        memset(&tm, 0, sizeof tm);
        if (sscanf(on_local->valuestring, "%d-%d-%d %d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                   &tm.tm_min, &tm.tm_sec) == 6) {
            tm.tm_year -= 1900;
            tm.tm_mon -= 1;
            tm.tm_isdst = -1;
            exp = (long long)mktime(&tm);
        }
    }
    int rc = 0;
    if (!cJSON_IsString(tok) || !tok->valuestring[0] || exp <= 0) {
        rc = errf(e, "aml: `az account get-access-token` printed no accessToken with expires_on or expiresOn");
    } else {
        *token = xstrdup(tok->valuestring);
        *expires_on = exp;
    }
    cJSON_Delete(j);
    return rc;
}

static int fetch_cli(struct aml_auth *a, int *fatal, struct errbuf *e)
{
    char *argv[] = {"az", "account", "get-access-token", "--resource", a->resource, "--output", "json", NULL};
    char *out = NULL, *err = NULL;
    int64_t t0 = now_ms();
    int st = run_capture(argv, CLI_TIMEOUT_MS, &out, &err);
    int rc = -1;
    if (st == -1 || (st == 127 && err && strstr(err, "cannot run az"))) {
        *fatal = 1;
        errf(e, "aml: no credential: set AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET (or "
                "AZURE_CLIENT_CERTIFICATE_PATH) for a service principal, or install the Azure CLI and run `az "
                "login` (az could not be run)");
    } else if (st == -2) {
        errf(e, "aml: `az account get-access-token` did not answer within %d s", CLI_TIMEOUT_MS / 1000);
    } else if (st != 0) {
        *fatal = 1;
        char msg[400];
        snprintf(msg, sizeof msg, "%.399s", err && err[0] ? err : out ? out : "");
        for (char *p = msg; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
        errf(e, "aml: `az account get-access-token --resource %s` failed (exit %d): %s (run `az login`, or set "
                "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET)", a->resource, st, msg);
    } else {
        char *tok = NULL;
        long long exp = 0;
        if (aml_parse_cli_token(out, &tok, &exp, e) == 0) {
            free(a->token);
            a->token = tok;
            a->expires_ms = exp * 1000;
            long long life = (a->expires_ms - t0) / 1000;
            a->refresh_ms = aml_refresh_at(t0, life > 0 ? life : 0);
            rc = 0;
        } else {
            *fatal = 1;
        }
    }
    free(out);
    free(err);
    return rc;
}

const char *aml_auth_token(struct aml_auth *a, int force, int *fatal, struct errbuf *e)
{
    *fatal = 0;
    if (a->token && !force && now_ms() < a->refresh_ms)
        return a->token;
    if (a->refused_until && mono_ms() < a->refused_until) { /* not every poll of every trial */
        *fatal = 1;
        errf(e, "%s", a->refused_why);
        return NULL;
    }
    int rc = a->kind == AML_AUTH_CLI ? fetch_cli(a, fatal, e) : fetch_sp(a, fatal, e);
    if (rc < 0 && *fatal) {
        a->refused_until = mono_ms() + REFUSED_RETRY_MS;
        snprintf(a->refused_why, sizeof a->refused_why, "%s", e->msg);
    }
    if (rc == 0) {
        a->refused_until = 0;
        log_debug("aml: new access token from %s, valid for %lld s", a->kind == AML_AUTH_CLI ? "the Azure CLI"
                                                                                             : a->authority,
                 (long long)((a->expires_ms - now_ms()) / 1000));
        return a->token;
    }
    /* a refresh that failed: the old token serves while it is valid */
    if (a->token && !force && !*fatal && now_ms() < a->expires_ms - 5000) {
        log_warn("%s; the current token is used until it expires", e->msg);
        return a->token;
    }
    return NULL;
}
