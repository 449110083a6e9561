/*
 * lesson_mla.c: a lesson's "mla" (issue 24 §1): multi-head latent attention
 * as DeepSeek-V2/V3 compute it (model.h: MlaParams; engine/variants/mla.c).
 *
 *   "mla": {"q_lora_rank": r (optional), "kv_lora_rank": c, "qk_nope_head_dim": d_nope,
 *           "qk_rope_head_dim": d_rope (even), "v_head_dim": d_v, "rope_theta": 10000, "eps": 1e-6,
 *           "W_qa": d_model × r, "q_a_norm": r, "W_qb": r × heads·(d_nope + d_rope)   (with r)
 *           "W_kva": d_model × (c + d_rope), "kv_a_norm": c, "W_kvb": c × heads·(d_nope + d_v)}
 * with the lesson's "heads", "W_o", and "W_q" (d_model × heads·(d_nope + d_rope)) when there is no r.
 * There is no W_k or W_v. One row of this file's table (lesson_keys.h): the
 * settings are read before the shapes (they give d_k = d_nope + d_rope and
 * d_v), the matrices after, each layer its own.
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <stdio.h>
#include <string.h>

static const char *const mla_keys[] = { "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
	                                "v_head_dim", "rope_theta", "eps", "W_qa", "q_a_norm", "W_qb", "W_kva",
	                                "kv_a_norm", "W_kvb", NULL };

/* Top-level keys an MLA lesson may not have, and why (each refused at its path). */
static const struct {
	const char *key, *why;
} mla_not[] = {
	{ "W_k", N_("MLA's keys come from the latent: [c_KV | k_pe] = x\u00b7W_kva, k_nope = c_KV\u00b7W_kvb (leave out W_k)") },
	{ "W_v", N_("MLA's values come from the latent: v = c_KV\u00b7W_kvb (leave out W_v)") },
	{ "kv_heads", N_("MLA shares its latent between all heads already; it has no kv_heads") },
	{ "rope", N_("MLA turns its own q_pe and k_pe (\"mla\": {\"rope_theta\"}); leave out \"rope\"") },
	{ "qk_norm", N_("not with MLA yet") },
	{ "alibi", N_("not with MLA yet") },
	{ "decode", N_("not with MLA yet: the absorb stage shows what its cache keeps") },
	{ "flash", N_("not with MLA yet") },
	{ "backward", N_("MLA is forward only for now: it has no backward pass (leave out \"backward\")") },
	{ "source", N_("MLA is self-attention here: leave out \"source\"") },
	{ "b_q", N_("not with MLA (DeepSeek's projections have no biases here)") },
	{ "b_k", N_("not with MLA (DeepSeek's projections have no biases here)") },
	{ "b_v", N_("not with MLA (DeepSeek's projections have no biases here)") },
	{ "compare", N_("not with MLA yet") },
};

static int read_mla_settings(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *o = get(root, "mla");
	MlaParams *p = &l->lp.mla;
	size_t old;
	int d_v = 0;

	if (o == NULL)
		return 0;
	old = path_key(c, "mla");
	if (li_stack(c)->part != PART_LAYER) {
		fail(c, _("multi-head latent attention is a decoder's self-attention: not in an encoder\u2013decoder"));
		goto bad;
	}
	if (!cJSON_IsObject(o)) {
		fail(c, _("expected an object {\"kv_lora_rank\": \u2026, \"qk_nope_head_dim\": \u2026, \u2026}, got %s"), got(o).s);
		goto bad;
	}
	if (refuse_unknown_keys(c, o, mla_keys, "\"mla\"") != 0)
		goto bad;
	path_set(c, old);
	for (size_t k = 0; k < sizeof mla_not / sizeof mla_not[0]; k++)
		if (get(root, mla_not[k].key) != NULL && !cJSON_IsFalse(get(root, mla_not[k].key))) {
			path_key(c, mla_not[k].key);
			fail(c, "%s", _(mla_not[k].why));
			goto bad;
		}
	if (l->cfg.score == SCORE_ADDITIVE) {
		path_key(c, "score");
		fail(c, "%s", _("MLA's scores are dot products: q_nope\u00b7k_nope + q_pe\u00b7k_pe"));
		goto bad;
	}
	path_key(c, "mla");
	p->rope_theta = 10000.0;
	p->eps = 1e-6;
	if (li_key_size(c, o, "q_lora_rank", 1, LESSON_MAX_DIM, 0, &p->q_lora_rank) != 0 ||
	    li_key_size(c, o, "kv_lora_rank", 1, LESSON_MAX_DIM, -1, &p->kv_lora_rank) != 0 ||
	    li_key_size(c, o, "qk_nope_head_dim", 1, LESSON_MAX_DIM, -1, &p->d_nope) != 0 ||
	    li_key_size(c, o, "qk_rope_head_dim", 2, LESSON_MAX_DIM, -1, &p->d_rope) != 0 ||
	    li_key_size(c, o, "v_head_dim", 1, LESSON_MAX_DIM, -1, &d_v) != 0 || key_finite(c, o, "rope_theta", &p->rope_theta) != 0 ||
	    li_key_eps(c, o, &p->eps) != 0)
		goto bad;
	if (p->d_rope % 2 != 0) {
		path_key(c, "qk_rope_head_dim");
		fail(c, _("needs an even width (k_pe and q_pe turn in pairs of columns), got %d"), p->d_rope);
		goto bad;
	}
	if (!(p->rope_theta > 1)) {
		path_key(c, "rope_theta");
		fail(c, _("expected a base > 1, got %g"), p->rope_theta);
		goto bad;
	}
	path_set(c, old);
	if (p->q_lora_rank > 0 ? get(root, "W_q") != NULL : get(o, "W_qa") != NULL || get(o, "W_qb") != NULL || get(o, "q_a_norm") != NULL) {
		if (p->q_lora_rank > 0) {
			path_key(c, "W_q");
			fail(c, "%s", _("not with \"mla\": {\"q_lora_rank\"}: the query is RMSNorm(x\u00b7W_qa)\u00b7W_qb"));
		} else {
			path_key(c, "mla");
			path_key(c, get(o, "W_qa") != NULL ? "W_qa" : get(o, "W_qb") != NULL ? "W_qb" : "q_a_norm");
			fail(c, "%s", _("needs \"q_lora_rank\" (the compressed query's width); without it the query is x\u00b7W_q"));
		}
		goto bad;
	}
	if (p->q_lora_rank == 0 && get(root, "W_q") == NULL) {
		path_key(c, "W_q");
		fail(c, "%s", _("missing: without \"q_lora_rank\" the query is x\u00b7W_q (d_model \u00d7 heads\u00b7(qk_nope_head_dim + qk_rope_head_dim))"));
		goto bad;
	}
	p->on = 1;
	l->lp.d_k = p->d_nope + p->d_rope;
	l->lp.d_v = d_v;
	path_set(c, old);
	return 0;
bad:
	path_set(c, old);
	return -1;
}

static int read_mla_matrices(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *o = get(root, "mla");
	MlaParams *p = &l->lp.mla;
	const int D = l->cfg.d_model, hq = l->lp.heads * l->lp.d_k, hkv = l->lp.heads * (p->d_nope + l->lp.d_v);
	const int r = p->q_lora_rank, kc = p->kv_lora_rank;
	size_t old;

	if (o == NULL || !p->on)
		return 0;
	old = path_key(c, "mla");
	if ((r > 0 && (li_read_shaped(c, o, "W_qa", D, r, _("d_model, the input's columns"), _("q_lora_rank"), -1, &p->W_qa) != 0 ||
	               li_read_shaped(c, o, "q_a_norm", 1, r, NULL, _("q_lora_rank, the norm's weights"), 1.0, &p->q_a_norm) != 0 ||
	               li_read_shaped(c, o, "W_qb", r, hq, _("q_lora_rank"), _("heads \u00d7 (qk_nope_head_dim + qk_rope_head_dim)"), -1,
	                              &p->W_qb) != 0)) ||
	    li_read_shaped(c, o, "W_kva", D, kc + p->d_rope, _("d_model, the input's columns"), _("kv_lora_rank + qk_rope_head_dim"), -1,
	                   &p->W_kva) != 0 ||
	    li_read_shaped(c, o, "kv_a_norm", 1, kc, NULL, _("kv_lora_rank, the norm's weights"), 1.0, &p->kv_a_norm) != 0 ||
	    li_read_shaped(c, o, "W_kvb", kc, hkv, _("kv_lora_rank"), _("heads \u00d7 (qk_nope_head_dim + v_head_dim)"), -1, &p->W_kvb) != 0)
		goto bad;
	{
		static const char *const need[] = { "W_qa", "W_qb", "W_kva", "W_kvb" };
		const Mat *got_m[] = { &p->W_qa, &p->W_qb, &p->W_kva, &p->W_kvb };
		for (int k = r > 0 ? 0 : 2; k < 4; k++)
			if (mat_empty(got_m[k])) {
				path_key(c, need[k]);
				fail(c, "%s", _("missing (multi-head latent attention needs it)"));
				goto bad;
			}
	}
	path_set(c, old);
	return 0;
bad:
	path_set(c, old);
	return -1;
}

/* Its settings and weights as the loader reads them, each layer's own. */
static int write_mla(cJSON *o, const LayerParams *lp, const Model *model, LkAt at)
{
	const MlaParams *p = &lp->mla;
	cJSON *m;

	(void)model;
	(void)at;
	if (!p->on)
		return 0;
	m = cJSON_CreateObject();
	if (li_put(o, "mla", m) != 0 || (p->q_lora_rank > 0 && !cJSON_AddNumberToObject(m, "q_lora_rank", p->q_lora_rank)) ||
	    !cJSON_AddNumberToObject(m, "kv_lora_rank", p->kv_lora_rank) ||
	    !cJSON_AddNumberToObject(m, "qk_nope_head_dim", p->d_nope) ||
	    !cJSON_AddNumberToObject(m, "qk_rope_head_dim", p->d_rope) || !cJSON_AddNumberToObject(m, "v_head_dim", lp->d_v) ||
	    li_put(m, "rope_theta", jw_number(p->rope_theta)) != 0 || li_put(m, "eps", jw_number(p->eps)) != 0)
		return -1;
	if (p->q_lora_rank > 0 && (li_put(m, "W_qa", jw_matrix(&p->W_qa)) != 0 || li_put(m, "q_a_norm", jw_flat(&p->q_a_norm)) != 0 ||
	                           li_put(m, "W_qb", jw_matrix(&p->W_qb)) != 0))
		return -1;
	return li_put(m, "W_kva", jw_matrix(&p->W_kva)) != 0 || li_put(m, "kv_a_norm", jw_flat(&p->kv_a_norm)) != 0 ||
	               li_put(m, "W_kvb", jw_matrix(&p->W_kvb)) != 0
	               ? -1
	               : 0;
}

/* MLA's key, one table (lesson_keys.h): the settings before the shapes, the matrices after, each layer its own. */
const LessonKey li_mla_keys[] = {
	{ .name = "mla", .kind = LK_CUSTOM, .where = LK_TOP | LK_LAYER, .read = read_mla_settings, .weights = read_mla_matrices,
	  .write_layer = write_mla },
	{ .name = NULL },
};
