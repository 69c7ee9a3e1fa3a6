/* context.c: the state shared while converting and validating one config file, and
 * the one place that formats "<file>:<line>:<col>: <keyPath>: <what is wrong>". */
#include "config/config_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void vctx_init(struct vctx *c, const char *file, const char *base_dir, struct errbuf *e)
{
    memset(c, 0, sizeof *c);
    c->file = file;
    c->base_dir = xstrdup(base_dir);
    c->marks = marks_new();
    sb_init(&c->path);
    sb_puts(&c->path, ""); /* buf is never NULL from here on */
    c->e = e;
}

void vctx_release(struct vctx *c)
{
    free(c->base_dir);
    marks_free(c->marks);
    sb_free(&c->path);
    for (int i = 0; i < c->nwarnings; i++)
        free(c->warnings[i]);
    free(c->warnings);
    memset(c, 0, sizeof *c);
}

static int emit(struct vctx *c, struct ymark m, const char *path, const char *origin,
                const char *msg)
{
    if (m.line <= 0) {
        m.line = 1;
        m.col = 1;
    }
    if (!path || !*path)
        return errf(c->e, "%s:%d:%d: %s", c->file, m.line, m.col, msg);
    if (origin && strcmp(origin, path) != 0)
        return errf(c->e, "%s:%d:%d: %s (v1 key %s): %s", c->file, m.line, m.col, path, origin,
                    msg);
    return errf(c->e, "%s:%d:%d: %s: %s", c->file, m.line, m.col, path, msg);
}

static int verr(struct vctx *c, const char *path, enum at at, const char *fmt, va_list ap)
{
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    struct ymark m = {0, 0};
    const char *origin = NULL;
    const struct mark_entry *en = marks_find(c->marks, path, 1);
    if (en) {
        origin = en->origin;
        if (at == AT_KEY && en->key.line)
            m = en->key;
        else
            m = en->value.line ? en->value : en->key;
    } else if ((en = marks_find(c->marks, path, 0)) != NULL) {
        /* never written (a missing key): point at the mapping that should hold it */
        m = en->key.line ? en->key : en->value;
    }
    return emit(c, m, path, origin, msg);
}

int cfg_err(struct vctx *c, const char *path, enum at at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verr(c, path, at, fmt, ap);
    va_end(ap);
    return -1;
}

/* verr at member of the current path (NULL: the current path itself) */
static void verr_here(struct vctx *c, const char *member, enum at at, const char *fmt, va_list ap)
{
    char *p = member ? path_child(c->path.buf, member) : xstrdup(c->path.buf);
    verr(c, p, at, fmt, ap);
    free(p);
}

int cfg_err_here(struct vctx *c, const char *member, enum at at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verr_here(c, member, at, fmt, ap);
    va_end(ap);
    return -1;
}

void cfg_warn_here(struct vctx *c, const char *member, const char *fmt, ...)
{
    struct errbuf tmp, *keep = c->e;
    c->e = &tmp;
    va_list ap;
    va_start(ap, fmt);
    verr_here(c, member, AT_KEY, fmt, ap);
    va_end(ap);
    c->e = keep;
    cfg_warn(c, "%s", tmp.msg);
}

int cfg_err_mark(struct vctx *c, struct ymark m, const char *path, const char *origin,
                 const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return emit(c, m, path, origin, msg);
}

void cfg_warn(struct vctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    if (!s)
        return;
    c->warnings = xrealloc(c->warnings, (size_t)(c->nwarnings + 1) * sizeof *c->warnings);
    c->warnings[c->nwarnings++] = xstrdup(s);
    free(s);
}

size_t path_push_key(struct strbuf *p, const char *key)
{
    size_t old = p->len;
    if (p->len)
        sb_puts(p, ".");
    sb_puts(p, key);
    return old;
}

size_t path_push_index(struct strbuf *p, size_t i)
{
    size_t old = p->len;
    sb_printf(p, "[%zu]", i);
    return old;
}

void path_pop(struct strbuf *p, size_t len)
{
    p->len = len;
    if (p->buf)
        p->buf[len] = '\0';
}

char *path_child(const char *path, const char *member)
{
    if (!path || !*path)
        return xstrdup(member);
    return xasprintf("%s.%s", path, member);
}
