/* searchspace.h: NNI search spaces (the ten _type values and nested choice),
 * validated and sampled with NNI's exact semantics (spec §7.3). Pure: no I/O. */
#ifndef TRIALQ_SEARCHSPACE_H
#define TRIALQ_SEARCHSPACE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common/common.h"

enum ss_type {
    SS_CHOICE, SS_RANDINT, SS_UNIFORM, SS_QUNIFORM, SS_LOGUNIFORM, SS_QLOGUNIFORM,
    SS_NORMAL, SS_QNORMAL, SS_LOGNORMAL, SS_QLOGNORMAL,
};

struct ss_space;

/* Key paths (ss_param.path and the errpath of ss_parse) name a parameter the way a
 * user finds it in the JSON: a top-level key as is ("lr"); a key of a nested choice's
 * sub-space as "<choice path>[<option index>].<key>" ("layer[1].kernel", where
 * option 1 of "layer"'s _value holds "kernel"). A choice option itself is
 * "layer[1]"; an error about the whole search space has the empty path. */
struct ss_param {
    char *name;              /* key in its (sub)space */
    char *path;              /* full key path for messages, e.g. "layer[1].kernel" */
    enum ss_type type;
    double a, b, q;          /* low/high or mu/sigma; q for q-types (0 otherwise) */
    int n_choices;           /* choice: number of options; randint: high - low; else 0 */
    cJSON **choices;         /* choice: option values (borrowed from the parsed JSON copy) */
    struct ss_space **sub;   /* nested choice: one sub-space per option, else NULL */
};

struct ss_space {
    int n;
    struct ss_param *params; /* in the key order of the JSON */
    cJSON *json;             /* owned copy of the source JSON */
};

/* Parses and validates with NNI's rules (validation.py), made fatal: on error
 * e->msg is "<key path>: <rule broken>" and errpath (if not NULL) receives the key
 * path (format above). json may be NULL (reported as an error). Choice options may
 * be any JSON value (NNI's tuners treat them as opaque categories; BatchTuner needs
 * objects); when every option is an object with "_name" they are nested sub-spaces,
 * and a mix of both is rejected. *out owns a copy of json. */
int ss_parse(const cJSON *json, struct ss_space **out, char *errpath, size_t errpath_len, struct errbuf *e);
/* A space that is only its JSON (n = 0), not validated: what a customized tuner is
 * handed (NNI gives it the search space as written). json may be any JSON; NULL is {}. */
struct ss_space *ss_raw(const cJSON *json);
void ss_free(struct ss_space *s);

const char *ss_type_name(enum ss_type t);   /* "choice", "quniform", ... */
int ss_type_is_normal(enum ss_type t);      /* normal, qnormal, lognormal, qlognormal */
int ss_type_is_log(enum ss_type t);         /* loguniform, qloguniform, lognormal, qlognormal */

/* NNI's deformat_parameters for one numeric (non-choice, non-randint) parameter:
 * takes the value in the internal space (log space for log types) and applies exp,
 * q-rounding round(x/q)*q with Python's round-half-even, then the clip to [low, high]
 * of quniform/qloguniform. */
double ss_deformat(const struct ss_param *p, double internal);

/* Deterministic random stream: xoshiro256** seeded from (seed, stream). */
struct rng {
    uint64_t s[4];
};
void rng_init(struct rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_next(struct rng *r);
double rng_uniform(struct rng *r);           /* [0, 1) */
double rng_normal(struct rng *r);            /* standard normal (Box-Muller, 2 draws) */
uint64_t rng_below(struct rng *r, uint64_t n); /* unbiased integer in [0, n); 0 if n == 0 */

/* Draws one value of a parameter as NNI's random sampler does; returns a new cJSON
 * (number, string, or for nested choice an object with "_name" and the sub-space). */
cJSON *ss_sample_param(const struct ss_param *p, struct rng *r);
/* Draws a whole parameter object (keys in search-space order). */
cJSON *ss_sample(const struct ss_space *s, struct rng *r);

#endif
