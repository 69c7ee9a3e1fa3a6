/* trial_new.h: new WAITING trials: the ones the scheduler asks its tuner for, and those
 * added by hand (NNI's customized trials, `nnictl trial rerun`). One INSERT for both. */
#ifndef TRIALQ_TRIAL_NEW_H
#define TRIALQ_TRIAL_NEW_H

#include "schema/schema.h"

struct trial_new {
    const char *exp_id;
    const char *platform;
    const char *parameters;  /* JSON object text */
    const char *source;      /* parameter_source: "algorithm", "customized", "rerun" */
    int64_t parameter_id;    /* -1 = null, as NNI's customized trials have */
    const char *label;       /* parameter_label (the tuner's name of it, Hyperband's), or NULL */
    int max_attempts;
    const char *reason;      /* of the WAITING event */
};

/* Inserts one WAITING trial with the experiment's next sequence number, in one
 * transaction that also checks maxTrialNumber (every trial counts, as in NNI). When the
 * budget is used up but its last trial is one the scheduler queued ahead of the free
 * slots (an algorithm trial no worker took, with the tuner's latest index), that trial
 * becomes the new one instead (same id and sequence; *replaced = 1): NNI would not have
 * submitted it yet, and the tuner suggests that index again later if the budget allows.
 * Returns 1 with id_out and *seq_out set, 0 when the budget is used up, -1 on error. */
int trial_enqueue(struct db *db, const struct trial_new *n, char id_out[6], int64_t *seq_out, int *replaced,
                  struct errbuf *e);
/* The same without a budget check (the scheduler checked it): inserts one WAITING trial
 * with the next sequence number, in one transaction. 0 with id_out and *seq_out set, or
 * -1 (nothing changed). */
int trial_add(struct db *db, const struct trial_new *n, char id_out[6], int64_t *seq_out, struct errbuf *e);

#endif
