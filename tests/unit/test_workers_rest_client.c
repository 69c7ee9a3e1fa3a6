/* rest_client (workers/rest_client.c): one handle serves calls of every method in turn,
 * its lasting options set once; each call must still go out exactly as asked, with
 * nothing of the call before it: a GET or DELETE without a body after a POST has no
 * body and no Content-Length, a change goes on a fresh connection that is not kept
 * (unless reuse_always), GETs share a kept one, and a changed option of the client
 * (the timeout) takes effect on the next call. A forked loopback server writes down
 * every request it reads. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "workers/rest_client.h"

#define MAX_CONNS 16

struct sconn {
    int fd, id;
    char buf[8192];
    size_t len;
};

/* One complete request in c->buf: its line written to out, the answer sent (a slow one
 * for a path under /slow). 0 when more must be read first. */
static int serve_one(struct sconn *c, FILE *out)
{
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (!end)
        return 0;
    size_t head = (size_t)(end - c->buf) + 4;
    long cl = -1;
    for (char *h = strstr(c->buf, "\r\n"); h && h < end; h = strstr(h + 2, "\r\n"))
        if (strncasecmp(h + 2, "Content-Length:", 15) == 0)
            cl = atol(h + 17);
    if (c->len < head + (size_t)(cl > 0 ? cl : 0))
        return 0;
    char method[16] = "", path[256] = "";
    if (sscanf(c->buf, "%15s %255s", method, path) != 2)
        _exit(3);
    fprintf(out, "conn=%d %s %s cl=%ld body=%.*s\n", c->id, method, path, cl, (int)(cl > 0 ? cl : 0), c->buf + head);
    fflush(out);
    if (strncmp(path, "/slow", 5) == 0)
        usleep(400 * 1000);
    static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    if (write(c->fd, ok, sizeof ok - 1) < 0)
        _exit(4);
    size_t used = head + (size_t)(cl > 0 ? cl : 0);
    memmove(c->buf, c->buf + used, c->len - used);
    c->len -= used;
    return 1;
}

static void server(int lfd, FILE *out)
{
    struct sconn conns[MAX_CONNS];
    int n = 0, next_id = 1;
    for (;;) {
        struct pollfd p[MAX_CONNS + 1];
        p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
        for (int i = 0; i < n; i++)
            p[i + 1] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
        if (poll(p, (nfds_t)n + 1, -1) < 0)
            _exit(5);
        for (int i = n - 1; i >= 0; i--) {
            if (!p[i + 1].revents)
                continue;
            struct sconn *c = &conns[i];
            ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
            if (r <= 0) {
                close(c->fd);
                conns[i] = conns[--n];
                continue;
            }
            c->len += (size_t)r;
            while (serve_one(c, out)) {
            }
        }
        if ((p[0].revents & POLLIN) && n < MAX_CONNS) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0)
                conns[n++] = (struct sconn){.fd = fd, .id = next_id++};
        }
    }
}

struct fixture {
    pid_t pid;
    FILE *log;
    int port;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(lfd, 16), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
    f->port = ntohs(a.sin_port);
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    f->pid = fork();
    assert_true(f->pid >= 0);
    if (f->pid == 0) {
        close(pfd[0]);
        server(lfd, fdopen(pfd[1], "w"));
    }
    close(pfd[1]);
    close(lfd);
    f->log = fdopen(pfd[0], "r");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    kill(f->pid, SIGKILL);
    waitpid(f->pid, NULL, 0);
    fclose(f->log);
    free(f);
    return 0;
}

/* One call on r; the line the server wrote for it, its connection's id apart. */
static int call(struct fixture *f, struct rest_client *r, const char *method, const char *path, const char *body,
                char *line, size_t size)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", f->port, path);
    static const char *const headers[] = {"Content-Type: application/json", NULL};
    long status = 0;
    char *resp = NULL;
    struct errbuf e;
    int rc = rest_call(r, method, url, path, headers, body, &status, &resp, &e);
    if (rc != 0)
        fail_msg("%s %s: %s", method, path, e.msg);
    assert_int_equal(status, 200);
    assert_string_equal(resp, "ok");
    free(resp);
    char raw[512];
    assert_non_null(fgets(raw, sizeof raw, f->log));
    raw[strcspn(raw, "\n")] = '\0';
    int conn = 0, skip = 0;
    assert_int_equal(sscanf(raw, "conn=%d %n", &conn, &skip), 1);
    snprintf(line, size, "%s", raw + skip);
    return conn;
}

/* The calls in turn on one client: each request as the server read it, and the
 * connection it came on: that of an earlier step, or one of its own (-1). */
static const struct step {
    const char *method, *path, *body, *want;
    int reuse_always, conn_of;
} steps[] = {
    {"POST", "/jobs", "{\"a\":1}", "POST /jobs cl=7 body={\"a\":1}", 0, -1},
    {"GET", "/jobs/1", NULL, "GET /jobs/1 cl=-1 body=", 0, -1},   /* the POST's connection was not kept */
    {"GET", "/jobs/2", NULL, "GET /jobs/2 cl=-1 body=", 0, 1},    /* GETs share the kept connection */
    {"DELETE", "/jobs/1", NULL, "DELETE /jobs/1 cl=-1 body=", 0, -1}, /* a change: a fresh connection */
    {"PUT", "/jobs/2", "{}", "PUT /jobs/2 cl=2 body={}", 0, -1},
    {"GET", "/jobs", NULL, "GET /jobs cl=-1 body=", 0, 1},
    /* reuse_always: a change may go on the kept connection too */
    {"POST", "/jobs", "{\"b\":2}", "POST /jobs cl=7 body={\"b\":2}", 1, 1},
    {"GET", "/jobs", NULL, "GET /jobs cl=-1 body=", 1, 1},
};

static void test_calls_in_turn(void **state)
{
    struct fixture *f = *state;
    struct rest_client r = {.curl = curl_easy_init(), .timeout_ms = 5000};
    char line[512];
    int conn[sizeof steps / sizeof steps[0]];
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        const struct step *s = &steps[i];
        r.reuse_always = s->reuse_always;
        conn[i] = call(f, &r, s->method, s->path, s->body, line, sizeof line);
        assert_string_equal(line, s->want);
        if (s->conn_of >= 0)
            assert_int_equal(conn[i], conn[s->conn_of]);
        for (size_t j = 0; s->conn_of < 0 && j < i; j++)
            assert_int_not_equal(conn[i], conn[j]);
    }

    /* a shorter timeout set on the client holds from the next call on */
    r.timeout_ms = 150;
    long status = 0;
    char *resp = NULL;
    struct errbuf e;
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/slow", f->port);
    assert_int_equal(rest_call(&r, "GET", url, "/slow", NULL, NULL, &status, &resp, &e), -1);
    assert_non_null(strstr(e.msg, "GET /slow: "));
    assert_non_null(fgets(line, sizeof line, f->log)); /* the server read it */
    curl_easy_cleanup(r.curl);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_calls_in_turn, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
