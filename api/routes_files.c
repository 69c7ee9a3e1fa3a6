/* routes_files.c: files of a trial's directory (trial-file) and of the experiment's
 * log directory (/logs/). Only regular files that are, after every symlink, inside
 * that directory and in none of its hidden directories are served: the name cannot
 * climb out of it, nor reach .nni/ (the trial's channel credentials, its state). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "api/routes.h"

/* 1 when the n bytes at p are a relative path whose every component is non-empty and
 * does not start with '.' (no ".", "..", ".nni" or other hidden name), else 0. */
static int components_visible(const char *p, size_t n)
{
    size_t i = 0;
    for (;;) {
        size_t start = i;
        while (i < n && p[i] != '/')
            i++;
        if (i == start || p[start] == '.')
            return 0;
        if (i == n)
            return 1;
        i++; /* the '/' */
    }
}

static int hexdigit(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Percent-decodes s in place; returns how many escapes it decoded, -1 for a NUL. */
static int percent_decode(char *s)
{
    int n = 0;
    char *o = s;
    for (const char *i = s; *i; i++) {
        int hi, lo;
        if (i[0] == '%' && (hi = hexdigit((unsigned char)i[1])) >= 0 && (lo = hexdigit((unsigned char)i[2])) >= 0) {
            if (hi == 0 && lo == 0)
                return -1;
            *o++ = (char)(hi << 4 | lo);
            i += 2;
            n++;
        } else {
            *o++ = *i;
        }
    }
    *o = '\0';
    return n;
}

int trial_file_name_status(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 1024 || name[0] == '/' || name[n - 1] == '/')
        return 400;
    for (size_t i = 0, start = 0; i <= n; i++) { /* empty, "." and ".." components */
        if (i < n && name[i] != '/')
            continue;
        size_t len = i - start;
        if (len == 0 || (len == 1 && name[start] == '.') || (len == 2 && name[start] == '.' && name[start + 1] == '.'))
            return 400;
        start = i + 1;
    }
    /* a hidden component, also in the name as each further decoding reads it (a client
     * that encoded twice: %252Enni%252Fchannel) */
    char *d = xstrdup(name);
    int st = 0;
    for (;;) { /* each decoding shortens the name: this ends */
        int dec;
        if (!components_visible(d, strlen(d)) || (dec = percent_decode(d)) < 0) {
            st = 403;
            break;
        }
        if (dec == 0)
            break;
    }
    free(d);
    return st;
}

/* Opens dir/name when it is a regular file inside dir once symlinks are resolved.
 * The check is on the opened file itself (/proc/self/fd), so a symlink swapped in
 * between cannot redirect it. Returns the fd, or -1 with an error reply sent. */
static int open_inside(struct req *q, const char *dir, const char *name, const char *what, struct stat *st)
{
    char real[PATH_MAX];
    if (!realpath(dir, real)) {
        reply_error(q->r, 404, "%s has no files yet (%s: %s)", what, dir, strerror(errno));
        return -1;
    }
    char *full = xasprintf("%s/%s", real, name);
    /* O_NONBLOCK: a FIFO there must not block the api */
    int fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    int err = errno;
    free(full);
    if (fd < 0) {
        reply_error(q->r, 404, "%s has no file %.200s (%s)", what, name, strerror(err));
        return -1;
    }
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n >= 0)
        target[n] = '\0';
    size_t rl = strlen(real);
    if (n < 0 || (size_t)n <= rl || strncmp(target, real, rl) != 0 || target[rl] != '/') {
        close(fd);
        reply_error(q->r, 403, "%s: %.200s leads outside its directory", what, name);
        return -1;
    }
    if (!components_visible(target + rl + 1, (size_t)n - rl - 1)) {
        close(fd);
        reply_error(q->r, 403, "%s: %.200s leads into a hidden file or directory (not served)", what, name);
        return -1;
    }
    if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        reply_error(q->r, 404, "%s: %.200s is not a regular file", what, name);
        return -1;
    }
    return fd;
}

/* Sends the file's current length without reading it into memory. */
static void send_file(struct req *q, int fd, const struct stat *st, const char *content_type)
{
    add_api_headers(q->r, content_type);
    struct evbuffer *b = evbuffer_new();
    if (st->st_size > 0) {
        if (evbuffer_add_file(b, fd, 0, st->st_size) < 0) { /* closes fd either way */
            evbuffer_free(b);
            reply_error(q->r, 500, "cannot read the file");
            return;
        }
    } else {
        close(fd);
    }
    evhttp_send_reply(q->r, 200, "OK", b);
    evbuffer_free(b);
}

/* GET trial-file/:id/:filename: stdout, stderr and trial.log by NNI's names, any other
 * file of the trial's directory by its relative path (one URL segment; encode '/'). */
void h_trial_file(struct req *q)
{
    struct api *a = q->a;
    const char *filename = q->args[1];
    struct trial t;
    struct errbuf e;
    int f = trial_load(a->db, q->args[0], &t, &e);
    if (f < 0) {
        reply_error(q->r, 500, "%s", e.msg);
        return;
    }
    if (f == 0 || strcmp(t.experiment_id, a->exp_id) != 0) {
        if (f)
            trial_clear(&t);
        reply_error(q->r, 404, "trial %.64s not found in experiment %s", q->args[0], a->exp_id);
        return;
    }
    const char *name = strcmp(filename, "stdout") == 0   ? "trial.stdout"
                       : strcmp(filename, "stderr") == 0 ? "trial.stderr"
                                                         : filename;
    char *dir = trial_dir_path(&t, a->exp.exp_dir);
    char *what = xasprintf("trial %s", t.id);
    trial_clear(&t);
    int bad = trial_file_name_status(name);
    if (bad == 400) {
        reply_error(q->r, 400, "filename: '%.200s' must be a relative path inside the trial directory"
                               " (no '..', no leading '/')", filename);
    } else if (bad) {
        reply_error(q->r, 403, "filename: '%.200s' names a hidden file or directory of the trial (a component"
                               " starting with '.', such as .nni/): not served", filename);
    } else {
        struct stat st;
        int fd = open_inside(q, dir, name, what, &st);
        if (fd >= 0) {
            /* NNI's rule: names without a dot, and .txt/.log ones, are text */
            const char *dot = strrchr(filename, '.');
            int text = !strchr(filename, '.') || (dot && (strcmp(dot, ".txt") == 0 || strcmp(dot, ".log") == 0));
            if (st.st_size == 0 && text) {
                close(fd);
                char *msg = xasprintf("%s is empty.", filename);
                add_api_headers(q->r, "text/plain");
                struct evbuffer *b = evbuffer_new();
                evbuffer_add(b, msg, strlen(msg));
                evhttp_send_reply(q->r, 200, "OK", b);
                evbuffer_free(b);
                free(msg);
            } else {
                send_file(q, fd, &st, text ? "text/plain" : "application/octet-stream");
            }
        }
    }
    free(what);
    free(dir);
}

/* GET /logs/<file>: the experiment's log directory (NNI's URL says logs, the folder log). */
void h_log_file(struct req *q)
{
    const char *name = q->args[0];
    if (trial_file_name_status(name) != 0 || strchr(name, '/')) {
        reply_error(q->r, 404, "no log file %.200s", name);
        return;
    }
    char *dir = xasprintf("%s/log", q->a->exp.exp_dir);
    struct stat st;
    int fd = open_inside(q, dir, name, "the experiment's log directory", &st);
    if (fd >= 0)
        send_file(q, fd, &st, "text/plain");
    free(dir);
}
