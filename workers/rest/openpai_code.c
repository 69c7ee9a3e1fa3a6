/* openpai_code.c: helpers of the OpenPAI platform that involve no HTTP: the YAML form
 * of the job protocol, sizes and shell quoting. (The code directory is shipped by
 * workers/nniignore.c's code_copy_tree, shared with the Kubernetes platforms.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "workers/rest/openpai.h"

/* ---------------- YAML ---------------- */

static void y_indent(struct strbuf *sb, int n)
{
    for (int i = 0; i < n; i++)
        sb_add(sb, " ", 1);
}

static void y_string(struct strbuf *sb, const char *s)
{
    sb_add(sb, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': sb_puts(sb, "\\\""); break;
        case '\\': sb_puts(sb, "\\\\"); break;
        case '\n': sb_puts(sb, "\\n"); break;
        case '\t': sb_puts(sb, "\\t"); break;
        case '\r': sb_puts(sb, "\\r"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                sb_printf(sb, "\\x%02x", *p);
            else
                sb_add(sb, (const char *)p, 1);
        }
    }
    sb_add(sb, "\"", 1);
}

static void y_scalar(struct strbuf *sb, const cJSON *v)
{
    if (cJSON_IsString(v))
        y_string(sb, v->valuestring);
    else if (cJSON_IsBool(v))
        sb_puts(sb, cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9007199254740992.0)
            sb_printf(sb, "%lld", (long long)d);
        else if (isfinite(d)) {
            /* YAML 1.1 readers (PyYAML) take "1e+300" for a string: keep a '.' */
            char num[40];
            snprintf(num, sizeof num, "%.17g", d);
            char *ex = strchr(num, 'e');
            if (!strchr(num, '.') && ex)
                sb_printf(sb, "%.*s.0%s", (int)(ex - num), num, ex);
            else
                sb_puts(sb, num);
        }
        else
            sb_puts(sb, "null");
    } else if (cJSON_IsArray(v))
        sb_puts(sb, "[]");
    else if (cJSON_IsObject(v))
        sb_puts(sb, "{}");
    else
        sb_puts(sb, "null");
}

static int y_block(const cJSON *v)
{
    return (cJSON_IsObject(v) || cJSON_IsArray(v)) && v->child;
}

static void y_node(struct strbuf *sb, const cJSON *v, int indent);

/* The value of a mapping's key or a list's "-": a block on the lines below, or a
 * scalar on the same line. */
static void y_entry(struct strbuf *sb, const cJSON *it, int indent)
{
    if (y_block(it)) {
        sb_puts(sb, "\n");
        y_node(sb, it, indent + 2);
    } else {
        sb_puts(sb, " ");
        y_scalar(sb, it);
        sb_puts(sb, "\n");
    }
}

static void y_node(struct strbuf *sb, const cJSON *v, int indent)
{
    const cJSON *it;
    if (cJSON_IsObject(v)) {
        cJSON_ArrayForEach(it, v) {
            y_indent(sb, indent);
            y_string(sb, it->string);
            sb_puts(sb, ":");
            y_entry(sb, it, indent);
        }
    } else if (cJSON_IsArray(v)) {
        cJSON_ArrayForEach(it, v) {
            y_indent(sb, indent);
            sb_puts(sb, "-");
            y_entry(sb, it, indent);
        }
    } else {
        y_indent(sb, indent);
        y_scalar(sb, v);
        sb_puts(sb, "\n");
    }
}

void pai_yaml_emit(struct strbuf *sb, const cJSON *v)
{
    y_node(sb, v, 0);
}

/* ---------------- sizes, quoting ---------------- */

long long pai_size_mb(const cJSON *v)
{
    if (cJSON_IsNumber(v))
        return v->valuedouble > 0 ? (long long)ceil(v->valuedouble) : -1;
    if (!cJSON_IsString(v))
        return -1;
    char *end;
    double n = strtod(v->valuestring, &end);
    if (end == v->valuestring || n <= 0)
        return -1;
    while (*end == ' ')
        end++;
    /* NNI's units: binary multiples; "gb" and "g" alike */
    static const struct { const char *u; double mb; } units[] = {
        {"tb", 1024.0 * 1024}, {"t", 1024.0 * 1024}, {"gb", 1024}, {"g", 1024}, {"mb", 1},
        {"m", 1}, {"kb", 1.0 / 1024}, {"k", 1.0 / 1024}, {"b", 1.0 / 1024 / 1024}, {"", 1},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(end, units[i].u) == 0)
            return (long long)ceil(n * units[i].mb);
    return -1;
}

