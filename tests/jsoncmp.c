/* jsoncmp.c: compare two JSON files with a numeric tolerance (golden tests). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

/*
 * usage: jsoncmp [--rtol R] [--atol A] [--ignore KEY[,KEY…]]… [--only-expected-keys]
 *                [--summary] EXPECTED.json ACTUAL.json
 *
 * Walks both trees together. Objects must have the same keys (a key that
 * appears twice is matched occurrence by occurrence), arrays the same length,
 * strings and booleans the same value, null must meet null, and numbers must
 * satisfy |a − e| ≤ atol + rtol·|e|. Keys --ignore names are not compared
 * at all (on either side); other keys found only in ACTUAL are accepted with
 * --only-expected-keys.
 * With --summary, an object in EXPECTED with the keys "shape" and "cells"
 * (tests/golden/make_reference.py's summary of a big matrix: shape [r, c],
 * mean, std (sample, n − 1), min and max of the finite cells, and cells
 * [[i, j, value], …]) is compared with those numbers computed from the matrix
 * (array of row arrays, null for −∞) at the same place in ACTUAL.
 * Prints each difference with its JSON path ($.heads[0].weights[2][1]), at
 * most MAX_SHOWN of them. Exit 0: equal, 1: different, 2: usage or I/O error.
 */

#define MAX_SHOWN 20
#define MAX_IGNORED 64

typedef struct Cmp {
	double rtol, atol;
	int only_expected_keys;
	int summary;       /* --summary */
	const char *ignored[MAX_IGNORED]; /* --ignore arguments: "key" or "k1,k2,…" */
	int nignored;
	long ndiff;        /* differences found */
} Cmp;

/* A growable path string: "$", "$.key", "$.key[3]". */
typedef struct Path {
	char *s;
	size_t len, cap;
} Path;

static int path_push(Path *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append to the path; returns the previous length (to pop back to), or -1 on OOM. */
static int path_push(Path *p, const char *fmt, ...)
{
	va_list ap;
	int need;
	size_t old = p->len;

	va_start(ap, fmt);
	need = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (need < 0)
		return -1;
	if (p->len + (size_t)need + 1 > p->cap) {
		size_t cap = (p->len + (size_t)need + 1) * 2;
		char *s = realloc(p->s, cap);
		if (!s)
			return -1;
		p->s = s;
		p->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(p->s + p->len, (size_t)need + 1, fmt, ap);
	va_end(ap);
	p->len += (size_t)need;
	return (int)old;
}

static void path_pop(Path *p, int old)
{
	p->len = (size_t)old;
	p->s[p->len] = '\0';
}

static void cmp_diff(Cmp *c, const Path *p, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void cmp_diff(Cmp *c, const Path *p, const char *fmt, ...)
{
	va_list ap;

	c->ndiff++;
	if (c->ndiff > MAX_SHOWN)
		return;
	printf("%s: ", p->s);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static const char *type_name(const cJSON *j)
{
	if (cJSON_IsNull(j))
		return "null";
	if (cJSON_IsBool(j))
		return "boolean";
	if (cJSON_IsNumber(j))
		return "number";
	if (cJSON_IsString(j))
		return "string";
	if (cJSON_IsArray(j))
		return "array";
	if (cJSON_IsObject(j))
		return "object";
	return "invalid";
}

/* 1 when key is one of the comma-separated names of an --ignore argument. */
static int is_ignored(const Cmp *c, const char *key)
{
	size_t klen = strlen(key);

	for (int i = 0; i < c->nignored; i++) {
		const char *s = c->ignored[i];
		while (*s) {
			size_t n = strcspn(s, ",");
			if (n == klen && strncmp(s, key, n) == 0)
				return 1;
			s += n;
			if (*s == ',')
				s++;
		}
	}
	return 0;
}

/* The occurrence-th child of obj named key (0-based), or NULL. */
static const cJSON *object_nth(const cJSON *obj, const char *key, int occurrence)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, obj) {
		if (it->string && strcmp(it->string, key) == 0 && occurrence-- == 0)
			return it;
	}
	return NULL;
}

/* How many children of obj before child share child's name. */
static int occurrence_of(const cJSON *obj, const cJSON *child)
{
	const cJSON *it;
	int k = 0;

	cJSON_ArrayForEach(it, obj) {
		if (it == child)
			break;
		if (it->string && strcmp(it->string, child->string) == 0)
			k++;
	}
	return k;
}

static int cmp_node(Cmp *c, Path *p, const cJSON *e, const cJSON *a);

/* An expected summary of a matrix: {"shape": [r, c], "mean", "std", "min", "max", "cells": [[i, j, v], …]}. */
static int is_summary(const Cmp *c, const cJSON *e)
{
	return c->summary && cJSON_IsObject(e) && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(e, "shape")) &&
	       cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(e, "cells"));
}

static void cmp_number(Cmp *c, Path *p, const char *what, double x, double y)
{
	if (!(fabs(y - x) <= c->atol + c->rtol * fabs(x)))
		cmp_diff(c, p, "%s: expected %.17g, got %.17g (diff %.3g)", what, x, y, y - x);
}

/* The cell (i, j) of a matrix given as an array of row arrays, or NULL. */
static const cJSON *matrix_cell(const cJSON *a, int i, int j)
{
	return cJSON_GetArrayItem(cJSON_GetArrayItem(a, i), j);
}

/* Compare a summary e with the matrix a; returns 0 (differences counted). */
static int cmp_summary(Cmp *c, Path *p, const cJSON *e, const cJSON *a)
{
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape"), *row, *x, *cell;
	int rows = cJSON_GetArraySize(a), cols = -1;
	long finite = 0;
	double sum = 0.0, sq = 0.0, lo = INFINITY, hi = -INFINITY, mean;
	static const char *const keys[] = { "mean", "std", "min", "max" };

	if (!cJSON_IsArray(a)) {
		cmp_diff(c, p, "expected a matrix (summarised), got %s", type_name(a));
		return 0;
	}
	cJSON_ArrayForEach(row, a) {
		if (!cJSON_IsArray(row) || (cols >= 0 && cJSON_GetArraySize(row) != cols)) {
			cmp_diff(c, p, "not a matrix: rows of different lengths");
			return 0;
		}
		cols = cJSON_GetArraySize(row);
		cJSON_ArrayForEach(x, row) {
			if (cJSON_IsNumber(x) && isfinite(x->valuedouble)) {
				sum += x->valuedouble;
				lo = fmin(lo, x->valuedouble);
				hi = fmax(hi, x->valuedouble);
				finite++;
			}
		}
	}
	if (cJSON_GetArraySize(shape) != 2 || cJSON_GetArrayItem(shape, 0)->valuedouble != rows ||
	    cJSON_GetArrayItem(shape, 1)->valuedouble != (cols < 0 ? 0 : cols)) {
		cmp_diff(c, p, "shape: expected [%g, %g], got [%d, %d]", cJSON_GetArrayItem(shape, 0) ? cJSON_GetArrayItem(shape, 0)->valuedouble : -1,
		         cJSON_GetArrayItem(shape, 1) ? cJSON_GetArrayItem(shape, 1)->valuedouble : -1, rows, cols);
		return 0;
	}
	mean = finite ? sum / (double)finite : 0.0;
	cJSON_ArrayForEach(row, a) {
		cJSON_ArrayForEach(x, row) {
			if (cJSON_IsNumber(x) && isfinite(x->valuedouble))
				sq += (x->valuedouble - mean) * (x->valuedouble - mean);
		}
	}
	{
		const double got[4] = { mean, finite > 1 ? sqrt(sq / (double)(finite - 1)) : 0.0, lo, hi };
		for (int k = 0; k < 4; k++) {
			const cJSON *want = cJSON_GetObjectItemCaseSensitive(e, keys[k]);
			if (cJSON_IsNumber(want))
				cmp_number(c, p, keys[k], want->valuedouble, got[k]);
			else if (finite > 0)
				cmp_diff(c, p, "%s: missing in the summary, but the matrix has %ld finite cells", keys[k], finite);
		}
	}
	cJSON_ArrayForEach(cell, cJSON_GetObjectItemCaseSensitive(e, "cells")) {
		const cJSON *ci = cJSON_GetArrayItem(cell, 0), *cj = cJSON_GetArrayItem(cell, 1);
		const cJSON *want = cJSON_GetArrayItem(cell, 2), *got;
		int old;
		if (!cJSON_IsNumber(ci) || !cJSON_IsNumber(cj) || want == NULL) {
			cmp_diff(c, p, "cells: expected [i, j, value] entries");
			continue;
		}
		old = path_push(p, "[%d][%d]", ci->valueint, cj->valueint);
		if (old < 0)
			return -1;
		got = matrix_cell(a, ci->valueint, cj->valueint);
		if (got == NULL)
			cmp_diff(c, p, "missing in actual");
		else if (cmp_node(c, p, want, got) < 0)
			return -1;
		path_pop(p, old);
	}
	return 0;
}

static int cmp_object(Cmp *c, Path *p, const cJSON *e, const cJSON *a)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, e) {
		const cJSON *other = object_nth(a, it->string, occurrence_of(e, it));
		int old;

		if (is_ignored(c, it->string))
			continue; /* not compared, on either side */
		old = path_push(p, ".%s", it->string);

		if (old < 0)
			return -1;
		if (!other)
			cmp_diff(c, p, "missing in actual");
		else if (cmp_node(c, p, it, other) < 0)
			return -1;
		path_pop(p, old);
	}
	if (c->only_expected_keys)
		return 0;
	cJSON_ArrayForEach(it, a) {
		if (is_ignored(c, it->string) || object_nth(e, it->string, occurrence_of(a, it)))
			continue;
		int old = path_push(p, ".%s", it->string);
		if (old < 0)
			return -1;
		cmp_diff(c, p, "extra key in actual");
		path_pop(p, old);
	}
	return 0;
}

static int cmp_array(Cmp *c, Path *p, const cJSON *e, const cJSON *a)
{
	int ne = cJSON_GetArraySize(e), na = cJSON_GetArraySize(a);
	const cJSON *ie = e->child, *ia = a->child;

	if (ne != na) {
		cmp_diff(c, p, "expected %d elements, got %d", ne, na);
		return 0;
	}
	for (int i = 0; ie && ia; i++, ie = ie->next, ia = ia->next) {
		int old = path_push(p, "[%d]", i);
		if (old < 0 || cmp_node(c, p, ie, ia) < 0)
			return -1;
		path_pop(p, old);
	}
	return 0;
}

/* Returns 0 (differences counted in c), or -1 when out of memory. */
static int cmp_node(Cmp *c, Path *p, const cJSON *e, const cJSON *a)
{
	if (is_summary(c, e))
		return cmp_summary(c, p, e, a);
	if (cJSON_IsNumber(e) && cJSON_IsNumber(a)) {
		double x = e->valuedouble, y = a->valuedouble;
		if (!(fabs(y - x) <= c->atol + c->rtol * fabs(x)))
			cmp_diff(c, p, "expected %.17g, got %.17g (diff %.3g)", x, y, y - x);
		return 0;
	}
	if (strcmp(type_name(e), type_name(a)) != 0) {
		if (cJSON_IsNumber(e))
			cmp_diff(c, p, "expected %.17g, got %s", e->valuedouble, type_name(a));
		else if (cJSON_IsNumber(a))
			cmp_diff(c, p, "expected %s, got %.17g", type_name(e), a->valuedouble);
		else
			cmp_diff(c, p, "expected %s, got %s", type_name(e), type_name(a));
		return 0;
	}
	if (cJSON_IsString(e)) {
		if (strcmp(e->valuestring, a->valuestring) != 0)
			cmp_diff(c, p, "expected string \"%s\", got \"%s\"", e->valuestring, a->valuestring);
		return 0;
	}
	if (cJSON_IsBool(e)) {
		if (cJSON_IsTrue(e) != cJSON_IsTrue(a))
			cmp_diff(c, p, "expected %s, got %s",
			         cJSON_IsTrue(e) ? "true" : "false", cJSON_IsTrue(a) ? "true" : "false");
		return 0;
	}
	if (cJSON_IsArray(e))
		return cmp_array(c, p, e, a);
	if (cJSON_IsObject(e))
		return cmp_object(c, p, e, a);
	return 0; /* null meets null */
}

/* Read and parse a whole file; NULL with a message on stderr. */
static cJSON *load_json(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	cJSON *root = NULL;

	if (!f) {
		fprintf(stderr, "jsoncmp: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (cap - len < 65536) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);
			if (!nb) {
				fprintf(stderr, "jsoncmp: %s: out of memory\n", path);
				goto done;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "jsoncmp: %s: read error\n", path);
		goto done;
	}
	{
		const char *end = NULL;
		root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
		if (!root) {
			size_t at = end ? (size_t)(end - buf) : 0;
			fprintf(stderr, "jsoncmp: %s: invalid JSON near byte %zu\n", path, at);
		}
	}
done:
	free(buf);
	fclose(f);
	return root;
}

static int usage(void)
{
	fprintf(stderr, "usage: jsoncmp [--rtol R] [--atol A] [--ignore KEY[,KEY...]] "
	                "[--only-expected-keys] [--summary] EXPECTED.json ACTUAL.json\n");
	return 2;
}

static int parse_tol(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return (errno || end == s || *end || !(*out >= 0)) ? -1 : 0;
}

int main(int argc, char **argv)
{
	Cmp c = { .rtol = 1e-9, .atol = 1e-12 };
	Path p = { 0 };
	const char *files[2];
	int nfiles = 0, status = 2;
	cJSON *e = NULL, *a = NULL;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if ((strcmp(arg, "--rtol") == 0 || strcmp(arg, "--atol") == 0) && i + 1 < argc) {
			if (parse_tol(argv[++i], arg[2] == 'r' ? &c.rtol : &c.atol) < 0) {
				fprintf(stderr, "jsoncmp: %s: not a tolerance: %s\n", arg, argv[i]);
				goto out;
			}
		} else if (strcmp(arg, "--ignore") == 0 && i + 1 < argc) {
			if (c.nignored == MAX_IGNORED) {
				fprintf(stderr, "jsoncmp: more than %d --ignore options\n", MAX_IGNORED);
				goto out;
			}
			c.ignored[c.nignored++] = argv[++i];
		} else if (strcmp(arg, "--only-expected-keys") == 0) {
			c.only_expected_keys = 1;
		} else if (strcmp(arg, "--summary") == 0) {
			c.summary = 1;
		} else if (strcmp(arg, "--help") == 0) {
			usage();
			status = 0;
			goto out;
		} else if (arg[0] == '-' && arg[1] != '\0') {
			fprintf(stderr, "jsoncmp: unknown option %s\n", arg);
			status = usage();
			goto out;
		} else if (nfiles < 2) {
			files[nfiles++] = arg;
		} else {
			status = usage();
			goto out;
		}
	}
	if (nfiles != 2) {
		status = usage();
		goto out;
	}
	e = load_json(files[0]);
	a = e ? load_json(files[1]) : NULL;
	if (!e || !a)
		goto out;
	if (path_push(&p, "$") < 0 || cmp_node(&c, &p, e, a) < 0) {
		fprintf(stderr, "jsoncmp: out of memory\n");
		goto out;
	}
	if (c.ndiff > MAX_SHOWN)
		printf("... and %ld more differences\n", c.ndiff - MAX_SHOWN);
	if (c.ndiff)
		printf("%ld difference%s (rtol %g, atol %g)\n", c.ndiff, c.ndiff == 1 ? "" : "s", c.rtol, c.atol);
	status = c.ndiff ? 1 : 0;
out:
	cJSON_Delete(e);
	cJSON_Delete(a);
	free(p.s);
	return status;
}
