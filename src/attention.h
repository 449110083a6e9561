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
	LessonShape shape;    /* its sizes and features, for the catalogue's rules */
	double factor;        /* the scale factor applied to scores */
	Mat PE;               /* n × d_model, empty without positional encoding */
	Mat X;                /* n × d_model: input + PE */
	Mat PE_src;           /* m × d_src, cross-attention with positional encoding only */
	Mat S;                /* m × d_src: source input + PE (cross-attention only, else empty) */
	Mat Q, K, V;
	int heads;
	AttnHead *head;       /* heads of them */
	Mat concat;           /* n × h·d_v */
	Mat output;           /* n × d_out: concat · W_o (a copy of concat without W_o) */
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

/* ---- the matrices and stages of a computed lesson (names and kinds: catalog.h) ---- */

/* The matrix (for per-head ones, of head h); NULL when absent in this lesson. */
const Mat *attn_matrix(const Attn *a, AttnMatrix which, int h);
/*
 * The panes stage st shows in this computation: its operands, then its
 * result (the last one is what a question on that stage hides). Returns the count.
 */
int attn_stage_panes(const Attn *a, Stage st, StagePane out[STAGE_MAX_PANES]);
/* The same, only the matrices. */
int attn_stage_matrices(const Attn *a, Stage st, AttnMatrix out[STAGE_MAX_PANES]);

#endif
