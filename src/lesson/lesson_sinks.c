/*
 * lesson_sinks.c: attention sinks' key (issue 23 §4, gpt-oss), one table
 * (lesson_keys.h): "sinks", one learned logit per query head, each layer its
 * own; false: none (a compare variant's).
 */
#include "lesson/lesson_internal.h"

static void sinks_shape(const Model *m, int *rows, int *cols)
{
	*rows = 1;
	*cols = m->lp.heads;
}

/* Before the sizes: a list stands for its heads' logits (anything else is refused when it is read). */
static void sinks_given(const cJSON *v, const Model *m, int *rows, int *cols)
{
	if (cJSON_IsArray(v))
		sinks_shape(m, rows, cols);
}

const LessonKey li_sinks_keys[] = {
	{ .name = "sinks", .kind = LK_MATRIX, .where = LK_TOP | LK_LAYER, .at = offsetof(LayerParams, sinks),
	  .hint2 = N_("heads, one sink logit per query head"), .shape = sinks_shape, .given = sinks_given },
	{ .name = NULL },
};
