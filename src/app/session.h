/* session.h: the learner's state — lesson, computation, place in the walk, quiz score.
 *
 * The TUI and the plain REPL both read a Session; only commands (cmd.c) and
 * the functions below write it. Views never write the model: they read the
 * Session and the Attn it owns, and keep their own view state (cursor, pane).
 */
#ifndef ATTNVIZ_SESSION_H
#define ATTNVIZ_SESSION_H

#include "base/prng.h"
#include "engine/attention.h"
#include "inspect/headscores.h"
#include "weights/importer.h"

/* What changed since the view last drew (bits of Session.dirty). */
enum {
	DIRTY_LESSON = 1 << 0, /* a new lesson: everything */
	DIRTY_VALUES = 1 << 1, /* numbers changed (an edit): panes, flash */
	DIRTY_PLACE  = 1 << 2, /* step, stage or head changed */
	DIRTY_STATUS = 1 << 3, /* the message line */
	DIRTY_LANG   = 1 << 4, /* narration language */
	DIRTY_QUIZ   = 1 << 5, /* a question was answered or skipped: its hidden pane is revealed */
	DIRTY_ALL    = 0xff
};

/* What a values edit kept of the lesson before it (session.c). */
typedef struct SessionKept SessionKept;

/* A quiz's state for one step of the walk. */
/* QUIZ_REVEALED: a demo's `quiz` line showed the class the answer (counted as the class's, not the learner's). */
typedef enum QuizState { QUIZ_OPEN, QUIZ_RIGHT, QUIZ_WRONG, QUIZ_SKIPPED, QUIZ_REVEALED } QuizState;

typedef struct Session {
	Lesson *lesson;       /* owned: the lesson with the learner's edits */
	Attn *model;          /* owned: computed from lesson (a chain of layers for a lesson with layers) */
	Attn *attn;           /* the layer shown: a link of model (every view reads this one) */
	/* A model's induction scores (session_induction): layer × head, ind_heads a layer; NULL until asked for. */
	HeadScore *induction;
	int ind_layers, ind_heads, ind_half; /* ind_half: the random tokens, each repeated once */
	/* generate's draws (session_set_seed): sampled from this stream when sampling, else greedy */
	int sampling;
	uint64_t seed;
	Prng rng;
	int layer;            /* its index, 0-based */
	char *source;         /* owned: the path loaded (for reload); NULL for the built-in lesson */

	/* The walk: the lesson's steps, or one step per present stage. */
	int nwalk;
	Step *walk;           /* owned copies (texts borrowed from lesson->steps when it has them) */
	int walk_owned_texts; /* 0: walk[i].text/quiz point into lesson->steps */
	int step;             /* index into walk */
	Stage stage;          /* stage shown: walk[step].stage, or where `goto` went */
	int head;             /* head shown, 0-based */

	/*
	 * Inside a stage that walks decode steps (SF_DECODE_STEPS) or tiles
	 * (SF_TILES): where n/p are; -1 elsewhere (a view then shows the
	 * finished matrices). nskipped: how many tiles the last move passed
	 * because the mask hides them, the first of them at (skipped_q, skipped_k).
	 */
	int dec_t;
	int tile_q, tile_k;
	int nskipped, skipped_q, skipped_k;

	QuizState *quiz;      /* nwalk entries */
	int quiz_right, quiz_asked;
	int quiz_class;       /* questions a demo revealed to the class (QUIZ_REVEALED): not in quiz_asked */
	int skip_asked;       /* step + 1 where n was asked to skip the open question (session_next_asking), else 0 */

	char lang[8];         /* "en" or "zh" */

	/*
	 * The lesson's "compare" variant, computed beside it (NULL without one):
	 * compare_attn is computed from lesson->compare; edits apply to both.
	 * compare_on: views show the variant beside the main computation, with
	 * the cells that differ marked (the `compare on|off` command).
	 */
	Attn *compare_model;  /* owned */
	Attn *compare_attn;   /* its layer `layer` (or its last, when it has fewer) */
	int compare_on;

	/*
	 * The computation before the last edit, for flashing what changed (may
	 * be NULL), and what it reads of the lesson before: the whole lesson
	 * after an edit of a shape or a setting (prev_lesson), the matrix a
	 * values edit replaced after one of those (prev_kept).
	 */
	Lesson *prev_lesson;  /* owned */
	SessionKept *prev_kept; /* owned */
	Attn *prev_model;     /* owned */
	Attn *prev_attn;      /* its layer `layer` */

	unsigned dirty;
	int quit;
	int edited;           /* 1 once the learner changed the lesson (set, heads, train, …) since it was loaded */
} Session;

/*
 * Start a session on a loaded lesson (takes ownership of l; source may be NULL).
 * Returns 0, or -1 with *err set.
 */
int session_init(Session *s, Lesson *l, const char *source, char **err);
void session_free(Session *s);
/*
 * The learner is reading (the full-screen view's screen is out, the plain
 * REPL waits at its prompt): an edit's gradients, which an edit leaves for
 * their first reader so that its forward pass shows at once, are made, and
 * the layer shown (and its compare variant) get the memory their derived
 * matrices will be made in, when it is at most SESSION_RESERVE_NUMBERS
 * numbers (attn_reserve_derived). Cheap once done.
 */
#define SESSION_RESERVE_NUMBERS (1 << 22) /* n = m = 1024: 32 MiB */
void session_idle(Session *s);

/*
 * Load FILE or NAME (found in $ATTNVIZ_LESSONS, ./lessons, then the installed
 * share directory) and, only when it loads and computes, replace the session's
 * lesson. On failure the session is unchanged and *err says why.
 * *warn gets the loader's warnings (may be NULL). NULL loads the built-in lesson.
 */
int session_load(Session *s, const char *file_or_name, char **err, char **warn);
/* The built-in default lesson (lessons/selfattn.json, compiled in). */
Lesson *session_default_lesson(char **err);
/* Resolve a lesson name to a path (heap string), or NULL with *err. */
char *session_find_lesson(const char *name, char **err);

/* The lesson names of lessons/README.md in teaching order, NULL-terminated. */
extern const char *const session_lesson_order[];
/*
 * The name of the lesson after this one in the teaching order (the built-in
 * lesson is selfattn), or NULL after the last one or for a file not in it.
 */
const char *session_next_lesson(const Session *s);
/* The session's lesson by name: its file's name without .json ("selfattn" built in), in buf. 0, or -1 when it does not fit. */
int session_lesson_name(const Session *s, char *buf, size_t size);
/* Where a lesson of that name stands in session_lesson_order, or -1 outside the course. */
int session_lesson_index(const char *name);

/*
 * Edits. Each says what it changes where it is made, and the session
 * changes that much:
 *
 *  - values: session_set_cell changes one number of a given matrix (an
 *    input, a weight). Only that matrix is copied (the old one kept, for
 *    the flash and to go back), and the computation is updated in place
 *    (attn_update), rerunning only the passes the matrix reaches; prev_*
 *    then holds copies of only the matrices that were remade, and none
 *    when those would be more than a tenth of the computation (a large
 *    lesson's W_q: no flash). A refused edit (the numbers overflow, in the
 *    lesson or its variant) puts back what was kept: the lesson and its
 *    computation are as they were, bit for bit. An encoder–decoder's edit
 *    is made the same way in the lesson (only the matrix copied), then the
 *    lesson computed afresh beside the computation before (kept in prev_*
 *    with the old matrix, for the flash), within the same limit as below.
 *  - shapes and settings: session_set_heads, session_set_mask,
 *    session_set_scale and session_train edit a copy of the lesson, which
 *    is checked (lesson_validate) and computed afresh beside the current
 *    one, and only then replaces it (the old computation is kept in prev_*
 *    for the flash). They are refused when the two together would hold
 *    more than LESSON_MAX_NUMBERS (the previous computation is dropped
 *    first).
 *
 * Every edit applies to the compare variant (lesson->compare) too, when
 * there is one; a refusal there refuses the edit ("compare: …").
 * compare_on is kept. The layer edited is the one shown (s->layer). On a
 * refused edit nothing changes and *err gives the reason. Each returns 0 or -1.
 */
/* MATRIX[row][col] = value (a given matrix: matrix_editable). */
int session_set_cell(Session *s, AttnMatrix which, int row, int col, double value, char **err);
/* heads: the layer shown split into that many heads; d_k and d_v follow from W_q's and W_v's columns. */
int session_set_heads(Session *s, int heads, char **err);
/* The mask of the layer shown: kind, with window (MASK_WINDOW) or the padding row (MASK_PADDING: 1 × m, copied). */
int session_set_mask(Session *s, MaskKind kind, int window, const Mat *padding, char **err);
/* The scale of every attention: 1/sqrt(d_k), none, or value (SCALE_VALUE). */
int session_set_scale(Session *s, ScaleKind kind, double value, char **err);
/* decode on|off: the lesson's tokens one at a time with a KV cache (the decode stage); refused with why where a cache cannot be kept. */
int session_set_decode(Session *s, int on, char **err);
/*
 * The LM head's next-token settings: the temperature (> 0), top_k (1 … vocab)
 * and the position whose next token is shown (0 … n − 1); a negative value
 * keeps that setting. Only the next stage is computed again.
 */
int session_set_next(Session *s, double temperature, int top_k, int row, char **err);
/* steps of gradient descent at rate lr on every weight and bias: losses (steps + 1) gets the loss before each and after the last. */
int session_train(Session *s, int steps, double lr, double *losses, char **err);
/*
 * Any edit of a shape or a setting, made by edit() on a copy of the lesson
 * (and then of its variant), computed afresh as above.
 */
typedef int (*SessionEdit)(Lesson *copy, void *arg, char **err);
int session_edit(Session *s, SessionEdit edit, void *arg, char **err);

/*
 * A copy of the learner's state to come back to: the lesson with its edits,
 * the place, the language and the comparison view. Demo scripts step back
 * by restoring the mark taken when they started and replaying.
 */
typedef struct SessionMark {
	Lesson *lesson;   /* owned clone */
	char *source;     /* owned, may be NULL */
	int step, head, compare_on, layer;
	int dec_t, tile_q, tile_k;
	Stage stage;
	char lang[8];
	int edited;
} SessionMark;

/* Returns 0, or -1 with *err (out of memory). */
int session_mark(const Session *s, SessionMark *m, char **err);
/* Replace *s by the marked state (the mark is kept). On failure s is unchanged. */
int session_restore(Session *s, const SessionMark *m, char **err);
void session_mark_free(SessionMark *m);

/* Moving. Each returns 0, or -1 with *err (e.g. "already at the last step"). */
int session_goto_step(Session *s, int step, char **err);
int session_next(Session *s, char **err);
int session_prev(Session *s, char **err);
/*
 * n as the learner presses it: with a question open on the step shown, the
 * first press moves nothing and *feedback asks ("n again to skip it"), the
 * second counts it as skipped (*feedback says the answer) and moves on.
 * Returns 0 moved, 1 asked (not moved), -1 with *err; *feedback is a heap
 * string or NULL.
 */
int session_next_asking(Session *s, char **feedback, char **err);
/* How many of the walk's questions are still open (neither answered nor skipped). */
int session_questions_open(const Session *s);
/*
 * The one rule for "finished" (the view, the plain REPL, the progress file):
 * the walk is at its last step and no question is open.
 */
int session_finished(const Session *s);
int session_goto_stage(Session *s, Stage st, char **err);
int session_set_head(Session *s, int head, char **err);
/*
 * The session numbers layers in the order of the walk (lesson_walk_stack):
 * an encoder–decoder's encoder layers first, then the lesson's own (a
 * decoder's links). Session.layer and the walk's steps count this way; a
 * learner names an encoder layer eN (layer e0) and the lesson's own by
 * their number (layer 0 is the decoder's first link).
 */
/* The computation of walk layer `layer` (a link of model, or of its encoder); NULL out of range. */
const Attn *session_walk_link(const Session *s, int layer);
/* Show walk layer `layer`, at the same stage where it has one. */
int session_set_layer(Session *s, int layer, char **err);
/* How many layers the walk has (1 without "layers"; the encoder's counted in). */
int session_layers(const Session *s);
/* A learner's name of walk layer `layer` ("e1", "3") in buf; -1 when there is none. */
int session_layer_word(const Session *s, int layer, char *buf, size_t size);
/* The walk layer a learner's word names ("e1", "3"), or -1 with *err saying which there are. */
int session_layer_lookup(const Session *s, const char *word, char **err);
/*
 * Where the learner is, for the stage line (heap, NULL with one layer):
 * "layer 1/3", or in an encoder–decoder "layer 1/2 · encoder · self-attention",
 * "layer 0/1 · decoder · cross-attention".
 */
char *session_place(const Session *s, int utf8);
/*
 * The map of the block shown, the current sublayer in brackets (heap, NULL
 * without a block): catalog.h's stage_map, or for a decoder layer its two
 * links together ("x → self-attn → + → N1 → [cross-attn] → + → N2 → FFN → + → N3").
 */
char *session_stage_map(const Session *s, int utf8);

/*
 * Decode steps and tiles. session_decode_steps: how many decode steps the
 * stage shown walks (0 when it walks none); session_cache_rows: the rows of
 * step t's KV cache (t + 1, or the window's size once it rolls);
 * session_tiles: the query and key blocks of the FlashAttention tiles (0
 * when the stage shown walks none).
 */
int session_decode_steps(const Session *s);
int session_cache_rows(const Session *s, int t);
int session_tiles(const Session *s, int *nqb, int *nkb);
/*
 * In the stage shown, decode step t (session_set_token) or tile (q, k)
 * (session_set_tile), as n/p would reach it, at the lesson's step that
 * starts there when it has one: `--export --token`, `--tile`.
 * Returns 0, or -1 with *err saying what the stage walks.
 */
int session_set_token(Session *s, int t, char **err);
int session_set_tile(Session *s, int q, int k, char **err);

/* How a view draws one cell (source row R, column C of matrix `which`) at the decode step or tile shown. */
typedef enum CellState {
	CELL_PLAIN,   /* as usual */
	CELL_UNSEEN,  /* not computed yet at this step or tile, or outside its row's cache: drawn blank */
	CELL_DROPPED, /* a cache row the rolling window has dropped: dimmed */
	CELL_NEW,     /* the new row t; the tile being processed (and the rows of V it reads): lit */
	CELL_BEFORE,  /* FlashAttention's state before this tile (the previous key block's column) */
	CELL_AFTER    /* its state after this tile */
} CellState;
CellState session_cell_state(const Session *s, const Attn *a, AttnMatrix which, int R, int C);
/* Its mark where there is no colour, as the plain REPL prints it: '#' new, '~' before, 'x' dropped, ' ' else. */
char session_cell_mark(CellState cs);

/* The step shown now (never NULL). */
const Step *session_step(const Session *s);
/* Text in the session's language, else English, else any. */
const char *session_text(const Session *s, const Text *t);
/*
 * What a screen reads of the lesson's text: on one that shows ASCII only (a
 * terminal whose locale is not UTF-8) Chinese cannot be spelled — every
 * character would be a "?" — so it reads the English; elsewhere (any UTF-8
 * terminal, a file, a pipe) session_text. The language likewise.
 */
const char *session_screen_text(const Session *s, const Text *t, int ascii_screen);
const char *session_screen_lang(const Session *s, int ascii_screen);
/*
 * The line views put before narration the lesson wrote, once the learner
 * edited the lesson (Session.edited): the text was written for the lesson
 * as loaded, and `reload` brings that back. NULL before any edit.
 */
const char *session_edited_note(const Session *s);
/* 1 when the step shown has a quiz still open: its revealing pane stays hidden. */
int session_quiz_pending(const Session *s);
/*
 * The matrix kept hidden while a quiz is open, or -1 when none is: the matrix
 * a numeric question asks about (whether or not this stage shows it: a
 * question about PE on the input stage hides PE, not the input), else, for a
 * question with choices, the stage's result. Every view hides this one (and
 * `show`, `explain`, `stats` refuse it).
 */
int session_hidden_matrix(const Session *s);
/*
 * 1 when an open question keeps matrix `which` (head `head`) hidden: the one
 * above, those its "hides" names, and any other holding the same numbers
 * (dconcat when it equals doutput). Views hide every such pane, its shape
 * and its cells (the status line too).
 */
int session_hides(const Session *s, int which, int head);
/*
 * What the step says once its question is answered, skipped or revealed
 * (its "then", in the session's language), or NULL: none, not yet, or
 * another stage shown. A step without a question shows its "then" at once.
 */
const char *session_then(const Session *s);
/*
 * How to answer the open question, in buf: "answer 1-4" for choices (keys
 * 1 to 4 in the full-screen view) or "answer VALUE" for a number; "" when no
 * question is open. Returns buf.
 */
const char *session_quiz_usage(const Session *s, char *buf, size_t size);

/*
 * Answer the open quiz of the current step. For choices, value is the
 * 1-based choice number (or its letter A, B, …); for numbers, a number.
 * Returns 1 for right, 0 for wrong, -1 with *err when nothing is open or the
 * answer is not understood. *feedback gets a heap string that says right or
 * wrong with the actual numbers.
 */
int session_answer(Session *s, const char *value, char **feedback, char **err);
/* Close the open quiz unanswered (counted as skipped): *feedback says "Skipped: the answer is …". */
int session_skip(Session *s, char **feedback, char **err);
/*
 * The same for a demo's `quiz` line revealing the answer to the class:
 * "Answer: …", and the question counts as the class's (QUIZ_REVEALED,
 * quiz_class), not as one the learner skipped.
 */
int session_reveal(Session *s, char **feedback, char **err);
/* "Answer: …" for the current step's question once a demo revealed it (a heap string), else NULL. */
char *session_revealed_answer(const Session *s);
/*
 * The number the current step's numeric question checks answers against
 * (its answer cell in the computation): 0, or -1 when the step asks no
 * numeric question or the cell is not in the lesson. For an answer key.
 */
int session_quiz_value(const Session *s, double *value);

/*
 * Real models (session_model.c; weights/importer.h makes them). Each
 * returns 0, or -1 with *err and the session as it was.
 *   session_open_model: DIR on TEXT (NULL: "The cat sat on the mat" through
 *     its tokenizer.json, or token id 0 without one), in place of the lesson.
 *   session_prompt: the model shown on another prompt, the learner kept at
 *     the same layer, step, stage and head.
 *   session_next_token: the greedy next token of the last position: the
 *     largest of the engine's logits stage's last row (the first of
 *     equals), and that logit.
 *   session_sample_token: a token drawn from the engine's next stage (the
 *     last position's softmax(logits / T) at the session's temperature),
 *     among its top k only (attn_top_entries, likeliest first; their
 *     probabilities renormalized): u = prng_uniform(&s->rng) · their sum,
 *     the first whose running sum passes u.
 *   session_generate: COUNT tokens appended one by one, each the next token
 *     of the prompt so far (greedy, or sampled when s->sampling), the whole
 *     model computed again; the next stage is moved to the last position
 *     first (nextrow). *made: the tokens appended, fewer than COUNT (and
 *     0 returned) when Ctrl-C stopped it between two tokens: those made are
 *     kept and computed (ttyguard_work_begin; a model the KV cache cannot
 *     take stops as its whole computation does, with an error, the tokens
 *     before the one computed kept).
 *   session_set_seed: sampling on (the stream seeded with seed:
 *     prng_seed) or off (greedy); it holds while the model is reprompted
 *     and generates, until another lesson or model is opened.
 */
int session_is_model(const Session *s);
/*
 * A lesson on a real model ("model": {"path", "prompt"}, lessons/FORMAT.md):
 * session_find_model: the folder REF names (heap; NULL when none): an
 *   absolute folder; a relative one from the lesson file's folder (file);
 *   a bare ORG/NAME in $ATTNVIZ_MODELS/ORG/NAME, then the Hugging Face
 *   cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub:
 *   models--ORG--NAME/snapshots/, the one refs/main names, else the newest,
 *   the larger name of equals); a bare NAME as paths_find_model (tiny-gpt2).
 * session_lesson_on_model: course (lesson_load of file, lesson_needs_model)
 *   on its model, imported on its prompt (lesson_on_model); course is
 *   consumed. NULL with *err ("FILE: model.path: …"); warnings appended.
 */
char *session_find_model(const char *ref, const char *file);
/* REF as given when it names something here, else session_find_model's folder (heap; NULL when neither). */
char *session_resolve_model(const char *ref);
Lesson *session_lesson_on_model(Lesson *course, const char *file, char **err, char **warn);
/* 1 when path is a model folder (a directory with a config.json): what session_load opens with session_load_model. */
int session_is_model_dir(const char *path);
/* DIR as session_open_model does; the folder shown again (reload): on the same token ids. */
int session_load_model(Session *s, const char *dir, char **err);
int session_open_model(Session *s, const char *dir, const char *text, char **err);
int session_prompt(Session *s, const ImportPrompt *p, char **err);
int session_next_token(const Session *s, long long *id, double *logit, char **err);
int session_sample_token(Session *s, long long *id, double *p, char **err);
int session_generate(Session *s, int count, int *made, char **err);
void session_set_seed(Session *s, int on, uint64_t seed);
/*
 * A model's induction scores (issue 22): the model run once on random
 * tokens repeated twice (headscore_repeat_ids: SESSION_INDUCTION_HALF
 * tokens, or fewer when the model has fewer positions, then the same again), each head's score kept in s->induction
 * (the run is not: the model is then computed on its prompt again, the
 * learner kept where they were). Nothing for a lesson, or when they are
 * kept already; the random tokens do not depend on the prompt, so a new
 * prompt keeps them. session_induction_score: layer's head h, or NULL.
 */
#define SESSION_INDUCTION_HALF 24
int session_induction(Session *s, char **err);
/*
 * The same scores of a model's lesson without a session (--dump: its own
 * computation follows): *out (lesson_layers(l) × *heads, heap; NULL for a
 * lesson), l put back on its prompt. 0, or -1 with *err.
 */
int session_model_induction(Lesson *l, HeadScore **out, int *heads, int *half, char **err);
const HeadScore *session_induction_score(const Session *s, int layer, int h);

#endif
