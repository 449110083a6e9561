/* text.h: human-readable text from lessons, in several languages. */
#ifndef ATTNVIZ_TEXT_H
#define ATTNVIZ_TEXT_H

#include <stddef.h>

/*
 * A lesson text: either a plain string (taken as English) or an object of
 * language code → string. Strings are valid UTF-8 (the loader checks) and
 * may hold any character, control characters included: whoever shows one
 * on a terminal passes it through text_escape() first.
 */
typedef struct TextVariant {
	char lang[8];   /* "en", "zh", … */
	char *s;        /* owned, NUL-terminated UTF-8 */
} TextVariant;

typedef struct Text {
	int count;
	TextVariant *v; /* owned */
} Text;

/* The string for lang, else English, else the first one, else "". Never NULL. */
const char *text_get(const Text *t, const char *lang);
/* 1 when t has a string for lang. */
int text_has(const Text *t, const char *lang);
int text_empty(const Text *t);
void text_free(Text *t);
/* Deep copy; returns 0 or -1. */
int text_copy(Text *dst, const Text *src);

/*
 * Copy s into a new heap string in which every control character other than
 * those listed in keep ("\n\t", "" for none) is written as \xNN, and invalid
 * UTF-8 bytes as \xNN too. The result is safe to print to a terminal. Caller frees.
 */
char *text_escape(const char *s, const char *keep);
/*
 * JSON text (as cJSON prints it) with every character text_escape shows
 * escaped that JSON lets through raw (DEL, C1 controls such as U+0085 and
 * U+009B, bidi controls such as U+202E) written as a \uXXXX escape: it reads
 * back as the same strings, and is safe to print. Heap string; caller frees.
 */
char *text_escape_json(const char *json);
/*
 * s with every tab replaced by spaces up to the next multiple of tabstop
 * columns, counted from the start of its line (a character is one column).
 * Heap string (NULL when out of memory); caller frees.
 */
char *text_expand_tabs(const char *s, int tabstop);
/*
 * s for a terminal that cannot show UTF-8: the symbols lessons use spelled
 * in ASCII (− → -, ∞ → inf, · → ., √ → sqrt, Σ → sum, α → alpha, x² → x^2,
 * “ ” → ", …) and any other character as '?'. Heap string; caller frees.
 */
char *text_ascii(const char *s);
/* 1 when s (length len) is valid UTF-8 (no overlongs, no surrogates). */
int text_valid_utf8(const char *s, size_t len);

#endif
