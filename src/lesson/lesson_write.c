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

/* The keys that define the computation (everything a "compare" may change). */
/* A norm's {"gamma", "beta"} (β only when it has one). */
/* A mixture of experts' "ffn" (lesson_moe.c): kind, router, top_k, norm_topk_prob and each expert's W_1, W_3, W_2. */
static int json_moe(cJSON *bj, const Block *b)
{
	const MoeParams *p = &b->moe;
	const int F = b->d_ff, D = p->W_r.rows;
	cJSON *f = cJSON_CreateObject(), *ex;

	if (put(bj, "ffn", f) != 0 || !cJSON_AddStringToObject(f, "kind", "moe") ||
	    !cJSON_AddStringToObject(f, "activation", "swiglu") || put(f, "router", jw_matrix(&p->W_r)) != 0 ||
	    !cJSON_AddNumberToObject(f, "top_k", p->top_k) ||
	    !cJSON_AddBoolToObject(f, "norm_topk_prob", p->norm_topk_prob) ||
	    li_moe_write_router(f, p) != 0 || (ex = cJSON_AddArrayToObject(f, "experts")) == NULL)
		return -1;
	if (p->shared_ff > 0) {
		cJSON *sh = cJSON_CreateObject();
		if (put(f, "shared_expert", sh) != 0 || put(sh, "W_1", jw_matrix(&p->S_1)) != 0 ||
		    put(sh, "W_3", jw_matrix(&p->S_3)) != 0 || put(sh, "W_2", jw_matrix(&p->S_2)) != 0 ||
		    (!mat_empty(&p->S_gate) && put(sh, "gate", jw_matrix(&p->S_gate)) != 0))
			return -1;
	}
	for (int e = 0; e < p->experts; e++) {
		cJSON *o = cJSON_CreateObject();
		Mat w1 = { 0 }, w3 = { 0 }, w2 = { 0 };
		int bad = o == NULL || !cJSON_AddItemToArray(ex, o) || mat_alloc(&w1, D, F) || mat_alloc(&w3, D, F) ||
		          mat_alloc(&w2, F, D);
		for (int i = 0; !bad && i < D; i++)
			for (int j = 0; j < F; j++) {
				MAT_AT(w1, i, j) = MAT_AT(p->W_1, i, e * F + j);
				MAT_AT(w3, i, j) = MAT_AT(p->W_3, i, e * F + j);
				MAT_AT(w2, j, i) = MAT_AT(p->W_2, e * F + j, i);
			}
		bad = bad || put(o, "W_1", jw_matrix(&w1)) != 0 || put(o, "W_3", jw_matrix(&w3)) != 0 ||
		      put(o, "W_2", jw_matrix(&w2)) != 0;
		mat_free(&w1);
		mat_free(&w2);
		mat_free(&w3);
		if (bad)
			return -1;
	}
	return li_moe_write_gptoss(f, b); /* gpt-oss's keys (lesson_moe.c) */
}

static int json_norm(cJSON *o, const char *key, const Mat *gamma, const Mat *beta)
{
	cJSON *n = cJSON_CreateObject();

	return put(o, key, n) != 0 || put(n, "gamma", jw_flat(gamma)) != 0 ||
	       (!mat_empty(beta) && put(n, "beta", jw_flat(beta)) != 0);
}

/* A layer's own keys (format 2): biases and its block; the stack's final norm with the top level's block. */
static int json_layer_keys(cJSON *o, const LayerParams *p, const Model *top, double qk_eps)
{
	static const char *const places[] = { "post", "pre", "none", "after" }, *const kinds[] = { "layernorm", "rmsnorm", "rmsnorm_plus1" },
	                         *const acts[] = { "relu", "gelu", "swiglu", "gelu_tanh", "gelu_tanh" }; /* ACT_GEGLU: with W_3 */
	const Block *b = &p->block;
	cJSON *bj;

	if (model_kv_named(p) && !cJSON_AddNumberToObject(o, "kv_heads", p->kv_heads))
		return -1;
	if ((!mat_empty(&p->b_q) && put(o, "b_q", jw_flat(&p->b_q)) != 0) ||
	    (!mat_empty(&p->b_k) && put(o, "b_k", jw_flat(&p->b_k)) != 0) ||
	    (!mat_empty(&p->b_v) && put(o, "b_v", jw_flat(&p->b_v)) != 0) ||
	    (!mat_empty(&p->b_o) && put(o, "b_o", jw_flat(&p->b_o)) != 0))
		return -1;
	if (top == NULL && p->rope_off && !cJSON_AddFalseToObject(o, "rope")) /* a NoPE layer */
		return -1;
	if (!mat_empty(&p->q_norm)) { /* QK-norm: each layer's weights, with the model's eps */
		cJSON *q = cJSON_CreateObject();
		if (put(o, "qk_norm", q) != 0 || put(q, "q", jw_flat(&p->q_norm)) != 0 ||
		    put(q, "k", jw_flat(&p->k_norm)) != 0 || put(q, "eps", jw_number(qk_eps)) != 0)
			return -1;
		/* OLMo 2's form (the model's setting, at the top level): weights as wide as Q's and K's rows */
		if (top != NULL && top->cfg.qk_norm == QK_NORM_PROJ && cJSON_AddStringToObject(q, "over", "projection") == NULL)
			return -1;
		if (top != NULL && top->cfg.qk_norm_plus1 && cJSON_AddStringToObject(q, "kind", "rmsnorm_plus1") == NULL)
			return -1; /* Gemma 3's 1 + w */
	}
	if (li_keys_write_layer(o, p) != 0) /* the tables' matrices (lesson_keys.h): the sinks, W_gate, … each layer's */
		return -1;
	if (!mat_empty(&p->gdn_A_log)) { /* Gated DeltaNet (issue 24 §3): its weights and chunk size */
		cJSON *d = cJSON_CreateObject();
		if (put(o, "gated_deltanet", d) != 0 || put(d, "W_a", jw_matrix(&p->gdn_W_a)) != 0 ||
		    put(d, "W_b", jw_matrix(&p->gdn_W_b)) != 0 || put(d, "A_log", jw_flat(&p->gdn_A_log)) != 0 ||
		    put(d, "dt_bias", jw_flat(&p->gdn_dt_bias)) != 0 || !cJSON_AddNumberToObject(d, "chunk_size", p->gdn_chunk))
			return -1;
		if (p->gdn_mixer && (!cJSON_AddTrueToObject(d, "mixer") || put(d, "conv1d", jw_matrix(&p->gdn_conv)) != 0 ||
		                     put(d, "W_z", jw_matrix(&p->gdn_W_z)) != 0 || put(d, "norm", jw_flat(&p->gdn_norm)) != 0 ||
		                     put(d, "eps", jw_number(p->gdn_eps)) != 0)) /* as the layer's mixer */
			return -1;
		if (p->gdn_v_heads > 0 && !cJSON_AddNumberToObject(d, "v_heads", p->gdn_v_heads)) /* Qwen3-Next's value heads */
			return -1;
	}
	if (!b->present)
		return 0;
	bj = cJSON_CreateObject();
	if (put(o, "block", bj) != 0 || !cJSON_AddStringToObject(bj, "norm", b->sandwich ? "sandwich" : places[b->norm]) ||
	    !cJSON_AddStringToObject(bj, "norm_kind", kinds[b->norm_kind]) || put(bj, "eps", jw_number(b->eps)) != 0)
		return -1;
	if (b->norm != NORM_NONE && (json_norm(bj, "ln1", &b->ln1_gamma, &b->ln1_beta) != 0 ||
	                             (b->has_ffn && json_norm(bj, "ln2", &b->ln2_gamma, &b->ln2_beta) != 0)))
		return -1;
	if (b->sandwich && (json_norm(bj, "ln1_after", &b->ln1_after_gamma, &(Mat){ 0 }) != 0 || /* Gemma's sandwich norms */
	                    (b->has_ffn && json_norm(bj, "ln2_after", &b->ln2_after_gamma, &(Mat){ 0 }) != 0)))
		return -1;
	if (b->has_ffn && b->moe.experts > 0) {
		if (json_moe(bj, b) != 0)
			return -1;
	} else if (b->has_ffn) {
		cJSON *f = cJSON_CreateObject();
		/* a real model's FFN without biases (LLaMA's) leaves them out: absent is 0 */
		if (put(bj, "ffn", f) != 0 || put(f, "W_1", jw_matrix(&b->W_1)) != 0 ||
		    (!mat_empty(&b->b_1) && put(f, "b_1", jw_flat(&b->b_1)) != 0) || put(f, "W_2", jw_matrix(&b->W_2)) != 0 ||
		    (!mat_empty(&b->b_2) && put(f, "b_2", jw_flat(&b->b_2)) != 0) ||
		    (!mat_empty(&b->W_3) && (put(f, "W_3", jw_matrix(&b->W_3)) != 0 ||
		                             (!mat_empty(&b->b_3) && put(f, "b_3", jw_flat(&b->b_3)) != 0))) ||
		    !cJSON_AddStringToObject(f, "activation", acts[b->activation]))
			return -1;
	}
	if (top != NULL && top->cfg.has_final_norm && json_norm(bj, "final_norm", &top->cfg.final_gamma, &top->cfg.final_beta) != 0)
		return -1;
	return 0;
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

static int put_mla(cJSON *o, const LayerParams *lp);

/* A layer's attention weights as "layers" (and a decoder's "self" and "cross") write them. */
static int json_layer_weights(cJSON *j, const LayerParams *y, ScoreKind score)
{
	return !cJSON_AddNumberToObject(j, "heads", y->heads) ||
	       ((!y->mla.on || !mat_empty(&y->W_q)) && put(j, "W_q", jw_matrix(&y->W_q)) != 0) ||
	       (y->mla.on ? put_mla(j, y) != 0 : put(j, "W_k", jw_matrix(&y->W_k)) != 0 || put(j, "W_v", jw_matrix(&y->W_v)) != 0) ||
	       (!mat_empty(&y->W_o) && put(j, "W_o", jw_matrix(&y->W_o)) != 0) ||
	       (score == SCORE_ADDITIVE && put(j, "w_e", jw_flat(&y->w_e)) != 0)
	               ? -1
	               : 0;
}

static int put_mask(cJSON *o, const LayerOwn *l);

/* A layer's own RoPE base: "rope": {"base": b}. 0, or -1 out of memory. */
static int put_layer_rope(cJSON *o, double base)
{
	cJSON *r = cJSON_CreateObject();

	return put(o, "rope", r) != 0 || put(r, "base", jw_number(base)) != 0 ? -1 : 0;
}

/* Format 2's keys of the whole lesson: its own layer keys, "layers" written out whole, "backward".
 * top: the lesson whose compare variant l is (NULL for the lesson itself). */
static int json_v2_keys(cJSON *o, const Model *l, const Model *top)
{
	if (json_layer_keys(o, &l->lp, l, l->cfg.qk_norm_eps) != 0 || json_modern_keys(o, l, top) != 0)
		return -1;
	if (l->nlayers > 0) {
		cJSON *layers = cJSON_CreateArray();
		if (put(o, "layers", layers) != 0)
			return -1;
		for (int i = 0; i < l->nlayers; i++) {
			cJSON *j = cJSON_CreateObject();
			const LayerParams *p = model_layer_params_const(l, i);
			if (j == NULL || !cJSON_AddItemToArray(layers, j) || json_layer_weights(j, p, l->cfg.score) != 0 ||
			    json_layer_keys(j, p, NULL, l->cfg.qk_norm_eps) != 0 ||
			    /* a layer without the top level's Gated DeltaNet (the hybrid's full-attention layer) says so */
			    (!mat_empty(&l->lp.gdn_A_log) && mat_empty(&p->gdn_A_log) && !cJSON_AddFalseToObject(j, "gated_deltanet")) ||
			    (l->layer[i].own.mask_own && put_mask(j, &l->layer[i].own) != 0) ||
			    (l->layer[i].own.rope_own && put_layer_rope(j, l->layer[i].own.rope_base) != 0))
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
/* "mla" (lesson_mla.c): its settings and weights, as the loader reads them. */
static int put_mla(cJSON *o, const LayerParams *lp)
{
	const MlaParams *p = &lp->mla;
	cJSON *m = cJSON_CreateObject();

	if (put(o, "mla", m) != 0 || (p->q_lora_rank > 0 && !cJSON_AddNumberToObject(m, "q_lora_rank", p->q_lora_rank)) ||
	    !cJSON_AddNumberToObject(m, "kv_lora_rank", p->kv_lora_rank) ||
	    !cJSON_AddNumberToObject(m, "qk_nope_head_dim", p->d_nope) ||
	    !cJSON_AddNumberToObject(m, "qk_rope_head_dim", p->d_rope) || !cJSON_AddNumberToObject(m, "v_head_dim", lp->d_v) ||
	    put(m, "rope_theta", jw_number(p->rope_theta)) != 0 || put(m, "eps", jw_number(p->eps)) != 0)
		return -1;
	if (p->q_lora_rank > 0 && (put(m, "W_qa", jw_matrix(&p->W_qa)) != 0 || put(m, "q_a_norm", jw_flat(&p->q_a_norm)) != 0 ||
	                           put(m, "W_qb", jw_matrix(&p->W_qb)) != 0))
		return -1;
	return put(m, "W_kva", jw_matrix(&p->W_kva)) != 0 || put(m, "kv_a_norm", jw_flat(&p->kv_a_norm)) != 0 ||
	               put(m, "W_kvb", jw_matrix(&p->W_kvb)) != 0
	               ? -1
	               : 0;
}

/* "diff_attn" (lesson_diff.c): depth or lambda_init, eps, the λ vectors and subln, as the loader reads them. */
static int put_diff(cJSON *o, const DiffParams *p)
{
	cJSON *d = cJSON_CreateObject();

	if (put(o, "diff_attn", d) != 0 ||
	    (p->depth >= 0 ? put(d, "depth", jw_number(p->depth)) : put(d, "lambda_init", jw_number(p->lambda_init))) != 0)
		return -1;
	return put(d, "eps", jw_number(p->eps)) != 0 || put(d, "lambda_q1", jw_flat(&p->lq1)) != 0 ||
	               put(d, "lambda_k1", jw_flat(&p->lk1)) != 0 || put(d, "lambda_q2", jw_flat(&p->lq2)) != 0 ||
	               put(d, "lambda_k2", jw_flat(&p->lk2)) != 0 || put(d, "subln", jw_flat(&p->subln)) != 0
	               ? -1
	               : 0;
}

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
/* The LM head (issue 21): "vocab" (ids as "#v" when the model gave no tokens), "unembed", "ids", "temperature", "top_k", "logits_row". */
static int json_lm_head(cJSON *o, const Model *l)
{
	const ModelConfig *c = &l->cfg;
	const Mat *u;
	cJSON *v;

	if (c->vocab <= 0)
		return 0;
	if (put(o, "vocab", v = cJSON_CreateArray()) != 0)
		return -1;
	for (int i = 0; i < c->vocab; i++) {
		char id[24];
		snprintf(id, sizeof id, "#%d", i);
		if (!cJSON_AddItemToArray(v, cJSON_CreateString(c->vocab_tokens != NULL ? c->vocab_tokens[i] : id)))
			return -1;
	}
	/* a real model's unembedding (in its file's dtype) written as doubles, as a lesson's */
	u = matview_empty(&c->unembed_view) ? &c->unembed : matview_doubles(&c->unembed_view);
	if (u == NULL || put(o, "unembed", jw_matrix(u)) != 0)
		return -1;
	if (c->ids != NULL) {
		if (put(o, "ids", v = cJSON_CreateArray()) != 0)
			return -1;
		for (int i = 0; i < c->n; i++)
			if (!cJSON_AddItemToArray(v, cJSON_CreateNumber((double)c->ids[i])))
				return -1;
	}
	return put(o, "temperature", jw_number(c->temperature > 0 ? c->temperature : 1.0)) != 0 ||
	               !cJSON_AddNumberToObject(o, "top_k", c->top_k >= 1 ? c->top_k : 10) ||
	               !cJSON_AddNumberToObject(o, "logits_row", c->logits_row >= 0 && c->logits_row < c->n ? c->logits_row : c->n - 1)
	           ? -1
	           : 0;
}

static int json_modern_keys(cJSON *o, const Model *l, const Model *top)
{
	/* Gemma's embedding scale: true for √d_model, else its number; a compare variant that drops it says false */
	if ((l->cfg.embed_scale_sqrt ? !cJSON_AddTrueToObject(o, "embed_scale")
	     : l->cfg.embed_scale > 0.0 ? put(o, "embed_scale", jw_number(l->cfg.embed_scale)) != 0
	     : top != NULL && top->cfg.embed_scale > 0.0 && !cJSON_AddFalseToObject(o, "embed_scale")))
		return -1;
	/* a compare variant that drops the lesson's Gated DeltaNet says false */
	if (top != NULL && !mat_empty(&top->lp.gdn_A_log) && mat_empty(&l->lp.gdn_A_log) &&
	    !cJSON_AddFalseToObject(o, "gated_deltanet"))
		return -1;
	/* the tables' settings (lesson_keys.h: soft-capping, …; a compare variant that drops the lesson's says 0 or false) */
	if (li_keys_write_model(o, l, top) != 0)
		return -1;
	return json_lm_head(o, l);
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
	if (l->lp.mla.on && put_mla(o, &l->lp) != 0) /* multi-head latent attention: no W_k, W_v */
		return -1;
	if (l->lp.diff.on && put_diff(o, &l->lp.diff) != 0) /* differential attention */
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
	    json_layer_keys(j, model_layer_params_const(l, i), NULL, l->cfg.qk_norm_eps) != 0 ||
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
	                    (l->cfg.has_final_norm && json_norm(blk, "final_norm", &l->cfg.final_gamma, &l->cfg.final_beta) != 0)))
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
