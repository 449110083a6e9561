/* explain.h: "where did this number come from?" — the arithmetic behind a cell. */
#ifndef ATTNVIZ_EXPLAIN_H
#define ATTNVIZ_EXPLAIN_H

#include "engine/attention.h"
#include "engine/celltext.h"

/*
 * A heap string (several lines, UTF-8, no control characters but '\n') that
 * shows how cell (row, col) of a matrix was computed, with the lesson's own
 * numbers: a score as q_i · k_j = Σ term by term; a scaled cell with its
 * factor; a masked cell and why; a weight as exp(s_ij − max)/Σ with each
 * exp; a weighted cell as Σ_j w_ij · v_jc; a concat column's head; a
 * projection cell as a row × column; inputs as given or generated.
 * utf8 = 0 writes ASCII only (-inf, sqrt, sum). NULL with *err when the
 * cell does not exist.
 */
char *explain_cell(const Attn *a, AttnMatrix which, int head, int row, int col, int utf8, char **err);

/* The operands that produced the cell, for highlighting (ExplainOperand: engine/celltext.h). Returns the count. */
int explain_operands(const Attn *a, AttnMatrix which, int head, int row, int col, ExplainOperand out[4]);

#endif
