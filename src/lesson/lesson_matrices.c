/*
 * lesson_matrices.c: a lesson's matrices, their shape first and their
 * numbers later: a literal array (rows or flat) or a generator ("random"
 * normal or uniform with a seed, "identity") read as a MatSrc, checked
 * against the limits, and filled in once every shape is known.
 */
#include "lesson/lesson_internal.h"
#include "base/prng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Matrices: their shape first (MatSrc), their numbers later           */
/* ------------------------------------------------------------------ */

static int check_rows_limit(Ctx *c, const Limits *lim, long rows)
{
	if (lim->max_rows == 1 && rows != 1)
		return fail(c, _("expected 1 row (one vector), got %ld"), rows);
	if (rows > lim->max_rows)
		return fail(c, lim->rows_unit[0] != '\0' ? _("%ld rows is over the limit of %ld tokens (%s)")
		                                         : _("%ld rows is over the limit of %ld (%s)"),
		            rows, lim->max_rows, lim->rows_name);
	return 0;
}

static int check_cols_limit(Ctx *c, const Limits *lim, long cols)
{
	if (cols > lim->max_cols)
		return fail(c, _("%ld columns is over the limit of %ld (%s)"), cols, lim->max_cols, lim->cols_name);
	return 0;
}

/* A number a literal matrix may hold (checked without building its path: matrices have millions). */
static int cell_ok(const cJSON *v, const Limits *lim)
{
	return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
	       (!lim->zero_one || v->valuedouble == 0.0 || v->valuedouble == 1.0);
}

/* One number of a literal matrix, at the current path. */
static int check_cell_value(Ctx *c, const cJSON *v, const Limits *lim)
{
	double x = 0.0;

	if (read_finite(c, v, &x) != 0)
		return -1;
	if (lim->zero_one && x != 0.0 && x != 1.0)
		return fail(c, _("expected 0 or 1, got %s"), got(v).s);
	return 0;
}

static const char *const generator_keys[] = { "random", "rows", "cols", "seed", "mean", "std", "low", "high", NULL };
static const char *const identity_keys[] = { "identity", NULL };

static int read_generator(Ctx *c, const cJSON *v, const Limits *lim, MatSrc *src)
{
	static const char *const kinds[] = { "normal", "uniform", NULL };
	const cJSON *rnd = get(v, "random"), *id = get(v, "identity");
	long long rows = 0, cols = 0, seed = 0;
	int kind = 0;
	size_t old;

	if (rnd != NULL && id != NULL)
		return fail(c, _("a generator is either \"random\" or \"identity\", not both"));
	if (id != NULL) {
		warn_unknown_keys(c, v, identity_keys);
		old = path_key(c, "identity");
		if (read_whole(c, id, 1, 1e9, _("a whole number ≥ 1 (the size N of the N × N identity)"), &rows) != 0)
			return -1;
		path_set(c, old);
		if (check_rows_limit(c, lim, (long)rows) != 0 || check_cols_limit(c, lim, (long)rows) != 0)
			return -1;
		src->kind = SRC_IDENTITY;
		src->rows = src->cols = (int)rows;
		return 0;
	}
	if (rnd == NULL)
		return fail(c, _("expected a matrix (an array of rows) or a generator ({\"random\": \"normal\", …} or "
		               "{\"identity\": N}), got an object without \"random\" or \"identity\""));
	warn_unknown_keys(c, v, generator_keys);
	if (key_choice(c, v, "random", kinds, &kind) != 0)
		return -1;
	if (get(v, "rows") == NULL)
		return fail(c, _("missing \"rows\" (a generator needs \"rows\" and \"cols\")"));
	if (get(v, "cols") == NULL)
		return fail(c, _("missing \"cols\" (a generator needs \"rows\" and \"cols\")"));
	if (key_whole(c, v, "rows", 1, 1e9, _("a whole number ≥ 1"), &rows) != 0 ||
	    key_whole(c, v, "cols", 1, 1e9, _("a whole number ≥ 1"), &cols) != 0)
		return -1;
	/* rows × cols is checked here, before a single number is generated. */
	if (check_rows_limit(c, lim, (long)rows) != 0 || check_cols_limit(c, lim, (long)cols) != 0)
		return -1;
	if (key_whole(c, v, "seed", 0, MAX_SEED, _("a whole number from 0 to 2^53 = 9007199254740992"), &seed) != 0)
		return -1;
	src->rows = (int)rows;
	src->cols = (int)cols;
	src->seed = (uint64_t)seed;
	if (kind == 0) {
		src->kind = SRC_NORMAL;
		src->a = 0.0;
		src->b = 1.0;
		if (key_finite(c, v, "mean", &src->a) != 0 || key_finite(c, v, "std", &src->b) != 0)
			return -1;
		if (src->b < 0) {
			old = path_key(c, "std");
			return fail(c, _("expected a number ≥ 0, got %s"), got(get(v, "std")).s);
		}
		if (get(v, "low") != NULL || get(v, "high") != NULL)
			warnf(c, _("\"low\" and \"high\" are for \"random\": \"uniform\"; a normal generator uses \"mean\" and \"std\""));
	} else {
		src->kind = SRC_UNIFORM;
		src->a = -1.0;
		src->b = 1.0;
		if (key_finite(c, v, "low", &src->a) != 0 || key_finite(c, v, "high", &src->b) != 0)
			return -1;
		if (src->a > src->b)
			return fail(c, _("\"low\" (%g) is above \"high\" (%g)"), src->a, src->b);
		if (get(v, "mean") != NULL || get(v, "std") != NULL)
			warnf(c, _("\"mean\" and \"std\" are for \"random\": \"normal\"; a uniform generator uses \"low\" and \"high\""));
	}
	return 0;
}

/*
 * Read the shape of the matrix at key (absent: SRC_ABSENT) and check its
 * structure: every row the same length, every entry a finite number.
 */
int li_read_matsrc(Ctx *c, const cJSON *obj, const char *key, const Limits *lim, MatSrc *src)
{
	const cJSON *v = get(obj, key);
	size_t old = c->pathlen;
	int r;

	memset(src, 0, sizeof *src);
	if (v == NULL)
		return 0;
	path_key(c, key);
	r = li_read_matsrc_value(c, v, lim, src);
	path_set(c, old);
	return r;
}

/* A matrix (literal rows, a flat vector, or a generator) at the current path. */
int li_read_matsrc_value(Ctx *c, const cJSON *v, const Limits *lim, MatSrc *src)
{
	const cJSON *row, *x;
	size_t old = c->pathlen, old2;
	long rows = 0, cols = -1, k;
	int r = -1;

	memset(src, 0, sizeof *src);
	snprintf(src->path, sizeof src->path, "%s", c->path);
	src->item = v;
	if (cJSON_IsObject(v)) {
		if (!lim->generator_ok) {
			fail(c, _("expected an array, got an object (this matrix cannot be generated)"));
			goto out;
		}
		r = read_generator(c, v, lim, src);
		goto out;
	}
	if (!cJSON_IsArray(v)) {
		fail(c, lim->flat_ok ? _("expected an array of numbers, got %s") : _("expected a matrix (an array of rows), got %s"),
		     got(v).s);
		goto out;
	}
	if (cJSON_GetArraySize(v) == 0) {
		fail(c, lim->flat_ok ? _("expected at least one number, got an empty array")
		                     : _("expected at least one row, got an empty array"));
		goto out;
	}
	if (lim->flat_ok && !cJSON_IsArray(v->child)) {
		/* A flat vector: one row. */
		src->kind = SRC_FLAT;
		cols = 0;
		cJSON_ArrayForEach(x, v)
			cols++;
		if (check_cols_limit(c, lim, cols) != 0)
			goto out;
		k = 0;
		cJSON_ArrayForEach(x, v) {
			if (cell_ok(x, lim) && ++k)
				continue;
			old2 = path_index(c, (int)k++);
			if (check_cell_value(c, x, lim) != 0)
				goto out;
			path_set(c, old2);
		}
		src->rows = 1;
		src->cols = (int)cols;
		r = 0;
		goto out;
	}
	src->kind = SRC_ROWS;
	cJSON_ArrayForEach(row, v)
		rows++;
	if (check_rows_limit(c, lim, rows) != 0)
		goto out;
	rows = 0;
	cJSON_ArrayForEach(row, v) {
		old2 = path_index(c, (int)rows);
		if (!cJSON_IsArray(row)) {
			fail(c, _("expected a row (an array of numbers), got %s"), got(row).s);
			goto out;
		}
		k = 0;
		cJSON_ArrayForEach(x, row)
			k++;
		if (cols < 0) {
			if (k == 0) {
				fail(c, _("expected at least one number, got an empty row"));
				goto out;
			}
			if (check_cols_limit(c, lim, k) != 0)
				goto out;
			cols = k;
		} else if (k != cols) {
			fail(c, _("expected %ld numbers, got %ld"), cols, k);
			goto out;
		}
		k = 0;
		cJSON_ArrayForEach(x, row) {
			size_t old3;
			if (cell_ok(x, lim) && ++k)
				continue;
			old3 = path_index(c, (int)k++);
			if (check_cell_value(c, x, lim) != 0)
				goto out;
			path_set(c, old3);
		}
		path_set(c, old2);
		rows++;
	}
	src->rows = (int)rows;
	src->cols = (int)cols;
	r = 0;
out:
	path_set(c, old);
	return r;
}

/* Allocate and fill m from src (already checked). */
int li_fill_mat(Ctx *c, const MatSrc *src, Mat *m)
{
	const cJSON *row, *x;
	double *p;
	size_t i, count;
	Prng rng;

	m->rows = m->cols = 0;
	m->a = NULL;
	if (src->kind == SRC_ABSENT)
		return 0;
	if (mat_alloc(m, src->rows, src->cols) != 0)
		return fail_oom(c);
	p = m->a;
	count = (size_t)src->rows * (size_t)src->cols;
	switch (src->kind) {
	case SRC_ROWS:
		cJSON_ArrayForEach(row, src->item)
			cJSON_ArrayForEach(x, row)
				*p++ = x->valuedouble;
		break;
	case SRC_FLAT:
		cJSON_ArrayForEach(x, src->item)
			*p++ = x->valuedouble;
		break;
	case SRC_IDENTITY:
		for (i = 0; i < (size_t)src->rows; i++)
			MAT_AT(*m, i, i) = 1.0;
		break;
	case SRC_NORMAL:
		/* One generator per matrix, seeded with its seed; row by row. */
		prng_seed(&rng, src->seed);
		for (i = 0; i < count; i++)
			p[i] = src->a + src->b * prng_normal(&rng);
		break;
	case SRC_UNIFORM:
		prng_seed(&rng, src->seed);
		for (i = 0; i < count; i++)
			p[i] = src->a + (src->b - src->a) * prng_uniform(&rng);
		break;
	case SRC_ABSENT:
		break;
	}
	for (i = 0; i < count; i++)
		if (!isfinite(m->a[i])) {
			size_t old = c->pathlen;
			path_set(c, 0);
			path_append(c, "%s", src->path);
			fail(c, _("the generated numbers overflow to infinity (mean, std, low or high too large)"));
			path_set(c, old);
			mat_free(m);
			return -1;
		}
	return 0;
}

int li_is_generated(const MatSrc *src)
{
	return src->kind == SRC_NORMAL || src->kind == SRC_UNIFORM || src->kind == SRC_IDENTITY;
}
