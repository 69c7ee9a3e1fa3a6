/* analysis.c: parameter columns, the ECDF and the kernel-averaged contour grid
 * (analysis.h). */
#include "tuners/analysis.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tuners/internal.h"

struct col_acc {
    int n, cap;
    struct an_column *c;
};

/* the columns of s over the trials whose parameter objects (in s) are obj[0 .. n), the
 * trial index of each in idx */
static void columns_of(const struct ss_space *s, const cJSON **obj, const int *idx, int n, struct col_acc *acc)
{
    const cJSON **val = xmalloc(sizeof *val * (size_t)(n ? n : 1)), **sub = xmalloc(sizeof *sub * (size_t)(n ? n : 1));
    int *sub_idx = xmalloc(sizeof *sub_idx * (size_t)(n ? n : 1));
    for (int j = 0; j < s->n; j++) {
        const struct ss_param *p = &s->params[j];
        struct an_column c = {p, 0, xmalloc(sizeof *c.x * (size_t)(n ? n : 1)),
                              xmalloc(sizeof *c.trial * (size_t)(n ? n : 1))};
        for (int i = 0; i < n; i++) {
            double x;
            const cJSON *v = cJSON_IsObject(obj[i]) ? cJSON_GetObjectItemCaseSensitive(obj[i], p->name) : NULL;
            if (!v || observed_value(p, v, &x) < 0 || (ss_type_is_log(p->type) && !(x > 0)))
                continue;
            val[c.n] = v;
            c.x[c.n] = p->type == SS_RANDINT ? x + p->a : x;
            c.trial[c.n++] = idx[i];
        }
        if (acc->n == acc->cap) {
            acc->cap = acc->cap ? 2 * acc->cap : 16;
            acc->c = xrealloc(acc->c, sizeof *acc->c * (size_t)acc->cap);
        }
        acc->c[acc->n++] = c;
        for (int k = 0; p->sub && k < p->n_choices; k++) {
            /* a branch's parameters over the trials that chose it */
            int m = 0;
            for (int i = 0; i < c.n; i++)
                if ((int)c.x[i] == k) {
                    sub[m] = val[i];
                    sub_idx[m++] = c.trial[i];
                }
            columns_of(p->sub[k], sub, sub_idx, m, acc);
        }
    }
    free(val);
    free(sub);
    free(sub_idx);
}

int an_columns(const struct ss_space *s, const struct imp_trial *t, int n, struct an_column **out)
{
    const cJSON **obj = xmalloc(sizeof *obj * (size_t)(n ? n : 1));
    int *idx = xmalloc(sizeof *idx * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        obj[i] = t[i].params;
        idx[i] = i;
    }
    struct col_acc acc = {0};
    columns_of(s, obj, idx, n, &acc);
    free(obj);
    free(idx);
    *out = acc.c;
    return acc.n;
}

void an_columns_free(struct an_column *c, int n)
{
    for (int i = 0; i < n; i++) {
        free(c[i].x);
        free(c[i].trial);
    }
    free(c);
}

const struct an_column *an_column_find(const struct an_column *c, int n, const char *path)
{
    for (int i = 0; path && i < n; i++)
        if (strcmp(c[i].p->path, path) == 0)
            return &c[i];
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int an_ecdf(double *v, int n, double *x, double *f)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (i + 1 < n && v[i + 1] == v[i])
            continue; /* the last of equal values carries their share */
        x[k] = v[i];
        f[k++] = (double)(i + 1) / n;
    }
    return k;
}

double an_bandwidth(const double *u, int m, int grid)
{
    double floor_h = 1.0 / (grid > 0 ? grid : AN_GRID);
    if (m < 2)
        return floor_h;
    double mean = 0, var = 0;
    for (int k = 0; k < m; k++)
        mean += u[k];
    mean /= m;
    for (int k = 0; k < m; k++)
        var += (u[k] - mean) * (u[k] - mean);
    double h = sqrt(var / (m - 1)) * pow(m, -1.0 / 6);
    return h > floor_h ? h : floor_h;
}

/* e[c * m + k] = exp(-((centre of cell c - w[k]) / h)^2 / 2): one axis's factor of the
 * kernel, which is the product of the two */
static double *axis_factors(const double *w, int m, int grid, double h)
{
    double *e = xmalloc(sizeof *e * (size_t)grid * (size_t)(m ? m : 1));
    for (int c = 0; c < grid; c++) {
        double centre = (c + 0.5) / grid;
        for (int k = 0; k < m; k++) {
            double d = (centre - w[k]) / h;
            e[(size_t)c * m + k] = exp(-0.5 * d * d);
        }
    }
    return e;
}

int an_contour(const double *u, const double *v, const double *z, int m, int grid, double hu, double hv, double *out)
{
    double *eu = axis_factors(u, m, grid, hu), *ev = axis_factors(v, m, grid, hv);
    /* d < AN_REACH for some point <=> its kernel > exp(-AN_REACH^2 / 2) */
    double reach = exp(-0.5 * AN_REACH * AN_REACH);
    int filled = 0;
    for (int j = 0; j < grid; j++)
        for (int i = 0; i < grid; i++) {
            const double *a = eu + (size_t)i * m, *b = ev + (size_t)j * m;
            double num = 0, den = 0, near = 0;
            for (int k = 0; k < m; k++) {
                double w = a[k] * b[k];
                num += w * z[k];
                den += w;
                near = w > near ? w : near;
            }
            int blank = !(near > reach) || !(den > 0);
            out[j * grid + i] = blank ? NAN : num / den;
            filled += !blank;
        }
    free(eu);
    free(ev);
    return filled;
}
