/* backward.h: the backward pass — the gradient of the loss with respect to every matrix — and training. */
#ifndef ATTNVIZ_BACKWARD_H
#define ATTNVIZ_BACKWARD_H

#include "engine/attention.h"

/*
 * The gradients of one layer, each the shape of the matrix it is the
 * gradient of (∂L/∂M is written dM). A matrix the layer does not have
 * (no W_o, no bias, no block) has an empty gradient.
 */
typedef struct GradHead {
	Mat weighted, weights, masked, scaled, scores; /* n × d_v, then n × m */
} GradHead;

typedef struct AttnGrad {
	/* the attention */
	Mat output, concat, W_o, b_o;
	GradHead *head;     /* heads of them */
	Mat Q, K, V, W_q, W_k, W_v, b_q, b_k, b_v, w_e;
	Mat sinks;          /* attention sinks: ∂L/∂sink_h, 1 × heads */
	Mat gated, gate, W_gate, b_gate; /* gated attention: what W_o read, the gate's logits, its weights and bias */
	Mat X;              /* the attention's input rows (norm1 in a pre-norm block) */
	Mat S;              /* cross-attention: the source rows */
	/* the block */
	Mat residual1, norm1, ffn_hidden, ffn_gate, ffn_act, ffn_out, residual2, norm2, block_out, final;
	Mat ln1_gamma, ln1_beta, ln2_gamma, ln2_beta, W_1, b_1, W_3, b_3, W_2, b_2, final_gamma, final_beta;
	Mat input;          /* the layer's input rows (X for layer 0) */
	/* a mixture of experts (backward_moe.c): the router's logits and the chosen weights (0 where not chosen),
	 * the router's weights and bias (gpt-oss), the experts' side by side, the shared expert's */
	Mat router_logits, moe_weights, W_r, b_r, moe_W_1, moe_W_3, moe_W_2, moe_b_1, moe_b_3, moe_b_2;
	Mat S_1, S_3, S_2, S_gate;
} AttnGrad;

/*
 * The backward pass of a computed lesson with "backward": from the loss
 * (½ Σ (output − target)², or Σ dOutput ⊙ output) through every layer, in
 * the reverse order of the stages. Sets a->grad on every layer of the
 * chain and returns the loss in *loss. Returns 0, or -1 with *err.
 */
int attn_backward(Attn *a, double *loss, char **err);
/* The loss alone (what attn_backward puts in *loss and the first link's loss), the gradients left as they are. */
int attn_loss(Attn *first, double *loss, char **err);
/*
 * a's gradients as a's numbers now make them: when an update left them to
 * be made when first read (the root's grad_stale: attention.h), the backward
 * pass runs now. Every reader of a->grad asks this first (attn_matrix,
 * explain, dump). a is const as the readers hold it; like its derived
 * matrices' cache, the gradients it owns are written through it. 0, or -1
 * with *err (out of memory): the gradients are then not to be read.
 */
int attn_grads_ready(const Attn *a, char **err);
/* backward.c's FFN when it is a mixture of experts: from g->ffn_out back to its input rows in (added to din). 0, or -1 out of memory. */
int moe_backward(const Attn *a, AttnGrad *g, const Mat *in, Mat *din);
void attn_grad_free(AttnGrad *g, int heads);

#endif
