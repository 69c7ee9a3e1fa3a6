/* fuzz_http1.c: common/http1.c, the request-head parser of the api's front door
 * (api/guard.c) and of the trial channel's servers (api/chan_http.c,
 * supervise/chanserve.c), on any bytes as they come off a socket:
 *   - http1_head_end on the input as it would arrive in pieces (the first byte's value
 *     sets the piece size), which must find the same end as on the whole of it;
 *   - http1_parse on that head, and on lengths that are not a head's end (the whole
 *     input, a prefix): whatever it fills points inside the input;
 *   - http1_parse_head, the channel's rules, with small and large limits.
 * The input is copied to a buffer of its exact size, so that a read past it is ASan's. */
#include "tests/fuzz/fuzz.h"

#include "common/http1.h"

static void check(const uint8_t *in, size_t n, const struct http1_head *h)
{
    const char *p = (const char *)in;
    if (h->head_len > n || !h->target || h->target < p || h->target + h->target_len > p + h->head_len ||
        h->target_len == 0 || h->content_length < -1 || (unsigned)h->method > HTTP1_OTHER)
        abort();
    if (h->token && (h->token < p || h->token + h->token_len > p + h->head_len))
        abort();
    for (size_t i = 0; i < h->target_len; i++)
        if ((unsigned char)h->target[i] <= 32 || h->target[i] == 127)
            abort();
}

static void parse(const uint8_t *in, size_t n)
{
    struct http1_head h;
    const char *msg = NULL;
    int rc = http1_parse((const char *)in, n, &h, &msg);
    if (rc == 0)
        check(in, n, &h);
    else if ((rc != 400 && rc != 505) || !msg)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *in = xmalloc(size ? size : 1);
    memcpy(in, data, size);
    const char *s = (const char *)in;

    size_t scanned = 0, whole = http1_head_end(s, size, &scanned);
    if (whole > size || (whole == 0 && scanned != size))
        abort();
    size_t step = size ? (size_t)in[0] % 17 + 1 : 1, got = 0;
    scanned = 0;
    for (size_t k = 0; !got; k = k + step > size ? size : k + step) {
        got = http1_head_end(s, k, &scanned);
        if (k == size)
            break;
    }
    if (got != whole)
        abort();

    if (whole)
        parse(in, whole);
    parse(in, size);
    if (size > 1)
        parse(in, size / 2);

    static const size_t heads[] = {16, 8192};
    static const long long bodies[] = {0, 4 << 20};
    for (int i = 0; i < 2; i++) {
        struct http1_head h;
        const char *msg = NULL;
        scanned = 0;
        int rc = http1_parse_head(s, size, &scanned, heads[i], bodies[i], &h, &msg);
        if (rc == 1) {
            check(in, size, &h);
            if (h.head_len > heads[i] || h.content_length < 0 || h.content_length > bodies[i] || h.chunked ||
                h.target[0] != '/' || (h.content_length && !http1_bodied(h.method)))
                abort();
        } else if (rc != 0 && (!msg || rc < 400 || rc > 505)) {
            abort();
        }
    }
    free(in);
    return 0;
}
