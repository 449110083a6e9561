/* fuzz_tokenizer.c: libFuzzer target for the tokenizer (`make fuzz-tokenizer`).
 *
 * The bytes up to the first NUL are a tokenizer.json, those after it a text
 * (without a NUL, a few texts of every script): the file either loads or
 * says why, with no control character from it in the message; a tokenizer
 * that loads encodes the text or says why, and every id it gives is one of
 * its vocabulary and shows without a raw control character. All the bytes
 * are also a text for the committed Qwen- and Llama-style tokenizers, whose
 * encoder must take any bytes: UTF-8 or a clear refusal. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weights/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void no_control(const char *s)
{
	if (s == NULL)
		abort();
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\n')
			abort();
}

static void encode(const Tokenizer *t, const char *text, size_t len)
{
	int *ids, n;
	char *err = NULL;

	if (tok_encode(t, text, len, &ids, &n, &err) != 0) {
		no_control(err); /* a refused text always says why */
		free(err);
		return;
	}
	for (int i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= tok_vocab_size(t))
			abort();
		for (int utf8 = 0; utf8 < 2 && i < 512; utf8++) { /* the first few shown: enough, and fast */
			char *shown = tok_display(t, ids[i], utf8);
			no_control(shown);
			free(shown);
		}
	}
	free(ids);
}

static Tokenizer *committed(const char *name)
{
	char path[4096], *err = NULL;
	const char *root = getenv("ATTNVIZ_SRCDIR");
	snprintf(path, sizeof path, "%s/tests/weights/tokenizers/%s/tokenizer.json", root && *root ? root : ".", name);
	Tokenizer *t = tok_load(path, &err);
	if (t == NULL) {
		fprintf(stderr, "fuzz_tokenizer: %s (run from the repository's root, or set ATTNVIZ_SRCDIR)\n", err);
		abort();
	}
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static Tokenizer *qwen, *sp;
	static const char *const texts[] = {"Hello, world!  It's 2026.\n", "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80",
	                                    "<s> <|im_start|>user\n\tcafe\xcc\x81<|im_end|>", "\xff not UTF-8"};
	const uint8_t *nul = memchr(data, 0, size);
	size_t jlen = nul ? (size_t)(nul - data) : size;
	char *err = NULL;

	if (qwen == NULL) {
		qwen = committed("qwen");
		sp = committed("sp");
	}
	/* the start of the bytes as a text (a text is short; a tokenizer.json is not) */
	encode(qwen, (const char *)data, size < 4096 ? size : 4096);
	encode(sp, (const char *)data, size < 4096 ? size : 4096);

	Tokenizer *t = tok_load_buf("fuzz.json", (const char *)data, jlen, &err);
	if (t == NULL) {
		no_control(err);
		free(err);
		return 0;
	}
	if (nul != NULL)
		encode(t, (const char *)nul + 1, size - jlen - 1);
	else
		for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
			encode(t, texts[i], strlen(texts[i]));
	tok_free(t);
	return 0;
}
