/* bracket.h: the successive-halving brackets Hyperband and BOHB share (NNI's
 * hyperband_advisor.py and bohb_advisor.py), rebuilt from the history on every call.
 *
 * Bracket b (0, 1, 2, ... in the order they start) has s = s_max - b % (s_max + 1)
 * and belongs to Hyperband iteration hb = b / (s_max + 1). It starts with
 * n = ceil((s_max + 1) * eta^s / (s + 1)) configurations; round i (0 .. s) runs
 * floor(n / eta^i) of them with the budget floor(r_max / eta^s * eta^i) (NNI's
 * get_n_r, both with NNI's epsilon 1e-6). Configuration k of bracket b has the counter
 * base(b) + k, base(b) being the number of configurations of the brackets before it
 * (NNI's global create_parameter_id()), and keeps it across rounds: its wire ids are
 * "<hb>-<s>_<i>_<counter>" (Hyperband) or "<s>_<i>_<counter>" (BOHB).
 *
 * Everything is derived from the trials' labels (trial.parameter_label), statuses and
 * latest results, so a decision is a pure function of (seed, history). */
#ifndef TRIALQ_TUNERS_BRACKET_H
#define TRIALQ_TUNERS_BRACKET_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "common/common.h"
#include "tuners/tuner.h"

#define HB_BUDGET_KEY "TRIAL_BUDGET"

enum hb_mode {
    HB_PARALLEL, /* Hyperband "parallelism": a new bracket whenever nothing is waiting */
    HB_SERIAL,   /* Hyperband "serial": a new bracket once the last one issued its last round */
    HB_STRICT,   /* BOHB: a new bracket once the last one's last round has ended */
};

struct hb_plan {
    int s_max, eta;
    double r_max;     /* Hyperband R, BOHB max_budget */
    int maximize;
    enum hb_mode mode;
    int with_hb;      /* labels start with "<hb>-" (Hyperband), or not (BOHB) */
    int64_t per_cycle; /* configurations of one Hyperband iteration (s = s_max .. 0) */
};

/* Fills the plan; s_max = floor(log_eta(r_max / r_min) + 1e-6) as NNI computes it.
 * -1 (e says why) when a bracket would be too large to count. */
int hb_plan_init(struct hb_plan *p, double r_max, double r_min, int eta, int maximize, enum hb_mode mode,
                 int with_hb, struct errbuf *e);
int hb_bracket_s(const struct hb_plan *p, int64_t b);
int64_t hb_bracket_n(const struct hb_plan *p, int s);           /* configurations of round 0 */
int64_t hb_round_n(const struct hb_plan *p, int s, int i);      /* configurations of round i */
int64_t hb_round_budget(const struct hb_plan *p, int s, int i); /* TRIAL_BUDGET of round i */
int64_t hb_counter_base(const struct hb_plan *p, int64_t b);
/* The bracket a counter belongs to. */
int64_t hb_counter_bracket(const struct hb_plan *p, int64_t counter);
/* Writes the wire id of (bracket, round, counter) into buf. */
void hb_label(const struct hb_plan *p, int64_t b, int round, int64_t counter, char *buf, size_t len);
/* Parses a label of this plan's form: 1 with the parts set, 0 when it is not one. */
int hb_parse(const struct hb_plan *p, const char *label, int64_t *b, int *round, int64_t *counter);

/* What to run next. */
struct hb_next {
    int64_t bracket, counter;
    int round;
    int64_t budget;
    /* a promotion: the parameters the configuration ran with in the round before
     * (borrowed from the history; TRIAL_BUDGET still the old one); NULL: a new
     * configuration of round 0, to be drawn by the caller */
    const cJSON *params;
    char label[64];
};

/* 1: *next says what to run; 2: nothing now (a round must end first). */
int hb_decide(const struct hb_plan *p, const struct tuner_history *h, struct hb_next *next);

/* The parameters of a suggestion: a copy of params (NULL: an empty object) with
 * TRIAL_BUDGET set to budget, in its place or appended last (NNI's key order). */
cJSON *hb_with_budget(const cJSON *params, int64_t budget);

/* bohb.c, for its unit test: builds the model the new configurations of bracket b
 * are drawn from; 1 when there is one (*budget: the budget it was fitted at). */
int bohb_model_state(void *bohb_state, const struct tuner_history *h, int64_t bracket, double *budget);

#endif
