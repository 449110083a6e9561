/* sinks.c: attention sinks as gpt-oss computes them, the variant "sinks".
 *
 * Each query head h has a learned logit sink_h (the layer's LayerParams.sinks).
 * It is one more column of every row of the scaled, masked scores; the
 * softmax runs over the keys and it, and its column is dropped:
 *   weights_ij = e^(s_ij) / (e^(sink_h) + Σ_k e^(s_ik))
 * (transformers' models/gpt_oss/modeling_gpt_oss.py, eager_attention_forward:
 * `combined_logits = torch.cat([attn_weights, sinks], dim=-1)`, minus its
 * row maximum, softmax, `probs[..., :-1]`). A row's weights then sum to
 * less than 1: what is missing went to the sink, which has no value, so a
 * head can give almost nothing to every key. The core's softmax (and
 * decoding's) asks sink_logit (attention.c: attn_softmax_sink_row); this
 * file's stage, STAGE_SINKS ("sinks" in catalog.c), keeps each row's
 * missing share as `sink` (n × 1 per head): 1 − Σ_j w_ij. The backward pass needs nothing
 * of its own: dmasked_ij = w_ij (dw_ij − Σ_k w_ik dw_ik) holds with the sum
 * over the keys alone (the sink's column has no gradient from the output).
 * FlashAttention's tiles add the sink's term after the last key block
 * (flash.c), as gpt-oss's kernel does.
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>

/* sink_h: the layer's given matrix sinks (1 × heads). */
static double sinks_logit(const Attn *a, int h)
{
	return attn_params(a)->sinks.a[h];
}

/*
 * The sink's share of every row: what the row's weights leave of 1, 1 − Σ_j w_ij, so that the weights and the
 * sink add up to 1 exactly as the stage shows them (not a second softmax over the row of masked, whose last bits
 * could disagree with the weights').
 */
static void pass_sinks(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	for (int h = 0; h < a->heads; h++)
		for (int i = 0; i < cfg->n; i++) {
			double kept = 0.0;
			for (int j = 0; j < cfg->m; j++)
				kept += MAT_AT(a->head[h].weights, i, j);
			MAT_AT(a->head[h].sink, i, 0) = 1.0 - kept;
		}
}

/* One number per query head. */
static const char *sinks_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	return !mat_empty(&lp->sinks) && lp->sinks.rows * lp->sinks.cols != lp->heads ? "sinks" : NULL;
}

/* Whether both have sinks: their numbers are a given matrix (sinks), whose edits the stage rules follow. */
static int sinks_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xc; (void)yc;
	return mat_empty(&xp->sinks) == mat_empty(&yp->sinks) && xp->sinks.cols == yp->sinks.cols;
}

/* sink[i][0]: the row's maximum, its sum with the sink's term, the sink's share and what the weights kept. */
static void explain_sink(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const int m = attn_config(a)->m;
	const double sink = attn_params(a)->sinks.a[h];
	double max = sink, sum = 0.0, kept = 0.0;
	char x1[32], x2[32], x3[32], x4[32], x5[32], x6[32], x7[32];

	(void)which, (void)j;
	for (int t = 0; t < m; t++)
		max = fmax(max, attn_cell(a, AM_MASKED, h, i, t));
	for (int t = 0; t < m; t++) {
		const double s = attn_cell(a, AM_MASKED, h, i, t);
		sum += s == -INFINITY ? 0.0 : exp(s - max);
		kept += MAT_AT(a->head[h].weights, i, t);
	}
	strbuf_printf(b, _("head %d's sink logit is %s, one more column beside row %d's %d keys (max of the row and the sink = %s):\n"),
	              h, celltext_num(x1, sink, utf8), i, m, celltext_num(x2, max, utf8));
	strbuf_printf(b, "sink = exp(%s %s %s) / (exp(%s %s %s) + %s_k exp(s_k %s max)) = %s / (%s + %s) = ",
	              celltext_num(x1, sink, utf8), celltext_sym(utf8, "\u2212", "-"), celltext_num(x2, max, utf8),
	              celltext_num(x3, sink, utf8), celltext_sym(utf8, "\u2212", "-"), celltext_num(x4, max, utf8),
	              celltext_sym(utf8, "\u03a3", "sum"), celltext_sym(utf8, "\u2212", "-"), celltext_num(x5, exp(sink - max), utf8),
	              celltext_num(x6, exp(sink - max), utf8), celltext_num(x7, sum, utf8));
	strbuf_printf(b, "%s\n", celltext_num(x1, MAT_AT(a->head[h].sink, i, 0), utf8));
	strbuf_printf(b, _("the row's weights sum to %s = 1 %s %s: the sink's share is dropped with its column, and it has no value to pass on\n"),
	              celltext_num(x1, kept, utf8), celltext_sym(utf8, "\u2212", "-"), celltext_num(x2, 1.0 - kept, utf8));
}

/* sink[i][0]: the whole row i of masked it was a column beside. */
static int operands_sink(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	(void)a, (void)which, (void)j;
	out[0] = (ExplainOperand){ AM_WEIGHTS, h, i, -1 };
	return 1;
}

const AttnVariant variant_sinks = {
	.name = "sinks",
	.heads_apart = 1,
	.feature = FEAT_SINKS,
	.stage = STAGE_SINKS,
	.kernel = pass_sinks,
	.rules = { { AM_SINK, ATTN_MADE(AM_MASKED, AM_WEIGHTS, AM_SINKS) } },
	.explain = explain_sink,
	.operands = operands_sink,
	.fault = sinks_fault,
	.same = sinks_same,
	.decode_adj = N_(", with the head's sink"),
	.sink_logit = sinks_logit,
};
