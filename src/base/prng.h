/* prng.h: the documented, platform-independent generator behind "random" matrices. */
#ifndef ATTNVIZ_PRNG_H
#define ATTNVIZ_PRNG_H

#include <stdint.h>

/*
 * The algorithm (lessons/FORMAT.md repeats it, tests/golden/make_reference.py
 * re-implements it):
 *   state = seed (uint64).  next(): state += 0x9E3779B97F4A7C15;
 *     z = state; z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
 *     z = (z ^ (z >> 27)) * 0x94D049BB133111EB; return z ^ (z >> 31)   (SplitMix64)
 *   uniform(): (next() >> 11) · 2^-53, in [0, 1)
 *   normal():  Marsaglia's polar method: repeat u = 2·uniform()−1, v = 2·uniform()−1,
 *              s = u² + v² until 0 < s < 1; f = sqrt(−2·ln(s)/s); return u·f, and
 *              v·f on the next call.
 * Matrices are filled row by row: low + (high−low)·uniform(), mean + std·normal().
 */
typedef struct Prng {
	uint64_t state;
	int has_spare;
	double spare;
} Prng;

void prng_seed(Prng *p, uint64_t seed);
uint64_t prng_next(Prng *p);
double prng_uniform(Prng *p);
double prng_normal(Prng *p);

#endif
