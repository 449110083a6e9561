/* linear.c: linear attention (Katharopoulos et al. 2020, "Transformers are RNNs"), the variants
 * "linear_attention" (its n × n form) and "linear_state" (its state form).
 *
 * Softmax's weight e^(q·k) / Σ e^(q·k') becomes φ(q)·φ(k) / Σ φ(q)·φ(k'),
 * with the feature map φ(x) = elu(x) + 1 (x + 1 for x > 0, e^x below: every
 * number > 0). Per head (q the rows the scores read: after QK-norm and RoPE
 * when the lesson has them; k, v the key/value head's):
 *
 *   the n × n way (STAGE_LINEAR): A_ij = φ(q_i)·φ(k_j) (0 where causal hides
 *     j > i), z_i = Σ_j A_ij + eps, lin_out_i = Σ_j A_ij v_j / z_i;
 *   the state way (STAGE_LINEAR_STATE): S = Σ_j φ(k_j) v_jᵀ (d_k × d_v),
 *     s = Σ_j φ(k_j), lin_out_state_i = φ(q_i)ᵀS / (φ(q_i)·s + eps), with
 *     S and s summed over j ≤ i for a causal row (a running state, token by
 *     token, as a recurrent network's).
 *
 * They are the same sums in another order (φ(q_i)·φ(k_j) is a plain dot
 * product, so Σ_j (φ(q_i)·φ(k_j)) v_j = φ(q_i)ᵀ Σ_j φ(k_j) v_jᵀ): the state
 * pass keeps the largest difference as a->linear_gap (--dump's
 * "linear_attention".max_gap, tested below 1e-12). Softmax has no such
 * state: e^(q·k) is not φ(q)·φ(k) for any finite φ, so its n × n weights
 * must be made. The reference is fast-transformers
 * (fast_transformers/attention/linear_attention.py, LinearAttention.forward:
 * `KV = torch.einsum("nshd,nshm->nhmd", K, values)`, `Z = 1/(torch.einsum(
 * "nlhd,nhd->nlh", Q, K.sum(dim=1))+self.eps)`; causal_linear_attention.py:
 * `Z = 1/(torch.einsum("nlhi,nlhi->nlh", Q, K.cumsum(1)) + self.eps)`), eps
 * 1e-6 there and here by default. The lesson's softmax attention is computed
 * as before and feeds the rest of the layer; linear attention's outputs
 * stand beside it (lin_out, lin_out_state), for comparison.
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* φ(x) = elu(x) + 1 = x + 1 for x > 0, else e^x. */
static double phi(double x)
{
	return x > 0.0 ? x + 1.0 : exp(x);
}

/* The matrix the scores read for w (AM_Q, AM_K): Q, or Q_norm, Q_rot after the variants that turn it. */
static const Mat *read_mat(const Attn *a, AttnMatrix w)
{
	return attn_slot_const(a, attn_reads(a, w), 0);
}

/* Whether query i reaches key j. */
static int linear_sees(const ModelConfig *cfg, int i, int j)
{
	return !cfg->linear_causal || j <= i;
}

/* phi_q, phi_k, lin_scores, lin_z and lin_out of every head: the n × n way. */
static void pass_linear(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const Mat *Q = read_mat(a, AM_Q), *K = read_mat(a, AM_K);
	const int dk = a->shape.dim[DIM_DK], dv = a->shape.dim[DIM_DV];

	(void)lp;
	for (int h = 0; h < a->heads; h++) {
		AttnHead *hd = &a->head[h];
		const int g = attn_kv_head(a, h);
		for (int i = 0; i < cfg->n; i++)
			for (int c = 0; c < dk; c++)
				MAT_AT(hd->phi_q, i, c) = phi(MAT_AT(*Q, i, h * dk + c));
		for (int j = 0; j < cfg->m; j++)
			for (int c = 0; c < dk; c++)
				MAT_AT(hd->phi_k, j, c) = phi(MAT_AT(*K, j, g * dk + c));
		/* lin_scores = φ(Q)·φ(K)ᵀ on the kernels, each cell's terms in order from 0 (matrix.h), 0 where i does not see j */
		mat_mul_chain(cfg->n, dk, cfg->m, hd->phi_q.a, (size_t)hd->phi_q.cols, hd->phi_k.a, (size_t)hd->phi_k.cols, 1,
		              hd->lin_scores.a, (size_t)cfg->m, 0);
		for (int i = 0; cfg->linear_causal && i < cfg->n; i++) /* the keys past i: j > i */
			if (i + 1 < cfg->m)
				memset(&MAT_AT(hd->lin_scores, i, i + 1), 0, (size_t)(cfg->m - i - 1) * sizeof(double));
		/* lin_out = lin_scores·V, then each row over its z; causal: the scores' 0s past the diagonal skipped */
		mat_mul_chain(cfg->n, cfg->m, dv, hd->lin_scores.a, (size_t)cfg->m, &a->V.a[g * dv], (size_t)a->V.cols, 0,
		              hd->lin_out.a, (size_t)dv, cfg->linear_causal);
		for (int i = 0; i < cfg->n; i++) {
			/* z: the row's sum; past i (causal) its terms are +0, which leave a sum of φ·φ > 0 as it is */
			const int seen = cfg->linear_causal && i + 1 < cfg->m ? i + 1 : cfg->m;
			double z = 0.0;
			for (int j = 0; j < seen; j++)
				z += MAT_AT(hd->lin_scores, i, j);
			z += cfg->linear_eps;
			MAT_AT(hd->lin_z, i, 0) = z;
			for (int c = 0; c < dv; c++)
				MAT_AT(hd->lin_out, i, c) /= z;
		}
	}
}

/* Add key j to the state: S += φ(k_j) v_jᵀ, s += φ(k_j). */
MAT_WIDE static void state_add(Attn *a, AttnHead *hd, int g, int j, int dk, int dv)
{
	for (int r = 0; r < dk; r++) {
		const double f = MAT_AT(hd->phi_k, j, r);
		MAT_AT(hd->lin_ksum, 0, r) += f;
		for (int c = 0; c < dv; c++)
			MAT_AT(hd->lin_state, r, c) += f * MAT_AT(a->V, j, g * dv + c);
	}
}

/* Row i of lin_out_state from the state as it stands: φ(q_i)ᵀS / (φ(q_i)·s + eps). */
MAT_WIDE static void state_read(AttnHead *hd, int i, int dk, int dv, double eps)
{
	double z = eps;

	double *o = &MAT_AT(hd->lin_out_state, i, 0);

	for (int r = 0; r < dk; r++)
		z += MAT_AT(hd->phi_q, i, r) * MAT_AT(hd->lin_ksum, 0, r);
	/* o_c = Σ_r φ(q_i)_r S_rc, each o_c's terms in the order of r, the state read along its rows */
	for (int c = 0; c < dv; c++)
		o[c] = 0.0;
	for (int r = 0; r < dk; r++) {
		const double f = MAT_AT(hd->phi_q, i, r), *row = &MAT_AT(hd->lin_state, r, 0);
		for (int c = 0; c < dv; c++)
			o[c] += f * row[c];
	}
	for (int c = 0; c < dv; c++)
		o[c] /= z;
}

/* lin_state, lin_ksum and lin_out_state: the state way (token by token when causal); and the gap to lin_out. */
static void pass_linear_state(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int dk = a->shape.dim[DIM_DK], dv = a->shape.dim[DIM_DV];
	double gap = 0.0;

	(void)lp;
	for (int h = 0; h < a->heads; h++) {
		AttnHead *hd = &a->head[h];
		const int g = attn_kv_head(a, h);
		memset(hd->lin_state.a, 0, (size_t)dk * (size_t)dv * sizeof(double));
		memset(hd->lin_ksum.a, 0, (size_t)dk * sizeof(double));
		if (cfg->linear_causal) {
			for (int i = 0; i < cfg->n; i++) {
				state_add(a, hd, g, i, dk, dv); /* n = m: the loader says so */
				state_read(hd, i, dk, dv, cfg->linear_eps);
			}
		} else {
			for (int j = 0; j < cfg->m; j++)
				state_add(a, hd, g, j, dk, dv);
			for (int i = 0; i < cfg->n; i++)
				state_read(hd, i, dk, dv, cfg->linear_eps);
		}
		for (int i = 0; i < cfg->n; i++)
			for (int c = 0; c < dv; c++)
				gap = fmax(gap, fabs(MAT_AT(hd->lin_out_state, i, c) - MAT_AT(hd->lin_out, i, c)));
	}
	a->linear_gap = gap;
}

/* eps ≥ 0, and a causal lesson's queries are its keys (the loader says so at its path; the engine's own guard). */
static const char *linear_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	if (!(cfg->linear_eps >= 0.0) || !isfinite(cfg->linear_eps))
		return "linear_attention.eps";
	return cfg->linear_causal && cfg->n != cfg->m ? "linear_attention.causal" : NULL;
}

static int linear_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xp; (void)yp;
	return xc->linear == yc->linear && xc->linear_causal == yc->linear_causal && xc->linear_eps == yc->linear_eps;
}

/* "φ(x) = elu(x) + 1 = e^x = …" of one number x. */
static void explain_phi(StrBuf *b, double x, double fx, int utf8)
{
	char x1[32], x2[32];

	celltext_num(x1, x, utf8);
	celltext_num(x2, fx, utf8);
	if (x > 0.0)
		strbuf_printf(b, "%s(%s) = %s + 1 = %s\n", celltext_sym(utf8, "\u03c6", "phi"), x1, x1, x2);
	else
		strbuf_printf(b, "%s(%s) = e^%s = %s\n", celltext_sym(utf8, "\u03c6", "phi"), x1, x1, x2);
}

static void explain_linear(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const AttnHead *hd = &a->head[h];
	const int dk = a->shape.dim[DIM_DK], dv = a->shape.dim[DIM_DV], g = attn_kv_head(a, h);
	char x1[32], x2[32], x3[32];

	switch (which) {
	case AM_PHI_Q:
	case AM_PHI_K: {
		const Mat *src = read_mat(a, which == AM_PHI_Q ? AM_Q : AM_K);
		const double x = MAT_AT(*src, i, (which == AM_PHI_Q ? h : g) * dk + j);
		explain_phi(b, x, attn_cell(a, which, h, i, j), utf8);
		strbuf_printf(b, _("(elu(x) + 1: x + 1 above 0, e^x below, so every feature is > 0 and every product of features too)\n"));
		break;
	}
	case AM_LIN_SCORES:
		if (!linear_sees(cfg, i, j)) {
			strbuf_printf(b, _("causal: key %d comes after query %d, so the product is left out (0)\n"), j, i);
			break;
		}
		strbuf_printf(b, "%s(q_%d)%s%s(k_%d) ", celltext_sym(utf8, "\u03c6", "phi"), i, celltext_sym(utf8, "\u00b7", "."),
		              celltext_sym(utf8, "\u03c6", "phi"), j);
		celltext_terms(b, &MAT_AT(hd->phi_q, i, 0), 1, &MAT_AT(hd->phi_k, j, 0), 1, dk, utf8);
		strbuf_printf(b, _("softmax would use e^(q%sk) here, which is no dot product of a part of q and a part of k: "
		                   "that is why softmax must make this n %s n matrix, and linear attention need not\n"),
		              celltext_sym(utf8, "\u00b7", "."), celltext_sym(utf8, "\u00d7", "x"));
		break;
	case AM_LIN_Z: {
		double s = 0.0;
		for (int k = 0; k < cfg->m; k++)
			s += MAT_AT(hd->lin_scores, i, k);
		strbuf_printf(b, _("z_%d = %s_j lin_scores_%dj + eps = %s + %s = %s\n"), i, celltext_sym(utf8, "\u03a3", "sum"), i,
		              celltext_num(x1, s, utf8), celltext_num(x2, cfg->linear_eps, utf8),
		              celltext_num(x3, MAT_AT(hd->lin_z, i, 0), utf8));
		break;
	}
	case AM_LIN_OUT: {
		double s = 0.0;
		for (int k = 0; k < cfg->m; k++)
			s += MAT_AT(hd->lin_scores, i, k) * MAT_AT(a->V, k, g * dv + j);
		strbuf_printf(b, "%s_k lin_scores_%dk v_k%d ", celltext_sym(utf8, "\u03a3", "sum"), i, j);
		celltext_terms(b, &MAT_AT(hd->lin_scores, i, 0), 1, &MAT_AT(a->V, 0, g * dv + j), (size_t)a->V.cols, cfg->m, utf8);
		strbuf_printf(b, "/ z_%d = %s / %s = %s\n", i, celltext_num(x1, s, utf8), celltext_num(x2, MAT_AT(hd->lin_z, i, 0), utf8),
		              celltext_num(x3, MAT_AT(hd->lin_out, i, j), utf8));
		break;
	}
	case AM_LIN_STATE:
		strbuf_printf(b, "S_%d%d = %s_k %s(k_k)_%d v_k%d ", i, j, celltext_sym(utf8, "\u03a3", "sum"),
		              celltext_sym(utf8, "\u03c6", "phi"), i, j);
		celltext_terms(b, &MAT_AT(hd->phi_k, 0, i), (size_t)dk, &MAT_AT(a->V, 0, g * dv + j), (size_t)a->V.cols, cfg->m, utf8);
		strbuf_printf(b, _("(d_k %s d_v numbers, however many tokens there are: the keys and values folded into one state)\n"),
		              celltext_sym(utf8, "\u00d7", "x"));
		break;
	case AM_LIN_KSUM: {
		double s = 0.0;
		for (int k = 0; k < cfg->m; k++)
			s += MAT_AT(hd->phi_k, k, j);
		strbuf_printf(b, "%s_k %s(k_k)_%d = %s\n", celltext_sym(utf8, "\u03a3", "sum"), celltext_sym(utf8, "\u03c6", "phi"), j,
		              celltext_num(x1, s, utf8));
		break;
	}
	case AM_LIN_OUT_STATE: {
		double z = cfg->linear_eps, o = 0.0;
		const int last = cfg->linear_causal ? i : cfg->m - 1;
		for (int r = 0; r < dk; r++) {
			double sr = 0.0, kr = 0.0;
			for (int k = 0; k <= last; k++) {
				sr += MAT_AT(hd->phi_k, k, r) * MAT_AT(a->V, k, g * dv + j);
				kr += MAT_AT(hd->phi_k, k, r);
			}
			o += MAT_AT(hd->phi_q, i, r) * sr;
			z += MAT_AT(hd->phi_q, i, r) * kr;
		}
		if (cfg->linear_causal)
			strbuf_printf(b, _("causal: the state after token %d, S_%d = %s_{k %s %d} %s(k_k) v_k%s\n"), i, i,
			              celltext_sym(utf8, "\u03a3", "sum"), celltext_sym(utf8, "\u2264", "<="), i,
			              celltext_sym(utf8, "\u03c6", "phi"), celltext_sym(utf8, "\u1d40", "^T"));
		strbuf_printf(b, "%s(q_%d)%sS[:, %d] / (%s(q_%d)%s%s%s(k) + eps) = %s / %s = %s\n", celltext_sym(utf8, "\u03c6", "phi"), i,
		              celltext_sym(utf8, "\u1d40", "^T"), j, celltext_sym(utf8, "\u03c6", "phi"), i, celltext_sym(utf8, "\u00b7", "."),
		              celltext_sym(utf8, "\u03a3", "sum "), celltext_sym(utf8, "\u03c6", "phi"), celltext_num(x1, o, utf8),
		              celltext_num(x2, z, utf8), celltext_num(x3, MAT_AT(hd->lin_out_state, i, j), utf8));
		strbuf_printf(b, _("lin_out (the n %s n way) has %s here: they differ by %s\n"), celltext_sym(utf8, "\u00d7", "x"),
		              celltext_num(x1, MAT_AT(hd->lin_out, i, j), utf8),
		              celltext_num(x2, MAT_AT(hd->lin_out_state, i, j) - MAT_AT(hd->lin_out, i, j), utf8));
		break;
	}
	default:
		break;
	}
}

static int operands_linear(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	switch (which) {
	case AM_PHI_Q:
		out[0] = (ExplainOperand){ attn_reads(a, AM_Q), 0, i, h * a->shape.dim[DIM_DK] + j };
		return 1;
	case AM_PHI_K:
		out[0] = (ExplainOperand){ attn_reads(a, AM_K), 0, i, attn_kv_head(a, h) * a->shape.dim[DIM_DK] + j };
		return 1;
	case AM_LIN_SCORES:
		out[0] = (ExplainOperand){ AM_PHI_Q, h, i, -1 };
		out[1] = (ExplainOperand){ AM_PHI_K, h, j, -1 };
		return 2;
	case AM_LIN_Z:
		out[0] = (ExplainOperand){ AM_LIN_SCORES, h, i, -1 };
		return 1;
	case AM_LIN_OUT:
		out[0] = (ExplainOperand){ AM_LIN_SCORES, h, i, -1 };
		out[1] = (ExplainOperand){ AM_V, h, -1, attn_kv_head(a, h) * a->shape.dim[DIM_DV] + j };
		out[2] = (ExplainOperand){ AM_LIN_Z, h, i, 0 };
		return 3;
	case AM_LIN_STATE:
		out[0] = (ExplainOperand){ AM_PHI_K, h, -1, i };
		out[1] = (ExplainOperand){ AM_V, h, -1, attn_kv_head(a, h) * a->shape.dim[DIM_DV] + j };
		return 2;
	case AM_LIN_KSUM:
		out[0] = (ExplainOperand){ AM_PHI_K, h, -1, j };
		return 1;
	case AM_LIN_OUT_STATE:
		out[0] = (ExplainOperand){ AM_PHI_Q, h, i, -1 };
		out[1] = (ExplainOperand){ AM_LIN_STATE, h, -1, j };
		out[2] = (ExplainOperand){ AM_LIN_KSUM, h, 0, -1 };
		return 3;
	default:
		return 0;
	}
}

const AttnVariant variant_linear = {
	.name = "linear_attention",
	.feature = FEAT_LINEAR,
	.stage = STAGE_LINEAR,
	.kernel = pass_linear, /* no rules: rerun after any change (it reads Q, K or what they became, and V) */
	.explain = explain_linear,
	.operands = operands_linear,
	.fault = linear_fault,
	.same = linear_same,
};

const AttnVariant variant_linearstate = {
	.name = "linear_state",
	.feature = FEAT_LINEAR,
	.stage = STAGE_LINEAR_STATE,
	.kernel = pass_linear_state,
	.rules = { { AM_LIN_STATE, ATTN_MADE(AM_PHI_K, AM_V) },
	           { AM_LIN_KSUM, ATTN_MADE(AM_PHI_K) },
	           { AM_LIN_OUT_STATE, ATTN_MADE(AM_PHI_Q, AM_PHI_K, AM_V, AM_LIN_OUT) } },
	.explain = explain_linear,
	.operands = operands_linear,
};
