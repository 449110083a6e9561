/* tui.c: the ncurses visualizer — stage line, heatmap panes, narration, key line, `:` line.
 *
 * The screen, top to bottom (layout.h computes the rectangles):
 *   stage line   title, step k/N, stage: NAME, head, quiz score
 *   panes        the current stage's matrices (operands, then the result)
 *   narration    the step's text wrapped by display width, then the formula
 *   key line     the main keys (hidden in presenter mode)
 *   status line  messages, the cursor cell's value, or the `:` command line
 *
 * Keys: one table (main_keys, and demo_keys while a demo plays) gives each
 * key its action, its line in the `?` help and its place on the key line.
 *
 * The view never writes the model: it changes the session only through
 * session_* and cmd_run(), reads Session.dirty to know what to redraw, and
 * keeps its own state (focus, cursors, scroll: tuistate.h). Drawing happens once per
 * loop turn with wnoutrefresh()/doupdate(); signal handlers only set a flag.
 * The matrix panes are pane.c; demo scripts and :play are tuidemo.c.
 */
#include <errno.h>
#include <langinfo.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <curses.h>

#include "base/clock.h"
#include "base/i18n.h"
#include "cmd/cmd.h"
#include "app/demo.h"
#include "inspect/explain.h"
#include "inspect/labels.h"
#include "base/paths.h"
#include "out/textfmt.h"
#include "tui/layout.h"
#include "tui/lineedit.h"
#include "out/record.h"
#include "inspect/stats.h"
#include "base/strbuf.h"
#include "tui/theme.h"
#include "tui/tuistate.h"
#include "base/ttyguard.h"

/* ------------------------------------------------------------------ */
/* State                                                                */
/* ------------------------------------------------------------------ */

static volatile sig_atomic_t tui_signal;
static int tui_curses_on;

/* ------------------------------------------------------------------ */
/* Text: drawing and wrapping (widths: text_width)                    */
/* ------------------------------------------------------------------ */

/*
 * Draw s[0..len) at the window's cursor in at most maxw columns, skipping the
 * first `skip` columns. What the locale cannot show is drawn as '?' (text_char).
 * Returns the columns drawn.
 */
int
draw_text(WINDOW *win, const char *s, int len, int maxw, int skip)
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
put_at(WINDOW *win, int y, int x, attr_t attr, const char *s, int maxw)
{
	if (maxw <= 0)
		return 0;
	wattrset(win, attr);
	wmove(win, y, x);
	int n = draw_text(win, s, -1, maxw, 0);
	wattrset(win, A_NORMAL);
	return n;
}

/*
 * put_at for text that may not fit: when it is wider than maxw it is cut one
 * glyph short and ends in an ellipsis (... outside UTF-8), so a cut title or
 * message reads as cut rather than as complete.
 */
static int
put_fit(WINDOW *win, int y, int x, attr_t attr, const char *s, int maxw, int utf8)
{
	int ell = utf8 ? 1 : 3;

	if (text_width(s, -1) <= maxw || maxw <= ell)
		return put_at(win, y, x, attr, s, maxw);
	int n = put_at(win, y, x, attr, s, maxw - ell);
	return n + put_at(win, y, x + n, attr, utf8 ? "\u2026" : "...", maxw - n);
}

/* ------------------------------------------------------------------ */
/* Time, signals, leaving                                               */
/* ------------------------------------------------------------------ */

/* --render's virtual clock (ms), or -1: the monotonic clock. */
static long long tui_clock = -1;

int
tui_signalled(void)
{
	return tui_signal;
}

void
tui_clock_set(long long ms)
{
	tui_clock = ms;
}

long long
tui_now_ms(void)
{
	if (tui_clock >= 0)
		return tui_clock;
	return (long long)clock_ms();
}

/* The `:` line's completion (lineedit.h): the command table's. */
static char **
tui_complete(void *ctx, const char *line, size_t start, const char *word, int *files)
{
	return cmd_complete_line(ctx, line, start, word, files);
}

/* A computation in the view (:load, an edit) slower than ATTN_PROGRESS_MS says where it is on the status line. */
static void
tui_progress(void *ctx, const Attn *a, Stage st, int index, int count, double elapsed_ms)
{
	Tui *t = ctx;
	char buf[96];

	if (elapsed_ms < ATTN_PROGRESS_MS || t->w_status == NULL || t->lay.too_small)
		return;
	textfmt_progress(buf, sizeof buf, a, st, index, count, t->utf8);
	werase(t->w_status);
	wattrset(t->w_status, theme_attr(ROLE_INFO));
	mvwaddstr(t->w_status, 0, 0, buf);
	wattrset(t->w_status, A_NORMAL);
	wnoutrefresh(t->w_status);
	doupdate();
	t->redraw |= R_STATUS;
}

static void
tui_on_signal(int sig)
{
	tui_signal = sig;
}

/* endwin() once, from any way out (atexit, signals, fatal errors, q). */
static void
tui_end(void)
{
	if (tui_curses_on) {
		tui_curses_on = 0;
		curs_set(1);
		endwin();
	}
}

/* ------------------------------------------------------------------ */
/* Narration                                                            */
/* ------------------------------------------------------------------ */

/* Lesson text for the screen: control characters escaped, newlines kept, tabs expanded (every 4 columns). */
static char *
screen_text(const char *s)
{
	char *e = text_escape(s ? s : "", "\n\t"), *x = e != NULL ? text_expand_tabs(e, 4) : NULL;

	free(e);
	return x;
}

/* Append lesson text (escaped, newlines kept) to a growing heap string. */
static void
sb_add(char **sb, const char *s, int escape)
{
	char *e = escape ? screen_text(s) : NULL;
	const char *src = escape ? e : s;
	size_t old = *sb ? strlen(*sb) : 0, add = src ? strlen(src) : 0;
	char *n = realloc(*sb, old + add + 1);

	if (n != NULL) {
		memcpy(n + old, src ? src : "", add);
		n[old + add] = '\0';
		*sb = n;
	}
	free(e);
}

static void
tui_build_narr(Tui *t)
{
	const Session *s = t->s;
	const Step *st = session_step(s);
	char *sb = NULL;
	const char *text = s->stage == st->stage ? session_text(s, &st->text) : "";

	if (text == NULL || *text == '\0')
		text = stage_blurb(s->stage, s->lang);
	/* An open question comes first: on a small screen the narration scrolls, the question must not. */
	const int open = st->has_quiz && s->stage == st->stage && s->quiz[s->step] == QUIZ_OPEN;
	/* the decode step or tile shown and what it holds (our own text, tokens escaped): first, after an open question */
	char *caption = textfmt_caption(s, t->utf8);
	/* a message too wide for the status line (a wrong answer's feedback) heads the narration of its place */
	const int place = (s->step + 1) * (STAGE_COUNT + 1) + (int)s->stage;
	if (t->note != NULL && t->note_place == 0)
		t->note_place = place;
	if (t->note != NULL && t->note_place != place) {
		free(t->note);
		t->note = NULL;
	}
	if (t->note != NULL) {
		sb_add(&sb, t->note, 0);
		sb_add(&sb, "\n\n", 0);
	}
	t->narr_must = 0;
	/* the lesson's own words after the learner changed the lesson: say they were written for it as it was */
	if (session_edited_note(s) != NULL && s->stage == st->stage && (st->has_quiz || *session_text(s, &st->text))) {
		sb_add(&sb, session_edited_note(s), 0);
		sb_add(&sb, "\n", 0);
	}
	if (!open && caption != NULL)
		sb_add(&sb, caption, 0);
	if (!open)
		sb_add(&sb, text ? text : "", 1);

	if (st->has_quiz && s->stage == st->stage) {
		const Quiz *q = &st->quiz;
		char buf[96];
		if (!open)
			sb_add(&sb, "\n\n", 0);
		/* TRANSLATORS: each starts with the word of the msgid "Quiz" (the narration colours such lines) */
		sb_add(&sb, s->quiz[s->step] == QUIZ_OPEN ? _("Quiz: ") : s->quiz[s->step] == QUIZ_RIGHT ? _("Quiz (right): ")
		            : s->quiz[s->step] == QUIZ_WRONG ? _("Quiz (wrong): ") : _("Quiz (skipped): "), 0);
		sb_add(&sb, session_text(s, &q->question), 1);
		for (int i = 0; i < q->nchoices; i++) {
			snprintf(buf, sizeof buf, "\n  %d) ", i + 1);
			sb_add(&sb, buf, 0);
			sb_add(&sb, session_text(s, &q->choices[i]), 1);
		}
		if (s->quiz[s->step] == QUIZ_OPEN) {
			if (q->nchoices > 0 && q->nchoices <= 9)
				snprintf(buf, sizeof buf, _("\nPress 1-%d, or :answer N, :skip, :hint"), q->nchoices);
			else
				snprintf(buf, sizeof buf, "\n%s", _("Type :answer VALUE, :skip or :hint"));
			sb_add(&sb, buf, 0);
			t->narr_must = sb != NULL ? (int)strlen(sb) : 0;
			sb_add(&sb, "\n\n", 0);
			if (caption != NULL)
				sb_add(&sb, caption, 0);
			sb_add(&sb, text ? text : "", 1);
		}
	}
	free(caption);
	if (!t->utf8 && sb != NULL) {
		/* a terminal that cannot show UTF-8: "exp(−∞) = 0" reads "exp(-inf) = 0", not "exp(???) = 0" */
		char *a = text_ascii(sb);
		if (a != NULL) {
			free(sb);
			sb = a;
		}
	}
	free(t->narr);
	t->narr = sb ? sb : strdup("");
	if (t->narr == NULL || t->narr_must > (int)strlen(t->narr))
		t->narr_must = 0;
	t->narr_top = 0;
}

/* ------------------------------------------------------------------ */
/* Layout and windows                                                   */
/* ------------------------------------------------------------------ */

static void
tui_free_windows(Tui *t)
{
	WINDOW **ws[] = { &t->w_stage, &t->w_narr, &t->w_keys, &t->w_status, &t->w_popup };

	for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++)
		if (*ws[i]) {
			delwin(*ws[i]);
			*ws[i] = NULL;
		}
	for (int i = 0; i < LAYOUT_MAX_PANES; i++)
		if (t->pane[i].win) {
			delwin(t->pane[i].win);
			t->pane[i].win = NULL;
		}
}

static WINDOW *
win_for(const LayoutRect *r)
{
	if (r->h <= 0 || r->w <= 0)
		return NULL;
	return newwin(r->h, r->w, r->y, r->x);
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

/* Count narration lines at width w. */
static int
narr_count(const Tui *t, int w)
{
	TextLine *lines = NULL;
	int n = text_wrap(t->narr ? t->narr : "", w, &lines);
	free(lines);
	return n < 1 ? 1 : n;
}

/* Narration lines at width w that must be in view (an open question and its choices; 0 when none). */
static int
narr_must_count(const Tui *t, int w)
{
	TextLine *lines = NULL;
	char *head;
	int n;

	if (t->narr == NULL || t->narr_must <= 0 || (head = strndup(t->narr, (size_t)t->narr_must)) == NULL)
		return 0;
	n = text_wrap(head, w, &lines);
	free(lines);
	free(head);
	return n < 0 ? 0 : n;
}

/* The panes laid out with the narration: all of them, or (solo) only the focused one in the place of all. */
static void
tui_layout_panes(Tui *t, LayoutIn *in, Layout *lay, int solo)
{
	if (!solo) {
		layout_compute(in, lay);
		return;
	}
	/* the focused pane, and beside it the one line of a pane a question hides (it says how to answer) */
	LayoutIn one = *in;
	int idx[2] = { t->focus, -1 };
	one.npanes = t->npanes > 0 ? 1 : 0;
	for (int i = 0; i < t->npanes; i++)
		if (t->pane[i].hidden && i != t->focus && idx[1] < 0)
			idx[1] = i;
	if (idx[1] >= 0)
		one.npanes = 2;
	for (int k = 0; k < one.npanes; k++) {
		one.want_w[k] = in->want_w[idx[k]];
		one.want_h[k] = in->want_h[idx[k]];
	}
	layout_compute(&one, lay);
	LayoutRect r[2] = { lay->pane[0], lay->pane[1] };
	memset(lay->pane, 0, sizeof lay->pane);
	lay->npanes = t->npanes;
	for (int k = 0; k < one.npanes; k++)
		lay->pane[idx[k]] = r[k];
}

/* Compute the layout for the current panes; recreate windows when it changed. */
static void
tui_layout(Tui *t, int force)
{
	LayoutIn in;
	Layout lay;

	memset(&in, 0, sizeof in);
	in.cols = COLS;
	in.lines = LINES;
	in.present = t->opt.present;
	in.npanes = t->npanes;
	/* The formula has a line of its own; presenting, a blank line too. */
	in.narr_lines = narr_count(t, COLS - 2) + 1 + (t->opt.present ? 1 : 0);
	in.narr_need = narr_must_count(t, COLS - 2);
	if (in.narr_need > 0 && t->opt.present)
		in.narr_need++; /* presenting, the formula's blank line */
	t->solo = 0;
	/*
	 * Presenting, cells get wider and rows get blank lines between them as
	 * far as every pane still shows whole: the first of these that fits.
	 */
	static const int tries[][2] = { { 6, 1 }, { 4, 1 }, { 2, 1 }, { 2, 0 }, { 1, 0 }, { 0, 0 } };
	int ntries = sizeof tries / sizeof tries[0];
	for (int k = t->opt.present ? 0 : ntries - 1; k < ntries; k++) {
		for (int i = 0; i < t->npanes; i++) {
			t->pane[i].pad = tries[k][0];
			t->pane[i].rgap = tries[k][1];
			pane_want(&t->pane[i], &in.want_w[i], &in.want_h[i]);
		}
		tui_layout_panes(t, &in, &lay, 0);
		/*
		 * The narration took the room an open question needs: rather than
		 * crop every pane's rows, the panes give way, and the focused one
		 * (the result, else the pane Tab brings) has their room alone.
		 */
		if (in.narr_need > 0 && t->npanes > 1 && !lay.too_small) {
			for (int i = 0; i < t->npanes && !t->solo; i++)
				if (!t->pane[i].zoom && lay.pane[i].h < in.want_h[i])
					t->solo = 1;
			if (t->solo)
				tui_layout_panes(t, &in, &lay, 1);
		}
		int fits = !lay.too_small;
		for (int i = 0; i < t->npanes && fits; i++)
			if (!t->pane[i].zoom && (!t->solo || i == t->focus) &&
			    (lay.pane[i].w < in.want_w[i] || lay.pane[i].h < in.want_h[i]))
				fits = 0;
		if (fits)
			break;
	}

	if (!force && t->have_layout && memcmp(&lay, &t->lay, sizeof lay) == 0 && t->w_status != NULL)
		return;
	tui_free_windows(t);
	t->lay = lay;
	t->have_layout = 1;
	werase(stdscr);
	wnoutrefresh(stdscr);
	t->redraw |= R_ALL;
	if (lay.too_small)
		return;
	t->w_stage = win_for(&lay.stage);
	t->w_narr = win_for(&lay.narr);
	t->w_keys = win_for(&lay.keys);
	t->w_status = win_for(&lay.status);
	for (int i = 0; i < t->npanes; i++)
		t->pane[i].win = win_for(&lay.pane[i]);
	if (t->w_status)
		keypad(t->w_status, TRUE);
}

/* ------------------------------------------------------------------ */
/* Drawing                                                              */
/* ------------------------------------------------------------------ */

/* ", step 3 of 7, cache 3 rows" or ", tile (0, 1) of 3×3" after the stage's name, at a decode step or tile. */
static void
tui_stage_substep(const Tui *t, char *stage, size_t size)
{
	char *sub = textfmt_substep(t->s, t->utf8);
	const size_t len = strlen(stage);

	if (sub != NULL && len < size)
		/* TRANSLATORS: joins the decode step or tile to the stage line */
		snprintf(stage + len, size - len, _(", %s"), sub);
	free(sub);
}

static void
tui_draw_stage(Tui *t)
{
	const Session *s = t->s;
	WINDOW *w = t->w_stage;
	int W = getmaxx(w);
	char right[160], stage[96];
	attr_t base = theme_attr(ROLE_STAGE);

	werase(w);
	wbkgdset(w, ' ' | base);
	wattrset(w, base);
	wmove(w, 0, 0);
	for (int i = 0; i < W; i++)
		waddch(w, ' ');

	/* "TITLE  step k/N  stage: NAME  head h of H  quiz r/a": the title gives way first. */
	char step[32];
	/* TRANSLATORS: the stage line; keep the two blanks on each side */
	snprintf(step, sizeof step, _("  step %d/%d  "), s->step + 1, s->nwalk);
	if (s->lesson->encoder != NULL) {
		char *place = session_place(s, t->utf8);
		snprintf(stage, sizeof stage, _("%s  stage: %s"), place != NULL ? place : "", stage_name(s->stage));
		free(place);
	} else if (session_layers(s) > 1)
		snprintf(stage, sizeof stage, _("layer %d of %d  stage: %s"), s->layer, session_layers(s), stage_name(s->stage));
	else
		snprintf(stage, sizeof stage, _("stage: %s"), stage_name(s->stage));
	tui_stage_substep(t, stage, sizeof stage);
	char heads[40] = "", quiz[40] = "", params[40] = "";
	if (s->attn->heads > 1)
		snprintf(heads, sizeof heads, _("  head %d of %d"), s->head, s->attn->heads);
	if (s->quiz_asked > 0)
		snprintf(quiz, sizeof quiz, _("  quiz %d/%d"), s->quiz_right, s->quiz_asked);
	/* The learned numbers of the layer, where they are used (not while a question may ask for them). */
	if ((stage_kinds[s->stage].flags & SF_PARAMS) && !session_quiz_pending(s))
		snprintf(params, sizeof params, _("  params %ld"), stats_param_count(s->attn->lesson));
	snprintf(right, sizeof right, "%s%s%s", heads, quiz, params);

	int need = text_width(step, -1) + text_width(stage, -1) + text_width(right, -1);
	int title_max = W - 2 - need;
	int x = 1;
	if (title_max >= 8) {
		/*
		 * A title that does not fit ends in an ellipsis, so it reads as cut
		 * rather than as a title that really ends in "may not lo"; the
		 * room left varies with the step and stage names.
		 */
		const char *raw = session_text(s, &s->lesson->title);
		/* lesson text: escaped, never a format; spelled in ASCII where UTF-8 cannot be shown */
		char *a = t->utf8 ? NULL : text_ascii(raw ? raw : "");
		char *e = text_escape(a ? a : raw ? raw : "", "");
		free(a);
		const char *title = e ? e : "";
		x += put_fit(w, 0, x, base | A_BOLD, title, title_max, t->utf8);
		free(e);
	}
	x += put_at(w, 0, x, base, step, W - x);
	x += put_at(w, 0, x, theme_attr(ROLE_STAGE_NAME), stage, W - x);
	put_at(w, 0, x, base, right, W - x);
	wbkgdset(w, ' ');
	wnoutrefresh(w);
}

static void
tui_draw_narr(Tui *t)
{
	WINDOW *w = t->w_narr;
	int H = getmaxy(w), W = getmaxx(w);
	TextLine *lines = NULL;
	int present = t->opt.present && H >= 5;
	/* Presenting, the formula comes first, bold, with a blank line under it. */
	int n, text_h = H - 2 - (present ? 1 : 0), text_y = present ? 3 : 1;
	const char *formula = i18n_msg(stage_formula(&t->s->attn->shape, t->s->stage, t->utf8));

	werase(w);
	wattrset(w, theme_attr(ROLE_RULE));
	wmove(w, 0, 0);
	if (t->utf8)
		whline_set(w, WACS_HLINE, W);
	else
		whline(w, '-', W);
	{
		/* Where in the block the numbers are: its map on the rule, the current sublayer in brackets. */
		char *map = session_stage_map(t->s, t->utf8);
		if (map != NULL && text_width(map, -1) + 4 < W) {
			put_at(w, 0, 2, theme_attr(ROLE_RULE), " ", W);
			put_at(w, 0, 3, theme_attr(ROLE_STAGE_NAME), map, W - 3);
			put_at(w, 0, 3 + text_width(map, -1), theme_attr(ROLE_RULE), " ", W);
		}
		free(map);
	}
	n = text_wrap(t->narr ? t->narr : "", W - 2, &lines);
	if (t->narr_top > n - text_h)
		t->narr_top = n - text_h > 0 ? n - text_h : 0;
	if (n > text_h) {
		char more[48];
		snprintf(more, sizeof more, " %d-%d/%d PgUp/PgDn ", t->narr_top + 1,
		         t->narr_top + text_h < n ? t->narr_top + text_h : n, n);
		put_at(w, 0, W - text_width(more, -1) - 1, theme_attr(ROLE_RULE), more, W);
	}
	for (int i = 0; i < text_h && t->narr_top + i < n; i++) {
		const TextLine *l = &lines[t->narr_top + i];
		const char *p = t->narr + l->off;
		attr_t at = theme_attr(ROLE_NARR);
		if (strncmp(p, _("Quiz"), strlen(_("Quiz"))) == 0 || (l->len > 2 && p[0] == ' ' && p[1] == ' ' && p[2] >= '1' && p[2] <= '9'))
			at = theme_attr(ROLE_QUIZ);
		wattrset(w, at);
		wmove(w, text_y + i, 1);
		draw_text(w, p, l->len, W - 2, 0);
	}
	free(lines);
	if (formula && present)
		put_at(w, 1, 1, theme_attr(ROLE_FORMULA) | A_BOLD, formula, W - 2);
	else if (formula)
		put_at(w, H - 1, 1, theme_attr(ROLE_FORMULA), formula, W - 2);
	wattrset(w, A_NORMAL);
	wnoutrefresh(w);
}

static void
tui_draw_status(Tui *t)
{
	WINDOW *w = t->w_status;
	int W = getmaxx(w);

	werase(w);
	if (t->mode == MODE_CMD && t->le) {
		LineView v;
		lineedit_view(t->le, &v);
		int pw = text_width(v.prompt ? v.prompt : "", -1);
		int skip = pw + v.cursor_col - (W - 2);
		if (skip < 0)
			skip = 0;
		wattrset(w, theme_attr(ROLE_CMDLINE));
		wmove(w, 0, 0);
		int used = 0;
		if (skip < pw)
			used = draw_text(w, v.prompt, -1, W - 1, skip);
		int tskip = skip > pw ? skip - pw : 0;
		char *e = text_escape(v.text ? v.text : "", "");
		draw_text(w, e ? e : "", -1, W - 1 - used, tskip);
		free(e);
		wattrset(w, A_NORMAL);
		wmove(w, 0, pw + v.cursor_col - skip);
		wnoutrefresh(w);
		return;
	}
	/* At the right: the demo's place, or :play. */
	char right[96] = "";
	if (t->demo != NULL) {
		/* TRANSLATORS: the demo's state; the words before the colon are shown alone where room is short */
		const char *state = t->demo_at_quiz && session_quiz_pending(t->s) ? _("  question: space reveals")
		                  : t->demo_at_pause ? _("  paused: space goes on")
		                  : t->demo_pos >= t->demo->n ? _("  end: p back, q leaves")
		                  : t->demo_paused ? _("  paused: space plays, n/p step") : "";
		/* k/N counts the script's entries; the line is where the last one ran in the file */
		const int lineno = t->demo_pos > 0 ? t->demo->line[t->demo_pos - 1].lineno : 0;
		snprintf(right, sizeof right, _("demo %d/%d, line %d%s "), t->demo_pos, t->demo->n, lineno, state);
		/* at 80 columns, or beside a long message, the indicator stays, shorter: the state's first word */
		if (text_width(right, -1) > W / 2 ||
		    (t->msg != NULL && text_width(t->msg, -1) + text_width(right, -1) > W - 1)) {
			char shortstate[24] = "";
			/* a colon, or a full-width one (：) */
			const char *colon = strchr(state, ':'), *wide = strstr(state, "\uff1a");
			if (wide != NULL && (colon == NULL || wide < colon))
				colon = wide;
			if (colon != NULL && colon - state < (long)sizeof shortstate)
				snprintf(shortstate, sizeof shortstate, "%.*s", (int)(colon - state), state);
			snprintf(right, sizeof right, _("demo %d/%d%s "), t->demo_pos, t->demo->n, shortstate);
		}
	} else if (t->play_ms > 0) {
		snprintf(right, sizeof right, _("play %.3gs: any key stops "), (double)t->play_ms / 1000.0);
	}
	int rw = text_width(right, -1);
	if (rw > W / 2 && t->demo == NULL)
		rw = 0;
	else if (rw > 0)
		put_at(w, 0, W - rw, theme_attr(ROLE_KEY), right, rw);
	int left = W - 1 - (rw > 0 ? rw + 1 : 0);
	if (t->msg) {
		/* A message wider than the line (a long path, the list of themes) ends in "…". */
		put_fit(w, 0, 0, theme_attr(t->msg_error ? ROLE_ERROR : ROLE_INFO), t->msg, left, t->utf8);
	} else {
		int x = 0;
		const char *next = t->s->step == t->s->nwalk - 1 ? session_next_lesson(t->s) : NULL;
		if (next != NULL) {
			char offer[96];
			snprintf(offer, sizeof offer, _("finished! next: :load %s   "), next);
			x += put_at(w, 0, 0, theme_attr(ROLE_INFO) | A_BOLD, offer, left);
		}
		if (t->npanes > 0 && !t->pane[t->focus].hidden && t->pane[t->focus].rows > 0) {
			const Pane *p = &t->pane[t->focus];
			const Mat *m = pane_mat(t, p);
			int R, C;
			char num[16], line[160];
			pane_src(p, p->cur_r, p->cur_c, &R, &C);
			if (m && session_cell_state(t->s, pane_attn(t, p), p->which, R, C) == CELL_UNSEEN) {
				snprintf(line, sizeof line, _("%s[%d][%d]: not computed at this step (or not in its cache)"),
				         matrix_name(p->which), R, C);
				put_at(w, 0, x, theme_attr(ROLE_LABEL), line, left - x);
			} else if (m) {
				labels_number(num, MAT_AT(*m, R, C), t->utf8);
				if (matrix_per_head(p->which) && pane_attn(t, p)->lesson->heads > 1)
					snprintf(line, sizeof line, _("%s%s[%d][%d] (head %d) = %s   Enter: where from?"),
					         p->variant ? _("variant ") : "", matrix_name(p->which), R, C, p->head, num);
				else
					snprintf(line, sizeof line, _("%s%s[%d][%d] = %s   Enter: where from?"),
					         p->variant ? _("variant ") : "", matrix_name(p->which), R, C, num);
				/* a cell the compared pane lacks (a prefix has fewer rows) is not compared: say so */
				const Mat *o = p->other >= 0 ? pane_mat(t, &t->pane[p->other]) : NULL;
				if (o != NULL && (R >= o->rows || C >= o->cols))
					snprintf(line, sizeof line,
					         p->variant ? _("%s%s[%d][%d] = %s   only in the variant: not compared")
					                    : _("%s%s[%d][%d] = %s   only in the lesson: not compared"),
					         p->variant ? _("variant ") : "", matrix_name(p->which), R, C, num);
				put_at(w, 0, x, theme_attr(ROLE_LABEL), line, left - x);
			}
		}
	}
	wnoutrefresh(w);
}

static void
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

	t->w_popup = newwin(wh, ww, (LINES - wh) / 2, (COLS - ww) / 2);
	if (t->w_popup == NULL) {
		free(lines);
		free(hung);
		return;
	}
	WINDOW *w = t->w_popup;
	wbkgd(w, ' ' | theme_attr(ROLE_POPUP));
	werase(w);
	wattrset(w, theme_attr(ROLE_POPUP_TITLE));
	if (t->utf8)
		box_set(w, WACS_VLINE, WACS_HLINE);
	else
		wborder(w, '|', '|', '-', '-', '+', '+', '+', '+');
	if (t->popup_title) {
		wmove(w, 0, 2);
		waddch(w, ' ');
		draw_text(w, t->popup_title, -1, ww - 6, 0);
		waddch(w, ' ');
	}
	wattrset(w, theme_attr(ROLE_POPUP));
	for (int i = 0; i < text_h && t->popup_top + i < n; i++) {
		wmove(w, 1 + i, 2);
		draw_text(w, text + lines[t->popup_top + i].off, lines[t->popup_top + i].len, ww - 4, 0);
	}
	char foot[64];
	if (n > text_h)
		snprintf(foot, sizeof foot, _(" %d-%d/%d  arrows scroll, q close "), t->popup_top + 1,
		         t->popup_top + text_h, n);
	else
		snprintf(foot, sizeof foot, _(" q/Esc/Enter close "));
	put_at(w, wh - 1, 2, theme_attr(ROLE_POPUP_TITLE), foot, ww - 4);
	free(lines);
	free(hung);
	wnoutrefresh(w);
}

static void
tui_draw_small(Tui *t)
{
	char size[64];
	const char *lines[3];

	(void)t;
	werase(stdscr);
	snprintf(size, sizeof size, _("%dx%d, need %dx%d"), COLS, LINES, LAYOUT_MIN_COLS, LAYOUT_MIN_LINES);
	lines[0] = _("terminal too small");
	lines[1] = size;
	lines[2] = _("q quits");
	int y = (LINES - 3) / 2;
	if (y < 0)
		y = 0;
	for (int i = 0; i < 3 && y + i < LINES; i++) {
		int x = (COLS - (int)strlen(lines[i])) / 2;
		put_at(stdscr, y + i, x > 0 ? x : 0, theme_attr(i == 0 ? ROLE_NOTICE : ROLE_LABEL), lines[i], COLS);
	}
	wnoutrefresh(stdscr);
}

static void tui_draw_keys(Tui *t);

/* Draw what changed, then update the screen once. */
static void
tui_draw(Tui *t)
{
	if (t->redraw & R_LAYOUT)
		tui_layout(t, 1);
	if (t->lay.too_small) {
		if (t->redraw)
			tui_draw_small(t);
		t->redraw = 0;
		curs_set(0);
		doupdate();
		return;
	}
	if (t->redraw & R_STAGE)
		tui_draw_stage(t);
	if (t->redraw & R_PANES)
		tui_draw_panes(t);
	if (t->redraw & R_NARR)
		tui_draw_narr(t);
	if (t->redraw & R_KEYS)
		tui_draw_keys(t);
	if (t->mode == MODE_POPUP && t->redraw)
		tui_draw_popup(t);
	if (t->mode == MODE_MENU && t->redraw)
		tui_draw_menu(t);
	if (t->redraw & R_STATUS || t->mode == MODE_CMD)
		tui_draw_status(t);
	t->redraw = 0;
	curs_set(t->mode == MODE_CMD ? 1 : 0);
	doupdate();
}

/* ------------------------------------------------------------------ */
/* Messages, pop-ups, commands                                          */
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
	if (t->msg != NULL && t->mode != MODE_CMD &&
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

	if (t->mode == MODE_POPUP && t->popup_text && tx) {
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
	t->mode = MODE_POPUP;
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
	t->mode = MODE_MAIN;
	/* What the pop-up covered comes back. */
	touchwin(stdscr);
	wnoutrefresh(stdscr);
	t->redraw |= R_ALL & ~R_LAYOUT;
}

static void
out_message(void *ctx, CmdMsg kind, const char *title, const char *text)
{
	Tui *t = ctx;

	if (t->replaying)
		return; /* p in a demo: the script replays quietly */
	if (kind == MSG_TEXT)
		tui_popup(t, title, text);
	else
		tui_set_msg(t, kind == MSG_ERROR, text);
}

/* The stage that shows a matrix: where it is the result, else the first that shows it. */
static int
stage_showing(const Session *s, AttnMatrix which)
{
	AttnMatrix ms[STAGE_MAX_PANES];
	int first = -1;

	for (int st = 0; st < STAGE_COUNT; st++) {
		if (!stage_present(&s->attn->shape, (Stage)st))
			continue;
		int k = attn_stage_matrices(s->attn, (Stage)st, ms);
		for (int i = 0; i < k; i++) {
			if (ms[i] != which)
				continue;
			if (i == k - 1)
				return st;
			if (first < 0)
				first = st;
		}
	}
	return first;
}

static void
out_show(void *ctx, AttnMatrix which, int head)
{
	Tui *t = ctx;
	Session *s = t->s;
	char *err = NULL;
	int st = stage_showing(s, which);

	if (st < 0) {
		tui_msgf(t, 1, _("%s is not shown in any stage of this lesson"), matrix_name(which));
		return;
	}
	/* The stage first: going to a stage may bring its step's head. */
	if ((Stage)st != s->stage && session_goto_stage(s, (Stage)st, &err) != 0) {
		tui_set_msg(t, 1, err);
		free(err);
		return;
	}
	if (head != s->head && session_set_head(s, head, &err) != 0) {
		tui_set_msg(t, 1, err);
		free(err);
		return;
	}
	t->want_focus = (int)which + 1;
	t->want_head = head;
	tui_msgf(t, 0, _("%s (stage %s)"), matrix_name(which), stage_name((Stage)st));
}

static void tui_present(Tui *t, int on);
static void tui_theme(Tui *t, const char *name);

/* Seconds for play (positive) and wait (0 too), at most DEMO_MAX_WAIT; -1 with a message otherwise. */
static double
tui_seconds(Tui *t, const char *cmd, const char *arg, int positive)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end != '\0' || !(v >= 0 && v <= DEMO_MAX_WAIT) || (positive && v <= 0)) {
		char *safe = text_escape(arg, "");
		tui_msgf(t, 1, positive ? _("%s: expected seconds above 0 up to %g, got \"%.60s\"")
		                        : _("%s: expected seconds from 0 up to %g, got \"%.60s\""),
		         cmd, DEMO_MAX_WAIT, safe ? safe : "");
		free(safe);
		return -1;
	}
	return v;
}

/* The front-end commands of the table (exec NULL): theme, present, play, source, pause, wait. */
static int
out_frontend(void *ctx, const char *name, int argc, char **argv)
{
	Tui *t = ctx;

	if (strcmp(name, "theme") == 0 && argc >= 2) {
		tui_theme(t, argv[1]);
		return 1;
	}
	if (strcmp(name, "present") == 0 && argc >= 2) {
		if (strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0) {
			tui_set_msg(t, 1, _("usage: present on|off"));
			return 1;
		}
		tui_present(t, strcmp(argv[1], "on") == 0);
		return 1;
	}
	if (strcmp(name, "play") == 0) {
		double sec = argc >= 2 ? tui_seconds(t, "play", argv[1], 1) : 2.0;
		if (sec < 0 || t->replaying)
			return 1;
		t->play_ms = (long long)(sec * 1000 + 0.5);
		if (t->play_ms < 1)
			t->play_ms = 1;
		t->play_due = tui_now_ms() + t->play_ms;
		tui_msgf(t, 0, _("playing: the next step every %gs; any key stops"), sec);
		t->redraw |= R_STATUS;
		return 1;
	}
	if (strcmp(name, "source") == 0 && argc >= 2) {
		if (t->demo != NULL && t->demo_running)
			tui_demo_source(t, argv[1]); /* a demo's own `source`: the script plays next */
		else if (t->demo != NULL)
			tui_set_msg(t, 1, _("source: a demo is already playing (q leaves it)"));
		else
			tui_demo_start(t, argv[1]);
		return 1;
	}
	if (strcmp(name, "pause") == 0 || strcmp(name, "wait") == 0) {
		/* In a script these are entries of their own (demo.c); typed here, there is nothing to wait for. */
		if (strcmp(name, "wait") == 0 && argc >= 2 && tui_seconds(t, "wait", argv[1], 0) < 0)
			return 1;
		tui_msgf(t, 0, _("%s works in demo scripts (source FILE)"), name);
		return 1;
	}
	return 0;
}

/* Run one command line; returns cmd_run's status (0, or -1 when it failed). */
int
tui_run_line(Tui *t, const char *line)
{
	CmdOut out;

	memset(&out, 0, sizeof out);
	out.ctx = t;
	out.message = out_message;
	out.show = out_show;
	out.frontend = out_frontend;
	out.color = 0;
	out.utf8 = t->utf8;
	out.interactive = 1;
	return cmd_run(t->s, line, &out);
}

/* ------------------------------------------------------------------ */
/* Themes, presenter mode                                               */
/* ------------------------------------------------------------------ */

static void
tui_theme(Tui *t, const char *name)
{
	const char *nc = getenv("NO_COLOR");
	char *err = NULL;

	/* A theme that does not load leaves the default in use (theme_init says why). */
	if (theme_init(name, nc != NULL && *nc != '\0', &err) != 0)
		tui_msgf(t, 1, _("using the default theme: %s"), err ? err : _("cannot load the theme"));
	else
		tui_msgf(t, 0, _("theme %s (%d colours)"), theme_name(), theme_colors());
	free(err);
	/* Pane widths depend on colour (glyphs without it). */
	tui_build_panes(t, 1, 0);
	t->redraw |= R_ALL;
}

static void
tui_present(Tui *t, int on)
{
	t->opt.present = on;
	tui_set_msg(t, 0, on ? _("presenter mode on") : _("presenter mode off"));
	tui_build_panes(t, 1, 0);
	t->redraw |= R_ALL;
}

/* ------------------------------------------------------------------ */
/* Session changes → view                                               */
/* ------------------------------------------------------------------ */

/* At a decode step or tile: each pane's cursor on its first new cell (the new row, the tile), so it scrolls into view. */
static void
tui_cursor_to_new(Tui *t)
{
	/* only a decode step or a tile has new cells: elsewhere this would look at every cell for nothing */
	if (t->s->dec_t < 0 && t->s->tile_q < 0)
		return;
	for (int i = 0; i < t->npanes; i++) {
		Pane *p = &t->pane[i];
		const Attn *a = pane_attn(t, p);
		int found = 0;
		if (p->hidden || pane_mat(t, p) == NULL)
			continue;
		/* the first row with a new cell, at its last one (a decode row's newest key, a tile's right edge) */
		for (int r = 0; r < p->rows && !found; r++)
			for (int c = 0; c < p->cols; c++) {
				int R, C;
				pane_src(p, r, c, &R, &C);
				const CellState cs = session_cell_state(t->s, a, p->which, R, C);
				if (cs == CELL_NEW || cs == CELL_AFTER) {
					p->cur_r = r;
					p->cur_c = c;
					found = 1;
				}
			}
	}
}

/* 1 when the place is still the step last arrived at (n/p inside its decode steps or tiles); notes the arrival. */
static int
tui_arrived(Tui *t)
{
	const int was = t->arrived, now = (t->s->step + 1) * (STAGE_COUNT + 1) + (int)t->s->stage;
	const int inside = t->s->dec_t >= 0 || t->s->tile_q >= 0;

	t->arrived = now;
	return inside && was == now;
}

static void
tui_sync(Tui *t)
{
	Session *s = t->s;
	unsigned d = s->dirty;

	if (d == 0 && !t->want_focus)
		return;
	s->dirty = 0;
	/* another language: the panes' titles, the stage, status and key lines are words too */
	if (d & (DIRTY_LESSON | DIRTY_VALUES | DIRTY_PLACE | DIRTY_QUIZ | DIRTY_LANG)) {
		int keep = !(d & DIRTY_LESSON);
		int place = (d & (DIRTY_LESSON | DIRTY_PLACE)) != 0;
		tui_build_panes(t, keep, place);
		if (place) {
			const Step *st = session_step(s);
			tui_cursor_to_new(t);
			if (!tui_arrived(t) && st->has_focus && st->stage == s->stage)
				tui_focus_matrix(t, matrix_find(st->focus.matrix), st->focus.head, st->focus.row,
				                 st->focus.col);
		} else if (d & DIRTY_QUIZ) {
			/* The answer is out: look at the pane that was hidden (the stage's result), at the step's cell. */
			const Step *st = session_step(s);
			for (int i = t->npanes - 1; i >= 0; i--)
				if (!t->pane[i].variant && !t->pane[i].hidden) {
					t->focus = i;
					break;
				}
			if (st->has_focus && st->stage == s->stage)
				tui_focus_matrix(t, matrix_find(st->focus.matrix), st->focus.head, st->focus.row,
				                 st->focus.col);
		}
		t->redraw |= R_PANES | R_STAGE | R_STATUS | R_KEYS;
	}
	if (d & (DIRTY_LESSON | DIRTY_PLACE | DIRTY_LANG | DIRTY_VALUES | DIRTY_QUIZ)) {
		tui_build_narr(t);
		t->redraw |= R_NARR | R_STAGE;
	}
	if (d & DIRTY_STATUS)
		t->redraw |= R_STATUS;
	if ((d & DIRTY_VALUES) && !(d & DIRTY_LESSON) && s->prev_attn) {
		t->flash = 1;
		t->flash_until = tui_now_ms() + FLASH_MS;
	}
	if (t->want_focus) {
		tui_focus_matrix(t, t->want_focus - 1, t->want_head, -1, -1);
		t->want_focus = 0;
		t->redraw |= R_PANES | R_STATUS;
	}
	if (d & (DIRTY_LESSON | DIRTY_PLACE | DIRTY_QUIZ))
		tui_track(t);
	if (d)
		tui_layout(t, 0);
}

/* ------------------------------------------------------------------ */
/* Keys                                                                 */
/* ------------------------------------------------------------------ */

/* The entry of table for key, or NULL. */
const KeyEntry *
key_find(const KeyEntry *table, int key)
{
	for (const KeyEntry *e = table; e->run != NULL; e++)
		for (int i = 0; i < (int)(sizeof e->key / sizeof e->key[0]) && e->key[i] != 0; i++)
			if (e->key[i] == key)
				return e;
	return NULL;
}

/* A session call's error, if any, in the status line (error: as an error, not as information). */
static void
tui_report(Tui *t, int rc, char *err, int error)
{
	if (rc != 0)
		tui_set_msg(t, error, err ? err : _("cannot move"));
	free(err);
}

/* q: the view asks; the command table changes the session. */
static int
key_quit(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	tui_run_line(t, "quit");
	return 1;
}

/* [, ]: the layer before (arg -1) or after this one, round the layers (a lesson with layers). */
static int
key_layer(Tui *t, int key, int arg)
{
	char *err = NULL;
	const int n = session_layers(t->s), k = t->s->layer + arg;

	(void)key;
	if (n <= 1) {
		tui_set_msg(t, 0, _("this lesson has one layer"));
		return 1;
	}
	if (session_set_layer(t->s, k < 0 ? n - 1 : k >= n ? 0 : k, &err) != 0) {
		tui_set_msg(t, 1, err);
		free(err);
	}
	return 1;
}

/* n, p: the next (arg 1) or the previous step. */
static int
key_step(Tui *t, int key, int arg)
{
	char *err = NULL;
	int rc = (arg > 0 ? session_next : session_prev)(t->s, &err);

	(void)key;
	tui_report(t, rc, err, 0);
	return 1;
}

/* g, G: the first (arg 0) or the last step. */
static int
key_ends(Tui *t, int key, int arg)
{
	char *err = NULL;
	int rc = session_goto_step(t->s, arg ? t->s->nwalk - 1 : 0, &err);

	(void)key;
	tui_report(t, rc, err, 0);
	return 1;
}

/* H, L: the previous (arg -1) or next head, round the heads. */
static int
key_head(Tui *t, int key, int arg)
{
	char *err = NULL;
	int h = t->s->head + arg, n = t->s->attn->heads, rc;

	(void)key;
	if (n <= 1) {
		tui_set_msg(t, 0, _("this lesson has one head"));
		return 1;
	}
	if (h < 0)
		h = n - 1;
	if (h >= n)
		h = 0;
	rc = session_set_head(t->s, h, &err);
	tui_report(t, rc, err, 1);
	return 1;
}

/* Enter: where the cell under the cursor came from, in a pop-up. */
static int
key_explain(Tui *t, int key, int arg)
{
	char *err = NULL, title[64];

	(void)key;
	(void)arg;
	if (t->npanes == 0)
		return 1;
	Pane *p = &t->pane[t->focus];
	if (p->hidden) {
		tui_answer_first(t);
		return 1;
	}
	if (p->rows == 0 || p->cols == 0)
		return 1;
	int R, C;
	pane_src(p, p->cur_r, p->cur_c, &R, &C);
	char *text = explain_cell(pane_attn(t, p), p->which, p->head, R, C, t->utf8, &err);
	if (text == NULL) {
		tui_set_msg(t, 1, err ? err : _("nothing to explain"));
		free(err);
		return 1;
	}
	if (matrix_per_head(p->which) && t->s->attn->heads > 1)
		snprintf(title, sizeof title, _("%s[%d][%d] head %d"), matrix_name(p->which), R, C, p->head);
	else
		snprintf(title, sizeof title, "%s[%d][%d]", matrix_name(p->which), R, C);
	tui_popup(t, title, text);
	free(text);
	return 1;
}

/* The arrows and h j k l: arg 0 left, 1 right, 2 up, 3 down (zoomed out: by one block). */
static int
key_move(Tui *t, int key, int arg)
{
	static const int step_r[4] = { 0, 0, -1, 1 }, step_c[4] = { -1, 1, 0, 0 };
	int dr = step_r[arg], dc = step_c[arg];

	(void)key;
	if (t->npanes == 0)
		return 1;
	Pane *p = &t->pane[t->focus];
	if (p->rows == 0 || p->hidden)
		return 1;
	if (p->zoom) {
		WINDOW *w = p->win;
		int vis_r = w ? getmaxy(w) - 2 : 1, vis_c = w ? (getmaxx(w) - p->lw) / 2 : 1;
		if (vis_r < 1) vis_r = 1;
		if (vis_c < 1) vis_c = 1;
		dr *= (p->rows + vis_r - 1) / vis_r;
		dc *= (p->cols + vis_c - 1) / vis_c;
	}
	p->cur_r += dr;
	p->cur_c += dc;
	if (p->cur_r < 0) p->cur_r = 0;
	if (p->cur_c < 0) p->cur_c = 0;
	if (p->cur_r >= p->rows) p->cur_r = p->rows - 1;
	if (p->cur_c >= p->cols) p->cur_c = p->cols - 1;
	t->redraw |= R_PANES | R_STATUS;
	return 1;
}

/* Tab, Shift-Tab: the next (arg 1) or previous pane that is not hidden. */
static int
key_pane(Tui *t, int key, int arg)
{
	(void)key;
	if (t->npanes == 0)
		return 1;
	for (int i = 0; i < t->npanes; i++) {
		t->focus = (t->focus + arg + t->npanes) % t->npanes;
		if (!t->pane[t->focus].hidden)
			break;
	}
	if (t->solo) {
		/* the panes gave way to the narration: Tab brings the next one into the room */
		tui_layout(t, 0);
		tui_msgf(t, 0, _("pane %d of %d (Tab: the next; the question below keeps its room)"), t->focus + 1, t->npanes);
	}
	t->redraw |= R_PANES | R_STATUS;
	return 1;
}

/* z: the focused pane zoomed out to a heatmap, or back. */
static int
key_zoom(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	if (t->npanes > 0) {
		t->pane[t->focus].zoom = !t->pane[t->focus].zoom;
		tui_layout(t, 0);
		t->redraw |= R_PANES;
	}
	return 1;
}

/* PgDn, PgUp: the narration by a page (its text lines less one, kept for context) in arg's direction. */
static int
key_scroll(Tui *t, int key, int arg)
{
	const int H = t->w_narr != NULL ? getmaxy(t->w_narr) : 5;
	const int text_h = H - 2 - (t->opt.present && H >= 5 ? 1 : 0);
	const int page = text_h > 2 ? text_h - 1 : 1;

	(void)key;
	arg = arg < 0 ? -page : page;
	t->narr_top = t->narr_top + arg > 0 ? t->narr_top + arg : 0;
	t->redraw |= R_NARR;
	return 1;
}

/* 1-9: a choice of the open question, as :answer N. */
static int
key_answer(Tui *t, int key, int arg)
{
	char line[32];

	(void)arg;
	if (!session_quiz_pending(t->s) || session_step(t->s)->quiz.nchoices == 0)
		return 0;
	snprintf(line, sizeof line, "answer %c", key);
	tui_run_line(t, line);
	return 1;
}

/* :, the command line. */
static int
key_command(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	if (t->le) {
		t->mode = MODE_CMD;
		lineedit_start(t->le, ":");
		free(t->msg);
		t->msg = NULL;
		t->redraw |= R_STATUS | R_PANES;
	}
	return 1;
}

static char *tui_help_text(void);

/* ?: the keys and the commands. */
static int
key_help(Tui *t, int key, int arg)
{
	char *h = tui_help_text();

	(void)key;
	(void)arg;
	tui_popup(t, _("attnviz: keys and commands"), h ? h : "");
	free(h);
	return 1;
}

/* Ctrl-L: the whole screen drawn again. */
static int
key_redraw(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	clearok(curscr, TRUE);
	t->redraw |= R_ALL;
	return 1;
}

/* m: the course, with the learner's progress; Enter opens a lesson (tuicourse.c). */
static int
key_menu(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	return tui_menu_open(t);
}

/* c: back to where the learner left off, as :continue. */
static int
key_continue(Tui *t, int key, int arg)
{
	(void)key;
	(void)arg;
	tui_run_line(t, "continue");
	return 1;
}

/* The keys of the main view, in the order `?` lists them. */
/* clang-format off */
static const KeyEntry main_keys[] = {
	{ .key = { 'n', ' ', KEY_SRIGHT }, .keys = "n  space  Shift-Right", .does = N_("next step (in decode: the next token;\nin flash: the next tile)"),
	  .bar = 1, .bar_key = "n/spc", .bar_does = N_("next"), .run = key_step, .arg = 1 },
	{ .key = { 'p', KEY_BACKSPACE, 127, 8, KEY_SLEFT }, .keys = "p  Backspace  Shift-Left", .does = N_("previous step (token, tile)"),
	  .bar = 2, .bar_key = "p", .bar_does = N_("prev"), .run = key_step, .arg = -1 },
	{ .key = { 'g', KEY_HOME }, .keys = "g  G", .does = N_("first / last step"),
	  .bar = 12, .bar_key = "g/G", .bar_does = N_("first/last"), .run = key_ends, .arg = 0 },
	{ .key = { 'G', KEY_END }, .run = key_ends, .arg = 1 },
	{ .key = { KEY_LEFT, 'h' }, .keys = "arrows  h j k l", .does = N_("move the cell cursor"),
	  .bar = 3, .bar_key = "\u2190\u2191\u2193\u2192", .bar_ascii = "hjkl", .bar_does = N_("cell"), .run = key_move, .arg = 0 },
	{ .key = { KEY_RIGHT, 'l' }, .run = key_move, .arg = 1 },
	{ .key = { KEY_UP, 'k' }, .run = key_move, .arg = 2 },
	{ .key = { KEY_DOWN, 'j' }, .run = key_move, .arg = 3 },
	{ .key = { '\t' }, .keys = "Tab  Shift-Tab", .does = N_("next / previous pane"),
	  .bar = 5, .bar_key = "Tab", .bar_does = N_("pane"), .run = key_pane, .arg = 1 },
	{ .key = { KEY_BTAB }, .run = key_pane, .arg = -1 },
	{ .key = { '\r', '\n', KEY_ENTER }, .keys = "Enter", .does = N_("where did this number come from?"),
	  .bar = 4, .bar_key = "Enter", .bar_does = N_("explain"), .run = key_explain },
	{ .key = { 'H' }, .keys = "H  L", .does = N_("previous / next head"),
	  .bar = 6, .bar_key = "H/L", .bar_does = N_("head"), .when = KEY_HEADS, .run = key_head, .arg = -1 },
	{ .key = { 'L' }, .run = key_head, .arg = 1 },
	/* not listed in `?` */
	{ .key = { '[' }, .bar = 7, .bar_key = "[/]", .bar_does = N_("layer"), .when = KEY_LAYERS, .run = key_layer, .arg = -1 },
	{ .key = { ']' }, .run = key_layer, .arg = 1 },
	{ .key = { 'z' }, .keys = "z", .does = N_("zoom the pane out to a heatmap"),
	  .bar = 11, .bar_key = "z", .bar_does = N_("zoom"), .run = key_zoom },
	{ .key = { KEY_PPAGE }, .keys = "PgUp  PgDn", .does = N_("scroll the narration"), .run = key_scroll, .arg = -3 },
	{ .key = { KEY_NPAGE }, .run = key_scroll, .arg = 3 },
	{ .key = { '1', '2', '3', '4', '5', '6', '7', '8', '9' }, .keys = "1-9", .does = N_("answer a multiple-choice quiz"),
	  .run = key_answer },
	{ .key = { 'm' }, .keys = "m", .does = N_("the course: \u2713 finished, quiz scores, where you are;\nEnter opens a lesson"),
	  .bar = 13, .bar_key = "m", .bar_does = N_("course"), .run = key_menu },
	{ .key = { 'c' }, .keys = "c", .does = N_("continue where you left off last time"), .run = key_continue },
	{ .key = { ':' }, .keys = ":", .does = N_("command line: Tab completes,\nUp/Down history, Esc cancels"),
	  .bar = 8, .bar_key = ":", .bar_does = N_("command"), .run = key_command },
	{ .key = { '?' }, .keys = "?", .does = N_("this help (arrows scroll)"),
	  .bar = 9, .bar_key = "?", .bar_does = N_("help"), .run = key_help },
	{ .key = { 'q' }, .keys = "q", .does = N_("quit"), .bar = 10, .bar_key = "q", .bar_does = N_("quit"), .run = key_quit },
	{ .key = { 12 }, .run = key_redraw },
	{ .run = NULL }
};
/* clang-format on */

/* A key of the key line: "KEY what  ", when it fits; returns the next column. */
static int
key_item(WINDOW *w, int x, int W, const char *key, const char *what)
{
	int need = text_width(key, -1) + 1 + text_width(what, -1) + 2;

	if (x + need > W)
		return x;
	x += put_at(w, 0, x, theme_attr(ROLE_KEY), key, W - x);
	x += put_at(w, 0, x, theme_attr(ROLE_KEYS), " ", W - x);
	x += put_at(w, 0, x, theme_attr(ROLE_KEYS), what, W - x);
	x += put_at(w, 0, x, theme_attr(ROLE_KEYS), "  ", W - x);
	return x;
}

/*
 * The key line: main_keys by their place on it, as many as fit. With w, it
 * is drawn; either way, the entry whose columns hold column at (-1: none)
 * is returned, so a click finds what the line shows.
 */
static const KeyEntry *
keyline_walk(const Tui *t, WINDOW *w, int W, int at)
{
	int x = 1;

	for (int place = 1;; place++) {
		const KeyEntry *e = main_keys;
		while (e->run != NULL && e->bar != place)
			e++;
		if (e->run == NULL)
			break;
		if ((e->when == KEY_HEADS && t->s->attn->heads <= 1) || (e->when == KEY_LAYERS && session_layers(t->s) <= 1))
			continue;
		const char *key = t->utf8 || e->bar_ascii == NULL ? e->bar_key : e->bar_ascii, *does = _(e->bar_does);
		int need = text_width(key, -1) + 1 + text_width(does, -1) + 2;
		if (x + need > W)
			continue;
		if (at >= x && at < x + need - 2)
			return e;
		if (w != NULL)
			key_item(w, x, W, key, does);
		x += need;
	}
	return NULL;
}

static void
tui_draw_keys(Tui *t)
{
	WINDOW *w = t->w_keys;

	if (w == NULL)
		return;
	werase(w);
	wbkgdset(w, ' ' | theme_attr(ROLE_KEYS));
	werase(w);
	keyline_walk(t, w, getmaxx(w), -1);
	wbkgdset(w, ' ');
	wnoutrefresh(w);
}

/* The entry of the key line at column x of it, or NULL. */
const KeyEntry *
tui_keyline_at(const Tui *t, int x)
{
	return t->w_keys != NULL ? keyline_walk(t, NULL, getmaxx(t->w_keys), x) : NULL;
}

/* A `?` line: "  LEFT  RIGHT", RIGHT starting at column 2 + cols + 1 however wide LEFT's characters are. */
static void
help_row(StrBuf *b, const char *left, int cols, const char *right)
{
	int w = text_width(left, -1);

	strbuf_printf(b, "  %s%*s %s\n", left, w < cols ? cols - w : 0, "", right);
}

/* `?` lines for a key table: "  KEYS  DOES" ('\n' in DOES: its second line under the first). */
static void
help_keys(StrBuf *b, const KeyEntry *table)
{
	for (const KeyEntry *e = table; e->run != NULL; e++) {
		if (e->keys == NULL)
			continue;
		strbuf_printf(b, "  %-26s", e->keys);
		for (const char *d = _(e->does); *d != '\0'; d++) {
			if (*d == '\n')
				strbuf_printf(b, "\n  %-26s", "");
			else
				strbuf_add(b, d, 1);
		}
		strbuf_add(b, "\n", 1);
	}
}

static char *
tui_help_text(void)
{
	StrBuf b = { 0 };

	strbuf_printf(&b, "%s\n", _("Keys"));
	help_keys(&b, main_keys);
	strbuf_printf(&b, "\n%s\n", _("While a demo plays (--demo FILE, :source FILE)"));
	help_keys(&b, demo_keys);
	static const char *const mouse[][2] = {
		{ N_("click a cell"), N_("the cursor goes there, its operands light up") },
		{ N_("double-click, click again"), N_("where did this number come from?") },
		{ N_("click a pane"), N_("it takes the focus") },
		{ N_("wheel"), N_("scrolls the narration or the pane under it") },
		{ N_("click the key line"), N_("runs that key") },
		{ N_("Shift-drag"), N_("selects text (the terminal's own selection)") },
	};
	strbuf_printf(&b, "\n%s\n", _("The mouse (unless --no-mouse)"));
	for (size_t i = 0; i < sizeof mouse / sizeof mouse[0]; i++)
		help_row(&b, _(mouse[i][0]), 26, _(mouse[i][1]));
	strbuf_printf(&b, "\n%s\n%s\n\n%s\n", _(":play [SECONDS] steps on by itself; any key stops it."),
	              _("--present or :present on: larger cells, bigger narration."),
	              _("Commands (after :, unique prefixes work)"));
	for (const CmdEntry *e = cmd_table; e->name != NULL; e++)
		strbuf_printf(&b, "  %-30s %s\n", e->usage, _(e->help));
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* A key in the main view (the mouse acts through here too); 1 when its entry took it. */
int
tui_key_main(Tui *t, int key)
{
	const KeyEntry *e = key_find(main_keys, key);

	if (e != NULL && e->run(t, key, e->arg))
		return 1;
	if (key < 256 && key > 32)
		tui_msgf(t, 0, _("key %c does nothing here; ? shows the keys"), key);
	return 0;
}

static void
tui_key_popup(Tui *t, int key)
{
	if (tui_list_key(key == ' ' ? KEY_NPAGE : key, &t->popup_top, LINES - 6, t->popup_lines)) {
		t->redraw |= R_POPUP;
		return;
	}
	tui_popup_close(t);
	/*
	 * ':' closes the pop-up and opens the command line at once. It used
	 * to be swallowed, so typing ":answer 21" right after reading a
	 * :hint ran "answer 21" as keys: n and space stepped twice and 1
	 * answered another step's question.
	 */
	if (key == ':')
		tui_key_main(t, key);
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

static void
tui_key_cmd(Tui *t, int key)
{
	char *line = NULL;
	int r = lineedit_feed(t->le, key, &line);

	t->redraw |= R_STATUS;
	if (r == 0)
		return;
	t->mode = MODE_MAIN;
	t->redraw |= R_PANES;
	if (r == 1 && line)
		tui_run_line(t, line);
	free(line);
}

/* ------------------------------------------------------------------ */
/* Start and the loop                                                   */
/* ------------------------------------------------------------------ */

/* $XDG_STATE_HOME/attnviz/history (default ~/.local/state/attnviz/history); the directory is created. */
static char *
tui_history_path(void)
{
	char *path = paths_state_file("history");

	if (path != NULL && paths_make_parent(path) != 0) {
		free(path);
		return NULL;
	}
	return path;
}

static int
locale_utf8(void)
{
	const char *cs = nl_langinfo(CODESET);
	return cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

/* --render's terminal: a type every player knows, of the size asked; what curses writes goes nowhere. */
#define TUI_RENDER_TERM "xterm-256color"

static int
tui_render_term(Tui *t, FILE **out, FILE **in)
{
	char n[16];

	tui_clock_set(0); /* the demo's time starts here (tui_demo_start reads it) */
	/* ncurses takes the size from LINES and COLUMNS when the output is no terminal */
	snprintf(n, sizeof n, "%d", t->opt.render->height);
	setenv("LINES", n, 1);
	snprintf(n, sizeof n, "%d", t->opt.render->width);
	setenv("COLUMNS", n, 1);
	t->render_out = fopen("/dev/null", "w");
	t->render_in = fopen("/dev/null", "r");
	if (t->render_out == NULL || t->render_in == NULL) {
		fprintf(stderr, "attnviz: --render: cannot open /dev/null\n");
		t->rc = 1;
		return -1;
	}
	*out = t->render_out;
	*in = t->render_in;
	return 0;
}

/* Set up: the line editor, the signals, --record, curses and the theme. 0, or -1 (t->rc 1) when there is no terminal. */
static int
tui_start(Tui *t, Session *s, const TuiOptions *opt)
{
	static int atexit_done;
	struct sigaction sa;
	char *hist;

	memset(t, 0, sizeof *t);
	t->s = s;
	if (opt)
		t->opt = *opt;
	t->utf8 = locale_utf8();
	const char *kt = getenv("ATTNVIZ_KEY_TIMES");
	if (kt != NULL && *kt != '\0')
		t->key_times = fopen(kt, "a"); /* a benchmark's file: without it, keys are simply not timed */

	/* The line editor first: readline must not touch the terminal set-up ncurses owns. */
	hist = tui_history_path();
	t->le = lineedit_new(hist, tui_complete, s);
	free(hist);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = tui_on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: a blocked read returns so the loop sees the flag */
	sigaction(SIGINT, &sa, &t->old_int);
	sigaction(SIGTERM, &sa, &t->old_term);
	sigaction(SIGHUP, &sa, &t->old_hup);
	sigaction(SIGQUIT, &sa, &t->old_quit); /* Ctrl-\ leaves like Ctrl-C on the main screen */
	tui_signal = 0;
	ttyguard_save(STDIN_FILENO, STDOUT_FILENO);

	FILE *tout = stdout;
	if (t->opt.record != NULL) {
		/* --record: ncurses writes to a pseudo-terminal; a thread copies to the screen and the file. */
		int w, h;
		char *rerr = NULL;
		record_tty_size(STDOUT_FILENO, &w, &h);
		t->rec = record_open(t->opt.record, w, h, session_text(s, &s->lesson->title), RECORD_IDLE_LIMIT, &rerr);
		if (t->rec != NULL && t->opt.record_plain)
			record_relay_quiet(t->rec); /* tui_record_frame records the screen instead */
		if (t->rec == NULL || record_tty_start(t->rec, STDOUT_FILENO, &tout, &rerr) != 0) {
			fprintf(stderr, "attnviz: %s\n", rerr ? rerr : _("cannot record"));
			free(rerr);
			record_abort(t->rec); /* the old recording, if any, stays */
			t->rec = NULL;
			t->rc = 1;
			return -1;
		}
	}
	FILE *tin = stdin;
	if (t->opt.render != NULL && tui_render_term(t, &tout, &tin) != 0)
		return -1;
	t->scr = newterm(t->opt.render != NULL ? TUI_RENDER_TERM : NULL, tout, tin);
	if (t->scr == NULL) {
		char *term = text_escape(getenv("TERM"), ""); /* the environment is outside text too */
		fprintf(stderr, "attnviz: cannot start the terminal interface (TERM=%s); try --plain\n", term ? term : "");
		free(term);
		t->rc = 1;
		return -1;
	}
	tui_curses_on = 1;
	ttyguard_arm();
	if (t->rec != NULL)
		record_tty_signals(t->rec);
	if (!atexit_done) {
		atexit(tui_end);
		atexit_done = 1;
	}
	cbreak();
	noecho();
	nonl();
	intrflush(stdscr, FALSE);
	keypad(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	const char *nc = getenv("NO_COLOR");
	char *terr = NULL;
	if (theme_init(t->opt.theme, nc != NULL && *nc != '\0', &terr) != 0)
		tui_set_msg(t, 1, terr ? terr : _("cannot load the theme; using the default"));
	free(terr);

	s->dirty |= DIRTY_ALL;
	t->redraw = R_ALL;
	if (t->msg == NULL && t->opt.notice != NULL)
		tui_set_msg(t, 1, t->opt.notice);
	else if (t->msg == NULL && t->opt.offer != NULL)
		tui_set_msg(t, 0, t->opt.offer);
	if (t->msg == NULL)
		tui_set_msg(t, 0, _("attnviz: n next, Enter explains a cell, : commands, ? help, q quit"));
	tui_mouse_start(t);
	attn_set_progress(tui_progress, t);

	if (t->opt.demo != NULL)
		tui_demo_start(t, t->opt.demo);
	return 0;
}

#define TUI_LEAVE (-2) /* tui_wait: leave the loop */

void
tui_expire(Tui *t)
{
	if (t->flash && tui_now_ms() >= t->flash_until) {
		t->flash = 0;
		t->redraw |= R_PANES;
	}
}

int
tui_turn(Tui *t)
{
	tui_demo_tick(t);
	tui_play_tick(t);
	tui_watch_tick(t);
	if (t->s->quit)
		return 1;
	tui_sync(t);
	tui_draw(t);
	if (t->rec != NULL && t->opt.record_plain)
		tui_record_frame(t);
	if (t->rec != NULL)
		record_tty_sync(t->rec);
	return 0;
}

/*
 * One turn of the loop up to a key: run what is due (the demo, :play), draw
 * what changed, and wait for a key until the next thing is due (a flash
 * ends, a demo line, a :play step). Returns the key; ERR when there is none
 * (a timer, a signal that was handled); TUI_LEAVE when attnviz should stop
 * (quit, a signal, the input gone).
 */
static int
tui_wait(Tui *t)
{
	if (tui_turn(t) != 0)
		return TUI_LEAVE;
	if (t->key_times != NULL && !t->key_ready) { /* the first frame is out: keys may come */
		fprintf(t->key_times, "ready\n");
		fflush(t->key_times);
		t->key_ready = 1;
	}
	if (t->key_times != NULL && t->key_t0 > 0) { /* the key is answered: its screen is out */
		fprintf(t->key_times, "key=%d ms=%.3f cpu_ms=%.3f\n", t->key_code, clock_ms() - t->key_t0,
		        clock_cpu_ms() - t->key_cpu0);
		fflush(t->key_times);
		t->key_t0 = 0;
	}
	session_idle(t->s); /* the screen is out: what the next keys will need, while the learner reads */

	WINDOW *in = t->lay.too_small || t->w_status == NULL ? stdscr : t->w_status;
	long long wait = 1000, now = tui_now_ms();
	if (t->flash && t->flash_until - now < wait)
		wait = t->flash_until - now;
	if (t->demo && !t->demo_paused && !t->demo_at_pause && t->demo_pos < t->demo->n && t->mode != MODE_CMD &&
	    t->demo_due - now < wait)
		wait = t->demo_due - now;
	if (t->play_ms > 0 && t->mode != MODE_CMD && t->play_due - now < wait)
		wait = t->play_due - now;
	if (wait < 0)
		wait = 0;
	wtimeout(in, (int)wait);
	long long before = tui_now_ms();
	int key = wgetch(in);

	if (tui_signal) {
		int sig = tui_signal;
		tui_signal = 0;
		if (sig == SIGINT && t->mode == MODE_CMD) {
			char *line = NULL;
			lineedit_feed(t->le, 3, &line); /* Ctrl-C cancels the line */
			free(line);
			t->mode = MODE_MAIN;
			t->redraw |= R_STATUS | R_PANES;
			return ERR;
		}
		if (sig == SIGINT && t->mode == MODE_POPUP) {
			tui_popup_close(t);
			return ERR;
		}
		if (sig == SIGINT && t->mode == MODE_MENU) {
			tui_menu_close(t);
			return ERR;
		}
		t->rc = 128 + sig;
		return TUI_LEAVE;
	}
	if (key == ERR) {
		tui_expire(t);
		/* Returning at once without a key, again and again: the input is gone. */
		if (tui_now_ms() - before < wait / 2 && wait > 50) {
			if (++t->errs > 50)
				return TUI_LEAVE;
		} else {
			t->errs = 0;
		}
		return ERR;
	}
	t->errs = 0;
	return key;
}

/* One key: to the demo, or to the mode's handler. Returns 1 when attnviz should stop. */
int
tui_key(Tui *t, int key)
{
	if (t->flash) {
		t->flash = 0;
		t->redraw |= R_PANES;
	}
	if (key == KEY_RESIZE) {
		t->redraw |= R_LAYOUT;
		if (t->rec != NULL)
			record_resize(t->rec, COLS, LINES);
		return 0;
	}
	/* Any key stops :play (and does nothing else). */
	if (t->play_ms > 0 && t->mode != MODE_CMD) {
		t->play_ms = 0;
		tui_set_msg(t, 0, _("play stopped"));
		return 0;
	}
	if (t->lay.too_small)
		return key == 'q';
	if (key == KEY_MOUSE) {
		tui_mouse(t);
		return 0;
	}
	if (t->mode == MODE_MAIN && t->msg && key != ':') {
		free(t->msg);
		t->msg = NULL;
		t->redraw |= R_STATUS;
	}
	if (t->mode != MODE_CMD && tui_demo_key(t, key))
		return 0;
	switch (t->mode) {
	case MODE_MAIN:
		tui_key_main(t, key);
		break;
	case MODE_POPUP:
		tui_key_popup(t, key);
		break;
	case MODE_CMD:
		tui_key_cmd(t, key);
		break;
	case MODE_MENU:
		tui_menu_key(t, key);
		break;
	}
	return 0;
}

/* Put back what tui_start set up (as far as it got); returns the exit status. */
static int
tui_stop(Tui *t)
{
	char *perr = NULL;
	/* the last moves inside a lesson are kept once, here, not at every keypress (said once the screen is back) */
	const int pfail = progress_flush(t->opt.progress, &perr) != 0;

	attn_set_progress(NULL, NULL);
	tui_demo_free(t);
	tui_watch_free(t);
	tui_menu_close(t);
	tui_free_windows(t);
	tui_end();
	ttyguard_disarm();
	if (t->scr)
		delscreen(t->scr);
	if (t->render_out != NULL)
		fclose(t->render_out);
	if (t->render_in != NULL)
		fclose(t->render_in);
	free(t->plain_cells);
	free(t->plain_prev);
	if (pfail)
		fprintf(stderr, "attnviz: cannot keep your progress: %s\n", perr ? perr : _("out of memory"));
	free(perr);
	if (t->rec != NULL) {
		char *rerr = NULL;
		/* the lesson the recording ended on, not the one it began with (a demo loads its own) */
		record_set_title(t->rec, session_text(t->s, &t->s->lesson->title));
		if (record_close(t->rec, &rerr) != 0) {
			fprintf(stderr, "attnviz: %s\n", rerr ? rerr : _("cannot write the recording"));
			if (t->rc == 0)
				t->rc = 1;
		}
		free(rerr);
		t->rec = NULL;
	}
	lineedit_free(t->le);
	sigaction(SIGINT, &t->old_int, NULL);
	sigaction(SIGTERM, &t->old_term, NULL);
	sigaction(SIGHUP, &t->old_hup, NULL);
	sigaction(SIGQUIT, &t->old_quit, NULL);
	free(t->narr);
	free(t->note);
	free(t->msg);
	free(t->popup_title);
	free(t->popup_text);
	if (t->key_times != NULL)
		fclose(t->key_times);
	return t->rc;
}

int
tui_run(Session *s, const TuiOptions *opt)
{
	Tui t;
	int key;

	if (tui_start(&t, s, opt) == 0) {
		if (t.opt.render != NULL)
			t.rc = tui_render_loop(&t);
		else
			while (!s->quit && (key = tui_wait(&t)) != TUI_LEAVE) {
				if (key == ERR)
					continue;
				t.key_t0 = clock_ms();
				t.key_cpu0 = clock_cpu_ms();
				t.key_code = key;
				if (tui_key(&t, key))
					break;
			}
	}
	return tui_stop(&t);
}
