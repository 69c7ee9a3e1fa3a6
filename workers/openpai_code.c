/* openpai_code.c: helpers of the OpenPAI platform that involve no HTTP: shipping the
 * code directory to the shared storage (the walk with .nniignore and NNI's limits is
 * workers/nniignore.c's, shared with the remote platform), the YAML form of the job
 * protocol, sizes and shell quoting. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workers/nniignore.h"
#include "workers/openpai.h"

/* ---------------- code directory ---------------- */

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

int pai_copy_tree(const char *src, const char *dst, struct errbuf *e)
{
    /* the list (and the limits) first: nothing is written when the dir is too big */
    struct code_list list;
    if (code_list_build(src, &list, e) < 0)
        return -1;
    char *tmp = xasprintf("%s.tmp%d", dst, (int)getpid());
    rm_rf(tmp);
    int rc = 0;
    if (mkdir(tmp, 0755) < 0)
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
    code_list_free(&list);
    if (rc == 0 && rename(tmp, dst) < 0) {
        if (errno == ENOTEMPTY || errno == EEXIST)
            rc = 0; /* another worker finished the same copy first */
        else
            rc = errf(e, "cannot rename %s to %s: %s", tmp, dst, strerror(errno));
    }
    rm_rf(tmp);
    free(tmp);
    return rc;
}

/* ---------------- YAML ---------------- */

static void y_indent(struct strbuf *sb, int n)
{
    for (int i = 0; i < n; i++)
        sb_add(sb, " ", 1);
}

static void y_string(struct strbuf *sb, const char *s)
{
    sb_add(sb, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': sb_puts(sb, "\\\""); break;
        case '\\': sb_puts(sb, "\\\\"); break;
        case '\n': sb_puts(sb, "\\n"); break;
        case '\t': sb_puts(sb, "\\t"); break;
        case '\r': sb_puts(sb, "\\r"); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                sb_printf(sb, "\\x%02x", *p);
            else
                sb_add(sb, (const char *)p, 1);
        }
    }
    sb_add(sb, "\"", 1);
}

static void y_scalar(struct strbuf *sb, const cJSON *v)
{
    if (cJSON_IsString(v))
        y_string(sb, v->valuestring);
    else if (cJSON_IsBool(v))
        sb_puts(sb, cJSON_IsTrue(v) ? "true" : "false");
    else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9007199254740992.0)
            sb_printf(sb, "%lld", (long long)d);
        else if (isfinite(d)) {
            /* YAML 1.1 readers (PyYAML) take "1e+300" for a string: keep a '.' */
            char num[40];
            snprintf(num, sizeof num, "%.17g", d);
            char *ex = strchr(num, 'e');
            if (!strchr(num, '.') && ex)
                sb_printf(sb, "%.*s.0%s", (int)(ex - num), num, ex);
            else
                sb_puts(sb, num);
        }
        else
            sb_puts(sb, "null");
    } else if (cJSON_IsArray(v))
        sb_puts(sb, "[]");
    else if (cJSON_IsObject(v))
        sb_puts(sb, "{}");
    else
        sb_puts(sb, "null");
}

static int y_block(const cJSON *v)
{
    return (cJSON_IsObject(v) || cJSON_IsArray(v)) && v->child;
}

static void y_node(struct strbuf *sb, const cJSON *v, int indent)
{
    const cJSON *it;
    if (cJSON_IsObject(v)) {
        cJSON_ArrayForEach(it, v) {
            y_indent(sb, indent);
            y_string(sb, it->string);
            if (y_block(it)) {
                sb_puts(sb, ":\n");
                y_node(sb, it, indent + 2);
            } else {
                sb_puts(sb, ": ");
                y_scalar(sb, it);
                sb_puts(sb, "\n");
            }
        }
    } else if (cJSON_IsArray(v)) {
        cJSON_ArrayForEach(it, v) {
            y_indent(sb, indent);
            if (y_block(it)) {
                sb_puts(sb, "-\n");
                y_node(sb, it, indent + 2);
            } else {
                sb_puts(sb, "- ");
                y_scalar(sb, it);
                sb_puts(sb, "\n");
            }
        }
    } else {
        y_indent(sb, indent);
        y_scalar(sb, v);
        sb_puts(sb, "\n");
    }
}

void pai_yaml_emit(struct strbuf *sb, const cJSON *v)
{
    y_node(sb, v, 0);
}

/* ---------------- sizes, quoting ---------------- */

long long pai_size_mb(const cJSON *v)
{
    if (cJSON_IsNumber(v))
        return v->valuedouble > 0 ? (long long)ceil(v->valuedouble) : -1;
    if (!cJSON_IsString(v))
        return -1;
    char *end;
    double n = strtod(v->valuestring, &end);
    if (end == v->valuestring || n <= 0)
        return -1;
    while (*end == ' ')
        end++;
    /* NNI's units: binary multiples; "gb" and "g" alike */
    static const struct { const char *u; double mb; } units[] = {
        {"tb", 1024.0 * 1024}, {"t", 1024.0 * 1024}, {"gb", 1024}, {"g", 1024}, {"mb", 1},
        {"m", 1}, {"kb", 1.0 / 1024}, {"k", 1.0 / 1024}, {"b", 1.0 / 1024 / 1024}, {"", 1},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(end, units[i].u) == 0)
            return (long long)ceil(n * units[i].mb);
    return -1;
}

char *pai_shell_quote(const char *s)
{
    struct strbuf sb;
    sb_init(&sb);
    sb_add(&sb, "'", 1);
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            sb_puts(&sb, "'\\''");
        else
            sb_add(&sb, p, 1);
    }
    sb_add(&sb, "'", 1);
    return sb_detach(&sb);
}
