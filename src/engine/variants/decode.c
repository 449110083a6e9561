/* decode.c: generation one token at a time with a KV cache, the variant "decode".
 *
 * Its stage is STAGE_DECODE ("decode" in catalog.c, after the layer's block
 * stages): step t reads only row t of the layer's input and what earlier
 * steps cached, and in a block lesson runs the rest of the layer on that one
 * row. Row t of its matrices (dec_q, cache_K, cache_V, dec_scores, …) is what
 * step t computed; they equal the full computation's rows, which is the test
 * of a correct cache. It has no rules: it reads every parameter and the
 * layer's input, so any change reruns it; but an update tells it what
 * changed before it (a->changed), and an edit that leaves the full
 * computation's scores and weights as they were remakes only what it
 * reaches (decode_redo: the values on, the output on, or the rest of the
 * block). `generate N` takes the same step
 * (decode_row) past a computation's rows: attn_gen_* (attention.h), each new
 * token's row through every layer's cache, then the final norm and the head.
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Where one decoding step writes: the query, the cache (row j of the keys at
 * K + j·ldk, as the scores read them; of the values at V + j·ldv), each
 * head's row of scores, weights (indexed by key) and weighted sum, the
 * attention's output row and, in a block, the layer's. A head's rows may be
 * the same buffer for every head (each head is done before the next). With
 * StreamingLLM's cache, also each head's weights and the output over the
 * plain window of the same size (win_weights, win_output; NULL without).
 */
typedef struct DecodeRow {
	double *q;
	double *K, *V;
	size_t ldk, ldv;
	const unsigned char *visible; /* the mask's row t (m cells), or NULL: model_mask_sees */
	double *const *scores, *const *weights, *const *weighted;
	double *output, *layer_out;
	double *scratch; /* decode_scratch(h·d_v, rows) numbers */
	int *keep;       /* t + 1 ints: the rows the cache keeps at step t */
	double *const *win_weights;
	double *win_output;
	/*
	 * A lesson's steps, whose rows are all known: q, k, v already made
	 * (project_rows) from arow (the row, or N1 of it), and the step leaves
	 * its concat row at concat (h·d_v) for finish_rows; NULL, NULL: the
	 * step does all of it itself (generate, the only caller that passes
	 * decode_row a layer of one row, one, for the rest of the block).
	 */
	const double *arow;
	double *concat;
} DecodeRow;

/* The scratch decode_row needs for h·d_v columns of concat and a cache of up to rows rows. */
static size_t decode_scratch(int hdv, int rows)
{
	return 4 * (size_t)hdv + 3 * (size_t)rows;
}

/* rows rows of cols numbers from row (contiguous) += b on each (attn_add_bias; the pass checks them itself). */
static void add_bias(double *row, int rows, int cols, const Mat *b)
{
	Mat m = { rows, cols, row };

	(void)attn_add_bias(&m, b);
}

/*
 * The heads a pass of decoding remakes: query heads [h0, h1) and key/value
 * heads [g0, g1); every head but after an edit of the weights of some
 * (attn_update's heads_lo, heads_hi).
 */
typedef struct DecodeHeads {
	int h0, h1, g0, g1;
} DecodeHeads;

static DecodeHeads all_heads(const Attn *a)
{
	return (DecodeHeads){ 0, a->heads, 0, a->kv_heads };
}

/*
 * Gated attention (gated.c) on one row: concat ⊙ σ(a·W_gate + b_gate), a the row the
 * query was made from (h·d_v numbers of gate: scratch); nothing without W_gate.
 */
static void decode_gate(const LayerParams *lp, int D, int hdv, const double *arow, double *gate, double *concat)
{
	if (mat_empty(&lp->W_gate))
		return;
	mat_mul_view(1, D, hdv, arow, (size_t)D, lp->W_gate.a, (size_t)hdv, 0, gate, (size_t)hdv, 0);
	for (int c = 0; c < hdv; c++)
		concat[c] *= 1.0 / (1.0 + exp(-(gate[c] + (mat_empty(&lp->b_gate) ? 0.0 : lp->b_gate.a[c]))));
}
/* The block around rows rows: a's layer's block stages on a computation of that many rows (NULL out of memory). */
static Attn *decode_one(const Attn *a, int rows)
{
	Attn *one = calloc(1, sizeof *one);

	if (one == NULL)
		return NULL;
	one->cfg = a->cfg; /* what the kernels ran from (compute.c: run_passes) */
	one->lp = a->lp;
	one->top = a->top;
	one->shape = a->shape;
	one->shape.dim[DIM_N] = one->shape.dim[DIM_M] = rows;
	one->heads = 0; /* no per-head matrices */
	if (attn_alloc_matrices(one) != 0) {
		attn_free_matrices(one);
		free(one);
		return NULL;
	}
	return one;
}

static void decode_one_free(Attn *one)
{
	if (one != NULL)
		attn_free_matrices(one);
	free(one);
}

/*
 * Head h's weights at step t over the kept keys keep[0 … count − 1], from its
 * scores (indexed by key): w = softmax(f(s·factor + a variant's bias b_tj),
 * masked) (f: a variant's score_map, soft-capping; else none), into packed
 * in the order of keep and scattered by key into weights. visible: the
 * mask's row t, or NULL: model_mask_sees. wrow: count numbers of scratch.
 */
static void decode_weights(const Attn *a, const ModelConfig *cfg, int h, int t, const unsigned char *visible,
                           const int *keep, int count, const double *scores, double *wrow, double *packed,
                           double *weights)
{
	const AttnVariant *bias = attn_score_bias(a), *map = attn_score_map(a), *sink = attn_sink(a);

	for (int k = 0; k < count; k++) {
		const int j = keep[k];
		double sc = scores[j] * a->factor;
		const int seen = visible != NULL ? visible[j] : model_mask_sees(cfg, t, j);
		if (bias != NULL)
			sc += bias->score_bias(a, h, t, j);
		if (map != NULL)
			sc = map->score_map(a, sc);
		wrow[k] = seen ? sc : -INFINITY;
	}
	if (sink != NULL)
		attn_softmax_sink_row(wrow, packed, count, sink->sink_logit(a, h));
	else
		attn_softmax_row(wrow, packed, count);
	for (int k = 0; k < count; k++)
		weights[keep[k]] = packed[k];
}

/*
 * Each head of step t (its query row x, h·d_k) against the cached rows
 * keep[0 … count − 1] (ascending): scores, the weights (scattered by key)
 * and the weighted sum, each head's into concat (h·d_v). wrow: 2·count
 * numbers of scratch. shared: every head's scores and weighted sum in the
 * first head's rows (scratch), not a row of its own. Kt: the kept keys as this
 * step turns them, count rows of ldk (StreamingLLM with RoPE: each by its place
 * in the cache, stream_keys), or NULL: the cache's rows as they are.
 *   per head: s_j = q·k_j; w = softmax(f(s·factor + a variant's bias b_tj), masked); out = Σ_j w_j v_j
 *   (f: a variant's score_map, soft-capping; else none)
 */
static void decode_attend(const Attn *a, const ModelConfig *cfg, const LayerParams *lp, int t, const double *x,
                          const DecodeRow *r, const int *keep, int count, const double *Kt, double *const *scores_of,
                          double *const *weights_of, double *const *weighted_of, int shared, double *wrow, double *concat)
{
	const int dk = lp->d_k, dv = lp->d_v;
	double *packed = wrow + count;

	for (int h = 0; h < a->heads; h++) {
		const int kh = attn_kv_head(a, h);
		const double *q = x + (size_t)h * dk;
		double *scores = scores_of[shared ? 0 : h], *weights = weights_of[h], *out = weighted_of[shared ? 0 : h];
		if (cfg->score == SCORE_ADDITIVE)
			for (int k = 0; k < count; k++)
				scores[keep[k]] = attn_additive(q, r->K + (size_t)keep[k] * r->ldk + (size_t)kh * dk, &lp->w_e.a[h * dk], dk);
		else /* each run of consecutive rows at once */
			for (int k = 0, e; k < count; k = e) {
				for (e = k + 1; e < count && keep[e] == keep[e - 1] + 1; e++)
					;
				mat_dots(q, (Kt != NULL ? Kt + (size_t)k * r->ldk : r->K + (size_t)keep[k] * r->ldk) + (size_t)kh * dk,
				         r->ldk, dk, e - k, &scores[keep[k]]);
			}
		decode_weights(a, cfg, h, t, r->visible, keep, count, scores, wrow, packed, weights);
		/* out = Σ_j w_j v_j, each cell's terms in the order of j, the cached rows read along (not down a column) */
		memset(out, 0, (size_t)dv * sizeof *out);
		for (int k = 0; k < count; k++) {
			mat_axpy(dv, packed[k], r->V + (size_t)keep[k] * r->ldv + (size_t)kh * dv, out);
		}
		memcpy(&concat[h * dv], out, (size_t)dv * sizeof *out);
	}
}

/*
 * The output rows of rows rows of concat (h·d_v each): concat·W_o + b_o (concat itself without W_o), into
 * output (d_out each). A product's row reads only its own row (base/matrix.h), so a row's numbers are the
 * same alone (a step) or among others (finish_rows).
 */
static void decode_project(const LayerParams *lp, int rows, int hdv, const double *concat, double *output)
{
	if (mat_empty(&lp->W_o))
		memcpy(output, concat, (size_t)rows * hdv * sizeof(double));
	else
		attn_mul_param(rows, concat, (size_t)hdv, lp, &lp->W_o, output, (size_t)lp->d_out);
	add_bias(output, rows, lp->d_out, &lp->b_o);
}

/*
 * The rest of the layer's block on one's rows (its X the layer's input rows, its output the attention's):
 * the stages after attention, norms and the FFN, of a computation of that many rows (decode_one).
 */
static void block_rest(const Attn *a, Attn *one, const ModelConfig *cfg, const LayerParams *lp)
{
	for (int st = STAGE_NORM1_AFTER; st <= STAGE_NORM2_POST; st++)
		if (attn_stage_kernel((Stage)st) != NULL && stage_present(&a->shape, (Stage)st))
			attn_stage_kernel((Stage)st)(one, cfg, lp);
}

/* StreamingLLM's cache with RoPE (mit-han-lab/streaming-llm's pos_shift): positions within the cache, not the text. */
static int stream_shift(const ModelConfig *cfg)
{
	return cfg->decode && cfg->cache_window > 0 && cfg->rope;
}

/*
 * The kept rows keep[0 … count − 1] of the cache (each key as projected, not
 * turned) turned by RoPE at their places in the cache, 0 … count − 1, into a
 * new array of count rows of ldk (NULL: out of memory), as
 * llama_pos_shift_attention_forward turns key_states by key_position_ids =
 * arange(kv_seq_len) at every step.
 */
static double *stream_keys(const Attn *a, const DecodeRow *r, const int *keep, int count)
{
	const int dk = attn_params(a)->d_k;
	double *kt = malloc((size_t)count * r->ldk * sizeof *kt);

	if (kt == NULL)
		return NULL;
	for (int k = 0; k < count; k++) {
		memcpy(kt + (size_t)k * r->ldk, r->K + (size_t)keep[k] * r->ldk, r->ldk * sizeof *kt);
		for (int g = 0; g < a->kv_heads; g++)
			variant_rope.turn_row(a, kt + (size_t)k * r->ldk + (size_t)g * dk, k, 1);
	}
	return kt;
}

/*
 * Step t's q (x, h·d_k) and k (kt, the kv heads' d_k each) turned by the
 * variants at position t, the list's last first: QK-norm's RMSNorm, then
 * RoPE's rotation. StreamingLLM with RoPE (place ≥ 0): q at its place in the
 * cache, and k cached unturned.
 */
static void decode_turn(const Attn *a, double *x, double *kt, int t, int place, const DecodeHeads *hs)
{
	const int dk = attn_params(a)->d_k;

	for (int v = attn_variant_count - 1; v >= 0; v--) {
		const AttnVariant *var = attn_variants[v];
		const int shifted = place >= 0 && var == &variant_rope;
		if ((var->turn_row == NULL && var->turn_whole == NULL) || !attn_variant_on(a, var))
			continue;
		if (var->turn_whole != NULL) { /* the whole row at once (QK-norm over the projection: every head) */
			var->turn_whole(a, x, a->heads * dk, t, 0);
			var->turn_whole(a, kt, a->kv_heads * dk, t, 1);
			continue;
		}
		for (int h = hs->h0; h < hs->h1; h++)
			var->turn_row(a, x + (size_t)h * dk, shifted ? place : t, 0);
		for (int h = hs->g0; h < hs->g1 && !shifted; h++)
			var->turn_row(a, kt + (size_t)h * dk, t, 1);
	}
}

/*
 * Step t of decoding, token t's row xin of the layer's input (d_model) through
 * the layer, reading the cache's rows before t and appending its own:
 *   a = x_t (pre-norm: N1(x_t));  q = a·W_q + b_q, k = a·W_k + b_k, v = a·W_v + b_v
 *   (then the variants' turns at t, each head's row: QK-norm's RMSNorm, RoPE's rotation)
 *   cache += (k, v)   (with a window w, only the last w rows are read; StreamingLLM's
 *   cache also the first ones: attn_cache_rows)
 *   each head against the kept rows (decode_attend)
 *   (gated attention: concat ⊙ σ(a·W_gate), decode_gate)
 *   output_t = concat·W_o + b_o, and in a block (one) the rest of the layer on that one row.
 * With StreamingLLM's cache, the same step over the plain window of the same
 * size too (win_weights, win_output): the attention alone. With RoPE there,
 * the positions are those within the cache (stream_shift): k is cached as
 * projected, q turned at its own place in the cache (the last, count − 1),
 * and each kept key at its own (stream_keys).
 */
static void decode_row(const Attn *a, const ModelConfig *cfg, const LayerParams *lp, Attn *one, int t,
                       const double *xin, const DecodeRow *r)
{
	const int dk = lp->d_k, D = cfg->d_model;
	const int hdk = a->heads * dk, gdk = a->kv_heads * dk, gdv = a->kv_heads * lp->d_v, hdv = a->heads * lp->d_v;
	const int pre = lp->block.present && lp->block.norm == NORM_PRE;
	double *x = r->q, *concat = r->scratch, *wrow = r->scratch + hdv;
	double *gate = r->scratch + 3 * (size_t)hdv + 3 * (size_t)(t + 1); /* decode_scratch's last h·d_v */
	double *kt = r->K + (size_t)t * r->ldk, *vt = r->V + (size_t)t * r->ldv;
	const double *arow = xin;
	const int shift = stream_shift(cfg);
	const DecodeHeads every = all_heads(a); /* a step alone turns every head */
	int count = attn_cache_rows(cfg, t, 0, r->keep);
	double *Kt = NULL;

	if (r->arow != NULL) /* q, k, v made already, each from this row alone (project_rows) */
		arow = r->arow;
	else {
		if (pre) {
			memcpy(one->X.a, arow, (size_t)D * sizeof(double));
			attn_stage_kernel(STAGE_NORM1_PRE)(one, cfg, lp);
			arow = one->norm1.a;
		}
		/* q, k, v of token t: one row of the projections */
		attn_mul_param(1, arow, (size_t)D, lp, &lp->W_q, x, (size_t)hdk);
		attn_mul_param(1, arow, (size_t)D, lp, &lp->W_k, kt, (size_t)gdk);
		attn_mul_param(1, arow, (size_t)D, lp, &lp->W_v, vt, (size_t)gdv);
		add_bias(x, 1, hdk, &lp->b_q);
		add_bias(kt, 1, gdk, &lp->b_k);
		add_bias(vt, 1, gdv, &lp->b_v);
	}
	decode_turn(a, x, kt, t, shift ? count - 1 : -1, &every);
	/* each head against the rows the cache keeps, and the output row */
	if (shift && (Kt = stream_keys(a, r, r->keep, count)) == NULL)
		return; /* out of memory: the row left as it was */
	decode_attend(a, cfg, lp, t, x, r, r->keep, count, Kt, r->scores, r->weights, r->weighted, 0, wrow, concat);
	free(Kt);
	Kt = NULL;
	decode_gate(lp, D, hdv, arow, gate, concat);
	if (r->concat != NULL) /* its output row and the rest of the block: finish_rows */
		memcpy(r->concat, concat, (size_t)hdv * sizeof *concat);
	else
		decode_project(lp, 1, hdv, concat, r->output);
	if (r->win_weights != NULL) { /* the plain window of the same size: its own scores, weighted sums and concat */
		double *wconcat = wrow + 2 * (size_t)(t + 1), *ws = wconcat + hdv, *wo = ws + (t + 1);
		double *const scores[1] = { ws }, *const weighted[1] = { wo };
		count = attn_cache_rows(cfg, t, 1, r->keep);
		if (shift && (Kt = stream_keys(a, r, r->keep, count)) == NULL)
			return;
		decode_attend(a, cfg, lp, t, x, r, r->keep, count, Kt, scores, r->win_weights, weighted, 1, wrow, wconcat);
		free(Kt);
		decode_gate(lp, D, hdv, arow, gate, wconcat);
		decode_project(lp, 1, hdv, wconcat, r->win_output);
	}
	if (one != NULL) { /* generate: the rest of the block on this one row */
		memcpy(one->X.a, xin, (size_t)D * sizeof(double));
		memcpy(one->output.a, r->output, (size_t)D * sizeof(double));
		block_rest(a, one, cfg, lp);
		memcpy(r->layer_out, attn_block_output(one)->a, (size_t)D * sizeof(double));
	}
}

/*
 * The attention of the steps t0 … t0 + rows − 1 at once (their q and k
 * turned already), head by head: decode_attend's numbers for each step, the
 * cached keys read in blocks of DECODE_KEYS for every step of the rows that
 * keeps them, not once a step (each step read the whole cache: at n = 1024
 * most of the pass); a block every step keeps whole is one product on the
 * kernels (mat_mul_chain), and the weighted sums two (mat_mul_continue).
 * Each score is the same one chain of d_k terms from 0 (mat_dots's), each
 * weighted sum one chain in the order of j (mat_axpy's, a key not kept
 * adding an exact 0), so the bits are decode_attend's. hs: the heads
 * remade; edited (or NULL): the rows of q and the cache an edit of input
 * rows made again, whose steps' scores are made whole and the other steps'
 * only for those keys. keep: rows × n ints, count: rows ints, wrow:
 * 2·n doubles of scratch; concat: rows × h·d_v, each step's heads. attend: 0
 * when the steps' scores and weights are kept as they are (an edit of the
 * values: only the weighted sums on).
 */
enum { DECODE_ROWS = 64, DECODE_KEYS = 64 };

/*
 * 1 when each of the rows steps keeps every key of [jb, jb + len): its keep
 * list (keep + i·n, count[i] ascending rows) holds them from its place pos[i].
 */
static int kept_whole(const int *keep, const int *count, const int *pos, int n, int rows, int jb, int len)
{
	for (int i = 0; i < rows; i++) {
		const int *kp = keep + (size_t)i * n, k = pos[i];
		if (k + len > count[i] || kp[k] != jb || kp[k + len - 1] != jb + len - 1)
			return 0;
	}
	return 1;
}

/* Rows [t0, t0 + rows) of concat (h·d_v each) from each head's weighted sums, as decode_attend_rows leaves them. */
static void concat_rows(const Attn *a, const LayerParams *lp, int t0, int rows, double *concat)
{
	const int dv = lp->d_v, hdv = a->heads * dv;

	for (int h = 0; h < a->heads; h++)
		for (int t = t0; t < t0 + rows; t++)
			memcpy(&concat[(size_t)(t - t0) * hdv + (size_t)h * dv], &MAT_AT(a->head[h].dec_weighted, t, 0),
			       (size_t)dv * sizeof(double));
}

static void decode_attend_rows(const Attn *a, const ModelConfig *cfg, const LayerParams *lp, int t0, int rows,
                               const int *keep, const int *count, double *wrow, double *concat, int attend,
                               const DecodeHeads *hs, const int *edited)
{
	const int n = cfg->n, dk = lp->d_k, dv = lp->d_v, end = t0 + rows;
	const size_t ldk = (size_t)a->cache_K.cols, ldv = (size_t)a->cache_V.cols;
	double *packed = wrow + n;
	int pos[DECODE_ROWS]; /* each step's place in its keep list as the key blocks go by */

	for (int h = hs->h0; h < hs->h1; h++) {
		const int kh = attn_kv_head(a, h);
		const double *K = a->cache_K.a + (size_t)kh * dk, *V = a->cache_V.a + (size_t)kh * dv;
		/*
		 * s_tj = q_t·k_j: a block every step keeps whole as one product, else each run of kept keys. With
		 * edited, only rows [edited[0], edited[1]) of q and the cache were made again (an edit of input
		 * rows): those steps' scores whole, the others' only for those keys; each the same one chain of
		 * d_k terms (mat_dots's, mat_mul_chain's).
		 */
		for (int t = t0; attend && edited != NULL && t < end; t++) {
			const int *kp = keep + (size_t)(t - t0) * n, c = count[t - t0];
			const int whole = t >= edited[0] && t < edited[1];
			double *scores = &MAT_AT(a->head[h].dec_scores, t, 0);
			const double *q = &MAT_AT(a->dec_q, t, (size_t)h * dk);
			for (int k = 0, e; k < c; k = e) {
				for (e = k + 1; e < c && kp[e] == kp[e - 1] + 1; e++)
					;
				const int j0 = whole || kp[k] > edited[0] ? kp[k] : edited[0];
				const int j1 = whole || kp[e - 1] + 1 < edited[1] ? kp[e - 1] + 1 : edited[1];
				if (j1 > j0)
					mat_dots(q, K + (size_t)j0 * ldk, ldk, dk, j1 - j0, &scores[j0]);
			}
		}
		memset(pos, 0, sizeof pos);
		for (int jb = 0; attend && edited == NULL && jb < end; jb += DECODE_KEYS) {
			const int len = end - jb < DECODE_KEYS ? end - jb : DECODE_KEYS;
			if (kept_whole(keep, count, pos, n, rows, jb, len)) {
				mat_mul_chain(rows, dk, len, &MAT_AT(a->dec_q, t0, (size_t)h * dk), (size_t)a->dec_q.cols,
				              K + (size_t)jb * ldk, ldk, 1, &MAT_AT(a->head[h].dec_scores, t0, jb), (size_t)n, 0);
				for (int i = 0; i < rows; i++)
					pos[i] += len;
				continue;
			}
			for (int t = t0 > jb ? t0 : jb; t < end; t++) {
				const int *kp = keep + (size_t)(t - t0) * n, c = count[t - t0];
				double *scores = &MAT_AT(a->head[h].dec_scores, t, 0);
				const double *q = &MAT_AT(a->dec_q, t, (size_t)h * dk);
				int k = pos[t - t0], e;
				for (; k < c && kp[k] < jb + DECODE_KEYS; k = e) {
					for (e = k + 1; e < c && kp[e] == kp[e - 1] + 1 && kp[e] < jb + DECODE_KEYS; e++)
						;
					mat_dots(q, K + (size_t)kp[k] * ldk, ldk, dk, e - k, &scores[kp[k]]);
				}
				pos[t - t0] = k;
			}
		}
		/* w_t = softmax(f(s·factor + b_tj), masked), by key */
		for (int t = t0; attend && t < end; t++)
			decode_weights(a, cfg, h, t, &a->visible[(size_t)t * cfg->m], keep + (size_t)(t - t0) * n, count[t - t0],
			               &MAT_AT(a->head[h].dec_scores, t, 0), wrow, packed, &MAT_AT(a->head[h].dec_weights, t, 0));
		for (int t = t0; t < end; t++)
			memset(&MAT_AT(a->head[h].dec_weighted, t, 0), 0, (size_t)dv * sizeof(double));
		/*
		 * out_t = Σ_j w_tj v_j, each cell one chain in the order of j (mat_mul_continue, from the zeros
		 * above): the keys before the rows' first step, then the rows' own, 0 past each step's diagonal
		 * (lower). A key a step does not keep (a window's) weighs an exact 0, which leaves a chain's sum
		 * as it was, so the bits are those of the kept keys' terms alone.
		 */
		if (t0 > 0)
			mat_mul_continue(rows, t0, dv, &MAT_AT(a->head[h].dec_weights, t0, 0), (size_t)n, 0, V, ldv, 0,
			                 &MAT_AT(a->head[h].dec_weighted, t0, 0), (size_t)dv, 0);
		mat_mul_continue(rows, rows, dv, &MAT_AT(a->head[h].dec_weights, t0, t0), (size_t)n, 0, V + (size_t)t0 * ldv, ldv,
		                 0, &MAT_AT(a->head[h].dec_weighted, t0, 0), (size_t)dv, 1);
	}
	concat_rows(a, lp, t0, rows, concat);
}

/*
 * The rows [t0, t0 + rows) of a lesson at once (one: a block of that many
 * rows, or NULL without a block) as the projections read them: pre-norm,
 * N1 of them, in one->norm1; else the input's rows (lda D).
 */
static const double *decode_arows(const LayerParams *lp, const ModelConfig *cfg, const double *in, int t0, int rows,
                                  Attn *one)
{
	const int D = cfg->d_model;

	if (!(lp->block.present && lp->block.norm == NORM_PRE))
		return in + (size_t)t0 * D;
	memcpy(one->X.a, in + (size_t)t0 * D, (size_t)rows * D * sizeof(double));
	attn_stage_kernel(STAGE_NORM1_PRE)(one, cfg, lp);
	return one->norm1.a;
}

/*
 * Rows [t0, t0 + rows) of P, columns [c0, c1): arows·W + b (all of W's
 * columns: attn_mul_param, whatever W is kept in; some: attn_project on
 * W's own numbers, as a pass remaking some heads has them, attn_update
 * having made them).
 */
static void project_cols(int rows, const double *arows, int D, const LayerParams *lp, const Mat *W, const Mat *b, int c0,
                         int c1, Mat *P, int t0)
{
	Mat in = { rows, D, (double *)arows }, out = { rows, P->cols, &MAT_AT(*P, t0, 0) };

	if (c0 == 0 && c1 == P->cols) {
		attn_mul_param(rows, arows, (size_t)D, lp, W, out.a, (size_t)P->cols);
		add_bias(out.a, rows, P->cols, b);
		return;
	}
	(void)attn_project(&in, 0, rows, c0, c1, W, b, &out); /* the pass checks what it made itself */
}

/*
 * A step's own row, for those rows at once: q, k (qk: else they stay) and v
 * of arows (decode_arows) into dec_q, cache_K and cache_V, biases added.
 * Row t of a product reads only row t of its input, and the kernels give a
 * row the same bits alone or among others (base/matrix.h: "the same bits
 * with every kernel of a kind"), so each row is what step t would have made
 * by itself, one weight read for 64 rows instead of one.
 */
static void project_rows(Attn *a, const ModelConfig *cfg, const LayerParams *lp, const double *arows, int t0, int rows,
                         int qk, const DecodeHeads *hs)
{
	const int D = cfg->d_model, dk = lp->d_k, dv = lp->d_v;

	if (qk) {
		project_cols(rows, arows, D, lp, &lp->W_q, &lp->b_q, hs->h0 * dk, hs->h1 * dk, &a->dec_q, t0);
		project_cols(rows, arows, D, lp, &lp->W_k, &lp->b_k, hs->g0 * dk, hs->g1 * dk, &a->cache_K, t0);
	}
	project_cols(rows, arows, D, lp, &lp->W_v, &lp->b_v, hs->g0 * dv, hs->g1 * dv, &a->cache_V, t0);
}

/*
 * After the steps of rows [t0, t0 + rows): their output rows, concat·W_o + b_o
 * (concat: rows × h·d_v, each step's; NULL: the output rows kept as they
 * are), and in a block (one, that many rows) the rest of the layer on them,
 * into dec_layer_out: each row alone, as project_rows's are.
 */
static void finish_rows(Attn *a, const ModelConfig *cfg, const LayerParams *lp, const double *in, int t0, int rows,
                        const double *concat, Attn *one)
{
	const int D = cfg->d_model, hdv = a->heads * lp->d_v;

	if (concat != NULL)
		decode_project(lp, rows, hdv, concat, &MAT_AT(a->dec_output, t0, 0));
	if (one == NULL)
		return;
	memcpy(one->X.a, in + (size_t)t0 * D, (size_t)rows * D * sizeof(double));
	memcpy(one->output.a, &MAT_AT(a->dec_output, t0, 0), (size_t)rows * D * sizeof(double));
	block_rest(a, one, cfg, lp);
	memcpy(&MAT_AT(a->dec_layer_out, t0, 0), attn_block_output(one)->a, (size_t)rows * D * sizeof(double));
}

/*
 * What an update's pass must remake, the least first. Step t's numbers are
 * the full computation's row t made another way (the same inputs, the same
 * settings: an edit of a setting computes afresh), so what the edit changed
 * before the pass (a->changed, marked by the full computation's rules) says
 * which of them can stay:
 *   all      the input, the queries or keys, the scores or weights changed (or
 *            no update: a whole computation);
 *   values   V (or its weighted sums): cache_V, the weighted sums and on;
 *   output   the output's inputs (concat, a gate, W_o, b_o): the output rows
 *            from the weighted sums kept, and on;
 *   rest     only what the block does after the attention: the rest of it.
 */
typedef enum DecodeRedo { DECODE_REST, DECODE_OUTPUT, DECODE_VALUES, DECODE_ALL } DecodeRedo;

/*
 * The steps' attention a block of rows at once (decode_attend_rows), but for
 * StreamingLLM's (its keys turned anew each step, and the plain window beside
 * it) and Bahdanau's additive scores: step by step, and always all of it.
 */
static int decode_blocked(const Attn *a, const ModelConfig *cfg)
{
	return mat_empty(&a->win_output) && !stream_shift(cfg) && cfg->score != SCORE_ADDITIVE;
}

static DecodeRedo decode_redo(const Attn *a)
{
	const unsigned char *c = a->changed;

	if (c == NULL || c[AM_INPUT] || c[AM_X] || c[AM_Q] || c[AM_K] || c[AM_SCORES] || c[AM_SCALED] || c[AM_MASKED] ||
	    c[AM_SINKS] || c[AM_WEIGHTS])
		return DECODE_ALL;
	if (c[AM_V] || c[AM_WEIGHTED])
		return DECODE_VALUES;
	if (c[AM_CONCAT] || c[AM_GATE] || c[AM_GATED] || c[AM_W_GATE] || c[AM_B_GATE] || c[AM_W_O] || c[AM_B_O] ||
	    c[AM_OUTPUT])
		return DECODE_OUTPUT;
	return DECODE_REST;
}

/*
 * Decoding with a KV cache: the tokens one at a time, as generation sees
 * them. Step t reads only row t of its input (X, or the layer before's
 * decoded rows) and what earlier steps cached (decode_row). The rows equal
 * the full computation's rows: the test of a correct cache. What a step
 * does with its own row alone (q, k, v before, the output row and the rest
 * of a block after) is done for DECODE_ROWS rows at once around their
 * steps (project_rows, finish_rows): the same numbers, each weight read once
 * for them all (a step's one-row products read all of every weight for one
 * row: two fifths of the pass at n = 1024).
 */
static int pass_decode_rows(Attn *a, const ModelConfig *cfg, const LayerParams *lp, DecodeRedo redo)
{
	const int n = cfg->n, D = cfg->d_model, hdv = a->heads * lp->d_v;
	const Mat *in = a->dec_input != NULL ? a->dec_input : &a->X;
	const int win = !mat_empty(&a->win_output); /* StreamingLLM's comparison: the plain window's rows too */
	const int chunk = n < DECODE_ROWS ? n : DECODE_ROWS;
	const int need_one = lp->block.present; /* the block around the rows: norms, the FFN */
	const int blocked = decode_blocked(a, cfg);
	/*
	 * Only rows [rows_lo, rows_hi) of the input changed (an edit of its
	 * cells, attn_update's): the steps before the first read nothing that
	 * changed, as a step reads only the rows up to its own, so the pass
	 * starts at that row's chunk; the blocked steps project only those rows.
	 */
	const int some = redo == DECODE_ALL && a->changed != NULL && a->rows_hi > a->rows_lo && a->rows_lo >= 0 &&
	                 a->rows_hi <= n;
	/* and no variant on makes a row of q or k from others: only those rows and keys of the scores change */
	const int edited[2] = { a->rows_lo, a->rows_hi };
	const int *cross = some && blocked && attn_heads_apart(a) ? edited : NULL;
	/*
	 * Only the weights some heads read changed (attn_update's heads_lo, heads_hi: the variants on keep heads
	 * apart): the blocked steps remake those heads' q, k, v columns, turns and attention (of W_v, their v
	 * columns and weighted sums), and every output.
	 */
	DecodeHeads hs = all_heads(a);
	if (redo >= DECODE_VALUES && blocked && a->changed != NULL && a->heads_hi > a->heads_lo && a->heads_lo >= 0 &&
	    a->heads_hi <= a->heads && lp->W_q.a != NULL && lp->W_k.a != NULL && lp->W_v.a != NULL) {
		hs = (DecodeHeads){ a->heads_lo, a->heads_hi, a->kv_heads, 0 };
		for (int h = hs.h0; h < hs.h1; h++) {
			const int g = attn_kv_head(a, h);
			hs.g0 = g < hs.g0 ? g : hs.g0;
			hs.g1 = g + 1 > hs.g1 ? g + 1 : hs.g1;
		}
	}
	double *row = calloc(decode_scratch(hdv, n), sizeof(double));
	double *concat = calloc((size_t)chunk * hdv, sizeof *concat);
	int *keep = calloc((size_t)n * (blocked ? (size_t)chunk : 1), sizeof *keep);
	int *count = calloc((size_t)chunk, sizeof *count);
	double **hr = calloc((size_t)(4 * (a->heads > 0 ? a->heads : 1)), sizeof *hr);
	Attn *one = NULL, *last = NULL; /* the block around chunk rows, and around the n % chunk rows at the end */
	int r = -1;

	if (row == NULL || hr == NULL || keep == NULL || concat == NULL || count == NULL)
		goto out;
	if (need_one && ((one = decode_one(a, chunk)) == NULL || (n % chunk && (last = decode_one(a, n % chunk)) == NULL)))
		goto out;
	for (int t0 = some ? a->rows_lo / chunk * chunk : 0; t0 < n; t0 += chunk) {
		const int rows = n - t0 < chunk ? n - t0 : chunk;
		Attn *around = rows == chunk ? one : last;
		const double *arows = decode_arows(lp, cfg, in->a, t0, rows, around);
		/* the rows projected (and turned): the chunk's, or of them only the input's edited rows */
		const int p0 = some && blocked && a->rows_lo > t0 ? a->rows_lo : t0;
		const int p1 = some && blocked && a->rows_hi < t0 + rows ? a->rows_hi : t0 + rows;
		if (redo >= DECODE_VALUES && p1 > p0)
			project_rows(a, cfg, lp, arows + (size_t)(p0 - t0) * D, p0, p1 - p0, redo == DECODE_ALL, &hs);
		if (blocked) {
			double *gate = row + 2 * (size_t)n; /* decode_scratch's: past decode_attend_rows's 2·n */
			for (int t = t0; redo >= DECODE_VALUES && t < t0 + rows; t++) {
				count[t - t0] = attn_cache_rows(cfg, t, 0, keep + (size_t)(t - t0) * n);
				if (redo == DECODE_ALL && t >= p0 && t < p1)
					decode_turn(a, &MAT_AT(a->dec_q, t, 0), &MAT_AT(a->cache_K, t, 0), t, -1, &hs);
			}
			if (redo >= DECODE_VALUES)
				decode_attend_rows(a, cfg, lp, t0, rows, keep, count, row, concat, redo == DECODE_ALL, &hs, cross);
			else if (redo == DECODE_OUTPUT)
				concat_rows(a, lp, t0, rows, concat);
			for (int t = t0; redo >= DECODE_OUTPUT && t < t0 + rows; t++)
				decode_gate(lp, D, hdv, arows + (size_t)(t - t0) * D, gate, &concat[(size_t)(t - t0) * hdv]);
			finish_rows(a, cfg, lp, in->a, t0, rows, redo >= DECODE_OUTPUT ? concat : NULL, around);
			continue;
		}
		for (int t = t0; t < t0 + rows; t++) {
			DecodeRow dr = { &MAT_AT(a->dec_q, t, 0), a->cache_K.a, a->cache_V.a, (size_t)a->cache_K.cols,
			                 (size_t)a->cache_V.cols, &a->visible[(size_t)t * cfg->m], hr, hr + a->heads,
			                 hr + 2 * a->heads, &MAT_AT(a->dec_output, t, 0), NULL, row, keep,
			                 win ? hr + 3 * a->heads : NULL, win ? &MAT_AT(a->win_output, t, 0) : NULL,
			                 arows + (size_t)(t - t0) * D, &concat[(size_t)(t - t0) * hdv] };
			for (int h = 0; h < a->heads; h++) {
				hr[h] = &MAT_AT(a->head[h].dec_scores, t, 0);
				hr[a->heads + h] = &MAT_AT(a->head[h].dec_weights, t, 0);
				hr[2 * a->heads + h] = &MAT_AT(a->head[h].dec_weighted, t, 0);
				hr[3 * a->heads + h] = win ? &MAT_AT(a->head[h].win_weights, t, 0) : NULL;
			}
			decode_row(a, cfg, lp, NULL, t, &in->a[(size_t)t * D], &dr);
		}
		finish_rows(a, cfg, lp, in->a, t0, rows, concat, around);
	}
	r = 0;
out:
	free(row);
	free(concat);
	free(keep);
	free(count);
	free(hr);
	decode_one_free(one);
	decode_one_free(last);
	return r;
}

/*
 * The pass, which checks what it remade for numbers that are not finite
 * itself: what an edit left as it was was looked over when it was made
 * (a whole pass's, every decoding matrix: 17 million numbers at n = 1024).
 */
static void pass_decode(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	/* what it remakes but for everything: the values on, the output on, the rest of the block */
	static const AttnMatrix after_values[] = { AM_CACHE_V, AM_DEC_WEIGHTED, AM_DEC_OUTPUT, AM_DEC_LAYER_OUT };
	const DecodeRedo redo = decode_blocked(a, cfg) ? decode_redo(a) : DECODE_ALL;
	const size_t from = redo == DECODE_VALUES ? 0 : redo == DECODE_OUTPUT ? 2 : 3;

	if (pass_decode_rows(a, cfg, lp, redo) != 0) {
		a->failed = 1;
		return;
	}
	if (redo == DECODE_ALL) {
		for (int w = 0; w < AM_COUNT; w++)
			if (matrix_kinds[w].made_by == STAGE_DECODE)
				a->nonfinite |= attn_matrix_nonfinite(a, (AttnMatrix)w);
		return;
	}
	for (size_t k = from; k < sizeof after_values / sizeof after_values[0]; k++)
		a->nonfinite |= attn_matrix_nonfinite(a, after_values[k]);
}

/* "keys 3..7" or, when StreamingLLM's cache keeps the first ones apart, "keys 0..1 and 5..7": the kept rows' runs. */
static void keys_runs(char *out, size_t size, const int *keep, int count)
{
	size_t len = 0;

	out[0] = '\0';
	for (int k = 0, e; k < count && len < size; k = e) {
		for (e = k + 1; e < count && keep[e] == keep[e - 1] + 1; e++)
			;
		if (e - k == 1)
			len += (size_t)snprintf(out + len, size - len, k == 0 ? "%d" : " + %d", keep[k]);
		else
			len += (size_t)snprintf(out + len, size - len, k == 0 ? "%d..%d" : " + %d..%d", keep[k], keep[e - 1]);
	}
}

/* StreamingLLM's comparison: a cell of win_weights or win_output, beside the cache's and the full computation's. */
static void explain_window(StrBuf *b, const Attn *a, AttnMatrix which, int h, int t, int j, int *keep, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const int count = attn_cache_rows(cfg, t, 1, keep);
	char x1[32], x2[32], runs[64];

	keys_runs(runs, sizeof runs, keep, count);
	if (which == AM_WIN_OUTPUT) {
		strbuf_printf(b, _("step %d's output over the plain window of keys %s (the first tokens evicted); with them kept "
		                 "(dec_output) %s, the full computation's output %s\n"), t, runs,
		              celltext_num(x1, MAT_AT(a->dec_output, t, j), utf8), celltext_num(x2, MAT_AT(a->output, t, j), utf8));
		return;
	}
	if (!attn_cache_has(cfg, t, j, 1)) {
		strbuf_printf(b, _("key %d is not in step %d's plain window of %d rows: it was evicted\n"), j, t, cfg->cache_sink + cfg->cache_window);
		return;
	}
	strbuf_printf(b, _("softmax over the plain window's %d keys %s, the same number of rows with the first tokens evicted\n"),
	              count, runs);
	if (attn_cache_has(cfg, t, j, 0))
		strbuf_printf(b, _("with the first %d tokens kept instead, dec_weights[%d][%d] = %s\n"), cfg->cache_sink, t, j,
		              celltext_num(x1, MAT_AT(a->head[h].dec_weights, t, j), utf8));
	else
		strbuf_printf(b, _("the cache that keeps the first %d tokens has evicted key %d instead\n"), cfg->cache_sink, j);
}

/* Decoding: what step t computed, from its own row and the cache. */
static void explain_decode(StrBuf *b, const Attn *a, AttnMatrix which, int h, int t, int j, int utf8)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);
	const int kh = attn_kv_head(a, h);
	const char *adj = "", *keep = ""; /* a variant's words: what the scores were, how long a row stays */
	char x1[32], x2[32], note[256] = ""; /* how q and k were turned, each variant's words in the order of the turns */
	int *rows = calloc((size_t)t + 1, sizeof *rows), count;

	if (rows == NULL)
		return;
	count = attn_cache_rows(cfg, t, 0, rows);
	for (int v = attn_variant_count - 1; v >= 0; v--)
		if (attn_variant_on(a, attn_variants[v]) && attn_variants[v]->decode_note != NULL)
			snprintf(note + strlen(note), sizeof note - strlen(note), "%s", _(attn_variants[v]->decode_note));
	for (int v = 0; v < attn_variant_count; v++)
		if (attn_variant_on(a, attn_variants[v])) {
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
		if (stream_shift(cfg) && (which == AM_CACHE_K || (which == AM_DEC_Q && count - 1 != t))) {
			/* StreamingLLM with RoPE: positions within the cache */
			const AttnMatrix unturned = attn_reads_after(a, &variant_rope, which == AM_DEC_Q ? AM_Q : AM_K);
			if (which == AM_DEC_Q)
				strbuf_printf(b, _("made at step %d from token %d's row alone, and turned by RoPE at position %d, its "
				                   "place in the cache, not %d (StreamingLLM gives positions within the cache); the full "
				                   "computation's %s[%d][%d] = %s\n"), t, t, count - 1, t, matrix_name(full), t, j,
				              celltext_num(x1, MAT_AT(*attn_matrix(a, full, h), t, j), utf8));
			else
				strbuf_printf(b, _("made at step %d from token %d's row alone and kept as it is, not turned: each step "
				                   "turns every cached key by its place in the cache (StreamingLLM); the full "
				                   "computation's %s[%d][%d] = %s\n"), t, t, matrix_name(unturned), t, j,
				              celltext_num(x1, MAT_AT(*attn_matrix(a, unturned, h), t, j), utf8));
		} else
			strbuf_printf(b, _("made at step %d from token %d's row alone%s; the full computation's %s[%d][%d] = %s\n"), t, t,
			              which != AM_CACHE_V ? note : "", matrix_name(full), t, j,
			              celltext_num(x1, MAT_AT(*attn_matrix(a, full, h), t, j), utf8));
		if (which != AM_DEC_Q)
			strbuf_printf(b, _("it stays in the cache for the steps after it%s\n"), keep);
		break;
	}
	case AM_DEC_SCORES:
	case AM_DEC_WEIGHTS:
		if (!attn_in_cache(cfg, t, j)) {
			strbuf_printf(b, _("key %d is not in step %d's cache (%s)\n"), j, t,
			              j > t ? _("it has not been generated yet") : _("the rolling cache dropped it"));
			break;
		}
		if (which == AM_DEC_SCORES) {
			strbuf_printf(b, _("score = q_%d %s cached k_%d (key/value head %d)\n"), t, celltext_sym(utf8, "\u00b7", "."), j, kh);
			if (stream_shift(cfg)) { /* the cached key turned by its place in the cache, as the step turned it */
				double *k = malloc((size_t)lp->d_k * sizeof *k);
				int at = 0;
				while (at < count - 1 && rows[at] != j)
					at++;
				if (k != NULL) {
					memcpy(k, &MAT_AT(a->cache_K, j, kh * lp->d_k), (size_t)lp->d_k * sizeof *k);
					variant_rope.turn_row(a, k, at, 1);
					strbuf_printf(b, _("(k_%d turned by RoPE at position %d, its place in the cache; q_%d at %d)\n"), j, at,
					              t, count - 1);
					celltext_terms(b, &MAT_AT(a->dec_q, t, h * lp->d_k), 1, k, 1, lp->d_k, utf8);
				}
				free(k);
			} else
				celltext_terms(b, &MAT_AT(a->dec_q, t, h * lp->d_k), 1, &MAT_AT(a->cache_K, j, kh * lp->d_k), 1, lp->d_k,
				               utf8);
		} else if (rows[count - 1] - rows[0] + 1 == count) /* one run of rows */
			strbuf_printf(b, _("softmax over the %d cached keys %d..%d of the scaled%s, masked scores; the full "
			                 "computation's weights[%d][%d] = %s\n"), count, rows[0], t, adj, t, j,
			              celltext_num(x1, MAT_AT(a->head[h].weights, t, j), utf8));
		else {
			char runs[64];
			keys_runs(runs, sizeof runs, rows, count);
			strbuf_printf(b, _("softmax over the %d cached keys %s of the scaled%s, masked scores: the first tokens "
			                 "stay while the ones between were evicted; the full computation's weights[%d][%d] = %s\n"),
			              count, runs, adj, t, j, celltext_num(x1, MAT_AT(a->head[h].weights, t, j), utf8));
		}
		break;
	case AM_DEC_WEIGHTED: {
		/* the kept rows' weights and values, gathered in the order of j */
		double *w = calloc((size_t)count * 2, sizeof *w);
		if (w == NULL)
			break;
		for (int k = 0; k < count; k++) {
			w[k] = MAT_AT(a->head[h].dec_weights, t, rows[k]);
			w[count + k] = MAT_AT(a->cache_V, rows[k], kh * lp->d_v + j);
		}
		if (rows[count - 1] - rows[0] + 1 == count)
			strbuf_printf(b, "= %s_j w_j %s cached v_j[%d], j = %d..%d\n", celltext_sym(utf8, "\u03a3", "sum"),
			              celltext_sym(utf8, "\u00b7", "*"), j, rows[0], t);
		else {
			char runs[64];
			keys_runs(runs, sizeof runs, rows, count);
			strbuf_printf(b, "= %s_j w_j %s cached v_j[%d], j = %s\n", celltext_sym(utf8, "\u03a3", "sum"),
			              celltext_sym(utf8, "\u00b7", "*"), j, runs);
		}
		celltext_terms(b, w, 1, w + count, 1, count, utf8);
		free(w);
		break;
	}
	case AM_WIN_WEIGHTS:
	case AM_WIN_OUTPUT:
		explain_window(b, a, which, h, t, j, rows, utf8);
		break;
	default:
		strbuf_printf(b, _("step %d's row; the full computation's row %d holds %s\n"), t, t,
		              celltext_num(x2, MAT_AT(*(which == AM_DEC_OUTPUT ? &a->output : attn_block_output(a)), t, j), utf8));
		if (which == AM_DEC_LAYER_OUT && !mat_empty(&a->moe_weights)) { /* a mixture of experts routes each row alone */
			strbuf_printf(b, _("its mixture of experts routed token %d alone, at this step, to experts"), t);
			for (int e = 0; e < a->moe_weights.cols; e++)
				if (!isnan(MAT_AT(a->moe_weights, t, e)))
					strbuf_printf(b, " %d (w = %s)", e, celltext_num(x2, MAT_AT(a->moe_weights, t, e), utf8));
			strbuf_printf(b, "%s", _(": the full computation's row of moe_weights, as a token's routing reads only its own row\n"));
		}
		break;
	}
	free(rows);
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
	.heads_apart = 1,
	.feature = FEAT_DECODE,
	.stage = STAGE_DECODE,
	.kernel = pass_decode,
	.checks_itself = 1,
	.explain = explain_decode,
	.fault = decode_fault,
	.same = decode_same,
};

/* ---- generation through the KV cache (attention.h: attn_gen_*) ---- */

typedef struct GenLayer {
	const Attn *a; /* the layer's full computation (borrowed): its settings, weights and the cache's first rows */
	Attn *one;     /* its block on one row */
	double *K, *V; /* cap rows of g·d_k, g·d_v */
} GenLayer;

struct AttnGen {
	int nl, n, cap;    /* layers; rows in the cache (the next position); rows it has room for */
	GenLayer *layer;
	ModelConfig head;  /* the last layer's settings for its one row: n = 1, the logits of row 0 */
	double *q, *scratch, *rows, *x, *out, *layer_out;
	double **hs, **hw, **ho; /* every head's rows of scores, weights and weighted sum: the same scratch rows */
	int *keep;         /* the rows the cache keeps at a step */
	int head_read;     /* the unembedding's mapped pages were read (given back at the end) */
};

void attn_gen_free(AttnGen *g)
{
	if (g == NULL)
		return;
	if (g->head_read)
		matview_give_back(&g->head.unembed_view, 0, g->head.vocab);
	for (int i = 0; i < g->nl && g->layer != NULL; i++) {
		decode_one_free(g->layer[i].one);
		free(g->layer[i].K);
		free(g->layer[i].V);
	}
	free(g->layer);
	free(g->q);
	free(g->scratch);
	free(g->keep);
	free(g->rows);
	free(g->x);
	free(g->out);
	free(g->layer_out);
	free(g->hs);
	free(g->hw);
	free(g->ho);
	free(g);
}

/* A layer decode_row can take past its computation's rows: a causal −∞ mask of its own tokens, a block, no variant that depends on n. */
static int gen_layer_fits(const Attn *a)
{
	const ModelConfig *cfg = attn_config(a);
	const LayerParams *lp = attn_params(a);

	return lp->block.present && decode_fault(cfg, lp) == NULL && model_mask_causal(cfg) &&
	       (cfg->mask == MASK_CAUSAL || cfg->mask == MASK_WINDOW) && !cfg->has_source && a->encoder == NULL &&
	       !(cfg->rope && cfg->rope_scaling.type == ROPE_SCALE_DYNAMIC) &&
	       !lp->mla.on && /* MLA's cache would keep c_KV and k_pe, not K and V: the whole prompt again instead */
	       !lp->gdn_mixer && /* Gated DeltaNet's would keep its conv's rows and its state (Qwen3-Next's linear layers) */
	       !a->failed && cfg->m == cfg->n;
}

AttnGen *attn_gen_begin(const Attn *model, int more)
{
	AttnGen *g;
	const Attn *a;
	int nl = 0, maxq = 0, maxv = 0, maxd = 0, maxo = 0, heads = 1;

	for (a = model; a != NULL; a = a->next) {
		const LayerParams *lp = attn_params(a);
		if (!gen_layer_fits(a))
			return NULL;
		nl++;
		maxq = a->heads * lp->d_k > maxq ? a->heads * lp->d_k : maxq;
		maxv = a->heads * lp->d_v > maxv ? a->heads * lp->d_v : maxv;
		maxd = attn_config(a)->d_model > maxd ? attn_config(a)->d_model : maxd;
		maxo = lp->d_out > maxo ? lp->d_out : maxo;
		heads = a->heads > heads ? a->heads : heads;
		if (a->next == NULL && (mat_empty(&a->logits) || mat_empty(&a->next_p)))
			return NULL;
	}
	if (nl == 0 || more < 0 || (g = calloc(1, sizeof *g)) == NULL)
		return NULL;
	g->nl = nl;
	g->n = model->cfg.n;
	g->cap = g->n + more;
	g->layer = calloc((size_t)nl, sizeof *g->layer);
	g->q = malloc((size_t)maxq * sizeof(double));
	g->scratch = malloc(decode_scratch(maxv, g->cap) * sizeof(double));
	g->keep = malloc((size_t)g->cap * sizeof *g->keep);
	g->rows = calloc((size_t)(2 * g->cap + maxv), sizeof(double));
	g->x = malloc((size_t)maxd * sizeof(double));
	g->layer_out = malloc((size_t)maxd * sizeof(double));
	g->out = malloc((size_t)(maxo > maxd ? maxo : maxd) * sizeof(double));
	g->hs = malloc((size_t)heads * sizeof *g->hs);
	g->hw = malloc((size_t)heads * sizeof *g->hw);
	g->ho = malloc((size_t)heads * sizeof *g->ho);
	if (g->layer == NULL || g->q == NULL || g->scratch == NULL || g->keep == NULL || g->rows == NULL || g->x == NULL ||
	    g->layer_out == NULL || g->out == NULL || g->hs == NULL || g->hw == NULL || g->ho == NULL)
		goto fail;
	for (int h = 0; h < heads; h++) {
		g->hs[h] = g->rows;                        /* scores, by key */
		g->hw[h] = g->rows + g->cap;               /* weights, by key */
		g->ho[h] = g->rows + 2 * (size_t)g->cap;   /* the weighted sum, d_v */
	}
	a = model;
	for (int i = 0; i < nl; i++, a = a->next) {
		GenLayer *L = &g->layer[i];
		const int gdk = a->kv_heads * attn_params(a)->d_k, gdv = a->kv_heads * attn_params(a)->d_v;
		const Mat *K = attn_slot_const(a, attn_reads(a, AM_K), 0), *V = &a->V;
		L->a = a;
		L->K = malloc((size_t)g->cap * (size_t)gdk * sizeof(double));
		L->V = malloc((size_t)g->cap * (size_t)gdv * sizeof(double));
		if (L->K == NULL || L->V == NULL || (L->one = decode_one(a, 1)) == NULL || K == NULL || K->cols != gdk ||
		    V->cols != gdv || K->rows != g->n || V->rows != g->n)
			goto fail;
		/* the full computation's keys (as its scores read them: turned by RoPE) and values are the cache's first rows */
		memcpy(L->K, K->a, (size_t)g->n * (size_t)gdk * sizeof(double));
		memcpy(L->V, V->a, (size_t)g->n * (size_t)gdv * sizeof(double));
	}
	g->head = g->layer[nl - 1].a->cfg;
	g->head.n = g->head.m = 1;
	g->head.logits_row = 0;
	return g;
fail:
	attn_gen_free(g);
	return NULL;
}

/*
 * The LM head on one row x (d_model): logits_v = x · unembed_v, each a dot
 * product of its own in mat_dot4's order (a view's rows made doubles as the
 * sum reads them, matview_dot_rows; a mapped file's pages stay until the
 * generation ends, attn_gen_free): the full computation's numbers to the
 * rounding of the order of the sum. 0, or -1 out of memory.
 */
static int gen_logits(AttnGen *g, const double *x)
{
	const ModelConfig *cfg = &g->head;
	const int D = cfg->d_model;
	double *z = g->layer[g->nl - 1].one->logits.a;

	if (!matview_empty(&cfg->unembed_view)) {
		g->head_read = 1;
		return matview_dot_rows(&cfg->unembed_view, 0, cfg->vocab, x, z);
	}
	for (int v = 0; v < cfg->vocab; v++)
		z[v] = mat_dot4(x, &cfg->unembed.a[(size_t)v * (size_t)D], D);
	return 0;
}

int attn_gen_step(AttnGen *g, const double *x, const double **logits, const double **next_p)
{
	const int t = g->n;
	Attn *last = g->layer[g->nl - 1].one;

	if (t >= g->cap)
		return -1;
	memcpy(g->x, x, (size_t)attn_config(g->layer[0].a)->d_model * sizeof(double));
	for (int i = 0; i < g->nl; i++) {
		const GenLayer *L = &g->layer[i];
		const Attn *a = L->a;
		const ModelConfig *cfg = attn_config(a);
		const LayerParams *lp = attn_params(a); /* a real model's weights read from its file (attn_mul_param) */
		const DecodeRow dr = { g->q, L->K, L->V, (size_t)a->kv_heads * (size_t)lp->d_k,
		                       (size_t)a->kv_heads * (size_t)lp->d_v, NULL, g->hs, g->hw, g->ho, g->out,
		                       g->layer_out, g->scratch, g->keep, NULL, NULL, NULL, NULL };
		unsigned made = 0;
		/* a mixture's experts kept in the file: the engine's loops read doubles, made for this step alone */
		if ((lp->files & LP_FILES_MOE) && attn_weights_make_some((Attn *)a, LP_FILES_MOE, &made) != 0) {
			attn_weights_drop_some((Attn *)a, made);
			return -1;
		}
		decode_row(a, cfg, lp, L->one, t, g->x, &dr);
		attn_weights_drop_some((Attn *)a, made);
		memcpy(g->x, g->layer_out, (size_t)cfg->d_model * sizeof(double));
	}
	/* the last layer's row through the final norm, the LM head and the next stage, as the full computation's last row */
	last->cfg = g->head;
	for (int st = STAGE_FINAL_NORM; st <= STAGE_NEXT; st++) {
		if (attn_stage_kernel((Stage)st) == NULL || !stage_present(&last->shape, (Stage)st))
			continue;
		if (st == STAGE_LOGITS && g->head.final_softcap <= 0.0 && gen_logits(g, attn_layer_output(last)->a) == 0)
			continue;
		if (st == STAGE_NEXT && next_p == NULL)
			continue;
		attn_stage_kernel((Stage)st)(last, &g->head, &last->lp);
	}
	g->n = t + 1;
	if (last->failed)
		return -1;
	*logits = last->logits.a;
	if (next_p != NULL)
		*next_p = last->next_p.a;
	return 0;
}
