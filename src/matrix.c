/* matrix.c: allocation, the reference matrix product, statistics (the fast product is in gemm.c). */
#include "matrix.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

/*
 * Large matrices get pages of their own, aligned to 2 MiB, with a hint that
 * transparent huge pages are welcome: the first touch of a 4 KiB page costs
 * tens of microseconds on some virtual machines, and a lesson with n = 1024
 * writes about 300 MB of stages, so with ordinary pages the page faults
 * would take longer than the arithmetic. Where the system has no such hint
 * (and under AddressSanitizer, which watches the malloc heap only), every
 * matrix comes from calloc. mat_free tells the two apart by the registry
 * of mappings below (a mutex: matrices may be freed on another thread).
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
enum { HUGE_PAGE = 2 << 20 };

typedef struct Mapping {
	void *at;
	size_t len;
} Mapping;

static Mapping *mappings;
static size_t mapping_count, mapping_cap;
static pthread_mutex_t mappings_lock = PTHREAD_MUTEX_INITIALIZER;

/* Zeroed pages for bytes ≥ HUGE_PAGE, 2 MiB-aligned and hinted; NULL when that fails (calloc then). */
static void *huge_alloc(size_t bytes)
{
	const size_t len = (bytes + 4095) / 4096 * 4096;
	uint8_t *map, *at;
	size_t head, tail;

	if (len > SIZE_MAX - HUGE_PAGE)
		return NULL;
	map = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	at = (uint8_t *)(((uintptr_t)map + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	head = (size_t)(at - map);
	tail = HUGE_PAGE - head;
	if (head > 0)
		munmap(map, head);
	if (tail > 0)
		munmap(at + len, tail);
	madvise(at, len, MADV_HUGEPAGE); /* only a hint: without it the pages are ordinary */
	pthread_mutex_lock(&mappings_lock);
	if (mapping_count == mapping_cap) {
		const size_t cap = mapping_cap ? 2 * mapping_cap : 64;
		Mapping *grown = realloc(mappings, cap * sizeof *grown);
		if (grown == NULL) {
			pthread_mutex_unlock(&mappings_lock);
			munmap(at, len);
			return NULL;
		}
		mappings = grown;
		mapping_cap = cap;
	}
	mappings[mapping_count].at = at;
	mappings[mapping_count].len = len;
	mapping_count++;
	pthread_mutex_unlock(&mappings_lock);
	return at;
}

/* 1 when p came from huge_alloc (and is now unmapped), 0 when it is the malloc heap's. */
static int huge_free(void *p)
{
	size_t i, len = 0;

	pthread_mutex_lock(&mappings_lock);
	for (i = mapping_count; i-- > 0;)
		if (mappings[i].at == p) {
			len = mappings[i].len;
			mappings[i] = mappings[--mapping_count];
			break;
		}
	pthread_mutex_unlock(&mappings_lock);
	if (len == 0)
		return 0;
	munmap(p, len);
	return 1;
}
#endif

int mat_alloc(Mat *m, int rows, int cols)
{
	size_t count = (size_t)rows * (size_t)cols;

	m->rows = rows;
	m->cols = cols;
	m->a = NULL;
	if (count == 0)
		return 0;
#if HUGE_HINT
	if (count >= HUGE_PAGE / sizeof *m->a)
		m->a = huge_alloc(count * sizeof *m->a);
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

int mat_copy(Mat *dst, const Mat *src)
{
	if (mat_alloc(dst, src->rows, src->cols) != 0)
		return -1;
	if (dst->a != NULL)
		memcpy(dst->a, src->a, (size_t)src->rows * (size_t)src->cols * sizeof *src->a);
	return 0;
}

int mat_empty(const Mat *m)
{
	return m->rows == 0 || m->cols == 0;
}

int mat_equal(const Mat *x, const Mat *y)
{
	size_t i, count;

	if (x->rows != y->rows || x->cols != y->cols)
		return 0;
	count = (size_t)x->rows * (size_t)x->cols;
	for (i = 0; i < count; i++)
		if (!(x->a[i] == y->a[i]))
			return 0;
	return 1;
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

void mat_mul(const Mat *A, const Mat *B, Mat *C)
{
	if (C->a == NULL)
		return;
	mat_mul_view(A->rows, A->cols, B->cols, A->a, (size_t)A->cols, B->a, (size_t)B->cols, 0, C->a,
	             (size_t)C->cols, 0);
}

size_t mat_stats(const Mat *m, double *mean, double *std)
{
	size_t i, count = (size_t)m->rows * (size_t)m->cols, finite = 0;
	double sum = 0.0, sq = 0.0, mu;

	for (i = 0; i < count; i++)
		if (isfinite(m->a[i])) {
			sum += m->a[i];
			finite++;
		}
	mu = finite ? sum / (double)finite : 0.0;
	for (i = 0; i < count; i++)
		if (isfinite(m->a[i]))
			sq += (m->a[i] - mu) * (m->a[i] - mu);
	*mean = mu;
	*std = finite > 1 ? sqrt(sq / (double)(finite - 1)) : 0.0;
	return finite;
}
