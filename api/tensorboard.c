/* tensorboard.c: NNI's TensorBoard tasks, as processes: started, stopped, reaped,
 * listed (their routes, POST /tensorboard, /tensorboard/:id, /tensorboard-tasks, are
 * api/routes_tensorboard.c). A task is a `tensorboard` process (found on the api's PATH) over
 * the `tensorboard` subdirectory of each chosen trial's output directory, where NNI's
 * documentation has trials write their event files ($NNI_OUTPUT_DIR/tensorboard).
 *
 * A task belongs to the api process that started it, as under NNI: it is a child in
 * its own process group with PR_SET_PDEATHSIG, so it ends with the api however the
 * api ends (stop, SIGTERM, kill -9), and the list is held here, not in the database:
 * there is nothing to resume, and `nnictl view` (which changes nothing stored) can
 * show the TensorBoard of a finished experiment. The list is the api's (a->tensorboard).
 *
 * Only trials whose directories are on this host can be shown: that is a trait of the
 * platform they ran on, which the trainingService schema knows
 * (config_platform_trials_on_host). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "api/children.h"
#include "api/http_util.h"
#include "api/tensorboard.h"
#include "common/common.h"
#include "common/json.h"
#include "common/trialenv.h"
#include "config/config.h"
#include "schema/schema.h"

extern char **environ;

#define FIRST_PORT 6006 /* TensorBoard's own default, where NNI starts looking too */
#define STOP_GRACE_MS 5000

static const char *const status_names[] = {"RUNNING", "STOPPING", "STOPPED", "ERROR"};

/* The api's task list, made on first use. */
struct tb_task **tb_tasks(struct api *a)
{
    if (!a->tensorboard)
        a->tensorboard = xcalloc(1, sizeof *a->tensorboard);
    return a->tensorboard->tasks;
}

void tb_task_free(struct tb_task *t)
{
    for (int i = 0; i < t->ntrials; i++) {
        free(t->trials[i]);
        free(t->dirs[i]);
    }
    free(t->trials);
    free(t->dirs);
    free(t->message);
    free(t);
}

static void set_message(struct tb_task *t, char *msg)
{
    free(t->message);
    t->message = msg;
}

static char *log_path(const struct api *a, const struct tb_task *t)
{
    return xasprintf("%s/log/tensorboard-%s.log", a->exp.exp_dir, t->id);
}

/* NNI's TensorboardTaskInfo, plus message (why it stopped or failed) and logFile. */
cJSON *tb_task_json(const struct api *a, const struct tb_task *t)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", t->id);
    cJSON_AddStringToObject(j, "status", status_names[t->status]);
    cJSON *ids = cJSON_AddArrayToObject(j, "trialJobIdList");
    cJSON *dirs = cJSON_AddArrayToObject(j, "trialLogDirectoryList");
    for (int i = 0; i < t->ntrials; i++) {
        cJSON_AddItemToArray(ids, cJSON_CreateString(t->trials[i]));
        cJSON_AddItemToArray(dirs, cJSON_CreateString(t->dirs[i]));
    }
    if (t->pid > 0)
        cJSON_AddNumberToObject(j, "pid", t->pid);
    if (t->port > 0)
        cJSON_AddNumberToObject(j, "port", t->port);
    if (t->message)
        cJSON_AddStringToObject(j, "message", t->message);
    char *lp = log_path(a, t);
    cJSON_AddStringToObject(j, "logFile", lp);
    free(lp);
    return j;
}

struct tb_task *tb_task_find(struct api *a, const char *id)
{
    struct tb_task **tasks = tb_tasks(a);
    for (int i = 0; i < MAX_TASKS; i++)
        if (tasks[i] && strcmp(tasks[i]->id, id) == 0)
            return tasks[i];
    return NULL;
}

static void tensorboard_reaped(struct api *a, pid_t pid, int status);

/* The tensorboard executable on PATH (NULL when there is none). */
static char *find_tensorboard(void)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = xstrdup(path), *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char *p = xasprintf("%s/tensorboard", *d ? d : ".");
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
            free(copy);
            return p;
        }
        free(p);
    }
    free(copy);
    return NULL;
}

/* A TCP port from 6006 up that nothing listens on (at the address TensorBoard will
 * use) and no task of ours holds. 0 when none. */
static int free_port(struct api *a)
{
    struct tb_task **tasks = tb_tasks(a);
    int v6 = a->exp.bind_address && strchr(a->exp.bind_address, ':');
    for (int port = FIRST_PORT; port < FIRST_PORT + 2000; port++) {
        int taken = 0;
        for (int i = 0; i < MAX_TASKS && !taken; i++)
            taken = tasks[i] && tasks[i]->port == port &&
                    (tasks[i]->status == TB_RUNNING || tasks[i]->status == TB_STOPPING);
        if (taken)
            continue;
        int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return 0;
        int one = 1; /* as TensorBoard binds: a port with connections in TIME_WAIT is free */
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        int ok;
        if (v6) {
            struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
            if (!listens_beyond_loopback(a))
                sa.sin6_addr = in6addr_loopback;
            ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
        } else {
            struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
            sa.sin_addr.s_addr = htonl(listens_beyond_loopback(a) ? INADDR_ANY : INADDR_LOOPBACK);
            ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
        }
        close(fd);
        if (ok)
            return port;
    }
    return 0;
}

/* Starts (or restarts) t's process. 0, or -1 with e set (t unchanged). */
int tb_task_spawn(struct api *a, struct tb_task *t, struct errbuf *e)
{
    char *exe = find_tensorboard();
    if (!exe)
        return errf(e, "tensorboard is not installed: no executable \"tensorboard\" on the api's PATH "
                       "(pip install tensorboard, then start the experiment from that environment)");
    int port = free_port(a);
    if (!port) {
        free(exe);
        return errf(e, "no free TCP port from %d to %d for TensorBoard", FIRST_PORT, FIRST_PORT + 1999);
    }
    struct strbuf spec;
    sb_init(&spec);
    sb_puts(&spec, "--logdir_spec=");
    for (int i = 0; i < t->ntrials; i++)
        sb_printf(&spec, "%s%s:%s/tensorboard", i ? "," : "", t->trials[i], t->dirs[i]);
    char *portarg = xasprintf("--port=%d", port);
    char *hostarg = listens_beyond_loopback(a) ? xstrdup("--bind_all")
                                               : xasprintf("--host=%s", a->exp.bind_address);
    char *lp = log_path(a, t);
    char *logdir = xasprintf("%s/log", a->exp.exp_dir);
    mkdir_p(logdir, 0700);
    free(logdir);
    int out = open(lp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    /* TensorBoard runs the trials' plugins' code: the platforms' credentials stay here */
    char **envp = env_less_credentials(environ,
                                       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a->cfg->canonical, "passCredentials")));
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        if (child_of(parent) < 0) /* it ends with the api, however the api ends */
            _exit(127);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0)
            dup2(devnull, 0);
        int o = out >= 0 ? out : devnull;
        if (o >= 0) {
            dup2(o, 1);
            dup2(o, 2);
        }
        close_fds_from(3);
        execle(exe, "tensorboard", spec.buf, portarg, hostarg, (char *)NULL, envp);
        dprintf(2, "trialq: cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    int err = errno;
    free(envp);
    if (out >= 0)
        close(out);
    int rc = 0;
    if (pid < 0) {
        rc = errf(e, "cannot start tensorboard: %s", strerror(err));
    } else {
        setpgid(pid, pid);
        reaper_add(a, pid, tensorboard_reaped);
        t->pid = pid;
        t->port = port;
        t->status = TB_RUNNING;
        t->stop_deadline_ms = 0;
        set_message(t, NULL);
        log_info("TensorBoard task %s: %s %s %s %s (pid %d; output in %s)", t->id, exe, spec.buf, portarg, hostarg,
                 (int)pid, lp);
    }
    free(lp);
    free(exe);
    free(portarg);
    free(hostarg);
    sb_free(&spec);
    return rc;
}

/* SIGTERM to a running task's group; the tick sends SIGKILL after the grace and the
 * reap marks it STOPPED. */
void tb_task_stop(struct tb_task *t)
{
    if (t->status != TB_RUNNING)
        return;
    kill(-t->pid, SIGTERM);
    t->status = TB_STOPPING;
    t->stop_deadline_ms = mono_ms() + STOP_GRACE_MS;
}

static void tensorboard_reaped(struct api *a, pid_t pid, int status)
{
    if (!a->tensorboard)
        return;
    for (int i = 0; i < MAX_TASKS; i++) {
        struct tb_task *t = a->tensorboard->tasks[i];
        if (!t || t->pid != pid || (t->status != TB_RUNNING && t->status != TB_STOPPING))
            continue;
        kill(-pid, SIGKILL); /* whatever it started goes with it */
        if (t->status == TB_STOPPING) {
            t->status = TB_STOPPED;
            set_message(t, xstrdup("stopped"));
        } else {
            t->status = TB_ERROR;
            char *lp = log_path(a, t);
            set_message(t, WIFSIGNALED(status)
                               ? xasprintf("tensorboard was killed by signal %d; its output: %s", WTERMSIG(status), lp)
                               : xasprintf("tensorboard exited with code %d; its output: %s", WEXITSTATUS(status), lp));
            free(lp);
            log_warn("TensorBoard task %s: %s", t->id, t->message);
        }
        t->pid = 0;
        t->port = 0;
    }
}

void tensorboard_tick(struct api *a)
{
    if (!a->tensorboard)
        return;
    for (int i = 0; i < MAX_TASKS; i++) {
        struct tb_task *t = a->tensorboard->tasks[i];
        if (t && t->status == TB_STOPPING && mono_ms() >= t->stop_deadline_ms) {
            kill(-t->pid, SIGKILL);
            t->stop_deadline_ms = mono_ms() + STOP_GRACE_MS;
        }
    }
}

void tensorboard_shutdown(struct api *a)
{
    if (!a->tensorboard)
        return;
    for (int i = 0; i < MAX_TASKS; i++) {
        struct tb_task *t = a->tensorboard->tasks[i];
        if (!t)
            continue;
        if (t->status == TB_RUNNING || t->status == TB_STOPPING) {
            proc_terminate(-t->pid, 0, 2000);
            log_info("TensorBoard task %s stopped", t->id);
        }
        tb_task_free(t);
    }
    free(a->tensorboard);
    a->tensorboard = NULL;
}
