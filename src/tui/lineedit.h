/* lineedit.h: the `:` command line's editor — GNU readline's callback interface,
 * or a small built-in editor when built with READLINE=0. One interface, two files. */
#ifndef ATTNVIZ_LINEEDIT_H
#define ATTNVIZ_LINEEDIT_H

#include <stddef.h>

typedef struct LineEdit LineEdit;

/* The line as it should be drawn: prompt + text, and the cursor's display column. */
typedef struct LineView {
	const char *prompt;
	const char *text;   /* UTF-8 */
	int cursor_col;     /* display columns from the start of text (wcwidth-aware) */
} LineView;

/*
 * Completion, as linenoise does it: the editor knows nothing of commands. It
 * hands the callback the whole line and the word before the cursor (starting
 * at byte `start`); the callback returns the candidates (a NULL-terminated
 * heap array of heap strings, or NULL) and sets *files when the word is a
 * file name the editor may complete from the file system itself (readline
 * does; the built-in editor uses the candidates).
 */
typedef char **(*LineCompleteFn)(void *ctx, const char *line, size_t start, const char *word, int *files);

/* A new editor; history is loaded from history_path (may be NULL); complete (may be NULL) is called with ctx. */
LineEdit *lineedit_new(const char *history_path, LineCompleteFn complete, void *ctx);
void lineedit_free(LineEdit *le);  /* saves the history */
/* Begin reading a line with this prompt. */
void lineedit_start(LineEdit *le, const char *prompt);
/*
 * Feed one input byte (or an ncurses KEY_* code ≥ 256 for arrows, Home, …).
 * Returns 0 while editing, 1 when a line is complete (*line gets a heap copy,
 * added to history), -1 when cancelled (Esc, Ctrl-C, Ctrl-D on empty).
 */
int lineedit_feed(LineEdit *le, int key, char **line);
void lineedit_view(const LineEdit *le, LineView *v);

#endif
