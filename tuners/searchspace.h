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

struct ss_param {
    char *name;              /* key in its (sub)space */
    char *path;              /* full key path for messages, e.g. "layer/conv/kernel" */
    enum ss_type type;
    double a, b, q;          /* low/high or mu/sigma; q for q-types (0 otherwise) */
    int n_choices;           /* choice: number of options; randint: high - low */
    cJSON **choices;         /* choice: option values (borrowed from the parsed JSON copy) */
    struct ss_space **sub;   /* nested choice: one sub-space per option, else NULL */
};

struct ss_space {
    int n;
    struct ss_param *params; /* in the key order of the JSON */
    cJSON *json;             /* owned copy of the source JSON */
};

/* Parses and validates. On error e->msg starts with the offending key path, and
 * errpath (if not NULL) receives it ("lr" or "layer._value[1].kernel"). */
int ss_parse(const cJSON *json, struct ss_space **out, char *errpath, size_t errpath_len, struct errbuf *e);
void ss_free(struct ss_space *s);

/* Deterministic random stream: xoshiro256** seeded from (seed, stream). */
struct rng {
    uint64_t s[4];
};
void rng_init(struct rng *r, uint64_t seed, uint64_t stream);
uint64_t rng_next(struct rng *r);
double rng_uniform(struct rng *r);           /* [0, 1) */
double rng_normal(struct rng *r);            /* standard normal */
uint64_t rng_below(struct rng *r, uint64_t n);

/* Draws one value of a parameter as NNI's random sampler does; returns a new cJSON
 * (number, string, or for nested choice an object with "_name" and the sub-space). */
cJSON *ss_sample_param(const struct ss_param *p, struct rng *r);
/* Draws a whole parameter object (keys in search-space order). */
cJSON *ss_sample(const struct ss_space *s, struct rng *r);

#endif
