/*
 * unit_lesson.c: the lesson loader (src/lesson/lesson.c) and lesson texts (src/base/text.c).
 *
 * Good lessons under tests/good/, one malformed file per error message under
 * tests/bad/. Files are found from the repository root: $ATTNVIZ_SRCDIR, else ".".
 * The expected generated numbers come from an independent Python version of
 * prng.h (see the comment above test_generators).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lesson/lesson.h"
#include <cjson/cJSON.h>
#include "base/prng.h"
#include "base/text.h"
#include "unit_common.h"

/* ---- helpers ---- */

static Lesson *load_good(const char *rel, char **warn)
{
	char *path = path_of(rel), *err = NULL;
	Lesson *l;

	l = lesson_load(path, &err, warn);
	if (l == NULL)
		fail_msg("%s", err);
	assert_null(err);
	free(path);
	return l;
}

/* Each line of lines (separated by "\n") prefixed with "PATH: ", into a new string. */
static char *prefix_lines(const char *path, const char *lines)
{
	size_t n = strlen(lines) + 1, count = 0, o = 0;
	const char *p, *nl;
	char *out;

	for (p = lines; *p; p++)
		count += *p == '\n';
	n += count * (strlen(path) + 2);
	out = malloc(n);
	assert_non_null(out);
	for (p = lines; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		assert_non_null(nl);
		o += (size_t)snprintf(out + o, n - o, "%s: %.*s\n", path, (int)(nl - p), p);
	}
	out[o] = '\0';
	return out;
}

/* Load tests/bad/NAME.json: it must fail with exactly "PATH" + suffix. */
static void expect_error(const char *name, const char *suffix)
{
	char rel[256], *path, *err = NULL, *warn = NULL, *want;
	Lesson *l;

	snprintf(rel, sizeof rel, "tests/bad/%s.json", name);
	path = path_of(rel);
	l = lesson_load(path, &err, &warn);
	assert_null(l);
	assert_non_null(err);
	want = malloc(strlen(path) + strlen(suffix) + 1);
	assert_non_null(want);
	strcpy(want, path);
	strcat(want, suffix);
	assert_string_equal(err, want);
	free(want);
	free(err);
	free(warn);
	free(path);
}

/* ---- good lessons ---- */

static void test_basic(void **state)
{
	Lesson *l;
	char *warn = NULL;

	(void)state;
	l = load_good("tests/good/basic.json", &warn);
	assert_null(warn);
	assert_non_null(strstr(l->path, "tests/good/basic.json"));
	assert_int_equal(l->cfg.n, 4);
	assert_int_equal(l->cfg.m, 4);
	assert_int_equal(l->cfg.d_model, 3);
	assert_int_equal(l->cfg.d_src, 3);
	assert_int_equal(l->lp.heads, 2);
	assert_int_equal(l->lp.d_k, 2);
	assert_int_equal(l->lp.d_v, 1);
	assert_int_equal(l->lp.d_out, 3);
	assert_false(l->cfg.has_source);
	assert_null(l->cfg.source_tokens);
	assert_string_equal(l->cfg.tokens[0], "I");
	assert_string_equal(l->cfg.tokens[3], "saw");
	assert_string_equal(text_get(&l->title, "en"), "I saw a saw");
	assert_string_equal(text_get(&l->title, "zh"), "我看见一把锯");
	/* Texts are kept raw: paragraphs and tabs stay. */
	assert_string_equal(text_get(&l->summary, "zh"), "One-hot inputs.\n\tIndented second paragraph.");
	assert_int_equal(l->cfg.input.rows, 4);
	assert_int_equal(l->cfg.input.cols, 3);
	assert_true(MAT_AT(l->cfg.input, 3, 1) == 1.0);
	assert_true(MAT_AT(l->cfg.input, 3, 2) == 0.0);
	assert_true(MAT_AT(l->lp.W_q, 0, 2) == 0.5);
	assert_true(MAT_AT(l->lp.W_k, 2, 3) == 0.5);
	assert_int_equal(l->cfg.mask, MASK_CAUSAL);
	assert_true(mat_empty(&l->cfg.mask_matrix));
	assert_false(l->cfg.mask_fill_inf);
	assert_true(l->cfg.mask_fill == -1e9);
	assert_int_equal(l->cfg.scale, SCALE_VALUE);
	assert_true(l->cfg.scale_value == 0.5);
	assert_true(l->cfg.scale_explicit);
	assert_int_equal(l->cfg.score, SCORE_DOT);
	assert_true(mat_empty(&l->lp.w_e));
	assert_int_equal(l->cfg.positional, POS_NONE);

	assert_int_equal(l->nsteps, 4);
	assert_int_equal(l->steps[0].stage, STAGE_INPUT);
	assert_string_equal(text_get(&l->steps[0].text, "zh"), "输入。");
	assert_int_equal(l->steps[1].stage, STAGE_SCORES);
	assert_int_equal(l->steps[1].head, 1);
	assert_true(l->steps[1].has_focus);
	assert_string_equal(l->steps[1].focus.matrix, "scores");
	assert_int_equal(l->steps[1].focus.head, 1); /* the step's head */
	assert_int_equal(l->steps[1].focus.row, 3);
	assert_int_equal(l->steps[1].focus.col, 1);
	assert_true(l->steps[2].has_quiz);
	assert_int_equal(l->steps[2].quiz.nchoices, 3);
	assert_int_equal(l->steps[2].quiz.answer_choice, 2);
	assert_string_equal(text_get(&l->steps[2].quiz.choices[1], "en"), "b");
	assert_string_equal(text_get(&l->steps[2].quiz.hint, NULL), "Look.");
	assert_true(l->steps[3].has_quiz);
	assert_int_equal(l->steps[3].quiz.nchoices, 0);
	assert_string_equal(l->steps[3].quiz.answer_cell.matrix, "weights");
	assert_int_equal(l->steps[3].quiz.answer_cell.head, 1);
	assert_int_equal(l->steps[3].quiz.answer_cell.row, 1);
	assert_int_equal(l->steps[3].quiz.answer_cell.col, 0);
	assert_true(l->steps[3].quiz.tolerance == 0.05);
	assert_true(text_empty(&l->steps[3].quiz.hint));

	assert_true(lesson_stage_present(l, STAGE_INPUT));
	assert_false(lesson_stage_present(l, STAGE_POSITIONAL));
	assert_true(lesson_stage_present(l, STAGE_SPLIT));
	assert_true(lesson_stage_present(l, STAGE_MASK));
	assert_true(lesson_stage_present(l, STAGE_CONCAT));
	assert_true(lesson_stage_present(l, STAGE_OUTPUT));
	assert_false(lesson_stage_present(l, STAGE_COUNT));
	assert_null(l->compare);
	lesson_free(l);
}

/*
 * Reference numbers from an independent Python version of prng.h:
 *   W_v = {"random": "uniform", "rows": 3, "cols": 2, "seed": 7, "low": -2, "high": 2}
 *   W_o = {"random": "normal", "rows": 2, "cols": 3, "seed": 42, "mean": 1, "std": 0.5}
 * and SplitMix64's first output for seed 0, 0xe220a8397b1dcdaf.
 */
static void test_generators(void **state)
{
	static const double wv[6] = {
		-0.44068100643491404, -1.9328468218873756, 1.6030427224275337,
		0.33172117211231233, -0.19023241995412654, -1.0022739108690266,
	};
	static const double wo[6] = {
		1.2464753279086875, 0.6529971663919913, 0.3594613260611488,
		0.549221403251413, 0.6990610094521335, 1.3212838144898236,
	};
	Lesson *a, *b;
	Prng p;
	int i;

	(void)state;
	prng_seed(&p, 0);
	assert_true(prng_next(&p) == 0xe220a8397b1dcdafULL);
	a = load_good("tests/good/basic.json", NULL);
	b = load_good("tests/good/basic.json", NULL);
	assert_int_equal(a->lp.W_v.rows, 3);
	assert_int_equal(a->lp.W_v.cols, 2);
	for (i = 0; i < 6; i++) {
		assert_float_equal(a->lp.W_v.a[i], wv[i], 1e-15);
		assert_float_equal(a->lp.W_o.a[i], wo[i], 1e-14);
	}
	/* Same seed, same numbers. */
	assert_true(same_numbers(&a->lp.W_v, &b->lp.W_v));
	assert_true(same_numbers(&a->lp.W_o, &b->lp.W_o));
	lesson_free(a);
	lesson_free(b);
}

static void test_cross_compare(void **state)
{
	Lesson *l, *c;

	(void)state;
	l = load_good("tests/good/cross.json", NULL);
	assert_int_equal(l->cfg.n, 2);
	assert_int_equal(l->cfg.m, 5);
	assert_int_equal(l->cfg.d_model, 3);
	assert_int_equal(l->cfg.d_src, 4);
	assert_true(l->cfg.has_source);
	assert_string_equal(l->cfg.tokens[1], "t1");
	assert_string_equal(l->cfg.source_tokens[4], "s4");
	assert_int_equal(l->cfg.positional, POS_SINUSOIDAL);
	assert_int_equal(l->cfg.score, SCORE_ADDITIVE);
	assert_int_equal(l->lp.w_e.rows, 1);
	assert_int_equal(l->lp.w_e.cols, 2);
	assert_true(l->lp.w_e.a[1] == -0.5);
	assert_int_equal(l->cfg.mask, MASK_PADDING);
	assert_int_equal(l->cfg.mask_matrix.rows, 1);
	assert_int_equal(l->cfg.mask_matrix.cols, 5);
	assert_true(MAT_AT(l->cfg.mask_matrix, 0, 3) == 0.0);
	assert_true(l->cfg.mask_fill_inf);
	assert_int_equal(l->cfg.scale, SCALE_SQRT_DK);
	assert_false(l->cfg.scale_explicit);
	assert_true(mat_empty(&l->lp.W_o));
	assert_int_equal(l->lp.d_out, 2);
	assert_false(lesson_stage_present(l, STAGE_OUTPUT));
	assert_true(lesson_stage_present(l, STAGE_POSITIONAL));
	assert_false(lesson_stage_present(l, STAGE_SPLIT));

	c = l->compare;
	assert_non_null(c);
	assert_string_equal(text_get(&l->compare_label, "zh"), "无掩码");
	assert_int_equal(c->cfg.mask, MASK_NONE);
	assert_int_equal(c->cfg.scale, SCALE_NONE);
	assert_int_equal(c->cfg.m, 5);
	assert_true(same_numbers(&c->lp.W_q, &l->lp.W_q));
	assert_true(same_numbers(&c->cfg.source_input, &l->cfg.source_input));
	assert_int_equal(c->nsteps, 0);
	assert_null(c->compare);
	lesson_free(l);
}

static void test_warnings(void **state)
{
	char *path = path_of("tests/good/warnings.json"), *err = NULL, *warn = NULL, *want;
	Lesson *l;

	(void)state;
	l = lesson_load(path, &err, &warn);
	assert_non_null(l);
	assert_non_null(warn);
	want = prefix_lines(path,
	                    "warning: unknown key \"tokns\" (did you mean \"tokens\"?)\n"
	                    "warning: steps[0]: unknown key \"txt\" (did you mean \"text\"?)\n"
	                    "warning: steps[0].focus: unknown key \"colour\"\n"
	                    "warning: compare: unknown key \"maks\" (did you mean \"mask\"?)\n");
	assert_string_equal(warn, want);
	free(want);
	assert_int_equal(l->compare->cfg.scale, SCALE_NONE);
	assert_int_equal(l->compare->cfg.mask, MASK_NONE);
	lesson_free(l);
	free(warn);
	free(path);
}

/* A warning in a decoder layer's block (read once per link) is said once. */
static void test_encdec_warning_once(void **state)
{
	char *path = path_of("tests/good/v2_encdec_block_warning.json"), *err = NULL, *warn = NULL, *want;
	Lesson *l;

	(void)state;
	l = lesson_load(path, &err, &warn);
	assert_non_null(l);
	want = prefix_lines(path, "warning: layers[0].block: unknown key \"actvation\"\n");
	assert_string_equal(warn, want);
	free(want);
	lesson_free(l);
	free(warn);
	free(path);
}

static void test_clone_validate(void **state)
{
	Lesson *l, *c;
	char *err = NULL;

	(void)state;
	l = load_good("tests/good/basic.json", NULL);
	assert_int_equal(lesson_validate(l, &err), 0);
	assert_null(err);
	c = lesson_clone(l);
	assert_non_null(c);
	assert_true(same_numbers(&c->lp.W_o, &l->lp.W_o));
	assert_true(c->lp.W_o.a != l->lp.W_o.a);
	assert_string_equal(c->cfg.tokens[1], "saw");
	assert_string_equal(text_get(&c->steps[2].quiz.choices[2], NULL), "c");
	assert_int_equal(lesson_validate(c, &err), 0);

	/* An edit that breaks the shape rules is refused with the loader's message. */
	c->lp.heads = 3;
	assert_int_equal(lesson_validate(c, &err), -1);
	assert_non_null(err);
	assert_non_null(strstr(err, "basic.json: heads: 3 does not divide the 4 columns of W_q"));
	free(err);
	c->lp.heads = 2;
	c->steps[1].focus.row = 9;
	assert_int_equal(lesson_validate(c, &err), -1);
	assert_non_null(strstr(err, "basic.json: steps[1].focus.row: 9 is outside the 4 rows of scores"));
	free(err);
	c->steps[1].focus.row = 0;
	MAT_AT(c->cfg.input, 0, 0) = INFINITY;
	assert_int_equal(lesson_validate(c, &err), -1);
	assert_non_null(strstr(err, "X[0][0]: expected a finite number"));
	free(err);
	lesson_free(c);

	l->compare = lesson_clone(l);
	assert_non_null(l->compare);
	c = lesson_clone(l);
	assert_non_null(c->compare);
	assert_int_equal(c->compare->nsteps, 4);
	lesson_free(c);
	lesson_free(l);
}

static void test_languages(void **state)
{
	static const char *const both[] = { "en", "zh", NULL };
	Lesson *l;
	char *report = NULL, *want;
	int n;

	(void)state;
	l = load_good("tests/good/basic.json", NULL);
	n = lesson_check_languages(l, both, &report);
	assert_int_equal(n, 7);
	want = prefix_lines(l->path,
	                    "summary: no \"zh\" text\n"
	                    "steps[2].quiz.question: no \"zh\" text\n"
	                    "steps[2].quiz.choices[0]: no \"zh\" text\n"
	                    "steps[2].quiz.choices[1]: no \"zh\" text\n"
	                    "steps[2].quiz.choices[2]: no \"zh\" text\n"
	                    "steps[2].quiz.hint: no \"zh\" text\n"
	                    "steps[3].quiz.question: no \"zh\" text\n");
	assert_string_equal(report, want);
	free(want);
	free(report);
	report = NULL;
	lesson_free(l);

	l = load_good("tests/good/cross.json", NULL);
	assert_int_equal(lesson_check_languages(l, both, &report), 1);
	assert_non_null(strstr(report, "cross.json: title: no \"zh\" text\n"));
	free(report);
	lesson_free(l);
}

static void test_load_string(void **state)
{
	static const char json[] = "{\"attnviz\": 1, \"tokens\": [\"a\"], \"X\": [[2]], "
	                           "\"W_q\": [[1]], \"W_k\": [[1]], \"W_v\": [[1]]}GARBAGE";
	static const char bom[] = "\xEF\xBB\xBF{\"attnviz\": 1, \"tokens\": [\"a\"], \"X\": [[2]], "
	                          "\"W_q\": [[1]], \"W_k\": [[1]], \"W_v\": [[1]]}";
	char *err = NULL, *warn = NULL;
	Lesson *l;

	(void)state;
	/* The length is what counts: no NUL needed after the object. */
	l = lesson_load_string("inline", json, strlen(json) - 7, &err, &warn);
	assert_non_null(l);
	assert_string_equal(l->path, "inline");
	assert_true(MAT_AT(l->cfg.input, 0, 0) == 2.0);
	lesson_free(l);
	/* With the garbage it is a syntax error, named by the given name. */
	l = lesson_load_string("inline", json, strlen(json), &err, &warn);
	assert_null(l);
	assert_non_null(strstr(err, "inline:1:"));
	assert_non_null(strstr(err, "JSON syntax error near here"));
	free(err);
	/* A byte-order mark is skipped. */
	l = lesson_load_string("bom", bom, sizeof bom - 1, &err, &warn);
	assert_non_null(l);
	lesson_free(l);
	/* A caller that wants no messages. */
	assert_null(lesson_load_string("x", "[", 1, NULL, NULL));
	assert_null(warn);
}

static void test_too_big(void **state)
{
	char path[] = "/tmp/attnviz_big_XXXXXX", *err = NULL, want[256];
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	/* A sparse file: no disk space used, and the loader must not read it. */
	assert_int_equal(ftruncate(fd, LESSON_MAX_BYTES + 1), 0);
	close(fd);
	assert_null(lesson_load(path, &err, NULL));
	snprintf(want, sizeof want, "%s: the file is %ld bytes, over the limit of %ld bytes (LESSON_MAX_BYTES)", path,
	         (long)LESSON_MAX_BYTES + 1, (long)LESSON_MAX_BYTES);
	assert_string_equal(err, want);
	free(err);
	unlink(path);
}

static void test_missing_and_directory(void **state)
{
	char *path = path_of("tests/bad/no_such_file.json"), *err = NULL, want[1024];

	(void)state;
	assert_null(lesson_load(path, &err, NULL));
	snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
	assert_string_equal(err, want);
	free(err);
	free(path);
	path = path_of("tests/good");
	assert_null(lesson_load(path, &err, NULL));
	snprintf(want, sizeof want, "%s: is a directory, not a lesson file", path);
	assert_string_equal(err, want);
	free(err);
	free(path);
}

/* ---- one test per error message, each with its own file in tests/bad ---- */

#define BAD(name, suffix) \
	static void test_bad_##name(void **state) \
	{ \
		(void)state; \
		expect_error(#name, suffix); \
	}

BAD(syntax, ":3:17: a missing comma between two values\n"
            "  \"tokens\": [\"a\" \"b\"],\n"
            "                ^")
/* the mistakes of JSON written by hand, named, with the caret on the character at fault */
BAD(syntax_trailing_comma, ":3:22: a trailing comma: JSON allows no comma before ] or }\n"
                           "  \"tokens\": [\"a\", \"b\",],\n"
                           "                     ^")
BAD(syntax_comment, ":2:17: a // comment: JSON has no comments\n"
                    "  \"attnviz\": 1, // the format version\n"
                    "                ^")
BAD(syntax_curly, ":3:12: a curly quote: JSON strings need straight double quotes \"\n"
                  "  \"title\": \u201cSelf-attention\u201d\n"
                  "           ^")
BAD(syntax_control, ":3:34: JSON syntax error near here\n"
                    "  \"title\": \"tab\\x09here \\x1b[31m red\",, \n"
                    "                                       ^")
BAD(syntax_wide, ":3:21: a missing comma between two values\n"
                 "  \"title\": \"机器学习真好玩\" \"x\"\n"
                 "                           ^")
BAD(nul, ":1:27: NUL byte in the file (a lesson is UTF-8 text)\n"
         "{\"attnviz\": 1, \"title\": \"a\n"
         "                          ^")
BAD(nul_escape, ":2:15: \\u0000 (NUL) in a string: a text cannot hold it\n"
                " \"tokens\": [\"x\\u0000y\"]}\n"
                "              ^")
BAD(utf16, ": the file is UTF-16; save it as UTF-8")
BAD(empty, ": empty file (a lesson is one JSON object: {\"attnviz\": 1, …})")
BAD(blank, ": empty file (a lesson is one JSON object: {\"attnviz\": 1, …})")
BAD(not_object, ": a lesson is one JSON object {\"attnviz\": 1, …}, but this file holds an array")
BAD(version3, ": attnviz: this file is format 3, but this build of attnviz reads formats 1 and 2 (a newer attnviz may read it)")
BAD(no_version, ": attnviz: missing: a lesson starts with \"attnviz\": 1 (the format version)")
BAD(row_length, ": W_q[2]: expected 4 numbers, got 3")
BAD(heads_divide, ": heads: 3 does not divide the 8 columns of W_q")
BAD(heads_type, ": heads: expected a whole number ≥ 1, got \"two\"")
BAD(heads_limit, ": heads: 100 is over the limit of 64 heads (LESSON_MAX_HEADS)")
BAD(wq_rows, ": W_q: expected 2 rows (d_model, the columns of X), got 3")
BAD(missing_wq, ": W_q: missing (every lesson gives W_q, W_k and W_v)")
BAD(tokens_count, ": tokens: 3 labels, but X has 4 rows (one label per row)")
BAD(overflow, ": X[1][0]: the number is too large (it overflows to infinity)")
BAD(utf8_token, ": tokens[1]: invalid UTF-8 (byte 0xe9 at byte 1 of the string); save the file as UTF-8")
BAD(utf8_text, ": steps[0].text.zh: invalid UTF-8 (byte 0xe5 at byte 3 of the string); save the file as UTF-8")
BAD(text_lang, ": title: \"english\" is not a language code (expected a short code such as \"en\" or \"zh\")")
BAD(focus_row, ": steps[2].focus.row: 7 is outside the 4 rows of scores")
BAD(focus_col, ": steps[0].focus.col: 2 is outside the 2 columns of weighted")
BAD(focus_matrix, ": steps[0].focus.matrix: unknown matrix \"scors\" (did you mean \"scores\"?)")
BAD(focus_absent, ": steps[0].focus.matrix: this lesson has no PE (it has no positional encoding)")
BAD(step_head, ": steps[0].head: 2 is outside the 2 heads of this lesson")
BAD(unknown_stage, ": steps[0].stage: unknown stage \"softmx\" (did you mean \"softmax\"?)")
BAD(stage_absent, ": steps[1].stage: the stage \"mask\" is not in this lesson (it has no mask)")
BAD(mask_value, ": mask[1][2]: expected 0 or 1, got 0.5")
BAD(mask_shape, ": mask: expected 3 rows (n, one per query), got 2")
BAD(mask_padding, ": mask.padding: expected 3 numbers (one per key, m = 3), got 4")
BAD(mask_word, ": mask: expected \"none\", \"causal\", {\"padding\": [1, 1, 0, …]}, {\"window\": w}, an n × m matrix "
               "of 0/1, or a list of them, got \"casual\" (did you mean \"causal\"?)")
BAD(causal_nonsquare, ": mask: \"causal\" needs a square score matrix, but n = 3 and m = 5")
BAD(step_t_stage, ": steps[0].t: \"t\" (a generation step) belongs to a \"decode\" step, not softmax")
BAD(step_t_range, ": steps[0].t: expected a position from 0 to 2 (n − 1), got 3")
BAD(step_tile_range, ": steps[0].tile: expected [query block 0 … 1, key block 0 … 1] (block_q 2, block_k 2), got [0, 2]")
BAD(mask_list_nested, ": mask[1]: expected a mask (\"causal\", {\"padding\": …}, {\"window\": w} or a matrix); a list of "
                      "masks cannot hold another list")
BAD(mask_two_keys, ": mask: a mask object has one key: to combine padding and a window, give a list "
                   "[{\"padding\": …}, {\"window\": …}]")
BAD(too_many_rows, ": X: 5000 rows is over the limit of 4096 tokens (LESSON_MAX_TOKENS)")
BAD(too_many_numbers, ": too large: its matrices and stages would hold 285212672 numbers, over the limit of "
                      "268435456 (LESSON_MAX_NUMBERS); make n, d_model or heads smaller")
BAD(generator_kind, ": X.random: expected \"normal\" or \"uniform\", got \"gauss\"")
BAD(seed, ": X.seed: expected a whole number from 0 to 2^53 = 9007199254740992, got -1")
BAD(quiz_choices, ": steps[0].quiz.choices: expected at least 2 choices, got 1")
BAD(quiz_answer, ": steps[1].quiz.answer: 3 is outside the 3 choices (0 to 2: the file counts from 0, the screen numbers them 1 to 3)")
BAD(quiz_cell, ": steps[0].quiz.answer.col: 5 is outside the 2 columns of weights")
BAD(quiz_tolerance, ": steps[0].quiz.tolerance: expected a number > 0, got 0")
BAD(additive_no_we, ": w_e: missing: \"score\": \"additive\" needs w_e, 2 numbers (the columns of W_q)")
BAD(we_length, ": w_e: expected 2 numbers (heads × d_k, the columns of W_q), got 3")
BAD(scale, ": scale: expected true (× 1/√d_k), false (× 1) or a number (× that number), got \"yes\"")
BAD(compare, ": compare.heads: 3 does not divide the 4 columns of W_q")
BAD(compare_steps, ": compare.steps: a comparison cannot change \"steps\" (it changes the computation: keys "
                   "such as \"mask\", \"scale\" or \"W_q\")")
BAD(step_compare_absent, ": steps[0].compare: this lesson has no \"compare\" variant to show")
BAD(step_compare_type, ": steps[0].compare: expected true (show the compare variant beside the results) or false, "
                       "got \"on\"")

/* format 2: biases, the block, layers */
BAD(v2_bias_length, ": b_q: expected 4 numbers (the columns of W_q), got 3")
BAD(v2_block_in_v1, ": block: needs format version 2: start the lesson with \"attnviz\": 2")
BAD(v2_block_width, ": block: the residual adds the attention's output to its input, so the output needs d_model = 4 columns, but it has 3 (the columns of W_o)")
BAD(v2_bo_without_wo, ": b_o: this is W_o's bias, and this lesson has no W_o (give W_o, or leave b_o out)")
BAD(v2_encoder, ": heads: an encoder–decoder gives its attentions' keys in \"self\" and \"cross\" (the decoder's) and in \"encoder\", not at the top level")
BAD(v2_encdec_cross_wk, ": layers[1].cross.W_k: expected 4 rows (the encoder's d_model), got 3")
BAD(v2_encdec_enc_ln3, ": encoder.block.ln3: only a decoder layer has a third norm (its cross-attention is the extra sublayer); an encoder layer or a stack's layer has ln1 and ln2")
BAD(v2_encdec_enc_wk, ": encoder.W_k: expected 4 rows (the columns of X), got 2")
BAD(v2_encdec_no_self, ": layers[1].self: missing: decoder layer 1's self-attention {\"heads\": …, \"W_q\": …, …} (in the layer, or at the top level for every layer)")
BAD(v2_cross_no_encoder, ": cross: only in an encoder–decoder lesson (one with \"encoder\"): the decoder's cross-attention; a lesson without an encoder gives its attention's keys at the top level")
BAD(v2_encdec_source, ": source: an encoder–decoder's cross-attention reads the encoder's output: it has no \"source\"")
/* a step may show a layer of the encoder ("encoder": true), checked against that layer */
BAD(v2_encdec_step_enc_layer, ": steps[0].layer: 2 is outside the encoder's 2 layers (they count from 0)")
BAD(v2_encdec_step_enc_word, ": steps[0].encoder: expected true (the step shows a layer of the encoder) or false, got \"yes\"")
BAD(v2_encdec_step_enc_focus, ": steps[0].focus.row: 3 is outside the 3 rows of weights")
BAD(v2_step_encoder_none, ": steps[0].encoder: only in an encoder\u2013decoder lesson (one with \"encoder\"): this lesson has no encoder")
BAD(v2_eps, ": block.eps: expected a number > 0 (it keeps the norm from dividing by 0), got 0")
BAD(v2_ffn_w2_rows, ": block.ffn.W_2: expected 8 rows (d_ff, the columns of W_1), got 4")
BAD(v2_layer_w2, ": layers[1].block.ffn.W_2: expected 8 rows (d_ff, the columns of W_1), got 1")
BAD(v2_layers_empty, ": layers: expected a list of layers [{…}, …] (each may be {} to repeat the top level), got an empty list")
BAD(v2_norm_word, ": block.norm: expected \"post\", \"pre\", \"none\", \"after\" or \"sandwich\", got \"middle\"")
BAD(v2_rms_beta, ": block.ln1.beta: RMSNorm has no beta (only gamma); remove it, or use \"norm_kind\": \"layernorm\"")
BAD(v2_stage_absent, ": steps[0].stage: the stage \"norm1\" is not in this lesson (its block has no norms: its \"norm\" is \"none\")")
BAD(v2_step_layer, ": steps[0].layer: 2 is outside the 2 layers of this lesson (they count from 0)")
BAD(v2_swiglu_gate, ": block.ffn.W_3: missing: \"swiglu\" needs W_3 (d_model × d_ff), the gate")

/* ---- stage names and texts ---- */

static void test_stage_names(void **state)
{
	int s;

	(void)state;
	/* Every name finds its stage; two entries share "norm1" and "norm2" (pre- and post-norm). */
	for (s = 0; s < STAGE_COUNT; s++)
		assert_string_equal(stage_name((Stage)stage_find(stage_name((Stage)s))), stage_name((Stage)s));
	assert_string_equal(stage_name(STAGE_SOFTMAX), "softmax");
	assert_null(stage_name(STAGE_COUNT));
	assert_int_equal(stage_find("SoftMax"), STAGE_SOFTMAX);
	assert_int_equal(stage_find("softmx"), -1);
}

static void test_text(void **state)
{
	Text t = { 0 }, c = { 0 };
	char *e;

	(void)state;
	assert_string_equal(text_get(&t, "zh"), "");
	assert_true(text_empty(&t));
	t.v = calloc(2, sizeof *t.v);
	assert_non_null(t.v);
	strcpy(t.v[0].lang, "zh");
	t.v[0].s = strdup("注意");
	strcpy(t.v[1].lang, "en");
	t.v[1].s = strdup("attention");
	t.count = 2;
	assert_string_equal(text_get(&t, "zh"), "注意");
	assert_string_equal(text_get(&t, "fr"), "attention"); /* English when missing */
	assert_string_equal(text_get(&t, NULL), "attention");
	assert_true(text_has(&t, "zh"));
	assert_false(text_has(&t, "fr"));
	assert_int_equal(text_copy(&c, &t), 0);
	text_free(&t);
	assert_string_equal(text_get(&c, "zh"), "注意");
	text_free(&c);
	assert_true(text_empty(&c));

	e = text_escape("a\tb\nc\x1b[2J\x7f\xc2\x9b\xff 注意", "\n\t");
	assert_string_equal(e, "a\tb\nc\\x1b[2J\\x7f\\x9b\\xff 注意");
	free(e);
	e = text_escape("a\tb\n", "");
	assert_string_equal(e, "a\\x09b\\x0a");
	free(e);
	/* bidi overrides and isolates are escaped; zero-width and combining marks are kept */
	e = text_escape("a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xe2\x80\x8b" "d\xcc\x81", "");
	assert_string_equal(e, "a\\u202eb\\u2066c\xe2\x80\x8b" "d\xcc\x81");
	free(e);

	assert_true(text_valid_utf8("注意 ok", strlen("注意 ok")));
	assert_true(text_valid_utf8("\xf0\x9f\x98\x80", 4));    /* U+1F600 */
	assert_false(text_valid_utf8("\xc0\xaf", 2));           /* overlong "/" */
	assert_false(text_valid_utf8("\xe0\x80\xaf", 3));       /* overlong */
	assert_false(text_valid_utf8("\xed\xa0\x80", 3));       /* surrogate U+D800 */
	assert_false(text_valid_utf8("\xf4\x90\x80\x80", 4));   /* above U+10FFFF */
	assert_false(text_valid_utf8("\xe6\x9c", 2));           /* cut short */
	assert_false(text_valid_utf8("\x80", 1));
}

/*
 * A stack's layers are read straight into its model (no lesson per layer)
 * and layer 0's parameters are kept once, as the model's lp: the accessor
 * finds them there, layer[0].lp is empty, the other layers hold their own,
 * each layer's sizes are what its matrices give, and a clone keeps it so.
 */
static void test_stack_one_copy(void **state)
{
	char *warn = NULL, *err = NULL;
	Lesson *l = load_good("tests/golden/v2/block_three_layers.json", &warn);
	Lesson *c;

	(void)state;
	free(warn);
	assert_true(l->nlayers == 3);
	assert_ptr_equal(lesson_layer_params(l, 0), &l->lp);
	assert_true(mat_empty(&l->layer[0].lp.W_q));
	for (int i = 1; i < l->nlayers; i++) {
		const LayerParams *p = lesson_layer_params_const(l, i);
		assert_ptr_equal(p, &l->layer[i].lp);
		assert_false(mat_empty(&p->W_q));
		assert_int_equal(p->d_k * p->heads, p->W_q.cols);
		assert_int_equal(l->layer[i].own.d_model, l->cfg.d_model);
	}
	assert_int_equal(l->cfg.n, l->cfg.input.rows);
	assert_int_equal(l->cfg.d_model, l->cfg.input.cols);
	c = lesson_clone(l);
	assert_non_null(c);
	assert_ptr_equal(lesson_layer_params(c, 0), &c->lp);
	assert_true(mat_empty(&c->layer[0].lp.W_q));
	assert_true(c->lp.W_q.a != l->lp.W_q.a);
	assert_int_equal(lesson_validate(c, &err), 0);
	assert_null(err);
	/* one copy: an edit of layer 0's heads is the top level's, which the checks then read */
	c->lp.heads = c->lp.W_q.cols + 1;
	assert_int_equal(lesson_validate(c, &err), -1);
	assert_non_null(err);
	free(err);
	lesson_free(c);
	lesson_free(l);
}

/*
 * A step on a stack's layer above 0 at a backward stage: the engine computes
 * every layer's gradient for the stack's loss, so the loader takes the step
 * (it used to check layers above 0 as if without a loss); without "backward"
 * the same step is refused, naming the loss.
 */
static char *stack_with_step(int with_loss, int local_mask)
{
	char *path = path_of("tests/golden/v2/block_two_layers.json");
	FILE *f = fopen(path, "r");
	char *text = NULL, *out;
	size_t size = 0;
	cJSON *root, *steps, *step;

	assert_non_null(f);
	assert_true(getdelim(&text, &size, '\0', f) > 0);
	fclose(f);
	root = cJSON_Parse(text);
	assert_non_null(root);
	assert_non_null(cJSON_GetObjectItemCaseSensitive(root, "backward"));
	if (!with_loss)
		cJSON_DeleteItemFromObjectCaseSensitive(root, "backward");
	if (local_mask) { /* no shared mask; layer 1 its own */
		cJSON_ReplaceItemInObjectCaseSensitive(root, "mask", cJSON_CreateString("none"));
		cJSON_AddStringToObject(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "layers"), 1), "mask", "causal");
	}
	steps = cJSON_AddArrayToObject(root, "steps");
	step = cJSON_CreateObject();
	cJSON_AddItemToArray(steps, step);
	cJSON_AddStringToObject(step, "stage", local_mask ? "mask" : "back_output");
	cJSON_AddNumberToObject(step, "layer", 1);
	cJSON_AddStringToObject(step, "text", "layer 1's gradient");
	out = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	free(text);
	free(path);
	return out;
}

static void test_stack_layer_backward_step(void **state)
{
	char *json = stack_with_step(1, 0), *err = NULL, *warn = NULL;
	Lesson *l;
	LessonShape sh;

	(void)state;
	l = load_named("two_layers_step.json", json);
	assert_int_equal(l->nsteps, 1);
	assert_int_equal(l->steps[0].layer, 1);
	assert_int_equal(l->steps[0].stage, STAGE_BACK_OUTPUT);
	lesson_layer_shape(&l->model, 1, &sh); /* what a session checks the step with afterwards */
	assert_true(stage_present(&sh, STAGE_BACK_OUTPUT));
	lesson_free(l);
	free(json);
	json = stack_with_step(0, 0);
	l = lesson_load_string("two_layers_step.json", json, strlen(json), &err, &warn);
	assert_null(l);
	assert_non_null(err);
	assert_non_null(strstr(err, "steps[0].stage: the stage \"back_output\" is not in this lesson (it has no loss"));
	free(err);
	free(warn);
	free(json);
}

/*
 * A step on a local layer's own mask (the stack's shared mask "none"): the
 * loader takes it, and so do the shapes a session judges steps by after an
 * edit (lesson_layer_shape, adapt_steps), which used to read the shared mask
 * and move the step off the layer's mask stage.
 */
static void test_local_mask_step(void **state)
{
	char *json = stack_with_step(1, 1);
	Lesson *l;
	LessonShape sh;

	(void)state;
	l = load_named("local_mask_step.json", json);
	assert_int_equal(l->steps[0].stage, STAGE_MASK);
	lesson_layer_shape(&l->model, 1, &sh);
	assert_true(stage_present(&sh, STAGE_MASK));
	lesson_layer_shape(&l->model, 0, &sh); /* layer 0 keeps the shared "none" */
	assert_false(stage_present(&sh, STAGE_MASK));
	lesson_free(l);
	free(json);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_stack_one_copy),
		cmocka_unit_test(test_stack_layer_backward_step),
		cmocka_unit_test(test_local_mask_step),
		cmocka_unit_test(test_generators),
		cmocka_unit_test(test_cross_compare),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_clone_validate),
		cmocka_unit_test(test_languages),
		cmocka_unit_test(test_load_string),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_missing_and_directory),
		cmocka_unit_test(test_stage_names),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_bad_syntax),
		cmocka_unit_test(test_bad_syntax_trailing_comma),
		cmocka_unit_test(test_bad_syntax_comment),
		cmocka_unit_test(test_bad_syntax_curly),
		cmocka_unit_test(test_bad_syntax_control),
		cmocka_unit_test(test_bad_syntax_wide),
		cmocka_unit_test(test_bad_nul),
		cmocka_unit_test(test_bad_nul_escape),
		cmocka_unit_test(test_bad_utf16),
		cmocka_unit_test(test_bad_empty),
		cmocka_unit_test(test_bad_blank),
		cmocka_unit_test(test_bad_not_object),
		cmocka_unit_test(test_bad_version3),
		cmocka_unit_test(test_bad_v2_bias_length),
		cmocka_unit_test(test_bad_v2_block_in_v1),
		cmocka_unit_test(test_bad_v2_block_width),
		cmocka_unit_test(test_bad_v2_bo_without_wo),
		cmocka_unit_test(test_bad_v2_encoder),
		cmocka_unit_test(test_bad_v2_encdec_cross_wk),
		cmocka_unit_test(test_bad_v2_encdec_enc_ln3),
		cmocka_unit_test(test_bad_v2_encdec_enc_wk),
		cmocka_unit_test(test_bad_v2_encdec_no_self),
		cmocka_unit_test(test_bad_v2_encdec_source),
		cmocka_unit_test(test_bad_v2_encdec_step_enc_layer),
		cmocka_unit_test(test_bad_v2_encdec_step_enc_word),
		cmocka_unit_test(test_bad_v2_encdec_step_enc_focus),
		cmocka_unit_test(test_bad_v2_step_encoder_none),
		cmocka_unit_test(test_bad_v2_cross_no_encoder),
		cmocka_unit_test(test_encdec_warning_once),
		cmocka_unit_test(test_bad_v2_eps),
		cmocka_unit_test(test_bad_v2_ffn_w2_rows),
		cmocka_unit_test(test_bad_v2_layer_w2),
		cmocka_unit_test(test_bad_v2_layers_empty),
		cmocka_unit_test(test_bad_v2_norm_word),
		cmocka_unit_test(test_bad_v2_rms_beta),
		cmocka_unit_test(test_bad_v2_stage_absent),
		cmocka_unit_test(test_bad_v2_step_layer),
		cmocka_unit_test(test_bad_v2_swiglu_gate),
		cmocka_unit_test(test_bad_no_version),
		cmocka_unit_test(test_bad_row_length),
		cmocka_unit_test(test_bad_heads_divide),
		cmocka_unit_test(test_bad_heads_type),
		cmocka_unit_test(test_bad_heads_limit),
		cmocka_unit_test(test_bad_wq_rows),
		cmocka_unit_test(test_bad_missing_wq),
		cmocka_unit_test(test_bad_tokens_count),
		cmocka_unit_test(test_bad_overflow),
		cmocka_unit_test(test_bad_utf8_token),
		cmocka_unit_test(test_bad_utf8_text),
		cmocka_unit_test(test_bad_text_lang),
		cmocka_unit_test(test_bad_focus_row),
		cmocka_unit_test(test_bad_focus_col),
		cmocka_unit_test(test_bad_focus_matrix),
		cmocka_unit_test(test_bad_focus_absent),
		cmocka_unit_test(test_bad_step_head),
		cmocka_unit_test(test_bad_unknown_stage),
		cmocka_unit_test(test_bad_stage_absent),
		cmocka_unit_test(test_bad_mask_value),
		cmocka_unit_test(test_bad_mask_shape),
		cmocka_unit_test(test_bad_mask_padding),
		cmocka_unit_test(test_bad_mask_word),
		cmocka_unit_test(test_bad_causal_nonsquare),
		cmocka_unit_test(test_bad_step_t_stage),
		cmocka_unit_test(test_bad_step_t_range),
		cmocka_unit_test(test_bad_step_tile_range),
		cmocka_unit_test(test_bad_mask_list_nested),
		cmocka_unit_test(test_bad_mask_two_keys),
		cmocka_unit_test(test_bad_too_many_rows),
		cmocka_unit_test(test_bad_too_many_numbers),
		cmocka_unit_test(test_bad_generator_kind),
		cmocka_unit_test(test_bad_seed),
		cmocka_unit_test(test_bad_quiz_choices),
		cmocka_unit_test(test_bad_quiz_answer),
		cmocka_unit_test(test_bad_quiz_cell),
		cmocka_unit_test(test_bad_quiz_tolerance),
		cmocka_unit_test(test_bad_additive_no_we),
		cmocka_unit_test(test_bad_we_length),
		cmocka_unit_test(test_bad_scale),
		cmocka_unit_test(test_bad_compare),
		cmocka_unit_test(test_bad_compare_steps),
		cmocka_unit_test(test_bad_step_compare_absent),
		cmocka_unit_test(test_bad_step_compare_type),
	};

	return cmocka_run_group_tests_name("lesson", tests, NULL, NULL);
}
