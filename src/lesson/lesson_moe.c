/*
 * lesson_moe.c: a block's mixture-of-experts FFN (issue 23 §7; model.h:
 * MoeParams; engine/variants/moe.c), as Mixtral and Qwen3-MoE compute it:
 *
 *   "ffn": {"kind": "moe", "router": d_model × E, "top_k": k, "norm_topk_prob": true,
 *           "experts": [{"W_1": d_model × d_ff, "W_3": d_model × d_ff, "W_2": d_ff × d_model}, …]}
 *
 * With "shared_expert": {"W_1": d_model × s, "W_3": d_model × s, "W_2": s × d_model,
 * "gate": d_model × 1} (Qwen2-MoE's), ffn_out adds σ(x·gate) times that SwiGLU
 * of every token.
 * The experts are SwiGLU FFNs without biases ("activation", if given, is
 * "swiglu"); d_ff is the first expert's W_1's columns and every expert has
 * it. The settings are read with the block's (li_moe_settings: E, d_ff,
 * top_k), the numbers with the block's matrices (li_moe_matrices), stacked
 * side by side as MoeParams keeps them.
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <stdio.h>
#include <string.h>

static const char *const moe_keys[] = { "kind", "activation", "router", "top_k", "norm_topk_prob", "experts",
	                                "shared_expert", "gpt_oss", "router_bias", "scoring_func", "n_group", "topk_group",
	                                "routed_scaling_factor", "e_score_correction_bias", NULL };
static int read_router_v3(Ctx *c, const cJSON *ffn, MoeParams *p);
static const char *const shared_keys[] = { "W_1", "W_3", "W_2", "gate", NULL };
static const char *const expert_keys[] = { "W_1", "W_3", "W_2", NULL };

static int gptoss_settings(Ctx *c, const cJSON *ffn, Model *l);
static int gptoss_matrices(Ctx *c, const cJSON *ffn, Model *l);
static int gptoss_expert(Ctx *c, const cJSON *o, Model *l, int e);

int li_moe_settings(Ctx *c, const cJSON *ffn, Model *l)
{
	static const char *const kinds[] = { "dense", "moe", NULL };
	MoeParams *p = &l->lp.block.moe;
	const cJSON *ex = get(ffn, "experts");
	size_t old = c->pathlen;
	long long k = 0;
	int kind = 0, act = 2;
	char expect[96];
	MatSrc w1;

	if (key_choice(c, ffn, "kind", kinds, &kind) != 0)
		return -1;
	if (kind == 0)
		return 0;
	if (refuse_unknown_keys(c, ffn, moe_keys, _("mixture-of-experts key")) != 0)
		return -1;
	if (gptoss_settings(c, ffn, l) != 0) /* "gpt_oss": gpt-oss's router and experts (below) */
		return -1;
	{
		static const char *const acts[] = { "relu", "gelu", "swiglu", "gelu_tanh", "gelu_new", NULL };
		if (key_choice(c, ffn, "activation", acts, &act) != 0)
			return -1;
		if (act != 2) {
			path_key(c, "activation");
			fail(c, "%s", _("a mixture of experts here has SwiGLU experts, as Mixtral's and Qwen3-MoE's: \"swiglu\""));
			goto bad;
		}
	}
	path_key(c, "experts");
	if (!cJSON_IsArray(ex) || cJSON_GetArraySize(ex) < 1 || cJSON_GetArraySize(ex) > LESSON_MAX_EXPERTS) {
		if (cJSON_IsArray(ex))
			fail(c, _("expected a list of 1 to %d experts (LESSON_MAX_EXPERTS), got %d"), LESSON_MAX_EXPERTS,
			     cJSON_GetArraySize(ex));
		else
			fail(c,
			     _("expected a list of 1 to %d experts, each {\"W_1\": \u2026, \"W_3\": \u2026, \"W_2\": \u2026}, got "
			       "%s"),
			     LESSON_MAX_EXPERTS, ex == NULL ? _("nothing") : got(ex).s);
		goto bad;
	}
	p->experts = cJSON_GetArraySize(ex);
	path_append(c, "[0]");
	if (!cJSON_IsObject(cJSON_GetArrayItem(ex, 0)) || get(cJSON_GetArrayItem(ex, 0), "W_1") == NULL) {
		fail(c, "%s",
		     _("expected an object {\"W_1\": d_model \u00d7 d_ff, \"W_3\": d_model \u00d7 d_ff, \"W_2\": d_ff \u00d7 "
		       "d_model}"));
		goto bad;
	}
	if (li_read_matsrc(c, cJSON_GetArrayItem(ex, 0), "W_1", &LIM_DIM_DIM, &w1) != 0)
		goto bad;
	path_set(c, old);
	snprintf(expect, sizeof expect, _("a whole number from 1 to %d (the experts)"), p->experts);
	k = p->experts < 2 ? 1 : 2;
	if (key_whole(c, ffn, "top_k", 1, p->experts, expect, &k) != 0)
		goto bad;
	p->top_k = (int)k;
	p->norm_topk_prob = !p->gptoss; /* gpt-oss's softmax is over the chosen: nothing to renormalise */
	if (jr_key_bool(c, ffn, "norm_topk_prob", 0, &p->norm_topk_prob) != 0 || read_router_v3(c, ffn, p) != 0)
		goto bad;
	if (get(ffn, "shared_expert") != NULL) { /* Qwen2-MoE's shared expert: its width from its W_1 */
		const cJSON *sh = get(ffn, "shared_expert");
		MatSrc s1;
		path_key(c, "shared_expert");
		if (!cJSON_IsObject(sh) || get(sh, "W_1") == NULL) {
			fail(c, "%s", _("expected an object {\"W_1\": d_model \u00d7 s, \"W_3\": d_model \u00d7 s, \"W_2\": s \u00d7 d_model, \"gate\": d_model \u00d7 1}"));
			goto bad;
		}
		if (refuse_unknown_keys(c, sh, shared_keys, _("shared expert key")) != 0 ||
		    li_read_matsrc(c, sh, "W_1", &LIM_DIM_DIM, &s1) != 0)
			goto bad;
		p->shared_ff = s1.cols;
		path_set(c, old);
	}
	/* every expert's three matrices and the router, before a number is read */
	if ((double)p->experts * (3.0 * l->cfg.d_model * w1.cols + l->cfg.d_model) > (double)LESSON_MAX_NUMBERS) {
		path_key(c, "experts");
		fail(c, _("%d experts of %d \u00d7 %d are over the limit of %ld numbers (LESSON_MAX_NUMBERS)"), p->experts,
		     l->cfg.d_model, w1.cols, (long)LESSON_MAX_NUMBERS);
		goto bad;
	}
	l->lp.block.activation = ACT_SWIGLU;
	l->lp.block.d_ff = w1.cols;
	return 0;
bad:
	path_set(c, old);
	return -1;
}

/* Expert e's matrix key (rows × cols) into columns (or rows, W_2) [e·d_ff, (e + 1)·d_ff) of the stack. */
static int read_expert(Ctx *c, const cJSON *o, const char *key, int rows, int cols, const char *rows_why,
                       const char *cols_why, int e, Mat *stack)
{
	Mat one = { 0 };
	int r = -1;

	if (get(o, key) == NULL) {
		size_t old = path_key(c, key);
		fail(c, "%s", _("missing: each expert needs W_1 and W_3 (d_model \u00d7 d_ff) and W_2 (d_ff \u00d7 d_model)"));
		path_set(c, old);
		return -1;
	}
	if (li_read_shaped(c, o, key, rows, cols, rows_why, cols_why, -1, &one) != 0)
		goto out;
	for (int i = 0; i < rows; i++)
		for (int j = 0; j < cols; j++) {
			if (stack->rows == rows) /* W_1, W_3: side by side */
				MAT_AT(*stack, i, e * cols + j) = MAT_AT(one, i, j);
			else /* W_2: one under the other */
				MAT_AT(*stack, e * rows + i, j) = MAT_AT(one, i, j);
		}
	r = 0;
out:
	mat_free(&one);
	return r;
}

int li_moe_matrices(Ctx *c, const cJSON *ffn, Model *l)
{
	MoeParams *p = &l->lp.block.moe;
	const int D = l->cfg.d_model, F = l->lp.block.d_ff, E = p->experts;
	const cJSON *ex = get(ffn, "experts");
	size_t old = c->pathlen;

	if (get(ffn, "router") == NULL) {
		path_key(c, "router");
		fail(c, "%s", _("missing: the router, d_model \u00d7 experts (one column per expert)"));
		goto bad;
	}
	if (li_read_shaped(c, ffn, "router", D, E, _("d_model, the input's columns"), _("experts, one column per expert"),
	                   -1, &p->W_r) != 0)
		goto bad;
	mat_free(&p->e_bias);
	if (p->scoring == MOE_SCORE_SIGMOID && /* absent: zeros, as DeepseekV3TopkRouter's buffer starts */
	    li_read_shaped(c, ffn, "e_score_correction_bias", 1, E, NULL, _("one per expert"), 0.0, &p->e_bias) != 0)
		goto bad;
	if (mat_alloc(&p->W_1, D, E * F) != 0 || mat_alloc(&p->W_3, D, E * F) != 0 || mat_alloc(&p->W_2, E * F, D) != 0) {
		fail_oom(c);
		goto bad;
	}
	if (p->gptoss && gptoss_matrices(c, ffn, l) != 0)
		goto bad;
	if (p->shared_ff > 0) {
		const cJSON *sh = get(ffn, "shared_expert");
		const int S = p->shared_ff;
		const char *s_why = _("the columns of the shared expert's W_1");
		path_key(c, "shared_expert");
		for (int k = 0; shared_keys[k + 1] != NULL; k++) /* all but the gate: DeepSeek's shared experts have none */
			if (get(sh, shared_keys[k]) == NULL) {
				path_key(c, shared_keys[k]);
				fail(c, "%s", _("missing: the shared expert needs W_1, W_3 (d_model \u00d7 s) and W_2 (s \u00d7 d_model), and a gate (d_model \u00d7 1) if it has one"));
				goto bad;
			}
		if (li_read_shaped(c, sh, "W_1", D, S, "d_model", s_why, -1, &p->S_1) != 0 ||
		    li_read_shaped(c, sh, "W_3", D, S, "d_model", s_why, -1, &p->S_3) != 0 ||
		    li_read_shaped(c, sh, "W_2", S, D, s_why, "d_model", -1, &p->S_2) != 0 ||
		    (get(sh, "gate") != NULL &&
		     li_read_shaped(c, sh, "gate", D, 1, "d_model", _("1: one score per token"), -1, &p->S_gate) != 0))
			goto bad;
		path_set(c, old);
	}
	path_key(c, "experts");
	for (int e = 0; e < E; e++) {
		const cJSON *o = cJSON_GetArrayItem(ex, e);
		size_t at = path_append(c, "[%d]", e);
		if (!cJSON_IsObject(o)) {
			fail(c, _("expected an object {\"W_1\": \u2026, \"W_3\": \u2026, \"W_2\": \u2026}, got %s"), got(o).s);
			goto bad;
		}
		if ((p->gptoss ? gptoss_expert(c, o, l, e) : refuse_unknown_keys(c, o, expert_keys, _("expert key"))) != 0 ||
		    read_expert(c, o, "W_1", D, F, "d_model", _("d_ff, the columns of the first expert's W_1"), e, &p->W_1) !=
		        0 ||
		    read_expert(c, o, "W_3", D, F, "d_model", _("d_ff, the columns of the first expert's W_1"), e, &p->W_3) !=
		        0 ||
		    read_expert(c, o, "W_2", F, D, _("d_ff, the columns of the first expert's W_1"), "d_model", e, &p->W_2) !=
		        0)
			goto bad;
		path_set(c, at);
	}
	path_set(c, old);
	return 0;
bad:
	path_set(c, old);
	return -1;
}

/* ---- gpt-oss's mixture (GptOssTopKRouter, GptOssExperts; engine/variants/moe.c's gpt-oss block) ----
 *
 *   "gpt_oss": true, or {"swiglu_alpha": α (1.702), "swiglu_limit": limit (7.0)}
 *   "router_bias": 1 × E (zeros when absent); each expert's "b_1", "b_3" (1 × d_ff: the gate's and up's biases,
 *   gate_up_proj_bias's even and odd numbers) and "b_2" (1 × d_model, down_proj_bias), zeros when absent.
 *
 * The router takes each row's top_k logits, then a softmax over those alone (norm_topk_prob does not apply:
 * false, or left out); no shared expert.
 */
static const char *const gptoss_keys[] = { "swiglu_alpha", "swiglu_limit", NULL };
static const char *const gptoss_expert_keys[] = { "W_1", "W_3", "W_2", "b_1", "b_3", "b_2", NULL };

static int gptoss_settings(Ctx *c, const cJSON *ffn, Model *l)
{
	MoeParams *p = &l->lp.block.moe;
	const cJSON *v = get(ffn, "gpt_oss");
	size_t old = c->pathlen;

	p->gptoss = 0;
	p->swiglu_alpha = 1.702; /* GptOssExperts: self.alpha = 1.702, self.limit = 7.0 (GptOssConfig's swiglu_limit) */
	p->swiglu_limit = 7.0;
	if (v == NULL || cJSON_IsFalse(v)) {
		if (get(ffn, "router_bias") == NULL)
			return 0;
		path_key(c, "router_bias");
		fail(c, "%s", _("the router's bias goes with gpt-oss's mixture (\"gpt_oss\": true)"));
		return path_set(c, old), -1;
	}
	path_key(c, "gpt_oss");
	if (cJSON_IsObject(v)) {
		if (refuse_unknown_keys(c, v, gptoss_keys, _("gpt_oss key")) != 0 ||
		    jr_key_finite(c, v, "swiglu_alpha", &p->swiglu_alpha) != 0 ||
		    jr_key_above(c, v, "swiglu_limit", 0, 0, 0, &p->swiglu_limit) != 0)
			return path_set(c, old), -1;
	} else if (!cJSON_IsTrue(v)) {
		fail(c, _("expected true, or {\"swiglu_alpha\": 1.702, \"swiglu_limit\": 7.0}, got %s"), got(v).s);
		return path_set(c, old), -1;
	}
	path_set(c, old);
	if (get(ffn, "shared_expert") != NULL || cJSON_IsTrue(get(ffn, "norm_topk_prob"))) {
		const int sh = get(ffn, "shared_expert") != NULL;
		path_key(c, sh ? "shared_expert" : "norm_topk_prob");
		fail(c, "%s", sh ? _("gpt-oss's mixture has no shared expert")
		                 : _("gpt-oss's softmax is over the chosen experts alone: they add to 1, and norm_topk_prob does not apply"));
		return path_set(c, old), -1;
	}
	p->gptoss = 1;
	return 0;
}

/* router_bias (zeros when absent), and the experts' biases allocated as zeros for gptoss_expert to fill. */
static int gptoss_matrices(Ctx *c, const cJSON *ffn, Model *l)
{
	MoeParams *p = &l->lp.block.moe;
	const int D = l->cfg.d_model, F = l->lp.block.d_ff, E = p->experts;

	if (get(ffn, "router_bias") != NULL
	        ? li_read_shaped(c, ffn, "router_bias", 1, E, _("1: one row"), _("experts, one bias per expert"), -1, &p->b_r)
	        : mat_alloc(&p->b_r, 1, E))
		return c->err ? -1 : (fail_oom(c), -1);
	if (mat_alloc(&p->b_1, 1, E * F) != 0 || mat_alloc(&p->b_3, 1, E * F) != 0 || mat_alloc(&p->b_2, E, D) != 0)
		return fail_oom(c), -1;
	return 0;
}

/* Expert e's keys, and its biases (each absent one zeros) into the stacks. */
static int gptoss_expert(Ctx *c, const cJSON *o, Model *l, int e)
{
	MoeParams *p = &l->lp.block.moe;
	const int D = l->cfg.d_model, F = l->lp.block.d_ff;
	const char *const keys[] = { "b_1", "b_3", "b_2" };
	Mat *stack[] = { &p->b_1, &p->b_3, &p->b_2 };

	if (refuse_unknown_keys(c, o, gptoss_expert_keys, _("expert key")) != 0)
		return -1;
	for (int k = 0; k < 3; k++) {
		Mat one = { 0 };
		const int cols = k < 2 ? F : D;
		if (get(o, keys[k]) == NULL)
			continue;
		if (li_read_shaped(c, o, keys[k], 1, cols, _("1: one row"),
		                   k < 2 ? _("d_ff, the columns of the first expert's W_1") : "d_model", -1, &one) != 0)
			return -1;
		for (int j = 0; j < cols; j++)
			if (k < 2)
				MAT_AT(*stack[k], 0, e * F + j) = MAT_AT(one, 0, j);
			else
				MAT_AT(*stack[k], e, j) = MAT_AT(one, 0, j);
		mat_free(&one);
	}
	return 0;
}

/* gpt-oss's keys of a mixture's "ffn" object f, written back (nothing without it). 0, or -1. */
static int write_gptoss(cJSON *f, const Block *b)
{
	const MoeParams *p = &b->moe;
	const int F = b->d_ff, D = p->b_2.cols;
	cJSON *g, *ex = cJSON_GetObjectItemCaseSensitive(f, "experts"), *o;
	int e = 0;

	if (!p->gptoss)
		return 0;
	if ((g = cJSON_AddObjectToObject(f, "gpt_oss")) == NULL || !cJSON_AddNumberToObject(g, "swiglu_alpha", p->swiglu_alpha) ||
	    !cJSON_AddNumberToObject(g, "swiglu_limit", p->swiglu_limit) ||
	    !cJSON_AddItemToObject(f, "router_bias", jw_matrix(&p->b_r)))
		return -1;
	cJSON_ArrayForEach(o, ex) {
		Mat b1 = { 0 }, b3 = { 0 }, b2 = { 0 };
		int bad = mat_alloc(&b1, 1, F) || mat_alloc(&b3, 1, F) || mat_alloc(&b2, 1, D);
		for (int j = 0; !bad && j < F; j++) {
			MAT_AT(b1, 0, j) = MAT_AT(p->b_1, 0, e * F + j);
			MAT_AT(b3, 0, j) = MAT_AT(p->b_3, 0, e * F + j);
		}
		for (int j = 0; !bad && j < D; j++)
			MAT_AT(b2, 0, j) = MAT_AT(p->b_2, e, j);
		bad = bad || !cJSON_AddItemToObject(o, "b_1", jw_matrix(&b1)) || !cJSON_AddItemToObject(o, "b_3", jw_matrix(&b3)) ||
		      !cJSON_AddItemToObject(o, "b_2", jw_matrix(&b2));
		mat_free(&b1);
		mat_free(&b3);
		mat_free(&b2);
		if (bad)
			return -1;
		e++;
	}
	return 0;
}

/* ------------------------------------------------------------ DeepSeek-V3's router */

/*
 * "scoring_func": "sigmoid" and its keys, under config.json's names (DeepseekV3TopkRouter):
 * "n_group" (1), "topk_group" (n_group), "routed_scaling_factor" (1), "e_score_correction_bias"
 * (1 × E, zeros; read with the matrices). Without it the router is a softmax and those keys are refused.
 */
static const char *const v3_keys[] = { "n_group", "topk_group", "routed_scaling_factor", "e_score_correction_bias",
	                               NULL };

static int read_router_v3(Ctx *c, const cJSON *ffn, MoeParams *p)
{
	static const char *const scorings[] = { "softmax", "sigmoid", NULL };
	MoeRouterV3 r = { 1, 1, p->norm_topk_prob, 1.0 };
	int scoring = 0;
	long long g = 1, tg;
	char expect[96], why[192];
	const char *bad;
	size_t old = c->pathlen;

	p->scoring = MOE_SCORE_SOFTMAX, p->n_group = p->topk_group = 1, p->routed_scaling = 1.0;
	if (key_choice(c, ffn, "scoring_func", scorings, &scoring) != 0)
		return -1;
	if (scoring == 0) {
		for (int k = 0; v3_keys[k] != NULL; k++)
			if (get(ffn, v3_keys[k]) != NULL) {
				path_key(c, v3_keys[k]);
				fail(c, "%s", _("this is a key of DeepSeek-V3's sigmoid router: it needs \"scoring_func\": \"sigmoid\""));
				return jr_leave(c, old, -1);
			}
		return 0;
	}
	snprintf(expect, sizeof expect, _("a whole number from 1 to %d (the experts)"), p->experts);
	if (key_whole(c, ffn, "n_group", 1, p->experts, expect, &g) != 0)
		return -1;
	tg = g;
	snprintf(expect, sizeof expect, _("a whole number from 1 to %d (n_group)"), (int)g);
	if (key_whole(c, ffn, "topk_group", 1, (double)g, expect, &tg) != 0 ||
	    jr_key_above(c, ffn, "routed_scaling_factor", 0.0, 0, 0, &r.routed_scaling_factor) != 0)
		return -1;
	r.n_group = (int)g, r.topk_group = (int)tg;
	if (moe_router_deepseek_v3(p, &r) != 0) /* as a model loader sets it; e_bias zeros until li_moe_matrices reads it */
		return fail_oom(c);
	if ((bad = moe_router_fault(p, why, sizeof why)) != NULL) {
		path_key(c, bad);
		fail(c, "%s", why);
		return jr_leave(c, old, -1);
	}
	return 0;
}

/* DeepSeek-V3's router keys into a mixture's "ffn" object f (nothing for a softmax router): 0, or -1 out of memory. */
static int write_router(cJSON *f, const MoeParams *p)
{
	if (p->scoring != MOE_SCORE_SIGMOID)
		return 0;
	if (!cJSON_AddStringToObject(f, "scoring_func", "sigmoid") || !cJSON_AddNumberToObject(f, "n_group", p->n_group) ||
	    !cJSON_AddNumberToObject(f, "topk_group", p->topk_group) ||
	    !cJSON_AddItemToObject(f, "routed_scaling_factor", jw_number(p->routed_scaling)))
		return -1;
	cJSON *b = jw_matrix(&p->e_bias);
	if (b == NULL || !cJSON_AddItemToObject(f, "e_score_correction_bias", b)) {
		cJSON_Delete(b);
		return -1;
	}
	return 0;
}

/* A mixture of experts' "ffn" into the block's object bj: kind, router, top_k, norm_topk_prob and each expert's W_1,
 * W_3, W_2 (written with the block's row, lesson_block.c, as it is read with it). */
int li_moe_write(cJSON *bj, const Block *b)
{
	const MoeParams *p = &b->moe;
	const int F = b->d_ff, D = p->W_r.rows;
	cJSON *f = cJSON_CreateObject(), *ex;

	if (li_put(bj, "ffn", f) != 0 || !cJSON_AddStringToObject(f, "kind", "moe") ||
	    !cJSON_AddStringToObject(f, "activation", "swiglu") || li_put(f, "router", jw_matrix(&p->W_r)) != 0 ||
	    !cJSON_AddNumberToObject(f, "top_k", p->top_k) ||
	    !cJSON_AddBoolToObject(f, "norm_topk_prob", p->norm_topk_prob) ||
	    write_router(f, p) != 0 || (ex = cJSON_AddArrayToObject(f, "experts")) == NULL)
		return -1;
	if (p->shared_ff > 0) {
		cJSON *sh = cJSON_CreateObject();
		if (li_put(f, "shared_expert", sh) != 0 || li_put(sh, "W_1", jw_matrix(&p->S_1)) != 0 ||
		    li_put(sh, "W_3", jw_matrix(&p->S_3)) != 0 || li_put(sh, "W_2", jw_matrix(&p->S_2)) != 0 ||
		    (!mat_empty(&p->S_gate) && li_put(sh, "gate", jw_matrix(&p->S_gate)) != 0))
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
		bad = bad || li_put(o, "W_1", jw_matrix(&w1)) != 0 || li_put(o, "W_3", jw_matrix(&w3)) != 0 ||
		      li_put(o, "W_2", jw_matrix(&w2)) != 0;
		mat_free(&w1);
		mat_free(&w2);
		mat_free(&w3);
		if (bad)
			return -1;
	}
	return write_gptoss(f, b); /* gpt-oss's keys */
}
