/* explain.c: the arithmetic behind any cell, with the lesson's own numbers. */
#include "inspect/explain.h"
#include "base/i18n.h"
#include "engine/backward.h"
#include "engine/variants/variants.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect/labels.h"
#include "base/strbuf.h"

/* Add a label (token), escaped. */
static void buf_label(StrBuf *b, char *label)
{
	strbuf_printf(b, "%s", label ? label : "?");
	free(label);
}

/* row of A times column of B: "= A row r · B column c", the terms, the sum (returned). */
static double explain_product(StrBuf *b, const Mat *A, int row, const Mat *B, int col, int utf8, const char *aname,
                              const char *bname)
{
	strbuf_printf(b, _("= %s row %d %s %s column %d\n"), aname, row, celltext_sym(utf8, "\u00b7", "."), bname, col);
	return celltext_terms(b, &A->a[(size_t)row * (size_t)A->cols], 1, &B->a[col], (size_t)B->cols, A->cols, utf8);
}

static void explain_dot(StrBuf *b, const Attn *a, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	/* Q and K, or what a variant made of them for the scores (variants.h: reads) */
	const AttnMatrix qw = attn_reads(a, AM_Q), kw = attn_reads(a, AM_K);
	const Mat *Q = attn_matrix(a, qw, h), *K = attn_matrix(a, kw, h);
	const int kc = attn_kv_head(a, h) * lp->d_k;
	char x1[32], x2[32], x3[32], x4[32];
	double sum = 0.0;
	int c;

	if (cfg->score == SCORE_ADDITIVE) {
		strbuf_printf(b, _("additive score: e = %s_c w_e[c] %s tanh(q_ic + k_jc)\n= "), celltext_sym(utf8, "\u03a3", "sum"),
		        celltext_sym(utf8, "\u00b7", "*"));
		for (c = 0; c < lp->d_k; c++) {
			const double q = MAT_AT(*Q, i, h * lp->d_k + c), k = MAT_AT(*K, j, kc + c);
			const double w = lp->w_e.a[h * lp->d_k + c];
			sum += w * tanh(q + k);
			if (c < CELLTEXT_MAX_TERMS)
				strbuf_printf(b, "%s%s%stanh(%s + %s)", c ? " + " : "", celltext_num(x1, w, utf8), celltext_sym(utf8, "\u00b7", "*"),
				        celltext_num(x2, q, utf8), celltext_num(x3, k, utf8));
		}
		if (lp->d_k > CELLTEXT_MAX_TERMS)
			strbuf_printf(b, _(" + … (%d terms in all)"), lp->d_k);
		strbuf_printf(b, "\n= %s\n", celltext_num(x4, sum, utf8));
		return;
	}
	strbuf_printf(b, _("score = q_%d %s k_%d  (query row %d of %s, key row %d of %s%s)\n"), i, celltext_sym(utf8, "\u00b7", "."), j, i,
	              matrix_name(qw), j, matrix_name(kw), a->heads > 1 ? _(", this head's columns") : "");
	attn_head_note(b, a, h);
	celltext_terms(b, &Q->a[(size_t)i * Q->cols + (size_t)h * lp->d_k], 1, &K->a[(size_t)j * K->cols + kc], 1, lp->d_k,
	              utf8);
}

static void explain_softmax(StrBuf *b, const Attn *a, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const AttnHead *hd = &a->head[h];
	const AttnVariant *sink = attn_sink(a);
	const double sink_logit = sink != NULL ? sink->sink_logit(a, h) : -INFINITY;
	char x1[32], x2[32], x3[32];
	double max = sink_logit, sum = 0.0;
	int t;

	for (t = 0; t < cfg->m; t++)
		max = fmax(max, attn_cell(a, AM_MASKED, h, i, t));
	if (max == -INFINITY) {
		strbuf_printf(b, _("every key of row %d is masked: there is nothing to attend to,\n"
		           "so its weights (and its output row) are 0 rather than 0/0.\n"), i);
		return;
	}
	for (t = 0; t < cfg->m; t++) {
		const double s = attn_cell(a, AM_MASKED, h, i, t);
		if (s != -INFINITY)
			sum += exp(s - max);
	}
	if (sink != NULL) /* gpt-oss's sink: one more term below the line, its column dropped */
		strbuf_printf(b, _("weight = exp(s_%d%d %s max) / (exp(sink %s max) + %s_t exp(s_%dt %s max)), max of row %d and the sink = %s\n"),
		              i, j, celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u03a3", "sum"),
		              i, celltext_sym(utf8, "\u2212", "-"), i, celltext_num(x1, max, utf8));
	else
		strbuf_printf(b, _("weight = exp(s_%d%d %s max) / %s_t exp(s_%dt %s max), max of row %d = %s\n"), i, j,
		              celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u03a3", "sum"), i, celltext_sym(utf8, "\u2212", "-"), i,
		              celltext_num(x1, max, utf8));
	for (t = 0; t < cfg->m && t < CELLTEXT_MAX_TERMS; t++) {
		const double s = attn_cell(a, AM_MASKED, h, i, t);
		char *lab = labels_col(a, AM_WEIGHTS, t);
		strbuf_printf(b, "  %s ", t == j ? "->" : "  ");
		buf_label(b, lab);
		if (s == -INFINITY)
			strbuf_printf(b, _(": exp(%s) = 0  (masked)\n"), celltext_sym(utf8, "-\u221e", "-inf"));
		else
			strbuf_printf(b, ": exp(%s %s %s) = %s\n", celltext_num(x1, s, utf8), celltext_sym(utf8, "\u2212", "-"), celltext_num(x2, max, utf8),
			        celltext_num(x3, exp(s - max), utf8));
	}
	if (cfg->m > CELLTEXT_MAX_TERMS)
		strbuf_printf(b, _("  … (%d keys in all)\n"), cfg->m);
	if (sink != NULL) { /* the head's sink: one more term of the sum, its column dropped */
		sum += exp(sink_logit - max);
		strbuf_printf(b, _("     sink (head %d's logit, no value): exp(%s %s %s) = %s\n"), h, celltext_num(x1, sink_logit, utf8),
		              celltext_sym(utf8, "\u2212", "-"), celltext_num(x2, max, utf8), celltext_num(x3, exp(sink_logit - max), utf8));
	}
	{
		const double s = attn_cell(a, AM_MASKED, h, i, j);
		const double e = s == -INFINITY ? 0.0 : exp(s - max);
		char x4[32];
		strbuf_printf(b, _("sum = %s\nweight = %s / %s = %s\n"), celltext_num(x1, sum, utf8), celltext_num(x2, e, utf8), celltext_num(x3, sum, utf8),
		        celltext_num(x4, MAT_AT(hd->weights, i, j), utf8));
	}
}

static void explain_weighted(StrBuf *b, const Attn *a, int h, int i, int c, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);

	strbuf_printf(b, _("output = %s_j w_%dj %s v_j[%d]  (row %d of the weights, column %d of this head's V)\n"),
	              celltext_sym(utf8, "\u03a3", "sum"), i, celltext_sym(utf8, "\u00b7", "*"), c, i, c);
	celltext_terms(b, &a->head[h].weights.a[(size_t)i * cfg->m], 1,
	              &a->V.a[(size_t)attn_kv_head(a, h) * lp->d_v + c], (size_t)a->V.cols, cfg->m, utf8);
}

/* A bias added after a product: "+ b_q[j] = …", when the lesson has one. */
static void explain_bias(StrBuf *b, const Mat *bias, const char *name, int j, double product, int utf8)
{
	char x1[32], x2[32], x3[32];

	if (mat_empty(bias))
		return;
	strbuf_printf(b, "+ %s[%d] = %s + %s = %s\n", name, j, celltext_num(x1, product, utf8), celltext_num(x2, bias->a[j], utf8),
	              celltext_num(x3, product + bias->a[j], utf8));
}

/*
 * The rows a block stage reads, by their catalogue name (for the explanation's words). Never the
 * unembedding, which is not asked for: a real model's would be made doubles (226 MB) to be compared.
 */
static const char *mat_label(const Attn *a, const Mat *m)
{
	for (int w = 0; w < AM_COUNT; w++)
		if (w != AM_UNEMBED && !matrix_per_head((AttnMatrix)w) && attn_matrix(a, (AttnMatrix)w, 0) == m)
			return matrix_name((AttnMatrix)w);
	return "x";
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
		strbuf_printf(b, _("a weight, as the lesson gives it: a learned parameter in a real model.\n"
		                 "Change it with `set %s[%d][%d] VALUE` and watch everything after it change.\n"),
		              matrix_name(which), i, j);
	else
		strbuf_printf(b, _("an input number, as the lesson gives it (or its generator made it).\n"));
}

static void explain_positional(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8);

/* The input stage: given numbers, and X = input·s with Gemma's embedding scale. */
static void explain_input(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	if (which == AM_X)
		explain_positional(b, a, which, h, i, j, utf8);
	else
		explain_given(b, a, which, h, i, j, utf8);
}

static void explain_positional(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const int source = matrix_kinds[which].row_axis == AXIS_KEY && cfg->has_source;
	char x1[32], x2[32], x3[32];

	(void)h;
	if (which == AM_PE || which == AM_PE_SRC) {
		const int even = j - j % 2, width = source ? cfg->d_src : cfg->d_model;
		strbuf_printf(b, _("%s(pos / 10000^(%d/%d)) with pos = %d\n= %s(%s)\n"), j % 2 ? "cos" : "sin", even, width, i,
		              j % 2 ? "cos" : "sin", celltext_num(x1, i / pow(10000.0, (double)even / width), utf8));
		return;
	}
	{
		const Mat *in = source ? &cfg->source_input : &cfg->input;
		const Mat *pe = source ? &a->PE_src : &a->PE;
		if (!source && cfg->embed_scale > 0.0 && mat_empty(pe)) /* Gemma's normalizer */
			strbuf_printf(b, "= input %s s = %s %s %s\n", celltext_sym(utf8, "\u00b7", "*"),
			              celltext_num(x1, MAT_AT(*in, i, j), utf8), celltext_sym(utf8, "\u00d7", "*"),
			              celltext_num(x2, cfg->embed_scale, utf8));
		else if (!source && cfg->embed_scale > 0.0)
			strbuf_printf(b, "= input %s s + PE = %s %s %s + %s\n", celltext_sym(utf8, "\u00b7", "*"),
			              celltext_num(x1, MAT_AT(*in, i, j), utf8), celltext_sym(utf8, "\u00d7", "*"),
			              celltext_num(x2, cfg->embed_scale, utf8), celltext_num(x3, MAT_AT(*pe, i, j), utf8));
		else if (mat_empty(pe))
			strbuf_printf(b, _("the input itself (no positional encoding).\n"));
		else
			strbuf_printf(b, "= input + PE = %s + %s\n", celltext_num(x1, MAT_AT(*in, i, j), utf8), celltext_num(x2, MAT_AT(*pe, i, j), utf8));
	}
}

static void explain_project(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_weights(a);
	const int q = which == AM_Q;
	const Mat *W = q ? &lp->W_q : which == AM_K ? &lp->W_k : &lp->W_v;
	const int width = matrix_kinds[which].head_cols == DIM_DK ? lp->d_k : lp->d_v;

	(void)h;
	const int pre = lp->block.present && lp->block.norm == NORM_PRE;
	const Mat *in = q || !cfg->has_source ? (pre ? &a->norm1 : &a->X) : &a->S;
	const double sum = explain_product(b, in, i, W, j, utf8, mat_label(a, in),
	                                   matrix_name(q ? AM_W_Q : which == AM_K ? AM_W_K : AM_W_V));

	explain_bias(b, q ? &lp->b_q : which == AM_K ? &lp->b_k : &lp->b_v, q ? "b_q" : which == AM_K ? "b_k" : "b_v", j,
	             sum, utf8);
	if (a->heads > 1)
		strbuf_printf(b, _("(column %d belongs to head %d)\n"), j, j / width);
}

static void explain_scores(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	(void)which;
	explain_dot(b, a, h, i, j, utf8);
}

static void explain_scale(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	char x1[32], x2[32];

	(void)which;
	strbuf_printf(b, _("= score %s factor = %s %s %s"), celltext_sym(utf8, "\u00d7", "*"), celltext_num(x1, MAT_AT(a->head[h].scores, i, j), utf8),
	              celltext_sym(utf8, "\u00d7", "*"), celltext_num(x2, a->factor, utf8));
	if (cfg->scale == SCALE_SQRT_DK)
		strbuf_printf(b, "  (1/%s%d: d_k = %d)\n", celltext_sym(utf8, "\u221a", "sqrt "), lp->d_k, lp->d_k);
	else if (cfg->scale == SCALE_NONE)
		strbuf_printf(b, _("  (this lesson does not scale)\n"));
	else
		strbuf_printf(b, _("  (the lesson's own factor)\n"));
}

static void explain_mask(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	char x1[32];

	(void)which, (void)h;
	if (a->visible[(size_t)i * cfg->m + j]) {
		strbuf_printf(b, attn_score_map(a) != NULL    ? _("query %d may see key %d, so the capped score passes through unchanged.\n")
		                 : attn_score_bias(a) != NULL ? _("query %d may see key %d, so the biased score passes through unchanged.\n")
		                                              : _("query %d may see key %d, so the scaled score passes through unchanged.\n"),
		              i, j);
		return;
	}
	const char *fill = cfg->mask_fill_inf
	                   ? celltext_sym(utf8, _("-\u221e: exp(-\u221e) = 0, no weight at all."), _("-inf: exp(-inf) = 0, no weight at all."))
	                   : _("the fill value; it still gets exp(fill - max) of the weight.");
	/* the reason inside the sentence, so a translation words each one whole (a variant's mask says its own) */
	if (!attn_masked_why(b, cfg, i, j, fill))
		strbuf_printf(b,
		              cfg->mask == MASK_CAUSAL    ? _("query %d may not see key %d (causal mask: a later token), so the cell becomes %s\n")
		              : cfg->mask == MASK_PADDING ? _("query %d may not see key %d (padding mask), so the cell becomes %s\n")
		              : cfg->mask == MASK_LIST    ? _("query %d may not see key %d (one of the list's masks), so the cell becomes %s\n")
		                                          : _("query %d may not see key %d (the lesson's mask), so the cell becomes %s\n"),
		              i, j, fill);
	if (!cfg->mask_fill_inf)
		strbuf_printf(b, "(mask_fill = %s)\n", celltext_num(x1, cfg->mask_fill, utf8));
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

/* The cell concat[i][j] copies: head j/d_v's weighted, or the matrix a variant's head_row reads (w, column *c). */
static AttnMatrix concat_source(const Attn *a, int i, int j, int *c)
{
	const AttnVariant *v = attn_head_output(a);
	const int dv = attn_params(a)->d_v;
	const Mat *m;

	*c = j % dv;
	if (v == NULL || (m = attn_slot_const(a, v->head_row_of, j / dv)) == NULL || mat_empty(m))
		return AM_WEIGHTED;
	*c += (int)(v->head_row(a, j / dv, i) - &MAT_AT(*m, i, 0));
	return v->head_row_of;
}

static void explain_concat(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const int dv = attn_params(a)->d_v;
	int c;
	const AttnMatrix w = concat_source(a, i, j, &c);

	(void)which, (void)h, (void)utf8;
	strbuf_printf(b, _("column %d of concat is column %d of head %d's output (head %d fills columns %d..%d)\n"), j,
	              j % dv, j / dv, j / dv, (j / dv) * dv, (j / dv + 1) * dv - 1);
	if (w != AM_WEIGHTED)
		strbuf_printf(b, _("(a head's output here is not its weighted: it is %s[%d][%d], head %d's)\n"), matrix_name(w), i, c,
		              j / dv);
}

static void explain_output(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const LayerParams *lp = attn_weights(a);

	(void)which, (void)h;
	if (mat_empty(&lp->W_o))
		strbuf_printf(b, _("no W_o in this lesson: the output is concat itself.\n"));
	else { /* concat, or what a variant gave W_o to read instead (gated attention's gated) */
		const AttnMatrix in = attn_reads(a, AM_CONCAT);
		const double sum = explain_product(b, attn_matrix(a, in, 0), i, &lp->W_o, j, utf8, matrix_name(in), "W_o");
		explain_bias(b, &lp->b_o, "b_o", j, sum, utf8);
	}
}

/* A norm's cell: the row's μ and σ² (or mean square), then (x − μ)/√(σ² + ε)·γ + β. */
static void explain_norm_cell(StrBuf *b, const Attn *a, const Mat *in, const Mat *gamma, const Mat *beta, int rms,
                              double eps, int i, int j, int utf8)
{
	const int d = in->cols;
	double mean = 0.0, var = 0.0, out;
	char x1[32], x2[32], x3[32], x4[32], x5[32], x6[32], x7[32];

	for (int t = 0; t < d; t++)
		mean += MAT_AT(*in, i, t);
	mean /= d;
	for (int t = 0; t < d; t++) {
		const double x = MAT_AT(*in, i, t);
		var += rms ? x * x : (x - mean) * (x - mean);
	}
	var /= d;
	if (rms) {
		strbuf_printf(b, _("RMSNorm of row %d of %s: mean(x%s) = %s over its %d numbers\n"), i, mat_label(a, in),
		              celltext_sym(utf8, "\u00b2", "^2"), celltext_num(x1, var, utf8), d);
		out = MAT_AT(*in, i, j) / sqrt(var + eps) * (rms == NORM_RMSNORM_1P ? 1.0 + gamma->a[j] : gamma->a[j]);
		if (rms == NORM_RMSNORM_1P) { /* Gemma's zero-centred weight: the norm multiplies by 1 + γ */
			strbuf_printf(b, "= x / %s(mean(x%s) + %s) %s (1 + %s) = %s / %s(%s + %s) %s (1 + %s)\n= %s\n",
			              celltext_sym(utf8, "\u221a", "sqrt"), celltext_sym(utf8, "\u00b2", "^2"), celltext_sym(utf8, "\u03b5", "eps"),
			              celltext_sym(utf8, "\u00b7", "*"), celltext_sym(utf8, "\u03b3", "gamma"), celltext_num(x1, MAT_AT(*in, i, j), utf8),
			              celltext_sym(utf8, "\u221a", "sqrt"), celltext_num(x2, var, utf8), celltext_num(x3, eps, utf8),
			              celltext_sym(utf8, "\u00d7", "*"), celltext_num(x4, gamma->a[j], utf8), celltext_num(x5, out, utf8));
			return;
		}
		strbuf_printf(b, "= x / %s(mean(x%s) + %s) %s %s = %s / %s(%s + %s) %s %s\n= %s\n", celltext_sym(utf8, "\u221a", "sqrt"),
		              celltext_sym(utf8, "\u00b2", "^2"), celltext_sym(utf8, "\u03b5", "eps"), celltext_sym(utf8, "\u00b7", "*"),
		              celltext_sym(utf8, "\u03b3", "gamma"), celltext_num(x1, MAT_AT(*in, i, j), utf8), celltext_sym(utf8, "\u221a", "sqrt"),
		              celltext_num(x2, var, utf8), celltext_num(x3, eps, utf8), celltext_sym(utf8, "\u00d7", "*"), celltext_num(x4, gamma->a[j], utf8),
		              celltext_num(x5, out, utf8));
		return;
	}
	strbuf_printf(b, _("LayerNorm of row %d of %s: %s = %s, %s = %s (the biased variance, over its %d numbers)\n"), i,
	              mat_label(a, in), celltext_sym(utf8, "\u03bc", "mean"), celltext_num(x1, mean, utf8), celltext_sym(utf8, "\u03c3\u00b2", "var"),
	              celltext_num(x2, var, utf8), d);
	out = (MAT_AT(*in, i, j) - mean) / sqrt(var + eps) * gamma->a[j] + (mat_empty(beta) ? 0.0 : beta->a[j]);
	strbuf_printf(b, "= (x %s %s) / %s(%s + %s) %s %s + %s\n= (%s %s %s) / %s(%s + %s) %s %s + %s\n= %s\n",
	              celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u03bc", "mean"), celltext_sym(utf8, "\u221a", "sqrt"),
	              celltext_sym(utf8, "\u03c3\u00b2", "var"), celltext_sym(utf8, "\u03b5", "eps"), celltext_sym(utf8, "\u00b7", "*"),
	              celltext_sym(utf8, "\u03b3", "gamma"), celltext_sym(utf8, "\u03b2", "beta"), celltext_num(x1, MAT_AT(*in, i, j), utf8),
	              celltext_sym(utf8, "\u2212", "-"), celltext_num(x2, mean, utf8), celltext_sym(utf8, "\u221a", "sqrt"), celltext_num(x3, var, utf8),
	              celltext_num(x4, eps, utf8), celltext_sym(utf8, "\u00d7", "*"), celltext_num(x5, gamma->a[j], utf8),
	              celltext_num(x6, mat_empty(beta) ? 0.0 : beta->a[j], utf8), celltext_num(x7, out, utf8));
}

/* The input of each of the block's norms. */
static const Mat *norm_input(const Attn *a, AttnMatrix which, Stage st)
{
	switch (st) {
	case STAGE_NORM1_PRE: return &a->X;
	case STAGE_NORM1_POST: case STAGE_NORM2_PRE: return &a->residual1;
	case STAGE_NORM2_POST: return &a->residual2;
	case STAGE_NORM1_AFTER: return &a->output;
	case STAGE_NORM2_AFTER: case STAGE_NORM2_SANDWICH: return &a->ffn_out;
	case STAGE_NORM1_SANDWICH: return &a->output;
	default: return which == AM_FINAL ? attn_block_output(a) : &a->X;
	}
}

static void explain_norm(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const Block *bl = &lp->block;
	const Stage st = (Stage)matrix_stage(&a->shape, which);
	const int second = which == AM_NORM2 || which == AM_NORM2_STATS, final = which == AM_FINAL;
	const int after1 = which == AM_NORM1_AFTER || which == AM_NORM1_AFTER_STATS; /* sandwich norms' own weights */
	const int after2 = which == AM_NORM2_AFTER || which == AM_NORM2_AFTER_STATS;
	const Mat *gamma = final ? &cfg->final_gamma : after1 ? &bl->ln1_after_gamma : after2 ? &bl->ln2_after_gamma
	                   : second ? &bl->ln2_gamma : &bl->ln1_gamma;
	const Mat *beta = final ? &cfg->final_beta : second ? &bl->ln2_beta : &bl->ln1_beta;
	const int rms = (int)(final ? cfg->final_kind : bl->norm_kind); /* NormKind: 0 LayerNorm, else an RMSNorm */

	(void)h;
	if (which == AM_NORM1_STATS || which == AM_NORM2_STATS || which == AM_NORM1_AFTER_STATS || which == AM_NORM2_AFTER_STATS) {
		strbuf_printf(b, _("%s of row %d of %s, before the norm\n"), j == 0 ? (rms ? _("mean of squares") : _("mean"))
		              : (rms ? _("RMS = sqrt(mean of squares + eps)") : _("variance (biased)")), i,
		              mat_label(a, norm_input(a, which, st)));
		return;
	}
	explain_norm_cell(b, a, norm_input(a, which, st), gamma, beta, rms, final ? cfg->final_eps : bl->eps, i, j, utf8);
}

static void explain_residual(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const int one = which == AM_RESIDUAL1;
	const Mat *x = one ? &a->X : attn_params(a)->block.norm == NORM_POST ? &a->norm1 : &a->residual1;
	const int after = attn_params(a)->block.norm == NORM_AFTER; /* OLMo 2: the residual adds the normalised sublayer */
	const int sandwich = attn_params(a)->block.sandwich;      /* Gemma: the sublayer's own norm after it */
	const Mat *y = one ? (sandwich ? &a->norm1_after : after ? &a->norm1 : &a->output)
	                   : (sandwich ? &a->norm2_after : after ? &a->norm2 : &a->ffn_out);
	char x1[32], x2[32];

	(void)h;
	strbuf_printf(b, _("= %s + %s = %s + %s: the residual keeps the rows it started from\n"), mat_label(a, x),
	              sandwich ? (one ? "norm1_after" : "norm2_after") : after ? (one ? "norm1" : "norm2")
	              : one ? _("output (the attention's)") : "ffn_out", celltext_num(x1, MAT_AT(*x, i, j), utf8),
	              celltext_num(x2, MAT_AT(*y, i, j), utf8));
}

/* ffn_hidden, ffn_gate: a row of the FFN's input times a column of W_1 (W_3), plus the bias. */
static void explain_ffn_hidden(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const Block *bl = &attn_weights(a)->block;
	const int gate = which == AM_FFN_GATE;
	const Mat *in = bl->norm == NORM_POST ? &a->norm1 : bl->norm == NORM_PRE ? &a->norm2 : &a->residual1;
	const Mat *W = gate ? &bl->W_3 : &bl->W_1;
	const double sum = explain_product(b, in, i, W, j, utf8, mat_label(a, in), gate ? "W_3" : "W_1");

	(void)h;
	explain_bias(b, gate ? &bl->b_3 : &bl->b_1, gate ? "b_3" : "b_1", j, sum, utf8);
	strbuf_printf(b, _("(the FFN reads row %d alone: no other token enters)\n"), i);
}

static void explain_activation(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const double z = MAT_AT(a->ffn_hidden, i, j);
	char x1[32], x2[32], x3[32];

	(void)which, (void)h;
	switch (attn_params(a)->block.activation) {
	case ACT_RELU:
		strbuf_printf(b, "relu(%s) = max(0, %s) = %s\n", celltext_num(x1, z, utf8), celltext_num(x2, z, utf8), celltext_num(x3, attn_relu(z), utf8));
		break;
	case ACT_GELU:
		strbuf_printf(b, "gelu(z) = z %s %s(z) = z/2 %s (1 + erf(z/%s2)), z = %s\n= %s\n", celltext_sym(utf8, "\u00b7", "*"),
		              celltext_sym(utf8, "\u03a6", "Phi"), celltext_sym(utf8, "\u00b7", "*"), celltext_sym(utf8, "\u221a", "sqrt "),
		              celltext_num(x1, z, utf8), celltext_num(x2, attn_gelu(z), utf8));
		break;
	case ACT_GELU_TANH:
		strbuf_printf(b, "gelu_new(z) = z/2 %s (1 + tanh(%s(2/%s) %s (z + 0.044715 z%s))), z = %s\n= %s\n", celltext_sym(utf8, "\u00b7", "*"),
		              celltext_sym(utf8, "\u221a", "sqrt"), celltext_sym(utf8, "\u03c0", "pi"), celltext_sym(utf8, "\u00b7", "*"),
		              celltext_sym(utf8, "\u00b3", "^3"), celltext_num(x1, z, utf8), celltext_num(x2, attn_gelu_tanh(z), utf8));
		break;
	case ACT_SWIGLU:
		strbuf_printf(b, "silu(z) %s gate = z/(1 + e^-z) %s gate, z = %s, gate = ffn_gate[%d][%d] = %s\n",
		              celltext_sym(utf8, "\u00d7", "*"), celltext_sym(utf8, "\u00d7", "*"), celltext_num(x1, z, utf8), i, j,
		              celltext_num(x2, MAT_AT(a->ffn_gate, i, j), utf8));
		strbuf_printf(b, "= %s %s %s = %s\n", celltext_num(x1, attn_silu(z), utf8), celltext_sym(utf8, "\u00d7", "*"),
		              celltext_num(x2, MAT_AT(a->ffn_gate, i, j), utf8), celltext_num(x3, MAT_AT(a->ffn_act, i, j), utf8));
		break;
	case ACT_GEGLU: /* Gemma's gate: gelu_pytorch_tanh(gate_proj(x)) * up_proj(x) */
		strbuf_printf(b, "gelu_tanh(z) %s gate = z/2 %s (1 + tanh(%s(2/%s) %s (z + 0.044715 z%s))) %s gate, z = %s, gate = "
		              "ffn_gate[%d][%d] = %s\n", celltext_sym(utf8, "\u00d7", "*"), celltext_sym(utf8, "\u00b7", "*"),
		              celltext_sym(utf8, "\u221a", "sqrt"), celltext_sym(utf8, "\u03c0", "pi"), celltext_sym(utf8, "\u00b7", "*"),
		              celltext_sym(utf8, "\u00b3", "^3"), celltext_sym(utf8, "\u00d7", "*"), celltext_num(x1, z, utf8), i, j,
		              celltext_num(x2, MAT_AT(a->ffn_gate, i, j), utf8));
		strbuf_printf(b, "= %s %s %s = %s\n", celltext_num(x1, attn_gelu_tanh(z), utf8), celltext_sym(utf8, "\u00d7", "*"),
		              celltext_num(x2, MAT_AT(a->ffn_gate, i, j), utf8), celltext_num(x3, MAT_AT(a->ffn_act, i, j), utf8));
		break;
	}
}

static void explain_ffn_out(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const Block *bl = &attn_weights(a)->block;
	const double sum = explain_product(b, &a->ffn_act, i, &bl->W_2, j, utf8, "ffn_act", "W_2");

	(void)which, (void)h;
	explain_bias(b, &bl->b_2, "b_2", j, sum, utf8);
}

/* ------------------------------------------------------------ the backward pass */

static void explain_back_output(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const AttnGrad *g = a->grad;
	char x1[32], x2[32];

	switch (which) {
	case AM_D_OUTPUT:
		if (cfg->backward == BACKWARD_TARGET && a->nlayers == 0 && !lp->block.present)
			strbuf_printf(b, _("the loss is L = \u00bd \u03a3 (output \u2212 target)\u00b2, so \u2202L/\u2202output = output \u2212 target\n"
			                 "= %s \u2212 %s\n"), celltext_num(x1, MAT_AT(a->output, i, j), utf8), celltext_num(x2, MAT_AT(cfg->target, i, j), utf8));
		else if (cfg->backward == BACKWARD_DOUTPUT && a->nlayers == 0 && !lp->block.present)
			strbuf_printf(b, _("given by the lesson (\"dOutput\"): L = \u03a3 dOutput \u2299 output\n"));
		else
			strbuf_printf(b, _("the gradient the rest of the block sends back to the attention's output (residual1's)\n"));
		break;
	case AM_D_CONCAT:
		if (!mat_empty(&g->gated)) { /* gated attention: W_o read gated, and concat reached it through σ(gate) */
			char x3[32];
			strbuf_printf(b, _("dconcat = dgated %s %s(gate) = %s %s %s = %s  (W_o read gated = concat %s %s(gate))\n"),
			              celltext_sym(utf8, "\u00d7", "*"), celltext_sym(utf8, "\u03c3", "sigmoid"),
			              celltext_num(x1, MAT_AT(g->gated, i, j), utf8), celltext_sym(utf8, "\u00d7", "*"),
			              celltext_num(x2, MAT_AT(a->gate_sig, i, j), utf8), celltext_num(x3, MAT_AT(g->concat, i, j), utf8),
			              celltext_sym(utf8, "\u2299", "*"), celltext_sym(utf8, "\u03c3", "sigmoid"));
			break;
		}
		if (mat_empty(&lp->W_o)) {
			strbuf_printf(b, _("no W_o: output is concat itself, so dconcat = doutput\n"));
			break;
		}
		strbuf_printf(b, _("dconcat[%d][%d] = \u03a3_t doutput[%d][t] %s W_o[%d][t]  (row %d of doutput, row %d of W_o)\n"), i, j, i,
		              celltext_sym(utf8, "\u00d7", "*"), j, i, j);
		celltext_terms(b, &g->output.a[(size_t)i * g->output.cols], 1, &lp->W_o.a[(size_t)j * lp->W_o.cols], 1,
		              g->output.cols, utf8);
		break;
	case AM_D_W_O: {
		const Mat *c = mat_empty(&g->gated) ? &a->concat : &a->gated; /* what W_o read */
		strbuf_printf(b, _("dW_o[%d][%d] = \u03a3_i %s[i][%d] %s doutput[i][%d]  (column %d of %s, column %d of doutput)\n"), i,
		              j, mat_empty(&g->gated) ? "concat" : "gated", i, celltext_sym(utf8, "\u00d7", "*"), j, i,
		              mat_empty(&g->gated) ? "concat" : "gated", j);
		celltext_terms(b, &c->a[i], (size_t)c->cols, &g->output.a[j], (size_t)g->output.cols, c->rows, utf8);
		break;
	}
	default: /* dweighted: head h's columns of dconcat */
		strbuf_printf(b, _("head %d's output filled columns %d..%d of concat: dweighted[%d][%d] = dconcat[%d][%d]\n"), h,
		              h * lp->d_v, (h + 1) * lp->d_v - 1, i, j, i, h * lp->d_v + j);
		break;
	}
}

/* Gated attention's gradients (backward.c: gate_backward): dgated, dgate, dW_gate, db_gate. */
static void explain_back_gate(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const LayerParams *lp = attn_params(a);
	const AttnGrad *g = a->grad;
	const Mat *x = lp->block.present && lp->block.norm == NORM_PRE ? &a->norm1 : &a->X; /* what the gate is made from */
	const char *times = celltext_sym(utf8, "\u00d7", "*");
	char x1[32], x2[32], x3[32], x4[32], x5[32];

	(void)h;
	switch (which) {
	case AM_D_GATED:
		strbuf_printf(b, _("dgated[%d][%d] = \u03a3_t doutput[%d][t] %s W_o[%d][t]  (W_o read gated, not concat)\n"), i, j, i,
		              times, j);
		celltext_terms(b, &g->output.a[(size_t)i * g->output.cols], 1, &lp->W_o.a[(size_t)j * lp->W_o.cols], 1,
		               g->output.cols, utf8);
		break;
	case AM_D_GATE: {
		const double s = MAT_AT(a->gate_sig, i, j);
		strbuf_printf(b, "dgate = dgated %s concat %s %s(1 %s %s) = %s %s %s %s %s %s %s = %s\n", times, times,
		              celltext_sym(utf8, "\u03c3", "s"), celltext_sym(utf8, "\u2212", "-"),
		              celltext_sym(utf8, "\u03c3", "s"), celltext_num(x1, MAT_AT(g->gated, i, j), utf8), times,
		              celltext_num(x2, MAT_AT(a->concat, i, j), utf8), times, celltext_num(x3, s, utf8), times,
		              celltext_num(x4, 1.0 - s, utf8), celltext_num(x5, MAT_AT(g->gate, i, j), utf8));
		strbuf_printf(b, _("(the sigmoid's slope %s(1 %s %s) is largest, 1/4, where the gate is half open)\n"),
		              celltext_sym(utf8, "\u03c3", "s"), celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u03c3", "s"));
		break;
	}
	case AM_D_W_GATE:
		strbuf_printf(b, "dW_gate[%d][%d] = \u03a3_i %s[i][%d] %s dgate[i][%d]\n", i, j, mat_label(a, x), i, times, j);
		celltext_terms(b, &x->a[i], (size_t)x->cols, &g->gate.a[j], (size_t)g->gate.cols, x->rows, utf8);
		break;
	default: { /* db_gate: column j of dgate, summed */
		double sum = 0.0;
		for (int r = 0; r < g->gate.rows; r++)
			sum += MAT_AT(g->gate, r, j);
		strbuf_printf(b, _("db_gate[%d] = \u03a3_i dgate[i][%d] = %s  (the bias is added to every row)\n"), j, j,
		              celltext_num(x1, sum, utf8));
		break;
	}
	}
}

/* A mixture of experts' gradients (backward_moe.c): dffn_out, dmoe_weights, drouter_logits and the weights'. */
static void explain_back_moe(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const Block *bl = &attn_params(a)->block;
	const MoeParams *p = &bl->moe;
	const AttnGrad *g = a->grad;
	const Mat *x = attn_ffn_input(a);
	const int D = x->cols, F = bl->d_ff;
	const char *times = celltext_sym(utf8, "\u00d7", "*");
	char x1[32], x2[32];

	(void)h;
	switch (which) {
	case AM_D_FFN_OUT:
		strbuf_printf(b, _("the gradient the block sends back to the mixture's output (residual2's: ffn_out is added to it)\n"));
		break;
	case AM_D_MOE_WEIGHTS:
		if (isnan(MAT_AT(a->moe_weights, i, j))) {
			strbuf_printf(b, _("token %d did not choose expert %d: its weight is not a variable, and nothing reaches it\n"), i, j);
			break;
		}
		strbuf_printf(b, _("ffn_out = \u03a3 w %s expert_out, so dw = expert %d's output row %d %s dffn_out row %d:\n"), times, j,
		              i, celltext_sym(utf8, "\u00b7", "."), i);
		celltext_terms(b, &MAT_AT(a->expert_out, i, j * D), 1, &MAT_AT(g->ffn_out, i, 0), 1, D, utf8);
		break;
	case AM_D_ROUTER_LOGITS:
		if (isnan(MAT_AT(a->moe_weights, i, j))) {
			strbuf_printf(b, "%s", p->gptoss || p->scoring == MOE_SCORE_SIGMOID
			                               ? _("not chosen: this logit made no weight, so its gradient is 0 (the top-k choice has none)\n")
			                               : _("not chosen: yet its logit is in the softmax's sum, so it moves with the chosen ones' gradients\n"));
			if (p->gptoss || p->scoring == MOE_SCORE_SIGMOID)
				break;
		}
		if (p->scoring == MOE_SCORE_SIGMOID) {
			const double s = MAT_AT(a->router_scores, i, j);
			strbuf_printf(b, _("w = routed_scaling_factor %s s / (the chosen s summed) with norm_topk_prob; s = %s(logit), "
			                   "whose slope is s(1 %s s) = %s\n"),
			              times, celltext_sym(utf8, "\u03c3", "sigmoid"), celltext_sym(utf8, "\u2212", "-"),
			              celltext_num(x1, s * (1.0 - s), utf8));
		} else if (p->gptoss) {
			strbuf_printf(b, _("gpt-oss's w is a softmax over the chosen logits alone: dlogit_e = w_e (dw_e %s \u03a3_k w_k dw_k)\n"),
			              celltext_sym(utf8, "\u2212", "-"));
		} else {
			strbuf_printf(b, _("p = softmax(logits) over all %d experts%s: dlogit_e = p_e (dp_e %s \u03a3_k p_k dp_k)\n"),
			              p->experts, p->norm_topk_prob ? _(", and w = p / (the chosen p summed)") : "",
			              celltext_sym(utf8, "\u2212", "-"));
		}
		strbuf_printf(b, "= %s\n", celltext_num(x2, MAT_AT(g->router_logits, i, j), utf8));
		break;
	case AM_D_MOE_W_R:
		strbuf_printf(b, "dW_router[%d][%d] = \u03a3_i %s[i][%d] %s drouter_logits[i][%d]\n", i, j, mat_label(a, x), i, times, j);
		celltext_terms(b, &x->a[i], (size_t)x->cols, &g->router_logits.a[j], (size_t)g->router_logits.cols, x->rows, utf8);
		break;
	default: { /* an expert's weights: only the tokens that chose it add a term */
		const int e = which == AM_D_MOE_W_2 ? i / F : j / F;
		int any = 0;
		strbuf_printf(b, _("expert %d's weight: the sum runs over the tokens that chose it: "), e);
		for (int r = 0; r < x->rows; r++)
			if (!isnan(MAT_AT(a->moe_weights, r, e)))
				strbuf_printf(b, "%s%d", any++ ? ", " : "", r);
		strbuf_printf(b, "%s\n", any ? "" : _("none, so it is 0 and training leaves it"));
		if (which == AM_D_MOE_W_2)
			strbuf_printf(b, _("each adds expert_act[r][%d] %s moe_weights[r][%d] %s dffn_out[r][%d]\n"), i, times, e, times, j);
		break;
	}
	}
}

static void explain_back_weighted(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const AttnGrad *g = a->grad;
	const int dv = lp->d_v;

	if (which == AM_D_V) {
		const int hh = j / dv, c = j % dv;
		strbuf_printf(b, _("dV[%d][%d] = \u03a3_i weights[i][%d] %s dweighted[i][%d]  (head %d: how much each query drew on value %d)\n"),
		              i, j, i, celltext_sym(utf8, "\u00d7", "*"), c, hh, i);
		celltext_terms(b, &a->head[hh].weights.a[i], (size_t)cfg->m, &g->head[hh].weighted.a[c], (size_t)dv, cfg->n, utf8);
		return;
	}
	strbuf_printf(b, _("dweights[%d][%d] = \u03a3_c dweighted[%d][c] %s V[%d][c]  (this head's columns of V)\n"), i, j, i,
	              celltext_sym(utf8, "\u00d7", "*"), j);
	celltext_terms(b, &g->head[h].weighted.a[(size_t)i * dv], 1, &a->V.a[(size_t)j * a->V.cols + (size_t)h * dv], 1, dv,
	              utf8);
}

/* dsinks[0][h]: the sink's column has no dweights, so each row gives −sink_i · Σ_k w_ik dweights_ik. */
static void explain_back_sink(StrBuf *b, const Attn *a, int h, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const int n = cfg->n, m = cfg->m;
	char x1[32], x2[32], x3[32];

	strbuf_printf(b, _("the sink's column of the softmax has no value, so no dweights: through softmax's Jacobian each row i gives "
	                   "%ssink_i %s Σ_k w_ik dweights_ik (sink_i: the row's share, in the matrix sink)\n"),
	              celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u00d7", "*"));
	for (int i = 0; i < n; i++) {
		const double *w = &a->head[h].weights.a[(size_t)i * m], *dw = &a->grad->head[h].weights.a[(size_t)i * m];
		double dot = 0.0;
		for (int k = 0; k < m; k++)
			dot += w[k] * dw[k];
		strbuf_printf(b, _("row %d: %s%s %s %s = %s\n"), i, celltext_sym(utf8, "\u2212", "-"),
		              celltext_num(x1, MAT_AT(a->head[h].sink, i, 0), utf8), celltext_sym(utf8, "\u00d7", "*"),
		              celltext_num(x2, dot, utf8), celltext_num(x3, -MAT_AT(a->head[h].sink, i, 0) * dot, utf8));
	}
	strbuf_printf(b, _("dsinks[0][%d] = the sum of the rows = %s\n"), h, celltext_num(x1, a->grad->sinks.a[h], utf8));
}

static void explain_back_softmax(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const int m = attn_config(a)->m;
	char x1[32], x2[32], x3[32], x4[32];
	double dot = 0.0;

	if (which == AM_D_SINKS) {
		explain_back_sink(b, a, j, utf8);
		return;
	}
	const double *w = &a->head[h].weights.a[(size_t)i * m], *dw = &a->grad->head[h].weights.a[(size_t)i * m];
	for (int k = 0; k < m; k++)
		dot += w[k] * dw[k];
	strbuf_printf(b, _("through softmax: dmasked_ij = w_ij %s (dweights_ij %s \u03a3_k w_ik dweights_ik)\n"), celltext_sym(utf8, "\u00d7", "*"),
	              celltext_sym(utf8, "\u2212", "-"));
	strbuf_printf(b, _("\u03a3_k w_%dk dweights_%dk = %s (row %d's weighted average pull)\n"), i, i, celltext_num(x1, dot, utf8), i);
	strbuf_printf(b, "= %s %s (%s %s %s)\n", celltext_num(x1, w[j], utf8), celltext_sym(utf8, "\u00d7", "*"), celltext_num(x2, dw[j], utf8),
	              celltext_sym(utf8, "\u2212", "-"), celltext_num(x3, dot, utf8));
	strbuf_printf(b, "= %s %s %s = %s\n", celltext_num(x1, w[j], utf8), celltext_sym(utf8, "\u00d7", "*"), celltext_num(x2, dw[j] - dot, utf8),
	              celltext_num(x4, w[j] * (dw[j] - dot), utf8));
	if (w[j] == 0.0)
		strbuf_printf(b, _("(a weight of 0 passes nothing back)\n"));
	else
		strbuf_printf(b, _("(the Jacobian's diagonal is w(1 %s w) = %s: near 0 when w is near 0 or 1)\n"), celltext_sym(utf8, "\u2212", "-"),
		              celltext_num(x1, w[j] * (1 - w[j]), utf8));
}

static void explain_back_mask(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const AttnVariant *map = attn_score_map(a), *bias = attn_score_bias(a);

	(void)which;
	if (a->visible[(size_t)i * attn_config(a)->m + j] && map != NULL) {
		/* soft-capping: masked = c·tanh(s/c), so dscaled = dmasked · (1 − tanh²(s/c)) */
		const double s = attn_cell(a, bias != NULL ? bias->biased_matrix : AM_SCALED, h, i, j);
		const double slope = map->score_map_grad(a, s);
		char x1[32], x2[32], x3[32];
		strbuf_printf(b, _("query %d may see key %d; the cell was soft-capped, so the gradient is scaled by the cap's slope:\n"), i, j);
		strbuf_printf(b, "dscaled = dmasked %s (1 %s tanh%s(s / c)) = %s %s %s = %s\n", celltext_sym(utf8, "\u00d7", "*"),
		              celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u00b2", "^2"),
		              celltext_num(x1, MAT_AT(a->grad->head[h].masked, i, j), utf8), celltext_sym(utf8, "\u00d7", "*"),
		              celltext_num(x2, slope, utf8), celltext_num(x3, MAT_AT(a->grad->head[h].scaled, i, j), utf8));
	} else if (a->visible[(size_t)i * attn_config(a)->m + j])
		strbuf_printf(b, _("query %d may see key %d: the gradient passes through, dscaled = dmasked\n"), i, j);
	else
		strbuf_printf(b, _("query %d may not see key %d: the cell was set to the fill, a constant, so nothing flows back: 0\n"),
		              i, j);
}

static void explain_back_scale(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	char x1[32], x2[32];

	(void)which;
	strbuf_printf(b, "= dscaled %s factor = %s %s %s\n", celltext_sym(utf8, "\u00d7", "*"),
	              celltext_num(x1, MAT_AT(a->grad->head[h].scaled, i, j), utf8), celltext_sym(utf8, "\u00d7", "*"), celltext_num(x2, a->factor, utf8));
}

static void explain_back_scores(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const int dk = lp->d_k, hh = j / dk, c = j % dk;
	const Mat *ds = &a->grad->head[hh].scores;

	(void)h;
	if (cfg->score == SCORE_ADDITIVE) {
		strbuf_printf(b, _("through the additive score: \u03a3 over the %s of dscores %s w_e[c](1 %s tanh\u00b2(q + k))\n"),
		              which == AM_D_Q ? _("keys") : _("queries"), celltext_sym(utf8, "\u00d7", "*"), celltext_sym(utf8, "\u2212", "-"));
		return;
	}
	if (which == AM_D_Q) {
		strbuf_printf(b, _("dQ[%d][%d] = \u03a3_j dscores_%dj %s K[j][%d]  (head %d)\n"), i, j, i, celltext_sym(utf8, "\u00d7", "*"), j, hh);
		celltext_terms(b, &ds->a[(size_t)i * cfg->m], 1, &a->K.a[j], (size_t)a->K.cols, cfg->m, utf8);
	} else {
		strbuf_printf(b, _("dK[%d][%d] = \u03a3_i dscores_i%d %s Q[i][%d]  (head %d)\n"), i, j, i, celltext_sym(utf8, "\u00d7", "*"), j, hh);
		celltext_terms(b, &ds->a[i], (size_t)cfg->m, &a->Q.a[j], (size_t)a->Q.cols, cfg->n, utf8);
	}
	(void)c;
}

static void explain_back_project(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const AttnGrad *g = a->grad;
	const Mat *Xa = lp->block.present && lp->block.norm == NORM_PRE ? &a->norm1 : &a->X;
	const Mat *S = cfg->has_source ? &a->S : Xa;

	(void)h;
	if (which == AM_D_X) {
		strbuf_printf(b, "dX[%d][%d] = \u03a3_c dQ[%d][c] W_q[%d][c] + \u03a3_c dK[%d][c] W_k[%d][c] + \u03a3_c dV[%d][c] W_v[%d][c]\n",
		              i, j, i, j, i, j, i, j);
		strbuf_printf(b, _("the first sum:\n"));
		celltext_terms(b, &g->Q.a[(size_t)i * g->Q.cols], 1, &lp->W_q.a[(size_t)j * lp->W_q.cols], 1, g->Q.cols, utf8);
		return;
	}
	{
		const Mat *in = which == AM_D_W_Q ? Xa : S, *d = which == AM_D_W_Q ? &g->Q : which == AM_D_W_K ? &g->K : &g->V;
		strbuf_printf(b, "%s[%d][%d] = \u03a3_i %s[i][%d] %s %s[i][%d]\n", matrix_name(which), i, j, mat_label(a, in), i,
		              celltext_sym(utf8, "\u00d7", "*"), which == AM_D_W_Q ? "dQ" : which == AM_D_W_K ? "dK" : "dV", j);
		celltext_terms(b, &in->a[i], (size_t)in->cols, &d->a[j], (size_t)d->cols, in->rows, utf8);
	}
}

/* logits[i][v]: row i of the rows the head reads · row v of unembed, term by term. */
static void explain_logits(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const Mat *x = attn_layer_output(a);
	double *buf = malloc((size_t)x->cols * sizeof *buf); /* a real model's row, made doubles (model_unembed_row) */

	(void)h;
	if (buf == NULL) {
		strbuf_printf(b, "%s\n", _("out of memory"));
		return;
	}
	if (which == AM_LOGITS && !mat_empty(&a->logits_raw)) { /* Gemma 2's final soft cap */
		const double c = cfg->final_softcap, z = MAT_AT(a->logits_raw, i, j), t = tanh(z / c);
		char x1[32], x2[32], x3[32], x4[32];
		strbuf_printf(b, "c%stanh(logits_raw / c) = %s %s tanh(%s / %s) = %s\n", celltext_sym(utf8, "\u00b7", "*"),
		              celltext_num(x1, c, utf8), celltext_sym(utf8, "\u00b7", "*"), celltext_num(x2, z, utf8),
		              celltext_num(x3, c, utf8), celltext_num(x4, MAT_AT(a->logits, i, j), utf8));
		strbuf_printf(b, _("(final_logit_softcapping: the logit can never pass %s%s; its slope here is 1 %s tanh%s = %s)\n"),
		              celltext_sym(utf8, "\u00b1", "+-"), celltext_num(x1, c, utf8), celltext_sym(utf8, "\u2212", "-"),
		              celltext_sym(utf8, "\u00b2", "^2"), celltext_num(x2, 1.0 - t * t, utf8));
		strbuf_printf(b, "%s", _("logits_raw, the product before the cap: "));
	}
	strbuf_printf(b, "%s", _("vocabulary entry "));
	buf_label(b, labels_vocab(cfg, j));
	strbuf_printf(b, _(": %s row %d %s unembed row %d (its unembedding), d_model = %d terms\n"), mat_label(a, x), i,
	              celltext_sym(utf8, "\u00b7", "."), j, x->cols);
	celltext_terms(b, &x->a[(size_t)i * (size_t)x->cols], 1, model_unembed_row(cfg, j, buf), 1, x->cols, utf8);
	free(buf);
	strbuf_printf(b, _("(the larger the dot product, the more the model expects this entry next)\n"));
}

/* next[0][v] = exp(z_v/T − max) / Σ_u exp(z_u/T − max), z = logits[row]. */
static void explain_next(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const int row = attn_logits_row(cfg);
	const double T = attn_temperature(cfg), *z = &MAT_AT(a->logits, row, 0);
	double max = -INFINITY, sum = 0.0;
	char x1[32], x2[32], x3[32], x4[32], x5[32];

	(void)which, (void)h, (void)i;
	for (int v = 0; v < cfg->vocab; v++)
		max = z[v] / T > max ? z[v] / T : max;
	for (int v = 0; v < cfg->vocab; v++)
		sum += exp(z[v] / T - max);
	strbuf_printf(b, "%s", _("vocabulary entry "));
	buf_label(b, labels_vocab(cfg, j));
	strbuf_printf(b, _(", after position %d (the logits' row %d), temperature T = %s:\n"), row, row, celltext_num(x1, T, utf8));
	strbuf_printf(b, "p = exp(z/T %s max) / %s_u exp(z_u/T %s max)\n", celltext_sym(utf8, "\u2212", "-"),
	              celltext_sym(utf8, "\u03a3", "sum"), celltext_sym(utf8, "\u2212", "-"));
	strbuf_printf(b, "  = exp(%s/%s %s %s) / %s\n", celltext_num(x1, z[j], utf8), celltext_num(x2, T, utf8),
	              celltext_sym(utf8, "\u2212", "-"), celltext_num(x3, max, utf8), celltext_num(x4, sum, utf8));
	strbuf_printf(b, "  = %s / %s = %s\n", celltext_num(x1, exp(z[j] / T - max), utf8), celltext_num(x2, sum, utf8),
	              celltext_num(x5, exp(z[j] / T - max) / sum, utf8));
	strbuf_printf(b, _("(the sum runs over all %d entries of the vocabulary; max = the largest z/T, subtracted so that exp cannot overflow)\n"),
	              cfg->vocab);
}

/* The explain half of the stage table (catalog.c has the names and panes, attention.c the kernels); a variant's stage is explained by its own file (variants/). */
static const StageExplain stage_explain[STAGE_COUNT] = {
	[STAGE_INPUT] = explain_input,
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
	[STAGE_NORM1_PRE] = explain_norm,
	[STAGE_NORM1_AFTER] = explain_norm,
	[STAGE_NORM1_SANDWICH] = explain_norm,
	[STAGE_RESIDUAL1] = explain_residual,
	[STAGE_NORM1_POST] = explain_norm,
	[STAGE_NORM2_PRE] = explain_norm,
	[STAGE_FFN_HIDDEN] = explain_ffn_hidden,
	[STAGE_ACTIVATION] = explain_activation,
	[STAGE_FFN_OUT] = explain_ffn_out,
	[STAGE_NORM2_AFTER] = explain_norm,
	[STAGE_NORM2_SANDWICH] = explain_norm,
	[STAGE_RESIDUAL2] = explain_residual,
	[STAGE_NORM2_POST] = explain_norm,
	[STAGE_FINAL_NORM] = explain_norm,
	[STAGE_LOGITS] = explain_logits,
	[STAGE_NEXT] = explain_next,
	[STAGE_BACK_MOE] = explain_back_moe,
	[STAGE_BACK_OUTPUT] = explain_back_output,
	[STAGE_BACK_GATE] = explain_back_gate,
	[STAGE_BACK_WEIGHTED] = explain_back_weighted,
	[STAGE_BACK_SOFTMAX] = explain_back_softmax,
	[STAGE_BACK_MASK] = explain_back_mask,
	[STAGE_BACK_SCALE] = explain_back_scale,
	[STAGE_BACK_SCORES] = explain_back_scores,
	[STAGE_BACK_PROJECT] = explain_back_project,
};

/* The stage that explains a matrix: the one that makes it (given ones: input), or its made_else where that stage is absent and the other makes it (MLA's Q, K, V). */
static Stage made_stage(const Attn *a, AttnMatrix which)
{
	const MatrixKind *k = &matrix_kinds[which];

	if (k->made_by == STAGE_COUNT)
		return STAGE_INPUT;
	if (!stage_present(&a->shape, k->made_by) && k->made_else != STAGE_COUNT && stage_present(&a->shape, k->made_else))
		return k->made_else;
	return k->made_by;
}

char *explain_cell(const Attn *a, AttnMatrix which, int h, int i, int j, int utf8, char **err)
{
	const Mat *m = attn_matrix(a, which, h);
	StrBuf b = { 0 };
	char x1[32];
	Stage st;

	*err = NULL;
	if (m == NULL) {
		*err = strdup(which >= 0 && which < AM_COUNT ? _("that matrix is not part of this lesson") : _("unknown matrix"));
		return NULL;
	}
	if (i < 0 || i >= m->rows || j < 0 || j >= m->cols) {
		*err = str_printf(_("%s has rows 0..%d and columns 0..%d"), matrix_name(which), m->rows - 1, m->cols - 1);
		return NULL;
	}
	strbuf_printf(&b, "%s[%d][%d]", matrix_name(which), i, j);
	if (matrix_per_head(which) && a->heads > 1)
		strbuf_printf(&b, _(" (head %d)"), h);
	strbuf_printf(&b, " = %s", celltext_num(x1, MAT_AT(*m, i, j), utf8));
	if (labels_token_columns(a, which)) {
		strbuf_printf(&b, "%s", _("   query "));
		buf_label(&b, labels_row(a, which, i));
		strbuf_printf(&b, "%s", _(", key "));
		buf_label(&b, labels_col(a, which, j));
	}
	strbuf_printf(&b, "\n");
	/* A matrix is explained by the stage that makes it; given ones by the input stage. */
	st = made_stage(a, which);
	if (attn_variant_of_stage(st) != NULL) {
		if (attn_variant_of_stage(st)->explain != NULL)
			attn_variant_of_stage(st)->explain(&b, a, which, h, i, j, utf8);
	} else if (stage_explain[st] != NULL)
		stage_explain[st](&b, a, which, h, i, j, utf8);
	if (b.oom) {
		free(b.s);
		*err = strdup(_("out of memory"));
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
	const int source = matrix_kinds[which].row_axis == AXIS_KEY && attn_config(a)->has_source;
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
	OP(q || !attn_config(a)->has_source ? AM_X : AM_S, 0, i, -1);
	OP(q ? AM_W_Q : which == AM_K ? AM_W_K : AM_W_V, 0, -1, j);
	return k;
}

/* scores[i][j]: row i of Q and row j of K (column j of Kᵀ), this head's columns. */
static int operands_scores(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	int k = 0;

	(void)which;
	OP(attn_reads(a, AM_Q), h, i, -1);
	OP(attn_reads(a, AM_K), h, j, -1);
	return k;
}

/* A cell of scaled or masked: the same cell one stage back (masked: of a variant's biased scores, if any). */
static int operands_cellwise(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const AttnVariant *bias = attn_score_bias(a), *map = attn_score_map(a);
	int k = 0;

	OP(which == AM_SCALED ? AM_SCORES : map != NULL ? map->mapped_matrix : bias == NULL ? AM_SCALED : bias->biased_matrix, h, i, j);
	return k;
}

/* weights[i][j]: the whole row i of masked (of scaled without a mask: the pane the stage shows). */
static int operands_softmax(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	int k = 0;

	(void)which, (void)j;
	OP(a->shape.features & FEAT_MASK ? AM_MASKED : a->shape.features & FEAT_SOFTCAP ? AM_CAPPED : AM_SCALED, h, i, -1);
	return k;
}

/* weighted[i][c]: row i of the weights and column c of this head's V. */
static int operands_weighted(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	int k = 0;

	(void)which;
	OP(AM_WEIGHTS, h, i, -1);
	OP(AM_V, h, -1, attn_kv_head(a, h) * attn_params(a)->d_v + j);
	return k;
}

/* concat[i][j]: column j mod d_v of head j / d_v's output. */
static int operands_concat(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const int dv = attn_params(a)->d_v;
	int k = 0;

	int c;
	const AttnMatrix w = concat_source(a, i, j, &c);

	(void)which, (void)h;
	OP(w, j / dv, i, c);
	return k;
}

/* output[i][j]: row i of concat and column j of W_o (the same cell of concat without W_o). */
static int operands_output(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	int k = 0;

	(void)which, (void)h;
	if (mat_empty(&attn_params(a)->W_o))
		OP(AM_CONCAT, 0, i, j);
	else {
		OP(attn_reads(a, AM_CONCAT), 0, i, -1);
		OP(AM_W_O, 0, -1, j);
	}
	return k;
}

/* logits[i][v]: row i of what the head reads and row v of unembed; next[0][v]: the logits' row. */
static int operands_lm_head(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const Mat *x = attn_layer_output(a);
	int k = 0;

	(void)h;
	if (which == AM_NEXT) {
		OP(AM_LOGITS, 0, attn_logits_row(attn_config(a)), -1);
		return k;
	}
	if (which == AM_LOGITS && !mat_empty(&a->logits_raw)) { /* the capped logit: its cell before the cap */
		OP(AM_LOGITS_RAW, 0, i, j);
		return k;
	}
	for (int w = 0; w < AM_COUNT; w++) /* the catalogue's name of the rows the head reads */
		if (attn_slot_const(a, (AttnMatrix)w, 0) == x) {
			OP((AttnMatrix)w, 0, i, -1);
			break;
		}
	OP(AM_UNEMBED, 0, j, -1);
	return k;
}

#undef OP

static const StageOperands stage_operands[STAGE_COUNT] = {
	[STAGE_INPUT] = operands_positional,
	[STAGE_POSITIONAL] = operands_positional,
	[STAGE_PROJECT] = operands_project,
	[STAGE_SCORES] = operands_scores,
	[STAGE_SCALE] = operands_cellwise,
	[STAGE_MASK] = operands_cellwise,
	[STAGE_SOFTMAX] = operands_softmax,
	[STAGE_WEIGHTED] = operands_weighted,
	[STAGE_CONCAT] = operands_concat,
	[STAGE_OUTPUT] = operands_output,
	[STAGE_LOGITS] = operands_lm_head,
	[STAGE_NEXT] = operands_lm_head,
};

int explain_operands(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const MatrixKind *k = matrix_kind(which);

	const Stage st = k != NULL ? made_stage(a, which) : STAGE_INPUT;
	char *e = NULL;

	if (k == NULL || k->made_by == STAGE_COUNT)
		return 0;
	if ((k->flags & MF_GRAD) && attn_grads_ready(a, &e) != 0) { /* a gradient's operands read the gradients */
		free(e);
		return 0;
	}
	if (attn_variant_of_stage((Stage)st) != NULL) /* a variant's stage: its own file says */
		return attn_variant_of_stage((Stage)st)->operands != NULL
		               ? attn_variant_of_stage((Stage)st)->operands(a, which, h, i, j, out)
		               : 0;
	if (stage_operands[st] == NULL)
		return 0;
	return stage_operands[st](a, which, h, i, j, out);
}
