/*
 * progress.h: the learner's way through the course, kept between runs in
 * $XDG_STATE_HOME/attnviz/progress.json (default ~/.local/state/attnviz):
 * for each lesson whether it was finished (its last step reached), where
 * the learner was in it and the quiz score, and which lesson came last.
 *
 * The file is read with cJSON and written atomically (fileio.h). A damaged
 * file is never fatal: it is renamed to progress.json.damaged, said once,
 * and the course starts afresh. Nothing here touches the terminal.
 */
#ifndef ATTNVIZ_PROGRESS_H
#define ATTNVIZ_PROGRESS_H

#include "app/session.h"

#define PROGRESS_NAME_MAX 64
#define PROGRESS_MAX_BYTES (1 << 20)
#define PROGRESS_MARKS_MAX 257 /* a lesson of more steps keeps counts only */

typedef struct ProgressLesson {
	char name[PROGRESS_NAME_MAX]; /* a lesson's name: its file name without .json ("selfattn" when built in) */
	int done;                     /* 1: its last step was reached */
	int step, steps;              /* the step the learner was at (0-based), of how many */
	int right, asked;             /* the quiz score: questions right, questions answered or skipped */
	/*
	 * Each step's question as the learner left it, one letter a step ("" when
	 * not known): '.' no question, 'o' open, 's' skipped, 'w' wrong, 'r' right.
	 * A later attempt adds to it (progress_note_marks): a question keeps the
	 * best it ever had (r > w > s > o), and right/asked are counted from it.
	 */
	char marks[PROGRESS_MARKS_MAX];
	int reached;                  /* 1: the last step was reached once (done also needs no question open) */
	int touched;                  /* noted in this run: these numbers win over the file's when it is written */
} ProgressLesson;

typedef struct Progress {
	char *path;                   /* owned: the file, or NULL (nowhere to keep it: no HOME) */
	ProgressLesson *lesson;       /* owned, n entries in the order they were first seen */
	int n;
	char last[PROGRESS_NAME_MAX]; /* the lesson the learner was in last, or "" */
	int unsaved;                  /* a step moved since the file was written (progress_flush writes it) */
} Progress;

/* $XDG_STATE_HOME/attnviz/progress.json, or ~/.local/state/…; a heap string, NULL without either. */
char *progress_default_path(void);

/*
 * Read path into p (p->path becomes a copy of it; NULL: nowhere to keep it).
 * A missing file is an empty record. A damaged one is renamed to
 * PATH.damaged and *warn (a heap string, else NULL) says so; p is then
 * empty. Returns 0, or -1 when out of memory.
 */
int progress_load(Progress *p, const char *path, char **warn);
/* Write p to p->path atomically, making its directory. 0, or -1 with *err. */
int progress_save(const Progress *p, char **err);
void progress_free(Progress *p);

const ProgressLesson *progress_find(const Progress *p, const char *name);

/* What progress_note found (bits). */
enum { PROGRESS_CHANGED = 1, PROGRESS_COURSE_DONE = 2, PROGRESS_MOVED = 4 };

/*
 * The learner is at step (0-based) of steps in lesson name with a quiz
 * score right/asked. Returns PROGRESS_CHANGED when something worth a write
 * changed (another lesson, a lesson finished, the quiz score), with
 * PROGRESS_COURSE_DONE when that finished the last lesson of the course
 * (session_lesson_order) for the first time; PROGRESS_MOVED when only the
 * step within the same lesson moved.
 */
int progress_note(Progress *p, const char *name, int step, int steps, int right, int asked);
/*
 * The same with each step's question (marks as ProgressLesson.marks, one a
 * step; NULL: counts only). The record keeps the best of every attempt:
 * reopening a lesson never lowers its score, and the lesson is done once its
 * last step was reached and no question is open in the record.
 */
int progress_note_marks(Progress *p, const char *name, int step, int steps, const char *marks, int right, int asked);


/*
 * progress_note for where the session is: the file is written when
 * something worth it changed, a step's move only noted (p->unsaved) so that
 * a keypress is not a file write. The same bits, or -1 with *err.
 */
int progress_track(Progress *p, const Session *s, char **err);
/* Write the file when a move is still unsaved (the front end's end). 0, or -1 with *err. */
int progress_flush(Progress *p, char **err);

/*
 * A line for one lesson of the course, in :lessons and the menu: "✓" for a
 * finished one (ASCII "+" without UTF-8), "▶" (">") for the current one,
 * and "quiz 2/3", "step 4/8" as known. mark and score are filled (heap-free).
 */
void progress_marks(const Progress *p, const char *name, const char *current, int utf8, char mark[8], char score[40]);

/* The course so far, for --progress and the summary at its end: a heap string, or NULL when out of memory. */
char *progress_report(const Progress *p, int utf8);

#endif
