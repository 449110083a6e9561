/*
 * screen.c: the view's screen primitives — text drawn by display width, the
 * status line's message, pop-ups and the one frame a pop-up or the course
 * menu is drawn in, and up/down on a list.
 *
 * Every other file of the view draws text through screen_draw, screen_put
 * and screen_put_fit (display widths: text_width); nothing here knows a
 * stage, a pane or a key.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <curses.h>

#include "base/i18n.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "tui/theme.h"
#include "tui/tuistate.h"

/* ------------------------------------------------------------------ */
/* Text: drawing and wrapping (widths: text_width)                      */
/* ------------------------------------------------------------------ */

/*
 * Draw s[0..len) at the window's cursor in at most maxw columns, skipping the
 * first `skip` columns. What the locale cannot show is drawn as '?' (text_char).
 * Returns the columns drawn.
 */
int
screen_draw(WINDOW *win, const char *s, int len, int maxw, int skip)
{
	int used = 0, col = 0;

	if (len < 0)
		len = (int)strlen(s);
	for (int i = 0; i < len;) {
		wchar_t wc;
		int cw;
		i += text_char(s + i, (size_t)(len - i), &wc, &cw);
		if (col < skip) {
			col += cw;
			continue;
		}
		if (used + cw > maxw)
			break;
		if (wc != 0)
			waddnwstr(win, &wc, 1);
		else
			for (int k = 0; k < cw; k++)
				waddch(win, '?');
		used += cw;
		col += cw;
	}
	return used;
}

/* Draw s (UTF-8 of our own, or already escaped) at y, x with attributes; returns columns drawn. */
int
screen_put(WINDOW *win, int y, int x, attr_t attr, const char *s, int maxw)
{
	if (maxw <= 0)
		return 0;
	wattrset(win, attr);
	wmove(win, y, x);
	int n = screen_draw(win, s, -1, maxw, 0);
	wattrset(win, A_NORMAL);
	return n;
}

/*
 * screen_put for text that may not fit: when it is wider than maxw it is cut one
 * glyph short and ends in an ellipsis (... outside UTF-8), so a cut title or
 * message reads as cut rather than as complete.
 */
int
screen_put_fit(WINDOW *win, int y, int x, attr_t attr, const char *s, int maxw, int utf8)
{
	int ell = utf8 ? 1 : 3;

	if (text_width(s, -1) <= maxw || maxw <= ell)
		return screen_put(win, y, x, attr, s, maxw);
	int n = screen_put(win, y, x, attr, s, maxw - ell);
	return n + screen_put(win, y, x + n, attr, utf8 ? "\u2026" : "...", maxw - n);
}

/* Lesson text for the screen: control characters escaped, newlines kept, tabs expanded (every 4 columns). */
char *
screen_text(const char *s)
{
	char *e = text_escape(s ? s : "", "\n\t"), *x = e != NULL ? text_expand_tabs(e, 4) : NULL;

	free(e);
	return x;
}

/*
 * s with a newline where text_wrap would break an indented line ("  KEYS
 * DOES", a help line), and the continuation indented to where its text
 * starts: after the leading blanks and, when there is one, the first gap of
 * two blanks (the column DOES starts in). Other lines are left to text_wrap.
 * Heap string, or NULL when out of memory.
 */
static char *
hang_wrap(const char *s, int width)
{
	StrBuf b = { 0 };

	while (*s != '\0') {
		const char *nl = strchr(s, '\n');
		const int len = nl != NULL ? (int)(nl - s) : (int)strlen(s);
		int hang = 0;
		while (hang < len && s[hang] == ' ')
			hang++;
		if (hang > 0) {
			const char *gap = strstr(s + hang, "  ");
			if (gap != NULL && gap - s < len) {
				int g = (int)(gap - s);
				while (g < len && s[g] == ' ')
					g++;
				if (g < len)
					hang = text_width(s, g);
			}
		}
		if (hang == 0 || hang > width / 2 || text_width(s, len) <= width) {
			strbuf_add(&b, s, (size_t)len);
		} else {
			/* the first line at full width, the rest at width − hang after hang blanks */
			char *line = strndup(s, (size_t)len);
			TextLine *wl = NULL;
			int n = line != NULL ? text_wrap(line, width, &wl) : -1;
			if (n > 0) {
				strbuf_add(&b, line + wl[0].off, (size_t)wl[0].len);
				const char *rest = line + wl[0].off + wl[0].len;
				while (*rest == ' ')
					rest++;
				TextLine *w2 = NULL;
				int n2 = *rest != '\0' ? text_wrap(rest, width - hang, &w2) : 0;
				for (int i = 0; i < n2; i++)
					strbuf_printf(&b, "\n%*s%.*s", hang, "", w2[i].len, rest + w2[i].off);
				free(w2);
			} else
				strbuf_add(&b, s, (size_t)len);
			free(wl);
			free(line);
		}
		if (nl == NULL)
			break;
		strbuf_add(&b, "\n", 1);
		s = nl + 1;
	}
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s != NULL ? b.s : strdup("");
}

/* ------------------------------------------------------------------ */
/* Messages and pop-ups                                                 */
/* ------------------------------------------------------------------ */

/* The columns the demo's short place ("demo 12/34 question ") takes beside a message. */
#define DEMO_SHORT_PLACE 21

void
tui_set_msg(Tui *t, int error, const char *text)
{
	free(t->msg);
	t->msg = NULL;
	if (text != NULL) {
		/* One line: up to the first newline. */
		const char *nl = strchr(text, '\n');
		char *one = nl ? strndup(text, (size_t)(nl - text)) : strdup(text);
		t->msg = one ? text_escape(one, "") : NULL;
		free(one);
	}
	t->msg_error = error;
	t->redraw |= R_STATUS;
	/*
	 * A message wider than the status line (a wrong answer's feedback), or of
	 * several lines (a lesson's error with its line and a caret under the
	 * column), is never cut: it heads the narration, whole, until the place changes.
	 */
	if (t->msg != NULL && t->mode != TUI_CMD &&
	    (strchr(text, '\n') != NULL || text_width(t->msg, -1) > COLS - 1 - (t->demo ? DEMO_SHORT_PLACE : 0))) {
		char *whole = text_escape(text, "\n");
		free(t->note);
		t->note = whole != NULL ? whole : t->msg;
		if (whole != NULL)
			free(t->msg);
		t->note_place = 0;
		t->msg = NULL;
		t->redraw |= R_NARR;
		tui_build_narr(t);
		t->redraw |= R_LAYOUT;
	}
}

void
tui_answer_first(Tui *t)
{
	char how[32];

	tui_msgf(t, 0, _("answer the quiz first (:%s, :skip, :hint)"), session_quiz_usage(t->s, how, sizeof how));
}

void
tui_msgf(Tui *t, int error, const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	tui_set_msg(t, error, buf);
}

void
tui_popup(Tui *t, const char *title, const char *text)
{
	char *tt = text_escape(title ? title : "", "");
	char *tx = screen_text(text);

	/* No blank lines at the end. */
	for (size_t n = tx ? strlen(tx) : 0; n > 0 && tx[n - 1] == '\n'; n--)
		tx[n - 1] = '\0';

	if (t->mode == TUI_POPUP && t->popup_text && tx) {
		/* A second text from the same command: append. */
		size_t a = strlen(t->popup_text), b = strlen(tx);
		char *n = malloc(a + b + 3);
		if (n) {
			memcpy(n, t->popup_text, a);
			memcpy(n + a, "\n\n", 2);
			memcpy(n + a + 2, tx, b + 1);
			free(t->popup_text);
			t->popup_text = n;
		}
		free(tt);
		free(tx);
	} else {
		free(t->popup_title);
		free(t->popup_text);
		t->popup_title = tt;
		t->popup_text = tx;
		t->popup_top = 0;
	}
	t->mode = TUI_POPUP;
	t->redraw |= R_POPUP;
}

void
tui_popup_close(Tui *t)
{
	if (t->w_popup) {
		delwin(t->w_popup);
		t->w_popup = NULL;
	}
	free(t->popup_title);
	free(t->popup_text);
	t->popup_title = t->popup_text = NULL;
	t->mode = TUI_MAIN;
	/* What the pop-up covered comes back. */
	touchwin(stdscr);
	wnoutrefresh(stdscr);
	t->redraw |= R_ALL & ~R_LAYOUT;
}

/*
 * The frame every pop-up is drawn in (tui_draw_popup, the course menu,
 * tuicourse.c): a new window of wh × ww in the middle of the screen, its
 * background, its box, and foot on the bottom edge; the attributes are left
 * at the title's, for the title the caller puts on the top edge.
 */
WINDOW *
screen_frame(const Tui *t, int wh, int ww, const char *foot)
{
	WINDOW *w = newwin(wh, ww, (LINES - wh) / 2, (COLS - ww) / 2);

	if (w == NULL)
		return NULL;
	wbkgd(w, ' ' | theme_attr(ROLE_POPUP));
	werase(w);
	wattrset(w, theme_attr(ROLE_POPUP_TITLE));
	if (t->utf8)
		box_set(w, WACS_VLINE, WACS_HLINE);
	else
		wborder(w, '|', '|', '-', '-', '+', '+', '+', '+');
	screen_put(w, wh - 1, 2, theme_attr(ROLE_POPUP_TITLE), foot, ww - 4);
	wattrset(w, theme_attr(ROLE_POPUP_TITLE));
	return w;
}

void
tui_draw_popup(Tui *t)
{
	TextLine *lines = NULL;
	int maxw = COLS - 4 > 20 ? COLS - 4 : COLS, ww, wh, n;

	if (t->w_popup) {
		delwin(t->w_popup);
		t->w_popup = NULL;
	}
	/* Width: the longest line, within the screen; an indented line's continuations hang under its text. */
	char *hung = hang_wrap(t->popup_text ? t->popup_text : "", maxw - 4);
	const char *text = hung != NULL ? hung : t->popup_text ? t->popup_text : "";
	n = text_wrap(text, maxw - 4, &lines);
	ww = t->popup_title ? text_width(t->popup_title, -1) + 6 : 20;
	for (int i = 0; i < n; i++) {
		int lw = text_width(text + lines[i].off, lines[i].len) + 4;
		if (lw > ww)
			ww = lw;
	}
	if (ww > maxw)
		ww = maxw;
	wh = n + 2 < LINES - 2 ? n + 2 : LINES - 2;
	if (wh < 3)
		wh = 3;
	t->popup_lines = n;
	int text_h = wh - 2;
	if (t->popup_top > n - text_h)
		t->popup_top = n - text_h > 0 ? n - text_h : 0;
	if (t->popup_top < 0)
		t->popup_top = 0;

	char foot[64];
	if (n > text_h)
		snprintf(foot, sizeof foot, _(" %d-%d/%d  arrows scroll, q close "), t->popup_top + 1,
		         t->popup_top + text_h, n);
	else
		snprintf(foot, sizeof foot, _(" q/Esc/Enter close "));
	t->w_popup = screen_frame(t, wh, ww, foot);
	if (t->w_popup == NULL) {
		free(lines);
		free(hung);
		return;
	}
	WINDOW *w = t->w_popup;
	if (t->popup_title) {
		wmove(w, 0, 2);
		waddch(w, ' ');
		screen_draw(w, t->popup_title, -1, ww - 6, 0);
		waddch(w, ' ');
	}
	wattrset(w, theme_attr(ROLE_POPUP));
	for (int i = 0; i < text_h && t->popup_top + i < n; i++) {
		wmove(w, 1 + i, 2);
		screen_draw(w, text + lines[t->popup_top + i].off, lines[t->popup_top + i].len, ww - 4, 0);
	}
	free(lines);
	free(hung);
	wnoutrefresh(w);
}

int
tui_list_key(int key, int *pos, int page, int last)
{
	if (page < 1)
		page = 1;
	switch (key) {
	case KEY_UP: case 'k': *pos -= 1; break;
	case KEY_DOWN: case 'j': *pos += 1; break;
	case KEY_PPAGE: *pos -= page; break;
	case KEY_NPAGE: *pos += page; break;
	case KEY_HOME: case 'g': *pos = 0; break;
	case KEY_END: case 'G': *pos = last; break;
	default: return 0;
	}
	if (*pos > last)
		*pos = last;
	if (*pos < 0)
		*pos = 0;
	return 1;
}
