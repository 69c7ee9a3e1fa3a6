/* log.c: one logging family for every role. */
#include "common/common.h"

#include <strings.h>
#include <time.h>
#include <unistd.h>

static enum log_level g_level = LOG_INFO;
static const char *g_module = "trialq";

void log_set_level(enum log_level lvl) { g_level = lvl; }
void log_set_module(const char *module) { g_module = module; }

int log_level_parse(const char *s, enum log_level *out)
{
    static const struct { const char *name; enum log_level lvl; } names[] = {
        {"trace", LOG_TRACE}, {"debug", LOG_DEBUG}, {"info", LOG_INFO},
        {"warning", LOG_WARN}, {"warn", LOG_WARN}, {"error", LOG_ERROR},
        {"fatal", LOG_ERROR}, {"critical", LOG_ERROR},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcasecmp(s, names[i].name) == 0) {
            *out = names[i].lvl;
            return 0;
        }
    return -1;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
    static const char *tag[] = {"TRACE", "DEBUG", "INFO", "WARNING", "ERROR"};
    if (lvl < g_level)
        return;
    char ts[32];
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    char line[4096];
    int n = snprintf(line, sizeof line, "[%s] %s (%s %d) ", ts, tag[lvl], g_module, (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
