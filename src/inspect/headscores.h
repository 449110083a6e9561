/* headscores.h: what a head's attention pattern does, in four numbers (issue 22):
 * previous-token, first-token (the sink), diagonal and induction scores, each
 * a mean of weights over the rows that can see the key it asks about.
 *
 *   previous-token  mean over rows i ≥ 1 of weights[i][i − 1]
 *   first-token     mean over rows i ≥ 1 of weights[i][0] (row 0, which
 *                   under a causal mask sees only key 0, would always add 1)
 *   diagonal        mean over rows i of weights[i][i]
 *   induction       on tokens t_0 … t_{n−1} whose second half repeats the
 *                   first (random tokens, twice): mean over the rows p of the
 *                   second copy whose token occurred before, at q (its first
 *                   occurrence), of weights[p][q + 1]
 *
 * Each counts only the rows that may see that key (the mask's `visible`); a
 * score no row can have (a window of one, cross-attention, no vocabulary for
 * the induction score) is undefined: rows = 0, shown as "—".
 */
#ifndef ATTNVIZ_HEADSCORES_H
#define ATTNVIZ_HEADSCORES_H

#include <stdint.h>

#include "engine/attention.h"

typedef enum HeadScoreKind { HS_PREV, HS_FIRST, HS_DIAG, HS_INDUCTION, HS_COUNT } HeadScoreKind;

/* One score: the mean of `rows` weights whose sum is `sum` (rows 0: undefined, mean 0). */
typedef struct HeadScore {
	int rows;
	double sum, mean;
} HeadScore;

typedef struct HeadScores {
	HeadScore s[HS_COUNT];
} HeadScores;

/* The words `heads sort` takes, in HeadScoreKind's order: "prev|first|diag|induction". */
#define HEADSCORE_CHOICES "prev|first|diag|induction"
extern const char *const headscore_words[HS_COUNT];
/* Their names as people read them ("previous-token", …; N_(): translate where shown). */
extern const char *const headscore_names[HS_COUNT];

/* The key row i's weight is counted on for a positional score (prev, first, diag), or -1: none. */
int headscore_key(HeadScoreKind k, int i);

/* A positional score (HS_PREV, HS_FIRST, HS_DIAG) of weights w (n × m); visible n × m (NULL: every cell). */
HeadScore headscore_pattern(HeadScoreKind k, const Mat *w, const unsigned char *visible);

/*
 * The induction score of weights w (n × n) computed on tokens ids (n): the
 * rows p ≥ from (the second copy) whose token occurred at an earlier q
 * (the first occurrence), their weight on q + 1 when they may see it.
 */
HeadScore headscore_induction(const Mat *w, const unsigned char *visible, const long long *ids, int from);
/* The key row p's induction weight is counted on (the token after the first earlier occurrence of ids[p]), or -1. */
int headscore_induction_key(const long long *ids, int p);

/*
 * The sequence the induction score is computed on: bos (≥ 0: a first token
 * of that id; -1: none), then `half` tokens drawn from [0, vocab) with the
 * generator seeded by seed (base/prng.h), then the same `half` again. ids
 * gets (bos ≥ 0) + 2·half numbers; returns where the second copy starts.
 */
int headscore_repeat_ids(long long *ids, long long bos, int half, long long vocab, uint64_t seed);

/*
 * The positional scores of head h of a computation's layer a; the induction
 * score is left undefined (a lesson has no vocabulary; a model's comes from
 * a run on random tokens: headscore_induction). Cross-attention's keys are
 * another sequence's positions: its scores are all undefined.
 */
void headscores_of(const Attn *a, int h, HeadScores *out);
/*
 * The induction score of head h of layer `layer` of run, a computation of a
 * model on ids (n tokens, headscore_repeat_ids' sequence whose second copy
 * starts at from): what a model's importer gives the view once it has run
 * the model on random tokens. Undefined (rows 0) when there is no such layer or head.
 */
HeadScore headscores_induction_run(const Attn *run, int layer, int h, const long long *ids, int from);
/*
 * A thumbnail's cell (the model view, --view model): the sum of the weights w
 * of a in rows [r0, r1) and columns [c0, c1) that a row may see; *seen 0 when
 * none may (a masked cell). Divided by r1 − r0 it is the block's mean row weight.
 */
double headscore_block_sum(const Attn *a, const Mat *w, int r0, int r1, int c0, int c1, int *seen);
/* Why a's scores (or only its induction score) are undefined, as a sentence (translated), or NULL. */
const char *headscores_why(const Attn *a, HeadScoreKind k);

/*
 * The score k of head h of layer a in words: its definition, the rows it
 * counts with their weights, the sum and the mean (or why it is undefined).
 * label names the layer ("layer 2"). Heap string, NULL out of memory.
 */
char *headscore_explain(const Attn *a, int h, HeadScoreKind k, const char *label, int utf8);
/*
 * A model's induction score s of head h in words (its run on `half` random
 * tokens, then the same again: session_induction): the definition, the rows
 * counted, the sum and the mean. Heap string, NULL out of memory.
 */
char *headscore_explain_induction(const HeadScore *s, int half, int h, const char *label, int utf8);
/* The four definitions, for `help heads` (heap string). */
char *headscore_definitions(int utf8);

#endif
