/*
 * tuicourse.c: the learner's way through the course in the full-screen view.
 * Every move is kept (progress.h) unless a demo script is playing; finishing
 * the course's last lesson shows a summary. m opens the course menu: the
 * lessons as the `lessons` command lists them (✓ finished, quiz scores, ▶
 * where the learner is), and Enter (or a double click) opens one with
 * `load`. The menu reads the command's text; it changes nothing but the view.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/progress.h"
#include "base/i18n.h"
#include "cmd/cmd.h"
#include "base/strbuf.h"
#include "base/text.h"
#include "tui/theme.h"
#include "tui/tuistate.h"

void
tui_track(Tui *t)
{
	char *err = NULL;

	if (t->opt.progress == NULL || t->demo != NULL || t->replaying)
		return;
	/* The start is not a move: with an offer to continue, the old place stays until the learner acts. */
	if (!t->tracking) {
		t->tracking = 1;
		if (t->opt.offer != NULL)
			return;
	}
	int r = progress_track(t->opt.progress, t->s, &err);
	if (r < 0 && !t->progress_said) {
		t->progress_said = 1;
		tui_msgf(t, 1, _("cannot keep your progress: %s"), err ? err : _("out of memory"));
	} else if (r > 0 && (r & PROGRESS_COURSE_DONE)) {
		char *sum = progress_report(t->opt.progress, t->utf8);
		tui_popup(t, _("The course is finished"), sum ? sum : "");
		free(sum);
	}
	free(err);
}

/* ------------------------------------------------------------------ */
/* The menu                                                             */
/* ------------------------------------------------------------------ */

typedef struct MenuText {
	char *text;
	int error;
	char *msg;
} MenuText;

static void
menu_message(void *ctx, CmdMsg kind, const char *title, const char *text)
{
	MenuText *m = ctx;

	(void)title;
	if (kind == MSG_TEXT && m->text == NULL)
		m->text = strdup(text ? text : "");
	else if (kind == MSG_ERROR && m->msg == NULL) {
		m->msg = strdup(text ? text : "");
		m->error = 1;
	}
}

void
tui_menu_close(Tui *t)
{
	for (int i = 0; i < t->menu_n; i++) {
		free(t->menu_line[i]);
		free(t->menu_name[i]);
	}
	free(t->menu_line);
	free(t->menu_name);
	t->menu_line = t->menu_name = NULL;
	t->menu_n = 0;
	if (t->w_menu) {
		delwin(t->w_menu);
		t->w_menu = NULL;
	}
	if (t->mode == TUI_MENU) {
		t->mode = TUI_MAIN;
		touchwin(stdscr);
		wnoutrefresh(stdscr);
		t->redraw |= R_ALL & ~R_LAYOUT;
	}
}

/* The lesson a line of `lessons` names ("▶  3. softmax  Softmax: …" → "softmax"), or NULL. */
static char *
menu_line_name(const char *line)
{
	const char *p = line;

	while (*p != '\0' && !isdigit((unsigned char)*p))
		p++;
	while (isdigit((unsigned char)*p))
		p++;
	if (p == line || p[0] != '.' || p[1] != ' ')
		return NULL;
	p += 2;
	while (*p == ' ')
		p++;
	size_t n = 0;
	while (p[n] != '\0' && p[n] != ' ')
		n++;
	/* a name load can take as one word */
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)p[i]) && strchr("_-.", p[i]) == NULL)
			return NULL;
	return n > 0 ? strndup(p, n) : NULL;
}

int
tui_menu_open(Tui *t)
{
	CmdOut out;
	MenuText m = { NULL, 0, NULL };

	memset(&out, 0, sizeof out);
	out.ctx = &m;
	out.message = menu_message;
	out.utf8 = t->utf8;
	out.interactive = 1;
	cmd_run(t->s, "lessons", &out);
	if (m.msg != NULL)
		tui_set_msg(t, m.error, m.msg);
	free(m.msg);
	if (m.text == NULL)
		return 1;
	tui_menu_close(t);
	/* the record `lessons` read, to find each line's progress ("step 2/12  quiz 1/1"): kept whole when a line is cut */
	char *ppath = progress_default_path(), *pwarn = NULL, here[PROGRESS_NAME_MAX];
	Progress prog;
	progress_load(&prog, ppath, &pwarn);
	free(ppath);
	free(pwarn);
	if (session_lesson_name(t->s, here, sizeof here) != 0)
		here[0] = '\0';
	int sel = -1;
	for (char *line = m.text, *next; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		char *name = menu_line_name(line);
		if (name == NULL)
			continue;
		char **l = realloc(t->menu_line, sizeof *l * (size_t)(t->menu_n + 1));
		if (l != NULL)
			t->menu_line = l;
		char **n = realloc(t->menu_name, sizeof *n * (size_t)(t->menu_n + 1));
		if (n != NULL)
			t->menu_name = n;
		char *shown = t->utf8 ? text_escape(line, "") : text_ascii(line);
		if (l == NULL || n == NULL || shown == NULL) {
			free(name);
			free(shown);
			break;
		}
		char mark[8], score[40];
		progress_marks(&prog, name, here, t->utf8, mark, score);
		const size_t sl = strlen(score), hl = strlen(shown);
		if (sl > 0 && hl > sl + 2 && strcmp(shown + hl - sl, score) == 0 && strncmp(shown + hl - sl - 2, "  ", 2) == 0)
			shown[hl - sl - 2] = '\t'; /* the title, a tab, the progress (tui_draw_menu) */
		/* where the learner is: the line the menu opens at */
		if (sel < 0 && (strncmp(line, "\u25b6", 3) == 0 || line[0] == '>'))
			sel = t->menu_n;
		t->menu_line[t->menu_n] = shown;
		t->menu_name[t->menu_n++] = name;
	}
	free(m.text);
	progress_free(&prog);
	if (t->menu_n == 0)
		return 1;
	t->menu_sel = sel >= 0 ? sel : 0;
	t->menu_top = 0;
	t->mode = TUI_MENU;
	t->redraw |= R_POPUP;
	return 1;
}

/* Open the chosen lesson (through the command table). */
static void
menu_choose(Tui *t)
{
	char line[PROGRESS_NAME_MAX + 8];

	snprintf(line, sizeof line, "load %s", t->menu_name[t->menu_sel]);
	tui_menu_close(t);
	tui_run_line(t, line);
}

void
tui_menu_key(Tui *t, int key)
{
	const int page = t->w_menu != NULL && getmaxy(t->w_menu) > 3 ? getmaxy(t->w_menu) - 2 : 1;

	if (tui_list_key(key, &t->menu_sel, page, t->menu_n - 1))
		t->redraw |= R_POPUP;
	else if (key == '\r' || key == '\n' || key == KEY_ENTER)
		menu_choose(t);
	else
		tui_menu_close(t);
}

/* A click on a line chooses it; a second click on the chosen line (or a double click) opens it; outside, it closes. */
void
tui_menu_click(Tui *t, int y, int x, int twice)
{
	WINDOW *w = t->w_menu;

	if (w == NULL || !wenclose(w, y, x)) {
		tui_menu_close(t);
		return;
	}
	int i = y - getbegy(w) - 1 + t->menu_top;
	if (i < t->menu_top || i >= t->menu_n || y - getbegy(w) >= getmaxy(w) - 1)
		return;
	if (twice || i == t->menu_sel) {
		t->menu_sel = i;
		menu_choose(t);
		return;
	}
	t->menu_sel = i;
	t->redraw |= R_POPUP;
}

/* A menu line's width: "TITLE\tPROGRESS" is drawn with two spaces between. */
static int
menu_width(const char *line)
{
	const char *tab = strchr(line, '\t');
	return tab == NULL ? text_width(line, -1) : text_width(line, (int)(tab - line)) + 2 + text_width(tab + 1, -1);
}

/* A menu line in width columns from column 2: a title too wide ends in "…", the progress after it stays whole. */
static void
menu_put(Tui *t, WINDOW *w, int y, attr_t at, const char *line, int width)
{
	const char *tab = strchr(line, '\t');

	if (tab == NULL || menu_width(line) <= width) {
		if (tab == NULL) {
			screen_put(w, y, 2, at, line, width);
			return;
		}
		const int hw = text_width(line, (int)(tab - line));
		char *head = strndup(line, (size_t)(tab - line));
		screen_put(w, y, 2, at, head ? head : "", width);
		free(head);
		screen_put(w, y, 2 + hw + 2, at, tab + 1, width - hw - 2);
		return;
	}
	const int tw = text_width(tab + 1, -1), room = width - tw - 2;
	if (room < 8) {
		screen_put(w, y, 2, at, line, width);
		return;
	}
	char *head = strndup(line, (size_t)(tab - line));
	screen_put_fit(w, y, 2, at, head ? head : "", room, t->utf8);
	free(head);
	screen_put(w, y, 2 + width - tw, at, tab + 1, tw);
}

void
tui_draw_menu(Tui *t)
{
	int ww = 24, wh;

	if (t->w_menu) {
		delwin(t->w_menu);
		t->w_menu = NULL;
	}
	for (int i = 0; i < t->menu_n; i++)
		if (menu_width(t->menu_line[i]) + 4 > ww)
			ww = menu_width(t->menu_line[i]) + 4;
	if (ww > COLS - 2)
		ww = COLS - 2;
	wh = t->menu_n + 2 < LINES - 2 ? t->menu_n + 2 : LINES - 2;
	if (wh < 3 || ww < 10)
		return;
	const int text_h = wh - 2;
	if (t->menu_sel < t->menu_top)
		t->menu_top = t->menu_sel;
	if (t->menu_sel >= t->menu_top + text_h)
		t->menu_top = t->menu_sel - text_h + 1;
	if ((t->w_menu = screen_frame(t, wh, ww, _(" Enter opens, Esc closes "))) == NULL)
		return;
	WINDOW *w = t->w_menu;
	screen_put(w, 0, 2, theme_attr(ROLE_POPUP_TITLE), _(" the course "), ww - 4);
	for (int i = 0; i < text_h && t->menu_top + i < t->menu_n; i++) {
		const int k = t->menu_top + i;
		attr_t at = theme_attr(ROLE_POPUP) | (k == t->menu_sel ? A_REVERSE : 0);
		wattrset(w, at);
		wmove(w, 1 + i, 1);
		for (int c = 1; c < ww - 1; c++)
			waddch(w, ' ');
		menu_put(t, w, 1 + i, at, t->menu_line[k], ww - 4);
	}
	/* lessons above or below the window: the borders say how many (at 80×24 the course does not fit) */
	char more[64];
	if (t->menu_top > 0) {
		snprintf(more, sizeof more, _(" %s %d more above "), t->utf8 ? "\u2191" : "^", t->menu_top);
		screen_put(w, 0, ww - 2 - text_width(more, -1), theme_attr(ROLE_POPUP_TITLE), more, ww - 4);
	}
	if (t->menu_top + text_h < t->menu_n) {
		snprintf(more, sizeof more, _(" %s %d more below "), t->utf8 ? "\u2193" : "v", t->menu_n - t->menu_top - text_h);
		screen_put(w, wh - 1, ww - 2 - text_width(more, -1), theme_attr(ROLE_POPUP_TITLE), more, ww - 4);
	}
	wnoutrefresh(w);
}
