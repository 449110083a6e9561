/*
 * lesson_linear.c: linear attention's key (issue 24 §3), one table
 * (lesson_keys.h): "linear_attention".
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <math.h>

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

/* "linear_attention" written back; a compare variant that drops its lesson's says false. */
static int write_linear_attention(cJSON *o, const Model *l, const Model *top)
{
	cJSON *f;

	if (!l->cfg.linear)
		return top != NULL && top->cfg.linear && !cJSON_AddFalseToObject(o, "linear_attention") ? -1 : 0;
	f = cJSON_CreateObject();
	return li_put(o, "linear_attention", f) != 0 || !cJSON_AddStringToObject(f, "feature_map", "elu+1") ||
	               !cJSON_AddBoolToObject(f, "causal", l->cfg.linear_causal) ||
	               li_put(f, "eps", jw_number(l->cfg.linear_eps)) != 0
	           ? -1
	           : 0;
}

const LessonKey li_linear_keys[] = {
	{ .name = "linear_attention", .kind = LK_CUSTOM, .where = LK_TOP, .read = read_linear_attention,
	  .write = write_linear_attention },
	{ .name = NULL },
};
