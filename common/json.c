/* json.c: a cJSON tree printed with exact numbers (see json.h). */
#include "common/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/common.h"

void json_format_double(double d, char *buf, size_t size)
{
    if (!isfinite(d)) {
        snprintf(buf, size, "null");
        return;
    }
    if (d == 0) {
        snprintf(buf, size, signbit(d) ? "-0" : "0");
        return;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, d);
        if (strtod(buf, NULL) == d)
            return;
    }
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static int utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return (s[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
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
        int n = c >= 0x80 ? utf8_len(s) : 1;
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

static void put_value(struct strbuf *sb, const cJSON *j)
{
    char num[40];
    const cJSON *c;
    int first = 1;
    switch (j->type & 0xFF) {
    case cJSON_False: sb_puts(sb, "false"); break;
    case cJSON_True: sb_puts(sb, "true"); break;
    case cJSON_NULL: sb_puts(sb, "null"); break;
    case cJSON_Number:
        json_format_double(j->valuedouble, num, sizeof num);
        sb_puts(sb, num);
        break;
    case cJSON_String: json_put_string(sb, j->valuestring ? j->valuestring : ""); break;
    case cJSON_Raw: sb_puts(sb, j->valuestring ? j->valuestring : "null"); break;
    case cJSON_Array:
        sb_add(sb, "[", 1);
        for (c = j->child; c; c = c->next, first = 0) {
            if (!first)
                sb_add(sb, ",", 1);
            put_value(sb, c);
        }
        sb_add(sb, "]", 1);
        break;
    case cJSON_Object:
        sb_add(sb, "{", 1);
        for (c = j->child; c; c = c->next, first = 0) {
            if (!first)
                sb_add(sb, ",", 1);
            json_put_string(sb, c->string ? c->string : "");
            sb_add(sb, ":", 1);
            put_value(sb, c);
        }
        sb_add(sb, "}", 1);
        break;
    default: sb_puts(sb, "null"); break;
    }
}

char *json_print_exact(const cJSON *j)
{
    struct strbuf sb;
    sb_init(&sb);
    if (j)
        put_value(&sb, j);
    else
        sb_puts(&sb, "null");
    return sb_detach(&sb);
}

/* Python's float repr: the fewest digits that read back as d, in fixed notation when
 * the decimal exponent is in [-4, 16), else as d.ddde+XX. */
static void python_float_repr(double d, char *buf, size_t size)
{
    char e[40];
    int p;
    for (p = 1; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, d);
        if (strtod(e, NULL) == d)
            break;
    }
    const char *s = e;
    int neg = *s == '-';
    if (neg)
        s++;
    char digits[24];
    int n = 0;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9')
            digits[n++] = *s;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = 0;
    int x = *s == 'e' ? atoi(s + 1) : 0;
    struct strbuf sb;
    sb_init(&sb);
    if (neg)
        sb_add(&sb, "-", 1);
    if (x >= -4 && x < 16) {
        int k = x + 1; /* digits before the point */
        if (k <= 0) {
            sb_add(&sb, "0.", 2);
            for (int i = 0; i < -k; i++)
                sb_add(&sb, "0", 1);
            sb_add(&sb, digits, (size_t)n);
        } else if (k < n) {
            sb_add(&sb, digits, (size_t)k);
            sb_add(&sb, ".", 1);
            sb_add(&sb, digits + k, (size_t)(n - k));
        } else {
            sb_add(&sb, digits, (size_t)n);
            for (int i = n; i < k; i++)
                sb_add(&sb, "0", 1);
            sb_add(&sb, ".0", 2);
        }
    } else {
        sb_add(&sb, digits, 1);
        if (n > 1) {
            sb_add(&sb, ".", 1);
            sb_add(&sb, digits + 1, (size_t)(n - 1));
        }
        sb_printf(&sb, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
    }
    char *r = sb_detach(&sb);
    snprintf(buf, size, "%s", r);
    free(r);
}

static void python_number(struct strbuf *sb, double d)
{
    char num[48];
    if (isnan(d))
        snprintf(num, sizeof num, "NaN");
    else if (isinf(d))
        snprintf(num, sizeof num, d < 0 ? "-Infinity" : "Infinity");
    else if (d == 0)
        snprintf(num, sizeof num, "0");
    else {
        /* the text trialq sends for d (json_print_exact) is what Python would read:
         * without '.' or 'e' that is an int, printed as is */
        json_format_double(d, num, sizeof num);
        if (strpbrk(num, ".e"))
            python_float_repr(d, num, sizeof num);
    }
    sb_puts(sb, num);
}

/* ensure_ascii: everything outside ' '..'~' escaped, astral characters as surrogate
 * pairs, lowercase hex, as Python's json module does. */
static void python_string(struct strbuf *sb, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    char esc[16];
    sb_add(sb, "\"", 1);
    while (*s) {
        unsigned c = *s;
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            const unsigned char *run = s;
            while (*s >= 0x20 && *s < 0x7f && *s != '"' && *s != '\\')
                s++;
            sb_add(sb, (const char *)run, (size_t)(s - run));
            continue;
        }
        switch (c) {
        case '"': sb_add(sb, "\\\"", 2); s++; continue;
        case '\\': sb_add(sb, "\\\\", 2); s++; continue;
        case '\n': sb_add(sb, "\\n", 2); s++; continue;
        case '\r': sb_add(sb, "\\r", 2); s++; continue;
        case '\t': sb_add(sb, "\\t", 2); s++; continue;
        case '\b': sb_add(sb, "\\b", 2); s++; continue;
        case '\f': sb_add(sb, "\\f", 2); s++; continue;
        default: break;
        }
        unsigned cp = 0xFFFD;
        int n = c >= 0x80 ? utf8_len(s) : 1;
        if (n == 0)
            n = 1; /* not UTF-8: U+FFFD for this byte */
        else if (n == 1)
            cp = c;
        else if (n == 2)
            cp = (c & 0x1F) << 6 | (s[1] & 0x3F);
        else if (n == 3)
            cp = (c & 0x0F) << 12 | (s[1] & 0x3F) << 6 | (s[2] & 0x3F);
        else
            cp = (c & 0x07) << 18 | (s[1] & 0x3F) << 12 | (s[2] & 0x3F) << 6 | (s[3] & 0x3F);
        s += n;
        if (cp >= 0x10000) {
            cp -= 0x10000;
            snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        } else {
            snprintf(esc, sizeof esc, "\\u%04x", cp);
        }
        sb_puts(sb, esc);
    }
    sb_add(sb, "\"", 1);
}

struct keyed {
    const cJSON *item;
    int pos;
};

/* by key; equal keys (cJSON allows them) keep their order */
static int by_key(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = strcmp(x->item->string ? x->item->string : "", y->item->string ? y->item->string : "");
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static void python_newline(struct strbuf *sb, int level)
{
    sb_add(sb, "\n", 1);
    for (int i = 0; i < level; i++)
        sb_add(sb, "    ", 4);
}

static void python_value(struct strbuf *sb, const cJSON *j, int level, int sort_keys, const char *colon)
{
    switch (j->type & 0xFF) {
    case cJSON_False: sb_puts(sb, "false"); return;
    case cJSON_True: sb_puts(sb, "true"); return;
    case cJSON_Number: python_number(sb, j->valuedouble); return;
    case cJSON_String: python_string(sb, j->valuestring ? j->valuestring : ""); return;
    case cJSON_Array:
    case cJSON_Object: break;
    default: sb_puts(sb, "null"); return;
    }
    int object = cJSON_IsObject(j);
    int n = cJSON_GetArraySize(j);
    if (n == 0) {
        sb_puts(sb, object ? "{}" : "[]");
        return;
    }
    struct keyed *items = xcalloc((size_t)n, sizeof *items);
    int i = 0;
    for (const cJSON *c = j->child; c && i < n; c = c->next, i++)
        items[i] = (struct keyed){c, i};
    if (object && sort_keys)
        qsort(items, (size_t)i, sizeof *items, by_key);
    n = i;
    sb_add(sb, object ? "{" : "[", 1);
    for (i = 0; i < n; i++) {
        if (i > 0)
            sb_add(sb, ",", 1);
        python_newline(sb, level + 1);
        if (object) {
            python_string(sb, items[i].item->string ? items[i].item->string : "");
            sb_puts(sb, colon);
        }
        python_value(sb, items[i].item, level + 1, sort_keys, colon);
    }
    python_newline(sb, level);
    sb_add(sb, object ? "}" : "]", 1);
    free(items);
}

char *json_print_python(const cJSON *j, int sort_keys, const char *colon)
{
    struct strbuf sb;
    sb_init(&sb);
    if (j)
        python_value(&sb, j, 0, sort_keys, colon);
    else
        sb_puts(&sb, "null");
    return sb_detach(&sb);
}
