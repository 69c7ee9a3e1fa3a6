/* test_cli_lifecycle.c (linked as nnictl is): what cli/lifecycle.c decides without
 * processes — which experiments `nnictl stop` takes when not given one id — and that
 * opening the home's database (cli_open_db) changes nothing in it, while the one-time
 * step (cli_open_home: cli_secrets_migrate) moves an older row's secrets out, once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/cli.h"
#include "tests/unit/db_fixture.h"

static struct experiment exp_of(const char *id, const char *status, int port)
{
    struct experiment x;
    memset(&x, 0, sizeof x);
    x.id = (char *)id;
    x.status = (char *)status;
    x.port = port;
    return x;
}

static void test_stop_selection(void **state)
{
    (void)state;
    struct experiment run = exp_of("abcdef12", "RUNNING", 8080), done = exp_of("abczzz99", "DONE", 8081),
                      crashed = exp_of("xyz00001", "RUNNING", 8082);
    struct stop_sel none = {0}, all = {.all = 1}, port = {.port = 8080},
                    glob = {.prefix = "abc*", .prefix_len = 3};
    /* no selector: the running ones */
    assert_true(cli_stop_selects(&none, &run, 1));
    assert_false(cli_stop_selects(&none, &crashed, 0));
    /* --all: running, and the ones a crash left unfinished; not the finished ones */
    assert_true(cli_stop_selects(&all, &run, 1));
    assert_true(cli_stop_selects(&all, &crashed, 0));
    assert_false(cli_stop_selects(&all, &done, 0));
    assert_true(cli_stop_selects(&all, &done, 1));
    /* --port: the running one on that port */
    assert_true(cli_stop_selects(&port, &run, 1));
    assert_false(cli_stop_selects(&port, &run, 0));
    assert_false(cli_stop_selects(&port, &done, 1));
    /* "abc*": running ones whose id starts with abc */
    assert_true(cli_stop_selects(&glob, &run, 1));
    assert_true(cli_stop_selects(&glob, &done, 1));
    assert_false(cli_stop_selects(&glob, &done, 0));
    assert_false(cli_stop_selects(&glob, &crashed, 1));
}

#define SECRET "s3cret-value-1234"
#define CONFIG "{\"trainingService\":{\"platform\":\"dlc\",\"accessKeySecret\":\"" SECRET "\"}}"

static char *stored_config(struct db *db, const char *id)
{
    struct experiment x;
    struct errbuf e;
    assert_int_equal(exp_load(db, id, &x, &e), 1);
    char *c = strdup(x.config);
    exp_clear(&x);
    return c;
}

static void test_open_has_no_side_effect(void **state)
{
    (void)state;
    char home[] = "/tmp/trialq-test-cli-XXXXXX";
    assert_non_null(mkdtemp(home));
    char *h = NULL;
    struct db *db = cli_open_db(home, &h);
    assert_non_null(db);
    assert_string_equal(h, home);
    fx_add_experiment(db, "abcdef12", home, CONFIG, 1, 0);
    db_close(db);
    /* opened again: the row keeps its config, no secrets file, no marker */
    db = cli_open_db(home, NULL);
    assert_non_null(db);
    char *c = stored_config(db, "abcdef12");
    assert_non_null(strstr(c, SECRET));
    free(c);
    db_close(db);
    char *marker = path_join(home, "secrets/.moved"), *file = path_join(home, "secrets/abcdef12.json");
    assert_int_not_equal(access(marker, F_OK), 0);
    assert_int_not_equal(access(file, F_OK), 0);
    /* the home as a command opens it: the secret moved out once, the marker written */
    db = cli_open_home(home, NULL);
    assert_non_null(db);
    c = stored_config(db, "abcdef12");
    assert_null(strstr(c, SECRET));
    free(c);
    db_close(db);
    assert_int_equal(access(marker, F_OK), 0);
    size_t len;
    char *text = read_file(file, &len);
    assert_non_null(text);
    assert_non_null(strstr(text, SECRET));
    free(text);
    free(marker);
    free(file);
    free(h);
    char *cmd = xasprintf("rm -rf '%s'", home);
    assert_int_equal(system(cmd), 0);
    free(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stop_selection),
        cmocka_unit_test(test_open_has_no_side_effect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
