/* export.h: a matrix or a whole stage as SVG, CSV, Markdown, TeX or JSON (`export`, `--export`). */
#ifndef ATTNVIZ_EXPORT_H
#define ATTNVIZ_EXPORT_H

#include "app/session.h"
#include "out/themefile.h"

typedef enum ExportFormat {
	EXPORT_SVG,   /* a labelled heatmap figure: the stage's operands and result side by side */
	EXPORT_CSV,   /* one matrix: a header row of column labels, then label, numbers (%.17g; −∞ an empty field) */
	EXPORT_MD,    /* Markdown tables of the stage, with its formula and narration */
	EXPORT_TEX,   /* a document (pdflatex; xelatex with xeCJK for Chinese): the formula in math, a bmatrix per pane;
	               * with standalone a figure cropped to its content, to include in a paper or beamer slides */
	EXPORT_JSON,  /* the stage's slice of --dump: stage, head, formula, each matrix by name */
	EXPORT_FORMAT_COUNT
} ExportFormat;

/* "svg", "csv", "md", "tex", "json"; NULL when out of range. */
const char *export_format_name(ExportFormat f);
/* By name (case-insensitive; "markdown" and "latex" too); -1 when unknown. */
int export_format_find(const char *name);

/* What to export: a whole stage, or one matrix; per-head matrices use head. */
/* The most cells of one matrix written as numbers in an svg, md or tex export (--numbers on). */
#define EXPORT_MAX_CELLS 65536

/*
 * Numbers in the cells (`--numbers`): auto draws them up to HEAT_NUMBERS_SIDE
 * rows and columns (inspect/heatmap.h: the terminal's zoom has the same rule)
 * and a matrix larger than that as a heatmap without them
 * (cells EXPORT_HEAT_CELL pixels; past EXPORT_HEAT_SIDE cells a side, each
 * drawn cell the strongest (largest |x|) of a block, the reduction said under the pane); md and
 * tex then say where the numbers are instead of a table.
 */
typedef enum ExportNumbers { EXPORT_NUMBERS_AUTO, EXPORT_NUMBERS_ON, EXPORT_NUMBERS_OFF, EXPORT_NUMBERS_COUNT } ExportNumbers;
#define EXPORT_HEAT_CELL 10
#define EXPORT_HEAT_SIDE 48

/* "auto", "on", "off"; -1 when unknown. */
int export_numbers_find(const char *name);

/* The shape of slide an SVG figure's panes wrap to fit (`--aspect`). */
typedef enum ExportAspect { EXPORT_ASPECT_16_9, EXPORT_ASPECT_4_3, EXPORT_ASPECT_WIDE, EXPORT_ASPECT_COUNT } ExportAspect;

typedef struct ExportTarget {
	int whole_stage;     /* 1: stage (its panes as the stage table cuts them); 0: matrix */
	Stage stage;
	AttnMatrix matrix;
	int head;            /* 0-based */
	/* How; export_target_parse sets the defaults. */
	int precision;       /* decimals of the numbers (svg, md, tex); -1: as the screen shows them */
	int scale_per_pane;  /* svg: 1: a colour scale per pane; 0: one across the panes of one meaning (probabilities: 0–1 always) */
	ExportAspect aspect; /* svg: the panes wrap into rows nearest this shape (wide: one row) */
	ExportNumbers numbers; /* svg, md, tex: numbers in the cells, or a heatmap (auto: by size) */
	int standalone;      /* tex: a \documentclass{standalone} figure, for \includegraphics in a paper or slides (--standalone) */
	int has_hidden;      /* svg: 1: the panes of `hidden` are drawn without their numbers (an open question's) */
	AttnMatrix hidden;
	unsigned char hides[AM_COUNT]; /* svg, with has_hidden: 1 for more matrices drawn so (a question's "hides", an equal one) */
} ExportTarget;

/* "16:9", "4:3", "wide"; -1 when unknown. */
int export_aspect_find(const char *name);

/*
 * Resolve a word to a target of lesson a: NULL means dflt_stage; else a stage
 * name present in the lesson, else a matrix name present in it. (Where the
 * names collide — "output" — the stage wins; "mask"/"masked" and
 * "scale"/"scaled" do not collide.) head must be a head of the lesson.
 * Returns 0, or -1 with *err ("unknown stage or matrix: x (…)").
 */
int export_target_parse(const Attn *a, const char *word, Stage dflt_stage, int head, ExportTarget *t, char **err);

/*
 * Render target t of a as format fmt: a NUL-terminated heap string (UTF-8,
 * with a final newline). s (may be NULL) gives the narration language and
 * the current step's narration (md) ; theme (NULL: the built-in default)
 * gives the SVG palettes. CSV of a whole stage writes the stage's result
 * (its last matrix). NULL with *err when the target is not in this lesson or
 * out of memory.
 */
char *export_render(const Attn *a, const Session *s, ExportFormat fmt, const ExportTarget *t,
                    const ThemeFile *theme, char **err);

/*
 * The lesson itself as JSON, beside the figures: lesson_write_json
 * (lesson/lesson_write.h), the lesson writer that lives beside its reader.
 */
char *export_lesson_json(const Lesson *l, char **err);

/*
 * The model view for slides (`--export svg --view model`): every walk layer ×
 * head of s as a small heatmap of its attention weights (colour 0–1; past
 * EXPORT_GRID_SIDE positions a side each drawn cell a block's mean weight, as
 * the TUI's model view), labelled "L0 H1" with its previous-token,
 * first-token, diagonal and induction scores (textfmt_head_rows; induction
 * "—" unless session_induction ran). theme NULL: the built-in default.
 * Heap string, NULL with *err out of memory.
 */
#define EXPORT_GRID_SIDE 24
char *export_model_grid(const Session *s, const ThemeFile *theme, char **err);

struct StrBuf;
/*
 * Lesson text as the exports write it (text_escape first), for other
 * writers of documents (handout.c): XML character data (& < > " ' escaped,
 * characters XML forbids dropped, a newline a space), and Markdown with its
 * markup backslash-escaped (oneline: a newline a space; else a new "> " line).
 */
void export_xml_puts(struct StrBuf *b, const char *text);
void export_md_puts(struct StrBuf *b, const char *text, int oneline);
/*
 * The same for TeX (export_tex.c), for the beamer deck (slides.c): text with
 * TeX's specials escaped and control characters a space; a stage's formula
 * (utf8 and ascii forms) a line in math for each of its parts, each scaled to
 * the line by \attnfit (which the document defines, as the export's does),
 * or as text where a character has no rule; export_tex_cjk: 1 when text has a
 * Chinese, Japanese or Korean character (xeCJK then).
 */
void export_tex_puts(struct StrBuf *b, const char *text);
void export_tex_formula(struct StrBuf *b, const char *utf8, const char *ascii);
int export_tex_cjk(const char *text);

#endif
