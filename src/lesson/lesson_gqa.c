/*
 * lesson_gqa.c: grouped-query attention's key (engine/variants/gqa.c), one
 * table (lesson_keys.h): "kv_heads", the key/value heads g, a whole number
 * that divides "heads" (default: heads, one key/value head per query head),
 * each layer its own.
 */
#include "lesson/lesson_internal.h"

/* Read after "heads" (li_read_scalars), first of the tables' settings. */
static int read_kv_heads(Ctx *c, const cJSON *root, Model *l)
{
	const long long heads = l->lp.heads;
	long long g = heads;

	if (key_whole(c, root, "kv_heads", 1, 1e9, _("a whole number ≥ 1"), &g) != 0)
		return -1;
	l->lp.kv_heads_given = get(root, "kv_heads") != NULL;
	if (g > heads || heads % g != 0) {
		const size_t old = path_key(c, "kv_heads");
		fail(c, _("%lld does not divide the %lld query heads"), g, heads);
		path_set(c, old);
		return -1;
	}
	l->lp.kv_heads = (int)g;
	return 0;
}

/* Written when the layer named it, or its heads share key/value heads (model_kv_named). */
static int write_kv_heads(cJSON *o, const LayerParams *p, const Model *m, LkAt at)
{
	(void)m;
	(void)at;
	return model_kv_named(p) && !cJSON_AddNumberToObject(o, "kv_heads", p->kv_heads) ? -1 : 0;
}

const LessonKey li_gqa_keys[] = {
	{ .name = "kv_heads", .kind = LK_CUSTOM, .where = LK_TOP | LK_LAYER, .read = read_kv_heads, .write_layer = write_kv_heads },
	{ .name = NULL },
};
