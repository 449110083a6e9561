/*
 * lesson_softcap.c: soft-capping's keys (issue 23 §5, Gemma 2's config keys),
 * one table (lesson_keys.h): "attn_logit_softcapping": c caps the scaled
 * scores, "final_logit_softcapping": c the LM head's logits (it needs
 * "vocab"). Each a number > 0, or 0 / false for none (a compare variant
 * turns the lesson's off so).
 */
#include "lesson/lesson_internal.h"

/* The final cap works on the LM head's logits: a lesson without "vocab" has none. */
static int final_needs_vocab(Ctx *c, const cJSON *root, const cJSON *v)
{
	if (v->valuedouble > 0 && get(root, "vocab") == NULL)
		return fail(c, _("caps the LM head's logits: it needs \"vocab\" and \"unembed\""));
	return 0;
}

const LessonKey li_softcap_keys[] = {
	{ .name = "attn_logit_softcapping", .kind = LK_CAP, .where = LK_TOP, .at = offsetof(ModelConfig, attn_softcap), .hint = "50" },
	{ .name = "final_logit_softcapping", .kind = LK_CAP, .where = LK_TOP, .at = offsetof(ModelConfig, final_softcap), .hint = "30",
	  .check = final_needs_vocab },
	{ .name = NULL },
};
