/* trialchan (common/trialchan.c): the trial command channel's one implementation
 * answers the conformance cases of tests/chan/cases.txt (the same cases
 * tests/chan/conformance.py runs against the api, a trial's leader and the Python
 * relay), here through a server of its own kept in memory: one channel path, metrics
 * checked and counted, request_parameter answered with a fixed record; each request on
 * a socketpair of its own, a poll's 408 at its deadline. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/chantoken.h"
#include "common/common.h"
#include "common/http1.h"
#include "common/trialchan.h"

#define PATH "/env/0123abcd/TrIaL"
#define WRONG "/env/00000000/TrIaL"
#define TRIAL "TrIaL"
#define BUDGET (32 << 20)

/* ---------------- the server ---------------- */

struct server {
    struct tc_queue q;
    int64_t in_flight;
    int metrics;
};

struct conn {
    struct tc_conn t; /* first */
    struct server *s;
};

static struct server *server_of(struct tc_conn *c)
{
    return ((struct conn *)c)->s;
}

static int reserve(struct tc_conn *c, int64_t n, char *msg, size_t size)
{
    struct server *s = server_of(c);
    if (s->in_flight + n > BUDGET) {
        snprintf(msg, size, "over the budget");
        return -1;
    }
    s->in_flight += n;
    return 0;
}

static void release(struct tc_conn *c, int64_t n)
{
    server_of(c)->in_flight -= n;
}

static int head(struct tc_conn *c, const struct http1_head *h, char *msg, size_t size)
{
    (void)c;
    size_t n;
    const char *p = tc_path(h, &n);
    if (secret_equal(p, n, PATH))
        return 0;
    snprintf(msg, size, "not this channel");
    return 404;
}

static void on_put(struct tc_conn *c, const struct http1_head *h, const char *body)
{
    struct server *s = server_of(c);
    struct tc_cmd cmd;
    char msg[256];
    tc_command(body, (size_t)h->content_length, h->json_body, TRIAL, "test: ", &cmd);
    if (cmd.kind == TC_CMD_REFUSED) {
        tc_error(c, cmd.code, "%s", cmd.msg);
    } else if (cmd.kind == TC_CMD_METRIC) {
        int code = tc_metric_check(cmd.metric, cmd.metric_len, TRIAL, msg, sizeof msg);
        if (code == 200) {
            s->metrics++;
            tc_reply(c, 200, "");
        } else {
            tc_error(c, code, "%s", msg);
        }
    } else {
        if (cmd.kind == TC_CMD_PARAMETER)
            tc_queue_push(&s->q, tc_parameter_command("{\"parameter_id\":0,\"parameters\":{\"x\":1}}"));
        tc_reply(c, 200, "");
    }
    tc_cmd_free(&cmd);
}

static void on_request(struct tc_conn *c, const struct http1_head *h, const char *body)
{
    char msg[64];
    if (tc_method_refused(c, h))
        return;
    if (head(c, h, msg, sizeof msg))
        tc_error(c, 404, "%s", msg);
    else if (h->method == HTTP1_PUT)
        on_put(c, h, body);
    else
        tc_queue_poll(&server_of(c)->q, c, 0);
}

static void want_write(struct tc_conn *c)
{
    (void)c;
}

static const struct tc_ops ops = {
    .reserve = reserve, .release = release, .head = head, .request = on_request, .want_write = want_write,
};

/* ---------------- the cases ---------------- */

struct tcase {
    char name[80];
    struct strbuf req;
    int expect;
    int empty, error, closes;
    char json_type[32];
    int wait_min, wait_max;
    char header[64];
};

/* s with {path}, {wrongpath}, {trial}, {pad:N} and (raw) \r \n \\ filled in, into sb. */
static void fill(struct strbuf *sb, const char *s, int raw)
{
    while (*s) {
        char *end = NULL;
        long pad = strncmp(s, "{pad:", 5) == 0 ? strtol(s + 5, &end, 10) : 0;
        if (strncmp(s, "{path}", 6) == 0) {
            sb_puts(sb, PATH);
            s += 6;
        } else if (strncmp(s, "{wrongpath}", 11) == 0) {
            sb_puts(sb, WRONG);
            s += 11;
        } else if (strncmp(s, "{trial}", 7) == 0) {
            sb_puts(sb, TRIAL);
            s += 7;
        } else if (end && *end == '}') {
            for (long i = 0; i < pad; i++)
                sb_add(sb, "x", 1);
            s = end + 1;
        } else if (raw && s[0] == '\\' && s[1]) {
            sb_add(sb, s[1] == 'r' ? "\r" : s[1] == 'n' ? "\n" : s + 1, 1);
            s += 2;
        } else {
            sb_add(sb, s++, 1);
        }
    }
}

/* The request of "req METHOD PATH [TYPE]" and its body line (NULL: none). */
static void build_req(struct tcase *c, const char *req, const char *body)
{
    char method[16], path[128], ctype[64] = "";
    assert_true(sscanf(req, "%15s %127s %63s", method, path, ctype) >= 2);
    struct strbuf b;
    sb_init(&b);
    if (body)
        fill(&b, body, 0);
    sb_printf(&c->req, "%s ", method);
    fill(&c->req, path, 0);
    sb_puts(&c->req, " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    if (*ctype)
        sb_printf(&c->req, "Content-Type: %s\r\n", ctype);
    if (body)
        sb_printf(&c->req, "Content-Length: %zu\r\n", b.len);
    sb_puts(&c->req, "\r\n");
    if (body)
        sb_add(&c->req, b.buf ? b.buf : "", b.len);
    sb_free(&b);
}

/* One line of the file into the case being read. */
static void case_line(struct tcase *c, char *line, char **next)
{
    char *arg = strchr(line, ' ');
    arg = arg ? arg + 1 : line + strlen(line);
    if (strncmp(line, "req ", 4) == 0) {
        char *body = NULL;
        if (strncmp(arg, "PUT ", 4) == 0 || strncmp(arg, "POST ", 5) == 0) {
            body = *next;
            assert_non_null(body);
            assert_int_equal(strncmp(body, "body ", 5), 0);
            *next = strchr(body, '\n');
            if (*next)
                *(*next)++ = '\0';
            body += 5;
        }
        build_req(c, arg, body);
    } else if (strncmp(line, "raw ", 4) == 0) {
        fill(&c->req, arg, 1);
    } else if (strncmp(line, "expect ", 7) == 0) {
        c->expect = atoi(arg);
    } else if (strncmp(line, "expect.module ", 14) == 0) {
        c->expect = atoi(arg); /* a difference of this server (none today) */
    } else if (strncmp(line, "json-type ", 10) == 0) {
        snprintf(c->json_type, sizeof c->json_type, "%s", arg);
    } else if (strncmp(line, "waits ", 6) == 0) {
        assert_int_equal(sscanf(arg, "%d %d", &c->wait_min, &c->wait_max), 2);
    } else if (strncmp(line, "header ", 7) == 0) {
        snprintf(c->header, sizeof c->header, "%s", arg);
    } else {
        c->empty |= strcmp(line, "empty") == 0;
        c->error |= strcmp(line, "error") == 0;
        c->closes |= strcmp(line, "closes") == 0;
        assert_true(strcmp(line, "empty") == 0 || strcmp(line, "error") == 0 || strcmp(line, "closes") == 0 ||
                    strncmp(line, "expect.", 7) == 0);
    }
}

/* Every case of the file, *n of them. */
static struct tcase *load_cases(int *n)
{
    const char *data = getenv("TRIALQ_TEST_DATA");
    assert_non_null(data);
    char *path = xasprintf("%s/chan/cases.txt", data);
    size_t len;
    char *text = read_file(path, &len);
    assert_non_null(text);
    free(path);
    struct tcase *cases = NULL;
    *n = 0;
    for (char *line = text, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!*line || *line == '#')
            continue;
        if (strncmp(line, "case ", 5) == 0) {
            cases = xrealloc(cases, (size_t)(*n + 1) * sizeof *cases);
            memset(&cases[*n], 0, sizeof cases[*n]);
            snprintf(cases[*n].name, sizeof cases[*n].name, "%s", line + 5);
            sb_init(&cases[(*n)++].req);
            continue;
        }
        assert_true(*n > 0);
        case_line(&cases[*n - 1], line, &next);
    }
    free(text);
    return cases;
}

/* ---------------- running them ---------------- */

/* The reply on the client's socket (all of it: the server wrote it at once). */
static char *read_reply(int fd)
{
    struct strbuf sb;
    sb_init(&sb);
    char buf[4096];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, 200) > 0) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        sb_add(&sb, buf, (size_t)n);
    }
    return sb.buf ? sb_detach(&sb) : xstrdup("");
}

static void check_reply(const struct tcase *c, const char *reply, int64_t waited)
{
    int code = 0;
    if (strncmp(reply, "HTTP/1.1 100 Continue\r\n\r\n", 25) == 0)
        reply += 25;
    if (sscanf(reply, "HTTP/1.1 %d", &code) != 1 || code != c->expect)
        fail_msg("%s: %d, not %d: %.300s", c->name, code, c->expect, reply);
    const char *body = strstr(reply, "\r\n\r\n");
    assert_non_null(body);
    body += 4;
    if (c->empty && code == 200 && *body)
        fail_msg("%s: a body: %s", c->name, body);
    if (c->error && strncmp(body, "{\"error\":\"", 10) != 0)
        fail_msg("%s: not an error: %s", c->name, body);
    char want[64];
    snprintf(want, sizeof want, "{\"type\":\"%s\"", c->json_type);
    if (*c->json_type && strncmp(body, want, strlen(want)) != 0)
        fail_msg("%s: not a %s command: %s", c->name, c->json_type, body);
    if (*c->header && !strstr(reply, c->header))
        fail_msg("%s: no %s in %s", c->name, c->header, reply);
    if (c->closes && !strstr(reply, "\r\nConnection: close\r\n"))
        fail_msg("%s: no Connection: close in %s", c->name, reply);
    if (c->wait_max && (waited < c->wait_min || waited > c->wait_max))
        fail_msg("%s: answered after %lld ms", c->name, (long long)waited);
}

static void run_case(struct server *s, const struct tcase *c)
{
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(write(sv[0], c->req.buf, c->req.len), (ssize_t)c->req.len);
    struct conn conn = {.s = s};
    tc_conn_init(&conn.t, &ops, sv[1]);
    int64_t t0 = mono_ms(), waited = 0;
    for (int i = 0; i < 4 && !conn.t.close_after; i++) {
        tc_read(&conn.t);
        tc_serve(&conn.t);
    }
    if (s->q.waiting == &conn.t) { /* the poll's deadline comes */
        waited = s->q.deadline_ms - t0;
        tc_queue_expire(&s->q, s->q.deadline_ms, 0);
    }
    char *reply = read_reply(sv[0]);
    check_reply(c, reply, waited);
    free(reply);
    tc_queue_forget(&s->q, &conn.t);
    tc_conn_release(&conn.t);
    assert_int_equal(s->in_flight, 0);
    close(sv[0]);
    close(sv[1]);
}

static void test_cases(void **state)
{
    (void)state;
    int n;
    struct tcase *cases = load_cases(&n);
    assert_true(n > 20);
    struct server s = {.metrics = 0};
    for (int i = 0; i < n; i++) {
        run_case(&s, &cases[i]);
        sb_free(&cases[i].req);
    }
    assert_int_equal(s.metrics, 2); /* the cases' two accepted metrics */
    tc_queue_close(&s.q);
    free(cases);
}

/* A command queue keeps the newest TC_MAX_QUEUED commands of a trial that never reads. */
static void test_queue_keeps_newest(void **state)
{
    (void)state;
    struct tc_queue q = {.n = 0};
    for (int i = 0; i < TC_MAX_QUEUED + 3; i++)
        assert_int_equal(tc_queue_push(&q, xasprintf("%d", i)), i >= TC_MAX_QUEUED);
    assert_int_equal(q.n, TC_MAX_QUEUED);
    assert_string_equal(q.cmd[0], "3");
    tc_queue_close(&q);
    assert_int_equal(q.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_queue_keeps_newest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
