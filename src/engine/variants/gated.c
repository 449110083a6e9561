/* gated.c: gated attention as Qwen3-Next computes it, the variant "W_gate" (issue 23 §6).
 *
 * transformers' models/qwen3_next/modeling_qwen3_next.py, Qwen3NextAttention:
 * q_proj is twice as wide, and each head's 2·head_dim columns are split into
 * its query and its gate (`query_states, gate = torch.chunk(
 * self.q_proj(hidden_states).view(*input_shape, -1, self.head_dim * 2), 2,
 * dim=-1)`, `gate = gate.reshape(*input_shape, -1)`); after attention,
 * `attn_output = attn_output * torch.sigmoid(gate)` and only then o_proj.
 * A lesson gives the gate's half as a matrix of its own, W_gate (d_model ×
 * h·d_v: one column per column of concat), so that W_q keeps its meaning:
 *   gate     = x·W_gate [+ b_gate]   (n × h·d_v; x: the rows Q is made from; the bias
 *                                     Qwen3-Next's q_proj has with attention_bias, its gate's half)
 *   gate_sig = σ(gate) = 1 / (1 + e^(−gate))
 *   gated    = concat ⊙ gate_sig     (what W_o reads instead of concat: reads)
 * Its stage is STAGE_GATE ("gate" in catalog.c), between concat and output.
 * Its backward (dgated → dconcat, dgate, dW_gate, db_gate) is backward.c's gate_backward;
 * decoding gates each step's row the same way (decode.c: decode_gate).
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>

/* The rows the gate is made from: those the queries are (norm1 in a pre-norm block, else X). */
static const Mat *gate_input(const Attn *a, const LayerParams *lp)
{
	return lp->block.present && lp->block.norm == NORM_PRE ? &a->norm1 : &a->X;
}

/* gate (n × h·d_v) = x·W_gate; gate_sig = σ(gate); gated = concat ⊙ gate_sig, cell by cell. */
static void pass_gate(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const size_t cells = (size_t)a->gate.rows * (size_t)a->gate.cols;

	(void)cfg;
	a->nonfinite |= mat_mul(gate_input(a, lp), &lp->W_gate, &a->gate);
	for (size_t k = 0; k < cells; k++) {
		if (!mat_empty(&lp->b_gate)) /* its bias, column by column */
			a->gate.a[k] += lp->b_gate.a[k % (size_t)a->gate.cols];
		a->gate_sig.a[k] = 1.0 / (1.0 + exp(-a->gate.a[k]));
		a->gated.a[k] = a->concat.a[k] * a->gate_sig.a[k];
	}
	a->nonfinite |= mat_nonfinite(a->gated.a, cells);
}

/* W_gate is d_model × h·d_v and W_o is there to read gated (the loader says so at its path; the engine's own guard). */
static const char *gate_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	if (mat_empty(&lp->W_gate))
		return NULL;
	if (lp->W_gate.rows != cfg->d_model || lp->W_gate.cols != lp->heads * lp->d_v || mat_empty(&lp->W_o))
		return "W_gate";
	return NULL;
}

static void explain_gate(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const LayerParams *lp = attn_params(a);
	const Mat *x = gate_input(a, lp);
	const double g = MAT_AT(a->gate, i, j), s = MAT_AT(a->gate_sig, i, j), c = MAT_AT(a->concat, i, j);
	char x1[32], x2[32], x3[32], x4[32];

	(void)h;
	if (which == AM_GATE) {
		strbuf_printf(b, _("= %s row %d %s %s column %d\n"), matrix_name(x == &a->X ? AM_X : AM_NORM1), i,
		              celltext_sym(utf8, "\u00b7", "."), matrix_name(AM_W_GATE), j);
		celltext_terms(b, &MAT_AT(*x, i, 0), 1, &lp->W_gate.a[j], (size_t)lp->W_gate.cols, x->cols, utf8);
		if (!mat_empty(&lp->b_gate))
			strbuf_printf(b, _("+ b_gate[%d] = %s + %s = %s\n"), j, celltext_num(x1, g - lp->b_gate.a[j], utf8),
			              celltext_num(x2, lp->b_gate.a[j], utf8), celltext_num(x3, g, utf8));
		strbuf_printf(b, _("(the gate of column %d of concat: head %d's column %d; Qwen3-Next makes it in q_proj, beside the head's query)\n"),
		              j, j / lp->d_v, j % lp->d_v);
		return;
	}
	strbuf_printf(b, "%s(%s) = 1 / (1 + e^(%s)) = %s\n", celltext_sym(utf8, "\u03c3", "sigmoid"), celltext_num(x1, g, utf8),
	              celltext_num(x2, -g, utf8), celltext_num(x3, s, utf8));
	if (which == AM_GATE_SIG) {
		strbuf_printf(b, _("(%s of column %d of concat passes on: near 1 when the gate's logit is large, near 0 when it is very negative)\n"),
		              celltext_num(x1, s, utf8), j);
		return;
	}
	strbuf_printf(b, "gated = concat %s %s(gate) = %s %s %s = %s\n", celltext_sym(utf8, "\u00d7", "*"),
	              celltext_sym(utf8, "\u03c3", "sigmoid"), celltext_num(x1, c, utf8), celltext_sym(utf8, "\u00d7", "*"),
	              celltext_num(x2, s, utf8), celltext_num(x4, MAT_AT(a->gated, i, j), utf8));
	strbuf_printf(b, _("(head %d's output, column %d, times token %d's own gate before W_o mixes the heads)\n"),
	              j / lp->d_v, j % lp->d_v, i);
}

/* gate[i][j]: row i of x and column j of W_gate; gate_sig: the gate's cell; gated: concat's and gate_sig's. */
static int operands_gate(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const LayerParams *lp = attn_params(a);

	(void)h;
	if (which == AM_GATE) {
		out[0] = (ExplainOperand){ gate_input(a, lp) == &a->X ? AM_X : AM_NORM1, 0, i, -1 };
		out[1] = (ExplainOperand){ AM_W_GATE, 0, -1, j };
		return 2;
	}
	if (which == AM_GATE_SIG) {
		out[0] = (ExplainOperand){ AM_GATE, 0, i, j };
		return 1;
	}
	out[0] = (ExplainOperand){ AM_CONCAT, 0, i, j };
	out[1] = (ExplainOperand){ AM_GATE_SIG, 0, i, j };
	return 2;
}

static const AttnMatrix gate_reads[][2] = { { AM_CONCAT, AM_GATED }, { AM_COUNT, AM_COUNT } };

const AttnVariant variant_gated = {
	.name = "W_gate",
	.heads_apart = 1,
	.feature = FEAT_GATED,
	.stage = STAGE_GATE,
	.kernel = pass_gate,
	.rules = { { AM_GATE, ATTN_MADE(AM_X, AM_NORM1, AM_W_GATE, AM_B_GATE) },
	           { AM_GATE_SIG, ATTN_MADE(AM_X, AM_NORM1, AM_W_GATE, AM_B_GATE) },
	           { AM_GATED, ATTN_MADE(AM_CONCAT, AM_X, AM_NORM1, AM_W_GATE, AM_B_GATE) } },
	.checks_itself = 1,
	.explain = explain_gate,
	.operands = operands_gate,
	.reads = gate_reads,
	.fault = gate_fault,
};
