/* render.c: frames of screen cells written as an animated SVG or an asciicast v2 (render.h). */
#include "out/render.h"
#include "base/fileio.h"
#include "out/record.h"
#include "base/strbuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The SVG's grid: a cell is CELL_W × CELL_H user units, text FONT_SIZE high, its baseline BASELINE below the row's top. */
#define CELL_W 10
#define CELL_H 20
#define FONT_SIZE 16
#define BASELINE 15

typedef struct Frame {
	long long ms;
	int line;
	RenderCell *cells;
} Frame;

struct Render {
	int w, h;
	uint32_t fg, bg;
	int n, cap;
	Frame *f;
	long long end_ms;
};

Render *
render_new(int width, int height, uint32_t fg, uint32_t bg)
{
	Render *r;

	if (width < 1 || height < 1 || width > 1000 || height > 1000)
		return NULL;
	r = calloc(1, sizeof *r);
	if (r == NULL)
		return NULL;
	r->w = width;
	r->h = height;
	r->fg = fg;
	r->bg = bg;
	return r;
}

void
render_free(Render *r)
{
	if (r == NULL)
		return;
	for (int i = 0; i < r->n; i++)
		free(r->f[i].cells);
	free(r->f);
	free(r);
}

int
render_count(const Render *r)
{
	return r->n;
}

int
render_frame(Render *r, long long ms, int line, const RenderCell *cells)
{
	size_t bytes = (size_t)r->w * (size_t)r->h * sizeof *cells;
	Frame *last = r->n > 0 ? &r->f[r->n - 1] : NULL;

	if (last != NULL && ms < last->ms)
		ms = last->ms;
	if (last != NULL && memcmp(last->cells, cells, bytes) == 0)
		return 0; /* nothing changed: the last frame shows on */
	if (last != NULL && ms == last->ms && (r->n < 2 || memcmp(r->f[r->n - 2].cells, cells, bytes) != 0)) {
		memcpy(last->cells, cells, bytes); /* shown for no time at all: replaced */
		last->line = line;
		return 0;
	}
	if (last != NULL && ms == last->ms) {
		/* replaced by what came before it: that frame goes on */
		free(last->cells);
		r->n--;
		return 0;
	}
	if ((size_t)r->n + 1 > RENDER_MAX_BYTES / bytes)
		return RENDER_TOO_BIG; /* refused before it is allocated */
	if (r->n == r->cap) {
		int cap = r->cap ? r->cap * 2 : 64;
		Frame *f = realloc(r->f, (size_t)cap * sizeof *f);
		if (f == NULL)
			return -1;
		r->f = f;
		r->cap = cap;
	}
	RenderCell *c = malloc(bytes);
	if (c == NULL)
		return -1;
	memcpy(c, cells, bytes);
	r->f[r->n++] = (Frame){ .ms = ms, .line = line, .cells = c };
	if (r->end_ms < ms)
		r->end_ms = ms;
	return 0;
}

void
render_end(Render *r, long long ms)
{
	if (r->n > 0 && ms < r->f[r->n - 1].ms)
		ms = r->f[r->n - 1].ms;
	r->end_ms = ms;
}

/* The end of frame i (ms): the next frame's start, or the end; a last frame shows for at least a second. */
static long long
frame_end(const Render *r, int i)
{
	if (i + 1 < r->n)
		return r->f[i + 1].ms;
	return r->end_ms > r->f[i].ms ? r->end_ms : r->f[i].ms + 1000;
}

/* ------------------------------------------------------------ characters */

/* A code point as UTF-8 into out (at least 4 bytes); what no file may hold (controls, surrogates) becomes U+FFFD. */
static int
utf8_put(uint32_t c, int xml, char *out)
{
	if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff ||
	    (xml && (c == 0xfffe || c == 0xffff)))
		c = 0xfffd;
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | (c >> 6));
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | (c >> 12));
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (c >> 18));
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* A cell's character for XML text. */
static void
xml_char(StrBuf *b, uint32_t c)
{
	char u[4];

	if (c == '&')
		strbuf_puts(b, "&amp;");
	else if (c == '<')
		strbuf_puts(b, "&lt;");
	else if (c == '>')
		strbuf_puts(b, "&gt;");
	else
		strbuf_add(b, u, (size_t)utf8_put(c, 1, u));
}

/* The attributes a cell's text is drawn with: as SVG attributes, or (sgr) as SGR parameters. */
static const struct {
	unsigned flag;
	const char *svg, *sgr;
} render_attr[] = {
	{ RENDER_BOLD, " font-weight=\"bold\"", ";1" },
	{ RENDER_ITALIC, " font-style=\"italic\"", ";3" },
	{ RENDER_UNDERLINE, " text-decoration=\"underline\"", ";4" },
};

static void
render_attrs(StrBuf *b, unsigned flags, int sgr)
{
	for (size_t i = 0; i < sizeof render_attr / sizeof render_attr[0]; i++)
		if (flags & render_attr[i].flag)
			strbuf_puts(b, sgr ? render_attr[i].sgr : render_attr[i].svg);
}

/* Two cells draw their text alike (one run of text). */
static int
same_text_style(const RenderCell *a, const RenderCell *b)
{
	return a->fg == b->fg && (a->flags & (RENDER_BOLD | RENDER_UNDERLINE | RENDER_ITALIC)) ==
	                             (b->flags & (RENDER_BOLD | RENDER_UNDERLINE | RENDER_ITALIC));
}

/* ------------------------------------------------------------ SVG */

/* U+2580–U+259F, the block elements (the legend's bars, the shades of a monochrome heatmap): drawn as shapes. */
static int
is_block(uint32_t c)
{
	return c >= 0x2580 && c <= 0x259f;
}

/*
 * A block element as rectangles in its cell's colour, so that the picture does not depend on the font
 * having the glyph (a font without it falls back to another, stretched by textLength, or to a box).
 * Its text stays in the <text>, invisible, so the frame still reads as the screen did.
 */
static void
svg_block(StrBuf *b, uint32_t c, int col, int row, uint32_t fg)
{
	/* the quadrants of U+2596–U+259F: 1 upper left, 2 upper right, 4 lower left, 8 lower right */
	static const unsigned char quad[10] = { 4, 8, 1, 1 | 4 | 8, 1 | 8, 1 | 2 | 4, 1 | 2 | 8, 2, 2 | 4, 2 | 4 | 8 };
	double x = col * CELL_W, y = row * CELL_H, w = CELL_W, h = CELL_H, eighth_h = CELL_H / 8.0;
	double opacity = 1;

	if (c == 0x2580) {
		h = CELL_H / 2.0; /* ▀ upper half */
	} else if (c >= 0x2581 && c <= 0x2588) {
		h = eighth_h * (c - 0x2580); /* ▁ … █: the lower n eighths */
		y += CELL_H - h;
	} else if (c >= 0x2589 && c <= 0x258f) {
		w = CELL_W * (0x2590 - c) / 8.0; /* ▉ … ▏: the left n eighths */
	} else if (c == 0x2590) {
		w = CELL_W / 2.0; /* ▐ right half */
		x += w;
	} else if (c >= 0x2591 && c <= 0x2593) {
		opacity = (c - 0x2590) / 4.0; /* ░ ▒ ▓: the colour at a quarter, a half, three quarters */
	} else if (c == 0x2594) {
		h = eighth_h; /* ▔ upper eighth */
	} else if (c == 0x2595) {
		w = CELL_W / 8.0; /* ▕ right eighth */
		x += CELL_W - w;
	} else {
		unsigned q = quad[c - 0x2596];
		for (int i = 0; i < 4; i++)
			if (q & (1u << i))
				strbuf_printf(b, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"#%06x\"/>",
				              x + (i & 1) * CELL_W / 2.0, y + (i >> 1) * CELL_H / 2.0, CELL_W / 2.0, CELL_H / 2.0,
				              (unsigned)fg);
		return;
	}
	strbuf_printf(b, "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"#%06x\"", x, y, w, h, (unsigned)fg);
	if (opacity < 1)
		strbuf_printf(b, " fill-opacity=\"%g\"", opacity);
	strbuf_puts(b, "/>");
}

/* One row of a frame: its backgrounds, then its text in runs, each placed at its column. */
static void
svg_row(StrBuf *b, const Render *r, const RenderCell *row, int y)
{
	for (int x = 0; x < r->w;) {
		int e = x + 1;
		while (e < r->w && row[e].bg == row[x].bg)
			e++;
		if (row[x].bg != r->bg)
			strbuf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#%06x\"/>", x * CELL_W,
			              y * CELL_H, (e - x) * CELL_W, CELL_H, (unsigned)row[x].bg);
		x = e;
	}
	for (int x = 0; x < r->w; x++)
		if (is_block(row[x].ch) && !(row[x].flags & RENDER_CONT))
			svg_block(b, row[x].ch, x, y, row[x].fg);
	strbuf_printf(b, "<text y=\"%d\">", y * CELL_H + BASELINE);
	for (int x = 0; x < r->w;) {
		const RenderCell *c = &row[x];
		int e = x + 1, cells;
		if (c->flags & RENDER_CONT) {
			x++; /* a double-width character's second half, without its first */
			continue;
		}
		if (c->flags & RENDER_WIDE)
			e = x + 2 <= r->w ? x + 2 : r->w;
		else
			while (e < r->w && !(row[e].flags & (RENDER_WIDE | RENDER_CONT)) && same_text_style(c, &row[e]) &&
			       is_block(row[e].ch) == is_block(c->ch))
				e++;
		cells = e - x;
		strbuf_printf(b, "<tspan x=\"%d\" textLength=\"%d\" lengthAdjust=\"spacingAndGlyphs\"", x * CELL_W,
		              cells * CELL_W);
		if (is_block(c->ch))
			strbuf_puts(b, " fill-opacity=\"0\""); /* drawn above as rectangles */
		else if (c->fg != r->fg)
			strbuf_printf(b, " fill=\"#%06x\"", (unsigned)c->fg);
		render_attrs(b, c->flags, 0);
		strbuf_puts(b, ">");
		if (c->flags & RENDER_WIDE)
			xml_char(b, c->ch);
		else
			for (int i = x; i < e; i++)
				xml_char(b, row[i].ch);
		strbuf_puts(b, "</tspan>");
		x = e;
	}
	strbuf_puts(b, "</text>\n");
}

/* Write b to path through fileio (replaced whole, or left as it was); frees b. */
static int
write_buf(StrBuf *b, const char *path, char **err)
{
	FileOut o;

	*err = NULL;
	if (b->oom) {
		free(b->s);
		*err = str_printf("out of memory");
		return -1;
	}
	if (fileio_begin(&o, path, FILEIO_KEEP_MODE, 0, err) != 0) {
		free(b->s);
		return -1;
	}
	if (b->len > 0 && fwrite(b->s, 1, b->len, o.f) != b->len && o.error == 0)
		o.error = errno ? errno : EIO;
	free(b->s);
	return fileio_commit(&o, err);
}

/* The SVG's opening: the grid's size, its font and colours, frames frames lasting total ms, the page's colour. */
static void
svg_open(StrBuf *b, const Render *r, int frames, long long total)
{
	int W = r->w * CELL_W, H = r->h * CELL_H;

	strbuf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	strbuf_printf(b,
	              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	              "font-family=\"'DejaVu Sans Mono', 'Noto Sans Mono CJK SC', Menlo, Consolas, monospace\" "
	              "font-size=\"%d\" fill=\"#%06x\" xml:space=\"preserve\" data-frames=\"%d\" data-duration=\"%.3f\">\n",
	              W, H, W, H, FONT_SIZE, (unsigned)r->fg, frames, (double)total / 1000);
	/* blanks are cells: kept (xml:space for SVG 1.1 viewers, white-space for browsers) */
	strbuf_puts(b, "<style>text { white-space: pre; }</style>\n");
	strbuf_printf(b, "<rect width=\"%d\" height=\"%d\" fill=\"#%06x\"/>\n", W, H, (unsigned)r->bg);
}

void
render_span(const Render *r, int i, long long *start, long long *end)
{
	*start = r->f[i].ms;
	*end = frame_end(r, i);
}

int
render_write_frame_svg(const Render *r, int i, const char *path, char **err)
{
	StrBuf b = { 0 };

	svg_open(&b, r, 1, frame_end(r, i) - r->f[i].ms);
	for (int y = 0; y < r->h; y++)
		svg_row(&b, r, r->f[i].cells + (size_t)y * (size_t)r->w, y);
	strbuf_puts(&b, "</svg>\n");
	return write_buf(&b, path, err);
}

int
render_write_svg(const Render *r, const char *path, char **err)
{
	StrBuf b = { 0 };
	long long total = r->n > 0 ? frame_end(r, r->n - 1) : 1000;

	svg_open(&b, r, r->n, total);
	/* The clock every frame's <set> counts from; it begins again at its own end, so the animation loops. */
	strbuf_printf(&b,
	              "<rect width=\"0\" height=\"0\"><animate id=\"loop\" attributeName=\"width\" values=\"0;0\" "
	              "dur=\"%.3fs\" begin=\"0s;loop.end\"/></rect>\n",
	              (double)total / 1000);
	for (int i = 0; i < r->n; i++) {
		const Frame *f = &r->f[i];
		long long end = frame_end(r, i);
		strbuf_printf(&b, "<g id=\"f%d\" data-t=\"%.3f\" data-line=\"%d\" visibility=\"%s\">", i,
		              (double)f->ms / 1000, f->line, i == 0 ? "visible" : "hidden");
		/* the first frame is what a viewer without animation shows: hidden while the others show */
		if (i == 0 && r->n > 1)
			strbuf_printf(&b, "<set attributeName=\"visibility\" to=\"hidden\" begin=\"loop.begin+%.3fs\" dur=\"%.3fs\"/>",
			              (double)end / 1000, (double)(total - end) / 1000);
		else if (i > 0)
			strbuf_printf(&b, "<set attributeName=\"visibility\" to=\"visible\" begin=\"loop.begin+%.3fs\" dur=\"%.3fs\"/>",
			              (double)f->ms / 1000, (double)(end - f->ms) / 1000);
		strbuf_puts(&b, "\n");
		for (int y = 0; y < r->h; y++)
			svg_row(&b, r, f->cells + (size_t)y * (size_t)r->w, y);
		strbuf_puts(&b, "</g>\n");
	}
	strbuf_puts(&b, "</svg>\n");
	return write_buf(&b, path, err);
}

/* ------------------------------------------------------------ asciicast */

/* An SGR for a cell: everything reset, then its colours (24-bit) and attributes. */
static void
cast_sgr(StrBuf *b, const RenderCell *c)
{
	strbuf_printf(b, "\x1b[0;38;2;%u;%u;%u;48;2;%u;%u;%u", (unsigned)(c->fg >> 16) & 255, (unsigned)(c->fg >> 8) & 255,
	              (unsigned)c->fg & 255, (unsigned)(c->bg >> 16) & 255, (unsigned)(c->bg >> 8) & 255,
	              (unsigned)c->bg & 255);
	render_attrs(b, c->flags, 1);
	strbuf_puts(b, "m");
}

void
render_cast_rows(StrBuf *b, int width, int height, const RenderCell *cells, const RenderCell *prev)
{
	char u[4];

	strbuf_puts(b, "\x1b[?25l");
	for (int y = 0; y < height; y++) {
		const size_t at = (size_t)y * (size_t)width;
		const RenderCell *row = cells + at, *style = NULL;
		if (prev != NULL && memcmp(row, prev + at, (size_t)width * sizeof *row) == 0)
			continue;
		strbuf_printf(b, "\x1b[%d;1H", y + 1);
		for (int x = 0; x < width; x++) {
			const RenderCell *c = &row[x];
			if (c->flags & RENDER_CONT)
				continue;
			if (style == NULL || !same_text_style(style, c) || style->bg != c->bg) {
				cast_sgr(b, c);
				style = c;
			}
			if ((c->flags & RENDER_WIDE) && x + 1 >= width)
				strbuf_add(b, " ", 1); /* no room for its second half */
			else
				strbuf_add(b, u, (size_t)utf8_put(c->ch, 0, u));
		}
	}
	strbuf_puts(b, "\x1b[0m");
}

int
render_write_cast(const Render *r, const char *path, const char *title, double idle_limit, char **err)
{
	Recorder *rec = record_open(path, r->w, r->h, title, idle_limit, err);
	int failed = 0;

	if (rec == NULL)
		return -1;
	for (int i = 0; i < r->n && !failed; i++) {
		StrBuf b = { 0 };
		if (i == 0)
			strbuf_puts(&b, "\x1b[0m\x1b[2J");
		render_cast_rows(&b, r->w, r->h, r->f[i].cells, NULL);
		failed = b.oom;
		if (!failed)
			record_output_at(rec, (double)r->f[i].ms / 1000, b.s, b.len);
		free(b.s);
	}
	if (failed) {
		record_abort(rec);
		*err = str_printf("out of memory");
		return -1;
	}
	/* the last frame holds to the end: an event that changes nothing marks it */
	if (r->n > 0)
		record_output_at(rec, (double)frame_end(r, r->n - 1) / 1000, "\x1b[0m", 4);
	return record_close(rec, err);
}
