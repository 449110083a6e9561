/*
 * importer.h: a Hugging Face model folder (hfconfig.h) and a prompt turned
 * into a Lesson the engine computes like any other: the prompt's tokens and
 * their rows of the embedding (X), each layer's weights as d_in × d_out
 * matrices of doubles, the block around them, the final norm and the
 * language-model head (vocab, unembed, the ids).
 *
 * A model is not a lesson file: its limits are its own (README, "Real
 * models"): up to IMPORT_MAX_LAYERS layers (a lesson file: 16), the
 * prompt up to the model's max_position_embeddings and LESSON_MAX_TOKENS
 * tokens, d_model and the heads' widths up to LESSON_MAX_DIM.
 */
#ifndef ATTNVIZ_IMPORTER_H
#define ATTNVIZ_IMPORTER_H

#include "lesson/lesson.h"

#define IMPORT_MAX_LAYERS 128

/*
 * The prompt: text (through DIR/tokenizer.json) or ids (n of them, each
 * from 0 to vocab_size − 1); exactly one of the two.
 */
typedef struct ImportPrompt {
	const char *text;
	const long long *ids;
	int n;
} ImportPrompt;

/*
 * DIR and the prompt into a checked Lesson (lesson_validate), its path DIR.
 * NULL with *err (heap) naming the folder, file or tensor and what was
 * expected. A tensor's pages of the mapping are given back once it is
 * converted to doubles; the files are closed before it returns.
 */
Lesson *import_model(const char *dir, const ImportPrompt *p, char **err);

/* 1 when l was made by import_model (it has token ids and a vocabulary). */
int import_is_model(const Lesson *l);

/*
 * The same model on another prompt: l (made by import_model from l->path)
 * gets the new tokens, their embedding rows (and GPT-2's position rows),
 * the weights untouched. 0, or -1 with *err and l unchanged.
 */
int import_reprompt(Lesson *l, const ImportPrompt *p, char **err);

/*
 * The rows that enter layer 0 for tokens from … n − 1 of ids (the token's
 * row of the embedding, plus GPT-2's position row): *x (n − from) × d_model,
 * heap. The whole list is checked as import_reprompt checks a prompt (the
 * same messages). 0, or -1 with *err.
 */
int import_embed_tail(const Lesson *l, const long long *ids, int n, int from, Mat *x, char **err);
/* Text through DIR/tokenizer.json: *ids (heap, *n of them); 0, or -1 with *err. */
int import_tokenize(const char *dir, const char *text, long long **ids, int *n, char **err);

#endif
