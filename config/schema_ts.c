/* schema_ts.c: trainingService: one table per platform (NNI's training_services/ files,
 * field order kept) plus the rules NNI checks in _validate_canonical; a list of
 * platforms is hybrid. Each platform of common/platform_list.h has its `<id>_fields`
 * table here and its `<id>_check` (or a `#define <id>_check NULL`). */
#include "config/config_int.h"
#include "common/platform_list.h"

#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DOCKER_IMAGE "\"msranni/nni:latest\""

/* Fields every platform has; the shortcut ones fall back to the top level. */
#define TS_COMMON(cmd_flags, cmd_def)                                                      \
    {.name = "platform", .type = FT_STR, .flags = F_REQUIRED},                            \
    {.name = "trialCommand", .type = FT_STR, .flags = F_INHERIT | (cmd_flags),            \
     .def = (cmd_def)},                                                                   \
    {.name = "trialCodeDirectory", .type = FT_DIR, .flags = F_INHERIT},                   \
    {.name = "trialGpuNumber", .type = FT_INT, .flags = F_INHERIT, .min = 0, .max = INT_MAX}, \
    {.name = "nniManagerIp", .type = FT_STR, .flags = F_INHERIT | F_NONEMPTY},            \
    {.name = "debug", .type = FT_BOOL, .flags = F_INHERIT, .def = "false"}

#define RUNS_COMMAND TS_COMMON(F_REQUIRED | F_NONEMPTY, NULL)
#define ROLES_RUN_COMMANDS TS_COMMON(0, "\"\"") /* k8s: the roles carry the commands */

/* "maxTrialNumberPerGpu: 2" without trialGpuNumber does nothing in NNI; say so. */
static int per_gpu_check(struct vctx *c, const cJSON *ts, const cJSON *holder, const char *where)
{
    if (json_int(holder, "maxTrialNumberPerGpu", 1) != 1 && json_int(ts, "trialGpuNumber", 0) <= 0)
        return cfg_err_here(c, where, AT_VALUE, "has no effect without trialGpuNumber > 0; set "
                            "trialGpuNumber or remove maxTrialNumberPerGpu");
    return 0;
}

static int written(const struct ynode *map, const char *key)
{
    const struct yentry *en = map && map->kind == Y_MAP ? ymap_find(map, key) : NULL;
    return en && en->value->kind != Y_NULL;
}

/* GPU options of one machine (`map`/`holder`: the local trainingService or a remote
 * machineList entry; `prefix` "" or "machineList[i]."). gpuIndices without
 * trialGpuNumber > 0 does nothing (NNI ignores it silently): warned about. Returns 1 when
 * gpuIndices lists fewer GPUs than trialGpuNumber (no trial could start here). */
static int gpu_options_check(struct vctx *c, const struct ynode *map, const cJSON *ts, const cJSON *holder,
                             const char *prefix)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(ts, "trialGpuNumber");
    int gpus = cJSON_IsNumber(n) ? n->valueint : 0;
    /* useActiveGpu is left alone: NNI's own examples write `useActiveGpu: false` with
     * trialGpuNumber 0, and without scheduling it changes nothing either way */
    static const char *const opts[] = {"gpuIndices", NULL};
    char key[96];
    if (gpus <= 0) {
        for (int i = 0; opts[i]; i++) {
            snprintf(key, sizeof key, "%s%s", prefix, opts[i]);
            if (written(map, opts[i]))
                cfg_warn_here(c, key, "ignored: GPUs are scheduled only when trialGpuNumber > 0 (%s)",
                          cJSON_IsNumber(n) ? "it is 0: trials get CUDA_VISIBLE_DEVICES=\"\""
                                            : "it is not set: trials see every GPU");
        }
        return 0;
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(holder, "gpuIndices");
    int listed = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : -1;
    return listed >= 0 && listed < gpus;
}

/* ---- local ---- */

static int local_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    /* NNI forces it off for local: trials run on this host */
    cJSON_DeleteItemFromObjectCaseSensitive(obj, "nniManagerIp");
    if (json_int(obj, "trialGpuNumber", 0) > 0 &&
        !cJSON_GetObjectItemCaseSensitive(obj, "useActiveGpu"))
        return cfg_err_here(c, "useActiveGpu", AT_VALUE,
                            "required when trialGpuNumber > 0: true to share GPUs that other "
                            "processes (e.g. a desktop) use, false to use only idle GPUs");
    if (gpu_options_check(c, map, obj, obj, "") > 0)
        return cfg_err_here(c, "gpuIndices", AT_VALUE, "lists %d GPU%s but trialGpuNumber is %d: no trial "
                            "could ever start", cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(obj, "gpuIndices")),
                            cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(obj, "gpuIndices")) == 1 ? "" : "s",
                            (int)json_int(obj, "trialGpuNumber", 0));
    return per_gpu_check(c, obj, obj, "maxTrialNumberPerGpu");
}

static const struct field local_fields[] = {
    RUNS_COMMAND,
    {.name = "useActiveGpu", .type = FT_BOOL},
    {.name = "maxTrialNumberPerGpu", .type = FT_INT, .def = "1", .min = 1, .max = 1000},
    {.name = "gpuIndices", .type = FT_GPUS},
    {.name = "reuseMode", .type = FT_BOOL, .def = "false"},
    {.name = NULL},
};

/* ---- remote ---- */

static int machine_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    const struct yentry *key = ymap_find(map, "sshKeyFile");
    int key_given = key && key->value->kind != Y_NULL;
    if (cJSON_GetObjectItemCaseSensitive(obj, "password")) {
        if (key_given)
            cfg_warn(c, "%s: %s.sshKeyFile is ignored because password is set", c->file,
                     c->path.buf);
        cJSON_DeleteItemFromObjectCaseSensitive(obj, "sshKeyFile");
        return 0;
    }
    const cJSON *kf = cJSON_GetObjectItemCaseSensitive(obj, "sshKeyFile");
    const char *file = cJSON_IsString(kf) ? kf->valuestring : "";
    struct stat st;
    const char *why = NULL;
    if (stat(file, &st) < 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (access(file, R_OK) < 0)
        why = strerror(errno);
    if (why)
        return cfg_err_here(c, "sshKeyFile", AT_VALUE, "%s%s: %s (set sshKeyFile to a private "
                            "key, or password)", file, key_given ? "" : " (the default)", why);
    return 0;
}

/* an SSH login (a remote machine, Slurm's login node): machine_check's keys */
#define SSH_LOGIN_FIELDS                                                                   \
    {.name = "host", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},                   \
    {.name = "port", .type = FT_INT, .def = "22", .min = 1, .max = 65535},                \
    {.name = "user", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},                   \
    {.name = "password", .type = FT_STR},                                                 \
    {.name = "sshKeyFile", .type = FT_PATH, .def = "\"~/.ssh/id_rsa\""}

static const struct field machine_fields[] = {
    SSH_LOGIN_FIELDS,
    {.name = "sshPassphrase", .type = FT_STR},
    {.name = "useActiveGpu", .type = FT_BOOL, .def = "false"},
    {.name = "maxTrialNumberPerGpu", .type = FT_INT, .def = "1", .min = 1, .max = 1000},
    {.name = "gpuIndices", .type = FT_GPUS},
    {.name = "pythonPath", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = NULL},
};

static const struct schema machine_schema = {"a remote machine", machine_fields, machine_check,
                                             NULL};

static int remote_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, "machineList");
    const struct yentry *ml = map && map->kind == Y_MAP ? ymap_find(map, "machineList") : NULL;
    int i = 0, too_small = 0, machines = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, list) {
        char where[64];
        snprintf(where, sizeof where, "machineList[%d].maxTrialNumberPerGpu", i);
        if (per_gpu_check(c, obj, m, where) < 0)
            return -1;
        snprintf(where, sizeof where, "machineList[%d].", i);
        const struct ynode *mmap = ml && ml->value->kind == Y_SEQ && (size_t)i < ml->value->nitems
                                       ? ml->value->items[i] : NULL;
        if (gpu_options_check(c, mmap, obj, m, where) > 0) {
            too_small++;
            snprintf(where, sizeof where, "machineList[%d].gpuIndices", i);
            cfg_warn_here(c, where, "lists fewer GPUs than trialGpuNumber (%d): no trial will run on this "
                      "machine", (int)json_int(obj, "trialGpuNumber", 0));
        }
        machines++;
        i++;
    }
    if (machines > 0 && too_small == machines)
        return cfg_err_here(c, "trialGpuNumber", AT_VALUE, "%d GPUs per trial, but every machine's gpuIndices "
                            "lists fewer: no trial could ever start", (int)json_int(obj, "trialGpuNumber", 0));
    return 0;
}

static const struct field remote_fields[] = {
    RUNS_COMMAND,
    {.name = "machineList", .type = FT_LIST, .flags = F_REQUIRED | F_NONEMPTY,
     .sub = &machine_schema},
    {.name = "reuseMode", .type = FT_BOOL, .def = "false"},
    /* trialq: host keys are checked against this OpenSSH file (default ~/.ssh/known_hosts);
     * an unknown host is accepted and recorded there only with acceptNewHostKeys */
    {.name = "knownHostsFile", .type = FT_PATH},
    {.name = "acceptNewHostKeys", .type = FT_BOOL, .def = "false"},
    {.name = NULL},
};

/* ---- openpai ---- */

static int openpai_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    if (!cJSON_GetObjectItemCaseSensitive(obj, "trialGpuNumber"))
        return cfg_err_here(c, "trialGpuNumber", AT_VALUE, "required for openpai");
    cJSON *host = cJSON_GetObjectItemCaseSensitive(obj, "host");
    if (cJSON_IsString(host) && !strstr(host->valuestring, "://")) {
        char *h = xasprintf("https://%s", host->valuestring);
        cJSON_ReplaceItemInObjectCaseSensitive(obj, "host", cJSON_CreateString(h));
        free(h);
    }
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(obj, "containerStorageMountPoint");
    if (cJSON_IsString(cm) && cm->valuestring[0] != '/')
        return cfg_err_here(c, "containerStorageMountPoint", AT_VALUE,
                            "must be an absolute path (as seen inside the container)");
    if (cJSON_GetObjectItemCaseSensitive(obj, "openpaiConfig") &&
        cJSON_GetObjectItemCaseSensitive(obj, "openpaiConfigFile"))
        return cfg_err_here(c, "openpaiConfigFile", AT_KEY,
                            "set either openpaiConfig or openpaiConfigFile, not both");
    /* NNI's Python accepts openpaiConfigFile but its TS side never reads it (spec §2.3);
     * we load it here, so the worker sees one openpaiConfig either way */
    const char *key = "openpaiConfig", *src = "";
    const cJSON *cf = cJSON_GetObjectItemCaseSensitive(obj, "openpaiConfigFile");
    if (cJSON_IsString(cf)) {
        struct ynode *root = NULL;
        struct errbuf fe;
        key = "openpaiConfigFile";
        src = cf->valuestring;
        if (yaml_parse_file(src, &root, &fe) < 0)
            return cfg_err_here(c, key, AT_VALUE, "%s", fe.msg);
        cJSON *j = NULL;
        int rc = 1;
        if (root && root->kind == Y_MAP) {
            /* the file's own context: its errors name that file, its lines and keys */
            struct vctx sub;
            vctx_init(&sub, src, c->base_dir, &fe);
            rc = ynode_to_json(&sub, root, &j);
            vctx_release(&sub);
        }
        ynode_free(root);
        if (rc < 0)
            return cfg_err_here(c, key, AT_VALUE, "%s", fe.msg);
        if (rc > 0)
            return cfg_err_here(c, key, AT_VALUE, "%s must hold an OpenPAI job protocol (a mapping "
                                "with taskRoles)", src);
        cJSON_AddItemToObject(obj, "openpaiConfig", j);
    }
    const cJSON *proto = cJSON_GetObjectItemCaseSensitive(obj, "openpaiConfig");
    if (proto) {
        /* NNI wraps each task role's commands: they must be there */
        const cJSON *roles = cJSON_GetObjectItemCaseSensitive(proto, "taskRoles"), *r;
        if (!cJSON_IsObject(roles) || !roles->child)
            return cfg_err_here(c, key, AT_VALUE, "%s%staskRoles must be a mapping of one or more "
                                "task roles", src, *src ? ": " : "");
        cJSON_ArrayForEach(r, roles) {
            const cJSON *cmds = cJSON_GetObjectItemCaseSensitive(r, "commands"), *it;
            int ok = cJSON_IsArray(cmds) && cmds->child;
            cJSON_ArrayForEach(it, cmds) ok = ok && cJSON_IsString(it);
            if (!ok)
                return cfg_err_here(c, key, AT_VALUE, "%s%staskRoles.%.60s.commands must be a list of "
                                    "command strings", src, *src ? ": " : "", r->string);
        }
    }
    return 0;
}

static const struct field openpai_fields[] = {
    RUNS_COMMAND,
    {.name = "host", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "username", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "token", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "trialCpuNumber", .type = FT_INT, .flags = F_REQUIRED, .min = 1, .max = INT_MAX},
    {.name = "trialMemorySize", .type = FT_SIZE, .flags = F_REQUIRED},
    {.name = "storageConfigName", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "dockerImage", .type = FT_STR, .flags = F_NONEMPTY, .def = DOCKER_IMAGE},
    {.name = "virtualCluster", .type = FT_STR},
    {.name = "localStorageMountPoint", .type = FT_DIR, .flags = F_REQUIRED},
    {.name = "containerStorageMountPoint", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "reuseMode", .type = FT_BOOL, .def = "true"},
    {.name = "openpaiConfig", .type = FT_MAPPING},
    {.name = "openpaiConfigFile", .type = FT_FILE},
    {.name = NULL},
};

/* ---- dlts ---- */

/* NNI's fallbacks inside a DLTS job: email, password and team from its environment */
static int dlts_env_key(struct vctx *c, cJSON *obj, const char *key, const char *env)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsString(v) && v->valuestring[0])
        return 0;
    const char *e = getenv(env);
    if (!e || !e[0])
        return cfg_err_here(c, key, AT_VALUE, "required for dlts (or set %s)", env);
    cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
    cJSON_AddStringToObject(obj, key, e);
    return 0;
}

/* insecure: true with an https:// url (url NULL: the platform's default, https): the
 * certificate is not verified (workers/rest_client.c), which the user is told */
static void insecure_tls_warn(struct vctx *c, const cJSON *obj, const char *url_key)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(obj, url_key);
    const char *url = cJSON_IsString(u) ? u->valuestring : NULL;
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "insecure")) && (!url || !str_starts(url, "http://")))
        cfg_warn_here(c, "insecure", "true: the TLS certificate of %s is not verified (anyone on the way can read the "
                  "credentials); name its CA with caBundle instead", url ? url : "the endpoint");
}

static int dlc_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    (void)map;
    insecure_tls_warn(c, obj, "endpoint");
    return 0;
}

static int dlts_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    (void)map;
    if (dlts_env_key(c, obj, "email", "DLWS_USER_EMAIL") < 0 ||
        dlts_env_key(c, obj, "password", "DLTS_JOB_TOKEN") < 0 || dlts_env_key(c, obj, "team", "DLWS_VC_NAME") < 0)
        return -1;
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(obj, "dashboard");
    const char *u = cJSON_IsString(d) ? d->valuestring : "";
    int insecure = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(obj, "insecure"));
    if (str_starts(u, "http://")) {
        const char *h = u + 7;
        if (!insecure && !(str_starts(h, "127.0.0.1") && strchr(":/", h[9] ? h[9] : '/')))
            return cfg_err_here(c, "dashboard", AT_VALUE, "plain http:// sends the password unencrypted; "
                                "use https://, or set insecure: true (http://127.0.0.1 is accepted)");
    } else if (!str_starts(u, "https://")) {
        return cfg_err_here(c, "dashboard", AT_VALUE, "must be the dashboard's URL (https://...)");
    }
    insecure_tls_warn(c, obj, "dashboard");
    if (u[strlen(u) - 1] != '/') { /* NNI appends paths to it as it is: it ends with / */
        char *s = xasprintf("%s/", u);
        cJSON_ReplaceItemInObjectCaseSensitive(obj, "dashboard", cJSON_CreateString(s));
        free(s);
    }
    const cJSON *cm = cJSON_GetObjectItemCaseSensitive(obj, "containerStorageMountPoint");
    if (cJSON_IsString(cm) && cm->valuestring[0] != '/')
        return cfg_err_here(c, "containerStorageMountPoint", AT_VALUE,
                            "must be an absolute path (as seen inside the jobs)");
    return 0;
}

static const struct field dlts_fields[] = {
    RUNS_COMMAND,
    {.name = "dashboard", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "cluster", .type = FT_STR, .flags = F_NONEMPTY, .def = "\".default\""},
    {.name = "team", .type = FT_STR},
    {.name = "email", .type = FT_STR},
    {.name = "password", .type = FT_STR},
    {.name = "gpuType", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "image", .type = FT_STR, .flags = F_NONEMPTY, .def = DOCKER_IMAGE},
    {.name = "localStorageMountPoint", .type = FT_DIR, .flags = F_REQUIRED},
    {.name = "containerStorageMountPoint", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    /* trialq: plain http:// beyond 127.0.0.1, and a private CA for https:// */
    {.name = "insecure", .type = FT_BOOL, .def = "false"},
    {.name = "caBundle", .type = FT_FILE},
    {.name = NULL},
};

/* ---- aml, dlc ---- */

static int aml_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    insecure_tls_warn(c, obj, "managementEndpoint");
    return per_gpu_check(c, obj, obj, "maxTrialNumberPerGpu");
}

static const struct field aml_fields[] = {
    RUNS_COMMAND,
    {.name = "subscriptionId", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "resourceGroup", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "workspaceName", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "computeTarget", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "dockerImage", .type = FT_STR, .flags = F_NONEMPTY, .def = DOCKER_IMAGE},
    {.name = "maxTrialNumberPerGpu", .type = FT_INT, .def = "1", .min = 1, .max = 1000},
    /* trialq (workers/rest/aml.c): the endpoints (a private cloud, a proxy, a test server), the
     * datastore the jobs mount and where this host has mounted it, a CA bundle, and plain
     * http:// beyond 127.0.0.1 */
    {.name = "managementEndpoint", .type = FT_STR, .flags = F_NONEMPTY, .def = "\"https://management.azure.com\""},
    {.name = "authorityHost", .type = FT_STR, .flags = F_NONEMPTY, .def = "\"https://login.microsoftonline.com\""},
    {.name = "datastore", .type = FT_STR, .flags = F_NONEMPTY, .def = "\"workspaceblobstore\""},
    /* not in NNI's AmlConfig, so not required here (an NNI config still validates):
     * nnictl create requires it (workers/rest/aml.c) */
    {.name = "localStorageMountPoint", .type = FT_PATH},
    {.name = "caBundle", .type = FT_FILE},
    {.name = "insecure", .type = FT_BOOL, .def = "false"},
    {.name = NULL},
};

static const struct field dlc_fields[] = {
    RUNS_COMMAND,
    {.name = "type", .type = FT_STR, .flags = F_NONEMPTY, .def = "\"Worker\""},
    {.name = "image", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "jobType", .type = FT_ENUM, .def = "\"TFJob\"", .choices = "TFJob|PyTorchJob"},
    {.name = "podCount", .type = FT_INT, .flags = F_REQUIRED, .min = 1, .max = INT_MAX},
    {.name = "ecsSpec", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "region", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "workspaceId", .type = FT_STR},
    {.name = "nasDataSourceId", .type = FT_STR},
    {.name = "ossDataSourceId", .type = FT_STR},
    /* else ALIBABA_CLOUD_ACCESS_KEY_ID / ALIBABA_CLOUD_ACCESS_KEY_SECRET (workers/rest/dlc.c) */
    {.name = "accessKeyId", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "accessKeySecret", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "localStorageMountPoint", .type = FT_PATH, .flags = F_REQUIRED},
    {.name = "containerStorageMountPoint", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    /* trialq: the API's address (default https://pai-dlc.<region>.aliyuncs.com), a CA
     * bundle for it, and plain http:// beyond 127.0.0.1 */
    {.name = "endpoint", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "caBundle", .type = FT_FILE},
    {.name = "insecure", .type = FT_BOOL, .def = "false"},
    /* trialq: the console whose job pages are the trials' tracking URLs (default
     * https://pai-dlc.console.aliyun.com, as NNI's) */
    {.name = "consoleUrl", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = NULL},
};

/* ---- Kubernetes storage and roles (kubeflow, frameworkcontroller) ---- */

static int k8s_storage_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    static const char *const nfs[] = {"server", "path", NULL};
    static const char *const azure[] = {"azureAccount", "azureShare", "keyVaultName",
                                        "keyVaultKey", NULL};
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(obj, "storageType");
    int is_nfs = strcmp(t->valuestring, "nfs") == 0;
    const char *const *need = is_nfs ? nfs : azure;
    const char *const *forbid = is_nfs ? azure : nfs;
    for (; *need; need++)
        if (!cJSON_GetObjectItemCaseSensitive(obj, *need))
            return cfg_err_here(c, *need, AT_VALUE, "required with storageType %s",
                                t->valuestring);
    for (; *forbid; forbid++)
        if (cJSON_GetObjectItemCaseSensitive(obj, *forbid))
            return cfg_err_here(c, *forbid, AT_KEY, "does not apply to storageType %s",
                                t->valuestring);
    return 0;
}

static const struct field k8s_storage_fields[] = {
    {.name = "storageType", .type = FT_ENUM, .flags = F_REQUIRED, .choices = "nfs|azureStorage"},
    {.name = "azureAccount", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "azureShare", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "keyVaultName", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "keyVaultKey", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "server", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "path", .type = FT_STR, .flags = F_NONEMPTY},
    /* trialq: where the share is already mounted on this host (nothing is mounted then) */
    {.name = "localMountPoint", .type = FT_DIR},
    {.name = NULL},
};

static const struct schema k8s_storage_schema = {"Kubernetes storage", k8s_storage_fields,
                                                 k8s_storage_check, NULL};

static const struct field kubeflow_role_fields[] = {
    {.name = "replicas", .type = FT_INT, .flags = F_REQUIRED, .min = 1, .max = INT_MAX},
    {.name = "command", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "gpuNumber", .type = FT_INT, .def = "0", .min = 0, .max = INT_MAX},
    {.name = "cpuNumber", .type = FT_INT, .flags = F_REQUIRED, .min = 1, .max = INT_MAX},
    {.name = "memorySize", .type = FT_SIZE, .flags = F_REQUIRED},
    {.name = "dockerImage", .type = FT_STR, .flags = F_NONEMPTY, .def = DOCKER_IMAGE},
    {.name = "privateRegistryAuthPath", .type = FT_FILE},
    {.name = "codeDirectory", .type = FT_DIR},
    {.name = NULL},
};

static const struct schema kubeflow_role_schema = {"a kubeflow role", kubeflow_role_fields, NULL,
                                                   NULL};

static int kubeflow_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    static const char *const roles[] = {"worker", "ps", "master"};
    int n = 0;
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(obj, "trialCodeDirectory");
    for (size_t i = 0; i < sizeof roles / sizeof roles[0]; i++) {
        cJSON *r = cJSON_GetObjectItemCaseSensitive(obj, roles[i]);
        if (!r)
            continue;
        n++;
        /* NNI's converter sets it from the trial code directory; do the same when unset */
        if (!cJSON_GetObjectItemCaseSensitive(r, "codeDirectory") && cJSON_IsString(code))
            cJSON_AddStringToObject(r, "codeDirectory", code->valuestring);
    }
    if (n == 0)
        return cfg_err_here(c, "worker", AT_VALUE, "kubeflow needs at least one role: worker, "
                            "ps (tf-operator) or master (pytorch-operator)");
    return 0;
}

static const struct field kubeflow_fields[] = {
    ROLES_RUN_COMMANDS,
    {.name = "operator", .type = FT_ENUM, .flags = F_REQUIRED,
     .choices = "tf-operator|pytorch-operator"},
    {.name = "apiVersion", .type = FT_ENUM, .flags = F_REQUIRED,
     .choices = "v1alpha2|v1beta1|v1beta2|v1"},
    {.name = "storage", .type = FT_SECTION, .flags = F_REQUIRED, .sub = &k8s_storage_schema},
    {.name = "worker", .type = FT_SECTION, .sub = &kubeflow_role_schema},
    {.name = "ps", .type = FT_SECTION, .sub = &kubeflow_role_schema},
    {.name = "master", .type = FT_SECTION, .sub = &kubeflow_role_schema},
    {.name = "reuseMode", .type = FT_BOOL, .def = "true"},
    {.name = "namespace", .type = FT_STR, .flags = F_NONEMPTY, .def = "\"default\""},
    {.name = NULL},
};

static const struct field fc_policy_fields[] = {
    {.name = "minFailedTaskCount", .type = FT_INT, .flags = F_REQUIRED, .min = -1,
     .max = INT_MAX},
    {.name = "minSucceedTaskCount", .type = FT_INT, .flags = F_REQUIRED, .min = -1,
     .max = INT_MAX},
    {.name = NULL},
};

static const struct schema fc_policy_schema = {"frameworkAttemptCompletionPolicy",
                                               fc_policy_fields, NULL, NULL};

static const struct field fc_role_fields[] = {
    {.name = "name", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "dockerImage", .type = FT_STR, .flags = F_NONEMPTY, .def = DOCKER_IMAGE},
    {.name = "taskNumber", .type = FT_INT, .flags = F_REQUIRED, .min = 1, .max = INT_MAX},
    {.name = "command", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "gpuNumber", .type = FT_INT, .flags = F_REQUIRED, .min = 0, .max = INT_MAX},
    {.name = "cpuNumber", .type = FT_INT, .flags = F_REQUIRED, .min = 1, .max = INT_MAX},
    {.name = "memorySize", .type = FT_SIZE, .flags = F_REQUIRED},
    {.name = "frameworkAttemptCompletionPolicy", .type = FT_SECTION, .flags = F_REQUIRED,
     .sub = &fc_policy_schema},
    {.name = "privateRegistryAuthPath", .type = FT_FILE},
    {.name = NULL},
};

static const struct schema fc_role_schema = {"a task role", fc_role_fields, NULL, NULL};

#define frameworkcontroller_check NULL /* its fields' own checks are all it needs */
static const struct field frameworkcontroller_fields[] = {
    ROLES_RUN_COMMANDS,
    {.name = "storage", .type = FT_SECTION, .flags = F_REQUIRED, .sub = &k8s_storage_schema},
    {.name = "serviceAccountName", .type = FT_STR},
    {.name = "taskRoles", .type = FT_LIST, .flags = F_REQUIRED | F_NONEMPTY,
     .sub = &fc_role_schema},
    {.name = "reuseMode", .type = FT_BOOL, .def = "true"},
    {.name = "namespace", .type = FT_STR, .flags = F_NONEMPTY, .def = "\"default\""},
    {.name = NULL},
};

/* ---- adl (AdaptDL): NNI has only the v1 form; these are its keys in v2 spelling ---- */

static const struct field adl_secret_fields[] = {
    {.name = "name", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = NULL},
};
static const struct schema adl_secret_schema = {"an image pull secret", adl_secret_fields, NULL,
                                                NULL};

static const struct field adl_nfs_fields[] = {
    {.name = "server", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "path", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "containerMountPath", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    /* trialq: where the share is already mounted on this host (nothing is mounted then) */
    {.name = "localMountPoint", .type = FT_DIR},
    {.name = NULL},
};
static const struct schema adl_nfs_schema = {"adl nfs", adl_nfs_fields, NULL, NULL};

static const struct field adl_checkpoint_fields[] = {
    {.name = "storageClass", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "storageSize", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = NULL},
};
static const struct schema adl_checkpoint_schema = {"adl checkpoint", adl_checkpoint_fields, NULL,
                                                    NULL};

static int adl_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    if (!cJSON_GetObjectItemCaseSensitive(obj, "nniManagerIp"))
        return cfg_err_here(c, "nniManagerIp", AT_VALUE,
                            "required for adl (the address AdaptDL pods report to)");
    return 0;
}

static const struct field adl_fields[] = {
    RUNS_COMMAND,
    {.name = "image", .type = FT_STR, .flags = F_REQUIRED | F_NONEMPTY},
    {.name = "namespace", .type = FT_STR, .flags = F_NONEMPTY, .def = "\"default\""},
    {.name = "imagePullSecrets", .type = FT_LIST, .sub = &adl_secret_schema},
    {.name = "nfs", .type = FT_SECTION, .sub = &adl_nfs_schema},
    {.name = "adaptive", .type = FT_BOOL, .def = "false"},
    {.name = "checkpoint", .type = FT_SECTION, .sub = &adl_checkpoint_schema},
    {.name = "cpuNumber", .type = FT_INT, .min = 1, .max = INT_MAX},
    {.name = "memorySize", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = NULL},
};

/* ---- slurm (trialq: NNI has no Slurm platform; v2 keys only, docs/platforms/slurm.md) ---- */

/* sbatch options trialq sets itself (it finds its jobs again by name and comment, reads
 * their output in the trial dir, submits one job per trial and needs the id at once) */
static const struct {
    char short_opt;
    const char *long_opt, *why;
} sbatch_reserved[] = {
    {'J', "job-name", "the job's name (it finds its jobs again by it)"},
    {0, "comment", "the job's comment (it finds its jobs again by it)"},
    {'o', "output", "the job's output (slurm.stdout in the trial dir)"},
    {'e', "error", "the job's error output (slurm.stderr in the trial dir)"},
    {'D', "chdir", "the job's working directory (the trial dir)"},
    {0, "parsable", "how sbatch prints the job's id"},
    {0, "wrap", "the job's script (trialq writes it)"},
    {'a', "array", "one job per trial (no job arrays)"},
    {'W', "wait", "how long sbatch runs (it must return at once)"},
};

/* what is wrong with one sbatchArgs item (why: at least 256 bytes), or 0 */
static int sbatch_arg_problem(const struct ynode *it, char *why, size_t size)
{
    if (it->kind != Y_STR || !it->text[0]) {
        snprintf(why, size, "must be one sbatch option as a string, e.g. \"--exclusive\", got %s",
                 ynode_kind_name(it));
        return 1;
    }
    const char *t = it->text;
    if (t[0] != '-') {
        snprintf(why, size, "\"%.60s\" is not an sbatch option (options start with '-')", t);
        return 1;
    }
    size_t name_end = strcspn(t, "=");
    if (strcspn(t, " \t\n\r") < name_end) {
        snprintf(why, size, "\"%.60s\": one option per item, its value after '=' (e.g. "
                 "\"--mail-type=END\")", t);
        return 1;
    }
    for (size_t i = 0; i < sizeof sbatch_reserved / sizeof sbatch_reserved[0]; i++) {
        size_t ln = strlen(sbatch_reserved[i].long_opt);
        int hit = t[1] == '-' ? strncmp(t + 2, sbatch_reserved[i].long_opt, ln) == 0 &&
                                    (t[2 + ln] == '\0' || t[2 + ln] == '=')
                              : sbatch_reserved[i].short_opt && t[1] == sbatch_reserved[i].short_opt;
        if (hit) {
            snprintf(why, size, "\"%.60s\": trialq sets %s; remove it", t, sbatch_reserved[i].why);
            return 1;
        }
    }
    return 0;
}

static int custom_sbatch_args(struct vctx *c, const struct ynode *map, const struct ynode *node,
                              cJSON *obj, cJSON **out)
{
    (void)map;
    (void)obj;
    if (!node)
        return 0;
    if (node->kind != Y_SEQ)
        return cfg_err_here(c, NULL, AT_VALUE, "must be a list of sbatch options, e.g. "
                            "[\"--exclusive\", \"--mail-type=END\"], got %s", ynode_kind_name(node));
    cJSON *arr = NULL;
    if (ynode_to_json(c, node, &arr) < 0) /* records each item's position */
        return -1;
    for (size_t i = 0; i < node->nitems; i++) {
        char why[320];
        if (sbatch_arg_problem(node->items[i], why, sizeof why)) {
            size_t old = path_push_index(&c->path, i);
            cfg_err_here(c, NULL, AT_VALUE, "%s", why);
            path_pop(&c->path, old);
            cJSON_Delete(arr);
            return -1;
        }
    }
    *out = arr;
    return 0;
}

static int slurm_check(struct vctx *c, const struct ynode *map, cJSON *obj)
{
    (void)map;
    int64_t secs;
    const cJSON *tl = cJSON_GetObjectItemCaseSensitive(obj, "timeLimit");
    if (tl && duration_parse(tl, &secs) == 0) {
        if (secs < 60)
            return cfg_err_here(c, "timeLimit", AT_VALUE, "must be at least 1 minute (Slurm counts "
                                "whole minutes)");
        const cJSON *mt = c->top ? cJSON_GetObjectItemCaseSensitive(c->top, "maxTrialDuration") : NULL;
        int64_t max_trial;
        if (mt && duration_parse(mt, &max_trial) == 0 && secs < max_trial)
            cfg_warn_here(c, "timeLimit", "is shorter than maxTrialDuration: Slurm ends longer trials "
                      "first (FAILED, TIMEOUT)");
    }
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(obj, "sharedDirectory");
    if (cJSON_IsString(sd) && sd->valuestring[0] != '/')
        return cfg_err_here(c, "sharedDirectory", AT_VALUE, "must be an absolute path on the cluster's "
                            "shared filesystem (the same on the nodes and where trialq runs sbatch), "
                            "got \"%.80s\"", sd->valuestring);
    return 0;
}

/* the login node of the SSH mode: a remote machine's keys (password or sshKeyFile) */
static const struct field login_node_fields[] = {
    SSH_LOGIN_FIELDS,
    {.name = NULL},
};

static const struct schema login_node_schema = {"the login node", login_node_fields, machine_check,
                                                NULL};

static const struct field slurm_fields[] = {
    RUNS_COMMAND,
    {.name = "partition", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "account", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "qos", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "timeLimit", .type = FT_DURATION},
    {.name = "nodes", .type = FT_INT, .min = 1, .max = 1000000},
    {.name = "cpusPerTrial", .type = FT_INT, .min = 1, .max = 1000000},
    {.name = "memoryPerTrial", .type = FT_SIZE},
    {.name = "gpusPerTrial", .type = FT_INT, .min = 0, .max = 1000000},
    {.name = "constraint", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "sbatchArgs", .type = FT_CUSTOM, .custom = custom_sbatch_args},
    {.name = "setupScript", .type = FT_STR},
    {.name = "sharedDirectory", .type = FT_STR, .flags = F_NONEMPTY},
    {.name = "loginNode", .type = FT_SECTION, .sub = &login_node_schema},
    /* as the remote platform's: the login node's host key is checked against this file */
    {.name = "knownHostsFile", .type = FT_PATH},
    {.name = "acceptNewHostKeys", .type = FT_BOOL, .def = "false"},
    {.name = NULL},
};

/* ---- dispatch ---- */

/* Each platform's schema, and its traits that the api and schema/ need: they link no
 * workers/ (docs/architecture.md, "Layout"), and what they must know of a platform is
 * known here. */
enum ts_machines {
    TS_MACHINES_NONE,  /* runs trials on no machine of ours (a cluster's nodes) */
    TS_MACHINES_HOST,  /* on this host */
    TS_MACHINES_LIST,  /* on each entry of its machineList */
};
static const struct ts_platform {
    const char *name;
    struct schema schema;
    int trials_on_host;         /* its trials run on this host: their directories are readable here */
    int shared_storage;         /* its trials' directories are on a storage of their own, outside
                                 * the experiment directory (slurm: the cluster's shared filesystem,
                                 * not always mounted here with a loginNode) */
    enum ts_machines machines;  /* the machine rows its trials run on */
} ts_platforms[] = {
#define TS_PLATFORM_(id, on_host, shared_storage, machines) \
    {#id, {"trainingService (" #id ")", id##_fields, id##_check, NULL}, on_host, shared_storage, TS_MACHINES_##machines},
    TRIALQ_PLATFORMS(TS_PLATFORM_)
#undef TS_PLATFORM_
};
#define NPLATFORMS (sizeof ts_platforms / sizeof ts_platforms[0])

static const struct ts_platform *ts_platform_find(const char *name)
{
    for (size_t i = 0; name && i < NPLATFORMS; i++)
        if (strcmp(name, ts_platforms[i].name) == 0)
            return &ts_platforms[i];
    return NULL;
}

int config_platform_trials_on_host(const char *platform)
{
    const struct ts_platform *p = ts_platform_find(platform);
    return p && p->trials_on_host;
}

int config_shared_storage(const char *platform)
{
    const struct ts_platform *p = ts_platform_find(platform);
    return p && p->shared_storage;
}

static int entry_machines(const cJSON *ts,
                          void (*fn)(void *ctx, const char *platform, const char *host, int port, const char *user),
                          void *ctx)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(ts, "platform");
    const struct ts_platform *p = cJSON_IsString(name) ? ts_platform_find(name->valuestring) : NULL;
    if (!p || p->machines == TS_MACHINES_NONE)
        return 0;
    if (p->machines == TS_MACHINES_HOST) {
        fn(ctx, p->name, NULL, 0, NULL);
        return 1;
    }
    int n = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(ts, "machineList")) {
        const cJSON *host = cJSON_GetObjectItemCaseSensitive(m, "host");
        const cJSON *port = cJSON_GetObjectItemCaseSensitive(m, "port");
        const cJSON *user = cJSON_GetObjectItemCaseSensitive(m, "user");
        if (!cJSON_IsString(host))
            continue;
        fn(ctx, p->name, host->valuestring, cJSON_IsNumber(port) ? port->valueint : 22,
           cJSON_IsString(user) ? user->valuestring : NULL);
        n++;
    }
    return n;
}

int config_ts_machines(const char *config_json,
                       void (*fn)(void *ctx, const char *platform, const char *host, int port, const char *user),
                       void *ctx)
{
    cJSON *cfg = config_json ? cJSON_Parse(config_json) : NULL;
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return -1;
    }
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(cfg, "trainingService"), *it;
    int n = 0;
    if (cJSON_IsArray(ts)) {
        cJSON_ArrayForEach(it, ts)
            n += entry_machines(it, fn, ctx);
    } else if (cJSON_IsObject(ts)) {
        n = entry_machines(ts, fn, ctx);
    }
    cJSON_Delete(cfg);
    return n;
}

const char *const ts_platform_names = PLATFORM_NAMES;

static int ts_one(struct vctx *c, const struct ynode *node, cJSON **out)
{
    if (node->kind != Y_MAP)
        return cfg_err_here(c, NULL, AT_VALUE, "must be a mapping with a platform key, got %s",
                            ynode_kind_name(node));
    const struct yentry *pe = ymap_find(node, "platform");
    if (!pe || pe->value->kind == Y_NULL)
        return cfg_err_here(c, "platform", AT_VALUE, "required field is missing; one of %s",
                            ts_platform_names);
    char *ppath = path_child(c->path.buf, "platform");
    marks_set(c->marks, ppath, pe->key_mark, pe->value->mark, pe->value->origin);
    free(ppath);
    const char *name = pe->value->kind == Y_STR ? pe->value->text : NULL;
    if (!name)
        return cfg_err_here(c, "platform", AT_VALUE, "must be a string, one of %s",
                            ts_platform_names);
    const struct ts_platform *p = ts_platform_find(name);
    const struct schema *s = p ? &p->schema : NULL;
    if (!s) {
        if (strcmp(name, "pai") == 0)
            return cfg_err_here(c, "platform", AT_VALUE, "unknown platform \"pai\"; the v2 name "
                                "is \"openpai\"");
        if (strcmp(name, "hybrid") == 0)
            return cfg_err_here(c, "platform", AT_VALUE, "hybrid is written as a list: "
                                "trainingService: [{platform: local}, {platform: remote, ...}]");
        for (size_t i = 0; i < NPLATFORMS; i++)
            if (strcasecmp(name, ts_platforms[i].name) == 0)
                return cfg_err_here(c, "platform", AT_VALUE, "unknown platform \"%.40s\" (did "
                                    "you mean \"%s\"?)", name, ts_platforms[i].name);
        return cfg_err_here(c, "platform", AT_VALUE, "unknown platform \"%.40s\"; one of %s",
                            name, ts_platform_names);
    }
    cJSON *obj = cJSON_CreateObject();
    if (validate_section(c, node, s, obj) < 0) {
        cJSON_Delete(obj);
        return -1;
    }
    *out = obj;
    return 0;
}

int validate_training_service(struct vctx *c, const struct ynode *map, const struct ynode *node,
                              cJSON *obj, cJSON **out)
{
    if (!node)
        return cfg_err_here(c, NULL, AT_VALUE, "required field is missing (e.g. "
                            "trainingService: {platform: local})");
    if (node->kind == Y_MAP)
        return ts_one(c, node, out);
    if (node->kind != Y_SEQ)
        return cfg_err_here(c, NULL, AT_VALUE, "must be a mapping (one platform) or a list of "
                            "them (hybrid), got %s", ynode_kind_name(node));
    if (node->nitems == 0)
        return cfg_err_here(c, NULL, AT_VALUE, "must not be an empty list");
    cJSON *arr = cJSON_CreateArray();
    struct ymark none = {0, 0};
    for (size_t i = 0; i < node->nitems; i++) {
        size_t old = path_push_index(&c->path, i);
        marks_set(c->marks, c->path.buf, none, node->items[i]->mark, node->items[i]->origin);
        cJSON *one = NULL;
        int rc = ts_one(c, node->items[i], &one);
        path_pop(&c->path, old);
        if (rc < 0) {
            cJSON_Delete(arr);
            return -1;
        }
        cJSON_AddItemToArray(arr, one);
    }
    *out = arr;
    return 0;
}
