/* acs_sign.c: Alibaba Cloud's request signature V3 (ACS3-HMAC-SHA256), written from
 * Alibaba's "Request syntax and signature method V3" (see acs_sign.h), on OpenSSL's
 * libcrypto for SHA-256 and HMAC-SHA256. */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/acs_sign.h"

static const char hexdig[] = "0123456789abcdef";

static void hex_of(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdig[d[i] >> 4];
        out[2 * i + 1] = hexdig[d[i] & 15];
    }
    out[2 * n] = '\0';
}

void acs_sha256_hex(const void *data, size_t n, char out[ACS_HEX_SHA256])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(n ? data : "", n, md, &len, EVP_sha256(), NULL) || len != 32)
        abort(); /* SHA-256 of memory we hold cannot fail but for a broken libcrypto */
    hex_of(md, len, out);
}

int acs_hmac_sha256_hex(const char *key, const void *msg, size_t n, char out[ACS_HEX_SHA256])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!HMAC(EVP_sha256(), key, (int)strlen(key), n ? msg : (const void *)"", n, md, &len) || len != 32) {
        out[0] = '\0';
        return -1;
    }
    hex_of(md, len, out);
    return 0;
}

void acs_date(time_t t, char out[ACS_DATE_SIZE])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    if (strftime(out, ACS_DATE_SIZE, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        out[0] = '\0'; /* a year beyond 9999 */
}

static int unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

void acs_percent_encode(struct strbuf *sb, const char *s, size_t n)
{
    static const char up[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (unreserved(c)) {
            sb_add(sb, (const char *)&c, 1);
        } else {
            char esc[3] = {'%', up[c >> 4], up[c & 15]};
            sb_add(sb, esc, 3);
        }
    }
}

char *acs_canonical_uri(const char *path)
{
    struct strbuf sb;
    sb_init(&sb);
    const char *p = path;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        acs_percent_encode(&sb, p, n);
        if (!slash)
            break;
        sb_add(&sb, "/", 1);
        p = slash + 1;
    }
    return sb_detach(&sb);
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

static int kv_cmp(const void *a, const void *b)
{
    const struct acs_kv *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : strcmp(or_empty(x->value), or_empty(y->value));
}

char *acs_canonical_query(const struct acs_kv *q, size_t n)
{
    struct acs_kv *sorted = xcalloc(n ? n : 1, sizeof *sorted);
    if (n)
        memcpy(sorted, q, n * sizeof *q);
    qsort(sorted, n, sizeof *sorted, kv_cmp);
    struct strbuf sb;
    sb_init(&sb);
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_add(&sb, "&", 1);
        acs_percent_encode(&sb, sorted[i].name, strlen(sorted[i].name));
        sb_add(&sb, "=", 1);
        acs_percent_encode(&sb, or_empty(sorted[i].value), strlen(or_empty(sorted[i].value)));
    }
    free(sorted);
    return sb_detach(&sb);
}

/* A header value as it may be sent: no control characters but tabs (no CR/LF: nothing
 * can be smuggled into the request), not empty nor only blanks. */
static int header_value_ok(const char *v)
{
    int seen = 0;
    if (!v)
        return 0;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
            return 0;
        seen |= *p != ' ' && *p != '\t';
    }
    return seen;
}

static int is_acs_date(const char *d)
{
    static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";
    if (strlen(d) != sizeof pat - 1)
        return 0;
    for (size_t i = 0; pat[i]; i++)
        if (pat[i] == 'd' ? !(d[i] >= '0' && d[i] <= '9') : d[i] != pat[i])
            return 0;
    return 1;
}

static int key_id_ok(const char *id)
{
    if (!id || !*id)
        return 0;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f || *p == ',' || *p == ';' || *p == '=')
            return 0;
    return 1;
}

/* trims spaces and tabs at both ends (the value has no other control characters) */
static char *trimmed(const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strlen(v);
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    return xstrndup(v, n);
}

static int hdr_cmp(const void *a, const void *b)
{
    return strcmp(((const struct acs_kv *)a)->name, ((const struct acs_kv *)b)->name);
}

void acs_signed_free(struct acs_signed *s)
{
    if (!s)
        return;
    free(s->target);
    free(s->canonical_request);
    for (size_t i = 0; i < s->nheaders; i++)
        free((char *)s->headers[i].value); /* names are literals */
    memset(s, 0, sizeof *s);
}

const char *acs_signed_header(const struct acs_signed *s, const char *name)
{
    for (size_t i = 0; i < s->nheaders; i++)
        if (strcmp(s->headers[i].name, name) == 0)
            return s->headers[i].value;
    return NULL;
}

/* What acs_sign refuses to sign, with the reason: 0 or -1. */
static int request_ok(const struct acs_request *req, const char *key_id, const char *key_secret, struct errbuf *e)
{
    if (!req->method || !*req->method || strspn(req->method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(req->method))
        return errf(e, "request signature: the HTTP method must be upper-case letters");
    if (!req->path || req->path[0] != '/')
        return errf(e, "request signature: the resource path must begin with '/'");
    if (!header_value_ok(req->host))
        return errf(e, "request signature: the host is empty or has control characters");
    if (!header_value_ok(req->action) || !header_value_ok(req->version))
        return errf(e, "request signature: the action (x-acs-action) and the API version (x-acs-version) "
                       "must be given, without control characters");
    if (req->content_type && !header_value_ok(req->content_type))
        return errf(e, "request signature: the content type is empty or has control characters");
    if (req->security_token && !header_value_ok(req->security_token))
        return errf(e, "request signature: the security token is empty or has control characters");
    if (req->date && !is_acs_date(req->date))
        return errf(e, "request signature: x-acs-date must be UTC as yyyy-MM-ddTHH:mm:ssZ");
    if (req->nonce && !header_value_ok(req->nonce))
        return errf(e, "request signature: the nonce is empty or has control characters");
    for (size_t i = 0; i < req->nquery; i++)
        if (!req->query[i].name || !*req->query[i].name)
            return errf(e, "request signature: a query parameter has no name");
    if (!key_id_ok(key_id))
        return errf(e, "request signature: the AccessKey ID is empty or has spaces, control characters, "
                       "',', ';' or '='");
    if (!key_secret || !*key_secret)
        return errf(e, "request signature: the AccessKey secret is empty");
    return 0;
}

int acs_sign(const struct acs_request *req, const char *key_id, const char *key_secret,
             struct acs_signed *out, struct errbuf *e)
{
    if (request_ok(req, key_id, key_secret, e) < 0)
        return -1;
    char date[ACS_DATE_SIZE], nonce[33], body_hash[ACS_HEX_SHA256];
    if (req->date) {
        snprintf(date, sizeof date, "%s", req->date);
    } else {
        acs_date(time(NULL), date);
    }
    if (!req->nonce) {
        unsigned char rnd[16];
        random_bytes(rnd, sizeof rnd);
        hex_of(rnd, sizeof rnd, nonce);
    }
    acs_sha256_hex(req->body, req->body ? req->body_len : 0, body_hash);

    /* the signed headers: host, content-type and every x-acs-* we send */
    struct acs_kv h[ACS_MAX_HEADERS];
    size_t nh = 0;
    h[nh++] = (struct acs_kv){"host", trimmed(req->host)};
    h[nh++] = (struct acs_kv){"x-acs-action", trimmed(req->action)};
    h[nh++] = (struct acs_kv){"x-acs-version", trimmed(req->version)};
    h[nh++] = (struct acs_kv){"x-acs-date", xstrdup(date)};
    h[nh++] = (struct acs_kv){"x-acs-signature-nonce", req->nonce ? trimmed(req->nonce) : xstrdup(nonce)};
    h[nh++] = (struct acs_kv){"x-acs-content-sha256", xstrdup(body_hash)};
    if (req->content_type)
        h[nh++] = (struct acs_kv){"content-type", trimmed(req->content_type)};
    if (req->security_token)
        h[nh++] = (struct acs_kv){"x-acs-security-token", trimmed(req->security_token)};
    qsort(h, nh, sizeof *h, hdr_cmp);

    char *uri = acs_canonical_uri(req->path);
    char *query = acs_canonical_query(req->query, req->nquery);
    struct strbuf cr, signed_names;
    sb_init(&cr);
    sb_init(&signed_names);
    sb_printf(&cr, "%s\n%s\n%s\n", req->method, uri, query);
    for (size_t i = 0; i < nh; i++) {
        sb_printf(&cr, "%s:%s\n", h[i].name, h[i].value);
        sb_printf(&signed_names, "%s%s", i ? ";" : "", h[i].name);
    }
    sb_printf(&cr, "\n%s\n%s", signed_names.buf, body_hash);

    memset(out, 0, sizeof *out);
    acs_sha256_hex(cr.buf, cr.len, out->string_to_sign_hash);
    char *sts = xasprintf("%s\n%s", ACS_ALGORITHM, out->string_to_sign_hash);
    char sig[ACS_HEX_SHA256];
    int rc = acs_hmac_sha256_hex(key_secret, sts, strlen(sts), sig);
    free(sts);
    if (rc < 0) {
        for (size_t i = 0; i < nh; i++)
            free((char *)h[i].value);
        free(uri);
        free(query);
        sb_free(&cr);
        sb_free(&signed_names);
        return errf(e, "request signature: HMAC-SHA256 failed in libcrypto");
    }

    out->target = *query ? xasprintf("%s?%s", uri, query) : xstrdup(uri);
    out->canonical_request = sb_detach(&cr);
    memcpy(out->headers, h, nh * sizeof *h);
    out->nheaders = nh;
    out->headers[out->nheaders++] = (struct acs_kv){
        "authorization", xasprintf("%s Credential=%s,SignedHeaders=%s,Signature=%s", ACS_ALGORITHM, key_id,
                                   signed_names.buf, sig)};
    free(uri);
    free(query);
    sb_free(&signed_names);
    return 0;
}
