/* matrix.c: allocation and the two matrix products (reference and blocked). */
#include "matrix.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int mat_alloc(Mat *m, int rows, int cols)
{
	size_t count = (size_t)rows * (size_t)cols;

	m->rows = rows;
	m->cols = cols;
	m->a = NULL;
	if (count == 0)
		return 0;
	m->a = calloc(count, sizeof *m->a);
	if (m->a == NULL) {
		m->rows = m->cols = 0;
		return -1;
	}
	return 0;
}

void mat_free(Mat *m)
{
	free(m->a);
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

/*
 * A: r × k, B: k × c, C: r × c.
 * The same sums, arranged for the machine. C is built in tiles of MR × NR
 * cells held in registers (acc) while t runs along a panel of KB columns of
 * A (rows of B); the panel of B is copied once into a contiguous strip per
 * NR columns (packed) so the inner loop reads memory in order. Each cell's
 * terms are still added in the order t = 0, 1, …, k−1 within a panel, and
 * the panels in order. On x86-64 the kernel is also built for AVX2 and the
 * faster one is chosen when the program starts (same results either way:
 * no fused multiply-add, no reordering across t).
 */
enum { MR = 4, NR = 8, KB = 256 };

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define KERNEL_CLONES
#endif

/* acc (MR × NR) = Σ_t a[r][t] · packed[t][q] for t < kc; then C tile += acc. */
KERNEL_CLONES
static void tile_full(int kc, const double *a, size_t lda, const double *packed, double *c, size_t ldc)
{
	double acc[MR][NR] = { { 0 } };
	int t, r, q;

	for (t = 0; t < kc; t++) {
		const double *b_t = &packed[(size_t)t * NR];
		for (r = 0; r < MR; r++) {
			const double a_rt = a[(size_t)r * lda + t];
			for (q = 0; q < NR; q++)
				acc[r][q] += a_rt * b_t[q];
		}
	}
	for (r = 0; r < MR; r++)
		for (q = 0; q < NR; q++)
			c[(size_t)r * ldc + q] += acc[r][q];
}

/* The same for a tile cut short by the edge of C: rows × cols ≤ MR × NR. */
static void tile_edge(int kc, int rows, int cols, const double *a, size_t lda, const double *packed,
                      double *c, size_t ldc)
{
	int t, r, q;

	for (r = 0; r < rows; r++)
		for (q = 0; q < cols; q++) {
			double sum = 0.0;
			for (t = 0; t < kc; t++)
				sum += a[(size_t)r * lda + t] * packed[(size_t)t * NR + q];
			c[(size_t)r * ldc + q] += sum;
		}
}

void mat_mul_view(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb, int b_trans,
                  double *C, size_t ldc, int lower)
{
	double *packed;
	int t0, j0, i;

	for (i = 0; i < r; i++)
		memset(&C[(size_t)i * ldc], 0, (size_t)c * sizeof *C);
	if (r == 0 || k == 0 || c == 0)
		return;
	packed = malloc((size_t)KB * NR * sizeof *packed);
	for (j0 = 0; j0 < c; j0 += NR) {
		const int cols = c - j0 < NR ? c - j0 : NR;
		for (t0 = 0; t0 < k; t0 += KB) {
			const int kc = k - t0 < KB ? k - t0 : KB;
			int t, q;
			if (packed == NULL) { /* out of memory: the same sums, one cell at a time */
				for (i = 0; i < r; i++)
					for (q = 0; q < cols; q++)
						for (t = t0; t < t0 + kc; t++)
							C[(size_t)i * ldc + j0 + q] += A[(size_t)i * lda + t] *
								(b_trans ? B[(size_t)(j0 + q) * ldb + t] : B[(size_t)t * ldb + j0 + q]);
				continue;
			}
			/* packed[t][q] = B[t0 + t][j0 + q], zero past the edge */
			for (t = 0; t < kc; t++)
				for (q = 0; q < NR; q++)
					packed[(size_t)t * NR + q] = q >= cols ? 0.0
						: b_trans ? B[(size_t)(j0 + q) * ldb + t0 + t] : B[(size_t)(t0 + t) * ldb + j0 + q];
			for (i = 0; i < r; i += MR) {
				const int rows = r - i < MR ? r - i : MR;
				/* lower: rows i … i+MR−1 of A are zero from column i+MR on */
				const int kend = lower && i + MR < t0 + kc ? i + MR - t0 : kc;
				const double *a = &A[(size_t)i * lda + t0];
				double *ct = &C[(size_t)i * ldc + j0];
				if (kend <= 0)
					continue;
				if (rows == MR && cols == NR)
					tile_full(kend, a, lda, packed, ct, ldc);
				else
					tile_edge(kend, rows, cols, a, lda, packed, ct, ldc);
			}
		}
	}
	free(packed);
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
