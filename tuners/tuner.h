/* tuner.h: the interface every built-in tuner implements, and the registry of them.
 * Tuners are pure: history in, suggestion out. The api hands them the history it
 * rebuilt from the database, so a restarted api continues the same search. */
#ifndef TRIALQ_TUNER_H
#define TRIALQ_TUNER_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common/common.h"
#include "tuners/searchspace.h"

struct tuner_result {
    int64_t parameter_id;      /* the tuner index it was suggested with (-1: customized) */
    const cJSON *parameters;   /* the parameter object the trial ran */
    int has_value;             /* a FINAL metric was reported (and the trial succeeded) */
    double value;              /* its default value */
    const char *status;        /* trial status: SUCCEEDED, FAILED, RUNNING, ... */
};

struct tuner_history {
    int n;
    const struct tuner_result *items;  /* in sequence order */
};

struct tuner_ops {
    const char *name;               /* NNI's builtinName, e.g. "GridSearch" */
    const char *const *aliases;     /* other accepted names (NULL-terminated), may be NULL */
    /* Validates class_args (unknown names, types, ranges: error naming the key) and the
     * search space; creates the tuner state. */
    int (*create)(const cJSON *class_args, const struct ss_space *space, uint64_t seed,
                  void **state, struct errbuf *e);
    /* Suggests the parameters for tuner index `index` (0, 1, 2, ...). Must be a pure
     * function of (seed, index, history). Returns 1 with *params set (a new object),
     * 0 when the tuner has no more suggestions, 2 when it has none *now* (an advisor
     * waiting for a round to finish, an answer still to come from a tuner process):
     * the api asks again on a later tick, with the same index; -1 on error. */
    int (*suggest)(void *state, int64_t index, const struct tuner_history *hist,
                   cJSON **params, struct errbuf *e);
    void (*destroy)(void *state);
    /* 1: suggest() reads the history (TPE), so the api must pass it; 0: it is
     * ignored and the api may pass NULL without loading it. */
    int needs_history;
};

/* Case-insensitive lookup by name or alias; NULL if unknown. */
const struct tuner_ops *tuner_find(const char *name);
/* Comma-separated list of known names, for error messages. */
const char *tuner_names(void);

#endif
