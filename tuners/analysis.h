/* analysis.h: the computations behind the web UI's analysis views (docs/webui.md,
 * "Slice, contour, distribution and early stopping"): each parameter's values over a
 * trial sample (the slice plot), the empirical distribution of the metric, and a
 * Nadaraya-Watson kernel average of the metric over two parameters on a grid (the
 * contour plot). Pure: trials in, numbers out; api/analysis.c reads the trials and
 * writes the JSON. */
#ifndef TRIALQ_ANALYSIS_H
#define TRIALQ_ANALYSIS_H

#include "tuners/importance.h"

/* One parameter over the trials in which it was active with a value that fits it: x[i]
 * is trial trial[i]'s value as the trial has it (a randint's integer, a numeric type's
 * number), or the option index of a choice. */
struct an_column {
    const struct ss_param *p; /* borrowed from the space: p->path names it */
    int n;
    double *x;
    int *trial;               /* index into the trials given */
};

/* The columns of every parameter of s, depth first in search-space order (a nested
 * choice, then the parameters of each of its branches, each over the trials that chose
 * that branch: importance's order before its ranking). Returns how many; *out is freed
 * with an_columns_free. */
int an_columns(const struct ss_space *s, const struct imp_trial *t, int n, struct an_column **out);
void an_columns_free(struct an_column *c, int n);
/* The column named path (a search-space key path, "layer[1].kernel"), or NULL. */
const struct an_column *an_column_find(const struct an_column *c, int n, const char *path);

/* The empirical distribution function of v[0 .. n) (which it sorts): the distinct values
 * ascending in x[0 .. k) and in f[k] the share of the n values <= x[k]; returns k. x
 * and f have room for n. */
int an_ecdf(double *v, int n, double *x, double *f);

/* The contour grid's default and largest sides (cells per axis). */
#define AN_GRID 30
#define AN_GRID_MAX 60
/* A cell farther than this many bandwidths from every trial is left blank. */
#define AN_REACH 2.0

/* The kernel's width along one axis of the unit square, from the m points' coordinates
 * u (Scott's rule for two dimensions: the standard deviation of u times m^(-1/6)),
 * floored at one cell (1 / grid) so that a few clustered trials still paint their cell. */
double an_bandwidth(const double *u, int m, int grid);

/* The Nadaraya-Watson average of z over the m points (u[k], v[k]) of the unit square
 * with the Gaussian kernel exp(-d^2 / 2), d^2 = ((u - u_k) / hu)^2 + ((v - v_k) / hv)^2,
 * at the centre ((i + 0.5) / grid, (j + 0.5) / grid) of each cell of a grid x grid
 * grid: out[j * grid + i] = sum_k K_k z_k / sum_k K_k, or NAN when no point has d < AN_REACH
 * there. Returns how many cells have a value. */
int an_contour(const double *u, const double *v, const double *z, int m, int grid, double hu, double hv, double *out);

#endif
