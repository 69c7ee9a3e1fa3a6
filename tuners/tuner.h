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
    const char *label;         /* the wire parameter id the suggestion was given (the
                                * tuner_ops.label answer, trial.parameter_label), or NULL */
    /* Only for a tuner with needs_latest: the value NNI's Hyperband ranks a trial by,
     * its latest result: the FINAL metric's default value when one was reported
     * (whatever the status), else the default value of the PERIODICAL metric with the
     * highest sequence (of the trial's current attempt). has_latest 0: no result. */
    int has_latest;
    double latest;
    /* tuner_params_hash(parameters), set by the history's owner once per trial (the
     * api's view of the trials, when it parses them); has_hash 0: not set, the tuners
     * compare the objects themselves. Finite spaces' repeat checks (TPE, Anneal,
     * Metis) then compare one number a trial instead of walking its object. */
    int has_hash;
    uint64_t params_hash;
};

/* A hash of a parameter object, equal for objects the tuners take as the same
 * suggestion (key order aside; numbers by value): what tuner_result.params_hash holds. */
uint64_t tuner_params_hash(const cJSON *params);

struct tuner_history {
    int n;
    const struct tuner_result *items;  /* in sequence order */
    /* The experiment's directory (<home>/<experiment id>), where a tuner that hands
     * trials directories of their own (PBT's checkpoints) puts them by default; NULL
     * outside an api (a bench, a dry run). */
    const char *experiment_dir;
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
    /* Optional (NULL: the wire parameter id is the index). Called right after suggest()
     * returned 1 for `index`: the parameter id the trial sees (parameter.cfg, the REST
     * hyperParameters) and reports its metrics with, as a new string, or NULL for the
     * index itself. Hyperband answers "0-3_0_12". The api stores it with the trial
     * (trial.parameter_label) and hands it back in tuner_result.label. */
    char *(*label)(void *state, int64_t index);
    /* 1: the api fills tuner_result.has_latest/latest (a metric query per changed trial). */
    int needs_latest;
    /* 1: an advisor (Hyperband, BOHB): it decides when configurations stop, so the api
     * runs no assessor beside it (NNI ignores the assessor of an advisor). */
    int advisor;
    /* 1: the index counts suggestions across search space updates (a bracket plan goes
     * on, as NNI's advisors keep theirs). 0: a new space is a new search: the tuner
     * sees indexes from 0 again, and the trials of earlier spaces in its history as
     * results it did not suggest (parameter_id -1, as imported ones). */
    int index_spans_spaces;
};

/* Case-insensitive lookup by name or alias; NULL if unknown. */
const struct tuner_ops *tuner_find(const char *name);
/* Comma-separated list of known names, for error messages. */
const char *tuner_names(void);
/* The i-th built-in tuner (0, 1, ...), NULL past the last. */
const struct tuner_ops *tuner_builtin(int i);

#endif
