/*
 * lesson_deltanet.c: Gated DeltaNet's key (issue 24 §3), one table
 * (lesson_keys.h): "gated_deltanet": {"W_a", "W_b", "A_log", "dt_bias",
 * "chunk_size"} or false, each layer its own (model.h: LayerParams.gdn_*;
 * engine/variants/deltanet.c), read with the matrices once the shapes are
 * known; and as a layer's token mixer the keys it adds:
 *
 *   "mixer": true      its output, not softmax's, is what concat and W_o read
 *   "conv1d": K × (h·d_k + g·d_k + g·d_v)   the short causal conv's weights,
 *                      one column per column of [Q | K | V], row K − 1 for the
 *                      token itself (Qwen3-Next's conv1d.weight[c, 0, s] at [s][c])
 *   "W_z": d_model × h·d_v                  the output gate's logits z = x·W_z
 *   "norm": d_v numbers                     the gated RMSNorm's weight
 *   "eps": number > 0 (1e-6)                its eps
 *   "v_heads": h·r (heads)                  Qwen3-Next's linear_num_value_heads: each head's q and k serve r
 *                      value heads of d_v / r columns, each with its own β and g (W_a, W_b, A_log and dt_bias
 *                      then have h·r columns, value head h·r + s at column h·r + s) and its own RMS ("norm":
 *                      d_v / r numbers); needs kv_heads = heads (q and k have linear_num_key_heads heads)
 *
 * The four matrices are required with "mixer": true and refused without, as is "v_heads".
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <math.h>

#define GDN_CONV_MAX 64 /* a kernel this long is already past any model's (Qwen3-Next: 4) */
#define GDN_VHEADS_MAX 4096 /* value heads: Qwen3-Next-80B has 32 */

static const char *const mixer_keys[] = { "conv1d", "W_z", "norm", "eps", "v_heads", NULL };

/* "v_heads", read before W_a and the others whose columns it sets (read_deltanet). */
static int read_vheads(Ctx *c, const cJSON *gd, Model *l)
{
	const int h = l->lp.heads, g = l->lp.kv_heads > 0 ? l->lp.kv_heads : h;
	long long vh = h;
	size_t old = c->pathlen;

	l->lp.gdn_v_heads = 0;
	if (get(gd, "v_heads") == NULL)
		return 0;
	if (key_whole(c, gd, "v_heads", h, GDN_VHEADS_MAX, _("a whole number of value heads, at least heads"), &vh) != 0)
		return -1;
	path_key(c, "v_heads");
	if (vh % h != 0 || l->lp.d_v % (int)(vh / h) != 0) {
		fail(c, _("expected a multiple r of heads (%d) that cuts d_v (%d) into r value heads, got %lld"), h, l->lp.d_v, vh);
		return -1;
	}
	if (g != h) {
		fail(c, _("needs as many key heads as query heads (Qwen3-Next's linear_num_key_heads serve both), "
		          "but kv_heads is %d and heads %d"), g, h);
		return -1;
	}
	path_set(c, old);
	l->lp.gdn_v_heads = (int)vh;
	return 0;
}

/* Its sizes before the numbers are read, so that steps may point at them: A_log's heads, the conv1d's kernel. */
static void deltanet_shapes(const cJSON *gd, Model *m)
{
	const cJSON *conv = get(gd, "conv1d"), *vh = get(gd, "v_heads");

	if (!cJSON_IsObject(gd))
		return;
	m->lp.gdn_A_log.rows = 1;
	m->lp.gdn_A_log.cols = m->lp.heads;
	if (cJSON_IsTrue(get(gd, "mixer")) && cJSON_IsArray(conv)) {
		m->lp.gdn_mixer = 1;
		m->lp.gdn_conv.rows = cJSON_GetArraySize(conv);
	}
	if (cJSON_IsNumber(vh) && m->lp.heads > 0 && vh->valuedouble >= m->lp.heads && vh->valuedouble <= GDN_VHEADS_MAX &&
	    (int)vh->valuedouble % m->lp.heads == 0) /* A_log's columns with it (read checks it again) */
		m->lp.gdn_v_heads = (int)vh->valuedouble, m->lp.gdn_A_log.cols = m->lp.gdn_v_heads;
}

static int read_mixer(Ctx *c, const cJSON *gd, Model *l)
{
	const int h = l->lp.heads, g = l->lp.kv_heads > 0 ? l->lp.kv_heads : h, dk = l->lp.d_k, dv = l->lp.d_v;
	const cJSON *conv = get(gd, "conv1d");
	size_t old = c->pathlen;
	int mixer = 0;

	if (jr_key_bool(c, gd, "mixer", 0, &mixer) != 0)
		return -1;
	l->lp.gdn_mixer = mixer;
	if (!mixer) {
		for (int k = 0; mixer_keys[k] != NULL; k++)
			if (get(gd, mixer_keys[k]) != NULL) {
				path_key(c, mixer_keys[k]);
				fail(c, "%s", _("belongs to Gated DeltaNet as the layer's mixer: give \"mixer\": true too"));
				return -1;
			}
		return 0;
	}
	for (int k = 0; k < 3; k++)
		if (get(gd, mixer_keys[k]) == NULL) {
			fail(c, _("missing \"%s\" (as the layer's mixer Gated DeltaNet needs conv1d, W_z and norm)"), mixer_keys[k]);
			return -1;
		}
	if (!cJSON_IsArray(conv) || cJSON_GetArraySize(conv) < 1 || cJSON_GetArraySize(conv) > GDN_CONV_MAX) {
		path_key(c, "conv1d");
		if (cJSON_IsArray(conv))
			fail(c, _("expected the kernel's rows, 1 to %d of them, each h\u00b7d_k + g\u00b7d_k + g\u00b7d_v = %d numbers, got %d rows"),
			     GDN_CONV_MAX, h * dk + g * (dk + dv), cJSON_GetArraySize(conv));
		else
			fail(c, _("expected the kernel's rows, 1 to %d of them, each h\u00b7d_k + g\u00b7d_k + g\u00b7d_v = %d numbers, got %s"),
			     GDN_CONV_MAX, h * dk + g * (dk + dv), got(conv).s);
		return -1;
	}
	l->lp.gdn_eps = 1e-6;
	if (li_read_shaped(c, gd, "conv1d", cJSON_GetArraySize(conv), h * dk + g * (dk + dv), _("the kernel size"),
	                   _("the columns of Q, K and V side by side"), -1, &l->lp.gdn_conv) != 0 ||
	    li_read_shaped(c, gd, "W_z", l->cfg.d_model, h * dv, _("d_model, one per column of X"),
	                   _("heads \u00d7 d_v, one per column of concat"), -1, &l->lp.gdn_W_z) != 0 ||
	    li_read_shaped(c, gd, "norm", 1, dv / layer_gdn_r(&l->lp), NULL,
	                   l->lp.gdn_v_heads > 0 ? _("d_v / r, one per column of a value head's output")
	                                         : _("d_v, one per column of a head's output"), -1, &l->lp.gdn_norm) != 0 ||
	    li_key_eps(c, gd, &l->lp.gdn_eps) != 0)
		return -1;
	path_set(c, old);
	return 0;
}

/*
 * Gated DeltaNet (issue 24 §3): "gated_deltanet": {"W_a": d_model × heads, "W_b": d_model × heads,
 * "A_log": heads numbers, "dt_bias": heads numbers, "chunk_size": 1 … n (default min(2, n))}; false or
 * absent: none. Self-attention, forward only (lesson_shapes.c refuses "backward").
 */
static int read_deltanet(Ctx *c, const cJSON *root, Model *l)
{
	static const char *const keys[] = { "W_a", "W_b", "A_log", "dt_bias", "chunk_size", "mixer", "conv1d", "W_z", "norm", "eps", "v_heads", NULL };
	const cJSON *v = get(root, "gated_deltanet");
	int h = l->lp.heads;
	const char *vh;
	size_t old;
	long long chunk = l->cfg.n < 2 ? l->cfg.n : 2;
	int r = -1;

	if (v == NULL || cJSON_IsFalse(v))
		return 0;
	old = path_key(c, "gated_deltanet");
	if (!cJSON_IsObject(v)) {
		fail(c, _("expected {\"W_a\": d_model \u00d7 heads, \"W_b\": d_model \u00d7 heads, \"A_log\": [heads], "
		        "\"dt_bias\": [heads], \"chunk_size\": 2} or false, got %s"), got(v).s);
		goto out;
	}
	if (refuse_unknown_keys(c, v, keys, _("key")) != 0)
		goto out;
	for (int k = 0; k < 4; k++)
		if (get(v, keys[k]) == NULL) {
			fail(c, _("missing \"%s\" (Gated DeltaNet needs W_a, W_b, A_log and dt_bias)"), keys[k]);
			goto out;
		}
	if (read_vheads(c, v, l) != 0) /* with "v_heads": a column per value head */
		goto out;
	h *= layer_gdn_r(&l->lp);
	vh = l->lp.gdn_v_heads > 0 ? _("v_heads, one per value head") : NULL;
	if (li_read_shaped(c, v, "W_a", l->cfg.d_model, h, _("d_model, one per column of X"), vh ? vh : _("heads"), -1, &l->lp.gdn_W_a) != 0 ||
	    li_read_shaped(c, v, "W_b", l->cfg.d_model, h, _("d_model, one per column of X"), vh ? vh : _("heads"), -1, &l->lp.gdn_W_b) != 0 ||
	    li_read_shaped(c, v, "A_log", 1, h, NULL, vh ? vh : _("heads, one per head"), -1, &l->lp.gdn_A_log) != 0 ||
	    li_read_shaped(c, v, "dt_bias", 1, h, NULL, vh ? vh : _("heads, one per head"), -1, &l->lp.gdn_dt_bias) != 0)
		goto out;
	if (key_whole(c, v, "chunk_size", 1, l->cfg.n, _("a chunk of 1 to n tokens"), &chunk) != 0)
		goto out;
	l->lp.gdn_chunk = (int)chunk;
	if (read_mixer(c, v, l) != 0) /* as the layer's mixer (lesson_deltanet.c) */
		goto out;
	if (l->cfg.has_source)
		fail(c, _("needs self-attention (each token updates the state its own query reads), but this lesson has a source"));
	else
		r = 0; /* with "backward": refused with the shapes (li_check_shapes) */
out:
	path_set(c, old);
	return r;
}

/* Its weights and chunk size (and the mixer's), each layer's own; a layer of "layers" without the top level's (the
 * hybrid's full-attention layer) says false. */
static int write_deltanet(cJSON *o, const LayerParams *p, const Model *m, LkAt at)
{
	cJSON *d;

	if (mat_empty(&p->gdn_A_log))
		return at == LK_AT_STACK && !mat_empty(&m->lp.gdn_A_log) && !cJSON_AddFalseToObject(o, "gated_deltanet") ? -1 : 0;
	d = cJSON_CreateObject();
	if (li_put(o, "gated_deltanet", d) != 0 || li_put(d, "W_a", jw_matrix(&p->gdn_W_a)) != 0 ||
	    li_put(d, "W_b", jw_matrix(&p->gdn_W_b)) != 0 || li_put(d, "A_log", jw_flat(&p->gdn_A_log)) != 0 ||
	    li_put(d, "dt_bias", jw_flat(&p->gdn_dt_bias)) != 0 || !cJSON_AddNumberToObject(d, "chunk_size", p->gdn_chunk))
		return -1;
	if (p->gdn_mixer && (!cJSON_AddTrueToObject(d, "mixer") || li_put(d, "conv1d", jw_matrix(&p->gdn_conv)) != 0 ||
	                     li_put(d, "W_z", jw_matrix(&p->gdn_W_z)) != 0 || li_put(d, "norm", jw_flat(&p->gdn_norm)) != 0 ||
	                     li_put(d, "eps", jw_number(p->gdn_eps)) != 0)) /* as the layer's mixer */
		return -1;
	if (p->gdn_v_heads > 0 && !cJSON_AddNumberToObject(d, "v_heads", p->gdn_v_heads)) /* Qwen3-Next's value heads */
		return -1;
	return 0;
}

/* A compare variant that drops the lesson's Gated DeltaNet says false. */
static int write_dropped(cJSON *o, const Model *m, const Model *top)
{
	return top != NULL && !mat_empty(&top->lp.gdn_A_log) && mat_empty(&m->lp.gdn_A_log) &&
	               !cJSON_AddFalseToObject(o, "gated_deltanet")
	           ? -1
	           : 0;
}

const LessonKey li_deltanet_keys[] = {
	{ .name = "gated_deltanet", .kind = LK_CUSTOM, .where = LK_TOP | LK_LAYER, .weights = read_deltanet,
	  .shapes = deltanet_shapes, .write = write_dropped, .write_layer = write_deltanet },
	{ .name = NULL },
};
