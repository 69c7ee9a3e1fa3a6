/* schema_top.c: the experiment's top-level fields (NNI's ExperimentConfig, in its field
 * order), the algorithm sections (tuner/assessor/advisor), sharedStorage, and the
 * rules between them: search space source, advisor -> tuner, annotation, log level. */
#include "common/json.h"
#include "config/config_int.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SEARCH_SPACE_MAX_BYTES (16L << 20)

/* ---- tuner / assessor / advisor (NNI's AlgorithmConfig / CustomAlgorithmConfig) ---- */

static int algo_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    int has_name = cJSON_GetObjectItemCaseSensitive(obj, "name") != NULL;
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(obj, "className");
    int has_dir = cJSON_GetObjectItemCaseSensitive(obj, "codeDirectory") != NULL;
    if (has_name && cls)
        return cfg_err_here(c, "className", AT_KEY,
                            "set either name (a built-in algorithm) or className, not both");
    if (!has_name && !cls)
        return cfg_err_here(c, "name", AT_VALUE, "required: name of a built-in algorithm "
                            "(e.g. TPE), or className of your own class");
    if (cls) {
        const char *s = cls->valuestring;
        const char *dot = strrchr(s, '.');
        if (!dot || dot == s || !dot[1] || strchr(s, '/'))
            return cfg_err_here(c, "className", AT_VALUE,
                                "must be \"module.ClassName\", got \"%.60s\"", s);
        /* NNI's default codeDirectory, ".", is the config file's directory; it is only
         * appended to sys.path, so a module installed with pip is found too (nnictl
         * create asks the configured python) */
        if (!has_dir)
            cJSON_AddStringToObject(obj, "codeDirectory", c->base_dir);
    } else if (has_dir) {
        return cfg_err_here(c, "codeDirectory", AT_KEY,
                            "only used with className; a built-in algorithm has no code directory");
    }
    return 0;
}

static const struct field algo_fields[] = {
    {.name = "name", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "className", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "codeDirectory", .type = FT_DIR},
    {.name = "classArgs", .type = FT_MAPPING},
    {.name = NULL},
};

static const struct schema algo_schema = {"an algorithm section", algo_fields, algo_check, NULL};

/* Validates one algorithm section at the current path; *out NULL for "_none_". */
static int algo_section(struct vctx *c, const struct ynode *node, cJSON **out)
{
    *out = NULL;
    cJSON *obj = cJSON_CreateObject();
    if (validate_section(c, node, &algo_schema, obj) < 0) {
        cJSON_Delete(obj);
        return -1;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    if (cJSON_IsString(name) && strcmp(name->valuestring, "_none_") == 0) {
        cJSON_Delete(obj); /* NNI's way of writing "no algorithm" */
        return 0;
    }
    *out = obj;
    return 0;
}

static int custom_tuner(struct vctx *c, const struct ynode *map, const struct ynode *node,
                        cJSON *obj, cJSON **out)
{
    const struct yentry *adv = ymap_find(map, "advisor");
    const struct ynode *advisor = adv && adv->value->kind != Y_NULL ? adv->value : NULL;
    if (node && advisor)
        return cfg_err(c, "advisor", AT_KEY, "cannot be set together with tuner (an advisor "
                       "is a tuner that also early-stops; keep one of the two)");
    if (node) {
        if (algo_section(c, node, out) < 0)
            return -1;
    } else if (advisor) {
        /* NNI moves the advisor into tuner; errors still name the key the user wrote */
        char *saved = xstrdup(c->path.buf);
        path_pop(&c->path, 0);
        path_push_key(&c->path, "advisor");
        int rc = algo_section(c, advisor, out);
        path_pop(&c->path, 0);
        sb_puts(&c->path, saved);
        free(saved);
        if (rc < 0)
            return -1;
        marks_alias(c->marks, "advisor", "tuner");
        const struct yentry *as = ymap_find(map, "assessor");
        if (*out && as && as->value->kind != Y_NULL)
            cfg_warn(c, "%s: assessor is ignored when an advisor is used", c->file);
    }
    if (*out)
        return 0;
    /* absent, or "name: _none_" */
    return cfg_err_here(c, NULL, AT_VALUE, "required field is missing: set tuner (e.g. "
                        "tuner: {name: TPE}) or advisor");
}

static int custom_assessor(struct vctx *c, const struct ynode *map, const struct ynode *node,
                           cJSON *obj, cJSON **out)
{
    return node ? algo_section(c, node, out) : 0;
}

static int custom_advisor(struct vctx *c, const struct ynode *map, const struct ynode *node,
                          cJSON *obj, cJSON **out)
{
    return 0; /* handled (and moved) by the tuner field */
}

/* ---- search space ---- */

static int annotation_check(struct vctx *c, const struct ynode *map)
{
    const struct yentry *en = ymap_find(map, "useAnnotation");
    if (!en || en->value->kind == Y_NULL)
        return 0;
    if (en->value->kind != Y_BOOL)
        return cfg_err(c, "useAnnotation", AT_VALUE, "must be true or false, got %s",
                       ynode_kind_name(en->value));
    if (en->value->b)
        return cfg_err(c, "useAnnotation", AT_VALUE, "annotation is not supported since NNI "
                       "v3.0; write the search space in searchSpace or searchSpaceFile");
    return 0;
}

static int custom_use_annotation(struct vctx *c, const struct ynode *map,
                                 const struct ynode *node, cJSON *obj, cJSON **out)
{
    if (annotation_check(c, map) < 0)
        return -1;
    *out = cJSON_CreateFalse();
    return 0;
}

/* JSON first, YAML as the fallback, like NNI. Positions inside the file are not kept:
 * the caller reports search-space problems at the searchSpaceFile key. */
static int load_search_space(struct vctx *c, const char *file, cJSON **out)
{
    struct stat st;
    if (stat(file, &st) < 0)
        return cfg_err(c, "searchSpaceFile", AT_VALUE, "%s: %s", file, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return cfg_err(c, "searchSpaceFile", AT_VALUE, "%s is not a regular file", file);
    if (st.st_size > SEARCH_SPACE_MAX_BYTES)
        return cfg_err(c, "searchSpaceFile", AT_VALUE, "%s: file too large", file);
    size_t len;
    char *buf = read_file(file, &len);
    if (!buf)
        return cfg_err(c, "searchSpaceFile", AT_VALUE, "cannot read %s: %s", file,
                       strerror(errno));
    if (memchr(buf, '\0', len)) {
        free(buf);
        return cfg_err(c, "searchSpaceFile", AT_VALUE, "%s is not a text file", file);
    }
    /* a UTF-8 BOM (Windows editors write one): NNI's json.loads refuses it and its YAML
     * fallback reads the file; the same result, read as JSON */
    size_t bom = len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    cJSON *j = cJSON_ParseWithOpts(buf + bom, NULL, 1);
    struct json_issue is;
    if (j && json_check(buf + bom, len - bom, &is) < 0) {
        /* JSON that cJSON reads differently from NNI's json.load: a repeated key (NNI
         * keeps the last, cJSON the first), "03", a raw tab in a string, \u0000 */
        cJSON_Delete(j);
        free(buf);
        return cfg_err(c, "searchSpaceFile", AT_VALUE, "%s:%d:%d: %s", file, is.line, is.col, is.msg);
    }
    if (!j) {
        struct errbuf ye;
        struct ynode *root = NULL;
        int rc = yaml_parse(file, buf, len, &root, &ye);
        if (rc == 0 && root) {
            struct vctx sub;
            vctx_init(&sub, file, c->base_dir, &ye);
            rc = ynode_to_json(&sub, root, &j);
            vctx_release(&sub);
        }
        ynode_free(root);
        if (rc < 0) {
            free(buf);
            return cfg_err(c, "searchSpaceFile", AT_VALUE, "bad search space file: %s", ye.msg);
        }
    }
    free(buf);
    if (!j || cJSON_IsNull(j)) {
        cJSON_Delete(j);
        return cfg_err(c, "searchSpaceFile", AT_VALUE, "%s is empty; an empty search space is "
                       "written {}", file);
    }
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return cfg_err(c, "searchSpaceFile", AT_VALUE, "%s must hold a mapping of parameter "
                       "names to {_type, _value}", file);
    }
    *out = j;
    return 0;
}

static int custom_search_space(struct vctx *c, const struct ynode *map, const struct ynode *node,
                               cJSON *obj, cJSON **out)
{
    /* an annotation config has no search space: say the real reason first */
    if (annotation_check(c, map) < 0)
        return -1;
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(obj, "searchSpaceFile");
    if (node && file)
        return cfg_err_here(c, NULL, AT_KEY, "set either searchSpace or searchSpaceFile, not both");
    if (file)
        return load_search_space(c, file->valuestring, out);
    if (!node)
        return cfg_err_here(c, NULL, AT_VALUE, "required field is missing: set searchSpace "
                            "(inline) or searchSpaceFile (a JSON or YAML file)");
    if (node->kind != Y_MAP) {
        return cfg_err_here(c, NULL, AT_VALUE, "must be a mapping of parameter names to "
                            "{_type, _value}, got %s", ynode_kind_name(node));
    }
    return ynode_to_json(c, node, out);
}

/* ---- logLevel: its default depends on debug ---- */

static const struct field log_level_field = {
    .name = "logLevel", .type = FT_ENUM, .choices = "fatal|error|warning|info|debug|trace"};

static int custom_log_level(struct vctx *c, const struct ynode *map, const struct ynode *node,
                            cJSON *obj, cJSON **out)
{
    if (node)
        return validate_value(c, &log_level_field, node, out);
    *out = cJSON_CreateString(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "debug"))
                                  ? "debug" : "info");
    return 0;
}

/* ---- sharedStorage (NfsConfig / AzureBlobConfig) ---- */

#define STORAGE_COMMON                                                                     \
    {.name = "storageType", .type = FT_STR, .flags = F_REQUIRED},                          \
    {.name = "localMountPoint", .type = FT_PATH, .flags = F_REQUIRED},                     \
    {.name = "remoteMountPoint", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},        \
    {.name = "localMounted", .type = FT_ENUM, .flags = F_REQUIRED,                         \
     .choices = "usermount|nnimount|nomount"}

static const struct field nfs_storage_fields[] = {
    STORAGE_COMMON,
    {.name = "nfsServer", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "exportedDirectory", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = NULL},
};

static const struct field blob_storage_fields[] = {
    STORAGE_COMMON,
    {.name = "storageAccountName", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "storageAccountKey", .type = FT_STR},
    {.name = "resourceGroupName", .type = FT_STR},
    {.name = "containerName", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = NULL},
};

static const struct schema nfs_storage = {"sharedStorage (NFS)", nfs_storage_fields, NULL, NULL};
static const struct schema blob_storage = {"sharedStorage (AzureBlob)", blob_storage_fields, NULL, NULL};

static int custom_shared_storage(struct vctx *c, const struct ynode *map,
                                 const struct ynode *node, cJSON *obj, cJSON **out)
{
    if (!node)
        return 0;
    if (node->kind != Y_MAP)
        return cfg_err_here(c, NULL, AT_VALUE, "must be a mapping, got %s", ynode_kind_name(node));
    const struct yentry *st = ymap_find(node, "storageType");
    const struct schema *s = NULL;
    if (st && st->value->kind == Y_STR && strcmp(st->value->text, "NFS") == 0)
        s = &nfs_storage;
    else if (st && st->value->kind == Y_STR && strcmp(st->value->text, "AzureBlob") == 0)
        s = &blob_storage;
    if (!s) {
        if (!st || st->value->kind == Y_NULL)
            return cfg_err_here(c, "storageType", AT_VALUE,
                                "required field is missing; one of NFS, AzureBlob");
        char *p = path_child(c->path.buf, "storageType");
        marks_set(c->marks, p, st->key_mark, st->value->mark, st->value->origin);
        free(p);
        return cfg_err_here(c, "storageType", AT_VALUE, "must be NFS or AzureBlob, got \"%.40s\"",
                            st->value->text ? st->value->text : "");
    }
    cJSON *o = cJSON_CreateObject();
    if (validate_section(c, node, s, o) < 0) {
        cJSON_Delete(o);
        return -1;
    }
    *out = o;
    return 0;
}

/* ---- the experiment ---- */

static const struct field experiment_fields[] = {
    {.name = "experimentName", .type = FT_STR},
    {.name = "experimentType", .type = FT_ENUM, .def = "\"hpo\"", .choices = "hpo"},
    {.name = "searchSpaceFile", .type = FT_FILE},
    {.name = "searchSpace", .type = FT_CUSTOM, .custom = custom_search_space},
    {.name = "trialCommand", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "trialCodeDirectory", .type = FT_DIR, .def = "\".\""},
    {.name = "trialConcurrency", .type = FT_INT, .flags = F_REQUIRED, .min = 1, .max = INT_MAX},
    {.name = "trialGpuNumber", .type = FT_INT, .min = 0, .max = INT_MAX},
    {.name = "maxExperimentDuration", .type = FT_DURATION},
    {.name = "maxTrialNumber", .type = FT_INT, .min = 1},
    {.name = "maxTrialDuration", .type = FT_DURATION},
    /* trialq: how often a trial whose job vanished (host lost, worker killed) is rerun */
    {.name = "maxTrialRetries", .type = FT_INT, .def = "1", .min = 0, .max = 1000},
    /* trialq: how local trials get parameters and report metrics (docs/config.md) */
    {.name = "trialCommandChannel", .type = FT_ENUM, .choices = "file|http"}, /* unset = file */
    /* trialq: how a customized tuner's process talks to the api (docs/config.md) */
    {.name = "tunerCommandChannel", .type = FT_ENUM, .choices = "websocket|pipe"}, /* unset = websocket */
    /* trialq: whether user code run here inherits the clouds' credentials (docs/config.md) */
    {.name = "passCredentials", .type = FT_BOOL}, /* unset = false */
    {.name = "nniManagerIp", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "useAnnotation", .type = FT_CUSTOM, .custom = custom_use_annotation},
    {.name = "debug", .type = FT_BOOL, .def = "false"},
    {.name = "logLevel", .type = FT_CUSTOM, .custom = custom_log_level},
    {.name = "experimentWorkingDirectory", .type = FT_PATH, .def = "\"~/nni-experiments\""},
    {.name = "tunerGpuIndices", .type = FT_GPUS},
    {.name = "tuner", .type = FT_CUSTOM, .custom = custom_tuner},
    {.name = "assessor", .type = FT_CUSTOM, .custom = custom_assessor},
    {.name = "advisor", .type = FT_CUSTOM, .custom = custom_advisor},
    {.name = "trainingService", .type = FT_CUSTOM, .custom = validate_training_service},
    {.name = "sharedStorage", .type = FT_CUSTOM, .custom = custom_shared_storage},
    {.name = NULL},
};

/* v1 keys met in a v2 file (a v1 file is recognised by trainingServicePlatform) */
static const char *const v1_names[] = {
    "maxExecDuration", "this is the v1 name of maxExperimentDuration",
    "maxTrialNum", "this is the v1 name of maxTrialNumber",
    "searchSpacePath", "this is the v1 name of searchSpaceFile",
    "logDir", "this is the v1 name of experimentWorkingDirectory",
    "authorName", "v1 only; remove it",
    "trial", "v1 only; use trialCommand, trialCodeDirectory and trialGpuNumber",
    "localConfig", "v1 only; put its keys in trainingService",
    "machineList", "v1 only; use trainingService: {platform: remote, machineList: [...]}",
    "multiPhase", "multi-phase experiments are no longer supported",
    /* NNI's own example config_detailed.yml says "name:", which NNI refuses too */
    "name", "the experiment's name is experimentName",
    NULL, NULL,
};

const struct schema experiment_schema = {"the experiment config", experiment_fields, NULL,
                                         v1_names};
