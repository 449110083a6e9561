/* explain.c: the arithmetic behind any cell, with the lesson's own numbers. */
#include "explain.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labels.h"
#include "strbuf.h"

/* Add a label (token), escaped. */
static void buf_label(StrBuf *b, char *label)
{
	strbuf_printf(b, "%s", label ? label : "?");
	free(label);
}

#define MAX_TERMS 12 /* sums longer than this are shown in part */

/* Numbers in explanations: enough digits to check by hand. */
static const char *num(char buf[32], double x, int utf8)
{
	if (x == -INFINITY)
		return utf8 ? "-\u221e" : "-inf";
	snprintf(buf, 32, "%.6g", x);
	return buf;
}

static const char *sym(int utf8, const char *u, const char *a)
{
	return utf8 ? u : a;
}

/* row of A (r × k) times column of B (k × c): "Σ_t A[row][t]·B[t][col]" with its terms. */
static void explain_product(StrBuf *b, const Mat *A, int row, const Mat *B, int col, int utf8,
                            const char *aname, const char *bname, int acol0, int bcol0, int len)
{
	char x1[32], x2[32], x3[32];
	double sum = 0.0;
	int t;

	strbuf_printf(b, "= %s row %d %s %s column %d\n= ", aname, row, sym(utf8, "\u00b7", "."), bname, col);
	for (t = 0; t < len; t++) {
		const double av = MAT_AT(*A, row, acol0 + t), bv = MAT_AT(*B, bcol0 + t, col);
		sum += av * bv;
		if (t < MAX_TERMS)
			strbuf_printf(b, "%s%s%s%s", t ? " + " : "", num(x1, av, utf8), sym(utf8, "\u00d7", "*"), num(x2, bv, utf8));
	}
	if (len > MAX_TERMS)
		strbuf_printf(b, " + … (%d terms in all)", len);
	strbuf_printf(b, "\n= %s\n", num(x3, sum, utf8));
}

static void explain_dot(StrBuf *b, const Attn *a, int h, int i, int j, int utf8)
{
	const Lesson *l = a->lesson;
	char x1[32], x2[32], x3[32], x4[32];
	double sum = 0.0;
	int c;

	if (l->score == SCORE_ADDITIVE) {
		strbuf_printf(b, "additive score: e = %s_c w_e[c] %s tanh(q_ic + k_jc)\n= ", sym(utf8, "\u03a3", "sum"),
		        sym(utf8, "\u00b7", "*"));
		for (c = 0; c < l->d_k; c++) {
			const double q = MAT_AT(a->Q, i, h * l->d_k + c), k = MAT_AT(a->K, j, h * l->d_k + c);
			const double w = l->w_e.a[h * l->d_k + c];
			sum += w * tanh(q + k);
			if (c < MAX_TERMS)
				strbuf_printf(b, "%s%s%stanh(%s + %s)", c ? " + " : "", num(x1, w, utf8), sym(utf8, "\u00b7", "*"),
				        num(x2, q, utf8), num(x3, k, utf8));
		}
		if (l->d_k > MAX_TERMS)
			strbuf_printf(b, " + … (%d terms in all)", l->d_k);
		strbuf_printf(b, "\n= %s\n", num(x4, sum, utf8));
		return;
	}
	strbuf_printf(b, "score = q_%d %s k_%d  (query row %d of Q, key row %d of K%s)\n= ", i, sym(utf8, "\u00b7", "."), j, i, j,
	        a->heads > 1 ? ", this head's columns" : "");
	for (c = 0; c < l->d_k; c++) {
		const double q = MAT_AT(a->Q, i, h * l->d_k + c), k = MAT_AT(a->K, j, h * l->d_k + c);
		sum += q * k;
		if (c < MAX_TERMS)
			strbuf_printf(b, "%s%s%s%s", c ? " + " : "", num(x1, q, utf8), sym(utf8, "\u00d7", "*"), num(x2, k, utf8));
	}
	if (l->d_k > MAX_TERMS)
		strbuf_printf(b, " + … (%d terms in all)", l->d_k);
	strbuf_printf(b, "\n= %s\n", num(x3, sum, utf8));
}

static void explain_softmax(StrBuf *b, const Attn *a, int h, int i, int j, int utf8)
{
	const Lesson *l = a->lesson;
	const AttnHead *hd = &a->head[h];
	char x1[32], x2[32], x3[32];
	double max = -INFINITY, sum = 0.0;
	int t;

	for (t = 0; t < l->m; t++)
		max = fmax(max, MAT_AT(hd->masked, i, t));
	if (max == -INFINITY) {
		strbuf_printf(b, "every key of row %d is masked: there is nothing to attend to,\n"
		           "so its weights (and its output row) are 0 rather than 0/0.\n", i);
		return;
	}
	for (t = 0; t < l->m; t++) {
		const double s = MAT_AT(hd->masked, i, t);
		if (s != -INFINITY)
			sum += exp(s - max);
	}
	strbuf_printf(b, "weight = exp(s_%d%d %s max) / %s_t exp(s_%dt %s max), max of row %d = %s\n", i, j,
	        sym(utf8, "\u2212", "-"), sym(utf8, "\u03a3", "sum"), i, sym(utf8, "\u2212", "-"), i, num(x1, max, utf8));
	for (t = 0; t < l->m && t < MAX_TERMS; t++) {
		const double s = MAT_AT(hd->masked, i, t);
		char *lab = labels_col(a, AM_WEIGHTS, t);
		strbuf_printf(b, "  %s ", t == j ? "->" : "  ");
		buf_label(b, lab);
		if (s == -INFINITY)
			strbuf_printf(b, ": exp(%s) = 0  (masked)\n", sym(utf8, "-\u221e", "-inf"));
		else
			strbuf_printf(b, ": exp(%s %s %s) = %s\n", num(x1, s, utf8), sym(utf8, "\u2212", "-"), num(x2, max, utf8),
			        num(x3, exp(s - max), utf8));
	}
	if (l->m > MAX_TERMS)
		strbuf_printf(b, "  … (%d keys in all)\n", l->m);
	{
		const double s = MAT_AT(hd->masked, i, j);
		const double e = s == -INFINITY ? 0.0 : exp(s - max);
		char x4[32];
		strbuf_printf(b, "sum = %s\nweight = %s / %s = %s\n", num(x1, sum, utf8), num(x2, e, utf8), num(x3, sum, utf8),
		        num(x4, MAT_AT(hd->weights, i, j), utf8));
	}
}

static void explain_weighted(StrBuf *b, const Attn *a, int h, int i, int c, int utf8)
{
	const Lesson *l = a->lesson;
	const AttnHead *hd = &a->head[h];
	char x1[32], x2[32], x3[32];
	double sum = 0.0;
	int j, shown = 0;

	strbuf_printf(b, "output = %s_j w_%dj %s v_j[%d]  (row %d of the weights, column %d of this head's V)\n= ",
	        sym(utf8, "\u03a3", "sum"), i, sym(utf8, "\u00b7", "*"), c, i, c);
	for (j = 0; j < l->m; j++) {
		const double w = MAT_AT(hd->weights, i, j), v = MAT_AT(a->V, j, h * l->d_v + c);
		sum += w * v;
		if (shown < MAX_TERMS) {
			strbuf_printf(b, "%s%s%s%s", shown ? " + " : "", num(x1, w, utf8), sym(utf8, "\u00d7", "*"), num(x2, v, utf8));
			shown++;
		}
	}
	if (l->m > MAX_TERMS)
		strbuf_printf(b, " + … (%d terms in all)", l->m);
	strbuf_printf(b, "\n= %s\n", num(x3, sum, utf8));
}

/* ------------------------------------------------------------ each stage's cells */

/*
 * How a stage explains one cell of a matrix it makes (the explain column of
 * the stage table: the catalogue's made_by names the stage of each matrix).
 * b already holds the cell's value line; each adds the arithmetic.
 */
typedef void (*StageExplain)(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8);

static void explain_given(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	(void)a, (void)h, (void)utf8;
	if (matrix_kinds[which].flags & MF_PARAM)
		strbuf_printf(b, "a weight, as the lesson gives it: a learned parameter in a real model.\n"
		                 "Change it with `set %s[%d][%d] VALUE` and watch everything after it change.\n",
		              matrix_name(which), i, j);
	else
		strbuf_printf(b, "an input number, as the lesson gives it (or its generator made it).\n");
}

static void explain_positional(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const Lesson *l = a->lesson;
	const int source = matrix_kinds[which].row_axis == AXIS_KEY && l->has_source;
	char x1[32], x2[32];

	(void)h;
	if (which == AM_PE || which == AM_PE_SRC) {
		const int even = j - j % 2, width = source ? l->d_src : l->d_model;
		strbuf_printf(b, "%s(pos / 10000^(%d/%d)) with pos = %d\n= %s(%s)\n", j % 2 ? "cos" : "sin", even, width, i,
		              j % 2 ? "cos" : "sin", num(x1, i / pow(10000.0, (double)even / width), utf8));
		return;
	}
	{
		const Mat *in = source ? &l->source_input : &l->input;
		const Mat *pe = source ? &a->PE_src : &a->PE;
		if (mat_empty(pe))
			strbuf_printf(b, "the input itself (no positional encoding).\n");
		else
			strbuf_printf(b, "= input + PE = %s + %s\n", num(x1, MAT_AT(*in, i, j), utf8), num(x2, MAT_AT(*pe, i, j), utf8));
	}
}

static void explain_project(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const Lesson *l = a->lesson;
	const int q = which == AM_Q;
	const Mat *W = q ? &l->W_q : which == AM_K ? &l->W_k : &l->W_v;
	const int width = matrix_kinds[which].head_cols == DIM_DK ? l->d_k : l->d_v;

	(void)h;
	explain_product(b, q || !l->has_source ? &a->X : &a->S, i, W, j, utf8, q || !l->has_source ? "X" : "S",
	                matrix_name(q ? AM_W_Q : which == AM_K ? AM_W_K : AM_W_V), 0, 0, q ? l->d_model : l->d_src);
	if (a->heads > 1)
		strbuf_printf(b, "(column %d belongs to head %d)\n", j, j / width);
}

static void explain_scores(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	(void)which;
	explain_dot(b, a, h, i, j, utf8);
}

static void explain_scale(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const Lesson *l = a->lesson;
	char x1[32], x2[32];

	(void)which;
	strbuf_printf(b, "= score %s factor = %s %s %s", sym(utf8, "\u00d7", "*"), num(x1, MAT_AT(a->head[h].scores, i, j), utf8),
	              sym(utf8, "\u00d7", "*"), num(x2, a->factor, utf8));
	if (l->scale == SCALE_SQRT_DK)
		strbuf_printf(b, "  (1/%s%d: d_k = %d)\n", sym(utf8, "\u221a", "sqrt "), l->d_k, l->d_k);
	else if (l->scale == SCALE_NONE)
		strbuf_printf(b, "  (this lesson does not scale)\n");
	else
		strbuf_printf(b, "  (the lesson's own factor)\n");
}

static void explain_mask(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const Lesson *l = a->lesson;
	char x1[32];

	(void)which, (void)h;
	if (a->visible[(size_t)i * l->m + j]) {
		strbuf_printf(b, "query %d may see key %d, so the scaled score passes through unchanged.\n", i, j);
		return;
	}
	strbuf_printf(b, "query %d may not see key %d (%s mask), so the cell becomes %s\n", i, j,
	              l->mask == MASK_CAUSAL ? "causal: a later token" : l->mask == MASK_PADDING ? "padding" : "the lesson's",
	              l->mask_fill_inf ? sym(utf8, "-\u221e: exp(-\u221e) = 0, no weight at all.", "-inf: exp(-inf) = 0, no weight at all.")
	                               : "the fill value; it still gets exp(fill - max) of the weight.");
	if (!l->mask_fill_inf)
		strbuf_printf(b, "(mask_fill = %s)\n", num(x1, l->mask_fill, utf8));
}

static void explain_softmax_cell(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	(void)which;
	explain_softmax(b, a, h, i, j, utf8);
}

static void explain_weighted_cell(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	(void)which;
	explain_weighted(b, a, h, i, j, utf8);
}

static void explain_concat(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const int dv = a->lesson->d_v;

	(void)which, (void)h, (void)i, (void)utf8;
	strbuf_printf(b, "column %d of concat is column %d of head %d's output (head %d fills columns %d..%d)\n", j,
	              j % dv, j / dv, j / dv, (j / dv) * dv, (j / dv + 1) * dv - 1);
}

static void explain_output(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const Lesson *l = a->lesson;

	(void)which, (void)h;
	if (mat_empty(&l->W_o))
		strbuf_printf(b, "no W_o in this lesson: the output is concat itself.\n");
	else
		explain_product(b, &a->concat, i, &l->W_o, j, utf8, "concat", "W_o", 0, 0, l->W_o.rows);
}

/* The explain half of the stage table (catalog.c has the names and panes, attention.c the kernels). */
static const StageExplain stage_explain[STAGE_COUNT] = {
	[STAGE_INPUT] = explain_given,
	[STAGE_POSITIONAL] = explain_positional,
	[STAGE_PROJECT] = explain_project,
	[STAGE_SPLIT] = NULL, /* makes nothing of its own */
	[STAGE_SCORES] = explain_scores,
	[STAGE_SCALE] = explain_scale,
	[STAGE_MASK] = explain_mask,
	[STAGE_SOFTMAX] = explain_softmax_cell,
	[STAGE_WEIGHTED] = explain_weighted_cell,
	[STAGE_CONCAT] = explain_concat,
	[STAGE_OUTPUT] = explain_output,
};

char *explain_cell(const Attn *a, AttnMatrix which, int h, int i, int j, int utf8, char **err)
{
	const Mat *m = attn_matrix(a, which, h);
	StrBuf b = { 0 };
	char x1[32];
	Stage st;

	*err = NULL;
	if (m == NULL) {
		*err = strdup(which >= 0 && which < AM_COUNT ? "that matrix is not part of this lesson" : "unknown matrix");
		return NULL;
	}
	if (i < 0 || i >= m->rows || j < 0 || j >= m->cols) {
		*err = str_printf("%s has rows 0..%d and columns 0..%d", matrix_name(which), m->rows - 1, m->cols - 1);
		return NULL;
	}
	strbuf_printf(&b, "%s[%d][%d]", matrix_name(which), i, j);
	if (matrix_per_head(which) && a->heads > 1)
		strbuf_printf(&b, " (head %d)", h);
	strbuf_printf(&b, " = %s", num(x1, MAT_AT(*m, i, j), utf8));
	if (labels_token_columns(a, which)) {
		strbuf_printf(&b, "   query ");
		buf_label(&b, labels_row(a, which, i));
		strbuf_printf(&b, ", key ");
		buf_label(&b, labels_col(a, which, j));
	}
	strbuf_printf(&b, "\n");
	/* A matrix is explained by the stage that makes it; given ones by the input stage. */
	st = matrix_kinds[which].made_by == STAGE_COUNT ? STAGE_INPUT : matrix_kinds[which].made_by;
	if (stage_explain[st] != NULL)
		stage_explain[st](&b, a, which, h, i, j, utf8);
	if (b.oom) {
		free(b.s);
		*err = strdup("out of memory");
		return NULL;
	}
	return b.s;
}

/* ------------------------------------------------------------ each stage's operands */

typedef int (*StageOperands)(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4]);

#define OP(w, hh, r, c) (out[k].which = (w), out[k].head = (hh), out[k].row = (r), out[k].col = (c), k++)

/* X[i][j] = input[i][j] + PE[i][j] (S likewise from the source). */
static int operands_positional(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const int source = matrix_kinds[which].row_axis == AXIS_KEY && a->lesson->has_source;
	int k = 0;

	(void)h;
	if (which != AM_X && which != AM_S)
		return 0;
	OP(source ? AM_SOURCE_INPUT : AM_INPUT, 0, i, j);
	if (!mat_empty(source ? &a->PE_src : &a->PE))
		OP(source ? AM_PE_SRC : AM_PE, 0, i, j);
	return k;
}

/* Q[i][j]: row i of X and column j of W_q (K and V: of S, or X without a source). */
static int operands_project(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const int q = which == AM_Q;
	int k = 0;

	(void)h;
	OP(q || !a->lesson->has_source ? AM_X : AM_S, 0, i, -1);
	OP(q ? AM_W_Q : which == AM_K ? AM_W_K : AM_W_V, 0, -1, j);
	return k;
}

/* scores[i][j]: row i of Q and row j of K (column j of Kᵀ), this head's columns. */
static int operands_scores(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	int k = 0;

	(void)a, (void)which;
	OP(AM_Q, h, i, -1);
	OP(AM_K, h, j, -1);
	return k;
}

/* A cell of scaled or masked: the same cell one stage back. */
static int operands_cellwise(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	int k = 0;

	(void)a;
	OP(which == AM_SCALED ? AM_SCORES : AM_SCALED, h, i, j);
	return k;
}

/* weights[i][j]: the whole row i of masked. */
static int operands_softmax(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	int k = 0;

	(void)a, (void)which, (void)j;
	OP(AM_MASKED, h, i, -1);
	return k;
}

/* weighted[i][c]: row i of the weights and column c of this head's V. */
static int operands_weighted(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	int k = 0;

	(void)which;
	OP(AM_WEIGHTS, h, i, -1);
	OP(AM_V, h, -1, h * a->lesson->d_v + j);
	return k;
}

/* concat[i][j]: column j mod d_v of head j / d_v's output. */
static int operands_concat(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const int dv = a->lesson->d_v;
	int k = 0;

	(void)which, (void)h;
	OP(AM_WEIGHTED, j / dv, i, j % dv);
	return k;
}

/* output[i][j]: row i of concat and column j of W_o (the same cell of concat without W_o). */
static int operands_output(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	int k = 0;

	(void)which, (void)h;
	if (mat_empty(&a->lesson->W_o))
		OP(AM_CONCAT, 0, i, j);
	else {
		OP(AM_CONCAT, 0, i, -1);
		OP(AM_W_O, 0, -1, j);
	}
	return k;
}

#undef OP

static const StageOperands stage_operands[STAGE_COUNT] = {
	[STAGE_POSITIONAL] = operands_positional,
	[STAGE_PROJECT] = operands_project,
	[STAGE_SCORES] = operands_scores,
	[STAGE_SCALE] = operands_cellwise,
	[STAGE_MASK] = operands_cellwise,
	[STAGE_SOFTMAX] = operands_softmax,
	[STAGE_WEIGHTED] = operands_weighted,
	[STAGE_CONCAT] = operands_concat,
	[STAGE_OUTPUT] = operands_output,
};

int explain_operands(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const MatrixKind *k = matrix_kind(which);

	if (k == NULL || k->made_by == STAGE_COUNT || stage_operands[k->made_by] == NULL)
		return 0;
	return stage_operands[k->made_by](a, which, h, i, j, out);
}
