/* moe.c: a mixture-of-experts FFN (issue 23 §7) as Mixtral and Qwen3-MoE compute it,
 * three variants of one file, each a stage of the block (catalog.c: router, top_k, experts):
 *
 *   router:  router_logits = x·W_r (n × E);  router_probs = softmax(router_logits), each row
 *   top_k:   each row's top_k experts of router_probs (ties: the lower index first, as
 *            torch.topk's sorted output on distinct values), moe_weights = p, divided by their
 *            sum when norm_topk_prob; the other cells NaN: not chosen
 *   experts: expert e on the rows that chose it: expert_act = silu(x·W_1,e) ⊙ (x·W_3,e),
 *            expert_out = expert_act·W_2,e (NaN on the rows that did not: not computed);
 *            ffn_out = Σ over each row's chosen experts of weight · expert_out, in the order
 *            of the experts' indices (MixtralSparseMoeBlock's index_add_, expert by expert)
 *
 * transformers' models/mixtral/modeling_mixtral.py (MixtralSparseMoeBlock.forward: `router_logits
 * = self.gate(hidden_states)`, `routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)`,
 * `torch.topk(routing_weights, self.top_k, dim=-1)`, `routing_weights /= routing_weights.sum(dim=-1,
 * keepdim=True)`; MixtralBlockSparseTop2MLP: `self.act_fn(self.w1(x)) * self.w3(x)`, then w2) and
 * models/qwen3_moe/modeling_qwen3_moe.py (the same, the division only `if self.norm_topk_prob`).
 * Its settings and weights are the block's MoeParams (model.h), read by lesson/lesson_moe.c.
 * Its backward is engine/backward_moe.c's (moe_backward). Decoding (decode.c) runs these passes on a
 * 1-row computation, one new token: each pass loops over its matrices' rows (moe_rows), not cfg->n.
 *
 * DeepSeek-V3's router ("scoring_func": "sigmoid"; transformers' models/deepseek_v3/modeling_deepseek_v3.py,
 * DeepseekV3TopkRouter.forward and get_topk_indices, DeepseekV3MoE.forward), a fourth stage, choice:
 *   router:  router_scores = σ(router_logits), each cell on its own
 *   choice:  s = router_scores + e_score_correction_bias; group_scores = the sum of each of the n_group groups'
 *            top 2 of s; the topk_group best groups kept (ties: the lower index); scores_for_choice = s in
 *            them, NaN elsewhere (transformers fills 0.0 there, and the top-k ranks it as 0.0)
 *   top_k:   the top_k of scores_for_choice; w = router_scores (not s), ÷ (their sum + 1e-20) with
 *            norm_topk_prob, × routed_scaling_factor
 *   experts: as above; the shared expert (n_shared_experts fused into one SwiGLU) added without a gate
 */
#include "engine/variants/variants.h"
#include "base/i18n.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MUL_SYM(utf8) celltext_sym(utf8, "\u00b7", ".")

static const MoeParams *moe_of(const Attn *a)
{
	return &attn_params(a)->block.moe;
}

/* gpt-oss's mixture, at the end of this file (its own functions; the ones above call them when p->gptoss) */
static void pass_router_gptoss(Attn *a, const ModelConfig *cfg, const LayerParams *lp);
static void pass_topk_gptoss(Attn *a, const ModelConfig *cfg, const LayerParams *lp);
static void gptoss_rows(const MoeParams *p, int e, int r, int D, int F, const double *xs, double *h, double *g,
                       double *act, double *out);
static void explain_router_gptoss(StrBuf *b, const Attn *a, AttnMatrix which, int i, int j, int utf8);
static void explain_topk_gptoss(StrBuf *b, const Attn *a, int i, int j, int utf8);
static void explain_experts_gptoss(StrBuf *b, const Attn *a, AttnMatrix which, int i, int j, int utf8);
static const char *gptoss_fault(const ModelConfig *cfg, const LayerParams *lp);

/* The rows the mixture runs on: the lesson's n, or 1 when decoding runs the block on one token's row (decode.c). */
static int moe_rows(const Attn *a)
{
	return a->router_logits.rows;
}

static int moe_sigmoid(const MoeParams *p)
{
	return p->scoring == MOE_SCORE_SIGMOID;
}

/* router_scores = σ(router_logits), each cell (DeepseekV3TopkRouter.forward: `router_logits.sigmoid()`). */
static void router_sigmoid(Attn *a, int n, int E)
{
	for (int i = 0; i < n; i++)
		for (int e = 0; e < E; e++)
			MAT_AT(a->router_scores, i, e) = 1.0 / (1.0 + exp(-MAT_AT(a->router_logits, i, e)));
}

/* router_logits = x·W_r; router_probs = softmax of each row (or router_scores, σ of each cell). */
static void pass_router(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const int E = lp->block.moe.experts;
	(void)cfg; /* the rows are the matrices' (moe_rows), not cfg->n */

	if (lp->block.moe.gptoss) {
		pass_router_gptoss(a, cfg, lp);
		return;
	}
	mat_mul(attn_ffn_input(a), &lp->block.moe.W_r, &a->router_logits);
	if (moe_sigmoid(&lp->block.moe)) {
		router_sigmoid(a, moe_rows(a), E);
		return;
	}
	for (int i = 0; i < moe_rows(a); i++)
		attn_softmax_row(&MAT_AT(a->router_logits, i, 0), &MAT_AT(a->router_probs, i, 0), E);
}

/* Row i's rank of column e of m (E columns): how many come before it (larger, or equal with a lower index). */
static int rank_in_row(const Mat *m, int i, int e, int E)
{
	const double p = MAT_AT(*m, i, e);
	int r = 0;

	for (int f = 0; f < E; f++)
		r += MAT_AT(*m, i, f) > p || (MAT_AT(*m, i, f) == p && f < e);
	return r;
}

/* ---------------------------------------------------------------- DeepSeek-V3's choice */

/* Group g's score in row i: the sum of its two largest s = score + bias (one, in a group of one). */
static double group_score(const Attn *a, const MoeParams *p, int i, int g, int *first, int *second)
{
	const int m = p->experts / p->n_group;
	int b1 = -1, b2 = -1;

	for (int e = g * m; e < (g + 1) * m; e++) {
		const double s = MAT_AT(a->router_scores, i, e) + MAT_AT(p->e_bias, 0, e);
		if (b1 < 0 || s > MAT_AT(a->router_scores, i, b1) + MAT_AT(p->e_bias, 0, b1)) {
			b2 = b1;
			b1 = e;
		} else if (b2 < 0 || s > MAT_AT(a->router_scores, i, b2) + MAT_AT(p->e_bias, 0, b2))
			b2 = e;
	}
	if (first != NULL)
		*first = b1, *second = b2;
	return MAT_AT(a->router_scores, i, b1) + MAT_AT(p->e_bias, 0, b1) +
	       (b2 < 0 ? 0.0 : MAT_AT(a->router_scores, i, b2) + MAT_AT(p->e_bias, 0, b2));
}

/* Row i's rank of group g by group_scores (ties: the lower index first): below topk_group, it is kept. */
static int group_rank(const Attn *a, int i, int g)
{
	const double v = MAT_AT(a->group_scores, i, g);
	int r = 0;

	for (int f = 0; f < moe_of(a)->n_group; f++)
		r += MAT_AT(a->group_scores, i, f) > v || (MAT_AT(a->group_scores, i, f) == v && f < g);
	return r;
}

/* group_scores, then scores_for_choice: s in the topk_group best groups, NaN in the others. */
static void pass_choice(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const MoeParams *p = &lp->block.moe;
	const int m = p->experts / p->n_group;
	(void)cfg; /* the rows are the matrices' (moe_rows), not cfg->n */

	for (int i = 0; i < moe_rows(a); i++) {
		for (int g = 0; g < p->n_group; g++)
			MAT_AT(a->group_scores, i, g) = group_score(a, p, i, g, NULL, NULL);
		for (int e = 0; e < p->experts; e++)
			MAT_AT(a->scores_choice, i, e) = group_rank(a, i, e / m) < p->topk_group
			                                         ? MAT_AT(a->router_scores, i, e) + MAT_AT(p->e_bias, 0, e)
			                                         : NAN;
	}
}

/* The number the top-k ranks: the softmax's probability, or DeepSeek's scores_for_choice (a group dropped: 0.0). */
static double moe_rank_value(const Attn *a, int i, int e)
{
	if (!moe_sigmoid(moe_of(a)))
		return MAT_AT(a->router_probs, i, e);
	return isnan(MAT_AT(a->scores_choice, i, e)) ? 0.0 : MAT_AT(a->scores_choice, i, e);
}

/* What a chosen expert's weight starts from: its probability, or its sigmoid score (without the bias). */
static double moe_weight_value(const Attn *a, int i, int e)
{
	return moe_sigmoid(moe_of(a)) ? MAT_AT(a->router_scores, i, e) : MAT_AT(a->router_probs, i, e);
}

/* Row i's rank of expert e by moe_rank_value: how many come before it (larger, or equal with a lower index). */
static int moe_rank(const Attn *a, int i, int e)
{
	const int E = moe_of(a)->experts;
	const double p = moe_rank_value(a, i, e);
	int r = 0;

	for (int f = 0; f < E; f++)
		r += moe_rank_value(a, i, f) > p || (moe_rank_value(a, i, f) == p && f < e);
	return r;
}

/* The sum of row i's chosen probabilities (what norm_topk_prob divides by). */
static double moe_topk_sum(const Attn *a, int i)
{
	const MoeParams *p = moe_of(a);
	double s = 0.0;

	for (int r = 0; r < p->top_k; r++)
		for (int e = 0; e < p->experts; e++)
			if (moe_rank(a, i, e) == r) /* added in torch.topk's order, largest first */
				s += moe_weight_value(a, i, e);
	return s;
}

/* DeepSeek-V3's weights of row i: the chosen sigmoid scores ÷ (their sum + 1e-20) with norm_topk_prob, × routed_scaling. */
static void topk_sigmoid_row(Attn *a, const MoeParams *p, int i)
{
	const double den = moe_topk_sum(a, i) + 1e-20;

	for (int e = 0; e < p->experts; e++) {
		const double w = p->norm_topk_prob ? MAT_AT(a->router_scores, i, e) / den : MAT_AT(a->router_scores, i, e);
		MAT_AT(a->moe_weights, i, e) = moe_rank(a, i, e) >= p->top_k ? NAN : w * p->routed_scaling;
	}
}

/* moe_weights: each row's top_k probabilities (renormalised with norm_topk_prob), NaN elsewhere. */
static void pass_topk(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const MoeParams *p = &lp->block.moe;
	(void)cfg; /* the rows are the matrices' (moe_rows), not cfg->n */

	if (p->gptoss) {
		pass_topk_gptoss(a, cfg, lp);
		return;
	}
	if (moe_sigmoid(p)) {
		for (int i = 0; i < moe_rows(a); i++)
			topk_sigmoid_row(a, p, i);
		return;
	}
	for (int i = 0; i < moe_rows(a); i++) {
		const double sum = moe_topk_sum(a, i);
		for (int e = 0; e < p->experts; e++)
			MAT_AT(a->moe_weights, i, e) = moe_rank(a, i, e) >= p->top_k ? NAN
			                               : p->norm_topk_prob           ? MAT_AT(a->router_probs, i, e) / sum
			                                                             : MAT_AT(a->router_probs, i, e);
	}
}

/*
 * Expert e's rows among the first `rows` (D numbers each): those that chose it, in order, into pick[]
 * (their indices) and xs (their rows of x, contiguous); its cells of expert_act and expert_out NaN in the
 * others. Returns how many chose it.
 */
static int expert_gather(Attn *a, const Mat *x, int rows, int D, int e, int F, int *pick, double *xs)
{
	int r = 0;

	for (int i = 0; i < rows; i++)
		if (!isnan(MAT_AT(a->moe_weights, i, e))) {
			pick[r] = i;
			memcpy(&xs[(size_t)r++ * D], &MAT_AT(*x, i, 0), (size_t)D * sizeof *xs);
		} else {
			for (int f = 0; f < F; f++)
				MAT_AT(a->expert_act, i, e * F + f) = NAN;
			for (int c = 0; c < D; c++)
				MAT_AT(a->expert_out, i, e * D + c) = NAN;
		}
	return r;
}

/*
 * One SwiGLU expert on r rows x (r × D, contiguous): act = silu(x·W1) ⊙ (x·W3) (r × F) and out = act·W2
 * (r × D); W1 and W3 are the expert's F columns of wider matrices (row stride ld13), W2 its F rows (row
 * stride ld2). h and g are r × F of scratch.
 */
static void expert_rows(int r, int D, int F, const double *x, const double *W1, const double *W3, size_t ld13,
                        const double *W2, size_t ld2, double *h, double *g, double *act, double *out)
{
	mat_mul_chain(r, D, F, x, (size_t)D, W1, ld13, 0, h, (size_t)F, 0); /* the loops' bits (matrix.h) */
	mat_mul_chain(r, D, F, x, (size_t)D, W3, ld13, 0, g, (size_t)F, 0);
	attn_swiglu((size_t)r * (size_t)F, h, g, act);
	mat_mul_chain(r, F, D, act, (size_t)F, W2, ld2, 0, out, (size_t)D, 0);
}

/*
 * Qwen2-MoE's shared expert on every row (Qwen2MoeSparseMoeBlock.forward, after the routed experts):
 * shared_out = (silu(x·S_1) ⊙ (x·S_3))·S_2, shared_gate = σ(x·S_gate), ffn_out += shared_gate · shared_out.
 * x is the rows contiguous (rows × D); h, g and act rows × S of scratch.
 */
static void shared_rows(Attn *a, const MoeParams *p, const double *x, int rows, int D, double *h, double *g, double *act)
{
	const int S = p->shared_ff, gated = !mat_empty(&p->S_gate); /* DeepSeek's: no gate */

	if (gated) {
		mat_mul_chain(rows, D, 1, x, (size_t)D, p->S_gate.a, 1, 0, a->shared_gate.a, 1, 0);
		for (int i = 0; i < rows; i++)
			MAT_AT(a->shared_gate, i, 0) = 1.0 / (1.0 + exp(-MAT_AT(a->shared_gate, i, 0)));
	}
	expert_rows(rows, D, S, x, p->S_1.a, p->S_3.a, (size_t)S, p->S_2.a, (size_t)D, h, g, act, a->shared_out.a);
	for (int i = 0; i < rows; i++)
		for (int c = 0; c < D; c++)
			MAT_AT(a->ffn_out, i, c) += gated ? MAT_AT(a->shared_gate, i, 0) * MAT_AT(a->shared_out, i, c)
			                                  : MAT_AT(a->shared_out, i, c);
}

/*
 * Each expert on the rows that chose it, and ffn_out their weighted sum (and the shared expert's, gated).
 * Expert by expert: its rows gathered, its three products through the matrix kernels (each cell's terms in
 * the order the loops over a row took them), and each row's ffn_out gets its experts' terms in the order of
 * e, then the shared expert's. The cells of an expert a row did not choose are NaN.
 */
static void pass_experts(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const MoeParams *p = &lp->block.moe;
	const Mat *x = attn_ffn_input(a);
	const int E = p->experts, F = lp->block.d_ff, D = cfg->d_model, rows = moe_rows(a);
	const int W = F > p->shared_ff ? F : p->shared_ff;

	int *pick = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *pick);
	double *xs = malloc((size_t)rows * (size_t)D * sizeof *xs), *out = malloc((size_t)rows * (size_t)D * sizeof *out);
	double *h = malloc((size_t)rows * (size_t)W * sizeof *h), *g = malloc((size_t)rows * (size_t)W * sizeof *g);
	double *act = malloc((size_t)rows * (size_t)W * sizeof *act);

	if (rows > 0 && (pick == NULL || xs == NULL || out == NULL || h == NULL || g == NULL || act == NULL)) {
		a->failed = 1;
		free(pick), free(xs), free(out), free(h), free(g), free(act);
		return;
	}
	for (int i = 0; i < rows; i++)
		for (int c = 0; c < D; c++)
			MAT_AT(a->ffn_out, i, c) = 0.0;
	for (int e = 0; e < E; e++) {
		const int r = expert_gather(a, x, rows, D, e, F, pick, xs);
		if (r == 0)
			continue;
		if (p->gptoss) /* its biases and clamped SwiGLU (the file's end) */
			gptoss_rows(p, e, r, D, F, xs, h, g, act, out);
		else
			expert_rows(r, D, F, xs, p->W_1.a + (size_t)e * F, p->W_3.a + (size_t)e * F, (size_t)p->W_1.cols,
			            p->W_2.a + (size_t)e * F * (size_t)p->W_2.cols, (size_t)p->W_2.cols, h, g, act, out);
		for (int k = 0; k < r; k++) {
			const int i = pick[k];
			const double w = MAT_AT(a->moe_weights, i, e);
			memcpy(&MAT_AT(a->expert_act, i, e * F), &act[(size_t)k * F], (size_t)F * sizeof *act);
			memcpy(&MAT_AT(a->expert_out, i, e * D), &out[(size_t)k * D], (size_t)D * sizeof *out);
			for (int c = 0; c < D; c++)
				MAT_AT(a->ffn_out, i, c) += w * out[(size_t)k * D + c];
		}
	}
	if (p->shared_ff > 0 && rows > 0) {
		for (int i = 0; i < rows; i++)
			memcpy(&xs[(size_t)i * D], &MAT_AT(*x, i, 0), (size_t)D * sizeof *xs);
		shared_rows(a, p, xs, rows, D, h, g, act);
	}
	free(pick), free(xs), free(out), free(h), free(g), free(act);
}

/* The experts and top_k fit the lesson's sizes (the loader's checks, guarded once more where the engine reads). */
static const char *moe_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	const MoeParams *p = &lp->block.moe;
	const int E = p->experts, F = lp->block.d_ff, D = cfg->d_model;

	char why[160];
	const char *bad;

	if (E <= 0)
		return NULL;
	if (p->gptoss && gptoss_fault(cfg, lp) != NULL)
		return gptoss_fault(cfg, lp);
	if (p->top_k < 1 || p->top_k > E)
		return "ffn.top_k";
	if (p->scoring == MOE_SCORE_SIGMOID && mat_empty(&p->e_bias))
		return "ffn.e_score_correction_bias";
	if ((bad = moe_router_fault(p, why, sizeof why)) != NULL) {
		static const char *const paths[] = { "ffn.experts", "ffn.top_k", "ffn.n_group", "ffn.topk_group",
			                             "ffn.routed_scaling_factor", "ffn.e_score_correction_bias", NULL };
		for (int k = 0; paths[k + 1] != NULL; k++)
			if (!strcmp(bad, paths[k] + 4))
				return paths[k];
		return paths[5];
	}
	if (p->W_r.rows != D || p->W_r.cols != E)
		return "ffn.router";
	if (p->shared_ff > 0 && (p->S_1.rows != D || p->S_1.cols != p->shared_ff || p->S_3.rows != D ||
	                         p->S_3.cols != p->shared_ff || p->S_2.rows != p->shared_ff || p->S_2.cols != D ||
	                         (!mat_empty(&p->S_gate) && (p->S_gate.rows != D || p->S_gate.cols != 1))))
		return "ffn.shared_expert";
	if (p->W_1.rows != D || p->W_1.cols != E * F || p->W_3.rows != D || p->W_3.cols != E * F || p->W_2.rows != E * F ||
	    p->W_2.cols != D)
		return "ffn.experts";
	return NULL;
}

static int moe_same(const ModelConfig *xc, const LayerParams *xp, const ModelConfig *yc, const LayerParams *yp)
{
	const MoeParams *x = &xp->block.moe, *y = &yp->block.moe;

	(void)xc, (void)yc;
	return x->experts == y->experts && x->top_k == y->top_k && x->norm_topk_prob == y->norm_topk_prob &&
	       x->shared_ff == y->shared_ff && x->gptoss == y->gptoss && x->swiglu_alpha == y->swiglu_alpha &&
	       x->swiglu_limit == y->swiglu_limit && x->scoring == y->scoring && x->n_group == y->n_group &&
	       x->topk_group == y->topk_group && x->routed_scaling == y->routed_scaling &&
	       mat_empty(&x->S_gate) == mat_empty(&y->S_gate);
}

/* ---------------------------------------------------------------- explain */

static const char *moe_input_name(const Attn *a)
{
	const Block *b = &attn_params(a)->block;
	return b->norm == NORM_POST ? "norm1" : b->norm == NORM_PRE ? "norm2" : "residual1";
}

/* The chosen experts of row i, "2 (0.41), 0 (0.33)", largest first, into b. */
static void moe_chosen_list(StrBuf *b, const Attn *a, int i, int utf8)
{
	const MoeParams *p = moe_of(a);
	char x1[32];

	for (int r = 0; r < p->top_k; r++)
		for (int e = 0; e < p->experts; e++)
			if (moe_rank(a, i, e) == r)
				strbuf_printf(b, "%s%d (%s = %s)", r > 0 ? ", " : "", e, moe_sigmoid(p) ? "s" : "p",
				              celltext_num(x1, moe_rank_value(a, i, e), utf8));
}

static void explain_router(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const MoeParams *p = moe_of(a);
	const int E = p->experts;
	char x1[32], x2[32], x3[32], x4[32], x5[32]; /* one buffer a number: a printf reads them all at once */

	(void)h;
	if (p->gptoss) {
		explain_router_gptoss(b, a, which, i, j, utf8);
		return;
	}
	if (which == AM_ROUTER_LOGITS) {
		strbuf_printf(b, _("token %d's score for expert %d = %s row %d %s W_router's column %d\n"), i, j,
		              moe_input_name(a), i, MUL_SYM(utf8), j);
		celltext_terms(b, &MAT_AT(*attn_ffn_input(a), i, 0), 1, p->W_r.a + j, (size_t)E, attn_config(a)->d_model, utf8);
		return;
	}
	if (which == AM_ROUTER_SCORES) {
		strbuf_printf(b, _("DeepSeek-V3 scores each expert on its own, with a sigmoid, not a softmax over the row:\n"));
		strbuf_printf(b, "%s(%s) = 1 / (1 + exp(%s)) = %s\n", celltext_sym(utf8, "\u03c3", "sigmoid"),
		              celltext_num(x1, MAT_AT(a->router_logits, i, j), utf8),
		              celltext_num(x2, -MAT_AT(a->router_logits, i, j), utf8),
		              celltext_num(x3, MAT_AT(a->router_scores, i, j), utf8));
		return;
	}
	double max = -INFINITY, sum = 0.0;
	for (int e = 0; e < E; e++)
		max = fmax(max, MAT_AT(a->router_logits, i, e));
	for (int e = 0; e < E; e++)
		sum += exp(MAT_AT(a->router_logits, i, e) - max);
	strbuf_printf(b, _("softmax over token %d's %d expert scores (their max %s is taken off first):\n"), i, E,
	              celltext_num(x1, max, utf8));
	strbuf_printf(b, "p = exp(%s %s %s) / %s = %s / %s = %s\n", celltext_num(x1, MAT_AT(a->router_logits, i, j), utf8),
	              celltext_sym(utf8, "\u2212", "-"), celltext_num(x2, max, utf8), celltext_sym(utf8, "\u03a3", "sum"),
	              celltext_num(x3, exp(MAT_AT(a->router_logits, i, j) - max), utf8), celltext_num(x4, sum, utf8),
	              celltext_num(x5, MAT_AT(a->router_probs, i, j), utf8));
}

static int operands_router(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	(void)a, (void)h;
	if (which == AM_ROUTER_LOGITS) {
		const Block *b = &attn_params(a)->block;
		out[0] = (ExplainOperand){ b->norm == NORM_POST  ? AM_NORM1
			                       : b->norm == NORM_PRE ? AM_NORM2
			                                             : AM_RESIDUAL1,
			                       0, i, -1 };
		out[1] = (ExplainOperand){ AM_MOE_W_R, 0, -1, j };
		return 2;
	}
	out[0] = (ExplainOperand){ AM_ROUTER_LOGITS, 0, i, which == AM_ROUTER_SCORES ? j : -1 };
	return 1;
}

/* DeepSeek-V3's weight of a chosen expert j for token i: its sigmoid score (not s), renormalised, scaled. */
static void explain_topk_sigmoid(StrBuf *b, const Attn *a, int i, int j, int utf8)
{
	const MoeParams *p = moe_of(a);
	char x1[32], x2[32], x3[32], x4[32];

	if (p->norm_topk_prob)
		strbuf_printf(b,
		              _("the weight is the sigmoid score without the bias, divided by the chosen scores' sum (+ 1e-20), "
		                "times routed_scaling_factor: w = %s / %s %s %s = %s\n"),
		              celltext_num(x1, MAT_AT(a->router_scores, i, j), utf8), celltext_num(x2, moe_topk_sum(a, i), utf8),
		              celltext_sym(utf8, "\u00d7", "*"), celltext_num(x3, p->routed_scaling, utf8),
		              celltext_num(x4, MAT_AT(a->moe_weights, i, j), utf8));
	else
		strbuf_printf(b,
		              _("without norm_topk_prob the weight is the sigmoid score without the bias, times "
		                "routed_scaling_factor: w = %s %s %s = %s\n"),
		              celltext_num(x1, MAT_AT(a->router_scores, i, j), utf8), celltext_sym(utf8, "\u00d7", "*"),
		              celltext_num(x2, p->routed_scaling, utf8), celltext_num(x3, MAT_AT(a->moe_weights, i, j), utf8));
}

static void explain_topk(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const MoeParams *p = moe_of(a);
	const int rank = moe_rank(a, i, j);
	char x1[32], x2[32], x3[32];

	(void)which, (void)h;
	if (p->gptoss) {
		explain_topk_gptoss(b, a, i, j, utf8);
		return;
	}
	strbuf_printf(b, _("token %d's top %d experts: "), i, p->top_k);
	moe_chosen_list(b, a, i, utf8);
	strbuf_printf(b, "\n");
	if (rank >= p->top_k) {
		strbuf_printf(
			b,
			moe_sigmoid(p)
				? _("expert %d is number %d of %d by scores_for_choice (%s), so token %d did not choose it: it has no "
			        "weight, and expert %d does not run on this token at all\n")
				: _("expert %d is number %d of %d by probability (p = %s), so token %d did not choose it: it has no weight, "
			        "and expert %d does not run on this token at all\n"),
			j, rank + 1, p->experts, celltext_num(x1, moe_rank_value(a, i, j), utf8), i, j);
		return;
	}
	if (moe_sigmoid(p)) {
		explain_topk_sigmoid(b, a, i, j, utf8);
		return;
	}
	if (p->norm_topk_prob)
		strbuf_printf(b,
		              _("norm_topk_prob: the chosen probabilities are divided by their sum, so they add to 1: w = %s / "
		                "%s = %s\n"),
		              celltext_num(x1, MAT_AT(a->router_probs, i, j), utf8), celltext_num(x2, moe_topk_sum(a, i), utf8),
		              celltext_num(x3, MAT_AT(a->moe_weights, i, j), utf8));
	else
		strbuf_printf(b,
		              _("without norm_topk_prob the weight is the probability itself: w = %s (the chosen ones add to "
		                "%s, not 1)\n"),
		              celltext_num(x1, MAT_AT(a->moe_weights, i, j), utf8), celltext_num(x2, moe_topk_sum(a, i), utf8));
}

static int operands_topk(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	(void)which, (void)h;
	if (moe_sigmoid(moe_of(a))) {
		out[0] = (ExplainOperand){ AM_SCORES_CHOICE, 0, i, -1 };
		out[1] = (ExplainOperand){ AM_ROUTER_SCORES, 0, i, j };
		return 2;
	}
	out[0] = (ExplainOperand){ AM_ROUTER_PROBS, 0, i, -1 };
	return 1;
}

/* group_scores[i][g]: the group's two best s and their sum, kept or not; scores_for_choice[i][j]: s, or its group dropped. */
static void explain_choice(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const MoeParams *p = moe_of(a);
	const int m = p->experts / p->n_group, g = which == AM_GROUP_SCORES ? j : j / m, rank = group_rank(a, i, g);
	char x1[32], x2[32], x3[32];
	int e1, e2;

	(void)h;
	if (which == AM_SCORES_CHOICE) {
		const double s = MAT_AT(a->router_scores, i, j) + MAT_AT(p->e_bias, 0, j);
		strbuf_printf(b, _("s = router_scores + e_score_correction_bias = %s + %s = %s\n"),
		              celltext_num(x1, MAT_AT(a->router_scores, i, j), utf8),
		              celltext_num(x2, MAT_AT(p->e_bias, 0, j), utf8), celltext_num(x3, s, utf8));
		if (rank < p->topk_group)
			strbuf_printf(b, _("expert %d is in group %d, number %d of %d groups for token %d: kept (topk_group %d)\n"), j,
			              g, rank + 1, p->n_group, i, p->topk_group);
		else
			strbuf_printf(b,
			              _("expert %d is in group %d, number %d of %d groups for token %d: dropped (topk_group %d), so "
			                "token %d cannot choose it (transformers writes 0.0 here)\n"),
			              j, g, rank + 1, p->n_group, i, p->topk_group, i);
		return;
	}
	const double v = group_score(a, p, i, g, &e1, &e2);
	strbuf_printf(b, _("group %d holds experts %d to %d; its score is the sum of its 2 largest s = score + bias:\n"), g,
	              g * m, (g + 1) * m - 1);
	if (e2 >= 0)
		strbuf_printf(b, "s[%d] + s[%d] = %s + %s = %s\n", e1, e2,
		              celltext_num(x1, MAT_AT(a->router_scores, i, e1) + MAT_AT(p->e_bias, 0, e1), utf8),
		              celltext_num(x2, MAT_AT(a->router_scores, i, e2) + MAT_AT(p->e_bias, 0, e2), utf8),
		              celltext_num(x3, v, utf8));
	strbuf_printf(b, rank < p->topk_group ? _("number %d of %d groups: kept (topk_group %d)\n")
	                                      : _("number %d of %d groups: dropped (topk_group %d)\n"),
	              rank + 1, p->n_group, p->topk_group);
}

static int operands_choice(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	(void)h;
	if (which == AM_SCORES_CHOICE) {
		out[0] = (ExplainOperand){ AM_ROUTER_SCORES, 0, i, j };
		out[1] = (ExplainOperand){ AM_MOE_E_BIAS, 0, 0, j };
		out[2] = (ExplainOperand){ AM_GROUP_SCORES, 0, i, j / (moe_of(a)->experts / moe_of(a)->n_group) };
		return 3;
	}
	out[0] = (ExplainOperand){ AM_ROUTER_SCORES, 0, i, -1 };
	out[1] = (ExplainOperand){ AM_MOE_E_BIAS, 0, 0, -1 };
	return 2;
}

/* shared_gate[i][0]: σ of row i · the gate's column; shared_out[i][j]: the shared expert's SwiGLU, column j. */
static void explain_shared(StrBuf *b, const Attn *a, AttnMatrix which, int i, int j, int utf8)
{
	const MoeParams *p = moe_of(a);
	const int D = attn_config(a)->d_model, S = p->shared_ff;
	const Mat *x = attn_ffn_input(a);
	char x1[32], x2[32];

	if (which == AM_SHARED_GATE) {
		strbuf_printf(b, _("the shared expert's gate for token %d: z = %s row %d %s shared_W_gate\n"), i, moe_input_name(a), i,
		              MUL_SYM(utf8));
		const double z = celltext_terms(b, &MAT_AT(*x, i, 0), 1, p->S_gate.a, 1, D, utf8);
		strbuf_printf(b, "%s(z) = 1 / (1 + exp(%s%s)) = %s\n", celltext_sym(utf8, "\u03c3", "sigmoid"),
		              celltext_sym(utf8, "\u2212", "-"), celltext_num(x1, z, utf8),
		              celltext_num(x2, MAT_AT(a->shared_gate, i, 0), utf8));
		return;
	}
	strbuf_printf(b, _("the shared expert runs on every token: column %d = (silu(x%sshared_W_1) %s (x%sshared_W_3)) %s shared_W_2's column %d\n"),
	              j, MUL_SYM(utf8), celltext_sym(utf8, "\u2299", "*"), MUL_SYM(utf8), MUL_SYM(utf8), j);
	double *act = malloc((size_t)S * sizeof *act);
	for (int f = 0; act != NULL && f < S; f++) {
		double h = 0.0, g = 0.0;
		for (int c = 0; c < D; c++) {
			h += MAT_AT(*x, i, c) * MAT_AT(p->S_1, c, f);
			g += MAT_AT(*x, i, c) * MAT_AT(p->S_3, c, f);
		}
		act[f] = attn_silu(h) * g;
	}
	if (act != NULL)
		celltext_terms(b, act, 1, p->S_2.a + j, (size_t)D, S, utf8);
	free(act);
	if (mat_empty(&p->S_gate))
		strbuf_printf(b, "%s", _("it is added to ffn_out as it is: DeepSeek's shared experts have no gate\n"));
	else
		strbuf_printf(b, _("it is added to ffn_out times the token's gate, %s\n"),
		              celltext_num(x1, MAT_AT(a->shared_gate, i, 0), utf8));
}

static void explain_experts(StrBuf *b, const Attn *a, AttnMatrix which, int h, int i, int j, int utf8)
{
	const MoeParams *p = moe_of(a);
	const int F = attn_params(a)->block.d_ff, D = attn_config(a)->d_model;
	const int e = which == AM_EXPERT_ACT   ? j / F
	              : which == AM_EXPERT_OUT ? j / D
	                                       : 0,
			  col = which == AM_EXPERT_ACT ? j % F : j % D;
	const Mat *x = attn_ffn_input(a);
	char x1[32], x2[32], x3[32];

	(void)h;
	if (which == AM_FFN_OUT) {
		int first = 1;
		strbuf_printf(b, _("token %d's FFN output is the weighted sum of its chosen experts' outputs, column %d:\n"), i,
		              j);
		strbuf_printf(b, "= ");
		for (int f = 0; f < p->experts; f++)
			if (!isnan(MAT_AT(a->moe_weights, i, f))) {
				strbuf_printf(b, "%s%s%s%s", first ? "" : " + ", celltext_num(x1, MAT_AT(a->moe_weights, i, f), utf8),
				              celltext_sym(utf8, "\u00d7", "*"),
				              celltext_num(x2, MAT_AT(a->expert_out, i, f * D + j), utf8));
				first = 0;
			}
		if (p->shared_ff > 0 && mat_empty(&p->S_gate))
			strbuf_printf(b, " + %s", celltext_num(x2, MAT_AT(a->shared_out, i, j), utf8));
		else if (p->shared_ff > 0)
			strbuf_printf(b, " + %s%s%s", celltext_num(x1, MAT_AT(a->shared_gate, i, 0), utf8),
			              celltext_sym(utf8, "\u00d7", "*"), celltext_num(x2, MAT_AT(a->shared_out, i, j), utf8));
		strbuf_printf(b, "\n= %s\n", celltext_num(x1, MAT_AT(a->ffn_out, i, j), utf8));
		if (p->shared_ff > 0)
			strbuf_printf(b, "%s", mat_empty(&p->S_gate)
			                           ? _("(the last term is the shared expert's: every token goes through it, without a gate)\n")
			                           : _("(the last term is the shared expert's: every token goes through it, times its gate)\n"));
		return;
	}
	if (which == AM_SHARED_GATE || which == AM_SHARED_OUT) {
		explain_shared(b, a, which, i, j, utf8);
		return;
	}
	if (p->gptoss && (which == AM_EXPERT_ACT || which == AM_EXPERT_OUT) && !isnan(MAT_AT(a->moe_weights, i, e))) {
		explain_experts_gptoss(b, a, which, i, j, utf8);
		return;
	}
	if (isnan(MAT_AT(a->moe_weights, i, e))) {
		strbuf_printf(b, _("token %d did not choose expert %d (its top %d: "), i, e, p->top_k);
		moe_chosen_list(b, a, i, utf8);
		strbuf_printf(b, _("), so expert %d never sees this token: nothing is computed here\n"), e);
		return;
	}
	if (which == AM_EXPERT_OUT) {
		strbuf_printf(
			b, _("expert %d's output, column %d = expert_act row %d (expert %d's %d columns) %s its W_2's column %d\n"),
			e, col, i, e, F, MUL_SYM(utf8), col);
		celltext_terms(b, &MAT_AT(a->expert_act, i, e * F), 1, &MAT_AT(p->W_2, e * F, col), (size_t)D, F, utf8);
		return;
	}
	double hsum = 0.0, g = 0.0;
	for (int c = 0; c < D; c++) {
		hsum += MAT_AT(*x, i, c) * MAT_AT(p->W_1, c, e * F + col);
		g += MAT_AT(*x, i, c) * MAT_AT(p->W_3, c, e * F + col);
	}
	strbuf_printf(b,
	              _("expert %d, hidden column %d: h = %s row %d %s its W_1's column %d, g = the same with its W_3\n"),
	              e, col, moe_input_name(a), i, MUL_SYM(utf8), col);
	celltext_terms(b, &MAT_AT(*x, i, 0), 1, &MAT_AT(p->W_1, 0, e * F + col), (size_t)p->W_1.cols, D, utf8);
	celltext_terms(b, &MAT_AT(*x, i, 0), 1, &MAT_AT(p->W_3, 0, e * F + col), (size_t)p->W_3.cols, D, utf8);
	strbuf_printf(b, "silu(h) %s g = %s %s %s = %s\n", celltext_sym(utf8, "\u00d7", "*"),
	              celltext_num(x1, attn_silu(hsum), utf8), celltext_sym(utf8, "\u00d7", "*"), celltext_num(x2, g, utf8),
	              celltext_num(x3, MAT_AT(a->expert_act, i, j), utf8));
}

static int operands_experts(const Attn *a, AttnMatrix which, int h, int i, int j, ExplainOperand out[4])
{
	const int F = attn_params(a)->block.d_ff, D = attn_config(a)->d_model;
	const Block *b = &attn_params(a)->block;

	(void)h;
	if (which == AM_FFN_OUT) {
		out[0] = (ExplainOperand){ AM_MOE_WEIGHTS, 0, i, -1 };
		out[1] = (ExplainOperand){ AM_EXPERT_OUT, 0, i, -1 };
		if (attn_params(a)->block.moe.shared_ff == 0)
			return 2;
		if (mat_empty(&attn_params(a)->block.moe.S_gate)) {
			out[2] = (ExplainOperand){ AM_SHARED_OUT, 0, i, j };
			return 3;
		}
		out[2] = (ExplainOperand){ AM_SHARED_GATE, 0, i, 0 };
		out[3] = (ExplainOperand){ AM_SHARED_OUT, 0, i, j };
		return 4;
	}
	if (which == AM_SHARED_GATE || which == AM_SHARED_OUT) {
		out[0] = (ExplainOperand){ b->norm == NORM_POST ? AM_NORM1 : b->norm == NORM_PRE ? AM_NORM2 : AM_RESIDUAL1, 0, i, -1 };
		return 1;
	}
	out[0] = (ExplainOperand){ AM_MOE_WEIGHTS, 0, i, which == AM_EXPERT_ACT ? j / F : j / D };
	if (which == AM_EXPERT_OUT) {
		out[1] = (ExplainOperand){ AM_EXPERT_ACT, 0, i, -1 };
		return 2;
	}
	out[1] = (ExplainOperand){ b->norm == NORM_POST  ? AM_NORM1
		                       : b->norm == NORM_PRE ? AM_NORM2
		                                             : AM_RESIDUAL1,
		                       0, i, -1 };
	return 2;
}

const AttnVariant variant_moe = {
	.name = "moe",
	.heads_apart = 1,
	.feature = FEAT_MOE,
	.stage = STAGE_MOE_ROUTER,
	.kernel = pass_router,
	.rules = { { AM_ROUTER_LOGITS, ATTN_MADE(AM_NORM1, AM_NORM2, AM_RESIDUAL1, AM_MOE_W_R) },
	           { AM_ROUTER_PROBS, ATTN_MADE(AM_NORM1, AM_NORM2, AM_RESIDUAL1, AM_MOE_W_R) },
	           { AM_ROUTER_SCORES, ATTN_MADE(AM_NORM1, AM_NORM2, AM_RESIDUAL1, AM_MOE_W_R) } },
	.explain = explain_router,
	.operands = operands_router,
	.fault = moe_fault,
	.same = moe_same,
};

const AttnVariant variant_moe_choice = {
	.name = "moe",
	.heads_apart = 1,
	.feature = FEAT_MOE_SIGMOID,
	.stage = STAGE_MOE_CHOICE,
	.kernel = pass_choice,
	.rules = { { AM_GROUP_SCORES, ATTN_MADE(AM_ROUTER_SCORES, AM_MOE_E_BIAS) },
	           { AM_SCORES_CHOICE, ATTN_MADE(AM_ROUTER_SCORES, AM_MOE_E_BIAS) } },
	.explain = explain_choice,
	.operands = operands_choice,
};

const AttnVariant variant_moe_topk = {
	.name = "moe",
	.heads_apart = 1,
	.feature = FEAT_MOE,
	.stage = STAGE_MOE_TOPK,
	.kernel = pass_topk,
	.rules = { { AM_MOE_WEIGHTS, ATTN_MADE(AM_ROUTER_PROBS, AM_SCORES_CHOICE, AM_ROUTER_SCORES) } },
	.explain = explain_topk,
	.operands = operands_topk,
};

const AttnVariant variant_moe_experts = {
	.name = "moe",
	.heads_apart = 1,
	.feature = FEAT_MOE,
	.stage = STAGE_MOE_EXPERTS,
	.kernel = pass_experts,
	/* each out from everything it is made of (the rules of one pass are not read in turn) */
	.rules = { { AM_EXPERT_ACT, ATTN_MADE(AM_NORM1, AM_NORM2, AM_RESIDUAL1, AM_MOE_WEIGHTS, AM_MOE_W_1, AM_MOE_W_3) },
	           { AM_EXPERT_OUT,
	             ATTN_MADE(AM_NORM1, AM_NORM2, AM_RESIDUAL1, AM_MOE_WEIGHTS, AM_MOE_W_1, AM_MOE_W_3, AM_MOE_W_2) },
	           { AM_SHARED_OUT, ATTN_MADE(AM_NORM1, AM_NORM2, AM_RESIDUAL1, AM_SHARED_W_1, AM_SHARED_W_3, AM_SHARED_W_2,
	                                      AM_SHARED_GATE_W) },
	           { AM_FFN_OUT, ATTN_MADE(AM_NORM1, AM_NORM2, AM_RESIDUAL1, AM_MOE_WEIGHTS, AM_MOE_W_1, AM_MOE_W_3, AM_MOE_W_2,
	                                   AM_SHARED_W_1, AM_SHARED_W_3, AM_SHARED_W_2, AM_SHARED_GATE_W) },
	           { AM_SHARED_GATE, ATTN_MADE(AM_NORM1, AM_NORM2, AM_RESIDUAL1, AM_SHARED_GATE_W) } },
	.explain = explain_experts,
	.operands = operands_experts,
};

/* ---------------------------------------------------------------- gpt-oss's mixture
 *
 * transformers' models/gpt_oss/modeling_gpt_oss.py: GptOssTopKRouter.forward (`router_logits =
 * F.linear(hidden_states, self.weight, self.bias)`, `torch.topk(router_logits, self.top_k, dim=-1)`,
 * `softmax(router_top_value, dim=1)`, scattered into zeros: router_scores) and GptOssExperts.forward
 * (`gate_up = hidden_states @ self.gate_up_proj + self.gate_up_proj_bias`, `gate, up = gate_up[..., ::2],
 * gate_up[..., 1::2]`, `gate.clamp(min=None, max=self.limit)`, `up.clamp(min=-self.limit, max=self.limit)`,
 * `glu = gate * torch.sigmoid(gate * self.alpha)`, `(up + 1) * glu @ self.down_proj + self.down_proj_bias`,
 * times the token's router score, summed over the experts). W_1 holds gate_up_proj's even columns, W_3 its
 * odd ones (the loader and lesson_moe.c split them).
 */

/* Row i's rank of expert e by its logit (torch.topk's: larger first, equals by the lower index). */
static int gptoss_rank(const Attn *a, int i, int e)
{
	return rank_in_row(&a->router_logits, i, e, moe_of(a)->experts);
}

/* The chosen logits' largest and Σ exp(l − largest) over the k chosen, added largest first. */
static double gptoss_topk_sum(const Attn *a, int i, double *max)
{
	const MoeParams *p = moe_of(a);
	double s = 0.0;

	*max = -INFINITY;
	for (int r = 0; r < p->top_k; r++)
		for (int e = 0; e < p->experts; e++)
			if (gptoss_rank(a, i, e) == r) {
				if (r == 0)
					*max = MAT_AT(a->router_logits, i, e);
				s += exp(MAT_AT(a->router_logits, i, e) - *max);
			}
	return s;
}

/* router_logits = x·W_r + b_r; router_probs = softmax over each row's top_k logits, 0 for the others. */
static void pass_router_gptoss(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	const MoeParams *p = &lp->block.moe;

	(void)cfg; /* the rows are the FFN input's: all of them, or one as decode_row computes it */
	mat_mul(attn_ffn_input(a), &p->W_r, &a->router_logits);
	for (int i = 0; i < attn_ffn_input(a)->rows; i++) {
		double max;
		for (int e = 0; e < p->experts; e++)
			MAT_AT(a->router_logits, i, e) += MAT_AT(p->b_r, 0, e);
		const double sum = gptoss_topk_sum(a, i, &max);
		for (int e = 0; e < p->experts; e++)
			MAT_AT(a->router_probs, i, e) =
				gptoss_rank(a, i, e) < p->top_k ? exp(MAT_AT(a->router_logits, i, e) - max) / sum : 0.0;
	}
}

/* moe_weights: the router's scores of the chosen (they add to 1 already), NaN for the others. */
static void pass_topk_gptoss(Attn *a, const ModelConfig *cfg, const LayerParams *lp)
{
	(void)cfg;
	for (int i = 0; i < attn_ffn_input(a)->rows; i++)
		for (int e = 0; e < lp->block.moe.experts; e++)
			MAT_AT(a->moe_weights, i, e) = gptoss_rank(a, i, e) < lp->block.moe.top_k ? MAT_AT(a->router_probs, i, e) : NAN;
}

/* The clamped SwiGLU of one hidden column: h = x·W_1 + b_1 (the gate), g = x·W_3 + b_3 (up). */
static double gptoss_glu(const MoeParams *p, double h, double g, double *gate, double *up)
{
	*gate = fmin(h, p->swiglu_limit);
	*up = fmax(-p->swiglu_limit, fmin(g, p->swiglu_limit));
	return (*up + 1.0) * (*gate * (1.0 / (1.0 + exp(-(*gate * p->swiglu_alpha)))));
}

/* Expert e's gate and up of row i, hidden column f (before the clamps). */
static void gptoss_hg(const MoeParams *p, const Mat *x, int F, int i, int e, int f, double *h, double *g)
{
	*h = *g = 0.0;
	for (int c = 0; c < x->cols; c++) {
		*h += MAT_AT(*x, i, c) * MAT_AT(p->W_1, c, e * F + f);
		*g += MAT_AT(*x, i, c) * MAT_AT(p->W_3, c, e * F + f);
	}
	*h += MAT_AT(p->b_1, 0, e * F + f);
	*g += MAT_AT(p->b_3, 0, e * F + f);
}

/*
 * gpt-oss's expert e (GptOssExperts.forward) on its r rows xs (r × D), for pass_experts: h = x·W_1 + b_1 and
 * g = x·W_3 + b_3 (gate and up before the clamps) on the matrix kernels, each cell's terms in the order of
 * gptoss_hg's loop over a row; act = gptoss_glu (r × F); out = act·W_2 + b_2 (r × D).
 */
static void gptoss_rows(const MoeParams *p, int e, int r, int D, int F, const double *xs, double *h, double *g,
                        double *act, double *out)
{
	mat_mul_chain(r, D, F, xs, (size_t)D, p->W_1.a + (size_t)e * F, (size_t)p->W_1.cols, 0, h, (size_t)F, 0);
	mat_mul_chain(r, D, F, xs, (size_t)D, p->W_3.a + (size_t)e * F, (size_t)p->W_3.cols, 0, g, (size_t)F, 0);
	for (int k = 0; k < r; k++)
		for (int f = 0; f < F; f++) {
			double gate, up;
			const double hk = h[(size_t)k * F + f] + MAT_AT(p->b_1, 0, e * F + f);
			const double gk = g[(size_t)k * F + f] + MAT_AT(p->b_3, 0, e * F + f);
			act[(size_t)k * F + f] = gptoss_glu(p, hk, gk, &gate, &up);
		}
	mat_mul_chain(r, F, D, act, (size_t)F, p->W_2.a + (size_t)e * F * p->W_2.cols, (size_t)p->W_2.cols, 0, out,
	              (size_t)D, 0);
	for (int k = 0; k < r; k++)
		for (int c = 0; c < D; c++)
			out[(size_t)k * D + c] = out[(size_t)k * D + c] + MAT_AT(p->b_2, e, c);
}

static const char *gptoss_fault(const ModelConfig *cfg, const LayerParams *lp)
{
	const MoeParams *p = &lp->block.moe;
	const int E = p->experts, F = lp->block.d_ff;

	if (p->b_r.rows != 1 || p->b_r.cols != E)
		return "ffn.router_bias";
	if (p->b_1.rows != 1 || p->b_1.cols != E * F || p->b_3.rows != 1 || p->b_3.cols != E * F || p->b_2.rows != E ||
	    p->b_2.cols != cfg->d_model || p->shared_ff > 0)
		return "ffn.experts";
	if (!(p->swiglu_limit > 0) || !isfinite(p->swiglu_alpha))
		return "ffn.gpt_oss";
	return NULL;
}

static void explain_router_gptoss(StrBuf *b, const Attn *a, AttnMatrix which, int i, int j, int utf8)
{
	const MoeParams *p = moe_of(a);
	const int rank = gptoss_rank(a, i, j);
	char x1[32], x2[32], x3[32], x4[32], x5[32];
	double max;

	if (which == AM_ROUTER_LOGITS) {
		strbuf_printf(b, _("token %d's score for expert %d = %s row %d %s W_router's column %d + the router's bias %s\n"),
		              i, j, moe_input_name(a), i, MUL_SYM(utf8), j, celltext_num(x1, MAT_AT(p->b_r, 0, j), utf8));
		const double dot = celltext_terms(b, &MAT_AT(*attn_ffn_input(a), i, 0), 1, p->W_r.a + j, (size_t)p->experts,
		                                  attn_config(a)->d_model, utf8);
		strbuf_printf(b, "%s + %s = %s\n", celltext_num(x1, dot, utf8), celltext_num(x2, MAT_AT(p->b_r, 0, j), utf8),
		              celltext_num(x3, MAT_AT(a->router_logits, i, j), utf8));
		return;
	}
	strbuf_printf(b, _("gpt-oss's router takes each token's top %d logits FIRST, then a softmax over those %d alone; "
	                   "token %d's: "),
	              p->top_k, p->top_k, i);
	moe_chosen_list(b, a, i, utf8);
	strbuf_printf(b, "\n");
	const double sum = gptoss_topk_sum(a, i, &max);
	if (rank >= p->top_k) {
		strbuf_printf(b, _("expert %d's logit %s is number %d of %d, not among the top %d: its probability is 0 (it is "
		                   "not in the softmax at all)\n"),
		              j, celltext_num(x1, MAT_AT(a->router_logits, i, j), utf8), rank + 1, p->experts, p->top_k);
		return;
	}
	strbuf_printf(b, "p = exp(%s %s %s) / %s = %s / %s = %s\n", celltext_num(x1, MAT_AT(a->router_logits, i, j), utf8),
	              celltext_sym(utf8, "\u2212", "-"), celltext_num(x2, max, utf8), celltext_sym(utf8, "\u03a3", "sum"),
	              celltext_num(x3, exp(MAT_AT(a->router_logits, i, j) - max), utf8), celltext_num(x4, sum, utf8),
	              celltext_num(x5, MAT_AT(a->router_probs, i, j), utf8));
}

static void explain_topk_gptoss(StrBuf *b, const Attn *a, int i, int j, int utf8)
{
	const MoeParams *p = moe_of(a);
	const int rank = gptoss_rank(a, i, j);
	char x1[32];

	strbuf_printf(b, _("token %d's top %d experts by logit: "), i, p->top_k);
	moe_chosen_list(b, a, i, utf8);
	strbuf_printf(b, "\n");
	if (rank >= p->top_k)
		strbuf_printf(b, _("expert %d is number %d of %d by logit, so token %d did not choose it: it has no weight, and "
		                   "expert %d does not run on this token\n"),
		              j, rank + 1, p->experts, i, j);
	else
		strbuf_printf(b, _("the softmax was over the chosen alone, so their weights add to 1 already: w = p = %s\n"),
		              celltext_num(x1, MAT_AT(a->moe_weights, i, j), utf8));
}

static void explain_experts_gptoss(StrBuf *b, const Attn *a, AttnMatrix which, int i, int j, int utf8)
{
	const MoeParams *p = moe_of(a);
	const int F = attn_params(a)->block.d_ff, D = attn_config(a)->d_model;
	const Mat *x = attn_ffn_input(a);
	const char *times = celltext_sym(utf8, "\u00d7", "*");
	char x1[32], x2[32], x3[32], x4[32], x5[32], x6[32];

	if (which == AM_EXPERT_OUT) {
		const int e = j / D, col = j % D;
		strbuf_printf(b, _("expert %d's output, column %d = expert_act row %d (expert %d's %d columns) %s its W_2's "
		                   "column %d + its bias %s\n"),
		              e, col, i, e, F, MUL_SYM(utf8), col, celltext_num(x1, MAT_AT(p->b_2, e, col), utf8));
		const double dot = celltext_terms(b, &MAT_AT(a->expert_act, i, e * F), 1, &MAT_AT(p->W_2, e * F, col),
		                                  (size_t)D, F, utf8);
		strbuf_printf(b, "%s + %s = %s\n", celltext_num(x1, dot, utf8), celltext_num(x2, MAT_AT(p->b_2, e, col), utf8),
		              celltext_num(x3, MAT_AT(a->expert_out, i, j), utf8));
		return;
	}
	const int e = j / F, col = j % F;
	double h, g, gate, up;
	gptoss_hg(p, x, F, i, e, col, &h, &g);
	const double act = gptoss_glu(p, h, g, &gate, &up);
	strbuf_printf(b, _("expert %d, hidden column %d: gate = %s row %d %s its W_1's column %d (gate_up_proj's column "
	                   "%d) + bias, up = the same with W_3 (column %d)\n"),
	              e, col, moe_input_name(a), i, MUL_SYM(utf8), col, 2 * col, 2 * col + 1);
	celltext_terms(b, &MAT_AT(*x, i, 0), 1, &MAT_AT(p->W_1, 0, e * F + col), (size_t)p->W_1.cols, D, utf8);
	celltext_terms(b, &MAT_AT(*x, i, 0), 1, &MAT_AT(p->W_3, 0, e * F + col), (size_t)p->W_3.cols, D, utf8);
	strbuf_printf(b, _("with the biases: gate = %s, up = %s\n"), celltext_num(x1, h, utf8), celltext_num(x2, g, utf8));
	strbuf_printf(b, _("clamped at limit %s: gate = min(gate, %s) = %s, up = clamp(up, %s%s, %s) = %s\n"),
	              celltext_num(x1, p->swiglu_limit, utf8), celltext_num(x2, p->swiglu_limit, utf8),
	              celltext_num(x3, gate, utf8), celltext_sym(utf8, "\u2212", "-"),
	              celltext_num(x4, p->swiglu_limit, utf8), celltext_num(x5, p->swiglu_limit, utf8),
	              celltext_num(x6, up, utf8));
	strbuf_printf(b, "(up + 1) %s gate %s %s(%s %s gate) = %s %s %s %s %s(%s) = %s\n", times, times,
	              celltext_sym(utf8, "\u03c3", "sigmoid"), celltext_num(x1, p->swiglu_alpha, utf8), times,
	              celltext_num(x2, up + 1.0, utf8), times, celltext_num(x3, gate, utf8), times,
	              celltext_sym(utf8, "\u03c3", "sigmoid"), celltext_num(x4, p->swiglu_alpha * gate, utf8),
	              celltext_num(x5, act, utf8));
}
