/* rope.c: rotary position embeddings (Su et al., RoFormer), the variant "rope".
 *
 * q and k carry no position of their own: each pair of a head's columns is
 * turned by an angle that grows with the row's position, so q·k depends on
 * how far apart two tokens are, not where they are. Its stage is
 * STAGE_ROTATE ("rotate" in catalog.c), which makes Q_rot and K_rot; the
 * scores read those instead of Q and K, decoding turns each token's q and k
 * at its step, and the backward pass turns their gradients back.
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <string.h>

/*
 * x: one head's d_k numbers of a row at position pos. With θ_i = pos·base^(−2i/d_k),
 * i = 0 … d_k/2 − 1, the pair (a, b) turns by θ_i: (a cos θ − b sin θ, a sin θ + b cos θ).
 * "half" pairs columns (i, i + d_k/2), "interleaved" (2i, 2i + 1).
 */
static void rope_row(double *x, int d_k, int pos, double base, RopeStyle style)
{
	const int half = d_k / 2;

	for (int i = 0; i < half; i++) {
		const double theta = (double)pos * pow(base, -2.0 * i / d_k);
		const double c = cos(theta), s = sin(theta);
		const int ia = style == ROPE_HALF ? i : 2 * i, ib = style == ROPE_HALF ? i + half : 2 * i + 1;
		const double xa = x[ia], xb = x[ib];
		x[ia] = xa * c - xb * s;
		x[ib] = xa * s + xb * c;
	}
}

/* Decoding: one head's row of token pos's q or k, turned at its position. */
static void rope_turn(const Attn *a, double *x, int pos)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);

	rope_row(x, lp->d_k, pos, cfg->rope_base, cfg->rope_style);
}

/*
 * Rotate: Q_rot (n × h·d_k) = Q with each head's row i turned by
 * position i; K_rot (m × g·d_k) = K with each key head's row j turned by j.
 */
static void pass_rotate(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	/* Q and K, or what a variant before RoPE made of them (QK-norm's Q_norm, K_norm) */
	const Mat *Q = attn_slot_const(a, attn_reads_after(a, &variant_rope, AM_Q), 0);
	const Mat *K = attn_slot_const(a, attn_reads_after(a, &variant_rope, AM_K), 0);

	memcpy(a->Q_rot.a, Q->a, (size_t)Q->rows * (size_t)Q->cols * sizeof(double));
	memcpy(a->K_rot.a, K->a, (size_t)K->rows * (size_t)K->cols * sizeof(double));
	for (int i = 0; i < a->Q.rows; i++)
		for (int h = 0; h < a->heads; h++)
			rope_row(&MAT_AT(a->Q_rot, i, h * lp->d_k), lp->d_k, i, cfg->rope_base, cfg->rope_style);
	for (int j = 0; j < a->K.rows; j++)
		for (int h = 0; h < a->kv_heads; h++)
			rope_row(&MAT_AT(a->K_rot, j, h * lp->d_k), lp->d_k, j, cfg->rope_base, cfg->rope_style);
}

/* q_rot = R(θ_i)·q, so dq = R(θ_i)ᵀ·dq_rot = R(−θ_i)·dq_rot (and k likewise), in place. */
static void rope_backward(const Attn *a, Mat *dq, Mat *dk)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const int d_k = lp->d_k;

	for (int i = 0; i < cfg->n; i++)
		for (int h = 0; h < a->heads; h++)
			rope_row(&MAT_AT(*dq, i, h * d_k), d_k, -i, cfg->rope_base, cfg->rope_style);
	for (int j = 0; j < cfg->m; j++)
		for (int h = 0; h < a->kv_heads; h++)
			rope_row(&MAT_AT(*dk, j, h * d_k), d_k, -j, cfg->rope_base, cfg->rope_style);
}

/* The pairs need an even d_k. */
static const char *rope_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	return cfg->rope && lp->d_k % 2 != 0 ? "rope" : NULL;
}

static int rope_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xp; (void)yp;
	return xc->rope == yc->rope && xc->rope_base == yc->rope_base && xc->rope_style == yc->rope_style;
}

/* Q_rot or K_rot: a pair of one head's row turned by the row's position. */
static void explain_rotate(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const AttnMatrix from = attn_reads_after(a, &variant_rope, which == AM_Q_ROT ? AM_Q : AM_K);
	const Mat *in = attn_slot_const(a, from, 0);
	const int dk = lp->d_k, c = j % dk, half = dk / 2, interleaved = cfg->rope_style == ROPE_INTERLEAVED;
	const int pair = interleaved ? c / 2 : c % half, first = interleaved ? c % 2 == 0 : c < half;
	const int ca = j - c + (interleaved ? 2 * pair : pair), cb = j - c + (interleaved ? 2 * pair + 1 : pair + half);
	const double theta = (double)i * pow(cfg->rope_base, -2.0 * pair / dk), x = MAT_AT(*in, i, ca), y = MAT_AT(*in, i, cb);
	const char *dot = celltext_sym(utf8, "\u00b7", "*"), *minus = celltext_sym(utf8, "\u2212", "-");
	const char *t = celltext_sym(utf8, "\u03b8", "t");
	char x1[32], x2[32], x3[32], x4[32], x5[32];

	(void)h;
	strbuf_printf(b, _("RoPE at position %d: columns %d and %d of %s are pair %d of their head, turned by\n"), i, ca, cb,
	              matrix_name(from), pair);
	strbuf_printf(b, "%s = %d %s %s^(%s2%s%d/%d) = %s rad\n", celltext_sym(utf8, "\u03b8", "theta"), i,
	              celltext_sym(utf8, "\u00d7", "*"), celltext_num(x1, cfg->rope_base, utf8), minus, dot, pair, dk,
	              celltext_num(x2, theta, utf8));
	if (first)
		strbuf_printf(b, "= a cos %s %s b sin %s = %s %s %s %s %s %s %s = %s\n", t, minus, t, celltext_num(x1, x, utf8), dot,
		              celltext_num(x2, cos(theta), utf8), minus, celltext_num(x3, y, utf8), dot,
		              celltext_num(x4, sin(theta), utf8), celltext_num(x5, x * cos(theta) - y * sin(theta), utf8));
	else
		strbuf_printf(b, "= a sin %s + b cos %s = %s %s %s + %s %s %s = %s\n", t, t, celltext_num(x1, x, utf8), dot,
		              celltext_num(x2, sin(theta), utf8), celltext_num(x3, y, utf8), dot,
		              celltext_num(x4, cos(theta), utf8), celltext_num(x5, x * sin(theta) + y * cos(theta), utf8));
	strbuf_printf(b, _("(a rotation keeps the pair's length; q%sk then depends on the two positions only through their distance)\n"),
	              celltext_sym(utf8, "\u00b7", "."));
}

static const AttnMatrix rope_reads[][2] = { { AM_Q, AM_Q_ROT }, { AM_K, AM_K_ROT }, { AM_COUNT, AM_COUNT } };

const AttnVariant variant_rope = {
	.name = "rope",
	.feature = FEAT_ROPE,
	.stage = STAGE_ROTATE,
	.kernel = pass_rotate,
	.rules = { { AM_Q_ROT, ATTN_MADE(AM_Q, AM_Q_NORM) }, { AM_K_ROT, ATTN_MADE(AM_K, AM_K_NORM) } },
	.explain = explain_rotate,
	.reads = rope_reads,
	.turn_row = rope_turn,
	.backward = rope_backward,
	.fault = rope_fault,
	.same = rope_same,
	.decode_note = N_(", then turned by RoPE at its position"),
};
