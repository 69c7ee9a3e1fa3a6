/* acs_sign_cli: signs one request with trialq's Alibaba Cloud signer (common/acs_sign.c)
 * and prints what to send, for the tests of the PAI-DLC test server
 * (tests/servers/test_dlc_server.py), which sends it and checks the answer.
 *
 *   acs_sign_cli METHOD HOST PATH ACTION VERSION [--query NAME=VALUE]... [--body-file F]
 *                [--content-type T] [--date yyyy-MM-ddTHH:mm:ssZ] [--nonce N]
 *
 * The access key comes from ALIBABA_CLOUD_ACCESS_KEY_ID and ALIBABA_CLOUD_ACCESS_KEY_SECRET
 * (never from the command line, where ps shows it). Prints one JSON object:
 * {"target": "/path?query", "headers": {"name": "value", ...}, "canonical_request": "..."}.
 * Exit status 2: bad usage; 1: the request cannot be signed (the reason on stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/acs_sign.h"

static int usage(void)
{
    fprintf(stderr, "usage: acs_sign_cli METHOD HOST PATH ACTION VERSION [--query NAME=VALUE]... "
                    "[--body-file F] [--content-type T] [--date D] [--nonce N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 6)
        return usage();
    struct acs_request req = {.method = argv[1], .host = argv[2], .path = argv[3], .action = argv[4],
                              .version = argv[5]};
    struct acs_kv *q = xcalloc((size_t)argc, sizeof *q);
    char *body = NULL;
    for (int i = 6; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc)
            return usage();
        const char *val = argv[++i];
        if (!strcmp(opt, "--query")) {
            const char *eq = strchr(val, '=');
            q[req.nquery].name = eq ? xstrndup(val, (size_t)(eq - val)) : xstrdup(val);
            q[req.nquery++].value = eq ? eq + 1 : NULL;
        } else if (!strcmp(opt, "--body-file")) {
            size_t n;
            body = read_file(val, &n);
            if (!body) {
                perror(val);
                return 2;
            }
            req.body = body;
            req.body_len = n;
        } else if (!strcmp(opt, "--content-type")) {
            req.content_type = val;
        } else if (!strcmp(opt, "--date")) {
            req.date = val;
        } else if (!strcmp(opt, "--nonce")) {
            req.nonce = val;
        } else {
            return usage();
        }
    }
    req.query = q;
    struct acs_signed s;
    struct errbuf e;
    if (acs_sign(&req, getenv("ALIBABA_CLOUD_ACCESS_KEY_ID"), getenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET"), &s, &e) < 0) {
        fprintf(stderr, "acs_sign_cli: %s\n", e.msg);
        return 1;
    }
    cJSON *o = cJSON_CreateObject(), *h = cJSON_AddObjectToObject(o, "headers");
    cJSON_AddStringToObject(o, "target", s.target);
    for (size_t i = 0; i < s.nheaders; i++)
        cJSON_AddStringToObject(h, s.headers[i].name, s.headers[i].value);
    cJSON_AddStringToObject(o, "canonical_request", s.canonical_request);
    char *text = cJSON_PrintUnformatted(o);
    puts(text);
    free(text);
    cJSON_Delete(o);
    acs_signed_free(&s);
    for (size_t i = 0; i < req.nquery; i++)
        free((char *)q[i].name);
    free(q);
    free(body);
    return 0;
}
