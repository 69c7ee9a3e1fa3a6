/* erfinv.c: the inverse error function, which GridSearch needs to place points of
 * normal parameters at quantiles (mu + sigma*sqrt(2)*erfinv(2x-1), as NNI does with
 * scipy.special.erfinv). libm has erf and erfc but no inverse. */
#include "tuners/internal.h"

#include <math.h>

/* First guess in the centre: M. Giles, "Approximating the erfinv function" (GPU
 * Computing Gems, 2011), the w < 5 branch (|y| up to about 0.9966). */
static double giles_central(double a, double w)
{
    double p;
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    return p * a;
}

/* First guess in the tail, from erfc(x) ~ exp(-x^2) / (x sqrt(pi)). */
static double tail_guess(double t)
{
    double x = sqrt(-log(t));
    for (int i = 0; i < 3; i++)
        x = sqrt(-log(t) - log(x * 1.77245385090551602730));
    return x;
}

double ss_erfinv(double y)
{
    if (isnan(y) || y < -1.0 || y > 1.0)
        return NAN;
    if (y == 1.0)
        return INFINITY;
    if (y == -1.0)
        return -INFINITY;
    if (y == 0.0)
        return y;
    /* Work on |y| so that erfinv(-y) == -erfinv(y) exactly. t = 1 - a is exact for
     * a >= 0.5 (Sterbenz). */
    double a = fabs(y), t = 1.0 - a;
    double w = -log(t * (1.0 + a));
    double x = w < 5.0 ? giles_central(a, w) : tail_guess(t);
    const double two_over_sqrtpi = 1.12837916709551257390;
    if (a < 0.5) {
        /* Halley's method on erf(x) - a: with f'' = -2x f' the step is f/(f' + xf). */
        for (int i = 0; i < 8; i++) {
            double f = erf(x) - a;
            double step = f / (two_over_sqrtpi * exp(-x * x) + x * f);
            x -= step;
            if (fabs(step) <= 0x1p-54 * fabs(x))
                break;
        }
    } else {
        /* Newton's method on log(erfc(x) / t): erfc keeps its relative precision
         * where erf(x) - a would cancel, and its logarithm is close to a parabola,
         * so convergence is quick even from a rough guess. */
        for (int i = 0; i < 40; i++) {
            double e = erfc(x);
            double d = two_over_sqrtpi * exp(-x * x);
            if (e == 0.0 || d == 0.0)
                break;
            double step = log(e / t) * e / d;
            x += step;
            if (fabs(step) <= 0x1p-54 * fabs(x))
                break;
        }
    }
    return y < 0 ? -x : x;
}
