/* curvefitting.c: NNI's "Curvefitting" assessor (curvefitting_assessor.py): once a
 * trial has succeeded, a running trial's learning curve is extrapolated to epoch
 * epoch_num (curvefit.c) and the trial is stopped when the prediction is no better
 * than threshold times the best completed result. For accuracy-like metrics
 * (higher is better) only, as in NNI.
 *
 * Differences from NNI, each for a reason:
 * - The best completed result is the largest last intermediate result of the
 *   trials that succeeded. NNI takes the last value of whichever trial it assessed
 *   most recently when a trial ends, which is the ended trial's only when trials
 *   run one at a time.
 * - A trial is judged when it has start_step, start_step + gap, start_step + 2 gap,
 *   ... results. NNI counts the gap from the first judgment, which is later than
 *   start_step when no trial had succeeded yet at that point; the input does not say
 *   when that was.
 * - The curve model is deterministic (curvefit.c). */
#include "tuners/assessor.h"
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>

struct curvefitting {
    int epoch_num, start_step, gap;
    double threshold;
};

static int cf_create(const cJSON *args, void **state, struct errbuf *e)
{
    /* NNI's defaults; its validator requires epoch_num even so. NNI also asks for a
     * float threshold, and so rejects "threshold: 1"; JSON does not tell 1 from 1.0,
     * so any number in range is accepted. */
    struct curvefitting c = {.epoch_num = 20, .start_step = 6, .gap = 1, .threshold = 0.95};
    const struct ca_rule rules[] = {
        {"epoch_num", CA_INT, 0, 9999, .required_what = "the number of epochs a trial runs", .out = &c.epoch_num},
        {"start_step", CA_INT, 0, 9999, .out = &c.start_step},
        {"threshold", CA_NUMBER, 0, 9999, .out = &c.threshold},
        {"gap", CA_INT, 1, 9999, .out = &c.gap},
    };
    if (classargs_check(args, CA_ASSESSOR, "Curvefitting", rules, CA_COUNT(rules), e) < 0)
        return -1;
    struct curvefitting *s = xmalloc(sizeof *s);
    *s = c;
    *state = s;
    return 0;
}

static void cf_destroy(void *state)
{
    free(state);
}

static enum assess_result cf_assess(void *state, const struct assessor_input *in)
{
    const struct curvefitting *c = state;
    double best = -INFINITY;
    for (int j = 0; j < in->n_others; j++) {
        const struct assessor_series *o = &in->others[j];
        if (o->succeeded && o->n > 0 && isfinite(o->values[o->n - 1]))
            best = fmax(best, o->values[o->n - 1]);
    }
    if (!isfinite(best))
        return ASSESS_GOOD;  /* no trial has succeeded yet */
    int n = in->n;
    if (n == 0 || n < c->start_step || (n - c->start_step) % c->gap != 0)
        return ASSESS_GOOD;
    double pred;
    if (!curve_predict(in->values, n, c->epoch_num, &pred, NULL))
        return ASSESS_GOOD;  /* NNI: "wait for more information to predict precisely" */
    return pred > best * c->threshold ? ASSESS_GOOD : ASSESS_BAD;
}

static const char *const cf_aliases[] = {"CurvefittingAssessor", NULL};

const struct assessor_ops assessor_curvefitting = {
    .name = "Curvefitting",
    .aliases = cf_aliases,
    .create = cf_create,
    .assess = cf_assess,
    .destroy = cf_destroy,
};
