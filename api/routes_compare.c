/* routes_compare.c: GET /webui/compare?ids=a,b,c (api/compare.h, docs/rest-api.md):
 * experiments of the database side by side, for the All experiments page. */
#include <stdlib.h>
#include <string.h>

#include "api/compare.h"
#include "api/routes_webui.h"
#include "schema/webui_rows.h"

/* ids: 1 to CMP_MAX_EXPS experiment ids ([A-Za-z0-9_-], 1 to 64 characters), comma
 * separated, none twice: split into ids (pointers into the copy *buf). Returns how
 * many, or -1 with the error answered. */
static int parse_ids(struct req *q, const char *list, char **buf, char **ids)
{
    if (!list || !*list) {
        reply_error(q->r, 400, "query parameter ids: the experiments to compare, comma-separated (1 to %d ids)",
                    CMP_MAX_EXPS);
        return -1;
    }
    *buf = xstrdup(list);
    int n = 0;
    for (char *p = *buf;; p++) {
        size_t len = strcspn(p, ",");
        size_t ok = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
        const char *why = len == 0 ? "an empty entry" : len > 64 ? "an id over 64 characters"
                        : ok < len ? "an id with a character other than letters, digits, '_' and '-'"
                        : n == CMP_MAX_EXPS ? "too many ids" : NULL;
        for (int i = 0; !why && i < n; i++)
            if (strlen(ids[i]) == len && strncmp(ids[i], p, len) == 0)
                why = "an id given twice";
        if (why) {
            reply_error(q->r, 400, "query parameter ids: %s in '%.200s' (1 to %d ids, comma-separated)", why, list,
                        CMP_MAX_EXPS);
            return -1;
        }
        ids[n++] = p;
        p += len;
        if (!*p)
            break;
        *p = '\0';
    }
    return n;
}

/* -> exp_compare_json's object. The last answer is kept while no trial of the database
 * changes (the change counter is the database's, not one experiment's). */
void h_webui_compare(struct req *q)
{
    static char *cache_ids, *cache_body;
    static int64_t cache_seq = -1;
    const char *list = query_str(q, "ids");
    char *buf = NULL, *ids[CMP_MAX_EXPS];
    int n = parse_ids(q, list, &buf, ids);
    struct errbuf e;
    int64_t seq = 0;
    if (n < 0) {
        free(buf);
        return;
    }
    if (change_counter_now(q->a->db, &seq, &e) < 0) {
        reply_error(q->r, 500, "%s", e.msg);
    } else if (cache_body && seq == cache_seq && strcmp(cache_ids, list) == 0) {
        reply_json(q->r, 200, cache_body);
    } else {
        struct strbuf sb;
        sb_init(&sb);
        int rc = exp_compare_json(q->a->db, ids, n, seq, &sb, &e);
        if (rc < 0) {
            reply_error(q->r, rc == -2 ? 404 : 500, "%s%s", rc == -2 ? "query parameter " : "", e.msg);
        } else {
            free(cache_ids);
            free(cache_body);
            cache_ids = xstrdup(list);
            cache_body = xstrdup(sb.buf);
            cache_seq = seq;
            reply_json(q->r, 200, sb.buf);
        }
        sb_free(&sb);
    }
    free(buf);
}
