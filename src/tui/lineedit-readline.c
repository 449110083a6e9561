/* lineedit-readline.c: the `:` line's editor on GNU readline's callback interface, inside ncurses.
 *
 * ncurses owns the terminal: readline catches no signals, changes no
 * environment, never preps the terminal and never draws. The TUI's loop
 * feeds it one byte at a time (lineedit_feed stashes the byte and calls
 * rl_callback_read_char, whose rl_getc_function returns it); the TUI draws
 * rl_line_buffer and rl_point through lineedit_view. ncurses KEY_* codes are
 * turned into readline commands directly. Readline is global, so there is
 * one active editor at a time.
 */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "base/histfile.h"
#include "base/text.h"
#include "tui/lineedit.h"

#define HISTORY_MAX 500
#define STASH 64

struct LineEdit {
	char *prompt;        /* owned */
	char *path;          /* history file, or NULL */
	LineCompleteFn complete; /* completion (may be NULL), called with ctx */
	void *ctx;
	int installed;       /* 1: the callback handler is installed */
	int done;            /* 1: a line was accepted (or EOF) */
	char *line;          /* the accepted line (from readline, malloc'ed), NULL on EOF */
	unsigned char stash[STASH]; /* bytes waiting for rl_getc */
	int head, tail;
	FILE *devnull;       /* readline's output stream: it must never write to the terminal */
};

static LineEdit *lineedit_active;
static char **lineedit_cands;  /* candidates of the completion in progress */
static int lineedit_cand_i;

/* ---- readline hooks ---- */

static int
le_getc(FILE *f)
{
	(void)f;
	LineEdit *le = lineedit_active;
	if (le == NULL || le->head == le->tail)
		return EOF;
	int c = le->stash[le->head];
	le->head = (le->head + 1) % STASH;
	return c;
}

static int
le_input_available(void)
{
	return lineedit_active != NULL && lineedit_active->head != lineedit_active->tail;
}

static void
le_redisplay(void)
{
	/* The TUI draws the line from lineedit_view(). */
}

static void
le_on_line(char *line)
{
	LineEdit *le = lineedit_active;

	if (le != NULL) {
		le->done = 1;
		le->line = line;
		le->installed = 0;
	} else {
		free(line);
	}
	rl_callback_handler_remove();
}

static void
le_display_matches(char **matches, int n, int longest)
{
	(void)matches;
	(void)n;
	(void)longest;
	/* No listing: readline would print it on the terminal. */
}

static void
le_free_cands(void)
{
	for (int i = 0; lineedit_cands && lineedit_cands[i]; i++)
		free(lineedit_cands[i]);
	free(lineedit_cands);
	lineedit_cands = NULL;
	lineedit_cand_i = 0;
}

static char *
le_generator(const char *text, int state)
{
	(void)text;
	if (state == 0)
		lineedit_cand_i = 0;
	if (lineedit_cands == NULL || lineedit_cands[lineedit_cand_i] == NULL)
		return NULL;
	return strdup(lineedit_cands[lineedit_cand_i++]);
}

/* The callback's candidates; a file name is readline's own to complete. */
static char **
le_complete(const char *text, int start, int end)
{
	LineEdit *le = lineedit_active;
	int files = 0;
	char **matches;

	(void)end;
	rl_attempted_completion_over = 1;
	if (le == NULL || le->complete == NULL)
		return NULL;
	le_free_cands();
	lineedit_cands = le->complete(le->ctx, rl_line_buffer, (size_t)start, text, &files);
	if (files) {
		le_free_cands();
		rl_attempted_completion_over = 0; /* readline's file names */
		return NULL;
	}
	matches = rl_completion_matches(text, le_generator);
	le_free_cands();
	return matches;
}

/* ---- the interface ---- */

static int lineedit_initialized;

static void
le_init_readline(LineEdit *le)
{
	rl_readline_name = "attnviz";
	rl_catch_signals = 0;
	rl_catch_sigwinch = 0;
	rl_change_environment = 0;
	rl_prep_term_function = NULL;
	rl_deprep_term_function = NULL;
	/* A custom redisplay also keeps readline from reading the terminal's description. */
	rl_redisplay_function = le_redisplay;
	rl_getc_function = le_getc;
	rl_input_available_hook = le_input_available;
	rl_completion_display_matches_hook = le_display_matches;
	rl_attempted_completion_function = le_complete;
	rl_outstream = le->devnull;
	if (!lineedit_initialized) {
		rl_initialize();
		rl_variable_bind("bell-style", "none");
		using_history();
		stifle_history(HISTORY_MAX);
		lineedit_initialized = 1;
	}
}

static void
le_history_add(void *ctx, const char *line)
{
	(void)ctx;
	add_history(line);
}

/* readline's history, oldest first, to the file (silent on failure: history is a convenience). */
static void
le_history_save(const char *path)
{
	HIST_ENTRY **h = history_list();
	const char **lines = history_length > 0 ? calloc((size_t)history_length, sizeof *lines) : NULL;
	int n = 0;

	for (; h != NULL && lines != NULL && n < history_length && h[n] != NULL; n++)
		lines[n] = h[n]->line;
	histfile_save(path, lines, n);
	free(lines);
}

LineEdit *
lineedit_new(const char *history_path, LineCompleteFn complete, void *ctx)
{
	LineEdit *le = calloc(1, sizeof *le);

	if (le == NULL)
		return NULL;
	le->path = history_path ? strdup(history_path) : NULL;
	le->prompt = strdup("");
	le->complete = complete;
	le->ctx = ctx;
	le->devnull = fopen("/dev/null", "w");
	if (le->devnull == NULL || le->prompt == NULL) {
		lineedit_free(le);
		return NULL;
	}
	le_init_readline(le);
	clear_history();
	/* not read_history/write_history: the file is read and written by attnviz's rules (histfile.h) */
	histfile_load(le->path, le_history_add, NULL);
	return le;
}

void
lineedit_free(LineEdit *le)
{
	if (le == NULL)
		return;
	if (le->installed && lineedit_active == le)
		rl_callback_handler_remove();
	if (lineedit_active == le)
		lineedit_active = NULL;
	if (le->path)
		le_history_save(le->path);
	free(le->line);
	free(le->prompt);
	free(le->path);
	if (le->devnull) {
		if (rl_outstream == le->devnull)
			rl_outstream = NULL;
		fclose(le->devnull);
	}
	free(le);
}

void
lineedit_start(LineEdit *le, const char *prompt)
{
	if (le == NULL)
		return;
	if (lineedit_active && lineedit_active != le && lineedit_active->installed) {
		rl_callback_handler_remove();
		lineedit_active->installed = 0;
	}
	lineedit_active = le;
	free(le->prompt);
	le->prompt = strdup(prompt ? prompt : "");
	free(le->line);
	le->line = NULL;
	le->done = 0;
	le->head = le->tail = 0;
	rl_outstream = le->devnull;
	if (le->installed)
		rl_callback_handler_remove();
	/* The prompt is drawn by the TUI; readline gets an empty one so rl_point counts text only. */
	rl_callback_handler_install("", le_on_line);
	le->installed = 1;
	rl_replace_line("", 0);
	rl_point = rl_end = 0;
}

static void
le_push(LineEdit *le, const char *bytes)
{
	for (; *bytes; bytes++) {
		int next = (le->tail + 1) % STASH;
		if (next == le->head)
			return;
		le->stash[le->tail] = (unsigned char)*bytes;
		le->tail = next;
	}
}

int
lineedit_feed(LineEdit *le, int key, char **line)
{
	*line = NULL;
	if (le == NULL || !le->installed)
		return -1;
	lineedit_active = le;
	switch (key) {
	case 27: case 3: case 7: /* Esc, Ctrl-C, Ctrl-G: cancel */
		rl_callback_handler_remove();
		le->installed = 0;
		return -1;
	/* Keys ncurses decoded: call readline's commands directly. */
	case KEY_LEFT:
		rl_backward_char(1, 0);
		return 0;
	case KEY_RIGHT:
		rl_forward_char(1, 0);
		return 0;
	case KEY_UP:
		rl_get_previous_history(1, 0);
		return 0;
	case KEY_DOWN:
		rl_get_next_history(1, 0);
		return 0;
	case KEY_HOME:
		rl_beg_of_line(1, 0);
		return 0;
	case KEY_END:
		rl_end_of_line(1, 0);
		return 0;
	case KEY_DC:
		rl_delete(1, 0);
		return 0;
	case KEY_BACKSPACE:
		key = 127;
		break;
	case KEY_ENTER:
		key = '\r';
		break;
	default:
		break;
	}
	if (key >= 256 || key < 0)
		return 0; /* another function key: nothing */
	if (key == 4 && rl_end == 0) { /* Ctrl-D on an empty line */
		rl_callback_handler_remove();
		le->installed = 0;
		return -1;
	}
	char b[2] = { (char)key, '\0' };
	if (key == 0)
		return 0;
	le_push(le, b);
	while (!le->done && le->head != le->tail)
		rl_callback_read_char();
	if (!le->done)
		return 0;
	le->done = 0;
	if (le->line == NULL)
		return -1;
	if (*le->line) {
		HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
		if (last == NULL || strcmp(last->line, le->line) != 0)
			add_history(le->line);
	}
	*line = strdup(le->line);
	free(le->line);
	le->line = NULL;
	return *line ? 1 : -1;
}

void
lineedit_view(const LineEdit *le, LineView *v)
{
	const char *text = le && le->installed && rl_line_buffer ? rl_line_buffer : "";
	int point = le && le->installed ? rl_point : 0;

	v->prompt = le ? le->prompt : "";
	v->text = text;
	v->cursor_col = text_width(text, (int)strnlen(text, point > 0 ? (size_t)point : 0));
}
