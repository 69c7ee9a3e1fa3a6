/* help.h: nnictl's help texts, completion and man pages, from the command table. */
#ifndef TRIALQ_CLI_HELP_H
#define TRIALQ_CLI_HELP_H

#include <stdio.h>

#include "cli/cli.h"

/* What `nnictl __complete` prints when the word is a file or folder name: the bash
 * completion completes it with compgen -f. */
#define CLI_COMPLETE_FILES "@files"

/* The argument's name of option o of command c as its usage line spells it ("FILE",
 * "json|csv"), DIR for --home, ARG for others; NULL for an option without one. buf (n
 * bytes) may hold the answer. */
const char *cli_opt_arg(const struct cli_cmd *c, const struct option *o, char *buf, size_t n);
/* `nnictl X --help`: usage, summary, options. */
void cli_print_help(FILE *f, const struct cli_cmd *c);
/* `nnictl --help`: every command's usage. */
void cli_print_commands(FILE *f);
/* `nnictl __complete WORD... CUR`: the words that may come at CUR after the WORDs (the
 * words after nnictl), one a line: commands, a group's commands, a command's options,
 * an option's values, the experiment ids of the home's database for an ID argument, or
 * CLI_COMPLETE_FILES. Always 0. */
int cli_complete(int argc, char **argv);

/* trialq's roles (`trialq ROLE ...`), for trialq's usage and its man page. */
struct cli_role {
    const char *usage, *summary;
};
extern const struct cli_role cli_roles[];
extern const int cli_nroles;

#endif
