/* nnictl.c: placeholder until the command table lands. */
#include <stdio.h>

#include "cli/cli.h"

int nnictl_main(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "nnictl: not yet\n");
    return 1;
}

int trialq_main(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "trialq: not yet\n");
    return 1;
}
