/* machines.c: nnictl experiment machines [ID] — the machines of the experiment's
 * training service with their health and GPUs, read from the database (so it works
 * with the api stopped too). --json prints GET /api/v1/nni/machines' payload. Machines
 * that see one home directory (NFS) are noted once below the table: information, since
 * each machine acts only on the trials it placed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "config/config.h"
#include "schema/nnijson.h"

static const struct option machines_opts[] = {
    {"home", required_argument, NULL, 'H'}, {"json", no_argument, NULL, 'j'}, {NULL, 0, NULL, 0}};
static int cmd_machines_fn(int argc, char **argv)
{
    const char *home_opt = NULL;
    int c, json = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "H:j", machines_opts, NULL)) != -1) {
        if (c == 'H')
            home_opt = optarg;
        else if (c == 'j')
            json = 1;
        else
            return cli_error("usage: %s", cmd_experiment_machines.usage);
    }
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    cJSON *list = machines_json(t.db, &t.x, config_ts_machines);
    if (json) {
        cli_print_indent4(list);
    } else if (cJSON_GetArraySize(list) == 0) {
        printf("no machine recorded yet for experiment %s (platform %s)\n", t.x.id, t.x.platform);
    } else {
        printf("%-9s %-28s %-8s %-5s %s\n", "platform", "machine", "health", "gpus", "last error");
        struct strbuf notes, noted; /* one line per group of machines sharing a home */
        sb_init(&notes);
        sb_init(&noted);
        const cJSON *m;
        cJSON_ArrayForEach(m, list) {
            const cJSON *host = cJSON_GetObjectItemCaseSensitive(m, "host");
            const cJSON *port = cJSON_GetObjectItemCaseSensitive(m, "port");
            const cJSON *user = cJSON_GetObjectItemCaseSensitive(m, "user");
            const cJSON *err = cJSON_GetObjectItemCaseSensitive(m, "lastError");
            const cJSON *gerr = cJSON_GetObjectItemCaseSensitive(m, "gpuError");
            char name[160];
            snprintf(name, sizeof name, "%s%s%s%s%.0f", cJSON_IsString(user) ? user->valuestring : "",
                     cJSON_IsString(user) ? "@" : "", host->valuestring, cJSON_IsNumber(port) ? ":" : "",
                     cJSON_IsNumber(port) ? port->valuedouble : 0);
            if (!cJSON_IsNumber(port))
                name[strlen(name) - 1] = '\0'; /* the %.0f of no port */
            printf("%-9s %-28s %-8s %-5d %s\n", cJSON_GetObjectItemCaseSensitive(m, "platform")->valuestring, name,
                   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "healthy")) ? "healthy" : "DOWN",
                   cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "gpus")),
                   cJSON_IsString(err) ? err->valuestring : cJSON_IsString(gerr) ? gerr->valuestring : "");
            const cJSON *shared = cJSON_GetObjectItemCaseSensitive(m, "sharedHome"), *o;
            char key[200];
            snprintf(key, sizeof key, "\n%s\n", name);
            if (!cJSON_IsArray(shared) || (noted.buf && strstr(noted.buf, key)))
                continue;
            sb_printf(&notes, "note: %s", name);
            sb_printf(&noted, "%s", key);
            cJSON_ArrayForEach(o, shared) {
                sb_printf(&notes, "%s%s", o->next ? ", " : " and ", o->valuestring);
                sb_printf(&noted, "\n%s\n", o->valuestring);
            }
            sb_puts(&notes, " share one home directory (e.g. NFS): each machine acts only on the trials it"
                            " placed (docs/platforms/remote.md)\n");
        }
        if (notes.len)
            fputs(notes.buf, stdout);
        sb_free(&notes);
        sb_free(&noted);
    }
    cJSON_Delete(list);
    cli_target_close(&t);
    return 0;
}

const struct cli_cmd cmd_experiment_machines = {
    "experiment", "machines", "nnictl experiment machines [ID] [--json]", cmd_machines_fn,
    "Lists the machines of the experiment's training service with their health and GPUs; "
    "--json prints the REST payload.",
    machines_opts};
