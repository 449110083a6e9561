/*
 * lesson_keys.h: a variant's lesson keys as ONE table, read, checked, known,
 * written back and put in the fuzz dictionary from its rows (lesson_keys.c
 * walks every table; the files of src/lesson/ alone include this).
 *
 * A row, a LessonKey, is one JSON key: its name, its kind (what a file may
 * give there and what it means), where its value lives in the model (an
 * offsetof into ModelConfig, shared by every layer, or into LayerParams,
 * each layer's own), whether a layer of "layers" may give its own, and what
 * its error says. From the rows alone:
 *   - the loader knows the key: at the top level (an unknown key's "did you
 *     mean", a "compare"'s keys), as format 2's (a version-1 file is told to
 *     say "attnviz": 2) and, with LK_LAYER, as a layer's own, merged over the
 *     top level's (li_key_list);
 *   - reads it (li_keys_read_settings before the shapes are known; a matrix
 *     with li_keys_read_weights after, and its shape as the file gives it
 *     before, for the stages the steps are checked with: li_keys_given_shapes);
 *   - writes it back (li_keys_write_layer: a layer's own matrices;
 *     li_keys_write_model: the settings, and the false of a compare variant
 *     that drops its lesson's);
 *   - lists it in tests/fuzz/lesson.dict (tests/fuzz/lessondict.sh takes each
 *     row's `.name = "…"`: keep the name and its string on one line).
 *
 * To add a variant's keys: in its own file, src/lesson/lesson_<variant>.c,
 *
 *     const LessonKey li_<variant>_keys[] = {
 *             { .name = "my_cap", .kind = LK_CAP, .where = LK_TOP, .at = offsetof(ModelConfig, my_cap), .hint = "50" },
 *             { .name = NULL } };
 *
 * then one line X(li_<variant>_keys) in LESSON_KEY_TABLES below, and
 * `make fuzz-dict`. unit_keytable checks that every row is in the dictionary
 * and is written back. A key no kind fits is LK_CUSTOM: its own functions
 * beside the row (read with the settings, weights with the matrices, its
 * matrices' shapes before the steps, write for the model's value and
 * write_layer for a layer's own), everything else as above.
 */
#ifndef ATTNVIZ_LESSON_KEYS_H
#define ATTNVIZ_LESSON_KEYS_H

#include "model/model.h"
#include "base/jsonread.h"

#include <cjson/cJSON.h>
#include <stddef.h>

typedef enum LkKind {
	/* a number ≥ 0 (a double at .at in ModelConfig), or false for 0, "none"; written when it or the compared
	 * lesson's is above 0 (a compare variant turns its lesson's off with 0). Its error names .hint as the example
	 * (soft-capping's caps: "expected the cap c, a number > 0 (Gemma 2: HINT), or 0 or false for none") */
	LK_CAP,
	/* a matrix (a Mat at .at in LayerParams), .shape's rows × columns, .hint and .hint2 saying why (.hint NULL: a
	 * vector, a flat list of numbers); false or absent: none (a compare variant that drops its lesson's writes false) */
	LK_MATRIX,
	/* .read and .write do it all; the rest of the row (its name, where) as any other */
	LK_CUSTOM,
} LkKind;

enum {
	LK_TOP = 1,   /* a top-level key (every row: format 2's, a "compare" may change it) */
	LK_LAYER = 2, /* … and a layer of "layers" may give its own (merged over the top level's) */
};

/* Where a layer's own keys are written (LessonKey.write_layer). */
typedef enum LkAt {
	LK_AT_TOP,   /* the model's top level (its layer 0's own, and the settings only the top level gives) */
	LK_AT_STACK, /* an entry of the model's "layers" */
	LK_AT_PART,  /* an encoder–decoder's "self" or "cross" */
} LkAt;

typedef struct LessonKey {
	const char *name;    /* the JSON key; NULL ends a table */
	LkKind kind;
	unsigned where;      /* LK_TOP, or LK_TOP | LK_LAYER */
	size_t at;           /* LK_CAP: offsetof(ModelConfig, a double); LK_MATRIX: offsetof(LayerParams, a Mat) */
	const char *hint;    /* LK_CAP: the example cap; LK_MATRIX: why its rows (N_(), NULL: a vector) */
	const char *hint2;   /* LK_MATRIX: why its columns (N_()) */
	/* LK_MATRIX: its rows and columns from the model's sizes (ModelConfig.d_model, LayerParams.heads, d_v, …) */
	void (*shape)(const Model *m, int *rows, int *cols);
	/* LK_MATRIX, optional: its shape as the file gives it (v: its value, not false), before the sizes are
	 * known, from the matrices' own (cfg.input, lp.W_v: rows and columns only); leave rows 0 for none */
	void (*given)(const cJSON *v, const Model *m, int *rows, int *cols);
	/* optional: one more rule on a value that is valid (the path at the key): 0, or -1 with the error set; on an
	 * LK_MATRIX, checked before it is read, and 1 leaves it unread (b_gate when "W_gate" is false) */
	int (*check)(JrCtx *c, const cJSON *root, const cJSON *v);
	/* LK_CUSTOM: read the key of root (absent too: defaults) into m before the shapes: 0, or -1 with the error set
	 * (NULL: another row's reader reads it too, or its file reads it apart, as its comment says) */
	int (*read)(JrCtx *c, const cJSON *root, Model *m);
	/* LK_CUSTOM: write m's value into o (top: the lesson a compare variant m belongs to, or NULL), and false or 0
	 * when m drops top's: 0, or -1 (NULL: written apart, as its comment says) */
	int (*write)(cJSON *o, const Model *m, const Model *top);
	/* LK_CUSTOM, optional: read the key of root into m once the shapes are known (its matrices), in the tables'
	 * order with the LK_MATRIX rows: 0, or -1 with the error set */
	int (*weights)(JrCtx *c, const cJSON *root, Model *m);
	/* LK_CUSTOM, optional: the sizes of its matrices as the file gives them (v: its value, not false), before
	 * they are known, so that steps may point at their cells */
	void (*shapes)(const cJSON *v, Model *m);
	/* LK_CUSTOM, optional: a layer's own value, lp (a layer of m, or m's own), into o, written at `at` */
	int (*write_layer)(cJSON *o, const LayerParams *lp, const Model *m, LkAt at);
} LessonKey;

/* Every table, in the order they are read and written: one line a variant (its table in lesson_<variant>.c). */
#define LESSON_KEY_TABLES \
	X(li_gqa_keys) \
	X(li_rope_keys) \
	X(li_alibi_keys) \
	X(li_decode_keys) \
	X(li_qknorm_keys) \
	X(li_softcap_keys) \
	X(li_linear_keys) \
	X(li_lmhead_keys) \
	X(li_flash_keys) \
	X(li_sinks_keys) \
	X(li_gated_keys) \
	X(li_deltanet_keys) \
	X(li_gemma_keys) \
	X(li_block_keys) \
	X(li_mla_keys) \
	X(li_diff_keys) \
	X(li_dsa_keys)

#define X(t) extern const LessonKey t[];
LESSON_KEY_TABLES
#undef X

/* The tables, NULL-ended (for walking them all: the tests). */
extern const LessonKey *const li_key_tables[];

/* The most names li_key_list writes (a base list and the tables' rows, and the NULL). */
#define LK_MAX_NAMES 160

/* base (NULL-ended) and then every row's name with all the bits of `where`, into out (cap entries), NULL-ended:
 * the known keys for warn_unknown_keys and "did you mean". Returns the count (not the NULL). */
int li_key_list(const char *const *base, unsigned where, const char **out, int cap);
/* 1 when name is a row of a table with all the bits of where. */
int li_key_known(const char *name, unsigned where);

/* The settings (LK_CAP, LK_CUSTOM) of root into m, each table in order. 0, or -1 with the error set. */
int li_keys_read_settings(JrCtx *c, const cJSON *root, Model *m);
/* The matrices' (LK_MATRIX) shapes as root gives them, into m's matrices (rows and columns, no numbers), and the
 * LK_CUSTOM rows' shapes. */
void li_keys_given_shapes(const cJSON *root, Model *m);
/* The matrices (LK_MATRIX) of root, shaped by the model's sizes, and the LK_CUSTOM rows' weights, into m. 0, or
 * -1 with the error set. */
int li_keys_read_weights(JrCtx *c, const cJSON *root, Model *m);

/* Add item under key (a writer's helper); 0, or -1 (item freed) when it is NULL or cannot be added. */
int li_put(cJSON *o, const char *key, cJSON *item);
/* A norm's {"gamma", "beta"} (β only when it has one) under key (lesson_block.c). 0, or -1 out of memory. */
int li_put_norm(cJSON *o, const char *key, const Mat *gamma, const Mat *beta);

/* A layer's own keys, lp (a layer of m, or m's own, written at `at`), into o: the matrices (LK_MATRIX) it has and
 * each LK_CUSTOM row's write_layer. 0, or -1 out of memory. */
int li_keys_write_layer(cJSON *o, const LayerParams *lp, const Model *m, LkAt at);
/* A layer's own RoPE written back, "rope": {"base", "scaling"} (lesson_rope.c, beside its table). 0, or -1 out of memory. */
int li_write_layer_rope(cJSON *o, const LayerOwn *own);
/* The model's settings (LK_CAP, LK_CUSTOM) into o, and false for each matrix the compared lesson top has and m
 * drops (top NULL: m is the lesson itself). 0, or -1 out of memory. */
int li_keys_write_model(cJSON *o, const Model *m, const Model *top);

#endif
