/* text.c: UTF-8. */

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
