/* text.h: human-readable text from lessons, in several languages; display width; exact numbers. */
#ifndef ATTNVIZ_TEXT_H
#define ATTNVIZ_TEXT_H

#include <stddef.h>
#include <wchar.h>

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

/*
 * Display width, the one rule for every view and message. Our text is UTF-8.
 * A character takes the columns wcwidth() gives it in the locale. Where the
 * locale cannot show it (the C locale, a control or unassigned character:
 * wcwidth() < 0), it takes what a UTF-8 terminal gives it, 2 columns for an
 * East Asian wide character and 1 otherwise; a byte that starts no UTF-8
 * character takes 1.
 *
 * text_char reads the character at s (len ≥ 1 bytes there): returns its
 * length in bytes (≥ 1), its columns in *cols, and in *wc the character, or
 * 0 when the locale cannot show it (whoever draws it draws *cols '?').
 */
int text_char(const char *s, size_t len, wchar_t *wc, int *cols);
/* Columns of s[0..len) by text_char; len < 0: up to the NUL. */
int text_width(const char *s, int len);
/* The bytes of s's longest start of whole characters that fits width columns (text_width). */
int text_fit(const char *s, int width);

/* A line of wrapped text: len bytes at off. */
typedef struct TextLine {
	int off, len;
} TextLine;
/*
 * The one wrapper: s (escaped, '\n' kept) cut into lines of at most width
 * columns (text_width). A line breaks after blanks (dropped at its end), or
 * beside a wide (CJK) character, where Chinese allows it: never before
 * closing punctuation (，。、；：！？）」』” …) nor after opening punctuation
 * (（「『“ …); a word or run wider than a line is cut where it must be.
 * *out is a heap array the caller frees; returns the line count (≥ 1), -1
 * when out of memory.
 */
int text_wrap(const char *s, int width, TextLine **out);
/*
 * The same rule where no terminal is involved (an SVG figure in a monospace
 * font), so that the output does not depend on the locale: 2 columns for an
 * East Asian wide character, 1 for any other character or stray byte.
 */
int text_cells(const char *s, int len);

/*
 * x with the fewest digits that read back as exactly x (never more than 17),
 * laid out as "%.Ng" lays them out, N the number of digits but at least
 * digits (≤ 17): the one exact-number printer, for dumps, saved lessons and
 * messages. For digits = 15 it is the shortest of "%.15g", "%.16g" and
 * "%.17g" that reads back (tests/unit_text.c holds it to that loop), found
 * in one pass by double-conversion (base/shortest.h). "inf", "-inf", "nan"
 * as "%g" writes them. buf holds TEXT_EXACT_SIZE bytes. Returns buf.
 */
#define TEXT_EXACT_SIZE 32
char *text_exact(char *buf, double x, int digits);

/* s wrapped so: its lines joined by '\n' (trailing blanks at a break dropped); heap string, NULL when out of memory. */
char *text_wrap_lines(const char *s, int width);

/*
 * The level, 0 … levels − 1, of x on a bar from lo to hi (a sparkline's
 * bar): 0 when x, lo or hi is not finite or hi ≤ lo; scaled so that hi − lo
 * never overflows (lo = −1e308, hi = 1e308); always an index into levels.
 */
int text_bar_level(double x, double lo, double hi, int levels);

#endif
