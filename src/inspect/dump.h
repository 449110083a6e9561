/* dump.h: the whole computation as one JSON document (`--dump`, exports). */
#ifndef ATTNVIZ_DUMP_H
#define ATTNVIZ_DUMP_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "engine/attention.h"
#include "inspect/headscores.h"

/*
 * The dump of a computed lesson (keys in lessons/FORMAT.md, "--dump").
 * A lesson with "compare" also gets the variant's dump under "compare"
 * (computed here). NULL with *err when out of memory.
 */
cJSON *dump_attn(const Attn *a, char **err);

/*
 * Write to f exactly what cJSON prints of dump_attn's tree (cJSON_Print;
 * cJSON_PrintUnformatted when compact), without building it: the
 * matrices are printed straight from the Attn, so memory stays small for
 * the largest lessons. -1 with *err when out of memory; write errors are
 * left in ferror(f).
 */
int dump_write(FILE *f, const Attn *a, int compact, char **err);

/*
 * What a dump may write, counted from the shapes before anything is built
 * (dump_write refuses more, with the limit named): the computation's
 * numbers, and the decode section's rows (each with its K and V caches, so
 * n²/2 rows) and the flash section's tiles, which grow faster than the
 * lesson itself.
 */
#define DUMP_MAX_NUMBERS (1L << 28)
double dump_count_numbers(const Attn *a);

/*
 * Whether a dump writes each layer's weights and biases (W_q … ffn_W_2,
 * b_*, the norms' γ and β, q_norm, k_norm): on by default (a lesson's dump
 * has them); `--model DIR --dump` turns it off unless `--dump-weights` is
 * given, since a real model's weights are hundreds of MB of text. 2: a
 * model's dump with its weights, the unembedding ("unembed", vocab ×
 * d_model, at the top level) too.
 */
void dump_set_weights(int on);

/*
 * Whether a dump gains "head_scores" (one list per layer, one object per
 * head: previous_token, first_token, diagonal, induction; null where
 * undefined): `--model DIR --dump` turns it on, lessons keep it off so
 * their dumps stay byte-identical. induction: layers × heads scores
 * (session_induction's), read while the dump is written; NULL: all null.
 */
void dump_set_head_scores(int on, const HeadScore *induction, int layers, int heads);

#endif
