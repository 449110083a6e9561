/* textfmt.h: matrices and steps as plain text (plain REPL, make run without a terminal). */
#ifndef ATTNVIZ_TEXTFMT_H
#define ATTNVIZ_TEXTFMT_H

#include <stdio.h>

#include "session.h"

/*
 * Print matrix `which` (head h) as an aligned table with row labels (tokens)
 * and column labels (tokens for n × m matrices, dimension indices otherwise),
 * a title line "name (head h) rows × cols". color: ANSI heatmap backgrounds.
 * utf8: "-∞" rather than "-inf". Labels are escaped.
 */
void textfmt_matrix(FILE *f, const Attn *a, AttnMatrix which, int h, int color, int utf8);
/*
 * Print the current step: header, narration, formula and the stage's matrices
 * (weights with a Σ column, scores with mean and std, and with compare_on the
 * variant's result with the differing cells marked *), the parameter count on
 * the project and output stages, the next lesson at the last step.
 */
void textfmt_step(FILE *f, const Session *s, int color, int utf8);
#endif
