/* chan_http.h: the trial command channel's own HTTP/1.1 connections (api/chan_http.c).
 * channel.c decides what a request means; chan_http.c runs the channel's connections
 * (common/trialchan.c) in the api's event loop. */
#ifndef TRIALQ_CHAN_HTTP_H
#define TRIALQ_CHAN_HTTP_H

#include <stddef.h>

#include <event2/http.h>

#include "api/api.h"
#include "common/trialchan.h"

enum chan_method { CHAN_GET, CHAN_PUT, CHAN_OTHER };

/* One request to /env/<token>/<trial_id>; everything in it lives until the handler
 * returns (the handler copies what it keeps). */
struct chan_req {
    enum chan_method method;
    const char *token, *trial_id; /* decoded path segments */
    const char *body;
    size_t body_len;
    int json_body;                /* Content-Type: application/json */
};

/* channel.c: handles one request. It answers with tc_reply/cconn_error, now or later;
 * until then the connection reads no further request (one at a time). */
void channel_request(struct api *a, struct tc_conn *c, const struct chan_req *q);

/* Takes over the connection of r (an evhttp request to the channel, answered by no
 * one else afterwards); NULL when it cannot (r is then still evhttp's to answer). */
struct tc_conn *cconn_adopt(struct api *a, struct evhttp_request *r);
/* The connection carried a request with trial_id's right token: errors keep it open,
 * and it counts among that trial's connections (the oldest waiting on its client
 * closes when there are too many). */
void cconn_trust(struct tc_conn *c, const char *trial_id);
/* A 4xx/5xx with {"error": message}; it closes a connection that was never trusted. */
void cconn_error(struct tc_conn *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* At api exit, after channel.c answered what was pending: writes what is left and
 * closes every connection. */
void cconn_close_all(struct api *a);

#endif
