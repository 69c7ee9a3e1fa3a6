/* rest.c: what the nnictl commands that talk to a running experiment share: resolve
 * the experiment, check that its api runs and answers, REST calls with JSON. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/json.h"

int cli_target_open(struct cli_target *t, const char *home_opt, const char *id_arg, int need_running)
{
    memset(t, 0, sizeof *t);
    t->db = cli_open_home(home_opt, &t->home);
    if (!t->db)
        return 1;
    struct errbuf e;
    t->id = exp_resolve(t->db, id_arg, 0, &e);
    if (!t->id) {
        cli_error("%s", e.msg);
        cli_target_close(t);
        return 1;
    }
    if (exp_load(t->db, t->id, &t->x, &e) <= 0) {
        cli_error("experiment %s: %s", t->id, e.msg);
        cli_target_close(t);
        return 1;
    }
    t->loaded = 1;
    if (!need_running)
        return 0;
    if (!cli_api_alive(&t->x)) {
        cli_error("Experiment %s is not running. Start it with: nnictl resume %s", t->id, t->id);
        cli_target_close(t);
        return 1;
    }
    /* NNI's check: /check-status answers (cli_http has its own timeouts) */
    if (cli_http(&t->x, "GET", "/check-status", NULL, NULL) != 200) {
        cli_error("Restful server is not running: experiment %s (api pid %d) does not answer on port %d", t->id,
                  t->x.api_pid, t->x.port);
        cli_target_close(t);
        return 1;
    }
    return 0;
}

void cli_target_close(struct cli_target *t)
{
    if (t->loaded)
        exp_clear(&t->x);
    free(t->id);
    free(t->home);
    db_close(t->db);
    memset(t, 0, sizeof *t);
}

char *cli_error_of(int code, const char *body)
{
    if (code < 0)
        return xstrdup("no answer from the api (timeout or connection refused)");
    cJSON *j = body ? cJSON_Parse(body) : NULL;
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "error");
    char *s = cJSON_IsString(msg) ? xasprintf("%s (HTTP %d)", msg->valuestring, code)
                                  : xasprintf("HTTP %d%s%.200s", code, body && *body ? ": " : "", body ? body : "");
    cJSON_Delete(j);
    return s;
}

void cli_print_indent4(const cJSON *j)
{
    char *s = json_print_python(j, 0, ": ");
    puts(s);
    free(s);
}

void cli_nni_times(cJSON *j)
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

void cli_print_nni(const cJSON *j)
{
    char *s = json_print_python(j, 1, ":");
    puts(s);
    free(s);
}
