/* platform.c: nnictl platform clean --config FILE. NNI removes the caches that its v1
 * remote and pai platforms leave on the hosts; trialq's platforms whose trials run on this
 * host (the local one) keep nothing outside the experiment directory, and the others
 * have no cache to clean yet. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "config/config.h"

static const struct option clean_opts[] = {{"config", required_argument, NULL, 'c'}, {NULL, 0, NULL, 0}};
static int cmd_clean_fn(int argc, char **argv)
{
    const char *path = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:", clean_opts, NULL)) != -1) {
        if (c == 'c')
            path = optarg;
        else
            return cli_error("usage: %s", cmd_platform_clean.usage);
    }
    if (!path)
        return cli_error("the following arguments are required: --config/-c");
    struct stat st;
    if (stat(path, &st) < 0)
        return cli_error("Please set correct config path: %s does not exist.", path);
    struct exp_config *cfg;
    struct errbuf e;
    if (config_load(path, &cfg, &e) < 0)
        return cli_error("%s", e.msg);
    /* a platform whose trials run on this host keeps everything in the experiment
     * directory (a trait of its trainingService schema, config/schema_ts.c) */
    if (config_platform_trials_on_host(cfg->platform))
        printf("It does not need to clean %s platform: trialq keeps no cache outside the experiment"
               " directory.\n", cfg->platform);
    else
        printf("platform %s: clean up is not supported yet; there is nothing trialq knows to remove.\n",
               cfg->platform);
    config_free(cfg);
    return 0;
}

const struct cli_cmd cmd_platform_clean = {
    "platform", "clean", "nnictl platform clean --config FILE", cmd_clean_fn,
    "NNI's cache cleaning of its platforms; trialq's platforms keep no cache, so it only "
    "checks the config.",
    clean_opts};
