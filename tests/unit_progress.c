/* unit_progress.c: progress.h — a record survives a save and a load, a lesson
 * is finished at its last step, the course's end is said once, a damaged or
 * foreign file is set aside and reported (never fatal), the path follows
 * XDG_STATE_HOME, and the marks :lessons shows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/progress.h"
#include "base/paths.h"
#include "unit_common.h"

static char dir[64];
static char path[256];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/attnviz-unit-progress.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	/* a directory that does not exist yet: save makes it */
	snprintf(path, sizeof path, "%s/state/attnviz/progress.json", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[160];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *text)
{
	char d[300];
	snprintf(d, sizeof d, "%s/state", dir);
	mkdir(d, 0700);
	snprintf(d, sizeof d, "%s/state/attnviz", dir);
	mkdir(d, 0700);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_first_run_is_empty(void **state)
{
	Progress p;
	char *warn = NULL;
	(void)state;
	assert_int_equal(progress_load(&p, path, &warn), 0);
	assert_null(warn);
	assert_int_equal(p.n, 0);
	assert_string_equal(p.last, "");
	assert_string_equal(p.path, path);
	progress_free(&p);
}

static void test_save_and_load(void **state)
{
	Progress p, q;
	char *warn = NULL, *err = NULL;
	(void)state;
	assert_int_equal(progress_load(&p, path, &warn), 0);
	assert_int_equal(progress_note(&p, "selfattn", 6, 7, 2, 3) & PROGRESS_CHANGED, PROGRESS_CHANGED);
	assert_int_equal(progress_note(&p, "mask", 2, 8, 1, 1), PROGRESS_CHANGED);
	/* the same place again: nothing to write */
	assert_int_equal(progress_note(&p, "mask", 2, 8, 1, 1), 0);
	assert_int_equal(progress_save(&p, &err), 0);
	assert_null(err);
	assert_int_equal(hidden_files_in(dir), 0);
	progress_free(&p);

	assert_int_equal(progress_load(&q, path, &warn), 0);
	assert_null(warn);
	assert_int_equal(q.n, 2);
	assert_string_equal(q.last, "mask");
	const ProgressLesson *e = progress_find(&q, "selfattn");
	assert_non_null(e);
	assert_true(e->done);
	assert_int_equal(e->right, 2);
	assert_int_equal(e->asked, 3);
	e = progress_find(&q, "mask");
	assert_non_null(e);
	assert_false(e->done);
	assert_int_equal(e->step, 2);
	assert_int_equal(e->steps, 8);
	assert_null(progress_find(&q, "dot"));
	progress_free(&q);
}

/* Finished stays finished when the learner goes back to step 1 */
/* A step's move inside a lesson is noted, not written (a keypress is no file write); progress_flush writes it. */
static void test_move_then_flush(void **state)
{
	Progress p, q;
	char *warn = NULL, *err = NULL;
	(void)state;
	assert_int_equal(progress_load(&p, path, &warn), 0);
	assert_int_equal(progress_note(&p, "mask", 2, 8, 1, 1), PROGRESS_CHANGED);
	assert_int_equal(progress_save(&p, &err), 0);
	assert_int_equal(progress_note(&p, "mask", 3, 8, 1, 1), PROGRESS_MOVED);
	assert_int_equal(progress_note(&p, "mask", 3, 8, 2, 2), PROGRESS_CHANGED); /* a question answered is written */
	assert_int_equal(progress_note(&p, "mask", 4, 8, 2, 2), PROGRESS_MOVED);
	p.unsaved = 1; /* as progress_track notes it */
	assert_int_equal(progress_flush(&p, &err), 0);
	assert_int_equal(p.unsaved, 0);
	progress_free(&p);
	assert_int_equal(progress_load(&q, path, &warn), 0);
	assert_int_equal(progress_find(&q, "mask")->step, 4);
	progress_free(&q);
}

static void test_done_stays(void **state)
{
	Progress p;
	char *warn = NULL;
	(void)state;
	progress_load(&p, path, &warn);
	progress_note(&p, "dot", 4, 5, 0, 0);
	progress_note(&p, "dot", 0, 5, 0, 0);
	assert_true(progress_find(&p, "dot")->done);
	assert_int_equal(progress_find(&p, "dot")->step, 0);
	progress_free(&p);
}

static void test_course_done_once(void **state)
{
	Progress p;
	char *warn = NULL;
	int last = 0;
	(void)state;
	progress_load(&p, path, &warn);
	while (session_lesson_order[last + 1] != NULL)
		last++;
	assert_int_equal(progress_note(&p, session_lesson_order[0], 2, 3, 0, 0) & PROGRESS_COURSE_DONE, 0);
	assert_int_equal(progress_note(&p, session_lesson_order[last], 1, 3, 0, 0) & PROGRESS_COURSE_DONE, 0);
	assert_int_equal(progress_note(&p, session_lesson_order[last], 2, 3, 0, 0) & PROGRESS_COURSE_DONE,
	                 PROGRESS_COURSE_DONE);
	assert_int_equal(progress_note(&p, session_lesson_order[last], 2, 3, 1, 1) & PROGRESS_COURSE_DONE, 0);
	char *r = progress_report(&p, 1);
	assert_non_null(r);
	assert_non_null(strstr(r, "2 of "));
	assert_non_null(strstr(r, "\u2713"));
	free(r);
	progress_free(&p);
}

static void check_damaged(const char *text)
{
	Progress p;
	char *warn = NULL, aside[300];
	struct stat st;

	put(text);
	assert_int_equal(progress_load(&p, path, &warn), 0);
	assert_non_null(warn);
	assert_non_null(strstr(warn, "damaged"));
	assert_non_null(strstr(warn, "set aside"));
	assert_int_equal(p.n, 0);
	snprintf(aside, sizeof aside, "%s.damaged", path);
	assert_int_equal(stat(aside, &st), 0);
	assert_int_not_equal(stat(path, &st), 0);
	free(warn);
	progress_free(&p);
	/* said once: the next run starts afresh without a word */
	assert_int_equal(progress_load(&p, path, &warn), 0);
	assert_null(warn);
	progress_free(&p);
}

static void test_damaged(void **state)
{
	(void)state;
	check_damaged("{\"version\": 1, \"lessons\": {\"mask\": ");
	check_damaged("[1, 2, 3]");
	check_damaged("{\"version\": 7}");
	check_damaged("{\"version\": 1, \"last\": 3}");
	check_damaged("{\"version\": 1, \"lessons\": {\"mask\": {\"done\": 1, \"step\": 0, \"steps\": 2, \"right\": 0, \"asked\": 0}}}");
	check_damaged("{\"version\": 1, \"lessons\": {\"mask\": {\"done\": true, \"step\": -1, \"steps\": 2, \"right\": 0, \"asked\": 0}}}");
	check_damaged("{\"version\": 1, \"lessons\": {\"mask\": {\"done\": true, \"step\": 0, \"steps\": 2, \"right\": 3, \"asked\": 1}}}");
}

/* Two sessions at once (issue 27, finding 9): each writes merged with the file, so neither loses the other's lessons. */
static void test_two_sessions(void **state)
{
	Progress a, b, c;
	char *warn = NULL, *err = NULL;
	(void)state;
	put("{\"version\": 1, \"last\": \"mask\", \"lessons\": {\"mask\": "
	    "{\"done\": false, \"step\": 2, \"steps\": 8, \"right\": 0, \"asked\": 0}}}");
	assert_int_equal(progress_load(&a, path, &warn), 0);
	assert_int_equal(progress_load(&b, path, &warn), 0);
	progress_note(&a, "dot", 4, 5, 0, 0);
	assert_int_equal(progress_save(&a, &err), 0);
	progress_note(&b, "mask", 5, 8, 1, 1);
	progress_note(&b, "softmax", 3, 4, 0, 0);
	assert_int_equal(progress_save(&b, &err), 0);
	/* a writes again: it only read mask, so b's step 5 stays */
	progress_note(&a, "dot", 4, 5, 1, 1);
	assert_int_equal(progress_save(&a, &err), 0);
	assert_int_equal(progress_load(&c, path, &warn), 0);
	assert_null(warn);
	assert_non_null(progress_find(&c, "dot"));
	assert_true(progress_find(&c, "dot")->done);
	assert_int_equal(progress_find(&c, "dot")->right, 1);
	assert_non_null(progress_find(&c, "softmax"));
	assert_true(progress_find(&c, "softmax")->done);
	assert_int_equal(progress_find(&c, "mask")->step, 5);
	assert_string_equal(c.last, "dot");
	progress_free(&a);
	progress_free(&b);
	progress_free(&c);
}

/* A state folder that cannot be made: the real reason, not ENOENT from the folder under it (issue 27, finding 11). */
static void test_unwritable_folder(void **state)
{
	Progress p;
	char *warn = NULL, *err = NULL, ro[300];
	(void)state;
	/* sysfs refuses a new folder (EPERM, or EROFS), even to root; only where it is mounted */
	struct stat st;
	if (stat("/sys/kernel", &st) == 0 && S_ISDIR(st.st_mode)) {
		assert_int_equal(paths_make_parent("/sys/attnviz-no/state/attnviz/progress.json"), -1);
		assert_int_not_equal(errno, ENOENT);
	}
	if (geteuid() != 0) { /* root writes anyway */
		snprintf(ro, sizeof ro, "%s/ro", dir);
		assert_int_equal(mkdir(ro, 0500), 0);
		snprintf(path, sizeof path, "%s/ro/state/attnviz/progress.json", dir);
		assert_int_equal(progress_load(&p, path, &warn), 0);
		progress_note(&p, "dot", 1, 5, 0, 0);
		assert_int_equal(progress_save(&p, &err), -1);
		assert_non_null(strstr(err, strerror(EACCES)));
		free(err);
		progress_free(&p);
		chmod(ro, 0700);
	}
}

static void test_default_path(void **state)
{
	char *p;
	(void)state;
	setenv("XDG_STATE_HOME", "/x/state", 1);
	p = progress_default_path();
	assert_string_equal(p, "/x/state/attnviz/progress.json");
	free(p);
	setenv("XDG_STATE_HOME", "relative", 1);
	setenv("HOME", "/home/l", 1);
	p = progress_default_path();
	assert_string_equal(p, "/home/l/.local/state/attnviz/progress.json");
	free(p);
	unsetenv("XDG_STATE_HOME");
	unsetenv("HOME");
	assert_null(progress_default_path());
}

static void test_marks(void **state)
{
	Progress p;
	char *warn = NULL, mark[8], score[40];
	(void)state;
	progress_load(&p, path, &warn);
	progress_note(&p, "dot", 4, 5, 1, 2);
	progress_note(&p, "mask", 1, 8, 0, 0);
	progress_marks(&p, "dot", "mask", 1, mark, score);
	assert_string_equal(mark, "\u2713");
	assert_string_equal(score, "quiz 1/2");
	progress_marks(&p, "mask", "mask", 0, mark, score);
	assert_string_equal(mark, ">");
	assert_string_equal(score, "step 2/8");
	progress_marks(&p, "scale", "mask", 0, mark, score);
	assert_string_equal(mark, " ");
	assert_string_equal(score, "");
	progress_free(&p);
}

/* No path (no HOME): notes are kept in memory, save writes nothing */
static void test_nowhere(void **state)
{
	Progress p;
	char *warn = NULL, *err = NULL;
	(void)state;
	assert_int_equal(progress_load(&p, NULL, &warn), 0);
	progress_note(&p, "dot", 1, 5, 0, 0);
	assert_int_equal(progress_save(&p, &err), 0);
	assert_null(err);
	progress_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first_run_is_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_save_and_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_move_then_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_done_stays, setup, teardown),
		cmocka_unit_test_setup_teardown(test_course_done_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unwritable_folder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_marks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nowhere, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
