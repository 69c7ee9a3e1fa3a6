/* update.c: nnictl update searchspace | concurrency | duration | trialnum, as NNI does
 * it: GET /experiment, set profile.params[<key>], PUT /experiment?update_type=<T> with
 * the whole profile. The api validates again and applies it at once. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

struct update {
    const char *name;        /* in the messages: "Update <name> success!" */
    const char *key;         /* params key */
    const char *update_type;
    const struct cli_cmd *cmd;
};

/* NNI's validate_digit: a plain digit string in [lo, hi]. */
static int parse_digits(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t v = 0;
    if (!*s)
        return -1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > hi)
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* NNI's parse_time: <digits><s|m|h|d> -> seconds. */
static int parse_time(const char *s, int64_t *out)
{
    size_t n = strlen(s);
    if (!n || !strchr("smhd", s[n - 1])) {
        cli_error("value (%s): the unit of time could only from {s, m, h, d}", s);
        return -1;
    }
    char *num = xstrndup(s, n - 1);
    int64_t v;
    int bad = parse_digits(num, 1, 999999999, &v);
    free(num);
    if (bad) {
        cli_error("value (%s): time format error! (e.g. 30m, 2h, 1d)", s);
        return -1;
    }
    static const int mult[] = {['s'] = 1, ['m'] = 60, ['h'] = 3600, ['d'] = 86400};
    *out = v * mult[(unsigned char)s[n - 1]];
    return 0;
}

/* GET the profile, set the value, PUT it back. 0 ok; else prints why. */
static int put_profile(const struct cli_target *t, const struct update *u, cJSON *value)
{
    char *body = NULL;
    int code = cli_http(&t->x, "GET", "/experiment", NULL, &body);
    cJSON *profile = code == 200 ? cJSON_Parse(body) : NULL;
    cJSON *params = cJSON_GetObjectItemCaseSensitive(profile, "params");
    int rc = 1;
    if (!cJSON_IsObject(params)) {
        char *why = cli_error_of(code, body);
        cli_error("Update %s failed! GET /experiment: %s", u->name, why);
        free(why);
        cJSON_Delete(value);
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(params, u->key);
    cJSON_AddItemToObject(params, u->key, value);
    char *req = cJSON_PrintUnformatted(profile);
    char *path = xasprintf("/experiment?update_type=%s", u->update_type);
    free(body);
    body = NULL;
    code = cli_http(&t->x, "PUT", path, req, &body);
    free(req);
    free(path);
    if (code == 200) {
        printf("Update %s success!\n", u->name);
        rc = 0;
    } else {
        char *why = cli_error_of(code, body);
        cli_error("Update %s failed! %s", u->name, why);
        free(why);
    }
out:
    cJSON_Delete(profile);
    free(body);
    return rc;
}

static const struct option update_opts[] = {
    {"value", required_argument, NULL, 'v'}, {"filename", required_argument, NULL, 'f'},
    {"home", required_argument, NULL, 'H'},  {NULL, 0, NULL, 0},
};
static int run_update(int argc, char **argv, const struct update *u)
{
    const char *home_opt = NULL, *value = NULL, *file = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "v:f:H:", update_opts, NULL)) != -1) {
        switch (c) {
        case 'v': value = optarg; break;
        case 'f': file = optarg; break;
        case 'H': home_opt = optarg; break;
        default: return cli_error("usage: %s", u->cmd->usage);
        }
    }
    int is_ss = strcmp(u->update_type, "SEARCH_SPACE") == 0;
    /* the value is checked before anything else, as NNI does */
    cJSON *v = NULL;
    if (is_ss) {
        if (!file)
            return cli_error("the following arguments are required: --filename/-f");
        struct stat st;
        if (stat(file, &st) < 0)
            return cli_error("%s is not a valid file path", file);
        size_t len;
        char *text = read_file(file, &len);
        v = text ? cJSON_ParseWithLength(text, len) : NULL;
        free(text);
        if (!cJSON_IsObject(v)) {
            cJSON_Delete(v);
            return cli_error("%s: the search space must be a JSON object", file);
        }
    } else {
        if (!value)
            return cli_error("the following arguments are required: --value/-v");
        int64_t n;
        if (strcmp(u->update_type, "MAX_EXEC_DURATION") == 0) {
            if (parse_time(value, &n) < 0)
                return 1;
        } else {
            int64_t hi = strcmp(u->update_type, "TRIAL_CONCURRENCY") == 0 ? 1000 : 999999999;
            if (parse_digits(value, 1, hi, &n) < 0)
                return cli_error("value (%s) must be a digit from 1 to %lld", value, (long long)hi);
        }
        v = cJSON_CreateNumber((double)n);
    }
    struct cli_target t;
    if (cli_target_open(&t, home_opt, optind < argc ? argv[optind] : NULL, 1) != 0) {
        cJSON_Delete(v);
        return 1;
    }
    int rc = put_profile(&t, u, v);
    cli_target_close(&t);
    return rc;
}

static const struct update u_searchspace = {"searchSpace", "searchSpace", "SEARCH_SPACE", &cmd_update_searchspace};
static const struct update u_concurrency = {"concurrency", "trialConcurrency", "TRIAL_CONCURRENCY",
                                            &cmd_update_concurrency};
static const struct update u_duration = {"duration", "maxExperimentDuration", "MAX_EXEC_DURATION",
                                         &cmd_update_duration};
static const struct update u_trialnum = {"trialnum", "maxTrialNumber", "MAX_TRIAL_NUM", &cmd_update_trialnum};

static int cmd_searchspace_fn(int argc, char **argv) { return run_update(argc, argv, &u_searchspace); }
static int cmd_concurrency_fn(int argc, char **argv) { return run_update(argc, argv, &u_concurrency); }
static int cmd_duration_fn(int argc, char **argv) { return run_update(argc, argv, &u_duration); }
static int cmd_trialnum_fn(int argc, char **argv) { return run_update(argc, argv, &u_trialnum); }

const struct cli_cmd cmd_update_searchspace = {
    "update", "searchspace", "nnictl update searchspace [ID] --filename FILE", cmd_searchspace_fn,
    "Replaces the search space of a running experiment.",
    update_opts};
const struct cli_cmd cmd_update_concurrency = {
    "update", "concurrency", "nnictl update concurrency [ID] --value N", cmd_concurrency_fn,
    "Sets trialConcurrency of a running experiment.",
    update_opts};
const struct cli_cmd cmd_update_duration = {
    "update", "duration", "nnictl update duration [ID] --value 30m|2h|1d", cmd_duration_fn,
    "Sets maxExperimentDuration of a running experiment.",
    update_opts};
const struct cli_cmd cmd_update_trialnum = {
    "update", "trialnum", "nnictl update trialnum [ID] --value N", cmd_trialnum_fn,
    "Sets maxTrialNumber of a running experiment.",
    update_opts};
