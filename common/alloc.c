/* alloc.c: allocation wrappers that abort on out-of-memory, errbuf, strbuf. */
#include "common/common.h"

#include <stdlib.h>
#include <string.h>

static void oom(void)
{
    fputs("trialq: out of memory\n", stderr);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        oom();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        oom();
    return p;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        oom();
    va_end(ap);
    return s;
}

int errf(struct errbuf *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int errprefix(struct errbuf *e, const char *fmt, ...)
{
    if (e) {
        char prefix[512], old[sizeof e->msg];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(prefix, sizeof prefix, fmt, ap);
        va_end(ap);
        memcpy(old, e->msg, sizeof old);
        struct strbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "%s: %s", prefix, old);
        size_t n = sb.len < sizeof e->msg - 1 ? sb.len : sizeof e->msg - 1;
        memcpy(e->msg, sb.buf, n);
        e->msg[n] = '\0';
        sb_free(&sb);
    }
    return -1;
}

void sb_init(struct strbuf *sb)
{
    sb->buf = NULL;
    sb->len = sb->cap = 0;
}

void sb_free(struct strbuf *sb)
{
    free(sb->buf);
    sb_init(sb);
}

static void sb_grow(struct strbuf *sb, size_t extra)
{
    if (sb->len + extra + 1 <= sb->cap)
        return;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < sb->len + extra + 1)
        cap *= 2;
    sb->buf = xrealloc(sb->buf, cap);
    sb->cap = cap;
}

void sb_add(struct strbuf *sb, const char *s, size_t n)
{
    sb_grow(sb, n);
    memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
}

void sb_puts(struct strbuf *sb, const char *s)
{
    sb_add(sb, s, strlen(s));
}

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        sb_grow(sb, (size_t)n);
        vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap2);
        sb->len += (size_t)n;
    }
    va_end(ap2);
}

char *sb_detach(struct strbuf *sb)
{
    char *s = sb->buf ? sb->buf : xstrdup("");
    sb_init(sb);
    return s;
}

int str_starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int str_ends(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}
