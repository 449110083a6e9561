/* labels.h: the words and numbers every view puts beside a matrix: row and column labels, a cell's number,
 * the parameter line. The TUI, the plain REPL, explain, exports and stats all use these. */
#ifndef ATTNVIZ_LABELS_H
#define ATTNVIZ_LABELS_H

#include "engine/attention.h"

/*
 * A cell's number in at most 9 columns: "0.7071", "-12.35", "1.2e+04", "-∞"
 * ("-inf" when !utf8). buf needs 16 bytes. Returns buf.
 */
char *labels_number(char *buf, double x, int utf8);
/* 1 when matrix `which` is n × m with token labels on both axes. */
int labels_token_columns(const Attn *a, AttnMatrix which);
/* Column label c of matrix `which` (a token, escaped, or the index): heap string. */
char *labels_col(const Attn *a, AttnMatrix which, int c);
/* Vocabulary entry v as people read it: its token escaped, or "#v" without tokens (heap string). */
char *labels_vocab(const ModelConfig *cfg, int v);
/* Row label r (a token, escaped, or the index): heap string. */
char *labels_row(const Attn *a, AttnMatrix which, int r);
/*
 * What a pane's title adds about matrix `which` that its numbers do not say
 * (heap string, or NULL): dec_scores holds raw q·k while the full
 * computation's panes are scaled, so "q·k, ÷√3 in softmax" (brief: "÷√3
 * later", for a narrow pane).
 */
char *labels_title_note(const Attn *a, AttnMatrix which, int utf8, int brief);
/* "parameters: N (W_q, W_k, W_v[, W_o]) — the same for any number of heads" (heap string, or NULL). */
char *labels_params(const ModelConfig *c, const LayerParams *p, int utf8);

#endif
