/* json.c: a cJSON tree printed with exact numbers (see json.h). */
#include "common/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

static void put_string(struct strbuf *sb, const char *s)
{
    sb_add(sb, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': sb_add(sb, "\\\"", 2); break;
        case '\\': sb_add(sb, "\\\\", 2); break;
        case '\b': sb_add(sb, "\\b", 2); break;
        case '\f': sb_add(sb, "\\f", 2); break;
        case '\n': sb_add(sb, "\\n", 2); break;
        case '\r': sb_add(sb, "\\r", 2); break;
        case '\t': sb_add(sb, "\\t", 2); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                sb_puts(sb, esc);
            } else {
                sb_add(sb, (const char *)p, 1);
            }
        }
    }
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
    case cJSON_String: put_string(sb, j->valuestring ? j->valuestring : ""); break;
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
            put_string(sb, c->string ? c->string : "");
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
