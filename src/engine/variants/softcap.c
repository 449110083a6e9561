/* softcap.c: soft-capping of the scores as Gemma 2 computes it, the variant "attn_logit_softcapping".
 *
 * After the scaling (and ALiBi's bias, if any) and before the mask, every
 * score s becomes c·tanh(s / c), c the lesson's attn_logit_softcapping
 * (Gemma 2: 50): transformers' models/gemma2/modeling_gemma2.py,
 * eager_attention_forward, `attn_weights = attn_weights / softcap;
 * attn_weights = torch.tanh(attn_weights); attn_weights = attn_weights *
 * softcap`, before `attn_weights + causal_mask`. Small scores pass almost
 * unchanged (tanh x ≈ x), large ones never pass ±c. capped is a derived
 * matrix, made when asked for (attention.c: attn_derived_row applies
 * score_map); the mask reads it. The backward pass multiplies dmasked by
 * d/ds c·tanh(s/c) = 1 − tanh²(s/c) (backward.c asks score_map_grad_row,
 * a row at a time, or score_map_grad). Its
 * stage is STAGE_SOFTCAP ("softcap" in catalog.c). The final logits' cap
 * (final_logit_softcapping) is the LM head's (attention.c: pass_logits).
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <stdlib.h>

/* tanh(x / c) as every cell of the cap takes it: the kernel's kind's tanh (mat_tanh), the same bits one cell or a row at a time */
static double cap_tanh(const Attn *a, double x)
{
	double t = x / attn_config(a)->attn_softcap;

	mat_tanh(1, &t, &t);
	return t;
}

static double softcap_map(const Attn *a, double x)
{
	return cap_tanh(a, x) * attn_config(a)->attn_softcap;
}

/* tanh(x / c) of each of len cells in place, as cap_tanh takes it, tanh four cells at a time. */
static void cap_tanh_row(const Attn *a, double *row, int len)
{
	const double c = attn_config(a)->attn_softcap;

	for (int j = 0; j < len; j++)
		row[j] = row[j] / c;
	mat_tanh(len, row, row);
}

/* A row of scores capped at once: each cell's c·tanh(x / c) as softcap_map makes it. */
static void softcap_map_row(const Attn *a, double *row, int len)
{
	const double c = attn_config(a)->attn_softcap;

	cap_tanh_row(a, row, len);
	for (int j = 0; j < len; j++)
		row[j] = row[j] * c;
}

static double softcap_grad(const Attn *a, double x)
{
	const double t = cap_tanh(a, x);

	return 1.0 - t * t;
}

/* A row's slopes at once: each cell's 1 − tanh²(x / c) as softcap_grad makes it. */
static void softcap_grad_row(const Attn *a, double *row, int len)
{
	cap_tanh_row(a, row, len);
	for (int j = 0; j < len; j++)
		row[j] = 1.0 - row[j] * row[j];
}

/*
 * capped (n × m) is derived, made when asked for: nothing to keep. Its cells
 * need no check either: c·tanh(x/c) is finite unless x is NaN, and x (scaled,
 * or biased) was checked by its own pass.
 */
static void pass_softcap(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)a, (void)cfg, (void)lp;
}

/* c must be a number > 0 (the loader says so at its path; this is the engine's own guard). */
static const char *softcap_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	return cfg->attn_softcap < 0.0 || !isfinite(cfg->attn_softcap) ? "attn_logit_softcapping" : NULL;
}

static int softcap_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xp; (void)yp;
	return xc->attn_softcap == yc->attn_softcap && xc->final_softcap == yc->final_softcap; /* the final cap too: one setting of Gemma 2 */
}

/* capped: c·tanh(s/c) with the cell's numbers, how far it moved, and the slope the backward pass uses. */
static void explain_softcap(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const double c = attn_config(a)->attn_softcap;
	const AttnVariant *bias = attn_score_bias(a);
	const AttnMatrix in = bias != NULL ? bias->biased_matrix : AM_SCALED;
	const double s = attn_cell(a, in, h, i, j), t = cap_tanh(a, s), capped = attn_cell(a, which, h, i, j);
	char x1[32], x2[32], x3[32], x4[32], x5[32];

	strbuf_printf(b, "c%stanh(s / c) = %s %s tanh(%s / %s) = %s %s tanh(%s) = ", celltext_sym(utf8, "\u00b7", "*"),
	              celltext_num(x1, c, utf8), celltext_sym(utf8, "\u00b7", "*"), celltext_num(x2, s, utf8),
	              celltext_num(x3, c, utf8), celltext_num(x4, c, utf8), celltext_sym(utf8, "\u00b7", "*"),
	              celltext_num(x5, s / c, utf8));
	strbuf_printf(b, "%s\n", celltext_num(x1, capped, utf8));
	strbuf_printf(b, _("(s = %s is the %s score; the cap moved it by %s: it can never pass %s%s)\n"),
	              celltext_num(x1, s, utf8), matrix_name(in), celltext_num(x2, capped - s, utf8),
	              celltext_sym(utf8, "\u00b1", "+-"), celltext_num(x3, c, utf8));
	strbuf_printf(b, _("slope d/ds = 1 %s tanh%s(s / c) = %s (what the backward pass multiplies the gradient by)\n"),
	              celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u00b2", "^2"), celltext_num(x1, 1.0 - t * t, utf8));
}

/* capped[i][j]: the same cell of the scores it caps (biased with ALiBi, else scaled). */
static int operands_softcap(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const AttnVariant *bias = attn_score_bias(a);

	(void)which;
	out[0] = (ExplainOperand){ bias != NULL ? bias->biased_matrix : AM_SCALED, h, i, j };
	return 1;
}

const AttnVariant variant_softcap = {
	.name = "attn_logit_softcapping",
	.heads_apart = 1,
	.feature = FEAT_SOFTCAP,
	.stage = STAGE_SOFTCAP,
	.kernel = pass_softcap,
	.rules = { { AM_CAPPED, ATTN_MADE(AM_SCALED, AM_BIASED) } },
	.checks_itself = 1,
	.explain = explain_softcap,
	.operands = operands_softcap,
	.fault = softcap_fault,
	.same = softcap_same,
	.decode_adj = N_(", soft-capped"),
	.score_map = softcap_map,
	.score_map_row = softcap_map_row,
	.score_map_grad = softcap_grad,
	.score_map_grad_row = softcap_grad_row,
	.mapped_matrix = AM_CAPPED,
};
