/* tuner_latency: time per TPE (and GP) suggestion against the number of finished trials, in
 * a 5-parameter mixed space (x1
 * uniform[-5,5], x2 uniform[0,10], lr loguniform[1e-5,1e-1], n randint[1,17), cat
 * choice of 4), next to Optuna 3.1's figures.
 *
 * The history holds N SUCCEEDED trials (Random's suggestions with a smooth made-up
 * objective); each timed call is one suggest() exactly as the api makes it, which
 * rebuilds TPE's model from that history. The api's own cost of loading the history
 * from SQLite is not included (Optuna's in-memory figures do not include storage
 * either).
 *
 * GP is timed at 10, 100 and 1,000 trials only (its cost is O(n^3) in the results it
 * models, which gp.c caps at GP_MAX_OBS = 300); its default cold_start_num 10 means
 * the 10-trial point already fits the model.
 *
 * "TPE finite" is the same 5 parameters q-rounded (finite_space_json), where every
 * suggestion is also checked against the history for a repeat.
 *
 *   usage: tuner_latency [--reps N] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuners/tuner.h"

static const char space_json[] =
    "{\"x1\": {\"_type\": \"uniform\", \"_value\": [-5, 5]},"
    " \"x2\": {\"_type\": \"uniform\", \"_value\": [0, 10]},"
    " \"lr\": {\"_type\": \"loguniform\", \"_value\": [1e-5, 1e-1]},"
    " \"n\": {\"_type\": \"randint\", \"_value\": [1, 17]},"
    " \"cat\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", \"c\", \"d\"]}}";

/* The same parameters made finite (q-rounded), where TPE must also check that a
 * suggestion is not a repeat of a trial in the history (NNI's Deduplicator). */
static const char finite_space_json[] =
    "{\"x1\": {\"_type\": \"quniform\", \"_value\": [-5, 5, 0.01]},"
    " \"x2\": {\"_type\": \"quniform\", \"_value\": [0, 10, 0.01]},"
    " \"lr\": {\"_type\": \"qloguniform\", \"_value\": [1e-5, 1e-1, 1e-5]},"
    " \"n\": {\"_type\": \"randint\", \"_value\": [1, 17]},"
    " \"cat\": {\"_type\": \"choice\", \"_value\": [\"a\", \"b\", \"c\", \"d\"]}}";

static const struct {
    int trials;
    double optuna_ms;  /* Optuna 3.1's TPE in the same space; 0: not measured */
} points[] = {{10, 6.9}, {100, 10.7}, {500, 18.4}, {1000, 33.9}, {5000, 0}, {10000, 0}, {100000, 0}};

static double objective(const cJSON *p)
{
    double x1 = cJSON_GetObjectItemCaseSensitive(p, "x1")->valuedouble;
    double x2 = cJSON_GetObjectItemCaseSensitive(p, "x2")->valuedouble;
    double lr = cJSON_GetObjectItemCaseSensitive(p, "lr")->valuedouble;
    double n = cJSON_GetObjectItemCaseSensitive(p, "n")->valuedouble;
    const char *cat = cJSON_GetObjectItemCaseSensitive(p, "cat")->valuestring;
    return (x1 - 1) * (x1 - 1) + (x2 - 3) * (x2 - 3) / 4 + pow(log10(lr) + 3, 2) + fabs(n - 9) / 4 + (cat[0] - 'a') * 0.3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median milliseconds of `reps` suggestions (indexes n, n+1, ...) with history h. */
static double time_suggest(const struct tuner_ops *ops, void *state, const struct tuner_history *h, int reps)
{
    double *ms = xcalloc((size_t)reps, sizeof *ms);
    struct errbuf e;
    for (int i = 0; i < reps; i++) {
        cJSON *p = NULL;
        int64_t t0 = mono_us();
        if (ops->suggest(state, h->n + i, h, &p, &e) != 1) {
            fprintf(stderr, "%s: %s\n", ops->name, e.msg);
            exit(1);
        }
        ms[i] = (double)(mono_us() - t0) / 1000.0;
        cJSON_Delete(p);
    }
    qsort(ms, (size_t)reps, sizeof *ms, cmp_double);
    double median = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
    free(ms);
    return median;
}

/* A history of n SUCCEEDED trials: the Random tuner's suggestions in space. */
static struct tuner_result *random_history(const struct ss_space *space, int n, cJSON ***params)
{
    const struct tuner_ops *random = tuner_find("Random");
    struct errbuf e;
    void *rnd;
    if (random->create(NULL, space, 1, &rnd, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    struct tuner_result *items = xcalloc((size_t)n, sizeof *items);
    *params = xcalloc((size_t)n, sizeof **params);
    for (int i = 0; i < n; i++) {
        random->suggest(rnd, i, NULL, &(*params)[i], &e);
        items[i] = (struct tuner_result){.parameter_id = i, .parameters = (*params)[i], .has_value = 1,
                                         .value = objective((*params)[i]), .status = "SUCCEEDED",
                                         /* as the api's view of the trials sets it */
                                         .has_hash = 1, .params_hash = tuner_params_hash((*params)[i])};
    }
    random->destroy(rnd);
    return items;
}

static struct ss_space *parse_space(const char *text)
{
    cJSON *sj = cJSON_Parse(text);
    struct ss_space *space;
    struct errbuf e;
    if (ss_parse(sj, &space, NULL, 0, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        exit(1);
    }
    cJSON_Delete(sj);
    return space;
}

int main(int argc, char **argv)
{
    int reps = 50;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: tuner_latency [--reps N]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;
    struct ss_space *space = parse_space(space_json), *finite = parse_space(finite_space_json);
    struct errbuf e;
    int max_n = points[sizeof points / sizeof points[0] - 1].trials;
    cJSON **params, **fparams;
    struct tuner_result *items = random_history(space, max_n, &params);
    struct tuner_result *fitems = random_history(finite, max_n, &fparams);
    const struct tuner_ops *random = tuner_find("Random"), *tpe_ops = tuner_find("TPE"), *gp_ops = tuner_find("GP");
    void *rnd, *tpe, *ftpe, *gp;
    cJSON *gp_args = cJSON_Parse("{\"optimize_mode\": \"minimize\"}");
    if (random->create(NULL, space, 1, &rnd, &e) < 0 || tpe_ops->create(NULL, space, 1, &tpe, &e) < 0 ||
        tpe_ops->create(NULL, finite, 1, &ftpe, &e) < 0 || gp_ops->create(gp_args, space, 1, &gp, &e) < 0) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    printf("%-16s %12s %16s %12s %16s %12s\n", "finished trials", "TPE ms", "TPE finite ms", "Random ms",
           "Optuna TPE ms", "GP ms");
    for (size_t k = 0; k < sizeof points / sizeof points[0]; k++) {
        struct tuner_history h = {.n = points[k].trials, .items = items};
        struct tuner_history fh = {.n = points[k].trials, .items = fitems};
        double t = time_suggest(tpe_ops, tpe, &h, reps);
        double ft = time_suggest(tpe_ops, ftpe, &fh, reps);
        double r = time_suggest(random, rnd, &h, reps);
        char ref[32] = "-";
        if (points[k].optuna_ms > 0)
            snprintf(ref, sizeof ref, "%.1f", points[k].optuna_ms);
        char gp_ms[32] = "-";
        int n = points[k].trials;
        if (n == 10 || n == 100 || n == 1000)
            snprintf(gp_ms, sizeof gp_ms, "%.3f", time_suggest(gp_ops, gp, &h, reps < 10 ? reps : 10));
        printf("%-16d %12.3f %16.3f %12.3f %16s %12s\n", n, t, ft, r, ref, gp_ms);
    }
    printf("(below n_startup_jobs finished trials TPE draws at random, as NNI and Optuna do)\n");
    tpe_ops->destroy(tpe);
    tpe_ops->destroy(ftpe);
    gp_ops->destroy(gp);
    cJSON_Delete(gp_args);
    random->destroy(rnd);
    for (int i = 0; i < max_n; i++) {
        cJSON_Delete(params[i]);
        cJSON_Delete(fparams[i]);
    }
    free(params);
    free(fparams);
    free(items);
    free(fitems);
    ss_free(space);
    ss_free(finite);
    return 0;
}
