/* websocket.c: SHA-1, RFC 6455 frames and NNI's legacy pipe framing — the wire
 * formats of the tuner command channel (api/dispatcher.c). libevent 2.1 has no
 * WebSocket support, so the few pieces needed are written here. */
#include <stdlib.h>
#include <string.h>

#include "api/websocket.h"

/* ---------------- SHA-1 ---------------- */

static uint32_t rol32(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static void sha1_block(uint32_t h[5], const unsigned char *p)
{
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol32(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20)
            f = (b & c) | (~b & d), k = 0x5A827999u;
        else if (i < 40)
            f = b ^ c ^ d, k = 0x6ED9EBA1u;
        else if (i < 60)
            f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDCu;
        else
            f = b ^ c ^ d, k = 0xCA62C1D6u;
        uint32_t t = rol32(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol32(b, 30);
        b = a;
        a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void ws_sha1(const void *data, size_t n, unsigned char out[20])
{
    uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    const unsigned char *p = data;
    size_t left = n;
    while (left >= 64) {
        sha1_block(h, p);
        p += 64;
        left -= 64;
    }
    /* the tail, 0x80, zeros, and the bit length (big-endian) in one or two blocks */
    unsigned char tail[128];
    memset(tail, 0, sizeof tail);
    memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t blocks = left + 1 + 8 <= 64 ? 1 : 2;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++)
        tail[blocks * 64 - 1 - i] = (unsigned char)(bits >> (8 * i));
    for (size_t b = 0; b < blocks; b++)
        sha1_block(h, tail + 64 * b);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (unsigned char)(h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(h[i] >> 8);
        out[4 * i + 3] = (unsigned char)h[i];
    }
}

void ws_accept_key(const char *key, char out[29])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, key);
    sb_puts(&sb, guid);
    unsigned char digest[20];
    ws_sha1(sb.buf, sb.len, digest);
    sb_free(&sb);
    b64_encode_to(digest, sizeof digest, out);
}

/* ---------------- frames ---------------- */

int ws_frame_parse(const unsigned char *buf, size_t n, uint64_t max_len, int require_mask, struct ws_frame *f,
                   struct errbuf *e)
{
    if (n < 2)
        return 0;
    memset(f, 0, sizeof *f);
    f->fin = buf[0] >> 7;
    f->opcode = buf[0] & 0x0F;
    if (buf[0] & 0x70)
        return errf(e, "WebSocket frame with reserved bits set (no extension was negotiated)");
    if ((f->opcode > 2 && f->opcode < 8) || f->opcode > 10)
        return errf(e, "WebSocket frame with unknown opcode %d", f->opcode);
    f->masked = buf[1] >> 7;
    if (require_mask && !f->masked)
        return errf(e, "unmasked WebSocket frame from a client");
    uint64_t len = buf[1] & 0x7F;
    size_t hl = 2;
    /* a header still incomplete says so too: header_len beyond the n bytes there are
     * (callers that pass only the first bytes compare header_len and len with what
     * they hold; a zero header_len and len would read as an empty frame, again and again) */
    if (len == 126) {
        if (n < 4) {
            f->header_len = 4;
            return 0;
        }
        len = (uint64_t)buf[2] << 8 | buf[3];
        hl = 4;
    } else if (len == 127) {
        if (n < 10) {
            f->header_len = 10;
            return 0;
        }
        len = 0;
        for (int i = 0; i < 8; i++)
            len = len << 8 | buf[2 + i];
        hl = 10;
        if (len >> 63)
            return errf(e, "WebSocket frame length has its top bit set");
    }
    if (f->opcode >= 8 && (!f->fin || len > 125))
        return errf(e, "WebSocket control frame %s", !f->fin ? "is fragmented" : "is longer than 125 bytes");
    if (len > max_len)
        return errf(e, "WebSocket message of %llu bytes is over the limit of %llu", (unsigned long long)len,
                    (unsigned long long)max_len);
    if (f->masked)
        hl += 4;
    f->len = len;
    f->header_len = hl;
    if (n < hl || n - hl < len)
        return 0;
    return 1;
}

void ws_frame_payload(const unsigned char *buf, const struct ws_frame *f, unsigned char *out)
{
    const unsigned char *p = buf + f->header_len;
    const unsigned char *mask = f->masked ? buf + f->header_len - 4 : NULL;
    for (uint64_t i = 0; i < f->len; i++)
        out[i] = mask ? (unsigned char)(p[i] ^ mask[i & 3]) : p[i];
}

void ws_frame_encode(struct strbuf *sb, int opcode, const void *payload, size_t n, const unsigned char *mask)
{
    unsigned char h[14];
    size_t hl = 2;
    h[0] = (unsigned char)(0x80 | (opcode & 0x0F));
    unsigned char m = mask ? 0x80 : 0;
    if (n < 126) {
        h[1] = (unsigned char)(m | n);
    } else if (n <= 0xFFFF) {
        h[1] = m | 126;
        h[2] = (unsigned char)(n >> 8);
        h[3] = (unsigned char)n;
        hl = 4;
    } else {
        h[1] = m | 127;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
        hl = 10;
    }
    if (mask) {
        memcpy(h + hl, mask, 4);
        hl += 4;
    }
    sb_add(sb, (const char *)h, hl);
    size_t at = sb->len;
    sb_add(sb, payload, n);
    if (mask)
        for (size_t i = 0; i < n; i++)
            sb->buf[at + i] = (char)(sb->buf[at + i] ^ mask[i & 3]);
}

/* ---------------- a client's messages ---------------- */

void ws_reader_init(struct ws_reader *r, uint64_t max_len)
{
    sb_init(&r->msg);
    r->in_message = 0;
    r->max_len = max_len;
}

void ws_reader_free(struct ws_reader *r)
{
    sb_free(&r->msg);
    r->in_message = 0;
}

int ws_reader_next(struct ws_reader *r, const unsigned char *buf, size_t n, size_t *frame_len, struct ws_event *ev,
                   struct errbuf *e)
{
    struct ws_frame f = {0};
    memset(ev, 0, sizeof *ev);
    *frame_len = 0;
    int rc = ws_frame_parse(buf, n, r->max_len, 1, &f, e);
    if (rc <= 0) {
        if (rc == 0 && f.header_len) /* a length is known once the whole header is there */
            *frame_len = f.header_len + (size_t)f.len;
        return rc;
    }
    int data = f.opcode == WS_TEXT || f.opcode == WS_BINARY || f.opcode == WS_CONT;
    if (data && (f.opcode == WS_CONT) != r->in_message)
        return errf(e, "unexpected %s frame", f.opcode == WS_CONT ? "continuation" : "data");
    if (data && r->msg.len + f.len > r->max_len)
        return errf(e, "message over %llu bytes", (unsigned long long)r->max_len);
    *frame_len = f.header_len + (size_t)f.len;
    unsigned char *payload = xmalloc((size_t)f.len + 1);
    ws_frame_payload(buf, &f, payload);
    payload[f.len] = 0;
    if (!data) {
        ev->opcode = f.opcode;
        ev->data = payload;
        ev->len = (size_t)f.len;
        return 1;
    }
    sb_add(&r->msg, (const char *)payload, (size_t)f.len);
    free(payload);
    r->in_message = !f.fin;
    ev->opcode = WS_CONT;
    if (f.fin) {
        ev->opcode = WS_TEXT;
        ev->len = r->msg.len;
        ev->data = (unsigned char *)sb_detach(&r->msg);
    }
    return 1;
}

/* ---------------- NNI's legacy pipe framing ---------------- */

#define PIPE_HEADER 16 /* 2-letter type + 14 digits */

int pipe_frame_parse(const char *buf, size_t n, size_t max_len, char type[3], size_t *payload_off, size_t *len,
                     struct errbuf *e)
{
    if (n < PIPE_HEADER)
        return 0;
    for (int i = 0; i < 2; i++)
        if (!((buf[i] >= 'A' && buf[i] <= 'Z') || (buf[i] >= 'a' && buf[i] <= 'z') || buf[i] == '_'))
            return errf(e, "pipe command: type must be 2 letters, got byte 0x%02x", (unsigned char)buf[i]);
    size_t v = 0;
    for (int i = 2; i < PIPE_HEADER; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return errf(e, "pipe command %.2s: length must be 14 decimal digits", buf);
        v = v * 10 + (size_t)(buf[i] - '0');
        if (v > max_len)
            return errf(e, "pipe command %.2s: length over the limit of %zu bytes", buf, max_len);
    }
    type[0] = buf[0];
    type[1] = buf[1];
    type[2] = '\0';
    *payload_off = PIPE_HEADER;
    *len = v;
    return n - PIPE_HEADER >= v ? 1 : 0;
}

void pipe_frame_encode(struct strbuf *sb, const char *type, const char *payload, size_t n)
{
    sb_printf(sb, "%.2s%014zu", type, n);
    sb_add(sb, payload, n);
}
