/* .nniignore matching (gitignore syntax, nested files) and the code-directory walk
 * with NNI's limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "workers/nniignore.h"

static void test_glob(void **state)
{
    (void)state;
    assert_true(glob_match("*.py", "a.py"));
    assert_false(glob_match("*.py", "d/a.py")); /* '*' does not cross '/' */
    assert_true(glob_match("a?c", "abc"));
    assert_false(glob_match("a?c", "a/c"));
    assert_true(glob_match("[a-c]x", "bx"));
    assert_false(glob_match("[!a-c]x", "bx"));
    assert_true(glob_match("[!a-c]x", "dx"));
    assert_true(glob_match("**/foo", "foo"));
    assert_true(glob_match("**/foo", "a/b/foo"));
    assert_true(glob_match("a/**/b", "a/b"));
    assert_true(glob_match("a/**/b", "a/x/y/b"));
    assert_false(glob_match("a/**/b", "a/x/y/c"));
    assert_true(glob_match("a/**", "a/x/y"));
    assert_false(glob_match("a/**", "a"));
    assert_true(glob_match("\\*lit", "*lit"));
    assert_false(glob_match("\\*lit", "xlit"));
    assert_true(glob_match("[unclosed", "[unclosed"));
}

static int ign(const char *text, const char *path, int is_dir)
{
    struct ignore_rules *r = ignore_parse(text, "");
    int m = ignore_match(&r, 1, path, is_dir);
    ignore_free(r);
    return m;
}

static void test_rules(void **state)
{
    (void)state;
    const char *t = "# comment\n\n*.log\n!keep.log\nbuild/\n/top.txt\ndocs/*.md\n\\#hash\ntrail \n";
    assert_true(ign(t, "a.log", 0));
    assert_true(ign(t, "deep/dir/a.log", 0));          /* no slash: any depth */
    assert_false(ign(t, "keep.log", 0));               /* negation: the last match wins */
    assert_false(ign(t, "deep/keep.log", 0));
    assert_true(ign(t, "build", 1));
    assert_false(ign(t, "build", 0));                  /* dir-only pattern, a file */
    assert_true(ign(t, "x/build", 1));
    assert_true(ign(t, "top.txt", 0));
    assert_false(ign(t, "sub/top.txt", 0));            /* anchored to the root */
    assert_true(ign(t, "docs/a.md", 0));
    assert_false(ign(t, "docs/sub/a.md", 0));
    assert_true(ign(t, "#hash", 0));
    assert_true(ign(t, "trail", 0));                   /* trailing spaces dropped */
    assert_false(ign(t, "comment", 0));
    assert_false(ign("", "anything", 0));
    assert_true(ign("\r\n*.tmp\r\n", "x.tmp", 0));    /* CRLF files */
}

static void test_nested(void **state)
{
    (void)state;
    struct ignore_rules *sets[2];
    sets[0] = ignore_parse("*.bin\n", "");
    sets[1] = ignore_parse("!model.bin\n/local.txt\n", "sub");
    assert_true(ignore_match(sets, 2, "a.bin", 0));
    assert_true(ignore_match(sets, 2, "other/model.bin", 0)); /* sub's rules do not apply here */
    assert_false(ignore_match(sets, 2, "sub/model.bin", 0)); /* the deeper file re-includes */
    assert_true(ignore_match(sets, 2, "sub/x.bin", 0));
    assert_true(ignore_match(sets, 2, "sub/local.txt", 0));  /* anchored to sub/ */
    assert_false(ignore_match(sets, 2, "local.txt", 0));
    assert_false(ignore_match(sets, 2, "sub/deeper/local.txt", 0));
    ignore_free(sets[0]);
    ignore_free(sets[1]);
}

static char *tmpdir(void)
{
    char tmpl[] = "/tmp/tq-nniignore-XXXXXX";
    char *d = mkdtemp(tmpl);
    assert_non_null(d);
    return xstrdup(d);
}

static void put(const char *root, const char *rel, const char *text)
{
    char *p = xasprintf("%s/%s", root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    mkdir_p(p, 0755);
    *slash = '/';
    assert_int_equal(write_file_replace(p, text, strlen(text), 0644), 0);
    free(p);
}

static int listed(const struct code_list *l, const char *path)
{
    for (size_t off = 0; off < l->len; off += strlen(l->paths + off) + 1)
        if (strcmp(l->paths + off, path) == 0)
            return 1;
    return 0;
}

static void test_walk(void **state)
{
    (void)state;
    char *root = tmpdir();
    put(root, ".nniignore", "data/\n*.ckpt\n");
    put(root, "train.py", "print(1)\n");
    put(root, "data/big.bin", "xxxx");
    put(root, "m.ckpt", "c");
    put(root, "pkg/__init__.py", "");
    put(root, "pkg/.nniignore", "gen/\n!keep.ckpt\n");
    put(root, "pkg/keep.ckpt", "k");
    put(root, "pkg/gen/out.txt", "o");
    struct code_list l;
    struct errbuf e;
    assert_int_equal(code_list_build(root, NULL, &l, &e), 0);
    assert_true(listed(&l, "train.py"));
    assert_true(listed(&l, ".nniignore"));
    assert_true(listed(&l, "pkg"));
    assert_true(listed(&l, "pkg/__init__.py"));
    assert_true(listed(&l, "pkg/keep.ckpt"));
    assert_false(listed(&l, "data"));
    assert_false(listed(&l, "data/big.bin"));
    assert_false(listed(&l, "m.ckpt"));
    assert_false(listed(&l, "pkg/gen"));
    assert_false(listed(&l, "pkg/gen/out.txt"));
    assert_int_equal(l.entries, 6); /* .nniignore train.py pkg pkg/.nniignore pkg/__init__.py pkg/keep.ckpt */
    code_list_free(&l);
    rm_rf(root);
    free(root);
}

/* the experiment's config (it holds the platforms' passwords and tokens) is not shipped,
 * by whatever path it was named; a file of the same name elsewhere is */
static void test_leave_out_config(void **state)
{
    (void)state;
    char *root = tmpdir();
    put(root, "train.py", "print(1)\n");
    put(root, "exp.yml", "trainingService: {platform: remote, machineList: [{password: x}]}\n");
    put(root, "sub/exp.yml", "another file of the same name\n");
    struct code_list l;
    struct errbuf e;
    char *cfg = xasprintf("%s/exp.yml", root);
    char *cfg_other_path = xasprintf("%s/sub/../exp.yml", root);
    char *link = xasprintf("%s/link.yml", root);
    const char *const names[] = {cfg, cfg_other_path};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(code_list_build(root, names[i], &l, &e), 0);
        assert_true(listed(&l, "train.py"));
        assert_false(listed(&l, "exp.yml"));
        assert_true(listed(&l, "sub/exp.yml"));
        assert_int_equal(l.entries, 3);
        code_list_free(&l);
    }
    /* a symlink to it in the code is shipped as a link (its target stays behind) */
    assert_int_equal(symlink("exp.yml", link), 0);
    assert_int_equal(code_list_build(root, cfg, &l, &e), 0);
    assert_true(listed(&l, "link.yml"));
    assert_false(listed(&l, "exp.yml"));
    code_list_free(&l);
    /* a config outside the code directory, or gone: nothing left out */
    assert_int_equal(code_list_build(root, "/nonexistent/exp.yml", &l, &e), 0);
    assert_true(listed(&l, "exp.yml"));
    code_list_free(&l);
    /* the copy to shared storage leaves it out too */
    char *dst = xasprintf("%s.copy", root);
    assert_int_equal(code_copy_tree(root, dst, cfg, &e), 0);
    char *copied = xasprintf("%s/exp.yml", dst), *kept = xasprintf("%s/train.py", dst);
    assert_int_equal(access(copied, F_OK), -1);
    assert_int_equal(access(kept, F_OK), 0);
    rm_rf(dst);
    rm_rf(root);
    free(copied);
    free(kept);
    free(dst);
    free(link);
    free(cfg_other_path);
    free(cfg);
    free(root);
}

static void test_limits(void **state)
{
    (void)state;
    char *root = tmpdir();
    /* 2,000 entries pass (NNI counts files and directories), 2,001 fail */
    char *d = xasprintf("%s/many", root);
    mkdir_p(d, 0755);
    for (int i = 0; i < 1999; i++) {
        char name[32];
        snprintf(name, sizeof name, "many/f%04d", i);
        put(root, name, "");
    }
    struct code_list l;
    struct errbuf e;
    assert_int_equal(code_list_build(root, NULL, &l, &e), 0);
    assert_int_equal(l.entries, 2000);
    code_list_free(&l);
    put(root, "one-more", "");
    assert_int_equal(code_list_build(root, NULL, &l, &e), -1);
    assert_non_null(strstr(e.msg, "more than 2000 files and directories"));
    assert_non_null(strstr(e.msg, root));
    /* ignoring them makes it fit again */
    put(root, ".nniignore", "many/\n");
    assert_int_equal(code_list_build(root, NULL, &l, &e), 0);
    assert_int_equal(l.entries, 2);
    code_list_free(&l);
    rm_rf(root);
    /* 300 MB: a sparse file of 301 MB */
    mkdir_p(root, 0755);
    char *big = xasprintf("%s/big.bin", root);
    FILE *f = fopen(big, "w");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), 301LL * 1024 * 1024), 0);
    fclose(f);
    assert_int_equal(code_list_build(root, NULL, &l, &e), -1);
    assert_non_null(strstr(e.msg, "300 MB"));
    assert_non_null(strstr(e.msg, "big.bin"));
    assert_int_equal(code_list_build("/nonexistent/tq", NULL, &l, &e), -1);
    rm_rf(root);
    free(big);
    free(d);
    free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_glob),  cmocka_unit_test(test_rules), cmocka_unit_test(test_nested),
        cmocka_unit_test(test_walk),  cmocka_unit_test(test_limits), cmocka_unit_test(test_leave_out_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
