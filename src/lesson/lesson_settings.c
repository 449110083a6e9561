/*
 * lesson_settings.c: the attention's settings as a lesson file gives them:
 * the format version, the mask (one, or a list), heads,
 * positions, score, scale and the mask's fill; and the settings of the
 * keys' tables (lesson_keys.h: RoPE, ALiBi, decoding, QK-norm, the flash
 * tiles, …, each in its own file), read in their order.
 */
#include "lesson/lesson_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/*
 * "mask": one mask, or a list of them (a cell is visible when every mask allows it).
 *
 * Read here by hand, not from a keys' table (lesson_keys.h), for three reasons a row cannot express: it is format
 * 1's key too (every row is format 2's: a version-1 file naming one is told to say "attnviz": 2); its parts'
 * sources (MaskSrc) are carried from the shapes, read here, to the numbers, filled once the shapes agree
 * (lesson_read.c), and a row's hooks hold nothing between the two; and it is written back for a version-1 lesson
 * too (lesson_write.c: put_mask), where no table's writer runs. A layer's own mask is merged by merge_layer.
 */
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

int li_read_modern(Ctx *c, const cJSON *root, Model *l)
{
	/* the tables' settings (lesson_keys.h), in LESSON_KEY_TABLES' order: RoPE, ALiBi, decode, QK-norm, … */
	return li_keys_read_settings(c, root, l);
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
	l->lp.kv_heads = (int)heads; /* "kv_heads": lesson_gqa.c's table */

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
