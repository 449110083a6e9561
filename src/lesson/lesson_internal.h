/*
 * lesson_internal.h: what the files of src/lesson/ share, for them alone
 * (the rest of the program includes lesson.h).
 *
 *   lesson_read.c      the text parsed, the top-level keys, tokens, "compare",
 *                      and lesson_from_json, which runs the loading passes
 *   lesson_settings.c  version, mask, scalars; the tables' settings
 *                      (li_read_modern)
 *   lesson_block.c     version 2's biases, block (its table), norms, FFN, loss, "layers"
 *   lesson_encdec.c    an encoder–decoder's encoder and decoder links
 *   lesson_matrices.c  matrices: literal or generated, limits, filling in
 *   lesson_shapes.c    the shape rules, for loading and lesson_validate
 *   lesson_steps.c     texts, steps and quizzes
 *   lesson_keys.c      the walk over the keys' tables (lesson_keys.h), each table
 *                      in its variant's file: lesson_gqa.c, lesson_rope.c, lesson_alibi.c,
 *                      lesson_decode.c, lesson_qknorm.c, lesson_softcap.c,
 *                      lesson_linear.c, lesson_lmhead.c, lesson_flash.c,
 *                      lesson_sinks.c, lesson_gated.c, lesson_deltanet.c,
 *                      lesson_gemma.c, lesson_block.c, lesson_mla.c,
 *                      lesson_diff.c
 *   lesson.c           free, clone, layers and walk, masks, languages
 *   lesson_write.c     the other way: a Lesson written back as a lesson file
 *                      (lesson_write.h; it needs nothing from this header)
 */
#ifndef ATTNVIZ_LESSON_INTERNAL_H
#define ATTNVIZ_LESSON_INTERNAL_H

#include "lesson/lesson.h"
#include "model/catalog.h"
#define JSONREAD_SHORT_NAMES /* ctx_init, fail, got, …: the kit's jr_ functions */
#include "base/jsonread.h"
#include "lesson/lesson_keys.h" /* after jsonread.h: its short names */
#include "base/strbuf.h"
#include "base/i18n.h"

#include <cjson/cJSON.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* The loading context (jsonread.h) and what the loader adds to it     */
/* ------------------------------------------------------------------ */

/* What the loader carries beside the kit's context (Ctx.reader). */
typedef struct Stack {
	/* The layers read so far, each its model as read (the settings it was read with, its parameters) until the
	 * stack is whole: their shapes check steps that name a layer. */
	Model *layers;
	int nlayers;
	int stack_final;       /* the stack has a final norm (after its last layer) */
	double numbers_before; /* the lesson's count while its compare variant is read or checked */
	LinkPart part;         /* while a decoder link is read: PART_SELF or PART_CROSS (PART_LAYER otherwise) */
	int link_final;        /* … and it is the last link of a decoder with a final norm */
	int outer_compare;     /* while an encoder–decoder's link 0 is read: the whole lesson has a "compare" */
	const Model *encoder; /* while an encoder–decoder's links are read: its encoder (steps may show it) */
	const Model *model;   /* while a lesson on a real model's steps are read: the model (lesson_on_model) */
	/* While a stack's layers are counted before any is filled (li_lesson_with_layers): each layer is read as far
	 * as its shapes, and what it would hold is added here. */
	int count_only;
	int encoder_out;       /* while an encoder–decoder's encoder is read: its output feeds the cross-attention */
	double counted;        /* numbers (lesson_model_count_numbers) */
	double counted_terms;  /* additive scores' tanh terms, n·m·h·d_k */
} Stack;

static inline Stack *li_stack(Ctx *c)
{
	return c->reader;
}

#define MAX_SEED 9007199254740992.0 /* 2^53: every whole number up to here is exact in JSON */

typedef enum SrcKind { SRC_ABSENT, SRC_ROWS, SRC_FLAT, SRC_NORMAL, SRC_UNIFORM, SRC_IDENTITY } SrcKind;

typedef struct MatSrc {
	SrcKind kind;
	const cJSON *item;  /* the array (SRC_ROWS, SRC_FLAT) */
	char path[PATH_SIZE];
	int rows, cols;
	uint64_t seed;
	double a, b;        /* mean, std or low, high */
} MatSrc;

/* What a matrix's rows and columns stand for, for limit messages. */
typedef struct Limits {
	long max_rows;
	const char *rows_unit;  /* " tokens" or "" */
	const char *rows_name;  /* "LESSON_MAX_TOKENS" */
	long max_cols;
	const char *cols_name;
	int flat_ok;            /* a flat array of numbers is one row (w_e, padding) */
	int generator_ok;
	int zero_one;           /* every number must be 0 or 1 (masks) */
} Limits;

static const Limits LIM_TOKENS_DIM = { LESSON_MAX_TOKENS, " tokens", "LESSON_MAX_TOKENS",
                                       LESSON_MAX_DIM, "LESSON_MAX_DIM", 0, 1, 0 };
static const Limits LIM_DIM_DIM = { LESSON_MAX_DIM, "", "LESSON_MAX_DIM",
                                    LESSON_MAX_DIM, "LESSON_MAX_DIM", 0, 1, 0 };
static const Limits LIM_VECTOR = { 1, "", "", LESSON_MAX_DIM, "LESSON_MAX_DIM", 1, 1, 0 };
static const Limits LIM_MASK = { LESSON_MAX_TOKENS, " tokens", "LESSON_MAX_TOKENS",
                                 LESSON_MAX_TOKENS, "LESSON_MAX_TOKENS", 0, 0, 1 };
static const Limits LIM_PADDING = { 1, "", "", LESSON_MAX_TOKENS, "LESSON_MAX_TOKENS", 1, 0, 1 };

/*
 * What only a file being read has beside the model it fills: how many token
 * labels it gives (-1: generated ones). Every size is the model's own: its
 * matrices' rows and columns (a file's are set before their numbers are
 * read), checked by li_check_shapes, which writes n … d_out.
 */
typedef struct TokenCounts {
	int ntokens, nsource_tokens;
} TokenCounts;

/* One mask as read, before its numbers are filled in: a part of a list, or the lesson's only mask. */
typedef struct MaskSrc {
	MaskKind kind;
	int window;
	MatSrc ms;
} MaskSrc;

/*
 * The functions the files share. Each reads at the context's current path
 * and returns 0, or -1 (NULL) with c->err set (jsonread.h); the names begin
 * with li_ so that none is mistaken for the public API (lesson.h).
 */

/* lesson_read.c: the whole lesson */
/* the top-level keys a lesson may give beside the tables' (lesson_keys.h: li_key_list joins them) */
extern const char *const li_top_keys[];
/* An unknown top-level key of root warned about (with "did you mean"): li_top_keys and the tables' rows known. */
void li_warn_unknown_top(Ctx *c, const cJSON *root);
/* A parsed lesson object as a Lesson (a stack or an encoder–decoder when it says so); is_variant: a "compare". Its
 * layers and links are read as models (li_read_layer, lesson_block.c), not lessons. */
Lesson *li_lesson_from_json(Ctx *c, const cJSON *root, int is_variant);
/* One layer's model (a stack's layer, a decoder's link) read from its object merged over the top level's, into m (zeroed):
 * the settings it is read with and its parameters, nothing of the course. 0, or -1 (m holds what model_free frees). */
int li_read_layer(Ctx *c, const cJSON *root, Model *m);
/* "compare": the same lesson with some top-level keys replaced, read into l->compare. */
int li_read_compare(Ctx *c, const cJSON *root, Lesson *l);

/* lesson_settings.c: the attention's settings */
/* "attnviz": the format version, 1 or 2, into *version. */
int li_read_version(Ctx *c, const cJSON *root, int *version);
/* "mask": one mask, or a list of them, as parts whose numbers are filled in later (*nparts of them). */
int li_read_mask(Ctx *c, const cJSON *root, Model *l, MaskSrc *parts, int *nparts);
/* The settings every layer shares: the tables' (lesson_keys.h: RoPE, ALiBi, decode, QK-norm, soft-capping, …). */
int li_read_modern(Ctx *c, const cJSON *root, Model *l);
/* A layer's own "rope": NoPE, or its own base (lesson_rope.c). */
int li_read_layer_rope(Ctx *c, const cJSON *layer, const ModelConfig *top, LayerParams *lp, LayerOwn *own);
/* "positional", "score", "heads", "kv_heads", "scale" and "mask_fill". */
int li_read_scalars(Ctx *c, const cJSON *root, Model *l);

/* lesson_block.c: version 2's block, loss and layers */
/* "backward": {"target": n × d_out} or {"dOutput": n × d_out}, against the final output's shape. */
int li_read_backward(Ctx *c, const cJSON *root, Model *l);
/* Biases and the tables' matrices (the block's with its row, li_block_keys), once the attention's shapes are known. */
int li_read_v2_matrices(Ctx *c, const cJSON *root, Model *l);
/* Whether the lesson read now carries the LM head: a lesson without layers, or a stack's last layer. */
int li_lm_carrier(Ctx *c);
/* The LM head: "vocab", "unembed" (vocab × d_model), "ids", "logits_row" (the shapes known); nothing without "vocab". */
int li_read_lm_head(Ctx *c, const cJSON *root, Model *l);
/* The top-level "block": {"final_norm": {…}}: one more norm after the last layer. */
int li_read_final_norm(Ctx *c, const cJSON *root, Model *l);
/* Layer 0 of a stack from the top level, the lesson itself: its own settings copied (its parameters are the top level's
 * lp: model.h). 0, or -1 out of memory. */
int li_layer_own_from(Ctx *c, ModelLayer *dst, const Lesson *src);
/* … and from a layer's model as read: its parameters and own settings moved into dst (src keeps the rest to free). */
void li_layer_take(ModelLayer *dst, Model *src);
/* The numbers the stack will hold, over the limit: an error at "layers". */
int li_check_layers_limit(Ctx *c, const Lesson *top);
/* After a count_only reading of n layers: what they hold (with before) over LESSON_MAX_NUMBERS or
 * LESSON_MAX_ADDITIVE_TERMS is an error at "layers". */
int li_check_counted(Ctx *c, int n, double before);
/* "layers": each layer the lesson with its own keys over the top level's; the top level is layer 0. */
Lesson *li_lesson_with_layers(Ctx *c, const cJSON *root, const cJSON *layers, int is_variant);

/* lesson_encdec.c: the encoder–decoder */
/* "encoder" read as a stack of its own, then each decoder layer as two links; the top level is link 0. */
Lesson *li_lesson_encdec(Ctx *c, const cJSON *root, int is_variant);

/* lesson_matrices.c: a matrix's shape first, its numbers later */
/* The shape of the matrix at key (absent: SRC_ABSENT), its structure checked against lim. */
int li_read_matsrc(Ctx *c, const cJSON *obj, const char *key, const Limits *lim, MatSrc *src);
/* A whole number of obj[key] in [lo, hi] into *out, said at its path; required unless dflt ≥ 0 (lesson_keys.c). */
int li_key_size(Ctx *c, const cJSON *obj, const char *key, long long lo, long long hi, long long dflt, int *out);
/* A norm's obj["eps"], a number > 0 (absent: *eps as it was), said at its path (lesson_keys.c). */
int li_key_eps(Ctx *c, const cJSON *obj, double *eps);
/* obj[key] as rows × cols (rows_why NULL: a vector of cols numbers), said at its path; absent: dflt everywhere, or empty when dflt < 0. */
int li_read_shaped(Ctx *c, const cJSON *obj, const char *key, int rows, int cols, const char *rows_why, const char *cols_why,
                   double dflt, Mat *out);
/* StreamingLLM's cache (lesson_streaming.c): "decode": {"cache": {…}}, and what it does not go with. */
int li_read_decode_cache(Ctx *c, const cJSON *v, Model *l);
int li_check_streaming(Ctx *c, const ModelConfig *cfg, const LayerParams *lp);
/* A block's "ffn": {"kind": "moe", …} (lesson_moe.c): its settings (E, top_k, d_ff; nothing for a dense FFN), its matrices,
 * and the "ffn" written back into the block's object bj: read and written with the block's row (lesson_block.c). */
int li_moe_settings(Ctx *c, const cJSON *ffn, Model *l);
int li_moe_matrices(Ctx *c, const cJSON *ffn, Model *l);
int li_moe_write(cJSON *bj, const Block *b);
/* Gemma's pieces (lesson_gemma.c): QK-norm's "kind" (rmsnorm or rmsnorm_plus1). */
int li_gemma_qk_kind(Ctx *c, const cJSON *qk, Model *l);
/* … and their shape rules on one layer (from li_check_shapes). */
int li_gemma_check(Ctx *c, const ModelConfig *cfg, const LayerParams *lp);
/* The block's "norm": "sandwich" (place: the index of its word) and its norms ln1_after, ln2_after. */
int li_gemma_block_settings(Ctx *c, const cJSON *b, Model *l, int place);
int li_gemma_block_norms(Ctx *c, const cJSON *b, Model *l);
/* The same for the value v at the current path (a list's mask). */
int li_read_matsrc_value(Ctx *c, const cJSON *v, const Limits *lim, MatSrc *src);
/* Allocate m and fill it from src (already checked): the literal numbers, or the generator's. */
int li_fill_mat(Ctx *c, const MatSrc *src, Mat *m);
/* 1 when src is a generator ("random", "identity"): its rows have no labels of their own. */
int li_is_generated(const MatSrc *src);

/* lesson_shapes.c: the shape rules */
/*
 * The shape rules of lessons/FORMAT.md on one layer's model (its matrices' rows and columns: a file's before their
 * numbers are read), writing the sizes they give into cfg->n, m, d_model, d_src and lp->d_k, d_v, d_out. tc: a file's
 * token labels, or NULL. Paths are top-level keys.
 */
int li_check_shapes(Ctx *c, ModelConfig *cfg, LayerParams *lp, const TokenCounts *tc);
/* Layer i of a loaded model as its steps are checked (positions on layer 0, the final norm on the last, the loss,
 * the layer's own mask or the model's shared one, as the engine computes it); borrowed. */
void li_layer_config(const Model *m, int i, ModelConfig *c);
/* A cell reference (focus, quiz answer) against a layer's shape, at the current path. */
int li_check_cellref(Ctx *c, const LessonShape *sh, const CellRef *ref);
/* A step's stage and head against a layer's shape (paths: steps[i].stage, steps[i].head). */
int li_check_step_stage(Ctx *c, const LessonShape *sh, const Step *st);

/* lesson_steps.c: texts, steps and quizzes */
/* The text at key (a string, or one per language); absent: an empty text. */
int li_key_text(Ctx *c, const cJSON *obj, const char *key, Text *t);
/* "steps", each checked against the shape of the layer it points into (the top level's: cfg, lp), into l->steps. */
int li_read_steps(Ctx *c, const ModelConfig *cfg, const LayerParams *lp, const cJSON *root, Lesson *l);
/* What a step owns (its texts, its quiz's). */
void li_step_free(Step *st);

#endif
