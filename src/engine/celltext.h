/* celltext.h: the words an explanation of a cell is written with, shared by
 * inspect/explain.c and each variant's explain function (variants/): numbers
 * with enough digits to check by hand, a symbol or its ASCII stand-in, a sum
 * of products term by term; and the operand cells a view lights up. */
#ifndef ATTNVIZ_CELLTEXT_H
#define ATTNVIZ_CELLTEXT_H

#include "base/strbuf.h"
#include "model/catalog.h"

#include <stddef.h>

#define CELLTEXT_MAX_TERMS 12 /* sums longer than this are shown in part */

/* x in buf (32 bytes) with %.6g, −∞ as "-∞" (ASCII "-inf"); returns buf or the literal. */
const char *celltext_num(char buf[32], double x, int utf8);
/* u with UTF-8, else a. */
const char *celltext_sym(int utf8, const char *u, const char *a);
/* "= x_0×y_0 + x_1×y_1 …" (the first CELLTEXT_MAX_TERMS terms) and "= sum" on its own line, for
 * strided x and y of len numbers; returns the sum, added in order. */
double celltext_terms(StrBuf *b, const double *x, size_t xs, const double *y, size_t ys, int len, int utf8);

/*
 * The operands that produced a cell, for highlighting: up to 4 (matrix,
 * row or -1, col or -1) triples; -1 means the whole column / row.
 */
typedef struct ExplainOperand {
	AttnMatrix which;
	int head, row, col; /* row == -1: every row of column col; col == -1: the whole row */
} ExplainOperand;

#endif
