/* routes_stream.c: long listings as chunked replies made piece by piece, each piece
 * when the previous one has left for the socket (libevent's write callback): the api's
 * memory stays bounded by one piece however long the history, and a slow client only
 * slows its own reply. See routes.h for the contract of fill(). */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "api/stream.h"

struct stream *stream_new(struct req *q)
{
    struct stream *s = xcalloc(1, sizeof *s);
    s->a = q->a;
    s->r = q->r;
    /* its own copy: a tick may reload a->exp while the stream runs */
    struct errbuf e;
    if (exp_load(q->a->db, q->a->exp_id, &s->x, &e) <= 0) {
        reply_error(q->r, 500, "experiment %s: cannot load it", q->a->exp_id);
        free(s);
        return NULL;
    }
    page_init(&s->page, s->a->exp_id);
    return s;
}

const char *stream_keep(struct stream *s, const char *str)
{
    if (!str)
        return NULL;
    if (s->nkept == (int)(sizeof s->kept / sizeof s->kept[0]))
        abort(); /* a handler keeps more strings than the table holds: a bug */
    s->kept[s->nkept] = xstrdup(str);
    return s->kept[s->nkept++];
}

void stream_drop(struct stream *s)
{
    if (s->pace)
        event_free(s->pace);
    if (s->done)
        s->done(s);
    exp_clear(&s->x);
    for (int i = 0; i < s->nkept; i++)
        free(s->kept[i]);
    free(s);
}

/* The next piece: "[" first, "]" last (unless raw). Returns 1 more follows, 0 ended, -1 error. */
static int next_piece(struct stream *s, struct strbuf *sb, struct errbuf *e)
{
    if (!s->opened) {
        if (!s->raw)
            sb_add(sb, "[", 1);
        s->opened = 1;
    }
    for (;;) {
        size_t before = sb->len;
        int rc = s->fill(s, sb, e);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            if (!s->raw)
                sb_add(sb, "]", 1);
            return 0;
        }
        if (sb->len > before) /* a chunk must not be empty: libevent would not call back */
            return 1;
    }
}

static void free_piece(const void *data, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    free((void *)data);
}

static void on_written(struct evhttp_connection *conn, void *arg);

/* Hands the piece to libevent without copying it. */
static void send_piece(struct stream *s, struct strbuf *sb, int more)
{
    struct evbuffer *b = evbuffer_new();
    size_t len = sb->len;
    char *data = sb_detach(sb);
    evbuffer_add_reference(b, data, len, free_piece, NULL);
    if (more)
        evhttp_send_reply_chunk_with_cb(s->r, b, on_written, s);
    else
        evhttp_send_reply_chunk(s->r, b);
    evbuffer_free(b);
}

static void finish(struct stream *s)
{
    evhttp_connection_set_closecb(s->conn, NULL, NULL);
    evhttp_send_reply_end(s->r);
    stream_drop(s);
}

static void write_next(struct stream *s)
{
    struct strbuf sb;
    sb_init(&sb);
    struct errbuf e;
    int rc = next_piece(s, &sb, &e);
    if (rc < 0) {
        /* the status line is gone: end the reply short, so that the client's JSON
         * parser fails instead of taking a partial list for a whole one */
        log_error("listing %s broken off: %s", evhttp_request_get_uri(s->r), e.msg);
        sb_free(&sb);
        finish(s);
        return;
    }
    send_piece(s, &sb, rc == 1);
    if (rc == 0)
        finish(s);
}

static void on_pace(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    write_next(arg);
}

/* The previous piece has left. A paced stream makes its next piece after a turn of
 * the event loop that polls the sockets (a timer): its pieces cost time to make, and
 * the other connections are served in between. */
static void on_written(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    struct stream *s = arg;
    if (!s->paced) {
        write_next(s);
        return;
    }
    if (!s->pace)
        s->pace = evtimer_new(s->a->base, on_pace, s);
    struct timeval tv = {0, 1};
    evtimer_add(s->pace, &tv);
}

/* The connection went away mid-listing. libevent has detached the request from it
 * (then ending the reply frees it) unless the whole server is being freed (then it
 * frees the request itself). */
static void on_close(struct evhttp_connection *conn, void *arg)
{
    (void)conn;
    struct stream *s = arg;
    log_debug("listing %s: the client went away", evhttp_request_get_uri(s->r));
    if (!evhttp_request_get_connection(s->r))
        evhttp_send_reply_end(s->r);
    stream_drop(s);
}

void stream_start(struct stream *s, int64_t seq)
{
    struct strbuf sb;
    sb_init(&sb);
    struct errbuf e;
    int rc = next_piece(s, &sb, &e);
    if (rc < 0) {
        reply_error(s->r, 500, "%s", e.msg);
        sb_free(&sb);
        stream_drop(s);
        return;
    }
    add_api_headers(s->r, "application/json");
    if (seq >= 0) {
        char v[24];
        snprintf(v, sizeof v, "%lld", (long long)seq);
        struct evkeyvalq *h = evhttp_request_get_output_headers(s->r);
        evhttp_add_header(h, "X-Trialq-Seq", v);
        evhttp_add_header(h, "Access-Control-Expose-Headers", "X-Trialq-Seq");
    }
    if (rc == 0) { /* it all fits in one piece: a plain reply with a length */
        struct evbuffer *b = evbuffer_new();
        evbuffer_add(b, sb.buf, sb.len);
        evhttp_send_reply(s->r, 200, "OK", b);
        evbuffer_free(b);
        sb_free(&sb);
        stream_drop(s);
        return;
    }
    evhttp_send_reply_start(s->r, 200, "OK");
    s->conn = evhttp_request_get_connection(s->r);
    evhttp_connection_set_closecb(s->conn, on_close, s);
    send_piece(s, &sb, 1);
}

struct stream *stream_paged(struct req *q)
{
    int64_t limit = -1, offset = 0, since = -1;
    if (query_int(q, "limit", 0, 1000000000, &limit) < 0 || query_int(q, "offset", 0, INT64_MAX / 4, &offset) < 0 ||
        query_int(q, "since", 0, INT64_MAX / 4, &since) < 0)
        return NULL;
    struct stream *s = stream_new(q);
    if (!s)
        return NULL;
    s->page.limit = limit;
    s->page.offset = offset;
    s->page.incremental = since >= 0;
    s->page.since = since;
    return s;
}

void stream_page_start(struct req *q, struct stream *s,
                       int (*cursor_fn)(struct db *, struct page *, int64_t *, struct errbuf *), stream_fill_fn fill)
{
    struct errbuf e;
    int64_t cursor;
    if (cursor_fn(q->a->db, &s->page, &cursor, &e) < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        stream_drop(s);
        return;
    }
    s->page.upto = cursor;
    s->fill = fill;
    stream_start(s, cursor);
}
