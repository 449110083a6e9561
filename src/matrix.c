/* matrix.c: allocation, the reference matrix product, statistics (the fast product is in gemm.c). */
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
