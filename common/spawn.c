/* spawn.c: `trialq worker` started as a child (spawn.h). */
#include "common/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/common.h"

#define MAX_EXTRA 8

pid_t worker_spawn(const char *platform, const char *exp_id, const char *home, int flags, const char *const *extra)
{
    /* the argument vector is made before fork: the child only execs */
    const char *argv[8 + MAX_EXTRA + 1] = {"trialq", "worker", "--platform", platform, "--experiment", exp_id,
                                           "--home", home};
    int n = 8;
    for (int i = 0; extra && extra[i] && i < MAX_EXTRA; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    char *exe = self_exe_path();
    pid_t pid = fork();
    if (pid == 0) {
        if (flags & SPAWN_BLOCK_USR1) {
            sigset_t usr1;
            sigemptyset(&usr1);
            sigaddset(&usr1, SIGUSR1);
            sigprocmask(SIG_SETMASK, &usr1, NULL);
        }
        if (flags & SPAWN_QUIET) {
            int nfd = open("/dev/null", O_RDWR | O_CLOEXEC);
            if (nfd >= 0)
                dup2(nfd, 1);
        }
        close_fds_from(3);
        fd_limit_restore();
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    free(exe);
    return pid;
}
