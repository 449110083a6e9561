/* unit_cmd.c: the command table — finding commands (exact, alias, prefix,
 * ambiguous, unknown), splitting lines, and running every command on a
 * session, with the errors each one gives. Messages are recorded by a CmdOut. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "app/session.h"
#include "unit_common.h"

/* ------------------------------------------------------------ a recording CmdOut */

typedef struct Rec {
	int errors, infos, texts, shows;
	CmdMsg last_kind;
	char last[8192];        /* the last message's text */
	char last_title[128];
	AttnMatrix show_which;
	int show_head;
} Rec;

static void rec_message(void *ctx, CmdMsg kind, const char *title, const char *text)
{
	Rec *r = ctx;

	if (kind == MSG_ERROR)
		r->errors++;
	else if (kind == MSG_INFO)
		r->infos++;
	else
		r->texts++;
	r->last_kind = kind;
	snprintf(r->last, sizeof r->last, "%s", text);
	snprintf(r->last_title, sizeof r->last_title, "%s", title ? title : "");
}

static void rec_show(void *ctx, AttnMatrix which, int head)
{
	Rec *r = ctx;
	r->shows++;
	r->show_which = which;
	r->show_head = head;
}

typedef struct Fixture {
	Session s;
	Rec rec;
	CmdOut out;
} Fixture;

/*
 * 3 tokens, d_model 2, W_q/W_k/W_v 2 × 4, two heads (d_k = d_v = 2), no mask.
 * Steps: input; scores with a choice quiz (answer: choice index 1, i.e. "2" or "B");
 * softmax with a numeric quiz on weights[0][0] of head 0; weighted, no quiz.
 */
static const char lesson_json[] =
	"{\"attnviz\": 1, \"title\": \"Tiny\", \"tokens\": [\"a\", \"b\", \"c\"],"
	" \"X\": [[1, 0], [0, 1], [1, 1]], \"heads\": 2,"
	" \"W_q\": [[1, 0, 0.5, 0], [0, 1, 0, 0.5]],"
	" \"W_k\": [[0, 1, 1, 0], [1, 0, 0, 1]],"
	" \"W_v\": [[1, 2, 3, 4], [5, 6, 7, 8]],"
	" \"steps\": ["
	"  {\"stage\": \"input\", \"text\": \"start\"},"
	"  {\"stage\": \"scores\", \"quiz\": {\"question\": \"Which?\", \"choices\": [\"x\", \"y\", \"z\"],"
	"     \"answer\": 1, \"hint\": \"Think of y.\"}},"
	"  {\"stage\": \"softmax\", \"quiz\": {\"question\": \"weights[0][0]?\","
	"     \"answer\": {\"matrix\": \"weights\", \"head\": 0, \"row\": 0, \"col\": 0}, \"tolerance\": 0.01}},"
	"  {\"stage\": \"weighted\", \"text\": \"end\"}"
	" ]}";

static int setup(void **state)
{
	Fixture *f = calloc(1, sizeof *f);
	char *err = NULL, *warn = NULL;
	Lesson *l;

	if (f == NULL)
		return -1;
	l = lesson_load_string("tiny.json", lesson_json, strlen(lesson_json), &err, &warn);
	free(warn);
	if (l == NULL) {
		print_error("lesson: %s\n", err ? err : "?");
		free(err);
		free(f);
		return -1;
	}
	if (session_init(&f->s, l, NULL, &err) != 0) {
		print_error("session_init: %s\n", err ? err : "?");
		free(err);
		free(f);
		return -1;
	}
	f->out.ctx = &f->rec;
	f->out.message = rec_message;
	f->out.show = rec_show;
	f->out.utf8 = 1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	Fixture *f = *state;
	session_free(&f->s);
	free(f);
	return 0;
}

/* Run a line; check it succeeded or failed as expected, and that an error came with a failure. */
static void run_ok(Fixture *f, const char *line)
{
	const int errors = f->rec.errors;
	if (cmd_run(&f->s, line, &f->out) != 0)
		fail_msg("\"%s\" failed: %s", line, f->rec.last);
	assert_int_equal(f->rec.errors, errors);
}

static void run_err(Fixture *f, const char *line, const char *needle)
{
	const int errors = f->rec.errors;
	if (cmd_run(&f->s, line, &f->out) != -1)
		fail_msg("\"%s\" should have failed (last message: %s)", line, f->rec.last);
	assert_int_equal(f->rec.errors, errors + 1);
	assert_int_equal(f->rec.last_kind, MSG_ERROR);
	if (needle != NULL && strstr(f->rec.last, needle) == NULL)
		fail_msg("\"%s\": expected \"%s\" in the error, got: %s", line, needle, f->rec.last);
}

static void last_has(const Fixture *f, const char *needle)
{
	if (strstr(f->rec.last, needle) == NULL)
		fail_msg("expected \"%s\" in the last message, got: %s", needle, f->rec.last);
}

/* ------------------------------------------------------------ cmd_find */

static const CmdEntry *find(const char *name, char **err)
{
	*err = NULL;
	return cmd_find(name, err);
}

static void test_find(void **state)
{
	const CmdEntry *e;
	char *err;
	(void)state;

	/* exact */
	e = find("next", &err);
	assert_non_null(e);
	assert_string_equal(e->name, "next");
	assert_null(err);
	/* an exact name wins over being a prefix of another ("head" / "heads") */
	e = find("head", &err);
	assert_non_null(e);
	assert_string_equal(e->name, "head");
	/* aliases */
	assert_string_equal(find("n", &err)->name, "next");
	assert_string_equal(find("p", &err)->name, "prev");
	assert_string_equal(find("q", &err)->name, "quit");
	assert_string_equal(find("?", &err)->name, "help");
	assert_string_equal(find("a", &err)->name, "answer");
	/* unique prefixes */
	assert_string_equal(find("ex", &err)->name, "explain");
	assert_string_equal(find("go", &err)->name, "goto");
	assert_string_equal(find("hel", &err)->name, "help");
	assert_string_equal(find("heads", &err)->name, "heads");
	assert_string_equal(find("rel", &err)->name, "reload");
	/* ambiguous: lists every candidate */
	assert_null(find("s", &err));
	assert_non_null(err);
	/* in table order (the table may grow: save, …) */
	assert_int_equal(strncmp(err, "ambiguous command: s, could be: step, show, set, scale, skip",
	                         strlen("ambiguous command: s, could be: step, show, set, scale, skip")), 0);
	free(err);
	assert_null(find("he", &err));
	assert_non_null(err);
	assert_string_equal(err, "ambiguous command: he, could be: head, heads, help");
	free(err);
	/* unknown */
	assert_null(find("frobnicate", &err));
	assert_non_null(err);
	assert_string_equal(err, "unknown command: frobnicate (try help)");
	free(err);
	assert_null(find("", &err));
	assert_non_null(err);
	free(err);
	/* a control character in the name is escaped, never echoed raw */
	assert_null(find("\x1b[2J", &err));
	assert_non_null(err);
	assert_null(strchr(err, '\x1b'));
	assert_non_null(strstr(err, "\\x1b"));
	free(err);
}

static void test_table(void **state)
{
	static const char *const required[] = {
		"load", "lessons", "reload", "next", "prev", "goto", "head", "show", "explain", "set",
		"mask", "scale", "heads", "lang", "help", "quit", NULL
	};
	const CmdEntry *e;
	int i;
	(void)state;

	for (i = 0; required[i] != NULL; i++) {
		char *err = NULL;
		e = cmd_find(required[i], &err);
		assert_non_null(e);
		assert_string_equal(e->name, required[i]);
	}
	for (e = cmd_table; e->name != NULL; e++) {
		const char *p;
		int req = 0, opt = 0;
		assert_non_null(e->usage);
		assert_non_null(e->help);
		assert_int_equal(strncmp(e->usage, e->name, strlen(e->name)), 0);
		/* The counts allow what the usage shows: every word, with or without the [optional] ones. */
		for (p = strchr(e->usage, ' '); p != NULL; p = strchr(p + 1, ' ')) {
			if (p[1] == '[')
				opt++;
			else
				req++;
		}
		if (e->args.min > req || e->args.max < req + opt || e->args.min > e->args.max)
			fail_msg("%s: %d to %d words, but the usage is \"%s\"", e->name, e->args.min, e->args.max, e->usage);
	}
}

/* ------------------------------------------------------------ cmd_split */

static void check_split(const char *line, int want, const char *const *words)
{
	char **argv;
	int argc = cmd_split(line, &argv), i;

	if (argc != want)
		fail_msg("cmd_split(\"%s\"): %d words, want %d", line, argc, want);
	for (i = 0; i < argc; i++)
		if (strcmp(argv[i], words[i]) != 0)
			fail_msg("cmd_split(\"%s\"): word %d is \"%s\", want \"%s\"", line, i, argv[i], words[i]);
	if (argc > 0)
		assert_null(argv[argc]);
	cmd_free_words(argc, argv);
}

static void test_split(void **state)
{
	static const char *const w1[] = { "goto", "softmax" };
	static const char *const w2[] = { "load", "my lessons/a b.json" };
	static const char *const w3[] = { "set", "it's", "x\"y" };
	static const char *const w4[] = { "ab cd", "e" };
	static const char *const w5[] = { "open" };
	static const char *const w6[] = { "", "x" };
	(void)state;

	check_split("goto softmax", 2, w1);
	check_split("  \tgoto   softmax \r\n", 2, w1);
	check_split("load \"my lessons/a b.json\"", 2, w2);
	check_split("load 'my lessons/a b.json'", 2, w2);
	check_split("set \"it's\" 'x\"y'", 3, w3);
	check_split("a\"b c\"d e", 2, w4);          /* quotes inside a word join */
	check_split("\"open", 1, w5);              /* an unterminated quote runs to the end */
	check_split("\"\" x", 2, w6);              /* an empty quoted word is a word */
	check_split("goto softmax # a comment", 2, w1);
	check_split("", 0, NULL);
	check_split("   ", 0, NULL);
	check_split("# only a comment", 0, NULL);
}

/* ------------------------------------------------------------ cmd_run: moving */

static void test_run_moving(void **state)
{
	Fixture *f = *state;

	assert_int_equal(f->s.step, 0);
	run_ok(f, "");
	run_ok(f, "   # nothing");
	run_err(f, "prev", "first step");
	run_ok(f, "next");
	assert_int_equal(f->s.step, 1);
	run_ok(f, ":n");                         /* ':' and the alias */
	assert_int_equal(f->s.step, 2);
	run_ok(f, "  p  ");
	assert_int_equal(f->s.step, 1);
	run_ok(f, "last");
	assert_int_equal(f->s.step, 3);
	assert_int_equal(f->s.stage, STAGE_WEIGHTED);
	run_err(f, "next", "last step");
	run_ok(f, "first");
	assert_int_equal(f->s.step, 0);
	run_ok(f, "step 3");
	assert_int_equal(f->s.step, 2);
	assert_int_equal(f->s.stage, STAGE_SOFTMAX);
	run_err(f, "step 0", "from 1 to 4");
	run_err(f, "step 5", "from 1 to 4");
	run_err(f, "step two", "whole number");
	run_err(f, "step", "usage: step N");
	run_err(f, "next please", "usage: next");
	run_err(f, "frobnicate", "unknown command: frobnicate");
	run_err(f, "s", "ambiguous command: s, could be:");
}

static void test_run_goto_head(void **state)
{
	Fixture *f = *state;

	run_ok(f, "goto softmax");
	assert_int_equal(f->s.stage, STAGE_SOFTMAX);
	run_ok(f, "goto split");                 /* not in the steps: shown without moving the walk */
	assert_int_equal(f->s.stage, STAGE_SPLIT);
	/* an unknown stage lists this lesson's stages */
	/* a typo gets the stage it meant, in a message that fits one line; any other word, the lesson's stages */
	run_err(f, "goto softmx", "unknown stage: softmx (did you mean \"softmax\"?)");
	run_err(f, "goto nowhere", "unknown stage: nowhere (this lesson's stages: input project split scores scale softmax weighted concat)");
	run_err(f, "goto mask", "not part of this lesson");
	run_err(f, "goto output", "not part of this lesson");
	run_err(f, "goto", "usage: goto STAGE");
	run_ok(f, "head 1");
	assert_int_equal(f->s.head, 1);
	run_err(f, "head 2", "heads 0 to 1");
	run_err(f, "head -1", "head");
	run_err(f, "head x", "head");
	assert_int_equal(f->s.head, 1);
}

/* ------------------------------------------------------------ cmd_run: looking */

static void test_run_show_explain(void **state)
{
	Fixture *f = *state;

	run_ok(f, "show weights 1");
	assert_int_equal(f->rec.shows, 1);
	assert_int_equal(f->rec.show_which, AM_WEIGHTS);
	assert_int_equal(f->rec.show_head, 1);
	run_ok(f, "head 1");
	run_ok(f, "show scores");                /* the head shown */
	assert_int_equal(f->rec.show_which, AM_SCORES);
	assert_int_equal(f->rec.show_head, 1);
	run_ok(f, "show W_q");
	assert_int_equal(f->rec.show_which, AM_W_Q);
	run_err(f, "show weights 2", "head");
	run_err(f, "show nosuch", "unknown matrix: nosuch (this lesson has:");
	run_err(f, "show W_o", "not part of this lesson");
	run_err(f, "show PE", "not part of this lesson");
	run_err(f, "show", "usage: show MATRIX [HEAD]");
	assert_int_equal(f->rec.shows, 3);

	run_ok(f, "explain scores 0 1 0");
	assert_int_equal(f->rec.last_kind, MSG_TEXT);
	last_has(f, "scores[0][1] (head 0) = ");
	last_has(f, "query a, key b");
	run_ok(f, "explain Q 2 3");
	last_has(f, "Q[2][3]");
	run_err(f, "explain scores 3 0", "row");
	run_err(f, "explain scores 0 9", "column");
	run_err(f, "explain scores 0 0 5", "head");
	run_err(f, "explain scores 0", "usage: explain MATRIX ROW COL [HEAD]");
}

static void test_run_help_lang_quit(void **state)
{
	Fixture *f = *state;
	const CmdEntry *e;

	run_ok(f, "help");
	assert_int_equal(f->rec.last_kind, MSG_TEXT);
	for (e = cmd_table; e->name != NULL; e++)
		last_has(f, e->usage);
	run_ok(f, "help set");
	last_has(f, "set MATRIX[ROW][COL] VALUE");
	run_ok(f, "? n");
	last_has(f, "next");
	last_has(f, "also: n");
	run_err(f, "help zzz", "unknown command: zzz");

	run_ok(f, "lang zh");
	assert_string_equal(f->s.lang, "zh");
	assert_true(f->s.dirty & DIRTY_LANG);
	run_ok(f, "lang en");
	assert_string_equal(f->s.lang, "en");
	run_err(f, "lang fr", "expected en or zh");
	assert_string_equal(f->s.lang, "en");

	assert_int_equal(f->s.quit, 0);
	run_ok(f, "quit");
	assert_int_equal(f->s.quit, 1);
}

/* ------------------------------------------------------------ cmd_run: edits */

static void test_run_set(void **state)
{
	Fixture *f = *state;
	const double q00 = MAT_AT(f->s.attn->Q, 0, 0), q10 = MAT_AT(f->s.attn->Q, 1, 0);

	/* X row 0 = [1, 0]: Q[0][0] = W_q[0][0]; X row 1 = [0, 1]: Q[1][0] = W_q[1][0] */
	assert_true(q00 == 1.0 && q10 == 0.0);
	run_ok(f, "set W_q[0][0] 2");
	assert_int_equal(f->rec.last_kind, MSG_INFO);
	assert_true(MAT_AT(f->s.lesson->lp.W_q, 0, 0) == 2.0);
	assert_true(MAT_AT(f->s.attn->Q, 0, 0) == 2.0);
	assert_true(MAT_AT(f->s.attn->Q, 2, 0) == 2.0);           /* X row 2 = [1, 1] */
	assert_true(MAT_AT(f->s.attn->Q, 1, 0) == q10);
	/* downstream recomputed too, and the previous computation kept for the flash */
	assert_true(f->s.dirty & DIRTY_VALUES);
	assert_non_null(f->s.prev_attn);
	assert_true(MAT_AT(f->s.prev_attn->Q, 0, 0) == 1.0);
	assert_false(same_numbers(&f->s.prev_attn->head[0].scores, &f->s.attn->head[0].scores));
	/* the ROW COL form */
	run_ok(f, "set W_v 1 3 -0.5");
	assert_true(MAT_AT(f->s.lesson->lp.W_v, 1, 3) == -0.5);
	assert_true(MAT_AT(f->s.attn->V, 1, 3) == -0.5);
	run_ok(f, "set input[2][1] 0");
	assert_true(MAT_AT(f->s.attn->X, 2, 1) == 0.0);

	/* refused: computed matrices, out of range, not numbers */
	run_err(f, "set Q[0][0] 1", "Q is computed, not given");
	run_err(f, "set weights[0][0] 1", "is computed");
	run_err(f, "set W_q[2][0] 1", "row");
	run_err(f, "set W_q[0][4] 1", "column");
	run_err(f, "set W_q[x][0] 1", "row");
	run_err(f, "set W_q[0][0] abc", "value");
	run_err(f, "set W_q[0][0] inf", "finite");
	run_err(f, "set W_q[0][0] nan", "finite");
	run_err(f, "set W_q[0][0] 1e999", "finite");
	run_err(f, "set nosuch[0][0] 1", "unknown matrix");
	run_err(f, "set W_o[0][0] 1", "not part of this lesson");
	run_err(f, "set W_q[0] 1", "usage: set");
	run_err(f, "set W_q[0][0]", "usage: set");
	assert_true(MAT_AT(f->s.lesson->lp.W_q, 0, 0) == 2.0);
}

static void test_run_heads(void **state)
{
	Fixture *f = *state;

	run_ok(f, "head 1");
	run_err(f, "heads 3", "heads: 3 does not divide the 4 columns of W_q");
	assert_int_equal(f->s.lesson->lp.heads, 2);
	assert_int_equal(f->s.head, 1);
	run_err(f, "heads 0", "heads");
	run_err(f, "heads 65", "heads");
	run_err(f, "heads two", "heads");
	run_ok(f, "heads 4");
	assert_int_equal(f->s.lesson->lp.heads, 4);
	assert_int_equal(f->s.attn->heads, 4);
	assert_int_equal(f->s.lesson->lp.d_k, 1);
	assert_int_equal(f->s.attn->head[3].weighted.cols, 1);
	last_has(f, "4 heads: d_k = 1, d_v = 1");
	run_ok(f, "heads 1");
	assert_int_equal(f->s.lesson->lp.d_k, 4);
	assert_int_equal(f->s.head, 0);                           /* head 1 is gone */
	last_has(f, "1 head: d_k = 4");
	assert_true(fabs(f->s.attn->factor - 0.5) < 1e-15);       /* 1/√4 */
}

static void test_run_mask(void **state)
{
	Fixture *f = *state;
	int h, i;

	run_err(f, "mask padding 1,0", "expected 3 values (one per key), got 2");
	run_err(f, "mask padding 1,1,0,1", "expected 3 values");
	run_err(f, "mask padding 1,2,0", "0 or 1");
	run_err(f, "mask sideways", "usage: mask");
	run_err(f, "mask", "usage: mask");
	assert_int_equal(f->s.lesson->cfg.mask, MASK_NONE);

	run_ok(f, "mask padding 1,1,0");
	assert_int_equal(f->s.lesson->cfg.mask, MASK_PADDING);
	for (h = 0; h < 2; h++)
		for (i = 0; i < 3; i++)
			assert_true(MAT_AT(f->s.attn->head[h].weights, i, 2) == 0.0);
	run_ok(f, "mask padding 0 1 1");         /* words instead of commas */
	assert_true(MAT_AT(f->s.attn->head[0].weights, 0, 0) == 0.0);
	assert_true(MAT_AT(f->s.attn->head[0].weights, 0, 2) > 0.0);
	run_ok(f, "goto mask");
	assert_int_equal(f->s.stage, STAGE_MASK);

	run_ok(f, "mask causal");
	assert_int_equal(f->s.lesson->cfg.mask, MASK_CAUSAL);
	assert_true(MAT_AT(f->s.attn->head[1].weights, 0, 1) == 0.0);
	assert_true(MAT_AT(f->s.attn->head[1].weights, 0, 0) == 1.0);
	assert_true(attn_cell(f->s.attn, AM_MASKED, 1, 0, 2) == -INFINITY);

	run_ok(f, "mask none");
	assert_int_equal(f->s.lesson->cfg.mask, MASK_NONE);
	assert_true(MAT_AT(f->s.attn->head[1].weights, 0, 1) > 0.0);
	assert_int_equal(f->s.stage, f->s.walk[f->s.step].stage); /* the mask stage is gone */
	run_err(f, "goto mask", "not part of this lesson");
}

static void test_run_scale(void **state)
{
	Fixture *f = *state;
	const double s01 = MAT_AT(f->s.attn->head[0].scores, 0, 1);

	assert_true(fabs(f->s.attn->factor - 1.0 / sqrt(2.0)) < 1e-15);
	run_ok(f, "scale off");
	assert_true(f->s.attn->factor == 1.0);
	assert_true(attn_cell(f->s.attn, AM_SCALED, 0, 0, 1) == s01);
	last_has(f, "scale factor is now 1");
	run_ok(f, "scale 0.5");
	assert_true(f->s.attn->factor == 0.5);
	assert_true(attn_cell(f->s.attn, AM_SCALED, 0, 0, 1) == 0.5 * s01);
	run_ok(f, "scale on");
	assert_true(fabs(f->s.attn->factor - 1.0 / sqrt(2.0)) < 1e-15);
	last_has(f, "0.707107");
	run_err(f, "scale maybe", "scale");
	run_err(f, "scale inf", "finite");
	run_err(f, "scale", "usage: scale");
	assert_true(fabs(f->s.attn->factor - 1.0 / sqrt(2.0)) < 1e-15);
}

/* ------------------------------------------------------------ cmd_run: lessons */

static char *write_temp(const char *json)
{
	char path[] = "/tmp/attnviz-unit-cmd-XXXXXX.json";
	int fd = mkstemps(path, 5);
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs(json, f);
	fclose(f);
	return strdup(path);
}

static void test_run_load(void **state)
{
	Fixture *f = *state;
	const Lesson *before = f->s.lesson;
	char *good, *bad, line[256];

	run_ok(f, "next");
	run_ok(f, "lang zh");
	/* a missing file keeps the lesson, the place and the title */
	run_err(f, "load /nonexistent/dir/missing.json", "missing.json");
	assert_ptr_equal(f->s.lesson, before);
	assert_string_equal(text_get(&f->s.lesson->title, "en"), "Tiny");
	assert_int_equal(f->s.step, 1);
	run_err(f, "load no_such_lesson_name", "no lesson named \"no_such_lesson_name\"");
	assert_ptr_equal(f->s.lesson, before);
	/* a broken file: the loader's message names it */
	bad = write_temp("{\"attnviz\": 1, \"title\": \"Broken\", \"tokens\": [\"a\"], \"X\": [[1]],"
	                 " \"W_q\": [[1, 2]], \"W_k\": [[1, 2]], \"W_v\": [[1]], \"heads\": 3}");
	snprintf(line, sizeof line, "load %s", bad);
	run_err(f, line, bad);
	assert_ptr_equal(f->s.lesson, before);
	assert_int_equal(f->s.step, 1);

	/* a good file replaces it, keeps the language, starts at step 1 */
	good = write_temp("{\"attnviz\": 1, \"title\": \"Loaded \\u001b[31m\", \"tokens\": [\"x\", \"y\"],"
	                  " \"X\": [[1, 0], [0, 1]], \"W_q\": {\"identity\": 2}, \"W_k\": {\"identity\": 2},"
	                  " \"W_v\": {\"identity\": 2}, \"mask\": \"causal\"}");
	snprintf(line, sizeof line, "load \"%s\"", good);
	run_ok(f, line);
	assert_int_equal(f->rec.last_kind, MSG_INFO);
	last_has(f, "loaded ");
	last_has(f, "Loaded \\x1b[31m");                        /* escaped in the message */
	assert_null(strchr(f->rec.last, '\x1b'));
	assert_string_equal(f->s.source, good);
	assert_string_equal(f->s.lang, "zh");
	assert_int_equal(f->s.step, 0);
	assert_int_equal(f->s.lesson->cfg.n, 2);
	assert_int_equal(f->s.lesson->cfg.mask, MASK_CAUSAL);

	/* reload drops edits */
	run_ok(f, "mask none");
	run_ok(f, "reload");
	assert_int_equal(f->s.lesson->cfg.mask, MASK_CAUSAL);
	/* reload of a file that has gone bad keeps what is there */
	{
		FILE *w = fopen(good, "w");
		assert_non_null(w);
		fputs("{\"attnviz\": 1, ", w);
		fclose(w);
	}
	run_err(f, "reload", good);
	assert_int_equal(f->s.lesson->cfg.n, 2);
	run_err(f, "load", "usage: load FILE|NAME");

	unlink(good);
	unlink(bad);
	free(good);
	free(bad);
}

static void test_run_reload_builtin(void **state)
{
	Fixture *f = *state;
	char *err = NULL;
	Lesson *l = session_default_lesson(&err);

	assert_non_null(l);
	session_free(&f->s);
	assert_int_equal(session_init(&f->s, l, NULL, &err), 0);
	run_ok(f, "set W_q[0][0] 0");
	assert_true(MAT_AT(f->s.lesson->lp.W_q, 0, 0) == 0.0);
	run_ok(f, "reload");
	last_has(f, "built-in");
	assert_true(MAT_AT(f->s.lesson->lp.W_q, 0, 0) == 5.0);
}

static void test_run_lessons(void **state)
{
	Fixture *f = *state;
	char dir[] = "/tmp/attnviz-unit-lessons-XXXXXX";
	char path[128];
	const char *old = getenv("ATTNVIZ_LESSONS");
	char *saved = old ? strdup(old) : NULL;
	FILE *w;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/mask.json", dir);
	w = fopen(path, "w");
	assert_non_null(w);
	fputs("{\"attnviz\": 1, \"title\": {\"en\": \"Masking \\u0007\", \"zh\": \"\\u63a9\\u7801\"}, \"tokens\": [\"a\"],"
	      " \"X\": [[1]], \"W_q\": [[1]], \"W_k\": [[1]], \"W_v\": [[1]]}", w);
	fclose(w);
	snprintf(path, sizeof path, "%s/selfattn.json", dir);
	w = fopen(path, "w");
	assert_non_null(w);
	fputs("{\"attnviz\": 1, \"title\": \"Self\", \"tokens\": [\"a\"], \"X\": [[1]], \"W_q\": [[1]],"
	      " \"W_k\": [[1]], \"W_v\": [[1]]}", w);
	fclose(w);
	setenv("ATTNVIZ_LESSONS", dir, 1);

	run_ok(f, "lessons");
	assert_int_equal(f->rec.last_kind, MSG_TEXT);
	/* teaching order: selfattn before mask; titles escaped */
	assert_non_null(strstr(f->rec.last, "selfattn"));
	assert_true(strstr(f->rec.last, "selfattn") < strstr(f->rec.last, "mask"));
	last_has(f, "Masking \\x07");
	assert_null(strchr(f->rec.last, '\a'));
	run_ok(f, "load mask");                                 /* a name found in $ATTNVIZ_LESSONS */
	assert_int_equal(f->s.lesson->cfg.n, 1);
	run_ok(f, "lang zh");
	run_ok(f, "lessons");
	last_has(f, "\u63a9\u7801");

	unlink(path);
	snprintf(path, sizeof path, "%s/mask.json", dir);
	unlink(path);
	rmdir(dir);
	if (saved != NULL)
		setenv("ATTNVIZ_LESSONS", saved, 1);
	else
		unsetenv("ATTNVIZ_LESSONS");
	free(saved);
}

/* ------------------------------------------------------------ cmd_run: an encoder–decoder */

/* The place and the map as the stage line and the map show them. */
static void place_is(const Session *s, const char *place, const char *in_map)
{
	char *p = session_place(s, 1), *m = session_stage_map(s, 1);
	assert_non_null(p);
	assert_non_null(m);
	if (strcmp(p, place) != 0 || strstr(m, in_map) == NULL)
		fail_msg("expected \"%s\" with \"%s\" in the map, got \"%s\", map \"%s\"", place, in_map, p, m);
	free(p);
	free(m);
}

/*
 * encdec.json: the walk starts in the encoder and crosses into the decoder;
 * layer eN names an encoder layer, and an edit there changes that layer of
 * the encoder and nothing of the decoder.
 */
static void test_run_encoder(void **state)
{
	Fixture *f = *state;
	const char *root = getenv("ATTNVIZ_SRCDIR");
	char line[512], *err = NULL;
	double dec_wq, enc_wv;
	const Lesson *loaded;
	Attn *fresh;

	snprintf(line, sizeof line, "load %s/lessons/encdec.json", root != NULL ? root : ".");
	run_ok(f, line);
	assert_non_null(f->s.lesson->encoder);
	assert_int_equal(session_layers(&f->s), 2 + 2); /* two encoder layers, one decoder layer of two links */
	assert_ptr_equal(f->s.attn, f->s.model->encoder);
	place_is(&f->s, "layer 0/2 \u00b7 encoder \u00b7 self-attention", "[x] \u2192 attention \u2192 +");
	run_ok(f, "step 4");
	assert_ptr_equal(f->s.attn, f->s.model->encoder->next);
	run_ok(f, "next");
	assert_ptr_equal(f->s.attn, f->s.model);
	place_is(&f->s, "layer 0/1 \u00b7 decoder \u00b7 self-attention", "self-attn \u2192 + \u2192 N1 \u2192 cross-attn");
	run_ok(f, "prev");
	assert_ptr_equal(f->s.attn, f->s.model->encoder->next);
	run_ok(f, "layer 1");
	assert_ptr_equal(f->s.attn, f->s.model->next);
	place_is(&f->s, "layer 0/1 \u00b7 decoder \u00b7 cross-attention", "FFN \u2192 + \u2192 [N3]"); /* at norm2, as before */
	run_ok(f, "goto input");
	place_is(&f->s, "layer 0/1 \u00b7 decoder \u00b7 cross-attention", "[N1] \u2192 cross-attn"); /* its x: N1's rows */
	/* an edit in the encoder's second layer */
	dec_wq = MAT_AT(f->s.lesson->lp.W_q, 0, 0);
	run_ok(f, "layer e1");
	place_is(&f->s, "layer 1/2 \u00b7 encoder \u00b7 self-attention", "attention");
	loaded = f->s.lesson;
	enc_wv = MAT_AT(f->s.lesson->encoder->layer[1].lp.W_v, 0, 0);
	run_ok(f, "set W_q[0][0] 0.5");
	assert_ptr_equal(f->s.lesson, loaded); /* set in the lesson itself, not on a copy of it */
	assert_non_null(f->s.prev_model);      /* the computation before, for the flash */
	assert_true(MAT_AT(f->s.lesson->encoder->layer[1].lp.W_q, 0, 0) == 0.5);
	assert_true(MAT_AT(model_layer_params(f->s.lesson->encoder, 0)->W_q, 0, 0) != 0.5);
	assert_true(MAT_AT(f->s.lesson->lp.W_q, 0, 0) == dec_wq);
	assert_ptr_equal(f->s.attn, f->s.model->encoder->next); /* still shown after the recomputation */
	fresh = attn_compute(f->s.lesson, &err);
	assert_non_null(fresh);
	{ /* the same numbers as the edited lesson computed afresh */
		const Mat *x = attn_final_output(fresh), *y = attn_final_output(f->s.model);
		assert_int_equal(x->rows, y->rows);
		assert_int_equal(x->cols, y->cols);
		assert_memory_equal(x->a, y->a, (size_t)x->rows * (size_t)x->cols * sizeof *x->a);
	}
	attn_free(fresh);
	/* refused: the number and the computation as they were */
	run_err(f, "set W_v[0][0] 1e308", "the numbers grow too large to compute");
	assert_true(MAT_AT(f->s.lesson->encoder->layer[1].lp.W_v, 0, 0) == enc_wv);
	assert_true(MAT_AT(f->s.lesson->encoder->layer[1].lp.W_q, 0, 0) == 0.5);
	assert_ptr_equal(f->s.attn, f->s.model->encoder->next);
	/* the mask of the attention shown: the encoder's, the decoder's self-attention's, its cross-attention's */
	run_ok(f, "mask padding 0,1,1");
	assert_true(MAT_AT(f->s.attn->head[0].weights, 0, 0) == 0.0);
	run_ok(f, "layer 0");
	assert_true(MAT_AT(f->s.attn->head[0].weights, 0, 1) == 0.0); /* causal */
	run_ok(f, "mask none");
	assert_true(MAT_AT(f->s.attn->head[0].weights, 0, 1) > 0.0);
	run_ok(f, "layer 1");
	run_ok(f, "mask padding 1,0,1");
	assert_true(MAT_AT(f->s.attn->head[0].weights, 2, 1) == 0.0 && MAT_AT(f->s.attn->head[0].weights, 2, 0) > 0.0);
	run_err(f, "mask causal", "needs a square score matrix, but n = 4 and m = 3");
	run_ok(f, "layer e1");
	assert_true(MAT_AT(f->s.attn->head[0].weights, 0, 0) == 0.0); /* the encoder's layers share its mask */
	/* the scale is every attention's: the encoder's too */
	run_ok(f, "scale 0.5");
	assert_int_equal(f->s.lesson->encoder->cfg.scale, SCALE_VALUE);
	assert_true(f->s.lesson->encoder->cfg.scale_value == 0.5);
	assert_int_equal(f->s.lesson->cfg.scale, SCALE_VALUE);
	assert_true(f->s.attn->factor == 0.5);
	run_err(f, "layer e2", "no layer e2: this lesson has the encoder's layers e0 to e1 and the decoder's 0 to 1");
	run_err(f, "layer 2", "no layer 2");
}

/* ------------------------------------------------------------ cmd_run: quizzes */

static void test_run_quiz(void **state)
{
	Fixture *f = *state;
	char want[64];

	/* step 1 has no question */
	run_err(f, "answer 1", "no open question");
	run_err(f, "skip", "no open question");
	run_err(f, "hint", "no question on this step");
	assert_false(session_quiz_pending(&f->s));

	/* step 2: choices */
	run_ok(f, "next");
	assert_true(session_quiz_pending(&f->s));
	run_ok(f, "hint");
	assert_int_equal(f->rec.last_kind, MSG_TEXT);
	last_has(f, "Think of y.");
	run_err(f, "answer 4", "from 1 to 3");
	run_err(f, "answer 0", "from 1 to 3");
	run_err(f, "answer D", "from 1 to 3");
	run_err(f, "answer", "usage: answer VALUE");
	assert_int_equal(f->s.quiz_asked, 0);
	run_ok(f, "answer 1");                                  /* wrong: the answer is 2) */
	last_has(f, "Not quite");
	last_has(f, "2)");
	last_has(f, "score 0/1");
	assert_int_equal(f->s.quiz[1], QUIZ_WRONG);
	assert_false(session_quiz_pending(&f->s));
	run_err(f, "answer B", "no open question");             /* answered once */
	assert_int_equal(f->s.quiz_asked, 1);

	/* step 3: a number, read from the computation */
	run_ok(f, "next");
	assert_true(session_quiz_pending(&f->s));
	run_ok(f, "hint");                                      /* a question without a hint */
	last_has(f, "no hint");
	run_err(f, "answer lots", "number");
	snprintf(want, sizeof want, "a %.4f", MAT_AT(f->s.attn->head[0].weights, 0, 0) + 0.005);
	run_ok(f, want);                                        /* within the tolerance 0.01 */
	last_has(f, "Right");
	last_has(f, "weights[0][0]");
	last_has(f, "score 1/2");
	assert_int_equal(f->s.quiz[2], QUIZ_RIGHT);

	/* back to step 2: the choice quiz stays answered */
	run_ok(f, "prev");
	run_err(f, "skip", "no open question");
}

static void test_run_quiz_skip_and_letter(void **state)
{
	Fixture *f = *state;

	run_ok(f, "step 2");
	run_ok(f, "answer b");                                  /* letters, either case */
	last_has(f, "Right");
	assert_int_equal(f->s.quiz_right, 1);
	run_ok(f, "next");
	run_ok(f, "skip");
	last_has(f, "Skipped: weights[0][0] is ");
	assert_int_equal(f->s.quiz[2], QUIZ_SKIPPED);
	assert_int_equal(f->s.quiz_asked, 2);
	assert_int_equal(f->s.quiz_right, 1);
	run_err(f, "answer 0.5", "no open question");
}

/* ------------------------------------------------------------ completion */

static int list_has(char **list, const char *word)
{
	int i;
	for (i = 0; list != NULL && list[i] != NULL; i++)
		if (strcmp(list[i], word) == 0)
			return 1;
	return 0;
}

static int list_len(char **list)
{
	int i = 0;
	while (list != NULL && list[i] != NULL)
		i++;
	return i;
}

static void list_free(char **list)
{
	int i;
	for (i = 0; list != NULL && list[i] != NULL; i++)
		free(list[i]);
	free(list);
}

/*
 * The table's declared arguments are read before a command runs: a wrong
 * count or a word of the wrong kind gets the one message, naming what was
 * expected and the usage, and the command does not run.
 */
static void test_run_args(void **state)
{
	Fixture *f = *state;
	const double q01 = MAT_AT(f->s.lesson->lp.W_q, 0, 1);

	run_err(f, "next please", "next: expected 0 words, got 1 (usage: next)");
	run_err(f, "step x", "step: expected a whole number from 1 to 4, got \"x\" (usage: step N)");
	run_err(f, "explain weights 0 9", "explain (column): expected a whole number from 0 to 2, got \"9\"");
	run_err(f, "set W_q 0 1", "set: expected 4 words, got 3 (usage: set MATRIX[ROW][COL] VALUE)");
	run_err(f, "set W_q[0][1] 0.5 1", "set: expected 2 words, got 3");
	run_err(f, "set W_q[0] 0.5", "set: expected a cell MATRIX[ROW][COL], got \"W_q[0]\"");
	run_err(f, "set W_q[0][1] nan", "set (value): expected a finite number, got \"nan\"");
	assert_true(MAT_AT(f->s.lesson->lp.W_q, 0, 1) == q01); /* none of them ran */
	run_err(f, "compare maybe", "compare: expected on or off, got \"maybe\" (usage: compare on|off)");
	run_err(f, "mask sideways", "mask: expected causal, none, window or padding, got \"sideways\"");
	run_err(f, "mask window", "mask: expected 2 words, got 1");
	run_err(f, "mask causal 2", "mask: expected 1 word, got 2");
	run_err(f, "lang fr", "lang: expected en or zh, got \"fr\" (usage: lang en|zh)");
	run_err(f, "scale big", "scale: expected on, off or a finite number, got \"big\"");
	run_err(f, "stats params 1", "stats: expected 1 word, got 2");
	run_err(f, "jacobian 3", "jacobian (row): expected a whole number from 0 to 2, got \"3\"");
	run_ok(f, "set W_q 0 1 0.5"); /* a cell of three words */
	assert_true(MAT_AT(f->s.lesson->lp.W_q, 0, 1) == 0.5);
}

static void test_complete(void **state)
{
	Fixture *f = *state;
	char **c;

	c = cmd_complete(&f->s, ARG_COMMAND, "he");
	assert_int_equal(list_len(c), 3);
	assert_true(list_has(c, "head") && list_has(c, "heads") && list_has(c, "help"));
	list_free(c);
	c = cmd_complete(&f->s, ARG_STAGE, "s");
	assert_true(list_has(c, "split") && list_has(c, "scores") && list_has(c, "scale") && list_has(c, "softmax"));
	assert_int_equal(list_len(c), 4);
	list_free(c);
	c = cmd_complete(&f->s, ARG_MATRIX, "W");
	assert_true(list_has(c, "W_q") && list_has(c, "W_k") && list_has(c, "W_v"));
	assert_false(list_has(c, "W_o"));
	list_free(c);
	c = cmd_complete(&f->s, ARG_STAGE, "zz");
	assert_int_equal(list_len(c), 0);
	list_free(c);
	/* a line's words are completed each as its kind: show's first a matrix, its second a head (nothing to offer) */
	int files = 0;
	c = cmd_complete_line(&f->s, "show W", 5, "W", &files);
	assert_true(list_has(c, "W_q") && !files);
	list_free(c);
	c = cmd_complete_line(&f->s, "show W_q ", 9, "", &files);
	assert_int_equal(list_len(c), 0);
	list_free(c);
	c = cmd_complete_line(&f->s, "set W", 4, "W", &files); /* a cell starts with its matrix */
	assert_true(list_has(c, "W_v"));
	list_free(c);
}

/* File paths, for load/save/source (both line editors use these). Run from the repository root. */
static void test_complete_paths(void **state)
{
	Fixture *f = *state;
	const char *root = getenv("ATTNVIZ_SRCDIR");
	char **c;

	if (root != NULL)
		assert_int_equal(chdir(root), 0);
	c = cmd_complete(&f->s, ARG_LESSON, "lessons/mul");
	assert_int_equal(list_len(c), 1);
	assert_true(list_has(c, "lessons/multihead.json"));
	list_free(c);
	c = cmd_complete(&f->s, ARG_FILE, "lessons/dem");
	assert_true(list_has(c, "lessons/demos/")); /* a directory, to go on into */
	list_free(c);
	c = cmd_complete(&f->s, ARG_LESSON, "lesso"); /* no lesson is called that: a path */
	assert_true(list_has(c, "lessons/"));
	list_free(c);
	c = cmd_complete(&f->s, ARG_FILE, "no/such/dir/x");
	assert_int_equal(list_len(c), 0);
	list_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test_setup_teardown(test_complete_paths, setup, teardown),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_split),
		cmocka_unit_test_setup_teardown(test_run_moving, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_goto_head, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_show_explain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_help_lang_quit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_heads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_mask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_scale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_encoder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_reload_builtin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_lessons, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_quiz, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_quiz_skip_and_letter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_args, setup, teardown),
		cmocka_unit_test_setup_teardown(test_complete, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
