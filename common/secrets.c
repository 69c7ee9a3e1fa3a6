/* secrets.c: an experiment's secret config values in a file of their own beside the
 * database (common/secrets.h). */
#include "common/secrets.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SECRETS_FORMAT "trialq-secrets-1"

static char *secrets_dir(const char *home)
{
    return path_join(home, "secrets");
}

char *secrets_path(const char *home, const char *exp_id)
{
    return xasprintf("%s/secrets/%s.json", home, exp_id);
}

int secrets_store(const char *home, const char *exp_id, const cJSON *list, struct errbuf *e)
{
    if (!is_experiment_id(exp_id))
        return errf(e, "secrets: '%s' is not an experiment id", exp_id);
    if (!list || cJSON_GetArraySize(list) == 0)
        return secrets_remove(home, exp_id) < 0 ? errf(e, "cannot remove secrets of %s: %s", exp_id, strerror(errno))
                                                : 0;
    char *dir = secrets_dir(home);
    /* 0700 even where the umask or an earlier mkdir said otherwise */
    int rc = mkdir_p(dir, 0700) < 0 || chmod(dir, 0700) < 0 ? -1 : 0;
    if (rc < 0)
        errf(e, "cannot create %s: %s", dir, strerror(errno));
    free(dir);
    if (rc < 0)
        return -1;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "format", SECRETS_FORMAT);
    cJSON_AddStringToObject(doc, "experiment", exp_id);
    cJSON_AddItemToObject(doc, "secrets", cJSON_Duplicate(list, 1));
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    char *path = secrets_path(home, exp_id);
    rc = write_file_atomic(path, text, strlen(text), 0600);
    if (rc < 0)
        errf(e, "cannot write %s: %s", path, strerror(errno));
    /* the text held the values: not left in freed memory */
    memset(text, 0, strlen(text));
    free(text);
    free(path);
    return rc;
}

int secrets_remove(const char *home, const char *exp_id)
{
    if (!is_experiment_id(exp_id)) {
        errno = EINVAL;
        return -1;
    }
    char *path = secrets_path(home, exp_id);
    int rc = unlink(path) < 0 && errno != ENOENT ? -1 : 0;
    free(path);
    return rc;
}

/* The item that path names in config, with its parent; NULL when there is none. */
static cJSON *at_path(cJSON *config, const cJSON *path, cJSON **parent)
{
    cJSON *node = config, *up = NULL;
    const cJSON *step;
    cJSON_ArrayForEach(step, path) {
        up = node;
        if (cJSON_IsString(step) && cJSON_IsObject(node))
            node = cJSON_GetObjectItemCaseSensitive(node, step->valuestring);
        else if (cJSON_IsNumber(step) && cJSON_IsArray(node) && step->valuedouble >= 0)
            node = cJSON_GetArrayItem(node, (int)step->valuedouble);
        else
            node = NULL;
        if (!node)
            return NULL;
    }
    *parent = up;
    return node;
}

static int is_placeholder(const cJSON *v)
{
    return cJSON_IsString(v) && strcmp(v->valuestring, SECRET_PLACEHOLDER) == 0;
}

int secrets_place_holds(const cJSON *at, const cJSON *entry)
{
    const cJSON *masked = cJSON_GetObjectItemCaseSensitive(entry, "masked");
    return is_placeholder(at) || (cJSON_IsString(at) && cJSON_IsString(masked) &&
                                  strcmp(at->valuestring, masked->valuestring) == 0);
}

/* Takes the placeholders that are left out of node: how many. */
static int strip_placeholders(cJSON *node)
{
    int n = 0;
    cJSON *next;
    for (cJSON *it = node->child; it; it = next) {
        next = it->next;
        if (is_placeholder(it)) {
            cJSON_Delete(cJSON_DetachItemViaPointer(node, it));
            n++;
        } else if (cJSON_IsObject(it) || cJSON_IsArray(it)) {
            n += strip_placeholders(it);
        }
    }
    return n;
}

int secrets_has_placeholder(const cJSON *config)
{
    if (is_placeholder(config))
        return 1;
    const cJSON *it;
    if (cJSON_IsObject(config) || cJSON_IsArray(config))
        for (it = config->child; it; it = it->next)
            if (secrets_has_placeholder(it))
                return 1;
    return 0;
}

int secrets_merge_file(const char *home, const char *exp_id, cJSON *config, int *unset, struct errbuf *e)
{
    if (unset)
        *unset = 0;
    /* no early end without a placeholder: a text with a secret inside is stored masked */
    if (!is_experiment_id(exp_id))
        return secrets_has_placeholder(config) ? errf(e, "secrets: '%.40s' is not an experiment id", exp_id) : 0;
    char *path = secrets_path(home, exp_id);
    size_t len;
    char *text = read_file(path, &len);
    int merged = 0;
    if (!text && errno != ENOENT) {
        errf(e, "cannot read %s: %s", path, strerror(errno));
        free(path);
        return -1;
    }
    if (text) {
        cJSON *doc = cJSON_Parse(text);
        memset(text, 0, len);
        free(text);
        const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(doc, "format");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(doc, "experiment");
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "secrets");
        if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, SECRETS_FORMAT) != 0 || !cJSON_IsString(id) ||
            strcmp(id->valuestring, exp_id) != 0 || !cJSON_IsArray(list)) {
            cJSON_Delete(doc);
            errf(e, "%s is not the secrets file of experiment %s", path, exp_id);
            free(path);
            return -1;
        }
        const cJSON *s;
        cJSON_ArrayForEach(s, list) {
            cJSON *parent = NULL;
            cJSON *at = at_path(config, cJSON_GetObjectItemCaseSensitive(s, "path"), &parent);
            const cJSON *value = cJSON_GetObjectItemCaseSensitive(s, "value");
            if (!at || !value || !secrets_place_holds(at, s))
                continue;
            cJSON *v = cJSON_Duplicate(value, 1);
            if (at->string) {
                /* the key allocated the cJSON way, as the item it replaces */
                cJSON *holder = cJSON_CreateObject();
                cJSON_AddItemToObject(holder, at->string, v);
                v = cJSON_DetachItemFromArray(holder, 0);
                cJSON_Delete(holder);
            }
            cJSON_ReplaceItemViaPointer(parent, at, v);
            merged++;
        }
        cJSON_Delete(doc);
    }
    free(path);
    int left = strip_placeholders(config);
    if (unset)
        *unset = left;
    return merged;
}

char *secrets_merged_json(const char *home, const char *exp_id, const char *config_json, struct errbuf *e)
{
    cJSON *cfg = cJSON_Parse(config_json);
    if (!cfg) {
        errf(e, "experiment %s: the stored config is not JSON", exp_id);
        return NULL;
    }
    int unset = 0;
    if (secrets_merge_file(home, exp_id, cfg, &unset, e) < 0) {
        cJSON_Delete(cfg);
        return NULL;
    }
    if (unset)
        log_warn("experiment %s: no secrets file (secrets/%s.json in the trialq home): %d secret value%s of its "
                 "config left unset; the platform reads them from its environment variables where it has any "
                 "(docs/security.md)",
                 exp_id, exp_id, unset, unset == 1 ? "" : "s");
    char *out = cJSON_PrintUnformatted(cfg);
    cJSON_Delete(cfg);
    return out;
}

int secrets_sweep(const char *home, int min_age_s, int (*is_known)(void *ctx, const char *id), void *ctx)
{
    char *dir = secrets_dir(home);
    DIR *d = opendir(dir);
    int n = 0;
    time_t now = time(NULL);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        char id[16];
        const char *dot = strchr(de->d_name, '.');
        if (!dot || (size_t)(dot - de->d_name) >= sizeof id)
            continue;
        memcpy(id, de->d_name, (size_t)(dot - de->d_name));
        id[dot - de->d_name] = 0;
        /* <id>.json, or write_file_atomic's <id>.json.tmp.<pid> */
        if (!is_experiment_id(id) || (strcmp(dot, ".json") != 0 && strncmp(dot, ".json.tmp.", 10) != 0))
            continue;
        char *p = path_join(dir, de->d_name);
        struct stat st;
        int tmp = dot[5] != 0;
        if (stat(p, &st) == 0 && now - st.st_mtime >= min_age_s && (tmp || !is_known(ctx, id)) && unlink(p) == 0)
            n++;
        free(p);
    }
    if (d)
        closedir(d);
    free(dir);
    return n;
}
