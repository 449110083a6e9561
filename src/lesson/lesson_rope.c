/*
 * lesson_rope.c: RoPE's keys (issue 11, issue 23 §2), one table
 * (lesson_keys.h): "rope": true, false or {"base", "style",
 * "partial_rotary_factor", "scaling"} (model/ropefreq.h computes with
 * them), and a layer's own "rope" in "layers" (false: a NoPE layer; {"base",
 * "scaling"}: its own base and scaling), read and written back.
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"
#include "model/ropefreq.h"

#include <math.h>
#include <string.h>

static const char *const rope_keys[] = { "base", "style", "partial_rotary_factor", "scaling", NULL };

/* ---- RoPE's partial_rotary_factor and scaling (issue 23 §2; model/ropefreq.h computes with them) */

/* A key the type needs and the lesson left out. */
static int rope_missing(Ctx *c, const cJSON *obj, const char *key, const char *type)
{
	size_t old;

	if (get(obj, key) != NULL)
		return 0;
	old = path_key(c, key);
	fail(c, _("missing: the %s scaling needs %s"), type, key);
	path_set(c, old);
	return -1;
}

/*
 * "scaling": {"type": "linear" | "dynamic" | "yarn" | "llama3", "factor": s ≥ 1,
 * "original_max_position_embeddings": L₀ (dynamic, yarn, llama3), yarn's
 * "beta_fast" (32), "beta_slow" (1), "attention_factor", "truncate" (true),
 * "mscale", "mscale_all_dim" (DeepSeek's: attention_factor from their ratio),
 * llama3's "low_freq_factor", "high_freq_factor"}: transformers' rope_scaling.
 */
static int read_rope_scaling(Ctx *c, const cJSON *v, RopeScaling *s)
{
	static const char *const types[] = { "linear", "dynamic", "yarn", "llama3", NULL };
	static const char *const linear_keys[] = { "type", "factor", NULL };
	static const char *const dynamic_keys[] = { "type", "factor", "original_max_position_embeddings", NULL };
	static const char *const yarn_keys[] = { "type", "factor", "original_max_position_embeddings", "beta_fast",
		                                 "beta_slow", "attention_factor", "truncate", "mscale", "mscale_all_dim", NULL };
	static const char *const llama3_keys[] = { "type", "factor", "original_max_position_embeddings", "low_freq_factor",
		                                   "high_freq_factor", NULL };
	static const char *const *const keys[] = { linear_keys, dynamic_keys, yarn_keys, llama3_keys };
	size_t old = path_key(c, "scaling");
	int type = 0, r = -1;
	long long L0 = 0;

	if (!cJSON_IsObject(v)) {
		fail(c, _("expected {\"type\": \"linear\" | \"dynamic\" | \"yarn\" | \"llama3\", \"factor\": 4, …}, got %s"), got(v).s);
		goto out;
	}
	if (rope_missing(c, v, "type", "RoPE") != 0 || key_choice(c, v, "type", types, &type) != 0)
		goto out;
	warn_unknown_keys(c, v, keys[type]);
	s->type = (RopeScaleType)(type + 1);
	s->beta_fast = 32;
	s->beta_slow = 1;
	s->truncate = 1;
	if (rope_missing(c, v, "factor", types[type]) != 0 || jr_key_above(c, v, "factor", 1, 1, 0, &s->factor) != 0)
		goto out;
	if (s->type != ROPE_SCALE_LINEAR &&
	    (rope_missing(c, v, "original_max_position_embeddings", types[type]) != 0 ||
	     key_whole(c, v, "original_max_position_embeddings", 1, 1e9, _("a count of positions from 1"), &L0) != 0))
		goto out;
	s->orig_max = (int)L0;
	if (s->type == ROPE_SCALE_YARN) {
		if (jr_key_above(c, v, "beta_fast", 0, 0, 0, &s->beta_fast) != 0 || jr_key_above(c, v, "beta_slow", 0, 0, 0, &s->beta_slow) != 0 ||
		    jr_key_above(c, v, "attention_factor", 0, 0, 0, &s->attn_factor) != 0 ||
		    jr_key_above(c, v, "mscale", 0, 1, 1, &s->mscale) != 0 || jr_key_above(c, v, "mscale_all_dim", 0, 1, 1, &s->mscale_all_dim) != 0)
			goto out;
		if (jr_key_bool(c, v, "truncate", 0, &s->truncate) != 0)
			goto out;
	}
	if (s->type == ROPE_SCALE_LLAMA3) {
		if (rope_missing(c, v, "low_freq_factor", "llama3") != 0 || rope_missing(c, v, "high_freq_factor", "llama3") != 0 ||
		    jr_key_above(c, v, "low_freq_factor", 0, 0, 0, &s->low_freq) != 0 ||
		    jr_key_above(c, v, "high_freq_factor", 0, 0, 0, &s->high_freq) != 0)
			goto out;
		if (!(s->high_freq > s->low_freq)) {
			size_t old2 = path_key(c, "high_freq_factor");
			fail(c, _("expected a number above low_freq_factor (%g), got %g"), s->low_freq, s->high_freq);
			path_set(c, old2);
			goto out;
		}
	}
	r = 0;
out:
	path_set(c, old);
	if (r != 0)
		memset(s, 0, sizeof *s);
	return r;
}

/* "partial_rotary_factor" (0 < f ≤ 1) and "scaling" of the "rope" object v. */
static int read_rope_extras(Ctx *c, const cJSON *v, Model *l)
{
	const cJSON *sc = get(v, "scaling");

	l->cfg.rope_partial = 1.0;
	if (jr_key_above(c, v, "partial_rotary_factor", 0, 0, 0, &l->cfg.rope_partial) != 0)
		return -1;
	if (l->cfg.rope_partial > 1) {
		size_t old = path_key(c, "partial_rotary_factor");
		fail(c, _("expected a number from 0 to 1 (the share of each head's columns that turn), got %g"), l->cfg.rope_partial);
		path_set(c, old);
		return -1;
	}
	return sc != NULL ? read_rope_scaling(c, sc, &l->cfg.rope_scaling) : 0;
}

/*
 * A layer's own "rope" (in "layers"): false makes it a NoPE layer of a lesson
 * with RoPE (SmolLM3's every 4th), true is the lesson's RoPE, {"base": b,
 * "scaling": {…}} the lesson's RoPE (its style and partial_rotary_factor)
 * with the layer's own base and scaling, none when it gives none
 * (LayerOwn.rope_base, rope_scaling: Gemma 3's local layers turn by
 * rope_local_base_freq unscaled, its global ones by rope_theta with
 * rope_scaling); merge_layer leaves it out of the merged lesson, so it is
 * read from the layer here.
 */
int li_read_layer_rope(Ctx *c, const cJSON *layer, const ModelConfig *top, LayerParams *lp, LayerOwn *own)
{
	const int lesson_rope = top->rope;
	static const char *const layer_rope_keys[] = { "base", "scaling", NULL };
	const cJSON *v = layer != NULL ? get(layer, "rope") : NULL;
	size_t old;
	int r = 0;

	lp->rope_off = 0;
	own->rope_own = 0;
	if (v == NULL)
		return 0;
	old = path_key(c, "rope");
	if (cJSON_IsObject(v) && lesson_rope) {
		/* its own base (Gemma 3: rope_local_base_freq 10000 on the local layers, rope_theta 1000000 on the global) */
		warn_unknown_keys(c, v, layer_rope_keys);
		own->rope_base = 0;
		memset(&own->rope_scaling, 0, sizeof own->rope_scaling);
		if (get(v, "base") == NULL) {
			path_key(c, "base");
			r = fail(c, _("missing: a layer's \"rope\" object gives its own \"base\" (and its own \"scaling\", if any; the style stays the top level's)"));
		} else if (key_finite(c, v, "base", &own->rope_base) == 0 && !(own->rope_base > 0)) {
			path_key(c, "base");
			r = fail(c, _("expected a base above 0, got %g"), own->rope_base);
		} else if (c->err == NULL && get(v, "scaling") != NULL && read_rope_scaling(c, get(v, "scaling"), &own->rope_scaling) != 0) {
			r = -1;
		} else if (own->rope_scaling.type == ROPE_SCALE_DYNAMIC && top->decode) { /* as the top level's (lesson_shapes.c) */
			path_key(c, "scaling");
			path_key(c, "type");
			r = fail(c, _("dynamic NTK changes the base as the sequence grows, so a cached key was turned with another one: "
			              "leave out \"decode\", or use another scaling"));
		} else {
			own->rope_own = c->err == NULL;
			r = c->err == NULL ? 0 : -1;
		}
	} else if (!cJSON_IsBool(v) && !cJSON_IsObject(v))
		r = fail(c, _("expected false (a layer without RoPE, a NoPE layer) or true, got %s"), got(v).s);
	else if (!lesson_rope && cJSON_IsFalse(v))
		r = fail(c, _("a layer can leave out RoPE only in a lesson with \"rope\" at its top level"));
	else if (!lesson_rope)
		r = fail(c, _("a layer cannot turn RoPE on by itself: give \"rope\" at the top level, and false to the layers without it"));
	else
		lp->rope_off = cJSON_IsFalse(v);
	path_set(c, old);
	return r;
}


/* "rope" of the top level (its defaults when absent): base 10000, style "half". */
static int read_rope(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *v;
	size_t old;
	int r = 0;

	l->cfg.rope_base = 10000.0;
	l->cfg.rope_style = ROPE_HALF;
	if ((v = get(root, "rope")) != NULL) {
		old = path_key(c, "rope");
		if (cJSON_IsBool(v)) {
			l->cfg.rope = cJSON_IsTrue(v);
		} else if (cJSON_IsObject(v)) {
			static const char *const styles[] = { "half", "interleaved", NULL };
			int style = 0;
			warn_unknown_keys(c, v, rope_keys);
			l->cfg.rope = 1;
			if (key_choice(c, v, "style", styles, &style) != 0)
				r = -1;
			l->cfg.rope_style = (RopeStyle)style;
			if (r == 0 && read_rope_extras(c, v, l) != 0)
				r = -1;
			if (r == 0 && get(v, "base") != NULL) {
				const cJSON *b = get(v, "base");
				size_t old2 = path_key(c, "base");
				if (!cJSON_IsNumber(b) || !isfinite(b->valuedouble) || b->valuedouble <= 0)
					r = fail(c, _("expected a number > 0, got %s"), got(b).s);
				else
					l->cfg.rope_base = b->valuedouble;
				path_set(c, old2);
			}
		} else {
			r = fail(c, _("expected true (base 10000, style \"half\"), false, or {\"base\": 10000, \"style\": "
			            "\"half\" | \"interleaved\"}, got %s"), got(v).s);
		}
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	return 0;
}

/* RoPE's "scaling" s (issue 23 §2) into the "rope" object r, when it has one. */
static int write_scaling(cJSON *r, const RopeScaling *s)
{
	cJSON *o;

	if (s->type == ROPE_SCALE_NONE)
		return 0;
	if (li_put(r, "scaling", o = cJSON_CreateObject()) != 0 || !cJSON_AddStringToObject(o, "type", rope_scale_name(s->type)) ||
	    li_put(o, "factor", jw_number(s->factor)) != 0)
		return -1;
	if (s->type != ROPE_SCALE_LINEAR && !cJSON_AddNumberToObject(o, "original_max_position_embeddings", s->orig_max))
		return -1;
	if (s->type == ROPE_SCALE_YARN &&
	    (li_put(o, "beta_fast", jw_number(s->beta_fast)) != 0 || li_put(o, "beta_slow", jw_number(s->beta_slow)) != 0 ||
	     (s->attn_factor > 0 && li_put(o, "attention_factor", jw_number(s->attn_factor)) != 0) ||
	     (s->mscale != 0 && li_put(o, "mscale", jw_number(s->mscale)) != 0) ||
	     (s->mscale_all_dim != 0 && li_put(o, "mscale_all_dim", jw_number(s->mscale_all_dim)) != 0) ||
	     !cJSON_AddBoolToObject(o, "truncate", s->truncate)))
		return -1;
	if (s->type == ROPE_SCALE_LLAMA3 &&
	    (li_put(o, "low_freq_factor", jw_number(s->low_freq)) != 0 || li_put(o, "high_freq_factor", jw_number(s->high_freq)) != 0))
		return -1;
	return 0;
}


/* RoPE's "partial_rotary_factor" and "scaling" (issue 23 §2) into the "rope" object r, when the lesson has them. */
static int write_rope_scaling(cJSON *r, const ModelConfig *c)
{
	if (c->rope_partial > 0 && c->rope_partial < 1 && li_put(r, "partial_rotary_factor", jw_number(c->rope_partial)) != 0)
		return -1;
	return write_scaling(r, &c->rope_scaling);
}

/* A layer's own RoPE: "rope": {"base": b, "scaling": {…}} (the scaling when it has one). 0, or -1 out of memory. */
int li_write_layer_rope(cJSON *o, const LayerOwn *own)
{
	cJSON *r = cJSON_CreateObject();

	return li_put(o, "rope", r) != 0 || li_put(r, "base", jw_number(own->rope_base)) != 0 ||
	               write_scaling(r, &own->rope_scaling) != 0
	           ? -1
	           : 0;
}

/* "rope" written back; a compare variant that drops its lesson's says false. */
static int write_rope(cJSON *o, const Model *l, const Model *top)
{
	static const char *const styles[] = { "half", "interleaved" };
	cJSON *r;

	if (top != NULL && top->cfg.rope && !l->cfg.rope && !cJSON_AddFalseToObject(o, "rope"))
		return -1;
	if (!l->cfg.rope)
		return 0;
	r = cJSON_CreateObject();
	return li_put(o, "rope", r) != 0 || li_put(r, "base", jw_number(l->cfg.rope_base)) != 0 ||
	               !cJSON_AddStringToObject(r, "style", styles[l->cfg.rope_style]) || write_rope_scaling(r, &l->cfg) != 0
	           ? -1
	           : 0;
}

const LessonKey li_rope_keys[] = {
	/* a layer's own "rope" is read by li_read_layer_rope (lesson_block.c calls it), not merged */
	{ .name = "rope", .kind = LK_CUSTOM, .where = LK_TOP | LK_LAYER, .read = read_rope, .write = write_rope },
	{ .name = NULL },
};
