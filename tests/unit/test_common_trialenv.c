/* The trial environment builder (common/trialenv.c): set / replace / remove keep their
 * places; the envp drops NNI's variables of another trial and what the trial sets,
 * inherits the rest; the export renderings are exact, and a real /bin/sh running them
 * sees every value byte for byte (quotes, newlines, $, backslashes, empty). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/trialenv.h"

static void test_set_replace_remove(void **st)
{
    (void)st;
    struct trial_env te;
    trial_env_init(&te);
    trial_env_set(&te, "A", "1");
    trial_env_set_word(&te, "B", "2");
    trial_env_set(&te, "C", "3");
    trial_env_set(&te, "A", "one"); /* in its place */
    trial_env_set(&te, "B", NULL);  /* removed */
    trial_env_set(&te, "D", NULL);  /* nothing to remove */
    assert_int_equal(te.n, 2);
    assert_string_equal(te.v[0].name, "A");
    assert_string_equal(te.v[0].value, "one");
    assert_string_equal(te.v[1].name, "C");
    assert_string_equal(trial_env_get(&te, "C"), "3");
    assert_null(trial_env_get(&te, "B"));
    trial_env_free(&te);
    assert_int_equal(te.n, 0);
}

static void test_envp(void **st)
{
    (void)st;
    char *base[] = {"PATH=/usr/bin", "NNI_TRIAL_JOB_ID=other", "CUDA_VISIBLE_DEVICES=1", "NNI_SYS_DIRX=kept",
                    "TRIALQ_CHANNEL_PATH=/old", "PYTHONPATH=/x", "HOME=/h", NULL};
    struct trial_env te;
    trial_env_init(&te);
    trial_env_set_word(&te, "NNI_PLATFORM", "local");
    trial_env_set(&te, "NNI_TRIAL_JOB_ID", "Ab3dE");
    trial_env_set(&te, "PYTHONPATH", "/x:/sdk");
    char **envp = trial_env_envp(&te, base);
    const char *want[] = {"PATH=/usr/bin", "CUDA_VISIBLE_DEVICES=1", "NNI_SYS_DIRX=kept", "HOME=/h",
                          "NNI_PLATFORM=local", "NNI_TRIAL_JOB_ID=Ab3dE", "PYTHONPATH=/x:/sdk", NULL};
    for (int i = 0; want[i]; i++) {
        assert_non_null(envp[i]);
        assert_string_equal(envp[i], want[i]);
    }
    assert_null(envp[7]);
    trial_env_envp_free(envp);
    /* a variable the trial sets replaces the inherited one */
    trial_env_set(&te, "CUDA_VISIBLE_DEVICES", "");
    envp = trial_env_envp(&te, base);
    int n = 0, empty = 0;
    for (char **v = envp; *v; v++, n++) {
        assert_string_not_equal(*v, "CUDA_VISIBLE_DEVICES=1");
        empty += strcmp(*v, "CUDA_VISIBLE_DEVICES=") == 0;
    }
    assert_int_equal(empty, 1);
    assert_int_equal(n, 7);
    trial_env_envp_free(envp);
    trial_env_free(&te);
}

static void test_exports_exact(void **st)
{
    (void)st;
    struct trial_env te;
    trial_env_init(&te);
    trial_env_set_word(&te, "NNI_PLATFORM", "pai");
    trial_env_set(&te, "NNI_SYS_DIR", "/mnt/it's");
    trial_env_set_word(&te, "NNI_TRIAL_SEQ_ID", "7");
    trial_env_set(&te, "CUDA_VISIBLE_DEVICES", "");
    struct strbuf sb;
    sb_init(&sb);
    trial_env_export_lines(&te, &sb);
    assert_string_equal(sb.buf, "export NNI_PLATFORM=pai\n"
                                "export NNI_SYS_DIR='/mnt/it'\\''s'\n"
                                "export NNI_TRIAL_SEQ_ID=7\n"
                                "export CUDA_VISIBLE_DEVICES=''\n");
    sb_free(&sb);
    sb_init(&sb);
    trial_env_export_line(&te, &sb);
    assert_string_equal(sb.buf, "export NNI_PLATFORM=pai NNI_SYS_DIR='/mnt/it'\\''s' NNI_TRIAL_SEQ_ID=7"
                                " CUDA_VISIBLE_DEVICES=''");
    sb_free(&sb);
    trial_env_free(&te);
}

/* /bin/sh sources the exports and prints each value between markers */
static char *through_sh(const struct trial_env *te, int one_line)
{
    struct strbuf sb;
    sb_init(&sb);
    if (one_line) {
        trial_env_export_line(te, &sb);
        sb_puts(&sb, " && true\n");
    } else {
        trial_env_export_lines(te, &sb);
    }
    for (int i = 0; i < te->n; i++)
        sb_printf(&sb, "printf '[%%s]' \"$%s\"\n", te->v[i].name);
    char path[] = "/tmp/trialenv-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, sb.buf, sb.len), (ssize_t)sb.len);
    close(fd);
    sb_free(&sb);
    char *cmd = xasprintf("env -i /bin/sh %s", path);
    FILE *f = popen(cmd, "r");
    free(cmd);
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    assert_int_equal(pclose(f), 0);
    unlink(path);
    return xstrdup(buf);
}

static void test_exports_through_sh(void **st)
{
    (void)st;
    struct trial_env te;
    trial_env_init(&te);
    trial_env_set(&te, "A", "it's \"$HOME\" `x` \\ \\n");
    trial_env_set(&te, "B", "two\nlines");
    trial_env_set(&te, "C", "");
    trial_env_set_word(&te, "D", "42");
    const char *want = "[it's \"$HOME\" `x` \\ \\n][two\nlines][][42]";
    for (int one = 0; one < 2; one++) {
        char *got = through_sh(&te, one);
        assert_string_equal(got, want);
        free(got);
    }
    trial_env_free(&te);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_replace_remove),
        cmocka_unit_test(test_envp),
        cmocka_unit_test(test_exports_exact),
        cmocka_unit_test(test_exports_through_sh),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
