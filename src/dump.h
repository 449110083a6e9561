/* dump.h: the whole computation as one JSON document (`--dump`, exports). */
#ifndef ATTNVIZ_DUMP_H
#define ATTNVIZ_DUMP_H

#include <cjson/cJSON.h>

#include "attention.h"

/* A number printed so that it reads back exactly; −∞ (and NaN) become null. */
cJSON *dump_number(double x);
/* A matrix as an array of row arrays; −∞ (and NaN) become null. */
cJSON *dump_matrix(const Mat *m);
/*
 * The dump of a computed lesson (keys in lessons/FORMAT.md, "--dump").
 * A lesson with "compare" also gets the variant's dump under "compare"
 * (computed here). NULL with *err when out of memory.
 */
cJSON *dump_attn(const Attn *a, char **err);
/* dump_attn printed (unformatted when compact), heap string; NULL with *err. */
char *dump_string(const Attn *a, int compact, char **err);

#endif
