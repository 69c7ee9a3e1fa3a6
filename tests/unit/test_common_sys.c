/* common/sys.c: proc_terminate ends what it is given (a process or a process group),
 * escalating to SIGKILL, and reaps only that: another child's exit status stays for the
 * code that waits for it (the api reaps its workers and dispatcher, the worker its
 * supervisors, each reading the status). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_other_child_status_kept),
        cmocka_unit_test(test_group_escalates_and_keeps_others),
        cmocka_unit_test(test_gone_or_reused_pid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
