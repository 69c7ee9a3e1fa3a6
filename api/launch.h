/* launch.h: NNI's launcher (api/launch.c): an api started for an id without a row, until
 * POST /experiment stores it. */
#ifndef TRIALQ_LAUNCH_H
#define TRIALQ_LAUNCH_H

#include "api/api.h"

#include <event2/http.h>

/* Serves until POST /experiment stores the row (0), or a signal ends it (1). */
int launch_await_config(struct api *a, int port);
/* A request while awaiting_config: GET /check-status and POST /experiment. */
void launch_request(struct api *a, struct evhttp_request *r, int nseg, char **seg);
/* A new ExperimentProfile row in <exp_dir>/db/nni.sqlite from the experiment's row,
 * for NNI's client (its resume and view read the config there). Logged when it fails. */
void launch_nnidb_sync(struct api *a);

#endif
