/* fault.c: resource faults (a full disk, I/O errors, a read-only filesystem, a database
 * locked or unwritable) as the user sees them, and log lines that do not flood.
 *
 * Each process keeps its current faults in memory, one per key ("database", a trial
 * directory's filesystem), with a message naming the path and what to do. Where the
 * database cannot be written, that is the only place they can live, so each process
 * also publishes them in a small file of fixed size (FAULT_FILE_SIZE) that it created
 * and filled while the disk still had room: rewriting bytes already allocated needs no
 * free block, so the file stays writable on a full disk. The api serves its own faults
 * from memory and the other processes' from their files (check-status `errors`, the web
 * UI banner); nnictl reads the files (docs/architecture.md, "Resource faults"). */
#include "common/common.h"
#include "common/json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAULT_MAX 8
#define LIMITED_MAX 32
#define LIMIT_MS 60000

struct fault {
    char key[256];
    char msg[FAULT_MSG_MAX];
    int64_t logged_ms; /* mono ms of the last log line about it */
    long unlogged;     /* times seen since */
};

static struct fault g_faults[FAULT_MAX];
static int g_nfaults;
static int g_fd = -1; /* the published file */

static void publish(void)
{
    if (g_fd < 0)
        return;
    char buf[FAULT_FILE_SIZE];
    memset(buf, 0, sizeof buf);
    size_t n = 0;
    for (int i = 0; i < g_nfaults; i++) {
        size_t l = strlen(g_faults[i].msg);
        if (n + l + 1 >= sizeof buf)
            break;
        memcpy(buf + n, g_faults[i].msg, l);
        buf[n + l] = '\n';
        n += l + 1;
    }
    /* the whole (allocated) file in place: no new block is needed */
    if (pwrite(g_fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf)
        log_msg(LOG_WARN, "cannot publish the current faults: %s", strerror(errno));
}

int fault_publish_to(const char *dir, const char *role)
{
    if (mkdir_p(dir, 0755) < 0)
        return -1;
    char *path = xasprintf("%s/%s.%d", dir, role, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    free(path);
    if (fd < 0)
        return -1;
    char zero[FAULT_FILE_SIZE];
    memset(zero, 0, sizeof zero);
    if (write(fd, zero, sizeof zero) != (ssize_t)sizeof zero || fsync(fd) < 0) {
        close(fd);
        return -1;
    }
    if (g_fd >= 0)
        close(g_fd);
    g_fd = fd;
    publish();
    return 0;
}

static struct fault *find(const char *key)
{
    for (int i = 0; i < g_nfaults; i++)
        if (strcmp(g_faults[i].key, key) == 0)
            return &g_faults[i];
    return NULL;
}

void fault_set(const char *key, const char *fmt, ...)
{
    char msg[FAULT_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct fault *f = find(key);
    int64_t now = mono_ms();
    if (!f) {
        if (g_nfaults == FAULT_MAX)
            f = &g_faults[FAULT_MAX - 1]; /* the newest replaces the last */
        else
            f = &g_faults[g_nfaults++];
        snprintf(f->key, sizeof f->key, "%s", key);
        f->msg[0] = '\0';
        f->logged_ms = 0;
        f->unlogged = 0;
    }
    if (strcmp(f->msg, msg) != 0) {
        snprintf(f->msg, sizeof f->msg, "%s", msg);
        publish();
        log_msg(LOG_ERROR, "%s", msg);
        f->logged_ms = now;
        f->unlogged = 0;
        return;
    }
    f->unlogged++;
    if (now - f->logged_ms >= LIMIT_MS) {
        log_msg(LOG_ERROR, "%s (%ld times in the last minute)", msg, f->unlogged);
        f->logged_ms = now;
        f->unlogged = 0;
    }
}

void fault_clear(const char *key)
{
    struct fault *f = find(key);
    if (!f)
        return;
    log_msg(LOG_INFO, "resolved: %s", f->msg);
    *f = g_faults[--g_nfaults];
    publish();
}

int fault_active(void)
{
    return g_nfaults;
}

int fault_has(const char *key)
{
    return find(key) != NULL;
}

int fault_each(void (*fn)(const char *msg, void *arg), void *arg)
{
    for (int i = 0; i < g_nfaults; i++)
        fn(g_faults[i].msg, arg);
    return g_nfaults;
}

int fault_each_published(const char *dir, pid_t skip, void (*fn)(const char *msg, void *arg), void *arg)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *dot = strrchr(de->d_name, '.');
        int pid = dot ? atoi(dot + 1) : 0;
        /* a process that is gone has no current fault */
        if (pid <= 0 || pid == skip || (kill(pid, 0) < 0 && errno == ESRCH))
            continue;
        char *path = xasprintf("%s/%s", dir, de->d_name);
        char *s = read_file(path, NULL);
        free(path);
        for (char *line = s, *nl; line && *line; line = nl + 1) {
            nl = strchr(line, '\n');
            if (!nl)
                break;
            *nl = '\0';
            fn(line, arg);
            n++;
        }
        free(s);
    }
    closedir(d);
    return n;
}

void fault_json_add(const char *msg, void *array)
{
    /* one line per fault, though the api and its workers meet the same */
    const cJSON *it;
    cJSON_ArrayForEach(it, (cJSON *)array) {
        if (cJSON_IsString(it) && strcmp(it->valuestring, msg) == 0)
            return;
    }
    cJSON_AddItemToArray(array, cJSON_CreateString(msg));
}

int fault_is_resource(int err)
{
    return err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS;
}

struct limited {
    char msg[512];
    int64_t logged_ms;
    long unlogged;
};

void log_limited(enum log_level lvl, const char *fmt, ...)
{
    static struct limited seen[LIMITED_MAX];
    static int next;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int64_t now = mono_ms();
    for (int i = 0; i < LIMITED_MAX; i++) {
        struct limited *l = &seen[i];
        if (strcmp(l->msg, msg) != 0 || now - l->logged_ms > 2 * LIMIT_MS)
            continue;
        l->unlogged++;
        if (now - l->logged_ms >= LIMIT_MS) {
            log_msg(lvl, "%s (%ld times in the last minute)", msg, l->unlogged);
            l->logged_ms = now;
            l->unlogged = 0;
        }
        return;
    }
    struct limited *l = &seen[next];
    next = (next + 1) % LIMITED_MAX;
    snprintf(l->msg, sizeof l->msg, "%s", msg);
    l->logged_ms = now;
    l->unlogged = 0;
    log_msg(lvl, "%s", msg);
}
