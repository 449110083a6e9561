/* qkl2.c: Llama 4's QK-norm, the variant "qk_l2" ("qk_norm": {"kind": "l2"}).
 *
 * transformers' models/llama4/modeling_llama4.py: Llama4TextL2Norm._norm is
 * `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)`, with no
 * weight; Llama4TextAttention.__init__ makes it only `if
 * self.config.use_qk_norm and self.use_rope` (eps = rms_norm_eps), and
 * forward applies it to query_states and key_states over head_dim AFTER
 * apply_rotary_emb. So unlike Qwen3's QK-norm (qknorm.c, before RoPE, with
 * weights), this one reads what RoPE turned: its stage STAGE_QK_L2 ("qk_l2")
 * makes Q_l2 and K_l2 from Q_rot and K_rot (variants.c: attn_reads_after,
 * the list puts it before rope), and the scores read those. A NoPE layer
 * (LayerParams.rope_off) has none: Q_l2 is Q_rot as it is, there Q itself.
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <string.h>

/* x (len numbers) · (mean(x²) + ε)^(−½) into out (out may be x); the factor r. */
static double l2_row(const double *x, double *out, int len, double eps)
{
	double ms = 0.0;

	for (int c = 0; c < len; c++)
		ms += x[c] * x[c];
	const double r = 1.0 / sqrt(ms / len + eps);
	for (int c = 0; c < len; c++)
		out[c] = x[c] * r;
	return r;
}

/* Each head's part (dk numbers) of every row of in, normalised into out; a NoPE layer copies. */
static void l2_rows(const Mat *in, Mat *out, int dk, double eps, int off)
{
	memcpy(out->a, in->a, (size_t)in->rows * (size_t)in->cols * sizeof(double));
	if (off)
		return;
	for (int i = 0; i < in->rows; i++)
		for (int c0 = 0; c0 + dk <= in->cols; c0 += dk)
			l2_row(&MAT_AT(*out, i, c0), &MAT_AT(*out, i, c0), dk, eps);
}

/* Q_l2 (n × h·d_k) from Q_rot, K_l2 (m × g·d_k) from K_rot, head by head. */
static void pass_qk_l2(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const Mat *Q = attn_slot_const(a, attn_reads_after(a, &variant_qkl2, AM_Q), 0);
	const Mat *K = attn_slot_const(a, attn_reads_after(a, &variant_qkl2, AM_K), 0);

	l2_rows(Q, &a->Q_l2, lp->d_k, cfg->qk_norm_eps, lp->rope_off);
	l2_rows(K, &a->K_l2, lp->d_k, cfg->qk_norm_eps, lp->rope_off);
}

/* y = x·r, r = (mean(x²) + ε)^(−½): ∂L/∂x_c = r·dy_c − x_c·r³/d · Σ_e dy_e·x_e, each head's row of d in place. */
static void l2_back_rows(const Mat *x, Mat *d, int dk, double eps)
{
	for (int i = 0; i < x->rows; i++)
		for (int c0 = 0; c0 + dk <= x->cols; c0 += dk) {
			const double *xr = &MAT_AT(*x, i, c0);
			double *dr = &MAT_AT(*d, i, c0), ms = 0.0, dot = 0.0;
			for (int c = 0; c < dk; c++) {
				ms += xr[c] * xr[c];
				dot += dr[c] * xr[c];
			}
			const double r = 1.0 / sqrt(ms / dk + eps);
			for (int c = 0; c < dk; c++)
				dr[c] = r * dr[c] - xr[c] * r * r * r / dk * dot;
		}
}

/* dQ_l2, dK_l2 back to dQ_rot, dK_rot (RoPE's backward, after this one in the list, turns them on). */
static void qk_l2_backward(const Attn *a, Mat *dq, Mat *dk)
{
	const LayerParams *lp = attn_params(a);
	const double eps = attn_config(a)->qk_norm_eps;

	if (lp->rope_off)
		return;
	l2_back_rows(attn_slot_const(a, attn_reads_after(a, &variant_qkl2, AM_Q), 0), dq, lp->d_k, eps);
	l2_back_rows(attn_slot_const(a, attn_reads_after(a, &variant_qkl2, AM_K), 0), dk, lp->d_k, eps);
}

/* Decoding: one head's row of token pos's q or k, already turned by RoPE (the list's later variants turn first). */
static void qk_l2_turn(const Attn *a, double *x, int pos, int key)
{
	(void)pos;
	(void)key;
	if (!attn_params(a)->rope_off)
		l2_row(x, x, attn_params(a)->d_k, attn_config(a)->qk_norm_eps);
}

/* It has no weights; its ε is a number ≥ 0, and it follows RoPE. */
static const char *qk_l2_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	if (cfg->qk_norm != QK_NORM_L2)
		return NULL;
	return !(cfg->qk_norm_eps >= 0.0) || !cfg->rope ? "qk_norm" : NULL;
}

static int qk_l2_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	return xc->qk_norm == yc->qk_norm && xc->qk_norm_eps == yc->qk_norm_eps && xp->rope_off == yp->rope_off;
}

/* Q_l2 or K_l2: one cell of a head's turned row, its RMS over the head's d_k numbers. */
static void explain_qk_l2(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const int q = which == AM_Q_L2;
	const AttnMatrix from = attn_reads_after(a, &variant_qkl2, q ? AM_Q : AM_K);
	const Mat *in = attn_slot_const(a, from, 0);
	const int dk = lp->d_k, c = j % dk, c0 = j - c;
	const double *x = &MAT_AT(*in, i, c0);
	double ms = 0.0;
	char x1[32], x2[32], x3[32], x4[32];

	(void)h;
	if (lp->rope_off) {
		strbuf_printf(b, _("This layer has no RoPE (a NoPE layer), and Llama 4 norms q and k only where RoPE turns them: %s is %s as it is, %s\n"),
		              matrix_name(which), matrix_name(from), celltext_num(x1, x[c], utf8));
		return;
	}
	for (int e = 0; e < dk; e++)
		ms += x[e] * x[e];
	ms /= dk;
	const double rms = sqrt(ms + cfg->qk_norm_eps);
	strbuf_printf(b, _("QK-norm after RoPE (Llama 4) of row %d of %s, columns %d to %d (one head's d_k = %d numbers, already turned):\n"),
	              i, matrix_name(from), c0, c0 + dk - 1, dk);
	strbuf_printf(b, "mean(x%s) = %s   rms = %s(%s + %s) = %s\n", celltext_sym(utf8, "\u00b2", "^2"),
	              celltext_num(x1, ms, utf8), celltext_sym(utf8, "\u221a", "sqrt"), celltext_num(x2, ms, utf8),
	              celltext_num(x3, cfg->qk_norm_eps, utf8), celltext_num(x4, rms, utf8));
	strbuf_printf(b, "= x_%d / rms = %s / %s = %s\n", c, celltext_num(x1, x[c], utf8), celltext_num(x2, rms, utf8),
	              celltext_num(x3, x[c] * (1.0 / rms), utf8));
	strbuf_printf(b, _("(no weights: every head's row of q and of k now has length %s%d (%s aside), so q%sk is %d times the cosine of their angle, at most %d)\n"),
	              celltext_sym(utf8, "\u221a", "sqrt "), dk, celltext_sym(utf8, "\u03b5", "eps"), celltext_sym(utf8, "\u00b7", "."), dk,
	              dk);
}

/* The head's turned row it normalised. */
static int operands_qk_l2(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	(void)h;
	(void)j;
	out[0] = (ExplainOperand){ attn_reads_after(a, &variant_qkl2, which == AM_Q_L2 ? AM_Q : AM_K), 0, i, -1 };
	return 1;
}

static const AttnMatrix qk_l2_reads[][2] = { { AM_Q, AM_Q_L2 }, { AM_K, AM_K_L2 }, { AM_COUNT, AM_COUNT } };

const AttnVariant variant_qkl2 = {
	.name = "qk_l2",
	.feature = FEAT_QK_L2,
	.stage = STAGE_QK_L2,
	.kernel = pass_qk_l2,
	.rules = { { AM_Q_L2, ATTN_MADE(AM_Q, AM_Q_ROT) }, { AM_K_L2, ATTN_MADE(AM_K, AM_K_ROT) } },
	.explain = explain_qk_l2,
	.operands = operands_qk_l2,
	.reads = qk_l2_reads,
	.turn_row = qk_l2_turn,
	.backward = qk_l2_backward,
	.fault = qk_l2_fault,
	.same = qk_l2_same,
	.decode_note = N_(", then scaled to root mean square 1 head by head (Llama 4's QK-norm after RoPE)"),
};
