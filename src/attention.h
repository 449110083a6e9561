/* attention.h: every stage of (multi-head, masked, cross-) attention, kept. */
#ifndef ATTNVIZ_ATTENTION_H
#define ATTNVIZ_ATTENTION_H

#include "lesson.h"

/*
 * Shape legend (row convention, as nn.Linear without bias):
 *   n  query rows        m   key/value rows (n unless cross-attention)
 *   h  heads             d_k, d_v  per-head widths
 *   X  n × d_model       S   m × d_src (the source; X itself without one)
 *   Q = X·W_q  n × h·d_k     K = S·W_k  m × h·d_k     V = S·W_v  m × h·d_v
 * Head i sees columns [i·d_k, (i+1)·d_k) of Q and K and [i·d_v, (i+1)·d_v) of V.
 */
typedef struct AttnHead {
	Mat scores;   /* n × m  q_i · k_j (or additive e_ij) */
	Mat scaled;   /* n × m  scores × factor */
	Mat masked;   /* n × m  scaled, masked cells replaced by the fill (−∞ by default) */
	Mat weights;  /* n × m  row-wise softmax of masked; a row with no visible key is 0 */
	Mat weighted; /* n × d_v  weights · V_head  ("output" of the head in --dump) */
} AttnHead;

typedef struct Attn {
	const Lesson *lesson; /* borrowed: the lesson this was computed from */
	double factor;        /* the scale factor applied to scores */
	Mat PE;               /* n × d_model, empty without positional encoding */
	Mat X;                /* n × d_model: input + PE */
	Mat PE_src;           /* m × d_src, cross-attention with positional encoding only */
	Mat S;                /* m × d_src: source input + PE (cross-attention only, else empty) */
	Mat Q, K, V;
	int heads;
	AttnHead *head;       /* heads of them */
	Mat concat;           /* n × h·d_v */
	Mat output;           /* n × d_out: concat · W_o (empty without W_o: then concat is the output) */
	unsigned char *visible;      /* n × m: 1 where query i may attend to key j */
	unsigned char *row_all_masked; /* n: 1 when row i has no visible key (its weights are 0) */
	int any_row_all_masked;
} Attn;

/*
 * Compute every stage of lesson l. Returns a new Attn, or NULL with *err set
 * (out of memory, over a documented limit). The lesson must outlive the result.
 */
Attn *attn_compute(const Lesson *l, char **err);
void attn_free(Attn *a);

/* ---- the kernels, public so tests and `explain` can use them ---- */

/* PE: rows × cols; PE(pos,2i) = sin(pos/10000^(2i/cols)), PE(pos,2i+1) = cos(…). */
void attn_positional(Mat *PE);
/* x: len values, out: len; out = softmax(x), max subtracted; −∞ entries get 0.
 * Returns 0, or 1 when every entry is −∞ (out is then all 0). */
int attn_softmax_row(const double *x, double *out, int len);

/* ---- names for the matrices a learner can ask for ---- */

typedef enum AttnMatrix {
	AM_INPUT, AM_PE, AM_X, AM_SOURCE_INPUT, AM_PE_SRC, AM_S,
	AM_W_Q, AM_W_K, AM_W_V, AM_W_O, AM_W_E,
	AM_Q, AM_K, AM_V,
	AM_SCORES, AM_SCALED, AM_MASKED, AM_WEIGHTS, AM_WEIGHTED,
	AM_CONCAT, AM_OUTPUT,
	AM_COUNT
} AttnMatrix;

/*
 * The matrices a stage shows, in order: its operands, then its result (the
 * last one is what a question on that stage hides). For scores: Q, K (and
 * w_e), scores; for softmax: masked, weights; … Returns the count.
 */
#define ATTN_STAGE_MATRICES 8
int attn_stage_matrices(const Attn *a, Stage st, AttnMatrix out[ATTN_STAGE_MATRICES]);

/* "input", "PE", "X", "source_input", "PE_src", "S", "W_q", …, "weighted", "concat", "output". */
const char *attn_matrix_name(AttnMatrix which);
/* By exact name (case-sensitive), then case-insensitive; -1 when unknown. */
int attn_matrix_find(const char *name);
/* 1 for the per-head matrices (scores … weighted). */
int attn_matrix_per_head(AttnMatrix which);
/* 1 for the matrices a learner may edit with `set` (input, source_input, W_*, w_e). */
int attn_matrix_editable(AttnMatrix which);
/* The matrix (for per-head ones, of head h); NULL when absent in this lesson. */
const Mat *attn_matrix(const Attn *a, AttnMatrix which, int h);

#endif
