/* children.c: the api keeps its workers alive: it starts them, reaps them, records
 * which died and why (an event row and the log), and restarts them with back-off. It
 * reaps every other child of the api too, handing each exit to whoever registered the
 * pid (children.h). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api.h"
#include "api/children.h"
#include "common/spawn.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000

struct child {
    pid_t pid;
    char *platform;
    int64_t started_ms;
    int64_t backoff_ms;
    int64_t restart_at_ms; /* 0 = running */
};

struct reaper {
    pid_t pid;
    reaped_fn fn;
};

struct children {
    struct child *v;       /* the workers */
    int n;
    struct reaper *reapers; /* the other children, registered by who started them */
    int nreapers, capreapers;
};

static struct children *state_of(struct api *a)
{
    if (!a->children)
        a->children = xcalloc(1, sizeof *a->children);
    return a->children;
}

void reaper_add(struct api *a, pid_t pid, reaped_fn fn)
{
    struct children *k = state_of(a);
    for (int i = 0; i < k->nreapers; i++)
        if (k->reapers[i].pid == pid && k->reapers[i].fn == fn)
            return;
    if (k->nreapers == k->capreapers) {
        k->capreapers = k->capreapers ? k->capreapers * 2 : 8;
        k->reapers = xrealloc(k->reapers, (size_t)k->capreapers * sizeof *k->reapers);
    }
    k->reapers[k->nreapers++] = (struct reaper){pid, fn};
}

/* The registered callbacks of pid, each called once and forgotten. */
static void reaped_registered(struct api *a, pid_t pid, int status)
{
    struct children *k = state_of(a);
    for (int i = 0; i < k->nreapers;) {
        if (k->reapers[i].pid != pid) {
            i++;
            continue;
        }
        reaped_fn fn = k->reapers[i].fn;
        k->reapers[i] = k->reapers[--k->nreapers];
        fn(a, pid, status);
    }
}

static void spawn(struct api *a, struct child *c)
{
    const char *extra[] = {"--log-level", a->log_level, "--parent-death", NULL};
    pid_t pid = worker_spawn(c->platform, a->exp_id, a->home, SPAWN_BLOCK_USR1, extra);
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
    struct children *k = state_of(a);
    k->v = xcalloc((size_t)n, sizeof *k->v);
    k->n = 0;
    for (int i = 0; i < n; i++) {
        const char *name = a->exp.platform;
        if (cJSON_IsArray(ts)) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ts, i), "platform");
            if (!cJSON_IsString(p))
                continue;
            name = p->valuestring;
        }
        int dup = 0; /* a platform listed twice still gets one worker */
        for (int w = 0; w < k->n && !dup; w++)
            dup = strcmp(k->v[w].platform, name) == 0;
        if (dup)
            continue;
        struct child *c = &k->v[k->n++];
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
        reaped_registered(a, pid, status); /* the dispatcher's process, TensorBoard tasks */
        struct children *k = state_of(a);
        for (int i = 0; i < k->n; i++) {
            struct child *c = &k->v[i];
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
    struct children *k = state_of(a);
    for (int i = 0; i < k->n; i++) {
        struct child *c = &k->v[i];
        if (c->pid == 0 && c->restart_at_ms && mono_ms() >= c->restart_at_ms)
            spawn(a, c);
    }
}

void children_wake(struct api *a)
{
    struct children *k = a->children;
    for (int i = 0; k && i < k->n; i++)
        if (k->v[i].pid > 0)
            kill(k->v[i].pid, SIGUSR1);
}

void children_stop(struct api *a)
{
    struct children *k = state_of(a);
    for (int i = 0; i < k->n; i++) {
        struct child *c = &k->v[i];
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
    free(k->v);
    k->v = NULL;
    k->n = 0;
}

void children_free(struct api *a)
{
    if (!a->children)
        return;
    children_stop(a);
    free(a->children->reapers);
    free(a->children);
    a->children = NULL;
}
