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
 *
 * The four matrices are required with "mixer": true and refused without.
 */
#include "lesson/lesson_internal.h"

#include <math.h>

#define GDN_CONV_MAX 64 /* a kernel this long is already past any model's (Qwen3-Next: 4) */

static const char *const mixer_keys[] = { "conv1d", "W_z", "norm", "eps", NULL };

/* The conv1d's kernel size before the numbers are read, so that steps may point at it (lesson_read.c). */
void li_deltanet_shape(const cJSON *gd, Model *m)
{
	const cJSON *conv = get(gd, "conv1d");

	if (cJSON_IsTrue(get(gd, "mixer")) && cJSON_IsArray(conv)) {
		m->lp.gdn_mixer = 1;
		m->lp.gdn_conv.rows = cJSON_GetArraySize(conv);
	}
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
	    li_read_shaped(c, gd, "norm", 1, dv, NULL, _("d_v, one per column of a head's output"), -1, &l->lp.gdn_norm) != 0 ||
	    jr_key_above(c, gd, "eps", 0.0, 0, 0, &l->lp.gdn_eps) != 0)
		return -1;
	path_set(c, old);
	return 0;
}
