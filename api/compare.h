/* compare.h: several experiments of the database side by side (api/compare.c), for GET
 * /webui/compare (api/routes_compare.c, docs/rest-api.md, docs/webui.md "Compare
 * experiments"): each one's best-so-far final metric by trial number and by time, the
 * distribution of its final metrics on bins shared by all, and their configs as one
 * table with the keys that differ marked. Read from the shared database only (the api
 * serves one experiment; the others are rows of the same tables); below the handlers:
 * it calls schema/ and config/.
 *
 * Bounded whatever the history: of each experiment, the CMP_TOP best trials with a final
 * metric (a walk of trial_status_metric) and CMP_SPREAD others spread evenly over the
 * sequence (param_sample: a seek each). The best-so-far curve from that sample is exact
 * from the first point whose value is among the CMP_TOP best (every later improvement is
 * one of them) and exact everywhere when every trial was read; the distribution is of
 * the evenly spread trials only (the best ones would bias it). */
#ifndef TRIALQ_API_COMPARE_H
#define TRIALQ_API_COMPARE_H

#include <cjson/cJSON.h>

#include "schema/exp_ops.h"

#define CMP_MAX_EXPS 8
#define CMP_TOP 250
#define CMP_SPREAD 500
#define CMP_BINS 30

/* One trial of the sample: its sequence, final metric, and x of the curve by time (ms
 * from the experiment's start; < 0 when it has no end time). */
struct cmp_pt {
    int64_t seq;
    double v;
    int64_t t;
};

/* The best-so-far records of pts[0..n) taken in the order of by_time ? t : seq (points
 * with t < 0 left out by time): each point whose value beats every one before it (ties:
 * the earlier stays), into out (room for n), in that order. Returns how many. pts is
 * reordered. */
int cmp_best_so_far(struct cmp_pt *pts, int n, int maximize, int by_time, struct cmp_pt *out);

/* The configs side by side: each of cfgs[0..n) (JSON objects; NULL: none) flattened to
 * dotted paths ("tuner.classArgs.optimize_mode"; a list is one value), in the order the
 * keys first appear; {"rows": [{"key", "values": [JSON text | null (absent), ...],
 * "differs"}], "differing": how many rows differ}. */
cJSON *cmp_config_diff(const cJSON *const *cfgs, int n);

/* GET /webui/compare's object for the experiments ids[0..n) (each checked to exist: -2
 * with e naming the first that does not), written to out; seq (>= 0) as its "seq".
 * Returns 0, -2 (what the request asked), -1 (a database error), e set. */
int exp_compare_json(struct db *db, char *const *ids, int n, int64_t seq, struct strbuf *out, struct errbuf *e);

#endif
