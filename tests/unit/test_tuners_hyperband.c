/* test_tuners_hyperband.c: the Hyperband and BOHB advisors (tuners/hyperband.c,
 * tuners/bohb.c, tuners/bracket.c): bracket sizes and budgets by NNI's formulas,
 * the wire ids, promotions of the top n/eta by the latest result (maximize and
 * minimize, PERIODICAL results, configurations without results), serial, parallelism
 * and BOHB's strict order, determinism across a fresh state (a restarted api), BOHB's
 * model from min_points_in_model results on, and classArgs errors naming the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuners/bracket.h"
#include "tuners/internal.h"
#include "tests/unit/tuner_fixtures.h"

/* ---- a virtual experiment: trials issued as the api does, ended in order ---- */

struct sim {
    const struct tuner_ops *ops;
    void *t;
    struct hist h;
    char **labels;
    int cap;
    int concurrency;
    double (*objective)(const cJSON *params);
    int waits; /* suggest() answered 2 this many times */
};

static double obj_x(const cJSON *p)
{
    /* the result grows with x and a little with the budget */
    return num(p, "x") + 0.001 * num(p, HB_BUDGET_KEY);
}

static const char *const SPACE = "{\"x\": {\"_type\": \"uniform\", \"_value\": [0, 1]},"
                                 " \"c\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", \"c\"]}}";

static void sim_init(struct sim *s, const struct tuner_ops *ops, const char *args, const struct ss_space *space,
                     uint64_t seed, int concurrency)
{
    memset(s, 0, sizeof *s);
    s->ops = ops;
    s->t = create(ops, args, space, seed);
    s->concurrency = concurrency;
    s->objective = obj_x;
}

static void sim_free(struct sim *s)
{
    for (int i = 0; i < s->h.n; i++)
        free(s->labels[i]);
    free(s->labels);
    hist_free(&s->h);
    s->ops->destroy(s->t);
}

/* Relinks the labels into the items (hist_add may move them). */
static void sim_relabel(struct sim *s)
{
    for (int i = 0; i < s->h.n; i++)
        s->h.items[i].label = s->labels[i];
}

/* Asks for one suggestion: 1 added (RUNNING), 2 nothing now. */
static int sim_issue(struct sim *s)
{
    struct tuner_history th = {.n = s->h.n, .items = s->h.items};
    cJSON *p = NULL;
    struct errbuf e = {{0}};
    int64_t index = s->h.n;
    int rc = s->ops->suggest(s->t, index, &th, &p, &e);
    if (rc == 2) {
        s->waits++;
        return 2;
    }
    if (rc != 1)
        fail_msg("%s: suggest(%lld) returned %d: %s", s->ops->name, (long long)index, rc, e.msg);
    char *label = s->ops->label(s->t, index);
    assert_non_null(label);
    if (s->h.n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->labels = xrealloc(s->labels, sizeof *s->labels * (size_t)s->cap);
    }
    s->labels[s->h.n] = label;
    hist_add(&s->h, index, p, 0, 0, "RUNNING");
    sim_relabel(s);
    return 1;
}

static void sim_end(struct sim *s, int k, const char *status, int has_final, int has_latest, double v)
{
    struct tuner_result *r = &s->h.items[k];
    r->status = status;
    r->has_value = has_final && strcmp(status, "SUCCEEDED") == 0;
    r->value = v;
    r->has_latest = has_latest;
    r->latest = v;
}

static int sim_running(const struct sim *s)
{
    int n = 0;
    for (int i = 0; i < s->h.n; i++)
        n += strcmp(s->h.items[i].status, "RUNNING") == 0;
    return n;
}

/* One tick: fills the free slots (up to n trials in all), then ends the oldest
 * running trial with its objective value. */
static void sim_step(struct sim *s, int n)
{
    while (sim_running(s) < s->concurrency && s->h.n < n)
        if (sim_issue(s) == 2)
            break;
    int oldest = -1;
    for (int i = 0; i < s->h.n && oldest < 0; i++)
        if (strcmp(s->h.items[i].status, "RUNNING") == 0)
            oldest = i;
    if (oldest < 0)
        fail_msg("the advisor waits with nothing running after %d trials", s->h.n);
    sim_end(s, oldest, "SUCCEEDED", 1, 1, s->objective(s->h.params[oldest]));
}

static void sim_finish(struct sim *s)
{
    for (int i = 0; i < s->h.n; i++)
        if (strcmp(s->h.items[i].status, "RUNNING") == 0)
            sim_end(s, i, "SUCCEEDED", 1, 1, s->objective(s->h.params[i]));
}

/* Runs until n trials were issued, then ends every trial. */
static void sim_run(struct sim *s, int n)
{
    while (s->h.n < n)
        sim_step(s, n);
    sim_finish(s);
}

/* The same with a fresh tuner state (an api restart) every `every` trials. */
static void sim_run_restarting(struct sim *s, int n, const char *args, const struct ss_space *space,
                               uint64_t seed, int every)
{
    int next = every;
    while (s->h.n < n) {
        sim_step(s, n);
        if (s->h.n >= next) {
            s->ops->destroy(s->t);
            s->t = create(s->ops, args, space, seed);
            next += every;
        }
    }
    sim_finish(s);
}

/* The parameters without TRIAL_BUDGET, as text. */
static char *config_text(const cJSON *p)
{
    cJSON *c = cJSON_Duplicate(p, 1);
    cJSON_DeleteItemFromObjectCaseSensitive(c, HB_BUDGET_KEY);
    char *t = cJSON_PrintUnformatted(c);
    cJSON_Delete(c);
    return t;
}

static void assert_err(const struct tuner_ops *ops, const char *args, const char *space, const char *want)
{
    struct ss_space *s = parse_space(space ? space : SPACE);
    cJSON *a = args ? cJSON_Parse(args) : NULL;
    assert_true(!args || a);
    void *st = NULL;
    struct errbuf e = {{0}};
    if (ops->create(a, s, 1, &st, &e) == 0) {
        ops->destroy(st);
        fail_msg("%s accepted %s", ops->name, args ? args : space);
    }
    if (!strstr(e.msg, want))
        fail_msg("error \"%s\" does not name \"%s\"", e.msg, want);
    cJSON_Delete(a);
    ss_free(s);
}

/* ---- plan: NNI's formulas ---- */

static void plan(struct hb_plan *p, double r, double rmin, int eta)
{
    struct errbuf e = {{0}};
    if (hb_plan_init(p, r, rmin, eta, 1, HB_PARALLEL, 1, &e) < 0)
        fail_msg("plan: %s", e.msg);
}

static void test_plan_r60_eta3(void **state)
{
    (void)state;
    struct hb_plan p;
    plan(&p, 60, 1, 3);
    assert_int_equal(p.s_max, 3); /* floor(log3 60 = 3.73) */
    /* s: n of round 0, then (n, budget) per round; budget = floor(60 / 3^s * 3^i) */
    static const int64_t want[4][4][2] = {
        {{4, 60}},                                  /* s = 0 */
        {{6, 20}, {2, 60}},                         /* s = 1 */
        {{12, 6}, {4, 20}, {1, 60}},                /* s = 2: 60/9 = 6.67 */
        {{27, 2}, {9, 6}, {3, 20}, {1, 60}},        /* s = 3: 60/27 = 2.22 */
    };
    for (int s = 0; s <= 3; s++) {
        assert_int_equal(hb_bracket_n(&p, s), want[s][0][0]);
        for (int i = 0; i <= s; i++) {
            assert_int_equal(hb_round_n(&p, s, i), want[s][i][0]);
            assert_int_equal(hb_round_budget(&p, s, i), want[s][i][1]);
        }
    }
    /* brackets start at s_max and cycle; counters continue across them */
    assert_int_equal(hb_bracket_s(&p, 0), 3);
    assert_int_equal(hb_bracket_s(&p, 3), 0);
    assert_int_equal(hb_bracket_s(&p, 4), 3);
    assert_int_equal(hb_counter_base(&p, 0), 0);
    assert_int_equal(hb_counter_base(&p, 1), 27);
    assert_int_equal(hb_counter_base(&p, 2), 39);
    assert_int_equal(hb_counter_base(&p, 3), 45);
    assert_int_equal(hb_counter_base(&p, 4), 49);
    assert_int_equal(hb_counter_base(&p, 9), 49 * 2 + 27); /* cycle 2, after its s = 3 */
    for (int64_t c = 0; c < 300; c++) {
        int64_t b = hb_counter_bracket(&p, c);
        assert_true(hb_counter_base(&p, b) <= c && c < hb_counter_base(&p, b + 1));
    }
}

static void test_plan_other_values(void **state)
{
    (void)state;
    struct hb_plan p;
    /* R = 81, eta = 3: the paper's table (n = 81, 34, 15, 8, 5) */
    plan(&p, 81, 1, 3);
    assert_int_equal(p.s_max, 4);
    static const int64_t n81[] = {5, 8, 15, 34, 81};
    for (int s = 0; s <= 4; s++)
        assert_int_equal(hb_bracket_n(&p, s), n81[s]);
    assert_int_equal(hb_round_n(&p, 3, 1), 11);
    assert_int_equal(hb_round_n(&p, 3, 3), 1);
    for (int i = 0; i <= 4; i++)
        assert_int_equal(hb_round_budget(&p, 4, i), (int64_t)pow(3, i));
    /* R = 9, eta = 3: log3 9 is 2 only with NNI's epsilon */
    plan(&p, 9, 1, 3);
    assert_int_equal(p.s_max, 2);
    assert_int_equal(hb_bracket_n(&p, 2), 9);
    assert_int_equal(hb_bracket_n(&p, 1), 5);
    assert_int_equal(hb_bracket_n(&p, 0), 3);
    assert_int_equal(hb_round_budget(&p, 2, 0), 1);
    assert_int_equal(hb_round_budget(&p, 1, 0), 3);
    /* R = 5, eta = 2: fractional budgets are floored (5/4 -> 1, 2.5 -> 2) */
    plan(&p, 5, 1, 2);
    assert_int_equal(p.s_max, 2);
    assert_int_equal(hb_bracket_n(&p, 2), 4);
    assert_int_equal(hb_round_budget(&p, 2, 0), 1);
    assert_int_equal(hb_round_budget(&p, 2, 1), 2);
    assert_int_equal(hb_round_budget(&p, 2, 2), 5);
    assert_int_equal(hb_round_n(&p, 2, 1), 2);
    assert_int_equal(hb_bracket_n(&p, 1), 3);
    assert_int_equal(hb_round_budget(&p, 1, 0), 2);
    /* R < eta: one bracket of one round */
    plan(&p, 2, 1, 3);
    assert_int_equal(p.s_max, 0);
    assert_int_equal(hb_bracket_n(&p, 0), 1);
    assert_int_equal(hb_round_budget(&p, 0, 0), 2);
    /* BOHB's defaults: min_budget 1, max_budget 3, eta 3 */
    plan(&p, 3, 1, 3);
    assert_int_equal(p.s_max, 1);
    assert_int_equal(hb_bracket_n(&p, 1), 3);
    assert_int_equal(hb_round_budget(&p, 1, 0), 1);
    assert_int_equal(hb_round_budget(&p, 1, 1), 3);
    assert_int_equal(hb_bracket_n(&p, 0), 2);
}

static void test_labels(void **state)
{
    (void)state;
    struct hb_plan p;
    plan(&p, 60, 1, 3);
    char buf[64];
    hb_label(&p, 5, 1, 80, buf, sizeof buf); /* bracket 5 = hb 1, s = 2: counters 76 .. 87 */
    assert_string_equal(buf, "1-2_1_80");
    int64_t b, c;
    int r;
    assert_true(hb_parse(&p, "1-2_1_80", &b, &r, &c));
    assert_int_equal(b, 5);
    assert_int_equal(r, 1);
    assert_int_equal(c, 80);
    assert_false(hb_parse(&p, "1-2_1_52", &b, &r, &c)); /* 52 is bracket 4's */
    assert_true(hb_parse(&p, "0-3_0_0", &b, &r, &c));
    assert_int_equal(b, 0);
    /* not ours: wrong s for the counter, round beyond s, junk, BOHB's form */
    assert_false(hb_parse(&p, "0-2_0_0", &b, &r, &c));
    assert_false(hb_parse(&p, "0-0_1_45", &b, &r, &c));
    assert_false(hb_parse(&p, "0-3_0_01", &b, &r, &c));
    assert_false(hb_parse(&p, "0-3_0_0x", &b, &r, &c));
    assert_false(hb_parse(&p, "3_0_0", &b, &r, &c));
    assert_false(hb_parse(&p, "-1_0_0", &b, &r, &c));
    assert_false(hb_parse(&p, NULL, &b, &r, &c));
    struct errbuf e = {{0}};
    assert_int_equal(hb_plan_init(&p, 3, 1, 3, 1, HB_STRICT, 0, &e), 0);
    hb_label(&p, 2, 0, 5, buf, sizeof buf);
    assert_string_equal(buf, "1_0_5");
    assert_true(hb_parse(&p, "1_0_5", &b, &r, &c));
    assert_int_equal(b, 2);
    assert_false(hb_parse(&p, "0-1_0_5", &b, &r, &c));
}

/* ---- Hyperband: brackets, rounds, promotions ---- */

/* Checks every promotion of a finished simulation: same configuration as its round-0
 * trial, the round's budget, and the promoted set is the top n of the round before. */
static void check_promotions(const struct sim *s, const struct hb_plan *p, int maximize)
{
    int promotions = 0;
    for (int k = 0; k < s->h.n; k++) {
        int64_t b, c;
        int r;
        assert_true(hb_parse(p, s->labels[k], &b, &r, &c));
        int sb = hb_bracket_s(p, b);
        assert_int_equal((int64_t)num(s->h.params[k], HB_BUDGET_KEY), hb_round_budget(p, sb, r));
        if (r == 0)
            continue;
        promotions++;
        /* the same configuration ran in round r - 1 */
        int prev = -1;
        char want[64];
        hb_label(p, b, r - 1, c, want, sizeof want);
        for (int j = 0; j < k && prev < 0; j++)
            if (strcmp(s->labels[j], want) == 0)
                prev = j;
        if (prev < 0)
            fail_msg("%s promoted without %s before it", s->labels[k], want);
        char *a = config_text(s->h.params[k]), *pa = config_text(s->h.params[prev]);
        assert_string_equal(a, pa);
        free(a);
        free(pa);
        /* and no configuration of round r - 1 left behind beats it */
        for (int j = 0; j < s->h.n; j++) {
            int64_t b2, c2;
            int r2;
            hb_parse(p, s->labels[j], &b2, &r2, &c2);
            if (b2 != b || r2 != r - 1)
                continue;
            char up[64];
            hb_label(p, b, r, c2, up, sizeof up);
            int promoted = 0;
            for (int q = 0; q < s->h.n && !promoted; q++)
                promoted = strcmp(s->labels[q], up) == 0;
            if (!promoted) {
                double loser = s->h.items[j].value, winner = s->h.items[prev].value;
                if (maximize ? loser > winner : loser < winner)
                    fail_msg("%s (%g) promoted over %s (%g)", s->labels[k], winner, s->labels[j], loser);
            }
        }
    }
    assert_true(promotions > 0);
}

static void test_hyperband_brackets_maximize(void **state)
{
    (void)state;
    struct ss_space *space = parse_space(SPACE);
    struct sim s;
    sim_init(&s, &tuner_hyperband, "{\"R\": 9, \"eta\": 3}", space, 7, 1);
    /* one whole Hyperband iteration: 9 + 3 + 1, 5 + 1, 3, then the next starts */
    sim_run(&s, 24);
    static const char *const head[] = {"0-2_0_0", "0-2_0_1", "0-2_0_2", "0-2_0_3", "0-2_0_4", "0-2_0_5",
                                       "0-2_0_6", "0-2_0_7", "0-2_0_8"};
    for (int i = 0; i < 9; i++) {
        assert_string_equal(s.labels[i], head[i]);
        assert_int_equal(num(s.h.params[i], HB_BUDGET_KEY), 1);
    }
    /* round 1: the 3 best of round 0, best first, budget 3 */
    struct ranked best[9];
    for (int i = 0; i < 9; i++)
        best[i] = (struct ranked){-s.h.items[i].value, i};
    ranked_sort(best, 9);
    for (int i = 0; i < 3; i++) {
        char want[32];
        snprintf(want, sizeof want, "0-2_1_%d", best[i].i);
        assert_string_equal(s.labels[9 + i], want);
        assert_int_equal(num(s.h.params[9 + i], HB_BUDGET_KEY), 3);
    }
    assert_true(strncmp(s.labels[12], "0-2_2_", 6) == 0);
    assert_int_equal(num(s.h.params[12], HB_BUDGET_KEY), 9);
    assert_string_equal(s.labels[13], "0-1_0_9");
    assert_string_equal(s.labels[17], "0-1_0_13");
    assert_int_equal(num(s.h.params[13], HB_BUDGET_KEY), 3);
    assert_true(strncmp(s.labels[18], "0-1_1_", 6) == 0);
    assert_string_equal(s.labels[19], "0-0_0_14");
    assert_string_equal(s.labels[21], "0-0_0_16");
    assert_int_equal(num(s.h.params[21], HB_BUDGET_KEY), 9);
    assert_string_equal(s.labels[22], "1-2_0_17");
    assert_int_equal(s.waits, 0);
    struct hb_plan p;
    plan(&p, 9, 1, 3);
    check_promotions(&s, &p, 1);
    /* TRIAL_BUDGET comes last, after the search-space keys (NNI's dict order) */
    assert_string_equal(s.h.params[0]->child->string, "x");
    const cJSON *last = s.h.params[0]->child;
    while (last->next)
        last = last->next;
    assert_string_equal(last->string, HB_BUDGET_KEY);
    sim_free(&s);
    ss_free(space);
}

static void test_hyperband_minimize_and_parallel(void **state)
{
    (void)state;
    struct ss_space *space = parse_space(SPACE);
    struct sim s;
    /* R = 60: 27 configurations at budget 2 first; 3 at a time */
    sim_init(&s, &tuner_hyperband, "{\"optimize_mode\": \"minimize\", \"R\": 60}", space, 11, 3);
    sim_run(&s, 160);
    struct hb_plan p;
    struct errbuf e = {{0}};
    assert_int_equal(hb_plan_init(&p, 60, 1, 3, 0, HB_PARALLEL, 1, &e), 0);
    check_promotions(&s, &p, 0);
    /* parallelism: bracket 0-2 starts while round 0 of 0-3 still runs (27th issued,
     * slots free before the round has ended) */
    assert_string_equal(s.labels[26], "0-3_0_26");
    assert_string_equal(s.labels[27], "0-2_0_27");
    assert_int_equal(s.waits, 0);
    sim_free(&s);
    ss_free(space);
}

static void test_hyperband_serial(void **state)
{
    (void)state;
    struct ss_space *space = parse_space(SPACE);
    struct sim s;
    sim_init(&s, &tuner_hyperband, "{\"R\": 9, \"exec_mode\": \"serial\"}", space, 3, 3);
    /* round 0 of 0-2 issued; 7 of its trials ended, 2 run */
    for (int i = 0; i < 9; i++)
        assert_int_equal(sim_issue(&s), 1);
    for (int i = 0; i < 7; i++)
        sim_end(&s, i, "SUCCEEDED", 1, 1, obj_x(s.h.params[i]));
    /* round 0 has not ended: serial waits, parallelism would start 0-1 */
    assert_int_equal(sim_issue(&s), 2);
    void *par = create(&tuner_hyperband, "{\"R\": 9}", space, 3);
    struct tuner_history th = {.n = s.h.n, .items = s.h.items};
    cJSON *pp = NULL;
    struct errbuf e = {{0}};
    assert_int_equal(tuner_hyperband.suggest(par, 9, &th, &pp, &e), 1);
    char *lab = tuner_hyperband.label(par, 9);
    assert_string_equal(lab, "0-1_0_9");
    free(lab);
    cJSON_Delete(pp);
    tuner_hyperband.destroy(par);
    /* a trial ending does not free the round: still waiting */
    sim_end(&s, 7, "FAILED", 0, 1, 0.5);
    assert_int_equal(sim_issue(&s), 2);
    sim_end(&s, 8, "SUCCEEDED", 1, 1, 0.25);
    assert_int_equal(sim_issue(&s), 1);
    assert_true(strncmp(s.labels[9], "0-2_1_", 6) == 0);
    assert_int_equal(sim_issue(&s), 1);
    assert_int_equal(sim_issue(&s), 1);
    assert_int_equal(sim_issue(&s), 2); /* round 1 runs */
    for (int i = 9; i < 12; i++)
        sim_end(&s, i, "SUCCEEDED", 1, 1, i);
    assert_int_equal(sim_issue(&s), 1);
    assert_true(strncmp(s.labels[12], "0-2_2_", 6) == 0);
    /* the last round is issued: serial starts the next bracket (NNI's is_completed) */
    assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[13], "0-1_0_9");
    sim_free(&s);
    ss_free(space);
}

static void test_periodical_and_missing_results(void **state)
{
    (void)state;
    struct ss_space *space = parse_space(SPACE);
    struct sim s;
    sim_init(&s, &tuner_hyperband, "{\"R\": 9}", space, 5, 9);
    for (int i = 0; i < 9; i++)
        assert_int_equal(sim_issue(&s), 1);
    /* 0..5 end without a result; 6 failed with an intermediate result of 10; 7
     * succeeded (0.5); 8 early-stopped after an intermediate result of 2 */
    for (int i = 0; i < 6; i++)
        sim_end(&s, i, i % 2 ? "SUCCEEDED" : "FAILED", 0, 0, 0);
    sim_end(&s, 6, "FAILED", 0, 1, 10);
    sim_end(&s, 7, "SUCCEEDED", 1, 1, 0.5);
    sim_end(&s, 8, "EARLY_STOPPED", 0, 1, 2);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[9], "0-2_1_6");
    assert_string_equal(s.labels[10], "0-2_1_8");
    assert_string_equal(s.labels[11], "0-2_1_7");
    /* a round whose trials all end without any result ends its bracket */
    for (int i = 9; i < 12; i++)
        sim_end(&s, i, "FAILED", 0, 0, 0);
    assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[12], "0-1_0_9");
    /* serial mode too: the bracket is over, the next one starts */
    void *ser = create(&tuner_hyperband, "{\"R\": 9, \"exec_mode\": \"serial\"}", space, 5);
    struct tuner_history th = {.n = 12, .items = s.h.items};
    cJSON *pp = NULL;
    struct errbuf e = {{0}};
    assert_int_equal(tuner_hyperband.suggest(ser, 12, &th, &pp, &e), 1);
    char *lab = tuner_hyperband.label(ser, 12);
    assert_string_equal(lab, "0-1_0_9");
    free(lab);
    cJSON_Delete(pp);
    tuner_hyperband.destroy(ser);
    /* trials without a label of Hyperband's form take no part */
    sim_free(&s);
    sim_init(&s, &tuner_hyperband, "{\"R\": 9}", space, 5, 1);
    hist_add(&s.h, -1, cJSON_Parse("{\"x\": 0.5, \"c\": \"a\"}"), 1, 1, "SUCCEEDED");
    s.labels = xcalloc(64, sizeof *s.labels);
    s.cap = 64;
    s.labels[0] = xstrdup("7");
    sim_relabel(&s);
    assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[1], "0-2_0_0");
    sim_free(&s);
    ss_free(space);
}

/* Labels the api did not make (a gap of brackets, one far ahead) cost no time and are
 * worked around by the same rules: a started round goes on first, then the first
 * configuration still waiting. */
static void test_odd_labels(void **state)
{
    (void)state;
    struct ss_space *space = parse_space(SPACE);
    struct hb_plan p;
    plan(&p, 9, 1, 3);
    char far[64], next[64];
    int64_t b = 3000000000LL, base = hb_counter_base(&p, b);
    hb_label(&p, b, 0, base, far, sizeof far);
    hb_label(&p, b, 0, base + 1, next, sizeof next);
    struct sim s;
    sim_init(&s, &tuner_hyperband, "{\"R\": 9}", space, 5, 1);
    s.labels = xcalloc(64, sizeof *s.labels);
    s.cap = 64;
    hist_add(&s.h, 0, cJSON_Parse("{\"x\": 0.5, \"c\": \"a\", \"TRIAL_BUDGET\": 1}"), 1, 1, "SUCCEEDED");
    s.labels[0] = xstrdup(far);
    sim_relabel(&s);
    assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[1], next);
    sim_free(&s);
    /* bracket 2 (s = 0, counters 14 .. 16) ran and ended, brackets 0 and 1 never did */
    sim_init(&s, &tuner_hyperband, "{\"R\": 9}", space, 5, 1);
    s.labels = xcalloc(64, sizeof *s.labels);
    s.cap = 64;
    for (int i = 0; i < 3; i++) {
        hist_add(&s.h, i, cJSON_Parse("{\"x\": 0.5, \"c\": \"a\", \"TRIAL_BUDGET\": 9}"), 1, 1, "SUCCEEDED");
        s.labels[i] = xasprintf("0-0_0_%d", 14 + i);
    }
    sim_relabel(&s);
    assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[3], "0-2_0_0");
    sim_free(&s);
    ss_free(space);
}

static void test_determinism_and_restart(void **state)
{
    (void)state;
    struct ss_space *space = parse_space(SPACE);
    const char *args[] = {"{\"R\": 27, \"optimize_mode\": \"minimize\"}", "{\"R\": 9, \"exec_mode\": \"serial\"}"};
    for (int a = 0; a < 2; a++) {
        struct sim full;
        sim_init(&full, &tuner_hyperband, args[a], space, 42, 2);
        sim_run(&full, 80);
        /* the same run with a fresh tuner state every 7 trials (an api restart) */
        struct sim part;
        sim_init(&part, &tuner_hyperband, args[a], space, 42, 2);
        sim_run_restarting(&part, 80, args[a], space, 42, 7);
        for (int i = 0; i < 80; i++) {
            assert_string_equal(full.labels[i], part.labels[i]);
            char *x = cJSON_PrintUnformatted(full.h.params[i]), *y = cJSON_PrintUnformatted(part.h.params[i]);
            assert_string_equal(x, y);
            free(x);
            free(y);
        }
        /* the same (seed, index, history) twice gives the same answer */
        struct tuner_history th = {.n = 40, .items = full.h.items};
        cJSON *p1 = NULL, *p2 = NULL;
        struct errbuf e = {{0}};
        assert_int_equal(full.ops->suggest(full.t, 40, &th, &p1, &e), 1);
        assert_int_equal(full.ops->suggest(full.t, 40, &th, &p2, &e), 1);
        assert_true(cJSON_Compare(p1, p2, 1));
        cJSON_Delete(p1);
        cJSON_Delete(p2);
        /* another seed draws other configurations */
        struct sim other;
        sim_init(&other, &tuner_hyperband, args[a], space, 43, 2);
        sim_run(&other, 5);
        assert_false(cJSON_Compare(other.h.params[0], full.h.params[0], 1));
        sim_free(&other);
        sim_free(&full);
        sim_free(&part);
    }
    ss_free(space);
}

/* ---- BOHB ---- */

static void test_bohb_order(void **state)
{
    (void)state;
    struct ss_space *space = parse_space(SPACE);
    struct sim s;
    /* defaults: min 1, max 3, eta 3: bracket s=1 (3 at budget 1, 1 at 3), s=0 (2 at 3) */
    sim_init(&s, &tuner_bohb, NULL, space, 9, 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[0], "1_0_0");
    assert_string_equal(s.labels[2], "1_0_2");
    assert_int_equal(num(s.h.params[0], HB_BUDGET_KEY), 1);
    sim_end(&s, 0, "SUCCEEDED", 1, 1, 0.2);
    sim_end(&s, 1, "SUCCEEDED", 1, 1, 0.9);
    assert_int_equal(sim_issue(&s), 2);
    sim_end(&s, 2, "SUCCEEDED", 1, 1, 0.4);
    assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[3], "1_1_1"); /* maximize: 0.9 */
    assert_int_equal(num(s.h.params[3], HB_BUDGET_KEY), 3);
    /* strict: the next bracket waits for the last round to end */
    assert_int_equal(sim_issue(&s), 2);
    sim_end(&s, 3, "SUCCEEDED", 1, 1, 0.95);
    assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[4], "0_0_3");
    assert_int_equal(num(s.h.params[4], HB_BUDGET_KEY), 3);
    assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[5], "0_0_4");
    assert_int_equal(sim_issue(&s), 2);
    sim_end(&s, 4, "SUCCEEDED", 1, 1, 0.1);
    sim_end(&s, 5, "SUCCEEDED", 1, 1, 0.1);
    assert_int_equal(sim_issue(&s), 1);
    assert_string_equal(s.labels[6], "1_0_5"); /* the next iteration */
    sim_free(&s);
    ss_free(space);
}

static double obj_near(const cJSON *p)
{
    /* minimize: best at x = 0.2 and c = "b" */
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(p, "c");
    return fabs(num(p, "x") - 0.2) + (strcmp(c->valuestring, "b") == 0 ? 0 : 0.3);
}

static void test_bohb_model(void **state)
{
    (void)state;
    struct ss_space *space = parse_space(SPACE);
    /* max_budget = min_budget: every bracket is one configuration at budget 1 */
    const char *args = "{\"optimize_mode\": \"minimize\", \"min_budget\": 1, \"max_budget\": 1,"
                       " \"random_fraction\": 0}";
    struct sim s;
    sim_init(&s, &tuner_bohb, args, space, 21, 1);
    s.objective = obj_near;
    sim_run(&s, 40);
    struct tuner_history th = {.n = s.h.n, .items = s.h.items};
    double budget = 0;
    /* 2 dimensions: min_points_in_model = 3; the bad part needs 3 rows too: a model
     * from 6 results on */
    for (int b = 0; b <= 5; b++)
        assert_int_equal(bohb_model_state(s.t, &th, b, &budget), 0);
    assert_int_equal(bohb_model_state(s.t, &th, 6, &budget), 1);
    assert_true(budget == 1);
    /* brackets 0..5 are the Random tuner's draws for their counters */
    void *r = create(&tuner_random, NULL, space, 21);
    for (int i = 0; i < 6; i++) {
        cJSON *p = NULL;
        struct errbuf e = {{0}};
        assert_int_equal(tuner_random.suggest(r, i, NULL, &p, &e), 1);
        char *a = config_text(s.h.params[i]), *b = cJSON_PrintUnformatted(p);
        assert_string_equal(a, b);
        free(a);
        free(b);
        cJSON_Delete(p);
    }
    tuner_random.destroy(r);
    /* the model's choices are better than random ones */
    double first = 0, model = 0;
    for (int i = 0; i < 6; i++)
        first += s.h.items[i].value / 6;
    for (int i = 20; i < 40; i++)
        model += s.h.items[i].value / 20;
    if (!(model < first))
        fail_msg("model-based mean %g not below the random start's %g", model, first);
    sim_free(&s);

    /* min_points_in_model = 5: good part 5 rows, bad part 3: from 8 results on */
    sim_init(&s, &tuner_bohb, "{\"min_budget\": 1, \"max_budget\": 1, \"min_points_in_model\": 5}", space, 21, 1);
    sim_run(&s, 12);
    th = (struct tuner_history){.n = s.h.n, .items = s.h.items};
    assert_int_equal(bohb_model_state(s.t, &th, 7, &budget), 0);
    assert_int_equal(bohb_model_state(s.t, &th, 8, &budget), 1);
    sim_free(&s);

    /* results at a budget below a budget with a model are dropped; the model is the
     * largest budget's: default budgets 1 and 3 */
    sim_init(&s, &tuner_bohb, "{\"optimize_mode\": \"minimize\"}", space, 4, 1);
    s.objective = obj_near;
    sim_run(&s, 60);
    th = (struct tuner_history){.n = s.h.n, .items = s.h.items};
    int64_t last = 0, cc;
    int rr;
    struct hb_plan p;
    struct errbuf e = {{0}};
    assert_int_equal(hb_plan_init(&p, 3, 1, 3, 0, HB_STRICT, 0, &e), 0);
    assert_true(hb_parse(&p, s.labels[s.h.n - 1], &last, &rr, &cc));
    assert_int_equal(bohb_model_state(s.t, &th, last, &budget), 1);
    assert_true(budget == 3);
    sim_free(&s);
    ss_free(space);
}

static void test_bohb_determinism(void **state)
{
    (void)state;
    struct ss_space *space = parse_space(SPACE);
    const char *args = "{\"optimize_mode\": \"minimize\", \"max_budget\": 9}";
    struct sim full, part;
    sim_init(&full, &tuner_bohb, args, space, 8, 2);
    full.objective = obj_near;
    sim_run(&full, 70);
    sim_init(&part, &tuner_bohb, args, space, 8, 2);
    part.objective = obj_near;
    sim_run_restarting(&part, 70, args, space, 8, 9);
    for (int i = 0; i < 70; i++) {
        assert_string_equal(full.labels[i], part.labels[i]);
        assert_true(cJSON_Compare(full.h.params[i], part.h.params[i], 1));
    }
    struct hb_plan p;
    struct errbuf e = {{0}};
    assert_int_equal(hb_plan_init(&p, 9, 1, 3, 0, HB_STRICT, 0, &e), 0);
    check_promotions(&full, &p, 0);
    sim_free(&full);
    sim_free(&part);
    ss_free(space);
}

/* ---- classArgs and search spaces ---- */

static void test_class_args(void **state)
{
    (void)state;
    assert_ptr_equal(tuner_find("hyperband"), &tuner_hyperband);
    assert_ptr_equal(tuner_find("HYPERBAND"), &tuner_hyperband);
    assert_ptr_equal(tuner_find("bohb"), &tuner_bohb);
    assert_non_null(strstr(tuner_names(), "Hyperband"));
    assert_non_null(strstr(tuner_names(), "BOHB"));
    const struct tuner_ops *h = &tuner_hyperband, *b = &tuner_bohb;
    assert_err(h, "{\"R\": \"60\"}", NULL, "tuner.classArgs.R");
    assert_err(h, "{\"R\": 0}", NULL, "tuner.classArgs.R");
    assert_err(h, "{\"R\": 2.5}", NULL, "tuner.classArgs.R");
    assert_err(h, "{\"eta\": 1}", NULL, "tuner.classArgs.eta");
    assert_err(h, "{\"exec_mode\": \"fast\"}", NULL, "tuner.classArgs.exec_mode");
    assert_err(h, "{\"optimize_mode\": \"up\"}", NULL, "tuner.classArgs.optimize_mode");
    assert_err(h, "{\"r\": 60}", NULL, "tuner.classArgs.r: unknown argument for Hyperband");
    assert_err(h, "{\"seed\": -1}", NULL, "tuner.classArgs.seed");
    assert_err(h, NULL, "{\"TRIAL_BUDGET\": {\"_type\": \"choice\", \"_value\": [1]}}", "searchSpace.TRIAL_BUDGET");
    assert_err(b, "{\"min_budget\": 0}", NULL, "tuner.classArgs.min_budget");
    assert_err(b, "{\"min_budget\": 5, \"max_budget\": 3}", NULL, "tuner.classArgs.max_budget");
    assert_err(b, "{\"eta\": 1}", NULL, "tuner.classArgs.eta");
    assert_err(b, "{\"top_n_percent\": 100}", NULL, "tuner.classArgs.top_n_percent");
    assert_err(b, "{\"num_samples\": 0}", NULL, "tuner.classArgs.num_samples");
    assert_err(b, "{\"random_fraction\": 1.5}", NULL, "tuner.classArgs.random_fraction");
    assert_err(b, "{\"bandwidth_factor\": 0}", NULL, "tuner.classArgs.bandwidth_factor");
    assert_err(b, "{\"min_bandwidth\": -1}", NULL, "tuner.classArgs.min_bandwidth");
    assert_err(b, "{\"min_points_in_model\": \"x\"}", NULL, "tuner.classArgs.min_points_in_model");
    assert_err(b, "{\"config_space\": \"cs.pcs\"}", NULL, "tuner.classArgs.config_space");
    assert_err(b, "{\"R\": 3}", NULL, "tuner.classArgs.R: unknown argument for BOHB");
    assert_err(b, NULL, "{\"layer\": {\"_type\": \"choice\", \"_value\": [{\"_name\": \"a\"}, {\"_name\": \"b\","
                        " \"k\": {\"_type\": \"randint\", \"_value\": [1, 3]}}]}}", "searchSpace.layer");
    /* every accepted argument with a valid value */
    struct ss_space *s = parse_space(SPACE);
    void *t = create(h, "{\"optimize_mode\": \"minimize\", \"R\": 81, \"eta\": 3, \"exec_mode\": \"serial\","
                        " \"seed\": 5}", s, 1);
    h->destroy(t);
    t = create(b, "{\"optimize_mode\": \"minimize\", \"min_budget\": 1, \"max_budget\": 27, \"eta\": 3,"
                  " \"min_points_in_model\": null, \"top_n_percent\": 15, \"num_samples\": 64,"
                  " \"random_fraction\": 0.33, \"bandwidth_factor\": 3, \"min_bandwidth\": 0.001,"
                  " \"config_space\": null, \"seed\": 5}", s, 1);
    b->destroy(t);
    ss_free(s);
}

/* BOHB over every type it encodes: values stay valid once the model draws them. */
static void test_bohb_all_types(void **state)
{
    (void)state;
    struct ss_space *space = parse_space(
        "{\"a\": {\"_type\": \"uniform\", \"_value\": [-1, 1]},"
        " \"b\": {\"_type\": \"quniform\", \"_value\": [0, 10, 2]},"
        " \"c\": {\"_type\": \"loguniform\", \"_value\": [0.001, 1]},"
        " \"d\": {\"_type\": \"qloguniform\", \"_value\": [1, 100, 1]},"
        " \"e\": {\"_type\": \"randint\", \"_value\": [3, 7]},"
        " \"f\": {\"_type\": \"normal\", \"_value\": [0, 2]},"
        " \"g\": {\"_type\": \"qnormal\", \"_value\": [5, 1, 0.5]},"
        " \"h\": {\"_type\": \"lognormal\", \"_value\": [0, 1]},"
        " \"i\": {\"_type\": \"choice\", \"_value\": [1, \"two\", 3.5]}}");
    struct sim s;
    sim_init(&s, &tuner_bohb, "{\"min_budget\": 1, \"max_budget\": 1, \"random_fraction\": 0}", space, 3, 1);
    s.objective = obj_x;
    for (int i = 0; i < 40; i++) {
        assert_int_equal(sim_issue(&s), 1);
        const cJSON *p = s.h.params[i];
        double a = num(p, "a"), b = num(p, "b"), c = num(p, "c"), d = num(p, "d"), e = num(p, "e");
        assert_true(a >= -1 && a <= 1);
        assert_true(b >= 0 && b <= 10 && fmod(b, 2) == 0);
        assert_true(c >= 0.001 && c <= 1);
        assert_true(d >= 1 && d <= 100 && d == floor(d));
        assert_true(e >= 3 && e <= 6 && e == floor(e));
        assert_true(isfinite(num(p, "f")) && num(p, "h") > 0 && fmod(num(p, "g"), 0.5) == 0);
        assert_int_equal(choice_index(&space->params[8], cJSON_GetObjectItemCaseSensitive(p, "i")) >= 0, 1);
        sim_end(&s, i, "SUCCEEDED", 1, 1, -fabs(a - 0.5) - fabs(e - 5));
    }
    struct tuner_history th = {.n = s.h.n, .items = s.h.items};
    assert_int_equal(bohb_model_state(s.t, &th, 39, NULL), 1); /* 9 dimensions: from 20 results */
    sim_free(&s);
    ss_free(space);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_r60_eta3),
        cmocka_unit_test(test_plan_other_values),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_hyperband_brackets_maximize),
        cmocka_unit_test(test_hyperband_minimize_and_parallel),
        cmocka_unit_test(test_hyperband_serial),
        cmocka_unit_test(test_periodical_and_missing_results),
        cmocka_unit_test(test_odd_labels),
        cmocka_unit_test(test_determinism_and_restart),
        cmocka_unit_test(test_bohb_order),
        cmocka_unit_test(test_bohb_model),
        cmocka_unit_test(test_bohb_determinism),
        cmocka_unit_test(test_class_args),
        cmocka_unit_test(test_bohb_all_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
