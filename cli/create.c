/* create.c: nnictl create | resume | view. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/secrets.h"
#include "config/config.h"
#include "tuners/assessor.h"
#include "tuners/tuner.h"
#include "workers/worker.h"

/* Turns a search-space error path into file:line:col when the space is inline. */
static int search_space_error(const struct exp_config *cfg, const char *errpath, const char *msg)
{
    int line, col;
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(cfg->canonical, "searchSpaceFile");
    if (cJSON_IsString(file)) {
        if (config_mark_of(cfg, "searchSpaceFile", &line, &col) == 0)
            return cli_error("%s: searchSpace: %s (searchSpaceFile at %s:%d:%d)", file->valuestring, msg,
                             cfg->source_path, line, col);
        return cli_error("%s: searchSpace: %s", file->valuestring, msg);
    }
    char key[512];
    snprintf(key, sizeof key, "searchSpace.%s", errpath);
    /* the path may use [i] and . separators; try the most precise key first */
    char *k = xstrdup(key);
    for (;;) {
        if (config_mark_of(cfg, k, &line, &col) == 0) {
            free(k);
            return cli_error("%s:%d:%d: searchSpace: %s", cfg->source_path, line, col, msg);
        }
        char *cut = strrchr(k, '.');
        char *br = strrchr(k, '[');
        if (br > cut)
            cut = br;
        if (!cut)
            break;
        *cut = '\0';
    }
    free(k);
    return cli_error("%s: searchSpace: %s", cfg->source_path, msg);
}

/* A check of the tuner or assessor failed with msg ("tuner.classArgs.R: must be ..."):
 * the error is placed at the key the message names when the config has it (else at
 * `key`), and names the section as the user wrote it (advisor: NNI moves it to tuner). */
static int algo_error(const struct exp_config *cfg, const char *key, const char *msg)
{
    int line, col;
    char named[256] = "";
    const char *colon = strstr(msg, ": ");
    if (colon && (size_t)(colon - msg) < sizeof named && !memchr(msg, ' ', (size_t)(colon - msg)))
        snprintf(named, sizeof named, "%.*s", (int)(colon - msg), msg);
    /* the message's own key when it is one below `key` (tuner.classArgs.R under
     * tuner.classArgs), and the config has it */
    size_t kl = strlen(key);
    int below = strncmp(named, key, kl) == 0 && named[kl] == '.';
    const char *at = below && config_mark_of(cfg, named, &line, &col) == 0 ? named : key;
    int advisor = str_starts(msg, "tuner") && config_mark_of(cfg, "advisor", &line, &col) == 0;
    char *shown = advisor ? xasprintf("advisor%s", msg + 5) : xstrdup(msg);
    int rc = config_mark_of(cfg, at, &line, &col) == 0
                 ? cli_error("%s:%d:%d: %s", cfg->source_path, line, col, shown)
                 : cli_error("%s: %s", cfg->source_path, shown);
    free(shown);
    return rc;
}

/* The section `key` (tuner: or advisor: as written) becomes the customized section of
 * class cls, with the entry's default classArgs (dflt, may be NULL) under the config's. */
static void make_custom(struct exp_config *cfg, struct algo_config *algo, const char *key, const char *cls,
                        const cJSON *dflt)
{
    cJSON *sec = cJSON_GetObjectItemCaseSensitive(cfg->canonical, key);
    if (!sec && strcmp(key, "tuner") == 0)
        sec = cJSON_GetObjectItemCaseSensitive(cfg->canonical, "advisor");
    if (sec) {
        cJSON_DeleteItemFromObjectCaseSensitive(sec, "name");
        cJSON_AddStringToObject(sec, "className", cls);
        cJSON *args = cJSON_GetObjectItemCaseSensitive(sec, "classArgs");
        if (cJSON_IsObject(dflt)) {
            if (!args)
                args = cJSON_AddObjectToObject(sec, "classArgs");
            const cJSON *kv;
            cJSON_ArrayForEach(kv, dflt)
                if (!cJSON_GetObjectItemCaseSensitive(args, kv->string))
                    cJSON_AddItemToObject(args, kv->string, cJSON_Duplicate(kv, 1));
        }
    }
    free(algo->name);
    algo->name = NULL;
    algo->class_name = xstrdup(cls);
}

/* A section naming an algorithm registered with `nnictl algo register` (NNI's
 * registered_algorithms.yml) becomes the customized section it stands for: its class
 * runs in NNI's dispatcher process, imported from the Python path as NNI imports a
 * registered class. Built-in names come first. 0, or 1 after an error. */
static int resolve_registered(struct exp_config *cfg, struct algo_config *algo, const char *key,
                              const char *const *sections, const cJSON *reg)
{
    if (!algo->set || !algo->name)
        return 0;
    const cJSON *entry = NULL;
    for (int s = 0; sections[s] && !entry; s++)
        entry = algo_registry_find(reg, sections[s], algo->name);
    if (!entry)
        return 0;
    const cJSON *cls = cJSON_GetObjectItemCaseSensitive(entry, "className");
    if (!cJSON_IsString(cls) || !strchr(cls->valuestring, '.')) {
        char *path = algo_registry_path();
        int rc = cli_error("%s: %s.name: %s is registered in %s without a className \"module.Class\"",
                           cfg->source_path, key, algo->name, path);
        free(path);
        return rc;
    }
    make_custom(cfg, algo, key, cls->valuestring, cJSON_GetObjectItemCaseSensitive(entry, "classArgs"));
    return 0;
}

/* A built-in name of NNI that trialq has no C implementation of (SMAC, PPO, ...): its
 * section becomes NNI's own class, which the dispatcher process imports from the `nni`
 * package as NNI's dispatcher does. Returns the entry, or NULL for any other name. */
static const struct nni_builtin *resolve_nni_python(struct exp_config *cfg, struct algo_config *algo,
                                                    const char *key, const char *section)
{
    if (!algo->set || !algo->name)
        return NULL;
    const struct nni_builtin *b = nni_builtin_find(algo->name);
    if (!b || strcmp(b->section, section) != 0)
        return NULL;
    make_custom(cfg, algo, key, b->class_name, NULL);
    return b;
}

static int registered_algorithms(struct exp_config *cfg, const struct nni_builtin **py_tuner)
{
    *py_tuner = NULL;
    if (cfg->tuner.name && !tuner_find(cfg->tuner.name))
        *py_tuner = resolve_nni_python(cfg, &cfg->tuner, "tuner", "tuners");
    int custom = (cfg->tuner.name && !tuner_find(cfg->tuner.name)) ||
                 (cfg->assessor.set && cfg->assessor.name && !assessor_find(cfg->assessor.name));
    if (!custom)
        return 0; /* the registry is not read when every name is a built-in one */
    struct errbuf e;
    cJSON *reg;
    if (algo_registry_load(&reg, &e) < 0)
        return cli_error("%s", e.msg);
    static const char *const tuner_sections[] = {"tuners", "advisors", NULL};
    static const char *const assessor_sections[] = {"assessors", NULL};
    int rc = 0;
    if (cfg->tuner.name && !tuner_find(cfg->tuner.name))
        rc = resolve_registered(cfg, &cfg->tuner, "tuner", tuner_sections, reg);
    if (rc == 0 && cfg->assessor.set && cfg->assessor.name && !assessor_find(cfg->assessor.name))
        rc = resolve_registered(cfg, &cfg->assessor, "assessor", assessor_sections, reg);
    cJSON_Delete(reg);
    return rc;
}

/* A customized section's class must be there for the configured python, as under NNI
 * (codeDirectory is only appended to sys.path, so pip-installed modules work): found
 * with find_spec; NNI's own class of a built-in name (py) imported with its libraries.
 * 0, or 1 after an error placed at the key. */
static int class_check(const struct exp_config *cfg, const struct algo_config *algo, const char *key,
                       const struct nni_builtin *py)
{
    if (!algo->set || !algo->class_name)
        return 0;
    char why[512], msg[1536];
    if (py_class_check(algo->class_name, py ? NULL : algo->code_directory, py != NULL, why, sizeof why) == 0)
        return 0;
    if (py) {
        snprintf(msg, sizeof msg, "%s.name: %s runs NNI's own Python class %s, which %s cannot import (%s); "
                 "install it for that python: pip install %s (or set TRIALQ_PYTHON to a python that has it)",
                 key, py->name, py->class_name, py_interpreter(), why, py->install);
        char at[64];
        snprintf(at, sizeof at, "%s.name", key);
        return algo_error(cfg, at, msg);
    }
    if (algo->code_directory)
        snprintf(msg, sizeof msg, "%s.className: module of \"%s\" not found by %s (%s), with codeDirectory %s "
                 "appended to its sys.path", key, algo->class_name, py_interpreter(), why, algo->code_directory);
    else
        snprintf(msg, sizeof msg, "%s.className: module of \"%s\" not found by %s (%s); install it, or set "
                 "codeDirectory to the directory holding it", key, algo->class_name, py_interpreter(), why);
    char at[64];
    snprintf(at, sizeof at, "%s.className", key);
    return algo_error(cfg, at, msg);
}

/* Each platform of the trainingService (one, or each of a hybrid list) is supported and
 * passes its own check; a GPU request on this host's GPUs it cannot meet is refused. */
static int check_platforms(struct exp_config *cfg)
{
    struct errbuf e;
    /* hybrid (a list): each listed platform must be supported and is checked */
    const cJSON *tsl = cJSON_GetObjectItemCaseSensitive(cfg->canonical, "trainingService");
    int nplat = cJSON_IsArray(tsl) ? cJSON_GetArraySize(tsl) : 1;
    const cJSON *gpu_entry = NULL; /* the first platform on this host's GPUs, and its index */
    int gpu_at = -1;
    for (int k = 0; k < nplat; k++) {
        const cJSON *entry = cJSON_IsArray(tsl) ? cJSON_GetArrayItem(tsl, k) : tsl;
        const cJSON *pn = cJSON_GetObjectItemCaseSensitive(entry, "platform");
        const char *name = cJSON_IsString(pn) ? pn->valuestring : cfg->platform;
        const struct platform_ops *ops = platform_find(name);
        if (!ops) {
            char *names = platform_names_dup(", ");
            int rc = cli_error("%s: trainingService.platform: '%s' is not supported yet (supported: %s)",
                               cfg->source_path, name, names);
            free(names);
            return rc;
        }
        /* the platform's own check (OpenPAI: its token; remote: every machine; a
         * cluster: kubeconfig, server, credentials, CRD, storage): a bad one is
         * reported now and nothing is created */
        if (ops->preflight && ops->preflight(ops, entry, cfg->canonical, &e) < 0)
            return cli_error("%s: trainingService: %s", cfg->source_path, e.msg);
        if (ops->gpu_mode == PLATFORM_GPU_HOST && !gpu_entry) {
            gpu_entry = entry;
            gpu_at = cJSON_IsArray(tsl) ? k : -1;
        }
    }
    /* GPUs: a request on this host's GPUs it cannot meet is reported now (runs nvidia-smi) */
    char gkey[128], gmsg[640];
    int grc = gpu_check_host(gpu_entry, gpu_at, cfg->canonical, gkey, sizeof gkey, gmsg, sizeof gmsg);
    if (grc < 0) {
        /* trialGpuNumber written only at the top level (inherited): point there */
        const char *at = gkey, *dot = strrchr(gkey, '.');
        int l1, c1, l2, c2;
        char parent[128];
        snprintf(parent, sizeof parent, "%.*s", dot ? (int)(dot - gkey) : 0, gkey);
        if (dot && strcmp(dot + 1, "trialGpuNumber") == 0 && cJSON_GetObjectItemCaseSensitive(cfg->canonical, dot + 1) &&
            config_mark_of(cfg, gkey, &l1, &c1) == 0 && config_mark_of(cfg, parent, &l2, &c2) == 0 && l1 == l2 &&
            c1 == c2)
            at = dot + 1;
        return algo_error(cfg, at, gmsg);
    }
    if (grc > 0)
        fprintf(stderr, "WARNING: %s: %s\n", cfg->source_path, gmsg);
    return 0;
}

/* Everything a config must pass before anything is created. */
static int validate(struct exp_config *cfg, int64_t *seed)
{
    struct errbuf e;
    char errpath[256] = "";
    struct ss_space *space = NULL;
    *seed = -1;
    /* a customized tuner or assessor (className, a registered name, NNI's Python-only
     * built-ins) runs in NNI's dispatcher process: the configured python must find its
     * class; its classArgs are the class's business, except for NNI's built-ins */
    const struct nni_builtin *py_tuner = NULL;
    int reg_rc = registered_algorithms(cfg, &py_tuner);
    /* NNI's class's ClassArgsValidator, before the import (it needs no python) */
    if (reg_rc == 0 && py_tuner && nni_builtin_check_args(py_tuner, cfg->tuner.class_args, &e) < 0)
        return algo_error(cfg, "tuner.classArgs", e.msg);
    if (reg_rc == 0)
        reg_rc = class_check(cfg, &cfg->tuner, "tuner", py_tuner);
    if (reg_rc == 0)
        reg_rc = class_check(cfg, &cfg->assessor, "assessor", NULL);
    if (reg_rc != 0)
        return reg_rc;
    /* NNI hands a customized tuner the search space as written; built-ins validate it */
    if (cfg->tuner.class_name)
        space = ss_raw(cfg->search_space);
    else if (ss_parse(cfg->search_space, &space, errpath, sizeof errpath, &e) < 0)
        return search_space_error(cfg, errpath, e.msg);
    if (cfg->tuner.name) {
        const struct tuner_ops *t = tuner_find(cfg->tuner.name);
        if (!t) {
            char msg[1024];
            snprintf(msg, sizeof msg, "tuner.name: unknown tuner '%s' (known: %s; and those of nnictl algo list)",
                     cfg->tuner.name, tuner_names());
            ss_free(space);
            return algo_error(cfg, "tuner.name", msg);
        }
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(cfg->tuner.class_args, "seed");
        if (cJSON_IsNumber(s))
            *seed = (int64_t)s->valuedouble;
        void *state = NULL;
        if (t->create(cfg->tuner.class_args, space, (uint64_t)(*seed < 0 ? 0 : *seed), &state, &e) < 0) {
            ss_free(space);
            return algo_error(cfg, "tuner.classArgs", e.msg);
        }
        t->destroy(state);
    }
    ss_free(space);
    if (cfg->assessor.set && cfg->assessor.name) {
        const struct assessor_ops *as = assessor_find(cfg->assessor.name);
        if (!as) {
            char msg[1024];
            snprintf(msg, sizeof msg, "assessor.name: unknown assessor '%s' (known: %s; and those of nnictl algo list)",
                     cfg->assessor.name, assessor_names());
            return algo_error(cfg, "assessor.name", msg);
        }
        void *astate = NULL;
        if (as->create(cfg->assessor.class_args, &astate, &e) < 0)
            return algo_error(cfg, "assessor.classArgs", e.msg);
        as->destroy(astate);
    }
    return check_platforms(cfg);
}

static int foreground_loop(struct db *db, const char *id, pid_t api);

static volatile sig_atomic_t g_interrupted;
static void on_int(int sig) { (void)sig; g_interrupted = 1; }

struct create_opts {
    const char *path, *home_opt, *bind, *prefix_opt;
    int port, foreground, dry, debug;
};

static const struct option create_options[] = {
    {"config", required_argument, NULL, 'c'}, {"port", required_argument, NULL, 'p'},
    {"debug", no_argument, NULL, 'd'},        {"foreground", no_argument, NULL, 'f'},
    {"url_prefix", required_argument, NULL, 'u'}, {"dry-run", no_argument, NULL, 'n'},
    {"home", required_argument, NULL, 'H'},   {"bind", required_argument, NULL, 'b'},
    {NULL, 0, NULL, 0},
};
/* 0 parsed, else the exit code (the message printed). */
static int parse_create_opts(int argc, char **argv, struct create_opts *o)
{
    *o = (struct create_opts){.port = 8080};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:p:dfu:nH:b:", create_options, NULL)) != -1) {
        switch (c) {
        case 'c': o->path = optarg; break;
        case 'p': if (cli_int_arg("--port", optarg, 1, 65535, &o->port)) return 1; break;
        case 'd': o->debug = 1; break;
        case 'f': o->foreground = 1; break;
        case 'u': o->prefix_opt = optarg; break;
        case 'b': o->bind = optarg; break;
        case 'n': o->dry = 1; break;
        case 'H': o->home_opt = optarg; break;
        default: return cli_error("usage: %s", cmd_create.usage);
        }
    }
    if (!o->path)
        return cli_error("the following arguments are required: --config/-c");
    if (o->home_opt) {
        /* the default experimentWorkingDirectory follows the home */
        char *h = trialq_home(o->home_opt);
        setenv("NNI_HOME", h, 1);
        free(h);
    }
    if (o->bind && cli_check_bind(o->bind) != 0)
        return 1;
    return 0;
}

/* Loads and checks the config; o->bind gets its default. NULL when refused (said). */
static struct exp_config *load_checked(struct create_opts *o, int64_t *seed)
{
    struct exp_config *cfg;
    struct errbuf e;
    if (config_load(o->path, &cfg, &e) < 0) {
        cli_error("%s", e.msg);
        return NULL;
    }
    /* loopback unless asked: --bind, or an nniManagerIp that is not loopback (trials
     * elsewhere must reach the api, so it listens on every interface, as NNI does;
     * changes then need the token) */
    if (!o->bind) {
        const char *ip = cfg->nni_manager_ip;
        int loop = !ip || str_starts(ip, "127.") || strcmp(ip, "::1") == 0 || strcmp(ip, "localhost") == 0;
        o->bind = loop ? "127.0.0.1" : "0.0.0.0";
    }
    for (int i = 0; i < cfg->nwarnings; i++)
        fprintf(stderr, "WARNING: %s\n", cfg->warnings[i]);
    *seed = -1;
    if (validate(cfg, seed) != 0) {
        config_free(cfg);
        return NULL;
    }
    return cfg;
}

/* The experiment row, under id (a new one when id is "": id[9] at least), and its
 * directory. 0, or 1 (said). */
static int insert_experiment(struct db *db, const char *home, const struct exp_config *cfg,
                             const struct create_opts *o, char *prefix, int64_t seed, char *id, char **exp_dir)
{
    struct errbuf e;
    while (!id[0] || exp_exists(db, id, &e) == 1)
        gen_experiment_id(id);
    if (seed < 0) {
        uint32_t r;
        random_bytes(&r, sizeof r);
        seed = r & 0x7fffffff;
    }
    char token[33];
    gen_token(token, 32);
    /* the secrets go to their file before the row exists (a create killed in between
     * leaves a file without a row, which the next create removes: cli_secrets_sweep),
     * the stored config holds placeholders (docs/security.md) */
    cJSON *stored = cJSON_Duplicate(cfg->canonical, 1);
    if (cli_secrets_take_out(home, id, stored, &e) < 0) {
        cJSON_Delete(stored);
        return cli_error("%s", e.msg);
    }
    struct experiment x = {
        .id = id,
        .name = cfg->experiment_name,
        .config = cJSON_PrintUnformatted(stored),
        .search_space = cJSON_PrintUnformatted(cfg->search_space),
        .platform = cfg->platform,
        .exp_dir = path_join(cfg->experiment_working_directory, id),
        .port = o->port,
        .start_time = now_ms(),
        .max_trial_number = cfg->max_trial_number,
        .max_exec_seconds = cfg->max_experiment_seconds,
        .max_trial_seconds = cfg->max_trial_seconds,
        .concurrency = cfg->trial_concurrency,
        .seed = seed,
        .token = token,
        .bind_address = (char *)o->bind,
        .url_prefix = prefix,
        .config_file = o->path ? realpath(o->path, NULL) : NULL, /* left out when the code directory is shipped */
    };
    int rc = 0;
    if (mkdir_p(x.exp_dir, 0700) < 0)
        rc = cli_error("cannot create experiment directory %s: %s", x.exp_dir, strerror(errno));
    else if (exp_insert(db, &x, &e) < 0)
        rc = cli_error("%s", e.msg);
    if (rc != 0)
        secrets_remove(home, id);
    cJSON_Delete(stored);
    free(x.config);
    free(x.search_space);
    free(x.config_file);
    *exp_dir = x.exp_dir;
    return rc;
}

/* Starts the api of the experiment just inserted and says where it is. */
static int launch(struct db *db, const char *home, const struct exp_config *cfg, const struct create_opts *o,
                  const char *prefix, const char *id, const char *exp_dir)
{
    struct errbuf e;
    printf("Creating experiment, Experiment ID: %s\n", id);
    printf("Starting web server...\n");
    fflush(stdout);
    struct experiment stored;
    exp_load(db, id, &stored, &e);
    const char *lvl = o->debug ? "debug" : cfg->log_level;
    pid_t api = cli_start_api(home, &stored, "create", o->port, !o->foreground, lvl);
    exp_clear(&stored);
    if (api < 0) {
        exp_transition(db, id, NULL, "ERROR", "api did not start", &e);
        return 1;
    }
    printf("Setting up...\n");
    cli_print_urls(o->bind, o->port, prefix, cfg->nni_manager_ip);
    printf("Experiment %s started. Data: %s\n", id, exp_dir);
    /* a foreground run stops by itself (or on Ctrl-C) before the prompt comes back */
    if (!o->foreground)
        printf("To stop experiment run \"nnictl stop %s\" or \"nnictl stop --all\"\n", id);
    fflush(stdout);
    int rc = o->foreground ? foreground_loop(db, id, api) : 0;
    if (o->foreground)
        cli_stop_experiment(db, home, id, 1);
    return rc;
}

static int cmd_create_fn(int argc, char **argv)
{
    struct create_opts o;
    if (parse_create_opts(argc, argv, &o) != 0)
        return 1;
    char *prefix = NULL;
    if (o.prefix_opt && !(prefix = cli_url_prefix(o.prefix_opt)))
        return 1;
    int64_t seed;
    struct exp_config *cfg = load_checked(&o, &seed);
    if (!cfg) {
        free(prefix);
        return 1;
    }
    int rc = 1;
    char *home = NULL, *exp_dir = NULL;
    struct db *db = NULL;
    if (o.dry) {
        char *s = config_to_string(cfg);
        printf("%s\n", s);
        free(s);
        printf("Config %s is valid.\n", cfg->source_path);
        rc = 0;
    } else if (!cli_port_free(o.bind, o.port)) {
        cli_error("Port %d is not idle: another process listens there (or %s is not an address of this"
                  " host). Choose another port with --port.", o.port, o.bind);
    } else if ((db = cli_open_home(o.home_opt, &home))) {
        char id[9] = "";
        cli_secrets_sweep(db, home);
        if (insert_experiment(db, home, cfg, &o, prefix, seed, id, &exp_dir) == 0)
            rc = launch(db, home, cfg, &o, prefix, id, exp_dir);
    }
    free(exp_dir);
    free(prefix);
    free(home);
    config_free(cfg);
    db_close(db);
    return rc;
}

/* cli_create_posted, its message to the caller's buffer. */
static int create_posted(struct db *db, const struct api_create_req *r)
{
    struct errbuf e;
    cJSON *j = cJSON_Parse(r->json);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return cli_error("POST /experiment: the body must be a JSON object, the experiment's config");
    }
    /* NNI's client sends the file it read the space from beside the space: the space is
     * the one to run, as NNI's manager runs it */
    if (cJSON_GetObjectItemCaseSensitive(j, "searchSpace"))
        cJSON_DeleteItemFromObjectCaseSensitive(j, "searchSpaceFile");
    /* the experiment's files go where the launcher said (it passes the config's own) */
    cJSON_DeleteItemFromObjectCaseSensitive(j, "experimentWorkingDirectory");
    cJSON_AddStringToObject(j, "experimentWorkingDirectory", r->exp_root);
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    struct exp_config *cfg;
    int rc = config_load_text("POST /experiment", text, strlen(text), &cfg, &e);
    free(text);
    if (rc < 0)
        return cli_error("%s", e.msg);
    for (int i = 0; i < cfg->nwarnings; i++)
        log_warn("%s", cfg->warnings[i]);
    int64_t seed = -1;
    char *prefix = NULL;
    rc = validate(cfg, &seed);
    if (rc == 0 && r->url_prefix && !(prefix = cli_url_prefix(r->url_prefix)))
        rc = 1;
    if (rc == 0 && exp_exists(db, r->id, &e) != 0)
        rc = cli_error("experiment %s exists already", r->id);
    if (rc == 0) {
        struct create_opts o = {.port = r->port, .bind = r->bind};
        char *id = xstrdup(r->id), *exp_dir = NULL;
        cli_secrets_sweep(db, r->home);
        rc = insert_experiment(db, r->home, cfg, &o, prefix, seed, id, &exp_dir);
        free(id);
        free(exp_dir);
    }
    free(prefix);
    config_free(cfg);
    return rc;
}

int cli_create_posted(struct db *db, const struct api_create_req *r, char *msg, size_t n)
{
    cli_error_capture(msg, n);
    int rc = create_posted(db, r);
    cli_error_capture(NULL, 0);
    return rc;
}

/* --foreground: progress every second until the experiment ends, as NNI's -f polls. */
static int foreground_loop(struct db *db, const char *id, pid_t api)
{
    signal(SIGINT, on_int);
    signal(SIGTERM, on_int);
    int64_t last = 0;
    int rc = 0;
    for (;;) {
        struct experiment x;
        struct errbuf e;
        if (exp_load(db, id, &x, &e) <= 0)
            return 1;
        int ended = strcmp(x.status, "DONE") == 0 || strcmp(x.status, "STOPPED") == 0 ||
                    strcmp(x.status, "ERROR") == 0;
        if (mono_ms() - last >= 1000 || ended) {
            cli_print_progress(db, id);
            last = mono_ms();
        }
        if (ended) {
            if (strcmp(x.status, "ERROR") == 0) {
                fprintf(stderr, "Experiment %s ended in ERROR: %s\n", id, x.errors);
                rc = 1;
            }
            exp_clear(&x);
            break;
        }
        exp_clear(&x);
        if (g_interrupted) {
            printf("Interrupted: stopping experiment %s\n", id);
            break;
        }
        int st;
        if (waitpid(api, &st, WNOHANG) == api) {
            fprintf(stderr, "ERROR: the api process exited unexpectedly\n");
            return 1;
        }
        usleep(50000);
    }
    cli_print_best(db, id);
    return rc;
}

/* Where a resumed or viewed experiment listens: --port (else its port, else 8080) and
 * --bind (else its address, stored when it changes: x is loaded again). 0, or -1 with
 * the error said. */
static int restart_where(struct db *db, const char *id, struct experiment *x, int *port, const char *bind)
{
    struct errbuf e;
    if (!*port)
        *port = x->port ? x->port : 8080;
    if (!bind)
        bind = x->bind_address;
    if (!cli_port_free(bind, *port)) {
        cli_error("Port %d is not idle: another process listens there (or %s is not an address of this host)."
                  " Choose another port with --port.", *port, bind);
        return -1;
    }
    if (strcmp(bind, x->bind_address) != 0) {
        if (exp_set_bind_address(db, id, bind, &e) < 0) {
            cli_error("%s", e.msg);
            return -1;
        }
        exp_clear(x);
        if (exp_load(db, id, x, &e) <= 0)
            return -1;
    }
    return 0;
}

static const struct option restart_opts[] = {
    {"port", required_argument, NULL, 'p'}, {"debug", no_argument, NULL, 'd'},
    {"foreground", no_argument, NULL, 'f'}, {"experiment_dir", required_argument, NULL, 'e'},
    {"home", required_argument, NULL, 'H'}, {"bind", required_argument, NULL, 'b'}, {NULL, 0, NULL, 0},
};
/* resume and view share everything but the action */
static int restart(int argc, char **argv, const char *action)
{
    const char *home_opt = NULL, *bind = NULL;
    int port = 0, foreground = 0, debug = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:dfe:H:b:", restart_opts, NULL)) != -1) {
        switch (c) {
        case 'p': if (cli_int_arg("--port", optarg, 1, 65535, &port)) return 1; break;
        case 'd': debug = 1; break;
        case 'f': foreground = 1; break;
        case 'e': home_opt = optarg; break;
        case 'H': home_opt = optarg; break;
        case 'b': bind = optarg; break;
        default: return cli_error("usage: nnictl %s ID [--port P] [--foreground] [--bind ADDR]", action);
        }
    }
    if (bind && cli_check_bind(bind) != 0)
        return 1;
    if (optind >= argc)
        return cli_error("the following arguments are required: id");
    char *home;
    struct db *db = cli_open_home(home_opt, &home);
    if (!db)
        return 1;
    struct errbuf e;
    int rc = 1;
    char *id = exp_resolve(db, argv[optind], 0, &e);
    struct experiment x;
    memset(&x, 0, sizeof x);
    if (!id) {
        cli_error("%s", e.msg);
        goto out;
    }
    if (exp_load(db, id, &x, &e) <= 0)
        goto out;
    if (cli_api_alive(&x)) {
        cli_error("experiment %s is running (api pid %d, port %d); stop it first: nnictl stop %s", id, x.api_pid,
                  x.port, id);
        goto out;
    }
    if (restart_where(db, id, &x, &port, bind) < 0)
        goto out;
    if (strcmp(action, "resume") == 0)
        printf("Resuming experiment %s\n", id);
    pid_t api = cli_start_api(home, &x, action, port, !foreground, debug ? "debug" : "info");
    if (api < 0)
        goto out;
    cli_print_urls(x.bind_address, port, x.url_prefix, NULL);
    if (!foreground)
        printf("To stop experiment run \"nnictl stop %s\" or \"nnictl stop --all\"\n", id);
    fflush(stdout);
    rc = 0;
    if (foreground) {
        rc = foreground_loop(db, id, api);
        cli_stop_experiment(db, home, id, 1);
    }
out:
    exp_clear(&x);
    free(id);
    free(home);
    db_close(db);
    return rc;
}

static int cmd_resume_fn(int argc, char **argv) { return restart(argc, argv, "resume"); }
static int cmd_view_fn(int argc, char **argv) { return restart(argc, argv, "view"); }

const struct cli_cmd cmd_create = {
    NULL, "create",
    "nnictl create --config FILE [--port P] [--url_prefix P] [--bind ADDR] [--foreground] [--dry-run]",
    cmd_create_fn,
    "Creates an experiment from an NNI v2 YAML config (v1 keys are converted) and starts it; "
    "--foreground runs it in this terminal with a progress line, --dry-run only validates the "
    "config and prints it normalized.",
    create_options};
const struct cli_cmd cmd_resume = {
    NULL, "resume", "nnictl resume ID [--port P] [--foreground] [--bind ADDR]", cmd_resume_fn,
    "Starts a stopped experiment again (also after a crash or a reboot) where it left off.",
    restart_opts};
const struct cli_cmd cmd_view = {
    NULL, "view", "nnictl view ID [--port P] [--foreground] [--bind ADDR]", cmd_view_fn,
    "Serves a stopped experiment read-only (REST API and web UI); no trial runs.",
    restart_opts};
