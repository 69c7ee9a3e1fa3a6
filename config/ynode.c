/* ynode.c: the in-memory YAML tree. Each value remembers where it was written, so a
 * value moved by the v1 conversion still reports its own line:col. */
#include "config/config_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct ynode *ynode_new(enum ykind kind, struct ymark mark)
{
    struct ynode *n = xcalloc(1, sizeof *n);
    n->kind = kind;
    n->mark = mark;
    return n;
}

struct ynode *ynode_new_str(const char *s, struct ymark mark)
{
    struct ynode *n = ynode_new(Y_STR, mark);
    n->text = xstrdup(s);
    return n;
}

void ynode_free(struct ynode *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nitems; i++)
        ynode_free(n->items[i]);
    for (size_t i = 0; i < n->nentries; i++) {
        free(n->entries[i].key);
        ynode_free(n->entries[i].value);
    }
    free(n->items);
    free(n->entries);
    free(n->text);
    free(n->origin);
    free(n);
}

struct ynode *ynode_copy(const struct ynode *n)
{
    struct ynode *c = ynode_new(n->kind, n->mark);
    c->text = n->text ? xstrdup(n->text) : NULL;
    c->plain = n->plain;
    c->b = n->b;
    c->big = n->big;
    c->i = n->i;
    c->d = n->d;
    c->origin = n->origin ? xstrdup(n->origin) : NULL;
    for (size_t i = 0; i < n->nitems; i++)
        yseq_push(c, ynode_copy(n->items[i]));
    for (size_t i = 0; i < n->nentries; i++)
        ymap_put(c, n->entries[i].key, n->entries[i].key_mark, ynode_copy(n->entries[i].value));
    return c;
}

void yseq_push(struct ynode *seq, struct ynode *item)
{
    if (seq->nitems == seq->capitems) {
        seq->capitems = seq->capitems ? 2 * seq->capitems : 4;
        seq->items = xrealloc(seq->items, seq->capitems * sizeof *seq->items);
    }
    seq->items[seq->nitems++] = item;
}

void ymap_put(struct ynode *map, const char *key, struct ymark key_mark, struct ynode *value)
{
    if (map->nentries == map->capentries) {
        map->capentries = map->capentries ? 2 * map->capentries : 4;
        map->entries = xrealloc(map->entries, map->capentries * sizeof *map->entries);
    }
    struct yentry *en = &map->entries[map->nentries++];
    en->key = xstrdup(key);
    en->key_mark = key_mark;
    en->value = value;
}

int key_fold_eq(const char *a, const char *b)
{
    for (;;) {
        while (*a == '_')
            a++;
        while (*b == '_')
            b++;
        if (!*a || !*b)
            return !*a && !*b;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
        a++;
        b++;
    }
}

struct yentry *ymap_find(const struct ynode *map, const char *key)
{
    if (!map || map->kind != Y_MAP)
        return NULL;
    for (size_t i = 0; i < map->nentries; i++)
        if (key_fold_eq(map->entries[i].key, key))
            return &map->entries[i];
    return NULL;
}

struct ynode *ymap_take(struct ynode *map, const char *key, struct ymark *key_mark)
{
    struct yentry *en = ymap_find(map, key);
    if (!en)
        return NULL;
    struct ynode *v = en->value;
    if (key_mark)
        *key_mark = en->key_mark;
    free(en->key);
    size_t idx = (size_t)(en - map->entries);
    memmove(en, en + 1, (map->nentries - idx - 1) * sizeof *en);
    map->nentries--;
    return v;
}

const char *ynode_kind_name(const struct ynode *n)
{
    if (!n)
        return "nothing";
    switch (n->kind) {
    case Y_NULL: return "null";
    case Y_BOOL: return "a boolean";
    case Y_INT: return "an integer";
    case Y_FLOAT: return "a number";
    case Y_STR: return "a string";
    case Y_SEQ: return "a list";
    case Y_MAP: return "a mapping";
    }
    return "a value";
}

/* Folded copy (lower case, no underscores), at most 63 characters. */
static void fold(const char *s, char out[64])
{
    size_t n = 0;
    for (; *s && n < 63; s++)
        if (*s != '_')
            out[n++] = (char)tolower((unsigned char)*s);
    out[n] = '\0';
}

int key_distance(const char *a, const char *b)
{
    char fa[64], fb[64];
    fold(a, fa);
    fold(b, fb);
    size_t la = strlen(fa), lb = strlen(fb);
    int row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (fa[i - 1] != fb[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}
