/*
 * lesson_decode.c: decoding's key (issue 11), one table (lesson_keys.h):
 * "decode": true generates one token at a time with a KV cache; an object,
 * {"cache": {"sink": S, "window": W}}, StreamingLLM's cache (lesson_streaming.c).
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
		if (cJSON_IsObject(v)) /* StreamingLLM's cache: lesson_streaming.c */
			r = li_read_decode_cache(c, v, l);
		else if (!cJSON_IsBool(v))
			r = fail(c, _("expected true (generate one token at a time with a KV cache) or false, got %s"), got(v).s);
		else
			l->cfg.decode = cJSON_IsTrue(v), l->cfg.cache_sink = l->cfg.cache_window = 0;
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
	if (l->cfg.decode && l->cfg.cache_window > 0) { /* StreamingLLM's cache (lesson_streaming.c) */
		cJSON *d = cJSON_CreateObject(), *k = NULL;
		if (cJSON_AddItemToObject(o, "decode", d) == 0 || (k = cJSON_AddObjectToObject(d, "cache")) == NULL ||
		    !cJSON_AddItemToObject(k, "sink", jw_number(l->cfg.cache_sink)) ||
		    !cJSON_AddItemToObject(k, "window", jw_number(l->cfg.cache_window)))
			return -1;
		return 0;
	}
	return l->cfg.decode && !cJSON_AddTrueToObject(o, "decode") ? -1 : 0;
}

const LessonKey li_decode_keys[] = {
	{ .name = "decode", .kind = LK_CUSTOM, .where = LK_TOP, .read = read_decode, .write = write_decode },
	{ .name = NULL },
};
