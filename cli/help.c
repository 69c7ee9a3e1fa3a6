/* help.c: what nnictl says about itself, all of it from the command table (cli_commands,
 * each command's usage, summary and getopt table, printed as common/usage.c prints
 * them): `nnictl ... --help`, the words bash completes (`nnictl __complete`,
 * contrib/bash-completion/nnictl) and the man pages (cli/mangen.c). Nothing here
 * repeats a command's name or options. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/help.h"
#include "common/common.h"
#include "common/usage.h"

void cli_print_help(FILE *f, const struct cli_cmd *c)
{
    usage_print(f, c->usage, c->summary, c->opts);
    fprintf(f, "  --help\n");
}

void cli_print_commands(FILE *f)
{
    fprintf(f, "usage: nnictl COMMAND ...\n\ncommands:\n");
    for (int i = 0; cli_commands[i]; i++)
        fprintf(f, "  %s\n", cli_commands[i]->usage);
    fprintf(f, "\n`nnictl COMMAND --help` says what a command does and lists its options;"
               " `nnictl --version` prints the version.\n");
}

/* ---------------- completion ---------------- */

/* The completion's input: the words after `nnictl`, the last one being completed. */
struct comp {
    int n;             /* words before the one being completed */
    char **w;          /* those words */
    const char *cur;   /* the word being completed (maybe "") */
};

static void put(const struct comp *k, const char *word)
{
    if (strncmp(word, k->cur, strlen(k->cur)) == 0)
        printf("%s\n", word);
}

static const struct option *find_opt(const struct cli_cmd *c, const char *word)
{
    if (strncmp(word, "--", 2) != 0 || strchr(word, '='))
        return NULL;
    for (const struct option *o = c->opts; o && o->name; o++)
        if (strcmp(o->name, word + 2) == 0)
            return o;
    return NULL;
}

/* The value of --home among the words, if any. */
static const char *home_word(const struct comp *k)
{
    for (int i = 0; i + 1 < k->n; i++)
        if (strcmp(k->w[i], "--home") == 0)
            return k->w[i + 1];
    return NULL;
}

/* The ids of the home's experiments; nothing when it has no database (none is made). */
static void put_ids(const struct comp *k)
{
    char *home = trialq_home(home_word(k));
    char *path = trialq_db_path(home);
    int exists = access(path, R_OK) == 0;
    free(path);
    free(home);
    if (!exists)
        return;
    struct db *db = cli_open_db(home_word(k), NULL);
    if (!db)
        return;
    struct id_list l = {0};
    struct errbuf e;
    if (exp_ids(db, 0, &l, &e) == 0)
        for (int i = 0; i < l.n; i++)
            put(k, l.ids[i]);
    id_list_free(&l);
    db_close(db);
}

/* An option's value: a file or folder (FILE, DIR, PATH), one of "a|b|c", else nothing. */
static void put_value(const struct comp *k, const struct cli_cmd *c, const struct option *o)
{
    char buf[64];
    const char *arg = usage_opt_arg(c->usage, o, buf, sizeof buf);
    if (strcmp(arg, "FILE") == 0 || strcmp(arg, "DIR") == 0) {
        printf("%s\n", CLI_COMPLETE_FILES);
        return;
    }
    if (!strchr(arg, '|'))
        return;
    char *dup = xstrdup(arg), *save = NULL;
    for (char *t = strtok_r(dup, "|", &save); t; t = strtok_r(NULL, "|", &save))
        put(k, t);
    free(dup);
}

/* Whether the command's first argument is an experiment id: ID or [ID] in its usage. */
static int takes_id(const struct cli_cmd *c)
{
    char *dup = xstrdup(c->usage), *save = NULL;
    int yes = 0;
    for (char *t = strtok_r(dup, " ", &save); t && !yes; t = strtok_r(NULL, " ", &save))
        yes = strcmp(t, "ID") == 0 || strcmp(t, "[ID]") == 0;
    free(dup);
    return yes;
}

/* The words after the command c (from word i on). */
static void complete_args(const struct comp *k, const struct cli_cmd *c, int i)
{
    int positional = 0;
    const struct option *want = NULL;
    for (; i < k->n; i++) {
        const struct option *o = find_opt(c, k->w[i]);
        if (want)
            want = NULL;
        else if (o && o->has_arg == required_argument)
            want = o;
        else if (!o && k->w[i][0] != '-')
            positional++;
    }
    if (want) {
        put_value(k, c, want);
    } else if (k->cur[0] == '-') {
        char word[80];
        for (const struct option *o = c->opts; o && o->name; o++) {
            snprintf(word, sizeof word, "--%s", o->name);
            put(k, word);
        }
        put(k, "--help");
    } else if (positional == 0 && takes_id(c)) {
        put_ids(k);
    }
}

int cli_complete(int argc, char **argv)
{
    if (argc < 2)
        return 0;
    struct comp k = {.n = argc - 2, .w = argv + 1, .cur = argv[argc - 1]};
    if (k.n == 0) {
        for (int i = 0; cli_commands[i]; i++) {
            const struct cli_cmd *c = cli_commands[i];
            /* a group once, at its first command */
            int first = 1;
            for (int j = 0; j < i && c->group; j++)
                if (cli_commands[j]->group && strcmp(cli_commands[j]->group, c->group) == 0)
                    first = 0;
            if (first)
                put(&k, c->group ? c->group : c->name);
        }
        put(&k, "--help");
        put(&k, "--version");
        return 0;
    }
    for (int i = 0; cli_commands[i]; i++) {
        const struct cli_cmd *c = cli_commands[i];
        if (!c->group && strcmp(k.w[0], c->name) == 0) {
            complete_args(&k, c, 1);
        } else if (c->group && strcmp(k.w[0], c->group) == 0) {
            if (k.n == 1)
                put(&k, c->name);
            else if (strcmp(k.w[1], c->name) == 0)
                complete_args(&k, c, 2);
        }
    }
    return 0;
}
