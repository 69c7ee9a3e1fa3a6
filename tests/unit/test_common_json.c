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

static void expect_issue(const char *text, int line, int col, const char *words)
{
    struct json_issue is;
    if (json_check(text, strlen(text), &is) == 0)
        fail_msg("accepted: %s", text);
    if (is.line != line || is.col != col || !strstr(is.msg, words))
        fail_msg("%s: got %d:%d %s, want %d:%d ...%s...", text, is.line, is.col, is.msg, line, col, words);
}

static void expect_accepted(const char *const *texts, size_t n)
{
    struct json_issue is;
    for (size_t i = 0; i < n; i++)
        if (json_check(texts[i], strlen(texts[i]), &is) != 0)
            fail_msg("refused %s: %s", texts[i], is.msg);
}

static void test_check_cases(void **st)
{
    (void)st;
    struct json_issue is;
    static const char *const good[] = {
        "{}", " [ ] ", "0", "-0.5e+10", "\"\\u00e9\\ud83d\\ude00\\/\"", "{\"a\":{\"a\":1},\"b\":[{\"a\":1},{\"a\":2}]}",
        "\"\xc3\xa9\"", "{\"a\":1,\"\\u0061b\":2}", "1.7976931348623157e308", "[true,false,null]\r\n",
    };
    expect_accepted(good, sizeof good / sizeof *good);
    expect_issue("{\"x\":1} junk", 1, 9, "after the JSON value");
    expect_issue("{\"a\":1,\n \"a\":2}", 2, 2, "key \"a\" repeated");
    expect_issue("{\"a\":1,\"\\u0061\":2}", 1, 8, "key \"a\" repeated");
    expect_issue("[03]", 1, 2, "leading zero");
    expect_issue("[3.]", 1, 2, "after its '.'");
    expect_issue("[1e]", 1, 2, "exponent");
    expect_issue("[1e400]", 1, 2, "beyond the range");
    expect_issue("\"a\tb\"", 1, 3, "control character 0x09");
    expect_issue("\"a\\u0000b\"", 1, 3, "\\u0000");
    expect_issue("\"\\ud800\"", 1, 2, "unpaired surrogate");
    expect_issue("\"\\udc00x\"", 1, 2, "unpaired surrogate");
    expect_issue("\"a\xff\"", 1, 3, "not UTF-8");
    expect_issue("\"abc", 1, 1, "not closed");
    expect_issue("\"abc\\", 1, 1, "not closed");
    expect_issue("[1,]", 1, 4, "expected a value");
    expect_issue("{\"a\" 1}", 1, 6, "expected ':'");
    expect_issue("{'a':1}", 1, 2, "expected a key");
    expect_issue("NaN", 1, 1, "expected a value");
    expect_issue("", 1, 1, "found the end");
    expect_issue("\xef\xbb\xbf{}", 1, 1, "expected a value");
    /* nesting: 1000 levels pass, 1001 do not */
    char deep[2003];
    memset(deep, '[', 1000);
    memset(deep + 1000, ']', 1000);
    deep[2000] = 0;
    assert_int_equal(json_check(deep, 2000, &is), 0);
    memset(deep, '[', 1001);
    memset(deep + 1001, ']', 1001);
    deep[2002] = 0;
    assert_int_equal(json_check(deep, 2002, &is), -1);
    assert_non_null(strstr(is.msg, "1000 levels"));
}

/* Empty keys: a key "" has no text (its buffer was never allocated); comparing it with
 * another key must not hand memcmp a null pointer (UBSan aborts the api there). */
static void test_check_empty_keys(void **st)
{
    (void)st;
    struct json_issue is;
    static const char *const good[] = {
        "{\"\":1}", "{\"\":1,\"a\":2}", "{\"a\":1,\"\":2}", "{\"b\":1,\"\":2,\"a\":3}",
        "{\"\":{\"\":{\"\":1,\"x\":2}},\"x\":[{\"\":1,\"y\":2}]}", "[{\"\":1,\"a\":{\"a\":1,\"\":2}}]",
    };
    expect_accepted(good, sizeof good / sizeof *good);
    expect_issue("{\"\":1,\"\":2}", 1, 7, "key \"\" repeated");
    expect_issue("{\"a\":1,\"\":2,\"\":3}", 1, 13, "key \"\" repeated");
    expect_issue("{\"x\":{\"\":1,\"a\":2,\"\":3}}", 1, 18, "key \"\" repeated");
    /* nothing at all: no value, and no pointer arithmetic on a null text */
    assert_int_equal(json_check(NULL, 0, &is), -1);
    assert_non_null(strstr(is.msg, "found the end"));
}

/* 20,000 random edits of valid documents, judged by json_check and by Python's json
 * module made strict the same way (repeated keys, NaN/Infinity, numbers beyond the
 * doubles, \u0000 and lone surrogates refused; the text must be UTF-8): both verdicts
 * must agree, and a document json_check accepts must parse with cJSON. */
static void test_check_agrees_with_python(void **st)
{
    (void)st;
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    static const char edits[] = "{}[],:\"\\ -.eE+0123456789ntfu\n\t\x01\xc3\xa9\xff" "a";
    char dir[] = "/tmp/tq-jcheck-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char in[300], out[300], cmd[2000];
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    enum { N = 20000 };
    int *mine = xcalloc(N, sizeof *mine);
    FILE *f = fopen(in, "wb");
    assert_non_null(f);
    int accepted = 0;
    for (int i = 0; i < N; i++) {
        cJSON *j = random_doc(0);
        char *text = json_print_exact(j);
        cJSON_Delete(j);
        size_t n = strlen(text);
        char *buf = xmalloc(n + 8);
        memcpy(buf, text, n);
        free(text);
        int nedits = i % 10 == 0 ? 0 : 1 + (int)(next() % 2);
        for (int k = 0; k < nedits; k++) {
            size_t at = n ? next() % (n + 1) : 0;
            int what = (int)(next() % 3);
            if (what == 0 && n > 0 && at < n) { /* delete */
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
            } else if (what == 1 && at < n) { /* replace */
                buf[at] = edits[next() % (sizeof edits - 1)];
            } else if (n + 1 < n + 8) { /* insert */
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = edits[next() % (sizeof edits - 1)];
                n++;
            }
        }
        struct json_issue is;
        mine[i] = json_check(buf, n, &is) == 0;
        if (mine[i]) {
            accepted++;
            cJSON *back = cJSON_ParseWithLength(buf, n);
            if (!back) {
                for (size_t b = 0; b < n; b++)
                    fprintf(stderr, "%02x ", (unsigned char)buf[b]);
                fail_msg("json_check accepts what cJSON refuses: %.*s", (int)n, buf);
            }
            cJSON_Delete(back);
        }
        uint32_t len = (uint32_t)n;
        fwrite(&len, sizeof len, 1, f);
        fwrite(buf, 1, n, f);
        free(buf);
    }
    fclose(f);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import json, math, struct, sys\n"
             "def pairs(kv):\n"
             "    d = {}\n"
             "    for k, v in kv:\n"
             "        if k in d: raise ValueError(\"repeated\")\n"
             "        d[k] = v\n"
             "    return d\n"
             "def num(x):\n"
             "    if not math.isfinite(float(x)): raise ValueError(\"range\")\n"
             "    return x\n"
             "def const(x): raise ValueError(x)\n"
             "def strings(v):\n"
             "    if isinstance(v, str): return \"\\0\" not in v and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in v)\n"
             "    if isinstance(v, dict): return all(strings(k) and strings(x) for k, x in v.items())\n"
             "    if isinstance(v, list): return all(strings(x) for x in v)\n"
             "    return True\n"
             "data = open(sys.argv[1], \"rb\").read()\n"
             "o, res = 0, []\n"
             "while o < len(data):\n"
             "    (n,) = struct.unpack(\"=I\", data[o:o + 4]); t = data[o + 4:o + 4 + n]; o += 4 + n\n"
             "    try:\n"
             "        v = json.loads(t.decode(\"utf-8\"), object_pairs_hook=pairs, parse_float=num, parse_int=num, parse_constant=const)\n"
             "        res.append(\"1\" if strings(v) else \"0\")\n"
             "    except (ValueError, RecursionError, UnicodeDecodeError):\n"
             "        res.append(\"0\")\n"
             "open(sys.argv[2], \"w\").write(\"\".join(res))\n' %s %s",
             in, out);
    assert_int_equal(system(cmd), 0);
    size_t len = 0;
    char *theirs = read_file(out, &len);
    assert_non_null(theirs);
    assert_int_equal(len, N);
    f = fopen(in, "rb");
    for (int i = 0; i < N; i++) {
        uint32_t n;
        assert_int_equal(fread(&n, sizeof n, 1, f), 1);
        char *buf = xmalloc(n + 1);
        assert_int_equal(fread(buf, 1, n, f), n);
        buf[n] = 0;
        if (mine[i] != (theirs[i] == '1'))
            fail_msg("document %d: json_check %s, Python %s: %s", i, mine[i] ? "accepts" : "refuses",
                     theirs[i] == '1' ? "accepts" : "refuses", buf);
        free(buf);
    }
    fclose(f);
    /* both verdicts occur often enough to mean something */
    assert_true(accepted > N / 20 && accepted < N - N / 20);
    free(theirs);
    free(mine);
    unlink(in);
    unlink(out);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_is_exact),
        cmocka_unit_test(test_shortest_form),
        cmocka_unit_test(test_same_text_as_cjson_otherwise),
        cmocka_unit_test(test_python_layout_fixed_cases),
        cmocka_unit_test(test_python_layout_is_pythons),
        cmocka_unit_test(test_check_cases),
        cmocka_unit_test(test_check_empty_keys),
        cmocka_unit_test(test_check_agrees_with_python),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
