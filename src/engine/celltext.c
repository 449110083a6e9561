/* celltext.c: the words an explanation of a cell is written with (celltext.h). */
#include "engine/celltext.h"
#include "base/i18n.h"

#include <math.h>
#include <stdio.h>

const char *celltext_num(char buf[32], double x, int utf8)
{
	if (x == -INFINITY)
		return utf8 ? "-\u221e" : "-inf";
	if (isnan(x)) /* only a cell of an expert a token did not choose (MF_NOT_CHOSEN) */
		return _("not chosen");
	snprintf(buf, 32, "%.6g", x);
	return buf;
}

const char *celltext_sym(int utf8, const char *u, const char *a)
{
	return utf8 ? u : a;
}

double celltext_terms(StrBuf *b, const double *x, size_t xs, const double *y, size_t ys, int len, int utf8)
{
	char x1[32], x2[32];
	double sum = 0.0;

	strbuf_printf(b, "= ");
	for (int t = 0; t < len; t++) {
		sum += x[(size_t)t * xs] * y[(size_t)t * ys];
		if (t < CELLTEXT_MAX_TERMS)
			strbuf_printf(b, "%s%s%s%s", t ? " + " : "", celltext_num(x1, x[(size_t)t * xs], utf8),
			              celltext_sym(utf8, "\u00d7", "*"), celltext_num(x2, y[(size_t)t * ys], utf8));
	}
	if (len > CELLTEXT_MAX_TERMS)
		strbuf_printf(b, _(" + \u2026 (%d terms in all)"), len);
	strbuf_printf(b, "\n= %s\n", celltext_num(x1, sum, utf8));
	return sum;
}
