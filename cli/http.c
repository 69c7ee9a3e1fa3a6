/* http.c: nnictl's HTTP client for an experiment's api (on its bind address, port and
 * URL prefix, with its token), on this host. HTTP/1.1 with
 * "Connection: close", Content-Length or chunked replies, and a deadline on every
 * step, so that no command ever hangs. (No libcurl: nnictl and the api then start
 * without loading it and its dozens of dependencies.) */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/cli.h"

#define CONNECT_TIMEOUT_MS 2000
#define TOTAL_TIMEOUT_MS 10000
#define MAX_REPLY (256 << 20)

static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - mono_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, (int)left);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* The address nnictl connects to for an api bound to bind: a wildcard bind is reached
 * on loopback, any other address as it is. */
static const char *connect_host(const char *bind)
{
    if (!bind || !*bind || strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "localhost") == 0)
        return "127.0.0.1";
    if (strcmp(bind, "::") == 0)
        return "::1";
    return bind;
}

static int connect_to(const char *host, int port, int64_t deadline)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    if (getaddrinfo(host, portstr, &hints, &ai) != 0 || !ai)
        return -1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        int err = 0;
        socklen_t len = sizeof err;
        int64_t cdeadline = mono_ms() + CONNECT_TIMEOUT_MS;
        if (errno != EINPROGRESS || wait_fd(fd, POLLOUT, cdeadline < deadline ? cdeadline : deadline) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    return fd;
}

/* Decodes a chunked body in place; returns its length or -1. */
static long dechunk(char *p, size_t n)
{
    char *out = p, *end = p + n;
    for (;;) {
        char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        if (!eol)
            return -1;
        unsigned long sz = strtoul(p, NULL, 16);
        p = eol + 2;
        if (sz == 0)
            return out - (end - n);
        if ((size_t)(end - p) < sz + 2)
            return -1;
        memmove(out, p, sz);
        out += sz;
        p += sz + 2;
    }
}

int cli_http(const struct experiment *x, const char *method, const char *path, const char *req_body, char **body)
{
    if (body)
        *body = NULL;
    int64_t deadline = mono_ms() + TOTAL_TIMEOUT_MS;
    const char *host = connect_host(x->bind_address);
    int fd = connect_to(host, x->port, deadline);
    if (fd < 0)
        return -1;
    struct strbuf req;
    sb_init(&req);
    size_t blen = req_body ? strlen(req_body) : 0;
    int v6 = strchr(host, ':') != NULL;
    sb_printf(&req, "%s %s/api/v1/nni%s HTTP/1.1\r\nHost: %s%s%s:%d\r\nConnection: close\r\n"
                    "Accept: application/json\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n",
              method, x->url_prefix ? x->url_prefix : "", path, v6 ? "[" : "", host, v6 ? "]" : "", x->port, blen);
    /* the api needs it for changes when it listens beyond loopback (api/routes.c) */
    if (x->token && *x->token)
        sb_printf(&req, "X-Trialq-Token: %s\r\n", x->token);
    sb_puts(&req, "\r\n");
    if (blen)
        sb_add(&req, req_body, blen);
    size_t off = 0;
    int code = -1;
    while (off < req.len) {
        if (wait_fd(fd, POLLOUT, deadline) < 0)
            goto out;
        ssize_t w = send(fd, req.buf + off, req.len - off, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            goto out;
        if (w > 0)
            off += (size_t)w;
    }
    struct strbuf rep;
    sb_init(&rep);
    char buf[65536];
    for (;;) {
        if (wait_fd(fd, POLLIN, deadline) < 0)
            break;
        ssize_t r = recv(fd, buf, sizeof buf, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (r <= 0)
            break;
        sb_add(&rep, buf, (size_t)r);
        if (rep.len > MAX_REPLY)
            break;
    }
    char *hdr_end = rep.buf ? strstr(rep.buf, "\r\n\r\n") : NULL;
    if (hdr_end && sscanf(rep.buf, "HTTP/1.%*d %d", &code) == 1) {
        char *b = hdr_end + 4;
        size_t n = rep.len - (size_t)(b - rep.buf);
        *hdr_end = '\0';
        int chunked = strcasestr(rep.buf, "\r\ntransfer-encoding: chunked") != NULL;
        if (chunked) {
            long m = dechunk(b, n);
            n = m < 0 ? 0 : (size_t)m;
        }
        if (body)
            *body = xstrndup(b, n);
    }
    sb_free(&rep);
out:
    sb_free(&req);
    close(fd);
    return code;
}
