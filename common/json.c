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
