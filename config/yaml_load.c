/* yaml_load.c: libyaml events -> ynode tree. Resolves plain scalars the way PyYAML
 * (what NNI uses) does for the cases configs meet, expands aliases and "<<" merge keys
 * within budgets, and turns every libyaml problem into "file:line:col: ...". */
#include "config/config_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#define MAX_DEPTH 200                 /* deeper nesting is no config; keeps recursion bounded */
#define MAX_NODES 1000000             /* bounds memory for absurd files */
#define MAX_ALIAS_NODES 100000        /* "billion laughs" stops here */
#define MAX_FILE_BYTES (16L << 20)

struct frame {
    struct ynode *node;   /* Y_SEQ or Y_MAP under construction */
    char *anchor;         /* registered when the collection ends */
    int have_key;         /* maps: a key is waiting for its value */
    char *key;
    struct ymark key_mark;
    int key_plain;
    struct ynode **merges; /* values of "<<" keys, merged at the end */
    size_t nmerges;
    size_t *slots;         /* maps: open addressing over the keys, entry index + 1 */
    size_t nslots;         /* a power of two, or 0 */
};

struct anchor {
    char *name;
    struct ynode *node; /* a private copy: the original may be moved by a merge */
};

struct builder {
    const char *name;
    const char *buf;
    size_t len;
    struct errbuf *e;
    struct frame stack[MAX_DEPTH];
    int depth;
    struct anchor *anchors;
    size_t nanchors, capanchors;
    size_t nodes, alias_nodes;
    struct ynode *root;
    int ndocs;
};

static struct ymark mark_of(yaml_mark_t m)
{
    struct ymark r = {(int)m.line + 1, (int)m.column + 1};
    return r;
}

/* Key path of the value being built, for messages ("trainingService.machineList[1]"). */
static void build_path(const struct builder *b, int frames, const char *last, struct strbuf *sb)
{
    for (int i = 0; i < frames; i++) {
        const struct frame *f = &b->stack[i];
        if (f->node->kind == Y_SEQ)
            path_push_index(sb, f->node->nitems);
        else if (f->have_key)
            path_push_key(sb, f->key);
    }
    if (last)
        path_push_key(sb, last);
}

static int build_err(struct builder *b, struct ymark m, const char *last, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int build_err(struct builder *b, struct ymark m, const char *last, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct strbuf p;
    sb_init(&p);
    build_path(b, b->depth, last, &p);
    if (p.len > 100) { /* a path 200 levels deep helps nobody */
        path_pop(&p, 80);
        sb_puts(&p, "...");
    }
    if (p.len)
        errf(b->e, "%s:%d:%d: %s: %s", b->name, m.line, m.col, p.buf, msg);
    else
        errf(b->e, "%s:%d:%d: %s", b->name, m.line, m.col, msg);
    sb_free(&p);
    return -1;
}

static size_t count_nodes(const struct ynode *n)
{
    size_t c = 1;
    for (size_t i = 0; i < n->nitems; i++)
        c += count_nodes(n->items[i]);
    for (size_t i = 0; i < n->nentries; i++)
        c += count_nodes(n->entries[i].value);
    return c;
}

static int charge(struct builder *b, size_t n, struct ymark m)
{
    b->nodes += n;
    if (b->nodes > MAX_NODES)
        return build_err(b, m, NULL, "document too large (more than %d values)", MAX_NODES);
    return 0;
}

/* ---- scalar resolution (YAML 1.1 booleans as PyYAML; JSON-style numbers) ---- */

static int in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(s, *list) == 0)
            return 1;
    return 0;
}

/* Copy of s without '_' digit separators, or NULL if too long. */
static int strip_underscores(const char *s, char *out, size_t outlen)
{
    size_t n = 0;
    for (; *s; s++) {
        if (*s == '_')
            continue;
        if (n + 1 >= outlen)
            return -1;
        out[n++] = *s;
    }
    out[n] = '\0';
    return 0;
}

/* n := the integer sign * value (sets big when beyond int64) */
static void set_int(struct ynode *n, int neg, unsigned long long u, int overflow)
{
    n->kind = Y_INT;
    if (overflow || u > (unsigned long long)INT64_MAX + (neg ? 1u : 0u)) {
        n->big = 1;
        n->d = (neg ? -1.0 : 1.0) * (overflow ? HUGE_VAL : (double)u);
        return;
    }
    n->i = neg ? (int64_t)(0 - u) : (int64_t)u;
    n->d = (double)n->i;
}

/* The sexagesimal form "[1-9][0-9_]*(:[0-5]?[0-9])+" (PyYAML: 1:30 is 90), from after
 * the sign; the parts to *parts (at most 32). 1 when s is one. */
static int sexagesimal(const char *s, int64_t *parts, int *nparts, const char **end)
{
    const char *p = s;
    if (*p < '1' || *p > '9')
        return 0;
    int64_t first = 0;
    for (; isdigit((unsigned char)*p) || *p == '_'; p++)
        if (*p != '_' && (first = first * 10 + (*p - '0')) > INT64_MAX / 100)
            return 0;
    if (*p != ':')
        return 0;
    int n = 0;
    parts[n++] = first;
    while (*p == ':' && n < 32) {
        p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        int v = *p++ - '0';
        if (isdigit((unsigned char)*p)) {
            if (v > 5)
                return 0;
            v = v * 10 + (*p++ - '0');
        }
        parts[n++] = v;
    }
    *nparts = n;
    *end = p;
    return 1;
}

/* YAML 1.1's integers as PyYAML (NNI's loader) resolves them: 0b binary, a leading 0
 * octal (010 is 8; 08 is a string), decimal, 0x hexadecimal, 1:30 sexagesimal (90);
 * '_' may stand between the digits. "0o10" and "0X1F" are strings, as in PyYAML. */
static int resolve_int(struct ynode *n)
{
    const char *s = n->text;
    const char *p = s;
    int neg = *p == '-';
    if (*p == '+' || *p == '-')
        p++;
    int64_t parts[32];
    int np = 0;
    const char *end = NULL;
    if (sexagesimal(p, parts, &np, &end) && !*end) {
        /* each part below 60, the first as large as it is: at most ~19 digits in all */
        long double v = 0;
        for (int i = 0; i < np; i++)
            v = v * 60 + parts[i];
        set_int(n, neg, v > (long double)UINT64_MAX ? 0 : (unsigned long long)v, v > (long double)UINT64_MAX);
        return 1;
    }
    int base = 10;
    const char *digits = p;
    if (p[0] == '0' && p[1] == 'b') {
        base = 2;
        digits = p + 2;
    } else if (p[0] == '0' && p[1] == 'x') {
        base = 16;
        digits = p + 2;
    } else if (p[0] == '0' && p[1]) {
        base = 8;
        digits = p + 1;
    } else if (p[0] == '_') {
        return 0;
    }
    if (!*digits)
        return 0;
    int any = 0;
    for (const char *q = digits; *q; q++) {
        int ok = *q == '_' || (base == 16 ? isxdigit((unsigned char)*q)
                                          : (*q >= '0' && *q <= (base == 2 ? '1' : base == 8 ? '7' : '9')));
        if (!ok)
            return 0;
        any |= *q != '_';
    }
    if (!any)
        return 0; /* "0b_": PyYAML's int() fails on it; a string here */
    char clean[128];
    if (strip_underscores(digits, clean, sizeof clean) < 0) {
        n->big = 1; /* hundreds of digits: certainly out of range */
        n->d = neg ? -HUGE_VAL : HUGE_VAL;
        n->kind = Y_INT;
        return 1;
    }
    errno = 0;
    unsigned long long u = strtoull(clean, NULL, base);
    int overflow = errno == ERANGE;
    set_int(n, neg, u, overflow);
    if (n->big && base == 10 && !overflow)
        n->d = strtod(s, NULL);
    return 1;
}

static int resolve_float(struct ynode *n)
{
    static const char *const inf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL};
    static const char *const ninf[] = {"-.inf", "-.Inf", "-.INF", NULL};
    static const char *const nan_[] = {".nan", ".NaN", ".NAN", NULL};
    const char *s = n->text;
    if (in_list(s, inf) || in_list(s, ninf) || in_list(s, nan_)) {
        n->kind = Y_FLOAT;
        n->d = in_list(s, nan_) ? NAN : in_list(s, ninf) ? -HUGE_VAL : HUGE_VAL;
        return 1;
    }
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    /* PyYAML's sexagesimal float: 1:30.5 is 90.5 */
    int64_t parts[32];
    int np = 0;
    const char *end = NULL;
    if (sexagesimal(p, parts, &np, &end) && *end == '.') {
        const char *q = end + 1;
        while (isdigit((unsigned char)*q) || *q == '_')
            q++;
        char frac[128];
        if (!*q && strip_underscores(end, frac, sizeof frac) == 0) {
            double v = 0;
            for (int i = 0; i < np; i++)
                v = v * 60 + (double)parts[i];
            n->kind = Y_FLOAT;
            n->d = (*s == '-' ? -1 : 1) * (v + strtod(frac, NULL));
            return 1;
        }
    }
    /* [-+]? (digits [. digits?] | . digits) ([eE] [-+]? digits)?, with a '.' or an
     * exponent: PyYAML's floats, and forms it leaves as strings although NNI's users
     * mean numbers (1e-4, 1.5e3: its exponent needs a '.' and a sign) */
    int mant = 0, dot = 0, exp = 0;
    while (isdigit((unsigned char)*p) || (*p == '_' && mant)) {
        mant = 1;
        p++;
    }
    if (*p == '.') {
        dot = 1;
        p++;
        while (isdigit((unsigned char)*p) || *p == '_') {
            mant = 1;
            p++;
        }
    }
    if (!mant)
        return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
        exp = 1;
    }
    if (*p || (!dot && !exp))
        return 0;
    char clean[128];
    if (strip_underscores(s, clean, sizeof clean) < 0)
        return 0;
    n->kind = Y_FLOAT;
    n->d = strtod(clean, NULL);
    return 1;
}

static void resolve_plain(struct ynode *n)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                        "on", "On", "ON", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO",
                                         "off", "Off", "OFF", NULL};
    if (in_list(n->text, nulls)) {
        n->kind = Y_NULL;
    } else if (in_list(n->text, trues)) {
        n->kind = Y_BOOL;
        n->b = 1;
    } else if (in_list(n->text, falses)) {
        n->kind = Y_BOOL;
        n->b = 0;
    } else if (!resolve_int(n)) {
        resolve_float(n);
    }
}

/* Applies an explicit tag (!!str, !!int, ...). Returns -1 for tags we do not construct. */
static int apply_tag(struct builder *b, struct ynode *n, const char *tag)
{
    static const char pre[] = "tag:yaml.org,2002:";
    if (!tag || strcmp(tag, "!") == 0)
        return 0;
    if (strncmp(tag, pre, sizeof pre - 1) == 0) {
        const char *t = tag + sizeof pre - 1;
        if (strcmp(t, "str") == 0) {
            n->kind = Y_STR;
            return 0;
        }
        if (strcmp(t, "null") == 0) {
            n->kind = Y_NULL;
            return 0;
        }
        n->kind = Y_STR;
        resolve_plain(n);
        if (strcmp(t, "bool") == 0 && n->kind == Y_BOOL)
            return 0;
        if (strcmp(t, "int") == 0 && n->kind == Y_INT)
            return 0;
        if (strcmp(t, "float") == 0 && (n->kind == Y_INT || n->kind == Y_FLOAT)) {
            n->kind = Y_FLOAT;
            return 0;
        }
        if (strcmp(t, "bool") == 0 || strcmp(t, "int") == 0 || strcmp(t, "float") == 0)
            return build_err(b, n->mark, NULL, "\"%.40s\" is not a valid !!%s", n->text, t);
    }
    return build_err(b, n->mark, NULL, "unsupported YAML tag %.80s", tag);
}

static int collection_tag_ok(const char *tag, const char *want)
{
    static const char pre[] = "tag:yaml.org,2002:";
    if (!tag || strcmp(tag, "!") == 0)
        return 1;
    return strncmp(tag, pre, sizeof pre - 1) == 0 && strcmp(tag + sizeof pre - 1, want) == 0;
}

/* ---- anchors ---- */

static int anchor_register(struct builder *b, const char *name, const struct ynode *n)
{
    size_t cnt = count_nodes(n);
    b->alias_nodes += cnt;
    if (b->alias_nodes > MAX_ALIAS_NODES)
        return build_err(b, n->mark, NULL, "anchors and aliases expand to too many values");
    if (b->nanchors == b->capanchors) {
        b->capanchors = b->capanchors ? 2 * b->capanchors : 8;
        b->anchors = xrealloc(b->anchors, b->capanchors * sizeof *b->anchors);
    }
    b->anchors[b->nanchors].name = xstrdup(name);
    b->anchors[b->nanchors].node = ynode_copy(n);
    b->nanchors++;
    return 0;
}

static int alias_resolve(struct builder *b, const char *name, struct ymark m, struct ynode **out)
{
    for (size_t i = b->nanchors; i-- > 0;) {
        if (strcmp(b->anchors[i].name, name) != 0)
            continue;
        size_t cnt = count_nodes(b->anchors[i].node);
        b->alias_nodes += cnt;
        if (b->alias_nodes > MAX_ALIAS_NODES)
            return build_err(b, m, NULL, "anchors and aliases expand to too many values");
        if (charge(b, cnt, m) < 0)
            return -1;
        *out = ynode_copy(b->anchors[i].node);
        (*out)->mark = m; /* errors about the value point at its use */
        return 0;
    }
    /* also covers an alias used inside its own anchor (a recursive structure) */
    return build_err(b, m, NULL, "unknown alias *%.80s (undefined, or used inside its own anchor)",
                     name);
}

/* ---- assembling ---- */

static void frame_release(struct frame *f)
{
    ynode_free(f->node);
    free(f->anchor);
    free(f->key);
    for (size_t i = 0; i < f->nmerges; i++)
        ynode_free(f->merges[i]);
    free(f->merges);
    free(f->slots);
    memset(f, 0, sizeof *f);
}

/* A mapping's keys are looked up by hash: a repeated key is found in constant time, so a
 * mapping of n keys loads in O(n), not O(n^2) (100,000 keys took 32 s). */
static size_t key_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

/* The index of the entry with this exact key, or -1. */
static long frame_find(const struct frame *f, const char *key)
{
    if (!f->nslots)
        return -1;
    for (size_t i = key_hash(key) & (f->nslots - 1);; i = (i + 1) & (f->nslots - 1)) {
        size_t s = f->slots[i];
        if (!s)
            return -1;
        if (strcmp(f->node->entries[s - 1].key, key) == 0)
            return (long)(s - 1);
    }
}

static void slot_put(size_t *slots, size_t nslots, const char *key, size_t entry)
{
    size_t i = key_hash(key) & (nslots - 1);
    while (slots[i])
        i = (i + 1) & (nslots - 1);
    slots[i] = entry + 1;
}

/* Indexes the map's last entry (at most half full: rebuilt twice as big when needed). */
static void frame_index_last(struct frame *f)
{
    struct ynode *map = f->node;
    if (2 * map->nentries > f->nslots) {
        free(f->slots);
        f->nslots = f->nslots ? 2 * f->nslots : 16;
        while (2 * map->nentries > f->nslots)
            f->nslots *= 2;
        f->slots = xcalloc(f->nslots, sizeof *f->slots);
        for (size_t i = 0; i + 1 < map->nentries; i++)
            slot_put(f->slots, f->nslots, map->entries[i].key, i);
    }
    slot_put(f->slots, f->nslots, map->entries[map->nentries - 1].key, map->nentries - 1);
}

static int is_plain_merge_key(const struct frame *f)
{
    return f->key_plain && strcmp(f->key, "<<") == 0;
}

/* Hands a finished value to its parent (or makes it the document). Takes n. */
static int deliver(struct builder *b, struct ynode *n)
{
    if (b->depth == 0) {
        b->root = n;
        return 0;
    }
    struct frame *f = &b->stack[b->depth - 1];
    if (f->node->kind == Y_SEQ) {
        yseq_push(f->node, n);
        return 0;
    }
    if (!f->have_key) {
        if (n->kind == Y_SEQ || n->kind == Y_MAP) {
            struct ymark m = n->mark;
            ynode_free(n);
            return build_err(b, m, NULL, "a mapping key must be a plain value, not a list or mapping");
        }
        if (strlen(n->text) > 1000) {
            struct ymark m = n->mark;
            ynode_free(n);
            return build_err(b, m, NULL, "mapping key longer than 1000 characters");
        }
        f->key = xstrdup(n->text);
        f->key_mark = n->mark;
        f->key_plain = n->plain;
        f->have_key = 1;
        ynode_free(n);
        return 0;
    }
    if (is_plain_merge_key(f)) {
        int ok = n->kind == Y_MAP;
        if (n->kind == Y_SEQ) {
            ok = 1;
            for (size_t i = 0; i < n->nitems; i++)
                ok &= n->items[i]->kind == Y_MAP;
        }
        if (!ok) {
            struct ymark m = n->mark;
            ynode_free(n);
            return build_err(b, m, NULL, "a merge key (<<) needs a mapping or a list of mappings");
        }
        f->merges = xrealloc(f->merges, (f->nmerges + 1) * sizeof *f->merges);
        f->merges[f->nmerges++] = n;
    } else {
        long dup = frame_find(f, f->key);
        if (dup >= 0) {
            int first = f->node->entries[dup].key_mark.line;
            ynode_free(n);
            f->have_key = 0; /* the path below must not repeat the key */
            int rc = build_err(b, f->key_mark, f->key, "duplicate key (first set on line %d)", first);
            f->have_key = 1;
            return rc;
        }
        ymap_put(f->node, f->key, f->key_mark, n);
        frame_index_last(f);
    }
    free(f->key);
    f->key = NULL;
    f->have_key = 0;
    return 0;
}

/* A pair of the flattened mapping: a key keeps its first place and takes the last
 * value given to it. */
static void merge_put(struct frame *f, const char *key, struct ymark key_mark, struct ynode *value)
{
    long at = frame_find(f, key);
    if (at < 0) {
        ymap_put(f->node, key, key_mark, value);
        frame_index_last(f);
        return;
    }
    struct yentry *en = &f->node->entries[at];
    ynode_free(en->value);
    en->value = value;
    en->key_mark = key_mark;
}

/* "<<" merges as PyYAML's flatten_mapping (what NNI reads): the merged pairs come first,
 * in the order of the << keys (of a list of mappings, the last one's first), then the
 * mapping's own; a key stays where it came first and takes its last value. So the
 * mapping's own keys win, then the earlier mappings of a list, then later << keys; and
 * the order of the keys (a search space's parameters) is PyYAML's. */
static void apply_merges(struct frame *f)
{
    if (!f->nmerges)
        return;
    struct ynode *map = f->node;
    struct yentry *own = map->entries;
    size_t nown = map->nentries;
    map->entries = NULL;
    map->nentries = map->capentries = 0;
    free(f->slots);
    f->slots = NULL;
    f->nslots = 0;
    for (size_t k = 0; k < f->nmerges; k++) {
        struct ynode *m = f->merges[k];
        size_t count = m->kind == Y_SEQ ? m->nitems : 1;
        for (size_t j = count; j-- > 0;) {
            struct ynode *src = m->kind == Y_SEQ ? m->items[j] : m;
            for (size_t i = 0; i < src->nentries; i++) {
                merge_put(f, src->entries[i].key, src->entries[i].key_mark, src->entries[i].value);
                src->entries[i].value = NULL;
            }
        }
    }
    for (size_t i = 0; i < nown; i++) {
        merge_put(f, own[i].key, own[i].key_mark, own[i].value);
        free(own[i].key);
    }
    free(own);
}

static int on_scalar(struct builder *b, yaml_event_t *ev)
{
    struct ymark m = mark_of(ev->start_mark);
    const char *val = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    if (memchr(val, '\0', len))
        return build_err(b, m, NULL, "NUL characters are not supported in values");
    if (charge(b, 1, m) < 0)
        return -1;
    struct ynode *n = ynode_new(Y_STR, m);
    n->text = xstrndup(val, len);
    n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    const char *tag = (const char *)ev->data.scalar.tag;
    if (tag) {
        if (apply_tag(b, n, tag) < 0) {
            ynode_free(n);
            return -1;
        }
    } else if (n->plain) {
        resolve_plain(n);
    }
    if (ev->data.scalar.anchor &&
        anchor_register(b, (const char *)ev->data.scalar.anchor, n) < 0) {
        ynode_free(n);
        return -1;
    }
    return deliver(b, n);
}

static int on_start(struct builder *b, yaml_event_t *ev, enum ykind kind)
{
    struct ymark m = mark_of(ev->start_mark);
    const char *tag = (const char *)(kind == Y_MAP ? ev->data.mapping_start.tag
                                                   : ev->data.sequence_start.tag);
    const char *anchor = (const char *)(kind == Y_MAP ? ev->data.mapping_start.anchor
                                                      : ev->data.sequence_start.anchor);
    if (!collection_tag_ok(tag, kind == Y_MAP ? "map" : "seq"))
        return build_err(b, m, NULL, "unsupported YAML tag %.80s", tag);
    if (b->depth == MAX_DEPTH)
        return build_err(b, m, NULL, "nesting deeper than %d levels", MAX_DEPTH);
    if (b->depth > 0) {
        struct frame *p = &b->stack[b->depth - 1];
        if (p->node->kind == Y_MAP && !p->have_key)
            return build_err(b, m, NULL, "a mapping key must be a plain value, not a list or mapping");
    }
    if (charge(b, 1, m) < 0)
        return -1;
    struct frame *f = &b->stack[b->depth++];
    memset(f, 0, sizeof *f);
    f->node = ynode_new(kind, m);
    f->anchor = anchor ? xstrdup(anchor) : NULL;
    return 0;
}

static int on_end(struct builder *b)
{
    struct frame *f = &b->stack[b->depth - 1];
    if (f->node->kind == Y_MAP)
        apply_merges(f);
    struct ynode *n = f->node;
    f->node = NULL;
    char *anchor = f->anchor;
    f->anchor = NULL;
    frame_release(f);
    b->depth--;
    if (anchor) {
        int rc = anchor_register(b, anchor, n);
        free(anchor);
        if (rc < 0) {
            ynode_free(n);
            return -1;
        }
    }
    return deliver(b, n);
}

static int on_alias(struct builder *b, yaml_event_t *ev)
{
    struct ynode *n = NULL;
    if (alias_resolve(b, (const char *)ev->data.alias.anchor, mark_of(ev->start_mark), &n) < 0)
        return -1;
    return deliver(b, n);
}

/* libyaml reader errors carry a byte offset, not a line. */
static struct ymark offset_mark(const struct builder *b, size_t off)
{
    struct ymark m = {1, 1};
    for (size_t i = 0; i < off && i < b->len; i++) {
        if (b->buf[i] == '\n') {
            m.line++;
            m.col = 1;
        } else {
            m.col++;
        }
    }
    return m;
}

static int syntax_error(struct builder *b, yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        return errf(b->e, "%s: out of memory while parsing YAML", b->name);
    if (p->error == YAML_READER_ERROR) {
        struct ymark m = offset_mark(b, p->problem_offset);
        if (p->problem_value != -1)
            return errf(b->e, "%s:%d:%d: YAML error: %s (byte #x%02X); the file must be UTF-8 "
                        "text", b->name, m.line, m.col, p->problem ? p->problem : "unreadable input",
                        (unsigned)p->problem_value);
        return errf(b->e, "%s:%d:%d: YAML error: %s", b->name, m.line, m.col,
                    p->problem ? p->problem : "unreadable input");
    }
    const char *hint = "";
    if (p->problem_mark.index < b->len && b->buf[p->problem_mark.index] == '\t')
        hint = "; YAML does not allow tabs for indentation";
    struct ymark m = mark_of(p->problem_mark);
    if (p->context)
        return errf(b->e, "%s:%d:%d: YAML syntax error: %s (%s, line %d column %d)%s", b->name,
                    m.line, m.col, p->problem ? p->problem : "invalid YAML", p->context,
                    (int)p->context_mark.line + 1, (int)p->context_mark.column + 1, hint);
    return errf(b->e, "%s:%d:%d: YAML syntax error: %s%s", b->name, m.line, m.col,
                p->problem ? p->problem : "invalid YAML", hint);
}

int yaml_parse(const char *name, const char *buf, size_t len, struct ynode **out,
               struct errbuf *e)
{
    *out = NULL;
    struct builder *b = xcalloc(1, sizeof *b);
    b->name = name;
    b->buf = buf;
    b->len = len;
    b->e = e;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        free(b);
        return errf(e, "%s: cannot initialise the YAML parser", name);
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
    int rc = 0, done = 0;
    while (!done && rc == 0) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = syntax_error(b, &parser);
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = 1;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (b->ndocs++ > 0) {
                struct ymark m = mark_of(ev.start_mark);
                rc = errf(e, "%s:%d:%d: a config file holds one YAML document; found a second",
                          name, m.line, m.col);
            }
            break;
        case YAML_SCALAR_EVENT:
            rc = on_scalar(b, &ev);
            break;
        case YAML_SEQUENCE_START_EVENT:
            rc = on_start(b, &ev, Y_SEQ);
            break;
        case YAML_MAPPING_START_EVENT:
            rc = on_start(b, &ev, Y_MAP);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            rc = on_end(b);
            break;
        case YAML_ALIAS_EVENT:
            rc = on_alias(b, &ev);
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    while (b->depth > 0)
        frame_release(&b->stack[--b->depth]);
    for (size_t i = 0; i < b->nanchors; i++) {
        free(b->anchors[i].name);
        ynode_free(b->anchors[i].node);
    }
    free(b->anchors);
    if (rc == 0)
        *out = b->root;
    else
        ynode_free(b->root);
    free(b);
    return rc;
}

int yaml_parse_file(const char *path, struct ynode **out, struct errbuf *e)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) < 0)
        return errf(e, "%s: cannot read: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return errf(e, "%s: is a directory, not a file", path);
    if (!S_ISREG(st.st_mode))
        return errf(e, "%s: not a regular file", path);
    if (st.st_size > MAX_FILE_BYTES)
        return errf(e, "%s: file too large (%lld bytes; at most %ld)", path,
                    (long long)st.st_size, MAX_FILE_BYTES);
    size_t len;
    char *buf = read_file(path, &len);
    if (!buf)
        return errf(e, "%s: cannot read: %s", path, strerror(errno));
    int rc = yaml_parse(path, buf, len, out, e);
    free(buf);
    return rc;
}
