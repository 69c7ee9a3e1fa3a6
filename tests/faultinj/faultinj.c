/* faultinj.c: when to inject a fault (faultinj.h), shared by io.c and vfs.c. Test code:
 * it reads its configuration from the environment and logs with raw system calls, so
 * that it never calls what its libraries wrap. */
#include "faultinj.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FI_MAX_LIST 16
#define FI_MAX_NTH 256

struct fi_config {
    char prefix[16];
    int parsed;
    int on;                      /* NTH or PROB set, and this process is of a kind hit */
    char kind[16];
    char ops_store[256], paths_store[4096], skip_store[4096];
    char *ops[FI_MAX_LIST];
    int nops;
    char *paths[FI_MAX_LIST];
    int npaths;
    char *skip[FI_MAX_LIST];
    int nskip;
    int errnos[FI_MAX_LIST];
    int nerrnos;
    long nth[FI_MAX_NTH], burst;
    int nnth;
    double prob;
    unsigned long long seed;
    const char *control, *log, *count_file;
    /* per process (reset when a fork changes the pid) */
    pid_t pid;
    unsigned long long rng;
    long count, burst_left;
    int log_fd;
    long long control_checked_ms;
    int control_on;
};

static struct fi_config g_configs[2];
static __thread int t_busy;

static char *env_of(const struct fi_config *c, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "%s%s", c->prefix, name);
    char *v = getenv(key);
    return v && *v ? v : NULL;
}

/* splits a copy of S (in STORE, no heap: LeakSanitizer watches the processes this is
 * loaded into) at SEP into LIST */
static int split(const char *s, char sep, char *store, size_t size, char **list)
{
    int n = 0;
    snprintf(store, size, "%s", s);
    char *p = store;
    while (p && n < FI_MAX_LIST) {
        char *e = strchr(p, sep);
        if (e)
            *e = 0;
        if (*p)
            list[n++] = p;
        p = e ? e + 1 : NULL;
    }
    return n;
}

static int errno_named(const char *name)
{
    static const struct { const char *name; int err; } names[] = {
        {"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EROFS", EROFS}, {"EDQUOT", EDQUOT},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0)
            return names[i].err;
    return 0;
}

static const char *errno_name(int err)
{
    switch (err) {
    case ENOSPC: return "ENOSPC";
    case EIO: return "EIO";
    case EROFS: return "EROFS";
    case EDQUOT: return "EDQUOT";
    default: return "E?";
    }
}

/* api, worker, nnictl (trialq / nnictl by its first argument), supervise, or other */
static void detect_kind(char *kind, size_t size)
{
    char buf[512];
    snprintf(kind, size, "other");
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    const char *arg0 = buf, *arg1 = buf + strlen(buf) + 1;
    if (arg1 >= buf + n)
        arg1 = "";
    const char *base = strrchr(arg0, '/');
    base = base ? base + 1 : arg0;
    if (strcmp(base, "trialq-supervise") == 0)
        snprintf(kind, size, "supervise");
    else if (strcmp(base, "trialq") == 0 || strcmp(base, "nnictl") == 0)
        snprintf(kind, size, "%s", strcmp(arg1, "api") == 0 || strcmp(arg1, "worker") == 0 ? arg1 : "nnictl");
}

static void parse(struct fi_config *c)
{
    c->parsed = 1;
    detect_kind(c->kind, sizeof c->kind);
    char *procs[FI_MAX_LIST];
    const char *pv = env_of(c, "PROCS");
    char procs_store[256], names_store[256];
    int nprocs = split(pv ? pv : "api,worker,supervise", ',', procs_store, sizeof procs_store, procs), hit = 0;
    for (int i = 0; i < nprocs; i++)
        hit |= strcmp(procs[i], "any") == 0 || strcmp(procs[i], c->kind) == 0;
    const char *v;
    c->nops = (v = env_of(c, "OPS")) ? split(v, ',', c->ops_store, sizeof c->ops_store, c->ops) : 0;
    c->npaths = (v = env_of(c, "PATHS")) ? split(v, ':', c->paths_store, sizeof c->paths_store, c->paths) : 0;
    c->nskip = (v = env_of(c, "SKIP")) ? split(v, ':', c->skip_store, sizeof c->skip_store, c->skip) : 0;
    char *names[FI_MAX_LIST];
    int nnames = split((v = env_of(c, "ERRNOS")) ? v : "ENOSPC", ',', names_store, sizeof names_store, names);
    for (int i = 0; i < nnames; i++)
        if ((c->errnos[c->nerrnos] = errno_named(names[i])) != 0)
            c->nerrnos++;
    if (c->nerrnos == 0)
        c->errnos[c->nerrnos++] = ENOSPC;
    c->nnth = 0;
    for (char *p = env_of(c, "NTH"), *end; p && *p && c->nnth < FI_MAX_NTH; p = *end ? end + 1 : end) {
        long n = strtol(p, &end, 10);
        if (n > 0)
            c->nth[c->nnth++] = n;
        if (*end && *end != ',')
            break;
    }
    c->prob = (v = env_of(c, "PROB")) ? atof(v) : 0;
    c->burst = (v = env_of(c, "BURST")) ? atol(v) : 1;
    if (c->burst < 1)
        c->burst = 1;
    c->seed = (v = env_of(c, "SEED")) ? strtoull(v, NULL, 10) : 1;
    c->control = env_of(c, "CONTROL");
    c->log = env_of(c, "LOG");
    c->count_file = env_of(c, "COUNT");
    c->log_fd = -1;
    c->on = hit && (c->nnth > 0 || c->prob > 0 || c->count_file);
}

struct fi_config *fi_config(const char *prefix)
{
    for (int i = 0; i < 2; i++) {
        struct fi_config *c = &g_configs[i];
        if (c->prefix[0] == 0)
            snprintf(c->prefix, sizeof c->prefix, "%s", prefix);
        if (strcmp(c->prefix, prefix) == 0) {
            if (!c->parsed) {
                t_busy++;
                parse(c);
                t_busy--;
            }
            return c;
        }
    }
    return NULL;
}

static unsigned long long next_random(struct fi_config *c)
{
    /* xorshift64* */
    unsigned long long x = c->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int prefixed(const char *path, char **list, int n)
{
    for (int i = 0; i < n; i++)
        if (strncmp(path, list[i], strlen(list[i])) == 0)
            return 1;
    return 0;
}

static void log_fault(struct fi_config *c, const char *op, int err, const char *path)
{
    if (!c->log)
        return;
    if (c->log_fd < 0)
        c->log_fd = (int)syscall(SYS_openat, AT_FDCWD, c->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (c->log_fd < 0)
        return;
    char line[1024];
    int n = snprintf(line, sizeof line, "%s %d %s %s %s\n", c->kind, (int)getpid(), op, errno_name(err),
                     path ? path : "-");
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    if (syscall(SYS_write, c->log_fd, line, (size_t)n) < 0)
        return;
}

static int nth_hit(const struct fi_config *c)
{
    for (int i = 0; i < c->nnth; i++)
        if (c->count == c->nth[i])
            return 1;
    return 0;
}

/* appends "<kind> <pid> <count>" to the COUNT file: how many matching operations this
 * process made (only the processes that call exit(); one killed or that execs says
 * nothing) */
static void write_count(struct fi_config *c)
{
    if (!c->parsed || !c->on || !c->count_file || c->pid != getpid())
        return;
    int fd = (int)syscall(SYS_openat, AT_FDCWD, c->count_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    char line[128];
    int n = snprintf(line, sizeof line, "%s %d %ld\n", c->kind, (int)getpid(), c->count);
    if (syscall(SYS_write, fd, line, (size_t)n) < 0) {
        /* nothing to do: a count is advice */
    }
    close(fd);
}

__attribute__((destructor)) static void fi_write_counts(void)
{
    t_busy++;
    for (int i = 0; i < 2; i++)
        write_count(&g_configs[i]);
    t_busy--;
}

int fi_active(const struct fi_config *c)
{
    return c && c->on && !t_busy;
}

int fi_decide(struct fi_config *c, const char *op, const char *path)
{
    if (!c || !c->on || t_busy)
        return 0;
    if (c->nops) {
        int hit = 0;
        for (int i = 0; i < c->nops && !hit; i++)
            hit = strcmp(c->ops[i], op) == 0;
        if (!hit)
            return 0;
    }
    if (c->npaths && (!path || !prefixed(path, c->paths, c->npaths)))
        return 0;
    if (c->nskip && path && prefixed(path, c->skip, c->nskip))
        return 0;
    int saved = errno;
    t_busy++;
    pid_t pid = getpid();
    if (c->pid != pid) { /* a new process (or a fork's child): its own count and sequence */
        c->pid = pid;
        c->rng = (c->seed * 0x9E3779B97F4A7C15ULL) ^ ((unsigned long long)pid << 17) ^ 0x5DEECE66DULL;
        if (c->rng == 0)
            c->rng = 1;
        c->count = c->burst_left = 0;
        if (c->log_fd >= 0)
            close(c->log_fd);
        c->log_fd = -1;
        c->control_checked_ms = 0;
    }
    int fire = 0;
    if (c->control) {
        long long now = mono_ms();
        if (c->control_checked_ms == 0 || now - c->control_checked_ms >= 50) {
            c->control_checked_ms = now;
            c->control_on = access(c->control, F_OK) == 0;
        }
    }
    if (!c->control || c->control_on) {
        c->count++;
        if (c->burst_left > 0)
            fire = 1;
        else if (nth_hit(c))
            fire = 1;
        else if (c->prob > 0 && (double)(next_random(c) >> 11) / 9007199254740992.0 < c->prob)
            fire = 1;
        if (fire && c->burst_left == 0)
            c->burst_left = c->burst;
        if (fire)
            c->burst_left--;
    }
    int err = 0;
    if (fire) {
        err = c->errnos[next_random(c) % (unsigned)c->nerrnos];
        log_fault(c, op, err, path);
    }
    t_busy--;
    errno = saved;
    return err;
}
