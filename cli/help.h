/* help.h: nnictl's help texts, completion and man pages, from the command table. */
#ifndef TRIALQ_CLI_HELP_H
#define TRIALQ_CLI_HELP_H

#include <stdio.h>

#include "cli/cli.h"
#include "common/usage.h"

/* What `nnictl __complete` prints when the word is a file or folder name: the bash
 * completion completes it with compgen -f. */
#define CLI_COMPLETE_FILES "@files"

/* `nnictl X --help`: usage, summary, options. */
void cli_print_help(FILE *f, const struct cli_cmd *c);
/* `nnictl --help`: every command's usage. */
void cli_print_commands(FILE *f);
/* `nnictl __complete WORD... CUR`: the words that may come at CUR after the WORDs (the
 * words after nnictl), one a line: commands, a group's commands, a command's options,
 * an option's values, the experiment ids of the home's database for an ID argument, or
 * CLI_COMPLETE_FILES. Always 0. */
int cli_complete(int argc, char **argv);

/* trialq's roles (`trialq ROLE ...`), for trialq's usage and its man page;
 * NULL-terminated (cli/nnictl.c). */
extern const struct role *const cli_roles[];

#endif
