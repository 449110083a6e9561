/*
 * lesson_gated.c: gated attention's key (issue 23 §6, Qwen3-Next), one table
 * (lesson_keys.h): "W_gate", d_model × heads·d_v, concat ⊙ σ(x·W_gate)
 * before W_o, each layer its own; false: none (a compare variant's); and
 * its bias "b_gate", heads·d_v numbers (Qwen3-Next's q_proj has one with
 * attention_bias), only with W_gate.
 */
#include "lesson/lesson_internal.h"

static void gate_shape(const Model *m, int *rows, int *cols)
{
	*rows = m->cfg.d_model;
	*cols = m->lp.heads * m->lp.d_v;
}

/* Before the sizes: X's columns, and heads × W_v's columns per key/value head. */
static void gate_given(const cJSON *v, const Model *m, int *rows, int *cols)
{
	const int g = m->lp.kv_heads > 0 ? m->lp.kv_heads : m->lp.heads;

	(void)v;
	*rows = m->cfg.input.cols;
	*cols = g > 0 ? m->lp.heads * (m->lp.W_v.cols / g) : 0;
}

static void bias_shape(const Model *m, int *rows, int *cols)
{
	*rows = 1;
	*cols = m->lp.heads * m->lp.d_v;
}

static void bias_given(const cJSON *v, const Model *m, int *rows, int *cols)
{
	gate_given(v, m, rows, cols);
	*rows = 1;
}

/* The bias goes with a gate: "W_gate" given; "W_gate": false (a compare variant's) drops both (1: not read). */
static int bias_check(JrCtx *c, const cJSON *root, const cJSON *v)
{
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "W_gate");

	(void)v;
	if (g != NULL)
		return cJSON_IsFalse(g) ? 1 : 0;
	return jr_fail(c, "%s", _("the gate's bias goes with the gate: give \"W_gate\" too"));
}

const LessonKey li_gated_keys[] = {
	{ .name = "W_gate", .kind = LK_MATRIX, .where = LK_TOP | LK_LAYER, .at = offsetof(LayerParams, W_gate),
	  .hint = N_("d_model, one per column of X"), .hint2 = N_("heads \u00d7 d_v, one per column of concat"),
	  .shape = gate_shape, .given = gate_given },
	{ .name = "b_gate", .kind = LK_MATRIX, .where = LK_TOP | LK_LAYER, .at = offsetof(LayerParams, b_gate),
	  .hint2 = N_("heads \u00d7 d_v, one per column of concat"), .shape = bias_shape, .given = bias_given,
	  .check = bias_check },
	{ .name = NULL },
};
