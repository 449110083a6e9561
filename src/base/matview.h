/*
 * matview.h: a read-only matrix kept in a file's number type (issue 21,
 * "Memory"): a real model's unembedding (49152 × 576 numbers: 226 MB as
 * doubles, 57 MB as BF16) stays in its dtype, and a row becomes doubles when
 * it is read. F32, F16 and BF16 become doubles exactly, so a product over
 * rows made doubles here gives the same bits as one over a Mat of them.
 *
 * The bytes are a copy of the view's own (matview_copy_of) or borrowed from
 * a read-only memory mapping of the file (matview_of: the model's weights,
 * released when the view's last reference goes); either way shared by every
 * copy of a view (a lesson's copies, the layers' models): matview_share adds
 * a reference, matview_free drops one, the last frees them. matview_doubles makes the whole matrix doubles once,
 * on demand (a view that shows every cell), kept until the last reference
 * goes.
 */
#ifndef ATTNVIZ_MATVIEW_H
#define ATTNVIZ_MATVIEW_H

#include "base/matrix.h"

typedef enum MatDtype { MAT_F64, MAT_F32, MAT_F16, MAT_BF16 } MatDtype;

typedef struct MatShared MatShared; /* the bytes, the references, the doubles made on demand */

typedef struct MatView {
	int rows, cols;
	MatDtype dtype;
	const unsigned char *data; /* rows × cols numbers, little-endian, row-major */
	MatShared *shared;         /* NULL: an empty view */
} MatView;

/* Bytes per number of d. */
int mat_dtype_size(MatDtype d);
/* The number at p (little-endian) as a double, exactly. */
double mat_dtype_value(MatDtype d, const unsigned char *p);

/* A view of its own copy of rows × cols numbers of dtype d at bytes. 0, or -1 out of memory (v empty). */
int matview_copy_of(MatView *v, MatDtype d, int rows, int cols, const unsigned char *bytes);
/*
 * A view of rows × cols numbers of dtype d at data, borrowed from a read-only
 * mapping of a file: release(ctx) when the last reference goes (release
 * may be NULL), and matview_give_back may hand its pages back to the file.
 * 0, or -1 out of memory (v empty; release not called).
 */
int matview_of(MatView *v, MatDtype d, int rows, int cols, const unsigned char *data, void (*release)(void *), void *ctx);
/*
 * Rows [r0, r0 + count) read: a mapped view's whole pages among them go back
 * to the file (read again from it when next read; the peak memory holds a
 * block of rows, not the matrix). Nothing for a view of its own copy.
 */
void matview_give_back(const MatView *v, int r0, int count);
/* dst another reference to src's bytes (dst empty when src is). */
void matview_share(MatView *dst, const MatView *src);
/* One reference less; v empty after. */
void matview_free(MatView *v);
static inline int matview_empty(const MatView *v)
{
	return v->shared == NULL;
}
/* Rows [r0, r0 + count) as doubles into out (count × cols, row-major). */
void matview_rows(const MatView *v, int r0, int count, double *out);
/*
 * x · b over d numbers in four chains of adds, c ≡ 0, 1, 2, 3 (mod 4) (the
 * numbers past the last four in the first), then (s0 + s1) + (s2 + s3): the
 * order a one-row LM head sums in (generate's logits).
 */
double mat_dot4(const double *x, const double *b, int d);
/*
 * out[k] = x · row r0 + k, k < count (x: cols numbers), each in mat_dot4's
 * order with the row's numbers made doubles as the sum reads them: the bits
 * of matview_rows then mat_dot4, without a block of doubles in between
 * (BF16 and F32 four at a time with AVX2 where the processor has it).
 * 0, or -1 out of memory (out not written).
 */
int matview_dot_rows(const MatView *v, int r0, int count, const double *x, double *out);
/*
 * C (r × v.rows, row stride ldc) = A (r × v.cols, row stride lda) · vᵀ,
 * each cell summed as mat_mul sums it (matrix.h: blocks of 256 terms, each
 * from 0 in the order of t, every product rounded, the blocks added in
 * order), the numbers made doubles as they are read: the bits of mat_mul
 * on matview_to_mat(v, 1) without those doubles (a decoding step reads a real
 * model's layer weights from the file, model.h: LayerParams.file).
 * 1 when a cell it wrote is not a finite number, else 0.
 */
int matview_mul_t(const MatView *v, int r, const double *A, size_t lda, double *C, size_t ldc);
/*
 * C (r × cols, row stride ldc) = A (r × v.rows, row stride lda) · the columns
 * first, first + step, … of v (cols of them), each cell summed as mat_mul
 * sums it, the numbers made doubles as they are read: Conv1D's [in, out]
 * (GPT-2) multiplied where it lies, as matview_mul_t does nn.Linear's.
 * 1 when a cell it wrote is not a finite number, else 0 (also out of memory).
 */
int matview_mul_cols(const MatView *v, int first, int step, int cols, int r, const double *A, size_t lda, double *C,
                     size_t ldc);
/* Cell (i, j). */
double matview_at(const MatView *v, int i, int j);
/*
 * The matrix (transpose 0) or its transpose (1) as doubles of out's own
 * (mat_alloc_whole; out's old contents not freed): a real model's layer
 * weights, nn.Linear's [out, in] made attnviz's d_in × d_out when a layer is
 * computed (model.h: LayerParams.file). 0, or -1 out of memory (out empty).
 */
int matview_to_mat(const MatView *v, int transpose, Mat *out);
/* The whole matrix as doubles, made on the first call and shared by every reference; NULL out of memory. */
const Mat *matview_doubles(const MatView *v);

#endif
