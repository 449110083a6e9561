/*
 * lesson_qknorm.c: QK-norm's key (issue 23 §1), one table (lesson_keys.h):
 * "qk_norm"'s setting and eps with the settings; its weights, each layer's
 * own, with the matrices, and written back per layer with the model's eps.
 * Llama 4's weightless form after RoPE ("kind": "l2") has none: its
 * setting is written with the model's (write_qk_norm).
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <math.h>
#include <string.h>

static const char *const qk_norm_keys[] = { "q", "k", "eps", "over", "kind", NULL };

/* "eps" of "qk_norm": a number ≥ 0 (1e-6 when absent), at the path qk_norm. */
static int read_qk_eps(Ctx *c, const cJSON *v, Model *l)
{
	return jr_key_above(c, v, "eps", 0, 1, 0, &l->cfg.qk_norm_eps);
}

/*
 * "qk_norm": {"kind": "l2", "eps": 1e-5}: Llama 4's weightless QK-norm AFTER
 * RoPE (modeling_llama4.py: Llama4TextL2Norm, made only where the layer uses
 * RoPE; engine/variants/qkl2.c), every layer's. No weights, no "over", and
 * the lesson needs "rope" (a NoPE layer, "rope": false, has none).
 */
static int read_qk_l2(Ctx *c, const cJSON *v, Model *l)
{
	const char *stray = get(v, "q") != NULL ? "q" : get(v, "k") != NULL ? "k" : NULL;

	l->cfg.qk_norm = QK_NORM_NONE;
	l->cfg.qk_norm_plus1 = 0;
	if (stray != NULL) {
		path_key(c, stray);
		return fail(c, _("\"kind\": \"l2\" is Llama 4's QK-norm after RoPE, which has no weights: leave out q and k"));
	}
	if (get(v, "over") != NULL) {
		path_key(c, "over");
		return fail(c, _("\"kind\": \"l2\" normalises each head's d_k numbers (Llama 4): leave out \"over\""));
	}
	if (read_qk_eps(c, v, l) != 0)
		return -1;
	if (!l->cfg.rope) {
		path_key(c, "kind");
		return fail(c, _("\"l2\" is Llama 4's QK-norm after RoPE: this lesson needs \"rope\""));
	}
	l->cfg.qk_norm = QK_NORM_L2;
	return 0;
}

/*
 * "qk_norm": {"q": [d_k numbers], "k": [d_k numbers], "eps": 1e-6, "over": "head"}
 * ("over": "projection", OLMo 2: q has h·d_k numbers and k g·d_k): the
 * setting and its eps now (the weights, one head's width, once the shapes
 * are known: read_qk_weights). Every layer has it when the top level
 * says so; a layer may give weights of its own, and the eps is the top level's.
 */
static int read_qk_norm_setting(Ctx *c, const cJSON *v, Model *l)
{
	size_t old = path_key(c, "qk_norm");
	int r = 0;

	l->cfg.qk_norm_eps = 1e-6;
	if (cJSON_IsObject(v) && cJSON_IsString(get(v, "kind")) && strcmp(get(v, "kind")->valuestring, "l2") == 0) {
		warn_unknown_keys(c, v, qk_norm_keys);
		r = read_qk_l2(c, v, l);
		path_set(c, old);
		return r;
	}
	if (!cJSON_IsObject(v)) {
		r = fail(c, _("expected {\"q\": [d_k numbers], \"k\": [d_k numbers], \"eps\": 1e-6} (QK-norm's weights), got %s"),
		         got(v).s);
	} else {
		warn_unknown_keys(c, v, qk_norm_keys);
		if (get(v, "q") == NULL || get(v, "k") == NULL) {
			path_key(c, get(v, "q") == NULL ? "q" : "k");
			r = fail(c, _("missing: QK-norm needs both weights, q and k (d_k numbers each)"));
		} else {
			r = read_qk_eps(c, v, l);
		}
	}
	l->cfg.qk_norm = r == 0 ? QK_NORM_HEAD : QK_NORM_NONE;
	if (r == 0 && li_gemma_qk_kind(c, v, l) != 0) /* Gemma 3's 1 + w (lesson_gemma.c) */
		r = -1;
	if (r == 0 && get(v, "over") != NULL) { /* issue 23 §1: per head (Qwen3) or the whole projection (OLMo 2) */
		const cJSON *o = get(v, "over");
		path_key(c, "over");
		if (cJSON_IsString(o) && strcmp(o->valuestring, "projection") == 0)
			l->cfg.qk_norm = QK_NORM_PROJ;
		else if (!cJSON_IsString(o) || strcmp(o->valuestring, "head") != 0)
			r = fail(c, _("expected \"head\" (each head's d_k numbers, Qwen3) or \"projection\" (the whole row of "
			              "Q and of K, OLMo 2), got %s"), got(o).s);
	}
	path_set(c, old);
	return r;
}


static int read_qk_norm(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *v = get(root, "qk_norm");

	/* false: none (a "compare" variant turns the lesson's off so, as "sinks": false) */
	return v != NULL && !cJSON_IsFalse(v) && read_qk_norm_setting(c, v, l) != 0 ? -1 : 0;
}

/* The weights once the shapes are known: 1 × d_k each, or h·d_k and g·d_k over the projection (OLMo 2), at
 * qk_norm.q and qk_norm.k. */
static int read_qk_weights(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *q = get(root, "qk_norm");
	const int g = l->lp.kv_heads > 0 ? l->lp.kv_heads : l->lp.heads, proj = l->cfg.qk_norm == QK_NORM_PROJ;
	size_t old;
	int r;

	if (l->cfg.qk_norm == QK_NORM_NONE)
		return 0;
	old = path_key(c, "qk_norm");
	r = li_read_shaped(c, q, "q", 1, proj ? l->lp.heads * l->lp.d_k : l->lp.d_k, NULL,
	                   proj ? _("heads \u00d7 d_k, the columns of Q") : _("d_k, one head's columns"), -1, &l->lp.q_norm) != 0 ||
	    li_read_shaped(c, q, "k", 1, proj ? g * l->lp.d_k : l->lp.d_k, NULL,
	                   proj ? _("kv_heads \u00d7 d_k, the columns of K") : _("d_k, one head's columns"), -1, &l->lp.k_norm) != 0;
	path_set(c, old);
	return r ? -1 : 0;
}

/* Each layer's weights, with the model's eps; the form (OLMo 2's "over", Gemma 3's "kind") is the model's setting,
 * written at the top level alone. */
static int write_qk_weights(cJSON *o, const LayerParams *p, const Model *m, LkAt at)
{
	cJSON *q;

	if (mat_empty(&p->q_norm))
		return 0;
	q = cJSON_CreateObject();
	if (li_put(o, "qk_norm", q) != 0 || li_put(q, "q", jw_flat(&p->q_norm)) != 0 ||
	    li_put(q, "k", jw_flat(&p->k_norm)) != 0 || li_put(q, "eps", jw_number(m->cfg.qk_norm_eps)) != 0)
		return -1;
	if (at == LK_AT_TOP && m->cfg.qk_norm == QK_NORM_PROJ && cJSON_AddStringToObject(q, "over", "projection") == NULL)
		return -1;
	if (at == LK_AT_TOP && m->cfg.qk_norm_plus1 && cJSON_AddStringToObject(q, "kind", "rmsnorm_plus1") == NULL)
		return -1;
	return 0;
}

/* Llama 4's form, the model's setting: {"kind": "l2", "eps": ε} (the weighted forms are written with a layer's keys);
 * a compare variant without the lesson's QK-norm says false (it would inherit the lesson's). */
static int write_qk_norm(cJSON *o, const Model *m, const Model *top)
{
	cJSON *q;

	if (m->cfg.qk_norm == QK_NORM_NONE && top != NULL && top->cfg.qk_norm != QK_NORM_NONE)
		return cJSON_AddFalseToObject(o, "qk_norm") == NULL ? -1 : 0;
	if (m->cfg.qk_norm != QK_NORM_L2)
		return 0;
	q = cJSON_CreateObject();
	if (li_put(o, "qk_norm", q) != 0 || cJSON_AddStringToObject(q, "kind", "l2") == NULL ||
	    li_put(q, "eps", jw_number(m->cfg.qk_norm_eps)) != 0)
		return -1;
	return 0;
}

const LessonKey li_qknorm_keys[] = {
	{ .name = "qk_norm", .kind = LK_CUSTOM, .where = LK_TOP | LK_LAYER, .read = read_qk_norm, .write = write_qk_norm,
	  .weights = read_qk_weights, .write_layer = write_qk_weights },
	{ .name = NULL },
};
