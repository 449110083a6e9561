/*
 * export_internal.h: what the files of the export share, and nothing else
 * includes. export.c holds the core (names, what a target shows, the panes of
 * a figure, dispatch); export_svg.c, export_tex.c and export_text.c (CSV,
 * Markdown, JSON) each render one or more formats from it. The public
 * interface is out/export.h.
 */
#ifndef ATTNVIZ_EXPORT_INTERNAL_H
#define ATTNVIZ_EXPORT_INTERNAL_H

#include <stddef.h>

#include "out/export.h"
#include "base/strbuf.h"

/* The most panes of one figure: a stage's, and one per head beside concat. */
#define EX_MAX_PANES (STAGE_MAX_PANES + LESSON_MAX_HEADS)

/*
 * One pane of a figure: a matrix of the lesson cut as the stage table says
 * (one head's columns, transposed), with its own copy of the cells shown.
 */
typedef struct ExPane {
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
	int zh;                /* its words (the legend's, the note's) in Chinese */
	char scale_note[160];  /* the legend's scale in words: 0–1, shared with which panes, or its own ("": none) */
	int rstep, cstep;      /* heatmap: a label every rstep rows, every cstep columns */
	int label_w, cell_w, cell_h; /* pixels */
	int width, height;
	int x, y;              /* where it goes */
} ExPane;

/* ---- export.c: the core */

/* The string built in b, or NULL with *err set when building it ran out of memory (its string then freed). */
char *ex_buf_finish(StrBuf *b, char **err);
/* The matrices of t that exist in a, in order; returns the count (0: nothing to show). */
int ex_target_panes(const Attn *a, const ExportTarget *t, AttnMatrix out[STAGE_MAX_PANES]);
/* The formula of the target: its stage's, or the stage that computes the matrix; "" for given ones. */
const char *ex_target_formula(const Attn *a, const ExportTarget *t, int utf8);
/* The session's language, "en" without one. */
const char *ex_lang_of(const Session *s);
/* "stage softmax, head 1" / "weights, head 1" / "W_q": what the export shows, for titles (after ex_place_prefix). */
void ex_target_title(char *buf, size_t size, const Session *s, const Attn *a, const ExportTarget *t);
/*
 * Where the figure stands in a lesson of several layers, as the stage line
 * says it, and a dash: "layer 0/2 · encoder · self-attention — "; "" with
 * one layer or without a session (s NULL).
 */
void ex_place_prefix(char *buf, size_t size, const Session *s);
/*
 * Where the stage exported stands in its block, as the screen's map shows it
 * (session_stage_map, the stage in brackets): "block: x → [N1] → attention → …"
 * ("->" without utf8); heap string, NULL for a lesson without a block or without a session.
 */
char *ex_block_map(const Attn *a, const Session *s, const ExportTarget *t, int utf8);
/* The lesson's title in the session's language (the session's lesson: an encoder layer has none of its own). */
const char *ex_lesson_title(const Attn *a, const Session *s);
/* Lesson text as every export shows it (text_escape keeping newline and tab): heap string, NULL when out of memory. */
char *ex_shown(const char *s);
/* A number as figures show it: prec decimals, or (prec < 0) as the screen does; −∞ with a real minus. */
char *ex_fig_number(char buf[32], double x, int prec);
/* "Kᵀ (head 1)", "weights (head 0)", "K (kv head 0)", "X". */
void ex_fig_pane_name(char *buf, size_t size, const Attn *a, const ExPane *p);
/* The label of row (along_rows) or column i of the pane, as the matrix's own labels: heap string. */
char *ex_fig_label(const Attn *a, const ExPane *p, int along_rows, int i);
/* Frees the cells of n panes. */
void ex_fig_panes_free(ExPane *p, int n);
/* The panes of target t as every format draws them; returns the count (0 when out of memory or nothing is shown). */
int ex_fig_panes(const Attn *a, const Session *s, const ExportTarget *t, ExPane out[EX_MAX_PANES]);
/* Bytes of the UTF-8 character at s, left bytes there (1 for a stray byte). */
size_t ex_char_len(const char *s, size_t left);

/* ---- the formats, called by export_render once the target is checked; each returns a heap string or NULL with *err */

/* export_svg.c */
char *ex_render_svg(const Attn *a, const Session *s, const ExportTarget *t, const ThemeFile *th, char **err);
/* export_text.c */
char *ex_render_csv(const Attn *a, const ExportTarget *t, char **err);
char *ex_render_md(const Attn *a, const Session *s, const ExportTarget *t, char **err);
char *ex_render_json(const Attn *a, const ExportTarget *t, char **err);
/* export_tex.c */
char *ex_render_tex(const Attn *a, const Session *s, const ExportTarget *t, char **err);

#endif
