/* base64.c: standard base64 (RFC 4648 §4, with padding), for the WebSocket handshake,
 * the dispatcher's --exp_params, kubeconfig data and Kubernetes Secrets. */
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t b64_encode_to(const void *data, size_t len, char *out)
{
    const unsigned char *s = data;
    char *o = out;
    size_t i;
    for (i = 0; i + 2 < len; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
        *o++ = b64chars[v >> 18 & 63]; *o++ = b64chars[v >> 12 & 63];
        *o++ = b64chars[v >> 6 & 63]; *o++ = b64chars[v & 63];
    }
    if (i < len) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < len ? (unsigned)s[i + 1] << 8 : 0);
        *o++ = b64chars[v >> 18 & 63];
        *o++ = b64chars[v >> 12 & 63];
        *o++ = i + 1 < len ? b64chars[v >> 6 & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return (size_t)(o - out);
}

char *b64_encode(const void *data, size_t len)
{
    char *out = xmalloc(B64_ENCODED_SIZE(len));
    b64_encode_to(data, len, out);
    return out;
}

char *b64_decode(const char *s, size_t *len)
{
    size_t n = strlen(s);
    unsigned char *out = xmalloc(n / 4 * 3 + 4);
    size_t o = 0;
    unsigned v = 0;
    int bits = 0, pad = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        const char *p = strchr(b64chars, c); /* c is not NUL: i < strlen(s) */
        if (!p || pad) {
            free(out);
            return NULL;
        }
        v = v << 6 | (unsigned)(p - b64chars);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(v >> bits & 0xff);
        }
    }
    out[o] = '\0';
    *len = o;
    return (char *)out;
}
