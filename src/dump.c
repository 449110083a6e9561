/* dump.c: every stage as JSON, with round-trip precision (cJSON prints %.17g when needed). */
#include "dump.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A number that reads back as exactly the same double: the shortest of
 * %.15g, %.16g, %.17g that round-trips (cJSON's own printer accepts a
 * difference of one epsilon). Non-finite numbers (−∞ masks) become null.
 */
cJSON *dump_number(double x)
{
	char buf[TEXT_EXACT_SIZE];

	if (!isfinite(x))
		return cJSON_CreateNull();
	return cJSON_CreateRaw(text_exact(buf, x, 15));
}

cJSON *dump_matrix(const Mat *m)
{
	cJSON *rows = cJSON_CreateArray();
	int i, j;

	if (rows == NULL)
		return NULL;
	for (i = 0; i < m->rows; i++) {
		cJSON *row = cJSON_CreateArray();
		if (row == NULL || !cJSON_AddItemToArray(rows, row)) {
			cJSON_Delete(row);
			goto fail;
		}
		for (j = 0; j < m->cols; j++) {
			const double x = MAT_AT(*m, i, j);
			cJSON *cell = dump_number(x);
			if (cell == NULL || !cJSON_AddItemToArray(row, cell)) {
				cJSON_Delete(cell);
				goto fail;
			}
		}
	}
	return rows;
fail:
	cJSON_Delete(rows);
	return NULL;
}

static cJSON *dump_strings(char *const *s, int count)
{
	return cJSON_CreateStringArray((const char *const *)s, count);
}

/*
 * For dump_write: instead of one cJSON item per number (about 100 bytes
 * each: 4.9 GB for the dump of an n = 1024 lesson), a matrix in the tree is
 * a raw placeholder "\001INDEX\002" that dump_write replaces by the matrix,
 * printed straight from the computed Attn. The compare variant's Attn is
 * kept here until then. NULL: build the whole tree (dump_attn).
 */
typedef struct {
	const Mat **mat;
	int nmat, capmat;
	Attn *owned[4];
	int nowned;
} Lazy;

static int lazy_add(Lazy *lz, const Mat *m)
{
	if (lz->nmat == lz->capmat) {
		int ncap = lz->capmat ? lz->capmat * 2 : 64;
		const Mat **nm = realloc(lz->mat, sizeof *nm * (size_t)ncap);
		if (nm == NULL)
			return -1;
		lz->mat = nm;
		lz->capmat = ncap;
	}
	lz->mat[lz->nmat] = m;
	return lz->nmat++;
}

static void lazy_free(Lazy *lz)
{
	int i;

	for (i = 0; i < lz->nowned; i++)
		attn_free(lz->owned[i]);
	free(lz->mat);
}

static Lazy *lazy_ctx; /* set only while dump_write builds its tree */

/* Add a matrix under key; returns 0, or -1 when out of memory. */
static int add_matrix(cJSON *obj, const char *key, const Mat *m)
{
	cJSON *j;

	if (lazy_ctx != NULL) {
		char ph[24];
		int idx = lazy_add(lazy_ctx, m);
		if (idx < 0)
			return -1;
		snprintf(ph, sizeof ph, "\001%d\002", idx);
		j = cJSON_CreateRaw(ph);
	} else {
		j = dump_matrix(m);
	}
	if (j == NULL || !cJSON_AddItemToObject(obj, key, j)) {
		cJSON_Delete(j);
		return -1;
	}
	return 0;
}

static int add_number(cJSON *obj, const char *key, double x)
{
	cJSON *j = dump_number(x);
	if (j == NULL || !cJSON_AddItemToObject(obj, key, j)) {
		cJSON_Delete(j);
		return -1;
	}
	return 0;
}

/* A flat array of numbers (w_e). */
static cJSON *dump_vector(const double *v, int count)
{
	cJSON *arr = cJSON_CreateArray();
	int i;

	for (i = 0; arr != NULL && i < count; i++) {
		cJSON *x = dump_number(v[i]);
		if (x == NULL || !cJSON_AddItemToArray(arr, x)) {
			cJSON_Delete(x);
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

static cJSON *dump_heads(const Attn *a)
{
	cJSON *heads = cJSON_CreateArray();
	int h;

	for (h = 0; heads != NULL && h < a->heads; h++) {
		const AttnHead *hd = &a->head[h];
		cJSON *o = cJSON_CreateObject();
		if (o == NULL || !cJSON_AddItemToArray(heads, o)) {
			cJSON_Delete(o);
			goto fail;
		}
		if (add_matrix(o, "scores", &hd->scores) || add_matrix(o, "scaled", &hd->scaled) ||
		    add_matrix(o, "masked", &hd->masked) || add_matrix(o, "weights", &hd->weights) ||
		    add_matrix(o, "output", &hd->weighted))
			goto fail;
	}
	return heads;
fail:
	cJSON_Delete(heads);
	return NULL;
}

static int add_stages(cJSON *o, const Lesson *l)
{
	cJSON *st = cJSON_AddArrayToObject(o, "stages");
	int s;

	if (st == NULL)
		return -1;
	for (s = 0; s < STAGE_COUNT; s++)
		if (lesson_stage_present(l, (Stage)s) && !cJSON_AddItemToArray(st, cJSON_CreateString(stage_name((Stage)s))))
			return -1;
	return 0;
}

static int add_compare(cJSON *o, const Lesson *l, char **err)
{
	Attn *b;
	cJSON *j;

	if (l->compare == NULL)
		return 0;
	b = attn_compute(l->compare, err);
	if (b == NULL)
		return -1;
	j = dump_attn(b, err);
	if (lazy_ctx != NULL && j != NULL && lazy_ctx->nowned < (int)(sizeof lazy_ctx->owned / sizeof lazy_ctx->owned[0]))
		lazy_ctx->owned[lazy_ctx->nowned++] = b; /* its matrices are printed later */
	else if (lazy_ctx != NULL && j != NULL) {
		cJSON_Delete(j);
		attn_free(b);
		*err = strdup("out of memory writing the dump");
		return -1;
	} else
		attn_free(b);
	if (j == NULL)
		return -1;
	if (!text_empty(&l->compare_label) && !cJSON_AddStringToObject(j, "label", text_get(&l->compare_label, "en"))) {
		cJSON_Delete(j);
		return -1;
	}
	if (!cJSON_AddItemToObject(o, "compare", j)) {
		cJSON_Delete(j);
		return -1;
	}
	return 0;
}

cJSON *dump_attn(const Attn *a, char **err)
{
	const Lesson *l = a->lesson;
	cJSON *o = cJSON_CreateObject(), *rows;
	int i;

	*err = NULL;
	if (o == NULL)
		goto oom;
	if (add_number(o, "attnviz", 1) || !cJSON_AddStringToObject(o, "title", text_get(&l->title, "en")) ||
	    add_number(o, "n", l->n) || add_number(o, "m", l->m) || add_number(o, "d_model", l->d_model) ||
	    add_number(o, "h", l->heads) || add_number(o, "d_k", l->d_k) || add_number(o, "d_v", l->d_v) ||
	    add_number(o, "scale_factor", a->factor) || add_stages(o, l) ||
	    !cJSON_AddItemToObject(o, "tokens", dump_strings(l->tokens, l->n)))
		goto oom;
	if (l->has_source && !cJSON_AddItemToObject(o, "source_tokens", dump_strings(l->source_tokens, l->m)))
		goto oom;
	if (add_matrix(o, "W_q", &l->W_q) || add_matrix(o, "W_k", &l->W_k) || add_matrix(o, "W_v", &l->W_v))
		goto oom;
	if (!mat_empty(&l->W_o) && add_matrix(o, "W_o", &l->W_o))
		goto oom;
	if (l->score == SCORE_ADDITIVE &&
	    !cJSON_AddItemToObject(o, "w_e", dump_vector(l->w_e.a, l->w_e.cols)))
		goto oom;
	if (add_matrix(o, "input", &l->input))
		goto oom;
	if (!mat_empty(&a->PE) && add_matrix(o, "PE", &a->PE))
		goto oom;
	if (add_matrix(o, "X", &a->X))
		goto oom;
	if (l->has_source) {
		if (add_matrix(o, "source_input", &l->source_input) ||
		    (!mat_empty(&a->PE_src) && add_matrix(o, "PE_src", &a->PE_src)) || add_matrix(o, "S", &a->S))
			goto oom;
	}
	if (add_matrix(o, "Q", &a->Q) || add_matrix(o, "K", &a->K) || add_matrix(o, "V", &a->V))
		goto oom;
	if (!cJSON_AddItemToObject(o, "heads", dump_heads(a)))
		goto oom;
	if (add_matrix(o, "concat", &a->concat) ||
	    add_matrix(o, "output", mat_empty(&a->output) ? &a->concat : &a->output))
		goto oom;
	rows = cJSON_AddArrayToObject(o, "row_all_masked");
	if (rows == NULL)
		goto oom;
	for (i = 0; i < l->n; i++)
		if (a->row_all_masked[i] && !cJSON_AddItemToArray(rows, cJSON_CreateNumber(i)))
			goto oom;
	if (add_compare(o, l, err) != 0) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
oom:
	cJSON_Delete(o);
	*err = strdup("out of memory writing the dump");
	return NULL;
}

char *dump_string(const Attn *a, int compact, char **err)
{
	cJSON *o = dump_attn(a, err);
	char *s;

	if (o == NULL)
		return NULL;
	s = compact ? cJSON_PrintUnformatted(o) : cJSON_Print(o);
	cJSON_Delete(o);
	if (s == NULL)
		*err = strdup("out of memory writing the dump");
	return s;
}

/* A matrix as cJSON prints an array of row arrays of dump_number()s. */
static void write_matrix(FILE *f, const Mat *m, int compact)
{
	const char *sep = compact ? "," : ", ";
	char buf[TEXT_EXACT_SIZE];
	int i, j;

	fputc('[', f);
	for (i = 0; i < m->rows; i++) {
		if (i > 0)
			fputs(sep, f);
		fputc('[', f);
		for (j = 0; j < m->cols; j++) {
			const double x = MAT_AT(*m, i, j);
			if (j > 0)
				fputs(sep, f);
			if (!isfinite(x)) {
				fputs("null", f);
				continue;
			}
			fputs(text_exact(buf, x, 15), f);
		}
		fputc(']', f);
	}
	fputc(']', f);
}

int dump_write(FILE *f, const Attn *a, int compact, char **err)
{
	Lazy lz = { NULL, 0, 0, { NULL }, 0 };
	cJSON *o;
	char *s, *p;

	*err = NULL;
	lazy_ctx = &lz;
	o = dump_attn(a, err);
	lazy_ctx = NULL;
	s = o ? (compact ? cJSON_PrintUnformatted(o) : cJSON_Print(o)) : NULL;
	cJSON_Delete(o);
	if (s == NULL) {
		if (*err == NULL)
			*err = strdup("out of memory writing the dump");
		lazy_free(&lz);
		return -1;
	}
	/* Text strings are escaped by cJSON (\u0001), so \001 is only ever a placeholder. */
	for (p = s; *p != '\0';) {
		char *ph = strchr(p, '\001');
		long idx;
		if (ph == NULL) {
			fputs(p, f);
			break;
		}
		fwrite(p, 1, (size_t)(ph - p), f);
		idx = strtol(ph + 1, &p, 10);
		if (*p == '\002')
			p++;
		if (idx >= 0 && idx < lz.nmat)
			write_matrix(f, lz.mat[idx], compact);
	}
	free(s);
	lazy_free(&lz);
	return 0;
}
