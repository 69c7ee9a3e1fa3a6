/* The dispatcher's protocol without a process (api/disp_proto.c, api/websocket.c): a
 * command encoded for either channel reads back as it was sent (the pipe framing, and
 * the WebSocket frame of {"type","content"}); the commands NNI's dispatcher sends map
 * to their kinds; ME, EN and AD contents have NNI's shapes (parameter ids numbers when
 * they are, strings otherwise); a TR is taken apart or refused with a message; labels;
 * and a client's frames are joined into messages whatever the split of the bytes, with
 * the protocol errors refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/disp.h"

static void test_command_kinds(void **st)
{
    (void)st;
    static const struct {
        const char *type;
        enum disp_cmd want;
    } cases[] = {
        {"ID", CMD_INITIALIZED}, {"TR", CMD_TRIAL}, {"NO", CMD_NO_MORE}, {"KI", CMD_KILL}, {"ER", CMD_ERROR},
        {"SP", CMD_SEND_PARAMETER}, {"_bye_", CMD_BYE}, {"_nop_", CMD_NOP},
        /* what the api sends, and anything else, is no answer */
        {"GE", CMD_UNKNOWN}, {"id", CMD_UNKNOWN}, {"IDX", CMD_UNKNOWN}, {"", CMD_UNKNOWN}, {NULL, CMD_UNKNOWN},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_int_equal(disp_cmd_of(cases[i].type), cases[i].want);
}

static void test_pipe_encoding(void **st)
{
    (void)st;
    struct strbuf sb;
    sb_init(&sb);
    disp_encode(&sb, 0, "GE", "3");
    assert_int_equal(sb.len, 17);
    assert_memory_equal(sb.buf, "GE000000000000013", 17);
    disp_encode(&sb, 0, "TE", NULL); /* no content: an empty payload */
    disp_encode(&sb, 0, "IN", "{\"x\": \"\xc3\xa9\\n\"}");
    /* the three read back in order from one stream */
    const char *want_type[] = {"GE", "TE", "IN"};
    const char *want[] = {"3", "", "{\"x\": \"\xc3\xa9\\n\"}"};
    size_t at = 0;
    for (int i = 0; i < 3; i++) {
        char type[3];
        size_t off, len;
        struct errbuf e;
        assert_int_equal(pipe_frame_parse(sb.buf + at, sb.len - at, 1000, type, &off, &len, &e), 1);
        assert_string_equal(type, want_type[i]);
        assert_int_equal(len, strlen(want[i]));
        assert_memory_equal(sb.buf + at + off, want[i], len);
        at += off + len;
    }
    assert_int_equal(at, sb.len);
    sb_free(&sb);
}

/* A server's frame (unmasked) from disp_encode, decoded as the dispatcher would. */
static void ws_round_trip(const char *type, const char *content, const char *want_content)
{
    struct strbuf sb;
    sb_init(&sb);
    disp_encode(&sb, 1, type, content);
    struct ws_frame f;
    struct errbuf e;
    assert_int_equal(ws_frame_parse((const unsigned char *)sb.buf, sb.len, 1u << 20, 0, &f, &e), 1);
    assert_int_equal(f.opcode, WS_TEXT);
    assert_true(f.fin);
    assert_false(f.masked);
    assert_int_equal(f.header_len + f.len, sb.len);
    char *t = NULL, *c = NULL;
    assert_int_equal(disp_ws_decode(sb.buf + f.header_len, (size_t)f.len, &t, &c, &e), 0);
    assert_string_equal(t, type);
    assert_string_equal(c, want_content);
    free(t);
    free(c);
    sb_free(&sb);
}

static void test_ws_encoding(void **st)
{
    (void)st;
    ws_round_trip("GE", "2", "2");
    ws_round_trip("TE", NULL, "");
    ws_round_trip("ME", "{\"value\":\"\\\"0.5\\\"\",\"q\":\"a\\\\b\\n\"}", "{\"value\":\"\\\"0.5\\\"\",\"q\":\"a\\\\b\\n\"}");
    /* over 125 and over 65535 bytes: the longer length forms */
    char *big = malloc(70001);
    memset(big, 'x', 70000);
    big[70000] = 0;
    ws_round_trip("IN", big, big);
    big[300] = 0;
    ws_round_trip("IN", big, big);
    free(big);
}

/* text (its first n bytes) decodes to type and content */
static void decodes_to(const char *text, size_t n, const char *type, const char *content)
{
    char *t = NULL, *c = NULL;
    struct errbuf e;
    assert_int_equal(disp_ws_decode(text, n, &t, &c, &e), 0);
    assert_string_equal(t, type);
    assert_string_equal(c, content);
    free(t);
    free(c);
}

static void test_ws_decode(void **st)
{
    (void)st;
    const char *bye = "{\"type\":\"_bye_\",\"reason\":\"tuner finished\"}";
    decodes_to(bye, strlen(bye), "_bye_", "tuner finished");
    decodes_to("{\"type\":\"ID\"}", 13, "ID", "");
    /* the length given is what is read: the rest of the buffer is not the message */
    decodes_to("{\"type\":\"NO\",\"content\":\"x\"}{\"type\":\"ER\"}", 28, "NO", "x");
    char *t, *c;
    struct errbuf e;
    const char *bad[] = {"not json", "{\"content\":\"x\"}", "{\"type\":7}", "[\"ID\"]", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        t = c = NULL;
        assert_int_equal(disp_ws_decode(bad[i], strlen(bad[i]), &t, &c, &e), -1);
        assert_non_null(strstr(e.msg, "is not {\"type\",\"content\"} JSON"));
        assert_null(t);
        assert_null(c);
    }
}

static void test_metric_and_end(void **st)
{
    (void)st;
    struct strbuf sb;
    sb_init(&sb);
    disp_metric_json(&sb, "AbCd1", "12", 0, 3, "0.25");
    assert_string_equal(sb.buf, "{\"parameter_id\":12,\"trial_job_id\":\"AbCd1\",\"type\":\"PERIODICAL\","
                                "\"sequence\":3,\"value\":\"0.25\"}");
    sb_free(&sb);
    disp_metric_json(&sb, "AbCd1", "0-3_0_12", 1, 0, "{\"default\": 1}");
    assert_string_equal(sb.buf, "{\"parameter_id\":\"0-3_0_12\",\"trial_job_id\":\"AbCd1\",\"type\":\"FINAL\","
                                "\"sequence\":0,\"value\":\"{\\\"default\\\": 1}\"}");
    sb_free(&sb);
    /* '' (a trial that sent null) and NULL: null; a negative number stays a number; a
     * number too long for a double's integers, "1e3" and "007" (no JSON number) stay
     * strings */
    const char *ids[] = {"", NULL, "-1", "1234567890123456", "1e3", "007"};
    const char *want[] = {"null", "null", "-1", "\"1234567890123456\"", "\"1e3\"", "\"007\""};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        disp_put_id(&sb, ids[i]);
        assert_string_equal(sb.buf, want[i]);
        sb_free(&sb);
    }
    disp_end_json(&sb, "AbCd1", "EARLY_STOPPED", "{\"parameter_id\":1,\"parameters\":{\"x\":\"\\\"\"}}");
    cJSON *j = cJSON_Parse(sb.buf);
    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "trial_job_id")->valuestring, "AbCd1");
    assert_string_equal(cJSON_GetObjectItem(j, "event")->valuestring, "EARLY_STOPPED");
    /* hyper_params is the TR's text itself, as a string (NNI hands back what it sent) */
    assert_string_equal(cJSON_GetObjectItem(j, "hyper_params")->valuestring,
                        "{\"parameter_id\":1,\"parameters\":{\"x\":\"\\\"\"}}");
    cJSON_Delete(j);
    sb_free(&sb);
}

static void test_resumed_records(void **st)
{
    (void)st;
    char *id = NULL;
    char *rec = disp_resumed_record(4, NULL, "{\"x\":1}", &id);
    assert_string_equal(id, "4");
    assert_string_equal(rec, "{\"parameter_id\":4,\"parameter_source\":\"resumed\",\"parameters\":{\"x\":1},"
                             "\"parameter_index\":0}");
    free(id);
    free(rec);
    rec = disp_resumed_record(4, "17", "{}", &id); /* the dispatcher's own count */
    assert_string_equal(id, "17");
    assert_non_null(strstr(rec, "\"parameter_id\":17,"));
    free(id);
    free(rec);
    rec = disp_resumed_record(4, "0-3_0_12", "{}", &id); /* an advisor's */
    assert_string_equal(id, "\"0-3_0_12\"");
    cJSON *j = cJSON_Parse(rec);
    assert_string_equal(cJSON_GetObjectItem(j, "parameter_id")->valuestring, "0-3_0_12");
    cJSON_Delete(j);
    free(id);
    free(rec);
}

static void test_tr_records(void **st)
{
    (void)st;
    cJSON *params = NULL;
    char *disp_id = NULL;
    struct errbuf e;
    const char *ok = "{\"parameter_id\": 5, \"parameter_source\": \"algorithm\", \"parameters\": {\"lr\": 0.1}}";
    assert_int_equal(disp_parse_tr(ok, &params, &disp_id, &e), 0);
    assert_string_equal(disp_id, "5");
    assert_true(cJSON_GetObjectItem(params, "lr")->valuedouble == 0.1);
    cJSON_Delete(params);
    free(disp_id);
    assert_int_equal(disp_parse_tr("{\"parameter_id\":\"0-1_0_2\",\"parameters\":{}}", &params, &disp_id, &e), 0);
    assert_string_equal(disp_id, "\"0-1_0_2\"");
    cJSON_Delete(params);
    free(disp_id);
    const char *bad[] = {"", "nonsense", "{\"parameters\":{}}", "{\"parameter_id\":1}",
                         "{\"parameter_id\":1,\"parameters\":[1]}", "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        params = NULL;
        disp_id = NULL;
        assert_int_equal(disp_parse_tr(bad[i], &params, &disp_id, &e), -1);
        assert_non_null(strstr(e.msg, "not a parameter record"));
        assert_null(params);
        assert_null(disp_id);
    }
}

static void test_labels(void **st)
{
    (void)st;
    char *l;
    assert_null(disp_label_of("3", 3));           /* the index itself */
    assert_string_equal(l = disp_label_of("7", 3), "7");
    free(l);
    assert_string_equal(l = disp_label_of("\"0-3_0_12\"", 3), "0-3_0_12");
    free(l);
    assert_null(disp_label_of("null", 3));
    assert_string_equal(l = disp_label_of("[1,2]", 3), "[1,2]");
    free(l);
}

/* A client's masked frame of payload p (n bytes). */
static void client_frame(struct strbuf *sb, int fin, int opcode, const char *p, size_t n)
{
    static const unsigned char mask[4] = {0x37, 0xfa, 0x21, 0x3d};
    size_t at = sb->len;
    ws_frame_encode(sb, opcode, p, n, mask);
    if (!fin)
        sb->buf[at] = (char)(sb->buf[at] & 0x7F);
}

/* Feeds the stream to a reader split in pieces of `step` bytes, as a socket may deliver
 * it; records each event as "<opcode>:<data>;". */
static char *read_stream(const struct strbuf *in, size_t step, uint64_t max_len, int *rc_out, struct errbuf *e)
{
    struct ws_reader r;
    ws_reader_init(&r, max_len);
    struct strbuf buffered, events;
    sb_init(&buffered);
    sb_init(&events);
    size_t fed = 0;
    int rc = 1;
    while (rc >= 0 && (fed < in->len || buffered.len)) {
        size_t frame_len;
        struct ws_event ev;
        rc = ws_reader_next(&r, (const unsigned char *)buffered.buf, buffered.len, &frame_len, &ev, e);
        if (rc < 0)
            break;
        if (rc == 0) {
            assert_true(frame_len == 0 || frame_len > buffered.len); /* a length is never less than what is there */
            if (fed == in->len)
                break;
            size_t n = in->len - fed < step ? in->len - fed : step;
            sb_add(&buffered, in->buf + fed, n);
            fed += n;
            continue;
        }
        sb_printf(&events, "%d:%.*s;", ev.opcode, (int)ev.len, ev.data ? (const char *)ev.data : "");
        free(ev.data);
        memmove(buffered.buf, buffered.buf + frame_len, buffered.len - frame_len);
        buffered.len -= frame_len;
    }
    *rc_out = rc;
    sb_free(&buffered);
    ws_reader_free(&r);
    return sb_detach(&events);
}

static void test_ws_reader_joins(void **st)
{
    (void)st;
    struct strbuf in;
    sb_init(&in);
    char big[300];
    memset(big, 'b', sizeof big);
    client_frame(&in, 1, WS_TEXT, "{\"type\":\"ID\"}", 13);
    client_frame(&in, 0, WS_TEXT, "{\"type\":", 8);
    client_frame(&in, 1, WS_PING, "hi", 2); /* between the fragments */
    client_frame(&in, 0, WS_CONT, "\"TR\",", 5);
    client_frame(&in, 1, WS_CONT, big, sizeof big);
    client_frame(&in, 1, WS_CLOSE, "\x0f\xa0", 2);
    char want[1024];
    snprintf(want, sizeof want, "1:{\"type\":\"ID\"};0:;9:hi;0:;1:{\"type\":\"TR\",%.*s;8:\x0f\xa0;", (int)sizeof big,
             big);
    /* every split: 1 byte at a time (a 126-length header arrives in pieces), 3, whole */
    size_t steps[] = {1, 2, 3, 7, 14, 1000};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        int rc;
        struct errbuf e;
        char *got = read_stream(&in, steps[i], 1u << 20, &rc, &e);
        assert_true(rc >= 0);
        assert_string_equal(got, want);
        free(got);
    }
    sb_free(&in);
}

static void reader_refuses(struct strbuf *in, uint64_t max_len, const char *what)
{
    int rc;
    struct errbuf e;
    char *got = read_stream(in, 1000, max_len, &rc, &e);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(e.msg, what));
    free(got);
    sb_free(in);
}

static void test_ws_reader_errors(void **st)
{
    (void)st;
    struct strbuf in;
    sb_init(&in);
    client_frame(&in, 1, WS_CONT, "x", 1);
    reader_refuses(&in, 100, "unexpected continuation frame");
    client_frame(&in, 0, WS_TEXT, "x", 1);
    client_frame(&in, 1, WS_TEXT, "y", 1);
    reader_refuses(&in, 100, "unexpected data frame");
    /* each fragment under the limit, the message over it */
    client_frame(&in, 0, WS_TEXT, "0123456789", 10);
    client_frame(&in, 1, WS_CONT, "0123456789", 10);
    reader_refuses(&in, 15, "message over 15 bytes");
    ws_frame_encode(&in, WS_TEXT, "x", 1, NULL); /* a client's frame must be masked */
    reader_refuses(&in, 100, "unmasked");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_command_kinds),   cmocka_unit_test(test_pipe_encoding),
        cmocka_unit_test(test_ws_encoding),     cmocka_unit_test(test_ws_decode),
        cmocka_unit_test(test_metric_and_end),  cmocka_unit_test(test_resumed_records),
        cmocka_unit_test(test_tr_records),      cmocka_unit_test(test_labels),
        cmocka_unit_test(test_ws_reader_joins), cmocka_unit_test(test_ws_reader_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
