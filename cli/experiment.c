/* experiment.c: nnictl experiment list | show | status | delete — from the database,
 * so they work whether or not the experiment runs. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/secrets.h"
#include "config/config.h"
#include "schema/nnijson.h"

/* list's options; the others' are the tail (--home) */
static const struct option home_all_opts[] = {
    {"all", no_argument, NULL, 'a'}, {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
};
/* Parses [--home H] [--all]; leaves optind at the id argument. Returns 0 (message
 * printed) on an unknown option. */
static int parse_home(int argc, char **argv, const char **home_opt, int *all)
{
    int c;
    optind = 1;
    if (all)
        *all = 0;
    const struct option *opts = all ? home_all_opts : home_all_opts + 1;
    while ((c = getopt_long(argc, argv, all ? "H:a" : "H:", opts, NULL)) != -1) {
        if (c == 'H')
            *home_opt = optarg;
        else if (c == 'a' && all)
            *all = 1;
        else {
            cli_error("unknown option");
            return 0;
        }
    }
    return 1;
}

static void fmt_time(int64_t ms, char *out, size_t n)
{
    if (ms <= 0)
        snprintf(out, n, "N/A");
    else
        format_time_ms(ms, "%Y-%m-%d %H:%M:%S", out, n);
}

static int cmd_list_fn(int argc, char **argv)
{
    const char *home_opt = NULL;
    char *home = NULL;
    int all;
    if (!parse_home(argc, argv, &home_opt, &all))
        return 1;
    struct db *db = cli_open_home(home_opt, &home);
    if (!db)
        return 1;
    struct errbuf e;
    struct id_list l = {0};
    exp_ids(db, 0, &l, &e);
    char **ids = l.ids;
    int n = l.n;
    int shown = 0;
    for (int i = 0; i < n; i++) {
        struct experiment x;
        if (exp_load(db, ids[i], &x, &e) == 1) {
            int alive = cli_api_alive(&x);
            /* like NNI: an experiment whose process is gone shows as STOPPED, unless it
             * finished (DONE/ERROR keep their status) */
            const char *status = x.status;
            if (!alive && strcmp(status, "DONE") != 0 && strcmp(status, "ERROR") != 0)
                status = "STOPPED";
            if (all || alive) {
                char st0[32], st1[32];
                fmt_time(x.start_time, st0, sizeof st0);
                fmt_time(x.end_time, st1, sizeof st1);
                printf("Id: %s    Name: %s    Status: %s    Port: %d    Platform: %s    StartTime: %s    EndTime: %s\n",
                       x.id, x.name ? x.name : "None", status, x.port, x.platform, st0, st1);
                shown++;
            }
            exp_clear(&x);
        }
        free(ids[i]);
    }
    free(ids);
    if (!shown)
        printf(all ? "There is no experiment.\n" : "There is no experiment running. Use --all to list every experiment.\n");
    free(home);
    db_close(db);
    return 0;
}

/* Resolves the experiment of the command line (cli_target_open), runs fn, cleans up. */
static int with_experiment(int argc, char **argv, int (*fn)(struct db *db, const char *id, struct experiment *x))
{
    const char *home_opt = NULL;
    if (!parse_home(argc, argv, &home_opt, NULL))
        return 1;
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    int rc = fn(t.db, t.id, &t.x);
    cli_target_close(&t);
    return rc;
}

/* The resource faults its processes have now (a full disk...), from the files they keep
 * (common/fault.c): the database may be what cannot be written. */
static void add_faults(const struct experiment *x, cJSON *errs)
{
    if (!x->exp_dir)
        return;
    char *fault_dir = xasprintf("%s/faults", x->exp_dir);
    fault_each_published(fault_dir, 0, fault_json_add, errs);
    free(fault_dir);
}

static int show(struct db *db, const char *id, struct experiment *x)
{
    (void)db; (void)id;
    cJSON *cfg = cJSON_Parse(x->config);
    cJSON *red = cfg ? config_redacted(cfg) : cJSON_CreateObject();
    cJSON_Delete(cfg);
    cJSON *j = nni_profile_json(x, red);
    cJSON *errs = cJSON_CreateArray();
    add_faults(x, errs);
    if (cJSON_GetArraySize(errs) > 0)
        cJSON_AddItemToObject(j, "errors", errs);
    else
        cJSON_Delete(errs);
    cli_nni_times(j); /* NNI: GET /experiment with its times as local dates */
    cli_print_nni(j);
    cJSON_Delete(j);
    return 0;
}

static int status(struct db *db, const char *id, struct experiment *x)
{
    (void)db; (void)id;
    cJSON *j = cJSON_CreateObject();
    const char *st = x->status;
    if (!cli_api_alive(x) && strcmp(st, "DONE") != 0 && strcmp(st, "ERROR") != 0)
        st = "STOPPED";
    cJSON_AddStringToObject(j, "status", st);
    cJSON *errs = cJSON_Parse(x->errors);
    if (!cJSON_IsArray(errs)) {
        cJSON_Delete(errs);
        errs = cJSON_CreateArray();
    }
    add_faults(x, errs);
    cJSON_AddItemToObject(j, "errors", errs);
    cli_print_nni(j);
    cJSON_Delete(j);
    return 0;
}

static int delete(struct db *db, const char *id, struct experiment *x)
{
    struct errbuf e;
    if (cli_api_alive(x))
        return cli_error("experiment %s is running; stop it first: nnictl stop %s", id, id);
    if (exp_delete(db, id, x->status, "nnictl experiment delete", &e) < 0)
        return cli_error("%s", e.msg);
    rm_rf(x->exp_dir);
    char *home = cli_db_home(db);
    if (secrets_remove(home, id) < 0)
        fprintf(stderr, "WARNING: cannot remove the secrets file of %s: %s\n", id, strerror(errno));
    free(home);
    printf("Experiment %s deleted.\n", id);
    return 0;
}

static int cmd_show_fn(int argc, char **argv) { return with_experiment(argc, argv, show); }
static int cmd_status_fn(int argc, char **argv) { return with_experiment(argc, argv, status); }
static int cmd_delete_fn(int argc, char **argv) { return with_experiment(argc, argv, delete); }

const struct cli_cmd cmd_experiment_list = {
    "experiment", "list", "nnictl experiment list [--all]", cmd_list_fn,
    "Lists the running experiments; --all lists every experiment in the database.",
    home_all_opts};
const struct cli_cmd cmd_experiment_show = {
    "experiment", "show", "nnictl experiment show [ID]", cmd_show_fn,
    "Prints the experiment's profile as NNI does, with its current faults.",
    home_all_opts + 1};
const struct cli_cmd cmd_experiment_status = {
    "experiment", "status", "nnictl experiment status [ID]", cmd_status_fn,
    "Prints the experiment's status and its current faults.",
    home_all_opts + 1};
const struct cli_cmd cmd_experiment_delete = {
    "experiment", "delete", "nnictl experiment delete [ID]", cmd_delete_fn,
    "Deletes a stopped experiment: its rows, trials, metrics and directory.",
    home_all_opts + 1};
