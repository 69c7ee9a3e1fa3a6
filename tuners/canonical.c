/* canonical.c: one text per parameter set, for duplicate detection. NNI compares
 * nni.dump(params, sort_keys=True). We serialize with object keys sorted at every
 * level and numbers with 17 significant digits, so equal texts mean equal values.
 * (cJSON's own printer is not usable here: it settles for 15 digits whenever they
 * read back within DBL_EPSILON, so 10.000000000000002 and 10 print alike.) The
 * text is never shown; strings are written length-prefixed, which needs no escaping
 * and cannot be confused with the punctuation around them. */
#include "tuners/internal.h"

#include <math.h>
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

/* The kind of value json_canonical writes: numbers, strings, true, false, arrays,
 * objects, and "null" for everything else. */
static int kind(const cJSON *j)
{
    return cJSON_IsNumber(j) ? 1 : cJSON_IsString(j) ? 2 : cJSON_IsTrue(j) ? 3 : cJSON_IsFalse(j) ? 4
         : cJSON_IsArray(j)  ? 5 : cJSON_IsObject(j) ? 6 : 0;
}

static int canonical_equal(const cJSON *a, const cJSON *b)
{
    char *ta = json_canonical(a), *tb = json_canonical(b);
    int same = strcmp(ta, tb) == 0;
    free(ta);
    free(tb);
    return same;
}

int json_same(const cJSON *a, const cJSON *b)
{
    int k = kind(a);
    if (k != kind(b))
        return 0;
    switch (k) {
    case 1:  /* %.17g writes equal texts exactly for equal doubles of the same sign */
        if (isnan(a->valuedouble) || isnan(b->valuedouble))
            return isnan(a->valuedouble) && isnan(b->valuedouble) && signbit(a->valuedouble) == signbit(b->valuedouble);
        return a->valuedouble == b->valuedouble && signbit(a->valuedouble) == signbit(b->valuedouble);
    case 2:
        return strcmp(a->valuestring ? a->valuestring : "", b->valuestring ? b->valuestring : "") == 0;
    case 5:
    case 6: {
        /* Members compared pairwise while their keys agree: a value that differs
         * there differs in the canonical texts too (equal keys before it put it at
         * the same place among that key's members). Keys in another order: the
         * canonical texts are compared. */
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next) {
            if (k == 6 && strcmp(x->string, y->string) != 0)
                return canonical_equal(a, b);
            if (!json_same(x, y))
                return 0;
        }
        return !x && !y;
    }
    default:
        return 1;
    }
}

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 33);
}

uint64_t tuner_params_hash(const cJSON *params)
{
    return json_hash64(params);
}

uint64_t json_hash64(const cJSON *j)
{
    int k = kind(j);
    uint64_t h = (uint64_t)k * 0x9e3779b97f4a7c15ULL;
    if (k == 1) {
        uint64_t bits;
        memcpy(&bits, &j->valuedouble, sizeof bits);
        if (isnan(j->valuedouble))  /* every NaN of a sign writes the same text */
            bits = signbit(j->valuedouble) ? 1 : 2;
        return mix64(h ^ bits);
    }
    if (k == 2)
        return mix64(h ^ str_hash64(j->valuestring ? j->valuestring : ""));
    if (k == 5) {
        for (const cJSON *c = j->child; c; c = c->next)
            h = mix64(h ^ json_hash64(c));
        return h;
    }
    if (k == 6) {  /* a sum over the members: the same in any order */
        uint64_t sum = 0;
        for (const cJSON *c = j->child; c; c = c->next)
            sum += mix64(str_hash64(c->string) ^ mix64(json_hash64(c)));
        return mix64(h ^ sum);
    }
    return mix64(h);
}
