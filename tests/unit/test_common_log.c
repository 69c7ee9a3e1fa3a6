/* test_common_log.c: log_msg writes one line per record: control bytes in a message
 * (text a trial or a server wrote, passed on by a caller) come out as \xNN, so that
 * nothing can forge a log line or reach the reader's terminal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"

/* what log_msg(lvl, "%s", msg) writes to stderr, less the "[time] LEVEL (module pid) " head */
static char *logged(const char *msg)
{
    char path[] = "/tmp/tq-log-test-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    assert_true(dup2(fd, STDERR_FILENO) >= 0);
    log_msg(LOG_WARN, "%s", msg);
    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    char buf[20000];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    buf[n] = '\0';
    const char *body = strstr(buf, ") ");
    assert_non_null(body);
    return xstrdup(body + 2);
}

static void test_plain(void **state)
{
    (void)state;
    char *s = logged("trial abc: exit code 1");
    assert_string_equal(s, "trial abc: exit code 1\n");
    free(s);
}

static void test_controls_escaped(void **state)
{
    (void)state;
    char *s = logged("bad\n[2000-01-01 00:00:00] ERROR forged\x1b[31m\r\tx\x7f");
    assert_string_equal(s, "bad\\x0a[2000-01-01 00:00:00] ERROR forged\\x1b[31m\\x0d\\x09x\\x7f\n");
    free(s);
}

static void test_long_line(void **state)
{
    (void)state;
    /* a message of control bytes as long as a record can be: escaped whole, one line */
    char msg[5000];
    memset(msg, '\n', sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    char *s = logged(msg);
    size_t len = strlen(s);
    assert_true(len > 4000 * 4);
    assert_int_equal(s[len - 1], '\n');
    assert_null(memchr(s, '\n', len - 1));
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_controls_escaped),
        cmocka_unit_test(test_long_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
