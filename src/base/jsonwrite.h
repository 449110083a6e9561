/*
 * jsonwrite.h: what the JSON attnviz writes (`--dump`, exports, a saved
 * lesson) has in common: the one number writer (every number so that it
 * reads back as exactly the same double, −∞ and NaN as null), matrices as
 * arrays of rows, and a tree printed safe to cat.
 */
#ifndef ATTNVIZ_JSONWRITE_H
#define ATTNVIZ_JSONWRITE_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "base/matrix.h"
#include "base/text.h"

#define JW_NUMBER_SIZE TEXT_EXACT_SIZE

/* x as JSON text: the shortest of %.15g, %.16g, %.17g that reads back exactly (text_exact), or "null". Returns buf. */
const char *jw_number_text(char *buf, double x);
/* x as a cJSON item printed as jw_number_text says (raw, or null); NULL when out of memory. */
cJSON *jw_number(double x);
/* n numbers as a flat array; NULL when out of memory. */
cJSON *jw_numbers(const double *x, int n);
/* m's numbers as one flat array (a vector); NULL when out of memory. */
cJSON *jw_flat(const Mat *m);
/* m as an array of row arrays; NULL when out of memory. */
cJSON *jw_matrix(const Mat *m);
/* m printed straight to f, byte for byte as cJSON prints jw_matrix(m) (compact: unformatted). */
void jw_fput_matrix(FILE *f, const Mat *m, int compact);
/*
 * o printed by cJSON_Print with DEL, C1 and bidi controls as \u escapes (the
 * same strings when read back, safe to cat) and a final newline, then
 * deleted: a heap string, or NULL when out of memory.
 */
char *jw_print(cJSON *o);

#endif
