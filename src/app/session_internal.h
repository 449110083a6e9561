/* session_internal.h: what session.c (the walk, loading, marks, moving,
 * quizzes) and session_edit.c (the edits) share; nothing outside src/app/
 * includes it. */
#ifndef ATTNVIZ_SESSION_INTERNAL_H
#define ATTNVIZ_SESSION_INTERNAL_H

#include "app/session.h"

/* session.c: s->attn pointed at the link of the layer shown. */
void sn_point_layer(Session *s);
/* session.c: the walk made again from the lesson's steps (or the default walk); 0 or -1. */
int sn_build_walk(Session *s);
/* session.c: entering a step's decode steps or tiles (from the end when at_end), and back at t, (tq, tk). */
void sn_enter_substeps(Session *s, int at_end);
void sn_restore_substeps(Session *s, int t, int tq, int tk);
/* session.c: the last edit's copies (prev_*) dropped. */
void sn_drop_prev(Session *s);
/* session.c: the compare variant computed (with its backward pass); 0 or -1 with *err. */
int sn_compute_compare(const Lesson *l, Attn **out, char **err);
/* session_edit.c: what a values edit kept, freed. */
void sn_kept_free(SessionKept *k);

#endif
