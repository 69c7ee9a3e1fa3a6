/* marks.c: canonical key path ("trainingService.machineList[0].port") -> where the
 * key and its value were written. Filled while validating; read by error messages and
 * config_mark_of, so a problem found later (a bad search space) still gets a line. */
#include "config/config_int.h"

#include <stdlib.h>
#include <string.h>

struct marks {
    struct mark_entry *v;
    size_t n, cap;
    size_t *slots; /* open addressing: index + 1 into v, 0 = empty (search spaces are big) */
    size_t nslots;
};

static size_t hash_path(const char *s)
{
    size_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void index_rebuild(struct marks *m)
{
    free(m->slots);
    m->nslots = m->nslots ? m->nslots * 2 : 256;
    m->slots = xcalloc(m->nslots, sizeof *m->slots);
    for (size_t i = 0; i < m->n; i++) {
        size_t h = hash_path(m->v[i].path) & (m->nslots - 1);
        while (m->slots[h])
            h = (h + 1) & (m->nslots - 1);
        m->slots[h] = i + 1;
    }
}

struct marks *marks_new(void)
{
    return xcalloc(1, sizeof(struct marks));
}

void marks_free(struct marks *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].path);
        free(m->v[i].origin);
    }
    free(m->v);
    free(m->slots);
    free(m);
}

static struct mark_entry *find_exact(const struct marks *m, const char *path)
{
    if (!m->nslots)
        return NULL;
    for (size_t h = hash_path(path) & (m->nslots - 1); m->slots[h]; h = (h + 1) & (m->nslots - 1))
        if (strcmp(m->v[m->slots[h] - 1].path, path) == 0)
            return &m->v[m->slots[h] - 1];
    return NULL;
}

void marks_set(struct marks *m, const char *path, struct ymark key, struct ymark value,
               const char *origin)
{
    struct mark_entry *en = find_exact(m, path);
    if (!en) {
        if (m->n == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 64;
            m->v = xrealloc(m->v, m->cap * sizeof *m->v);
        }
        en = &m->v[m->n++];
        en->path = xstrdup(path);
        en->origin = NULL;
        if (2 * m->n > m->nslots) {
            index_rebuild(m);
        } else {
            size_t h = hash_path(path) & (m->nslots - 1);
            while (m->slots[h])
                h = (h + 1) & (m->nslots - 1);
            m->slots[h] = m->n;
        }
    }
    en->key = key;
    en->value = value;
    free(en->origin);
    en->origin = origin ? xstrdup(origin) : NULL;
}

const struct mark_entry *marks_find(const struct marks *m, const char *path, int exact)
{
    if (!m)
        return NULL;
    const struct mark_entry *en = find_exact(m, path);
    if (en || exact)
        return en;
    char *p = xstrdup(path);
    for (;;) {
        char *dot = strrchr(p, '.');
        char *br = strrchr(p, '[');
        char *cut = dot > br ? dot : br;
        if (!cut) {
            if (*p == '\0')
                break;
            *p = '\0'; /* the root, recorded as "" */
        } else {
            *cut = '\0';
        }
        en = find_exact(m, p);
        if (en)
            break;
    }
    free(p);
    return en;
}

void marks_alias(struct marks *m, const char *from_prefix, const char *to_prefix)
{
    size_t flen = strlen(from_prefix);
    size_t n = m->n; /* entries added below are not revisited */
    for (size_t i = 0; i < n; i++) {
        const char *p = m->v[i].path;
        if (strncmp(p, from_prefix, flen) != 0 || (p[flen] && p[flen] != '.' && p[flen] != '['))
            continue;
        char *np = xasprintf("%s%s", to_prefix, p + flen);
        /* marks_set may move the array: copy what we need first */
        struct ymark k = m->v[i].key, v = m->v[i].value;
        char *origin = m->v[i].origin ? xstrdup(m->v[i].origin) : NULL;
        marks_set(m, np, k, v, origin);
        free(origin);
        free(np);
    }
}
