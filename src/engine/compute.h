/* compute.h: a lesson's whole computation — the chain of layers, updates
 * that rerun only what an edit reaches, progress, the backward pass when
 * asked for, and training (compute.c). attention.h includes it, so a caller
 * of the engine names either. */
#ifndef ATTNVIZ_COMPUTE_H
#define ATTNVIZ_COMPUTE_H

#include "engine/attention.h"

/*
 * Compute every stage of model m (model.h): each layer from the settings
 * its layers share and that layer's parameters, an encoder's first. Returns
 * a new Attn, or NULL with *err set (out of memory, over a documented
 * limit). course is the lesson that teaches m, carried for the views that
 * show the result (a->top: its title, steps and quizzes; NULL for a
 * computation no view shows); the computation never reads it. m and
 * course must outlive the result. attn_compute: the same for lesson l,
 * its model taught by l itself.
 */
Attn *attn_compute_model(const Model *m, const Lesson *course, char **err);
Attn *attn_compute(const Lesson *l, char **err);
void attn_free(Attn *a);

/*
 * Recompute a (the computation of an earlier version of l, whose model —
 * a->cfg, a->lp, borrowing that version's matrices — is still alive) in
 * place for l, whose given matrices may hold other numbers but whose shapes
 * and settings are the same: only the passes that read a matrix that changed
 * run again, reusing a's buffers, and the backward pass is redone when the
 * lesson has one: the loss now and the gradients when first read
 * (attn_grads_ready, backward.h), which a's root then says (grad_stale), so
 * an edit shows its forward pass at once. The result is bit for
 * bit what attn_compute_all(l) gives.
 * Each link's model is then made from l (a->top is l).
 *
 * before (may be NULL): gets a computation holding a copy of each matrix as
 * it was before it was remade (the others empty; its model the old one),
 * or NULL when those copies would hold more than keep_numbers numbers.
 *
 * Returns 0, or 1 when l's shapes or settings differ (nothing was changed:
 * compute it afresh), or -1 with *err (an overflow, out of memory): a is
 * then half updated, and updating it back to the old lesson restores it.
 */
int attn_update(Attn *a, const Lesson *l, Attn **before, double keep_numbers, char **err);

/*
 * The LM head's temperature, top-k or row changed (cfg holds the new ones):
 * every link takes them and only the next stage's pass runs again (a
 * vocabulary of 49152 is one softmax, not a recomputation of the model).
 */
void attn_redo_next(Attn *first, const ModelConfig *cfg);

/*
 * Progress: fn (NULL: none) is told before each pass of every computation
 * (attn_compute, attn_update) runs: the layer computed, the stage (its name
 * is stage_kinds[st].name), its place among the layer's passes (1-based) and
 * their count, and the milliseconds since the computation began. A view
 * says "computing… softmax (3/9)" with it when a computation is slow.
 */
#define ATTN_PROGRESS_MS 100 /* a computation slower than this says how far it is */
typedef void (*AttnProgress)(void *ctx, const Attn *a, Stage st, int index, int count, double elapsed_ms);
void attn_set_progress(AttnProgress fn, void *ctx);

/*
 * Every numeric quiz answer of a's lesson is a number a learner can type:
 * 0, or -1 with *err "steps[3].quiz.answer: weights[0][1][2] is −∞ (…)"
 * for the first that points at an infinite cell (a masked score).
 */
int attn_check_quiz_answers(const Attn *a, char **err);

/*
 * Everything a model asks for: every stage (attn_compute_model) and, when it
 * has a "backward", every gradient and the loss (a->loss). NULL with *err.
 * attn_compute_all: the same for lesson l.
 */
Attn *attn_compute_model_all(const Model *m, const Lesson *course, char **err);
Attn *attn_compute_all(const Lesson *l, char **err);

/*
 * Plain gradient descent: steps times, every weight and bias of l (and of
 * its layers) p ← p − lr·∂L/∂p; not the inputs. losses (NULL: not kept;
 * else steps + 1 numbers) gets the loss before each step and after the last,
 * which is checked too. l is changed in place. Returns 0, or -1 with *err (a loss
 * that stops being finite is refused, naming the step).
 */
int attn_train(Lesson *l, int steps, double lr, double *losses, char **err);

/*
 * The parameters of one layer p (its weights, biases, norms and
 * FFN; those it has) beside their gradients in g, as training walks them:
 * up to max pairs in param and grad; returns how many. ATTN_GRAD_PARAMS is
 * enough for any layer. A stack's final norm is the stack's own
 * (final_gamma, final_beta beside the last link's gradients).
 */
#define ATTN_GRAD_PARAMS 40
int attn_grad_pairs(LayerParams *p, const struct AttnGrad *g, Mat **param, const Mat **grad, int max);

#endif
