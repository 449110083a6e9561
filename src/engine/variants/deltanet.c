/* deltanet.c: Gated DeltaNet's recurrence as Qwen3-Next computes it, the variant "gated_deltanet".
 *
 * Beside the lesson's softmax attention (which still feeds the rest of the
 * layer), on each head's q, k and v as the projections made them, and x the
 * rows the projections read (X, or N1(x) in a pre-norm block):
 *
 *   q̂_t = q_t / ‖q_t‖ / √d_k,  k̂_t = k_t / ‖k_t‖   (‖x‖ = √(Σx² + 1e-6), FLA's l2norm)
 *   β_t = σ(x_t·W_b[:, h]),  g_t = −e^(A_log_h) · softplus(x_t·W_a[:, h] + dt_bias_h)
 *   per token, S (d_k × d_v) from 0:  S ← e^(g_t) S;  recall_t = Sᵀk̂_t;
 *     δ_t = β_t (v_t − recall_t);  S ← S + k̂_t δ_tᵀ;  out_t = Sᵀq̂_t
 *
 * (transformers' models/qwen3_next/modeling_qwen3_next.py: l2norm,
 * torch_recurrent_gated_delta_rule and Qwen3NextGatedDeltaNet.forward's
 * `beta = b.sigmoid()`, `g = -self.A_log.float().exp() * F.softplus(a.float() +
 * self.dt_bias)`; the scale 1/√d_k multiplies the normalised query before the
 * recurrence.) The same outputs come from the chunked form
 * (torch_chunk_gated_delta_rule), chunk_size tokens at a time: within a chunk
 * the corrections are solved for all its tokens at once (a unit lower
 * triangular system, by forward substitution), then the chunk's outputs and
 * the state after it are matrix products. The pass keeps the largest
 * difference of the two as a->gdn_gap (--dump's gated_deltanet.max_gap,
 * tested below 1e-12). Not yet here: the short causal conv1d with SiLU
 * before q, k and v, and the gated RMSNorm(o) ⊙ SiLU(z) and W_o after.
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GDN_L2_EPS 1e-6 /* FLA's l2norm: x · rsqrt(Σx² + 1e-6) */

/* The rows the projections read: X, or N1(x) in a pre-norm block (as pass_project). */
static const Mat *gdn_input(const Attn *a, const LayerParams *lp)
{
	return lp->block.present && lp->block.norm == NORM_PRE ? &a->norm1 : &a->X;
}

static double softplus(double x)
{
	return x > 20.0 ? x : log1p(exp(x)); /* torch's softplus (threshold 20) */
}

/* out[c] = x[c · stride] · rsqrt(Σ x² + eps) · scale, len numbers. */
static void l2_row(const double *x, size_t stride, int len, double scale, double *out)
{
	double s = GDN_L2_EPS;

	for (int c = 0; c < len; c++)
		s += x[c * stride] * x[c * stride];
	for (int c = 0; c < len; c++)
		out[c] = x[c * stride] / sqrt(s) * scale;
}

/* x_t · W[:, h]. */
static double proj(const Mat *x, int t, const Mat *w, int h)
{
	double s = 0.0;

	for (int c = 0; c < x->cols; c++)
		s += MAT_AT(*x, t, c) * MAT_AT(*w, c, h);
	return s;
}

/* The recurrence token by token: gdn_recall, gdn_delta, gdn_out and the last state. */
static void gdn_recurrent(Attn *a, AttnHead *hd, int g, int n, int dk, int dv)
{
	memset(hd->gdn_state.a, 0, (size_t)dk * (size_t)dv * sizeof(double));
	for (int t = 0; t < n; t++) {
		const double decay = exp(MAT_AT(hd->gdn_g, t, 0)), beta = MAT_AT(hd->gdn_beta, t, 0);
		for (size_t k = 0; k < (size_t)dk * (size_t)dv; k++)
			hd->gdn_state.a[k] *= decay;
		for (int c = 0; c < dv; c++) {
			double r = 0.0;
			for (int i = 0; i < dk; i++)
				r += MAT_AT(hd->gdn_state, i, c) * MAT_AT(hd->gdn_k, t, i);
			MAT_AT(hd->gdn_recall, t, c) = r;
			MAT_AT(hd->gdn_delta, t, c) = beta * (MAT_AT(a->V, t, g * dv + c) - r);
		}
		for (int i = 0; i < dk; i++)
			for (int c = 0; c < dv; c++)
				MAT_AT(hd->gdn_state, i, c) += MAT_AT(hd->gdn_k, t, i) * MAT_AT(hd->gdn_delta, t, c);
		for (int c = 0; c < dv; c++) {
			double o = 0.0;
			for (int i = 0; i < dk; i++)
				o += MAT_AT(hd->gdn_state, i, c) * MAT_AT(hd->gdn_q, t, i);
			MAT_AT(hd->gdn_out, t, c) = o;
		}
	}
}

/*
 * The chunked form, chunk by chunk (t0 … t0 + L − 1), with S the state before it and G_i = Σ_{j ≤ i} g_j
 * within the chunk (scratch: L·L for T, L·dv for U and W·S, dk·dv for S):
 *   T = (I + tril₋₁(β_i k_i·k_j e^(G_i − G_j)))⁻¹   (forward substitution, as the reference's loop)
 *   U = T (β v),  W = T (β k e^G);   V' = U − W S
 *   out_i = e^(G_i) q_i·S + Σ_{j ≤ i} (q_i·k_j) e^(G_i − G_j) V'_j
 *   S ← e^(G_last) S + Σ_j e^(G_last − G_j) k_j V'_jᵀ
 */
static int gdn_chunked(Attn *a, AttnHead *hd, int g, int n, int dk, int dv, int C)
{
	double *T = malloc((size_t)C * C * sizeof *T), *G = malloc((size_t)C * sizeof *G);
	double *U = malloc((size_t)C * dv * sizeof *U), *W = malloc((size_t)C * dk * sizeof *W);
	double *S = calloc((size_t)dk * dv, sizeof *S), *S2 = malloc((size_t)dk * dv * sizeof *S2);
	int r = -1;

	if (T == NULL || G == NULL || U == NULL || W == NULL || S == NULL || S2 == NULL)
		goto out;
	for (int t0 = 0; t0 < n; t0 += C) {
		const int L = t0 + C <= n ? C : n - t0;
		for (int i = 0; i < L; i++)
			G[i] = (i > 0 ? G[i - 1] : 0.0) + MAT_AT(hd->gdn_g, t0 + i, 0);
		/* A_ij = −β_i (k_i·k_j) e^(G_i − G_j) for j < i; then T = (I − A)⁻¹ row by row */
		for (int i = 0; i < L; i++)
			for (int j = 0; j < L; j++) {
				double kk = 0.0;
				for (int c = 0; j < i && c < dk; c++)
					kk += MAT_AT(hd->gdn_k, t0 + i, c) * MAT_AT(hd->gdn_k, t0 + j, c);
				T[i * C + j] = j < i ? -MAT_AT(hd->gdn_beta, t0 + i, 0) * kk * exp(G[i] - G[j]) : 0.0;
			}
		for (int i = 1; i < L; i++)
			for (int j = 0; j < i; j++) {
				double s = T[i * C + j];
				for (int m = j + 1; m < i; m++)
					s += T[i * C + m] * T[m * C + j];
				T[i * C + j] = s; /* row i of the inverse from the rows above it */
			}
		for (int i = 0; i < L; i++)
			T[i * C + i] = 1.0;
		for (int i = 0; i < L; i++) {
			for (int c = 0; c < dv; c++) {
				double u = 0.0;
				for (int j = 0; j <= i; j++)
					u += T[i * C + j] * MAT_AT(hd->gdn_beta, t0 + j, 0) * MAT_AT(a->V, t0 + j, g * dv + c);
				U[i * dv + c] = u;
			}
			for (int c = 0; c < dk; c++) {
				double w = 0.0;
				for (int j = 0; j <= i; j++)
					w += T[i * C + j] * MAT_AT(hd->gdn_beta, t0 + j, 0) * MAT_AT(hd->gdn_k, t0 + j, c) * exp(G[j]);
				W[i * dk + c] = w;
			}
		}
		/* V' = U − W S, kept in U */
		for (int i = 0; i < L; i++)
			for (int c = 0; c < dv; c++) {
				double ws = 0.0;
				for (int k = 0; k < dk; k++)
					ws += W[i * dk + k] * S[k * dv + c];
				U[i * dv + c] -= ws;
			}
		for (int i = 0; i < L; i++)
			for (int c = 0; c < dv; c++) {
				double o = 0.0;
				for (int k = 0; k < dk; k++)
					o += MAT_AT(hd->gdn_q, t0 + i, k) * exp(G[i]) * S[k * dv + c];
				for (int j = 0; j <= i; j++) {
					double qk = 0.0;
					for (int k = 0; k < dk; k++)
						qk += MAT_AT(hd->gdn_q, t0 + i, k) * MAT_AT(hd->gdn_k, t0 + j, k);
					o += qk * exp(G[i] - G[j]) * U[j * dv + c];
				}
				MAT_AT(hd->gdn_out_chunk, t0 + i, c) = o;
			}
		for (int k = 0; k < dk; k++)
			for (int c = 0; c < dv; c++) {
				double s = S[k * dv + c] * exp(G[L - 1]);
				for (int j = 0; j < L; j++)
					s += MAT_AT(hd->gdn_k, t0 + j, k) * exp(G[L - 1] - G[j]) * U[j * dv + c];
				S2[k * dv + c] = s;
			}
		memcpy(S, S2, (size_t)dk * dv * sizeof *S);
	}
	r = 0;
out:
	free(T), free(G), free(U), free(W), free(S), free(S2);
	return r;
}

static void pass_deltanet(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const Mat *x = gdn_input(a, lp);
	const int n = cfg->n, dk = a->shape.dim[DIM_DK], dv = a->shape.dim[DIM_DV];
	double gap = 0.0;

	for (int h = 0; h < a->heads; h++) {
		AttnHead *hd = &a->head[h];
		const int g = attn_kv_head(a, h);
		for (int t = 0; t < n; t++) {
			l2_row(&MAT_AT(a->Q, t, h * dk), 1, dk, 1.0 / sqrt((double)dk), &MAT_AT(hd->gdn_q, t, 0));
			l2_row(&MAT_AT(a->K, t, g * dk), 1, dk, 1.0, &MAT_AT(hd->gdn_k, t, 0));
			MAT_AT(hd->gdn_beta, t, 0) = 1.0 / (1.0 + exp(-proj(x, t, &lp->gdn_W_b, h)));
			MAT_AT(hd->gdn_g, t, 0) =
			        -exp(lp->gdn_A_log.a[h]) * softplus(proj(x, t, &lp->gdn_W_a, h) + lp->gdn_dt_bias.a[h]);
		}
		gdn_recurrent(a, hd, g, n, dk, dv);
		if (gdn_chunked(a, hd, g, n, dk, dv, lp->gdn_chunk) != 0) {
			a->failed = 1;
			return;
		}
		for (int t = 0; t < n; t++)
			for (int c = 0; c < dv; c++)
				gap = fmax(gap, fabs(MAT_AT(hd->gdn_out, t, c) - MAT_AT(hd->gdn_out_chunk, t, c)));
	}
	a->gdn_gap = gap;
}

/* Self-attention, its weights one column per head, a chunk of 1 … n tokens (the loader says so at its path; the engine's own guard). */
static const char *deltanet_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	if (mat_empty(&lp->gdn_A_log))
		return NULL;
	if (lp->gdn_W_a.rows != cfg->d_model || lp->gdn_W_a.cols != lp->heads || lp->gdn_W_b.rows != cfg->d_model ||
	    lp->gdn_W_b.cols != lp->heads || lp->gdn_A_log.rows * lp->gdn_A_log.cols != lp->heads ||
	    lp->gdn_dt_bias.rows * lp->gdn_dt_bias.cols != lp->heads)
		return "gated_deltanet (its weights' shapes)";
	if (cfg->has_source)
		return "gated_deltanet (with a source)";
	return lp->gdn_chunk < 1 || lp->gdn_chunk > cfg->n ? "gated_deltanet.chunk_size" : NULL;
}

/* Its weights are given matrices (edits follow the rules); the chunk size is a setting. */
static int deltanet_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xc; (void)yc;
	return mat_empty(&xp->gdn_A_log) == mat_empty(&yp->gdn_A_log) && xp->gdn_chunk == yp->gdn_chunk;
}

static void explain_deltanet(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const LayerParams *lp = attn_params(a);
	const AttnHead *hd = &a->head[h];
	const int dk = a->shape.dim[DIM_DK], dv = a->shape.dim[DIM_DV], g = attn_kv_head(a, h);
	const Mat *x = gdn_input(a, lp);
	char x1[32], x2[32], x3[32], x4[32], x5[32];

	switch (which) {
	case AM_GDN_Q:
	case AM_GDN_K:
		strbuf_printf(b, _("%s_%d of the head, divided by its length %s(%s x%s + 1e-6)%s\n"), which == AM_GDN_Q ? "q" : "k", i,
		              celltext_sym(utf8, "\u221a", "sqrt"), celltext_sym(utf8, "\u03a3", "sum"),
		              celltext_sym(utf8, "\u00b2", "^2"),
		              which == AM_GDN_Q ? _(", and by \u221ad_k (the reference scales the query before the recurrence)") : "");
		break;
	case AM_GDN_BETA: {
		const double z = proj(x, i, &lp->gdn_W_b, h);
		strbuf_printf(b, "%s = %s(b) = 1 / (1 + e^(%s)) = %s\n", celltext_sym(utf8, "\u03b2", "beta"),
		              celltext_sym(utf8, "\u03c3", "sigma"), celltext_num(x1, -z, utf8), celltext_num(x2, MAT_AT(hd->gdn_beta, i, 0), utf8));
		strbuf_printf(b, _("(b = x_%d%sW_b[:, %d]: how much of its correction token %d writes, between 0 and 1)\n"), i,
		              celltext_sym(utf8, "\u00b7", "."), h, i);
		break;
	}
	case AM_GDN_G: {
		const double z = proj(x, i, &lp->gdn_W_a, h) + lp->gdn_dt_bias.a[h];
		strbuf_printf(b, "g = %se^%s %s softplus(%s) = %s %s %s = %s\n", celltext_sym(utf8, "\u2212", "-"),
		              celltext_num(x1, lp->gdn_A_log.a[h], utf8), celltext_sym(utf8, "\u00b7", "*"), celltext_num(x2, z, utf8),
		              celltext_num(x3, -exp(lp->gdn_A_log.a[h]), utf8), celltext_sym(utf8, "\u00b7", "*"),
		              celltext_num(x4, softplus(z), utf8), celltext_num(x5, MAT_AT(hd->gdn_g, i, 0), utf8));
		strbuf_printf(b, _("(a + dt_bias = %s; the state is multiplied by e^g = %s at token %d: it only fades)\n"),
		              celltext_num(x1, z, utf8), celltext_num(x2, exp(MAT_AT(hd->gdn_g, i, 0)), utf8), i);
		break;
	}
	case AM_GDN_RECALL:
		strbuf_printf(b, _("(S%sk_%d)_%d: the state after token %d's decay e^g = %s, read at its key\n"),
		              celltext_sym(utf8, "\u1d40", "^T"), i, j, i, celltext_num(x1, exp(MAT_AT(hd->gdn_g, i, 0)), utf8));
		break;
	case AM_GDN_DELTA:
		strbuf_printf(b, "%s(v %s S%sk) = %s %s (%s %s %s) = %s\n", celltext_sym(utf8, "\u03b2", "beta"),
		              celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u1d40", "^T"),
		              celltext_num(x1, MAT_AT(hd->gdn_beta, i, 0), utf8), celltext_sym(utf8, "\u00d7", "*"),
		              celltext_num(x2, MAT_AT(a->V, i, g * dv + j), utf8), celltext_sym(utf8, "\u2212", "-"),
		              celltext_num(x3, MAT_AT(hd->gdn_recall, i, j), utf8), celltext_num(x4, MAT_AT(hd->gdn_delta, i, j), utf8));
		strbuf_printf(b, _("(the delta rule: only what the state got wrong about v_%d is written, at k_%d)\n"), i, i);
		break;
	case AM_GDN_OUT:
		strbuf_printf(b, _("(S%sq)_%d after token %d wrote its correction; the chunked form gives %s (they differ by %s)\n"),
		              celltext_sym(utf8, "\u1d40", "^T"), j, i, celltext_num(x1, MAT_AT(hd->gdn_out_chunk, i, j), utf8),
		              celltext_num(x2, MAT_AT(hd->gdn_out_chunk, i, j) - MAT_AT(hd->gdn_out, i, j), utf8));
		break;
	case AM_GDN_OUT_CHUNK:
		strbuf_printf(b, _("token %d is in chunk %d (tokens %d to %d): its output from the state before the chunk, plus the "
		                   "chunk's own corrections solved at once; token by token gives %s\n"),
		              i, i / lp->gdn_chunk, i / lp->gdn_chunk * lp->gdn_chunk,
		              (i / lp->gdn_chunk + 1) * lp->gdn_chunk - 1 < attn_config(a)->n ? (i / lp->gdn_chunk + 1) * lp->gdn_chunk - 1
		                                                                              : attn_config(a)->n - 1,
		              celltext_num(x1, MAT_AT(hd->gdn_out, i, j), utf8));
		break;
	case AM_GDN_STATE:
		strbuf_printf(b, _("the state after the last token: %d %s %d numbers, however many tokens came before\n"), dk,
		              celltext_sym(utf8, "\u00d7", "x"), dv);
		break;
	default:
		break;
	}
}

static int operands_deltanet(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const int dk = a->shape.dim[DIM_DK], dv = a->shape.dim[DIM_DV], g = attn_kv_head(a, h);

	switch (which) {
	case AM_GDN_Q:
		out[0] = (ExplainOperand){ AM_Q, h, i, h * dk + j };
		return 1;
	case AM_GDN_K:
		out[0] = (ExplainOperand){ AM_K, h, i, g * dk + j };
		return 1;
	case AM_GDN_BETA:
		out[0] = (ExplainOperand){ AM_GDN_W_B, h, -1, h };
		return 1;
	case AM_GDN_G:
		out[0] = (ExplainOperand){ AM_GDN_W_A, h, -1, h };
		out[1] = (ExplainOperand){ AM_GDN_A_LOG, h, 0, h };
		out[2] = (ExplainOperand){ AM_GDN_DT_BIAS, h, 0, h };
		return 3;
	case AM_GDN_RECALL:
		out[0] = (ExplainOperand){ AM_GDN_K, h, i, -1 };
		return 1;
	case AM_GDN_DELTA:
		out[0] = (ExplainOperand){ AM_GDN_BETA, h, i, 0 };
		out[1] = (ExplainOperand){ AM_V, h, i, g * dv + j };
		out[2] = (ExplainOperand){ AM_GDN_RECALL, h, i, j };
		return 3;
	case AM_GDN_OUT:
	case AM_GDN_OUT_CHUNK:
		out[0] = (ExplainOperand){ AM_GDN_Q, h, i, -1 };
		out[1] = (ExplainOperand){ AM_GDN_DELTA, h, -1, j };
		return 2;
	default:
		return 0;
	}
}

const AttnVariant variant_deltanet = {
	.name = "gated_deltanet",
	.feature = FEAT_DELTANET,
	.stage = STAGE_DELTANET,
	.kernel = pass_deltanet, /* no rules: rerun after any change */
	.explain = explain_deltanet,
	.operands = operands_deltanet,
	.fault = deltanet_fault,
	.same = deltanet_same,
};
