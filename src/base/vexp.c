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
 */
#include "base/matrix.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && defined(HAVE_MVEC)
#include <immintrin.h>
#define VECTOR_EXP 1

/* glibc's libmvec (x86_64, since 2.22): the AVX2 variant of exp, four doubles at a time */
__attribute__((target("avx2,fma"))) extern __m256d _ZGVdN4v_exp(__m256d x);

__attribute__((target("avx2,fma"))) static void exp_vector(int n, const double *x, double shift, double *out)
{
	const __m256d s = _mm256_set1_pd(shift);
	int j = 0;

	for (; j + 4 <= n; j += 4)
		_mm256_storeu_pd(out + j, _ZGVdN4v_exp(_mm256_sub_pd(_mm256_loadu_pd(x + j), s)));
	if (j < n) {
		double tail[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
		memcpy(tail, x + j, (size_t)(n - j) * sizeof *tail);
		_mm256_storeu_pd(tail, _ZGVdN4v_exp(_mm256_sub_pd(_mm256_loadu_pd(tail), s)));
		memcpy(out + j, tail, (size_t)(n - j) * sizeof *tail);
	}
}
#else
#define VECTOR_EXP 0
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
