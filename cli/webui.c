/* webui.c: nnictl webui url [ID]: where the running experiment's web UI and REST API
 * listen. (NNI v3 prints an empty list; the address is more useful.) */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int cmd_url_fn(int argc, char **argv)
{
    const char *home_opt = NULL;
    if (cli_home_trial_opts(argc, argv, &cmd_webui_url, &home_opt, NULL))
        return 1;
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    int rc = 0;
    if (!cli_api_alive(&t.x)) {
        rc = cli_error("Experiment %s is not running: it has no web UI now (nnictl view %s serves a stopped one)",
                       t.id, t.id);
    } else {
        /* 0.0.0.0 is where it listens, not an address to open */
        const char *host = strcmp(t.x.bind_address, "0.0.0.0") == 0 || strcmp(t.x.bind_address, "::") == 0
                               ? host_name() : t.x.bind_address;
        int v6 = strchr(host, ':') != NULL;
        printf("Web UI url: http://%s%s%s:%d%s\n", v6 ? "[" : "", host, v6 ? "]" : "", t.x.port,
               t.x.url_prefix ? t.x.url_prefix : "");
    }
    cli_target_close(&t);
    return rc;
}

const struct cli_cmd cmd_webui_url = {
    "webui", "url", "nnictl webui url [ID]", cmd_url_fn,
    "Prints where the running experiment's web UI and REST API listen.",
    cli_opts_trial_home + 1};
