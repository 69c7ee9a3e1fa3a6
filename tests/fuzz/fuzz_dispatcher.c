/* fuzz_dispatcher.c: the reader of the customized-tuner dispatcher's protocol
 * (api/websocket.c, as api/dispatcher.c's channel readers call it), on any bytes taken
 * as what the dispatcher process sent: once as NNI's legacy pipe framing (2 letters +
 * 14 digits + payload, frame after frame, each header offered with every length of
 * input from 0 up, as partial reads give it), once as client WebSocket frames
 * (masked, fragmented messages reassembled, control frames), each complete message
 * read as the dispatcher reads its {"type", "content"} JSON and a TR's parameter record. */
#include "tests/fuzz/fuzz.h"

#include <cjson/cJSON.h>

#include "api/websocket.h"

#define MAX_MESSAGE (1u << 20)

/* What dispatcher.c does with one command's content: TR and KI carry JSON. */
static void command(const char *type, const char *content)
{
    cJSON *rec = cJSON_Parse(content);
    if (strcmp(type, "TR") == 0) {
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(rec, "parameters");
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(rec, "parameter_id");
        if (cJSON_IsObject(params) && pid) {
            cJSON *copy = cJSON_Duplicate(params, 1);
            char *disp_id = cJSON_PrintUnformatted(pid);
            cJSON_Delete(copy);
            free(disp_id);
        }
    }
    cJSON_Delete(rec);
}

static void pipe_stream(const char *p, size_t n)
{
    while (n > 0) {
        char type[3];
        size_t off = 0, len = 0;
        struct errbuf e;
        /* a header read in pieces: every shorter prefix must ask for more (or fail) */
        for (size_t k = 0; k < 16 && k < n; k++) {
            int rc = pipe_frame_parse(p, k, MAX_MESSAGE, type, &off, &len, &e);
            if (rc == 1)
                abort(); /* a whole command in fewer bytes than its header */
        }
        int rc = pipe_frame_parse(p, n, MAX_MESSAGE, type, &off, &len, &e);
        if (rc <= 0)
            return;
        if (off + len > n || len > MAX_MESSAGE || strlen(type) != 2)
            abort();
        char *content = xstrndup(p + off, len);
        command(type, content);
        free(content);
        p += off + len;
        n -= off + len;
    }
}

static void ws_stream(const unsigned char *p, size_t n)
{
    struct strbuf msg;
    sb_init(&msg);
    int in_message = 0;
    while (n >= 2) {
        struct ws_frame f;
        struct errbuf e;
        size_t hn = n < 14 ? n : 14;
        int rc = ws_frame_parse(p, hn, MAX_MESSAGE, 1, &f, &e);
        if (rc < 0)
            break;
        if (f.header_len > n || n - f.header_len < f.len)
            break; /* incomplete */
        if (f.header_len > 14 || f.len > MAX_MESSAGE)
            abort();
        unsigned char *payload = xmalloc((size_t)f.len + 1);
        ws_frame_payload(p, &f, payload);
        payload[f.len] = 0;
        p += f.header_len + f.len;
        n -= f.header_len + f.len;
        int stop = 0;
        if (f.opcode == WS_TEXT || f.opcode == WS_BINARY || f.opcode == WS_CONT) {
            if ((f.opcode == WS_CONT) != in_message || msg.len + f.len > MAX_MESSAGE) {
                stop = 1;
            } else {
                sb_add(&msg, (const char *)payload, (size_t)f.len);
                in_message = !f.fin;
                if (f.fin) {
                    size_t len = msg.len;
                    char *text = sb_detach(&msg);
                    cJSON *j = cJSON_ParseWithLength(text ? text : "", text ? len : 0);
                    const cJSON *type = cJSON_GetObjectItemCaseSensitive(j, "type");
                    const cJSON *content = cJSON_GetObjectItemCaseSensitive(j, "content");
                    if (cJSON_IsString(type))
                        command(type->valuestring, cJSON_IsString(content) ? content->valuestring : "");
                    cJSON_Delete(j);
                    free(text);
                }
            }
        } else if (f.opcode == WS_PING || f.opcode == WS_CLOSE) {
            struct strbuf out; /* the answer the api sends */
            sb_init(&out);
            ws_frame_encode(&out, f.opcode == WS_PING ? WS_PONG : WS_CLOSE, payload,
                            f.opcode == WS_PING ? (size_t)f.len : f.len >= 2 ? 2 : 0, NULL);
            sb_free(&out);
            stop = f.opcode == WS_CLOSE;
        }
        free(payload);
        if (stop)
            break;
    }
    sb_free(&msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    pipe_stream((const char *)data, size);
    ws_stream(data, size);
    return 0;
}
