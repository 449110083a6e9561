/*
 * vexp.c: e^(x − shift) over a row, the exponentials of a softmax.
 *
 * A softmax is one exp per cell; at n = 1024 that was a fifth of a forward
 * pass, one call to glibc's exp at a time. Beside a fused kernel (gemm.c:
 * mat_kernel_fused, the default where the processor has FMA) the row goes
 * four at a time through glibc's own vector exp, libmvec's _ZGVdN4v_exp
 * (within 4 ulp of e^x by glibc's bound for its vector functions, at most 3
 * from the scalar exp here: tests/unit_kernels.c; a softmax weight's error
 * stays under 1e-15 of it), always the 4-wide AVX2 one so that both fused
 * kernels give the same bits. Beside an exact kernel (ATTNVIZ_KERNEL=avx512, avx2,
 * portable) it is glibc's exp cell by cell, the numbers as they always were.
 * Either way a cell's value depends only on x and shift, never on where the
 * cell lies in the row (the tail is padded into a whole vector).
 *
 * The same for tanh (mat_tanh: Gemma 2's soft cap, c·tanh(s/c), on every
 * score): beside a fused kernel libmvec's _ZGVdN4v_tanh (glibc 2.35 on;
 * within 4 ulp, 4 at most from the scalar tanh over 16 million arguments
 * here), about 2.7 ns a cell against the scalar tanh's 11-16; beside an
 * exact kernel, or an older glibc, the scalar tanh.
 */
#include "base/matrix.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && defined(HAVE_MVEC)
#include <immintrin.h>
#define VECTOR_EXP 1

/* glibc's libmvec (x86_64, since 2.22): the AVX2 variant of exp, four doubles at a time */
__attribute__((target("avx2,fma"))) extern __m256d _ZGVdN4v_exp(__m256d x);

/*
 * Below −746 (−∞ included: a masked cell) e^x is +0, as libmvec also gives it
 * (16 million arguments checked against it), but libmvec reaches that through
 * its slow path for special arguments, 8 ns a cell against 1 (25 for a
 * finite one): a window's or a padding mask's row, and the masked half of a
 * flash tile on the diagonal, are mostly such cells. Those lanes are made 0
 * here, and four of them at once are not sent to it at all; the others get
 * libmvec's own bits, a lane's result not depending on its neighbours.
 */
#define EXP_ZERO_BELOW (-746.0)

/* e^d for four d */
__attribute__((target("avx2,fma"))) static inline __m256d exp4(__m256d d)
{
	const __m256d zero = _mm256_setzero_pd();
	const __m256d low = _mm256_cmp_pd(d, _mm256_set1_pd(EXP_ZERO_BELOW), _CMP_LT_OQ); /* NaN is not below */
	const int lanes = _mm256_movemask_pd(low);

	if (lanes == 0)
		return _ZGVdN4v_exp(d);
	if (lanes == 0xf)
		return zero;
	/* e^0 = 1 in the low lanes instead of the slow path, then 0 put there */
	return _mm256_blendv_pd(_ZGVdN4v_exp(_mm256_blendv_pd(d, zero, low)), zero, low);
}

__attribute__((target("avx2,fma"))) static void exp_vector(int n, const double *x, double shift, double *out)
{
	const __m256d s = _mm256_set1_pd(shift);
	int j = 0;

	for (; j + 4 <= n; j += 4)
		_mm256_storeu_pd(out + j, exp4(_mm256_sub_pd(_mm256_loadu_pd(x + j), s)));
	if (j < n) {
		double tail[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
		memcpy(tail, x + j, (size_t)(n - j) * sizeof *tail);
		_mm256_storeu_pd(tail, exp4(_mm256_sub_pd(_mm256_loadu_pd(tail), s)));
		memcpy(out + j, tail, (size_t)(n - j) * sizeof *tail);
	}
}

#if defined(__GLIBC_PREREQ) && __GLIBC_PREREQ(2, 35)
#define VECTOR_TANH 1
/* libmvec's AVX2 tanh, four doubles at a time (glibc 2.35 on) */
__attribute__((target("avx2,fma"))) extern __m256d _ZGVdN4v_tanh(__m256d x);

__attribute__((target("avx2,fma"))) static void tanh_vector(int n, const double *x, double *out)
{
	int j = 0;

	for (; j + 4 <= n; j += 4)
		_mm256_storeu_pd(out + j, _ZGVdN4v_tanh(_mm256_loadu_pd(x + j)));
	if (j < n) {
		double tail[4] = { 0.0, 0.0, 0.0, 0.0 };
		memcpy(tail, x + j, (size_t)(n - j) * sizeof *tail);
		_mm256_storeu_pd(tail, _ZGVdN4v_tanh(_mm256_loadu_pd(tail)));
		memcpy(out + j, tail, (size_t)(n - j) * sizeof *tail);
	}
}
#endif
#else
#define VECTOR_EXP 0
#endif
#ifndef VECTOR_TANH
#define VECTOR_TANH 0
#endif

int mat_exp_vector(void)
{
	return VECTOR_EXP && mat_kernel_fused();
}

void mat_exp_shifted(int n, const double *x, double shift, double *out)
{
#if VECTOR_EXP
	if (mat_kernel_fused()) {
		exp_vector(n, x, shift, out);
		return;
	}
#endif
	for (int j = 0; j < n; j++)
		out[j] = exp(x[j] - shift);
}

int mat_tanh_vector(void)
{
	return VECTOR_TANH && mat_kernel_fused();
}

void mat_tanh(int n, const double *x, double *out)
{
#if VECTOR_TANH
	if (mat_kernel_fused()) {
		tanh_vector(n, x, out);
		return;
	}
#endif
	for (int j = 0; j < n; j++)
		out[j] = tanh(x[j]);
}
