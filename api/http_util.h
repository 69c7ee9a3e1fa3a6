/* http_util.h: what the api's HTTP handlers share (api/http_util.c), below the route
 * table (api/routes.c): the request, replies, query and body parsing, paths, the
 * token rule, the experiment as a request sees it. It includes nothing else of the
 * api's layers above it. */
#ifndef TRIALQ_HTTP_UTIL_H
#define TRIALQ_HTTP_UTIL_H

#include <stdarg.h>

#include <event2/http.h>

#include "api/api.h"
#include "schema/exp_ops.h"
#include "schema/listing.h"

#define API_PREFIX "/api/v1/nni"
/* Request bodies, per route (routes.c's table; docs/security.md). NNI takes 50 MB on
 * every route; a body is read whole into memory, so each route takes what it needs. */
#define BODY_DEFAULT (64 << 10)  /* every route not named below */
#define BODY_TRIAL (1 << 20)     /* POST /trial-jobs: a customized trial's parameters */
#define BODY_METADATA (1 << 20)  /* PUT /experiment/cluster-metadata */
#define BODY_CHANNEL (4 << 20)   /* one trial channel command (a metric) */
#define BODY_PROFILE (16 << 20)  /* PUT/POST /experiment: a profile with its search space */
#define BODY_IMPORT (32 << 20)   /* POST /experiment/import-data */
#define MAX_BODY BODY_IMPORT     /* evhttp's own bound, the largest of them */
#define MAX_ARGS 3

struct req {
    struct api *a;
    struct evhttp_request *r;
    const char *path;          /* decoded, for messages */
    char *args[MAX_ARGS];      /* the :name segments of the route, decoded */
    struct evkeyvalq *query;   /* parsed query string */
};

/* ---- paths ---- */
#define MAX_SEGMENTS 16
struct segments {
    char *seg[MAX_SEGMENTS]; /* decoded */
    int n;
};
/* Splits a raw path on '/' and decodes each segment on its own (an encoded slash stays
 * in its segment; a trailing slash is ignored). 0; 1: too many segments; -1: a NUL. */
int split_path(const char *raw, struct segments *out);
/* Drops the --url_prefix segments from the front: 0, or -1 when the path is outside. */
int strip_prefix(const struct api *a, struct segments *s);
void segments_free(struct segments *s);
/* Skips the slashes at *p and returns the length of the segment there (0 at the end). */
size_t next_segment(const char **p);
/* Whether a decoded segment is the len bytes at p. */
int segment_is(const char *seg, const char *p, size_t len);

/* 0 when a change may be made with the X-Trialq-Token sent (NULL: none), else the
 * status that refuses it (401 none, 403 wrong); always 0 on a loopback-only api. */
int token_status(const struct api *a, const char *sent);

/* Whether the api listens where other hosts can reach it (bind_address, set by
 * nnictl create --bind or nniManagerIp). */
int listens_beyond_loopback(const struct api *a);

/* ---- replies ---- */
void reply_json(struct evhttp_request *r, int code, const char *body);
void reply_cjson(struct evhttp_request *r, cJSON *j); /* 200; takes ownership */
void reply_error(struct evhttp_request *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The JSON of an error reply, {"error": "<message>"} (free it). */
char *error_body(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/* The API's common headers (JSON content type, NNI's CORS headers). */
void add_api_headers(struct evhttp_request *r, const char *content_type);

/* ---- request parsing: each fills an error reply itself and returns -1 ---- */
const char *query_str(struct req *q, const char *name);
/* An integer query parameter in [min, max]; *out keeps its value when absent. */
int query_int(struct req *q, const char *name, int64_t min, int64_t max, int64_t *out);
/* The body as JSON (NULL with a 400 naming the problem already sent). */
cJSON *body_json(struct req *q);
/* A JSON number that is an integer in [min, max] (no float-to-int overflow). */
int json_int_in(const cJSON *v, int64_t min, int64_t max, int64_t *out);

/* ---- the experiment ---- */
/* The experiment as it is now, for a reply: the scheduler changes the row between its
 * ticks, and clients poll check-status to see exactly that. A view (nnictl view)
 * answers VIEWED and leaves the stored status alone. 0, or -1 with a 500 sent. */
int req_experiment(struct req *q, struct experiment *x);

#endif
