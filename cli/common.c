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

const struct option cli_opts_trial_home[] = {
    {"trial_id", required_argument, NULL, 'T'}, {"home", required_argument, NULL, 'H'}, {NULL, 0, NULL, 0},
};
int cli_home_trial_opts(int argc, char **argv, const struct cli_cmd *cmd, const char **home, const char **trial_id)
{
    int c;
    optind = 1;
    const struct option *opts = trial_id ? cli_opts_trial_home : cli_opts_trial_home + 1;
    while ((c = getopt_long(argc, argv, trial_id ? "T:H:" : "H:", opts, NULL)) != -1) {
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
