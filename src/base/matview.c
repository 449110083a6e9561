/* matview.c: a read-only matrix kept in a file's number type (matview.h). */
#include "base/matview.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define MATVIEW_AVX2 1
#endif

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

struct MatShared {
	atomic_int refs;
	unsigned char *bytes;         /* the view's own copy, or NULL when borrowed */
	void (*release)(void *ctx);   /* a borrowed one's owner, told when the last reference goes */
	void *ctx;
	pthread_mutex_t lock; /* around making doubles */
	Mat doubles;          /* empty until matview_doubles */
};

int mat_dtype_size(MatDtype d)
{
	return d == MAT_F64 ? 8 : d == MAT_F32 ? 4 : 2;
}

static uint64_t le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* IEEE half: 1 sign, 5 exponent, 10 fraction bits. Every half is a double exactly. */
static double half(unsigned h)
{
	int e = (int)(h >> 10 & 0x1f);
	double m = (double)(h & 0x3ff), v;
	if (e == 0)
		v = ldexp(m, -24);
	else if (e == 31)
		v = m != 0 ? NAN : INFINITY;
	else
		v = ldexp(m + 1024, e - 25);
	return h & 0x8000 ? -v : v;
}

double mat_dtype_value(MatDtype d, const unsigned char *p)
{
	uint64_t u;

	switch (d) {
	case MAT_F64: {
		double x;
		u = le(p, 8);
		memcpy(&x, &u, sizeof x);
		return x;
	}
	case MAT_F32: {
		float x;
		uint32_t w = (uint32_t)le(p, 4);
		memcpy(&x, &w, sizeof x);
		return x;
	}
	case MAT_F16: return half((unsigned)le(p, 2));
	case MAT_BF16: { /* bfloat16: the high 16 bits of a float */
		float x;
		uint32_t w = (uint32_t)le(p, 2) << 16;
		memcpy(&x, &w, sizeof x);
		return x;
	}
	}
	return NAN;
}

/* A shared part with one reference, its lock ready; NULL out of memory. */
static MatShared *shared_new(void)
{
	MatShared *s = calloc(1, sizeof *s);

	if (s != NULL && pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return NULL;
	}
	if (s != NULL)
		atomic_init(&s->refs, 1);
	return s;
}

int matview_copy_of(MatView *v, MatDtype d, int rows, int cols, const unsigned char *bytes)
{
	const size_t n = (size_t)rows * (size_t)cols * (size_t)mat_dtype_size(d);
	MatShared *s = shared_new();

	*v = (MatView){ 0 };
	if (s == NULL || (s->bytes = malloc(n > 0 ? n : 1)) == NULL) {
		matview_free(&(MatView){ .shared = s });
		return -1;
	}
	memcpy(s->bytes, bytes, n);
	*v = (MatView){ rows, cols, d, s->bytes, s };
	return 0;
}

int matview_of(MatView *v, MatDtype d, int rows, int cols, const unsigned char *data, void (*release)(void *), void *ctx)
{
	MatShared *s = shared_new();

	*v = (MatView){ 0 };
	if (s == NULL)
		return -1;
	s->release = release;
	s->ctx = ctx;
	*v = (MatView){ rows, cols, d, data, s };
	return 0;
}

void matview_give_back(const MatView *v, int r0, int count)
{
#if defined(__linux__) && defined(MADV_DONTNEED)
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), row = (uintptr_t)v->cols * (uintptr_t)mat_dtype_size(v->dtype);
	const uintptr_t b = (uintptr_t)v->data + (uintptr_t)r0 * row, e = b + (uintptr_t)count * row;
	const uintptr_t lo = b & ~(page - 1), hi = (e + page - 1) & ~(page - 1); /* the pages the rows are on */

	if (v->shared != NULL && v->shared->bytes == NULL && page > 0 && hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
#else
	(void)v, (void)r0, (void)count;
#endif
}

void matview_share(MatView *dst, const MatView *src)
{
	*dst = *src;
	if (src->shared != NULL)
		atomic_fetch_add(&src->shared->refs, 1);
}

void matview_free(MatView *v)
{
	MatShared *s = v->shared;

	if (s != NULL && atomic_fetch_sub(&s->refs, 1) == 1) {
		mat_free(&s->doubles);
		pthread_mutex_destroy(&s->lock);
		free(s->bytes);
		if (s->release != NULL)
			s->release(s->ctx);
		free(s);
	}
	*v = (MatView){ 0 };
}

void matview_rows(const MatView *v, int r0, int count, double *out)
{
	const size_t size = (size_t)mat_dtype_size(v->dtype), n = (size_t)count * (size_t)v->cols;
	const unsigned char *p = v->data + (size_t)r0 * (size_t)v->cols * size;

	/* the two dtypes of a real model's head in a loop of their own (a decoding step reads the whole head) */
	if (v->dtype == MAT_BF16) {
		for (size_t k = 0; k < n; k++, p += 2) {
			const uint32_t w = (uint32_t)(p[0] | p[1] << 8) << 16;
			float x;
			memcpy(&x, &w, sizeof x);
			out[k] = x;
		}
		return;
	}
	if (v->dtype == MAT_F32) {
		for (size_t k = 0; k < n; k++, p += 4) {
			const uint32_t w = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
			float x;
			memcpy(&x, &w, sizeof x);
			out[k] = x;
		}
		return;
	}
	for (size_t k = 0; k < n; k++, p += size)
		out[k] = mat_dtype_value(v->dtype, p);
}

double mat_dot4(const double *x, const double *b, int d)
{
	double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
	int c = 0;

	for (; c + 4 <= d; c += 4) {
		s0 += x[c] * b[c];
		s1 += x[c + 1] * b[c + 1];
		s2 += x[c + 2] * b[c + 2];
		s3 += x[c + 3] * b[c + 3];
	}
	for (; c < d; c++)
		s0 += x[c] * b[c];
	return (s0 + s1) + (s2 + s3);
}

#ifdef MATVIEW_AVX2
/*
 * mat_dot4 of x and a BF16 or F32 row p (d numbers), the four chains the four
 * lanes of one register (a multiply, then an add: never fused, as
 * -ffp-contract=off keeps the scalar sum), each number made a double exactly.
 */
__attribute__((target("avx2"))) static double dot4_avx2(const double *x, const unsigned char *p, int d, int bf16)
{
	__m256d s = _mm256_setzero_pd();
	double lane[4];
	int c = 0;

	for (; c + 4 <= d; c += 4) {
		__m128 f;
		if (bf16) {
			const __m128i h = _mm_loadl_epi64((const __m128i *)(const void *)(p + 2 * (size_t)c));
			f = _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(h), 16));
		} else
			f = _mm_loadu_ps((const float *)(const void *)(p + 4 * (size_t)c));
		s = _mm256_add_pd(s, _mm256_mul_pd(_mm256_loadu_pd(x + c), _mm256_cvtps_pd(f)));
	}
	_mm256_storeu_pd(lane, s);
	for (; c < d; c++)
		lane[0] += x[c] * mat_dtype_value(bf16 ? MAT_BF16 : MAT_F32, p + (size_t)(bf16 ? 2 : 4) * (size_t)c);
	return (lane[0] + lane[1]) + (lane[2] + lane[3]);
}
#endif

int matview_dot_rows(const MatView *v, int r0, int count, const double *x, double *out)
{
	double *b;

#ifdef MATVIEW_AVX2
	if ((v->dtype == MAT_BF16 || v->dtype == MAT_F32) && __builtin_cpu_supports("avx2")) {
		const size_t row = (size_t)v->cols * (size_t)mat_dtype_size(v->dtype);
		for (int k = 0; k < count; k++)
			out[k] = dot4_avx2(x, v->data + (size_t)(r0 + k) * row, v->cols, v->dtype == MAT_BF16);
		return 0;
	}
#endif
	/* a row at a time made doubles (a few KiB: it stays in the cache), then summed */
	if ((b = malloc((size_t)(v->cols > 0 ? v->cols : 1) * sizeof *b)) != NULL) {
		for (int k = 0; k < count; k++) {
			matview_rows(v, r0 + k, 1, b);
			out[k] = mat_dot4(x, b, v->cols);
		}
		free(b);
		return 0;
	}
	return -1;
}

double matview_at(const MatView *v, int i, int j)
{
	return mat_dtype_value(v->dtype, v->data + ((size_t)i * (size_t)v->cols + (size_t)j) * (size_t)mat_dtype_size(v->dtype));
}

const Mat *matview_doubles(const MatView *v)
{
	MatShared *s = v->shared;
	const Mat *m = NULL;

	if (s == NULL)
		return NULL;
	pthread_mutex_lock(&s->lock);
	if (mat_empty(&s->doubles) && mat_alloc_whole(&s->doubles, v->rows, v->cols) == 0)
		matview_rows(v, 0, v->rows, s->doubles.a);
	if (!mat_empty(&s->doubles))
		m = &s->doubles;
	pthread_mutex_unlock(&s->lock);
	return m;
}

#ifdef MATVIEW_AVX2
/* Four BF16 or F32 numbers at p as doubles. */
__attribute__((target("avx2"))) static inline __m256d load4(const unsigned char *p, int bf16)
{
	if (bf16)
		return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)), 16)));
	return _mm256_cvtps_pd(_mm_loadu_ps((const float *)(const void *)p));
}

/* a + x·y, a multiply then an add (never fused); and fused, for a fused kernel (mat_kernel_fused) */
#define ADD_PRODUCT(a, x, y) _mm256_add_pd((a), _mm256_mul_pd((x), (y)))
#define ADD_PRODUCT_FUSED(a, x, y) _mm256_fmadd_pd((x), (y), (a))
#define ADD_PRODUCT_1(a, x, y) ((a) + (x) * (y))
#define ADD_PRODUCT_FUSED_1(a, x, y) __builtin_fma((x), (y), (a))

/*
 * dot8_block for sixteen rows j0 … j0 + 15, BF16 or F32: four rows a
 * register, each lane one row's chain (four of them side by side), its terms
 * added in the order of t (a 4 × 4 transpose turns four numbers of each row
 * into one register a term), each by ADD (ADD_PRODUCT: a multiply then an
 * add, never fused; ADD_PRODUCT_FUSED: one rounding, as a fused kernel's),
 * and ADD1 for one number. GROUP4 is the name of its four rows' step.
 */
#define DOT16(NAME, GROUP4, TARGET, ADD, ADD1)                                                           \
	__attribute__((target(TARGET), always_inline)) static inline __m256d GROUP4(                     \
		__m256d s_, const unsigned char *q, size_t row, int bf16, __m256d x0, __m256d x1, __m256d x2, \
		__m256d x3)                                                                              \
	{                                                                                                \
		const __m256d r0 = load4(q, bf16), r1 = load4(q + row, bf16), r2 = load4(q + 2 * row, bf16),   \
		              r3 = load4(q + 3 * row, bf16);                                             \
		const __m256d u0 = _mm256_unpacklo_pd(r0, r1), u1 = _mm256_unpackhi_pd(r0, r1);          \
		const __m256d u2 = _mm256_unpacklo_pd(r2, r3), u3 = _mm256_unpackhi_pd(r2, r3);          \
		s_ = ADD(s_, x0, _mm256_permute2f128_pd(u0, u2, 0x20));                                  \
		s_ = ADD(s_, x1, _mm256_permute2f128_pd(u1, u3, 0x20));                                  \
		s_ = ADD(s_, x2, _mm256_permute2f128_pd(u0, u2, 0x31));                                  \
		return ADD(s_, x3, _mm256_permute2f128_pd(u1, u3, 0x31));                                \
	}                                                                                                \
	__attribute__((target(TARGET))) static void NAME(const MatView *v, int j0, int t0, int kc, const double *a, \
	                                                 double *s)                                           \
	{                                                                                                \
		const int bf16 = v->dtype == MAT_BF16;                                                   \
		const size_t size = bf16 ? 2 : 4, row = (size_t)v->cols * size;                          \
		const unsigned char *p = v->data + (size_t)j0 * row + (size_t)t0 * size;                 \
		/*                                                                                       \
		 * The next sixteen rows' bytes of this block (per lines of 64 a row) fetched while these are \
		 * added: the rows of a layer's weights in a model's file are far from any cache, and sixteen \
		 * of them side by side, 8 bytes a row a step, were more streams than the processor follows. \
		 * One-row products of SmolLM2's shape: 2.05 → 3.22 Gmadd/s; generate 16: 1.42 → 1.05 s.  \
		 */                                                                                      \
		const unsigned char *next = p + 16 * row;                                                \
		const size_t per = ((size_t)kc * size + 63) / 64, lines = 16 * per;                     \
		/* the four groups' sums named, so that they stay in registers (an array went through memory) */ \
		__m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd(), acc2 = _mm256_setzero_pd(),  \
			acc3 = _mm256_setzero_pd();                                                      \
		int t = 0;                                                                               \
		for (; t + 4 <= kc; t += 4, p += 4 * size) {                                             \
			/* the next sixteen rows' lines of this block, spread over its steps (a prefetch never faults) */ \
			for (size_t l = (size_t)t * lines / (size_t)kc; l < (size_t)(t + 4) * lines / (size_t)kc; l++) \
				_mm_prefetch((const char *)(next + l / per * row + l % per * 64), _MM_HINT_T0);      \
			const __m256d x0 = _mm256_set1_pd(a[t0 + t]), x1 = _mm256_set1_pd(a[t0 + t + 1]); \
			const __m256d x2 = _mm256_set1_pd(a[t0 + t + 2]), x3 = _mm256_set1_pd(a[t0 + t + 3]); \
			acc0 = GROUP4(acc0, p, row, bf16, x0, x1, x2, x3);                                \
			acc1 = GROUP4(acc1, p + 4 * row, row, bf16, x0, x1, x2, x3);                      \
			acc2 = GROUP4(acc2, p + 8 * row, row, bf16, x0, x1, x2, x3);                      \
			acc3 = GROUP4(acc3, p + 12 * row, row, bf16, x0, x1, x2, x3);                     \
		}                                                                                        \
		_mm256_storeu_pd(s, acc0), _mm256_storeu_pd(s + 4, acc1);                                \
		_mm256_storeu_pd(s + 8, acc2), _mm256_storeu_pd(s + 12, acc3);                           \
		for (; t < kc; t++, p += size) /* the last terms, each row's chain on */                 \
			for (int q = 0; q < 16; q++)                                                     \
				s[q] = ADD1(s[q], a[t0 + t], mat_dtype_value(v->dtype, p + (size_t)q * row)); \
	}

DOT16(dot16_avx2, group4, "avx2", ADD_PRODUCT, ADD_PRODUCT_1)
DOT16(dot16_fma, group4_fma, "avx2,fma", ADD_PRODUCT_FUSED, ADD_PRODUCT_FUSED_1)
#endif

#ifdef MATVIEW_AVX2
/* s[j] = fma(x, b[j·step], s[j]) for j < n: the fused kernels' way of adding a product (their processor has FMA). */
__attribute__((target("avx2,fma"))) static void add_products_fused(int n, double x, const double *b, size_t step, double *s)
{
	const __m256d xv = _mm256_set1_pd(x);
	int j = 0;

	if (step == 1)
		for (; j + 4 <= n; j += 4)
			_mm256_storeu_pd(s + j, _mm256_fmadd_pd(xv, _mm256_loadu_pd(b + j), _mm256_loadu_pd(s + j)));
	for (; j < n; j++)
		s[j] = __builtin_fma(x, b[(size_t)j * step], s[j]);
}
#else
static void add_products_fused(int n, double x, const double *b, size_t step, double *s)
{
	for (int j = 0; j < n; j++)
		s[j] = fma(x, b[(size_t)j * step], s[j]);
}
#endif

#ifdef MATVIEW_AVX2
/* The transpose of v (BF16 or F32, rows and cols multiples of 4) into out: 4 × 4 tiles turned in registers. */
__attribute__((target("avx2"))) static void transpose_avx2(const MatView *v, double *out)
{
	const int bf16 = v->dtype == MAT_BF16;
	const size_t size = bf16 ? 2 : 4, row = (size_t)v->cols * size, rows = (size_t)v->rows;

	for (int j = 0; j < v->cols; j += 4) /* out's rows written along, v read down four columns */
		for (int i = 0; i < v->rows; i += 4) {
			const unsigned char *q = v->data + (size_t)i * row + (size_t)j * size;
			const __m256d r0 = load4(q, bf16), r1 = load4(q + row, bf16), r2 = load4(q + 2 * row, bf16),
			              r3 = load4(q + 3 * row, bf16);
			const __m256d u0 = _mm256_unpacklo_pd(r0, r1), u1 = _mm256_unpackhi_pd(r0, r1);
			const __m256d u2 = _mm256_unpacklo_pd(r2, r3), u3 = _mm256_unpackhi_pd(r2, r3);
			double *o = out + (size_t)j * rows + (size_t)i;
			_mm256_storeu_pd(o, _mm256_permute2f128_pd(u0, u2, 0x20));
			_mm256_storeu_pd(o + rows, _mm256_permute2f128_pd(u1, u3, 0x20));
			_mm256_storeu_pd(o + 2 * rows, _mm256_permute2f128_pd(u0, u2, 0x31));
			_mm256_storeu_pd(o + 3 * rows, _mm256_permute2f128_pd(u1, u3, 0x31));
		}
}
#endif

int matview_to_mat(const MatView *v, int transpose, Mat *out)
{
	enum { BLOCK = 16 }; /* rows made doubles at a time, then written down the columns (transpose) */
	double *buf;

	if (mat_alloc_whole(out, transpose ? v->cols : v->rows, transpose ? v->rows : v->cols) != 0)
		return -1;
	if (!transpose) {
		matview_rows(v, 0, v->rows, out->a);
		return 0;
	}
#ifdef MATVIEW_AVX2
	if ((v->dtype == MAT_BF16 || v->dtype == MAT_F32) && v->rows % 4 == 0 && v->cols % 4 == 0 &&
	    __builtin_cpu_supports("avx2")) {
		transpose_avx2(v, out->a);
		return 0;
	}
#endif
	if ((buf = malloc((size_t)BLOCK * (size_t)(v->cols > 0 ? v->cols : 1) * sizeof *buf)) == NULL) {
		mat_free(out);
		return -1;
	}
	for (int r0 = 0; r0 < v->rows; r0 += BLOCK) {
		const int count = v->rows - r0 < BLOCK ? v->rows - r0 : BLOCK;
		matview_rows(v, r0, count, buf);
		for (int j = 0; j < v->cols; j++)
			for (int k = 0; k < count; k++)
				out->a[(size_t)j * (size_t)v->rows + (size_t)(r0 + k)] = buf[(size_t)k * (size_t)v->cols + (size_t)j];
	}
	free(buf);
	return 0;
}

/* The BF16 number at q as a double, exactly. */
static inline double bf16_at(const unsigned char *q)
{
	const uint32_t w = (uint32_t)(q[0] | q[1] << 8) << 16;
	float f;

	memcpy(&f, &w, sizeof f);
	return f;
}

/*
 * Rows j0 … j0 + 7 of v (BF16 or F32 as a float's bits, else through
 * mat_dtype_value) against a over terms [t0, t0 + kc): eight chains of adds
 * side by side, each in the order of t from 0, each product rounded.
 */
static void dot8_block(const MatView *v, int j0, int t0, int kc, const double *a, double *s)
{
	const size_t size = (size_t)mat_dtype_size(v->dtype), row = (size_t)v->cols * size;
	const unsigned char *p = v->data + (size_t)j0 * row + (size_t)t0 * size;
	double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0;

	if (mat_kernel_fused()) { /* mat_mul's kernel adds each product with one rounding: so do these chains */
		for (int q = 0; q < 8; q++) {
			double sum = 0.0;
			for (int t = 0; t < kc; t++)
				sum = fma(a[t0 + t], mat_dtype_value(v->dtype, p + (size_t)q * row + (size_t)t * size), sum);
			s[q] = sum;
		}
		return;
	}
	if (v->dtype == MAT_BF16) {
		for (int t = 0; t < kc; t++, p += 2) {
			const double x = a[t0 + t];
			s0 += x * bf16_at(p);
			s1 += x * bf16_at(p + row);
			s2 += x * bf16_at(p + 2 * row);
			s3 += x * bf16_at(p + 3 * row);
			s4 += x * bf16_at(p + 4 * row);
			s5 += x * bf16_at(p + 5 * row);
			s6 += x * bf16_at(p + 6 * row);
			s7 += x * bf16_at(p + 7 * row);
		}
	} else {
		for (int t = 0; t < kc; t++, p += size) {
			const double x = a[t0 + t];
			s0 += x * mat_dtype_value(v->dtype, p);
			s1 += x * mat_dtype_value(v->dtype, p + row);
			s2 += x * mat_dtype_value(v->dtype, p + 2 * row);
			s3 += x * mat_dtype_value(v->dtype, p + 3 * row);
			s4 += x * mat_dtype_value(v->dtype, p + 4 * row);
			s5 += x * mat_dtype_value(v->dtype, p + 5 * row);
			s6 += x * mat_dtype_value(v->dtype, p + 6 * row);
			s7 += x * mat_dtype_value(v->dtype, p + 7 * row);
		}
	}
	s[0] = s0, s[1] = s1, s[2] = s2, s[3] = s3, s[4] = s4, s[5] = s5, s[6] = s6, s[7] = s7;
}


int matview_mul_t(const MatView *v, int r, const double *A, size_t lda, double *C, size_t ldc)
{
	enum { KB = 256 }; /* mat_mul's blocks of terms (matrix.h): part of the result */
	const int k = v->cols, c = v->rows, fused = mat_kernel_fused();
	int bad = 0;

	for (int i = 0; i < r; i++) {
		const double *a = A + (size_t)i * lda;
		double *out = C + (size_t)i * ldc;
		for (int t0 = 0; t0 < k || t0 == 0; t0 += KB) {
			const int kc = k - t0 < KB ? k - t0 : KB;
			int j = 0;
#ifdef MATVIEW_AVX2
			if ((v->dtype == MAT_BF16 || v->dtype == MAT_F32) && __builtin_cpu_supports("avx2"))
				for (; j + 16 <= c; j += 16) {
					double s[16];
					if (fused) /* a fused kernel's processor has FMA */
						dot16_fma(v, j, t0, kc, a, s);
					else
						dot16_avx2(v, j, t0, kc, a, s);
					for (int q = 0; q < 16; q++)
						out[j + q] = t0 == 0 ? s[q] : out[j + q] + s[q];
				}
#endif
			for (; j + 8 <= c; j += 8) {
				double s[8];
				dot8_block(v, j, t0, kc, a, s);
				for (int q = 0; q < 8; q++)
					out[j + q] = t0 == 0 ? s[q] : out[j + q] + s[q];
			}
			for (; j < c; j++) {
				double sum = 0.0;
				for (int t = t0; t < t0 + kc; t++)
					sum = fused ? fma(a[t], matview_at(v, j, t), sum) : sum + a[t] * matview_at(v, j, t);
				out[j] = t0 == 0 ? sum : out[j] + sum;
			}
			if (k <= 0)
				break;
		}
		for (int j = 0; j < c; j++)
			bad |= !isfinite(out[j]);
	}
	return bad;
}

int matview_mul_cols(const MatView *v, int first, int step, int cols, int r, const double *A, size_t lda, double *C,
                     size_t ldc)
{
	enum { KB = 256 }; /* mat_mul's blocks of terms (matrix.h) */
	const int k = v->rows, fused = mat_kernel_fused();
	double *row = malloc((size_t)(v->cols > 0 ? v->cols : 1) * sizeof *row), *s = malloc((size_t)(cols > 0 ? cols : 1) * sizeof *s);
	int bad = 0;

	if (row == NULL || s == NULL) {
		free(row);
		free(s);
		return 1;
	}
	for (int i = 0; i < r; i++) {
		const double *a = A + (size_t)i * lda;
		double *out = C + (size_t)i * ldc;
		if (k <= 0)
			memset(out, 0, (size_t)cols * sizeof *out);
		for (int t0 = 0; t0 < k; t0 += KB) {
			const int kc = k - t0 < KB ? k - t0 : KB;
			/* each cell's block from 0, its terms in the order of t: row t of v made doubles, then added to every cell */
			memset(s, 0, (size_t)cols * sizeof *s);
			for (int t = t0; t < t0 + kc; t++) {
				const double x = a[t];
				const double *b = row + first;
				matview_rows(v, t, 1, row);
				if (fused)
					add_products_fused(cols, x, b, (size_t)step, s);
				else if (step == 1)
					for (int j = 0; j < cols; j++)
						s[j] += x * b[j];
				else
					for (int j = 0; j < cols; j++)
						s[j] += x * b[(size_t)j * (size_t)step];
			}
			for (int j = 0; j < cols; j++)
				out[j] = t0 == 0 ? s[j] : out[j] + s[j];
		}
		for (int j = 0; j < cols; j++)
			bad |= !isfinite(out[j]);
	}
	free(row);
	free(s);
	return bad;
}
