/* v1convert.c: a v1 config (it has trainingServicePlatform) -> the v2 tree, following
 * NNI's nni/experiment/config/convert.py. Values move with their file positions and
 * remember their v1 key, so a later validation error still points into the v1 file
 * and names the key the user wrote. Keys v2 has no use for are dropped with a warning. */
#include "config/config_int.h"
#include "common/platform_list.h"

#include <stdlib.h>
#include <string.h>

struct rename {
    const char *v1;
    const char *v2; /* NULL: dropped (named in the warning) */
};

struct conv {
    struct vctx *c;
    struct strbuf dropped; /* "authorName, multiThread" */
};

static void note_dropped(struct conv *v, const char *path)
{
    sb_printf(&v->dropped, "%s%s", v->dropped.len ? ", " : "", path);
}

/* Moves src[v1key] to dst[v2key] (replacing what is there). */
static void move(struct conv *v, struct ynode *src, const char *src_path, const char *v1key,
                 struct ynode *dst, const char *v2key)
{
    struct ymark km;
    struct ynode *n = ymap_take(src, v1key, &km);
    if (!n)
        return;
    if (!n->origin)
        n->origin = path_child(src_path, v1key);
    struct ynode *old = ymap_take(dst, v2key, NULL);
    ynode_free(old);
    ymap_put(dst, v2key, km, n);
}

static void drop(struct conv *v, struct ynode *src, const char *src_path, const char *key)
{
    struct ynode *n = ymap_take(src, key, NULL);
    if (!n)
        return;
    char *p = path_child(src_path, key);
    note_dropped(v, p);
    free(p);
    ynode_free(n);
}

static void move_table(struct conv *v, struct ynode *src, const char *src_path, struct ynode *dst,
                       const struct rename *t)
{
    for (; t->v1; t++) {
        if (t->v2)
            move(v, src, src_path, t->v1, dst, t->v2);
        else
            drop(v, src, src_path, t->v1);
    }
}

/* Keys still in a v1 section were not understood: name the first. */
static int leftovers(struct conv *v, const struct ynode *src, const char *src_path,
                     const struct rename *t1, const struct rename *t2)
{
    if (!src || src->nentries == 0)
        return 0;
    const struct yentry *en = &src->entries[0];
    char *p = path_child(src_path, en->key);
    const char *best = NULL;
    int bestd = 1 << 20;
    const struct rename *tables[] = {t1, t2};
    for (int k = 0; k < 2; k++)
        for (const struct rename *t = tables[k]; t && t->v1; t++) {
            int d = key_distance(en->key, t->v1);
            if (d < bestd) {
                bestd = d;
                best = t->v1;
            }
        }
    size_t klen = strlen(en->key);
    int limit = (int)(klen / 3) > 2 ? (int)(klen / 3) : 2;
    int rc;
    if (best && bestd <= limit)
        rc = cfg_err_mark(v->c, en->key_mark, p, NULL,
                          "unknown key in this v1 config; did you mean '%s'?", best);
    else
        rc = cfg_err_mark(v->c, en->key_mark, p, NULL, "unknown key in this v1 config");
    free(p);
    return rc;
}

/* Takes src[key], which must be a mapping (or absent/null: *out = NULL). */
static int take_map(struct conv *v, struct ynode *src, const char *src_path, const char *key,
                    struct ynode **out)
{
    struct ymark km;
    struct ynode *n = ymap_take(src, key, &km);
    *out = NULL;
    if (!n || n->kind == Y_NULL) {
        ynode_free(n);
        return 0;
    }
    if (n->kind != Y_MAP) {
        char *p = path_child(src_path, key);
        cfg_err_mark(v->c, n->mark, p, NULL, "must be a mapping, got %s", ynode_kind_name(n));
        free(p);
        ynode_free(n);
        return -1;
    }
    *out = n;
    return 0;
}

/* ---- tables (v1 name -> v2 name) ---- */

static const struct rename top_keys[] = {
    {"experimentName", "experimentName"},
    {"trialConcurrency", "trialConcurrency"},
    {"maxExecDuration", "maxExperimentDuration"},
    {"maxTrialDuration", "maxTrialDuration"},
    {"maxTrialNum", "maxTrialNumber"},
    {"searchSpacePath", "searchSpaceFile"},
    {"nniManagerIp", "nniManagerIp"},
    {"logDir", "experimentWorkingDirectory"},
    {"debug", "debug"},
    {"logLevel", "logLevel"},
    {"useAnnotation", "useAnnotation"},
    {"sharedStorage", "sharedStorage"},
    {"maxTrialRetries", "maxTrialRetries"},
    {"authorName", NULL},
    {"description", NULL},
    {"multiThread", NULL},
    {"versionCheck", NULL},
    {"logCollection", NULL},
    {NULL, NULL},
};

/* recognised at the top level, handled by the code below (for suggestions) */
static const struct rename top_sections[] = {
    {"trainingServicePlatform", ""}, {"multiPhase", ""},   {"trial", ""},
    {"tuner", ""},                   {"assessor", ""},     {"advisor", ""},
    {"localConfig", ""},             {"remoteConfig", ""}, {"machineList", ""},
    {"paiConfig", ""},               {"amlConfig", ""},    {"dlcConfig", ""},
    {"kubeflowConfig", ""},          {"frameworkcontrollerConfig", ""},
    {"hybridConfig", ""},            {NULL, NULL},
};

static const struct rename trial_keys[] = {
    {"command", "trialCommand"},
    {"codeDir", "trialCodeDirectory"},
    {"gpuNum", "trialGpuNumber"},
    {NULL, NULL},
};

static const struct rename local_keys[] = {
    {"gpuIndices", "gpuIndices"},
    {"maxTrialNumPerGpu", "maxTrialNumberPerGpu"},
    {"useActiveGpu", "useActiveGpu"},
    {NULL, NULL},
};

static const struct rename remote_keys[] = {
    {"reuse", "reuseMode"},
    {NULL, NULL},
};

static const struct rename machine_keys[] = {
    {"ip", "host"},
    {"port", "port"},
    {"username", "user"},
    {"sshKeyPath", "sshKeyFile"},
    {"passphrase", "sshPassphrase"},
    {"passwd", "password"},
    {"gpuIndices", "gpuIndices"},
    {"maxTrialNumPerGpu", "maxTrialNumberPerGpu"},
    {"useActiveGpu", "useActiveGpu"},
    {"pythonPath", "pythonPath"},
    {NULL, NULL},
};

static const struct rename pai_trial_keys[] = {
    {"nniManagerNFSMountPath", "localStorageMountPoint"},
    {"containerNFSMountPath", "containerStorageMountPoint"},
    {"cpuNum", "trialCpuNumber"},
    {"memoryMB", "trialMemorySize"},
    {"image", "dockerImage"},
    {"virtualCluster", "virtualCluster"},
    {"paiStorageConfigName", "storageConfigName"},
    {"paiConfigPath", "openpaiConfigFile"},
    {"portList", NULL},
    {NULL, NULL},
};

static const struct rename pai_keys[] = {
    {"userName", "username"},
    {"token", "token"},
    {"host", "host"},
    {"reuse", "reuseMode"},
    {"gpuNum", "trialGpuNumber"},
    {"cpuNum", "trialCpuNumber"},
    {"memoryMB", "trialMemorySize"},
    {"password", NULL},
    {"maxTrialNumPerGpu", NULL},
    {"useActiveGpu", NULL},
    {NULL, NULL},
};

static const struct rename aml_trial_keys[] = {
    {"image", "dockerImage"},
    {NULL, NULL},
};

static const struct rename aml_keys[] = {
    {"subscriptionId", "subscriptionId"},
    {"resourceGroup", "resourceGroup"},
    {"workspaceName", "workspaceName"},
    {"computeTarget", "computeTarget"},
    {"maxTrialNumPerGpu", "maxTrialNumberPerGpu"},
    {NULL, NULL},
};

static const struct rename dlc_trial_keys[] = {
    {"image", "image"},
    {NULL, NULL},
};

static const struct rename dlc_keys[] = {
    {"type", "type"},
    {"image", "image"},
    {"jobType", "jobType"},
    {"podCount", "podCount"},
    {"ecsSpec", "ecsSpec"},
    {"region", "region"},
    {"workspaceId", "workspaceId"},
    {"nasDataSourceId", "nasDataSourceId"},
    {"ossDataSourceId", "ossDataSourceId"},
    {"accessKeyId", "accessKeyId"},
    {"accessKeySecret", "accessKeySecret"},
    {"localStorageMountPoint", "localStorageMountPoint"},
    {"containerStorageMountPoint", "containerStorageMountPoint"},
    {NULL, NULL},
};

static const struct rename adl_trial_keys[] = {
    {"image", "image"},
    {"namespace", "namespace"},
    {"imagePullSecrets", "imagePullSecrets"},
    {"nfs", "nfs"},
    {"adaptive", "adaptive"},
    {"checkpoint", "checkpoint"},
    {"cpuNum", "cpuNumber"},
    {"memorySize", "memorySize"},
    {NULL, NULL},
};

static const struct rename k8s_keys[] = {
    {"operator", "operator"},
    {"apiVersion", "apiVersion"},
    {"namespace", "namespace"},
    {"serviceAccountName", "serviceAccountName"},
    {"uploadRetryCount", NULL},
    {"configPath", NULL},
    {NULL, NULL},
};

static const struct rename k8s_storage_keys[] = {
    {"storage", ""}, {"nfs", ""}, {"keyVault", ""}, {"azureStorage", ""}, {NULL, NULL},
};

static const struct rename k8s_role_keys[] = {
    {"replicas", "replicas"},
    {"taskNum", "taskNumber"},
    {"name", "name"},
    {"command", "command"},
    {"gpuNum", "gpuNumber"},
    {"cpuNum", "cpuNumber"},
    {"memoryMB", "memorySize"},
    {"image", "dockerImage"},
    {"privateRegistryAuthPath", "privateRegistryAuthPath"},
    {NULL, NULL},
};

static const struct rename fc_policy_keys[] = {
    {"minFailedTaskCount", "minFailedTaskCount"},
    {"minSucceededTaskCount", "minSucceedTaskCount"},
    {"minSucceedTaskCount", "minSucceedTaskCount"},
    {NULL, NULL},
};

/* ---- algorithms ---- */

static int convert_algo(struct conv *v, struct ynode *root, const char *kind, const char *builtin,
                        struct ynode *v2)
{
    struct ymark km = {0, 0};
    struct yentry *en = ymap_find(root, kind);
    if (en)
        km = en->key_mark;
    struct ynode *a;
    if (take_map(v, root, "", kind, &a) < 0)
        return -1;
    if (!a)
        return 0;
    struct ynode *out = ynode_new(Y_MAP, a->mark);
    int rc = 0;
    move(v, a, kind, builtin, out, "name");
    move(v, a, kind, "classArgs", out, "classArgs");
    struct ymark cdm = {0, 0}, cfm = {0, 0}, cnm = {0, 0};
    struct ynode *cd = ymap_take(a, "codeDir", &cdm);
    struct ynode *cf = ymap_take(a, "classFileName", &cfm);
    struct ynode *cn = ymap_take(a, "className", &cnm);
    char *p = NULL;
    if (cd || cf || cn) {
        const char *missing = !cd ? "codeDir" : !cf ? "classFileName" : !cn ? "className" : NULL;
        if (ymap_find(out, "name")) {
            p = xasprintf("%s.%s", kind, cn ? "className" : cf ? "classFileName" : "codeDir");
            rc = cfg_err_mark(v->c, cn ? cnm : cf ? cfm : cdm, p, NULL,
                              "set either %s or codeDir + classFileName + className", builtin);
        } else if (missing) {
            p = xasprintf("%s.%s", kind, missing);
            rc = cfg_err_mark(v->c, a->mark, p, NULL, "required with %s (a custom %s needs "
                              "codeDir, classFileName and className)",
                              cn ? "className" : cf ? "classFileName" : "codeDir", kind);
        } else if (cf->kind != Y_STR || !str_ends(cf->text, ".py") || strlen(cf->text) < 4) {
            p = xasprintf("%s.classFileName", kind);
            rc = cfg_err_mark(v->c, cf->mark, p, NULL, "must name a Python file (x.py), got "
                              "\"%.40s\"", cf->text ? cf->text : "");
        } else if (cn->kind != Y_STR) {
            p = xasprintf("%s.className", kind);
            rc = cfg_err_mark(v->c, cn->mark, p, NULL, "must be a string, got %s",
                              ynode_kind_name(cn));
        } else {
            /* NNI: "x.py" + "C" -> "x.C" */
            char *cls = xasprintf("%.*s.%s", (int)(strlen(cf->text) - 3), cf->text, cn->text);
            struct ynode *n = ynode_new_str(cls, cn->mark);
            n->origin = xasprintf("%s.className", kind);
            free(cls);
            ymap_put(out, "className", cnm, n);
            if (!cd->origin)
                cd->origin = xasprintf("%s.codeDir", kind);
            ymap_put(out, "codeDirectory", cdm, cd);
            cd = NULL;
        }
    }
    free(p);
    ynode_free(cd);
    ynode_free(cf);
    ynode_free(cn);
    if (rc == 0) {
        if (strcmp(kind, "assessor") != 0)
            move(v, a, kind, "gpuIndices", v2, "tunerGpuIndices");
        drop(v, a, kind, "gpuIndices");
        drop(v, a, kind, "includeIntermediateResults");
        drop(v, a, kind, "gpuNum");
        static const struct rename algo_keys[] = {
            {"builtinTunerName", ""}, {"builtinAssessorName", ""}, {"builtinAdvisorName", ""},
            {"classArgs", ""},        {"codeDir", ""},             {"classFileName", ""},
            {"className", ""},        {"gpuIndices", ""},          {NULL, NULL},
        };
        rc = leftovers(v, a, kind, algo_keys, NULL);
    }
    ynode_free(a);
    if (rc < 0) {
        ynode_free(out);
        return -1;
    }
    ymap_put(v2, kind, km, out);
    return 0;
}

/* ---- training services ---- */

/* kubeflowConfig / frameworkcontrollerConfig: storage name + nfs | keyVault + azureStorage */
static int convert_k8s_storage(struct conv *v, struct ynode *cfg, const char *cpath,
                               struct ynode *ts)
{
    struct ymark skm = cfg->mark;
    struct ynode *name = ymap_take(cfg, "storage", &skm);
    struct ynode *nfs = NULL, *kv = NULL, *az = NULL;
    int rc = take_map(v, cfg, cpath, "nfs", &nfs);
    if (rc == 0)
        rc = take_map(v, cfg, cpath, "keyVault", &kv);
    if (rc == 0)
        rc = take_map(v, cfg, cpath, "azureStorage", &az);
    const char *kind = name && name->kind == Y_STR ? name->text : nfs ? "nfs" : "azureStorage";
    struct ymark at = name ? name->mark : nfs ? nfs->mark : az ? az->mark : cfg->mark;
    char *p = path_child(cpath, "storage");
    struct ynode *st = ynode_new(Y_MAP, at);
    if (rc == 0 && name && name->kind != Y_STR && name->kind != Y_NULL) {
        rc = cfg_err_mark(v->c, name->mark, p, NULL, "must be nfs or azureStorage, got %s",
                          ynode_kind_name(name));
    } else if (rc == 0 && strcmp(kind, "nfs") == 0) {
        struct ynode *t = ynode_new_str("nfs", at);
        t->origin = xstrdup(p);
        ymap_put(st, "storageType", at, t);
        if (!nfs) {
            char *np = path_child(cpath, "nfs");
            rc = cfg_err_mark(v->c, cfg->mark, np, NULL, "required with storage nfs "
                              "({server, path})");
            free(np);
        } else {
            char *np = path_child(cpath, "nfs");
            move(v, nfs, np, "server", st, "server");
            move(v, nfs, np, "path", st, "path");
            static const struct rename nfs_keys[] = {{"server", ""}, {"path", ""}, {NULL, NULL}};
            rc = leftovers(v, nfs, np, nfs_keys, NULL);
            free(np);
        }
    } else if (rc == 0 && strcmp(kind, "azureStorage") == 0) {
        struct ynode *t = ynode_new_str("azureStorage", at);
        t->origin = xstrdup(p);
        ymap_put(st, "storageType", at, t);
        if (!kv || !az) {
            char *np = path_child(cpath, !kv ? "keyVault" : "azureStorage");
            rc = cfg_err_mark(v->c, cfg->mark, np, NULL, "required with storage azureStorage "
                              "(keyVault: {vaultName, name}, azureStorage: {accountName, "
                              "azureShare})");
            free(np);
        } else {
            char *kp = path_child(cpath, "keyVault"), *ap = path_child(cpath, "azureStorage");
            move(v, az, ap, "accountName", st, "azureAccount");
            move(v, az, ap, "azureShare", st, "azureShare");
            move(v, kv, kp, "vaultName", st, "keyVaultName");
            move(v, kv, kp, "name", st, "keyVaultKey");
            static const struct rename kv_keys[] = {{"vaultName", ""}, {"name", ""}, {NULL, NULL}};
            static const struct rename az_keys[] = {{"accountName", ""}, {"azureShare", ""},
                                                    {NULL, NULL}};
            rc = leftovers(v, kv, kp, kv_keys, NULL);
            if (rc == 0)
                rc = leftovers(v, az, ap, az_keys, NULL);
            free(kp);
            free(ap);
        }
    } else if (rc == 0) {
        rc = cfg_err_mark(v->c, at, p, NULL, "must be nfs or azureStorage, got \"%.40s\"", kind);
    }
    free(p);
    ynode_free(name);
    ynode_free(nfs);
    ynode_free(kv);
    ynode_free(az);
    if (rc < 0) {
        ynode_free(st);
        return -1;
    }
    ymap_put(ts, "storage", skm, st);
    return 0;
}

/* One k8s role (kubeflow worker/ps/master or a frameworkcontroller task role). */
static int convert_role(struct conv *v, struct ynode *role, const char *rpath, struct ynode **out)
{
    struct ynode *r = ynode_new(Y_MAP, role->mark);
    move_table(v, role, rpath, r, k8s_role_keys);
    struct ynode *pol;
    int rc = take_map(v, role, rpath, "frameworkAttemptCompletionPolicy", &pol);
    if (rc == 0 && pol) {
        char *pp = path_child(rpath, "frameworkAttemptCompletionPolicy");
        struct ynode *np = ynode_new(Y_MAP, pol->mark);
        move_table(v, pol, pp, np, fc_policy_keys);
        rc = leftovers(v, pol, pp, fc_policy_keys, NULL);
        ymap_put(r, "frameworkAttemptCompletionPolicy", pol->mark, np);
        free(pp);
        ynode_free(pol);
    }
    if (rc == 0) {
        static const struct rename extra[] = {{"frameworkAttemptCompletionPolicy", ""},
                                              {NULL, NULL}};
        rc = leftovers(v, role, rpath, k8s_role_keys, extra);
    }
    if (rc < 0) {
        ynode_free(r);
        return -1;
    }
    *out = r;
    return 0;
}

static int convert_kubeflow(struct conv *v, struct ynode *root, struct ynode *trial,
                            struct ynode *ts)
{
    struct ynode *kc;
    if (take_map(v, root, "", "kubeflowConfig", &kc) < 0)
        return -1;
    if (!kc)
        return cfg_err_mark(v->c, root->mark, "kubeflowConfig", NULL,
                            "required for platform kubeflow");
    move_table(v, kc, "kubeflowConfig", ts, k8s_keys);
    int rc = convert_k8s_storage(v, kc, "kubeflowConfig", ts);
    if (rc == 0)
        rc = leftovers(v, kc, "kubeflowConfig", k8s_keys, k8s_storage_keys);
    ynode_free(kc);
    static const char *const roles[] = {"worker", "ps", "master"};
    for (size_t i = 0; i < 3 && rc == 0 && trial; i++) {
        struct ymark km = {0, 0};
        struct yentry *en = ymap_find(trial, roles[i]);
        if (en)
            km = en->key_mark;
        char *rp = path_child("trial", roles[i]);
        struct ynode *role, *conv = NULL;
        rc = take_map(v, trial, "trial", roles[i], &role);
        if (rc == 0 && role)
            rc = convert_role(v, role, rp, &conv);
        if (conv)
            ymap_put(ts, roles[i], km, conv);
        ynode_free(role);
        free(rp);
    }
    if (rc == 0 && trial)
        drop(v, trial, "trial", "nasMode");
    return rc;
}

static int convert_frameworkcontroller(struct conv *v, struct ynode *root, struct ynode *trial,
                                       struct ynode *ts)
{
    struct ynode *fc;
    if (take_map(v, root, "", "frameworkcontrollerConfig", &fc) < 0)
        return -1;
    if (!fc)
        return cfg_err_mark(v->c, root->mark, "frameworkcontrollerConfig", NULL,
                            "required for platform frameworkcontroller");
    if (ymap_find(fc, "configPath"))
        cfg_warn(v->c, "%s: frameworkcontrollerConfig.configPath (a Framework template) is not "
                 "supported; it is ignored", v->c->file);
    move_table(v, fc, "frameworkcontrollerConfig", ts, k8s_keys);
    int rc = convert_k8s_storage(v, fc, "frameworkcontrollerConfig", ts);
    if (rc == 0)
        rc = leftovers(v, fc, "frameworkcontrollerConfig", k8s_keys, k8s_storage_keys);
    ynode_free(fc);
    if (rc < 0 || !trial)
        return rc;
    struct ymark km;
    struct ynode *roles = ymap_take(trial, "taskRoles", &km);
    if (!roles)
        return 0; /* the v2 check reports the missing taskRoles */
    if (roles->kind != Y_SEQ) {
        rc = cfg_err_mark(v->c, roles->mark, "trial.taskRoles", NULL, "must be a list, got %s",
                          ynode_kind_name(roles));
        ynode_free(roles);
        return rc;
    }
    struct ynode *list = ynode_new(Y_SEQ, roles->mark);
    for (size_t i = 0; i < roles->nitems && rc == 0; i++) {
        char *rp = xasprintf("trial.taskRoles[%zu]", i);
        struct ynode *conv = NULL;
        if (roles->items[i]->kind != Y_MAP)
            rc = cfg_err_mark(v->c, roles->items[i]->mark, rp, NULL, "must be a mapping, got %s",
                              ynode_kind_name(roles->items[i]));
        else
            rc = convert_role(v, roles->items[i], rp, &conv);
        if (conv)
            yseq_push(list, conv);
        free(rp);
    }
    ynode_free(roles);
    if (rc < 0) {
        ynode_free(list);
        return -1;
    }
    ymap_put(ts, "taskRoles", km, list);
    drop(v, trial, "trial", "nasMode");
    return 0;
}

static int convert_remote(struct conv *v, struct ynode *root, struct ynode *ts)
{
    struct ynode *rc_map;
    if (take_map(v, root, "", "remoteConfig", &rc_map) < 0)
        return -1;
    int rc = 0;
    if (rc_map) {
        move_table(v, rc_map, "remoteConfig", ts, remote_keys);
        rc = leftovers(v, rc_map, "remoteConfig", remote_keys, NULL);
        ynode_free(rc_map);
    }
    struct ymark km;
    struct ynode *ml = ymap_take(root, "machineList", &km);
    if (rc < 0 || !ml) {
        ynode_free(ml);
        return rc; /* a missing machineList is reported by the v2 check */
    }
    if (ml->kind != Y_SEQ) {
        rc = cfg_err_mark(v->c, ml->mark, "machineList", NULL, "must be a list, got %s",
                          ynode_kind_name(ml));
        ynode_free(ml);
        return rc;
    }
    struct ynode *list = ynode_new(Y_SEQ, ml->mark);
    for (size_t i = 0; i < ml->nitems && rc == 0; i++) {
        struct ynode *m = ml->items[i];
        char *mp = xasprintf("machineList[%zu]", i);
        if (m->kind != Y_MAP) {
            rc = cfg_err_mark(v->c, m->mark, mp, NULL, "must be a mapping, got %s",
                              ynode_kind_name(m));
        } else {
            struct ynode *out = ynode_new(Y_MAP, m->mark);
            move_table(v, m, mp, out, machine_keys);
            yseq_push(list, out);
            rc = leftovers(v, m, mp, machine_keys, NULL);
        }
        free(mp);
    }
    ynode_free(ml);
    if (rc < 0) {
        ynode_free(list);
        return -1;
    }
    ymap_put(ts, "machineList", km, list);
    return 0;
}

/* platform config section (e.g. amlConfig) moved by a table; absent is fine here, the
 * v2 check then names the missing keys */
static int convert_section(struct conv *v, struct ynode *root, const char *name,
                           const struct rename *t, struct ynode *ts)
{
    struct ynode *s;
    if (take_map(v, root, "", name, &s) < 0)
        return -1;
    if (!s)
        return 0;
    move_table(v, s, name, ts, t);
    int rc = leftovers(v, s, name, t, NULL);
    ynode_free(s);
    return rc;
}

/* Each platform's v1 form (common/platform_list.h's v1_<id>): moves its v1 sections and
 * its platform-specific trial keys (taken out of trial) into the v2 mapping ts, or says
 * why it has none. What remains of trial is checked by the caller. */
struct v1_platform {
    struct conv *v;
    struct ynode *root, *trial, *ts;
    const struct ynode *plat;
    const char *plat_path;
};

static int v1_local(struct v1_platform *p) { return convert_section(p->v, p->root, "localConfig", local_keys, p->ts); }
static int v1_remote(struct v1_platform *p) { return convert_remote(p->v, p->root, p->ts); }
static int v1_kubeflow(struct v1_platform *p) { return convert_kubeflow(p->v, p->root, p->trial, p->ts); }
static int v1_frameworkcontroller(struct v1_platform *p)
{
    return convert_frameworkcontroller(p->v, p->root, p->trial, p->ts);
}

/* a platform whose v1 trial keys move into the mapping and whose v1 section (if any)
 * converts by a rename table */
static int v1_trial_section(struct v1_platform *p, const struct rename *trial_keys, const char *section,
                            const struct rename *keys)
{
    if (p->trial)
        move_table(p->v, p->trial, "trial", p->ts, trial_keys);
    return section ? convert_section(p->v, p->root, section, keys, p->ts) : 0;
}
static int v1_openpai(struct v1_platform *p) { return v1_trial_section(p, pai_trial_keys, "paiConfig", pai_keys); }
static int v1_aml(struct v1_platform *p) { return v1_trial_section(p, aml_trial_keys, "amlConfig", aml_keys); }
static int v1_dlc(struct v1_platform *p) { return v1_trial_section(p, dlc_trial_keys, "dlcConfig", dlc_keys); }
static int v1_adl(struct v1_platform *p) { return v1_trial_section(p, adl_trial_keys, NULL, NULL); }

static int v1_dlts(struct v1_platform *p)
{
    /* NNI v2.3's dltsConfig: its v2 keys are trialq's (docs/platforms/dlts.md) */
    return cfg_err_mark(p->v->c, p->plat->mark, p->plat_path, NULL, "platform dlts is supported in the v2 form "
                        "only; write trainingService: {platform: dlts, dashboard: ..., ...} (docs/platforms/dlts.md)");
}

static int v1_slurm(struct v1_platform *p)
{
    /* trialq's own platform, newer than NNI's v1 format */
    return cfg_err_mark(p->v->c, p->plat->mark, p->plat_path, NULL, "platform slurm has no v1 form; write a "
                        "v2 config (trainingService: {platform: slurm, ...}, docs/platforms/slurm.md)");
}

static const struct {
    const char *name;
    int (*convert)(struct v1_platform *p);
} v1_platforms[] = {
#define V1_PLATFORM_(id, on_host, shared_storage, machines) {#id, v1_##id},
    TRIALQ_PLATFORMS(V1_PLATFORM_)
#undef V1_PLATFORM_
};

/* Builds the v2 trainingService mapping for one v1 platform name (NNI's v1 "pai" is
 * openpai). */
static int convert_platform(struct conv *v, struct ynode *root, struct ynode *trial,
                            const struct ynode *plat, const char *plat_path, struct ynode **out)
{
    const char *name = plat->text;
    const char *v2name = strcmp(name, "pai") == 0 ? "openpai" : name;
    struct ynode *ts = ynode_new(Y_MAP, plat->mark);
    struct ynode *pn = ynode_new_str(v2name, plat->mark);
    pn->origin = xstrdup(plat_path);
    ymap_put(ts, "platform", plat->mark, pn);
    struct v1_platform p = {v, root, trial, ts, plat, plat_path};
    int rc = -2;
    for (size_t i = 0; rc == -2 && i < sizeof v1_platforms / sizeof v1_platforms[0]; i++)
        if (strcmp(v2name, v1_platforms[i].name) == 0)
            rc = v1_platforms[i].convert(&p);
    if (rc == -2 && strcmp(name, "paiYarn") == 0)
        rc = cfg_err_mark(v->c, plat->mark, plat_path, NULL,
                          "platform %s was removed from NNI and is not supported", name);
    else if (rc == -2)
        rc = cfg_err_mark(v->c, plat->mark, plat_path, NULL, "unknown platform \"%.40s\"; one of %s, hybrid "
                          "(openpai also as pai)", name, PLATFORM_NAMES);
    if (rc < 0) {
        ynode_free(ts);
        return -1;
    }
    *out = ts;
    return 0;
}

static int convert_training_service(struct conv *v, struct ynode *root, struct ynode *trial,
                                     struct ynode *plat, struct ymark pkm, struct ynode *v2)
{
    if (plat->kind != Y_STR)
        return cfg_err_mark(v->c, plat->mark, "trainingServicePlatform", NULL,
                            "must be a platform name, got %s", ynode_kind_name(plat));
    if (strcmp(plat->text, "hybrid") != 0) {
        struct ynode *ts;
        if (convert_platform(v, root, trial, plat, "trainingServicePlatform", &ts) < 0)
            return -1;
        ymap_put(v2, "trainingService", pkm, ts);
        return 0;
    }
    struct ynode *hc;
    if (take_map(v, root, "", "hybridConfig", &hc) < 0)
        return -1;
    if (!hc)
        return cfg_err_mark(v->c, plat->mark, "hybridConfig", NULL,
                            "required for platform hybrid ({trainingServicePlatforms: [...]})");
    struct ynode *names = ymap_take(hc, "trainingServicePlatforms", NULL);
    static const struct rename hc_keys[] = {{"trainingServicePlatforms", ""}, {NULL, NULL}};
    int rc = leftovers(v, hc, "hybridConfig", hc_keys, NULL);
    if (rc == 0 && (!names || names->kind != Y_SEQ || names->nitems == 0))
        rc = cfg_err_mark(v->c, names ? names->mark : hc->mark,
                          "hybridConfig.trainingServicePlatforms", NULL,
                          "must be a non-empty list of platform names");
    struct ynode *list = ynode_new(Y_SEQ, names ? names->mark : hc->mark);
    for (size_t i = 0; rc == 0 && i < names->nitems; i++) {
        char *pp = xasprintf("hybridConfig.trainingServicePlatforms[%zu]", i);
        struct ynode *ts = NULL;
        if (names->items[i]->kind != Y_STR)
            rc = cfg_err_mark(v->c, names->items[i]->mark, pp, NULL,
                              "must be a platform name, got %s", ynode_kind_name(names->items[i]));
        else if (strcmp(names->items[i]->text, "hybrid") == 0)
            rc = cfg_err_mark(v->c, names->items[i]->mark, pp, NULL, "hybrid cannot nest");
        else
            rc = convert_platform(v, root, trial, names->items[i], pp, &ts);
        if (ts)
            yseq_push(list, ts);
        free(pp);
    }
    ynode_free(names);
    ynode_free(hc);
    if (rc < 0) {
        ynode_free(list);
        return -1;
    }
    ymap_put(v2, "trainingService", pkm, list);
    return 0;
}

static int convert(struct conv *v, struct ynode *root, struct ynode *v2)
{
    struct ymark pkm;
    struct ynode *plat = ymap_take(root, "trainingServicePlatform", &pkm);
    struct ynode *trial = NULL;
    int rc = 0;

    struct ynode *mp = ymap_take(root, "multiPhase", NULL);
    if (mp && mp->kind == Y_BOOL && mp->b)
        rc = cfg_err_mark(v->c, mp->mark, "multiPhase", NULL, "multi-phase experiments are no "
                          "longer supported (removed in NNI v2.0); remove multiPhase");
    else if (mp)
        note_dropped(v, "multiPhase");
    ynode_free(mp);

    if (rc == 0) {
        move_table(v, root, "", v2, top_keys);
        rc = take_map(v, root, "", "trial", &trial);
    }
    if (rc == 0 && trial)
        move_table(v, trial, "trial", v2, trial_keys);
    if (rc == 0)
        rc = convert_algo(v, root, "tuner", "builtinTunerName", v2);
    if (rc == 0)
        rc = convert_algo(v, root, "assessor", "builtinAssessorName", v2);
    if (rc == 0)
        rc = convert_algo(v, root, "advisor", "builtinAdvisorName", v2);
    if (rc == 0)
        rc = convert_training_service(v, root, trial, plat, pkm, v2);
    if (rc == 0 && trial) {
        /* suggestions come from every platform's trial keys */
        static const struct rename all_trial[] = {
            {"command", ""}, {"codeDir", ""}, {"gpuNum", ""}, {"image", ""}, {"cpuNum", ""},
            {"memoryMB", ""}, {"memorySize", ""}, {"virtualCluster", ""},
            {"nniManagerNFSMountPath", ""}, {"containerNFSMountPath", ""},
            {"paiStorageConfigName", ""}, {"paiConfigPath", ""}, {"worker", ""}, {"ps", ""},
            {"master", ""}, {"taskRoles", ""}, {"namespace", ""}, {"nfs", ""},
            {"checkpoint", ""}, {"adaptive", ""}, {"imagePullSecrets", ""}, {NULL, NULL},
        };
        rc = leftovers(v, trial, "trial", all_trial, NULL);
    }
    if (rc == 0) {
        /* sections of platforms this experiment does not use */
        for (const struct rename *t = top_sections; t->v1; t++)
            if (str_ends(t->v1, "Config") || strcmp(t->v1, "machineList") == 0)
                drop(v, root, "", t->v1);
        rc = leftovers(v, root, "", top_keys, top_sections);
    }
    ynode_free(plat);
    ynode_free(trial);
    return rc;
}

int v1_detect(const struct ynode *root)
{
    return ymap_find(root, "trainingServicePlatform") != NULL;
}

int v1_convert(struct vctx *c, struct ynode *v1, struct ynode **out)
{
    struct conv v = {.c = c};
    sb_init(&v.dropped);
    struct ynode *v2 = ynode_new(Y_MAP, v1->mark);
    int rc = convert(&v, v1, v2);
    ynode_free(v1);
    if (rc < 0) {
        ynode_free(v2);
        sb_free(&v.dropped);
        *out = NULL;
        return -1;
    }
    if (v.dropped.len)
        cfg_warn(c, "%s: v1 config converted to v2; keys dropped: %s", c->file, v.dropped.buf);
    else
        cfg_warn(c, "%s: v1 config converted to v2", c->file);
    sb_free(&v.dropped);
    *out = v2;
    return 0;
}
