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
 * tested below 1e-12).
 *
 * As the layer's token mixer ("mixer": true, FEAT_GDN_MIXER), as
 * Qwen3NextGatedDeltaNet.forward computes it: the recurrence reads q, k and v
 * from gdn_conv, the columns of [Q | K | V] after the short causal conv1d and
 * SiLU (stage deltanet_conv: `mixed_qkv = self.act(self.conv1d(mixed_qkv)
 * [:, :, :seq_len])`, depthwise, no bias), and its output goes through
 * Qwen3NextRMSNormGated (stage deltanet_norm: o / √(mean(o²) + eps) · w ⊙
 * SiLU(z), z = x·W_z, in_proj_qkvz's z), which concat takes in place of
 * softmax's weighted (head_row): W_o (out_proj) and the residual read it.
 * The state after every token is kept too (gdn_states, a row per token).
 *
 * With "v_heads" (Qwen3-Next's linear_num_value_heads, r = v_heads / heads to a head): the head's q and k serve
 * r value heads (the reference's query.repeat_interleave(r), key's too), value head h·r + s being the head's v
 * columns [s·w, (s+1)·w), w = d_v / r (fix_query_key_value_ordering's order), with its own β and g (W_a, W_b,
 * A_log, dt_bias column h·r + s: gdn_beta and gdn_g column s) and its own RMS in the gated norm (gdn_rms column
 * s, gdn_norm w numbers). The head's matrices keep its value heads side by side (gdn_state's columns likewise).
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

/*
 * out[t·E + e] = proj(x, t, w, e) for every token t and column e < E of w: the same sums in the same order, a
 * token's E of them side by side along a row of w (one at a time, each was a chain of d_model adds down a column).
 */
static void proj_all(const Mat *x, const Mat *w, double *out)
{
	const int E = w->cols;

	for (int t = 0; t < x->rows; t++) {
		double *o = &out[(size_t)t * E];
		for (int e = 0; e < E; e++)
			o[e] = 0.0;
		for (int c = 0; c < x->cols; c++) {
			const double xc = MAT_AT(*x, t, c), *wc = &MAT_AT(*w, c, 0);
			for (int e = 0; e < E; e++)
				o[e] += xc * wc[e];
		}
	}
}

/* Where the recurrence reads a head's q, k and v: the projections, or (as the mixer) their columns after the conv. */
typedef struct GdnSrc {
	const Mat *q, *k, *v;
	int q0, k0, v0; /* the head's first column in each */
} GdnSrc;

static GdnSrc gdn_src(const Attn *a, int h)
{
	const LayerParams *lp = attn_params(a);
	const int dk = a->shape.dim[DIM_DK], dv = a->shape.dim[DIM_DV], g = attn_kv_head(a, h);
	const int kq = a->heads * dk, kk = a->shape.dim[DIM_GDK];

	if (lp->gdn_mixer)
		return (GdnSrc){ &a->gdn_conv, &a->gdn_conv, &a->gdn_conv, h * dk, kq + g * dk, kq + kk + g * dv };
	return (GdnSrc){ &a->Q, &a->K, &a->V, h * dk, g * dk, g * dv };
}

/*
 * acc[c] += Σ_i x[i]·M[i][c] (M rows ld apart), for c < cols: each column's
 * sum takes its terms in the order of i, as the loop down a column did, the
 * columns side by side a row of M at a time (the same bits, read along rows).
 */
static void rows_into(int k, int cols, const double *x, const double *M, size_t ld, double *acc)
{
	for (int i = 0; i < k; i++) {
		const double xi = x[i], *Mi = M + (size_t)i * ld;
		for (int c = 0; c < cols; c++)
			acc[c] += Mi[c] * xi;
	}
}

/*
 * The recurrence token by token (MAT_WIDE: its loops go along rows of S, each number's own arithmetic):
 * gdn_recall, gdn_delta, gdn_out, the last state (and, as the mixer, each token's).
 * With r value heads to the head (Qwen3-Next's linear_num_value_heads = r · linear_num_key_heads), the state's
 * columns [s·w, (s+1)·w), w = d_v / r, are value head s's: its own decay e^(g[t][s]) and β[t][s], the head's q and k
 * (the reference's query.repeat_interleave(r) and key's); every column of S evolves on its own given those.
 */
MAT_WIDE static void gdn_recurrent(AttnHead *hd, const GdnSrc *src, int n, int dk, int dv, int w)
{
	double decay[LESSON_MAX_DIM]; /* each column's e^g of the token, once (not once a cell of S) */
	double *S = hd->gdn_state.a;

	memset(S, 0, (size_t)dk * (size_t)dv * sizeof(double));
	for (int t = 0; t < n; t++) {
		double *recall = &MAT_AT(hd->gdn_recall, t, 0), *out = &MAT_AT(hd->gdn_out, t, 0);
		const double *k = &MAT_AT(hd->gdn_k, t, 0), *q = &MAT_AT(hd->gdn_q, t, 0), *delta = &MAT_AT(hd->gdn_delta, t, 0);
		for (int c = 0; c < dv; c++) /* one e^g a value head, the same number in each of its w columns */
			decay[c] = c % w == 0 ? exp(MAT_AT(hd->gdn_g, t, c / w)) : decay[c - 1];
		/* S ← e^g S, and recall_c = Σ_i S[i][c]·k̂_i, a row of S at a time (each column's sum in the order of i) */
		memset(recall, 0, (size_t)dv * sizeof *recall);
		for (int i = 0; i < dk; i++) {
			double *Si = &S[(size_t)i * dv];
			for (int c = 0; c < dv; c++) {
				Si[c] *= decay[c];
				recall[c] += Si[c] * k[i];
			}
		}
		for (int c = 0; c < dv; c++)
			MAT_AT(hd->gdn_delta, t, c) = MAT_AT(hd->gdn_beta, t, c / w) * (MAT_AT(*src->v, t, src->v0 + c) - recall[c]);
		/* S ← S + k̂ δᵀ, and out_c = Σ_i S[i][c]·q̂_i, likewise */
		memset(out, 0, (size_t)dv * sizeof *out);
		for (int i = 0; i < dk; i++) {
			double *Si = &S[(size_t)i * dv];
			for (int c = 0; c < dv; c++) {
				Si[c] += k[i] * delta[c];
				out[c] += Si[c] * q[i];
			}
		}
		if (!mat_empty(&hd->gdn_states))
			memcpy(&MAT_AT(hd->gdn_states, t, 0), hd->gdn_state.a, (size_t)dk * (size_t)dv * sizeof(double));
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
MAT_WIDE static int gdn_chunked(AttnHead *hd, const GdnSrc *src, int n, int dk, int dv, int C, int vh)
{
	const int c0 = vh * dv; /* value head vh of the head: columns [c0, c0 + dv) of its v and output, β and g column vh */

	/* besides: e^(G_i) (EG), the chunk's (q_i·k_j) e^(G_i − G_j) (P, L·L) and e^(G_last − G_j) (D), each once */
	double *T = malloc((size_t)C * C * sizeof *T), *G = malloc((size_t)C * sizeof *G);
	double *EG = malloc((size_t)C * sizeof *EG), *P = malloc((size_t)C * C * sizeof *P), *D = malloc((size_t)C * sizeof *D);
	double *qe = malloc((size_t)dk * sizeof *qe);
	double *U = malloc((size_t)C * dv * sizeof *U), *W = malloc((size_t)C * dk * sizeof *W);
	double *S = calloc((size_t)dk * dv, sizeof *S), *S2 = malloc((size_t)dk * dv * sizeof *S2);
	double *acc = malloc((size_t)dv * sizeof *acc); /* a row's sums, side by side (rows_into) */
	int r = -1;

	if (T == NULL || G == NULL || U == NULL || W == NULL || S == NULL || S2 == NULL || EG == NULL || P == NULL ||
	    D == NULL || qe == NULL || acc == NULL)
		goto out;
	for (int t0 = 0; t0 < n; t0 += C) {
		const int L = t0 + C <= n ? C : n - t0;
		for (int i = 0; i < L; i++)
			G[i] = (i > 0 ? G[i - 1] : 0.0) + MAT_AT(hd->gdn_g, t0 + i, vh);
		const double *k0 = &MAT_AT(hd->gdn_k, t0, 0);
		const size_t ldk = (size_t)hd->gdn_k.cols;
		for (int i = 0; i < L; i++) {
			EG[i] = exp(G[i]);
			D[i] = exp(G[L - 1] - G[i]);
			mat_dots_exact(&MAT_AT(hd->gdn_q, t0 + i, 0), k0, ldk, dk, i + 1, &P[i * C]); /* q_i·k_j, eight at a time */
			for (int j = 0; j <= i; j++)
				P[i * C + j] = P[i * C + j] * exp(G[i] - G[j]);
		}
		/* A_ij = −β_i (k_i·k_j) e^(G_i − G_j) for j < i; then T = (I − A)⁻¹ row by row */
		for (int i = 0; i < L; i++) {
			mat_dots_exact(&MAT_AT(hd->gdn_k, t0 + i, 0), k0, ldk, dk, i, &T[i * C]); /* k_i·k_j */
			for (int j = 0; j < L; j++)
				T[i * C + j] = j < i ? -MAT_AT(hd->gdn_beta, t0 + i, vh) * T[i * C + j] * exp(G[i] - G[j]) : 0.0;
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
		/*
		 * The sums below go down columns (of v, k, S, U): each is taken a row at a time, every column's sum
		 * side by side, its terms in the same order and each term's factors multiplied in the same order as
		 * the loop down one column (T_ij·β_j, then ·v_jc; then ·e^(G_j) for W), so the same bits, read along rows.
		 */
		for (int i = 0; i < L; i++) {
			double *u = &U[i * dv], *w = &W[i * dk];
			memset(u, 0, (size_t)dv * sizeof *u);
			memset(w, 0, (size_t)dk * sizeof *w);
			for (int j = 0; j <= i; j++) {
				const double tb = T[i * C + j] * MAT_AT(hd->gdn_beta, t0 + j, vh);
				const double *vj = &MAT_AT(*src->v, t0 + j, src->v0 + c0), *kj = &MAT_AT(hd->gdn_k, t0 + j, 0);
				for (int c = 0; c < dv; c++)
					u[c] += tb * vj[c];
				for (int c = 0; c < dk; c++)
					w[c] += tb * kj[c] * EG[j];
			}
		}
		/* V' = U − W S, kept in U */
		for (int i = 0; i < L; i++) {
			memset(acc, 0, (size_t)dv * sizeof *acc);
			rows_into(dk, dv, &W[i * dk], S, (size_t)dv, acc); /* (W S)_ic = Σ_k S_kc·W_ik */
			for (int c = 0; c < dv; c++)
				U[i * dv + c] -= acc[c];
		}
		for (int i = 0; i < L; i++) {
			double *o = &MAT_AT(hd->gdn_out_chunk, t0 + i, c0);
			for (int k = 0; k < dk; k++)
				qe[k] = MAT_AT(hd->gdn_q, t0 + i, k) * EG[i];
			memset(acc, 0, (size_t)dv * sizeof *acc);
			rows_into(dk, dv, qe, S, (size_t)dv, acc);           /* Σ_k S_kc·qe_k, then on in the same chain: */
			rows_into(i + 1, dv, &P[i * C], U, (size_t)dv, acc); /* Σ_{j ≤ i} U_jc·P_ij */
			memcpy(o, acc, (size_t)dv * sizeof *o);
		}
		for (int k = 0; k < dk; k++) {
			double *s2 = &S2[k * dv];
			for (int c = 0; c < dv; c++)
				s2[c] = S[k * dv + c] * EG[L - 1];
			for (int j = 0; j < L; j++) {
				const double kd = MAT_AT(hd->gdn_k, t0 + j, k) * D[j];
				for (int c = 0; c < dv; c++)
					s2[c] += kd * U[j * dv + c];
			}
		}
		memcpy(S, S2, (size_t)dk * dv * sizeof *S);
	}
	r = 0;
out:
	free(T), free(G), free(U), free(W), free(S), free(S2), free(EG), free(P), free(D), free(qe), free(acc);
	return r;
}

static void pass_deltanet(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const Mat *x = gdn_input(a, lp);
	const int n = cfg->n, dk = a->shape.dim[DIM_DK], dv = a->shape.dim[DIM_DV], r = layer_gdn_r(lp), w = dv / r;
	const int E = lp->gdn_W_b.cols; /* every value head's column */
	double gap = 0.0;
	/* x·W_b and x·W_a, every token's and value head's (n × E each) */
	double *xb = malloc((size_t)x->rows * (size_t)E * sizeof *xb), *xa = malloc((size_t)x->rows * (size_t)E * sizeof *xa);

	if (xb == NULL || xa == NULL) {
		free(xb), free(xa);
		a->failed = 1;
		return;
	}
	proj_all(x, &lp->gdn_W_b, xb);
	proj_all(x, &lp->gdn_W_a, xa);
	for (int h = 0; h < a->heads; h++) {
		AttnHead *hd = &a->head[h];
		const GdnSrc src = gdn_src(a, h);
		for (int t = 0; t < n; t++) {
			l2_row(&MAT_AT(*src.q, t, src.q0), 1, dk, 1.0 / sqrt((double)dk), &MAT_AT(hd->gdn_q, t, 0));
			l2_row(&MAT_AT(*src.k, t, src.k0), 1, dk, 1.0, &MAT_AT(hd->gdn_k, t, 0));
			for (int s = 0, e = h * r; s < r; s++, e++) { /* value head e = h·r + s: W_a, W_b, A_log, dt_bias column e */
				MAT_AT(hd->gdn_beta, t, s) = 1.0 / (1.0 + exp(-xb[(size_t)t * E + e]));
				MAT_AT(hd->gdn_g, t, s) = -exp(lp->gdn_A_log.a[e]) * softplus(xa[(size_t)t * E + e] + lp->gdn_dt_bias.a[e]);
			}
		}
		gdn_recurrent(hd, &src, n, dk, dv, w);
		for (int s = 0; s < r; s++)
			if (gdn_chunked(hd, &src, n, dk, w, lp->gdn_chunk, s) != 0) {
				a->failed = 1;
				free(xb), free(xa);
				return;
			}
		for (int t = 0; t < n; t++)
			for (int c = 0; c < dv; c++)
				gap = fmax(gap, fabs(MAT_AT(hd->gdn_out, t, c) - MAT_AT(hd->gdn_out_chunk, t, c)));
	}
	a->gdn_gap = gap;
	free(xb), free(xa);
}

/*
 * The short causal conv1d over every column c of [Q | K | V] (K the kernel size), then SiLU:
 *   gdn_conv[t][c] = SiLU(Σ_{s=0}^{K−1} conv1d[s][c] · x[t − K + 1 + s][c]),  x of a token before the first 0
 * (Qwen3NextGatedDeltaNet: nn.Conv1d(groups=conv_dim, padding=K − 1, bias=False), the first seq_len outputs, SiLU).
 */
static double conv_sum(const Attn *a, const Mat *w, int t, int c)
{
	const int K = w->rows, hq = a->Q.cols, hk = a->K.cols;
	double sum = 0.0;

	for (int s = 0; s < K; s++) {
		const int u = t - K + 1 + s;
		if (u < 0)
			continue;
		sum += MAT_AT(*w, s, c) * (c < hq ? MAT_AT(a->Q, u, c) : c < hq + hk ? MAT_AT(a->K, u, c - hq) : MAT_AT(a->V, u, c - hq - hk));
	}
	return sum;
}

static void pass_deltanet_conv(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	for (int t = 0; t < cfg->n; t++)
		for (int c = 0; c < a->gdn_conv.cols; c++)
			MAT_AT(a->gdn_conv, t, c) = attn_silu(conv_sum(a, &lp->gdn_conv, t, c));
	a->nonfinite |= mat_nonfinite(a->gdn_conv.a, (size_t)a->gdn_conv.rows * (size_t)a->gdn_conv.cols);
}

/*
 * What a layer caches for the tokens to come, in numbers (issue 24 §3, the hybrid): row 0 this layer as Gated
 * DeltaNet, the conv's last K − 1 rows of [Q | K | V] and each head's d_k × d_v state, the same however many tokens
 * came (transformers' Qwen3NextDynamicCache keeps K rows of the conv, vLLM K − 1: the next token's conv reads K − 1);
 * row 1 the same sizes as full attention, a key and a value row per token, g·(d_k + d_v); rows 2 and 3 Qwen3-Next-80B-A3B's
 * (config.json: linear_conv_kernel_dim 4, linear_num_key_heads 16, linear_num_value_heads 32, linear_key_head_dim and
 * linear_value_head_dim 128; num_key_value_heads 2, head_dim 256). Columns: added per token, then at n, 4096 and
 * 262144 tokens (max_position_embeddings).
 */
enum { GDN_CACHE_LONG = 262144 };

static void gdn_cache_row(Mat *c, int row, double fixed, double per_token, int n)
{
	const double at[4] = { 0, n, 4096, GDN_CACHE_LONG };

	MAT_AT(*c, row, 0) = per_token;
	for (int k = 1; k < 4; k++)
		MAT_AT(*c, row, k) = fixed + per_token * at[k];
}

static void gdn_cache(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const double dk = a->shape.dim[DIM_DK], dv = a->shape.dim[DIM_DV], g = a->shape.kv_heads;

	gdn_cache_row(&a->gdn_cache, 0, (lp->gdn_conv.rows - 1.0) * a->gdn_conv.cols + a->heads * dk * dv, 0, cfg->n);
	gdn_cache_row(&a->gdn_cache, 1, 0, g * (dk + dv), cfg->n);
	gdn_cache_row(&a->gdn_cache, 2, 3.0 * (2 * 16 * 128 + 32 * 128) + 32.0 * 128 * 128, 0, cfg->n);
	gdn_cache_row(&a->gdn_cache, 3, 0, 2.0 * (256 + 256), cfg->n);
}

/*
 * z = x·W_z; per head, value head s and token rms = √(mean(o²) + eps) of gdn_out's row (its w = d_v / r columns
 * of value head s), gated = o / rms · w ⊙ SiLU(z) (Qwen3NextRMSNormGated, over each value head's d_v).
 */
static void pass_deltanet_norm(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int dv = a->shape.dim[DIM_DV], r = layer_gdn_r(lp), w = dv / r;

	a->nonfinite |= mat_mul(gdn_input(a, lp), &lp->gdn_W_z, &a->gdn_z);
	for (int h = 0; h < a->heads; h++) {
		AttnHead *hd = &a->head[h];
		for (int t = 0; t < cfg->n; t++) {
			for (int s = 0; s < r; s++) {
				double ss = 0.0;
				for (int c = s * w; c < (s + 1) * w; c++)
					ss += MAT_AT(hd->gdn_out, t, c) * MAT_AT(hd->gdn_out, t, c);
				MAT_AT(hd->gdn_rms, t, s) = sqrt(ss / w + lp->gdn_eps);
			}
			for (int c = 0; c < dv; c++)
				MAT_AT(hd->gdn_gated, t, c) = MAT_AT(hd->gdn_out, t, c) / MAT_AT(hd->gdn_rms, t, c / w) *
				                               lp->gdn_norm.a[c % w] * attn_silu(MAT_AT(a->gdn_z, t, h * dv + c));
			a->nonfinite |= mat_nonfinite(&MAT_AT(hd->gdn_gated, t, 0), (size_t)dv);
		}
	}
}

/* Head h's d_v numbers of row i in concat, as the mixer: its gated output. */
static const double *deltanet_head_row(const Attn *a, int h, int i)
{
	return &MAT_AT(a->head[h].gdn_gated, i, 0);
}

/* Self-attention, its weights one column per head, a chunk of 1 … n tokens (the loader says so at its path; the engine's own guard). */
static const char *deltanet_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	const int vh = lp->heads * layer_gdn_r(lp);

	if (mat_empty(&lp->gdn_A_log))
		return NULL;
	if (lp->gdn_v_heads != 0 && (!lp->gdn_mixer || lp->gdn_v_heads % lp->heads != 0 || lp->d_v % layer_gdn_r(lp) != 0 ||
	                             (lp->kv_heads > 0 && lp->kv_heads != lp->heads)))
		return "gated_deltanet.v_heads";
	if (lp->gdn_W_a.rows != cfg->d_model || lp->gdn_W_a.cols != vh || lp->gdn_W_b.rows != cfg->d_model ||
	    lp->gdn_W_b.cols != vh || lp->gdn_A_log.rows * lp->gdn_A_log.cols != vh ||
	    lp->gdn_dt_bias.rows * lp->gdn_dt_bias.cols != vh)
		return "gated_deltanet (its weights' shapes)";
	if (cfg->has_source)
		return "gated_deltanet (with a source)";
	if (lp->gdn_mixer) {
		const int g = lp->kv_heads > 0 ? lp->kv_heads : lp->heads;
		if (lp->gdn_conv.rows < 1 || lp->gdn_conv.cols != lp->heads * lp->d_k + g * (lp->d_k + lp->d_v))
			return "gated_deltanet.conv1d";
		if (lp->gdn_W_z.rows != cfg->d_model || lp->gdn_W_z.cols != lp->heads * lp->d_v)
			return "gated_deltanet.W_z";
		if (lp->gdn_norm.rows * lp->gdn_norm.cols != lp->d_v / layer_gdn_r(lp) || !(lp->gdn_eps > 0))
			return "gated_deltanet.norm";
	}
	return lp->gdn_chunk < 1 || lp->gdn_chunk > cfg->n ? "gated_deltanet.chunk_size" : NULL;
}

/* Its weights are given matrices (edits follow the rules); the chunk size is a setting. */
static int deltanet_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xc; (void)yc;
	return mat_empty(&xp->gdn_A_log) == mat_empty(&yp->gdn_A_log) && xp->gdn_chunk == yp->gdn_chunk &&
	       xp->gdn_mixer == yp->gdn_mixer && xp->gdn_v_heads == yp->gdn_v_heads && xp->gdn_eps == yp->gdn_eps && xp->gdn_conv.rows == yp->gdn_conv.rows;
}

static void explain_deltanet(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const LayerParams *lp = attn_params(a);
	const AttnHead *hd = &a->head[h];
	const int dk = a->shape.dim[DIM_DK], dv = a->shape.dim[DIM_DV];
	const Mat *x = gdn_input(a, lp);
	const GdnSrc src = gdn_src(a, h);
	const int r = layer_gdn_r(lp), w = dv / r, e = h * r + j; /* e: value head j's column in W_a, W_b, A_log, dt_bias */
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
		const double z = proj(x, i, &lp->gdn_W_b, e);
		strbuf_printf(b, "%s = %s(b) = 1 / (1 + e^(%s)) = %s\n", celltext_sym(utf8, "\u03b2", "beta"),
		              celltext_sym(utf8, "\u03c3", "sigma"), celltext_num(x1, -z, utf8), celltext_num(x2, MAT_AT(hd->gdn_beta, i, j), utf8));
		strbuf_printf(b, _("(b = x_%d%sW_b[:, %d]: how much of its correction token %d writes, between 0 and 1)\n"), i,
		              celltext_sym(utf8, "\u00b7", "."), e, i);
		break;
	}
	case AM_GDN_G: {
		const double z = proj(x, i, &lp->gdn_W_a, e) + lp->gdn_dt_bias.a[e];
		strbuf_printf(b, "g = %se^%s %s softplus(%s) = %s %s %s = %s\n", celltext_sym(utf8, "\u2212", "-"),
		              celltext_num(x1, lp->gdn_A_log.a[e], utf8), celltext_sym(utf8, "\u00b7", "*"), celltext_num(x2, z, utf8),
		              celltext_num(x3, -exp(lp->gdn_A_log.a[e]), utf8), celltext_sym(utf8, "\u00b7", "*"),
		              celltext_num(x4, softplus(z), utf8), celltext_num(x5, MAT_AT(hd->gdn_g, i, j), utf8));
		strbuf_printf(b, _("(a + dt_bias = %s; the state is multiplied by e^g = %s at token %d: it only fades)\n"),
		              celltext_num(x1, z, utf8), celltext_num(x2, exp(MAT_AT(hd->gdn_g, i, j)), utf8), i);
		break;
	}
	case AM_GDN_RECALL:
		strbuf_printf(b, _("(S%sk_%d)_%d: the state after token %d's decay e^g = %s, read at its key\n"),
		              celltext_sym(utf8, "\u1d40", "^T"), i, j, i, celltext_num(x1, exp(MAT_AT(hd->gdn_g, i, j / w)), utf8));
		break;
	case AM_GDN_DELTA:
		strbuf_printf(b, "%s(v %s S%sk) = %s %s (%s %s %s) = %s\n", celltext_sym(utf8, "\u03b2", "beta"),
		              celltext_sym(utf8, "\u2212", "-"), celltext_sym(utf8, "\u1d40", "^T"),
		              celltext_num(x1, MAT_AT(hd->gdn_beta, i, j / w), utf8), celltext_sym(utf8, "\u00d7", "*"),
		              celltext_num(x2, MAT_AT(*src.v, i, src.v0 + j), utf8), celltext_sym(utf8, "\u2212", "-"),
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
	case AM_GDN_STATES:
		strbuf_printf(b, _("S[%d][%d] after token %d wrote its correction: %d %s %d numbers, whatever the token's position\n"),
		              j / dv, j % dv, i, dk, celltext_sym(utf8, "\u00d7", "x"), dv);
		break;
	case AM_GDN_CONV: {
		const double z = conv_sum(a, &lp->gdn_conv, i, j);
		strbuf_printf(b, "SiLU(%s) = %s %s %s(%s) = %s\n", celltext_num(x1, z, utf8), celltext_num(x2, z, utf8),
		              celltext_sym(utf8, "\u00b7", "*"), celltext_sym(utf8, "\u03c3", "sigmoid"), celltext_num(x3, z, utf8),
		              celltext_num(x4, MAT_AT(a->gdn_conv, i, j), utf8));
		strbuf_printf(b, _("(column %d of [Q | K | V] at tokens %d to %d times column %d of conv1d, the last row for token %d "
		                   "itself; tokens before the first count as 0)\n"),
		              j, i - lp->gdn_conv.rows + 1 > 0 ? i - lp->gdn_conv.rows + 1 : 0, i, j, i);
		break;
	}
	case AM_GDN_Z:
		strbuf_printf(b, _("= %s row %d %s W_z column %d: the gate of head %d's output, column %d\n"),
		              matrix_name(x == &a->X ? AM_X : AM_NORM1), i, celltext_sym(utf8, "\u00b7", "."), j, j / dv, j % dv);
		break;
	case AM_GDN_RMS:
		strbuf_printf(b, _("%s(mean of gdn_out row %d squared + eps) = %s (eps = %s)\n"), celltext_sym(utf8, "\u221a", "sqrt"), i,
		              celltext_num(x1, MAT_AT(hd->gdn_rms, i, j), utf8), celltext_num(x2, lp->gdn_eps, utf8));
		break;
	case AM_GDN_CACHE: {
		static const char *const rows[4] = {
			N_("this layer as Gated DeltaNet: the conv's last K - 1 rows of [Q | K | V] and a d_k x d_v state a head, "
			   "the same for any number of tokens"),
			N_("the same sizes as full attention: a key and a value row a token, g x (d_k + d_v) numbers each"),
			N_("a Gated DeltaNet layer of Qwen3-Next-80B: 3 x 8192 conv numbers and 32 states of 128 x 128"),
			N_("a full-attention layer of Qwen3-Next-80B: 2 key/value heads of 256, 1024 numbers a token"),
		};
		static const char *const cols[4] = { N_("added by each new token"), N_("at this lesson's tokens"),
			                              N_("at 4096 tokens"), N_("at 262144 tokens, its longest context") };
		if (i >= 0 && i < 4 && j >= 0 && j < 4)
			strbuf_printf(b, "(%s; %s)\n", _(rows[i]), _(cols[j]));
		break;
	}
	case AM_GDN_GATED: {
		const double z = MAT_AT(a->gdn_z, i, h * dv + j);
		strbuf_printf(b, "o / rms %s w %s SiLU(z) = %s / %s %s %s %s %s = %s\n", celltext_sym(utf8, "\u00b7", "*"),
		              celltext_sym(utf8, "\u2299", "*"), celltext_num(x1, MAT_AT(hd->gdn_out, i, j), utf8),
		              celltext_num(x2, MAT_AT(hd->gdn_rms, i, j / w), utf8), celltext_sym(utf8, "\u00b7", "*"),
		              celltext_num(x3, lp->gdn_norm.a[j % w], utf8), celltext_sym(utf8, "\u00b7", "*"),
		              celltext_num(x4, attn_silu(z), utf8), celltext_num(x5, MAT_AT(hd->gdn_gated, i, j), utf8));
		strbuf_printf(b, _("(SiLU(z) = SiLU(%s): token %d's own gate on head %d's output; concat and W_o read this)\n"),
		              celltext_num(x1, z, utf8), i, h);
		break;
	}
	default:
		break;
	}
}

static int operands_deltanet(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const int dv = a->shape.dim[DIM_DV], mixer = attn_params(a)->gdn_mixer, r = layer_gdn_r(attn_params(a)), w = dv / r;
	const GdnSrc src = gdn_src(a, h);

	switch (which) {
	case AM_GDN_Q:
		out[0] = (ExplainOperand){ mixer ? AM_GDN_CONV : AM_Q, h, i, src.q0 + j };
		return 1;
	case AM_GDN_K:
		out[0] = (ExplainOperand){ mixer ? AM_GDN_CONV : AM_K, h, i, src.k0 + j };
		return 1;
	case AM_GDN_CONV: {
		const int hq = a->Q.cols, hk = a->K.cols;
		out[0] = (ExplainOperand){ j < hq ? AM_Q : j < hq + hk ? AM_K : AM_V, 0, -1, j < hq ? j : j < hq + hk ? j - hq : j - hq - hk };
		out[1] = (ExplainOperand){ AM_GDN_CONV_W, 0, -1, j };
		return 2;
	}
	case AM_GDN_Z:
		out[0] = (ExplainOperand){ gdn_input(a, attn_params(a)) == &a->X ? AM_X : AM_NORM1, 0, i, -1 };
		out[1] = (ExplainOperand){ AM_GDN_W_Z, 0, -1, j };
		return 2;
	case AM_GDN_STATES:
		out[0] = (ExplainOperand){ AM_GDN_K, h, i, j / dv };
		out[1] = (ExplainOperand){ AM_GDN_DELTA, h, i, j % dv };
		return 2;
	case AM_GDN_RMS:
		out[0] = (ExplainOperand){ AM_GDN_OUT, h, i, -1 };
		return 1;
	case AM_GDN_GATED:
		out[0] = (ExplainOperand){ AM_GDN_OUT, h, i, j };
		out[1] = (ExplainOperand){ AM_GDN_RMS, h, i, j / w };
		out[2] = (ExplainOperand){ AM_GDN_NORM_W, 0, 0, j % w };
		out[3] = (ExplainOperand){ AM_GDN_Z, h, i, h * dv + j };
		return 4;
	case AM_GDN_BETA:
		out[0] = (ExplainOperand){ AM_GDN_W_B, h, -1, h * r + j };
		return 1;
	case AM_GDN_G:
		out[0] = (ExplainOperand){ AM_GDN_W_A, h, -1, h * r + j };
		out[1] = (ExplainOperand){ AM_GDN_A_LOG, h, 0, h * r + j };
		out[2] = (ExplainOperand){ AM_GDN_DT_BIAS, h, 0, h * r + j };
		return 3;
	case AM_GDN_RECALL:
		out[0] = (ExplainOperand){ AM_GDN_K, h, i, -1 };
		return 1;
	case AM_GDN_DELTA:
		out[0] = (ExplainOperand){ AM_GDN_BETA, h, i, j / w };
		out[1] = (ExplainOperand){ mixer ? AM_GDN_CONV : AM_V, h, i, src.v0 + j };
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

const AttnVariant variant_deltanet_conv = {
	.name = "deltanet_conv",
	.feature = FEAT_GDN_MIXER,
	.stage = STAGE_GDN_CONV,
	.kernel = pass_deltanet_conv, /* no rules: rerun after any change */
	.checks_itself = 1,
	.explain = explain_deltanet,
	.operands = operands_deltanet,
};

const AttnVariant variant_deltanet_norm = {
	.name = "deltanet_norm",
	.feature = FEAT_GDN_MIXER,
	.stage = STAGE_GDN_NORM,
	.kernel = pass_deltanet_norm,
	.checks_itself = 1,
	.explain = explain_deltanet,
	.operands = operands_deltanet,
	.head_row = deltanet_head_row,
	.head_row_of = AM_GDN_GATED,
};

const AttnVariant variant_deltanet_cache = {
	.name = "deltanet_cache",
	.feature = FEAT_GDN_MIXER,
	.stage = STAGE_GDN_CACHE,
	.kernel = gdn_cache, /* sizes only: rerun after any change, as its neighbours */
	.explain = explain_deltanet,
	.operands = operands_deltanet,
};
