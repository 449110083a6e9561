/* unit_safety.c: what hostile input must never do (issue 15) — the engine
 * reading past a matrix, an edit computed before it is checked, a message
 * written past its buffer, a leak on a path that finds something late.
 * Each test reproduces one defect that was found; run under ASan (make test
 * SAN=1) they also catch the overflow or leak itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/attention.h"
#include "cmd/cmd.h"
#include "lesson/lesson.h"
#include "app/session.h"
#include "unit_common.h"

/* ------------------------------------------------------------ helpers */

/* Cross-attention: n = 3 queries, m = 2 keys, so a causal mask cannot fit. */
static const char cross_json[] =
	"{\"attnviz\": 1, \"title\": \"Cross\", \"tokens\": [\"a\", \"b\", \"c\"],"
	" \"X\": [[1, 0], [0, 1], [1, 1]],"
	" \"source\": {\"tokens\": [\"x\", \"y\"], \"X\": [[1, 2], [3, 4]]},"
	" \"W_q\": [[1, 0], [0, 1]], \"W_k\": [[1, 0], [0, 1]], \"W_v\": [[1, 0], [0, 1]],"
	" \"compare\": {\"label\": \"LABEL\", \"scale\": false}}";

/* The messages a command gave: every one appended, the errors counted. */
typedef struct Said {
	char text[65536];
	int errors;
} Said;

static void said(void *ctx, CmdMsg kind, const char *title, const char *text)
{
	Said *r = ctx;
	size_t len = strlen(r->text);

	(void)title;
	if (kind == MSG_ERROR)
		r->errors++;
	snprintf(r->text + len, sizeof r->text - len, "%s\n", text);
}

typedef struct Fixture {
	Session s;
	Said said;
	CmdOut out;
} Fixture;

static Fixture *start(const char *json)
{
	Fixture *f = calloc(1, sizeof *f);
	char *err = NULL;

	assert_non_null(f);
	if (session_init(&f->s, load_named("cross.json", json), NULL, &err) != 0)
		fail_msg("session_init: %s", err ? err : "?");
	f->out.ctx = &f->said;
	f->out.message = said;
	f->out.utf8 = 1;
	return f;
}

static void stop(Fixture *f)
{
	session_free(&f->s);
	free(f);
}

static int run(Fixture *f, const char *line)
{
	f->said.text[0] = '\0';
	f->said.errors = 0;
	return cmd_run(&f->s, line, &f->out);
}

/* ------------------------------------------------------------ 1. the engine and edits */

/* A lesson whose matrices disagree with its sizes is refused by the engine, not read past. */
static void test_engine_refuses_bad_shapes(void **state)
{
	Lesson *l = load_named("cross.json", cross_json);
	char *err = NULL;
	Mat saved;
	(void)state;

	l->cfg.mask = MASK_CAUSAL; /* n = 3, m = 2: no square to mask */
	assert_null(attn_compute(l, &err));
	assert_non_null(err);
	assert_non_null(strstr(err, "mask"));
	free(err);
	l->cfg.mask = MASK_PADDING; /* without the 1 × m row of the padding mask */
	assert_null(attn_compute(l, &err));
	free(err);
	l->cfg.mask = MASK_NONE;

	saved = l->lp.W_q;
	l->lp.W_q.rows = 1; /* fewer rows than d_model */
	assert_null(attn_compute(l, &err));
	assert_non_null(strstr(err, "W_q"));
	free(err);
	l->lp.W_q = saved;

	l->lp.heads = 2; /* d_k is still 2: W_q would need 4 columns */
	assert_null(attn_compute(l, &err));
	free(err);
	l->lp.heads = 1;

	l->cfg.m = 3; /* source.X has 2 rows */
	assert_null(attn_compute(l, &err));
	free(err);
	l->cfg.m = 2;

	/* and the lesson as loaded still computes */
	{
		Attn *a = attn_compute(l, &err);
		assert_non_null(a);
		attn_free(a);
	}
	lesson_free(l);
}

/* `mask causal` on cross-attention: the loader's message, nothing computed, nothing changed. */
static void test_edit_checked_before_computing(void **state)
{
	Fixture *f = start(cross_json);
	const Attn *before = f->s.attn;
	(void)state;

	assert_int_equal(run(f, "mask causal"), -1);
	assert_int_equal(f->said.errors, 1);
	assert_non_null(strstr(f->said.text, "square"));
	assert_true(f->s.attn == before);
	assert_int_equal(f->s.lesson->cfg.mask, MASK_NONE);
	/* the session goes on */
	assert_int_equal(run(f, "mask padding 1,0"), 0);
	assert_int_equal(f->s.lesson->cfg.mask, MASK_PADDING);
	stop(f);
}

/* ------------------------------------------------------------ 2. composed messages grow */

/* A compare label of 2000 characters, `compare on`, `stats weights`: every line is there, nothing past a buffer. */
static void test_stats_with_a_long_compare_label(void **state)
{
	static char json[sizeof cross_json + 4096];
	char label[2001];
	const char *at = strstr(cross_json, "LABEL");
	Fixture *f;
	(void)state;

	memset(label, 'L', sizeof label - 1);
	label[sizeof label - 1] = '\0';
	snprintf(json, sizeof json, "%.*s%s%s", (int)(at - cross_json), cross_json, label, at + strlen("LABEL"));
	f = start(json);
	assert_int_equal(run(f, "compare on"), 0);
	assert_int_equal(run(f, "stats weights"), 0);
	assert_non_null(strstr(f->said.text, label));
	assert_non_null(strstr(f->said.text, "row sums"));
	assert_non_null(strstr(f->said.text, "  2 c  1\n")); /* the last row's sum */
	stop(f);
}

/* ------------------------------------------------------------ 10. the budget counts everything */

/* The lesson's own matrices count, and so does its compare variant with its computation. */
static void test_budget_counts_weights_and_compare(void **state)
{
	Lesson *l = load_named("cross.json", cross_json);
	(void)state;

	/*
	 * n = 3, m = 2, d_model = d_src = 2, one head, d_k = d_v = 2, no W_o, no mask, no PE.
	 * Its own: X 6 + source.X 4 + W_q 4 + W_k 4 + W_v 4 = 22.
	 * Computed: X 6, S 4, Q 6, K 4, V 4, per head scores and weights 2·3·2 + weighted 6 = 18, concat 6,
	 * visibility 6, the derived stages' 4 slots of 3·2 (scaled and masked are not kept per head) 24 = 78.
	 */
	assert_true(lesson_count_numbers(l) == 100.0);
	assert_true(lesson_budget_numbers(l) == 200.0); /* the variant (scale: false) is the same size */
	lesson_free(l);
}

/* ------------------------------------------------------------ 17. leaks (caught by LeakSanitizer in make test SAN=1) */

/* A lesson found in the second search directory: the list of directories tried is freed too. */
static void test_find_lesson_in_a_later_directory(void **state)
{
	char dir[] = "/tmp/attnviz-safety-XXXXXX", *err = NULL, *path;
	(void)state;

	assert_non_null(mkdtemp(dir));
	setenv("ATTNVIZ_LESSONS", dir, 1); /* searched first, and empty */
	path = session_find_lesson("selfattn", &err);
	unsetenv("ATTNVIZ_LESSONS");
	rmdir(dir);
	assert_non_null(path);
	assert_non_null(strstr(path, "lessons/selfattn.json"));
	assert_null(err);
	free(path);
}

/* `heads 2` on matrix.json turns off questions on cells that are gone: their texts are freed all the same. */
static void test_edit_that_drops_a_question(void **state)
{
	Session s;
	char *err = NULL, *warn = NULL;
	Said r = { "", 0 };
	CmdOut out = { &r, said, NULL, NULL, 0, 1, 0 };
	int i, quizzes = 0;
	(void)state;

	memset(&s, 0, sizeof s);
	if (session_load(&s, "lessons/matrix.json", &err, &warn) != 0)
		fail_msg("%s", err ? err : "?");
	free(warn);
	for (i = 0; i < s.lesson->nsteps; i++)
		quizzes += s.lesson->steps[i].has_quiz;
	assert_int_equal(cmd_run(&s, "heads 2", &out), 0);
	for (i = 0; i < s.lesson->nsteps; i++)
		quizzes -= s.lesson->steps[i].has_quiz;
	assert_true(quizzes > 0); /* at least one question was turned off */
	session_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_engine_refuses_bad_shapes),
		cmocka_unit_test(test_edit_checked_before_computing),
		cmocka_unit_test(test_stats_with_a_long_compare_label),
		cmocka_unit_test(test_budget_counts_weights_and_compare),
		cmocka_unit_test(test_find_lesson_in_a_later_directory),
		cmocka_unit_test(test_edit_that_drops_a_question),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
