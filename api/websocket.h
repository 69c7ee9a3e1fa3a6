/* websocket.h: the pieces of RFC 6455 the tuner command channel needs (SHA-1 for the
 * handshake, whose base64 is common/base64.c; frame encoding and parsing), and NNI's legacy pipe framing
 * (2-letter type + 14-digit length + payload). Pure functions on memory, so they are
 * unit-tested without sockets (tests/unit/test_api_websocket.c). */
#ifndef TRIALQ_WEBSOCKET_H
#define TRIALQ_WEBSOCKET_H

#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

/* SHA-1 (FIPS 180-4) of n bytes. */
void ws_sha1(const void *data, size_t n, unsigned char out[20]);
/* Sec-WebSocket-Accept for a Sec-WebSocket-Key: base64(SHA-1(key + GUID)), 28 chars. */
void ws_accept_key(const char *key, char out[29]);

enum ws_opcode { WS_CONT = 0, WS_TEXT = 1, WS_BINARY = 2, WS_CLOSE = 8, WS_PING = 9, WS_PONG = 10 };

struct ws_frame {
    int fin;
    int opcode;
    int masked;
    uint64_t len;            /* payload length */
    size_t header_len;       /* bytes before the payload */
};

/* Parses one frame header at buf (n bytes available). Returns 1 with *f filled when the
 * whole frame (header + payload) is in buf, 0 when more bytes are needed (then either
 * f->header_len > n, the header itself incomplete, or f->header_len + f->len > n), -1 on a
 * protocol error (message in e): reserved bits set, a control frame that is fragmented
 * or longer than 125 bytes, a payload over max_len, an unmasked frame when require_mask. */
int ws_frame_parse(const unsigned char *buf, size_t n, uint64_t max_len, int require_mask, struct ws_frame *f,
                   struct errbuf *e);
/* Copies the payload of a parsed frame to out (f->len bytes), unmasking it. */
void ws_frame_payload(const unsigned char *buf, const struct ws_frame *f, unsigned char *out);
/* Appends a final frame to sb; mask != NULL masks the payload with those 4 bytes (a
 * client's frames must be masked, a server's must not). */
void ws_frame_encode(struct strbuf *sb, int opcode, const void *payload, size_t n, const unsigned char *mask);

/* A server's reader of a client's frames (masked): data frames joined into messages
 * (RFC 6455 §5.4), control frames handed over as they come between them. */
struct ws_reader {
    struct strbuf msg;      /* the message being joined */
    int in_message;         /* a data frame without FIN came: continuations follow */
    uint64_t max_len;       /* a message's limit, in bytes */
};
struct ws_event {
    int opcode;             /* WS_TEXT: a whole message (text or binary); WS_PING, WS_PONG,
                             * WS_CLOSE: a control frame; WS_CONT: a fragment was joined */
    unsigned char *data;    /* the message or payload, NUL-terminated; the caller frees */
    size_t len;
};
void ws_reader_init(struct ws_reader *r, uint64_t max_len);
void ws_reader_free(struct ws_reader *r);
/* Reads the frame at the front of buf (n bytes). Returns 1 with *ev set and *frame_len
 * the bytes it took; 0 when the frame is not all in buf (*frame_len its whole length
 * once its header is there, else 0); -1 on a protocol error (message in e): those of
 * ws_frame_parse, a continuation without a message, a data frame inside one, a message
 * over max_len. */
int ws_reader_next(struct ws_reader *r, const unsigned char *buf, size_t n, size_t *frame_len, struct ws_event *ev,
                   struct errbuf *e);

/* NNI's legacy framing: returns 1 with *type (2 chars + NUL), *payload_off and *len set
 * when a whole command is in buf, 0 when more is needed, -1 when the header is not a
 * 2-letter type and 14 digits or the length exceeds max_len. */
int pipe_frame_parse(const char *buf, size_t n, size_t max_len, char type[3], size_t *payload_off, size_t *len,
                     struct errbuf *e);
void pipe_frame_encode(struct strbuf *sb, const char *type, const char *payload, size_t n);

#endif
