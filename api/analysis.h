/* analysis.h: the web UI's analysis views of an experiment as JSON (docs/webui.md,
 * "Slice, contour, distribution and early stopping"; docs/rest-api.md): the final
 * metric against each parameter (slice), over two numeric parameters on a grid
 * (contour), its empirical distribution (ECDF), all over importance's sample
 * (api/importance.h, exp_sample_open); and the intermediate curves of the most recent
 * early-stopped trials and of the other ended ones. For api/routes_analysis.c. Each
 * returns 0; -2 with e set for what the request asked (a bad key or parameter, a
 * search space that does not parse); -1 with e set for a database error. seq (>= 0) is
 * written as the answer's "seq". */
#ifndef TRIALQ_API_ANALYSIS_H
#define TRIALQ_API_ANALYSIS_H

#include "api/importance.h"
#include "tuners/analysis.h"

/* the curves view: trials per group by default and at most; the intermediate results
 * read per trial, and the points of each curve in the answer (evenly thinned) */
#define AN_CURVES 100
#define AN_CURVES_MAX 200
#define AN_CURVE_READ 1000
#define AN_CURVE_POINTS 200

int exp_slice_json(struct db *db, const struct experiment *x, const char *key, int64_t seq, struct strbuf *out,
                   struct errbuf *e);
int exp_ecdf_json(struct db *db, const struct experiment *x, const char *key, int64_t seq, struct strbuf *out,
                  struct errbuf *e);

struct contour_query {
    const char *key;   /* the metric's key, NULL: the default */
    const char *x, *y; /* parameter paths; NULL: the first two numeric parameters */
    int grid;          /* cells per axis, 5 .. AN_GRID_MAX */
};
int exp_contour_json(struct db *db, const struct experiment *x, const struct contour_query *q, int64_t seq,
                     struct strbuf *out, struct errbuf *e);

/* up to `per_group` most recent EARLY_STOPPED trials and as many of the other ended
 * ones, with their intermediate results */
int exp_curves_json(struct db *db, const struct experiment *x, int per_group, int64_t seq, struct strbuf *out,
                    struct errbuf *e);

#endif
