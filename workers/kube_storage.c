/* kube_storage.c: shipping the trial code directory to the shared storage, once per
 * experiment: the entries that workers/nniignore.c's walk keeps (every .nniignore on
 * the way, NNI's 2,000-entry and 300 MB limits) are copied into place. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workers/kube.h"
#include "workers/nniignore.h"

static int copy_file(const char *from, const char *to, mode_t mode, struct errbuf *e)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return errf(e, "cannot read %s: %s", from, strerror(errno));
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode & 0777);
    if (out < 0) {
        close(in);
        return errf(e, "cannot create %s: %s", to, strerror(errno));
    }
    char buf[65536];
    ssize_t r;
    int rc = 0;
    while ((r = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)r) != r) {
            rc = errf(e, "cannot write %s: %s", to, strerror(errno));
            break;
        }
    if (r < 0)
        rc = errf(e, "cannot read %s: %s", from, strerror(errno));
    close(in);
    if (close(out) < 0 && rc == 0)
        rc = errf(e, "cannot write %s: %s", to, strerror(errno));
    return rc;
}

static int copy_entry(const char *src, const char *dst, const char *rel, struct errbuf *e)
{
    char *from = xasprintf("%s/%s", src, rel), *to = xasprintf("%s/%s", dst, rel);
    struct stat sb;
    int rc = 0;
    if (lstat(from, &sb) < 0) {
        rc = errf(e, "cannot stat %s: %s", from, strerror(errno));
    } else if (S_ISDIR(sb.st_mode)) {
        if (mkdir(to, 0755) < 0 && errno != EEXIST)
            rc = errf(e, "cannot create %s: %s", to, strerror(errno));
    } else if (S_ISLNK(sb.st_mode)) {
        char target[4096];
        ssize_t n = readlink(from, target, sizeof target - 1);
        if (n >= 0) {
            target[n] = '\0';
            if (symlink(target, to) < 0)
                rc = errf(e, "cannot create the link %s: %s", to, strerror(errno));
        }
    } else if (S_ISREG(sb.st_mode)) {
        rc = copy_file(from, to, sb.st_mode, e);
    }
    free(from);
    free(to);
    return rc;
}

int kube_copy_code(const char *src, const char *dst, struct errbuf *e)
{
    struct stat sb;
    if (stat(dst, &sb) == 0)
        return 0; /* copied before (by this experiment's earlier worker) */
    struct code_list list;
    if (code_list_build(src, &list, e) < 0)
        return -1;
    char *tmp = xasprintf("%s.tmp-%d", dst, (int)getpid());
    rm_rf(tmp);
    int rc = 0;
    if (mkdir_p(tmp, 0755) < 0)
        rc = errf(e, "cannot create %s on the shared storage: %s", tmp, strerror(errno));
    /* the walk lists a directory before what it holds */
    for (size_t off = 0; rc == 0 && off < list.len; off += strlen(list.paths + off) + 1)
        rc = copy_entry(src, tmp, list.paths + off, e);
    if (rc == 0 && rename(tmp, dst) < 0 && errno != ENOTEMPTY && errno != EEXIST)
        rc = errf(e, "cannot rename %s to %s: %s", tmp, dst, strerror(errno));
    if (rc == 0)
        log_info("copied the code directory %s to %s (%d entries, %lld bytes)", src, dst, list.entries,
                 (long long)list.bytes);
    rm_rf(tmp);
    free(tmp);
    code_list_free(&list);
    return rc;
}
