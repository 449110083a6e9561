/* unit_demo.c: the demo-script parser's rules (demo.h) — `quiz` is an entry of
 * its own and takes no argument, a relative path after `load` or `source` is
 * the demo file's folder's (a bare name only when that folder holds it), and
 * `source` inside a playing demo splices the script in, within DEMO_MAX_LINES. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/demo.h"
#include "unit_tmpdir.h"

static Demo *parse(const char *path, const char *text, char **err)
{
	*err = NULL;
	return demo_parse(path, text, strlen(text), err);
}

static void test_quiz_entry(void **state)
{
	char *err;
	Demo *d = parse("d.txt", "goto softmax\nquiz\n  :quiz   # the class votes\npause\n", &err);

	(void)state;
	assert_non_null(d);
	assert_int_equal(d->n, 4);
	assert_int_equal(d->line[0].kind, DEMO_CMD);
	assert_int_equal(d->line[1].kind, DEMO_QUIZ);
	assert_int_equal(d->line[2].kind, DEMO_QUIZ);
	assert_int_equal(d->line[2].lineno, 3);
	assert_int_equal(d->line[3].kind, DEMO_PAUSE);
	assert_null(d->line[1].file);
	demo_free(d);

	d = parse("d.txt", "goto softmax\nquiz 2\n", &err);
	assert_null(d);
	assert_string_equal(err, "d.txt:2: quiz takes no argument");
	free(err);
	/* a word that only starts with quiz is a command */
	d = parse("d.txt", "quizzes\n", &err);
	assert_non_null(d);
	assert_int_equal(d->line[0].kind, DEMO_CMD);
	demo_free(d);
}

static void touch(const char *name)
{
	char p[256];
	FILE *f;
	snprintf(p, sizeof p, "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fclose(f);
}

static void test_paths_are_the_demo_folders(void **state)
{
	char path[128], want[256], *err;
	Demo *d;

	(void)state;
	touch("cat.json");
	touch("dog.json");
	snprintf(path, sizeof path, "%s/d.txt", dir);
	d = parse(path,
	          "load cat.json\nload dog\nload mask\nsource ../other.txt\nsource /abs/x.txt\n"
	          "load two words\ngoto cat.json\n",
	          &err);
	assert_non_null(d);
	snprintf(want, sizeof want, "load %s/cat.json", dir);
	assert_string_equal(d->line[0].text, want);
	snprintf(want, sizeof want, "load %s/dog.json", dir); /* a bare name the folder holds as NAME.json */
	assert_string_equal(d->line[1].text, want);
	assert_string_equal(d->line[2].text, "load mask");       /* a shipped lesson's name */
	snprintf(want, sizeof want, "source %s/../other.txt", dir);
	assert_string_equal(d->line[3].text, want);
	assert_string_equal(d->line[4].text, "source /abs/x.txt"); /* absolute: as it is */
	assert_string_equal(d->line[5].text, "load two words");    /* not one path: the command says so */
	assert_string_equal(d->line[6].text, "goto cat.json");     /* only load and source take paths */
	demo_free(d);

	/* a demo in the working directory: paths as they are */
	d = parse("d.txt", "load cat.json\n", &err);
	assert_non_null(d);
	assert_string_equal(d->line[0].text, "load cat.json");
	demo_free(d);
}

static void test_splice(void **state)
{
	char *err;
	Demo *d = parse("outer.txt", "goto input\nsource inner.txt\ngoto concat\n", &err);
	Demo *sub = parse("sub/inner.txt", "goto scores\nquiz\n", &err);

	(void)state;
	assert_non_null(d);
	assert_non_null(sub);
	assert_int_equal(demo_splice(d, 2, sub, &err), 0);
	assert_int_equal(sub->n, 0);
	demo_free(sub);
	assert_int_equal(d->n, 5);
	assert_string_equal(d->line[2].text, "goto scores");
	assert_string_equal(d->line[2].file, "sub/inner.txt");
	assert_int_equal(d->line[3].kind, DEMO_QUIZ);
	assert_string_equal(d->line[4].text, "goto concat");
	assert_null(d->line[4].file);

	/* past DEMO_MAX_LINES: refused, d unchanged */
	{
		size_t len = (size_t)DEMO_MAX_LINES * 5;
		char *big = malloc(len + 1);
		assert_non_null(big);
		for (size_t i = 0; i < len; i += 5)
			memcpy(big + i, "next\n", 5);
		big[len] = '\0';
		sub = demo_parse("big.txt", big, len, &err);
		free(big);
		assert_non_null(sub);
		assert_int_equal(sub->n, DEMO_MAX_LINES);
		assert_int_equal(demo_splice(d, 1, sub, &err), -1);
		assert_non_null(strstr(err, "big.txt: source: more than 10000 lines"));
		free(err);
		assert_int_equal(d->n, 5);
		assert_int_equal(sub->n, DEMO_MAX_LINES);
		demo_free(sub);
	}
	demo_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quiz_entry),
		cmocka_unit_test_setup_teardown(test_paths_are_the_demo_folders, setup, teardown),
		cmocka_unit_test(test_splice),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
