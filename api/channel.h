/* channel.h: the HTTP trial command channel /env/<token>/<trialId> (api/channel.c). */
#ifndef TRIALQ_CHANNEL_H
#define TRIALQ_CHANNEL_H

#include <event2/http.h>

#include "api/api.h"

/* Handles one request to /env/<token>/<trialId> (segments decoded). */
void channel_handle(struct api *a, struct evhttp_request *r, const char *token, const char *trial_id);
/* Stores pending metrics, answers pending polls with 410, frees everything. */
void channel_shutdown(struct api *a);

#endif
