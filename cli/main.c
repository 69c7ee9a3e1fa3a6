/* main.c: one binary, many roles. Invoked as `nnictl` it is the NNI command line;
 * as `trialq <role>` it runs a process of the system (api, worker, supervise). */
#include <libgen.h>
#include <string.h>

#include "cli/cli.h"
#include "common/common.h"

int main(int argc, char **argv)
{
    const char *prog = basename(argv[0]);
    proc_title_init(argc, argv);
    if (strcmp(prog, "nnictl") == 0)
        return nnictl_main(argc, argv);
    return trialq_main(argc, argv);
}
