/* text.c: lesson texts in several languages, and showing them safely on a terminal. */
#include "base/text.h"
#include "base/shortest.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

const char *text_get(const Text *t, const char *lang)
{
	int i;

	if (t == NULL || t->count == 0)
		return "";
	if (lang != NULL)
		for (i = 0; i < t->count; i++)
			if (strcmp(t->v[i].lang, lang) == 0)
				return t->v[i].s;
	for (i = 0; i < t->count; i++)
		if (strcmp(t->v[i].lang, "en") == 0)
			return t->v[i].s;
	return t->v[0].s;
}

int text_has(const Text *t, const char *lang)
{
	int i;

	if (t == NULL || lang == NULL)
		return 0;
	for (i = 0; i < t->count; i++)
		if (strcmp(t->v[i].lang, lang) == 0)
			return 1;
	return 0;
}

int text_empty(const Text *t)
{
	return t == NULL || t->count == 0;
}

void text_free(Text *t)
{
	int i;

	if (t == NULL)
		return;
	for (i = 0; i < t->count; i++)
		free(t->v[i].s);
	free(t->v);
	t->v = NULL;
	t->count = 0;
}

int text_copy(Text *dst, const Text *src)
{
	int i;

	dst->count = 0;
	dst->v = NULL;
	if (src == NULL || src->count == 0)
		return 0;
	dst->v = calloc((size_t)src->count, sizeof *dst->v);
	if (dst->v == NULL)
		return -1;
	for (i = 0; i < src->count; i++) {
		memcpy(dst->v[i].lang, src->v[i].lang, sizeof dst->v[i].lang);
		dst->v[i].s = strdup(src->v[i].s);
		dst->count = i + 1;
		if (dst->v[i].s == NULL) {
			text_free(dst);
			return -1;
		}
	}
	return 0;
}

/*
 * Length of the valid UTF-8 sequence at s (at most avail bytes), with its
 * code point in *cp; 0 when the bytes there are not valid UTF-8 (overlong
 * forms, surrogates and code points above U+10FFFF are invalid).
 */
static size_t utf8_decode(const unsigned char *s, size_t avail, unsigned long *cp)
{
	unsigned long c;
	size_t len, i;

	if (avail == 0)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		len = 2;
		c = s[0] & 0x1F;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		len = 3;
		c = s[0] & 0x0F;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (avail < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) || c > 0x10FFFF ||
	    (c >= 0xD800 && c <= 0xDFFF))
		return 0;
	*cp = c;
	return len;
}

int text_valid_utf8(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;
	unsigned long cp;

	while (i < len) {
		k = utf8_decode(p + i, len - i, &cp);
		if (k == 0)
			return 0;
		i += k;
	}
	return 1;
}

/* Characters that drive a terminal or reorder what it shows besides C0 controls: DEL, C1 controls, bidi controls. */
static int escaped_cp(unsigned long cp)
{
	return cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

char *text_escape_json(const char *json)
{
	const unsigned char *p = (const unsigned char *)json;
	size_t len = strlen(json), i = 0, o = 0, k;
	unsigned long cp;
	/* At worst every byte becomes \u00NN: six bytes out for one in. */
	char *out = malloc(len * 6 + 1);

	if (out == NULL)
		return NULL;
	while (i < len) {
		k = utf8_decode(p + i, len - i, &cp);
		if (k > 0 && escaped_cp(cp)) {
			o += (size_t)sprintf(out + o, "\\u%04lx", cp);
			i += k;
		} else {
			out[o++] = json[i++];
		}
	}
	out[o] = '\0';
	return out;
}

/* Columns of code point cp on a UTF-8 terminal: 2 for East Asian wide characters, else 1. */
static int wide_columns(unsigned long cp)
{
	if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF) || (cp >= 0xAC00 && cp <= 0xD7A3) ||
	    (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60) ||
	    (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) || (cp >= 0x20000 && cp <= 0x3FFFD))
		return 2;
	return 1;
}

int text_char(const char *s, size_t len, wchar_t *wc, int *cols)
{
	unsigned long cp;
	size_t k = utf8_decode((const unsigned char *)s, len, &cp);
	int w;

	if (k == 0) {
		*wc = 0;
		*cols = 1;
		return 1;
	}
	w = cp <= (unsigned long)WCHAR_MAX ? wcwidth((wchar_t)cp) : -1;
	if (w < 0) {
		*wc = 0;
		*cols = wide_columns(cp);
	} else {
		*wc = (wchar_t)cp;
		*cols = w;
	}
	return (int)k;
}

/* text_width (locale 1) or text_cells (0). */
static int columns(const char *s, int len, int locale)
{
	size_t n = len < 0 ? strlen(s) : (size_t)len, i = 0, k;
	unsigned long cp;
	int w = 0, cols;
	wchar_t wc;

	while (i < n) {
		if (locale) {
			i += (size_t)text_char(s + i, n - i, &wc, &cols);
			w += cols;
			continue;
		}
		k = utf8_decode((const unsigned char *)s + i, n - i, &cp);
		w += k == 0 ? 1 : wide_columns(cp);
		i += k == 0 ? 1 : k;
	}
	return w;
}

int text_width(const char *s, int len)
{
	return columns(s, len, 1);
}

int text_fit(const char *s, int width)
{
	const size_t n = strlen(s);
	size_t i = 0;
	int w = 0, cols;
	wchar_t wc;

	while (i < n) {
		const int k = text_char(s + i, n - i, &wc, &cols);
		if (w + cols > width)
			break;
		w += cols;
		i += (size_t)k;
	}
	return (int)i;
}

int text_cells(const char *s, int len)
{
	return columns(s, len, 0);
}

/* A line may not start with cp (Chinese closing punctuation, and ASCII's after a wide character). */
static int closing_cp(unsigned long cp)
{
	static const unsigned long set[] = { 0xFF0C, 0x3002, 0x3001, 0xFF1B, 0xFF1A, 0xFF01, 0xFF1F, 0xFF09, 0x300D,
		                             0x300F, 0x201D, 0x2019, 0x300B, 0x3009, 0x3011, 0xFF3D, 0xFF5D, 0x2026,
		                             0xFF0E, ',',    '.',    ';',    ':',    '!',    '?',    ')',    ']',
		                             '}' };
	for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
		if (set[i] == cp)
			return 1;
	return 0;
}

/* A line may not end with cp (opening punctuation). */
static int opening_cp(unsigned long cp)
{
	static const unsigned long set[] = { 0xFF08, 0x300C, 0x300E, 0x201C, 0x2018, 0x300A,
		                             0x3008, 0x3010, 0xFF3B, 0xFF5B, '(',    '[', '{' };
	for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
		if (set[i] == cp)
			return 1;
	return 0;
}

/* May a line break between a (acols wide) and b (bcols wide)? */
static int break_between(unsigned long a, int acols, unsigned long b, int bcols)
{
	if (b == ' ')
		return 0;
	if (a == ' ')
		return 1;
	if (closing_cp(b) || opening_cp(a))
		return 0;
	return acols == 2 || bcols == 2;
}

int text_wrap(const char *s, int width, TextLine **out)
{
	int cap = 16, n = 0, len = (int)strlen(s), ls = 0, i = 0, w = 0, brk = -1, pcols = 0;
	unsigned long prev = 0;
	TextLine *v = malloc(sizeof *v * (size_t)cap);

	if (v == NULL)
		return -1;
	if (width < 1)
		width = 1;
	for (;;) {
		int end, next;

		if (i >= len || s[i] == '\n') {
			end = i;
			next = i + 1;
		} else {
			unsigned long cp;
			wchar_t wc;
			int cols, k = text_char(s + i, (size_t)(len - i), &wc, &cols);
			if (utf8_decode((const unsigned char *)s + i, (size_t)(len - i), &cp) == 0)
				cp = 0xFFFD;
			if (i > ls && break_between(prev, pcols, cp, cols))
				brk = i;
			if (w + cols <= width || i == ls) {
				w += cols;
				prev = cp;
				pcols = cols;
				i += k;
				continue;
			}
			/* full: up to a blank, break there; else at the last place a break is allowed, else here */
			next = end = s[i] == ' ' ? i : brk > ls ? brk : i;
			while (end > ls && s[end - 1] == ' ')
				end--;
			while (next < len && s[next] == ' ')
				next++;
		}
		if (n == cap) {
			TextLine *nv = realloc(v, sizeof *v * (size_t)(cap *= 2));
			if (nv == NULL) {
				free(v);
				return -1;
			}
			v = nv;
		}
		v[n].off = ls;
		v[n].len = end - ls;
		n++;
		if (i >= len)
			break;
		/* the new line is measured again from its start */
		ls = i = next;
		w = pcols = 0;
		prev = 0;
		brk = -1;
	}
	*out = v;
	return n;
}

char *text_exact(char *buf, double x, int digits)
{
	char d[SHORTEST_SIZE];
	int len, point, neg, prec, e, o = 0;

	if (!isfinite(x)) {
		snprintf(buf, TEXT_EXACT_SIZE, "%g", x);
		return buf;
	}
	len = shortest_digits(x, d, &point, &neg);
	/* laid out as "%.{prec}g" lays out its digits: the shortest digits, never fewer than asked for */
	prec = len > digits ? len : digits;
	e = point - 1; /* x = ±d₁.d₂… × 10^e */
	if (neg)
		buf[o++] = '-';
	if (e < -4 || e >= prec) {
		buf[o++] = d[0];
		if (len > 1) {
			buf[o++] = '.';
			memcpy(buf + o, d + 1, (size_t)len - 1);
			o += len - 1;
		}
		buf[o++] = 'e';
		buf[o++] = e < 0 ? '-' : '+';
		if (e < 0)
			e = -e;
		if (e >= 100)
			buf[o++] = (char)('0' + e / 100);
		buf[o++] = (char)('0' + e / 10 % 10);
		buf[o++] = (char)('0' + e % 10);
	} else if (point <= 0) { /* 0.000ddd */
		buf[o++] = '0';
		buf[o++] = '.';
		memset(buf + o, '0', (size_t)-point);
		o += -point;
		memcpy(buf + o, d, (size_t)len);
		o += len;
	} else if (point >= len) { /* ddd000 */
		memcpy(buf + o, d, (size_t)len);
		o += len;
		memset(buf + o, '0', (size_t)(point - len));
		o += point - len;
	} else { /* ddd.ddd */
		memcpy(buf + o, d, (size_t)point);
		o += point;
		buf[o++] = '.';
		memcpy(buf + o, d + point, (size_t)(len - point));
		o += len - point;
	}
	buf[o] = '\0';
	return buf;
}

char *text_escape(const char *s, const char *keep)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len, i = 0, o = 0, k;
	unsigned long cp;
	char *out;

	if (s == NULL)
		s = "";
	if (keep == NULL)
		keep = "";
	len = strlen(s);
	/* At worst every byte becomes \xNN: four bytes out for one in. */
	out = malloc(len * 4 + 1);
	if (out == NULL)
		return NULL;
	while (i < len) {
		k = utf8_decode(p + i, len - i, &cp);
		if (k == 0) {
			/* An invalid byte: shown, never sent raw. */
			o += (size_t)sprintf(out + o, "\\x%02x", p[i]);
			i++;
		} else if ((cp < 0x20 || cp == 0x7F) && strchr(keep, (int)cp) == NULL) {
			o += (size_t)sprintf(out + o, "\\x%02lx", cp);
			i++;
		} else if (cp >= 0x80 && cp <= 0x9F) {
			/* C1 controls (CSI is U+009B) drive terminals just like ESC. */
			o += (size_t)sprintf(out + o, "\\x%02lx", cp);
			i += k;
		} else if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) {
			/*
			 * Bidi embeddings, overrides and isolates (U+202E reverses
			 * the rest of the line on terminals that do bidi): shown,
			 * never sent raw. Six bytes out for three in.
			 */
			o += (size_t)sprintf(out + o, "\\u%04lx", cp);
			i += k;
		} else {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
		}
	}
	out[o] = '\0';
	return out;
}

char *text_expand_tabs(const char *s, int tabstop)
{
	size_t len = strlen(s), tabs = 0, i, o = 0, col = 0;
	char *out;

	for (i = 0; i < len; i++)
		tabs += s[i] == '\t';
	out = malloc(len + tabs * (size_t)tabstop + 1);
	if (out == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] == '\t') {
			do
				out[o++] = ' ';
			while (++col % (size_t)tabstop != 0);
			continue;
		}
		out[o++] = s[i];
		if (s[i] == '\n')
			col = 0;
		else if (((unsigned char)s[i] & 0xC0) != 0x80)
			col++; /* a character starts here */
	}
	out[o] = '\0';
	return out;
}

/* The ASCII spelling of symbols lessons use, for terminals that cannot show UTF-8. */
static const struct {
	unsigned long cp;
	const char *ascii;
} ascii_names[] = {
	{ 0x00A0, " " }, { 0x00B7, "." }, { 0x00D7, "x" }, { 0x00F7, "/" }, { 0x00B2, "^2" }, { 0x00B3, "^3" },
	{ 0x00B9, "^1" }, { 0x00B0, "deg" }, { 0x00B1, "+-" },
	{ 0x0391, "A" }, { 0x03A3, "sum" }, { 0x03B1, "alpha" }, { 0x03B2, "beta" }, { 0x03B8, "theta" },
	{ 0x03BC, "mu" }, { 0x03C3, "sigma" }, { 0x03C0, "pi" },
	{ 0x1D40, "^T" }, { 0x2032, "'" }, { 0x2033, "''" },
	{ 0x2013, "-" }, { 0x2014, "--" }, { 0x2018, "'" }, { 0x2019, "'" }, { 0x201C, "\"" }, { 0x201D, "\"" },
	{ 0x2026, "..." }, { 0x2022, "*" }, { 0x2192, "->" }, { 0x2190, "<-" }, { 0x2191, "^" }, { 0x2193, "v" },
	{ 0x21D2, "=>" }, { 0x2212, "-" }, { 0x2211, "sum" }, { 0x221A, "sqrt" }, { 0x221E, "inf" },
	{ 0x2248, "~" }, { 0x2260, "!=" }, { 0x2264, "<=" }, { 0x2265, ">=" }, { 0x22C5, "." },
	{ 0x2070, "^0" }, { 0x2071, "^i" }, { 0x2074, "^4" }, { 0x2075, "^5" }, { 0x2076, "^6" }, { 0x2077, "^7" },
	{ 0x2078, "^8" }, { 0x2079, "^9" }, { 0x207F, "^n" }, { 0x2080, "_0" }, { 0x2081, "_1" }, { 0x2082, "_2" },
	{ 0x2083, "_3" }, { 0x2084, "_4" }, { 0x2085, "_5" }, { 0x2086, "_6" }, { 0x2087, "_7" }, { 0x2088, "_8" },
	{ 0x2089, "_9" }, { 0x1D62, "_i" }, { 0x2C7C, "_j" }, { 0x2096, "_k" }, { 0x209C, "_t" },
	{ 0x2581, "_" }, { 0x2588, "#" }, { 0x2591, "." }, { 0x2592, ":" }, { 0x2593, "*" },
};

char *text_ascii(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), i = 0, o = 0;
	char *out = malloc(len * 3 + 1); /* a spelling is at most 2.5 times the bytes it replaces */

	if (out == NULL)
		return NULL;
	while (i < len) {
		unsigned long cp;
		size_t k = utf8_decode(p + i, len - i, &cp), j;
		const char *name = "?";
		if (k == 1) {
			out[o++] = (char)p[i++];
			continue;
		}
		if (k == 0) {
			out[o++] = '?';
			i++;
			continue;
		}
		for (j = 0; j < sizeof ascii_names / sizeof ascii_names[0]; j++)
			if (ascii_names[j].cp == cp) {
				name = ascii_names[j].ascii;
				break;
			}
		memcpy(out + o, name, strlen(name));
		o += strlen(name);
		i += k;
	}
	out[o] = '\0';
	return out;
}

char *text_wrap_lines(const char *s, int width)
{
	TextLine *lines = NULL;
	const int n = text_wrap(s, width, &lines);
	size_t len = 0, at = 0;
	char *out;

	if (n < 0)
		return NULL;
	for (int i = 0; i < n; i++)
		len += (size_t)lines[i].len + 1;
	if ((out = malloc(len + 1)) == NULL) {
		free(lines);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		memcpy(out + at, s + lines[i].off, (size_t)lines[i].len);
		at += (size_t)lines[i].len;
		if (i + 1 < n)
			out[at++] = '\n';
	}
	out[at] = '\0';
	free(lines);
	return out;
}

int text_bar_level(double x, double lo, double hi, int levels)
{
	double t;

	if (levels < 1 || !isfinite(x) || !isfinite(lo) || !isfinite(hi) || !(hi > lo))
		return 0;
	t = (x / 2 - lo / 2) / (hi / 2 - lo / 2); /* halves: no overflow from ±1e308 */
	if (!(t > 0))
		return 0;
	if (t >= 1)
		return levels - 1;
	return (int)(t * (levels - 1) + 0.5);
}
