/* mangen.c: `trialq-mangen nnictl|trialq` prints the man page (roff) of nnictl(1) or
 * trialq(1) from the tables `nnictl --help` and trialq's roles print their help from
 * (cli_commands, cli_roles: common/usage.h): the build runs it, so the pages cannot drift from the help texts. Not
 * installed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/help.h"

/* s with roff's specials escaped: '-' as \-, '\' as \e, a leading '.' or '\'' guarded. */
static void roff(const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", stdout);
    for (; *s; s++) {
        if (*s == '-')
            fputs("\\-", stdout);
        else if (*s == '\\')
            fputs("\\e", stdout);
        else
            putchar(*s);
    }
}

static void line(const char *s)
{
    roff(s);
    putchar('\n');
}

static void header(const char *name, const char *upper, const char *what)
{
    printf(".TH %s 1 \"\" \"trialq %s\" \"User Commands\"\n.SH NAME\n", upper, TRIALQ_VERSION);
    printf("%s \\- ", name);
    line(what);
}

static const char *const files_section[] = {
    "~/nni-experiments/trialq.db",
    "Every experiment, trial and metric of the home (SQLite). $NNI_HOME or --home moves the home.",
    "~/nni-experiments/ID/",
    "An experiment's directory: its logs (log/) and its trials' directories (trials/).",
    TRIALQ_DATA_DIR "/",
    "The web UI, the trial SDK (python/nni, used when the nni package is not installed) and NNI's launcher "
    "shim (launcher/nni_node).",
    TRIALQ_PREFIX "/lib/systemd/system/, " TRIALQ_PREFIX "/lib/systemd/user/",
    "trialq-api@.service, trialq-worker@.service and trialq.target (the experiment id is the instance "
    "name), installed disabled.",
};

static void files(void)
{
    printf(".SH FILES\n");
    for (size_t i = 0; i + 1 < sizeof files_section / sizeof files_section[0]; i += 2) {
        printf(".TP\n.I ");
        line(files_section[i]);
        line(files_section[i + 1]);
    }
}

/* ".br", then "Options: --a ARG, --b." of a command or role whose usage text is usage */
static void options(const char *usage, const struct option *opts)
{
    if (!opts || !opts->name)
        return;
    printf(".br\nOptions:");
    char buf[64];
    for (const struct option *o = opts; o->name; o++) {
        const char *arg = usage_opt_arg(usage, o, buf, sizeof buf);
        printf("%s \\fB\\-\\-", o == opts ? "" : ",");
        roff(o->name);
        printf("\\fR");
        if (arg) {
            printf(arg[0] == '[' ? "\\fI" : " \\fI");
            roff(arg);
            printf("\\fR");
        }
    }
    printf(".\n");
}

static void command(const struct cli_cmd *c)
{
    printf(".TP\n.B ");
    line(c->usage + strlen("nnictl "));
    line(c->summary);
    options(c->usage, c->opts);
}

/* The forms of a role's usage text from form `from` on, a line each (after `font`: ""
 * or ".B "), between .br lines. */
static void forms(const char *usage, int from, const char *font)
{
    int len;
    const char *form;
    for (int i = from; (form = usage_form(usage, i, &len)); i++) {
        char *text = xstrndup(form, (size_t)len);
        printf("%s%s", i == from ? "" : ".br\n", font);
        line(text);
        free(text);
    }
}

static void nnictl_page(void)
{
    header("nnictl", "NNICTL", "the command line of trialq, an NNI-compatible hyperparameter-tuning experiment manager");
    printf(".SH SYNOPSIS\n.B nnictl\n.I COMMAND\n.RI [ ARGUMENTS ]\n.br\n.B nnictl \\-\\-version\n"
           ".br\n.B nnictl\n.RI [ COMMAND ] \" \\-\\-help\"\n.SH DESCRIPTION\n");
    line("nnictl creates, runs, stops, resumes and inspects hyperparameter-tuning experiments with NNI's "
         "commands, NNI's YAML config and NNI's trial API. Every experiment, trial and metric is kept in one "
         "SQLite database, and any process may be killed at any moment without losing anything.");
    printf(".PP\n");
    line("An ID may be abbreviated to a unique prefix, and left out when one experiment runs. Every command that "
         "reads the database takes --home DIR: the trialq home, the folder of trialq.db and of the experiments' "
         "directories (default $NNI_HOME, else ~/nni-experiments).");
    printf(".SH COMMANDS\n");
    for (int i = 0; cli_commands[i]; i++)
        command(cli_commands[i]);
    printf(".SH OPTIONS\n.TP\n.B \\-\\-help\n");
    line("After any command: what it does and its options. Alone: every command.");
    printf(".TP\n.B \\-\\-version\n");
    line("The version of trialq.");
    printf(".SH ENVIRONMENT\n.TP\n.B NNI_HOME\n");
    line("The home, when --home is not given (default ~/nni-experiments).");
    printf(".TP\n.B TRIALQ_PYTHON\n");
    line("The Python that runs NNI's dispatcher for customized and Python built-in algorithms (default python3).");
    files();
    printf(".SH SEE ALSO\n.BR trialq (1)\n");
}

static void trialq_page(void)
{
    header("trialq", "TRIALQ", "the processes of an NNI-compatible hyperparameter-tuning experiment manager");
    printf(".SH SYNOPSIS\n");
    for (int i = 0; cli_roles[i]; i++) {
        printf("%s", i ? ".br\n" : "");
        forms(cli_roles[i]->usage, 0, "");
    }
    printf(".SH DESCRIPTION\n");
    line("trialq is one program with several roles; run as nnictl (a link to it) it is the command line, "
         "nnictl(1). Its roles are started by nnictl and by the systemd units, not by hand:");
    for (int i = 0; cli_roles[i]; i++) {
        const struct role *r = cli_roles[i];
        int len;
        printf(".TP\n");
        forms(r->usage, 0, ".B ");
        if (usage_form(r->usage, 1, &len))
            printf(".br\n");
        line(r->summary);
        options(r->usage, r->opts);
    }
    printf(".PP\n");
    line("trialq-supervise, installed beside trialq, watches each trial of the local platform.");
    files();
    printf(".SH SEE ALSO\n.BR nnictl (1)\n");
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "nnictl") == 0)
        nnictl_page();
    else if (argc == 2 && strcmp(argv[1], "trialq") == 0)
        trialq_page();
    else {
        fprintf(stderr, "usage: trialq-mangen nnictl|trialq\n");
        return 2;
    }
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
}
