/* matrix.h: the dense row-major matrix every stage is kept in. */
#ifndef ATTNVIZ_MATRIX_H
#define ATTNVIZ_MATRIX_H

#include <stddef.h>

/*
 * A rows × cols matrix of doubles, row-major: element (i, j) is a[i*cols + j].
 * An empty matrix has rows == cols == 0 and a == NULL; "absent" matrices
 * (no W_o, no cross-attention source) are empty.
 * The owner frees with mat_free(); a Mat passed as const is never written.
 */
typedef struct Mat {
	int rows;
	int cols;
	double *a;
} Mat;

#define MAT_AT(m, i, j) ((m).a[(size_t)(i) * (size_t)(m).cols + (size_t)(j)])

/* Allocate a zero-filled rows × cols matrix. Returns 0, or -1 when out of memory. */
int mat_alloc(Mat *m, int rows, int cols);
/*
 * The same for a matrix the caller will write whole before reading it: a
 * large one may come back with what a freed matrix of its size held, which
 * spares zeroing it (a recomputation asks for the same sizes at once).
 */
int mat_alloc_whole(Mat *m, int rows, int cols);
void mat_free(Mat *m);
/* Deep copy; dst is overwritten (not freed first); a dormant src (rows and cols, no numbers: model.h, LayerParams.file) gives a dormant dst. Returns 0 or -1. */
int mat_copy(Mat *dst, const Mat *src);
int mat_empty(const Mat *m);

/*
 * Shapes: A is r × k, B is k × c, C is r × c (already allocated).
 * C = A · B. The reference loop (mat_mul_naive) is kept beside the fast
 * one (mat_mul, in gemm.c) so tests can compare the two. Each cell sums
 * its terms in blocks of 256, each block from 0 in the order of t, and
 * adds the block sums in order. An exact kernel rounds every product before
 * adding it (no fused multiply-add): for k ≤ 256 that is mat_mul_naive's
 * result bit for bit, past that within rounding of it. A fused kernel
 * (mat_kernel_fused) adds each product with one rounding, fma(a, b, s):
 * within rounding of mat_mul_naive, |C − N| ≤ 2k·2⁻⁵²·Σ|a·b|. Every exact
 * kernel gives the same bits, as does every fused one.
 */
void mat_mul_naive(const Mat *A, const Mat *B, Mat *C);
/* Returns 1 when a cell it wrote is not a finite number (NaN or ±∞), else 0. */
int mat_mul(const Mat *A, const Mat *B, Mat *C);
/*
 * The kernel behind mat_mul, on views into larger matrices (a head's columns):
 * C (r × c, row stride ldc) = A (r × k, row stride lda) · B, where B is
 * k × c with row stride ldb, or with b_trans the transpose of a c × k
 * matrix with row stride ldb (so Q·Kᵀ needs no copy of K).
 * lower = 1 promises that row i of A is 0 from column i+1 on (causal
 * weights); most of those terms are skipped, which changes no finite
 * result since they would add exact zeros.
 * Returns 1 when a cell of C it wrote is not a finite number, else 0 (the
 * check is made on each tile while it is in the cache, so it costs nothing).
 */
int mat_mul_view(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb, int b_trans,
                  double *C, size_t ldc, int lower);

/*
 * C (r × c, row stride ldc) += op(A) · op(B), every cell's terms added in
 * one chain in the order of t = 0 … k−1, each product rounded (with a fused
 * kernel, each added by fma): the naive loops' sums bit for bit whatever k
 * (no blocks of 256, unlike mat_mul_view), so a pass written as such loops
 * (the backward pass) keeps its bits.
 * op(A) is A (r × k, row stride lda), or with a_trans the transpose of a
 * k × r matrix (row stride lda); op(B) is B (k × c, ldb), or with b_trans
 * the transpose of a c × k matrix (ldb). how says where a cell's sum starts:
 *   MAT_CONTINUE  from C: C = ((C + a_0·b_0) + a_1·b_1) + …
 *   MAT_ADD_SUM   from 0, then added: C = C + (((0 + a_0·b_0) + a_1·b_1) + …)
 * mat_mul_acc_naive is the definition, one cell at a time (tests compare
 * the two); mat_mul_acc runs on the kernels below (out of memory for
 * their packed blocks, on the definition).
 */
enum { MAT_CONTINUE = 0, MAT_ADD_SUM = 1 };
void mat_mul_acc(int r, int k, int c, const double *A, size_t lda, int a_trans, const double *B, size_t ldb,
                 int b_trans, double *C, size_t ldc, int how);
void mat_mul_acc_naive(int r, int k, int c, const double *A, size_t lda, int a_trans, const double *B, size_t ldb,
                       int b_trans, double *C, size_t ldc, int how);
/*
 * mat_mul_acc's MAT_CONTINUE: C += op(A)·op(B), each cell's terms in one
 * chain in the order of t, continuing from what C holds. lower: A, as stored,
 * is 0 past its diagonal (a causal softmax's weights, their gradients): read
 * as it is (a_trans 0) row i stops at term i; read transposed (a_trans 1:
 * Aᵀ's row i is A's column i) it starts at term i, and the terms no strip of
 * rows reaches are skipped (mat_mul_view's lower). The same bits as without
 * it where B is finite and no cell of C is −0: a skipped term is an exact 0,
 * and a chain from +0 never is −0.
 */
void mat_mul_continue(int r, int k, int c, const double *A, size_t lda, int a_trans, const double *B, size_t ldb,
                      int b_trans, double *C, size_t ldc, int lower);
/*
 * C (r × c, ldc) = A (r × k, lda) · op(B), each cell's terms in one chain
 * from 0 in the order of t: the bits of the loop
 *   s = 0; for t: s += A[i][t]·B[t][j]
 * (mat_mul_continue from zeros), so a pass written as such loops can run on
 * the kernels and keep its numbers. op(B) is B (k × c, ldb), or with b_trans
 * the transpose of a c × k matrix (ldb). lower: A is 0 past its diagonal,
 * and those terms are skipped (mat_mul_continue).
 */
void mat_mul_chain(int r, int k, int c, const double *A, size_t lda, const double *B, size_t ldb, int b_trans, double *C,
                   size_t ldc, int lower);

/*
 * The multiply-adds this thread's products (mat_mul_view, mat_mul_acc,
 * mat_mul_continue, mat_mul_chain, mat_dots, mat_axpy) have been asked for
 * since it began, the terms a lower product skips left out: the work
 * `attnviz --bench` sets against the machine's dgemm speed. Take the
 * difference of two readings.
 */
unsigned long long mat_madds(void);

/*
 * The micro-kernels behind mat_mul_view, fastest first ("avx512fma",
 * "avx512", "avx2fma", "avx2", "portable" on x86-64; "portable"
 * elsewhere). The first the processor supports is used, or the one named by
 * the environment variable ATTNVIZ_KERNEL when the processor supports it.
 * mat_kernel_use switches (tests, benchmarks; not while another thread
 * multiplies): 0, or -1 when the name is unknown or the processor lacks it.
 * mat_kernel_fused: 1 when the active kernel adds each product with one
 * rounding (fma), 0 when it rounds the product first (mat_mul_naive's way);
 * mat_mul_acc_naive follows it, so the definition and the kernel agree.
 */
int mat_kernel_count(void);
const char *mat_kernel_name(int i);
int mat_kernel_supported(int i);
const char *mat_kernel_active(void);
int mat_kernel_use(const char *name);
int mat_kernel_fused(void);

/*
 * MAT_WIDE before a function whose loops go along rows of numbers, each number's own arithmetic (no sum
 * reordered), which the compiler makes vectors of: it is built twice, for the x86-64 every processor has (two
 * doubles a vector) and for AVX2 (four), and the one the processor has is chosen when the program starts (GCC's
 * and Clang's target_clones, an ifunc). The same bits either way: no product is fused with its add
 * (-ffp-contract=off). Elsewhere, and under AddressSanitizer, one build.
 */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MAT_NO_CLONES 1
#endif
#endif
#ifndef MAT_NO_CLONES
#define MAT_WIDE __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef MAT_WIDE
#define MAT_WIDE
#endif

/*
 * One-row products a pass writes by hand beside mat_mul_view's (a decoding
 * step beside the whole computation), each product added as the active
 * kernel adds it (mat_kernel_fused), so their bits are the kernels':
 * mat_dots: s[j] = q · keys[j] (key j at keys + j·ld, d numbers) for j < count,
 * each sum from 0 in the order of the d terms, eight keys side by side;
 * mat_axpy: out[c] = out[c] + w·v[c] for c < n.
 */
void mat_dots(const double *q, const double *keys, size_t ld, int d, int count, double *s);
/* mat_dots with each product rounded before it is added whatever the kernel: a pass's own loop's bits (DeltaNet's chunks). */
void mat_dots_exact(const double *q, const double *keys, size_t ld, int d, int count, double *s);
void mat_axpy(int n, double w, const double *v, double *out);

/*
 * Σ x[j] for j < n (a softmax's denominator). Beside an exact kernel from 0
 * left to right, as the loop always summed; beside a fused one in eight
 * running sums (x[j] into sum j mod 8) joined pairwise: another order, within
 * n·ε·Σ|x| of the loop's (tests/unit_kernels.c).
 */
double mat_sum(int n, const double *x);
/* The largest of x[0 … n), NaN skipped, −∞ when none: the loop one at a time's, to the bit (of +0 and −0 the first). */
double mat_max(int n, const double *x);
/* x[j] = x[j] / d for j < n (a softmax's weights over their sum): each quotient rounded once, the same bits every way. */
void mat_divide(int n, double *x, double d);

/*
 * out[j] = e^(x[j] − shift) for j < n (x[j] = −∞ gives 0; out may be x), a
 * softmax's exponentials (vexp.c). Beside a fused kernel, glibc's vector exp
 * (libmvec, within 4 ulp) where the system has it: mat_exp_vector says 1;
 * otherwise glibc's exp cell by cell. A cell's bits depend only on its x and
 * shift, not on n or its place in the row.
 */
void mat_exp_shifted(int n, const double *x, double shift, double *out);
int mat_exp_vector(void);
/*
 * out[j] = tanh(x[j]) for j < n (out may be x), the soft cap's (vexp.c): beside a
 * fused kernel glibc's vector tanh (libmvec, glibc 2.35 on; within 4 ulp) where
 * the system has it, mat_tanh_vector says 1; otherwise glibc's tanh cell by
 * cell. A cell's bits depend only on its x.
 */
void mat_tanh(int n, const double *x, double *out);
int mat_tanh_vector(void);

/* 1 when one of the count numbers at p is NaN or ±∞, 0 when all are finite. */
int mat_nonfinite(const double *p, size_t count);

/*
 * Mean and sample standard deviation (n − 1, as torch.std) of the finite cells, and the smallest and
 * largest of them (+∞ and −∞ when none is finite), in one look at each cell; returns their count.
 */
size_t mat_stats_range(const Mat *m, double *mean, double *std, double *min, double *max);

#endif
