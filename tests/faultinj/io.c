/* io.c: LD_PRELOAD library for the tests that fails file operations of trialq's
 * processes (faultinj.h, prefix TQFI_IO_). Operations, as OPS names them:
 *   open     open, open64, openat, openat64, creat (only opens that may write)
 *   write    write, pwrite, pwrite64, writev
 *   fsync    fsync, fdatasync
 *   truncate ftruncate
 *   rename   rename, renameat, renameat2
 *   mkdir    mkdir, mkdirat
 * A descriptor's path is read from /proc/self/fd; writes to anything but a path (a
 * pipe, a socket) are never hit. stdio's own writes (fwrite) are not seen: glibc makes
 * them inside itself. A static binary (trialq-supervise outside the sanitized build)
 * loads no preloaded library. */
#include "faultinj.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static struct fi_config *cfg(void)
{
    static struct fi_config *c;
    if (!c)
        c = fi_config("TQFI_IO_");
    return c;
}

static void *real(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}
#define REAL(name) static __typeof__(&name) real_##name; if (!real_##name) real_##name = (__typeof__(&name))real(#name)

/* the errno for OP on descriptor FD, or 0 */
static int fd_fault(const char *op, int fd)
{
    if (!fi_active(cfg()))
        return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0)
        return 0;
    path[n] = 0;
    if (path[0] != '/')
        return 0;
    return fi_decide(cfg(), op, path);
}

/* the errno for OP on PATH (relative to DIRFD), or 0 */
static int path_fault(const char *op, int dirfd, const char *p)
{
    if (!fi_active(cfg()) || !p)
        return 0;
    char path[8200], base[4096];
    if (p[0] == '/')
        return fi_decide(cfg(), op, p);
    ssize_t n = -1;
    if (dirfd == AT_FDCWD) {
        if (getcwd(base, sizeof base))
            n = (ssize_t)strlen(base);
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
        n = readlink(link, base, sizeof base - 1);
    }
    if (n <= 0)
        return fi_decide(cfg(), op, NULL);
    base[n] = 0;
    snprintf(path, sizeof path, "%s/%s", base, p);
    return fi_decide(cfg(), op, path);
}

static int writes(int flags)
{
    return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0;
}

#define FAIL_IF(expr) do { int fi_err_ = (expr); if (fi_err_) { errno = fi_err_; return -1; } } while (0)

static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
    if (writes(flags))
        FAIL_IF(path_fault("open", dirfd, path));
    REAL(openat);
    return real_openat(dirfd, path, flags, mode);
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

/* open, open64 (AT_FDCWD) and openat, openat64: the mode is there only with O_CREAT or
 * O_TMPFILE */
#define OPEN_BODY(dirfd)                                             \
    {                                                                \
        va_list ap;                                                  \
        va_start(ap, flags);                                         \
        mode_t mode = mode_arg(flags, ap);                           \
        va_end(ap);                                                  \
        return do_openat(dirfd, path, flags, mode);                  \
    }
EXPORT int open(const char *path, int flags, ...) OPEN_BODY(AT_FDCWD)
EXPORT int open64(const char *path, int flags, ...) OPEN_BODY(AT_FDCWD)
EXPORT int openat(int dirfd, const char *path, int flags, ...) OPEN_BODY(dirfd)
EXPORT int openat64(int dirfd, const char *path, int flags, ...) OPEN_BODY(dirfd)

/* the fortified entries (_FORTIFY_SOURCE) take no mode */
EXPORT int __open_2(const char *path, int flags)
{
    return do_openat(AT_FDCWD, path, flags, 0);
}

EXPORT int __open64_2(const char *path, int flags)
{
    return do_openat(AT_FDCWD, path, flags, 0);
}

EXPORT int creat(const char *path, mode_t mode)
{
    return do_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    FAIL_IF(fd_fault("write", fd));
    REAL(write);
    return real_write(fd, buf, n);
}

EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    FAIL_IF(fd_fault("write", fd));
    REAL(pwrite);
    return real_pwrite(fd, buf, n, off);
}

EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    FAIL_IF(fd_fault("write", fd));
    REAL(pwrite64);
    return real_pwrite64(fd, buf, n, off);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    FAIL_IF(fd_fault("write", fd));
    REAL(writev);
    return real_writev(fd, iov, cnt);
}

EXPORT int fsync(int fd)
{
    FAIL_IF(fd_fault("fsync", fd));
    REAL(fsync);
    return real_fsync(fd);
}

EXPORT int fdatasync(int fd)
{
    FAIL_IF(fd_fault("fsync", fd));
    REAL(fdatasync);
    return real_fdatasync(fd);
}

EXPORT int ftruncate(int fd, off_t len)
{
    FAIL_IF(fd_fault("truncate", fd));
    REAL(ftruncate);
    return real_ftruncate(fd, len);
}

EXPORT int rename(const char *from, const char *to)
{
    FAIL_IF(path_fault("rename", AT_FDCWD, to));
    REAL(rename);
    return real_rename(from, to);
}

EXPORT int renameat(int fromfd, const char *from, int tofd, const char *to)
{
    FAIL_IF(path_fault("rename", tofd, to));
    REAL(renameat);
    return real_renameat(fromfd, from, tofd, to);
}

EXPORT int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned flags)
{
    FAIL_IF(path_fault("rename", tofd, to));
    REAL(renameat2);
    return real_renameat2(fromfd, from, tofd, to, flags);
}

EXPORT int mkdir(const char *path, mode_t mode)
{
    FAIL_IF(path_fault("mkdir", AT_FDCWD, path));
    REAL(mkdir);
    return real_mkdir(path, mode);
}

EXPORT int mkdirat(int dirfd, const char *path, mode_t mode)
{
    FAIL_IF(path_fault("mkdir", dirfd, path));
    REAL(mkdirat);
    return real_mkdirat(dirfd, path, mode);
}
