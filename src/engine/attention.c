/* attention.c: the stages of attention as named passes, in double precision.
 *
 * Pure computation: no I/O, no curses. Every intermediate matrix is kept so
 * that it can be shown, explained and dumped. See attention.h for the shape
 * legend; each pass below repeats the shapes it reads and writes. The chain
 * of layers, updates, progress and training that run these passes are
 * compute.c's; the backward pass (backward.c) reads what they wrote; finding
 * any matrix by its catalogue id, gradients too, is matrices.c's.
 *
 * Attention is the one layer that mixes information across tokens: row i of
 * the output is a weighted average of the value rows of every token query i
 * may see, weighted by how well query i matches each key.
 */
#include "engine/kernels.h"
#include "engine/variants/variants.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---------------------------------------------------------------- where each matrix lives */

/*
 * Computed matrices of the whole layer, and of each head (the catalogue's
 * MF_PER_HEAD kinds), as offset + 1: 0 is a matrix without a field here (a
 * given one, a gradient, or one forgotten: attn_storage_fault finds those).
 */
#define AT(type, field) (offsetof(type, field) + 1)
static const size_t attn_field[AM_COUNT] = {
	[AM_PE] = AT(Attn, PE), [AM_X] = AT(Attn, X), [AM_PE_SRC] = AT(Attn, PE_src),
	[AM_S] = AT(Attn, S), [AM_Q] = AT(Attn, Q), [AM_K] = AT(Attn, K),
	[AM_V] = AT(Attn, V), [AM_CONCAT] = AT(Attn, concat), [AM_OUTPUT] = AT(Attn, output),
	[AM_RESIDUAL1] = AT(Attn, residual1), [AM_NORM1_STATS] = AT(Attn, norm1_stats),
	[AM_NORM1] = AT(Attn, norm1), [AM_FFN_HIDDEN] = AT(Attn, ffn_hidden),
	[AM_FFN_GATE] = AT(Attn, ffn_gate), [AM_FFN_ACT] = AT(Attn, ffn_act),
	[AM_FFN_OUT] = AT(Attn, ffn_out), [AM_RESIDUAL2] = AT(Attn, residual2),
	[AM_NORM2_STATS] = AT(Attn, norm2_stats), [AM_NORM2] = AT(Attn, norm2),
	[AM_FINAL] = AT(Attn, final), [AM_Q_ROT] = AT(Attn, Q_rot), [AM_K_ROT] = AT(Attn, K_rot),
	[AM_DEC_Q] = AT(Attn, dec_q), [AM_CACHE_K] = AT(Attn, cache_K), [AM_CACHE_V] = AT(Attn, cache_V),
	[AM_DEC_OUTPUT] = AT(Attn, dec_output), [AM_DEC_LAYER_OUT] = AT(Attn, dec_layer_out),
	[AM_Q_NORM] = AT(Attn, Q_norm), [AM_K_NORM] = AT(Attn, K_norm), [AM_Q_L2] = AT(Attn, Q_l2), [AM_K_L2] = AT(Attn, K_l2), [AM_LOGITS] = AT(Attn, logits),
	[AM_NEXT] = AT(Attn, next_p), [AM_LOGITS_RAW] = AT(Attn, logits_raw),
	[AM_ANGLES_PLAIN] = AT(Attn, angles_plain), [AM_ANGLES] = AT(Attn, angles),
	[AM_C_Q] = AT(Attn, c_Q), [AM_C_KV] = AT(Attn, c_KV), [AM_K_PE] = AT(Attn, k_pe), [AM_Q_NOPE] = AT(Attn, q_nope),
	[AM_Q_PE] = AT(Attn, q_pe), [AM_K_PE_ROT] = AT(Attn, k_pe_rot), [AM_Q_TILDE] = AT(Attn, q_tilde),
	[AM_ABSORBED_OUT] = AT(Attn, absorbed_out), [AM_MLA_DIFF] = AT(Attn, mla_diff), [AM_KV_CACHE] = AT(Attn, kv_cache),
	[AM_DIFF_LAMBDA] = AT(Attn, diff_lambda),
	[AM_GATE] = AT(Attn, gate), [AM_GATE_SIG] = AT(Attn, gate_sig), [AM_GATED] = AT(Attn, gated),
	[AM_ROUTER_LOGITS] = AT(Attn, router_logits), [AM_ROUTER_PROBS] = AT(Attn, router_probs),
	[AM_MOE_WEIGHTS] = AT(Attn, moe_weights), [AM_EXPERT_ACT] = AT(Attn, expert_act),
	[AM_EXPERT_OUT] = AT(Attn, expert_out), [AM_SHARED_GATE] = AT(Attn, shared_gate),
	[AM_SHARED_OUT] = AT(Attn, shared_out), [AM_WIN_OUTPUT] = AT(Attn, win_output),
	[AM_NORM1_AFTER_STATS] = AT(Attn, norm1_after_stats), [AM_NORM1_AFTER] = AT(Attn, norm1_after),
	[AM_NORM2_AFTER_STATS] = AT(Attn, norm2_after_stats), [AM_NORM2_AFTER] = AT(Attn, norm2_after),
	[AM_ROUTER_SCORES] = AT(Attn, router_scores),
	[AM_GROUP_SCORES] = AT(Attn, group_scores), [AM_SCORES_CHOICE] = AT(Attn, scores_choice),
	[AM_GDN_CONV] = AT(Attn, gdn_conv), [AM_GDN_Z] = AT(Attn, gdn_z), [AM_GDN_CACHE] = AT(Attn, gdn_cache),
	[AM_INDEX_Q] = AT(Attn, index_q), [AM_INDEX_K] = AT(Attn, index_k), [AM_INDEX_W] = AT(Attn, index_w),
	[AM_INDEX_SCORES] = AT(Attn, index_scores), [AM_INDEX_KEPT] = AT(Attn, index_kept),
};
static const size_t head_field[AM_COUNT] = {
	[AM_SCORES] = AT(AttnHead, scores), [AM_SCALED] = AT(AttnHead, scaled),
	[AM_MASKED] = AT(AttnHead, masked), [AM_WEIGHTS] = AT(AttnHead, weights),
	[AM_WEIGHTED] = AT(AttnHead, weighted), [AM_BIAS] = AT(AttnHead, bias),
	[AM_BIASED] = AT(AttnHead, biased), [AM_FLASH_M] = AT(AttnHead, flash_m),
	[AM_FLASH_L] = AT(AttnHead, flash_l), [AM_FLASH_O] = AT(AttnHead, flash_O),
	[AM_FLASH_OUT] = AT(AttnHead, flash_out), [AM_DEC_SCORES] = AT(AttnHead, dec_scores),
	[AM_DEC_WEIGHTS] = AT(AttnHead, dec_weights), [AM_DEC_WEIGHTED] = AT(AttnHead, dec_weighted),
	[AM_CAPPED] = AT(AttnHead, capped), [AM_SINK] = AT(AttnHead, sink),
	[AM_PHI_Q] = AT(AttnHead, phi_q), [AM_PHI_K] = AT(AttnHead, phi_k), [AM_LIN_SCORES] = AT(AttnHead, lin_scores),
	[AM_LIN_Z] = AT(AttnHead, lin_z), [AM_LIN_OUT] = AT(AttnHead, lin_out), [AM_LIN_STATE] = AT(AttnHead, lin_state),
	[AM_LIN_KSUM] = AT(AttnHead, lin_ksum), [AM_LIN_OUT_STATE] = AT(AttnHead, lin_out_state),
	[AM_GDN_Q] = AT(AttnHead, gdn_q), [AM_GDN_K] = AT(AttnHead, gdn_k), [AM_GDN_BETA] = AT(AttnHead, gdn_beta),
	[AM_GDN_G] = AT(AttnHead, gdn_g), [AM_GDN_RECALL] = AT(AttnHead, gdn_recall), [AM_GDN_DELTA] = AT(AttnHead, gdn_delta),
	[AM_GDN_OUT] = AT(AttnHead, gdn_out), [AM_GDN_OUT_CHUNK] = AT(AttnHead, gdn_out_chunk),
	[AM_GDN_STATE] = AT(AttnHead, gdn_state),
	[AM_GDN_STATES] = AT(AttnHead, gdn_states), [AM_GDN_RMS] = AT(AttnHead, gdn_rms),
	[AM_GDN_GATED] = AT(AttnHead, gdn_gated),
	[AM_DIFF_A1] = AT(AttnHead, diff_a1), [AM_DIFF_A2] = AT(AttnHead, diff_a2), [AM_DIFF_A] = AT(AttnHead, diff_a),
	[AM_DIFF_O] = AT(AttnHead, diff_o), [AM_DIFF_RMS] = AT(AttnHead, diff_rms), [AM_DIFF_OUT] = AT(AttnHead, diff_out),
	[AM_ABSORBED] = AT(AttnHead, absorbed), [AM_WIN_WEIGHTS] = AT(AttnHead, win_weights),
	[AM_INDEX_MASK] = AT(AttnHead, index_mask), [AM_SPARSE] = AT(AttnHead, sparse),
	[AM_DENSE_WEIGHTS] = AT(AttnHead, dense_weights),
};
#undef AT

/* The field of a computed matrix (offset + 1 in Attn, or in AttnHead for a per-head one), 0 without one. */
static size_t field_of(AttnMatrix which)
{
	if ((unsigned)which >= AM_COUNT || (matrix_kinds[which].flags & (MF_GIVEN | MF_GRAD)))
		return 0;
	return (matrix_kinds[which].flags & MF_PER_HEAD) ? head_field[which] : attn_field[which];
}

const char *attn_storage_fault(void)
{
	for (int w = 0; w < AM_COUNT; w++)
		if (!(matrix_kinds[w].flags & (MF_GIVEN | MF_GRAD)) && field_of((AttnMatrix)w) == 0)
			return matrix_kinds[w].name;
	return NULL;
}

Mat *attn_slot(Attn *a, AttnMatrix which, int h)
{
	const size_t at = field_of(which);

	if (at == 0)
		return NULL;
	if (matrix_kinds[which].flags & MF_PER_HEAD)
		return (Mat *)((char *)&a->head[h] + at - 1);
	return (Mat *)((char *)a + at - 1);
}

const Mat *attn_slot_const(const Attn *a, AttnMatrix which, int h)
{
	const size_t at = field_of(which);

	if (at == 0)
		return NULL;
	if (matrix_kinds[which].flags & MF_PER_HEAD)
		return (const Mat *)((const char *)&a->head[h] + at - 1);
	return (const Mat *)((const char *)a + at - 1);
}

/* ---------------------------------------------------------------- kernels */

/*
 * PE: rows × cols (positions × features).
 * PE(pos, 2i) = sin(pos / 10000^(2i/cols)), PE(pos, 2i+1) = cos(pos / 10000^(2i/cols)):
 * each pair of columns is a clock ticking at its own speed, so every position
 * gets a distinct pattern and nearby positions similar ones.
 */
void attn_positional(Mat *PE)
{
	int pos, c;

	for (pos = 0; pos < PE->rows; pos++)
		for (c = 0; c < PE->cols; c++) {
			const int even = c - (c % 2);
			const double angle = pos / pow(10000.0, (double)even / PE->cols);
			MAT_AT(*PE, pos, c) = (c % 2 == 0) ? sin(angle) : cos(angle);
		}
}

/*
 * x, out: len.
 * out_j = exp(x_j − max) / Σ_t exp(x_t − max). Subtracting the row maximum
 * changes nothing mathematically (it cancels) but keeps exp() from
 * overflowing: softmax([1000, 1, −1000]) is [1, e^-999, e^-2000], not NaN.
 * Entries of −∞ (masked) get exactly 0. When every entry is −∞ there is
 * nothing to attend to: out is all 0 and the function returns 1. The
 * exponentials are mat_exp_shifted's (base/vexp.c: glibc's vector exp beside
 * a fused kernel, its exp a cell at a time beside an exact one), their sum
 * mat_sum's (left to right beside an exact kernel, eight sums side by side
 * beside a fused one).
 */
/*
 * out = softmax(x) over len entries and the sink, one more logit whose column
 * is dropped (−∞: none): out_j = e^(x_j − M) / (e^(sink − M) + Σ_k e^(x_k − M)),
 * M the maximum of x and the sink; −∞ entries get 0. Returns what no key
 * took: the sink's share (0 without one), or 1 when every entry is −∞ and
 * there is no sink (out all 0). A non-finite maximum or sum sets *nonfinite.
 */
static double softmax_row(const double *x, double *out, int len, double sink, int *nonfinite)
{
	const double max = sink == -INFINITY ? mat_max(len, x) : fmax(mat_max(len, x), sink);
	double sum = 0.0, e = 0.0;
	int j;

	if (max == -INFINITY) {
		for (j = 0; j < len; j++)
			out[j] = 0.0;
		return 1.0;
	}
	mat_exp_shifted(len, x, max, out); /* e^(−∞) = 0: a masked cell gets no weight */
	sum = mat_sum(len, out);           /* in the kernel's kind's order (base/matrix.h) */
	if (sink != -INFINITY) {
		mat_exp_shifted(1, &sink, max, &e); /* as the keys' own e^(x − max), beside either kind of kernel */
		sum += e; /* the sink's column last, as torch.cat([attn_weights, sinks], dim=-1) puts it */
	}
	mat_divide(len, out, sum);
	/* each exp is in [0, 1] and sum ≥ 1 (the maximum's term is 1): all finite unless max or sum is not */
	*nonfinite |= !isfinite(max) || !isfinite(sum);
	return e / sum;
}

int attn_softmax_row(const double *x, double *out, int len)
{
	int nonfinite = 0;

	return softmax_row(x, out, len, -INFINITY, &nonfinite) == 1.0;
}

double attn_softmax_sink_row(const double *x, double *out, int len, double sink)
{
	int nonfinite = 0;

	return softmax_row(x, out, len, sink, &nonfinite);
}

/* q, k, w_e: len. Bahdanau's e = Σ_c w_e[c] · tanh(q_c + k_c). */
double attn_additive(const double *q, const double *k, const double *w_e, int len)
{
	double sum = 0.0;
	int c;

	for (c = 0; c < len; c++)
		sum += w_e[c] * tanh(q[c] + k[c]);
	return sum;
}

/* ---------------------------------------------------------------- passes */

/*
 * One pass per stage, in the order of the stage table (catalog.h), each
 * writing the matrices that stage makes into storage already allocated to
 * the catalogue's shapes. Every pass runs, whether or not the lesson shows
 * its stage: without a mask, masked is scaled itself; with one head,
 * concat is that head's output; without W_o, output is concat.
 */

/* Pass 0, input: X = input (n × d_model); S = source_input (m × d_src). */
static void pass_input(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	memcpy(a->X.a, cfg->input.a, (size_t)cfg->n * (size_t)cfg->d_model * sizeof(double));
	if (cfg->embed_scale > 0.0) /* Gemma: the embedding times its normalizer, √d_model */
		for (size_t i = 0; i < (size_t)cfg->n * (size_t)cfg->d_model; i++)
			a->X.a[i] *= cfg->embed_scale;
	if (cfg->has_source)
		memcpy(a->S.a, cfg->source_input.a, (size_t)cfg->m * (size_t)cfg->d_src * sizeof(double));
}

/* Pass 1, positional: X += PE (n × d_model); S += PE_src (m × d_src). */
static void pass_positional(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	size_t i, count;

	(void)lp;
	if (cfg->positional == POS_NONE)
		return;
	if (cfg->positional == POS_LEARNED) /* the table's rows as given (a model's own source has none: GPT-2 has no cross-attention) */
		memcpy(a->PE.a, cfg->pe_learned.a, (size_t)cfg->n * (size_t)cfg->d_model * sizeof *a->PE.a);
	else
		attn_positional(&a->PE);
	count = (size_t)cfg->n * (size_t)cfg->d_model;
	for (i = 0; i < count; i++)
		a->X.a[i] += a->PE.a[i];
	if (!cfg->has_source || cfg->positional == POS_LEARNED)
		return;
	attn_positional(&a->PE_src);
	count = (size_t)cfg->m * (size_t)cfg->d_src;
	for (i = 0; i < count; i++)
		a->S.a[i] += a->PE_src.a[i];
}

int attn_add_bias(Mat *out, const Mat *b)
{
	int bad = 0;

	if (mat_empty(b))
		return 0;
	for (int i = 0; i < out->rows; i++) {
		for (int j = 0; j < out->cols; j++)
			MAT_AT(*out, i, j) += b->a[j];
		bad |= mat_nonfinite(&MAT_AT(*out, i, 0), (size_t)out->cols);
	}
	return bad;
}

/* The query heads the passes from the projection to concat remake: [*lo, *hi), every head but after an edit of one's weights. */
static void heads_remade(const Attn *a, int *lo, int *hi)
{
	const int some = a->heads_hi > a->heads_lo && a->heads_lo >= 0 && a->heads_hi <= a->heads;

	*lo = some ? a->heads_lo : 0;
	*hi = some ? a->heads_hi : a->heads;
}

int attn_project(const Mat *X, int lo, int hi, int c0, int c1, const Mat *W, const Mat *b, Mat *P)
{
	int bad;

	if (P->a == NULL || hi <= lo || c1 <= c0) /* a matrix this lesson has not (mat_mul's rule), or nothing asked */
		return 0;
	bad = mat_mul_view(hi - lo, X->cols, c1 - c0, &MAT_AT(*X, lo, 0), (size_t)X->cols, &W->a[c0], (size_t)W->cols, 0,
	                   &MAT_AT(*P, lo, c0), (size_t)P->cols, 0);
	for (int i = lo; i < hi && !mat_empty(b); i++) {
		for (int j = c0; j < c1; j++)
			MAT_AT(*P, i, j) += b->a[j];
		bad |= mat_nonfinite(&MAT_AT(*P, i, c0), (size_t)(c1 - c0));
	}
	return bad;
}

/*
 * Pass 2, project: Q = X·W_q + b_q (n × h·d_k), K = S·W_k + b_k (m × h·d_k),
 * V = S·W_v + b_v (m × h·d_v). In a pre-norm block the attention reads
 * norm1 = N1(X) instead of X. After an edit of input rows (attn_update:
 * rows_lo, rows_hi) only those rows are remade: of Q, and of K and V when
 * they are made from the same rows (no source of their own); after an edit
 * of the weights only some heads read (heads_lo, heads_hi), only their
 * columns.
 */
static void pass_project(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const Mat *X = lp->block.present && lp->block.norm == NORM_PRE ? &a->norm1 : &a->X;
	const Mat *S = cfg->has_source ? &a->S : X;
	const int some = a->rows_hi > a->rows_lo && a->rows_lo >= 0 && a->rows_hi <= X->rows;
	const int lo = some ? a->rows_lo : 0, hi = some ? a->rows_hi : X->rows;
	const int slo = S == X ? lo : 0, shi = S == X ? hi : S->rows;
	int h0, h1;

	heads_remade(a, &h0, &h1);
	if (h1 - h0 < a->heads) { /* the heads' columns: the query heads', and their key/value heads' */
		int g0 = a->kv_heads, g1 = 0;
		for (int h = h0; h < h1; h++) {
			const int g = attn_kv_head(a, h);
			g0 = g < g0 ? g : g0;
			g1 = g + 1 > g1 ? g + 1 : g1;
		}
		if (a->redo == NULL || a->redo[AM_Q])
			a->nonfinite |= attn_project(X, 0, X->rows, h0 * lp->d_k, h1 * lp->d_k, &lp->W_q, &lp->b_q, &a->Q);
		if (a->redo == NULL || a->redo[AM_K])
			a->nonfinite |= attn_project(S, 0, S->rows, g0 * lp->d_k, g1 * lp->d_k, &lp->W_k, &lp->b_k, &a->K);
		if (a->redo == NULL || a->redo[AM_V])
			a->nonfinite |= attn_project(S, 0, S->rows, g0 * lp->d_v, g1 * lp->d_v, &lp->W_v, &lp->b_v, &a->V);
		return;
	}
	/* an edit of W_v remakes V alone (attn_update); a computation makes all three */
	if (a->redo == NULL || a->redo[AM_Q])
		a->nonfinite |= attn_project(X, lo, hi, 0, lp->W_q.cols, &lp->W_q, &lp->b_q, &a->Q);
	if (a->redo == NULL || a->redo[AM_K])
		a->nonfinite |= attn_project(S, slo, shi, 0, lp->W_k.cols, &lp->W_k, &lp->b_k, &a->K);
	if (a->redo == NULL || a->redo[AM_V])
		a->nonfinite |= attn_project(S, slo, shi, 0, lp->W_v.cols, &lp->W_v, &lp->b_v, &a->V);
}

/*
 * While attn_update remakes a layer whose only change is rows [rows_lo,
 * rows_hi) of its input (pass_project's), under a causal or window −∞ mask
 * of its own tokens: row i of the weights, weighted sums, concat and output
 * reads only keys j ≤ i, so the rows before rows_lo keep theirs, and of the
 * scores they change only in the columns of the keys edited. Returns
 * rows_lo, the first row the passes from the scores on remake whole; 0:
 * every row.
 */
static int rows_kept_before(const Attn *a, const ModelConfig *cfg)
{
	if (a->rows_hi > a->rows_lo && a->rows_lo > 0 && a->rows_hi <= cfg->n && cfg->m == cfg->n && !cfg->has_source &&
	    attn_weights_lower(cfg))
		return a->rows_lo;
	return 0;
}

/*
 * Pass 3, scores, for each head h, reading the head's columns of Q and K:
 *   q_i = Q[i][h·d_k … (h+1)·d_k)   k_j = K[j][same]
 *   scores  n × m   q_i · k_j   (or Σ_c w_e[c]·tanh(q_ic + k_jc))
 */
static void pass_scores(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int n = cfg->n, m = cfg->m, dk = lp->d_k;
	/* Q and K, or what a variant made of them for the scores to read (variants.h: reads) */
	const Mat *Q = attn_slot(a, attn_reads(a, AM_Q), 0), *K = attn_slot(a, attn_reads(a, AM_K), 0);
	/*
	 * After an edit of input rows [lo, hi), pass_project having remade only those rows of Q and K, and no
	 * variant on that makes a row of what the scores read from others (attn_heads_apart's are none): the
	 * scores change only in those rows and those columns (cross). Else under a causal mask: rows [from, n)
	 * whole, and before them the edited keys' columns.
	 */
	const int cross = a->rows_hi > a->rows_lo && a->rows_lo >= 0 && a->rows_hi <= n && cfg->m == n &&
	                  !cfg->has_source && attn_heads_apart(a);
	const int from = cross ? 0 : rows_kept_before(a, cfg);
	const int lo = cross || from > 0 ? a->rows_lo : 0, hi = cross || from > 0 ? a->rows_hi : 0;
	int h, i, j, h0, h1;

	heads_remade(a, &h0, &h1);
	for (h = h0; h < h1; h++) {
		AttnHead *hd = &a->head[h];
		const size_t kcol = (size_t)attn_kv_head(a, h) * dk; /* the key head this query head reads */
		if (cfg->score == SCORE_ADDITIVE) {
			const double *w_e = &lp->w_e.a[h * dk];
			for (i = 0; i < n; i++) {
				const double *q_i = &Q->a[(size_t)i * Q->cols + (size_t)h * dk];
				double *scores_i = &hd->scores.a[(size_t)i * m];
				const int whole = cross ? i >= lo && i < hi : i >= from;
				const int j0 = whole ? 0 : lo, j1 = whole ? m : hi;
				for (j = j0; j < j1; j++) {
					const double *k_j = &K->a[(size_t)j * K->cols + kcol];
					scores_i[j] = attn_additive(q_i, k_j, w_e, dk);
				}
				a->nonfinite |= mat_nonfinite(scores_i + j0, (size_t)(j1 - j0));
			}
		} else {
			/*
			 * scores (n × m) = Q_head (n × d_k) · K_headᵀ (d_k × m): every q_i · k_j at once; after an edit of
			 * input rows, rows [r0, n) whole and the edited keys' columns [lo, hi) of the rows before, and with
			 * cross of the rows after hi too. Each cell's sum is the same wherever it lies (base/matrix.h).
			 */
			const int r0 = cross ? lo : from, r1 = cross ? hi : n;
			a->nonfinite |= mat_mul_view(r1 - r0, dk, m, &Q->a[(size_t)r0 * Q->cols + (size_t)h * dk], (size_t)Q->cols,
			                             &K->a[kcol], (size_t)K->cols, 1, &hd->scores.a[(size_t)r0 * m], (size_t)m, 0);
			if (r0 > 0)
				a->nonfinite |= mat_mul_view(r0, dk, hi - lo, &Q->a[(size_t)h * dk], (size_t)Q->cols,
				                             &K->a[(size_t)lo * K->cols + kcol], (size_t)K->cols, 1, &hd->scores.a[lo],
				                             (size_t)m, 0);
			if (r1 < n)
				a->nonfinite |= mat_mul_view(n - r1, dk, hi - lo, &Q->a[(size_t)r1 * Q->cols + (size_t)h * dk],
				                             (size_t)Q->cols, &K->a[(size_t)lo * K->cols + kcol], (size_t)K->cols, 1,
				                             &hd->scores.a[(size_t)r1 * m + lo], (size_t)m, 0);
		}
	}
}

/* ---------------------------------------------------------------- the derived stages (attention.h) */

int attn_derived(AttnMatrix which)
{
	return which == AM_SCALED || which == AM_MASKED || attn_variant_derived(which);
}

/* out[j] = in[j] × f, j < len: one rounded product a cell, however it is made. */
static void scale_row(const double *in, double *out, size_t len, double f)
{
	size_t j = 0;
#if defined(__SSE2__)
	const __m128d fv = _mm_set1_pd(f);
	for (; j + 4 <= len; j += 4) {
		_mm_storeu_pd(out + j, _mm_mul_pd(_mm_loadu_pd(in + j), fv));
		_mm_storeu_pd(out + j + 2, _mm_mul_pd(_mm_loadu_pd(in + j + 2), fv));
	}
#endif
	for (; j < len; j++)
		out[j] = in[j] * f;
}

static double mask_fill(const ModelConfig *cfg)
{
	return cfg->mask_fill_inf ? -INFINITY : cfg->mask_fill;
}

/* row[j] := fill where vis[j] is 0, j < len: a run of keys at a time. */
static void fill_hidden(double *row, const unsigned char *vis, int len, double fill)
{
	for (int j = 0, end; j < len; j = end) {
		const unsigned char *e = memchr(vis + j, !vis[j], (size_t)(len - j));
		end = e != NULL ? (int)(e - vis) : len;
		if (!vis[j])
			for (int t = j; t < end; t++)
				row[t] = fill;
	}
}

/*
 * Cells [0, len) of row i of derived matrix w of head h, into out (kernels.h):
 *   scaled = scores × factor;  a variant's bias b_ij (score_bias) alone, or
 *   biased = scaled + b;  a variant's map f (score_map: soft-capping) of
 *   biased or scaled, its mapped_matrix;  masked = the last of these, with
 *   the cells the mask hides := fill.
 * Each cell is the same operations, in the same order, as when the stages were kept.
 */
void attn_derived_row(const Attn *a, AttnMatrix w, int h, int i, double *out, int len)
{
	const ModelConfig *cfg = attn_config(a);
	const size_t m = (size_t)cfg->m;
	const AttnVariant *v = attn_score_bias(a), *f;

	if (v != NULL && w == v->bias_matrix) {
		for (int j = 0; j < len; j++)
			out[j] = v->score_bias(a, h, i, j);
		return;
	}
	scale_row(&a->head[h].scores.a[(size_t)i * m], out, (size_t)len, a->factor);
	if (w != AM_SCALED && v != NULL)
		for (int j = 0; j < len; j++)
			out[j] = out[j] + v->score_bias(a, h, i, j);
	if (w != AM_SCALED && (v == NULL || w != v->biased_matrix) && (f = attn_score_map(a)) != NULL) {
		if (f->score_map_row != NULL)
			f->score_map_row(a, out, len);
		else
			for (int j = 0; j < len; j++)
				out[j] = f->score_map(a, out[j]);
	}
	if (w == AM_MASKED)
		fill_hidden(out, &a->visible[(size_t)i * m], len, mask_fill(cfg));
}


double attn_derived_cell(const Attn *a, AttnMatrix which, int h, int i, int j)
{
	const AttnVariant *v = attn_score_bias(a), *f;
	double x;

	if (v != NULL && which == v->bias_matrix)
		return v->score_bias(a, h, i, j);
	if (which == AM_MASKED && !a->visible[(size_t)i * attn_config(a)->m + j])
		return mask_fill(attn_config(a));
	x = MAT_AT(a->head[h].scores, i, j) * a->factor;
	if (which != AM_SCALED && v != NULL)
		x = x + v->score_bias(a, h, i, j);
	if (which != AM_SCALED && (v == NULL || which != v->biased_matrix) && (f = attn_score_map(a)) != NULL)
		x = f->score_map(a, x);
	return x;
}

/*
 * Derived matrix w of head h, made into the cache's slot asked for longest
 * ago (its buffer reused); NULL out of memory. a is const: the cache is
 * reached through a pointer (attention.h: AttnCache), so what a view asks
 * for is remembered without the computation's own numbers changing.
 */
const Mat *attn_derived_matrix(const Attn *a, AttnMatrix w, int h)
{
	AttnCache *c = a->cache;
	AttnDerived *pick = NULL;
	const int n = attn_config(a)->n, m = attn_config(a)->m;

	if (c == NULL || mat_empty(&a->head[h].scores) || a->visible == NULL) /* a copy attn_update kept without it */
		return NULL;
	for (int k = 0; k < ATTN_DERIVED_SLOTS; k++) {
		AttnDerived *d = &c->slot[k];
		if (d->valid && d->which == (int)w && d->head == h) {
			d->used = ++c->clock;
			return &d->m;
		}
		if (pick == NULL || (pick->valid && (!d->valid || d->used < pick->used)))
			pick = d;
	}
	pick->valid = 0;
	if (!mat_empty(&pick->m) && (pick->m.rows != n || pick->m.cols != m))
		mat_free(&pick->m);
	if (mat_empty(&pick->m) && mat_alloc_whole(&pick->m, n, m) != 0)
		return NULL;
	for (int i = 0; i < n; i++)
		attn_derived_row(a, w, h, i, &pick->m.a[(size_t)i * m], m);
	pick->valid = 1;
	pick->which = (int)w;
	pick->head = h;
	pick->used = ++c->clock;
	return &pick->m;
}

void attn_touch(Attn *a)
{
	static unsigned long versions;

	a->version = ++versions;
}

int attn_reserve_derived(Attn *a, double max_numbers)
{
	const int n = attn_config(a)->n, m = attn_config(a)->m;

	if ((double)ATTN_DERIVED_SLOTS * n * m > max_numbers || a->visible == NULL || a->cache == NULL)
		return 0;
	for (int k = 0; k < ATTN_DERIVED_SLOTS; k++) {
		Mat *s = &a->cache->slot[k].m;
		if (!mat_empty(s))
			continue;
		if (mat_alloc_whole(s, n, m) != 0)
			return -1;
		memset(s->a, 0, (size_t)n * (size_t)m * sizeof *s->a);
	}
	return 0;
}

void attn_derived_forget(Attn *a)
{
	for (int k = 0; a->cache != NULL && k < ATTN_DERIVED_SLOTS; k++)
		a->cache->slot[k].valid = 0;
}

double *attn_scratch_row(Attn *a, int m)
{
	double *r = malloc((size_t)m * sizeof *r);

	if (r == NULL)
		a->failed = 1;
	return r;
}

/*
 * Pass 4, scale: scaled (n × m) = scores × factor (1/√d_k by default), a
 * derived stage: nothing is kept, only its numbers are checked. The scores
 * were (a non-finite score was noted), so with |factor| ≤ 1 no product can
 * overflow; otherwise each row is made and looked over.
 */
static void pass_scale(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	double *row;

	(void)lp;
	if (fabs(a->factor) <= 1.0 || (row = attn_scratch_row(a, cfg->m)) == NULL)
		return;
	for (int h = 0; h < a->heads; h++)
		for (int i = 0; i < cfg->n; i++) {
			attn_derived_row(a, AM_SCALED, h, i, row, cfg->m);
			a->nonfinite |= mat_nonfinite(row, (size_t)cfg->m);
		}
	free(row);
}

/* Which keys each query may see: visible (n × m), 1 = may attend; rows with none. */
static void build_visibility(Attn *a, const ModelConfig *cfg)
{
	const int banded = cfg->mask == MASK_NONE || (cfg->mask != MASK_LIST && model_mask_causal(cfg));
	int i, j;

	for (i = 0; i < cfg->n; i++) {
		unsigned char *row = &a->visible[(size_t)i * cfg->m];
		int seen = 0;
		if (banded) { /* one run of keys: lo … hi, as model_mask_sees says */
			const int hi = cfg->mask == MASK_NONE ? cfg->m - 1 : i;
			const int lo = attn_keep_first(cfg, i); /* a variant's window */
			memset(row, 0, (size_t)cfg->m);
			if (hi >= lo)
				memset(row + lo, 1, (size_t)(hi - lo + 1));
			seen = hi >= lo;
		} else
			for (j = 0; j < cfg->m; j++) {
				const int v = model_mask_sees(cfg, i, j);
				row[j] = (unsigned char)v;
				seen |= v;
			}
		if (cfg->mask_fill_inf) {
			a->row_all_masked[i] = (unsigned char)!seen;
			a->any_row_all_masked |= !seen;
		}
	}
}

/*
 * Pass 5, mask: masked (n × m) = scaled, hidden cells := fill (−∞ unless
 * mask_fill says otherwise), a derived stage: the pass only works out which
 * cells are visible. A visible cell is a copy of scaled or biased, checked
 * by their passes; a hidden one is fill.
 */
static void pass_mask(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	build_visibility(a, cfg);
	a->nonfinite |= !cfg->mask_fill_inf && !isfinite(mask_fill(cfg));
}

/* With a causal (or window) −∞ mask, row i ends at key i: what follows has exactly 0 weight (attention.h). */
int attn_weights_lower(const ModelConfig *cfg)
{
	return model_mask_causal(cfg) && cfg->mask_fill_inf;
}

/* Pass 6, softmax: each row of masked becomes weights (n × m) that sum to 1 (0 with nothing visible; less than 1 with a sink). */
static void pass_softmax(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int n = cfg->n, m = cfg->m;
	const AttnVariant *sink = attn_sink(a);
	double *row = attn_scratch_row(a, m); /* the row of masked, made as it is read */
	int h, i, h0, h1;

	(void)lp;
	heads_remade(a, &h0, &h1);
	for (h = h0; row != NULL && h < h1; h++)
		for (i = rows_kept_before(a, cfg); i < n; i++) {
			const int len = attn_weights_lower(cfg) ? i + 1 : m;
			if (i + 1 < n) { /* the next row of scores on its way from memory while this one is made */
				const double *next = &a->head[h].scores.a[(size_t)(i + 1) * m];
				for (int j = 0; j < len + 1 && j < m; j += 8)
					__builtin_prefetch(next + j);
			}
			attn_derived_row(a, AM_MASKED, h, i, row, len);
			/* a variant's sink logit beside the keys (variants.h: sink_logit) */
			softmax_row(row, &a->head[h].weights.a[(size_t)i * m], len, sink != NULL ? sink->sink_logit(a, h) : -INFINITY,
			            &a->nonfinite);
			memset(&a->head[h].weights.a[(size_t)i * m + len], 0, (size_t)(m - len) * sizeof(double));
		}
	free(row);
}

/*
 * Pass 7, weighted (n × d_v) = weights (n × m) · V_head (m × d_v): row i is
 * Σ_j w_ij · v_j. Under a causal −∞ mask, w_ij = 0 for j > i, and the
 * kernel skips those terms.
 */
static void pass_weighted(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int n = cfg->n, m = cfg->m, dv = lp->d_v;
	int h, h0, h1;

	heads_remade(a, &h0, &h1);
	for (h = h0; h < h1; h++)
		a->nonfinite |= mat_mul_view(n, m, dv, a->head[h].weights.a, (size_t)m, &a->V.a[(size_t)attn_kv_head(a, h) * dv],
		                             (size_t)a->V.cols, 0, a->head[h].weighted.a, (size_t)dv, attn_weights_lower(cfg));
}

/*
 * Pass 8, concat: head h's output fills columns [h·d_v, (h+1)·d_v) of concat (n × h·d_v): its weighted, or
 * what a variant gives instead (head_row: differential attention's pair output).
 */
static void pass_concat(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const AttnVariant *v = attn_head_output(a);
	int h, i, h0, h1;

	heads_remade(a, &h0, &h1);
	for (h = h0; h < lp->heads && h < h1; h++)
		for (i = rows_kept_before(a, cfg); i < cfg->n; i++)
			memcpy(&a->concat.a[(size_t)i * a->concat.cols + (size_t)h * lp->d_v],
			       v != NULL ? v->head_row(a, h, i) : &a->head[h].weighted.a[(size_t)i * lp->d_v],
			       (size_t)lp->d_v * sizeof(double));
}

/*
 * Pass 9, output: output = concat · W_o  (n × h·d_v)·(h·d_v × d_out) = n × d_out; concat without W_o.
 * A variant may give W_o another matrix of concat's shape to read (variants.h: reads; gated attention's gated).
 */
static void pass_output(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const Mat *in = attn_slot(a, attn_reads(a, AM_CONCAT), 0);
	const int from = rows_kept_before(a, cfg); /* after an edit of input rows, the rows from there */
	Mat rows = { in->rows - from, a->output.cols, &MAT_AT(a->output, from, 0) };

	if (mat_empty(&lp->W_o)) {
		memcpy(rows.a, &MAT_AT(*in, from, 0), (size_t)rows.rows * (size_t)in->cols * sizeof(double));
		a->nonfinite |= attn_add_bias(&rows, &lp->b_o);
	} else
		a->nonfinite |= attn_project(in, from, in->rows, 0, lp->W_o.cols, &lp->W_o, &lp->b_o, &a->output);
}

/* ---------------------------------------------------------------- the block */

/*
 * x, out: len; stats: 2.
 * LayerNorm: μ = Σx/len, σ² = Σ(x − μ)²/len (biased, as PyTorch), out = (x − μ)/√(σ² + ε)·γ + β.
 * RMSNorm:   ms = Σx²/len, out = x/√(ms + ε)·γ.
 */
void attn_norm_row(const double *x, double *out, int len, int rms, double eps, const double *gamma,
                   const double *beta, double *stats)
{
	double mean = 0.0, var = 0.0, inv;
	int j;

	if (rms) {
		for (j = 0; j < len; j++)
			var += x[j] * x[j];
		var /= len;
		inv = 1.0 / sqrt(var + eps);
		for (j = 0; j < len; j++)
			out[j] = x[j] * inv * (rms == NORM_RMSNORM_1P ? 1.0 + gamma[j] : gamma[j]);
		if (stats != NULL) {
			stats[0] = var;
			stats[1] = sqrt(var + eps);
		}
		return;
	}
	for (j = 0; j < len; j++)
		mean += x[j];
	mean /= len;
	for (j = 0; j < len; j++)
		var += (x[j] - mean) * (x[j] - mean);
	var /= len;
	inv = 1.0 / sqrt(var + eps);
	for (j = 0; j < len; j++)
		out[j] = (x[j] - mean) * inv * gamma[j] + (beta != NULL ? beta[j] : 0.0);
	if (stats != NULL) {
		stats[0] = mean;
		stats[1] = var;
	}
}

/* out (n × d) = N(in) row by row, with γ, β, and each row's statistics (n × 2). */
static void norm_rows(const Mat *in, Mat *out, Mat *stats, NormKind kind, double eps, const Mat *gamma,
                      const Mat *beta)
{
	for (int i = 0; i < in->rows; i++)
		attn_norm_row(&in->a[(size_t)i * in->cols], &out->a[(size_t)i * out->cols], in->cols, (int)kind,
		              eps, gamma->a, mat_empty(beta) ? NULL : beta->a, stats != NULL ? &stats->a[(size_t)i * 2] : NULL);
}

/* out = x + y, cell by cell (n × d_model). */
static void add_rows(const Mat *x, const Mat *y, Mat *out)
{
	for (size_t i = 0; i < (size_t)out->rows * (size_t)out->cols; i++)
		out->a[i] = x->a[i] + y->a[i];
}

double attn_relu(double x)
{
	return x > 0 ? x : 0.0;
}

/* gelu(x) = x·Φ(x) = x/2·(1 + erf(x/√2)): the exact form, PyTorch's default. */
double attn_gelu(double x)
{
	return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

/* gelu_new(x) = x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³))): GPT-2's tanh form, as transformers' NewGELUActivation writes it. */
double attn_gelu_tanh(double x)
{
	return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * pow(x, 3.0))));
}

/* silu(x) = x·σ(x) = x/(1 + e^−x). */
double attn_silu(double x)
{
	return x / (1.0 + exp(-x));
}

void attn_swiglu(size_t n, const double *h, const double *gate, double *out)
{
	enum { PIECE = 1024 }; /* e^−h a piece at a time, on the stack */
	double e[PIECE];

	for (size_t i0 = 0; i0 < n; i0 += PIECE) {
		const int len = n - i0 < PIECE ? (int)(n - i0) : PIECE;
		for (int i = 0; i < len; i++)
			e[i] = -h[i0 + i];
		mat_exp_shifted(len, e, 0.0, e);
		for (int i = 0; i < len; i++)
			out[i0 + i] = h[i0 + i] / (1.0 + e[i]) * gate[i0 + i];
	}
}

/* The rows the FFN reads: norm1 (post-norm), norm2 (pre-norm), residual1 (no norm, or norms after each sublayer). */
const Mat *attn_ffn_input(const Attn *a)
{
	const Block *b = &attn_params(a)->block;
	return b->norm == NORM_POST ? &a->norm1 : b->norm == NORM_PRE ? &a->norm2 : &a->residual1;
}

/* Pre-norm, before the attention: norm1 (n × d_model) = N1(x). */
static void pass_norm1_pre(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	norm_rows(&a->X, &a->norm1, &a->norm1_stats, lp->block.norm_kind, lp->block.eps, &lp->block.ln1_gamma,
	          &lp->block.ln1_beta);
}

/* Norms after each sublayer (OLMo 2): norm1 (n × d_model) = N1(output), what the residual adds. */
static void pass_norm1_after(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	norm_rows(&a->output, &a->norm1, &a->norm1_stats, lp->block.norm_kind, lp->block.eps, &lp->block.ln1_gamma,
	          &lp->block.ln1_beta);
}

/* Sandwich norms (Gemma's post_attention_layernorm): norm1_after (n × d_model) = N1'(output), what the residual adds. */
static void pass_norm1_sandwich(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	norm_rows(&a->output, &a->norm1_after, &a->norm1_after_stats, lp->block.norm_kind, lp->block.eps,
	          &lp->block.ln1_after_gamma, &lp->block.ln1_beta); /* empty: RMSNorm */
}

/* residual1 (n × d_model) = x + output (x + norm1 with norms after each sublayer, x + norm1_after with sandwich
 * norms): the attention adds to the rows it started from. */
static void pass_residual1(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	add_rows(&a->X, lp->block.sandwich ? &a->norm1_after : lp->block.norm == NORM_AFTER ? &a->norm1 : &a->output,
	         &a->residual1);
}

/* Post-norm: norm1 (n × d_model) = N1(residual1). */
static void pass_norm1_post(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	norm_rows(&a->residual1, &a->norm1, &a->norm1_stats, lp->block.norm_kind, lp->block.eps, &lp->block.ln1_gamma,
	          &lp->block.ln1_beta);
}

/* Pre-norm, before the FFN: norm2 (n × d_model) = N2(residual1). */
static void pass_norm2_pre(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	norm_rows(&a->residual1, &a->norm2, &a->norm2_stats, lp->block.norm_kind, lp->block.eps, &lp->block.ln2_gamma,
	          &lp->block.ln2_beta);
}

int attn_mul_param(int r, const double *A, size_t lda, const LayerParams *lp, const Mat *W, double *C, size_t ldc)
{
	const int k = layer_params_dormant_slot(lp, W);

	if (k >= 0) {
		const FilePiece *f = lp->file[k].piece;
		Mat d = { 0 };
		int bad;
		if (lp->file[k].n == 1 && f->row0 == 0 && f->col0 == 0) /* one tensor: its numbers read as it lies */
			return f->transpose ? matview_mul_t(&f->v, r, A, lda, C, ldc)
			                    : matview_mul_cols(&f->v, f->first, f->step, W->cols, r, A, lda, C, ldc);
		if (layer_params_file_doubles(lp, k, &d) != 0) /* pieces: made doubles for this product */
			return 1;
		bad = mat_mul_view(r, d.rows, d.cols, A, lda, d.a, (size_t)d.cols, 0, C, ldc, 0);
		mat_free(&d);
		return bad;
	}
	return mat_mul_view(r, W->rows, W->cols, A, lda, W->a, (size_t)W->cols, 0, C, ldc, 0);
}

/* The product x·W of a block's weight into out (rows × W.cols), whatever W is kept in (attn_mul_param). */
static void mul_weight(const Mat *x, const LayerParams *lp, const Mat *W, Mat *out)
{
	if (out->a != NULL)
		(void)attn_mul_param(x->rows, x->a, (size_t)x->cols, lp, W, out->a, (size_t)out->cols);
}

/* ffn_hidden (n × d_ff) = x·W_1 + b_1 (SwiGLU: also ffn_gate = x·W_3 + b_3), every row on its own. */
static void pass_ffn_hidden(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	mul_weight(attn_ffn_input(a), lp, &lp->block.W_1, &a->ffn_hidden);
	attn_add_bias(&a->ffn_hidden, &lp->block.b_1);
	if (lp->block.activation == ACT_SWIGLU || lp->block.activation == ACT_GEGLU) { /* the gate, SwiGLU's or Gemma's */
		mul_weight(attn_ffn_input(a), lp, &lp->block.W_3, &a->ffn_gate);
		attn_add_bias(&a->ffn_gate, &lp->block.b_3);
	}
}

/* ffn_act (n × d_ff) = relu(h), gelu(h), or silu(h) ⊙ gate, cell by cell. */
static void pass_activation(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const size_t count = (size_t)a->ffn_hidden.rows * (size_t)a->ffn_hidden.cols;
	const double *h = a->ffn_hidden.a, *gate = a->ffn_gate.a;
	double *out = a->ffn_act.a;

	(void)cfg;
	/* one loop an activation (not a switch a cell), so the compiler can vectorise ReLU's */
	switch (lp->block.activation) {
	case ACT_RELU:
		for (size_t i = 0; i < count; i++)
			out[i] = attn_relu(h[i]);
		break;
	case ACT_GELU:
		for (size_t i = 0; i < count; i++)
			out[i] = attn_gelu(h[i]);
		break;
	case ACT_GELU_TANH:
		for (size_t i = 0; i < count; i++)
			out[i] = attn_gelu_tanh(h[i]);
		break;
	case ACT_SWIGLU:
		attn_swiglu(count, h, gate, out);
		break;
	case ACT_GEGLU:
		for (size_t i = 0; i < count; i++)
			out[i] = attn_gelu_tanh(h[i]) * gate[i];
		break;
	}
}

/* ffn_out (n × d_model) = ffn_act·W_2 + b_2. */
static void pass_ffn_out(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	mul_weight(&a->ffn_act, lp, &lp->block.W_2, &a->ffn_out);
	attn_add_bias(&a->ffn_out, &lp->block.b_2);
}

/* Norms after each sublayer (OLMo 2): norm2 (n × d_model) = N2(ffn_out), what the second residual adds. */
static void pass_norm2_after(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	norm_rows(&a->ffn_out, &a->norm2, &a->norm2_stats, lp->block.norm_kind, lp->block.eps, &lp->block.ln2_gamma,
	          &lp->block.ln2_beta);
}

/* Sandwich norms (Gemma's post_feedforward_layernorm): norm2_after (n × d_model) = N2'(ffn_out). */
static void pass_norm2_sandwich(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	norm_rows(&a->ffn_out, &a->norm2_after, &a->norm2_after_stats, lp->block.norm_kind, lp->block.eps,
	          &lp->block.ln2_after_gamma, &lp->block.ln2_beta); /* empty: RMSNorm */
}

/* residual2 (n × d_model) = the FFN's residual input (norm1 post-norm, else residual1) + ffn_out (norm2 after the
 * FFN, norm2_after with sandwich norms). */
static void pass_residual2(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	add_rows(lp->block.norm == NORM_POST ? &a->norm1 : &a->residual1,
	         lp->block.sandwich ? &a->norm2_after : lp->block.norm == NORM_AFTER ? &a->norm2 : &a->ffn_out,
	         &a->residual2);
}

/* Post-norm: norm2 (n × d_model) = N2(residual2), the layer's output. */
static void pass_norm2_post(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	norm_rows(&a->residual2, &a->norm2, &a->norm2_stats, lp->block.norm_kind, lp->block.eps, &lp->block.ln2_gamma,
	          &lp->block.ln2_beta);
}

const Mat *attn_block_output(const Attn *a)
{
	const Block *b = &attn_params(a)->block;

	if (!b->present)
		return &a->output;
	if (b->has_ffn)
		return b->norm == NORM_POST ? &a->norm2 : &a->residual2;
	return b->norm == NORM_POST ? &a->norm1 : &a->residual1;
}

/* The last layer of a stack with a final norm: final (n × d_model) = N(the layer's output). */
static void pass_final_norm(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	norm_rows(attn_block_output(a), &a->final, NULL, cfg->final_kind, cfg->final_eps, &cfg->final_gamma, &cfg->final_beta);
}

const Mat *attn_layer_output(const Attn *a)
{
	return mat_empty(&a->final) ? attn_block_output(a) : &a->final;
}

const Attn *attn_layer(const Attn *a, int i)
{
	while (a != NULL && a->layer != i)
		a = a->next;
	return a;
}

const Mat *attn_final_output(const Attn *a)
{
	while (a->next != NULL)
		a = a->next;
	return attn_layer_output(a);
}

double attn_temperature(const ModelConfig *cfg)
{
	return cfg->temperature > 0.0 ? cfg->temperature : 1.0;
}

int attn_top_k(const ModelConfig *cfg)
{
	const int k = cfg->top_k >= 1 ? cfg->top_k : 10;

	return k < cfg->vocab ? k : cfg->vocab;
}

int attn_logits_row(const ModelConfig *cfg)
{
	return cfg->logits_row >= 0 && cfg->logits_row < cfg->n ? cfg->logits_row : cfg->n - 1;
}

int attn_top_entries(const double *row, int len, int k, int *idx)
{
	int have = 0;

	if (k > len)
		k = len;
	/* insertion into a sorted list of k: vocab × k steps at most, no copy of the row */
	for (int v = 0; v < len; v++) {
		int at = have;
		if (have == k && !(row[v] > row[idx[k - 1]]))
			continue;
		while (at > 0 && row[v] > row[idx[at - 1]])
			at--;
		if (have < k)
			have++;
		memmove(&idx[at + 1], &idx[at], (size_t)(have - 1 - at) * sizeof *idx);
		idx[at] = v;
	}
	return have;
}

/* Gemma 2's final soft cap: logits_raw keeps the products, logits = c·tanh(logits_raw / c) */
static void final_softcap(Attn *a, const ModelConfig *cfg)
{
	if (cfg->final_softcap > 0.0) { /* the lesson has logits_raw then (FEAT_FINAL_CAP) */
		const size_t len = (size_t)a->logits.rows * (size_t)a->logits.cols;
		for (size_t k = 0; k < len; k++) {
			a->logits_raw.a[k] = a->logits.a[k];
			a->logits.a[k] = cfg->final_softcap * tanh(a->logits_raw.a[k] / cfg->final_softcap);
		}
	}
}

/*
 * The LM head, after the last layer: logits (n × vocab) = x (n × d_model) · unembedᵀ (d_model × vocab), x the
 * final norm (or the last layer's output without one). Through the matrix-product kernels, unembed read
 * transposed in place: a vocabulary of 49152 is one product, not a loop of dot products. A real model's
 * unembedding stays in its file's dtype (unembed_view): LOGITS_ROWS of its rows at a time become doubles
 * and go through the same kernel into their columns of the logits (each cell is its own sum over d_model,
 * so the bits are those of one product over the whole matrix of doubles); a mapped file's pages of them go
 * back once read, so the head never holds more than a block of its rows in memory.
 */
enum { LOGITS_ROWS = 512 };

static void pass_logits(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const Mat *x = attn_layer_output(a);
	double *rows;

	(void)lp;
	if (matview_empty(&cfg->unembed_view)) {
		a->nonfinite |= mat_mul_view(x->rows, x->cols, cfg->vocab, x->a, (size_t)x->cols, cfg->unembed.a,
		                             (size_t)cfg->unembed.cols, 1, a->logits.a, (size_t)a->logits.cols, 0);
		final_softcap(a, cfg);
		return;
	}
	if ((rows = malloc((size_t)LOGITS_ROWS * (size_t)x->cols * sizeof *rows)) == NULL) {
		a->failed = 1;
		return;
	}
	for (int v0 = 0; v0 < cfg->vocab; v0 += LOGITS_ROWS) {
		const int count = cfg->vocab - v0 < LOGITS_ROWS ? cfg->vocab - v0 : LOGITS_ROWS;
		matview_rows(&cfg->unembed_view, v0, count, rows);
		matview_give_back(&cfg->unembed_view, v0, count);
		a->nonfinite |= mat_mul_view(x->rows, x->cols, count, x->a, (size_t)x->cols, rows, (size_t)x->cols, 1,
		                             &a->logits.a[v0], (size_t)a->logits.cols, 0);
	}
	free(rows);
	final_softcap(a, cfg);
}

/* next (1 × vocab) = softmax(z / T), z the logits of row logits_row: exp(z_v/T − max) / Σ_u exp(z_u/T − max). */
static void pass_next(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const double T = attn_temperature(cfg);
	const double *z = &MAT_AT(a->logits, attn_logits_row(cfg), 0);
	double *p = a->next_p.a;

	(void)lp;
	for (int v = 0; v < cfg->vocab; v++)
		p[v] = z[v] / T;
	attn_softmax_row(p, p, cfg->vocab);
}

/* The kernel of each stage: the engine's half of the stage table (catalog.c has the rest). */
static const StageKernel stage_kernel[STAGE_COUNT] = {
	[STAGE_INPUT] = pass_input,
	[STAGE_POSITIONAL] = pass_positional,
	[STAGE_PROJECT] = pass_project,
	/* a variant's stage: its own kernel (variants/, through attn_stage_kernel) */
	[STAGE_SPLIT] = NULL, /* a view of Q, K and V: nothing to compute */
	[STAGE_SCORES] = pass_scores,
	[STAGE_SCALE] = pass_scale,
	[STAGE_MASK] = pass_mask,
	[STAGE_SOFTMAX] = pass_softmax,
	[STAGE_WEIGHTED] = pass_weighted,
	[STAGE_CONCAT] = pass_concat,
	[STAGE_OUTPUT] = pass_output,
	[STAGE_NORM1_PRE] = pass_norm1_pre,
	[STAGE_NORM1_AFTER] = pass_norm1_after,
	[STAGE_NORM1_SANDWICH] = pass_norm1_sandwich,
	[STAGE_RESIDUAL1] = pass_residual1,
	[STAGE_NORM1_POST] = pass_norm1_post,
	[STAGE_NORM2_PRE] = pass_norm2_pre,
	[STAGE_FFN_HIDDEN] = pass_ffn_hidden,
	[STAGE_ACTIVATION] = pass_activation,
	[STAGE_FFN_OUT] = pass_ffn_out,
	[STAGE_NORM2_AFTER] = pass_norm2_after,
	[STAGE_NORM2_SANDWICH] = pass_norm2_sandwich,
	[STAGE_RESIDUAL2] = pass_residual2,
	[STAGE_NORM2_POST] = pass_norm2_post,
	[STAGE_FINAL_NORM] = pass_final_norm,
	[STAGE_LOGITS] = pass_logits,
	[STAGE_NEXT] = pass_next,
};

/*
 * What each pass remakes from what, for attn_update: a rule is one matrix
 * the pass writes and every matrix it is made from (given or computed; more
 * is harmless). A pass runs again when one of its rules reads a matrix that
 * changed; only pass_project looks at which (a->redo). A stage with no rules
 * here runs whenever anything changed, and everything after it counts as
 * changed.
 */
#define MADE ATTN_MADE
#define FFN_IN AM_NORM1, AM_NORM2, AM_RESIDUAL1
static const StageRule stage_rules[STAGE_COUNT][ATTN_STAGE_RULES] = {
	[STAGE_INPUT] = { { AM_X, MADE(AM_INPUT) }, { AM_S, MADE(AM_SOURCE_INPUT) } },
	[STAGE_POSITIONAL] = { { AM_X, MADE(AM_X) }, { AM_S, MADE(AM_S) } },
	[STAGE_NORM1_PRE] = { { AM_NORM1, MADE(AM_X, AM_LN1_GAMMA, AM_LN1_BETA) },
	                      { AM_NORM1_STATS, MADE(AM_X, AM_LN1_GAMMA, AM_LN1_BETA) } },
	[STAGE_PROJECT] = { { AM_Q, MADE(AM_X, AM_NORM1, AM_W_Q, AM_B_Q) },
	                    { AM_K, MADE(AM_X, AM_NORM1, AM_S, AM_W_K, AM_B_K) },
	                    { AM_V, MADE(AM_X, AM_NORM1, AM_S, AM_W_V, AM_B_V) } },
	[STAGE_SPLIT] = { { AM_COUNT, NULL } }, /* no pass */
	[STAGE_SCORES] = { { AM_SCORES, MADE(AM_Q, AM_K, AM_Q_NORM, AM_K_NORM, AM_Q_ROT, AM_K_ROT, AM_Q_L2, AM_K_L2, AM_W_E) } },
	[STAGE_SCALE] = { { AM_SCALED, MADE(AM_SCORES) } },
	[STAGE_MASK] = { { AM_MASKED, MADE(AM_SCALED, AM_BIASED, AM_CAPPED, AM_SPARSE) } },
	[STAGE_SOFTMAX] = { { AM_WEIGHTS, MADE(AM_MASKED, AM_SINKS) } },
	[STAGE_WEIGHTED] = { { AM_WEIGHTED, MADE(AM_WEIGHTS, AM_V) } },
	[STAGE_CONCAT] = { { AM_CONCAT, MADE(AM_WEIGHTED) } },
	[STAGE_OUTPUT] = { { AM_OUTPUT, MADE(AM_CONCAT, AM_GATED, AM_W_O, AM_B_O) } },
	[STAGE_NORM1_AFTER] = { { AM_NORM1, MADE(AM_OUTPUT, AM_LN1_GAMMA, AM_LN1_BETA) },
	                        { AM_NORM1_STATS, MADE(AM_OUTPUT, AM_LN1_GAMMA, AM_LN1_BETA) } },
	[STAGE_NORM1_SANDWICH] = { { AM_NORM1_AFTER, MADE(AM_OUTPUT, AM_LN1_AFTER_GAMMA) },
	                           { AM_NORM1_AFTER_STATS, MADE(AM_OUTPUT, AM_LN1_AFTER_GAMMA) } },
	[STAGE_RESIDUAL1] = { { AM_RESIDUAL1, MADE(AM_X, AM_OUTPUT, AM_NORM1, AM_NORM1_AFTER) } },
	[STAGE_NORM1_POST] = { { AM_NORM1, MADE(AM_RESIDUAL1, AM_LN1_GAMMA, AM_LN1_BETA) },
	                       { AM_NORM1_STATS, MADE(AM_RESIDUAL1, AM_LN1_GAMMA, AM_LN1_BETA) } },
	[STAGE_NORM2_PRE] = { { AM_NORM2, MADE(AM_RESIDUAL1, AM_LN2_GAMMA, AM_LN2_BETA) },
	                      { AM_NORM2_STATS, MADE(AM_RESIDUAL1, AM_LN2_GAMMA, AM_LN2_BETA) } },
	[STAGE_FFN_HIDDEN] = { { AM_FFN_HIDDEN, MADE(FFN_IN, AM_W_1, AM_B_1) },
	                       { AM_FFN_GATE, MADE(FFN_IN, AM_W_3, AM_B_3) } },
	[STAGE_ACTIVATION] = { { AM_FFN_ACT, MADE(AM_FFN_HIDDEN, AM_FFN_GATE) } },
	[STAGE_FFN_OUT] = { { AM_FFN_OUT, MADE(AM_FFN_ACT, AM_W_2, AM_B_2) } },
	[STAGE_NORM2_AFTER] = { { AM_NORM2, MADE(AM_FFN_OUT, AM_LN2_GAMMA, AM_LN2_BETA) },
	                        { AM_NORM2_STATS, MADE(AM_FFN_OUT, AM_LN2_GAMMA, AM_LN2_BETA) } },
	[STAGE_NORM2_SANDWICH] = { { AM_NORM2_AFTER, MADE(AM_FFN_OUT, AM_LN2_AFTER_GAMMA) },
	                           { AM_NORM2_AFTER_STATS, MADE(AM_FFN_OUT, AM_LN2_AFTER_GAMMA) } },
	[STAGE_RESIDUAL2] = { { AM_RESIDUAL2, MADE(AM_NORM1, AM_RESIDUAL1, AM_FFN_OUT, AM_NORM2, AM_NORM2_AFTER) } },
	[STAGE_NORM2_POST] = { { AM_NORM2, MADE(AM_RESIDUAL2, AM_LN2_GAMMA, AM_LN2_BETA) },
	                       { AM_NORM2_STATS, MADE(AM_RESIDUAL2, AM_LN2_GAMMA, AM_LN2_BETA) } },
	[STAGE_FINAL_NORM] = { { AM_FINAL, MADE(AM_OUTPUT, FFN_IN, AM_RESIDUAL2, AM_FINAL_GAMMA, AM_FINAL_BETA) } },
	[STAGE_LOGITS] = { { AM_LOGITS, MADE(AM_OUTPUT, FFN_IN, AM_RESIDUAL2, AM_FINAL, AM_UNEMBED) },
	                   { AM_LOGITS_RAW, MADE(AM_OUTPUT, FFN_IN, AM_RESIDUAL2, AM_FINAL, AM_UNEMBED) } },
	[STAGE_NEXT] = { { AM_NEXT, MADE(AM_LOGITS) } },
};
#undef FFN_IN
#undef MADE

StageKernel attn_stage_kernel(Stage st)
{
	const AttnVariant *v = attn_variant_of_stage(st);

	if (v != NULL)
		return v->kernel;
	return (unsigned)st < STAGE_COUNT ? stage_kernel[st] : NULL;
}

int attn_stage_runs(const Attn *a, Stage st)
{
	return attn_stage_kernel(st) != NULL && (stage_present(&a->shape, st) || (stage_kinds[st].flags & SF_ALWAYS));
}

const StageRule *attn_stage_rules(Stage st)
{
	const AttnVariant *v = attn_variant_of_stage(st);

	return v != NULL ? v->rules : stage_rules[st];
}

int attn_alloc_matrices(Attn *a)
{
	for (int w = 0; w < AM_COUNT; w++) {
		const MatrixKind *k = &matrix_kinds[w];
		int rows, cols;
		if ((k->flags & (MF_GIVEN | MF_GRAD)) || attn_derived((AttnMatrix)w) ||
		    !matrix_present(&a->shape, (AttnMatrix)w, NULL))
			continue;
		/* the n × m stages, and flash's running outputs (each row's after every key block: 64 MB at
		 * n = 1024, about 3 ms of zeroing), are written whole by their passes (when those run): no zeroing needed */
		const int whole = (w == AM_SCORES || w == AM_WEIGHTS || w == AM_FLASH_O) && attn_stage_runs(a, k->made_by);
		matrix_shape(&a->shape, (AttnMatrix)w, &rows, &cols);
		for (int h = 0; h < ((k->flags & MF_PER_HEAD) ? a->heads : 1); h++)
			if ((whole ? mat_alloc_whole : mat_alloc)(attn_slot(a, (AttnMatrix)w, h), rows, cols) != 0)
				return -1;
	}
	return 0;
}


void attn_free_matrices(Attn *a)
{
	/* every computed matrix the field tables map, the per-head ones of every head */
	for (int w = 0; w < AM_COUNT; w++) {
		const int per_head = (matrix_kinds[w].flags & MF_PER_HEAD) != 0;
		if (field_of((AttnMatrix)w) == 0 || (per_head && a->head == NULL))
			continue;
		for (int h = 0; h < (per_head ? a->heads : 1); h++)
			mat_free(attn_slot(a, (AttnMatrix)w, h));
	}
	for (int v = 0; v < attn_variant_count; v++)
		if (attn_variants[v]->release != NULL)
			attn_variants[v]->release(a);
	free(a->head);
	for (int k = 0; a->cache != NULL && k < ATTN_DERIVED_SLOTS; k++)
		mat_free(&a->cache->slot[k].m);
	free(a->cache);
	free(a->visible);
	free(a->row_all_masked);
}
