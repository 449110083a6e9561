/* textfmt.c: matrices as aligned text tables, stages as text (plain REPL, batch). */
#include "textfmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "explain.h"
#include "labels.h"
#include "themefile.h"
#include "stats.h"
#include "strbuf.h"

/*
 * A row or column label cut to TEXTFMT_LABEL_MAX columns, ending in "…":
 * a 10 000-character token would otherwise widen every column of a
 * matrix to 10 000. Takes s (heap) and returns a heap string.
 */
#define TEXTFMT_LABEL_MAX 24
static char *fit_label(char *s, int utf8)
{
	size_t len, used = 0;
	int w = 0;
	char *out;

	if (s == NULL || text_width(s, -1) <= TEXTFMT_LABEL_MAX)
		return s;
	len = strlen(s);
	while (used < len) {
		wchar_t wc;
		int cw, k = text_char(s + used, len - used, &wc, &cw);
		if (w + cw > TEXTFMT_LABEL_MAX - 1)
			break;
		w += cw;
		used += (size_t)k;
	}
	out = malloc(used + 4);
	if (out == NULL)
		return s;
	memcpy(out, s, used);
	strcpy(out + used, utf8 ? "\u2026" : "~");
	free(s);
	return out;
}

static void put_padded(FILE *f, const char *s, int width, int right)
{
	int pad = width - text_width(s, -1);
	if (right)
		for (; pad > 0; pad--)
			fputc(' ', f);
	fputs(s, f);
	if (!right)
		for (; pad > 0; pad--)
			fputc(' ', f);
}

/*
 * An xterm-256 background for value x on the matrix's scale, from the
 * theme's ramps (the ones the full-screen view and SVG exports use):
 * diverging around 0 for scores, sequential from min to max for weights.
 */
static int heat_color(double x, double lo, double hi, int diverging)
{
	const ThemeFile *th = themefile_current();
	double bound = fmax(fabs(lo), fabs(hi));

	if (!isfinite(x))
		return th->masked;
	if (diverging && th->ndiv > 0)
		return th->div[themefile_ramp_index(bound > 0 ? x / bound : 0.0, 1, th->ndiv)];
	if (th->nseq > 0)
		return th->seq[themefile_ramp_index(hi > lo ? (x - lo) / (hi - lo) : 0.0, 0, th->nseq)];
	return -1;
}


/* What textfmt_step adds to a table: a title prefix, cells marked against another matrix, row sums. */
typedef struct MatrixExtra {
	const char *prefix; /* before the title (escaped), or NULL */
	const Mat *ref;     /* mark with '*' the cells that differ from ref (the common rows and columns), or NULL */
	int sums;           /* a Σ column: each row's sum */
	long ndiff;         /* out: how many cells differ from ref (cells outside ref count too) */
} MatrixExtra;

/* 1 when cell (i, j) of m differs from ref (or ref has no such cell). */
static int cell_differs(const Mat *m, const Mat *ref, int i, int j)
{
	Mat x, y;

	if (i >= ref->rows || j >= ref->cols)
		return 1;
	x.rows = x.cols = y.rows = y.cols = 1;
	x.a = &MAT_AT(*m, i, j);
	y.a = &MAT_AT(*ref, i, j);
	return stats_cell_differs(&x, &y, 0, 0, 1e-9, 1e-12);
}

static void print_matrix(FILE *f, const Attn *a, AttnMatrix which, int h, int color, int utf8, MatrixExtra *extra);

void textfmt_matrix(FILE *f, const Attn *a, AttnMatrix which, int h, int color, int utf8)
{
	print_matrix(f, a, which, h, color, utf8, NULL);
}

static void print_matrix(FILE *f, const Attn *a, AttnMatrix which, int h, int color, int utf8, MatrixExtra *extra)
{
	const Mat *m = attn_matrix(a, which, h);
	char num[16];
	int i, j, lw = 1, cw = 6;
	double lo = INFINITY, hi = -INFINITY;
	size_t count;
	const Mat *ref = extra != NULL ? extra->ref : NULL;

	if (m == NULL) {
		fprintf(f, "%s: not in this lesson\n", matrix_name(which));
		return;
	}
	count = (size_t)m->rows * (size_t)m->cols;
	for (size_t k = 0; k < count; k++) {
		if (isfinite(m->a[k])) {
			lo = fmin(lo, m->a[k]);
			hi = fmax(hi, m->a[k]);
		}
		cw = fmax(cw, text_width(labels_number(num, m->a[k], utf8), -1));
	}
	for (i = 0; i < m->rows; i++) {
		char *s = fit_label(labels_row(a, which, i), utf8);
		lw = fmax(lw, text_width(s, -1));
		free(s);
	}
	for (j = 0; j < m->cols; j++) {
		char *s = fit_label(labels_col(a, which, j), utf8);
		cw = fmax(cw, text_width(s, -1));
		free(s);
	}
	if (extra != NULL && extra->prefix != NULL)
		fputs(extra->prefix, f);
	if (matrix_per_head(which) && a->heads > 1)
		fprintf(f, "%s (head %d)  %d %s %d\n", matrix_name(which), h, m->rows, utf8 ? "\u00d7" : "x", m->cols);
	else
		fprintf(f, "%s  %d %s %d\n", matrix_name(which), m->rows, utf8 ? "\u00d7" : "x", m->cols);
	put_padded(f, "", lw, 0);
	for (j = 0; j < m->cols; j++) {
		char *s = fit_label(labels_col(a, which, j), utf8);
		fputc(' ', f);
		put_padded(f, s, cw, 1);
		free(s);
		if (ref != NULL)
			fputc(' ', f);
	}
	if (extra != NULL && extra->sums) {
		fputc(' ', f);
		put_padded(f, utf8 ? "\u03a3" : "sum", cw, 1);
	}
	fputc('\n', f);
	if (extra != NULL)
		extra->ndiff = 0;
	for (i = 0; i < m->rows; i++) {
		char *s = fit_label(labels_row(a, which, i), utf8);
		put_padded(f, s, lw, 0);
		free(s);
		for (j = 0; j < m->cols; j++) {
			const double x = MAT_AT(*m, i, j);
			fputc(' ', f);
			const int bg = color ? heat_color(x, lo, hi, matrix_kind(which)->diverging) : -1;
			if (bg >= 0)
				fprintf(f, "\033[38;5;%d;48;5;%dm", themefile_text_on(bg), bg);
			put_padded(f, labels_number(num, x, utf8), cw, 1);
			if (bg >= 0)
				fputs("\033[0m", f);
			if (ref != NULL) {
				const int d = cell_differs(m, ref, i, j);
				fputc(d ? '*' : ' ', f);
				extra->ndiff += d;
			}
		}
		if (extra != NULL && extra->sums) {
			double sum = 0.0;
			for (j = 0; j < m->cols; j++)
				sum += MAT_AT(*m, i, j);
			fputc(' ', f);
			put_padded(f, labels_number(num, sum, utf8), cw, 1);
		}
		fputc('\n', f);
	}
}


/*
 * Lesson text: control characters escaped; spelled in ASCII on a terminal
 * that cannot show UTF-8 (a file or a pipe keeps the text as it is).
 */
static void put_escaped(FILE *f, const char *s, const char *keep, int utf8)
{
	char *a = utf8 || !isatty(fileno(f)) ? NULL : text_ascii(s);
	char *e = text_escape(a ? a : s, keep);
	if (e != NULL)
		fputs(e, f);
	free(e);
	free(a);
}

/* "mean … std …" under a table of scores (they are what scale.json is about). */
static void print_mean_std(FILE *f, const Attn *a, AttnMatrix which, int h)
{
	const Mat *m = attn_matrix(a, which, h);
	MatStats st;

	if (m == NULL || !(matrix_kind(which)->flags & MF_STATS))
		return;
	stats_matrix(m, &st);
	fprintf(f, "mean %.4g  std %.4g\n", st.mean, st.std);
}

/* A stage's matrix as the step shows it: weights with row sums, scores with mean and std. */
static void print_pane(FILE *f, const Attn *a, AttnMatrix which, int h, int color, int utf8, MatrixExtra *extra)
{
	extra->sums = (matrix_kind(which)->flags & MF_SUMS) != 0;
	print_matrix(f, a, which, h, color, utf8, extra);
	print_mean_std(f, a, which, h);
}

/* With compare on: the variant's matrix of the same name, cells that differ from the main one marked. */
static void print_compare(FILE *f, const Session *s, AttnMatrix which, int color, int utf8)
{
	const Attn *b = s->compare_attn;
	const int h = s->head < b->heads ? s->head : 0;
	const Mat *main_m = attn_matrix(s->attn, which, s->head), *m = attn_matrix(b, which, h);
	MatrixExtra extra = { NULL, main_m, 0, 0 };
	char *label, *prefix;

	if (m == NULL) {
		fprintf(f, "\n(the compare variant has no %s)\n", matrix_name(which));
		return;
	}
	label = text_escape(session_text(s, &s->lesson->compare_label), "");
	prefix = str_printf("%s: ", label && label[0] ? label : "compare");
	extra.prefix = prefix;
	fputc('\n', f);
	print_pane(f, b, which, h, color, utf8, &extra);
	fprintf(f, "%ld of %ld cells differ%s\n", extra.ndiff, (long)m->rows * m->cols,
	        main_m != NULL && (main_m->rows != m->rows || main_m->cols != m->cols) ? " (the shapes differ: compared where both have a cell)" : "");
	free(prefix);
	free(label);
}

void textfmt_step(FILE *f, const Session *s, int color, int utf8)
{
	const Step *step = session_step(s);
	const char *text = session_text(s, &step->text);
	AttnMatrix panes[STAGE_MAX_PANES];
	int k, count;

	fputs("== ", f);
	put_escaped(f, session_text(s, &s->lesson->title), "", utf8);
	fprintf(f, " == step %d/%d, ", s->step + 1, s->nwalk);
	if (session_layers(s) > 1)
		fprintf(f, "layer %d/%d, ", s->layer, session_layers(s));
	fprintf(f, "stage: %s", stage_name(s->stage));
	if (s->attn->heads > 1)
		fprintf(f, ", head %d/%d", s->head, s->attn->heads);
	fputc('\n', f);
	if (text[0] == '\0')
		text = stage_blurb(s->stage, s->lang);
	put_escaped(f, text, "\n\t", utf8);
	fputc('\n', f);
	{
		char *map = stage_map(&s->attn->shape, s->stage, utf8);
		if (map != NULL)
			fprintf(f, "  block: %s\n", map);
		free(map);
	}
	fprintf(f, "  %s\n", stage_formula(&s->attn->shape, s->stage, utf8));
	count = attn_stage_matrices(s->attn, s->stage, panes);
	for (k = 0; k < count; k++) {
		if ((int)panes[k] == session_hidden_matrix(s)) {
			fprintf(f, "\n%s: hidden until you answer (answer VALUE, skip, hint)\n",
			        matrix_name(panes[k]));
			continue;
		}
		fputc('\n', f);
		{
			MatrixExtra extra = { NULL, NULL, 0, 0 };
			print_pane(f, s->attn, panes[k], s->head, color, utf8, &extra);
		}
		if (k == count - 1 && s->compare_on && s->compare_attn != NULL)
			print_compare(f, s, panes[k], color, utf8);
	}
	/* the parameter count, unless a question open here may be asking for it */
	if ((stage_kinds[s->stage].flags & SF_PARAMS) && !session_quiz_pending(s)) {
		char *params = labels_params(s->attn->lesson, utf8); /* the layer shown */
		if (params != NULL)
			fprintf(f, "\n%s\n", params);
		free(params);
	}
	if (step->has_quiz && s->quiz[s->step] == QUIZ_OPEN) {
		const Quiz *q = &step->quiz;
		fputs("\nQuestion: ", f);
		put_escaped(f, session_text(s, &q->question), "\n\t", utf8);
		fputc('\n', f);
		for (k = 0; k < q->nchoices; k++) {
			fprintf(f, "  %d) ", k + 1);
			put_escaped(f, session_text(s, &q->choices[k]), "", utf8);
			fputc('\n', f);
		}
	}
	if (s->step == s->nwalk - 1 && session_next_lesson(s) != NULL)
		fprintf(f, "\nFinished. Next lesson: load %s\n", session_next_lesson(s));
}
