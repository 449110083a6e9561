/*
 * lesson_settings.c: the attention's settings as a lesson file gives them:
 * the format version, the mask (one, or a list), key/value heads, RoPE,
 * ALiBi, decoding and FlashAttention's tiles, positions, score, scale and
 * the mask's fill.
 */
#include "lesson/lesson_internal.h"
#include "model/ropefreq.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const rope_keys[] = { "base", "style", "partial_rotary_factor", "scaling", NULL };
static const char *const alibi_keys[] = { "slopes", NULL };
static const char *const qk_norm_keys[] = { "q", "k", "eps", "over", NULL };

/*
 * "qk_norm": {"q": [d_k numbers], "k": [d_k numbers], "eps": 1e-6, "over": "head"}
 * ("over": "projection", OLMo 2: q has h·d_k numbers and k g·d_k): the
 * setting and its eps now (the weights, one head's width, once the shapes
 * are known: li_read_v2_matrices). Every layer has it when the top level
 * says so; a layer may give weights of its own, and the eps is the top level's.
 */
static int read_qk_norm_setting(Ctx *c, const cJSON *v, Model *l)
{
	size_t old = path_key(c, "qk_norm");
	int r = 0;

	l->cfg.qk_norm_eps = 1e-6;
	if (!cJSON_IsObject(v)) {
		r = fail(c, _("expected {\"q\": [d_k numbers], \"k\": [d_k numbers], \"eps\": 1e-6} (QK-norm's weights), got %s"),
		         got(v).s);
	} else {
		warn_unknown_keys(c, v, qk_norm_keys);
		if (get(v, "q") == NULL || get(v, "k") == NULL) {
			path_key(c, get(v, "q") == NULL ? "q" : "k");
			r = fail(c, _("missing: QK-norm needs both weights, q and k (d_k numbers each)"));
		} else if (get(v, "eps") != NULL) {
			const cJSON *e = get(v, "eps");
			path_key(c, "eps");
			if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble < 0)
				r = fail(c, _("expected a number \u2265 0, got %s"), got(e).s);
			else
				l->cfg.qk_norm_eps = e->valuedouble;
		}
	}
	l->cfg.qk_norm = r == 0 ? QK_NORM_HEAD : QK_NORM_NONE;
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

/* The LM head's "temperature" (a number > 0, default 1) and "top_k" (1 … LESSON_MAX_TOP_K, default 10). */
static int read_lm_settings(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *v = get(root, "temperature");
	long long k = 10;
	size_t old;

	l->cfg.temperature = 1.0;
	if (v != NULL) {
		old = path_key(c, "temperature");
		if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble <= 0) {
			fail(c, _("expected a number > 0 (the softmax of the next token divides the logits by it), got %s"), got(v).s);
			path_set(c, old);
			return -1;
		}
		l->cfg.temperature = v->valuedouble;
		path_set(c, old);
	}
	if (key_whole(c, root, "top_k", 1, LESSON_MAX_TOP_K, _("a whole number from 1 to 100 (LESSON_MAX_TOP_K)"), &k) != 0)
		return -1;
	l->cfg.top_k = (int)k;
	return 0;
}
static const char *const flash_keys[] = { "block_q", "block_k", NULL };
static const char *const mask_keys[] = { "padding", "window", NULL };

int li_read_version(Ctx *c, const cJSON *root, int *version)
{
	const cJSON *v = get(root, "attnviz");
	size_t old = path_key(c, "attnviz");
	int r = 0;

	if (v == NULL)
		r = fail(c, _("missing: a lesson starts with \"attnviz\": 1 (the format version)"));
	else if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
		r = fail(c, _("expected the format version 1 or 2, got %s"), got(v).s);
	else if (v->valuedouble != 1 && v->valuedouble != 2)
		r = fail(c, _("this file is format %s, but this build of attnviz reads formats 1 and 2%s"), got(v).s,
		         v->valuedouble > 2 ? _(" (a newer attnviz may read it)") : "");
	else
		*version = (int)v->valuedouble;
	path_set(c, old);
	return r;
}

/*
 * One mask at the current path: "none", "causal", {"padding": […]},
 * {"window": w} or an n × m matrix of 0/1. in_list: an element of a list,
 * which may not be a list itself.
 */
static int read_one_mask(Ctx *c, const cJSON *v, int in_list, MaskSrc *out)
{
	const char *const expect = _(
		"\"none\", \"causal\", {\"padding\": [1, 1, 0, …]}, {\"window\": w}, an n × m matrix of 0/1, or a list of them");

	memset(out, 0, sizeof *out);
	out->kind = MASK_NONE;
	if (cJSON_IsString(v)) {
		static const char *const words[] = { "none", "causal" };
		if (strcmp(v->valuestring, "none") == 0)
			return 0;
		if (strcmp(v->valuestring, "causal") == 0) {
			out->kind = MASK_CAUSAL;
			return 0;
		}
		return fail(c, _("expected %s, got %s%s"), expect, got(v).s, did_you_mean(v->valuestring, words, 2).s);
	}
	if (cJSON_IsObject(v)) {
		const int has_pad = get(v, "padding") != NULL, has_win = get(v, "window") != NULL;
		warn_unknown_keys(c, v, mask_keys);
		if (has_pad && has_win)
			return fail(c, _("a mask object has one key: to combine padding and a window, give a list "
			               "[{\"padding\": …}, {\"window\": …}]"));
		if (has_win) {
			long long w = 0;
			const cJSON *wv = get(v, "window");
			if (cJSON_IsNumber(wv) && wv->valuedouble > LESSON_MAX_TOKENS) { /* the limit named */
				path_key(c, "window");
				return fail(c, _("expected a whole number from 1 to %d (LESSON_MAX_TOKENS), got %s"), LESSON_MAX_TOKENS,
				            got(wv).s);
			}
			if (key_whole(c, v, "window", 1, LESSON_MAX_TOKENS, _("a whole number ≥ 1"), &w) != 0)
				return -1;
			out->kind = MASK_WINDOW;
			out->window = (int)w;
			return 0;
		}
		if (!has_pad)
			return fail(c, _("expected {\"padding\": [1, 1, 0, …]} (1 = may attend, 0 = masked) or {\"window\": w}"));
		out->kind = MASK_PADDING;
		return li_read_matsrc(c, v, "padding", &LIM_PADDING, &out->ms);
	}
	if (cJSON_IsArray(v) && (cJSON_GetArraySize(v) == 0 || cJSON_IsArray(v->child) || in_list)) {
		if (in_list && !cJSON_IsArray(v->child))
			return fail(c, _("expected a mask (\"causal\", {\"padding\": …}, {\"window\": w} or a matrix); a list "
			               "of masks cannot hold another list"));
		out->kind = MASK_MATRIX;
		return li_read_matsrc_value(c, v, &LIM_MASK, &out->ms);
	}
	return fail(c, _("expected %s, got %s"), expect, got(v).s);
}

/* "mask": one mask, or a list of them (a cell is visible when every mask allows it). */
int li_read_mask(Ctx *c, const cJSON *root, Model *l, MaskSrc *parts, int *nparts)
{
	const cJSON *v = get(root, "mask"), *it;
	size_t old;
	int r = 0;

	*nparts = 0;
	l->cfg.mask = MASK_NONE;
	if (v == NULL)
		return 0;
	old = path_key(c, "mask");
	if (cJSON_IsArray(v) && (cJSON_GetArraySize(v) == 0 || !cJSON_IsArray(v->child))) {
		int i = 0;
		if (cJSON_GetArraySize(v) == 0)
			r = fail(c, _("an empty list of masks (give at least one, or \"none\")"));
		else if (cJSON_GetArraySize(v) > LESSON_MAX_MASKS)
			r = fail(c, _("%d masks is over the limit of %d in one list (LESSON_MAX_MASKS)"), cJSON_GetArraySize(v),
			         LESSON_MAX_MASKS);
		cJSON_ArrayForEach(it, v) {
			size_t old2;
			MaskSrc one;
			if (r != 0)
				break;
			old2 = path_index(c, i++);
			r = read_one_mask(c, it, 1, &one);
			path_set(c, old2);
			if (r == 0 && one.kind != MASK_NONE)
				parts[(*nparts)++] = one;
		}
		l->cfg.mask = *nparts > 0 ? MASK_LIST : MASK_NONE;
	} else {
		r = read_one_mask(c, v, 0, &parts[0]);
		if (r == 0 && parts[0].kind != MASK_NONE) {
			l->cfg.mask = parts[0].kind;
			l->cfg.window = parts[0].window;
			*nparts = 1;
		}
	}
	path_set(c, old);
	return r;
}

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
static int read_rope_scaling(Ctx *c, const cJSON *v, Model *l)
{
	static const char *const types[] = { "linear", "dynamic", "yarn", "llama3", NULL };
	static const char *const linear_keys[] = { "type", "factor", NULL };
	static const char *const dynamic_keys[] = { "type", "factor", "original_max_position_embeddings", NULL };
	static const char *const yarn_keys[] = { "type", "factor", "original_max_position_embeddings", "beta_fast",
		                                 "beta_slow", "attention_factor", "truncate", "mscale", "mscale_all_dim", NULL };
	static const char *const llama3_keys[] = { "type", "factor", "original_max_position_embeddings", "low_freq_factor",
		                                   "high_freq_factor", NULL };
	static const char *const *const keys[] = { linear_keys, dynamic_keys, yarn_keys, llama3_keys };
	RopeScaling *s = &l->cfg.rope_scaling;
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
	return sc != NULL ? read_rope_scaling(c, sc, l) : 0;
}

/*
 * A layer's own "rope" (in "layers"): false makes it a NoPE layer of a lesson
 * with RoPE (SmolLM3's every 4th), true is the lesson's RoPE, {"base": b}
 * the lesson's RoPE with the layer's own base (LayerOwn.rope_base: Gemma 3's
 * rope_local_base_freq on its local layers); merge_layer
 * leaves it out of the merged lesson, so it is read from the layer here.
 */
int li_read_layer_rope(Ctx *c, const cJSON *layer, const ModelConfig *top, LayerParams *lp, LayerOwn *own)
{
	const int lesson_rope = top->rope;
	static const char *const layer_rope_keys[] = { "base", NULL };
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
		if (top->rope_scaling.type != ROPE_SCALE_NONE) {
			/* Gemma 3's local rotary embedding drops the scaling (rope_type "default"): not mixed here yet */
			r = fail(c, _("a layer's own base turns unscaled in Gemma 3, but this lesson's RoPE is scaled: give "
			              "the layers one base, or leave out \"scaling\""));
		} else if (get(v, "base") == NULL) {
			path_key(c, "base");
			r = fail(c, _("missing: a layer's \"rope\" object gives its own \"base\" (scaling and style stay at the top level)"));
		} else if (key_finite(c, v, "base", &own->rope_base) == 0 && !(own->rope_base > 0)) {
			path_key(c, "base");
			r = fail(c, _("expected a base above 0, got %g"), own->rope_base);
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

/* The issue-11 settings shared by every layer: "rope", "alibi", "decode", "flash". */
/*
 * Linear attention beside softmax's (issue 24 §3): "linear_attention": true
 * (φ = elu + 1, not causal, eps 1e-6) or {"feature_map": "elu+1", "causal":
 * true, "eps": 1e-6}; false or absent: none.
 */
static int read_linear_attention(Ctx *c, const cJSON *root, Model *l)
{
	static const char *const keys[] = { "feature_map", "causal", "eps", NULL };
	static const char *const maps[] = { "elu+1", NULL };
	const cJSON *v = get(root, "linear_attention"), *x;
	size_t old, old2;
	int r = 0, map = 0;

	l->cfg.linear_eps = 1e-6;
	if (v == NULL)
		return 0;
	old = path_key(c, "linear_attention");
	if (cJSON_IsBool(v))
		l->cfg.linear = cJSON_IsTrue(v);
	else if (!cJSON_IsObject(v))
		r = fail(c, _("expected true, false, or {\"feature_map\": \"elu+1\", \"causal\": true, \"eps\": 1e-6}, got %s"),
		         got(v).s);
	else {
		l->cfg.linear = 1;
		if (refuse_unknown_keys(c, v, keys, _("key")) != 0 || key_choice(c, v, "feature_map", maps, &map) != 0)
			r = -1;
		if (r == 0 && (x = get(v, "causal")) != NULL) {
			old2 = path_key(c, "causal");
			if (!cJSON_IsBool(x))
				r = fail(c, _("expected true (query i reads keys j \u2264 i) or false, got %s"), got(x).s);
			else
				l->cfg.linear_causal = cJSON_IsTrue(x);
			path_set(c, old2);
		}
		if (r == 0 && (x = get(v, "eps")) != NULL) {
			old2 = path_key(c, "eps");
			if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0)
				r = fail(c, _("expected a number \u2265 0 added to each row's normaliser (fast-transformers: 1e-6), got %s"),
				         got(x).s);
			else
				l->cfg.linear_eps = x->valuedouble;
			path_set(c, old2);
		}
	}
	path_set(c, old);
	return r != 0 ? -1 : 0;
}

int li_read_modern(Ctx *c, const cJSON *root, Model *l)
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
	if ((v = get(root, "alibi")) != NULL) {
		old = path_key(c, "alibi");
		if (cJSON_IsBool(v)) {
			l->cfg.alibi = cJSON_IsTrue(v);
		} else if (cJSON_IsObject(v)) {
			const cJSON *sl = get(v, "slopes"), *x;
			warn_unknown_keys(c, v, alibi_keys);
			if (sl == NULL) {
				r = fail(c, _("expected {\"slopes\": [one number per head]} (write true for the ALiBi paper's slopes)"));
			} else {
				const int count = cJSON_GetArraySize(sl);
				path_key(c, "slopes");
				if (!cJSON_IsArray(sl))
					r = fail(c, _("expected %d numbers (one per head), got %s"), l->lp.heads, got(sl).s);
				else if (count != l->lp.heads)
					r = fail(c, _("expected %d numbers (one per head), got %d"), l->lp.heads, count);
				else if (mat_alloc(&l->lp.alibi_slopes, 1, count) != 0)
					r = fail_oom(c);
				else {
					int i = 0;
					cJSON_ArrayForEach(x, sl) {
						size_t old2 = path_index(c, i);
						if (read_finite(c, x, &l->lp.alibi_slopes.a[i]) != 0)
							r = -1;
						path_set(c, old2);
						if (r != 0)
							break;
						i++;
					}
				}
				l->cfg.alibi = 1;
			}
		} else {
			r = fail(c, _("expected true (the ALiBi paper's slopes), false, or {\"slopes\": [one number per head]}, got %s"),
			         got(v).s);
		}
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	if ((v = get(root, "decode")) != NULL) {
		old = path_key(c, "decode");
		if (!cJSON_IsBool(v))
			r = fail(c, _("expected true (generate one token at a time with a KV cache) or false, got %s"), got(v).s);
		l->cfg.decode = cJSON_IsTrue(v);
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	if ((v = get(root, "qk_norm")) != NULL && read_qk_norm_setting(c, v, l) != 0)
		return -1;
	if (li_keys_read_settings(c, root, l) != 0) /* the tables' settings (lesson_keys.h): soft-capping, … */
		return -1;
	if (read_linear_attention(c, root, l) != 0)
		return -1;
	if (read_lm_settings(c, root, l) != 0)
		return -1;
	if ((v = get(root, "flash")) != NULL) {
		old = path_key(c, "flash");
		if (cJSON_IsFalse(v)) {
			/* no tiles (a compare variant may turn them off) */
		} else if (!cJSON_IsObject(v) || get(v, "block_q") == NULL || get(v, "block_k") == NULL) {
			r = fail(c, _("expected {\"block_q\": Bq, \"block_k\": Bk} (the tile: Bq query rows by Bk key columns) or false, "
			            "got %s"), got(v).s);
		} else {
			warn_unknown_keys(c, v, flash_keys);
			/* the range (1 … n, 1 … m) is checked with the shapes */
			for (int k = 0; k < 2 && r == 0; k++) {
				const cJSON *b = get(v, k ? "block_k" : "block_q");
				size_t old2 = path_key(c, k ? "block_k" : "block_q");
				if (!cJSON_IsNumber(b) || !isfinite(b->valuedouble) || b->valuedouble != floor(b->valuedouble) ||
				    fabs(b->valuedouble) > 1e9)
					r = fail(c, _("expected a whole number, got %s"), got(b).s);
				else if (k)
					l->cfg.flash_bk = (int)b->valuedouble;
				else
					l->cfg.flash_bq = (int)b->valuedouble;
				path_set(c, old2);
			}
			/* both 0 would read as no tiles at all, silently: "flash": false says that */
			if (r == 0 && l->cfg.flash_bq == 0 && l->cfg.flash_bk == 0) {
				size_t old2 = path_key(c, "block_q");
				r = fail(c, _("expected a whole number from 1 to n (the query rows), got 0 (\"flash\": false turns the "
				              "tiles off)"));
				path_set(c, old2);
			}
		}
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	return 0;
}

int li_read_scalars(Ctx *c, const cJSON *root, Model *l)
{
	static const char *const positionals[] = { "none", "sinusoidal", "learned", NULL };
	static const char *const scores[] = { "dot", "additive", NULL };
	const cJSON *v;
	long long heads = 1;
	int k;
	size_t old;

	k = 0;
	if (key_choice(c, root, "positional", positionals, &k) != 0)
		return -1;
	l->cfg.positional = (Positional)k;
	k = 0;
	if (key_choice(c, root, "score", scores, &k) != 0)
		return -1;
	l->cfg.score = (ScoreKind)k;
	if (key_whole(c, root, "heads", 1, 1e9, _("a whole number ≥ 1"), &heads) != 0)
		return -1;
	if (heads > LESSON_MAX_HEADS) {
		old = path_key(c, "heads");
		fail(c, _("%lld is over the limit of %d heads (LESSON_MAX_HEADS)"), heads, LESSON_MAX_HEADS);
		path_set(c, old);
		return -1;
	}
	l->lp.heads = (int)heads;
	{
		long long g = heads;
		if (key_whole(c, root, "kv_heads", 1, 1e9, _("a whole number ≥ 1"), &g) != 0)
			return -1;
		l->lp.kv_heads_given = get(root, "kv_heads") != NULL;
		if (g > heads || heads % g != 0) {
			old = path_key(c, "kv_heads");
			fail(c, _("%lld does not divide the %lld query heads"), g, heads);
			path_set(c, old);
			return -1;
		}
		l->lp.kv_heads = (int)g;
	}

	l->cfg.scale = SCALE_SQRT_DK;
	v = get(root, "scale");
	if (v != NULL) {
		l->cfg.scale_explicit = 1;
		old = path_key(c, "scale");
		if (cJSON_IsTrue(v)) {
			l->cfg.scale = SCALE_SQRT_DK;
		} else if (cJSON_IsFalse(v)) {
			l->cfg.scale = SCALE_NONE;
		} else if (cJSON_IsNumber(v)) {
			if (read_finite(c, v, &l->cfg.scale_value) != 0)
				return -1;
			l->cfg.scale = SCALE_VALUE;
		} else {
			return fail(c, _("expected true (× 1/√d_k), false (× 1) or a number (× that number), got %s"),
			            got(v).s);
		}
		path_set(c, old);
	}

	l->cfg.mask_fill_inf = 1;
	v = get(root, "mask_fill");
	if (v != NULL) {
		old = path_key(c, "mask_fill");
		if (cJSON_IsString(v) && strcmp(v->valuestring, "-inf") == 0) {
			l->cfg.mask_fill_inf = 1;
		} else if (cJSON_IsNumber(v)) {
			if (read_finite(c, v, &l->cfg.mask_fill) != 0)
				return -1;
			l->cfg.mask_fill_inf = 0;
		} else {
			return fail(c, _("expected \"-inf\" or a number, got %s"), got(v).s);
		}
		path_set(c, old);
	}
	return 0;
}
