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
 * The same sum, reordered for the cache: row i of C is built as
 * Σ_t A[i][t] · (row t of B), walking B and C left to right, in blocks of
 * KB rows of B so they stay in cache while several rows of A use them.
 * Each C[i][j] still adds its terms in the order t = 0, 1, …, k−1.
 */
enum { KB = 128, JB = 512 };

void mat_mul(const Mat *A, const Mat *B, Mat *C)
{
	const int r = A->rows, k = A->cols, c = B->cols;
	int i, t0, j0;

	if (C->a != NULL)
		memset(C->a, 0, (size_t)r * (size_t)c * sizeof *C->a);
	for (j0 = 0; j0 < c; j0 += JB) {
		const int j1 = j0 + JB < c ? j0 + JB : c;
		for (t0 = 0; t0 < k; t0 += KB) {
			const int t1 = t0 + KB < k ? t0 + KB : k;
			for (i = 0; i < r; i++) {
				double *restrict c_i = &C->a[(size_t)i * c];
				const double *restrict a_i = &A->a[(size_t)i * k];
				int t, j;
				for (t = t0; t < t1; t++) {
					const double a_it = a_i[t];
					const double *restrict b_t = &B->a[(size_t)t * c];
					for (j = j0; j < j1; j++)
						c_i[j] += a_it * b_t[j];
				}
			}
		}
	}
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
