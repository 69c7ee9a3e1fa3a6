/* json.h: JSON printing that keeps every double exact. cJSON prints numbers with 15
 * significant digits whenever they read back *approximately* equal, which changes about
 * one value in nine by an ulp: a tuner's suggestion would not be what the trial runs, nor
 * what the tuner sees in its history. */
#ifndef TRIALQ_JSON_H
#define TRIALQ_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "common/minijson.h" /* json_put_string */

struct strbuf;

/* Like cJSON_PrintUnformatted, with each number printed in the fewest significant digits
 * (15, 16 or 17) that read back as the same double, as Python's repr does; NaN and
 * infinities print as null (cJSON's choice). Caller frees. */
char *json_print_exact(const cJSON *j);
/* One number into buf (at least 32 bytes), as json_print_exact prints it. */
void json_format_double(double d, char *buf, size_t size);

/* What Python's json.dumps(j, indent=4, sort_keys=sort_keys, separators=(",", colon))
 * prints (ensure_ascii on), which is how NNI's nnictl prints its JSON: colon ":" for
 * trial ls and experiment show|status, ": " for json.dumps(indent=4)'s default.
 * cJSON keeps no int and float apart: a number prints as Python prints what it reads
 * from json_print_exact's text, an int when that has no '.' or exponent (2, -0 as 0),
 * else a float in repr form (0.5, 1e-05, 1e+16). Equal to
 * json.dumps(json.loads(json_print_exact(j)), ...); bytes that are not UTF-8 print
 * as \ufffd. Caller frees. */
char *json_print_python(const cJSON *j, int sort_keys, const char *colon);

/* Where a JSON text is not what json_check accepts. */
struct json_issue {
    size_t offset;  /* byte of the problem */
    int line, col;  /* 1-based; col counts bytes */
    char msg[200];  /* what is wrong, e.g. "key \"x\" repeated in one object" */
};
/* Checks that s[0..n) is one JSON text as RFC 8259 defines it (one value with white
 * space around it, nothing else, UTF-8, at most 1000 levels deep) and holds nothing
 * cJSON would quietly change: a key repeated in one object (cJSON keeps the first,
 * JavaScript the last), \u0000 or an unpaired surrogate in a string (cJSON cuts the
 * string there), a number beyond the doubles (1e400). cJSON alone also accepts "03",
 * "1.", raw control characters in strings and anything after the value. 0, or -1 with
 * *issue filled. */
int json_check(const char *s, size_t n, struct json_issue *issue);

#endif
