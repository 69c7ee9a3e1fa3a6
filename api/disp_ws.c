/* disp_ws.c: the dispatcher's WebSocket channel (NNI >= 3.0). The process connects to
 * the api's own port at /tuner (NNI_TUNER_COMMAND_CHANNEL); libevent 2.1 has no
 * WebSocket server, so the upgrade is answered here and the connection's bufferevent is
 * taken over from evhttp. Frames follow RFC 6455 (api/websocket.c): masked from the
 * client, fragments joined, pings answered; each message is {"type","content"}. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>

#include "api/disp.h"
#include "api/dispatcher.h"
#include "api/guard.h"

#define WS_HEADER_MAX 14

void disp_ws_send(struct dispatcher *d, int opcode, const void *payload, size_t n)
{
    if (!d->ws)
        return;
    struct strbuf sb;
    sb_init(&sb);
    ws_frame_encode(&sb, opcode, payload, n, NULL);
    bufferevent_write(d->ws, sb.buf, sb.len);
    sb_free(&sb);
}

static void ws_message(struct dispatcher *d, const char *text, size_t n)
{
    char *type = NULL, *content = NULL;
    struct errbuf e;
    if (disp_ws_decode(text, n, &type, &content, &e) < 0) {
        disp_fail(d, "%s", e.msg);
        return;
    }
    disp_command(d, type, content);
    free(type);
    free(content);
}

/* One event of the reader: a message, or a control frame. */
static void ws_event(struct dispatcher *d, struct bufferevent *bev, const struct ws_event *ev)
{
    switch (ev->opcode) {
    case WS_TEXT:
        ws_message(d, (const char *)ev->data, ev->len);
        break;
    case WS_PING:
        disp_ws_send(d, WS_PONG, ev->data, ev->len);
        break;
    case WS_CLOSE:
        /* echo the close; the process is expected to go away */
        disp_ws_send(d, WS_CLOSE, ev->data, ev->len >= 2 ? 2 : 0);
        if (!d->gone_since_ms)
            d->gone_since_ms = mono_ms();
        bufferevent_disable(bev, EV_READ);
        break;
    default:
        break; /* a pong, a fragment joined */
    }
}

static void on_ws_read(struct bufferevent *bev, void *arg)
{
    struct dispatcher *d = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    while (d->ws && d->state != D_FAILED) {
        size_t n = evbuffer_get_length(in);
        if (n < 2)
            return;
        /* the header first, then the whole frame */
        size_t look = n < WS_HEADER_MAX ? n : WS_HEADER_MAX, frame_len = 0;
        struct ws_event ev;
        struct errbuf e;
        int rc = ws_reader_next(&d->ws_in, evbuffer_pullup(in, (ev_ssize_t)look), look, &frame_len, &ev, &e);
        if (rc == 0 && frame_len && frame_len <= n)
            rc = ws_reader_next(&d->ws_in, evbuffer_pullup(in, (ev_ssize_t)frame_len), frame_len, &frame_len, &ev,
                                &e);
        if (rc < 0) {
            disp_fail(d, "tuner WebSocket: %s", e.msg);
            return;
        }
        if (rc == 0)
            return; /* incomplete */
        evbuffer_drain(in, frame_len);
        ws_event(d, bev, &ev);
        free(ev.data);
    }
}

static int header_has_token(const char *value, const char *token)
{
    if (!value)
        return 0;
    size_t n = strlen(token);
    for (const char *p = value; *p;) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        const char *end = p;
        while (*end && *end != ',')
            end++;
        size_t len = (size_t)(end - p);
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == n && strncasecmp(p, token, n) == 0)
            return 1;
        p = end;
    }
    return 0;
}

static void ws_reply_error(struct evhttp_request *r, int code, const char *msg)
{
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "{\"error\":\"%s\"}", msg);
    evhttp_add_header(evhttp_request_get_output_headers(r), "Content-Type", "application/json");
    evhttp_send_reply(r, code, NULL, b);
    evbuffer_free(b);
}

/* The upgrade request is the tuner's, from this host: 0, or -1 with the refusal sent. */
static int upgrade_refused(struct dispatcher *d, struct evhttp_request *r, const char **peer, ev_uint16_t *port)
{
    struct evkeyvalq *h = evhttp_request_get_input_headers(r);
    const char *key = evhttp_find_header(h, "Sec-WebSocket-Key");
    const char *version = evhttp_find_header(h, "Sec-WebSocket-Version");
    if (evhttp_request_get_command(r) != EVHTTP_REQ_GET || !header_has_token(evhttp_find_header(h, "Upgrade"), "websocket") ||
        !header_has_token(evhttp_find_header(h, "Connection"), "upgrade") || !key || strlen(key) != 24) {
        ws_reply_error(r, 400, "/tuner is the tuner's WebSocket channel: a GET with Upgrade: websocket,"
                               " Connection: Upgrade and a Sec-WebSocket-Key");
        return -1;
    }
    if (!version || strcmp(version, "13") != 0) {
        evhttp_add_header(evhttp_request_get_output_headers(r), "Sec-WebSocket-Version", "13");
        ws_reply_error(r, 426, "Sec-WebSocket-Version must be 13");
        return -1;
    }
    struct evhttp_connection *conn = evhttp_request_get_connection(r);
    char *addr = NULL;
    if (conn)
        evhttp_connection_get_peer(conn, &addr, port);
    *peer = addr;
    if (!addr || !(str_starts(addr, "127.") || strcmp(addr, "::1") == 0 || str_starts(addr, "::ffff:127."))) {
        ws_reply_error(r, 403, "the tuner channel accepts connections from this host only");
        return -1;
    }
    /* WebSockets are not under CORS: a page in a local browser could otherwise take the
     * tuner's place. Browsers always send Origin here, the dispatcher does not. */
    if (evhttp_find_header(h, "Origin")) {
        ws_reply_error(r, 403, "the tuner channel is not for browsers (the request carries an Origin)");
        return -1;
    }
    if (!d || !d->use_ws || d->state != D_CONNECTING || d->ws) {
        ws_reply_error(r, 409, "no tuner connection is expected now");
        return -1;
    }
    return 0;
}

void dispatcher_ws_request(struct api *a, struct evhttp_request *r)
{
    struct dispatcher *d = a->disp;
    const char *peer = NULL;
    ev_uint16_t port = 0;
    if (upgrade_refused(d, r, &peer, &port) < 0)
        return;
    struct evhttp_connection *conn = evhttp_request_get_connection(r);
    struct bufferevent *bev = evhttp_connection_get_bufferevent(conn);
    if (!bev) {
        ws_reply_error(r, 500, "connection has no buffer");
        return;
    }
    /* From here the connection is ours: evhttp never sees another byte of it (its
     * callbacks are replaced) and the request stays unanswered until the connection is
     * freed with evhttp_connection_free (dispatcher_shutdown, disp_channel_close). */
    char accept[29];
    ws_accept_key(evhttp_find_header(evhttp_request_get_input_headers(r), "Sec-WebSocket-Key"), accept);
    guard_passthrough(a->guard, bev); /* WebSocket frames from here, not HTTP */
    bufferevent_setcb(bev, on_ws_read, NULL, disp_channel_event, d);
    bufferevent_set_timeouts(bev, NULL, NULL);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    struct evbuffer *out = bufferevent_get_output(bev);
    evbuffer_add_printf(out, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
    d->ws_conn = conn;
    d->ws = bev;
    d->last_ping_ms = mono_ms();
    log_info("dispatcher connected over WebSocket from %s:%u", peer, (unsigned)port);
    disp_hello(d);
    if (evbuffer_get_length(bufferevent_get_input(bev)))
        on_ws_read(bev, d);
}
