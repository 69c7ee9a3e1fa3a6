/* nnictl.c: the command table and the dispatch of both faces of the binary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "cli/cli.h"
#include "cli/help.h"
#include "workers/worker.h"

const struct cli_cmd *const cli_commands[] = {
    &cmd_create, &cmd_resume, &cmd_view, &cmd_stop,
    &cmd_experiment_list, &cmd_experiment_show, &cmd_experiment_status, &cmd_experiment_delete,
    &cmd_experiment_secrets, &cmd_experiment_importance,
    &cmd_trial_ls, &cmd_trial_kill, &cmd_trial_rerun,
    &cmd_experiment_export, &cmd_experiment_import, &cmd_experiment_save, &cmd_experiment_load,
    &cmd_update_searchspace, &cmd_update_concurrency, &cmd_update_duration, &cmd_update_trialnum,
    &cmd_top, &cmd_log_stdout, &cmd_log_stderr, &cmd_log_trial,
    &cmd_webui_url, &cmd_experiment_machines, &cmd_config_show, &cmd_platform_clean,
    &cmd_algo_list, &cmd_algo_show, &cmd_algo_register, &cmd_algo_reg, &cmd_algo_unregister, &cmd_algo_unreg,
    &cmd_launcher_path, &cmd_launcher_install,
    NULL,
};

static const struct role nnictl_role = {
    .usage = "trialq nnictl COMMAND ...",
    .summary = "The same as nnictl COMMAND ... (nnictl is a link to trialq).",
};
static const struct role version_role = {.usage = "trialq --version", .summary = "Prints the version."};

/* api_role and worker_role are beside the code that parses their options */
const struct role *const cli_roles[] = {&api_role, &worker_role, &nnictl_role, &version_role, NULL};

/* NNI commands that have no meaning for trialq, with what to do instead. */
static const struct {
    const char *name, *why, *tail;
} not_here[] = {
    /* with a tail: why, the platforms of the registry (workers/platforms.c), tail */
    {"trainingservice", "trialq's training services are built in (",
     ", and hybrid lists of them); NNI's Node.js service packages cannot be loaded"},
    {"package", "it was replaced by `nnictl algo` in NNI; see nnictl algo --help", NULL},
    {"ss_gen", "it generated search spaces from NNI annotations, which NNI 3 and trialq do not support "
               "(useAnnotation); write the search space in the config", NULL},
    {"jupyter-extension", "trialq has no Jupyter extension; its web UI is at the experiment's port", NULL},
    {"hello", "the bundled example is examples/quickstart (./quickstart.sh runs it)", NULL},
};

/* --help anywhere among a command's arguments (up to "--"), or -h as its only one
 * (some commands take -h for --head): its usage, on stdout, as argparse prints it. */
static int wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--help") == 0)
            return 1;
    return argc == 2 && strcmp(argv[1], "-h") == 0;
}

static int run(const struct cli_cmd *c, int argc, char **argv)
{
    if (wants_help(argc, argv)) {
        cli_print_help(stdout, c);
        return 0;
    }
    return c->fn(argc, argv);
}

/* `nnictl GROUP` alone or with --help/-h: the group's commands */
static int group_usage(const char *group, int help)
{
    int n = 0;
    for (int i = 0; cli_commands[i]; i++)
        if (cli_commands[i]->group && strcmp(cli_commands[i]->group, group) == 0) {
            if (n++ == 0) {
                if (!help)
                    fprintf(stderr, "ERROR: nnictl %s needs a command\n", group);
                fprintf(help ? stdout : stderr, "usage:\n");
            }
            fprintf(help ? stdout : stderr, "  %s\n", cli_commands[i]->usage);
        }
    return n == 0 ? -1 : help ? 0 : 2;
}

int nnictl_main(int argc, char **argv)
{
    if (argc < 2) {
        cli_print_commands(stderr);
        return 1;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-v") == 0) {
        printf("%s\n", TRIALQ_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        cli_print_commands(stdout);
        return 0;
    }
    if (strcmp(argv[1], "__complete") == 0) /* bash completion (contrib/bash-completion) */
        return cli_complete(argc - 1, argv + 1);
    int rc = -1;
    for (int i = 0; cli_commands[i] && rc < 0; i++) {
        const struct cli_cmd *c = cli_commands[i];
        if (!c->group && strcmp(argv[1], c->name) == 0)
            rc = run(c, argc - 1, argv + 1);
        else if (c->group && strcmp(argv[1], c->group) == 0 && argc >= 3 && strcmp(argv[2], c->name) == 0)
            rc = run(c, argc - 2, argv + 2);
    }
    if (rc < 0 && (argc == 2 || (argc == 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0))))
        rc = group_usage(argv[1], argc == 3);
    for (size_t i = 0; rc < 0 && i < sizeof not_here / sizeof not_here[0]; i++)
        if (strcmp(argv[1], not_here[i].name) == 0) {
            char *names = not_here[i].tail ? platform_names_dup(", ") : NULL;
            fprintf(stderr, "ERROR: nnictl %s is not supported by trialq: %s%s%s\n", argv[1], not_here[i].why,
                    names ? names : "", names ? not_here[i].tail : "");
            free(names);
            rc = 2;
        }
    if (rc < 0) {
        fprintf(stderr, "ERROR: unknown command: %s%s%s\n", argv[1], argc >= 3 ? " " : "", argc >= 3 ? argv[2] : "");
        cli_print_commands(stderr);
        rc = 2;
    }
    return rc;
}

int trialq_main(int argc, char **argv)
{
    if (argc >= 2) {
        if (strcmp(argv[1], "api") == 0) {
            api_set_create_hook(cli_create_posted); /* NNI's launcher: nnictl create's checks */
            return api_main(argc - 1, argv + 1);
        }
        if (strcmp(argv[1], "worker") == 0)
            return worker_main(argc - 1, argv + 1);
        if (strcmp(argv[1], "nnictl") == 0)
            return nnictl_main(argc - 1, argv + 1);
        if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
            printf("trialq %s\n", TRIALQ_VERSION);
            return 0;
        }
    }
    fprintf(stderr, "usage:\n");
    int len;
    const char *form;
    for (int i = 0; cli_roles[i]; i++)
        for (int j = 0; (form = usage_form(cli_roles[i]->usage, j, &len)); j++)
            fprintf(stderr, "  %.*s\n", len, form);
    fprintf(stderr, "(or run it as nnictl; man trialq)\n");
    return 2;
}
