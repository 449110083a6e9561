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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- names */

static const char *const matrix_names[AM_COUNT] = {
	[AM_INPUT] = "input", [AM_PE] = "PE", [AM_X] = "X",
	[AM_SOURCE_INPUT] = "source_input", [AM_PE_SRC] = "PE_src", [AM_S] = "S",
	[AM_W_Q] = "W_q", [AM_W_K] = "W_k", [AM_W_V] = "W_v", [AM_W_O] = "W_o", [AM_W_E] = "w_e",
	[AM_Q] = "Q", [AM_K] = "K", [AM_V] = "V",
	[AM_SCORES] = "scores", [AM_SCALED] = "scaled", [AM_MASKED] = "masked",
	[AM_WEIGHTS] = "weights", [AM_WEIGHTED] = "weighted",
	[AM_CONCAT] = "concat", [AM_OUTPUT] = "output",
};

const char *attn_matrix_name(AttnMatrix which)
{
	return (unsigned)which < AM_COUNT ? matrix_names[which] : NULL;
}

int attn_matrix_find(const char *name)
{
	int i;

	for (i = 0; i < AM_COUNT; i++)
		if (strcmp(name, matrix_names[i]) == 0)
			return i;
	for (i = 0; i < AM_COUNT; i++)
		if (strcasecmp(name, matrix_names[i]) == 0)
			return i;
	return -1;
}

int attn_matrix_per_head(AttnMatrix which)
{
	return which >= AM_SCORES && which <= AM_WEIGHTED;
}

int attn_matrix_editable(AttnMatrix which)
{
	return which == AM_INPUT || which == AM_SOURCE_INPUT ||
	       (which >= AM_W_Q && which <= AM_W_E);
}

const Mat *attn_matrix(const Attn *a, AttnMatrix which, int h)
{
	const Lesson *l = a->lesson;
	const Mat *m = NULL;

	if (attn_matrix_per_head(which) && (h < 0 || h >= a->heads))
		return NULL;
	switch (which) {
	case AM_INPUT: m = &l->input; break;
	case AM_PE: m = &a->PE; break;
	case AM_X: m = &a->X; break;
	case AM_SOURCE_INPUT: m = &l->source_input; break;
	case AM_PE_SRC: m = &a->PE_src; break;
	case AM_S: m = &a->S; break;
	case AM_W_Q: m = &l->W_q; break;
	case AM_W_K: m = &l->W_k; break;
	case AM_W_V: m = &l->W_v; break;
	case AM_W_O: m = &l->W_o; break;
	case AM_W_E: m = &l->w_e; break;
	case AM_Q: m = &a->Q; break;
	case AM_K: m = &a->K; break;
	case AM_V: m = &a->V; break;
	case AM_SCORES: m = &a->head[h].scores; break;
	case AM_SCALED: m = &a->head[h].scaled; break;
	case AM_MASKED: m = &a->head[h].masked; break;
	case AM_WEIGHTS: m = &a->head[h].weights; break;
	case AM_WEIGHTED: m = &a->head[h].weighted; break;
	case AM_CONCAT: m = &a->concat; break;
	case AM_OUTPUT: m = mat_empty(&a->output) ? &a->concat : &a->output; break;
	default: return NULL;
	}
	return mat_empty(m) ? NULL : m;
}

/* Which matrices a stage shows: its operands, then its result. */
int attn_stage_matrices(const Attn *a, Stage st, AttnMatrix out[ATTN_STAGE_MATRICES])
{
	const Lesson *l = a->lesson;
	int k = 0;

	switch (st) {
	case STAGE_INPUT:
		out[k++] = AM_INPUT;
		if (l->has_source)
			out[k++] = AM_SOURCE_INPUT;
		break;
	case STAGE_POSITIONAL:
		out[k++] = AM_INPUT;
		out[k++] = AM_PE;
		out[k++] = AM_X;
		if (l->has_source) {
			out[k++] = AM_SOURCE_INPUT;
			out[k++] = AM_PE_SRC;
			out[k++] = AM_S;
		}
		break;
	case STAGE_PROJECT:
		out[k++] = AM_X;
		out[k++] = AM_W_Q;
		out[k++] = AM_Q;
		if (l->has_source)
			out[k++] = AM_S;
		out[k++] = AM_W_K;
		out[k++] = AM_K;
		out[k++] = AM_W_V;
		out[k++] = AM_V;
		break;
	case STAGE_SPLIT:
		out[k++] = AM_Q;
		out[k++] = AM_K;
		out[k++] = AM_V;
		break;
	case STAGE_SCORES:
		out[k++] = AM_Q;
		out[k++] = AM_K;
		if (l->score == SCORE_ADDITIVE)
			out[k++] = AM_W_E;
		out[k++] = AM_SCORES;
		break;
	case STAGE_SCALE:
		out[k++] = AM_SCORES;
		out[k++] = AM_SCALED;
		break;
	case STAGE_MASK:
		out[k++] = AM_SCALED;
		out[k++] = AM_MASKED;
		break;
	case STAGE_SOFTMAX:
		out[k++] = AM_MASKED;
		out[k++] = AM_WEIGHTS;
		break;
	case STAGE_WEIGHTED:
		out[k++] = AM_WEIGHTS;
		out[k++] = AM_V;
		out[k++] = AM_WEIGHTED;
		break;
	case STAGE_CONCAT:
		out[k++] = AM_WEIGHTED;
		out[k++] = AM_CONCAT;
		break;
	case STAGE_OUTPUT:
		out[k++] = AM_CONCAT;
		out[k++] = AM_W_O;
		out[k++] = AM_OUTPUT;
		break;
	default:
		break;
	}
	return k;
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

/* Pass 0, input + positional: X = input + PE  (n × d_model); S likewise for a source. */
static int pass_input(Attn *a, const Lesson *l)
{
	size_t i, count;

	if (mat_copy(&a->X, &l->input) != 0)
		return -1;
	if (l->positional == POS_SINUSOIDAL) {
		if (mat_alloc(&a->PE, l->n, l->d_model) != 0)
			return -1;
		attn_positional(&a->PE);
		count = (size_t)l->n * (size_t)l->d_model;
		for (i = 0; i < count; i++)
			a->X.a[i] += a->PE.a[i];
	}
	if (!l->has_source)
		return 0;
	if (mat_copy(&a->S, &l->source_input) != 0)
		return -1;
	if (l->positional == POS_SINUSOIDAL) {
		if (mat_alloc(&a->PE_src, l->m, l->d_src) != 0)
			return -1;
		attn_positional(&a->PE_src);
		count = (size_t)l->m * (size_t)l->d_src;
		for (i = 0; i < count; i++)
			a->S.a[i] += a->PE_src.a[i];
	}
	return 0;
}

/* Pass 1, project: Q = X·W_q (n × h·d_k), K = S·W_k (m × h·d_k), V = S·W_v (m × h·d_v). */
static int pass_project(Attn *a, const Lesson *l)
{
	const Mat *S = l->has_source ? &a->S : &a->X;

	if (mat_alloc(&a->Q, l->n, l->W_q.cols) != 0 ||
	    mat_alloc(&a->K, l->m, l->W_k.cols) != 0 ||
	    mat_alloc(&a->V, l->m, l->W_v.cols) != 0)
		return -1;
	mat_mul(&a->X, &l->W_q, &a->Q);
	mat_mul(S, &l->W_k, &a->K);
	mat_mul(S, &l->W_v, &a->V);
	return 0;
}

/* Which keys each query may see: visible (n × m), 1 = may attend. */
static void build_visibility(Attn *a, const Lesson *l)
{
	int i, j;

	for (i = 0; i < l->n; i++)
		for (j = 0; j < l->m; j++) {
			int v = 1;
			switch (l->mask) {
			case MASK_NONE: v = 1; break;
			case MASK_CAUSAL: v = j <= i; break;
			case MASK_PADDING: v = MAT_AT(l->mask_matrix, 0, j) != 0.0; break;
			case MASK_MATRIX: v = MAT_AT(l->mask_matrix, i, j) != 0.0; break;
			}
			a->visible[(size_t)i * l->m + j] = (unsigned char)v;
		}
}

/*
 * Passes 2–6 for head h, reading the head's columns of Q, K and V:
 *   q_i = Q[i][h·d_k … (h+1)·d_k)   k_j = K[j][same]   v_j = V[j][h·d_v … (h+1)·d_v)
 *   scores   n × m   q_i · k_j                     (or Σ_c w_e[c]·tanh(q_ic + k_jc))
 *   scaled   n × m   scores × factor               (factor = 1/√d_k by default)
 *   masked   n × m   scaled, hidden cells := fill  (−∞ unless mask_fill says otherwise)
 *   weights  n × m   softmax of each row of masked
 *   weighted n × d_v weights · v                   (row i = Σ_j w_ij v_j)
 * With a −∞ fill, the hidden cells cost nothing after the scores: their
 * weight is exactly 0, so softmax and the weighted sum skip them.
 */
static void pass_head(Attn *a, const Lesson *l, int h)
{
	AttnHead *hd = &a->head[h];
	const int n = l->n, m = l->m, dk = l->d_k, dv = l->d_v;
	const int skip_hidden = l->mask != MASK_NONE && l->mask_fill_inf;
	const double *w_e = l->score == SCORE_ADDITIVE ? &l->w_e.a[h * dk] : NULL;
	int i, j;

	/* Pass 2, scores: how well query i matches key j. */
	if (w_e != NULL) {
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

	/* Passes 3 and 4, scale then mask. */
	for (i = 0; i < n; i++)
		for (j = 0; j < m; j++) {
			const size_t ij = (size_t)i * m + j;
			hd->scaled.a[ij] = hd->scores.a[ij] * a->factor;
			if (a->visible[ij])
				hd->masked.a[ij] = hd->scaled.a[ij];
			else
				hd->masked.a[ij] = l->mask_fill_inf ? -INFINITY : l->mask_fill;
		}

	/* Pass 5, softmax: each row becomes weights that sum to 1 (0 with nothing visible). */
	for (i = 0; i < n; i++) {
		/* With a causal −∞ mask, row i ends at key i. */
		const int len = skip_hidden && l->mask == MASK_CAUSAL ? i + 1 : m;
		attn_softmax_row(&hd->masked.a[(size_t)i * m], &hd->weights.a[(size_t)i * m], len);
	}

	/*
	 * Pass 6, weighted (n × d_v) = weights (n × m) · V_head (m × d_v): row i is
	 * Σ_j w_ij · v_j. Under a causal −∞ mask, w_ij = 0 for j > i, and the
	 * kernel skips those terms.
	 */
	mat_mul_view(n, m, dv, hd->weights.a, (size_t)m, &a->V.a[(size_t)h * dv], (size_t)a->V.cols, 0,
	             hd->weighted.a, (size_t)dv, skip_hidden && l->mask == MASK_CAUSAL);
}

/* Pass 7, concat: head h's output fills columns [h·d_v, (h+1)·d_v) of concat (n × h·d_v). */
static void pass_concat(Attn *a, const Lesson *l)
{
	int h, i;

	for (h = 0; h < l->heads; h++)
		for (i = 0; i < l->n; i++)
			memcpy(&a->concat.a[(size_t)i * a->concat.cols + (size_t)h * l->d_v],
			       &a->head[h].weighted.a[(size_t)i * l->d_v],
			       (size_t)l->d_v * sizeof(double));
}

/* Pass 8, output: output = concat · W_o  (n × h·d_v)·(h·d_v × d_out) = n × d_out. */
static int pass_output(Attn *a, const Lesson *l)
{
	if (mat_empty(&l->W_o))
		return 0;
	if (mat_alloc(&a->output, l->n, l->W_o.cols) != 0)
		return -1;
	mat_mul(&a->concat, &l->W_o, &a->output);
	return 0;
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
		for (h = 0; h < (attn_matrix_per_head((AttnMatrix)w) ? a->heads : 1); h++) {
			const Mat *m = attn_matrix(a, (AttnMatrix)w, h);
			for (i = 0; m != NULL && i < m->rows; i++)
				for (j = 0; j < m->cols; j++) {
					const double x = MAT_AT(*m, i, j);
					const int hidden = w == AM_MASKED && l->mask_fill_inf && !a->visible[(size_t)i * l->m + j];
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

/* m is rows × cols and holds its numbers. */
static int mat_is(const Mat *m, int rows, int cols)
{
	return m->rows == rows && m->cols == cols && m->a != NULL;
}

/*
 * The engine's own guard: every pass indexes the matrices by the lesson's
 * sizes (n, m, d_model, d_src, heads, d_k, d_v, d_out), so a lesson whose
 * matrices do not have those shapes, or whose mask does not fit them, is
 * refused before anything is allocated or read. lesson_validate gives the
 * learner's message first; this only makes sure that no caller, whatever
 * it passes, makes the engine read or write past a matrix. Returns the
 * first part at fault, or NULL.
 */
static const char *shape_fault(const Lesson *l)
{
	int hdk, hdv;

	if (l->heads < 1 || l->heads > LESSON_MAX_HEADS || l->n < 1 || l->n > LESSON_MAX_TOKENS || l->m < 1 ||
	    l->m > LESSON_MAX_TOKENS || l->d_k < 1 || l->d_k > LESSON_MAX_DIM || l->d_v < 1 || l->d_v > LESSON_MAX_DIM ||
	    l->d_out < 1 || l->d_out > LESSON_MAX_DIM)
		return "sizes";
	hdk = l->heads * l->d_k;
	hdv = l->heads * l->d_v;
	if (!mat_is(&l->input, l->n, l->d_model))
		return "X";
	if (l->has_source ? !mat_is(&l->source_input, l->m, l->d_src) : (l->m != l->n || l->d_src != l->d_model))
		return "source.X";
	if (!mat_is(&l->W_q, l->d_model, hdk))
		return "W_q";
	if (!mat_is(&l->W_k, l->d_src, hdk))
		return "W_k";
	if (!mat_is(&l->W_v, l->d_src, hdv))
		return "W_v";
	if (mat_empty(&l->W_o) ? l->d_out != hdv : !mat_is(&l->W_o, hdv, l->d_out))
		return "W_o";
	if (l->score == SCORE_ADDITIVE && !mat_is(&l->w_e, 1, hdk))
		return "w_e";
	if ((l->mask == MASK_CAUSAL && l->n != l->m) || (l->mask == MASK_PADDING && !mat_is(&l->mask_matrix, 1, l->m)) ||
	    (l->mask == MASK_MATRIX && !mat_is(&l->mask_matrix, l->n, l->m)))
		return "mask";
	return NULL;
}

Attn *attn_compute(const Lesson *l, char **err)
{
	const char *fault = shape_fault(l);
	Attn *a;
	int h;

	*err = NULL;
	if (fault != NULL) {
		*err = str_printf("cannot compute: the lesson's %s does not fit its sizes (n = %d, m = %d, heads = %d); "
		                  "nothing was computed", fault, l->n, l->m, l->heads);
		return NULL;
	}
	a = calloc(1, sizeof *a);
	if (a == NULL)
		goto oom;
	a->lesson = l;
	if (lesson_count_numbers(l) > (double)LESSON_MAX_NUMBERS ||
	    (l->score == SCORE_ADDITIVE && (double)l->n * l->m * l->heads * l->d_k > (double)LESSON_MAX_ADDITIVE_TERMS)) {
		*err = str_printf("the lesson with its computation would hold %.0f numbers (limit %ld, LESSON_MAX_NUMBERS), "
		                  "or its additive scores take over %ld tanh terms (LESSON_MAX_ADDITIVE_TERMS)",
		                  lesson_count_numbers(l), (long)LESSON_MAX_NUMBERS, (long)LESSON_MAX_ADDITIVE_TERMS);
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
	if (a->head == NULL || a->visible == NULL || a->row_all_masked == NULL)
		goto oom;
	if (pass_input(a, l) != 0 || pass_project(a, l) != 0)
		goto oom;
	build_visibility(a, l);
	if (l->mask_fill_inf) {
		int i, j;
		for (i = 0; i < l->n; i++) {
			int seen = 0;
			for (j = 0; j < l->m && !seen; j++)
				seen = a->visible[(size_t)i * l->m + j];
			a->row_all_masked[i] = (unsigned char)!seen;
			a->any_row_all_masked |= !seen;
		}
	}
	for (h = 0; h < l->heads; h++) {
		AttnHead *hd = &a->head[h];
		if (mat_alloc(&hd->scores, l->n, l->m) != 0 || mat_alloc(&hd->scaled, l->n, l->m) != 0 ||
		    mat_alloc(&hd->masked, l->n, l->m) != 0 || mat_alloc(&hd->weights, l->n, l->m) != 0 ||
		    mat_alloc(&hd->weighted, l->n, l->d_v) != 0)
			goto oom;
		pass_head(a, l, h);
	}
	if (mat_alloc(&a->concat, l->n, l->heads * l->d_v) != 0)
		goto oom;
	pass_concat(a, l);
	if (pass_output(a, l) != 0)
		goto oom;
	{
		AttnMatrix w;
		int oh, i, j;
		if (find_overflow(a, &w, &oh, &i, &j)) {
			const double x = MAT_AT(*attn_matrix(a, w, oh), i, j);
			char where[32] = "";
			if (attn_matrix_per_head(w) && a->heads > 1)
				snprintf(where, sizeof where, " of head %d", oh);
			*err = str_printf("the numbers grow too large to compute: %s[%d][%d]%s is %s (doubles overflow "
			                  "past about 1.8e308); use smaller inputs or weights",
			                  attn_matrix_name(w), i, j, where, isnan(x) ? "not a number" : x > 0 ? "+inf" : "-inf");
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
