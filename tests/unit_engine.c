/* unit_engine.c: the kernels (matrix product, softmax, positional encoding),
 * the PRNG against its reference, and whole computations on small lessons
 * whose numbers can be checked by hand: causal and fully masked rows, fills,
 * scale factors, explain's arithmetic and the built-in default lesson. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "out/textfmt.h"
#include "inspect/explain.h"
#include "lesson/lesson.h"
#include "base/matrix.h"
#include "base/prng.h"
#include "app/session.h"
#include "unit_common.h"

/* ------------------------------------------------------------ helpers */

static void fill_random(Mat *m, Prng *p)
{
	size_t i, count = (size_t)m->rows * (size_t)m->cols;

	for (i = 0; i < count; i++)
		m->a[i] = 2.0 * prng_uniform(p) - 1.0;
}

/* 1 when text contains needle; prints the text otherwise, to make a failure readable. */
static int contains(const char *text, const char *needle)
{
	if (text != NULL && strstr(text, needle) != NULL)
		return 1;
	print_error("expected \"%s\" in:\n%s\n", needle, text ? text : "(null)");
	return 0;
}

/* ------------------------------------------------------------ mat_mul */

static void test_mat_mul_matches_naive(void **state)
{
	/* r, k, c: tiny, odd, and past one and two KB = 256 panels of k */
	static const int shapes[][3] = {
		{ 1, 1, 1 }, { 1, 7, 1 }, { 3, 5, 7 }, { 17, 1, 9 }, { 1, 130, 1 },
		{ 2, 127, 511 }, { 5, 128, 512 }, { 7, 129, 513 }, { 33, 300, 600 },
		{ 129, 257, 1031 }, { 1, 1, 1500 },
	};
	Prng p;
	size_t s;
	(void)state;

	prng_seed(&p, 12345);
	for (s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		const int r = shapes[s][0], k = shapes[s][1], c = shapes[s][2];
		Mat A, B, C, N;
		size_t i;
		assert_int_equal(mat_alloc(&A, r, k), 0);
		assert_int_equal(mat_alloc(&B, k, c), 0);
		assert_int_equal(mat_alloc(&C, r, c), 0);
		assert_int_equal(mat_alloc(&N, r, c), 0);
		fill_random(&A, &p);
		fill_random(&B, &p);
		/* garbage in C: mat_mul must overwrite, not accumulate */
		for (i = 0; i < (size_t)r * (size_t)c; i++)
			C.a[i] = 1e300;
		mat_mul(&A, &B, &C);
		mat_mul_naive(&A, &B, &N);
		for (i = 0; i < (size_t)r * (size_t)c; i++) {
			/* |entries| ≤ 1, so |C_ij| ≤ k: an absolute bound scaled by k */
			const double tol = 1e-13 * k;
			if (fabs(C.a[i] - N.a[i]) > tol)
				fail_msg("%d×%d · %d×%d: cell %zu: blocked %.17g, naive %.17g", r, k, k, c, i, C.a[i], N.a[i]);
		}
		mat_free(&A);
		mat_free(&B);
		mat_free(&C);
		mat_free(&N);
	}
}

/*
 * mat_mul_view against mat_mul_naive on one r × k · k × c product. A, B and
 * C are views with wider rows, whose padding holds 1e300: a read past a row
 * spoils the result, a write past it spoils the padding. b_trans: B is given
 * as its c × k transpose (Q·Kᵀ). lower: A is lower triangular (causal
 * weights), which lets the kernel skip whole tiles of zeros.
 */
static void check_view(int r, int k, int c, int b_trans, int lower, Prng *p)
{
	const double pad = 1e300, tol = 1e-13 * k; /* |entries| ≤ 1, so |C_ij| ≤ k */
	const size_t lda = (size_t)k + 3, ldb = (size_t)(b_trans ? k : c) + 2, ldc = (size_t)c + 1;
	const size_t nb = (size_t)(b_trans ? c : k) * ldb;
	double *a = malloc((size_t)r * lda * sizeof *a), *b = malloc(nb * sizeof *b);
	double *cv = malloc((size_t)r * ldc * sizeof *cv);
	Mat A, B, N;
	size_t i, t, j;

	assert_true(a != NULL && b != NULL && cv != NULL);
	assert_int_equal(mat_alloc(&A, r, k), 0);
	assert_int_equal(mat_alloc(&B, k, c), 0);
	assert_int_equal(mat_alloc(&N, r, c), 0);
	fill_random(&A, p);
	fill_random(&B, p);
	for (i = 0; i < (size_t)r * lda; i++)
		a[i] = pad;
	for (i = 0; i < nb; i++)
		b[i] = pad;
	for (i = 0; i < (size_t)r * ldc; i++)
		cv[i] = pad;
	for (i = 0; i < (size_t)r; i++)
		for (t = 0; t < (size_t)k; t++) {
			if (lower && t > i)
				MAT_AT(A, i, t) = 0.0;
			a[i * lda + t] = MAT_AT(A, i, t);
		}
	for (t = 0; t < (size_t)k; t++)
		for (j = 0; j < (size_t)c; j++)
			b[b_trans ? j * ldb + t : t * ldb + j] = MAT_AT(B, t, j);

	mat_mul_view(r, k, c, a, lda, b, ldb, b_trans, cv, ldc, lower);
	mat_mul_naive(&A, &B, &N);
	for (i = 0; i < (size_t)r; i++) {
		for (j = 0; j < (size_t)c; j++)
			if (!(fabs(cv[i * ldc + j] - MAT_AT(N, i, j)) <= tol))
				fail_msg("%d×%d · %d×%d, b_trans %d, lower %d: C[%zu][%zu] = %.17g, naive %.17g", r, k, k, c,
				         b_trans, lower, i, j, cv[i * ldc + j], MAT_AT(N, i, j));
		if (cv[i * ldc + (size_t)c] != pad)
			fail_msg("%d×%d · %d×%d, b_trans %d, lower %d: wrote past row %zu of C", r, k, k, c, b_trans, lower, i);
	}
	free(a);
	free(b);
	free(cv);
	mat_free(&A);
	mat_free(&B);
	mat_free(&N);
}

/*
 * check_view on every r, k, c in 1…13 and 37, 64, 65 (every tail of the
 * MR = 4 rows and NR = 8 columns of a tile), and on shapes whose k crosses
 * the KB = 256 panel, with r past it too so causal rows skip across panels.
 */
static void check_view_shapes(int b_trans, int lower)
{
	static const int sizes[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 37, 64, 65 };
	static const int large[][3] = { { 3, 257, 9 }, { 261, 300, 13 }, { 300, 257, 8 }, { 258, 513, 5 } };
	const size_t n = sizeof sizes / sizeof sizes[0];
	size_t x, y, z;
	Prng p;

	prng_seed(&p, 4242);
	for (x = 0; x < n; x++)
		for (y = 0; y < n; y++)
			for (z = 0; z < n; z++)
				check_view(sizes[x], sizes[y], sizes[z], b_trans, lower, &p);
	for (x = 0; x < sizeof large / sizeof large[0]; x++)
		check_view(large[x][0], large[x][1], large[x][2], b_trans, lower, &p);
}

/* weighted = weights · V on views of V's head columns */
static void test_mat_mul_view_plain(void **state)
{
	(void)state;
	check_view_shapes(0, 0);
}

/* scores = Q · Kᵀ: B read as a transpose */
static void test_mat_mul_view_transposed(void **state)
{
	(void)state;
	check_view_shapes(1, 0);
}

/* causal weights · V skips the zeros above the diagonal; with b_trans too */
static void test_mat_mul_view_causal(void **state)
{
	(void)state;
	check_view_shapes(0, 1);
	check_view_shapes(1, 1);
}

static void test_mat_mul_by_hand(void **state)
{
	/* [1 2; 3 4] · [5 6; 7 8] = [19 22; 43 50] */
	Mat A, B, C;
	(void)state;

	assert_int_equal(mat_alloc(&A, 2, 2), 0);
	assert_int_equal(mat_alloc(&B, 2, 2), 0);
	assert_int_equal(mat_alloc(&C, 2, 2), 0);
	A.a[0] = 1; A.a[1] = 2; A.a[2] = 3; A.a[3] = 4;
	B.a[0] = 5; B.a[1] = 6; B.a[2] = 7; B.a[3] = 8;
	mat_mul(&A, &B, &C);
	assert_true(C.a[0] == 19 && C.a[1] == 22 && C.a[2] == 43 && C.a[3] == 50);
	mat_free(&A);
	mat_free(&B);
	mat_free(&C);
}

static void test_mat_basics(void **state)
{
	Mat a, b, e;
	double mean, std, min, max;
	(void)state;

	assert_int_equal(mat_alloc(&e, 0, 5), 0);
	assert_true(mat_empty(&e));
	assert_null(e.a);
	mat_free(&e);
	assert_int_equal(mat_alloc(&a, 2, 3), 0);
	assert_false(mat_empty(&a));
	a.a[0] = 1; a.a[1] = 2; a.a[2] = 3; a.a[3] = 4; a.a[4] = -INFINITY; a.a[5] = NAN;
	assert_int_equal(mat_copy(&b, &a), 0);
	assert_true(b.rows == 2 && b.cols == 3 && b.a != a.a);
	assert_memory_equal(b.a, a.a, 6 * sizeof *a.a); /* every bit, the NaN's too */
	a.a[5] = 0;
	/* finite cells 1 2 3 4 0: mean 2, sample std sqrt(2.5), from 0 to 4 */
	assert_int_equal(mat_stats_range(&a, &mean, &std, &min, &max), 5);
	assert_float_equal(mean, 2.0, 1e-15);
	assert_float_equal(std, sqrt(2.5), 1e-15);
	assert_true(min == 0.0 && max == 4.0);
	mat_free(&a);
	mat_free(&b);
}

/* ------------------------------------------------------------ softmax */

static void test_softmax_extremes(void **state)
{
	const double x[3] = { 1000, 1, -1000 };
	double out[3];
	(void)state;

	assert_int_equal(attn_softmax_row(x, out, 3), 0);
	assert_false(isnan(out[0]) || isnan(out[1]) || isnan(out[2]));
	assert_float_equal(out[0], 1.0, 1e-15);
	assert_true(out[1] >= 0 && out[1] < 1e-300);
	assert_true(out[2] == 0.0);
	assert_float_equal(out[0] + out[1] + out[2], 1.0, 1e-15);
}

static void test_softmax_all_masked(void **state)
{
	const double x[4] = { -INFINITY, -INFINITY, -INFINITY, -INFINITY };
	double out[4] = { 7, 7, 7, 7 };
	(void)state;

	assert_int_equal(attn_softmax_row(x, out, 4), 1);
	assert_true(out[0] == 0 && out[1] == 0 && out[2] == 0 && out[3] == 0);
}

static void test_softmax_values(void **state)
{
	/* [0, ln 3, −∞, 0] → [1/5, 3/5, 0, 1/5] */
	const double x[4] = { 0, log(3.0), -INFINITY, 0 };
	const double one[1] = { -123.0 };
	double out[4], sum = 0;
	Prng p;
	int i, t;
	(void)state;

	assert_int_equal(attn_softmax_row(x, out, 4), 0);
	assert_float_equal(out[0], 0.2, 1e-15);
	assert_float_equal(out[1], 0.6, 1e-15);
	assert_true(out[2] == 0.0);
	assert_float_equal(out[3], 0.2, 1e-15);
	assert_int_equal(attn_softmax_row(one, out, 1), 0);
	assert_true(out[0] == 1.0);
	/*
	 * random rows, wide range (e^-200 is still a normal double): each weight is
	 * e^(r_i − max r) / Σ_j e^(r_j − max r), computed here apart in long double,
	 * to 1e-12 of itself; the sum is 1
	 */
	prng_seed(&p, 99);
	for (t = 0; t < 200; t++) {
		double r[17], w[17];
		long double top = -INFINITY, z = 0;
		for (i = 0; i < 17; i++) {
			r[i] = (prng_uniform(&p) - 0.5) * 200.0;
			top = r[i] > top ? r[i] : top;
		}
		for (i = 0; i < 17; i++)
			z += expl((long double)r[i] - top);
		assert_int_equal(attn_softmax_row(r, w, 17), 0);
		sum = 0;
		for (i = 0; i < 17; i++) {
			const long double want = expl((long double)r[i] - top) / z;
			if (!(fabsl((long double)w[i] - want) <= 1e-12L * want))
				fail_msg("row %d: weight %d is %.17g, want %.17Lg", t, i, w[i], want);
			sum += w[i];
		}
		assert_float_equal(sum, 1.0, 1e-12);
	}
}

/* ------------------------------------------------------------ positional */

static void test_positional(void **state)
{
	Mat pe;
	(void)state;

	/* 3 positions × 5 features (odd width: column 4 is a lone sine) */
	assert_int_equal(mat_alloc(&pe, 3, 5), 0);
	attn_positional(&pe);
	/* position 0: sin 0 = 0, cos 0 = 1 */
	assert_true(MAT_AT(pe, 0, 0) == 0 && MAT_AT(pe, 0, 1) == 1 && MAT_AT(pe, 0, 2) == 0 &&
	            MAT_AT(pe, 0, 3) == 1 && MAT_AT(pe, 0, 4) == 0);
	/* position 1: columns 0/1 angle 1, columns 2/3 angle 1/10000^(2/5), column 4 angle 1/10000^(4/5) */
	assert_float_equal(MAT_AT(pe, 1, 0), 0.8414709848078965, 1e-15);
	assert_float_equal(MAT_AT(pe, 1, 1), 0.5403023058681398, 1e-15);
	assert_float_equal(MAT_AT(pe, 1, 2), sin(1.0 / pow(10000.0, 0.4)), 1e-15);
	assert_float_equal(MAT_AT(pe, 1, 2), 0.025116222909773774, 1e-15); /* sin(0.025118864315095794) */
	assert_float_equal(MAT_AT(pe, 1, 3), cos(0.025118864315095794), 1e-15);
	assert_float_equal(MAT_AT(pe, 1, 4), sin(0.0006309573444801933), 1e-15);
	/* position 2: sin 2, cos 2 */
	assert_float_equal(MAT_AT(pe, 2, 0), 0.9092974268256817, 1e-15);
	assert_float_equal(MAT_AT(pe, 2, 1), -0.4161468365471424, 1e-15);
	mat_free(&pe);

	/* 2 × 4 (even): position 1, columns 2/3: angle 1/10000^(2/4) = 0.01 */
	assert_int_equal(mat_alloc(&pe, 2, 4), 0);
	attn_positional(&pe);
	assert_float_equal(MAT_AT(pe, 1, 2), sin(0.01), 1e-15);
	assert_float_equal(MAT_AT(pe, 1, 3), cos(0.01), 1e-15);
	mat_free(&pe);
}

/* ------------------------------------------------------------ prng */

static FILE *open_reference(void)
{
	const char *dir = getenv("ATTNVIZ_SRCDIR");
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/tests/golden/prng_reference.txt", dir && dir[0] ? dir : ".");
	f = fopen(path, "r");
	if (f == NULL)
		print_error("cannot open %s: %s (set ATTNVIZ_SRCDIR to the repository)\n", path, strerror(errno));
	return f;
}

static void test_prng_reference(void **state)
{
	FILE *f = open_reference();
	char line[2048];
	int lines = 0;
	(void)state;

	assert_non_null(f);
	while (fgets(line, sizeof line, f) != NULL) {
		char kind[16], *p, *end;
		unsigned long long seed;
		int used, k;
		Prng g;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%15s %llu%n", kind, &seed, &used) != 2)
			fail_msg("bad reference line: %s", line);
		prng_seed(&g, (uint64_t)seed);
		p = line + used;
		for (k = 0; k < 8; k++) {
			if (strcmp(kind, "next") == 0) {
				const unsigned long long want = strtoull(p, &end, 10);
				const uint64_t got = prng_next(&g);
				if (got != want)
					fail_msg("next seed %llu value %d: got %llu, want %llu", seed, k, (unsigned long long)got, want);
			} else {
				const double want = strtod(p, &end);
				const double got = strcmp(kind, "uniform") == 0 ? prng_uniform(&g) : prng_normal(&g);
				/* shortest round-trip decimals: must be bit-identical */
				if (got != want)
					fail_msg("%s seed %llu value %d: got %.17g, want %.17g", kind, seed, k, got, want);
			}
			assert_true(end != p);
			p = end;
		}
		lines++;
	}
	fclose(f);
	assert_true(lines >= 9);
}

static void test_prng_ranges(void **state)
{
	Prng p;
	double sum = 0, sq = 0;
	int i;
	const int count = 100000;
	(void)state;

	prng_seed(&p, 7);
	for (i = 0; i < count; i++) {
		const double u = prng_uniform(&p);
		assert_true(u >= 0.0 && u < 1.0);
	}
	for (i = 0; i < count; i++) {
		const double z = prng_normal(&p);
		sum += z;
		sq += z * z;
	}
	assert_true(fabs(sum / count) < 0.02);
	assert_true(fabs(sq / count - 1.0) < 0.03);
}

/* A generated matrix in a lesson uses the documented generator, row by row. */
static void test_generated_matrix(void **state)
{
	Lesson *l = load("{\"attnviz\":1,\"title\":\"g\","
	                 "\"X\":{\"random\":\"uniform\",\"rows\":3,\"cols\":2,\"seed\":5,\"low\":-2,\"high\":2},"
	                 "\"W_q\":{\"random\":\"normal\",\"rows\":2,\"cols\":2,\"seed\":9,\"mean\":1,\"std\":0.5},"
	                 "\"W_k\":{\"identity\":2},\"W_v\":{\"identity\":2}}");
	Prng p;
	int i;
	(void)state;

	assert_int_equal(l->cfg.n, 3);
	assert_string_equal(l->cfg.tokens[0], "t0");
	assert_string_equal(l->cfg.tokens[2], "t2");
	prng_seed(&p, 5);
	for (i = 0; i < 6; i++)
		assert_true(l->cfg.input.a[i] == -2.0 + 4.0 * prng_uniform(&p));
	prng_seed(&p, 9);
	for (i = 0; i < 4; i++)
		assert_true(l->lp.W_q.a[i] == 1.0 + 0.5 * prng_normal(&p));
	assert_true(MAT_AT(l->lp.W_k, 0, 0) == 1 && MAT_AT(l->lp.W_k, 0, 1) == 0 && MAT_AT(l->lp.W_k, 1, 1) == 1);
	lesson_free(l);
}

/* ------------------------------------------------------------ whole computations */

/* X = [[1,2],[3,4],[0,1]], identity weights: Q = K = V = X. */
#define SMALL_HEAD "{\"attnviz\":1,\"title\":\"small\",\"tokens\":[\"a\",\"b\",\"c\"]," \
	"\"X\":[[1,2],[3,4],[0,1]],\"W_q\":{\"identity\":2},\"W_k\":{\"identity\":2},\"W_v\":{\"identity\":2}"

static void test_small_by_hand(void **state)
{
	Lesson *l = load(SMALL_HEAD ",\"scale\":false}");
	Attn *a = compute(l);
	const Mat *s;
	double e[3], sum;
	int j;
	(void)state;

	assert_true(a->factor == 1.0);
	s = attn_matrix(a, AM_SCORES, 0);
	assert_non_null(s);
	/* scores = X·Xᵀ */
	assert_true(MAT_AT(*s, 0, 0) == 5 && MAT_AT(*s, 0, 1) == 11 && MAT_AT(*s, 0, 2) == 2);
	assert_true(MAT_AT(*s, 1, 1) == 25 && MAT_AT(*s, 2, 1) == 4 && MAT_AT(*s, 2, 2) == 1);
	/* weights row 0 = softmax([5, 11, 2]) */
	sum = exp(5.0 - 11) + 1 + exp(2.0 - 11);
	e[0] = exp(5.0 - 11) / sum;
	e[1] = 1 / sum;
	e[2] = exp(2.0 - 11) / sum;
	for (j = 0; j < 3; j++)
		assert_float_equal(MAT_AT(a->head[0].weights, 0, j), e[j], 1e-15);
	/* weighted row 0 = Σ_j w_0j x_j */
	assert_float_equal(MAT_AT(a->head[0].weighted, 0, 0), e[0] * 1 + e[1] * 3 + e[2] * 0, 1e-14);
	assert_float_equal(MAT_AT(a->head[0].weighted, 0, 1), e[0] * 2 + e[1] * 4 + e[2] * 1, 1e-14);
	/* no W_o: output is (a copy of) concat, which is the one head's output */
	assert_true(same_numbers(attn_matrix(a, AM_OUTPUT, 0), &a->concat));
	assert_true(same_numbers(&a->concat, &a->head[0].weighted));
	assert_null(attn_matrix(a, AM_PE, 0));
	assert_null(attn_matrix(a, AM_W_O, 0));
	assert_null(attn_matrix(a, AM_SCORES, 1));
	assert_false(a->any_row_all_masked);
	attn_free(a);
	lesson_free(l);
}

/*
 * A whole computation does not look the given matrices over again (compute.c's
 * overflow_error): a weight not finite reaches its product, which says so, and
 * the message names the weight itself, the first matrix holding such a number.
 */
static void test_nonfinite_weight_named(void **state)
{
	Lesson *l = load(SMALL_HEAD "}");
	char *err = NULL;
	Attn *a;
	(void)state;

	l->lp.W_k.a[1] = NAN;
	a = attn_compute(l, &err);
	assert_null(a);
	assert_non_null(err);
	if (strstr(err, "W_k[0][1]") == NULL)
		fail_msg("the error names another cell: %s", err);
	free(err);
	lesson_free(l);
}

static void test_scale_factors(void **state)
{
	Lesson *l;
	Attn *a;
	(void)state;

	l = load(SMALL_HEAD "}");
	a = compute(l);
	assert_float_equal(a->factor, 1.0 / sqrt(2.0), 1e-16);
	assert_float_equal(attn_cell(a, AM_SCALED, 0, 0, 1), 11.0 / sqrt(2.0), 1e-14);
	attn_free(a);
	lesson_free(l);
	l = load(SMALL_HEAD ",\"scale\":0.25}");
	a = compute(l);
	assert_true(a->factor == 0.25);
	assert_true(attn_cell(a, AM_SCALED, 0, 1, 1) == 6.25);
	attn_free(a);
	lesson_free(l);
}

static void check_rows_sum_to_one(const Mat *w, const unsigned char *all_masked)
{
	int i, j;

	for (i = 0; i < w->rows; i++) {
		double sum = 0;
		for (j = 0; j < w->cols; j++)
			sum += MAT_AT(*w, i, j);
		if (all_masked != NULL && all_masked[i])
			assert_true(sum == 0.0);
		else
			assert_float_equal(sum, 1.0, 1e-12);
	}
}

static void test_causal(void **state)
{
	Lesson *l = load("{\"attnviz\":1,\"title\":\"c\",\"heads\":2,\"mask\":\"causal\","
	                 "\"X\":{\"random\":\"normal\",\"rows\":9,\"cols\":6,\"seed\":3},"
	                 "\"W_q\":{\"random\":\"normal\",\"rows\":6,\"cols\":8,\"seed\":4},"
	                 "\"W_k\":{\"random\":\"normal\",\"rows\":6,\"cols\":8,\"seed\":5},"
	                 "\"W_v\":{\"random\":\"normal\",\"rows\":6,\"cols\":6,\"seed\":6},"
	                 "\"W_o\":{\"random\":\"normal\",\"rows\":6,\"cols\":5,\"seed\":7}}");
	Attn *a = compute(l);
	int h, i, j, c;
	(void)state;

	assert_int_equal(a->heads, 2);
	assert_false(a->any_row_all_masked);
	for (h = 0; h < 2; h++) {
		const AttnHead *hd = &a->head[h];
		for (i = 0; i < 9; i++)
			for (j = 0; j < 9; j++) {
				assert_int_equal(a->visible[i * 9 + j], j <= i);
				if (j > i) {
					assert_true(MAT_AT(hd->weights, i, j) == 0.0);
					assert_true(attn_cell(a, AM_MASKED, h, i, j) == -INFINITY);
				} else {
					assert_true(attn_cell(a, AM_MASKED, h, i, j) == attn_cell(a, AM_SCALED, h, i, j));
					assert_true(MAT_AT(hd->weights, i, j) > 0.0);
				}
			}
		check_rows_sum_to_one(&hd->weights, NULL);
		/* the first query sees only itself: weight 1, output = v_0 of this head */
		assert_true(MAT_AT(hd->weights, 0, 0) == 1.0);
		for (c = 0; c < l->lp.d_v; c++)
			assert_float_equal(MAT_AT(hd->weighted, 0, c), MAT_AT(a->V, 0, h * l->lp.d_v + c), 1e-15);
		/* the concat holds this head's output in its columns */
		for (i = 0; i < 9; i++)
			for (c = 0; c < l->lp.d_v; c++)
				assert_true(MAT_AT(a->concat, i, h * l->lp.d_v + c) == MAT_AT(hd->weighted, i, c));
	}
	/* output = concat · W_o */
	{
		Mat ref;
		assert_int_equal(mat_alloc(&ref, 9, 5), 0);
		mat_mul_naive(&a->concat, &l->lp.W_o, &ref);
		for (i = 0; i < 45; i++)
			assert_float_equal(a->output.a[i], ref.a[i], 1e-12);
		mat_free(&ref);
	}
	attn_free(a);
	lesson_free(l);
}

static void test_fully_masked_row(void **state)
{
	/* query b (row 1) may see no key at all */
	Lesson *l = load(SMALL_HEAD ",\"mask\":[[1,1,0],[0,0,0],[1,0,1]]}");
	Attn *a = compute(l);
	int j;
	(void)state;

	assert_true(a->any_row_all_masked);
	assert_int_equal(a->row_all_masked[0], 0);
	assert_int_equal(a->row_all_masked[1], 1);
	assert_int_equal(a->row_all_masked[2], 0);
	for (j = 0; j < 3; j++) {
		assert_true(attn_cell(a, AM_MASKED, 0, 1, j) == -INFINITY);
		assert_true(MAT_AT(a->head[0].weights, 1, j) == 0.0);
		assert_false(isnan(MAT_AT(a->head[0].weights, 1, j)));
	}
	assert_true(MAT_AT(a->head[0].weighted, 1, 0) == 0.0 && MAT_AT(a->head[0].weighted, 1, 1) == 0.0);
	check_rows_sum_to_one(&a->head[0].weights, a->row_all_masked);
	assert_true(MAT_AT(a->head[0].weights, 0, 2) == 0.0 && MAT_AT(a->head[0].weights, 2, 1) == 0.0);
	/* explain says why rather than dividing 0 by 0 */
	{
		char *err = NULL, *t = explain_cell(a, AM_WEIGHTS, 0, 1, 0, 0, &err);
		assert_non_null(t);
		assert_true(contains(t, "every key of row 1 is masked"));
		free(t);
	}
	attn_free(a);
	lesson_free(l);
}

static void test_mask_fill_number(void **state)
{
	/* fill 0 replaces masked cells: padded key c still gets weight, no row is flagged */
	Lesson *l = load(SMALL_HEAD ",\"scale\":false,\"mask\":{\"padding\":[1,1,0]},\"mask_fill\":0}");
	Attn *a = compute(l);
	double sum;
	(void)state;

	assert_false(a->any_row_all_masked);
	assert_true(attn_cell(a, AM_MASKED, 0, 0, 2) == 0.0);
	assert_true(attn_cell(a, AM_MASKED, 0, 0, 1) == 11.0);
	/* row 0: softmax([5, 11, 0]) */
	sum = exp(-6.0) + 1 + exp(-11.0);
	assert_float_equal(MAT_AT(a->head[0].weights, 0, 2), exp(-11.0) / sum, 1e-15);
	assert_true(MAT_AT(a->head[0].weights, 0, 2) > 0.0);
	check_rows_sum_to_one(&a->head[0].weights, NULL);
	attn_free(a);
	lesson_free(l);

	/* a padding row all 0 with −∞: every row is flagged */
	l = load(SMALL_HEAD ",\"mask\":{\"padding\":[0,0,0]}}");
	a = compute(l);
	assert_true(a->any_row_all_masked);
	assert_true(a->row_all_masked[0] && a->row_all_masked[1] && a->row_all_masked[2]);
	check_rows_sum_to_one(&a->head[0].weights, a->row_all_masked);
	attn_free(a);
	lesson_free(l);
}

static void test_additive_by_hand(void **state)
{
	/* e_ij = Σ_c w_e[c]·tanh(q_ic + k_jc), scale off */
	Lesson *l = load(SMALL_HEAD ",\"score\":\"additive\",\"w_e\":[0.5,-1],\"scale\":false}");
	Attn *a = compute(l);
	(void)state;

	assert_float_equal(MAT_AT(a->head[0].scores, 0, 1), 0.5 * tanh(1.0 + 3) - tanh(2.0 + 4), 1e-15);
	assert_float_equal(MAT_AT(a->head[0].scores, 2, 0), 0.5 * tanh(0.0 + 1) - tanh(1.0 + 2), 1e-15);
	attn_free(a);
	lesson_free(l);
}

static void test_positional_in_lesson(void **state)
{
	Lesson *l = load(SMALL_HEAD ",\"positional\":\"sinusoidal\"}");
	Attn *a = compute(l);
	(void)state;

	assert_non_null(attn_matrix(a, AM_PE, 0));
	/* X = input + PE; position 1: sin 1, cos 1 */
	assert_float_equal(MAT_AT(a->X, 1, 0), 3 + sin(1.0), 1e-15);
	assert_float_equal(MAT_AT(a->X, 1, 1), 4 + cos(1.0), 1e-15);
	assert_true(MAT_AT(a->X, 0, 0) == 1.0 && MAT_AT(a->X, 0, 1) == 3.0);
	attn_free(a);
	lesson_free(l);
}

static void test_cross(void **state)
{
	Lesson *l = load("{\"attnviz\":1,\"title\":\"x\",\"tokens\":[\"a\",\"b\"],\"X\":[[1,0],[0,1]],"
	                 "\"source\":{\"tokens\":[\"p\",\"q\",\"r\"],\"X\":[[1,1,0],[0,1,1],[2,0,0]]},"
	                 "\"W_q\":{\"identity\":2},\"W_k\":[[1,0],[0,1],[1,1]],\"W_v\":[[1],[2],[3]],\"scale\":false}");
	Attn *a = compute(l);
	(void)state;

	assert_int_equal(l->cfg.m, 3);
	assert_int_equal(a->head[0].scores.rows, 2);
	assert_int_equal(a->head[0].scores.cols, 3);
	/* K = S·W_k: [[1,1],[1,2],[2,0]]; scores row 1 = q_1 · k_j = [1, 2, 0] */
	assert_true(MAT_AT(a->head[0].scores, 1, 0) == 1 && MAT_AT(a->head[0].scores, 1, 1) == 2 &&
	            MAT_AT(a->head[0].scores, 1, 2) == 0);
	/* V = S·W_v = [3, 5, 2] */
	assert_true(MAT_AT(a->V, 0, 0) == 3 && MAT_AT(a->V, 1, 0) == 5 && MAT_AT(a->V, 2, 0) == 2);
	assert_non_null(attn_matrix(a, AM_S, 0));
	attn_free(a);
	lesson_free(l);
}

/* ------------------------------------------------------------ explain */

static void test_explain_numbers(void **state)
{
	Lesson *l = load(SMALL_HEAD "}");
	Attn *a = compute(l);
	char *err = NULL, *t;
	(void)state;

	/* scores[0][1] = q_0 · k_1 = 1×3 + 2×4 = 11 */
	t = explain_cell(a, AM_SCORES, 0, 0, 1, 1, &err);
	assert_non_null(t);
	assert_true(contains(t, "scores[0][1] = 11"));
	assert_true(contains(t, "1\u00d73 + 2\u00d74"));
	assert_true(contains(t, "query a, key b"));
	free(t);
	/* ASCII only */
	t = explain_cell(a, AM_SCORES, 0, 0, 1, 0, &err);
	assert_non_null(t);
	assert_true(contains(t, "1*3 + 2*4"));
	{
		const unsigned char *p;
		for (p = (const unsigned char *)t; *p; p++)
			assert_true(*p < 0x80 && (*p >= 0x20 || *p == '\n'));
	}
	free(t);
	/* scaled[0][1] = 11 × 1/√2 */
	t = explain_cell(a, AM_SCALED, 0, 0, 1, 0, &err);
	assert_non_null(t);
	assert_true(contains(t, "7.77817"));
	assert_true(contains(t, "11 * 0.707107"));
	assert_true(contains(t, "d_k = 2"));
	free(t);
	/* weights[0][1]: the exps, with max of the row 11/√2 = 7.77817; exp(−6/√2) = 0.0143696 */
	t = explain_cell(a, AM_WEIGHTS, 0, 0, 1, 0, &err);
	assert_non_null(t);
	assert_true(contains(t, "max of row 0 = 7.77817"));
	assert_true(contains(t, "exp(3.53553 - 7.77817) = 0.0143696"));
	free(t);
	/* weighted[2][0] = Σ_j w_2j · v_j[0] */
	t = explain_cell(a, AM_WEIGHTED, 0, 2, 0, 0, &err);
	assert_non_null(t);
	{
		char want[64];
		snprintf(want, sizeof want, "= %.6g\n", MAT_AT(a->head[0].weighted, 2, 0));
		assert_true(contains(t, want));
	}
	free(t);
	/* Q[1][0] = X row 1 · W_q column 0 = 3×1 + 4×0 */
	t = explain_cell(a, AM_Q, 0, 1, 0, 0, &err);
	assert_non_null(t);
	assert_true(contains(t, "3*1 + 4*0"));
	free(t);
	/* a cell that does not exist */
	t = explain_cell(a, AM_SCORES, 0, 3, 0, 1, &err);
	assert_null(t);
	assert_non_null(err);
	assert_true(contains(err, "rows 0..2"));
	free(err);
	err = NULL;
	t = explain_cell(a, AM_W_O, 0, 0, 0, 1, &err);
	assert_null(t);
	assert_non_null(err);
	free(err);
	attn_free(a);
	lesson_free(l);
}

static void test_explain_masked_and_operands(void **state)
{
	Lesson *l = load(SMALL_HEAD ",\"mask\":\"causal\"}");
	Attn *a = compute(l);
	ExplainOperand op[4];
	char *err = NULL, *t;
	int k;
	(void)state;

	t = explain_cell(a, AM_MASKED, 0, 0, 2, 0, &err);
	assert_non_null(t);
	assert_true(contains(t, "query 0 may not see key 2"));
	assert_true(contains(t, "causal"));
	assert_true(contains(t, "-inf"));
	free(t);
	t = explain_cell(a, AM_WEIGHTS, 0, 1, 2, 1, &err);
	assert_non_null(t);
	assert_true(contains(t, "(masked)"));
	free(t);
	k = explain_operands(a, AM_SCORES, 0, 1, 2, op);
	assert_int_equal(k, 2);
	assert_true(op[0].which == AM_Q && op[0].row == 1 && op[0].col == -1);
	assert_true(op[1].which == AM_K && op[1].row == 2 && op[1].col == -1);
	k = explain_operands(a, AM_WEIGHTED, 0, 2, 1, op);
	assert_int_equal(k, 2);
	assert_true(op[0].which == AM_WEIGHTS && op[0].row == 2 && op[0].col == -1);
	assert_true(op[1].which == AM_V && op[1].row == -1 && op[1].col == 1);
	attn_free(a);
	lesson_free(l);
}

static void test_matrix_names(void **state)
{
	int i;
	(void)state;

	for (i = 0; i < AM_COUNT; i++) {
		assert_non_null(matrix_name((AttnMatrix)i));
		assert_int_equal(matrix_find(matrix_name((AttnMatrix)i)), i);
	}
	assert_null(matrix_name(AM_COUNT));
	assert_int_equal(matrix_find("WEIGHTS"), AM_WEIGHTS);
	assert_int_equal(matrix_find("w_q"), AM_W_Q);
	assert_int_equal(matrix_find("nope"), -1);
	assert_true(matrix_per_head(AM_SCORES) && matrix_per_head(AM_WEIGHTED));
	assert_false(matrix_per_head(AM_Q) || matrix_per_head(AM_CONCAT));
	assert_true(matrix_editable(AM_INPUT) && matrix_editable(AM_W_E) && matrix_editable(AM_W_Q));
	assert_false(matrix_editable(AM_Q) || matrix_editable(AM_X) || matrix_editable(AM_WEIGHTS));
}

/* ------------------------------------------------------------ overflow */

/* Numbers past ~1.8e308 are refused with the first cell that overflowed, not shown as NaN. */
static void test_overflow_refused(void **state)
{
	Lesson *l = load("{\"attnviz\":1,\"tokens\":[\"a\",\"b\"],\"X\":[[1e200,1],[1,1]],"
	                 "\"W_q\":[[1e200,0],[0,1]],\"W_k\":{\"identity\":2},\"W_v\":{\"identity\":2}}");
	char *err = NULL;
	Attn *a;

	(void)state;
	a = attn_compute(l, &err);
	assert_null(a);
	assert_non_null(err);
	assert_non_null(strstr(err, "Q[0][0] is +inf"));
	free(err);
	/* a −∞ mask is not an overflow */
	lesson_free(l);
	l = load("{\"attnviz\":1,\"tokens\":[\"a\",\"b\"],\"X\":{\"identity\":2},\"W_q\":{\"identity\":2},"
	         "\"W_k\":{\"identity\":2},\"W_v\":{\"identity\":2},\"mask\":\"causal\"}");
	err = NULL;
	a = attn_compute(l, &err);
	assert_non_null(a);
	assert_null(err);
	attn_free(a);
	lesson_free(l);
}

/* ------------------------------------------------------------ reused memory */

/*
 * The n × m stages get memory that may hold a freed matrix's numbers
 * (mat_alloc_whole): every cell must be written. Each lesson is computed,
 * its matrices filled with NaN and freed, and computed again on that
 * memory: the same bits as the first time, cell for cell.
 */
/*
 * The derived stages are not kept: attn_matrix makes one head's matrix when
 * asked for (in slots that are reused) and attn_cell gives one cell. Both
 * are the textbook definitions, bit for bit, for every head, in an order
 * that reuses every slot several times: scaled = scores × factor, bias =
 * −slope·|i − j|, biased = scaled + bias, masked = biased (or scaled) where
 * visible, else the fill.
 */
static void test_derived_on_request(void **state)
{
	static const char *extra[] = { "\"mask\": \"causal\"", "\"mask\": \"causal\", \"alibi\": true",
		                           "\"mask\": {\"window\": 3}, \"mask_fill\": -7", "\"scale\": 2.5" };
	(void)state;
	for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++) {
		char json[1024];
		snprintf(json, sizeof json,
		         "{\"attnviz\":2,\"X\":{\"random\":\"normal\",\"rows\":9,\"cols\":8,\"seed\":1},\"heads\":4,"
		         "\"W_q\":{\"random\":\"normal\",\"rows\":8,\"cols\":8,\"seed\":2},"
		         "\"W_k\":{\"random\":\"normal\",\"rows\":8,\"cols\":8,\"seed\":3},"
		         "\"W_v\":{\"random\":\"normal\",\"rows\":8,\"cols\":8,\"seed\":4},%s}",
		         extra[k]);
		Lesson *l = load(json);
		Attn *a = compute(l);
		const int alibi = l->cfg.alibi;
		const double fill = l->cfg.mask_fill_inf ? -INFINITY : l->cfg.mask_fill;
		assert_true(attn_derived(AM_SCALED) && attn_derived(AM_MASKED) && !attn_derived(AM_SCORES));
		/* the AttnHead fields stay empty: nothing n × m is kept but scores and weights */
		assert_true(mat_empty(&a->head[0].scaled) && mat_empty(&a->head[0].masked));
		for (int round = 0; round < 2; round++)
			for (int h = 0; h < a->heads; h++)
				for (int w = 0; w < 4; w++) {
					const AttnMatrix which = (const AttnMatrix[]){ AM_MASKED, AM_SCALED, AM_BIASED, AM_BIAS }[w];
					const Mat *m = attn_matrix(a, which, h);
					if (!alibi && (which == AM_BIAS || which == AM_BIASED)) {
						assert_null(m);
						continue;
					}
					assert_non_null(m);
					assert_int_equal(m->rows, 9);
					assert_int_equal(m->cols, 9);
					for (int i = 0; i < 9; i++)
						for (int j = 0; j < 9; j++) {
							const double scaled = MAT_AT(a->head[h].scores, i, j) * a->factor;
							const double bias = alibi ? -a->slopes[h] * fabs((double)(i - j)) : 0.0;
							const double biased = scaled + bias;
							const double want = which == AM_SCALED ? scaled
							                    : which == AM_BIAS ? bias
							                    : which == AM_BIASED ? biased
							                    : !a->visible[i * 9 + j] ? fill
							                    : alibi ? biased : scaled;
							assert_memory_equal(&MAT_AT(*m, i, j), &want, sizeof want);
							const double cell = attn_cell(a, which, h, i, j);
							assert_memory_equal(&cell, &want, sizeof want);
						}
				}
		attn_free(a);
		lesson_free(l);
	}
}

/* The progress function hears of every pass in order, 1 … count, with the stage table's stages. */
static int progress_calls, progress_last, progress_count, progress_bad;
static void progress_note(void *ctx, const Attn *a, Stage st, int index, int count, double elapsed_ms)
{
	(void)ctx;
	progress_bad |= index != progress_last + 1 || (progress_count != 0 && count != progress_count) ||
	                !(stage_present(&a->shape, st) || (stage_kinds[st].flags & SF_ALWAYS)) || elapsed_ms < 0;
	progress_last = index;
	progress_count = count;
	progress_calls++;
}

static void test_progress(void **state)
{
	Lesson *l = load("{\"attnviz\":1,\"X\":{\"random\":\"normal\",\"rows\":5,\"cols\":4,\"seed\":1},"
	                 "\"W_q\":{\"identity\":4},\"W_k\":{\"identity\":4},\"W_v\":{\"identity\":4},\"mask\":\"causal\"}");
	char text[96];
	Attn *a;
	(void)state;

	attn_set_progress(progress_note, NULL);
	a = compute(l);
	attn_set_progress(NULL, NULL);
	assert_false(progress_bad);
	assert_true(progress_calls >= 5);
	assert_int_equal(progress_last, progress_count);
	textfmt_progress(text, sizeof text, a, STAGE_SOFTMAX, 3, 9, 1);
	assert_string_equal(text, "computing\u2026 softmax (3/9)");
	textfmt_progress(text, sizeof text, a, STAGE_SOFTMAX, 3, 9, 0);
	assert_string_equal(text, "computing... softmax (3/9)");
	/* told no more once unset */
	progress_calls = 0;
	attn_free(compute(l));
	assert_int_equal(progress_calls, 0);
	attn_free(a);
	lesson_free(l);
}

static void test_reused_memory(void **state)
{
	static const char *masks[] = {
		"\"causal\"", "\"none\"", "{\"window\": 5}", "\"causal\", \"mask_fill\": 0",
		"[\"causal\", {\"padding\": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
		"1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
		"1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,0,0,0,0,0,0,0,0]}]",
	};
	(void)state;
	for (size_t k = 0; k < sizeof masks / sizeof masks[0]; k++) {
		char json[2048];
		Lesson *l;
		Attn *a, *b;
		char *err = NULL;
		Mat keep[4][2];
		snprintf(json, sizeof json,
		         "{\"attnviz\":1,\"X\":{\"random\":\"normal\",\"rows\":128,\"cols\":8,\"seed\":1},\"heads\":2,"
		         "\"W_q\":{\"random\":\"normal\",\"rows\":8,\"cols\":8,\"seed\":2},"
		         "\"W_k\":{\"random\":\"normal\",\"rows\":8,\"cols\":8,\"seed\":3},"
		         "\"W_v\":{\"random\":\"normal\",\"rows\":8,\"cols\":8,\"seed\":4},\"mask\":%s}",
		         masks[k]);
		l = load(json);
		a = attn_compute(l, &err);
		assert_non_null(a);
		/* every number kept first: scaled and masked are made from the scores when asked for */
		for (int w = 0; w < 4; w++)
			for (int h = 0; h < 2; h++) {
				const AttnMatrix which[4] = { AM_SCORES, AM_SCALED, AM_MASKED, AM_WEIGHTS };
				const Mat *m = attn_matrix(a, which[w], h);
				assert_non_null(m);
				assert_int_equal(mat_copy(&keep[w][h], m), 0);
			}
		for (int w = 0; w < 4; w++)
			for (int h = 0; h < 2; h++) {
				const AttnMatrix which[4] = { AM_SCORES, AM_SCALED, AM_MASKED, AM_WEIGHTS };
				Mat *m = (Mat *)attn_matrix(a, which[w], h);
				for (size_t i = 0; i < (size_t)m->rows * (size_t)m->cols; i++)
					m->a[i] = NAN;
			}
		attn_free(a);
		b = attn_compute(l, &err);
		assert_non_null(b);
		for (int w = 0; w < 4; w++)
			for (int h = 0; h < 2; h++) {
				const AttnMatrix which[4] = { AM_SCORES, AM_SCALED, AM_MASKED, AM_WEIGHTS };
				const Mat *m = attn_matrix(b, which[w], h);
				assert_non_null(m);
				assert_int_equal(memcmp(m->a, keep[w][h].a, (size_t)m->rows * (size_t)m->cols * sizeof(double)), 0);
				mat_free(&keep[w][h]);
			}
		attn_free(b);
		lesson_free(l);
	}
}

/* ------------------------------------------------------------ the default lesson */

static void test_default_lesson(void **state)
{
	char *err = NULL;
	Lesson *l = session_default_lesson(&err);
	Attn *a;
	const double row0[4] = { 5, 2, 1, 2 };
	double sum = 0;
	int j;
	(void)state;

	if (l == NULL)
		print_error("default lesson: %s\n", err ? err : "?");
	free(err);
	assert_non_null(l);
	assert_int_equal(l->cfg.n, 4);
	assert_int_equal(l->cfg.d_model, 3);
	assert_string_equal(l->cfg.tokens[1], "saw");
	a = compute(l);
	/* one-hot inputs, identity keys: scores row i is row i of W_q, at the tokens' columns */
	for (j = 0; j < 4; j++)
		assert_true(MAT_AT(a->head[0].scores, 0, j) == row0[j]);
	/* the unnormalised example b¹ = Σ_j α_1j a_j = [5, 4, 1]: weights sum to 10, not 1 */
	{
		double b[3] = { 0, 0, 0 };
		int c;
		for (j = 0; j < 4; j++)
			for (c = 0; c < 3; c++)
				b[c] += row0[j] * MAT_AT(l->cfg.input, j, c);
		assert_true(b[0] == 5 && b[1] == 4 && b[2] == 1);
	}
	/* scale false: scaled = scores; softmax row 0 */
	assert_true(a->factor == 1.0);
	for (j = 0; j < 4; j++)
		sum += exp(row0[j] - 5);
	for (j = 0; j < 4; j++)
		assert_float_equal(MAT_AT(a->head[0].weights, 0, j), exp(row0[j] - 5) / sum, 1e-15);
	/* the two "saw" rows are the same input, so the same query, scores and weights */
	for (j = 0; j < 4; j++)
		assert_true(MAT_AT(a->head[0].weights, 1, j) == MAT_AT(a->head[0].weights, 3, j));
	attn_free(a);
	lesson_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mat_mul_matches_naive),
		cmocka_unit_test(test_mat_mul_view_plain),
		cmocka_unit_test(test_mat_mul_view_transposed),
		cmocka_unit_test(test_mat_mul_view_causal),
		cmocka_unit_test(test_mat_mul_by_hand),
		cmocka_unit_test(test_mat_basics),
		cmocka_unit_test(test_softmax_extremes),
		cmocka_unit_test(test_softmax_all_masked),
		cmocka_unit_test(test_softmax_values),
		cmocka_unit_test(test_positional),
		cmocka_unit_test(test_prng_reference),
		cmocka_unit_test(test_prng_ranges),
		cmocka_unit_test(test_generated_matrix),
		cmocka_unit_test(test_small_by_hand),
		cmocka_unit_test(test_nonfinite_weight_named),
		cmocka_unit_test(test_scale_factors),
		cmocka_unit_test(test_causal),
		cmocka_unit_test(test_fully_masked_row),
		cmocka_unit_test(test_mask_fill_number),
		cmocka_unit_test(test_additive_by_hand),
		cmocka_unit_test(test_positional_in_lesson),
		cmocka_unit_test(test_cross),
		cmocka_unit_test(test_explain_numbers),
		cmocka_unit_test(test_explain_masked_and_operands),
		cmocka_unit_test(test_matrix_names),
		cmocka_unit_test(test_overflow_refused),
		cmocka_unit_test(test_derived_on_request),
		cmocka_unit_test(test_progress),
		cmocka_unit_test(test_reused_memory),
		cmocka_unit_test(test_default_lesson),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
