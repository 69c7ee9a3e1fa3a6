/* shell.c: one way to put a string into a shell command line, for every place that
 * writes one (the dispatcher's command, the remote platform's scripts over SSH, the
 * OpenPAI and Kubernetes launch scripts). */
#include "common/common.h"

void sh_quote(struct strbuf *sb, const char *s)
{
    sb_add(sb, "'", 1);
    for (; *s; s++) {
        if (*s == '\'')
            sb_add(sb, "'\\''", 4); /* end the quote, an escaped ', quote again */
        else
            sb_add(sb, s, 1);
    }
    sb_add(sb, "'", 1);
}

char *sh_quoted(const char *s)
{
    struct strbuf sb;
    sb_init(&sb);
    sh_quote(&sb, s);
    return sb_detach(&sb);
}
