/*
 * unit_keytable.c: the lesson keys' tables (src/lesson/lesson_keys.h). For
 * every row of every table, whatever variant added it: its name is in the
 * fuzz dictionary (tests/fuzz/lesson.dict, `make fuzz-dict`), the loader
 * knows it (top level, format 2, a layer's own with LK_LAYER), it is written
 * back, and what is written reads back as the same value; a compare variant
 * that drops its lesson's writes 0 or false. LK_CUSTOM rows are checked by
 * the lessons that use them (t_export's round trips).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lesson/lesson_keys.h"
#include "lesson/lesson_write.h"
#include "unit_common.h"

/* A model with small sizes every shape rule can use: 2 heads, d_model 3, d_k = d_v 2. */
static void small_model(Model *m)
{
	memset(m, 0, sizeof *m);
	m->cfg.n = 2;
	m->cfg.d_model = 3;
	m->lp.heads = 2;
	m->lp.kv_heads = 2;
	m->lp.d_k = 2;
	m->lp.d_v = 2;
}

static Mat *mat_at(Model *m, const LessonKey *k)
{
	return (Mat *)(void *)((char *)&m->lp + k->at);
}

static double *cap_at(Model *m, const LessonKey *k)
{
	return (double *)(void *)((char *)&m->cfg + k->at);
}

static void test_every_key_in_dict(void **state)
{
	char *path = path_of("tests/fuzz/lesson.dict");
	FILE *f = fopen(path, "r");
	char *dict = NULL;
	size_t size = 0;
	int n = 0;

	(void)state;
	assert_non_null(f);
	assert_int_equal(getdelim(&dict, &size, '\0', f) > 0, 1);
	fclose(f);
	for (const LessonKey *const *t = li_key_tables; *t != NULL; t++)
		for (const LessonKey *k = *t; k->name != NULL; k++, n++) {
			char line[128];
			snprintf(line, sizeof line, "\n\"\\\"%s\\\"\"\n", k->name);
			if (strstr(dict, line) == NULL)
				fail_msg("%s is not in tests/fuzz/lesson.dict (run make fuzz-dict)", k->name);
		}
	assert_true(n >= 4); /* soft-capping's two, the sinks, W_gate */
	free(dict);
	free(path);
}

static void test_every_key_known(void **state)
{
	const char *top[LK_MAX_NAMES], *layer[LK_MAX_NAMES];
	const char *const base[] = { "heads", NULL };

	(void)state;
	li_key_list(base, LK_TOP, top, LK_MAX_NAMES);
	li_key_list(NULL, LK_LAYER, layer, LK_MAX_NAMES);
	assert_string_equal(top[0], "heads");
	for (const LessonKey *const *t = li_key_tables; *t != NULL; t++)
		for (const LessonKey *k = *t; k->name != NULL; k++) {
			int in_top = 0, in_layer = 0;
			for (int i = 0; top[i] != NULL; i++)
				in_top |= strcmp(top[i], k->name) == 0;
			for (int i = 0; layer[i] != NULL; i++)
				in_layer |= strcmp(layer[i], k->name) == 0;
			assert_true(k->where & LK_TOP);
			assert_true(in_top);
			assert_int_equal(in_layer, (k->where & LK_LAYER) != 0);
			assert_true(li_key_known(k->name, LK_TOP));
		}
	assert_false(li_key_known("no_such_key", LK_TOP));
}

/* o printed as a file holds it and read back into a fresh small model (the reader's message fails the test). */
static void read_back(const cJSON *o, Model *back)
{
	char *text = cJSON_PrintUnformatted(o);
	cJSON *file = text != NULL ? cJSON_Parse(text) : NULL;
	JrCtx c;

	assert_non_null(file);
	small_model(back);
	jr_ctx_init(&c, "written", NULL);
	if (li_keys_read_settings(&c, file, back) != 0 || li_keys_read_weights(&c, file, back) != 0)
		fail_msg("%s", c.err);
	assert_null(c.err);
	cJSON_Delete(file);
	free(text);
}

/* A number as the writer writes it (jsonwrite.h: raw, exact); NAN for anything else. */
static double written_number(const cJSON *v)
{
	if (cJSON_IsNumber(v))
		return v->valuedouble;
	return cJSON_IsRaw(v) ? strtod(v->valuestring, NULL) : NAN;
}

static void test_cap_written_back(const LessonKey *k)
{
	Model m, top, back;
	cJSON *o = cJSON_CreateObject(), *v;

	small_model(&m);
	*cap_at(&m, k) = 1.5;
	assert_int_equal(li_keys_write_model(o, &m, NULL), 0);
	v = cJSON_GetObjectItemCaseSensitive(o, k->name);
	assert_non_null(v);
	assert_true(written_number(v) == 1.5);
	if (k->check == NULL) { /* a rule on other keys (the final cap's "vocab") is the lessons' to show */
		read_back(o, &back);
		assert_true(*cap_at(&back, k) == 1.5);
	}
	cJSON_Delete(o);
	/* a compare variant that drops its lesson's cap says 0 */
	small_model(&top);
	*cap_at(&top, k) = 1.5;
	*cap_at(&m, k) = 0.0;
	o = cJSON_CreateObject();
	assert_int_equal(li_keys_write_model(o, &m, &top), 0);
	v = cJSON_GetObjectItemCaseSensitive(o, k->name);
	assert_true(written_number(v) == 0.0);
	cJSON_Delete(o);
	/* … and neither has one: nothing written */
	*cap_at(&top, k) = 0.0;
	o = cJSON_CreateObject();
	assert_int_equal(li_keys_write_model(o, &m, &top), 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(o, k->name));
	cJSON_Delete(o);
}

static void test_matrix_written_back(const LessonKey *k)
{
	Model m, top, back;
	Mat *x;
	int rows = 0, cols = 0;
	cJSON *o = cJSON_CreateObject();

	small_model(&m);
	k->shape(&m, &rows, &cols);
	assert_true(rows > 0 && cols > 0);
	x = mat_at(&m, k);
	assert_int_equal(mat_alloc(x, rows, cols), 0);
	for (int i = 0; i < rows * cols; i++)
		x->a[i] = 0.25 * i - 1;
	assert_int_equal(li_keys_write_layer(o, &m.lp, &m, LK_AT_TOP), 0);
	assert_non_null(cJSON_GetObjectItemCaseSensitive(o, k->name));
	if (k->check == NULL) { /* a rule on other keys (b_gate's W_gate) is the lessons' to show: gatebias's save */
		read_back(o, &back);
		assert_int_equal(mat_at(&back, k)->rows, rows);
		assert_int_equal(mat_at(&back, k)->cols, cols);
		for (int i = 0; i < rows * cols; i++)
			assert_true(mat_at(&back, k)->a[i] == x->a[i]);
		mat_free(mat_at(&back, k));
	}
	/* written as a model's setting, a layer's own matrix is not repeated … */
	cJSON_Delete(o);
	o = cJSON_CreateObject();
	assert_int_equal(li_keys_write_model(o, &m, NULL), 0);
	assert_null(cJSON_GetObjectItemCaseSensitive(o, k->name));
	cJSON_Delete(o);
	/* … and a compare variant without its lesson's says false (and reads back without it) */
	top = m;
	small_model(&m);
	o = cJSON_CreateObject();
	assert_int_equal(li_keys_write_model(o, &m, &top), 0);
	assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(o, k->name)));
	read_back(o, &back);
	assert_true(mat_empty(mat_at(&back, k)));
	cJSON_Delete(o);
	mat_free(mat_at(&top, k)); /* the numbers m had (m is empty now) */
}

static void test_every_key_written_back(void **state)
{
	(void)state;
	for (const LessonKey *const *t = li_key_tables; *t != NULL; t++)
		for (const LessonKey *k = *t; k->name != NULL; k++) {
			if (k->kind == LK_CAP)
				test_cap_written_back(k);
			else if (k->kind == LK_MATRIX)
				test_matrix_written_back(k);
			/* LK_CUSTOM: its own reader and writer, round-tripped by the lessons that use it (t_export's save) */
		}
}

/* A file's text (NULL when it cannot be read). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t size = 0;

	if (f == NULL)
		return NULL;
	if (getdelim(&text, &size, '\0', f) < 0) {
		free(text);
		text = NULL;
	}
	fclose(f);
	return text;
}

/* The value gives the setting (not false, 0 or a "compare"'s dropping of it). */
static int gives(const cJSON *v)
{
	return v != NULL && !cJSON_IsFalse(v) && !(cJSON_IsNumber(v) && v->valuedouble == 0);
}

/*
 * Every row, whatever its kind (LK_CUSTOM too), through the whole reader and
 * writer: some shipped or golden lesson gives the key at its top level, and
 * that lesson saved (lesson_write_json) gives it again. A new row needs a
 * lesson that uses it.
 */
static void test_every_key_saved_by_a_lesson(void **state)
{
	const char *const patterns[] = { "lessons/*.json", "tests/golden/*.json", "tests/golden/*/*.json" };
	char *root = path_of(".");
	int seen[LK_MAX_NAMES] = { 0 }, nrows = 0, i;

	(void)state;
	for (size_t p = 0; p < sizeof patterns / sizeof patterns[0]; p++) {
		char pat[4096];
		glob_t g;
		snprintf(pat, sizeof pat, "%s/%s", root, patterns[p]);
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		for (size_t f = 0; f < g.gl_pathc; f++) {
			char *text = slurp(g.gl_pathv[f]), *err = NULL, *warn = NULL, *saved;
			cJSON *given = text != NULL ? cJSON_Parse(text) : NULL, *back;
			Lesson *l;
			int wanted = 0;
			i = 0;
			for (const LessonKey *const *t = li_key_tables; *t != NULL; t++)
				for (const LessonKey *k = *t; k->name != NULL; k++, i++)
					wanted |= !seen[i] && gives(cJSON_GetObjectItemCaseSensitive(given, k->name));
			if (!wanted || cJSON_GetObjectItemCaseSensitive(given, "model") != NULL ||
			    strstr(g.gl_pathv[f], ".ref.json") != NULL) {
				cJSON_Delete(given);
				free(text);
				continue;
			}
			l = lesson_load_string(g.gl_pathv[f], text, strlen(text), &err, &warn);
			if (l == NULL)
				fail_msg("%s", err);
			saved = lesson_write_json(l, &err);
			assert_non_null(saved);
			back = cJSON_Parse(saved);
			assert_non_null(back);
			i = 0;
			for (const LessonKey *const *t = li_key_tables; *t != NULL; t++)
				for (const LessonKey *k = *t; k->name != NULL; k++, i++) {
					if (seen[i] || !gives(cJSON_GetObjectItemCaseSensitive(given, k->name)))
						continue;
					if (cJSON_GetObjectItemCaseSensitive(back, k->name) == NULL)
						fail_msg("%s gives %s, and saved it does not", g.gl_pathv[f], k->name);
					seen[i] = 1;
				}
			cJSON_Delete(back);
			cJSON_Delete(given);
			free(saved);
			free(err);
			free(warn);
			free(text);
			lesson_free(l);
		}
		globfree(&g);
	}
	i = 0;
	for (const LessonKey *const *t = li_key_tables; *t != NULL; t++)
		for (const LessonKey *k = *t; k->name != NULL; k++, i++, nrows++)
			if (!seen[i])
				fail_msg("no shipped or golden lesson gives %s at its top level: add one that does", k->name);
	assert_true(nrows > 0);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_key_in_dict),
		cmocka_unit_test(test_every_key_known),
		cmocka_unit_test(test_every_key_written_back),
		cmocka_unit_test(test_every_key_saved_by_a_lesson),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
