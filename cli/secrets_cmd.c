/* secrets_cmd.c: nnictl experiment secrets, the command (the secrets themselves are
 * cli/secrets.c's and common/secrets.c's). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/secrets.h"
#include "config/config.h"

static const struct option secrets_opts[] = {
    {"config", required_argument, NULL, 'c'}, {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0}};
/* nnictl experiment secrets ID --config FILE: the secret values of FILE (the config the
 * experiment was created from, or one with the same secrets) written as the
 * experiment's secrets file, for the placeholders its stored config holds: after a pack
 * was loaded (packs hold no secrets), or to change a password. */
static int cmd_secrets_fn(int argc, char **argv)
{
    const char *path = NULL, *home_opt = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:H:", secrets_opts, NULL)) != -1) {
        if (c == 'c')
            path = optarg;
        else if (c == 'H')
            home_opt = optarg;
        else
            return cli_error("usage: %s", cmd_experiment_secrets.usage);
    }
    if (!path)
        return cli_error("the following arguments are required: --config/-c");
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    struct exp_config *cfg = NULL;
    struct errbuf e;
    int rc = 1;
    cJSON *stored = cJSON_Parse(t.x.config), *list = NULL, *keep = cJSON_CreateArray();
    if (config_load(path, &cfg, &e) < 0) {
        cli_error("%s", e.msg);
        goto done;
    }
    list = config_secrets_split(cfg->canonical);
    /* only the values whose places the stored config keeps for them */
    const cJSON *s;
    cJSON_ArrayForEach(s, list) {
        const cJSON *at = stored, *step;
        cJSON_ArrayForEach(step, cJSON_GetObjectItemCaseSensitive(s, "path")) {
            if (cJSON_IsString(step))
                at = cJSON_GetObjectItemCaseSensitive(at, step->valuestring);
            else
                at = cJSON_IsArray(at) ? cJSON_GetArrayItem(at, (int)step->valuedouble) : NULL;
        }
        if (at && secrets_place_holds(at, s))
            cJSON_AddItemToArray(keep, cJSON_Duplicate(s, 1));
    }
    if (cJSON_GetArraySize(keep) == 0) {
        cli_error("%s: none of its secret values has a place in the stored config of %s", path, t.id);
        goto done;
    }
    if (secrets_store(t.home, t.id, keep, &e) < 0) {
        cli_error("%s", e.msg);
        goto done;
    }
    printf("%d secret value%s of %s written to its secrets file; they take effect at the next `nnictl resume %s`\n",
           cJSON_GetArraySize(keep), cJSON_GetArraySize(keep) == 1 ? "" : "s", t.id, t.id);
    rc = 0;
done:
    cJSON_Delete(keep);
    cJSON_Delete(list);
    cJSON_Delete(stored);
    config_free(cfg);
    cli_target_close(&t);
    return rc;
}

const struct cli_cmd cmd_experiment_secrets = {
    "experiment", "secrets", "nnictl experiment secrets [ID] --config FILE", cmd_secrets_fn,
    "Writes the secret values of FILE (the config the experiment was created from) to the "
    "experiment's secrets file again, after a load or on another host.",
    secrets_opts};
