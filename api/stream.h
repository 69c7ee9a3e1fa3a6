/* stream.h: long listings sent in pieces (api/stream.c). */
#ifndef TRIALQ_STREAM_H
#define TRIALQ_STREAM_H

#include "api/http_util.h"

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

#endif
