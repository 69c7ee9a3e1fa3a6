/* fuzz_json.c: common/json.c, the strict JSON check every REST body and metric goes
 * through, and the exact and Python-style printers, on any bytes. A text json_check
 * accepts must parse with cJSON, and what json_print_exact prints must be JSON that
 * json_check accepts again. */
#include "tests/fuzz/fuzz.h"

#include "common/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    struct json_issue is;
    int ok = json_check((const char *)data, size, &is) == 0;
    if (!ok && (is.offset > size || is.line < 1 || is.col < 1 || !memchr(is.msg, 0, sizeof is.msg)))
        abort(); /* the issue must point into the text */
    cJSON *j = cJSON_ParseWithLength((const char *)data, size);
    if (ok && !j)
        abort(); /* json_check accepted what cJSON cannot read */
    if (j) {
        char *exact = json_print_exact(j);
        if (ok && exact && json_check(exact, strlen(exact), &is) != 0)
            abort(); /* printed JSON that the check refuses */
        free(exact);
        char *py = json_print_python(j, 1, ":");
        free(py);
        py = json_print_python(j, 0, ": ");
        free(py);
        cJSON_Delete(j);
    }
    /* any C string as a JSON string literal, which must read back as valid JSON */
    char *s = fuzz_cstr(data, size);
    struct strbuf sb;
    sb_init(&sb);
    json_put_string(&sb, s);
    if (json_check(sb.buf, sb.len, &is) != 0)
        abort();
    sb_free(&sb);
    free(s);
    return 0;
}
