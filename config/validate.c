/* validate.c: the schema engine. A section is a table of fields (schema_top.c,
 * schema_ts.c); this file matches keys NNI's way (case and underscores ignored),
 * type-checks each value, fills defaults and inherited shortcuts, and writes the
 * canonical JSON in NNI's field order while recording where every key was written. */
#include "config/config_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* "a string ("abc")", "a list", ... : what the user wrote, for messages. */
static const char *describe(const struct ynode *n, char *buf, size_t len)
{
    if (n && n->text && n->kind != Y_NULL) {
        char shown[48];
        size_t k = 0;
        for (const char *s = n->text; *s && k < sizeof shown - 4; s++)
            shown[k++] = isprint((unsigned char)*s) ? *s : '?';
        shown[k] = '\0';
        if (strlen(n->text) > k)
            strcat(shown, "...");
        snprintf(buf, len, "%s (\"%s\")", ynode_kind_name(n), shown);
    } else {
        snprintf(buf, len, "%s", ynode_kind_name(n));
    }
    return buf;
}

static int type_err(struct vctx *c, const struct ynode *n, const char *want)
{
    char got[96];
    return cfg_err_here(c, NULL, AT_VALUE, "must be %s, got %s", want, describe(n, got, sizeof got));
}

int64_t json_int(const cJSON *obj, const char *name, int64_t def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v) || !(v->valuedouble > -1e18 && v->valuedouble < 1e18))
        return def; /* also keeps the cast below defined */
    return (int64_t)v->valuedouble;
}

/* path_abs keeps "a/./b/../c" when the path does not exist yet; messages and the
 * canonical JSON should show the plain form. */
char *config_abs_path(const char *base_dir, const char *path)
{
    char *abs = path_abs(base_dir, path);
    size_t n = strlen(abs);
    char **parts = xcalloc(n + 1, sizeof *parts);
    size_t np = 0;
    char *save = NULL;
    for (char *tok = strtok_r(abs, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (strcmp(tok, ".") == 0)
            continue;
        if (strcmp(tok, "..") == 0) {
            if (np)
                np--;
            continue;
        }
        parts[np++] = tok;
    }
    struct strbuf sb;
    sb_init(&sb);
    for (size_t i = 0; i < np; i++)
        sb_printf(&sb, "/%s", parts[i]);
    if (!np)
        sb_puts(&sb, "/");
    free(parts);
    free(abs);
    return sb_detach(&sb);
}

/* ---- scalars ---- */

static int get_string(struct vctx *c, const struct field *f, const struct ynode *n,
                      const char **out)
{
    /* PyYAML would hand NNI a number here; a number written where text belongs
     * (a password, a user name) is still what the user meant. */
    if (n->kind == Y_STR || ((n->kind == Y_INT || n->kind == Y_FLOAT) && n->plain))
        *out = n->text;
    else
        return type_err(c, n, "a string");
    if ((f->flags & F_NONEMPTY) && !**out)
        return cfg_err_here(c, NULL, AT_VALUE, "must not be empty");
    return 0;
}

static int get_int(struct vctx *c, const struct field *f, const struct ynode *n, int64_t *out)
{
    if (n->kind != Y_INT)
        return type_err(c, n, "an integer");
    int64_t hi = f->max ? f->max : INT53_MAX;
    int bounded = f->max && f->max < 2147483647; /* else "between 1 and 2147483647" is noise */
    if (n->big || n->i > hi) {
        if (bounded && !n->big)
            return cfg_err_here(c, NULL, AT_VALUE, "must be between %lld and %lld, got %s",
                                (long long)f->min, (long long)f->max, n->text);
        return cfg_err_here(c, NULL, AT_VALUE, "number %.40s is too large", n->text);
    }
    if (n->i < f->min) {
        if (bounded)
            return cfg_err_here(c, NULL, AT_VALUE, "must be between %lld and %lld, got %s",
                                (long long)f->min, (long long)f->max, n->text);
        return cfg_err_here(c, NULL, AT_VALUE, "must be at least %lld, got %s",
                            (long long)f->min, n->text);
    }
    *out = n->i;
    return 0;
}

static int check_path(struct vctx *c, enum ftype type, const char *abs, int is_default)
{
    if (type == FT_PATH)
        return 0;
    const char *what = is_default ? " (the default)" : "";
    struct stat st;
    if (stat(abs, &st) < 0)
        return cfg_err_here(c, NULL, AT_VALUE, "%s %s%s: %s",
                            type == FT_DIR ? "directory" : "file", abs, what, strerror(errno));
    if (type == FT_DIR && !S_ISDIR(st.st_mode))
        return cfg_err_here(c, NULL, AT_VALUE, "%s%s is not a directory", abs, what);
    if (type == FT_FILE && S_ISDIR(st.st_mode))
        return cfg_err_here(c, NULL, AT_VALUE, "%s%s is a directory, not a file", abs, what);
    /* a device or a FIFO would be read without end (/dev/zero) or block forever */
    if (type == FT_FILE && !S_ISREG(st.st_mode))
        return cfg_err_here(c, NULL, AT_VALUE, "%s%s is not a regular file", abs, what);
    if (type == FT_FILE && access(abs, R_OK) < 0)
        return cfg_err_here(c, NULL, AT_VALUE, "cannot read %s: %s", abs, strerror(errno));
    return 0;
}

/* NNI's parse_time for strings: a number and one of the units d, h, m, s. */
static int duration_string(const char *s, int64_t *secs)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    while (n && isspace((unsigned char)*s))
        s++, n--;
    if (n < 2 || !strchr("dhmsDHMS", s[n - 1]))
        return -2;
    int digits = 0, dots = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (isdigit((unsigned char)s[i]))
            digits++;
        else if (s[i] == '.')
            dots++;
        else if (!(i == 0 && (s[i] == '-' || s[i] == '+')))
            return -2;
    }
    if (!digits || dots > 1)
        return -2;
    char tmp[64];
    if (n >= sizeof tmp)
        return -2;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    return parse_duration(tmp, secs) < 0 ? -1 : 0;
}

int duration_parse(const cJSON *v, int64_t *seconds)
{
    if (cJSON_IsNumber(v)) {
        if (v->valuedouble <= 0 || v->valuedouble != floor(v->valuedouble) ||
            v->valuedouble > (double)INT53_MAX)
            return -1;
        *seconds = (int64_t)v->valuedouble;
        return 0;
    }
    if (cJSON_IsString(v))
        return duration_string(v->valuestring, seconds) == 0 ? 0 : -1;
    return -1;
}

/* A duration or a size written as a whole number of units: into *out (1); 0 when n is
 * a string (for the caller to parse); -1 after the error. */
static int whole_units(struct vctx *c, const struct ynode *n, const char *units, const char *hint, cJSON **out)
{
    if (n->kind == Y_INT) {
        if (n->big || n->i <= 0 || n->i > INT53_MAX)
            return cfg_err_here(c, NULL, AT_VALUE, "must be a positive number of %s, got %s", units, n->text);
        *out = cJSON_CreateNumber((double)n->i);
        return 1;
    }
    return n->kind == Y_STR ? 0 : type_err(c, n, hint);
}

static int get_duration(struct vctx *c, const struct ynode *n, cJSON **out)
{
    static const char hint[] = "a duration such as \"30m\", \"1.5h\", \"2d\" or whole seconds";
    int whole = whole_units(c, n, "seconds", hint, out);
    if (whole != 0)
        return whole < 0 ? -1 : 0;
    int64_t secs;
    int rc = duration_string(n->text, &secs);
    if (rc == -2)
        return cfg_err_here(c, NULL, AT_VALUE, "bad duration \"%.40s\"; must be %s", n->text, hint);
    if (rc < 0)
        return cfg_err_here(c, NULL, AT_VALUE, "duration \"%.40s\" must be positive", n->text);
    *out = cJSON_CreateString(n->text);
    return 0;
}

/* NNI's parse_memory_size for strings: a number and one of tb, gb, mb, kb, b. */
static int size_string_ok(const char *s)
{
    static const char *const units[] = {"tb", "gb", "mb", "kb", "b"};
    size_t n = strlen(s);
    char low[64];
    if (n == 0 || n >= sizeof low)
        return 0;
    for (size_t i = 0; i <= n; i++)
        low[i] = (char)tolower((unsigned char)s[i]);
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        size_t ul = strlen(units[u]);
        if (n <= ul || strcmp(low + n - ul, units[u]) != 0)
            continue;
        low[n - ul] = '\0';
        int digits = 0, dots = 0;
        for (const char *p = low; *p; p++) {
            if (isdigit((unsigned char)*p))
                digits++;
            else if (*p == '.')
                dots++;
            else
                return 0;
        }
        return digits && dots <= 1 && strtod(low, NULL) > 0;
    }
    return 0;
}

static int get_size(struct vctx *c, const struct ynode *n, cJSON **out)
{
    static const char hint[] = "a size such as \"8gb\", \"512mb\" or whole megabytes";
    int whole = whole_units(c, n, "megabytes", hint, out);
    if (whole != 0)
        return whole < 0 ? -1 : 0;
    if (!size_string_ok(n->text))
        return cfg_err_here(c, NULL, AT_VALUE, "bad size \"%.40s\"; must be %s", n->text, hint);
    *out = cJSON_CreateString(n->text);
    return 0;
}

static int add_gpu(struct vctx *c, cJSON *arr, int64_t idx, const char *text)
{
    if (idx < 0 || idx > 4096)
        return cfg_err_here(c, NULL, AT_VALUE, "bad GPU index %s (must be 0..4096)", text);
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
        if ((int64_t)it->valuedouble == idx)
            return cfg_err_here(c, NULL, AT_VALUE, "GPU index %lld is listed twice", (long long)idx);
    cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)idx));
    return 0;
}

static int get_gpus(struct vctx *c, const struct ynode *n, cJSON **out)
{
    static const char hint[] = "a list of GPU indices, a string like \"0,1\" or an integer";
    cJSON *arr = cJSON_CreateArray();
    int rc = 0;
    if (n->kind == Y_INT) {
        rc = add_gpu(c, arr, n->big ? -1 : n->i, n->text);
    } else if (n->kind == Y_STR) {
        const char *p = n->text;
        while (rc == 0) {
            while (isspace((unsigned char)*p))
                p++;
            const char *start = p;
            int64_t v = 0;
            while (isdigit((unsigned char)*p) && v <= 100000)
                v = v * 10 + (*p++ - '0');
            const char *end = p;
            while (isspace((unsigned char)*p))
                p++;
            if (end == start || (*p && *p != ',')) {
                rc = cfg_err_here(c, NULL, AT_VALUE, "bad GPU index list \"%.40s\"; must be %s",
                                  n->text, hint);
                break;
            }
            char tok[32];
            snprintf(tok, sizeof tok, "%.*s", (int)(end - start), start);
            rc = add_gpu(c, arr, v, tok);
            if (!*p)
                break;
            p++;
        }
    } else if (n->kind == Y_SEQ) {
        for (size_t i = 0; i < n->nitems && rc == 0; i++) {
            const struct ynode *it = n->items[i];
            size_t old = path_push_index(&c->path, i);
            struct ymark none = {0, 0};
            marks_set(c->marks, c->path.buf, none, it->mark, it->origin);
            if (it->kind != Y_INT)
                rc = type_err(c, it, "a GPU index (integer)");
            else
                rc = add_gpu(c, arr, it->big ? -1 : it->i, it->text);
            path_pop(&c->path, old);
        }
    } else {
        rc = type_err(c, n, hint);
    }
    if (rc == 0 && cJSON_GetArraySize(arr) == 0)
        rc = cfg_err_here(c, NULL, AT_VALUE, "must list at least one GPU index");
    if (rc < 0) {
        cJSON_Delete(arr);
        return -1;
    }
    *out = arr;
    return 0;
}

static int get_enum(struct vctx *c, const struct field *f, const struct ynode *n, cJSON **out)
{
    char shown[160];
    snprintf(shown, sizeof shown, "%s", f->choices);
    for (char *p = shown; *p; p++)
        if (*p == '|')
            *p = ',';
    const char *s;
    if (n->kind == Y_STR)
        s = n->text;
    else
        return type_err(c, n, "one of these strings:");
    const char *p = f->choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (strlen(s) == len && strncmp(s, p, len) == 0) {
            *out = cJSON_CreateString(s);
            return 0;
        }
        if (strlen(s) == len && strncasecmp(s, p, len) == 0)
            return cfg_err_here(c, NULL, AT_VALUE, "must be one of %s; got \"%.40s\" (did you mean "
                                "\"%.*s\"?)", shown, s, (int)len, p);
        p += len + (bar ? 1 : 0);
    }
    return cfg_err_here(c, NULL, AT_VALUE, "must be one of %s; got \"%.40s\"", shown, s);
}

/* ---- free-form values ---- */

int ynode_to_json(struct vctx *c, const struct ynode *n, cJSON **out)
{
    *out = NULL;
    switch (n->kind) {
    case Y_NULL:
        *out = cJSON_CreateNull();
        return 0;
    case Y_BOOL:
        *out = cJSON_CreateBool(n->b);
        return 0;
    case Y_INT:
    case Y_FLOAT:
        if (!isfinite(n->d))
            return cfg_err_here(c, NULL, AT_VALUE, "number %.40s cannot be represented in JSON",
                                n->text);
        *out = cJSON_CreateNumber(n->d);
        return 0;
    case Y_STR:
        *out = cJSON_CreateString(n->text);
        return 0;
    case Y_SEQ:
    case Y_MAP:
        break;
    }
    cJSON *res = n->kind == Y_SEQ ? cJSON_CreateArray() : cJSON_CreateObject();
    size_t count = n->kind == Y_SEQ ? n->nitems : n->nentries;
    struct ymark none = {0, 0};
    for (size_t i = 0; i < count; i++) {
        const struct ynode *child = n->kind == Y_SEQ ? n->items[i] : n->entries[i].value;
        size_t old = n->kind == Y_SEQ ? path_push_index(&c->path, i)
                                      : path_push_key(&c->path, n->entries[i].key);
        marks_set(c->marks, c->path.buf, n->kind == Y_SEQ ? none : n->entries[i].key_mark,
                  child->mark, child->origin);
        cJSON *v;
        int rc = ynode_to_json(c, child, &v);
        path_pop(&c->path, old);
        if (rc < 0) {
            cJSON_Delete(res);
            return -1;
        }
        if (n->kind == Y_SEQ)
            cJSON_AddItemToArray(res, v);
        else
            cJSON_AddItemToObject(res, n->entries[i].key, v);
    }
    *out = res;
    return 0;
}

/* ---- fields ---- */

/* A list of sections (machineList, taskRoles, ...): each item validated by f->sub. */
static int get_list(struct vctx *c, const struct field *f, const struct ynode *n, cJSON **out)
{
    if (n->kind != Y_SEQ)
        return type_err(c, n, "a list");
    if ((f->flags & F_NONEMPTY) && n->nitems == 0)
        return cfg_err_here(c, NULL, AT_VALUE, "must not be an empty list");
    cJSON *arr = cJSON_CreateArray();
    struct ymark none = {0, 0};
    for (size_t i = 0; i < n->nitems; i++) {
        size_t old = path_push_index(&c->path, i);
        marks_set(c->marks, c->path.buf, none, n->items[i]->mark, n->items[i]->origin);
        cJSON *obj = cJSON_CreateObject();
        int rc = validate_section(c, n->items[i], f->sub, obj);
        path_pop(&c->path, old);
        if (rc < 0) {
            cJSON_Delete(obj);
            cJSON_Delete(arr);
            return -1;
        }
        cJSON_AddItemToArray(arr, obj);
    }
    *out = arr;
    return 0;
}

int validate_value(struct vctx *c, const struct field *f, const struct ynode *n, cJSON **out)
{
    *out = NULL;
    const char *s = NULL;
    int64_t iv = 0;
    switch (f->type) {
    case FT_STR:
        if (get_string(c, f, n, &s) < 0)
            return -1;
        *out = cJSON_CreateString(s);
        return 0;
    case FT_INT:
        if (get_int(c, f, n, &iv) < 0)
            return -1;
        *out = cJSON_CreateNumber((double)iv);
        return 0;
    case FT_BOOL:
        if (n->kind != Y_BOOL)
            return type_err(c, n, "true or false");
        *out = cJSON_CreateBool(n->b);
        return 0;
    case FT_PATH:
    case FT_DIR:
    case FT_FILE: {
        struct field nonempty = *f;
        nonempty.flags |= F_NONEMPTY;
        if (get_string(c, &nonempty, n, &s) < 0)
            return -1;
        char *abs = config_abs_path(c->base_dir, s);
        int rc = check_path(c, f->type, abs, 0);
        if (rc == 0)
            *out = cJSON_CreateString(abs);
        free(abs);
        return rc;
    }
    case FT_DURATION:
        return get_duration(c, n, out);
    case FT_SIZE:
        return get_size(c, n, out);
    case FT_GPUS:
        return get_gpus(c, n, out);
    case FT_ENUM:
        return get_enum(c, f, n, out);
    case FT_MAPPING:
        if (n->kind != Y_MAP)
            return type_err(c, n, "a mapping");
        return ynode_to_json(c, n, out);
    case FT_SECTION: {
        cJSON *obj = cJSON_CreateObject();
        if (validate_section(c, n, f->sub, obj) < 0) {
            cJSON_Delete(obj);
            return -1;
        }
        *out = obj;
        return 0;
    }
    case FT_LIST:
        return get_list(c, f, n, out);
    case FT_CUSTOM:
        break;
    }
    return cfg_err_here(c, NULL, AT_VALUE, "internal error: field type %d", (int)f->type);
}

static int apply_default(struct vctx *c, const struct field *f, cJSON **out)
{
    cJSON *d = cJSON_Parse(f->def);
    if (!d)
        return cfg_err_here(c, NULL, AT_VALUE, "internal error: bad default %s", f->def);
    if ((f->type == FT_PATH || f->type == FT_DIR || f->type == FT_FILE) && cJSON_IsString(d)) {
        /* the experiments live beside the database unless the config says otherwise:
         * $NNI_HOME (trialq's home) replaces NNI's fixed ~/nni-experiments */
        const char *home = getenv("NNI_HOME");
        char *abs = strcmp(f->name, "experimentWorkingDirectory") == 0 && home && *home
                        ? trialq_home(NULL)
                        : config_abs_path(c->base_dir, d->valuestring);
        cJSON_Delete(d);
        if (check_path(c, f->type, abs, 1) < 0) {
            free(abs);
            return -1;
        }
        d = cJSON_CreateString(abs);
        free(abs);
    }
    *out = d;
    return 0;
}

static const struct field *find_field(const struct schema *s, const char *key)
{
    for (const struct field *f = s->fields; f->name; f++)
        if (key_fold_eq(f->name, key))
            return f;
    return NULL;
}

static int unknown_key(struct vctx *c, const struct schema *s, const char *key)
{
    const char *best = NULL;
    int bestd = 1 << 20, nfields = 0;
    size_t klen = strlen(key);
    for (const char *const *r = s->renamed; r && r[0]; r += 2)
        if (key_fold_eq(key, r[0]))
            return cfg_err_here(c, NULL, AT_KEY, "unknown key in %s; %s", s->what, r[1]);
    for (const struct field *f = s->fields; f->name; f++, nfields++) {
        int d = key_distance(key, f->name);
        if (d < bestd) {
            bestd = d;
            best = f->name;
        }
    }
    int limit = (int)(klen / 3) > 2 ? (int)(klen / 3) : 2;
    if (best && bestd <= limit)
        return cfg_err_here(c, NULL, AT_KEY, "unknown key in %s; did you mean '%s'?", s->what, best);
    if (nfields > 14)
        return cfg_err_here(c, NULL, AT_KEY, "unknown key in %s", s->what);
    struct strbuf known;
    sb_init(&known);
    for (const struct field *f = s->fields; f->name; f++)
        sb_printf(&known, "%s%s", f == s->fields ? "" : ", ", f->name);
    cfg_err_here(c, NULL, AT_KEY, "unknown key in %s (known keys: %s)", s->what, known.buf);
    sb_free(&known);
    return -1;
}

int validate_section(struct vctx *c, const struct ynode *map, const struct schema *s, cJSON *obj)
{
    if (map->kind != Y_MAP) {
        char what[64];
        snprintf(what, sizeof what, "a mapping (%s)", s->what);
        return type_err(c, map, what);
    }
    /* Keys first: a misspelt key explains a "missing" one better than the missing one. */
    for (size_t i = 0; i < map->nentries; i++) {
        const struct yentry *en = &map->entries[i];
        const struct field *f = find_field(s, en->key);
        size_t old = path_push_key(&c->path, f ? f->name : en->key);
        if (!f || ymap_find(map, f->name) == en) /* a repeated key keeps the first mark */
            marks_set(c->marks, c->path.buf, en->key_mark, en->value->mark, en->value->origin);
        int rc = 0;
        if (!f) {
            rc = unknown_key(c, s, en->key);
        } else if (ymap_find(map, f->name) != en) {
            const struct yentry *first = ymap_find(map, f->name);
            path_pop(&c->path, old);
            path_push_key(&c->path, en->key); /* name it as written: the other is canonical */
            rc = cfg_err_mark(c, en->key_mark, c->path.buf, NULL,
                              "same key as '%s' on line %d (keys ignore case and '_')",
                              first->key, first->key_mark.line);
        }
        path_pop(&c->path, old);
        if (rc < 0)
            return -1;
    }
    for (const struct field *f = s->fields; f->name; f++) {
        const struct yentry *en = ymap_find(map, f->name);
        const struct ynode *n = en && en->value->kind != Y_NULL ? en->value : NULL;
        size_t old = path_push_key(&c->path, f->name);
        cJSON *v = NULL;
        int rc = 0;
        if (f->type == FT_CUSTOM) {
            rc = f->custom(c, map, n, obj, &v);
        } else if (n) {
            rc = validate_value(c, f, n, &v);
        } else {
            const cJSON *pv = (f->flags & F_INHERIT) && c->top
                                  ? cJSON_GetObjectItemCaseSensitive(c->top, f->name) : NULL;
            if (pv && !cJSON_IsNull(pv))
                v = cJSON_Duplicate(pv, 1);
            else if (f->def)
                rc = apply_default(c, f, &v);
            else if ((f->flags & F_REQUIRED) && (f->flags & F_INHERIT))
                rc = cfg_err(c, f->name, AT_VALUE, "required field is missing (set it at the top "
                             "level or in trainingService)");
            else if (f->flags & F_REQUIRED)
                rc = cfg_err_here(c, NULL, AT_VALUE, "required field is missing in %s", s->what);
        }
        path_pop(&c->path, old);
        if (rc < 0) {
            cJSON_Delete(v);
            return -1;
        }
        if (v)
            cJSON_AddItemToObject(obj, f->name, v);
    }
    return s->check ? s->check(c, map, obj) : 0;
}
