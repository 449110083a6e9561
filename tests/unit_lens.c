/* unit_lens.c: src/inspect/lens.c on the committed test model tests/models/gpt2
 * against PyTorch's numbers (tests/lens/make_lens_model.py, lens_model.json):
 * every cell's top 5 ids, probabilities and logits to 1e-9; the words of a cell;
 * and a lesson without a vocabulary refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "inspect/lens.h"
#include "lesson/lesson.h"
#include "weights/importer.h"
#include "unit_common.h"

static const long long prompt[] = { 5, 17, 3, 250, 17, 3, 9 }; /* make_head_scores_model.py's PROMPT */

/* ATTNVIZ_SRCDIR/rel (or ./rel). */
static void src_path(char *out, size_t size, const char *rel)
{
	const char *dir = getenv("ATTNVIZ_SRCDIR");
	snprintf(out, size, "%s/%s", dir && dir[0] ? dir : ".", rel);
}

static void near(double x, double want, const char *what, int L, int i, int k)
{
	const double tol = 1e-9 * (fabs(want) > 1 ? fabs(want) : 1);
	if (!(fabs(x - want) <= tol))
		print_error("%s of layer %d position %d top %d: %.17g, wanted %.17g\n", what, L, i, k, x, want);
	assert_true(fabs(x - want) <= tol);
}

static void test_lens_gpt2(void **state)
{
	char dir[4096], ref[4096], *err = NULL, *js;
	size_t len;
	ImportPrompt p = { NULL, prompt, 7 };
	Lesson *l;
	Attn *a;
	Lens lens;
	cJSON *root, *cells;
	(void)state;

	src_path(dir, sizeof dir, "tests/models/gpt2");
	src_path(ref, sizeof ref, "tests/lens/lens_model.json");
	l = import_model(dir, &p, &err);
	if (l == NULL)
		print_error("%s\n", err);
	assert_non_null(l);
	a = attn_compute_all(l, &err);
	assert_non_null(a);
	assert_int_equal(lens_compute(a, &lens, &err), 0);
	js = fileio_read_all(ref, 1 << 24, &len, &err);
	if (js == NULL)
		print_error("%s (set ATTNVIZ_SRCDIR to the repository)\n", err);
	assert_non_null(js);
	root = cJSON_Parse(js);
	cells = cJSON_GetObjectItem(root, "lens");
	assert_int_equal(cJSON_GetArraySize(cells), lens.layers);
	for (int L = 0; L < lens.layers; L++) {
		const cJSON *row = cJSON_GetArrayItem(cells, L);
		assert_int_equal(cJSON_GetArraySize(row), lens.n);
		for (int i = 0; i < lens.n; i++) {
			const cJSON *c = cJSON_GetArrayItem(row, i);
			const LensCell *got = lens_cell(&lens, L, i);
			assert_int_equal(got->ntop, LENS_TOP);
			for (int k = 0; k < LENS_TOP; k++) {
				assert_int_equal(got->id[k], cJSON_GetArrayItem(cJSON_GetObjectItem(c, "id"), k)->valueint);
				near(got->p[k], cJSON_GetArrayItem(cJSON_GetObjectItem(c, "p"), k)->valuedouble, "p", L, i, k);
				near(got->logit[k], cJSON_GetArrayItem(cJSON_GetObjectItem(c, "z"), k)->valuedouble, "z", L, i, k);
			}
		}
	}
	/* the last layer's row is the model's own logits: its top token there is the LM head's */
	assert_null(lens_cell(&lens, lens.layers, 0));
	assert_null(lens_cell(&lens, 0, lens.n));
	char *text = lens_explain(a, &lens, 1, 6, 0);
	assert_non_null(text);
	assert_non_null(strstr(text, "1. <0xFE> (#186)  p = 0.626707"));
	free(text);
	text = lens_table(a, &lens, 80, 0);
	assert_non_null(text);
	assert_non_null(strstr(text, "3:<0x9C>"));
	free(text);
	cJSON_Delete(root);
	free(js);
	lens_free(&lens);
	attn_free(a);
	lesson_free(l);
}

static void test_lens_needs_vocab(void **state)
{
	char path[4096], *err = NULL;
	Lesson *l;
	Attn *a;
	Lens lens;
	(void)state;

	src_path(path, sizeof path, "lessons/gqa.json");
	l = lesson_load(path, &err, NULL);
	if (l == NULL)
		print_error("%s\n", err);
	assert_non_null(l);
	a = attn_compute_all(l, &err);
	assert_non_null(a);
	assert_int_equal(lens_compute(a, &lens, &err), -1);
	assert_non_null(strstr(err, "vocabulary"));
	free(err);
	attn_free(a);
	lesson_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lens_gpt2),
		cmocka_unit_test(test_lens_needs_vocab),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
