/* giveaway.h: does a question show its answer before it is answered? (`--check --strict`, lessons/FORMAT.md) */
#ifndef ATTNVIZ_GIVEAWAY_H
#define ATTNVIZ_GIVEAWAY_H

#include "engine/attention.h"

/*
 * Every question of a's lesson (a->top), in each language of langs
 * (NULL-terminated): what the learner reads before answering, the step's
 * "text" and its stage's formula line, against the answer. A numeric
 * answer is given away when it appears there at a precision the screen
 * shows (2, 3 or 4 decimals); a choice when its words do: the right
 * choice's text whole, or at least half of its distinctive words (those
 * of no wrong choice nor of the question). Appends one line per finding
 * to *report ("FILE: steps[2]: …\n"; *report may be NULL before and after;
 * the caller frees it). Returns the number of findings.
 */
int giveaway_check(const Attn *a, const char *const *langs, char **report);

#endif
