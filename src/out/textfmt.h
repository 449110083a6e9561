/* textfmt.h: matrices and steps as plain text (plain REPL, make run without a terminal). */
#ifndef ATTNVIZ_TEXTFMT_H
#define ATTNVIZ_TEXTFMT_H

#include <stdio.h>

#include "app/session.h"
#include "inspect/headscores.h"

/*
 * Print matrix `which` (head h) as an aligned table with row labels (tokens)
 * and column labels (tokens for n × m matrices, dimension indices otherwise),
 * a title line "name (head h) rows × cols". color: ANSI heatmap backgrounds.
 * utf8: "-∞" rather than "-inf". Labels are escaped.
 */
void textfmt_matrix(FILE *f, const Attn *a, AttnMatrix which, int h, int color, int utf8);
/*
 * Where the stage shown is among its decode steps or tiles: "step 3 of 7,
 * cache 3 rows", "tile (0, 1) of 3 x 3"; NULL when it walks neither. Heap.
 */
char *textfmt_substep(const Session *s, int utf8);
/*
 * The caption of the place shown, one line each (heap, NULL when none):
 * what this decode step or tile does (and a tile the last move skipped),
 * the KV cache's bytes, FlashAttention's numbers held at once, which query
 * heads share a key/value head. Lesson text in it is escaped.
 */
char *textfmt_caption(const Session *s, int utf8);
/* The KV cache's size: bytes per token and per layer, against one key/value head per query head (heap). */
char *textfmt_cache_lines(const Session *s, int utf8);
/*
 * Print the current step: header, narration, formula and the stage's matrices
 * (weights with a Σ column, scores with mean and std, and with compare_on the
 * variant's result with the differing cells marked *), the parameter count on
 * the project and output stages, the next lesson at the last step.
 */
void textfmt_step(FILE *f, const Session *s, int color, int utf8);
/* The columns of the terminal f writes to, or 0 when f is no terminal (a file, a pipe: nothing is wrapped). */
int textfmt_columns(FILE *f);
/*
 * s (escaped) to f, wrapped at the terminal's width by text_wrap when f is a
 * terminal, so no word is cut in the middle; `lead` columns of the first line
 * are already written.
 */
void textfmt_put_wrapped(FILE *f, const char *s, int lead);
/* What a view's progress line says while the engine computes: "computing… [layer 1/2: ]softmax (3/9)" (ASCII "..." unless utf8). */
void textfmt_progress(char *buf, size_t size, const Attn *a, Stage st, int index, int count, int utf8);

/* One head of the model view and the `heads` table: walk layer `layer` (session.h), head `head`, its scores. */
typedef struct HeadRow {
	int layer, head;
	HeadScores sc;
} HeadRow;
/*
 * Every head of every walk layer with its scores (headscores_of), by layer
 * and head (sort -1) or by score `sort` (a HeadScoreKind), highest first, an
 * undefined score last, ties by layer and head. Heap array of *count rows,
 * NULL out of memory.
 */
HeadRow *textfmt_head_rows(const Session *s, int sort, int *count);
/* A score as a table shows it: "0.523", or "—" ("-" in ASCII) when undefined; returns buf (16 bytes). */
const char *textfmt_score(char buf[16], const HeadScore *sc, int decimals, int utf8);
/*
 * The `heads` table: layer, head, prev, first, diag, induction, one line a
 * head (in textfmt_head_rows' order), and a line saying why the induction
 * score is "—". Heap string, NULL out of memory.
 */
char *textfmt_heads(const Session *s, int sort, int utf8);

#endif
