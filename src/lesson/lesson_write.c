/*
 * lesson_write.c: a Lesson written back as a lesson file (lessons/FORMAT.md),
 * the reader's inverse: what `save` writes. Every key concrete (generated
 * matrices as their numbers, settings with their defaults written out,
 * every number exact through jsonwrite.h), so that it loads back as the
 * same lesson and computes to the same --dump; a stack's layers, an
 * encoder–decoder's parts, the steps and the compare variant as the
 * lesson has them. Pure: no files; the caller writes the result
 * (fileio_write_atomic).
 */
#include "lesson/lesson_write.h"
#include "lesson/lesson_keys.h"
#include "base/jsonwrite.h"

#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

static cJSON *json_text(const Text *t)
{
	cJSON *o;
	int i;

	if (t->count == 1 && strcmp(t->v[0].lang, "en") == 0)
		return cJSON_CreateString(t->v[0].s);
	o = cJSON_CreateObject();
	for (i = 0; o != NULL && i < t->count; i++)
		if (!cJSON_AddStringToObject(o, t->v[i].lang, t->v[i].s)) {
			cJSON_Delete(o);
			return NULL;
		}
	return o;
}

/* Add item under key; 0, or -1 (item freed) when it is NULL or cannot be added. */
static int put(cJSON *o, const char *key, cJSON *item)
{
	if (item == NULL || !cJSON_AddItemToObject(o, key, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

static int put_text(cJSON *o, const char *key, const Text *t)
{
	return text_empty(t) ? 0 : put(o, key, json_text(t));
}

static cJSON *json_cell(const CellRef *c)
{
	cJSON *o = cJSON_CreateObject();
	if (o == NULL || !cJSON_AddStringToObject(o, "matrix", c->matrix) || !cJSON_AddNumberToObject(o, "head", c->head) ||
	    !cJSON_AddNumberToObject(o, "row", c->row) || !cJSON_AddNumberToObject(o, "col", c->col)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *json_quiz(const Quiz *q)
{
	cJSON *o = cJSON_CreateObject(), *ch;
	int i;

	if (o == NULL || put_text(o, "question", &q->question) != 0)
		goto fail;
	if (q->nchoices > 0) {
		if ((ch = cJSON_AddArrayToObject(o, "choices")) == NULL)
			goto fail;
		for (i = 0; i < q->nchoices; i++) {
			cJSON *c = json_text(&q->choices[i]);
			if (c == NULL || !cJSON_AddItemToArray(ch, c)) {
				cJSON_Delete(c);
				goto fail;
			}
		}
		if (!cJSON_AddNumberToObject(o, "answer", q->answer_choice))
			goto fail;
	} else if (put(o, "answer", json_cell(&q->answer_cell)) != 0 || put(o, "tolerance", jw_number(q->tolerance)) != 0)
		goto fail;
	if (put_text(o, "hint", &q->hint) != 0)
		goto fail;
	if (q->nhides > 0) {
		const char *names[LESSON_MAX_HIDES];
		for (i = 0; i < q->nhides; i++)
			names[i] = q->hides[i];
		if (put(o, "hides", cJSON_CreateStringArray(names, q->nhides)) != 0)
			goto fail;
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

static cJSON *json_steps(const Lesson *l)
{
	cJSON *a = cJSON_CreateArray();
	int i;

	for (i = 0; a != NULL && i < l->nsteps; i++) {
		const Step *st = &l->steps[i];
		cJSON *o = cJSON_CreateObject();
		if (o == NULL || !cJSON_AddItemToArray(a, o)) {
			cJSON_Delete(o);
			goto fail;
		}
		if (!cJSON_AddStringToObject(o, "stage", stage_name(st->stage)) ||
		    (st->encoder && !cJSON_AddTrueToObject(o, "encoder")) ||
		    (st->layer > 0 && !cJSON_AddNumberToObject(o, "layer", st->layer)) ||
		    !cJSON_AddNumberToObject(o, "head", st->head) ||
		    put_text(o, "text", &st->text) != 0 || put_text(o, "then", &st->then) != 0 || (st->has_focus && put(o, "focus", json_cell(&st->focus)) != 0) ||
		    (st->has_quiz && put(o, "quiz", json_quiz(&st->quiz)) != 0) ||
		    (st->compare >= 0 && !cJSON_AddBoolToObject(o, "compare", st->compare)) ||
		    (st->t >= 0 && !cJSON_AddNumberToObject(o, "t", st->t)) ||
		    (st->tile_q >= 0 && put(o, "tile", cJSON_CreateIntArray((const int[]){ st->tile_q, st->tile_k }, 2)) != 0))
			goto fail;
	}
	return a;
fail:
	cJSON_Delete(a);
	return NULL;
}

/* A layer's own keys (format 2), p (a layer of m, or m's own, written at `at`): biases and the tables' (lesson_keys.h:
 * its block, with the stack's final norm at the top level, …). */
static int json_layer_keys(cJSON *o, const LayerParams *p, const Model *m, LkAt at)
{
	const Model *top = at == LK_AT_TOP ? m : NULL;

	if ((!mat_empty(&p->b_q) && put(o, "b_q", jw_flat(&p->b_q)) != 0) ||
	    (!mat_empty(&p->b_k) && put(o, "b_k", jw_flat(&p->b_k)) != 0) ||
	    (!mat_empty(&p->b_v) && put(o, "b_v", jw_flat(&p->b_v)) != 0) ||
	    (!mat_empty(&p->b_o) && put(o, "b_o", jw_flat(&p->b_o)) != 0))
		return -1;
	if (top == NULL && p->rope_off && !cJSON_AddFalseToObject(o, "rope")) /* a NoPE layer */
		return -1;
	/* the tables' (lesson_keys.h): QK-norm's weights, the sinks, W_gate, Gated DeltaNet, the block, … each layer's own */
	return li_keys_write_layer(o, p, m, at);
}

static int json_modern_keys(cJSON *o, const Model *l, const Model *top);

/* "backward": the target or dOutput (nothing without one). 0, or -1 out of memory. */
static int json_backward(cJSON *o, const Model *l)
{
	cJSON *b;

	if (l->cfg.backward == BACKWARD_NONE)
		return 0;
	b = cJSON_CreateObject();
	return put(o, "backward", b) != 0 ||
	               put(b, l->cfg.backward == BACKWARD_TARGET ? "target" : "dOutput", jw_matrix(&l->cfg.target)) != 0
	               ? -1
	               : 0;
}

/* A layer's attention weights as "layers" (and a decoder's "self" and "cross") write them. */
static int json_layer_weights(cJSON *j, const LayerParams *y, ScoreKind score)
{
	return !cJSON_AddNumberToObject(j, "heads", y->heads) ||
	       ((!y->mla.on || !mat_empty(&y->W_q)) && put(j, "W_q", jw_matrix(&y->W_q)) != 0) ||
	       /* MLA (lesson_mla.c's table) has no W_k, W_v */
	       (!y->mla.on && (put(j, "W_k", jw_matrix(&y->W_k)) != 0 || put(j, "W_v", jw_matrix(&y->W_v)) != 0)) ||
	       (!mat_empty(&y->W_o) && put(j, "W_o", jw_matrix(&y->W_o)) != 0) ||
	       (score == SCORE_ADDITIVE && put(j, "w_e", jw_flat(&y->w_e)) != 0)
	               ? -1
	               : 0;
}

static int put_mask(cJSON *o, const LayerOwn *l);

/* Format 2's keys of the whole lesson: its own layer keys, "layers" written out whole, "backward".
 * top: the lesson whose compare variant l is (NULL for the lesson itself). */
static int json_v2_keys(cJSON *o, const Model *l, const Model *top)
{
	if (json_layer_keys(o, &l->lp, l, LK_AT_TOP) != 0 || json_modern_keys(o, l, top) != 0)
		return -1;
	if (l->nlayers > 0) {
		cJSON *layers = cJSON_CreateArray();
		if (put(o, "layers", layers) != 0)
			return -1;
		for (int i = 0; i < l->nlayers; i++) {
			cJSON *j = cJSON_CreateObject();
			const LayerParams *p = model_layer_params_const(l, i);
			if (j == NULL || !cJSON_AddItemToArray(layers, j) || json_layer_weights(j, p, l->cfg.score) != 0 ||
			    json_layer_keys(j, p, l, LK_AT_STACK) != 0 ||
			    (l->layer[i].own.mask_own && put_mask(j, &l->layer[i].own) != 0) ||
			    (l->layer[i].own.rope_own && li_write_layer_rope(j, &l->layer[i].own) != 0))
				return -1;
		}
	}
	return json_backward(o, l);
}

/* One mask as the lesson format writes it: "none", "causal", {"padding": …}, {"window": w} or a matrix. */
static cJSON *json_mask(MaskKind kind, int window, const Mat *m)
{
	cJSON *o;

	switch (kind) {
	case MASK_CAUSAL: return cJSON_CreateString("causal");
	case MASK_MATRIX: return jw_matrix(m);
	case MASK_PADDING:
	case MASK_WINDOW:
		o = cJSON_CreateObject();
		if (o != NULL && (kind == MASK_PADDING ? put(o, "padding", jw_flat(m)) != 0
		                                       : !cJSON_AddNumberToObject(o, "window", window))) {
			cJSON_Delete(o);
			return NULL;
		}
		return o;
	default: return cJSON_CreateString("none");
	}
}

/* "mask": one mask, or a list (a layer's own, or the model's: model_layer_own_of). 0, or -1 out of memory. */
static int put_mask(cJSON *o, const LayerOwn *l)
{
	if (l->mask == MASK_LIST) {
		cJSON *list = cJSON_CreateArray();
		if (put(o, "mask", list) != 0)
			return -1;
		for (int i = 0; i < l->nmasks; i++) {
			cJSON *one = json_mask(l->masks[i].kind, l->masks[i].window, &l->masks[i].matrix);
			if (one == NULL || !cJSON_AddItemToArray(list, one)) {
				cJSON_Delete(one);
				return -1;
			}
		}
		return 0;
	}
	return put(o, "mask", json_mask(l->mask, l->window, &l->mask_matrix));
}

/*
 * A compare variant (top: its lesson) inherits every key it does not give, so
 * a variant that turns RoPE, ALiBi, decoding or the tiles off says so: "rope": false, …
 * (without it the saved variant would be read back with the lesson's rotation):
 * the tables' writers (lesson_keys.h) do.
 */
static int json_modern_keys(cJSON *o, const Model *l, const Model *top)
{
	/* the tables' settings (lesson_keys.h: soft-capping, the LM head, …; a compare variant that drops the lesson's
	 * says 0 or false) */
	return li_keys_write_model(o, l, top);
}

static int json_compute_keys(cJSON *o, const Model *l, int version, const Model *top)
{
	LayerOwn own;

	if (put(o, "tokens", cJSON_CreateStringArray((const char *const *)l->cfg.tokens, l->cfg.n)) != 0 ||
	    put(o, "X", jw_matrix(&l->cfg.input)) != 0 ||
	    !cJSON_AddStringToObject(o, "positional", l->cfg.positional == POS_SINUSOIDAL ? "sinusoidal" : l->cfg.positional == POS_LEARNED ? "learned" : "none") ||
	    (l->cfg.positional == POS_LEARNED && put(o, "PE", jw_matrix(&l->cfg.pe_learned)) != 0))
		return -1;
	if (l->cfg.has_source) {
		cJSON *src = cJSON_CreateObject();
		if (put(o, "source", src) != 0 ||
		    put(src, "tokens", cJSON_CreateStringArray((const char *const *)l->cfg.source_tokens, l->cfg.m)) != 0 ||
		    put(src, "X", jw_matrix(&l->cfg.source_input)) != 0)
			return -1;
	}
	if (!cJSON_AddNumberToObject(o, "heads", l->lp.heads) ||
	    ((!l->lp.mla.on || !mat_empty(&l->lp.W_q)) && put(o, "W_q", jw_matrix(&l->lp.W_q)) != 0) ||
	    (!l->lp.mla.on && (put(o, "W_k", jw_matrix(&l->lp.W_k)) != 0 || put(o, "W_v", jw_matrix(&l->lp.W_v)) != 0)))
		return -1;
	if (!mat_empty(&l->lp.W_o) && put(o, "W_o", jw_matrix(&l->lp.W_o)) != 0)
		return -1;
	if (!cJSON_AddStringToObject(o, "score", l->cfg.score == SCORE_ADDITIVE ? "additive" : "dot"))
		return -1;
	if (l->cfg.score == SCORE_ADDITIVE && put(o, "w_e", jw_flat(&l->lp.w_e)) != 0)
		return -1;
	if (l->cfg.scale == SCALE_VALUE ? put(o, "scale", jw_number(l->cfg.scale_value)) != 0
	                            : !cJSON_AddBoolToObject(o, "scale", l->cfg.scale == SCALE_SQRT_DK))
		return -1;
	model_layer_own_of(&l->cfg, &own);
	if (put_mask(o, &own) != 0)
		return -1;
	if (l->cfg.mask_fill_inf ? !cJSON_AddStringToObject(o, "mask_fill", "-inf")
	                     : put(o, "mask_fill", jw_number(l->cfg.mask_fill)) != 0)
		return -1;
	return version >= 2 ? json_v2_keys(o, l, top) : 0;
}

/* Item `from` of o under the key `to` (nothing when o has no `from`). 0, or -1 out of memory. */
static int rename_key(cJSON *o, const char *from, const char *to)
{
	cJSON *it = cJSON_DetachItemFromObjectCaseSensitive(o, from);
	return it == NULL ? 0 : put(o, to, it);
}

/*
 * One attention of a decoder layer as "self" or "cross" give it: heads,
 * weights, biases and its own mask; its link's block is handed back in
 * *block (NULL without one) for the layer's block.
 */
static cJSON *json_attn_part(const Model *l, int i, cJSON **block)
{
	cJSON *j = cJSON_CreateObject();

	*block = NULL;
	if (j == NULL || json_layer_weights(j, model_layer_params_const(l, i), l->cfg.score) != 0 ||
	    json_layer_keys(j, model_layer_params_const(l, i), l, LK_AT_PART) != 0 ||
	    put_mask(j, &l->layer[i].own) != 0) {
		cJSON_Delete(j);
		return NULL;
	}
	*block = cJSON_DetachItemFromObjectCaseSensitive(j, "block");
	return j;
}

/*
 * Decoder layer k of an encoder–decoder (links 2k and 2k + 1) as the format
 * writes it: {"self", "cross", "block"}, the block holding the self link's
 * ln1 and the cross link's norms as ln2 and ln3, with its FFN.
 */
static cJSON *json_dec_layer(const Model *l, int k)
{
	cJSON *j = cJSON_CreateObject(), *sb = NULL, *cb = NULL;
	int ok = j != NULL && put(j, "self", json_attn_part(l, 2 * k, &sb)) == 0 &&
	         put(j, "cross", json_attn_part(l, 2 * k + 1, &cb)) == 0;

	if (ok && cb != NULL) {
		cJSON *ln1;
		ok = rename_key(cb, "ln2", "ln3") == 0 && rename_key(cb, "ln1", "ln2") == 0;
		if (ok && sb != NULL && (ln1 = cJSON_DetachItemFromObjectCaseSensitive(sb, "ln1")) != NULL)
			ok = put(cb, "ln1", ln1) == 0;
		if (ok) {
			ok = put(j, "block", cb) == 0;
			cb = NULL;
		}
	}
	cJSON_Delete(sb);
	cJSON_Delete(cb);
	if (!ok) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/*
 * An encoder–decoder's keys (the lesson's or its compare variant's): the
 * decoder's tokens, X and positions, the settings every attention shares,
 * "encoder" (a stack lesson's keys without those settings), each decoder
 * layer, the top level's block (layer 0's, with the decoder's final norm)
 * and "backward".
 */
static int json_encdec_keys(cJSON *o, const Model *l, int version)
{
	static const char *const shared[] = { "score", "scale", "mask_fill", NULL };
	cJSON *enc = cJSON_CreateObject(), *layers, *blk;

	if (put(o, "encoder", enc) != 0 || json_compute_keys(enc, l->encoder, version, NULL) != 0)
		return -1;
	for (int i = 0; shared[i] != NULL; i++) { /* the top level's, for the encoder too */
		cJSON *it = cJSON_DetachItemFromObjectCaseSensitive(enc, shared[i]);
		if (it != NULL && put(o, shared[i], it) != 0)
			return -1;
	}
	if (put(o, "tokens", cJSON_CreateStringArray((const char *const *)l->cfg.tokens, l->cfg.n)) != 0 ||
	    put(o, "X", jw_matrix(&l->cfg.input)) != 0 ||
	    !cJSON_AddStringToObject(o, "positional", l->cfg.positional == POS_SINUSOIDAL ? "sinusoidal" : l->cfg.positional == POS_LEARNED ? "learned" : "none") ||
	    put(o, "layers", layers = cJSON_CreateArray()) != 0)
		return -1;
	for (int k = 0; k < l->nlayers / 2; k++) {
		cJSON *j = json_dec_layer(l, k);
		if (j == NULL || !cJSON_AddItemToArray(layers, j)) {
			cJSON_Delete(j);
			return -1;
		}
	}
	blk = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(layers, 0), "block"), 1);
	if (blk != NULL && (put(o, "block", blk) != 0 ||
	                    (l->cfg.has_final_norm && li_put_norm(blk, "final_norm", &l->cfg.final_gamma, &l->cfg.final_beta) != 0)))
		return -1;
	return json_backward(o, l);
}

/*
 * A copy of l whose real model's weights left in the file (model.h:
 * LayerParams.file) are doubles of its own, to be written; NULL when l has
 * none (or out of memory: *oom set).
 */
static Lesson *with_file_weights(const Lesson *l, int *oom)
{
	Lesson *c;
	int any = 0;

	*oom = 0;
	for (int i = 0; i < model_layers(&l->model); i++)
		any |= model_layer_params_const(&l->model, i)->files != 0;
	if (!any)
		return NULL;
	if ((c = lesson_clone(l)) == NULL) {
		*oom = 1;
		return NULL;
	}
	for (int i = 0; i < model_layers(&c->model); i++)
		if (layer_params_own(model_layer_params(&c->model, i)) != 0) {
			lesson_free(c);
			*oom = 1;
			return NULL;
		}
	return c;
}

char *lesson_write_json(const Lesson *l, char **err)
{
	cJSON *o;
	char *s;
	int oom;
	Lesson *owned = with_file_weights(l, &oom);

	*err = NULL;
	if (owned != NULL || oom) {
		s = oom ? NULL : lesson_write_json(owned, err);
		if (oom)
			*err = strdup("out of memory writing the lesson");
		lesson_free(owned);
		return s;
	}
	o = cJSON_CreateObject();
	if (o == NULL || !cJSON_AddNumberToObject(o, "attnviz", l->version >= 2 ? 2 : 1) ||
	    put_text(o, "title", &l->title) != 0 || put_text(o, "summary", &l->summary) != 0 ||
	    (l->encoder != NULL ? json_encdec_keys(o, &l->model, l->version) : json_compute_keys(o, &l->model, l->version, NULL)) != 0)
		goto oom;
	if (l->compare != NULL) {
		cJSON *c = cJSON_CreateObject();
		if (put(o, "compare", c) != 0 || put_text(c, "label", &l->compare_label) != 0 ||
		    (l->compare->encoder != NULL ? json_encdec_keys(c, &l->compare->model, l->compare->version)
		                                 : json_compute_keys(c, &l->compare->model, l->compare->version, &l->model)) != 0)
			goto oom;
	}
	if (l->nsteps > 0 && put(o, "steps", json_steps(l)) != 0)
		goto oom;
	s = jw_print(o);
	if (s == NULL)
		*err = strdup("out of memory writing the lesson");
	return s;
oom:
	cJSON_Delete(o);
	*err = strdup("out of memory writing the lesson");
	return NULL;
}
