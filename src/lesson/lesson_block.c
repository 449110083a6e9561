/*
 * lesson_block.c: format version 2's Transformer block around attention
 * (biases, norms, the feed-forward network, the final norm), the loss the
 * backward pass starts from, and "layers": a stack of layers, each its
 * object over the top level's keys read as a model (li_read_layer: its
 * settings and parameters, no course), its parameters then moved into the
 * stack's ModelLayer.
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Version 2: biases, the Transformer block, layers                    */
/* ------------------------------------------------------------------ */

static const char *const backward_keys[] = { "target", "dOutput", NULL };

static int read_shaped(Ctx *c, const cJSON *obj, const char *key, int rows, int cols, const char *rows_why,
                       const char *cols_why, double dflt, Mat *out);

/* "backward": {"target": n × d_out} or {"dOutput": n × d_out}, against the final output's shape. */
int li_read_backward(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *b = get(root, "backward");
	const int has_t = b != NULL && get(b, "target") != NULL, has_d = b != NULL && get(b, "dOutput") != NULL;
	size_t old;
	int r = -1;

	if (b == NULL)
		return 0;
	old = path_key(c, "backward");
	if (!cJSON_IsObject(b) || has_t == has_d) {
		fail(c, _("expected exactly one of {\"target\": n × d_out} (the loss is ½ Σ (output − target)²) or "
		        "{\"dOutput\": n × d_out} (the gradient at the output, given)%s"),
		     cJSON_IsObject(b) && has_t ? _(", not both") : "");
		goto out;
	}
	warn_unknown_keys(c, b, backward_keys);
	l->cfg.backward = has_t ? BACKWARD_TARGET : BACKWARD_DOUTPUT;
	r = read_shaped(c, b, has_t ? "target" : "dOutput", l->cfg.n, l->lp.block.present || l->nlayers > 0 ? l->cfg.d_model : l->lp.d_out,
	                _("n, one per token"), l->lp.block.present || l->nlayers > 0 ? _("d_model, the output's columns")
	                                                                        : _("d_out, the output's columns"),
	                -1, &l->cfg.target);
out:
	path_set(c, old);
	return r;
}
static const char *const block_keys[] = { "norm", "norm_kind", "eps", "ln1", "ln2", "ln3", "ffn", "final_norm",
	                                  "ln1_after", "ln2_after", NULL };
static const char *const norm_keys[] = { "gamma", "beta", NULL };
static const char *const ffn_keys[] = { "W_1", "b_1", "W_2", "b_2", "W_3", "b_3", "activation", "kind", NULL };
/* A layer's own keys beside the tables' (lesson_keys.h: the rows with LK_LAYER; li_key_list joins them). */
static const char *const layer_keys[] = { "heads", "W_q", "W_k", "W_v", "W_o", "w_e", "b_q", "b_k",
	                                  "b_v", "b_o", "mask", NULL };
/* The settings of "block" (its matrices are read with the others, once the shapes are known). */
static int read_block_settings(Ctx *c, const cJSON *root, Model *l)
{
	/* NormPlace's order, then "sandwich" (Gemma's, lesson_gemma.c: a pre-norm block with norms after too) */
	static const char *const places[] = { "post", "pre", "none", "after", "sandwich", NULL };
	static const char *const kinds[] = { "layernorm", "rmsnorm", "rmsnorm_plus1", NULL }; /* NormKind's order */
	/* the Activation enum's order; "gelu_new" is transformers' name of "gelu_tanh" */
	static const char *const acts[] = { "relu", "gelu", "swiglu", "gelu_tanh", "gelu_new", NULL };
	const cJSON *b = get(root, "block"), *ffn, *fin;
	size_t old;
	int k, r = -1;

	l->lp.block.eps = 1e-5;
	if (b == NULL)
		return 0;
	old = path_key(c, "block");
	if (!cJSON_IsObject(b)) {
		fail(c, _("expected an object {\"norm\": \"post\", \"ffn\": {\"W_1\": …, \"W_2\": …}, …}, got %s"), got(b).s);
		goto out;
	}
	warn_unknown_keys(c, b, block_keys);
	l->lp.block.present = 1;
	if (get(b, "ln3") != NULL && li_stack(c)->part == PART_LAYER) {
		path_key(c, "ln3");
		fail(c, _("only a decoder layer has a third norm (its cross-attention is the extra sublayer); "
		        "an encoder layer or a stack's layer has ln1 and ln2"));
		goto out;
	}
	k = 0;
	if (key_choice(c, b, "norm", places, &k) != 0)
		goto out;
	l->lp.block.norm = (NormPlace)k;
	k = 0;
	if (key_choice(c, b, "norm_kind", kinds, &k) != 0)
		goto out;
	l->lp.block.norm_kind = (NormKind)k;
	if (li_gemma_block_settings(c, b, l, (int)l->lp.block.norm) != 0)
		goto out;
	if (li_key_eps(c, b, &l->lp.block.eps) != 0)
		goto out;
	ffn = li_stack(c)->part == PART_SELF ? NULL : get(b, "ffn"); /* a decoder's FFN follows its cross-attention */
	if (ffn != NULL) {
		size_t old2 = path_key(c, "ffn");
		if (!cJSON_IsObject(ffn)) {
			fail(c, _("expected an object {\"W_1\": …, \"W_2\": …, \"activation\": \"relu\"}, got %s"), got(ffn).s);
			goto out;
		}
		l->lp.block.has_ffn = 1;
		if (li_moe_settings(c, ffn, l) != 0) /* "kind": "moe": a mixture of experts (lesson_moe.c) */
			goto out;
		if (l->lp.block.moe.experts > 0) {
			path_set(c, old2);
			goto ffn_done;
		}
		warn_unknown_keys(c, ffn, ffn_keys);
		k = 0;
		if (key_choice(c, ffn, "activation", acts, &k) != 0)
			goto out;
		l->lp.block.activation = k == 4 ? ACT_GELU_TANH : (Activation)k;
		/* d_ff now, so that steps can point at the FFN's cells (the numbers are read later) */
		if (get(ffn, "W_1") != NULL) {
			MatSrc w1;
			if (li_read_matsrc(c, ffn, "W_1", &LIM_DIM_DIM, &w1) != 0)
				goto out;
			l->lp.block.d_ff = w1.cols;
		}
		path_set(c, old2);
	}
ffn_done:
	/* final_norm belongs to the stack, not a layer: read from the top-level block (li_lesson_from_json). */
	fin = get(b, "final_norm");
	if (fin != NULL && c->layer_obj != NULL && get(c->layer_obj, "block") != NULL) {
		size_t old2 = path_key(c, "final_norm");
		warnf(c, _("ignored: \"final_norm\" goes in the top-level \"block\" (it follows the last layer)"));
		path_set(c, old2);
	}
	r = 0;
out:
	path_set(c, old);
	return r;
}

/*
 * A matrix or vector of the block or a bias, checked against the shape it
 * must have: NULL rows_why for a vector (1 × cols). Absent: *out stays
 * empty, unless dflt ≥ 0 fills it with that value (γ = 1, β = 0).
 */
static int read_shaped(Ctx *c, const cJSON *obj, const char *key, int rows, int cols, const char *rows_why,
                       const char *cols_why, double dflt, Mat *out)
{
	MatSrc src;
	size_t old = c->pathlen;
	int r = -1;

	if (li_read_matsrc(c, obj, key, rows_why == NULL ? &LIM_VECTOR : &LIM_DIM_DIM, &src) != 0)
		return -1;
	if (src.kind == SRC_ABSENT) {
		if (dflt < 0)
			return 0;
		if (mat_alloc(out, rows, cols) != 0)
			return fail_oom(c);
		for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
			out->a[i] = dflt;
		return 0;
	}
	path_key(c, key);
	if (rows_why == NULL && src.rows * src.cols != cols)
		fail(c, _("expected %d numbers (%s), got %d"), cols, cols_why, src.rows * src.cols);
	else if (rows_why != NULL && src.rows != rows)
		fail(c, _("expected %d rows (%s), got %d"), rows, rows_why, src.rows);
	else if (rows_why != NULL && src.cols != cols)
		fail(c, _("expected %d columns (%s), got %d"), cols, cols_why, src.cols);
	else
		r = 0;
	path_set(c, old);
	if (r == 0 && li_fill_mat(c, &src, out) != 0)
		return -1;
	if (r == 0 && rows_why == NULL) {
		out->rows = 1; /* a flat vector or a generator with one row */
		out->cols = cols;
	}
	return r;
}

int li_read_shaped(Ctx *c, const cJSON *obj, const char *key, int rows, int cols, const char *rows_why, const char *cols_why,
                   double dflt, Mat *out)
{
	return read_shaped(c, obj, key, rows, cols, rows_why, cols_why, dflt, out);
}

/* A norm's {"gamma", "beta"} (β only for LayerNorm); defaults 1 and 0. */
static int read_norm(Ctx *c, const cJSON *obj, const char *key, const Block *b, int d_model, Mat *gamma, Mat *beta)
{
	const cJSON *v = get(obj, key);
	size_t old = c->pathlen;
	int r = -1;

	if (v != NULL) {
		path_key(c, key);
		if (!cJSON_IsObject(v)) {
			fail(c, _("expected an object {\"gamma\": [d_model numbers], \"beta\": [...]}, got %s"), got(v).s);
			goto out;
		}
		warn_unknown_keys(c, v, norm_keys);
		if (b->norm_kind != NORM_LAYERNORM && get(v, "beta") != NULL) {
			path_key(c, "beta");
			fail(c, _("RMSNorm has no beta (only gamma); remove it, or use \"norm_kind\": \"layernorm\""));
			goto out;
		}
	}
	/* γ = 1 by default; Gemma's (1 + γ) starts from γ = 0, the same norm */
	if (read_shaped(c, v, "gamma", 1, d_model, NULL, "d_model", b->norm_kind == NORM_RMSNORM_1P ? 0.0 : 1.0, gamma) != 0 ||
	    (b->norm_kind == NORM_LAYERNORM && read_shaped(c, v, "beta", 1, d_model, NULL, "d_model", 0.0, beta) != 0))
		goto out;
	r = 0;
out:
	path_set(c, old);
	return r;
}

/* The rows of an unembedding: one per vocabulary entry. */
static const Limits LIM_VOCAB_DIM = { LESSON_MAX_VOCAB, " entries", "LESSON_MAX_VOCAB", LESSON_MAX_DIM, "LESSON_MAX_DIM",
                                      0, 1, 0 };

int li_lm_carrier(Ctx *c)
{
	return li_stack(c)->part == PART_LAYER && (c->layer_obj == NULL || c->layer_index == li_stack(c)->nlayers - 1);
}

/* "vocab": a list of 1 … LESSON_MAX_VOCAB strings, into l->cfg.vocab_tokens and vocab. */
static int read_vocab(Ctx *c, const cJSON *v, Model *l)
{
	const int count = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : 0;
	const cJSON *it;
	int i = 0;

	if (!cJSON_IsArray(v) || count < 1 || count > LESSON_MAX_VOCAB)
		return fail(c, _("expected a list of 1 to %d strings (the vocabulary's tokens, one per row of unembed), got %s"),
		            LESSON_MAX_VOCAB, got(v).s);
	if ((l->cfg.vocab_tokens = calloc((size_t)count + 1, sizeof *l->cfg.vocab_tokens)) == NULL)
		return fail_oom(c);
	l->cfg.vocab = count;
	cJSON_ArrayForEach(it, v) {
		size_t old = path_index(c, i);
		if (read_string(c, it, &l->cfg.vocab_tokens[i]) != 0)
			return -1;
		path_set(c, old);
		i++;
	}
	return 0;
}

/* "ids": n whole numbers, each an entry of the vocabulary. */
static int read_ids(Ctx *c, const cJSON *v, Model *l)
{
	const cJSON *it;
	int i = 0;

	if (!cJSON_IsArray(v))
		return fail(c, _("expected %d whole numbers (one vocabulary entry per token), got %s"), l->cfg.n, got(v).s);
	if (cJSON_GetArraySize(v) != l->cfg.n)
		return fail(c, _("expected %d whole numbers (one vocabulary entry per token), got %d"), l->cfg.n,
		            cJSON_GetArraySize(v));
	if ((l->cfg.ids = calloc((size_t)l->cfg.n, sizeof *l->cfg.ids)) == NULL)
		return fail_oom(c);
	cJSON_ArrayForEach(it, v) {
		size_t old = path_index(c, i);
		if (read_whole(c, it, 0, l->cfg.vocab - 1, _("a vocabulary entry (0 to vocab - 1)"), &l->cfg.ids[i]) != 0)
			return -1;
		path_set(c, old);
		i++;
	}
	return 0;
}

int li_read_lm_head(Ctx *c, const cJSON *root, Model *l)
{
	static const char *const needs[] = { "unembed", "ids", "logits_row", NULL };
	const cJSON *v = get(root, "vocab");
	size_t old = c->pathlen;
	long long row = l->cfg.n - 1;
	MatSrc src;
	int r = -1;

	l->cfg.logits_row = l->cfg.n - 1;
	if (v == NULL) {
		for (int k = 0; needs[k] != NULL; k++)
			if (get(root, needs[k]) != NULL) {
				path_key(c, needs[k]);
				fail(c, _("this is the LM head's, and the lesson has no \"vocab\" (give the vocabulary's tokens too)"));
				goto out;
			}
		return 0;
	}
	path_key(c, "vocab");
	if (read_vocab(c, v, l) != 0)
		goto out;
	path_set(c, old);
	if (get(root, "unembed") == NULL) {
		path_key(c, "unembed");
		fail(c, _("missing: the LM head needs unembed (vocab \u00d7 d_model = %d \u00d7 %d), one row per token of \"vocab\""),
		     l->cfg.vocab, l->cfg.d_model);
		goto out;
	}
	if (li_read_matsrc(c, root, "unembed", &LIM_VOCAB_DIM, &src) != 0)
		goto out;
	path_key(c, "unembed");
	if (src.rows != l->cfg.vocab) {
		fail(c, _("expected %d rows (one per token of \"vocab\"), got %d"), l->cfg.vocab, src.rows);
		goto out;
	}
	if (src.cols != l->cfg.d_model) {
		fail(c, _("expected %d columns (d_model, the columns of the last layer's output), got %d"), l->cfg.d_model, src.cols);
		goto out;
	}
	if (li_fill_mat(c, &src, &l->cfg.unembed) != 0)
		goto out;
	path_set(c, old);
	if (get(root, "ids") != NULL) {
		path_key(c, "ids");
		if (read_ids(c, get(root, "ids"), l) != 0)
			goto out;
		path_set(c, old);
	}
	if (key_whole(c, root, "logits_row", 0, l->cfg.n - 1, _("a row of the logits (0 to n - 1)"), &row) != 0)
		goto out;
	l->cfg.logits_row = (int)row;
	if (get(root, "top_k") == NULL && l->cfg.top_k > l->cfg.vocab)
		l->cfg.top_k = l->cfg.vocab;
	if (l->cfg.top_k > l->cfg.vocab) {
		path_key(c, "top_k");
		fail(c, _("expected at most %d (the vocabulary's size), got %d"), l->cfg.vocab, l->cfg.top_k);
		goto out;
	}
	r = 0;
out:
	path_set(c, old);
	return r;
}

/* The tables' matrices and a learned positional table (PE, n × d_model). */
static int read_modern_matrices(Ctx *c, const cJSON *root, Model *l)
{
	size_t old = c->pathlen;
	int r = -1;

	/* the tables' matrices (lesson_keys.h): QK-norm's weights, attention sinks, gated attention's W_gate, Gated
	 * DeltaNet, the block's, … each layer its own */
	if (li_keys_read_weights(c, root, l) != 0)
		goto out;
	if (l->cfg.positional == POS_LEARNED && get(root, "PE") == NULL) {
		path_key(c, "PE");
		fail(c, _("missing: \"positional\": \"learned\" adds the given rows PE (n \u00d7 d_model = %d \u00d7 %d)"),
		     l->cfg.n, l->cfg.d_model);
		goto out;
	}
	if (l->cfg.positional != POS_LEARNED && get(root, "PE") != NULL) {
		path_key(c, "PE");
		warnf(c, _("not used: PE is for \"positional\": \"learned\""));
		path_set(c, old);
	} else if (read_shaped(c, root, "PE", l->cfg.n, l->cfg.d_model, _("n, one per token"), "d_model", -1,
	                       &l->cfg.pe_learned) != 0)
		goto out;
	r = 0;
out:
	path_set(c, old);
	return r;
}

/* Biases and the tables' matrices (the block's too), once the attention's shapes are known. */
int li_read_v2_matrices(Ctx *c, const cJSON *root, Model *l)
{
	const int hdk = l->lp.W_q.cols, hdv = l->lp.W_v.cols;
	size_t old;

	if (read_shaped(c, root, "b_q", 1, hdk, NULL, _("the columns of W_q"), -1, &l->lp.b_q) != 0 ||
	    read_shaped(c, root, "b_k", 1, l->lp.W_k.cols, NULL, _("the columns of W_k"), -1, &l->lp.b_k) != 0 ||
	    read_shaped(c, root, "b_v", 1, hdv, NULL, _("the columns of W_v"), -1, &l->lp.b_v) != 0)
		return -1;
	if (get(root, "b_o") != NULL && mat_empty(&l->lp.W_o)) {
		old = path_key(c, "b_o");
		fail(c, _("this is W_o's bias, and this lesson has no W_o (give W_o, or leave b_o out)"));
		path_set(c, old);
		return -1;
	}
	if (read_shaped(c, root, "b_o", 1, l->lp.d_out, NULL, _("the columns of W_o"), -1, &l->lp.b_o) != 0)
		return -1;
	return read_modern_matrices(c, root, l); /* and the tables' (lesson_keys.h): the block's with its row */
}

/* The block's norms and FFN once the attention's shapes are known (its row's weights). */
static int read_block_weights(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *b = get(root, "block"), *ffn = b != NULL ? get(b, "ffn") : NULL;
	Block *blk = &l->lp.block;
	int cross, r = -1;
	const char *n1, *n2;
	size_t old;

	if (!blk->present)
		return 0;
	/* a decoder's cross-attention link: its two norms are the layer's ln2 and ln3 */
	cross = li_stack(c)->part == PART_CROSS;
	n1 = cross ? "ln2" : "ln1";
	n2 = cross ? "ln3" : "ln2";
	old = path_key(c, "block");
	if (l->cfg.has_source && !cross) {
		path_set(c, old);
		path_key(c, "source");
		fail(c, _("a block lesson has no source: its attention is self-attention"));
		goto out;
	}
	if (l->lp.d_out != l->cfg.d_model) {
		fail(c, _("the residual adds the attention's output to its input, so the output needs d_model = %d "
		        "columns, but it has %d (%s)"), l->cfg.d_model, l->lp.d_out,
		     mat_empty(&l->lp.W_o) ? _("heads × d_v: give W_o with d_model columns") : _("the columns of W_o"));
		goto out;
	}
	if (blk->norm != NORM_NONE &&
	    (read_norm(c, b, n1, blk, l->cfg.d_model, &blk->ln1_gamma, &blk->ln1_beta) != 0 ||
	     (blk->has_ffn && read_norm(c, b, n2, blk, l->cfg.d_model, &blk->ln2_gamma, &blk->ln2_beta) != 0) ||
	     li_gemma_block_norms(c, b, l) != 0))
		goto out;
	if (blk->has_ffn && blk->moe.experts > 0) {
		path_key(c, "ffn");
		if (li_moe_matrices(c, ffn, l) != 0)
			goto out;
	} else if (blk->has_ffn) {
		MatSrc w1;
		path_key(c, "ffn");
		if (get(ffn, "W_1") == NULL || get(ffn, "W_2") == NULL) {
			path_key(c, get(ffn, "W_1") == NULL ? "W_1" : "W_2");
			fail(c, _("missing: an FFN needs W_1 (d_model × d_ff) and W_2 (d_ff × d_model)"));
			goto out;
		}
		if (li_read_matsrc(c, ffn, "W_1", &LIM_DIM_DIM, &w1) != 0)
			goto out;
		blk->d_ff = w1.cols;
		if (blk->activation == ACT_GELU_TANH && get(ffn, "W_3") != NULL)
			blk->activation = ACT_GEGLU; /* Gemma's gate: gelu_tanh(x·W_1) ⊙ x·W_3 */
		if (blk->activation == ACT_SWIGLU && get(ffn, "W_3") == NULL) {
			path_key(c, "W_3");
			fail(c, _("missing: \"swiglu\" needs W_3 (d_model × d_ff), the gate"));
			goto out;
		}
		if (blk->activation != ACT_SWIGLU && blk->activation != ACT_GEGLU && (get(ffn, "W_3") != NULL || get(ffn, "b_3") != NULL)) {
			size_t old2 = path_key(c, get(ffn, "W_3") != NULL ? "W_3" : "b_3");
			warnf(c, _("not used: W_3 and b_3 are for \"activation\": \"swiglu\""));
			path_set(c, old2);
		}
		if (read_shaped(c, ffn, "W_1", l->cfg.d_model, blk->d_ff, "d_model", "d_ff", -1, &blk->W_1) != 0 ||
		    read_shaped(c, ffn, "b_1", 1, blk->d_ff, NULL, _("d_ff, the columns of W_1"), 0.0, &blk->b_1) != 0 ||
		    read_shaped(c, ffn, "W_2", blk->d_ff, l->cfg.d_model, _("d_ff, the columns of W_1"), "d_model", -1, &blk->W_2) != 0 ||
		    read_shaped(c, ffn, "b_2", 1, l->cfg.d_model, NULL, "d_model", 0.0, &blk->b_2) != 0)
			goto out;
		if ((blk->activation == ACT_SWIGLU || blk->activation == ACT_GEGLU) &&
		    (read_shaped(c, ffn, "W_3", l->cfg.d_model, blk->d_ff, "d_model", _("d_ff, the columns of W_1"), -1, &blk->W_3) != 0 ||
		     read_shaped(c, ffn, "b_3", 1, blk->d_ff, NULL, _("d_ff, the columns of W_1"), 0.0, &blk->b_3) != 0))
			goto out;
	}
	r = 0;
out:
	path_set(c, old);
	return r;
}

/* A norm's {"gamma", "beta"} (β only when it has one) under key. 0, or -1 out of memory. */
int li_put_norm(cJSON *o, const char *key, const Mat *gamma, const Mat *beta)
{
	cJSON *n = cJSON_CreateObject();

	return li_put(o, key, n) != 0 || li_put(n, "gamma", jw_flat(gamma)) != 0 ||
	               (!mat_empty(beta) && li_put(n, "beta", jw_flat(beta)) != 0)
	           ? -1
	           : 0;
}

/* A layer's "block": its settings, norms and FFN (a mixture of experts': lesson_moe.c); at the top level, the
 * stack's final norm too. */
static int write_block(cJSON *o, const LayerParams *p, const Model *m, LkAt at)
{
	static const char *const places[] = { "post", "pre", "none", "after" }, *const kinds[] = { "layernorm", "rmsnorm", "rmsnorm_plus1" },
	                         *const acts[] = { "relu", "gelu", "swiglu", "gelu_tanh", "gelu_tanh" }; /* ACT_GEGLU: with W_3 */
	const Block *b = &p->block;
	cJSON *bj;

	if (!b->present)
		return 0;
	bj = cJSON_CreateObject();
	if (li_put(o, "block", bj) != 0 || !cJSON_AddStringToObject(bj, "norm", b->sandwich ? "sandwich" : places[b->norm]) ||
	    !cJSON_AddStringToObject(bj, "norm_kind", kinds[b->norm_kind]) || li_put(bj, "eps", jw_number(b->eps)) != 0)
		return -1;
	if (b->norm != NORM_NONE && (li_put_norm(bj, "ln1", &b->ln1_gamma, &b->ln1_beta) != 0 ||
	                             (b->has_ffn && li_put_norm(bj, "ln2", &b->ln2_gamma, &b->ln2_beta) != 0)))
		return -1;
	if (b->sandwich && (li_put_norm(bj, "ln1_after", &b->ln1_after_gamma, &(Mat){ 0 }) != 0 || /* Gemma's sandwich norms */
	                    (b->has_ffn && li_put_norm(bj, "ln2_after", &b->ln2_after_gamma, &(Mat){ 0 }) != 0)))
		return -1;
	if (b->has_ffn && b->moe.experts > 0) {
		if (li_moe_write(bj, b) != 0)
			return -1;
	} else if (b->has_ffn) {
		cJSON *f = cJSON_CreateObject();
		/* a real model's FFN without biases (LLaMA's) leaves them out: absent is 0 */
		if (li_put(bj, "ffn", f) != 0 || li_put(f, "W_1", jw_matrix(&b->W_1)) != 0 ||
		    (!mat_empty(&b->b_1) && li_put(f, "b_1", jw_flat(&b->b_1)) != 0) || li_put(f, "W_2", jw_matrix(&b->W_2)) != 0 ||
		    (!mat_empty(&b->b_2) && li_put(f, "b_2", jw_flat(&b->b_2)) != 0) ||
		    (!mat_empty(&b->W_3) && (li_put(f, "W_3", jw_matrix(&b->W_3)) != 0 ||
		                             (!mat_empty(&b->b_3) && li_put(f, "b_3", jw_flat(&b->b_3)) != 0))) ||
		    !cJSON_AddStringToObject(f, "activation", acts[b->activation]))
			return -1;
	}
	if (at == LK_AT_TOP && m->cfg.has_final_norm &&
	    li_put_norm(bj, "final_norm", &m->cfg.final_gamma, &m->cfg.final_beta) != 0)
		return -1;
	return 0;
}

/*
 * The block's key, one table (lesson_keys.h): its settings before the shapes
 * (the FFN's d_ff, so that steps may point at its cells), its norms and FFN
 * after, each layer its own. Its inner keys (norm, ffn, ln1, …, a mixture of
 * experts' router and experts: lesson_moe.c; Gemma's sandwich norms:
 * lesson_gemma.c) are the row's, read and written with it. The stack's
 * "final_norm" is read apart (li_read_final_norm: once the layers are read,
 * from the top level's block alone), and written with the top level's block.
 */
const LessonKey li_block_keys[] = {
	{ .name = "block", .kind = LK_CUSTOM, .where = LK_TOP | LK_LAYER, .read = read_block_settings,
	  .weights = read_block_weights, .write_layer = write_block },
	{ .name = NULL },
};

/* The top-level "block": {"final_norm": {…}}: one more norm after the last layer. */
int li_read_final_norm(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *b = get(root, "block");
	size_t old;
	int r;

	if (b == NULL || !cJSON_IsObject(b) || get(b, "final_norm") == NULL)
		return 0;
	/* The stack's own block settings (a layer's block may differ). */
	Block top;
	static const char *const kinds[] = { "layernorm", "rmsnorm", "rmsnorm_plus1", NULL }; /* NormKind's order */
	int k = 0;
	memset(&top, 0, sizeof top);
	top.eps = 1e-5;
	old = path_key(c, "block");
	if (key_choice(c, b, "norm_kind", kinds, &k) != 0 || key_finite(c, b, "eps", &top.eps) != 0) {
		path_set(c, old);
		return -1;
	}
	top.norm_kind = (NormKind)k;
	l->cfg.has_final_norm = 1;
	l->cfg.final_kind = top.norm_kind;
	l->cfg.final_eps = top.eps;
	r = read_norm(c, b, "final_norm", &top, l->cfg.d_model, &l->cfg.final_gamma, &l->cfg.final_beta);
	path_set(c, old);
	return r;
}

/* Layer i's object merged over the top level: its keys replace the top's ("block" whole). */
static cJSON *merge_layer(const cJSON *root, const cJSON *layer, int keep_steps)
{
	cJSON *m = cJSON_Duplicate(root, 1);
	const cJSON *it;

	if (m == NULL)
		return NULL;
	cJSON_DeleteItemFromObjectCaseSensitive(m, "layers");
	if (!keep_steps) {
		cJSON_DeleteItemFromObjectCaseSensitive(m, "steps");
		cJSON_DeleteItemFromObjectCaseSensitive(m, "compare");
	}
	/*
	 * Layer 0's own "mask" is its own: the "compare" variant read from this
	 * merged top level keeps the top level's mask for its other layers.
	 */
	cJSON *cmp = cJSON_GetObjectItemCaseSensitive(m, "compare");
	if (keep_steps && get(layer, "mask") != NULL && cJSON_IsObject(cmp) && get(cmp, "mask") == NULL) {
		cJSON *top = get(root, "mask") != NULL ? cJSON_Duplicate(get(root, "mask"), 1) : cJSON_CreateString("none");
		if (top == NULL || !cJSON_AddItemToObject(cmp, "mask", top)) {
			cJSON_Delete(top);
			cJSON_Delete(m);
			return NULL;
		}
	}
	cJSON_ArrayForEach(it, layer) {
		cJSON *copy;
		int k = 0;
		/* only a layer's own keys (the others are warned about as unknown, never read: no "layers" in a layer) */
		while (layer_keys[k] != NULL && strcmp(layer_keys[k], it->string) != 0)
			k++;
		if (layer_keys[k] == NULL && !li_key_known(it->string, LK_LAYER))
			continue;
		if (strcmp(it->string, "rope") == 0)
			continue; /* a layer's own: li_read_layer_rope */
		copy = cJSON_Duplicate(it, 1);
		if (copy == NULL) {
			cJSON_Delete(m);
			return NULL;
		}
		/* a layer's own QK-norm weights keep the model's form ("over" and "kind" are every layer's: the top level's) */
		for (int f = 0; f < 2 && strcmp(it->string, "qk_norm") == 0 && cJSON_IsObject(copy); f++) {
			const char *form = f == 0 ? "over" : "kind";
			if (get(copy, form) == NULL && get(get(m, "qk_norm"), form) != NULL &&
			    !cJSON_AddItemToObject(copy, form, cJSON_Duplicate(get(get(m, "qk_norm"), form), 1))) {
				cJSON_Delete(copy);
				cJSON_Delete(m);
				return NULL;
			}
		}
		if (get(m, it->string) != NULL)
			cJSON_ReplaceItemInObjectCaseSensitive(m, it->string, copy);
		else
			cJSON_AddItemToObject(m, it->string, copy);
	}
	return m;
}

void li_layer_take(ModelLayer *dst, Model *src)
{
	dst->lp = src->lp;
	memset(&src->lp, 0, sizeof src->lp);
	model_layer_own_take(&src->cfg, &dst->own);
}

int li_layer_own_from(Ctx *c, ModelLayer *dst, const Lesson *src)
{
	LayerOwn own;

	model_layer_own_of(&src->cfg, &own);
	return layer_own_copy(&dst->own, &own) != 0 ? fail_oom(c) : 0;
}

/* The numbers the stack will hold, over the limit: an error. */
int li_check_layers_limit(Ctx *c, const Lesson *top)
{
	const double total = lesson_count_numbers(top);

	if (total > (double)LESSON_MAX_NUMBERS) {
		size_t old = path_key(c, "layers");
		fail(c, _("too large: its %d layers would hold %.0f numbers, over the limit of %ld (LESSON_MAX_NUMBERS)"),
		     top->nlayers, total, (long)LESSON_MAX_NUMBERS);
		path_set(c, old);
		return -1;
	}
	return 0;
}

/* The stack's input belongs to the top level: in a layer object it is refused (at layers[i].KEY). */
static int refuse_input_keys(Ctx *c, const cJSON *layer)
{
	static const char *const input[] = { "tokens", "X", "source", NULL };

	for (int k = 0; input[k] != NULL; k++)
		if (get(layer, input[k]) != NULL) {
			path_key(c, input[k]);
			return fail(c, _("a layer reads the previous layer's output: give the stack's input (\"tokens\", \"X\") "
			                 "at the top level"));
		}
	return 0;
}

int li_check_counted(Ctx *c, int n, double before)
{
	const Stack *st = li_stack(c);
	const size_t old = path_key(c, "layers");
	const double total = before + st->counted;

	if (total > (double)LESSON_MAX_NUMBERS)
		fail(c, _("too large: its %d layers would hold %.0f numbers, over the limit of %ld (LESSON_MAX_NUMBERS)"), n,
		     total, (long)LESSON_MAX_NUMBERS);
	else if (st->counted_terms > (double)LESSON_MAX_ADDITIVE_TERMS)
		fail(c, _("too slow: the additive scores of its %d layers would take %.0f tanh terms, over the limit of "
		          "%ld (LESSON_MAX_ADDITIVE_TERMS); make n, m, d_k or the layers fewer"),
		     n, st->counted_terms, (long)LESSON_MAX_ADDITIVE_TERMS);
	path_set(c, old);
	return c->err != NULL ? -1 : 0;
}

/*
 * Every layer's shapes read and counted before any layer's numbers are made:
 * a lesson over LESSON_MAX_NUMBERS or LESSON_MAX_ADDITIVE_TERMS is refused at
 * "layers" without allocating what it asks for.
 */
static int count_layers(Ctx *c, const cJSON *root, const cJSON *layers, int n)
{
	Stack *st = li_stack(c);
	const Stack saved = *st;
	const cJSON *saved_obj = c->layer_obj;
	const int saved_index = c->layer_index;
	StrBuf *saved_warn = c->warn;
	int r = -1;

	st->count_only = 1;
	st->counted = st->counted_terms = 0;
	st->nlayers = n;
	st->stack_final = cJSON_IsObject(get(root, "block")) && get(get(root, "block"), "final_norm") != NULL;
	c->warn = NULL; /* the real reading warns */
	for (int i = n - 1; i >= 0; i--) {
		cJSON *merged = merge_layer(root, cJSON_GetArrayItem(layers, i), 0);
		Model m = { 0 };
		int bad;
		if (merged == NULL) {
			fail_oom(c);
			goto out;
		}
		c->layer_obj = cJSON_GetArrayItem(layers, i);
		c->layer_index = i;
		bad = li_read_layer(c, merged, &m);
		cJSON_Delete(merged);
		model_free(&m);
		if (bad)
			goto out;
	}
	c->layer_obj = saved_obj;
	c->layer_index = saved_index;
	r = li_check_counted(c, n, saved.numbers_before);
out:
	c->layer_obj = saved_obj;
	c->layer_index = saved_index;
	c->warn = saved_warn;
	*st = saved;
	return r;
}

/*
 * "layers": each layer is that layer's keys put over the top level's, read
 * as a model of one layer (messages name "layers[i].KEY" for its own keys).
 * The top level is layer 0, read as the lesson with the steps and the
 * comparison.
 */
Lesson *li_lesson_with_layers(Ctx *c, const cJSON *root, const cJSON *layers, int is_variant)
{
	const cJSON *it;
	Lesson *top = NULL;
	Model *layer = NULL; /* layers 1 … n − 1 as read, until the top level's steps are read against them */
	ModelLayer *stack = NULL;
	const char *known[LK_MAX_NAMES];
	const cJSON *saved_obj = c->layer_obj;
	Model *saved_layers = li_stack(c)->layers;
	int saved_index = c->layer_index, saved_n = li_stack(c)->nlayers, saved_final = li_stack(c)->stack_final;
	int n = 0, i, ok = 0;
	size_t old = path_key(c, "layers");

	if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) == 0) {
		fail(c, _("expected a list of layers [{…}, …] (each may be {} to repeat the top level), got %s"),
		     cJSON_IsArray(layers) ? _("an empty list") : got(layers).s);
		goto out;
	}
	n = cJSON_GetArraySize(layers);
	if (n > LESSON_MAX_LAYERS) {
		fail(c, _("%d layers is over the limit of %d (LESSON_MAX_LAYERS)"), n, LESSON_MAX_LAYERS);
		goto out;
	}
	i = 0;
	cJSON_ArrayForEach(it, layers) {
		size_t old2 = path_index(c, i++);
		if (!cJSON_IsObject(it)) {
			fail(c, _("expected a layer {\"W_q\": …, \"block\": …} (or {} to repeat the top level), got %s"), got(it).s);
			goto out;
		}
		if (refuse_input_keys(c, it) != 0)
			goto out;
		li_key_list(layer_keys, LK_LAYER, known, LK_MAX_NAMES);
		warn_unknown_keys(c, it, known);
		path_set(c, old2);
	}
	path_set(c, old);
	if (count_layers(c, root, layers, n) != 0)
		goto out;
	layer = calloc((size_t)n, sizeof *layer);
	if (layer == NULL) {
		fail_oom(c);
		goto out;
	}
	li_stack(c)->layers = layer;
	li_stack(c)->nlayers = n;
	li_stack(c)->stack_final = cJSON_IsObject(get(root, "block")) && get(get(root, "block"), "final_norm") != NULL;
	/* Layers 1 … n−1, then the top level (layer 0 with the steps, which may name any layer), then layer 0. */
	for (i = n - 1; i >= 1; i--) {
		cJSON *merged = merge_layer(root, cJSON_GetArrayItem(layers, i), 0);
		StrBuf *saved_warn = c->warn;
		if (merged == NULL) {
			fail_oom(c);
			goto out;
		}
		c->layer_obj = cJSON_GetArrayItem(layers, i);
		c->layer_index = i;
		c->warn = NULL; /* the top level's own warnings come once, from layer 0 */
		ok = li_read_layer(c, merged, &layer[i]) == 0;
		c->warn = saved_warn;
		cJSON_Delete(merged);
		if (!ok)
			goto out;
		ok = 0;
	}
	{
		cJSON *merged = merge_layer(root, cJSON_GetArrayItem(layers, 0), 1);
		if (merged == NULL) {
			fail_oom(c);
			goto out;
		}
		c->layer_obj = cJSON_GetArrayItem(layers, 0);
		c->layer_index = 0;
		top = li_lesson_from_json(c, merged, is_variant);
		cJSON_Delete(merged);
		if (top == NULL)
			goto out;
	}
	/* Layer 0's parameters are the top level's own (model.h: one copy); each other layer's parameters and own
	 * settings move into the model. */
	stack = calloc((size_t)n, sizeof *stack);
	if (stack == NULL) {
		fail_oom(c);
		goto out;
	}
	for (i = 0; i < n; i++) {
		c->layer_obj = cJSON_GetArrayItem(layers, i);
		c->layer_index = i;
		if (i > 0)
			li_layer_take(&stack[i], &layer[i]);
		if ((i == 0 && li_layer_own_from(c, &stack[i], top) != 0) ||
		    li_read_layer_rope(c, c->layer_obj, &top->cfg, i == 0 ? &top->lp : &stack[i].lp, &stack[i].own) != 0) {
			top->nlayers = i + 1; /* what was copied, freed with top */
			top->layer = stack;
			stack = NULL;
			goto out;
		}
	}
	/*
	 * Local and global layers (issue 23 §3): when any layer gives its own
	 * "mask", every layer computes with the mask its object and the top
	 * level make (a sliding window here, full attention there), so layer 0's
	 * own never stands in for the others'.
	 */
	for (i = 0; i < n; i++)
		if (get(cJSON_GetArrayItem(layers, i), "mask") != NULL)
			break;
	for (int k = 0; i < n && k < n; k++)
		stack[k].own.mask_own = 1;
	/* Only the stack's final norm counts: read from the top level's own block. */
	top->cfg.has_final_norm = 0;
	mat_free(&top->cfg.final_gamma);
	mat_free(&top->cfg.final_beta);
	c->layer_obj = NULL;
	mat_free(&top->cfg.target);
	top->cfg.backward = BACKWARD_NONE;
	top->nlayers = n; /* li_read_backward takes the output's width from a stack */
	top->layer = stack;
	stack = NULL;
	if (li_read_final_norm(c, root, &top->model) != 0 || li_read_backward(c, root, &top->model) != 0 || li_check_layers_limit(c, top) != 0 ||
	    (n > 1 && li_read_lm_head(c, root, &top->model) != 0))
		goto out;
	ok = 1;
out:
	c->layer_obj = saved_obj;
	c->layer_index = saved_index;
	li_stack(c)->layers = saved_layers;
	li_stack(c)->nlayers = saved_n;
	li_stack(c)->stack_final = saved_final;
	path_set(c, old);
	for (i = 0; layer != NULL && i < n; i++)
		model_free(&layer[i]);
	free(layer);
	free(stack);
	if (!ok) {
		lesson_free(top);
		return NULL;
	}
	return top;
}
