/* canonical.c: one text per parameter set, for duplicate detection. NNI compares
 * nni.dump(params, sort_keys=True). We serialize with object keys sorted at every
 * level and numbers with 17 significant digits, so equal texts mean equal values.
 * (cJSON's own printer is not usable here: it settles for 15 digits whenever they
 * read back within DBL_EPSILON, so 10.000000000000002 and 10 print alike.) The
 * text is never shown; strings are written length-prefixed, which needs no escaping
 * and cannot be confused with the punctuation around them. */
#include "tuners/internal.h"

#include <stdlib.h>
#include <string.h>

struct keyed {
    const cJSON *item;
    int pos;  /* original position: keeps the order stable for duplicate keys */
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = strcmp(x->item->string, y->item->string);
    return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

static void put_string(struct strbuf *sb, const char *s)
{
    sb_printf(sb, "s%zu:", strlen(s));
    sb_puts(sb, s);
}

static void put_value(struct strbuf *sb, const cJSON *j)
{
    if (cJSON_IsNumber(j)) {
        sb_printf(sb, "%.17g", j->valuedouble);
    } else if (cJSON_IsString(j)) {
        put_string(sb, j->valuestring ? j->valuestring : "");
    } else if (cJSON_IsTrue(j)) {
        sb_puts(sb, "true");
    } else if (cJSON_IsFalse(j)) {
        sb_puts(sb, "false");
    } else if (cJSON_IsArray(j)) {
        sb_puts(sb, "[");
        for (const cJSON *c = j->child; c; c = c->next) {
            put_value(sb, c);
            sb_puts(sb, ",");
        }
        sb_puts(sb, "]");
    } else if (cJSON_IsObject(j)) {
        int n = 0;
        for (const cJSON *c = j->child; c; c = c->next)
            n++;
        struct keyed *v = xmalloc(sizeof *v * (size_t)(n ? n : 1));
        int i = 0;
        for (const cJSON *c = j->child; c; c = c->next, i++)
            v[i] = (struct keyed){c, i};
        qsort(v, (size_t)n, sizeof *v, cmp_keyed);
        sb_puts(sb, "{");
        for (i = 0; i < n; i++) {
            put_string(sb, v[i].item->string);
            sb_puts(sb, "=");
            put_value(sb, v[i].item);
            sb_puts(sb, ",");
        }
        sb_puts(sb, "}");
        free(v);
    } else {
        sb_puts(sb, "null");
    }
}

char *json_canonical(const cJSON *j)
{
    struct strbuf sb;
    sb_init(&sb);
    put_value(&sb, j);
    return sb_detach(&sb);
}

uint64_t str_hash64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}
