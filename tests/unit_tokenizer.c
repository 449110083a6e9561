/* unit_tokenizer.c: weights/tokenizer.c against ids made by an independent
 * implementation (tests/weights/make_tokenizer_goldens.mjs: tokenizers.js,
 * and gpt-3-encoder for GPT-2) on GPT-2's real vocabulary and on small
 * Qwen-, SmolLM2- and Llama-2-style ones; tokens shown as people read them;
 * each damaged tokenizer.json refused with a message that says where and
 * what was expected; text that is not UTF-8 refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/fileio.h"
#include "weights/tokenizer.h"

/* A file of the source tree (ATTNVIZ_SRCDIR, else the current directory), in a static buffer. */
static const char *src_file(const char *rel)
{
	static char buf[4096];
	const char *root = getenv("ATTNVIZ_SRCDIR");
	snprintf(buf, sizeof buf, "%s/%s", root && *root ? root : ".", rel);
	return buf;
}

static Tokenizer *load(const char *name)
{
	char rel[256], *err = NULL;
	snprintf(rel, sizeof rel, "tests/weights/tokenizers/%s/tokenizer.json", name);
	Tokenizer *t = tok_load(src_file(rel), &err);
	if (t == NULL)
		fail_msg("%s: %s", rel, err);
	return t;
}

/* Every golden string of one tokenizer gives the golden ids. */
static void goldens_of(const char *name, int at_least)
{
	char *err = NULL, *text;
	size_t len;
	Tokenizer *t = load(name);
	text = fileio_read_all(src_file("tests/weights/tokenizers/goldens.json"), 1 << 24, &len, &err);
	assert_non_null(text);
	cJSON *root = cJSON_Parse(text), *g;
	assert_non_null(root);
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, name);
	assert_true(cJSON_IsArray(list));
	int cases = 0, wrong = 0;
	cJSON_ArrayForEach(g, list) {
		const char *s = cJSON_GetObjectItemCaseSensitive(g, "text")->valuestring;
		const cJSON *want = cJSON_GetObjectItemCaseSensitive(g, "ids");
		int *ids, n;
		if (tok_encode(t, s, strlen(s), &ids, &n, &err) != 0)
			fail_msg("%s: %s: %s", name, s, err);
		int same = n == cJSON_GetArraySize(want);
		for (int i = 0; same && i < n; i++)
			same = ids[i] == cJSON_GetArrayItem(want, i)->valueint;
		if (!same) {
			char *w = cJSON_PrintUnformatted(want);
			print_message("%s: \"%s\": want %s, got", name, s, w);
			for (int i = 0; i < n; i++)
				print_message(" %d", ids[i]);
			print_message("\n");
			free(w);
			wrong++;
		}
		free(ids);
		cases++;
	}
	assert_int_equal(wrong, 0);
	assert_true(cases >= at_least);
	cJSON_Delete(root);
	free(text);
	tok_free(t);
}

/* A tokenizer's goldens: *state names it. */
static void goldens(void **state)
{
	goldens_of(*state, 200);
}

/*
 * Numbers beyond 0-9 (¹, ½, ٣) are digits to the library's Digits
 * (char::is_numeric), each on its own; tokenizers.js splits at JavaScript's
 * \d (0-9 only), so these are not among its goldens.
 */
static void digits_are_unicode_numbers_as_in_the_rust_library(void **state)
{
	static const char *const digits[] = {"\u0663", "\u0664", "\u0665", "\u00b9", "\u00bd"};
	char *err = NULL, joined[64] = "";
	int *ids, n, want[16], nwant = 0;
	(void)state;
	Tokenizer *t = load("smol");
	for (size_t i = 0; i < sizeof digits / sizeof *digits; i++) {
		assert_int_equal(tok_encode(t, digits[i], strlen(digits[i]), &ids, &n, &err), 0);
		for (int k = 0; k < n; k++)
			want[nwant++] = ids[k];
		free(ids);
		strcat(joined, digits[i]);
	}
	assert_int_equal(tok_encode(t, joined, strlen(joined), &ids, &n, &err), 0);
	assert_int_equal(n, nwant);
	assert_memory_equal(ids, want, (size_t)n * sizeof *ids);
	free(ids);
	tok_free(t);
}

static void tokens_are_shown_as_people_read_them(void **state)
{
	char *s;
	(void)state;
	Tokenizer *g = load("gpt2");
	assert_string_equal(tok_token(g, 3797), "Ġcat");
	assert_int_equal(tok_id(g, "Ġcat"), 3797);
	assert_string_equal(s = tok_display(g, 3797, 1), "\u00b7cat");
	free(s);
	assert_string_equal(s = tok_display(g, 3797, 0), " cat");
	free(s);
	assert_string_equal(s = tok_display(g, tok_id(g, "Ċ"), 1), "\\n");
	free(s);
	assert_string_equal(s = tok_display(g, tok_id(g, "ĉ"), 1), "\\t");
	free(s);
	assert_string_equal(s = tok_display(g, tok_id(g, "ě"), 1), "\\x1b"); /* ESC, never raw */
	free(s);
	assert_string_equal(s = tok_display(g, tok_id(g, "æ"), 1), "<0xE6>"); /* the first byte of 你 alone */
	free(s);
	assert_string_equal(s = tok_display(g, tok_id(g, "ä¸Ń"), 1), "\u4e2d"); /* 中 whole */
	free(s);
	assert_string_equal(s = tok_display(g, tok_id(g, "ä¸Ń"), 0), "\\u{4e2d}");
	free(s);
	assert_string_equal(s = tok_display(g, 50256, 1), "<|endoftext|>");
	free(s);
	assert_true(tok_is_special(g, 50256));
	assert_false(tok_is_special(g, 3797));
	assert_int_equal(tok_vocab_size(g), 50257);
	assert_null(tok_token(g, 50257));
	assert_string_equal(s = tok_display(g, 99999, 1), "<id 99999?>");
	free(s);
	tok_free(g);

	Tokenizer *sp = load("sp");
	assert_string_equal(s = tok_display(sp, tok_id(sp, "<0xE6>"), 1), "<0xE6>");
	free(s);
	assert_string_equal(s = tok_display(sp, tok_id(sp, "<0x41>"), 1), "A");
	free(s);
	assert_string_equal(s = tok_display(sp, tok_id(sp, "<0x0A>"), 1), "\\n");
	free(s);
	assert_string_equal(s = tok_display(sp, tok_id(sp, "<0x1B>"), 0), "\\x1b");
	free(s);
	assert_string_equal(s = tok_display(sp, tok_id(sp, "\u2581the"), 1), "\u00b7the");
	free(s);
	assert_string_equal(s = tok_display(sp, 1, 1), "<s>");
	free(s);
	tok_free(sp);
}

static void text_that_is_not_utf8_is_refused(void **state)
{
	static const char *const bad[] = {"caf\xe9", "\xff", "ok\xc3", "\xed\xa0\x80 surrogate", "\xc0\xaf overlong"};
	int *ids, n;
	char *err = NULL;
	(void)state;
	Tokenizer *t = load("qwen");
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(tok_encode(t, bad[i], strlen(bad[i]), &ids, &n, &err), -1);
		assert_non_null(strstr(err, "not valid UTF-8"));
		free(err);
	}
	assert_int_equal(tok_encode(t, "caf\xe9", 4, &ids, &n, &err), -1);
	assert_non_null(strstr(err, "byte 0xe9 at byte 3"));
	free(err);
	char *big = calloc(TOK_MAX_INPUT + 2, 1);
	memset(big, 'a', TOK_MAX_INPUT + 1);
	assert_int_equal(tok_encode(t, big, TOK_MAX_INPUT + 1, &ids, &n, &err), -1);
	assert_non_null(strstr(err, "over the limit"));
	free(err);
	free(big);
	assert_int_equal(tok_encode(t, "", 0, &ids, &n, &err), 0);
	assert_int_equal(n, 0);
	free(ids);
	tok_free(t);
}

/* A tokenizer.json written here, and the ids of a text through it. */
static void encode_with(const char *json, const char *text, const int *want, int nwant)
{
	char *err = NULL;
	int *ids, n;
	Tokenizer *t = tok_load_buf("inline.json", json, strlen(json), &err);
	if (t == NULL)
		fail_msg("%s", err);
	assert_int_equal(tok_encode(t, text, strlen(text), &ids, &n, &err), 0);
	if (n != nwant || memcmp(ids, want, (size_t)n * sizeof *ids) != 0) {
		print_message("\"%s\": got", text);
		for (int i = 0; i < n; i++)
			print_message(" %d", ids[i]);
		print_message("\n");
		fail();
	}
	free(ids);
	tok_free(t);
}

static void unk_strip_ranks_prefixes_splits_and_processors_as_the_library_does(void **state)
{
	(void)state;
	/* no byte tokens: unknown characters become <unk>, one per character or fused */
	const char *unfused = "{\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": false,"
	                      " \"vocab\": {\"<unk>\": 0, \"a\": 1, \"b\": 2, \"ab\": 3}, \"merges\": [\"a b\"]}}";
	const char *fused = "{\"model\": {\"type\": \"BPE\", \"unk_token\": \"<unk>\", \"fuse_unk\": true,"
	                    " \"vocab\": {\"<unk>\": 0, \"a\": 1, \"b\": 2, \"ab\": 3}, \"merges\": [[\"a\", \"b\"]]}}";
	encode_with(unfused, "abxyab", (const int[]){3, 0, 0, 3}, 4);
	encode_with(fused, "abxyab", (const int[]){3, 0, 3}, 3);
	/* without an unk_token, an unknown character is dropped */
	encode_with("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}", "a?a", (const int[]){0, 0},
	            2);
	/* lstrip and rstrip take the spaces beside the token with it */
	const char *strip = "{\"added_tokens\": [{\"id\": 9, \"content\": \"<m>\", \"lstrip\": true, \"rstrip\": true}],"
	                    " \"model\": {\"type\": \"BPE\", \"vocab\": {\" \": 0, \"a\": 1}, \"merges\": []}}";
	encode_with(strip, "a  <m>  a", (const int[]){1, 9, 1}, 3);
	/* a merge given twice keeps its later rank; ranks decide, not the order in the word */
	const char *ranks = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"c\": 2, \"ab\": 3, \"bc\": 4},"
	                    " \"merges\": [\"b c\", \"a b\"]}}";
	encode_with(ranks, "abc", (const int[]){0, 4}, 2);
	/* continuing_subword_prefix and end_of_word_suffix */
	const char *cont = "{\"model\": {\"type\": \"BPE\", \"continuing_subword_prefix\": \"##\", \"end_of_word_suffix\": \"</w>\","
	                   " \"vocab\": {\"a\": 0, \"##b\": 1, \"##c</w>\": 2, \"a##b\": 3, \"ab\": 4},"
	                   " \"merges\": [\"a ##b\"]}}";
	encode_with(cont, "abc", (const int[]){4, 2}, 2);
	/* Split's behaviours: Removed drops the spaces, MergedWithPrevious keeps them on the left word */
	const char *removed = "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"Removed\"},"
	                      " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \" \": 1, \"a \": 2}, \"merges\": [[\"a\", \" \"]]}}";
	encode_with(removed, "a a", (const int[]){0, 0}, 2);
	const char *prev = "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"MergedWithPrevious\"},"
	                   " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \" \": 1, \"a \": 2}, \"merges\": [[\"a\", \" \"]]}}";
	encode_with(prev, "a a", (const int[]){2, 0}, 2);
	const char *next = "{\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"MergedWithNext\"},"
	                   " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \" \": 1, \" a\": 2}, \"merges\": [[\" \", \"a\"]]}}";
	encode_with(next, "a a", (const int[]){0, 2}, 2);
	/* Roberta's <s> … </s> around the text */
	const char *roberta = "{\"post_processor\": {\"type\": \"RobertaProcessing\", \"sep\": [\"</s>\", 2], \"cls\": [\"<s>\", 0]},"
	                      " \"model\": {\"type\": \"BPE\", \"vocab\": {\"<s>\": 0, \"a\": 1, \"</s>\": 2}, \"merges\": []}}";
	encode_with(roberta, "aa", (const int[]){0, 1, 1, 2}, 4);
	/* an added token the normalizer makes empty is never looked for (it would match everywhere) */
	const char *gone = "{\"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \"x\"}, \"content\": \"\"},"
	                   " \"added_tokens\": [{\"id\": 1, \"content\": \"x\", \"normalized\": true}],"
	                   " \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}}";
	encode_with(gone, "axa", (const int[]){0, 0}, 2);
}

static void each_damaged_tokenizer_is_refused_with_where_and_what(void **state)
{
	char *text, *err = NULL, *line, *save = NULL;
	size_t len;
	int cases = 0;
	(void)state;
	text = fileio_read_all(src_file("tests/weights/tokenizers/bad/expected.txt"), 1 << 20, &len, &err);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t'), rel[512];
		assert_non_null(tab);
		*tab = '\0';
		snprintf(rel, sizeof rel, "tests/weights/tokenizers/bad/%s", line);
		Tokenizer *t = tok_load(src_file(rel), &err);
		if (t != NULL) /* loads, but gives up on a text */ {
			int *ids, n;
			assert_int_equal(tok_encode(t, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", 41, &ids, &n, &err), -1);
			tok_free(t);
		}
		assert_non_null(err);
		if (strstr(err, tab + 1) == NULL || strstr(err, line) == NULL)
			fail_msg("%s: the message \"%s\" should name the file and say \"%s\"", line, err, tab + 1);
		for (const char *p = err; *p; p++) /* nothing from the file reaches a terminal raw */
			assert_false((unsigned char)*p < 0x20 && *p != '\n');
		free(err);
		err = NULL;
		cases++;
	}
	assert_true(cases >= 15);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		{"gpt2: the ids of tokenizers.js and gpt-3-encoder", goldens, NULL, NULL, "gpt2"},
		{"qwen: Split + ByteLevel, NFC, its special tokens", goldens, NULL, NULL, "qwen"},
		{"smol: Digits + ByteLevel", goldens, NULL, NULL, "smol"},
		{"sp: Prepend + Replace, byte_fallback, <s>", goldens, NULL, NULL, "sp"},
		{"spmeta: Metaspace, byte_fallback, <s>", goldens, NULL, NULL, "spmeta"},
		cmocka_unit_test(digits_are_unicode_numbers_as_in_the_rust_library),
		cmocka_unit_test(tokens_are_shown_as_people_read_them),
		cmocka_unit_test(text_that_is_not_utf8_is_refused),
		cmocka_unit_test(unk_strip_ranks_prefixes_splits_and_processors_as_the_library_does),
		cmocka_unit_test(each_damaged_tokenizer_is_refused_with_where_and_what),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
