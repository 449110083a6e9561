/*
 * lesson_decode.c: decoding's key (issue 11), one table (lesson_keys.h):
 * "decode": true generates one token at a time with a KV cache.
 */
#include "lesson/lesson_internal.h"
#include "base/jsonwrite.h"

static int read_decode(Ctx *c, const cJSON *root, Model *l)
{
	const cJSON *v;
	size_t old;
	int r = 0;

	if ((v = get(root, "decode")) != NULL) {
		old = path_key(c, "decode");
		if (!cJSON_IsBool(v))
			r = fail(c, _("expected true (generate one token at a time with a KV cache) or false, got %s"), got(v).s);
		l->cfg.decode = cJSON_IsTrue(v);
		path_set(c, old);
		if (r != 0)
			return -1;
	}
	return 0;
}

/* "decode": true written back; a compare variant that drops its lesson's says false. */
static int write_decode(cJSON *o, const Model *l, const Model *top)
{
	if (top != NULL && top->cfg.decode && !l->cfg.decode && !cJSON_AddFalseToObject(o, "decode"))
		return -1;
	return l->cfg.decode && !cJSON_AddTrueToObject(o, "decode") ? -1 : 0;
}

const LessonKey li_decode_keys[] = {
	{ .name = "decode", .kind = LK_CUSTOM, .where = LK_TOP, .read = read_decode, .write = write_decode },
	{ .name = NULL },
};
