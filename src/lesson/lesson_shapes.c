/*
 * lesson_shapes.c: the shape rules of lessons/FORMAT.md, one set for loading
 * and for lesson_validate (after an edit): every matrix against every
 * other and the limits, a step's cells against the catalogue; the numbers a
 * lesson and its computation hold; a lesson's LessonShape for the
 * catalogue's presence rules. Each reads the model itself (ModelConfig and
 * LayerParams: its matrices' rows and columns, a file's set before their
 * numbers are read) and gives the catalogue's LessonShape: a size lives in
 * the model, nowhere else.
 */
#include "lesson/lesson_internal.h"
#include "model/ropefreq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* A layer's shapes, checked against each other and the limits        */
/* ------------------------------------------------------------------ */

/* The mask's parts: a list's, or the one mask as one part in *one (none without). Their count. */
static int mask_parts(const ModelConfig *c, MaskPart *one, const MaskPart **part)
{
	if (c->mask == MASK_LIST) {
		*part = c->masks;
		return c->nmasks;
	}
	one->kind = c->mask;
	one->window = c->window;
	one->matrix = c->mask_matrix;
	*part = one;
	return c->mask != MASK_NONE;
}

/*
 * The sizes a layer's matrices give (a file's before their numbers are
 * read: Mat's rows and columns, no numbers yet): n, d_model from X; m,
 * d_src from the source (X's without one); d_k, d_v, d_out from W_q, W_v
 * and W_o. The model's n … d_out fields are what these were when checked
 * (li_check_shapes writes them; lesson_validate compares).
 */
static void model_sizes(const ModelConfig *c, int *n, int *m, int *d_model, int *d_src)
{
	*n = c->input.rows;
	*d_model = c->input.cols;
	*m = c->has_source ? c->source_input.rows : *n;
	*d_src = c->has_source ? c->source_input.cols : *d_model;
}

/* The rows and columns W_q, W_k or W_v stands for: its own, or multi-head latent attention's (no such matrix). */
static void weight_dims(const ModelConfig *c, const LayerParams *p, AttnMatrix w, int *rows, int *cols)
{
	const Mat *x = w == AM_W_Q ? &p->W_q : w == AM_W_K ? &p->W_k : &p->W_v;

	*rows = x->rows;
	*cols = x->cols;
	if (p->mla.on) { /* MLA: the shapes they would have */
		*rows = c->input.cols;
		*cols = p->heads * (w == AM_W_V ? p->d_v : p->d_k);
	}
}

/* d_k, d_v, d_out as the weights give them (0 without heads). */
static void head_dims(const ModelConfig *c, const LayerParams *p, int *d_k, int *d_v, int *d_out)
{
	const int g = p->kv_heads > 0 ? p->kv_heads : p->heads;
	int r, wq_c, wv_c;

	weight_dims(c, p, AM_W_Q, &r, &wq_c);
	weight_dims(c, p, AM_W_V, &r, &wv_c);
	*d_k = p->heads > 0 ? wq_c / p->heads : 0;
	*d_v = g > 0 ? wv_c / g : 0;
	*d_out = !mat_empty(&p->W_o) ? p->W_o.cols : p->heads * *d_v;
}

double lesson_model_count_numbers(const ModelConfig *cfg, const LayerParams *p)
{
	int n, m, d_model, d_src, d_k, d_v, d_out;
	MaskPart one;
	const MaskPart *part;
	const int nparts = mask_parts(cfg, &one, &part);

	model_sizes(cfg, &n, &m, &d_model, &d_src);
	head_dims(cfg, p, &d_k, &d_v, &d_out);
	const double N = n, M = m, h = p->heads, D = d_model, Ds = d_src, dk = d_k, dv = d_v;
	const double g = p->kv_heads > 0 ? p->kv_heads : p->heads;
	double mask = 0, own, computed;

	for (int i = 0; i < nparts; i++)
		mask += part[i].kind == MASK_MATRIX ? N * M : part[i].kind == MASK_PADDING ? M : 0;
	/* the lesson: X, source.X, W_q, W_k, W_v, W_o, w_e, the mask */
	own = N * D + (cfg->has_source ? M * Ds : 0) + D * h * dk + Ds * g * (dk + dv) +
	      (!mat_empty(&p->W_o) ? h * dv * d_out : 0) + (cfg->score == SCORE_ADDITIVE ? h * dk : 0) + mask;
	/*
	 * the computation: PE and X, PE_src and S, Q, K, V, per head scores, weights (n × m) and weighted, concat,
	 * output, visibility, and the few n × m matrices of the derived stages (scaled, masked, ALiBi's bias and
	 * biased) made when a view asks for them
	 */
	computed = (cfg->positional != POS_NONE ? 2 : 1) * N * D +
	           (cfg->has_source ? (cfg->positional != POS_NONE ? 2 : 1) * M * Ds : 0) + N * h * dk + M * g * (dk + dv) +
	           h * (2 * N * M + N * dv) + N * h * dv + (!mat_empty(&p->W_o) ? N * d_out : 0) + N * M +
	           LESSON_DERIVED_MATRICES * N * M;
	/* RoPE's Q_rot and K_rot; ALiBi's slopes; the tiles' m, l, O and output; the decode rows */
	if (cfg->rope)
		computed += N * h * dk + M * g * dk;
	if (cfg->alibi)
		computed += h;
	if (cfg->flash_bq > 0 && cfg->flash_bk > 0) {
		const double nkb = ceil(M / cfg->flash_bk);
		computed += h * (N * nkb * (2 + dv) + N * dv);
	}
	/* linear attention: phi_q, phi_k, lin_scores, lin_z, lin_out, lin_state, lin_ksum, lin_out_state per head */
	if (cfg->linear)
		computed += h * (N * dk + M * dk + N * M + N + 2 * N * dv + dk * dv + dk);
	/* Gated DeltaNet: W_a, W_b, A_log, dt_bias; per head gdn_q, gdn_k, β, g, recall, delta, both outputs, the state */
	if (!mat_empty(&p->gdn_A_log)) /* (β and g per value head: r = v_heads / heads of them a head) */
		computed += (2 * D * h + 2 * h + 2 * N * h) * layer_gdn_r(p) + h * (2 * N * dk + 4 * N * dv + dk * dv);
	/* as the mixer: conv1d, W_z, the norm's weight; gdn_conv, gdn_z; per head the states, rms, gated */
	if (!mat_empty(&p->gdn_A_log) && p->gdn_mixer) {
		const double ch = h * dk + g * (dk + dv);
		own += p->gdn_conv.rows * ch + D * h * dv + dv / layer_gdn_r(p);
		computed += N * ch + N * h * dv + h * (N * dk * dv + N * layer_gdn_r(p) + N * dv);
	}
	if (cfg->decode)
		computed += N * h * dk + N * g * (dk + dv) + h * (2 * N * M + N * dv) + N * d_out + (p->block.present ? N * D : 0) +
		            (cfg->cache_window > 0 ? h * N * M + N * d_out : 0); /* StreamingLLM's comparison */
	if (p->block.present) {
		const double F = p->block.d_ff;
		/* its parameters: four norm vectors, W_1, W_3, W_2 and their biases; its results: two residuals,
		 * two norms and their statistics, the FFN's three d_ff-wide matrices, its output, the final norm */
		own += 4 * D + 3 * D * F + 2 * F + D;
		computed += N * (6 * D + 4 + 3 * F);
		if (p->block.sandwich) /* Gemma's norms after each sublayer: their weights, results and statistics */
			own += 2 * D, computed += N * (2 * D + 4);
	}
	/* a mixture of experts: the router and every expert; logits, probs, weights, act, out */
	if (p->block.present && p->block.has_ffn && p->block.moe.experts > 0) {
		const double E = p->block.moe.experts, F = p->block.d_ff;
		own += D * E + 3 * D * F * E + 3 * D * p->block.moe.shared_ff + D;
		computed += N * (3 * E + E * F + E * D + 1 + D);
	}
	/* QK-norm's weights and Q_norm, K_norm; the LM head's unembedding, logits and next */
	if (cfg->qk_norm != QK_NORM_NONE) /* per head d_k weights each; over the projection h·d_k and g·d_k; L2 none */
		own += cfg->qk_norm == QK_NORM_PROJ ? (h + g) * dk : cfg->qk_norm == QK_NORM_L2 ? 0 : 2 * dk,
			computed += N * h * dk + M * g * dk;
	if (cfg->vocab > 0)
		own += cfg->vocab * D, computed += (N + 1) * cfg->vocab;
	if (cfg->vocab > 0 && cfg->final_softcap > 0.0) /* the logits before their cap */
		computed += N * cfg->vocab;
	if (!mat_empty(&p->sinks)) /* the sinks' logits and each row's share */
		own += h, computed += h * N;
	if (!mat_empty(&p->W_gate)) /* W_gate (and b_gate); gate, gate_sig and gated */
		own += (D + (mat_empty(&p->b_gate) ? 0 : 1)) * h * dv, computed += 3 * N * h * dv;
	if (p->mla.on) { /* MLA: its weights beside W_q, W_k, W_v's count above; its latents, heads, absorbed form and cache */
		const double r = p->mla.q_lora_rank, c = p->mla.kv_lora_rank, dn = p->mla.d_nope, dr = p->mla.d_rope;
		own += D * r + r + r * h * dk + D * (c + dr) + c + c * h * (dn + dv);
		computed += N * (r + c + 2 * dr + h * (dn + dr + c + dv)) + h * N * M + 2 + 16;
	}
	if (p->diff.on) /* differential attention: its λ vectors and subln; λ; a head's A1, A2, A, O, rms, out */
		own += 4 * dk + 2 * dv, computed += 4 + h * (3 * N * M + 4 * N * dv + N);
	return own + computed;
}

/*
 * The shape rules of lessons/FORMAT.md, on a layer's model (cfg, lp: its
 * matrices' rows and columns, a file's before their numbers are read):
 * writes the sizes they give into cfg->n, m, d_model, d_src and lp->d_k,
 * d_v, d_out. tc: a file's token labels (NULL: none to check). Paths are
 * top-level keys.
 */
int li_check_shapes(Ctx *c, ModelConfig *cfg, LayerParams *lp, const TokenCounts *tc)
{
	int n, m, d_model, d_src, wq_r, wq_c, wk_r, wk_c, wv_r, wv_c;
	const int heads = lp->heads, has_wo = !mat_empty(&lp->W_o), wo_r = lp->W_o.rows, wo_c = lp->W_o.cols;
	const int has_we = !mat_empty(&lp->w_e), we_r = lp->w_e.rows, we_c = lp->w_e.cols;
	const int rope_dynamic = cfg->rope_scaling.type == ROPE_SCALE_DYNAMIC;
	int kv_heads = lp->kv_heads, d_k, d_v, d_out;
	MaskPart one;
	const MaskPart *part;
	const int nparts = mask_parts(cfg, &one, &part);
	const size_t base = c->pathlen;
	const char *src_x = li_stack(c)->part == PART_CROSS ? _("the encoder's d_model")
	                    : cfg->has_source         ? "source.X"
	                                            : "X";
	double total;
	int r = -1;

	model_sizes(cfg, &n, &m, &d_model, &d_src);
	weight_dims(cfg, lp, AM_W_Q, &wq_r, &wq_c);
	weight_dims(cfg, lp, AM_W_K, &wk_r, &wk_c);
	weight_dims(cfg, lp, AM_W_V, &wv_r, &wv_c);

#define AT(key) path_key(c, key)
	if (n > LESSON_MAX_TOKENS || m > LESSON_MAX_TOKENS) {
		AT(n > LESSON_MAX_TOKENS ? "X" : "source.X");
		fail(c, _("%d rows is over the limit of %d tokens (LESSON_MAX_TOKENS)"),
		     n > LESSON_MAX_TOKENS ? n : m, LESSON_MAX_TOKENS);
		goto out;
	}
	if (li_gemma_check(c, cfg, lp) != 0) /* Gemma's pieces (lesson_gemma.c) */
		goto out;
	if (tc != NULL && tc->ntokens >= 0 && tc->ntokens != n) {
		AT("tokens");
		fail(c, _("%d labels, but X has %d rows (one label per row)"), tc->ntokens, n);
		goto out;
	}
	if (cfg->has_source && tc != NULL && tc->nsource_tokens >= 0 && tc->nsource_tokens != m) {
		AT("source.tokens");
		fail(c, _("%d labels, but source.X has %d rows (one label per row)"), tc->nsource_tokens, m);
		goto out;
	}
	if (heads > LESSON_MAX_HEADS) {
		AT("heads");
		fail(c, _("%d is over the limit of %d heads (LESSON_MAX_HEADS)"), heads, LESSON_MAX_HEADS);
		goto out;
	}
	if (wq_r != d_model) {
		AT("W_q");
		fail(c, _("expected %d rows (d_model, the columns of X), got %d"), d_model, wq_r);
		goto out;
	}
	if (wk_r != d_src) {
		AT("W_k");
		fail(c, li_stack(c)->part == PART_CROSS ? _("expected %d rows (%s), got %d") : _("expected %d rows (the columns of %s), got %d"),
		     d_src, src_x, wk_r);
		goto out;
	}
	if (wv_r != d_src) {
		AT("W_v");
		fail(c, li_stack(c)->part == PART_CROSS ? _("expected %d rows (%s), got %d") : _("expected %d rows (the columns of %s), got %d"),
		     d_src, src_x, wv_r);
		goto out;
	}
	if (kv_heads <= 0)
		kv_heads = heads;
	if (kv_heads == heads && wk_c != wq_c) {
		AT("W_k");
		fail(c, _("expected %d columns (as many as W_q: heads × d_k), got %d"), wq_c, wk_c);
		goto out;
	}
	if (wq_c % heads != 0) {
		AT("heads");
		fail(c, _("%d does not divide the %d columns of W_q"), heads, wq_c);
		goto out;
	}
	if (kv_heads != heads && wk_c != kv_heads * (wq_c / heads)) {
		AT("W_k");
		fail(c, _("expected %d columns (kv_heads %d × d_k %d), got %d"), kv_heads * (wq_c / heads),
		     kv_heads, wq_c / heads, wk_c);
		goto out;
	}
	if (wv_c % kv_heads != 0) {
		AT(kv_heads == heads ? "heads" : "kv_heads");
		fail(c, _("%d does not divide the %d columns of W_v"), kv_heads, wv_c);
		goto out;
	}
	d_k = wq_c / heads;
	d_v = wv_c / kv_heads;
	if (has_wo && wo_r != heads * d_v) {
		AT("W_o");
		if (kv_heads == heads && !lp->mla.on) /* MLA has no W_v: the columns of concat */
			fail(c, _("expected %d rows (heads × d_v, the columns of W_v), got %d"), wv_c, wo_r);
		else
			fail(c, _("expected %d rows (heads %d × d_v %d, the columns of concat), got %d"), heads * d_v,
			     heads, d_v, wo_r);
		goto out;
	}
	d_out = has_wo ? wo_c : heads * d_v;
	if (cfg->rope && d_k % 2 != 0) {
		AT("rope");
		fail(c, _("needs an even d_k (q and k are rotated in pairs of columns), but d_k = %d"), d_k);
		goto out;
	}
	if (cfg->rope && cfg->rope_partial > 0 && cfg->rope_partial < 1) { /* partial RoPE (issue 23 §2) */
		const int rd = (int)((double)d_k * cfg->rope_partial);
		if (rd % 2 != 0 || rd < 2 || (rope_dynamic && rd == 2)) {
			AT("rope.partial_rotary_factor");
			fail(c, _("int(d_k %d \u00d7 %g) = %d columns would turn: it must be even and at least 2 (4 with dynamic NTK)"),
			     d_k, cfg->rope_partial, rd);
			goto out;
		}
	}
	if (cfg->score == SCORE_ADDITIVE) {
		if (!has_we) {
			AT("w_e");
			fail(c, _("missing: \"score\": \"additive\" needs w_e, %d numbers (the columns of W_q)"), wq_c);
			goto out;
		}
		if (we_r != 1 || we_c != wq_c) {
			AT("w_e");
			fail(c, _("expected %d numbers (heads × d_k, the columns of W_q), got %d"),
			     wq_c, we_r * we_c);
			goto out;
		}
	}
	for (int i = 0; i < nparts; i++) {
		char where[40];
		const int list = cfg->mask == MASK_LIST;
		snprintf(where, sizeof where, list ? "mask[%d]" : "mask", i);
		switch (part[i].kind) {
		case MASK_CAUSAL:
		case MASK_WINDOW:
			if (n != m) {
				AT("mask");
				fail(c, _("%s needs a square score matrix, but n = %d and m = %d"),
				     part[i].kind == MASK_CAUSAL ? "\"causal\"" : "a window", n, m);
				goto out;
			}
			break;
		case MASK_PADDING:
			if (part[i].matrix.cols != m) {
				AT(where);
				path_key(c, "padding");
				fail(c, _("expected %d numbers (one per key, m = %d), got %d"), m, m, part[i].matrix.cols);
				goto out;
			}
			break;
		case MASK_MATRIX:
			if (part[i].matrix.rows != n) {
				AT(where);
				fail(c, _("expected %d rows (n, one per query), got %d"), n, part[i].matrix.rows);
				goto out;
			}
			if (part[i].matrix.cols != m) {
				AT(where);
				fail(c, _("expected %d columns (m, one per key), got %d"), m, part[i].matrix.cols);
				goto out;
			}
			break;
		default:
			break;
		}
	}
	if (cfg->decode) {
		int causal = 0;
		for (int i = 0; i < nparts; i++)
			causal |= part[i].kind == MASK_CAUSAL || part[i].kind == MASK_WINDOW;
		AT("decode");
		if (cfg->has_source) {
			fail(c, _("needs self-attention (a lesson with a source is not generated token by token)"));
			goto out;
		}
		if (!causal) {
			fail(c, _("needs a causal or window mask (a generated token sees only the tokens before it)"));
			goto out;
		}
		if (!cfg->mask_fill_inf) {
			fail(c, _("needs \"mask_fill\": \"-inf\" (with a finite fill the full computation also weighs the future "
			        "tokens a cache does not hold)"));
			goto out;
		}
		path_set(c, base);
		if (li_check_streaming(c, cfg, lp) != 0)
			goto out;
		if (cfg->rope && rope_dynamic) {
			AT("rope");
			path_key(c, "scaling");
			path_key(c, "type");
			fail(c, _("dynamic NTK changes the base as the sequence grows, so a cached key was turned with another one: "
			          "leave out \"decode\", or use another scaling"));
			goto out;
		}
	}
	if (lp->mla.on && cfg->decode) { /* `decode on` on a deepseek_v3 model: the loader refuses the key */
		AT("decode");
		fail(c, "%s", _("not with MLA yet: the absorb stage shows what its cache keeps"));
		goto out;
	}
	if (lp->diff.on && (cfg->decode || cfg->backward != BACKWARD_NONE || cfg->flash_bq != 0)) { /* `decode on` too: the loader refuses the keys */
		AT(cfg->decode ? "decode" : cfg->backward != BACKWARD_NONE ? "backward" : "flash");
		fail(c, "%s", _("not with differential attention (\"diff_attn\") yet: it is computed forward, on one layer of "
		                "paired heads, without it"));
		goto out;
	}
	if (lp->gdn_mixer && (cfg->decode || !mat_empty(&lp->W_gate) || lp->mla.on)) { /* Gated DeltaNet as the mixer */
		AT(cfg->decode ? "decode" : !mat_empty(&lp->W_gate) ? "W_gate" : "mla");
		fail(c, "%s", _("not with Gated DeltaNet as the layer's mixer (\"mixer\": true): its output, not softmax "
		                "attention's, is what W_o reads, and decoding, the gate and MLA are softmax attention's"));
		goto out;
	}
	if (!mat_empty(&lp->W_gate)) { /* gated attention (issue 23 §6): before W_o (decoded with decode_gate; backward.c: gate_backward) */
		AT("W_gate");
		if (mat_empty(&lp->W_o)) {
			fail(c, _("gated attention multiplies concat by the gate before W_o: this lesson needs W_o"));
			goto out;
		}
		path_set(c, base);
	}
	if ((cfg->linear || !mat_empty(&lp->gdn_A_log)) && (cfg->backward != BACKWARD_NONE)) {
		AT(cfg->linear ? "linear_attention" : "gated_deltanet");
		fail(c, _("is computed forward only: its gradients are not (leave out \"backward\", or \"%s\")"),
		     cfg->linear ? "linear_attention" : "gated_deltanet");
		goto out;
	}
	if (cfg->linear && cfg->linear_causal && (cfg->has_source || n != m)) {
		AT("linear_attention");
		path_key(c, "causal");
		fail(c, _("needs self-attention (causal: query i reads the keys j \u2264 i of the same tokens), but this lesson has "
		        "a source"));
		goto out;
	}
	if (cfg->flash_bq != 0 || cfg->flash_bk != 0) {
		if (cfg->flash_bq < 1 || cfg->flash_bq > n) {
			AT("flash");
			path_key(c, "block_q");
			fail(c, _("expected a whole number from 1 to %d (n, the query rows), got %d"), n, cfg->flash_bq);
			goto out;
		}
		if (cfg->flash_bk < 1 || cfg->flash_bk > m) {
			AT("flash");
			path_key(c, "block_k");
			fail(c, _("expected a whole number from 1 to %d (m, the key rows), got %d"), m, cfg->flash_bk);
			goto out;
		}
	}
	/* Counted from the shapes, before a single number is allocated; a compare variant counts with its lesson. */
	total = li_stack(c)->numbers_before + lesson_model_count_numbers(cfg, lp);
	if (total > (double)LESSON_MAX_NUMBERS) {
		fail(c, _("too large: its matrices and stages%s would hold %.0f numbers, over the limit of %ld "
		        "(LESSON_MAX_NUMBERS); make n, d_model or heads smaller"),
		     li_stack(c)->numbers_before > 0 ? _(", with the lesson's own,") : "", total, (long)LESSON_MAX_NUMBERS);
		goto out;
	}
	/* Each additive score is d_k tanh terms, far slower than the dot product's multiply-adds. */
	if (cfg->score == SCORE_ADDITIVE &&
	    (double)n * m * heads * d_k > (double)LESSON_MAX_ADDITIVE_TERMS) {
		AT("score");
		fail(c, _("additive scores of n = %d queries, m = %d keys and h·d_k = %d would take %.0f tanh terms, over "
		        "the limit of %ld (LESSON_MAX_ADDITIVE_TERMS); make n, m or d_k smaller"), n, m,
		     heads * d_k, (double)n * m * heads * d_k, (long)LESSON_MAX_ADDITIVE_TERMS);
		goto out;
	}
	cfg->n = n;
	cfg->m = m;
	cfg->d_model = d_model;
	cfg->d_src = d_src;
	if (cfg->embed_scale_sqrt) /* "embed_scale": true: Gemma's √d_model, the double nearest it */
		cfg->embed_scale = sqrt((double)d_model);
	lp->d_k = d_k;
	lp->d_v = d_v;
	lp->d_out = d_out;
	r = 0;
out:
#undef AT
	path_set(c, base);
	return r;
}

/* The sizes and features the catalogue's shape and presence rules read, of one layer's model (lesson.h). */
void lesson_model_shape(const ModelConfig *cfg, const LayerParams *p, LessonShape *out)
{
	int n, m, d_model, d_src, d_k, d_v, d_out;
	const int heads = p->heads, kv = p->kv_heads > 0 ? p->kv_heads : p->heads;
	MaskPart one;
	const MaskPart *part;
	const int nparts = mask_parts(cfg, &one, &part);

	model_sizes(cfg, &n, &m, &d_model, &d_src);
	head_dims(cfg, p, &d_k, &d_v, &d_out);
	memset(out, 0, sizeof *out);
	out->dim[DIM_ONE] = 1;
	out->dim[DIM_N] = n;
	out->dim[DIM_M] = m;
	out->dim[DIM_D_MODEL] = d_model;
	out->dim[DIM_D_SRC] = d_src;
	out->dim[DIM_HDK] = heads * d_k;
	out->dim[DIM_HDV] = heads * d_v;
	out->dim[DIM_GDK] = kv * d_k;
	out->dim[DIM_GDV] = kv * d_v;
	out->dim[DIM_NKB] = cfg->flash_bk > 0 ? (m + cfg->flash_bk - 1) / cfg->flash_bk : 0;
	out->dim[DIM_NKB_DV] = out->dim[DIM_NKB] * d_v;
	out->kv_heads = kv;
	out->block_q = cfg->flash_bq;
	out->block_k = cfg->flash_bk;
	out->dim[DIM_DK] = d_k;
	out->dim[DIM_DV] = d_v;
	out->dim[DIM_D_OUT] = d_out;
	out->dim[DIM_D_FF] = p->block.d_ff;
	out->dim[DIM_TWO] = 2;
	out->dim[DIM_VOCAB] = cfg->vocab;
	out->dim[DIM_HEADS] = heads;
	out->dim[DIM_QLORA] = p->mla.q_lora_rank;
	out->dim[DIM_KVLORA] = p->mla.kv_lora_rank;
	out->dim[DIM_ROPE] = p->mla.d_rope;
	out->dim[DIM_NOPE] = p->mla.d_nope;
	out->dim[DIM_H_NOPE] = heads * p->mla.d_nope;
	out->dim[DIM_H_ROPE] = heads * p->mla.d_rope;
	out->dim[DIM_H_KVLORA] = heads * p->mla.kv_lora_rank;
	out->dim[DIM_KVA] = p->mla.kv_lora_rank + p->mla.d_rope;
	out->dim[DIM_KVB] = heads * (p->mla.d_nope + d_v);
	out->dim[DIM_FOUR] = 4;
	{
		const int E = p->block.has_ffn ? p->block.moe.experts : 0; /* a mixture of experts (issue 23 §7) */
		out->dim[DIM_EXPERTS] = E;
		out->dim[DIM_E_DFF] = E * p->block.d_ff;
		out->dim[DIM_E_DMODEL] = E * d_model;
		out->dim[DIM_SHARED_FF] = E > 0 ? p->block.moe.shared_ff : 0;
		out->dim[DIM_GROUPS] = E > 0 && p->block.moe.scoring == MOE_SCORE_SIGMOID ? p->block.moe.n_group : 0;
	}
	out->dim[DIM_2DV] = 2 * d_v;
	out->dim[DIM_CONV_K] = p->gdn_mixer ? p->gdn_conv.rows : 0; /* Gated DeltaNet as the mixer: its conv1d */
	out->dim[DIM_CONV_CH] = heads * d_k + kv * (d_k + d_v);
	out->dim[DIM_DKDV] = d_k * d_v;
	out->dim[DIM_IDX_HEADS] = p->dsa.on ? p->dsa.heads : 0; /* DeepSeek Sparse Attention's indexer */
	out->dim[DIM_IDX_D] = p->dsa.on ? p->dsa.dim : 0;
	out->dim[DIM_IDX_HD] = p->dsa.on ? p->dsa.heads * p->dsa.dim : 0;
	out->dim[DIM_GDN_R] = layer_gdn_r(p);
	out->dim[DIM_GDN_VH] = heads * out->dim[DIM_GDN_R];
	out->dim[DIM_GDN_DV] = d_v / out->dim[DIM_GDN_R];
	out->dim[DIM_QNORM] = cfg->qk_norm == QK_NORM_PROJ ? heads * d_k : d_k;
	out->dim[DIM_KNORM] = cfg->qk_norm == QK_NORM_PROJ ? out->dim[DIM_GDK] : d_k;
	out->heads = heads;
	out->features = (cfg->positional != POS_NONE ? FEAT_POSITIONAL : 0u) | (heads > 1 ? FEAT_MULTIHEAD : 0u) |
	                (cfg->mask != MASK_NONE ? FEAT_MASK : 0u) | (!mat_empty(&p->W_o) ? FEAT_WO : 0u) |
	                (cfg->has_source ? FEAT_SOURCE : 0u) | (cfg->score == SCORE_ADDITIVE ? FEAT_ADDITIVE : 0u);
	if (p->block.present) {
		out->features |= FEAT_BLOCK;
		if (p->block.norm != NORM_NONE)
			out->features |= FEAT_NORM | (p->block.norm == NORM_PRE ? FEAT_PRENORM : p->block.norm == NORM_AFTER ? FEAT_NORM_AFTER : FEAT_POSTNORM);
		if (p->block.norm_kind == NORM_LAYERNORM)
			out->features |= FEAT_LAYERNORM;
		if (p->block.norm != NORM_NONE && p->block.norm_kind == NORM_RMSNORM_1P)
			out->features |= FEAT_NORM_1P;
		if (p->block.sandwich)
			out->features |= FEAT_SANDWICH;
		if (p->block.has_ffn)
			out->features |= FEAT_FFN | ((p->block.activation == ACT_SWIGLU || p->block.activation == ACT_GEGLU) ? FEAT_SWIGLU : 0u) |
			                 (p->block.activation == ACT_GEGLU ? FEAT_GEGLU : 0u);
		if (p->block.has_ffn && p->block.moe.experts > 0)
			out->features |= FEAT_MOE | (p->block.moe.shared_ff > 0 ? FEAT_MOE_SHARED : 0u) |
			                  (p->block.moe.scoring == MOE_SCORE_SIGMOID ? FEAT_MOE_SIGMOID : FEAT_MOE_SOFTMAX) |
			                  (p->block.moe.shared_ff > 0 && !mat_empty(&p->block.moe.S_gate) ? FEAT_MOE_SHARED_GATE : 0u);
	}
	if (cfg->has_final_norm)
		out->features |= FEAT_FINAL | (p->block.norm_kind == NORM_LAYERNORM ? FEAT_LAYERNORM : 0u) |
		                  (cfg->final_kind == NORM_RMSNORM_1P ? FEAT_NORM_1P : 0u);
	if ((cfg->backward != BACKWARD_NONE))
		out->features |= FEAT_BACKWARD;
	if (cfg->scale == SCALE_NONE)
		out->features |= FEAT_UNSCALED;
	else if (cfg->scale == SCALE_VALUE)
		out->features |= FEAT_SCALE_VALUE;
	if (cfg->rope)
		out->features |= FEAT_ROPE;
	if (rope_has_table(cfg))
		out->features |= FEAT_ROPE_TABLE;
	if (cfg->alibi)
		out->features |= FEAT_ALIBI;
	if (out->kv_heads < heads)
		out->features |= FEAT_GQA;
	for (int i = 0; i < nparts; i++)
		if (part[i].kind == MASK_WINDOW)
			out->features |= FEAT_WINDOW;
	if (cfg->decode)
		out->features |= FEAT_DECODE | (cfg->cache_window > 0 ? FEAT_STREAMING : 0u);
	if (cfg->flash_bq > 0 && cfg->flash_bk > 0)
		out->features |= FEAT_FLASH;
	if (cfg->qk_norm == QK_NORM_L2) /* Llama 4's, after RoPE: a stage of its own */
		out->features |= FEAT_QK_L2;
	else if (cfg->qk_norm != QK_NORM_NONE)
		out->features |= FEAT_QK_NORM | (cfg->qk_norm == QK_NORM_PROJ ? FEAT_QK_NORM_PROJ : 0u) |
		                  (cfg->qk_norm_plus1 ? FEAT_NORM_1P : 0u);
	if (cfg->vocab > 0)
		out->features |= FEAT_LM_HEAD;
	if (cfg->embed_scale > 0.0)
		out->features |= FEAT_EMBED_SCALE;
	if (cfg->attn_softcap > 0.0)
		out->features |= FEAT_SOFTCAP;
	if (cfg->vocab > 0 && cfg->final_softcap > 0.0)
		out->features |= FEAT_FINAL_CAP;
	if (cfg->linear)
		out->features |= FEAT_LINEAR;
	if (!mat_empty(&p->gdn_A_log))
		out->features |= FEAT_DELTANET | (p->gdn_mixer ? FEAT_GDN_MIXER : 0u);
	if (!mat_empty(&p->sinks))
		out->features |= FEAT_SINKS;
	if (!mat_empty(&p->W_gate))
		out->features |= FEAT_GATED;
	if (p->mla.on)
		out->features |= FEAT_MLA | (p->mla.q_lora_rank > 0 ? FEAT_MLA_QLORA : 0u);
	if (p->diff.on)
		out->features |= FEAT_DIFF;
	if (p->dsa.on && p->mla.on)
		out->features |= FEAT_DSA;
}

/* Check a cell reference (focus, quiz answer) at the current path. */
int li_check_cellref(Ctx *c, const LessonShape *sh, const CellRef *ref)
{
	const char *names[AM_COUNT], *why;
	int which = matrix_find(ref->matrix), rows, cols, i, r = -1;
	size_t old = c->pathlen;

	if (which < 0) {
		for (i = 0; i < AM_COUNT; i++)
			names[i] = matrix_name((AttnMatrix)i);
		path_key(c, "matrix");
		fail(c, _("unknown matrix %s%s"), quoted(ref->matrix).s, did_you_mean(ref->matrix, names, AM_COUNT).s);
		goto out;
	}
	matrix_shape(sh, (AttnMatrix)which, &rows, &cols);
	if (!matrix_present(sh, (AttnMatrix)which, &why)) {
		path_key(c, "matrix");
		fail(c, _("this lesson has no %s (%s)"), matrix_name((AttnMatrix)which), why);
		goto out;
	}
	if ((matrix_kind((AttnMatrix)which)->flags & MF_PER_HEAD) && (ref->head < 0 || ref->head >= sh->heads)) {
		path_key(c, "head");
		fail(c, ngettext("%d is outside the %d head of this lesson", "%d is outside the %d heads of this lesson", (unsigned long)sh->heads),
		     ref->head, sh->heads);
		goto out;
	}
	if (ref->row < 0 || ref->row >= rows) {
		path_key(c, "row");
		fail(c, ngettext("%d is outside the %d row of %s", "%d is outside the %d rows of %s", (unsigned long)rows), ref->row, rows,
		     matrix_name((AttnMatrix)which));
		goto out;
	}
	if (ref->col < 0 || ref->col >= cols) {
		path_key(c, "col");
		fail(c, ngettext("%d is outside the %d column of %s", "%d is outside the %d columns of %s", (unsigned long)cols), ref->col, cols,
		     matrix_name((AttnMatrix)which));
		goto out;
	}
	r = 0;
out:
	path_set(c, old);
	return r;
}

/* A step's stage and head against this lesson (paths: steps[i].stage, steps[i].head). */
int li_check_step_stage(Ctx *c, const LessonShape *sh, const Step *st)
{
	size_t old = c->pathlen;
	int r = 0;

	if (!stage_present(sh, st->stage)) {
		path_key(c, "stage");
		r = fail(c, _("the stage \"%s\" is not in this lesson (%s)"), stage_name(st->stage),
		         stage_absent(sh, st->stage));
	} else if (st->head < 0 || st->head >= sh->heads) {
		path_key(c, "head");
		r = fail(c, ngettext("%d is outside the %d head of this lesson", "%d is outside the %d heads of this lesson", (unsigned long)sh->heads),
		         st->head, sh->heads);
	}
	path_set(c, old);
	return r;
}

/* ------------------------------------------------------------------ */
/* A loaded lesson: its numbers, its shape, its validation            */
/* ------------------------------------------------------------------ */

/*
 * Layer i of a model with layers as the checks and counts read it alone:
 * its settings over the shared ones, with the model's positions and
 * neither the final norm nor the loss (the stack's, counted once).
 */
static void layer_settings(const Model *m, int i, ModelConfig *c)
{
	model_config_of_layer(m, i, &m->cfg.input, c);
	c->positional = m->cfg.positional;
	c->has_final_norm = 0;
	c->backward = BACKWARD_NONE;
}

static double model_count_numbers(const Model *m)
{
	double total = 0;

	/* a stack holds every layer's matrices at once (its top level's are layer 0's) */
	for (int i = 0; i < m->nlayers; i++) {
		ModelConfig c;
		layer_settings(m, i, &c);
		total += lesson_model_count_numbers(&c, model_layer_params_const(m, i));
	}
	if (m->encoder != NULL)
		total += model_count_numbers(m->encoder);
	if (m->nlayers > 0)
		return total;
	return lesson_model_count_numbers(&m->cfg, &m->lp);
}

double lesson_count_numbers(const Lesson *l)
{
	return model_count_numbers(&l->model);
}

double lesson_budget_numbers(const Lesson *l)
{
	return lesson_count_numbers(l) + (l->compare != NULL ? lesson_count_numbers(l->compare) : 0);
}

void lesson_shape(const Lesson *l, LessonShape *out)
{
	lesson_model_shape(&l->cfg, &l->lp, out);
}

int lesson_stage_present(const Lesson *l, Stage s)
{
	LessonShape sh;

	if (l == NULL || (unsigned)s >= STAGE_COUNT)
		return 0;
	lesson_shape(l, &sh);
	return stage_present(&sh, s);
}

/*
 * Layer i of a loaded model as its steps are checked: positions on layer 0,
 * the final norm on the last, the loss, and the layer's mask as the engine
 * computes it (model_layer_config: a link's or a local layer's own, else the
 * model's shared one).
 */
void li_layer_config(const Model *m, int i, ModelConfig *c)
{
	if (m->nlayers == 0) {
		*c = m->cfg;
		return;
	}
	if (i >= 0 && i < m->nlayers)
		layer_settings(m, i, c);
	else
		*c = m->cfg;
	c->positional = i == 0 ? m->cfg.positional : POS_NONE;
	c->has_final_norm = i == m->nlayers - 1 && m->cfg.has_final_norm;
	c->backward = m->cfg.backward;
	c->vocab = i == m->nlayers - 1 ? m->cfg.vocab : 0; /* the head follows the last layer */
}

void lesson_layer_shape(const Model *l, int i, LessonShape *out)
{
	ModelConfig c;

	li_layer_config(l, i, &c);
	lesson_model_shape(&c, model_layer_params_const(l, i), out);
}

int lesson_cell_exists(const Model *l, int layer, const CellRef *ref)
{
	const int which = matrix_find(ref->matrix);
	const LayerParams *p = model_layer_params_const(l, layer);
	LessonShape sh;
	int rows, cols;

	if (which < 0)
		return 0;
	lesson_layer_shape(l, layer, &sh);
	if (!matrix_present(&sh, (AttnMatrix)which, NULL))
		return 0;
	matrix_shape(&sh, (AttnMatrix)which, &rows, &cols);
	if (matrix_per_head((AttnMatrix)which) && (ref->head < 0 || ref->head >= p->heads))
		return 0;
	return ref->row >= 0 && ref->row < rows && ref->col >= 0 && ref->col < cols;
}

static int mat_check_values(Ctx *c, const Mat *m, const char *key, int zero_one)
{
	size_t i, count = (size_t)m->rows * (size_t)m->cols, old;
	int r = 0;

	if (m->a == NULL) /* a real model's weight kept in its file (model.h): a number not finite shows in its outputs */
		return 0;
	for (i = 0; i < count && r == 0; i++) {
		double x = m->a[i];
		if (isfinite(x) && (!zero_one || x == 0.0 || x == 1.0))
			continue;
		old = path_key(c, key);
		if (m->rows > 1)
			path_append(c, "[%zu]", i / (size_t)m->cols);
		path_append(c, "[%zu]", i % (size_t)m->cols);
		if (!isfinite(x))
			r = fail(c, _("expected a finite number, got %g"), x);
		else
			r = fail(c, _("expected 0 or 1, got %g"), x);
		path_set(c, old);
	}
	return r;
}

/* MLA's weights (lesson_mla.c) have the shapes its settings and the layer's sizes give, and finite numbers. */
static int validate_mla(Ctx *c, const ModelConfig *cfg, const LayerParams *lp)
{
	const MlaParams *p = &lp->mla;
	const int D = cfg->input.cols, r = p->q_lora_rank, kc = p->kv_lora_rank;
	const int hq = lp->heads * (p->d_nope + p->d_rope), hkv = lp->heads * (p->d_nope + lp->d_v);
	const struct {
		const char *key;
		const Mat *m;
		int rows, cols;
	} w[] = { { "mla.W_qa", &p->W_qa, D, r }, { "mla.q_a_norm", &p->q_a_norm, 1, r }, { "mla.W_qb", &p->W_qb, r, hq },
		  { "mla.W_kva", &p->W_kva, D, kc + p->d_rope }, { "mla.kv_a_norm", &p->kv_a_norm, 1, kc },
		  { "mla.W_kvb", &p->W_kvb, kc, hkv } };

	for (size_t k = r > 0 ? 0 : 3; k < sizeof w / sizeof w[0]; k++) {
		if (w[k].m->rows != w[k].rows || w[k].m->cols != w[k].cols) {
			size_t old = path_key(c, w[k].key);
			fail(c, _("expected %d \u00d7 %d, got %d \u00d7 %d"), w[k].rows, w[k].cols, w[k].m->rows, w[k].m->cols);
			path_set(c, old);
			return -1;
		}
		if (mat_check_values(c, w[k].m, w[k].key, 0) != 0)
			return -1;
	}
	return 0;
}

/* One layer's model (its settings cfg and parameters lp) against the shape rules. */
static int validate_layer(Ctx *c, const ModelConfig *cfg, const LayerParams *lp)
{
	ModelConfig vc = *cfg; /* borrowed: what the matrices give is written into these, then compared */
	LayerParams vp = *lp;
	int n, m, d_model, d_src, d_k, d_v, d_out, r, wq_c, wv_c;
	size_t old;
	int i;

	if (lp->heads < 1) {
		old = path_key(c, "heads");
		fail(c, _("expected a whole number ≥ 1, got %d"), lp->heads);
		path_set(c, old);
		return -1;
	}
	/* multi-head latent attention has no W_k, W_v (nor W_q with q_lora_rank): its own are checked below */
	if (mat_empty(&cfg->input) || (mat_empty(&lp->W_q) && !(lp->mla.on && lp->mla.q_lora_rank > 0)) ||
	    (!lp->mla.on && (mat_empty(&lp->W_k) || mat_empty(&lp->W_v))) || (cfg->has_source && mat_empty(&cfg->source_input)))
		return fail(c, _("a matrix is empty (X, source.X, W_q, W_k and W_v need at least one number)"));
	if (lp->mla.on && validate_mla(c, cfg, lp) != 0)
		return -1;
	model_sizes(cfg, &n, &m, &d_model, &d_src);
	head_dims(cfg, lp, &d_k, &d_v, &d_out);
	weight_dims(cfg, lp, AM_W_Q, &r, &wq_c);
	weight_dims(cfg, lp, AM_W_V, &r, &wv_c);
	if (n > LESSON_MAX_TOKENS || m > LESSON_MAX_TOKENS || d_model > LESSON_MAX_DIM || d_src > LESSON_MAX_DIM ||
	    wq_c > LESSON_MAX_DIM || wv_c > LESSON_MAX_DIM || d_out > LESSON_MAX_DIM) {
		if (n > LESSON_MAX_TOKENS || m > LESSON_MAX_TOKENS)
			return li_check_shapes(c, &vc, &vp, NULL);
		return fail(c, _("a matrix is over the limit of %d columns (LESSON_MAX_DIM)"), LESSON_MAX_DIM);
	}
	if (li_check_shapes(c, &vc, &vp, NULL) != 0)
		return -1;
	/* The cached sizes must agree with the matrices (after an edit, update them first). */
	if (cfg->n != vc.n || cfg->m != vc.m || cfg->d_model != vc.d_model || cfg->d_src != vc.d_src || lp->d_k != vp.d_k ||
	    lp->d_v != vp.d_v || lp->d_out != vp.d_out)
		return fail(c, _("the sizes n, m, d_model, d_src, d_k, d_v, d_out (%d, %d, %d, %d, %d, %d, %d) do not "
		               "match the matrices (%d, %d, %d, %d, %d, %d, %d)"),
		            cfg->n, cfg->m, cfg->d_model, cfg->d_src, lp->d_k, lp->d_v, lp->d_out,
		            vc.n, vc.m, vc.d_model, vc.d_src, vp.d_k, vp.d_v, vp.d_out);
	if (cfg->tokens == NULL || (cfg->has_source && cfg->source_tokens == NULL))
		return fail(c, _("the token labels are missing"));
	if (mat_check_values(c, &cfg->input, "X", 0) != 0 ||
	    mat_check_values(c, &cfg->source_input, "source.X", 0) != 0 ||
	    mat_check_values(c, &lp->W_q, "W_q", 0) != 0 || mat_check_values(c, &lp->W_k, "W_k", 0) != 0 ||
	    mat_check_values(c, &lp->W_v, "W_v", 0) != 0 || mat_check_values(c, &lp->W_o, "W_o", 0) != 0 ||
	    mat_check_values(c, &lp->w_e, "w_e", 0) != 0 ||
	    mat_check_values(c, &cfg->mask_matrix, cfg->mask == MASK_PADDING ? "mask.padding" : "mask", 1) != 0)
		return -1;
	for (i = 0; i < cfg->nmasks; i++) {
		char key[32];
		snprintf(key, sizeof key, "mask[%d]%s", i, cfg->masks[i].kind == MASK_PADDING ? ".padding" : "");
		if (mat_check_values(c, &cfg->masks[i].matrix, key, 1) != 0)
			return -1;
	}
	if (cfg->alibi && !mat_empty(&lp->alibi_slopes) && lp->alibi_slopes.rows * lp->alibi_slopes.cols != lp->heads)
		return fail(c, _("alibi.slopes: expected %d numbers (one per head), got %d"), lp->heads,
		            lp->alibi_slopes.rows * lp->alibi_slopes.cols);
	if (lp->block.present && lp->d_out != cfg->d_model)
		return fail(c, _("the block needs the attention's output to have d_model = %d columns, not %d"), cfg->d_model,
		            lp->d_out);
	if (!mat_empty(&lp->W_gate) && (lp->W_gate.rows != cfg->d_model || lp->W_gate.cols != lp->heads * lp->d_v))
		return fail(c, _("W_gate: expected %d \u00d7 %d (d_model \u00d7 heads\u00b7d_v), got %d \u00d7 %d"), cfg->d_model,
		            lp->heads * lp->d_v, lp->W_gate.rows, lp->W_gate.cols);
	if (mat_check_values(c, &lp->W_gate, "W_gate", 0) != 0)
		return -1;
	if (!mat_empty(&lp->b_gate) && (lp->b_gate.rows * lp->b_gate.cols != lp->heads * lp->d_v || mat_empty(&lp->W_gate)))
		return fail(c, _("b_gate: expected %d numbers (heads\u00b7d_v, beside W_gate), got %d"), lp->heads * lp->d_v,
		            lp->b_gate.rows * lp->b_gate.cols);
	if (mat_check_values(c, &lp->b_gate, "b_gate", 0) != 0)
		return -1;
	return 0;
}

/* The settings every layer reads alike: the scale and the fill of masked cells. */
static int validate_settings(Ctx *c, const ModelConfig *cfg)
{
	if (cfg->scale == SCALE_VALUE && !isfinite(cfg->scale_value))
		return fail(c, _("scale: expected a finite number"));
	if (!cfg->mask_fill_inf && !isfinite(cfg->mask_fill))
		return fail(c, _("mask_fill: expected \"-inf\" or a finite number"));
	return 0;
}

static int validate_into(Ctx *c, const Lesson *l)
{
	size_t old;
	int i;

	if (validate_layer(c, &l->cfg, &l->lp) != 0)
		return -1;
	for (i = 0; i < l->nlayers; i++) {
		/* a decoder link is named where the file has it, as the loader's aliases do: layers[k].self or .cross */
		const LayerParams *li = model_layer_params_const(&l->model, i);
		ModelConfig lc;
		size_t old2 = li->part == PART_LAYER
		                  ? path_append(c, "%slayers[%d]", c->pathlen ? "." : "", i)
		                  : path_append(c, "%slayers[%d].%s", c->pathlen ? "." : "", li->dec_layer,
		                                li->part == PART_SELF ? "self" : "cross");
		layer_settings(&l->model, i, &lc);
		if (validate_layer(c, &lc, li) != 0 || validate_settings(c, &lc) != 0)
			return -1;
		path_set(c, old2);
	}
	if (validate_settings(c, &l->cfg) != 0)
		return -1;
	if (l->nsteps > LESSON_MAX_STEPS)
		return fail(c, _("steps: %d steps is over the limit of %d (LESSON_MAX_STEPS)"), l->nsteps, LESSON_MAX_STEPS);
	for (i = 0; i < l->nsteps; i++) {
		const Step *st = &l->steps[i];
		ModelConfig sc = l->cfg; /* the step's layer: its own matrices (a decoder's cross-attention has a source) */
		const LayerParams *sp = &l->lp;
		LessonShape ss;
		int r = 0;
		if (st->encoder && l->encoder != NULL) {
			const int k = st->layer < model_layers(l->encoder) ? st->layer : 0;
			li_layer_config(l->encoder, k, &sc);
			sc.backward = l->cfg.backward; /* the decoder's loss reaches the encoder too */
			sp = model_layer_params_const(l->encoder, k);
		}
		else if (st->layer > 0 && st->layer < l->nlayers) {
			layer_settings(&l->model, st->layer, &sc);
			sc.positional = POS_NONE;
			sc.has_final_norm = l->cfg.has_final_norm && st->layer == l->nlayers - 1;
			sc.backward = l->cfg.backward;
			sp = model_layer_params_const(&l->model, st->layer);
		} else if (l->nlayers > 1)
			sc.has_final_norm = 0;
		lesson_model_shape(&sc, sp, &ss);
		old = path_append(c, "%ssteps[%d]", c->pathlen ? "." : "", i);
		if ((unsigned)st->stage >= STAGE_COUNT) {
			path_key(c, "stage");
			r = fail(c, _("unknown stage %d"), (int)st->stage);
		} else {
			r = li_check_step_stage(c, &ss, st);
		}
		if (r == 0 && st->has_focus) {
			size_t o2 = path_key(c, "focus");
			r = li_check_cellref(c, &ss, &st->focus);
			path_set(c, o2);
		}
		if (r == 0 && st->has_quiz) {
			size_t o2 = path_key(c, "quiz");
			if (st->quiz.nchoices > 0) {
				if (st->quiz.nchoices < 2 || st->quiz.answer_choice < 0 ||
				    st->quiz.answer_choice >= st->quiz.nchoices) {
					path_key(c, "answer");
					r = fail(c, _("%d is outside the %d choices (0 to %d: the file counts from 0, the screen numbers "
					         "them 1 to %d)"),
					         st->quiz.answer_choice, st->quiz.nchoices, st->quiz.nchoices - 1, st->quiz.nchoices);
				}
			} else {
				path_key(c, "answer");
				r = li_check_cellref(c, &ss, &st->quiz.answer_cell);
			}
			path_set(c, o2);
		}
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	if (l->compare != NULL) {
		old = path_key(c, "compare");
		li_stack(c)->numbers_before = lesson_model_count_numbers(&l->cfg, &l->lp); /* the variant counts with this lesson */
		i = validate_into(c, l->compare);
		li_stack(c)->numbers_before = 0;
		path_set(c, old);
		if (i != 0)
			return -1;
	}
	return 0;
}

int lesson_validate(const Lesson *l, char **err)
{
	Stack st = { 0 };
	Ctx c;

	ctx_init(&c, l != NULL && l->path != NULL ? l->path : "(lesson)", NULL);
	c.reader = &st;
	if (l == NULL)
		fail(&c, _("no lesson"));
	else
		validate_into(&c, l);
	if (err != NULL)
		*err = c.err;
	else
		free(c.err);
	return c.err != NULL ? -1 : 0;
}
