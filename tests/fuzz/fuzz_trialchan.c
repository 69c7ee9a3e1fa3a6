/* fuzz_trialchan.c: common/trialchan.c's parsing of what a trial sends on its command
 * channel, on any bytes: a PUT's body as a command (tc_command, with and without a JSON
 * content type), the metric record it carries (tc_metric_check, and on the whole input
 * as a record), and the parameter command built from the input as a record (which must
 * be one JSON object whose "parameter" string decodes). The heads are fuzz_http1's. The input is
 * copied to a buffer of its exact size, so that a read past it is ASan's. */
#include "tests/fuzz/fuzz.h"

#include "common/minijson.h"
#include "common/trialchan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    char *in = xmalloc(size ? size : 1);
    memcpy(in, data, size);
    char msg[256];
    for (int json = 0; json < 2; json++) {
        struct tc_cmd cmd;
        tc_command(size ? in : NULL, size, json, "TrIaL", "fuzz: ", &cmd);
        if (cmd.kind == TC_CMD_REFUSED && (cmd.code < 400 || cmd.code > 499 || !cmd.msg[0]))
            abort();
        if (cmd.kind == TC_CMD_METRIC) {
            int code = tc_metric_check(cmd.metric, cmd.metric_len, "TrIaL", msg, sizeof msg);
            if (code != 200 && code != 400 && code != 403)
                abort();
        }
        tc_cmd_free(&cmd);
    }
    char *rec = fuzz_cstr(data, size);
    int code = tc_metric_check(rec, strlen(rec), "TrIaL", msg, sizeof msg);
    if (code != 200 && code != 400 && code != 403)
        abort();
    char *param = tc_parameter_command(rec);
    const char *v;
    size_t vl;
    if (mj_member(param, strlen(param), "parameter", &v, &vl) != 1)
        abort();
    char *back = mj_string(v, vl, &vl); /* bytes that are not UTF-8 come back as U+FFFD */
    if (!back)
        abort();
    free(back);
    free(param);
    free(rec);
    free(in);
    return 0;
}
