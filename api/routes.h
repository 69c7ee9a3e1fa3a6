/* routes.h: what the REST handlers (api/routes_*.c) share: the request, replies,
 * query and body parsing, and chunked streaming of long listings. The route table
 * itself is in routes.c. */
#ifndef TRIALQ_ROUTES_H
#define TRIALQ_ROUTES_H

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

/* What a request may bring, known from its method and target alone (api/guard.c asks
 * before its body is read): the route's body limit, and whether it needs the token. */
struct head_policy {
    int64_t max_body;
    int needs_token;
};
void routes_head_policy(const struct api *a, enum evhttp_cmd_type m, const char *target, struct head_policy *out);
/* 0 when a change may be made with the X-Trialq-Token sent (NULL: none), else the
 * status that refuses it (401 none, 403 wrong); always 0 on a loopback-only api. */
int routes_token_status(const struct api *a, const char *sent);

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

/* ---- streaming ----
 * A listing is produced in pieces by fill(), which appends JSON to sb (at least one
 * element or the end) and returns 1 while more follows, 0 at the end, -1 on an error
 * (message in e). The first piece decides: a listing that ends there goes out as one
 * reply with a Content-Length; a longer one as a chunked reply, each next piece made
 * when the previous one has been written to the socket, so memory stays bounded by
 * one piece whatever the size. A client that goes away ends it. */
struct stream;
typedef int (*stream_fill_fn)(struct stream *s, struct strbuf *sb, struct errbuf *e);
struct stream {
    struct api *a;
    struct evhttp_request *r;
    struct evhttp_connection *conn;
    stream_fill_fn fill;
    void (*done)(struct stream *s); /* frees state */
    void *state;
    struct page page;               /* for the history listings */
    struct experiment x;            /* snapshot for rendering trials */
    int opened;                     /* the "[" was written */
    int raw;                        /* fill writes the whole body: no "[" and "]" around it */
    int paced;                      /* each piece after a poll of the sockets (routes_stream.c) */
    struct event *pace;
    char *kept[4];                  /* copies of request strings the page points to */
    int nkept;
};
#define STREAM_PIECE (256 << 10)
/* A stream for the request, with x loaded (a 500 is sent and NULL returned when not). */
struct stream *stream_new(struct req *q);
/* A copy of str that lives as long as the stream (request strings do not). */
const char *stream_keep(struct stream *s, const char *str);
/* Frees a stream that was not started. */
void stream_drop(struct stream *s);
/* Sends the listing; takes ownership of s. seq >= 0 adds the X-Trialq-Seq header. */
void stream_start(struct stream *s, int64_t seq);
/* A history listing (GET /trial-jobs, /metric-data): a stream whose page has the
 * request's limit, offset and since (NULL with a 4xx/500 sent). The caller sets the
 * rest of the page, then stream_page_start reads the cursor with cursor_fn and sends. */
struct stream *stream_paged(struct req *q);
void stream_page_start(struct req *q, struct stream *s,
                       int (*cursor_fn)(struct db *, struct page *, int64_t *, struct errbuf *), stream_fill_fn fill);

/* ---- handlers ---- */
/* routes_experiment.c */
void h_version(struct req *q);
void h_check_status(struct req *q);
void h_experiment_get(struct req *q);
void h_experiment_put(struct req *q);
void h_experiment_delete(struct req *q);
void h_experiment_post(struct req *q);
void h_cluster_metadata(struct req *q);
void h_import_data(struct req *q);
void h_imported_data(struct req *q);
void h_experiment_metadata(struct req *q);
void h_experiments_info(struct req *q);
void h_export_data(struct req *q);
/* routes_trials.c */
void h_trial_jobs(struct req *q);
void h_trial_job_get(struct req *q);
void h_trial_job_post(struct req *q);
void h_trial_job_delete(struct req *q);
void h_trial_job_rerun(struct req *q);
void h_job_statistics(struct req *q);
void h_machines(struct req *q);
/* tensorboard.c */
void h_tensorboard_start(struct req *q);
void h_tensorboard_task(struct req *q);
void h_tensorboard_tasks(struct req *q);
/* routes_metrics.c */
void h_metric_data(struct req *q);
void h_metric_data_trial(struct req *q);
void h_metric_data_range(struct req *q);
void h_metric_data_latest(struct req *q);
/* routes_files.c */
void h_trial_file(struct req *q);
/* 0 when trial-file may look for NAME (a route argument, decoded once) in a trial's
 * directory; 400 when it is not a relative path of non-empty components other than "."
 * and ".."; 403 when a component starts with '.' (.nni/ and other hidden files), also
 * in the name decoded again (%252E...) or when further decoding gives a NUL. */
int trial_file_name_status(const char *name);
void h_log_file(struct req *q);

#endif
