/* lineedit-basic.c: the `:` line's editor without readline — a small editor of our own.
 *
 * The state is one struct changed by small operations (insert, move, delete,
 * history), fed one key at a time by the TUI's loop. Text is UTF-8; the
 * cursor is a byte offset that always sits on a character boundary.
 * Keys: printable text inserts; Left/Right (Ctrl-B/F) by character;
 * Home/End (Ctrl-A/E); Backspace; Delete (Ctrl-D, which cancels on an empty
 * line); Ctrl-W deletes the word before the cursor; Ctrl-U kills the line;
 * Ctrl-K kills to the end; Up/Down (Ctrl-P/N) walk the history; Tab
 * completes; Enter accepts; Esc, Ctrl-C and Ctrl-G cancel.
 */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/histfile.h"
#include "base/text.h"
#include "tui/lineedit.h"

#define HISTORY_MAX 500

struct LineEdit {
	char *buf;          /* the line, NUL-terminated */
	size_t len, cap;    /* bytes used (without the NUL), allocated */
	size_t pos;         /* cursor: byte offset on a character boundary */
	char *prompt;       /* owned */
	char **hist;        /* oldest first, owned */
	int nhist;
	int hist_idx;       /* nhist while editing a new line */
	char *saved;        /* the new line while browsing history */
	char *path;         /* history file, or NULL */
	LineCompleteFn complete; /* completion (may be NULL), called with ctx */
	void *ctx;
};

static int
le_reserve(LineEdit *le, size_t need)
{
	if (need + 1 <= le->cap)
		return 0;
	size_t cap = le->cap ? le->cap : 64;
	while (cap < need + 1)
		cap *= 2;
	char *n = realloc(le->buf, cap);
	if (n == NULL)
		return -1;
	le->buf = n;
	le->cap = cap;
	return 0;
}

static void
le_set(LineEdit *le, const char *s)
{
	size_t n = strlen(s);

	if (le_reserve(le, n) != 0)
		return;
	memcpy(le->buf, s, n + 1);
	le->len = le->pos = n;
}

static void
le_insert(LineEdit *le, const char *s, size_t n)
{
	if (le_reserve(le, le->len + n) != 0)
		return;
	memmove(le->buf + le->pos + n, le->buf + le->pos, le->len - le->pos + 1);
	memcpy(le->buf + le->pos, s, n);
	le->len += n;
	le->pos += n;
}

static void
le_delete(LineEdit *le, size_t from, size_t to)
{
	if (to <= from || to > le->len)
		return;
	memmove(le->buf + from, le->buf + to, le->len - to + 1);
	le->len -= to - from;
	if (le->pos >= to)
		le->pos -= to - from;
	else if (le->pos > from)
		le->pos = from;
}

static int
is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

static size_t
le_prev_char(const LineEdit *le, size_t p)
{
	if (p == 0)
		return 0;
	p--;
	while (p > 0 && is_cont((unsigned char)le->buf[p]))
		p--;
	return p;
}

static size_t
le_next_char(const LineEdit *le, size_t p)
{
	if (p >= le->len)
		return le->len;
	p++;
	while (p < le->len && is_cont((unsigned char)le->buf[p]))
		p++;
	return p;
}

/* ---- history ---- */

static void
hist_add(LineEdit *le, const char *line)
{
	if (*line == '\0')
		return;
	if (le->nhist > 0 && strcmp(le->hist[le->nhist - 1], line) == 0)
		return;
	char *copy = strdup(line);
	if (copy == NULL)
		return;
	if (le->nhist == HISTORY_MAX) {
		free(le->hist[0]);
		memmove(le->hist, le->hist + 1, sizeof *le->hist * (HISTORY_MAX - 1));
		le->nhist--;
	}
	le->hist[le->nhist++] = copy;
}

static void
hist_add_line(void *le, const char *line)
{
	hist_add(le, line);
}

static void
hist_load(LineEdit *le)
{
	histfile_load(le->path, hist_add_line, le);
}

static void
hist_save(const LineEdit *le)
{
	histfile_save(le->path, (const char *const *)le->hist, le->nhist); /* silent: history is a convenience */
}

static void
hist_move(LineEdit *le, int delta)
{
	int to = le->hist_idx + delta;

	if (to < 0 || to > le->nhist)
		return;
	if (le->hist_idx == le->nhist) {
		free(le->saved);
		le->saved = strdup(le->buf ? le->buf : "");
	}
	le->hist_idx = to;
	le_set(le, to == le->nhist ? (le->saved ? le->saved : "") : le->hist[to]);
}

/* ---- completion ---- */

static void
le_complete(LineEdit *le)
{
	size_t ws = le->pos;
	const char *b = le->buf;
	char **cands = NULL;
	int files = 0;

	if (le->complete == NULL)
		return;
	while (ws > 0 && b[ws - 1] != ' ' && b[ws - 1] != '\t')
		ws--;
	char *word = strndup(b + ws, le->pos - ws);
	if (word == NULL)
		return;
	cands = le->complete(le->ctx, b, ws, word, &files);
	if (cands && cands[0]) {
		/* The longest common prefix of the candidates. */
		size_t common = strlen(cands[0]);
		int count = 0;
		for (int i = 0; cands[i]; i++, count++) {
			size_t k = 0;
			while (k < common && cands[i][k] == cands[0][k])
				k++;
			common = k;
		}
		while (common > 0 && is_cont((unsigned char)cands[0][common]))
			common--;
		size_t have = strlen(word);
		if (common > have)
			le_insert(le, cands[0] + have, common - have);
		/* one candidate: the word is done, unless it is a directory to go on into */
		if (count == 1 && cands[0][strlen(cands[0]) - 1] != '/' && (le->pos == le->len || le->buf[le->pos] != ' '))
			le_insert(le, " ", 1);
	}
	for (int i = 0; cands && cands[i]; i++)
		free(cands[i]);
	free(cands);
	free(word);
}

/* ---- the interface ---- */

LineEdit *
lineedit_new(const char *history_path, LineCompleteFn complete, void *ctx)
{
	LineEdit *le = calloc(1, sizeof *le);

	if (le == NULL)
		return NULL;
	le->hist = calloc(HISTORY_MAX, sizeof *le->hist);
	le->path = history_path ? strdup(history_path) : NULL;
	le->prompt = strdup("");
	le->complete = complete;
	le->ctx = ctx;
	if (le->hist == NULL || le_reserve(le, 0) != 0) {
		lineedit_free(le);
		return NULL;
	}
	le->buf[0] = '\0';
	hist_load(le);
	le->hist_idx = le->nhist;
	return le;
}

void
lineedit_free(LineEdit *le)
{
	if (le == NULL)
		return;
	if (le->hist) {
		hist_save(le);
		for (int i = 0; i < le->nhist; i++)
			free(le->hist[i]);
	}
	free(le->hist);
	free(le->buf);
	free(le->prompt);
	free(le->saved);
	free(le->path);
	free(le);
}

void
lineedit_start(LineEdit *le, const char *prompt)
{
	if (le == NULL)
		return;
	free(le->prompt);
	le->prompt = strdup(prompt ? prompt : "");
	le_set(le, "");
	le->hist_idx = le->nhist;
	free(le->saved);
	le->saved = NULL;
}

int
lineedit_feed(LineEdit *le, int key, char **line)
{
	*line = NULL;
	if (le == NULL)
		return -1;
	switch (key) {
	case '\r': case '\n': case KEY_ENTER:
		*line = strdup(le->buf);
		hist_add(le, le->buf);
		le->hist_idx = le->nhist;
		return 1;
	case 27: case 3: case 7:
		return -1;
	case 4: /* Ctrl-D */
		if (le->len == 0)
			return -1;
		le_delete(le, le->pos, le_next_char(le, le->pos));
		break;
	case KEY_DC:
		le_delete(le, le->pos, le_next_char(le, le->pos));
		break;
	case KEY_BACKSPACE: case 127: case 8:
		le_delete(le, le_prev_char(le, le->pos), le->pos);
		break;
	case KEY_LEFT: case 2:
		le->pos = le_prev_char(le, le->pos);
		break;
	case KEY_RIGHT: case 6:
		le->pos = le_next_char(le, le->pos);
		break;
	case KEY_HOME: case 1:
		le->pos = 0;
		break;
	case KEY_END: case 5:
		le->pos = le->len;
		break;
	case 23: { /* Ctrl-W: the blanks, then the word before the cursor */
		size_t p = le->pos;
		while (p > 0 && le->buf[p - 1] == ' ')
			p--;
		while (p > 0 && le->buf[p - 1] != ' ')
			p--;
		le_delete(le, p, le->pos);
		break;
	}
	case 21: /* Ctrl-U */
		le_delete(le, 0, le->len);
		break;
	case 11: /* Ctrl-K */
		le_delete(le, le->pos, le->len);
		break;
	case KEY_UP: case 16:
		hist_move(le, -1);
		break;
	case KEY_DOWN: case 14:
		hist_move(le, 1);
		break;
	case '\t':
		le_complete(le);
		break;
	default:
		if (key >= 32 && key < 256 && key != 127) {
			char c = (char)key;
			le_insert(le, &c, 1);
		}
		break;
	}
	return 0;
}

void
lineedit_view(const LineEdit *le, LineView *v)
{
	v->prompt = le ? le->prompt : "";
	v->text = le ? le->buf : "";
	v->cursor_col = 0;
	if (le == NULL)
		return;
	/* Display width of the text before the cursor. */
	v->cursor_col = text_width(le->buf, (int)le->pos);
}
