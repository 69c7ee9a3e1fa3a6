/* test_workers_nas_trial.c: what OpenPAI, PAI-DLC and DLTS share of a trial on a mounted
 * storage (workers/nas_trial.c): the job's name and dir of an attempt, and the job table
 * whose service id survives a restart in the trial's dir (nas_job_load/nas_job_known):
 * read back, a retry starting afresh, a marker that is not an id ignored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "workers/nas_trial.h"

static char *root;

static int setup(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/trialq-nas-XXXXXX";
    root = xstrdup(mkdtemp(tmpl));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char *cmd = xasprintf("rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    free(cmd);
    free(root);
    return 0;
}

static void test_names_of_an_attempt(void **state)
{
    (void)state;
    struct trial t = {.id = "Ab1", .attempt = 1};
    char *n = nas_job_name("exp9", &t), *d = nas_trial_dir("/m/exp9", &t);
    assert_string_equal(n, "nni_exp_exp9_trial_Ab1");
    assert_string_equal(d, "/m/exp9/Ab1");
    free(n);
    free(d);
    t.attempt = 3; /* a retry gets a job and a dir of its own */
    n = nas_job_name("exp9", &t);
    d = nas_trial_dir("/m/exp9", &t);
    assert_string_equal(n, "nni_exp_exp9_trial_Ab1_attempt3");
    assert_string_equal(d, "/m/exp9/Ab1.attempt3");
    free(n);
    free(d);
}

static void make_trial_dir(const struct trial *t)
{
    char *d = nas_trial_dir(root, t);
    char *nni = xasprintf("%s/.nni", d);
    assert_int_equal(mkdir_p(nni, 0755), 0);
    free(nni);
    free(d);
}

static void test_job_id_survives_a_restart(void **state)
{
    (void)state;
    struct trial t = {.id = "T1", .attempt = 1};
    make_trial_dir(&t);
    struct nas_jobs js = {0};
    struct nas_job *j = nas_job_load(&js, root, &t, "jobid");
    assert_null(j->job_id);
    assert_int_equal(j->need_submit, 1); /* nothing recorded: look for it, then create */
    nas_job_known(j, root, &t, "jobid", "job-42");
    assert_string_equal(j->job_id, "job-42");
    assert_int_equal(j->need_submit, 0);
    nas_jobs_free(&js);

    /* a new worker: the id comes back from the trial's dir */
    j = nas_job_load(&js, root, &t, "jobid");
    assert_non_null(j->job_id);
    assert_string_equal(j->job_id, "job-42");
    assert_int_equal(j->need_submit, 0);
    /* the same attempt again: the entry as it is, not re-read */
    assert_ptr_equal(nas_job_load(&js, root, &t, "jobid"), j);
    assert_int_equal(js.n, 1);

    /* a retry: a fresh entry, its own dir, no id */
    struct trial r = {.id = "T1", .attempt = 2};
    make_trial_dir(&r);
    j = nas_job_load(&js, root, &r, "jobid");
    assert_int_equal(js.n, 1);
    assert_null(j->job_id);
    assert_int_equal(j->need_submit, 1);
    nas_job_forget(&js, "T1");
    assert_int_equal(js.n, 0);
    nas_jobs_free(&js);
}

static void test_marker_that_is_not_an_id(void **state)
{
    (void)state;
    struct trial t = {.id = "T2", .attempt = 1};
    make_trial_dir(&t);
    char *d = nas_trial_dir(root, &t);
    char *m = xasprintf("%s/.nni/submitted", d);
    struct nas_jobs js = {0};
    /* a trailing newline (written by hand) is not part of the id */
    assert_int_equal(write_file_replace(m, "dlc-7\n", 6, 0644), 0);
    struct nas_job *j = nas_job_load(&js, root, &t, "submitted");
    assert_string_equal(j->job_id, "dlc-7");
    nas_jobs_free(&js);
    /* a path is never taken for an id (it would go into a request's URL) */
    assert_int_equal(write_file_replace(m, "../x", 4, 0644), 0);
    j = nas_job_load(&js, root, &t, "submitted");
    assert_null(j->job_id);
    assert_int_equal(j->need_submit, 1);
    nas_jobs_free(&js);
    /* empty: none */
    assert_int_equal(write_file_replace(m, "", 0, 0644), 0);
    j = nas_job_load(&js, root, &t, "submitted");
    assert_null(j->job_id);
    nas_jobs_free(&js);
    free(m);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_of_an_attempt),
        cmocka_unit_test(test_job_id_survives_a_restart),
        cmocka_unit_test(test_marker_that_is_not_an_id),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
