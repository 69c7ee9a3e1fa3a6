/* assessor.h: the interface of the built-in assessors (NNI's early-stopping rules)
 * and the registry of them. Like the tuners they are pure: a trial's intermediate
 * results and those of the other trials in, a verdict out. The api keeps no
 * assessor state between calls, so a restarted api judges exactly as before.
 *
 * How the api drives one (what NNI's dispatcher does, spec §6 and §7.2):
 * - after each new intermediate (PERIODICAL) result of a trial that has not ended,
 *   once its results are contiguous in sequence (NNI waits while one is missing),
 *   call assess() with that trial's values 1..n and the other trials' series;
 * - on ASSESS_BAD stop the trial: it ends EARLY_STOPPED (NNI kills it);
 * - values are the metrics' default values (a number, or dict["default"]). */
#ifndef TRIALQ_ASSESSOR_H
#define TRIALQ_ASSESSOR_H

#include <cjson/cJSON.h>

#include "common/common.h"

enum assess_result { ASSESS_GOOD, ASSESS_BAD };

/* One other trial of the experiment. */
struct assessor_series {
    const double *values;  /* its intermediate results, in sequence order */
    int n;
    int succeeded;         /* 1: it ended SUCCEEDED; 0: still running, or ended otherwise */
};

struct assessor_input {
    const double *values;                 /* the assessed trial's intermediate results so far */
    int n;
    const struct assessor_series *others; /* the other trials (at least every ended one), any order */
    int n_others;
};

struct assessor_ops {
    const char *name;            /* NNI's builtinName: "Medianstop", "Curvefitting" */
    const char *const *aliases;  /* other accepted names (NULL-terminated), may be NULL */
    /* Validates class_args (errors name the key: "assessor.classArgs.start_step: ...")
     * and creates the state, which holds the arguments only. */
    int (*create)(const cJSON *class_args, void **state, struct errbuf *e);
    enum assess_result (*assess)(void *state, const struct assessor_input *in);
    void (*destroy)(void *state);
};

/* Case-insensitive lookup by name or alias; NULL if unknown. */
const struct assessor_ops *assessor_find(const char *name);
/* Comma-separated list of known names, for error messages. */
const char *assessor_names(void);
/* The i-th built-in assessor (0, 1, ...), NULL past the last. */
const struct assessor_ops *assessor_builtin(int i);

#endif
