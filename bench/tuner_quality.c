/* tuner_quality: search quality of the built-in tuners on the benchmark functions of
 * bench/functions.json, next to Optuna 3.1's figures on the same functions (the table
 * below).
 *
 * Each run is sequential, exactly as the api drives a tuner with trialConcurrency 1:
 * suggest(index = 0, 1, 2, ...) with the history of every earlier trial, each
 * SUCCEEDED with its value as the FINAL metric. The score of a run is the best value
 * within the budget; the figures are the median [25th, 75th percentile] over the
 * seeds 0 .. seeds-1 (linear interpolation, numpy.percentile's default). A run's
 * first k trials do not depend on the budget, so one run to the largest budget gives
 * every budget's score.
 *
 *   usage: tuner_quality FUNCTIONS_JSON [--seeds N] [--tuners Random,TPE,Anneal,Evolution,GP,Metis,GridSearch]
 *                        [--only NAME] [--tpe-args JSON] [--evolution-args JSON]
 *          tuner_quality --trace TUNER --space SPACE_JSON_FILE --objective NAME --seed S --budget N
 *                        [--args CLASSARGS_JSON]
 * --trace prints one sequential run trial by trial ("index<TAB>value<TAB>parameters"),
 * so that tests/e2e/41-bench-equals-experiment.sh can check that a real experiment
 * with trialConcurrency 1 and the same seed runs exactly these trials. NAME is a
 * function of functions.json or "mixed5" (a mixed-type function, see eval_mixed5).
 * --tpe-args gives TPE's classArgs (default none: NNI's defaults). --evolution-args
 * gives Evolution's (default {"optimize_mode": "minimize"}: NNI requires the mode, and
 * the functions are minimized; population_size stays NNI's 32). Anneal runs with
 * NNI's defaults, whose mode is minimize. GP, Metis and RegularizedEvolutionTuner run
 * with NNI's defaults except {"optimize_mode": "minimize"} (their default is maximize). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/objectives.h"
#include "bench/stats.h"
#include "common/json.h"
#include "tuners/tuner.h"

/* Optuna 3.1's TPESampler and RandomSampler, 20 seeds each, same protocol */
static const struct optuna_figure {
    const char *function;
    int budget;
    double tpe[3], random[3];  /* median, 25th, 75th percentile */
} optuna[] = {
    {"branin", 100, {0.4100, 0.4041, 0.4292}, {0.7780, 0.5337, 1.134}},
    {"hartmann6", 100, {-3.068, -3.157, -2.979}, {-2.123, -2.390, -2.015}},
    {"hartmann6", 200, {-3.222, -3.268, -3.142}, {-2.258, -2.390, -2.025}},
    {"rosenbrock4", 100, {61.18, 36.76, 198.3}, {858.8, 705.4, 1804}},
};

static const struct optuna_figure *optuna_find(const char *function, int budget)
{
    for (size_t i = 0; i < sizeof optuna / sizeof optuna[0]; i++)
        if (strcmp(optuna[i].function, function) == 0 && optuna[i].budget == budget)
            return &optuna[i];
    return NULL;
}

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
    int mixed = objective && strcmp(objective, "mixed5") == 0;
    if (!ops || !space_path || (!obj && !mixed) || seed < 0 || budget <= 0) {
        fprintf(stderr, "--trace needs a known TUNER, --space FILE, --objective NAME|mixed5, --seed S, --budget N\n");
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
        double v = mixed ? eval_mixed5(params[n]) : eval_params(obj, params[n]);
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

/* Checks the C formula against the file's exact check points. */
static int check_points(const struct objective *obj, const cJSON *bench)
{
    const cJSON *cp;
    int bad = 0;
    cJSON_ArrayForEach(cp, cJSON_GetObjectItemCaseSensitive(bench, "check_points")) {
        double f = eval_params(obj, cJSON_GetObjectItemCaseSensitive(cp, "x"));
        double want = cJSON_GetObjectItemCaseSensitive(cp, "f")->valuedouble;
        if (!(fabs(f - want) <= 1e-9 * fmax(1, fabs(want)) + 1e-9)) {
            fprintf(stderr, "%s: f = %.12g at a check point, functions.json says %.12g\n", obj->name, f, want);
            bad = 1;
        }
    }
    return bad ? -1 : 0;
}

/* One sequential run; best[b] receives the best value within budgets[b]. Returns the
 * number of trials run (fewer than the largest budget when the tuner ran out). */
static int run_one(const struct tuner_ops *ops, const cJSON *class_args, const struct ss_space *space,
                   uint64_t seed, const struct objective *obj, const int *budgets, int n_budgets, double *best)
{
    int max_budget = budgets[n_budgets - 1];
    struct tuner_result *items = xcalloc((size_t)max_budget, sizeof *items);
    cJSON **params = xcalloc((size_t)max_budget, sizeof *params);
    struct errbuf e = {{0}};
    void *state = NULL;
    if (ops->create(class_args, space, seed, &state, &e) < 0) {
        fprintf(stderr, "%s: %s\n", ops->name, e.msg);
        exit(1);
    }
    double so_far = INFINITY;
    int n = 0, b = 0;
    for (; n < max_budget; n++) {
        struct tuner_history hist = {.n = n, .items = items};
        int rc = ops->suggest(state, n, &hist, &params[n], &e);
        if (rc < 0) {
            fprintf(stderr, "%s: %s\n", ops->name, e.msg);
            exit(1);
        }
        if (rc == 0)
            break;
        roundtrip(&params[n]);
        double v = eval_params(obj, params[n]);
        items[n] = (struct tuner_result){.parameter_id = n, .parameters = params[n], .has_value = 1, .value = v,
                                         .status = "SUCCEEDED"};
        so_far = v < so_far ? v : so_far;
        while (b < n_budgets && n + 1 == budgets[b])
            best[b++] = so_far;
    }
    while (b < n_budgets)
        best[b++] = so_far;
    ops->destroy(state);
    for (int i = 0; i < n; i++)
        cJSON_Delete(params[i]);
    free(params);
    free(items);
    return n;
}

static void usage(void)
{
    fprintf(stderr, "usage: tuner_quality FUNCTIONS_JSON [--seeds N] "
                    "[--tuners Random,TPE,Anneal,Evolution,GP,Metis,GridSearch] [--only NAME] [--tpe-args JSON] "
                    "[--evolution-args JSON]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *path = NULL, *tuners = "Random,TPE,Anneal,Evolution,GP,Metis,GridSearch", *only = NULL;
    const char *tpe_args_text = NULL;
    const char *evo_args_text = "{\"optimize_mode\": \"minimize\"}";
    int seeds = -1;
    if (argc > 1 && strcmp(argv[1], "--trace") == 0)
        return trace(argc, argv);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
            seeds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--tuners") == 0 && i + 1 < argc)
            tuners = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--tpe-args") == 0 && i + 1 < argc)
            tpe_args_text = argv[++i];
        else if (strcmp(argv[i], "--evolution-args") == 0 && i + 1 < argc)
            evo_args_text = argv[++i];
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            usage();
    }
    if (!path)
        usage();
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
    if (tpe_args_text && !tpe_args) {
        fprintf(stderr, "--tpe-args: not valid JSON\n");
        return 2;
    }
    cJSON *evo_args = cJSON_Parse(evo_args_text);
    cJSON *gp_args = cJSON_Parse("{\"optimize_mode\": \"minimize\"}");
    if (!evo_args) {
        fprintf(stderr, "--evolution-args: not valid JSON\n");
        return 2;
    }

    printf("%-12s %6s  %-10s  %-34s  %s\n", "function", "budget", "tuner", "median [25th, 75th] of best (trialq)",
           "Optuna 3.1 median [25th, 75th]");
    const cJSON *bench;
    int failed = 0;
    cJSON_ArrayForEach(bench, cJSON_GetObjectItemCaseSensitive(root, "benchmarks")) {
        const char *name = cJSON_GetObjectItemCaseSensitive(bench, "name")->valuestring;
        if (only && strcmp(only, name) != 0)
            continue;
        const struct objective *obj = objective_find(name);
        if (!obj) {
            fprintf(stderr, "%s: no C formula for this function\n", name);
            failed = 1;
            continue;
        }
        if (check_points(obj, bench) < 0) {
            failed = 1;
            continue;
        }
        struct ss_space *space;
        struct errbuf e;
        if (ss_parse(cJSON_GetObjectItemCaseSensitive(bench, "search_space"), &space, NULL, 0, &e) < 0) {
            fprintf(stderr, "%s: %s\n", name, e.msg);
            return 1;
        }
        int budgets[8], n_budgets = 0;
        const cJSON *bj;
        cJSON_ArrayForEach(bj, cJSON_GetObjectItemCaseSensitive(bench, "budgets"))
            if (n_budgets < 8)
                budgets[n_budgets++] = bj->valueint;
        double *scores = xcalloc((size_t)seeds * (size_t)n_budgets, sizeof *scores);
        char *list = xstrdup(tuners), *save = NULL;
        for (char *tn = strtok_r(list, ",", &save); tn; tn = strtok_r(NULL, ",", &save)) {
            const struct tuner_ops *ops = tuner_find(tn);
            if (!ops) {
                fprintf(stderr, "unknown tuner %s (known: %s)\n", tn, tuner_names());
                return 2;
            }
            int is_tpe = strcmp(ops->name, "TPE") == 0;
            const cJSON *args = is_tpe                                 ? tpe_args
                                : strcmp(ops->name, "Evolution") == 0 ? evo_args
                                : strcmp(ops->name, "GP") == 0 || strcmp(ops->name, "Metis") == 0 ||
                                          strcmp(ops->name, "RegularizedEvolutionTuner") == 0
                                      ? gp_args
                                                                      : NULL;
            int min_trials = budgets[n_budgets - 1];
            for (int s = 0; s < seeds; s++) {
                double best[8];
                int ran = run_one(ops, args, space, (uint64_t)s, obj, budgets, n_budgets, best);
                min_trials = ran < min_trials ? ran : min_trials;
                for (int b = 0; b < n_budgets; b++)
                    scores[(size_t)b * seeds + s] = best[b];
            }
            for (int b = 0; b < n_budgets; b++) {
                double *v = scores + (size_t)b * seeds;
                qsort(v, (size_t)seeds, sizeof *v, cmp_double);
                char mine[64], theirs[64] = "";
                snprintf(mine, sizeof mine, "%.4g [%.4g, %.4g]%s", percentile(v, seeds, 50), percentile(v, seeds, 25),
                         percentile(v, seeds, 75), min_trials < budgets[b] ? " (ran out)" : "");
                const struct optuna_figure *of = optuna_find(name, budgets[b]);
                const double *ref = !of ? NULL : is_tpe ? of->tpe : strcmp(ops->name, "Random") == 0 ? of->random : NULL;
                if (ref)
                    snprintf(theirs, sizeof theirs, "%.4g [%.4g, %.4g]", ref[0], ref[1], ref[2]);
                printf("%-12s %6d  %-10s  %-34s  %s%s\n", name, budgets[b], ops->name, mine, theirs,
                       strcmp(ops->name, "GridSearch") == 0 ? "(no seed: one run)" : "");
            }
        }
        free(list);
        free(scores);
        ss_free(space);
    }
    cJSON_Delete(tpe_args);
    cJSON_Delete(evo_args);
    cJSON_Delete(gp_args);
    cJSON_Delete(root);
    free(text);
    return failed;
}
