/* export_text.c: the exports that are text and tables: CSV (one matrix),
 * Markdown (the figure's panes as tables, with formula and narration) and JSON
 * (the stage's slice of --dump with the figure's panes). export.c dispatches to them. */
#include "out/export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "inspect/explain.h"
#include "inspect/labels.h"
#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/jsonwrite.h"
#include "out/export_internal.h"

/* ------------------------------------------------------------ CSV */

/*
 * A text cell (a label, never a number), escaped as the TUI shows it. A cell
 * that starts with = + - @ (or a tab or CR) is a formula to a spreadsheet
 * (=cmd|' /C calc'!A0): it gets a leading ' so that it stays text, as
 * spreadsheets expect. RFC 4180: a field with , " CR or LF is quoted, quotes doubled.
 */
static void csv_field(StrBuf *b, const char *text)
{
	char *s = ex_shown(text);
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

char *ex_render_csv(const Attn *a, const ExportTarget *t, char **err)
{
	AttnMatrix panes[STAGE_MAX_PANES];
	int n = ex_target_panes(a, t, panes), i, j;
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
	return ex_buf_finish(&b, err);
}

/* ------------------------------------------------------------ Markdown */

/* Backslash-escape what Markdown would read as markup; newlines become spaces (one-line cells). */
#define md_puts export_md_puts
void export_md_puts(StrBuf *b, const char *text, int oneline)
{
	char *e = ex_shown(text);
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
static void md_table(StrBuf *b, const Attn *a, const ExPane *p, int precision)
{
	char name[64], num[32];
	int i, j;

	ex_fig_pane_name(name, sizeof name, a, p);
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
		char *l = ex_fig_label(a, p, 0, j);
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
		char *l = ex_fig_label(a, p, 1, i);
		strbuf_puts(b, "| **");
		md_puts(b, l ? l : "", 1);
		strbuf_puts(b, "** |");
		free(l);
		for (j = 0; j < p->v.cols; j++)
			if (isnan(MAT_AT(p->v, i, j))) /* not reached at the step shown: blank */
				strbuf_puts(b, "  |");
			else
				strbuf_printf(b, " %s |", ex_fig_number(num, MAT_AT(p->v, i, j), precision));
		strbuf_puts(b, "\n");
	}
}

char *ex_render_md(const Attn *a, const Session *s, const ExportTarget *t, char **err)
{
	ExPane *pane = calloc(EX_MAX_PANES, sizeof *pane);
	int n = pane ? ex_fig_panes(a, s, t, pane) : 0, i;
	StrBuf b = { NULL, 0, 0, 0 };
	char what[256];
	const char *formula = ex_target_formula(a, t, 1);

	if (n == 0) {
		free(pane);
		*err = strdup("out of memory writing the export");
		return NULL;
	}
	ex_target_title(what, sizeof what, s, a, t);
	strbuf_puts(&b, "## ");
	md_puts(&b, ex_lesson_title(a, s), 1);
	strbuf_puts(&b, " \u2014 ");
	md_puts(&b, what, 1);
	strbuf_puts(&b, "\n");
	if (formula[0] != '\0') {
		strbuf_printf(&b, "\n*%s* ", _("Formula:"));
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
	/* the figure's panes (ex_fig_panes): one head's columns, Kᵀ, every head beside concat, as the SVG and TeX */
	for (i = 0; i < n; i++)
		md_table(&b, a, &pane[i], t->precision);
	ex_fig_panes_free(pane, n);
	free(pane);
	return ex_buf_finish(&b, err);
}

/* ------------------------------------------------------------ JSON */

/* A pane's labels along its rows or columns as a JSON array of strings. */
static cJSON *json_labels(const Attn *a, const ExPane *p, int along_rows)
{
	cJSON *arr = cJSON_CreateArray();
	const int n = along_rows ? p->v.rows : p->v.cols;

	for (int i = 0; arr != NULL && i < n; i++) {
		char *l = ex_fig_label(a, p, along_rows, i);
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
static cJSON *json_pane(const Attn *a, const ExPane *p)
{
	cJSON *o = cJSON_CreateObject();
	char name[64];

	ex_fig_pane_name(name, sizeof name, a, p);
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

char *ex_render_json(const Attn *a, const ExportTarget *t, char **err)
{
	ExPane *pane = calloc(EX_MAX_PANES, sizeof *pane);
	int n = pane ? ex_fig_panes(a, NULL, t, pane) : 0, i;
	cJSON *o = n > 0 ? cJSON_CreateObject() : NULL, *names, *panes;
	const char *formula = ex_target_formula(a, t, 1);
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
		const ExPane *p = &pane[i];
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
	ex_fig_panes_free(pane, n);
	free(pane);
	line = jw_print(o);
	if (line == NULL)
		*err = strdup("out of memory writing the export");
	return line;
oom:
	ex_fig_panes_free(pane, n);
	free(pane);
	cJSON_Delete(o);
	*err = strdup("out of memory writing the export");
	return NULL;
}
