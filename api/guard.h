/* guard.h: the api's front door (api/guard.c). Every connection evhttp accepts passes
 * through a bufferevent filter that reads each request's head before evhttp does and
 * refuses what must not cost the api memory or time: bodies over the route's limit
 * (413) or over the budget of all bodies in flight (503), changes without the token
 * beyond loopback (401/403) before the body is read, chunked bodies (411), heads or
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

struct api;

struct guard_limits {
    int max_connections;        /* TRIALQ_API_MAX_CONNECTIONS; at most the fd limit less a margin */
    int64_t body_budget;        /* TRIALQ_API_BODY_BUDGET: bytes of bodies in flight, all requests */
    int64_t request_timeout_ms; /* TRIALQ_API_REQUEST_TIMEOUT (seconds): head + body of one request */
};

/* Defaults, overridden by the environment; a bad value is an error naming the variable. */
int guard_limits_from_env(struct guard_limits *out, char *err, size_t errlen);

struct guard;
/* Takes over the connections of a->http accepted on lev (set up with evhttp_bind_listener
 * or evhttp_bind_socket_with_handle). */
struct guard *guard_new(struct api *a, struct evconnlistener *lev, const struct guard_limits *lim, long fd_limit);
void guard_free(struct guard *g);

/* A connection evhttp let go of (a WebSocket after its upgrade): its bytes pass
 * unchecked from now on and it is never evicted as idle. */
void guard_passthrough(struct guard *g, struct bufferevent *bev);
/* A connection another reader takes over (api/chan_http.c reads its socket itself):
 * moves the bytes the guard still holds, not yet handed to evhttp, onto to. */
void guard_take_held(struct guard *g, struct bufferevent *bev, struct evbuffer *to);

/* A request's head as the guard reads it before evhttp does. */
struct guard_head {
    enum evhttp_cmd_type method;
    int bodied;             /* a method whose body evhttp reads (POST, PUT, PATCH) */
    char *target;
    int64_t content_length; /* -1: none */
    int chunked;            /* any Transfer-Encoding */
    char *token;
};
/* Parses a complete head (NUL-terminated, lines ending in LF or CRLF, the last one
 * empty), in place: h's strings point into text. Returns NULL or what is wrong with it. */
const char *guard_head_parse(char *text, struct guard_head *h);

#endif
