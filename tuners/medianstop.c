/* medianstop.c: NNI's "Medianstop" assessor (medianstop_assessor.py), the median
 * stopping rule of Google Vizier: a trial is stopped at step S when its best result
 * so far is strictly worse than the median of the running averages, at step S, of
 * the trials that completed successfully.
 *
 * NNI builds the completed trials' running averages from the results it was shown
 * while assessing them; since the dispatcher assesses every intermediate result,
 * that is the trial's whole series, which the input carries. A completed trial is
 * compared only when it reached step S. */
#include "tuners/assessor.h"
#include "tuners/internal.h"

#include <math.h>
#include <stdlib.h>

struct medianstop {
    int maximize;
    int start_step;
};

static int ms_create(const cJSON *args, void **state, struct errbuf *e)
{
    int mode = 0, start_step = 0;  /* NNI's defaults: maximize, 0 */
    const struct ca_rule rules[] = {
        {"optimize_mode", CA_CHOICE, .choices = classargs_modes, .out = &mode},
        {"start_step", CA_INT, 0, 9999, .out = &start_step},
    };
    if (classargs_check(args, CA_ASSESSOR, "Medianstop", rules, CA_COUNT(rules), e) < 0)
        return -1;
    struct medianstop *m = xcalloc(1, sizeof *m);
    m->maximize = mode == 0;
    m->start_step = start_step;
    *state = m;
    return 0;
}

static void ms_destroy(void *state)
{
    free(state);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Non-finite values (which NNI would compare in whatever way Python's max does)
 * are left out of the trial's best; a completed trial with one among the first S
 * results is left out of the median. */
static enum assess_result ms_assess(void *state, const struct assessor_input *in)
{
    const struct medianstop *m = state;
    int step = in->n;
    if (step < m->start_step || step == 0)
        return ASSESS_GOOD;
    double best = m->maximize ? -INFINITY : INFINITY;
    int any = 0;
    for (int i = 0; i < step; i++) {
        double v = in->values[i];
        if (!isfinite(v))
            continue;
        best = m->maximize ? fmax(best, v) : fmin(best, v);
        any = 1;
    }
    if (!any)
        return ASSESS_GOOD;

    double *avg = xmalloc(sizeof *avg * (size_t)(in->n_others ? in->n_others : 1));
    int k = 0;
    for (int j = 0; j < in->n_others; j++) {
        const struct assessor_series *o = &in->others[j];
        if (!o->succeeded || o->n < step)
            continue;
        double sum = 0;
        for (int i = 0; i < step; i++)
            sum += o->values[i];
        if (isfinite(sum))
            avg[k++] = sum / step;
    }
    enum assess_result res = ASSESS_GOOD;
    if (k > 0) {
        qsort(avg, (size_t)k, sizeof *avg, cmp_double);
        /* NNI's medians: the lower middle when maximizing, the upper when minimizing,
         * so that an even count leans towards keeping the trial */
        if (m->maximize)
            res = best < avg[(k - 1) / 2] ? ASSESS_BAD : ASSESS_GOOD;
        else
            res = best > avg[k / 2] ? ASSESS_BAD : ASSESS_GOOD;
    }
    free(avg);
    return res;
}

static const char *const ms_aliases[] = {"MedianstopAssessor", NULL};

const struct assessor_ops assessor_medianstop = {
    .name = "Medianstop",
    .aliases = ms_aliases,
    .create = ms_create,
    .assess = ms_assess,
    .destroy = ms_destroy,
};
