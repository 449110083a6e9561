/*
 * jsonread.c: reading a JSON file (a lesson, a theme) with messages that say
 * where. The context carries the file's name and the JSON path of the value
 * being read; the first error is kept, warnings are collected; values from
 * the file are described one way ("got \"purplish\"", "got 300", "got an
 * array"), near-misses get "did you mean", and syntax errors show
 * FILE:LINE:COL with the line and a caret.
 */
#include "base/jsonread.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/i18n.h"
#include "base/text.h"

/* ------------------------------------------------------------------ */
/* The loading context: file name, JSON path, first error, warnings    */
/* ------------------------------------------------------------------ */

void jr_ctx_init(JrCtx *c, const char *name, StrBuf *warn)
{
	memset(c, 0, sizeof *c);
	c->name = name;
	c->warn = warn;
}

void jr_path_set(JrCtx *c, size_t len)
{
	c->pathlen = len;
	c->path[len] = '\0';
}

size_t jr_path_append(JrCtx *c, const char *fmt, ...)
{
	size_t old = c->pathlen;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(c->path + old, JR_PATH_SIZE - old, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= JR_PATH_SIZE - old)
		c->pathlen = strlen(c->path); /* truncated, still terminated */
	else
		c->pathlen = old + (size_t)n;
	return old;
}

/* Enter a key: "W_q", or ".row" below something. Returns the length to pop back to. */
size_t jr_path_key(JrCtx *c, const char *key)
{
	const char *dot = c->root_len > 0 ? "." : "";

	if (c->pathlen == c->root_len)
		for (int k = 0; k < 2; k++)
			if (c->alias_obj[k] != NULL && cJSON_GetObjectItemCaseSensitive(c->alias_obj[k], key) != NULL)
				return jr_path_append(c, "%s%s.%s", dot, c->alias_prefix[k], key);
	if (c->pathlen == c->root_len && c->layer_obj != NULL &&
	    cJSON_GetObjectItemCaseSensitive(c->layer_obj, key) != NULL)
		return jr_path_append(c, "%slayers[%d].%s", dot, c->layer_index, key);
	return c->pathlen ? jr_path_append(c, ".%s", key) : jr_path_append(c, "%s", key);
}

size_t jr_path_index(JrCtx *c, int i)
{
	return jr_path_append(c, "[%d]", i);
}

/* Record an error at the current path (only the first one is kept). Returns -1. */
int jr_fail(JrCtx *c, const char *fmt, ...)
{
	StrBuf b = { 0 };
	va_list ap;

	if (c->err != NULL)
		return -1;
	if (c->pathlen)
		strbuf_printf(&b, _("%s: %s: "), c->name, c->path);
	else
		strbuf_printf(&b, _("%s: "), c->name);
	va_start(ap, fmt);
	strbuf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (b.oom) {
		free(b.s);
		c->err = strdup(_("out of memory"));
	} else {
		c->err = b.s;
	}
	return -1;
}

void jr_warnf(JrCtx *c, const char *fmt, ...)
{
	va_list ap;
	size_t start;

	if (c->warn == NULL)
		return;
	start = c->warn->len;
	if (c->pathlen)
		strbuf_printf(c->warn, _("%s: warning: %s: "), c->name, c->path);
	else
		strbuf_printf(c->warn, _("%s: warning: "), c->name);
	va_start(ap, fmt);
	strbuf_vprintf(c->warn, fmt, ap);
	va_end(ap);
	strbuf_add(c->warn, "\n", 1);
	/* The same warning twice (a decoder layer's block is read once per link) is said once. */
	if (!c->warn->oom && start > 0) {
		const char *line = c->warn->s + start;
		size_t n = c->warn->len - start;
		for (const char *p = c->warn->s; p != NULL && p + n <= line;) {
			const char *eol = memchr(p, '\n', (size_t)(line - p));
			if (memcmp(p, line, n) == 0) {
				c->warn->len = start;
				c->warn->s[start] = '\0';
				return;
			}
			p = eol != NULL ? eol + 1 : NULL;
		}
	}
}

int jr_fail_oom(JrCtx *c)
{
	size_t old = c->pathlen;
	int r;

	jr_path_set(c, 0);
	r = jr_fail(c, _("out of memory"));
	jr_path_set(c, old);
	return r;
}

/* ------------------------------------------------------------------ */
/* Describing values from the file in messages                         */
/* ------------------------------------------------------------------ */

/*
 * A string from the file, made safe to print (control characters and bad
 * UTF-8 escaped) and cut to about max bytes, into out (size ≥ max + 8).
 */
static void quote_into(char *out, size_t size, const char *s, size_t max)
{
	char *esc = text_escape(s, "");
	size_t len, cut;

	if (esc == NULL) {
		snprintf(out, size, "\"…\"");
		return;
	}
	len = strlen(esc);
	if (len <= max) {
		snprintf(out, size, "\"%s\"", esc);
	} else {
		cut = max;
		while (cut > 0 && ((unsigned char)esc[cut] & 0xC0) == 0x80)
			cut--; /* never split a UTF-8 sequence */
		snprintf(out, size, "\"%.*s…\"", (int)cut, esc);
	}
	free(esc);
}

/* The shortest %g form of x that reads back as x. */
static void number_into(char *out, size_t size, double x)
{
	char buf[TEXT_EXACT_SIZE];

	if (isinf(x))
		snprintf(out, size, x > 0 ? "infinity" : "-infinity");
	else
		snprintf(out, size, "%s", text_exact(buf, x, 6));
}

/* What the file holds, for "expected …, got WHAT". */
JrGot jr_got(const cJSON *v)
{
	JrGot g;

	if (v == NULL)
		snprintf(g.s, sizeof g.s, "%s", _("nothing"));
	else if (cJSON_IsString(v))
		quote_into(g.s, sizeof g.s, v->valuestring, 40);
	else if (cJSON_IsNumber(v))
		number_into(g.s, sizeof g.s, v->valuedouble);
	else if (cJSON_IsTrue(v))
		snprintf(g.s, sizeof g.s, "true");
	else if (cJSON_IsFalse(v))
		snprintf(g.s, sizeof g.s, "false");
	else if (cJSON_IsNull(v))
		snprintf(g.s, sizeof g.s, "null");
	else if (cJSON_IsArray(v))
		snprintf(g.s, sizeof g.s, "%s", _("an array"));
	else if (cJSON_IsObject(v))
		snprintf(g.s, sizeof g.s, "%s", _("an object"));
	else
		snprintf(g.s, sizeof g.s, "%s", _("something else"));
	return g;
}

JrGot jr_quoted(const char *s)
{
	JrGot g;

	quote_into(g.s, sizeof g.s, s, 40);
	return g;
}

/* ------------------------------------------------------------------ */
/* "Did you mean": the closest known name                              */
/* ------------------------------------------------------------------ */

/* Levenshtein distance, ignoring case; words longer than 63 bytes are never close. */
static int edit_distance(const char *a, const char *b)
{
	int prev[64], cur[64];
	size_t la = strlen(a), lb = strlen(b), i, j;
	int best;

	if (la > 63 || lb > 63)
		return 1000;
	for (j = 0; j <= lb; j++)
		prev[j] = (int)j;
	for (i = 1; i <= la; i++) {
		cur[0] = (int)i;
		for (j = 1; j <= lb; j++) {
			int sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
			best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (sub < best)
				best = sub;
			cur[j] = best;
		}
		memcpy(prev, cur, (lb + 1) * sizeof *prev);
	}
	return prev[lb];
}

/* The candidate closest to word, when it is close enough to be a typo; else NULL. */
static const char *closest(const char *word, const char *const *cands, int ncands)
{
	const char *best = NULL;
	int i, d, bestd = 1000;

	for (i = 0; i < ncands; i++) {
		if (cands[i] == NULL)
			continue;
		d = edit_distance(word, cands[i]);
		if (d < bestd) {
			bestd = d;
			best = cands[i];
		}
	}
	if (best == NULL || bestd > 2 || (size_t)bestd * 2 > strlen(best))
		return NULL;
	return best;
}

/* " (did you mean "x"?)" or "" */
JrHint jr_did_you_mean(const char *word, const char *const *cands, int ncands)
{
	JrHint h;
	const char *c = closest(word, cands, ncands);

	if (c != NULL)
		snprintf(h.s, sizeof h.s, _(" (did you mean \"%s\"?)"), c);
	else
		h.s[0] = '\0';
	return h;
}

/* The first key from item `from` on (an object's child, then its next ones) that is not in known (n words). */
static const cJSON *unknown_key(const cJSON *from, const char *const *known, int n)
{
	const cJSON *it;
	int i;

	for (it = from; it != NULL; it = it->next) {
		for (i = 0; i < n; i++)
			if (strcmp(it->string, known[i]) == 0)
				break;
		if (i == n)
			return it;
	}
	return NULL;
}

static int count_words(const char *const *words)
{
	int n = 0;

	while (words[n] != NULL)
		n++;
	return n;
}

/* Warn about every key of obj not in known (NULL-terminated). */
void jr_warn_unknown_keys(JrCtx *c, const cJSON *obj, const char *const *known)
{
	const int n = count_words(known);
	const cJSON *it;

	for (it = unknown_key(obj->child, known, n); it != NULL; it = unknown_key(it->next, known, n))
		jr_warnf(c, _("unknown key %s%s"), jr_quoted(it->string).s, jr_did_you_mean(it->string, known, n).s);
}

int jr_refuse_unknown_keys(JrCtx *c, const cJSON *obj, const char *const *known, const char *what)
{
	const int n = count_words(known);
	const cJSON *it = unknown_key(obj->child, known, n);
	StrBuf list = { 0 };
	JrHint h;
	int i;

	if (it == NULL)
		return 0;
	h = jr_did_you_mean(it->string, known, n);
	if (h.s[0] != '\0')
		return jr_fail(c, _("unknown %s %s%s"), what, jr_quoted(it->string).s, h.s);
	for (i = 0; i < n; i++)
		strbuf_printf(&list, "%s%s", i == 0 ? "" : " ", known[i]);
	jr_fail(c, _("unknown %s %s (%ss: %s)"), what, jr_quoted(it->string).s, what, list.s ? list.s : "?");
	free(list.s);
	return -1;
}

static int compare_keys(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/*
 * Every object in the file, at any depth: a key given twice is a mistake
 * the parser passes over (the first one counts, the others are ignored), so
 * it is a warning ("duplicate key", which --check --strict makes an error).
 */
void jr_warn_duplicate_keys(JrCtx *c, const cJSON *v)
{
	const cJSON *it;
	size_t old;
	int i = 0, n = 0;

	if (cJSON_IsObject(v)) {
		const char **names;
		cJSON_ArrayForEach(it, v)
			n++;
		names = malloc((size_t)n * sizeof *names + 1);
		if (names != NULL) {
			cJSON_ArrayForEach(it, v)
				names[i++] = it->string;
			qsort(names, (size_t)n, sizeof *names, compare_keys);
			for (i = 1; i < n; i++)
				if (strcmp(names[i], names[i - 1]) == 0 && (i < 2 || strcmp(names[i], names[i - 2]) != 0))
					jr_warnf(c, _("duplicate key %s: the first one is used, the others are ignored"),
					         jr_quoted(names[i]).s);
			free(names);
		}
	}
	i = 0;
	cJSON_ArrayForEach(it, v) {
		if (it->child != NULL) { /* only objects and arrays hold more */
			old = cJSON_IsObject(v) ? jr_path_key(c, it->string) : jr_path_index(c, i);
			jr_warn_duplicate_keys(c, it);
			jr_path_set(c, old);
		}
		i++;
	}
}

const cJSON *jr_get(const cJSON *obj, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(obj, key);
}

const cJSON *jr_enter(JrCtx *c, const cJSON *obj, const char *key, size_t *old)
{
	const cJSON *v = jr_get(obj, key);

	if (v != NULL)
		*old = jr_path_key(c, key);
	return v;
}

int jr_leave(JrCtx *c, size_t old, int r)
{
	jr_path_set(c, old);
	return r;
}

/* ------------------------------------------------------------------ */
/* Scalars                                                             */
/* ------------------------------------------------------------------ */

/* A whole number of v in [lo, hi] into *out; expect says what was wanted. */
int jr_read_whole(JrCtx *c, const cJSON *v, double lo, double hi, const char *expect, long long *out)
{
	double x;

	if (!cJSON_IsNumber(v))
		return jr_fail(c, _("expected %s, got %s"), expect, jr_got(v).s);
	x = v->valuedouble;
	if (!isfinite(x) || x != floor(x) || x < lo || x > hi)
		return jr_fail(c, _("expected %s, got %s"), expect, jr_got(v).s);
	*out = (long long)x;
	return 0;
}

/* read_whole for an optional key: *out keeps its default when the key is absent. */
int jr_key_whole(JrCtx *c, const cJSON *obj, const char *key, double lo, double hi, const char *expect, long long *out)
{
	size_t old;
	const cJSON *v = jr_enter(c, obj, key, &old);

	return v == NULL ? 0 : jr_leave(c, old, jr_read_whole(c, v, lo, hi, expect, out));
}

int jr_read_finite(JrCtx *c, const cJSON *v, double *out)
{
	if (!cJSON_IsNumber(v))
		return jr_fail(c, _("expected a number, got %s"), jr_got(v).s);
	if (!isfinite(v->valuedouble))
		return jr_fail(c, _("the number is too large (it overflows to infinity)"));
	*out = v->valuedouble;
	return 0;
}

int jr_key_finite(JrCtx *c, const cJSON *obj, const char *key, double *out)
{
	size_t old;
	const cJSON *v = jr_enter(c, obj, key, &old);

	return v == NULL ? 0 : jr_leave(c, old, jr_read_finite(c, v, out));
}

int jr_key_above(JrCtx *c, const cJSON *obj, const char *key, double lo, int inclusive, int null_ok, double *out)
{
	size_t old;
	const cJSON *v = jr_enter(c, obj, key, &old);

	if (v == NULL || (null_ok && cJSON_IsNull(v)))
		return v == NULL ? 0 : jr_leave(c, old, 0);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || (inclusive ? v->valuedouble < lo : !(v->valuedouble > lo)))
		return jr_leave(c, old, inclusive ? jr_fail(c, _("expected a number \u2265 %g, got %s"), lo, jr_got(v).s)
		                                  : jr_fail(c, _("expected a number > %g, got %s"), lo, jr_got(v).s));
	*out = v->valuedouble;
	return jr_leave(c, old, 0);
}

int jr_key_bool(JrCtx *c, const cJSON *obj, const char *key, int null_ok, int *out)
{
	size_t old;
	const cJSON *v = jr_enter(c, obj, key, &old);

	if (v == NULL || (null_ok && cJSON_IsNull(v)))
		return v == NULL ? 0 : jr_leave(c, old, 0);
	if (!cJSON_IsBool(v))
		return jr_leave(c, old, jr_fail(c, _("expected true or false, got %s"), jr_got(v).s));
	*out = cJSON_IsTrue(v);
	return jr_leave(c, old, 0);
}

/* One of the words in choices (NULL-terminated) into *out (its index). */
int jr_read_choice(JrCtx *c, const cJSON *v, const char *const *choices, int *out)
{
	StrBuf list = { 0 };
	const int n = count_words(choices);
	int i;

	if (cJSON_IsString(v))
		for (i = 0; i < n; i++)
			if (strcmp(v->valuestring, choices[i]) == 0) {
				*out = i;
				return 0;
			}
	for (i = 0; i < n; i++)
		strbuf_printf(&list, "%s\"%s\"", i == 0 ? "" : i == n - 1 ? _(" or ") : ", ", choices[i]);
	if (cJSON_IsString(v))
		jr_fail(c, _("expected %s, got %s%s"), list.s ? list.s : "?", jr_got(v).s,
		        jr_did_you_mean(v->valuestring, choices, n).s);
	else
		jr_fail(c, _("expected %s, got %s"), list.s ? list.s : "?", jr_got(v).s);
	free(list.s);
	return -1;
}

/* read_choice for an optional key: *out keeps its default when the key is absent. */
int jr_key_choice(JrCtx *c, const cJSON *obj, const char *key, const char *const *choices, int *out)
{
	size_t old;
	const cJSON *v = jr_enter(c, obj, key, &old);

	return v == NULL ? 0 : jr_leave(c, old, jr_read_choice(c, v, choices, out));
}

/* A string that must be valid UTF-8 (a token, a text), copied. */
int jr_read_string(JrCtx *c, const cJSON *v, char **out)
{
	const char *s;
	size_t len;

	if (!cJSON_IsString(v))
		return jr_fail(c, _("expected a string, got %s"), jr_got(v).s);
	s = v->valuestring;
	len = strlen(s);
	if (!text_valid_utf8(s, len)) {
		size_t i = 0, k = 0;
		/* Find the first byte that starts no valid character. */
		while (i < len) {
			for (k = 1; k <= 4 && i + k <= len; k++)
				if (text_valid_utf8(s + i, k))
					break;
			if (k > 4 || i + k > len)
				break;
			i += k;
		}
		return jr_fail(c, _("invalid UTF-8 (byte 0x%02x at byte %zu of the string); save the file as UTF-8"),
		               (unsigned char)s[i], i);
	}
	*out = strdup(s);
	return *out ? 0 : jr_fail_oom(c);
}

/* ------------------------------------------------------------------ */
/* Parsing: text to cJSON, with syntax errors as FILE:LINE:COL         */
/* ------------------------------------------------------------------ */

#define SHOW_BEFORE 60 /* characters of context shown before and after a syntax error */
#define SHOW_AFTER 40

/* Is byte b the first byte of a character (not a UTF-8 continuation byte)? */
static int char_start(char b)
{
	return ((unsigned char)b & 0xC0) != 0x80;
}

/*
 * "FILE:LINE:COL: REASON\n<the line>\n<a caret under COL>". LINE and COL
 * count from 1; COL counts characters. The shown line is escaped and, when
 * long, cut to SHOW_BEFORE characters before the position and SHOW_AFTER after.
 */
char *jr_syntax_error(const char *name, const char *buf, size_t len, size_t pos, const char *reason)
{
	size_t line = 1, col = 1, ls = 0, le, i, from, to, chars, w;
	char *piece = NULL, *before = NULL, *shown = NULL, *shown_before = NULL;
	StrBuf b = { 0 };

	if (pos > len)
		pos = len;
	for (i = 0; i < pos; i++)
		if (buf[i] == '\n') {
			line++;
			ls = i + 1;
		}
	for (i = ls; i < pos; i++)
		col += char_start(buf[i]);
	for (le = pos; le < len && buf[le] != '\n'; le++)
		;
	if (le > ls && buf[le - 1] == '\r')
		le--;
	if (pos > le)
		pos = le; /* at a "\r": the caret goes after the line */
	for (from = pos, chars = 0; from > ls && chars < SHOW_BEFORE; chars += char_start(buf[from]))
		from--;
	while (from > ls && !char_start(buf[from]))
		from--;
	for (to = pos, chars = 0; to < le && chars < SHOW_AFTER; chars++) {
		to++;
		while (to < le && !char_start(buf[to]))
			to++;
	}
	piece = strndup(buf + from, to - from);
	before = strndup(buf + from, pos - from);
	if (piece != NULL && before != NULL) {
		shown = text_escape(piece, "");
		shown_before = text_escape(before, "");
	}
	if (shown == NULL || shown_before == NULL) {
		b.oom = 1;
		goto out;
	}
	strbuf_printf(&b, "%s:%zu:%zu: %s\n%s%s%s\n", name, line, col, reason, from > ls ? "…" : "", shown,
	              to < le ? "…" : "");
	w = (size_t)text_width(shown_before, -1) + (from > ls ? 1 : 0);
	for (i = 0; i < w; i++)
		strbuf_add(&b, " ", 1);
	strbuf_add(&b, "^", 1);
out:
	free(piece);
	free(before);
	free(shown);
	free(shown_before);
	if (b.oom) {
		free(b.s);
		return strdup(_("out of memory"));
	}
	return b.s;
}

/*
 * What is most likely wrong where the JSON parser stopped at *pos, with *pos
 * moved to the character at fault: the mistakes of people who write JSON by
 * hand (a trailing comma, a comment, curly or single quotes, a missing comma).
 */
static const char *syntax_cause(const char *buf, size_t len, size_t *pos)
{
	size_t p = *pos < len ? *pos : len, q = p, close = len;

	while (q > 0 && strchr(" \t\r\n", buf[q - 1]) != NULL)
		q--;
	/* where a key should start, cJSON stops one character past it: "a": 1, } */
	if (p < len && (buf[p] == '}' || buf[p] == ']'))
		close = p;
	else if (p > 0 && buf[p - 1] == '}')
		close = p - 1;
	if (close < len) {
		size_t c = close;
		while (c > 0 && strchr(" \t\r\n", buf[c - 1]) != NULL)
			c--;
		if (c > 0 && buf[c - 1] == ',') {
			*pos = c - 1;
			return _("a trailing comma: JSON allows no comma before ] or }");
		}
	}
	if (p < len && (buf[p] == '/' || buf[p] == '*') && p > 0 && buf[p - 1] == '/')
		p--;
	if (p + 1 < len && buf[p] == '/' && (buf[p + 1] == '/' || buf[p + 1] == '*')) {
		*pos = p;
		return buf[p + 1] == '/' ? _("a // comment: JSON has no comments") : _("a /* comment */: JSON has no comments");
	}
	if (p > 0 && p + 1 < len && (unsigned char)buf[p - 1] == 0xe2 && (unsigned char)buf[p] == 0x80)
		p--; /* a curly quote where a key should start */
	if (p + 2 < len && (unsigned char)buf[p] == 0xe2 && (unsigned char)buf[p + 1] == 0x80 &&
	    (unsigned char)buf[p + 2] >= 0x98 && (unsigned char)buf[p + 2] <= 0x9d) {
		*pos = p;
		return _("a curly quote: JSON strings need straight double quotes \"");
	}
	if ((p < len && buf[p] == '\'') || (p > 0 && buf[p - 1] == '\'')) {
		*pos = p < len && buf[p] == '\'' ? p : p - 1;
		return _("a single quote: JSON strings need double quotes \"");
	}
	if (p < len && (buf[p] == '"' || buf[p] == '{' || buf[p] == '[') && q > 0 && q < p &&
	    (buf[q - 1] == '"' || buf[q - 1] == '}' || buf[q - 1] == ']' || isdigit((unsigned char)buf[q - 1]) ||
	     (q >= 4 && (memcmp(buf + q - 4, "true", 4) == 0 || memcmp(buf + q - 4, "null", 4) == 0)) ||
	     (q >= 5 && memcmp(buf + q - 5, "false", 5) == 0))) {
		*pos = q; /* where the comma should be */
		return _("a missing comma between two values");
	}
	return _("JSON syntax error near here");
}

cJSON *jr_parse(const char *name, const char *buf, size_t len, int terminated, const char *kind, const char *example,
                char **err)
{
	const char *text = buf, *nul, *end = NULL;
	char reason[192], *copy = NULL;
	cJSON *root;
	size_t i;

	*err = NULL;
	if (len >= 2 && (((unsigned char)buf[0] == 0xFF && (unsigned char)buf[1] == 0xFE) ||
	                 ((unsigned char)buf[0] == 0xFE && (unsigned char)buf[1] == 0xFF))) {
		*err = str_printf(_("%s: the file is UTF-16; save it as UTF-8"), name);
		return NULL;
	}
	if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) {
		text += 3; /* a byte-order mark, as some editors write */
		len -= 3;
	}
	for (i = 0; i < len && isspace((unsigned char)text[i]); i++)
		;
	if (i == len) {
		*err = str_printf(_("%s: empty file (a %s is one JSON object: %s)"), name, kind, example);
		return NULL;
	}
	nul = memchr(text, '\0', len);
	if (nul != NULL) {
		snprintf(reason, sizeof reason, _("NUL byte in the file (a %s is UTF-8 text)"), kind);
		*err = jr_syntax_error(name, text, len, (size_t)(nul - text), reason);
		return NULL;
	}
	/*
	 * The escape \u0000 would end the string where cJSON stores it (a C
	 * string), silently cutting a title or token short: refuse it. A
	 * backslash outside a string is a syntax error anyway, so no need to
	 * track strings; an escaped backslash is skipped with its pair.
	 */
	for (i = 0; i + 1 < len; i++) {
		if (text[i] != '\\')
			continue;
		if (text[i + 1] == 'u' && len - i >= 6 && memcmp(text + i + 2, "0000", 4) == 0) {
			*err = jr_syntax_error(name, text, len, i, _("\\u0000 (NUL) in a string: a text cannot hold it"));
			return NULL;
		}
		i++;
	}
	/* cJSON wants the terminating NUL inside the length when it must check what follows the value. */
	if (!terminated) {
		copy = malloc(len + 1);
		if (copy == NULL) {
			*err = str_printf(_("%s: out of memory"), name);
			return NULL;
		}
		memcpy(copy, text, len);
		copy[len] = '\0';
		text = copy;
	}
	root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1);
	if (root == NULL) {
		size_t pos = end != NULL && end >= text ? (size_t)(end - text) : 0;
		/* the cause first: it moves pos to the mistake (as an argument beside pos, the order was the compiler's) */
		const char *cause = syntax_cause(text, len, &pos);
		*err = jr_syntax_error(name, text, len, pos, cause);
	}
	free(copy);
	return root;
}
