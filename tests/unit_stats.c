/* unit_stats.c: src/inspect/stats.c against numbers computed independently, the
 * session's compare variant (computed, edited with the lesson, refused
 * edits), the compare and stats commands, the next lesson in the teaching
 * order and the quiz feedback that quotes the choices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/attention.h"
#include "cmd/cmd.h"
#include "lesson/lesson.h"
#include "app/session.h"
#include "inspect/stats.h"
#include "unit_common.h"

/* ------------------------------------------------------------ helpers */

/* The last message a command produced. */
typedef struct Rec {
	CmdMsg kind;
	char text[4096];
} Rec;

static void rec_message(void *ctx, CmdMsg kind, const char *title, const char *text)
{
	Rec *r = ctx;
	r->kind = kind;
	snprintf(r->text, sizeof r->text, "%s%s%s", title ? title : "", title ? "\n" : "", text);
}

static int run(Session *s, Rec *r, const char *line)
{
	CmdOut out = { r, rec_message, NULL, NULL, 0, 1, 0 };
	r->text[0] = '\0';
	return cmd_run(s, line, &out);
}

static void assert_has(const char *text, const char *want)
{
	if (strstr(text, want) == NULL)
		print_error("wanted \"%s\" in:\n%s\n", want, text);
	assert_non_null(strstr(text, want));
}

/* ------------------------------------------------------------ stats.c */

/*
 * The expected numbers were computed once with NumPy (/usr/bin/python3):
 *   x = np.array([1.0, 2.0, 4.0, 0.5, 3.0]); x.mean(), x.std(ddof=1)
 *     -> 2.1, 1.4317821063276355
 *   y = np.array([[0.1, -2.5, 3.25], [7.0, 1e-3, -0.75]])
 *   y.mean(), y.std(ddof=1), y.min(), y.max(), y.sum(axis=1)
 *     -> 1.1835, 3.4053184138931853, -2.5, 7.0, [0.85, 6.251]
 */
static void test_matrix_stats(void **state)
{
	double a[6] = { 1.0, 2.0, -INFINITY, 4.0, 0.5, 3.0 };
	double b[6] = { 0.1, -2.5, 3.25, 7.0, 1e-3, -0.75 };
	Mat m = { 2, 3, a }, y = { 2, 3, b };
	MatStats st;
	(void)state;

	stats_matrix(&m, &st);                       /* the −∞ cell is left out */
	assert_int_equal(st.finite, 5);
	assert_true(fabs(st.mean - 2.1) < 1e-15);
	assert_true(fabs(st.std - 1.4317821063276355) < 1e-15);
	assert_true(st.min == 0.5 && st.max == 4.0);

	stats_matrix(&y, &st);
	assert_int_equal(st.finite, 6);
	assert_true(fabs(st.mean - 1.1835) < 1e-15);
	assert_true(fabs(st.std - 3.4053184138931853) < 1e-14);
	assert_true(st.min == -2.5 && st.max == 7.0);
}

static void test_matrix_stats_degenerate(void **state)
{
	double a[3] = { -INFINITY, -INFINITY, 2.5 }, z[2] = { -INFINITY, -INFINITY };
	Mat one = { 1, 3, a }, none = { 2, 1, z }, empty = { 0, 0, NULL };
	MatStats st;
	(void)state;

	stats_matrix(&one, &st);                     /* one finite cell: std 0, not NaN */
	assert_int_equal(st.finite, 1);
	assert_true(st.mean == 2.5 && st.std == 0.0 && st.min == 2.5 && st.max == 2.5);
	stats_matrix(&none, &st);                    /* a fully masked row: all zero, nothing infinite */
	assert_int_equal(st.finite, 0);
	assert_true(st.mean == 0.0 && st.std == 0.0 && st.min == 0.0 && st.max == 0.0);
	stats_matrix(&empty, &st);
	assert_int_equal(st.finite, 0);
}

static void test_row_sums(void **state)
{
	double b[6] = { 0.1, -2.5, 3.25, 7.0, 1e-3, -0.75 }, sums[2];
	Mat y = { 2, 3, b };
	(void)state;

	stats_row_sums(&y, sums);
	assert_true(fabs(sums[0] - 0.85) < 1e-15);
	assert_true(fabs(sums[1] - 6.251) < 1e-15);
}

/* Weights sum to 1 per row, and to 0 for a row with every key masked. */
static void test_row_sums_of_weights(void **state)
{
	Session s;
	double sums[3];
	(void)state;

	start_session(&s, "{\"attnviz\": 1, \"tokens\": [\"a\", \"b\", \"c\"], \"X\": [[1, 0], [0, 1], [1, 1]],"
	                  " \"W_q\": [[1, 2], [3, 4]], \"W_k\": [[1, 0], [0, 1]], \"W_v\": [[1, 0], [0, 1]],"
	                  " \"mask\": [[1, 0, 0], [0, 0, 0], [1, 1, 1]]}");
	stats_row_sums(&s.attn->head[0].weights, sums);
	assert_true(fabs(sums[0] - 1.0) < 1e-15);
	assert_true(sums[1] == 0.0);
	assert_true(fabs(sums[2] - 1.0) < 1e-15);
	session_free(&s);
}

#define PARAMS_LESSON(heads, extra) \
	"{\"attnviz\": 1, \"tokens\": [\"a\", \"b\"], \"X\": [[1, 0, 0], [0, 1, 0]], \"heads\": " heads "," \
	" \"W_q\": {\"random\": \"normal\", \"rows\": 3, \"cols\": 4}, \"W_k\": {\"random\": \"normal\", \"rows\": 3, \"cols\": 4}," \
	" \"W_v\": {\"random\": \"normal\", \"rows\": 3, \"cols\": 4}" extra "}"

/* 3·4 + 3·4 + 3·4 (+ 4·3 for W_o, + 4 for w_e), whatever the heads. */
static void test_param_count(void **state)
{
	static const char *const lessons[] = {
		PARAMS_LESSON("1", ""), PARAMS_LESSON("2", ""), PARAMS_LESSON("4", ""),
		PARAMS_LESSON("1", ", \"W_o\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 3}"),
		PARAMS_LESSON("2", ", \"W_o\": {\"random\": \"normal\", \"rows\": 4, \"cols\": 3}"),
		PARAMS_LESSON("2", ", \"score\": \"additive\", \"w_e\": [1, 2, 3, 4]"),
	};
	static const long want[] = { 36, 36, 36, 48, 48, 40 };
	size_t i;
	(void)state;

	for (i = 0; i < sizeof want / sizeof want[0]; i++) {
		Lesson *l = load(lessons[i]);
		assert_int_equal(stats_param_count(&l->cfg, &l->lp), want[i]);
		lesson_free(l);
	}
}

static void test_cell_differs(void **state)
{
	double a[4] = { 1.0, -INFINITY, 0.5, 1e-13 }, b[4] = { 1.0 + 1e-12, -INFINITY, 0.0, 0.0 };
	double c[4] = { 1.0, 0.0, 0.5, -INFINITY };
	Mat A = { 2, 2, a }, B = { 2, 2, b }, C = { 2, 2, c }, wide = { 1, 4, a };
	(void)state;

	assert_false(stats_cell_differs(&A, &B, 0, 0, 1e-9, 0.0));  /* within rtol */
	assert_true(stats_cell_differs(&A, &B, 0, 0, 0.0, 0.0));    /* exact */
	assert_false(stats_cell_differs(&A, &B, 0, 1, 0.0, 0.0));   /* −∞ meets −∞ */
	assert_true(stats_cell_differs(&A, &C, 0, 1, 1e-9, 1e-12)); /* −∞ against 0 */
	assert_true(stats_cell_differs(&C, &A, 1, 1, 1e-9, 1e-12)); /* and the other way */
	assert_true(stats_cell_differs(&A, &B, 1, 0, 1e-9, 1e-12)); /* 0.5 against 0 */
	assert_false(stats_cell_differs(&A, &B, 1, 1, 0.0, 1e-12)); /* within atol */
	/* shapes differ (a prefix of the tokens): the cells both have are compared, the others are not */
	double p[6] = { 1.0, -INFINITY, 0.5, 1e-13, 7.0, 8.0 };
	Mat P = { 3, 2, p };
	assert_false(stats_cell_differs(&A, &P, 0, 0, 1e-9, 1e-12));
	assert_false(stats_cell_differs(&P, &A, 1, 1, 1e-9, 1e-12));
	assert_false(stats_cell_differs(&P, &A, 2, 0, 1e-9, 1e-12)); /* row 2 is only in P */
	assert_true(stats_cell_differs(&P, &B, 1, 0, 1e-9, 1e-12));  /* 0.5 against 0, in both */
	assert_false(stats_cell_differs(&A, &wide, 0, 0, 1e-9, 1e-12));
	char buf[64];
	assert_string_equal(stats_only_in(&P, &A, buf, sizeof buf), "row 2");
	assert_string_equal(stats_only_in(&A, &P, buf, sizeof buf), "");
	Mat big = { 5, 4, NULL };
	assert_string_equal(stats_only_in(&big, &A, buf, sizeof buf), "rows 2-4, columns 2-3");
	assert_string_equal(stats_only_in(&wide, &A, buf, sizeof buf), "columns 2-3");
}

/* ------------------------------------------------------------ compare in the session */

#define CMP_LESSON \
	"{\"attnviz\": 1, \"tokens\": [\"a\", \"b\", \"c\"], \"X\": [[1, 0], [0, 1], [1, 1]]," \
	" \"W_q\": [[1, 2], [3, 4]], \"W_k\": [[1, 0], [0, 1]], \"W_v\": [[1, 0], [0, 1]], \"mask\": \"causal\"," \
	" \"compare\": {\"label\": {\"en\": \"unscaled\", \"zh\": \"不缩放\"}, \"scale\": false}}"

static void test_compare_computed_and_edited(void **state)
{
	Session s;
	Rec r;
	(void)state;

	start_session(&s, CMP_LESSON);
	assert_non_null(s.compare_attn);
	assert_ptr_equal(s.compare_attn->top, s.lesson->compare);
	assert_true(s.compare_attn->factor == 1.0);
	assert_true(fabs(s.attn->factor - 1.0 / sqrt(2.0)) < 1e-15);
	assert_int_equal(s.compare_on, 0);

	assert_int_equal(run(&s, &r, "compare on"), 0);
	assert_int_equal(s.compare_on, 1);
	assert_has(r.text, "unscaled");
	assert_int_equal(run(&s, &r, "compare maybe"), -1);
	assert_has(r.text, "usage: compare on|off");

	/* an edit applies to both, and compare stays on */
	assert_int_equal(run(&s, &r, "set W_q[0][0] 9"), 0);
	assert_true(MAT_AT(s.lesson->lp.W_q, 0, 0) == 9.0);
	assert_true(MAT_AT(s.lesson->compare->lp.W_q, 0, 0) == 9.0);
	assert_ptr_equal(s.compare_attn->top, s.lesson->compare);
	assert_true(MAT_AT(s.compare_attn->Q, 0, 0) == 9.0);        /* X[0] = [1, 0] */
	assert_true(MAT_AT(s.compare_attn->head[0].scores, 0, 0) == 9.0);
	assert_true(s.compare_attn->factor == 1.0);                   /* the variant's own setting */
	assert_int_equal(s.compare_on, 1);

	assert_int_equal(run(&s, &r, "mask none"), 0);
	assert_int_equal(s.lesson->compare->cfg.mask, MASK_NONE);
	assert_int_equal(run(&s, &r, "mask padding 1,0,1"), 0);      /* copied, not moved, into both */
	assert_int_equal(s.lesson->compare->cfg.mask, MASK_PADDING);
	assert_true(MAT_AT(s.lesson->compare->cfg.mask_matrix, 0, 1) == 0.0);
	assert_true(MAT_AT(s.lesson->cfg.mask_matrix, 0, 2) == 1.0);
	assert_int_equal(run(&s, &r, "heads 2"), 0);
	assert_int_equal(s.compare_attn->heads, 2);

	assert_int_equal(run(&s, &r, "compare off"), 0);
	assert_int_equal(s.compare_on, 0);
	session_free(&s);
}

static int edit_needs_three(Lesson *l, void *arg, char **err)
{
	(void)arg;
	if (l->cfg.n < 3) {
		*err = strdup("only 2 tokens here");
		return -1;
	}
	MAT_AT(l->cfg.input, 2, 0) = 5.0;
	return 0;
}

/* A variant with fewer tokens (prefix.json) refuses an edit of a row it lacks: so does the session. */
static void test_compare_refuses(void **state)
{
	Session s;
	Rec r;
	char *err = NULL;
	(void)state;

	start_session(&s, "{\"attnviz\": 1, \"tokens\": [\"a\", \"b\", \"c\"], \"X\": [[1, 0], [0, 1], [1, 1]],"
	                  " \"W_q\": [[1, 2], [3, 4]], \"W_k\": [[1, 0], [0, 1]], \"W_v\": [[1, 0], [0, 1]], \"mask\": \"causal\","
	                  " \"compare\": {\"label\": \"prefix\", \"tokens\": [\"a\", \"b\"], \"X\": [[1, 0], [0, 1]]}}");
	assert_int_equal(session_edit(&s, edit_needs_three, NULL, &err), -1);
	assert_string_equal(err, "compare: only 2 tokens here");
	free(err);
	assert_true(MAT_AT(s.lesson->cfg.input, 2, 0) == 1.0);           /* nothing changed */
	assert_null(s.prev_lesson);

	assert_int_equal(run(&s, &r, "set input[2][0] 7"), -1);
	assert_has(r.text, "compare: input[2][0] is outside");
	assert_int_equal(run(&s, &r, "mask padding 1,1,0"), -1);     /* 3 keys against the variant's 2 */
	assert_has(r.text, "compare");
	assert_int_equal(s.lesson->cfg.mask, MASK_CAUSAL);
	assert_int_equal(run(&s, &r, "set input[1][0] 7"), 0);       /* a row both have */
	assert_true(MAT_AT(s.lesson->compare->cfg.input, 1, 0) == 7.0);
	session_free(&s);
}

static void test_compare_absent(void **state)
{
	Session s;
	Rec r;
	(void)state;

	start_session(&s, PARAMS_LESSON("2", ""));
	assert_null(s.compare_attn);
	assert_int_equal(run(&s, &r, "compare on"), -1);
	assert_has(r.text, "this lesson has no compare variant");
	assert_int_equal(s.compare_on, 0);
	session_free(&s);
}

/* Loading a lesson computes its variant and turns compare off. */
static void test_compare_reset_on_load(void **state)
{
	Session s;
	Rec r;
	(void)state;

	start_session(&s, CMP_LESSON);
	assert_int_equal(run(&s, &r, "compare on"), 0);
	assert_int_equal(run(&s, &r, "load lessons/prefix.json"), 0);
	assert_int_equal(s.compare_on, 0);
	assert_non_null(s.compare_attn);
	assert_int_equal(attn_config(s.compare_attn)->n, 3);
	assert_int_equal(run(&s, &r, "load lessons/cross.json"), 0);
	assert_null(s.compare_attn);
	session_free(&s);
}

/* ------------------------------------------------------------ the stats command */

static void test_stats_command(void **state)
{
	Session s;
	Rec r;
	(void)state;

	start_session(&s, CMP_LESSON);
	assert_int_equal(run(&s, &r, "stats params"), 0);
	assert_has(r.text, "parameters: 12 (W_q, W_k, W_v)");
	assert_has(r.text, "the same for any number of heads");
	assert_int_equal(run(&s, &r, "stats weights"), 0);
	assert_int_equal(r.kind, MSG_TEXT);
	assert_has(r.text, "stats: weights");
	assert_has(r.text, "row sums");
	assert_has(r.text, "  2 c  1\n");
	/* Q = [[1,2],[3,4],[4,6]], scores = Q·Xᵀ = [[1,2,3],[3,4,7],[4,6,10]]; causal: 6 finite, ÷√2 */
	assert_int_equal(run(&s, &r, "stats masked"), 0);
	assert_has(r.text, "(6 finite of 9 cells)");
	assert_has(r.text, "min 0.707107  max 7.07107");
	assert_int_equal(run(&s, &r, "stats scores"), 0);
	assert_has(r.text, "min 1  max 10");
	assert_null(strstr(r.text, "compare ("));
	assert_int_equal(run(&s, &r, "compare on"), 0);
	assert_int_equal(run(&s, &r, "stats scaled"), 0);
	assert_has(r.text, "compare (unscaled): mean");
	assert_int_equal(run(&s, &r, "stats zzz"), -1);
	assert_has(r.text, "unknown matrix");
	assert_int_equal(run(&s, &r, "stats weights 1"), -1);
	assert_int_equal(run(&s, &r, "stats params 1"), -1);
	session_free(&s);
}

/* ------------------------------------------------------------ next lesson */

static void test_next_lesson(void **state)
{
	Session s;
	(void)state;

	start_session(&s, CMP_LESSON);
	assert_string_equal(session_next_lesson(&s), "dot");            /* built-in: selfattn */
	s.source = strdup("lessons/mask.json");
	assert_string_equal(session_next_lesson(&s), "padding");
	free(s.source);
	s.source = strdup("/somewhere/else/positional.json");
	assert_string_equal(session_next_lesson(&s), "bug");
	free(s.source);
	s.source = strdup("lessons/bug.json");                          /* then the block lessons */
	assert_string_equal(session_next_lesson(&s), "block");
	free(s.source);
	s.source = strdup("lessons/rmsnorm.json");                      /* then the encoder–decoder */
	assert_string_equal(session_next_lesson(&s), "encdec");
	free(s.source);
	s.source = strdup("lessons/encdec.json");                       /* then the backward lessons */
	assert_string_equal(session_next_lesson(&s), "gradient");
	free(s.source);
	s.source = strdup("lessons/learn.json");                        /* then modern attention */
	assert_string_equal(session_next_lesson(&s), "rope");
	free(s.source);
	s.source = strdup("lessons/flash.json");
	assert_string_equal(session_next_lesson(&s), "llama");
	free(s.source);
	s.source = strdup("lessons/llama.json");                        /* then the heads of trained models */
	assert_string_equal(session_next_lesson(&s), "heads");
	free(s.source);
	s.source = strdup("lessons/heads.json");
	assert_string_equal(session_next_lesson(&s), "induction");
	free(s.source);
	s.source = strdup("lessons/induction.json");
	assert_string_equal(session_next_lesson(&s), "sink");
	free(s.source);
	s.source = strdup("lessons/sink.json");
	assert_string_equal(session_next_lesson(&s), "nexttoken");
	free(s.source);
	s.source = strdup("lessons/nexttoken.json");                    /* then issue 23's variants */
	assert_string_equal(session_next_lesson(&s), "qknorm");
	free(s.source);
	s.source = strdup("lessons/qknorm.json");
	assert_string_equal(session_next_lesson(&s), "softcap");
	free(s.source);
	s.source = strdup("lessons/sinks.json");                        /* then StreamingLLM's cache */
	assert_string_equal(session_next_lesson(&s), "streaming");
	free(s.source);
	s.source = strdup("lessons/streaming.json");                    /* then local and global layers */
	assert_string_equal(session_next_lesson(&s), "localglobal");
	free(s.source);
	s.source = strdup("lessons/localglobal.json");                  /* then issue 24's */
	assert_string_equal(session_next_lesson(&s), "mla");
	free(s.source);
	s.source = strdup("lessons/mla.json");                          /* then DeepSeek-V3.2's sparse attention */
	assert_string_equal(session_next_lesson(&s), "sparse");
	free(s.source);
	s.source = strdup("lessons/sparse.json");
	assert_string_equal(session_next_lesson(&s), "linear");
	free(s.source);
	s.source = strdup("lessons/linear.json");
	assert_string_equal(session_next_lesson(&s), "hybrid");
	free(s.source);
	s.source = strdup("lessons/hybrid.json");
	assert_string_equal(session_next_lesson(&s), "diffattn");
	free(s.source);
	s.source = strdup("lessons/diffattn.json");
	assert_string_equal(session_next_lesson(&s), "gated");
	free(s.source);
	s.source = strdup("lessons/gated.json");
	assert_string_equal(session_next_lesson(&s), "moe");
	free(s.source);
	s.source = strdup("lessons/moe.json");
	assert_string_equal(session_next_lesson(&s), "modern");
	free(s.source);
	s.source = strdup("lessons/modern.json");                       /* the last one */
	assert_null(session_next_lesson(&s));
	free(s.source);
	s.source = strdup("mylesson.json");
	assert_null(session_next_lesson(&s));
	free(s.source);
	s.source = strdup("dotty.json");                                /* not a prefix match */
	assert_null(session_next_lesson(&s));
	session_free(&s);
	assert_string_equal(session_lesson_order[0], "selfattn");
}

/* ------------------------------------------------------------ quiz feedback */

#define QUIZ_LESSON \
	"{\"attnviz\": 1, \"tokens\": [\"a\", \"b\"], \"X\": [[1, 0], [0, 1]], \"W_q\": {\"identity\": 2}," \
	" \"W_k\": {\"identity\": 2}, \"W_v\": {\"identity\": 2}, \"steps\": [" \
	" {\"stage\": \"softmax\", \"quiz\": {\"question\": \"How much?\"," \
	"   \"choices\": [{\"en\": \"about half.\", \"zh\": \"一半\"}, \"about nine tenths\", \"bell\\u0007\"], \"answer\": 1}}," \
	" {\"stage\": \"softmax\", \"quiz\": {\"question\": \"Again?\", \"choices\": [\"yes\", \"no\"], \"answer\": 0}}," \
	" {\"stage\": \"softmax\", \"quiz\": {\"question\": \"Skip me\", \"choices\": [\"x\", \"bell\\u0007\"], \"answer\": 1}}]}"

static void test_choice_feedback(void **state)
{
	Session s;
	char *fb = NULL, *err = NULL;
	(void)state;

	start_session(&s, QUIZ_LESSON);
	assert_int_equal(session_answer(&s, "1", &fb, &err), 0);
	assert_string_equal(fb, "Not quite: you chose 1) about half; the answer is 2) about nine tenths.");
	free(fb);
	assert_int_equal(session_next(&s, &err), 0);
	assert_int_equal(session_answer(&s, "a", &fb, &err), 1);
	assert_string_equal(fb, "Right: 1) yes.");
	free(fb);
	assert_int_equal(session_next(&s, &err), 0);
	assert_int_equal(session_skip(&s, &fb, &err), 0);
	assert_string_equal(fb, "Skipped: the answer is 2) bell\\x07.");  /* escaped */
	free(fb);
	session_free(&s);

	start_session(&s, QUIZ_LESSON);
	strcpy(s.lang, "zh");
	assert_int_equal(session_answer(&s, "1", &fb, &err), 0);
	assert_string_equal(fb, "Not quite: you chose 1) 一半; the answer is 2) about nine tenths.");
	free(fb);
	session_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix_stats),
		cmocka_unit_test(test_matrix_stats_degenerate),
		cmocka_unit_test(test_row_sums),
		cmocka_unit_test(test_row_sums_of_weights),
		cmocka_unit_test(test_param_count),
		cmocka_unit_test(test_cell_differs),
		cmocka_unit_test(test_compare_computed_and_edited),
		cmocka_unit_test(test_compare_refuses),
		cmocka_unit_test(test_compare_absent),
		cmocka_unit_test(test_compare_reset_on_load),
		cmocka_unit_test(test_stats_command),
		cmocka_unit_test(test_next_lesson),
		cmocka_unit_test(test_choice_feedback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
