/* export.c: figures and tables of a stage for slides and handouts (SVG, CSV, Markdown,
 * TeX, JSON), and the lesson itself as JSON (lesson/lesson_write.c writes it). Pure:
 * no files, no terminal; the callers write the result with fileio_write_atomic(). */
#include "out/export.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "inspect/explain.h"
#include "inspect/labels.h"
#include "lesson/lesson_write.h"
#include "base/strbuf.h"
#include "base/jsonwrite.h"

/* ------------------------------------------------------------ a growing string */

static char *buf_finish(StrBuf *b, char **err)
{
	if (b->oom || b->s == NULL) {
		free(b->s);
		b->s = NULL;
		*err = strdup("out of memory writing the export");
		return NULL;
	}
	return b->s;
}

/* ------------------------------------------------------------ names */

static const char *const format_names[EXPORT_FORMAT_COUNT] = { "svg", "csv", "md", "tex", "json" };

const char *export_format_name(ExportFormat f)
{
	return (unsigned)f < EXPORT_FORMAT_COUNT ? format_names[f] : NULL;
}

int export_format_find(const char *name)
{
	int i;

	for (i = 0; i < EXPORT_FORMAT_COUNT; i++)
		if (strcasecmp(name, format_names[i]) == 0)
			return i;
	if (strcasecmp(name, "markdown") == 0)
		return EXPORT_MD;
	if (strcasecmp(name, "latex") == 0)
		return EXPORT_TEX;
	return -1;
}

/* The index of name among n names (case-insensitive); -1 when it is none of them. */
static int name_index(const char *const *names, int n, const char *name)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcasecmp(name, names[i]) == 0)
			return i;
	return -1;
}

int export_aspect_find(const char *name)
{
	static const char *const names[EXPORT_ASPECT_COUNT] = { "16:9", "4:3", "wide" };
	return name_index(names, EXPORT_ASPECT_COUNT, name);
}

int export_numbers_find(const char *name)
{
	static const char *const names[EXPORT_NUMBERS_COUNT] = { "auto", "on", "off" };
	return name_index(names, EXPORT_NUMBERS_COUNT, name);
}

static char *error_string(const char *a, const char *b, const char *c)
{
	char *safe = text_escape(b, "");
	char *s = malloc(strlen(a) + strlen(safe ? safe : "") + strlen(c) + 1);
	if (s != NULL)
		sprintf(s, "%s%s%s", a, safe ? safe : "", c);
	free(safe);
	return s;
}

int export_target_parse(const Attn *a, const char *word, Stage dflt_stage, int head, ExportTarget *t, char **err)
{
	int st, w, i;

	*err = NULL;
	memset(t, 0, sizeof *t);
	t->head = head;
	t->precision = -1;
	if (head < 0 || head >= a->heads) {
		char msg[96];
		snprintf(msg, sizeof msg, "head %d: this lesson has %d head%s (0 to %d)", head, a->heads,
		         a->heads == 1 ? "" : "s", a->heads - 1);
		*err = strdup(msg);
		return -1;
	}
	if (word == NULL) {
		t->whole_stage = 1;
		t->stage = dflt_stage;
		return 0;
	}
	st = stage_lookup(&a->shape, word);
	if (st >= 0 && stage_present(&a->shape, (Stage)st)) {
		t->whole_stage = 1;
		t->stage = (Stage)st;
		return 0;
	}
	w = matrix_find(word);
	if (w >= 0 && attn_has(a, (AttnMatrix)w, head)) {
		t->whole_stage = 0;
		t->matrix = (AttnMatrix)w;
		return 0;
	}
	if (st >= 0 || w >= 0) {
		*err = error_string("", word, " is not part of this lesson");
	} else {
		char *stages = stage_list(&a->shape);
		StrBuf tail = { 0 };
		strbuf_printf(&tail, " (stages: %s; matrices:", stages ? stages : "?");
		for (i = 0; i < AM_COUNT; i++)
			if (attn_has(a, (AttnMatrix)i, 0))
				strbuf_printf(&tail, " %s", matrix_name((AttnMatrix)i));
		strbuf_printf(&tail, ")");
		if (!tail.oom)
			*err = error_string("unknown stage or matrix: ", word, tail.s);
		free(tail.s);
		free(stages);
	}
	if (*err == NULL)
		*err = strdup("out of memory");
	return -1;
}

/* ------------------------------------------------------------ what a target shows */

/* The matrices of t that exist in a, in order; returns the count (0: nothing to show). */
static int target_panes(const Attn *a, const ExportTarget *t, AttnMatrix out[STAGE_MAX_PANES])
{
	AttnMatrix all[STAGE_MAX_PANES];
	int n, k, i;

	if (!t->whole_stage) {
		if (!attn_has(a, t->matrix, t->head))
			return 0;
		out[0] = t->matrix;
		return 1;
	}
	if (!stage_present(&a->shape, t->stage))
		return 0;
	n = attn_stage_matrices(a, t->stage, all);
	for (i = k = 0; i < n; i++)
		if (attn_has(a, all[i], t->head))
			out[k++] = all[i];
	return k;
}

/* The formula of the target: its stage's, or the stage that computes the matrix; "" for given ones. */
static const char *target_formula(const Attn *a, const ExportTarget *t, int utf8)
{
	int st = t->whole_stage ? (int)t->stage : matrix_stage(&a->shape, t->matrix);
	return st >= 0 ? stage_formula(&a->shape, (Stage)st, utf8) : "";
}

static const char *lang_of(const Session *s)
{
	return s != NULL && s->lang[0] ? s->lang : "en";
}

/* "softmax, head 1" / "weights, head 1" / "W_q": what the export shows, for titles. */
static void target_title(char *buf, size_t size, const Attn *a, const ExportTarget *t)
{
	int per_head = 0, i, n;
	AttnMatrix panes[STAGE_MAX_PANES];

	n = target_panes(a, t, panes);
	for (i = 0; i < n; i++)
		per_head |= matrix_per_head(panes[i]);
	snprintf(buf, size, "%s%s", t->whole_stage ? "stage " : "",
	         t->whole_stage ? stage_name(t->stage) : matrix_name(t->matrix));
	if (per_head && a->heads > 1)
		snprintf(buf, size, "%s%s, head %d", t->whole_stage ? "stage " : "",
		         t->whole_stage ? stage_name(t->stage) : matrix_name(t->matrix), t->head);
	else
		snprintf(buf, size, "%s%s", t->whole_stage ? "stage " : "",
		         t->whole_stage ? stage_name(t->stage) : matrix_name(t->matrix));
}

/* ------------------------------------------------------------ SVG */

/*
 * Lesson text as every export shows it: control characters, DEL, C1
 * controls (U+0085, U+009B) and bidi overrides written as \x85, \u202e, as
 * the TUI shows them (text_escape), keeping newline and tab for the format to
 * lay out. NULL when out of memory (the caller then writes nothing).
 */
static char *shown(const char *s)
{
	return text_escape(s, "\n\t");
}

/* Append s as XML character data: & < > " ' escaped, characters XML 1.0 forbids dropped. */
#define xml_puts export_xml_puts
void export_xml_puts(StrBuf *b, const char *text)
{
	char *s = shown(text);
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
#define SVG_MAX_PANES (STAGE_MAX_PANES + LESSON_MAX_HEADS)
#define SVG_MAX_LINES 64

static void rgb_hex(char out[8], int colour, unsigned long dflt)
{
	snprintf(out, 8, "#%06lx", themefile_rgb(colour, dflt) & 0xffffffUL);
}

/* Pixels of text of cells character cells at size px (rounded up). */
static int svg_text_w(int cells, int px)
{
	return (int)ceil(cells * px * SVG_EM);
}

/* A number as figures show it: prec decimals, or (prec < 0) as the screen does; −∞ with a real minus. */
static char *fig_number(char buf[32], double x, int prec)
{
	if (x == -INFINITY)
		snprintf(buf, 32, "\u2212\u221e");
	else if (prec < 0 || !isfinite(x))
		labels_number(buf, x, 1);
	else if (x == 0.0)
		snprintf(buf, 32, "0");
	else if (fabs(x) >= 1e6)
		snprintf(buf, 32, "%.*e", prec, x);
	else
		snprintf(buf, 32, "%.*f", prec, x);
	return buf;
}

/*
 * One pane of a figure: a matrix of the lesson cut as the stage table says
 * (one head's columns, transposed), with its own copy of the cells shown.
 */
typedef struct Pane {
	AttnMatrix which;
	int head;              /* the head it shows (its matrix or its columns); -1: the whole matrix */
	int kv_head;           /* the key/value head whose columns it shows (K, V with PANE_EACH_KV_HEAD); -1: none */
	int col0, transpose;   /* first column of the matrix shown; drawn transposed */
	int lshift;            /* added to its column labels (PaneCut.label0: a head's output labelled where it lands) */
	Mat v;                 /* the cells as drawn */
	int diverging;
	int prob;              /* a probability (rows are distributions: weights): coloured on 0–1 always */
	double lo, hi, bound;  /* the colour scale: finite range; bound = max |x| */
	int any_inf, any_neg;
	int heat;              /* drawn as a heatmap: no numbers (svg), no table (md, tex) */
	int f;                 /* heatmap: each drawn cell the strongest of f × f cells (1: every cell drawn) */
	int rows0, cols0;      /* its size before that */
	char caption[160];     /* heatmap: what it leaves out, under the legend */
	int rstep, cstep;      /* heatmap: a label every rstep rows, every cstep columns */
	int label_w, cell_w, cell_h; /* pixels */
	int width, height;
	int x, y;              /* where it goes */
} Pane;

/* "Kᵀ (head 1)", "weights (head 0)", "K (kv head 0)", "X". */
static void fig_pane_name(char *buf, size_t size, const Attn *a, const Pane *p)
{
	if (p->kv_head >= 0)
		snprintf(buf, size, "%s%s (kv head %d)", matrix_name(p->which), p->transpose ? "\u1d40" : "", p->kv_head);
	else if (p->head >= 0 && a->heads > 1)
		snprintf(buf, size, "%s%s (head %d)", matrix_name(p->which), p->transpose ? "\u1d40" : "", p->head);
	else
		snprintf(buf, size, "%s%s", matrix_name(p->which), p->transpose ? "\u1d40" : "");
}

/* The label of row (along_rows) or column i of the pane, as the matrix's own labels: heap string. */
static char *fig_label(const Attn *a, const Pane *p, int along_rows, int i)
{
	i *= p->f > 1 ? p->f : 1; /* a down-sampled heatmap: its block's first row or column */
	if (along_rows != p->transpose)
		return labels_row(a, p->which, i);
	return labels_col(a, p->which, p->col0 + i + p->lshift);
}

static void fig_panes_free(Pane *p, int n)
{
	int i;

	for (i = 0; i < n; i++)
		mat_free(&p[i].v);
}

/*
 * The panes of target t: a matrix alone (--matrix), or the stage's from the
 * stage table, operands then result, cut by stage_cut_panes as the views cut
 * them for head t->head (one head's columns, Kᵀ transposed, one pane per head
 * and per key/value head; each head's output beside concat, labelled with the
 * columns it fills). Returns the count (0 when out of memory or nothing is
 * shown).
 */
static int fig_panes(const Attn *a, const ExportTarget *t, Pane out[SVG_MAX_PANES])
{
	StagePane sp[STAGE_MAX_PANES];
	PaneCut cuts[SVG_MAX_PANES];
	int k, nc, n = 0, i, h, r, c;

	if (!t->whole_stage) {
		cuts[0] = (PaneCut){ t->matrix, t->head, 0, -1, 0, 0 };
		nc = 1;
		k = 0;
	} else {
		k = attn_stage_panes(a, t->stage, sp);
		nc = stage_cut_panes(&a->shape, sp, k, t->head, cuts, SVG_MAX_PANES);
	}
	for (i = 0; i < nc; i++) {
		const PaneCut *pc = &cuts[i];
		const int per_head = matrix_per_head(pc->matrix);
		const int kv = (pc->flags & PANE_EACH_KV_HEAD) != 0;
		for (h = pc->head; h < pc->head + 1 && n < SVG_MAX_PANES; h++) {
			const Mat *m = attn_matrix(a, pc->matrix, kv ? t->head : h);
			Pane *p = &out[n];
			int ncols = pc->ncols;
			if (m == NULL)
				break;
			memset(p, 0, sizeof *p);
			p->which = pc->matrix;
			p->kv_head = kv ? pc->head : -1;
			p->head = !kv && (per_head || ncols >= 0) ? h : -1;
			p->col0 = ncols >= 0 ? pc->col0 : 0;
			p->lshift = pc->label0 - pc->col0;
			if (p->col0 < 0 || ncols < 1 || p->col0 + ncols > m->cols) {
				p->col0 = 0; /* not cut: the whole matrix, as it is */
				ncols = m->cols;
			}
			p->transpose = (pc->flags & PANE_TRANSPOSE) != 0;
			p->f = 1;
			if (mat_alloc(&p->v, p->transpose ? ncols : m->rows, p->transpose ? m->rows : ncols) != 0) {
				fig_panes_free(out, n);
				return 0;
			}
			p->rows0 = p->v.rows;
			p->cols0 = p->v.cols;
			p->heat = t->numbers == EXPORT_NUMBERS_OFF ||
			          (t->numbers == EXPORT_NUMBERS_AUTO &&
			           (p->rows0 > EXPORT_NUMBERS_SIDE || p->cols0 > EXPORT_NUMBERS_SIDE));
			for (r = 0; r < m->rows; r++)
				for (c = 0; c < ncols; c++) {
					const double x = MAT_AT(*m, r, p->col0 + c);
					if (p->transpose)
						MAT_AT(p->v, c, r) = x;
					else
						MAT_AT(p->v, r, c) = x;
				}
			n++;
		}
	}
	return n;
}

/* Its legend's width right of the ramp: the masked swatch, the negative mark. */
static int svg_legend_extra(const ThemeFile *th, const Pane *p)
{
	int w = 0;

	if (p->any_inf)
		w = 28 + svg_text_w(9, SVG_LEGEND_PX); /* "−∞ masked" */
	if (th->mono && p->diverging && p->any_neg)
		w = (int)fmax(w, 28 + svg_text_w(8, SVG_LEGEND_PX)); /* "negative" */
	return w;
}

static int svg_ramp_step(const ThemeFile *th, const Pane *p)
{
	const int n = p->diverging ? th->ndiv : th->nseq;
	return (int)fmin(16, fmax(8, 176 / (n > 0 ? n : 1)));
}

/* The cells' range (the colour scale before any sharing). */
static void svg_range(Pane *p)
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
		} else
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
static int svg_same_meaning(const Pane *a, const Pane *b)
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

/*
 * A heatmap pane (p->heat): past EXPORT_HEAT_SIDE cells a side, down-sampled
 * by f in both directions, each drawn cell its block's strongest finite cell
 * (largest |x|: the terminal's zoom rule; a mean of random signs would be ~0,
 * a mean of one-hot weights pale), −∞ when the block has none; the caption
 * says so. -1: out of memory.
 */
static int heat_reduce(Pane *p, const char *lang)
{
	const int zh = strcmp(lang, "zh") == 0, side = (int)fmax(p->v.rows, p->v.cols);
	int f = (side + EXPORT_HEAT_SIDE - 1) / EXPORT_HEAT_SIDE, i, j, r, c;
	Mat small;

	if (f <= 1) {
		snprintf(p->caption, sizeof p->caption, zh ? "\u70ed\u56fe\uff1a\u4e0d\u5199\u6570\u5b57\uff08--numbers on \u5199\u51fa\uff09"
		                                         : "heatmap: no numbers (--numbers on writes them)");
		return 0;
	}
	if (mat_alloc(&small, (p->v.rows + f - 1) / f, (p->v.cols + f - 1) / f) != 0)
		return -1;
	for (i = 0; i < small.rows; i++)
		for (j = 0; j < small.cols; j++) {
			double peak = -INFINITY;
			for (r = i * f; r < (i + 1) * f && r < p->v.rows; r++)
				for (c = j * f; c < (j + 1) * f && c < p->v.cols; c++) {
					const double x = MAT_AT(p->v, r, c);
					if (isfinite(x) && (!isfinite(peak) || fabs(x) > fabs(peak)))
						peak = x;
				}
			MAT_AT(small, i, j) = peak;
		}
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
static void svg_measure_heat(const Attn *a, const ThemeFile *th, Pane *p)
{
	char name[96];
	int i, maxcol = 1, maxrow = 1, legend;

	for (i = 0; i < p->v.rows; i++) {
		char *s = label_cut(fig_label(a, p, 1, i), 10);
		maxrow = (int)fmax(maxrow, text_cells(s ? s : "", -1));
		free(s);
	}
	for (i = 0; i < p->v.cols; i++) {
		char *s = label_cut(fig_label(a, p, 0, i), 10);
		maxcol = (int)fmax(maxcol, text_cells(s ? s : "", -1));
		free(s);
	}
	p->cell_w = p->cell_h = EXPORT_HEAT_CELL;
	p->rstep = (SVG_LEGEND_PX + 3 + p->cell_h - 1) / p->cell_h;
	p->cstep = (svg_text_w(maxcol, SVG_LEGEND_PX) + 6 + p->cell_w - 1) / p->cell_w;
	p->label_w = svg_text_w(maxrow, SVG_LEGEND_PX) + 8;
	fig_pane_name(name, sizeof name, a, p);
	snprintf(name + strlen(name), sizeof name - strlen(name), "  %d \u00d7 %d", p->rows0, p->cols0);
	legend = p->label_w + (p->diverging ? th->ndiv : th->nseq) * svg_ramp_step(th, p) + svg_legend_extra(th, p);
	/* the last column label may run past the grid by a label's width */
	p->width = (int)fmax(fmax(p->label_w + (p->v.cols + p->cstep) * p->cell_w, legend),
	                     fmax(svg_text_w(text_cells(name, -1), SVG_PANE_TITLE_PX), 200));
	p->width = (int)fmax(p->width, svg_text_w(text_cells(p->caption, -1), SVG_LEGEND_PX));
	/* title 20, column labels 20, grid, legend 56, caption 16 */
	p->height = 40 + p->v.rows * p->cell_h + 56 + 16;
}

/* Sizes of one pane, once its scale is known. */
static void svg_measure(const Attn *a, const ThemeFile *th, const ExportTarget *t, Pane *p)
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
		maxnum = (int)fmax(maxnum, text_cells(fig_number(num, p->v.a[k], t->precision), -1));
	for (i = 0; i < p->v.rows; i++) {
		char *s = label_cut(fig_label(a, p, 1, i), SVG_LABEL_MAX);
		maxrow = (int)fmax(maxrow, text_cells(s ? s : "", -1));
		free(s);
	}
	for (j = 0; j < p->v.cols; j++) {
		char *s = label_cut(fig_label(a, p, 0, j), SVG_LABEL_MAX);
		maxcol = (int)fmax(maxcol, text_cells(s ? s : "", -1));
		free(s);
	}
	p->cell_w = svg_text_w((int)fmax(maxnum, maxcol), SVG_NUM_PX) + 14;
	p->label_w = svg_text_w(maxrow, SVG_NUM_PX) + 12;
	fig_pane_name(name, sizeof name, a, p);
	snprintf(name + strlen(name), sizeof name - strlen(name), "  %d \u00d7 %d", p->v.rows, p->v.cols);
	legend = p->label_w + nramp * svg_ramp_step(th, p) + svg_legend_extra(th, p);
	p->width = (int)fmax(fmax(p->label_w + p->v.cols * p->cell_w, legend),
	                     fmax(svg_text_w(text_cells(name, -1), SVG_PANE_TITLE_PX), 200));
	/* title 20, column labels 20, grid, legend 56 */
	p->height = 40 + p->v.rows * SVG_CELL_H + 56;
}

/*
 * One colour scale across the figure for the panes of one meaning
 * (svg_same_meaning), unless t asks for one per pane: the same colour then
 * means the same number in every pane of that meaning. Probabilities keep 0–1.
 */
static void svg_share_scale(const ExportTarget *t, Pane *p, int n)
{
	int i, j;
	double lo[SVG_MAX_PANES], hi[SVG_MAX_PANES], bound[SVG_MAX_PANES];

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

/* Background colour of value x in pane p. */
static int svg_colour(const ThemeFile *th, const Pane *p, double x)
{
	if (!isfinite(x))
		return th->masked;
	if (p->diverging)
		return th->div[themefile_ramp_index(p->bound > 0 ? x / p->bound : 0.0, 1, th->ndiv)];
	return th->seq[themefile_ramp_index(p->hi > p->lo ? (x - p->lo) / (p->hi - p->lo) : 0.0, 0, th->nseq)];
}

/* 1 when cell value x of p carries the negative mark: a diverging pane drawn in grey (a mono theme). */
static int svg_neg_mark(const ThemeFile *th, const Pane *p, double x)
{
	return th->mono && p->diverging && isfinite(x) && x < 0;
}

/*
 * A heatmap's grid: one path per colour (runs of a row's cells of that colour),
 * not an element per cell, so that a 48 × 48 pane stays tens of kilobytes; in
 * grey (mono) a negative cell's corner marked as in the numbered figure.
 */
static void svg_heat_cells(StrBuf *b, const ThemeFile *th, const Pane *p, int gx, int gy)
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
static void svg_heat_labels(StrBuf *b, const Attn *a, const Pane *p, int gx, int gy)
{
	int i;

	for (i = 0; i < p->v.cols; i += p->cstep) {
		char *s = label_cut(fig_label(a, p, 0, i), 10);
		strbuf_printf(b, "<text class=\"col-label\" x=\"%d\" y=\"%d\" font-size=\"%d\" fill=\"#444444\">",
		              gx + i * p->cell_w, gy - 6, SVG_LEGEND_PX);
		xml_puts(b, s ? s : "");
		strbuf_puts(b, "</text>\n");
		free(s);
	}
	for (i = 0; i < p->v.rows; i += p->rstep) {
		char *s = label_cut(fig_label(a, p, 1, i), 10);
		strbuf_printf(b, "<text class=\"row-label\" x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"end\" fill=\"#444444\">",
		              gx - 4, gy + i * p->cell_h + p->cell_h / 2 + 4, SVG_LEGEND_PX);
		xml_puts(b, s ? s : "");
		strbuf_puts(b, "</text>\n");
		free(s);
	}
}

static void svg_pane(StrBuf *b, const Attn *a, const ThemeFile *th, const ExportTarget *t, const Pane *p)
{
	char name[96], fill[8], ink[8], num[32];
	const int x0 = p->x, y0 = p->y;
	int i, j, gx = x0 + p->label_w, gy = y0 + 40;
	const int n = p->diverging ? th->ndiv : th->nseq;
	/* a handout's open question: the pane it is about keeps its shape and labels, not its numbers */
	const int blank = t->has_hidden && p->which == t->hidden;
	int lw, ly;

	fig_pane_name(name, sizeof name, a, p);
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
		char *s = label_cut(fig_label(a, p, 0, j), SVG_LABEL_MAX);
		strbuf_printf(b, "<text class=\"col-label\" x=\"%d\" y=\"%d\" text-anchor=\"middle\" fill=\"#444444\">",
		           gx + j * p->cell_w + p->cell_w / 2, y0 + 34);
		xml_puts(b, s ? s : "");
		strbuf_puts(b, "</text>\n");
		free(s);
	}
	for (i = 0; i < p->v.rows && !p->heat; i++) {
		char *s = label_cut(fig_label(a, p, 1, i), SVG_LABEL_MAX);
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
			fig_number(num, x, t->precision);
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
		fig_number(lo, p->diverging ? -p->bound : p->lo, t->precision);
		fig_number(hi, p->diverging ? p->bound : p->hi, t->precision);
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
		              "<path d=\"M%d %dh8l-8 8z\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" font-size=\"%d\">negative</text>\n",
		           gx + n * lw + 12, ly + 16, fill, gx + n * lw + 12, ly + 16, ink, gx + n * lw + 28, ly + 26, SVG_LEGEND_PX);
	}
	if (p->any_inf) {
		rgb_hex(fill, th->masked, 0x808080);
		strbuf_printf(b, "<rect class=\"swatch\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\" stroke=\"#999999\" stroke-width=\"0.5\"/>"
		              "<text x=\"%d\" y=\"%d\" font-size=\"%d\">\u2212\u221e masked</text>\n",
		           gx + n * lw + 12, ly, fill, gx + n * lw + 28, ly + 10, SVG_LEGEND_PX);
	}
	if (p->heat) {
		strbuf_printf(b, "<text class=\"caption\" x=\"%d\" y=\"%d\" font-size=\"%d\" fill=\"#333333\">", x0,
		              ly + 42, SVG_LEGEND_PX);
		xml_puts(b, p->caption);
		strbuf_puts(b, "</text>\n");
	}
	strbuf_puts(b, "</g>\n</g>\n");
}

/* Bytes of the UTF-8 character at s, left bytes there (text.c's decoding: 1 for a stray byte). */
static size_t char_len(const char *s, size_t left)
{
	wchar_t wc;
	int cols;

	return (size_t)text_char(s, left, &wc, &cols);
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
			const size_t k = char_len(text + p, total - p);
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
static void svg_place(Pane *p, int n, int k, int top, int *w, int *h)
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

static const double aspect_ratio[] = { [EXPORT_ASPECT_16_9] = 16.0 / 9.0, [EXPORT_ASPECT_4_3] = 4.0 / 3.0,
	                               [EXPORT_ASPECT_WIDE] = 0 };

static char *render_svg(const Attn *a, const Session *s, const ExportTarget *t, const ThemeFile *th, char **err)
{
	Pane *pane = calloc(SVG_MAX_PANES, sizeof *pane);
	StrBuf b = { NULL, 0, 0, 0 };
	char what[96], *head = NULL;
	const char *title = text_get(&a->top->title, lang_of(s));
	const char *formula = target_formula(a, t, 1);
	size_t tat[2 * SVG_MAX_LINES], fat[2 * SVG_MAX_LINES];
	int n, i, k, best_k = 1, width = 0, height = 0, top = 0, tl = 0, fl = 0, minw;
	double best = INFINITY;

	n = pane ? fig_panes(a, t, pane) : 0;
	if (n == 0) {
		free(pane);
		*err = strdup("out of memory writing the export");
		return NULL;
	}
	for (i = 0; i < n; i++)
		svg_range(&pane[i]);
	svg_share_scale(t, pane, n);
	for (i = 0; i < n; i++) {
		if (pane[i].heat && heat_reduce(&pane[i], lang_of(s)) != 0) {
			fig_panes_free(pane, n);
			free(pane);
			*err = strdup("out of memory writing the export");
			return NULL;
		}
		svg_measure(a, th, t, &pane[i]);
	}
	/* "stage concat" (every head), "stage scores, head 1" (one head's panes) */
	snprintf(what, sizeof what, "%s%s", t->whole_stage ? "stage " : "",
	         t->whole_stage ? stage_name(t->stage) : matrix_name(t->matrix));
	for (i = 0, k = -1; i < n; i++)
		if (pane[i].head >= 0)
			k = k == -1 || k == pane[i].head ? pane[i].head : -2;
	if (k >= 0 && a->heads > 1)
		snprintf(what + strlen(what), sizeof what - strlen(what), ", head %d", k);
	head = str_printf("%s \u2014 %s", title, what);
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
	strbuf_puts(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	strbuf_printf(&b, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" "
	               "viewBox=\"0 0 %d %d\" font-family=\"" SVG_FONT "\" font-size=\"%d\">\n",
	           width, height, width, height, SVG_NUM_PX);
	strbuf_puts(&b, "<title>");
	xml_puts(&b, head ? head : title);
	strbuf_puts(&b, "</title>\n");
	strbuf_printf(&b, "<desc>attnviz export, theme ");
	xml_puts(&b, th->name);
	strbuf_puts(&b, "</desc>\n");
	strbuf_printf(&b, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", width, height);
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
	strbuf_puts(&b, "</svg>\n");
	fig_panes_free(pane, n);
	free(pane);
	free(head);
	return buf_finish(&b, err);
}

/* ------------------------------------------------------------ CSV */

/*
 * A text cell (a label, never a number), escaped as the TUI shows it. A cell
 * that starts with = + - @ (or a tab or CR) is a formula to a spreadsheet
 * (=cmd|' /C calc'!A0): it gets a leading ' so that it stays text, as
 * spreadsheets expect. RFC 4180: a field with , " CR or LF is quoted, quotes doubled.
 */
static void csv_field(StrBuf *b, const char *text)
{
	char *s = shown(text);
	const char *p = s ? s : "";
	const int formula = strchr("=+-@\t\r", p[0]) != NULL && p[0] != '\0';

	if (strpbrk(p, ",\"\r\n") == NULL) {
		strbuf_printf(b, "%s%s", formula ? "'" : "", p);
		free(s);
		return;
	}
	strbuf_puts(b, formula ? "\"'" : "\"");
	for (; *p; p++)
		strbuf_add(b, *p == '"' ? "\"\"" : p, *p == '"' ? 2 : 1);
	strbuf_puts(b, "\"");
	free(s);
}

static char *render_csv(const Attn *a, const ExportTarget *t, char **err)
{
	AttnMatrix panes[STAGE_MAX_PANES];
	int n = target_panes(a, t, panes), i, j;
	AttnMatrix w = panes[n - 1]; /* a stage's result */
	const Mat *m = attn_matrix(a, w, t->head);
	StrBuf b = { NULL, 0, 0, 0 };

	csv_field(&b, matrix_name(w));
	for (j = 0; j < m->cols; j++) {
		char *s = labels_col(a, w, j);
		strbuf_puts(&b, ",");
		csv_field(&b, s ? s : "");
		free(s);
	}
	strbuf_puts(&b, "\r\n");
	for (i = 0; i < m->rows; i++) {
		char *s = labels_row(a, w, i);
		csv_field(&b, s ? s : "");
		free(s);
		for (j = 0; j < m->cols; j++) {
			const double x = MAT_AT(*m, i, j);
			/* −∞ (a masked cell) is an empty field: a spreadsheet reads it as a blank, not as the
			 * text "-inf" that breaks SUM and charts; --dump and json write it as null */
			if (x == -INFINITY)
				strbuf_puts(&b, ",");
			else if (isnan(x))
				strbuf_puts(&b, ",nan");
			else if (isinf(x))
				strbuf_puts(&b, ",inf");
			else
				strbuf_printf(&b, ",%.17g", x);
		}
		strbuf_puts(&b, "\r\n");
	}
	return buf_finish(&b, err);
}

/* ------------------------------------------------------------ Markdown */

/* Backslash-escape what Markdown would read as markup; newlines become spaces (one-line cells). */
#define md_puts export_md_puts
void export_md_puts(StrBuf *b, const char *text, int oneline)
{
	char *e = shown(text);
	const char *s = e ? e : "";

	for (; *s; s++) {
		if (*s == '\n' && !oneline) {
			strbuf_puts(b, "\n> ");
			continue;
		}
		if ((unsigned char)*s < 0x20) {
			strbuf_puts(b, " ");
			continue;
		}
		if (strchr("\\`*_[]<>|#&", *s) != NULL)
			strbuf_puts(b, "\\");
		strbuf_add(b, s, 1);
	}
	free(e);
}

/* The narration a handout shows for the target: the current step when it is on the stage, else the first step on it. */
static const char *md_narration(const Session *s, const ExportTarget *t)
{
	int st = t->whole_stage ? (int)t->stage : matrix_stage(&s->attn->shape, t->matrix), i;
	const Step *cur = session_step(s);

	if (st < 0 || (int)cur->stage == st)
		return session_text(s, &cur->text);
	for (i = 0; i < s->nwalk; i++)
		if ((int)s->walk[i].stage == st && !text_empty(&s->walk[i].text))
			return session_text(s, &s->walk[i].text);
	return stage_blurb((Stage)st, s->lang);
}

/* One pane of the figure as a Markdown table: its name, its labels and its cells as the SVG draws them. */
static void md_table(StrBuf *b, const Attn *a, const Pane *p, int precision)
{
	char name[64], num[32];
	int i, j;

	fig_pane_name(name, sizeof name, a, p);
	strbuf_puts(b, "\n### ");
	md_puts(b, name, 1);
	if (p->heat) {
		/* a table of thousands of numbers is no handout: say where they are */
		strbuf_printf(b, " (%d \u00d7 %d)\n\n*Too many cells to read as numbers: the SVG figure draws them as a "
		                 "heatmap; csv and json exports hold every number (--numbers on writes the table).*\n",
		              p->v.rows, p->v.cols);
		return;
	}
	strbuf_printf(b, " (%d \u00d7 %d)\n\n|  |", p->v.rows, p->v.cols);
	for (j = 0; j < p->v.cols; j++) {
		char *l = fig_label(a, p, 0, j);
		strbuf_puts(b, " ");
		md_puts(b, l ? l : "", 1);
		strbuf_puts(b, " |");
		free(l);
	}
	strbuf_puts(b, "\n|---|");
	for (j = 0; j < p->v.cols; j++)
		strbuf_puts(b, "---:|");
	strbuf_puts(b, "\n");
	for (i = 0; i < p->v.rows; i++) {
		char *l = fig_label(a, p, 1, i);
		strbuf_puts(b, "| **");
		md_puts(b, l ? l : "", 1);
		strbuf_puts(b, "** |");
		free(l);
		for (j = 0; j < p->v.cols; j++)
			strbuf_printf(b, " %s |", fig_number(num, MAT_AT(p->v, i, j), precision));
		strbuf_puts(b, "\n");
	}
}

static char *render_md(const Attn *a, const Session *s, const ExportTarget *t, char **err)
{
	Pane *pane = calloc(SVG_MAX_PANES, sizeof *pane);
	int n = pane ? fig_panes(a, t, pane) : 0, i;
	StrBuf b = { NULL, 0, 0, 0 };
	char what[96];
	const char *formula = target_formula(a, t, 1);

	if (n == 0) {
		free(pane);
		*err = strdup("out of memory writing the export");
		return NULL;
	}
	target_title(what, sizeof what, a, t);
	strbuf_puts(&b, "## ");
	md_puts(&b, text_get(&a->top->title, lang_of(s)), 1);
	strbuf_puts(&b, " \u2014 ");
	md_puts(&b, what, 1);
	strbuf_puts(&b, "\n");
	if (formula[0] != '\0') {
		strbuf_puts(&b, "\n*Formula:* ");
		md_puts(&b, formula, 1);
		strbuf_puts(&b, "\n");
	}
	if (s != NULL) {
		const char *narr = md_narration(s, t);
		if (narr != NULL && narr[0] != '\0') {
			strbuf_puts(&b, "\n> ");
			md_puts(&b, narr, 0);
			strbuf_puts(&b, "\n");
		}
	}
	/* the figure's panes (fig_panes): one head's columns, Kᵀ, every head beside concat, as the SVG and TeX */
	for (i = 0; i < n; i++)
		md_table(&b, a, &pane[i], t->precision);
	fig_panes_free(pane, n);
	free(pane);
	return buf_finish(&b, err);
}

/* ------------------------------------------------------------ TeX */

/* Text for \text{…} or a comment: TeX specials escaped, control characters dropped. */
static void tex_puts(StrBuf *b, const char *text)
{
	char *e = shown(text);
	const char *s = e ? e : "";

	for (; *s; s++) {
		switch (*s) {
		case '\\': strbuf_puts(b, "\\textbackslash{}"); break;
		case '{': strbuf_puts(b, "\\{"); break;
		case '}': strbuf_puts(b, "\\}"); break;
		case '$': strbuf_puts(b, "\\$"); break;
		case '&': strbuf_puts(b, "\\&"); break;
		case '#': strbuf_puts(b, "\\#"); break;
		case '%': strbuf_puts(b, "\\%"); break;
		case '_': strbuf_puts(b, "\\_"); break;
		case '^': strbuf_puts(b, "\\textasciicircum{}"); break;
		case '~': strbuf_puts(b, "\\textasciitilde{}"); break;
		case '<': strbuf_puts(b, "\\textless{}"); break;
		case '>': strbuf_puts(b, "\\textgreater{}"); break;
		case '|': strbuf_puts(b, "\\textbar{}"); break;
		default:
			if ((unsigned char)*s < 0x20)
				strbuf_puts(b, " ");
			else
				strbuf_add(b, s, 1);
		}
	}
	free(e);
}

/* A number in math mode: 0.1234, -\infty, 1.20 \times 10^{4}. */
static void tex_number(StrBuf *b, double x, int precision)
{
	char num[32], *e;

	if (x == -INFINITY || x == INFINITY) {
		strbuf_puts(b, x < 0 ? "-\\infty" : "\\infty");
		return;
	}
	if (isnan(x)) {
		strbuf_puts(b, "\\mathrm{NaN}");
		return;
	}
	if (precision < 0)
		labels_number(num, x, 0);
	else
		fig_number(num, x, precision);
	e = strchr(num, 'e');
	if (e == NULL) {
		strbuf_puts(b, num);
		return;
	}
	*e = '\0';
	strbuf_printf(b, "%s \\times 10^{%d}", num, atoi(e + 1));
}

static int tex_math(StrBuf *b, const char *s, size_t len);

/*
 * The bracket opening at s[at] as a TeX group: prefix, its inside converted
 * (with the brackets when keep), "}". Returns the index after the bracket,
 * or 0 when it does not close or its inside cannot be converted.
 */
static size_t tex_bracket(StrBuf *b, const char *s, size_t len, size_t at, const char *prefix, int keep)
{
	size_t e = at;
	int depth = 0;

	do {
		depth += s[e] == '(' ? 1 : s[e] == ')' ? -1 : 0;
		e++;
	} while (e < len && depth > 0);
	if (depth != 0)
		return 0;
	strbuf_puts(b, prefix);
	if (tex_math(b, s + at + (keep ? 0 : 1), e - at - (keep ? 0 : 2)) != 0)
		return 0;
	strbuf_puts(b, "}");
	return e;
}

/*
 * A formula of the stage table (UTF-8, one part: no double spaces) as TeX
 * math: W_q → W_{q}, d_model → d_{\mathrm{model}}, softmax → \operatorname{softmax},
 * · → \cdot, ᵀ → ^{\top}, √d_k → \sqrt{d_{k}}, words → \mathrm{…}. Returns
 * -1 at a character it has no rule for (the caller then writes the text).
 */
static int tex_math(StrBuf *b, const char *s, size_t len)
{
	static const char *const ops[][2] = {
		{ "softmax", "\\operatorname{softmax}" }, { "silu", "\\operatorname{silu}" },
		{ "relu", "\\operatorname{relu}" }, { "gelu", "\\operatorname{gelu}" },
		{ "diag", "\\operatorname{diag}" }, { "exp", "\\exp" }, { "max", "\\max" },
		{ "tanh", "\\tanh" }, { "sin", "\\sin" }, { "cos", "\\cos" }, { "sum", "\\sum" },
	};
	static const char *const sym[][2] = {
		{ "\u00b7", "\\cdot " }, { "\u00d7", "\\times " }, { "\u03a3", "\\sum " }, { "\u03a6", "\\Phi " },
		{ "\u03c3", "\\sigma " }, { "\u03bc", "\\mu " }, { "\u03b3", "\\gamma " }, { "\u03b2", "\\beta " },
		{ "\u03b5", "\\epsilon " }, { "\u1d40", "^{\\top}" }, { "\u2026", "\\dots " }, { "\u2212", "-" },
		{ "\u221e", "\\infty " }, { "\u2299", "\\odot " }, { "\u00b2", "^{2}" }, { "\u2192", "\\to " },
		{ "\u2264", "\\le " }, { "\u2265", "\\ge " },
	};
	size_t i = 0, k;
	int sqrt_open = 0;

	while (i < len) {
		const char c = s[i];
		if (isalpha((unsigned char)c)) {
			size_t w = i, sub = 0, sublen = 0;
			int group = 0;
			while (w < len && isalnum((unsigned char)s[w]))
				w++;
			if (w + 1 < len && s[w] == '_' && s[w + 1] == '{') {
				size_t e = w + 2;
				int depth = 1;
				while (e < len && depth > 0) {
					depth += s[e] == '{' ? 1 : s[e] == '}' ? -1 : 0;
					e++;
				}
				if (depth != 0)
					return -1;
				sub = w + 2;
				sublen = e - 1 - sub;
				group = 1;
			} else if (w + 1 < len && s[w] == '_' && isalnum((unsigned char)s[w + 1])) {
				sub = w + 1;
				sublen = 1;
				while (sub + sublen < len && isalnum((unsigned char)s[sub + sublen]))
					sublen++;
			}
			for (k = 0; k < sizeof ops / sizeof ops[0]; k++)
				if (strlen(ops[k][0]) == w - i && strncmp(s + i, ops[k][0], w - i) == 0)
					break;
			if (k < sizeof ops / sizeof ops[0])
				strbuf_puts(b, ops[k][1]);
			else if (sublen >= 3 && !group && w - i >= 2) {
				/* ffn_hidden: one name */
				strbuf_printf(b, "\\mathrm{%.*s\\_%.*s}", (int)(w - i), s + i, (int)sublen, s + sub);
				i = sub + sublen;
				goto next;
			} else if (w - i == 1)
				strbuf_printf(b, "%c", c);
			else
				strbuf_printf(b, "\\mathrm{%.*s}", (int)(w - i), s + i);
			if (sublen > 0) {
				strbuf_puts(b, "_{");
				if (group) {
					if (tex_math(b, s + sub, sublen) != 0)
						return -1;
				} else if (sublen >= 3)
					strbuf_printf(b, "\\mathrm{%.*s}", (int)sublen, s + sub);
				else
					strbuf_printf(b, "%.*s", (int)sublen, s + sub);
				strbuf_puts(b, "}");
				i = group ? sub + sublen + 1 : sub + sublen;
			} else
				i = w;
next:
			if (sqrt_open) {
				strbuf_puts(b, "}");
				sqrt_open = 0;
			}
			/* two words in a row keep their space */
			if (i + 1 < len && s[i] == ' ' && isalpha((unsigned char)s[i + 1]))
				strbuf_puts(b, "\\ ");
			continue;
		}
		if (isdigit((unsigned char)c) || strchr("+-=/()[],:;.<>|!*", c) != NULL) {
			strbuf_add(b, &c, 1);
			i++;
			continue;
		}
		if (c == ' ') {
			i++;
			continue;
		}
		if (c == '\'') {
			strbuf_puts(b, "\\text{'}");
			i++;
			continue;
		}
		if (c == '^' && i + 1 < len && s[i + 1] == '(') {
			if ((i = tex_bracket(b, s, len, i + 1, "^{", 1)) == 0)
				return -1;
			continue;
		}
		if (c == '^') {
			strbuf_puts(b, "^");
			i++;
			continue;
		}
		if (c == '_' && i + 1 < len && isalnum((unsigned char)s[i + 1])) {
			/* a subscript after a symbol: Σ_j */
			size_t e = i + 1;
			while (e < len && isalnum((unsigned char)s[e]))
				e++;
			strbuf_printf(b, "_{%.*s}", (int)(e - i - 1), s + i + 1);
			i = e;
			continue;
		}
		if (strncmp(s + i, "\u221a(", 4) == 0) {
			/* √(σ² + ε): the bracket becomes the root's */
			if ((i = tex_bracket(b, s, len, i + 3, "\\sqrt{", 0)) == 0)
				return -1;
			continue;
		}
		if (strncmp(s + i, "\u221a", 3) == 0 && i + 3 < len && isalpha((unsigned char)s[i + 3])) {
			strbuf_puts(b, "\\sqrt{");
			sqrt_open = 1;
			i += 3;
			continue;
		}
		for (k = 0; k < sizeof sym / sizeof sym[0]; k++)
			if (strncmp(s + i, sym[k][0], strlen(sym[k][0])) == 0)
				break;
		if (k == sizeof sym / sizeof sym[0])
			return -1;
		strbuf_puts(b, sym[k][1]);
		i += strlen(sym[k][0]);
	}
	return sqrt_open ? -1 : 0;
}

/* One line of the document, scaled down to the text width when wider. */
static void tex_fit_open(StrBuf *b)
{
	strbuf_puts(b, "\\noindent\\attnfit{$\\displaystyle ");
}

static void tex_fit_close(StrBuf *b)
{
	strbuf_puts(b, "$}\\par\n");
}

/* The stage's formula, a line for each of its parts, in math where every character has a rule. */
static void tex_formula(StrBuf *b, const char *utf8, const char *ascii)
{
	const char *p = utf8;
	StrBuf m = { NULL, 0, 0, 0 };
	int ok = 1;

	while (*p && ok) {
		const char *sep = strstr(p, "  ");
		size_t len = sep ? (size_t)(sep - p) : strlen(p);
		tex_fit_open(&m);
		ok = tex_math(&m, p, len) == 0;
		tex_fit_close(&m);
		p += len;
		while (*p == ' ')
			p++;
	}
	if (ok && !m.oom && m.s != NULL)
		strbuf_puts(b, m.s);
	else {
		strbuf_puts(b, "\\noindent ");
		tex_puts(b, ascii);
		strbuf_puts(b, "\\par\n");
	}
	free(m.s);
}

/* 1 when the text has a character outside ASCII; *cjk set when one is Chinese, Japanese or Korean. */
static int tex_unicode(const char *s, int *cjk)
{
	int any = 0;

	for (; *s; s++)
		if ((unsigned char)*s >= 0x80) {
			const size_t k = char_len(s, strnlen(s, 4));
			any = 1;
			*cjk |= text_cells(s, (int)k) == 2;
			s += k - 1;
		}
	return any;
}

static void tex_labels(StrBuf *b, const Attn *a, const Pane *p)
{
	int i;

	strbuf_puts(b, "{\\footnotesize rows: ");
	for (i = 0; i < p->v.rows; i++) {
		char *s = fig_label(a, p, 1, i);
		if (i)
			strbuf_puts(b, ", ");
		tex_puts(b, s ? s : "");
		free(s);
	}
	strbuf_puts(b, "; columns: ");
	for (i = 0; i < p->v.cols; i++) {
		char *s = fig_label(a, p, 0, i);
		if (i)
			strbuf_puts(b, ", ");
		tex_puts(b, s ? s : "");
		free(s);
	}
	strbuf_puts(b, "}\\par\\medskip\n");
}

/*
 * A whole document: compiles as it is, with pdflatex when its text is ASCII,
 * with xelatex (and xeCJK for Chinese labels) otherwise; the header says
 * which. Each formula part and each matrix is one line, scaled down to the
 * text width when wider; the labels are a paragraph under their matrix.
 */
static char *render_tex(const Attn *a, const Session *s, const ExportTarget *t, char **err)
{
	Pane *pane = calloc(SVG_MAX_PANES, sizeof *pane);
	StrBuf b = { NULL, 0, 0, 0 };
	char what[96];
	const char *title = text_get(&a->top->title, lang_of(s));
	int n, i, r, c, maxcols = 0, unicode, cjk = 0;

	n = pane ? fig_panes(a, t, pane) : 0;
	if (n == 0) {
		free(pane);
		*err = strdup("out of memory writing the export");
		return NULL;
	}
	target_title(what, sizeof what, a, t);
	unicode = tex_unicode(title, &cjk);
	for (i = 0; i < n; i++) {
		for (r = 0; r < 2; r++)
			for (c = 0; c < (r ? pane[i].v.rows : pane[i].v.cols); c++) {
				char *l = fig_label(a, &pane[i], r, c);
				unicode |= l != NULL && tex_unicode(l, &cjk);
				free(l);
			}
		maxcols = (int)fmax(maxcols, pane[i].v.cols);
	}
	strbuf_puts(&b, "% attnviz export: ");
	tex_puts(&b, title);
	strbuf_puts(&b, " -- ");
	tex_puts(&b, what);
	if (unicode)
		strbuf_printf(&b, "\n%% compile with xelatex (the text is not all ASCII%s); TeX Live: texlive-xetex%s\n",
		              cjk ? "; Chinese with xeCJK and the Fandol fonts" : "",
		              cjk ? ", texlive-lang-chinese" : "");
	else
		strbuf_puts(&b, "\n% compile with pdflatex (the text is ASCII); TeX Live: texlive-latex-base\n");
	strbuf_puts(&b, "\\documentclass{article}\n\\usepackage[margin=2cm]{geometry}\n\\usepackage{amsmath}\n\\usepackage{graphicx}\n");
	if (unicode)
		strbuf_puts(&b, "\\usepackage{fontspec}\n");
	else
		strbuf_puts(&b, "\\usepackage[T1]{fontenc}\n");
	if (cjk)
		strbuf_puts(&b, "\\usepackage{xeCJK}\n\\setCJKmainfont{FandolSong-Regular.otf}[BoldFont=FandolSong-Bold.otf]\n");
	if (maxcols > 10)
		strbuf_printf(&b, "\\setcounter{MaxMatrixCols}{%d}\n", maxcols);
	strbuf_puts(&b, "% a line wider than the text is scaled down to its width\n"
	                "\\newcommand{\\attnfit}[1]{\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{#1}}\n"
	                "\\begin{document}\n\\section*{");
	tex_puts(&b, title);
	strbuf_puts(&b, " --- ");
	tex_puts(&b, what);
	strbuf_puts(&b, "}\n");
	{
		int st = t->whole_stage ? (int)t->stage : matrix_stage(&a->shape, t->matrix);
		if (st >= 0) {
			tex_formula(&b, stage_formula(&a->shape, (Stage)st, 1), stage_formula(&a->shape, (Stage)st, 0));
			strbuf_puts(&b, "\\medskip\n");
		}
	}
	for (i = 0; i < n; i++) {
		const Pane *p = &pane[i];
		if (p->heat) {
			strbuf_puts(&b, "\\noindent $\\mathrm{");
			tex_puts(&b, matrix_name(p->which));
			strbuf_printf(&b, "}%s$: $%d \\times %d$, too many cells to print as numbers; csv and json exports "
			                  "hold every number (\\texttt{--numbers on} prints them).\\par\\medskip\n",
			              p->transpose ? "^{\\top}" : "", p->v.rows, p->v.cols);
			continue;
		}
		tex_fit_open(&b);
		strbuf_puts(&b, "\\mathrm{");
		tex_puts(&b, matrix_name(p->which));
		strbuf_puts(&b, "}");
		if (p->transpose)
			strbuf_puts(&b, "^{\\top}");
		if (p->kv_head >= 0)
			strbuf_printf(&b, "\\ \\text{(kv head %d)}", p->kv_head);
		else if (p->head >= 0 && a->heads > 1)
			strbuf_printf(&b, "\\ \\text{(head %d)}", p->head);
		strbuf_puts(&b, " = \\begin{bmatrix}\n");
		for (r = 0; r < p->v.rows; r++) {
			strbuf_puts(&b, "    ");
			for (c = 0; c < p->v.cols; c++) {
				if (c)
					strbuf_puts(&b, " & ");
				tex_number(&b, MAT_AT(p->v, r, c), t->precision);
			}
			strbuf_puts(&b, r + 1 < p->v.rows ? " \\\\\n" : "\n");
		}
		strbuf_puts(&b, "  \\end{bmatrix}");
		tex_fit_close(&b);
		tex_labels(&b, a, p);
	}
	strbuf_puts(&b, "\\end{document}\n");
	fig_panes_free(pane, n);
	free(pane);
	return buf_finish(&b, err);
}

/* ------------------------------------------------------------ JSON */

/* A pane's labels along its rows or columns as a JSON array of strings. */
static cJSON *json_labels(const Attn *a, const Pane *p, int along_rows)
{
	cJSON *arr = cJSON_CreateArray();
	const int n = along_rows ? p->v.rows : p->v.cols;

	for (int i = 0; arr != NULL && i < n; i++) {
		char *l = fig_label(a, p, along_rows, i);
		if (l == NULL || !cJSON_AddItemToArray(arr, cJSON_CreateString(l))) {
			free(l);
			cJSON_Delete(arr);
			return NULL;
		}
		free(l);
	}
	return arr;
}

/* One pane of the figure: what it is, its labels, its cells as drawn. */
static cJSON *json_pane(const Attn *a, const Pane *p)
{
	cJSON *o = cJSON_CreateObject();
	char name[64];

	fig_pane_name(name, sizeof name, a, p);
	if (o == NULL || !cJSON_AddStringToObject(o, "name", name) ||
	    !cJSON_AddStringToObject(o, "matrix", matrix_name(p->which)) ||
	    (p->head >= 0 && !cJSON_AddNumberToObject(o, "head", p->head)) ||
	    (p->kv_head >= 0 && !cJSON_AddNumberToObject(o, "kv_head", p->kv_head)) ||
	    !cJSON_AddBoolToObject(o, "transposed", p->transpose) ||
	    !cJSON_AddNumberToObject(o, "first_column", p->col0) ||
	    !cJSON_AddItemToObject(o, "rows", json_labels(a, p, 1)) ||
	    !cJSON_AddItemToObject(o, "columns", json_labels(a, p, 0)) ||
	    !cJSON_AddItemToObject(o, "values", jw_matrix(&p->v))) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static char *render_json(const Attn *a, const ExportTarget *t, char **err)
{
	Pane *pane = calloc(SVG_MAX_PANES, sizeof *pane);
	int n = pane ? fig_panes(a, t, pane) : 0, i;
	cJSON *o = n > 0 ? cJSON_CreateObject() : NULL, *names, *panes;
	const char *formula = target_formula(a, t, 1);
	char *line;

	if (o == NULL)
		goto oom;
	if (t->whole_stage ? !cJSON_AddStringToObject(o, "stage", stage_name(t->stage))
	                   : !cJSON_AddStringToObject(o, "matrix", matrix_name(t->matrix)))
		goto oom;
	if (!cJSON_AddNumberToObject(o, "head", t->head) || !cJSON_AddStringToObject(o, "formula", formula))
		goto oom;
	/* "matrices": those a pane shows whole for this head, each also under its own name (as --dump has it) */
	names = cJSON_AddArrayToObject(o, "matrices");
	panes = cJSON_AddArrayToObject(o, "panes");
	if (names == NULL || panes == NULL)
		goto oom;
	for (i = 0; i < n; i++) {
		const Pane *p = &pane[i];
		const Mat *m = attn_matrix(a, p->which, t->head);
		cJSON *pj = json_pane(a, p);
		if (pj == NULL || !cJSON_AddItemToArray(panes, pj)) {
			cJSON_Delete(pj);
			goto oom;
		}
		if (m == NULL || p->transpose || p->kv_head >= 0 || (p->head >= 0 && p->head != t->head) ||
		    p->v.rows != m->rows || p->v.cols != m->cols || cJSON_HasObjectItem(o, matrix_name(p->which)))
			continue;
		cJSON *mj = jw_matrix(m);
		if (!cJSON_AddItemToArray(names, cJSON_CreateString(matrix_name(p->which))) || mj == NULL ||
		    !cJSON_AddItemToObject(o, matrix_name(p->which), mj)) {
			cJSON_Delete(mj);
			goto oom;
		}
	}
	fig_panes_free(pane, n);
	free(pane);
	line = jw_print(o);
	if (line == NULL)
		*err = strdup("out of memory writing the export");
	return line;
oom:
	fig_panes_free(pane, n);
	free(pane);
	cJSON_Delete(o);
	*err = strdup("out of memory writing the export");
	return NULL;
}

/* ------------------------------------------------------------ dispatch */

char *export_render(const Attn *a, const Session *s, ExportFormat fmt, const ExportTarget *t,
                    const ThemeFile *theme, char **err)
{
	AttnMatrix panes[STAGE_MAX_PANES];
	ThemeFile builtin;

	*err = NULL;
	if (t->head < 0 || t->head >= a->heads) {
		*err = strdup("export: no such head in this lesson");
		return NULL;
	}
	if (target_panes(a, t, panes) == 0) {
		*err = error_string("", t->whole_stage ? stage_name(t->stage) : matrix_name(t->matrix),
		                    " is not part of this lesson");
		return NULL;
	}
	if (theme == NULL) {
		themefile_default(&builtin);
		theme = &builtin;
	}
	/* A figure, a table for a handout or a TeX matrix is for a person to read: past
	 * EXPORT_MAX_CELLS numbers it is not (a 1024 × 1024 SVG is hundreds of MB). */
	if ((fmt == EXPORT_SVG || fmt == EXPORT_MD || fmt == EXPORT_TEX) && t->numbers == EXPORT_NUMBERS_ON) {
		int k, n = target_panes(a, t, panes);
		for (k = 0; k < n; k++) {
			const Mat *m = attn_matrix(a, panes[k], t->head);
			if (m != NULL && (long)m->rows * m->cols > EXPORT_MAX_CELLS) {
				*err = str_printf("export: %s is %d × %d, too many cells for a figure or a table "
				                  "of numbers (at most %d); use --numbers auto or off for a heatmap, "
				                  "csv or json for the numbers",
				                  matrix_name(panes[k]), m->rows, m->cols, EXPORT_MAX_CELLS);
				return NULL;
			}
		}
	}
	switch (fmt) {
	case EXPORT_SVG: return render_svg(a, s, t, theme, err);
	case EXPORT_CSV: return render_csv(a, t, err);
	case EXPORT_MD: return render_md(a, s, t, err);
	case EXPORT_TEX: return render_tex(a, s, t, err);
	case EXPORT_JSON: return render_json(a, t, err);
	default:
		*err = strdup("export: unknown format (svg, csv, md, tex, json)");
		return NULL;
	}
}

/* ------------------------------------------------------------ the lesson as JSON */

char *export_lesson_json(const Lesson *l, char **err)
{
	return lesson_write_json(l, err);
}
