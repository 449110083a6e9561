/* qknorm.c: QK-norm as Qwen3 computes it, the variant "qk_norm".
 *
 * After the projections and before RoPE, each head's row of q (d_k numbers)
 * is RMS-normalised and multiplied by the layer's q_norm weights, and each
 * key head's row of k likewise by k_norm (transformers' Qwen3RMSNorm:
 * x · rsqrt(mean(x²) + ε) · w, applied over head_dim in Qwen3Attention.forward
 * before apply_rotary_pos_emb). A query and a key then have the same size
 * whatever the weights, so a score cannot grow only because they did. Its
 * stage is STAGE_QK_NORM ("qk_norm" in catalog.c), which makes Q_norm and
 * K_norm; RoPE turns those (variants.c: attn_reads_after), or the scores read
 * them directly without RoPE; the backward pass takes their gradients back
 * to dQ and dK through the norm.
 *
 * OLMo 2's form (QK_NORM_PROJ, "over": "projection"; transformers'
 * models/olmo2/modeling_olmo2.py, Olmo2Attention: `self.q_norm =
 * Olmo2RMSNorm(config.num_attention_heads * self.head_dim, …)`, `query_states =
 * self.q_norm(self.q_proj(hidden_states))` before the view into heads) is the
 * same norm over a whole row of Q (h·d_k numbers) and of K (g·d_k), its
 * weights as wide: the width below, qk_width, is one head's or the row's.
 *
 * Gemma 3's form ("kind": "rmsnorm_plus1"; transformers' models/gemma3/modeling_gemma3.py,
 * Gemma3RMSNorm: `output * (1.0 + self.weight.float())`, q_norm and k_norm over head_dim
 * before RoPE) is Qwen3's with the weights used as 1 + w (qk_kind).
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <string.h>

/* The numbers one norm runs over: a head's d_k, or the whole row over the projection (OLMo 2). */
static int qk_width(const ModelConfig *cfg, const Mat *x, int dk)
{
	return cfg->qk_norm == QK_NORM_PROJ ? x->cols : dk;
}

/* attn_norm_row's kind of norm: RMSNorm, or Gemma's with 1 + w. */
static int qk_kind(const ModelConfig *cfg)
{
	return cfg->qk_norm_plus1 ? NORM_RMSNORM_1P : NORM_RMSNORM;
}

/* Each part of dk numbers x of a row (heads of them): out = x / √(mean(x²) + ε) · w (out may be x). */
static void qk_norm_rows(const Mat *in, Mat *out, int heads, int dk, const Mat *w, double eps, int kind)
{
	for (int i = 0; i < in->rows; i++)
		for (int h = 0; h < heads; h++)
			attn_norm_row(&MAT_AT(*in, i, h * dk), &MAT_AT(*out, i, h * dk), dk, kind, eps, w->a, NULL, NULL);
}

/* Q_norm (n × h·d_k) = QK-norm of each head's row of Q; K_norm (m × g·d_k) of each key head's row of K. */
static void pass_qk_norm(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int wq = qk_width(cfg, &a->Q, lp->d_k), wk = qk_width(cfg, &a->K, lp->d_k);

	qk_norm_rows(&a->Q, &a->Q_norm, a->Q.cols / wq, wq, &lp->q_norm, cfg->qk_norm_eps, qk_kind(cfg));
	qk_norm_rows(&a->K, &a->K_norm, a->K.cols / wk, wk, &lp->k_norm, cfg->qk_norm_eps, qk_kind(cfg));
}

/*
 * y = x·r·w with r = (mean(x²) + ε)^(−½): ∂L/∂x_c = r·w_c·dy_c − x_c·r³/d · Σ_e w_e·dy_e·x_e,
 * each head's row of dq (and dk) in place, from the rows of x (Q or K) that were normalised (one: 1 when
 * the weights are used as 1 + w).
 */
static void qk_norm_back_rows(const Mat *x, Mat *d, int heads, int dk, const Mat *w, double eps, double one)
{
	for (int i = 0; i < x->rows; i++)
		for (int h = 0; h < heads; h++) {
			const double *xr = &MAT_AT(*x, i, h * dk);
			double *dr = &MAT_AT(*d, i, h * dk), ms = 0.0, dot = 0.0;
			for (int c = 0; c < dk; c++) {
				ms += xr[c] * xr[c];
				dot += (one + w->a[c]) * dr[c] * xr[c];
			}
			const double r = 1.0 / sqrt(ms / dk + eps);
			for (int c = 0; c < dk; c++)
				dr[c] = r * (one + w->a[c]) * dr[c] - xr[c] * r * r * r / dk * dot;
		}
}

static void qk_norm_backward(const Attn *a, Mat *dq, Mat *dk)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);

	const int wq = qk_width(cfg, &a->Q, lp->d_k), wk = qk_width(cfg, &a->K, lp->d_k);

	qk_norm_back_rows(&a->Q, dq, a->Q.cols / wq, wq, &lp->q_norm, cfg->qk_norm_eps, cfg->qk_norm_plus1 ? 1.0 : 0.0);
	qk_norm_back_rows(&a->K, dk, a->K.cols / wk, wk, &lp->k_norm, cfg->qk_norm_eps, cfg->qk_norm_plus1 ? 1.0 : 0.0);
}

/* Decoding: token pos's whole row of q (len = h·d_k, q_norm's weights) or k (g·d_k, k_norm's), normalised in place head by head, or all at once over the projection. */
static void qk_norm_turn(const Attn *a, double *x, int len, int pos, int key)
{
	const LayerParams *lp = attn_params(a);
	const int w = attn_config(a)->qk_norm == QK_NORM_PROJ ? len : lp->d_k;

	(void)pos;
	for (int c0 = 0; c0 + w <= len; c0 += w)
		attn_norm_row(x + c0, x + c0, w, qk_kind(attn_config(a)), attn_config(a)->qk_norm_eps, key ? lp->k_norm.a : lp->q_norm.a, NULL, NULL);
}

/* Its weights are one head's width (over the projection: Q's and K's rows'). */
static const char *qk_norm_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	const int proj = cfg->qk_norm == QK_NORM_PROJ;
	const int g = lp->kv_heads > 0 ? lp->kv_heads : lp->heads;

	if (cfg->qk_norm == QK_NORM_NONE || cfg->qk_norm == QK_NORM_L2) /* Llama 4's: qkl2.c */
		return NULL;
	if (lp->q_norm.rows != 1 || lp->q_norm.cols != (proj ? lp->heads * lp->d_k : lp->d_k) || lp->q_norm.a == NULL ||
	    lp->k_norm.rows != 1 || lp->k_norm.cols != (proj ? g * lp->d_k : lp->d_k) || lp->k_norm.a == NULL ||
	    !(cfg->qk_norm_eps >= 0.0))
		return "qk_norm";
	return NULL;
}

static int qk_norm_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xp; (void)yp;
	return xc->qk_norm == yc->qk_norm && xc->qk_norm_eps == yc->qk_norm_eps && xc->qk_norm_plus1 == yc->qk_norm_plus1;
}

/* Q_norm or K_norm: one cell of a head's row, its RMS over the head's d_k numbers and its weight. */
static void explain_qk_norm(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const int q = which == AM_Q_NORM;
	const Mat *in = q ? &a->Q : &a->K, *w = q ? &lp->q_norm : &lp->k_norm;
	const int dk = qk_width(cfg, in, lp->d_k), c = j % dk, c0 = j - c;
	const double *x = &MAT_AT(*in, i, c0);
	double ms = 0.0;
	char x1[32], x2[32], x3[32], x4[32], x5[32];

	(void)h;
	for (int e = 0; e < dk; e++)
		ms += x[e] * x[e];
	ms /= dk;
	const double rms = sqrt(ms + cfg->qk_norm_eps);
	if (cfg->qk_norm == QK_NORM_PROJ)
		strbuf_printf(b, _("QK-norm of row %d of %s over the whole projection (OLMo 2): all %d numbers of the row, every head's:\n"),
		              i, matrix_name(q ? AM_Q : AM_K), dk);
	else
		strbuf_printf(b, _("QK-norm of row %d of %s, columns %d to %d (one head's d_k = %d numbers):\n"), i,
		              matrix_name(q ? AM_Q : AM_K), c0, c0 + dk - 1, dk);
	strbuf_printf(b, "mean(x%s) = %s   %s(mean(x%s) + %s) = %s(%s + %s) = %s\n", celltext_sym(utf8, "\u00b2", "^2"),
	              celltext_num(x1, ms, utf8), celltext_sym(utf8, "\u221a", "sqrt"), celltext_sym(utf8, "\u00b2", "^2"),
	              celltext_sym(utf8, "\u03b5", "eps"), celltext_sym(utf8, "\u221a", "sqrt"), celltext_num(x2, ms, utf8),
	              celltext_num(x3, cfg->qk_norm_eps, utf8), celltext_num(x4, rms, utf8));
	if (cfg->qk_norm_plus1) /* Gemma 3: the weight is zero-centred, the norm multiplies by 1 + w */
		strbuf_printf(b, "= x_%d / rms %s (1 + %s[%d]) = %s / %s %s (1 + %s) = %s\n", c, celltext_sym(utf8, "\u00d7", "*"),
		              matrix_name(q ? AM_Q_NORM_W : AM_K_NORM_W), c, celltext_num(x1, x[c], utf8), celltext_num(x2, rms, utf8),
		              celltext_sym(utf8, "\u00d7", "*"), celltext_num(x3, w->a[c], utf8),
		              celltext_num(x5, x[c] * (1.0 / rms) * (1.0 + w->a[c]), utf8));
	else
		strbuf_printf(b, "= x_%d / rms %s %s[%d] = %s / %s %s %s = %s\n", c, celltext_sym(utf8, "\u00d7", "*"),
		              matrix_name(q ? AM_Q_NORM_W : AM_K_NORM_W), c, celltext_num(x1, x[c], utf8), celltext_num(x2, rms, utf8),
		              celltext_sym(utf8, "\u00d7", "*"), celltext_num(x3, w->a[c], utf8),
		              celltext_num(x5, x[c] * (1.0 / rms) * w->a[c], utf8));
	if (cfg->qk_norm == QK_NORM_PROJ)
		strbuf_printf(b, _("(the whole row now has root mean square 1 before the weights; one head's part of it may still be larger than another's)\n"));
	else
		strbuf_printf(b, _("(every head's row now has the same root mean square before the weights: a score q%sk cannot grow only because W_q or W_k did)\n"),
		              celltext_sym(utf8, "\u00b7", "."));
}

/* The head's row of Q or K it normalised, and the weight of its column. */
static int operands_qk_norm(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const int q = which == AM_Q_NORM, dk = qk_width(attn_config(a), q ? &a->Q : &a->K, attn_params(a)->d_k);

	(void)h;
	out[0] = (ExplainOperand){ q ? AM_Q : AM_K, 0, i, -1 };
	out[1] = (ExplainOperand){ q ? AM_Q_NORM_W : AM_K_NORM_W, 0, 0, j % dk };
	return 2;
}

static const AttnMatrix qk_norm_reads[][2] = { { AM_Q, AM_Q_NORM }, { AM_K, AM_K_NORM }, { AM_COUNT, AM_COUNT } };

const AttnVariant variant_qknorm = {
	.name = "qk_norm",
	.feature = FEAT_QK_NORM,
	.stage = STAGE_QK_NORM,
	.kernel = pass_qk_norm,
	.rules = { { AM_Q_NORM, ATTN_MADE(AM_Q, AM_Q_NORM_W) }, { AM_K_NORM, ATTN_MADE(AM_K, AM_K_NORM_W) } },
	.explain = explain_qk_norm,
	.operands = operands_qk_norm,
	.reads = qk_norm_reads,
	.turn_whole = qk_norm_turn,
	.backward = qk_norm_backward,
	.fault = qk_norm_fault,
	.same = qk_norm_same,
	.decode_note = N_(", then RMS-normalised head by head (QK-norm)"),
};
