/* importance.c: nnictl experiment importance [ID] [--metric KEY] — which parameters
 * matter for the final metric, from the database (running or not), computed as GET
 * /webui/importance does (api/importance.c), printed as a table. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/importance.h"
#include "cli/cli.h"

static void print_table(const cJSON *j)
{
    const cJSON *metric = cJSON_GetObjectItemCaseSensitive(j, "metric");
    const cJSON *sample = cJSON_GetObjectItemCaseSensitive(j, "sample");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(j, "params");
    const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "optimizeMode"));
    printf("Importance of each parameter for %s%s%s (%s), by PED-ANOVA (top %g of the trials against all)\n",
           cJSON_IsString(metric) ? "the final metric's key \"" : "the default metric",
           cJSON_IsString(metric) ? metric->valuestring : "", cJSON_IsString(metric) ? "\"" : "", mode ? mode : "?",
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(j, "gamma")));
    printf("over %d trials: the most recent SUCCEEDED trials with a final metric, at most %d; importance sums to 1,\n"
           "divergence is the raw Pearson divergence (docs/webui.md, \"Importance\")\n\n",
           (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sample, "trials")),
           (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sample, "limit")));
    printf("%-30s %-12s %10s %12s %7s %6s\n", "PARAMETER", "TYPE", "IMPORTANCE", "DIVERGENCE", "TRIALS", "TOP");
    const cJSON *p;
    cJSON_ArrayForEach(p, params) {
        printf("%-30s %-12s %10.6f %12.6g %7d %6d\n",
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "name")),
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "type")),
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "importance")),
               cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "divergence")),
               (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "trials")),
               (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(p, "top")));
    }
}

static const struct option importance_opts[] = {
    {"home", required_argument, NULL, 'H'}, {"metric", required_argument, NULL, 'm'}, {NULL, 0, NULL, 0},
};
static int cmd_importance_fn(int argc, char **argv)
{
    const char *home_opt = NULL, *key = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "H:m:", importance_opts, NULL)) != -1) {
        if (c == 'H')
            home_opt = optarg;
        else if (c == 'm')
            key = optarg;
        else
            return cli_error("unknown option; usage: nnictl experiment importance [ID] [--metric KEY]");
    }
    if (argc - optind > 1)
        return cli_error("too many arguments; usage: nnictl experiment importance [ID] [--metric KEY]");
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    struct strbuf sb;
    sb_init(&sb);
    struct errbuf e;
    int rc = exp_importance_json(t.db, &t.x, key, -1, &sb, &e);
    if (rc == 0) {
        cJSON *j = cJSON_Parse(sb.buf);
        print_table(j);
        cJSON_Delete(j);
    } else {
        rc = cli_error("experiment %s: %s", t.id, e.msg);
    }
    sb_free(&sb);
    cli_target_close(&t);
    return rc;
}

const struct cli_cmd cmd_experiment_importance = {
    "experiment", "importance", "nnictl experiment importance [ID] [--metric KEY]", cmd_importance_fn,
    "Which parameters matter for the final metric (PED-ANOVA), as a table.",
    importance_opts};
