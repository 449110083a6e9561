/*
 * gemm.c: the matrix product behind mat_mul and mat_mul_view, arranged for
 * the machine: blocks of A and B packed for the caches, and micro-kernels
 * that keep a tile of C in registers. One kernel is chosen when the first
 * product runs: AVX-512, else AVX2, else the portable one.
 *
 * Every kernel gives every cell the same bits, those the engine has always
 * given: the terms t = 0 … k−1 are taken in blocks of KB = 256; each block
 * is summed on its own, from 0, in the order of t, each product rounded
 * before it is added; and the block sums are added to C in order:
 *   C[i][j] = ((s_0 + s_1) + s_2) + …,  s_b = ((0 + A[i][256b]·B[256b][j]) + …).
 * For k ≤ 256 that is exactly mat_mul_naive's sum; for longer sums it may
 * differ from it in the last bits. A vector lane is one cell, so no order
 * changes with the vector width, and no kernel fuses a multiply and an add
 * (a·b + c rounded once would differ in the last bit; -ffp-contract=off
 * keeps the compiler from fusing them). On AMD Zen the multiplies and the
 * adds run on different pipes, so this costs no throughput there; on Intel
 * cores, where they share two, it halves the speed.
 *
 * So each x86 kernel comes twice: "avx512" and "avx2" as above (the exact
 * kernels), and "avx512fma" and "avx2fma", the fused ones, which take the
 * same terms in the same order and blocks but add each product with one
 * rounding, s = fma(a, b, s): every cell is then mat_mul_naive's sum with
 * fused multiply-adds (bit for bit up to KB terms, as tests/unit_kernels.c
 * checks against such a loop) and within the rounding of the exact one,
 * |fused − exact| ≤ 2k·2⁻⁵²·Σ|a·b| (under 1e-12 of the sum's size for the
 * lessons' k). A fused kernel is the default where the processor has one:
 * it is about twice as fast on Intel cores. ATTNVIZ_KERNEL=avx512 (or avx2,
 * portable) chooses an exact one; all fused kernels give the same bits, as
 * do all exact ones.
 */
#include "base/matrix.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_X86_KERNELS 1
#else
#define HAVE_X86_KERNELS 0
#endif

/*
 * A micro-kernel: the sums of one block of kc ≤ KB terms for the tile C
 * (MR × NR, row stride ldc), each from 0 in the order of t,
 *   s[r][q] = Σ_t a[t][r] · b[t][q]   for t = 0 … kc−1,
 * stored into C when first is MK_STORE (the first block), added to it
 * when MK_ADD: C[r][q] = C[r][q] + s[r][q]; with MK_CONT the sums start
 * from C instead of 0, C[r][q] = ((C[r][q] + a[0][r]·b[0][q]) + …), as
 * a naive loop adding into C one term at a time (mat_mul_acc). a is a packed MR-row strip of A
 * (a[t·MR + r], 64-byte aligned), b an NR-column strip of B with its rows ldb apart (b[t·ldb + q]):
 * packed (ldb = NR, aligned), or B itself where it lies (few rows of A: mat_mul_view). Returns 1 when a number it stored is not finite (NaN or
 * ±∞), from the registers as they are stored: x·0 is NaN exactly then.
 */
typedef int MicroKernel(int kc, const double *a, const double *b, size_t ldb, double *c, size_t ldc, int first);

/* A micro-kernel's first: what it does with the tile of C already there. */
enum { MK_ADD = 0, MK_STORE = 1, MK_CONT = 2 };

/*
 * One row of A times B, C (1 × c) = a (1 × k) · B (k × c, row stride ldb),
 * with B's rows read as they lie (no packing): the same sums as the
 * micro-kernels, terms in blocks of KB, each block from 0 in the order of t.
 */
typedef void RowKernel(int k, int c, const double *a, const double *B, size_t ldb, double *C);

typedef struct Kernel {
	const char *name;
	int fused;  /* 1: s = fma(a, b, s), each product added with one rounding; 0: s = s + a·b, two */
	int mr, nr; /* the tile of C held in registers */
	int mc;     /* rows of A packed at once (mc × KB, for L2) */
	int nc;     /* columns of B packed at once (KB × nc, for L3) */
	int (*supported)(void);
	MicroKernel *micro;
	RowKernel *row;
	MicroKernel *narrow; /* MR × nr_narrow (< NR), for a strip the edge of C leaves that narrow; or NULL */
	int nr_narrow;
	void (*pack_a)(int kc, const double *A, size_t lda, double *ap); /* MR whole rows of A as a strip, or NULL */
	void (*turn8)(int kc, const double *A, size_t lda, double *out, size_t ldo); /* 8 rows turned, or NULL */
} Kernel;

/* KB is part of the result (where the sums are split), the same for every kernel, never a tuning. */
enum { KB = 256, MR_MAX = 16, NR_MAX = 32 };

/* ---------------------------------------------------------------- one row */

/* Columns [j0, j0 + cols) of one block of kc terms from t0, one cell at a time: the edge of the row kernels. */
static void row_cells(int t0, int kc, int j0, int cols, const double *a, const double *B, size_t ldb, double *C)
{
	for (int j = j0; j < j0 + cols; j++) {
		double sum = 0.0;
		for (int t = t0; t < t0 + kc; t++)
			sum += a[t] * B[(size_t)t * ldb + (size_t)j];
		C[j] = t0 == 0 ? sum : C[j] + sum;
	}
}

#if defined(__GNUC__)
/* Eight doubles: an AVX-512 register, two of AVX2, four of SSE2 (the compiler splits it). */
typedef double v8d __attribute__((vector_size(64)));

/* (a macro: a function returning a 64-byte vector would have a different ABI with and without AVX-512) */
#define V8_ADD_PRODUCT(s, x, p)                                                                          \
	do {                                                                                             \
		v8d b_;                                                                                  \
		memcpy(&b_, (p), sizeof b_);                                                             \
		(s) = (s) + (x) * b_;                                                                    \
	} while (0)
#define V8_ADD_CELLS(s, p)                                                                               \
	do {                                                                                             \
		v8d c_;                                                                                  \
		memcpy(&c_, (p), sizeof c_);                                                             \
		(s) = c_ + (s);                                                                          \
	} while (0)

/*
 * The row product, 32 columns at a time held in four accumulators while
 * the block's kc rows of B stream past: B is read once, in order, with no
 * copy (packing B for a single row of A would copy all of it per product).
 * Inlined into each target below, so the vectors are that target's.
 */
static inline __attribute__((always_inline)) void row_body(int k, int c, const double *a, const double *B, size_t ldb,
                                                           double *C)
{
	for (int t0 = 0; t0 < k; t0 += KB) {
		const int kc = k - t0 < KB ? k - t0 : KB;
		int j0 = 0;
		for (; j0 + 32 <= c; j0 += 32) {
			const v8d z = { 0 };
			v8d s0 = z, s1 = z, s2 = z, s3 = z;
			const double *b = &B[(size_t)t0 * ldb + (size_t)j0];
			for (int t = t0; t < t0 + kc; t++, b += ldb) {
				const double x = a[t];
				V8_ADD_PRODUCT(s0, x, b);
				V8_ADD_PRODUCT(s1, x, b + 8);
				V8_ADD_PRODUCT(s2, x, b + 16);
				V8_ADD_PRODUCT(s3, x, b + 24);
			}
			if (t0 > 0) {
				V8_ADD_CELLS(s0, C + j0);
				V8_ADD_CELLS(s1, C + j0 + 8);
				V8_ADD_CELLS(s2, C + j0 + 16);
				V8_ADD_CELLS(s3, C + j0 + 24);
			}
			memcpy(C + j0, &s0, sizeof s0), memcpy(C + j0 + 8, &s1, sizeof s1);
			memcpy(C + j0 + 16, &s2, sizeof s2), memcpy(C + j0 + 24, &s3, sizeof s3);
		}
		row_cells(t0, kc, j0, c - j0, a, B, ldb, C);
	}
}

static void row_portable(int k, int c, const double *a, const double *B, size_t ldb, double *C)
{
	row_body(k, c, a, B, ldb, C);
}
#else
static void row_portable(int k, int c, const double *a, const double *B, size_t ldb, double *C)
{
	for (int t0 = 0; t0 < k; t0 += KB)
		row_cells(t0, k - t0 < KB ? k - t0 : KB, 0, c, a, B, ldb, C);
}
#endif

/* ---------------------------------------------------------------- portable */

#if defined(__GNUC__)
/* Two doubles at a time, in whatever the target has (SSE2, NEON, …) or in two scalars. */
typedef double v2d __attribute__((vector_size(16)));

static v2d v2_load(const double *p)
{
	v2d v;
	memcpy(&v, p, sizeof v);
	return v;
}

static void v2_store(double *p, v2d v)
{
	memcpy(p, &v, sizeof v);
}

/* 4 × 4: eight two-lane accumulators, twelve of the sixteen SSE registers. */
static int micro_portable(int kc, const double *a, const double *b, size_t ldb, double *c, size_t ldc, int first)
{
	const v2d z = { 0.0, 0.0 };
	v2d bad;
	v2d c00 = z, c01 = z, c10 = z, c11 = z, c20 = z, c21 = z, c30 = z, c31 = z;
	int t;

	if (first == MK_CONT) {
		c00 = v2_load(c), c01 = v2_load(c + 2);
		c10 = v2_load(c + ldc), c11 = v2_load(c + ldc + 2);
		c20 = v2_load(c + 2 * ldc), c21 = v2_load(c + 2 * ldc + 2);
		c30 = v2_load(c + 3 * ldc), c31 = v2_load(c + 3 * ldc + 2);
	}
	for (t = 0; t < kc; t++, a += 4, b += ldb) {
		const v2d b0 = v2_load(b), b1 = v2_load(b + 2);
		v2d ar;
		ar = (v2d){ a[0], a[0] };
		c00 = c00 + ar * b0, c01 = c01 + ar * b1;
		ar = (v2d){ a[1], a[1] };
		c10 = c10 + ar * b0, c11 = c11 + ar * b1;
		ar = (v2d){ a[2], a[2] };
		c20 = c20 + ar * b0, c21 = c21 + ar * b1;
		ar = (v2d){ a[3], a[3] };
		c30 = c30 + ar * b0, c31 = c31 + ar * b1;
	}
	if (first == MK_ADD) {
		c00 = v2_load(c) + c00, c01 = v2_load(c + 2) + c01;
		c10 = v2_load(c + ldc) + c10, c11 = v2_load(c + ldc + 2) + c11;
		c20 = v2_load(c + 2 * ldc) + c20, c21 = v2_load(c + 2 * ldc + 2) + c21;
		c30 = v2_load(c + 3 * ldc) + c30, c31 = v2_load(c + 3 * ldc + 2) + c31;
	}
	v2_store(c, c00), v2_store(c + 2, c01);
	v2_store(c + ldc, c10), v2_store(c + ldc + 2, c11);
	v2_store(c + 2 * ldc, c20), v2_store(c + 2 * ldc + 2, c21);
	v2_store(c + 3 * ldc, c30), v2_store(c + 3 * ldc + 2, c31);
	bad = ((c00 * 0.0 + c01 * 0.0) + (c10 * 0.0 + c11 * 0.0)) + ((c20 * 0.0 + c21 * 0.0) + (c30 * 0.0 + c31 * 0.0));
	return bad[0] + bad[1] != 0.0;
}
#else
/* Without GNU vectors: the same sums in plain C. */
static int micro_portable(int kc, const double *a, const double *b, size_t ldb, double *c, size_t ldc, int first)
{
	double acc[4][4], bad = 0.0;
	int t, r, q;

	for (r = 0; r < 4; r++)
		for (q = 0; q < 4; q++)
			acc[r][q] = first == MK_CONT ? c[(size_t)r * ldc + q] : 0.0;
	for (t = 0; t < kc; t++)
		for (r = 0; r < 4; r++)
			for (q = 0; q < 4; q++)
				acc[r][q] = acc[r][q] + a[t * 4 + r] * b[(size_t)t * ldb + q];
	for (r = 0; r < 4; r++)
		for (q = 0; q < 4; q++)
			c[(size_t)r * ldc + q] = first != MK_ADD ? acc[r][q] : c[(size_t)r * ldc + q] + acc[r][q],
			bad += c[(size_t)r * ldc + q] * 0.0;
	return bad != 0.0;
}
#endif

static int always(void)
{
	return 1;
}

/* ---------------------------------------------------------------- x86-64 */

#if HAVE_X86_KERNELS
/* Rows of a tile, spelled out so every accumulator is its own variable (a register). */
#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ROWS8(X) ROWS6(X) X(6) X(7)

/* AVX2, 6 × 8: twelve 4-lane accumulators, two of B, one of A, one product: all sixteen ymm. */
#define AVX2_ZERO(r) __m256d c##r##_0 = _mm256_setzero_pd(), c##r##_1 = c##r##_0;
#define AVX2_ADD_C(r)                                                                                    \
	c##r##_0 = _mm256_add_pd(_mm256_loadu_pd(c + r * ldc), c##r##_0),                                \
	c##r##_1 = _mm256_add_pd(_mm256_loadu_pd(c + r * ldc + 4), c##r##_1);
#define AVX2_LOAD_C(r) c##r##_0 = _mm256_loadu_pd(c + r * ldc), c##r##_1 = _mm256_loadu_pd(c + r * ldc + 4);
#define AVX2_STEP(r)                                                                                     \
	{                                                                                                \
		const __m256d ar = _mm256_broadcast_sd(a + r);                                           \
		c##r##_0 = _mm256_add_pd(c##r##_0, _mm256_mul_pd(ar, b0));                               \
		c##r##_1 = _mm256_add_pd(c##r##_1, _mm256_mul_pd(ar, b1));                               \
	}
#define AVX2_STORE(r) _mm256_storeu_pd(c + r * ldc, c##r##_0), _mm256_storeu_pd(c + r * ldc + 4, c##r##_1);
#define AVX2_BAD(r) bad = _mm256_add_pd(bad, _mm256_add_pd(_mm256_mul_pd(c##r##_0, zero), _mm256_mul_pd(c##r##_1, zero)));

/* An AVX2 micro-kernel NAME for target TARGET, each term added by STEP (AVX2_STEP: a multiply then an add; AVX2_FMA_STEP: fused). */
#define MICRO_AVX2(NAME, TARGET, STEP)                                                                   \
	__attribute__((target(TARGET))) static int NAME(int kc, const double *a, const double *b, size_t ldb,   \
	                                                double *c, size_t ldc, int first)                     \
	{                                                                                                \
		int t;                                                                                   \
		ROWS6(AVX2_ZERO)                                                                         \
		if (first == MK_CONT) {                                                                  \
			ROWS6(AVX2_LOAD_C)                                                               \
		}                                                                                        \
		for (t = 0; t < kc; t++, a += 6, b += ldb) {                                             \
			const __m256d b0 = _mm256_loadu_pd(b), b1 = _mm256_loadu_pd(b + 4);              \
			ROWS6(STEP)                                                                      \
		}                                                                                        \
		if (first == MK_ADD) {                                                                   \
			ROWS6(AVX2_ADD_C)                                                                \
		}                                                                                        \
		ROWS6(AVX2_STORE)                                                                        \
		{                                                                                        \
			const __m256d zero = _mm256_setzero_pd();                                         \
			__m256d bad = zero;                                                              \
			ROWS6(AVX2_BAD)                                                                  \
			return _mm256_movemask_pd(_mm256_cmp_pd(bad, bad, _CMP_UNORD_Q)) != 0;           \
		}                                                                                        \
	}

MICRO_AVX2(micro_avx2, "avx2", AVX2_STEP)

__attribute__((target("avx2"))) static void row_avx2(int k, int c, const double *a, const double *B, size_t ldb,
                                                        double *C)
{
	row_body(k, c, a, B, ldb, C);
}

static int has_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}

/*
 * AVX-512, 8 × 24: twenty-four 8-lane accumulators, three of B, one of A, products: 29 of 32 zmm. Each
 * row's macros come in two widths, W = 3 (24 columns) and W = 2 (16: the narrow kernel, for a strip of B
 * the edge of C cuts to 16 columns or fewer, as d_v = 64 = 24 + 24 + 16, so that no third of its products
 * are zeros); the same sums in the same order either way.
 */
#define AVX512_ZERO3(r) __m512d c##r##_0 = _mm512_setzero_pd(), c##r##_1 = c##r##_0, c##r##_2 = c##r##_0;
#define AVX512_ZERO2(r) __m512d c##r##_0 = _mm512_setzero_pd(), c##r##_1 = c##r##_0;
#define AVX512_ADD_C2(r)                                                                                 \
	c##r##_0 = _mm512_add_pd(_mm512_loadu_pd(c + r * ldc), c##r##_0),                               \
	c##r##_1 = _mm512_add_pd(_mm512_loadu_pd(c + r * ldc + 8), c##r##_1);
#define AVX512_ADD_C3(r) AVX512_ADD_C2(r) c##r##_2 = _mm512_add_pd(_mm512_loadu_pd(c + r * ldc + 16), c##r##_2);
#define AVX512_LOAD_C2(r) c##r##_0 = _mm512_loadu_pd(c + r * ldc), c##r##_1 = _mm512_loadu_pd(c + r * ldc + 8);
#define AVX512_LOAD_C3(r) AVX512_LOAD_C2(r) c##r##_2 = _mm512_loadu_pd(c + r * ldc + 16);
#define AVX512_LOAD_B2 const __m512d b0 = _mm512_loadu_pd(b), b1 = _mm512_loadu_pd(b + 8);
#define AVX512_LOAD_B3 AVX512_LOAD_B2 const __m512d b2 = _mm512_loadu_pd(b + 16);
#define AVX512_STEP2(r)                                                                                  \
	{                                                                                                \
		const __m512d ar = _mm512_set1_pd(a[r]);                                                 \
		c##r##_0 = _mm512_add_pd(c##r##_0, _mm512_mul_pd(ar, b0));                               \
		c##r##_1 = _mm512_add_pd(c##r##_1, _mm512_mul_pd(ar, b1));                               \
	}
#define AVX512_STEP3(r)                                                                                  \
	{                                                                                                \
		const __m512d ar = _mm512_set1_pd(a[r]);                                                 \
		c##r##_0 = _mm512_add_pd(c##r##_0, _mm512_mul_pd(ar, b0));                               \
		c##r##_1 = _mm512_add_pd(c##r##_1, _mm512_mul_pd(ar, b1));                               \
		c##r##_2 = _mm512_add_pd(c##r##_2, _mm512_mul_pd(ar, b2));                               \
	}
/*
 * The tile below's rows of C (the next one the loops write: mat_mul_view goes down a strip of B's columns)
 * fetched while this tile's terms are added: a large C (a head's n × m scores, 8 MB at n = 1024) is written
 * far from any cache, and each row's first store waited for its line. A prefetch never faults, past C too.
 * The forward pass at n = 1024: 100-101 → 93-95 ms (scores 25.5 → 22, the projections 33.6 → 31). The
 * AVX2 kernel's tiles (8 columns, one line a row) measured no faster with it, so it has none.
 */
#define AVX512_PF2(r)                                                                                    \
	_mm_prefetch((const char *)(c + (8 + r) * ldc), _MM_HINT_T0);                                    \
	_mm_prefetch((const char *)(c + (8 + r) * ldc + 8), _MM_HINT_T0);
#define AVX512_PF3(r) AVX512_PF2(r) _mm_prefetch((const char *)(c + (8 + r) * ldc + 16), _MM_HINT_T0);
#define AVX512_STORE2(r) _mm512_storeu_pd(c + r * ldc, c##r##_0), _mm512_storeu_pd(c + r * ldc + 8, c##r##_1);
#define AVX512_STORE3(r) AVX512_STORE2(r) _mm512_storeu_pd(c + r * ldc + 16, c##r##_2);
#define AVX512_BAD2(r) bad = _mm512_add_pd(bad, _mm512_add_pd(_mm512_mul_pd(c##r##_0, zero), _mm512_mul_pd(c##r##_1, zero)));
#define AVX512_BAD3(r) AVX512_BAD2(r) bad = _mm512_add_pd(bad, _mm512_mul_pd(c##r##_2, zero));

/*
 * An AVX-512 micro-kernel NAME, 8 × 8·W, each term added by STEP (AVX512_STEPW: a multiply then an add;
 * AVX512_FMA_STEPW: fused).
 */
#define MICRO_AVX512(NAME, W, STEP)                                                                      \
	__attribute__((target("avx512f"))) static int NAME(int kc, const double *a, const double *b, size_t ldb, \
	                                                   double *c, size_t ldc, int first)                  \
	{                                                                                                \
		int t;                                                                                   \
		ROWS8(AVX512_PF##W)                                                                      \
		ROWS8(AVX512_ZERO##W)                                                                    \
		if (first == MK_CONT) {                                                                  \
			ROWS8(AVX512_LOAD_C##W)                                                          \
		}                                                                                        \
		for (t = 0; t < kc; t++, a += 8, b += ldb) {                                             \
			AVX512_LOAD_B##W                                                                 \
			ROWS8(STEP)                                                                      \
		}                                                                                        \
		if (first == MK_ADD) {                                                                   \
			ROWS8(AVX512_ADD_C##W)                                                           \
		}                                                                                        \
		ROWS8(AVX512_STORE##W)                                                                   \
		{                                                                                        \
			const __m512d zero = _mm512_setzero_pd();                                         \
			__m512d bad = zero;                                                              \
			ROWS8(AVX512_BAD##W)                                                             \
			return _mm512_cmp_pd_mask(bad, bad, _CMP_UNORD_Q) != 0;                          \
		}                                                                                        \
	}

MICRO_AVX512(micro_avx512, 3, AVX512_STEP3)
MICRO_AVX512(micro_avx512_16, 2, AVX512_STEP2)

__attribute__((target("avx512f"))) static void row_avx512(int k, int c, const double *a, const double *B, size_t ldb,
                                                            double *C)
{
	row_body(k, c, a, B, ldb, C);
}

static int has_avx512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f");
}

/*
 * The fused kernels: the same tiles, terms and blocks as the two above, each
 * product added with one rounding (vfmadd), s = fma(a[t], b[t], s).
 */
#define AVX512_FMA_STEP2(r)                                                                              \
	{                                                                                                \
		const __m512d ar = _mm512_set1_pd(a[r]);                                                 \
		c##r##_0 = _mm512_fmadd_pd(ar, b0, c##r##_0);                                            \
		c##r##_1 = _mm512_fmadd_pd(ar, b1, c##r##_1);                                            \
	}
#define AVX512_FMA_STEP3(r)                                                                              \
	{                                                                                                \
		const __m512d ar = _mm512_set1_pd(a[r]);                                                 \
		c##r##_0 = _mm512_fmadd_pd(ar, b0, c##r##_0);                                            \
		c##r##_1 = _mm512_fmadd_pd(ar, b1, c##r##_1);                                            \
		c##r##_2 = _mm512_fmadd_pd(ar, b2, c##r##_2);                                            \
	}

MICRO_AVX512(micro_avx512fma, 3, AVX512_FMA_STEP3)
MICRO_AVX512(micro_avx512fma_16, 2, AVX512_FMA_STEP2)

/*
 * A fused row product NAME for target TARGET: row_body's way (four accumulators of W lanes, 4·W columns at a
 * time while the block's rows of B stream past; the edge cell by cell), each term added by a fused multiply-add.
 * V is the vector type and P the intrinsics' prefix (_mm512, _mm256).
 */
#define ROW_FUSED(NAME, TARGET, V, P, W)                                                                 \
	__attribute__((target(TARGET))) static void NAME(int k, int c, const double *a, const double *B,        \
	                                                 size_t ldb, double *C)                               \
	{                                                                                                \
		for (int t0 = 0; t0 < k; t0 += KB) {                                                     \
			const int kc = k - t0 < KB ? k - t0 : KB;                                        \
			int j0 = 0;                                                                      \
			for (; j0 + 4 * (W) <= c; j0 += 4 * (W)) {                                       \
				V s0 = P##_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;                      \
				const double *b = &B[(size_t)t0 * ldb + (size_t)j0];                    \
				for (int t = t0; t < t0 + kc; t++, b += ldb) {                           \
					const V x = P##_set1_pd(a[t]);                                   \
					s0 = P##_fmadd_pd(x, P##_loadu_pd(b), s0);                       \
					s1 = P##_fmadd_pd(x, P##_loadu_pd(b + (W)), s1);                 \
					s2 = P##_fmadd_pd(x, P##_loadu_pd(b + 2 * (W)), s2);             \
					s3 = P##_fmadd_pd(x, P##_loadu_pd(b + 3 * (W)), s3);             \
				}                                                                        \
				if (t0 > 0) {                                                            \
					s0 = P##_add_pd(P##_loadu_pd(C + j0), s0);                       \
					s1 = P##_add_pd(P##_loadu_pd(C + j0 + (W)), s1);                 \
					s2 = P##_add_pd(P##_loadu_pd(C + j0 + 2 * (W)), s2);             \
					s3 = P##_add_pd(P##_loadu_pd(C + j0 + 3 * (W)), s3);             \
				}                                                                        \
				P##_storeu_pd(C + j0, s0), P##_storeu_pd(C + j0 + (W), s1);              \
				P##_storeu_pd(C + j0 + 2 * (W), s2), P##_storeu_pd(C + j0 + 3 * (W), s3); \
			}                                                                                \
			for (int j = j0; j < c; j++) {                                                   \
				double sum = 0.0;                                                        \
				for (int t = t0; t < t0 + kc; t++)                                       \
					sum = __builtin_fma(a[t], B[(size_t)t * ldb + (size_t)j], sum);  \
				C[j] = t0 == 0 ? sum : C[j] + sum;                                       \
			}                                                                                \
		}                                                                                        \
	}

ROW_FUSED(row_avx512fma, "avx512f", __m512d, _mm512, 8)

#define AVX2_FMA_STEP(r)                                                                                 \
	{                                                                                                \
		const __m256d ar = _mm256_broadcast_sd(a + r);                                           \
		c##r##_0 = _mm256_fmadd_pd(ar, b0, c##r##_0);                                            \
		c##r##_1 = _mm256_fmadd_pd(ar, b1, c##r##_1);                                            \
	}

MICRO_AVX2(micro_avx2fma, "avx2,fma", AVX2_FMA_STEP)

ROW_FUSED(row_avx2fma, "avx2,fma", __m256d, _mm256, 4)

static int has_avx2fma(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

/*
 * Packing MR whole rows of A (not transposed) as a strip, ap[t·MR + r] = A[r][t]: term by term, the MR
 * numbers of a term stored side by side (one row at a time, every store went to another cache line).
 * Only copies: no number changes. The weighted sums pack all of a head's weights this way.
 */
#define PACK_A_ROWS(NAME, MR)                                                                            \
	static void NAME(int kc, const double *A, size_t lda, double *ap)                              \
	{                                                                                                \
		for (int t = 0; t < kc; t++)                                                             \
			for (int r = 0; r < (MR); r++)                                                   \
				ap[(size_t)t * (MR) + (size_t)r] = A[(size_t)r * lda + (size_t)t];      \
	}
PACK_A_ROWS(pack_a4, 4)
PACK_A_ROWS(pack_a6, 6)

#if HAVE_X86_KERNELS
/*
 * Eight rows of A turned with AVX-512, out[t·ldo + r] = A[r·lda + t] for r < 8, t < kc: an 8 × 8 block at a
 * time, turned in registers. A's strip for the AVX-512 kernels (ldo = MR = 8), and eight columns at a time
 * of a strip of B read transposed (ldo = NR: pack_b's Kᵀ, Wᵀ).
 */
__attribute__((target("avx512f"))) static void turn8_avx512(int kc, const double *A, size_t lda, double *out, size_t ldo)
{
	int t = 0;

	for (; t + 8 <= kc; t += 8) {
		const double *s = A + t;
		__m512d r[8], u[8], v[8];
		for (int i = 0; i < 8; i++)
			r[i] = _mm512_loadu_pd(s + (size_t)i * lda);
		/* pairs of rows interleaved: u[2p] = A[2p][0] A[2p+1][0] A[2p][2] A[2p+1][2] …, u[2p+1] the odd terms */
		for (int p = 0; p < 4; p++) {
			u[2 * p] = _mm512_unpacklo_pd(r[2 * p], r[2 * p + 1]);
			u[2 * p + 1] = _mm512_unpackhi_pd(r[2 * p], r[2 * p + 1]);
		}
		/* then the 128-bit lanes: v holds terms {0,4}, {1,5}, {2,6}, {3,7} of rows 0-3 and of rows 4-7 */
		v[0] = _mm512_shuffle_f64x2(u[0], u[2], 0x88), v[1] = _mm512_shuffle_f64x2(u[1], u[3], 0x88);
		v[2] = _mm512_shuffle_f64x2(u[0], u[2], 0xdd), v[3] = _mm512_shuffle_f64x2(u[1], u[3], 0xdd);
		v[4] = _mm512_shuffle_f64x2(u[4], u[6], 0x88), v[5] = _mm512_shuffle_f64x2(u[5], u[7], 0x88);
		v[6] = _mm512_shuffle_f64x2(u[4], u[6], 0xdd), v[7] = _mm512_shuffle_f64x2(u[5], u[7], 0xdd);
		double *d = &out[(size_t)t * ldo];
		for (int q = 0; q < 4; q++) {
			_mm512_storeu_pd(d + ldo * (size_t)q, _mm512_shuffle_f64x2(v[q], v[q + 4], 0x88));       /* term q */
			_mm512_storeu_pd(d + ldo * (size_t)(q + 4), _mm512_shuffle_f64x2(v[q], v[q + 4], 0xdd)); /* term q + 4 */
		}
	}
	for (; t < kc; t++)
		for (int r = 0; r < 8; r++)
			out[(size_t)t * ldo + (size_t)r] = A[(size_t)r * lda + (size_t)t];
}

static void pack_a8_avx512(int kc, const double *A, size_t lda, double *ap)
{
	turn8_avx512(kc, A, lda, ap, 8);
}
#endif

/* Fastest first: the first one the processor supports is used. */
static const Kernel kernels[] = {
#if HAVE_X86_KERNELS
	{ "avx512fma", 1, 8, 24, 192, 2040, has_avx512, micro_avx512fma, row_avx512fma, micro_avx512fma_16, 16, pack_a8_avx512, turn8_avx512 },
	{ "avx512", 0, 8, 24, 192, 2040, has_avx512, micro_avx512, row_avx512, micro_avx512_16, 16, pack_a8_avx512, turn8_avx512 },
	{ "avx2fma", 1, 6, 8, 192, 2048, has_avx2fma, micro_avx2fma, row_avx2fma, NULL, 0, pack_a6, NULL },
	{ "avx2", 0, 6, 8, 192, 2048, has_avx2, micro_avx2, row_avx2, NULL, 0, pack_a6, NULL },
#endif
	{ "portable", 0, 4, 4, 128, 2048, always, micro_portable, row_portable, NULL, 0, pack_a4, NULL },
};
enum { KERNEL_COUNT = sizeof kernels / sizeof kernels[0] };

static const Kernel *active;
static pthread_once_t chosen = PTHREAD_ONCE_INIT;

static int find_kernel(const char *name)
{
	int i;

	for (i = 0; i < KERNEL_COUNT; i++)
		if (strcmp(kernels[i].name, name) == 0)
			return i;
	return -1;
}

/* ATTNVIZ_KERNEL=NAME picks one (when the processor has it); else the fastest. */
static void choose_kernel(void)
{
	const char *want = getenv("ATTNVIZ_KERNEL");
	int i = want != NULL ? find_kernel(want) : -1;

	if (i >= 0 && kernels[i].supported()) {
		active = &kernels[i];
		return;
	}
	for (i = 0; i < KERNEL_COUNT; i++)
		if (kernels[i].supported()) {
			active = &kernels[i];
			return;
		}
}

static const Kernel *kernel(void)
{
	pthread_once(&chosen, choose_kernel);
	return active;
}

int mat_kernel_count(void)
{
	return KERNEL_COUNT;
}

const char *mat_kernel_name(int i)
{
	return i >= 0 && i < KERNEL_COUNT ? kernels[i].name : NULL;
}

int mat_kernel_supported(int i)
{
	return i >= 0 && i < KERNEL_COUNT && kernels[i].supported();
}

const char *mat_kernel_active(void)
{
	return kernel()->name;
}

int mat_kernel_fused(void)
{
	return kernel()->fused;
}

int mat_kernel_use(const char *name)
{
	int i = find_kernel(name);

	kernel(); /* the once-only choice is made, so it cannot undo this one later */
	if (i < 0 || !kernels[i].supported())
		return -1;
	active = &kernels[i];
	return 0;
}

/* ---------------------------------------------------------------- packing */

/*
 * Strip s of packed B holds columns [s·NR, s·NR + NR) of the block B[t0 … t0+kc)[j0 … j0+nc):
 * bp[s·kc·NR + t·NR + q] = B[t0 + t][j0 + s·NR + q], 0 past the edge.
 * With b_trans, B[t][j] is read as Bt[j][t] (row stride ldb), so Q·Kᵀ needs no copy of K.
 */
static void pack_b(const Kernel *K, int kc, int nc, const double *B, size_t ldb, int b_trans, int t0, int j0,
                   double *bp)
{
	const int nr = K->nr;
	int s, t, q;

	if (!b_trans) {
		/*
		 * Eight rows of the block at a time, along them strip by strip: B is read as it lies, eight
		 * rows side by side (a row of W_1 is 12 KiB at d_ff = 1536; one strip at a time down all
		 * kc rows, every row was a miss no prefetcher follows), and each strip gets eight rows
		 * in one piece (one row at a time, the strips kc·NR·8 bytes apart, a multiple of 4 KiB, all
		 * fell in one set of the L1 cache)
		 */
		for (int tb = 0; tb < kc; tb += 8) {
			const int te = tb + 8 < kc ? tb + 8 : kc;
			for (s = 0; s * nr < nc; s++) {
				const int cols = nc - s * nr < nr ? nc - s * nr : nr;
				for (t = tb; t < te; t++) {
					const double *src = &B[(size_t)(t0 + t) * ldb + j0 + (size_t)s * nr];
					double *dst = &bp[(size_t)s * kc * nr + (size_t)t * nr];
					for (q = 0; q < cols; q++)
						dst[q] = src[q];
					for (; q < nr; q++)
						dst[q] = 0.0;
				}
			}
		}
		return;
	}
	for (s = 0; s * nr < nc; s++) {
		double *strip = &bp[(size_t)s * kc * nr];
		const int cols = nc - s * nr < nr ? nc - s * nr : nr;
		q = 0;
		if (K->turn8 != NULL) /* eight of Bt's rows at a time, turned in registers */
			for (; q + 8 <= cols; q += 8)
				K->turn8(kc, &B[(size_t)(j0 + s * nr + q) * ldb + t0], ldb, &strip[q], (size_t)nr);
		for (; q < cols; q++) {
			const double *src = &B[(size_t)(j0 + s * nr + q) * ldb + t0];
			for (t = 0; t < kc; t++)
				strip[(size_t)t * nr + q] = src[t];
		}
		if (cols < nr)
			for (t = 0; t < kc; t++)
				for (q = cols; q < nr; q++)
					strip[(size_t)t * nr + q] = 0.0;
	}
}

/*
 * Rows [i0, i0 + rows) of A, terms [t0, t0 + kc), as one MR-row strip: ap[t·MR + r], 0 past the edge.
 * With a_trans, A[i][t] is read as At[t][i] (row stride lda), so Xᵀ·dQ needs no copy of X.
 */
static void pack_a_strip(const Kernel *K, int kc, int rows, const double *A, size_t lda, int a_trans, int i0, int t0,
                         double *ap)
{
	const int mr = K->mr;
	int r, t;

	if (a_trans) {
		for (t = 0; t < kc; t++) {
			const double *src = &A[(size_t)(t0 + t) * lda + i0];
			for (r = 0; r < rows; r++)
				ap[(size_t)t * mr + r] = src[r];
			for (; r < mr; r++)
				ap[(size_t)t * mr + r] = 0.0;
		}
		return;
	}
	if (rows == mr && K->pack_a != NULL) {
		K->pack_a(kc, &A[(size_t)i0 * lda + t0], lda, ap);
		return;
	}
	for (r = 0; r < rows; r++) {
		const double *src = &A[(size_t)(i0 + r) * lda + t0];
		for (t = 0; t < kc; t++)
			ap[(size_t)t * mr + r] = src[t];
	}
	for (; r < mr; r++)
		for (t = 0; t < kc; t++)
			ap[(size_t)t * mr + r] = 0.0;
}

/* ---------------------------------------------------------------- scratch */

/*
 * The packed blocks, kept per thread from one product to the next (no page
 * faults on every call), and freed when the thread ends: the block starts
 * with its size in doubles, the packed numbers follow at the next cache line.
 */
enum { SCRATCH_HEAD = 64 / sizeof(double) };

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_ok;

static void scratch_init(void)
{
	scratch_ok = pthread_key_create(&scratch_key, free) == 0;
}

static double *scratch_get(size_t count)
{
	double *block;

	pthread_once(&scratch_once, scratch_init);
	if (!scratch_ok)
		return NULL;
	block = pthread_getspecific(scratch_key);
	if (block == NULL || count > (size_t)block[0]) {
		/* whole cache lines; aligned_alloc wants a size that is a multiple of the alignment */
		const size_t bytes = ((count + SCRATCH_HEAD) * sizeof(double) + 63) / 64 * 64;
		double *grown = aligned_alloc(64, bytes);
		if (grown == NULL || pthread_setspecific(scratch_key, grown) != 0) {
			free(grown);
			return NULL;
		}
		free(block);
		block = grown;
		block[0] = (double)(bytes / sizeof(double) - SCRATCH_HEAD);
	}
	return block + SCRATCH_HEAD;
}

static size_t round_up(size_t x, size_t to)
{
	return (x + to - 1) / to * to;
}

/* ---------------------------------------------------------------- counting the work */

/*
 * The multiply-adds the products below have been asked for on this thread
 * (mat_madds): each cell's terms that are not known zeros, so a product with
 * lower counts only the terms up to (or, transposed, from) the diagonal. What
 * `attnviz --bench` divides by the machine's best dgemm speed for a floor.
 */
static _Thread_local unsigned long long madds;

/*
 * An r × c product of k terms: r·k·c; with lower, row i has min(i + 1, k)
 * terms (A as it is), or max(k − i, 0) (A transposed, a_trans).
 */
static void count_madds(int r, int k, int c, int lower, int a_trans)
{
	unsigned long long terms;

	if (r <= 0 || k <= 0 || c <= 0)
		return;
	if (!lower) {
		terms = (unsigned long long)r * (unsigned long long)k;
	} else if (!a_trans) {
		const unsigned long long m = (unsigned long long)(r < k ? r : k);
		terms = m * (m + 1) / 2 + (unsigned long long)(r - (int)m) * (unsigned long long)k;
	} else {
		const unsigned long long m = (unsigned long long)(r < k ? r : k);
		terms = m * (unsigned long long)k - m * (m - 1) / 2;
	}
	madds += terms * (unsigned long long)c;
}

unsigned long long mat_madds(void)
{
	return madds;
}

/* ---------------------------------------------------------------- the product */

/* Out of memory for the packed blocks: the same sums (blocks of KB terms), one cell at a time. */
static int mul_unpacked(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb,
                        int b_trans, double *C, size_t ldc, int lower)
{
	const int fused = kernel()->fused;
	int i, j, t, t0, bad = 0;

	for (i = 0; i < r; i++) {
		const int kend = lower && i + 1 < k ? i + 1 : k;
		for (j = 0; j < c; j++) {
			double cell = 0.0;
			for (t0 = 0; t0 < kend; t0 += KB) {
				double sum = 0.0;
				for (t = t0; t < kend && t < t0 + KB; t++) {
					const double x = A[(size_t)i * lda + t],
					             y = b_trans ? B[(size_t)j * ldb + t] : B[(size_t)t * ldb + j];
					sum = fused ? fma(x, y, sum) : sum + x * y;
				}
				cell = t0 == 0 ? sum : cell + sum;
			}
			C[(size_t)i * ldc + j] = cell;
		}
		bad |= mat_nonfinite(&C[(size_t)i * ldc], (size_t)c);
	}
	return bad;
}

/* A tile cut short by the edge of C (rows × cols < MR × nr, nr the micro-kernel mk's width): mk works on a copy. 1: a cell is not finite. */
static int tile_edge(MicroKernel *mk, int nr, int kc, const double *ap, const double *bp, size_t bstride, double *c,
                     size_t ldc, int first, int rows, int cols)
{
	double tile[MR_MAX * NR_MAX] __attribute__((aligned(64)));
	int r, bad = 0;

	if (first != MK_STORE)
		for (r = 0; r < rows; r++)
			memcpy(&tile[r * nr], &c[(size_t)r * ldc], (size_t)cols * sizeof *c);
	mk(kc, ap, bp, bstride, tile, (size_t)nr, first);
	for (r = 0; r < rows; r++) {
		memcpy(&c[(size_t)r * ldc], &tile[r * nr], (size_t)cols * sizeof *c);
		bad |= mat_nonfinite(&tile[r * nr], (size_t)cols);
	}
	return bad;
}

/*
 * The tile of C at c (rows × cols ≤ MR × NR) from a packed strip of A and a strip of B (rows bstride apart):
 * the kernel's micro-kernel, or its narrow one for a strip of B the edge leaves that narrow; on C itself when
 * the tile fills it, else on a copy (tile_edge). The same sums either way. 1: a cell is not finite.
 */
static int tile(const Kernel *K, int kc, const double *ap, const double *bp, size_t bstride, double *c, size_t ldc,
                int first, int rows, int cols)
{
	MicroKernel *mk = K->micro;
	int nr = K->nr;

	if (K->narrow != NULL && cols <= K->nr_narrow)
		mk = K->narrow, nr = K->nr_narrow;
	if (rows == K->mr && cols == nr)
		return mk(kc, ap, bp, bstride, c, ldc, first);
	return tile_edge(mk, nr, kc, ap, bp, bstride, c, ldc, first, rows, cols);
}

/*
 * Whether a strip of B cols wide is read where it lies by a product of few rows (direct): a whole strip of
 * NR columns, or one exactly as wide as the narrow kernel's (a head's last 16 of 64), which reads no more.
 * A narrower one is packed with its zeros, since the kernel reads past it.
 */
static int b_in_place(const Kernel *K, int cols)
{
	return cols == K->nr || (K->narrow != NULL && cols == K->nr_narrow);
}

int mat_mul_view(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb, int b_trans,
                 double *C, size_t ldc, int lower)
{
	const Kernel *K = kernel();
	const int mr = K->mr, nr = K->nr;
	size_t bp_count, ap_count;
	double *bp, *ap;
	int t0, j0, i0, bad = 0, direct;

	if (r <= 0 || c <= 0)
		return 0;
	count_madds(r, k, c, lower, 0);
	if (k <= 0) {
		for (i0 = 0; i0 < r; i0++)
			memset(&C[(size_t)i0 * ldc], 0, (size_t)c * sizeof *C);
		return 0;
	}
	if (r == 1 && !b_trans && !lower) {
		/* one row (a decoding step): B streamed as it lies */
		K->row(k, c, A, B, ldb, C);
		return mat_nonfinite(C, (size_t)c);
	}
	/*
	 * A few rows of A (a short prompt through a model's weights): B is read where it lies, its rows a
	 * stride apart, since packing it would copy all of it for a product that reads it only r / MR times
	 * (32 × 576 · 576 × 1536: 1.3-1.4× as fast; 8 rows 2×; even at 6·MR, 1.2×; at 8·MR no gain). The same
	 * numbers: only where the micro-kernel finds them changes.
	 */
	direct = !b_trans && r <= 6 * mr;
	bp_count = (size_t)KB * round_up((size_t)(c < K->nc ? c : K->nc), (size_t)nr);
	ap_count = (size_t)KB * round_up((size_t)(r < K->mc ? r : K->mc), (size_t)mr);
	bp = scratch_get(bp_count + ap_count);
	if (bp == NULL)
		return mul_unpacked(r, k, c, A, lda, B, ldb, b_trans, C, ldc, lower);
	ap = bp + bp_count;

	/* Blocks of KB terms in order: each one's sums are added to what the blocks before left in C. */
	for (t0 = 0; t0 < k; t0 += KB) {
		const int kc = k - t0 < KB ? k - t0 : KB;
		const int first = t0 == 0 ? MK_STORE : MK_ADD;
		for (j0 = 0; j0 < c; j0 += K->nc) {
			const int nc = c - j0 < K->nc ? c - j0 : K->nc;
			if (!direct)
				pack_b(K, kc, nc, B, ldb, b_trans, t0, j0, bp);
			else if (nc % nr && !b_in_place(K, nc % nr)) /* a last strip the edge cuts short: packed with its zeros */
				pack_b(K, kc, nc % nr, B, ldb, 0, t0, j0 + nc / nr * nr, bp);
			for (i0 = 0; i0 < r; i0 += K->mc) {
				const int mc = r - i0 < K->mc ? r - i0 : K->mc;
				int ir, jr;
				/*
				 * lower: row i of A is 0 from column i+1 on, so an MR-row strip from
				 * row i needs the terms t < i + MR only (the others are exact zeros,
				 * which change no finite sum). A strip wholly past them is skipped;
				 * never in the first block, so C is always written.
				 */
				for (ir = 0; ir < mc; ir += mr) {
					const int rows = mc - ir < mr ? mc - ir : mr;
					const int need = lower ? i0 + ir + mr - t0 : kc;
					if (need > 0)
						pack_a_strip(K, need < kc ? need : kc, rows, A, lda, 0, i0 + ir, t0,
						             &ap[(size_t)ir * kc]);
				}
				for (jr = 0; jr < nc; jr += nr) {
					const int cols = nc - jr < nr ? nc - jr : nr;
					const double *bs = !direct              ? &bp[(size_t)jr * kc]
					                   : b_in_place(K, cols) ? &B[(size_t)t0 * ldb + (size_t)(j0 + jr)]
					                                         : bp;
					const size_t bstride = direct && b_in_place(K, cols) ? ldb : (size_t)nr;
					for (ir = 0; ir < mc; ir += mr) {
						const int rows = mc - ir < mr ? mc - ir : mr;
						const int need = lower ? i0 + ir + mr - t0 : kc;
						const int kend = need < kc ? need : kc;
						double *ct = &C[(size_t)(i0 + ir) * ldc + j0 + jr];
						if (kend <= 0)
							continue;
						/* a sum once not finite stays so: checking every block's store is checking the last */
						bad |= tile(K, kend, &ap[(size_t)ir * kc], bs, bstride, ct, ldc, first, rows, cols);
					}
				}
			}
		}
	}
	return bad;
}

/* ---------------------------------------------------------------- sums in one chain */

/*
 * The terms [*from, *to) of the block t0 … t0 + kc − 1 that a strip of MR
 * rows from row i reads: all of them, or with lower (A as stored is 0 past its
 * diagonal) those its rows reach: t < i + MR when A is read as it is (row i
 * ends at column i), t ≥ i when it is read transposed (row i of Aᵀ, column i
 * of A, starts at row i). The others are exact zeros.
 */
static void strip_terms(int lower, int a_trans, int i, int mr, int t0, int kc, int *from, int *to)
{
	*from = 0;
	*to = kc;
	if (lower && a_trans)
		*from = i - t0 < 0 ? 0 : i - t0 < kc ? i - t0 : kc;
	else if (lower)
		*to = i + mr - t0 < 0 ? 0 : i + mr - t0 < kc ? i + mr - t0 : kc;
}

/*
 * C (r × c, ldc) with each cell's terms added in the order of t in one chain
 * (no blocks of KB): the first block of KB terms with first0 (MK_CONT, or
 * MK_ADD when k ≤ KB), every later one continuing from what C holds. With
 * lower (first0 MK_CONT only), a strip skips the terms strip_terms leaves out:
 * an exact 0 added to a chain changes it only if the chain is −0, and one
 * from +0 never is. 0, or -1 when the packed blocks cannot be had.
 */
static int mul_chain(int r, int k, int c, const double *A, size_t lda, int a_trans, const double *B, size_t ldb,
                     int b_trans, double *C, size_t ldc, int first0, int lower)
{
	const Kernel *K = kernel();
	const int mr = K->mr, nr = K->nr;
	const size_t bp_count = (size_t)KB * round_up((size_t)(c < K->nc ? c : K->nc), (size_t)nr);
	const size_t ap_count = (size_t)KB * round_up((size_t)(r < K->mc ? r : K->mc), (size_t)mr);
	double *bp = scratch_get(bp_count + ap_count), *ap;
	const int direct = !b_trans && r <= 6 * mr; /* few rows: B read where it lies, as in mat_mul_view */

	if (bp == NULL)
		return -1;
	ap = bp + bp_count;
	for (int t0 = 0; t0 < k; t0 += KB) {
		const int kc = k - t0 < KB ? k - t0 : KB;
		const int first = t0 == 0 ? first0 : MK_CONT;
		for (int j0 = 0; j0 < c; j0 += K->nc) {
			const int nc = c - j0 < K->nc ? c - j0 : K->nc;
			if (!direct)
				pack_b(K, kc, nc, B, ldb, b_trans, t0, j0, bp);
			else if (nc % nr && !b_in_place(K, nc % nr)) /* a last strip the edge cuts short: packed with its zeros */
				pack_b(K, kc, nc % nr, B, ldb, 0, t0, j0 + nc / nr * nr, bp);
			for (int i0 = 0; i0 < r; i0 += K->mc) {
				const int mc = r - i0 < K->mc ? r - i0 : K->mc;
				int from, to;
				/* each strip's terms packed at their own places (t-major, MR numbers a term) */
				for (int ir = 0; ir < mc; ir += mr) {
					strip_terms(lower, a_trans, i0 + ir, mr, t0, kc, &from, &to);
					if (to > from)
						pack_a_strip(K, to - from, mc - ir < mr ? mc - ir : mr, A, lda, a_trans, i0 + ir,
						             t0 + from, &ap[(size_t)ir * kc + (size_t)from * mr]);
				}
				for (int jr = 0; jr < nc; jr += nr) {
					const int cols = nc - jr < nr ? nc - jr : nr;
					for (int ir = 0; ir < mc; ir += mr) {
						const int rows = mc - ir < mr ? mc - ir : mr;
						double *ct = &C[(size_t)(i0 + ir) * ldc + j0 + jr];
						const double *as, *bs;
						strip_terms(lower, a_trans, i0 + ir, mr, t0, kc, &from, &to);
						if (to <= from) /* every term exactly 0: the chain goes on unchanged */
							continue;
						as = &ap[(size_t)ir * kc + (size_t)from * mr];
						if (!direct)
							bs = &bp[(size_t)jr * kc + (size_t)from * nr];
						else if (b_in_place(K, cols))
							bs = &B[(size_t)(t0 + from) * ldb + (size_t)(j0 + jr)];
						else
							bs = &bp[(size_t)from * nr];
						tile(K, to - from, as, bs, direct && b_in_place(K, cols) ? ldb : (size_t)nr, ct, ldc,
						     first, rows, cols);
					}
				}
			}
		}
	}
	return 0;
}

void mat_mul_acc(int r, int k, int c, const double *A, size_t lda, int a_trans, const double *B, size_t ldb,
                 int b_trans, double *C, size_t ldc, int how)
{
	Mat sum = { 0 };

	if (r <= 0 || c <= 0)
		return;
	if (how == MAT_CONTINUE) { /* (counted there) */
		mat_mul_continue(r, k, c, A, lda, a_trans, B, ldb, b_trans, C, ldc, 0);
		return;
	}
	count_madds(r, k, c, 0, 0);
	if (k > 0 && k <= KB) {
		/* one block: its sum from 0, added to C */
		if (mul_chain(r, k, c, A, lda, a_trans, B, ldb, b_trans, C, ldc, MK_ADD, 0) == 0)
			return;
	} else if (k > 0 && mat_alloc(&sum, r, c) == 0) {
		/* the sums in one chain from 0 (a zeroed matrix continued), then added to C */
		if (mul_chain(r, k, c, A, lda, a_trans, B, ldb, b_trans, sum.a, (size_t)c, MK_CONT, 0) == 0) {
			for (int i = 0; i < r; i++)
				for (int j = 0; j < c; j++)
					C[(size_t)i * ldc + j] += sum.a[(size_t)i * c + j];
			mat_free(&sum);
			return;
		}
		mat_free(&sum);
	}
	/* k = 0, or out of memory: the definition itself */
	mat_mul_acc_naive(r, k, c, A, lda, a_trans, B, ldb, b_trans, C, ldc, how);
}

/* ---------------------------------------------------------------- dot products and scaled rows */

/*
 * The one-row loops a pass writes by hand where a product's bits must be
 * mat_mul_view's (a decoding step's q·k and Σ w·v beside the whole
 * computation's): each product added as the active kernel adds it, two
 * roundings (exact) or one (fused).
 */
/*
 * s[j] = q · keys[j] for j < count, each sum from 0 in the order of the d terms, each term added by ADD:
 * eight keys side by side, so eight chains of adds run at once instead of one waiting on itself.
 */
#define DOTS(NAME, ATTR, ADD)                                                                            \
	ATTR static void NAME(const double *q, const double *keys, size_t ld, int d, int count, double *s)     \
	{                                                                                                \
		int j = 0;                                                                               \
		for (; j + 8 <= count; j += 8) {                                                         \
			const double *k0 = keys + (size_t)j * ld;                                        \
			double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0;   \
			for (int c = 0; c < d; c++) {                                                    \
				const double x = q[c];                                                   \
				s0 = ADD(s0, x, k0[c]), s1 = ADD(s1, x, k0[ld + c]);                     \
				s2 = ADD(s2, x, k0[2 * ld + c]), s3 = ADD(s3, x, k0[3 * ld + c]);        \
				s4 = ADD(s4, x, k0[4 * ld + c]), s5 = ADD(s5, x, k0[5 * ld + c]);        \
				s6 = ADD(s6, x, k0[6 * ld + c]), s7 = ADD(s7, x, k0[7 * ld + c]);        \
			}                                                                                \
			s[j] = s0, s[j + 1] = s1, s[j + 2] = s2, s[j + 3] = s3;                          \
			s[j + 4] = s4, s[j + 5] = s5, s[j + 6] = s6, s[j + 7] = s7;                      \
		}                                                                                        \
		for (; j < count; j++) {                                                                 \
			const double *k = keys + (size_t)j * ld;                                         \
			double sum = 0.0;                                                                \
			for (int c = 0; c < d; c++)                                                      \
				sum = ADD(sum, q[c], k[c]);                                              \
			s[j] = sum;                                                                      \
		}                                                                                        \
	}
#define ADD_EXACT(s, x, y) ((s) + (x) * (y))
#define ADD_FUSED(s, x, y) __builtin_fma((x), (y), (s))

DOTS(dots_exact, , ADD_EXACT)

static void axpy_exact(int n, double w, const double *v, double *out)
{
	for (int c = 0; c < n; c++)
		out[c] += w * v[c];
}

#if HAVE_X86_KERNELS
/* (a fused kernel runs only where the processor has FMA and AVX2) */
DOTS(dots_fused, __attribute__((target("avx2,fma"))), ADD_FUSED)

__attribute__((target("avx2,fma"))) static void axpy_fused(int n, double w, const double *v, double *out)
{
	const __m256d wv = _mm256_set1_pd(w);
	int c = 0;

	for (; c + 4 <= n; c += 4)
		_mm256_storeu_pd(out + c, _mm256_fmadd_pd(wv, _mm256_loadu_pd(v + c), _mm256_loadu_pd(out + c)));
	for (; c < n; c++)
		out[c] = __builtin_fma(w, v[c], out[c]);
}
#else
#define ADD_FMA(s, x, y) fma((x), (y), (s))
DOTS(dots_fused, , ADD_FMA)

static void axpy_fused(int n, double w, const double *v, double *out)
{
	for (int c = 0; c < n; c++)
		out[c] = fma(w, v[c], out[c]);
}
#endif

void mat_dots(const double *q, const double *keys, size_t ld, int d, int count, double *s)
{
	count_madds(count, d, 1, 0, 0);
	(kernel()->fused ? dots_fused : dots_exact)(q, keys, ld, d, count, s);
}

void mat_dots_exact(const double *q, const double *keys, size_t ld, int d, int count, double *s)
{
	count_madds(count, d, 1, 0, 0);
	dots_exact(q, keys, ld, d, count, s);
}

void mat_axpy(int n, double w, const double *v, double *out)
{
	count_madds(1, 1, n, 0, 0);
	(kernel()->fused ? axpy_fused : axpy_exact)(n, w, v, out);
}

/*
 * Σ x[j], j < n. Exact: from 0, left to right. Fused: eight running sums
 * side by side, x[j] into sum j mod 8, joined as ((s0 + s4) + (s1 + s5)) +
 * ((s2 + s6) + (s3 + s7)): eight adds in flight instead of one chain, whose
 * 4-cycle latency per term was a sixth of a softmax at n = 1024.
 */
static double sum_exact(int n, const double *x)
{
	double s = 0.0;

	for (int j = 0; j < n; j++)
		s += x[j];
	return s;
}

static double sum_fused(int n, const double *x)
{
	double l[8] = { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 };
	int j = 0;

	for (; j + 8 <= n; j += 8)
		for (int t = 0; t < 8; t++)
			l[t] += x[j + t];
	for (; j < n; j++)
		l[j & 7] += x[j];
	return ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
}

double mat_sum(int n, const double *x)
{
	return (kernel()->fused ? sum_fused : sum_exact)(n, x);
}

/*
 * The largest of x[0 … n), NaN skipped (−∞ when there is none), as the loop
 * m = −∞; m = x > m ? x : m one at a time keeps it, to the bit: four running
 * maxima side by side (MAXPD's own rule), the same whatever the kernel. Their
 * order may pick +0 where the loop picks −0, the only two numbers that
 * compare equal with other bits, so a zero maximum is the loop's own.
 */
double mat_max(int n, const double *x)
{
	double max = -INFINITY;
	int j = 0;
#if HAVE_X86_KERNELS
	__m128d m0 = _mm_set1_pd(-INFINITY), m1 = m0, m2 = m0, m3 = m0;

	for (; j + 8 <= n; j += 8) {
		m0 = _mm_max_pd(_mm_loadu_pd(x + j), m0), m1 = _mm_max_pd(_mm_loadu_pd(x + j + 2), m1);
		m2 = _mm_max_pd(_mm_loadu_pd(x + j + 4), m2), m3 = _mm_max_pd(_mm_loadu_pd(x + j + 6), m3);
	}
	m0 = _mm_max_pd(_mm_max_pd(m0, m1), _mm_max_pd(m2, m3));
	max = _mm_cvtsd_f64(_mm_max_sd(m0, _mm_unpackhi_pd(m0, m0)));
#endif
	for (; j < n; j++)
		if (x[j] > max)
			max = x[j];
	if (max == 0.0) /* +0 or −0: which one the loop keeps (flash_m shows it) */
		for (j = 0, max = -INFINITY; j < n; j++)
			if (x[j] > max)
				max = x[j];
	return max;
}

#if HAVE_X86_KERNELS
/* x[j] / d, sixteen at a time (two registers); returns how many were done */
__attribute__((target("avx512f"))) static int divide_avx512(int n, double *x, double d)
{
	const __m512d v = _mm512_set1_pd(d);
	int j = 0;

	for (; j + 16 <= n; j += 16) {
		_mm512_storeu_pd(x + j, _mm512_div_pd(_mm512_loadu_pd(x + j), v));
		_mm512_storeu_pd(x + j + 8, _mm512_div_pd(_mm512_loadu_pd(x + j + 8), v));
	}
	return j;
}
#endif

/*
 * A division's quotient is rounded once whatever width it is done in, so this
 * follows the processor, not the kernel's kind: AVX-512 where there is one,
 * else two at a time (SSE2), and the rest one at a time.
 */
void mat_divide(int n, double *x, double d)
{
	int j = 0;
#if HAVE_X86_KERNELS
	if (has_avx512())
		j = divide_avx512(n, x, d);
	const __m128d v = _mm_set1_pd(d); /* SSE2: every x86-64 */

	for (; j + 4 <= n; j += 4) {
		_mm_storeu_pd(x + j, _mm_div_pd(_mm_loadu_pd(x + j), v));
		_mm_storeu_pd(x + j + 2, _mm_div_pd(_mm_loadu_pd(x + j + 2), v));
	}
#endif
	for (; j < n; j++)
		x[j] /= d;
}

void mat_mul_continue(int r, int k, int c, const double *A, size_t lda, int a_trans, const double *B, size_t ldb,
                      int b_trans, double *C, size_t ldc, int lower)
{
	count_madds(r, k, c, lower, a_trans);
	if (r > 0 && c > 0 && k > 0 && mul_chain(r, k, c, A, lda, a_trans, B, ldb, b_trans, C, ldc, MK_CONT, lower) != 0)
		mat_mul_acc_naive(r, k, c, A, lda, a_trans, B, ldb, b_trans, C, ldc, MAT_CONTINUE); /* out of memory */
}

void mat_mul_chain(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb, int b_trans, double *C,
                   size_t ldc, int lower)
{
	for (int i = 0; i < r; i++)
		memset(&C[(size_t)i * ldc], 0, (size_t)(c > 0 ? c : 0) * sizeof *C);
	mat_mul_continue(r, k, c, A, lda, 0, B, ldb, b_trans, C, ldc, lower);
}
