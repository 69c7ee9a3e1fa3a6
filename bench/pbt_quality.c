/* pbt_quality: PBT against Random and TPE on a function with a budget axis, at equal
 * compute.
 *
 * The "model" is a point on the 2-D Rosenbrock function trained by gradient descent
 * with momentum from (-1.5, 2); the hyperparameters are the learning rate (loguniform
 * [1e-5, 1e-2]) and the momentum (uniform [0, 0.99]). Too large a rate diverges, too
 * small a one crawls along the valley, so a schedule (large first, smaller later)
 * beats any fixed setting: what PBT is for. The loss of a run is f at its point (1e10
 * once it diverged).
 *
 * One full training is G * S steps. For a compute of P full trainings:
 *   Random, TPE: P trials, each training from scratch for G * S steps with its
 *     parameters (sequential, as tuner_quality runs them);
 *   PBT (population_size P, fraction 0.2, NNI's defaults otherwise): P * G trials of
 *     S steps, each starting from the checkpoint its load_checkpoint_dir names (kept
 *     in memory here) and leaving its own under save_checkpoint_dir.
 * The score of a run is the best loss of its trials (for PBT: of its last generation,
 * which has trained G * S steps). The figures are the median [25th, 75th percentile]
 * over the seeds 0 .. seeds-1.
 *
 *   usage: pbt_quality [--seeds N (20)] [--generations G (20)] [--steps S (50)] [--populations 10,20,40] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/stats.h"
#include "common/json.h"
#include "tuners/tuner.h"

struct model {
    double x[2], v[2];
};

static double loss(const struct model *m)
{
    double a = 1 - m->x[0], b = m->x[1] - m->x[0] * m->x[0];
    double f = a * a + 100 * b * b;
    return isfinite(f) && f < 1e10 ? f : 1e10;
}

static void train(struct model *m, double lr, double momentum, int steps)
{
    for (int i = 0; i < steps && loss(m) < 1e10; i++) {
        double b = m->x[1] - m->x[0] * m->x[0];
        double g0 = -2 * (1 - m->x[0]) - 400 * m->x[0] * b, g1 = 200 * b;
        m->v[0] = momentum * m->v[0] - lr * g0;
        m->v[1] = momentum * m->v[1] - lr * g1;
        m->x[0] += m->v[0];
        m->x[1] += m->v[1];
    }
}

static const struct model start = {{-1.5, 2}, {0, 0}};

static const char space_text[] = "{\"lr\": {\"_type\": \"loguniform\", \"_value\": [0.00001, 0.01]},"
                                 " \"momentum\": {\"_type\": \"uniform\", \"_value\": [0, 0.99]}}";

static double param(const cJSON *p, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(p, key)->valuedouble;
}

/* checkpoints by directory name, in memory */
struct store {
    char **dir;
    struct model *m;
    int n, cap;
};

static const struct model *store_get(const struct store *s, const char *dir)
{
    for (int i = s->n - 1; i >= 0; i--)
        if (strcmp(s->dir[i], dir) == 0)
            return &s->m[i];
    return NULL;
}

static void store_put(struct store *s, const char *dir, const struct model *m)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->dir = xrealloc(s->dir, sizeof *s->dir * (size_t)s->cap);
        s->m = xrealloc(s->m, sizeof *s->m * (size_t)s->cap);
    }
    s->dir[s->n] = xstrdup(dir);
    s->m[s->n++] = *m;
}

/* One run: n_trials trials of `steps` steps each; with checkpoints (PBT) a trial starts
 * from the checkpoint it is told to load. Returns the best loss of the trials from
 * index score_from on. */
static double run(const char *tuner, const char *args_text, const struct ss_space *space, uint64_t seed,
                  int n_trials, int steps, int score_from)
{
    const struct tuner_ops *ops = tuner_find(tuner);
    cJSON *args = cJSON_Parse(args_text);
    struct errbuf e = {{0}};
    void *state = NULL;
    if (!ops || ops->create(args, space, seed, &state, &e) < 0) {
        fprintf(stderr, "%s: %s\n", tuner, ops ? e.msg : "unknown tuner");
        exit(1);
    }
    struct tuner_result *items = xcalloc((size_t)n_trials, sizeof *items);
    cJSON **params = xcalloc((size_t)n_trials, sizeof *params);
    struct store ck = {0};
    double best = INFINITY;
    int n = 0;
    for (; n < n_trials; n++) {
        struct tuner_history hist = {.n = n, .items = items};
        int rc = ops->suggest(state, n, &hist, &params[n], &e);
        if (rc != 1) {
            fprintf(stderr, "%s: suggestion %d: %s\n", tuner, n, rc < 0 ? e.msg : "none");
            exit(1);
        }
        const cJSON *load = cJSON_GetObjectItemCaseSensitive(params[n], "load_checkpoint_dir");
        const cJSON *save = cJSON_GetObjectItemCaseSensitive(params[n], "save_checkpoint_dir");
        const struct model *from = cJSON_IsString(load) ? store_get(&ck, load->valuestring) : NULL;
        struct model m = from ? *from : start;
        train(&m, param(params[n], "lr"), param(params[n], "momentum"), steps);
        if (cJSON_IsString(save))
            store_put(&ck, save->valuestring, &m);
        double v = loss(&m);
        items[n] = (struct tuner_result){.parameter_id = n, .parameters = params[n], .has_value = 1, .value = v,
                                         .status = "SUCCEEDED"};
        if (n >= score_from && v < best)
            best = v;
    }
    ops->destroy(state);
    for (int i = 0; i < n; i++)
        cJSON_Delete(params[i]);
    for (int i = 0; i < ck.n; i++)
        free(ck.dir[i]);
    free(ck.dir);
    free(ck.m);
    free(params);
    free(items);
    cJSON_Delete(args);
    return best;
}

int main(int argc, char **argv)
{
    int seeds = 20, generations = 20, steps = 50;
    const char *pops = "10,20,40";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
            seeds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--generations") == 0 && i + 1 < argc)
            generations = atoi(argv[++i]);
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--populations") == 0 && i + 1 < argc)
            pops = argv[++i];
        else {
            fprintf(stderr, "usage: pbt_quality [--seeds N] [--generations G] [--steps S] [--populations 10,20,40]\n");
            return 2;
        }
    }
    if (seeds < 1 || generations < 1 || steps < 1) {
        fprintf(stderr, "--seeds, --generations and --steps must be at least 1\n");
        return 2;
    }
    cJSON *sj = cJSON_Parse(space_text);
    struct ss_space *space;
    struct errbuf e;
    if (ss_parse(sj, &space, NULL, 0, &e) < 0)
        return fprintf(stderr, "%s\n", e.msg), 1;
    printf("gradient descent with momentum on rosenbrock2 from (-1.5, 2), %d steps per full training;\n"
           "loss after training: median [25th, 75th] over %d seeds\n", generations * steps, seeds);
    printf("%-24s  %-6s  %s\n", "compute (full trainings)", "tuner", "best loss");
    double *v = xcalloc((size_t)seeds, sizeof *v);
    char *list = xstrdup(pops), *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int P = atoi(tok);
        if (P < 1)
            continue;
        char pbt_args[256];
        snprintf(pbt_args, sizeof pbt_args,
                 "{\"optimize_mode\": \"minimize\", \"population_size\": %d, \"all_checkpoint_dir\": \"/bench\"}", P);
        static const char *const names[] = {"Random", "TPE", "PBT"};
        for (int t = 0; t < 3; t++) {
            for (int s = 0; s < seeds; s++)
                v[s] = t == 2 ? run("PBT", pbt_args, space, (uint64_t)s, P * generations, steps, P * (generations - 1))
                              : run(names[t], "{\"optimize_mode\": \"minimize\"}", space, (uint64_t)s, P,
                                    generations * steps, 0);
            qsort(v, (size_t)seeds, sizeof *v, cmp_double);
            printf("%-24d  %-6s  %.4g [%.4g, %.4g]\n", P, names[t], percentile(v, seeds, 50), percentile(v, seeds, 25),
                   percentile(v, seeds, 75));
        }
    }
    free(list);
    free(v);
    ss_free(space);
    cJSON_Delete(sj);
    return 0;
}
