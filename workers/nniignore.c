/* nniignore.c: gitignore-style matching for .nniignore files, and the walk of a trial
 * code directory that lists what will be shipped. Rules (git's): blank lines and '#'
 * comments skipped; '!' re-includes; a trailing '/' matches directories only; a
 * pattern with a '/' elsewhere is relative to its .nniignore's directory, one without
 * matches a name at any depth; '*', '?' and [...] never cross '/', '**' does. An
 * ignored directory is not entered (a file inside it cannot be re-included). */
#include "workers/nniignore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ignore_rule {
    char *pattern;
    int negate, dir_only, anchored;
};

struct ignore_rules {
    char *base; /* directory of the .nniignore, relative to the root ("" = root) */
    struct ignore_rule *r;
    int n;
};

/* [...] at p (p points at '['); *adv = bytes of the class. -1: not a valid class. */
static int class_match(const char *p, char c, size_t *adv)
{
    const char *q = p + 1;
    int neg = 0, hit = 0;
    if (*q == '!' || *q == '^') {
        neg = 1;
        q++;
    }
    int first = 1;
    while (*q && (*q != ']' || first)) {
        first = 0;
        char lo = *q;
        if (lo == '\\' && q[1])
            lo = *++q;
        if (q[1] == '-' && q[2] && q[2] != ']') {
            char hi = q[2];
            if (c >= lo && c <= hi)
                hit = 1;
            q += 3;
        } else {
            if (c == lo)
                hit = 1;
            q++;
        }
    }
    if (*q != ']')
        return -1;
    *adv = (size_t)(q + 1 - p);
    return hit != neg;
}

int glob_match(const char *p, const char *s)
{
    for (;;) {
        if (*p == '\0')
            return *s == '\0';
        if (p[0] == '*' && p[1] == '*') {
            const char *q = p + 2;
            while (*q == '*')
                q++;
            if (*q == '\0')
                return 1; /* trailing "**": everything below */
            if (*q == '/') {
                q++; /* double star + slash: zero or more whole directories */
                if (glob_match(q, s))
                    return 1;
                for (const char *t = s; *t; t++)
                    if (*t == '/' && glob_match(q, t + 1))
                        return 1;
                return 0;
            }
            for (const char *t = s;; t++) { /* "**x": like '*', across '/' */
                if (glob_match(q, t))
                    return 1;
                if (!*t)
                    return 0;
            }
        }
        if (*p == '*') {
            p++;
            for (const char *t = s;; t++) {
                if (glob_match(p, t))
                    return 1;
                if (!*t || *t == '/')
                    return 0;
            }
        }
        if (*p == '?') {
            if (!*s || *s == '/')
                return 0;
            p++;
            s++;
            continue;
        }
        if (*p == '[') {
            size_t adv;
            int m = *s && *s != '/' ? class_match(p, *s, &adv) : 0;
            if (m < 0) {
                /* an unclosed '[' is a literal */
                if (*s != '[')
                    return 0;
                p++;
                s++;
                continue;
            }
            if (!m)
                return 0;
            p += adv;
            s++;
            continue;
        }
        if (*p == '\\' && p[1])
            p++;
        if (*p != *s)
            return 0;
        p++;
        s++;
    }
}

struct ignore_rules *ignore_parse(const char *text, const char *base)
{
    struct ignore_rules *r = xcalloc(1, sizeof *r);
    r->base = xstrdup(base ? base : "");
    const char *line = text;
    while (line && *line) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char *s = xstrndup(line, len);
        line = nl ? nl + 1 : NULL;
        size_t n = strlen(s);
        if (n && s[n - 1] == '\r')
            s[--n] = '\0';
        /* trailing spaces go, unless escaped with a backslash */
        while (n && s[n - 1] == ' ' && !(n >= 2 && s[n - 2] == '\\'))
            s[--n] = '\0';
        struct ignore_rule rule = {0};
        char *p = s;
        if (*p == '\0' || *p == '#') {
            free(s);
            continue;
        }
        if (*p == '!') {
            rule.negate = 1;
            p++;
        } else if (*p == '\\' && (p[1] == '#' || p[1] == '!')) {
            p++;
        }
        n = strlen(p);
        if (n && p[n - 1] == '/') {
            rule.dir_only = 1;
            p[--n] = '\0';
        }
        if (strchr(p, '/'))
            rule.anchored = 1;
        while (*p == '/')
            p++;
        if (*p == '\0') {
            free(s);
            continue;
        }
        rule.pattern = xstrdup(p);
        free(s);
        r->r = xrealloc(r->r, sizeof *r->r * (size_t)(r->n + 1));
        r->r[r->n++] = rule;
    }
    return r;
}

void ignore_free(struct ignore_rules *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n; i++)
        free(r->r[i].pattern);
    free(r->r);
    free(r->base);
    free(r);
}

int ignore_match(struct ignore_rules *const *sets, int nsets, const char *path, int is_dir)
{
    int ignored = 0;
    for (int k = 0; k < nsets; k++) {
        const struct ignore_rules *r = sets[k];
        const char *rel = path;
        size_t bl = strlen(r->base);
        if (bl) {
            if (strncmp(path, r->base, bl) != 0 || path[bl] != '/')
                continue; /* the rules of a .nniignore apply below its directory only */
            rel = path + bl + 1;
        }
        const char *name = strrchr(rel, '/');
        name = name ? name + 1 : rel;
        for (int i = 0; i < r->n; i++) {
            const struct ignore_rule *x = &r->r[i];
            if (x->dir_only && !is_dir)
                continue;
            if (glob_match(x->pattern, x->anchored ? rel : name))
                ignored = !x->negate;
        }
    }
    return ignored;
}

struct walk {
    const char *root;
    dev_t leave_dev; /* the file left out (leave_out), when there is one */
    ino_t leave_ino;
    int leave;
    struct ignore_rules **sets;
    int nsets;
    struct strbuf list;
    int entries;
    int64_t bytes;
};

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk_dir(struct walk *w, const char *rel, struct errbuf *e)
{
    char *abs = *rel ? xasprintf("%s/%s", w->root, rel) : xstrdup(w->root);
    char *ignfile = xasprintf("%s/.nniignore", abs);
    char *text = read_file(ignfile, NULL);
    int pushed = 0;
    if (text) {
        w->sets = xrealloc(w->sets, sizeof *w->sets * (size_t)(w->nsets + 1));
        w->sets[w->nsets++] = ignore_parse(text, rel);
        pushed = 1;
        free(text);
    }
    free(ignfile);
    DIR *d = opendir(abs);
    if (!d) {
        int rc = errf(e, "cannot read directory %s: %s", abs, strerror(errno));
        free(abs);
        return rc;
    }
    char **names = NULL;
    int nn = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        names = xrealloc(names, sizeof *names * (size_t)(nn + 1));
        names[nn++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (nn > 1) /* an empty directory has no array to sort */
        qsort(names, (size_t)nn, sizeof *names, cmp_str);
    int rc = 0;
    for (int i = 0; i < nn; i++) {
        char *sub = *rel ? xasprintf("%s/%s", rel, names[i]) : xstrdup(names[i]);
        char *subabs = xasprintf("%s/%s", abs, names[i]);
        struct stat st;
        if (rc == 0 && lstat(subabs, &st) == 0) {
            int is_dir = S_ISDIR(st.st_mode);
            int left_out = w->leave && st.st_dev == w->leave_dev && st.st_ino == w->leave_ino;
            if (left_out)
                log_info("code directory %s: %s is the experiment's config, not shipped", w->root, sub);
            else if (!ignore_match(w->sets, w->nsets, sub, is_dir)) {
                w->entries++;
                sb_add(&w->list, sub, strlen(sub) + 1);
                if (w->entries > CODE_MAX_ENTRIES)
                    rc = errf(e, "trialCodeDirectory %s has more than %d files and directories (NNI's "
                                 "limit; .nniignore applied): list what the trial does not need in %s/.nniignore",
                              w->root, CODE_MAX_ENTRIES, w->root);
                else if (is_dir)
                    rc = walk_dir(w, sub, e);
                else if (S_ISREG(st.st_mode)) {
                    w->bytes += st.st_size;
                    if (w->bytes > CODE_MAX_BYTES)
                        rc = errf(e, "trialCodeDirectory %s holds more than %lld MB (NNI's limit is 300 MB; "
                                     ".nniignore applied; %s alone is %lld bytes): list data and outputs in "
                                     "%s/.nniignore",
                                  w->root, (long long)(w->bytes >> 20), sub, (long long)st.st_size, w->root);
                }
            }
        }
        free(sub);
        free(subabs);
        free(names[i]);
    }
    free(names);
    free(abs);
    if (pushed)
        ignore_free(w->sets[--w->nsets]);
    return rc;
}

int code_list_build(const char *root, const char *leave_out, struct code_list *out, struct errbuf *e)
{
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode))
        return errf(e, "trialCodeDirectory %s: %s", root, errno ? strerror(errno) : "not a directory");
    struct walk w = {.root = root};
    struct stat ls;
    if (leave_out && stat(leave_out, &ls) == 0 && S_ISREG(ls.st_mode)) {
        w.leave = 1;
        w.leave_dev = ls.st_dev;
        w.leave_ino = ls.st_ino;
    }
    sb_init(&w.list);
    int rc = walk_dir(&w, "", e);
    while (w.nsets)
        ignore_free(w.sets[--w.nsets]);
    free(w.sets);
    if (rc < 0) {
        sb_free(&w.list);
        return -1;
    }
    out->len = w.list.len;
    out->paths = sb_detach(&w.list);
    out->entries = w.entries;
    out->bytes = w.bytes;
    return 0;
}

void code_list_free(struct code_list *l)
{
    free(l->paths);
    memset(l, 0, sizeof *l);
}

/* ---------------- copying a code directory ---------------- */

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
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0) {
                rc = errf(e, "cannot write %s: %s", to, strerror(errno));
                goto done;
            }
            off += w;
        }
    }
    if (n < 0)
        rc = errf(e, "cannot read %s: %s", from, strerror(errno));
done:
    close(in);
    if (close(out) < 0 && rc == 0)
        rc = errf(e, "cannot write %s: %s", to, strerror(errno));
    return rc;
}

int code_copy_tree(const char *src, const char *dst, const char *leave_out, struct errbuf *e)
{
    /* the list (and the limits) first: nothing is written when the dir is too big */
    struct code_list list;
    if (code_list_build(src, leave_out, &list, e) < 0)
        return -1;
    char *tmp = xasprintf("%s.tmp%d", dst, (int)getpid());
    rm_rf(tmp);
    int rc = 0;
    if (mkdir_p(tmp, 0755) < 0)
        rc = errf(e, "cannot create %s: %s", tmp, strerror(errno));
    /* parents come before their children in the list */
    for (size_t off = 0; rc == 0 && off < list.len; off += strlen(list.paths + off) + 1) {
        const char *rel = list.paths + off;
        char *from = xasprintf("%s/%s", src, rel);
        char *to = xasprintf("%s/%s", tmp, rel);
        struct stat st;
        if (lstat(from, &st) < 0) {
            rc = errf(e, "cannot stat %s: %s", from, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            if (mkdir(to, 0755) < 0 && errno != EEXIST)
                rc = errf(e, "cannot create %s: %s", to, strerror(errno));
        } else if (S_ISREG(st.st_mode)) {
            rc = copy_file(from, to, st.st_mode, e);
        } else if (S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t n = readlink(from, target, sizeof target - 1);
            if (n < 0 || (target[n] = '\0', symlink(target, to) < 0))
                rc = errf(e, "cannot copy the symbolic link %s: %s", from, strerror(errno));
        } /* sockets, fifos, devices: not code */
        free(from);
        free(to);
    }
    if (rc == 0 && rename(tmp, dst) < 0) {
        if (errno == ENOTEMPTY || errno == EEXIST)
            rc = 0; /* another worker finished the same copy first */
        else
            rc = errf(e, "cannot rename %s to %s: %s", tmp, dst, strerror(errno));
    }
    if (rc == 0)
        log_info("copied the code directory %s to %s (%d entries, %lld bytes)", src, dst, list.entries,
                 (long long)list.bytes);
    code_list_free(&list);
    rm_rf(tmp);
    free(tmp);
    return rc;
}
