/* test_api_prom.c: Prometheus' text exposition format 0.0.4 as api/prom.c writes it:
 * HELP and TYPE lines with HELP's escapes, label values escaped (backslash, double
 * quote, newline), values as integers, floats, +Inf/-Inf/NaN; histograms with
 * cumulative buckets, le="+Inf" equal to _count, _sum; the scheduler's tick lag. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/prom.h"

static char *text(struct strbuf *sb)
{
    sb_puts(sb, ""); /* a buffer even when nothing was written */
    return sb->buf;
}

static void test_family_and_samples(void **state)
{
    struct strbuf sb;
    sb_init(&sb);
    prom_family(&sb, "trialq_x_total", "counter", "Line one\nback\\slash \"quoted\"");
    struct prom_label l[] = {{"name", "a\"b\\c\nd"}, {"empty", NULL}};
    prom_sample(&sb, "trialq_x_total", l, 2, 3);
    prom_sample(&sb, "trialq_x_total", &(struct prom_label){"k", "v"}, 1, 0.25);
    prom_sample(&sb, "g", NULL, 0, INFINITY);
    prom_sample(&sb, "g", NULL, 0, -INFINITY);
    prom_sample(&sb, "g", NULL, 0, NAN);
    prom_sample(&sb, "g", NULL, 0, 1e300);
    prom_sample(&sb, "g", NULL, 0, -7);
    prom_sample(&sb, "g", NULL, 0, 9007199254740993.0 * 4);
    assert_string_equal(text(&sb), "# HELP trialq_x_total Line one\\nback\\\\slash \"quoted\"\n"
                                   "# TYPE trialq_x_total counter\n"
                                   "trialq_x_total{name=\"a\\\"b\\\\c\\nd\",empty=\"\"} 3\n"
                                   "trialq_x_total{k=\"v\"} 0.25\n"
                                   "g +Inf\n"
                                   "g -Inf\n"
                                   "g NaN\n"
                                   "g 1e+300\n"
                                   "g -7\n"
                                   "g 3.6028797018964e+16\n");
    sb_free(&sb);
}

static void test_histogram(void **state)
{
    static const double bounds[] = {0.01, 0.1, 1};
    struct prom_histogram h = {bounds, 3, {0}, 0, 0};
    prom_observe(&h, 0.005);
    prom_observe(&h, 0.01); /* on a bound: in its bucket (le: less or equal) */
    prom_observe(&h, 0.5);
    prom_observe(&h, 3);
    struct strbuf sb;
    sb_init(&sb);
    prom_histogram_write(&sb, "lat_seconds", "Latency.", &h);
    assert_string_equal(text(&sb), "# HELP lat_seconds Latency.\n"
                                   "# TYPE lat_seconds histogram\n"
                                   "lat_seconds_bucket{le=\"0.01\"} 2\n"
                                   "lat_seconds_bucket{le=\"0.1\"} 2\n"
                                   "lat_seconds_bucket{le=\"1\"} 3\n"
                                   "lat_seconds_bucket{le=\"+Inf\"} 4\n"
                                   "lat_seconds_sum 3.515\n"
                                   "lat_seconds_count 4\n");
    sb_free(&sb);
    /* empty: every bucket 0, the sum 0 */
    struct prom_histogram z = {bounds, 3, {0}, 0, 0};
    sb_init(&sb);
    prom_histogram_write(&sb, "z", "Z.", &z);
    assert_non_null(strstr(text(&sb), "z_bucket{le=\"+Inf\"} 0\nz_sum 0\nz_count 0\n"));
    sb_free(&sb);
}

static void test_tick_lag(void **state)
{
    int64_t t = 600000; /* a window's start */
    prom_note_tick(t, 500);
    assert_int_equal(prom_tick_lag_ms(t), 0);
    prom_note_tick(t + 500, 500);
    prom_note_tick(t + 3000, 500); /* 2 s late */
    prom_note_tick(t + 3500, 500);
    assert_int_equal(prom_tick_lag_ms(t + 3500), 2000);
    /* still shown in the next minute, gone in the one after */
    prom_note_tick(t + 60100, 500);
    assert_int_equal(prom_tick_lag_ms(t + 60100), 56100);
    int64_t x = t + 60100;
    while (x < t + 120000) /* on time through the next minute */
        prom_note_tick(x += 500, 500);
    assert_int_equal(prom_tick_lag_ms(x), 56100);
    while (x < t + 180000) /* and the one after */
        prom_note_tick(x += 500, 500);
    assert_int_equal(prom_tick_lag_ms(x), 0);
    assert_int_equal(prom_tick_lag_ms(t + 600000), 0); /* no tick for long: nothing current */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_family_and_samples), cmocka_unit_test(test_histogram),
                                       cmocka_unit_test(test_tick_lag)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
