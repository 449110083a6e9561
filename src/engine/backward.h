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
	Mat X;              /* the attention's input rows (norm1 in a pre-norm block) */
	Mat S;              /* cross-attention: the source rows */
	/* the block */
	Mat residual1, norm1, ffn_hidden, ffn_gate, ffn_act, ffn_out, residual2, norm2, block_out, final;
	Mat ln1_gamma, ln1_beta, ln2_gamma, ln2_beta, W_1, b_1, W_3, b_3, W_2, b_2, final_gamma, final_beta;
	Mat input;          /* the layer's input rows (X for layer 0) */
} AttnGrad;

/*
 * The backward pass of a computed lesson with "backward": from the loss
 * (½ Σ (output − target)², or Σ dOutput ⊙ output) through every layer, in
 * the reverse order of the stages. Sets a->grad on every layer of the
 * chain and returns the loss in *loss. Returns 0, or -1 with *err.
 */
int attn_backward(Attn *a, double *loss, char **err);
void attn_grad_free(AttnGrad *g, int heads);

/*
 * Everything a lesson asks for: every stage (attn_compute) and, when it has
 * a "backward", every gradient and the loss (a->loss). NULL with *err.
 */
Attn *attn_compute_all(const Lesson *l, char **err);

/*
 * Plain gradient descent: steps times, every weight and bias of l (and of
 * its layers) p ← p − lr·∂L/∂p; not the inputs. losses (NULL: not kept)
 * gets the loss before each step; the loss after the last is the next
 * computation's. l is changed in place. Returns 0, or -1 with *err (a loss
 * that stops being finite is refused, naming the step).
 */
int attn_train(Lesson *l, int steps, double lr, double *losses, char **err);

/*
 * The parameters of one layer's lesson p (its weights, biases, norms and
 * FFN; those it has) beside their gradients in g, as training walks them:
 * up to max pairs in param and grad; returns how many. ATTN_GRAD_PARAMS is
 * enough for any layer. A stack's final norm is the stack's own
 * (final_gamma, final_beta beside the last link's gradients).
 */
#define ATTN_GRAD_PARAMS 24
int attn_grad_pairs(Lesson *p, const AttnGrad *g, Mat **param, const Mat **grad, int max);

#endif
