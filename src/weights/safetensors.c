/* safetensors.c: a .safetensors file mapped and checked (safetensors.h). */
#include "weights/safetensors.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "base/i18n.h"
#include "base/jsonread.h"
#include "base/matview.h"
#include "base/strbuf.h"
#include "base/text.h"

static const struct {
	const char *name;
	int size;
} dtypes[ST_DTYPE_COUNT] = {
	[ST_F64] = {"F64", 8},   [ST_F32] = {"F32", 4},   [ST_F16] = {"F16", 2},  [ST_BF16] = {"BF16", 2},
	[ST_I64] = {"I64", 8},   [ST_I32] = {"I32", 4},   [ST_I16] = {"I16", 2},  [ST_I8] = {"I8", 1},
	[ST_U64] = {"U64", 8},   [ST_U32] = {"U32", 4},   [ST_U16] = {"U16", 2},  [ST_U8] = {"U8", 1},
	[ST_BOOL] = {"BOOL", 1}, [ST_F8_E4M3] = {"F8_E4M3", 1}, [ST_F8_E5M2] = {"F8_E5M2", 1},
};

const char *st_dtype_name(StDtype d)
{
	return d >= 0 && d < ST_DTYPE_COUNT ? dtypes[d].name : "?";
}

int st_dtype_size(StDtype d)
{
	return d >= 0 && d < ST_DTYPE_COUNT ? dtypes[d].size : 0;
}

int st_dtype_find(const char *name)
{
	for (int d = 0; d < ST_DTYPE_COUNT; d++)
		if (strcmp(dtypes[d].name, name) == 0)
			return d;
	return -1;
}

/* ---- reading the header ---- */

/* Little-endian, whatever the machine's order. */
static uint64_t le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;
	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* "[768, 2304]" */
static void shape_text(const StTensor *t, char *buf, size_t size)
{
	size_t k = (size_t)snprintf(buf, size, "[");
	for (int d = 0; d < t->ndim && k < size; d++)
		k += (size_t)snprintf(buf + k, size - k, "%s%lld", d ? ", " : "", t->shape[d]);
	if (k < size)
		snprintf(buf + k, size - k, "]");
}

/* One tensor's entry {"dtype", "shape", "data_offsets"}, at the path "NAME". */
static int read_entry(JrCtx *c, const cJSON *v, size_t data_size, StTensor *t)
{
	static const char *const keys[] = {"dtype", "shape", "data_offsets", NULL};
	const cJSON *e;
	size_t old;
	long long x;

	if (!cJSON_IsObject(v))
		return jr_fail(c, _("expected a tensor ({\"dtype\", \"shape\", \"data_offsets\"}), got %s"), jr_got(v).s);
	if (jr_refuse_unknown_keys(c, v, keys, _("key")) != 0)
		return -1;
	for (int k = 0; keys[k]; k++)
		if (jr_get(v, keys[k]) == NULL)
			return jr_fail(c, _("no \"%s\": every tensor has a dtype, a shape and data_offsets"), keys[k]);

	e = jr_enter(c, v, "dtype", &old);
	int d = cJSON_IsString(e) ? st_dtype_find(e->valuestring) : -1;
	if (d < 0)
		return jr_leave(c, old, jr_fail(c, _("expected a dtype (F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2), got %s"), jr_got(e).s));
	t->dtype = (StDtype)d;
	jr_path_set(c, old);

	e = jr_enter(c, v, "shape", &old);
	if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) > ST_MAX_DIMS)
		return jr_leave(c, old, jr_fail(c, _("expected an array of at most %d sizes, got %s"), ST_MAX_DIMS, jr_got(e).s));
	t->ndim = cJSON_GetArraySize(e);
	double count = 1; /* exact while it matters: a count past the data is refused below */
	for (int k = 0; k < t->ndim; k++) {
		size_t o2 = jr_path_index(c, k);
		if (jr_read_whole(c, cJSON_GetArrayItem(e, k), 0, 1e15, _("a size from 0 to 10^15"), &x) != 0)
			return -1;
		jr_path_set(c, o2);
		t->shape[k] = x;
		count *= (double)x;
	}
	jr_path_set(c, old);

	e = jr_enter(c, v, "data_offsets", &old);
	long long be[2];
	if (!cJSON_IsArray(e) || cJSON_GetArraySize(e) != 2)
		return jr_leave(c, old, jr_fail(c, _("expected [BEGIN, END], got %s"), jr_got(e).s));
	char expect[96];
	snprintf(expect, sizeof expect, _("an offset inside the data (from 0 to %zu)"), data_size);
	for (int k = 0; k < 2; k++) {
		size_t o2 = jr_path_index(c, k);
		if (jr_read_whole(c, cJSON_GetArrayItem(e, k), 0, (double)data_size, expect, &be[k]) != 0)
			return -1;
		jr_path_set(c, o2);
	}
	if (be[0] > be[1])
		return jr_leave(c, old, jr_fail(c, _("[%lld, %lld] ends before it begins"), be[0], be[1]));
	t->begin = (size_t)be[0];
	t->end = (size_t)be[1];
	double need = count * dtypes[t->dtype].size;
	if (need != (double)(t->end - t->begin)) {
		char sh[160];
		shape_text(t, sh, sizeof sh);
		return jr_leave(c, old, jr_fail(c, _("[%zu, %zu] holds %zu bytes, but shape %s of %s needs %.0f"), t->begin,
		                                t->end, t->end - t->begin, sh, dtypes[t->dtype].name, need));
	}
	t->count = (long long)count;
	jr_path_set(c, old);
	return 0;
}

static int by_name(const void *x, const void *y)
{
	return strcmp(((const StTensor *)x)->name, ((const StTensor *)y)->name);
}

static int by_begin(const void *x, const void *y)
{
	const StTensor *a = *(const StTensor *const *)x, *b = *(const StTensor *const *)y;
	if (a->begin != b->begin)
		return a->begin < b->begin ? -1 : 1;
	return (a->end > b->end) - (a->end < b->end);
}

/* A tensor's name in a message: quoted and escaped. */
static JrGot tname(const StTensor *t)
{
	return jr_quoted(t->name);
}

/* The tensors cover the data exactly: sorted by where they begin, each begins where the one before ends. */
static char *check_cover(const StFile *f, size_t data_size)
{
	const StTensor **order = malloc(((size_t)f->n + 1) * sizeof *order);
	size_t at = 0;
	char *err = NULL;

	if (order == NULL)
		return strdup(_("out of memory"));
	for (int i = 0; i < f->n; i++)
		order[i] = &f->tensors[i];
	qsort(order, (size_t)f->n, sizeof *order, by_begin);
	for (int i = 0; i < f->n && err == NULL; i++) {
		const StTensor *t = order[i];
		if (t->begin < at)
			err = str_printf(_("%s: tensor %s's data [%zu, %zu] overlaps tensor %s's [%zu, %zu]"), f->name,
			                 tname(t).s, t->begin, t->end, tname(order[i - 1]).s, order[i - 1]->begin, order[i - 1]->end);
		else if (t->begin > at)
			err = str_printf(_("%s: bytes [%zu, %zu] of the data belong to no tensor (a damaged or hand-made file)"),
			                 f->name, at, t->begin);
		at = t->end > at ? t->end : at;
	}
	if (err == NULL && at < data_size)
		err = str_printf(_("%s: bytes [%zu, %zu] of the data belong to no tensor (a damaged or hand-made file)"),
		                 f->name, at, data_size);
	free(order);
	return err;
}

static int read_header(StFile *f, const cJSON *root, size_t hlen, size_t data_size, char **err)
{
	JrCtx c;
	const cJSON *e;
	int n = 0;

	jr_ctx_init(&c, f->name, NULL);
	if (!cJSON_IsObject(root)) {
		jr_fail(&c, _("the header is %s, not a JSON object of tensors"), jr_got(root).s);
		*err = c.err;
		return -1;
	}
	cJSON_ArrayForEach(e, root) n++;
	if (n > ST_MAX_TENSORS) {
		*err = str_printf(_("%s: %d tensors, over the limit of %ld"), f->name, n, ST_MAX_TENSORS);
		return -1;
	}
	f->tensors = calloc((size_t)n + 1, sizeof *f->tensors);
	if (f->tensors == NULL) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	cJSON_ArrayForEach(e, root) {
		size_t old = jr_path_append(&c, "%s", jr_quoted(e->string).s);
		if (strcmp(e->string, "__metadata__") == 0) {
			const cJSON *m, *strings = cJSON_IsObject(e) ? e : NULL;
			if (strings == NULL)
				jr_fail(&c, _("expected an object of strings, got %s"), jr_got(e).s);
			cJSON_ArrayForEach(m, strings) {
				if (!cJSON_IsString(m)) {
					jr_path_append(&c, ".%s", jr_quoted(m->string).s); /* the file's key, never raw */
					jr_fail(&c, _("expected a string, got %s"), jr_got(m).s);
					break;
				}
			}
		} else {
			StTensor *t = &f->tensors[f->n];
			if (e->string[0] == '\0')
				jr_fail(&c, _("a tensor without a name"));
			else if ((t->name = strdup(e->string)) == NULL)
				jr_fail_oom(&c);
			else if (read_entry(&c, e, data_size, t) == 0)
				t->data = f->map + 8 + hlen + t->begin;
			f->n++;
		}
		if (c.err != NULL) {
			*err = c.err;
			return -1;
		}
		jr_path_set(&c, old);
	}
	qsort(f->tensors, (size_t)f->n, sizeof *f->tensors, by_name);
	for (int i = 1; i < f->n; i++)
		if (strcmp(f->tensors[i].name, f->tensors[i - 1].name) == 0) {
			*err = str_printf(_("%s: tensor %s is named twice in the header"), f->name, tname(&f->tensors[i]).s);
			return -1;
		}
	*err = check_cover(f, data_size);
	return *err ? -1 : 0;
}

StFile *st_open(const char *path, char **err)
{
	StFile *f = calloc(1, sizeof *f);
	cJSON *root;
	uint64_t hlen;

	*err = NULL;
	if (f == NULL || (f->name = text_escape(path, "")) == NULL) {
		free(f);
		*err = strdup(_("out of memory"));
		return NULL;
	}
	f->map = fileio_map(path, &f->size, err);
	if (f->map == NULL)
		goto fail;
	if (f->size < 8) {
		*err = str_printf(_("%s: %zu bytes: too short for a safetensors file (it starts with 8 bytes that give the "
		                    "header's length)"), f->name, f->size);
		goto fail;
	}
	hlen = le(f->map, 8);
	if (hlen > (uint64_t)ST_MAX_HEADER) {
		*err = str_printf(_("%s: the header's length is %llu bytes, over the limit of %ld (not a safetensors file?)"),
		                  f->name, (unsigned long long)hlen, ST_MAX_HEADER);
		goto fail;
	}
	if (hlen > f->size - 8) {
		*err = str_printf(_("%s: the header's length is %llu bytes, past the end of the file (%zu bytes): the "
		                    "file is cut short"), f->name, (unsigned long long)hlen, f->size);
		goto fail;
	}
	{
		char *hname = str_printf("%s (header)", f->name);
		if (hname == NULL) {
			*err = strdup(_("out of memory"));
			goto fail;
		}
		root = jr_parse(hname, (const char *)f->map + 8, (size_t)hlen, 0, "safetensors header",
		                "{\"weight\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 16]}}", err);
		free(hname);
	}
	if (root == NULL)
		goto fail;
	if (read_header(f, root, (size_t)hlen, f->size - 8 - (size_t)hlen, err) != 0) {
		cJSON_Delete(root);
		goto fail;
	}
	cJSON_Delete(root);
	return f;
fail:
	if (*err == NULL)
		*err = strdup(_("out of memory"));
	st_close(f);
	return NULL;
}

void st_close(StFile *f)
{
	if (f == NULL)
		return;
	for (int i = 0; i < f->n; i++)
		free(f->tensors[i].name);
	free(f->tensors);
	fileio_unmap(f->map, f->size);
	free(f->name);
	free(f);
}

const StTensor *st_find(const StFile *f, const char *name)
{
	StTensor key = {.name = (char *)name};
	return f->n ? bsearch(&key, f->tensors, (size_t)f->n, sizeof *f->tensors, by_name) : NULL;
}

/* ---- numbers ---- */

double st_value(const StTensor *t, long long i)
{
	const unsigned char *p = t->data + (size_t)i * (size_t)dtypes[t->dtype].size;

	switch (t->dtype) {
	case ST_F64: return mat_dtype_value(MAT_F64, p);
	case ST_F32: return mat_dtype_value(MAT_F32, p);
	case ST_F16: return mat_dtype_value(MAT_F16, p);
	case ST_BF16: return mat_dtype_value(MAT_BF16, p);
	case ST_I64: return (double)(int64_t)le(p, 8);
	case ST_I32: return (double)(int32_t)(uint32_t)le(p, 4);
	case ST_I16: return (double)(int16_t)(uint16_t)le(p, 2);
	case ST_I8: return (double)(int8_t)p[0];
	case ST_U64: return (double)le(p, 8);
	case ST_U32: return (double)le(p, 4);
	case ST_U16: return (double)le(p, 2);
	case ST_U8: return (double)p[0];
	case ST_BOOL: return p[0] != 0;
	default: return NAN;
	}
}

int st_to_mat(const StFile *f, const StTensor *t, int transpose, int rows, int cols, Mat *out, char **err)
{
	long long r, k;
	char sh[160];

	*err = NULL;
	shape_text(t, sh, sizeof sh);
	if (t->dtype >= ST_DTYPE_NUMERIC) {
		*err = str_printf(_("%s: tensor %s is %s: attnviz reads F64, F32, F16, BF16 and integer tensors"), f->name,
		                  tname(t).s, st_dtype_name(t->dtype));
		return -1;
	}
	if (t->ndim == 1) {
		r = 1;
		k = t->shape[0];
		transpose = 0;
	} else if (t->ndim == 2) {
		r = transpose ? t->shape[1] : t->shape[0];
		k = transpose ? t->shape[0] : t->shape[1];
	} else {
		*err = str_printf(_("%s: tensor %s has shape %s: expected a matrix or a vector"), f->name, tname(t).s, sh);
		return -1;
	}
	if ((rows > 0 && r != rows) || (cols > 0 && k != cols) || r > 1 << 30 || k > 1 << 30) {
		if (t->ndim == 1)
			*err = str_printf(_("%s: tensor %s has shape %s, expected [%d]"), f->name, tname(t).s, sh, cols);
		else if (transpose)
			*err = str_printf(_("%s: tensor %s has shape %s, expected [%d, %d] (out × in, as nn.Linear keeps it)"),
			                  f->name, tname(t).s, sh, cols, rows);
		else
			*err = str_printf(_("%s: tensor %s has shape %s, expected [%d, %d]"), f->name, tname(t).s, sh, rows, cols);
		return -1;
	}
	if (mat_alloc_whole(out, (int)r, (int)k) != 0) {
		*err = strdup(_("out of memory"));
		return -1;
	}
	for (long long i = 0; i < r; i++)
		for (long long j = 0; j < k; j++)
			MAT_AT(*out, i, j) = st_value(t, transpose ? j * r + i : i * k + j);
	return 0;
}
