/* configshow.c: nnictl config show [ID]: the experiment's config as it is now (the
 * canonical v2 JSON with the values updates changed; secrets redacted), as NNI prints
 * the params of its latest profile. */
#include <getopt.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "config/config.h"
#include "schema/nnijson.h"

static int cmd_show_fn(int argc, char **argv)
{
    const char *home_opt = NULL;
    if (cli_home_trial_opts(argc, argv, &cmd_config_show, &home_opt, NULL))
        return 1;
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    cJSON *cfg = cJSON_Parse(t.x.config);
    cJSON *red = cfg ? config_redacted(cfg) : cJSON_CreateObject();
    cJSON_Delete(cfg);
    cJSON *profile = nni_profile_json(&t.x, red);
    cli_print_indent4(cJSON_GetObjectItemCaseSensitive(profile, "params"));
    cJSON_Delete(profile);
    cli_target_close(&t);
    return 0;
}

const struct cli_cmd cmd_config_show = {
    "config", "show", "nnictl config show [ID]", cmd_show_fn,
    "Prints the experiment's config as it is now (secrets redacted).",
    cli_opts_trial_home + 1};
