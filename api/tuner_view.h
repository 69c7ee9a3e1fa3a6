/* tuner_view.h: the tuner's view of an experiment's trials (struct tuner_history of
 * tuners/tuner.h): imported results first, then every trial in sequence order, kept in
 * memory with a hash index by trial id and refreshed from the rows changed since the
 * last look (trial.updated_at, indexed), so that a suggestion costs O(changes), not
 * O(trials). It is a cache: a full reload every minute (and at start, and after a new
 * search space or a new import) makes it equal to the database whatever happened. */
#ifndef TRIALQ_TUNER_VIEW_H
#define TRIALQ_TUNER_VIEW_H

#include "schema/schema.h"
#include "tuners/tuner.h"

struct tuner_view;

/* What the tuner needs of the rows. */
struct tuner_view_opts {
    int needs_latest;          /* each item's latest result (tuner_ops.needs_latest) */
    int index_spans_spaces;    /* tuner_ops.index_spans_spaces: parameter ids as stored */
    int64_t space_index_base;  /* else: ids from here on are the tuner's 0, 1, ...; earlier -1 */
};

/* Brings *v (NULL: a new one) up to date with the database. 0, or -1 (e says why). */
int tuner_view_refresh(struct tuner_view **v, struct db *db, const char *exp_id, const struct tuner_view_opts *o,
                       struct errbuf *e);
/* The history to pass to suggest(): valid until the next refresh or free. */
struct tuner_history tuner_view_history(const struct tuner_view *v);
/* The next refresh reloads everything (every item's tuner index changed). NULL: nothing. */
void tuner_view_reload(struct tuner_view *v);
void tuner_view_free(struct tuner_view *v);

#endif
