/*
 * lesson_dsa.c: a lesson's "dsa" (issue 24 §2): DeepSeek Sparse Attention,
 * DeepSeek-V3.2's lightning indexer on top of "mla" (model.h: DsaParams;
 * engine/variants/dsa.c). One table (lesson_keys.h), one LK_CUSTOM row:
 *
 *   "dsa": {"index_n_heads": H_I, "index_head_dim": d_I (≥ qk_rope_head_dim), "index_topk": k, "eps": 1e-6,
 *           "W_iq": q_lora_rank × H_I·d_I, "W_ik": d_model × d_I,
 *           "ik_norm": d_I (ones), "ik_norm_bias": d_I (zeros), "W_iw": d_model × H_I}
 *
 * The settings are read with the other tables' (before the shapes); the
 * matrices after MLA's (read_dsa_matrices, its row's weights hook: the table
 * comes after MLA's), when the sizes are known.
 * It needs "mla" with "q_lora_rank" (the indexer's q reads c_Q) and "mask":
 * "causal"; one layer, no "layers".
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <stdio.h>

static const char *const dsa_keys[] = { "index_n_heads", "index_head_dim", "index_topk", "eps", "W_iq", "W_ik",
	                                "ik_norm", "ik_norm_bias", "W_iw", NULL };

/* Top-level keys a DSA lesson may not have, and why (each refused at its path). */
static const struct {
	const char *key, *why;
} dsa_not[] = {
	{ "layers", N_("DeepSeek Sparse Attention is one layer here: leave out \"layers\"") },
	{ "attn_logit_softcapping", N_("not with DSA yet") },
	{ "sinks", N_("not with DSA yet") },
};

/* "dsa": its settings, before the shapes. */
static int read_dsa(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *o = get(root, "dsa");
	DsaParams *p = &l->lp.dsa;
	size_t old;

	if (o == NULL || cJSON_IsFalse(o))
		return 0;
	old = path_key(c, "dsa");
	if (!cJSON_IsObject(o)) {
		fail(c, _("expected an object {\"index_n_heads\": \u2026, \"index_head_dim\": \u2026, \"index_topk\": \u2026, \u2026}, got %s"),
		     got(o).s);
		goto bad;
	}
	if (refuse_unknown_keys(c, o, dsa_keys, "\"dsa\"") != 0)
		goto bad;
	path_set(c, old);
	for (size_t k = 0; k < sizeof dsa_not / sizeof dsa_not[0]; k++)
		if (get(root, dsa_not[k].key) != NULL && !cJSON_IsFalse(get(root, dsa_not[k].key))) {
			path_key(c, dsa_not[k].key);
			fail(c, "%s", _(dsa_not[k].why));
			goto bad;
		}
	path_key(c, "dsa");
	p->eps = 1e-6;
	if (li_key_size(c, o, "index_n_heads", 1, LESSON_MAX_DIM, -1, &p->heads) != 0 ||
	    li_key_size(c, o, "index_head_dim", 1, LESSON_MAX_DIM, -1, &p->dim) != 0 ||
	    li_key_size(c, o, "index_topk", 1, LESSON_MAX_TOKENS, -1, &p->topk) != 0 || li_key_eps(c, o, &p->eps) != 0)
		goto bad;
	p->on = 1;
	path_set(c, old);
	return 0;
bad:
	path_set(c, old);
	return -1;
}

static int read_dsa_matrices(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *o = get(root, "dsa");
	DsaParams *p = &l->lp.dsa;
	const int D = l->cfg.d_model, r = l->lp.mla.q_lora_rank;
	size_t old;

	if (o == NULL || !p->on)
		return 0;
	old = path_key(c, "dsa");
	if (!l->lp.mla.on || r < 1) {
		fail(c, "%s", _("DeepSeek Sparse Attention's indexer reads MLA's query latent c_Q: give \"mla\" with \"q_lora_rank\" too"));
		goto bad;
	}
	if (p->dim < l->lp.mla.d_rope) {
		path_key(c, "index_head_dim");
		fail(c, _("expected at least qk_rope_head_dim (%d): RoPE turns the first %d columns of the indexer's q and k, got %d"),
		     l->lp.mla.d_rope, l->lp.mla.d_rope, p->dim);
		goto bad;
	}
	if (!model_mask_causal(&l->cfg) || !l->cfg.mask_fill_inf || l->cfg.mask == MASK_LIST) {
		path_set(c, old);
		path_key(c, "mask");
		fail(c, "%s", _("DeepSeek Sparse Attention keeps the top-k of the keys before each query: it needs \"mask\": \"causal\""));
		goto bad;
	}
	if (li_read_shaped(c, o, "W_iq", r, p->heads * p->dim, _("q_lora_rank, the columns of c_Q"),
	                   _("index_n_heads \u00d7 index_head_dim"), -1, &p->W_iq) != 0 ||
	    li_read_shaped(c, o, "W_ik", D, p->dim, _("d_model, the input's columns"), _("index_head_dim"), -1, &p->W_ik) != 0 ||
	    li_read_shaped(c, o, "ik_norm", 1, p->dim, NULL, _("index_head_dim, the norm's weights"), 1.0, &p->k_norm) != 0 ||
	    li_read_shaped(c, o, "ik_norm_bias", 1, p->dim, NULL, _("index_head_dim, the norm's biases"), 0.0, &p->k_norm_b) != 0 ||
	    li_read_shaped(c, o, "W_iw", D, p->heads, _("d_model, the input's columns"), _("index_n_heads"), -1, &p->W_iw) != 0)
		goto bad;
	{
		static const char *const need[] = { "W_iq", "W_ik", "W_iw" };
		const Mat *got_m[] = { &p->W_iq, &p->W_ik, &p->W_iw };
		for (int k = 0; k < 3; k++)
			if (mat_empty(got_m[k])) {
				path_key(c, need[k]);
				fail(c, "%s", _("missing (DeepSeek Sparse Attention's indexer needs it)"));
				goto bad;
			}
	}
	path_set(c, old);
	return 0;
bad:
	path_set(c, old);
	return -1;
}

/* "dsa" written back whole: its settings and matrices, as read_dsa and read_dsa_matrices read them. */
static int write_dsa(cJSON *o, const Model *l, const Model *top)
{
	const DsaParams *p = &l->lp.dsa;
	cJSON *d;

	if (!p->on)
		return top != NULL && top->lp.dsa.on && !cJSON_AddFalseToObject(o, "dsa") ? -1 : 0;
	d = cJSON_CreateObject();
	return li_put(o, "dsa", d) != 0 || li_put(d, "index_n_heads", jw_number(p->heads)) != 0 ||
	               li_put(d, "index_head_dim", jw_number(p->dim)) != 0 || li_put(d, "index_topk", jw_number(p->topk)) != 0 ||
	               li_put(d, "eps", jw_number(p->eps)) != 0 || li_put(d, "W_iq", jw_matrix(&p->W_iq)) != 0 ||
	               li_put(d, "W_ik", jw_matrix(&p->W_ik)) != 0 || li_put(d, "ik_norm", jw_flat(&p->k_norm)) != 0 ||
	               li_put(d, "ik_norm_bias", jw_flat(&p->k_norm_b)) != 0 || li_put(d, "W_iw", jw_matrix(&p->W_iw)) != 0
	               ? -1
	               : 0;
}

const LessonKey li_dsa_keys[] = {
	{ .name = "dsa", .kind = LK_CUSTOM, .where = LK_TOP, .read = read_dsa, .weights = read_dsa_matrices, .write = write_dsa },
	{ .name = NULL },
};
