/* json_print_exact: every double survives print -> parse bit for bit, in the fewest
 * digits; the rest of the output is what cJSON prints. json_print_python: the same text
 * as Python's json.dumps (NNI's nnictl output), checked against Python itself. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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


/* A random document: nesting, empty containers, numbers of every kind, strings with
 * escapes, control characters, non-ASCII and astral characters, keys out of order. */
static cJSON *random_doc(int depth)
{
    static const char *const pieces[] = {"a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\r",
                                         "\b", "\f", "\x01", "\x1f", "\x7f", "\xc3\xa9",
                                         "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xef\xbf\xbf", "~"};
    uint64_t r = next();
    int kind = depth >= 4 ? (int)(r % 4) : (int)(r % 6);
    switch (kind) {
    case 0: {
        double d;
        switch ((r >> 8) % 6) {
        case 0: d = (double)(int64_t)(next() % 2000001) - 1000000; break;
        case 1: d = ((double)(next() >> 11) / 9007199254740992.0 - 0.5) * 10; break;
        case 2: d = exp(((double)(next() >> 11) / 9007199254740992.0 - 0.5) * 90); break;
        case 3: d = pow(10, (double)((int)(next() % 41) - 20)); break;
        case 4: d = (double)(next() >> 8); break; /* large integral values */
        default: {
            uint64_t bits = next();
            memcpy(&d, &bits, sizeof d);
            if (!isfinite(d))
                d = 0.25;
        }
        }
        return cJSON_CreateNumber((r >> 16) % 2 ? d : -d);
    }
    case 1: {
        char s[200] = "";
        int n = (int)((r >> 8) % 8);
        for (int i = 0; i < n; i++)
            strcat(s, pieces[next() % (sizeof pieces / sizeof *pieces)]);
        return cJSON_CreateString(s);
    }
    case 2: return (r >> 8) % 3 == 0 ? cJSON_CreateNull() : cJSON_CreateBool((r >> 9) % 2);
    case 3:
    case 4: {
        cJSON *a = cJSON_CreateArray();
        int n = (int)((r >> 8) % 4);
        for (int i = 0; i < n; i++)
            cJSON_AddItemToArray(a, random_doc(depth + 1));
        return a;
    }
    default: {
        cJSON *o = cJSON_CreateObject();
        int n = (int)((r >> 8) % 5);
        for (int i = 0; i < n; i++) {
            char key[40];
            snprintf(key, sizeof key, "%s%u", pieces[next() % (sizeof pieces / sizeof *pieces)],
                     (unsigned)(next() % 100));
            if (!cJSON_GetObjectItemCaseSensitive(o, key))
                cJSON_AddItemToObject(o, key, random_doc(depth + 1));
        }
        return o;
    }
    }
}

/* 3,000 random documents, each in both layouts nnictl uses, against what
 * /usr/bin/python3's json module prints for json_print_exact's text of them */
static void test_python_layout_is_pythons(void **st)
{
    (void)st;
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    char dir[] = "/tmp/tq-json-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char in[300], out[300], cmd[1200];
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    enum { N = 3000 };
    char **mine = xcalloc(2 * N, sizeof *mine);
    FILE *f = fopen(in, "w");
    assert_non_null(f);
    for (int i = 0; i < N; i++) {
        cJSON *j = random_doc(0);
        char *text = json_print_exact(j);
        fprintf(f, "%s\n", text);
        /* printed from the parsed text, as nnictl prints what it read */
        cJSON *back = cJSON_Parse(text);
        assert_non_null(back);
        mine[2 * i] = json_print_python(back, 1, ":");
        mine[2 * i + 1] = json_print_python(back, 0, ": ");
        cJSON_Delete(back);
        cJSON_Delete(j);
        free(text);
    }
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import json,sys\n"
             "for l in open(sys.argv[1], encoding=\"utf-8\"):\n"
             "    d = json.loads(l)\n"
             "    print(json.dumps(d, indent=4, sort_keys=True, separators=(\",\", \":\")), end=\"\\0\")\n"
             "    print(json.dumps(d, indent=4), end=\"\\0\")\n' %s > %s",
             in, out);
    assert_int_equal(system(cmd), 0);
    f = fopen(out, "r");
    assert_non_null(f);
    char *theirs = NULL;
    size_t cap = 0;
    for (int i = 0; i < 2 * N; i++) {
        ssize_t n = getdelim(&theirs, &cap, '\0', f);
        assert_true(n > 0);
        theirs[n - 1] = 0;
        if (strcmp(mine[i], theirs) != 0)
            fail_msg("document %d (%s layout):\n--- python\n%s\n--- trialq\n%s", i / 2,
                     i % 2 ? "indent=4" : "nnictl", theirs, mine[i]);
        free(mine[i]);
    }
    free(theirs);
    free(mine);
    fclose(f);
    unlink(in);
    unlink(out);
    rmdir(dir);
}

static void test_python_layout_fixed_cases(void **st)
{
    (void)st;
    cJSON *j = cJSON_Parse("{\"b\":[],\"a\":{},\"c\":[1,1e-05,0.0001,1e16,-0,1.5e300,\"\\u00e9\\ud83d\\ude00\"]}");
    assert_non_null(j);
    char *s = json_print_python(j, 1, ":");
    assert_string_equal(s, "{\n    \"a\":{},\n    \"b\":[],\n    \"c\":[\n        1,\n        1e-05,\n"
                           "        0.0001,\n        1e+16,\n        0,\n        1.5e+300,\n"
                           "        \"\\u00e9\\ud83d\\ude00\"\n    ]\n}");
    free(s);
    cJSON_Delete(j);
    cJSON *bad = cJSON_CreateString("a\xff");
    s = json_print_python(bad, 1, ":");
    assert_string_equal(s, "\"a\\ufffd\"");
    free(s);
    cJSON_Delete(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_is_exact),
        cmocka_unit_test(test_shortest_form),
        cmocka_unit_test(test_same_text_as_cjson_otherwise),
        cmocka_unit_test(test_python_layout_fixed_cases),
        cmocka_unit_test(test_python_layout_is_pythons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
