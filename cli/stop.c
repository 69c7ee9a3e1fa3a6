/* stop.c: nnictl stop [id | --all | --port P]: idempotent; every recorded process and
 * process group is gone and the port is free when it returns. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int cmd_stop_fn(int argc, char **argv)
{
    static const struct option opts[] = {
        {"port", required_argument, NULL, 'p'}, {"all", no_argument, NULL, 'a'},
        {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
    };
    const char *home_opt = NULL;
    int port = 0, all = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "p:aH:", opts, NULL)) != -1) {
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
    /* NNI: "ID*" stops every running experiment whose id starts with ID */
    int glob = id && *id && id[strlen(id) - 1] == '*';
    size_t glob_len = glob ? strlen(id) - 1 : 0;
    char *home;
    struct db *db = cli_open_db(home_opt, &home);
    if (!db)
        return 1;
    struct errbuf e;
    int rc = 0, n = 0;
    /* candidates: experiments with a live api, or left half-stopped by a crash */
    struct id_list every = {0};
    exp_ids(db, 0, &every, &e);
    char **ids = NULL;
    int nids = 0;
    for (int i = 0; i < every.n; i++) {
        struct experiment x;
        if (exp_load(db, every.ids[i], &x, &e) != 1)
            continue;
        const char *xid = x.id;
        int alive = proc_alive((pid_t)x.api_pid, (uint64_t)x.api_start);
        int unfinished = strcmp(x.status, "STOPPED") != 0 && strcmp(x.status, "DONE") != 0 &&
                         strcmp(x.status, "ERROR") != 0;
        int match;
        if (all)
            match = alive || unfinished;
        else if (port)
            match = alive && x.port == port;
        else if (glob)
            match = alive && strncmp(xid, id, glob_len) == 0;
        else if (id)
            match = str_starts(xid, id);
        else
            match = alive;
        if (match) {
            ids = xrealloc(ids, sizeof *ids * (size_t)(nids + 1));
            ids[nids++] = xstrdup(xid);
        }
        exp_clear(&x);
    }
    id_list_free(&every);
    if (id && !all && !port && !glob) {
        /* an exact id wins over a prefix of others */
        for (int i = 0; i < nids; i++)
            if (strcmp(ids[i], id) == 0) {
                for (int k = 0; k < nids; k++)
                    if (k != i)
                        free(ids[k]);
                ids[0] = ids[i];
                nids = 1;
                break;
            }
        if (nids > 1)
            rc = cli_error("Id %s is ambiguous: %d experiments start with it", id, nids);
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
    } else if (rc == 0) {
        for (int i = 0; i < nids; i++) {
            if (cli_stop_experiment(db, home, ids[i], 0) != 0)
                rc = 1;
            n++;
        }
    }
    for (int i = 0; i < nids; i++)
        free(ids[i]);
    free(ids);
    free(home);
    db_close(db);
    return rc;
}

const struct cli_cmd cmd_stop = {NULL, "stop", "nnictl stop [ID] [--all] [--port P]", cmd_stop_fn};
