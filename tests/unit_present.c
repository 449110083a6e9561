/* unit_present.c: what the teacher's projector relies on (issue 26 §1, §6) —
 * inspect/heatmap.h's rule (numbers up to 16 a side, a heatmap past it; one
 * reduction f down and across, each drawn cell its block's strongest cell,
 * −∞ only when the block is all masked), shared by the exports and the
 * terminal's zoom; and a demo's revealed answer counted as the class's
 * (QUIZ_REVEALED, quiz_class), not as a question the learner skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/session.h"
#include "inspect/heatmap.h"
#include "unit_common.h"

static void test_numbers_rule(void **state)
{
	(void)state;
	assert_int_equal(heat_numbers_shown(HEAT_NUMBERS_AUTO, 16, 16), 1);
	assert_int_equal(heat_numbers_shown(HEAT_NUMBERS_AUTO, 17, 4), 0);
	assert_int_equal(heat_numbers_shown(HEAT_NUMBERS_AUTO, 4, 17), 0);
	assert_int_equal(heat_numbers_shown(HEAT_NUMBERS_ON, 123, 123), 1);
	assert_int_equal(heat_numbers_shown(HEAT_NUMBERS_OFF, 2, 2), 0);
}

static void test_factor(void **state)
{
	(void)state;
	assert_int_equal(heat_factor(10, 10, 48, 48), 1);
	assert_int_equal(heat_factor(123, 123, 48, 48), 3);    /* ⌈123/48⌉: the exports' 48-a-side */
	assert_int_equal(heat_factor(123, 456, 20, 40), 12);   /* the same f both ways: the larger */
	assert_int_equal(heat_factor(5, 5, 0, 0), 5);          /* no room: one cell for all */
}

static double at_of(const void *ctx, int r, int c)
{
	const double *a = ctx;
	return a[r * 4 + c];
}

static void test_block_peak(void **state)
{
	const double ninf = -INFINITY;
	const double a[16] = {
		0.1, -0.9, ninf, ninf,
		0.5, 0.2,  ninf, ninf,
		NAN, NAN,  ninf, 3.0,
		NAN, NAN,  -4.0, 1.0,
	};
	(void)state;
	assert_true(heat_block_peak(at_of, a, 0, 2, 0, 2) == -0.9); /* the strongest by |x|, its sign kept */
	double m = heat_block_peak(at_of, a, 0, 2, 2, 4);
	assert_true(isinf(m) && m < 0);                              /* all masked: −∞ */
	assert_true(isnan(heat_block_peak(at_of, a, 2, 4, 0, 2)));   /* no number: blank */
	assert_true(heat_block_peak(at_of, a, 2, 4, 2, 4) == -4.0); /* masked beside numbers: the numbers */
}

/* The class's answer: Answer: …, its own count; the learner's score untouched. */
static void test_reveal_is_the_class(void **state)
{
	Session s;
	char *err = NULL, *warn = NULL, *fb = NULL;
	(void)state;
	Lesson *l = session_default_lesson(&err);
	assert_non_null(l);
	assert_int_equal(session_init(&s, l, NULL, &err), 0);
	assert_int_equal(session_load(&s, "lessons/mask.json", &err, &warn), 0);
	free(warn);
	assert_int_equal(session_goto_step(&s, 4, &err), 0); /* scale: which keys does row 2 not see */
	assert_true(session_quiz_pending(&s));
	assert_null(session_revealed_answer(&s));
	assert_int_equal(session_reveal(&s, &fb, &err), 0);
	assert_non_null(fb);
	assert_true(strncmp(fb, "Answer: ", 8) == 0);
	free(fb);
	assert_int_equal(s.quiz[s.step], QUIZ_REVEALED);
	assert_int_equal(s.quiz_class, 1);
	assert_int_equal(s.quiz_asked, 0); /* not "quiz 0/1" */
	assert_int_equal(s.quiz_right, 0);
	char *said = session_revealed_answer(&s);
	assert_non_null(said);
	assert_true(strncmp(said, "Answer: 1) ", 11) == 0);
	free(said);
	/* a skip is still the learner's */
	assert_int_equal(session_goto_step(&s, 5, &err), 0);
	assert_int_equal(session_skip(&s, &fb, &err), 0);
	free(fb);
	assert_int_equal(s.quiz[s.step], QUIZ_SKIPPED);
	assert_int_equal(s.quiz_asked, 1);
	assert_int_equal(s.quiz_class, 1);
	assert_null(session_revealed_answer(&s));
	session_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbers_rule),
		cmocka_unit_test(test_factor),
		cmocka_unit_test(test_block_peak),
		cmocka_unit_test(test_reveal_is_the_class),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
