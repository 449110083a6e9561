/* kernels.h: what the engine's own files share, not its callers: where each
 * matrix lives, the pass of each stage and what it remakes from what, and the
 * rows of the derived stages. attention.c defines most; compute.c (the chain,
 * updates, training), matrices.c (finding any matrix, gradients too) and the
 * variants (variants/) use them. Above the engine it arrives only with
 * variants/variants.h (explain.c and dump.c ask the list), never included
 * on its own. */
#ifndef ATTNVIZ_KERNELS_H
#define ATTNVIZ_KERNELS_H

#include "engine/attention.h"

/*
 * The storage of a computed matrix (head h for per-head ones) in a: NULL
 * when the catalogue's id has no field in Attn or AttnHead (given matrices
 * and gradients live elsewhere). attn_storage_fault() names the first
 * computed matrix of the catalogue without one, so that a new entry
 * forgotten in the tables is refused at the first computation instead of
 * aliasing another matrix.
 */
Mat *attn_slot(Attn *a, AttnMatrix which, int h);
const Mat *attn_slot_const(const Attn *a, AttnMatrix which, int h);
const char *attn_storage_fault(void);
const char *attn_grad_storage_fault(void); /* the same for the gradients (matrices.c) */

/*
 * One pass per stage: writes the matrices that stage makes into storage
 * already allocated to the catalogue's shapes, from the model alone (the
 * settings the layer computes with, cfg, and its parameters, lp: model.h),
 * never the course. NULL: the stage computes nothing (a view of other
 * matrices).
 */
typedef void (*StageKernel)(Attn *a, const ModelConfig *cfg, const LayerParams *lp);
StageKernel attn_stage_kernel(Stage st);
/* Whether stage st's pass runs in a's computation: it has one, and a's shape has the stage (or it always runs). */
int attn_stage_runs(const Attn *a, Stage st);

/*
 * What each pass remakes from what, for attn_update: a rule is one matrix
 * the pass writes and every matrix it is made from (given or computed; more
 * is harmless). ATTN_STAGE_RULES rules a stage at most; the list ends at the
 * first rule whose from is NULL (a stage with none at all: rules[0].from is
 * NULL, and it runs whenever anything changed).
 */
#define ATTN_STAGE_RULES 6
typedef struct StageRule {
	AttnMatrix out;
	const AttnMatrix *from; /* ends with AM_COUNT */
} StageRule;
#define ATTN_MADE(...) ((const AttnMatrix[]){ __VA_ARGS__, AM_COUNT })
const StageRule *attn_stage_rules(Stage st);
/*
 * out (r × c: a matrix, or a Mat of some of its rows) += the row vector b
 * (1 × c) on every row; nothing when b is empty. 1: a sum is not finite.
 */
int attn_add_bias(Mat *out, const Mat *b);
/*
 * Rows [lo, hi) and columns [c0, c1) of P = X·W + b (W's own numbers), the
 * others left as they are: each cell's sum is the same wherever it lies in
 * the product (base/matrix.h), so an edit's rows, or some heads' columns,
 * get the bits the whole product gives them. 1: a cell is not finite.
 */
int attn_project(const Mat *X, int lo, int hi, int c0, int c1, const Mat *W, const Mat *b, Mat *P);
/*
 * 1 when computed matrix w of a (every head's) holds a number that is not
 * finite, −∞ allowed where the catalogue says so (MF_NEG_INF), NaN where an
 * expert was not chosen (MF_NOT_CHOSEN): what a pass that checks itself
 * (variants.h) may call for what it remade.
 */
int attn_matrix_nonfinite(Attn *a, AttnMatrix w);

/* Allocate every computed matrix a's shape has, to the catalogue's shape (a->heads heads). 0, or -1 out of memory. */
int attn_alloc_matrices(Attn *a);
/* Free every matrix and buffer of one link (not its next link, encoder or gradients): what attn_free does for each. */
void attn_free_matrices(Attn *a);

/* Cells [0, len) of row i of derived matrix w (attn_derived) of head h, into out: the same operations as when kept. */
void attn_derived_row(const Attn *a, AttnMatrix w, int h, int i, double *out, int len);
/* One cell of a derived matrix, worked out without making it. */
double attn_derived_cell(const Attn *a, AttnMatrix w, int h, int i, int j);
/* Derived matrix w of head h, made into a->cache (NULL without memory, scores or a mask). */
const Mat *attn_derived_matrix(const Attn *a, AttnMatrix w, int h);
/* q, k, w_e: len. Bahdanau's additive score e = Σ_c w_e[c] · tanh(q_c + k_c). */
double attn_additive(const double *q, const double *k, const double *w_e, int len);
/* The rows the block's FFN reads: norm1 (post-norm), norm2 (pre-norm), residual1 (no norm). */
const Mat *attn_ffn_input(const Attn *a);
/* A scratch row of m numbers for a pass (NULL, and a->failed set, out of memory). */
double *attn_scratch_row(Attn *a, int m);
/* x and y hold the same bits (two empty matrices do): compute.c, for what attn_update compares. */
int attn_same_bits(const Mat *x, const Mat *y);
/*
 * C (r × W.cols, row stride ldc) = A (r × W.rows, row stride lda) · W, W one
 * of lp's matrices: mat_mul_view on its doubles, or, a real model's weight
 * left in its file (dormant: model.h, LayerParams.file), matview_mul_t on the
 * file's numbers: the same bits. 1 when a cell is not finite, else 0.
 */
int attn_mul_param(int r, const double *A, size_t lda, const LayerParams *lp, const Mat *W, double *C, size_t ldc);
/* The derived matrices made so far no longer hold (scores or the mask are remade); their buffers stay. */
void attn_derived_forget(Attn *a);

#endif
