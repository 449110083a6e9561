/*
 * lesson_deltanet.c: Gated DeltaNet as a layer's token mixer, the keys
 * "gated_deltanet" adds to W_a, W_b, A_log, dt_bias and chunk_size
 * (lesson_block.c reads those; model.h: LayerParams.gdn_*;
 * engine/variants/deltanet.c):
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

#include <math.h>

#define GDN_CONV_MAX 64 /* a kernel this long is already past any model's (Qwen3-Next: 4) */
#define GDN_VHEADS_MAX 4096 /* value heads: Qwen3-Next-80B has 32 */

static const char *const mixer_keys[] = { "conv1d", "W_z", "norm", "eps", "v_heads", NULL };

/* "v_heads", read before W_a and the others whose columns it sets (lesson_block.c's read_deltanet). */
int li_read_deltanet_vheads(Ctx *c, const cJSON *gd, Model *l)
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

/* The conv1d's kernel size before the numbers are read, so that steps may point at it (lesson_read.c). */
void li_deltanet_shape(const cJSON *gd, Model *m)
{
	const cJSON *conv = get(gd, "conv1d");

	const cJSON *vh = get(gd, "v_heads");

	if (cJSON_IsTrue(get(gd, "mixer")) && cJSON_IsArray(conv)) {
		m->lp.gdn_mixer = 1;
		m->lp.gdn_conv.rows = cJSON_GetArraySize(conv);
	}
	if (cJSON_IsNumber(vh) && m->lp.heads > 0 && vh->valuedouble >= m->lp.heads && vh->valuedouble <= GDN_VHEADS_MAX &&
	    (int)vh->valuedouble % m->lp.heads == 0) /* A_log's columns with it (read checks it again) */
		m->lp.gdn_v_heads = (int)vh->valuedouble, m->lp.gdn_A_log.cols = m->lp.gdn_v_heads;
}

int li_read_deltanet_mixer(Ctx *c, const cJSON *gd, Model *l)
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
	    jr_key_above(c, gd, "eps", 0.0, 0, 0, &l->lp.gdn_eps) != 0)
		return -1;
	path_set(c, old);
	return 0;
}
