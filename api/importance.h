/* importance.h: parameter importance of an experiment (api/importance.c), for GET
 * /webui/importance (routes_webui.c) and `nnictl experiment importance` (cli/): the
 * trial sample read from the database (schema/webui_rows.h, metric_sample_rows) and
 * PED-ANOVA over it (tuners/importance.h). Below the handlers: it calls only schema/
 * and tuners/. */
#ifndef TRIALQ_API_IMPORTANCE_H
#define TRIALQ_API_IMPORTANCE_H

#include "schema/exp_ops.h"
#include "tuners/importance.h"

/* The most trials one answer reads: the most recent SUCCEEDED trials with a final metric. */
#define IMP_SAMPLE 5000

/* The experiment's optimize mode: the tuner's (or advisor's) classArgs.optimize_mode,
 * 1 for "maximize"; minimize when absent, as best_trials_v. */
int exp_maximize(const struct experiment *x);

/* The trials the views of the final metric read (importance, and the slice, contour
 * and distribution of api/analysis.h): the most recent IMP_SAMPLE SUCCEEDED trials with
 * a final metric (schema/webui_rows.h, metric_sample_rows), those whose metric (key
 * NULL: the number, or dict["default"]; else the number at `key` of a dict final
 * metric) is a finite number, each with its parsed parameter object. */
struct exp_sample {
    int n, cap, read;     /* read: the rows read, t[0 .. n) those with a number */
    struct imp_trial *t;  /* params owned */
};
/* Checks key, parses x's search space into *space and reads the sample: 0; -2 with e
 * set for what the request asked (a bad key, a search space that does not parse); -1
 * with e set for a database error. On success both are freed with exp_sample_close. */
int exp_sample_open(struct db *db, const struct experiment *x, const char *key, struct ss_space **space,
                    struct exp_sample *s, struct errbuf *e);
void exp_sample_close(struct ss_space **space, struct exp_sample *s);
/* "seq" (when >= 0), "metric" (key or null), "optimizeMode" and "sample": {"limit",
 * "read", "trials", "of"}: the members every answer over the sample starts with. */
void exp_sample_head(struct strbuf *out, const char *key, int64_t seq, int maximize, const struct exp_sample *s);
/* A number, or null when it is not finite. */
void exp_num(struct strbuf *sb, double v);

/* The importance of x's search-space parameters for its final metric (key NULL: the
 * number, or dict["default"]) or for the number at `key` of a dict final metric, as the
 * JSON object GET /webui/importance answers (docs/rest-api.md), written to out; seq
 * (>= 0) is written as its "seq". Returns 0; -2 with e set for what the request asked
 * (a bad key, a search space that does not parse); -1 with e set for a database error. */
int exp_importance_json(struct db *db, const struct experiment *x, const char *key, int64_t seq,
                        struct strbuf *out, struct errbuf *e);

#endif
