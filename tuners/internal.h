/* internal.h: pieces shared by the tuner implementations inside tuners/ (and their
 * unit tests). Other modules use tuner.h and searchspace.h only. */
#ifndef TRIALQ_TUNERS_INTERNAL_H
#define TRIALQ_TUNERS_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"
#include "common/trial_status.h"
#include "tuners/searchspace.h"
#include "tuners/tuner.h"

/* ---- the built-in tuners (registry.c lists them) ---- */
extern const struct tuner_ops tuner_random;
extern const struct tuner_ops tuner_gridsearch;
extern const struct tuner_ops tuner_batch;
extern const struct tuner_ops tuner_tpe;
extern const struct tuner_ops tuner_anneal;
extern const struct tuner_ops tuner_evolution;
extern const struct tuner_ops tuner_gp;
extern const struct tuner_ops tuner_metis;
extern const struct tuner_ops tuner_hyperband;
extern const struct tuner_ops tuner_bohb;
extern const struct tuner_ops tuner_pbt;
extern const struct tuner_ops tuner_tpe_legacy;            /* mapped.c: runs TPE */
extern const struct tuner_ops tuner_regularized_evolution; /* regevo.c: aging evolution */

/* ---- the built-in assessors (assessor.c lists them) ---- */
struct assessor_ops;
extern const struct assessor_ops assessor_medianstop;
extern const struct assessor_ops assessor_curvefitting;

/* ---- curvefit.c: the learning-curve model of the Curvefitting assessor ---- */
/* Predicts the value at epoch `target` of the curve y[0 .. n) (epochs 1 .. n), as
 * NNI's CurveModel.predict does, with a deterministic fit (curvefit.c says how it
 * differs). Returns 1 with *pred set, or 0 when the fitted families disagree too much
 * to predict ("wait for more results"). *n_effective (if not NULL) receives the
 * number of curve families the prediction averages. */
int curve_predict(const double *y, int n, int target, double *pred, int *n_effective);

/* ---- canonical.c: parameter sets compared as NNI does (nni.dump(sort_keys=True)) ---- */
/* Compact JSON text with object keys sorted at every level; caller frees. Two
 * parameter sets are the same trial when their canonical texts are equal. */
char *json_canonical(const cJSON *j);
uint64_t str_hash64(const char *s);  /* FNV-1a */
/* Whether json_canonical(a) and json_canonical(b) would be equal, without writing
 * them when the members come in the same order (a repeat check against a long
 * history); json_hash64 is equal for such values. */
int json_same(const cJSON *a, const cJSON *b);
uint64_t json_hash64(const cJSON *j);

/* ---- seen.c: which canonical texts were already produced ---- */
/* Maps 64-bit hashes to ids (0, 1, 2, ...); the owner keeps the texts (or can
 * rebuild them) and decides equality, so the index stores 16 bytes per entry. */
struct seen {
    uint64_t *hash;
    int64_t *id;    /* -1: empty slot */
    size_t cap, n;
};
void seen_init(struct seen *s);
void seen_free(struct seen *s);
/* Returns the id of an entry with hash h for which same(ctx, id) is true, or -1. */
int64_t seen_find(const struct seen *s, uint64_t h, int (*same)(void *ctx, int64_t id), void *ctx);
void seen_add(struct seen *s, uint64_t h, int64_t id);

/* ---- grid.c: NNI's GridSearchTuner enumeration, addressable by index ---- */
struct grid;
/* space is borrowed and must outlive the grid. */
struct grid *grid_new(const struct ss_space *space);
void grid_free(struct grid *g);
/* Point `index` (0-based) of the enumeration, computed lazily and cached: 1 with
 * *out set to a new parameter object, 0 when the space has no such point. */
int grid_point(struct grid *g, int64_t index, cJSON **out);

/* ---- erfinv.c ---- */
/* Inverse error function on [-1, 1] (±inf at ±1, NaN outside), to ~1 ulp. */
double ss_erfinv(double y);

/* ---- evolution.c: the state of the two evolution tuners (Evolution, regevo.c) ---- */
struct evo_state {
    struct ss_space *space;  /* own copy */
    uint64_t seed;
    int maximize, population_size;
    int n_params;            /* Evolution: parameters in the whole tree (the most a parent has active) */
    int sample_size;         /* RegularizedEvolutionTuner: the tournament's size */
};
/* NULL (e set) when the space does not parse. */
struct evo_state *evo_state_new(const struct ss_space *space, uint64_t seed, int maximize, int population_size,
                                struct errbuf *e);
void evo_state_free(void *state);

/* ---- queries.c ---- */
/* (a final status: trial_status_final() of common/trial_status.h) */
/* What a constant liar needs of the history: over the results that are finite numbers,
 * multiplied by sign (-1 makes a maximized metric a loss), their least, greatest, sum
 * and count; and how many trials have no result and have not ended (pending). */
struct result_stats {
    double min, max, sum;
    int n_results, n_pending;
};
void result_stats(const struct tuner_history *hist, double sign, struct result_stats *out);
/* 1 when the space is finite-valued (no unquantized numeric parameter anywhere), so
 * that a suggestion can repeat an earlier one exactly. */
int space_may_repeat(const struct ss_space *s);
/* What a model-based tuner with a constant liar observes, in sequence order: every
 * result that is a finite number (loss = sign * value), then, with a liar, every
 * pending trial (loss = the lie). */
typedef void (*history_visit)(void *ctx, const cJSON *parameters, double loss);
void history_each_result(const struct tuner_history *hist, double sign, history_visit visit, void *ctx);
void history_each_pending(const struct tuner_history *hist, double loss, history_visit visit, void *ctx);
/* 1 when a trial of the history (any status) ran exactly these parameters, compared
 * as NNI does (canonical texts). */
int history_has(const struct tuner_history *hist, const cJSON *params);
/* The option of choice parameter p that value v is (for a nested choice: whose
 * "_name" v carries), or -1. */
int choice_index(const struct ss_param *p, const cJSON *v);
/* The value v that a trial gave parameter p, as the model-based tuners observe it:
 * the option index of a choice, the offset from low of a randint, else the number
 * itself. Returns 0 with *out set, or -1 when v does not fit (not a finite number,
 * not an option, not an integer in the range). */
int observed_value(const struct ss_param *p, const cJSON *v, double *out);

/* ---- classargs.c: the checks of classArgs, for tuners and assessors ---- */
/* Each algorithm declares its arguments as a table of rules, one row a key, in the
 * order NNI's docs list them (the order of "(accepted: ...)" in the error for an
 * unknown key). `where` is the path of the mapping checked (CA_TUNER, CA_ASSESSOR, or
 * a nested mapping such as CA_TUNER ".tpe_args"); errors read "<where>.<key>: ...".
 * Absent and JSON null leave *out alone; a valid value sets it. */
#define CA_TUNER "tuner.classArgs"
#define CA_ASSESSOR "assessor.classArgs"
enum ca_kind {
    CA_INT,     /* int *out, an integer in [min, max] */
    CA_NUMBER,  /* double *out, a number in [min, max] (max INFINITY: no upper bound) */
    CA_BOOL,    /* int *out, true or false */
    CA_CHOICE,  /* int *out, the index of the string given in choices (NULL-terminated) */
    CA_SEED,    /* uint64_t *out, tuner.classArgs.seed: an integer in [0, 2^53] */
    CA_KEY,     /* accepted; the algorithm checks the value itself after the table */
};
struct ca_rule {
    const char *key;
    enum ca_kind kind;
    double min, max;
    const char *const *choices;
    /* non-NULL: the key is required, and the error tells the user to put this there */
    const char *required_what;
    void *out;
    /* the rows are checked by ascending pass, then in row order (most are 0; a seed
     * some tuners check before the rest has -1) */
    int pass;
};
/* Accepts NULL, JSON null or an object whose keys each name a row (n 0: the algorithm
 * takes none). algo (may be NULL inside a nested mapping) names the algorithm in the
 * error. Returns 0 or -1. */
int classargs_keys(const cJSON *args, const char *where, const char *algo, const struct ca_rule *rules, int n,
                   struct errbuf *e);
/* Checks each row's value (its presence first when required_what is set), in the
 * order of `pass`; the first error wins. Returns 0 or -1. */
int classargs_rules(const cJSON *args, const char *where, const char *algo, const struct ca_rule *rules, int n,
                    struct errbuf *e);
/* classargs_keys, then classargs_rules. */
int classargs_check(const cJSON *args, const char *where, const char *algo, const struct ca_rule *rules, int n,
                    struct errbuf *e);
#define CA_COUNT(rules) ((int)(sizeof(rules) / sizeof(rules)[0]))
/* The options of optimize_mode, in NNI's order: {"maximize", "minimize", NULL}. */
extern const char *const classargs_modes[];
/* tuner.classArgs.seed: a non-negative integer. Returns 1 and sets *seed when present,
 * 0 when absent, -1 on error. */
int classargs_seed(const cJSON *args, uint64_t *seed, struct errbuf *e);

/* ---- gp.c: the dense linear algebra and the model of the GP tuner (Metis uses them) ---- */
/* In-place Cholesky factorisation of the n x n row-major symmetric matrix a: on
 * success (0) its lower triangle holds L (a = L L^T) and the upper triangle zeros;
 * -1 when a is not positive definite. */
int gp_cholesky(double *a, int n);
/* Solves (L L^T) x = b in place, l from gp_cholesky. */
void gp_cholesky_solve(const double *l, int n, double *b);
/* A GP regression model (Matern kernel of smoothness nu: 0.5, 1.5 or 2.5, plus alpha
 * on the diagonal) over n rows x (row-major, d values each, scaled to [0, 1]; borrowed,
 * must outlive the model) with normalised targets ynorm; the length scale is the one
 * of a fixed grid with the largest log marginal likelihood. The caller sets ymean and
 * ystd (the normalisation) after a successful fit. */
struct gp_model {
    int n, d;
    double nu, ls, ymean, ystd;
    const double *x;  /* n*d, borrowed */
    double *l;        /* n*n Cholesky factor */
    double *w;        /* K^-1 y (normalised) */
    double *kbuf;     /* n: scratch */
};
/* 0, or -1 when no length scale gives a positive definite matrix (nothing to free). */
int gp_model_fit(struct gp_model *m, int d, double nu, double alpha, const double *x, const double *ynorm, int n);
/* Mean and standard deviation at u, in the units of ymean/ystd. */
void gp_model_predict(struct gp_model *m, const double *u, double *mean, double *sd);
void gp_model_free(struct gp_model *m);

/* A parameter of the GP tuners (GP, Metis) scaled to [0, 1]: numbers in their internal
 * (log) space, randint as [low, high - 1], a choice by its options' values when they are
 * all numbers, else by index. */
struct unit_dim {
    const struct ss_param *p;
    double lo, hi;   /* the scaled range */
    int by_value;    /* choice: options are numbers, modelled by value */
};
/* dims: space->n of them. */
void unit_dims_init(struct unit_dim *dims, const struct ss_space *space);
/* Trial parameters -> scaled row of d values; -1 when they do not fit the space. */
int unit_dims_scale(const struct unit_dim *dims, int d, const cJSON *obj, double *row);
/* A scaled value -> the parameter's value (nearest option, rounded, inside the range). */
cJSON *unit_dim_value(const struct unit_dim *g, double u);

/* ---- groups.c: a search space cut into groups (TPE, Anneal) ---- */
/* Group 0 holds the top-level parameters; every option of a nested choice has the
 * group of its sub-space, numbered depth first. */
struct sg_dim {
    const struct ss_param *p;
    int label;   /* the parameter's number in the whole tree, depth first */
    int *child;  /* nested choice: the group of each option; else NULL */
};
struct sg_group {
    int d;
    struct sg_dim *dims;
};
struct space_groups {
    int n, n_labels;  /* groups; parameters in all of them */
    struct sg_group *g;
};
/* s is borrowed and must outlive the groups. */
void space_groups_init(struct space_groups *sg, const struct ss_space *s);
void space_groups_free(struct space_groups *sg);

/* ---- parzen.c: the Parzen estimators of TPE ---- */
/* (value, index) pairs; ranked_sort orders them by value, equal values by index
 * (the order Python's stable sort gives). */
struct ranked {
    double v;
    int i;
};
void ranked_sort(struct ranked *a, int n);
/* Reorders a so that a[0 .. k) are the k least (in any order), 0 <= k <= n. */
void ranked_select(struct ranked *a, int n, int k);

struct pz_dim {
    int n_cat;                     /* > 0: categorical, values are option indexes */
    double lo, hi;                 /* numeric: range in the internal space (+-INFINITY: none) */
    double prior_mu, prior_sigma;  /* numeric: the prior component */
    int ordinal;                   /* numeric over a randint's offsets: draws are rounded */
};

/* (tpe.c) The estimators' view of parameter p: categorical for choice, and for randint
 * unless ordered_randint (NNI's TPE: always), numeric and ordinal over its offsets
 * then; numeric in the internal space (log space for log types) otherwise. */
void pz_dim_init(struct pz_dim *z, const struct ss_param *p, int ordered_randint);
/* (tpe.c) Value v of parameter p in the estimators' space of z: the option index of a
 * choice, the offset from low of a randint, the log of a log type, clipped to z's range.
 * 0 with *out set, or -1 when v does not fit p. */
int pz_internal_value(const struct ss_param *p, const struct pz_dim *z, const cJSON *v, double *out);

/* A mixture of n components (n - 1 observations, then the prior), each a product
 * over d dimensions. */
struct pz_mixture {
    int d, n;
    const struct pz_dim *dims;  /* borrowed */
    double *cum;                /* n: cumulative normalised weights */
    double *logw;               /* n: log normalised weights */
    double *mu;                 /* n*d: centre, or option index (-1: uniform) */
    double *inv_sigma;          /* n*d: numeric: 1 / sigma */
    double *logc;               /* n*d: numeric: log normaliser; categorical: log p(centre) */
    double *logc_other;         /* n*d: categorical: log p(another option) */
};

/* How pz_build shapes an estimator. A numeric kernel's width is NNI's adaptive rule
 * over the rows x[0 .. n_spread) (n_spread >= n_obs: later rows only shape the
 * widths), floored at prior_sigma / clip_div (NNI: min(100, n + 2), hyperopt's
 * "magic clip") and at scott * n_obs^(-1/(d+4)) * prior_sigma (Scott's rule, the
 * width of Optuna's multivariate TPE with scott 0.2; 0: no such floor), and in an
 * ordinal dimension at ordinal_sigma (unless that is wider than the prior). The prior
 * joins the mixture with prior_weight; a categorical dimension's kernels are shaped
 * as if it were cat_prior_weight (NNI: prior_weight). */
struct pz_shape {
    int n_spread;
    double clip_div, prior_weight, cat_prior_weight, scott;
    double ordinal_sigma;
};

/* Builds the estimator with one component per row x[0 .. n_obs) (row-major, d values
 * a row) weighted w, and the prior, shaped by *sh. dims is borrowed. */
void pz_build(struct pz_mixture *m, const struct pz_dim *dims, int d, const double *x, const double *w, int n_obs,
              const struct pz_shape *sh);
void pz_free(struct pz_mixture *m);
void pz_sample(const struct pz_mixture *m, struct rng *r, double *x);
double pz_logpdf(const struct pz_mixture *m, const double *x);
double pz_logpdf_dim(const struct pz_mixture *m, const double *x, int j);
/* log of the joint density of the dimensions j with mask[j] set, at those x[j] */
double pz_logpdf_mask(const struct pz_mixture *m, const double *x, const unsigned char *mask);

#endif
