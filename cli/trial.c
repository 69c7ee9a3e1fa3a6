/* trial.c: nnictl trial ls | kill. */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "queue/queue.h"
#include "schema/nnijson.h"

struct ls_row {
    cJSON *json;
    double metric;
    int has_metric;
};

static int by_metric_desc(const void *a, const void *b)
{
    const struct ls_row *x = a, *y = b;
    return (x->metric < y->metric) - (x->metric > y->metric);
}

static int by_metric_asc(const void *a, const void *b)
{
    return by_metric_desc(b, a);
}

/* NNI prints times as local "YYYY/MM/DD HH:MM:SS". */
static void rewrite_times(cJSON *j)
{
    static const char *const keys[] = {"startTime", "endTime"};
    for (int k = 0; k < 2; k++) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(j, keys[k]);
        if (cJSON_IsNumber(v)) {
            char buf[32];
            format_time_ms((int64_t)v->valuedouble, "%Y/%m/%d %H:%M:%S", buf, sizeof buf);
            cJSON_ReplaceItemInObject(j, keys[k], cJSON_CreateString(buf));
        }
    }
}

static int cmd_ls_fn(int argc, char **argv)
{
    static const struct option opts[] = {
        {"head", required_argument, NULL, 'h'}, {"tail", required_argument, NULL, 't'},
        {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
    };
    const char *home_opt = NULL;
    int head = 0, tail = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h:t:H:", opts, NULL)) != -1) {
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
    char *home;
    struct db *db = cli_open_db(home_opt, &home);
    if (!db)
        return 1;
    struct errbuf e;
    char *id = exp_resolve(db, optind < argc ? argv[optind] : NULL, 0, &e);
    if (!id) {
        free(home);
        db_close(db);
        return cli_error("%s", e.msg);
    }
    struct experiment x;
    exp_load(db, id, &x, &e);
    struct trial *ts = NULL;
    int n = 0;
    trials_all(db, id, &ts, &n, &e);
    struct ls_row *rows = xcalloc((size_t)n + 1, sizeof *rows);
    int m = 0;
    for (int i = 0; i < n; i++) {
        int has = strcmp(ts[i].status, "SUCCEEDED") == 0 && ts[i].has_final_metric;
        if ((head || tail) && !has) {
            trial_clear(&ts[i]);
            continue;
        }
        cJSON *j = nni_trial_job_json(db, &x, &ts[i]);
        rewrite_times(j);
        rows[m].json = j;
        rows[m].metric = ts[i].final_metric;
        rows[m].has_metric = has;
        m++;
        trial_clear(&ts[i]);
    }
    free(ts);
    int from = 0, to = m;
    if (head || tail) {
        /* NNI: head = the N highest final metrics, best first; tail = the N lowest,
         * lowest first */
        qsort(rows, (size_t)m, sizeof *rows, head ? by_metric_desc : by_metric_asc);
        to = (head ? head : tail) < m ? (head ? head : tail) : m;
    }
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < m; i++) {
        if (i >= from && i < to)
            cJSON_AddItemToArray(arr, rows[i].json);
        else
            cJSON_Delete(rows[i].json);
    }
    free(rows);
    cli_print_nni(arr);
    cJSON_Delete(arr);
    exp_clear(&x);
    free(id);
    free(home);
    db_close(db);
    return 0;
}

static int cmd_kill_fn(int argc, char **argv)
{
    const char *home_opt = NULL, *trial_id = NULL;
    if (cli_home_trial_opts(argc, argv, &cmd_trial_kill, &home_opt, &trial_id))
        return 1;
    if (!trial_id)
        return cli_error("the following arguments are required: --trial_id/-T");
    char *home;
    struct db *db = cli_open_db(home_opt, &home);
    if (!db)
        return 1;
    struct errbuf e;
    int rc = 0;
    char *id = exp_resolve(db, optind < argc ? argv[optind] : NULL, 0, &e);
    struct experiment x;
    memset(&x, 0, sizeof x);
    if (!id)
        rc = cli_error("%s", e.msg);
    else if (exp_load(db, id, &x, &e) <= 0 || !cli_api_alive(&x))
        rc = cli_error("Experiment %s is not running.", id);
    else {
        char *path = xasprintf("/trial-jobs/%s", trial_id);
        char *body = NULL;
        int code = cli_http(&x, "DELETE", path, NULL, &body);
        if (code != 200)
            rc = cli_error("kill trial %s: %s", trial_id, code < 0 ? "Restful server is not running" : body);
        else
            printf("%s", body);
        free(body);
        free(path);
    }
    exp_clear(&x);
    free(id);
    free(home);
    db_close(db);
    return rc;
}

const struct cli_cmd cmd_trial_ls = {"trial", "ls", "nnictl trial ls [ID] [--head N | --tail N]", cmd_ls_fn};
const struct cli_cmd cmd_trial_kill = {"trial", "kill", "nnictl trial kill [ID] --trial_id TRIAL", cmd_kill_fn};
