/* unit_paths.c: paths_find_model — a model that ships with attnviz is found by
 * its name ($ATTNVIZ_MODELS first, then assets/models of the checkout), only a
 * folder with a config.json counts, and a path is never taken for a name; the
 * shipped models (assets/models/train.py) read as any Hugging Face folder:
 * config, weights of the shapes the config makes them, tokenizer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/paths.h"
#include "weights/hfconfig.h"
#include "weights/tokenizer.h"
#include "unit_tmpdir.h"

/* dir/rel made as a folder (with config.json when config is set). */
static void make_model(const char *rel, int config)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof p, "%s/%s", dir, rel);
	assert_int_equal(mkdir(p, 0700), 0);
	if (!config)
		return;
	snprintf(p, sizeof p, "%s/%s/config.json", dir, rel);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("{}\n", f);
	fclose(f);
}

static void test_env_first(void **state)
{
	char want[256];
	char *got;

	(void)state;
	make_model("tiny-gpt2", 1);
	make_model("empty", 0);
	setenv("ATTNVIZ_MODELS", dir, 1);
	got = paths_find_model("tiny-gpt2");
	snprintf(want, sizeof want, "%s/tiny-gpt2", dir);
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
	/* a folder without config.json is not a model; an unknown name is nothing */
	assert_null(paths_find_model("empty"));
	assert_null(paths_find_model("no-such-model"));
	unsetenv("ATTNVIZ_MODELS");
}

static void test_paths_are_not_names(void **state)
{
	(void)state;
	make_model("m", 1);
	setenv("ATTNVIZ_MODELS", dir, 1);
	assert_null(paths_find_model("./m"));
	assert_null(paths_find_model("../m"));
	assert_null(paths_find_model(".."));
	assert_null(paths_find_model("a/m"));
	assert_null(paths_find_model(""));
	assert_null(paths_find_model(NULL));
	unsetenv("ATTNVIZ_MODELS");
}

/* From the repository root (ATTNVIZ_SRCDIR), the checkout's own models, read as any model folder. */
static void test_shipped(void **state)
{
	static const char *const names[] = {"tiny-gpt2"};
	static const char *const types[] = {"gpt2"};
	const char *root = getenv("ATTNVIZ_SRCDIR");

	(void)state;
	if (root != NULL && chdir(root) != 0)
		fail_msg("cannot enter %s", root);
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char *got = paths_find_model(names[i]), *err = NULL, tok[512];
		HfConfig c;
		HfWeights *w;
		Tokenizer *t;

		assert_non_null(got);
		assert_true(strstr(got, "assets/models/") != NULL);
		if (hfconfig_read(got, &c, &err) != 0)
			fail_msg("%s", err);
		assert_string_equal(c.model_type, types[i]);
		assert_int_equal(c.num_layers, 2);
		assert_int_equal(c.num_heads, 4);
		assert_int_equal(c.hidden_size, 64);
		w = hfweights_open(got, &err);
		if (w == NULL || hfconfig_check_shapes(&c, w, &err) != 0)
			fail_msg("%s", err);
		hfweights_close(w);
		snprintf(tok, sizeof tok, "%s/tokenizer.json", got);
		t = tok_load(tok, &err);
		if (t == NULL)
			fail_msg("%s", err);
		assert_int_equal(tok_vocab_size(t), c.vocab_size);
		tok_free(t);
		free(got);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_env_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paths_are_not_names, setup, teardown),
		cmocka_unit_test(test_shipped),
	};

	unsetenv("ATTNVIZ_MODELS");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
