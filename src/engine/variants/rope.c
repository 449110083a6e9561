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
#include "model/ropefreq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * What one layer turns by (issue 23 §2): the pairs' frequencies inv (rd/2 of
 * them: partial RoPE turns the first rd = int(d_k·partial_rotary_factor)
 * columns of a head), each scaled as the lesson's "scaling" says
 * (model/ropefreq.h), and the factor af cos and sin are multiplied by (YaRN's).
 * off: a NoPE layer turns nothing.
 */
typedef struct RopeTable {
	const double *inv;
	int rd, off;
	double af;
	RopeStyle style;
} RopeTable;

/* The layer's frequencies for a sequence of max(n, m) positions, made once per computation (a->rope_inv, a->rope_af). */
static int rope_setup(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	a->rope_inv = malloc(((size_t)rope_rotary_dim(cfg, lp->d_k) / 2 + 1) * sizeof *a->rope_inv);
	if (a->rope_inv == NULL)
		return -1;
	a->rope_af = rope_inv_freq(cfg, lp->d_k, cfg->n > cfg->m ? cfg->n : cfg->m, a->rope_inv);
	return 0;
}

static void rope_release(Attn *a)
{
	free(a->rope_inv);
	a->rope_inv = NULL;
}

/* The table of a's layer (its setup's frequencies): 0, or -1 without them. */
static int rope_table(const Attn *a, RopeTable *t)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);

	t->rd = rope_rotary_dim(cfg, lp->d_k);
	t->off = lp->rope_off;
	t->style = cfg->rope_style;
	t->inv = a->rope_inv;
	t->af = a->rope_af;
	return t->inv != NULL ? 0 : -1;
}

/*
 * x: one head's d_k numbers of a row at position pos. With θ_i = pos·inv_i
 * (plain RoPE: inv_i = base^(−2i/d_k)), i = 0 … rd/2 − 1, the pair (a, b) turns by θ_i:
 * af·(a cos θ − b sin θ, a sin θ + b cos θ). "half" pairs columns (i, i + rd/2),
 * "interleaved" (2i, 2i + 1); columns rd … d_k − 1 pass through.
 */
static void rope_row(double *x, int pos, const RopeTable *t)
{
	const int half = t->rd / 2;

	if (t->off)
		return;
	for (int i = 0; i < half; i++) {
		const double theta = (double)pos * t->inv[i];
		const double c = cos(theta) * t->af, s = sin(theta) * t->af;
		const int ia = t->style == ROPE_HALF ? i : 2 * i, ib = t->style == ROPE_HALF ? i + half : 2 * i + 1;
		const double xa = x[ia], xb = x[ib];
		x[ia] = xa * c - xb * s;
		x[ib] = xa * s + xb * c;
	}
}

/* Decoding: one head's row of token pos's q or k, turned at its position (out of memory: left as it is). */
static void rope_turn(const Attn *a, double *x, int pos, int key)
{
	(void)key;
	RopeTable t;

	if (rope_table(a, &t) != 0)
		return;
	rope_row(x, pos, &t);
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
	RopeTable t;

	(void)cfg;
	memcpy(a->Q_rot.a, Q->a, (size_t)Q->rows * (size_t)Q->cols * sizeof(double));
	memcpy(a->K_rot.a, K->a, (size_t)K->rows * (size_t)K->cols * sizeof(double));
	if (rope_table(a, &t) != 0)
		return; /* out of memory: Q_rot = Q */
	for (int i = 0; i < a->Q.rows; i++)
		for (int h = 0; h < a->heads; h++)
			rope_row(&MAT_AT(a->Q_rot, i, h * lp->d_k), i, &t);
	for (int j = 0; j < a->K.rows; j++)
		for (int h = 0; h < a->kv_heads; h++)
			rope_row(&MAT_AT(a->K_rot, j, h * lp->d_k), j, &t);
}

/* q_rot = af·R(θ_i)·q, so dq = af·R(θ_i)ᵀ·dq_rot = af·R(−θ_i)·dq_rot (and k likewise), in place. */
static void rope_backward(const Attn *a, Mat *dq, Mat *dk)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const int d_k = lp->d_k;
	RopeTable t;

	if (rope_table(a, &t) != 0)
		return;
	for (int i = 0; i < cfg->n; i++)
		for (int h = 0; h < a->heads; h++)
			rope_row(&MAT_AT(*dq, i, h * d_k), -i, &t);
	for (int j = 0; j < cfg->m; j++)
		for (int h = 0; h < a->kv_heads; h++)
			rope_row(&MAT_AT(*dk, j, h * d_k), -j, &t);
}

/* The pairs need an even d_k, and an even count of turned columns (dynamic NTK: more than 2). */
static const char *rope_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	const int rd = rope_rotary_dim(cfg, lp->d_k);

	if (!cfg->rope)
		return NULL;
	if (lp->d_k % 2 != 0 || rd % 2 != 0 || rd < 2)
		return "rope";
	return cfg->rope_scaling.type == ROPE_SCALE_DYNAMIC && rd == 2 ? "rope" : NULL;
}

static int rope_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	return xc->rope == yc->rope && xc->rope_base == yc->rope_base && xc->rope_style == yc->rope_style &&
	       xc->rope_partial == yc->rope_partial && xp->rope_off == yp->rope_off &&
	       rope_scaling_eq(&xc->rope_scaling, &yc->rope_scaling);
}

/* Q_rot or K_rot: a pair of one head's row turned by the row's position (or a column that passes through). */
static void explain_rotate(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const AttnMatrix from = attn_reads_after(a, &variant_rope, which == AM_Q_ROT ? AM_Q : AM_K);
	const Mat *in = attn_slot_const(a, from, 0);
	const int dk = lp->d_k, c = j % dk, interleaved = cfg->rope_style == ROPE_INTERLEAVED;
	const char *dot = celltext_sym(utf8, "\u00b7", "*"), *minus = celltext_sym(utf8, "\u2212", "-");
	const char *t = celltext_sym(utf8, "\u03b8", "t");
	char x1[32], x2[32], x3[32], x4[32], x5[32];
	RopeTable tb;

	(void)h;
	if (lp->rope_off) {
		strbuf_printf(b, _("This layer has no RoPE (a NoPE layer, \"rope\": false): %s is %s as it is, %s\n"),
		              matrix_name(which), matrix_name(from), celltext_num(x1, MAT_AT(*in, i, j), utf8));
		return;
	}
	if (rope_table(a, &tb) != 0)
		return;
	if (c >= tb.rd) {
		strbuf_printf(b, _("Partial RoPE: only the first %d of a head's %d columns turn; column %d passes through: %s\n"),
		              tb.rd, dk, c, celltext_num(x1, MAT_AT(*in, i, j), utf8));
		return;
	}
	{
		const int half = tb.rd / 2, pair = interleaved ? c / 2 : c % half, first = interleaved ? c % 2 == 0 : c < half;
		const int ca = j - c + (interleaved ? 2 * pair : pair), cb = j - c + (interleaved ? 2 * pair + 1 : pair + half);
		const double theta = (double)i * tb.inv[pair], x = MAT_AT(*in, i, ca), y = MAT_AT(*in, i, cb), af = tb.af;
		const double plain = pow(cfg->rope_base, -2.0 * pair / tb.rd);

		strbuf_printf(b, _("RoPE at position %d: columns %d and %d of %s are pair %d of their head, turned by\n"), i, ca,
		              cb, matrix_name(from), pair);
		if (cfg->rope_scaling.type == ROPE_SCALE_NONE)
			strbuf_printf(b, "%s = %d %s %s^(%s2%s%d/%d) = %s rad\n", celltext_sym(utf8, "\u03b8", "theta"), i,
			              celltext_sym(utf8, "\u00d7", "*"), celltext_num(x1, cfg->rope_base, utf8), minus, dot, pair,
			              tb.rd, celltext_num(x2, theta, utf8));
		else
			strbuf_printf(b, _("%s = %d %s %s (the %s scaling's frequency of pair %d; plain RoPE's is %s) = %s rad\n"),
			              celltext_sym(utf8, "\u03b8", "theta"), i, celltext_sym(utf8, "\u00d7", "*"),
			              celltext_num(x1, tb.inv[pair], utf8), rope_scale_name(cfg->rope_scaling.type), pair,
			              celltext_num(x2, plain, utf8), celltext_num(x3, theta, utf8));
		if (af != 1.0)
			strbuf_printf(b, _("and YaRN's attention factor %s multiplies cos and sin:\n"), celltext_num(x1, af, utf8));
		if (first)
			strbuf_printf(b, "= a cos %s %s b sin %s = %s %s %s %s %s %s %s = %s\n", t, minus, t, celltext_num(x1, x, utf8),
			              dot, celltext_num(x2, af * cos(theta), utf8), minus, celltext_num(x3, y, utf8), dot,
			              celltext_num(x4, af * sin(theta), utf8),
			              celltext_num(x5, x * (af * cos(theta)) - y * (af * sin(theta)), utf8));
		else
			strbuf_printf(b, "= a sin %s + b cos %s = %s %s %s + %s %s %s = %s\n", t, t, celltext_num(x1, x, utf8), dot,
			              celltext_num(x2, af * sin(theta), utf8), celltext_num(x3, y, utf8), dot,
			              celltext_num(x4, af * cos(theta), utf8),
			              celltext_num(x5, x * (af * sin(theta)) + y * (af * cos(theta)), utf8));
	}
	if (tb.af != 1.0)
		strbuf_printf(b, _("(the rotation keeps the pair's length and the factor stretches it by %s; q%sk still depends on the two positions only through their distance)\n"),
		              celltext_num(x1, tb.af, utf8), celltext_sym(utf8, "\u00b7", "."));
	else
		strbuf_printf(b, _("(a rotation keeps the pair's length; q%sk then depends on the two positions only through their distance)\n"),
		              celltext_sym(utf8, "\u00b7", "."));
}

static const AttnMatrix rope_reads[][2] = { { AM_Q, AM_Q_ROT }, { AM_K, AM_K_ROT }, { AM_COUNT, AM_COUNT } };

const AttnVariant variant_rope = {
	.name = "rope",
	.heads_apart = 1,
	.feature = FEAT_ROPE,
	.stage = STAGE_ROTATE,
	.kernel = pass_rotate,
	.rules = { { AM_Q_ROT, ATTN_MADE(AM_Q, AM_Q_NORM) }, { AM_K_ROT, ATTN_MADE(AM_K, AM_K_NORM) } },
	.explain = explain_rotate,
	.reads = rope_reads,
	.turn_row = rope_turn,
	.backward = rope_backward,
	.setup = rope_setup,
	.release = rope_release,
	.fault = rope_fault,
	.same = rope_same,
	.decode_note = N_(", then turned by RoPE at its position"),
};
