/* export_svg.c: the SVG figure of an export (export.c dispatches to it): the
 * panes laid out in rows under the title and formula, each a labelled table of
 * numbers or a heatmap with its colour legend. */
#include "out/export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inspect/explain.h"
#include "inspect/heatmap.h"
#include "inspect/labels.h"
#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "out/export_internal.h"
#include "out/textfmt.h"
#include "inspect/headscores.h"

/* ------------------------------------------------------------ SVG */

/* Append s as XML character data: & < > " ' escaped, characters XML 1.0 forbids dropped. */
#define xml_puts export_xml_puts
void export_xml_puts(StrBuf *b, const char *text)
{
	char *s = ex_shown(text);
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	for (; *p; p++) {
		switch (*p) {
		case '&': strbuf_puts(b, "&amp;"); continue;
		case '<': strbuf_puts(b, "&lt;"); continue;
		case '>': strbuf_puts(b, "&gt;"); continue;
		case '"': strbuf_puts(b, "&quot;"); continue;
		case '\'': strbuf_puts(b, "&apos;"); continue;
		default: break;
		}
		if (*p < 0x20) {
			/* only tab, newline and carriage return are allowed; in one-line labels a space is better */
			if (*p == '\t' || *p == '\n' || *p == '\r')
				strbuf_puts(b, " ");
			continue;
		}
		/* U+FFFE and U+FFFF (EF BF BE / EF BF BF) are not XML characters */
		if (p[0] == 0xef && p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf)) {
			p += 2;
			continue;
		}
		strbuf_add(b, (const char *)p, 1);
	}
	free(s);
}

/* A label cut to at most max cells, with "…" when cut: heap string. */
static char *label_cut(char *label, int max)
{
	size_t keep = 0, next;
	int w = 0;

	if (label == NULL || text_cells(label, -1) <= max)
		return label;
	for (; label[keep] != '\0'; keep = next) {
		next = keep + 1;
		while (((unsigned char)label[next] & 0xC0) == 0x80)
			next++; /* a whole character */
		w += text_cells(label + keep, (int)(next - keep));
		if (w > max - 1)
			break;
	}
	strcpy(label + keep, "\u2026");
	return label;
}

#define SVG_FONT "DejaVu Sans Mono, Menlo, Consolas, Noto Sans Mono CJK SC, monospace"
/*
 * Widths are measured, not guessed per figure: one character cell of text is
 * SVG_EM of its font size (DejaVu Sans Mono's advance is 0.602 em; CJK
 * characters are two cells), a little more than any of the listed fonts, so
 * that text measured to fit does fit. tests/svgfit.c checks every text
 * element of every shipped lesson's figures against the canvas with the same rule.
 */
#define SVG_EM 0.62
#define SVG_NUM_PX 12
#define SVG_PANE_TITLE_PX 13
#define SVG_TITLE_PX 18
#define SVG_FORMULA_PX 13
#define SVG_LEGEND_PX 10
#define SVG_CHAR_W (SVG_NUM_PX * SVG_EM)
#define SVG_LABEL_MAX 16
#define SVG_CELL_H 26
#define SVG_GAP 48       /* between panes of a row */
#define SVG_ROW_GAP 24   /* between rows of panes */
#define SVG_MARGIN 24
#define SVG_MIN_WIDTH 360
#define SVG_MAX_LINES 64
#define SVG_MAP_LINE 18 /* a line of the block map under the panes */

static void rgb_hex(char out[8], int colour, unsigned long dflt)
{
	snprintf(out, 8, "#%06lx", themefile_rgb(colour, dflt) & 0xffffffUL);
}

/* Pixels of text of cells character cells at size px (rounded up). */
static int svg_text_w(int cells, int px)
{
	return (int)ceil(cells * px * SVG_EM);
}


/* Its legend's width right of the ramp: the masked swatch, the negative mark. */
static int svg_legend_extra(const ThemeFile *th, const ExPane *p)
{
	int w = 0;

	if (p->any_inf)
		w = 28 + svg_text_w(9, SVG_LEGEND_PX); /* "−∞ masked", "−∞ 被遮住" */
	if (th->mono && p->diverging && p->any_neg)
		w = (int)fmax(w, 28 + svg_text_w(8, SVG_LEGEND_PX)); /* "negative", "负数" */
	return w;
}

static int svg_ramp_step(const ThemeFile *th, const ExPane *p)
{
	const int n = p->diverging ? th->ndiv : th->nseq;
	return (int)fmin(16, fmax(8, 176 / (n > 0 ? n : 1)));
}

/* The cells' range (the colour scale before any sharing). */
static void svg_range(ExPane *p)
{
	size_t k, count = (size_t)p->v.rows * (size_t)p->v.cols;

	p->diverging = matrix_kind(p->which)->diverging;
	p->lo = INFINITY;
	p->hi = -INFINITY;
	for (k = 0; k < count; k++) {
		const double x = p->v.a[k];
		if (isfinite(x)) {
			p->lo = fmin(p->lo, x);
			p->hi = fmax(p->hi, x);
			p->any_neg |= x < 0;
		} else if (!isnan(x)) /* NaN: a cell the step shown has not reached, drawn blank */
			p->any_inf = 1;
	}
	if (p->lo > p->hi)
		p->lo = p->hi = 0.0;
	/* A probability is coloured on 0–1, not from its own min to max: near-uniform
	 * weights (0.30–0.37) then look near-uniform, and the smallest is not drawn as 0. */
	p->prob = (matrix_kind(p->which)->flags & MF_SUMS) != 0 && !p->diverging;
	if (p->prob) {
		p->lo = 0.0;
		p->hi = 1.0;
	}
	p->bound = fmax(fabs(p->lo), fabs(p->hi));
}

/*
 * 1 when panes a and b mean the same kind of number and may share a colour
 * scale: one matrix (its heads), or matrices the same stage makes (Q, K, V;
 * dW_q, dW_k, dW_v), or the lesson's learned weights (W_q, W_k, W_v, W_o).
 * A stage's operands and its result of another meaning do not (dweights'
 * ±1.26 would wash out dmasked's ±0.26).
 */
static int svg_same_meaning(const ExPane *a, const ExPane *b)
{
	const MatrixKind *ka = matrix_kind(a->which), *kb = matrix_kind(b->which);

	if (a->which == b->which)
		return 1;
	if (a->diverging != b->diverging || ka->made_by != kb->made_by)
		return 0;
	if (ka->made_by != STAGE_COUNT)
		return 1;
	return (ka->flags & MF_PARAM) && (kb->flags & MF_PARAM);
}

/* Cell (r, c) of a pane's matrix, for heat_block_peak. */
static double pane_cell(const void *ctx, int r, int c)
{
	return MAT_AT(*(const Mat *)ctx, r, c);
}

/*
 * A heatmap pane (p->heat): past EXPORT_HEAT_SIDE cells a side, down-sampled
 * by f in both directions, each drawn cell its block's strongest finite cell
 * (heat_factor and heat_block_peak: the terminal's zoom rule), −∞ when the
 * block has none; the caption says so. -1: out of memory.
 */
static int heat_reduce(ExPane *p, const char *lang)
{
	const int zh = strcmp(lang, "zh") == 0;
	const int f = heat_factor(p->v.rows, p->v.cols, EXPORT_HEAT_SIDE, EXPORT_HEAT_SIDE);
	int i, j;
	Mat small;

	if (f <= 1) {
		snprintf(p->caption, sizeof p->caption, zh ? "\u70ed\u56fe\uff1a\u4e0d\u5199\u6570\u5b57\uff08--numbers on \u5199\u51fa\uff09"
		                                         : "heatmap: no numbers (--numbers on writes them)");
		return 0;
	}
	if (mat_alloc(&small, (p->v.rows + f - 1) / f, (p->v.cols + f - 1) / f) != 0)
		return -1;
	for (i = 0; i < small.rows; i++)
		for (j = 0; j < small.cols; j++) /* NaN: every cell of the block unreached (blank); −∞: masked */
			MAT_AT(small, i, j) = heat_block_peak(pane_cell, &p->v, i * f, (int)fmin((i + 1) * f, p->v.rows), j * f,
			                                      (int)fmin((j + 1) * f, p->v.cols));
	snprintf(p->caption, sizeof p->caption,
	         zh ? "\u70ed\u56fe\uff1a\u6bcf\u683c\u662f %d \u00d7 %d \u4e2a\u683c\u5b50\u4e2d\u6700\u5f3a\u7684\u4e00\u4e2a\uff08\u753b\u51fa %d \u00d7 %d\uff09"
	            : "heatmap: each cell the strongest of %d \u00d7 %d cells (%d \u00d7 %d drawn)",
	         f, f, small.rows, small.cols);
	mat_free(&p->v);
	p->v = small;
	p->f = f;
	return 0;
}

/* Sizes of a heatmap pane: small cells, a label where one fits, the caption under the legend. */
static void svg_measure_heat(const Attn *a, const ThemeFile *th, ExPane *p)
{
	char name[96];
	int i, maxcol = 1, maxrow = 1, legend;

	for (i = 0; i < p->v.rows; i++) {
		char *s = label_cut(ex_fig_label(a, p, 1, i), 10);
		maxrow = (int)fmax(maxrow, text_cells(s ? s : "", -1));
		free(s);
	}
	for (i = 0; i < p->v.cols; i++) {
		char *s = label_cut(ex_fig_label(a, p, 0, i), 10);
		maxcol = (int)fmax(maxcol, text_cells(s ? s : "", -1));
		free(s);
	}
	p->cell_w = p->cell_h = EXPORT_HEAT_CELL;
	p->rstep = (SVG_LEGEND_PX + 3 + p->cell_h - 1) / p->cell_h;
	p->cstep = (svg_text_w(maxcol, SVG_LEGEND_PX) + 6 + p->cell_w - 1) / p->cell_w;
	p->label_w = svg_text_w(maxrow, SVG_LEGEND_PX) + 8;
	ex_fig_pane_name(name, sizeof name, a, p);
	snprintf(name + strlen(name), sizeof name - strlen(name), "  %d \u00d7 %d", p->rows0, p->cols0);
	legend = p->label_w + (p->diverging ? th->ndiv : th->nseq) * svg_ramp_step(th, p) + svg_legend_extra(th, p);
	/* the last column label may run past the grid by a label's width */
	p->width = (int)fmax(fmax(p->label_w + (p->v.cols + p->cstep) * p->cell_w, legend),
	                     fmax(svg_text_w(text_cells(name, -1), SVG_PANE_TITLE_PX), 200));
	p->width = (int)fmax(p->width, svg_text_w(text_cells(p->caption, -1), SVG_LEGEND_PX));
	p->width = (int)fmax(p->width, svg_text_w(text_cells(p->scale_note, -1), SVG_LEGEND_PX));
	/* title 20, column labels 20, grid, legend 56, caption 16, the scale's note 16 */
	p->height = 40 + p->v.rows * p->cell_h + 56 + 16 + (p->scale_note[0] ? 16 : 0);
}

/* Sizes of one pane, once its scale is known. */
static void svg_measure(const Attn *a, const ThemeFile *th, const ExportTarget *t, ExPane *p)
{
	char num[32], name[96];
	int i, j, maxnum = 4, maxcol = 1, maxrow = 1, nramp = p->diverging ? th->ndiv : th->nseq, legend;
	size_t k, count = (size_t)p->v.rows * (size_t)p->v.cols;

	if (p->heat) {
		svg_measure_heat(a, th, p);
		return;
	}
	p->cell_h = SVG_CELL_H;
	for (k = 0; k < count; k++)
		maxnum = (int)fmax(maxnum, text_cells(ex_fig_number(num, p->v.a[k], t->precision), -1));
	for (i = 0; i < p->v.rows; i++) {
		char *s = label_cut(ex_fig_label(a, p, 1, i), SVG_LABEL_MAX);
		maxrow = (int)fmax(maxrow, text_cells(s ? s : "", -1));
		free(s);
	}
	for (j = 0; j < p->v.cols; j++) {
		char *s = label_cut(ex_fig_label(a, p, 0, j), SVG_LABEL_MAX);
		maxcol = (int)fmax(maxcol, text_cells(s ? s : "", -1));
		free(s);
	}
	p->cell_w = svg_text_w((int)fmax(maxnum, maxcol), SVG_NUM_PX) + 14;
	p->label_w = svg_text_w(maxrow, SVG_NUM_PX) + 12;
	ex_fig_pane_name(name, sizeof name, a, p);
	snprintf(name + strlen(name), sizeof name - strlen(name), "  %d \u00d7 %d", p->v.rows, p->v.cols);
	legend = p->label_w + nramp * svg_ramp_step(th, p) + svg_legend_extra(th, p);
	p->width = (int)fmax(fmax(p->label_w + p->v.cols * p->cell_w, legend),
	                     fmax(svg_text_w(text_cells(name, -1), SVG_PANE_TITLE_PX), 200));
	p->width = (int)fmax(p->width, svg_text_w(text_cells(p->scale_note, -1), SVG_LEGEND_PX));
	/* title 20, column labels 20, grid, legend 56, the scale's note 16 */
	p->height = 40 + p->v.rows * SVG_CELL_H + 56 + (p->scale_note[0] ? 16 : 0);
}

/*
 * One colour scale across the figure for the panes of one meaning
 * (svg_same_meaning), unless t asks for one per pane: the same colour then
 * means the same number in every pane of that meaning. Probabilities keep 0–1.
 */
static void svg_share_scale(const ExportTarget *t, ExPane *p, int n)
{
	int i, j;
	double lo[EX_MAX_PANES], hi[EX_MAX_PANES], bound[EX_MAX_PANES];

	if (t->scale_per_pane)
		return;
	for (i = 0; i < n; i++) {
		lo[i] = p[i].lo;
		hi[i] = p[i].hi;
		bound[i] = p[i].bound;
		for (j = 0; j < n; j++)
			if (!p[i].prob && svg_same_meaning(&p[i], &p[j])) {
				lo[i] = fmin(lo[i], p[j].lo);
				hi[i] = fmax(hi[i], p[j].hi);
				bound[i] = fmax(bound[i], p[j].bound);
			}
	}
	for (i = 0; i < n; i++) {
		p[i].lo = lo[i];
		p[i].hi = hi[i];
		p[i].bound = bound[i];
	}
}

/*
 * The legend's scale in words (issue 26): a probability is on 0–1; in a figure
 * of several panes, which others share its colours, or that it has its own.
 * A lone pane that is no probability needs none: its legend's ends say it.
 */
static void svg_scale_notes(const Attn *a, const ExportTarget *t, ExPane *p, int n, const char *lang)
{
	const int zh = strcmp(lang, "zh") == 0;
	int i, j;

	for (i = 0; i < n; i++) {
		char names[160] = "", name[96];
		int shared = 0;
		p[i].zh = zh;
		if (p[i].prob) {
			snprintf(p[i].scale_note, sizeof p[i].scale_note, "%s",
			         zh ? "\u989c\u8272\uff1a0 \u5230 1\uff08\u6982\u7387\uff09" : "colours: 0 to 1 (a probability)");
			continue;
		}
		if (n == 1)
			continue;
		for (j = 0; j < n; j++) {
			if (j == i || t->scale_per_pane || p[j].prob || !svg_same_meaning(&p[i], &p[j]))
				continue;
			ex_fig_pane_name(name, sizeof name, a, &p[j]);
			if (strlen(names) + strlen(name) + 4 < 64)
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", shared ? (zh ? "\u3001" : ", ") : "",
				         name);
			else if (!strstr(names, "\u2026"))
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s", zh ? "\u7b49" : ", \u2026");
			shared++;
		}
		if (shared == 0)
			snprintf(p[i].scale_note, sizeof p[i].scale_note, "%s",
			         zh ? "\u989c\u8272\uff1a\u6b64\u77e9\u9635\u81ea\u5df1\u7684\u8272\u6807" : "colours: its own scale");
		else if (shared == n - 1)
			snprintf(p[i].scale_note, sizeof p[i].scale_note, "%s",
			         zh ? "\u989c\u8272\uff1a\u5168\u56fe\u540c\u4e00\u8272\u6807" : "colours: one scale for every pane");
		else
			snprintf(p[i].scale_note, sizeof p[i].scale_note, zh ? "\u989c\u8272\uff1a\u4e0e %s \u540c\u4e00\u8272\u6807" : "colours: one scale with %s",
			         names);
	}
}

/* Background colour of value x in pane p. */
static int svg_colour(const ThemeFile *th, const ExPane *p, double x)
{
	if (isnan(x)) /* not reached at the step shown (ex_fig_panes): the page's white */
		return -1;
	if (!isfinite(x))
		return th->masked;
	if (p->diverging)
		return th->div[themefile_ramp_index(p->bound > 0 ? x / p->bound : 0.0, 1, th->ndiv)];
	return th->seq[themefile_ramp_index(p->hi > p->lo ? (x - p->lo) / (p->hi - p->lo) : 0.0, 0, th->nseq)];
}

/* 1 when cell value x of p carries the negative mark: a diverging pane drawn in grey (a mono theme). */
static int svg_neg_mark(const ThemeFile *th, const ExPane *p, double x)
{
	return th->mono && p->diverging && isfinite(x) && x < 0;
}

/*
 * A heatmap's grid: one path per colour (runs of a row's cells of that colour),
 * not an element per cell, so that a 48 × 48 pane stays tens of kilobytes; in
 * grey (mono) a negative cell's corner marked as in the numbered figure.
 */
static void svg_heat_cells(StrBuf *b, const ThemeFile *th, const ExPane *p, int gx, int gy)
{
	unsigned char done[257] = { 0 };
	char fill[8], ink[8];
	const int cw = p->cell_w, ch = p->cell_h;
	int i, j, k, neg;

	for (k = 0; k < p->v.rows * p->v.cols; k++) {
		const int colour = svg_colour(th, p, p->v.a[k]);
		if (done[colour + 1])
			continue;
		done[colour + 1] = 1;
		rgb_hex(fill, colour, 0xffffff);
		strbuf_printf(b, "<path class=\"heat\" fill=\"%s\" shape-rendering=\"crispEdges\" d=\"", fill);
		for (i = 0, neg = 0; i < p->v.rows; i++)
			for (j = 0; j < p->v.cols; j++) {
				int run = 1;
				const double x = MAT_AT(p->v, i, j);
				if (svg_colour(th, p, x) != colour)
					continue;
				neg |= svg_neg_mark(th, p, x);
				while (j + run < p->v.cols && svg_colour(th, p, MAT_AT(p->v, i, j + run)) == colour)
					run++;
				strbuf_printf(b, "M%d %dh%dv%dh%dz", gx + j * cw, gy + i * ch, run * cw, ch, -run * cw);
				j += run - 1;
			}
		strbuf_puts(b, "\"/>\n");
		if (!neg)
			continue;
		rgb_hex(ink, themefile_text_on(colour), 0);
		strbuf_printf(b, "<path class=\"neg\" fill=\"%s\" d=\"", ink);
		for (i = 0; i < p->v.rows; i++)
			for (j = 0; j < p->v.cols; j++)
				if (svg_colour(th, p, MAT_AT(p->v, i, j)) == colour && svg_neg_mark(th, p, MAT_AT(p->v, i, j)))
					strbuf_printf(b, "M%d %dh5l-5 5z", gx + j * cw, gy + i * ch);
		strbuf_puts(b, "\"/>\n");
	}
}

/* A heatmap's labels: every rstep-th row and cstep-th column, small, where they do not overlap. */
static void svg_heat_labels(StrBuf *b, const Attn *a, const ExPane *p, int gx, int gy)
{
	int i;

	for (i = 0; i < p->v.cols; i += p->cstep) {
		char *s = label_cut(ex_fig_label(a, p, 0, i), 10);
		strbuf_printf(b, "<text class=\"col-label\" x=\"%d\" y=\"%d\" font-size=\"%d\" fill=\"#444444\">",
		              gx + i * p->cell_w, gy - 6, SVG_LEGEND_PX);
		xml_puts(b, s ? s : "");
		strbuf_puts(b, "</text>\n");
		free(s);
	}
	for (i = 0; i < p->v.rows; i += p->rstep) {
		char *s = label_cut(ex_fig_label(a, p, 1, i), 10);
		strbuf_printf(b, "<text class=\"row-label\" x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"end\" fill=\"#444444\">",
		              gx - 4, gy + i * p->cell_h + p->cell_h / 2 + 4, SVG_LEGEND_PX);
		xml_puts(b, s ? s : "");
		strbuf_puts(b, "</text>\n");
		free(s);
	}
}

static void svg_pane(StrBuf *b, const Attn *a, const ThemeFile *th, const ExportTarget *t, const ExPane *p)
{
	char name[96], fill[8], ink[8], num[32];
	const int x0 = p->x, y0 = p->y;
	int i, j, gx = x0 + p->label_w, gy = y0 + 40;
	const int n = p->diverging ? th->ndiv : th->nseq;
	/* a handout's open question: the pane it is about keeps its shape and labels, not its numbers */
	const int blank = t->has_hidden && (p->which == t->hidden || t->hides[p->which]);
	int lw, ly;

	ex_fig_pane_name(name, sizeof name, a, p);
	strbuf_printf(b, "<g class=\"pane\" id=\"pane-%s%s", matrix_name(p->which), p->transpose ? "-T" : "");
	if (p->kv_head >= 0)
		strbuf_printf(b, "-kv%d", p->kv_head);
	else if (p->head >= 0)
		strbuf_printf(b, "-head%d", p->head);
	strbuf_puts(b, "\">\n");
	strbuf_printf(b, "<text class=\"pane-title\" x=\"%d\" y=\"%d\" font-weight=\"bold\" font-size=\"%d\">", x0, y0 + 14,
	              SVG_PANE_TITLE_PX);
	xml_puts(b, name);
	strbuf_printf(b, "  %d \u00d7 %d</text>\n", p->rows0, p->cols0);
	if (p->heat) {
		svg_heat_labels(b, a, p, gx, gy);
		if (blank)
			strbuf_printf(b, "<rect class=\"cell hidden\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f2f2f2\" "
			              "stroke=\"#bbbbbb\"/><text class=\"num\" x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
			              "fill=\"#666666\">?</text>\n",
			              gx, gy, p->v.cols * p->cell_w, p->v.rows * p->cell_h, gx + p->v.cols * p->cell_w / 2,
			              gy + p->v.rows * p->cell_h / 2 + 4);
		else
			svg_heat_cells(b, th, p, gx, gy);
	}
	for (j = 0; j < p->v.cols && !p->heat; j++) {
		char *s = label_cut(ex_fig_label(a, p, 0, j), SVG_LABEL_MAX);
		strbuf_printf(b, "<text class=\"col-label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#444444\">",
		           gx + j * p->cell_w + p->cell_w / 2, y0 + 34);
		xml_puts(b, s ? s : "");
		strbuf_puts(b, "</text>\n");
		free(s);
	}
	for (i = 0; i < p->v.rows && !p->heat; i++) {
		char *s = label_cut(ex_fig_label(a, p, 1, i), SVG_LABEL_MAX);
		const int cy = gy + i * SVG_CELL_H;
		strbuf_printf(b, "<text class=\"row-label\" x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#444444\">",
		           gx - 6, cy + SVG_CELL_H / 2 + 4);
		xml_puts(b, s ? s : "");
		strbuf_puts(b, "</text>\n");
		free(s);
		for (j = 0; j < p->v.cols && blank; j++)
			strbuf_printf(b, "<rect class=\"cell hidden\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f2f2f2\" "
			              "stroke=\"#bbbbbb\"/><text class=\"num\" x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
			              "fill=\"#666666\">?</text>\n",
			              gx + j * p->cell_w, cy, p->cell_w, SVG_CELL_H, gx + j * p->cell_w + p->cell_w / 2,
			              cy + SVG_CELL_H / 2 + 4);
		for (j = 0; j < p->v.cols && !blank; j++) {
			const double x = MAT_AT(p->v, i, j);
			const int c = svg_colour(th, p, x);
			rgb_hex(fill, c, 0xffffff);
			rgb_hex(ink, themefile_text_on(c), 0);
			if (isnan(x)) { /* not reached at the step shown: an empty cell, no number */
				strbuf_printf(b, "<rect class=\"cell unseen\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
				                 "fill=\"#ffffff\" stroke=\"#dddddd\"/>\n",
				              gx + j * p->cell_w, cy, p->cell_w, SVG_CELL_H);
				continue;
			}
			ex_fig_number(num, x, t->precision);
			strbuf_printf(b, "<rect class=\"cell\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#ffffff\"/>"
			              "<text class=\"num\" x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"%s\">%s</text>\n",
			           gx + j * p->cell_w, cy, p->cell_w, SVG_CELL_H, fill,
			           gx + j * p->cell_w + p->cell_w / 2, cy + SVG_CELL_H / 2 + 4, ink, num);
			/* In grey (mono), a grey says how large, not which sign: a negative value's corner is marked. */
			if (svg_neg_mark(th, p, x))
				strbuf_printf(b, "<path class=\"neg\" d=\"M%d %dh8l-8 8z\" fill=\"%s\"/>\n", gx + j * p->cell_w + 1, cy + 1, ink);
		}
	}
	if (blank) {
		strbuf_puts(b, "</g>\n");
		return;
	}
	/* the legend: the ramp as swatches, the range under its ends, a masked swatch when needed */
	ly = gy + p->v.rows * p->cell_h + 14;
	lw = svg_ramp_step(th, p);
	strbuf_printf(b, "<g class=\"legend\">\n");
	for (i = 0; i < n; i++) {
		rgb_hex(fill, p->diverging ? th->div[i] : th->seq[i], 0xffffff);
		strbuf_printf(b, "<rect class=\"swatch\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"12\" fill=\"%s\" stroke=\"#999999\" stroke-width=\"0.5\"/>\n",
		           gx + i * lw, ly, lw, fill);
	}
	{
		char lo[32], hi[32];
		ex_fig_number(lo, p->diverging ? -p->bound : p->lo, t->precision);
		ex_fig_number(hi, p->diverging ? p->bound : p->hi, t->precision);
		strbuf_printf(b, "<text class=\"legend-lo\" x=\"%d\" y=\"%d\" font-size=\"%d\">%s</text>\n", gx, ly + 24,
		              SVG_LEGEND_PX, lo);
		if (p->diverging)
			strbuf_printf(b, "<text class=\"legend-mid\" x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"middle\">0</text>\n",
			           gx + n * lw / 2, ly + 24, SVG_LEGEND_PX);
		strbuf_printf(b, "<text class=\"legend-hi\" x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"end\">%s</text>\n",
		           gx + n * lw, ly + 24, SVG_LEGEND_PX, hi);
	}
	if (th->mono && p->diverging && p->any_neg) {
		rgb_hex(fill, th->div[0], 0x808080);
		rgb_hex(ink, themefile_text_on(th->div[0]), 0);
		strbuf_printf(b, "<rect class=\"swatch\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#999999\" stroke-width=\"0.5\"/>"
		              "<path d=\"M%d %dh8l-8 8z\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" font-size=\"%d\">%s</text>\n",
		           gx + n * lw + 12, ly + 16, fill, gx + n * lw + 12, ly + 16, ink, gx + n * lw + 28, ly + 26, SVG_LEGEND_PX,
		           p->zh ? "\u8d1f\u6570" : "negative");
	}
	if (p->any_inf) {
		rgb_hex(fill, th->masked, 0x808080);
		strbuf_printf(b, "<rect class=\"swatch\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#999999\" stroke-width=\"0.5\"/>"
		              "<text x=\"%d\" y=\"%d\" font-size=\"%d\">%s</text>\n",
		           gx + n * lw + 12, ly, fill, gx + n * lw + 28, ly + 10, SVG_LEGEND_PX,
		           p->zh ? "\u2212\u221e \u88ab\u906e\u4f4f" : "\u2212\u221e masked");
	}
	if (p->scale_note[0]) {
		strbuf_printf(b, "<text class=\"scale-note\" x=\"%d\" y=\"%d\" font-size=\"%d\" fill=\"#333333\">", x0,
		              ly + 42, SVG_LEGEND_PX);
		xml_puts(b, p->scale_note);
		strbuf_puts(b, "</text>\n");
	}
	if (p->heat) {
		strbuf_printf(b, "<text class=\"caption\" x=\"%d\" y=\"%d\" font-size=\"%d\" fill=\"#333333\">", x0,
		              ly + 42 + (p->scale_note[0] ? 16 : 0), SVG_LEGEND_PX);
		xml_puts(b, p->caption);
		strbuf_puts(b, "</text>\n");
	}
	strbuf_puts(b, "</g>\n</g>\n");
}


/*
 * Break text into lines of at most max cells: after a space where there is
 * one, else between characters (Chinese has no spaces). start/len of each
 * line into at[2*i], at[2*i+1]; returns the count (at most SVG_MAX_LINES, the
 * last line taking the rest).
 */
static int wrap_lines(const char *text, int max, size_t at[2 * SVG_MAX_LINES])
{
	size_t pos = 0, total = strlen(text);
	int n = 0;

	while (pos < total && n < SVG_MAX_LINES) {
		size_t p = pos, brk = 0;
		int w = 0;
		while (text[pos] == ' ')
			pos++, p++;
		if (pos >= total)
			break;
		while (p < total) {
			const size_t k = ex_char_len(text + p, total - p);
			const int cw = text_cells(text + p, (int)k);
			if (w + cw > max && p > pos)
				break;
			w += cw;
			p += k;
			if (text[p - 1] == ' ' || text[p] == ' ')
				brk = p;
		}
		if (p < total && brk > pos && n + 1 < SVG_MAX_LINES)
			p = brk;
		if (n + 1 == SVG_MAX_LINES)
			p = total;
		at[2 * n] = pos;
		at[2 * n + 1] = p - pos;
		n++;
		pos = p;
	}
	return n;
}

/*
 * A formula's lines: its parts (separated by two spaces or more) packed into
 * lines of at most max cells, each part whole, the spacing between parts kept.
 */
static int formula_lines(const char *f, int max, size_t at[2 * SVG_MAX_LINES])
{
	size_t pos = 0, total = strlen(f);
	int n = 0;

	while (pos < total && n < SVG_MAX_LINES) {
		size_t end = pos; /* the line so far: [pos, end) */
		while (end < total) {
			size_t q = end, part_end;
			const char *sep;
			while (end > pos && q < total && f[q] == ' ')
				q++;
			sep = strstr(f + q + (q < total ? 1 : 0), "  ");
			part_end = sep ? (size_t)(sep - f) : total;
			if (end > pos && text_cells(f + pos, (int)(part_end - pos)) > max && n + 1 < SVG_MAX_LINES)
				break;
			end = part_end;
		}
		at[2 * n] = pos;
		at[2 * n + 1] = end - pos;
		n++;
		pos = end;
		while (pos < total && f[pos] == ' ')
			pos++;
	}
	return n;
}

/* The widest part of a formula, in cells: a figure is at least that wide. */
static int formula_widest(const char *f)
{
	int best = 0;
	const char *p = f;

	while (*p) {
		const char *sep = strstr(p, "  ");
		size_t len = sep ? (size_t)(sep - p) : strlen(p);
		best = (int)fmax(best, text_cells(p, (int)len));
		p += len;
		while (*p == ' ')
			p++;
	}
	return best;
}

/* Height of the title and formula above the panes, for a canvas of width w. */
static int svg_header(const char *title, const char *formula, int w, int *tlines, int *flines,
                      size_t tat[2 * SVG_MAX_LINES], size_t fat[2 * SVG_MAX_LINES])
{
	const int inner = w - 2 * SVG_MARGIN;

	*tlines = wrap_lines(title, (int)(inner / (SVG_TITLE_PX * SVG_EM)), tat);
	*flines = formula[0] ? formula_lines(formula, (int)(inner / (SVG_FORMULA_PX * SVG_EM)), fat) : 0;
	/* first title baseline 32, then 24 a line; formula lines 20 apart; the panes 26 under the last */
	return 32 + 24 * (*tlines - 1) + (*flines > 0 ? 26 + 20 * (*flines - 1) : 0) + 26;
}

/* Place the panes k to a row; the canvas's size. */
static void svg_place(ExPane *p, int n, int k, int top, int *w, int *h)
{
	int i, x = SVG_MARGIN, y = top, rowh = 0, maxw = 0;

	for (i = 0; i < n; i++) {
		if (i > 0 && i % k == 0) {
			y += rowh + SVG_ROW_GAP;
			x = SVG_MARGIN;
			rowh = 0;
		}
		p[i].x = x;
		p[i].y = y;
		x += p[i].width + SVG_GAP;
		rowh = (int)fmax(rowh, p[i].height);
		maxw = (int)fmax(maxw, x - SVG_GAP + SVG_MARGIN);
	}
	*w = maxw;
	*h = y + rowh + SVG_MARGIN;
}

/* The start of a figure: the XML declaration, <svg> of width × height, its <title>, <desc> and white background. */
static void svg_open(StrBuf *b, int width, int height, const char *title, const ThemeFile *th)
{
	strbuf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	strbuf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
	              "viewBox=\"0 0 %d %d\" font-family=\"" SVG_FONT "\" font-size=\"%d\">\n",
	              width, height, width, height, SVG_NUM_PX);
	strbuf_puts(b, "<title>");
	xml_puts(b, title);
	strbuf_puts(b, "</title>\n<desc>attnviz export, theme ");
	xml_puts(b, th->name);
	strbuf_puts(b, "</desc>\n");
	strbuf_printf(b, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
	              width, height);
}

static const double aspect_ratio[] = { [EXPORT_ASPECT_16_9] = 16.0 / 9.0, [EXPORT_ASPECT_4_3] = 4.0 / 3.0,
	                               [EXPORT_ASPECT_WIDE] = 0 };

char *ex_render_svg(const Attn *a, const Session *s, const ExportTarget *t, const ThemeFile *th, char **err)
{
	ExPane *pane = calloc(EX_MAX_PANES, sizeof *pane);
	StrBuf b = { NULL, 0, 0, 0 };
	char what[96], place[160], *head = NULL;
	const char *title = ex_lesson_title(a, s);
	const char *formula = ex_target_formula(a, t, 1);
	char *map = ex_block_map(a, s, t, 1);
	size_t tat[2 * SVG_MAX_LINES], fat[2 * SVG_MAX_LINES], mat[2 * SVG_MAX_LINES];
	int n, i, k, best_k = 1, width = 0, height = 0, top = 0, tl = 0, fl = 0, ml = 0, map_y = 0, minw;
	double best = INFINITY;

	n = pane ? ex_fig_panes(a, s, t, pane) : 0;
	if (n == 0) {
		free(map);
		free(pane);
		*err = strdup("out of memory writing the export");
		return NULL;
	}
	for (i = 0; i < n; i++)
		svg_range(&pane[i]);
	svg_share_scale(t, pane, n);
	svg_scale_notes(a, t, pane, n, ex_lang_of(s));
	for (i = 0; i < n; i++) {
		if (pane[i].heat && heat_reduce(&pane[i], ex_lang_of(s)) != 0) {
			free(map);
			ex_fig_panes_free(pane, n);
			free(pane);
			*err = strdup("out of memory writing the export");
			return NULL;
		}
		svg_measure(a, th, t, &pane[i]);
	}
	/* "stage concat" (every head), "stage scores, head 1" (one head's panes) */
	snprintf(what, sizeof what, "%s%s", t->whole_stage ? _("stage ") : "",
	         t->whole_stage ? stage_name(t->stage) : matrix_name(t->matrix));
	for (i = 0, k = -1; i < n; i++)
		if (pane[i].head >= 0)
			k = k == -1 || k == pane[i].head ? pane[i].head : -2;
	if (k >= 0 && a->heads > 1)
		snprintf(what + strlen(what), sizeof what - strlen(what), _(", head %d"), k);
	ex_place_prefix(place, sizeof place, s);
	head = str_printf("%s \u2014 %s%s", title, place, what);
	/* a formula's widest part fits whole; the title wraps to any width */
	minw = (int)fmax(SVG_MIN_WIDTH, svg_text_w(formula_widest(formula), SVG_FORMULA_PX) + 2 * SVG_MARGIN);
	/* rows of k panes: the k whose canvas is nearest the slide's shape (wide: one row) */
	for (k = 1; k <= n; k++) {
		int w, h, hh;
		double d;
		if (aspect_ratio[t->aspect] == 0 && k < n)
			continue;
		svg_place(pane, n, k, 0, &w, &h);
		w = (int)fmax(w, minw);
		hh = svg_header(head ? head : title, formula, w, &tl, &fl, tat, fat);
		d = aspect_ratio[t->aspect] == 0 ? 0 : fabs(log((double)w / (h + hh)) - log(aspect_ratio[t->aspect]));
		if (d < best - 1e-9) {
			best = d;
			best_k = k;
		}
	}
	svg_place(pane, n, best_k, 0, &width, &height);
	width = (int)fmax(width, minw);
	top = svg_header(head ? head : title, formula, width, &tl, &fl, tat, fat);
	svg_place(pane, n, best_k, top, &width, &height);
	width = (int)fmax(width, minw);
	/* the block map under the panes, wrapped to the canvas (issue 26 §4: the figure keeps its context) */
	if (map != NULL) {
		ml = wrap_lines(map, (int)((width - 2 * SVG_MARGIN) / (SVG_FORMULA_PX * SVG_EM)), mat);
		map_y = height - SVG_MARGIN + 18;
		height += SVG_MAP_LINE * ml;
	}
	svg_open(&b, width, height, head ? head : title, th);
	for (i = 0; i < tl; i++) {
		char *line = strndup((head ? head : title) + tat[2 * i], tat[2 * i + 1]);
		strbuf_printf(&b, "<text class=\"title\" x=\"%d\" y=\"%d\" font-size=\"%d\" font-weight=\"bold\" fill=\"#111111\">",
		              SVG_MARGIN, 32 + 24 * i, SVG_TITLE_PX);
		xml_puts(&b, line ? line : "");
		strbuf_puts(&b, "</text>\n");
		free(line);
	}
	for (i = 0; i < fl; i++) {
		char *line = strndup(formula + fat[2 * i], fat[2 * i + 1]);
		strbuf_printf(&b, "<text class=\"formula\" x=\"%d\" y=\"%d\" font-size=\"%d\" fill=\"#333333\" xml:space=\"preserve\">",
		              SVG_MARGIN, 32 + 24 * (tl - 1) + 26 + 20 * i, SVG_FORMULA_PX);
		xml_puts(&b, line ? line : "");
		strbuf_puts(&b, "</text>\n");
		free(line);
	}
	for (i = 0; i < n; i++)
		svg_pane(&b, a, th, t, &pane[i]);
	for (i = 0; i < ml; i++) {
		char *line = strndup(map + mat[2 * i], mat[2 * i + 1]);
		strbuf_printf(&b, "<text class=\"block-map\" x=\"%d\" y=\"%d\" font-size=\"%d\" fill=\"#333333\">",
		              SVG_MARGIN, map_y + SVG_MAP_LINE * i, SVG_FORMULA_PX);
		xml_puts(&b, line ? line : "");
		strbuf_puts(&b, "</text>\n");
		free(line);
	}
	strbuf_puts(&b, "</svg>\n");
	ex_fig_panes_free(pane, n);
	free(pane);
	free(head);
	free(map);
	return ex_buf_finish(&b, err);
}

/* ------------------------------------------------------------ the model view (--view model) */

#define GRID_THUMB 96   /* a thumbnail's side in pixels */
#define GRID_TILE_W 150 /* a tile: its label, thumbnail and two score lines */
#define GRID_TILE_H (GRID_THUMB + 58)

/* One head's thumbnail at (x, y): g × g cells (fewer when the matrix is smaller), each a block's mean weight. */
static void grid_thumb(StrBuf *b, const ThemeFile *th, const Attn *a, int head, int x, int y)
{
	const Mat *m = attn_matrix(a, AM_WEIGHTS, head);
	char hex[8];

	if (m == NULL || m->rows == 0 || m->cols == 0)
		return;
	const int gr = m->rows < EXPORT_GRID_SIDE ? m->rows : EXPORT_GRID_SIDE;
	const int gc = m->cols < EXPORT_GRID_SIDE ? m->cols : EXPORT_GRID_SIDE;
	const double cw = (double)GRID_THUMB / gc, ch = (double)GRID_THUMB / gr;
	for (int bi = 0; bi < gr; bi++) {
		const int r0 = (int)((long)bi * m->rows / gr), r1 = (int)((long)(bi + 1) * m->rows / gr);
		for (int bj = 0; bj < gc; bj++) {
			const int c0 = (int)((long)bj * m->cols / gc), c1 = (int)((long)(bj + 1) * m->cols / gc);
			int seen;
			const double sum = headscore_block_sum(a, m, r0, r1, c0, c1, &seen);
			/* probabilities: the scale is 0–1 */
			rgb_hex(hex, seen ? th->seq[themefile_ramp_index(sum / (r1 - r0), 0, th->nseq)] : th->masked,
			        seen ? 0xffffffUL : 0xddddddUL);
			strbuf_printf(b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n",
			              x + bj * cw, y + bi * ch, cw, ch, hex);
		}
	}
}

char *export_model_grid(const Session *s, const ThemeFile *theme, char **err)
{
	ThemeFile builtin;
	StrBuf b = { NULL, 0, 0, 0 };
	int n = 0, heads = 1, i;
	HeadRow *rows = textfmt_head_rows(s, -1, &n);
	const char *title;
	char *head;

	if (rows == NULL || n == 0) {
		free(rows);
		*err = strdup("out of memory writing the export");
		return NULL;
	}
	if (theme == NULL) {
		themefile_default(&builtin);
		theme = &builtin;
	}
	for (i = 0; i < n; i++)
		if (rows[i].head + 1 > heads)
			heads = rows[i].head + 1;
	const int layers = session_layers(s);
	title = ex_lesson_title(s->attn, s);
	/* "model view: 2 layers × 4 heads" (one string a number of each, for the translation) */
	head = str_printf(layers == 1 && heads == 1 ? _("%s \u2014 model view: %d layer \u00d7 %d head")
	                  : layers == 1              ? _("%s \u2014 model view: %d layer \u00d7 %d heads")
	                  : heads == 1               ? _("%s \u2014 model view: %d layers \u00d7 %d head")
	                                             : _("%s \u2014 model view: %d layers \u00d7 %d heads"),
	                  title, layers, heads);
	const int top = 70;
	/* as wide as the tiles, and as the title (text stays inside the canvas) */
	const int width = (int)fmax(fmax(SVG_MIN_WIDTH, 2 * SVG_MARGIN + heads * GRID_TILE_W),
	                            svg_text_w(text_width(head ? head : title, -1), SVG_TITLE_PX) + 2 * SVG_MARGIN);
	const int height = top + layers * GRID_TILE_H + SVG_MARGIN;
	svg_open(&b, width, height, head ? head : title, theme);
	strbuf_printf(&b, "<text class=\"title\" x=\"%d\" y=\"32\" font-size=\"%d\" font-weight=\"bold\" fill=\"#111111\">",
	              SVG_MARGIN, SVG_TITLE_PX);
	xml_puts(&b, head ? head : title);
	strbuf_puts(&b, "</text>\n");
	/* the colour scale: attention weights are probabilities, 0 to 1 */
	strbuf_printf(&b, "<g class=\"legend\"><text x=\"%d\" y=\"54\" fill=\"#333333\">", SVG_MARGIN);
	xml_puts(&b, _("weights 0"));
	strbuf_puts(&b, "</text>\n");
	for (i = 0; i < theme->nseq; i++) {
		char hex[8];
		rgb_hex(hex, theme->seq[i], 0xffffffUL);
		strbuf_printf(&b, "<rect x=\"%d\" y=\"44\" width=\"10\" height=\"12\" fill=\"%s\"/>\n",
		              SVG_MARGIN + 80 + 10 * i, hex);
	}
	strbuf_printf(&b, "<text x=\"%d\" y=\"54\" fill=\"#333333\">1</text></g>\n", SVG_MARGIN + 84 + 10 * theme->nseq);
	for (i = 0; i < n; i++) {
		const Attn *a = session_walk_link(s, rows[i].layer);
		char word[16], v[HS_COUNT][16];
		const int x = SVG_MARGIN + rows[i].head * GRID_TILE_W, y = top + rows[i].layer * GRID_TILE_H;
		if (session_layer_word(s, rows[i].layer, word, sizeof word) != 0)
			snprintf(word, sizeof word, "%d", rows[i].layer);
		for (int k = 0; k < HS_COUNT; k++)
			textfmt_score(v[k], &rows[i].sc.s[k], 2, 1);
		strbuf_printf(&b, "<g class=\"thumb\" data-layer=\"%d\" data-head=\"%d\">\n", rows[i].layer, rows[i].head);
		strbuf_printf(&b, "<text class=\"label\" x=\"%d\" y=\"%d\" font-weight=\"bold\" fill=\"#111111\">L",
		              x, y + 12);
		xml_puts(&b, word);
		strbuf_printf(&b, " H%d</text>\n", rows[i].head);
		if (a != NULL)
			grid_thumb(&b, theme, a, rows[i].head, x, y + 18);
		strbuf_printf(&b, "<text class=\"scores\" x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#333333\" "
		              "xml:space=\"preserve\">prev %s  first %s</text>\n", x, y + GRID_THUMB + 32, v[HS_PREV],
		              v[HS_FIRST]);
		strbuf_printf(&b, "<text class=\"scores\" x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#333333\" "
		              "xml:space=\"preserve\">diag %s  ind %s</text>\n</g>\n", x, y + GRID_THUMB + 46, v[HS_DIAG],
		              v[HS_INDUCTION]);
	}
	strbuf_puts(&b, "</svg>\n");
	free(rows);
	free(head);
	return ex_buf_finish(&b, err);
}
