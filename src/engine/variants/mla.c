/* mla.c: multi-head latent attention as DeepSeek-V2/V3 compute it (issue 24 §1), three stages.
 *
 * Following transformers' models/deepseek_v3/modeling_deepseek_v3.py,
 * DeepseekV3Attention.forward: the query from a compressed c_Q =
 * RMSNorm(x·W_qa) (q_a_layernorm), q = c_Q·W_qb (or x·W_q), split per head
 * into q_nope and q_pe; [c_KV | k_pe] = x·W_kva (kv_a_proj_with_mqa);
 * [k_nope | v] = RMSNorm(c_KV)·W_kvb per head (kv_a_layernorm, kv_b_proj);
 * q_pe and the one k_pe every head shares turned by RoPE in DeepSeek's
 * interleaved pairs (apply_rotary_pos_emb_interleave: pair (2i, 2i+1) turns
 * by p·θ^(−2i/d_rope), the turned evens written first, then the odds).
 * Q = [q_nope | q_pe] and K = [k_nope | k_pe] a head are the core's Q and K,
 * V its V: the core's scores (q_nope·k_nope + q_pe·k_pe), its scale
 * 1/√(d_nope + d_rope) (d_k), mask, softmax, weighted sum and W_o follow.
 *
 *   latent     (variant_mla)        c_Q, c_KV, k_pe           instead of project
 *   mla_heads  (variant_mla_heads)  q_nope, q_pe, k_pe_rot, Q, K, V
 *   absorb     (variant_mla_absorb) q̃ = q_nope·W^Kᵀ, absorbed = q̃·c_KVᵀ + q_pe·k_peᵀ,
 *                                   absorbed_out = (weights·c_KV)·W^V, their
 *                                   largest distance from scores and weighted,
 *                                   and what each kind of attention caches.
 */
#include "engine/variants/mla.h"
#include "engine/variants/variants.h"
#include "base/i18n.h"
#include "base/strbuf.h"
#include "model/ropefreq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the passes */

/* The rows the attention reads: norm1 in a pre-norm block, else X (n × d_model). */
static const Mat *mla_input(const Attn *a, const LayerParams *lp)
{
	return lp->block.present && lp->block.norm == NORM_PRE ? &a->norm1 : &a->X;
}

/* 1 / √(mean(x²) + eps) of x (len numbers): DeepseekV3RMSNorm's rsqrt. */
static double rms_inv(const double *x, int len, double eps)
{
	double ms = 0.0;

	for (int j = 0; j < len; j++)
		ms += x[j] * x[j];
	return 1.0 / sqrt(ms / len + eps);
}

/* Each row of x (rows × len, stride ld) := g ⊙ (x / √(mean(x²) + eps)). */
static void rmsnorm_rows(double *x, int rows, int len, size_t ld, const double *g, double eps)
{
	for (int i = 0; i < rows; i++) {
		double *row = &x[(size_t)i * ld];
		const double inv = rms_inv(row, len, eps);
		for (int j = 0; j < len; j++)
			row[j] = g[j] * (row[j] * inv);
	}
}

/*
 * The frequency of each of the d/2 pairs into inv, and the factor cos and sin
 * are multiplied by (returned): plain θ^(−2p/d) and 1, or a DeepSeek model's
 * YaRN (ModelConfig.rope_scaling, read by the loader: ropefreq.h's
 * _compute_yarn_parameters over qk_rope_head_dim columns, its attention
 * factor get_mscale(s, mscale)/get_mscale(s, mscale_all_dim)). The model's own
 * RoPE is off (MLA turns q_pe and k_pe itself), so its rope_base is MLA's
 * rope_theta there.
 */
static double mla_freqs(const ModelConfig *cfg, const MlaParams *p, double *inv)
{
	if (cfg->rope_scaling.type == ROPE_SCALE_YARN)
		return rope_inv_freq(cfg, p->d_rope, cfg->n, inv);
	for (int k = 0; k < p->d_rope / 2; k++) /* 1 / θ^(2k/d), as transformers' inv_freq */
		inv[k] = 1.0 / pow(p->rope_theta, (double)(2 * k) / p->d_rope);
	return 1.0;
}

/*
 * x (d numbers) at position pos turned as apply_rotary_pos_emb_interleave:
 * out[p] = x[2p]·cos θ_p − x[2p+1]·sin θ_p, out[d/2 + p] = x[2p+1]·cos θ_p + x[2p]·sin θ_p
 * (θ_p = pos·inv[p]; cos and sin times af).
 */
static void rope_interleave(const double *x, double *out, int d, int pos, const double *inv, double af)
{
	for (int p = 0; p < d / 2; p++) {
		const double ang = pos * inv[p], c = cos(ang) * af, s = sin(ang) * af, e = x[2 * p], o = x[2 * p + 1];
		out[p] = e * c - o * s;
		out[d / 2 + p] = o * c + e * s;
	}
}

/* latent: c_Q = RMSNorm(x·W_qa)·q_a_norm (n × r); [c_KV | k_pe] = x·W_kva, c_KV ← RMSNorm(c_KV)·kv_a_norm. */
static void pass_latent(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const MlaParams *p = &lp->mla;
	const Mat *X = mla_input(a, lp);
	const int n = cfg->n, D = cfg->d_model, c = p->kv_lora_rank, dr = p->d_rope, r = p->q_lora_rank;

	if (r > 0) {
		mat_mul_chain(n, D, r, X->a, (size_t)D, p->W_qa.a, (size_t)r, 0, a->c_Q.a, (size_t)r, 0);
		rmsnorm_rows(a->c_Q.a, n, r, (size_t)r, p->q_a_norm.a, p->eps);
	}
	mat_mul_chain(n, D, c, X->a, (size_t)D, p->W_kva.a, (size_t)(c + dr), 0, a->c_KV.a, (size_t)c, 0);
	mat_mul_chain(n, D, dr, X->a, (size_t)D, p->W_kva.a + c, (size_t)(c + dr), 0, a->k_pe.a, (size_t)dr, 0);
	rmsnorm_rows(a->c_KV.a, n, c, (size_t)c, p->kv_a_norm.a, p->eps);
}

/* mla_heads: q = c_Q·W_qb (or x·W_q) split a head into q_nope | q_pe (turned); [k_nope | v] = c_KV·W_kvb; Q, K, V. */
static void pass_heads(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const MlaParams *p = &lp->mla;
	const int n = cfg->n, H = a->heads, dn = p->d_nope, dr = p->d_rope, dv = lp->d_v, dk = lp->d_k, c = p->kv_lora_rank;
	const size_t ldkv = (size_t)H * (size_t)(dn + dv);
	double *kv = malloc((size_t)n * ldkv * sizeof *kv), *inv = malloc((size_t)(dr / 2) * sizeof *inv), af;

	if (kv == NULL || inv == NULL) {
		free(kv);
		free(inv);
		a->failed = 1;
		return;
	}
	af = mla_freqs(cfg, p, inv);
	if (p->q_lora_rank > 0)
		mat_mul_chain(n, p->q_lora_rank, H * dk, a->c_Q.a, (size_t)p->q_lora_rank, p->W_qb.a, (size_t)(H * dk), 0,
		              a->Q.a, (size_t)(H * dk), 0);
	else
		mat_mul_chain(n, cfg->d_model, H * dk, mla_input(a, lp)->a, (size_t)cfg->d_model, lp->W_q.a, (size_t)(H * dk),
		              0, a->Q.a, (size_t)(H * dk), 0);
	mat_mul_chain(n, c, (int)ldkv, a->c_KV.a, (size_t)c, p->W_kvb.a, ldkv, 0, kv, ldkv, 0);
	for (int i = 0; i < n; i++) {
		rope_interleave(&MAT_AT(a->k_pe, i, 0), &MAT_AT(a->k_pe_rot, i, 0), dr, i, inv, af);
		for (int h = 0; h < H; h++) {
			double *Qh = &MAT_AT(a->Q, i, h * dk), *Kh = &MAT_AT(a->K, i, h * dk);
			const double *kvh = &kv[(size_t)i * ldkv + (size_t)h * (size_t)(dn + dv)];
			memcpy(&MAT_AT(a->q_nope, i, h * dn), Qh, (size_t)dn * sizeof *Qh);
			rope_interleave(Qh + dn, &MAT_AT(a->q_pe, i, h * dr), dr, i, inv, af);
			memcpy(Qh + dn, &MAT_AT(a->q_pe, i, h * dr), (size_t)dr * sizeof *Qh);
			memcpy(Kh, kvh, (size_t)dn * sizeof *Kh);
			memcpy(Kh + dn, &MAT_AT(a->k_pe_rot, i, 0), (size_t)dr * sizeof *Kh);
			memcpy(&MAT_AT(a->V, i, h * dv), kvh + dn, (size_t)dv * sizeof *kvh);
		}
	}
	free(kv);
	free(inv);
}

/* kv_cache (4 × 4): rows MHA, GQA (heads/2 groups; DeepSeek-V3: 8), MQA, MLA; numbers and bytes, the lesson's and DeepSeek-V3's. */
static void fill_cache(Attn *a, const LayerParams *lp)
{
	const MlaParams *p = &lp->mla;
	const MlaCache t = mla_cache(a->heads, p->d_nope, p->d_rope, lp->d_v, p->kv_lora_rank, a->heads / 2 > 0 ? a->heads / 2 : 1);
	const MlaCache v3 = mla_cache(MLA_V3_HEADS, MLA_V3_NOPE, MLA_V3_ROPE, MLA_V3_V, MLA_V3_KV_LORA, MLA_V3_GROUPS);
	const long long lt[4] = { t.mha, t.gqa, t.mqa, t.mla }, vt[4] = { v3.mha, v3.gqa, v3.mqa, v3.mla };

	for (int k = 0; k < 4; k++) {
		MAT_AT(a->kv_cache, k, 0) = (double)lt[k];
		MAT_AT(a->kv_cache, k, 1) = (double)(lt[k] * MLA_BYTES);
		MAT_AT(a->kv_cache, k, 2) = (double)vt[k];
		MAT_AT(a->kv_cache, k, 3) = (double)(vt[k] * MLA_BYTES * MLA_V3_LAYERS);
	}
}

/*
 * absorb: q̃ = q_nope·W^Kᵀ a head (n × h·c), absorbed = q̃·c_KVᵀ + q_pe·k_pe_rotᵀ (n × m a head),
 * absorbed_out = (weights·c_KV)·W^V a head (n × h·d_v), mla_diff, kv_cache.
 */
static void pass_absorb(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const MlaParams *p = &lp->mla;
	const int n = cfg->n, m = cfg->m, H = a->heads, dn = p->d_nope, dr = p->d_rope, dv = lp->d_v, c = p->kv_lora_rank;
	const size_t ldkv = (size_t)H * (size_t)(dn + dv);
	/* each head's position part q_pe·k_pe_rotᵀ (n × m) and latents weights·c_KV (n × c), written whole: from the
	 * matrix cache (base/matrix.h), not pages faulted in anew at every computation */
	Mat pe_m = { 0 }, lat_m = { 0 };
	double dscore = 0.0, dout = 0.0, *pe, *lat;

	if (mat_alloc_whole(&pe_m, n, m) != 0 || mat_alloc_whole(&lat_m, n, c) != 0) {
		mat_free(&pe_m);
		mat_free(&lat_m);
		a->failed = 1;
		return;
	}
	pe = pe_m.a;
	lat = lat_m.a;
	/* every product on the matrix kernels, each cell's terms in one chain in order (the loops' bits, matrix.h) */
	for (int h = 0; h < H; h++) {
		const double *WK = p->W_kvb.a + (size_t)h * (size_t)(dn + dv), *WV = WK + dn;
		AttnHead *hd = &a->head[h];
		/* q̃ = q_nope·W^Kᵀ: row e of W^Kᵀ's transpose is W^K's column block, ldkv apart */
		mat_mul_chain(n, dn, c, &a->q_nope.a[h * dn], (size_t)a->q_nope.cols, WK, ldkv, 1, &a->q_tilde.a[h * c],
		              (size_t)a->q_tilde.cols, 0);
		mat_mul_chain(n, c, m, &a->q_tilde.a[h * c], (size_t)a->q_tilde.cols, a->c_KV.a, (size_t)a->c_KV.cols, 1,
		              hd->absorbed.a, (size_t)m, 0);
		mat_mul_chain(n, dr, m, &a->q_pe.a[h * dr], (size_t)a->q_pe.cols, a->k_pe_rot.a, (size_t)a->k_pe_rot.cols, 1,
		              pe, (size_t)m, 0);
		for (int i = 0; i < n; i++)
			for (int j = 0; j < m; j++) {
				const double sc = MAT_AT(hd->absorbed, i, j) + pe[(size_t)i * m + j];
				const double d = fabs(sc - MAT_AT(hd->scores, i, j));
				MAT_AT(hd->absorbed, i, j) = sc;
				if (d > dscore) /* fmax's answer (a NaN passed over), without a call a cell */
					dscore = d;
			}
		/* Σ_j weights_ij c_KV_j: the latent each row reads, then through W^V */
		mat_mul_chain(n, m, c, hd->weights.a, (size_t)m, a->c_KV.a, (size_t)a->c_KV.cols, 0, lat, (size_t)c,
		              attn_weights_lower(cfg)); /* a causal mask's 0s past the diagonal skipped */
		mat_mul_chain(n, c, dv, lat, (size_t)c, WV, ldkv, 0, &a->absorbed_out.a[h * dv], (size_t)a->absorbed_out.cols, 0);
		for (int i = 0; i < n; i++)
			for (int e = 0; e < dv; e++) {
				const double d = fabs(MAT_AT(a->absorbed_out, i, h * dv + e) - MAT_AT(hd->weighted, i, e));
				if (d > dout)
					dout = d;
			}
	}
	mat_free(&pe_m);
	mat_free(&lat_m);
	a->mla_diff.a[0] = dscore;
	a->mla_diff.a[1] = dout;
	fill_cache(a, lp);
}

/* ---------------------------------------------------------------- guards */

static int mat_is(const Mat *m, int rows, int cols)
{
	return m->a != NULL && m->rows == rows && m->cols == cols;
}


/* The settings and weights fit the layer's sizes (the loader says so at its paths; this is the engine's own guard). */
static const char *mla_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	const MlaParams *p = &lp->mla;
	const int D = cfg->d_model, hq = lp->heads * lp->d_k, hkv = lp->heads * (p->d_nope + lp->d_v);

	if (!p->on)
		return NULL;
	if (p->kv_lora_rank < 1 || p->d_nope < 1 || p->d_rope < 2 || p->d_rope % 2 != 0 || p->q_lora_rank < 0 ||
	    lp->d_k != p->d_nope + p->d_rope || !(p->rope_theta > 1) || !(p->eps > 0) || cfg->has_source || cfg->m != cfg->n ||
	    lp->kv_heads != lp->heads)
		return "mla";
	if (p->q_lora_rank > 0 ? !mat_is(&p->W_qa, D, p->q_lora_rank) || !mat_is(&p->q_a_norm, 1, p->q_lora_rank) ||
	                                 !mat_is(&p->W_qb, p->q_lora_rank, hq)
	                       : !mat_is(&lp->W_q, D, hq))
		return p->q_lora_rank > 0 ? "mla.W_qa" : "W_q";
	if (!mat_is(&p->W_kva, D, p->kv_lora_rank + p->d_rope) || !mat_is(&p->kv_a_norm, 1, p->kv_lora_rank))
		return "mla.W_kva";
	if (!mat_is(&p->W_kvb, p->kv_lora_rank, hkv))
		return "mla.W_kvb";
	return NULL;
}

static int mla_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xc; (void)yc;
	return xp->mla.on == yp->mla.on && xp->mla.q_lora_rank == yp->mla.q_lora_rank &&
	       xp->mla.kv_lora_rank == yp->mla.kv_lora_rank && xp->mla.d_nope == yp->mla.d_nope &&
	       xp->mla.d_rope == yp->mla.d_rope && xp->mla.rope_theta == yp->mla.rope_theta && xp->mla.eps == yp->mla.eps;
}

/* ---------------------------------------------------------------- explain */

#define MUL_SYM(u) celltext_sym(u, "\u00b7", "*")

/* c_Q[i][j] or c_KV[i][j]: the projection's cell, the row's RMS, the weight. */
static void explain_norm_cell(StrBuf *b, const Attn *a, int latent_q, int i, int j, int utf8)
{
	const LayerParams *lp = attn_params(a);
	const MlaParams *p = &lp->mla;
	const Mat *X = mla_input(a, lp), *W = latent_q ? &p->W_qa : &p->W_kva, *g = latent_q ? &p->q_a_norm : &p->kv_a_norm;
	const int len = latent_q ? p->q_lora_rank : p->kv_lora_rank, D = X->cols;
	double *row = malloc((size_t)len * sizeof *row);
	char x1[32], x2[32], x3[32], x4[32], x5[32], x6[32];

	if (row == NULL) {
		b->oom = 1;
		return;
	}
	mat_mul_chain(1, D, len, &MAT_AT(*X, i, 0), (size_t)D, W->a, (size_t)W->cols, 0, row, (size_t)len, 0);
	strbuf_printf(b, _("%s = RMSNorm(x%s%s)%s%s: row %d of x%s%s has %d numbers, column %d of them is\n"),
	              latent_q ? "c_Q" : "c_KV", MUL_SYM(utf8), latent_q ? "W_qa" : "W_kva", MUL_SYM(utf8),
	              latent_q ? "q_a_norm" : "kv_a_norm", i, MUL_SYM(utf8), latent_q ? "W_qa" : "W_kva[:, :kv_lora_rank]",
	              len, j);
	celltext_terms(b, &MAT_AT(*X, i, 0), 1, W->a + j, (size_t)W->cols, D, utf8);
	const double inv = rms_inv(row, len, p->eps);
	strbuf_printf(b, _("RMS of the row = %s(mean of squares + %s) = %s; %s / %s %s %s = %s\n"), celltext_sym(utf8, "\u221a", "sqrt"),
	              celltext_num(x1, p->eps, utf8), celltext_num(x2, 1.0 / inv, utf8), celltext_num(x3, row[j], utf8),
	              celltext_num(x4, 1.0 / inv, utf8), MUL_SYM(utf8), celltext_num(x5, g->a[j], utf8),
	              celltext_num(x6, g->a[j] * (row[j] * inv), utf8));
	if (!latent_q)
		strbuf_printf(b, "%s", _("(the cache keeps this row: kv_lora_rank numbers a token, whatever the number of heads)\n"));
	free(row);
}

/* The RoPE pair of a turned cell: which pair, its angle, the two numbers before, the sum. */
static void explain_turn(StrBuf *b, const Attn *a, const double *before, int col, int pos, double value, int utf8)
{
	const MlaParams *p = &attn_params(a)->mla;
	const int d = p->d_rope, pr = col % (d / 2), second = col >= d / 2;
	double inv[LESSON_MAX_DIM / 2 + 1] = { 0 }; /* (mla_freqs fills it; the compiler cannot tell at -O3) */
	const double af = mla_freqs(attn_config(a), p, inv), ang = pos * inv[pr], e = before[2 * pr], o = before[2 * pr + 1];
	char x1[32], x2[32], x3[32], x4[32], x5[32];

	if (af == 1.0 && attn_config(a)->rope_scaling.type == ROPE_SCALE_NONE)
		strbuf_printf(b, _("pair %d (columns %d, %d before turning: %s, %s) at position %d turns by %s = %d / %s^(%d/%d) = %s\n"),
		              pr, 2 * pr, 2 * pr + 1, celltext_num(x1, e, utf8), celltext_num(x2, o, utf8), pos,
		              celltext_sym(utf8, "\u03b8", "theta"), pos, celltext_num(x3, p->rope_theta, utf8), 2 * pr, d,
		              celltext_num(x4, ang, utf8));
	else /* YaRN: the pair's scaled frequency, and cos and sin times the attention factor */
		strbuf_printf(b, _("pair %d (columns %d, %d before turning: %s, %s) at position %d turns by %s = %d %s %s "
		                   "(YaRN's frequency); cos and sin are multiplied by %s\n"),
		              pr, 2 * pr, 2 * pr + 1, celltext_num(x1, e, utf8), celltext_num(x2, o, utf8), pos,
		              celltext_sym(utf8, "\u03b8", "theta"), pos, MUL_SYM(utf8), celltext_num(x3, inv[pr], utf8),
		              celltext_num(x4, af, utf8));
	if (second)
		strbuf_printf(b, "%s cos %s + %s sin %s = %s\n", celltext_num(x1, o, utf8), celltext_sym(utf8, "\u03b8", "theta"),
		              celltext_num(x2, e, utf8), celltext_sym(utf8, "\u03b8", "theta"), celltext_num(x5, value, utf8));
	else
		strbuf_printf(b, "%s cos %s %s %s sin %s = %s\n", celltext_num(x1, e, utf8), celltext_sym(utf8, "\u03b8", "theta"),
		              celltext_sym(utf8, "\u2212", "-"), celltext_num(x2, o, utf8), celltext_sym(utf8, "\u03b8", "theta"),
		              celltext_num(x5, value, utf8));
	strbuf_printf(b, "%s", _("(DeepSeek's interleaved RoPE: pair p is columns 2p and 2p+1; the turned first numbers of the pairs are written first, then the second ones)\n"));
}

/* The head's q before turning (d_nope + d_rope numbers of row i): c_Q·W_qb or x·W_q, into q. */
static void raw_q(const Attn *a, int h, int i, double *q)
{
	const LayerParams *lp = attn_params(a);
	const MlaParams *p = &lp->mla;
	const int dk = lp->d_k, hq = a->heads * dk;

	if (p->q_lora_rank > 0)
		mat_mul_chain(1, p->q_lora_rank, dk, &MAT_AT(a->c_Q, i, 0), (size_t)p->q_lora_rank, p->W_qb.a + (size_t)h * dk,
		              (size_t)hq, 0, q, (size_t)dk, 0);
	else
		mat_mul_chain(1, attn_config(a)->d_model, dk, &MAT_AT(*mla_input(a, lp), i, 0), (size_t)attn_config(a)->d_model,
		              lp->W_q.a + (size_t)h * dk, (size_t)hq, 0, q, (size_t)dk, 0);
}

static void explain_latent(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const LayerParams *lp = attn_params(a);
	const MlaParams *p = &lp->mla;

	(void)h;
	if (which == AM_C_Q || which == AM_C_KV) {
		explain_norm_cell(b, a, which == AM_C_Q, i, j, utf8);
		return;
	}
	/* k_pe: x·W_kva's column kv_lora_rank + j */
	strbuf_printf(b, _("k_pe = x%sW_kva's last %d columns: column %d of W_kva\n"), MUL_SYM(utf8), p->d_rope, p->kv_lora_rank + j);
	celltext_terms(b, &MAT_AT(*mla_input(a, lp), i, 0), 1, p->W_kva.a + p->kv_lora_rank + j, (size_t)p->W_kva.cols,
	               attn_config(a)->d_model, utf8);
	strbuf_printf(b, "%s", _("(one k_pe for every head: it is turned once, in the next stage)\n"));
}

static void explain_heads(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const LayerParams *lp = attn_params(a);
	const MlaParams *p = &lp->mla;
	const int dn = p->d_nope, dr = p->d_rope, dk = lp->d_k, dv = lp->d_v, c = p->kv_lora_rank;
	const size_t ldkv = (size_t)a->heads * (size_t)(dn + dv);
	double *q;
	int hh, col;

	(void)h;
	if (which == AM_K_PE_ROT) {
		explain_turn(b, a, &MAT_AT(a->k_pe, i, 0), j, i, MAT_AT(a->k_pe_rot, i, j), utf8);
		strbuf_printf(b, "%s", _("(turned once, and every head's key reads these same numbers)\n"));
		return;
	}
	if (which == AM_V || which == AM_K) {
		const int w = which == AM_V ? dv : dk;
		hh = j / w;
		col = j % w;
		if (which == AM_K && col >= dn) {
			strbuf_printf(b, _("K = [k_nope | k_pe] a head: column %d of head %d is k_pe_rot[%d][%d], the same in every head\n"),
			              col, hh, i, col - dn);
			return;
		}
		const int wcol = hh * (dn + dv) + (which == AM_V ? dn + col : col);
		strbuf_printf(b, _("%s of head %d = c_KV%sW_kvb, W_kvb's column %d (head %d's %s)\n"), which == AM_V ? "v" : "k_nope", hh,
		              MUL_SYM(utf8), wcol, hh, which == AM_V ? "W^V" : "W^K");
		celltext_terms(b, &MAT_AT(a->c_KV, i, 0), 1, p->W_kvb.a + wcol, ldkv, c, utf8);
		return;
	}
	/* Q, q_nope, q_pe: the head's q from c_Q·W_qb (or x·W_q) */
	if (which == AM_Q) {
		hh = j / dk;
		col = j % dk;
	} else {
		const int w = which == AM_Q_NOPE ? dn : dr;
		hh = j / w;
		col = which == AM_Q_NOPE ? j % w : dn + j % w;
	}
	if ((q = malloc((size_t)dk * sizeof *q)) == NULL) {
		b->oom = 1;
		return;
	}
	raw_q(a, hh, i, q);
	if (col < dn) {
		strbuf_printf(b, _("q_nope of head %d: column %d of q = %s%s%s\n"), hh, col,
		              p->q_lora_rank > 0 ? "c_Q" : "x", MUL_SYM(utf8), p->q_lora_rank > 0 ? "W_qb" : "W_q");
		if (p->q_lora_rank > 0)
			celltext_terms(b, &MAT_AT(a->c_Q, i, 0), 1, p->W_qb.a + (size_t)hh * dk + col, (size_t)p->W_qb.cols, p->q_lora_rank, utf8);
		else
			celltext_terms(b, &MAT_AT(*mla_input(a, lp), i, 0), 1, lp->W_q.a + (size_t)hh * dk + col, (size_t)lp->W_q.cols,
			               attn_config(a)->d_model, utf8);
	} else {
		strbuf_printf(b, _("q_pe of head %d, turned by position %d:\n"), hh, i);
		explain_turn(b, a, q + dn, col - dn, i, MAT_AT(a->q_pe, i, hh * dr + col - dn), utf8);
	}
	free(q);
}

/* The kv_cache table's words: what a cell counts, and the two tables with bytes. */
static void explain_cache(StrBuf *b, const Attn *a, int i, int j, int utf8)
{
	const LayerParams *lp = attn_params(a);
	const MlaParams *p = &lp->mla;
	static const char *const kind[] = { "MHA", "GQA", "MQA", "MLA" };
	const MlaCache t = mla_cache(a->heads, p->d_nope, p->d_rope, lp->d_v, p->kv_lora_rank, a->heads / 2 > 0 ? a->heads / 2 : 1);
	const MlaCache v3 = mla_cache(MLA_V3_HEADS, MLA_V3_NOPE, MLA_V3_ROPE, MLA_V3_V, MLA_V3_KV_LORA, MLA_V3_GROUPS);
	char *lt = mla_cache_table(&t, 1, MLA_BYTES), *vt = mla_cache_table(&v3, MLA_V3_LAYERS, MLA_BYTES);

	(void)utf8;
	strbuf_printf(b, _("row %d is %s; column %d is %s\n"), i, kind[i], j,
	              j == 0 ? _("the lesson's numbers a token keeps in one layer") : j == 1 ? _("the lesson's bytes (2 a number, bf16)")
	              : j == 2 ? _("DeepSeek-V3's numbers a token keeps in one layer") : _("DeepSeek-V3's bytes a token keeps in its 61 layers"));
	strbuf_printf(b, "%s", _("MHA keeps every head's k and v: heads\u00b7(d_k + d_v); GQA g key/value heads' (the lesson: heads/2; DeepSeek-V3 compared with 8); MQA one head's: d_k + d_v; MLA c_KV and the shared k_pe: kv_lora_rank + qk_rope_head_dim\n"));
	strbuf_printf(b, _("this lesson (heads %d, d_k %d, d_v %d, kv_lora_rank %d, qk_rope_head_dim %d):\n%s"), a->heads, lp->d_k, lp->d_v,
	              p->kv_lora_rank, p->d_rope, lt != NULL ? lt : "");
	strbuf_printf(b, _("DeepSeek-V3 (128 heads, d_k 192, d_v 128, kv_lora_rank 512, qk_rope_head_dim 64, 61 layers):\n%s"),
	              vt != NULL ? vt : "");
	free(lt);
	free(vt);
}

static void explain_absorb(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const LayerParams *lp = attn_params(a);
	const MlaParams *p = &lp->mla;
	const int dn = p->d_nope, dr = p->d_rope, dv = lp->d_v, c = p->kv_lora_rank;
	const size_t ldkv = (size_t)a->heads * (size_t)(dn + dv);
	char x1[32], x2[32], x3[32], x4[32], x5[32];

	if (which == AM_KV_CACHE) {
		explain_cache(b, a, i, j, utf8);
		return;
	}
	if (which == AM_MLA_DIFF) {
		strbuf_printf(b, "%s", j == 0 ? _("the largest |absorbed \u2212 scores| over every head and cell: the two forms' scores differ only by rounding\n")
		                              : _("the largest |absorbed_out \u2212 weighted| over every head and cell: the two forms' outputs differ only by rounding\n"));
		return;
	}
	if (which == AM_Q_TILDE) {
		const int hh = j / c, e = j % c;
		strbuf_printf(b, _("q%s of head %d = q_nope%sW^K%s: row %d of head %d's W^K (W_kvb's columns %d\u2026%d)\n"),
		              celltext_sym(utf8, "\u0303", "~"), hh, MUL_SYM(utf8), celltext_sym(utf8, "\u1d40", "^T"), e, hh,
		              hh * (dn + dv), hh * (dn + dv) + dn - 1);
		celltext_terms(b, &MAT_AT(a->q_nope, i, hh * dn), 1, p->W_kvb.a + (size_t)e * ldkv + (size_t)hh * (dn + dv), 1, dn, utf8);
		strbuf_printf(b, "%s", _("(W^K is folded into the query once, so the scores can read c_KV without unfolding any key)\n"));
		return;
	}
	if (which == AM_ABSORBED) {
		double s1, s2;
		strbuf_printf(b, _("q%s%sc_KV of key %d:\n"), celltext_sym(utf8, "\u0303", "~"), MUL_SYM(utf8), j);
		s1 = celltext_terms(b, &MAT_AT(a->q_tilde, i, h * c), 1, &MAT_AT(a->c_KV, j, 0), 1, c, utf8);
		strbuf_printf(b, _("q_pe%sk_pe of key %d:\n"), MUL_SYM(utf8), j);
		s2 = celltext_terms(b, &MAT_AT(a->q_pe, i, h * dr), 1, &MAT_AT(a->k_pe_rot, j, 0), 1, dr, utf8);
		strbuf_printf(b, _("%s + %s = %s; the naive form's score was %s (difference %s)\n"), celltext_num(x1, s1, utf8),
		              celltext_num(x2, s2, utf8), celltext_num(x3, s1 + s2, utf8),
		              celltext_num(x4, MAT_AT(a->head[h].scores, i, j), utf8),
		              celltext_num(x5, s1 + s2 - MAT_AT(a->head[h].scores, i, j), utf8));
		return;
	}
	/* absorbed_out */
	{
		const int hh = j / dv, e = j % dv;
		const double want = MAT_AT(a->head[hh].weighted, i, e);
		strbuf_printf(b, _("(%s_j weights_%dj c_KV_j)%sW^V of head %d, column %d: the weighted latent first, then W^V once\n"),
		              celltext_sym(utf8, "\u03a3", "sum"), i, MUL_SYM(utf8), hh, e);
		strbuf_printf(b, _("the naive form's weighted[%d][%d] of head %d is %s (difference %s)\n"), i, e, hh,
		              celltext_num(x1, want, utf8), celltext_num(x2, MAT_AT(a->absorbed_out, i, j) - want, utf8));
	}
}

/* ---------------------------------------------------------------- operands */

static int operands_latent(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const AttnMatrix x = attn_params(a)->block.present && attn_params(a)->block.norm == NORM_PRE ? AM_NORM1 : AM_X;

	(void)h;
	out[0] = (ExplainOperand){ x, 0, i, -1 };
	out[1] = (ExplainOperand){ which == AM_C_Q ? AM_W_QA : AM_W_KVA, 0, -1,
		                   which == AM_K_PE ? attn_params(a)->mla.kv_lora_rank + j : j };
	return 2;
}

static int operands_heads(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	(void)h;
	(void)j;
	if (which == AM_K_PE_ROT) {
		out[0] = (ExplainOperand){ AM_K_PE, 0, i, -1 };
		return 1;
	}
	if (which == AM_K || which == AM_V) {
		out[0] = (ExplainOperand){ AM_C_KV, 0, i, -1 };
		return 1;
	}
	out[0] = (ExplainOperand){ attn_params(a)->mla.q_lora_rank > 0 ? AM_C_Q : AM_X, 0, i, -1 };
	return 1;
}

static int operands_absorb(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	(void)a;
	if (which == AM_ABSORBED) {
		out[0] = (ExplainOperand){ AM_Q_TILDE, 0, i, -1 };
		out[1] = (ExplainOperand){ AM_C_KV, 0, j, -1 };
		out[2] = (ExplainOperand){ AM_SCORES, h, i, j };
		return 3;
	}
	if (which == AM_Q_TILDE) {
		out[0] = (ExplainOperand){ AM_Q_NOPE, 0, i, -1 };
		return 1;
	}
	if (which == AM_ABSORBED_OUT) {
		out[0] = (ExplainOperand){ AM_WEIGHTS, j / attn_params(a)->d_v, i, -1 };
		return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------- the variants */

const AttnVariant variant_mla = {
	.name = "mla",
	.feature = FEAT_MLA,
	.stage = STAGE_MLA_LATENT,
	.kernel = pass_latent,
	.rules = { { AM_C_Q, ATTN_MADE(AM_X, AM_NORM1, AM_W_QA, AM_Q_A_NORM) },
	           { AM_C_KV, ATTN_MADE(AM_X, AM_NORM1, AM_W_KVA, AM_KV_A_NORM) },
	           { AM_K_PE, ATTN_MADE(AM_X, AM_NORM1, AM_W_KVA) } },
	.explain = explain_latent,
	.operands = operands_latent,
	.fault = mla_fault,
	.same = mla_same,
};

const AttnVariant variant_mla_heads = {
	.name = "mla",
	.feature = FEAT_MLA,
	.stage = STAGE_MLA_HEADS,
	.kernel = pass_heads,
	.rules = { { AM_Q, ATTN_MADE(AM_C_Q, AM_W_QB, AM_W_Q, AM_X, AM_NORM1) },
	           { AM_K, ATTN_MADE(AM_C_KV, AM_K_PE, AM_W_KVB) },
	           { AM_V, ATTN_MADE(AM_C_KV, AM_W_KVB) },
	           { AM_Q_PE, ATTN_MADE(AM_C_Q, AM_W_QB, AM_W_Q, AM_X, AM_NORM1) },
	           { AM_Q_NOPE, ATTN_MADE(AM_C_Q, AM_W_QB, AM_W_Q, AM_X, AM_NORM1) },
	           { AM_K_PE_ROT, ATTN_MADE(AM_K_PE) } },
	.explain = explain_heads,
	.operands = operands_heads,
};

const AttnVariant variant_mla_absorb = {
	.name = "mla",
	.feature = FEAT_MLA,
	.stage = STAGE_MLA_ABSORB,
	.kernel = pass_absorb,
	.rules = { { AM_ABSORBED, ATTN_MADE(AM_Q, AM_K, AM_C_KV, AM_W_KVB) },
	           { AM_ABSORBED_OUT, ATTN_MADE(AM_WEIGHTS, AM_C_KV, AM_W_KVB) },
	           { AM_MLA_DIFF, ATTN_MADE(AM_SCORES, AM_WEIGHTED, AM_Q, AM_K, AM_WEIGHTS) },
	           { AM_Q_TILDE, ATTN_MADE(AM_Q, AM_W_KVB) } },
	.explain = explain_absorb,
	.operands = operands_absorb,
};

/* ---------------------------------------------------------------- the cache */

MlaCache mla_cache(int heads, int d_nope, int d_rope, int d_v, int kv_lora_rank, int groups)
{
	const long long dk = (long long)d_nope + d_rope;

	return (MlaCache){ .mha = (long long)heads * (dk + d_v), .gqa = (long long)groups * (dk + d_v), .mqa = dk + d_v,
		           .mla = (long long)kv_lora_rank + d_rope, .groups = groups };
}

char *mla_cache_table(const MlaCache *t, int layers, int bytes_per_number)
{
	const char *const kind[] = { "MHA", "GQA", "MQA", "MLA" };
	const long long num[] = { t->mha, t->gqa, t->mqa, t->mla };
	StrBuf b = { 0 };

	strbuf_printf(&b, _("kept per token: numbers and bytes (%d bytes a number) in one layer, bytes in %d layers\n"),
	              bytes_per_number, layers);
	for (int k = 0; k < 4; k++) {
		const long long bytes = num[k] * bytes_per_number;
		strbuf_printf(&b, "  %s  %10lld  %12lld B  %14lld B  (%.1f%%)", kind[k], num[k], bytes, bytes * layers,
		              100.0 * (double)num[k] / (double)t->mha);
		if (k == 1)
			strbuf_printf(&b, _("  with %d key/value heads"), t->groups);
		strbuf_printf(&b, "\n");
	}
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
