/* backward_moe.c: the backward pass of a mixture-of-experts FFN (variants/moe.c), for backward.c.
 *
 * From dffn_out (g->ffn_out) back to the FFN's input rows x, row by row, as
 * autograd takes it: the top-k choice is a choice of indices, with no
 * gradient, so the router learns only through the weights of the experts a
 * token chose (an expert it did not choose neither runs nor learns from it).
 *   ffn_out = Σ_chosen w_e · out_e (+ shared)   dw_e = out_e · dffn_out, dout_e = w_e · dffn_out
 *   out_e = act·W_2,e (+ b_2,e)                 dact = dout_e·W_2,eᵀ, dW_2,e += actᵀ·dout_e
 *   act = silu(h) ⊙ g                           dh = dact ⊙ g ⊙ silu′(h), dg = dact ⊙ silu(h)
 *     gpt-oss: act = (up + 1) ⊙ gate ⊙ σ(α·gate), gate = min(h, limit), up = clamp(g, ±limit):
 *     dh, dg are 0 where the clamp cut (autograd's clamp passes the gradient only inside its bounds)
 *   h = x·W_1,e (+ b_1), g = x·W_3,e (+ b_3)    dW_1,e += xᵀ·dh, dx += dh·W_1,eᵀ (W_3 likewise)
 * The weights back to the router's logits, by its kind:
 *   softmax (Mixtral, Qwen3-MoE): w = p / S over the chosen, S = Σ_chosen p (norm_topk_prob), else w = p:
 *     dp_j = dw_j / S − Σ_k dw_k p_k / S² (or dw_j), dlogits = p ⊙ (dp − Σ_k p_k dp_k)
 *   sigmoid (DeepSeek-V3): w = r · s / (Σ_chosen s + 1e-20) (norm_topk_prob), else r · s; s = σ(logits):
 *     ds_j = r (dw_j / den − Σ_k dw_k s_k / den²) (or r · dw_j), dlogits = ds ⊙ s(1 − s);
 *     e_score_correction_bias moves the choice only: no gradient
 *   gpt-oss: w = softmax over the chosen logits: dlogits_j = w_j (dw_j − Σ_k w_k dw_k), 0 for the others
 *   logits = x·W_r (+ b_r)                      dW_r += xᵀ·dlogits, db_r += dlogits, dx += dlogits·W_rᵀ
 * The shared expert (Qwen2-MoE's gated, DeepSeek's not): ffn_out += σ(z) · shared_out, z = x·S_gate:
 *   dshared_out = σ(z) · dffn_out, dz = (shared_out · dffn_out) σ(z)(1 − σ(z)), dS_gate += xᵀ·dz; its SwiGLU as above.
 */
#include "engine/backward.h"
#include "engine/kernels.h"

#include <math.h>
#include <stdlib.h>

/* A zeroed gradient of m's shape (nothing when m is empty). */
static int zeros_like(Mat *d, const Mat *m)
{
	return mat_empty(m) ? 0 : mat_alloc(d, m->rows, m->cols);
}

static double sigm(double z)
{
	return 1.0 / (1.0 + exp(-z));
}

/*
 * One hidden column of a SwiGLU from dact to its two pre-activations: *dh, *dg.
 * h, g: x·W_1 (+ b_1) and x·W_3 (+ b_3). p: gpt-oss's clamped form when p->gptoss, else silu(h)·g.
 */
static void glu_backward(const MoeParams *p, int oss, double h, double g, double dact, double *dh, double *dg)
{
	if (oss) {
		const double L = p->swiglu_limit, gate = fmin(h, L), up = fmax(-L, fmin(g, L));
		const double sg = sigm(p->swiglu_alpha * gate), glu = gate * sg;
		const double dgate = dact * (up + 1.0) * (sg + gate * p->swiglu_alpha * sg * (1.0 - sg));
		*dh = h <= L ? dgate : 0.0;
		*dg = g >= -L && g <= L ? dact * glu : 0.0;
		return;
	}
	const double s = sigm(h);
	*dh = dact * g * s * (1.0 + h * (1.0 - s));
	*dg = dact * attn_silu(h);
}

/* x·W[:, col] (W d × cols), the pre-activation of one hidden column. */
static double dot_col(const double *x, const Mat *W, int col)
{
	double s = 0.0;

	for (int c = 0; c < W->rows; c++)
		s += x[c] * MAT_AT(*W, c, col);
	return s;
}

/*
 * One SwiGLU's hidden columns [c0, c0 + F) of W_1, W_3 (d × ·) and rows of W_2 (· × d), from dout (d numbers) at
 * its output back: into the gradients gW_1, gW_3, gW_2 (and gb_1, gb_3 when not NULL) and dx. b_1, b_3: its biases
 * (NULL: none).
 */
static void swiglu_backward(const MoeParams *p, int oss, const double *x, const double *dout, int c0, int F,
                            const Mat *W_1, const Mat *W_3, const Mat *W_2, const double *b_1, const double *b_3,
                            Mat *gW_1, Mat *gW_3, Mat *gW_2, double *gb_1, double *gb_3, double *dx)
{
	const int D = W_1->rows;

	for (int f = c0; f < c0 + F; f++) {
		const double h = dot_col(x, W_1, f) + (b_1 != NULL ? b_1[f] : 0.0);
		const double g = dot_col(x, W_3, f) + (b_3 != NULL ? b_3[f] : 0.0);
		double act, dact = 0.0, dh, dg;
		if (oss) {
			const double gate = fmin(h, p->swiglu_limit), up = fmax(-p->swiglu_limit, fmin(g, p->swiglu_limit));
			act = (up + 1.0) * gate * sigm(p->swiglu_alpha * gate);
		} else {
			act = attn_silu(h) * g;
		}
		for (int c = 0; c < D; c++) {
			dact += dout[c] * MAT_AT(*W_2, f, c);
			MAT_AT(*gW_2, f, c) += act * dout[c];
		}
		glu_backward(p, oss, h, g, dact, &dh, &dg);
		for (int c = 0; c < D; c++) {
			MAT_AT(*gW_1, c, f) += x[c] * dh;
			MAT_AT(*gW_3, c, f) += x[c] * dg;
			dx[c] += dh * MAT_AT(*W_1, c, f) + dg * MAT_AT(*W_3, c, f);
		}
		if (gb_1 != NULL) {
			gb_1[f] += dh;
			gb_3[f] += dg;
		}
	}
}

/* Row i's gradient at the router's logits (g->router_logits) from that at the chosen weights (g->moe_weights). */
static void router_backward(const Attn *a, const MoeParams *p, AttnGrad *g, int i)
{
	const int E = p->experts, sig = p->scoring == MOE_SCORE_SIGMOID;
	const Mat *score = sig ? &a->router_scores : &a->router_probs; /* what the weights were made of */
	double sum = 0.0, wdw = 0.0, dot = 0.0;

	for (int e = 0; e < E; e++)
		if (!isnan(MAT_AT(a->moe_weights, i, e))) {
			sum += MAT_AT(*score, i, e);
			wdw += MAT_AT(g->moe_weights, i, e) * MAT_AT(*score, i, e);
		}
	if (sig)
		sum += 1e-20;
	for (int e = 0; e < E; e++) {
		const int chosen = !isnan(MAT_AT(a->moe_weights, i, e));
		const double dw = MAT_AT(g->moe_weights, i, e), s = MAT_AT(*score, i, e);
		double *dl = &MAT_AT(g->router_logits, i, e);
		if (!chosen) {
			*dl = 0.0;
		} else if (p->gptoss) { /* the softmax over the chosen: w = router_probs */
			*dl = s * (dw - wdw);
		} else if (sig) {
			const double ds = p->routed_scaling * (p->norm_topk_prob ? dw / sum - wdw / (sum * sum) : dw);
			*dl = ds * s * (1.0 - s);
		} else { /* dp, kept in dl until the softmax's Jacobian below */
			*dl = p->norm_topk_prob ? dw / sum - wdw / (sum * sum) : dw;
		}
	}
	if (sig || p->gptoss)
		return;
	for (int e = 0; e < E; e++)
		dot += MAT_AT(*score, i, e) * MAT_AT(g->router_logits, i, e);
	for (int e = 0; e < E; e++)
		MAT_AT(g->router_logits, i, e) = MAT_AT(*score, i, e) * (MAT_AT(g->router_logits, i, e) - dot);
}

/* The shared expert of row i: its gate's and its SwiGLU's gradients, into dx (dso: d numbers of scratch). */
static void shared_backward(const Attn *a, const MoeParams *p, AttnGrad *g, int i, const double *x, double *dx,
                            double *dso)
{
	const int D = p->S_1.rows, gated = !mat_empty(&p->S_gate);
	const double *dy = &MAT_AT(g->ffn_out, i, 0);
	double sgate = 1.0;

	if (gated) {
		double dz = 0.0;
		sgate = MAT_AT(a->shared_gate, i, 0);
		for (int c = 0; c < D; c++)
			dz += dy[c] * MAT_AT(a->shared_out, i, c);
		dz *= sgate * (1.0 - sgate);
		for (int c = 0; c < D; c++) {
			MAT_AT(g->S_gate, c, 0) += x[c] * dz;
			dx[c] += dz * MAT_AT(p->S_gate, c, 0);
		}
	}
	for (int c = 0; c < D; c++)
		dso[c] = sgate * dy[c];
	swiglu_backward(p, 0, x, dso, 0, p->shared_ff, &p->S_1, &p->S_3, &p->S_2, NULL, NULL, &g->S_1, &g->S_3, &g->S_2,
	                NULL, NULL, dx);
}

int moe_backward(const Attn *a, AttnGrad *g, const Mat *in, Mat *din)
{
	const Block *b = &attn_params(a)->block;
	const MoeParams *p = &b->moe;
	const int n = in->rows, D = in->cols, E = p->experts, F = b->d_ff, oss = p->gptoss;
	double *dout;

	if (zeros_like(&g->router_logits, &a->router_logits) || zeros_like(&g->moe_weights, &a->moe_weights) ||
	    zeros_like(&g->W_r, &p->W_r) || zeros_like(&g->b_r, &p->b_r) || zeros_like(&g->moe_W_1, &p->W_1) ||
	    zeros_like(&g->moe_W_3, &p->W_3) || zeros_like(&g->moe_W_2, &p->W_2) || zeros_like(&g->moe_b_1, &p->b_1) ||
	    zeros_like(&g->moe_b_3, &p->b_3) || zeros_like(&g->moe_b_2, &p->b_2) || zeros_like(&g->S_1, &p->S_1) ||
	    zeros_like(&g->S_3, &p->S_3) || zeros_like(&g->S_2, &p->S_2) || zeros_like(&g->S_gate, &p->S_gate))
		return -1;
	if ((dout = malloc((size_t)D * sizeof *dout)) == NULL)
		return -1;
	for (int i = 0; i < n; i++) {
		const double *x = &MAT_AT(*in, i, 0), *dy = &MAT_AT(g->ffn_out, i, 0);
		double *dx = &MAT_AT(*din, i, 0);
		for (int e = 0; e < E; e++) {
			const double w = MAT_AT(a->moe_weights, i, e);
			double dw = 0.0;
			if (isnan(w)) /* not chosen: it did not run, and nothing reaches it */
				continue;
			for (int c = 0; c < D; c++) {
				dw += MAT_AT(a->expert_out, i, e * D + c) * dy[c];
				dout[c] = w * dy[c];
				if (oss)
					MAT_AT(g->moe_b_2, e, c) += dout[c];
			}
			MAT_AT(g->moe_weights, i, e) = dw;
			swiglu_backward(p, oss, x, dout, e * F, F, &p->W_1, &p->W_3, &p->W_2, oss ? p->b_1.a : NULL,
			                oss ? p->b_3.a : NULL, &g->moe_W_1, &g->moe_W_3, &g->moe_W_2, oss ? g->moe_b_1.a : NULL,
			                oss ? g->moe_b_3.a : NULL, dx);
		}
		router_backward(a, p, g, i);
		for (int e = 0; e < E; e++) {
			const double dl = MAT_AT(g->router_logits, i, e);
			for (int c = 0; c < D; c++) {
				MAT_AT(g->W_r, c, e) += x[c] * dl;
				dx[c] += dl * MAT_AT(p->W_r, c, e);
			}
			if (!mat_empty(&g->b_r))
				g->b_r.a[e] += dl;
		}
		if (p->shared_ff > 0)
			shared_backward(a, p, g, i, x, dx, dout);
	}
	free(dout);
	return 0;
}
