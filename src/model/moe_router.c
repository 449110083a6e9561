/*
 * moe_router.c: DeepSeek-V3's router settings on a mixture of experts
 * (model.h: MoeParams, MoeRouterV3), for the lesson loader
 * (lesson/lesson_moe.c) and a model loader alike, and the one check of them
 * both use: what transformers' DeepseekV3TopkRouter.get_topk_indices needs
 * (models/deepseek_v3/modeling_deepseek_v3.py: the experts split into n_group
 * equal groups, each scored by its top 2, topk_group of them kept, top_k
 * experts among those kept).
 */
#include "model/model.h"
#include "base/i18n.h"

#include <math.h>
#include <stdio.h>

int moe_router_deepseek_v3(MoeParams *p, const MoeRouterV3 *r)
{
	if (mat_empty(&p->e_bias) && p->experts > 0 && mat_alloc(&p->e_bias, 1, p->experts) != 0)
		return -1; /* zeros, as the buffer starts */
	p->scoring = MOE_SCORE_SIGMOID;
	p->n_group = r->n_group;
	p->topk_group = r->topk_group;
	p->norm_topk_prob = r->norm_topk_prob;
	p->routed_scaling = r->routed_scaling_factor;
	return 0;
}

const char *moe_router_fault(const MoeParams *p, char *why, size_t n)
{
	const int E = p->experts;

	if (E < 1) {
		snprintf(why, n, _("expected at least 1 expert, got %d"), E);
		return "experts";
	}
	if (p->top_k < 1 || p->top_k > E) {
		snprintf(why, n, _("expected a whole number from 1 to %d (the experts), got %d"), E, p->top_k);
		return "top_k";
	}
	if (p->scoring != MOE_SCORE_SIGMOID)
		return NULL;
	if (p->n_group < 1 || p->n_group > E || E % p->n_group != 0 || E / p->n_group < 2) {
		snprintf(why, n,
		         _("expected a number of groups that divides the %d experts into groups of at least 2 (each group is "
		           "scored by its top 2), got %d"),
		         E, p->n_group);
		return "n_group";
	}
	if (p->topk_group < 1 || p->topk_group > p->n_group) {
		snprintf(why, n, _("expected a whole number from 1 to %d (n_group), got %d"), p->n_group, p->topk_group);
		return "topk_group";
	}
	if (p->top_k > p->topk_group * (E / p->n_group)) {
		snprintf(why, n, _("top_k %d is more than the %d experts of the topk_group groups kept"), p->top_k,
		         p->topk_group * (E / p->n_group));
		return "top_k";
	}
	if (!isfinite(p->routed_scaling) || p->routed_scaling <= 0.0) {
		snprintf(why, n, _("expected a positive number, got %g"), p->routed_scaling);
		return "routed_scaling_factor";
	}
	if (!mat_empty(&p->e_bias) && (p->e_bias.rows != 1 || p->e_bias.cols != E)) {
		snprintf(why, n, _("expected 1 \u00d7 %d (one number per expert), got %d \u00d7 %d"), E, p->e_bias.rows,
		         p->e_bias.cols);
		return "e_score_correction_bias";
	}
	return NULL;
}
