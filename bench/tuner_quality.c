/* tuner_quality: search quality of the built-in tuners on the functions of
 * bench/functions.json, at several budgets and trial concurrencies, beside Random and
 * (with --anchor) Optuna 3.1's TPE run by bench/optuna_quality.py the same way.
 *
 * A run drives the tuner through its own interface as the api does with
 * trialConcurrency C when every trial takes as long: suggest C trials (indexes n ..
 * n+C-1, each seeing the earlier ones of its batch as RUNNING), then report them all
 * SUCCEEDED with their value as the FINAL metric, in trial order; repeat up to the
 * largest budget. A run's first k trials do not depend on the budget, so one run gives
 * every budget's figures: best (the lowest value within the budget) and last100 (the
 * median value of the budget's last 100 trials; prev100: of the 100 before them). The
 * table gives their medians over the seeds (0 .. N-1, or A .. B; best also its 25th
 * and 75th percentiles; numpy.percentile's interpolation), Random's beside each row.
 *
 *   usage: tuner_quality FUNCTIONS_JSON [--seeds N|A-B] [--budgets 100,300,1000] [--conc 1,8,32]
 *                        [--tuners Random,TPE,Anneal,Evolution,GP,Metis,BOHB] [--only NAME,...]
 *                        [--tpe-args JSON] [--evolution-args JSON] [--anchor FILE] [--check]
 *          tuner_quality --trace TUNER --space SPACE_JSON_FILE --objective NAME --seed S --budget N
 *                        [--args CLASSARGS_JSON]
 * --check (the ctest version) fails when TPE's best or last100 is behind Random's in a
 * row. --anchor reads `optuna_quality.py table` output. --trace prints one sequential
 * run trial by trial ("index<TAB>value<TAB>parameters"), so that
 * tests/e2e/41-bench-equals-experiment.sh can check that a real experiment with
 * trialConcurrency 1 and the same seed runs exactly these trials. --tpe-args gives
 * TPE's classArgs (default none: trialq's defaults). --evolution-args gives
 * Evolution's (default {"optimize_mode": "minimize"}). Anneal runs with NNI's
 * defaults, whose mode is minimize. GP, Metis, BOHB and RegularizedEvolutionTuner run
 * with NNI's defaults except {"optimize_mode": "minimize"} (their default is maximize);
 * BOHB's trials report the function's value whatever their TRIAL_BUDGET (the functions
 * have no fidelity), so its rows measure its model and its brackets' order only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/objectives.h"
#include "bench/stats.h"
#include "common/json.h"
#include "tuners/tuner.h"

static double eval_params(const struct objective *obj, const cJSON *params)
{
    double x[16];
    for (int i = 0; i < obj->dim; i++) {
        char key[16];
        snprintf(key, sizeof key, "x%d", i + 1);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
        x[i] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    }
    return obj->f(x);
}

/* The api stores a suggestion as JSON text and the history holds what it reads back;
 * the same path here (json_print_exact makes it the identity). */
static void roundtrip(cJSON **params)
{
    char *text = json_print_exact(*params);
    cJSON_Delete(*params);
    *params = cJSON_Parse(text);
    free(text);
}

/* A function over a mixed space (the trace test's second case; the trial script
 * tests/e2e/trials/mixed5.py computes the same, operation by operation):
 *   x1 uniform[-5, 10], x2 uniform[0, 15]: branin;  lr loguniform[1e-4, 0.1]: (log10(lr) + 2.5)^2;
 *   k randint[1, 8]: 0.3 (k - 5)^2;  act choice[relu, tanh, sigmoid, gelu]: 0, 0.5, 1, 0.2 */
static double eval_mixed5(const cJSON *p)
{
    double x[2] = {cJSON_GetObjectItemCaseSensitive(p, "x1")->valuedouble,
                   cJSON_GetObjectItemCaseSensitive(p, "x2")->valuedouble};
    double lr = cJSON_GetObjectItemCaseSensitive(p, "lr")->valuedouble;
    double k = cJSON_GetObjectItemCaseSensitive(p, "k")->valuedouble;
    const char *act = cJSON_GetObjectItemCaseSensitive(p, "act")->valuestring;
    double pen = strcmp(act, "tanh") == 0 ? 0.5 : strcmp(act, "sigmoid") == 0 ? 1.0 : strcmp(act, "gelu") == 0 ? 0.2 : 0.0;
    double l = log10(lr) + 2.5;
    return obj_branin(x) + l * l + 0.3 * (k - 5) * (k - 5) + pen;
}

/* ---- the functions of mixed_benchmarks (bench/optuna_quality.py has the same) ---- */

static double num(const cJSON *p, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *p, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* A model with a nested optimizer choice (functions.json says the formula). */
static double eval_nested6(const cJSON *p)
{
    const cJSON *opt = cJSON_GetObjectItemCaseSensitive(p, "opt");
    const char *name = str(opt, "_name");
    double l = log10(num(opt, "lr")), v;
    if (strcmp(name, "sgd") == 0)
        v = (l + 1.5) * (l + 1.5) + 4 * (num(opt, "momentum") - 0.9) * (num(opt, "momentum") - 0.9);
    else if (strcmp(name, "adam") == 0)
        v = 0.05 + (l + 3.2) * (l + 3.2) + 2 * (num(opt, "beta1") - 0.9) * (num(opt, "beta1") - 0.9);
    else
        v = 0.3 + (l + 2.8) * (l + 2.8);
    const char *act = str(p, "act");
    double layers = num(p, "layers"), dropout = num(p, "dropout");
    return v + 0.1 * (layers - 4) * (layers - 4) + 0.2 * fabs(log2(num(p, "width") / 64)) +
           2 * (dropout - 0.25) * (dropout - 0.25) + (strcmp(act, "tanh") == 0 ? 0.3 : strcmp(act, "gelu") == 0 ? 0.1 : 0);
}

/* Issue 33's 4-parameter experiment at its last epoch, as a loss. */
static double eval_drift4(const cJSON *p)
{
    double m = 0.9 - 0.15 * fabs(log10(num(p, "lr")) + 2.5) - 0.1 * fabs(num(p, "momentum") - 0.9) +
               0.02 * log2(num(p, "hidden") / 64);
    return 1 - (1 - exp(-10.0 / 3)) * m;
}

static const struct mixed_fn {
    const char *name;
    double (*f)(const cJSON *params);
} mixed_fns[] = {{"mixed5", eval_mixed5}, {"nested6", eval_nested6}, {"drift4", eval_drift4}};

static const struct mixed_fn *mixed_find(const char *name)
{
    for (size_t i = 0; i < sizeof mixed_fns / sizeof mixed_fns[0]; i++)
        if (strcmp(mixed_fns[i].name, name) == 0)
            return &mixed_fns[i];
    return NULL;
}

static int trace(int argc, char **argv)
{
    const char *tuner = NULL, *space_path = NULL, *objective = NULL, *args_text = NULL;
    long long seed = -1;
    int budget = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--trace") == 0)
            tuner = argv[i + 1];
        else if (strcmp(argv[i], "--space") == 0)
            space_path = argv[i + 1];
        else if (strcmp(argv[i], "--objective") == 0)
            objective = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0)
            seed = atoll(argv[i + 1]);
        else if (strcmp(argv[i], "--budget") == 0)
            budget = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--args") == 0)
            args_text = argv[i + 1];
        else
            return fprintf(stderr, "--trace: unknown option %s\n", argv[i]), 2;
    }
    const struct tuner_ops *ops = tuner ? tuner_find(tuner) : NULL;
    const struct objective *obj = objective ? objective_find(objective) : NULL;
    const struct mixed_fn *mixed = objective ? mixed_find(objective) : NULL;
    if (!ops || !space_path || (!obj && !mixed) || seed < 0 || budget <= 0) {
        fprintf(stderr, "--trace needs a known TUNER, --space FILE, --objective NAME (of functions.json), --seed S, "
                        "--budget N\n");
        return 2;
    }
    char *text = read_file(space_path, NULL);
    cJSON *sj = text ? cJSON_Parse(text) : NULL;
    cJSON *args = args_text ? cJSON_Parse(args_text) : NULL;
    struct ss_space *space;
    struct errbuf e;
    if (!sj || (args_text && !args) || ss_parse(sj, &space, NULL, 0, &e) < 0) {
        fprintf(stderr, "%s or --args: cannot read, or not a valid search space\n", space_path);
        return 1;
    }
    struct tuner_result *items = xcalloc((size_t)budget, sizeof *items);
    cJSON **params = xcalloc((size_t)budget, sizeof *params);
    void *state = NULL;
    if (ops->create(args, space, (uint64_t)seed, &state, &e) < 0) {
        fprintf(stderr, "%s: %s\n", ops->name, e.msg);
        return 1;
    }
    int n = 0;
    for (; n < budget; n++) {
        struct tuner_history hist = {.n = n, .items = items};
        int rc = ops->suggest(state, n, &hist, &params[n], &e);
        if (rc < 0) {
            fprintf(stderr, "%s: %s\n", ops->name, e.msg);
            return 1;
        }
        if (rc != 1)
            break;
        roundtrip(&params[n]);
        double v = mixed ? mixed->f(params[n]) : eval_params(obj, params[n]);
        items[n] = (struct tuner_result){.parameter_id = n, .parameters = params[n], .has_value = 1, .value = v,
                                         .status = "SUCCEEDED"};
        char vbuf[40];
        json_format_double(v, vbuf, sizeof vbuf);
        char *ptext = json_print_exact(params[n]);
        printf("%d\t%s\t%s\n", n, vbuf, ptext);
        free(ptext);
    }
    ops->destroy(state);
    for (int i = 0; i < n; i++)
        cJSON_Delete(params[i]);
    free(params);
    free(items);
    ss_free(space);
    cJSON_Delete(sj);
    cJSON_Delete(args);
    free(text);
    return 0;
}

/* One benchmark: a numeric function of x1 .. x<dim>, or a mixed one. */
struct bench_fn {
    const char *name;
    const struct objective *obj;
    const struct mixed_fn *mixed;
};

static double bench_eval(const struct bench_fn *b, const cJSON *params)
{
    return b->obj ? eval_params(b->obj, params) : b->mixed->f(params);
}

/* Checks the C formula against the file's exact check points. */
static int check_points(const struct bench_fn *b, const cJSON *bench)
{
    const cJSON *cp;
    int bad = 0;
    cJSON_ArrayForEach(cp, cJSON_GetObjectItemCaseSensitive(bench, "check_points")) {
        double f = bench_eval(b, cJSON_GetObjectItemCaseSensitive(cp, "x"));
        double want = cJSON_GetObjectItemCaseSensitive(cp, "f")->valuedouble;
        if (!(fabs(f - want) <= 1e-9 * fmax(1, fabs(want)) + 1e-9)) {
            fprintf(stderr, "%s: f = %.12g at a check point, functions.json says %.12g\n", b->name, f, want);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

/* One run of `n_max` trials, `conc` at a time, as the api drives a tuner with
 * trialConcurrency conc when every trial takes as long: the tuner is asked for up to
 * conc suggestions (each sees the earlier ones of the batch as RUNNING), then all of
 * them report their value, in trial order. values[i] receives trial i's value.
 * Returns the number of trials run (fewer than n_max when the tuner ran out). */
static int run_one(const struct tuner_ops *ops, const cJSON *class_args, const struct ss_space *space,
                   uint64_t seed, const struct bench_fn *b, int n_max, int conc, double *values)
{
    struct tuner_result *items = xcalloc((size_t)n_max, sizeof *items);
    cJSON **params = xcalloc((size_t)n_max, sizeof *params);
    struct errbuf e = {{0}};
    void *state = NULL;
    if (ops->create(class_args, space, seed, &state, &e) < 0) {
        fprintf(stderr, "%s: %s\n", ops->name, e.msg);
        exit(1);
    }
    int n = 0, done = 0;
    while (n < n_max) {
        int start = n, out = 0;
        while (n < n_max && n - start < conc) {
            struct tuner_history hist = {.n = n, .items = items};
            int rc = ops->suggest(state, n, &hist, &params[n], &e);
            if (rc < 0) {
                fprintf(stderr, "%s: %s\n", ops->name, e.msg);
                exit(1);
            }
            if (rc != 1) {  /* 0: no more; 2: none until results come */
                out = rc == 0 || n == start;
                break;
            }
            roundtrip(&params[n]);
            /* an advisor's brackets (BOHB) find their trials by the label, as the api keeps it */
            items[n] = (struct tuner_result){.parameter_id = n, .parameters = params[n], .status = "RUNNING",
                                             .label = ops->label ? ops->label(state, n) : NULL};
            n++;
        }
        for (int i = start; i < n; i++) {
            values[i] = bench_eval(b, params[i]);
            items[i].has_value = items[i].has_latest = 1;
            items[i].value = items[i].latest = values[i];
            items[i].status = "SUCCEEDED";
        }
        done = n;
        if (out)
            break;
    }
    ops->destroy(state);
    for (int i = 0; i < done; i++) {
        cJSON_Delete(params[i]);
        free((char *)items[i].label);
    }
    free(params);
    free(items);
    return done;
}

/* The median of v[lo .. hi) (copied, sorted). */
static double median_of(const double *v, int lo, int hi)
{
    int n = hi - lo;
    double *t = xmalloc(sizeof *t * (size_t)(n ? n : 1));
    memcpy(t, v + lo, sizeof *t * (size_t)n);
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double m = n ? percentile(t, n, 50) : NAN;
    free(t);
    return m;
}

/* The figures of one (tuner, function, concurrency) over the seeds, per budget. */
struct figures {
    double best[3], last[3], prev[3];  /* medians over the seeds */
    double best_lo[3], best_hi[3];     /* 25th, 75th percentile of best */
    int ran_out;
};

static void figures_at(double *const *runs, const int *ran, int seeds, int budget, struct figures *f, int k)
{
    double *best = xmalloc(sizeof *best * (size_t)seeds), *last = xmalloc(sizeof *last * (size_t)seeds),
           *prev = xmalloc(sizeof *prev * (size_t)seeds);
    int lw = budget < 100 ? budget : 100;
    for (int s = 0; s < seeds; s++) {
        int n = ran[s] < budget ? ran[s] : budget;
        best[s] = INFINITY;
        for (int i = 0; i < n; i++)
            best[s] = runs[s][i] < best[s] ? runs[s][i] : best[s];
        last[s] = median_of(runs[s], n - lw > 0 ? n - lw : 0, n);
        prev[s] = n >= 2 * lw ? median_of(runs[s], n - 2 * lw, n - lw) : NAN;
        f->ran_out |= n < budget;
    }
    qsort(best, (size_t)seeds, sizeof *best, cmp_double);
    qsort(last, (size_t)seeds, sizeof *last, cmp_double);
    qsort(prev, (size_t)seeds, sizeof *prev, cmp_double);
    f->best[k] = percentile(best, seeds, 50);
    f->last[k] = percentile(last, seeds, 50);
    f->prev[k] = isnan(prev[0]) ? NAN : percentile(prev, seeds, 50);
    f->best_lo[k] = percentile(best, seeds, 25);
    f->best_hi[k] = percentile(best, seeds, 75);
    free(best);
    free(last);
    free(prev);
}

/* Optuna's figures from bench/optuna_quality.py's output (--anchor): lines
 * "function budget concurrency sampler best last100" with sampler tpe or tpe-mv. */
struct anchor {
    char function[32], sampler[16];
    int budget, conc;
    double best, last;
};

static struct anchor *anchors;
static int n_anchors;

static void anchors_load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "--anchor %s: cannot open\n", path);
        exit(2);
    }
    char line[256];
    while (fgets(line, sizeof line, f)) {
        struct anchor a;
        if (sscanf(line, "%31s %d %d %15s %lf %lf", a.function, &a.budget, &a.conc, a.sampler, &a.best, &a.last) != 6)
            continue;
        anchors = xrealloc(anchors, sizeof *anchors * (size_t)(n_anchors + 1));
        anchors[n_anchors++] = a;
    }
    fclose(f);
}

static void anchor_text(const char *function, int budget, int conc, const char *sampler, char *out, size_t cap)
{
    snprintf(out, cap, "%s", "-");
    for (int i = 0; i < n_anchors; i++)
        if (strcmp(anchors[i].function, function) == 0 && anchors[i].budget == budget && anchors[i].conc == conc &&
            strcmp(anchors[i].sampler, sampler) == 0)
            snprintf(out, cap, "%.4g / %.4g", anchors[i].best, anchors[i].last);
}

static int parse_list(const char *text, int *out, int cap, const char *what)
{
    int n = 0;
    char *list = xstrdup(text), *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int v = atoi(t);
        if (v <= 0 || n == cap) {
            fprintf(stderr, "%s: a list of at most %d positive integers\n", what, cap);
            exit(2);
        }
        out[n++] = v;
    }
    free(list);
    if (n == 0) {
        fprintf(stderr, "%s: empty\n", what);
        exit(2);
    }
    return n;
}

static void usage(void)
{
    fprintf(stderr, "usage: tuner_quality FUNCTIONS_JSON [--seeds N|A-B] [--budgets 100,300,1000] [--conc 1,8,32]\n"
                    "         [--tuners Random,TPE,Anneal,Evolution,GP,Metis,BOHB] [--only NAME[,NAME...]]\n"
                    "         [--tpe-args JSON] [--evolution-args JSON] [--anchor OPTUNA_TSV] [--check]\n");
    exit(2);
}

/* The classArgs a tuner runs with: TPE --tpe-args (default none: trialq's defaults),
 * Evolution --evolution-args, GP, Metis and RegularizedEvolutionTuner minimize (their
 * default mode is maximize), the others none (their default mode is minimize). */
static const cJSON *args_for(const char *tuner, const cJSON *tpe, const cJSON *evo, const cJSON *minimize)
{
    if (strcmp(tuner, "TPE") == 0)
        return tpe;
    if (strcmp(tuner, "Evolution") == 0)
        return evo;
    if (strcmp(tuner, "GP") == 0 || strcmp(tuner, "Metis") == 0 || strcmp(tuner, "RegularizedEvolutionTuner") == 0 ||
        strcmp(tuner, "BOHB") == 0)
        return minimize;
    return NULL;
}

/* A tuner that cannot take a function's space (BOHB and nested choices) gets a line
 * saying so instead of its rows. */
static int refuses(const struct tuner_ops *ops, const cJSON *class_args, const struct ss_space *space,
                   const char *function)
{
    struct errbuf e = {{0}};
    void *state = NULL;
    if (ops->create(class_args, space, 0, &state, &e) == 0) {
        ops->destroy(state);
        return 0;
    }
    printf("%-12s %s refuses the space: %s\n", function, ops->name, e.msg);
    return 1;
}

static int listed(const char *list, const char *name)
{
    if (!list)
        return 1;
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *tuners = "Random,TPE,Anneal,Evolution,GP,Metis", *only = NULL;
    const char *tpe_args_text = NULL, *budgets_text = "100,300,1000", *conc_text = "1,8,32";
    const char *evo_args_text = "{\"optimize_mode\": \"minimize\"}";
    int seeds = -1, first_seed = 0, check = 0;
    if (argc > 1 && strcmp(argv[1], "--trace") == 0)
        return trace(argc, argv);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) {
            /* N: seeds 0 .. N-1; A-B: seeds A .. B (optuna_quality.py's form) */
            const char *v = argv[++i];
            int a, b, k = 0;
            if (sscanf(v, "%d-%d%n", &a, &b, &k) == 2 && v[k] == 0 && a >= 0 && b >= a) {
                first_seed = a;
                seeds = b - a + 1;
            } else if (sscanf(v, "%d%n", &a, &k) == 1 && v[k] == 0 && a > 0) {
                seeds = a;
            } else {
                fprintf(stderr, "--seeds: N or A-B (0 <= A <= B), got \"%s\"\n", v);
                return 2;
            }
        }
        else if (strcmp(argv[i], "--budgets") == 0 && i + 1 < argc)
            budgets_text = argv[++i];
        else if (strcmp(argv[i], "--conc") == 0 && i + 1 < argc)
            conc_text = argv[++i];
        else if (strcmp(argv[i], "--tuners") == 0 && i + 1 < argc)
            tuners = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--tpe-args") == 0 && i + 1 < argc)
            tpe_args_text = argv[++i];
        else if (strcmp(argv[i], "--evolution-args") == 0 && i + 1 < argc)
            evo_args_text = argv[++i];
        else if (strcmp(argv[i], "--anchor") == 0 && i + 1 < argc)
            anchors_load(argv[++i]);
        else if (strcmp(argv[i], "--check") == 0)
            check = 1;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            usage();
    }
    if (!path)
        usage();
    int budgets[3], concs[8];
    int n_budgets = parse_list(budgets_text, budgets, 3, "--budgets");
    int n_concs = parse_list(conc_text, concs, 8, "--conc");
    for (int b = 1; b < n_budgets; b++)
        if (budgets[b] <= budgets[b - 1]) {
            fprintf(stderr, "--budgets: increasing, please\n");
            return 2;
        }
    int max_budget = budgets[n_budgets - 1];
    size_t len;
    char *text = read_file(path, &len);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    if (!root) {
        fprintf(stderr, "%s: cannot read or parse\n", path);
        return 1;
    }
    if (seeds <= 0)
        seeds = cJSON_GetObjectItemCaseSensitive(root, "seeds")->valueint;
    cJSON *tpe_args = tpe_args_text ? cJSON_Parse(tpe_args_text) : NULL;
    cJSON *evo_args = cJSON_Parse(evo_args_text);
    cJSON *minimize = cJSON_Parse("{\"optimize_mode\": \"minimize\"}");
    if ((tpe_args_text && !tpe_args) || !evo_args) {
        fprintf(stderr, "--tpe-args or --evolution-args: not valid JSON\n");
        return 2;
    }
    printf("# %d seeds (%d-%d); best: median [25th, 75th] of the best value within the budget; last100: median of\n"
           "# the per-run medians of the last 100 trials (prev100: of the 100 before them); Optuna: best / last100\n",
           seeds, first_seed, first_seed + seeds - 1);
    printf("%-12s %6s %4s  %-10s %-30s %10s %10s  %-19s %-19s %-19s\n", "function", "budget", "conc", "tuner",
           "best median [25th, 75th]", "last100", "prev100", "Random best/last100", "Optuna TPE", "Optuna TPE mv");
    int failed = 0;
    static const char *const sections[] = {"benchmarks", "mixed_benchmarks"};
    double **runs = xcalloc((size_t)seeds, sizeof *runs);
    int *ran = xcalloc((size_t)seeds, sizeof *ran);
    for (int s = 0; s < seeds; s++)
        runs[s] = xcalloc((size_t)max_budget, sizeof **runs);
    for (int sec = 0; sec < 2; sec++) {
        const cJSON *bench;
        cJSON_ArrayForEach(bench, cJSON_GetObjectItemCaseSensitive(root, sections[sec])) {
            const char *name = cJSON_GetObjectItemCaseSensitive(bench, "name")->valuestring;
            if (!listed(only, name))
                continue;
            struct bench_fn bf = {name, sec == 0 ? objective_find(name) : NULL, sec == 1 ? mixed_find(name) : NULL};
            if (!bf.obj && !bf.mixed) {
                fprintf(stderr, "%s: no C formula for this function\n", name);
                failed = 1;
                continue;
            }
            if (check_points(&bf, bench) < 0) {
                failed = 1;
                continue;
            }
            struct ss_space *space;
            struct errbuf e;
            if (ss_parse(cJSON_GetObjectItemCaseSensitive(bench, "search_space"), &space, NULL, 0, &e) < 0) {
                fprintf(stderr, "%s: %s\n", name, e.msg);
                return 1;
            }
            for (int c = 0; c < n_concs; c++) {
                struct figures rnd = {0};
                char *list = xstrdup(tuners), *save = NULL;
                /* Random first: its figures go beside every other tuner's */
                const struct tuner_ops *random = tuner_find("Random");
                for (int s = 0; s < seeds; s++)
                    ran[s] = run_one(random, NULL, space, (uint64_t)(first_seed + s), &bf, max_budget, concs[c], runs[s]);
                for (int b = 0; b < n_budgets; b++)
                    figures_at(runs, ran, seeds, budgets[b], &rnd, b);
                for (char *tn = strtok_r(list, ",", &save); tn; tn = strtok_r(NULL, ",", &save)) {
                    const struct tuner_ops *ops = tuner_find(tn);
                    if (!ops) {
                        fprintf(stderr, "unknown tuner %s (known: %s)\n", tn, tuner_names());
                        return 2;
                    }
                    struct figures f = rnd;
                    if (ops != random && refuses(ops, args_for(ops->name, tpe_args, evo_args, minimize), space, name))
                        continue;
                    if (ops != random) {
                        memset(&f, 0, sizeof f);
                        for (int s = 0; s < seeds; s++)
                            ran[s] = run_one(ops, args_for(ops->name, tpe_args, evo_args, minimize), space,
                                             (uint64_t)(first_seed + s), &bf, max_budget, concs[c], runs[s]);
                        for (int b = 0; b < n_budgets; b++)
                            figures_at(runs, ran, seeds, budgets[b], &f, b);
                    }
                    for (int b = 0; b < n_budgets; b++) {
                        char mine[64], rtext[40], prev[16] = "-", o1[40], o2[40];
                        snprintf(mine, sizeof mine, "%.4g [%.4g, %.4g]%s", f.best[b], f.best_lo[b], f.best_hi[b],
                                 f.ran_out ? " (ran out)" : "");
                        if (!isnan(f.prev[b]))
                            snprintf(prev, sizeof prev, "%.4g", f.prev[b]);
                        snprintf(rtext, sizeof rtext, "%.4g / %.4g", rnd.best[b], rnd.last[b]);
                        anchor_text(name, budgets[b], concs[c], "tpe", o1, sizeof o1);
                        anchor_text(name, budgets[b], concs[c], "tpe-mv", o2, sizeof o2);
                        printf("%-12s %6d %4d  %-10s %-30s %10.4g %10s  %-19s %-19s %-19s\n", name, budgets[b],
                               concs[c], ops->name, mine, f.last[b], prev, rtext, o1, o2);
                        /* --check (the ctest version): TPE no worse than Random */
                        if (check && strcmp(ops->name, "TPE") == 0 &&
                            (f.best[b] > rnd.best[b] || f.last[b] > rnd.last[b])) {
                            fprintf(stderr, "%s, budget %d, concurrency %d: TPE behind Random\n", name, budgets[b],
                                    concs[c]);
                            failed = 1;
                        }
                    }
                    fflush(stdout);
                }
                free(list);
            }
            ss_free(space);
        }
    }
    for (int s = 0; s < seeds; s++)
        free(runs[s]);
    free(runs);
    free(ran);
    cJSON_Delete(tpe_args);
    cJSON_Delete(evo_args);
    cJSON_Delete(minimize);
    cJSON_Delete(root);
    free(text);
    return failed;
}
