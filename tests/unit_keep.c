/* unit_keep.c: issue 25 §2, a record that is kept — the steps
 * (mask: answer a question, quit; open mask again, n, quit) keep the score
 * earned; a later attempt adds to it (a question keeps the best it ever
 * had); n at an open question asks once, then counts it as skipped; a lesson
 * is finished only with every question answered or skipped; a wrong
 * numeric answer says why at once; a jump to a step shows what walking
 * there shows (§3: the comparison a step turned on). Runs on the shipped lessons/mask.json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/progress.h"
#include "app/session.h"
#include "unit_common.h"
#include "unit_tmpdir.h"

static char path[128];

static void open_mask(Session *s)
{
	char *err = NULL, *warn = NULL;
	Lesson *l = session_default_lesson(&err);
	assert_non_null(l);
	assert_int_equal(session_init(s, l, NULL, &err), 0);
	assert_int_equal(session_load(s, "lessons/mask.json", &err, &warn), 0);
	free(warn);
}

/* A run: load the record, do what run() does in the lesson, keep it, write it. */
static void track(Session *s)
{
	Progress p;
	char *warn = NULL, *err = NULL;
	snprintf(path, sizeof path, "%s/progress.json", dir);
	assert_int_equal(progress_load(&p, path, &warn), 0);
	assert_null(warn);
	assert_true(progress_track(&p, s, &err) >= 0);
	p.unsaved = 1;
	assert_int_equal(progress_flush(&p, &err), 0);
	progress_free(&p);
}

static ProgressLesson record_of(const char *name)
{
	Progress p;
	char *warn = NULL;
	ProgressLesson e = { 0 };
	assert_int_equal(progress_load(&p, path, &warn), 0);
	assert_null(warn);
	const ProgressLesson *f = progress_find(&p, name);
	assert_non_null(f);
	e = *f;
	progress_free(&p);
	return e;
}

static void answer(Session *s, const char *value, int want)
{
	char *feedback = NULL, *err = NULL;
	assert_int_equal(session_answer(s, value, &feedback, &err), want);
	free(feedback);
}

/* The steps: the score earned stays when the lesson is opened again and walked. */
static void test_reopen_keeps_score(void **state)
{
	Session s;
	char *err = NULL, *said = NULL;
	(void)state;
	open_mask(&s);
	assert_int_equal(session_goto_stage(&s, (Stage)stage_find("softmax"), &err), 0);
	answer(&s, "1", 1); /* weights[0][0]: 机 sees only itself */
	track(&s);
	session_free(&s);
	ProgressLesson e = record_of("mask");
	assert_int_equal(e.right, 1);
	assert_int_equal(e.asked, 1);

	open_mask(&s);
	assert_int_equal(session_next_asking(&s, &said, &err), 0); /* step 1 asks nothing */
	assert_null(said);
	track(&s);
	e = record_of("mask");
	assert_int_equal(e.right, 1); /* not erased */
	assert_int_equal(e.asked, 1);
	assert_int_equal(e.step, 1); /* the place: where the learner last was */
	assert_false(e.done);

	/* a later attempt adds: the same question wrong now does not lower it; another one right adds */
	assert_int_equal(session_goto_stage(&s, (Stage)stage_find("softmax"), &err), 0);
	answer(&s, "0.5", 0);
	assert_int_equal(session_goto_step(&s, 10, &err), 0);
	answer(&s, "2", 1);
	track(&s);
	e = record_of("mask");
	assert_int_equal(e.right, 2);
	assert_int_equal(e.asked, 2);
	assert_int_equal(e.step, 10);
	session_free(&s);
}

/* n at an open question asks once, then counts it as skipped; finished only with none open. */
static void test_n_asks_then_skips(void **state)
{
	Session s;
	char *err = NULL, *said = NULL;
	(void)state;
	open_mask(&s);
	assert_int_equal(session_goto_step(&s, 4, &err), 0);
	assert_true(session_quiz_pending(&s));
	assert_int_equal(session_next_asking(&s, &said, &err), 1);
	assert_non_null(strstr(said, "n again to skip it"));
	free(said);
	assert_int_equal(s.step, 4);
	assert_int_equal(session_next_asking(&s, &said, &err), 0);
	assert_non_null(strstr(said, "Skipped"));
	free(said);
	assert_int_equal(s.step, 5);
	assert_int_equal(s.quiz[4], QUIZ_SKIPPED);
	assert_int_equal(s.quiz_asked, 1);

	/* the last step reached with questions open: not finished */
	assert_int_equal(session_goto_step(&s, s.nwalk - 1, &err), 0);
	assert_int_equal(session_questions_open(&s), 4);
	track(&s);
	ProgressLesson e = record_of("mask");
	assert_false(e.done);
	/* answering or skipping the rest (elsewhere in the lesson) finishes it */
	for (int k = 0; k < s.nwalk; k++)
		if (s.walk[k].has_quiz && s.quiz[k] == QUIZ_OPEN) {
			assert_int_equal(session_goto_step(&s, k, &err), 0);
			assert_int_equal(session_skip(&s, &said, &err), 0);
			free(said);
		}
	assert_int_equal(session_questions_open(&s), 0);
	track(&s);
	e = record_of("mask");
	assert_true(e.done);
	assert_int_equal(e.asked, 5);
	session_free(&s);
}

/* A wrong number says why at once: explain's last line. */
static void test_wrong_says_why(void **state)
{
	Session s;
	char *err = NULL, *said = NULL;
	(void)state;
	open_mask(&s);
	assert_int_equal(session_goto_stage(&s, (Stage)stage_find("softmax"), &err), 0);
	assert_int_equal(session_answer(&s, "0.5", &said, &err), 0);
	assert_non_null(strstr(said, "Why: weight = 1 / 1 = 1"));
	free(said);
	session_free(&s);
}

/* Issue 25 §3: :step N shows what walking there shows: mask.json's comparison, turned on at step 6, at step 8 too. */
static void test_jump_as_walked(void **state)
{
	Session s;
	char *err = NULL;
	(void)state;
	open_mask(&s);
	assert_non_null(s.compare_attn);
	assert_int_equal(session_goto_step(&s, 7, &err), 0);
	assert_true(s.compare_on);
	assert_int_equal(session_goto_step(&s, 2, &err), 0);
	assert_false(s.compare_on);
	assert_int_equal(session_goto_step(&s, s.nwalk - 1, &err), 0);
	assert_true(s.compare_on);
	session_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reopen_keeps_score, setup, teardown),
		cmocka_unit_test_setup_teardown(test_n_asks_then_skips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_says_why, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jump_as_walked, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
