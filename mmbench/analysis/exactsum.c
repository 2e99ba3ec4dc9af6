/* Correctly rounded sums of float64 arrays, the result math.fsum gives for the same values.
 *
 * A comparison of 1 M-sample runs sums each series four ways (iteration means, the pooled mean,
 * the B-mean, the squared deviations); math.fsum needs a Python float per value (tolist, then
 * about 27 ns a value on our machines), this reads the array in place.  The method is Shewchuk's
 * (1997): keep the running total as a list of non-overlapping partial sums, each addition exact
 * by two-sum, then round the partials once, half to even.  Built as a shared library by
 * mmbench/cbuild, loaded with ctypes by exactsum.py; compiled with -ffp-contract=off so
 * that no multiply-add is fused (the squared deviation must round as Python's (v - m) * (v - m)).
 */
#include <math.h>
#include <stddef.h>

/* Non-overlapping partials each hold at least one of the 2098 bit positions a double can have
 * (2^-1074 .. 2^1023), so there are never more than that many; typical data need a handful. */
#define MAX_PARTIALS 2112

enum { SUM_OK = 0, SUM_NONFINITE = 1, SUM_OVERFLOW = 2 };

struct partials {
	double p[MAX_PARTIALS];
	int n;
};

static int add(struct partials *s, double x)
{
	int i = 0;
	for (int j = 0; j < s->n; j++) {
		double y = s->p[j];
		if (fabs(x) < fabs(y)) {
			double t = x;
			x = y;
			y = t;
		}
		double hi = x + y;
		double lo = y - (hi - x);
		if (lo != 0.0)
			s->p[i++] = lo;
		x = hi;
	}
	if (!isfinite(x))
		return SUM_OVERFLOW;   /* a partial overflowed: math.fsum raises OverflowError */
	if (x != 0.0)
		s->p[i++] = x;
	s->n = i;
	return SUM_OK;
}

/* The partials rounded to one double, ties to even over the exact value. */
static double rounded(const struct partials *s)
{
	int n = s->n;
	double hi = 0.0, lo = 0.0;
	if (n == 0)
		return 0.0;
	hi = s->p[--n];
	while (n > 0) {
		double x = hi, y = s->p[--n];
		hi = x + y;
		lo = y - (hi - x);
		if (lo != 0.0)
			break;
	}
	/* hi + lo is a tie only in appearance when the partial below lo has lo's sign: the exact
	 * value is then beyond the halfway point, so round away from hi */
	if (n > 0 && ((lo < 0.0 && s->p[n - 1] < 0.0) || (lo > 0.0 && s->p[n - 1] > 0.0))) {
		double y = lo * 2.0;
		double x = hi + y;
		if (y == x - hi)
			hi = x;
	}
	return hi;
}

/* sum(x[0..n)) into *out. */
int mmbench_fsum(const double *x, size_t n, double *out)
{
	struct partials s = { .n = 0 };
	for (size_t k = 0; k < n; k++) {
		if (!isfinite(x[k]))
			return SUM_NONFINITE;
		if (add(&s, x[k]) != SUM_OK)
			return SUM_OVERFLOW;
	}
	*out = rounded(&s);
	return SUM_OK;
}

/* sum((x[k] - m) * (x[k] - m)) into *out, each square rounded as Python rounds it. */
int mmbench_fsum_sqdev(const double *x, size_t n, double m, double *out)
{
	struct partials s = { .n = 0 };
	for (size_t k = 0; k < n; k++) {
		double d = x[k] - m;
		double sq = d * d;
		if (!isfinite(sq))
			return isfinite(x[k]) ? SUM_OVERFLOW : SUM_NONFINITE;
		if (add(&s, sq) != SUM_OK)
			return SUM_OVERFLOW;
	}
	*out = rounded(&s);
	return SUM_OK;
}
