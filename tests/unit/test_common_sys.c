/* common/sys.c: proc_terminate ends what it is given (a process or a process group),
 * escalating to SIGKILL, and reaps only that: another child's exit status stays for the
 * code that waits for it (the api reaps its workers and dispatcher, the worker its
 * supervisors, each reading the status). run_capture runs a tool with both outputs
 * captured, and ends it and what it started when it does not answer in time. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/common.h"

static pid_t child_exiting(int code)
{
    pid_t p = fork();
    if (p == 0)
        _exit(code);
    assert_true(p > 0);
    return p;
}

/* a child that sleeps until killed; returns once it is set up (its group, its
 * SIGTERM disposition), so that a signal cannot arrive before */
static pid_t child_sleeping(int ignore_term, int own_group)
{
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t p = fork();
    if (p == 0) {
        if (own_group)
            setpgid(0, 0);
        if (ignore_term)
            signal(SIGTERM, SIG_IGN);
        close(ready[0]);
        (void)!write(ready[1], "r", 1);
        close(ready[1]);
        for (;;)
            pause();
    }
    assert_true(p > 0);
    close(ready[1]);
    char c;
    assert_int_equal(read(ready[0], &c, 1), 1);
    close(ready[0]);
    return p;
}

/* waits until p has exited (a zombie) without reaping it */
static void wait_zombie(pid_t p)
{
    siginfo_t si;
    assert_int_equal(waitid(P_PID, (id_t)p, &si, WEXITED | WNOWAIT), 0);
}

static void test_other_child_status_kept(void **st)
{
    (void)st;
    pid_t other = child_exiting(7);
    wait_zombie(other);
    pid_t victim = child_sleeping(0, 0);
    assert_int_equal(proc_terminate(victim, 0, 2000), 0);
    /* the victim is reaped by proc_terminate (no zombie left)... */
    assert_int_equal(waitpid(victim, NULL, WNOHANG), -1);
    /* ...and the other child is still there with its own status */
    int status = 0;
    assert_int_equal(waitpid(other, &status, 0), other);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 7);
}

static void test_group_escalates_and_keeps_others(void **st)
{
    (void)st;
    pid_t other = child_exiting(9);
    wait_zombie(other);
    pid_t leader = child_sleeping(1, 1); /* ignores SIGTERM: needs the SIGKILL */
    int64_t t0 = mono_ms();
    assert_int_equal(proc_terminate(-leader, 0, 300), 0);
    assert_true(mono_ms() - t0 >= 300);
    assert_int_equal(kill(-leader, 0), -1);
    int status = 0;
    assert_int_equal(waitpid(other, &status, 0), other);
    assert_int_equal(WEXITSTATUS(status), 9);
}

static void test_gone_or_reused_pid(void **st)
{
    (void)st;
    pid_t p = child_exiting(0);
    assert_int_equal(waitpid(p, NULL, 0), p);
    assert_int_equal(proc_terminate(p, 0, 100), 0); /* already gone */
    /* a live process whose start time differs from the recorded one is someone else */
    pid_t q = child_sleeping(0, 0);
    uint64_t start = proc_start_time(q);
    assert_true(start > 0);
    assert_int_equal(proc_terminate(q, start + 1, 100), 0);
    assert_int_equal(kill(q, 0), 0); /* untouched */
    assert_int_equal(proc_terminate(q, start, 2000), 0);
    assert_int_equal(kill(q, 0), -1);
}

static void test_run_capture(void **st)
{
    (void)st;
    char *out, *err;
    char *both[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
    assert_int_equal(run_capture(both, 5000, &out, &err), 3);
    assert_string_equal(out, "out\n");
    assert_string_equal(err, "err\n");
    free(out);
    free(err);
    /* much output on both streams at once: no deadlock between the two pipes */
    char *big[] = {"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' a >&2; head -c 300000 /dev/zero | tr '\\0' b", NULL};
    assert_int_equal(run_capture(big, 10000, &out, &err), 0);
    assert_int_equal(strlen(out), 300000);
    assert_int_equal(strlen(err), 300000);
    free(out);
    free(err);
    char *sig[] = {"sh", "-c", "kill -TERM $$", NULL};
    assert_int_equal(run_capture(sig, 5000, NULL, NULL), 128 + SIGTERM);
    char *none[] = {"trialq-no-such-program", NULL};
    assert_int_equal(run_capture(none, 5000, NULL, &err), 127);
    assert_non_null(strstr(err, "cannot run trialq-no-such-program"));
    free(err);
}

static void test_run_capture_timeout_ends_the_group(void **st)
{
    (void)st;
    /* the tool starts a child that holds the pipes open: both end at the timeout */
    char path[] = "/tmp/trialq-test-rc-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "sleep 30 & echo $! > %s; wait", path);
    char *argv[] = {"sh", "-c", cmd, NULL};
    int64_t t0 = mono_ms();
    assert_int_equal(run_capture(argv, 300, NULL, NULL), -2);
    int64_t took = mono_ms() - t0;
    assert_true(took >= 300 && took < 5000);
    FILE *f = fopen(path, "r");
    int child = 0;
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%d", &child), 1);
    fclose(f);
    unlink(path);
    for (int i = 0; i < 100 && proc_alive(child, 0); i++)
        usleep(10000); /* killed (a zombie until whoever adopted it reaps it) */
    assert_false(proc_alive(child, 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_other_child_status_kept),
        cmocka_unit_test(test_group_escalates_and_keeps_others),
        cmocka_unit_test(test_gone_or_reused_pid),
        cmocka_unit_test(test_run_capture),
        cmocka_unit_test(test_run_capture_timeout_ends_the_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
