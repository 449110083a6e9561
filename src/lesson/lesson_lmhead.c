/*
 * lesson_lmhead.c: the LM head's sampling keys (issue 21), one table
 * (lesson_keys.h): "temperature" and "top_k" (the LM head's other keys,
 * "vocab", "unembed", "ids", "logits_row", are read with the matrices in
 * lesson_block.c; json_lm_head in lesson_write.c writes all of them back).
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

#include <math.h>

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

const LessonKey li_lmhead_keys[] = {
	{ .name = "temperature", .kind = LK_CUSTOM, .where = LK_TOP, .read = read_lm_settings }, /* and top_k */
	{ .name = "top_k", .kind = LK_CUSTOM, .where = LK_TOP },
	{ .name = NULL },
};
