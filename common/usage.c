/* usage.c: help texts and option parsing from a command's table (usage.h). */
#include "common/usage.h"

#include <string.h>

/* The argument of options that a usage text leaves out. */
static const struct {
    const char *name, *arg;
} implied_args[] = {{"home", "DIR"}, {"experiment_dir", "DIR"}};

const char *usage_opt_arg(const char *usage, const struct option *o, char *buf, size_t n)
{
    if (o->has_arg == no_argument)
        return NULL;
    int optional = o->has_arg == optional_argument;
    char key[64];
    snprintf(key, sizeof key, optional ? "--%s[=" : "--%s ", o->name);
    const char *at = strstr(usage, key);
    if (at) {
        at += strlen(key);
        size_t len = strcspn(at, optional ? "]" : " ])\n");
        snprintf(buf, n, optional ? "[=%.*s]" : "%.*s", (int)len, at);
        return buf;
    }
    for (size_t i = 0; i < sizeof implied_args / sizeof implied_args[0]; i++)
        if (strcmp(o->name, implied_args[i].name) == 0)
            return implied_args[i].arg;
    return optional ? "[=ARG]" : "ARG";
}

const char *usage_opt_text(const char *usage, const struct option *o, char *buf, size_t n)
{
    char arg[64];
    const char *a = usage_opt_arg(usage, o, arg, sizeof arg);
    snprintf(buf, n, "--%s%s%s", o->name, a && a[0] != '[' ? " " : "", a ? a : "");
    return buf;
}

const char *usage_form(const char *usage, int i, int *len)
{
    const char *p = usage;
    for (; i > 0 && *p; i--)
        p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n');
    if (!*p && p != usage)
        return NULL;
    *len = (int)strcspn(p, "\n");
    return p;
}

void usage_print(FILE *f, const char *usage, const char *summary, const struct option *opts)
{
    int len;
    const char *form;
    for (int i = 0; (form = usage_form(usage, i, &len)); i++)
        fprintf(f, "%s%.*s\n", i ? "   or: " : "usage: ", len, form);
    fprintf(f, "\n%s\n\noptions:\n", summary);
    char buf[128];
    for (const struct option *o = opts; o && o->name; o++)
        fprintf(f, "  %s\n", usage_opt_text(usage, o, buf, sizeof buf));
}

int role_usage(const struct role *r)
{
    usage_print(stderr, r->usage, r->summary, r->opts);
    if (r->more)
        r->more(stderr);
    return 2;
}

int role_getopt(const struct role *r, int argc, char **argv, int (*set)(void *ctx, int val, char *arg), void *ctx)
{
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, r->shortopts, r->opts, NULL)) != -1)
        if (c == '?' || c == ':' || set(ctx, c, optarg) < 0)
            return role_usage(r);
    return 0;
}
