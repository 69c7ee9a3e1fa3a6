/* trial.c: nnictl trial ls | kill. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/json.h"
#include "queue/queue.h"
#include "schema/nnijson.h"

static const struct option ls_opts[] = {
    {"head", required_argument, NULL, 'h'}, {"tail", required_argument, NULL, 't'},
    {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
};
static int cmd_ls_fn(int argc, char **argv)
{
    const char *home_opt = NULL;
    int head = 0, tail = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h:t:H:", ls_opts, NULL)) != -1) {
        switch (c) {
        case 'h': if (cli_int_arg("--head", optarg, INT_MIN, INT_MAX, &head)) return 1; if (head <= 0) head = -1; break;
        case 't': if (cli_int_arg("--tail", optarg, INT_MIN, INT_MAX, &tail)) return 1; if (tail <= 0) tail = -1; break;
        case 'H': home_opt = optarg; break;
        default: return cli_error("usage: %s", cmd_trial_ls.usage);
        }
    }
    if (head && tail)
        return cli_error("argument --tail: not allowed with argument --head");
    if (head < 0 || tail < 0)
        return cli_error("The number of requested data must be greater than 0.");
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    struct errbuf e;
    /* NNI: head = the N highest final metrics of the SUCCEEDED trials, best first; tail =
     * the N lowest, lowest first; else every trial by sequence. Printed as json.dumps
     * (indent 4) prints the whole list, read and printed a page at a time: constant
     * memory whatever the history. */
    int order = head ? 1 : tail ? -1 : 0, rc = 0;
    int64_t left = head ? head : tail ? tail : INT64_MAX, printed = 0;
    struct trial last;
    memset(&last, 0, sizeof last);
    while (left > 0) {
        struct trial *ts = NULL;
        int n = 0;
        if (trials_page(t.db, t.id, order, printed ? &last : NULL, left < 256 ? (int)left : 256, &ts, &n, &e) < 0) {
            rc = cli_error("%s", e.msg);
            break;
        }
        for (int i = 0; i < n; i++) {
            cJSON *j = nni_trial_job_json(t.db, &t.x, &ts[i]);
            cli_nni_times(j);
            char *text = json_print_python(j, 1, ":");
            cJSON_Delete(j);
            fputs(printed++ ? ",\n    " : "[\n    ", stdout);
            for (const char *c = text, *nl; *c; c = nl + 1) { /* one level deeper: inside the list */
                if (!(nl = strchr(c, '\n'))) {
                    fputs(c, stdout);
                    break;
                }
                fwrite(c, 1, (size_t)(nl - c), stdout);
                fputs("\n    ", stdout);
            }
            free(text);
            last.sequence = ts[i].sequence;
            last.final_metric = ts[i].final_metric;
            trial_clear(&ts[i]);
        }
        free(ts);
        left -= n;
        if (n < 256)
            break;
    }
    if (rc == 0)
        puts(printed ? "\n]" : "[]");
    cli_target_close(&t);
    return rc;
}

static int cmd_kill_fn(int argc, char **argv)
{
    const char *home_opt = NULL, *trial_id = NULL;
    if (cli_home_trial_opts(argc, argv, &cmd_trial_kill, &home_opt, &trial_id))
        return 1;
    if (!trial_id)
        return cli_error("the following arguments are required: --trial_id/-T");
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 0) != 0)
        return 1;
    int rc = 0;
    if (!cli_api_alive(&t.x))
        rc = cli_error("Experiment %s is not running.", t.id);
    else {
        char *path = xasprintf("/trial-jobs/%s", trial_id);
        char *body = NULL;
        int code = cli_http(&t.x, "DELETE", path, NULL, &body);
        if (code != 200)
            rc = cli_error("kill trial %s: %s", trial_id, code < 0 ? "Restful server is not running" : body);
        else
            printf("%s", body);
        free(body);
        free(path);
    }
    cli_target_close(&t);
    return rc;
}

const struct cli_cmd cmd_trial_ls = {
    "trial", "ls", "nnictl trial ls [ID] [--head N | --tail N]", cmd_ls_fn,
    "Lists the experiment's trials with their parameters and results.",
    ls_opts};
const struct cli_cmd cmd_trial_kill = {
    "trial", "kill", "nnictl trial kill [ID] --trial_id TRIAL", cmd_kill_fn,
    "Kills one trial of a running experiment.",
    cli_opts_trial_home};
