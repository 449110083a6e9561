/* decode.c: generation one token at a time with a KV cache, the variant "decode".
 *
 * Its stage is STAGE_DECODE ("decode" in catalog.c, after the layer's block
 * stages): step t reads only row t of the layer's input and what earlier
 * steps cached, and in a block lesson runs the rest of the layer on that one
 * row. Row t of its matrices (dec_q, cache_K, cache_V, dec_scores, …) is what
 * step t computed; they equal the full computation's rows, which is the test
 * of a correct cache. It has no rules: it reads every parameter and the
 * layer's input, so any change reruns it.
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * s[j] = q·k_j for count keys (k_j at keys + j·ld), each sum in the order of
 * c from 0: four keys at a time, so four chains of adds run side by side
 * instead of one waiting on itself.
 */
static void dot_keys(const double *q, const double *keys, size_t ld, int dk, int count, double *s)
{
	int j = 0;

	for (; j + 4 <= count; j += 4) {
		const double *k0 = keys + (size_t)j * ld, *k1 = k0 + ld, *k2 = k1 + ld, *k3 = k2 + ld;
		double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
		for (int c = 0; c < dk; c++) {
			s0 += q[c] * k0[c];
			s1 += q[c] * k1[c];
			s2 += q[c] * k2[c];
			s3 += q[c] * k3[c];
		}
		s[j] = s0, s[j + 1] = s1, s[j + 2] = s2, s[j + 3] = s3;
	}
	for (; j < count; j++) {
		const double *k = keys + (size_t)j * ld;
		double sum = 0.0;
		for (int c = 0; c < dk; c++)
			sum += q[c] * k[c];
		s[j] = sum;
	}
}

/*
 * Decoding with a KV cache: the tokens one at a time, as generation sees
 * them. Step t reads only row t of its input (X, or the layer before's
 * decoded rows) and what earlier steps cached:
 *   a = x_t (pre-norm: N1(x_t));  q = a·W_q + b_q, k = a·W_k + b_k, v = a·W_v + b_v  (a variant's turn at t)
 *   cache += (k, v)   (with a window w, only the last w rows are read)
 *   per head: s_j = q·k_j; w = softmax(f(s·factor + a variant's bias b_tj), masked); out = Σ_j w_j v_j
 *   (f: a variant's score_map, soft-capping; else none)
 *   output_t = concat·W_o + b_o, and in a block the rest of the layer on that one row.
 * The rows equal the full computation's rows: the test of a correct cache.
 */
static int pass_decode_rows(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int n = cfg->n, dk = lp->d_k, dv = lp->d_v, D = cfg->d_model;
	const int hdk = a->heads * dk, gdk = a->kv_heads * dk, gdv = a->kv_heads * dv, hdv = a->heads * dv;
	const int pre = lp->block.present && lp->block.norm == NORM_PRE;
	const Mat *in = a->dec_input != NULL ? a->dec_input : &a->X;
	const AttnVariant *bias = attn_score_bias(a), *map = attn_score_map(a), *sink = attn_sink(a);
	double *row = calloc((size_t)(D + hdv + n), sizeof(double));
	Attn *one = NULL; /* the block around one row: this layer's block stages on a 1-row computation */
	int r = -1;

	if (row == NULL)
		return -1;
	if (lp->block.present) {
		one = calloc(1, sizeof *one);
		if (one == NULL)
			goto out;
		one->cfg = a->cfg; /* what the kernels ran from (compute.c: run_passes) */
		one->lp = a->lp;
		one->top = a->top;
		one->shape = a->shape;
		one->shape.dim[DIM_N] = one->shape.dim[DIM_M] = 1;
		one->heads = 0; /* no per-head matrices */
		if (attn_alloc_matrices(one) != 0)
			goto out;
	}
	for (int t = 0; t < n; t++) {
		double *x = &MAT_AT(a->dec_q, t, 0), *concat = row + D, *wrow = row + D + hdv;
		const double *arow = &in->a[(size_t)t * D];
		const int lo = attn_keep_first(cfg, t); /* the rolling cache's oldest row (a window) */
		if (pre) {
			memcpy(one->X.a, arow, (size_t)D * sizeof(double));
			attn_stage_kernel(STAGE_NORM1_PRE)(one, cfg, lp);
			arow = one->norm1.a;
		}
		/* q, k, v of token t: one row of the projections, then a variant's turn at position t (turn_row) */
		mat_mul_view(1, D, hdk, arow, (size_t)D, lp->W_q.a, (size_t)hdk, 0, x, (size_t)hdk, 0);
		mat_mul_view(1, D, gdk, arow, (size_t)D, lp->W_k.a, (size_t)gdk, 0, &MAT_AT(a->cache_K, t, 0), (size_t)gdk, 0);
		mat_mul_view(1, D, gdv, arow, (size_t)D, lp->W_v.a, (size_t)gdv, 0, &MAT_AT(a->cache_V, t, 0), (size_t)gdv, 0);
		for (int c = 0; c < hdk && !mat_empty(&lp->b_q); c++)
			x[c] += lp->b_q.a[c];
		for (int c = 0; c < gdk && !mat_empty(&lp->b_k); c++)
			MAT_AT(a->cache_K, t, c) += lp->b_k.a[c];
		for (int c = 0; c < gdv && !mat_empty(&lp->b_v); c++)
			MAT_AT(a->cache_V, t, c) += lp->b_v.a[c];
		for (int v = 0; v < attn_variant_count; v++) {
			const AttnVariant *var = attn_variants[v];
			if (var->turn_row == NULL || !attn_variant_on(a, var))
				continue;
			for (int h = 0; h < a->heads; h++)
				var->turn_row(a, x + (size_t)h * dk, t);
			for (int h = 0; h < a->kv_heads; h++)
				var->turn_row(a, &MAT_AT(a->cache_K, t, h * dk), t);
		}
		/* each head against the cached keys lo … t */
		for (int h = 0; h < a->heads; h++) {
			AttnHead *hd = &a->head[h];
			const int kh = attn_kv_head(a, h);
			const double *q = x + (size_t)h * dk;
			double *scores = &MAT_AT(hd->dec_scores, t, 0), *out = &MAT_AT(hd->dec_weighted, t, 0);
			if (cfg->score == SCORE_ADDITIVE)
				for (int j = lo; j <= t; j++)
					scores[j] = attn_additive(q, &MAT_AT(a->cache_K, j, kh * dk), &lp->w_e.a[h * dk], dk);
			else
				dot_keys(q, &MAT_AT(a->cache_K, lo, kh * dk), (size_t)a->cache_K.cols, dk, t - lo + 1, &scores[lo]);
			for (int j = lo; j <= t; j++) {
				double sc = scores[j] * a->factor;
				if (bias != NULL)
					sc += bias->score_bias(a, h, t, j);
				if (map != NULL)
					sc = map->score_map(a, sc);
				wrow[j - lo] = a->visible[(size_t)t * cfg->m + j] ? sc : -INFINITY;
			}
			attn_softmax_sink_row(wrow, &MAT_AT(hd->dec_weights, t, lo), t - lo + 1,
			                      sink != NULL ? sink->sink_logit(a, h) : -INFINITY);
			/* out = Σ_j w_j v_j, each cell's terms in the order of j, the cached rows read along (not down a column) */
			memset(out, 0, (size_t)dv * sizeof *out);
			for (int j = lo; j <= t; j++) {
				const double w = MAT_AT(hd->dec_weights, t, j), *v = &MAT_AT(a->cache_V, j, kh * dv);
				for (int c = 0; c < dv; c++)
					out[c] += w * v[c];
			}
			memcpy(&concat[h * dv], out, (size_t)dv * sizeof *out);
		}
		/* the output row, and in a block the rest of the layer on that row */
		if (mat_empty(&lp->W_o))
			memcpy(&MAT_AT(a->dec_output, t, 0), concat, (size_t)hdv * sizeof(double));
		else
			mat_mul_view(1, hdv, lp->d_out, concat, (size_t)hdv, lp->W_o.a, (size_t)lp->d_out, 0,
			             &MAT_AT(a->dec_output, t, 0), (size_t)lp->d_out, 0);
		for (int c = 0; c < lp->d_out && !mat_empty(&lp->b_o); c++)
			MAT_AT(a->dec_output, t, c) += lp->b_o.a[c];
		if (one != NULL) {
			memcpy(one->X.a, &in->a[(size_t)t * D], (size_t)D * sizeof(double));
			memcpy(one->output.a, &MAT_AT(a->dec_output, t, 0), (size_t)D * sizeof(double));
			for (int st = STAGE_RESIDUAL1; st <= STAGE_NORM2_POST; st++)
				if (attn_stage_kernel((Stage)st) != NULL && stage_present(&a->shape, (Stage)st))
					attn_stage_kernel((Stage)st)(one, cfg, lp);
			memcpy(&MAT_AT(a->dec_layer_out, t, 0), attn_block_output(one)->a, (size_t)D * sizeof(double));
		}
	}
	r = 0;
out:
	free(row);
	if (one != NULL)
		attn_free_matrices(one);
	free(one);
	return r;
}

static void pass_decode(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	if (pass_decode_rows(a, cfg, lp) != 0)
		a->failed = 1;
}

/* Decoding: what step t computed, from its own row and the cache. */
static void explain_decode(StrBuf *b, const Attn *a, AttnMatrix which, int h, int t, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const int lo = attn_keep_first(cfg, t);
	const int kh = attn_kv_head(a, h);
	const char *note = "", *adj = "", *keep = ""; /* a variant's words: how q and k were turned, what the scores were, how long a row stays */
	char x1[32], x2[32];

	for (int v = 0; v < attn_variant_count; v++)
		if (attn_variant_on(a, attn_variants[v])) {
			if (attn_variants[v]->decode_note != NULL)
				note = _(attn_variants[v]->decode_note);
			if (attn_variants[v]->decode_adj != NULL)
				adj = _(attn_variants[v]->decode_adj);
			if (attn_variants[v]->decode_keep != NULL)
				keep = _(attn_variants[v]->decode_keep);
		}
	switch (which) {
	case AM_DEC_Q:
	case AM_CACHE_K:
	case AM_CACHE_V: {
		/* the full computation's matrix this row equals: Q or K as the scores read them, V */
		const AttnMatrix full = which == AM_DEC_Q ? attn_reads(a, AM_Q) : which == AM_CACHE_K ? attn_reads(a, AM_K) : AM_V;
		strbuf_printf(b, _("made at step %d from token %d's row alone%s; the full computation's %s[%d][%d] = %s\n"), t, t,
		              which != AM_CACHE_V ? note : "", matrix_name(full), t, j,
		              celltext_num(x1, MAT_AT(*attn_matrix(a, full, h), t, j), utf8));
		if (which != AM_DEC_Q)
			strbuf_printf(b, _("it stays in the cache for the steps after it%s\n"), keep);
		return;
	}
	case AM_DEC_SCORES:
	case AM_DEC_WEIGHTS:
		if (!attn_in_cache(cfg, t, j)) {
			strbuf_printf(b, _("key %d is not in step %d's cache (%s)\n"), j, t,
			              j > t ? _("it has not been generated yet") : _("the rolling cache dropped it"));
			return;
		}
		if (which == AM_DEC_SCORES) {
			strbuf_printf(b, _("score = q_%d %s cached k_%d (key/value head %d)\n"), t, celltext_sym(utf8, "\u00b7", "."), j, kh);
			celltext_terms(b, &MAT_AT(a->dec_q, t, h * lp->d_k), 1, &MAT_AT(a->cache_K, j, kh * lp->d_k), 1, lp->d_k, utf8);
		} else
			strbuf_printf(b, _("softmax over the %d cached keys %d..%d of the scaled%s, masked scores; the full "
			                 "computation's weights[%d][%d] = %s\n"), t - lo + 1, lo, t, adj, t, j,
			              celltext_num(x1, MAT_AT(a->head[h].weights, t, j), utf8));
		return;
	case AM_DEC_WEIGHTED:
		strbuf_printf(b, "= %s_j w_j %s cached v_j[%d], j = %d..%d\n", celltext_sym(utf8, "\u03a3", "sum"), celltext_sym(utf8, "\u00b7", "*"), j,
		              lo, t);
		celltext_terms(b, &MAT_AT(a->head[h].dec_weights, t, lo), 1, &MAT_AT(a->cache_V, lo, kh * lp->d_v + j),
		              (size_t)a->cache_V.cols, t - lo + 1, utf8);
		return;
	default:
		strbuf_printf(b, _("step %d's row; the full computation's row %d holds %s\n"), t, t,
		              celltext_num(x2, MAT_AT(*(which == AM_DEC_OUTPUT ? &a->output : attn_block_output(a)), t, j), utf8));
		return;
	}
}

/* A cache needs a causal −∞ mask over the lesson's own tokens. */
static const char *decode_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	(void)lp;
	if (cfg->decode && (cfg->has_source || !model_mask_causal(cfg) || !cfg->mask_fill_inf))
		return "decode";
	return NULL;
}

static int decode_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	(void)xp; (void)yp;
	return xc->decode == yc->decode;
}

const AttnVariant variant_decode = {
	.name = "decode",
	.feature = FEAT_DECODE,
	.stage = STAGE_DECODE,
	.kernel = pass_decode,
	.explain = explain_decode,
	.fault = decode_fault,
	.same = decode_same,
};
