/* svgfit.c: does every text of an attnviz SVG figure lie on its canvas?
 *
 *   svgfit FILE.svg...   prints each text that runs outside, exits 1 if any does
 *
 * A text's extent is measured conservatively, independently of export.c: each
 * character is 0.62 em wide (DejaVu Sans Mono, the figure's first font, is
 * 0.602), a CJK or other East Asian wide character 1.24 em; the text-anchor
 * (start, middle, end) places it about x; it stands 0.8 em above its baseline
 * y and 0.25 em below. Reads what attnviz writes: one <text> per line, no
 * tspan, attributes in double quotes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, len = 0, got;

	if (f == NULL)
		return NULL;
	do {
		if (len + 65536 + 1 > cap) {
			char *grown = realloc(buf, cap = (len + 65536 + 1) * 2);
			if (grown == NULL) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = grown;
		}
		got = fread(buf + len, 1, 65536, f);
		len += got;
	} while (got > 0);
	fclose(f);
	buf[len] = '\0';
	return buf;
}

/*
 * strstr and strchr over what is left of the file, without the C library's:
 * a sanitizer's interceptors measure the whole rest of the string on every
 * call, which made one 20 MB figure take minutes under `make test SAN=1`.
 */
static const char *find(const char *p, const char *needle)
{
	const size_t n = strlen(needle);

	for (; *p != '\0'; p++)
		if (*p == needle[0] && memcmp(p, needle, n) == 0)
			return p;
	return NULL;
}

static const char *find_char(const char *p, char c)
{
	for (; *p != '\0'; p++)
		if (*p == c)
			return p;
	return NULL;
}

/* The tag [tag, end) as a string (attnviz's tags are short; a longer one is cut). */
static const char *tag_text(const char *tag, const char *end, char buf[1024])
{
	size_t n = (size_t)(end - tag) < 1023 ? (size_t)(end - tag) : 1023;

	memcpy(buf, tag, n);
	buf[n] = '\0';
	return buf;
}

/* The value of attribute name in the tag [tag, end), or dflt. */
static double attr(const char *tag, const char *end, const char *name, double dflt)
{
	char key[32], buf[1024];
	const char *p;

	snprintf(key, sizeof key, " %s=\"", name);
	p = strstr(tag_text(tag, end, buf), key);
	if (p == NULL)
		return dflt;
	return strtod(p + strlen(key), NULL);
}

static int has_attr(const char *tag, const char *end, const char *text)
{
	char buf[1024];

	return strstr(tag_text(tag, end, buf), text) != NULL;
}

/* East Asian wide: Hangul Jamo, CJK and Yi, Hangul syllables, compatibility forms, fullwidth forms, planes 2-3. */
static int wide(unsigned cp)
{
	static const unsigned ranges[][2] = {
		{ 0x1100, 0x115f }, { 0x2e80, 0xa4cf }, { 0xac00, 0xd7a3 }, { 0xf900, 0xfaff },
		{ 0xfe30, 0xfe4f }, { 0xff00, 0xff60 }, { 0xffe0, 0xffe6 }, { 0x20000, 0x3fffd },
	};
	size_t i;

	for (i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
		if (cp >= ranges[i][0] && cp <= ranges[i][1])
			return 1;
	return 0;
}

/* Width in ems of the character data [s, end): entities count as one character. */
static double ems(const char *s, const char *end)
{
	double w = 0;

	while (s < end) {
		const unsigned char c = (unsigned char)*s;
		unsigned cp = c;
		int k = 1;
		if (c == '&') {
			const char *semi = memchr(s, ';', (size_t)(end - s));
			s = semi ? semi + 1 : s + 1;
			w += 0.62;
			continue;
		}
		if (c >= 0xf0)
			k = 4, cp = c & 0x07u;
		else if (c >= 0xe0)
			k = 3, cp = c & 0x0fu;
		else if (c >= 0xc0)
			k = 2, cp = c & 0x1fu;
		for (int i = 1; i < k && s + i < end; i++)
			cp = cp << 6 | ((unsigned char)s[i] & 0x3fu);
		s += k;
		w += wide(cp) ? 1.24 : 0.62;
	}
	return w;
}

static int check(const char *path)
{
	char *svg = slurp(path);
	const char *p, *root_end;
	double width, height, base_px;
	int bad = 0, texts = 0;

	if (svg == NULL) {
		fprintf(stderr, "svgfit: cannot read %s\n", path);
		return 1;
	}
	p = find(svg, "<svg ");
	if (p == NULL || (root_end = find_char(p, '>')) == NULL) {
		fprintf(stderr, "%s: no <svg> element\n", path);
		free(svg);
		return 1;
	}
	width = attr(p, root_end, "width", -1);
	height = attr(p, root_end, "height", -1);
	base_px = attr(p, root_end, "font-size", 16);
	while ((p = find(p, "<text")) != NULL) {
		const char *tag_end = find_char(p, '>'), *close;
		double x, y, px, w, left;
		if (tag_end == NULL || (close = find(tag_end, "</text>")) == NULL)
			break;
		x = attr(p, tag_end, "x", 0);
		y = attr(p, tag_end, "y", 0);
		px = attr(p, tag_end, "font-size", base_px);
		w = ems(tag_end + 1, close) * px;
		left = has_attr(p, tag_end, "text-anchor=\"middle\"") ? x - w / 2
		     : has_attr(p, tag_end, "text-anchor=\"end\"") ? x - w : x;
		texts++;
		if (left < 0 || left + w > width || y - 0.8 * px < 0 || y + 0.25 * px > height) {
			printf("%s: text \"%.*s\" spans x %.0f to %.0f, y %.0f to %.0f: outside the %.0f x %.0f canvas\n", path,
			       (int)(close - tag_end - 1 > 80 ? 80 : close - tag_end - 1), tag_end + 1, left, left + w,
			       y - 0.8 * px, y + 0.25 * px, width, height);
			bad = 1;
		}
		p = close;
	}
	if (texts == 0) {
		printf("%s: no text at all\n", path);
		bad = 1;
	}
	free(svg);
	return bad;
}

int main(int argc, char **argv)
{
	int i, bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: svgfit FILE.svg...\n");
		return 2;
	}
	for (i = 1; i < argc; i++)
		bad |= check(argv[i]);
	return bad;
}
