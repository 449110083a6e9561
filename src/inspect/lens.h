/* lens.h: the logit lens (issue 22): what each layer's residual stream would
 * say if the model stopped there.
 *
 * For layer L and position i, the row layer L hands on (its output: what
 * enters layer L + 1; the last layer's, what the LM head reads) goes through
 * the model's final norm (when it has one) and the unembedding:
 *
 *   lens_logits[L][i] = final_norm(output_L[i]) · unembedᵀ     (vocab numbers)
 *   lens_p[L][i]      = softmax(lens_logits[L][i])             (temperature 1)
 *
 * The last layer's row is the model's own logits. Only a computation with a
 * vocabulary (a model, or a lesson with "vocab") has a lens.
 */
#ifndef ATTNVIZ_LENS_H
#define ATTNVIZ_LENS_H

#include "engine/attention.h"

#define LENS_TOP 5 /* the tokens kept a cell, most probable first */

typedef struct LensCell {
	int ntop;              /* ≤ LENS_TOP (the vocabulary may be smaller) */
	int id[LENS_TOP];      /* vocabulary ids, most probable first (ties: lower id first) */
	double p[LENS_TOP];    /* their probabilities */
	double logit[LENS_TOP];
} LensCell;

typedef struct Lens {
	int layers, n, vocab;
	LensCell *cell; /* layers × n, row-major */
} Lens;

/* The lens of computation a (its first link); 0, or -1 with *err (no vocabulary, out of memory). */
int lens_compute(const Attn *a, Lens *out, char **err);
void lens_free(Lens *l);
/* Layer L's cell at position i, or NULL out of range. */
const LensCell *lens_cell(const Lens *l, int layer, int i);

/*
 * The table as text: a row per layer, a column per position (its top token,
 * as the tokenizer shows it, escaped), in blocks of positions that fit width
 * columns. Heap string, NULL out of memory.
 */
char *lens_table(const Attn *a, const Lens *l, int width, int utf8);
/* One cell in words: the token, its probability and the top few, and how they were made. Heap, NULL out of memory. */
char *lens_explain(const Attn *a, const Lens *l, int layer, int i, int utf8);
/* A token as a cell shows it: cut to at most width columns (heap, escaped). */
char *lens_token(const Attn *a, int id, int width);

#endif
