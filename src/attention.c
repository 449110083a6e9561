/* attention.c: the stages of attention as named passes, in double precision.
 *
 * Pure computation: no I/O, no curses. Every intermediate matrix is kept so
 * that it can be shown, explained and dumped. See attention.h for the shape
 * legend; each pass below repeats the shapes it reads and writes.
 *
 * Attention is the one layer that mixes information across tokens: row i of
 * the output is a weighted average of the value rows of every token query i
 * may see, weighted by how well query i matches each key.
 */
#include "attention.h"
#include "strbuf.h"

#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- where each matrix lives */

/* Computed matrices of the whole layer, and of each head (the catalogue's MF_PER_HEAD kinds). */
static const size_t attn_field[AM_COUNT] = {
	[AM_PE] = offsetof(Attn, PE), [AM_X] = offsetof(Attn, X), [AM_PE_SRC] = offsetof(Attn, PE_src),
	[AM_S] = offsetof(Attn, S), [AM_Q] = offsetof(Attn, Q), [AM_K] = offsetof(Attn, K),
	[AM_V] = offsetof(Attn, V), [AM_CONCAT] = offsetof(Attn, concat), [AM_OUTPUT] = offsetof(Attn, output),
};
static const size_t head_field[AM_COUNT] = {
	[AM_SCORES] = offsetof(AttnHead, scores), [AM_SCALED] = offsetof(AttnHead, scaled),
	[AM_MASKED] = offsetof(AttnHead, masked), [AM_WEIGHTS] = offsetof(AttnHead, weights),
	[AM_WEIGHTED] = offsetof(AttnHead, weighted),
};

/* The storage of a computed matrix (head h for per-head ones). */
static Mat *slot(Attn *a, AttnMatrix which, int h)
{
	if (matrix_kinds[which].flags & MF_PER_HEAD)
		return (Mat *)((char *)&a->head[h] + head_field[which]);
	return (Mat *)((char *)a + attn_field[which]);
}

const Mat *attn_matrix(const Attn *a, AttnMatrix which, int h)
{
	const Mat *m;

	if ((unsigned)which >= AM_COUNT)
		return NULL;
	if ((matrix_kinds[which].flags & MF_PER_HEAD) && (h < 0 || h >= a->heads))
		return NULL;
	if (matrix_kinds[which].flags & MF_GIVEN)
		m = lesson_matrix((Lesson *)a->lesson, which);
	else
		m = slot((Attn *)a, which, h);
	return mat_empty(m) ? NULL : m;
}

int attn_stage_panes(const Attn *a, Stage st, StagePane out[STAGE_MAX_PANES])
{
	return stage_panes(&a->shape, st, out);
}

int attn_stage_matrices(const Attn *a, Stage st, AttnMatrix out[STAGE_MAX_PANES])
{
	StagePane p[STAGE_MAX_PANES];
	const int n = stage_panes(&a->shape, st, p);

	for (int i = 0; i < n; i++)
		out[i] = p[i].matrix;
	return n;
}

/* ---------------------------------------------------------------- kernels */

/*
 * PE: rows × cols (positions × features).
 * PE(pos, 2i) = sin(pos / 10000^(2i/cols)), PE(pos, 2i+1) = cos(pos / 10000^(2i/cols)):
 * each pair of columns is a clock ticking at its own speed, so every position
 * gets a distinct pattern and nearby positions similar ones.
 */
void attn_positional(Mat *PE)
{
	int pos, c;

	for (pos = 0; pos < PE->rows; pos++)
		for (c = 0; c < PE->cols; c++) {
			const int even = c - (c % 2);
			const double angle = pos / pow(10000.0, (double)even / PE->cols);
			MAT_AT(*PE, pos, c) = (c % 2 == 0) ? sin(angle) : cos(angle);
		}
}

/*
 * x, out: len.
 * out_j = exp(x_j − max) / Σ_t exp(x_t − max). Subtracting the row maximum
 * changes nothing mathematically (it cancels) but keeps exp() from
 * overflowing: softmax([1000, 1, −1000]) is [1, e^-999, e^-2000], not NaN.
 * Entries of −∞ (masked) get exactly 0. When every entry is −∞ there is
 * nothing to attend to: out is all 0 and the function returns 1.
 */
int attn_softmax_row(const double *x, double *out, int len)
{
	double max = -INFINITY, sum = 0.0;
	int j;

	for (j = 0; j < len; j++)
		if (x[j] > max)
			max = x[j];
	if (max == -INFINITY) {
		for (j = 0; j < len; j++)
			out[j] = 0.0;
		return 1;
	}
	for (j = 0; j < len; j++) {
		out[j] = x[j] == -INFINITY ? 0.0 : exp(x[j] - max);
		sum += out[j];
	}
	for (j = 0; j < len; j++)
		out[j] /= sum;
	return 0;
}

/* q, k, w_e: len. Bahdanau's e = Σ_c w_e[c] · tanh(q_c + k_c). */
static double additive(const double *q, const double *k, const double *w_e, int len)
{
	double sum = 0.0;
	int c;

	for (c = 0; c < len; c++)
		sum += w_e[c] * tanh(q[c] + k[c]);
	return sum;
}

/* ---------------------------------------------------------------- passes */

/*
 * One pass per stage, in the order of the stage table (catalog.h), each
 * writing the matrices that stage makes into storage already allocated to
 * the catalogue's shapes. Every pass runs, whether or not the lesson shows
 * its stage: without a mask, masked is scaled itself; with one head,
 * concat is that head's output; without W_o, output is concat.
 */
typedef void (*StageKernel)(Attn *a, const Lesson *l);

/* Pass 0, input: X = input (n × d_model); S = source_input (m × d_src). */
static void pass_input(Attn *a, const Lesson *l)
{
	memcpy(a->X.a, l->input.a, (size_t)l->n * (size_t)l->d_model * sizeof(double));
	if (l->has_source)
		memcpy(a->S.a, l->source_input.a, (size_t)l->m * (size_t)l->d_src * sizeof(double));
}

/* Pass 1, positional: X += PE (n × d_model); S += PE_src (m × d_src). */
static void pass_positional(Attn *a, const Lesson *l)
{
	size_t i, count;

	if (l->positional != POS_SINUSOIDAL)
		return;
	attn_positional(&a->PE);
	count = (size_t)l->n * (size_t)l->d_model;
	for (i = 0; i < count; i++)
		a->X.a[i] += a->PE.a[i];
	if (!l->has_source)
		return;
	attn_positional(&a->PE_src);
	count = (size_t)l->m * (size_t)l->d_src;
	for (i = 0; i < count; i++)
		a->S.a[i] += a->PE_src.a[i];
}

/* Pass 2, project: Q = X·W_q (n × h·d_k), K = S·W_k (m × h·d_k), V = S·W_v (m × h·d_v). */
static void pass_project(Attn *a, const Lesson *l)
{
	const Mat *S = l->has_source ? &a->S : &a->X;

	mat_mul(&a->X, &l->W_q, &a->Q);
	mat_mul(S, &l->W_k, &a->K);
	mat_mul(S, &l->W_v, &a->V);
}

/*
 * Pass 3, scores, for each head h, reading the head's columns of Q and K:
 *   q_i = Q[i][h·d_k … (h+1)·d_k)   k_j = K[j][same]
 *   scores  n × m   q_i · k_j   (or Σ_c w_e[c]·tanh(q_ic + k_jc))
 */
static void pass_scores(Attn *a, const Lesson *l)
{
	const int n = l->n, m = l->m, dk = l->d_k;
	int h, i, j;

	for (h = 0; h < a->heads; h++) {
		AttnHead *hd = &a->head[h];
		if (l->score == SCORE_ADDITIVE) {
			const double *w_e = &l->w_e.a[h * dk];
			for (i = 0; i < n; i++) {
				const double *q_i = &a->Q.a[(size_t)i * a->Q.cols + (size_t)h * dk];
				double *scores_i = &hd->scores.a[(size_t)i * m];
				for (j = 0; j < m; j++) {
					const double *k_j = &a->K.a[(size_t)j * a->K.cols + (size_t)h * dk];
					scores_i[j] = additive(q_i, k_j, w_e, dk);
				}
			}
		} else {
			/* scores (n × m) = Q_head (n × d_k) · K_headᵀ (d_k × m): every q_i · k_j at once. */
			mat_mul_view(n, dk, m, &a->Q.a[(size_t)h * dk], (size_t)a->Q.cols, &a->K.a[(size_t)h * dk],
			             (size_t)a->K.cols, 1, hd->scores.a, (size_t)m, 0);
		}
	}
}

/* Pass 4, scale: scaled (n × m) = scores × factor (1/√d_k by default). */
static void pass_scale(Attn *a, const Lesson *l)
{
	const size_t count = (size_t)l->n * (size_t)l->m;
	int h;

	for (h = 0; h < a->heads; h++)
		for (size_t ij = 0; ij < count; ij++)
			a->head[h].scaled.a[ij] = a->head[h].scores.a[ij] * a->factor;
}

/* Which keys each query may see: visible (n × m), 1 = may attend; rows with none. */
static void build_visibility(Attn *a, const Lesson *l)
{
	int i, j;

	for (i = 0; i < l->n; i++) {
		int seen = 0;
		for (j = 0; j < l->m; j++) {
			int v = 1;
			switch (l->mask) {
			case MASK_NONE: v = 1; break;
			case MASK_CAUSAL: v = j <= i; break;
			case MASK_PADDING: v = MAT_AT(l->mask_matrix, 0, j) != 0.0; break;
			case MASK_MATRIX: v = MAT_AT(l->mask_matrix, i, j) != 0.0; break;
			}
			a->visible[(size_t)i * l->m + j] = (unsigned char)v;
			seen |= v;
		}
		if (l->mask_fill_inf) {
			a->row_all_masked[i] = (unsigned char)!seen;
			a->any_row_all_masked |= !seen;
		}
	}
}

/* Pass 5, mask: masked (n × m) = scaled, hidden cells := fill (−∞ unless mask_fill says otherwise). */
static void pass_mask(Attn *a, const Lesson *l)
{
	const size_t count = (size_t)l->n * (size_t)l->m;
	const double fill = l->mask_fill_inf ? -INFINITY : l->mask_fill;
	int h;

	build_visibility(a, l);
	for (h = 0; h < a->heads; h++)
		for (size_t ij = 0; ij < count; ij++)
			a->head[h].masked.a[ij] = a->visible[ij] ? a->head[h].scaled.a[ij] : fill;
}

/* With a causal −∞ mask, row i ends at key i: what follows has exactly 0 weight. */
static int causal_skip(const Lesson *l)
{
	return l->mask == MASK_CAUSAL && l->mask_fill_inf;
}

/* Pass 6, softmax: each row of masked becomes weights (n × m) that sum to 1 (0 with nothing visible). */
static void pass_softmax(Attn *a, const Lesson *l)
{
	const int n = l->n, m = l->m;
	int h, i;

	for (h = 0; h < a->heads; h++)
		for (i = 0; i < n; i++) {
			const int len = causal_skip(l) ? i + 1 : m;
			attn_softmax_row(&a->head[h].masked.a[(size_t)i * m], &a->head[h].weights.a[(size_t)i * m], len);
		}
}

/*
 * Pass 7, weighted (n × d_v) = weights (n × m) · V_head (m × d_v): row i is
 * Σ_j w_ij · v_j. Under a causal −∞ mask, w_ij = 0 for j > i, and the
 * kernel skips those terms.
 */
static void pass_weighted(Attn *a, const Lesson *l)
{
	const int n = l->n, m = l->m, dv = l->d_v;
	int h;

	for (h = 0; h < a->heads; h++)
		mat_mul_view(n, m, dv, a->head[h].weights.a, (size_t)m, &a->V.a[(size_t)h * dv], (size_t)a->V.cols, 0,
		             a->head[h].weighted.a, (size_t)dv, causal_skip(l));
}

/* Pass 8, concat: head h's output fills columns [h·d_v, (h+1)·d_v) of concat (n × h·d_v). */
static void pass_concat(Attn *a, const Lesson *l)
{
	int h, i;

	for (h = 0; h < l->heads; h++)
		for (i = 0; i < l->n; i++)
			memcpy(&a->concat.a[(size_t)i * a->concat.cols + (size_t)h * l->d_v],
			       &a->head[h].weighted.a[(size_t)i * l->d_v],
			       (size_t)l->d_v * sizeof(double));
}

/* Pass 9, output: output = concat · W_o  (n × h·d_v)·(h·d_v × d_out) = n × d_out; concat without W_o. */
static void pass_output(Attn *a, const Lesson *l)
{
	if (mat_empty(&l->W_o))
		memcpy(a->output.a, a->concat.a, (size_t)a->concat.rows * (size_t)a->concat.cols * sizeof(double));
	else
		mat_mul(&a->concat, &l->W_o, &a->output);
}

/* The kernel of each stage: the engine's half of the stage table (catalog.c has the rest). */
static const StageKernel stage_kernel[STAGE_COUNT] = {
	[STAGE_INPUT] = pass_input,
	[STAGE_POSITIONAL] = pass_positional,
	[STAGE_PROJECT] = pass_project,
	[STAGE_SPLIT] = NULL, /* a view of Q, K and V: nothing to compute */
	[STAGE_SCORES] = pass_scores,
	[STAGE_SCALE] = pass_scale,
	[STAGE_MASK] = pass_mask,
	[STAGE_SOFTMAX] = pass_softmax,
	[STAGE_WEIGHTED] = pass_weighted,
	[STAGE_CONCAT] = pass_concat,
	[STAGE_OUTPUT] = pass_output,
};

/* Allocate every computed matrix this lesson has, to the catalogue's shape. */
static int alloc_matrices(Attn *a)
{
	for (int w = 0; w < AM_COUNT; w++) {
		const MatrixKind *k = &matrix_kinds[w];
		int rows, cols;
		if ((k->flags & MF_GIVEN) || !matrix_present(&a->shape, (AttnMatrix)w, NULL))
			continue;
		matrix_shape(&a->shape, (AttnMatrix)w, &rows, &cols);
		for (int h = 0; h < ((k->flags & MF_PER_HEAD) ? a->heads : 1); h++)
			if (mat_alloc(slot(a, (AttnMatrix)w, h), rows, cols) != 0)
				return -1;
	}
	return 0;
}

/* How many numbers every matrix of this computation holds together. */
static double count_numbers(const Lesson *l)
{
	return lesson_count_numbers(l->n, l->m, l->d_model, l->d_src, l->heads, l->d_k, l->d_v, l->d_out);
}

/*
 * The first cell, in the order the stages are computed, that is not a finite
 * number: NaN, or ±∞ anywhere but a cell a −∞ mask hid on purpose. Doubles
 * overflow past about 1.8e308, and one overflow turns everything after it
 * into NaN, which would be shown as if it meant something. Returns 1 and
 * the place, or 0 when every number is finite.
 */
static int find_overflow(const Attn *a, AttnMatrix *which, int *head, int *row, int *col)
{
	const Lesson *l = a->lesson;
	int w, h, i, j;

	for (w = 0; w < AM_COUNT; w++)
		for (h = 0; h < (matrix_per_head((AttnMatrix)w) ? a->heads : 1); h++) {
			const Mat *m = attn_matrix(a, (AttnMatrix)w, h);
			for (i = 0; m != NULL && i < m->rows; i++)
				for (j = 0; j < m->cols; j++) {
					const double x = MAT_AT(*m, i, j);
					const int hidden = (matrix_kinds[w].flags & MF_MASKED) && l->mask_fill_inf && !a->visible[(size_t)i * l->m + j];
					if (!isfinite(x) && !(hidden && x == -INFINITY)) {
						*which = (AttnMatrix)w;
						*head = h;
						*row = i;
						*col = j;
						return 1;
					}
				}
		}
	return 0;
}

Attn *attn_compute(const Lesson *l, char **err)
{
	Attn *a = calloc(1, sizeof *a);
	int st;

	*err = NULL;
	if (a == NULL)
		goto oom;
	a->lesson = l;
	lesson_shape(l, &a->shape);
	if (count_numbers(l) > (double)LESSON_MAX_NUMBERS) {
		*err = str_printf("the computation would hold %.0f numbers, over the limit of %ld (LESSON_MAX_NUMBERS)",
		              count_numbers(l), (long)LESSON_MAX_NUMBERS);
		attn_free(a);
		return NULL;
	}
	switch (l->scale) {
	case SCALE_SQRT_DK: a->factor = 1.0 / sqrt((double)l->d_k); break;
	case SCALE_NONE: a->factor = 1.0; break;
	case SCALE_VALUE: a->factor = l->scale_value; break;
	}
	a->heads = l->heads;
	a->head = calloc((size_t)l->heads, sizeof *a->head);
	a->visible = malloc((size_t)l->n * (size_t)l->m);
	a->row_all_masked = calloc((size_t)l->n, 1);
	if (a->head == NULL || a->visible == NULL || a->row_all_masked == NULL || alloc_matrices(a) != 0)
		goto oom;
	for (st = 0; st < STAGE_COUNT; st++)
		if (stage_kernel[st] != NULL)
			stage_kernel[st](a, l);
	{
		AttnMatrix w;
		int oh, i, j;
		if (find_overflow(a, &w, &oh, &i, &j)) {
			const double x = MAT_AT(*attn_matrix(a, w, oh), i, j);
			char where[32] = "";
			if (matrix_per_head((AttnMatrix)w) && a->heads > 1)
				snprintf(where, sizeof where, " of head %d", oh);
			*err = str_printf("the numbers grow too large to compute: %s[%d][%d]%s is %s (doubles overflow "
			                  "past about 1.8e308); use smaller inputs or weights",
			                  matrix_name(w), i, j, where, isnan(x) ? "not a number" : x > 0 ? "+inf" : "-inf");
			attn_free(a);
			return NULL;
		}
	}
	return a;
oom:
	*err = str_printf("out of memory computing the lesson");
	attn_free(a);
	return NULL;
}

void attn_free(Attn *a)
{
	int h;

	if (a == NULL)
		return;
	mat_free(&a->PE);
	mat_free(&a->X);
	mat_free(&a->PE_src);
	mat_free(&a->S);
	mat_free(&a->Q);
	mat_free(&a->K);
	mat_free(&a->V);
	if (a->head != NULL)
		for (h = 0; h < a->heads; h++) {
			mat_free(&a->head[h].scores);
			mat_free(&a->head[h].scaled);
			mat_free(&a->head[h].masked);
			mat_free(&a->head[h].weights);
			mat_free(&a->head[h].weighted);
		}
	free(a->head);
	mat_free(&a->concat);
	mat_free(&a->output);
	free(a->visible);
	free(a->row_all_masked);
	free(a);
}
