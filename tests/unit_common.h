/* unit_common.h: what the unit tests share instead of each keeping a copy —
 * a lesson loaded from JSON text or a file, a session started on one, a
 * computation (each failing the test with the library's own message), a path
 * under the source tree, two matrices compared number by number, and the
 * hidden (temporary) files a writer left in a directory. All static inline: a test uses what it needs, and the rest costs
 * it nothing. (unit_tmpdir.h, apart: the fresh directory of the tests that
 * write files.) */
#ifndef ATTNVIZ_UNIT_COMMON_H
#define ATTNVIZ_UNIT_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "engine/compute.h" /* attn_compute_all */
#include "lesson/lesson.h"
#include "base/matrix.h"
#include "app/session.h"

/* A lesson from JSON text, name standing for its file in messages; the loader's message fails the test. */
static inline Lesson *load_named(const char *name, const char *json)
{
	char *err = NULL, *warn = NULL;
	Lesson *l = lesson_load_string(name, json, strlen(json), &err, &warn);

	if (l == NULL)
		print_error("lesson_load_string: %s\n", err ? err : "(no message)");
	free(err);
	free(warn);
	assert_non_null(l);
	return l;
}

/* The same, named "(test)". */
static inline Lesson *load(const char *json)
{
	return load_named("(test)", json);
}

/* A lesson file. */
static inline Lesson *load_file(const char *path)
{
	char *err = NULL, *warn = NULL;
	Lesson *l = lesson_load(path, &err, &warn);

	if (l == NULL)
		print_error("%s: %s\n", path, err ? err : "(no message)");
	free(err);
	free(warn);
	assert_non_null(l);
	return l;
}

/* *s: a session on the lesson of JSON text json (session_free it). */
static inline void start_session(Session *s, const char *json)
{
	char *err = NULL;

	if (session_init(s, load(json), NULL, &err) != 0)
		print_error("session_init: %s\n", err ? err : "(no message)");
	free(err);
	assert_non_null(s->attn);
}

/* Lesson l computed (attn_compute: one layer; attn_compute_all: the whole chain). */
static inline Attn *compute(const Lesson *l)
{
	char *err = NULL;
	Attn *a = attn_compute(l, &err);

	if (a == NULL)
		print_error("attn_compute: %s\n", err ? err : "(no message)");
	free(err);
	assert_non_null(a);
	return a;
}

static inline Attn *compute_all(const Lesson *l)
{
	char *err = NULL;
	Attn *a = attn_compute_all(l, &err);

	if (a == NULL)
		print_error("attn_compute_all: %s\n", err ? err : "(no message)");
	free(err);
	assert_non_null(a);
	return a;
}

/* rel under the source tree ($ATTNVIZ_SRCDIR, else "."): a heap string the caller frees. */
static inline char *path_of(const char *rel)
{
	const char *root = getenv("ATTNVIZ_SRCDIR");
	size_t n;
	char *p;

	if (root == NULL || *root == '\0')
		root = ".";
	n = strlen(root) + strlen(rel) + 2;
	p = malloc(n);
	assert_non_null(p);
	snprintf(p, n, "%s/%s", root, rel);
	return p;
}

/* 1 when x and y have the same shape and every number compares equal (a NaN never does). */
static inline int same_numbers(const Mat *x, const Mat *y)
{
	size_t i, count;

	if (x->rows != y->rows || x->cols != y->cols)
		return 0;
	count = (size_t)x->rows * (size_t)x->cols;
	for (i = 0; i < count; i++)
		if (!(x->a[i] == y->a[i]))
			return 0;
	return 1;
}

/* The hidden files in dir: temporary files (".NAME.XXXXXX") a writer left behind; -1 when dir cannot be read. */
static inline int hidden_files_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

#endif
