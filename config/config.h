/* config.h: NNI experiment config (v2 YAML, v1 keys converted) -> validated struct
 * plus the canonical JSON NNI's manager stores. Errors name file:line:col and the key. */
#ifndef TRIALQ_CONFIG_H
#define TRIALQ_CONFIG_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common/common.h"

struct algo_config {
    int set;               /* 0 when the section is absent */
    char *name;            /* built-in name as written (NULL for a custom class) */
    char *class_name;      /* custom: "module.Class" */
    char *code_directory;  /* custom: absolute path */
    cJSON *class_args;     /* object (never NULL when set; may be empty); the struct's own
                            * copy, freed by config_free */
};

struct exp_config {
    cJSON *canonical;             /* NNI v2 canonical config JSON, owned */
    char *source_path;            /* the YAML file (absolute), NULL when from JSON */
    char *experiment_name;        /* NULL if unset */
    cJSON *search_space;          /* points into canonical ("searchSpace") */
    char *trial_command;
    char *trial_code_directory;   /* absolute */
    int trial_concurrency;        /* > 0 */
    int trial_gpu_number;         /* -1 when unset (null) */
    int64_t max_experiment_seconds; /* 0 = unlimited */
    int64_t max_trial_number;       /* 0 = unlimited */
    int64_t max_trial_seconds;      /* 0 = unlimited */
    char *experiment_working_directory; /* absolute, default ~/nni-experiments */
    char *log_level;              /* info, debug, ... */
    char *platform;               /* "local", "remote", ..., "hybrid" for a list */
    char *nni_manager_ip;         /* NULL if unset */
    int max_trial_retries;        /* trialq: retries of a trial whose job vanished (default 1) */
    struct algo_config tuner;     /* advisor is moved here */
    struct algo_config assessor;
    int is_v1;                    /* the file was a v1 config that was converted */
    char **warnings;              /* messages to show the user (v1 conversion, ignored keys),
                                   * each prefixed with the file name */
    int nwarnings;
    void *marks;                  /* private: key path -> file line:col */
};

/* Loads, converts (v1) and validates a YAML or JSON config file. On error, e->msg is
 * "<file>:<line>:<col>: <key>: <what is wrong>" and nothing is returned. */
int config_load(const char *path, struct exp_config **out, struct errbuf *e);

/* The same for a config given as text (the JSON NNI's launcher POSTs to /experiment):
 * name stands for the file in errors ("name:line:col: key: ..."); relative paths are the
 * current directory's. */
int config_load_text(const char *name, const char *text, size_t len, struct exp_config **out, struct errbuf *e);

/* Rebuilds the struct from a canonical JSON stored in the database (resume, api). */
int config_from_json(const char *json, struct exp_config **out, struct errbuf *e);

void config_free(struct exp_config *cfg);

/* A trait of a trainingService platform, from its schema (config/schema_ts.c): 1 when
 * its trials run on this host, so that their directories (trial_dir) are readable here
 * (the api's TensorBoard reads them); 0 for any other name, "hybrid" (a trial no worker
 * took yet) included. */
int config_platform_trials_on_host(const char *platform);
/* 1 when the trials of this platform keep their files on a storage of their own outside
 * the experiment directory (the cluster platforms' shared storage), else 0 (schema/pack.c
 * clears such a trial_dir when it loads a pack). */
int config_shared_storage(const char *platform);
/* The machines the trainingService of a canonical config (each entry of a hybrid list)
 * runs trials on, from the platforms' traits: fn(ctx, platform, host, port, user) for
 * each, host NULL for this host (local), each machineList entry of remote (port 22 when
 * unset, user NULL when unset); none for the cluster platforms. Returns how many, or -1
 * when config_json is not a config (schema/machines.c's machines_json takes it). */
int config_ts_machines(const char *config_json,
                       void (*fn)(void *ctx, const char *platform, const char *host, int port, const char *user),
                       void *ctx);

/* Position of a key path such as "searchSpace.lr._value" or "tuner.classArgs" in the
 * source file (1-based). Returns 0 when known, -1 otherwise. Paths use the canonical
 * (camelCase) names and "[i]" for list items. A mapping member gives the position of its
 * key, a list item that of the item. A path that was never written (a missing key, an
 * index past the end) gives its nearest written parent; with searchSpaceFile, any
 * "searchSpace..." path gives the position of the file name. The search-space module's
 * form for nested choices ("searchSpace.layer[1].kernel" for option 1 of layer's _value)
 * is understood too. Configs rebuilt by config_from_json have no positions. */
int config_mark_of(const struct exp_config *cfg, const char *key_path, int *line, int *col);

/* A deep copy of the canonical JSON with secrets (password, token, sshPassphrase,
 * accessKeySecret, storageAccountKey, ...) replaced by "********". Caller frees. */
cJSON *config_redacted(const cJSON *canonical);

/* Takes every value that config_redacted would hide out of canonical, in place: each
 * is replaced by SECRET_PLACEHOLDER (common/secrets.h) and listed in the result,
 * [{"path": ["trainingService", "machineList", 0, "password"], "value": ...}, ...]
 * (keys and list indices from the root), for secrets_store. Caller frees the list. */
cJSON *config_secrets_split(cJSON *canonical);

/* Pretty JSON of the redacted canonical config (nnictl create --dry-run). Caller frees. */
char *config_to_string(const struct exp_config *cfg);

/* ---- algos.c: NNI's registered algorithms (nnictl algo register) ---- */
/* A YAML (or JSON) file as JSON (NULL for an empty file); errors name file:line:col. */
int yaml_file_to_json(const char *path, cJSON **out, struct errbuf *e);
/* registered_algorithms.yml in NNI's config dir ($NNI_CONFIG_DIR, $VIRTUAL_ENV/nni,
 * $CONDA_PREFIX/nni, ~/.config/nni). */
char *algo_registry_path(void);
/* The registry as {"tuners": [...], "assessors": [...], "advisors": [...]} (each entry
 * {builtinName, className, classArgsValidator?, classArgs?, acceptClassArgs?, source?});
 * empty lists when there is no file. */
int algo_registry_load(cJSON **out, struct errbuf *e);
/* The entry of section ("tuners", "assessors", "advisors") named name (any case), or NULL. */
const cJSON *algo_registry_find(const cJSON *reg, const char *section, const char *name);
/* Writes the registry back (atomically). */
int algo_registry_save(const cJSON *reg, struct errbuf *e);

/* ---- nni_builtin.c: NNI's built-in algorithms that run as NNI's Python class ---- */
struct arg_rule;
struct nni_builtin {
    const char *name;        /* NNI's builtinName */
    const char *alias;       /* NNI's alias (the v1 builtinTunerName spelling), or NULL */
    const char *section;     /* "tuners", "assessors" or "advisors" */
    const char *class_name;  /* NNI's module.Class */
    const char *install;     /* what to pip install for it: "'nni[SMAC]'" */
    const struct arg_rule *args; /* its classArgs, as NNI's validator of the class checks them */
};
/* By name or alias, any case; NULL when NNI has no such Python-only built-in. */
const struct nni_builtin *nni_builtin_find(const char *name);
/* The i-th entry (0, 1, ...), NULL past the last. */
const struct nni_builtin *nni_builtin_at(int i);
/* NNI's ClassArgsValidator of b's class, in C: unknown keys, types, ranges, choices and
 * required keys; errors read "tuner.classArgs.<key>: ...". args may be NULL. */
int nni_builtin_check_args(const struct nni_builtin *b, const cJSON *args, struct errbuf *e);

#endif
