/* algos.c: NNI's registered algorithms (`nnictl algo register`): Python tuners,
 * assessors and advisors given a built-in-like name, kept in the file NNI keeps them in,
 * registered_algorithms.yml of NNI's config directory, so that what a user registered
 * with NNI's nnictl is found by trialq and the other way round. A config naming one
 * (tuner: {name: MyTuner}) runs its class in NNI's dispatcher process. */
#include "config/config.h"
#include "config/config_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const sections[] = {"tuners", "assessors", "advisors"};

char *algo_registry_path(void)
{
    /* NNI: $NNI_CONFIG_DIR, else <sys.prefix>/nni inside a venv or conda env, else
     * ~/.config/nni */
    const char *d = getenv("NNI_CONFIG_DIR");
    if (d && *d)
        return xasprintf("%s/registered_algorithms.yml", d);
    const char *venv = getenv("VIRTUAL_ENV");
    if (!venv || !*venv)
        venv = getenv("CONDA_PREFIX");
    if (venv && *venv)
        return xasprintf("%s/nni/registered_algorithms.yml", venv);
    const char *home = getenv("HOME");
    return xasprintf("%s/.config/nni/registered_algorithms.yml", home && *home ? home : ".");
}

int yaml_file_to_json(const char *path, cJSON **out, struct errbuf *e)
{
    *out = NULL;
    struct ynode *root = NULL;
    if (yaml_parse_file(path, &root, e) < 0)
        return -1;
    struct vctx c;
    vctx_init(&c, path, "/", e);
    int rc = root ? ynode_to_json(&c, root, out) : 0;
    vctx_release(&c);
    ynode_free(root);
    return rc;
}

int algo_registry_load(cJSON **out, struct errbuf *e)
{
    *out = NULL;
    char *path = algo_registry_path();
    cJSON *reg = NULL;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (yaml_file_to_json(path, &reg, e) < 0) {
            free(path);
            return -1;
        }
        if (reg && !cJSON_IsObject(reg) && !cJSON_IsNull(reg)) {
            cJSON_Delete(reg);
            int r = errf(e, "%s: expected a mapping of tuners, assessors and advisors", path);
            free(path);
            return r;
        }
    } else if (errno != ENOENT) {
        int r = errf(e, "%s: %s", path, strerror(errno));
        free(path);
        return r;
    }
    free(path);
    if (!cJSON_IsObject(reg)) {
        cJSON_Delete(reg);
        reg = cJSON_CreateObject();
    }
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++)
        if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(reg, sections[i]))) {
            cJSON_DeleteItemFromObjectCaseSensitive(reg, sections[i]);
            cJSON_AddItemToObject(reg, sections[i], cJSON_CreateArray());
        }
    *out = reg;
    return 0;
}

const cJSON *algo_registry_find(const cJSON *reg, const char *section, const char *name)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(reg, section);
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(it, "builtinName");
        if (cJSON_IsString(n) && strcasecmp(n->valuestring, name) == 0)
            return it;
    }
    return NULL;
}

/* A YAML scalar for any JSON value: JSON itself (a double-quoted string, a number, a
 * flow mapping) is YAML that PyYAML reads back the same. */
static void put_value(struct strbuf *sb, const cJSON *v)
{
    char *s = cJSON_PrintUnformatted(v);
    sb_puts(sb, s);
    free(s);
}

int algo_registry_save(const cJSON *reg, struct errbuf *e)
{
    char *path = algo_registry_path();
    char *dir = xstrdup(path);
    *strrchr(dir, '/') = '\0';
    if (mkdir_p(dir, 0755) < 0) {
        int r = errf(e, "cannot create %s: %s", dir, strerror(errno));
        free(dir);
        free(path);
        return r;
    }
    free(dir);
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, "# NNI's registered algorithms (nnictl algo register / unregister)\n");
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(reg, sections[i]);
        sb_printf(&sb, "%s:%s\n", sections[i], cJSON_GetArraySize(list) ? "" : " []");
        const cJSON *it;
        cJSON_ArrayForEach(it, list) {
            const cJSON *kv;
            int first = 1;
            cJSON_ArrayForEach(kv, it) {
                sb_puts(&sb, first ? "- " : "  ");
                first = 0;
                sb_printf(&sb, "%s: ", kv->string);
                put_value(&sb, kv);
                sb_puts(&sb, "\n");
            }
        }
    }
    int rc = write_file_replace(path, sb.buf, sb.len, 0644);
    if (rc < 0)
        rc = errf(e, "cannot write %s: %s", path, strerror(errno));
    sb_free(&sb);
    free(path);
    return rc;
}
