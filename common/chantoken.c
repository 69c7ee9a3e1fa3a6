/* chantoken.c: per-trial channel tokens (see chantoken.h). */
#include "common/chantoken.h"

#include <stdio.h>
#include <string.h>

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static uint64_t load64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

#define SIPROUND                                                                          \
    do {                                                                                  \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);                         \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                            \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                            \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);                         \
    } while (0)

uint64_t siphash24(const unsigned char k[16], const void *data, size_t len)
{
    const unsigned char *in = data;
    uint64_t k0 = load64(k), k1 = load64(k + 8);
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    size_t full = len - len % 8;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t m = load64(in + i);
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < len % 8; i++)
        b |= (uint64_t)in[full + i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The key: the experiment token is 32 random hex digits (128 bits), used as they are.
 * Any other token is folded into 16 bytes, with its length. */
static void key_of(const char *tok, unsigned char k[16])
{
    memset(k, 0, 16);
    size_t n = tok ? strlen(tok) : 0;
    int hex = n >= 32;
    for (size_t i = 0; hex && i < 32; i++)
        hex = hexval((unsigned char)tok[i]) >= 0;
    if (hex) {
        for (int i = 0; i < 16; i++)
            k[i] = (unsigned char)(hexval((unsigned char)tok[2 * i]) << 4 | hexval((unsigned char)tok[2 * i + 1]));
        if (n == 32)
            return;
    }
    for (size_t i = 0; i < n; i++)
        k[i % 16] = (unsigned char)(k[i % 16] * 31u + (unsigned char)tok[i]);
    k[15] ^= (unsigned char)n;
}

void chan_token(const char *exp_token, const char *trial_id, char out[CHAN_TOKEN_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char k[16];
    key_of(exp_token, k);
    size_t n = strlen(trial_id);
    unsigned char buf[256];
    if (n > sizeof buf - 16)
        n = sizeof buf - 16;
    /* two domain-separated halves: "trialq-chan-1:<id>", "trialq-chan-2:<id>" */
    for (int half = 0; half < 2; half++) {
        int m = snprintf((char *)buf, sizeof buf, "trialq-chan-%d:", half + 1);
        memcpy(buf + m, trial_id, n);
        uint64_t h = siphash24(k, buf, (size_t)m + n);
        for (int i = 0; i < 16; i++)
            out[half * 16 + i] = hex[(h >> (60 - 4 * i)) & 0xf];
    }
    out[CHAN_TOKEN_LEN] = '\0';
}

int secret_equal(const char *sent, size_t sent_len, const char *want)
{
    if (!sent || !want)
        return 0;
    size_t n = strlen(want);
    if (sent_len != n) /* the lengths are no secret: tokens have fixed ones */
        return 0;
    volatile unsigned char diff = 0; /* volatile: the loop is never cut short */
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(sent[i] ^ want[i]);
    return diff == 0;
}

int chan_token_ok(const char *exp_token, const char *trial_id, const char *token)
{
    char want[CHAN_TOKEN_LEN + 1];
    chan_token(exp_token, trial_id, want);
    return token && secret_equal(token, strlen(token), want);
}
