/* test_workers_remote.c: the worker's reading of the remote runner's status answer
 * (remote_status_parse, workers/remote/remote.c; tests/fuzz fuzz_remote_state runs it on any
 * bytes): headers per trial, the data part's start, and answers it must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "workers/remote/remote.h"

static const char *parse(const char *text, int n, struct remote_status *h)
{
    return remote_status_parse(text, text + strlen(text), n, h);
}

static void test_status_answer(void **state)
{
    (void)state;
    struct remote_status h[2];
    const char *ok = "status\nF 0 1700000000123 1 5 3 0\nR 0 0 -1 0 0 2\ndata\nhelloabcxy";
    const char *data = parse(ok, 2, h);
    assert_non_null(data);
    assert_string_equal(data, "helloabcxy");
    assert_int_equal(h[0].state, 'F');
    assert_int_equal(h[0].rc, 0);
    assert_true(h[0].end == 1700000000123LL);
    assert_int_equal(h[0].stopped, 1);
    assert_true(h[0].len[0] == 5 && h[0].len[1] == 3 && h[0].len[2] == 0);
    assert_int_equal(h[1].state, 'R');
    assert_int_equal(h[1].stopped, -1);
    assert_true(h[1].len[2] == 2);
    /* no trials asked about: "status" and "data" alone */
    assert_non_null(parse("status\ndata\n", 0, h));
}

/* the fault the runner saw on the trial dir's filesystem, last on the line (issue 32) */
static void test_status_fault(void **state)
{
    (void)state;
    struct remote_status h[4];
    const char *ok = "status\nF 1 5 0 0 0 0 full\nF 1 5 0 0 0 0 readonly\nF 1 5 0 0 0 0 ioerror\nR 0 0 0 0 0 0 -\ndata\n";
    assert_non_null(parse(ok, 4, h));
    assert_int_equal(h[0].fault, ENOSPC);
    assert_int_equal(h[1].fault, EROFS);
    assert_int_equal(h[2].fault, EIO);
    assert_int_equal(h[3].fault, 0);
    /* a runner that names no fault */
    assert_non_null(parse("status\nF 1 5 0 0 0 0\ndata\n", 1, h));
    assert_int_equal(h[0].fault, 0);
    assert_null(parse("status\nF 1 5 0 0 0 0 full x\ndata\n", 1, h));   /* more after it */
    assert_null(parse("status\nF 1 5 0 0 0 0 \ndata\n", 1, h));         /* a space, no word */
    assert_null(parse("status\nF 1 5 0 0 0 0 FULL\ndata\n", 1, h));     /* not a fault word */
}

static void test_malformed(void **state)
{
    (void)state;
    struct remote_status h[2];
    assert_null(parse("", 1, h));
    assert_null(parse("statu", 0, h));
    assert_null(parse("submit started\nstatus\ndata\n", 0, h));
    assert_null(parse("status\nF 0 1 0 0 0\ndata\n", 1, h));          /* a field short */
    assert_null(parse("status\nF 0 1 0 0 0 0\n", 1, h));              /* no data line */
    assert_null(parse("status\nF 0 1 0 0 0 0\ndata\n", 2, h));        /* one trial of two */
    assert_null(parse("status\nF x 1 0 0 0 0\ndata\n", 1, h));        /* not a number */
    assert_null(parse("status\nF 0 1 0 0 0 0\nF 0 1 0 0 0 0\n", 1, h)); /* more lines than asked */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_answer),
        cmocka_unit_test(test_status_fault),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
