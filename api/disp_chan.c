/* disp_chan.c: the channel to the dispatcher process. Commands go over the WebSocket
 * of NNI >= 3.0 (disp_ws.c) or the legacy pipes (tunerCommandChannel: pipe): the
 * process reads fd 3 and writes fd 4, each command 2 letters + 14 digits + payload
 * (api/websocket.c has both wire formats). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "api/disp.h"

void disp_send(struct dispatcher *d, const char *type, const char *content)
{
    if (d->state == D_FAILED || d->state == D_CLOSED)
        return;
    struct bufferevent *out = d->use_ws ? d->ws : d->to;
    if (!out)
        return;
    struct strbuf sb;
    sb_init(&sb);
    disp_encode(&sb, d->use_ws, type, content);
    bufferevent_write(out, sb.buf, sb.len);
    sb_free(&sb);
    log_debug("dispatcher <- %s (%zu bytes)", type, content ? strlen(content) : 0);
}

static void on_pipe_read(struct bufferevent *bev, void *arg)
{
    struct dispatcher *d = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        if (!d->from || d->state == D_FAILED)
            return; /* a command failed the dispatcher and closed the channel */
        size_t n = evbuffer_get_length(in);
        if (n < 16)
            return;
        char *p = (char *)evbuffer_pullup(in, 16);
        char type[3];
        size_t off, len;
        struct errbuf e;
        int rc = pipe_frame_parse(p, n, DISP_MAX_MESSAGE, type, &off, &len, &e);
        if (rc < 0) {
            disp_fail(d, "tuner command channel (fd 4): %s", e.msg);
            return;
        }
        if (n < off + len)
            return;
        p = (char *)evbuffer_pullup(in, (ev_ssize_t)(off + len));
        char *content = xstrndup(p + off, len);
        evbuffer_drain(in, off + len);
        disp_command(d, type, content);
        free(content);
    }
}

void disp_channel_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    struct dispatcher *d = arg;
    if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) && !d->gone_since_ms)
        d->gone_since_ms = mono_ms();
}

void disp_pipes_open(struct dispatcher *d, int to_fd, int from_fd)
{
    evutil_make_socket_nonblocking(to_fd);
    evutil_make_socket_nonblocking(from_fd);
    d->to = bufferevent_socket_new(d->a->base, to_fd, BEV_OPT_CLOSE_ON_FREE);
    d->from = bufferevent_socket_new(d->a->base, from_fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(d->to, NULL, NULL, disp_channel_event, d);
    bufferevent_setcb(d->from, on_pipe_read, NULL, disp_channel_event, d);
    bufferevent_enable(d->to, EV_WRITE);
    bufferevent_enable(d->from, EV_READ);
}

void disp_channel_flush(struct dispatcher *d, int64_t deadline_ms)
{
    struct bufferevent *bev = d->use_ws ? d->ws : d->to;
    if (!bev)
        return;
    struct evbuffer *out = bufferevent_get_output(bev);
    evutil_socket_t fd = bufferevent_getfd(bev);
    /* a socket bufferevent freezes the front of its output (only it may write it);
     * it will not write any more: we do */
    evbuffer_unfreeze(out, 1);
    while (fd >= 0 && evbuffer_get_length(out) && mono_ms() < deadline_ms) {
        int n = evbuffer_write(out, fd);
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            break;
        if (n <= 0)
            usleep(10000);
    }
}

void disp_channel_close(struct dispatcher *d)
{
    if (d->to) {
        bufferevent_free(d->to);
        d->to = NULL;
    }
    if (d->from) {
        bufferevent_free(d->from);
        d->from = NULL;
    }
    if (d->ws_conn) {
        /* frees the bufferevent too; the unanswered upgrade request goes with it */
        bufferevent_disable(d->ws, EV_READ | EV_WRITE);
        evhttp_connection_free(d->ws_conn);
        d->ws_conn = NULL;
        d->ws = NULL;
    }
}
