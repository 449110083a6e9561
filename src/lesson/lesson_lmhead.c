/*
 * lesson_lmhead.c: the LM head's keys (issue 21), one table (lesson_keys.h):
 * "temperature" and "top_k" with the settings; "vocab", "unembed", "ids"
 * and "logits_row" with the matrices (li_read_lm_head in lesson_block.c
 * checks them together); all of them written back with "vocab".
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

/*
 * The head's matrices once the shapes are known (li_read_lm_head: the vocabulary, unembed, ids and logits_row
 * checked together), by the layer that carries the head: a lesson without layers, or a stack's last layer. A
 * stack's head is read again from the top level once its layers are (li_lesson_with_layers), and its vocabulary's
 * size set before the steps are read (lesson_read.c): both need the stack, which a row's hooks do not see.
 */
static int read_lm_head_weights(Ctx *c, const cJSON *root, Model *l)
{
	static const char *const keys[] = { "vocab", "unembed", "ids", "logits_row", NULL };
	int any = 0;

	for (int k = 0; keys[k] != NULL; k++)
		any |= get(root, keys[k]) != NULL;
	if (!any) {
		l->cfg.logits_row = l->cfg.n - 1;
		return 0;
	}
	return li_lm_carrier(c) ? li_read_lm_head(c, root, l) : 0;
}

/* The LM head (issue 21): "vocab" (ids as "#v" when the model gave no tokens), "unembed", "ids", "temperature", "top_k", "logits_row". */
static int write_lm_head(cJSON *o, const Model *l, const Model *top)
{
	const ModelConfig *c = &l->cfg;
	const Mat *u;
	cJSON *v;

	(void)top; /* a compare variant writes its own head (it has the lesson's unless it gives another) */
	if (c->vocab <= 0)
		return 0;
	if (li_put(o, "vocab", v = cJSON_CreateArray()) != 0)
		return -1;
	for (int i = 0; i < c->vocab; i++) {
		char id[24];
		snprintf(id, sizeof id, "#%d", i);
		if (!cJSON_AddItemToArray(v, cJSON_CreateString(c->vocab_tokens != NULL ? c->vocab_tokens[i] : id)))
			return -1;
	}
	/* a real model's unembedding (in its file's dtype) written as doubles, as a lesson's */
	u = matview_empty(&c->unembed_view) ? &c->unembed : matview_doubles(&c->unembed_view);
	if (u == NULL || li_put(o, "unembed", jw_matrix(u)) != 0)
		return -1;
	if (c->ids != NULL) {
		if (li_put(o, "ids", v = cJSON_CreateArray()) != 0)
			return -1;
		for (int i = 0; i < c->n; i++)
			if (!cJSON_AddItemToArray(v, cJSON_CreateNumber((double)c->ids[i])))
				return -1;
	}
	return li_put(o, "temperature", jw_number(c->temperature > 0 ? c->temperature : 1.0)) != 0 ||
	               !cJSON_AddNumberToObject(o, "top_k", c->top_k >= 1 ? c->top_k : 10) ||
	               !cJSON_AddNumberToObject(o, "logits_row", c->logits_row >= 0 && c->logits_row < c->n ? c->logits_row : c->n - 1)
	           ? -1
	           : 0;
}

const LessonKey li_lmhead_keys[] = {
	{ .name = "temperature", .kind = LK_CUSTOM, .where = LK_TOP, .read = read_lm_settings }, /* and top_k */
	{ .name = "top_k", .kind = LK_CUSTOM, .where = LK_TOP },
	/* and unembed, ids, logits_row, temperature and top_k written back with the vocabulary */
	{ .name = "vocab", .kind = LK_CUSTOM, .where = LK_TOP, .weights = read_lm_head_weights, .write = write_lm_head },
	{ .name = "unembed", .kind = LK_CUSTOM, .where = LK_TOP }, /* read and written with "vocab" */
	{ .name = "ids", .kind = LK_CUSTOM, .where = LK_TOP },
	{ .name = "logits_row", .kind = LK_CUSTOM, .where = LK_TOP },
	{ .name = NULL },
};
