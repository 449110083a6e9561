/* explain.c: the arithmetic behind any cell, with the lesson's own numbers. */
#include "explain.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
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
		char *lab = textfmt_col_label(a, AM_WEIGHTS, t);
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

char *explain_cell(const Attn *a, AttnMatrix which, int h, int i, int j, int utf8, char **err)
{
	const Lesson *l = a->lesson;
	const Mat *m = attn_matrix(a, which, h);
	StrBuf b = { 0 };
	char x1[32], x2[32];

	*err = NULL;
	if (m == NULL) {
		*err = strdup(which >= 0 && which < AM_COUNT ? "that matrix is not part of this lesson" : "unknown matrix");
		return NULL;
	}
	if (i < 0 || i >= m->rows || j < 0 || j >= m->cols) {
		char tmp[160];
		snprintf(tmp, sizeof tmp, "%s has rows 0..%d and columns 0..%d", attn_matrix_name(which), m->rows - 1,
		         m->cols - 1);
		*err = strdup(tmp);
		return NULL;
	}
	strbuf_printf(&b, "%s[%d][%d]", attn_matrix_name(which), i, j);
	if (attn_matrix_per_head(which) && a->heads > 1)
		strbuf_printf(&b, " (head %d)", h);
	strbuf_printf(&b, " = %s", num(x1, MAT_AT(*m, i, j), utf8));
	if (textfmt_token_columns(a, which)) {
		strbuf_printf(&b, "   query ");
		buf_label(&b, textfmt_row_label(a, which, i));
		strbuf_printf(&b, ", key ");
		buf_label(&b, textfmt_col_label(a, which, j));
	}
	strbuf_printf(&b, "\n");

	switch (which) {
	case AM_INPUT:
	case AM_SOURCE_INPUT:
		strbuf_printf(&b, "an input number, as the lesson gives it (or its generator made it).\n");
		break;
	case AM_W_Q: case AM_W_K: case AM_W_V: case AM_W_O: case AM_W_E:
		strbuf_printf(&b, "a weight, as the lesson gives it: a learned parameter in a real model.\n"
		            "Change it with `set %s[%d][%d] VALUE` and watch everything after it change.\n",
		        attn_matrix_name(which), i, j);
		break;
	case AM_PE:
	case AM_PE_SRC: {
		const int even = j - j % 2;
		strbuf_printf(&b, "%s(pos / 10000^(%d/%d)) with pos = %d\n= %s(%s)\n", j % 2 ? "cos" : "sin", even,
		        which == AM_PE ? l->d_model : l->d_src, i, j % 2 ? "cos" : "sin",
		        num(x1, i / pow(10000.0, (double)even / (which == AM_PE ? l->d_model : l->d_src)), utf8));
		break;
	}
	case AM_X:
	case AM_S: {
		const Mat *in = which == AM_X ? &l->input : &l->source_input;
		const Mat *pe = which == AM_X ? &a->PE : &a->PE_src;
		if (mat_empty(pe))
			strbuf_printf(&b, "the input itself (no positional encoding).\n");
		else
			strbuf_printf(&b, "= input + PE = %s + %s\n", num(x1, MAT_AT(*in, i, j), utf8), num(x2, MAT_AT(*pe, i, j), utf8));
		break;
	}
	case AM_Q:
		explain_product(&b, &a->X, i, &l->W_q, j, utf8, "X", "W_q", 0, 0, l->d_model);
		if (a->heads > 1)
			strbuf_printf(&b, "(column %d belongs to head %d)\n", j, j / l->d_k);
		break;
	case AM_K:
	case AM_V:
		explain_product(&b, l->has_source ? &a->S : &a->X, i, which == AM_K ? &l->W_k : &l->W_v, j, utf8,
		                l->has_source ? "S" : "X", which == AM_K ? "W_k" : "W_v", 0, 0, l->d_src);
		if (a->heads > 1)
			strbuf_printf(&b, "(column %d belongs to head %d)\n", j, j / (which == AM_K ? l->d_k : l->d_v));
		break;
	case AM_SCORES:
		explain_dot(&b, a, h, i, j, utf8);
		break;
	case AM_SCALED:
		strbuf_printf(&b, "= score %s factor = %s %s %s", sym(utf8, "\u00d7", "*"), num(x1, MAT_AT(a->head[h].scores, i, j), utf8),
		        sym(utf8, "\u00d7", "*"), num(x2, a->factor, utf8));
		if (l->scale == SCALE_SQRT_DK)
			strbuf_printf(&b, "  (1/%s%d: d_k = %d)\n", sym(utf8, "\u221a", "sqrt "), l->d_k, l->d_k);
		else if (l->scale == SCALE_NONE)
			strbuf_printf(&b, "  (this lesson does not scale)\n");
		else
			strbuf_printf(&b, "  (the lesson's own factor)\n");
		break;
	case AM_MASKED:
		if (a->visible[(size_t)i * l->m + j])
			strbuf_printf(&b, "query %d may see key %d, so the scaled score passes through unchanged.\n", i, j);
		else {
			strbuf_printf(&b, "query %d may not see key %d (%s mask), so the cell becomes %s\n", i, j,
			        l->mask == MASK_CAUSAL ? "causal: a later token" : l->mask == MASK_PADDING ? "padding" : "the lesson's",
			        l->mask_fill_inf ? sym(utf8, "-\u221e: exp(-\u221e) = 0, no weight at all.", "-inf: exp(-inf) = 0, no weight at all.")
			                         : "the fill value; it still gets exp(fill - max) of the weight.");
			if (!l->mask_fill_inf)
				strbuf_printf(&b, "(mask_fill = %s)\n", num(x1, l->mask_fill, utf8));
		}
		break;
	case AM_WEIGHTS:
		explain_softmax(&b, a, h, i, j, utf8);
		break;
	case AM_WEIGHTED:
		explain_weighted(&b, a, h, i, j, utf8);
		break;
	case AM_CONCAT:
		strbuf_printf(&b, "column %d of concat is column %d of head %d's output (head %d fills columns %d..%d)\n", j,
		        j % l->d_v, j / l->d_v, j / l->d_v, (j / l->d_v) * l->d_v, (j / l->d_v + 1) * l->d_v - 1);
		break;
	case AM_OUTPUT:
		if (mat_empty(&a->output))
			strbuf_printf(&b, "no W_o in this lesson: the output is concat itself.\n");
		else
			explain_product(&b, &a->concat, i, &l->W_o, j, utf8, "concat", "W_o", 0, 0, l->W_o.rows);
		break;
	default:
		break;
	}
	if (b.oom) {
		free(b.s);
		*err = strdup("out of memory");
		return NULL;
	}
	return b.s;
}

int explain_operands(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const Lesson *l = a->lesson;
	int k = 0;

#define OP(w, hh, r, c) (out[k].which = (w), out[k].head = (hh), out[k].row = (r), out[k].col = (c), k++)
	switch (which) {
	case AM_X: OP(AM_INPUT, 0, i, j); if (!mat_empty(&a->PE)) OP(AM_PE, 0, i, j); break;
	case AM_S: OP(AM_SOURCE_INPUT, 0, i, j); if (!mat_empty(&a->PE_src)) OP(AM_PE_SRC, 0, i, j); break;
	case AM_Q: OP(AM_X, 0, i, -1); OP(AM_W_Q, 0, -1, j); break;
	case AM_K: OP(l->has_source ? AM_S : AM_X, 0, i, -1); OP(AM_W_K, 0, -1, j); break;
	case AM_V: OP(l->has_source ? AM_S : AM_X, 0, i, -1); OP(AM_W_V, 0, -1, j); break;
	/* scores[i][j]: row i of Q and row j of K (column j of Kᵀ), this head's columns */
	case AM_SCORES: OP(AM_Q, h, i, -1); OP(AM_K, h, j, -1); break;
	case AM_SCALED: OP(AM_SCORES, h, i, j); break;
	case AM_MASKED: OP(AM_SCALED, h, i, j); break;
	case AM_WEIGHTS: OP(AM_MASKED, h, i, -1); break;
	/* weighted[i][c]: row i of the weights and column c of this head's V */
	case AM_WEIGHTED: OP(AM_WEIGHTS, h, i, -1); OP(AM_V, h, -1, h * l->d_v + j); break;
	case AM_CONCAT: OP(AM_WEIGHTED, j / l->d_v, i, j % l->d_v); break;
	case AM_OUTPUT: if (!mat_empty(&a->output)) { OP(AM_CONCAT, 0, i, -1); OP(AM_W_O, 0, -1, j); } break;
	default: break;
	}
#undef OP
	return k;
}

const char *explain_formula(Stage st, int utf8)
{
	static const char *const u[STAGE_COUNT] = {
		[STAGE_INPUT] = "X: one row per token, d_model numbers each",
		[STAGE_POSITIONAL] = "X = input + PE   PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(\u2026)",
		[STAGE_PROJECT] = "Q = X\u00b7W_q   K = X\u00b7W_k   V = X\u00b7W_v",
		[STAGE_SPLIT] = "head h: columns [h\u00b7d_k, (h+1)\u00b7d_k) of Q and K, [h\u00b7d_v, (h+1)\u00b7d_v) of V",
		[STAGE_SCORES] = "scores = Q\u00b7K\u1d40   s_ij = q_i \u00b7 k_j = \u03a3_c q_ic k_jc",
		[STAGE_SCALE] = "scaled = scores / \u221ad_k",
		[STAGE_MASK] = "masked_ij = scaled_ij where key j is visible to query i, else \u2212\u221e",
		[STAGE_SOFTMAX] = "weights = softmax(masked)  row i: exp(s_ij \u2212 max_i) / \u03a3_j exp(s_ij \u2212 max_i)",
		[STAGE_WEIGHTED] = "out = weights\u00b7V   out_i = \u03a3_j w_ij v_j",
		[STAGE_CONCAT] = "concat = [head_0 | head_1 | \u2026 | head_{h\u22121}]",
		[STAGE_OUTPUT] = "output = concat\u00b7W_o",
	};
	static const char *const a[STAGE_COUNT] = {
		[STAGE_INPUT] = "X: one row per token, d_model numbers each",
		[STAGE_POSITIONAL] = "X = input + PE   PE(pos,2i) = sin(pos/10000^(2i/d)), PE(pos,2i+1) = cos(...)",
		[STAGE_PROJECT] = "Q = X.W_q   K = X.W_k   V = X.W_v",
		[STAGE_SPLIT] = "head h: columns [h*d_k, (h+1)*d_k) of Q and K, [h*d_v, (h+1)*d_v) of V",
		[STAGE_SCORES] = "scores = Q.K^T   s_ij = q_i . k_j = sum_c q_ic k_jc",
		[STAGE_SCALE] = "scaled = scores / sqrt(d_k)",
		[STAGE_MASK] = "masked_ij = scaled_ij where key j is visible to query i, else -inf",
		[STAGE_SOFTMAX] = "weights = softmax(masked)  row i: exp(s_ij - max_i) / sum_j exp(s_ij - max_i)",
		[STAGE_WEIGHTED] = "out = weights.V   out_i = sum_j w_ij v_j",
		[STAGE_CONCAT] = "concat = [head_0 | head_1 | ... | head_{h-1}]",
		[STAGE_OUTPUT] = "output = concat.W_o",
	};
	if ((unsigned)st >= STAGE_COUNT)
		return "";
	return utf8 ? u[st] : a[st];
}

const char *explain_stage_blurb(Stage st, const char *lang)
{
	static const char *const en[STAGE_COUNT] = {
		[STAGE_INPUT] = "Each token starts as a row of numbers. On its own a row knows nothing about its neighbours.",
		[STAGE_POSITIONAL] = "Attention by itself ignores word order, so each position adds its own pattern of sines and cosines.",
		[STAGE_PROJECT] = "Three learned matrices turn every row into a query (what am I looking for?), a key (what do I offer?) and a value (what do I pass on?).",
		[STAGE_SPLIT] = "The columns of Q, K and V are cut into heads; each head attends on its own, looking for its own kind of relevance.",
		[STAGE_SCORES] = "Each query is compared with every key by a dot product: a large score means a good match.",
		[STAGE_SCALE] = "Dot products grow with the width d_k; dividing by \u221ad_k keeps them near unit size so softmax does not saturate.",
		[STAGE_MASK] = "Before softmax, the cells a query must not see are set to \u2212\u221e, so they will get exactly zero weight.",
		[STAGE_SOFTMAX] = "Softmax turns each row of scores into weights that are positive and sum to 1.",
		[STAGE_WEIGHTED] = "Each output row is the weighted sum of the value rows: a token's new meaning, mixed from its context.",
		[STAGE_CONCAT] = "The heads' outputs are laid side by side again.",
		[STAGE_OUTPUT] = "A last learned matrix W_o mixes the heads into the output.",
	};
	static const char *const zh[STAGE_COUNT] = {
		[STAGE_INPUT] = "每个词先是一行数字。单独一行并不知道它的上下文。",
		[STAGE_POSITIONAL] = "注意力本身不看词序，所以每个位置加上自己的一组正弦和余弦。",
		[STAGE_PROJECT] = "三个可学习的矩阵把每一行变成查询（我在找什么）、键（我能提供什么）和值（我要传递什么）。",
		[STAGE_SPLIT] = "Q、K、V 的列被切成多个头；每个头各自计算注意力，关注不同类型的相关性。",
		[STAGE_SCORES] = "每个查询和每个键做点积：分数越大，匹配越好。",
		[STAGE_SCALE] = "点积随维度 d_k 变大；除以 \u221ad_k 让它们保持在单位量级，softmax 才不会饱和。",
		[STAGE_MASK] = "在 softmax 之前，把不该看到的位置设为 \u2212\u221e，它们的权重就恰好是 0。",
		[STAGE_SOFTMAX] = "softmax 把每一行分数变成为正且和为 1 的权重。",
		[STAGE_WEIGHTED] = "每一行输出是值向量的加权和：一个词从上下文中得到的新含义。",
		[STAGE_CONCAT] = "把各个头的输出重新并排拼接起来。",
		[STAGE_OUTPUT] = "最后一个可学习的矩阵 W_o 把各个头混合成输出。",
	};
	if ((unsigned)st >= STAGE_COUNT)
		return "";
	return lang != NULL && strcmp(lang, "zh") == 0 ? zh[st] : en[st];
}
