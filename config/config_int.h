/* config_int.h: private to config/. The YAML node tree (values keep their file
 * positions through v1 conversion), the key-path -> position table, the validation
 * context with its error/warning helpers, and the table-driven schema engine. */
#ifndef TRIALQ_CONFIG_INT_H
#define TRIALQ_CONFIG_INT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* ---- the node tree (ynode.c, built by yaml_load.c) ---- */

struct ymark {
    int line, col; /* 1-based; 0 when unknown */
};

enum ykind { Y_NULL, Y_BOOL, Y_INT, Y_FLOAT, Y_STR, Y_SEQ, Y_MAP };

struct yentry {
    char *key;
    struct ymark key_mark;
    struct ynode *value;
};

struct ynode {
    enum ykind kind;
    struct ymark mark;   /* where the value starts */
    char *text;          /* scalars: the text as written (never NULL for scalars) */
    int plain;           /* scalar was written without quotes */
    int b;               /* Y_BOOL */
    int big;             /* Y_INT beyond int64: only d is meaningful */
    int64_t i;           /* Y_INT */
    double d;            /* Y_FLOAT, and Y_INT as a double */
    struct ynode **items;           /* Y_SEQ */
    size_t nitems, capitems;
    struct yentry *entries;         /* Y_MAP, in file order */
    size_t nentries, capentries;
    char *origin;        /* v1 configs: the key path this value had in the v1 file */
};

struct ynode *ynode_new(enum ykind kind, struct ymark mark);
struct ynode *ynode_new_str(const char *s, struct ymark mark);
void ynode_free(struct ynode *n);
struct ynode *ynode_copy(const struct ynode *n);
void yseq_push(struct ynode *seq, struct ynode *item);
void ymap_put(struct ynode *map, const char *key, struct ymark key_mark, struct ynode *value);
/* Entry whose key matches ignoring case and underscores (first one), or NULL. */
struct yentry *ymap_find(const struct ynode *map, const char *key);
/* Removes the (folded-)matching entry and returns its value, which the caller owns. */
struct ynode *ymap_take(struct ynode *map, const char *key, struct ymark *key_mark);
/* NNI's key matching: case and underscores do not count. */
int key_fold_eq(const char *a, const char *b);
/* "a string", "a list", ... for "must be X, got Y" messages. */
const char *ynode_kind_name(const struct ynode *n);
/* Levenshtein distance of the folded keys (small strings only). */
int key_distance(const char *a, const char *b);

/* ---- YAML -> node tree (yaml_load.c) ---- */

/* Parses YAML (or JSON) text. name prefixes error messages ("name:line:col: ..."). An
 * empty stream gives *out == NULL and returns 0. */
int yaml_parse(const char *name, const char *buf, size_t len, struct ynode **out,
               struct errbuf *e);
/* Reads and parses a file; refuses directories, huge files and empty files. */
int yaml_parse_file(const char *path, struct ynode **out, struct errbuf *e);

/* ---- key path -> position (marks.c) ---- */

struct mark_entry {
    char *path;
    struct ymark key;   /* the key of a mapping member (0 for list items, root) */
    struct ymark value; /* the value */
    char *origin;       /* v1 key path, or NULL */
};

struct marks;
struct marks *marks_new(void);
void marks_free(struct marks *m);
void marks_set(struct marks *m, const char *path, struct ymark key, struct ymark value,
               const char *origin);
/* The entry of path, or (when !exact) of its nearest recorded ancestor. */
const struct mark_entry *marks_find(const struct marks *m, const char *path, int exact);
/* Records every mark under from_prefix again under to_prefix (advisor -> tuner). */
void marks_alias(struct marks *m, const char *from_prefix, const char *to_prefix);

/* ---- validation context (context.c) ---- */

struct vctx {
    const char *file;     /* the config file as the user named it (messages) */
    char *base_dir;       /* relative paths resolve here (absolute) */
    struct marks *marks;
    struct strbuf path;   /* key path of the value being checked */
    struct errbuf *e;
    char **warnings;
    int nwarnings;
    cJSON *top;           /* canonical top level being built (shortcut inheritance) */
};

enum at { AT_KEY, AT_VALUE };

void vctx_init(struct vctx *c, const char *file, const char *base_dir, struct errbuf *e);
void vctx_release(struct vctx *c); /* frees what the context still owns */
/* "<file>:<line>:<col>: <path>: <msg>" with the position recorded for path (or its
 * nearest ancestor when path itself was never seen, e.g. a missing key). */
int cfg_err(struct vctx *c, const char *path, enum at at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Same, for the current path joined with a member name (NULL = the current path). */
int cfg_err_here(struct vctx *c, const char *member, enum at at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Same, with an explicit position (v1 conversion, before marks exist). */
int cfg_err_mark(struct vctx *c, struct ymark m, const char *path, const char *origin,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void cfg_warn(struct vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A warning that names member of the current path with its file:line:col (the key's),
 * as cfg_err_here would name it in an error. */
void cfg_warn_here(struct vctx *c, const char *member, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Push a path component; returns the length to pop back to. */
size_t path_push_key(struct strbuf *p, const char *key);
size_t path_push_index(struct strbuf *p, size_t i);
void path_pop(struct strbuf *p, size_t len);
/* "trainingService.machineList[0]" + "port" (caller frees). */
char *path_child(const char *path, const char *member);

/* ---- the schema engine (validate.c) ---- */

enum ftype {
    FT_STR,      /* string; a plain number is taken as its text */
    FT_INT,      /* integer within [min, max] */
    FT_BOOL,
    FT_PATH,     /* string made absolute (~, relative to the config file) */
    FT_DIR,      /* FT_PATH that must be an existing directory */
    FT_FILE,     /* FT_PATH that must be a readable regular file */
    FT_DURATION, /* "1h" / "30m" / ... or integer seconds; kept as written */
    FT_SIZE,     /* "8gb" / "512mb" / ... or integer MB; kept as written */
    FT_GPUS,     /* list of ints, "0,1" or an int -> list of distinct ints >= 0 */
    FT_ENUM,     /* string among choices ("a|b|c") */
    FT_MAPPING,  /* free-form mapping (classArgs, openpaiConfig) */
    FT_SECTION,  /* nested mapping with its own schema */
    FT_LIST,     /* list of sub-schema mappings */
    FT_CUSTOM,   /* a function decides (always called, node NULL when unset) */
};

#define F_REQUIRED 0x1u /* missing (or null) is an error */
#define F_INHERIT 0x2u  /* missing: copied from the top level (trainingService shortcuts) */
#define F_NONEMPTY 0x4u /* strings and lists must not be empty */

struct schema;

typedef int (*custom_fn)(struct vctx *c, const struct ynode *map, const struct ynode *node,
                         cJSON *obj, cJSON **out);

struct field {
    const char *name;    /* canonical camelCase name */
    enum ftype type;
    unsigned flags;
    const char *def;     /* default as JSON text, NULL for none */
    int64_t min, max;    /* FT_INT */
    const char *choices; /* FT_ENUM */
    const struct schema *sub; /* FT_SECTION, FT_LIST */
    custom_fn custom;         /* FT_CUSTOM */
};

struct schema {
    const char *what;           /* "remote machine", for messages */
    const struct field *fields; /* terminated by a field with name NULL */
    /* Rules across fields; c->path is the section's path, obj the canonical section. */
    int (*check)(struct vctx *c, const struct ynode *map, cJSON *obj);
    /* Old or alternative names ("maxExecDuration", "maxExperimentDuration", ...) that an
     * unknown-key message should point to; NULL-terminated pairs, or NULL. */
    const char *const *renamed;
};

#define INT53_MAX 9007199254740992LL /* larger integers do not survive JSON exactly */

/* Checks map against s and appends the canonical members to obj, in schema order. */
int validate_section(struct vctx *c, const struct ynode *map, const struct schema *s,
                     cJSON *obj);
/* Converts one value of a field (node not null). */
int validate_value(struct vctx *c, const struct field *f, const struct ynode *node,
                   cJSON **out);
/* Any YAML value -> JSON, recording the position of every key below the current path. */
int ynode_to_json(struct vctx *c, const struct ynode *n, cJSON **out);
/* path_abs (~, relative to base_dir, realpath when it exists) without "." and "..". */
char *config_abs_path(const char *base_dir, const char *path);
/* "0.5h" -> 1800; NNI's parse_time rules (unit required for strings). */
int duration_parse(const cJSON *v, int64_t *seconds);
/* The value of a member as an int (0 when absent/not a number). */
int64_t json_int(const cJSON *obj, const char *name, int64_t def);

/* ---- schemas (schema_top.c, schema_ts.c) ---- */

extern const struct schema experiment_schema;
/* trainingService: one platform mapping or a list of them (hybrid). */
int validate_training_service(struct vctx *c, const struct ynode *map,
                              const struct ynode *node, cJSON *obj, cJSON **out);
/* "local, remote, ..." for messages. */
extern const char *const ts_platform_names;

/* ---- v1 -> v2 (v1convert.c) ---- */

int v1_detect(const struct ynode *root);
/* Consumes v1 and returns the equivalent v2 tree; values keep their v1 positions and
 * get an origin. Adds the conversion warning to c. */
int v1_convert(struct vctx *c, struct ynode *v1, struct ynode **v2);

#endif
