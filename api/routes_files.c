/* routes_files.c: files of a trial's directory (trial-file) and of the experiment's
 * log directory (/logs/). Only regular files that are, after every symlink, inside
 * that directory are served; the name cannot climb out of it. */
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

/* A relative name without "..", "." or empty components. */
static int name_is_relative_inside(const char *name)
{
    if (!*name || *name == '/' || strlen(name) > 1024)
        return 0;
    const char *p = name;
    while (*p) {
        const char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return 0;
        p += len;
        if (*p == '/')
            p++;
    }
    return name[strlen(name) - 1] != '/';
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
    if (!name_is_relative_inside(name)) {
        reply_error(q->r, 400, "filename: '%.200s' must be a relative path inside the trial directory"
                               " (no '..', no leading '/')", filename);
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
    if (!name_is_relative_inside(name) || strchr(name, '/') || name[0] == '.') {
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
