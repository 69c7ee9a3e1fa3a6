/* json_print_exact: every double survives print -> parse bit for bit, in the fewest
 * digits; the rest of the output is what cJSON prints. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/common.h"
#include "common/json.h"

static uint64_t rng = 88172645463325252ULL;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_round_trip_is_exact(void **st)
{
    (void)st;
    int lossy_cjson = 0;
    for (int i = 0; i < 200000; i++) {
        double d;
        if (i % 3 == 0) {
            uint64_t bits = next();
            memcpy(&d, &bits, sizeof d);      /* any bit pattern */
            if (!isfinite(d))
                continue;
        } else {
            d = (double)(next() >> 11) / 9007199254740992.0 * 4 - 2;
            if (i % 3 == 2)
                d = exp(d * 7);
        }
        cJSON *n = cJSON_CreateNumber(d);
        char *mine = json_print_exact(n);
        char *theirs = cJSON_PrintUnformatted(n);
        cJSON *back = cJSON_Parse(mine);
        assert_non_null(back);
        if (back->valuedouble != d)
            fail_msg("%s reads back as %.17g, not %.17g", mine, back->valuedouble, d);
        /* the fewest digits: no shorter %g form reads back as d */
        int digits = 0;
        for (int k = 15; k <= 17 && !digits; k++) {
            char form[40];
            snprintf(form, sizeof form, "%.*g", k, d);
            if (strcmp(form, mine) == 0)
                digits = k;
            else if (strtod(form, NULL) == d)
                fail_msg("%s: %s is shorter and exact", mine, form);
        }
        if (!digits)
            fail_msg("%s is no %%g form of %.17g", mine, d);
        if (strtod(theirs, NULL) != d)
            lossy_cjson++;
        cJSON_Delete(back);
        cJSON_Delete(n);
        free(mine);
        free(theirs);
    }
    /* the reason this exists: cJSON alone loses the last bit of many values */
    assert_true(lossy_cjson > 1000);
}

static void test_shortest_form(void **st)
{
    (void)st;
    char buf[40];
    json_format_double(0.1, buf, sizeof buf);
    assert_string_equal(buf, "0.1");
    json_format_double(2, buf, sizeof buf);
    assert_string_equal(buf, "2");
    json_format_double(-1.5e-7, buf, sizeof buf);
    assert_string_equal(buf, "-1.5e-07");
    json_format_double(0.1 + 0.2, buf, sizeof buf);
    assert_string_equal(buf, "0.30000000000000004");
    json_format_double(NAN, buf, sizeof buf);
    assert_string_equal(buf, "null");
    json_format_double(INFINITY, buf, sizeof buf);
    assert_string_equal(buf, "null");
}

static void test_same_text_as_cjson_otherwise(void **st)
{
    (void)st;
    const char *src = "{\"a\":[1,2.5,true,false,null],\"b\":{\"c\":\"q\\\"uo\\\\te\\n\\t\\u0001\"},"
                      "\"d\":[],\"e\":{},\"\\u00e9t\\u00e9\":\"\\u00fcn\\u00efcode\"}";
    cJSON *j = cJSON_Parse(src);
    assert_non_null(j);
    char *mine = json_print_exact(j), *theirs = cJSON_PrintUnformatted(j);
    assert_string_equal(mine, theirs);
    free(mine);
    free(theirs);
    cJSON_Delete(j);
    /* a byte that is not UTF-8 becomes U+FFFD: the text stays valid JSON */
    cJSON *bad = cJSON_CreateString("a\xff\xc3(b");
    char *fixed = json_print_exact(bad);
    assert_string_equal(fixed, "\"a\xEF\xBF\xBD\xEF\xBF\xBD(b\"");
    free(fixed);
    cJSON_Delete(bad);
    char *null_text = json_print_exact(NULL);
    assert_string_equal(null_text, "null");
    free(null_text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_is_exact),
        cmocka_unit_test(test_shortest_form),
        cmocka_unit_test(test_same_text_as_cjson_otherwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
