/* backward_moe.c: the backward pass of a mixture-of-experts FFN (variants/moe.c), for backward.c.
 *
 * From dffn_out (g->ffn_out) back to the FFN's input rows x, as autograd
 * takes it, expert by expert on the rows that chose it (its products on the
 * matrix kernels, as the forward pass runs them), then the router and the
 * shared expert: the top-k choice is a choice of indices, with no
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
#include <string.h>

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

/*
 * One SwiGLU on r rows at once, hidden columns [c0, c0 + F) of W_1, W_3 (d × ·, row stride ld13) and rows of
 * W_2 (· × d): from dout (r × d) at its output back into the gradients gW_1, gW_3 (the same columns), gW_2 (the
 * same rows), gb_1, gb_3 (when not NULL) and the rows of dx that rows[] names (row k of x is row rows[k] of
 * the lesson: dx's rows are dxm's, rows[k] of them). b_1, b_3: its biases (NULL: none).
 * Expert by expert, the rows that chose it side by side, so its products run on the matrix kernels; each
 * cell's terms are added in the order the loop over a token at a time took them (h and dact over d, the
 * weights' gradients over the tokens in order), with the kernel's kind (matrix.h: mat_mul_chain). dx takes
 * dh·W_1ᵀ + dg·W_3ᵀ as that loop did, column by column of the hidden layer, each term the sum of the two
 * products, from W_1 and W_3 turned once (F × d) so that a column is read along a row.
 * act_kept: the forward pass's activations, row rows[k] of it for row k (NULL: made from h and g as the
 * forward pass makes a shared expert's, attn_swiglu). 0, or -1 out of memory.
 */
MAT_WIDE static int swiglu_backward(const MoeParams *p, int oss, int r, const double *x, const double *dout, int c0, int F,
                           const Mat *W_1, const Mat *W_3, const Mat *W_2, const double *b_1, const double *b_3,
                           const Mat *act_kept, Mat *gW_1, Mat *gW_3, Mat *gW_2, double *gb_1, double *gb_3,
                           const int *rows, Mat *dxm)
{
	const int D = W_1->rows;
	const size_t ld13 = (size_t)W_1->cols, ld2 = (size_t)W_2->cols, rf = (size_t)r * (size_t)F;
	double *h = malloc((6 * rf + 2 * (size_t)F * (size_t)D) * sizeof *h);

	if (h == NULL)
		return -1;
	double *g = h + rf, *act = g + rf, *dact = act + rf, *dh = dact + rf, *dg = dh + rf, *W1t = dg + rf,
	       *W3t = W1t + (size_t)F * D;
	/* h = x·W_1 (+ b_1), g = x·W_3 (+ b_3): r × F */
	mat_mul_chain(r, D, F, x, (size_t)D, W_1->a + c0, ld13, 0, h, (size_t)F, 0);
	mat_mul_chain(r, D, F, x, (size_t)D, W_3->a + c0, ld13, 0, g, (size_t)F, 0);
	if (b_1 != NULL)
		for (int k = 0; k < r; k++)
			for (int f = 0; f < F; f++) {
				h[(size_t)k * F + f] += b_1[c0 + f];
				g[(size_t)k * F + f] += b_3[c0 + f];
			}
	/* act: the forward pass's own (a routed expert's rows of expert_act), else made as it made it */
	if (act_kept != NULL)
		for (int k = 0; k < r; k++)
			memcpy(&act[(size_t)k * F], &MAT_AT(*act_kept, rows[k], c0), (size_t)F * sizeof *act);
	else
		attn_swiglu(rf, h, g, act);
	/* dact = dout·W_2ᵀ (r × F), dW_2 += actᵀ·dout (F × d) */
	mat_mul_chain(r, D, F, dout, (size_t)D, W_2->a + (size_t)c0 * ld2, ld2, 1, dact, (size_t)F, 0);
	mat_mul_continue(F, r, D, act, (size_t)F, 1, dout, (size_t)D, 0, &MAT_AT(*gW_2, c0, 0), (size_t)gW_2->cols, 0);
	for (size_t t = 0; t < rf; t++)
		glu_backward(p, oss, h[t], g[t], dact[t], &dh[t], &dg[t]);
	/* dW_1 += xᵀ·dh, dW_3 += xᵀ·dg (d × F); db_1, db_3: the columns' sums, token by token */
	mat_mul_continue(D, r, F, x, (size_t)D, 1, dh, (size_t)F, 0, gW_1->a + c0, (size_t)gW_1->cols, 0);
	mat_mul_continue(D, r, F, x, (size_t)D, 1, dg, (size_t)F, 0, gW_3->a + c0, (size_t)gW_3->cols, 0);
	if (gb_1 != NULL)
		for (int k = 0; k < r; k++)
			for (int f = 0; f < F; f++) {
				gb_1[c0 + f] += dh[(size_t)k * F + f];
				gb_3[c0 + f] += dg[(size_t)k * F + f];
			}
	/* dx += dh·W_1ᵀ + dg·W_3ᵀ, a hidden column at a time */
	for (int c = 0; c < D; c++)
		for (int f = 0; f < F; f++) {
			W1t[(size_t)f * D + c] = MAT_AT(*W_1, c, c0 + f);
			W3t[(size_t)f * D + c] = MAT_AT(*W_3, c, c0 + f);
		}
	for (int k = 0; k < r; k++) {
		double *dx = &MAT_AT(*dxm, rows != NULL ? rows[k] : k, 0);
		for (int f = 0; f < F; f++) {
			const double a1 = dh[(size_t)k * F + f], a3 = dg[(size_t)k * F + f];
			const double *w1 = &W1t[(size_t)f * D], *w3 = &W3t[(size_t)f * D];
			for (int c = 0; c < D; c++)
				dx[c] += a1 * w1[c] + a3 * w3[c];
		}
	}
	free(h);
	return 0;
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

/*
 * The shared expert on every row: its gate's gradients, then its SwiGLU's, into din. dso: n × d of scratch.
 * 0, or -1 out of memory.
 */
static int shared_backward(const Attn *a, const MoeParams *p, AttnGrad *g, const Mat *in, Mat *din, double *dso)
{
	const int n = in->rows, D = p->S_1.rows, gated = !mat_empty(&p->S_gate);

	for (int i = 0; i < n; i++) {
		const double *dy = &MAT_AT(g->ffn_out, i, 0), *x = &MAT_AT(*in, i, 0);
		double *dx = &MAT_AT(*din, i, 0), sgate = 1.0;
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
			dso[(size_t)i * D + c] = sgate * dy[c];
	}
	return swiglu_backward(p, 0, n, in->a, dso, 0, p->shared_ff, &p->S_1, &p->S_3, &p->S_2, NULL, NULL, NULL, &g->S_1,
	                       &g->S_3, &g->S_2, NULL, NULL, NULL, din);
}

int moe_backward(const Attn *a, AttnGrad *g, const Mat *in, Mat *din)
{
	const Block *b = &attn_params(a)->block;
	const MoeParams *p = &b->moe;
	const int n = in->rows, D = in->cols, E = p->experts, F = b->d_ff, oss = p->gptoss;
	int rc = 0;

	if (zeros_like(&g->router_logits, &a->router_logits) || zeros_like(&g->moe_weights, &a->moe_weights) ||
	    zeros_like(&g->W_r, &p->W_r) || zeros_like(&g->b_r, &p->b_r) || zeros_like(&g->moe_W_1, &p->W_1) ||
	    zeros_like(&g->moe_W_3, &p->W_3) || zeros_like(&g->moe_W_2, &p->W_2) || zeros_like(&g->moe_b_1, &p->b_1) ||
	    zeros_like(&g->moe_b_3, &p->b_3) || zeros_like(&g->moe_b_2, &p->b_2) || zeros_like(&g->S_1, &p->S_1) ||
	    zeros_like(&g->S_3, &p->S_3) || zeros_like(&g->S_2, &p->S_2) || zeros_like(&g->S_gate, &p->S_gate))
		return -1;
	if (n == 0)
		return 0;
	int *pick = malloc((size_t)n * sizeof *pick);
	double *xs = malloc((size_t)n * (size_t)D * sizeof *xs), *dout = malloc((size_t)n * (size_t)D * sizeof *dout);
	if (pick == NULL || xs == NULL || dout == NULL) {
		free(pick), free(xs), free(dout);
		return -1;
	}
	/* each expert on the rows that chose it, in the order of e (each row's dx takes its experts' terms so) */
	for (int e = 0; e < E && rc == 0; e++) {
		int r = 0;
		for (int i = 0; i < n; i++) {
			const double w = MAT_AT(a->moe_weights, i, e), *dy = &MAT_AT(g->ffn_out, i, 0);
			double dw = 0.0, *d = &dout[(size_t)r * D];
			if (isnan(w)) /* not chosen: it did not run, and nothing reaches it */
				continue;
			for (int c = 0; c < D; c++) {
				dw += MAT_AT(a->expert_out, i, e * D + c) * dy[c];
				d[c] = w * dy[c];
				if (oss)
					MAT_AT(g->moe_b_2, e, c) += d[c];
			}
			MAT_AT(g->moe_weights, i, e) = dw;
			memcpy(&xs[(size_t)r * D], &MAT_AT(*in, i, 0), (size_t)D * sizeof *xs);
			pick[r++] = i;
		}
		if (r > 0)
			rc = swiglu_backward(p, oss, r, xs, dout, e * F, F, &p->W_1, &p->W_3, &p->W_2, oss ? p->b_1.a : NULL,
			                     oss ? p->b_3.a : NULL, &a->expert_act, &g->moe_W_1, &g->moe_W_3, &g->moe_W_2,
			                     oss ? g->moe_b_1.a : NULL, oss ? g->moe_b_3.a : NULL, pick, din);
	}
	/* the router, row by row */
	for (int i = 0; i < n && rc == 0; i++) {
		const double *x = &MAT_AT(*in, i, 0);
		double *dx = &MAT_AT(*din, i, 0);
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
	}
	if (rc == 0 && p->shared_ff > 0)
		rc = shared_backward(a, p, g, in, din, dout);
	free(pick), free(xs), free(dout);
	return rc;
}
