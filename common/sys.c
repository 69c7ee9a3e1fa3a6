/* sys.c: time, files, processes, ids: thin, careful wrappers over POSIX/Linux. */
#include "common/common.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t mono_ms(void)
{
    return mono_us() / 1000;
}

int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void format_time_ms(int64_t ms, const char *fmt, char *out, size_t outlen)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    if (strftime(out, outlen, fmt, &tm) == 0 && outlen)
        out[0] = '\0';
}

int parse_duration(const char *s, int64_t *seconds)
{
    static const struct { char unit; int64_t mult; } units[] = {
        {'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1},
    };
    size_t n = strlen(s);
    if (n == 0)
        return -1;
    int64_t mult = 0;
    char last = (char)tolower((unsigned char)s[n - 1]);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (last == units[i].unit) {
            mult = units[i].mult;
            n--;
        }
    if (mult == 0) {
        /* A bare number means seconds only when it is one (NNI accepts ints). */
        mult = 1;
    }
    char num[64];
    if (n == 0 || n >= sizeof num)
        return -1;
    /* digits with at most one '.' (NNI's "1.5h"): no sign, space, exponent or hex,
     * which strtod would take */
    int digits = 0, dots = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9')
            digits++;
        else if (s[i] == '.')
            dots++;
        else
            return -1;
    }
    if (!digits || dots > 1)
        return -1;
    memcpy(num, s, n);
    num[n] = '\0';
    char *end;
    errno = 0;
    double v = strtod(num, &end);
    if (errno || *end != '\0' || !isfinite(v) || v <= 0 || v * (double)mult > 1e15)
        return -1;
    *seconds = (int64_t)ceil(v * (double)mult);
    return 0;
}

int mkdir_p(const char *path, mode_t mode)
{
    char *p = xstrdup(path);
    for (char *q = p + 1; *q; q++) {
        if (*q != '/')
            continue;
        *q = '\0';
        if (mkdir(p, mode) < 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *q = '/';
    }
    int rc = mkdir(p, mode);
    free(p);
    return rc < 0 && errno != EEXIST ? -1 : 0;
}

char *read_file(const char *path, size_t *len_out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct strbuf sb;
    sb_init(&sb);
    char buf[65536];
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int saved = errno;
            close(fd);
            sb_free(&sb);
            errno = saved;
            return NULL;
        }
        if (r == 0)
            break;
        sb_add(&sb, buf, (size_t)r);
    }
    close(fd);
    if (len_out)
        *len_out = sb.len;
    return sb_detach(&sb);
}

static int fsync_dir_of(const char *path)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        strcpy(dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int write_replace(const char *path, const void *data, size_t len, mode_t mode, int durable);

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
    return write_replace(path, data, len, mode, 1);
}

int write_file_replace(const char *path, const void *data, size_t len, mode_t mode)
{
    return write_replace(path, data, len, mode, 0);
}

static int write_replace(const char *path, const void *data, size_t len, mode_t mode, int durable)
{
    char *tmp = xasprintf("%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            goto fail;
        }
        p += w;
        left -= (size_t)w;
    }
    if (durable && fsync(fd) < 0)
        goto fail;
    close(fd);
    fd = -1;
    if (rename(tmp, path) < 0)
        goto fail;
    free(tmp);
    return durable ? fsync_dir_of(path) : 0;
fail:;
    int saved = errno;
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(tmp);
    errno = saved;
    return -1;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(p) < 0 && errno != ENOENT ? -1 : 0;
}

int rm_rf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(path, rm_cb, 32, FTW_DEPTH | FTW_PHYS);
}

char *path_join(const char *a, const char *b)
{
    if (b[0] == '/')
        return xstrdup(b);
    size_t n = strlen(a);
    return xasprintf("%s%s%s", a, n && a[n - 1] == '/' ? "" : "/", b);
}

uint64_t proc_start_time(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    char *s = read_file(path, NULL);
    if (!s)
        return 0;
    /* comm may contain spaces and ')': fields resume after the last ')' */
    char *p = strrchr(s, ')');
    uint64_t start = 0;
    if (p) {
        char state = 0;
        p += 2;
        state = *p;
        /* fields after comm: 3=state ... 22=starttime; we are at field 3 */
        int field = 3;
        while (*p && field < 22) {
            if (*p == ' ')
                field++;
            p++;
        }
        if (field == 22 && state != 'Z' && state != 'X')
            start = strtoull(p, NULL, 10);
    }
    free(s);
    return start;
}

int proc_alive(pid_t pid, uint64_t start_time)
{
    if (pid <= 0)
        return 0;
    uint64_t st = proc_start_time(pid);
    if (st == 0)
        return 0;
    return start_time == 0 || st == start_time;
}

int proc_group_alive(pid_t pgid, pid_t sid, uint64_t since)
{
    if (pgid <= 0)
        return 0;
    DIR *d = opendir("/proc");
    if (!d)
        return kill(-pgid, 0) == 0 || errno == EPERM; /* no /proc: the number alone */
    int found = 0;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        char *s = read_file(path, NULL);
        char *p = s ? strrchr(s, ')') : NULL;
        char state = 0;
        int ppid = 0, pgrp = 0, session = 0;
        unsigned long long start = 0;
        /* fields after comm: 3 state, 4 ppid, 5 pgrp, 6 session ... 22 starttime */
        if (p && sscanf(p + 2, "%c %d %d %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
                        &state, &ppid, &pgrp, &session, &start) == 5)
            found = pgrp == pgid && (sid <= 0 || session == sid) && start >= since && state != 'Z' && state != 'X';
        free(s);
    }
    closedir(d);
    return found;
}

static int pgrp_alive(pid_t pgid)
{
    return kill(-pgid, 0) == 0 || errno == EPERM;
}

int proc_terminate(pid_t pid, uint64_t start_time, int grace_ms)
{
    int group = pid < 0;
    pid_t target = group ? -pid : pid;
    if (group ? !pgrp_alive(target) : !proc_alive(target, start_time))
        return 0;
    kill(pid, SIGTERM);
    int64_t deadline = mono_ms() + grace_ms;
    for (;;) {
        /* reap it (or, for a group, our children in it) so that it does not linger as a
         * zombie; never another child, whose exit status its owner waits for */
        while (waitpid(pid, NULL, WNOHANG) > 0)
            ;
        if (group ? !pgrp_alive(target) : !proc_alive(target, start_time))
            return 0;
        if (mono_ms() >= deadline)
            break;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    deadline = mono_ms() + 5000;
    while (mono_ms() < deadline) {
        while (waitpid(pid, NULL, WNOHANG) > 0)
            ;
        if (group ? !pgrp_alive(target) : !proc_alive(target, start_time))
            return 0;
        usleep(5000);
    }
    return -1;
}

char *find_on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = xstrdup(path), *save = NULL;
    char *found = NULL;
    for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *f = xasprintf("%s/%s", *d ? d : ".", name);
        struct stat st;
        if (stat(f, &st) == 0 && S_ISREG(st.st_mode) && access(f, X_OK) == 0)
            found = f;
        else
            free(f);
    }
    free(copy);
    return found;
}


/* run_capture's child: stdin from /dev/null, stdout and stderr to the pipes, its own
 * process group (a timeout ends what it started too), then argv. */
static void capture_child(char *const argv[], int out_fd, int err_fd)
{
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    close_fds_from(3);
    execvp(argv[0], argv);
    dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

/* Reads both pipes into sb[0] and sb[1] (1 MB each at most) until both close: 0, or 1
 * when timeout_ms (> 0) passed first. */
static int read_both(int out_fd, int err_fd, struct strbuf sb[2], int timeout_ms)
{
    struct pollfd pf[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = err_fd, .events = POLLIN}};
    int64_t deadline = timeout_ms > 0 ? mono_ms() + timeout_ms : 0;
    int open_fds = 2;
    while (open_fds > 0) {
        int wait = -1;
        if (deadline) {
            int64_t left = deadline - mono_ms();
            wait = left > 0 ? (int)left : 0;
        }
        int n = poll(pf, 2, wait);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n == 0;
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !pf[i].revents)
                continue;
            char buf[4096];
            ssize_t r = read(pf[i].fd, buf, sizeof buf);
            if (r > 0 && sb[i].len < (1 << 20))
                sb_add(&sb[i], buf, (size_t)r);
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
                pf[i].fd = -1;
                open_fds--;
            }
        }
    }
    return 0;
}

int run_capture(char *const argv[], int timeout_ms, char **out, char **err)
{
    if (out)
        *out = NULL;
    if (err)
        *err = NULL;
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) < 0)
        return -1;
    if (pipe2(pe, O_CLOEXEC) < 0) {
        close(po[0]);
        close(po[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0)
        capture_child(argv, po[1], pe[1]);
    close(po[1]);
    close(pe[1]);
    struct strbuf sb[2];
    sb_init(&sb[0]);
    sb_init(&sb[1]);
    int timed_out = pid > 0 ? read_both(po[0], pe[0], sb, timeout_ms) : 0;
    if (timed_out)
        kill(-pid, SIGKILL);
    close(po[0]);
    close(pe[0]);
    int st = 0;
    int waited = pid > 0;
    while (waited && waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            waited = 0;
            break;
        }
    if (out)
        *out = sb_detach(&sb[0]);
    if (err)
        *err = sb_detach(&sb[1]);
    sb_free(&sb[0]);
    sb_free(&sb[1]);
    if (timed_out)
        return -2;
    if (!waited)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The soft fd limit as the process started, before fd_limit_raise: set once, at setup. */
static struct rlimit fd_limit_at_start;
static int fd_limit_raised;

long fd_limit_raise(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 1024;
    fd_limit_at_start = rl;
    if (rl.rlim_cur != rl.rlim_max) {
        struct rlimit up = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
            rl.rlim_cur = rl.rlim_max;
            fd_limit_raised = 1;
        }
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)1 << 30 ? 1L << 30 : (long)rl.rlim_cur;
}

void fd_limit_restore(void)
{
    if (fd_limit_raised)
        setrlimit(RLIMIT_NOFILE, &fd_limit_at_start);
}

int child_of(pid_t parent)
{
    fd_limit_restore();
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) /* it died before the line above: nobody would end us */
        return -1;
    signal(SIGPIPE, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    return 0;
}

void close_fds_from(int lowfd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0)
        return;
#endif
    /* without close_range: /proc/self/fd, read again until nothing is left to close
     * (an api may hold thousands of connections) */
    for (;;) {
        DIR *d = opendir("/proc/self/fd");
        if (!d) {
            for (int fd = lowfd; fd < 65536; fd++)
                close(fd);
            return;
        }
        int dfd = dirfd(d);
        struct dirent *de;
        int fds[1024], n = 0;
        while ((de = readdir(d)) && n < 1024) {
            int fd = atoi(de->d_name);
            if (de->d_name[0] != '.' && fd >= lowfd && fd != dfd)
                fds[n++] = fd;
        }
        closedir(d);
        for (int i = 0; i < n; i++)
            close(fds[i]);
        if (n == 0)
            return;
    }
}

static char *g_title;
static size_t g_title_len;

void proc_title_init(int argc, char **argv)
{
    if (argc < 1)
        return;
    g_title = argv[0];
    g_title_len = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]);
}

void proc_title_set(const char *fmt, ...)
{
    if (!g_title)
        return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memset(g_title, 0, g_title_len);
    size_t n = strlen(buf);
    memcpy(g_title, buf, n < g_title_len ? n : g_title_len);
    prctl(PR_SET_NAME, buf);
}

const char *host_name(void)
{
    static char name[256];
    if (!name[0] && gethostname(name, sizeof name - 1) < 0)
        strcpy(name, "localhost");
    return name;
}

void random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            abort(); /* no entropy source: nothing sensible to do */
        }
        p += r;
        n -= (size_t)r;
    }
}

static unsigned rand_below(unsigned n)
{
    uint32_t x, limit = UINT32_MAX - UINT32_MAX % n;
    do
        random_bytes(&x, sizeof x);
    while (x >= limit);
    return x % n;
}

void gen_experiment_id(char out[9])
{
    char pool[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    unsigned left = 36;
    for (int i = 0; i < 8; i++) {
        unsigned k = rand_below(left);
        out[i] = pool[k];
        pool[k] = pool[--left];
    }
    out[8] = '\0';
}

void gen_trial_id(char out[6])
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    out[0] = letters[rand_below(52)];
    for (int i = 1; i < 5; i++)
        out[i] = alnum[rand_below(62)];
    out[5] = '\0';
}

int is_experiment_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n == 8 || !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9')))
            return 0;
    return n == 8;
}

int is_trial_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        int letter = (s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z');
        if (n == 5 || !(letter || (n > 0 && s[n] >= '0' && s[n] <= '9')))
            return 0;
    }
    return n == 5;
}

void gen_token(char *out, size_t hexlen)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < hexlen; i++)
        out[i] = hex[rand_below(16)];
    out[hexlen] = '\0';
}

char *self_exe_path(void)
{
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return xstrdup("trialq");
    buf[n] = '\0';
    return xstrdup(buf);
}

char *trialq_data_dir(const char *name, const char *probe, const char *build_tree)
{
    char *exe = self_exe_path();
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    char *installed = xasprintf("%s/../share/trialq/%s", exe, name);
    free(exe);
    if (!build_tree)
        return installed;
    char *path = xasprintf("%s/%s", installed, probe);
    int ok = access(path, R_OK) == 0;
    free(path);
    if (ok)
        return installed;
    free(installed);
    return xstrdup(build_tree);
}
