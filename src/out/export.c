/* export.c: figures and tables of a stage for slides and handouts (SVG, CSV, Markdown,
 * TeX, JSON), and the lesson itself as JSON (lesson/lesson_write.c writes it). Pure:
 * no files, no terminal; the callers write the result with fileio_write_atomic().
 * This file is the core (names, what a target shows, the panes of a figure,
 * dispatch); the formats are export_svg.c, export_tex.c and export_text.c (CSV,
 * Markdown, JSON), sharing out/export_internal.h. */
#include "out/export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "inspect/explain.h"
#include "inspect/heatmap.h"
#include "inspect/labels.h"
#include "lesson/lesson_write.h"
#include "base/i18n.h"
#include "base/strbuf.h"
#include "out/export_internal.h"


/* ------------------------------------------------------------ a growing string */

char *ex_buf_finish(StrBuf *b, char **err)
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
int ex_target_panes(const Attn *a, const ExportTarget *t, AttnMatrix out[STAGE_MAX_PANES])
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
const char *ex_target_formula(const Attn *a, const ExportTarget *t, int utf8)
{
	int st = t->whole_stage ? (int)t->stage : matrix_stage(&a->shape, t->matrix);
	return st >= 0 ? stage_formula(&a->shape, (Stage)st, utf8) : "";
}

const char *ex_lang_of(const Session *s)
{
	return s != NULL && s->lang[0] ? s->lang : "en";
}

const char *ex_lesson_title(const Attn *a, const Session *s)
{
	/* an encoder layer's model has no title of its own: the lesson's */
	return text_get(s != NULL && s->lesson != NULL ? &s->lesson->title : &a->top->title, ex_lang_of(s));
}

void ex_place_prefix(char *buf, size_t size, const Session *s)
{
	char *place = s != NULL ? session_place(s, 1) : NULL;

	snprintf(buf, size, "%s%s", place ? place : "", place ? " \u2014 " : "");
	free(place);
}

char *ex_block_map(const Attn *a, const Session *s, const ExportTarget *t, int utf8)
{
	const int st = t->whole_stage ? (int)t->stage : matrix_stage(&a->shape, t->matrix);
	Session at;
	char *map, *line;

	if (s == NULL || s->attn != a || st < 0)
		return NULL;
	/* the map as the screen draws it, lit at the stage exported (not the session's own) */
	at = *s;
	at.stage = (Stage)st;
	if ((map = session_stage_map(&at, utf8)) == NULL)
		return NULL;
	line = str_printf(_("block: %s"), map);
	free(map);
	return line;
}

/* "softmax, head 1" / "weights, head 1" / "W_q": what the export shows, for titles. */
void ex_target_title(char *buf, size_t size, const Session *s, const Attn *a, const ExportTarget *t)
{
	int per_head = 0, i, n;
	AttnMatrix panes[STAGE_MAX_PANES];
	char place[160];

	ex_place_prefix(place, sizeof place, s);
	n = ex_target_panes(a, t, panes);
	for (i = 0; i < n; i++)
		per_head |= matrix_per_head(panes[i]);
	/* "stage " and ", head %d" in the program's language (--lang zh: the terminal's 阶段, 头) */
	snprintf(buf, size, "%s%s%s", place, t->whole_stage ? _("stage ") : "",
	         t->whole_stage ? stage_name(t->stage) : matrix_name(t->matrix));
	if (per_head && a->heads > 1)
		snprintf(buf + strlen(buf), size - strlen(buf), _(", head %d"), t->head);
	/* the decode step or tile shown (--token, --tile, a handout's step): what its blank cells wait for */
	if (s != NULL && s->dec_t >= 0 && session_decode_steps(s) > 0)
		snprintf(buf + strlen(buf), size - strlen(buf), _(", token %d"), s->dec_t);
	else if (s != NULL && s->tile_q >= 0 && session_tiles(s, &(int){ 0 }, &(int){ 0 }) > 0)
		snprintf(buf + strlen(buf), size - strlen(buf), _(", tile (%d, %d)"), s->tile_q, s->tile_k);
}

/* ------------------------------------------------------------ the panes of a figure (every format draws from them) */

/*
 * Lesson text as every export shows it: control characters, DEL, C1
 * controls (U+0085, U+009B) and bidi overrides written as \x85, \u202e, as
 * the TUI shows them (text_escape), keeping newline and tab for the format to
 * lay out. NULL when out of memory (the caller then writes nothing).
 */
char *ex_shown(const char *s)
{
	return text_escape(s, "\n\t");
}

/* A number as figures show it: prec decimals, or (prec < 0) as the screen does; −∞ with a real minus. */
char *ex_fig_number(char buf[32], double x, int prec)
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

/* "Kᵀ (head 1)", "weights (head 0)", "K (kv head 0)", "X". */
void ex_fig_pane_name(char *buf, size_t size, const Attn *a, const ExPane *p)
{
	if (p->kv_head >= 0)
		snprintf(buf, size, _("%s%s (kv head %d)"), matrix_name(p->which), p->transpose ? "\u1d40" : "", p->kv_head);
	else if (p->head >= 0 && a->heads > 1)
		snprintf(buf, size, _("%s%s (head %d)"), matrix_name(p->which), p->transpose ? "\u1d40" : "", p->head);
	else
		snprintf(buf, size, "%s%s", matrix_name(p->which), p->transpose ? "\u1d40" : "");
}

/* The label of row (along_rows) or column i of the pane, as the matrix's own labels: heap string. */
char *ex_fig_label(const Attn *a, const ExPane *p, int along_rows, int i)
{
	i *= p->f > 1 ? p->f : 1; /* a down-sampled heatmap: its block's first row or column */
	if (along_rows != p->transpose)
		return labels_row(a, p->which, i);
	return labels_col(a, p->which, p->col0 + i + p->lshift);
}

void ex_fig_panes_free(ExPane *p, int n)
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
int ex_fig_panes(const Attn *a, const Session *s, const ExportTarget *t, ExPane out[EX_MAX_PANES])
{
	StagePane sp[STAGE_MAX_PANES];
	PaneCut cuts[EX_MAX_PANES];
	int k, nc, n = 0, i, h, r, c;

	if (!t->whole_stage) {
		cuts[0] = (PaneCut){ t->matrix, t->head, 0, -1, 0, 0 };
		nc = 1;
		k = 0;
	} else {
		k = attn_stage_panes(a, t->stage, sp);
		nc = stage_cut_panes(&a->shape, sp, k, t->head, cuts, EX_MAX_PANES);
	}
	for (i = 0; i < nc; i++) {
		const PaneCut *pc = &cuts[i];
		const int per_head = matrix_per_head(pc->matrix);
		const int kv = (pc->flags & PANE_EACH_KV_HEAD) != 0;
		for (h = pc->head; h < pc->head + 1 && n < EX_MAX_PANES; h++) {
			const Mat *m = attn_matrix(a, pc->matrix, kv ? t->head : h);
			ExPane *p = &out[n];
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
				ex_fig_panes_free(out, n);
				return 0;
			}
			p->rows0 = p->v.rows;
			p->cols0 = p->v.cols;
			p->heat = !heat_numbers_shown(t->numbers == EXPORT_NUMBERS_ON    ? HEAT_NUMBERS_ON
			                              : t->numbers == EXPORT_NUMBERS_OFF ? HEAT_NUMBERS_OFF
			                                                                 : HEAT_NUMBERS_AUTO,
			                              p->rows0, p->cols0);
			for (r = 0; r < m->rows; r++)
				for (c = 0; c < ncols; c++) {
					double x = MAT_AT(*m, r, p->col0 + c);
					/* a cell the step shown has not reached (a decode step's later tokens, a later
					 * tile): blank, never a 0 a student reads as a real number */
					if (s != NULL && session_cell_state(s, a, pc->matrix, r, p->col0 + c) == CELL_UNSEEN)
						x = NAN;
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

/* Bytes of the UTF-8 character at s, left bytes there (text.c's decoding: 1 for a stray byte). */
size_t ex_char_len(const char *s, size_t left)
{
	wchar_t wc;
	int cols;

	return (size_t)text_char(s, left, &wc, &cols);
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
	if (ex_target_panes(a, t, panes) == 0) {
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
		int k, n = ex_target_panes(a, t, panes);
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
	case EXPORT_SVG: return ex_render_svg(a, s, t, theme, err);
	case EXPORT_CSV: return ex_render_csv(a, t, err);
	case EXPORT_MD: return ex_render_md(a, s, t, err);
	case EXPORT_TEX: return ex_render_tex(a, s, t, err);
	case EXPORT_JSON: return ex_render_json(a, t, err);
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
