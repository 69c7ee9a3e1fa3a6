/* rerun.c: nnictl trial rerun [ID] (--trial_id T ... | --failed) — trialq's answer to
 * "no retry of failed trials": each named trial, or every FAILED one, runs again as a
 * new trial with the same parameters (parameter_source "rerun"). Reruns are trials:
 * they count against maxTrialNumber, and when the budget is used up the api refuses
 * with NNI's "reach maxTrialNum" (raise it with nnictl update trialnum). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* POST /trial-jobs/<id>/rerun. 0 ok, 1 failed, 2 the budget is used up. */
static int rerun_one(const struct cli_target *t, const char *trial_id)
{
    char *path = xasprintf("/trial-jobs/%s/rerun", trial_id);
    char *body = NULL;
    int code = cli_http(&t->x, "POST", path, "", &body);
    free(path);
    int rc = 0;
    cJSON *j = code == 200 ? cJSON_Parse(body) : NULL;
    const cJSON *nid = cJSON_GetObjectItemCaseSensitive(j, "trialJobId");
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(j, "sequenceId");
    if (cJSON_IsString(nid) && cJSON_IsNumber(seq)) {
        printf("Trial %s rerun as trial %s (sequence %d).\n", trial_id, nid->valuestring, seq->valueint);
    } else {
        char *why = cli_error_of(code, body);
        rc = strstr(why, "reach maxTrialNum") ? 2 : 1;
        cli_error("Rerun of trial %s failed: %s%s", trial_id, why,
                  rc == 2 ? "; raise the budget with: nnictl update trialnum --value N" : "");
        free(why);
    }
    cJSON_Delete(j);
    free(body);
    return rc;
}

static const struct option rerun_opts[] = {
    {"trial_id", required_argument, NULL, 'T'}, {"failed", no_argument, NULL, 'F'},
    {"home", required_argument, NULL, 'H'},     {NULL, 0, NULL, 0},
};
static int cmd_rerun_fn(int argc, char **argv)
{
    const char *home_opt = NULL;
    char **ids = NULL;
    int nids = 0, failed = 0, c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "T:FH:", rerun_opts, NULL)) != -1) {
        switch (c) {
        case 'T':
            ids = xrealloc(ids, sizeof *ids * (size_t)(nids + 1));
            ids[nids++] = xstrdup(optarg);
            break;
        case 'F': failed = 1; break;
        case 'H': home_opt = optarg; break;
        default:
            for (int i = 0; i < nids; i++)
                free(ids[i]);
            free(ids);
            return cli_error("usage: %s", cmd_trial_rerun.usage);
        }
    }
    const char *exp_arg = optind < argc ? argv[optind] : NULL;
    struct cli_target t;
    int rc = 1;
    /* `nnictl trial rerun TRIAL`: a lone positional that names a trial, not an experiment */
    if (exp_arg && !failed && nids == 0) {
        struct db *db = cli_open_home(home_opt, NULL);
        char *exp_of = NULL;
        struct errbuf e;
        if (db && trial_experiment_of(db, exp_arg, &exp_of, &e) == 1) {
            ids = xrealloc(ids, sizeof *ids);
            ids[nids++] = xstrdup(exp_arg);
            exp_arg = NULL;
        }
        free(exp_of);
        db_close(db);
    }
    if (!failed && nids == 0) {
        cli_error("give the trials to rerun: --trial_id T (repeatable) or --failed");
        goto out;
    }
    if (cli_target_open(&t, home_opt, exp_arg, 1) != 0)
        goto out;
    if (failed) {
        struct errbuf e;
        struct id_list l;
        if (trials_with_status(t.db, t.id, "FAILED", &l, &e) == 0) {
            ids = xrealloc(ids, sizeof *ids * (size_t)(nids + l.n + 1));
            for (int i = 0; i < l.n; i++)
                ids[nids++] = xstrdup(l.ids[i]);
            id_list_free(&l);
        }
        if (nids == 0) {
            printf("No FAILED trial in experiment %s.\n", t.id);
            rc = 0;
        }
    }
    for (int i = 0; i < nids; i++) {
        int r = rerun_one(&t, ids[i]);
        rc = r ? 1 : (i == 0 ? 0 : rc);
        if (r == 2)
            break; /* the others would be refused the same way */
    }
    cli_target_close(&t);
out:
    for (int i = 0; i < nids; i++)
        free(ids[i]);
    free(ids);
    return rc;
}

const struct cli_cmd cmd_trial_rerun = {
    "trial", "rerun", "nnictl trial rerun [ID] (--trial_id TRIAL ... | --failed | TRIAL)", cmd_rerun_fn,
    "Runs trials again as new trials with the same parameters (each named one, or every "
    "FAILED one); their results go to the tuner and they count against maxTrialNumber.",
    rerun_opts};
