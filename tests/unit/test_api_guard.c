/* test_api_guard.c: the api's front door (api/guard.c) on a real socket, in front of a
 * real evhttp that answers every request it is handed with 200 and the size of the
 * body it got: what the guard must refuse before evhttp reads it (a body on GET, a
 * chunked body, a body over its route's limit or over the budget of all bodies, a
 * request not in within its deadline), what it must let through whole (pipelined
 * requests, each answered), and its limits from the environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "api/api.h"
#include "api/guard.h"

#define ROUTE_MAX_BODY 800
#define BUDGET 1000

static int g_port;
static pid_t g_server;

/* every route takes a body of at most ROUTE_MAX_BODY bytes, none needs the token */
static void policy(const struct api *a, enum evhttp_cmd_type m, const char *target, struct head_policy *out)
{
    (void)a, (void)m, (void)target;
    out->max_body = ROUTE_MAX_BODY;
    out->needs_token = 0;
}

static void answer(struct evhttp_request *r, void *arg)
{
    (void)arg;
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "got %zu", evbuffer_get_length(evhttp_request_get_input_buffer(r)));
    evhttp_send_reply(r, 200, "OK", b);
    evbuffer_free(b);
}

/* the api's front door as api/server.c sets it up, in a child process of its own */
static int start_server(void **state)
{
    (void)state;
    struct api a;
    memset(&a, 0, sizeof a);
    struct guard_limits lim = {.max_connections = 64, .body_budget = BUDGET, .request_timeout_ms = 3000};
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    g_server = fork();
    if (g_server < 0)
        return -1;
    if (g_server == 0) {
        close(fds[0]);
        a.base = event_base_new();
        a.http = evhttp_new(a.base);
        evhttp_set_gencb(a.http, answer, NULL);
        struct evhttp_bound_socket *l = evhttp_bind_socket_with_handle(a.http, "127.0.0.1", 0);
        if (!l)
            _exit(1);
        struct sockaddr_in sin;
        socklen_t sl = sizeof sin;
        getsockname(evhttp_bound_socket_get_fd(l), (struct sockaddr *)&sin, &sl);
        int port = ntohs(sin.sin_port);
        if (write(fds[1], &port, sizeof port) != sizeof port)
            _exit(1);
        close(fds[1]);
        a.guard = guard_new(&a, evhttp_bound_socket_get_listener(l), &lim, 1024, policy);
        event_base_dispatch(a.base);
        _exit(0);
    }
    close(fds[1]);
    ssize_t n = read(fds[0], &g_port, sizeof g_port);
    close(fds[0]);
    return n == sizeof g_port ? 0 : -1;
}

static int stop_server(void **state)
{
    (void)state;
    kill(g_server, SIGKILL);
    waitpid(g_server, NULL, 0);
    return 0;
}

static int connect_server(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void send_all(int fd, const char *s)
{
    size_t len = strlen(s);
    assert_int_equal(write(fd, s, len), (ssize_t)len);
}

/* what the server sends until it closes the connection (or 5 s pass) */
static char *read_all(int fd)
{
    static char buf[65536];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void test_body_on_get(void **state)
{
    (void)state;
    /* a GET declaring a body: refused, and the request behind it is not read as its body */
    int fd = connect_server();
    send_all(fd, "GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: 36\r\n\r\n"
                 "GET /b HTTP/1.1\r\nHost: x\r\n\r\nxxxxxxxx");
    char *out = read_all(fd);
    close(fd);
    assert_int_equal(strncmp(out, "HTTP/1.1 400", 12), 0);
    assert_null(strstr(out, "got "));
}

static void test_chunked(void **state)
{
    (void)state;
    int fd = connect_server();
    send_all(fd, "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n");
    char *out = read_all(fd);
    close(fd);
    assert_int_equal(strncmp(out, "HTTP/1.1 411", 12), 0);
}

static void test_over_route_limit(void **state)
{
    (void)state;
    int fd = connect_server();
    char req[256];
    snprintf(req, sizeof req, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", ROUTE_MAX_BODY + 1);
    send_all(fd, req);
    char *out = read_all(fd);
    close(fd);
    assert_int_equal(strncmp(out, "HTTP/1.1 413", 12), 0);
}

static void test_pipelined(void **state)
{
    (void)state;
    /* two requests in one write, the second with a body: two answers, in order */
    int fd = connect_server();
    send_all(fd, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                 "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
    char *out = read_all(fd);
    close(fd);
    assert_int_equal(count(out, "HTTP/1.1 200"), 2);
    char *first = strstr(out, "got 0"), *second = strstr(out, "got 5");
    assert_non_null(first);
    assert_non_null(second);
    assert_true(first < second);
}

static void test_budget(void **state)
{
    (void)state;
    /* two bodies of 600 bytes under way at once pass the budget of 1000: the second is
     * refused before its body is read; once the first is in, room is back */
    int a = connect_server(), b = connect_server();
    send_all(a, "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 600\r\nConnection: close\r\n\r\nabc");
    usleep(500 * 1000); /* a's head is in: its 600 bytes are reserved */
    send_all(b, "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 600\r\nConnection: close\r\n\r\n");
    char *out = read_all(b);
    close(b);
    assert_int_equal(strncmp(out, "HTTP/1.1 503", 12), 0);
    char body[600];
    memset(body, 'z', sizeof body);
    assert_int_equal(write(a, body, sizeof body - 3), (ssize_t)(sizeof body - 3));
    out = read_all(a);
    close(a);
    assert_int_equal(strncmp(out, "HTTP/1.1 200", 12), 0);
    assert_non_null(strstr(out, "got 600"));
}

static void test_deadline(void **state)
{
    (void)state;
    /* a head still coming after the deadline (3 s here), however it trickles: 408 */
    int fd = connect_server();
    send_all(fd, "GET /a HTTP/1.1\r\n");
    for (int i = 0; i < 16; i++) {
        usleep(250 * 1000);
        if (write(fd, "X-A: b\r\n", 8) != 8)
            break; /* the guard answered and closed */
    }
    char *out = read_all(fd);
    close(fd);
    assert_int_equal(strncmp(out, "HTTP/1.1 408", 12), 0);
}

static void test_limits_from_env(void **state)
{
    (void)state;
    struct guard_limits lim;
    char err[256];
    setenv("TRIALQ_API_REQUEST_TIMEOUT", "0", 1);
    assert_true(guard_limits_from_env(&lim, err, sizeof err) < 0);
    assert_non_null(strstr(err, "TRIALQ_API_REQUEST_TIMEOUT"));
    setenv("TRIALQ_API_REQUEST_TIMEOUT", "7", 1);
    assert_int_equal(guard_limits_from_env(&lim, err, sizeof err), 0);
    assert_int_equal(lim.request_timeout_ms, 7000);
    unsetenv("TRIALQ_API_REQUEST_TIMEOUT");
    setenv("TRIALQ_API_BODY_BUDGET", "lots", 1);
    assert_true(guard_limits_from_env(&lim, err, sizeof err) < 0);
    assert_non_null(strstr(err, "TRIALQ_API_BODY_BUDGET"));
    unsetenv("TRIALQ_API_BODY_BUDGET");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_body_on_get), cmocka_unit_test(test_chunked),  cmocka_unit_test(test_over_route_limit),
        cmocka_unit_test(test_pipelined),   cmocka_unit_test(test_budget),   cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_limits_from_env),
    };
    return cmocka_run_group_tests(tests, start_server, stop_server);
}
