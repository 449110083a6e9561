/* unit_kernels.c: every matrix kernel this processor supports (AVX-512 and
 * AVX2, each fused and exact; portable) against a one-cell-at-a-time
 * reference (with fma for a fused kernel), bit for bit, on
 * every path of mat_mul_view: plain, B transposed, causal (lower), one row, views
 * with row strides, and every tail size of r, k and c from 1 to 17 beside
 * shapes past the cache blocks, each also with one cell made to overflow
 * (the product must say so exactly then); mat_mul against mat_mul_naive;
 * (an exact kernel bit for bit up to 256 terms, every kernel within the
 * rounding of the two ways); and mat_mul_acc (the backward pass's sums in
 * one chain) against mat_mul_acc_naive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/matrix.h"
#include "base/prng.h"
#include "unit_common.h"

/* ------------------------------------------------------------ helpers */

/* Where every kernel splits a sum (src/base/gemm.c): part of the result, not a tuning. */
enum { KB = 256 };

/*
 * The definition, one cell at a time: C[i][j] = Σ_t A[i][t]·B[t][j], the
 * terms t = 0 … k−1 taken in blocks of KB, each block summed from 0.0 in
 * the order of t with every product rounded (the build has
 * -ffp-contract=off), the block sums added in order. For k ≤ KB that is
 * mat_mul_naive's sum. With a fused kernel each product is added with one
 * rounding instead, sum = fma(a, b, sum). B[t][j] is Bt[j][t] with b_trans.
 */
static void reference(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb, int b_trans,
                      double *C, size_t ldc)
{
	const int fused = mat_kernel_fused();
	int i, j, t, t0;

	for (i = 0; i < r; i++)
		for (j = 0; j < c; j++) {
			double cell = 0.0;
			for (t0 = 0; t0 < k; t0 += KB) {
				double sum = 0.0;
				for (t = t0; t < k && t < t0 + KB; t++) {
					const double x = A[(size_t)i * lda + t],
					             y = b_trans ? B[(size_t)j * ldb + t] : B[(size_t)t * ldb + j];
					sum = fused ? fma(x, y, sum) : sum + x * y;
				}
				cell = t0 == 0 ? sum : cell + sum;
			}
			C[(size_t)i * ldc + j] = cell;
		}
}

/* Numbers of every size from 2^-20 to 2^20, either sign, some exact zeros: the last bits differ if any order does. */
static double number(Prng *p)
{
	const double u = prng_uniform(p);
	const int e = (int)(prng_uniform(p) * 41.0) - 20;

	if (u < 0.03)
		return u < 0.015 ? 0.0 : -0.0;
	return ldexp(2.0 * u - 1.0, e);
}

static double *numbers(Prng *p, size_t count)
{
	double *v = malloc((count ? count : 1) * sizeof *v);
	size_t i;

	assert_non_null(v);
	for (i = 0; i < count; i++)
		v[i] = number(p);
	return v;
}

/* 1 when the two cells have the same bits (so +0 and −0 differ, and a NaN equals itself). */
static int same_bits(double x, double y)
{
	return memcmp(&x, &y, sizeof x) == 0;
}

enum { PLAIN = 0, TRANS = 1, LOWER = 2 };

/*
 * One product r × k · k × c on the path flags, with the current kernel,
 * against the reference. Row strides are wider than the rows (pad extra
 * columns), and the padding of C must come back untouched. Returns 1 when
 * every cell has the reference's bits, and mat_mul_view says whether a
 * cell is not finite exactly when one is. With plant, one term of one cell
 * is 1e300 · ±1e300, so that cell overflows to ±∞ (or NaN).
 */
static int check_planted(Prng *p, int r, int k, int c, int flags, int pad, int plant)
{
	const int b_trans = (flags & TRANS) != 0, lower = (flags & LOWER) != 0;
	const size_t lda = (size_t)k + (size_t)pad, ldc = (size_t)c + (size_t)pad;
	const size_t ldb = (b_trans ? (size_t)k : (size_t)c) + (size_t)pad;
	const size_t brows = b_trans ? (size_t)c : (size_t)k;
	double *A = numbers(p, (size_t)r * lda), *B = numbers(p, brows * ldb);
	double *C = malloc(((size_t)r * ldc + 1) * sizeof *C), *R = malloc(((size_t)r * ldc + 1) * sizeof *R);
	size_t i;
	int ok = 1, ii, t, said, nonfinite = 0;

	assert_non_null(C);
	assert_non_null(R);
	if (lower) /* row i of A is 0 from column i+1 on, as mat_mul_view is promised */
		for (ii = 0; ii < r; ii++)
			for (t = ii + 1; t < k; t++)
				A[(size_t)ii * lda + t] = 0.0;
	if (plant) {
		const int pi = r / 2, pj = c - 1, pt = lower && k > pi ? pi : k - 1;
		A[(size_t)pi * lda + (size_t)pt] = 1e300;
		B[b_trans ? (size_t)pj * ldb + (size_t)pt : (size_t)pt * ldb + (size_t)pj] = plant > 0 ? 1e300 : -1e300;
	}
	for (i = 0; i < (size_t)r * ldc; i++)
		C[i] = R[i] = NAN; /* garbage: the product overwrites, never accumulates */
	said = mat_mul_view(r, k, c, A, lda, B, ldb, b_trans, C, ldc, lower);
	reference(r, k, c, A, lda, B, ldb, b_trans, R, ldc);
	for (ii = 0; ii < r; ii++)
		for (t = 0; t < c; t++)
			nonfinite |= !isfinite(R[(size_t)ii * ldc + (size_t)t]);
	if (said != nonfinite || nonfinite != (plant != 0)) {
		print_error("kernel %s, %s%s%d×%d · %d×%d: says %d for a product %s finite\n", mat_kernel_active(),
		            b_trans ? "B transposed, " : "", lower ? "lower, " : "", r, k, k, c, said,
		            nonfinite ? "not all" : "all");
		ok = 0;
	}
	for (ii = 0; ii < r && ok; ii++)
		for (t = 0; t < (int)ldc; t++) {
			const size_t at = (size_t)ii * ldc + (size_t)t;
			if (!same_bits(C[at], R[at])) {
				print_error("kernel %s, %s%s%d×%d · %d×%d (pad %d): C[%d][%d] = %.17g, reference %.17g\n",
				            mat_kernel_active(), b_trans ? "B transposed, " : "", lower ? "lower, " : "", r, k,
				            k, c, pad, ii, t, C[at], R[at]);
				ok = 0;
				break;
			}
		}
	free(A);
	free(B);
	free(C);
	free(R);
	return ok;
}

static int check_one(Prng *p, int r, int k, int c, int flags, int pad)
{
	return check_planted(p, r, k, c, flags, pad, 0);
}

/* Runs body(arg) once with each kernel the processor supports; the default one is restored after. */
static void each_kernel(void (*body)(int), int arg)
{
	const char *was = mat_kernel_active();
	int i, ran = 0;

	for (i = 0; i < mat_kernel_count(); i++) {
		if (!mat_kernel_supported(i))
			continue;
		assert_int_equal(mat_kernel_use(mat_kernel_name(i)), 0);
		assert_string_equal(mat_kernel_active(), mat_kernel_name(i));
		body(arg);
		ran++;
	}
	assert_int_equal(mat_kernel_use(was), 0);
	assert_true(ran >= 1);
}

/* Every r, k, c from 1 to 17 (every tail of every tile and every vector width) on one path. */
static void tails(int flags)
{
	Prng p;
	int r, k, c, bad = 0;

	prng_seed(&p, 1400u + (unsigned)flags);
	for (r = 1; r <= 17; r++)
		for (k = 1; k <= 17; k++)
			for (c = 1; c <= 17; c++)
				if (!check_one(&p, r, k, c, flags, (r + k + c) % 3) ||
				    !check_planted(&p, r, k, c, flags, 0, (r + k + c) % 2 ? 1 : -1))
					bad++;
	if (bad)
		fail_msg("kernel %s: %d of 4913 shapes differ from the reference", mat_kernel_active(), bad);
}

/* Shapes past every block: k past KB (the block sums added), r past mc, c past nc (2040). */
static void large(int unused)
{
	static const int shapes[][3] = {
		{ 1, 300, 1 },   { 7, 257, 9 },    { 33, 513, 50 },  { 200, 255, 31 }, { 385, 70, 64 },
		{ 130, 600, 65 }, { 9, 5, 2100 },  { 3, 260, 2049 }, { 64, 1024, 64 }, { 257, 257, 257 },
		/* one row (the streaming row kernel): around its 32 columns and the blocks of 256 terms */
		{ 1, 256, 32 },  { 1, 257, 33 },   { 1, 700, 100 },  { 1, 576, 1536 }, { 1, 40, 2100 },
		/* few rows, the last strip as wide as a narrow kernel's: B read in place */
		{ 16, 64, 64 },  { 40, 300, 88 },  { 5, 2100, 40 },
	};
	Prng p;
	size_t s;
	int flags;

	(void)unused;
	prng_seed(&p, 2024);
	for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (flags = 0; flags < 4; flags++)
			if (!check_one(&p, shapes[s][0], shapes[s][1], shapes[s][2], flags, (int)s % 2) ||
			    !check_planted(&p, shapes[s][0], shapes[s][1], shapes[s][2], flags, 0, 1))
				fail_msg("kernel %s differs from the reference on %d×%d · %d×%d", mat_kernel_active(),
				         shapes[s][0], shapes[s][1], shapes[s][1], shapes[s][2]);
}

/*
 * mat_mul (whole matrices) against mat_mul_naive: an exact kernel the same
 * bits up to KB terms; past them (or fused) within the rounding of the two
 * ways, |C − N| ≤ 2k·2⁻⁵² Σ_t |A[i][t]·B[t][j]|. And k = 0 gives zeros.
 */
static void whole(int unused)
{
	static const int depth[] = { 1, 255, KB, KB + 1, 300, 777 };
	Prng p;
	Mat A, B, C, N, Z;
	size_t i, d;

	(void)unused;
	prng_seed(&p, 7);
	for (d = 0; d < sizeof depth / sizeof depth[0]; d++) {
		const int r = 67, k = depth[d], c = 45;
		int ii, j, t;
		assert_int_equal(mat_alloc(&A, r, k), 0);
		assert_int_equal(mat_alloc(&B, k, c), 0);
		assert_int_equal(mat_alloc(&C, r, c), 0);
		assert_int_equal(mat_alloc(&N, r, c), 0);
		for (i = 0; i < (size_t)r * (size_t)k; i++)
			A.a[i] = number(&p);
		for (i = 0; i < (size_t)k * (size_t)c; i++)
			B.a[i] = number(&p);
		mat_mul(&A, &B, &C);
		mat_mul_naive(&A, &B, &N);
		if (k <= KB && !mat_kernel_fused())
			assert_memory_equal(C.a, N.a, (size_t)r * (size_t)c * sizeof(double));
		for (ii = 0; ii < r; ii++)
			for (j = 0; j < c; j++) {
				double magnitude = 0.0;
				for (t = 0; t < k; t++)
					magnitude += fabs(MAT_AT(A, ii, t) * MAT_AT(B, t, j));
				if (fabs(MAT_AT(C, ii, j) - MAT_AT(N, ii, j)) > 2.0 * k * ldexp(magnitude, -52))
					fail_msg("k = %d: C[%d][%d] = %.17g, naive %.17g", k, ii, j, MAT_AT(C, ii, j),
					         MAT_AT(N, ii, j));
			}
		mat_free(&A);
		mat_free(&B);
		mat_free(&C);
		mat_free(&N);
	}
	/* k = 0: the empty sum */
	assert_int_equal(mat_alloc(&Z, 3, 4), 0);
	for (i = 0; i < 12; i++)
		Z.a[i] = NAN;
	mat_mul_view(3, 0, 4, NULL, 0, NULL, 4, 0, Z.a, 4, 0);
	for (i = 0; i < 12; i++)
		assert_true(same_bits(Z.a[i], 0.0));
	mat_free(&Z);
}

/* ------------------------------------------------------------ tests */

/* Every cell of m is +0. */
static void assert_zeros(const Mat *m)
{
	size_t i, count = (size_t)m->rows * (size_t)m->cols;

	for (i = 0; i < count; i++)
		if (!same_bits(m->a[i], 0.0))
			fail_msg("%d×%d: cell %zu is %g, not 0", m->rows, m->cols, i, m->a[i]);
}

/*
 * Matrices of 64 KiB and more have pages of their own (with a huge-page
 * hint from 2 MiB), and a freed one is kept for the next of its size:
 * zeroed whether new or kept, freed in any order, the others intact.
 */
static void test_large_alloc(void **state)
{
	static const int shapes[][2] = { { 512, 512 }, { 1024, 256 }, { 1, 262144 }, { 333, 1000 },
		                         { 1024, 1023 }, { 64, 128 }, { 100, 100 }, { 3, 5 } };
	enum { N = sizeof shapes / sizeof shapes[0] };
	Mat m[N], copy;
	size_t s, i;
	int round;

	(void)state;
	for (round = 0; round < 2; round++) { /* the second round gets the first one's pages back */
		for (s = 0; s < N; s++) {
			const size_t count = (size_t)shapes[s][0] * (size_t)shapes[s][1];
			assert_int_equal(mat_alloc(&m[s], shapes[s][0], shapes[s][1]), 0);
			assert_int_equal(m[s].rows, shapes[s][0]);
			assert_zeros(&m[s]);
			for (i = 0; i < count; i++)
				m[s].a[i] = (double)(i + s) + 0.5;
		}
		assert_int_equal(mat_copy(&copy, &m[1]), 0);
		assert_true(same_numbers(&copy, &m[1]));
		mat_free(&copy);
		for (s = 0; s < N; s += 2) /* every other one first: the rest must stay intact */
			mat_free(&m[s]);
		for (s = 1; s < N; s += 2) {
			const size_t last = (size_t)m[s].rows * (size_t)m[s].cols - 1;
			assert_true(same_bits(m[s].a[last], (double)(last + s) + 0.5));
			mat_free(&m[s]);
			assert_null(m[s].a);
		}
	}
}

/* Products on another thread (packing buffers of its own, freed when it ends), beside this one's. */
static void *products_on_a_thread(void *arg)
{
	Prng p;
	int *ok = arg, s;

	prng_seed(&p, 99);
	for (s = 0; s < 4; s++)
		*ok &= check_one(&p, 40 + s, 300, 50, s, 1);
	return NULL;
}

static void test_other_threads(void **state)
{
	pthread_t thread[2];
	int ok[2] = { 1, 1 }, i;

	(void)state;
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&thread[i], NULL, products_on_a_thread, &ok[i]), 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(thread[i], NULL), 0);
		assert_true(ok[i]);
	}
}

/* state: the path flags (PLAIN, TRANS, LOWER or LOWER | TRANS) */
static void test_tails(void **state)
{
	each_kernel(tails, *(const int *)*state);
}

static void test_large_shapes(void **state)
{
	(void)state;
	each_kernel(large, 0);
}

static void test_mat_mul_whole(void **state)
{
	(void)state;
	each_kernel(whole, 0);
}

/*
 * mat_mul_acc against its definition mat_mul_acc_naive, bit for bit: A and
 * B plain or transposed, both ways of starting a sum (MAT_CONTINUE from C,
 * MAT_ADD_SUM from 0 then added), row strides wider than the rows (the
 * padding of C must come back untouched), C holding numbers (±0 among
 * them) before. These are the sums of the backward pass's naive loops,
 * for any k: the shapes cross the kernels' blocks of 256 terms and their
 * packed blocks of rows and columns.
 */
static int check_acc(Prng *p, int r, int k, int c, int a_trans, int b_trans, int how, int pad)
{
	const size_t lda = (a_trans ? (size_t)r : (size_t)k) + (size_t)pad, arows = a_trans ? (size_t)k : (size_t)r;
	const size_t ldb = (b_trans ? (size_t)k : (size_t)c) + (size_t)pad, brows = b_trans ? (size_t)c : (size_t)k;
	const size_t ldc = (size_t)c + (size_t)pad;
	double *A = numbers(p, arows * lda), *B = numbers(p, brows * ldb), *C = numbers(p, (size_t)r * ldc);
	double *R = malloc(((size_t)r * ldc + 1) * sizeof *R);
	size_t i;
	int ok = 1;

	assert_non_null(R);
	memcpy(R, C, (size_t)r * ldc * sizeof *R);
	mat_mul_acc(r, k, c, A, lda, a_trans, B, ldb, b_trans, C, ldc, how);
	mat_mul_acc_naive(r, k, c, A, lda, a_trans, B, ldb, b_trans, R, ldc, how);
	for (i = 0; i < (size_t)r * ldc; i++)
		if (!same_bits(C[i], R[i])) {
			if (ok)
				print_message("acc %s: r=%d k=%d c=%d a_trans=%d b_trans=%d how=%d: cell %zu %.17g, reference %.17g\n",
				              mat_kernel_active(), r, k, c, a_trans, b_trans, how, i, C[i], R[i]);
			ok = 0;
		}
	free(A);
	free(B);
	free(C);
	free(R);
	return ok;
}

static void acc(int unused)
{
	static const int shapes[][3] = { { 1, 1, 1 },    { 3, 5, 7 },     { 9, 17, 13 },  { 17, 2, 25 },
	                                 { 8, 256, 24 }, { 7, 257, 9 },   { 37, 300, 29 }, { 5, 600, 50 },
	                                 { 200, 513, 33 }, { 13, 40, 2100 }, { 4, 0, 6 },
	                                 /* few rows, the last strip as wide as a narrow kernel's (64 = 24 + 24 + 16): B read in place */
	                                 { 16, 64, 64 }, { 5, 70, 40 }, { 40, 300, 88 } };
	Prng p;
	int s, at, bt, how;

	(void)unused;
	prng_seed(&p, 77);
	for (s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); s++)
		for (at = 0; at < 2; at++)
			for (bt = 0; bt < 2; bt++)
				for (how = MAT_CONTINUE; how <= MAT_ADD_SUM; how++)
					assert_true(check_acc(&p, shapes[s][0], shapes[s][1], shapes[s][2], at, bt, how, s % 3));
}

static void test_mat_mul_acc(void **state)
{
	(void)state;
	each_kernel(acc, 0);
}

/*
 * mat_dots and mat_axpy, the one-row loops a decoding step writes beside the
 * whole computation's products: q·Kᵀ and Σ_j w_j·V[j] with the bits of
 * mat_mul_view's (up to KB terms, where it sums in one chain), for the kernel's kind.
 */
static void rows(int unused)
{
	static const int sizes[][2] = { { 1, 1 }, { 3, 7 }, { 5, 64 }, { 13, 33 }, { 40, 256 } };
	Prng p;

	(void)unused;
	prng_seed(&p, 31);
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		const int count = sizes[s][0], d = sizes[s][1];
		const size_t ld = (size_t)d + 3;
		double *q = numbers(&p, (size_t)d), *keys = numbers(&p, (size_t)count * ld), *w = numbers(&p, (size_t)count);
		double *got = calloc((size_t)count + (size_t)d, sizeof *got), *want = calloc((size_t)count + (size_t)d, sizeof *want);
		assert_non_null(got);
		assert_non_null(want);
		mat_dots(q, keys, ld, d, count, got);
		mat_mul_view(1, d, count, q, (size_t)d, keys, ld, 1, want, (size_t)count, 0);
		for (int j = 0; j < count; j++)
			if (!same_bits(got[j], want[j]))
				fail_msg("%s: mat_dots %d×%d, key %d: %.17g, the product %.17g", mat_kernel_active(), count, d, j,
				         got[j], want[j]);
		memset(got, 0, (size_t)d * sizeof *got);
		for (int j = 0; j < count; j++)
			mat_axpy(d, w[j], keys + (size_t)j * ld, got);
		mat_mul_view(1, count, d, w, (size_t)count, keys, ld, 0, want, (size_t)d, 0);
		for (int c = 0; c < d; c++)
			if (!same_bits(got[c], want[c]))
				fail_msg("%s: mat_axpy %d×%d, column %d: %.17g, the product %.17g", mat_kernel_active(), count, d,
				         c, got[c], want[c]);
		free(q), free(keys), free(w), free(got), free(want);
	}
}

static void test_one_row_loops(void **state)
{
	(void)state;
	each_kernel(rows, 0);
}

/*
 * mat_exp_shifted beside each kernel: e^(x − shift) bit for bit beside an
 * exact kernel, within 4 ulp of exp beside a fused one (glibc's vector exp,
 * which glibc bounds by 4 ulp; 3 was the most seen here over 16 million
 * arguments in [−745, 0]); e^(−∞)
 * is 0 and e^0 is 1 exactly either way, and a cell's bits do not depend on
 * its place in the row (rows of 1 … 11 against the cell alone).
 */
/* How many doubles lie between a and b (both finite, of one sign). */
static int64_t ulps(double a, double b)
{
	int64_t ia, ib;

	memcpy(&ia, &a, sizeof ia);
	memcpy(&ib, &b, sizeof ib);
	return ia > ib ? ia - ib : ib - ia;
}

static void exps(int unused)
{
	static const double special[] = { -INFINITY, 0.0, -0.0, -1e-300, -1e-17, -0.5, -1.0, -36.7, -700.0, -708.39,
	                                  -709.5, -720.0, -744.4, -745.1, -746.0, -1e300 };
	enum { N = 600 };
	double x[N], got[N], one, shift[] = { 0.0, 3.25, -2.0 };
	Prng p;
	int i = 0;

	(void)unused;
	prng_seed(&p, 17);
	for (size_t k = 0; k < sizeof special / sizeof *special; k++)
		x[i++] = special[k];
	while (i < N)
		x[i++] = -800.0 * prng_uniform(&p);
	for (size_t s = 0; s < sizeof shift / sizeof *shift; s++) {
		mat_exp_shifted(N, x, shift[s], got);
		for (i = 0; i < N; i++) {
			const double want = exp(x[i] - shift[s]);
			if (x[i] == -INFINITY || x[i] - shift[s] == 0.0)
				assert_true(same_bits(got[i], want)); /* 0 and 1 exactly */
			else if (!mat_kernel_fused() || !mat_exp_vector()) {
				if (!same_bits(got[i], want))
					fail_msg("%s: e^(%.17g − %g) = %.17g, exp gives %.17g", mat_kernel_active(), x[i], shift[s],
					         got[i], want);
			} else if (ulps(got[i], want) > 4)
				fail_msg("%s: e^(%.17g − %g) = %.17g, more than 4 ulp from exp's %.17g", mat_kernel_active(),
				         x[i], shift[s], got[i], want);
			mat_exp_shifted(1, &x[i], shift[s], &one);
			assert_true(same_bits(one, got[i]));
		}
		for (int n = 1; n <= 11; n++) { /* every tail, in place (out = x) too */
			double row[11];
			memcpy(row, x + 20, (size_t)n * sizeof *row);
			mat_exp_shifted(n, row, shift[s], row);
			for (int j = 0; j < n; j++) {
				mat_exp_shifted(1, &x[20 + j], shift[s], &one);
				assert_true(same_bits(row[j], one));
			}
		}
	}
#if defined(HAVE_MVEC) && defined(__x86_64__)
	/* where the system has libmvec, a fused kernel uses it */
	assert_int_equal(mat_exp_vector(), mat_kernel_fused());
#endif
}

static void test_exp_shifted(void **state)
{
	(void)state;
	each_kernel(exps, 0);
}

/*
 * mat_tanh beside each kernel: beside an exact one glibc's tanh bit for bit;
 * beside a fused one with libmvec's, within 4 ulp of it (the soft cap's
 * c·tanh(s/c)); ±0, ±1 at ±∞, NaN kept; a cell's bits the same alone as in a
 * row, every tail, in place.
 */
static void tanhs(int unused)
{
	static const double special[] = { 0.0, -0.0, 1e-300, -1e-17, 0.5, -0.99, 3.0, -19.0, 22.0, -40.0, 700.0,
	                                  INFINITY, -INFINITY };
	enum { N = 400 };
	double x[N], got[N], one;
	Prng p;
	int i = 0;

	(void)unused;
	prng_seed(&p, 29);
	for (size_t k = 0; k < sizeof special / sizeof *special; k++)
		x[i++] = special[k];
	for (; i < N; i++)
		x[i] = (prng_uniform(&p) - 0.5) * (i % 2 ? 4.0 : 60.0);
	mat_tanh(N, x, got);
	for (i = 0; i < N; i++) {
		const double want = tanh(x[i]);
		if (x[i] == 0.0 || isinf(x[i]))
			assert_true(same_bits(got[i], want)); /* ±0 and ±1 exactly */
		else if (!mat_tanh_vector()) {
			if (!same_bits(got[i], want))
				fail_msg("%s: tanh(%.17g) = %.17g, tanh gives %.17g", mat_kernel_active(), x[i], got[i], want);
		} else if (signbit(got[i]) != signbit(want) || ulps(fabs(got[i]), fabs(want)) > 4)
			fail_msg("%s: tanh(%.17g) = %.17g, more than 4 ulp from tanh's %.17g", mat_kernel_active(), x[i], got[i],
			         want);
		mat_tanh(1, &x[i], &one);
		assert_true(same_bits(one, got[i]));
	}
	one = NAN;
	mat_tanh(1, &one, &one);
	assert_true(isnan(one));
	for (int n = 1; n <= 11; n++) { /* every tail, in place (out = x) too */
		double row[11];
		memcpy(row, x + 30, (size_t)n * sizeof *row);
		mat_tanh(n, row, row);
		for (int j = 0; j < n; j++) {
			mat_tanh(1, &x[30 + j], &one);
			assert_true(same_bits(row[j], one));
		}
	}
	if (!mat_kernel_fused())
		assert_false(mat_tanh_vector());
#if defined(HAVE_MVEC) && defined(__x86_64__) && defined(__GLIBC_PREREQ)
#if __GLIBC_PREREQ(2, 35)
	/* where the system's libmvec has tanh, a fused kernel uses it */
	assert_int_equal(mat_tanh_vector(), mat_kernel_fused());
#endif
#endif
}

static void test_tanh(void **state)
{
	(void)state;
	each_kernel(tanhs, 0);
}

/*
 * mat_sum beside each kernel: beside an exact one the loop from 0 left to
 * right, bit for bit; beside a fused one the eight running sums (x[j] into
 * sum j mod 8, joined pairwise) bit for bit, and within n·ε·Σ|x| of the
 * loop's sum; every length 0 … 40 and a softmax row's 1024.
 */
static void sums(int unused)
{
	enum { N = 1024 };
	double x[N];
	Prng p;

	(void)unused;
	prng_seed(&p, 23);
	for (int i = 0; i < N; i++)
		x[i] = i % 3 ? prng_uniform(&p) : -1e3 * prng_uniform(&p);
	for (int n = 0; n <= N; n = n < 40 ? n + 1 : n < N ? N : N + 1) {
		double loop = 0.0, mag = 0.0, l[8] = { 0 }, lanes;
		const double got = mat_sum(n, x);

		for (int j = 0; j < n; j++) {
			loop += x[j];
			mag += fabs(x[j]);
			l[j % 8] += x[j];
		}
		lanes = ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
		if (!same_bits(got, mat_kernel_fused() ? lanes : loop))
			fail_msg("%s: the sum of %d numbers is %.17g, not %.17g", mat_kernel_active(), n, got,
			         mat_kernel_fused() ? lanes : loop);
		assert_true(fabs(got - loop) <= n * DBL_EPSILON * mag);
	}
	assert_true(same_bits(mat_sum(0, x), 0.0));
}

static void test_sum(void **state)
{
	(void)state;
	each_kernel(sums, 0);
}

/*
 * mat_max: the loop's x > max ? x : max from −∞, bit for bit (a softmax's
 * and a flash tile's maximum, which flash_m shows), NaN skipped, −∞ with
 * none, and of +0 and −0 the first. Every length 0 … 40 and 1024, the
 * largest at every place, with NaN and −∞ among the others.
 */
static void test_max(void **state)
{
	enum { N = 1024 };
	double x[N];
	Prng p;

	(void)state;
	prng_seed(&p, 37);
	for (int n = 0; n <= N; n = n < 40 ? n + 1 : n < N ? N : N + 1)
		for (int at = 0; at < (n < 40 ? n : 40); at++) {
			double loop = -INFINITY;
			for (int i = 0; i < n; i++)
				x[i] = i % 7 == 3 ? NAN : i % 5 == 1 ? -INFINITY : -prng_uniform(&p);
			x[at] = at % 2 ? 2.5 : NAN; /* a NaN where the largest would be: the next largest wins */
			for (int i = 0; i < n; i++)
				if (x[i] > loop)
					loop = x[i];
			if (!same_bits(mat_max(n, x), loop))
				fail_msg("the largest of %d numbers is %.17g, not %.17g", n, mat_max(n, x), loop);
		}
	for (int i = 0; i < 40; i++)
		x[i] = NAN;
	assert_true(mat_max(40, x) == -INFINITY);
	for (int first = 0; first < 2; first++) { /* zeros of both signs (in two lanes): the first one's */
		for (int i = 0; i < 40; i++)
			x[i] = -1.0;
		x[0] = first ? 0.0 : -0.0, x[1] = first ? -0.0 : 0.0;
		assert_true(same_bits(mat_max(40, x), x[0]));
	}
}

/* mat_divide: each cell its own quotient x / d, bit for bit, every length 0 … 40 and 1024 (every tail of each width). */
static void test_divide(void **state)
{
	enum { N = 1024 };
	double x[N], y[N];
	Prng p;

	(void)state;
	prng_seed(&p, 31);
	for (int i = 0; i < N; i++)
		x[i] = prng_uniform(&p) * (i % 5 ? 1.0 : 1e-300);
	for (int n = 0; n <= N; n = n < 40 ? n + 1 : n < N ? N : N + 1) {
		memcpy(y, x, sizeof y);
		mat_divide(n, y, 3.7);
		for (int i = 0; i < N; i++)
			assert_true(same_bits(y[i], i < n ? x[i] / 3.7 : x[i]));
	}
}

/*
 * mat_mul_chain and mat_mul_continue with lower against the definition,
 * mat_mul_acc_naive continuing (from zeros, and from a C of nonzeros and
 * +0s), bit for bit, on A zero past its diagonal (a causal softmax's
 * weights), B plain and transposed, A as it is and transposed: sizes that cut
 * strips and tiles short and run past one block of terms (k > 256).
 */
static void lowers(int unused)
{
	static const int sizes[][3] = { { 1, 1, 1 }, { 7, 7, 5 }, { 17, 17, 24 }, { 40, 40, 33 }, { 300, 300, 70 },
	                                { 530, 530, 128 }, { 64, 100, 9 } };
	Prng p;

	(void)unused;
	prng_seed(&p, 31);
	for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
		const int r = sizes[z][0], k = sizes[z][1], c = sizes[z][2];
		double *A = calloc((size_t)r * k, sizeof *A), *B = malloc((size_t)k * c * sizeof *B);
		double *want = malloc((size_t)r * c * sizeof *want), *got = malloc((size_t)r * c * sizeof *got);
		assert_non_null(A);
		assert_non_null(B);
		assert_non_null(want);
		assert_non_null(got);
		for (int i = 0; i < r; i++)
			for (int t = 0; t <= i && t < k; t++)
				A[(size_t)i * k + t] = prng_uniform(&p) / (i + 1);
		for (size_t t = 0; t < (size_t)k * c; t++)
			B[t] = prng_normal(&p);
		for (int bt = 0; bt <= 1; bt++) { /* B as k × c, or as the transpose of a c × k matrix */
			memset(want, 0, (size_t)r * c * sizeof *want);
			mat_mul_acc_naive(r, k, c, A, (size_t)k, 0, B, bt ? (size_t)k : (size_t)c, bt, want, (size_t)c, MAT_CONTINUE);
			mat_mul_chain(r, k, c, A, (size_t)k, B, bt ? (size_t)k : (size_t)c, bt, got, (size_t)c, 1);
			for (size_t x = 0; x < (size_t)r * c; x++)
				if (!same_bits(got[x], want[x]))
					fail_msg("%s: %d × %d × %d%s, cell %zu: %.17g, the loop gives %.17g", mat_kernel_active(), r, k, c,
					         bt ? " (Bᵀ)" : "", x, got[x], want[x]);
		}
		/* continuing from C (nonzero, or +0), A read as it is and (when square) transposed */
		for (int at = 0; at <= (r == k); at++) {
			for (size_t x = 0; x < (size_t)r * c; x++)
				want[x] = got[x] = x % 5 ? prng_normal(&p) : 0.0;
			mat_mul_acc_naive(r, k, c, A, (size_t)k, at, B, (size_t)c, 0, want, (size_t)c, MAT_CONTINUE);
			mat_mul_continue(r, k, c, A, (size_t)k, at, B, (size_t)c, 0, got, (size_t)c, 1);
			for (size_t x = 0; x < (size_t)r * c; x++)
				if (!same_bits(got[x], want[x]))
					fail_msg("%s: %d × %d × %d%s, cell %zu: %.17g, the loop gives %.17g", mat_kernel_active(), r, k, c,
					         at ? " (Aᵀ)" : "", x, got[x], want[x]);
		}
		free(A);
		free(B);
		free(want);
		free(got);
	}
}

static void test_chain_lower(void **state)
{
	(void)state;
	each_kernel(lowers, 0);
}

static void test_kernel_names(void **state)
{
	int i, portable = -1;

	(void)state;
	assert_true(mat_kernel_count() >= 1);
	for (i = 0; i < mat_kernel_count(); i++) {
		assert_non_null(mat_kernel_name(i));
		if (strcmp(mat_kernel_name(i), "portable") == 0)
			portable = i;
	}
	/* the portable kernel runs everywhere, and is the last resort */
	assert_int_equal(portable, mat_kernel_count() - 1);
	assert_true(mat_kernel_supported(portable));
	assert_null(mat_kernel_name(mat_kernel_count()));
	assert_int_equal(mat_kernel_use("no-such-kernel"), -1);
	assert_non_null(mat_kernel_active());
	/* a fused kernel says so in its name, and the portable one is exact */
	{
		const char *was = mat_kernel_active();
		for (i = 0; i < mat_kernel_count(); i++)
			if (mat_kernel_supported(i)) {
				const char *name = mat_kernel_name(i);
				const size_t len = strlen(name);
				assert_int_equal(mat_kernel_use(name), 0);
				assert_int_equal(mat_kernel_fused(), len > 3 && strcmp(name + len - 3, "fma") == 0);
			}
		assert_int_equal(mat_kernel_use(was), 0);
		assert_int_equal(mat_kernel_use("portable"), 0);
		assert_false(mat_kernel_fused());
		assert_int_equal(mat_kernel_use(was), 0);
	}
}

/*
 * mat_madds counts each product's terms that are not known zeros: the count
 * of (i, t, j) a loop over the definition visits, t ≤ i with lower (A as it
 * is), t ≥ i with lower and a_trans, every t without.
 */
static unsigned long long madds_by_loop(int r, int k, int c, int lower, int a_trans)
{
	unsigned long long n = 0;

	for (int i = 0; i < r; i++)
		for (int t = 0; t < k; t++)
			if (!lower || (a_trans ? t >= i : t <= i))
				n += (unsigned long long)c;
	return n;
}

static void test_madds(void **state)
{
	static const int shapes[][3] = { { 1, 1, 1 }, { 7, 3, 5 }, { 3, 7, 5 }, { 64, 64, 64 }, { 30, 300, 9 }, { 300, 30, 2 } };
	double *A, *B, *C;

	(void)state;
	A = calloc(300 * 300, sizeof *A), B = calloc(300 * 300, sizeof *B), C = calloc(300 * 300, sizeof *C);
	assert_non_null(A), assert_non_null(B), assert_non_null(C);
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		const int r = shapes[s][0], k = shapes[s][1], c = shapes[s][2];
		for (int lower = 0; lower < 2; lower++) {
			unsigned long long m0 = mat_madds();
			mat_mul_view(r, k, c, A, (size_t)k, B, (size_t)c, 0, C, (size_t)c, lower);
			assert_int_equal(mat_madds() - m0, madds_by_loop(r, k, c, lower, 0));
			m0 = mat_madds();
			mat_mul_chain(r, k, c, A, (size_t)k, B, (size_t)c, 0, C, (size_t)c, lower);
			assert_int_equal(mat_madds() - m0, madds_by_loop(r, k, c, lower, 0));
			for (int at = 0; at < 2; at++) {
				m0 = mat_madds();
				mat_mul_continue(r, k, c, A, at ? (size_t)r : (size_t)k, at, B, (size_t)c, 0, C, (size_t)c, lower);
				assert_int_equal(mat_madds() - m0, madds_by_loop(r, k, c, lower, at));
			}
		}
		{
			unsigned long long m0 = mat_madds();
			mat_mul_acc(r, k, c, A, (size_t)k, 0, B, (size_t)c, 0, C, (size_t)c, MAT_ADD_SUM);
			mat_dots(A, B, (size_t)k, k, c, C);
			mat_axpy(c, 0.5, B, C);
			assert_int_equal(mat_madds() - m0, madds_by_loop(r, k, c, 0, 0) + (unsigned long long)k * c + c);
		}
	}
	free(A), free(B), free(C);
}

int main(void)
{
	static const int paths[] = { PLAIN, TRANS, LOWER, LOWER | TRANS };
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kernel_names),
		cmocka_unit_test(test_one_row_loops),
		cmocka_unit_test(test_exp_shifted),
		cmocka_unit_test(test_tanh),
		cmocka_unit_test(test_sum),
		cmocka_unit_test(test_max),
		cmocka_unit_test(test_divide),
		cmocka_unit_test(test_chain_lower),
		cmocka_unit_test(test_madds),
		{ "test_tails_plain", test_tails, NULL, NULL, (void *)&paths[0] },
		{ "test_tails_b_transposed", test_tails, NULL, NULL, (void *)&paths[1] },
		{ "test_tails_lower", test_tails, NULL, NULL, (void *)&paths[2] },
		{ "test_tails_lower_b_transposed", test_tails, NULL, NULL, (void *)&paths[3] },
		cmocka_unit_test(test_large_shapes),
		cmocka_unit_test(test_mat_mul_whole),
		cmocka_unit_test(test_mat_mul_acc),
		cmocka_unit_test(test_large_alloc),
		cmocka_unit_test(test_other_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
