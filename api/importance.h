/* importance.h: parameter importance of an experiment (api/importance.c), for GET
 * /webui/importance (routes_webui.c) and `nnictl experiment importance` (cli/): the
 * trial sample read from the database (schema/webui_rows.h, metric_sample_rows) and
 * PED-ANOVA over it (tuners/importance.h). Below the handlers: it calls only schema/
 * and tuners/. */
#ifndef TRIALQ_API_IMPORTANCE_H
#define TRIALQ_API_IMPORTANCE_H

#include "schema/exp_ops.h"

/* The most trials one answer reads: the most recent SUCCEEDED trials with a final metric. */
#define IMP_SAMPLE 5000

/* The experiment's optimize mode: the tuner's (or advisor's) classArgs.optimize_mode,
 * 1 for "maximize"; minimize when absent, as best_trials_v. */
int exp_maximize(const struct experiment *x);

/* The importance of x's search-space parameters for its final metric (key NULL: the
 * number, or dict["default"]) or for the number at `key` of a dict final metric, as the
 * JSON object GET /webui/importance answers (docs/rest-api.md), written to out; seq
 * (>= 0) is written as its "seq". Returns 0; -2 with e set for what the request asked
 * (a bad key, a search space that does not parse); -1 with e set for a database error. */
int exp_importance_json(struct db *db, const struct experiment *x, const char *key, int64_t seq,
                        struct strbuf *out, struct errbuf *e);

#endif
