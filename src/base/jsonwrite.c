/* jsonwrite.c: numbers, matrices and trees as attnviz writes JSON (jsonwrite.h). */
#include "base/jsonwrite.h"
#include "base/strbuf.h"

#include <math.h>
#include <stdlib.h>

const char *jw_number_text(char *buf, double x)
{
	if (!isfinite(x)) {
		snprintf(buf, JW_NUMBER_SIZE, "null");
		return buf;
	}
	return text_exact(buf, x, 15);
}

/*
 * A raw item, not cJSON's own number: cJSON prints %.15g or else %.17g, and
 * accepts a difference of one epsilon, so it does not always read back.
 */
cJSON *jw_number(double x)
{
	char buf[JW_NUMBER_SIZE];

	if (!isfinite(x))
		return cJSON_CreateNull();
	return cJSON_CreateRaw(text_exact(buf, x, 15));
}

cJSON *jw_numbers(const double *x, int n)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; a != NULL && i < n; i++) {
		cJSON *v = jw_number(x[i]);
		if (v == NULL || !cJSON_AddItemToArray(a, v)) {
			cJSON_Delete(v);
			cJSON_Delete(a);
			return NULL;
		}
	}
	return a;
}

cJSON *jw_flat(const Mat *m)
{
	return jw_numbers(m->a, m->rows * m->cols);
}

cJSON *jw_matrix(const Mat *m)
{
	cJSON *rows = cJSON_CreateArray();

	for (int i = 0; rows != NULL && i < m->rows; i++) {
		cJSON *r = jw_numbers(&MAT_AT(*m, i, 0), m->cols);
		if (r == NULL || !cJSON_AddItemToArray(rows, r)) {
			cJSON_Delete(r);
			cJSON_Delete(rows);
			return NULL;
		}
	}
	return rows;
}

void jw_fput_matrix(FILE *f, const Mat *m, int compact)
{
	const char *sep = compact ? "," : ", ";
	char buf[JW_NUMBER_SIZE];

	fputc('[', f);
	for (int i = 0; i < m->rows; i++) {
		if (i > 0)
			fputs(sep, f);
		fputc('[', f);
		for (int j = 0; j < m->cols; j++) {
			if (j > 0)
				fputs(sep, f);
			fputs(jw_number_text(buf, MAT_AT(*m, i, j)), f);
		}
		fputc(']', f);
	}
	fputc(']', f);
}

char *jw_print(cJSON *o)
{
	char *s = cJSON_Print(o), *safe = s != NULL ? text_escape_json(s) : NULL, *line;

	cJSON_Delete(o);
	line = safe != NULL ? str_printf("%s\n", safe) : NULL;
	free(s);
	free(safe);
	return line;
}
