/* lesson.h: a lesson file turned into checked, concrete numbers (format v1). */
#ifndef ATTNVIZ_LESSON_H
#define ATTNVIZ_LESSON_H

#include "catalog.h"
#include "matrix.h"
#include "text.h"

/* Documented limits (lessons/FORMAT.md): a lesson over one is refused by name. */
#define LESSON_MAX_TOKENS   4096        /* n and m */
#define LESSON_MAX_DIM      4096        /* d_model, d_src, h·d_k, h·d_v, d_out */
#define LESSON_MAX_HEADS    64
#define LESSON_MAX_NUMBERS  (1L << 27)  /* every stage matrix together */
#define LESSON_MAX_STEPS    1024
#define LESSON_MAX_BYTES    (64L << 20) /* a lesson file */

typedef enum Positional { POS_NONE, POS_SINUSOIDAL } Positional;
typedef enum ScoreKind { SCORE_DOT, SCORE_ADDITIVE } ScoreKind;
typedef enum ScaleKind { SCALE_SQRT_DK, SCALE_NONE, SCALE_VALUE } ScaleKind;
typedef enum MaskKind { MASK_NONE, MASK_CAUSAL, MASK_PADDING, MASK_MATRIX } MaskKind;

/* Where a step's focus or a quiz's numeric answer points: matrix[row][col] of a head. */
typedef struct CellRef {
	char matrix[16]; /* a matrix name (catalog.h: matrix_find) */
	int head;
	int row, col;
} CellRef;

/* A predict-then-check question attached to a step. */
typedef struct Quiz {
	Text question;
	int nchoices;       /* 0 for a numeric answer */
	Text *choices;      /* nchoices, owned */
	int answer_choice;  /* index into choices when nchoices > 0 */
	CellRef answer_cell;/* when nchoices == 0: the number is read from the computation */
	double tolerance;   /* numeric answers: |given − actual| ≤ tolerance (default 0.01) */
	Text hint;
} Quiz;

typedef struct Step {
	Stage stage;
	int head;          /* 0-based; default 0 */
	Text text;
	int has_focus;
	CellRef focus;
	int has_quiz;
	Quiz quiz;
	int compare;       /* -1: leave the comparison view as it is; 0: hide it; 1: show it */
} Step;

/*
 * A lesson after loading: every matrix concrete (generated ones filled in),
 * every shape checked against every other. Nothing here is derived from the
 * computation; attention.h computes the stages from it.
 *
 *   n        query tokens (rows of X)
 *   m        key/value tokens: n, or the rows of source.X for cross-attention
 *   d_model  columns of X;  d_src columns of the source (d_model without one)
 *   h        heads;  d_k = W_q.cols / h;  d_v = W_v.cols / h
 */
typedef struct Lesson {
	char *path;          /* as given to lesson_load; owned; "(built-in)" for the default */
	Text title, summary;
	int n, m, d_model, d_src, heads, d_k, d_v, d_out;

	char **tokens;        /* n labels, owned */
	char **source_tokens; /* m labels when has_source, else NULL */
	Mat input;            /* n × d_model: X as written or generated, before PE */
	int has_source;
	Mat source_input;     /* m × d_src */
	Positional positional;

	Mat W_q;   /* d_model × h·d_k */
	Mat W_k;   /* d_src × h·d_k */
	Mat W_v;   /* d_src × h·d_v */
	Mat W_o;   /* h·d_v × d_out, empty when absent (then output = concat) */
	ScoreKind score;
	Mat w_e;   /* 1 × h·d_k for additive scores, else empty */

	ScaleKind scale;
	double scale_value;   /* the factor when SCALE_VALUE */
	int scale_explicit;   /* 1 when the file said "scale" */

	MaskKind mask;
	Mat mask_matrix;      /* n × m of 0/1 for MASK_MATRIX; 1 × m for MASK_PADDING; else empty */
	int mask_fill_inf;    /* 1: masked cells become −∞ (default) */
	double mask_fill;     /* the number when !mask_fill_inf */

	int nsteps;
	Step *steps;          /* owned; 0 steps means the default walk */

	/* "compare": the same lesson with some keys overridden (issue: curriculum). */
	struct Lesson *compare;
	Text compare_label;
} Lesson;

/*
 * Load and check a lesson. On success returns a new lesson; on failure
 * returns NULL and sets *err to a heap string naming the file and the
 * place ("FILE:LINE:COL: …" for JSON syntax, "FILE: W_q[2]: …" for content),
 * which the caller prints and frees. Warnings (unknown keys, a missing
 * language) are appended to *warn as lines (may be NULL on return).
 * lesson_load_string parses a buffer; name is used in messages.
 */
Lesson *lesson_load(const char *path, char **err, char **warn);
Lesson *lesson_load_string(const char *name, const char *buf, size_t len, char **err, char **warn);
void lesson_free(Lesson *l);
/* Deep copy (for edits that may be refused); NULL when out of memory. */
Lesson *lesson_clone(const Lesson *l);

/*
 * How many numbers every matrix of the computation holds together, the count
 * LESSON_MAX_NUMBERS limits: input and X, source and S, Q, K, V, five
 * per-head matrices (scores, scaled, masked, weights: n × m; weighted:
 * n × d_v), concat, output and the n × m visibility of the mask. A double,
 * so that an absurd lesson cannot overflow the count itself.
 */
double lesson_count_numbers(int n, int m, int d_model, int d_src, int heads, int d_k, int d_v, int d_out);

/* 1 when the stage has something to show in this lesson (no positional stage without PE, …). */
int lesson_stage_present(const Lesson *l, Stage s);
/* The lesson's sizes and features, for the catalogue's shape and presence rules. */
void lesson_shape(const Lesson *l, LessonShape *out);
/* A matrix the lesson gives (input, source_input, W_*, w_e: MF_GIVEN), or NULL for computed ones. */
Mat *lesson_matrix(Lesson *l, AttnMatrix which);

/*
 * Re-check a lesson after an edit (heads changed, mask changed, …): the same
 * shape rules as loading. Returns 0, or -1 with *err set (heap string).
 */
int lesson_validate(const Lesson *l, char **err);

/*
 * The bilingual check of `--check --strict`: every non-empty text of l
 * (title, summary, step texts, quiz questions, choices and hints, the
 * compare label) against every language in langs (NULL-terminated, e.g.
 * {"en", "zh", NULL}). Appends one line per missing language to *report
 * ("FILE: steps[3].text: no \"zh\" text\n"; *report may be NULL before and
 * after; the caller frees it). Returns the number of texts missing one.
 */
int lesson_check_languages(const Lesson *l, const char *const *langs, char **report);

#endif
