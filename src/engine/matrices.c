/* matrices.c: any matrix of a computation by its catalogue id — given (the
 * lesson's), computed (attention.c's storage), derived (made on request) or
 * a gradient (backward.c's AttnGrad) — and one cell of it. It sits above
 * the forward and backward passes and calls neither: it only knows where
 * their numbers are kept. */
#include "engine/backward.h"
#include "engine/kernels.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* The gradients in the backward pass's AttnGrad (GradHead for per-head ones), as offset + 1: 0 is none. */
#define AT(type, field) (offsetof(type, field) + 1)
static const size_t grad_field[AM_COUNT] = {
	[AM_D_OUTPUT] = AT(AttnGrad, output), [AM_D_CONCAT] = AT(AttnGrad, concat),
	[AM_D_W_O] = AT(AttnGrad, W_o), [AM_D_Q] = AT(AttnGrad, Q), [AM_D_K] = AT(AttnGrad, K),
	[AM_D_V] = AT(AttnGrad, V), [AM_D_W_Q] = AT(AttnGrad, W_q), [AM_D_W_K] = AT(AttnGrad, W_k),
	[AM_D_W_V] = AT(AttnGrad, W_v), [AM_D_X] = AT(AttnGrad, X), [AM_D_SINKS] = AT(AttnGrad, sinks),
	[AM_D_WEIGHTED] = AT(GradHead, weighted), [AM_D_WEIGHTS] = AT(GradHead, weights),
	[AM_D_MASKED] = AT(GradHead, masked), [AM_D_SCALED] = AT(GradHead, scaled),
	[AM_D_SCORES] = AT(GradHead, scores),
	[AM_D_GATED] = AT(AttnGrad, gated), [AM_D_GATE] = AT(AttnGrad, gate), [AM_D_W_GATE] = AT(AttnGrad, W_gate),
	[AM_D_B_GATE] = AT(AttnGrad, b_gate), [AM_D_FFN_OUT] = AT(AttnGrad, ffn_out),
	[AM_D_MOE_WEIGHTS] = AT(AttnGrad, moe_weights), [AM_D_ROUTER_LOGITS] = AT(AttnGrad, router_logits),
	[AM_D_MOE_W_R] = AT(AttnGrad, W_r), [AM_D_MOE_W_1] = AT(AttnGrad, moe_W_1), [AM_D_MOE_W_3] = AT(AttnGrad, moe_W_3),
	[AM_D_MOE_W_2] = AT(AttnGrad, moe_W_2),
};
#undef AT

const char *attn_grad_storage_fault(void)
{
	for (int w = 0; w < AM_COUNT; w++)
		if ((matrix_kinds[w].flags & MF_GRAD) && grad_field[w] == 0)
			return matrix_kinds[w].name;
	return NULL;
}

const Mat *attn_matrix(const Attn *a, AttnMatrix which, int h)
{
	const Mat *m;

	if ((unsigned)which >= AM_COUNT)
		return NULL;
	if ((matrix_kinds[which].flags & MF_PER_HEAD) && (h < 0 || h >= a->heads))
		return NULL;
	if (matrix_kinds[which].flags & MF_GRAD) {
		char *e = NULL;
		if (a->grad == NULL || grad_field[which] == 0)
			return NULL;
		if (attn_grads_ready(a, &e) != 0) { /* left for its first reader, and no memory to make them now */
			free(e);
			return NULL;
		}
		m = (const Mat *)((const char *)((matrix_kinds[which].flags & MF_PER_HEAD) ? (const void *)&a->grad->head[h]
		                                                                          : (const void *)a->grad) +
		                  grad_field[which] - 1);
	} else if (which == AM_UNEMBED && !matview_empty(&attn_config(a)->unembed_view))
		return matview_doubles(&attn_config(a)->unembed_view); /* a real model's, made doubles when first shown */
	else if (matrix_kinds[which].flags & MF_GIVEN)
		m = lesson_model_matrix(attn_config(a), attn_weights(a), which);
	else if ((m = attn_slot_const(a, which, h)) == NULL)
		return NULL;
	else if (attn_derived(which) && mat_empty(m))
		return matrix_present(&a->shape, which, NULL) ? attn_derived_matrix(a, which, h) : NULL;
	return mat_empty(m) ? NULL : m;
}

const Mat *attn_matrix_shown(const Attn *a, AttnMatrix which, int h)
{
	const MatView *v = &attn_config(a)->unembed_view;
	Mat *shape = &((Attn *)a)->head_shown; /* a shape of the computation's own, no numbers to free */

	if (which != AM_UNEMBED || matview_empty(v))
		return attn_matrix(a, which, h);
	*shape = (Mat){ v->rows, v->cols, NULL };
	return shape;
}

int attn_has(const Attn *a, AttnMatrix which, int h)
{
	if ((unsigned)which < AM_COUNT && attn_derived(which)) {
		if (h < 0 || h >= a->heads || !matrix_present(&a->shape, which, NULL))
			return 0;
		return !mat_empty(attn_slot_const(a, which, h)) || (!mat_empty(&a->head[h].scores) && a->visible != NULL);
	}
	return attn_matrix(a, which, h) != NULL;
}

double attn_cell(const Attn *a, AttnMatrix which, int h, int i, int j)
{
	const Mat *kept = NULL;

	if (which == AM_UNEMBED && !matview_empty(&attn_config(a)->unembed_view)) /* the file's number, not the head made doubles */
		return matview_at(&attn_config(a)->unembed_view, i, j);
	if (!attn_derived(which) || !mat_empty(kept = attn_slot_const(a, which, h))) {
		const Mat *m = attn_derived(which) ? kept : attn_matrix(a, which, h);
		return m != NULL ? MAT_AT(*m, i, j) : NAN;
	}
	return attn_derived_cell(a, which, h, i, j);
}

int attn_stage_panes(const Attn *a, Stage st, StagePane out[STAGE_MAX_PANES])
{
	return stage_panes(&a->shape, st, out);
}

int attn_stage_matrices(const Attn *a, Stage st, AttnMatrix out[STAGE_MAX_PANES])
{
	StagePane p[STAGE_MAX_PANES];
	const int n = stage_panes(&a->shape, st, p);

	for (int i = 0; i < n; i++)
		out[i] = p[i].matrix;
	return n;
}
