/* unit_headscores.c: src/inspect/headscores.c on hand-made weight matrices
 * whose scores are worked out by hand in the comments, the induction score
 * on a sequence repeated twice (with a token that repeats inside the first
 * copy), the random repeated sequence, and the words explain gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect/headscores.h"
#include "unit_common.h"

/* x within tol of want (0: exactly), with both numbers said when not. */
#define assert_near(x, want, tol) near_check((x), (want), (tol), __LINE__)
static void near_check(double x, double want, double tol, int line)
{
	if (!(fabs(x - want) <= tol))
		print_error("line %d: %.17g, wanted %.17g (within %g)\n", line, x, want, tol);
	assert_true(fabs(x - want) <= tol);
}

/* A rows × cols matrix from its numbers, row by row. */
static Mat mat_of(int rows, int cols, const double *v)
{
	Mat m;
	assert_int_equal(mat_alloc(&m, rows, cols), 0);
	memcpy(m.a, v, sizeof *v * (size_t)rows * (size_t)cols);
	return m;
}

/* The causal mask's visible cells of an n × n matrix (j ≤ i). */
static void causal(unsigned char *vis, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			vis[i * n + j] = j <= i;
}

/*
 * A previous-token head (row 0 can only look at itself):
 *   prev:  rows 1, 2, 3 see key i − 1: 1 + 1 + 1 = 3, mean 3/3 = 1
 *   first: rows 1 … 3 see key 0: 1 + 0 + 0 = 1, mean 1/3 (row 0, which sees
 *          only key 0, is left out: its weight there is always 1)
 *   diag:  rows 0 … 3: 1 + 0 + 0 + 0 = 1, mean 1/4 = 0.25
 */
static void test_previous_token_head(void **state)
{
	(void)state;
	const double v[] = { 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0 };
	Mat w = mat_of(4, 4, v);
	unsigned char vis[16];
	causal(vis, 4);

	HeadScore p = headscore_pattern(HS_PREV, &w, vis), f = headscore_pattern(HS_FIRST, &w, vis),
	          d = headscore_pattern(HS_DIAG, &w, vis);
	assert_int_equal(p.rows, 3);
	assert_near(p.sum, 3.0, 0);
	assert_near(p.mean, 1.0, 0);
	assert_int_equal(f.rows, 3);
	assert_near(f.mean, 1.0 / 3.0, 1e-15);
	assert_int_equal(d.rows, 4);
	assert_near(d.mean, 0.25, 0);
	mat_free(&w);
}

/*
 * Uniform causal attention, w[i][j] = 1/(i + 1) for j ≤ i:
 *   prev:  1/2 + 1/3 + 1/4 = 13/12 over 3 rows: 13/36
 *   first: rows 1 … 3, 1/2 + 1/3 + 1/4 = 13/12 over 3 rows: 13/36, as prev
 *   diag:  1 + 1/2 + 1/3 + 1/4 = 25/12 over 4 rows: 25/48
 */
static void test_uniform_head(void **state)
{
	(void)state;
	double v[16] = { 0 };
	for (int i = 0; i < 4; i++)
		for (int j = 0; j <= i; j++)
			v[i * 4 + j] = 1.0 / (i + 1);
	Mat w = mat_of(4, 4, v);
	unsigned char vis[16];
	causal(vis, 4);

	assert_near(headscore_pattern(HS_PREV, &w, vis).mean, 13.0 / 36.0, 1e-15);
	assert_near(headscore_pattern(HS_FIRST, &w, vis).mean, 13.0 / 36.0, 1e-15);
	assert_near(headscore_pattern(HS_DIAG, &w, vis).mean, 25.0 / 48.0, 1e-15);
	mat_free(&w);
}

/*
 * Without a mask (visible NULL: every cell) on a 3 × 3 matrix:
 *   prev: rows 1, 2: 0.2 + 0.5 = 0.7, mean 0.35
 *   first: rows 1, 2: 0.2 + 0.3 = 0.5, mean 0.25;  diag: 0.1 + 0.7 + 0.2 = 1, mean 1/3
 * A window of one (each row sees only itself): no row sees key i − 1, and
 * only row 0 sees key 0, so prev and first are undefined (0 rows).
 */
static void test_unmasked_and_window(void **state)
{
	(void)state;
	const double v[] = { 0.1, 0.6, 0.3, 0.2, 0.7, 0.1, 0.3, 0.5, 0.2 };
	Mat w = mat_of(3, 3, v);

	assert_near(headscore_pattern(HS_PREV, &w, NULL).mean, 0.35, 1e-15);
	assert_int_equal(headscore_pattern(HS_PREV, &w, NULL).rows, 2);
	assert_near(headscore_pattern(HS_FIRST, &w, NULL).mean, 0.25, 1e-15);
	assert_int_equal(headscore_pattern(HS_FIRST, &w, NULL).rows, 2);
	assert_near(headscore_pattern(HS_DIAG, &w, NULL).mean, 1.0 / 3.0, 1e-15);

	const unsigned char diag_only[9] = { 1, 0, 0, 0, 1, 0, 0, 0, 1 };
	HeadScore p = headscore_pattern(HS_PREV, &w, diag_only);
	assert_int_equal(p.rows, 0);
	assert_near(p.mean, 0.0, 0);
	HeadScore f = headscore_pattern(HS_FIRST, &w, diag_only);
	assert_int_equal(f.rows, 0);
	assert_near(f.mean, 0.0, 0);
	mat_free(&w);
}

/*
 * Induction on BOS 7, then 1 2 3, then 1 2 3 again (the second copy from 4):
 * row 4 (token 1, first at 1) counts key 2, row 5 key 3, row 6 key 4. With
 * those weights 0.8, 0.6, 0.4 the score is 1.8/3 = 0.6.
 */
static void test_induction(void **state)
{
	(void)state;
	const long long ids[] = { 7, 1, 2, 3, 1, 2, 3 };
	double v[49] = { 0 };
	for (int i = 0; i < 7; i++)
		v[i * 7] = 1; /* everything on the first token … */
	v[4 * 7 + 0] = 0.2, v[4 * 7 + 2] = 0.8; /* … but the induction rows */
	v[5 * 7 + 0] = 0.4, v[5 * 7 + 3] = 0.6;
	v[6 * 7 + 0] = 0.6, v[6 * 7 + 4] = 0.4;
	Mat w = mat_of(7, 7, v);
	unsigned char vis[49];
	causal(vis, 7);

	assert_int_equal(headscore_induction_key(ids, 4), 2);
	assert_int_equal(headscore_induction_key(ids, 6), 4);
	assert_int_equal(headscore_induction_key(ids, 3), -1);
	HeadScore s = headscore_induction(&w, vis, ids, 4);
	assert_int_equal(s.rows, 3);
	assert_near(s.sum, 1.8, 1e-15);
	assert_near(s.mean, 0.6, 1e-15);
	/* the same head's first-token score, rows 1 … 6: (1·3 + 0.2 + 0.4 + 0.6) / 6 */
	assert_near(headscore_pattern(HS_FIRST, &w, vis).mean, 4.2 / 6.0, 1e-15);

	/* a token repeated inside the first copy counts its first occurrence: 5 9 5 | 5 9 5 */
	const long long dup[] = { 5, 9, 5, 5, 9, 5 };
	assert_int_equal(headscore_induction_key(dup, 2), 1);
	assert_int_equal(headscore_induction_key(dup, 3), 1);
	assert_int_equal(headscore_induction_key(dup, 4), 2);
	assert_int_equal(headscore_induction_key(dup, 5), 1);
	double u[36] = { 0 };
	for (int i = 0; i < 6; i++)
		u[i * 6 + (i < 3 ? 0 : i == 4 ? 2 : 1)] = 1; /* rows 3 and 5 on key 1, row 4 on key 2 */
	Mat w2 = mat_of(6, 6, u);
	unsigned char vis2[36];
	causal(vis2, 6);
	HeadScore s2 = headscore_induction(&w2, vis2, dup, 3);
	assert_int_equal(s2.rows, 3);
	assert_near(s2.mean, 1.0, 0);
	mat_free(&w);
	mat_free(&w2);
}

/* The random sequence: a first token, then half tokens in [0, vocab), then the same again. */
static void test_repeat_ids(void **state)
{
	(void)state;
	long long ids[21], again[21];

	assert_int_equal(headscore_repeat_ids(ids, 0, 10, 50, 42), 11);
	assert_int_equal(ids[0], 0);
	for (int i = 1; i <= 10; i++) {
		assert_true(ids[i] >= 0 && ids[i] < 50);
		assert_int_equal(ids[i], ids[i + 10]);
	}
	/* the same seed gives the same tokens; without a first token the copy starts at half */
	assert_int_equal(headscore_repeat_ids(again, -1, 10, 50, 42), 10);
	for (int i = 0; i < 10; i++)
		assert_int_equal(again[i], ids[i + 1]);
}

/* A lesson's scores and their words: the numbers in explain, and why induction is "—". */
static void test_lesson_explain(void **state)
{
	(void)state;
	char *path = path_of("lessons/multihead.json");
	Lesson *l = load_file(path);
	Attn *a = compute(l);
	HeadScores sc;

	headscores_of(a, 1, &sc);
	const Mat *w = attn_matrix(a, AM_WEIGHTS, 1);
	assert_non_null(w);
	assert_int_equal(sc.s[HS_INDUCTION].rows, 0);
	HeadScore d = headscore_pattern(HS_DIAG, w, a->visible);
	assert_near(sc.s[HS_DIAG].mean, d.mean, 0);
	char *text = headscore_explain(a, 1, HS_DIAG, "layer 0", 0);
	assert_non_null(text);
	assert_non_null(strstr(text, "layer 0, head 1: diagonal score"));
	assert_non_null(strstr(text, "weights[3][3] = "));
	assert_non_null(strstr(text, "mean = "));
	free(text);
	text = headscore_explain(a, 1, HS_INDUCTION, "layer 0", 0);
	assert_non_null(strstr(text, "no vocabulary"));
	free(text);
	attn_free(a);
	lesson_free(l);
	free(path);
}

/*
 * The induction score of a computation's layer and head, on tokens 1 2 1 2
 * (the second copy from 2): rows 2 and 3 count keys 1 and 2. gqa.json's
 * layer 0, head 0 has, by PyTorch (tests/golden/lessons/gqa.ref.json),
 * weights[2][1] = 0.3022622839784702 and weights[3][2] = 0.2506388085533064.
 */
static void test_induction_run(void **state)
{
	(void)state;
	char *path = path_of("lessons/gqa.json");
	Lesson *l = load_file(path);
	Attn *a = compute(l);
	const long long ids[] = { 1, 2, 1, 2 };

	HeadScore s = headscores_induction_run(a, 0, 0, ids, 2);
	assert_int_equal(s.rows, 2);
	assert_near(s.mean, (0.3022622839784702 + 0.2506388085533064) / 2, 1e-12);
	assert_int_equal(headscores_induction_run(a, 3, 0, ids, 2).rows, 0); /* no layer 3 */
	assert_int_equal(headscores_induction_run(a, 0, 4, ids, 2).rows, 0); /* no head 4 */
	attn_free(a);
	lesson_free(l);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_previous_token_head),
		cmocka_unit_test(test_uniform_head),
		cmocka_unit_test(test_unmasked_and_window),
		cmocka_unit_test(test_induction),
		cmocka_unit_test(test_repeat_ids),
		cmocka_unit_test(test_lesson_explain),
		cmocka_unit_test(test_induction_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
