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
static int read_yarn(JrCtx *c, const cJSON *o, HfConfig *cfg)
{
	RopeScaling *s = &cfg->rope_scaling;

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

/* The scaling object o (at key) of rope_type type. */
static int read_scaling(JrCtx *c, const cJSON *o, HfConfig *cfg)
{
	static const char *const types[] = { "default", "linear", "dynamic", "yarn", "llama3", NULL };
	RopeScaling *s = &cfg->rope_scaling;
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
	if (s->type == ROPE_SCALE_YARN && read_yarn(c, o, cfg) != 0)
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

int hfrope_read(JrCtx *c, const cJSON *root, HfConfig *cfg)
{
	const cJSON *rp = jr_get(root, "rope_parameters"), *rs = jr_get(root, "rope_scaling"), *o = NULL;
	const char *key = NULL;
	size_t old;
	int r, rd;

	memset(&cfg->rope_scaling, 0, sizeof cfg->rope_scaling);
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
			return jr_leave(c, old, jr_fail(c, _("RoPE settings per layer type (%s): attnviz reads one for every layer"),
			                                 o->child->string));
		if (o == rp && (jr_key_above(c, o, "rope_theta", 0, 0, 1, &cfg->rope_theta) != 0 ||
		                jr_key_above(c, o, "partial_rotary_factor", 0, 0, 1, &cfg->partial_rotary_factor) != 0))
			return -1;
		r = read_scaling(c, o, cfg);
		jr_path_set(c, old);
		if (r != 0)
			return -1;
	}
	rd = (int)((double)cfg->head_dim * cfg->partial_rotary_factor);
	if (cfg->partial_rotary_factor > 1 || rd % 2 != 0 || rd < 2 ||
	    (cfg->rope_scaling.type == ROPE_SCALE_DYNAMIC && rd <= 2)) {
		old = jr_path_key(c, "partial_rotary_factor");
		return jr_leave(c, old, jr_fail(c, _("int(head_dim %d × %g) = %d columns would turn: it must be even, at least 2 "
		                                     "(4 with dynamic NTK) and at most head_dim"),
		                                 cfg->head_dim, cfg->partial_rotary_factor, rd));
	}
	return 0;
}
