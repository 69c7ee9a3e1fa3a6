/* config.c: the public face of config/: load a file (parse, convert v1, validate into
 * the canonical JSON), rebuild the struct from stored JSON, positions of keys, and
 * the redacted copy that is safe to print. */
#include "config/config.h"

#include <ctype.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_int.h"
#include "common/secrets.h"

#define REDACTED "********"

/* ---- struct <- canonical JSON (shared by config_load and config_from_json) ---- */

static char *dup_str(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

/* The first (or only) training service: where shortcut fields may live instead. */
static const cJSON *first_ts(const cJSON *canon)
{
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(canon, "trainingService");
    return cJSON_IsArray(ts) ? cJSON_GetArrayItem(ts, 0) : ts;
}

static char *dup_str_or_ts(const cJSON *canon, const char *name)
{
    char *s = dup_str(canon, name);
    return s ? s : dup_str(first_ts(canon), name);
}

static int fill_algo(struct algo_config *a, const cJSON *obj, const char *what, struct errbuf *e)
{
    memset(a, 0, sizeof *a);
    if (!obj || cJSON_IsNull(obj))
        return 0;
    if (!cJSON_IsObject(obj))
        return errf(e, "config JSON: %s must be an object", what);
    a->set = 1;
    a->name = dup_str(obj, "name");
    a->class_name = dup_str(obj, "className");
    a->code_directory = dup_str(obj, "codeDirectory");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(obj, "classArgs");
    a->class_args = cJSON_IsObject(args) ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
    if (!a->name && !a->class_name)
        return errf(e, "config JSON: %s has neither name nor className", what);
    return 0;
}

static void free_algo(struct algo_config *a)
{
    free(a->name);
    free(a->class_name);
    free(a->code_directory);
    cJSON_Delete(a->class_args);
    memset(a, 0, sizeof *a);
}

static int int_member(const cJSON *obj, const char *name, int64_t lo, int64_t hi, int64_t def,
                      int64_t *out, struct errbuf *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return 0;
    }
    /* range first: casting an out-of-range double to an integer is undefined */
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= (double)lo && v->valuedouble <= (double)hi) ||
        v->valuedouble != floor(v->valuedouble))
        return errf(e, "config JSON: %s must be an integer in %lld..%lld", name, (long long)lo,
                    (long long)hi);
    *out = (int64_t)v->valuedouble;
    return 0;
}

static int duration_member(const cJSON *obj, const char *name, int64_t *out, struct errbuf *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    *out = 0;
    if (!v || cJSON_IsNull(v))
        return 0;
    if (duration_parse(v, out) < 0)
        return errf(e, "config JSON: %s is not a valid duration", name);
    return 0;
}

static int fill_struct(struct exp_config *cfg, struct errbuf *e)
{
    const cJSON *c = cfg->canonical;
    int64_t v = 0;
    cfg->experiment_name = dup_str(c, "experimentName");
    cfg->search_space = cJSON_GetObjectItemCaseSensitive(c, "searchSpace");
    cfg->trial_command = dup_str_or_ts(c, "trialCommand");
    cfg->trial_code_directory = dup_str_or_ts(c, "trialCodeDirectory");
    if (int_member(c, "trialConcurrency", 1, 2147483647, 0, &v, e) < 0)
        return -1;
    if (v == 0)
        return errf(e, "config JSON: trialConcurrency is missing");
    cfg->trial_concurrency = (int)v;
    const cJSON *gpu_holder = cJSON_GetObjectItemCaseSensitive(c, "trialGpuNumber") ? c
                                                                                    : first_ts(c);
    if (int_member(gpu_holder, "trialGpuNumber", 0, 2147483647, -1, &v, e) < 0)
        return -1;
    cfg->trial_gpu_number = (int)v;
    if (duration_member(c, "maxExperimentDuration", &cfg->max_experiment_seconds, e) < 0 ||
        duration_member(c, "maxTrialDuration", &cfg->max_trial_seconds, e) < 0)
        return -1;
    if (int_member(c, "maxTrialNumber", 1, INT53_MAX, 0, &cfg->max_trial_number, e) < 0)
        return -1;
    if (int_member(c, "maxTrialRetries", 0, 1000, 1, &v, e) < 0)
        return -1;
    cfg->max_trial_retries = (int)v;
    cfg->experiment_working_directory = dup_str(c, "experimentWorkingDirectory");
    if (!cfg->experiment_working_directory)
        cfg->experiment_working_directory = config_abs_path("/", "~/nni-experiments");
    cfg->log_level = dup_str(c, "logLevel");
    if (!cfg->log_level)
        cfg->log_level = xstrdup(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "debug"))
                                     ? "debug" : "info");
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(c, "trainingService");
    if (cJSON_IsArray(ts) && cJSON_GetArraySize(ts) > 0)
        cfg->platform = xstrdup("hybrid");
    else if (cJSON_IsObject(ts))
        cfg->platform = dup_str(ts, "platform");
    if (!cfg->platform)
        return errf(e, "config JSON: trainingService (with a platform) is missing");
    cfg->nni_manager_ip = dup_str_or_ts(c, "nniManagerIp");
    const cJSON *tuner = cJSON_GetObjectItemCaseSensitive(c, "tuner");
    if (!tuner)
        tuner = cJSON_GetObjectItemCaseSensitive(c, "advisor");
    if (fill_algo(&cfg->tuner, tuner, "tuner", e) < 0 ||
        fill_algo(&cfg->assessor, cJSON_GetObjectItemCaseSensitive(c, "assessor"), "assessor",
                  e) < 0)
        return -1;
    if (!cfg->tuner.set)
        return errf(e, "config JSON: tuner is missing");
    return 0;
}

void config_free(struct exp_config *cfg)
{
    if (!cfg)
        return;
    cJSON_Delete(cfg->canonical);
    free(cfg->source_path);
    free(cfg->experiment_name);
    free(cfg->trial_command);
    free(cfg->trial_code_directory);
    free(cfg->experiment_working_directory);
    free(cfg->log_level);
    free(cfg->platform);
    free(cfg->nni_manager_ip);
    free_algo(&cfg->tuner);
    free_algo(&cfg->assessor);
    for (int i = 0; i < cfg->nwarnings; i++)
        free(cfg->warnings[i]);
    free(cfg->warnings);
    marks_free(cfg->marks);
    free(cfg);
}

/* ---- loading ---- */

static int load_tree(const char *path, char *abs, const char *base, struct ynode *root, struct exp_config **out,
                     struct errbuf *e);

int config_load(const char *path, struct exp_config **out, struct errbuf *e)
{
    *out = NULL;
    struct ynode *root = NULL;
    if (yaml_parse_file(path, &root, e) < 0)
        return -1;
    /* relative paths are the YAML file's directory's as the user named it (NNI's
     * Path(config).parent): a config that is a symbolic link is read from where the
     * link is, not from where it points */
    char *dircopy = xstrdup(path);
    char *base = path_abs(".", dirname(dircopy));
    free(dircopy);
    int rc = load_tree(path, config_abs_path(".", path), base, root, out, e);
    free(base);
    return rc;
}

int config_load_text(const char *name, const char *text, size_t len, struct exp_config **out, struct errbuf *e)
{
    *out = NULL;
    struct ynode *root = NULL;
    if (yaml_parse(name, text, len, &root, e) < 0)
        return -1;
    char *base = path_abs(".", ".");
    int rc = load_tree(name, xstrdup(name), base, root, out, e);
    free(base);
    return rc;
}

/* The parsed tree (taken) into *out: path names it in errors, abs (taken) becomes its
 * source_path, relative paths in it are base's. */
static int load_tree(const char *path, char *abs, const char *base, struct ynode *root, struct exp_config **out,
                     struct errbuf *e)
{
    if (!root) {
        free(abs);
        return errf(e, "%s:1:1: the file is empty; expected a mapping of config keys "
                    "(trialConcurrency, trainingService, ...)", path);
    }
    if (root->kind != Y_MAP) {
        errf(e, "%s:%d:%d: the top level must be a mapping of config keys, got %s", path,
             root->mark.line, root->mark.col, ynode_kind_name(root));
        ynode_free(root);
        free(abs);
        return -1;
    }
    struct vctx c;
    vctx_init(&c, path, base, e);
    struct ymark none = {0, 0};
    marks_set(c.marks, "", none, root->mark, NULL);

    int is_v1 = v1_detect(root);
    if (is_v1) {
        struct ynode *v2;
        int rc = v1_convert(&c, root, &v2); /* consumes root */
        root = v2;
        if (rc < 0) {
            vctx_release(&c);
            free(abs);
            return -1;
        }
    }
    cJSON *canon = cJSON_CreateObject();
    c.top = canon;
    int rc = validate_section(&c, root, &experiment_schema, canon);
    ynode_free(root);
    if (rc < 0) {
        cJSON_Delete(canon);
        vctx_release(&c);
        free(abs);
        return -1;
    }
    struct exp_config *cfg = xcalloc(1, sizeof *cfg);
    cfg->canonical = canon;
    cfg->source_path = abs;
    cfg->is_v1 = is_v1;
    if (fill_struct(cfg, e) < 0) {
        /* cannot happen for a validated config; kept so a bug fails loudly, not later */
        vctx_release(&c);
        config_free(cfg);
        return errprefix(e, "%s: internal error", path);
    }
    cfg->warnings = c.warnings;
    cfg->nwarnings = c.nwarnings;
    c.warnings = NULL;
    c.nwarnings = 0;
    cfg->marks = c.marks;
    c.marks = NULL;
    vctx_release(&c);
    *out = cfg;
    return 0;
}

int config_from_json(const char *json, struct exp_config **out, struct errbuf *e)
{
    *out = NULL;
    if (!json)
        return errf(e, "config JSON: missing");
    cJSON *canon = cJSON_Parse(json);
    if (!canon)
        return errf(e, "config JSON: not valid JSON");
    if (!cJSON_IsObject(canon)) {
        cJSON_Delete(canon);
        return errf(e, "config JSON: must be an object");
    }
    struct exp_config *cfg = xcalloc(1, sizeof *cfg);
    cfg->canonical = canon;
    if (fill_struct(cfg, e) < 0) {
        config_free(cfg);
        return -1;
    }
    *out = cfg;
    return 0;
}

/* ---- positions ---- */

static int is_under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '.' || path[n] == '[');
}

/* tuners/searchspace.c names option i of a nested choice "layer[1].kernel"; in the
 * file it is "layer._value[1].kernel". */
static char *with_value_segments(const char *path)
{
    struct strbuf sb;
    sb_init(&sb);
    for (const char *p = path; *p; p++) {
        if (*p == '[' && p > path && p[-1] != ']' &&
            !(p - path >= 6 && strncmp(p - 6, "_value", 6) == 0))
            sb_puts(&sb, "._value");
        sb_add(&sb, p, 1);
    }
    return sb_detach(&sb);
}

int config_mark_of(const struct exp_config *cfg, const char *key_path, int *line, int *col)
{
    if (!cfg || !cfg->marks || !key_path)
        return -1;
    const struct mark_entry *en = marks_find(cfg->marks, key_path, 1);
    if (!en && is_under(key_path, "searchSpace") && strchr(key_path, '[')) {
        char *alt = with_value_segments(key_path);
        en = marks_find(cfg->marks, alt, 1);
        free(alt);
    }
    int at_value = 0;
    if (!en && is_under(key_path, "searchSpace") &&
        cJSON_GetObjectItemCaseSensitive(cfg->canonical, "searchSpaceFile")) {
        en = marks_find(cfg->marks, "searchSpaceFile", 1);
        at_value = 1; /* the problem is in the file named there */
    }
    if (!en) {
        en = marks_find(cfg->marks, key_path, 0);
        if (en && en->path[0] == '\0')
            en = NULL; /* the root tells the caller nothing */
    }
    if (!en)
        return -1;
    struct ymark m = en->key.line && !at_value ? en->key : en->value;
    if (m.line <= 0)
        return -1;
    if (line)
        *line = m.line;
    if (col)
        *col = m.col;
    return 0;
}

/* ---- redaction ---- */

/* What a key's name says of its value: SECRET_ANY, a secret whatever its type (a
 * number, a list, an object under "db_password", "credentials", "auth" go whole);
 * SECRET_TEXT, a secret when it is text, for words that also name settings ("token":
 * max_tokens: 100, a tokenizer object; "key": a sort key; "connection": max_connections:
 * 8), so strings, and the strings of a list, go; 0, not a secret.
 *
 * The rule, in this order (docs/config.md, "Secrets and redaction"). A name is read
 * lowercased as one word without '_', '-', '.' and ' ' (api_key, apiKey and API-KEY are
 * "apikey") and as its words, split there and where camelCase or digits turn (apiKey,
 * APIKey: "api" "key"; monkey and keyword are one word each):
 *   1. shown: imagePullSecrets and publicKey(s) (the allow list), and a name that names
 *      or locates a secret: it ends in name(s), ref(s), path(s), file(s), dir(s) or
 *      directory, or its last word is id(s) (secretName, token_path, password_file,
 *      sshKeyFile, accessKeyId);
 *   2. SECRET_ANY: the name contains password, passwd, passphrase, secret, credential,
 *      bearer, apikey, privatekey, secretkey or accountkey; or a word of it is auth,
 *      oauth, authorization or authentication; or it is pass, pwd or accesskey;
 *   3. SECRET_TEXT: the name contains token or connection, or a word of it is key or
 *      keys (storageAccountKey, ssh_key, keys; not monkey, keyboard, keyword). */
enum { SECRET_TEXT = 1, SECRET_ANY = 2 };

struct key_name {
    char joined[256]; /* "apikey" */
    char words[512];  /* " api key " */
};

static int is_upper(char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(char c) { return c >= 'a' && c <= 'z'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static void key_name_read(const char *key, struct key_name *k)
{
    size_t j = 0, w = 0;
    k->words[w++] = ' ';
    for (const char *c = key; *c && j < sizeof k->joined - 1 && w < sizeof k->words - 3; c++) {
        if (*c == '_' || *c == '-' || *c == '.' || *c == ' ') {
            if (k->words[w - 1] != ' ')
                k->words[w++] = ' ';
            continue;
        }
        /* a word starts at apiKey's K, APIKey's K, key2's 2 and 2fa's f */
        char prev = c > key ? c[-1] : 0;
        int starts = (is_upper(*c) && (is_lower(prev) || is_digit(prev) || (is_upper(prev) && is_lower(c[1])))) ||
                     (is_digit(*c) && (is_lower(prev) || is_upper(prev))) ||
                     (!is_digit(*c) && is_digit(prev));
        if (starts && k->words[w - 1] != ' ')
            k->words[w++] = ' ';
        char lower = (char)tolower((unsigned char)*c);
        k->joined[j++] = lower;
        k->words[w++] = lower;
    }
    k->joined[j] = 0;
    if (k->words[w - 1] != ' ')
        k->words[w++] = ' ';
    k->words[w] = 0;
}

/* one of the words, each written " word " */
static int has_word(const struct key_name *k, const char *const *words)
{
    for (const char *const *w = words; *w; w++)
        if (strstr(k->words, *w))
            return 1;
    return 0;
}

static int contains(const char *s, const char *const *parts)
{
    for (const char *const *p = parts; *p; p++)
        if (strstr(s, *p))
            return 1;
    return 0;
}

static int secret_kind(const char *key)
{
    static const char *const allowed[] = {"imagepullsecrets", "publickey", "publickeys", NULL};
    static const char *const locators[] = {"name", "names", "ref", "refs", "path", "paths", "file", "files",
                                           "dir", "dirs", "directory", NULL};
    static const char *const any_within[] = {"password", "passwd", "passphrase", "secret", "credential", "bearer",
                                             "apikey", "privatekey", "secretkey", "accountkey", NULL};
    static const char *const any_words[] = {" auth ", " oauth ", " authorization ", " authentication ", NULL};
    static const char *const any_exact[] = {"accesskey", NULL};
    static const char *const any_last[] = {" pass ", " pwd ", NULL};
    static const char *const text_within[] = {"token", "connection", NULL};
    static const char *const text_words[] = {" key ", " keys ", NULL};
    static const char *const text_last[] = {" tok ", " pat ", NULL};
    struct key_name k;
    key_name_read(key, &k);
    for (const char *const *a = allowed; *a; a++)
        if (strcmp(k.joined, *a) == 0)
            return 0;
    for (const char *const *l = locators; *l; l++)
        if (str_ends(k.joined, *l))
            return 0;
    if (str_ends(k.words, " id ") || str_ends(k.words, " ids "))
        return 0;
    if (contains(k.joined, any_within) || has_word(&k, any_words) || strstr(k.joined, "cookie"))
        return SECRET_ANY;
    for (const char *const *x = any_exact; *x; x++)
        if (strcmp(k.joined, *x) == 0)
            return SECRET_ANY;
    for (const char *const *x = any_last; *x; x++)
        if (str_ends(k.words, *x))
            return SECRET_ANY;
    for (const char *const *x = text_last; *x; x++)
        if (str_ends(k.words, *x))
            return SECRET_TEXT;
    return contains(k.joined, text_within) || has_word(&k, text_words) ? SECRET_TEXT : 0;
}

/* ---- secrets inside any text: URL passwords, HTTP credentials ---- */

static int url_scheme_char(char c)
{
    return is_lower(c) || is_upper(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
}

static int token68_char(char c)
{
    return is_lower(c) || is_upper(c) || is_digit(c) || (c && strchr("-._~+/=", c) != NULL);
}

/* The end of the password of the URL whose "://" is at s + at ("scheme://user:PASSWORD@"),
 * its start in *from; 0 when there is none. */
static size_t url_password(const char *s, size_t at, size_t *from)
{
    if (at == 0 || !url_scheme_char(s[at - 1]))
        return 0;
    size_t i = at + 3, colon = 0;
    for (; s[i] && !strchr("/?#@", s[i]) && !isspace((unsigned char)s[i]); i++)
        if (s[i] == ':' && !colon)
            colon = i;
    if (s[i] != '@' || !colon || colon + 1 == i)
        return 0;
    /* the last '@' of the authority ends the userinfo (a password may hold '@') */
    size_t end = i;
    for (size_t j = i + 1; s[j] && !strchr("/?#", s[j]) && !isspace((unsigned char)s[j]); j++)
        if (s[j] == '@')
            end = j;
    *from = colon + 1;
    return end;
}

/* The end of the credential after an HTTP scheme word at s + at ("Bearer X", "Basic X"),
 * its start in *from; 0 when there is none. "Bearer" in any case; "Basic" as written and
 * only before base64 of "user:password", since "basic" is also a plain word. */
static size_t http_credential(const char *s, size_t at, size_t *from)
{
    static const struct { const char *word; int any_case; } schemes[] = {{"bearer", 1}, {"Basic", 0}};
    if (at > 0 && (is_lower(s[at - 1]) || is_upper(s[at - 1]) || is_digit(s[at - 1])))
        return 0;
    for (size_t k = 0; k < sizeof schemes / sizeof *schemes; k++) {
        size_t n = strlen(schemes[k].word);
        if (schemes[k].any_case ? strncasecmp(s + at, schemes[k].word, n) != 0
                                : strncmp(s + at, schemes[k].word, n) != 0)
            continue;
        size_t i = at + n;
        if (s[i] != ' ' && s[i] != '\t')
            return 0;
        while (s[i] == ' ' || s[i] == '\t')
            i++;
        size_t start = i;
        while (token68_char(s[i]))
            i++;
        if (i == start)
            return 0;
        if (!schemes[k].any_case) {
            char *tok = xstrndup(s + start, i - start);
            size_t len = 0;
            char *plain = b64_decode(tok, &len);
            int user_pass = plain && len > 1 && memchr(plain, ':', len) && strlen(plain) == len;
            free(plain);
            free(tok);
            if (!user_pass)
                return 0;
        }
        *from = start;
        return i;
    }
    return 0;
}

/* s with the password of each URL ("postgres://user:***@host") and each Bearer or Basic
 * credential ("Authorization: Bearer ***") masked; NULL when it holds none. */
static char *masked_text(const char *s)
{
    struct strbuf sb;
    sb_init(&sb);
    size_t done = 0, i = 0;
    int found = 0;
    while (s[i]) {
        size_t from = 0, end = 0;
        if (s[i] == ':' && s[i + 1] == '/' && s[i + 2] == '/')
            end = url_password(s, i, &from);
        else if (s[i] == 'b' || s[i] == 'B')
            end = http_credential(s, i, &from);
        if (!end) {
            i++;
            continue;
        }
        sb_add(&sb, s + done, from - done);
        sb_puts(&sb, "***");
        done = i = end;
        found = 1;
    }
    if (!found) {
        sb_free(&sb);
        return NULL;
    }
    sb_puts(&sb, s + done);
    return sb_detach(&sb);
}

/* A value under key (NULL in a list) built through an object, so that cJSON allocates
 * the key its own way */
static cJSON *keyed(const char *key, cJSON *value)
{
    if (!key)
        return value;
    cJSON *holder = cJSON_CreateObject();
    cJSON_AddItemToObject(holder, key, value);
    cJSON *v = cJSON_DetachItemFromArray(holder, 0);
    cJSON_Delete(holder);
    return v;
}

/* The walk that finds the secrets of a config: fn(ctx, path, value, masked) for each,
 * which returns what stands in its place. path is a list of the keys (strings) and list
 * indices (numbers) from the root to the value; masked is the text with its secrets
 * masked for a string judged by its text (masked_text), NULL for a value judged by its
 * key's name (hidden whole). */
typedef cJSON *(*secret_fn)(void *ctx, const cJSON *path, const cJSON *value, const char *masked);

struct secret_walk {
    secret_fn fn;
    void *ctx;
    cJSON *path; /* the keys to the node being walked */
};

static void walk_secrets(struct secret_walk *w, cJSON *node, int depth);

static void replace_secret(struct secret_walk *w, cJSON *parent, cJSON *it, const char *masked)
{
    cJSON_AddItemToArray(w->path, it->string ? cJSON_CreateString(it->string) : cJSON_CreateNumber(0));
    cJSON *last = cJSON_GetArrayItem(w->path, cJSON_GetArraySize(w->path) - 1);
    if (!it->string) {
        int i = 0;
        for (cJSON *c = parent->child; c && c != it; c = c->next)
            i++;
        cJSON_SetNumberValue(last, i);
    }
    cJSON_ReplaceItemViaPointer(parent, it, keyed(it->string, w->fn(w->ctx, w->path, it, masked)));
    cJSON_Delete(cJSON_DetachItemFromArray(w->path, cJSON_GetArraySize(w->path) - 1));
}

/* into a child: its key (or index) on the path while it is walked */
static void walk_into(struct secret_walk *w, int index, cJSON *it, int depth, int strings)
{
    cJSON_AddItemToArray(w->path, it->string ? cJSON_CreateString(it->string) : cJSON_CreateNumber(index));
    if (strings) {
        /* the strings of a list under a SECRET_TEXT name, at any depth of lists */
        cJSON *next;
        int i = 0;
        for (cJSON *c = it->child; c; c = next, i++) {
            next = c->next;
            if (cJSON_IsString(c))
                replace_secret(w, it, c, NULL);
            else if (cJSON_IsArray(c))
                walk_into(w, i, c, depth + 1, 1);
            else if (cJSON_IsObject(c))
                walk_into(w, i, c, depth + 1, 0);
        }
    } else {
        walk_secrets(w, it, depth);
    }
    cJSON_Delete(cJSON_DetachItemFromArray(w->path, cJSON_GetArraySize(w->path) - 1));
}

static void walk_secrets(struct secret_walk *w, cJSON *node, int depth)
{
    cJSON *next;
    int i = 0;
    for (cJSON *it = node->child; it; it = next, i++) {
        next = it->next; /* it may be replaced (freed) below */
        /* parameter names are not secrets, whatever they are called */
        if (depth == 0 && it->string && strcmp(it->string, "searchSpace") == 0)
            continue;
        int kind = it->string ? secret_kind(it->string) : 0;
        int value = !cJSON_IsNull(it) && !cJSON_IsBool(it);
        char *masked;
        if ((kind == SECRET_ANY && value) || (kind == SECRET_TEXT && cJSON_IsString(it))) {
            replace_secret(w, node, it, NULL);
        } else if (kind == SECRET_TEXT && cJSON_IsArray(it)) {
            walk_into(w, i, it, depth + 1, 1);
        } else if (cJSON_IsObject(it) || cJSON_IsArray(it)) {
            walk_into(w, i, it, depth + 1, 0);
        } else if (cJSON_IsString(it) && strcmp(it->valuestring, SECRET_PLACEHOLDER) == 0) {
            replace_secret(w, node, it, NULL); /* a value taken out by its text */
        } else if (cJSON_IsString(it) && (masked = masked_text(it->valuestring))) {
            replace_secret(w, node, it, masked);
            free(masked);
        }
    }
}

static void secrets_walk(cJSON *root, secret_fn fn, void *ctx)
{
    struct secret_walk w = {fn, ctx, cJSON_CreateArray()};
    walk_secrets(&w, root, 0);
    cJSON_Delete(w.path);
}

static cJSON *redacted(void *ctx, const cJSON *path, const cJSON *value, const char *masked)
{
    (void)ctx; (void)path; (void)value;
    return cJSON_CreateString(masked ? masked : REDACTED);
}

cJSON *config_redacted(const cJSON *canonical)
{
    cJSON *copy = cJSON_Duplicate(canonical, 1);
    if (copy)
        secrets_walk(copy, redacted, NULL);
    return copy;
}

/* the value to the list, the placeholder in its place (one there already stays) */
static cJSON *taken_out(void *ctx, const cJSON *path, const cJSON *value, const char *masked)
{
    if (cJSON_IsString(value) && strcmp(value->valuestring, SECRET_PLACEHOLDER) == 0)
        return cJSON_CreateString(SECRET_PLACEHOLDER);
    /* a text with a secret inside is stored masked (config show shows where the secret
     * was), the whole text goes to the list; one masked already has nothing left */
    if (masked && strcmp(masked, value->valuestring) == 0)
        return cJSON_CreateString(masked);
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddItemToObject(entry, "path", cJSON_Duplicate(path, 1));
    cJSON_AddItemToObject(entry, "value", cJSON_Duplicate(value, 1));
    if (masked)
        cJSON_AddStringToObject(entry, "masked", masked);
    cJSON_AddItemToArray(ctx, entry);
    return cJSON_CreateString(masked ? masked : SECRET_PLACEHOLDER);
}

cJSON *config_secrets_split(cJSON *canonical)
{
    cJSON *list = cJSON_CreateArray();
    secrets_walk(canonical, taken_out, list);
    return list;
}

char *config_to_string(const struct exp_config *cfg)
{
    if (!cfg)
        return NULL;
    cJSON *r = config_redacted(cfg->canonical);
    char *s = cJSON_Print(r);
    cJSON_Delete(r);
    return s;
}
