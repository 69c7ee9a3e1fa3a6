/* usage.h: a command line from one table: the usage text, what the command does and
 * its getopt_long options. nnictl's commands (cli/cli.h's cli_cmd) and trialq's roles
 * (`trialq api`, `trialq worker`: struct role) both print their help from it, and the
 * man pages (cli/mangen.c) are made from the same tables. */
#ifndef TRIALQ_USAGE_H
#define TRIALQ_USAGE_H

#include <getopt.h>
#include <stdio.h>

/* The name of option o's argument as the usage text spells it ("--type json|csv" gives
 * "json|csv"; "[--debug[=true|false]]" gives "[=true|false]" for an optional one), DIR
 * for --home and --experiment_dir, else ARG ("[=ARG]" for an optional one); NULL for
 * an option without one. buf (n bytes) may hold the answer. */
const char *usage_opt_arg(const char *usage, const struct option *o, char *buf, size_t n);
/* "--name", then " ARG" (or "[=ARG]" for an optional one), as usage_opt_arg names it;
 * into buf (n bytes), which it returns. */
const char *usage_opt_text(const char *usage, const struct option *o, char *buf, size_t n);
/* Form i (0, 1, ...) of a usage text, its line i: where it starts, and *len; NULL
 * past the last. */
const char *usage_form(const char *usage, int i, int *len);
/* "usage: " and the usage text (a further line of it, another form of the command, as
 * "   or: LINE"), a blank line, the summary, a blank line, "options:" and each option,
 * one a line. */
void usage_print(FILE *f, const char *usage, const char *summary, const struct option *opts);

/* A role of the trialq binary (`trialq api`, `trialq worker`): its help, its options and
 * its line in trialq(1) from one table. */
struct role {
    const char *usage;         /* one line a form: "trialq api --experiment ID [...]" */
    const char *summary;       /* what it does */
    const char *shortopts;     /* getopt_long's short options */
    const struct option *opts; /* getopt_long's table (NULL: none) */
    void (*more)(FILE *f);     /* may be NULL: lines the usage adds (the platforms) */
};
/* Parses argv (argv[0] the role's name) with r's table, calling set(ctx, val, optarg)
 * for each option in turn. 0; or 2 after role_usage, when an option is not r's or set
 * returns -1. */
int role_getopt(const struct role *r, int argc, char **argv, int (*set)(void *ctx, int val, char *arg), void *ctx);
/* r's usage, summary and options on stderr (a command line it cannot run). Returns 2. */
int role_usage(const struct role *r);

#endif
