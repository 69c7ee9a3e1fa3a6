/* assess.h: the assessor (api/assess.c), when the config has one. */
#ifndef TRIALQ_ASSESS_H
#define TRIALQ_ASSESS_H

#include "api/api.h"

struct assess_state;
int assess_init(struct api *a, struct errbuf *e);
void assess_tick(struct api *a);
void assess_free(struct api *a);

#endif
