/* guard.h: the api's front door (api/guard.c). Every connection evhttp accepts passes
 * through a bufferevent filter that reads each request's head before evhttp does and
 * refuses what must not cost the api memory or time: bodies over the route's limit
 * (413) or over the budget of all bodies in flight (503), changes without the token
 * beyond loopback (401/403) before the body is read, chunked bodies (411), a body on
 * a method other than POST, PUT and PATCH (400), heads or
 * bodies not complete within the request deadline (408). It caps the connections
 * (the oldest idle one makes room for a new one) and survives running out of file
 * descriptors (a reserve descriptor, one log line per interval). docs/security.md. */
#ifndef TRIALQ_GUARD_H
#define TRIALQ_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "common/http1.h"

struct api;

struct guard_limits {
    int max_connections;        /* TRIALQ_API_MAX_CONNECTIONS; at most the fd limit less a margin */
    int64_t body_budget;        /* TRIALQ_API_BODY_BUDGET: bytes of bodies in flight, all requests */
    int64_t request_timeout_ms; /* TRIALQ_API_REQUEST_TIMEOUT (seconds): head + body of one request */
};

/* Defaults, overridden by the environment; a bad value is an error naming the variable. */
int guard_limits_from_env(struct guard_limits *out, char *err, size_t errlen);

/* What a request may bring, known from its method and target alone: the route's body
 * limit, and whether it needs the token. The route table answers it (routes.c's
 * routes_head_policy, passed to guard_new): the guard is below the routes. */
struct head_policy {
    int64_t max_body;
    int needs_token;
};
typedef void (*guard_policy_fn)(const struct api *a, enum evhttp_cmd_type m, const char *target,
                                struct head_policy *out);

struct guard;
/* Takes over the connections of a->http accepted on lev (set up with evhttp_bind_listener
 * or evhttp_bind_socket_with_handle). */
struct guard *guard_new(struct api *a, struct evconnlistener *lev, const struct guard_limits *lim, long fd_limit,
                        guard_policy_fn policy);
void guard_free(struct guard *g);

/* A connection evhttp let go of (a WebSocket after its upgrade): its bytes pass
 * unchecked from now on and it is never evicted as idle. */
void guard_passthrough(struct guard *g, struct bufferevent *bev);
/* A connection another reader takes over (api/chan_http.c reads its socket itself):
 * moves the bytes the guard still holds, not yet handed to evhttp, onto to. */
void guard_take_held(struct guard *g, struct bufferevent *bev, struct evbuffer *to);

/* The trial channel's own connections (api/chan_http.c) share the budget and the
 * deadline: guard_reserve takes n bytes of the budget for a body being read (0), or
 * counts a refusal and returns -1 when they would pass it; guard_release gives them
 * back. g may be NULL (no guard: no budget, the default deadline). */
int guard_reserve(struct guard *g, int64_t n);
void guard_release(struct guard *g, int64_t n);
/* TRIALQ_API_REQUEST_TIMEOUT in ms: a request's head and body must be in within it. */
int64_t guard_request_timeout_ms(const struct guard *g);

/* The evhttp method of a head's (common/http1.h); 0 for a method evhttp does not know. */
enum evhttp_cmd_type guard_evhttp_method(enum http1_method m);

#endif
