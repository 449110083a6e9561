/* matrix.c: allocation, the reference matrix product, statistics (the fast product is in gemm.c). */
#include "base/matrix.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

/*
 * Matrices of MAPPED_MIN bytes and more get pages of their own, aligned to
 * 2 MiB, with a hint that transparent huge pages are welcome (every whole
 * 2 MiB of them can be one): the first touch of a 4 KiB page costs tens of
 * microseconds on some virtual machines, and a lesson with n = 1024 writes
 * about 300 MB of stages, so with ordinary pages the page faults would take
 * longer than the arithmetic. A freed one is kept (up to CACHE_COUNT of
 * them and CACHE_BYTES in all, the oldest unmapped first) for the next
 * matrix of the same size, which a recomputation asks for at once: zeroing
 * pages that are mapped costs far less than faulting new ones in. Kept
 * pages stay mapped and resident (no MADV_FREE: a page the system took
 * back would fault again on the next write, ~5 µs a 4 KiB page on a
 * virtual machine, which made a recycled matrix cost as much as a new
 * one). So the cache is memory the program holds while it is idle: at
 * most CACHE_BYTES (512 MiB), or the most it ever had in use at once when
 * that is more (six blocks at n = 1024 free 1.4 GB of stages and ask for
 * them again at the next computation: past 512 MiB, most were faulted in
 * anew, half of its time). Before new pages are mapped, kept ones are
 * given back until the matrices in use and the cache fit in that peak and
 * CACHE_BYTES, so the resident size never grows past them. CACHE_COUNT
 * (4096) is enough for a deep lesson: a layer frees about 40 matrices of
 * MAPPED_MIN bytes or more per computation, so a 16-layer stack (and its
 * gradients) recycles every one of them.
 * Where the system has no such hint (and under AddressSanitizer, which
 * watches the malloc heap only), every matrix comes from calloc. mat_free
 * tells the two apart by the registry of mappings (a mutex: matrices may be
 * allocated and freed on more than one thread).
 */
#if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(__SANITIZE_ADDRESS__)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_HUGE_HINT 1
#endif
#endif
#ifndef NO_HUGE_HINT
#define HUGE_HINT 1
#endif
#endif

#if HUGE_HINT
enum { HUGE_PAGE = 2 << 20, MAPPED_MIN = 64 << 10, CACHE_COUNT = 4096 };
#define CACHE_BYTES ((size_t)512 << 20)

typedef struct Mapping {
	void *at;
	size_t len;
} Mapping;

static pthread_mutex_t mappings_lock = PTHREAD_MUTEX_INITIALIZER;
static Mapping *live;                   /* matrices in use */
static size_t live_count, live_cap;
static Mapping cache[CACHE_COUNT];      /* freed ones kept, oldest first, their pages resident */
static size_t cache_count, cache_bytes;
static size_t live_bytes, peak_bytes;   /* the mappings in use, and the most ever at once */

/* The oldest kept mapping given back to the system. */
static void cache_drop_oldest(void)
{
	munmap(cache[0].at, cache[0].len);
	cache_bytes -= cache[0].len;
	memmove(&cache[0], &cache[1], (cache_count - 1) * sizeof cache[0]);
	cache_count--;
}

/* What the cache may hold: CACHE_BYTES, or as much as was ever in use at once (a whole computation's stages). */
static size_t cache_cap(void)
{
	return peak_bytes > CACHE_BYTES ? peak_bytes : CACHE_BYTES;
}

/* A new mapping of len bytes (a multiple of 4 KiB), 2 MiB-aligned and hinted; NULL when the system says no. */
static void *huge_map(size_t len)
{
	uint8_t *map, *at;
	size_t head;

	if (len > SIZE_MAX - HUGE_PAGE)
		return NULL;
	map = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	at = (uint8_t *)(((uintptr_t)map + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	head = (size_t)(at - map);
	if (head > 0)
		munmap(map, head);
	if (HUGE_PAGE - head > 0)
		munmap(at + len, HUGE_PAGE - head);
	madvise(at, len, MADV_HUGEPAGE); /* only a hint: without it the pages are ordinary */
	return at;
}

/*
 * Memory for bytes ≥ MAPPED_MIN, from the cache or newly mapped; NULL when
 * that fails (calloc then). Zeroed, unless zero is 0: then a kept mapping
 * is handed back as it was (new pages are zero all the same).
 */
static void *huge_alloc(size_t bytes, int zero)
{
	const size_t len = (bytes + 4095) / 4096 * 4096;
	void *at = NULL;
	size_t i;

	pthread_mutex_lock(&mappings_lock);
	if (live_count == live_cap) {
		const size_t cap = live_cap ? 2 * live_cap : 64;
		Mapping *grown = realloc(live, cap * sizeof *grown);
		if (grown == NULL) {
			pthread_mutex_unlock(&mappings_lock);
			return NULL;
		}
		live = grown;
		live_cap = cap;
	}
	for (i = cache_count; i-- > 0;) /* the newest of that size */
		if (cache[i].len == len) {
			at = cache[i].at;
			cache_bytes -= len;
			memmove(&cache[i], &cache[i + 1], (cache_count - i - 1) * sizeof cache[0]);
			cache_count--;
			break;
		}
	if (at == NULL) {
		/* new pages: first the kept ones past what the resident size may be (the peak in use, and CACHE_BYTES) */
		const size_t peak = live_bytes + len > peak_bytes ? live_bytes + len : peak_bytes;
		while (cache_count > 0 && live_bytes + len + cache_bytes > peak + CACHE_BYTES)
			cache_drop_oldest();
		at = huge_map(len);
	} else if (zero)
		memset(at, 0, bytes); /* the bytes past them up to len are never read */
	if (at != NULL) {
		live[live_count].at = at;
		live[live_count].len = len;
		live_count++;
		live_bytes += len;
		if (live_bytes > peak_bytes)
			peak_bytes = live_bytes;
	}
	pthread_mutex_unlock(&mappings_lock);
	return at;
}

/* 1 when p came from huge_alloc (and is now kept or unmapped), 0 when it is the malloc heap's. */
static int huge_free(void *p)
{
	size_t i, len = 0;

	pthread_mutex_lock(&mappings_lock);
	for (i = live_count; i-- > 0;)
		if (live[i].at == p) {
			len = live[i].len;
			live[i] = live[--live_count];
			break;
		}
	live_bytes -= len;
	if (len > 0 && len <= cache_cap()) {
		while (cache_count == CACHE_COUNT || cache_bytes + len > cache_cap())
			cache_drop_oldest();
		cache[cache_count].at = p;
		cache[cache_count].len = len;
		cache_count++;
		cache_bytes += len;
	} else if (len > 0) {
		munmap(p, len);
	}
	pthread_mutex_unlock(&mappings_lock);
	return len > 0;
}
#endif

static int alloc(Mat *m, int rows, int cols, int zero)
{
	size_t count = (size_t)rows * (size_t)cols;

	m->rows = rows;
	m->cols = cols;
	m->a = NULL;
	if (count == 0)
		return 0;
#if HUGE_HINT
	if (count >= MAPPED_MIN / sizeof *m->a)
		m->a = huge_alloc(count * sizeof *m->a, zero);
#else
	(void)zero;
#endif
	if (m->a == NULL)
		m->a = calloc(count, sizeof *m->a);
	if (m->a == NULL) {
		m->rows = m->cols = 0;
		return -1;
	}
	return 0;
}

void mat_free(Mat *m)
{
#if HUGE_HINT
	if (m->a == NULL || !huge_free(m->a))
		free(m->a);
#else
	free(m->a);
#endif
	m->a = NULL;
	m->rows = m->cols = 0;
}

int mat_alloc(Mat *m, int rows, int cols)
{
	return alloc(m, rows, cols, 1);
}

int mat_alloc_whole(Mat *m, int rows, int cols)
{
	return alloc(m, rows, cols, 0);
}

int mat_copy(Mat *dst, const Mat *src)
{
	if (src->a == NULL && !mat_empty(src)) { /* a dormant one (model.h: a real model's weights in its file): its shape */
		*dst = *src;
		return 0;
	}
	if (mat_alloc_whole(dst, src->rows, src->cols) != 0)
		return -1;
	if (dst->a != NULL)
		memcpy(dst->a, src->a, (size_t)src->rows * (size_t)src->cols * sizeof *src->a);
	return 0;
}

int mat_empty(const Mat *m)
{
	return m->rows == 0 || m->cols == 0;
}

/*
 * A: r × k, B: k × c, C: r × c.
 * The textbook definition, C[i][j] = Σ_t A[i][t] · B[t][j], one cell at a time.
 */
void mat_mul_naive(const Mat *A, const Mat *B, Mat *C)
{
	int i, j, t;

	for (i = 0; i < A->rows; i++)
		for (j = 0; j < B->cols; j++) {
			double sum = 0.0;
			for (t = 0; t < A->cols; t++)
				sum += MAT_AT(*A, i, t) * MAT_AT(*B, t, j);
			MAT_AT(*C, i, j) = sum;
		}
}

void mat_mul_acc_naive(int r, int k, int c, const double *A, size_t lda, int a_trans, const double *B, size_t ldb,
                       int b_trans, double *C, size_t ldc, int how)
{
	const int fused = mat_kernel_fused();

	for (int i = 0; i < r; i++)
		for (int j = 0; j < c; j++) {
			double *cell = &C[(size_t)i * ldc + (size_t)j];
			double sum = how == MAT_ADD_SUM ? 0.0 : *cell;
			for (int t = 0; t < k; t++) {
				const double x = a_trans ? A[(size_t)t * lda + (size_t)i] : A[(size_t)i * lda + (size_t)t];
				const double y = b_trans ? B[(size_t)j * ldb + (size_t)t] : B[(size_t)t * ldb + (size_t)j];
				sum = fused ? fma(x, y, sum) : sum + x * y;
			}
			*cell = how == MAT_ADD_SUM ? *cell + sum : sum;
		}
}

int mat_mul(const Mat *A, const Mat *B, Mat *C)
{
	if (C->a == NULL)
		return 0;
	return mat_mul_view(A->rows, A->cols, B->cols, A->a, (size_t)A->cols, B->a, (size_t)B->cols, 0, C->a,
	             (size_t)C->cols, 0);
}

/* x·0 is ±0 for a finite x and NaN for NaN or ±∞, and NaN stays NaN in a sum: several sums side by side. */
int mat_nonfinite(const double *p, size_t count)
{
	size_t i = 0;
	double z = 0.0;
#if defined(__GNUC__)
	typedef double v2 __attribute__((vector_size(16)));
	v2 z0 = { 0.0, 0.0 }, z1 = z0, z2 = z0, z3 = z0, x0, x1, x2, x3;

	for (; i + 8 <= count; i += 8) {
		memcpy(&x0, p + i, sizeof x0), memcpy(&x1, p + i + 2, sizeof x1);
		memcpy(&x2, p + i + 4, sizeof x2), memcpy(&x3, p + i + 6, sizeof x3);
		z0 = z0 + x0 * 0.0, z1 = z1 + x1 * 0.0, z2 = z2 + x2 * 0.0, z3 = z3 + x3 * 0.0;
	}
	z0 = (z0 + z1) + (z2 + z3);
	z = z0[0] + z0[1];
#endif
	for (; i < count; i++)
		z += p[i] * 0.0;
	return z != 0.0; /* NaN != 0 */
}

size_t mat_stats_range(const Mat *m, double *mean, double *std, double *min, double *max)
{
	size_t i, count = (size_t)m->rows * (size_t)m->cols, finite = 0;
	double sum = 0.0, sq = 0.0, mu, lo = INFINITY, hi = -INFINITY;

	for (i = 0; i < count; i++)
		if (isfinite(m->a[i])) {
			const double x = m->a[i];
			sum += x;
			finite++;
			lo = x < lo ? x : lo;
			hi = x > hi ? x : hi;
		}
	*min = lo;
	*max = hi;
	mu = finite ? sum / (double)finite : 0.0;
	for (i = 0; i < count; i++)
		if (isfinite(m->a[i]))
			sq += (m->a[i] - mu) * (m->a[i] - mu);
	*mean = mu;
	*std = finite > 1 ? sqrt(sq / (double)(finite - 1)) : 0.0;
	return finite;
}
