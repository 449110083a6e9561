/*
 * lesson_shapes.c: the shape rules of lessons/FORMAT.md, one set for loading
 * and for lesson_validate (after an edit): every matrix against every
 * other and the limits, a step's cells against the catalogue; the numbers a
 * lesson and its computation hold; a lesson's LessonShape for the
 * catalogue's presence rules.
 */
#include "lesson/lesson_internal.h"
#include "model/ropefreq.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Shapes, checked against each other and the limits                   */
/* ------------------------------------------------------------------ */

/* The lesson's masks as parts (one part for a single mask, none without). */
static void shapes_masks(Shapes *s, const ModelConfig *c)
{
	s->mask = c->mask;
	s->fill_inf = c->mask_fill_inf;
	s->nparts = 0;
	if (c->mask == MASK_LIST) {
		for (int i = 0; i < c->nmasks && i < LESSON_MAX_MASKS; i++) {
			s->part[i].kind = c->masks[i].kind;
			s->part[i].window = c->masks[i].window;
			s->part[i].r = c->masks[i].matrix.rows;
			s->part[i].c = c->masks[i].matrix.cols;
			s->nparts++;
		}
	} else if (c->mask != MASK_NONE) {
		s->part[0].kind = c->mask;
		s->part[0].window = c->window;
		s->part[0].r = c->mask_matrix.rows;
		s->part[0].c = c->mask_matrix.cols;
		s->nparts = 1;
	}
}

/* Key/value heads, RoPE, ALiBi, decoding and the tiles, for the shape and presence rules. */
static void shapes_modern(Shapes *s, const ModelConfig *c, const LayerParams *p)
{
	s->kv_heads = p->kv_heads > 0 ? p->kv_heads : p->heads;
	s->rope = c->rope;
	s->rope_table = rope_has_table(c);
	s->rope_partial = c->rope_partial;
	s->rope_dynamic = c->rope_scaling.type == ROPE_SCALE_DYNAMIC;
	s->alibi = c->alibi;
	s->decode = c->decode;
	s->flash_bq = c->flash_bq;
	s->flash_bk = c->flash_bk;
	s->qk_norm = c->qk_norm != QK_NORM_NONE;
	s->vocab = c->vocab;
	s->softcap = c->attn_softcap > 0.0;
	s->final_cap = c->final_softcap > 0.0 && c->vocab > 0;
	s->sinks = !mat_empty(&p->sinks);
	s->linear = c->linear;
	s->linear_causal = c->linear_causal;
	s->deltanet = !mat_empty(&p->gdn_A_log);
	s->mla = p->mla.on;
	s->q_lora_rank = p->mla.q_lora_rank;
	s->kv_lora_rank = p->mla.kv_lora_rank;
	s->d_nope = p->mla.d_nope;
	s->d_rope = p->mla.d_rope;
}

/* The block's settings, for the presence rules. */
void li_shapes_block(Shapes *s, const LayerParams *p)
{
	s->block = p->block.present;
	s->norm = p->block.norm;
	s->norm_kind = p->block.norm_kind;
	s->has_ffn = p->block.has_ffn;
	s->swiglu = p->block.activation == ACT_SWIGLU;
	s->d_ff = p->block.d_ff;
	s->experts = p->block.has_ffn ? p->block.moe.experts : 0;
	s->shared_ff = s->experts > 0 ? p->block.moe.shared_ff : 0;
}

/* What a lesson of these shapes holds with its computation (lesson_count_numbers); needs d_k, d_v, d_out. */
double li_shapes_count(const Shapes *s)
{
	const double N = s->n, M = s->m, h = s->heads, D = s->d_model, Ds = s->d_src, dk = s->d_k, dv = s->d_v;
	const double g = s->kv_heads > 0 ? s->kv_heads : s->heads;
	double mask = 0, own, computed;

	for (int i = 0; i < s->nparts; i++)
		mask += s->part[i].kind == MASK_MATRIX ? N * M : s->part[i].kind == MASK_PADDING ? M : 0;
	/* the lesson: X, source.X, W_q, W_k, W_v, W_o, w_e, the mask */
	own = N * D + (s->has_source ? M * Ds : 0) + D * h * dk + Ds * g * (dk + dv) +
	      (s->has_wo ? h * dv * s->d_out : 0) + (s->score == SCORE_ADDITIVE ? h * dk : 0) + mask;
	/*
	 * the computation: PE and X, PE_src and S, Q, K, V, per head scores, weights (n × m) and weighted, concat,
	 * output, visibility, and the few n × m matrices of the derived stages (scaled, masked, ALiBi's bias and
	 * biased) made when a view asks for them
	 */
	computed = (s->positional != POS_NONE ? 2 : 1) * N * D +
	           (s->has_source ? (s->positional != POS_NONE ? 2 : 1) * M * Ds : 0) + N * h * dk + M * g * (dk + dv) +
	           h * (2 * N * M + N * dv) + N * h * dv + (s->has_wo ? N * s->d_out : 0) + N * M +
	           LESSON_DERIVED_MATRICES * N * M;
	/* RoPE's Q_rot and K_rot; ALiBi's slopes; the tiles' m, l, O and output; the decode rows */
	if (s->rope)
		computed += N * h * dk + M * g * dk;
	if (s->alibi)
		computed += h;
	if (s->flash_bq > 0 && s->flash_bk > 0) {
		const double nkb = ceil(M / s->flash_bk);
		computed += h * (N * nkb * (2 + dv) + N * dv);
	}
	/* linear attention: phi_q, phi_k, lin_scores, lin_z, lin_out, lin_state, lin_ksum, lin_out_state per head */
	if (s->linear)
		computed += h * (N * dk + M * dk + N * M + N + 2 * N * dv + dk * dv + dk);
	/* Gated DeltaNet: W_a, W_b, A_log, dt_bias; per head gdn_q, gdn_k, β, g, recall, delta, both outputs, the state */
	if (s->deltanet)
		computed += 2 * D * h + 2 * h + h * (2 * N * dk + 2 * N + 4 * N * dv + dk * dv);
	if (s->decode)
		computed += N * h * dk + N * g * (dk + dv) + h * (2 * N * M + N * dv) + N * s->d_out + (s->block ? N * D : 0);
	if (s->block) {
		const double F = s->d_ff;
		/* its parameters: four norm vectors, W_1, W_3, W_2 and their biases; its results: two residuals,
		 * two norms and their statistics, the FFN's three d_ff-wide matrices, its output, the final norm */
		own += 4 * D + 3 * D * F + 2 * F + D;
		computed += N * (6 * D + 4 + 3 * F);
	}
	/* a mixture of experts: the router and every expert; logits, probs, weights, act, out */
	if (s->block && s->experts > 0) {
		const double E = s->experts, F = s->d_ff;
		own += D * E + 3 * D * F * E + 3 * D * s->shared_ff + D;
		computed += N * (3 * E + E * F + E * D + 1 + D);
	}
	/* QK-norm's weights and Q_norm, K_norm; the LM head's unembedding, logits and next */
	if (s->qk_norm)
		own += 2 * dk, computed += N * h * dk + M * g * dk;
	if (s->vocab > 0)
		own += s->vocab * D, computed += (N + 1) * s->vocab;
	if (s->vocab > 0 && s->final_cap) /* the logits before their cap */
		computed += N * s->vocab;
	if (s->sinks) /* the sinks' logits and each row's share */
		own += h, computed += h * N;
	if (s->mla) { /* MLA: its weights beside W_q, W_k, W_v's count above; its latents, heads, absorbed form and cache */
		const double r = s->q_lora_rank, c = s->kv_lora_rank, dn = s->d_nope, dr = s->d_rope;
		own += D * r + r + r * h * dk + D * (c + dr) + c + c * h * (dn + dv);
		computed += N * (r + c + 2 * dr + h * (dn + dr + c + dv)) + h * N * M + 2 + 16;
	}
	return own + computed;
}

/* The shape rules of lessons/FORMAT.md. Fills s->d_k, d_v, d_out. Paths are top-level keys. */
int li_check_shapes(Ctx *c, Shapes *s)
{
	const size_t base = c->pathlen;
	const char *src_x = li_stack(c)->part == PART_CROSS ? _("the encoder's d_model")
	                    : s->has_source         ? "source.X"
	                                            : "X";
	double total;
	int r = -1;

#define AT(key) path_key(c, key)
	if (s->n > LESSON_MAX_TOKENS || s->m > LESSON_MAX_TOKENS) {
		AT(s->n > LESSON_MAX_TOKENS ? "X" : "source.X");
		fail(c, _("%d rows is over the limit of %d tokens (LESSON_MAX_TOKENS)"),
		     s->n > LESSON_MAX_TOKENS ? s->n : s->m, LESSON_MAX_TOKENS);
		goto out;
	}
	if (s->ntokens >= 0 && s->ntokens != s->n) {
		AT("tokens");
		fail(c, _("%d labels, but X has %d rows (one label per row)"), s->ntokens, s->n);
		goto out;
	}
	if (s->has_source && s->nsource_tokens >= 0 && s->nsource_tokens != s->m) {
		AT("source.tokens");
		fail(c, _("%d labels, but source.X has %d rows (one label per row)"), s->nsource_tokens, s->m);
		goto out;
	}
	if (s->heads > LESSON_MAX_HEADS) {
		AT("heads");
		fail(c, _("%d is over the limit of %d heads (LESSON_MAX_HEADS)"), s->heads, LESSON_MAX_HEADS);
		goto out;
	}
	if (s->wq_r != s->d_model) {
		AT("W_q");
		fail(c, _("expected %d rows (d_model, the columns of X), got %d"), s->d_model, s->wq_r);
		goto out;
	}
	if (s->wk_r != s->d_src) {
		AT("W_k");
		fail(c, li_stack(c)->part == PART_CROSS ? _("expected %d rows (%s), got %d") : _("expected %d rows (the columns of %s), got %d"),
		     s->d_src, src_x, s->wk_r);
		goto out;
	}
	if (s->wv_r != s->d_src) {
		AT("W_v");
		fail(c, li_stack(c)->part == PART_CROSS ? _("expected %d rows (%s), got %d") : _("expected %d rows (the columns of %s), got %d"),
		     s->d_src, src_x, s->wv_r);
		goto out;
	}
	if (s->kv_heads <= 0)
		s->kv_heads = s->heads;
	if (s->kv_heads == s->heads && s->wk_c != s->wq_c) {
		AT("W_k");
		fail(c, _("expected %d columns (as many as W_q: heads × d_k), got %d"), s->wq_c, s->wk_c);
		goto out;
	}
	if (s->wq_c % s->heads != 0) {
		AT("heads");
		fail(c, _("%d does not divide the %d columns of W_q"), s->heads, s->wq_c);
		goto out;
	}
	if (s->kv_heads != s->heads && s->wk_c != s->kv_heads * (s->wq_c / s->heads)) {
		AT("W_k");
		fail(c, _("expected %d columns (kv_heads %d × d_k %d), got %d"), s->kv_heads * (s->wq_c / s->heads),
		     s->kv_heads, s->wq_c / s->heads, s->wk_c);
		goto out;
	}
	if (s->wv_c % s->kv_heads != 0) {
		AT(s->kv_heads == s->heads ? "heads" : "kv_heads");
		fail(c, _("%d does not divide the %d columns of W_v"), s->kv_heads, s->wv_c);
		goto out;
	}
	s->d_k = s->wq_c / s->heads;
	s->d_v = s->wv_c / s->kv_heads;
	if (s->has_wo && s->wo_r != s->heads * s->d_v) {
		AT("W_o");
		if (s->kv_heads == s->heads)
			fail(c, _("expected %d rows (heads × d_v, the columns of W_v), got %d"), s->wv_c, s->wo_r);
		else
			fail(c, _("expected %d rows (heads %d × d_v %d, the columns of concat), got %d"), s->heads * s->d_v,
			     s->heads, s->d_v, s->wo_r);
		goto out;
	}
	s->d_out = s->has_wo ? s->wo_c : s->heads * s->d_v;
	if (s->rope && s->d_k % 2 != 0) {
		AT("rope");
		fail(c, _("needs an even d_k (q and k are rotated in pairs of columns), but d_k = %d"), s->d_k);
		goto out;
	}
	if (s->rope && s->rope_partial > 0 && s->rope_partial < 1) { /* partial RoPE (issue 23 §2) */
		const int rd = (int)((double)s->d_k * s->rope_partial);
		if (rd % 2 != 0 || rd < 2 || (s->rope_dynamic && rd == 2)) {
			AT("rope.partial_rotary_factor");
			fail(c, _("int(d_k %d \u00d7 %g) = %d columns would turn: it must be even and at least 2 (4 with dynamic NTK)"),
			     s->d_k, s->rope_partial, rd);
			goto out;
		}
	}
	if (s->score == SCORE_ADDITIVE) {
		if (!s->has_we) {
			AT("w_e");
			fail(c, _("missing: \"score\": \"additive\" needs w_e, %d numbers (the columns of W_q)"), s->wq_c);
			goto out;
		}
		if (s->we_r != 1 || s->we_c != s->wq_c) {
			AT("w_e");
			fail(c, _("expected %d numbers (heads × d_k, the columns of W_q), got %d"),
			     s->wq_c, s->we_r * s->we_c);
			goto out;
		}
	}
	for (int i = 0; i < s->nparts; i++) {
		char where[40];
		const int list = s->mask == MASK_LIST;
		snprintf(where, sizeof where, list ? "mask[%d]" : "mask", i);
		switch (s->part[i].kind) {
		case MASK_CAUSAL:
		case MASK_WINDOW:
			if (s->n != s->m) {
				AT("mask");
				fail(c, _("%s needs a square score matrix, but n = %d and m = %d"),
				     s->part[i].kind == MASK_CAUSAL ? "\"causal\"" : "a window", s->n, s->m);
				goto out;
			}
			break;
		case MASK_PADDING:
			if (s->part[i].c != s->m) {
				AT(where);
				path_key(c, "padding");
				fail(c, _("expected %d numbers (one per key, m = %d), got %d"), s->m, s->m, s->part[i].c);
				goto out;
			}
			break;
		case MASK_MATRIX:
			if (s->part[i].r != s->n) {
				AT(where);
				fail(c, _("expected %d rows (n, one per query), got %d"), s->n, s->part[i].r);
				goto out;
			}
			if (s->part[i].c != s->m) {
				AT(where);
				fail(c, _("expected %d columns (m, one per key), got %d"), s->m, s->part[i].c);
				goto out;
			}
			break;
		default:
			break;
		}
	}
	if (s->decode) {
		int causal = 0;
		for (int i = 0; i < s->nparts; i++)
			causal |= s->part[i].kind == MASK_CAUSAL || s->part[i].kind == MASK_WINDOW;
		AT("decode");
		if (s->has_source) {
			fail(c, _("needs self-attention (a lesson with a source is not generated token by token)"));
			goto out;
		}
		if (!causal) {
			fail(c, _("needs a causal or window mask (a generated token sees only the tokens before it)"));
			goto out;
		}
		if (!s->fill_inf) {
			fail(c, _("needs \"mask_fill\": \"-inf\" (with a finite fill the full computation also weighs the future "
			        "tokens a cache does not hold)"));
			goto out;
		}
		path_set(c, base);
		if (s->rope && s->rope_dynamic) {
			AT("rope");
			path_key(c, "scaling");
			path_key(c, "type");
			fail(c, _("dynamic NTK changes the base as the sequence grows, so a cached key was turned with another one: "
			          "leave out \"decode\", or use another scaling"));
			goto out;
		}
	}
	if ((s->linear || s->deltanet) && s->backward) {
		AT(s->linear ? "linear_attention" : "gated_deltanet");
		fail(c, _("is computed forward only: its gradients are not (leave out \"backward\", or \"%s\")"),
		     s->linear ? "linear_attention" : "gated_deltanet");
		goto out;
	}
	if (s->experts > 0 && (s->backward || s->decode)) { /* a mixture of experts is computed forward, all rows at once */
		AT(s->backward ? "backward" : "decode");
		fail(c, "%s",
		     s->backward ? _("a mixture-of-experts FFN is computed forward only: its gradients (through the router's "
		                     "top-k) are not; leave out \"backward\"")
		                 : _("a mixture-of-experts FFN is not decoded token by token yet: leave out \"decode\""));
		goto out;
	}
	if (s->linear && s->linear_causal && (s->has_source || s->n != s->m)) {
		AT("linear_attention");
		path_key(c, "causal");
		fail(c, _("needs self-attention (causal: query i reads the keys j \u2264 i of the same tokens), but this lesson has "
		        "a source"));
		goto out;
	}
	if (s->flash_bq != 0 || s->flash_bk != 0) {
		if (s->flash_bq < 1 || s->flash_bq > s->n) {
			AT("flash");
			path_key(c, "block_q");
			fail(c, _("expected a whole number from 1 to %d (n, the query rows), got %d"), s->n, s->flash_bq);
			goto out;
		}
		if (s->flash_bk < 1 || s->flash_bk > s->m) {
			AT("flash");
			path_key(c, "block_k");
			fail(c, _("expected a whole number from 1 to %d (m, the key rows), got %d"), s->m, s->flash_bk);
			goto out;
		}
	}
	/* Counted from the shapes, before a single number is allocated; a compare variant counts with its lesson. */
	total = li_stack(c)->numbers_before + li_shapes_count(s);
	if (total > (double)LESSON_MAX_NUMBERS) {
		fail(c, _("too large: its matrices and stages%s would hold %.0f numbers, over the limit of %ld "
		        "(LESSON_MAX_NUMBERS); make n, d_model or heads smaller"),
		     li_stack(c)->numbers_before > 0 ? _(", with the lesson's own,") : "", total, (long)LESSON_MAX_NUMBERS);
		goto out;
	}
	/* Each additive score is d_k tanh terms, far slower than the dot product's multiply-adds. */
	if (s->score == SCORE_ADDITIVE &&
	    (double)s->n * s->m * s->heads * s->d_k > (double)LESSON_MAX_ADDITIVE_TERMS) {
		AT("score");
		fail(c, _("additive scores of n = %d queries, m = %d keys and h·d_k = %d would take %.0f tanh terms, over "
		        "the limit of %ld (LESSON_MAX_ADDITIVE_TERMS); make n, m or d_k smaller"), s->n, s->m,
		     s->heads * s->d_k, (double)s->n * s->m * s->heads * s->d_k, (long)LESSON_MAX_ADDITIVE_TERMS);
		goto out;
	}
	r = 0;
out:
#undef AT
	path_set(c, base);
	return r;
}

/* The sizes and features the catalogue's shape and presence rules read. */
void li_shapes_shape(const Shapes *s, LessonShape *out)
{
	memset(out, 0, sizeof *out);
	out->dim[DIM_ONE] = 1;
	out->dim[DIM_N] = s->n;
	out->dim[DIM_M] = s->m;
	out->dim[DIM_D_MODEL] = s->d_model;
	out->dim[DIM_D_SRC] = s->d_src;
	out->dim[DIM_HDK] = s->heads * s->d_k;
	out->dim[DIM_HDV] = s->heads * s->d_v;
	out->dim[DIM_GDK] = (s->kv_heads > 0 ? s->kv_heads : s->heads) * s->d_k;
	out->dim[DIM_GDV] = (s->kv_heads > 0 ? s->kv_heads : s->heads) * s->d_v;
	out->dim[DIM_NKB] = s->flash_bk > 0 ? (s->m + s->flash_bk - 1) / s->flash_bk : 0;
	out->dim[DIM_NKB_DV] = out->dim[DIM_NKB] * s->d_v;
	out->kv_heads = s->kv_heads > 0 ? s->kv_heads : s->heads;
	out->block_q = s->flash_bq;
	out->block_k = s->flash_bk;
	out->dim[DIM_DK] = s->d_k;
	out->dim[DIM_DV] = s->d_v;
	out->dim[DIM_D_OUT] = s->d_out;
	out->dim[DIM_D_FF] = s->d_ff;
	out->dim[DIM_TWO] = 2;
	out->dim[DIM_VOCAB] = s->vocab;
	out->dim[DIM_HEADS] = s->heads;
	out->dim[DIM_QLORA] = s->q_lora_rank;
	out->dim[DIM_KVLORA] = s->kv_lora_rank;
	out->dim[DIM_ROPE] = s->d_rope;
	out->dim[DIM_NOPE] = s->d_nope;
	out->dim[DIM_H_NOPE] = s->heads * s->d_nope;
	out->dim[DIM_H_ROPE] = s->heads * s->d_rope;
	out->dim[DIM_H_KVLORA] = s->heads * s->kv_lora_rank;
	out->dim[DIM_KVA] = s->kv_lora_rank + s->d_rope;
	out->dim[DIM_KVB] = s->heads * (s->d_nope + s->d_v);
	out->dim[DIM_FOUR] = 4;
	out->dim[DIM_EXPERTS] = s->experts;
	out->dim[DIM_E_DFF] = s->experts * s->d_ff;
	out->dim[DIM_E_DMODEL] = s->experts * s->d_model;
	out->dim[DIM_SHARED_FF] = s->shared_ff;
	out->heads = s->heads;
	out->features = (s->positional != POS_NONE ? FEAT_POSITIONAL : 0u) | (s->heads > 1 ? FEAT_MULTIHEAD : 0u) |
	                (s->mask != MASK_NONE ? FEAT_MASK : 0u) | (s->has_wo ? FEAT_WO : 0u) |
	                (s->has_source ? FEAT_SOURCE : 0u) | (s->score == SCORE_ADDITIVE ? FEAT_ADDITIVE : 0u);
	if (s->block) {
		out->features |= FEAT_BLOCK;
		if (s->norm != NORM_NONE)
			out->features |= FEAT_NORM | (s->norm == NORM_PRE ? FEAT_PRENORM : FEAT_POSTNORM);
		if (s->norm_kind == NORM_LAYERNORM)
			out->features |= FEAT_LAYERNORM;
		if (s->has_ffn)
			out->features |= FEAT_FFN | (s->swiglu ? FEAT_SWIGLU : 0u);
		if (s->has_ffn && s->experts > 0)
			out->features |= FEAT_MOE | (s->shared_ff > 0 ? FEAT_MOE_SHARED : 0u);
	}
	if (s->has_final)
		out->features |= FEAT_FINAL | (s->norm_kind == NORM_LAYERNORM ? FEAT_LAYERNORM : 0u);
	if (s->backward)
		out->features |= FEAT_BACKWARD;
	if (s->scale == SCALE_NONE)
		out->features |= FEAT_UNSCALED;
	else if (s->scale == SCALE_VALUE)
		out->features |= FEAT_SCALE_VALUE;
	if (s->rope)
		out->features |= FEAT_ROPE;
	if (s->rope_table)
		out->features |= FEAT_ROPE_TABLE;
	if (s->alibi)
		out->features |= FEAT_ALIBI;
	if (out->kv_heads < s->heads)
		out->features |= FEAT_GQA;
	for (int i = 0; i < s->nparts; i++)
		if (s->part[i].kind == MASK_WINDOW)
			out->features |= FEAT_WINDOW;
	if (s->decode)
		out->features |= FEAT_DECODE;
	if (s->flash_bq > 0 && s->flash_bk > 0)
		out->features |= FEAT_FLASH;
	if (s->qk_norm)
		out->features |= FEAT_QK_NORM;
	if (s->vocab > 0)
		out->features |= FEAT_LM_HEAD;
	if (s->softcap)
		out->features |= FEAT_SOFTCAP;
	if (s->vocab > 0 && s->final_cap)
		out->features |= FEAT_FINAL_CAP;
	if (s->linear)
		out->features |= FEAT_LINEAR;
	if (s->deltanet)
		out->features |= FEAT_DELTANET;
	if (s->sinks)
		out->features |= FEAT_SINKS;
	if (s->mla)
		out->features |= FEAT_MLA | (s->q_lora_rank > 0 ? FEAT_MLA_QLORA : 0u);
}

/* Check a cell reference (focus, quiz answer) at the current path. */
int li_check_cellref(Ctx *c, const Shapes *s, const CellRef *ref)
{
	const char *names[AM_COUNT], *why;
	int which = matrix_find(ref->matrix), rows, cols, i, r = -1;
	size_t old = c->pathlen;
	LessonShape sh;

	if (which < 0) {
		for (i = 0; i < AM_COUNT; i++)
			names[i] = matrix_name((AttnMatrix)i);
		path_key(c, "matrix");
		fail(c, _("unknown matrix %s%s"), quoted(ref->matrix).s, did_you_mean(ref->matrix, names, AM_COUNT).s);
		goto out;
	}
	li_shapes_shape(s, &sh);
	matrix_shape(&sh, (AttnMatrix)which, &rows, &cols);
	if (!matrix_present(&sh, (AttnMatrix)which, &why)) {
		path_key(c, "matrix");
		fail(c, _("this lesson has no %s (%s)"), matrix_name((AttnMatrix)which), why);
		goto out;
	}
	if ((matrix_kind((AttnMatrix)which)->flags & MF_PER_HEAD) && (ref->head < 0 || ref->head >= s->heads)) {
		path_key(c, "head");
		fail(c, ngettext("%d is outside the %d head of this lesson", "%d is outside the %d heads of this lesson", (unsigned long)s->heads),
		     ref->head, s->heads);
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
int li_check_step_stage(Ctx *c, const Shapes *s, const Step *st)
{
	size_t old = c->pathlen;
	int r = 0;

	LessonShape sh;

	li_shapes_shape(s, &sh);
	if (!stage_present(&sh, st->stage)) {
		path_key(c, "stage");
		r = fail(c, _("the stage \"%s\" is not in this lesson (%s)"), stage_name(st->stage),
		         stage_absent(&sh, st->stage));
	} else if (st->head < 0 || st->head >= s->heads) {
		path_key(c, "head");
		r = fail(c, ngettext("%d is outside the %d head of this lesson", "%d is outside the %d heads of this lesson", (unsigned long)s->heads),
		         st->head, s->heads);
	}
	path_set(c, old);
	return r;
}

/* ------------------------------------------------------------------ */
/* A loaded lesson: its numbers, its shape, its validation            */
/* ------------------------------------------------------------------ */

void li_shapes_from_model(const ModelConfig *c, const LayerParams *p, Shapes *s)
{
	memset(s, 0, sizeof *s);
	s->n = c->input.rows;
	s->d_model = c->input.cols;
	s->has_source = c->has_source;
	s->m = c->has_source ? c->source_input.rows : s->n;
	s->d_src = c->has_source ? c->source_input.cols : s->d_model;
	s->heads = p->heads;
	s->ntokens = -1;
	s->nsource_tokens = -1;
	s->wq_r = p->W_q.rows; s->wq_c = p->W_q.cols;
	s->wk_r = p->W_k.rows; s->wk_c = p->W_k.cols;
	s->wv_r = p->W_v.rows; s->wv_c = p->W_v.cols;
	s->has_wo = !mat_empty(&p->W_o);
	s->wo_r = p->W_o.rows; s->wo_c = p->W_o.cols;
	s->has_we = !mat_empty(&p->w_e);
	s->we_r = p->w_e.rows; s->we_c = p->w_e.cols;
	s->positional = c->positional;
	s->score = c->score;
	s->scale = c->scale;
	shapes_masks(s, c);
	shapes_modern(s, c, p);
	s->d_k = p->heads > 0 ? p->W_q.cols / p->heads : 0;
	s->d_v = s->kv_heads > 0 ? p->W_v.cols / s->kv_heads : 0;
	if (p->mla.on) { /* MLA: no W_k, W_v (nor W_q with q_lora_rank); the shapes they would have */
		s->d_k = p->d_k;
		s->d_v = p->d_v;
		s->wq_r = s->wk_r = s->wv_r = s->d_model;
		s->wq_c = s->wk_c = p->heads * p->d_k;
		s->wv_c = p->heads * p->d_v;
	}
	s->d_out = s->has_wo ? p->W_o.cols : p->heads * s->d_v;
	li_shapes_block(s, p);
	s->has_final = c->has_final_norm;
	s->backward = c->backward != BACKWARD_NONE;
}

void li_shapes_from_lesson(const Lesson *l, Shapes *s)
{
	li_shapes_from_model(&l->cfg, &l->lp, s);
}

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
	Shapes s;
	double total = 0;

	/* a stack holds every layer's matrices at once (its top level is a copy of layer 0's keys) */
	for (int i = 0; i < m->nlayers; i++) {
		ModelConfig c;
		layer_settings(m, i, &c);
		total += lesson_model_count_numbers(&c, &m->layer[i].lp);
	}
	if (m->encoder != NULL)
		total += model_count_numbers(m->encoder);
	if (m->nlayers > 0)
		return total;
	li_shapes_from_model(&m->cfg, &m->lp, &s);
	return li_shapes_count(&s);
}

double lesson_count_numbers(const Lesson *l)
{
	return model_count_numbers(&l->model);
}

double lesson_model_count_numbers(const ModelConfig *c, const LayerParams *p)
{
	Shapes s;

	li_shapes_from_model(c, p, &s);
	return li_shapes_count(&s);
}

void lesson_model_shape(const ModelConfig *c, const LayerParams *p, LessonShape *out)
{
	Shapes sh;

	li_shapes_from_model(c, p, &sh);
	li_shapes_shape(&sh, out);
}

double lesson_budget_numbers(const Lesson *l)
{
	return lesson_count_numbers(l) + (l->compare != NULL ? lesson_count_numbers(l->compare) : 0);
}

void lesson_shape(const Lesson *l, LessonShape *out)
{
	Shapes sh;

	li_shapes_from_lesson(l, &sh);
	li_shapes_shape(&sh, out);
}

int lesson_stage_present(const Lesson *l, Stage s)
{
	LessonShape sh;

	if (l == NULL || (unsigned)s >= STAGE_COUNT)
		return 0;
	lesson_shape(l, &sh);
	return stage_present(&sh, s);
}

/* Layer i of a loaded lesson as the engine computes it (positions on layer 0, the final norm on the last). */
void li_layer_shapes(const Model *l, int i, Shapes *sh)
{
	if (l->nlayers > 0 && i >= 0 && i < l->nlayers) {
		ModelConfig c;
		layer_settings(l, i, &c);
		li_shapes_from_model(&c, &l->layer[i].lp, sh);
	} else
		li_shapes_from_model(&l->cfg, model_layer_params_const(l, i), sh);
	if (l->nlayers > 0) {
		/* positions are added once, before layer 0; the stack's final norm follows its last layer */
		sh->positional = i == 0 ? l->cfg.positional : POS_NONE;
		sh->has_final = i == l->nlayers - 1 && l->cfg.has_final_norm;
		sh->backward = l->cfg.backward != BACKWARD_NONE;
		sh->score = l->cfg.score;
		sh->scale = l->cfg.scale;
		shapes_masks(sh, &l->cfg);
		sh->rope = l->cfg.rope;
		sh->rope_table = rope_has_table(&l->cfg);
		sh->rope_partial = l->cfg.rope_partial;
		sh->rope_dynamic = l->cfg.rope_scaling.type == ROPE_SCALE_DYNAMIC;
		sh->alibi = l->cfg.alibi;
		sh->decode = l->cfg.decode;
		sh->flash_bq = l->cfg.flash_bq;
		sh->flash_bk = l->cfg.flash_bk;
		sh->qk_norm = l->cfg.qk_norm != QK_NORM_NONE;
		sh->vocab = i == l->nlayers - 1 ? l->cfg.vocab : 0; /* the head follows the last layer */
		sh->softcap = l->cfg.attn_softcap > 0.0;
		sh->final_cap = l->cfg.final_softcap > 0.0 && l->cfg.vocab > 0;
		sh->linear = l->cfg.linear;
		sh->linear_causal = l->cfg.linear_causal;
	}
}

void lesson_layer_shape(const Model *l, int i, LessonShape *out)
{
	Shapes sh;

	li_layer_shapes(l, i, &sh);
	li_shapes_shape(&sh, out);
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

/* One layer's model (its settings cfg and parameters lp) against the shape rules; its shapes into *s. */
static int validate_layer(Ctx *c, const ModelConfig *cfg, const LayerParams *lp, Shapes *s)
{
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
	li_shapes_from_model(cfg, lp, s);
	if (s->n > LESSON_MAX_TOKENS || s->m > LESSON_MAX_TOKENS || s->d_model > LESSON_MAX_DIM ||
	    s->d_src > LESSON_MAX_DIM || s->wq_c > LESSON_MAX_DIM || s->wv_c > LESSON_MAX_DIM ||
	    s->d_out > LESSON_MAX_DIM) {
		if (s->n > LESSON_MAX_TOKENS || s->m > LESSON_MAX_TOKENS)
			return li_check_shapes(c, s);
		return fail(c, _("a matrix is over the limit of %d columns (LESSON_MAX_DIM)"), LESSON_MAX_DIM);
	}
	if (li_check_shapes(c, s) != 0)
		return -1;
	/* The cached sizes must agree with the matrices (after an edit, update them first). */
	if (cfg->n != s->n || cfg->m != s->m || cfg->d_model != s->d_model || cfg->d_src != s->d_src || lp->d_k != s->d_k ||
	    lp->d_v != s->d_v || lp->d_out != s->d_out)
		return fail(c, _("the sizes n, m, d_model, d_src, d_k, d_v, d_out (%d, %d, %d, %d, %d, %d, %d) do not "
		               "match the matrices (%d, %d, %d, %d, %d, %d, %d)"),
		            cfg->n, cfg->m, cfg->d_model, cfg->d_src, lp->d_k, lp->d_v, lp->d_out,
		            s->n, s->m, s->d_model, s->d_src, s->d_k, s->d_v, s->d_out);
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
	Shapes s;
	size_t old;
	int i;

	if (validate_layer(c, &l->cfg, &l->lp, &s) != 0)
		return -1;
	for (i = 0; i < l->nlayers; i++) {
		/* a decoder link is named where the file has it, as the loader's aliases do: layers[k].self or .cross */
		const LayerParams *li = &l->layer[i].lp;
		ModelConfig lc;
		Shapes ls;
		size_t old2 = li->part == PART_LAYER
		                  ? path_append(c, "%slayers[%d]", c->pathlen ? "." : "", i)
		                  : path_append(c, "%slayers[%d].%s", c->pathlen ? "." : "", li->dec_layer,
		                                li->part == PART_SELF ? "self" : "cross");
		layer_settings(&l->model, i, &lc);
		if (validate_layer(c, &lc, li, &ls) != 0 || validate_settings(c, &lc) != 0)
			return -1;
		path_set(c, old2);
	}
	if (validate_settings(c, &l->cfg) != 0)
		return -1;
	if (l->nsteps > LESSON_MAX_STEPS)
		return fail(c, _("steps: %d steps is over the limit of %d (LESSON_MAX_STEPS)"), l->nsteps, LESSON_MAX_STEPS);
	for (i = 0; i < l->nsteps; i++) {
		const Step *st = &l->steps[i];
		Shapes ss = s; /* the step's layer: its own matrices (a decoder's cross-attention has a source) */
		int r = 0;
		if (st->encoder && l->encoder != NULL) {
			li_layer_shapes(l->encoder, st->layer < model_layers(l->encoder) ? st->layer : 0, &ss);
			ss.backward = s.backward; /* the decoder's loss reaches the encoder too */
		}
		else if (st->layer > 0 && st->layer < l->nlayers) {
			ModelConfig lc;
			layer_settings(&l->model, st->layer, &lc);
			li_shapes_from_model(&lc, &l->layer[st->layer].lp, &ss);
			ss.positional = POS_NONE;
			ss.has_final = l->cfg.has_final_norm && st->layer == l->nlayers - 1;
			ss.backward = s.backward;
		} else if (l->nlayers > 1)
			ss.has_final = 0;
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
		li_stack(c)->numbers_before = li_shapes_count(&s); /* the variant counts with this lesson */
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
