/* catalog.h: the stages and matrices of attention as data — names, shapes, kinds.
 *
 * The bottom of the house: the loader (lesson.c), the engine (attention.c)
 * and every view read these two tables, and nothing here computes. A new
 * stage is an entry in stage_kinds[] (what it is called, when it exists,
 * what it shows, its formula and blurb) plus its kernel (attention.c:
 * stage_kernel[]) and its explain functions (explain.c); a new matrix is an
 * entry in matrix_kinds[]. No view switches on a stage or a matrix.
 */
#ifndef ATTNVIZ_CATALOG_H
#define ATTNVIZ_CATALOG_H

/* The canonical stages, in the order they are computed. */
typedef enum Stage {
	STAGE_INPUT,
	STAGE_POSITIONAL,
	STAGE_PROJECT,
	STAGE_SPLIT,
	STAGE_SCORES,
	STAGE_SCALE,
	STAGE_MASK,
	STAGE_SOFTMAX,
	STAGE_WEIGHTED,
	STAGE_CONCAT,
	STAGE_OUTPUT,
	STAGE_COUNT
} Stage;

/* Every matrix a learner can name (`show`, `explain`, `focus`, quiz cells, `--dump`). */
typedef enum AttnMatrix {
	AM_INPUT, AM_PE, AM_X, AM_SOURCE_INPUT, AM_PE_SRC, AM_S,
	AM_W_Q, AM_W_K, AM_W_V, AM_W_O, AM_W_E,
	AM_Q, AM_K, AM_V,
	AM_SCORES, AM_SCALED, AM_MASKED, AM_WEIGHTS, AM_WEIGHTED,
	AM_CONCAT, AM_OUTPUT,
	AM_COUNT
} AttnMatrix;

/*
 * What a lesson has, as far as the tables care: a stage or a matrix that
 * "requires" a feature exists only in lessons that have it.
 */
enum {
	FEAT_POSITIONAL = 1u << 0, /* "positional": "sinusoidal" */
	FEAT_MULTIHEAD  = 1u << 1, /* more than one head */
	FEAT_MASK       = 1u << 2, /* any mask */
	FEAT_WO         = 1u << 3, /* an output projection W_o */
	FEAT_SOURCE     = 1u << 4, /* cross-attention: keys and values from a source */
	FEAT_ADDITIVE   = 1u << 5, /* additive (Bahdanau) scores */
	FEAT_COUNT      = 6
};

/* The sizes shapes are written in (lessons/FORMAT.md's legend). */
typedef enum Dim {
	DIM_ONE,     /* 1 */
	DIM_N,       /* query tokens */
	DIM_M,       /* key/value tokens */
	DIM_D_MODEL, /* columns of X */
	DIM_D_SRC,   /* columns of the source S */
	DIM_HDK,     /* h·d_k: all heads' query/key columns */
	DIM_HDV,     /* h·d_v */
	DIM_DK,      /* one head's query/key width */
	DIM_DV,      /* one head's value width */
	DIM_D_OUT,   /* columns of the output */
	DIM_COUNT
} Dim;

/* A lesson's sizes and features, which is all the shapes and presence rules need. */
typedef struct LessonShape {
	int dim[DIM_COUNT];
	int heads;
	unsigned features; /* FEAT_* bits */
} LessonShape;

/* What labels a matrix's rows or columns: indices, the query tokens, or the key (source) tokens. */
typedef enum Axis { AXIS_INDEX, AXIS_QUERY, AXIS_KEY } Axis;

enum {
	MF_PER_HEAD = 1u << 0, /* one matrix per head (scores … weighted) */
	MF_GIVEN    = 1u << 1, /* written in the lesson (inputs, weights), not computed */
	MF_PARAM    = 1u << 2, /* a learned weight */
	MF_SUMS     = 1u << 3, /* rows are distributions: views add a Σ column */
	MF_STATS    = 1u << 4, /* score-like: views give its mean and standard deviation */
	MF_MASKED   = 1u << 5, /* query × key cells the mask can hide (drawn as masked) */
};

typedef struct MatrixKind {
	const char *name;   /* as the learner types it */
	Dim rows, cols;
	Dim head_cols;      /* DIM_DK or DIM_DV: head h owns columns [h·w, (h+1)·w); DIM_ONE: not cut */
	unsigned flags;     /* MF_* */
	unsigned requires;  /* FEAT_* bits the lesson must have */
	Stage made_by;      /* the stage that computes it (STAGE_COUNT: given) … */
	Stage made_else;    /* … or, when that stage is absent, this one (STAGE_COUNT: none) */
	Axis row_axis, col_axis;
	int diverging;      /* colours: 1 diverging around 0 (scores, values), 0 sequential (weights) */
	const char *meaning;/* one line, for `help` and `show` */
} MatrixKind;

/* One pane of a stage: a matrix, when it is shown, how it is cut. */
enum {
	PANE_HEAD_COLS = 1u << 0, /* with several heads, only the current head's columns */
	PANE_TRANSPOSE = 1u << 1, /* drawn transposed (Kᵀ beside Q) */
	PANE_EACH_HEAD = 1u << 2, /* one pane per head, each its head's columns */
};

typedef struct StagePane {
	AttnMatrix matrix;
	unsigned requires;   /* FEAT_* bits */
	unsigned flags;      /* PANE_* */
} StagePane;

/* A stage's formula; the first variant whose conditions hold is the one shown. */
typedef struct StageFormula {
	unsigned when, unless; /* FEAT_* bits that must be set / clear */
	const char *utf8, *ascii;
} StageFormula;

enum {
	SF_PARAMS = 1u << 0, /* the stage where the learned parameters are used: views give their count */
};

#define STAGE_MAX_PANES 8
#define STAGE_MAX_FORMULAS 3

typedef struct StageKind {
	const char *name;
	unsigned requires;       /* FEAT_* bits */
	const char *absent;      /* why a lesson does not have it: "it has no mask" */
	Stage instead;           /* shown when the stage is absent (STAGE_COUNT: none) */
	unsigned flags;          /* SF_* */
	StagePane panes[STAGE_MAX_PANES]; /* operands, then the result (the last one) */
	int npanes;
	StageFormula formula[STAGE_MAX_FORMULAS];
	const char *what;        /* lessons/FORMAT.md's "what it shows" */
	const char *blurb_en, *blurb_zh; /* a default line of narration */
} StageKind;

extern const StageKind stage_kinds[STAGE_COUNT];
extern const MatrixKind matrix_kinds[AM_COUNT];

/* "input", "positional", …; NULL out of range. */
const char *stage_name(Stage s);
/* The stage of that name (exact, then ignoring case), or -1. */
int stage_find(const char *name);
/* 1 when a lesson of this shape has the stage. */
int stage_present(const LessonShape *sh, Stage s);
/* The stage shown for s in this lesson: s, or what stands in for it when absent. */
Stage stage_shown(const LessonShape *sh, Stage s);
/* The stage's formula for this lesson (never NULL). */
const char *stage_formula(const LessonShape *sh, Stage s, int utf8);
/* The stage's default narration in "en" or "zh". */
const char *stage_blurb(Stage s, const char *lang);
/*
 * The panes a stage shows in this lesson, in order: operands, then its
 * result (the last one: what a question on the stage hides). Returns the count.
 */
int stage_panes(const LessonShape *sh, Stage s, StagePane out[STAGE_MAX_PANES]);

/* "input", "PE", …, "output"; NULL out of range. */
const char *matrix_name(AttnMatrix m);
/* By exact name, then ignoring case; -1 when unknown. */
int matrix_find(const char *name);
const MatrixKind *matrix_kind(AttnMatrix m);
/* 1 when the lesson has the matrix (NULL *why), else 0 and why ("it has no W_o"). */
int matrix_present(const LessonShape *sh, AttnMatrix m, const char **why);
/* 1 for the per-head matrices (scores … weighted). */
int matrix_per_head(AttnMatrix m);
/* 1 for the matrices a learner may edit with `set`: the given ones (inputs, weights). */
int matrix_editable(AttnMatrix m);
/* Its rows and columns in this lesson (as if present). */
void matrix_shape(const LessonShape *sh, AttnMatrix m, int *rows, int *cols);
/* The stage that computes m in this lesson, or -1 for given matrices. */
int matrix_stage(const LessonShape *sh, AttnMatrix m);
/* Why a lesson lacks a feature: "it has no mask" (the first missing bit of feat). */
const char *feature_absent(unsigned feat);

#endif
