/* minijson.c: see minijson.h. A recursive-descent check of RFC 8259 syntax, bounded in
 * depth, that remembers where one member's value lies. */
#include "common/minijson.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

#define MAX_DEPTH 200

struct cur {
    const char *p, *end;
};

static void ws(struct cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int lit(struct cur *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return -1;
    c->p += n;
    return 0;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int ch = (unsigned char)p[i], d;
        if (ch >= '0' && ch <= '9')
            d = ch - '0';
        else if (ch >= 'a' && ch <= 'f')
            d = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F')
            d = ch - 'A' + 10;
        else
            return -1;
        v = v << 4 | (unsigned)d;
    }
    *out = v;
    return 0;
}

/* The one-letter escapes: \" \\ \/ \b \f \n \r \t. */
static int simple_escape(char ch)
{
    switch (ch) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': return 1;
    default: return 0;
    }
}

/* The first quote, backslash or control byte in [p, end), or end: eight bytes at a time
 * while none of them is one (the tests of "Bit Twiddling Hacks": a zero byte, a byte
 * less than n). */
static const char *next_special(const char *p, const char *end)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    while (end - p >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
        if ((((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x)) & highs)
            break;
        p += 8;
    }
    while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
        p++;
    return p;
}

/* The escape after a backslash at p[0..end): its length (2, or 6 for \uXXXX), or -1
 * when it is not one JSON has. */
static int escape_len(const char *p, const char *end)
{
    unsigned u;
    if (end - p < 2)
        return -1;
    if (p[1] == 'u')
        return end - p >= 6 && hex4(p + 2, &u) == 0 ? 6 : -1;
    return simple_escape(p[1]) ? 2 : -1;
}

static int skip_string(struct cur *c)
{
    /* local pointers: a char read through c->p could alias c->p itself, which would
     * keep the compiler from holding it in a register */
    const char *p = c->p, *end = c->end;
    if (p >= end || *p != '"')
        return -1;
    for (p++;;) {
        p = next_special(p, end);
        if (p >= end || (unsigned char)*p < 0x20)
            return -1;
        if (*p == '"') {
            c->p = p + 1;
            return 0;
        }
        int n = escape_len(p, end);
        if (n < 0)
            return -1;
        p += n;
    }
}

static int digits(struct cur *c)
{
    const char *s = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
        c->p++;
    return c->p > s ? 0 : -1;
}

static int skip_number(struct cur *c)
{
    if (c->p < c->end && *c->p == '-')
        c->p++;
    if (lit(c, "Infinity") == 0)
        return 0;
    if (c->p < c->end && *c->p == '0')
        c->p++;
    else if (digits(c) < 0)
        return -1;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (digits(c) < 0)
            return -1;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
            c->p++;
        if (digits(c) < 0)
            return -1;
    }
    return 0;
}

static int skip_value(struct cur *c, int depth);

/* The members (or elements) after '{' (or '['), up to the closing bracket. */
static int skip_container(struct cur *c, int depth, char close)
{
    if (depth > MAX_DEPTH)
        return -1;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == close) {
        c->p++;
        return 0;
    }
    for (;;) {
        if (close == '}') {
            if (skip_string(c) < 0)
                return -1;
            ws(c);
            if (c->p >= c->end || *c->p != ':')
                return -1;
            c->p++;
            ws(c);
        }
        if (skip_value(c, depth + 1) < 0)
            return -1;
        ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            ws(c);
            continue;
        }
        if (c->p < c->end && *c->p == close) {
            c->p++;
            return 0;
        }
        return -1;
    }
}

static int skip_value(struct cur *c, int depth)
{
    if (c->p >= c->end)
        return -1;
    switch (*c->p) {
    case '{': return skip_container(c, depth, '}');
    case '[': return skip_container(c, depth, ']');
    case '"': return skip_string(c);
    case 't': return lit(c, "true");
    case 'f': return lit(c, "false");
    case 'n': return lit(c, "null");
    case 'N': return lit(c, "NaN");
    case 'I': return lit(c, "Infinity");
    default: return skip_number(c);
    }
}

/* Whether the string literal k[0..klen) (with its quotes, checked by skip_string) holds
 * key: compared in place unless it has escapes. */
static int key_is(const char *k, size_t klen, const char *key)
{
    size_t n = strlen(key);
    if (!memchr(k + 1, '\\', klen - 2))
        return klen - 2 == n && memcmp(k + 1, key, n) == 0;
    size_t dl;
    char *dk = mj_string(k, klen, &dl);
    int same = dk && dl == n && memcmp(dk, key, n) == 0;
    free(dk);
    return same;
}

int mj_members(const char *s, size_t n, const char *const *keys, int nkeys, const char **v, size_t *vlen)
{
    struct cur c = {s, s + n};
    int found = 0;
    for (int i = 0; i < nkeys; i++) {
        v[i] = NULL;
        vlen[i] = 0;
    }
    ws(&c);
    if (c.p >= c.end || *c.p != '{')
        return -1;
    c.p++;
    ws(&c);
    if (c.p < c.end && *c.p == '}') {
        c.p++;
    } else {
        for (;;) {
            const char *k = c.p;
            if (skip_string(&c) < 0)
                return -1;
            size_t klen = (size_t)(c.p - k);
            ws(&c);
            if (c.p >= c.end || *c.p != ':')
                return -1;
            c.p++;
            ws(&c);
            const char *val = c.p;
            if (skip_value(&c, 1) < 0)
                return -1;
            for (int i = 0; found < nkeys && i < nkeys; i++) {
                if (!v[i] && key_is(k, klen, keys[i])) { /* the first one counts */
                    v[i] = val;
                    vlen[i] = (size_t)(c.p - val);
                    found++;
                    break;
                }
            }
            ws(&c);
            if (c.p < c.end && *c.p == ',') {
                c.p++;
                ws(&c);
                continue;
            }
            if (c.p < c.end && *c.p == '}') {
                c.p++;
                break;
            }
            return -1;
        }
    }
    ws(&c);
    return c.p == c.end ? found : -1;
}

int mj_member(const char *s, size_t n, const char *key, const char **v, size_t *vlen)
{
    const char *val;
    size_t len;
    int rc = mj_members(s, n, &key, 1, &val, &len);
    if (rc == 1) {
        *v = val;
        *vlen = len;
    }
    return rc;
}

/* Writes u as UTF-8 at out; returns the bytes written (1..4). */
static size_t put_utf8(char *out, unsigned u)
{
    if (u < 0x80) {
        out[0] = (char)u;
        return 1;
    }
    if (u < 0x800) {
        out[0] = (char)(0xc0 | u >> 6);
        out[1] = (char)(0x80 | (u & 0x3f));
        return 2;
    }
    if (u < 0x10000) {
        out[0] = (char)(0xe0 | u >> 12);
        out[1] = (char)(0x80 | (u >> 6 & 0x3f));
        out[2] = (char)(0x80 | (u & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | u >> 18);
    out[1] = (char)(0x80 | (u >> 12 & 0x3f));
    out[2] = (char)(0x80 | (u >> 6 & 0x3f));
    out[3] = (char)(0x80 | (u & 0x3f));
    return 4;
}

/* The one-letter escape's character (skip_string checked it is one). */
static char unescaped(char ch)
{
    switch (ch) {
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return ch; /* " \ / */
    }
}

char *mj_string(const char *v, size_t n, size_t *len)
{
    if (n < 2 || v[0] != '"')
        return NULL;
    /* checked and decoded in one pass, into one buffer: no escape decodes to more bytes
     * than it is written with (\uXXXX: at most 3, a surrogate pair's 12: 4), and the
     * quotes make room for the NUL */
    char *out = xmalloc(n), *o = out;
    const char *p = v + 1, *end = v + n, *close = end - 1;
    for (;;) {
        const char *q = next_special(p, end);
        memcpy(o, p, (size_t)(q - p));
        o += q - p;
        if (q >= end || (unsigned char)*q < 0x20)
            break; /* no closing quote, or a control byte */
        if (*q == '"') {
            if (q != close)
                break; /* the literal ends before the text does */
            *o = '\0';
            *len = (size_t)(o - out);
            return out;
        }
        int el = escape_len(q, end);
        if (el < 0)
            break;
        if (el == 2) {
            *o++ = unescaped(q[1]);
            p = q + 2;
            continue;
        }
        unsigned u = 0, lo = 0;
        hex4(q + 2, &u);
        p = q + 6;
        if (u >= 0xd800 && u < 0xdc00 && close - p >= 6 && p[0] == '\\' && p[1] == 'u' && hex4(p + 2, &lo) == 0 &&
            lo >= 0xdc00 && lo < 0xe000) {
            u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
            p += 6;
        } else if (u >= 0xd800 && u < 0xe000) {
            u = 0xfffd; /* an unpaired surrogate */
        }
        if (u == 0)
            break;
        o += put_utf8(o, u);
    }
    free(out);
    return NULL;
}

void json_put_string(struct strbuf *sb, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    sb_add(sb, "\"", 1);
    const unsigned char *run = s;
    while (*s) {
        unsigned char c = *s;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            s++;
            continue;
        }
        int n = c >= 0x80 ? utf8_len(s, SIZE_MAX) : 1;
        if (c >= 0x80 && n > 0) {
            s += n; /* a valid multi-byte character goes out as it is */
            continue;
        }
        sb_add(sb, (const char *)run, (size_t)(s - run));
        char esc[8];
        switch (c) {
        case '"': sb_add(sb, "\\\"", 2); break;
        case '\\': sb_add(sb, "\\\\", 2); break;
        case '\n': sb_add(sb, "\\n", 2); break;
        case '\r': sb_add(sb, "\\r", 2); break;
        case '\t': sb_add(sb, "\\t", 2); break;
        case '\b': sb_add(sb, "\\b", 2); break;
        case '\f': sb_add(sb, "\\f", 2); break;
        default:
            if (c < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", c);
                sb_add(sb, esc, 6);
            } else {
                sb_add(sb, "\xEF\xBF\xBD", 3); /* U+FFFD for a byte that is not UTF-8 */
            }
        }
        s++;
        run = s;
    }
    sb_add(sb, (const char *)run, (size_t)(s - run));
    sb_add(sb, "\"", 1);
}

char *json_error_body(const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "{\"error\":");
    json_put_string(&sb, msg);
    sb_puts(&sb, "}");
    return sb_detach(&sb);
}
