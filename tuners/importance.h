/* importance.h: which parameters of a search space matter for a metric, from finished
 * trials, by PED-ANOVA (Watanabe, Bansal, Hutter, "PED-ANOVA: Efficiently Quantifying
 * Hyperparameter Importance in Arbitrary Subspaces", IJCAI 2023). Pure: trials in,
 * one number per parameter out (docs/webui.md, "Importance"). */
#ifndef TRIALQ_IMPORTANCE_H
#define TRIALQ_IMPORTANCE_H

#include <cjson/cJSON.h>

#include "tuners/searchspace.h"

/* gamma': the share of the trials taken as the top, as Optuna's
 * PedAnovaImportanceEvaluator; the region (gamma) is every trial given. */
#define IMP_GAMMA 0.1
/* the most grid points a numeric parameter is integrated on (Optuna's n_steps) */
#define IMP_GRID 50

struct imp_trial {
    const cJSON *params;  /* the trial's parameter object (borrowed) */
    double value;         /* its metric, a finite number */
};

struct imp_param {
    const struct ss_param *p;  /* borrowed from the space: p->path names it */
    int n, n_top;              /* trials in which it was active; how many of them are its top */
    double divergence;         /* the Pearson divergence of the top's density from all's */
    double importance;         /* divergence / sum of every parameter's; 0 when the sum is 0 */
};

struct imp_result {
    int n;
    struct imp_param *p;  /* by importance, greatest first (ties: search-space order) */
};

/* Every parameter of s (those of a nested choice's branches included, each over the
 * trials that chose its branch): for each, the top max(2, ceil(gamma * m)) of the m
 * trials in which it was active (the least values; the greatest when maximize) are
 * compared with all m. Both sets become a one-dimensional Parzen estimator as TPE's
 * (tuners/parzen.c: NNI's adaptive bandwidths, prior weight 1), evaluated on the
 * parameter's grid (a choice's options; a randint's integers and a quniform's or
 * qloguniform's multiples of q when at most IMP_GRID, else IMP_GRID points evenly
 * spaced over the range, in log space for log types; mu +- 3 sigma for the normal
 * types) and normalised there to probabilities p_top and p_all; the divergence is
 * sum over the grid of p_all * (p_top / p_all - 1)^2. A parameter active in fewer
 * than 2 trials scores 0. Values that do not fit the parameter leave that trial out
 * of it. out is freed with imp_result_free. */
void imp_ped_anova(const struct ss_space *s, const struct imp_trial *t, int n, int maximize, double gamma,
                   struct imp_result *out);
void imp_result_free(struct imp_result *r);

/* The divergence of one parameter from the values x[0 .. n) (the estimators' space:
 * option index, offset from low, log of a log type) and the trials' losses (lower is
 * better); *n_top receives the size of the top. For the unit tests. */
double imp_divergence(const struct ss_param *p, const double *x, const double *loss, int n, double gamma,
                      int *n_top);

#endif
