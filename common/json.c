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
        int n = c >= 0x80 ? utf8_len(s, SIZE_MAX) : 1;
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

/* ---------------- json_check: strict RFC 8259 ---------------- */

struct jcheck {
    const unsigned char *s, *end, *p;
    struct json_issue *issue;
    int depth;
};

static int jc_fail(struct jcheck *c, const unsigned char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int jc_fail(struct jcheck *c, const unsigned char *at, const char *fmt, ...)
{
    struct json_issue *is = c->issue;
    is->offset = (size_t)(at - c->s);
    is->line = 1;
    is->col = 1;
    for (const unsigned char *q = c->s; q < at; q++) {
        if (*q == '\n') {
            is->line++;
            is->col = 1;
        } else {
            is->col++;
        }
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(is->msg, sizeof is->msg, fmt, ap);
    va_end(ap);
    return -1;
}

static void jc_space(struct jcheck *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int jc_hex4(const unsigned char *p, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char h = p[i];
        v <<= 4;
        if (h >= '0' && h <= '9')
            v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f')
            v |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F')
            v |= (unsigned)(h - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* A string at c->p (on its '"'); its decoded text goes to *text when text is not NULL
 * (keys, to find repeats). */
static int jc_string(struct jcheck *c, struct strbuf *text)
{
    const unsigned char *start = c->p++;
    while (c->p < c->end && *c->p != '"') {
        const unsigned char *at = c->p;
        unsigned char ch = *c->p;
        if (ch < 0x20)
            return jc_fail(c, at, "control character 0x%02x in a string (write it as \\u%04x)", ch, ch);
        if (ch == '\\') {
            if (c->end - c->p < 2)
                return jc_fail(c, start, "string not closed");
            unsigned char esc = c->p[1];
            const char *plain = strchr("\"\\/bfnrt", esc);
            if (esc && plain) {
                static const char decoded[] = "\"\\/\b\f\n\r\t";
                if (text)
                    sb_add(text, &decoded[plain - "\"\\/bfnrt"], 1);
                c->p += 2;
                continue;
            }
            unsigned u;
            if (esc != 'u' || c->end - c->p < 6 || jc_hex4(c->p + 2, &u) < 0)
                return jc_fail(c, at, "invalid escape in a string");
            c->p += 6;
            if (u == 0)
                return jc_fail(c, at, "\\u0000 in a string");
            if (u >= 0xDC00 && u <= 0xDFFF)
                return jc_fail(c, at, "unpaired surrogate \\u%04x in a string", u);
            if (u >= 0xD800 && u <= 0xDBFF) {
                unsigned lo;
                if (c->end - c->p < 6 || c->p[0] != '\\' || c->p[1] != 'u' || jc_hex4(c->p + 2, &lo) < 0 ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return jc_fail(c, at, "unpaired surrogate \\u%04x in a string", u);
                c->p += 6;
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (text) {
                char utf8[4];
                size_t k = 0;
                if (u < 0x80) {
                    utf8[k++] = (char)u;
                } else if (u < 0x800) {
                    utf8[k++] = (char)(0xC0 | u >> 6);
                    utf8[k++] = (char)(0x80 | (u & 0x3F));
                } else if (u < 0x10000) {
                    utf8[k++] = (char)(0xE0 | u >> 12);
                    utf8[k++] = (char)(0x80 | (u >> 6 & 0x3F));
                    utf8[k++] = (char)(0x80 | (u & 0x3F));
                } else {
                    utf8[k++] = (char)(0xF0 | u >> 18);
                    utf8[k++] = (char)(0x80 | (u >> 12 & 0x3F));
                    utf8[k++] = (char)(0x80 | (u >> 6 & 0x3F));
                    utf8[k++] = (char)(0x80 | (u & 0x3F));
                }
                sb_add(text, utf8, k);
            }
            continue;
        }
        int len = 1;
        if (ch >= 0x80 && (len = utf8_len(c->p, (size_t)(c->end - c->p))) == 0)
            return jc_fail(c, at, "bytes that are not UTF-8 in a string");
        if (text)
            sb_add(text, (const char *)c->p, (size_t)len);
        c->p += len;
    }
    if (c->p >= c->end)
        return jc_fail(c, start, "string not closed");
    c->p++;
    return 0;
}

static int jc_number(struct jcheck *c)
{
    const unsigned char *start = c->p;
    if (c->p < c->end && *c->p == '-')
        c->p++;
    if (c->p >= c->end || !(*c->p >= '0' && *c->p <= '9'))
        return jc_fail(c, start, "invalid number");
    if (*c->p == '0' && c->p + 1 < c->end && c->p[1] >= '0' && c->p[1] <= '9')
        return jc_fail(c, start, "number with a leading zero");
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
        c->p++;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        if (c->p >= c->end || !(*c->p >= '0' && *c->p <= '9'))
            return jc_fail(c, start, "number without digits after its '.'");
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
            c->p++;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
            c->p++;
        if (c->p >= c->end || !(*c->p >= '0' && *c->p <= '9'))
            return jc_fail(c, start, "number without digits in its exponent");
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
            c->p++;
    }
    char buf[64];
    size_t len = (size_t)(c->p - start);
    if (len < sizeof buf) {
        memcpy(buf, start, len);
        buf[len] = 0;
        if (!isfinite(strtod(buf, NULL)))
            return jc_fail(c, start, "number %s is beyond the range of a double", buf);
    } else {
        /* a long number: its exponent or its digits decide */
        char *t = xstrndup((const char *)start, len);
        int inf = !isfinite(strtod(t, NULL));
        free(t);
        if (inf)
            return jc_fail(c, start, "number beyond the range of a double");
    }
    return 0;
}

static int cmp_keys(const void *a, const void *b)
{
    const struct strbuf *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    /* an empty key "" has no buffer at all: memcmp must not see its null pointer */
    int r = n ? memcmp(x->buf, y->buf, n) : 0;
    return r ? r : (x->len > y->len) - (x->len < y->len);
}

static int jc_value(struct jcheck *c);

static int jc_object(struct jcheck *c)
{
    c->p++; /* '{' */
    struct strbuf *keys = NULL;
    const unsigned char **at = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    jc_space(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        jc_space(c);
        if (c->p >= c->end || *c->p != '"') {
            rc = jc_fail(c, c->p, "expected a key (a string in double quotes)");
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            keys = xrealloc(keys, cap * sizeof *keys);
            at = xrealloc(at, cap * sizeof *at);
        }
        sb_init(&keys[n]);
        at[n] = c->p;
        if ((rc = jc_string(c, &keys[n++])) < 0)
            break;
        jc_space(c);
        if (c->p >= c->end || *c->p != ':') {
            rc = jc_fail(c, c->p, "expected ':' after a key");
            break;
        }
        c->p++;
        if ((rc = jc_value(c)) < 0)
            break;
        jc_space(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            break;
        }
        rc = jc_fail(c, c->p, "expected ',' or '}' in an object");
        break;
    }
    if (rc == 0 && n > 1) {
        /* sorted copies find a repeat; its place is then looked up in file order */
        struct strbuf *sorted = xcalloc(n, sizeof *sorted);
        memcpy(sorted, keys, n * sizeof *keys);
        qsort(sorted, n, sizeof *sorted, cmp_keys);
        for (size_t i = 1; i < n && rc == 0; i++) {
            if (cmp_keys(&sorted[i - 1], &sorted[i]) != 0)
                continue;
            int seen = 0;
            for (size_t k = 0; k < n; k++) {
                if (cmp_keys(&keys[k], &sorted[i]) != 0 || !seen++)
                    continue;
                rc = jc_fail(c, at[k], "key \"%.60s\" repeated in one object", sorted[i].buf ? sorted[i].buf : "");
                break;
            }
        }
        free(sorted);
    }
    for (size_t i = 0; i < n; i++)
        sb_free(&keys[i]);
    free(keys);
    free(at);
    return rc;
}

static int jc_array(struct jcheck *c)
{
    c->p++; /* '[' */
    jc_space(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
        return 0;
    }
    for (;;) {
        if (jc_value(c) < 0)
            return -1;
        jc_space(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == ']') {
            c->p++;
            return 0;
        }
        return jc_fail(c, c->p, "expected ',' or ']' in a list");
    }
}

static int jc_literal(struct jcheck *c, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return jc_fail(c, c->p, "expected a value");
    c->p += n;
    return 0;
}

static int jc_value(struct jcheck *c)
{
    jc_space(c);
    if (c->p >= c->end)
        return jc_fail(c, c->p, "expected a value, found the end");
    if (++c->depth > 1000)
        return jc_fail(c, c->p, "nested more than 1000 levels deep");
    int rc;
    switch (*c->p) {
    case '{': rc = jc_object(c); break;
    case '[': rc = jc_array(c); break;
    case '"': rc = jc_string(c, NULL); break;
    case 't': rc = jc_literal(c, "true"); break;
    case 'f': rc = jc_literal(c, "false"); break;
    case 'n': rc = jc_literal(c, "null"); break;
    default:
        rc = *c->p == '-' || (*c->p >= '0' && *c->p <= '9') ? jc_number(c) : jc_fail(c, c->p, "expected a value");
    }
    c->depth--;
    return rc;
}

int json_check(const char *s, size_t n, struct json_issue *issue)
{
    if (!s) { /* an empty body may come as NULL: no arithmetic on a null pointer */
        s = "";
        n = 0;
    }
    struct jcheck c = {(const unsigned char *)s, (const unsigned char *)s + n, (const unsigned char *)s, issue, 0};
    if (jc_value(&c) < 0)
        return -1;
    jc_space(&c);
    if (c.p < c.end)
        return jc_fail(&c, c.p, "something after the JSON value");
    return 0;
}
