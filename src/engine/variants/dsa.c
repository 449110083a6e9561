/* dsa.c: DeepSeek Sparse Attention (DeepSeek-V3.2, issue 24 §2), three stages on top of MLA (mla.c).
 *
 * Following deepseek-ai/DeepSeek-V3.2-Exp's inference/model.py, Indexer.forward
 * and MLA.forward (the prefill branch, "mask is not None"):
 *
 *   q = wq_b(qr)                        qr = c_Q, MLA's query latent after its RMSNorm
 *   q_pe, q_nope = split(q, [rope_head_dim, head_dim − rope_head_dim])   the RoPE part FIRST
 *   q_pe = apply_rotary_emb(q_pe)       pairs (2p, 2p+1) turned in place (view_as_complex)
 *   k = k_norm(wk(x))                   LayerNorm with weight and bias, eps 1e-6
 *   k_pe turned the same way; one k a token for every index head
 *   weights = weights_proj(x) · n_heads^−½ · softmax_scale (head_dim^−½)
 *   index_score[t, s] = Σ_h weights[t, h] · ReLU(q[t, h]·k[s])   (fp8_index), −∞ for s > t (+= mask)
 *   index_score += mask; topk_indices = index_score.topk(min(index_topk, end_pos))
 *   index_mask = −∞ everywhere, 0 at topk_indices; += mask; scores += index_mask
 *
 * Left out: the FP8 quantisation (act_quant, q_scale and k_scale: in exact
 * arithmetic they dequantise to the same numbers) and rotate_activation, the
 * Hadamard transform H/√d applied to both q and k: H/√d is orthogonal, so
 * (Hq/√d)·(Hk/√d) = q·k and the ReLU of it, the scores and the kept set are the
 * same (make_reference_dsa.py checks it to rounding). A tie at the k-th place
 * keeps the earlier key (torch.topk does not say which); the lessons avoid ties.
 *
 *   indexer (variant_dsa_index)  index_q, index_k, index_w, index_scores
 *   sparse  (variant_dsa_topk)   index_kept; index_mask (0 / −∞) and sparse = scaled + index_mask,
 *                                the core's score_bias: masked, softmax, weighted … follow unchanged
 *   dense   (variant_dsa_dense)  dense_weights: softmax(scaled + causal mask), the weights without the top-k
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"
#include "base/strbuf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the passes */

/* The rows the attention reads: norm1 in a pre-norm block, else X (mla.c's). */
static const Mat *dsa_input(const Attn *a, const LayerParams *lp)
{
	return lp->block.present && lp->block.norm == NORM_PRE ? &a->norm1 : &a->X;
}

/* Row i of A (len numbers) · column j of W (rows len): one sum, in order. */
static double dot_col(const double *x, const Mat *W, int j, int len)
{
	double s = 0.0;

	for (int t = 0; t < len; t++)
		s += x[t] * W->a[(size_t)t * (size_t)W->cols + (size_t)j];
	return s;
}

/* The first d numbers of x (d even) turned in place by position pos, pairs (2p, 2p+1) as complex numbers. */
static void rope_pairs(double *x, int d, int pos, double theta)
{
	for (int p = 0; p < d / 2; p++) {
		const double ang = pos * (1.0 / pow(theta, (double)(2 * p) / d)), c = cos(ang), s = sin(ang);
		const double e = x[2 * p], o = x[2 * p + 1];
		x[2 * p] = e * c - o * s;
		x[2 * p + 1] = e * s + o * c;
	}
}

/* Row x (len numbers) := LayerNorm: (x − mean) / √(var + eps) · w + b (var over len, not len − 1). */
static void layernorm(double *x, int len, const double *w, const double *b, double eps)
{
	double mean = 0.0, var = 0.0;

	for (int j = 0; j < len; j++)
		mean += x[j];
	mean /= len;
	for (int j = 0; j < len; j++)
		var += (x[j] - mean) * (x[j] - mean);
	var /= len;
	for (int j = 0; j < len; j++)
		x[j] = (x[j] - mean) / sqrt(var + eps) * w[j] + b[j];
}

/* The weight factor n_heads^−½ · head_dim^−½, in the reference's order (applied one after the other). */
static double weight_of(const DsaParams *p, double raw)
{
	return raw * pow(p->heads, -0.5) * pow(p->dim, -0.5);
}

/* q·k of index head h, query t, key s, and its ReLU. */
static double head_dot(const Attn *a, int h, int t, int s)
{
	const int d = attn_params(a)->dsa.dim;
	double x = 0.0;

	for (int j = 0; j < d; j++)
		x += MAT_AT(a->index_q, t, h * d + j) * MAT_AT(a->index_k, s, j);
	return x;
}

/* indexer: index_q = c_Q·W_iq (turned), index_k = LayerNorm(x·W_ik) (turned), index_w, index_scores. */
static void pass_index(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const DsaParams *p = &lp->dsa;
	const Mat *X = dsa_input(a, lp);
	const int n = cfg->n, D = cfg->d_model, r = lp->mla.q_lora_rank, H = p->heads, d = p->dim, dr = lp->mla.d_rope;

	for (int i = 0; i < n; i++) {
		for (int c = 0; c < H * d; c++)
			MAT_AT(a->index_q, i, c) = dot_col(&MAT_AT(a->c_Q, i, 0), &p->W_iq, c, r);
		for (int h = 0; h < H; h++)
			rope_pairs(&MAT_AT(a->index_q, i, h * d), dr, i, lp->mla.rope_theta);
		for (int c = 0; c < d; c++)
			MAT_AT(a->index_k, i, c) = dot_col(&MAT_AT(*X, i, 0), &p->W_ik, c, D);
		layernorm(&MAT_AT(a->index_k, i, 0), d, p->k_norm.a, p->k_norm_b.a, p->eps);
		rope_pairs(&MAT_AT(a->index_k, i, 0), dr, i, lp->mla.rope_theta);
		for (int h = 0; h < H; h++)
			MAT_AT(a->index_w, i, h) = weight_of(p, dot_col(&MAT_AT(*X, i, 0), &p->W_iw, h, D));
	}
	for (int t = 0; t < n; t++)
		for (int s = 0; s < cfg->m; s++) { /* index_score += mask: a later key −∞, as the reference before its top-k */
			double sum = 0.0;
			for (int h = 0; h < H && s <= t; h++)
				sum += MAT_AT(a->index_w, t, h) * fmax(head_dot(a, h, t, s), 0.0);
			MAT_AT(a->index_scores, t, s) = s <= t ? sum : -INFINITY;
		}
}

/* Whether key u ranks before key s in row t: a larger index score, or the same and earlier. */
static int ranks_before(const Attn *a, int t, int u, int s)
{
	const double x = MAT_AT(a->index_scores, t, u), y = MAT_AT(a->index_scores, t, s);

	return x > y || (x == y && u < s);
}

/* The place of key s among the keys query t sees (0: the largest index score), and how many it keeps. */
static int rank_of(const Attn *a, int t, int s, int *keeps)
{
	const int topk = attn_params(a)->dsa.topk;
	int r = 0;

	for (int u = 0; u <= t; u++)
		r += u != s && ranks_before(a, t, u, s);
	*keeps = topk < t + 1 ? topk : t + 1;
	return r;
}

/* sparse: index_kept = 1 for each query's top-k keys s ≤ t (causal), 0 elsewhere. */
static void pass_topk(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	for (int t = 0; t < cfg->n; t++)
		for (int s = 0; s < cfg->m; s++) {
			int keeps;
			MAT_AT(a->index_kept, t, s) = s <= t && rank_of(a, t, s, &keeps) < keeps ? 1.0 : 0.0;
		}
}

/* The term on scaled score (i, j) of every head: 0 kept, −∞ not. */
static double dsa_bias(const Attn *a, int h, int i, int j)
{
	(void)h;
	return MAT_AT(a->index_kept, i, j) != 0.0 ? 0.0 : -INFINITY;
}

/* dense: each head's softmax of row i's scaled scores over keys 0 … i, as if every key were kept. */
static void pass_dense(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	for (int h = 0; h < a->heads; h++)
		for (int i = 0; i < cfg->n; i++) {
			double *w = &MAT_AT(a->head[h].dense_weights, i, 0), max = -INFINITY, sum = 0.0;
			for (int j = 0; j <= i; j++)
				max = fmax(max, MAT_AT(a->head[h].scores, i, j) * a->factor);
			for (int j = 0; j < cfg->m; j++) {
				w[j] = j <= i ? exp(MAT_AT(a->head[h].scores, i, j) * a->factor - max) : 0.0;
				sum += w[j];
			}
			for (int j = 0; j <= i; j++)
				w[j] /= sum;
		}
}

/* ---------------------------------------------------------------- guards */

static int mat_is(const Mat *m, int rows, int cols)
{
	return m->a != NULL && m->rows == rows && m->cols == cols;
}

/* The settings and weights fit the layer (the lesson reader says so at its paths; this is the engine's own guard). */
static const char *dsa_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	const DsaParams *p = &lp->dsa;
	const int D = cfg->d_model;

	if (!p->on)
		return NULL;
	if (!lp->mla.on || lp->mla.q_lora_rank < 1 || p->heads < 1 || p->dim < lp->mla.d_rope || p->topk < 1 || !(p->eps > 0) ||
	    !model_mask_causal(cfg) || !cfg->mask_fill_inf || cfg->mask == MASK_LIST || cfg->m != cfg->n ||
	    cfg->rope_scaling.type != ROPE_SCALE_NONE)
		return "dsa";
	if (!mat_is(&p->W_iq, lp->mla.q_lora_rank, p->heads * p->dim))
		return "dsa.W_iq";
	if (!mat_is(&p->W_ik, D, p->dim) || !mat_is(&p->k_norm, 1, p->dim) || !mat_is(&p->k_norm_b, 1, p->dim))
		return "dsa.W_ik";
	if (!mat_is(&p->W_iw, D, p->heads))
		return "dsa.W_iw";
	return NULL;
}

static int dsa_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xc;
	(void)yc;
	return xp->dsa.on == yp->dsa.on && xp->dsa.heads == yp->dsa.heads && xp->dsa.dim == yp->dsa.dim &&
	       xp->dsa.topk == yp->dsa.topk && xp->dsa.eps == yp->dsa.eps;
}

/* ---------------------------------------------------------------- explain */

#define MUL_SYM(u) celltext_sym(u, "\u00b7", "*")

static void explain_index(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const LayerParams *lp = attn_params(a);
	const DsaParams *p = &lp->dsa;
	const int d = p->dim, dr = lp->mla.d_rope;
	char x1[32], x2[32], x3[32], x4[32];

	(void)h;
	if (which == AM_INDEX_W) {
		const double raw = dot_col(&MAT_AT(*dsa_input(a, lp), i, 0), &p->W_iw, j, attn_config(a)->d_model);
		strbuf_printf(b, _("w of index head %d = x%sW_iw's column %d / %s(index_n_heads %s index_head_dim) = %s / %s(%d %s %d) = %s\n"),
		              j, MUL_SYM(utf8), j, celltext_sym(utf8, "\u221a", "sqrt"), MUL_SYM(utf8), celltext_num(x1, raw, utf8),
		              celltext_sym(utf8, "\u221a", "sqrt"), p->heads, MUL_SYM(utf8), p->dim,
		              celltext_num(x2, MAT_AT(a->index_w, i, j), utf8));
		strbuf_printf(b, "%s", _("(the query itself says how much each index head counts: weights_proj, times n_heads^-1/2 and head_dim^-1/2 as the reference does)\n"));
		return;
	}
	if (which == AM_INDEX_Q || which == AM_INDEX_K) {
		const int col = which == AM_INDEX_Q ? j % d : j;
		if (which == AM_INDEX_Q) {
			strbuf_printf(b, _("q of index head %d, column %d: c_Q%sW_iq's column %d, before RoPE\n"), j / d, col, MUL_SYM(utf8), j);
			celltext_terms(b, &MAT_AT(a->c_Q, i, 0), 1, p->W_iq.a + j, (size_t)p->W_iq.cols, lp->mla.q_lora_rank, utf8);
		} else {
			strbuf_printf(b, _("k, column %d: LayerNorm(x%sW_ik) (its mean and variance over the row, then %s ik_norm + ik_norm_bias); x%sW_ik's column %d is\n"),
			              col, MUL_SYM(utf8), MUL_SYM(utf8), MUL_SYM(utf8), j);
			celltext_terms(b, &MAT_AT(*dsa_input(a, lp), i, 0), 1, p->W_ik.a + j, (size_t)p->W_ik.cols, attn_config(a)->d_model,
			               utf8);
		}
		if (col < dr)
			strbuf_printf(b, _("column %d is in the first %d (qk_rope_head_dim): turned with column %d by position %d, as DeepSeek's apply_rotary_emb turns pairs (2p, 2p+1); the rest pass as they are\n"),
			              col, dr, col ^ 1, i);
		else
			strbuf_printf(b, _("column %d is past the first %d (qk_rope_head_dim): not turned\n"), col, dr);
		strbuf_printf(b, "%s", _("(the reference turns the FIRST columns here, unlike MLA's q, where the RoPE part is last)\n"));
		return;
	}
	/* index_scores[t][s] = Σ_h w_th·ReLU(q_th·k_s) */
	{
		double sum = 0.0;
		strbuf_printf(b, _("I = %s_h w_h %s ReLU(q_h %s k) over the %d index heads, query %d, key %d:\n"),
		              celltext_sym(utf8, "\u03a3", "sum"), MUL_SYM(utf8), MUL_SYM(utf8), p->heads, i, j);
		for (int hh = 0; hh < p->heads; hh++) {
			const double dot = head_dot(a, hh, i, j), w = MAT_AT(a->index_w, i, hh);
			sum += w * fmax(dot, 0.0);
			strbuf_printf(b, _("  head %d: q%sk = %s, ReLU %s, %s w %s = %s\n"), hh, MUL_SYM(utf8), celltext_num(x1, dot, utf8),
			              celltext_num(x2, fmax(dot, 0.0), utf8), celltext_sym(utf8, "\u00d7", "*"),
			              celltext_num(x3, w, utf8), celltext_num(x4, w * fmax(dot, 0.0) + 0.0, utf8));
		}
		strbuf_printf(b, _("sum = %s (a head whose q%sk is negative adds nothing: ReLU, not softmax)\n"), celltext_num(x1, sum, utf8),
		              MUL_SYM(utf8));
		if (j > i)
			strbuf_printf(b, "%s", _("(a later key: the causal mask is added before the top-k, so the score is \u2212\u221e and the key is never kept)\n"));
	}
}

static void explain_topk(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const DsaParams *p = &attn_params(a)->dsa;
	int keeps;
	char x1[32], x2[32], x3[32];

	if (j > i) {
		strbuf_printf(b, _("key %d comes after query %d: the causal mask hides it, kept or not\n"), j, i);
		return;
	}
	{
		const int r = rank_of(a, i, j, &keeps);
		const int kept = MAT_AT(a->index_kept, i, j) != 0.0;
		strbuf_printf(b, _("query %d sees %d keys and keeps min(index_topk %d, %d) = %d; key %d's index score %s is number %d of them (1: the largest)\n"),
		              i, i + 1, p->topk, i + 1, keeps, j, celltext_num(x1, MAT_AT(a->index_scores, i, j), utf8), r + 1);
		strbuf_printf(b, "%s", kept ? _("so it is kept: the bias is 0\n") : _("so it is dropped: the bias is \u2212\u221e, and its weight will be exactly 0\n"));
		if (which == AM_SPARSE)
			strbuf_printf(b, "sparse = scaled + bias = %s + %s = %s\n", celltext_num(x1, attn_cell(a, AM_SCALED, h, i, j), utf8),
			              celltext_num(x2, dsa_bias(a, h, i, j), utf8), celltext_num(x3, attn_cell(a, AM_SPARSE, h, i, j), utf8));
	}
}

static void explain_dense(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	char x1[32], x2[32];

	(void)which;
	if (j > i) {
		strbuf_printf(b, _("key %d comes after query %d: 0 in both\n"), j, i);
		return;
	}
	strbuf_printf(b, _("dense = exp(scaled_%d%d) / %s_k exp(scaled_%dk) over every key k = 0%s%d = %s; the sparse weight of the same cell: %s\n"),
	              i, j, celltext_sym(utf8, "\u03a3", "sum"), i, celltext_sym(utf8, "\u2026", ".."), i,
	              celltext_num(x1, MAT_AT(a->head[h].dense_weights, i, j), utf8), celltext_num(x2, MAT_AT(a->head[h].weights, i, j), utf8));
	strbuf_printf(b, "%s", MAT_AT(a->index_kept, i, j) != 0.0
	                           ? _("(kept: its weight grew by the share the dropped keys had)\n")
	                           : _("(dropped by the indexer: its dense weight went to the kept keys)\n"));
}

/* ---------------------------------------------------------------- operands */

static int operands_index(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const AttnMatrix x = attn_params(a)->block.present && attn_params(a)->block.norm == NORM_PRE ? AM_NORM1 : AM_X;

	(void)h;
	if (which == AM_INDEX_SCORES) {
		out[0] = (ExplainOperand){ AM_INDEX_Q, 0, i, -1 };
		out[1] = (ExplainOperand){ AM_INDEX_K, 0, j, -1 };
		out[2] = (ExplainOperand){ AM_INDEX_W, 0, i, -1 };
		return 3;
	}
	out[0] = (ExplainOperand){ which == AM_INDEX_Q ? AM_C_Q : x, 0, i, -1 };
	out[1] = (ExplainOperand){ which == AM_INDEX_Q ? AM_DSA_W_IQ : which == AM_INDEX_K ? AM_DSA_W_IK : AM_DSA_W_IW, 0, -1,
		                   which == AM_INDEX_K ? -1 : j };
	return which == AM_INDEX_K ? 1 : 2;
}

static int operands_topk(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	(void)a;
	out[0] = (ExplainOperand){ AM_INDEX_SCORES, 0, i, -1 };
	if (which != AM_SPARSE)
		return 1;
	out[1] = (ExplainOperand){ AM_SCALED, h, i, j };
	out[2] = (ExplainOperand){ AM_INDEX_KEPT, 0, i, j };
	return 3;
}

static int operands_dense(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	(void)a;
	(void)which;
	out[0] = (ExplainOperand){ AM_WEIGHTS, h, i, j };
	out[1] = (ExplainOperand){ AM_INDEX_KEPT, 0, i, -1 };
	return 2;
}

/* ---------------------------------------------------------------- the variants */

const AttnVariant variant_dsa_index = {
	.name = "dsa",
	.feature = FEAT_DSA,
	.stage = STAGE_DSA_INDEX,
	.kernel = pass_index,
	.rules = { { AM_INDEX_Q, ATTN_MADE(AM_C_Q, AM_DSA_W_IQ) },
	           { AM_INDEX_K, ATTN_MADE(AM_X, AM_NORM1, AM_DSA_W_IK, AM_DSA_K_NORM, AM_DSA_K_BIAS) },
	           { AM_INDEX_W, ATTN_MADE(AM_X, AM_NORM1, AM_DSA_W_IW) },
	           { AM_INDEX_SCORES, ATTN_MADE(AM_C_Q, AM_X, AM_NORM1, AM_DSA_W_IQ, AM_DSA_W_IK, AM_DSA_K_NORM, AM_DSA_K_BIAS,
	                                        AM_DSA_W_IW) } },
	.explain = explain_index,
	.operands = operands_index,
	.fault = dsa_fault,
	.same = dsa_same,
};

const AttnVariant variant_dsa_topk = {
	.name = "dsa",
	.feature = FEAT_DSA,
	.stage = STAGE_DSA_TOPK,
	.kernel = pass_topk,
	.rules = { { AM_INDEX_KEPT, ATTN_MADE(AM_INDEX_SCORES) },
	           { AM_INDEX_MASK, ATTN_MADE(AM_INDEX_SCORES) },
	           { AM_SPARSE, ATTN_MADE(AM_SCALED, AM_INDEX_SCORES) } },
	.explain = explain_topk,
	.operands = operands_topk,
	.score_bias = dsa_bias,
	.bias_matrix = AM_INDEX_MASK,
	.biased_matrix = AM_SPARSE,
};

const AttnVariant variant_dsa_dense = {
	.name = "dsa",
	.feature = FEAT_DSA,
	.stage = STAGE_DSA_DENSE,
	.kernel = pass_dense,
	.rules = { { AM_DENSE_WEIGHTS, ATTN_MADE(AM_SCALED, AM_Q, AM_K) } },
	.explain = explain_dense,
	.operands = operands_dense,
};
