/* stop.c: nnictl stop [id | --all | --port P]: idempotent; every recorded process and
 * process group is gone and the port is free when it returns. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* The experiments an `nnictl stop` without one id names (stop_sel, cli.h): new ids in
 * *out, how many returned. */
static int stop_candidates(struct db *db, const struct stop_sel *sel, char ***out)
{
    struct errbuf e;
    /* candidates: experiments with a live api, or left half-stopped by a crash */
    struct id_list every = {0};
    exp_ids(db, 0, &every, &e);
    char **ids = NULL;
    int nids = 0;
    for (int i = 0; i < every.n; i++) {
        struct experiment x;
        if (exp_load(db, every.ids[i], &x, &e) != 1)
            continue;
        if (cli_stop_selects(sel, &x, proc_alive((pid_t)x.api_pid, (uint64_t)x.api_start))) {
            ids = xrealloc(ids, sizeof *ids * (size_t)(nids + 1));
            ids[nids++] = xstrdup(x.id);
        }
        exp_clear(&x);
    }
    id_list_free(&every);
    *out = ids;
    return nids;
}

static const struct option stop_opts[] = {
    {"port", required_argument, NULL, 'p'}, {"all", no_argument, NULL, 'a'},
    {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
};
static int cmd_stop_fn(int argc, char **argv)
{
    const char *home_opt = NULL;
    int port = 0, all = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:aH:", stop_opts, NULL)) != -1) {
        switch (c) {
        case 'p': if (cli_int_arg("--port", optarg, 1, 65535, &port)) return 1; break;
        case 'a': all = 1; break;
        case 'H': home_opt = optarg; break;
        default: return cli_error("usage: %s", cmd_stop.usage);
        }
    }
    const char *id = optind < argc ? argv[optind] : NULL;
    if (id && strcmp(id, "all") == 0)
        return cli_error("to stop every experiment use: nnictl stop --all");
    struct stop_sel sel = {.all = all, .port = port};
    /* NNI: "ID*" stops every running experiment whose id starts with ID */
    if (id && *id && id[strlen(id) - 1] == '*') {
        sel.prefix = id;
        sel.prefix_len = strlen(id) - 1;
    }
    char *home;
    struct db *db = cli_open_home(home_opt, &home);
    if (!db)
        return 1;
    struct errbuf e;
    int rc = 0;
    char **ids = NULL;
    int nids = 0;
    if (id && !all && !port && !sel.prefix) {
        /* one experiment, by its id or a unique prefix (an exact id wins), running or not */
        char *one = exp_resolve(db, id, 0, &e);
        if (!one)
            rc = cli_error("%s", e.msg);
        else {
            ids = xcalloc(1, sizeof *ids);
            ids[nids++] = one;
        }
    } else {
        nids = stop_candidates(db, &sel, &ids);
    }
    if (nids == 0 && rc == 0) {
        if (id)
            rc = cli_error("Id not correct: no experiment %s", id);
        else if (port)
            printf("There is no experiment running on port %d.\n", port);
        else
            printf("There is no experiment running.\n");
    } else if (!id && !all && !port && nids > 1) {
        rc = cli_error("Found %d running experiments: give an id, or use --all", nids);
    }
    /* each one stopped, the next after a failed one too */
    int failed = 0;
    for (int i = 0; i < nids; i++) {
        if (rc == 0 && cli_stop_experiment(db, home, ids[i], 0) != 0)
            failed = 1;
        free(ids[i]);
    }
    rc = rc ? rc : failed;
    free(ids);
    free(home);
    db_close(db);
    return rc;
}

const struct cli_cmd cmd_stop = {
    NULL, "stop", "nnictl stop [ID] [--all] [--port P]", cmd_stop_fn,
    "Stops experiments: the one given, the only running one, every one (--all), the one on "
    "--port, or those whose id starts with ID ('ID*'). Idempotent: no process is left and the "
    "port is free.",
    stop_opts};
