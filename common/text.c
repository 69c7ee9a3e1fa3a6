/* text.c: UTF-8, and snippets of untrusted text made safe for one log line. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/common.h"

int utf8_len(const unsigned char *s, size_t avail)
{
    if (avail == 0)
        return 0;
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int n;
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80; /* not overlong */
        hi = c == 0xED ? 0x9F : 0xBF; /* not a surrogate */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF; /* not beyond U+10FFFF */
    } else {
        return 0;
    }
    if (avail < 2 || s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if ((size_t)i >= avail || (s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* The code point of a valid UTF-8 character of n bytes at s. */
static unsigned utf8_code_point(const unsigned char *s, int n)
{
    if (n == 2)
        return (unsigned)(s[0] & 0x1F) << 6 | (unsigned)(s[1] & 0x3F);
    if (n == 3)
        return (unsigned)(s[0] & 0x0F) << 12 | (unsigned)(s[1] & 0x3F) << 6 | (unsigned)(s[2] & 0x3F);
    return (unsigned)(s[0] & 0x07) << 18 | (unsigned)(s[1] & 0x3F) << 12 | (unsigned)(s[2] & 0x3F) << 6 |
           (unsigned)(s[3] & 0x3F);
}

void sb_add_snippet(struct strbuf *sb, const char *text, size_t n, size_t max)
{
    const unsigned char *s = (const unsigned char *)text;
    if (!s)
        n = 0;
    size_t shown = n < max ? n : max, i = 0;
    char esc[8];
    while (i < shown) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x7F && c != '\\') {
            size_t run = i;
            while (i < shown && s[i] >= 0x20 && s[i] < 0x7F && s[i] != '\\')
                i++;
            sb_add(sb, (const char *)s + run, i - run);
            continue;
        }
        int len = c >= 0x80 ? utf8_len(s + i, n - i) : 1;
        if (len > 1 && i + (size_t)len > shown)
            break; /* the cut would split this character: it goes with the rest */
        if (len > 1) {
            unsigned cp = utf8_code_point(s + i, len);
            if (cp <= 0x9F || cp == 0x2028 || cp == 0x2029) {
                snprintf(esc, sizeof esc, "\\u%04x", cp);
                sb_puts(sb, esc);
            } else {
                sb_add(sb, (const char *)s + i, (size_t)len);
            }
            i += (size_t)len;
            continue;
        }
        switch (c) {
        case '\\': sb_add(sb, "\\\\", 2); break;
        case '\n': sb_add(sb, "\\n", 2); break;
        case '\r': sb_add(sb, "\\r", 2); break;
        case '\t': sb_add(sb, "\\t", 2); break;
        default:
            /* other controls, DEL, a byte that is not UTF-8 */
            snprintf(esc, sizeof esc, "\\x%02x", c);
            sb_add(sb, esc, 4);
        }
        i++;
    }
    if (i < n)
        sb_add(sb, "...", 3);
    else if (!sb->buf)
        sb_add(sb, "", 0); /* an empty snippet is still a string */
}

const char *snippet(char out[SNIPPET_SIZE], const char *s, size_t n)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_add_snippet(&sb, s, n, SNIPPET_MAX);
    /* 4 bytes per input byte at most (\xNN; \uNNNN stands for 2 or 3), then "..." */
    memcpy(out, sb.buf, sb.len + 1);
    sb_free(&sb);
    return out;
}
