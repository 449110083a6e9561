/* hfrope.c: RoPE's scaling in a config.json (hfrope.h), read as transformers' modeling_rope_utils.py
 * reads it: rope_config_validation's keys per rope_type, _compute_*_parameters' defaults. */
#include "weights/hfrope.h"

#include <math.h>
#include <string.h>

#include "base/i18n.h"

/* A key the rope_type needs. */
static int rope_need(JrCtx *c, const cJSON *obj, const char *key, const char *type)
{
	size_t old;

	if (jr_get(obj, key) != NULL && !cJSON_IsNull(jr_get(obj, key)))
		return 0;
	old = jr_path_key(c, key);
	return jr_leave(c, old, jr_fail(c, _("missing: rope_type \"%s\" needs %s"), type, key));
}

/* yarn's keys beside factor, DeepSeek's mscale and mscale_all_dim among them. */
static int read_yarn(JrCtx *c, const cJSON *o, RopeScaling *s)
{
	if (jr_key_above(c, o, "mscale", 0, 1, 1, &s->mscale) != 0 || jr_key_above(c, o, "mscale_all_dim", 0, 1, 1, &s->mscale_all_dim) != 0)
		return -1;
	s->beta_fast = 32; /* beta_fast = rope_scaling.get("beta_fast") or 32 */
	s->beta_slow = 1;
	s->truncate = 1;
	if (jr_key_above(c, o, "beta_fast", 0, 0, 1, &s->beta_fast) != 0 || jr_key_above(c, o, "beta_slow", 0, 0, 1, &s->beta_slow) != 0 ||
	    jr_key_above(c, o, "attention_factor", 0, 0, 1, &s->attn_factor) != 0)
		return -1;
	return jr_key_bool(c, o, "truncate", 0, &s->truncate);
}

/* The scaling object o (at key) of rope_type type, into s. */
static int read_scaling(JrCtx *c, const cJSON *o, const HfConfig *cfg, RopeScaling *s)
{
	static const char *const types[] = { "default", "linear", "dynamic", "yarn", "llama3", NULL };
	const char *tkey = jr_get(o, "rope_type") != NULL ? "rope_type" : "type"; /* BC: "rope_type" was "type" */
	const cJSON *t = jr_get(o, tkey);
	long long L0 = cfg->max_positions;
	size_t old;
	int k;

	if (t == NULL || cJSON_IsNull(t))
		return 0; /* rope_type "default" */
	old = jr_path_key(c, tkey);
	if (!cJSON_IsString(t))
		return jr_leave(c, old, jr_fail(c, _("expected a rope_type (\"default\", \"linear\", …), got %s"), jr_got(t).s));
	for (k = 0; types[k] != NULL && strcmp(types[k], t->valuestring) != 0; k++)
		;
	if (types[k] == NULL)
		return jr_leave(c, old, jr_fail(c, _("%s: attnviz computes the rope_types default, linear, dynamic, yarn and "
		                                     "llama3"), jr_got(t).s));
	jr_path_set(c, old);
	if (k == 0)
		return 0;
	s->type = (RopeScaleType)k;
	s->factor = 0;
	if ((s->type != ROPE_SCALE_YARN && rope_need(c, o, "factor", types[k]) != 0) ||
	    jr_key_above(c, o, "factor", 0, 0, 1, &s->factor) != 0)
		return -1;
	if (s->type == ROPE_SCALE_LLAMA3 &&
	    (rope_need(c, o, "original_max_position_embeddings", types[k]) != 0 ||
	     rope_need(c, o, "low_freq_factor", types[k]) != 0 || rope_need(c, o, "high_freq_factor", types[k]) != 0))
		return -1;
	/* yarn and llama3: original_max_position_embeddings from the object, else max_position_embeddings;
	 * dynamic NTK: max_position_embeddings (_compute_dynamic_ntk_parameters) */
	if (s->type != ROPE_SCALE_DYNAMIC &&
	    jr_key_whole(c, o, "original_max_position_embeddings", 1, 1 << 30, _("a count of positions from 1"), &L0) != 0)
		return -1;
	s->orig_max = (int)L0;
	if (s->type == ROPE_SCALE_YARN && s->factor == 0) /* factor None: max_position_embeddings / original */
		s->factor = (double)cfg->max_positions / s->orig_max;
	if (s->type == ROPE_SCALE_YARN && read_yarn(c, o, s) != 0)
		return -1;
	if (s->type == ROPE_SCALE_LLAMA3) {
		if (jr_key_above(c, o, "low_freq_factor", 0, 0, 1, &s->low_freq) != 0 || jr_key_above(c, o, "high_freq_factor", 0, 0, 1, &s->high_freq) != 0)
			return -1;
		if (!(s->high_freq > s->low_freq)) {
			old = jr_path_key(c, "high_freq_factor");
			return jr_leave(c, old, jr_fail(c, _("expected a number above low_freq_factor (%g), got %g"), s->low_freq,
			                                 s->high_freq));
		}
	}
	return 0;
}

/*
 * rope_parameters per layer type, the new layout of a model with local and
 * global layers ({"full_attention": {…}, "sliding_attention": {…}}: Gemma
 * 3's, configuration_gemma3.py's convert_rope_params_to_dict: the old
 * rope_scaling goes into full_attention, rope_theta is its default theta and
 * rope_local_base_freq the sliding type's). The full type is the model's
 * RoPE (rope_theta, rope_scaling), the sliding type the local layers'
 * (rope_local_theta, rope_local_scaling); partial_rotary_factor is one for
 * both. o at the path rope_parameters.
 */
static int read_per_type(JrCtx *c, const cJSON *o, HfConfig *cfg)
{
	static const char *const kinds[] = { "full_attention", "sliding_attention", NULL };
	const cJSON *t;
	double partial[2] = { cfg->partial_rotary_factor, cfg->partial_rotary_factor };

	if (cfg->arch != HF_GEMMA3)
		return jr_fail(c, _("RoPE settings per layer type (%s): attnviz reads one for every layer"), o->child->string);
	cJSON_ArrayForEach(t, o) {
		int k = t->string != NULL && strcmp(t->string, kinds[0]) == 0 ? 0 : t->string != NULL && strcmp(t->string, kinds[1]) == 0 ? 1 : -1;
		size_t old = jr_path_key(c, t->string != NULL ? t->string : "");
		if (k < 0)
			return jr_leave(c, old, jr_fail(c, _("expected the layer types \"full_attention\" and \"sliding_attention\" (Gemma 3's)")));
		if (!cJSON_IsObject(t))
			return jr_leave(c, old, jr_fail(c, _("expected {\"rope_type\": \"default\", \"rope_theta\": 10000, …}, got %s"),
			                                 jr_got(t).s));
		if (jr_key_above(c, t, "rope_theta", 0, 0, 1, k == 0 ? &cfg->rope_theta : &cfg->rope_local_theta) != 0 ||
		    jr_key_above(c, t, "partial_rotary_factor", 0, 0, 1, &partial[k]) != 0 ||
		    read_scaling(c, t, cfg, k == 0 ? &cfg->rope_scaling : &cfg->rope_local_scaling) != 0)
			return -1;
		jr_path_set(c, old);
	}
	cfg->partial_rotary_factor = partial[0];
	if (partial[1] != partial[0]) {
		size_t old = jr_path_key(c, "sliding_attention");
		jr_path_key(c, "partial_rotary_factor");
		return jr_leave(c, old, jr_fail(c, _("%g, but %g on the full-attention layers: attnviz turns one share of "
		                                     "each head's columns on every layer"), partial[1], partial[0]));
	}
	return 0;
}

int hfrope_read(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	const cJSON *rp = jr_get(root, "rope_parameters"), *rs = jr_get(root, "rope_scaling"), *o = NULL;
	const char *key = NULL;
	size_t old;
	int r, rd;

	memset(&cfg->rope_scaling, 0, sizeof cfg->rope_scaling);
	memset(&cfg->rope_local_scaling, 0, sizeof cfg->rope_local_scaling);
	cfg->rope_local_theta = 0;
	cfg->partial_rotary_factor = cfg->arch == HF_QWEN3_NEXT ? 0.25 : 1.0; /* Qwen3NextConfig: setdefault(…, 0.25) */
	if (rp != NULL && !cJSON_IsNull(rp))
		o = rp, key = "rope_parameters";
	else if (rs != NULL && !cJSON_IsNull(rs))
		o = rs, key = "rope_scaling";
	if (jr_key_above(c, root, "partial_rotary_factor", 0, 0, 1, &cfg->partial_rotary_factor) != 0)
		return -1;
	if (o != NULL) {
		old = jr_path_key(c, key);
		if (!cJSON_IsObject(o))
			return jr_leave(c, old, jr_fail(c, _("expected {\"rope_type\": \"yarn\", \"factor\": 4, …} or null, got %s"),
			                                 jr_got(o).s));
		if (o == rp && jr_get(o, "rope_type") == NULL && o->child != NULL && cJSON_IsObject(o->child))
			r = read_per_type(c, o, cfg);
		else if (o == rp && (jr_key_above(c, o, "rope_theta", 0, 0, 1, &cfg->rope_theta) != 0 ||
		                jr_key_above(c, o, "partial_rotary_factor", 0, 0, 1, &cfg->partial_rotary_factor) != 0))
			r = -1;
		else
			r = read_scaling(c, o, cfg, &cfg->rope_scaling);
		jr_path_set(c, old);
		if (r != 0)
			return -1;
	}
	rd = (int)((double)cfg->head_dim * cfg->partial_rotary_factor);
	if (cfg->partial_rotary_factor > 1 || rd % 2 != 0 || rd < 2 ||
	    ((cfg->rope_scaling.type == ROPE_SCALE_DYNAMIC || cfg->rope_local_scaling.type == ROPE_SCALE_DYNAMIC) && rd <= 2)) {
		old = jr_path_key(c, "partial_rotary_factor");
		return jr_leave(c, old, jr_fail(c, _("int(head_dim %d × %g) = %d columns would turn: it must be even, at least 2 "
		                                     "(4 with dynamic NTK) and at most head_dim"),
		                                 cfg->head_dim, cfg->partial_rotary_factor, rd));
	}
	return 0;
}
