/* algo.c: nnictl algo list | show NAME | register --meta_path FILE | unregister NAME.
 * The built-in algorithms are trialq's, in C; registered ones are Python classes kept
 * in NNI's registered_algorithms.yml (config/algos.c), which a config names like a
 * built-in and which then run in NNI's dispatcher process. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "config/config.h"
#include "tuners/assessor.h"
#include "tuners/tuner.h"

static const char *const kinds[] = {"tuner", "assessor", "advisor"};
static const char *const sections[] = {"tuners", "assessors", "advisors"};

/* 0 tuner, 1 assessor, 2 advisor for a built-in name (or alias), else -1 */
static int builtin_kind_of(const char *name)
{
    const struct tuner_ops *t = tuner_find(name);
    if (t)
        return t->advisor ? 2 : 0;
    if (nni_builtin_find(name))
        return 0; /* NNI's Python-only tuners: all tuners */
    return assessor_find(name) ? 1 : -1;
}

static const char *str_of(const cJSON *o, const char *key, const char *def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : def;
}

#define ROW "%-22s %-10s %-8s %-28s %s\n"


static int cmd_list_fn(int argc, char **argv)
{
    (void)argv;
    if (argc > 1)
        return cli_error("usage: %s", cmd_algo_list.usage);
    struct errbuf e;
    cJSON *reg;
    if (algo_registry_load(&reg, &e) < 0)
        return cli_error("%s", e.msg);
    printf(ROW, "Name", "Type", "source", "Class Name", "Module Name");
    const struct tuner_ops *t;
    for (int i = 0; (t = tuner_builtin(i)); i++)
        printf(ROW, t->name, kinds[t->advisor ? 2 : 0], "trialq", "(built in, C)", "-");
    const struct assessor_ops *as;
    for (int i = 0; (as = assessor_builtin(i)); i++)
        printf(ROW, as->name, kinds[1], "trialq", "(built in, C)", "-");
    const struct nni_builtin *b;
    for (int i = 0; (b = nni_builtin_at(i)); i++) {
        const char *dot = strrchr(b->class_name, '.');
        char *module = xstrndup(b->class_name, (size_t)(dot - b->class_name));
        printf(ROW, b->name, kinds[0], "nni", dot + 1, module);
        free(module);
    }
    for (size_t s = 0; s < sizeof sections / sizeof *sections; s++) {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(reg, sections[s])) {
            const char *cls = str_of(it, "className", "");
            const char *dot = strrchr(cls, '.');
            char *module = dot ? xstrndup(cls, (size_t)(dot - cls)) : xstrdup("");
            printf(ROW, str_of(it, "builtinName", "?"), kinds[s], str_of(it, "source", "user"), dot ? dot + 1 : cls,
                   module);
            free(module);
        }
    }
    cJSON_Delete(reg);
    return 0;
}

static int cmd_show_fn(int argc, char **argv)
{
    if (argc != 2)
        return cli_error("usage: %s", cmd_algo_show.usage);
    const char *name = argv[1];
    const struct nni_builtin *b = tuner_find(name) ? NULL : nni_builtin_find(name);
    if (b) {
        printf("builtinName: %s\nalgoType: tuner\nclassName: %s\nsource: nni (NNI's Python class, run in the "
               "dispatcher process; pip install %s)\n", b->name, b->class_name, b->install);
        return 0;
    }
    int kind = builtin_kind_of(name);
    if (kind >= 0) {
        printf("builtinName: %s\nalgoType: %s\nsource: trialq (built in, C; classArgs in docs/config.md)\n", name,
               kinds[kind]);
        return 0;
    }
    struct errbuf e;
    cJSON *reg;
    if (algo_registry_load(&reg, &e) < 0)
        return cli_error("%s", e.msg);
    int rc = 1;
    for (size_t s = 0; s < sizeof sections / sizeof *sections && rc; s++) {
        const cJSON *it = algo_registry_find(reg, sections[s], name);
        if (!it)
            continue;
        printf("algoType: %s\n", kinds[s]);
        const cJSON *kv;
        cJSON_ArrayForEach(kv, it) {
            char *v = cJSON_IsString(kv) ? xstrdup(kv->valuestring) : cJSON_PrintUnformatted(kv);
            printf("%s: %s\n", kv->string, v);
            free(v);
        }
        rc = 0;
    }
    cJSON_Delete(reg);
    return rc ? cli_error("algorithm %s not found (nnictl algo list shows them)", name) : 0;
}

/* Whether python can import module.Class (NNI checks it before registering). 0 ok, else
 * 1 with the message printed. */
static int import_check(const char *cls)
{
    char why[512];
    if (py_class_check(cls, NULL, 1, why, sizeof why) < 0)
        return cli_error("cannot import %s with %s: %s", cls, py_interpreter(), why);
    return 0;
}

/* One meta entry checked and turned into a registry entry (or 1 with the error printed). */
static int meta_entry(const char *path, int i, const cJSON *m, const cJSON *reg, int *kind_out, cJSON **entry_out)
{
    char where[64] = "";
    if (i >= 0)
        snprintf(where, sizeof where, "algorithms[%d].", i);
    if (!cJSON_IsObject(m))
        return cli_error("%s: %sexpected a mapping with algoType, builtinName and className", path, where);
    const cJSON *kv;
    cJSON_ArrayForEach(kv, m) {
        static const char *const known[] = {"algoType", "builtinName", "className", "classArgsValidator",
                                            "acceptClassArgs", "classArgs", NULL};
        int ok = 0;
        for (int k = 0; known[k]; k++)
            ok |= strcmp(kv->string, known[k]) == 0;
        if (!ok)
            return cli_error("%s: %s%s: unknown key (known: algoType, builtinName, className, classArgsValidator, "
                             "acceptClassArgs, classArgs)", path, where, kv->string);
    }
    const char *type = str_of(m, "algoType", NULL), *name = str_of(m, "builtinName", NULL);
    const char *cls = str_of(m, "className", NULL), *validator = str_of(m, "classArgsValidator", NULL);
    int kind = -1;
    for (int k = 0; type && k < 3; k++)
        if (strcmp(type, kinds[k]) == 0)
            kind = k;
    if (kind < 0)
        return cli_error("%s: %salgoType: must be tuner, assessor or advisor%s%s%s", path, where, type ? " (got '" : "",
                         type ? type : "", type ? "')" : "");
    if (!name || !*name)
        return cli_error("%s: %sbuiltinName: required (the name configs will use)", path, where);
    if (builtin_kind_of(name) >= 0)
        return cli_error("%s: %sbuiltinName: %s is a built-in algorithm of trialq; choose another name", path, where,
                         name);
    for (size_t s = 0; s < sizeof sections / sizeof *sections; s++) {
        const cJSON *had = algo_registry_find(reg, sections[s], name);
        if (had) {
            const char *as = str_of(had, "builtinName", name);
            return cli_error("%s: %sbuiltinName: %s is registered already as a %s (nnictl algo unregister %s first)",
                             path, where, as, kinds[s], as);
        }
    }
    const char *dot = cls ? strrchr(cls, '.') : NULL;
    if (!cls || !dot || dot == cls || !dot[1])
        return cli_error("%s: %sclassName: required, \"module.ClassName\"%s%s%s", path, where, cls ? " (got '" : "",
                         cls ? cls : "", cls ? "')" : "");
    if (import_check(cls) != 0 || (validator && import_check(validator) != 0))
        return 1;
    cJSON *entry = cJSON_CreateObject();
    cJSON_AddStringToObject(entry, "builtinName", name);
    cJSON_AddStringToObject(entry, "className", cls);
    if (validator)
        cJSON_AddStringToObject(entry, "classArgsValidator", validator);
    const cJSON *acc = cJSON_GetObjectItemCaseSensitive(m, "acceptClassArgs");
    if (cJSON_IsBool(acc))
        cJSON_AddBoolToObject(entry, "acceptClassArgs", cJSON_IsTrue(acc));
    const cJSON *ca = cJSON_GetObjectItemCaseSensitive(m, "classArgs");
    if (cJSON_IsObject(ca))
        cJSON_AddItemToObject(entry, "classArgs", cJSON_Duplicate(ca, 1));
    cJSON_AddStringToObject(entry, "source", "user");
    *kind_out = kind;
    *entry_out = entry;
    return 0;
}

static const struct option register_opts[] = {{"meta_path", required_argument, NULL, 'm'}, {NULL, 0, NULL, 0}};
static int cmd_register_fn(int argc, char **argv)
{
    const char *meta = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "m:", register_opts, NULL)) != -1) {
        if (c != 'm')
            return cli_error("usage: %s", cmd_algo_register.usage);
        meta = optarg;
    }
    if (!meta)
        return cli_error("the following arguments are required: --meta_path/-m");
    struct errbuf e;
    cJSON *m = NULL;
    if (yaml_file_to_json(meta, &m, &e) < 0)
        return cli_error("%s", e.msg);
    int rc;
    cJSON *reg;
    if (algo_registry_load(&reg, &e) < 0) {
        cJSON_Delete(m);
        return cli_error("%s", e.msg);
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(m, "algorithms");
    int n = cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 1;
    rc = n == 0 ? cli_error("%s: algorithms: empty; nothing to register", meta) : 0;
    for (int i = 0; i < n && rc == 0; i++) {
        int kind = 0;
        cJSON *entry = NULL;
        rc = meta_entry(meta, cJSON_IsArray(list) ? i : -1, cJSON_IsArray(list) ? cJSON_GetArrayItem(list, i) : m,
                        reg, &kind, &entry);
        if (rc == 0)
            cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(reg, sections[kind]), entry);
    }
    /* all or nothing: the file is written once every entry passed */
    if (rc == 0 && algo_registry_save(reg, &e) < 0)
        rc = cli_error("%s", e.msg);
    if (rc == 0)
        for (int i = 0; i < n; i++)
            printf("Registered %s\n", str_of(cJSON_IsArray(list) ? cJSON_GetArrayItem(list, i) : m, "builtinName", "?"));
    cJSON_Delete(reg);
    cJSON_Delete(m);
    return rc;
}

static int cmd_unregister_fn(int argc, char **argv)
{
    if (argc != 2)
        return cli_error("usage: %s", cmd_algo_unregister.usage);
    const char *name = argv[1];
    if (builtin_kind_of(name) >= 0)
        return cli_error("cannot unregister %s: it is a built-in algorithm", name);
    struct errbuf e;
    cJSON *reg;
    if (algo_registry_load(&reg, &e) < 0)
        return cli_error("%s", e.msg);
    int found = 0;
    for (size_t s = 0; s < sizeof sections / sizeof *sections; s++) {
        cJSON *list = cJSON_GetObjectItemCaseSensitive(reg, sections[s]);
        for (int i = cJSON_GetArraySize(list) - 1; i >= 0; i--) {
            const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, i), "builtinName");
            if (cJSON_IsString(n) && strcasecmp(n->valuestring, name) == 0) {
                cJSON_DeleteItemFromArray(list, i);
                found = 1;
            }
        }
    }
    int rc = 0;
    if (!found)
        rc = cli_error("algorithm %s is not registered (nnictl algo list shows them)", name);
    else if (algo_registry_save(reg, &e) < 0)
        rc = cli_error("%s", e.msg);
    else
        printf("%s unregistered\n", name);
    cJSON_Delete(reg);
    return rc;
}

const struct cli_cmd cmd_algo_list = {
    "algo", "list", "nnictl algo list", cmd_list_fn,
    "Lists the built-in and registered algorithms.",
    NULL};
const struct cli_cmd cmd_algo_show = {
    "algo", "show", "nnictl algo show NAME", cmd_show_fn,
    "Prints an algorithm's registration.",
    NULL};
const struct cli_cmd cmd_algo_register = {
    "algo", "register", "nnictl algo register --meta_path FILE", cmd_register_fn,
    "Registers customized Python algorithms from a meta file.",
    register_opts};
const struct cli_cmd cmd_algo_reg = {
    "algo", "reg", "nnictl algo reg --meta_path FILE (alias of register)", cmd_register_fn,
    "Alias of algo register.",
    register_opts};
const struct cli_cmd cmd_algo_unregister = {
    "algo", "unregister", "nnictl algo unregister NAME", cmd_unregister_fn,
    "Removes a registered algorithm.",
    NULL};
const struct cli_cmd cmd_algo_unreg = {
    "algo", "unreg", "nnictl algo unreg NAME (alias of unregister)", cmd_unregister_fn,
    "Alias of algo unregister.",
    NULL};
