/* dump.h: the whole computation as one JSON document (`--dump`, exports). */
#ifndef ATTNVIZ_DUMP_H
#define ATTNVIZ_DUMP_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "engine/attention.h"

/*
 * The dump of a computed lesson (keys in lessons/FORMAT.md, "--dump").
 * A lesson with "compare" also gets the variant's dump under "compare"
 * (computed here). NULL with *err when out of memory.
 */
cJSON *dump_attn(const Attn *a, char **err);
/* dump_attn printed (unformatted when compact), heap string; NULL with *err. */
char *dump_string(const Attn *a, int compact, char **err);

/*
 * Write to f exactly what dump_string() returns, without building it: the
 * matrices are printed straight from the Attn, so memory stays small for
 * the largest lessons. -1 with *err when out of memory; write errors are
 * left in ferror(f).
 */
int dump_write(FILE *f, const Attn *a, int compact, char **err);

#endif
