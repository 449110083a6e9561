/* prng.c: SplitMix64 and the polar method; see prng.h for the exact algorithm. */
#include "base/prng.h"

#include <math.h>

void prng_seed(Prng *p, uint64_t seed)
{
	p->state = seed;
	p->has_spare = 0;
	p->spare = 0.0;
}

uint64_t prng_next(Prng *p)
{
	uint64_t z = (p->state += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

double prng_uniform(Prng *p)
{
	return (double)(prng_next(p) >> 11) * 0x1.0p-53;
}

double prng_normal(Prng *p)
{
	double u, v, s, f;

	if (p->has_spare) {
		p->has_spare = 0;
		return p->spare;
	}
	do {
		u = 2.0 * prng_uniform(p) - 1.0;
		v = 2.0 * prng_uniform(p) - 1.0;
		s = u * u + v * v;
	} while (s >= 1.0 || s == 0.0);
	f = sqrt(-2.0 * log(s) / s);
	p->spare = v * f;
	p->has_spare = 1;
	return u * f;
}
