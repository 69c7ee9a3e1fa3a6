/* dispatcher.h: customized Python tuners, assessors and advisors. The api runs NNI's
 * dispatcher process (`python -m nni --exp_params ...`, spec §6.1) and speaks NNI's
 * tuner commands with it over the WebSocket channel of NNI >= 3.0 (on the api's own
 * port, path /tuner) or the legacy fd 3/4 pipes (config `tunerCommandChannel: pipe`).
 * To the scheduler it is a tuner like the built-in ones (a struct tuner_ops whose
 * suggest() answers 2, "ask again", until the process has sent parameters). */
#ifndef TRIALQ_DISPATCHER_H
#define TRIALQ_DISPATCHER_H

#include <event2/http.h>

#include "api/api.h"

/* The tuner the scheduler uses when tuner (or advisor) has className. */
extern const struct tuner_ops dispatcher_tuner_ops;
/* A new state of the api's tuner (a->tuner) over space: a customized tuner's is a
 * handle on the api's dispatcher (dispatcher_init first), whose create() alone cannot
 * reach it; a built-in's comes from its create() with the config's classArgs. */
int dispatcher_tuner_create(struct api *a, const struct ss_space *space, void **state, struct errbuf *e);

/* 1 when the config needs the dispatcher process (a customized tuner or assessor). */
int dispatcher_needed(const struct exp_config *cfg);
/* Sets up the dispatcher for this api (a->disp, once; the process starts on the first
 * tick, when the event loop and the port exist). */
int dispatcher_init(struct api *a, struct errbuf *e);
/* Called on every assessor tick: starts the process if needed (customized assessor
 * with a built-in tuner). */
void dispatcher_tick(struct api *a);
/* children.c reaps every child: it hands over the dispatcher's exit status (registered
 * with reaper_add when the process starts, disp_proc.c). */
void dispatcher_reaped(struct api *a, pid_t pid, int status);
/* GET /tuner: the dispatcher's WebSocket connection (handshake, then the channel). */
void dispatcher_ws_request(struct api *a, struct evhttp_request *r);
/* Sends TE, waits a bounded time for the process, kills what is left, closes the
 * channel. Called after the event loop ended, before the HTTP server is freed. */
void dispatcher_shutdown(struct api *a);

#endif
