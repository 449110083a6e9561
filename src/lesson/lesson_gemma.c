/*
 * lesson_gemma.c: Gemma's pieces of a lesson (issue 23; transformers'
 * models/gemma2/modeling_gemma2.py and models/gemma3/modeling_gemma3.py):
 *
 *   "qk_norm": {"kind": "rmsnorm_plus1"}   Gemma 3's q_norm and k_norm, x/√(mean(x²) + ε)·(1 + w)
 *   "embed_scale": true or s              X = input·√d_model (or ·s), a row of this file's table
 *
 * The block's "norm_kind": "rmsnorm_plus1" (Gemma3RMSNorm, the same (1 + γ)) is
 * one more word of lesson_block.c's list. The settings read here are the
 * model's (every layer's), as QK-norm's "over" is.
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <math.h>
#include <string.h>

/* "qk_norm": {"kind": …}: "rmsnorm" (Qwen3's, the default) or "rmsnorm_plus1" (Gemma 3's 1 + w). */
int li_gemma_qk_kind(Ctx *c, const cJSON *qk, Model *l)
{
	static const char *const kinds[] = { "rmsnorm", "rmsnorm_plus1", "l2", NULL }; /* "l2": lesson_qknorm.c reads it */
	int k = 0;

	if (key_choice(c, qk, "kind", kinds, &k) != 0)
		return -1;
	l->cfg.qk_norm_plus1 = k == 1;
	return 0;
}

/*
 * The shape rules of Gemma's pieces on one layer (li_check_shapes): QK-norm's
 * and the block's RMSNorms either both take 1 + w or neither (the formula
 * lines say which norm a lesson has with one feature, FEAT_NORM_1P).
 */
int li_gemma_check(Ctx *c, const ModelConfig *cfg, const LayerParams *lp)
{
	const Block *b = &lp->block;
	size_t old;

	if (b->present && b->sandwich && cfg->backward != BACKWARD_NONE) {
		old = path_key(c, "backward");
		fail(c, _("sandwich norms are computed forward only: their gradients are not (leave out \"backward\", or "
		          "use \"norm\": \"pre\")"));
		path_set(c, old);
		return -1;
	}
	if (cfg->qk_norm == QK_NORM_NONE || cfg->qk_norm == QK_NORM_L2 || !b->present || b->norm == NORM_NONE || b->norm_kind == NORM_LAYERNORM ||
	    (b->norm_kind == NORM_RMSNORM_1P) == (cfg->qk_norm_plus1 != 0))
		return 0;
	old = path_key(c, "qk_norm");
	path_key(c, "kind");
	fail(c, _("QK-norm is \"%s\" here but the block's norms are \"%s\": in one lesson both take their weights the "
	          "same way (Gemma 3: both \"rmsnorm_plus1\"; Qwen3: both \"rmsnorm\")"),
	     cfg->qk_norm_plus1 ? "rmsnorm_plus1" : "rmsnorm", cfg->qk_norm_plus1 ? "rmsnorm" : "rmsnorm_plus1");
	path_set(c, old);
	return -1;
}

static const char *const after_keys[] = { "gamma", NULL };

/*
 * The block's "norm": "sandwich" (places: lesson_block.c's list, "sandwich"
 * its index 4), read after "norm_kind": Gemma's four norms of a layer,
 *
 *   "block": {"norm": "sandwich", "norm_kind": "rmsnorm_plus1",
 *             "ln1": {"gamma": …}, "ln1_after": {"gamma": …},   input_layernorm, post_attention_layernorm
 *             "ln2": {"gamma": …}, "ln2_after": {"gamma": …}}   pre_feedforward_layernorm, post_feedforward_layernorm
 *
 * kept as a pre-norm block (NORM_PRE) with Block.sandwich set.
 */
int li_gemma_block_settings(Ctx *c, const cJSON *b, Model *l, int place)
{
	Block *blk = &l->lp.block;
	const char *stray = get(b, "ln1_after") != NULL ? "ln1_after" : get(b, "ln2_after") != NULL ? "ln2_after" : NULL;
	size_t old = c->pathlen;

	if (place != 4) {
		if (stray == NULL)
			return 0;
		path_key(c, stray);
		fail(c, _("only a block with \"norm\": \"sandwich\" has a norm after each sublayer beside ln1 and ln2"));
		path_set(c, old);
		return -1;
	}
	blk->norm = NORM_PRE;
	blk->sandwich = 1;
	if (li_stack(c)->part != PART_LAYER) {
		path_key(c, "norm");
		fail(c, _("sandwich norms are a decoder-only stack's (Gemma's); an encoder\u2013decoder's layers take \"pre\", "
		          "\"post\", \"after\" or \"none\""));
	} else if (blk->norm_kind == NORM_LAYERNORM) {
		path_key(c, "norm_kind");
		fail(c, _("sandwich norms are RMSNorms, as Gemma's: give \"norm_kind\": \"rmsnorm_plus1\" (Gemma's 1 + "
		          "\u03b3) or \"rmsnorm\""));
	} else {
		return 0;
	}
	path_set(c, old);
	return -1;
}

/* One norm after a sublayer: {"gamma": d_model numbers} (default 1, Gemma's 1 + γ: 0); RMSNorm, so no beta. */
static int read_after_norm(Ctx *c, const cJSON *b, const char *key, const Model *l, Mat *gamma)
{
	const cJSON *v = get(b, key);
	const double dflt = l->lp.block.norm_kind == NORM_RMSNORM_1P ? 0.0 : 1.0;
	size_t old = c->pathlen;
	int r = -1;

	if (v != NULL) {
		path_key(c, key);
		if (!cJSON_IsObject(v)) {
			fail(c, _("expected an object {\"gamma\": [d_model numbers]}, got %s"), got(v).s);
			goto out;
		}
		if (get(v, "beta") != NULL) {
			path_key(c, "beta");
			fail(c, _("RMSNorm has no beta (only gamma); remove it"));
			goto out;
		}
		warn_unknown_keys(c, v, after_keys);
	}
	r = li_read_shaped(c, v, "gamma", 1, l->cfg.d_model, NULL, "d_model", dflt, gamma);
out:
	path_set(c, old);
	return r;
}

/* A sandwich block's ln1_after and ln2_after (with an FFN), at block.ln1_after.gamma, block.ln2_after.gamma. */
int li_gemma_block_norms(Ctx *c, const cJSON *b, Model *l)
{
	Block *blk = &l->lp.block;

	if (!blk->sandwich)
		return 0;
	if (read_after_norm(c, b, "ln1_after", l, &blk->ln1_after_gamma) != 0 ||
	    (blk->has_ffn && read_after_norm(c, b, "ln2_after", l, &blk->ln2_after_gamma) != 0))
		return -1;
	return 0;
}

/*
 * "embed_scale": true (Gemma's normalizer, √d_model: Gemma2Model.forward's
 * `hidden_states * normalizer` with normalizer = hidden_size**0.5 in the
 * model's dtype; here the double nearest √d_model), a number s > 0 (bfloat16's
 * 55.5 for √3072 = 55.4256…, say), or false: X = input·s before PE and layer 0.
 */
static int read_embed_scale(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *v = get(root, "embed_scale");
	size_t old;
	int r = 0;

	l->cfg.embed_scale = 0.0;
	l->cfg.embed_scale_sqrt = 0;
	if (v == NULL || cJSON_IsFalse(v))
		return 0;
	old = path_key(c, "embed_scale");
	if (cJSON_IsTrue(v)) {
		l->cfg.embed_scale_sqrt = 1; /* the number once d_model is known: li_gemma_check */
		l->cfg.embed_scale = 1.0;
	} else if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble > 0) {
		l->cfg.embed_scale = v->valuedouble;
	} else {
		r = fail(c, _("expected true (X = input\u00b7\u221ad_model, Gemma's normalizer), a number > 0 (the factor), or "
		              "false, got %s"), got(v).s);
	}
	path_set(c, old);
	return r;
}

/* true for √d_model, else its number; a compare variant that drops the lesson's says false. */
static int write_embed_scale(cJSON *o, const Model *l, const Model *top)
{
	if (l->cfg.embed_scale_sqrt)
		return cJSON_AddTrueToObject(o, "embed_scale") == NULL ? -1 : 0;
	if (l->cfg.embed_scale > 0.0)
		return li_put(o, "embed_scale", jw_number(l->cfg.embed_scale));
	return top != NULL && top->cfg.embed_scale > 0.0 && !cJSON_AddFalseToObject(o, "embed_scale") ? -1 : 0;
}

/*
 * Gemma's top-level key, one table (lesson_keys.h). Its other keys belong to
 * objects of other keys and are read with them: QK-norm's "kind" with
 * "qk_norm" (lesson_qknorm.c), the sandwich norms with "block"
 * (lesson_block.c: li_gemma_block_settings, li_gemma_block_norms).
 */
const LessonKey li_gemma_keys[] = {
	{ .name = "embed_scale", .kind = LK_CUSTOM, .where = LK_TOP, .read = read_embed_scale, .write = write_embed_scale },
	{ .name = NULL },
};
