/* children.c: the api keeps its workers alive: it starts them, reaps them, records
 * which died and why (an event row and the log), and restarts them with back-off. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api.h"
#include "api/dispatcher.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000

static void spawn(struct api *a, struct child *c)
{
    char *exe = self_exe_path();
    pid_t pid = fork();
    if (pid == 0) {
        /* SIGUSR1 (our wake-up) stays blocked across exec until the worker has its
         * signalfd: its default action would kill a worker still starting up */
        sigset_t usr1;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        sigprocmask(SIG_SETMASK, &usr1, NULL);
        close_fds_from(3);
        fd_limit_restore();
        execl(exe, "trialq", "worker", "--platform", c->platform, "--experiment", a->exp_id,
              "--home", a->home, "--log-level", a->log_level, "--parent-death", (char *)NULL);
        _exit(127);
    }
    free(exe);
    if (pid < 0) {
        log_error("cannot start a %s worker: %s", c->platform, strerror(errno));
        c->restart_at_ms = mono_ms() + c->backoff_ms;
        return;
    }
    c->pid = pid;
    c->started_ms = mono_ms();
    c->restart_at_ms = 0;
    /* the worker records itself in the process table (also when systemd starts it) */
    log_info("started %s worker, pid %d", c->platform, (int)pid);
}

void children_start(struct api *a)
{
    if (!a->spawn_workers)
        return;
    /* one worker per platform of the experiment (hybrid: one per listed platform) */
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(a->cfg->canonical, "trainingService");
    int n = cJSON_IsArray(ts) ? cJSON_GetArraySize(ts) : 1;
    a->children = xcalloc((size_t)n, sizeof *a->children);
    a->nchildren = 0;
    for (int i = 0; i < n; i++) {
        const char *name = a->exp.platform;
        if (cJSON_IsArray(ts)) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ts, i), "platform");
            if (!cJSON_IsString(p))
                continue;
            name = p->valuestring;
        }
        int dup = 0; /* a platform listed twice still gets one worker */
        for (int k = 0; k < a->nchildren && !dup; k++)
            dup = strcmp(a->children[k].platform, name) == 0;
        if (dup)
            continue;
        struct child *c = &a->children[a->nchildren++];
        c->platform = xstrdup(name);
        c->backoff_ms = BACKOFF_MIN_MS;
        spawn(a, c);
    }
}

void children_reap(struct api *a)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        dispatcher_reaped(a, pid, status); /* a customized tuner's process (api/dispatcher.c) */
        tensorboard_reaped(a, pid, status); /* a TensorBoard task (api/tensorboard.c) */
        for (int i = 0; i < a->nchildren; i++) {
            struct child *c = &a->children[i];
            if (c->pid != pid)
                continue;
            char why[96];
            if (WIFSIGNALED(status))
                snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(status));
            else
                snprintf(why, sizeof why, "exited with code %d", WEXITSTATUS(status));
            struct errbuf e;
            proc_ended_pid(a->db, (int)pid, why, &e);
            char *reason = xasprintf("%s worker pid %d %s", c->platform, (int)pid, why);
            db_event(a->db, &e, a->exp_id, NULL, "process", "RUNNING", "EXITED", reason);
            c->pid = 0;
            if (a->stopping) {
                log_info("%s", reason);
            } else {
                /* a worker that ran a good while gets a fresh back-off */
                if (mono_ms() - c->started_ms > 60000)
                    c->backoff_ms = BACKOFF_MIN_MS;
                log_warn("%s; restarting in %lld ms", reason, (long long)c->backoff_ms);
                c->restart_at_ms = mono_ms() + c->backoff_ms;
                c->backoff_ms = c->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : c->backoff_ms * 2;
            }
            free(reason);
        }
    }
}

void children_restart_due(struct api *a)
{
    if (a->stopping && a->stop_deadline_ms == 0)
        return;
    for (int i = 0; i < a->nchildren; i++) {
        struct child *c = &a->children[i];
        if (c->pid == 0 && c->restart_at_ms && mono_ms() >= c->restart_at_ms)
            spawn(a, c);
    }
}

void children_wake(struct api *a)
{
    for (int i = 0; i < a->nchildren; i++)
        if (a->children[i].pid > 0)
            kill(a->children[i].pid, SIGUSR1);
}

void children_stop(struct api *a)
{
    for (int i = 0; i < a->nchildren; i++) {
        struct child *c = &a->children[i];
        c->restart_at_ms = 0;
        if (c->pid > 0) {
            proc_terminate(c->pid, 0, 3000);
            int st;
            waitpid(c->pid, &st, WNOHANG);
            struct errbuf e;
            proc_ended_pid(a->db, (int)c->pid, "stopped", &e);
            c->pid = 0;
        }
        free(c->platform);
    }
    free(a->children);
    a->children = NULL;
    a->nchildren = 0;
}
