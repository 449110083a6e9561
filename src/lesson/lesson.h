/* lesson.h: a lesson file (lessons/FORMAT.md, formats 1 and 2) turned into a checked Lesson — the course (title, steps, quizzes, a compare variant) and the model it teaches (model/model.h: ModelConfig, LayerParams) — and what is asked of one. */
#ifndef ATTNVIZ_LESSON_H
#define ATTNVIZ_LESSON_H

#include "model/catalog.h"
#include "model/model.h"
#include "base/matrix.h"
#include "base/text.h"

/* Documented limits (lessons/FORMAT.md): a lesson over one is refused by name. */
#define LESSON_MAX_TOKENS   4096        /* n and m */
#define LESSON_MAX_DIM      4096        /* d_model, d_src, h·d_k, h·d_v, d_out */
#define LESSON_MAX_HEADS    64
#define LESSON_MAX_NUMBERS  (1L << 28)  /* a lesson's matrices, its computation and its compare variant's */
#define LESSON_DERIVED_MATRICES 4      /* n × m matrices of the derived stages made at once on request (attention.h) */
#define LESSON_MAX_ADDITIVE_TERMS (1L << 26) /* n·m·h·d_k: the tanh terms of additive scores */
#define LESSON_MAX_STEPS    1024
#define LESSON_MAX_BYTES    (64L << 20) /* a lesson file */
#define LESSON_MAX_LAYERS   16
#define LESSON_MAX_EXPERTS  64          /* a mixture of experts' experts */
#define LESSON_MAX_MASKS    8           /* masks in one list */
#define LESSON_MAX_HIDES    4           /* a quiz's "hides" */
#define LESSON_MAX_VOCAB    (1 << 20)   /* the LM head's vocabulary */
#define LESSON_MAX_TOP_K    100         /* the next token's entries shown ("top_k") */


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
	int nhides;         /* "hides": more matrices kept hidden until it is answered (lessons/FORMAT.md) */
	char hides[LESSON_MAX_HIDES][16];
} Quiz;

typedef struct Step {
	Stage stage;
	int layer;         /* 0-based; default 0: a layer of the encoder when encoder is 1, else of the lesson (a decoder's link) */
	int encoder;       /* "encoder": true: the step shows a layer of an encoder–decoder's encoder */
	int head;          /* 0-based; default 0 */
	Text text;         /* the narration; with a quiz, what is said before it is answered */
	Text then;         /* with a quiz: what is said once it is answered, skipped or revealed (lessons/FORMAT.md) */
	int has_focus;
	CellRef focus;
	int has_quiz;
	Quiz quiz;
	int compare;       /* -1: leave the comparison view as it is; 0: hide it; 1: show it */
	int t;             /* stage "decode": the generation step n/p start at (-1: step 0, or the last coming back) */
	int tile_q, tile_k; /* stage "flash": the tile n/p start at, by query and key block (-1: the first, or the last coming back) */
} Step;

/*
 * A lesson after loading: the course (title, narration, steps, quizzes, a
 * compare variant) and the model it teaches (model/model.h: a Model — the
 * settings every layer shares, cfg; its layers, or lp for a lesson that is
 * its own single layer; an encoder–decoder's encoder). Every matrix is
 * concrete (generated ones filled in), every shape checked against every
 * other. Nothing here is derived from the computation; attention.h computes
 * the stages from it.
 */
typedef struct Lesson {
	char *path;          /* as given to lesson_load; owned; "(built-in)" for the default */
	Text title, summary;
	int version;          /* the file's "attnviz": 1 or 2 */

	/*
	 * The model, by its own name (&l->model: what model_* functions take)
	 * or by its fields (l->cfg, l->lp, l->nlayers, l->layer, l->encoder):
	 * one storage. "layers" (version 2) are each layer's own heads, weights,
	 * biases and block, a key not given taken from the top level; "encoder"
	 * makes it an encoder–decoder (model.h, Model).
	 */
	union {
		Model model;
		struct {
			MODEL_FIELDS
		};
	};

	int nsteps;
	Step *steps;          /* owned; 0 steps means the default walk */

	/* "compare": the same lesson with some keys overridden (issue: curriculum). */
	struct Lesson *compare;
	Text compare_label;

	/*
	 * "model": {"path": …, "prompt": …} (lessons/FORMAT.md): a lesson that
	 * narrates a real model. lesson_load reads the reference (model_path as
	 * written, model_prompt) and keeps the file's text (model_src) without
	 * X or weights; a higher layer imports the model and puts the course on
	 * it (lesson_on_model), which checks the steps against the model's
	 * shapes; model_dir is then the folder the model was read from.
	 */
	char *model_path, *model_prompt, *model_src, *model_dir;
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
 * 1 when l is a lesson file's course waiting for its model ("model": l has
 * no computation yet; lesson_on_model gives it one).
 */
int lesson_needs_model(const Lesson *l);
/*
 * The course of a lesson on a real model put on the model imported from
 * it (model: a Lesson whose layers, tokens and LM head are complete, its
 * path the folder it came from): the steps are read now, checked against
 * the model's layers and shapes. Returns model, now carrying the course's
 * path, title, summary, steps and reference (course is freed), or NULL
 * with *err ("FILE: steps[2].layer: …"; model and course freed). Warnings
 * are appended to *warn as lesson_load does.
 */
Lesson *lesson_on_model(Lesson *course, Lesson *model, char **err, char **warn);
/* Frees n steps (a lesson's steps taken out of it) and the array. */
void lesson_free_steps(Step *steps, int n);

/*
 * How many numbers l and its computation hold (lessons/FORMAT.md, Limits):
 * its own matrices (X, the source, W_q, W_k, W_v, W_o, w_e, the mask) and
 * every matrix attn_compute makes (PE, X, PE_src, S, Q, K, V, five per-head
 * matrices, concat, output, the n × m visibility). A double, so that an
 * absurd lesson cannot overflow the count itself. lesson_budget_numbers adds
 * the compare variant's: the count LESSON_MAX_NUMBERS limits.
 */
double lesson_count_numbers(const Lesson *l);
double lesson_budget_numbers(const Lesson *l);

/* 1 when the stage has something to show in this lesson (no positional stage without PE, …). */
int lesson_stage_present(const Lesson *l, Stage s);
/* The lesson's sizes and features, for the catalogue's shape and presence rules. */
void lesson_shape(const Lesson *l, LessonShape *out);
/* The same of one layer as the engine computes it from the model: its settings c and its parameters p. */
void lesson_model_shape(const ModelConfig *c, const LayerParams *p, LessonShape *out);
double lesson_model_count_numbers(const ModelConfig *c, const LayerParams *p);
/* A matrix the lesson gives (input, source_input, W_*, w_e: MF_GIVEN), or NULL for computed ones. */
Mat *lesson_matrix(Lesson *l, AttnMatrix which);
/*
 * The given matrix `which` of model m: its own (cfg and lp) for i < 0 or a
 * model without layers, else layer i's (its parameters and own source;
 * NULL for a shared setting's). lesson_walk_matrix: the one walk layer k
 * shows, as an edit changes it (a layer's own, its stack's X, the lesson's
 * source), or NULL; a real model's layer weights kept in its file become its own doubles first (model.h: layer_params_own; NULL out of memory).
 */
Mat *lesson_model_given(Model *m, int i, AttnMatrix which);
Mat *lesson_walk_matrix(Lesson *l, int k, AttnMatrix which);
/* The same of a layer's settings c and parameters p (only read). */
const Mat *lesson_model_matrix(const ModelConfig *c, const LayerParams *p, AttnMatrix which);
/* 1 when the lesson names its key/value heads (it gave "kv_heads", or they are fewer than its heads): dumps and saves say so. */
int lesson_kv_named(const Lesson *l);

/* How many layers: nlayers, or 1 for a lesson that is its own layer. */
int lesson_layers(const Lesson *l);
/*
 * Layer i's own parameters (heads, weights, biases, block: l->lp for a
 * lesson without "layers" and for layer 0, the top level's, of one with
 * them: one copy), and the settings it keeps of its own (its d_model and
 * source, a link's mask: model_layer_config reads them; NULL for a lesson
 * without "layers"): what code outside lesson/ should use rather than reach
 * into a layer's struct. lesson_set_layers gives l n layers, each zeroed
 * (0, or -1 out of memory; l had none): what an importer fills in through
 * lesson_layer_params. The same of any Model: model.h (model_layer_params, …).
 */
LayerParams *lesson_layer_params(Lesson *l, int i);
const LayerParams *lesson_layer_params_const(const Lesson *l, int i);
LayerOwn *lesson_layer_own(Lesson *l, int i);
int lesson_set_layers(Lesson *l, int n);
/* The model a step's layer counts in: an encoder–decoder's encoder for a step with "encoder": true, else l's. */
const Model *lesson_step_stack(const Lesson *l, const Step *st);
/*
 * The layers in the order a learner walks them: an encoder–decoder's encoder
 * layers first (0 … E − 1), then the lesson's own (E on: a decoder's links).
 * lesson_walk_layers: how many; lesson_walk_encoder: E (0 without an encoder);
 * lesson_walk_stack: the model walk layer k counts in (l->encoder or l's),
 * with k's index in it in *i.
 */
int lesson_walk_layers(const Lesson *l);
int lesson_walk_encoder(const Lesson *l);
Model *lesson_walk_stack(Lesson *l, int k, int *i);

/*
 * 1 when the computation of l has the cell ref points at (the matrix is
 * present, and the head, row and column are inside it), judged from the
 * shapes alone: an edited lesson can be checked before it is computed.
 */
int lesson_cell_exists(const Model *m, int layer, const CellRef *ref);
/* The sizes and features of layer i as the engine computes it (positions on layer 0, the final norm on the last). */
void lesson_layer_shape(const Model *m, int i, LessonShape *out);

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
