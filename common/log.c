/* log.c: one logging family for every role. */
#include "common/common.h"

#include <string.h>
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
    /* one record, one line: a control byte in the message (text a trial, a tuner or a
     * server wrote that a caller passed on unescaped) cannot start a forged line or
     * reach the reader's terminal (docs/security.md, "Logs") */
    char out[sizeof line * 4];
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)line; *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            o += (size_t)snprintf(out + o, sizeof out - o, "\\x%02x", *p);
        else
            out[o++] = (char)*p;
    }
    out[o] = '\0';
    fprintf(stderr, "%s\n", out);
}

/* ---- warnings from outside input: one line per key, then a count per minute ---- */

#define INPUT_KEYS 64
#define INPUT_WINDOW_MS 60000

struct input_key {
    char key[160];
    const char *what;     /* a literal of the caller */
    enum log_level lvl;
    int64_t start_ms;     /* the minute that began with a logged line */
    long more;            /* counted since, not logged */
};

static struct input_key g_inputs[INPUT_KEYS];

static void input_report(struct input_key *k)
{
    if (k->more > 0)
        log_msg(k->lvl, "%s: %ld more %s in the last minute", k->key, k->more, k->what);
    k->more = 0;
}

int log_input(enum log_level lvl, const char *key, const char *what, const char *fmt, ...)
{
    if (lvl < g_level)
        return 0;
    int64_t now = mono_ms();
    struct input_key *k = NULL, *free_slot = NULL, *oldest = &g_inputs[0];
    for (int i = 0; i < INPUT_KEYS && !k; i++) {
        struct input_key *c = &g_inputs[i];
        if (!c->key[0]) {
            if (!free_slot)
                free_slot = c;
        } else if (strncmp(c->key, key, sizeof c->key - 1) == 0) {
            k = c;
        } else if (c->start_ms < oldest->start_ms) {
            oldest = c;
        }
    }
    if (k && now - k->start_ms < INPUT_WINDOW_MS) {
        k->more++;
        return 0;
    }
    if (!k) {
        k = free_slot ? free_slot : oldest;
        if (k->key[0])
            input_report(k); /* its count is not lost with its slot */
        snprintf(k->key, sizeof k->key, "%s", key);
    } else {
        input_report(k);
    }
    k->what = what;
    k->lvl = lvl;
    k->start_ms = now;
    k->more = 0;
    char msg[3072];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_msg(lvl, "%s: %s", k->key, msg);
    return 1;
}

void log_input_flush(int all)
{
    int64_t now = mono_ms();
    for (int i = 0; i < INPUT_KEYS; i++) {
        struct input_key *k = &g_inputs[i];
        if (k->key[0] && k->more > 0 && (all || now - k->start_ms >= INPUT_WINDOW_MS)) {
            input_report(k);
            k->start_ms = now; /* the next minute's count starts now */
        }
    }
}
