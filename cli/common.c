/* common.c: what nnictl's commands share: database, api processes, HTTP, ports. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "workers/worker.h"

static char *g_capture;   /* cli_error_capture: the first error goes here, not to stderr */
static size_t g_capture_n;

void cli_error_capture(char *buf, size_t n)
{
    g_capture = n ? buf : NULL;
    g_capture_n = n;
    if (g_capture)
        g_capture[0] = '\0';
}

int cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (g_capture) {
        if (!g_capture[0])
            vsnprintf(g_capture, g_capture_n, fmt, ap);
        va_end(ap);
        return 1;
    }
    fputs("ERROR: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

int cli_int_arg(const char *opt, const char *s, int min, int max, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno == ERANGE || v < INT_MIN || v > INT_MAX)
        return cli_error("argument %s: invalid int value: '%s'", opt, s);
    if (v < min || v > max)
        return cli_error("argument %s: %ld is out of range (%d to %d)", opt, v, min, max);
    *out = (int)v;
    return 0;
}

int cli_home_trial_opts(int argc, char **argv, const struct cli_cmd *cmd, const char **home, const char **trial_id)
{
    static const struct option opts[] = {
        {"trial_id", required_argument, NULL, 'T'}, {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
    };
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, trial_id ? "T:H:" : "H:", trial_id ? opts : opts + 1, NULL)) != -1) {
        if (c == 'T')
            *trial_id = optarg;
        else if (c == 'H')
            *home = optarg;
        else
            return cli_error("usage: %s", cmd->usage);
    }
    return 0;
}

struct db *cli_open_db(const char *home_opt, char **home_out)
{
    char *home = trialq_home(home_opt);
    if (mkdir_p(home, 0700) < 0) {
        cli_error("cannot create %s: %s", home, strerror(errno));
        free(home);
        return NULL;
    }
    char *path = trialq_db_path(home);
    struct db *db;
    struct errbuf e;
    int rc = db_open(path, &db, &e);
    free(path);
    if (rc < 0) {
        cli_error("%s", e.msg);
        free(home);
        return NULL;
    }
    cli_secrets_migrate(db, home); /* a failure is said; the command goes on */
    if (home_out)
        *home_out = home;
    else
        free(home);
    return db;
}

int cli_api_alive(const struct experiment *x)
{
    return x->api_pid > 0 && proc_alive(x->api_pid, (uint64_t)x->api_start);
}

int cli_port_free(const char *addr, int port)
{
    if (!addr || !*addr || strcmp(addr, "localhost") == 0)
        addr = "127.0.0.1";
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *ai = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    if (getaddrinfo(addr, portstr, &hints, &ai) != 0 || !ai)
        return 0;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int ok = 0;
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        ok = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
        close(fd);
    }
    freeaddrinfo(ai);
    return ok;
}

void cli_print_urls(const char *bind, int port, const char *prefix, const char *manager_ip)
{
    const char *p = prefix ? prefix : "";
    int any = strcmp(bind, "0.0.0.0") == 0 || strcmp(bind, "::") == 0;
    int v6 = strchr(bind, ':') != NULL && !any;
    printf("Web portal URLs: http://%s%s%s:%d%s", v6 ? "[" : "", any ? "127.0.0.1" : bind, v6 ? "]" : "", port, p);
    if (any) {
        /* NNI: one URL per IPv4 address of the host, then nniManagerIp */
        struct strbuf seen;
        sb_init(&seen);
        sb_puts(&seen, " 127.0.0.1 ");
        struct ifaddrs *ifs = NULL;
        if (getifaddrs(&ifs) == 0) {
            for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
                char ip[INET_ADDRSTRLEN];
                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
                    !inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, ip, sizeof ip))
                    continue;
                char *key = xasprintf(" %s ", ip);
                if (!strstr(seen.buf, key)) {
                    printf(" http://%s:%d%s", ip, port, p);
                    sb_puts(&seen, key + 1);
                }
                free(key);
            }
            freeifaddrs(ifs);
        }
        char *key = manager_ip ? xasprintf(" %s ", manager_ip) : NULL;
        if (key && !strstr(seen.buf, key))
            printf(" http://%s:%d%s", manager_ip, port, p);
        free(key);
        sb_free(&seen);
    }
    printf("\n");
}

int cli_check_bind(const char *addr)
{
    unsigned char buf[16];
    if (strcmp(addr, "localhost") == 0 || inet_pton(AF_INET, addr, buf) == 1 || inet_pton(AF_INET6, addr, buf) == 1)
        return 0;
    return cli_error("--bind: '%.100s' is not an IP address (e.g. 127.0.0.1, 0.0.0.0, ::1)", addr);
}

char *cli_url_prefix(const char *arg)
{
    /* NNI strips leading and trailing slashes; the rest is path segments */
    while (*arg == '/')
        arg++;
    size_t n = strlen(arg);
    while (n && arg[n - 1] == '/')
        n--;
    if (n == 0 || n > 200) {
        cli_error("--url_prefix: '%.200s' %s", arg, n ? "is longer than 200 characters" : "is empty");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        char c = arg[i];
        int seg_start = i == 0 || arg[i - 1] == '/';
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                 c == '_' || c == '~' || (c == '.' && !seg_start) || (c == '/' && !seg_start);
        if (!ok) {
            cli_error("--url_prefix: '%.*s': character %zu ('%c') is not allowed (letters, digits, - _ ~ ., and /"
                      " between segments)", (int)n, arg, i + 1, c);
            return NULL;
        }
    }
    return xasprintf("/%.*s", (int)n, arg);
}

static void log_header(int fd, const char *id)
{
    char line[81];
    memset(line, '-', 80);
    line[80] = '\0';
    char ts[32];
    format_time_ms(now_ms(), "%Y-%m-%d %H:%M:%S", ts, sizeof ts);
    dprintf(fd, "%s\nExperiment %s start: %s\n%s\n", line, id, ts, line);
}

static void print_log_tail(const char *path)
{
    size_t len;
    char *s = read_file(path, &len);
    if (!s)
        return;
    const char *from = len > 2000 ? s + len - 2000 : s;
    fprintf(stderr, "--- last lines of %s ---\n%s\n", path, from);
    free(s);
}

pid_t cli_start_api(const char *home, const struct experiment *x, const char *action, int port, int detach,
                    const char *log_level)
{
    char *logdir = path_join(x->exp_dir, "log");
    mkdir_p(logdir, 0700);
    char *outp = path_join(logdir, "nnictl_stdout.log");
    char *errp = path_join(logdir, "nnictl_stderr.log");
    char *exe = self_exe_path();
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    pid_t pid = fork();
    if (pid == 0) {
        if (detach)
            setsid();
        else
            setpgid(0, 0); /* Ctrl-C reaches nnictl, which stops the experiment in order */
        {
            /* output to the experiment's log files, also in the foreground */
            int ofd = open(outp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            int efd = open(errp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
            int nfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (ofd >= 0) {
                log_header(ofd, x->id);
                dup2(ofd, 1);
            }
            if (efd >= 0) {
                log_header(efd, x->id);
                dup2(efd, 2);
            }
            if (nfd >= 0)
                dup2(nfd, 0);
        }
        close_fds_from(3);
        execl(exe, "trialq", "api", "--experiment", x->id, "--action", action, "--home", home, "--port", portstr,
              "--log-level", log_level ? log_level : "info", (char *)NULL);
        _exit(127);
    }
    free(exe);
    if (pid < 0) {
        cli_error("cannot start the api process: %s", strerror(errno));
        goto fail;
    }
    /* wait until it answers, or tell why it did not */
    int64_t deadline = mono_ms() + 15000;
    while (mono_ms() < deadline) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
                cli_error("Port %d is not idle: another process listens there. Choose another port with --port.",
                          port);
            else
                cli_error("the api process of experiment %s exited at start (%s %d)", x->id,
                          WIFEXITED(st) ? "exit code" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            if (detach)
                print_log_tail(errp);
            goto fail;
        }
        struct experiment at = *x; /* the port it was started on, maybe not stored yet */
        at.port = port;
        if (cli_http(&at, "GET", "/check-status", NULL, NULL) == 200) {
            free(logdir); free(outp); free(errp);
            return pid;
        }
        usleep(20000);
    }
    cli_error("the api process of experiment %s did not answer on port %d within 15 s", x->id, port);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
fail:
    free(logdir); free(outp); free(errp);
    return -1;
}

int cli_drain(const char *home, const char *exp_id, const char *platform)
{
    char *exe = self_exe_path();
    pid_t pid = fork();
    if (pid == 0) {
        int nfd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (nfd >= 0)
            dup2(nfd, 1);
        close_fds_from(3);
        execl(exe, "trialq", "worker", "--platform", platform, "--experiment", exp_id, "--home", home, "--drain",
              (char *)NULL);
        _exit(127);
    }
    free(exe);
    if (pid < 0)
        return -1;
    int st;
    int64_t deadline = mono_ms() + 30000;
    while (mono_ms() < deadline) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
        usleep(20000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

/* `trialq worker --cleanup`: the platform removes what it holds for the experiment. */
static int cli_platform_cleanup(const char *home, const char *exp_id, const char *platform)
{
    char *exe = self_exe_path();
    pid_t pid = fork();
    if (pid == 0) {
        int nfd = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (nfd >= 0)
            dup2(nfd, 1);
        close_fds_from(3);
        execl(exe, "trialq", "worker", "--platform", platform, "--experiment", exp_id, "--home", home, "--cleanup",
              "--log-level", "error", (char *)NULL);
        _exit(127);
    }
    free(exe);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Ends every process recorded for the experiment on this host (api, workers). */
static void end_processes(struct db *db, const char *id)
{
    struct errbuf e;
    struct proc_row *procs;
    int n;
    if (procs_unended(db, id, &procs, &n, &e) < 0) {
        fprintf(stderr, "WARNING: %s\n", e.msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (!procs[i].host || strcmp(procs[i].host, host_name()) != 0)
            continue;
        proc_terminate((pid_t)procs[i].pid, procs[i].start, 3000);
        proc_ended(db, procs[i].row, "stopped by nnictl", &e);
    }
    proc_rows_free(procs, n);
}

int cli_stop_experiment(struct db *db, const char *home, const char *id, int quiet)
{
    struct errbuf e;
    struct experiment x;
    if (exp_load(db, id, &x, &e) <= 0)
        return cli_error("experiment %s not found", id);
    if (!quiet)
        printf("Stopping experiment %s\n", id);
    /* recorded first, so that an api restarted meanwhile stops too */
    exp_request_stop(db, id, &e);
    if (cli_api_alive(&x)) {
        kill(x.api_pid, SIGTERM);
        int64_t deadline = mono_ms() + 40000;
        while (mono_ms() < deadline && proc_alive(x.api_pid, (uint64_t)x.api_start)) {
            waitpid(x.api_pid, NULL, WNOHANG); /* it may be our own child (--foreground) */
            usleep(20000);
        }
        if (proc_alive(x.api_pid, (uint64_t)x.api_start)) {
            fprintf(stderr, "WARNING: api pid %d did not exit in 40 s; killing it\n", x.api_pid);
            proc_terminate(x.api_pid, (uint64_t)x.api_start, 0);
        }
    }
    /* the experiment's platforms: one, or each of a hybrid list */
    int nplat;
    char **plats = platform_list_of(x.platform, x.config, &nplat);
    for (int i = 0; i < nplat; i++) {
        /* trials left behind by a dead api: end them through a worker of their platform */
        int left = trials_count(db, id, COUNT_STARTED, plats[i], &e) > 0;
        if (left && cli_drain(home, id, plats[i]) < 0)
            fprintf(stderr, "WARNING: could not end every %s trial of %s\n", plats[i], id);
        /* a platform with a cleanup op (the cluster platforms) stops/deletes every job of
         * the experiment, also ones the database lost track of */
        const struct platform_ops *ops = platform_find(plats[i]);
        if (ops && ops->cleanup)
            if (cli_platform_cleanup(home, id, plats[i]) < 0)
                fprintf(stderr, "WARNING: could not delete every %s job of %s (see the message above)\n", plats[i],
                        id);
        free(plats[i]);
    }
    free(plats);
    /* every process recorded for the experiment is gone when we return */
    end_processes(db, id);
    int64_t left = trials_count(db, id, COUNT_STARTED, NULL, &e);
    exp_forget_api(db, id, &e);
    exp_transition(db, id, "INITIALIZED,RUNNING,NO_MORE_TRIAL,TUNER_NO_MORE_TRIAL,STOPPING,VIEWED", "STOPPED",
                   "nnictl stop", &e);
    exp_clear(&x);
    if (left) {
        fprintf(stderr, "WARNING: %lld trial(s) of %s could not be ended\n", (long long)left, id);
        return 1;
    }
    if (!quiet)
        printf("Stop experiment success.\n");
    return 0;
}

void cli_print_progress(struct db *db, const char *id)
{
    struct experiment x;
    struct errbuf e;
    if (exp_load(db, id, &x, &e) <= 0)
        return;
    int64_t done = trials_count(db, id, COUNT_DONE, NULL, &e);
    int64_t running = trials_count(db, id, COUNT_RUNNING, NULL, &e);
    int64_t ok = trials_count(db, id, COUNT_SUCCEEDED, NULL, &e);
    char best[64] = "-";
    struct best_trial b;
    if (exp_best_trial(db, id, &b, &e) == 1)
        snprintf(best, sizeof best, "%g", b.final_metric);
    best_trial_clear(&b);
    char total[32];
    if (x.max_trial_number > 0)
        snprintf(total, sizeof total, "%lld", (long long)x.max_trial_number);
    else
        strcpy(total, "-");
    printf("[%s] %s  trials done %lld/%s  running %lld  succeeded %lld  best %s  elapsed %llds\n", id, x.status,
           (long long)done, total, (long long)running, (long long)ok, best, (long long)(x.exec_duration_ms / 1000));
    fflush(stdout);
    exp_clear(&x);
}

void cli_print_best(struct db *db, const char *id)
{
    struct errbuf e;
    struct best_trial b;
    int found = exp_best_trial(db, id, &b, &e);
    if (found < 0)
        return;
    if (found)
        printf("Best trial: %s (#%lld)  final metric %g  parameters %s\n", b.trial_id, (long long)b.sequence,
               b.final_metric, b.parameters ? b.parameters : "(null)");
    else
        printf("No trial reported a final metric.\n");
    best_trial_clear(&b);
}
